"""Max-min fairness and makespan by column generation (``lp_strategy``).

The max-min LP (:mod:`.maxmin`) has a column per (job, type) pair but, with ``K`` GPU
types and ``N`` jobs, an optimal basis has at most ``2N + K`` basic variables over the
``2N + K`` rows: most jobs use one or two types. So the LP is solved over a few columns
per job and grown only where it pays:

0. no row's value can exceed its best type full time, so ``z <= z_ub = min_i max_k
   coef[i,k]``; when the GPUs let every row reach ``z_ub`` (:func:`bottleneck_fill`, a
   greedy in numpy) that fill is an optimum and no LP is solved (the certificate below
   with zero duals is ``z_ub``). Common where one job's best type is poor: Gavel's
   normalisation then sets ``kappa`` from that job;
   From :data:`PRICE_MIN_ROWS` rows, :func:`_by_prices` comes next: GPU prices from a
   sampled LP aggregate the rows whose cheapest way to ``z`` is clear, a reduced LP
   holds the others, certified by the same bound; when it does not close, step 1;
1. the restricted LP holds, for every row, the ``initial`` pairs with the largest value
   coefficient (its best types); it is passed to HiGHS as arrays (no Pyomo model) and
   solved by interior point without crossover, to a tight tolerance
   (:data:`IPM_TOLERANCE`);
2. with its row duals ``y`` (time ``u_i``, capacity ``w_t``, fairness ``v_i``, clipped
   to their signs) the reduced cost of every pair is, in numpy,
   ``d[i,t] = -(u_i + w_t * usage[i,t] + v_i * coef[i,t])`` (HiGHS: ``c - A^T y``);
3. when the certificate below does not close the gap, the pairs with ``d > tol`` enter
   (the :data:`PER_ROW` best of each row) and HiGHS solves again; after ``max_rounds``
   every remaining pair is added (the monolithic LP).

Certificate (Lagrangian relaxation of every row, box ``0 <= x <= 1``, ``0 <= z <=
z_ub``): for ANY row duals of the right signs (``u, w >= 0``, ``v <= 0``), ::

    z* <= sum_i u_i + sum_t w_t W_t + sum_k max(0, d_k) + z_ub * max(0, 1 + sum_i v_i)

over every pair of the full LP, where ``z_ub = min_i max_k coef[i,k]`` (no row's value
exceeds its best type full time). It needs neither an exact optimum nor a basis of the
restricted LP: interior-point duals give it, and the loop stops when it is within
:data:`GAP_TOL` (relative) of the restricted LP's ``z``. Crossover (a vertex, exact
duals) runs only when the interior-point run does not reach its tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import numpy as np

from ...contract import Built, Outcome
from ...status import Status
from . import formulations as F
from . import maxmin as M

if TYPE_CHECKING:
    from ...highs import CompiledModel
    from ...pipeline import Session
    from . import GpuClusterParams
    from .data import GpuClusterInstance

PRICE_TOL = 1e-9
"""A pair enters when its reduced cost exceeds this (the LP's ``z`` is O(1))."""

INITIAL = 3
"""Pairs per row in the first restricted LP (the row's best types)."""

PER_ROW = 2
"""Pairs that may enter per row and round (multiple pricing: each round is a cold
interior-point solve, so few rounds matter more than few columns)."""

MAX_ROUNDS = 8

GAP_TOL = 2e-10
"""Stop when the certificate is within this of ``z`` (relative; the result's gap must
be at most 1e-9)."""

IPM_TOLERANCE = 1e-10
"""HiGHS's ``ipm_optimality_tolerance`` for the restricted LPs (default 1e-8: its
duals then leave a gap near 1e-8, above what the certificate must show)."""

IPM_OPTIONS = {"solver": "ipm", "run_crossover": "off", "ipm_optimality_tolerance": IPM_TOLERANCE}
CROSSOVER_OPTIONS = {"solver": "ipm", "run_crossover": "on"}

BOTTLENECK_FILL = True
"""Try :func:`bottleneck_fill` before any LP (a test switches it off to exercise the
pricing loop on instances the fill solves)."""

AUTO_MIN_PAIRS = 50_000
"""``lp_strategy="auto"`` generates columns from this many pairs (and more than
:data:`INITIAL` pairs per row on average): measured faster than the monolithic LP at
20,000 jobs x 8 types, slower on small LPs where one interior-point solve is cheap."""

AUTO_FILL_MIN_PAIRS = 1_000
"""Below :data:`AUTO_MIN_PAIRS`, ``lp_strategy="auto"`` tries the bottleneck fill alone
from this many pairs (of the grouped LP) before the monolithic LP (:func:`solve_by_fill`).
Measured (threads=1): where it fills, 3-27 ms against 13-1,800 ms for the LP (Gavel's
makespan at 512-8,192 jobs, 2,000-5,000 jobs x 8 types); where it does not, it costs
0.2-2 ms beside LPs of 7 ms and more (below 1,000 pairs, e.g. Gavel's max-min in 26-155
groups, LPs of 3-7 ms, it is not tried)."""


@dataclass(frozen=True)
class Pricing:
    """Every pair of the full LP, with its coefficients in the three row blocks."""

    row: np.ndarray
    type: np.ndarray
    usage: np.ndarray
    coef: np.ndarray
    """Value-row coefficient (``row_scale * rate * coefficient_scale``)."""

    @classmethod
    def of(cls, lp: M.MaxMinLP) -> Pricing:
        b = lp.columns[0]
        coef = lp.row_scale[b.row] * b.rate * lp.coefficient_scale
        if b.open is None or b.open.all():  # the block's own arrays (no copies: 0.8 ms)
            return cls(b.row, b.type, b.usage, coef)
        ok = b.open
        return cls(b.row[ok], b.type[ok], b.usage[ok], coef[ok])

    def __len__(self) -> int:
        return len(self.row)


def wants_columns(num_pairs: int, num_rows: int) -> bool:
    """``auto``: is the LP large enough, with enough pairs per row, to generate columns?"""
    return num_pairs >= AUTO_MIN_PAIRS and num_pairs > INITIAL * num_rows * 1.5


def initial_pairs(p: Pricing, num_rows: int, per_row: int = INITIAL) -> np.ndarray:
    """Indices of each row's ``per_row`` pairs with the largest value coefficient."""
    order = np.lexsort((-p.coef, p.row))  # by row, best first
    rows = p.row[order]
    start = np.searchsorted(rows, np.arange(num_rows))
    rank = np.arange(len(order)) - start[rows]
    return np.sort(order[rank < per_row])


@dataclass(frozen=True)
class ColumnsLayout:
    """Rows and columns of the restricted LP held in HiGHS: ``z`` is column 0, pair
    columns follow in the order they entered; rows are ``c_time`` (``n``), then
    ``c_capacity`` (``T``), then the value rows (``n``)."""

    num_rows: int
    num_types: int

    @property
    def cap0(self) -> int:
        return self.num_rows

    @property
    def fair0(self) -> int:
        return self.num_rows + self.num_types


def pair_matrix(
    p: Pricing, pick: np.ndarray, lay: ColumnsLayout, first_col: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSC ``(starts, index, values)`` of the pair columns ``pick`` (three entries each;
    a zero GPU usage is kept as an explicit zero)."""
    k = len(pick)
    r = p.row[pick]
    index = np.stack([r, lay.cap0 + p.type[pick], lay.fair0 + r], axis=1).ravel()
    values = np.stack([np.ones(k), p.usage[pick], p.coef[pick]], axis=1).ravel()
    starts = first_col + np.arange(0, 3 * k, 3)
    return starts.astype(np.int32), index.astype(np.int32), values.astype(np.float64)


def restricted_model(
    name: str, p: Pricing, pick: np.ndarray, lay: ColumnsLayout, capacity: np.ndarray,
    z_upper: float,
) -> CompiledModel:  # fmt: skip
    """The restricted LP over the pairs ``pick`` as arrays (``z`` first)."""
    import scipy.sparse as sp

    n, T = lay.num_rows, lay.num_types
    k = len(pick)
    starts, index, values = pair_matrix(p, pick, lay, first_col=n)
    # z: -1 in every value row
    indptr = np.r_[0, starts, n + 3 * k].astype(np.int32)
    indices = np.r_[lay.fair0 + np.arange(n), index].astype(np.int32)
    data = np.r_[-np.ones(n), values]
    A = sp.csc_array((data, indices, indptr), shape=(2 * n + T, k + 1))
    return _pairs_model(name, A, capacity, (0.0, z_upper))


def _pairs_model(
    name: str, A: Any, capacity: np.ndarray, z_bounds: tuple[float, float]
) -> CompiledModel:
    """The LP ``max z`` over ``z`` (column 0, within ``z_bounds``) and pair columns in
    ``[0, 1]``, with ``A``'s rows laid out as the restricted LP's: each row's time
    (``<= 1``), each type's capacity (``<= capacity``), each row's value (``>= 0``)."""
    import pyomo.environ as pyo

    from ...highs import CompiledModel

    T = len(capacity)
    rows, cols = A.shape
    m = (rows - T) // 2
    c = np.zeros(cols)
    c[0] = 1.0
    return CompiledModel(
        model=pyo.ConcreteModel(name=name),
        columns=[None] * cols,
        rows=[None] * rows,
        A=A,
        c=c,
        offset=0.0,
        maximize=True,
        col_lower=np.r_[z_bounds[0], np.zeros(cols - 1)],
        col_upper=np.r_[z_bounds[1], np.ones(cols - 1)],
        row_lower=np.r_[np.full(m + T, -np.inf), np.zeros(m)],
        row_upper=np.r_[np.ones(m), capacity, np.full(m, np.inf)],
        integrality=np.zeros(cols, dtype=np.int32),
    )


def certificate(
    p: Pricing, lay: ColumnsLayout, y: np.ndarray, capacity: np.ndarray, z_upper: float
) -> tuple[float, np.ndarray]:
    """The Lagrangian bound of the module docstring from the row duals ``y`` (clipped to
    their signs), and every pair's reduced cost."""
    n, T = lay.num_rows, lay.num_types
    u = np.maximum(y[:n], 0.0)
    w = np.maximum(y[lay.cap0 : lay.cap0 + T], 0.0)
    v = np.minimum(y[lay.fair0 : lay.fair0 + n], 0.0)
    d = -(u[p.row] + w[p.type] * p.usage + v[p.row] * p.coef)
    dz = 1.0 + float(v.sum())
    bound = float(u.sum() + w @ capacity + np.maximum(d, 0.0).sum()) + z_upper * max(dz, 0.0)
    return bound, d


def z_upper_of(p: Pricing, num_rows: int, z_max: float | None) -> float:
    """``min_i max_k coef[i,k]``: an upper bound on ``z`` (0 when a row has no pair)."""
    best = np.zeros(num_rows)
    np.maximum.at(best, p.row, p.coef)
    ub = float(best.min()) if num_rows else 0.0
    return ub if z_max is None else min(ub, z_max)


def bottleneck_fill(
    p: Pricing, num_rows: int, num_types: int, capacity: np.ndarray, z: float
) -> np.ndarray | None:
    """Time fractions of every pair giving every row the value ``z`` within the
    capacities, or ``None`` when this greedy finds none.

    A row takes its value from types ``t`` with ``coef >= z`` (``z / coef`` of its time
    and ``usage * z / coef`` GPUs of ``t`` per unit of value; so its time stays at most
    1 however it splits). Rows propose to their types from the fewest GPUs up; a type
    takes its proposers (those with the fewest types left first, then those that lose
    most by moving on) while its GPUs last, the one at the boundary in part; the others
    (and that part) move to their next type. With ``z`` the bound :func:`z_upper_of` a
    fill is an optimum (no row's value can exceed its best type full time), certified
    by zero duals.
    """
    n, T = num_rows, num_types
    if n == 0 or z <= 0:
        return None
    gpus = np.full((n, T), np.inf)
    k_ok = np.nonzero(p.coef >= z)[0]
    gpus.reshape(-1)[p.row[k_ok] * T + p.type[k_ok]] = p.usage[k_ok] * z / p.coef[k_ok]
    if _too_few_gpus(gpus, capacity):
        return None
    pair = np.full((n, T), -1, dtype=np.int64)
    pair[p.row[k_ok], p.type[k_ok]] = k_ok
    order = np.argsort(gpus, axis=1, kind="stable")  # each row's types, fewest GPUs first
    ranked = np.take_along_axis(gpus, order, axis=1)
    ranked_next = np.c_[ranked[:, 1:], np.full(n, np.inf)]
    options = np.isfinite(ranked)[:, ::-1].cumsum(axis=1)[:, ::-1]  # from each rank on
    left = np.asarray(capacity, dtype=float) * (1.0 - 1e-12)
    share = np.zeros(len(p))  # fraction of each row's value z from each pair
    rest = np.ones(n)  # fraction of each row's value still to place
    rank = np.zeros(n, dtype=np.int64)
    pending = np.arange(n)
    big = np.finfo(float).max
    while len(pending):
        r = rank[pending]
        unit = ranked[pending, r]
        if not np.isfinite(unit).all():
            return None
        typ = order[pending, r]
        need = rest[pending] * unit
        regret = ranked_next[pending, r] - unit
        regret = np.where(np.isfinite(regret), regret, big)
        by = np.lexsort((-regret, options[pending, r], typ))  # by type, then priority
        rows, typ, need, unit = pending[by], typ[by], need[by], unit[by]
        start = np.searchsorted(typ, np.arange(T))
        used = np.cumsum(need)
        before = used - need - np.r_[0.0, used][start][typ]  # GPUs taken before this row
        room = np.clip(left[typ] - before, 0.0, None)
        got = np.minimum(need, room)  # (whole, a part at the boundary, or nothing)
        frac = np.where(need > 0, got / np.where(need > 0, need, 1.0), 1.0)
        placed = frac * rest[rows]
        np.add.at(share, pair[rows, typ], placed)
        rest[rows] -= placed
        np.subtract.at(left, typ, got)
        left = np.maximum(left, 0.0)
        full = frac >= 1.0
        rest[rows[full]] = 0.0
        pending = np.sort(rows[~full])
        rank[pending] += 1
        if (rank[pending] >= T).any():
            return None
    return share * z / np.where(p.coef > 0, p.coef, 1.0)


def _too_few_gpus(gpus: np.ndarray, capacity: np.ndarray) -> bool:
    """Whether :func:`bottleneck_fill` must fail, seen at once from ``gpus`` (rows x
    types: GPUs per unit of value, ``inf`` where a type cannot give the value): every row
    takes at least its fewest GPUs of one type, whichever types it uses, so when a row has
    no type, or those GPUs exceed all the GPUs, no fill within the capacities exists (the
    greedy's fails after a dozen rounds: 25 ms at 20,000 x 8, measured). ``1e-9``: far
    above the rounding of the greedy's sums, so it never declines a fill the greedy finds."""
    least = F.row_min(gpus)
    return not np.isfinite(least).all() or float(least.sum()) > float(np.sum(capacity)) * (1 + 1e-9)


@dataclass(frozen=True)
class _Setup:
    """What :func:`solve_by_columns` builds before any LP: the (grouped) LP's data, its
    pairs and the bound on ``z``."""

    makespan: bool
    group_of: np.ndarray | None
    lp: M.MaxMinLP
    pricing: Pricing
    lay: ColumnsLayout
    capacity: np.ndarray
    z_ub: float


def _setup(
    session: Session,
    instance: GpuClusterInstance,
    params: GpuClusterParams,
    objective: str,
    groups: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
) -> _Setup:
    from .methods import require_steps

    makespan = objective == "makespan"
    if makespan:
        require_steps(instance)
    arr = instance.arrays
    with session.timer("build_s"):
        group_of: np.ndarray | None = None
        sub, mult = arr, None
        if params.symmetry:
            group_of, reps, mult = groups if groups is not None else F.job_groups(arr, makespan)
            if len(reps) == arr.num_jobs:
                group_of, mult = None, None
            else:
                sub = arr.subset(reps)
        if makespan:
            t_ref = F.makespan_reference(arr, arr.thr)
            lp = F.makespan_lp(sub, None, mult, t_ref)
        else:
            lp = F.max_min_lp(sub, None, None, mult)
        assert lp.z_usage is None and not lp.extra_rows and not lp.free
        pricing = Pricing.of(lp)
        n = sub.num_jobs
        # (the certificate's bound on z; not in the LP, where z at such a bound slows the
        # interior point down)
        z_ub = z_upper_of(pricing, n, None if lp.z_max is None else lp.z_max * lp.scale)
    capacity = np.asarray(lp.capacity, dtype=float)
    return _Setup(makespan, group_of, lp, pricing, ColumnsLayout(n, len(sub.types)), capacity, z_ub)


def _fill_run(session: Session, s: _Setup, info: dict[str, Any]) -> Run | None:
    """:func:`bottleneck_fill` at ``z_ub`` as a finished run (optimal, certified by zero
    duals: the bound is ``z_ub``), or ``None`` when the fill finds none."""
    lay = s.lay
    with session.timer("build_s"):
        filled = bottleneck_fill(s.pricing, lay.num_rows, lay.num_types, s.capacity, s.z_ub)
    if filled is None:
        return None
    bound, _ = certificate(
        s.pricing, lay, np.zeros(2 * lay.num_rows + lay.num_types), s.capacity, s.z_ub
    )
    info.update(bottleneck_fill=True, pricing_rounds=0, columns_generated=0, lp_columns=0)
    return Run(Status.OPTIMAL, "optimal", s.z_ub, filled, bound, True)


def solve_by_columns(
    session: Session,
    instance: GpuClusterInstance,
    params: GpuClusterParams,
    objective: str = "max_min_fairness",
    groups: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> Outcome:
    """The max-min fairness or makespan LP of ``instance`` by column generation (module
    docstring), after the bottleneck fill (:func:`bottleneck_fill`). ``groups``: the
    symmetry groups of ``instance`` (:func:`.formulations.job_groups` for ``objective``)
    when the caller has them (used when ``params.symmetry``)."""
    s = _setup(session, instance, params, objective, groups)
    info: dict[str, Any] = {"lp_strategy": "column_generation"}
    run = _fill_run(session, s, info) if BOTTLENECK_FILL else None
    if run is None:
        z_max = np.inf if s.lp.z_max is None else s.lp.z_max * s.lp.scale
        priced = _by_prices(session, s.pricing, s.lay, s.capacity, s.z_ub, z_max, info)
        run = priced or _generate(session, s.lp, s.pricing, s.lay, s.capacity, s.z_ub, info)
    return _outcome(session, instance, s, run, info)


def solve_by_fill(
    session: Session,
    instance: GpuClusterInstance,
    params: GpuClusterParams,
    objective: str = "max_min_fairness",
    groups: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> Outcome | None:
    """The bottleneck fill alone (``lp_strategy="auto"`` on LPs below
    :data:`AUTO_MIN_PAIRS` pairs, from :data:`AUTO_FILL_MIN_PAIRS`): its certified
    optimum, as :func:`solve_by_columns` returns it, or ``None`` (then the caller solves
    the monolithic LP) when the fill finds none or is switched off."""
    if not BOTTLENECK_FILL:
        return None
    s = _setup(session, instance, params, objective, groups)
    info: dict[str, Any] = {"lp_strategy": "column_generation"}
    run = _fill_run(session, s, info)
    return None if run is None else _outcome(session, instance, s, run, info)


def _outcome(
    session: Session, instance: GpuClusterInstance, s: _Setup, run: Run, info: dict[str, Any]
) -> Outcome:
    """The result of ``run`` (the LP of ``s``): tables, the objective's value and the
    certificate's gap."""
    from .methods import MakespanRead, MaxMinRead, clean_shares, time_share_tables

    arr = instance.arrays
    pricing, group_of = s.pricing, s.group_of
    n, T = s.lay.num_rows, s.lay.num_types
    with session.timer("load_s"):
        info["pair_columns_full"] = len(pricing)
        if group_of is not None:
            info["symmetry_groups"] = n
        if not run.status.has_solution or run.x is None:
            return Outcome(None, {}, info, run.status, run.termination, None, None)
        x = clean_shares(run.x, pricing.row)
        Xr = np.zeros((n, T))
        Xr.reshape(-1)[pricing.row * T + pricing.type] = x
        X = Xr if group_of is None else Xr[group_of]
        allocation, jobs, thr_eff = time_share_tables(arr, X)
        scale = s.lp.scale
        z = run.z
        optimal = run.status == Status.OPTIMAL and run.certified
        reader = MakespanRead() if s.makespan else MaxMinRead()
        value, status, term = reader.read(arr, jobs, thr_eff, z, scale, optimal, info)
        tables = {"allocation": allocation, "jobs": jobs}
        if status is not None:  # makespan: some job cannot progress
            return Outcome(None, tables, info, status, term, None, None)
        if not optimal or run.bound is None or value is None:
            return Outcome(value, tables, info, run.status, run.termination, None, None)
        z_bound = max(run.bound, z)  # a proven upper bound on the LP's z
        # max-min: value z / kappa <= z_bound / kappa; makespan: t_ref / z >= t_ref / z_bound
        proven = scale / z_bound if s.makespan else z_bound / scale
        gap = abs(proven - value) / max(abs(proven), abs(value), 1e-12)
        status = Status.OPTIMAL if gap <= 1e-9 else Status.FEASIBLE
        term = run.termination if status == Status.OPTIMAL else "pricing gap above 1e-9"
        return Outcome(value, tables, info, status, term, proven, gap)


@dataclass(frozen=True)
class Run:
    """How the LP ended: status, ``z``, every pair's time fraction (clipped to [0, 1]),
    the certificate's bound and whether it closed the gap."""

    status: Status
    termination: str
    z: float
    x: np.ndarray | None
    bound: float | None
    certified: bool


def _generate(
    session: Session,
    lp: M.MaxMinLP,
    pricing: Pricing,
    lay: ColumnsLayout,
    capacity: np.ndarray,
    z_ub: float,
    info: dict[str, Any],
) -> Run:
    """The restricted LPs in HiGHS, priced until the certificate closes (module
    docstring); fills ``info``'s counts."""
    from ...highs import HighsModel

    n = lay.num_rows
    with session.timer("build_s"):
        first = initial_pairs(pricing, n, INITIAL)
        z_max = np.inf if lp.z_max is None else lp.z_max * lp.scale
        compiled = restricted_model(lp.name, pricing, first, lay, capacity, z_max)
    with session.timer("transfer_s"):
        hm = HighsModel(compiled)
    live = session.adopt(Built(compiled.model, lay), hm)
    h = hm.highs
    in_lp = np.zeros(len(pricing), dtype=bool)
    in_lp[first] = True
    members = [first]
    cols = [1 + np.arange(len(first), dtype=np.int64)]

    def run(extra: dict[str, Any], stage: str) -> Any:
        opts = session.remaining(session.options)
        opts = opts.replace(highs_options={**extra, **opts.highs_options})
        return live.solve(opts, M.LP_METHOD, stage)

    view = run(IPM_OPTIONS, "restricted")
    rounds, added, bound, certified, crossed = 0, 0, None, False, False
    while True:
        raw = view.raw
        if raw.status != Status.OPTIMAL or raw.row_dual is None or raw.x is None:
            if crossed or raw.status not in (Status.OPTIMAL, Status.ERROR):
                break  # (infeasible, or a limit: FEASIBLE)
            crossed = True  # the interior point fell short of its tolerance: a vertex
            view = run(CROSSOVER_OPTIONS, "crossover")
            continue
        z = float(raw.x[0])
        bound, d = certificate(pricing, lay, raw.row_dual, capacity, z_ub)
        if bound - z <= GAP_TOL * max(abs(z), 1e-12):
            certified = True
            break
        enter = np.nonzero((d > PRICE_TOL) & ~in_lp)[0]
        if len(enter) == 0:  # nothing prices out but the duals are not tight: a vertex
            if crossed:
                break
            crossed = True
            view = run(CROSSOVER_OPTIONS, "crossover")
            continue
        rounds += 1
        if rounds > MAX_ROUNDS:  # the monolithic LP
            enter = np.nonzero(~in_lp)[0]
        else:  # the PER_ROW best entering pairs of each row
            best = np.lexsort((-d[enter], pricing.row[enter]))
            enter = enter[best]
            rows = pricing.row[enter]
            start = np.searchsorted(rows, rows, side="left")
            enter = enter[np.arange(len(enter)) - start < PER_ROW]
        k = len(enter)
        first_col = h.getNumCol()
        starts, index, values = pair_matrix(pricing, enter, lay)
        h.addCols(k, np.zeros(k), np.zeros(k), np.ones(k), 3 * k, starts, index, values)
        cols.append(np.arange(first_col, first_col + k, dtype=np.int64))
        members.append(enter)
        in_lp[enter] = True
        added += k
        view = run(CROSSOVER_OPTIONS if crossed else IPM_OPTIONS, "priced")

    info.update(pricing_rounds=rounds, columns_generated=added, lp_columns=int(in_lp.sum()))
    raw = view.raw
    if not raw.status.has_solution or raw.x is None:
        return Run(raw.status, raw.termination, 0.0, None, None, False)
    pick = np.concatenate(members)
    col = np.concatenate(cols)
    x = np.zeros(len(pricing))
    x[pick] = np.clip(raw.x[col], 0.0, 1.0)
    return Run(raw.status, raw.termination, float(raw.x[0]), x, bound, certified)


# ------------------------------------------------------------ price-directed rows
PRICE_MIN_ROWS = 5_000
"""Rows from which :func:`_by_prices` runs before the restricted LP (below, one
restricted LP is cheap)."""

SAMPLE_ROWS = 4_000
"""Rows of the sample LP that estimates the GPU prices."""

AMBIGUOUS = 0.01
"""A row is kept in the reduced LP when its cheapest way to reach ``z`` at the sample's
prices is within this (relative) of another, or ``z`` within it of where that way ends."""

PRICE_ROUNDS = 4
WAYS_BLOCK = 16_384
"""Candidate ways per block of :meth:`Ways.at` (rows x types x (1 + the rows' types
below ``z``): 128 KB, in cache and in memory malloc reuses; 8,192-65,536 measured
alike, larger blocks page-fault on every fresh array)."""
SAMPLE_OPTIONS = {"solver": "ipm", "run_crossover": "off", "ipm_optimality_tolerance": 1e-6}


@dataclass(frozen=True)
class Dense:
    """The pairs as rows x types arrays (``coef`` 0 and ``pair`` -1 where none)."""

    coef: np.ndarray
    usage: np.ndarray
    has: np.ndarray
    pair: np.ndarray

    @classmethod
    def of(cls, p: Pricing, n: int, T: int) -> Dense:
        at = p.row * T + p.type  # (flat positions, computed once: 3 ms against 6 measured)
        coef, usage = np.zeros(n * T), np.zeros(n * T)
        has = np.zeros(n * T, dtype=bool)
        pair = np.full(n * T, -1, dtype=np.int64)
        coef[at] = p.coef
        usage[at] = p.usage
        has[at] = True
        pair[at] = np.arange(len(p))
        shape = (n, T)
        return cls(
            coef.reshape(shape), usage.reshape(shape), has.reshape(shape), pair.reshape(shape)
        )


@dataclass(frozen=True)
class Ways:
    """Each row's cheapest way to reach the value ``z`` at GPU prices ``w``: types ``a``
    and ``b`` sharing its whole time (``a = -1``: only ``b``, for ``z / coef_b`` of its
    time), its cost and the next cheapest way's."""

    a: np.ndarray
    b: np.ndarray
    cost: np.ndarray
    second: np.ndarray

    @classmethod
    def at(cls, d: Dense, w: np.ndarray, z: float) -> Ways:
        """Every row's ways in order: for each type ``b`` (``coef_b >= z``), ``b`` alone,
        then each ``a`` (``coef_a < z``) with it; the first cheapest wins, ``second`` is
        the next value (as the same values met in that order).

        Rows are taken by how many types ``a`` they have (``q``; most have none or one
        where the capacities bind, so a grid of all ``T x (T + 1)`` candidates a row was
        mostly ``inf``: 7 ms against 13 at 20,000 x 8, measured). A block of rows of one
        ``q`` holds, for each type ``b``, ``b`` alone then the row's ``q`` types ``a`` in
        ascending order: the same candidates in the same order as the full grid, with
        the same values (``inf`` where ``b`` is no way), so the first minimum and the
        next value are the same. Blocks of :data:`WAYS_BLOCK` candidates, rows gathered
        from the dense arrays."""
        n, T = d.coef.shape
        ok_b = d.has & (d.coef >= z)
        ok_a = d.has & (d.coef < z)  # (so a != b)
        q = np.zeros(n, dtype=np.int64)
        for t in range(T):  # (a short row's sum, one column at a time: 4x faster)
            q += ok_a[:, t]
        order = np.argsort(q.astype(np.min_scalar_type(T)), kind="stable")  # (radix sort)
        q_sorted = q[order]
        bounds = [*np.flatnonzero(np.diff(q_sorted, prepend=-1)).tolist(), n]
        # every row's types a (ascending) with their coefficient and price, the rows in
        # that order: q entries a row from a_start[i]
        flat = np.flatnonzero(ok_a[order])
        r = flat // T if T else flat
        a_type = flat - r * T
        pos = order[r] * T + a_type
        a_coef = d.coef.reshape(-1)[pos]
        a_price = w[a_type] * d.usage.reshape(-1)[pos]
        a_start = np.r_[0, np.cumsum(q_sorted)]
        a, b = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        best, second = np.empty(n), np.empty(n)
        for g0, g1 in pairwise(bounds):
            qa = int(q_sorted[g0])
            J = qa + 1  # candidates of a type b: alone (j = 0), or with the (j - 1)-th a
            step = max(1, WAYS_BLOCK // max(T * J, 1))
            cand_order = np.arange(T * J)[:, None]
            for s in range(g0, g1, step):
                e = min(s + step, g1)
                m = e - s
                rows = order[s:e]
                cf, ok = d.coef[rows].T, ok_b[rows].T  # types x rows
                pr = w[:, None] * d.usage[rows].T  # (numpy warns of inf * 0, as before)
                cand = np.empty((T, J, m))  # [b, j, row]
                with np.errstate(divide="ignore", invalid="ignore"):
                    cand[:, 0, :] = np.where(ok, z / cf * pr, np.inf)
                    if qa:
                        ia = slice(a_start[s], a_start[e])
                        ta = a_type[ia].reshape(m, qa).T
                        ca = a_coef[ia].reshape(m, qa).T[None, :, :]
                        pa = a_price[ia].reshape(m, qa).T[None, :, :]
                        # pa + (pb - pa) * (z - ca) / (cb - ca), in place in the candidates
                        val = cand[:, 1:, :]
                        np.subtract(pr[:, None, :], pa, out=val)
                        val *= z - ca
                        val /= cf[:, None, :] - ca
                        val += pa
                        np.copyto(val, np.inf, where=~ok[:, None, :])
                grid = cand.reshape(T * J, m)
                k = _first_min(grid, cand_order)  # (the first of equal values)
                cols = np.arange(m)
                first = grid[k, cols]
                grid[k, cols] = np.inf
                second[rows] = grid.min(axis=0)
                best[rows] = first
                found = np.isfinite(first)
                b[rows] = np.where(found, k // J, -1)
                if qa:
                    j = k % J
                    a[rows] = np.where(found & (j > 0), ta[np.maximum(j - 1, 0), cols], -1)
                else:
                    a[rows] = -1
        return cls(a, b, best, second)

    def ambiguous(self, d: Dense, z: float) -> np.ndarray:
        """Rows whose way is within :data:`AMBIGUOUS` of another, or ends near ``z``."""
        rows = np.arange(len(self.a))
        cb = d.coef[rows, self.b]
        ca = np.where(self.a >= 0, d.coef[rows, np.maximum(self.a, 0)], 0.0)
        near = (cb - z < AMBIGUOUS * z) | ((self.a >= 0) & (z - ca < AMBIGUOUS * z))
        close = self.second - self.cost <= AMBIGUOUS * np.abs(self.cost)
        return close | near | ~np.isfinite(self.cost) | (self.b < 0)


def _first_min(flat: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``flat.argmin(axis=0)`` (the first row of each column's minimum; ``order`` is
    ``arange(rows)[:, None]``) with reductions along the rows: numpy's ``argmin`` over
    the first axis copies the array transposed first (290 us against 80 us a block of
    72 x 1,024, measured). A column holding NaN (where ``argmin`` returns its first NaN)
    takes ``argmin`` itself."""
    low = flat.min(axis=0)
    k = np.where(flat == low, order, len(flat)).min(axis=0)
    if k.max(initial=0) >= len(flat):  # some minimum is NaN (and equals nothing)
        return flat.argmin(axis=0)  # type: ignore[no-any-return]
    return k.astype(np.intp, copy=False)


def _reduced(
    p: Pricing, d: Dense, keep: np.ndarray, capacity: np.ndarray, z_column: np.ndarray,
    z_bounds: tuple[float, float],
) -> tuple[CompiledModel, np.ndarray]:  # fmt: skip
    """The LP over the rows ``keep`` (all their pairs; ``z`` first, with ``z_column``
    GPUs of each type per unit of ``z``) and the pairs of its columns."""
    import scipy.sparse as sp

    m, T = len(keep), len(capacity)
    local = np.full(d.coef.shape[0], -1)
    local[keep] = np.arange(m)
    pk = d.pair[keep].ravel()
    pk = pk[pk >= 0]
    k = len(pk)
    r = local[p.row[pk]]
    # CSC, each column's rows ascending: z (capacity rows, then value rows), then every
    # pair (its time row, its type's capacity row, its value row); no entry twice
    indices = np.concatenate(
        [m + np.arange(T + m), np.stack([r, m + p.type[pk], m + T + r], axis=1).ravel()]
    )
    data = np.concatenate(
        [z_column, -np.ones(m), np.stack([np.ones(k), p.usage[pk], p.coef[pk]], axis=1).ravel()]
    )
    indptr = np.r_[0, T + m + 3 * np.arange(k + 1)]
    A = sp.csc_array((data, indices, indptr), shape=(2 * m + T, k + 1))
    return _pairs_model("gpu_cluster_reduced", A, capacity, z_bounds), pk


def _by_prices(
    session: Session,
    p: Pricing,
    lay: ColumnsLayout,
    capacity: np.ndarray,
    z_ub: float,
    z_max: float,
    info: dict[str, Any],
) -> Run | None:
    """The LP with most rows aggregated, or ``None`` (then the restricted LP runs).

    GPU prices ``w`` from the LP of a random sample of rows (capacities in proportion)
    fix each row's cheapest way to reach ``z`` (:class:`Ways`: one or two types, time
    fractions affine in ``z``); the rows whose way is clear at those prices become
    GPUs per unit of ``z`` in the capacity rows (and bounds on ``z`` where their way
    ends), the ambiguous rows stay as rows. That reduced LP is a restriction of the
    full LP (its solutions are feasible there); its duals, with each aggregated row's
    fairness dual the slope of its way's cost, give the certificate of the module
    docstring over every pair. Rows whose way the new prices contradict join the
    reduced LP until the certificate closes (at most :data:`PRICE_ROUNDS` LPs).
    """
    from ...highs import HighsModel

    n, T = lay.num_rows, lay.num_types
    if n < PRICE_MIN_ROWS:
        return None
    d = Dense.of(p, n, T)

    def solve(compiled: CompiledModel, options: dict[str, Any], stage: str) -> Any:
        with session.timer("transfer_s"):
            hm = HighsModel(compiled)
        live = session.adopt(Built(compiled.model, lay), hm)
        opts = session.remaining(session.options)
        opts = opts.replace(highs_options={**options, **opts.highs_options})
        return live.solve(opts, M.LP_METHOD, stage).raw

    with session.timer("build_s"):
        m = min(n, SAMPLE_ROWS)
        sample = np.sort(np.random.default_rng(0).choice(n, m, replace=False))
        compiled, _ = _reduced(p, d, sample, capacity * m / n, np.zeros(T), (0.0, z_max))
    raw = solve(compiled, SAMPLE_OPTIONS, "sample")
    if raw.status != Status.OPTIMAL or raw.row_dual is None or raw.x is None:
        return None
    with session.timer("build_s"):
        w = np.maximum(raw.row_dual[m : m + T], 0.0)
        z = float(raw.x[0])
        ways = Ways.at(d, w, z)
        keep = np.nonzero(ways.ambiguous(d, z))[0]
    for rounds in range(PRICE_ROUNDS):
        if len(keep) > n // 2:
            return None
        with session.timer("build_s"):
            agg = np.ones(n, dtype=bool)
            agg[keep] = False
            g = np.nonzero(agg)[0]
            ga, gb = ways.a[g], ways.b[g]
            cbg, sbg = d.coef[g, gb], d.usage[g, gb]
            one = ga < 0
            two = ~one
            gaa = np.maximum(ga, 0)
            cag, sag = d.coef[g, gaa], d.usage[g, gaa]
            span = np.where(two, cbg - cag, 1.0)
            fixed, per_z = np.zeros(T), np.zeros(T)
            # one type: x_b = z / c_b; two: x_a = (c_b - z) / span, x_b = (z - c_a) / span
            np.add.at(per_z, gb[one], sbg[one] / cbg[one])
            np.add.at(fixed, gaa[two], sag[two] * cbg[two] / span[two])
            np.add.at(per_z, gaa[two], -sag[two] / span[two])
            np.add.at(fixed, gb[two], -sbg[two] * cag[two] / span[two])
            np.add.at(per_z, gb[two], sbg[two] / span[two])
            z_lo = float(cag[two].max()) if two.any() else 0.0
            z_hi = min(float(cbg.min()) if len(g) else np.inf, z_max)
            if z_lo > z_hi:
                return None
            compiled, pk = _reduced(p, d, keep, capacity - fixed, per_z, (z_lo, z_hi))
        raw = solve(compiled, IPM_OPTIONS, "reduced")
        if raw.status != Status.OPTIMAL or raw.row_dual is None or raw.x is None:
            return None
        with session.timer("build_s"):
            k = len(keep)
            y = raw.row_dual
            z = float(raw.x[0])
            w = np.maximum(y[k : k + T], 0.0)
            lam = np.zeros(n)
            lam[keep] = np.maximum(-y[k + T :], 0.0)
            price_b = w[gb] * sbg
            lam[g] = np.where(one, price_b / cbg, (price_b - w[gaa] * sag) / span)
            gain = np.where(d.has, lam[:, None] * d.coef - w[None, :] * d.usage, -np.inf)
            u = np.maximum(F.row_max(gain), 0.0)
            bound, _ = certificate(p, lay, np.r_[u, w, -lam], capacity, z_ub)
            if bound - z <= GAP_TOL * max(abs(z), 1e-12):
                x = np.zeros(len(p))
                x[pk] = np.clip(raw.x[1:], 0.0, 1.0)
                x[d.pair[g[one], gb[one]]] = np.clip(z / cbg[one], 0.0, 1.0)
                t = np.nonzero(two)[0]
                x[d.pair[g[t], gaa[t]]] = np.clip((cbg[t] - z) / span[t], 0.0, 1.0)
                x[d.pair[g[t], gb[t]]] = np.clip((z - cag[t]) / span[t], 0.0, 1.0)
                info.update(pricing_rounds=rounds, columns_generated=0, lp_columns=len(pk))
                info["reduced_rows"] = k
                return Run(raw.status, raw.termination, z, x, bound, True)
            # aggregated rows whose way these prices contradict join the reduced LP
            own = np.where(one, 0.0, lam[g] * cbg - price_b)
            wrong = u[g] - np.maximum(own, 0.0) > 1e-12 * max(1.0, abs(z))
            ends = (cbg - z <= 1e-9 * max(1.0, z)) | (two & (z - cag <= 1e-9 * max(1.0, z)))
            keep = np.union1d(keep, g[wrong | ends])
    return None
