"""List scheduling: a fast feasible schedule (warm start, horizon for big-M, upper bound)."""

from __future__ import annotations

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


def list_schedule(arr: MulticoreArrays, rule: str = "tail") -> Schedule:
    """Greedy list scheduling (no insertion).

    Ready tasks are taken by priority (``"tail"``: longest remaining chain of shortest
    durations first, which is LPT for independent tasks; ``"topo"``: topological order)
    and each goes to the eligible core where it would finish earliest.
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
    done = 0
    while done < n:
        i = max(ready, key=lambda t: (prio[t], -t))
        ready.remove(i)
        elig = np.nonzero(arr.eligible[i])[0]
        s = np.maximum(free[elig], ready_at[i])
        f = s + arr.dur[i, elig]
        k = int(np.lexsort((arr.dur[i, elig], f))[0])
        c = int(elig[k])
        core[i], start[i], end[i] = c, s[k], f[k]
        free[c] = f[k]
        done += 1
        for j in succ[i]:
            ready_at[j] = max(ready_at[j], end[i])
            npred[j] -= 1
            if npred[j] == 0:
                ready.append(j)
    return Schedule(core, start, end)


def best_list_schedule(arr: MulticoreArrays) -> Schedule:
    """The shorter of the two list schedules (for independent tasks, then improved by
    :func:`local_search`)."""
    a = list_schedule(arr, "tail")
    b = list_schedule(arr, "topo")
    best = a if a.makespan <= b.makespan else b
    if not arr.has_dag:
        fastest = np.argmin(np.where(arr.eligible, arr.dur, np.inf), axis=1)
        for start in (best.core, fastest):
            cand = local_search(arr, start)
            if cand.makespan < best.makespan:
                best = cand
    return best


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
    starts as soon as its predecessors and the previous task on its core have ended.

    Raises
    ------
    ValueError
        If the per-core orders contradict the precedences (no schedule exists).
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
        start[i], end[i] = s, s + p[i]
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                queue.append(j)
    if len(queue) != n:
        raise ValueError("the core orders contradict the precedences")
    return Schedule(core, start, end)
