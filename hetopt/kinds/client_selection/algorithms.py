"""Exact combinatorial algorithms and the FedCS heuristic for client selection.

With one shared uplink, a set of clients can all upload by the deadline ``D`` iff
uploading them in order of ``ready_s`` (earliest ready first, each as soon as the
channel and the update are ready) finishes by ``D`` (an exchange argument: see
``models/client_selection.md``). Reversing time (``t -> D - t``) turns the round into
single-machine scheduling with due dates ``d_i = D - ready_s`` and processing times
``p_i = upload_s``, all released at 0: selecting the most clients is ``1 || sum U_j``
(Moore-Hodgson, O(n log n)) and the most weight is ``1 || sum w_j U_j`` (Lawler-Moore's
dynamic program, pseudo-polynomial in the integer processing times).

Everything here works on numpy arrays, independently of Pyomo and HiGHS, so the
functions serve both as the fast path and as test oracles.
"""

from __future__ import annotations

import bisect
import heapq
import math
from dataclasses import dataclass

import numpy as np

REL_TOL = 1e-9
"""Relative time tolerance (times the deadline) used by the exact algorithms."""

DP_MAX_CELLS = 50_000_000
"""Largest Lawler-Moore table (sum over jobs of the due-date range) the fast path builds."""

_SCALES = (1, 10, 100, 1000)


def erd_schedule(ready: np.ndarray, upload: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Left-justified schedule of uploads already sorted by ready time.

    ``finish_k = max(ready_k, finish_{k-1}) + upload_k``, computed without a loop as
    ``P_k + max_{j<=k}(ready_j - P_{j-1})`` with ``P`` the prefix sums of ``upload``.

    Returns
    -------
    start, finish
        Upload start and finish times, in the given order.
    """
    ready = np.asarray(ready, dtype=float)
    upload = np.asarray(upload, dtype=float)
    if ready.size == 0:
        return ready.copy(), ready.copy()
    P = np.cumsum(upload)
    before = P - upload
    finish = P + np.maximum.accumulate(ready - before)
    return finish - upload, finish


def shared_schedule(
    ready: np.ndarray, upload: np.ndarray, selected: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ERD schedule of the ``selected`` clients (boolean mask over all clients).

    Returns ``start``, ``finish`` (NaN for clients not selected) and ``order`` (1-based
    upload position, -1 when not selected).
    """
    n = len(ready)
    idx = np.flatnonzero(selected)
    idx = idx[np.lexsort((upload[idx], ready[idx]))]
    s, f = erd_schedule(ready[idx], upload[idx])
    start = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    order = np.full(n, -1, dtype=np.int64)
    start[idx], finish[idx] = s, f
    order[idx] = np.arange(1, len(idx) + 1)
    return start, finish, order


def moore_hodgson(p: np.ndarray, d: np.ndarray, tol: float = 0.0) -> np.ndarray:
    """Moore-Hodgson: the largest set of jobs that all meet their due dates.

    Single machine, processing times ``p``, due dates ``d``, all released at 0
    (``1 || sum U_j``). Jobs are taken in earliest-due-date order; whenever the running
    total misses the current due date, the longest job so far is dropped. O(n log n).

    Parameters
    ----------
    p, d
        Processing times and due dates (same length).
    tol
        A job completing at ``d + tol`` still counts as on time.

    Returns
    -------
    numpy.ndarray
        Boolean mask of the on-time (selected) jobs.
    """
    p = np.asarray(p, dtype=float)
    d = np.asarray(d, dtype=float)
    keep = np.zeros(len(p), dtype=bool)
    cand = np.flatnonzero(p <= d + tol)  # a job longer than its due date is never on time
    order = cand[np.lexsort((p[cand], d[cand]))]
    ps_arr = p[order]
    # the heap holds ranks by processing time (ints compare faster than tuples)
    by_rank = np.argsort(ps_arr, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[by_rank] = np.arange(len(order))
    ps = ps_arr.tolist()
    ds = (d[order] + tol).tolist()
    neg_rank = (-rank).tolist()
    br = by_rank.tolist()
    heap: list[int] = []
    push, pushpop = heapq.heappush, heapq.heappushpop
    total = 0.0
    for k, pk in enumerate(ps):
        total += pk
        if total > ds[k]:  # drop the longest job so far (possibly job k itself)
            total -= ps[br[-pushpop(heap, neg_rank[k])]]
        else:
            push(heap, neg_rank[k])
    if heap:
        keep[order[by_rank[-np.asarray(heap, dtype=np.int64)]]] = True
    return keep


def integer_scale(values: np.ndarray, scales: tuple[int, ...] = _SCALES) -> int | None:
    """The smallest ``s`` in ``scales`` with every ``values * s`` a whole number.

    A value counts as whole when it is within ``1e-9`` (relative) of an integer, so
    decimal data such as ``30.5`` or ``0.1`` scale exactly. ``None`` if no scale works.
    """
    v = np.asarray(values, dtype=float)
    for s in scales:
        x = v * s
        if np.all(np.abs(x - np.round(x)) <= 1e-9 * np.maximum(1.0, np.abs(x))):
            return s
    return None


@dataclass(frozen=True)
class DpPlan:
    """Integer data for :func:`lawler_moore` (``None`` fields: the DP does not apply)."""

    scale: int
    p: np.ndarray
    d: np.ndarray
    cells: int


def dp_plan(
    p: np.ndarray, d: np.ndarray, tol: float = 0.0, max_cells: int = DP_MAX_CELLS
) -> DpPlan | None:
    """Scale processing times to integers for the Lawler-Moore DP, if it is exact and small.

    With integer processing times every completion time of a left-justified schedule is
    an integer, so ``C <= d`` iff ``C <= floor(d)``: only ``p`` must be whole numbers
    (after scaling by 1, 10, 100 or 1000), due dates are rounded down exactly.
    Returns ``None`` when no scale makes ``p`` integral or the table would exceed
    ``max_cells`` cells.
    """
    s = integer_scale(p)
    if s is None:
        return None
    pi = np.round(np.asarray(p, dtype=float) * s).astype(np.int64)
    di = np.floor(np.asarray(d, dtype=float) * s + tol * s).astype(np.int64)
    ok = pi <= di
    cells = int(np.sum(np.where(ok, di - pi + 1, 0)))
    if cells > max_cells:
        return None
    return DpPlan(s, pi, di, cells)


def lawler_moore(p: np.ndarray, d: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Lawler-Moore DP: the on-time set of largest total weight (``1 || sum w_j U_j``).

    ``F_j(t)`` = best weight of an on-time subset of the first ``j`` jobs (EDD order)
    with total processing time ``t``; ``F_j(t) = max(F_{j-1}(t), F_{j-1}(t - p_j) + w_j)``
    for ``p_j <= t <= d_j``. Time O(sum_j (d_j - p_j)), vectorised over ``t``.

    Parameters
    ----------
    p, d
        Integer processing times and due dates.
    w
        Non-negative weights.

    Returns
    -------
    numpy.ndarray
        Boolean mask of the selected jobs.
    """
    p = np.asarray(p, dtype=np.int64)
    d = np.asarray(d, dtype=np.int64)
    w = np.asarray(w, dtype=float)
    n = len(p)
    sel = np.zeros(n, dtype=bool)
    cand = np.flatnonzero((p <= d) & (w > 0))
    if cand.size == 0:
        return sel
    order = cand[np.lexsort((p[cand], d[cand]))]
    H = int(d[order].max())
    F = np.full(H + 1, -np.inf)
    F[0] = 0.0
    takes: list[np.ndarray] = []
    for j in order.tolist():
        pj, dj, wj = int(p[j]), int(d[j]), float(w[j])
        seg = F[0 : dj - pj + 1] + wj
        cur = F[pj : dj + 1]
        tk = seg > cur
        takes.append(tk)
        F[pj : dj + 1] = np.where(tk, seg, cur)
    t = int(np.argmax(F))
    for pos in range(len(order) - 1, -1, -1):
        j = int(order[pos])
        pj = int(p[j])
        tk = takes[pos]
        if pj <= t < pj + len(tk) and tk[t - pj]:
            sel[j] = True
            t -= pj
    return sel


def fedcs_greedy(
    ready: np.ndarray,
    upload: np.ndarray,
    deadline: float,
    allowed: np.ndarray | None = None,
    max_clients: int | None = None,
    tol: float = 0.0,
) -> np.ndarray:
    """FedCS's greedy client selection (Nishio & Yonetani, ICC 2019, Algorithm 2).

    Repeatedly take the remaining client that adds the least elapsed time
    ``upload_s + max(0, ready_s - elapsed)``; if the round would then end after the
    deadline, drop that client and continue (which ends the loop: every other client
    adds at least as much). O(n log n): clients in ready-time order; the best ready client
    (least ``upload_s``, then least index) from a segment tree of ranks over the ready
    prefix, the best waiting one (least ``ready_s + upload_s``, then least index) a suffix
    minimum.

    Returns
    -------
    numpy.ndarray
        Boolean mask of the clients FedCS selects.
    """
    n = len(ready)
    ok = np.ones(n, dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    cap = n if max_clients is None else max_clients
    sel = np.zeros(n, dtype=bool)
    order = np.flatnonzero(ok)
    order = order[np.argsort(ready[order], kind="stable")]  # ready-time order
    m = len(order)
    if m == 0 or cap <= 0:
        return sel
    up = upload[order]
    finish = ready[order] + up  # as Python would add them: the same doubles
    # ranks encode (value, client index) orders, so one integer compares like a tuple
    rank_up = np.empty(m, dtype=np.int64)
    rank_up[np.lexsort((order, up))] = np.arange(m)
    by_finish = np.lexsort((order, finish))
    rank_fin = np.empty(m, dtype=np.int64)
    rank_fin[by_finish] = np.arange(m)
    # the clients not ready yet are a suffix of the ready order (a client taken before
    # it is ready is ready once taken): the best of them is a suffix minimum
    wait_best = [*np.minimum.accumulate(rank_fin[::-1])[::-1].tolist(), m]
    fin_pos = by_finish.tolist()  # rank -> position in the ready order
    up_pos = np.argsort(rank_up).tolist()  # rank -> position
    size = 1 << max(0, (m - 1).bit_length())
    tree = [m] * (2 * size)  # min rank over each node's positions; m = none
    tree[size : size + m] = rank_up.tolist()
    for k in range(size - 1, 0, -1):
        a, b = tree[2 * k], tree[2 * k + 1]
        tree[k] = a if a < b else b
    rs = ready[order].tolist()
    ul = up.tolist()
    fl = finish.tolist()
    nxt = 0
    elapsed = 0.0
    limit = deadline + tol
    count = 0
    while count < cap:
        nxt = bisect.bisect_right(rs, elapsed, nxt)
        # best ready client: least rank over positions [0, nxt)
        best_rank = m
        lo, hi = size, size + nxt
        while lo < hi:
            if lo & 1:
                if tree[lo] < best_rank:
                    best_rank = tree[lo]
                lo += 1
            if hi & 1:
                hi -= 1
                if tree[hi] < best_rank:
                    best_rank = tree[hi]
            lo >>= 1
            hi >>= 1
        best = math.inf
        pick = -1
        if best_rank < m:
            pick = up_pos[best_rank]
            best = ul[pick]
        w = wait_best[nxt]
        if w < m:
            j = fin_pos[w]
            if fl[j] - elapsed < best:
                best, pick = fl[j] - elapsed, j
        if pick < 0:
            break
        if elapsed + best > limit:
            # FedCS drops this client and goes on, but ``elapsed`` is unchanged and every
            # other client adds at least ``best``: none fits any more, so stop here.
            break
        k = size + pick  # taken: out of the tree
        tree[k] = m
        k >>= 1
        while k:
            a, b = tree[2 * k], tree[2 * k + 1]
            tree[k] = a if a < b else b
            k >>= 1
        elapsed += best
        sel[order[pick]] = True
        count += 1
    return sel


def parallel_need_mbps(ready: np.ndarray, deadline: float, update_mb: float) -> np.ndarray:
    """Bandwidth (Mbit/s) a client needs to upload ``update_mb`` MB between ``ready_s``
    and the deadline: ``8 * update_mb / (deadline - ready_s)`` (inf when not positive)."""
    window = deadline - np.asarray(ready, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(window > 0, 8.0 * update_mb / np.where(window > 0, window, 1.0), np.inf)


def smallest_first(
    need: np.ndarray, budget: float, candidates: np.ndarray, limit: int
) -> np.ndarray:
    """Most items of a knapsack with unit values: take the smallest ``need`` first.

    Exact for the count objective (any feasible set of ``k`` items can be swapped for
    the ``k`` smallest). Returns a boolean mask of the chosen candidates.
    """
    n = len(need)
    sel = np.zeros(n, dtype=bool)
    idx = np.flatnonzero(candidates)
    idx = idx[np.argsort(need[idx], kind="stable")]
    cum = np.cumsum(need[idx])
    k = int(np.searchsorted(cum, budget * (1 + REL_TOL), side="right"))
    sel[idx[: min(k, limit)]] = True
    return sel


_I32_MAX = 2**31 - 1


def _max_flow(
    targets: np.ndarray,
    pc: np.ndarray,
    pk: np.ndarray,
    cnt: np.ndarray,
    caps: np.ndarray,
) -> tuple[int, np.ndarray]:
    """Max flow source -> class (target) -> client (held) -> sink (caps); returns the
    flow value and the flow on each (client, class) pair."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import maximum_flow

    C, m = len(targets), len(caps)
    src, sink = 0, C + m + 1
    rows = np.concatenate([np.zeros(C, dtype=np.int64), 1 + pk, 1 + C + np.arange(m)])
    cols = np.concatenate([1 + np.arange(C), 1 + C + pc, np.full(m, sink)])
    caps_all = np.concatenate([targets, cnt, caps]).astype(np.int64)
    # scipy's max flow counts in int32: a capacity beyond the total demand is never used
    big = caps_all > _I32_MAX
    if big.any():
        caps_all[big] = min(int(np.sum(targets)), _I32_MAX)
    caps_all = caps_all.astype(np.int32)
    g = sp.csr_array((caps_all, (rows, cols)), shape=(C + m + 2, C + m + 2))
    res = maximum_flow(g, src, sink)
    flow = sp.csr_array(res.flow)
    on_pairs = np.asarray(flow[1 + pk, 1 + C + pc]).ravel()
    return int(res.flow_value), on_pairs


def integer_assignment(
    fixed: np.ndarray,
    sample_s: np.ndarray,
    targets: np.ndarray,
    pc: np.ndarray,
    pk: np.ndarray,
    cnt: np.ndarray,
) -> tuple[float, np.ndarray] | None:
    """Exact whole-sample assignment for a fixed set of selected clients.

    Minimise ``max_i fixed_i + sample_s_i * q_i`` over integer ``take`` (per pair ``pc``
    = client position, ``pk`` = class, at most ``cnt``) meeting ``targets`` exactly.
    For a duration ``T`` client ``i`` can take ``floor((T - fixed_i) / sample_s_i)``
    samples; feasibility is a max-flow with integer capacities (so an integral flow
    exists), and the least feasible ``T`` is found by bisection over the breakpoints
    ``fixed_i + k * sample_s_i``.

    Returns
    -------
    (duration, take) or None
        ``None`` when even unlimited time cannot meet the targets with these clients.
    """
    targets = np.asarray(targets, dtype=np.int64)
    cnt = np.asarray(cnt, dtype=np.int64)
    m = len(fixed)
    need = int(targets.sum())
    held = np.zeros(m, dtype=np.int64)
    np.add.at(held, pc, cnt)
    T0 = float(fixed.max()) if m else 0.0
    if need == 0:
        return T0, np.zeros(len(pc))

    def caps_at(T: float) -> np.ndarray:
        room = np.where(
            sample_s > 0,
            np.floor((T - fixed) / np.where(sample_s > 0, sample_s, 1.0) + 1e-9),
            held,
        )
        return np.clip(np.minimum(room, held), 0, None).astype(np.int64)

    value, flow = _max_flow(targets, pc, pk, cnt, held)
    if value < need:
        return None
    slow = np.flatnonzero(sample_s > 0)
    if slow.size == 0:
        return T0, flow
    ks = [fixed[i] + sample_s[i] * np.arange(1, min(int(held[i]), need) + 1) for i in slow]
    cand = np.unique(np.concatenate([[T0], *ks]))
    cand = cand[cand >= T0]
    lo, hi = 0, len(cand) - 1  # cand[hi] gives every client all it holds (up to need)
    best = flow
    while lo < hi:
        mid = (lo + hi) // 2
        v, f = _max_flow(targets, pc, pk, cnt, caps_at(float(cand[mid])))
        if v >= need:
            hi, best = mid, f
        else:
            lo = mid + 1
    if lo == len(cand) - 1:
        v, best = _max_flow(targets, pc, pk, cnt, caps_at(float(cand[lo])))
    q = np.zeros(m)
    np.add.at(q, pc, best)
    return float(np.max(fixed + sample_s * q)), best


def max_on_time_count(p: np.ndarray, d: np.ndarray, tol: float = 0.0) -> int:
    """Largest number of on-time jobs by a dynamic program over counts (an oracle).

    ``G[k]`` = least total processing time of ``k`` on-time jobs among those seen so far
    (earliest-due-date order); job ``j`` can extend a set of ``k`` iff
    ``G[k] + p_j <= d_j``. Exact for real-valued data, O(n * answer) vectorised over
    ``k``: an independent check of :func:`moore_hodgson`, not a fast path.
    """
    p = np.asarray(p, dtype=float)
    d = np.asarray(d, dtype=float)
    order = np.lexsort((p, d))
    G = np.full(len(p) + 1, np.inf)
    G[0] = 0.0
    kmax = 0
    for j in order.tolist():
        cand = G[: kmax + 1] + p[j]
        ok = cand <= d[j] + tol
        cur = G[1 : kmax + 2]
        G[1 : kmax + 2] = np.where(ok, np.minimum(cur, cand), cur)
        if ok[kmax]:
            kmax += 1
    return kmax


def coverage_lower_bound(
    fixed: np.ndarray,
    sample_s: np.ndarray,
    targets: np.ndarray,
    pc: np.ndarray,
    pk: np.ndarray,
    cnt: np.ndarray,
    lo: float,
    hi: float,
    iters: int = 30,
) -> float:
    """A lower bound on Oort's testing duration that ignores the client cap.

    Within a duration ``T`` every client with ``fixed_i <= T`` could give
    ``floor((T - fixed_i) / sample_s_i)`` whole samples; if even all of them together
    cannot meet the targets (a max-flow), no selection finishes by ``T``. Bisection on
    ``[lo, hi]`` returns the largest ``T`` proven infeasible (``lo`` if none is), a
    valid lower bound on the whole-sample optimum. ``pc`` indexes ``fixed``.
    """
    targets = np.asarray(targets, dtype=np.int64)
    cnt = np.asarray(cnt, dtype=np.int64)
    need = int(targets.sum())
    held = np.zeros(len(fixed), dtype=np.int64)
    np.add.at(held, pc, cnt)

    def feasible(T: float) -> bool:
        room = np.where(
            sample_s > 0,
            np.floor((T - fixed) / np.where(sample_s > 0, sample_s, 1.0) + 1e-9),
            held,
        )
        caps = np.where(fixed <= T, np.clip(np.minimum(room, held), 0, None), 0)
        return _max_flow(targets, pc, pk, cnt, caps.astype(np.int64))[0] >= need

    if need == 0 or hi <= lo or feasible(lo):
        return lo
    for _ in range(iters):
        if hi - lo <= 1e-7 * max(abs(hi), 1.0):
            break
        mid = 0.5 * (lo + hi)
        if feasible(mid):
            hi = mid
        else:
            lo = mid
    return lo
