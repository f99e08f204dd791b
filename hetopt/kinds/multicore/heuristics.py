"""List scheduling: a fast feasible schedule (warm start, horizon for big-M, upper bound).

Every schedule here respects the releases and the cores' availability windows; with
windows a greedy schedule can fail (a task fits in no window left), and the functions
then return ``None``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .data import MulticoreArrays


@dataclass(frozen=True)
class Schedule:
    """A schedule as arrays: task ``i`` runs on core ``core[i]`` from ``start[i]``."""

    core: np.ndarray
    start: np.ndarray
    end: np.ndarray

    @property
    def makespan(self) -> float:
        return float(self.end.max()) if len(self.end) else 0.0


def _starts(arr: MulticoreArrays, i: int, elig: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Earliest starts of task ``i`` on the cores ``elig`` no earlier than ``t`` (per
    core), inside a window of each core (``inf`` where none fits)."""
    if not arr.has_windows:
        return t
    return np.array(
        [
            arr.earliest_fit(int(c), float(s), float(arr.dur[i, c]))
            for c, s in zip(elig, t, strict=True)
        ]
    )


def _cores_for(arr: MulticoreArrays, i: int, used: list[set[int]]) -> np.ndarray:
    """The cores task ``i`` may use: eligible ones, and once its job uses as many cores as
    its executor limit, only those."""
    elig = np.nonzero(arr.eligible[i])[0]
    j = int(arr.job[i])
    if len(used[j]) >= arr.executors[j]:
        elig = elig[np.isin(elig, list(used[j]))]
    return elig


def list_schedule(arr: MulticoreArrays, rule: str = "tail") -> Schedule | None:
    """Greedy list scheduling (no insertion).

    Ready tasks are taken by priority (``"tail"``: longest remaining chain of shortest
    durations first, which is LPT for independent tasks; ``"topo"``: topological order)
    and each goes to the eligible core where it would finish earliest (never before its
    release, inside a window of the core, on a core its job may use). ``None`` when a
    task fits in no window or its job's executor limit leaves it no core.
    """
    n, m = arr.num_tasks, arr.num_cores
    prio = arr.tails + arr.min_dur if rule == "tail" else -np.arange(n, dtype=float)
    npred = np.array([len(p) for p in arr.preds])
    succ: list[list[int]] = [[] for _ in range(n)]
    for p, j in arr.edges:
        succ[int(p)].append(int(j))
    ready_at = np.zeros(n)
    free = np.zeros(m)
    core = np.zeros(n, dtype=np.int64)
    start = np.zeros(n)
    end = np.zeros(n)
    ready = [i for i in range(n) if npred[i] == 0]
    used: list[set[int]] = [set() for _ in range(arr.num_jobs)]
    done = 0
    while done < n:
        i = max(ready, key=lambda t: (prio[t], -t))
        ready.remove(i)
        elig = _cores_for(arr, i, used)
        if not len(elig):
            return None
        s = _starts(arr, i, elig, np.maximum(free[elig], max(ready_at[i], arr.release[i])))
        f = s + arr.dur[i, elig]
        k = int(np.lexsort((arr.dur[i, elig], f))[0])
        if not math.isfinite(f[k]):
            return None
        c = int(elig[k])
        core[i], start[i], end[i] = c, s[k], f[k]
        free[c] = f[k]
        used[int(arr.job[i])].add(c)
        done += 1
        for j in succ[i]:
            ready_at[j] = max(ready_at[j], end[i])
            npred[j] -= 1
            if npred[j] == 0:
                ready.append(j)
    return Schedule(core, start, end)


def best_list_schedule(arr: MulticoreArrays) -> Schedule | None:
    """The shorter of the two list schedules (for independent tasks without releases,
    windows or executor limits, then improved by :func:`local_search`); ``None`` if both
    fail."""
    a = list_schedule(arr, "tail")
    b = list_schedule(arr, "topo")
    if a is None or b is None:
        return a if b is None else b
    best = a if a.makespan <= b.makespan else b
    if not arr.sequencing and not arr.has_executor_limits:
        fastest = np.argmin(np.where(arr.eligible, arr.dur, np.inf), axis=1)
        for start in (best.core, fastest):
            cand = local_search(arr, start)
            if cand.makespan < best.makespan:
                best = cand
    return best


def dispatch_schedule(arr: MulticoreArrays, rule: str = "job_work") -> Schedule | None:
    """Active-schedule dispatching (Giffler-Thompson) for the weighted completion time.

    Among the ready tasks (predecessors scheduled) that could start before the earliest
    possible end of any of them, the one of highest priority (ties: lowest index) goes to
    the core where it ends first. Priorities: ``"job_work"``: the job's weight over its
    remaining work (shortest durations of its unscheduled tasks), which is Smith's rule
    (WSPT) for jobs of one task; ``"chain"``: the job's weight over the task's remaining
    chain. ``None`` when a task fits in no window.
    """
    n, m = arr.num_tasks, arr.num_cores
    npred = np.array([len(p) for p in arr.preds])
    succ: list[list[int]] = [[] for _ in range(n)]
    for p, j in arr.edges:
        succ[int(p)].append(int(j))
    left = np.bincount(arr.job, weights=arr.min_dur, minlength=arr.num_jobs)
    chain = arr.tails + arr.min_dur
    w = arr.weight[arr.job]

    def priority(i: int) -> float:
        work = left[arr.job[i]] if rule == "job_work" else chain[i]
        return float(w[i] / work) if work > 0 else math.inf

    ready_at = arr.release.copy()
    free = np.zeros(m)
    core = np.zeros(n, dtype=np.int64)
    start = np.zeros(n)
    end = np.zeros(n)
    ready = [i for i in range(n) if npred[i] == 0]
    used: list[set[int]] = [set() for _ in range(arr.num_jobs)]
    while ready:
        best: dict[int, tuple[int, float, float]] = {}
        for i in ready:
            elig = _cores_for(arr, i, used)
            if not len(elig):
                return None
            s = _starts(arr, i, elig, np.maximum(free[elig], ready_at[i]))
            f = s + arr.dur[i, elig]
            k = int(np.lexsort((arr.dur[i, elig], f))[0])
            if not math.isfinite(f[k]):
                return None
            best[i] = (int(elig[k]), float(s[k]), float(f[k]))
        t_star = min(b[2] for b in best.values())
        cands = [i for i in ready if best[i][1] < t_star - 1e-12]
        if not cands:  # zero-length tasks: the first to end
            cands = [min(ready, key=lambda i: (best[i][2], i))]
        i = max(cands, key=lambda t: (priority(t), -t))
        ready.remove(i)
        c, s0, f0 = best[i]
        core[i], start[i], end[i] = c, s0, f0
        free[c] = f0
        used[int(arr.job[i])].add(c)
        left[arr.job[i]] -= arr.min_dur[i]
        for j in succ[i]:
            ready_at[j] = max(ready_at[j], f0)
            npred[j] -= 1
            if npred[j] == 0:
                ready.append(j)
    return Schedule(core, start, end)


def best_weighted_schedule(arr: MulticoreArrays) -> Schedule | None:
    """The schedule of least weighted completion time among the two dispatch rules of
    :func:`dispatch_schedule` and the two list schedules of :func:`list_schedule`
    (``None`` if all fail)."""
    found = [
        s
        for s in (
            dispatch_schedule(arr, "job_work"),
            dispatch_schedule(arr, "chain"),
            list_schedule(arr, "tail"),
            list_schedule(arr, "topo"),
        )
        if s is not None
    ]
    if not found:
        return None
    return min(found, key=lambda s: arr.weighted_completion(s.end))


def back_to_back(arr: MulticoreArrays, core: np.ndarray) -> Schedule:
    """Independent tasks: each core runs its tasks back to back in task order."""
    n = arr.num_tasks
    p = arr.dur[np.arange(n), core]
    start = np.zeros(n)
    free = np.zeros(arr.num_cores)
    for i in range(n):
        start[i] = free[core[i]]
        free[core[i]] += p[i]
    return Schedule(core.astype(np.int64), start, start + p)


def local_search(arr: MulticoreArrays, core: np.ndarray, max_rounds: int = 10_000) -> Schedule:
    """Move and swap descent for independent tasks (R||Cmax).

    A move (a task of a most-loaded core to another core) or a swap (with a task of
    another core) is taken when both cores end below the old maximum, so the sorted load
    vector decreases and the search stops. Ineligible cores have infinite duration.
    """
    n, m = arr.num_tasks, arr.num_cores
    core = np.asarray(core, dtype=np.int64).copy()
    P = np.where(arr.eligible, arr.dur, np.inf)
    rows = np.arange(n)
    loads = np.bincount(core, weights=P[rows, core], minlength=m)
    for _ in range(max_rounds):
        cmax = loads.max()
        improved = False
        for c in np.nonzero(loads >= cmax - 1e-12)[0]:
            mine = np.nonzero(core == c)[0]
            if not len(mine):
                continue
            # moves: task i (on c) to core d
            new_d = loads[None, :] + P[mine, :]  # (tasks on c, cores)
            new_c = loads[c] - P[mine, c][:, None]
            worst = np.maximum(new_d, new_c)
            worst[:, c] = np.inf
            k, d = np.unravel_index(np.argmin(worst), worst.shape)
            if worst[k, d] < cmax - 1e-9:
                i = mine[k]
                loads[c] -= P[i, c]
                loads[d] += P[i, d]
                core[i] = d
                improved = True
                break
            # swaps: task i (on c) with task j (on d != c)
            others = np.nonzero(core != c)[0]
            if not len(others):
                continue
            dj = core[others]
            lc = loads[c] - P[mine, c][:, None] + P[others, c][None, :]
            ld = loads[dj][None, :] - P[others, dj][None, :] + P[mine][:, dj]
            worst = np.maximum(lc, ld)
            k, q = np.unravel_index(np.argmin(worst), worst.shape)
            if worst[k, q] < cmax - 1e-9:
                i, j, d = mine[k], others[q], dj[q]
                loads[c] += P[j, c] - P[i, c]
                loads[d] += P[i, d] - P[j, d]
                core[i], core[j] = d, c
                improved = True
                break
        if not improved:
            break
    return back_to_back(arr, core)


def left_shift(arr: MulticoreArrays, core: np.ndarray, order_key: np.ndarray) -> Schedule:
    """The semi-active schedule of an assignment and per-core order.

    Tasks on a core run in increasing ``order_key`` (ties: topological order); each
    starts as soon as its predecessors and the previous task on its core have ended, not
    before its release, at the earliest time it fits in a window of its core.

    Raises
    ------
    ValueError
        If the per-core orders contradict the precedences or a task fits in no window
        (no schedule exists).
    """
    n = arr.num_tasks
    core = np.asarray(core, dtype=np.int64)
    rank = np.empty(n, dtype=np.int64)
    rank[arr.topo] = np.arange(n)
    order = np.lexsort((rank, order_key))
    prev = np.full(n, -1, dtype=np.int64)
    last = np.full(arr.num_cores, -1, dtype=np.int64)
    for i in order:
        prev[i] = last[core[i]]
        last[core[i]] = i
    preds = [list(arr.preds[i]) + ([int(prev[i])] if prev[i] >= 0 else []) for i in range(n)]
    indeg = np.array([len(ps) for ps in preds])
    succ: list[list[int]] = [[] for _ in range(n)]
    for j, ps in enumerate(preds):
        for q in ps:
            succ[q].append(j)
    queue = [i for i in range(n) if indeg[i] == 0]
    start = np.zeros(n)
    end = np.zeros(n)
    p = arr.dur[np.arange(n), core]
    k = 0
    while k < len(queue):
        i = queue[k]
        k += 1
        s = max((end[q] for q in preds[i]), default=0.0)
        if arr.has_releases:
            s = max(s, float(arr.release[i]))
        if arr.has_windows:
            s = arr.earliest_fit(int(core[i]), s, float(p[i]))
            if not math.isfinite(s):
                raise ValueError(f"task {arr.task_ids[i]} fits in no window of its core")
        start[i], end[i] = s, s + p[i]
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                queue.append(j)
    if len(queue) != n:
        raise ValueError("the core orders contradict the precedences")
    return Schedule(core, start, end)
