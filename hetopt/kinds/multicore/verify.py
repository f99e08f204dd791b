"""Independent verifier for ``multicore`` schedules.

It reads only the instance and the result tables (``schedule``; for the Pareto front
``pareto``; ``jobs`` when present), never the Pyomo model, and re-derives makespan,
energy and the weighted completion time.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from ...result import Verification
from .data import MulticoreArrays, MulticoreInstance

ABS_TOL = 1e-6
REL_TOL = 1e-6


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def check_schedule(
    arr: MulticoreArrays, schedule: pd.DataFrame
) -> tuple[list[str], float | None, float | None]:
    """Feasibility problems, makespan and energy of one schedule table."""
    problems, ends = _check(arr, schedule)
    if ends is None:
        return problems, None, None
    more, makespan, energy = _limits(arr, *ends)
    return problems + more, makespan, energy


def _limits(
    arr: MulticoreArrays, core: np.ndarray, end: np.ndarray
) -> tuple[list[str], float, float]:
    """Deadline and budget problems, makespan and energy of a schedule."""
    problems: list[str] = []
    makespan = float(np.max(end))
    energy = arr.energy(core, makespan)
    if arr.deadline is not None and makespan > arr.deadline * (1 + REL_TOL) + ABS_TOL:
        problems.append(f"makespan {makespan:.9g} s exceeds deadline_s {arr.deadline:g}")
    if arr.budget is not None and energy > arr.budget * (1 + REL_TOL) + ABS_TOL:
        problems.append(f"energy {energy:.9g} J exceeds energy_budget_j {arr.budget:g}")
    return problems, makespan, energy


def _late(t: float, limit: float) -> bool:
    """``t`` is after ``limit`` beyond the tolerances."""
    return t > limit + ABS_TOL + REL_TOL * abs(limit)


def _check(
    arr: MulticoreArrays, schedule: pd.DataFrame
) -> tuple[list[str], tuple[np.ndarray, np.ndarray] | None]:
    """Feasibility problems of one schedule table, and each task's core and end (``None``
    when the table cannot be read as a schedule of the instance)."""
    problems: list[str] = []
    tpos = {t: i for i, t in enumerate(arr.task_ids)}
    cpos = {c: k for k, c in enumerate(arr.core_ids)}
    if schedule.empty:
        return ["the schedule is empty"], None
    counts = schedule["task"].astype(str).value_counts()
    missing = [t for t in arr.task_ids if t not in counts.index]
    if missing:
        problems.append(f"{len(missing)} task(s) missing from the schedule, e.g. {missing[:3]}")
    twice = [t for t, k in counts.items() if k > 1]
    if twice:
        problems.append(f"task(s) scheduled more than once, e.g. {twice[:3]}")
    unknown = [t for t in counts.index if t not in tpos]
    if unknown:
        problems.append(f"unknown task(s) in the schedule, e.g. {unknown[:3]}")
    n = arr.num_tasks
    core = np.full(n, -1, dtype=np.int64)
    start = np.full(n, np.nan)
    end = np.full(n, np.nan)
    for task, c, s, e in zip(
        schedule["task"].astype(str),
        schedule["core"].astype(str),
        schedule["start_s"].astype(float),
        schedule["end_s"].astype(float),
        strict=True,
    ):
        if task not in tpos:
            continue
        i = tpos[task]
        if c not in cpos:
            problems.append(f"task {task} is on unknown core {c!r}")
            continue
        core[i], start[i], end[i] = cpos[c], s, e
    if problems:
        return problems, None
    for i in range(n):
        c = core[i]
        if not arr.eligible[i, c]:
            problems.append(
                f"task {arr.task_ids[i]} runs on core {arr.core_ids[c]} where it cannot"
            )
            continue
        if start[i] < -ABS_TOL:
            problems.append(f"task {arr.task_ids[i]} starts before 0 ({start[i]:.6g})")
        if _late(arr.release[i], start[i]):
            problems.append(
                f"task {arr.task_ids[i]} starts at {start[i]:.9g}, before its release_s "
                f"{arr.release[i]:.9g}"
            )
        w = arr.windows[c]
        if w is not None:
            inside = [not _late(a, start[i]) and not _late(end[i], b) for a, b in w.tolist()]
            if not any(inside):
                problems.append(
                    f"task {arr.task_ids[i]} runs from {start[i]:.9g} to {end[i]:.9g} on "
                    f"{arr.core_ids[c]}, outside every availability window of the core"
                )
        if not _close(end[i] - start[i], arr.dur[i, c]):
            problems.append(
                f"task {arr.task_ids[i]} lasts {end[i] - start[i]:.9g} s on "
                f"{arr.core_ids[c]}, its duration there is {arr.dur[i, c]:.9g} s"
            )
    for p, j in arr.edges:
        if start[j] < end[p] - ABS_TOL - REL_TOL * abs(end[p]):
            problems.append(
                f"task {arr.task_ids[j]} starts at {start[j]:.9g} before its predecessor "
                f"{arr.task_ids[p]} ends at {end[p]:.9g}"
            )
    for j in arr.limited_jobs:
        cores = set(core[arr.job == j].tolist())
        if len(cores) > arr.executors[j]:
            problems.append(
                f"job {arr.job_ids[j]} runs on {len(cores)} cores, more than its "
                f"job_executors limit {arr.executors[j]}"
            )
    for c in range(arr.num_cores):
        on = np.nonzero(core == c)[0]
        on = on[np.lexsort((end[on], start[on]))]
        for a, b in itertools.pairwise(on):
            if start[b] < end[a] - ABS_TOL - REL_TOL * abs(end[a]):
                problems.append(
                    f"tasks {arr.task_ids[a]} and {arr.task_ids[b]} overlap on core "
                    f"{arr.core_ids[c]}"
                )
    return problems, (core, end)


def check_jobs(
    arr: MulticoreArrays, end: np.ndarray, jobs: pd.DataFrame | None
) -> tuple[list[str], float]:
    """Problems of the ``jobs`` table (when given) against the tasks' ends, and the
    weighted completion time recomputed from those ends."""
    done = arr.completion(end)
    value = float(arr.weight @ done)
    problems: list[str] = []
    if jobs is None:
        return problems, value
    jpos = {j: k for k, j in enumerate(arr.job_ids)}
    seen: set[str] = set()
    for job, w, c in zip(
        jobs["job"].astype(str), jobs["weight"], jobs["completion_s"], strict=True
    ):
        if job not in jpos:
            problems.append(f"jobs table: unknown job {job!r}")
            continue
        seen.add(job)
        k = jpos[job]
        if not _close(float(w), float(arr.weight[k])):
            problems.append(f"jobs table: job {job} weight {w}, the instance says {arr.weight[k]}")
        if not _close(float(c), float(done[k])):
            problems.append(
                f"jobs table: job {job} completes at {c}, its last task ends at {done[k]:.9g}"
            )
    missing = [j for j in arr.job_ids if j not in seen]
    if missing:
        problems.append(f"jobs table: {len(missing)} job(s) missing, e.g. {missing[:3]}")
    return problems, value


def verify(
    instance: MulticoreInstance,
    objective: str,
    objective_value: float | None,
    tables: dict[str, pd.DataFrame],
) -> Verification:
    """Re-check a ``multicore`` result from the instance and its tables alone."""
    arr = instance.arrays
    checks = [
        "tasks_present",
        "eligibility",
        "durations",
        "precedences",
        "no_overlap",
        "deadline",
        "energy_budget",
    ]
    if arr.has_releases:
        checks.append("releases")
    if arr.has_windows:
        checks.append("windows")
    if arr.has_executor_limits:
        checks.append("executors")
    if "schedule" not in tables:
        return Verification(False, None, ("no schedule table",), tuple(checks))
    schedule = tables["schedule"]
    if objective == "pareto":
        return _verify_pareto(arr, schedule, tables.get("pareto"), checks)
    problems, ends = _check(arr, schedule)
    value: float | None = None
    if ends is not None:
        more, makespan, energy = _limits(arr, *ends)
        job_problems, weighted = check_jobs(arr, ends[1], tables.get("jobs"))
        problems += more + job_problems
        measures = {"makespan": makespan, "energy": energy, "weighted_completion": weighted}
        value = measures[objective]
        if "jobs" in tables:
            checks.append("jobs")
    if value is not None:
        checks.append("objective")
        if objective_value is None or not _close(value, objective_value):
            problems.append(f"objective recomputed as {value:.9g}, result says {objective_value}")
    return Verification(not problems, value, tuple(problems), tuple(checks))


def _verify_pareto(
    arr: MulticoreArrays, schedule: pd.DataFrame, front: pd.DataFrame | None, checks: list[str]
) -> Verification:
    problems: list[str] = []
    if front is None or front.empty:
        return Verification(False, None, ("no pareto table",), tuple(checks))
    checks += ["pareto_points", "non_dominated"]
    pts = []
    for point, mk, en in zip(front["point"], front["makespan_s"], front["energy_j"], strict=True):
        sub = schedule[schedule["point"] == point]
        probs, m2, e2 = check_schedule(arr, sub)
        problems += [f"point {point}: {p}" for p in probs]
        if m2 is not None and e2 is not None:
            if not _close(m2, float(mk)):
                problems.append(f"point {point}: makespan recomputed as {m2:.9g}, table {mk}")
            if not _close(e2, float(en)):
                problems.append(f"point {point}: energy recomputed as {e2:.9g}, table {en}")
            pts.append((point, m2, e2))
    for p, m1, e1 in pts:
        for q, m2, e2 in pts:
            if (
                p != q
                and m2 <= m1 + ABS_TOL
                and e2 <= e1 + ABS_TOL
                and (m2 < m1 - ABS_TOL or e2 < e1 - ABS_TOL)
            ):
                problems.append(f"point {p} is dominated by point {q}")
    return Verification(not problems, None, tuple(problems), tuple(checks))
