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
from .data import MultiResourceArrays

TOL = 1e-9


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
) -> list[tuple[int, int, list[tuple[int, int]]]] | None:
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

    order = sorted(
        range(arr.num_jobs), key=lambda j: (-arr.job_gpus[j], -arr.prof_cpu[first.get(j, 0)])
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
        for p in options:
            per = need(p)
            if not split[j]:
                ok = (free >= g * per * (1 - TOL) - TOL).all(axis=1)
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
            continue
        if split[j]:
            return None
        cheap_j = _cheapest(arr, options)
        for s in np.argsort(-(free[:, 1:] * scale[None, 1:]).sum(axis=1), kind="stable"):
            if free[s, 0] < g:
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
            break
        if not placed:
            return None
    return [(j, cur[j], where[j]) for j in order]


def greedy_packing(
    arr: MultiResourceArrays, preferred: dict[int, int]
) -> list[tuple[int, int, list[tuple[int, int]]]] | None:
    """Place every job: ``[(job, flat profile, [(server, gpus), ...]), ...]`` or ``None``.

    First try ``preferred`` (job -> flat profile, e.g. the knapsack's choice). If that fails,
    pack every job at its cheapest fair-share profile (which fits whenever the GPUs pack,
    since it uses at most the cluster's CPUs and memory per GPU) and then upgrade jobs, most
    valuable first, to better profiles their server still has room for.
    """
    cand = F.candidate_profiles(arr)
    by_job: dict[int, list[int]] = {}
    for p in cand:
        by_job.setdefault(int(arr.prof_job[p]), []).append(int(p))
    caps = np.stack([arr.srv_gpus, arr.srv_cpus, arr.srv_mem], axis=1).astype(float)
    packed = _pack(arr, preferred, by_job, caps.copy())
    if packed is None:
        cheapest = {j: _cheapest(arr, ps) for j, ps in by_job.items()}
        packed = _pack(arr, cheapest, by_job, caps.copy())
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


def start_vector(
    arr: MultiResourceArrays,
    m: pyo.ConcreteModel,
    cm: CompiledModel,
    packing: list[tuple[int, int, list[tuple[int, int]]]],
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
    return x
