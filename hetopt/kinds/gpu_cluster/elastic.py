"""Elastic jobs on loaned capacity (Lyra, EuroSys 2023): ``max_progress`` and ``reclaim``.

Lyra lends idle inference GPUs to the training cluster (``loanable`` beside ``workers``)
and scales elastic jobs (``jobs[i].elastic``: a throughput for each worker count and GPU
type). Two exact MILPs, each one model and one HiGHS solve (see
``models/gpu_cluster_elastic.md``):

* ``max_progress`` (:class:`MaxProgress`): every job gets one option ``(type, workers)``
  or none, whole GPUs within ``workers + loanable`` of each type; maximise
  ``sum 3600 * weight * throughput / steps_remaining`` (the share of its remaining work
  each job finishes per hour, Lyra's JCT-reduction proxy). A multiple-choice knapsack
  with one capacity row per type. A job that is not elastic is a fixed-size job: its one
  worker count is ``scale_factor`` (Lyra's inelastic jobs), on any type it can use.
* ``reclaim`` (:class:`Reclaim`): given the jobs placed on loaned servers
  (``loaned_servers``), return ``servers`` of them with the least preemption cost; an
  elastic job that loses workers shrinks to the largest worker count it still has GPUs
  for, and is preempted only when it has fewer than its smallest count.

The objectives are in user units (1/h and preemption cost), so the exported LP/MPS
objective is the reported one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyomo.environ as pyo
from pyomo.core.expr.numeric_expr import LinearExpression

from ...contract import BuildMethodBase, Built, Outcome, SolveView
from ...options import SolveOptions
from ...pyomo_ext import LinearRows
from .data import GpuClusterInstance
from .inputs import ELASTIC_OBJECTIVES as OBJECTIVES
from .inputs import reclaimable

if TYPE_CHECKING:
    from . import GpuClusterParams

INF = float("inf")
HOUR_S = 3600.0
"""Seconds per hour: ``max_progress`` reports remaining work finished per hour (O(1) for
jobs of hours, where per second would sit near HiGHS's tolerances)."""

MAX_PROGRESS, RECLAIM = OBJECTIVES

KEEP, SHRINK, PREEMPT = "keep", "shrink", "preempt"


# --------------------------------------------------------------------------- max_progress
@dataclass(frozen=True)
class Options:
    """The options of ``max_progress``, one per column of ``pick`` (job-major; per job
    by type in ``workers`` order, then by worker count)."""

    job: np.ndarray
    type: np.ndarray
    workers: np.ndarray
    throughput: np.ndarray
    value: np.ndarray
    """``3600 * weight * throughput / steps_remaining`` (1/h)."""

    def __len__(self) -> int:
        return len(self.job)


def options_of(inst: GpuClusterInstance) -> Options:
    """Every ``(job, type, workers)`` with positive throughput that fits in
    ``workers + loanable``; a fixed-size job's only count is its ``scale_factor``."""
    types = list(inst.workers)
    cap = inst.capacity
    job, typ, wk, thr, val = [], [], [], [], []
    for i, j in enumerate(inst.jobs):
        steps = float(j.steps_remaining or np.nan)
        if j.elastic is not None:
            table = {
                t: list(zip(j.elastic.workers, v, strict=True))
                for t, v in j.elastic.throughput.items()
            }
        else:
            table = {t: [(j.scale_factor, v)] for t, v in (j.throughput or {}).items()}
        for k, t in enumerate(types):
            for w, v in table.get(t, []):
                if v > 0 and w <= cap[t]:
                    job.append(i)
                    typ.append(k)
                    wk.append(w)
                    thr.append(v)
                    val.append(HOUR_S * j.weight * v / steps)
    return Options(
        np.asarray(job, dtype=np.int64),
        np.asarray(typ, dtype=np.int64),
        np.asarray(wk, dtype=np.int64),
        np.asarray(thr, dtype=float),
        np.asarray(val, dtype=float),
    )


@dataclass(frozen=True)
class ProgressLayout:
    """What the ``max_progress`` extractor reads: the options in column order."""

    options: Options
    capacity: np.ndarray


def build_max_progress(inst: GpuClusterInstance) -> Built:
    """The multiple-choice knapsack MILP of ``max_progress``::

    max  sum_k value[k] * pick[k]
    s.t. c_one[i]:      sum_{k of job i} pick[k] <= 1
         c_capacity[t]: sum_{k on type t} workers[k] * pick[k] <= workers[t] + loanable[t]
         pick[k] in {0, 1}
    """
    opt = options_of(inst)
    types = list(inst.workers)
    n, T, K = len(inst.jobs), len(types), len(opt)
    cap = np.array([inst.capacity[t] for t in types], dtype=float)
    m = pyo.ConcreteModel(name="gpu_cluster_max_progress")
    m.JOBS = pyo.RangeSet(0, n - 1)
    m.TYPES = pyo.Set(initialize=types, ordered=True)
    m.OPTIONS = pyo.RangeSet(0, K - 1)
    m.pick = pyo.Var(m.OPTIONS, domain=pyo.Binary)
    x = list(m.pick.values())
    cols = np.arange(K)
    m.c_one = LinearRows.from_coo(opt.job, cols, np.ones(K), n, np.full(n, -INF), np.ones(n), x)
    m.c_capacity = LinearRows.from_coo(
        opt.type, cols, opt.workers.astype(float), T, np.full(T, -INF), cap, x
    )
    m.obj = pyo.Objective(
        expr=LinearExpression(
            constant=0.0, linear_coefs=[float(v) for v in opt.value], linear_vars=x
        ),
        sense=pyo.maximize,
    )
    return Built(m, ProgressLayout(opt, cap))


def progress_tables(
    inst: GpuClusterInstance, opt: Options, chosen: np.ndarray
) -> tuple[float, dict[str, pd.DataFrame]]:
    """The objective and the ``elastic_allocation`` / ``capacity`` tables of the chosen
    options (a boolean per option, at most one per job)."""
    types = list(inst.workers)
    n = len(inst.jobs)
    wtype = [""] * n
    workers = np.zeros(n, dtype=np.int64)
    thr = np.zeros(n)
    rate = np.zeros(n)
    for k in np.nonzero(chosen)[0]:
        i = int(opt.job[k])
        wtype[i] = types[int(opt.type[k])]
        workers[i] = int(opt.workers[k])
        thr[i] = float(opt.throughput[k])
        rate[i] = float(opt.value[k])
    alloc = pd.DataFrame(
        {
            "job": [j.id for j in inst.jobs],
            "worker_type": wtype,
            "workers": workers,
            "throughput": thr,
            "progress_per_h": rate,
            "elastic": [j.elastic is not None for j in inst.jobs],
        }
    )
    used = np.bincount(opt.type[chosen], opt.workers[chosen], minlength=len(types))
    used = used.astype(np.int64)
    loan = inst.loanable or {}
    own = np.array([inst.workers[t] for t in types], dtype=np.int64)
    capacity = pd.DataFrame(
        {
            "worker_type": types,
            "workers": own,
            "loanable": np.array([loan.get(t, 0) for t in types], dtype=np.int64),
            "used": used,
            "borrowed": np.maximum(used - own, 0),
        }
    )
    return float(rate.sum()), {"elastic_allocation": alloc, "capacity": capacity}


class MaxProgress(BuildMethodBase):
    """``max_progress``: the multiple-choice knapsack MILP, solved once."""

    lp_method = "auto"

    def build(self, instance: GpuClusterInstance, params: GpuClusterParams) -> Built:
        return build_max_progress(instance)

    def export_objective(
        self, instance: GpuClusterInstance, params: GpuClusterParams, built: Built
    ) -> None:
        """The MILP's objective is the reported one; only what a solve refuses is
        refused."""
        from .export import check

        check(instance, "max_progress", params)

    def describe(
        self, instance: GpuClusterInstance, params: GpuClusterParams, built: Built
    ) -> dict[str, Any]:
        return {
            "options": len(built.layout.options),
            "elastic_jobs": sum(j.elastic is not None for j in instance.jobs),
        }

    def extract(
        self,
        instance: GpuClusterInstance,
        params: GpuClusterParams,
        built: Built,
        solution: SolveView,
    ) -> Outcome:
        opt: Options = built.layout.options
        chosen = solution.values(built.model.pick, range(len(opt))) > 0.5
        value, tables = progress_tables(instance, opt, chosen)
        alloc, cap = tables["elastic_allocation"], tables["capacity"]
        details = {
            "jobs_running": int((alloc["workers"] > 0).sum()),
            "gpus_borrowed": int(cap["borrowed"].sum()),
        }
        # bound and gap: HiGHS's (the model's objective is the reported one)
        return Outcome(value, tables, details)


# --------------------------------------------------------------------------- reclaim
@dataclass(frozen=True)
class Placement:
    """The jobs on loaned servers, in the terms ``reclaim`` needs.

    ``gpus[j, k]`` GPUs of job ``jobs[j]`` on candidate server ``servers[k]``; per job its
    type, current workers ``now``, the worker counts it can run with there (``sizes``,
    ascending; a fixed-size job has only its ``scale_factor``), its GPUs on candidate
    servers ``loaned`` and its preemption ``cost``.
    """

    servers: np.ndarray
    """Indices into ``loaned_servers`` of the candidates (column order of ``ret``)."""
    jobs: np.ndarray
    """Indices into ``jobs`` of the jobs with GPUs on a candidate server."""
    gpus: np.ndarray
    wtype: tuple[str, ...]
    now: np.ndarray
    sizes: tuple[tuple[int, ...], ...]
    loaned: np.ndarray
    cost: np.ndarray
    elastic: np.ndarray

    @property
    def slack(self) -> np.ndarray:
        """GPUs each job can lose and still run (``now`` minus its smallest size)."""
        return self.now - np.array([s[0] for s in self.sizes], dtype=np.int64)


def job_state(inst: GpuClusterInstance) -> dict[str, tuple[str, int, int]]:
    """Per job on loaned servers: ``(type, GPUs on loaned servers, current workers)``."""
    on: dict[str, list[Any]] = {}
    for srv in inst.loaned_servers or []:
        for j, g in srv.jobs.items():
            rec = on.setdefault(j, [srv.worker_type, 0])
            rec[1] += g
    out = {}
    pos = {j.id: i for i, j in enumerate(inst.jobs)}
    for j, (t, g) in on.items():
        job = inst.jobs[pos[j]]
        if job.current_workers is not None:
            now = job.current_workers
        else:
            now = g if job.elastic is not None else job.scale_factor
        out[j] = (t, g, now)
    return out


def sizes_on(inst: GpuClusterInstance, i: int, wtype: str) -> tuple[int, ...]:
    """Worker counts job ``i`` can run with on ``wtype`` (ascending)."""
    job = inst.jobs[i]
    if job.elastic is None:
        return (job.scale_factor,)
    thr = job.elastic.throughput.get(wtype, [])
    return tuple(w for w, v in zip(job.elastic.workers, thr, strict=True) if v > 0)


def placement_of(inst: GpuClusterInstance, server_type: str | None) -> Placement:
    servers = reclaimable(inst, server_type)
    loaned = inst.loaned_servers or []
    pos = {j.id: i for i, j in enumerate(inst.jobs)}
    state = job_state(inst)
    on_candidate = sorted({pos[j] for k in servers for j in loaned[k].jobs})
    jobs = np.asarray(on_candidate, dtype=np.int64)
    row = {int(i): r for r, i in enumerate(jobs)}
    gpus = np.zeros((len(jobs), len(servers)), dtype=np.int64)
    for c, k in enumerate(servers):
        for j, g in loaned[k].jobs.items():
            gpus[row[pos[j]], c] = g
    wtype = tuple(state[inst.jobs[i].id][0] for i in jobs)
    now = np.array([state[inst.jobs[i].id][2] for i in jobs], dtype=np.int64)
    sizes = tuple(
        tuple(w for w in sizes_on(inst, int(i), t) if w <= n)
        for i, t, n in zip(jobs, wtype, now, strict=True)
    )
    cost = np.array(
        [
            1.0 if inst.jobs[i].preemption_cost is None else float(inst.jobs[i].preemption_cost)
            for i in jobs
        ]
    )
    elastic = np.array([inst.jobs[i].elastic is not None for i in jobs], dtype=bool)
    return Placement(
        np.asarray(servers, dtype=np.int64),
        jobs,
        gpus,
        wtype,
        now,
        sizes,
        gpus.sum(axis=1),
        cost,
        elastic,
    )


@dataclass(frozen=True)
class ReclaimLayout:
    """What the ``reclaim`` extractor reads."""

    placement: Placement
    at_risk: np.ndarray
    """Rows of the placement that can be preempted (one ``preempt`` column each)."""
    shrink_job: np.ndarray
    """Placement row of each ``keep`` column (``shrink_cost > 0`` only)."""
    shrink_size: np.ndarray
    """Worker count of each ``keep`` column."""


def build_reclaim(
    inst: GpuClusterInstance, servers: int, server_type: str | None, shrink_cost: float
) -> Built:
    """The ``reclaim`` MILP (see ``models/gpu_cluster_elastic.md``)::

    min  sum_j cost[j] * preempt[j] + shrink_cost * sum_{j,q} (now[j] - q) * keep[j,q]
    s.t. c_count:        sum_k ret[k] = servers
         c_survive[j]:   lost[j] - (loaned[j] - slack[j]) * preempt[j] <= slack[j]
         c_stop[j]:      lost[j] - (slack[j] + 1) * preempt[j] >= 0
         c_kill[j,k]:    preempt[j] - ret[k] >= 0      (gpus[j,k] > slack[j])
         c_size[j]:      sum_q keep[j,q] + preempt[j] = 1         (shrink_cost > 0)
         c_fit[j]:       sum_q q keep[j,q] + lost[j] - loaned[j] preempt[j] <= now[j]
    with lost[j] = sum_k gpus[j,k] * ret[k], all variables binary.
    """
    pl = placement_of(inst, server_type)
    S, J = len(pl.servers), len(pl.jobs)
    slack = pl.slack
    at_risk = np.nonzero(pl.loaned > slack)[0]
    P = len(at_risk)
    risk_col = np.full(J, -1)
    risk_col[at_risk] = np.arange(P)
    if shrink_cost > 0:
        pairs = [(r, q) for r in range(J) if pl.elastic[r] and slack[r] > 0 for q in pl.sizes[r]]
    else:
        pairs = []
    shrink_job = np.array([r for r, _ in pairs], dtype=np.int64)
    shrink_size = np.array([q for _, q in pairs], dtype=np.int64)
    Q = len(pairs)

    m = pyo.ConcreteModel(name="gpu_cluster_reclaim")
    m.SERVERS = pyo.RangeSet(0, S - 1)
    m.AT_RISK = pyo.RangeSet(0, P - 1)
    m.SIZES = pyo.RangeSet(0, Q - 1)
    m.ret = pyo.Var(m.SERVERS, domain=pyo.Binary)
    m.preempt = pyo.Var(m.AT_RISK, domain=pyo.Binary)
    m.keep = pyo.Var(m.SIZES, domain=pyo.Binary)
    x = [*m.ret.values(), *m.preempt.values(), *m.keep.values()]
    o_pre, o_keep = S, S + P

    m.c_count = LinearRows.from_coo(
        np.zeros(S, dtype=np.int64), np.arange(S), np.ones(S), 1,
        np.array([float(servers)]), np.array([float(servers)]), x,
    )  # fmt: skip
    # lost[j] over the at-risk jobs' rows
    jr, sc = np.nonzero(pl.gpus[at_risk])
    g = pl.gpus[at_risk][jr, sc].astype(float)
    sl, lo = slack[at_risk].astype(float), pl.loaned[at_risk].astype(float)
    m.c_survive = LinearRows.from_coo(
        np.concatenate([jr, np.arange(P)]),
        np.concatenate([sc, o_pre + np.arange(P)]),
        np.concatenate([g, -(lo - sl)]),
        P, np.full(P, -INF), sl, x,
    )  # fmt: skip
    m.c_stop = LinearRows.from_coo(
        np.concatenate([jr, np.arange(P)]),
        np.concatenate([sc, o_pre + np.arange(P)]),
        np.concatenate([g, -(sl + 1.0)]),
        P, np.zeros(P), np.full(P, INF), x,
    )  # fmt: skip
    kj, ks = np.nonzero(pl.gpus[at_risk] > slack[at_risk][:, None])
    R = len(kj)
    m.c_kill = LinearRows.from_coo(
        np.concatenate([np.arange(R), np.arange(R)]),
        np.concatenate([o_pre + kj, ks]),
        np.concatenate([np.ones(R), -np.ones(R)]),
        R, np.zeros(R), np.full(R, INF), x,
    )  # fmt: skip
    shrinkers = np.unique(shrink_job)
    srow = np.full(J, -1)
    srow[shrinkers] = np.arange(len(shrinkers))
    N = len(shrinkers)
    pre_r = shrinkers[risk_col[shrinkers] >= 0]
    m.c_size = LinearRows.from_coo(
        np.concatenate([srow[shrink_job], srow[pre_r]]),
        np.concatenate([o_keep + np.arange(Q), o_pre + risk_col[pre_r]]),
        np.ones(Q + len(pre_r)),
        N, np.ones(N), np.ones(N), x,
    )  # fmt: skip
    fj, fs = np.nonzero(pl.gpus[shrinkers]) if N else (np.zeros(0, int), np.zeros(0, int))
    m.c_fit = LinearRows.from_coo(
        np.concatenate([srow[shrink_job], fj, srow[pre_r]]),
        np.concatenate([o_keep + np.arange(Q), fs, o_pre + risk_col[pre_r]]),
        np.concatenate(
            [
                shrink_size.astype(float),
                pl.gpus[shrinkers][fj, fs].astype(float) if N else np.zeros(0),
                -pl.loaned[pre_r].astype(float),
            ]
        ),
        N, np.full(N, -INF), pl.now[shrinkers].astype(float), x,
    )  # fmt: skip
    coefs = [float(c) for c in pl.cost[at_risk]]
    coefs += [float(shrink_cost * (pl.now[r] - q)) for r, q in pairs]
    m.obj = pyo.Objective(
        expr=LinearExpression(
            constant=0.0, linear_coefs=coefs, linear_vars=[*m.preempt.values(), *m.keep.values()]
        ),
        sense=pyo.minimize,
    )
    return Built(m, ReclaimLayout(pl, at_risk, shrink_job, shrink_size))


def reclaim_tables(
    inst: GpuClusterInstance, returned: set[int], shrink_cost: float
) -> tuple[float, dict[str, pd.DataFrame]]:
    """The objective and the ``loaned_servers`` / ``reclaim_jobs`` tables when the loaned
    servers ``returned`` (indices) go back: every job loses its GPUs there, an elastic job
    shrinks to its largest worker count that fits in what is left, or is preempted."""
    loaned = inst.loaned_servers or []
    state = job_state(inst)
    lost: dict[str, int] = {}
    for k in returned:
        for j, g in loaned[k].jobs.items():
            lost[j] = lost.get(j, 0) + g
    rows = []
    total = 0.0
    for i, job in enumerate(inst.jobs):
        if job.id in state:
            t, g, now = state[job.id]
        else:
            t, g = "", 0
            now = job.current_workers or (job.scale_factor if job.elastic is None else 0)
        gone = lost.get(job.id, 0)
        after, action, cost = now, KEEP, 0.0
        if gone > 0:
            fits = [w for w in sizes_on(inst, i, t) if w <= now - gone]
            if fits:
                after, action = max(fits), SHRINK
                cost = shrink_cost * (now - after)
            else:
                after, action = 0, PREEMPT
                cost = 1.0 if job.preemption_cost is None else float(job.preemption_cost)
        total += cost
        rows.append((job.id, t, g, gone, now, after, action, cost))
    jobs = pd.DataFrame(
        rows,
        columns=[
            "job", "worker_type", "loaned_gpus", "gpus_lost",
            "workers_before", "workers_after", "action", "cost",
        ],
    )  # fmt: skip
    servers = pd.DataFrame(
        {
            "server": [s.id for s in loaned],
            "worker_type": [s.worker_type for s in loaned],
            "gpus": np.array([s.gpus for s in loaned], dtype=np.int64),
            "gpus_used": np.array([sum(s.jobs.values()) for s in loaned], dtype=np.int64),
            "returned": [k in returned for k in range(len(loaned))],
        }
    )
    return total, {"loaned_servers": servers, "reclaim_jobs": jobs}


class Reclaim(BuildMethodBase):
    """``reclaim``: the server-return MILP, solved once."""

    lp_method = "auto"

    def build(self, instance: GpuClusterInstance, params: GpuClusterParams) -> Built:
        return build_reclaim(instance, params.servers, params.server_type, params.shrink_cost)

    def export_objective(
        self, instance: GpuClusterInstance, params: GpuClusterParams, built: Built
    ) -> None:
        """The MILP's objective is the reported one; only what a solve refuses is
        refused."""
        from .export import check

        check(instance, "reclaim", params)

    def describe(
        self, instance: GpuClusterInstance, params: GpuClusterParams, built: Built
    ) -> dict[str, Any]:
        return {
            "servers_requested": int(params.servers),
            "server_type": params.server_type,
            "shrink_cost": float(params.shrink_cost),
        }

    def options(
        self,
        instance: GpuClusterInstance,
        params: GpuClusterParams,
        built: Built,
        options: SolveOptions,
    ) -> SolveOptions:
        """With whole-number costs a gap below one proves optimality (unless the user
        set ``mip_abs_gap``)."""
        lay: ReclaimLayout = built.layout
        costs = lay.placement.cost[lay.at_risk]
        whole = np.all(costs == np.round(costs)) and float(params.shrink_cost).is_integer()
        if whole and "mip_abs_gap" not in options.highs_options:
            return options.replace(
                highs_options={**options.highs_options, "mip_abs_gap": 1.0 - 1e-3}
            )
        return options

    def extract(
        self,
        instance: GpuClusterInstance,
        params: GpuClusterParams,
        built: Built,
        solution: SolveView,
    ) -> Outcome:
        lay: ReclaimLayout = built.layout
        ret = solution.values(built.model.ret, range(len(lay.placement.servers))) > 0.5
        returned = {int(k) for k in lay.placement.servers[ret]}
        value, tables = reclaim_tables(instance, returned, params.shrink_cost)
        jobs = tables["reclaim_jobs"]
        loaned = instance.loaned_servers or []
        details = {
            "preempted_jobs": int((jobs["action"] == PREEMPT).sum()),
            "shrunk_jobs": int((jobs["action"] == SHRINK).sum()),
            "gpus_returned": int(sum(loaned[k].gpus for k in returned)),
        }
        return Outcome(value, tables, details)
