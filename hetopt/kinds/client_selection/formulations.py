"""Pyomo formulations of client selection (see ``models/client_selection.md``).

Every builder is a pure function of the instance and returns a
:class:`~hetopt.contract.Built`: the Pyomo model (no solving) and its :class:`Selection`
layout. Times are divided by the round deadline (shared uplink), bandwidths by the
budget and durations by a per-instance reference time, so every coefficient is O(1).
No constraint needs a big-M: the shared-uplink model fixes the upload order to
earliest-ready-first, which is optimal for any selected set.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo

from ...contract import Built
from ...pyomo_ext import LinearRows
from .data import ClientArrays, ClientSelectionInstance, SampleArrays
from .inputs import parallel_feasible, parallel_need, testing_members

INF = float("inf")


@dataclass(frozen=True)
class Selection:
    """Layout of every client-selection model, for its extractor.

    Attributes
    ----------
    members
        Instance index of the client of each ``select[k]`` column, in column order.
    scale
        The objective's unit per unit of the model's objective: ``weight_scale``
        (``max_weight``), ``t_ref`` (``min_duration``) or 1 (``max_clients``).
    """

    members: np.ndarray
    scale: float = 1.0


def _selection_vars(m: pyo.ConcreteModel, arr: ClientArrays, members: np.ndarray) -> list:
    m.CLIENTS = pyo.RangeSet(0, len(members) - 1) if len(members) else pyo.Set(initialize=[])
    m.select = pyo.Var(m.CLIENTS, domain=pyo.Binary)
    sel = list(m.select.values())
    for k in np.flatnonzero(arr.forced[members]):
        sel[k].setlb(1)
    return sel


def _side_rows(
    m: pyo.ConcreteModel,
    inst: ClientSelectionInstance,
    arr: ClientArrays,
    members: np.ndarray,
    sel: list,
) -> None:
    """``c_count`` (at most max_clients) and ``c_group_min`` / ``c_group_max`` rows."""
    k = len(members)
    if inst.max_clients is not None and inst.max_clients < k:
        m.c_count = LinearRows.from_coo(
            np.zeros(k, dtype=np.int64),
            np.arange(k),
            np.ones(k),
            1,
            np.array([-INF]),
            np.array([float(inst.max_clients)]),
            sel,
        )
    gpos = {g: j for j, g in enumerate(arr.groups)}
    g_of = arr.group[members]
    for name, lo_side in (("group_min", True), ("group_max", False)):
        quota = getattr(inst, name) or {}
        if not quota:
            continue
        gs = [gpos[g] for g in quota]
        row_of = np.full(len(arr.groups), -1, dtype=np.int64)
        row_of[gs] = np.arange(len(gs))
        in_row = (g_of >= 0) & (row_of[np.maximum(g_of, 0)] >= 0)
        cols = np.flatnonzero(in_row)
        rows = row_of[g_of[cols]]
        bound = np.array([float(v) for v in quota.values()])
        lower = bound if lo_side else np.full(len(gs), -INF)
        upper = np.full(len(gs), INF) if lo_side else bound
        rows_block = LinearRows.from_coo(rows, cols, np.ones(len(cols)), len(gs), lower, upper, sel)
        setattr(m, f"c_{name}", rows_block)


def _objective(
    m: pyo.ConcreteModel,
    arr: ClientArrays,
    members: np.ndarray,
    sel: list,
    objective: str,
) -> float:
    """``obj`` of the count models; returns its scale (``weight_scale``, or 1)."""
    wmax = 1.0
    if objective == "max_clients":
        coef = np.ones(len(members))
    else:
        w = arr.weight[members]
        wmax = float(w.max()) if len(w) and w.max() > 0 else 1.0
        coef = w / wmax
        m.weight_scale = pyo.Param(initialize=wmax, mutable=False)
    m.obj = pyo.Objective(
        expr=pyo.quicksum(float(c) * v for c, v in zip(coef, sel, strict=True) if c != 0)
        if np.any(coef)
        else 0.0,
        sense=pyo.maximize,
    )
    return wmax


def _start_vars(
    m: pyo.ConcreteModel, arr: ClientArrays, members: np.ndarray
) -> tuple[list, np.ndarray]:
    """``start[k]`` in ``[min(ready_k / D, 1), 1]`` (units of the deadline ``D``) for the
    members of the shared-uplink models; returns the variables and ``p_k = upload_k / D``."""
    D = arr.deadline
    r = arr.ready[members] / D
    m.start = pyo.Var(m.CLIENTS, bounds=(0.0, 1.0))
    start = list(m.start.values())
    for j in range(len(members)):
        start[j].setlb(float(min(r[j], 1.0)))
    return start, arr.upload[members] / D


def _deadline_rows(m: pyo.ConcreteModel, p: np.ndarray, xs: list) -> None:
    """``c_deadline[k]``: ``start[k] + p_k select[k] <= 1`` (columns of ``xs``:
    ``select`` 0..k-1, then ``start`` k..2k-1)."""
    k = len(p)
    if k:
        rows = np.repeat(np.arange(k), 2)
        cols = np.stack([k + np.arange(k), np.arange(k)], 1).ravel()
        vals = np.stack([np.ones(k), p], 1).ravel()
        m.c_deadline = LinearRows.from_coo(rows, cols, vals, k, np.full(k, -INF), np.ones(k), xs)


def shared_members(arr: ClientArrays) -> np.ndarray:
    """Clients the shared-uplink model needs: allowed clients that could finish alone,
    plus every ``must_include`` client (which makes the model infeasible if it cannot)."""
    return np.flatnonzero((arr.allowed & arr.can_finish) | arr.forced)


def build_shared(
    inst: ClientSelectionInstance, objective: str, members: np.ndarray | None = None
) -> Built:
    """FedCS with one shared uplink, uploads in earliest-ready-first order.

    Columns ``select[k]`` (binary) and ``start[k]`` in ``[ready_k / D, 1]`` for the member
    clients sorted by ``ready_s``; ``start`` is when the channel is free for client
    ``k`` (its upload start if selected), in units of the deadline ``D``.

    ``c_chain[k]``: ``start[k] - start[k-1] - upload_{k-1}/D * select[k-1] >= 0``;
    ``c_deadline[k]``: ``start[k] + upload_k/D * select[k] <= 1``.
    """
    arr = inst.arrays
    if members is None:
        members = shared_members(arr)
    members = members[np.lexsort((arr.upload[members], arr.ready[members]))]
    m = pyo.ConcreteModel(name="client_selection_shared")
    sel = _selection_vars(m, arr, members)
    k = len(members)
    start, p = _start_vars(m, arr, members)
    xs = [*sel, *start]  # columns: select 0..k-1, start k..2k-1
    if k > 1:
        rows = np.repeat(np.arange(k - 1), 3)
        cols = np.stack([k + np.arange(1, k), k + np.arange(k - 1), np.arange(k - 1)], 1).ravel()
        vals = np.stack([np.ones(k - 1), -np.ones(k - 1), -p[:-1]], 1).ravel()
        m.c_chain = LinearRows.from_coo(
            rows, cols, vals, k - 1, np.zeros(k - 1), np.full(k - 1, INF), xs
        )
    _deadline_rows(m, p, xs)
    _side_rows(m, inst, arr, members, sel)
    scale = _objective(m, arr, members, sel, objective)
    return Built(m, Selection(members, scale))


def parallel_members(inst: ClientSelectionInstance) -> np.ndarray:
    arr = inst.arrays
    return np.flatnonzero((arr.allowed & parallel_feasible(inst)) | arr.forced)


def build_parallel(inst: ClientSelectionInstance, objective: str) -> Built:
    """Parallel uploads with a total bandwidth budget: a 0-1 knapsack.

    ``c_bandwidth``: ``sum_k need_k / budget * select[k] <= 1`` with
    ``need_k = 8 * update_mb / (D - ready_k)`` Mbit/s.
    """
    arr = inst.arrays
    members = parallel_members(inst)
    m = pyo.ConcreteModel(name="client_selection_parallel")
    sel = _selection_vars(m, arr, members)
    k = len(members)
    if inst.bandwidth_budget_mbps is not None and k:
        need = parallel_need(inst)[members] / inst.bandwidth_budget_mbps
        m.c_bandwidth = LinearRows.from_coo(
            np.zeros(k, dtype=np.int64),
            np.arange(k),
            need,
            1,
            np.array([-INF]),
            np.ones(1),
            sel,
        )
    _side_rows(m, inst, arr, members, sel)
    scale = _objective(m, arr, members, sel, objective)
    return Built(m, Selection(members, scale))


def testing_reference(
    inst: ClientSelectionInstance, sa: SampleArrays, members: np.ndarray
) -> float:
    """A time scale close to the optimum duration, so ``z`` is O(1).

    Coarse bisection (12 max-flows) for the coverage bound
    (:func:`~.algorithms.coverage_lower_bound`) of the member clients, between 0 and
    ``max_i fixed_i + sample_s_i * min(samples_i, sum of targets)``; (> 0).
    """
    from .algorithms import coverage_lower_bound

    arr = inst.arrays
    total = np.zeros(arr.n)
    np.add.at(total, sa.client, sa.count)
    want = float(sum((inst.class_targets or {}).values()))
    fixed = arr.ready + arr.upload
    t = fixed[members] + arr.sample_s[members] * np.minimum(total[members], want)
    hi = max(float(t.max()) if len(t) else 0.0, 1e-9)
    col_of = np.full(arr.n, -1, dtype=np.int64)
    col_of[members] = np.arange(len(members))
    keep = col_of[sa.client] >= 0
    targets = np.array([(inst.class_targets or {})[c] for c in sa.classes])
    cover = coverage_lower_bound(
        fixed[members],
        arr.sample_s[members],
        targets,
        col_of[sa.client[keep]],
        sa.cls[keep],
        sa.count[keep],
        0.0,
        hi,
        iters=12,
    )
    return max(cover, hi / 4096)


COUNT_CAP = 1000.0
"""The testing MILP counts at most ``max(target, COUNT_CAP)`` samples of a class per
client (what a client holds beyond its class's target can never be used)."""


def build_testing(
    inst: ClientSelectionInstance,
    members: np.ndarray | None = None,
    relax: bool = False,
) -> Built:
    """Oort's testing-set selection (OSDI 2021, Appendix G) as a MILP.

    Choose clients (``select``) and the share of each client's samples of each class
    it contributes (``share``, so ``samples_ic * share[i,c]`` test samples) so each
    class gets exactly its target, with at most ``max_clients`` clients, minimising
    the duration ``z * t_ref`` of the slowest selected client, where client ``i`` needs
    ``ready_s + upload_s + sample_s * sum_c samples_ic * share[i,c]`` seconds.

    Samples are counted fractionally: HiGHS stalls on integer sample counts (measured:
    no incumbent after 30 s on 400 clients, against 5 s with continuous counts), and
    :func:`~.algorithms.integer_assignment` turns a selection into whole samples
    exactly afterwards (within one sample's time of this model's bound). Shares in
    ``[0, 1]`` and target rows divided by the target keep the matrix O(1).
    ``relax=True`` also relaxes ``select`` (the LP relaxation).
    """
    arr = inst.arrays
    sa = SampleArrays.from_instance(inst)
    if members is None:
        members = testing_members(inst, sa)
    m = pyo.ConcreteModel(name="client_selection_testing")
    sel = _selection_vars(m, arr, members)
    if relax:
        for v in sel:
            v.domain = pyo.UnitInterval
            if v.lb is not None and v.lb >= 1:
                v.setlb(1)
    k = len(members)
    col_of = np.full(arr.n, -1, dtype=np.int64)
    col_of[members] = np.arange(k)
    keep = col_of[sa.client] >= 0
    pc = col_of[sa.client[keep]]  # member column of each pair
    pk = sa.cls[keep]
    P = len(pc)
    targets = np.array([float((inst.class_targets or {})[c]) for c in sa.classes])
    # a client never gives a class more than its target, so counts above
    # max(target, COUNT_CAP) are capped (exact): a count of 1e9 against a target of 60
    # would let a "zero" select (within HiGHS's integrality tolerance) hide samples
    cnt = np.minimum(sa.count[keep], np.maximum(targets[pk], COUNT_CAP))
    t_ref = testing_reference(inst, sa, members)
    m.t_ref = pyo.Param(initialize=t_ref, mutable=False)
    m.PAIRS = pyo.RangeSet(0, P - 1) if P else pyo.Set(initialize=[])
    m.share = pyo.Var(m.PAIRS, bounds=(0.0, 1.0))
    share = list(m.share.values())
    m.z = pyo.Var(bounds=(0.0, None))
    xs = [*sel, *share, m.z]
    C = len(sa.classes)
    tscale = np.maximum(targets, 1.0)
    # c_target[c]: sum_i samples_ic / target_c * share[i,c] = 1
    m.c_target = LinearRows.from_coo(
        pk,
        k + np.arange(P),
        cnt / tscale[pk],
        C,
        targets / tscale,
        targets / tscale,
        xs,
    )
    # c_link[i,c]: share[i,c] - select[i] <= 0
    rows = np.concatenate([np.arange(P), np.arange(P)])
    cols = np.concatenate([k + np.arange(P), pc])
    vals = np.concatenate([np.ones(P), -np.ones(P)])
    m.c_link = LinearRows.from_coo(rows, cols, vals, P, np.full(P, -INF), np.zeros(P), xs)
    # c_time[i]: fixed_i/t_ref * select[i] + sum_c sample_s_i samples_ic/t_ref share[i,c] <= z
    fixed = (arr.ready + arr.upload)[members] / t_ref
    a = arr.sample_s[members] / t_ref
    rows = np.concatenate([np.arange(k), pc, np.arange(k)])
    cols = np.concatenate([np.arange(k), k + np.arange(P), np.full(k, k + P)])
    vals = np.concatenate([fixed, a[pc] * cnt, -np.ones(k)])
    m.c_time = LinearRows.from_coo(rows, cols, vals, k, np.full(k, -INF), np.zeros(k), xs)
    _side_rows(m, inst, arr, members, sel)
    m.obj = pyo.Objective(expr=m.z, sense=pyo.minimize)
    return Built(m, Selection(members, t_ref))


def build_shared_disjunctive(
    inst: ClientSelectionInstance, objective: str, members: np.ndarray | None = None
) -> Built:
    """FedCS with a shared uplink, with the upload order as variables (a cross-check).

    Unlike :func:`build_shared` it does not assume the earliest-ready-first order:
    ``before[i,j]`` (binary, ``i < j``) orders each pair; if both are selected their
    upload intervals do not overlap. Times in units of the deadline ``D``; the big-M of
    the pair rows is ``1 + upload_i / D`` (the most ``start[i] + upload_i - start[j]``
    can be), from the instance, never a constant. O(n^2) binaries: for small instances.

    ``c_first[i,j]``: ``start[i] + p_i - start[j] <= M_i (3 - before - select_i - select_j)``
    ``c_second[i,j]``: ``start[j] + p_j - start[i] <= M_j (2 + before - select_i - select_j)``
    """
    arr = inst.arrays
    if members is None:
        members = shared_members(arr)
    m = pyo.ConcreteModel(name="client_selection_shared_disjunctive")
    sel = _selection_vars(m, arr, members)
    k = len(members)
    start, p = _start_vars(m, arr, members)
    ii, jj = np.triu_indices(k, 1)
    P = len(ii)
    m.PAIRS = pyo.RangeSet(0, P - 1) if P else pyo.Set(initialize=[])
    m.before = pyo.Var(m.PAIRS, domain=pyo.Binary)
    before = list(m.before.values())
    xs = [*sel, *start, *before]
    _deadline_rows(m, p, xs)
    if P:
        Mi, Mj = 1.0 + p[ii], 1.0 + p[jj]
        e = np.arange(P)
        b = 2 * k + e
        # start_i - start_j + Mi before + Mi sel_i + Mi sel_j <= 3 Mi - p_i
        rows = np.repeat(e, 5)
        cols = np.stack([k + ii, k + jj, b, ii, jj], 1).ravel()
        vals = np.stack([np.ones(P), -np.ones(P), Mi, Mi, Mi], 1).ravel()
        m.c_first = LinearRows.from_coo(rows, cols, vals, P, np.full(P, -INF), 3 * Mi - p[ii], xs)
        # start_j - start_i - Mj before + Mj sel_i + Mj sel_j <= 2 Mj - p_j
        vals = np.stack([-np.ones(P), np.ones(P), -Mj, Mj, Mj], 1).ravel()
        m.c_second = LinearRows.from_coo(rows, cols, vals, P, np.full(P, -INF), 2 * Mj - p[jj], xs)
    _side_rows(m, inst, arr, members, sel)
    scale = _objective(m, arr, members, sel, objective)
    return Built(m, Selection(members, scale))
