"""Serving mode (Helix): the arc-flow model over layer boundaries (see
``models/pipeline_partition.md``).

Helix's MILP gives every node an integer ``start`` and a one-hot length, and switches each
link on with big-M rows ``start_j = start_i + k_i``. Here a node's range is a column: an
*arc* ``[s, s + k)`` of a node *group* on the boundary line ``0..L``:

* identical nodes (same throughput table, same links, every node-to-node link of the
  group able to carry whatever the nodes can process) form one group and the arc's
  column ``hold[a]`` counts how many of them hold that range (:func:`node_groups`:
  exact, and it removes the symmetry between identical nodes);
* ``flow[a] <= cap_a * hold[a]`` carries tokens through those nodes; flow is conserved
  at each boundary (``c_enter``, ``c_leave``) through ``link_flow`` columns per linked
  group pair and boundary: no switches, no big-M;
* a warm start (:func:`warm_start`): the best *segment pipeline* by a dynamic programme
  over the layer line and the nodes used, found by bisection on the throughput, repeated
  on the nodes left over; its value ``F0`` gives the cover rows ``c_cover`` (every layer
  is held with at least ``F0`` tokens/s of capacity, capped at ``F0`` per arc, and its
  rounded "level" versions) and the lower bound ``throughput >= F0``: they hold for every
  placement at least as good as the warm start, so for every optimal one.

Everything is in the user's units (tokens/s): the exported model's objective is the
reported throughput.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyomo.environ as pyo

from ...contract import Built
from ...pyomo_ext import LinearRows
from .data import SINK, SOURCE, ServingInstance

INF = float("inf")
COVER_SLACK = 1e-9
"""Relative slack on the warm start's value in ``c_cover`` and ``throughput >= F0`` (the
start must stay feasible under HiGHS's tolerances)."""
COVER_LEVELS = (2, 3, 4)
"""``k`` of the cover rows ``c_cover_<k>`` (measured: 2-4 prove Helix's clusters and the
generated 16-node one at the root; adding 6 made HiGHS slower)."""
DP_MAX_STATES = 2_000_000
"""The warm-start DP runs when ``layers x prod(group size + 1)`` is at most this (measured:
630,000 states, 32 nodes in 4 groups on 96 layers, take 3 s)."""


# ----------------------------------------------------------------------------- groups
@dataclass(frozen=True)
class Group:
    """Identical nodes: one throughput table, the same links, interchangeable."""

    members: tuple[int, ...]
    table: tuple[float, ...]
    """Tokens/s holding 1..K layers (K = the most layers a member holds)."""
    source_cap: float
    """Capacity of the source link of each member (0: none)."""
    sink_cap: float

    @property
    def size(self) -> int:
        return len(self.members)


@dataclass(frozen=True)
class GroupLink:
    """Every member of ``src`` links to every member of ``dst`` (``src == dst``: the
    members are linked to each other); ``cap`` is finite only for a link between two
    single nodes that can limit the flow."""

    src: int
    dst: int
    cap: float


@dataclass(frozen=True)
class Network:
    groups: tuple[Group, ...]
    links: tuple[GroupLink, ...]
    complete: bool
    """Every group pair is linked with links that never limit the flow (and every group
    of two or more nodes is linked within): the warm-start DP applies."""


def _link_caps(
    inst: ServingInstance,
) -> tuple[dict[tuple[int, int], float], np.ndarray, np.ndarray]:
    idx = inst.node_index
    n = len(inst.nodes)
    src, snk = np.zeros(n), np.zeros(n)
    caps: dict[tuple[int, int], float] = {}
    for ln in inst.links:
        if ln.from_ == SOURCE:
            src[idx[ln.to]] = ln.capacity_tokens_s
        elif ln.to == SINK:
            snk[idx[ln.from_]] = ln.capacity_tokens_s
        else:
            caps[idx[ln.from_], idx[ln.to]] = ln.capacity_tokens_s
    return caps, src, snk


def node_groups(inst: ServingInstance, aggregate: bool = True) -> Network:
    """Group identical nodes (exactly: a placement of the groups' counts turns into a
    placement of the nodes with the same throughput).

    Nodes ``i`` and ``j`` are grouped when they have the same table (up to ``layers``),
    the same source and sink capacities (each clipped at the node's best throughput),
    every other node links to both or to neither in each direction, ``i`` and ``j`` are
    linked both ways or not at all, and every node-to-node link they have is *redundant*:
    its capacity is at least the smaller best throughput of its two ends, which bounds
    what it can ever carry. Links that can limit the flow keep their nodes single.
    """
    n = len(inst.nodes)
    tables = [
        tuple(nd.throughput_by_layers[: inst.max_layers(i)]) for i, nd in enumerate(inst.nodes)
    ]
    tmax = np.array([max(t) for t in tables])
    caps, src, snk = _link_caps(inst)
    src_c = np.minimum(src, tmax)
    snk_c = np.minimum(snk, tmax)
    out: list[set[int]] = [set() for _ in range(n)]
    inn: list[set[int]] = [set() for _ in range(n)]
    limiting = np.zeros(n, dtype=bool)
    for (i, j), c in caps.items():
        out[i].add(j)
        inn[j].add(i)
        if c < min(tmax[i], tmax[j]):
            limiting[i] = limiting[j] = True
    assigned = np.full(n, -1)
    groups: list[list[int]] = []
    for closed in (True, False):  # true twins (linked), then false twins (not linked)
        keys: dict[Any, list[int]] = {}
        for i in range(n):
            if assigned[i] >= 0 or limiting[i] or not aggregate:
                continue
            o = frozenset(out[i] | {i}) if closed else frozenset(out[i])
            p = frozenset(inn[i] | {i}) if closed else frozenset(inn[i])
            keys.setdefault((tables[i], src_c[i], snk_c[i], o, p), []).append(i)
        for members in keys.values():
            if len(members) > 1:
                for i in members:
                    assigned[i] = len(groups)
                groups.append(members)
    for i in range(n):
        if assigned[i] < 0:
            assigned[i] = len(groups)
            groups.append([i])
    # order groups by their first member (deterministic, follows the instance)
    order = sorted(range(len(groups)), key=lambda g: groups[g][0])
    renum = {g: k for k, g in enumerate(order)}
    groups = [groups[g] for g in order]
    assigned = np.array([renum[int(g)] for g in assigned])
    out_groups = tuple(
        Group(tuple(mem), tables[mem[0]], float(src_c[mem[0]]), float(snk_c[mem[0]]))
        for mem in groups
    )
    glinks: dict[tuple[int, int], float] = {}
    for (i, j), c in caps.items():
        gi, gj = int(assigned[i]), int(assigned[j])
        red = c >= min(tmax[i], tmax[j])
        glinks[gi, gj] = INF if red else float(c)
    links = tuple(GroupLink(a, b, c) for (a, b), c in sorted(glinks.items()))
    G = len(out_groups)
    complete = all(
        glinks.get((a, b), 0.0) == INF
        for a in range(G)
        for b in range(G)
        if a != b or out_groups[a].size > 1
    )
    return Network(out_groups, links, complete)


# ----------------------------------------------------------------------------- arcs
@dataclass(frozen=True)
class Arcs:
    """The columns ``hold[a]`` / ``flow[a]``: group ``group[a]`` holding
    ``[start[a], start[a] + length[a])`` with capacity ``cap[a]`` tokens/s per node."""

    group: np.ndarray
    start: np.ndarray
    length: np.ndarray
    cap: np.ndarray

    @property
    def end(self) -> np.ndarray:
        return self.start + self.length

    def __len__(self) -> int:
        return len(self.group)


def arcs_of(net: Network, L: int) -> Arcs:
    """Every range a group can usefully hold: one starting at 0 needs a source link, one
    ending at ``L`` a sink link, others an incoming / outgoing group link."""
    has_in = {lk.dst for lk in net.links}
    has_out = {lk.src for lk in net.links}
    g_, s_, k_, c_ = [], [], [], []
    for g, grp in enumerate(net.groups):
        K = len(grp.table)
        for k in range(1, K + 1):
            s = np.arange(0, L - k + 1)
            e = s + k
            ok = np.where(s == 0, grp.source_cap > 0, g in has_in)
            ok &= np.where(e == L, grp.sink_cap > 0, g in has_out)
            s = s[ok]
            e = s + k
            cap = np.full(len(s), grp.table[k - 1])
            cap = np.where(s == 0, np.minimum(cap, grp.source_cap), cap)
            cap = np.where(e == L, np.minimum(cap, grp.sink_cap), cap)
            g_.append(np.full(len(s), g))
            s_.append(s)
            k_.append(np.full(len(s), k))
            c_.append(cap)
    cat = lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)  # noqa: E731
    return Arcs(cat(g_, np.int64), cat(s_, np.int64), cat(k_, np.int64), cat(c_, float))


# ----------------------------------------------------------------------------- warm start
@dataclass(frozen=True)
class Segment:
    start: int
    length: int
    counts: tuple[int, ...]
    """Nodes of each group holding exactly this segment."""


@dataclass(frozen=True)
class Pipeline:
    segments: tuple[Segment, ...]
    tokens_s: float


@dataclass(frozen=True)
class WarmStart:
    pipelines: tuple[Pipeline, ...] = ()
    seconds: float = 0.0
    method: str = "none"

    @property
    def tokens_s(self) -> float:
        return float(sum(p.tokens_s for p in self.pipelines))


def _seg_caps(net: Network, L: int, s: int, k: int) -> np.ndarray:
    out = np.zeros(len(net.groups))
    for g, grp in enumerate(net.groups):
        if k > len(grp.table):
            continue
        c = grp.table[k - 1]
        if s == 0:
            c = min(c, grp.source_cap)
        if s + k == L:
            c = min(c, grp.sink_cap)
        out[g] = c
    return out


def _compositions(caps: np.ndarray, limit: np.ndarray, target: float) -> list[tuple[int, ...]]:
    """Pareto-minimal node counts per group whose capacities sum to at least ``target``."""
    G = len(caps)
    found: list[tuple[int, ...]] = []

    def rec(g: int, acc: list[int], total: float) -> None:
        if total >= target:
            found.append(tuple(acc + [0] * (G - g)))
            return
        if g == G:
            return
        c = caps[g]
        top = int(limit[g]) if c > 0 else 0
        for x in range(0, top + 1):
            t = total + x * c
            rec(g + 1, [*acc, x], t)
            if t >= target:
                break

    rec(0, [], 0.0)
    # keep the minimal ones (no other found is <= componentwise)
    arr = np.array(found, dtype=np.int64).reshape(-1, G)
    keep = []
    for i in range(len(arr)):
        dom = np.all(arr <= arr[i], axis=1) & np.any(arr < arr[i], axis=1)
        if not dom.any():
            keep.append(tuple(int(v) for v in arr[i]))
    return sorted(set(keep))


def _shift(a: np.ndarray, x: tuple[int, ...]) -> np.ndarray:
    """``out[u + x] = a[u]`` (zeros shifted in, overflow dropped)."""
    out = np.zeros_like(a)
    src = tuple(slice(0, a.shape[d] - x[d]) for d in range(a.ndim))
    dst = tuple(slice(x[d], a.shape[d]) for d in range(a.ndim))
    if all(a.shape[d] - x[d] > 0 for d in range(a.ndim)):
        out[dst] = a[src]
    return out


class _SegmentDP:
    """Reachability over (boundary, nodes used per group) for segment pipelines whose
    every segment has capacity >= target."""

    def __init__(self, net: Network, L: int, avail: np.ndarray):
        self.net, self.L, self.avail = net, L, avail
        self.kmax = max(len(g.table) for g in net.groups)
        self._caps: dict[tuple[bool, bool, int], np.ndarray] = {}

    def caps(self, s: int, k: int) -> np.ndarray:
        key = (s == 0, s + k == self.L, k)
        if key not in self._caps:
            self._caps[key] = _seg_caps(self.net, self.L, s, k)
        return self._caps[key]

    def upper(self) -> float:
        """No pipeline carries more than the nodes that can hold layer 0."""
        return float(
            sum(
                max(self.caps(0, k)[g] for k in range(1, len(grp.table) + 1)) * grp.size
                for g, grp in enumerate(self.net.groups)
            )
        )

    def candidates(self, limit: int = 2_000_000) -> np.ndarray | None:
        """Every capacity a segment can have (sorted, distinct), or ``None`` if there are
        more than ``limit`` combinations to enumerate."""
        shape = tuple(int(v) + 1 for v in self.avail)
        if math.prod(shape) * 4 * self.kmax > limit:
            return None
        grids = np.meshgrid(*[np.arange(n) for n in shape], indexing="ij")
        vals = []
        for k in range(1, min(self.kmax, self.L) + 1):
            for first, last in ((True, False), (False, False), (False, True), (True, True)):
                s = 0 if first else 1
                if last and s + k != self.L and not (first and k == self.L):
                    s = self.L - k
                if (s == 0) != first or (s + k == self.L) != last or s < 0:
                    continue
                c = self.caps(s, k)
                tot = sum(g * c[i] for i, g in enumerate(grids))
                vals.append(np.asarray(tot).ravel())
        allv = np.unique(np.concatenate(vals)) if vals else np.zeros(0)
        return allv[allv > 0]

    def run(self, target: float) -> Pipeline | None:
        L, shape = self.L, tuple(int(v) + 1 for v in self.avail)
        comps: dict[tuple[bool, bool, int], list[tuple[int, ...]]] = {}
        reach = [np.zeros(shape, dtype=bool) for _ in range(L + 1)]
        reach[0][(0,) * len(shape)] = True
        for p in range(L):
            if not reach[p].any():
                continue
            for k in range(1, min(self.kmax, L - p) + 1):
                key = (p == 0, p + k == L, k)
                if key not in comps:
                    comps[key] = _compositions(self.caps(p, k), self.avail, target)
                for x in comps[key]:
                    reach[p + k] |= _shift(reach[p], x)
        if not reach[L].any():
            return None
        # the end state using the fewest nodes (more left for the next pipeline)
        states = np.argwhere(reach[L])
        u = states[np.lexsort((*states.T[::-1], states.sum(axis=1)))[0]]
        segs: list[Segment] = []
        e = L
        while e > 0:
            for k in range(1, min(self.kmax, e) + 1):
                p = e - k
                key = (p == 0, e == L, k)
                hit = None
                for x in comps.get(key, []):
                    prev = u - np.array(x)
                    if (prev >= 0).all() and reach[p][tuple(prev)]:
                        hit = (p, x, prev)
                        break
                if hit is not None:
                    break
            else:  # pragma: no cover - reachability guarantees a predecessor
                return None
            p, x, u = hit
            segs.append(Segment(p, e - p, tuple(int(v) for v in x)))
            e = p
        segs.reverse()
        value = min(float(np.dot(self.caps(s.start, s.length), s.counts)) for s in segs)
        return Pipeline(tuple(segs), value)


class _ChainDP(_SegmentDP):
    """Reachability over (boundary, nodes used per group, group of the last segment) for
    chains whose segments are held by nodes of one group, consecutive segments' groups
    linked (a link that can limit the flow carrying at least the target): the warm
    start of networks that are not completely linked."""

    def __init__(self, net: Network, L: int, avail: np.ndarray):
        super().__init__(net, L, avail)
        self.link = {(lk.src, lk.dst): lk.cap for lk in net.links}

    def candidates(self, limit: int = 2_000_000) -> np.ndarray | None:
        vals = [np.array([lk.cap for lk in self.net.links if math.isfinite(lk.cap)])]
        for k in range(1, min(self.kmax, self.L) + 1):
            for s in {0, self.L - k, min(1, self.L - k)}:
                c = self.caps(s, k)
                for g, n in enumerate(self.avail):
                    vals.append(c[g] * np.arange(1, int(n) + 1))
        allv = np.unique(np.concatenate(vals))
        return allv[allv > 0]

    def _need(self, c: float, target: float) -> int:
        return max(1, math.ceil(target / c * (1 - 1e-12))) if c > 0 else 0

    def _linked(self, h: int, g: int, target: float) -> bool:
        cap = self.link.get((h, g))
        return cap is not None and cap >= target

    def run(self, target: float) -> Pipeline | None:
        L, G = self.L, len(self.net.groups)
        shape = tuple(int(v) + 1 for v in self.avail)
        zero = np.zeros(shape, dtype=bool)
        start = zero.copy()
        start[(0,) * G] = True
        reach: list[list[np.ndarray | None]] = [[None] * G for _ in range(L + 1)]
        for p in range(L):
            if p > 0 and all(r is None for r in reach[p]):
                continue
            for k in range(1, min(self.kmax, L - p) + 1):
                caps = self.caps(p, k)
                for g in range(G):
                    x = self._need(caps[g], target)
                    if x == 0 or x > self.avail[g]:
                        continue
                    if p == 0:
                        acc = start
                    else:
                        acc = zero.copy()
                        for h in range(G):
                            r = reach[p][h]
                            if r is not None and self._linked(h, g, target):
                                acc |= r
                    shift = tuple(x if d == g else 0 for d in range(G))
                    got = _shift(acc, shift)
                    if got.any():
                        cur = reach[p + k][g]
                        reach[p + k][g] = got if cur is None else cur | got
        ends = [(g, r) for g, r in enumerate(reach[L]) if r is not None and r.any()]
        if not ends:
            return None
        best_u, best_g = None, -1
        for g, r in ends:
            st = np.argwhere(r)
            u = st[np.argmin(st.sum(axis=1))]
            if best_u is None or u.sum() < best_u.sum():
                best_u, best_g = u, g
        assert best_u is not None
        segs: list[Segment] = []
        e, g, u = L, best_g, best_u
        while e > 0:
            hit = None
            for k in range(1, min(self.kmax, e) + 1):
                p = e - k
                x = self._need(self.caps(p, k)[g], target)
                if x == 0:
                    continue
                prev = u.copy()
                prev[g] -= x
                if (prev < 0).any():
                    continue
                if p == 0:
                    if not prev.any():
                        hit = (p, x, prev, -1)
                        break
                    continue
                for h in range(G):
                    r = reach[p][h]
                    if r is not None and self._linked(h, g, target) and r[tuple(prev)]:
                        hit = (p, x, prev, h)
                        break
                if hit is not None:
                    break
            if hit is None:  # pragma: no cover - reachability guarantees a predecessor
                return None
            p, x, prev, h = hit
            counts = tuple(x if d == g else 0 for d in range(G))
            segs.append(Segment(p, e - p, counts))
            e, g, u = p, h, prev
        segs.reverse()
        value = min(float(np.dot(self.caps(sg.start, sg.length), sg.counts)) for sg in segs)
        for s1, s2 in itertools.pairwise(segs):
            h = int(np.flatnonzero(s1.counts)[0])
            g2 = int(np.flatnonzero(s2.counts)[0])
            value = min(value, self.link[h, g2])
        return Pipeline(tuple(segs), value)


def warm_start(
    inst: ServingInstance, net: Network, time_budget_s: float | None = None
) -> WarmStart:
    """Segment pipelines: each segment a layer range held by a set of nodes in parallel;
    the best one by bisection on its throughput (a DP decides whether a target is
    reachable with the nodes available), then again with the nodes left over.

    When the groups are not completely linked, the pipelines are chains whose segments
    are held by nodes of one group and whose consecutive groups are linked
    (:class:`_ChainDP`). Runs when the DP's state space is small (``DP_MAX_STATES``);
    otherwise returns no start. With ``time_budget_s`` the bisection stops when the
    budget is spent (keeping the best pipeline found).
    """
    t0 = time.perf_counter()
    L = inst.layers
    avail = np.array([g.size for g in net.groups], dtype=np.int64)
    states = L * math.prod(int(v) + 1 for v in avail) * (1 if net.complete else len(net.groups))
    if states > DP_MAX_STATES:
        return WarmStart(seconds=time.perf_counter() - t0)
    kind = _SegmentDP if net.complete else _ChainDP
    pipes: list[Pipeline] = []
    while avail.sum() > 0:
        dp = kind(net, L, avail)
        best = dp.run(1e-300)  # any pipeline at all
        if best is None:
            break
        # reachability is monotone in the target and the best value is one segment's
        # capacity: bisect over the sorted capacities (or over the reals if too many)
        cands = dp.candidates()
        if cands is not None:
            cands = cands[cands > best.tokens_s]
            lo_i, hi_i = 0, len(cands)  # cands[:lo_i] reachable, cands[hi_i:] not
            while lo_i < hi_i and not _spent(t0, time_budget_s):
                mid_i = (lo_i + hi_i) // 2
                got = dp.run(float(cands[mid_i]))
                if got is None:
                    hi_i = mid_i
                else:
                    best = got
                    lo_i = int(np.searchsorted(cands, got.tokens_s, side="right"))
        else:
            lo, hi = float(best.tokens_s), dp.upper()
            for _ in range(60):
                if hi <= lo * (1 + 1e-9) or _spent(t0, time_budget_s):
                    break
                mid = (lo + hi) / 2
                got = dp.run(mid)
                if got is None:
                    hi = mid
                else:
                    best, lo = got, got.tokens_s
        if best is None or best.tokens_s <= 0:
            break
        pipes.append(best)
        used = np.sum([s.counts for s in best.segments], axis=0)
        avail = avail - used
    return WarmStart(
        tuple(pipes), time.perf_counter() - t0, "segment_dp" if net.complete else "chain_dp"
    )


def _spent(t0: float, budget: float | None) -> bool:
    return budget is not None and time.perf_counter() - t0 > budget


# ----------------------------------------------------------------------------- model
@dataclass(frozen=True)
class ServingLayout:
    net: Network
    arcs: Arcs
    link_pair: np.ndarray
    """Per ``link_flow`` column: the index into ``net.links``."""
    link_boundary: np.ndarray
    start: WarmStart
    cover: bool
    theta: float
    """Threshold of the cover rows and lower bound of ``throughput`` (0: none)."""
    improve: float | None
    """``theta = F0 (1 + improve)``: only placements better than the warm start."""


def build(
    inst: ServingInstance,
    use_warm_start: bool = True,
    cover_cuts: bool = True,
    aggregate: bool = True,
    improve: float | None = None,
    start: WarmStart | None = None,
) -> Built:
    """The arc-flow MILP (see the module docstring and the model card).

    With a warm start of value ``F0`` and ``cover_cuts``, the cover rows are written for
    the threshold ``theta = F0`` (the start is feasible; the model's optimum is the
    answer) or, with ``improve = eps``, for ``theta = F0 (1 + eps)``: the model then
    holds only placements better than the start, and is infeasible when the start is
    optimal within ``eps``.
    """
    L = inst.layers
    net = node_groups(inst, aggregate)
    arcs = arcs_of(net, L)
    if start is None:
        start = warm_start(inst, net) if use_warm_start else WarmStart()
    A, G = len(arcs), len(net.groups)
    ends_at = {(int(g), int(e)) for g, e in zip(arcs.group, arcs.end, strict=True)}
    starts_at = {(int(g), int(s)) for g, s in zip(arcs.group, arcs.start, strict=True)}
    lp, lb = [], []
    for p, lk in enumerate(net.links):
        for b in range(1, L):
            if (lk.src, b) in ends_at and (lk.dst, b) in starts_at:
                lp.append(p)
                lb.append(b)
    link_pair = np.array(lp, dtype=np.int64)
    link_boundary = np.array(lb, dtype=np.int64)
    Q = len(link_pair)

    m = pyo.ConcreteModel(name="pipeline_partition_serving")
    m.ARCS = pyo.RangeSet(0, A - 1)
    m.LINK_FLOWS = pyo.RangeSet(0, Q - 1)
    sizes = np.array([g.size for g in net.groups])
    m.hold = pyo.Var(
        m.ARCS,
        domain=pyo.NonNegativeIntegers,
        bounds=lambda _m, a: (0, int(sizes[arcs.group[a]])),
    )
    m.flow = pyo.Var(m.ARCS, domain=pyo.NonNegativeReals)
    m.link_flow = pyo.Var(m.LINK_FLOWS, domain=pyo.NonNegativeReals)
    F0 = start.tokens_s
    cover = cover_cuts and F0 > 0
    theta = 0.0
    if cover:
        theta = F0 * (1 + improve) if improve is not None else F0 * (1 - COVER_SLACK)
    m.throughput = pyo.Var(bounds=(theta, None))
    cols = [*m.hold.values(), *m.flow.values(), *m.link_flow.values(), m.throughput]
    H, Fl, LF, T = 0, A, 2 * A, 2 * A + Q
    ar = np.arange(A)

    # c_group_size[g]: sum_a hold[a] <= size(g)
    m.c_group_size = LinearRows.from_coo(
        arcs.group, H + ar, np.ones(A), G, np.full(G, -INF), sizes.astype(float), cols
    )
    # c_arc_capacity[a]: flow[a] - cap[a] * hold[a] <= 0
    m.c_arc_capacity = LinearRows.from_coo(
        np.concatenate([ar, ar]),
        np.concatenate([Fl + ar, H + ar]),
        np.concatenate([np.ones(A), -arcs.cap]),
        A,
        np.full(A, -INF),
        np.zeros(A),
        cols,
    )
    # c_enter[(g, b)]: flow into g's arcs starting at b = link flow into g at b
    enter_keys = sorted({(g, s) for g, s in starts_at if s > 0})
    leave_keys = sorted({(g, e) for g, e in ends_at if e < L})
    ek = {key: r for r, key in enumerate(enter_keys)}
    lk_ = {key: r for r, key in enumerate(leave_keys)}
    rows, cs, vs = [], [], []
    for a in range(A):
        key = (int(arcs.group[a]), int(arcs.start[a]))
        if key in ek:
            rows.append(ek[key])
            cs.append(Fl + a)
            vs.append(1.0)
    for q in range(Q):
        key = (net.links[link_pair[q]].dst, int(link_boundary[q]))
        rows.append(ek[key])
        cs.append(LF + q)
        vs.append(-1.0)
    E = len(enter_keys)
    m.c_enter = LinearRows.from_coo(
        np.array(rows, dtype=np.int64),
        np.array(cs, dtype=np.int64),
        np.array(vs),
        E,
        np.zeros(E),
        np.zeros(E),
        cols,
    )
    rows, cs, vs = [], [], []
    for a in range(A):
        key = (int(arcs.group[a]), int(arcs.end[a]))
        if key in lk_:
            rows.append(lk_[key])
            cs.append(Fl + a)
            vs.append(1.0)
    for q in range(Q):
        key = (net.links[link_pair[q]].src, int(link_boundary[q]))
        rows.append(lk_[key])
        cs.append(LF + q)
        vs.append(-1.0)
    V = len(leave_keys)
    m.c_leave = LinearRows.from_coo(
        np.array(rows, dtype=np.int64),
        np.array(cs, dtype=np.int64),
        np.array(vs),
        V,
        np.zeros(V),
        np.zeros(V),
        cols,
    )
    # c_link_capacity[p]: a link between two single nodes that can limit the flow
    finite = [p for p, lk in enumerate(net.links) if math.isfinite(lk.cap)]
    pr = {p: r for r, p in enumerate(finite)}
    sel = np.array([q for q in range(Q) if int(link_pair[q]) in pr], dtype=np.int64)
    P = len(finite)
    m.c_link_capacity = LinearRows.from_coo(
        np.array([pr[int(link_pair[q])] for q in sel], dtype=np.int64),
        LF + sel,
        np.ones(len(sel)),
        P,
        np.full(P, -INF),
        np.array([net.links[p].cap for p in finite]),
        cols,
    )
    # c_throughput: throughput = flow out of the source
    src_arcs = np.nonzero(arcs.start == 0)[0]
    m.c_throughput = LinearRows.from_coo(
        np.zeros(len(src_arcs) + 1, dtype=np.int64),
        np.concatenate([Fl + src_arcs, [T]]),
        np.concatenate([-np.ones(len(src_arcs)), [1.0]]),
        1,
        np.zeros(1),
        np.zeros(1),
        cols,
    )
    # with throughput >= theta, every layer is held with theta tokens/s of capacity; with
    # x[a] = min(cap[a] / theta, 1):
    # c_cover_capacity[l]: sum_{a holds l} x[a] hold[a] >= 1
    # c_cover_<k>[l]:      sum_{a holds l} w_k[a] hold[a] >= 1,
    #   w_k = 1 if x = 1 else (floor((k - 1) x) + 1) / k   (k = 2: one node that alone
    #   carries theta, or at least two nodes)
    if cover:
        held_r = [np.arange(int(s_), int(e_)) for s_, e_ in zip(arcs.start, arcs.end, strict=True)]
        rr = np.concatenate(held_r)
        cc = np.repeat(H + ar, arcs.length)
        x = np.minimum(arcs.cap / theta, 1.0)
        m.c_cover_capacity = LinearRows.from_coo(
            rr, cc, np.repeat(x, arcs.length), L, np.ones(L), np.full(L, INF), cols
        )
        for k in COVER_LEVELS:
            # (x shaded down by 1e-12 so that rounding never lifts a weight)
            w = np.where(arcs.cap >= theta, 1.0, (np.floor((k - 1) * x * (1 - 1e-12)) + 1) / k)
            m.add_component(
                f"c_cover_{k}",
                LinearRows.from_coo(
                    rr, cc, np.repeat(w, arcs.length), L, np.ones(L), np.full(L, INF), cols
                ),
            )
    m.obj = pyo.Objective(expr=m.throughput, sense=pyo.maximize)
    layout = ServingLayout(net, arcs, link_pair, link_boundary, start, cover, theta, improve)
    return Built(m, layout)


def start_vector(built: Built, compiled: Any) -> np.ndarray | None:
    """The warm start as one value per compiled column (``None`` without one)."""
    lay: ServingLayout = built.layout
    if not lay.start.pipelines or lay.improve is not None:
        return None
    arcs, net = lay.arcs, lay.net
    index = {
        (int(g), int(s), int(k)): a
        for a, (g, s, k) in enumerate(zip(arcs.group, arcs.start, arcs.length, strict=True))
    }
    qidx = {
        (int(p), int(b)): q
        for q, (p, b) in enumerate(zip(lay.link_pair, lay.link_boundary, strict=True))
    }
    pidx = {(lk.src, lk.dst): p for p, lk in enumerate(net.links)}
    hold = np.zeros(len(arcs))
    flow = np.zeros(len(arcs))
    link = np.zeros(len(lay.link_pair))
    for pipe in lay.start.pipelines:
        F = pipe.tokens_s
        seg_flows: list[dict[int, float]] = []
        for seg in pipe.segments:
            caps = {
                g: float(arcs.cap[index[g, seg.start, seg.length]])
                for g, x in enumerate(seg.counts)
                if x
            }
            C = sum(caps[g] * seg.counts[g] for g in caps)
            fl = {}
            for g, c in caps.items():
                a = index[g, seg.start, seg.length]
                hold[a] += seg.counts[g]
                fl[g] = F * seg.counts[g] * c / C
                flow[a] += fl[g]
            seg_flows.append(fl)
        for seg, f1, f2 in zip(pipe.segments[1:], seg_flows, seg_flows[1:], strict=False):
            b = seg.start
            for h, x in f1.items():
                for g, y in f2.items():
                    link[qidx[pidx[h, g], b]] += x * y / F
    m = built.model
    x0 = np.zeros(compiled.num_col)
    for var, vals in ((m.hold, hold), (m.flow, flow), (m.link_flow, link)):
        cols = compiled.columns_of(var)
        ok = cols >= 0
        x0[cols[ok]] = vals[ok]
    j = compiled.column(m.throughput)
    if j >= 0:
        x0[j] = lay.start.tokens_s
    return x0


def placement_from_counts(
    inst: ServingInstance, lay: ServingLayout, hold: np.ndarray
) -> list[tuple[int, int]]:
    """Per node ``(start, num_layers)``: each group's arcs handed to its members in
    order; members left over hold the first layer (and may carry flow if that helps)."""
    arcs = lay.arcs
    out: list[tuple[int, int] | None] = [None] * len(inst.nodes)
    nxt = {g: 0 for g in range(len(lay.net.groups))}
    for a in np.lexsort((arcs.start, arcs.group)):
        c = round(hold[a])
        g = int(arcs.group[a])
        for _ in range(c):
            mem = lay.net.groups[g].members
            if nxt[g] >= len(mem):
                break
            out[mem[nxt[g]]] = (int(arcs.start[a]), int(arcs.length[a]))
            nxt[g] += 1
    return [p if p is not None else (0, 1) for p in out]


def placement_of_start(inst: ServingInstance, lay: ServingLayout) -> list[tuple[int, int]]:
    hold = np.zeros(len(lay.arcs))
    index = {
        (int(g), int(s), int(k)): a
        for a, (g, s, k) in enumerate(
            zip(lay.arcs.group, lay.arcs.start, lay.arcs.length, strict=True)
        )
    }
    for pipe in lay.start.pipelines:
        for seg in pipe.segments:
            for g, x in enumerate(seg.counts):
                if x:
                    hold[index[g, seg.start, seg.length]] += x
    return placement_from_counts(inst, lay, hold)
