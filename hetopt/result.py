"""The result of a solve: status, numbers, tidy tables and an independent check."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .status import Status

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Verification:
    """Outcome of the independent verifier.

    The verifier re-checks a solution from the instance and the result tables alone
    (never from the Pyomo model): capacities, time shares, precedences, deadlines, and
    the objective recomputed from the solution.
    """

    ok: bool
    objective_value: float | None = None
    """The objective as the verifier recomputed it from the tables."""
    violations: tuple[str, ...] = ()
    """One readable line per violated check (empty when ``ok``)."""
    checks: tuple[str, ...] = ()
    """Names of the checks that were run."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "objective_value": _num(self.objective_value),
            "violations": list(self.violations),
            "checks": list(self.checks),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Verification:
        return cls(
            ok=bool(d.get("ok", False)),
            objective_value=_float(d.get("objective_value")),
            violations=tuple(d.get("violations", ())),
            checks=tuple(d.get("checks", ())),
        )


@dataclass(frozen=True)
class StageReport:
    """The HiGHS runs of one stage of a method (e.g. water-filling's ``level`` LPs)."""

    solves: int = 0
    solve_s: float = 0.0
    simplex_iterations: int = 0
    ipm_iterations: int = 0
    mip_nodes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "solves": self.solves,
            "solve_s": _num(self.solve_s),
            "simplex_iterations": self.simplex_iterations,
            "ipm_iterations": self.ipm_iterations,
            "mip_nodes": self.mip_nodes,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StageReport:
        return cls(
            solves=int(d.get("solves", 0)),
            solve_s=_float(d.get("solve_s")) or 0.0,
            simplex_iterations=int(d.get("simplex_iterations", 0)),
            ipm_iterations=int(d.get("ipm_iterations", 0)),
            mip_nodes=int(d.get("mip_nodes", 0)),
        )


@dataclass(frozen=True)
class SolverReport:
    """What the solver did, over every HiGHS run of one solve (typed; ``Result.report``).

    ``stages`` splits the totals by the stage names a method gives its solves
    (``main`` for a single model; ``level``/``check`` for water-filling, ``bisection``
    for finish-time fairness, ``point`` for a Pareto front, ...).
    """

    solves: int = 0
    solve_s: float = 0.0
    simplex_iterations: int = 0
    ipm_iterations: int = 0
    mip_nodes: int = 0
    stages: Mapping[str, StageReport] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "solves": self.solves,
            "solve_s": _num(self.solve_s),
            "simplex_iterations": self.simplex_iterations,
            "ipm_iterations": self.ipm_iterations,
            "mip_nodes": self.mip_nodes,
            "stages": {k: v.to_dict() for k, v in self.stages.items()},
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SolverReport:
        return cls(
            solves=int(d.get("solves", 0)),
            solve_s=_float(d.get("solve_s")) or 0.0,
            simplex_iterations=int(d.get("simplex_iterations", 0)),
            ipm_iterations=int(d.get("ipm_iterations", 0)),
            mip_nodes=int(d.get("mip_nodes", 0)),
            stages={k: StageReport.from_dict(v) for k, v in (d.get("stages") or {}).items()},
        )


@dataclass(frozen=True)
class Result:
    """What :func:`hetopt.solve` returns.

    Attributes
    ----------
    kind, objective
        The instance kind and the objective that was optimised.
    status
        Coarse :class:`~hetopt.Status`; ``termination`` is the solver's exact wording.
    objective_value
        The objective in the kind's documented unit (``None`` without a solution).
    bound, gap
        Best proven bound and relative gap ``|value - bound| / |value|``
        (0 for a proven-optimal LP; ``None`` when unknown).
    runtime_s
        Wall-clock time of the whole solve (build + transfer + solver + load).
    tables
        Tidy pandas DataFrames, e.g. ``allocation(job, worker_type, fraction)``.
    verification
        The independent verifier's verdict on this solution.
    timings
        Seconds per phase: ``build_s``, ``transfer_s``, ``solve_s`` (HiGHS), ``load_s``.
    info
        Facts about how the result was found (method used, levels solved, ...), each
        declared by the kind (``hetopt kinds``, the docs' result pages).
    report
        The typed :class:`SolverReport`: HiGHS runs, iterations and nodes, per stage.
    params
        The kind parameters the solve ran with (validated, defaults filled in), so a
        verifier or a reader knows exactly what was solved.
    instance
        The validated instance that was solved, so a re-plan needs only the result
        (e.g. ``hetopt.kinds.human_robot.replan(result, now_s)``). It is not part of
        :meth:`to_dict` and is not pickled (a result sent between processes, or read
        back with :meth:`from_dict`, has ``instance=None``).

    Results are built by :mod:`hetopt.pipeline` only (and rebuilt by :meth:`from_dict`).
    """

    kind: str
    objective: str
    status: Status
    termination: str
    objective_value: float | None = None
    bound: float | None = None
    gap: float | None = None
    runtime_s: float = 0.0
    tables: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    verification: Verification | None = None
    timings: Mapping[str, float] = field(default_factory=dict)
    info: Mapping[str, Any] = field(default_factory=dict)
    report: SolverReport | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    instance: Any = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        # the instance stays behind: a sub-solve's result crossing a process boundary
        # must not ship its sub-instance back
        state = dict(self.__dict__)
        state["instance"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __getattr__(self, name: str) -> pd.DataFrame:
        # ``result.allocation`` as a shortcut for ``result.tables["allocation"]``
        tables = self.__dict__.get("tables", {})
        if name in tables:
            return tables[name]
        raise AttributeError(name)

    @property
    def ok(self) -> bool:
        """True when there is a solution and the verifier accepted it."""
        return self.status.has_solution and (self.verification is None or self.verification.ok)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict. Keys ``kind, objective, status, objective_value, bound, gap,
        runtime_s, tables`` are a fixed contract; others may be added.

        The format is published as a JSON Schema per kind (``hetopt schema KIND
        --result``, :func:`hetopt.schema.result_schema`): header numbers
        (``objective_value``, ``bound``, ``gap``) are ``null`` when unknown or not finite;
        in tables a missing or NaN value is ``null`` and an infinite one the string
        ``"inf"`` / ``"-inf"``; ``columns`` lists each table's columns (so an empty table
        keeps them); numpy values become plain JSON numbers, booleans and lists.
        """
        return {
            "kind": self.kind,
            "objective": self.objective,
            "status": self.status.value,
            "termination": self.termination,
            "objective_value": _finite(self.objective_value),
            "bound": _finite(self.bound),
            "gap": _finite(self.gap),
            "runtime_s": _num(self.runtime_s),
            "tables": {name: _records(df) for name, df in self.tables.items()},
            "columns": {name: [str(c) for c in df.columns] for name, df in self.tables.items()},
            "verification": self.verification.to_dict() if self.verification else None,
            "timings": {k: _num(v) for k, v in self.timings.items()},
            "info": _jsonable(dict(self.info)),
            "report": self.report.to_dict() if self.report else None,
            "params": _jsonable(dict(self.params)),
        }

    def to_json(self, path: str | Path | None = None, indent: int | None = 2) -> str:
        """Serialise to JSON (:meth:`to_dict`); also write it to ``path`` if given.

        :meth:`from_json` reads it back: ``Result.from_json(result.to_json())``.
        """
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False)
        if path is not None:
            Path(path).write_text(text + "\n")
        return text

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Result:
        """Rebuild a result from :meth:`to_dict` output (e.g. for plotting).

        Table columns get their declared dtypes back (the kind's
        :attr:`~hetopt.kinds.base.Kind.tables`): ``null`` and ``"inf"`` / ``"-inf"`` in a
        float column become NaN and infinities, int and bool columns are int64 and bool
        (also when the table is empty). ``info`` entries declared as floats get their
        infinities back; header numbers stay ``None`` when unknown.
        """
        ver = d.get("verification")
        spec = _declaration(str(d.get("kind", "")))
        columns = d.get("columns") or {}
        tables = {
            name: _frame(rows, columns.get(name), spec[0].get(name))
            for name, rows in (d.get("tables") or {}).items()
        }
        return cls(
            kind=d["kind"],
            objective=d["objective"],
            status=Status(d["status"]),
            termination=d.get("termination", ""),
            objective_value=_header(d.get("objective_value")),
            bound=_header(d.get("bound")),
            gap=_header(d.get("gap")),
            runtime_s=_float(d.get("runtime_s")) or 0.0,
            tables=tables,
            verification=Verification.from_dict(ver) if ver else None,
            timings={k: _float(v) for k, v in (d.get("timings") or {}).items()},
            info=_restore_info(d.get("info") or {}, spec[1]),
            report=SolverReport.from_dict(d["report"]) if d.get("report") else None,
            params=d.get("params") or {},
        )

    @classmethod
    def from_json(cls, source: str | Path) -> Result:
        """Rebuild a result from :meth:`to_json` output: the JSON text itself (a string
        starting with ``{``) or the path of a file holding it."""
        if isinstance(source, str) and source.lstrip().startswith("{"):
            return cls.from_dict(json.loads(source))
        return cls.from_dict(json.loads(Path(source).read_text()))

    def __str__(self) -> str:
        lines = [f"hetopt {self.kind} / {self.objective}: {self.status.value} ({self.termination})"]
        if self.objective_value is not None:
            lines.append(f"  objective value : {self.objective_value:.10g}")
        if self.bound is not None:
            lines.append(f"  bound           : {self.bound:.10g}")
        if self.gap is not None:
            lines.append(f"  gap             : {self.gap:.3%}")
        t = self.timings
        split = ", ".join(f"{k[:-2]} {v:.3f}" for k, v in t.items() if k.endswith("_s"))
        lines.append(
            f"  runtime         : {self.runtime_s:.3f} s" + (f" ({split})" if split else "")
        )
        if self.verification is not None:
            v = self.verification
            if v.ok:
                lines.append(f"  verified        : yes ({len(v.checks)} checks)")
            else:
                lines.append(f"  verified        : NO, {len(v.violations)} violation(s)")
                lines.extend(f"    - {x}" for x in v.violations[:5])
        for key, val in self.info.items():
            if isinstance(val, str | int | float | bool) and key not in ("objective",):
                lines.append(f"  {key:<16}: {val}")
        for name, df in self.tables.items():
            lines.append(f"  table {name}: {len(df)} rows")
        return "\n".join(lines)


def _finite(x: Any) -> float | None:
    """A number of the result's header: ``None`` (JSON ``null``) when unknown or not finite
    (a bound HiGHS has not proven yet is -inf internally)."""
    if x is None:
        return None
    f = float(x)
    return f if math.isfinite(f) else None


def _num(x: Any) -> Any:
    if x is None:
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return x
    if math.isnan(f):
        return None
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    return f


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of ``df`` as JSON-ready records (column by column: numeric columns are
    converted by numpy, object columns value by value)."""
    cols = [str(c) for c in df.columns]
    values = [_column(df.iloc[:, j]) for j in range(len(cols))]
    return [dict(zip(cols, row, strict=True)) for row in zip(*values, strict=True)]


def _column(series: pd.Series) -> list[Any]:
    kind = series.dtype.kind if isinstance(series.dtype, np.dtype) else "O"
    if kind == "f":
        arr = series.to_numpy()
        out: list[Any] = arr.tolist()
        bad = ~np.isfinite(arr)
        if bad.any():
            for i in np.flatnonzero(bad):
                out[i] = _num(arr[i])
        return out
    if kind in "iub":
        return series.to_numpy().tolist()  # type: ignore[no-any-return]
    return [_jsonable(v) for v in series.tolist()]


def _jsonable(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return [_jsonable(x) for x in v.tolist()]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float):
        return _num(v)
    if v is None or isinstance(v, str | int | bool):
        return v
    import pandas as pd  # imported only for values beyond JSON's (Timestamp, NA, ...)

    if isinstance(v, pd.Timestamp):
        return v.isoformat()
    try:
        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    return str(v)


# ------------------------------------------------------------------- reading back
_SPECIAL = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def _float(x: Any) -> Any:
    """A number written by :func:`_num` read back (``"inf"`` -> inf, ``None`` stays)."""
    if isinstance(x, str) and x in _SPECIAL:
        return _SPECIAL[x]
    return x


def _header(x: Any) -> float | None:
    return None if x is None else float(_float(x))


def _declaration(kind: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The declared tables (name -> :class:`~hetopt.contract.Table`) and detail types
    of ``kind`` (empty when the kind is unknown here or declares none)."""
    try:
        from .kinds import get_kind

        k = get_kind(kind)
    except Exception:  # an unknown or broken kind: read the data as it is
        return {}, {}
    from .contract import SOLVER_DETAILS

    return {t.name: t for t in k.tables}, {d.name: d.type for d in (*SOLVER_DETAILS, *k.details)}


def _frame(rows: Any, columns: Any, table: Any) -> pd.DataFrame:
    """A table from its records, with its columns (also when empty) and declared dtypes."""
    rows = list(rows or [])
    names: list[str] = list(columns) if columns else []
    for r in rows[:1] if not names else ():
        names = list(r)
    data: dict[str, Any] = {c: [r.get(c) for r in rows] for c in names}
    out = {}
    for c, vals in data.items():
        col = table.column(c) if table is not None else None
        dtype = col.dtype if col is not None else _guess(vals)
        out[c] = _typed(vals, dtype)
    import pandas as pd

    return pd.DataFrame(out, columns=names) if out else pd.DataFrame(rows)


def _guess(vals: list[Any]) -> str:
    """The dtype of an undeclared column: ``float`` when it holds numbers and the
    strings ``"inf"`` / ``"-inf"`` / ``"nan"`` (what :func:`_num` writes)."""
    special = False
    for v in vals:
        if isinstance(v, str):
            if v not in _SPECIAL:
                return "any"
            special = True
        elif v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
            return "any"
    return "float" if special else "any"


def _typed(vals: list[Any], dtype: str) -> Any:
    try:
        if dtype == "float":
            return np.array(
                [math.nan if v is None else float(_float(v)) for v in vals], dtype=float
            )
        if dtype == "int":
            return np.array(vals, dtype=np.int64)
        if dtype == "bool" and all(isinstance(v, bool) for v in vals):
            return np.array(vals, dtype=bool)
    except (TypeError, ValueError):  # not what the declaration says: keep the data
        pass
    return vals


def _restore_info(info: Mapping[str, Any], types: Mapping[str, str]) -> dict[str, Any]:
    return {k: _float(v) if types.get(k) == "float" else v for k, v in info.items()}
