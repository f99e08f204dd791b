"""A greedy packing that gives the integrated MILP a starting solution.

Synergy's own scheduler picks configurations first and packs them second. This does the
same to warm-start HiGHS: take the configuration-only knapsack's profile per job, pack jobs
(largest first) on the server where they fit most tightly, and fall back to the job's next
best candidate profile when its preferred one fits nowhere. Identical servers are then
relabelled so the start satisfies the model's symmetry-breaking rows. The start is only a
hint: HiGHS checks it and the optimality proof is unchanged.
"""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo

from ...highs import CompiledModel
from . import formulations as F
from . import rules as R
from .data import MultiResourceArrays, RuleArrays

TOL = 1e-9

Packing = list[tuple[int, int, list[tuple[int, int]]]]
"""``[(job, flat profile, [(server, gpus), ...]), ...]``."""


class GroupCaps:
    """The hard placement rules a greedy packing can respect as it goes: at most
    ``limit`` tagged jobs per group (``anti_affinity``, ``max_per_group``); for ``spread``,
    tagged jobs only in the groups with fewer than ``min + max(max_skew, 1)`` of them (so
    the skew stays within ``max_skew`` as jobs are placed, when ``max_skew >= 1``); no job
    of a hard ``affinity`` rule on a server outside every group of its scope."""

    def __init__(self, arr: MultiResourceArrays):
        self.rules = [
            r
            for r in arr.rules
            if r.hard and r.rule in ("anti_affinity", "max_per_group", "spread")
        ]
        self.count = [np.zeros(r.num_groups, dtype=np.int64) for r in self.rules]
        self.outside = [r for r in arr.rules if r.hard and r.rule == "affinity"]
        self.S = arr.num_servers

    def allowed(self, j: int) -> np.ndarray:
        """Servers job ``j`` may go to now."""
        ok = np.ones(self.S, dtype=bool)
        for r, c in zip(self.rules, self.count, strict=True):
            if r.tagged[j] and r.num_groups:
                if r.rule == "spread":
                    full = c >= c.min() + max(r.limit, 1)
                    # outside every group (-1) the job does not count
                    ok &= ~np.append(full, False)[r.group_of]
                else:
                    ok &= ~np.append(c >= r.limit, False)[r.group_of]
        for r in self.outside:
            if r.tagged[j]:
                ok &= r.group_of >= 0
        return ok

    def constrains(self, j: int) -> bool:
        """Some rule here limits where job ``j`` goes."""
        return any(r.tagged[j] for r in self.rules) or any(r.tagged[j] for r in self.outside)

    def add(self, j: int, servers: list[int]) -> None:
        for r, c in zip(self.rules, self.count, strict=True):
            if r.tagged[j]:
                groups = {int(r.group_of[s]) for s in servers} - {-1}
                for g in groups:
                    c[g] += 1


def _cheapest(arr: MultiResourceArrays, ps: list[int]) -> int:
    """The profile using the least CPUs + memory (relative to the fair share per GPU),
    among those within the fair share when there are any."""
    within = [
        p
        for p in ps
        if arr.prof_cpu[p] <= arr.cpus_per_gpu * (1 + TOL)
        and arr.prof_mem[p] <= arr.mem_gb_per_gpu * (1 + TOL)
    ]
    return min(
        within or ps,
        key=lambda p: arr.prof_cpu[p] / arr.cpus_per_gpu + arr.prof_mem[p] / arr.mem_gb_per_gpu,
    )


def _pack(
    arr: MultiResourceArrays,
    first: dict[int, int],
    by_job: dict[int, list[int]],
    free: np.ndarray,
    caps: GroupCaps | None = None,
) -> Packing | None:
    """Place jobs largest first, each with ``first[j]`` or else its next best candidate, on
    the server that keeps its free CPUs and memory per free GPU closest to the cluster's.

    A job that fits nowhere is repaired: on a server with enough free GPUs, jobs already
    there are moved to their cheapest profile (smallest throughput loss first) until it fits.
    """
    split = arr.is_split()
    ratio = np.array([1.0, arr.cpus_per_gpu, arr.mem_gb_per_gpu])
    scale = 1.0 / np.maximum(free.max(axis=0), 1.0)

    def need(p: int) -> np.ndarray:
        return np.array([1.0, arr.prof_cpu[p], arr.prof_mem[p]])

    def fits(room: np.ndarray, use: np.ndarray) -> bool:
        return bool((room >= use * (1 - TOL) - TOL).all())

    if caps is None:
        order = sorted(
            range(arr.num_jobs), key=lambda j: (-arr.job_gpus[j], -arr.prof_cpu[first.get(j, 0)])
        )
    else:  # the jobs hard rules constrain first (the most constrained placements)
        order = sorted(
            range(arr.num_jobs),
            key=lambda j: (
                not caps.constrains(j),
                -arr.job_gpus[j],
                -arr.prof_cpu[first.get(j, 0)],
            ),
        )
    cur: dict[int, int] = {}
    where: dict[int, list[tuple[int, int]]] = {}
    on: list[list[int]] = [[] for _ in range(len(free))]
    for j in order:
        options = sorted(by_job.get(j, []), key=lambda p: -arr.prof_tput[p])
        if not options:
            return None
        if j in first:
            options = [first[j]] + [p for p in options if p != first[j]]
        g = int(arr.job_gpus[j])
        placed = False
        allowed = caps.allowed(j) if caps is not None else None
        for p in options:
            per = need(p)
            if not split[j]:
                ok = (free >= g * per * (1 - TOL) - TOL).all(axis=1)
                if allowed is not None:
                    ok &= allowed
                if ok.any():
                    fit = np.nonzero(ok)[0]
                    after = free[fit] - g * per
                    # imbalance: resources left beyond / below the fair share of the GPUs left
                    imb = np.abs(after[:, 1:] - after[:, :1] * ratio[None, 1:]) * scale[None, 1:]
                    s = int(fit[np.argmin(imb.sum(axis=1) + 1e-6 * after[:, 0])])
                    free[s] -= g * per
                    cur[j], where[j] = p, [(s, g)]
                    on[s].append(j)
                    placed = True
                    break
            else:
                cap = np.floor(np.min(free / per[None, :] + TOL, axis=1)).astype(int)
                if allowed is not None:
                    cap[~allowed] = 0
                if cap.sum() < g:
                    continue
                pieces, left = [], g
                for s in np.argsort(-cap, kind="stable"):
                    take = int(min(cap[s], left))
                    if take <= 0:
                        break
                    pieces.append((int(s), take))
                    free[s] -= take * per
                    left -= take
                cur[j], where[j] = p, pieces
                placed = True
                break
        if placed:
            if caps is not None:
                caps.add(j, [s for s, _ in where[j]])
            continue
        if split[j]:
            return None
        cheap_j = _cheapest(arr, options)
        for s in np.argsort(-(free[:, 1:] * scale[None, 1:]).sum(axis=1), kind="stable"):
            if free[s, 0] < g or (allowed is not None and not allowed[s]):
                continue
            room = free[s].copy()
            changes = []
            movable = sorted(
                on[s],
                key=lambda k: arr.prof_tput[cur[k]] - arr.prof_tput[_cheapest(arr, by_job[k])],
            )
            for k in movable:
                if fits(room, g * need(cheap_j)):
                    break
                ck = _cheapest(arr, by_job[k])
                if ck != cur[k]:
                    room += arr.job_gpus[k] * (need(cur[k]) - need(ck))
                    changes.append((k, ck))
            if not fits(room, g * need(cheap_j)):
                continue
            for k, ck in changes:
                cur[k] = ck
            p = next(q for q in options if fits(room, g * need(q)))
            free[s] = room - g * need(p)
            cur[j], where[j] = p, [(int(s), g)]
            on[s].append(j)
            placed = True
            if caps is not None:
                caps.add(j, [int(s)])
            break
        if not placed:
            return None
    return [(j, cur[j], where[j]) for j in order]


def _group_caps(arr: MultiResourceArrays) -> GroupCaps | None:
    return GroupCaps(arr) if any(r.hard for r in arr.rules) else None


def greedy_packing(arr: MultiResourceArrays, preferred: dict[int, int]) -> Packing | None:
    """Place every job: ``[(job, flat profile, [(server, gpus), ...]), ...]`` or ``None``.

    First try ``preferred`` (job -> flat profile, e.g. the knapsack's choice). If that fails,
    pack every job at its cheapest fair-share profile (which fits whenever the GPUs pack,
    since it uses at most the cluster's CPUs and memory per GPU) and then upgrade jobs, most
    valuable first, to better profiles their server still has room for. Hard
    ``anti_affinity``, ``max_per_group`` and ``spread`` rules are respected as jobs are
    placed (:class:`GroupCaps`; with placement rules a third order, best profiles first,
    is tried); hard ``affinity`` may be broken (then :func:`start_vector` gives no start).
    """
    cand = F.candidate_profiles(arr)
    by_job: dict[int, list[int]] = {}
    for p in cand:
        by_job.setdefault(int(arr.prof_job[p]), []).append(int(p))
    caps = np.stack([arr.srv_gpus, arr.srv_cpus, arr.srv_mem], axis=1).astype(float)
    packed = _pack(arr, preferred, by_job, caps.copy(), _group_caps(arr))
    if packed is None:
        cheapest = {j: _cheapest(arr, ps) for j, ps in by_job.items()}
        packed = _pack(arr, cheapest, by_job, caps.copy(), _group_caps(arr))
    if packed is None and arr.rules:
        # hard rules may block both orders: try the best profiles first, in job order
        packed = _pack(arr, {}, by_job, caps.copy(), _group_caps(arr))
    if packed is None:
        return None
    # upgrade pass: jobs furthest below their preferred profile first
    free = caps.copy()
    for _, p, pieces in packed:
        for s, g in pieces:
            free[s] -= g * np.array([1.0, arr.prof_cpu[p], arr.prof_mem[p]])
    split = arr.is_split()
    result = {j: (p, pieces) for j, p, pieces in packed}
    gain = {j: arr.prof_tput[preferred.get(j, p)] - arr.prof_tput[p] for j, p, _ in packed}
    for j in sorted(result, key=lambda j: -gain[j]):
        p, pieces = result[j]
        if split[j]:
            continue
        s, g = pieces[0]
        room = free[s] + g * np.array([1.0, arr.prof_cpu[p], arr.prof_mem[p]])
        for q in sorted(by_job[j], key=lambda q: -arr.prof_tput[q]):
            if arr.prof_tput[q] <= arr.prof_tput[p]:
                break
            use = g * np.array([1.0, arr.prof_cpu[q], arr.prof_mem[q]])
            if (room >= use * (1 - TOL) - TOL).all():
                free[s] = room - use
                result[j] = (q, pieces)
                break
    return [(j, p, pieces) for j, (p, pieces) in result.items()]


def cost_packing(arr: MultiResourceArrays) -> Packing | None:
    """A start for ``min_cost``: first fit, largest jobs first, each with its least
    resource-hungry candidate that fits, on the servers already in use first and then on
    the cheapest per GPU (``None`` if some job fits nowhere). Hard ``anti_affinity`` /
    ``max_per_group`` rules are respected as jobs are placed (:class:`GroupCaps`)."""
    cand = F.candidate_profiles(arr, F.MIN_COST)
    by_job: dict[int, list[int]] = {}
    for p in cand:
        by_job.setdefault(int(arr.prof_job[p]), []).append(int(p))
    free = np.stack([arr.srv_gpus, arr.srv_cpus, arr.srv_mem], axis=1).astype(float)
    S = arr.num_servers
    per_gpu = np.nan_to_num(arr.srv_cost) / arr.srv_gpus
    opened = np.zeros(S, dtype=bool)
    caps = _group_caps(arr)
    split = arr.is_split()
    out: Packing = []
    for j in sorted(range(arr.num_jobs), key=lambda j: (-arr.job_gpus[j], j)):
        options = sorted(
            by_job.get(j, []),
            key=lambda p: (
                arr.prof_cpu[p] / max(arr.cpus_per_gpu, TOL)
                + arr.prof_mem[p] / max(arr.mem_gb_per_gpu, TOL),
                -arr.prof_tput[p],
            ),
        )
        allowed = caps.allowed(j) if caps is not None else np.ones(S, dtype=bool)
        order = np.lexsort((np.arange(S), per_gpu, ~opened))
        g = int(arr.job_gpus[j])
        pieces: list[tuple[int, int]] = []
        chosen = -1
        for p in options:
            per = np.array([1.0, arr.prof_cpu[p], arr.prof_mem[p]])
            if not split[j]:
                ok = (free >= g * per * (1 - TOL) - TOL).all(axis=1) & allowed
                fit = [int(s) for s in order if ok[s]]
                if fit:
                    pieces, chosen = [(fit[0], g)], p
                    break
            else:
                cap = np.floor(np.min(free / per[None, :] + TOL, axis=1)).astype(int)
                cap[~allowed] = 0
                if cap.sum() < g:
                    continue
                left = g
                for s in order:
                    take = int(min(cap[s], left))
                    if take > 0:
                        pieces.append((int(s), take))
                        left -= take
                    if left == 0:
                        break
                chosen = p
                break
        if chosen < 0:
            return None
        per = np.array([1.0, arr.prof_cpu[chosen], arr.prof_mem[chosen]])
        for s, n in pieces:
            free[s] -= n * per
            opened[s] = True
        if caps is not None:
            caps.add(j, [s for s, _ in pieces])
        out.append((j, chosen, pieces))
    return out


def start_vector(
    arr: MultiResourceArrays,
    m: pyo.ConcreteModel,
    cm: CompiledModel,
    packing: Packing,
    layout: F.Layout | None = None,
) -> np.ndarray | None:
    """Column values of the integrated model ``m`` for a packing (``None`` if it does not map).

    ``layout`` is the model's column layout (:func:`formulations.build_integrated`);
    when omitted it is derived again from ``arr`` (it is a pure function of the data).
    """
    lay = layout if layout is not None else F.Layout.of(arr)
    S = arr.num_servers
    used = np.zeros(S)
    for _, _, pieces in packing:
        for s, g in pieces:
            used[s] += g
    # relabel identical servers so GPUs used are non-increasing along each identical run
    relabel = np.arange(S)
    if len(m.c_symmetry) > 0:
        same = set(lay.identical_next.tolist())
        s = 0
        while s < S:
            e = s
            while e + 1 < S and e in same:
                e += 1
            run = np.arange(s, e + 1)
            relabel[run[np.argsort(-used[run], kind="stable")]] = run
            s = e + 1
    x = np.zeros(cm.num_col)
    bounds = np.searchsorted(arr.prof_job, np.arange(arr.num_jobs + 1))
    cls_of = {}
    for c, members in enumerate(lay.class_members):
        for j in members:
            cls_of[int(j)] = c
    a_col = {
        (int(c), int(p), int(s)): k
        for k, (c, p, s) in enumerate(
            zip(lay.assign_cls, lay.assign_prof, lay.assign_srv, strict=True)
        )
    }
    s_col = {
        (int(p), int(s)): k
        for k, (p, s) in enumerate(zip(lay.split_prof, lay.split_srv, strict=True))
    }
    c_col = {int(p): k for k, p in enumerate(lay.choice_prof)}
    a_idx = cm.columns_of(m.assign) if len(lay.assign_prof) else np.zeros(0, dtype=np.int64)
    s_idx = cm.columns_of(m.split_gpus) if len(lay.split_prof) else np.zeros(0, dtype=np.int64)
    c_idx = cm.columns_of(m.choice) if len(lay.choice_prof) else np.zeros(0, dtype=np.int64)
    total = 0.0
    for j, p, pieces in packing:
        total += float(arr.prof_tput[p])
        if j in cls_of:
            c = cls_of[j]
            rep = int(lay.class_members[c][0])
            rp = int(bounds[rep] + (p - bounds[j]))
            k = a_col.get((c, rp, int(relabel[pieces[0][0]])))
            if k is None or a_idx[k] < 0:
                return None
            x[a_idx[k]] += 1
        else:
            k = c_col.get(p)
            if k is None or c_idx[k] < 0:
                return None
            x[c_idx[k]] = 1
            for s, g in pieces:
                ks = s_col.get((p, int(relabel[s])))
                if ks is None or s_idx[ks] < 0:
                    return None
                x[s_idx[ks]] += g
    u_idx = cm.columns_of(m.in_use)
    x[u_idx[relabel]] = (used > 0).astype(float)
    x[cm.column(m.total_throughput)] = total
    penalty = 0.0
    if lay.rules is not None:
        jobs = np.array([j for j, _, pieces in packing for _ in pieces], dtype=np.int64)
        srv = np.array([relabel[s] for _, _, pieces in packing for s, _ in pieces], dtype=np.int64)
        values = rule_values(arr, lay.rules, jobs, srv)
        if values is None:
            return None  # a hard rule is broken: HiGHS would discard the start
        for name, v in values.items():
            if len(v):
                x[cm.columns_of(m.component(name))] = v
        if lay.rules.soft:
            penalty = float(values["violation"] @ lay.rules.viol_penalty)
            x[cm.column(m.total_penalty)] = penalty
    if lay.objective == F.MIN_COST:
        x[cm.column(m.server_cost)] = float(np.nan_to_num(arr.srv_cost) @ (used > 0))
    elif lay.rules is not None and lay.rules.soft:
        x[cm.column(m.net_throughput)] = total - penalty
    return x


def rule_values(
    arr: MultiResourceArrays, rl: F.RuleLayout, jobs: np.ndarray, servers: np.ndarray
) -> dict[str, np.ndarray] | None:
    """Values of the rule columns (``touch``, ``partner_in``, ``violation``,
    ``spread_max``, ``spread_min``) for a placement of (job, server) pieces; ``None`` when
    it breaks a hard rule."""
    counts = [R.counts(rule, jobs, servers) for rule in arr.rules]
    touched = set()
    for j, s in zip(jobs.tolist(), servers.tolist(), strict=True):
        for sc in range(len(rl.scopes)):
            touched.add((j, sc, int(rl.scope_groups[sc][s])))
    touch = np.array(
        [
            float((int(j), int(sc), int(g)) in touched)
            for j, sc, g in zip(rl.touch_job, rl.touch_scope, rl.touch_group, strict=True)
        ]
    )
    partner_in = np.array(
        [
            float(counts[q].partners[g] >= lv)
            for q, g, lv in zip(rl.partner_rule, rl.partner_group, rl.partner_level, strict=True)
        ]
    )
    for q, rule in enumerate(arr.rules):
        if rule.hard and _broken(rule, counts[q]):
            return None
    viol = np.zeros(len(rl.viol_rule))
    for v, (q, g, kind) in enumerate(zip(rl.viol_rule, rl.viol_group, rl.viol_kind, strict=True)):
        rule, c = arr.rules[q], counts[q]
        if kind == "cap":
            viol[v] = max(0, int(c.tagged[g]) - rule.limit)
        elif kind in ("lone", "lone2"):
            viol[v] = sum(1 for j in c.lone_jobs[g] if bool(rule.partner[j]) == (kind == "lone2"))
        elif kind == "outside":
            viol[v] = len(c.outside)
        else:
            viol[v] = max(0, R.skew(rule, c)[0] - rule.limit)
    spread_max = np.array([float(counts[q].tagged.max()) for q in rl.spread_rule])
    spread_min = np.array([float(counts[q].tagged.min()) for q in rl.spread_rule])
    return {
        "touch": touch,
        "partner_in": partner_in,
        "violation": viol,
        "spread_max": spread_max,
        "spread_min": spread_min,
    }


def _broken(rule: RuleArrays, c: R.Counts) -> bool:
    if rule.rule in ("anti_affinity", "max_per_group"):
        return bool((c.tagged > rule.limit).any())
    if rule.rule == "affinity":
        return bool(c.lone.sum() > 0 or c.outside)
    return R.skew(rule, c)[0] > rule.limit
