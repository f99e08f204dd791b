"""The one max-min LP builder of the ``gpu_cluster`` kind (see ``models/gpu_cluster.md``).

Every LP of the form "give each row (a job, or a group of identical jobs) time on GPU
types so that the smallest scaled value ``z`` is as large as possible" is built here by
:func:`build` from a :class:`MaxMinLP` (plain data):

* Gavel's max-min fairness and the makespan LP
  (:func:`~hetopt.kinds.gpu_cluster.formulations.build_max_min_fairness`,
  :func:`~hetopt.kinds.gpu_cluster.formulations.build_makespan`), also per symmetry group
  (water-filling levels);
* the space-sharing LP (:func:`~hetopt.kinds.gpu_cluster.colocation.build_colocation_model`:
  a second block of pair columns, its link rows and ``self_total`` columns);
* the sub-problems of a decomposition and its repair LP (:class:`MaxMinProblem`: an
  explicit normalisation, a sub-cluster's capacity, GPUs used per unit of ``z``), solved
  by :func:`solve_max_min` or kept live by :class:`PersistentMaxMin` (trace replay).

The model::

    max  z
    s.t. c_time[r]:      sum_{k in row r} x[k] <= 1
         c_capacity[t]:  sum_{k on type t} usage[k] * x[k] + z_usage[t] / kappa * z <= capacity[t]
         (extra rows, e.g. space sharing's c_link, c_self_total, c_self)
         c_fair[r]:      sum_{k in row r} row_scale[r] * rate[k] * coefficient_scale * x[k] - z >= 0
         0 <= x[k] <= 1 (0 where the job cannot get its GPUs), 0 <= z <= z_max * kappa

(``c_progress`` and ``t_ref`` instead of ``c_fair`` and ``kappa`` for makespan.)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ...contract import Built
from ...options import SolveOptions
from ...status import Status

# Pyomo is imported by the functions that build Pyomo models: ``compile_lp`` hands HiGHS
# arrays, so a solve that goes that way never imports it.
if TYPE_CHECKING:
    import pyomo.environ as pyo

    from ...highs import CompiledModel
    from ...pipeline import LiveModel
    from ...pyomo_ext import LinearRows
    from ...result import SolverReport
    from .data import ClusterArrays

INF = float("inf")
LP_METHOD = "ipm"
"""Measured faster than dual simplex on these LPs from a cold start
(``benchmarks/bench_gpu_cluster.py``)."""


# ----------------------------------------------------------------------------- data
@dataclass(frozen=True)
class Pairs:
    """The (job, type) pairs with positive throughput, in column order."""

    job: np.ndarray
    type: np.ndarray

    @classmethod
    def of(cls, arr: ClusterArrays) -> Pairs:
        # job-major order: each job's columns are adjacent (np.nonzero's order; from the
        # flat positions, divided: half its time at 20,000 x 8, measured)
        T = arr.thr.shape[1]
        flat = np.flatnonzero(arr.thr > 0).astype(np.int64, copy=False)
        job = flat // T if T else flat.copy()
        return cls(job, flat - job * T)

    def __len__(self) -> int:
        return len(self.job)


@dataclass(frozen=True)
class TimeColumns:
    """A block of time-fraction columns (one Pyomo variable over its own index set).

    Column ``k`` gives row ``row[k]`` time on type ``type[k]``: it counts 1 in
    ``c_time[row]``, ``usage[k]`` GPUs in ``c_capacity[type]`` (0: not counted) and
    ``row_scale[row] * rate[k] * coefficient_scale`` in the row's value. ``open[k]``
    false gives the column upper bound 0 (the job cannot get its GPUs there, but a
    capacity change in a live model may open it).
    """

    var: str
    index: str
    row: np.ndarray
    type: np.ndarray
    rate: np.ndarray
    usage: np.ndarray
    open: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.row)


@dataclass(frozen=True)
class FreeColumns:
    """Columns outside the time and value rows (space sharing's ``self_total``)."""

    var: str
    index: str
    count: int


@dataclass(frozen=True)
class Rows:
    """A row block of a max-min LP, as triplets over the LP's columns (time blocks, then
    free blocks, then ``z``): an LP's extra rows, and every block :func:`build` makes a
    :class:`~hetopt.pyomo_ext.LinearRows` of and :func:`compile_lp` copies to HiGHS."""

    name: str
    rows: np.ndarray
    cols: np.ndarray
    vals: np.ndarray
    num_rows: int
    lower: np.ndarray
    upper: np.ndarray


@dataclass(frozen=True)
class MaxMinLP:
    """Data of one max-min LP (see the module docstring)."""

    name: str
    """The Pyomo model's name."""
    row_set: str
    """Name of the row set (``"JOBS"``, or ``"GROUPS"`` of identical jobs)."""
    num_rows: int
    types: Sequence[str] | int
    """GPU type names (``TYPES``), or their number for a sub-problem."""
    columns: tuple[TimeColumns, ...]
    capacity: np.ndarray
    row_scale: np.ndarray
    scale: float
    """``kappa`` (max-min: keeps ``z`` O(1)) or ``t_ref`` (makespan), a model parameter."""
    scale_name: str = "kappa"
    value_rows: str = "c_fair"
    coefficient_scale: float = 1.0
    """Multiplies every value coefficient (``kappa`` when ``row_scale`` does not hold it)."""
    z_max: float | None = None
    """Upper bound on the objective (``z <= z_max * scale``)."""
    z_usage: np.ndarray | None = None
    """GPUs of each type used per unit of the objective (``z_usage / scale`` per ``z``)."""
    free: tuple[FreeColumns, ...] = ()
    extra_rows: tuple[Rows, ...] = ()


@dataclass(frozen=True)
class MaxMinLayout:
    """What a max-min model's extractor needs: the first column block's pairs and the
    objective's scale."""

    pairs: Pairs
    """Rows x types of the ``alloc`` columns (rows are jobs, or groups)."""
    value_rows: str
    """``"c_fair"`` or ``"c_progress"``."""
    scale: float
    """``kappa`` or ``t_ref``."""
    group_of: np.ndarray | None = None
    """Rows are symmetry groups: each job's group (``None``: rows are jobs)."""


# --------------------------------------------------------------------------- builder
def contention(wanted: float, present: float) -> float:
    """GPUs wanted per GPU present (at least 1): keeps a max-min objective O(1)."""
    return max(1.0, float(wanted) / float(present)) if present > 0 else 1.0


def add_columns(
    m: pyo.ConcreteModel,
    row_set: str,
    num_rows: int,
    types: Sequence[str] | int,
    columns: Sequence[TimeColumns],
    free: Sequence[FreeColumns] = (),
    z_upper: float | None = None,
) -> list[Any]:
    """Sets, the time-fraction variables (upper bound 0 where not ``open``), the free
    variables and ``z``; returns the columns' ``VarData`` (time blocks, then free)."""
    import pyomo.environ as pyo

    setattr(m, row_set, pyo.RangeSet(0, num_rows - 1))
    if isinstance(types, int):
        m.TYPES = pyo.RangeSet(0, types - 1)
    else:
        m.TYPES = pyo.Set(initialize=list(types), ordered=True)
    for block in columns:
        setattr(m, block.index, pyo.RangeSet(0, len(block) - 1))
    for fb in free:
        setattr(m, fb.index, pyo.RangeSet(0, fb.count - 1))
    xs: list[Any] = []
    for block in columns:
        setattr(m, block.var, pyo.Var(getattr(m, block.index), bounds=(0.0, 1.0)))
    for fb in free:
        setattr(m, fb.var, pyo.Var(getattr(m, fb.index), bounds=(0.0, None)))
    m.z = pyo.Var(bounds=(0.0, z_upper))
    for block in columns:
        var = list(getattr(m, block.var).values())
        if block.open is not None:
            for k in np.nonzero(~block.open)[0]:
                var[k].setub(0.0)
        xs.extend(var)
    for fb in free:
        xs.extend(getattr(m, fb.var).values())
    return xs


def _offsets(columns: Sequence[TimeColumns]) -> list[np.ndarray]:
    out, start = [], 0
    for block in columns:
        out.append(start + np.arange(len(block)))
        start += len(block)
    return out


def resource_blocks(
    columns: Sequence[TimeColumns],
    num_rows: int,
    capacity: np.ndarray,
    zcol: int | None = None,
    z_usage: np.ndarray | None = None,
) -> tuple[Rows, Rows]:
    """``c_time`` and ``c_capacity`` (``z_usage`` GPUs per unit of the column ``zcol``)."""
    cols = _offsets(columns)
    # c_time[r]: sum_k x[k] <= 1
    time_rows = Rows(
        "c_time",
        np.concatenate([b.row for b in columns]),
        np.concatenate(cols),
        np.ones(sum(len(b) for b in columns)),
        num_rows,
        np.full(num_rows, -INF),
        np.ones(num_rows),
    )
    # c_capacity[t]: sum_k usage[k] x[k] (+ z_usage[t] z) <= capacity[t]
    T = len(capacity)
    rows = [b.type for b in columns]
    cc = list(cols)
    vals = [b.usage for b in columns]
    if z_usage is not None:
        assert zcol is not None
        rows.append(np.arange(T))
        cc.append(np.full(T, zcol))
        vals.append(z_usage)
    capacity_rows = Rows(
        "c_capacity",
        np.concatenate(rows),
        np.concatenate(cc),
        np.concatenate(vals),
        T,
        np.full(T, -INF),
        capacity,
    )
    return time_rows, capacity_rows


def _linear_rows(block: Rows, x: Sequence[Any]) -> LinearRows:
    from ...pyomo_ext import LinearRows

    return LinearRows.from_coo(
        block.rows, block.cols, block.vals, block.num_rows, block.lower, block.upper, x
    )


def add_resource_rows(
    m: pyo.ConcreteModel,
    columns: Sequence[TimeColumns],
    num_rows: int,
    capacity: np.ndarray,
    x: Sequence[Any],
    z_usage: np.ndarray | None = None,
) -> None:
    """``c_time`` and ``c_capacity`` over ``x`` (``z`` last when ``z_usage`` is given)."""
    for block in resource_blocks(columns, num_rows, capacity, len(x) - 1, z_usage):
        setattr(m, block.name, _linear_rows(block, x))


def num_columns(lp: MaxMinLP) -> int:
    """Columns of ``lp``: its time blocks, its free blocks and ``z`` (last)."""
    return sum(len(b) for b in lp.columns) + sum(fb.count for fb in lp.free) + 1


def row_blocks(lp: MaxMinLP) -> list[Rows]:
    """Every row block of ``lp`` in model order: ``c_time``, ``c_capacity``, the extra
    blocks, the value rows (``c_fair`` or ``c_progress``)."""
    zcol = num_columns(lp) - 1
    z_usage = None if lp.z_usage is None else lp.z_usage / lp.scale
    blocks = [*resource_blocks(lp.columns, lp.num_rows, lp.capacity, zcol, z_usage)]
    for r in lp.extra_rows:
        blocks.append(r)
    # c_fair[r] (c_progress[r]): sum_k row_scale[r] * rate[k] * x[k] - z >= 0
    n = lp.num_rows
    cols = _offsets(lp.columns)
    coef = [lp.row_scale[b.row] * b.rate * lp.coefficient_scale for b in lp.columns]
    blocks.append(
        Rows(
            lp.value_rows,
            np.concatenate([*(b.row for b in lp.columns), np.arange(n)]),
            np.concatenate([*cols, np.full(n, zcol)]),
            np.concatenate([*coef, -np.ones(n)]),
            n,
            np.zeros(n),
            np.full(n, INF),
        )
    )
    return blocks


def z_upper_of(lp: MaxMinLP) -> float | None:
    return None if lp.z_max is None else lp.z_max * lp.scale


def build(lp: MaxMinLP) -> Built:
    """The Pyomo model of ``lp`` and its :class:`MaxMinLayout`."""
    import pyomo.environ as pyo

    m = pyo.ConcreteModel(name=lp.name)
    xs = add_columns(m, lp.row_set, lp.num_rows, lp.types, lp.columns, lp.free, z_upper_of(lp))
    xs = [*xs, m.z]
    blocks = row_blocks(lp)
    for block in blocks[:-1]:
        setattr(m, block.name, _linear_rows(block, xs))
    setattr(m, lp.scale_name, pyo.Param(initialize=lp.scale, mutable=False))
    setattr(m, lp.value_rows, _linear_rows(blocks[-1], xs))
    m.obj = pyo.Objective(expr=m.z, sense=pyo.maximize)
    return Built(m, layout_of(lp))


def layout_of(lp: MaxMinLP, group_of: np.ndarray | None = None) -> MaxMinLayout:
    """The extractor's view of ``lp`` (its first column block's pairs, the scale)."""
    first = lp.columns[0]
    return MaxMinLayout(Pairs(first.row, first.type), lp.value_rows, lp.scale, group_of)


# ------------------------------------------------------------------ without Pyomo
@dataclass(frozen=True)
class ColumnMap:
    """Stands for the Pyomo model where an LP went to HiGHS as arrays (:func:`compile_lp`):
    the HiGHS columns of ``z`` and of the first block (``alloc``)."""

    z: int
    alloc: np.ndarray


def compile_lp(lp: MaxMinLP) -> tuple[CompiledModel, ColumnMap]:
    """Exactly the matrix form ``compile_model(build(lp).model)`` gives (column order,
    rows, coefficients, bounds: the same arrays, bit for bit), from the data without
    building Pyomo components (tests/kinds/gpu_cluster/test_maxmin_arrays.py).

    :func:`~hetopt.highs.compile_model` puts the objective's variable ``z`` first and
    then the row blocks' variables in their order (every block lists them all: time
    blocks, free blocks, ``z``); each block is summed and cleaned of zeros as
    :meth:`~hetopt.pyomo_ext.LinearRows.from_coo` does, then the blocks are stacked into
    one column-wise matrix with sorted indices.
    """
    from ...highs import CompiledModel

    n = num_columns(lp)
    # LP column k (z last) -> HiGHS column: z is 0, the others follow in order
    where = np.empty(n, dtype=np.int64)
    where[: n - 1] = np.arange(1, n)
    where[n - 1] = 0
    blocks = row_blocks(lp)
    A = _stacked_csc(blocks, where, n)
    lows, ups = [], []
    for b in blocks:
        lo, hi = np.asarray(b.lower).astype(float), np.asarray(b.upper).astype(float)
        lows.append(np.where(np.isinf(lo), -INF, lo))
        ups.append(np.where(np.isinf(hi), INF, hi))
    col_lower = np.zeros(n)
    col_upper = np.empty(n)
    z_upper = z_upper_of(lp)
    col_upper[0] = INF if z_upper is None else z_upper
    start = 1
    for block in lp.columns:
        up = np.ones(len(block))
        if block.open is not None:
            up[~block.open] = 0.0
        col_upper[start : start + len(block)] = up
        start += len(block)
    col_upper[start:] = INF  # free blocks: x >= 0
    c = np.zeros(n)
    c[0] = 1.0
    compiled = CompiledModel(
        model=None,
        columns=[],
        rows=[],
        A=A,
        c=c,
        offset=0.0,
        maximize=True,
        col_lower=col_lower,
        col_upper=col_upper,
        row_lower=np.concatenate(lows),
        row_upper=np.concatenate(ups),
        integrality=np.zeros(n, dtype=np.int32),
    )
    return compiled, ColumnMap(0, np.arange(1, 1 + len(lp.columns[0]), dtype=np.int64))


def _stacked_csc(blocks: Sequence[Rows], where: np.ndarray, n: int) -> Any:
    """The blocks stacked into one column-wise matrix over HiGHS's columns (``where``):
    zeros dropped, indices sorted. Without repeated (row, column) entries that matrix
    has one representation, built here with one sort; with them, scipy sums them
    block by block exactly as :meth:`~hetopt.pyomo_ext.LinearRows.from_coo` does."""
    import scipy.sparse as sp

    starts = np.cumsum([0, *(b.num_rows for b in blocks)])
    num_rows = int(starts[-1])
    rows = np.concatenate([b.rows + s for b, s in zip(blocks, starts, strict=False)])
    cols = where[np.concatenate([b.cols for b in blocks])]
    vals = np.concatenate([b.vals for b in blocks]).astype(float)
    key = cols * max(num_rows, 1) + rows
    order = np.argsort(key, kind="stable")
    key = key[order]
    if len(key) > 1 and (key[1:] == key[:-1]).any():
        parts = []
        for b in blocks:
            m = sp.csr_array((b.vals, (b.rows, b.cols)), shape=(b.num_rows, n))
            m.sum_duplicates()
            m.eliminate_zeros()
            data = np.asarray(m.data, dtype=float)
            indices = np.asarray(m.indices, dtype=np.int64)
            indptr = np.asarray(m.indptr, dtype=np.int64)
            parts.append(sp.csr_array((data, where[indices], indptr), shape=(b.num_rows, n)))
        A = sp.vstack(parts, format="csc")
        A.sort_indices()
        return A
    vals = vals[order]
    keep = vals != 0
    cols = cols[order][keep]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols, minlength=n), out=indptr[1:])
    return sp.csc_array((vals[keep], rows[order][keep], indptr), shape=(num_rows, n))


def read_columns(built: Built, solution: Any) -> tuple[float, np.ndarray]:
    """``z`` and the ``alloc`` values of a solved max-min LP, whether it went to HiGHS
    as a Pyomo model or as arrays (:class:`ColumnMap`)."""
    m = built.model
    if isinstance(m, ColumnMap):
        x = np.asarray(solution.x)
        return float(x[m.z]), x[m.alloc]
    return solution.value(m.z), solution.values(m.alloc, range(len(built.layout.pairs)))


# ----------------------------------------------------------------- sub-problems
@dataclass(frozen=True)
class MaxMinProblem:
    """Data of one max-min fairness sub-problem (picklable: this travels to workers).

    A sub-problem of a partitioned instance owns only part of the GPUs, but the
    objective must stay the one of the whole cluster: job ``i``'s normalised throughput
    is ``scale_i * sum_t thr[i,t] x[i,t] / (weight_i * p_i)`` with Gavel's
    ``p_i = sum_t thr[i,t] W_t / sum_t W_t`` computed from the WHOLE cluster's counts
    ``W``, so ``norm`` (= the original ``p_i``) is data::

        max z  s.t.  sum_t coef[i,t] x[i,t] >= z (every job),  sum_t x[i,t] <= 1,
                     sum_i scale_i x[i,t] + z_usage[t] z <= capacity[t],
                     0 <= x[i,t] <= allowed[i,t],  z <= z_max,

    with ``coef[i,t] = scale_i thr[i,t] / (weight_i norm_i)`` (``z_usage`` and ``z_max``:
    the repair LP of ``models/decomposition.md``).
    """

    thr: np.ndarray
    """jobs x types steps/s used to allocate (the agnostic view for the baseline)."""
    scale: np.ndarray
    weight: np.ndarray
    norm: np.ndarray
    """The whole cluster's ``p_i`` (never recomputed from ``capacity``)."""
    allowed: np.ndarray
    capacity: np.ndarray
    """GPUs of each type this sub-problem owns (may be fractional)."""
    jobs: np.ndarray
    """Indices of these jobs in the original instance."""
    z_usage: np.ndarray | None = None
    z_max: float | None = None

    @property
    def num_jobs(self) -> int:
        return len(self.jobs)

    def coefficients(self) -> np.ndarray:
        return (self.scale / (self.weight * self.norm))[:, None] * np.where(
            self.allowed, self.thr, 0.0
        )

    def lp(self) -> MaxMinLP:
        """The max-min LP of this sub-problem (``z`` scaled by :func:`kappa_of`)."""
        n, T = self.thr.shape
        job, typ = np.nonzero(self.allowed & (self.thr > 0))
        kappa = kappa_of(self)
        block = TimeColumns("alloc", "PAIRS", job, typ, self.thr[job, typ], self.scale[job])
        return MaxMinLP(
            name="gpu_cluster_part",
            row_set="JOBS",
            num_rows=n,
            types=T,
            columns=(block,),
            capacity=self.capacity.astype(float),
            row_scale=self.scale / (self.weight * self.norm),
            scale=kappa,
            coefficient_scale=kappa,
            z_max=self.z_max,
            z_usage=self.z_usage,
        )


@dataclass
class MaxMinSolution:
    """Allocation and level of one solved :class:`MaxMinProblem`."""

    X: np.ndarray
    """jobs x types time fractions (rows in ``problem.jobs`` order)."""
    z: float
    status: Status
    termination: str
    timings: dict[str, float] = field(default_factory=dict)
    report: SolverReport | None = None
    """The HiGHS runs of the solve (added to a decomposition's report)."""


def kappa_of(problem: MaxMinProblem) -> float:
    """Keeps ``z`` O(1): GPUs wanted per GPU owned (as the kind's contention)."""
    return contention(problem.scale.sum(), problem.capacity.sum())


def build_max_min(problem: MaxMinProblem) -> Built:
    """The model of ``problem`` (:func:`build` of :meth:`MaxMinProblem.lp`)."""
    return build(problem.lp())


def _read(
    live: LiveModel, x: np.ndarray, n: int, T: int, cols: np.ndarray | None = None
) -> np.ndarray:
    pairs: Pairs = live.layout.pairs
    if cols is None:
        cols = live.compiled.columns_of(live.model.alloc, range(len(pairs)))
    vals = np.zeros(len(pairs))
    ok = cols >= 0
    vals[ok] = x[cols[ok]]
    X = np.zeros((n, T))
    X[pairs.job, pairs.type] = np.clip(vals, 0.0, 1.0)
    X[X < 1e-10] = 0.0
    return X


def _session(options: SolveOptions | None) -> Any:
    from ...pipeline import Session
    from . import KIND

    return Session(KIND, options or SolveOptions(threads=1))


def solve_max_min(problem: MaxMinProblem, options: SolveOptions | None = None) -> MaxMinSolution:
    """Build and solve one sub-problem (what a worker runs; use ``threads=1`` there).

    The LP goes to HiGHS as arrays (:func:`compile_lp`: the compiled
    :func:`build_max_min` model, bit for bit)."""
    from ...highs import HighsModel

    session = _session(options)
    n, T = problem.thr.shape
    with session.timer("build_s"):
        lp = problem.lp()
    with session.timer("transfer_s"):
        compiled, columns = compile_lp(lp)
        hm = HighsModel(compiled)
    live = session.adopt(Built(columns, layout_of(lp)), hm)
    view = live.solve(session.options, LP_METHOD)
    raw = view.raw
    timings = {k: session.timings[k] for k in ("build_s", "transfer_s", "solve_s")}
    if not raw.status.has_solution or raw.x is None:
        return MaxMinSolution(
            np.zeros((n, T)), 0.0, raw.status, raw.termination, timings, session.report()
        )
    t0 = time.perf_counter()
    X = _read(live, raw.x, n, T, columns.alloc)
    z = float(raw.x[columns.z]) / lp.scale
    timings["load_s"] = time.perf_counter() - t0
    return MaxMinSolution(X, z, raw.status, raw.termination, timings, session.report())


class PersistentMaxMin:
    """One max-min LP over a fixed job universe, kept live in HiGHS.

    Jobs are switched on and off with :meth:`set_active` (an inactive job's columns get
    upper bound 0 and its fairness row is relaxed), so a scheduler that sees arrivals and
    completions re-solves from the previous basis instead of rebuilding. The
    normalisation ``norm`` and ``kappa`` do not depend on the active set, so the LP of
    the active jobs is exactly Gavel's LP of those jobs.
    """

    def __init__(self, problem: MaxMinProblem, options: SolveOptions | None = None):
        self.problem = problem
        self.session = _session(options)
        self.options = self.session.options
        t0 = time.perf_counter()
        with self.session.timer("build_s"):
            built = build_max_min(problem)
        self.live = self.session.open(built)
        self.setup_s = time.perf_counter() - t0
        self.model = built.model
        m, cm = self.model, self.live.compiled
        job = built.layout.pairs.job
        self._job = job
        self._cols = cm.columns_of(m.alloc, range(len(job))).astype(np.int32)
        hm = self.live.highs_model
        self._fair_rows = np.array(
            [hm.row(m.c_fair[i]) for i in range(problem.num_jobs)], dtype=np.int32
        )
        self.active = np.ones(problem.num_jobs, dtype=bool)

    def set_active(self, active: np.ndarray) -> None:
        """Make exactly the jobs with ``active[i]`` take part in the next solve."""
        active = np.asarray(active, dtype=bool)
        changed = np.nonzero(active != self.active)[0]
        if len(changed) == 0:
            return
        h = self.live.highs_model.highs
        rows = self._fair_rows[changed]
        lo = np.where(active[changed], 0.0, -np.inf)
        h.changeRowsBounds(len(rows), rows, lo, np.full(len(rows), np.inf))
        pick = np.isin(self._job, changed)
        cols = self._cols[pick]
        ok = cols >= 0
        ub = active[self._job[pick]].astype(float)
        h.changeColsBounds(int(ok.sum()), cols[ok], np.zeros(int(ok.sum())), ub[ok])
        self.active = active.copy()

    def solve(self) -> MaxMinSolution:
        """Re-solve (warm from the previous basis after the first call)."""
        n, T = self.problem.thr.shape
        view = self.live.solve(self.options, LP_METHOD, "resolve")
        raw = view.raw
        timings: dict[str, Any] = {"solve_s": raw.solve_s}
        if not raw.status.has_solution or raw.x is None:
            return MaxMinSolution(np.zeros((n, T)), 0.0, raw.status, raw.termination, timings)
        X = _read(self.live, raw.x, n, T, self._cols)  # columns cached: one lookup
        X[~self.active] = 0.0
        z = view.value(self.model.z) / self.live.layout.scale
        return MaxMinSolution(X, z, raw.status, raw.termination, timings)
