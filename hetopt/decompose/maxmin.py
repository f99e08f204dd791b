"""Gavel's max-min fairness LP with an *explicit* normalisation, for sub-problems.

A sub-problem of a partitioned ``gpu_cluster`` instance owns only part of the GPUs, but
the objective must stay the one of the whole cluster: job ``i``'s normalised throughput
is ``scale_i * sum_t thr[i,t] x[i,t] / (weight_i * p_i)`` with Gavel's
``p_i = sum_t thr[i,t] W_t / sum_t W_t`` computed from the WHOLE cluster's counts ``W``.
Re-deriving ``p_i`` from a sub-cluster's counts would change the objective, so
:class:`MaxMinProblem` carries ``norm`` (= the original ``p_i``) as data.

The same LP, with an extra per-type coefficient on ``z`` in the capacity rows, is the
repair LP of :mod:`hetopt.decompose` (see ``models/decomposition.md``); and
:class:`PersistentMaxMin` keeps it in one live HiGHS model whose jobs are switched on
and off by bounds, for rolling-horizon re-solves.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyomo.environ as pyo

from ..highs import HighsModel, compile_model
from ..options import SolveOptions
from ..pyomo_ext import LinearRows
from ..status import Status

INF = float("inf")
LP_METHOD = "ipm"  # as the gpu_cluster kind: measured faster than simplex from a cold start


@dataclass(frozen=True)
class MaxMinProblem:
    """Data of one max-min fairness LP (picklable: this travels to workers).

    ``max z`` s.t. ``sum_t coef[i,t] x[i,t] >= z`` (every job),
    ``sum_t x[i,t] <= 1``, ``sum_i scale_i x[i,t] + z_usage[t] z <= capacity[t]``,
    ``0 <= x[i,t] <= allowed[i,t]``, ``z <= z_max``, where
    ``coef[i,t] = scale_i thr[i,t] / (weight_i norm_i)``.
    """

    thr: np.ndarray
    """jobs x types steps/s used to allocate (the agnostic view for the baseline)."""
    scale: np.ndarray
    weight: np.ndarray
    norm: np.ndarray
    """The whole cluster's ``p_i`` (never recomputed from ``capacity``)."""
    allowed: np.ndarray
    capacity: np.ndarray
    """GPUs of each type this sub-problem owns (may be fractional)."""
    jobs: np.ndarray
    """Indices of these jobs in the original instance."""
    z_usage: np.ndarray | None = None
    z_max: float | None = None

    @property
    def num_jobs(self) -> int:
        return len(self.jobs)

    def coefficients(self) -> np.ndarray:
        return (self.scale / (self.weight * self.norm))[:, None] * np.where(
            self.allowed, self.thr, 0.0
        )


@dataclass
class MaxMinSolution:
    """Allocation and level of one solved :class:`MaxMinProblem`."""

    X: np.ndarray
    """jobs x types time fractions (rows in ``problem.jobs`` order)."""
    z: float
    status: Status
    termination: str
    timings: dict[str, float] = field(default_factory=dict)


def kappa_of(problem: MaxMinProblem) -> float:
    """Keeps ``z`` O(1): GPUs wanted per GPU owned (as the kind's ``contention``)."""
    cap = float(problem.capacity.sum())
    return max(1.0, float(problem.scale.sum()) / cap) if cap > 0 else 1.0


def build_max_min(problem: MaxMinProblem) -> pyo.ConcreteModel:
    """The Pyomo model of ``problem`` (``z`` is scaled by :func:`kappa_of`)."""
    n, T = problem.thr.shape
    job, typ = np.nonzero(problem.allowed & (problem.thr > 0))
    K = len(job)
    m = pyo.ConcreteModel(name="gpu_cluster_part")
    m.JOBS = pyo.RangeSet(0, n - 1)
    m.TYPES = pyo.RangeSet(0, T - 1)
    m.PAIRS = pyo.RangeSet(0, K - 1) if K else pyo.Set(initialize=[])
    m.alloc = pyo.Var(m.PAIRS, bounds=(0.0, 1.0))
    kappa = kappa_of(problem)
    m.kappa = pyo.Param(initialize=kappa, mutable=False)
    z_ub = None if problem.z_max is None else problem.z_max * kappa
    m.z = pyo.Var(bounds=(0.0, z_ub))
    alloc = list(m.alloc.values())
    cols = np.arange(K)
    zcol = K
    xs = [*alloc, m.z]
    m._pairs = (job, typ)
    # c_time[i]: sum_t alloc[i,t] <= 1
    m.c_time = LinearRows.from_coo(job, cols, np.ones(K), n, np.full(n, -INF), np.ones(n), xs)
    # c_capacity[t]: sum_i scale_i alloc[i,t] + z_usage[t] / kappa * z <= capacity[t]
    rows, cc, vals = [typ], [cols], [problem.scale[job]]
    if problem.z_usage is not None:
        rows.append(np.arange(T))
        cc.append(np.full(T, zcol))
        vals.append(problem.z_usage / kappa)
    m.c_capacity = LinearRows.from_coo(
        np.concatenate(rows),
        np.concatenate(cc),
        np.concatenate(vals),
        T,
        np.full(T, -INF),
        problem.capacity.astype(float),
        xs,
    )
    # c_fair[i]: sum_t kappa * coef[i,t] alloc[i,t] - z >= 0
    coef = problem.coefficients()[job, typ] * kappa
    m.c_fair = LinearRows.from_coo(
        np.concatenate([job, np.arange(n)]),
        np.concatenate([cols, np.full(n, zcol)]),
        np.concatenate([coef, -np.ones(n)]),
        n,
        np.zeros(n),
        np.full(n, INF),
        xs,
    )
    m.obj = pyo.Objective(expr=m.z, sense=pyo.maximize)
    return m


def _read(m: pyo.ConcreteModel, hm: HighsModel, x: np.ndarray, n: int, T: int) -> np.ndarray:
    job, typ = m._pairs
    cols = hm.compiled.columns_of(m.alloc, range(len(job)))
    vals = np.zeros(len(job))
    ok = cols >= 0
    vals[ok] = x[cols[ok]]
    X = np.zeros((n, T))
    X[job, typ] = np.clip(vals, 0.0, 1.0)
    X[X < 1e-10] = 0.0
    return X


def solve_max_min(problem: MaxMinProblem, options: SolveOptions | None = None) -> MaxMinSolution:
    """Build and solve one sub-problem (what a worker runs; use ``threads=1`` there)."""
    options = options or SolveOptions(threads=1)
    n, T = problem.thr.shape
    t0 = time.perf_counter()
    m = build_max_min(problem)
    t1 = time.perf_counter()
    hm = HighsModel(compile_model(m))
    t2 = time.perf_counter()
    raw = hm.solve(options, LP_METHOD)
    t3 = time.perf_counter()
    timings = {"build_s": t1 - t0, "transfer_s": t2 - t1, "solve_s": raw.solve_s}
    if not raw.status.has_solution or raw.x is None:
        return MaxMinSolution(np.zeros((n, T)), 0.0, raw.status, raw.termination, timings)
    X = _read(m, hm, raw.x, n, T)
    z = raw.value(hm.compiled, m.z) / float(pyo.value(m.kappa))
    timings["load_s"] = time.perf_counter() - t3
    return MaxMinSolution(X, z, raw.status, raw.termination, timings)


class PersistentMaxMin:
    """One max-min LP over a fixed job universe, kept live in HiGHS.

    Jobs are switched on and off with :meth:`set_active` (an inactive job's columns get
    upper bound 0 and its fairness row is relaxed), so a scheduler that sees arrivals and
    completions re-solves from the previous basis instead of rebuilding. The
    normalisation ``norm`` and ``kappa`` do not depend on the active set, so the LP of
    the active jobs is exactly Gavel's LP of those jobs.
    """

    def __init__(self, problem: MaxMinProblem, options: SolveOptions | None = None):
        self.problem = problem
        self.options = options or SolveOptions(threads=1)
        t0 = time.perf_counter()
        self.model = build_max_min(problem)
        self._hm = HighsModel(compile_model(self.model))
        self.setup_s = time.perf_counter() - t0
        m, cm = self.model, self._hm.compiled
        job = m._pairs[0]
        self._job = job
        self._cols = cm.columns_of(m.alloc, range(len(job))).astype(np.int32)
        self._fair_rows = np.array(
            [self._hm.row(m.c_fair[i]) for i in range(problem.num_jobs)], dtype=np.int32
        )
        self.active = np.ones(problem.num_jobs, dtype=bool)

    def set_active(self, active: np.ndarray) -> None:
        """Make exactly the jobs with ``active[i]`` take part in the next solve."""
        active = np.asarray(active, dtype=bool)
        changed = np.nonzero(active != self.active)[0]
        if len(changed) == 0:
            return
        h = self._hm.highs
        rows = self._fair_rows[changed]
        lo = np.where(active[changed], 0.0, -np.inf)
        h.changeRowsBounds(len(rows), rows, lo, np.full(len(rows), np.inf))
        pick = np.isin(self._job, changed)
        cols = self._cols[pick]
        ok = cols >= 0
        ub = active[self._job[pick]].astype(float)
        h.changeColsBounds(int(ok.sum()), cols[ok], np.zeros(int(ok.sum())), ub[ok])
        self.active = active.copy()

    def solve(self) -> MaxMinSolution:
        """Re-solve (warm from the previous basis after the first call)."""
        n, T = self.problem.thr.shape
        raw = self._hm.solve(self.options, LP_METHOD)
        timings: dict[str, Any] = {"solve_s": raw.solve_s}
        if not raw.status.has_solution or raw.x is None:
            return MaxMinSolution(np.zeros((n, T)), 0.0, raw.status, raw.termination, timings)
        X = _read(self.model, self._hm, raw.x, n, T)
        X[~self.active] = 0.0
        z = raw.value(self._hm.compiled, self.model.z) / float(pyo.value(self.model.kappa))
        return MaxMinSolution(X, z, raw.status, raw.termination, timings)
