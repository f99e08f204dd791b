"""The kind contract: what a kind hands to the one pipeline (:mod:`hetopt.pipeline`).

A kind is a room with the same plan as every other:

* an **instance model** (pydantic, :class:`hetopt.instance.InstanceBase`);
* a **parameter model** (:class:`Params`): the kind's solve switches with types, defaults
  and help text, validated the same way from Python keywords and from ``-p KEY=VALUE``;
* its **objectives** (:class:`Objective`) and, per objective, a **method**: either a
  :class:`BuildMethod` (``build`` a Pyomo model with a typed layout, ``extract`` tables
  from one HiGHS solution) or a :class:`RunMethod` (``run`` several solves on a
  :class:`~hetopt.pipeline.Session`: water-filling levels, bisections, Pareto points,
  lexicographic stages, heuristics);
* its declared **result tables** (:class:`Table`) and **details** (:class:`Detail`, the
  kind's entries of ``Result.info``);
* an independent **verifier**.

The pipeline builds every :class:`~hetopt.Result`, checks the tables against their
declaration and runs the verifier exactly once. What a formulation tells its extractor
travels in :attr:`Built.layout`, a small typed object; never in attributes stuck on the
Pyomo model, never in closures.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from operator import is_
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict

from .status import Status

if TYPE_CHECKING:  # the contract itself never imports Pyomo, HiGHS or pandas
    import pandas as pd
    import pyomo.environ as pyo

    from .highs import CompiledModel, RawSolution
    from .options import SolveOptions
    from .pipeline import Session

__all__ = [
    "UNSET",
    "BuildMethod",
    "Built",
    "Column",
    "Detail",
    "Objective",
    "Outcome",
    "Params",
    "RunMethod",
    "SolveView",
    "Table",
]


# --------------------------------------------------------------------------- objectives
@dataclass(frozen=True)
class Objective:
    """One objective a kind offers."""

    name: str
    description: str
    unit: str = ""
    sense: str = "max"


# --------------------------------------------------------------------------- parameters
class Params(BaseModel):
    """Base of every kind's solve parameters (strict, frozen, no unknown names).

    Subclass it with one field per parameter, each with a default and a description::

        class GpuClusterParams(Params):
            agnostic: bool = Field(False, description="allocate as if every type were equal")

    :meth:`hetopt.kinds.base.Kind.parse_params` validates Python keywords and CLI values
    through it and turns any problem into one :class:`~hetopt.UsageError` naming the
    parameter.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class NoParams(Params):
    """The parameters of a kind that takes none."""


# --------------------------------------------------------------------------- tables
DType = Literal["str", "int", "float", "bool", "any"]


@dataclass(frozen=True)
class Column:
    """One column of a declared result table.

    Parameters
    ----------
    name
        Column name (snake_case, with its unit as a suffix where it has one).
    dtype
        ``"str"``, ``"int"``, ``"float"`` (integers are accepted), ``"bool"`` or ``"any"``.
    description
        One line: what a value means.
    unit
        The unit (``"s"``, ``"GB"``, ``"steps/s"``, ...), empty when dimensionless.
    optional
        The column appears only for some objectives or parameters (the description
        says when).
    """

    name: str
    dtype: DType
    description: str
    unit: str = ""
    optional: bool = False


@dataclass(frozen=True)
class Table:
    """A declared result table: one meaning across kinds for one name.

    ``allocation`` is always time shares (``fraction`` of wall-clock time), a placement on
    servers is ``placement``, a time line is ``schedule``.
    """

    name: str
    description: str
    columns: tuple[Column, ...]
    optional: bool = False
    """The table appears only for some objectives or parameters."""

    def column(self, name: str) -> Column | None:
        for c in self.columns:
            if c.name == name:
                return c
        return None


def _column_ok(dtype: DType, col_dtype: Any, df: Any, col: Any) -> bool:
    """``_dtype_ok(dtype, df[col])``, decided from the column's dtype where it can be
    (``col_dtype`` ``None``: the values are read)."""
    ok = _by_dtype(dtype, col_dtype)
    return _dtype_ok(dtype, df[col]) if ok is None else ok


def _by_dtype(dtype: DType, col_dtype: Any) -> bool | None:
    """:func:`_column_ok` as the column's dtype alone decides it; ``None``: its values
    decide (``col_dtype`` ``None``: unknown)."""
    if dtype == "any":
        return True
    if col_dtype is not None:
        kind = getattr(col_dtype, "kind", "O")
        if dtype in _KINDS and kind != "O":
            return kind in _KINDS[dtype]
        if dtype == "str":
            import pandas as pd

            if isinstance(col_dtype, pd.StringDtype):
                return True
            if kind not in "OUST":
                return False
    return None


_KINDS = {"float": "fiu", "int": "iu", "bool": "b"}
"""numpy dtype kinds of a declared dtype (object columns: decided by their values)."""


def _dtype_ok(dtype: DType, values: Any) -> bool:
    kind = getattr(getattr(values, "dtype", None), "kind", "O")
    if dtype == "any":
        return True
    if dtype == "float":
        return kind in "fiu" or (kind == "O" and all(_is_num(v) for v in values))
    if dtype == "int":
        return kind in "iu" or (kind == "O" and all(_is_int(v) for v in values))
    if dtype == "bool":
        return kind == "b" or (kind == "O" and all(isinstance(v, bool | np.bool_) for v in values))
    # str: pandas object/string columns; missing values allowed
    import pandas as pd  # the contract imports pandas only when checking tables

    if isinstance(getattr(values, "dtype", None), pd.StringDtype):
        return True  # pandas' string dtype holds strings and missing values only
    if kind not in "OUST":
        return False
    # C-level scan (a Python loop over every value cost 14-26 % of a 2,000-job solve)
    return pd.api.types.infer_dtype(values, skipna=True) in ("string", "empty")


def _is_num(v: Any) -> bool:
    return v is None or (isinstance(v, int | float | np.number) and not isinstance(v, bool))


def _is_int(v: Any) -> bool:
    return isinstance(v, int | np.integer) and not isinstance(v, bool)


def frame_blocks(df: Any) -> list[tuple[list[int], Any]]:
    """The blocks of ``df``'s block manager, each with the positions of the columns it
    holds (``df._mgr.blocks`` and their ``mgr_locs``: pandas's own layout, read and never
    built, and read here only, for every reader of it); empty for a frame without a
    block manager (the caller then takes the public path)."""
    blocks = getattr(getattr(df, "_mgr", None), "blocks", ())
    return [(blk.mgr_locs.as_array.tolist(), blk) for blk in blocks]


def _dtypes(df: pd.DataFrame) -> list[Any]:
    """``df.dtypes.tolist()``: read from the frame's block manager when it has one (the
    list ``df.dtypes`` wraps in a Series, which cost ~0.1-0.3 ms a table, a sixteenth of
    a warm 2,000-job ``PersistentPolicy`` round); the public path otherwise."""
    # each block's dtype at its columns (what get_dtypes gives, without building a new
    # frame's column-to-block map: ~10-35 us a frame, measured)
    found: list[Any] = [None] * len(df.columns)
    filled = 0
    for locs, blk in frame_blocks(df):
        for i in locs:
            found[i] = blk.dtype
            filled += 1
    if filled == len(found):
        return found
    get = getattr(getattr(df, "_mgr", None), "get_dtypes", None)
    if get is not None:
        got = get()
        if len(got) == len(df.columns):
            return list(got)
    return list(df.dtypes.tolist())


def check_tables(
    declared: Iterable[Table], tables: Mapping[str, pd.DataFrame], required: bool = True
) -> list[str]:
    """Violations of ``tables`` against their declaration (empty when they conform).

    Every table must be declared, every column of a table must be declared, every
    non-optional column must be present with its dtype; with ``required``, every
    non-optional table must be present.
    """
    spec, needed = _table_spec(declared)
    problems: list[str] = []
    for name, df in tables.items():
        entry = spec.get(name)
        if entry is None:
            problems.append(f"table {name!r} is not declared by the kind")
            continue
        columns, required_columns, seen = entry
        # the frame's labels and dtypes read once; a column's values only where its dtype
        # does not decide (object columns; a repeated column name: as df[col] gives it)
        labels = df.columns.tolist()
        dtypes = _dtypes(df)
        rows = len(df)
        # (the answer for string labels whose dtypes decide is the same for the same labels
        # and dtype objects: remembered, with the dtypes, for the next frame like it)
        key = (tuple(labels), rows > 0) if all(type(c) is str for c in labels) else None
        hit = seen.get(key) if key is not None else None
        if hit is not None and len(hit[0]) == len(dtypes) and all(map(is_, hit[0], dtypes)):
            problems.extend(hit[1])
            continue
        found: list[str] = []
        decided = True
        present = set(labels)
        unique = len(present) == len(labels)
        for col, col_dtype in zip(labels, dtypes, strict=True):
            c = columns.get(str(col))
            if c is None:
                found.append(f"table {name!r}: column {col!r} is not declared")
            elif rows:
                ok = _by_dtype(c.dtype, col_dtype if unique else None)
                if ok is None:
                    decided = False
                    ok = _dtype_ok(c.dtype, df[col])
                if not ok:
                    found.append(f"table {name!r}: column {col!r} is not of type {c.dtype}")
        for col_name in required_columns:
            if col_name not in present:
                found.append(f"table {name!r}: column {col_name!r} is missing")
        if key is not None and decided:
            if len(seen) > 64:
                seen.clear()
            seen[key] = (tuple(dtypes), tuple(found))
        problems.extend(found)
    if required:
        for table_name in needed:
            if table_name not in tables:
                problems.append(f"table {table_name!r} is missing")
    return problems


_Seen = dict[tuple[tuple[str, ...], bool], tuple[tuple[Any, ...], tuple[str, ...]]]
_TableSpec = tuple[dict[str, tuple[dict[str, Column], tuple[str, ...], _Seen]], tuple[str, ...]]
_TABLE_SPECS: dict[int, tuple[Any, _TableSpec]] = {}
""":func:`_table_spec` of the declarations seen (a kind's ``tables`` tuple), by identity."""


def _table_spec(declared: Iterable[Table]) -> _TableSpec:
    """What :func:`check_tables` reads of ``declared``: each table's columns by name (the
    first of a repeated name, as :meth:`Table.column` finds it) and the names of its
    non-optional columns, by table name (the last of a repeated name, as a dict of them
    keeps it), and the answers it found for frames it saw (labels, whether rows, dtypes:
    the problems); and the names of the non-optional tables, in declaration order. Made
    once per tuple of declarations (immutable: tuples of frozen dataclasses), kept with
    it."""
    if type(declared) is tuple:
        hit = _TABLE_SPECS.get(id(declared))
        if hit is not None and hit[0] is declared:
            return hit[1]
    tables = tuple(declared)
    spec: dict[str, tuple[dict[str, Column], tuple[str, ...], _Seen]] = {}
    for t in tables:
        columns: dict[str, Column] = {}
        for c in t.columns:
            columns.setdefault(c.name, c)
        spec[t.name] = (columns, tuple(c.name for c in t.columns if not c.optional), {})
    out = (spec, tuple(t.name for t in tables if not t.optional))
    if type(declared) is tuple:
        if len(_TABLE_SPECS) > 64:
            _TABLE_SPECS.clear()
        _TABLE_SPECS[id(declared)] = (declared, out)
    return out


# --------------------------------------------------------------------------- details
@dataclass(frozen=True)
class Detail:
    """One declared entry of ``Result.info`` (a fact about how the result was found)."""

    name: str
    type: Literal["str", "int", "float", "bool", "list", "dict", "any"]
    description: str
    unit: str = ""


SOLVER_DETAILS: tuple[Detail, ...] = (
    Detail("simplex_iterations", "int", "simplex iterations of the final HiGHS solve"),
    Detail("ipm_iterations", "int", "interior-point iterations of the final HiGHS solve"),
    Detail("mip_nodes", "int", "branch-and-bound nodes of the final HiGHS solve"),
)
"""Entries the pipeline itself adds to ``info`` (kept for compatibility; the typed
totals are in ``Result.report``)."""


def _detail_ok(kind: str, value: Any) -> bool:
    if kind == "any" or value is None:
        return True
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool | np.bool_)
    if kind == "int":
        return isinstance(value, int | np.integer) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, int | float | np.number) and not isinstance(value, bool)
    if kind == "list":
        return isinstance(value, list | tuple)
    return isinstance(value, Mapping)


def check_details(declared: Iterable[Detail], info: Mapping[str, Any]) -> list[str]:
    """Entries of ``info`` that are not declared or not of their declared type."""
    spec = _detail_spec(declared)
    problems = []
    for key, value in info.items():
        d = spec.get(key)
        if d is None:
            problems.append(f"info entry {key!r} is not declared by the kind")
        elif not _detail_ok(d.type, value):
            problems.append(f"info entry {key!r} is not of type {d.type}: {value!r}")
    return problems


_DETAIL_SPECS: dict[int, tuple[Any, dict[str, Detail]]] = {}
""":func:`_detail_spec` of the declarations seen (a kind's ``details`` tuple), by identity."""


def _detail_spec(declared: Iterable[Detail]) -> dict[str, Detail]:
    """``{d.name: d for d in (*SOLVER_DETAILS, *declared)}``, made once per tuple of
    declarations (immutable: tuples of frozen dataclasses), kept with it."""
    if type(declared) is tuple:
        hit = _DETAIL_SPECS.get(id(declared))
        if hit is not None and hit[0] is declared:
            return hit[1]
    spec = {d.name: d for d in (*SOLVER_DETAILS, *declared)}
    if type(declared) is tuple:
        if len(_DETAIL_SPECS) > 64:
            _DETAIL_SPECS.clear()
        _DETAIL_SPECS[id(declared)] = (declared, spec)
    return spec


# --------------------------------------------------------------------------- hand-offs
@dataclass(frozen=True)
class Built:
    """A formulation's output: the Pyomo model and the typed layout its extractor reads.

    ``layout`` is any small object (a frozen dataclass is usual): column orders, index
    maps, scales (``t_ref``, ``kappa``), the plan that chose the formulation.
    """

    model: pyo.ConcreteModel
    layout: Any = None


class _Unset:
    """Marker: the extractor leaves this to the pipeline (the solver's own value)."""

    _instance: ClassVar[_Unset | None] = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()
"""Default of :attr:`Outcome.bound` / :attr:`Outcome.gap`: keep HiGHS's bound and gap
(a :class:`BuildMethod`) or report none (a :class:`RunMethod`)."""


@dataclass
class Outcome:
    """What a method returns: the answer in the objective's own units.

    Parameters
    ----------
    objective_value
        The objective in the kind's documented unit (``None`` without a solution).
    tables
        Result tables (each declared by the kind).
    details
        Entries of ``Result.info`` (each declared by the kind).
    status, termination
        For a :class:`BuildMethod`, ``None`` keeps HiGHS's; a :class:`RunMethod` must set
        the status.
    bound, gap
        Best proven bound and relative gap in the objective's unit. :data:`UNSET` keeps
        HiGHS's (build methods) or means unknown (run methods); ``None`` means unknown.
    timings
        Extra phase timings in seconds (merged into ``Result.timings``).
    """

    objective_value: float | None = None
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    status: Status | None = None
    termination: str | None = None
    bound: Any = UNSET
    gap: Any = UNSET
    timings: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class SolveView:
    """One HiGHS solution as an extractor sees it."""

    compiled: CompiledModel
    raw: RawSolution
    options: SolveOptions | None = None
    """The options this solve ran with (e.g. ``mip_rel_gap`` for a gap test)."""

    @property
    def status(self) -> Status:
        return self.raw.status

    @property
    def termination(self) -> str:
        return self.raw.termination

    @property
    def objective(self) -> float | None:
        return self.raw.objective

    @property
    def bound(self) -> float | None:
        return self.raw.bound

    @property
    def gap(self) -> float | None:
        return self.raw.gap

    @property
    def x(self) -> np.ndarray | None:
        return self.raw.x

    def value(self, var: Any, default: float = 0.0) -> float:
        """Value of one ``VarData`` (``default`` if the compiler dropped it as unused)."""
        return self.raw.value(self.compiled, var, default)

    def values(self, var: Any, keys: Iterable[Any] | None = None) -> np.ndarray:
        """Values of an indexed variable's entries, in ``keys`` order."""
        return self.raw.values(self.compiled, var, keys)


# --------------------------------------------------------------------------- methods
@runtime_checkable
class BuildMethod(Protocol):
    """One model, one HiGHS solve: ``build`` then ``extract``.

    Optional hooks (see :class:`BuildMethodBase` for their defaults): ``lp_method`` (the
    LP algorithm measured fastest), ``describe`` (details known before solving, reported
    whatever the status), ``start`` (a MIP start, one value per compiled column),
    ``unscale_bound`` (the solver's bound in the objective's unit, used when there is no
    solution to extract), ``options`` (adjust solve options, e.g. an absolute gap),
    ``export_objective`` (put ``built.model``'s objective in the objective's own unit for
    :func:`hetopt.export_model`, or refuse a stage it cannot export; see
    :mod:`hetopt.kinds._shared.export`).
    """

    lp_method: str

    def build(self, instance: Any, params: Any) -> Built: ...

    def extract(self, instance: Any, params: Any, built: Built, solution: SolveView) -> Outcome: ...

    def describe(self, instance: Any, params: Any, built: Built) -> dict[str, Any]: ...

    def start(
        self, instance: Any, params: Any, built: Built, compiled: CompiledModel
    ) -> np.ndarray | None: ...

    def unscale_bound(self, built: Built, bound: float) -> float: ...

    def options(
        self, instance: Any, params: Any, built: Built, options: SolveOptions
    ) -> SolveOptions: ...

    def export_objective(self, instance: Any, params: Any, built: Built) -> None: ...


@runtime_checkable
class RunMethod(Protocol):
    """A method that solves several times (or not at all) on one :class:`Session`.

    ``build`` returns the model ``hetopt export`` writes for it (its first stage), and
    ``export_objective`` rewrites that model's objective as :class:`BuildMethod`'s hook does
    (see :class:`RunMethodBase` for the default).
    """

    def run(self, session: Session, instance: Any, params: Any) -> Outcome: ...

    def build(self, instance: Any, params: Any) -> Built: ...

    def export_objective(self, instance: Any, params: Any, built: Built) -> None: ...


class BuildMethodBase:
    """Defaults of the optional :class:`BuildMethod` hooks (subclass and override)."""

    lp_method: str = "auto"

    def build(self, instance: Any, params: Any) -> Built:  # pragma: no cover - abstract
        raise NotImplementedError

    def extract(
        self, instance: Any, params: Any, built: Built, solution: SolveView
    ) -> Outcome:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self, instance: Any, params: Any, built: Built) -> dict[str, Any]:
        return {}

    def start(
        self, instance: Any, params: Any, built: Built, compiled: CompiledModel
    ) -> np.ndarray | None:
        return None

    def unscale_bound(self, built: Built, bound: float) -> float:
        return bound

    def options(
        self, instance: Any, params: Any, built: Built, options: SolveOptions
    ) -> SolveOptions:
        return options

    def export_objective(self, instance: Any, params: Any, built: Built) -> None:
        """Nothing to rewrite: the model's objective is in the objective's own unit."""


class RunMethodBase:
    """Base of a :class:`RunMethod` (``build`` refuses until a method defines it)."""

    def run(
        self, session: Session, instance: Any, params: Any
    ) -> Outcome:  # pragma: no cover - abstract
        raise NotImplementedError

    def build(self, instance: Any, params: Any) -> Built:  # pragma: no cover - abstract
        raise NotImplementedError

    def export_objective(self, instance: Any, params: Any, built: Built) -> None:
        """Nothing to rewrite (a method whose ``build`` is another method's overrides
        this to pass the call on to that method)."""


Method = BuildMethod | RunMethod


# --------------------------------------------------------------------------- hooks
@runtime_checkable
class Decomposer(Protocol):
    """What a kind offers :func:`hetopt.decompose.solve_decomposed` (``Kind.decomposer``).

    ``separable`` maps each objective whose optimum is the combination (``"min"``,
    ``"max"`` or ``"sum"``) of the optima of independent components to that rule; those
    objectives get the exact component decomposition. ``methods`` are the approximate
    methods :meth:`partitioned` offers (the first is the default).
    """

    separable: Mapping[str, str]
    methods: tuple[str, ...]

    def components(self, instance: Any) -> list[np.ndarray]:
        """Job indices of each independent component (largest first)."""
        ...

    def sub_instance(self, instance: Any, jobs: np.ndarray) -> Any:
        """The instance restricted to ``jobs`` (same resources)."""
        ...

    def partitioned(
        self,
        instance: Any,
        objective: str,
        params: Any,
        partitions: int,
        method: str,
        options: SolveOptions | None,
        executor: Any,
        seed: int,
    ) -> Any:
        """An approximate decomposition into ``partitions`` parts: a verified
        :class:`~hetopt.Result` built by :func:`hetopt.pipeline.finish`."""
        ...
