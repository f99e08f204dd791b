"""Instances whose durations span many orders of magnitude (one agent needs 1e9 s where
another needs 9 s): what the methods do so that the extreme entry decides nothing.

Scaled by the longest duration, the short tasks of such an instance shrink below
HiGHS's tolerances and the MILP reports a false conflict (issue 21). An instance has a
*wide range* when its longest duration exceeds :data:`WIDE_RANGE` times its reference
duration (the lower median over tasks of each task's shortest duration). Then:

1. :func:`prune` leaves out every task-agent pair that provably appears in no optimal
   schedule:

   * **no feasible schedule uses it**: ``es_i + d_ia`` exceeds the latest finish of
     ``i`` (its deadline, or the latest start of a successor minus the minimum lag),
     where ``es_i`` and the latest starts come from the temporal relaxation (shortest
     durations in minimum lags and deadlines, longest in maximum lags: every schedule
     satisfies it);
   * **no schedule as good as a known one uses it**: with the value ``U`` of a feasible
     schedule (list schedules, no solver; or the narrow solve of step 3), a pair whose
     least possible contribution exceeds ``U`` is left out: ``es_i + d_ia > U``
     (makespan), ``w_i (es_i + d_ia) + sum_{j != i} w_j (es_j + min_b d_jb) > U``
     (weighted completion), ``d_ia > U`` for a human ``a`` (max human workload).

   Every schedule with a value of at most ``U`` survives, so the optimum is unchanged.
   Tasks already started (``fixed``) keep all their pairs; a task whose every pair is
   infeasible keeps its fastest one (the solve then proves infeasibility and names the
   conflict).
2. The models take the reference duration as their time unit (:func:`time_unit`): the
   long pairs that remain get large coefficients instead of the short ones vanishing.
3. :func:`reduce_and_solve` first solves the :func:`narrow` instance (without the long
   pairs, each task keeping its fastest): its value is the ``U`` of a second pruning;
   when that pruning leaves exactly the narrow instance, the narrow solve is the
   answer, else the pruned instance is solved, started from the narrow schedule.

A robot's time does not count in the max human workload, so a long robot pair that
meets every deadline stays (the optimum may need it). Instances without a wide range
are solved exactly as before (every pair kept, the longest duration as the unit).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...contract import Outcome
from .data import HumanRobotInstance, TeamArrays
from .params import Setup
from .tables import objective_of, start_order
from .temporal import Network, earliest_schedule, precheck, task_network

log = logging.getLogger(__name__)

REL_TOL = 1e-9
"""A pair is left out only when its bound exceeds the limit by this relative margin."""
WIDE_RANGE = 1e3
"""An instance whose longest duration exceeds this multiple of its *reference duration*
(the median over tasks of each task's shortest duration) has a wide range: its models
take the reference duration as the time unit (:func:`time_unit`), and the solve first
looks for a schedule without the longer pairs (:func:`narrow`)."""


def reference_duration(arr: TeamArrays) -> float:
    """The (lower) median over tasks of each task's shortest positive duration (0 if
    none)."""
    dmin = arr.min_duration
    positive = np.sort(dmin[dmin > 0])
    return float(positive[(len(positive) - 1) // 2]) if positive.size else 0.0


def is_wide(arr: TeamArrays) -> bool:
    """Whether the longest duration exceeds :data:`WIDE_RANGE` times the reference."""
    finite = arr.duration[arr.capable]
    ref = reference_duration(arr)
    return bool(finite.size) and ref > 0 and float(finite.max()) > WIDE_RANGE * ref


def time_unit(arr: TeamArrays) -> float:
    """Seconds per model time unit: the longest duration, or the reference duration
    when the range is wide (then the short tasks do not shrink below the solver's
    tolerances; the long pairs get large coefficients instead)."""
    if is_wide(arr):
        return reference_duration(arr)
    finite = arr.duration[arr.capable]
    return float(finite.max()) if finite.size and finite.max() > 0 else 1.0


def long_pairs(arr: TeamArrays) -> np.ndarray:
    """tasks x agents: the pairs longer than :data:`WIDE_RANGE` times the reference
    duration (none when the range is not wide)."""
    if not is_wide(arr):
        return np.zeros_like(arr.capable)
    return arr.capable & (np.nan_to_num(arr.duration) > WIDE_RANGE * reference_duration(arr))


def narrow(instance: HumanRobotInstance, su: Setup) -> HumanRobotInstance | None:
    """``instance`` without its :func:`long_pairs`, except each task's fastest pair and
    the pairs of tasks already started (``None`` when that removes nothing). Its
    schedules are schedules of ``instance``: their value is an incumbent for
    :func:`prune`."""
    arr = instance.arrays
    drop = long_pairs(arr)
    for i in su.fixed_agent:
        drop[i] = False
    for t in np.nonzero(drop.any(axis=1))[0].tolist():
        drop[t, int(np.nanargmin(arr.duration[t]))] = False
    if not drop.any():
        return None
    return _without(instance, drop)


@dataclass(frozen=True)
class Pruned:
    """The instance a solve works on and what was left out."""

    instance: HumanRobotInstance
    """``instance`` without the removed pairs (the same object when nothing is removed)."""
    removed: tuple[tuple[int, int], ...]
    """(task index, agent index) of every removed pair."""
    incumbent: float | None
    """The objective value of the best known schedule used as ``U`` (``None``: none)."""


def prune(
    instance: HumanRobotInstance, objective: str, su: Setup, incumbent: float | None = None
) -> Pruned:
    """``instance`` without the task-agent pairs no optimal schedule uses (see the
    module docstring); ``incumbent`` is the value of a known schedule, if any (the
    better of it and the list schedules' is used)."""
    arr = instance.arrays
    fa, fs, now = su.fixed_agent, su.fixed_start, su.now_s
    if not is_wide(arr):  # nothing to fear from the numbers: the model keeps every pair
        return Pruned(instance, (), incumbent)
    if precheck(arr, fa, fs, now) is not None:  # infeasible anyway: the method says so
        return Pruned(instance, (), None)
    dmin, dmax = _durations(arr, fa)
    net = task_network(arr, dmin, dmax, fs, now)
    es, _ = net.longest_paths()
    assert es is not None  # no positive cycle (the pre-check above)
    latest = _latest_starts(net, arr.num_tasks)
    # latest finish of each task: its deadline, or a successor's latest start minus the lag
    lf = arr.deadline.copy()
    for k in range(len(arr.prec_before)):
        b, a = int(arr.prec_before[k]), int(arr.prec_after[k])
        lf[b] = min(lf[b], latest[a] - float(arr.prec_min[k]))
    dur = np.where(arr.capable, arr.duration, np.inf)
    ends = es[:, None] + dur
    drop = arr.capable & (ends > lf[:, None] + REL_TOL * np.maximum(1.0, np.abs(lf[:, None])))
    listed = incumbent_value(arr, objective, su, es)
    if listed is not None and (incumbent is None or listed < incumbent):
        incumbent = listed
    if incumbent is not None:
        limit = incumbent + REL_TOL * max(1.0, abs(incumbent))
        drop |= arr.capable & (_least_value(arr, objective, es, dmin, dur) > limit)
    for i in fa:  # tasks already started keep their agent (and every other pair)
        drop[i] = False
    for t in np.nonzero((arr.capable & ~drop).sum(axis=1) == 0)[0].tolist():
        drop[t, int(np.nanargmin(arr.duration[t]))] = False  # infeasible: keep the fastest
    removed = tuple((int(i), int(a)) for i, a in zip(*np.nonzero(drop), strict=True))
    if not removed:
        return Pruned(instance, (), incumbent)
    return Pruned(_without(instance, drop), removed, incumbent)


def _durations(arr: TeamArrays, fa: Mapping[int, int]) -> tuple[np.ndarray, np.ndarray]:
    dmin = arr.min_duration.copy()
    dmax = arr.max_duration.copy()
    for i, a in fa.items():
        dmin[i] = dmax[i] = arr.duration[i, a]
    return dmin, dmax


def _latest_starts(net: Network, num_tasks: int) -> np.ndarray:
    """The largest solution of the network's constraints ``s_v >= s_u + w`` with
    ``s_0 = 0`` (``+inf`` for a task nothing bounds from above)."""
    arcs = [(a.u, a.v, a.w) for a in net.arcs]
    n = num_tasks + 1
    latest = [math.inf] * n
    latest[0] = 0.0
    for _ in range(n):
        changed = False
        for u, v, w in arcs:  # s_u <= s_v - w
            cand = latest[v] - w
            if cand < latest[u] - 1e-9 * max(1.0, abs(cand)):
                latest[u] = cand
                changed = True
        if not changed:
            break
    return np.asarray(latest[1:], dtype=float)


def _least_value(
    arr: TeamArrays, objective: str, es: np.ndarray, dmin: np.ndarray, dur: np.ndarray
) -> np.ndarray:
    """tasks x agents: the least objective value of any schedule that gives task ``i``
    to agent ``a`` (``-inf`` where the objective gives no such bound)."""
    if objective == "makespan":
        return es[:, None] + dur
    if objective == "weighted_completion":
        w = arr.weight
        rest = float((w * (es + dmin)).sum()) - w * (es + dmin)
        return rest[:, None] + w[:, None] * (es[:, None] + dur)
    if objective == "max_human_workload":
        return np.where(arr.humans[None, :], dur, -np.inf)
    raise ValueError(f"unknown objective {objective!r}")


def incumbent_value(arr: TeamArrays, objective: str, su: Setup, es: np.ndarray) -> float | None:
    """The objective value of the best list schedule (no solver) of two assignments:
    every task on its fastest agent, and on its fastest non-human agent where it has one;
    ``None`` if neither can be scheduled."""
    from .decomposition import list_schedule, priority_orders

    fa, fs, now = su.fixed_agent, su.fixed_start, su.now_s
    n = arr.num_tasks
    dur = np.where(arr.capable, arr.duration, np.inf)
    robots = np.where(arr.humans[None, :], np.inf, dur)
    fastest = dur.argmin(axis=1)
    machine = np.where(np.isfinite(robots.min(axis=1)), robots.argmin(axis=1), fastest)
    best: float | None = None
    seen: set[bytes] = set()
    for agent_of in (fastest, machine):
        agent_of = agent_of.copy()
        for i, a in fa.items():
            agent_of[i] = a
        if agent_of.tobytes() in seen:
            continue
        seen.add(agent_of.tobytes())
        d = arr.duration[np.arange(n), agent_of]
        es_a, _ = task_network(arr, d, d, fs, now).longest_paths()
        if es_a is None:
            continue
        for order in [None, *priority_orders(arr, es_a, d, 0)]:
            starts = list_schedule(arr, agent_of, fs, now, order)
            if starts is None:
                continue
            shifted = earliest_schedule(arr, agent_of, start_order(starts, starts + d), fs, now)
            if shifted is not None:
                starts = shifted
            value = objective_of(arr, objective, agent_of, starts)
            if best is None or value < best:
                best = value
    return best


def _without(instance: HumanRobotInstance, drop: np.ndarray) -> HumanRobotInstance:
    """``instance`` with the ``drop`` pairs removed (durations keyed by agent id)."""
    arr = instance.arrays
    data = instance.to_dict()
    for i, t in enumerate(data["tasks"]):
        if drop[i].any():
            t["duration_s"] = {
                arr.agent_ids[a]: float(arr.duration[i, a])
                for a in range(arr.num_agents)
                if arr.capable[i, a] and not drop[i, a]
            }
    return HumanRobotInstance.from_dict(data)


Solve = Callable[[HumanRobotInstance, dict[str, Any], "Schedule | None", str], Outcome]
"""``solve(instance, details, warm, phase)``: a method's solve of an (already pruned)
instance, ``phase`` being ``"narrow"`` (the quick look without long pairs),
``"after_narrow"`` or ``"direct"``."""
Schedule = tuple[np.ndarray, np.ndarray]
"""(agent index per task, start per task in seconds)."""


def reduce_and_solve(
    instance: HumanRobotInstance,
    objective: str,
    su: Setup,
    details: dict[str, Any],
    solve: Solve,
) -> Outcome:
    """Prune ``instance`` and solve it with ``solve``.

    On a wide range (:func:`is_wide`), the :func:`narrow` instance is solved first: its
    schedule's value is the incumbent of a second pruning, and when that pruning leaves
    exactly the narrow instance, the narrow solve is the answer (the same instance);
    otherwise the pruned instance is solved, started from the narrow schedule.
    """
    pruned = prune(instance, objective, su)
    small = narrow(pruned.instance, su)
    warm: Schedule | None = None
    phase = "direct"
    if small is not None:
        first = solve(small, dict(details), None, "narrow")
        if "schedule" in first.tables and first.objective_value is not None:
            again = prune(instance, objective, su, first.objective_value)
            if np.array_equal(again.instance.arrays.capable, small.arrays.capable):
                first.details = {**first.details, **_noted(again)}
                return first
            pruned = again
            warm = schedule_of(instance.arrays, first.tables["schedule"])
        phase = "after_narrow"
    return solve(pruned.instance, {**details, **_noted(pruned)}, warm, phase)


def _noted(pruned: Pruned) -> dict[str, Any]:
    if not pruned.removed:
        return {}
    log.info("left out %d task-agent pairs no optimal schedule uses", len(pruned.removed))
    return {"pruned_pairs": len(pruned.removed)}


def schedule_of(arr: TeamArrays, table: pd.DataFrame) -> Schedule:
    """(agent index per task, start per task) of a ``schedule`` table."""
    tpos = {t: i for i, t in enumerate(arr.task_ids)}
    apos = {a: k for k, a in enumerate(arr.agent_ids)}
    agent_of = np.zeros(arr.num_tasks, dtype=np.int64)
    starts = np.zeros(arr.num_tasks)
    for t, a, s in zip(table["task"], table["agent"], table["start_s"], strict=True):
        agent_of[tpos[t]] = apos[a]
        starts[tpos[t]] = float(s)
    return agent_of, starts
