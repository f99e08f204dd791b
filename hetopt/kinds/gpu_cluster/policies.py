"""The multi-LP ``gpu_cluster`` policies, as :class:`~hetopt.contract.RunMethod` s.

Water-filling (leximin max-min fairness), finish-time fairness (bisection on the
ratio), total throughput and throughput per dollar with SLOs. Every policy builds its
Pyomo model once (``policy_models.py`` / ``formulations.py``), opens it as one live
HiGHS model on the :class:`~hetopt.pipeline.Session` and changes bounds / coefficients
between LP solves; the pipeline builds and verifies the result. ``build`` is the model
``hetopt export`` writes (the first LP). See ``models/gpu_cluster_*.md`` for the
mathematics.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyomo.environ as pyo

from ...contract import Built, Outcome, RunMethodBase
from ...errors import UsageError
from ...highs import RawSolution
from ...options import SolveOptions
from ...status import Status
from .._shared.export import rescale_objective
from . import formulations as F
from . import policy_models as PM
from . import verify as V
from .data import ClusterArrays, GpuClusterInstance
from .inputs import costs, entity_weights, slo_need
from .methods import require_steps

if TYPE_CHECKING:
    from ...pipeline import LiveModel, Session
    from . import GpuClusterParams

log = logging.getLogger(__name__)

LEVEL_TOL = 1e-6
"""Relative tolerance of water-filling: a job counts as stuck at a level when no optimum
gives it more than ``(1 + LEVEL_TOL)`` times the level's value."""
DUAL_CERTIFICATES = True
"""Freeze jobs whose row dual proves they are stuck (set False to check every candidate
with the extra LP instead; both are exact, the duals save LP solves)."""
PRIMAL = 4
WARM_SIMPLEX = True
"""Solve water-filling levels after the first by warm-started primal simplex."""
CAP_CERTIFICATES = True
"""Freeze jobs at their caps ahead of the LP that proves it (set False to solve one LP
per level; both are exact, the caps save LP solves where levels are caps)."""
CAP_MIN_ROWS = 64
"""Freeze ahead only in LPs of at least this many rows (jobs or symmetry groups): below
it an LP costs about a millisecond and the loop solves one LP per level."""
CAP_LOOKAHEAD = 16
"""At most this many jobs frozen ahead at their caps per level LP (doubling from 1 while
the guesses hold: a wrong guess costs one LP, a large batch many simplex pivots)."""
FTF_TOL = 1e-6
"""Relative tolerance of the finish-time-fairness bisection on the ratio."""


# ------------------------------------------------------------------- shared pieces


def allocation_throughputs(arr: ClusterArrays, agnostic: bool) -> np.ndarray:
    """The throughputs used to allocate (true ones, or the agnostic view)."""
    return F.agnostic_throughputs(arr) if agnostic else arr.thr


def _x_matrix(arr: ClusterArrays, pairs: F.Pairs, xvals: np.ndarray) -> np.ndarray:
    x = np.where(np.abs(xvals) < 1e-10, 0.0, xvals)
    x = np.clip(x, 0.0, None)
    X = np.zeros((arr.num_jobs, len(arr.types)))
    X[pairs.job, pairs.type] = x
    return X


def _tables(
    arr: ClusterArrays, pairs: F.Pairs, X: np.ndarray, jobs_extra: Mapping[str, Any]
) -> dict[str, pd.DataFrame]:
    allocation = pd.DataFrame(
        {
            "job": [arr.job_ids[i] for i in pairs.job],
            "worker_type": [arr.types[t] for t in pairs.type],
            "fraction": X[pairs.job, pairs.type],
        }
    )
    jobs = pd.DataFrame(
        {
            "job": arr.job_ids,
            "time_share": X.sum(axis=1),
            "throughput": V.effective_throughput(arr, X),
            **jobs_extra,
        }
    )
    return {"allocation": allocation, "jobs": jobs}


def _no_solution(status: Status, termination: str, info: dict[str, Any]) -> Outcome:
    return Outcome(None, {}, info, status, termination, None, None)


def _open(session: Session, build: Any) -> LiveModel:
    """Build (timed as ``build_s``) and open one live HiGHS model."""
    with session.timer("build_s"):
        built = build()
    return session.open(built)


def _ipm_no_crossover(options: SolveOptions) -> SolveOptions:
    hopts = {"run_crossover": "off", **dict(options.highs_options)}
    method = options.lp_method if options.lp_method != "auto" else "ipm"
    return options.replace(lp_method=method, highs_options=hopts)


# --------------------------------------------------------------------- water-filling


class WaterFilling(RunMethodBase):
    """Leximin (hierarchical) max-min fairness over Gavel's normalised values.

    Level ``k`` maximises the smallest value ``z`` of the jobs not yet frozen (frozen
    jobs keep at least their level's value). A job is frozen when it is at ``z`` in
    *every* optimum of that level's LP. The interior-point solution without crossover
    lies in the relative interior of the optimal face, so the candidates are the free
    jobs at ``z`` there; a candidate whose row dual is positive is stuck by LP duality
    (complementary slackness holds for every optimum). Any candidate without such a
    certificate is checked with one more LP (maximise the candidates' total value with
    every free job kept at ``>= z``): if the total equals ``|C| * z`` none can move,
    otherwise those that moved are released. Each level freezes at least one job, so
    the loop ends after at most ``N`` levels; no MILP, no big-M. ``build`` is the first
    level's LP over every job (the solve groups identical jobs).

    Caps (where levels are single jobs, e.g. all-distinct weights in a roomy cluster):
    no job's value exceeds its *cap* ``U_i``, the most it reaches alone
    (:func:`value_caps`). When a level's jobs sit at their caps, the next few free jobs
    of smallest cap are frozen at their caps *before* the LP (:func:`freeze_ahead`).
    If the LP then lifts every other free job above ``(1 + LEVEL_TOL) U`` of a frozen
    one, that job's level is proven: its point has every free job at ``>= min(U_j, t)``,
    so the next level LP's optimum is ``U_(1)`` (reachable, and no more since ``v <=
    U``), only jobs at that cap are stuck, and so on up to ``t``. The LP is then the
    next level's LP itself. Jobs it does not lift (or an infeasible LP) are released by
    bounds (:func:`release_ahead`) and the LP solved again. At most
    :data:`CAP_LOOKAHEAD` jobs per LP, doubling from 1 while the guesses hold; LPs of
    fewer than :data:`CAP_MIN_ROWS` rows solve one LP per level.
    """

    def build(self, instance: GpuClusterInstance, params: GpuClusterParams) -> Built:
        arr = instance.arrays
        thr = allocation_throughputs(arr, params.agnostic)
        return F.build_max_min_fairness(arr, thr, entity_weights(instance))

    def export_objective(
        self, instance: GpuClusterInstance, params: GpuClusterParams, built: Built
    ) -> None:
        """The first level, in true units (``z / kappa``): its optimum is the smallest
        value, hetopt's ``objective_value``; the later levels (each freezing jobs and
        raising the others) are not exported."""
        from .export import check, max_min_objective

        check(instance, "max_min_fairness_water_filling", params)
        log.info("water-filling solves one LP per level; the exported model is its first level")
        max_min_objective(built.model, built.layout.scale)

    def run(self, session: Session, inst: GpuClusterInstance, params: GpuClusterParams) -> Outcome:
        return _water_filling(session, inst, params.agnostic)


def _water_filling(session: Session, inst: GpuClusterInstance, agnostic: bool) -> Outcome:
    options = session.options
    full = inst.arrays
    thr_full = allocation_throughputs(full, agnostic)
    w_full = entity_weights(inst)
    # interchangeable jobs (same scale, weight, throughputs): the leximin value vector is
    # unique on a convex set, so identical jobs get identical values; solve one row per group
    key = np.hstack([full.scale[:, None], w_full[:, None], thr_full, full.allowed])
    _, reps, group_of, mult = np.unique(
        key, axis=0, return_index=True, return_inverse=True, return_counts=True
    )
    group_of = group_of.ravel()
    arr = full.subset(reps)
    thr, w, mult = thr_full[reps], w_full[reps], mult.astype(float)
    live = _open(session, lambda: F.build_max_min_fairness(arr, thr, w, mult))
    m, cm, hm = live.model, live.compiled, live.highs_model
    n = arr.num_jobs
    pairs: F.Pairs = live.layout.pairs
    K = len(pairs)
    kappa = live.layout.scale
    acols = cm.columns_of(m.alloc, range(K))
    zcol = cm.column(m.z)
    frows = np.fromiter((cm.row_index[id(r)][0] for r in m.c_fair.values()), dtype=np.int64)
    coef = F.max_min_coefficients(arr, thr, w)[pairs.job, pairs.type] * kappa
    h = hm.highs
    lp_opts = _ipm_no_crossover(options)
    ncol = cm.num_col
    base_cost = np.zeros(ncol)
    base_cost[zcol] = 1.0

    free = np.ones(n, dtype=bool)
    level_of = np.full(n, -1)
    level_values: list[float] = []
    lps = 0
    check_lps = 0
    dual_certified = 0
    x_best: np.ndarray | None = None
    status, termination = Status.OPTIMAL, "Optimal"
    cold_resolves = 0
    guess_caps = CAP_CERTIFICATES and n >= CAP_MIN_ROWS
    caps = np.zeros(0)  # each row's largest value alone (computed when first needed)
    ahead: list[Ahead] = []  # jobs frozen at their caps, not yet proven
    lookahead = 1
    at_caps = 0

    def record_level(idx: np.ndarray, value: float) -> None:
        if not level_values or value > level_values[-1] * (1 + LEVEL_TOL):
            level_values.append(value)
        level_of[idx] = len(level_values) - 1

    def solve_lp(
        opts: SolveOptions, algo: str, stage: str, may_be_infeasible: bool = False
    ) -> RawSolution:
        """One LP of the loop. One that ends without a verified optimum (not at a limit)
        is solved again, the same LP from scratch (no basis; interior point then with
        crossover), logged and counted in ``cold_resolves``. With jobs frozen ahead at
        their caps (``may_be_infeasible``) an infeasible LP is an answer: a guess was
        wrong."""
        nonlocal cold_resolves
        raw = live.solve(session.remaining(opts), algo, stage).raw
        limited = bool(raw.info.get("interrupted")) or "limit" in raw.termination.lower()
        if may_be_infeasible and raw.status == Status.INFEASIBLE:
            return raw
        if raw.status != Status.OPTIMAL and not limited:
            # every level LP is feasible (the last solution still is) and bounded: any
            # other end is numerical trouble (an old basis, an imprecise interior point)
            log.warning(
                "water-filling: a %s LP (%s) ended %s (%s); solving the same LP again from scratch",
                stage,
                algo,
                raw.status.value,
                raw.termination,
            )
            h.clearSolver()
            cold_resolves += 1
            if algo == "ipm":  # a vertex is as exact here: uncertified jobs get check LPs
                opts = opts.replace(
                    highs_options={**dict(opts.highs_options), "run_crossover": "on"}
                )
            raw = live.solve(session.remaining(opts), algo, stage + "_cold").raw
        return raw

    def job_values(x: np.ndarray) -> np.ndarray:
        return np.bincount(pairs.job, coef * x[acols], minlength=n)

    # level 1 by interior point without crossover (its solution is central: one LP usually
    # freezes every stuck job); later levels by primal simplex warm-started from the previous
    # basis, freezing only jobs whose vertex dual certifies them (exact, often fewer per LP)
    simplex_opts = options.replace(
        lp_method="simplex",
        highs_options={"simplex_strategy": PRIMAL, **dict(options.highs_options)},
    )
    use_simplex = False
    while free.any():
        opts_now = simplex_opts if use_simplex else lp_opts
        algo = "simplex" if use_simplex else "ipm"
        raw = solve_lp(opts_now, algo, "level", may_be_infeasible=bool(ahead))
        lps += 1
        if ahead:
            # the jobs frozen ahead at their caps are exactly the next levels when the
            # LP lifts every other free job above them (see WaterFilling); those below
            # its optimum are proven either way, the others are released and the LP
            # solved again without them
            z_ahead = -math.inf
            if raw.status == Status.OPTIMAL and raw.x is not None:
                z_ahead = float(raw.x[zcol])
            elif raw.status != Status.INFEASIBLE:
                status, termination = _failed(raw, x_best)
                break
            proven = [a for a in ahead if a.cap * (1 + LEVEL_TOL) < z_ahead]
            for a in proven:  # (ascending caps: the levels in order)
                record_level(a.rows, a.cap / kappa)
                at_caps += len(a.rows)
            wrong = [a for a in ahead if not a.cap * (1 + LEVEL_TOL) < z_ahead]
            ahead = []
            if wrong:
                release_ahead(h, wrong)
                for a in wrong:
                    free[a.rows] = True
                lookahead = max(1, len(proven))
                continue
            lookahead = min(2 * lookahead, CAP_LOOKAHEAD)
        if raw.status != Status.OPTIMAL or raw.x is None:
            status, termination = _failed(raw, x_best)
            break
        x = raw.x
        z = float(x[zcol])
        v = job_values(x)
        tol = LEVEL_TOL * max(abs(z), 1e-9)
        cand = free & (v <= z + tol)
        if not cand.any():  # numerical safety: the minimum job is always stuck
            cand = free & (v <= v[free].min() + tol)
        certified = np.zeros(n, dtype=bool)
        if raw.row_dual is not None and DUAL_CERTIFICATES:
            y = np.abs(raw.row_dual[frows])
            thresh = 1e-6 if use_simplex else 1e-3 / max(int(free.sum()), 1)
            certified = cand & (y > thresh)
        x_best = x
        if use_simplex and certified.any():
            cand = certified  # a vertex is not central: freeze only what duals prove
        if (cand & ~certified).any():
            # one LP: can the uncertified candidates rise above z while all free jobs stay >= z?
            h.changeColBounds(int(zcol), z * (1 - LEVEL_TOL / 10), math.inf)
            while True:
                test = cand & ~certified
                cost = np.zeros(ncol)
                np.add.at(cost, acols, coef * test[pairs.job])
                hm.set_objective_coefficients(np.arange(ncol), cost)
                rc = solve_lp(opts_now, algo, "check")
                check_lps += 1
                if rc.status != Status.OPTIMAL or rc.x is None:
                    status, termination = _failed(rc, x_best)
                    break
                vc = job_values(rc.x)
                x_best = rc.x
                moved = test & (vc > z + tol)
                if not moved.any():
                    break
                cand &= ~moved
            hm.set_objective_coefficients(np.arange(ncol), base_cost)
            h.changeColBounds(int(zcol), 0.0, math.inf)
            if not status.has_solution or status != Status.OPTIMAL:
                break
            if not cand.any():
                cand = certified.copy()
            if not cand.any():
                cand = free & (v <= v[free].min() + tol)
        dual_certified += int(certified.sum())
        idx = np.nonzero(cand)[0]
        freeze_rows(h, frows[idx], int(zcol), z * (1 - LEVEL_TOL / 10))
        record_level(idx, z / kappa)
        free &= ~cand
        use_simplex = WARM_SIMPLEX
        if guess_caps and free.any() and not len(caps):
            # an upper bound on each row's value in every LP of the loop
            upper = _alloc_upper(cm.col_upper[acols], arr, pairs, mult)
            caps = value_caps(coef, pairs.job, upper, n)
        if guess_caps and free.any() and (caps[idx] <= z * (1 + LEVEL_TOL)).all():
            # this level's jobs are at their caps: guess that the next levels are too
            # (never every free job: the LP keeps a free row, so z stays bounded)
            ahead = freeze_ahead(h, frows, zcol, caps, free, lookahead)
            for a in ahead:
                free[a.rows] = False
        else:
            lookahead = 1

    info: dict[str, Any] = {
        "agnostic": bool(agnostic),
        "levels": len(level_values),
        "level_lps": lps,
        "lp_solves": lps + check_lps + cold_resolves,
        "check_lps": check_lps,
        "cold_resolves": cold_resolves,
        "groups_frozen_by_duals": dual_certified,
        "groups_frozen_at_caps": at_caps,
        "level_tolerance": LEVEL_TOL,
        "entity_weights": any(j.entity is not None for j in inst.jobs),
        "lp_method": "ipm (no crossover), then warm primal simplex" if WARM_SIMPLEX else "ipm",
    }
    if x_best is None:
        return _no_solution(status, termination, info)
    X = _x_matrix(arr, pairs, x_best[acols])[group_of]
    level_of = level_of[group_of]
    arr, w = full, w_full
    pairs = F.Pairs.of(full)
    p = arr.proportional_throughput()
    values = arr.scale * V.effective_throughput(arr, X) / (w * p)
    value = float(values.min())
    info["symmetry_groups"] = len(reps)
    info["level_values_first"] = [float(v) for v in level_values[:10]]
    if not status.has_solution:
        return _no_solution(status, termination, info)
    bound = gap = None
    if status == Status.OPTIMAL and not agnostic and level_values:
        bound = level_values[0]
        gap = max(0.0, (bound - value) / max(abs(bound), 1e-12))
    tables = _tables(
        arr, pairs, X, {"normalized_throughput": values, "effective_weight": w, "level": level_of}
    )
    return Outcome(value, tables, info, status, termination, bound, gap)


def freeze_rows(h: Any, rows: np.ndarray, zcol: int, floor: float) -> None:
    """Turn the value rows ``rows`` (``v_i - z >= 0``) into ``v_i >= floor``, keeping the
    live HiGHS basis nonsingular.

    Setting ``z``'s coefficient in those rows to 0 (the obvious edit) changes the basis
    matrix: when ``z`` is basic it is often singular afterwards, and HiGHS then swaps in
    slacks and restarts primal simplex in phase 1 (measured: ~5x the iterations at every
    water-filling level). Instead one new free column ``d`` (cost 0, coefficient ``+1``
    in ``rows``) and one new row ``z - d >= floor`` are appended: ``v_i >= z - d >=
    floor``, and any ``x`` with ``v_i >= floor`` fits (``d = z - floor``), so the rows
    mean exactly ``v_i >= floor``. An appended nonbasic column and an appended row with
    a basic slack leave the basis nonsingular, and the current solution (``d = 0``,
    ``z`` at the level just solved, so ``z >= floor``) stays feasible: the next solve
    continues in phase 2.
    """
    d = int(h.getNumCol())
    k = len(rows)
    h.addCol(0.0, -math.inf, math.inf, k, np.asarray(rows, dtype=np.int32), np.ones(k))
    h.addRow(floor, math.inf, 2, np.array([zcol, d], dtype=np.int32), np.array([1.0, -1.0]))


def _alloc_upper(
    col_upper: np.ndarray, arr: ClusterArrays, pairs: F.Pairs, mult: np.ndarray
) -> np.ndarray:
    """Each ``alloc`` column's upper bound, tightened by its type's capacity alone
    (``scale * mult * x <= workers``)."""
    usage = arr.scale[pairs.job] * mult[pairs.job]
    room = arr.workers[pairs.type].astype(float) / np.where(usage > 0, usage, 1.0)
    return np.minimum(col_upper, np.where(usage > 0, room, math.inf))


def value_caps(coef: np.ndarray, row: np.ndarray, upper: np.ndarray, n: int) -> np.ndarray:
    """The largest value each row can reach on its own: ``max sum_k coef[k] x[k]`` over
    its columns with ``sum_k x[k] <= 1`` (``c_time``) and ``0 <= x[k] <= upper[k]``, a
    fractional knapsack (best coefficient first). A relaxation of every water-filling LP,
    so no row's value exceeds its cap in any of them."""
    order = np.lexsort((-coef, row))
    r, c, u = row[order], coef[order], np.clip(upper[order], 0.0, None)
    first = np.searchsorted(r, r)  # each column's position within its row
    pos = np.arange(len(r)) - first
    used = np.zeros(n)  # time given so far, per row
    cap = np.zeros(n)
    for p in range(int(pos.max()) + 1 if len(pos) else 0):
        at = pos == p
        take = np.minimum(u[at], np.clip(1.0 - used[r[at]], 0.0, None))
        used[r[at]] += take
        cap[r[at]] += c[at] * take
    return cap


@dataclasses.dataclass(frozen=True)
class Ahead:
    """Rows frozen at their (common) cap before an LP proves it: the appended column
    ``col`` and row ``row`` of :func:`freeze_rows`'s form."""

    rows: np.ndarray
    cap: float
    col: int
    row: int


def freeze_ahead(
    h: Any, frows: np.ndarray, zcol: int, caps: np.ndarray, free: np.ndarray, count: int
) -> list[Ahead]:
    """Freeze the ``count`` free rows of smallest cap (and the rest of the last one's
    ties; never all of them) at their caps, in :func:`freeze_rows`'s form: one column
    and one row per distinct cap, the floor ``cap * (1 - LEVEL_TOL / 10)`` as a level's.
    Ascending caps."""
    ids = np.nonzero(free)[0]
    count = min(count, len(ids) - 1)
    if count <= 0:
        return []
    ids = ids[np.argsort(caps[ids], kind="stable")]
    # a tie split would leave a row the LP cannot lift above the cap: take them all
    count = min(int(np.searchsorted(caps[ids], caps[ids[count - 1]], side="right")), len(ids) - 1)
    ids = ids[:count]
    cut = np.nonzero(np.diff(caps[ids]))[0] + 1
    groups = np.split(ids, cut)
    d0, r0, k = int(h.getNumCol()), int(h.getNumRow()), len(groups)
    index = np.concatenate([frows[g] for g in groups]).astype(np.int32)
    starts = np.cumsum([0, *(len(g) for g in groups[:-1])]).astype(np.int32)
    h.addCols(k, np.zeros(k), np.full(k, -math.inf), np.full(k, math.inf), len(index),
              starts, index, np.ones(len(index)))  # fmt: skip
    floors = np.array([caps[g[0]] * (1 - LEVEL_TOL / 10) for g in groups])
    ri = np.empty(2 * k, dtype=np.int32)
    ri[0::2], ri[1::2] = zcol, d0 + np.arange(k)
    rv = np.tile([1.0, -1.0], k)
    h.addRows(k, floors, np.full(k, math.inf), 2 * k, 2 * np.arange(k, dtype=np.int32), ri, rv)
    return [Ahead(g, float(caps[g[0]]), d0 + j, r0 + j) for j, g in enumerate(groups)]


def release_ahead(h: Any, wrong: list[Ahead]) -> None:
    """Undo :func:`freeze_ahead` for ``wrong``: their columns fixed at 0, their rows
    free, so the rows read ``v_i - z >= 0`` again (bounds only: the basis stays)."""
    k = len(wrong)
    cols = np.array([a.col for a in wrong], dtype=np.int32)
    rows = np.array([a.row for a in wrong], dtype=np.int32)
    h.changeColsBounds(k, cols, np.zeros(k), np.zeros(k))
    h.changeRowsBounds(k, rows, np.full(k, -math.inf), np.full(k, math.inf))


def _failed(raw: RawSolution, x_best: np.ndarray | None) -> tuple[Status, str]:
    if x_best is None and raw.status == Status.FEASIBLE:
        # an interrupted first level leaves no allocation to report
        return Status.NO_SOLUTION, f"{raw.termination} (stopped before the first level)"
    if x_best is not None and raw.status in (Status.FEASIBLE, Status.NO_SOLUTION):
        return Status.FEASIBLE, f"{raw.termination} (stopped before the last level)"
    if x_best is not None and raw.status == Status.OPTIMAL:
        return Status.FEASIBLE, raw.termination
    return raw.status if raw.status != Status.OPTIMAL else Status.ERROR, raw.termination


# ------------------------------------------------------------- finish-time fairness


def ftf_ratio(
    arr: ClusterArrays, X: np.ndarray, elapsed: np.ndarray, iso_thr: np.ndarray
) -> np.ndarray:
    """``(elapsed + steps / thr(X)) / (elapsed + steps / iso_thr)`` per job (inf if idle)."""
    thr = V.effective_throughput(arr, X)
    with np.errstate(divide="ignore"):
        t_alloc = np.where(thr > 0, elapsed + arr.steps / np.where(thr > 0, thr, 1), np.inf)
    t_iso = elapsed + arr.steps / iso_thr
    return t_alloc / t_iso


class FinishTimeFairness(RunMethodBase):
    """Themis-style finish-time fairness, exactly to a relative tolerance :data:`FTF_TOL`.

    ``rho_i(X) = (elapsed_i + steps_i / thr_i(X)) / (elapsed_i + steps_i / iso_i)``;
    minimise ``max_i rho_i``. For a fixed ``rho`` the condition ``rho_i(X) <= rho`` is
    linear (``thr_i(X) >= steps_i / (rho * T_iso_i - elapsed_i)``), so the optimum is
    found by bisection on ``rho`` over feasibility LPs in one persistent HiGHS model
    (only row bounds change; each re-solve is warm). ``rho = 1`` is always feasible (the
    isolated allocation); after each feasible LP the upper end drops to the ratio the
    allocation actually achieves. ``build`` is the feasibility LP at ``rho = 1``.
    """

    def build(self, instance: GpuClusterInstance, params: GpuClusterParams) -> Built:
        require_steps(instance, "finish_time_fairness")
        arr = instance.arrays
        return PM.build_finish_time_fairness(arr, allocation_throughputs(arr, params.agnostic))

    def export_objective(
        self, instance: GpuClusterInstance, params: GpuClusterParams, built: Built
    ) -> None:
        """Refused: no one model has the ratio as its objective."""
        from .export import check

        check(instance, "finish_time_fairness", params)
        raise UsageError(
            "finish_time_fairness solves one feasibility LP per bisection step on the "
            "ratio (no single model has it as objective); `hetopt export` cannot write it"
        )

    def run(self, session: Session, inst: GpuClusterInstance, params: GpuClusterParams) -> Outcome:
        return _finish_time_fairness(session, inst, params.agnostic)


def _finish_time_fairness(session: Session, inst: GpuClusterInstance, agnostic: bool) -> Outcome:
    require_steps(inst, "finish_time_fairness")
    arr = inst.arrays
    thr = allocation_throughputs(arr, agnostic)
    elapsed = np.array([j.time_elapsed_s or 0.0 for j in inst.jobs])
    iso = PM.isolated_throughput(arr, thr)
    t_iso = elapsed + arr.steps / iso
    best = PM.best_throughput(arr, thr)
    live = _open(session, lambda: PM.build_finish_time_fairness(arr, thr))
    m, cm, hm = live.model, live.compiled, live.highs_model
    pairs: F.Pairs = live.layout.pairs
    acols = cm.columns_of(m.alloc, range(len(pairs)))
    rows = np.fromiter((cm.row_index[id(r)][0] for r in m.c_finish.values()), dtype=np.int32)
    h = hm.highs
    n = arr.num_jobs

    def set_rho(rho: float) -> None:
        need = arr.steps / (rho * t_iso - elapsed)  # steps/s each job needs
        h.changeRowsBounds(n, rows, need / best, np.full(n, math.inf))

    # every job alone, full time on its fastest type: nobody can finish sooner
    lo = float(((elapsed + arr.steps / best) / t_iso).max())
    hi = 1.0
    x_best: np.ndarray | None = None
    iterations = 0
    status, termination = Status.OPTIMAL, "Optimal"
    rho = hi
    while True:
        set_rho(rho)
        raw = live.solve(session.remaining(), "simplex", "bisection").raw
        iterations += 1
        if raw.status == Status.OPTIMAL and raw.x is not None:
            X = _x_matrix(arr, pairs, raw.x[acols])
            achieved = float(ftf_ratio(arr, X, elapsed, iso).max())
            x_best = raw.x
            hi = min(rho, achieved) if math.isfinite(achieved) else rho
        elif raw.status == Status.INFEASIBLE:
            lo = max(lo, rho)
        else:
            status, termination = _failed(raw, x_best)
            break
        if hi - lo <= FTF_TOL * hi or (x_best is None and iterations > 1):
            break
        rho = 0.5 * (lo + hi)
    lo = min(lo, hi)  # a numerically infeasible LP just above the optimum cannot cross hi
    info: dict[str, Any] = {
        "agnostic": bool(agnostic),
        "lp_solves": iterations,
        "tolerance": FTF_TOL,
        "ratio_lower_bound": lo,
        "ratio_upper_bound": hi,
        "isolated_share": "W/N GPUs spread over types in proportion to their counts",
    }
    if x_best is None:
        if status == Status.OPTIMAL:
            status, termination = Status.ERROR, "no feasible ratio found (rho = 1 failed)"
        return _no_solution(status, termination, info)
    if not status.has_solution:
        return _no_solution(status, termination, info)
    X = _x_matrix(arr, pairs, x_best[acols])
    true_iso = PM.isolated_throughput(arr, arr.thr)
    ratio = ftf_ratio(arr, X, elapsed, true_iso)
    value = float(ratio.max())
    bound = gap = None
    if not agnostic and status == Status.OPTIMAL:
        bound = lo
        gap = max(0.0, (value - lo) / value)
    thr_eff = V.effective_throughput(arr, X)
    with np.errstate(divide="ignore"):
        finish = np.where(thr_eff > 0, arr.steps / np.where(thr_eff > 0, thr_eff, 1), np.inf)
    tables = _tables(
        arr,
        pairs,
        X,
        {
            "finish_s": finish,
            "isolated_finish_s": arr.steps / true_iso,
            "ftf_ratio": ratio,
        },
    )
    return Outcome(value, tables, info, status, termination, bound, gap)


# ------------------------------------------------------------ throughput and cost


class MaxTotalThroughput(RunMethodBase):
    """Maximise ``sum_i weight_i * thr_i(X) / best_i`` (normalised: 1 = a job running
    full time on its fastest type); one LP."""

    def build(self, instance: GpuClusterInstance, params: GpuClusterParams) -> Built:
        arr = instance.arrays
        return PM.build_max_total_throughput(arr, allocation_throughputs(arr, params.agnostic))

    def export_objective(
        self, instance: GpuClusterInstance, params: GpuClusterParams, built: Built
    ) -> None:
        """The total, not the mean the solved LP maximises."""
        from .export import check

        check(instance, "max_total_throughput", params)
        rescale_objective(built.model, float(instance.arrays.num_jobs))

    def run(self, session: Session, inst: GpuClusterInstance, params: GpuClusterParams) -> Outcome:
        return _max_total_throughput(session, inst, params.agnostic)


def _max_total_throughput(session: Session, inst: GpuClusterInstance, agnostic: bool) -> Outcome:
    arr = inst.arrays
    thr = allocation_throughputs(arr, agnostic)
    live = _open(session, lambda: PM.build_max_total_throughput(arr, thr))
    m, cm = live.model, live.compiled
    pairs: F.Pairs = live.layout.pairs
    raw = live.solve(session.options, "ipm").raw
    info: dict[str, Any] = {"agnostic": bool(agnostic), "normalisation": "thr / best_thr"}
    if not raw.status.has_solution or raw.x is None:
        return _no_solution(raw.status, raw.termination, info)
    X = _x_matrix(arr, pairs, raw.x[cm.columns_of(m.alloc, range(len(pairs)))])
    vals = V.normalized_throughput(arr, X)
    value = float(vals.sum())
    info["raw_total_steps_per_s"] = float(V.effective_throughput(arr, X).sum())
    bound = gap = None
    if raw.status == Status.OPTIMAL and not agnostic:
        bound = float(raw.objective or 0.0) * arr.num_jobs
        gap = abs(bound - value) / max(abs(value), 1e-12)
    tables = _tables(arr, pairs, X, {"normalized_throughput": vals})
    return Outcome(value, tables, info, raw.status, raw.termination, bound, gap)


class MinCost(RunMethodBase):
    """Maximise normalised throughput per dollar, meeting every SLO that can be met.

    One Charnes-Cooper LP (exact for the ratio objective). If the SLOs cannot all be met
    together, a first LP minimises the total shortfall; the jobs short of their SLO are
    listed in ``info["slo_unmet"]`` and the ``jobs`` table (``deadline_met``), and keep
    at least the share of their SLO that LP gave them. ``build`` is the Charnes-Cooper LP
    with every SLO.
    """

    def build(self, instance: GpuClusterInstance, params: GpuClusterParams) -> Built:
        arr = instance.arrays
        thr = allocation_throughputs(arr, params.agnostic)
        return PM.build_min_cost(arr, thr, costs(instance), slo_need(instance))

    def export_objective(
        self, instance: GpuClusterInstance, params: GpuClusterParams, built: Built
    ) -> None:
        """Normalised throughput per $/h (the LP's objective divided by ``c_ref``).

        The exported LP asks for every SLO: when they cannot all be met together, hetopt
        first minimises the shortfall (a stage that is not exported) and the file is
        infeasible."""
        from .export import check

        check(instance, "min_cost", params)
        rescale_objective(built.model, 1.0 / float(pyo.value(built.model.c_ref)))

    def run(self, session: Session, inst: GpuClusterInstance, params: GpuClusterParams) -> Outcome:
        return _min_cost(session, inst, params.agnostic)


def _min_cost(session: Session, inst: GpuClusterInstance, agnostic: bool) -> Outcome:
    arr = inst.arrays
    cost = costs(inst)
    need = slo_need(inst)
    thr = allocation_throughputs(arr, agnostic)
    info: dict[str, Any] = {"agnostic": bool(agnostic), "normalisation": "thr / best_thr"}
    floor = np.ones(arr.num_jobs)
    unmet: list[str] = []
    has_slo = np.isfinite(need)
    if has_slo.any():
        # can every SLO be met together?
        live1 = _open(session, lambda: PM.build_slo_phase1(arr, thr, need))
        r1 = live1.solve(session.remaining(), "ipm", "slo_shortfall").raw
        if r1.status != Status.OPTIMAL or r1.x is None:
            bad_status = r1.status if r1.status != Status.OPTIMAL else Status.ERROR
            return _no_solution(bad_status, r1.termination, info)
        slo_jobs = live1.layout.slo_jobs
        short = r1.values(live1.compiled, live1.model.short, range(len(slo_jobs)))
        bad = short > 1e-6
        floor[slo_jobs] = np.clip(1.0 - short, 0.0, 1.0) * (1 - 1e-7)
        unmet = [arr.job_ids[i] for i in slo_jobs[bad]]
        if unmet:
            log.warning("%d SLO(s) cannot be met together: %s", len(unmet), unmet[:10])
    info["slo_jobs"] = int(has_slo.sum())
    info["slo_unmet"] = unmet
    info["slo_all_met"] = not unmet
    # an unmet SLO keeps the share of its rate the shortfall LP could give it
    need_eff = np.where(floor > 1e-9, need * floor, math.nan)
    live = _open(session, lambda: PM.build_min_cost(arr, thr, cost, need_eff))
    m, cm = live.model, live.compiled
    pairs: F.Pairs = live.layout.pairs
    raw = live.solve(session.remaining(), "ipm").raw
    if not raw.status.has_solution or raw.x is None:
        return _no_solution(raw.status, raw.termination, info)
    s = raw.value(cm, m.s)
    y = raw.x[cm.columns_of(m.y, range(len(pairs)))]
    X = _x_matrix(arr, pairs, y / s)
    value = V.throughput_per_dollar(arr, X, cost)
    info["cost_per_hour"] = float(V.cost_per_hour(arr, X, cost))
    bound = gap = None
    if raw.status == Status.OPTIMAL and not agnostic:
        bound = float(raw.objective or 0.0) / float(pyo.value(m.c_ref))
        gap = abs(bound - value) / max(abs(value), 1e-12)
    thr_eff = V.effective_throughput(arr, X)
    with np.errstate(divide="ignore", invalid="ignore"):
        finish = np.where(thr_eff > 0, arr.steps / np.where(thr_eff > 0, thr_eff, 1), np.inf)
    deadline = np.array([j.deadline_s if j.deadline_s is not None else math.nan for j in inst.jobs])
    met = np.where(has_slo, finish <= deadline * (1 + 1e-6), True)
    tables = _tables(
        arr,
        pairs,
        X,
        {
            "normalized_throughput": V.normalized_throughput(arr, X),
            "finish_s": finish,
            "deadline_s": deadline,
            "deadline_met": met,
        },
    )
    return Outcome(value, tables, info, raw.status, raw.termination, bound, gap)
