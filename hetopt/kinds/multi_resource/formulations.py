"""Pyomo formulations of the ``multi_resource`` kind (see ``models/multi_resource.md``).

Pure functions of :class:`MultiResourceArrays`: they return Pyomo models (with the typed
layout their extractors read, :class:`~hetopt.contract.Built`) and never solve.

* :func:`build_integrated`: the integrated MILP (profile choice + placement) and its
  column :class:`Layout`; :func:`build_max_total_throughput` is the same model alone.
* :func:`build_config_only`: the configuration-only relaxation (a multiple-choice knapsack
  over the cluster's total CPUs and memory, no placement), whose optimum bounds the first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo

from ...contract import Built
from ...pyomo_ext import LinearRows
from .data import MultiResourceArrays

INF = float("inf")
FIT_TOL = 1e-9


def candidate_profiles(arr: MultiResourceArrays) -> np.ndarray:
    """Flat indices of the profiles the model may choose.

    A profile is kept when its throughput is at least the job's fair share and no other
    profile of the same job dominates it (no more CPUs, no more memory per GPU, at least
    the throughput; ties broken by position). Dropping dominated profiles loses no optimum:
    swapping one for its dominator keeps every capacity and does not lower the throughput.
    """
    keep = np.zeros(len(arr.prof_job), dtype=bool)
    bounds = np.searchsorted(arr.prof_job, np.arange(arr.num_jobs + 1))
    for j in range(arr.num_jobs):
        a, b = bounds[j], bounds[j + 1]
        c, m, t = arr.prof_cpu[a:b], arr.prof_mem[a:b], arr.prof_tput[a:b]
        ok = t >= arr.fair_share[j]
        # dom[q, p]: q dominates p
        le = (c[:, None] <= c[None, :]) & (m[:, None] <= m[None, :]) & (t[:, None] >= t[None, :])
        strict = (c[:, None] < c[None, :]) | (m[:, None] < m[None, :]) | (t[:, None] > t[None, :])
        idx = np.arange(b - a)
        earlier = idx[:, None] < idx[None, :]
        dom = le & (strict | earlier) & ok[:, None]
        np.fill_diagonal(dom, False)
        keep[a:b] = ok & ~dom.any(axis=0)
    return np.nonzero(keep)[0]


def job_classes(arr: MultiResourceArrays, jobs: np.ndarray) -> list[np.ndarray]:
    """Group ``jobs`` into classes of interchangeable jobs (same GPUs, same profile list)."""
    bounds = np.searchsorted(arr.prof_job, np.arange(arr.num_jobs + 1))
    groups: dict[tuple, list[int]] = {}
    for j in jobs:
        a, b = bounds[j], bounds[j + 1]
        key = (
            float(arr.job_gpus[j]),
            tuple(arr.prof_cpu[a:b]),
            tuple(arr.prof_mem[a:b]),
            tuple(arr.prof_tput[a:b]),
        )
        groups.setdefault(key, []).append(int(j))
    return [np.array(v, dtype=np.int64) for v in groups.values()]


@dataclass(frozen=True)
class Layout:
    """Column layout of the integrated model.

    Jobs that fit on one server are grouped into classes of interchangeable jobs (same
    GPUs and profile list); ``assign`` columns are (class, profile, server) triples: the
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
    """Servers ``s`` whose successor ``s + 1`` has the same GPUs, CPUs and memory."""
    num_candidates: int
    """Profiles the model may choose (:func:`candidate_profiles`)."""

    @classmethod
    def of(cls, arr: MultiResourceArrays) -> Layout:
        cand = candidate_profiles(arr)
        split = arr.is_split()
        S = arr.num_servers
        classes = job_classes(arr, np.nonzero(~split)[0])
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
        same = (
            (arr.srv_gpus[:-1] == arr.srv_gpus[1:])
            & (arr.srv_cpus[:-1] == arr.srv_cpus[1:])
            & (arr.srv_mem[:-1] == arr.srv_mem[1:])
        )
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
            identical_next=np.nonzero(same)[0],
            num_candidates=len(cand),
        )


def _scale(cap: np.ndarray) -> np.ndarray:
    """Row scale 1/capacity (1 where the capacity is 0, so rows stay O(1))."""
    return 1.0 / np.where(cap > 0, cap, 1.0)


def build_max_total_throughput(
    arr: MultiResourceArrays, symmetry: bool = True
) -> pyo.ConcreteModel:
    """The integrated MILP alone (see :func:`build_integrated`)."""
    return build_integrated(arr, symmetry).model


def build_integrated(arr: MultiResourceArrays, symmetry: bool = True) -> Built:
    """The integrated MILP: one profile per job and its placement on servers.

    ``total_throughput`` is a variable defined by ``c_total`` so a lexicographic second
    solve can fix it with a column bound. ``in_use[s]`` is 1 when server ``s`` hosts any
    GPU (free in the first solve, minimised in the fragmentation solve). With
    ``symmetry``, servers identical to their successor must use at least as many GPUs.
    The layout is the model's :class:`Layout`.
    """
    lay = Layout.of(arr)
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
    m.obj = pyo.Objective(expr=m.total_throughput, sense=pyo.maximize)
    return Built(m, lay)


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
