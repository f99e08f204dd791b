"""Independent verifier for ``human_robot`` schedules.

It reads only the instance (its raw fields, not the derived arrays) and the
``schedule`` table (task, agent, start_s, end_s), never the Pyomo model, and re-checks
every constraint: capability and duration, release, deadline, minimum and maximum lags,
agent sequencing with travel, location exclusivity, fixed tasks; then it recomputes the
objective.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from ...result import Verification
from .data import HumanRobotInstance

TOL = 1e-6


def _tol(x: float) -> float:
    return TOL * max(1.0, abs(x))


def task_duration(instance: HumanRobotInstance, task: str, agent: str) -> float | None:
    """Duration of ``task`` on ``agent`` (id key first, then type key), ``None`` if not allowed."""
    t = next(x for x in instance.tasks if x.id == task)
    typ = next(a.type for a in instance.agents if a.id == agent)
    if agent in t.duration_s:
        return float(t.duration_s[agent])
    if typ in t.duration_s:
        return float(t.duration_s[typ])
    return None


def travel_closure(instance: HumanRobotInstance) -> dict[tuple[str, str], float]:
    """Travel times between locations, symmetric-filled and shortest-path closed."""
    locs = sorted({t.location for t in instance.tasks if t.location is not None})
    d: dict[tuple[str, str], float] = {(a, b): 0.0 for a in locs for b in locs}
    for a in locs:
        for b in locs:
            if a == b:
                continue
            if b in instance.travel_s.get(a, {}):
                d[a, b] = float(instance.travel_s[a][b])
            elif a in instance.travel_s.get(b, {}):
                d[a, b] = float(instance.travel_s[b][a])
    for k in locs:
        for a in locs:
            for b in locs:
                if d[a, k] + d[k, b] < d[a, b]:
                    d[a, b] = d[a, k] + d[k, b]
    return d


def _makespan(instance: HumanRobotInstance, schedule: pd.DataFrame) -> float:
    return float(schedule["end_s"].max())


def _weighted_completion(instance: HumanRobotInstance, schedule: pd.DataFrame) -> float:
    w = {t.id: t.weight for t in instance.tasks}
    return float(
        sum(w[str(t)] * e for t, e in zip(schedule["task"], schedule["end_s"], strict=False))
    )


def _max_human_workload(instance: HumanRobotInstance, schedule: pd.DataFrame) -> float:
    humans = {a.id for a in instance.agents if a.type == "human"}
    load = dict.fromkeys(humans, 0.0)
    for t, a in zip(schedule["task"], schedule["agent"], strict=True):
        if a in load:
            load[a] += task_duration(instance, str(t), str(a)) or 0.0
    return max(load.values()) if load else 0.0


RECOMPUTE: dict[str, Callable[[HumanRobotInstance, pd.DataFrame], float]] = {
    "makespan": _makespan,
    "weighted_completion": _weighted_completion,
    "max_human_workload": _max_human_workload,
}
"""Objective -> its value recomputed from the instance and a (non-empty) schedule."""


def objective_value(
    instance: HumanRobotInstance, objective: str, schedule: pd.DataFrame
) -> float | None:
    """The objective recomputed from a schedule table (``None`` if it is empty or the
    objective unknown)."""
    recompute = RECOMPUTE.get(objective)
    if schedule.empty or recompute is None:
        return None
    return recompute(instance, schedule)


def verify(
    instance: HumanRobotInstance,
    objective: str,
    value: float | None,
    schedule: pd.DataFrame,
    fixed: Mapping[str, Any] | None = None,
    now_s: float | None = None,
) -> Verification:
    """Check a schedule against every constraint of the instance; recompute the objective."""
    problems: list[str] = []
    checks = [
        "tasks_once",
        "capability",
        "duration",
        "release",
        "deadline",
        "min_lag",
        "max_lag",
        "agent_sequence_travel",
        "location_exclusive",
    ]
    task_ids = [t.id for t in instance.tasks]
    agent_ids = {a.id for a in instance.agents}
    rows: dict[str, tuple[str, float, float]] = {}
    for t, a, s, e in zip(
        schedule["task"], schedule["agent"], schedule["start_s"], schedule["end_s"], strict=True
    ):
        t, a = str(t), str(a)
        if t in rows:
            problems.append(f"task {t} is scheduled more than once")
        if t not in task_ids:
            problems.append(f"unknown task {t} in the schedule")
            continue
        if a not in agent_ids:
            problems.append(f"task {t}: unknown agent {a}")
            continue
        rows[t] = (a, float(s), float(e))
    missing = [t for t in task_ids if t not in rows]
    if missing:
        problems.append(f"{len(missing)} task(s) missing from the schedule, e.g. {missing[:3]}")
    by_id = {t.id: t for t in instance.tasks}
    for t, (a, s, e) in rows.items():
        task = by_id[t]
        d = task_duration(instance, t, a)
        if d is None:
            problems.append(f"task {t}: agent {a} cannot do it")
            continue
        if abs(e - s - d) > _tol(e):
            problems.append(f"task {t}: end - start = {e - s:.9g} s but it takes {d:g} s on {a}")
        started = fixed is not None and t in fixed  # already running: its release is past
        if not started and s < task.release_s - _tol(s):
            problems.append(
                f"task {t}: starts at {s:.9g} s before its release {task.release_s:g} s"
            )
        if task.deadline_s is not None and e > task.deadline_s + _tol(e):
            problems.append(f"task {t}: ends at {e:.9g} s after its deadline {task.deadline_s:g} s")
        if now_s is not None and (fixed is None or t not in fixed) and s < now_s - _tol(s):
            problems.append(f"task {t}: starts at {s:.9g} s, before now ({now_s:g} s)")
    for k, p in enumerate(instance.precedence):
        if p.before not in rows or p.after not in rows:
            continue
        gap = rows[p.after][1] - rows[p.before][2]
        if gap < p.min_lag_s - _tol(gap):
            problems.append(
                f"precedence[{k}]: {p.after} starts {gap:.9g} s after {p.before} ends "
                f"(min_lag_s {p.min_lag_s:g})"
            )
        if p.max_lag_s is not None and gap > p.max_lag_s + _tol(gap):
            problems.append(
                f"precedence[{k}]: {p.after} starts {gap:.9g} s after {p.before} ends "
                f"(max_lag_s {p.max_lag_s:g})"
            )
    travel = travel_closure(instance)
    per_agent: dict[str, list[tuple[float, float, str]]] = {}
    per_loc: dict[str, list[tuple[float, float, str]]] = {}
    for t, (a, s, e) in rows.items():
        per_agent.setdefault(a, []).append((s, e, t))
        loc = by_id[t].location
        if loc is not None:
            per_loc.setdefault(loc, []).append((s, e, t))
    for a, items in per_agent.items():
        items.sort()
        for (_s0, e0, t0), (s1, _e1, t1) in itertools.pairwise(items):
            l0, l1 = by_id[t0].location, by_id[t1].location
            tr = travel[l0, l1] if l0 is not None and l1 is not None else 0.0
            if s1 < e0 + tr - _tol(s1):
                problems.append(
                    f"agent {a}: {t1} starts at {s1:.9g} s but {t0} ends at {e0:.9g} s "
                    f"(+{tr:g} s travel)"
                )
    for loc, items in per_loc.items():
        items.sort()
        for (_s0, e0, t0), (s1, _e1, t1) in itertools.pairwise(items):
            if s1 < e0 - _tol(s1):
                problems.append(f"location {loc}: {t0} and {t1} overlap")
    if fixed:
        checks.append("fixed")
        for t, (a, s) in fixed.items():
            if t in rows and (rows[t][0] != a or abs(rows[t][1] - float(s)) > _tol(s)):
                problems.append(f"task {t} was fixed to {a} at {float(s):g} s but moved")
    recomputed = objective_value(instance, objective, schedule) if not missing else None
    if recomputed is not None:
        checks.append("objective")
        if value is None or not math.isclose(recomputed, value, rel_tol=1e-6, abs_tol=1e-6):
            problems.append(f"objective recomputed as {recomputed:.9g}, result says {value}")
    return Verification(
        ok=not problems,
        objective_value=recomputed,
        violations=tuple(problems),
        checks=tuple(checks),
    )
