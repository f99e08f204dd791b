"""Pyomo formulations of the ``gpu_cluster`` policies (see ``models/gpu_cluster.md``).

Every builder is a pure function of :class:`ClusterArrays`: it returns a Pyomo model and
never solves. Variables exist only for (job, type) pairs with positive throughput, so
the model grows with the pairs a job can use, not with jobs x types. Row blocks are
:class:`~hetopt.pyomo_ext.LinearRows` (vectorised Pyomo constraints): building 20,000
jobs takes a few numpy operations plus the Pyomo variables.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo

from ...pyomo_ext import LinearRows
from .data import ClusterArrays

INF = float("inf")


@dataclass(frozen=True)
class Pairs:
    """The (job, type) pairs with positive throughput, in column order."""

    job: np.ndarray
    type: np.ndarray

    @classmethod
    def of(cls, arr: ClusterArrays) -> Pairs:
        # job-major order: each job's columns are adjacent
        job, typ = np.nonzero(arr.thr > 0)
        return cls(job.astype(np.int64), typ.astype(np.int64))

    def __len__(self) -> int:
        return len(self.job)


def _base(arr: ClusterArrays, pairs: Pairs, mult: np.ndarray | None = None) -> pyo.ConcreteModel:
    """Sets, the allocation variables, ``z`` and the two resource constraints.

    Pairs whose type has fewer GPUs than the job's ``scale_factor`` get a column with
    upper bound 0, so a capacity change in a persistent model can open them. ``mult``
    (optional) makes each row of ``arr`` stand for ``mult[i]`` identical jobs (their
    GPUs count ``mult`` times in ``c_capacity``).
    """
    m = pyo.ConcreteModel(name="gpu_cluster")
    n, K = arr.num_jobs, len(pairs)
    m.JOBS = pyo.RangeSet(0, n - 1)
    m.TYPES = pyo.Set(initialize=arr.types, ordered=True)
    m.PAIRS = pyo.RangeSet(0, K - 1)
    m.alloc = pyo.Var(m.PAIRS, bounds=(0.0, 1.0))
    alloc = list(m.alloc.values())
    fits = arr.allowed[pairs.job, pairs.type]
    for k in np.nonzero(~fits)[0]:
        alloc[k].setub(0.0)
    m.z = pyo.Var(bounds=(0.0, None))
    m._pairs = pairs
    m._alloc_list = alloc

    cols = np.arange(K)
    # c_time[i]: sum_t alloc[i,t] <= 1
    m.c_time = LinearRows.from_coo(
        pairs.job, cols, np.ones(K), n, np.full(n, -INF), np.ones(n), alloc
    )
    # c_capacity[t]: sum_i scale_i * alloc[i,t] <= workers[t]
    T = len(arr.types)
    m.c_capacity = LinearRows.from_coo(
        pairs.type,
        cols,
        arr.scale[pairs.job] * (1.0 if mult is None else mult[pairs.job]),
        T,
        np.full(T, -INF),
        arr.workers.astype(float),
        alloc,
    )
    return m


def _per_job_rows(m: pyo.ConcreteModel, pairs: Pairs, n: int, coef: np.ndarray) -> LinearRows:
    """``sum_t coef[k] * alloc[k] - z >= 0`` for every job (columns: alloc..., z)."""
    K = len(pairs)
    rows = np.concatenate([pairs.job, np.arange(n)])
    cols = np.concatenate([np.arange(K), np.full(n, K)])
    vals = np.concatenate([coef, -np.ones(n)])
    return LinearRows.from_coo(
        rows, cols, vals, n, np.zeros(n), np.full(n, INF), [*m._alloc_list, m.z]
    )


def contention(arr: ClusterArrays, mult: np.ndarray | None = None) -> float:
    """Scale factor that keeps the max-min objective O(1): GPUs wanted / GPUs present."""
    wanted = arr.scale.sum() if mult is None else (arr.scale * mult).sum()
    return max(1.0, float(wanted / arr.workers.sum()))


MAX_KAPPA_SPAN = 1e6
"""Largest ``kappa * upper`` (the scaled best value of the worst-off job) kept as is."""


def bounded_kappa(kappa: float, upper: float) -> float:
    """``kappa``, unless the scaled values would be huge (``kappa * upper`` above
    :data:`MAX_KAPPA_SPAN`, e.g. every weight 1e-15): then ``1 / upper``, so the worst-off
    job's best value is 1 and no row coefficient reaches HiGHS's limit (issue 21)."""
    if upper > 0 and kappa * upper > MAX_KAPPA_SPAN:
        return 1.0 / upper
    return kappa


def max_min_coefficients(
    arr: ClusterArrays, thr: np.ndarray, weight: np.ndarray | None = None
) -> np.ndarray:
    """``scale_i * thr[i,t] / (weight_i * p_i)`` for every job and type."""
    p = arr.proportional_throughput(thr)
    w = arr.weight if weight is None else weight
    return (arr.scale / (w * p))[:, None] * thr


def build_max_min_fairness(
    arr: ClusterArrays,
    thr: np.ndarray | None = None,
    weight: np.ndarray | None = None,
    mult: np.ndarray | None = None,
) -> pyo.ConcreteModel:
    """Gavel's heterogeneity-aware max-min fairness LP.

    ``thr`` overrides the throughputs used to *allocate* (the agnostic baseline);
    ``weight`` overrides the job weights (entity weights in water-filling); ``mult``
    makes row ``i`` stand for ``mult[i]`` identical jobs (symmetry groups). The
    objective variable is ``z = kappa * min_i value_i`` with ``kappa`` the larger of
    :func:`contention` and ``1 / min_i (best value job i could reach alone)`` (or that
    reciprocal alone when the values are huge, :func:`bounded_kappa`), so it is O(1)
    however oversubscribed the cluster or extreme the weights.
    """
    thr = arr.thr if thr is None else thr
    pairs = Pairs.of(arr)
    m = _base(arr, pairs, mult)
    full = max_min_coefficients(arr, thr, weight)
    # no job's value can exceed its best type full time: if even that bound is tiny
    # (e.g. a weight of 1e9), scale z up so the optimum is O(1) and not lost below
    # HiGHS's tolerances
    upper = float(np.where(arr.allowed, full, 0.0).max(axis=1).min())
    kappa = max(contention(arr, mult), 1.0 / upper if upper > 0 else 1.0)
    kappa = bounded_kappa(kappa, upper)  # nor lost above them (tiny weights)
    m.kappa = pyo.Param(initialize=kappa, mutable=False)
    coef = full[pairs.job, pairs.type] * kappa
    # c_fair[i]: sum_t kappa * scale_i * thr[i,t] / (weight_i * p_i) * alloc[i,t] >= z
    m.c_fair = _per_job_rows(m, pairs, arr.num_jobs, coef)
    m.obj = pyo.Objective(expr=m.z, sense=pyo.maximize)
    return m


def makespan_reference(arr: ClusterArrays, thr: np.ndarray) -> float:
    """A lower bound on the makespan, used to scale the makespan LP (z in (0, 1]).

    The larger of (a) the longest job on its fastest usable type full time and (b) the
    GPU-seconds all jobs need on their fastest types divided by the GPUs present.
    """
    best = np.where(arr.allowed, thr, 0.0).max(axis=1)
    per_job = arr.steps / best
    total = float((arr.scale * per_job).sum() / arr.workers.sum())
    return max(float(per_job.max()), total)


def build_makespan(arr: ClusterArrays, thr: np.ndarray | None = None) -> pyo.ConcreteModel:
    """Exact minimum-makespan LP: maximise ``z = t_ref / T`` subject to
    ``sum_t thr[i,t] * t_ref / steps_i * alloc[i,t] >= z`` for every job."""
    thr = arr.thr if thr is None else thr
    pairs = Pairs.of(arr)
    m = _base(arr, pairs)
    t_ref = makespan_reference(arr, thr)
    m.t_ref = pyo.Param(initialize=t_ref, mutable=False)
    coef = (thr * (t_ref / arr.steps)[:, None])[pairs.job, pairs.type]
    # c_progress[i]: sum_t thr[i,t] * t_ref / steps_i * alloc[i,t] >= z
    m.c_progress = _per_job_rows(m, pairs, arr.num_jobs, coef)
    m.obj = pyo.Objective(expr=m.z, sense=pyo.maximize)
    return m
