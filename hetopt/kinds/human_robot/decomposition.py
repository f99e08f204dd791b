"""Allocate-then-sequence decomposition for instances too large for the exact MILP.

1. **Allocate** with a MILP on aggregate workload (``build_allocation``): assign every
   task to a capable agent minimising the largest agent load (for ``max_human_workload``:
   the largest human load, then the largest load). Each task's end is also bounded below
   by its earliest start in the temporal relaxation plus its chosen duration.
2. **Sequence** the allocation by serial list scheduling (tasks in order of earliest start
   in the temporal network of that allocation; each goes into the earliest gap of its
   agent and its location that respects travel, lags, releases and deadlines), then
   left-shift (least solution of the resulting temporal network).
3. **Iterate**: the idle time each agent had in the schedule is added to its load in the
   next allocation MILP, so work moves away from agents that wait a lot. The best
   verified schedule is kept.
4. **Improve**: a reassignment local search, then the sequencing MILP (the exact model
   with the best allocation fixed) re-orders it.

:class:`Decomposition` is the pipeline's ``method="decomposition"`` (a
:class:`~hetopt.contract.RunMethod`): every MILP runs on its
:class:`~hetopt.pipeline.Session` (stages ``allocation`` and ``sequence``), so the
result's timings and solver report cover them; the exact method's MIP start
(:func:`hetopt.kinds.human_robot.exact.heuristic_start`) runs two iterations of the same
loop (stage ``mip_start``).

The allocation MILPs stop at wall-clock limits (``ALLOC_TIME_S``), so on a loaded machine
the schedule found can differ from run to run; the bound stays valid either way.

The reported ``bound`` is a valid lower bound: the first allocation MILP's dual bound
(every schedule's makespan is at least every agent's load), the critical path of the
temporal relaxation and the load of every location, whichever is largest (for
``weighted_completion``: sum of weight x earliest possible end; for
``max_human_workload``: the allocation MILP's dual bound). ``gap`` is measured to it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyomo.environ as pyo

from ...contract import Built, Outcome, RunMethodBase
from ...options import SolveOptions
from ...status import Status
from .._shared.choice import Choice, ReportsChoice
from .data import HumanRobotInstance, TeamArrays
from .params import HumanRobotParams, Setup, setup
from .pruning import reduce_and_solve, time_unit
from .tables import objective_of, schedule_tables, start_order
from .temporal import earliest_schedule, precheck, task_network

if TYPE_CHECKING:
    from ...pipeline import Session

log = logging.getLogger(__name__)

ITERATIONS = 6
ALLOC_TIME_S = (5.0, 2.0)
"""Time limit of the first allocation MILP (whose dual bound is reported) and of the
later ones (the options' time limit caps both)."""
ALLOC_GAP = 0.01
LOCAL_SEARCH_S = 30.0
"""Time cap of the reassignment local search after the iterations."""
LOCAL_SEARCH_MOVES = 600
"""Move evaluations of the local search (the cap that normally binds: reproducible)."""
SEQUENCE_MILP_S = 10.0
SEQUENCE_MILP_MAX_TASKS = 60
"""Time limit and size limit of the final sequencing MILP (best allocation, orders only)."""
TOL = 1e-6
BY_ALLOCATION = frozenset({"max_human_workload"})
"""Objectives whose value the allocation alone fixes: the allocation MILP minimises them
first (then the makespan with that value as a cap); local search and the sequencing
MILP cannot improve them."""


def relaxation_earliest(
    arr: TeamArrays, fa: Mapping[int, int], fs: Mapping[int, float], now: float | None
) -> np.ndarray:
    """Earliest starts of the temporal relaxation (shortest durations, no resources)."""
    dmin = arr.min_duration.copy()
    dmax = arr.max_duration.copy()
    for i, a in fa.items():
        dmin[i] = dmax[i] = arr.duration[i, a]
    starts, cycle = task_network(arr, dmin, dmax, fs, now).longest_paths()
    if starts is None or cycle is not None:  # the pre-check ran before: cannot happen
        raise RuntimeError("the temporal relaxation has a positive cycle")
    return starts


@dataclass(frozen=True)
class AllocationLayout:
    """What the allocation MILP tells its reader."""

    time_unit_s: float
    """Seconds per unit of the model's times."""


def build_allocation(
    arr: TeamArrays,
    objective: str,
    es: np.ndarray,
    fa: Mapping[int, int],
    idle: np.ndarray,
    human_cap: float | None = None,
) -> Built:
    """The allocation MILP (times scaled by the longest duration) with its
    :class:`AllocationLayout`."""
    tau = time_unit(arr)
    n, na = arr.num_tasks, arr.num_agents
    cap = [(i, a) for i, a in zip(*np.nonzero(arr.capable), strict=True)]
    m = pyo.ConcreteModel(name="human_robot_allocation")
    m.CAPABLE = pyo.Set(initialize=[(int(i), int(a)) for i, a in cap], dimen=2, ordered=True)
    m.TASKS = pyo.RangeSet(0, n - 1)
    m.AGENTS = pyo.RangeSet(0, na - 1)
    m.assign = pyo.Var(m.CAPABLE, domain=pyo.Binary)
    for i, a in fa.items():
        for k in range(na):
            if arr.capable[i, k]:
                m.assign[i, k].fix(1 if k == a else 0)
    by_task: dict[int, list[int]] = {i: [] for i in range(n)}
    by_agent: dict[int, list[int]] = {a: [] for a in range(na)}
    for i, a in m.CAPABLE:
        by_task[i].append(a)
        by_agent[a].append(i)
    d = np.where(arr.capable, arr.duration, 0.0) / tau
    m.c_assign = pyo.Constraint(
        m.TASKS, rule=lambda m, i: sum(m.assign[i, a] for a in by_task[i]) == 1
    )

    def load(m: pyo.ConcreteModel, a: int) -> Any:
        return sum(d[i, a] * m.assign[i, a] for i in by_agent[a])

    m.makespan = pyo.Var(bounds=(0, None))
    m.c_load = pyo.Constraint(m.AGENTS, rule=lambda m, a: m.makespan >= load(m, a) + idle[a] / tau)
    m.c_path = pyo.Constraint(
        m.TASKS,
        rule=lambda m, i: (
            m.makespan >= es[i] / tau + sum(d[i, a] * m.assign[i, a] for a in by_task[i])
        ),
    )
    # c_location_load[q]: a workspace holds one task at a time
    m.LOCATIONS = pyo.RangeSet(0, len(arr.locations) - 1) if arr.locations else pyo.Set()
    at = {q: [int(i) for i in np.nonzero(arr.loc == q)[0]] for q in range(len(arr.locations))}
    m.c_location_load = pyo.Constraint(
        m.LOCATIONS,
        rule=lambda m, q: (
            m.makespan
            >= float(es[at[q]].min()) / tau
            + sum(d[i, a] * m.assign[i, a] for i in at[q] for a in by_task[i])
        ),
    )
    humans = [int(a) for a in np.nonzero(arr.humans)[0]]
    if objective == "max_human_workload" and human_cap is None:
        m.max_human_workload = pyo.Var(bounds=(0, None))
        m.c_human = pyo.Constraint(humans, rule=lambda m, a: m.max_human_workload >= load(m, a))
        m.obj = pyo.Objective(expr=m.max_human_workload)
    else:
        if human_cap is not None:
            busy = [a for a in humans if by_agent[a]]  # a human who can do nothing: no row
            m.c_human_cap = pyo.Constraint(
                busy, rule=lambda m, a: load(m, a) <= human_cap / tau + TOL
            )
        m.obj = pyo.Objective(expr=m.makespan)
    return Built(m, AllocationLayout(tau))


def _allocate(
    session: Session,
    arr: TeamArrays,
    objective: str,
    es: np.ndarray,
    fa: Mapping[int, int],
    idle: np.ndarray,
    options: SolveOptions,
    first: bool,
    stage: str,
) -> tuple[np.ndarray | None, float | None]:
    """Solve the allocation MILP(s) on ``session``; return (agent per task, dual bound
    in seconds)."""
    limit = ALLOC_TIME_S[0] if first else ALLOC_TIME_S[1]
    if options.time_limit_s is not None:
        limit = max(0.5, min(limit, options.time_limit_s / 4))
    opts = SolveOptions(
        time_limit_s=limit,
        mip_rel_gap=ALLOC_GAP,
        threads=options.threads,
        seed=options.seed,
    )
    human_cap = None
    bound: float | None = None
    if objective in BY_ALLOCATION:  # lexicographic: the human cap first
        with session.timer("build_s"):
            built = build_allocation(arr, objective, es, fa, idle)
        sol = session.open(built).solve(opts, stage=stage)
        if not sol.status.has_solution:
            return None, None
        tau = built.layout.time_unit_s
        bound = float(sol.bound) * tau if sol.bound is not None else None
        human_cap = float(sol.objective or 0.0) * tau
    with session.timer("build_s"):
        built = build_allocation(arr, objective, es, fa, idle, human_cap)
    sol = session.open(built).solve(opts, stage=stage)
    if not sol.status.has_solution:
        return None, bound
    m = built.model
    if objective not in BY_ALLOCATION and sol.bound is not None:
        bound = float(sol.bound) * built.layout.time_unit_s
    cap = list(m.CAPABLE)
    x = sol.values(m.assign, cap)
    score = np.full((arr.num_tasks, arr.num_agents), -1.0)
    for (i, a), v in zip(cap, x, strict=True):
        score[i, a] = v
    for i, a in fa.items():
        score[i, a] = 2.0
    return score.argmax(axis=1), bound


def tails(arr: TeamArrays, dur: np.ndarray) -> np.ndarray:
    """Longest chain of work from each task's start to the end (non-negative lags only)."""
    n = arr.num_tasks
    tail = dur.astype(float).copy()
    for _ in range(n):
        cand = dur[arr.prec_before] + np.maximum(arr.prec_min, 0.0) + tail[arr.prec_after]
        new = tail.copy()
        np.maximum.at(new, arr.prec_before, cand)
        if np.allclose(new, tail):
            break
        tail = new
    return tail


def priority_orders(arr: TeamArrays, es: np.ndarray, dur: np.ndarray, seed: int) -> list[list[int]]:
    """Task orders for list scheduling: by earliest start, by least slack (earliest start
    minus remaining chain), by workspace pressure (earliest start minus the work at the
    task's workspace), plus two seeded random perturbations of the second; each respects
    precedences with non-negative lags."""
    from .formulations import known_order

    before = known_order(arr)
    tail = tails(arr, dur)
    rng = np.random.default_rng(seed)
    # work waiting at each task's workspace: busy workspaces first
    loc_work = np.zeros(max(1, len(arr.locations)))
    has = arr.loc >= 0
    np.add.at(loc_work, arr.loc[has], dur[has])
    pressure = np.where(has, loc_work[np.maximum(arr.loc, 0)], 0.0)
    keys = [es, es - tail, es - pressure]
    span = float(np.nanmax(arr.duration)) or 1.0
    keys += [es - tail + rng.uniform(0, span, arr.num_tasks) for _ in range(2)]
    out = []
    for key in keys:
        done = np.zeros(arr.num_tasks, dtype=bool)
        order = []
        for _ in range(arr.num_tasks):
            ready = ~done & ~(before[:, :] & ~done[:, None]).any(axis=0)
            if not ready.any():  # cannot happen: known_order is acyclic when feasible
                ready = ~done
            cand = np.nonzero(ready)[0]
            i = int(cand[np.lexsort((-arr.weight[cand], key[cand]))[0]])
            done[i] = True
            order.append(i)
        out.append(order)
    return out


def list_schedule(
    arr: TeamArrays,
    agent_of: np.ndarray,
    fs: Mapping[int, float],
    now: float | None,
    order: list[int] | None = None,
) -> np.ndarray | None:
    """Serial list scheduling of a fixed allocation; ``None`` if it finds no schedule.

    ``order`` is the task order (default: by earliest start); fixed tasks go first. When
    a task cannot start within a maximum lag of a predecessor, the predecessor gets a
    later earliest start and the pass restarts (the usual RCPSP/max repair), at most
    ``3 n`` times.
    """
    n = arr.num_tasks
    dur = arr.duration[np.arange(n), agent_of]
    es, cycle = task_network(arr, dur, dur, fs, now).longest_paths()
    if es is None or cycle is not None:
        return None
    if order is None:
        order = [int(i) for i in np.lexsort((-arr.weight, es))]
    order = [*sorted(fs), *[i for i in order if i not in fs]]
    lb = es.copy()
    for _ in range(3 * n + 1):
        start, culprit = _one_pass(arr, agent_of, dur, fs, order, lb)
        if start is not None:
            return start
        if culprit is None:
            return None
        b, t = culprit
        if b in fs or t <= lb[b] + TOL:
            return None
        lb[b] = t
    return None


def _one_pass(
    arr: TeamArrays,
    agent_of: np.ndarray,
    dur: np.ndarray,
    fs: Mapping[int, float],
    order: list[int],
    lb: np.ndarray,
) -> tuple[np.ndarray | None, tuple[int, float] | None]:
    """One serial pass; on failure, the predecessor to delay and its new earliest start."""
    n = arr.num_tasks
    start = np.full(n, np.nan)
    agent_busy: dict[int, list[tuple[float, float, int]]] = {a: [] for a in range(arr.num_agents)}
    loc_busy: dict[int, list[tuple[float, float]]] = {}
    preds: dict[int, list[int]] = {i: [] for i in range(n)}
    for k in range(len(arr.prec_before)):
        preds[int(arr.prec_after[k])].append(k)
    for i in order:
        a = int(agent_of[i])
        lo = float(lb[i])
        hi = np.inf
        if np.isfinite(arr.deadline[i]):
            hi = float(arr.deadline[i] - dur[i])
        binding = -1
        for k in preds[i]:
            b = int(arr.prec_before[k])
            if not np.isnan(start[b]):
                end_b = start[b] + dur[b]
                lo = max(lo, end_b + arr.prec_min[k])
                if end_b + arr.prec_max[k] < hi:
                    hi, binding = end_b + arr.prec_max[k], k
        if i in fs:
            lo = hi = fs[i]
        t = _earliest_slot(arr, i, dur[i], lo, agent_busy[a], loc_busy.get(int(arr.loc[i]), []))
        if t is None:
            return None, None
        if t > hi + TOL:
            if binding < 0:
                return None, None
            b = int(arr.prec_before[binding])
            # delay b so that i's earliest slot is within the maximum lag
            return None, (b, float(start[b] + t - hi))
        start[i] = t
        agent_busy[a].append((t, t + dur[i], i))
        agent_busy[a].sort()
        if arr.loc[i] >= 0:
            loc_busy.setdefault(int(arr.loc[i]), []).append((t, t + dur[i]))
            loc_busy[int(arr.loc[i])].sort()
    # lags whose 'after' was placed before its 'before' (negative lags)
    ends = start + dur
    for k in range(len(arr.prec_before)):
        gap = start[arr.prec_after[k]] - ends[arr.prec_before[k]]
        if gap < arr.prec_min[k] - TOL or gap > arr.prec_max[k] + TOL:
            return None, None
    return start, None


def _earliest_slot(
    arr: TeamArrays,
    i: int,
    d: float,
    lo: float,
    agent: list[tuple[float, float, int]],
    loc: list[tuple[float, float]],
) -> float | None:
    """Earliest ``t >= lo`` where task ``i`` fits between its agent's tasks (with travel)
    and its location's occupations."""
    t = lo
    for _ in range(4 * (len(agent) + len(loc)) + 4):
        moved = False
        for s, e, j in agent:
            # j before i needs t >= e + travel(j, i); i before j needs t + d + travel(i, j) <= s
            if t + d + arr.travel_between(i, j) <= s + TOL:
                continue
            if t >= e + arr.travel_between(j, i) - TOL:
                continue
            t = e + arr.travel_between(j, i)
            moved = True
        for s, e in loc:
            if t + d <= s + TOL or t >= e - TOL:
                continue
            t = e
            moved = True
        if not moved:
            return t
    return None


def search(
    session: Session,
    arr: TeamArrays,
    objective: str,
    options: SolveOptions,
    fa: Mapping[int, int],
    fs: Mapping[int, float],
    now: float | None,
    es: np.ndarray,
    iterations: int = ITERATIONS,
    stage: str = "allocation",
) -> tuple[tuple[float, np.ndarray, np.ndarray] | None, float | None, list[float | None]]:
    """The allocate / sequence loop: (best (value, agent per task, starts) or ``None``,
    the first allocation MILP's dual bound, the value of each iteration). The allocation
    MILPs run on ``session`` (stage ``stage``)."""
    t0 = time.perf_counter()
    idle = np.zeros(arr.num_agents)
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    bound: float | None = None
    history: list[float | None] = []
    seen: set[bytes] = set()
    deadline = None if options.time_limit_s is None else t0 + options.time_limit_s
    for it in range(iterations):
        agent_of, b = _allocate(session, arr, objective, es, fa, idle, options, it == 0, stage)
        if it == 0:
            bound = b
        if agent_of is None:
            break
        key = agent_of.tobytes()
        if key in seen:
            break
        seen.add(key)
        dur = arr.duration[np.arange(arr.num_tasks), agent_of]
        es_a, _ = task_network(arr, dur, dur, fs, now).longest_paths()
        starts = None
        value = None
        if es_a is not None:
            for order in priority_orders(
                arr, es_a, dur, it if options.seed is None else options.seed + it
            ):
                cand = list_schedule(arr, agent_of, fs, now, order)
                if cand is None:
                    continue
                shifted = earliest_schedule(arr, agent_of, start_order(cand, cand + dur), fs, now)
                if shifted is not None:
                    cand = shifted
                v = objective_of(arr, objective, agent_of, cand)
                if value is None or v < value - TOL:
                    starts, value = cand, v
        if starts is not None and value is not None:
            if best is None or value < best[0] - TOL:
                best = (value, agent_of, starts)
            ends = starts + dur
            load = np.zeros(arr.num_agents)
            np.add.at(load, agent_of, dur)
            busy = np.zeros(arr.num_agents)
            np.maximum.at(busy, agent_of, ends)
            idle = np.maximum(idle, busy - load)
        else:
            # the allocation could not be sequenced: make its most loaded agent look busier
            load = np.zeros(arr.num_agents)
            np.add.at(load, agent_of, dur)
            idle[int(np.argmax(load))] += float(np.nanmax(arr.duration))
        history.append(value)
        log.debug("decomposition iteration %d: %s", it, value)
        session.notify(
            "decomposition" if stage == "allocation" else stage,
            it + 1,
            iterations,
            "no schedule" if value is None else f"value {value:.6g}",
            incumbent=None if best is None else best[0],
            bound=bound,
        )
        if deadline is not None and time.perf_counter() > deadline:
            break
    return best, bound, history


def _sequence(
    arr: TeamArrays,
    objective: str,
    agent_of: np.ndarray,
    fs: Mapping[int, float],
    now: float | None,
) -> tuple[float, np.ndarray] | None:
    """List-schedule one allocation (earliest-start order) and left-shift it."""
    dur = arr.duration[np.arange(arr.num_tasks), agent_of]
    cand = list_schedule(arr, agent_of, fs, now)
    if cand is None:
        return None
    shifted = earliest_schedule(arr, agent_of, start_order(cand, cand + dur), fs, now)
    if shifted is not None:
        cand = shifted
    return objective_of(arr, objective, agent_of, cand), cand


def improve(
    arr: TeamArrays,
    objective: str,
    best: tuple[float, np.ndarray, np.ndarray],
    fa: Mapping[int, int],
    fs: Mapping[int, float],
    now: float | None,
    budget_s: float,
) -> tuple[float, np.ndarray, np.ndarray]:
    """Reassignment local search: move one task that ends last (makespan) or costs most
    (weighted completion) to another capable agent, re-sequence, keep the first move that
    improves (value, sum of end times) lexicographically; stop when none does or the
    move or time budget is spent."""
    if objective in BY_ALLOCATION:
        return best  # its value depends on the allocation only, which the MILP optimised
    t_end = time.perf_counter() + budget_s
    value, agent_of, starts = best

    def total_end(agents: np.ndarray, st: np.ndarray) -> float:
        return float((st + arr.duration[np.arange(arr.num_tasks), agents]).sum())

    tie = total_end(agent_of, starts)  # second key: lets moves cross plateaus
    improved = True
    moves = 0
    while improved and time.perf_counter() < t_end and moves < LOCAL_SEARCH_MOVES:
        improved = False
        dur = arr.duration[np.arange(arr.num_tasks), agent_of]
        ends = starts + dur
        cost = ends if objective == "makespan" else arr.weight * ends
        # tasks of the agent(s) and location(s) that finish last, then the costliest
        late = set(np.nonzero(ends >= ends.max() - TOL)[0].tolist())
        crit_agents = {int(agent_of[i]) for i in late}
        crit_locs = {int(arr.loc[i]) for i in late if arr.loc[i] >= 0}
        cands = [
            int(i)
            for i in np.argsort(-cost)
            if int(agent_of[i]) in crit_agents or int(arr.loc[i]) in crit_locs
        ][:12]
        cands += [int(i) for i in np.argsort(-cost)[:6] if int(i) not in cands]
        for i in cands:
            if i in fa:
                continue
            for b in np.nonzero(arr.capable[i])[0]:
                if b == agent_of[i] or time.perf_counter() > t_end:
                    continue
                if moves >= LOCAL_SEARCH_MOVES:
                    break
                moves += 1
                trial = agent_of.copy()
                trial[i] = b
                got = _sequence(arr, objective, trial, fs, now)
                if got is None or got[0] > value + TOL:
                    continue
                got_tie = total_end(trial, got[1])
                if got[0] < value - TOL or got_tie < tie - TOL:
                    value, starts = got
                    agent_of, tie = trial, got_tie
                    improved = True
                    break
            if improved:
                break
    return value, agent_of, starts


def sequence_milp(
    session: Session,
    instance: HumanRobotInstance,
    objective: str,
    best: tuple[float, np.ndarray, np.ndarray],
    fs: Mapping[int, float],
    now: float | None,
    options: SolveOptions,
    time_limit_s: float,
) -> tuple[float, np.ndarray, np.ndarray]:
    """Re-sequence the best allocation exactly: the exact MILP with every task restricted
    to its allocated agent (only order variables remain), started from the list schedule
    and stopped at ``time_limit_s`` (one HiGHS run on ``session``, stage ``sequence``).
    Returns the better of the two schedules."""
    from . import formulations as F
    from .exact import start_vector

    value, agent_of, starts = best
    if (
        time_limit_s <= 0.1
        or objective in BY_ALLOCATION
        or instance.arrays.num_tasks > SEQUENCE_MILP_MAX_TASKS
    ):
        return best
    arr = instance.arrays
    with session.timer("build_s"):
        data = instance.to_dict()
        for i, t in enumerate(data["tasks"]):
            a = int(agent_of[i])
            t["duration_s"] = {arr.agent_ids[a]: float(arr.duration[i, a])}
        restricted = HumanRobotInstance.from_dict(data)
        rarr = restricted.arrays
        fa = {i: int(agent_of[i]) for i in fs}
        plan = F.make_plan(rarr, fa, dict(fs), now)
        built = F.build(restricted, objective, plan)
    live = session.open(built)
    live.highs_model.set_start(start_vector(rarr, built, live.compiled, agent_of, starts))
    sol = live.solve(
        SolveOptions(time_limit_s=time_limit_s, threads=options.threads, seed=options.seed),
        stage="sequence",
    )
    if not sol.status.has_solution:
        return best
    got = sol.values(built.model.start, rarr.task_ids) * plan.time_unit_s
    dur = arr.duration[np.arange(arr.num_tasks), agent_of]
    shifted = earliest_schedule(arr, agent_of, start_order(got, got + dur), fs, now)
    if shifted is None:
        return best
    v = objective_of(arr, objective, agent_of, shifted)
    return (v, agent_of, shifted) if v < value - TOL else best


def _makespan_bound(
    arr: TeamArrays, es: np.ndarray, dmin: np.ndarray, allocation_bound: float | None
) -> float | None:
    """The largest of the allocation MILP's bound, the critical path of the temporal
    relaxation and every location's load."""
    path = float((es + dmin).max())
    loc_lb = 0.0
    for q in range(len(arr.locations)):
        at = arr.loc == q
        loc_lb = max(loc_lb, float(es[at].min() + dmin[at].sum()))
    return max(allocation_bound or 0.0, path, loc_lb)


def _weighted_completion_bound(
    arr: TeamArrays, es: np.ndarray, dmin: np.ndarray, allocation_bound: float | None
) -> float | None:
    """Every task ends at its earliest possible end or later."""
    return float((arr.weight * (es + dmin)).sum())


def _allocation_bound(
    arr: TeamArrays, es: np.ndarray, dmin: np.ndarray, allocation_bound: float | None
) -> float | None:
    """The first allocation MILP's dual bound."""
    return allocation_bound


LOWER_BOUNDS: dict[
    str, Callable[[TeamArrays, np.ndarray, np.ndarray, float | None], float | None]
] = {
    "makespan": _makespan_bound,
    "weighted_completion": _weighted_completion_bound,
    "max_human_workload": _allocation_bound,
}
"""Objective -> a valid lower bound from (arrays, earliest starts of the temporal
relaxation, shortest durations, the first allocation MILP's dual bound)."""


def run_decomposition(
    session: Session,
    instance: HumanRobotInstance,
    objective: str,
    su: Setup,
    info: dict[str, Any],
) -> Outcome:
    """Run the decomposition on ``session``; ``info`` are the details so far."""
    t0 = time.perf_counter()
    options = session.options
    arr = instance.arrays
    fa, fs, now = su.fixed_agent, su.fixed_start, su.now_s
    es = relaxation_earliest(arr, fa, fs, now)
    dmin = arr.min_duration.copy()
    for i, a in fa.items():
        dmin[i] = arr.duration[i, a]
    info = dict(info)
    best, bound, history = search(session, arr, objective, options, fa, fs, now, es)
    if best is not None:
        budget = LOCAL_SEARCH_S
        if options.time_limit_s is not None:
            budget = max(0.0, min(budget, t0 + options.time_limit_s - time.perf_counter()))
        before = best[0]
        best = improve(arr, objective, best, fa, fs, now, budget)
        info["local_search_gain"] = before - best[0]
        limit = SEQUENCE_MILP_S
        if options.time_limit_s is not None:
            limit = min(limit, t0 + options.time_limit_s - time.perf_counter())
        before = best[0]
        best = sequence_milp(session, instance, objective, best, fs, now, options, limit)
        info["sequence_milp_gain"] = before - best[0]
    # valid lower bounds independent of the allocation MILP
    bound = LOWER_BOUNDS[objective](arr, es, dmin, bound)
    info["iterations"] = len(history)
    info["iteration_values"] = history
    if best is None:
        return Outcome(
            details=info,
            status=Status.NO_SOLUTION,
            termination=(
                "decomposition found no feasible schedule (method='exact' can decide feasibility)"
            ),
            bound=bound,
            gap=None,
        )
    value, agent_of, starts = best
    gap = None
    status = Status.FEASIBLE
    if bound is not None:
        bound = min(bound, value)
        gap = (value - bound) / max(abs(value), 1e-9)
        if gap <= 1e-6:
            status = Status.OPTIMAL
    info["makespan_s"] = float((starts + arr.duration[np.arange(arr.num_tasks), agent_of]).max())
    return Outcome(
        value,
        schedule_tables(arr, agent_of, starts),
        info,
        status=status,
        termination="decomposition: best of allocate + list-schedule iterations"
        + (" (matches the lower bound)" if status == Status.OPTIMAL else ""),
        bound=bound,
        gap=gap,
    )


@dataclass(frozen=True)
class Decomposition(ReportsChoice, RunMethodBase):
    """``method="decomposition"``: pre-check, then allocate / sequence / improve.

    ``build`` (what ``hetopt export`` writes) is the exact MILP, as for every method
    (objective in seconds)."""

    objective: str
    choice: Choice | None = None
    """Set when ``method="auto"`` picked this method (reported in ``info``)."""

    def build(self, instance: HumanRobotInstance, params: HumanRobotParams) -> Built:
        from .exact import ExactMilp

        return ExactMilp(self.objective).build(instance, params)

    def export_objective(
        self, instance: HumanRobotInstance, params: HumanRobotParams, built: Built
    ) -> None:
        """The exact MILP's objective in seconds (the allocation and sequencing stages
        are not exported: the file is the problem the decomposition approximates)."""
        from .exact import ExactMilp

        ExactMilp(self.objective).export_objective(instance, params, built)

    def run(
        self, session: Session, instance: HumanRobotInstance, params: HumanRobotParams
    ) -> Outcome:
        return self.report_choice(self._run(session, instance, params))

    def _run(
        self, session: Session, instance: HumanRobotInstance, params: HumanRobotParams
    ) -> Outcome:
        from .exact import cycle_outcome

        arr = instance.arrays
        su = setup(arr, params)
        details = su.details("decomposition")
        cycle = precheck(arr, su.fixed_agent, su.fixed_start, su.now_s)
        if cycle is not None:
            return cycle_outcome(cycle, details)

        def solve(inst: HumanRobotInstance, info: dict[str, Any], warm: Any, phase: str) -> Outcome:
            return run_decomposition(session, inst, self.objective, su, info)

        return reduce_and_solve(instance, self.objective, su, details, solve)
