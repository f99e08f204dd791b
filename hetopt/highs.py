"""The one path from a Pyomo model to HiGHS and back.

A formulation is a Pyomo ``ConcreteModel`` (the single source of the mathematics).
:func:`compile_model` turns it into sparse matrices with Pyomo's
``LinearStandardFormCompiler`` (mixed form, so row senses are kept), and
:class:`HighsModel` hands those arrays to ``highspy`` in one ``passModel`` call and
keeps the HiGHS object alive for warm re-solves (change a row or column bound, solve
again from the previous basis).

Measured (see ``benchmarks/``): this path adds far less than Pyomo's own
``appsi``/``contrib.solver`` HiGHS interfaces, which create HiGHS rows one Python call at
a time.
"""

from __future__ import annotations

import contextlib
import logging
import math
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import highspy
import numpy as np
import scipy.sparse  # noqa: F401  (imported here so the first compile does not pay for it)

from . import collector, deferred
from .errors import OptionsError, SolveError
from .options import SolveOptions
from .status import Status

# Pyomo is imported by the functions that compile Pyomo models (``compile_model``), not
# here: a kind that hands HiGHS arrays (gpu_cluster's max-min LPs) never imports it.
if TYPE_CHECKING:
    import pyomo.environ as pyo
else:

    def __getattr__(name: str) -> Any:
        if name == "LinearRows":  # formerly imported here; it lives in hetopt.pyomo_ext
            from .pyomo_ext import LinearRows

            return LinearRows
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_HighsClass: Any
try:  # the bare core class does not print HiGHS's banner on construction
    from highspy._core import _Highs as _HighsClass
except ImportError:  # pragma: no cover - older/newer highspy layouts
    _HighsClass = highspy.Highs

solver_log = logging.getLogger("hetopt.solver")
log = logging.getLogger(__name__)

INF = highspy.kHighsInf
_MS = highspy.HighsModelStatus

_LIMIT_STATUSES = {
    _MS.kTimeLimit,
    _MS.kIterationLimit,
    _MS.kSolutionLimit,
    _MS.kInterrupt,
    _MS.kObjectiveBound,
    _MS.kObjectiveTarget,
    _MS.kMemoryLimit,
    _MS.kUnknown,
}
if hasattr(_MS, "kHighsInterrupt"):
    _LIMIT_STATUSES.add(_MS.kHighsInterrupt)


@dataclass
class CompiledModel:
    """Matrix form of a Pyomo model, ready for HiGHS.

    ``row_lower <= A x <= row_upper``, ``col_lower <= x <= col_upper``,
    objective ``sense * (c @ x + offset)``. A model a kind writes as arrays directly
    (no Pyomo components) has ``model`` ``None`` and empty ``columns`` and ``rows``: the
    sizes are the matrix's.
    """

    model: pyo.ConcreteModel | None
    columns: list[Any]
    rows: list[Any]
    A: Any  # scipy.sparse.csc_array
    c: np.ndarray
    offset: float
    maximize: bool
    col_lower: np.ndarray
    col_upper: np.ndarray
    row_lower: np.ndarray
    row_upper: np.ndarray
    integrality: np.ndarray
    col_index: dict[int, int] = field(default_factory=dict)
    row_index: dict[int, list[int]] = field(default_factory=dict)

    @property
    def is_mip(self) -> bool:
        return bool(self.integrality.any())

    @property
    def num_col(self) -> int:
        return int(self.A.shape[1])

    @property
    def num_row(self) -> int:
        return int(self.A.shape[0])

    def column(self, var: Any) -> int:
        """Column index of a ``VarData`` (``-1`` if the compiler dropped it as unused)."""
        return self.col_index.get(id(var), -1)

    def columns_of(self, var: pyo.Var, keys: Iterable[Any] | None = None) -> np.ndarray:
        """Column indices of an indexed variable's entries (in ``keys`` order)."""
        if keys is None:
            keys = list(var.keys())
        get = self.col_index.get
        return np.fromiter((get(id(var[k]), -1) for k in keys), dtype=np.int64)


def compile_model(model: pyo.ConcreteModel) -> CompiledModel:
    """Compile a linear (MI)LP Pyomo model to :class:`CompiledModel`.

    Ordinary constraints go through Pyomo's ``LinearStandardFormCompiler`` (mixed form);
    :class:`~hetopt.pyomo_ext.LinearRows` blocks are copied as matrices.
    """
    import pyomo.environ as pyo
    import scipy.sparse as sp
    from pyomo.common.errors import InfeasibleConstraintException
    from pyomo.core.base.component import ActiveComponent
    from pyomo.repn.plugins.standard_form import LinearStandardFormCompiler

    from .pyomo_ext import LinearRows

    objs = list(model.component_data_objects(pyo.Objective, active=True))
    if len(objs) != 1:
        raise SolveError(f"expected exactly one active objective, found {len(objs)}")
    maximize = objs[0].sense == pyo.maximize
    blocks = [
        c
        for c in model.component_objects(pyo.Constraint, active=True, descend_into=True)
        if isinstance(c, LinearRows)
    ]
    # hide the matrix blocks from Pyomo's compiler (component flag only: O(1) per block)
    for b in blocks:
        ActiveComponent.deactivate(b)
    dropped: list[Any] = []
    try:
        while True:
            try:
                info = LinearStandardFormCompiler().write(model, mixed_form=True, set_sense=None)
                break
            except InfeasibleConstraintException as exc:
                # a constraint with no variables that cannot hold (e.g. ``0 >= 1``): keep it
                # as an empty row so that HiGHS reports the model infeasible
                con = _constraint_named(model, str(exc))
                if con is None or len(dropped) > 1000:
                    raise
                con.deactivate()
                dropped.append(con)
    finally:
        for b in blocks:
            ActiveComponent.activate(b)
        for con in dropped:
            con.activate()

    columns = list(info.columns)
    col_index = {id(v): j for j, v in enumerate(columns)}
    block_cols = []
    for b in blocks:
        found = list(map(col_index.get, map(id, b.variables)))
        if None in found:
            for k, v in enumerate(b.variables):
                if found[k] is None:
                    j = col_index.get(id(v))
                    if j is None:
                        j = col_index[id(v)] = len(columns)
                        columns.append(v)
                    found[k] = j
        block_cols.append(np.asarray(found, dtype=np.int64))
    n = len(columns)

    # rows of the ordinary constraints (a ranged constraint's two rows are merged)
    rhs = np.asarray(info.rhs, dtype=float).ravel() if len(info.rows) else np.zeros(0)
    A0 = info.A.tocsr()
    keep: list[int] = []
    lows: list[float] = []
    ups: list[float] = []
    rows: list[Any] = []
    prev = None
    for i, (con, sense) in enumerate(info.rows):
        lo = -INF if sense == 1 else rhs[i]
        hi = INF if sense == -1 else rhs[i]
        if prev is not None and con is prev and sense == -1 and ups[-1] < INF and lows[-1] == -INF:
            lows[-1] = lo
            continue
        keep.append(i)
        lows.append(lo)
        ups.append(hi)
        rows.append(con)
        prev = con
    parts = [A0[keep] if len(keep) != A0.shape[0] else A0]
    parts[0] = sp.csr_array(parts[0], shape=(len(keep), n)) if parts[0].shape[1] != n else parts[0]
    row_lower = [np.asarray(lows, dtype=float)]
    row_upper = [np.asarray(ups, dtype=float)]
    for con in dropped:  # empty rows that cannot hold
        lb, _, ub = con.to_bounded_expression(evaluate_bounds=True)
        body = pyo.value(con.body)
        parts.append(sp.csr_array((1, n)))
        row_lower.append(np.array([-INF if lb is None else lb - body]))
        row_upper.append(np.array([INF if ub is None else ub - body]))
        rows.append(con)
    for b, cols in zip(blocks, block_cols, strict=True):
        data, indices, indptr = b.csr
        parts.append(sp.csr_array((data, cols[indices], indptr), shape=(len(indptr) - 1, n)))
        row_lower.append(np.where(np.isinf(b.row_lower), -INF, b.row_lower))
        row_upper.append(np.where(np.isinf(b.row_upper), INF, b.row_upper))
        rows.extend(b.values())
    A = sp.vstack(parts, format="csc") if len(parts) > 1 else parts[0].tocsc()
    A.sort_indices()

    c = np.zeros(n)
    c0 = np.asarray(info.c.toarray()).ravel() if info.c.shape[1] else np.zeros(0)
    c[: len(c0)] = c0
    offset = float(np.asarray(info.c_offset).ravel()[0]) if np.size(info.c_offset) else 0.0

    col_lower, col_upper, integrality = _column_bounds(columns)

    row_index: dict[int, list[int]] = {}
    for i, r in enumerate(rows):
        row_index.setdefault(id(r), []).append(i)
    return CompiledModel(
        model=model,
        columns=columns,
        rows=rows,
        A=A,
        c=c,
        offset=offset,
        maximize=maximize,
        col_lower=col_lower,
        col_upper=col_upper,
        row_lower=np.concatenate(row_lower),
        row_upper=np.concatenate(row_upper),
        integrality=integrality,
        col_index=col_index,
        row_index=row_index,
    )


_FINITE_NATIVE = (int, float)


def _column_bounds(columns: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Column bounds and integrality, as ``VarData.bounds``/``fixed``/``is_integer`` give
    them: the domain's bounds and integrality are looked up once per domain object, and a
    column whose own bounds are plain finite numbers is resolved without Pyomo's
    per-variable property calls (anything else takes Pyomo's own path)."""
    n = len(columns)
    lows = np.empty(n)
    ups = np.empty(n)
    integrality = np.zeros(n, dtype=np.int32)
    domains: dict[int, tuple[Any, Any, bool]] = {}
    for j, v in enumerate(columns):
        if v.fixed:
            lows[j] = ups[j] = v.value
            continue
        dom = v.domain
        info = domains.get(id(dom))
        if info is None:
            dlb, dub = dom.bounds()
            info = domains[id(dom)] = (dlb, dub, bool(v.is_integer()))
        dlb, dub, integer = info
        lb, ub = v._lb, v._ub
        if (lb is None or (lb.__class__ in _FINITE_NATIVE and -INF < lb < INF)) and (
            ub is None or (ub.__class__ in _FINITE_NATIVE and -INF < ub < INF)
        ):
            lb = dlb if lb is None else (lb if dlb is None else max(lb, dlb))
            ub = dub if ub is None else (ub if dub is None else min(ub, dub))
        else:
            lb, ub = v.bounds
        lows[j] = -INF if lb is None else lb
        ups[j] = INF if ub is None else ub
        if integer:
            integrality[j] = 1
    return lows, ups, integrality


@dataclass
class RawSolution:
    """What HiGHS returned, before a kind turns it into tables."""

    status: Status
    termination: str
    objective: float | None
    bound: float | None
    gap: float | None
    x: np.ndarray | None
    row_dual: np.ndarray | None
    solve_s: float
    info: dict[str, Any] = field(default_factory=dict)

    def value(self, compiled: CompiledModel, var: Any, default: float = 0.0) -> float:
        if self.x is None:
            raise SolveError("no solution available")
        j = compiled.column(var)
        return float(self.x[j]) if j >= 0 else default

    def values(
        self, compiled: CompiledModel, var: pyo.Var, keys: Iterable[Any] | None = None
    ) -> np.ndarray:
        """Values of an indexed variable's entries (dropped, unused columns read as 0)."""
        if self.x is None:
            raise SolveError("no solution available")
        cols = compiled.columns_of(var, keys)
        out = np.zeros(len(cols))
        ok = cols >= 0
        out[ok] = self.x[cols[ok]]
        return out


_CB = highspy.cb.HighsCallbackType
_INTERRUPT_TYPES = (
    _CB.kCallbackSimplexInterrupt,
    _CB.kCallbackIpmInterrupt,
    _CB.kCallbackMipInterrupt,
)

_STOP = threading.Event()
"""Set by Ctrl-C while HiGHS runs: every running solve stops at its next check, and later
solves of the same top-level solve do not start (see :func:`clear_interrupt`)."""

_LAZY_INTERRUPT_TYPES = (_CB.kCallbackSimplexInterrupt, _CB.kCallbackIpmInterrupt)
"""Started only once Ctrl-C arrives (:func:`_arm`): HiGHS calls them at every simplex and
IPM iteration, and each call into Python cost ~20 us (1,321 calls, 30 ms of a 60 ms IPM
solve of a 256-job max-min LP, measured). The MIP one stays on (MIP progress ticks)."""

_RUNNING: set[Any] = set()
"""The ``highspy`` objects running now (armed at Ctrl-C)."""
_RUNNING_LOCK = threading.Lock()


def _arm(h: Any) -> None:
    for cb in _LAZY_INTERRUPT_TYPES:
        h.startCallback(cb)


def _arm_running() -> None:
    """Ctrl-C: start the LP interrupt callbacks of every HiGHS run in progress (HiGHS
    reads the flag at its next check; ``_STOP`` is set first, so a run that starts after
    this sees it before it starts)."""
    with _RUNNING_LOCK:
        running = list(_RUNNING)
    for h in running:
        _arm(h)


_MAX_INTERRUPTS = 3
"""Ctrl-C presses after which hetopt stops waiting for HiGHS to notice (the run is left
behind in its thread and the interrupt goes up)."""


def interrupted() -> bool:
    """Whether Ctrl-C stopped HiGHS since :func:`clear_interrupt`."""
    return _STOP.is_set()


def clear_interrupt() -> None:
    """Forget an earlier Ctrl-C (a new top-level solve starts)."""
    _STOP.clear()


_MIP_PROGRESS_TYPES = (_CB.kCallbackMipInterrupt, _CB.kCallbackMipImprovingSolution)

PROGRESS_EVERY_S = 0.5
"""Least time between two MIP progress reports (a new incumbent is always reported)."""


class _Hooks:
    """What HiGHS's callback reaches for one model: the progress receiver of the solve
    that is running (``None``: nobody listens)."""

    def __init__(self) -> None:
        self.progress: Callable[[dict[str, Any]], None] | None = None
        self.last = 0.0
        self.cancel = False
        """Stop this model's run at HiGHS's next check (its input failed validation:
        :mod:`hetopt.deferred`)."""

    def mip(self, improving: bool, data_out: Any) -> None:
        now = time.perf_counter()
        if not improving and now - self.last < PROGRESS_EVERY_S:
            return
        self.last = now
        receiver = self.progress
        if receiver is None:
            return
        try:
            receiver(
                {
                    "incumbent": float(data_out.mip_primal_bound),
                    "bound": float(data_out.mip_dual_bound),
                    "gap": float(data_out.mip_gap),
                    "nodes": int(data_out.mip_node_count),
                    "running_s": float(data_out.running_time),
                    "improving": improving,
                }
            )
        except Exception as exc:  # never raise into HiGHS
            log.debug("progress receiver raised %s: %s", type(exc).__name__, exc)


def _callback(callback_type: int, message: str, data_out: Any, data_in: Any, user: Any) -> None:
    if callback_type == _CB.kCallbackLogging:
        line = message.rstrip("\n")
        if line:
            solver_log.info(line)
        return
    if callback_type in _INTERRUPT_TYPES and (_STOP.is_set() or getattr(user, "cancel", False)):
        data_in.user_interrupt = True
    if (
        callback_type in _MIP_PROGRESS_TYPES
        and isinstance(user, _Hooks)
        and user.progress is not None
    ):
        user.mip(callback_type == _CB.kCallbackMipImprovingSolution, data_out)


class HighsModel:
    """A compiled model held in one persistent HiGHS instance.

    Create it once, :meth:`solve`, change bounds (:meth:`set_row_bounds`,
    :meth:`set_col_bounds`, :meth:`set_objective_coefficients`) and solve again: HiGHS
    starts from the previous basis when it has one.
    """

    def __init__(self, compiled: CompiledModel):
        self.compiled = compiled
        self.transfer_s = 0.0
        t0 = time.perf_counter()
        h = _HighsClass()
        _check(h.setOptionValue("output_flag", False), "output_flag")
        _check(h.setOptionValue("log_to_console", False), "log_to_console")
        self._h = h
        self._logging = False
        self._hooks = _Hooks()
        _check(h.setCallback(_callback, self._hooks), "callback")  # type: ignore[arg-type]
        h.startCallback(_CB.kCallbackMipInterrupt)  # the LP ones: at Ctrl-C (_arm)
        self._improving = False
        cm = compiled
        A = cm.A
        status = h.passModel(
            cm.num_col,
            cm.num_row,
            int(A.nnz),
            1,  # column-wise
            -1 if cm.maximize else 1,
            float(cm.offset),
            np.ascontiguousarray(cm.c, dtype=np.float64),
            np.ascontiguousarray(cm.col_lower, dtype=np.float64),
            np.ascontiguousarray(cm.col_upper, dtype=np.float64),
            np.ascontiguousarray(cm.row_lower, dtype=np.float64),
            np.ascontiguousarray(cm.row_upper, dtype=np.float64),
            np.ascontiguousarray(A.indptr, dtype=np.int32),
            np.ascontiguousarray(A.indices, dtype=np.int32),
            np.ascontiguousarray(A.data, dtype=np.float64),
            np.ascontiguousarray(cm.integrality, dtype=np.int32),
        )
        if status == highspy.HighsStatus.kError:
            raise SolveError("HiGHS rejected the model (passModel returned an error)")
        self.transfer_s = time.perf_counter() - t0
        self._solved_once = False
        self._applied: tuple[tuple[Any, ...], SolveOptions] | None = None
        """What the options HiGHS holds were set from (:meth:`_apply_options`)."""

    @property
    def highs(self) -> Any:
        """The underlying ``highspy`` object (for advanced use)."""
        return self._h

    # ------------------------------------------------------------------ edits
    def set_row_bounds(self, con: Any, lower: float | None, upper: float | None) -> None:
        """Change the bounds of a ``ConstraintData`` (one row; ``None`` = no bound)."""
        rows = self.compiled.row_index.get(id(con))
        if not rows:
            raise SolveError(f"constraint {con.name} is not in the compiled model")
        lo = -INF if lower is None else float(lower)
        hi = INF if upper is None else float(upper)
        for r in rows:
            self.compiled.row_lower[r], self.compiled.row_upper[r] = lo, hi
            self._h.changeRowBounds(r, lo, hi)

    def row(self, con: Any) -> int:
        """Row index of a ``ConstraintData``."""
        rows = self.compiled.row_index.get(id(con))
        if not rows:
            raise SolveError(f"constraint {con.name} is not in the compiled model")
        return rows[0]

    def set_col_bounds(self, var: Any, lower: float | None, upper: float | None) -> None:
        """Change the bounds of a ``VarData``."""
        j = self.compiled.column(var)
        if j < 0:
            raise SolveError(f"variable {var.name} is not in the compiled model")
        lo = -INF if lower is None else float(lower)
        hi = INF if upper is None else float(upper)
        self.compiled.col_lower[j], self.compiled.col_upper[j] = lo, hi
        self._h.changeColBounds(j, lo, hi)

    def set_objective_coefficients(self, cols: np.ndarray, costs: np.ndarray) -> None:
        """Change objective coefficients of columns ``cols`` (model sense unchanged)."""
        cols = np.asarray(cols, dtype=np.int32)
        costs = np.asarray(costs, dtype=np.float64)
        self.compiled.c[cols] = costs
        self._h.changeColsCost(len(cols), cols, costs)

    def set_start(self, x: np.ndarray) -> None:
        """Give HiGHS a starting (MIP) solution, one value per column."""
        sol = highspy.HighsSolution()
        sol.col_value = list(np.asarray(x, dtype=float))
        sol.value_valid = True
        self._h.setSolution(sol)

    # ------------------------------------------------------------------ solve
    def _apply_options(self, options: SolveOptions, default_lp_method: str) -> None:
        h = self._h
        verbose = solver_log.isEnabledFor(logging.INFO)
        is_mip = self.compiled.is_mip
        warm = not is_mip and self._solved_once and self._has_basis()
        threads = _threads_option(options.threads)
        key = (default_lp_method, verbose, is_mip, warm, threads)  # (options: immutable)
        last = self._applied
        if last is not None and last[0] == key and last[1] == options:
            # the options this run would set are the ones HiGHS holds from the last run
            # (a warm re-solve loop: ~0.15 ms a run of resetOptions and ten settings)
            return
        self._applied = None
        # every solve starts from HiGHS's defaults: an option given to one solve (say
        # mip_abs_gap in a Pareto loop) must not leak into the next
        h.resetOptions()
        # console off first: HiGHS prints its banner on stdout when the logging callback
        # starts while it logs to the console (its default after resetOptions), and stdout
        # is for results (``--json``); the log reaches the ``hetopt.solver`` logger through
        # the callback, never the console
        _check(h.setOptionValue("log_to_console", False), "log_to_console")
        _check(h.setOptionValue("output_flag", verbose), "output_flag")
        if verbose and not self._logging:
            h.startCallback(_CB.kCallbackLogging)
            self._logging = True
        _set(h, "time_limit", float(options.time_limit_s) if options.time_limit_s else INF)
        if options.mip_rel_gap is not None:
            _set(h, "mip_rel_gap", float(options.mip_rel_gap))
        _set(h, "threads", threads)
        if options.seed is not None:
            _set(h, "random_seed", int(options.seed))
        method = options.lp_method if options.lp_method != "auto" else default_lp_method
        if is_mip:
            _set(h, "solver", "choose")
        elif warm:
            # warm start from the previous basis. Devex pricing: computing exact dual
            # steepest-edge weights for a restarted basis costs one solve per row (2.4 s
            # against 0.45 s at 5,000 Gavel jobs, measured)
            _set(h, "solver", "simplex")
            _set(h, "simplex_dual_edge_weight_strategy", 1)
        else:
            _set(h, "solver", {"auto": "choose"}.get(method, method))
            _set(h, "simplex_dual_edge_weight_strategy", -1)
        for name, val in options.highs_options.items():
            _set(h, name, val)
        self._applied = (key, options)

    def _has_basis(self) -> bool:
        try:
            return bool(self._h.getBasis().valid)
        except Exception:  # pragma: no cover
            return False

    def solve(
        self,
        options: SolveOptions | None = None,
        default_lp_method: str = "auto",
        progress: Callable[[dict[str, Any]], None] | None = None,
    ) -> RawSolution:
        """Run HiGHS and return a :class:`RawSolution` with an honest status.

        ``progress`` receives, during a MIP solve, ``{"incumbent", "bound", "gap",
        "nodes", "running_s", "improving"}`` (HiGHS's own objective; at most every
        :data:`PROGRESS_EVERY_S` seconds, and at every new incumbent), from HiGHS's thread.
        """
        options = options or SolveOptions()
        self._apply_options(options, default_lp_method)
        if progress is not None and self.compiled.is_mip and not self._improving:
            self._h.startCallback(_CB.kCallbackMipImprovingSolution)
            self._improving = True
        self._hooks.progress = progress
        self._hooks.last = time.perf_counter()
        try:
            return self._solve()
        finally:
            self._hooks.progress = None

    def _solve(self) -> RawSolution:
        h = self._h
        is_mip = self.compiled.is_mip  # (read once: nothing changes it during a solve)
        t0 = time.perf_counter()
        if _STOP.is_set():  # Ctrl-C stopped an earlier solve of this top-level solve
            return RawSolution(
                Status.NO_SOLUTION,
                "interrupted before this solve",
                None,
                None,
                None,
                None,
                None,
                0.0,
                {"interrupted": True},
            )
        direct = not is_mip and h.getNumNz() <= DIRECT_MAX_NONZEROS
        run_status = _run(h, direct, self._hooks)
        ms = h.getModelStatus()
        if ms == _MS.kUnboundedOrInfeasible and not is_mip:
            # presolve could not tell which: ask again without it
            got: Any = h.getOptionValue("presolve")
            presolve = got[1] if isinstance(got, tuple) else got
            _set(h, "presolve", "off")
            h.clearSolver()
            run_status = _run(h, direct, self._hooks)
            ms = h.getModelStatus()
            _set(h, "presolve", presolve)
        retried = ""
        if is_mip and _inconsistent_mip_answer(h, ms):
            # HiGHS 1.16 can end "Optimal" with a point whose objective is not the one it
            # reports (seen after setSolution with presolve on: the start's point, a lower
            # "optimum"). Solve the same MILP again from scratch (no start), then
            # without presolve; say so, never pass the answer on silently.
            got = h.getOptionValue("presolve")
            presolve = got[1] if isinstance(got, tuple) else got
            for how, setting in (("without the start", presolve), ("without presolve", "off")):
                _set(h, "presolve", setting)
                h.clearSolver()
                run_status = _run(h, hooks=self._hooks)
                ms = h.getModelStatus()
                retried = how
                if not _inconsistent_mip_answer(h, ms):
                    break
            _set(h, "presolve", presolve)
            log.warning(
                "HiGHS's MILP answer did not match its own objective (c.x differs from the "
                "reported value); solved again from scratch %s",
                retried,
            )
        solve_s = time.perf_counter() - t0
        self._solved_once = True
        raw = self._collect(ms, run_status, solve_s, is_mip)
        if retried:
            raw.info["inconsistent_answer_resolved"] = retried
            if _inconsistent_mip_answer(h, ms):
                raw.status = Status.ERROR if raw.status.has_solution else raw.status
                raw.termination += " (HiGHS's objective does not match its point)"
            else:
                raw.termination += (
                    f" (solved again {retried}: HiGHS's first answer was inconsistent)"
                )
        return raw

    def _collect(self, ms: Any, run_status: Any, solve_s: float, is_mip: bool) -> RawSolution:
        h = self._h
        info = h.getInfo()
        termination = h.modelStatusToString(ms)
        has_primal = int(info.primal_solution_status) == 2  # kSolutionStatusFeasible
        status: Status
        if ms == _MS.kOptimal:
            status = Status.OPTIMAL
        elif ms == _MS.kModelEmpty:
            # no columns: optimal unless a (constant) row excludes 0
            cm = self.compiled
            bad = (cm.row_lower > 1e-9) | (cm.row_upper < -1e-9)
            if bad.any():
                status = Status.INFEASIBLE
                termination = f"constant row {cm.rows[int(np.argmax(bad))].name} cannot hold"
            else:
                status = Status.OPTIMAL
                has_primal = True
        elif ms == _MS.kInfeasible:
            status = Status.INFEASIBLE
        elif ms == _MS.kUnbounded:
            status = Status.UNBOUNDED
        elif ms == _MS.kUnboundedOrInfeasible:
            status = Status.INFEASIBLE if is_mip else Status.UNBOUNDED
            termination += " (HiGHS could not tell which)"
        elif ms in _LIMIT_STATUSES:
            status = Status.FEASIBLE if has_primal else Status.NO_SOLUTION
        else:
            status = Status.ERROR
            if run_status == highspy.HighsStatus.kError:
                termination = f"HiGHS run failed ({termination})"
        if status == Status.OPTIMAL and not has_primal:
            status = Status.ERROR
            termination += " (but no feasible primal solution was returned)"

        objective: float | None = None
        bound: float | None = None
        gap: float | None = None
        x: np.ndarray | None = None
        duals: np.ndarray | None = None
        if status.has_solution:
            sol = h.getSolution()
            x = np.asarray(sol.col_value, dtype=float)
            if ms == _MS.kModelEmpty:
                x = np.clip(
                    np.zeros(self.compiled.num_col),
                    self.compiled.col_lower,
                    self.compiled.col_upper,
                )
            objective = float(info.objective_function_value)
            if is_mip:
                bound = float(info.mip_dual_bound)
                gap = _rel_gap(objective, bound)
            elif status == Status.OPTIMAL:
                bound, gap = objective, 0.0
                if sol.dual_valid:
                    duals = np.asarray(sol.row_dual, dtype=float)
            else:
                bound, gap = None, None
        elif is_mip and math.isfinite(float(info.mip_dual_bound)):
            bound = float(info.mip_dual_bound)
        extra: dict[str, Any] = {
            "simplex_iterations": int(info.simplex_iteration_count),
            "ipm_iterations": int(info.ipm_iteration_count),
            "mip_nodes": int(info.mip_node_count),
            "max_primal_infeasibility": float(info.max_primal_infeasibility),
            "highs_run_status": str(run_status),
        }
        if _STOP.is_set():
            extra["interrupted"] = True
        return RawSolution(status, termination, objective, bound, gap, x, duals, solve_s, extra)

    def write(self, path: str) -> None:
        """Write the model as HiGHS sees it (``.lp`` or ``.mps`` by extension)."""
        self._h.writeModel(str(path))


def _inconsistent_mip_answer(h: Any, ms: Any) -> bool:
    """True when HiGHS reports a MIP solution whose recomputed objective ``c x + offset``
    differs from the objective HiGHS reports (beyond 1e-6 relative)."""
    info = h.getInfo()
    if int(info.primal_solution_status) != 2 or ms not in (_MS.kOptimal, *_LIMIT_STATUSES):
        return False
    lp = h.getLp()
    x = np.asarray(h.getSolution().col_value, dtype=float)
    cost = np.asarray(lp.col_cost_, dtype=float)
    if len(x) != len(cost):
        return False
    value = float(cost @ x) + float(lp.offset_)
    reported = float(info.objective_function_value)
    return abs(value - reported) > 1e-6 * max(1.0, abs(value), abs(reported))


DIRECT_MAX_NONZEROS = 25_000
"""LPs of at most this many matrix entries run on the main thread itself, not handed to
the worker thread (:func:`_run_waiting`). The hand-off there and back cost 0.5-0.9 ms a
run on a 2-core VM (measured: a warm HiGHS re-solve of a 2,000-job scheduler round took
0.6-0.8 ms on the main thread against 1.2-1.7 ms through the worker), more than such a
run itself; an LP this small is solved in milliseconds, so a Ctrl-C during it takes
effect as it returns (:func:`_run_here`). MIPs always go to the worker."""


def _run(h: Any, direct: bool = False, hooks: _Hooks | None = None) -> Any:
    """``h.run()``, interruptible with Ctrl-C.

    In the main thread (where Python delivers SIGINT) HiGHS runs in a helper thread while
    this one waits; Ctrl-C sets :data:`_STOP`, which HiGHS's interrupt callbacks read, so
    HiGHS stops at its next check and returns its incumbent (status ``kInterrupt``).
    Elsewhere (executor threads, Dask workers) HiGHS runs directly. The LP interrupt
    callbacks are started only when Ctrl-C arrives (:data:`_LAZY_INTERRUPT_TYPES`).
    ``direct``: the run is a small LP (:data:`DIRECT_MAX_NONZEROS`), run on the main
    thread itself (:func:`_run_here`). ``hooks``: the model's callback data, whose
    ``cancel`` stops the run when the validation beside it fails (:mod:`hetopt.deferred`).
    """
    with _RUNNING_LOCK:
        _RUNNING.add(h)
    try:
        if _STOP.is_set():  # Ctrl-C came while this run was being set up
            _arm(h)
        return _run_waiting(h, direct, hooks)
    finally:
        with _RUNNING_LOCK:
            _RUNNING.discard(h)


def _note_interrupt(signum: int, frame: Any) -> None:
    """SIGINT during a run on the main thread (:func:`_run_here`): Python calls this as
    the run returns; the solve stops as a Ctrl-C while HiGHS ran stops it."""
    _STOP.set()
    log.warning("interrupted: HiGHS's run had ended; no further runs of this solve")


def _run_here(h: Any) -> Any:
    """``h.run()`` on the main thread (a small LP: :data:`DIRECT_MAX_NONZEROS`).

    Python runs signal handlers between bytecodes, so a Ctrl-C reaches Python only as the
    run returns. With Python's own SIGINT handler in place, :func:`_note_interrupt`
    stands in for it during the run: the Ctrl-C then sets :data:`_STOP` (the solve ends
    as interrupted, its later runs do not start) instead of a ``KeyboardInterrupt``
    raised at whatever line comes next. A handler of the program's own stays in place.
    """
    collector.resume()  # (the young collection due, before the run: it is short)
    try:
        previous = signal.signal(signal.SIGINT, _note_interrupt)
    except ValueError:  # pragma: no cover - not the main interpreter's main thread
        return _fitted_run(h)
    if previous is not signal.default_int_handler:
        signal.signal(signal.SIGINT, previous)
        return _fitted_run(h)
    try:
        return _fitted_run(h)
    finally:
        signal.signal(signal.SIGINT, previous)


class _Worker:
    """A long-lived daemon thread that runs ``h.run()`` jobs for the main thread (starting
    a thread per run cost ~1 ms, more than a warm HiGHS re-solve)."""

    def __init__(self) -> None:
        self._jobs: deque[Callable[[], None] | None] = deque()
        # raw locks, not a Semaphore/Event (Python-level conditions): ~30 us less a
        # hand-off, measured. ``_ready`` is held while the queue has nothing new
        self._ready = threading.Lock()
        self._ready.acquire()
        self.thread = threading.Thread(target=self._loop, name="highs-run", daemon=True)
        self.thread.start()

    def put(self, job: Callable[[], None] | None) -> None:
        """Queue ``job`` (``None``: end the thread once the jobs before it ran)."""
        self._jobs.append(job)
        # (released already: the worker runs the whole queue when it wakes)
        with contextlib.suppress(RuntimeError):
            self._ready.release()

    def _loop(self) -> None:
        jobs = self._jobs
        while True:
            self._ready.acquire()
            while jobs:
                job = jobs.popleft()
                if job is None:
                    return
                job()


_worker: _Worker | None = None
"""The main thread's HiGHS worker (only the main thread uses it; a run abandoned after
repeated Ctrl-C takes its worker with it, and the next run starts a new one; in a forked
child the thread is gone, ``is_alive()`` says so, and a new one starts too). A change of
``threads`` keeps the worker: it resets its own HiGHS scheduler (:func:`_fit_scheduler`)."""


def _run_waiting(h: Any, direct: bool = False, hooks: _Hooks | None = None) -> Any:
    global _worker
    if threading.current_thread() is not threading.main_thread():
        collector.resume()  # (no validation is deferred off the main thread: hetopt.api)
        _fit_scheduler(h)
        return _fitted_run(h)
    # (with a validation due, even a small LP goes to the worker: it runs beside)
    if direct and not deferred.due():
        _fit_scheduler(h)
        return _run_here(h)
    box: list[Any] = []
    failure: list[BaseException] = []
    done = threading.Lock()  # released when the run ended
    done.acquire()
    started = threading.Lock()  # released as the worker enters HiGHS
    started.acquire()

    # set before ``started`` and ``done`` are released, and read after their acquires: a
    # Ctrl-C as an acquire returned would lose its result, and the next acquire would
    # wait forever for a release that came
    entered: list[bool] = []
    ended: list[bool] = []

    def target() -> None:
        try:
            _fit_scheduler(h)  # (the worker's own HiGHS scheduler)
            entered.append(True)
            started.release()
            box.append(_fitted_run(h))
        except BaseException as exc:  # pragma: no cover - HiGHS raised
            failure.append(exc)
        finally:
            ended.append(True)
            done.release()

    # (a lock, not Thread.join: a KeyboardInterrupt inside join can leave the thread
    # reported as finished while it still runs)
    worker = _worker
    if worker is None or not worker.thread.is_alive():
        worker = _worker = _Worker()
    worker.put(target)
    held = collector.held()
    validating = deferred.due()
    failed: deferred.DeferredFailed | None = None
    presses = 0
    while True:
        try:
            if held or validating:
                # the collection hetopt.solve held back, and the validation of an
                # instance it deferred (hetopt.deferred), run beside HiGHS once the worker
                # is inside the run (which releases the GIL): a collection holds the GIL,
                # so run as the job was handed over it kept HiGHS from starting (12-16 ms
                # before the sample LP at 20,000 x 8, measured)
                if not entered:
                    started.acquire(timeout=0.05)
                    if not entered and not ended:  # (ended first: it raised before)
                        continue
                if held:
                    held = False
                    collector.resume()
                if validating:
                    validating = False  # (a Ctrl-C during it: it stays due)
                    try:
                        deferred.run_due()
                    except deferred.DeferredFailed as exc:
                        failed = exc  # the input is invalid: stop HiGHS, then say so
                        if hooks is not None:
                            hooks.cancel = True
                        _arm(h)
            if not ended:
                done.acquire(timeout=0.05)
            if ended:
                break
        except KeyboardInterrupt:
            presses += 1
            _STOP.set()
            _arm_running()
            log.warning("interrupted: stopping HiGHS (press Ctrl-C again to abandon it)")
            if presses >= _MAX_INTERRUPTS:
                # the run is left behind in its worker: that worker ends after it
                _worker = None
                worker.put(None)
                raise
    if failed is not None:
        if hooks is not None:
            hooks.cancel = False
        raise failed
    if failure:
        raise failure[0]
    return box[0]


_executor = threading.local()
"""``threads``: the thread count of the calling thread's HiGHS scheduler, as
:func:`_fit_scheduler` last set it up (absent: this thread has none that hetopt made)."""


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity, else the machine's count)."""
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _threads_option(threads: int | None) -> int:
    """The ``threads`` option value for ``threads`` (``None``: 0, HiGHS decides). More
    threads than the cores available are capped (HiGHS aborts the process when it cannot
    create them)."""
    want = int(threads) if threads is not None else 0
    cores = available_cores()
    if want > cores:
        log.warning("threads=%d capped at the %d cores available", want, cores)
        want = cores
    return want


def _fit_scheduler(h: Any) -> None:
    """Make the calling thread's HiGHS scheduler fit ``h``'s ``threads`` option; call it
    on the thread about to run ``h``.

    HiGHS keeps one task scheduler *per thread* (a ``thread_local`` executor, created
    with the ``threads`` of the first run on that thread) and refuses a run whose
    ``threads`` differs from it (``kError``: "global scheduler has already been
    initialized"); ``resetGlobalScheduler`` disposes of the calling thread's scheduler
    only. So a thread whose count changes resets its own scheduler before the run, and
    no other thread's runs are affected: the main thread's small LPs stay on the main
    thread (:data:`DIRECT_MAX_NONZEROS`) and the worker keeps its thread. A change of
    count is recorded per thread: two pool threads with different counts do not reset
    each other's. A thread's first run resets too (a no-op without a scheduler): one the
    program's own HiGHS runs made there, with a count hetopt cannot read, is replaced;
    a scheduler the program changed later is caught by :func:`_fitted_run`. A program
    that runs highspy itself with an explicit ``threads`` on a thread where hetopt ran
    with another count resets the scheduler first, as HiGHS requires."""
    got = h.getOptionValue("threads")
    want = int(got[1] if isinstance(got, tuple) else got)
    if getattr(_executor, "threads", None) != want:
        highspy.Highs.resetGlobalScheduler(True)  # (static: the calling thread's)
        _executor.threads = want


def _fitted_run(h: Any) -> Any:
    """``h.run()`` on a thread :func:`_fit_scheduler` prepared; once more after a reset of
    the thread's scheduler when HiGHS refused to start (``kError``, model status not
    set): the program changed the thread's scheduler behind hetopt's record (its own
    highspy runs with another ``threads``, or a reset), and the solve is not lost to it."""
    status = h.run()
    if status == highspy.HighsStatus.kError and h.getModelStatus() == _MS.kNotset:
        highspy.Highs.resetGlobalScheduler(True)
        status = h.run()
    return status


def _constraint_named(model: pyo.ConcreteModel, message: str) -> Any:
    """The constraint a Pyomo ``InfeasibleConstraintException`` message names."""
    import re

    found = re.search(r"constraint, '(.+)'", message)
    if not found:
        return None
    return model.find_component(found.group(1))


def _rel_gap(objective: float, bound: float) -> float | None:
    if not (math.isfinite(objective) and math.isfinite(bound)):
        return None
    denom = max(abs(objective), 1e-9)
    return abs(objective - bound) / denom


def _check(status: Any, name: str) -> None:
    if status != highspy.HighsStatus.kOk:
        raise OptionsError(f"HiGHS rejected option {name!r}")


def _set(h: Any, name: str, value: Any) -> None:
    """Set a HiGHS option, failing loudly on an unknown name or a rejected value."""
    status = h.setOptionValue(name, value)
    if status != highspy.HighsStatus.kOk and isinstance(value, int) and not isinstance(value, bool):
        status = h.setOptionValue(name, float(value))
    if status != highspy.HighsStatus.kOk:
        raise OptionsError(
            f"HiGHS rejected option {name}={value!r} (unknown name or invalid value)"
        )


def solve_pyomo(
    model: pyo.ConcreteModel,
    options: SolveOptions | None = None,
    default_lp_method: str = "auto",
) -> tuple[HighsModel, RawSolution, dict[str, float]]:
    """Compile, transfer and solve a Pyomo model; return the model, solution and timings."""
    t0 = time.perf_counter()
    compiled = compile_model(model)
    t1 = time.perf_counter()
    hm = HighsModel(compiled)
    raw = hm.solve(options, default_lp_method)
    timings = {"compile_s": t1 - t0, "pass_s": hm.transfer_s, "solve_s": raw.solve_s}
    timings["transfer_s"] = timings["compile_s"] + timings["pass_s"]
    return hm, raw, timings
