"""Pyomo formulation of the ``human_robot`` kind (see ``models/human_robot.md``).

Pure functions of the instance: :func:`build` returns the Pyomo model with its typed
layout (:class:`~hetopt.contract.Built`, :class:`ExactLayout`) and never solves. Times
are scaled by ``time_unit_s`` (the longest duration) so that every value is O(1); big-M
values come from a per-instance horizon (never a constant). Each objective's variables,
rows and ``obj`` come from its entry of :data:`OBJECTIVES`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo

from ...contract import Built
from .data import HumanRobotInstance, TeamArrays
from .pruning import time_unit


@dataclass(frozen=True)
class Plan:
    """Everything the model needs besides the instance: re-planning data and scaling."""

    fixed_agent: dict[int, int]
    """task -> agent of tasks already started (re-planning)."""
    fixed_start: dict[int, float]
    now_s: float | None
    time_unit_s: float
    horizon_s: float
    """Latest finish any schedule needs (see :func:`horizon`)."""
    workload_unit_s: float = 0.0
    """Seconds per unit of ``max_human_workload`` (0: ``time_unit_s``; see
    :func:`make_plan`)."""


@dataclass(frozen=True)
class ExactLayout:
    """What the exact MILP tells its extractor (:attr:`hetopt.contract.Built.layout`)."""

    objective: str
    plan: Plan
    objective_scale: float
    """Seconds (or weighted seconds) per unit of ``m.obj`` (:func:`objective_scale`)."""
    loose: bool
    """Built for the deletion filter (big-M from the horizon only)."""


def horizon(
    arr: TeamArrays,
    fixed_agent: Mapping[int, int] | None = None,
    fixed_start: Mapping[int, float] | None = None,
    now_s: float | None = None,
) -> float:
    """A per-instance horizon: if a schedule exists, one exists that ends by it.

    The latest release (or fixed start, or ``now_s``) plus, per task, the longest travel
    plus the largest of its longest duration and its outgoing start-to-start arcs
    (minimum lags, and maximum lags read backwards): the RCPSP/max bound
    ``sum_i max(p_i, max_j delta_ij)`` of Bartusch, Moehring and Radermacher (1988),
    extended by travel.
    """
    fixed_agent = fixed_agent or {}
    fixed_start = fixed_start or {}
    dmax = arr.max_duration.copy()
    dmin = arr.min_duration.copy()
    for i, a in fixed_agent.items():
        dmax[i] = dmin[i] = arr.duration[i, a]
    # largest start-to-start arc out of each task: min lags (end of before -> start of
    # after) and max lags read backwards (start of after -> start of before)
    out = dmax.copy()
    if len(arr.prec_before):
        np.maximum.at(out, arr.prec_before, dmax[arr.prec_before] + arr.prec_min)
        has_max = np.isfinite(arr.prec_max)
        np.maximum.at(
            out,
            arr.prec_after[has_max],
            -(dmin[arr.prec_before[has_max]] + arr.prec_max[has_max]),
        )
    max_travel = float(arr.travel.max()) if arr.travel.size else 0.0
    t0 = max(
        float(arr.release.max()),
        float(now_s or 0.0),
        max(fixed_start.values(), default=0.0),
    )
    return t0 + float((out + max_travel).sum())


def make_plan(
    arr: TeamArrays,
    fixed_agent: Mapping[int, int] | None = None,
    fixed_start: Mapping[int, float] | None = None,
    now_s: float | None = None,
) -> Plan:
    unit = time_unit(arr)
    human = arr.duration[:, arr.humans][arr.capable[:, arr.humans]]
    longest_human = float(human.max()) if human.size else 0.0
    workload_unit = unit
    if 0.0 < longest_human < unit * WORKLOAD_UNIT_RATIO:
        workload_unit = longest_human
    return Plan(
        dict(fixed_agent or {}),
        dict(fixed_start or {}),
        now_s,
        unit,
        horizon(arr, fixed_agent, fixed_start, now_s),
        workload_unit,
    )


WORKLOAD_UNIT_RATIO = 1e-3
"""``max_human_workload`` is measured in the time unit (the longest duration) unless every
human duration is shorter than this fraction of it (a robot that needs 1e9 s where the
humans need seconds): then in the longest human duration, so that the objective stays
O(1) and HiGHS's absolute gap tolerance cannot accept an arbitrary assignment."""


def known_order(arr: TeamArrays) -> np.ndarray:
    """``before[i, j]``: a chain of precedences with non-negative minimum lags puts the
    end of ``i`` before the start of ``j`` (so ``i`` precedes ``j`` on any shared agent
    or location)."""
    n = arr.num_tasks
    reach = np.zeros((n, n), dtype=bool)
    ok = arr.prec_min >= 0
    reach[arr.prec_before[ok], arr.prec_after[ok]] = True
    for k in range(n):
        reach |= reach[:, k : k + 1] & reach[k : k + 1, :]
    return reach


def build(
    instance: HumanRobotInstance, objective: str, plan: Plan | None = None, loose: bool = False
) -> Built:
    """The exact MILP for ``objective`` (``makespan``, ``weighted_completion`` or
    ``max_human_workload``, see :data:`OBJECTIVES`) with its :class:`ExactLayout`.

    ``loose=True`` takes big-M values from the horizon alone (not from releases and
    deadlines) and fixes no order from precedences, so that releases, deadlines, lags and
    fixed tasks can be switched off row by row (the deletion filter needs that).
    """
    arr = instance.arrays
    plan = plan or make_plan(arr)
    ids, agents = arr.task_ids, arr.agent_ids
    n = arr.num_tasks
    tau = plan.time_unit_s
    H = plan.horizon_s / tau
    m = pyo.ConcreteModel(name="human_robot")
    m.time_unit_s = pyo.Param(initialize=tau)
    m.horizon = pyo.Param(initialize=H)

    cap = [(ids[i], agents[a]) for i, a in zip(*np.nonzero(arr.capable), strict=True)]
    m.TASKS = pyo.Set(initialize=ids, ordered=True)
    m.AGENTS = pyo.Set(initialize=agents, ordered=True)
    m.CAPABLE = pyo.Set(initialize=cap, dimen=2, ordered=True)
    m.HUMANS = pyo.Set(initialize=[agents[a] for a in np.nonzero(arr.humans)[0]], ordered=True)
    dur = np.where(arr.capable, arr.duration, 0.0) / tau
    pos = {t: i for i, t in enumerate(ids)}
    apos = {a: k for k, a in enumerate(agents)}
    m.duration = pyo.Param(m.CAPABLE, initialize={(t, a): dur[pos[t], apos[a]] for t, a in cap})

    # latest finish and earliest start of every task (scaled), for the big-M values
    ub_finish = np.minimum(
        np.where(np.isfinite(arr.deadline), arr.deadline, np.inf), plan.horizon_s
    )
    lb_start = arr.release.copy()
    if plan.now_s is not None:
        lb_start = np.maximum(lb_start, plan.now_s)
    for i, f in plan.fixed_start.items():
        lb_start[i] = f
    ub_finish = np.maximum(ub_finish, lb_start + arr.min_duration) / tau
    lb_start = lb_start / tau
    m.release = pyo.Param(m.TASKS, initialize={ids[i]: lb_start[i] for i in range(n)})

    # pairs that need an order: a shared capable agent or the same location
    before = known_order(arr) if not loose else np.zeros((n, n), dtype=bool)
    agent_pairs: list[tuple[str, str, str]] = []
    loc_pairs: list[tuple[str, str]] = []
    pairs: list[tuple[str, str]] = []
    big_m: dict[tuple[str, str], float] = {}
    travel: dict[tuple[str, str], float] = {}
    for i in range(n):
        for j in range(i + 1, n):
            same_loc = arr.loc[i] >= 0 and arr.loc[i] == arr.loc[j]
            shared = np.nonzero(arr.capable[i] & arr.capable[j])[0]
            if not same_loc and not len(shared):
                continue
            ti, tj = ids[i], ids[j]
            pairs.append((ti, tj))
            travel[ti, tj] = arr.travel_between(i, j) / tau
            travel[tj, ti] = arr.travel_between(j, i) / tau
            if loose:
                big_m[ti, tj] = H + travel[ti, tj]
                big_m[tj, ti] = H + travel[tj, ti]
            else:
                big_m[ti, tj] = max(0.0, ub_finish[i] + travel[ti, tj] - lb_start[j])
                big_m[tj, ti] = max(0.0, ub_finish[j] + travel[tj, ti] - lb_start[i])
            if same_loc:
                loc_pairs.append((ti, tj))
            else:
                agent_pairs.extend((ti, tj, agents[a]) for a in shared)
    m.PAIRS = pyo.Set(initialize=pairs, dimen=2, ordered=True)
    m.AGENT_PAIRS = pyo.Set(initialize=agent_pairs, dimen=3, ordered=True)
    m.LOCATION_PAIRS = pyo.Set(initialize=loc_pairs, dimen=2, ordered=True)
    m.travel = pyo.Param(list(travel), initialize=travel, within=pyo.Any)
    m.big_m = pyo.Param(list(big_m), initialize=big_m, within=pyo.Any)

    # -- variables
    m.assign = pyo.Var(m.CAPABLE, domain=pyo.Binary)
    m.start = pyo.Var(m.TASKS, bounds=(0.0, H))
    m.finish = pyo.Var(m.TASKS, bounds=(0.0, H))
    m.precedes = pyo.Var(m.PAIRS, domain=pyo.Binary)
    for ti, tj in pairs:
        i, j = pos[ti], pos[tj]
        if before[i, j]:
            m.precedes[ti, tj].setlb(1)
        elif before[j, i]:
            m.precedes[ti, tj].setub(0)

    # -- constraints
    by_task: dict[str, list[str]] = {t: [] for t in ids}
    for t, a in cap:
        by_task[t].append(a)
    m.c_assign = pyo.Constraint(
        m.TASKS, rule=lambda m, t: sum(m.assign[t, a] for a in by_task[t]) == 1
    )
    m.c_finish = pyo.Constraint(
        m.TASKS,
        rule=lambda m, t: (
            m.finish[t] == m.start[t] + sum(m.duration[t, a] * m.assign[t, a] for a in by_task[t])
        ),
    )
    free = [ids[i] for i in range(n) if i not in plan.fixed_start]
    m.c_release = pyo.Constraint(free, rule=lambda m, t: m.start[t] >= m.release[t])
    dl = {ids[i]: arr.deadline[i] / tau for i in range(n) if np.isfinite(arr.deadline[i])}
    m.DEADLINED = pyo.Set(initialize=list(dl), ordered=True)
    m.deadline = pyo.Param(m.DEADLINED, initialize=dl)
    m.c_deadline = pyo.Constraint(m.DEADLINED, rule=lambda m, t: m.finish[t] <= m.deadline[t])

    K = len(arr.prec_before)
    m.PRECEDENCE = pyo.RangeSet(0, K - 1) if K else pyo.Set(initialize=[])
    m.min_lag = pyo.Param(m.PRECEDENCE, initialize={k: arr.prec_min[k] / tau for k in range(K)})
    pb = {k: ids[arr.prec_before[k]] for k in range(K)}
    pa = {k: ids[arr.prec_after[k]] for k in range(K)}
    m.c_min_lag = pyo.Constraint(
        m.PRECEDENCE, rule=lambda m, k: m.start[pa[k]] >= m.finish[pb[k]] + m.min_lag[k]
    )
    maxl = {k: arr.prec_max[k] / tau for k in range(K) if np.isfinite(arr.prec_max[k])}
    m.MAX_LAGGED = pyo.Set(initialize=list(maxl), ordered=True)
    m.max_lag = pyo.Param(m.MAX_LAGGED, initialize=maxl)
    m.c_max_lag = pyo.Constraint(
        m.MAX_LAGGED, rule=lambda m, k: m.start[pa[k]] <= m.finish[pb[k]] + m.max_lag[k]
    )

    def agent_fwd(m: pyo.ConcreteModel, i: str, j: str, a: str) -> object:
        both = 2 - m.assign[i, a] - m.assign[j, a]
        M = m.big_m[i, j]
        return m.start[j] >= m.finish[i] + m.travel[i, j] - M * (1 - m.precedes[i, j]) - M * both

    def agent_bwd(m: pyo.ConcreteModel, i: str, j: str, a: str) -> object:
        both = 2 - m.assign[i, a] - m.assign[j, a]
        M = m.big_m[j, i]
        return m.start[i] >= m.finish[j] + m.travel[j, i] - M * m.precedes[i, j] - M * both

    m.c_agent_fwd = pyo.Constraint(m.AGENT_PAIRS, rule=agent_fwd)
    m.c_agent_bwd = pyo.Constraint(m.AGENT_PAIRS, rule=agent_bwd)
    m.c_location_fwd = pyo.Constraint(
        m.LOCATION_PAIRS,
        rule=lambda m, i, j: m.start[j] >= m.finish[i] - m.big_m[i, j] * (1 - m.precedes[i, j]),
    )
    m.c_location_bwd = pyo.Constraint(
        m.LOCATION_PAIRS,
        rule=lambda m, i, j: m.start[i] >= m.finish[j] - m.big_m[j, i] * m.precedes[i, j],
    )

    fixed_rows = {ids[i]: f / tau for i, f in plan.fixed_start.items()}
    m.FIXED = pyo.Set(initialize=list(fixed_rows), ordered=True)
    m.fixed_start = pyo.Param(m.FIXED, initialize=fixed_rows)
    fixed_agent = {ids[i]: agents[a] for i, a in plan.fixed_agent.items()}
    m.c_fixed_start = pyo.Constraint(m.FIXED, rule=lambda m, t: m.start[t] == m.fixed_start[t])
    m.c_fixed_agent = pyo.Constraint(m.FIXED, rule=lambda m, t: m.assign[t, fixed_agent[t]] == 1)

    # -- objective
    form = OBJECTIVES[objective]
    workload_factor = tau / plan.workload_unit_s if plan.workload_unit_s else 1.0
    form.add(m, _Context(arr, cap, by_task, lb_start, H, loose, workload_factor))
    layout = ExactLayout(objective, plan, objective_scale(instance, objective, plan), loose)
    return Built(m, layout)


@dataclass(frozen=True)
class _Context:
    """What the objective builders need besides the model."""

    arr: TeamArrays
    cap: list[tuple[str, str]]
    by_task: dict[str, list[str]]
    lb_start: np.ndarray
    """Scaled earliest start per task."""
    horizon: float
    """Scaled horizon."""
    loose: bool
    workload_factor: float = 1.0
    """Units of ``max_human_workload`` per time unit (:attr:`Plan.workload_unit_s`)."""


def _add_makespan(m: pyo.ConcreteModel, ctx: _Context) -> None:
    arr, cap, by_task = ctx.arr, ctx.cap, ctx.by_task
    ids = arr.task_ids
    n = arr.num_tasks
    pos = {t: i for i, t in enumerate(ids)}
    m.makespan = pyo.Var(bounds=(0.0, ctx.horizon))
    m.c_makespan = pyo.Constraint(m.TASKS, rule=lambda m, t: m.makespan >= m.finish[t])
    # valid inequalities that tighten the LP bound: no agent and no location can be
    # busy for longer than the makespan
    m.c_agent_load = pyo.Constraint(
        m.AGENTS,
        rule=lambda m, a: (
            m.makespan >= sum(m.duration[t, b] * m.assign[t, b] for t, b in cap if b == a)
        ),
    )
    at_loc = {q: [ids[i] for i in range(n) if arr.loc[i] == q] for q in range(len(arr.locations))}
    m.LOCATIONS = pyo.Set(initialize=arr.locations, ordered=True)
    loc_release = {
        arr.locations[q]: 0.0 if ctx.loose else float(min(ctx.lb_start[pos[t]] for t in ts))
        for q, ts in at_loc.items()
    }
    m.c_location_load = pyo.Constraint(
        m.LOCATIONS,
        rule=lambda m, q: (
            m.makespan
            >= loc_release[q]
            + sum(
                m.duration[t, a] * m.assign[t, a]
                for t in at_loc[arr.locations.index(q)]
                for a in by_task[t]
            )
        ),
    )
    m.obj = pyo.Objective(expr=m.makespan, sense=pyo.minimize)


def _add_weighted_completion(m: pyo.ConcreteModel, ctx: _Context) -> None:
    arr = ctx.arr
    ids = arr.task_ids
    wsum = float(arr.weight.sum())
    m.weight = pyo.Param(
        m.TASKS, initialize={ids[i]: arr.weight[i] / wsum for i in range(arr.num_tasks)}
    )
    m.obj = pyo.Objective(expr=sum(m.weight[t] * m.finish[t] for t in m.TASKS), sense=pyo.minimize)


def _add_max_human_workload(m: pyo.ConcreteModel, ctx: _Context) -> None:
    cap = ctx.cap
    m.max_human_workload = pyo.Var(bounds=(0.0, None))
    hum = set(m.HUMANS)
    k = ctx.workload_factor  # 1 unless the humans' durations are far below the time unit
    m.c_human_workload = pyo.Constraint(
        m.HUMANS,
        rule=lambda m, h: (
            m.max_human_workload
            >= sum(k * m.duration[t, a] * m.assign[t, a] for t, a in cap if a == h)
        ),
    )
    if not hum:
        raise ValueError("objective 'max_human_workload' needs an agent of type 'human'")
    m.obj = pyo.Objective(expr=m.max_human_workload, sense=pyo.minimize)


@dataclass(frozen=True)
class ObjectiveForm:
    """How one objective enters the exact MILP."""

    add: Callable[[pyo.ConcreteModel, _Context], None]
    """Adds the objective's variables, rows and ``m.obj``."""
    variable: str | None
    """The scalar variable that is the objective (``None``: ``obj`` is an expression)."""


OBJECTIVES: dict[str, ObjectiveForm] = {
    "makespan": ObjectiveForm(_add_makespan, "makespan"),
    "weighted_completion": ObjectiveForm(_add_weighted_completion, None),
    "max_human_workload": ObjectiveForm(_add_max_human_workload, "max_human_workload"),
}


def objective_scale(instance: HumanRobotInstance, objective: str, plan: Plan) -> float:
    """Seconds (or weighted seconds) per unit of ``m.obj``."""
    if objective == "weighted_completion":
        return plan.time_unit_s * float(instance.arrays.weight.sum())
    if objective == "max_human_workload" and plan.workload_unit_s:
        return plan.workload_unit_s
    return plan.time_unit_s
