"""The greedy plan: a fast feasible plan, used as the MIP start.

1. **Affinity**: sessions in decreasing order of their memory-time demand (sum of
   ``context_tokens x pause seconds``), each to the allowed GPU where its contexts would
   overflow the memory already claimed the least (for ``min_max_load``: the least own
   work plus the recompute that overflow implies).
2. **Keeps**, per GPU: pauses in order of their end (earliest first), each kept if its
   context fits beside the kept ones and the active batch over its whole pause.

With one GPU and equal context sizes step 2 is the optimal offline-caching rule (the
earliest-end selection of a maximum k-colourable interval subgraph); otherwise it is a
heuristic whose value the MILP improves and bounds.
"""

from __future__ import annotations

import numpy as np

from .data import AgentArrays
from .plan import Plan


def greedy_affinity(arr: AgentArrays, objective: str = "min_recompute_s") -> np.ndarray:
    """Session -> GPU (pins honoured).

    Sessions in decreasing order of memory-time demand; each goes to the allowed GPU where
    its contexts would overflow the memory already claimed the least (token-seconds above
    capacity, active batch included, on a shared event grid), ties broken by the demand
    per capacity so far. For ``min_max_load`` the score is the GPU's own work plus the
    recompute the overflow implies, so that work is balanced too.
    """
    S, G = arr.num_sessions, arr.num_gpus
    times = np.unique(np.concatenate([arr.p_start, arr.p_end, *arr.active_t]))
    if len(times) < 2:
        times = np.array([0.0, 1.0])
    dt = np.diff(times)
    occ = np.stack([arr.active_at(g, times[:-1]) for g in range(G)]).astype(float)
    lo = np.searchsorted(times, arr.p_start)
    hi = np.searchsorted(times, arr.p_end)
    cap = arr.capacity.astype(float)[:, None]
    demand = np.zeros(S)
    np.add.at(demand, arr.p_session, arr.p_tokens * (arr.p_end - arr.p_start))
    first = np.searchsorted(arr.p_session, np.arange(S))
    last = np.searchsorted(arr.p_session, np.arange(S), side="right")
    gpu = np.full(S, -1, dtype=np.int64)
    mem = np.zeros(G)
    load = np.zeros(G)
    by_load = objective == "min_max_load"

    def place(s: int, g: int) -> None:
        for q in range(first[s], last[s]):
            occ[g, lo[q] : hi[q]] += arr.p_tokens[q]
        gpu[s] = g
        mem[g] += demand[s]
        load[g] += arr.work[s]

    for s in np.nonzero(arr.pinned >= 0)[0]:
        place(int(s), int(arr.pinned[s]))
    for s in np.argsort(-demand, kind="stable"):
        if gpu[s] >= 0:
            continue
        over = np.zeros(G)
        for q in range(first[s], last[s]):
            seg = occ[:, lo[q] : hi[q]]
            extra = np.maximum(0.0, seg + arr.p_tokens[q] - cap) - np.maximum(0.0, seg - cap)
            over += (np.minimum(extra, arr.p_tokens[q]) * dt[lo[q] : hi[q]]).sum(axis=1)
        if by_load:
            # overflowing token-seconds, spread over the pause, are roughly recomputed
            span = max(1e-9, float((arr.p_end - arr.p_start)[first[s] : last[s]].sum()))
            score = load + arr.work[s] + over / span / arr.prefill
            tie = mem / arr.capacity
        else:
            score = over
            tie = (mem + demand[s]) / arr.capacity
        score = np.where(arr.allowed[s], score, np.inf)
        best = np.flatnonzero(score <= score.min() * (1 + 1e-9) + 1e-9)
        place(int(s), int(best[np.argmin(tie[best])]))
    return gpu


def earliest_end_keeps(arr: AgentArrays, gpu: np.ndarray) -> np.ndarray:
    """Per pause: kept by the earliest-end rule on its session's GPU (see the module)."""
    kept = np.zeros(arr.num_pauses, dtype=bool)
    gpu_of_pause = gpu[arr.p_session]
    for g in range(arr.num_gpus):
        q = np.nonzero(gpu_of_pause == g)[0]
        if not len(q):
            continue
        times = np.unique(np.concatenate([arr.p_start[q], arr.p_end[q], arr.active_t[g]]))
        used = arr.active_at(g, times).astype(np.int64)  # per segment [times[i], times[i+1])
        lo = np.searchsorted(times, arr.p_start[q])
        hi = np.searchsorted(times, arr.p_end[q])
        cap = int(arr.capacity[g])
        for k in np.lexsort((arr.p_start[q], arr.p_end[q])):
            a, b, t = lo[k], hi[k], int(arr.p_tokens[q[k]])
            if used[a:b].max() + t <= cap:
                used[a:b] += t
                kept[q[k]] = True
    return kept


def greedy_plan(arr: AgentArrays, objective: str = "min_recompute_s") -> Plan:
    """The greedy plan (feasible for every objective)."""
    gpu = greedy_affinity(arr, objective)
    return Plan(gpu, earliest_end_keeps(arr, gpu))
