"""The single-LP methods of the ``gpu_cluster`` kind: Gavel's max-min fairness and the
exact makespan LP, each with time sharing only or with space sharing (the instance's
``colocation`` list). One LP, solved once by interior point, then read back into the
``allocation`` and ``jobs`` tables (see ``models/gpu_cluster.md`` and
``models/gpu_cluster_space_sharing.md``).
"""

from __future__ import annotations

from operator import is_
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import pandas as pd

from ...contract import UNSET, BuildMethodBase, Built, Outcome, SolveView
from ...status import Status
from . import formulations as F
from . import maxmin as M
from . import verify as V
from .data import GpuClusterInstance
from .inputs import require_steps

if TYPE_CHECKING:
    from ...pipeline import Session
    from . import GpuClusterParams

Jobs: TypeAlias = pd.DataFrame | dict[str, Any]
"""The jobs table a method's ``read`` completes: the frame, or its columns."""

DEFAULT_LP_METHOD = "ipm"
"""Measured on Gavel-generated instances (``benchmarks/bench_gpu_cluster.py``, notes on
issue 2): interior point is several times faster than dual simplex on these LPs from a
cold start, once they have thousands of job rows (below: :attr:`OneLP.simplex_max_rows`)."""


def allocation_throughputs(inst: GpuClusterInstance, agnostic: bool) -> np.ndarray | None:
    """The throughputs the LP allocates with: ``None`` (the true ones) or the agnostic view."""
    return F.agnostic_throughputs(inst.arrays) if agnostic else None


class OneLP(BuildMethodBase):
    """One LP (``max_min_fairness`` or ``makespan``): build, solve, extract.

    Two choices make a method: the model (:meth:`model` and :meth:`tables`: time sharing
    only, or with space sharing) and the objective (:meth:`read`: ``z / kappa`` of the
    max-min LP or ``t_ref / z`` of the makespan LP, mixed in by :class:`MaxMinRead` or
    :class:`MakespanRead`). ``info`` reports the LP algorithm used.
    """

    lp_method = DEFAULT_LP_METHOD
    needs_steps = False
    simplex_max_rows = 0
    """LPs of at most this many job (or symmetry-group) rows go to dual simplex when the
    user leaves ``lp_method`` on ``auto`` (never agnostic: which optimum an agnostic LP
    returns changes its reported true value); ``info.lp_method`` says which ran."""

    def algorithm(self, lp: M.MaxMinLP, params: Any) -> str:
        """The LP algorithm for ``lp`` when the options leave it to the method."""
        if params.agnostic or lp.num_rows > self.simplex_max_rows:
            return self.lp_method
        return "simplex"

    def model(
        self, inst: GpuClusterInstance, thr: np.ndarray | None, params: GpuClusterParams
    ) -> Built:
        raise NotImplementedError  # pragma: no cover - abstract

    def read(
        self,
        arr: Any,
        jobs: Jobs,
        thr_eff: np.ndarray,
        z: float,
        scale: float,
        exact: bool,
        info: dict[str, Any],
    ) -> tuple[float | None, Status | None, str | None]:
        """The objective value (and a status override) from ``z``; adds the per-job
        column to ``jobs`` (the table, or its columns) and the LP's own value to
        ``info`` when ``z`` is not it."""
        raise NotImplementedError  # pragma: no cover - abstract

    def lp(
        self, inst: GpuClusterInstance, thr: np.ndarray | None, params: GpuClusterParams
    ) -> tuple[M.MaxMinLP, np.ndarray | None] | None:
        """The model as :class:`~.maxmin.MaxMinLP` data and each job's symmetry group
        (``None``: :meth:`model` builds it otherwise); such a model is solved from arrays
        (:func:`.maxmin.compile_lp`), without building its Pyomo components."""
        return None

    def build(self, instance: GpuClusterInstance, params: GpuClusterParams) -> Built:
        if self.needs_steps:
            require_steps(instance)
        thr = allocation_throughputs(instance, params.agnostic)
        return self.model(instance, thr, params)

    def run(self, session: Session, instance: GpuClusterInstance, params: Any) -> Outcome:
        chosen = self.lp_method
        outcome = self.solve_arrays(session, instance, params)
        if outcome is None:
            outcome, _ = session.solve_method(self, instance, params)
        else:
            chosen = outcome.details.pop("lp_method", chosen)
        opts = session.options
        outcome.details["lp_method"] = opts.lp_method if opts.lp_method != "auto" else chosen
        return outcome

    def solve_arrays(
        self, session: Session, instance: GpuClusterInstance, params: Any
    ) -> Outcome | None:
        """:meth:`Session.solve_method` for a model :meth:`lp` gives as data: the same
        phases, hooks and HiGHS model (:func:`.maxmin.compile_lp` is bit for bit the
        compiled Pyomo model), minus the Pyomo components (a third to a half of the time
        besides HiGHS at Gavel's sizes, measured). ``None``: no such model."""
        from ...highs import HighsModel

        with session.timer("build_s"):
            if self.needs_steps:
                require_steps(instance)
            thr = allocation_throughputs(instance, params.agnostic)
            data = self.lp(instance, thr, params)
        if data is None:
            return None
        lp, group_of = data
        with session.timer("transfer_s"):
            compiled, columns = M.compile_lp(lp)
            hm = HighsModel(compiled)
        built = Built(columns, M.layout_of(lp, group_of))
        live = session.adopt(built, hm)
        opts = self.options(instance, params, built, session.options)
        algorithm = self.algorithm(lp, params)
        view = live.solve(opts, algorithm, "main", lambda v: self.unscale_bound(built, v))
        with session.timer("load_s"):
            outcome = session.resolve(self, instance, params, built, view)
        outcome.details["lp_method"] = algorithm
        return outcome

    def describe(
        self, instance: GpuClusterInstance, params: GpuClusterParams, built: Built
    ) -> dict[str, Any]:
        out: dict[str, Any] = {"agnostic": bool(params.agnostic)}
        group_of = getattr(built.layout, "group_of", None)
        if isinstance(built.layout, F.MaxMinLayout) and group_of is not None:
            out["symmetry_groups"] = int(group_of.max()) + 1
        return out

    def extract(
        self,
        instance: GpuClusterInstance,
        params: GpuClusterParams,
        built: Built,
        solution: SolveView,
    ) -> Outcome:
        z, x = M.read_columns(built, solution)
        allocation, jobs, thr_eff, info = self.tables(instance, built, solution, x)
        agnostic = params.agnostic
        optimal = solution.status == Status.OPTIMAL
        exact = optimal and not agnostic
        value, status, termination = self.read(
            instance.arrays, jobs, thr_eff, z, built.layout.scale, exact, info
        )
        if not exact and agnostic and "lp_value" in info:
            info["agnostic_lp_value"] = info.pop("lp_value")
        tables = {
            "allocation": allocation,
            "jobs": jobs if isinstance(jobs, pd.DataFrame) else table(jobs),
        }
        out = Outcome(value, tables, info, status, termination)
        if agnostic:
            # bound and gap refer to the agnostic LP, not to the true objective reported
            out.bound, out.gap = None, None
        elif value is not None and optimal:
            out.bound, out.gap = value, 0.0  # an LP solved to optimality
        else:
            out.bound, out.gap = UNSET, UNSET  # HiGHS's
        return out

    def tables(
        self, instance: GpuClusterInstance, built: Built, solution: SolveView, x: np.ndarray
    ) -> tuple[pd.DataFrame, Jobs, np.ndarray, dict[str, Any]]:
        """The allocation table, the jobs table (time share, throughput; or its columns,
        made a table after :meth:`read`), each job's effective throughput and the
        model's facts (``x``: the ``alloc`` values)."""
        arr = instance.arrays
        pairs = built.layout.pairs
        x = clean_shares(x, pairs.job)
        group_of = built.layout.group_of
        if group_of is None:
            X = np.zeros((arr.num_jobs, len(arr.types)))
            X[pairs.job, pairs.type] = x
            return (*time_share_columns(arr, X, pairs, x), {})
        # rows are symmetry groups: every job gets its group's shares (and its time share,
        # a row's sum: the same floats added the same way)
        Xg = np.zeros((int(group_of.max()) + 1, len(arr.types)))
        Xg[pairs.job, pairs.type] = x
        X = Xg.take(group_of, axis=0)
        share = V.row_sums(Xg).take(group_of) if _row_wise(Xg) else None
        return (*time_share_columns(arr, X, share=share), {})


def time_share_tables(
    arr: Any, X: np.ndarray, pairs: F.Pairs | None = None, x: np.ndarray | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """The allocation and jobs tables of a jobs x types time-share matrix ``X`` (and each
    job's effective throughput); ``pairs``/``x``: its pairs and their values if known."""
    allocation, jobs, thr_eff = time_share_columns(arr, X, pairs, x)
    return allocation, table(jobs), thr_eff


def time_share_columns(
    arr: Any,
    X: np.ndarray,
    pairs: F.Pairs | None = None,
    x: np.ndarray | None = None,
    share: np.ndarray | None = None,
) -> tuple[pd.DataFrame, dict[str, Any], np.ndarray]:
    """:func:`time_share_tables` with the jobs table as its columns (a ``read`` adds
    its per-job column before :func:`table` makes the frame, in one step); ``share``:
    the time shares ``row_sums(X)`` if known (a new array: the table keeps it)."""
    if pairs is None or x is None:
        pairs = F.Pairs(*V.positive_pairs(arr))  # (Pairs.of(arr), computed once)
        x = X.take(V.pair_positions(arr))  # (X[pairs.job, pairs.type])
    allocation = allocation_table(arr, pairs, x)
    thr_eff = V.effective_throughput(arr, X)
    # (the ids as given when there are none: the constructor's empty column)
    ids = job_names(arr).copy() if arr.num_jobs else list(arr.job_ids)
    jobs = {"job": ids, "time_share": V.row_sums(X) if share is None else share}
    jobs["throughput"] = thr_eff
    return allocation, jobs, thr_eff


def _row_wise(M: np.ndarray) -> bool:
    """Whether :func:`.verify.row_sums` sums each row of ``M`` on its own, the same way
    whatever the other rows (its own loops: float64, fewer than 128 columns), so the sums
    of repeated rows are the repeated sums."""
    return M.dtype == np.float64 and M.ndim == 2 and M.shape[1] < 128


TINY_SHARE = 1e-10
"""Time fractions below this are the solver's noise and read as 0 (:func:`clean_shares`)."""


def clean_shares(x: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``x`` (every pair's time fraction; ``rows``: each pair's job or group) with the
    values below :data:`TINY_SHARE` in magnitude read as 0, except a row's positive
    values when they are all it has: a job whose work is tiny beside the others' (a
    makespan job of 1e-4 steps beside millions) needs a share that small, and without
    it the job never finishes (the verifier would reject the answer)."""
    tiny = np.abs(x) < TINY_SHARE
    out = np.where(tiny, 0.0, x)
    lost = tiny & (x > 0)
    if lost.any():
        has = np.zeros(int(rows.max()) + 1, dtype=bool)
        has[rows[out > 0]] = True
        back = lost & ~has[rows]
        out[back] = x[back]
    return out


class MaxMinRead:
    """Max-min fairness: the value is ``z / kappa``, every job's normalised throughput
    goes to ``jobs``."""

    needs_steps = False

    def read(
        self,
        arr: Any,
        jobs: Jobs,
        thr_eff: np.ndarray,
        z: float,
        scale: float,
        exact: bool,
        info: dict[str, Any],
    ) -> tuple[float | None, Status | None, str | None]:
        jobs["normalized_throughput"] = arr.scale * thr_eff / V.fairness_weights(arr)
        if exact:
            return z / scale, None, None
        # the true value of the allocation returned (an interrupted LP's z is only a lower
        # estimate of it; the agnostic LP's z is its own objective)
        info["lp_value"] = z / scale
        return float(np.fmin.reduce(_floats(jobs["normalized_throughput"]))), None, None

    def export_objective(
        self, instance: GpuClusterInstance, params: GpuClusterParams, built: Built
    ) -> None:
        """The exported objective is ``z / kappa``, the value itself."""
        from .export import check, max_min_objective

        check(instance, "max_min_fairness", params)
        max_min_objective(built.model, built.layout.scale)


class MakespanRead:
    """Makespan: the value is ``t_ref / z`` seconds, every job's finish time goes to
    ``jobs``; ``z = 0`` means some job cannot progress (infeasible)."""

    needs_steps = True

    def read(
        self,
        arr: Any,
        jobs: Jobs,
        thr_eff: np.ndarray,
        z: float,
        scale: float,
        exact: bool,
        info: dict[str, Any],
    ) -> tuple[float | None, Status | None, str | None]:
        with np.errstate(divide="ignore"):
            jobs["finish_s"] = np.where(
                thr_eff > 0, arr.steps / np.where(thr_eff > 0, thr_eff, 1), np.inf
            )
        if z <= 1e-9:
            return None, Status.INFEASIBLE, "some job can make no progress"
        if exact:
            return scale / z, None, None
        info["lp_value"] = scale / z
        return float(np.fmax.reduce(_floats(jobs["finish_s"]))), None, None

    def export_objective(
        self, instance: GpuClusterInstance, params: GpuClusterParams, built: Built
    ) -> None:
        """The exported model is the LP in time variables (``tau = x * T``, minimise the
        makespan ``T`` in seconds; :func:`.export.time_model`)."""
        from .export import check, replace_model, time_model

        check(instance, "makespan", params)
        layout = built.layout
        steps = instance.arrays.steps
        reps = getattr(layout, "reps", None)  # space sharing: one row per group
        if reps is None and layout.group_of is not None:
            _, reps = np.unique(layout.group_of, return_index=True)
        row_steps = steps if reps is None else steps[reps]
        model = time_model(built.model, layout.scale, "c_progress", row_steps)
        replace_model(built.model, model)


def _floats(column: Any) -> np.ndarray:
    """A float column as numpy values (its ``min``/``max`` skip NaN, as pandas's do)."""
    return np.asarray(column, dtype=float)


def allocation_table(arr: Any, pairs: F.Pairs, x: np.ndarray) -> pd.DataFrame:
    """``job, worker_type, fraction`` for every (job, type) pair with positive throughput."""
    return table(
        {
            "job": _names_at(job_names(arr), pairs.job),
            "worker_type": _names_at(_type_names(arr.types), pairs.type),
            "fraction": np.asarray(x),
        }
    )


# ------------------------------------------------------------------ table building
# ``pd.DataFrame(dict)`` infers every column's dtype from its values, checks and copies
# them: ~0.3 ms a table at 2,000 jobs, a fifth of a warm PersistentPolicy round. The
# columns here are made as pandas would store them instead (a string column: pandas's
# string array of the names, inferred once per name list, then taken), and the frame is
# assembled from them directly; bit for bit the frame the constructor gives
# (tests/kinds/gpu_cluster/test_tables.py).
_TYPE_NAMES: dict[tuple[str, ...], Any] = {}
"""Worker-type names -> their column (few distinct clusters per process)."""


def _inferred(names: list[str] | np.ndarray) -> Any:
    """The column pandas makes of the list ``names``: its string array when it infers
    the string dtype (pandas >= 3), else the names as an object array (pandas 2, or
    values that are not all strings). An object array of strings becomes that string
    array without pandas's inference and copy (:func:`string_column`)."""
    values = names if isinstance(names, np.ndarray) else np.asarray(names, dtype=object)
    if len(values):
        if pd.api.types.infer_dtype(values, skipna=False) == "string":
            direct = string_column(values)
            if direct is not None:
                return direct
        column = pd.Series(values).array
        if isinstance(column.dtype, pd.StringDtype):
            return column
    return values


def string_column(values: np.ndarray) -> Any | None:
    """The string array pandas infers from ``values`` (an object array the caller knows
    holds only strings), holding ``values`` itself as its backing (so pass one nothing
    changes); ``None`` when pandas would make another kind of column
    (:func:`_string_template`)."""
    template = _string_template()
    return None if template is None else template._from_backing_data(values)


_TEMPLATES: dict[tuple[bool, str], Any] = {}


def _string_template() -> Any:
    """A string array as pandas infers one from strings under its current options
    (``future.infer_string``, ``mode.string_storage``), when it is pandas's python-storage
    :class:`~pandas.arrays.StringArray` (a numpy array of the strings themselves): the
    array :func:`_inferred` makes others like (``_from_backing_data``: same type and
    dtype, the values given). ``None`` otherwise (pandas 2, pyarrow storage)."""
    try:
        from pandas._config import using_string_dtype
    except ImportError:  # pragma: no cover - pandas < 2.2: no string inference
        return None
    key = (using_string_dtype(), str(pd.get_option("mode.string_storage")))
    if key not in _TEMPLATES:
        column = pd.Series(np.asarray(["a"], dtype=object)).array
        ok = type(column) is pd.arrays.StringArray and isinstance(column.dtype, pd.StringDtype)
        _TEMPLATES[key] = column if ok else None
    return _TEMPLATES[key]


def job_names(arr: Any) -> Any:
    """The ``job`` column of ``arr.job_ids`` (as pandas infers it), made once per
    arrays (cached on them: a :class:`~.data.ClusterArrays` never changes; a
    :class:`~.persistent.PersistentPolicy` passes it on to the arrays it derives with
    :func:`set_job_names`). Callers never modify it (frames get copies or takes)."""
    # (on the verifier's read-only object array of the ids: made once, never written)
    return arr.derived("job_names", lambda a: _inferred(V.job_id_objects(a)))


def set_job_names(arr: Any, names: Any) -> None:
    """Give ``arr`` its ``job`` column, derived from an earlier arrays' (taken or
    concatenated): what :func:`job_names` would infer from ``arr.job_ids``."""
    arr.give("job_names", names)


def _type_names(types: list[str]) -> Any:
    """The ``worker_type`` column of the names ``types`` (as pandas infers it), made
    once per list of names and holding ``types``' own strings: made again when the
    cached one holds equal strings of another instance. (The verifier matches a table's
    strings with the instance's by address first and compares only the rows whose
    addresses differ as strings: 6,000 rows of another instance's equal names cost it
    ~0.3 ms.)"""
    last = _LAST_TYPES
    if types is last[0] and len(types) == len(last[1]) and all(map(is_, types, last[1])):
        return last[2]  # (the list of the previous call, holding the same strings)
    key = tuple(types)
    names = _TYPE_NAMES.get(key)
    if names is None or not all(a is b for a, b in zip(np.asarray(names), key, strict=True)):
        if len(_TYPE_NAMES) > 64:
            _TYPE_NAMES.clear()
        names = _TYPE_NAMES[key] = _inferred(list(types))
    _LAST_TYPES[:] = [types, key, names]
    return names


_LAST_TYPES: list[Any] = [None, (), None]
"""The last call of :func:`_type_names`: its list, the strings it held, their column (a
scheduler's rounds pass the cluster's one list of types)."""


def _names_at(names: Any, at: np.ndarray) -> Any:
    """``names[at]`` (a new array) from a column made by :func:`_inferred`; the object
    array when there are no rows (whose empty column pandas types differently)."""
    if len(at) == 0:
        return np.asarray(names, dtype=object)[at]
    return names.take(at)


def table(columns: dict[str, Any]) -> pd.DataFrame:
    """``pd.DataFrame(columns)`` for columns of one length made here (numpy arrays of a
    native dtype, columns of :func:`_inferred` or takes of one), built from them without
    re-inferring their dtypes. The columns are handed over: the frame holds them (pass
    copies of arrays used elsewhere)."""
    values = list(columns.values())
    n = len(values[0]) if values else 0
    if n == 0 or any(len(v) != n for v in values):  # empty columns: typed as pandas does
        return pd.DataFrame(columns)
    return pd.DataFrame._from_arrays(
        values, columns=_labels(tuple(columns)), index=pd.RangeIndex(n), verify_integrity=False
    )


_LABELS: dict[tuple[str, ...], pd.Index] = {}


def _labels(names: tuple[str, ...]) -> pd.Index:
    """``pd.Index(names)`` (its inference is a third of a small frame's cost): a copy of
    one made once per column list (a copy: a frame's columns may be renamed in place)."""
    index = _LABELS.get(names)
    if index is None:
        if len(_LABELS) > 64:
            _LABELS.clear()
        index = _LABELS[names] = pd.Index(list(names))
    return index.copy()


class ColumnsRun(OneLP):
    """A one-LP method that may instead generate columns (:mod:`.colgen`, parameter
    ``lp_strategy``)."""

    objective_name = "max_min_fairness"

    def run(self, session: Session, instance: GpuClusterInstance, params: Any) -> Outcome:
        plan, groups = self._columns_plan(instance, params)
        if plan == "fill":
            from .colgen import solve_by_fill

            filled = solve_by_fill(session, instance, params, self.objective_name, groups)
            if filled is not None:
                return filled
        if plan != "columns":
            return super().run(session, instance, params)
        from .colgen import solve_by_columns

        outcome = solve_by_columns(session, instance, params, self.objective_name, groups)
        opts = session.options
        if not outcome.details.get("bottleneck_fill"):  # (else no LP was solved)
            outcome.details["lp_method"] = (
                opts.lp_method if opts.lp_method != "auto" else DEFAULT_LP_METHOD
            )
        return outcome

    def model(
        self, inst: GpuClusterInstance, thr: np.ndarray | None, params: GpuClusterParams
    ) -> Built:
        data = self.lp(inst, thr, params)
        assert data is not None
        lp, group_of = data
        built = M.build(lp)
        return built if group_of is None else Built(built.model, M.layout_of(lp, group_of))

    @classmethod
    def by_columns(cls, instance: GpuClusterInstance, params: Any) -> bool:
        """Column generation: asked for, or ``auto`` and the LP is large (never agnostic)."""
        return cls._columns_plan(instance, params)[0] == "columns"

    @classmethod
    def _columns_plan(
        cls, instance: GpuClusterInstance, params: Any
    ) -> tuple[str, tuple[np.ndarray, np.ndarray, np.ndarray] | None]:
        """How to solve the LP: ``"columns"`` (:meth:`by_columns`), ``"fill"`` (``auto``
        below :data:`.colgen.AUTO_MIN_PAIRS` pairs, from
        :data:`.colgen.AUTO_FILL_MIN_PAIRS`: the bottleneck fill, else the monolithic
        LP) or ``"monolithic"``; and the symmetry groups
        (:func:`.formulations.job_groups`) when deciding it computed them (column
        generation then uses them: one grouping of 20,000 jobs, not two)."""
        if params.agnostic or params.lp_strategy == "monolithic":
            return "monolithic", None
        if params.lp_strategy == "column_generation":
            return "columns", None
        from .colgen import AUTO_FILL_MIN_PAIRS, wants_columns

        arr = instance.arrays
        pairs = int(arr.allowed.sum())
        if pairs < AUTO_FILL_MIN_PAIRS:
            return "monolithic", None
        groups = None
        rows = arr.num_jobs
        if params.symmetry:
            groups = F.job_groups(arr, cls.objective_name == "makespan")
            reps = groups[1]
            rows = len(reps)
            pairs = int(arr.allowed[reps].sum())
        if wants_columns(pairs, rows):  # (from AUTO_MIN_PAIRS pairs)
            return "columns", groups
        return ("fill" if pairs >= AUTO_FILL_MIN_PAIRS else "monolithic"), groups


class MaxMinFairness(MaxMinRead, ColumnsRun):
    """Gavel's heterogeneity-aware max-min fairness LP (time sharing): one monolithic LP,
    or by column generation."""

    simplex_max_rows = 200
    """Dual simplex up to 200 rows (measured, threads=1: Gavel's 512-16,384 jobs in
    26-155 symmetry groups 1.5-8x faster than interior point; 512 distinct Gavel rows
    interior point 1.7x faster, 2,048 8x)."""

    def lp(
        self, inst: GpuClusterInstance, thr: np.ndarray | None, params: GpuClusterParams
    ) -> tuple[M.MaxMinLP, np.ndarray | None]:
        if params.symmetry and not params.agnostic:  # agnostic: the true value is not unique
            return F.grouped_lp(inst.arrays, "max_min_fairness", thr)
        return F.max_min_lp(inst.arrays, thr), None


class Makespan(MakespanRead, ColumnsRun):
    """The exact minimum-makespan LP (time sharing): one monolithic LP, or by column
    generation."""

    objective_name = "makespan"
    simplex_max_rows = 10_000
    """Dual simplex up to 10,000 job rows (measured, threads=1: Gavel's 512-8,192 jobs
    1.2-6x faster than interior point, 2,000-5,000 jobs x 8 types 2.4-3.7x; 16,384 Gavel
    jobs a tie)."""

    def lp(
        self, inst: GpuClusterInstance, thr: np.ndarray | None, params: GpuClusterParams
    ) -> tuple[M.MaxMinLP, np.ndarray | None]:
        # agnostic: all types equal; steps are read as seconds of work at throughput 1
        if params.symmetry and not params.agnostic:  # agnostic: the true value is not unique
            return F.grouped_lp(inst.arrays, "makespan", thr)
        return F.makespan_lp(inst.arrays, thr), None


class SpaceSharing(OneLP):
    """One LP with space sharing: pair columns per symmetry group (see
    ``models/gpu_cluster_space_sharing.md``)."""

    objective = "max_min_fairness"

    def model(
        self, inst: GpuClusterInstance, thr: np.ndarray | None, params: GpuClusterParams
    ) -> Built:
        from .colocation import build_colocation_model

        return build_colocation_model(inst, self.objective, thr, params.agnostic)

    def run(self, session: Session, instance: GpuClusterInstance, params: Any) -> Outcome:
        from .colocation import solve_priced, wants_pricing

        if self.needs_steps:
            require_steps(instance)
        if wants_pricing(params, instance, self.objective == "makespan"):
            auto = params.lp_strategy == "auto"
            outcome = solve_priced(session, instance, self.objective, self, auto)
            if outcome is not None:
                opts = session.options
                outcome.details["lp_method"] = (
                    opts.lp_method if opts.lp_method != "auto" else DEFAULT_LP_METHOD
                )
                return outcome
        return super().run(session, instance, params)

    def tables(
        self, instance: GpuClusterInstance, built: Built, solution: SolveView, x: np.ndarray
    ) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray, dict[str, Any]]:
        from .colocation import colocation_tables

        m = built.model
        lay = built.layout
        return colocation_tables(
            instance.arrays,
            lay,
            x,
            solution.values(m.pair, range(len(lay.group_cols))),
        )


class MaxMinSpaceSharing(MaxMinRead, SpaceSharing):
    """Max-min fairness with space sharing."""

    objective = "max_min_fairness"


class MakespanSpaceSharing(MakespanRead, SpaceSharing):
    """Makespan with space sharing."""

    objective = "makespan"
