"""Pyomo formulations of the rest of Gavel's policy family (see ``models/gpu_cluster_*.md``).

Pure functions of :class:`ClusterArrays` that return a Pyomo model and never solve:
finish-time fairness (one feasibility LP per ratio, re-solved by bisection), total
throughput and throughput per dollar (a Charnes-Cooper LP). The water-filling LPs reuse
:func:`~hetopt.kinds.gpu_cluster.formulations.build_max_min_fairness`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo
from pyomo.core.expr.numeric_expr import LinearExpression

from ...contract import Built
from ...pyomo_ext import LinearRows
from .data import ClusterArrays
from .formulations import INF, Pairs, _base


@dataclass(frozen=True)
class SloLayout:
    """A model with one row per job with an SLO: the allocation columns (``alloc``, or
    ``y`` of the Charnes-Cooper LP) and those jobs' indices."""

    pairs: Pairs
    slo_jobs: np.ndarray


# ----------------------------------------------------------------------- helpers


def best_throughput(arr: ClusterArrays, thr: np.ndarray) -> np.ndarray:
    """Each job's fastest usable throughput ``max_t thr[i,t]`` over allowed types."""
    return np.where(arr.allowed, thr, 0.0).max(axis=1)


def isolated_throughput(arr: ClusterArrays, thr: np.ndarray) -> np.ndarray:
    """Throughput of each job under an isolated ``1/N`` share of the cluster.

    The job gets ``W / N`` GPUs (``W`` GPUs in total, ``N`` jobs) spread over the types
    in proportion to their counts, at most full time: time fraction
    ``workers[t] / W * min(1, W / (N * scale_i))`` on every type it may use.
    """
    W = float(arr.workers.sum())
    share = np.minimum(1.0, W / (arr.num_jobs * arr.scale))
    usable = np.where(arr.allowed, thr, 0.0)
    return (usable @ arr.workers / W) * share


def throughput_value_coefficients(arr: ClusterArrays, thr: np.ndarray) -> np.ndarray:
    """``weight_i * thr[i,t] / max_t thr[i,t]``: the normalised throughput of each pair.

    A job's normalised throughput is the fraction of its top speed it gets (1 = running
    full time on its fastest type), weighted by its priority ``weight``.
    """
    best = best_throughput(arr, thr)
    return (arr.weight / best)[:, None] * thr


def _linear(coefs: np.ndarray, xs: list) -> LinearExpression:
    keep = np.nonzero(coefs)[0]
    return LinearExpression(
        linear_coefs=[float(coefs[k]) for k in keep],
        linear_vars=[xs[k] for k in keep],
        constant=0,
    )


# ------------------------------------------------------------ finish-time fairness


def build_finish_time_fairness(arr: ClusterArrays, thr: np.ndarray) -> Built:
    """The feasibility LP of finish-time fairness at one ratio ``rho``.

    ``c_finish[i]: sum_t thr[i,t] / best_i * alloc[i,t] >= need_i(rho) / best_i`` with
    ``need_i(rho) = steps_i / (rho * iso_time_i - elapsed_i)``; the row lower bounds
    are set for each ``rho`` by the solver loop (they start at ``rho = 1``). Objective:
    use as few GPUs as possible (``sum scale_i * alloc[i,t] / W``), a tie-breaker.
    """
    pairs = Pairs.of(arr)
    m, base = _base(arr, pairs)
    best = best_throughput(arr, thr)
    n, K = arr.num_jobs, len(pairs)
    coef = (thr / best[:, None])[pairs.job, pairs.type]
    m.c_finish = LinearRows.from_coo(
        pairs.job, np.arange(K), coef, n, np.zeros(n), np.full(n, INF), base.alloc
    )
    m.z.fix(0.0)
    W = float(arr.workers.sum())
    m.obj = pyo.Objective(
        expr=_linear(arr.scale[pairs.job] / W, list(base.alloc)), sense=pyo.minimize
    )
    return Built(m, base)


# ------------------------------------------------------------------- throughput


def build_max_total_throughput(arr: ClusterArrays, thr: np.ndarray) -> Built:
    """Maximise the total normalised throughput ``sum_i weight_i * thr_i(X) / best_i``.

    The objective is divided by ``N`` (the mean) so it is O(1).
    """
    pairs = Pairs.of(arr)
    m, base = _base(arr, pairs)
    m.z.fix(0.0)
    coef = throughput_value_coefficients(arr, thr)[pairs.job, pairs.type] / arr.num_jobs
    m.obj = pyo.Objective(expr=_linear(coef, list(base.alloc)), sense=pyo.maximize)
    return Built(m, base)


def build_min_cost(
    arr: ClusterArrays,
    thr: np.ndarray,
    cost: np.ndarray,
    slo_need: np.ndarray,
) -> Built:
    """Maximise normalised throughput per dollar, exactly, as one LP (Charnes-Cooper).

    With ``y = s * X`` and ``s = c_ref / cost(X)``::

        max  sum_{i,t} weight_i * thr[i,t] / best_i * y[i,t]
        s.t. c_time[i]:     sum_t y[i,t] - s <= 0
             c_capacity[t]: sum_i scale_i * y[i,t] - workers[t] * s <= 0
             c_slo[i]:      sum_t thr[i,t] / need_i * y[i,t] - s >= 0   (jobs with an SLO)
             c_cost:        sum_{i,t} cost[t] / c_ref * scale_i * y[i,t] = 1

    ``need_i = steps_i / deadline_i`` (``NaN`` = no SLO); ``c_ref`` is the price of the
    dearest GPU type, so ``s >= 1`` once one GPU-hour is paid for. The c_slo lower bounds
    can be lowered by the solver when not every SLO can be met.
    """
    pairs = Pairs.of(arr)
    n, K, T = arr.num_jobs, len(pairs), len(arr.types)
    m = pyo.ConcreteModel(name="gpu_cluster_min_cost")
    m.JOBS = pyo.RangeSet(0, n - 1)
    m.TYPES = pyo.Set(initialize=arr.types, ordered=True)
    m.PAIRS = pyo.RangeSet(0, K - 1)
    m.y = pyo.Var(m.PAIRS, bounds=(0.0, None))
    ys = list(m.y.values())
    fits = arr.allowed[pairs.job, pairs.type]
    for k in np.nonzero(~fits)[0]:
        ys[k].setub(0.0)
    m.s = pyo.Var(bounds=(0.0, None))
    cols = np.arange(K)
    xs = [*ys, m.s]
    m.c_time = LinearRows.from_coo(
        np.concatenate([pairs.job, np.arange(n)]),
        np.concatenate([cols, np.full(n, K)]),
        np.concatenate([np.ones(K), -np.ones(n)]),
        n,
        np.full(n, -INF),
        np.zeros(n),
        xs,
    )
    m.c_capacity = LinearRows.from_coo(
        np.concatenate([pairs.type, np.arange(T)]),
        np.concatenate([cols, np.full(T, K)]),
        np.concatenate([arr.scale[pairs.job], -arr.workers]),
        T,
        np.full(T, -INF),
        np.zeros(T),
        xs,
    )
    slo_jobs = np.nonzero(np.isfinite(slo_need))[0]
    if len(slo_jobs):
        pos = np.full(n, -1)
        pos[slo_jobs] = np.arange(len(slo_jobs))
        sel = pos[pairs.job] >= 0
        r = len(slo_jobs)
        m.c_slo = LinearRows.from_coo(
            np.concatenate([pos[pairs.job][sel], np.arange(r)]),
            np.concatenate([cols[sel], np.full(r, K)]),
            np.concatenate([(thr[pairs.job, pairs.type] / slo_need[pairs.job])[sel], -np.ones(r)]),
            r,
            np.zeros(r),
            np.full(r, INF),
            xs,
        )
    c_ref = float(cost.max())
    m.c_ref = pyo.Param(initialize=c_ref, mutable=False)
    ccoef = cost[pairs.type] / c_ref * arr.scale[pairs.job]
    m.c_cost = pyo.Constraint(expr=_linear(ccoef, ys) == 1.0)
    vcoef = throughput_value_coefficients(arr, thr)[pairs.job, pairs.type]
    m.obj = pyo.Objective(expr=_linear(vcoef, ys), sense=pyo.maximize)
    return Built(m, SloLayout(pairs, slo_jobs))


def build_slo_phase1(arr: ClusterArrays, thr: np.ndarray, slo_need: np.ndarray) -> Built:
    """Meet as much of every SLO as possible: ``min sum_i short[i]`` with
    ``c_slo[i]: sum_t thr[i,t] / need_i * alloc[i,t] + short[i] >= 1``, ``0 <= short <= 1``.

    ``short[i] > 0`` in the optimum marks a job whose SLO cannot be met together with the
    others (the sum of shortfalls is minimal, so the set is not arbitrary).
    """
    pairs = Pairs.of(arr)
    m, base = _base(arr, pairs)
    m.z.fix(0.0)
    slo_jobs = np.nonzero(np.isfinite(slo_need))[0]
    r = len(slo_jobs)
    m.SLO_JOBS = pyo.RangeSet(0, r - 1)
    m.short = pyo.Var(m.SLO_JOBS, bounds=(0.0, 1.0))
    shorts = list(m.short.values())
    pos = np.full(arr.num_jobs, -1)
    pos[slo_jobs] = np.arange(r)
    sel = pos[pairs.job] >= 0
    K = len(pairs)
    m.c_slo = LinearRows.from_coo(
        np.concatenate([pos[pairs.job][sel], np.arange(r)]),
        np.concatenate([np.arange(K)[sel], K + np.arange(r)]),
        np.concatenate([(thr[pairs.job, pairs.type] / slo_need[pairs.job])[sel], np.ones(r)]),
        r,
        np.ones(r),
        np.full(r, INF),
        [*base.alloc, *shorts],
    )
    m.obj = pyo.Objective(expr=_linear(np.ones(r), shorts), sense=pyo.minimize)
    return Built(m, SloLayout(pairs, slo_jobs))
