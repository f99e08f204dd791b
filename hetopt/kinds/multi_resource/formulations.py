"""Pyomo formulations of the ``multi_resource`` kind (see ``models/multi_resource.md``).

Pure functions of :class:`MultiResourceArrays`: they return Pyomo models (with the typed
layout their extractors read, :class:`~hetopt.contract.Built`) and never solve.

* :func:`build_integrated`: the integrated MILP (profile choice + placement) and its
  column :class:`Layout`; :func:`build_max_total_throughput` is the same model alone.
* :func:`build_config_only`: the configuration-only relaxation (a multiple-choice knapsack
  over the cluster's total CPUs and memory, no placement), whose optimum bounds the first.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo

from ...contract import Built
from ...pyomo_ext import LinearRows
from .data import MultiResourceArrays

INF = float("inf")
FIT_TOL = 1e-9


MAX_THROUGHPUT = "max_total_throughput"
MIN_COST = "min_cost"


def profile_floor(arr: MultiResourceArrays, objective: str = MAX_THROUGHPUT) -> np.ndarray:
    """Least throughput of each job under ``objective`` (:attr:`MultiResourceArrays.floor`
    or, for ``min_cost``, :attr:`MultiResourceArrays.cost_floor`)."""
    return arr.cost_floor if objective == MIN_COST else arr.floor


def candidate_profiles(arr: MultiResourceArrays, objective: str = MAX_THROUGHPUT) -> np.ndarray:
    """Flat indices of the profiles the model may choose.

    A profile is kept when its throughput is at least the job's floor
    (:func:`profile_floor`) and no other profile of the same job dominates it. For the
    throughput objective a dominator has no more CPUs, no more memory per GPU and at least
    the throughput; for ``min_cost`` (where throughput above the floor earns nothing) no
    more CPUs and no more memory (ties broken by throughput, then position). Dropping
    dominated profiles loses no optimum: swapping one for its dominator keeps every
    capacity and does not make the objective worse.
    """
    floor = profile_floor(arr, objective)
    keep = np.zeros(len(arr.prof_job), dtype=bool)
    bounds = np.searchsorted(arr.prof_job, np.arange(arr.num_jobs + 1))
    for j in range(arr.num_jobs):
        a, b = bounds[j], bounds[j + 1]
        c, m, t = arr.prof_cpu[a:b], arr.prof_mem[a:b], arr.prof_tput[a:b]
        ok = t >= floor[j]
        idx = np.arange(b - a)
        earlier = idx[:, None] < idx[None, :]
        # dom[q, p]: q dominates p
        if objective == MIN_COST:
            le = (c[:, None] <= c[None, :]) & (m[:, None] <= m[None, :])
            strict = (
                (c[:, None] < c[None, :])
                | (m[:, None] < m[None, :])
                | (t[:, None] > t[None, :])
                | ((t[:, None] == t[None, :]) & earlier)
            )
        else:
            le = (
                (c[:, None] <= c[None, :]) & (m[:, None] <= m[None, :]) & (t[:, None] >= t[None, :])
            )
            strict = (
                (c[:, None] < c[None, :]) | (m[:, None] < m[None, :]) | (t[:, None] > t[None, :])
            )
            strict = strict | earlier
        dom = le & strict & ok[:, None]
        np.fill_diagonal(dom, False)
        keep[a:b] = ok & ~dom.any(axis=0)
    return np.nonzero(keep)[0]


def job_classes(
    arr: MultiResourceArrays, jobs: np.ndarray, objective: str = MAX_THROUGHPUT
) -> list[np.ndarray]:
    """Group ``jobs`` into classes of interchangeable jobs: same GPUs, same profile list,
    same floor (:func:`profile_floor`) and same tags (jobs with different tags are never
    merged: placement rules tell them apart)."""
    floor = profile_floor(arr, objective)
    bounds = np.searchsorted(arr.prof_job, np.arange(arr.num_jobs + 1))
    groups: dict[tuple, list[int]] = {}
    for j in jobs:
        a, b = bounds[j], bounds[j + 1]
        key = (
            float(arr.job_gpus[j]),
            tuple(arr.prof_cpu[a:b]),
            tuple(arr.prof_mem[a:b]),
            tuple(arr.prof_tput[a:b]),
            float(floor[j]),
            arr.job_tags[j],
        )
        groups.setdefault(key, []).append(int(j))
    return [np.array(v, dtype=np.int64) for v in groups.values()]


def interchangeable_servers(
    arr: MultiResourceArrays, objective: str = MAX_THROUGHPUT
) -> np.ndarray:
    """Servers ``s`` whose successor ``s + 1`` may be swapped with it: same GPUs, CPUs and
    memory, the same value (or none) of every label a placement rule is scoped on and,
    for ``min_cost``, the same cost."""
    same = (
        (arr.srv_gpus[:-1] == arr.srv_gpus[1:])
        & (arr.srv_cpus[:-1] == arr.srv_cpus[1:])
        & (arr.srv_mem[:-1] == arr.srv_mem[1:])
    )
    for rule in arr.rules:
        if rule.scope != "server":
            same &= rule.group_of[:-1] == rule.group_of[1:]
    if objective == MIN_COST:
        same &= arr.srv_cost[:-1] == arr.srv_cost[1:]
    return np.nonzero(same)[0]


@dataclass(frozen=True)
class Layout:
    """Column layout of the integrated model.

    Jobs that fit on one server are grouped into classes of interchangeable jobs (same
    GPUs, profile list, floor and tags, :func:`job_classes`); ``assign`` columns are (class, profile, server) triples: the
    integer number of the class's jobs placed on the server with that profile (a class of
    one job gives a binary). ``split`` columns: (profile, server) pairs of jobs larger than
    every server (integer GPUs of the job on that server). ``choice`` columns: profiles of
    split jobs (binary).
    """

    class_members: list[np.ndarray]
    assign_prof: np.ndarray
    """Flat profile index (of the class's first job) of each ``assign`` column."""
    assign_cls: np.ndarray
    assign_srv: np.ndarray
    assign_ub: np.ndarray
    split_prof: np.ndarray
    split_srv: np.ndarray
    split_ub: np.ndarray
    choice_prof: np.ndarray
    split_jobs: np.ndarray
    identical_next: np.ndarray
    """Servers ``s`` interchangeable with their successor ``s + 1``
    (:func:`interchangeable_servers`)."""
    num_candidates: int
    """Profiles the model may choose (:func:`candidate_profiles`)."""
    objective: str = MAX_THROUGHPUT
    rules: RuleLayout | None = None
    """Columns and rows of the placement rules (``None``: the instance has none)."""

    @classmethod
    def of(cls, arr: MultiResourceArrays, objective: str = MAX_THROUGHPUT) -> Layout:
        cand = candidate_profiles(arr, objective)
        split = arr.is_split()
        S = arr.num_servers
        classes = job_classes(arr, np.nonzero(~split)[0], objective)
        reps = np.array([c[0] for c in classes], dtype=np.int64)
        count = np.array([len(c) for c in classes], dtype=float)
        cls_of = np.full(arr.num_jobs, -1)
        cls_of[reps] = np.arange(len(reps))
        # single-server classes: profiles of the first job; the count that fits per server
        single = cand[cls_of[arr.prof_job[cand]] >= 0]
        k_cls = cls_of[arr.prof_job[single]]
        gs = arr.job_gpus[arr.prof_job[single]]
        with np.errstate(divide="ignore"):
            ub_a = np.minimum.reduce(
                [
                    np.broadcast_to(count[k_cls][:, None], (len(single), S)),
                    np.floor(arr.srv_gpus[None, :] / gs[:, None]),
                    np.floor(
                        arr.srv_cpus[None, :] * (1 + FIT_TOL) / (gs * arr.prof_cpu[single])[:, None]
                    ),
                    np.floor(
                        arr.srv_mem[None, :] * (1 + FIT_TOL) / (gs * arr.prof_mem[single])[:, None]
                    ),
                ]
            )
        ap, asv = np.nonzero(ub_a >= 1)
        # split jobs: up to min(server GPUs, job GPUs, what CPUs and memory allow) on a server
        job = arr.prof_job[cand]
        many = cand[split[job]]
        gm = arr.job_gpus[arr.prof_job[many]]
        with np.errstate(divide="ignore"):
            ub = np.minimum.reduce(
                [
                    np.broadcast_to(arr.srv_gpus[None, :], (len(many), S)),
                    np.broadcast_to(gm[:, None], (len(many), S)),
                    np.floor(arr.srv_cpus[None, :] * (1 + FIT_TOL) / arr.prof_cpu[many][:, None]),
                    np.floor(arr.srv_mem[None, :] * (1 + FIT_TOL) / arr.prof_mem[many][:, None]),
                ]
            )
        sp_, ss = np.nonzero(ub >= 1)
        return cls(
            class_members=classes,
            assign_prof=single[ap],
            assign_cls=k_cls[ap],
            assign_srv=asv,
            assign_ub=ub_a[ap, asv],
            split_prof=many[sp_],
            split_srv=ss,
            split_ub=ub[sp_, ss],
            choice_prof=many,
            split_jobs=np.nonzero(split)[0],
            identical_next=interchangeable_servers(arr, objective),
            num_candidates=len(cand),
            objective=objective,
        )


def _scale(cap: np.ndarray) -> np.ndarray:
    """Row scale 1/capacity (1 where the capacity is 0, so rows stay O(1))."""
    return 1.0 / np.where(cap > 0, cap, 1.0)


def build_max_total_throughput(
    arr: MultiResourceArrays, symmetry: bool = True
) -> pyo.ConcreteModel:
    """The integrated MILP alone (see :func:`build_integrated`)."""
    return build_integrated(arr, symmetry).model


def build_integrated(
    arr: MultiResourceArrays, symmetry: bool = True, objective: str = MAX_THROUGHPUT
) -> Built:
    """The integrated MILP: one profile per job and its placement on servers.

    ``total_throughput`` is a variable defined by ``c_total`` so a lexicographic second
    solve can fix it with a column bound. ``in_use[s]`` is 1 when server ``s`` hosts any
    GPU (free in the first solve, minimised in the fragmentation solve). With
    ``symmetry``, servers identical to their successor must use at least as many GPUs.
    Placement rules add their block (:func:`_add_rules`); with soft rules the throughput
    objective is ``net_throughput = total_throughput - total_penalty``. ``objective =
    "min_cost"`` minimises ``server_cost`` (plus ``total_penalty``) instead.
    The layout is the model's :class:`Layout`.
    """
    lay = Layout.of(arr, objective)
    S, n = arr.num_servers, arr.num_jobs
    nA, nS, nC = len(lay.assign_prof), len(lay.split_prof), len(lay.choice_prof)
    m = pyo.ConcreteModel(name="multi_resource")
    m.JOBS = pyo.RangeSet(0, n - 1)
    m.CLASSES = pyo.RangeSet(0, len(lay.class_members) - 1)
    m.SERVERS = pyo.RangeSet(0, S - 1)
    m.ASSIGN = pyo.RangeSet(0, nA - 1)
    m.SPLIT = pyo.RangeSet(0, nS - 1)
    m.CHOICE = pyo.RangeSet(0, nC - 1)
    aub = lay.assign_ub
    m.assign = pyo.Var(m.ASSIGN, domain=pyo.NonNegativeIntegers, bounds=lambda _, k: (0, aub[k]))
    ub = lay.split_ub
    m.split_gpus = pyo.Var(m.SPLIT, domain=pyo.NonNegativeIntegers, bounds=lambda _, k: (0, ub[k]))
    m.choice = pyo.Var(m.CHOICE, domain=pyo.Binary)
    m.in_use = pyo.Var(m.SERVERS, domain=pyo.Binary)
    m.total_throughput = pyo.Var(bounds=(0.0, None))
    cols = [
        *m.assign.values(),
        *m.split_gpus.values(),
        *m.choice.values(),
        *m.in_use.values(),
        m.total_throughput,
    ]
    oA, oS, oC, oU, oT = 0, nA, nA + nS, nA + nS + nC, nA + nS + nC + S
    colA, colS, colC = np.arange(oA, oS), np.arange(oS, oC), np.arange(oC, oU)

    jobA = arr.prof_job[lay.assign_prof]
    gA = arr.job_gpus[jobA]
    pS, pC = lay.split_prof, lay.choice_prof

    # c_class_count[c]: sum_{p,s} assign[c,p,s] == number of jobs in class c
    ncl = len(lay.class_members)
    count = np.array([len(c) for c in lay.class_members], dtype=float)
    m.c_class_count = LinearRows.from_coo(
        lay.assign_cls, colA, np.ones(nA), ncl, count, count, cols
    )
    # c_choice_one[i]: sum_p choice[i,p] == 1 (split jobs)
    split_row = np.full(n, -1)
    split_row[lay.split_jobs] = np.arange(len(lay.split_jobs))
    nsp = len(lay.split_jobs)
    m.c_choice_one = LinearRows.from_coo(
        split_row[arr.prof_job[pC]], colC, np.ones(nC), nsp, np.ones(nsp), np.ones(nsp), cols
    )
    # c_split_gpus[i,p]: sum_s split_gpus[i,p,s] - gpus_i * choice[i,p] == 0
    choice_row = np.full(len(arr.prof_job), -1)
    choice_row[pC] = np.arange(nC)
    m.c_split_gpus = LinearRows.from_coo(
        np.concatenate([choice_row[pS], np.arange(nC)]),
        np.concatenate([colS, colC]),
        np.concatenate([np.ones(nS), -arr.job_gpus[arr.prof_job[pC]]]),
        nC,
        np.zeros(nC),
        np.zeros(nC),
        cols,
    )
    # per-server usage: GPUs, CPUs, memory (rows scaled by 1 / capacity)
    srv = np.concatenate([lay.assign_srv, lay.split_srv])
    gpus = np.concatenate([gA, np.ones(nS)])
    cpu = gpus * arr.prof_cpu[np.concatenate([lay.assign_prof, pS])]
    mem = gpus * arr.prof_mem[np.concatenate([lay.assign_prof, pS])]
    colAS = np.concatenate([colA, colS])
    sg, sc, sm = _scale(arr.srv_gpus), _scale(arr.srv_cpus), _scale(arr.srv_mem)
    # c_gpu[s]: (sum gpus - gpus_s * in_use[s]) / gpus_s <= 0
    m.c_gpu = LinearRows.from_coo(
        np.concatenate([srv, np.arange(S)]),
        np.concatenate([colAS, oU + np.arange(S)]),
        np.concatenate([gpus * sg[srv], -np.ones(S)]),
        S,
        np.full(S, -INF),
        np.zeros(S),
        cols,
    )
    # c_cpu[s]: sum cpus / cpus_s <= 1 ; c_mem[s]: sum mem / mem_s <= 1
    m.c_cpu = LinearRows.from_coo(
        srv, colAS, cpu * sc[srv], S, np.full(S, -INF), arr.srv_cpus * sc, cols
    )
    m.c_mem = LinearRows.from_coo(
        srv, colAS, mem * sm[srv], S, np.full(S, -INF), arr.srv_mem * sm, cols
    )
    # c_symmetry[r]: (gpus used on s - gpus used on s+1) / gpus_s >= 0 for identical s, s+1
    ident = lay.identical_next if symmetry else np.zeros(0, dtype=np.int64)
    R = len(ident)
    row_of = np.full(S, -1)
    row_of[ident] = np.arange(R)
    prev_row = np.full(S, -1)
    prev_row[ident + 1] = np.arange(R)
    a = row_of[srv] >= 0
    b = prev_row[srv] >= 0
    m.c_symmetry = LinearRows.from_coo(
        np.concatenate([row_of[srv][a], prev_row[srv][b]]),
        np.concatenate([colAS[a], colAS[b]]),
        np.concatenate([(gpus * sg[srv])[a], -(gpus * sg[srv])[b]]),
        R,
        np.zeros(R),
        np.full(R, INF),
        cols,
    )
    # c_total: total_throughput - sum throughput * (assign | choice) == 0
    m.c_total = LinearRows.from_coo(
        np.zeros(nA + nC + 1, dtype=np.int64),
        np.concatenate([colA, colC, [oT]]),
        np.concatenate([-arr.prof_tput[lay.assign_prof], -arr.prof_tput[pC], [1.0]]),
        1,
        np.zeros(1),
        np.zeros(1),
        cols,
    )
    if not arr.rules and objective == MAX_THROUGHPUT:
        m.obj = pyo.Objective(expr=m.total_throughput, sense=pyo.maximize)
        return Built(m, lay)
    rl = _add_rules(m, arr, lay, cols) if arr.rules else None
    lay = dataclasses.replace(lay, rules=rl)
    soft = rl is not None and rl.soft
    if objective == MIN_COST:
        m.server_cost = pyo.Var(bounds=(0.0, None))
        cost = np.nan_to_num(arr.srv_cost)
        # c_cost: server_cost - sum_s cost_per_hour_s in_use[s] == 0
        m.c_cost = LinearRows.from_coo(
            np.zeros(S + 1, dtype=np.int64),
            np.concatenate([oU + np.arange(S), [len(cols)]]),
            np.concatenate([-cost, [1.0]]),
            1,
            np.zeros(1),
            np.zeros(1),
            [*cols, m.server_cost],
        )
        expr = m.server_cost + m.total_penalty if soft else m.server_cost
        m.obj = pyo.Objective(expr=expr, sense=pyo.minimize)
    elif soft:
        m.net_throughput = pyo.Var(bounds=(None, None))
        # c_net: net_throughput - total_throughput + total_penalty == 0
        m.c_net = pyo.Constraint(expr=m.net_throughput == m.total_throughput - m.total_penalty)
        m.obj = pyo.Objective(expr=m.net_throughput, sense=pyo.maximize)
    else:
        m.obj = pyo.Objective(expr=m.total_throughput, sense=pyo.maximize)
    return Built(m, lay)


# --------------------------------------------------------------------------- rules
@dataclass(frozen=True)
class RuleLayout:
    """Columns and rows of the placement rules (``models/multi_resource.md``).

    ``touch[t]`` (binary): split job ``touch_job[t]`` has GPUs in group ``touch_group[t]``
    of scope ``touch_scope[t]`` (an index into ``scopes``; group ``G`` = the servers
    without the label). ``partner_in[h]`` (binary): group ``partner_group[h]`` of rule
    ``partner_rule[h]`` holds at least ``partner_level[h]`` (1 or 2) jobs with the rule's
    ``with_tag``. ``violation[v]`` (>= 0, soft rules): violations of rule ``viol_rule[v]``
    in group ``viol_group[v]`` (``-1``: a spread rule's skew), of kind ``viol_kind[v]``.
    ``spread_max[k]`` / ``spread_min[k]``: the most / least jobs in a group of spread rule
    ``spread_rule[k]``. ``row_rule[r]``: the rule of row ``c_rules[r]``.
    """

    scopes: tuple[str, ...]
    scope_groups: tuple[np.ndarray, ...]
    """Group of each server per scope (the servers without the label: ``G``)."""
    touch_job: np.ndarray
    touch_scope: np.ndarray
    touch_group: np.ndarray
    partner_rule: np.ndarray
    partner_group: np.ndarray
    partner_level: np.ndarray
    viol_rule: np.ndarray
    viol_group: np.ndarray
    viol_kind: tuple[str, ...]
    """``cap`` (beyond the limit), ``lone`` / ``lone2`` (affinity without a partner, for
    jobs without / with ``with_tag`` themselves), ``outside`` (affinity, no group),
    ``skew`` (spread)."""
    viol_penalty: np.ndarray
    spread_rule: np.ndarray
    row_rule: np.ndarray
    soft: bool
    """Some rule is soft (the model has ``violation`` columns and ``total_penalty``)."""

    def rows_of(self, rule: int) -> np.ndarray:
        """Positions in ``c_rules`` of the rows of rule ``rule`` (position in ``arr.rules``)."""
        return np.nonzero(self.row_rule == rule)[0]


class _Coo:
    """Rows under construction: entries are (row, block, index, value)."""

    def __init__(self) -> None:
        self.rows: list[np.ndarray] = []
        self.blocks: list[np.ndarray] = []
        self.idx: list[np.ndarray] = []
        self.vals: list[np.ndarray] = []
        self.lo: list[float] = []
        self.hi: list[float] = []
        self.owner: list[int] = []

    def add(
        self, terms: list[tuple[int, np.ndarray, np.ndarray]], lo: float, hi: float, owner: int
    ) -> None:
        r = len(self.lo)
        for block, idx, val in terms:
            self.rows.append(np.full(len(idx), r, dtype=np.int64))
            self.blocks.append(np.full(len(idx), block, dtype=np.int64))
            self.idx.append(np.asarray(idx, dtype=np.int64))
            self.vals.append(np.broadcast_to(np.asarray(val, dtype=float), (len(idx),)).copy())
        self.lo.append(lo)
        self.hi.append(hi)
        self.owner.append(owner)

    def arrays(self, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not self.rows:
            z = np.zeros(0, dtype=np.int64)
            return z, z, np.zeros(0)
        rows = np.concatenate(self.rows)
        cols = offsets[np.concatenate(self.blocks)] + np.concatenate(self.idx)
        return rows, cols, np.concatenate(self.vals)


# column blocks of the rule rows
_BASE, _TOUCH, _PARTNER, _VIOL, _SMAX, _SMIN = range(6)


def _add_rules(
    m: pyo.ConcreteModel, arr: MultiResourceArrays, lay: Layout, cols: list
) -> RuleLayout:
    """Add the placement rules' variables and rows to the integrated model ``m``.

    Counting: the jobs with a tag in group ``g`` are ``sum assign[k,p,s]`` over the
    classes ``k`` with the tag and the servers ``s`` of ``g``, plus ``touch`` of the split
    jobs with the tag. Rows a rule cannot violate (fewer candidate jobs than its limit)
    are left out.
    """
    nA = len(lay.assign_prof)
    oS = nA
    colA = np.arange(nA)
    colS = oS + np.arange(len(lay.split_prof))
    n_cls = np.array([len(c) for c in lay.class_members], dtype=np.int64)
    split_job = arr.prof_job[lay.split_prof]

    # scopes and their groups (servers without the label: group G)
    scopes: list[str] = []
    scope_groups: list[np.ndarray] = []
    scope_of_rule = []
    for rule in arr.rules:
        if rule.scope not in scopes:
            scopes.append(rule.scope)
            gx = rule.group_of.copy()
            gx[gx < 0] = rule.num_groups
            scope_groups.append(gx)
        scope_of_rule.append(scopes.index(rule.scope))

    # touch columns: split jobs with a tag some rule names, per group of its scopes
    relevant: dict[int, set[int]] = {}
    for rule, sc in zip(arr.rules, scope_of_rule, strict=True):
        for j in lay.split_jobs:
            if rule.tagged[j] or rule.partner[j]:
                relevant.setdefault(sc, set()).add(int(j))
    t_job: list[int] = []
    t_scope: list[int] = []
    t_group: list[int] = []
    touch_of: dict[tuple[int, int, int], int] = {}
    for sc in sorted(relevant):
        gx = scope_groups[sc]
        for k in range(len(lay.split_prof)):
            j = int(split_job[k])
            if j not in relevant[sc]:
                continue
            key = (j, sc, int(gx[lay.split_srv[k]]))
            if key not in touch_of:
                touch_of[key] = len(t_job)
                t_job.append(key[0])
                t_scope.append(key[1])
                t_group.append(key[2])
    touch_job = np.array(t_job, dtype=np.int64)
    touch_scope = np.array(t_scope, dtype=np.int64)
    touch_group = np.array(t_group, dtype=np.int64)
    nT = len(touch_job)

    # c_touch: (sum_{p, s in g} split_gpus[i,p,s]) / cap - touch[t] <= 0 and
    #          touch[t] - sum_{p, s in g} split_gpus[i,p,s] <= 0
    tr, tc = [], []
    for k in range(len(lay.split_prof)):
        j = int(split_job[k])
        for sc in relevant:
            t = touch_of.get((j, sc, int(scope_groups[sc][lay.split_srv[k]])))
            if t is not None:
                tr.append(t)
                tc.append(int(colS[k]))
    tr_a = np.array(tr, dtype=np.int64)
    tc_a = np.array(tc, dtype=np.int64)
    cap = np.zeros(nT)
    for t in range(nT):
        in_g = scope_groups[touch_scope[t]] == touch_group[t]
        cap[t] = min(float(arr.job_gpus[touch_job[t]]), float(arr.srv_gpus[in_g].sum()))
    n0 = len(cols)

    def count_terms(
        mask: np.ndarray, sc: int
    ) -> tuple[np.ndarray, list[tuple[int, np.ndarray, np.ndarray]]]:
        """(group of each term, the terms) counting the jobs of ``mask`` per group."""
        cls_has = mask[[int(c[0]) for c in lay.class_members]] if len(n_cls) else np.zeros(0, bool)
        sel = cls_has[lay.assign_cls] if nA else np.zeros(0, dtype=bool)
        ga = scope_groups[sc][lay.assign_srv[sel]]
        ts = mask[touch_job] & (touch_scope == sc) if nT else np.zeros(0, dtype=bool)
        return (
            np.concatenate([ga, touch_group[ts]]),
            [
                (_BASE, colA[sel], np.ones(int(sel.sum()))),
                (_TOUCH, np.nonzero(ts)[0], np.ones(int(ts.sum()))),
            ],
        )

    def potential(mask: np.ndarray, sc: int, G1: int) -> np.ndarray:
        """Most jobs of ``mask`` that can touch each group (0..G)."""
        pot = np.zeros(G1, dtype=np.int64)
        cls_has = mask[[int(c[0]) for c in lay.class_members]] if len(n_cls) else np.zeros(0, bool)
        sel = cls_has[lay.assign_cls] if nA else np.zeros(0, dtype=bool)
        pairs = set(
            zip(
                lay.assign_cls[sel].tolist(),
                scope_groups[sc][lay.assign_srv[sel]].tolist(),
                strict=False,
            )
        )
        for c, g in pairs:
            pot[g] += n_cls[c]
        ts = mask[touch_job] & (touch_scope == sc) if nT else np.zeros(0, dtype=bool)
        np.add.at(pot, touch_group[ts], 1)
        return pot

    def in_group(
        grp: np.ndarray, terms: list[tuple[int, np.ndarray, np.ndarray]], g: int, scale: float = 1.0
    ) -> list[tuple[int, np.ndarray, np.ndarray]]:
        out = []
        start = 0
        for block, idx, val in terms:
            sel = grp[start : start + len(idx)] == g
            out.append((block, idx[sel], scale * val[sel]))
            start += len(idx)
        return out

    coo = _Coo()
    p_rule: list[int] = []
    p_group: list[int] = []
    p_level: list[int] = []
    v_rule: list[int] = []
    v_group: list[int] = []
    v_kind: list[str] = []
    v_pen: list[float] = []
    v_ub: list[float] = []
    s_rule: list[int] = []

    def violation(q: int, g: int, kind: str, ub: float) -> list[tuple[int, np.ndarray, np.ndarray]]:
        rule = arr.rules[q]
        if rule.hard:
            return []
        v_rule.append(q)
        v_group.append(g)
        v_kind.append(kind)
        v_pen.append(rule.penalty)
        v_ub.append(float(ub))
        return [(_VIOL, np.array([len(v_rule) - 1]), np.array([-1.0]))]

    def partner(q: int, g: int, level: int) -> int:
        p_rule.append(q)
        p_group.append(g)
        p_level.append(level)
        return len(p_rule) - 1

    for q, rule in enumerate(arr.rules):
        sc = scope_of_rule[q]
        G = rule.num_groups
        if rule.rule in ("anti_affinity", "max_per_group"):
            # c_rules: jobs with the tag in g - violation <= limit
            grp, terms = count_terms(rule.tagged, sc)
            pot = potential(rule.tagged, sc, G + 1)
            for g in range(G):
                if pot[g] <= rule.limit:
                    continue
                coo.add(
                    in_group(grp, terms, g) + violation(q, g, "cap", pot[g] - rule.limit),
                    -INF,
                    float(rule.limit),
                    q,
                )
        elif rule.rule == "affinity":
            lone = rule.tagged & ~rule.partner
            both = rule.tagged & rule.partner
            gw, tw = count_terms(rule.partner, sc)
            gn, tn = count_terms(lone, sc)
            gb, tb = count_terms(both, sc)
            pn = potential(lone, sc, G + 1)
            pb = potential(both, sc, G + 1)
            for g in range(G):
                for level, pot_, grp_, terms_ in ((1, pn, gn, tn), (2, pb, gb, tb)):
                    if pot_[g] == 0:
                        continue
                    h = partner(q, g, level)
                    # c_rules: level * partner_in[h] - (jobs with with_tag in g) <= 0
                    coo.add(
                        [
                            (_PARTNER, np.array([h]), np.array([float(level)])),
                            *in_group(gw, tw, g, -1.0),
                        ],
                        -INF,
                        0.0,
                        q,
                    )
                    # c_rules: jobs with tag in g - M * partner_in[h] - violation <= 0
                    coo.add(
                        [
                            *in_group(grp_, terms_, g),
                            (_PARTNER, np.array([h]), np.array([-float(pot_[g])])),
                            *violation(q, g, "lone" if level == 1 else "lone2", pot_[g]),
                        ],
                        -INF,
                        0.0,
                        q,
                    )
            # jobs with the tag on servers without the label have no partner
            grp, terms = count_terms(rule.tagged, sc)
            pot = potential(rule.tagged, sc, G + 1)
            if pot[G] > 0:
                coo.add(in_group(grp, terms, G) + violation(q, G, "outside", pot[G]), -INF, 0.0, q)
        else:  # spread
            total = int(rule.tagged.sum())
            if G <= 1 or total <= rule.limit:
                continue
            k = len(s_rule)
            s_rule.append(q)
            grp, terms = count_terms(rule.tagged, sc)
            one = np.array([k])
            for g in range(G):
                cnt = in_group(grp, terms, g)
                # c_rules: jobs in g - spread_max <= 0 ; spread_min - jobs in g <= 0
                coo.add([*cnt, (_SMAX, one, np.array([-1.0]))], -INF, 0.0, q)
                coo.add(
                    [(b, i, -v) for b, i, v in cnt] + [(_SMIN, one, np.array([1.0]))], -INF, 0.0, q
                )
            # c_rules: spread_max - spread_min - violation <= max_skew
            coo.add(
                [
                    (_SMAX, one, np.array([1.0])),
                    (_SMIN, one, np.array([-1.0])),
                    *violation(q, -1, "skew", total),
                ],
                -INF,
                float(rule.limit),
                q,
            )

    nP, nV, nK = len(p_rule), len(v_rule), len(s_rule)
    m.TOUCH = pyo.RangeSet(0, nT - 1)
    m.touch = pyo.Var(m.TOUCH, domain=pyo.Binary)
    m.PARTNERS = pyo.RangeSet(0, nP - 1)
    m.partner_in = pyo.Var(m.PARTNERS, domain=pyo.Binary)
    m.VIOLATIONS = pyo.RangeSet(0, nV - 1)
    vub = np.array(v_ub)
    m.violation = pyo.Var(
        m.VIOLATIONS, domain=pyo.NonNegativeReals, bounds=lambda _, k: (0.0, vub[k])
    )
    m.SPREAD = pyo.RangeSet(0, nK - 1)
    m.spread_max = pyo.Var(m.SPREAD, domain=pyo.NonNegativeReals)
    m.spread_min = pyo.Var(m.SPREAD, domain=pyo.NonNegativeReals)
    cols2 = [
        *cols,
        *m.touch.values(),
        *m.partner_in.values(),
        *m.violation.values(),
        *m.spread_max.values(),
        *m.spread_min.values(),
    ]
    offsets = np.cumsum([0, n0, nT, nP, nV, nK])
    # c_touch
    t_rows = np.concatenate([tr_a, np.arange(nT), nT + tr_a, nT + np.arange(nT)])
    t_cols = np.concatenate(
        [tc_a, offsets[_TOUCH] + np.arange(nT), tc_a, offsets[_TOUCH] + np.arange(nT)]
    )
    t_vals = np.concatenate(
        [1.0 / cap[tr_a] if nT else np.zeros(0), -np.ones(nT), -np.ones(len(tr_a)), np.ones(nT)]
    )
    m.c_touch = LinearRows.from_coo(
        t_rows, t_cols, t_vals, 2 * nT, np.full(2 * nT, -INF), np.zeros(2 * nT), cols2
    )
    rows, rcols, vals = coo.arrays(offsets)
    R = len(coo.lo)
    m.c_rules = LinearRows.from_coo(rows, rcols, vals, R, np.array(coo.lo), np.array(coo.hi), cols2)
    soft = any(not r.hard for r in arr.rules)
    if soft:
        m.total_penalty = pyo.Var(bounds=(0.0, None))
        # c_penalty: total_penalty - sum penalty * violation == 0
        m.c_penalty = LinearRows.from_coo(
            np.zeros(nV + 1, dtype=np.int64),
            np.concatenate([offsets[_VIOL] + np.arange(nV), [len(cols2)]]),
            np.concatenate([-np.array(v_pen, dtype=float), [1.0]]),
            1,
            np.zeros(1),
            np.zeros(1),
            [*cols2, m.total_penalty],
        )
    return RuleLayout(
        scopes=tuple(scopes),
        scope_groups=tuple(scope_groups),
        touch_job=touch_job,
        touch_scope=touch_scope,
        touch_group=touch_group,
        partner_rule=np.array(p_rule, dtype=np.int64),
        partner_group=np.array(p_group, dtype=np.int64),
        partner_level=np.array(p_level, dtype=np.int64),
        viol_rule=np.array(v_rule, dtype=np.int64),
        viol_group=np.array(v_group, dtype=np.int64),
        viol_kind=tuple(v_kind),
        viol_penalty=np.array(v_pen, dtype=float),
        spread_rule=np.array(s_rule, dtype=np.int64),
        row_rule=np.array(coo.owner, dtype=np.int64),
        soft=soft,
    )


@dataclass(frozen=True)
class ConfigOnlyLayout:
    """Column layout of the configuration-only model."""

    profiles: np.ndarray
    """Flat profile index of each ``choice`` column."""


def build_config_only(arr: MultiResourceArrays) -> Built:
    """The configuration-only relaxation: a multiple-choice knapsack over cluster totals.

    One profile per job (among the candidates that fit on some server), total CPUs and
    memory within the cluster's totals, no placement. Its optimum bounds the integrated
    MILP's from above. The layout is a :class:`ConfigOnlyLayout`.
    """
    cand = candidate_profiles(arr)
    g = arr.job_gpus[arr.prof_job[cand]]
    fits = (
        (g[:, None] <= arr.srv_gpus[None, :])
        & ((g * arr.prof_cpu[cand])[:, None] <= arr.srv_cpus[None, :] * (1 + FIT_TOL))
        & ((g * arr.prof_mem[cand])[:, None] <= arr.srv_mem[None, :] * (1 + FIT_TOL))
    ).any(axis=1)
    prof = cand[fits | arr.is_split()[arr.prof_job[cand]]]
    P, n = len(prof), arr.num_jobs
    m = pyo.ConcreteModel(name="multi_resource_config_only")
    m.PROFILES = pyo.RangeSet(0, P - 1)
    m.choice = pyo.Var(m.PROFILES, domain=pyo.Binary)
    m.total_throughput = pyo.Var(bounds=(0.0, None))
    cols = [*m.choice.values(), m.total_throughput]
    job = arr.prof_job[prof]
    g = arr.job_gpus[job]
    c_tot, m_tot = float(arr.srv_cpus.sum()), float(arr.srv_mem.sum())
    m.c_choice_one = LinearRows.from_coo(
        job, np.arange(P), np.ones(P), n, np.ones(n), np.ones(n), cols
    )
    # c_resources[0]: total CPUs / cluster CPUs <= 1 ; [1]: total memory / cluster memory <= 1
    m.c_resources = LinearRows.from_coo(
        np.concatenate([np.zeros(P, dtype=np.int64), np.ones(P, dtype=np.int64)]),
        np.concatenate([np.arange(P), np.arange(P)]),
        np.concatenate(
            [g * arr.prof_cpu[prof] / max(c_tot, 1.0), g * arr.prof_mem[prof] / max(m_tot, 1.0)]
        ),
        2,
        np.full(2, -INF),
        np.array([c_tot / max(c_tot, 1.0), m_tot / max(m_tot, 1.0)]),
        cols,
    )
    m.c_total = LinearRows.from_coo(
        np.zeros(P + 1, dtype=np.int64),
        np.arange(P + 1),
        np.concatenate([-arr.prof_tput[prof], [1.0]]),
        1,
        np.zeros(1),
        np.zeros(1),
        cols,
    )
    m.obj = pyo.Objective(expr=m.total_throughput, sense=pyo.maximize)
    return Built(m, ConfigOnlyLayout(prof))
