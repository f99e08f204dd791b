"""The makespan-energy Pareto front by the epsilon-constraint method.

One model is compiled once and kept in a persistent HiGHS object; each step changes
the bounds of ``makespan`` and ``energy`` and the two objective coefficients:

1. ``C* = min makespan`` (the left end of the front).
2. ``E* = min energy``, then ``min makespan s.t. energy <= E*``: the right end.
3. From the last point ``(C, E)``: ``min energy s.t. makespan <= C - delta``, then
   ``min makespan s.t. energy <=`` that energy; repeat until the makespan reaches ``C*``.

With whole-number durations every makespan of a semi-active schedule is a whole number,
so ``delta = 1`` enumerates every non-dominated point (up to ``pareto_points``).
Otherwise ``delta = (C_right - C*) / (pareto_points - 1)``: each point is Pareto-optimal
but points between two steps may be skipped.
"""

from __future__ import annotations

import logging
import math
import time
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ...highs import HighsModel, RawSolution, compile_model
from ...options import SolveOptions
from ...result import Result
from ...status import Status
from ..base import UsageError
from . import formulations as F
from .data import MulticoreInstance
from .heuristics import Schedule
from .solve import _options_for, _plan_info, make_plan, schedule_from_solution, tables_of

if TYPE_CHECKING:
    from . import MulticoreKind

log = logging.getLogger(__name__)

_REL = 1e-7


def non_dominated(points: list[tuple[float, float]], tol: float = 1e-6) -> list[int]:
    """Indices of the points no other point dominates (ties: the first one is kept)."""
    keep = []
    for i, (m1, e1) in enumerate(points):
        dominated = False
        for j, (m2, e2) in enumerate(points):
            if i == j:
                continue
            weakly = m2 <= m1 + tol and e2 <= e1 + tol
            strictly = m2 < m1 - tol or e2 < e1 - tol
            if weakly and (strictly or j < i):
                dominated = True
                break
        if not dominated:
            keep.append(i)
    return keep


def solve_pareto(
    kind: MulticoreKind,
    instance: MulticoreInstance,
    options: SolveOptions,
    formulation: str,
    heuristic: Schedule,
    symmetry: bool,
    pareto_points: int,
) -> Result:
    """The makespan-energy front (see the module docstring)."""
    if not isinstance(pareto_points, int) or pareto_points < 2:
        raise UsageError(f"pareto_points must be a whole number >= 2, got {pareto_points!r}")
    arr = instance.arrays
    t0 = time.perf_counter()
    plan = make_plan(arr, "pareto", formulation, heuristic, symmetry)
    m = F.build(arr, plan)
    t1 = time.perf_counter()
    cm = compile_model(m)
    hm = HighsModel(cm)
    t2 = time.perf_counter()
    j_mk, j_en = cm.column(m.makespan), cm.column(m.energy)
    mk_lo, mk_hi = float(cm.col_lower[j_mk]), float(cm.col_upper[j_mk])
    en_hi = float(cm.col_upper[j_en])
    deadline = None if options.time_limit_s is None else t0 + options.time_limit_s
    solve_s = 0.0
    statuses: list[Status] = []
    timed_out = False

    def run(which: str, mk_ub: float, en_ub: float, start: np.ndarray | None) -> RawSolution | None:
        nonlocal solve_s, timed_out
        opts = options
        if deadline is not None:
            left = deadline - time.perf_counter()
            if left <= 0:
                timed_out = True
                return None
            opts = options.replace(time_limit_s=left)
        if which == "makespan":
            opts = _options_for(
                F.Plan(**{**plan.__dict__, "integer_makespan": arr.integer_durations}), opts
            )
        elif "mip_abs_gap" not in opts.highs_options:
            # HiGHS keeps options between runs: undo the makespan runs' whole-second gap
            opts = opts.replace(highs_options={**opts.highs_options, "mip_abs_gap": 1e-6})
        hm.set_col_bounds(m.makespan, mk_lo, max(mk_ub, mk_lo))
        hm.set_col_bounds(m.energy, 0.0, en_ub if math.isfinite(en_ub) else None)
        costs = np.array([1.0, 0.0]) if which == "makespan" else np.array([0.0, 1.0])
        hm.set_objective_coefficients(np.array([j_mk, j_en]), costs)
        if start is not None:
            hm.set_start(start)
        raw = hm.solve(opts)
        solve_s += raw.solve_s
        statuses.append(raw.status)
        if raw.status in (Status.FEASIBLE, Status.NO_SOLUTION):
            timed_out = True  # a limit was hit: the front is not proven
        return raw

    x0 = F.start_vector(m, cm, arr, heuristic)
    points: list[tuple[float, float, Schedule]] = []
    termination = "every point solved to optimality"
    first = run("makespan", mk_hi, en_hi, x0)
    if first is None or not first.status.has_solution:
        return _empty(kind, instance, first, plan, heuristic, t0, t1, t2, solve_s)
    first_sched = schedule_from_solution(m, cm, first, arr)
    c_star = first_sched.makespan

    def point(mk_ub: float) -> tuple[float, float, Schedule] | None:
        """min energy s.t. makespan <= mk_ub, then min makespan at that energy."""
        raw = run("energy", mk_ub / plan.t_ref, en_hi, None)
        if raw is None or not raw.status.has_solution:
            return None
        e = float(raw.objective or 0.0)
        e_ub = min(e * (1 + _REL) + 1e-9, en_hi)
        raw2 = run("makespan", mk_ub / plan.t_ref, e_ub, raw.x)
        best = raw2 if raw2 is not None and raw2.status.has_solution else raw
        sched = schedule_from_solution(m, cm, best, arr)
        return sched.makespan, arr.energy(sched.core, sched.makespan), sched

    p = point(mk_hi * plan.t_ref)
    if p is not None:
        points.append(p)
    step = 1.0
    if p is not None and not arr.integer_durations:
        step = max((p[0] - c_star) / (pareto_points - 1), 1e-6 * max(c_star, 1e-9))
    while p is not None and len(points) < pareto_points and not timed_out:
        c_last = points[-1][0]
        if c_last <= c_star * (1 + 1e-9) + 1e-9:
            break
        eps = max(c_last - step, c_star)
        if arr.integer_durations:
            eps = c_last - 1 + 1e-6
        p = point(eps)
        if p is not None:
            if p[0] >= c_last - 1e-9:  # no progress (numerics): stop
                break
            points.append(p)
    if not points:  # out of time after the first solve: its schedule is all there is
        points.append((c_star, arr.energy(first_sched.core, c_star), first_sched))
    if timed_out:
        termination = "time limit: the front may be incomplete or not proven optimal"
    elif len(points) >= pareto_points and points[-1][0] > c_star * (1 + 1e-9) + 1e-9:
        termination = f"stopped at pareto_points={pareto_points}; the front continues"
    keep = non_dominated([(mk, en) for mk, en, _ in points])
    kept = sorted((points[i] for i in keep), key=lambda q: q[0])
    front = pd.DataFrame(
        {
            "point": np.arange(len(kept)),
            "makespan_s": [q[0] for q in kept],
            "energy_j": [q[1] for q in kept],
        }
    )
    parts = []
    for k, (_, _, sched) in enumerate(kept):
        df = tables_of(arr, sched)["schedule"]
        df.insert(0, "point", k)
        parts.append(df)
    schedule = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    all_optimal = not timed_out and all(s in (Status.OPTIMAL, Status.INFEASIBLE) for s in statuses)
    status = Status.OPTIMAL if all_optimal and kept else Status.FEASIBLE
    info: dict[str, Any] = _plan_info(arr, plan, heuristic)
    info.update({"points": len(kept), "solves": len(statuses), "min_makespan_s": c_star})
    t3 = time.perf_counter()
    result = Result(
        kind=kind.name,
        objective="pareto",
        status=status,
        termination=termination,
        tables={"pareto": front, "schedule": schedule},
        info=info,
        timings={"build_s": t1 - t0, "transfer_s": t2 - t1, "solve_s": solve_s, "load_s": 0.0},
        runtime_s=t3 - t0,
    )
    from dataclasses import replace

    return replace(result, verification=kind.verify(instance, result))


def _empty(
    kind: MulticoreKind,
    instance: MulticoreInstance,
    raw: RawSolution | None,
    plan: F.Plan,
    heuristic: Schedule,
    t0: float,
    t1: float,
    t2: float,
    solve_s: float,
) -> Result:
    if raw is None:
        status, termination = Status.NO_SOLUTION, "time limit before the first solve"
    else:
        status, termination = raw.status, raw.termination
    return Result(
        kind=kind.name,
        objective="pareto",
        status=status,
        termination=termination,
        info=_plan_info(instance.arrays, plan, heuristic),
        timings={"build_s": t1 - t0, "transfer_s": t2 - t1, "solve_s": solve_s, "load_s": 0.0},
        runtime_s=time.perf_counter() - t0,
    )
