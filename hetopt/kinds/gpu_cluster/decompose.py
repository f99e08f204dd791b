"""Decomposition of ``gpu_cluster`` instances (the kind's
:class:`~hetopt.contract.Decomposer`; the generic driver is :mod:`hetopt.decompose`).

* **exact**: the connected components of the job-type compatibility graph share no GPU,
  so ``max_min_fairness`` (min), ``makespan`` (max) and ``max_total_throughput`` (sum)
  separate. Each component's sub-instance keeps the whole cluster's worker counts (the
  max-min normalisation ``p_i`` depends on them; types outside a component are unusable
  by its jobs, so the extra capacity rows are slack and ``p_i`` is unchanged).
* **approximate** (:func:`solve_partitioned`, max-min fairness): jobs and GPUs are split
  into ``k`` parts, each part is solved with the ORIGINAL ``p_i`` passed explicitly
  (:class:`~hetopt.kinds.gpu_cluster.maxmin.MaxMinProblem`), the allocations are merged
  and (``method="stratified"``) repaired by a small LP (:func:`repair_max_min`).
  ``method="pop"`` is POP's baseline (random parts, ``floor(W_t / k)`` GPUs each, no
  repair).

Each part (and the repair LP) is solved over its symmetry groups (:func:`group_problem`:
identical jobs as one row whose GPUs count once per job; exact, as the kind's own
``symmetry`` parameter) unless ``symmetry=False`` or ``agnostic=True``. Parts travel to
workers as :class:`~hetopt.kinds.gpu_cluster.maxmin.MaxMinProblem` (numpy arrays only);
where they run is :func:`hetopt.decompose.place`'s choice, from :func:`part_seconds`.

The mathematics is in ``models/decomposition.md``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np
import pandas as pd

from ...contract import Detail, Outcome
from ...decompose import (
    finish_merged,
    not_separable,
    place,
    session_for,
    sum_timings,
    wire,
    worker_options,
)
from ...errors import UsageError
from ...executors import SubmitExecutor, run_all
from ...options import SolveOptions
from ...result import Result
from ...status import Status
from .formulations import row_groups as _row_groups
from .maxmin import MaxMinProblem, MaxMinSolution, kappa_of

if TYPE_CHECKING:
    from ...highs import CompiledModel
    from ...pipeline import Session

__all__ = [
    "DECOMPOSER",
    "METHODS",
    "SEPARABLE",
    "GpuClusterDecomposer",
    "Partitioner",
    "compile_part",
    "components",
    "components_networkx",
    "group_problem",
    "largest_remainder",
    "part_seconds",
    "pop_partition",
    "repair_max_min",
    "row_groups",
    "solve_part",
    "solve_partitioned",
    "stratified_partition",
]

METHODS = ("stratified", "pop")

SEPARABLE: dict[str, str] = {
    # objective -> how component optima combine into the global optimum
    "max_min_fairness": "min",  # min_i over all jobs = min over components
    "makespan": "max",  # the last job to finish, over all components
    "max_total_throughput": "sum",  # sum of per-job terms normalised per job
}
"""Objectives for which the exact component decomposition is proven (see the model card).

Objectives not listed are refused rather than silently approximated: water-filling
(entity weights couple jobs across components), finish-time fairness (the isolated
finish time depends on the number of jobs in the WHOLE cluster) and min_cost (a ratio of
sums, not a sum)."""

DETAILS = (
    Detail("seed", "int", "seed of the random part assignment"),
    Detail("merged_objective", "float", "the objective of the merged parts before the repair"),
    Detail("repair_rounds", "int", "repair LPs solved"),
    Detail("repair_build_s", "float", "building the repair LPs", "s"),
    Detail("repair_solve_s", "float", "HiGHS time of the repair LPs", "s"),
    Detail("repair_jobs", "int", "jobs the kept repair LP re-optimised"),
    Detail("repair_fraction", "float", "share of jobs in the last repair round"),
    Detail("repair_status", "str", "status of the kept repair LP"),
    Detail("repair_s", "float", "time spent repairing", "s"),
)
"""The ``info`` entries of a partitioned ``gpu_cluster`` result (beyond
:data:`hetopt.decompose.DETAILS`)."""


PART_S = (0.005, 2.0e-6, 1.5)
"""``(a, b, c)``: one max-min part costs about ``a + b * columns**c`` seconds in this
process (matrix from arrays, transfer, HiGHS IPM, read; ``columns`` = (row, type) pairs
after symmetry grouping). Fit to parts of ~200, 764, 3,061 and 12,240 columns (5-10 ms,
0.07, 0.30-0.37 and 2.7 s) on the shared 2-core machine, where
:data:`hetopt.decompose.POOL_START_S` was measured too."""


def part_seconds(columns: int) -> float:
    """Estimated seconds of one part with ``columns`` LP columns (:data:`PART_S`)."""
    a, b, c = PART_S
    return a + b * float(columns) ** c


def _columns(problem: MaxMinProblem) -> int:
    return int((problem.allowed & (problem.thr > 0)).sum())


def group_problem(problem: MaxMinProblem) -> tuple[MaxMinProblem, np.ndarray | None]:
    """``problem`` with one row per group of identical jobs (same throughputs, usable
    types, scale factor, weight and normalisation), and each job's group (``None``: no
    two jobs alike, ``problem`` itself).

    A row standing for ``m`` jobs gets ``scale * m`` and ``weight * m``: its GPUs count
    ``m`` times in every capacity row while its value coefficients ``scale / (weight *
    norm) * thr`` are unchanged, and ``kappa`` (from ``sum scale``) is unchanged. The LP
    is convex and invariant under permuting identical jobs, so it has an optimum in which
    a group's jobs have equal shares: the grouped LP has the same optimum ``z``, and giving
    every job its group's row (``X[group_of]``) is an optimal allocation of the per-job
    LP (the argument of :func:`~hetopt.kinds.gpu_cluster.formulations.build_grouped`)."""
    key = np.column_stack(
        [problem.scale, problem.weight, problem.norm, problem.thr, problem.allowed]
    ).astype(float)
    group_of, reps, counts = row_groups(key)
    if len(reps) == problem.num_jobs:
        return problem, None
    mult = counts.astype(float)
    grouped = MaxMinProblem(
        thr=problem.thr[reps],
        scale=problem.scale[reps] * mult,
        weight=problem.weight[reps] * mult,
        norm=problem.norm[reps],
        allowed=problem.allowed[reps],
        capacity=problem.capacity,
        jobs=problem.jobs[reps],
        z_usage=problem.z_usage,
        z_max=problem.z_max,
    )
    return grouped, group_of


def _load(instance: Any) -> Any:
    from ...api import load

    inst, _ = load(instance)
    return inst


def sub_instance(inst: Any, jobs: Sequence[int] | np.ndarray) -> Any:
    """The same instance (same workers, same fields) with only ``jobs``."""
    data = {name: getattr(inst, name) for name in type(inst).model_fields}
    data["jobs"] = [inst.jobs[i] for i in jobs]
    return type(inst)(**data)


# --------------------------------------------------------------------------- components
def components(instance: Any) -> list[np.ndarray]:
    """Job indices of each connected component of the job-resource graph.

    For ``gpu_cluster`` a job is joined to every worker type it may run on (positive
    throughput and at least ``scale_factor`` GPUs). Components are sorted largest first;
    jobs keep their instance order inside a component. (Computed with
    ``scipy.sparse.csgraph``: the same components as networkx's, ~20x faster at 10^5
    edges; ``tests/core/test_decompose.py`` checks the two agree.)
    """
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    inst = _load(instance)
    if inst.kind != "gpu_cluster":
        raise UsageError(f"decomposition is not available for kind {inst.kind!r}")
    arr = inst.arrays
    n, T = arr.num_jobs, len(arr.types)
    job, typ = np.nonzero(arr.allowed)
    g = sp.coo_array((np.ones(len(job)), (job, n + typ)), shape=(n + T, n + T))
    _, label = connected_components(g, directed=False)
    jl = label[:n]
    order = np.argsort(jl, kind="stable")
    cuts = np.nonzero(np.diff(jl[order]))[0] + 1
    out = [np.sort(c) for c in np.split(order, cuts)]
    out.sort(key=lambda c: (-len(c), int(c[0])))
    return out


def components_networkx(instance: Any) -> list[np.ndarray]:
    """:func:`components` computed with networkx (the reference implementation)."""
    import networkx as nx

    inst = _load(instance)
    arr = inst.arrays
    n = arr.num_jobs
    g = nx.Graph()
    g.add_nodes_from(range(n))
    job, typ = np.nonzero(arr.allowed)
    g.add_edges_from(zip(job.tolist(), (n + typ).tolist(), strict=True))
    out = [
        np.array(sorted(v for v in comp if v < n), dtype=np.int64)
        for comp in nx.connected_components(g)
    ]
    out = [c for c in out if len(c)]
    out.sort(key=lambda c: (-len(c), int(c[0])))
    return out


# --------------------------------------------------------------------------- partitions
def compile_part(problem: MaxMinProblem) -> tuple[CompiledModel, np.ndarray, np.ndarray, float]:
    """The matrix HiGHS gets for ``problem``, built from its arrays without Pyomo: the
    same :class:`~hetopt.highs.CompiledModel` arrays as ``compile_model(build_max_min(
    problem).model)`` (column ``z`` first, then one per (job, type) pair in job-major
    order; rows ``c_time``, ``c_capacity``, ``c_fair``; ``tests/kinds/gpu_cluster/
    test_decompose_parts.py`` checks they are equal). Returns the model, the pairs' jobs
    and types and ``kappa``."""
    import scipy.sparse as sp

    from ...highs import INF as HINF
    from ...highs import CompiledModel

    n, T = problem.thr.shape
    job, typ = np.nonzero(problem.allowed & (problem.thr > 0))
    K = len(job)
    kappa = kappa_of(problem)
    x = 1 + np.arange(K)  # column of pair k (z is column 0)
    row_scale = problem.scale / (problem.weight * problem.norm)
    coef = row_scale[job] * problem.thr[job, typ] * kappa
    rows = [job, n + typ, n + T + job, n + T + np.arange(n)]
    cols = [x, x, x, np.zeros(n, dtype=np.int64)]
    vals = [np.ones(K), problem.scale[job], coef, -np.ones(n)]
    if problem.z_usage is not None:
        rows.append(n + np.arange(T))
        cols.append(np.zeros(T, dtype=np.int64))
        vals.append(problem.z_usage / kappa)
    m = 2 * n + T
    A = sp.csc_array(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(m, K + 1)
    )
    A.sum_duplicates()
    A.eliminate_zeros()
    A.sort_indices()
    z_upper = HINF if problem.z_max is None else problem.z_max * kappa
    c = np.zeros(K + 1)
    c[0] = 1.0
    compiled = CompiledModel(
        model=cast(Any, None),
        columns=[None] * (K + 1),
        rows=[None] * m,
        A=A,
        c=c,
        offset=0.0,
        maximize=True,
        col_lower=np.zeros(K + 1),
        col_upper=np.concatenate([[z_upper], np.ones(K)]),
        row_lower=np.concatenate([np.full(n + T, -HINF), np.zeros(n)]),
        row_upper=np.concatenate([np.ones(n), problem.capacity.astype(float), np.full(n, HINF)]),
        integrality=np.zeros(K + 1, dtype=np.int32),
    )
    return compiled, job, typ, kappa


def solve_part(problem: MaxMinProblem, options: SolveOptions | None = None) -> MaxMinSolution:
    """:func:`~hetopt.kinds.gpu_cluster.maxmin.solve_max_min` of one part, with its
    matrix built from the arrays (:func:`compile_part`): the same LP passed to HiGHS with
    the same options, without building and compiling a Pyomo model (10-30 ms a part)."""
    from ...contract import Built
    from ...highs import HighsModel
    from ...pipeline import Session
    from . import KIND
    from .maxmin import LP_METHOD

    session = Session(KIND, options or SolveOptions(threads=1))
    n, T = problem.thr.shape
    with session.timer("build_s"):
        compiled, job, typ, kappa = compile_part(problem)
    with session.timer("transfer_s"):
        hm = HighsModel(compiled)
    live = session.adopt(Built(cast(Any, None)), hm)
    raw = live.solve(session.options, LP_METHOD).raw
    timings = {k: session.timings[k] for k in ("build_s", "transfer_s", "solve_s")}
    if not raw.status.has_solution or raw.x is None:
        return MaxMinSolution(
            np.zeros((n, T)), 0.0, raw.status, raw.termination, timings, session.report()
        )
    t0 = time.perf_counter()
    X = np.zeros((n, T))
    X[job, typ] = np.clip(raw.x[1:], 0.0, 1.0)
    X[X < 1e-10] = 0.0
    z = float(raw.x[0]) / kappa
    timings["load_s"] = time.perf_counter() - t0
    return MaxMinSolution(X, z, raw.status, raw.termination, timings, session.report())


def _solve_part(payload: tuple[MaxMinProblem, dict[str, Any]]) -> tuple[MaxMinSolution, float]:
    """Worker entry point: one max-min part with the explicit normalisation."""
    problem, options = payload
    t0 = time.perf_counter()
    sol = solve_part(problem, SolveOptions.from_dict(options))
    return sol, time.perf_counter() - t0


class Partitioner(Protocol):
    """Splits jobs and GPUs into ``k`` parts.

    Returns ``(parts, capacity)``: ``parts[p]`` are job indices, ``capacity[p, t]`` the
    GPUs of type ``t`` that part ``p`` owns (``capacity.sum(axis=0) <= W``).
    """

    def __call__(
        self, arr: Any, k: int, rng: np.random.Generator
    ) -> tuple[list[np.ndarray], np.ndarray]: ...


def pop_partition(
    arr: Any, k: int, rng: np.random.Generator
) -> tuple[list[np.ndarray], np.ndarray]:
    """POP's split: jobs at random into ``k`` equal parts, ``floor(W_t / k)`` GPUs each."""
    perm = rng.permutation(arr.num_jobs)
    parts = [np.sort(p) for p in np.array_split(perm, k)]
    cap = np.tile(np.floor(arr.workers / k), (k, 1))
    return parts, cap


def largest_remainder(total: float, weights: np.ndarray) -> np.ndarray:
    """Split the whole number ``total`` into integers proportional to ``weights``."""
    w = np.asarray(weights, dtype=float)
    if w.sum() <= 0:
        w = np.ones_like(w)
    quota = total * w / w.sum()
    base = np.floor(quota)
    left = round(float(total - base.sum()))
    if left > 0:
        order = np.argsort(-(quota - base), kind="stable")
        base[order[:left]] += 1
    return base


def _strata(arr: Any, job_types: Sequence[str | None] | None) -> np.ndarray:
    """Stratum label per job: (job type or throughput row, scale factor, weight), labels
    numbered by first occurrence."""
    n = arr.num_jobs
    code = np.full(n, -1.0)
    if job_types is not None:  # codes by first occurrence, None -> -1
        code = pd.factorize(np.asarray(job_types, dtype=object))[0].astype(float)
    typed = code >= 0
    # a typed job is identified by its type, an untyped one by its rounded throughputs
    ident = np.where(typed[:, None], 0.0, np.round(arr.thr, 9))
    key = np.column_stack([code, ident, arr.scale, arr.weight])
    return row_groups(key)[0]


def row_groups(key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Groups of equal rows of ``key``: ``(group of each row, first row of each group,
    rows per group)``, groups numbered by first occurrence (as ``np.unique(key, axis=0)``
    grouped): :func:`.formulations.row_groups`, with integer counts."""
    group, first, counts = _row_groups(np.asarray(key, dtype=float))
    return group, first, counts.astype(np.int64)


def stratified_partition(
    arr: Any,
    k: int,
    rng: np.random.Generator,
    job_types: Sequence[str | None] | None = None,
) -> tuple[list[np.ndarray], np.ndarray]:
    """Deal every stratum (job type x scale factor x weight) round-robin over the parts.

    Each part gets the same mix of jobs (to within one job per stratum); each type's GPUs
    are split by largest remainder in proportion to the parts' GPU demand
    (``sum scale_i``), so no GPU is lost.
    """
    strata = _strata(arr, job_types)
    order = np.lexsort((rng.permutation(arr.num_jobs), strata))
    assign = np.empty(arr.num_jobs, dtype=np.int64)
    assign[order] = np.arange(arr.num_jobs) % k
    parts = [np.nonzero(assign == p)[0] for p in range(k)]
    demand = np.array([arr.scale[p].sum() for p in parts])
    cap = np.column_stack([largest_remainder(w, demand) for w in arr.workers])
    return parts, cap


def _repair_round(
    arr: Any,
    X: np.ndarray,
    v: np.ndarray,
    headroom: np.ndarray,
    norm: np.ndarray,
    thr_alloc: np.ndarray,
    fraction: float,
    options: SolveOptions | None,
    symmetry: bool = False,
) -> tuple[np.ndarray, np.ndarray, MaxMinSolution, float | None]:
    """One repair LP over the bottleneck set of size ``ceil(fraction * n)`` (over its
    symmetry groups with ``symmetry``: :func:`group_problem`)."""
    n, T = X.shape
    nb = min(n, max(1, math.ceil(fraction * n)))
    # bottleneck: the lowest values, and the jobs that cannot grow by rescaling
    low = np.argsort(v, kind="stable")[:nb]
    stuck = np.argsort(headroom, kind="stable")[:nb]
    B = np.union1d(low, stuck)
    B = np.union1d(B, np.nonzero(v <= 0)[0])  # a job at zero cannot be rescaled
    rest = np.ones(n, dtype=bool)
    rest[B] = False
    R = np.nonzero(rest)[0]
    usage = (arr.scale[R, None] * X[R]) / v[R, None] if len(R) else np.zeros((0, T))
    z_max = float(headroom[R].min()) if len(R) else None
    problem = MaxMinProblem(
        thr=thr_alloc[B],
        scale=arr.scale[B],
        weight=arr.weight[B],
        norm=norm[B],
        allowed=arr.allowed[B],
        capacity=arr.workers.astype(float),
        jobs=B,
        z_usage=usage.sum(axis=0),
        z_max=z_max,
    )
    group_of = None
    if symmetry:
        problem, group_of = group_problem(problem)
    sol = solve_part(problem, options or SolveOptions(threads=1))
    if group_of is not None:
        sol.X = sol.X[group_of]
    return B, R, sol, z_max


def repair_max_min(
    arr: Any,
    X: np.ndarray,
    norm: np.ndarray,
    thr_alloc: np.ndarray,
    fraction: float = 0.05,
    options: SolveOptions | None = None,
    max_fraction: float = 0.4,
    session: Session | None = None,
    symmetry: bool = False,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Raise the minimum of a merged max-min allocation with a small LP.

    The bottleneck set ``B`` (the ``fraction`` of jobs with the lowest normalised
    throughput, plus as many with the least headroom ``v_j / share_j``, i.e. that cannot
    grow by rescaling) is re-optimised freely; every other job ``j`` keeps its type mix and is
    scaled by ``s_j = z / v_j`` (``v_j`` its current value, ``s_j <= 1 / share_j``), so
    its GPU use enters each capacity row as ``z * sum_j scale_j X[j,t] / v_j``: one
    coefficient per type. The LP maximises the common level ``z``; the current
    allocation is feasible in it, so the minimum never drops. When the optimum sits on the
    cap ``z <= min_j v_j / share_j`` the set is doubled (up to ``max_fraction``) and the
    LP solved again; the best round is kept. Finally every
    non-bottleneck job is lifted back towards its merged allocation as far as the
    capacities allow (one scalar, no LP).

    Returns the repaired allocation and facts (``repair_jobs``, ``repair_s``, levels).
    The repair LPs' HiGHS runs are added to ``session``'s report when one is given;
    with ``symmetry`` each is solved over its symmetry groups (:func:`group_problem`).
    """
    t0 = time.perf_counter()
    # values in the allocating view (the agnostic view for the baseline)
    coef = (arr.scale / (arr.weight * norm))[:, None] * thr_alloc
    v = (coef * X).sum(axis=1)
    share = X.sum(axis=1)
    headroom = v / np.maximum(share, 1e-12)  # the value a job reaches by rescaling alone
    facts: dict[str, Any] = {"repair_rounds": 0, "repair_build_s": 0.0, "repair_solve_s": 0.0}
    best: MaxMinSolution | None = None
    best_B = best_R = np.zeros(0, dtype=np.int64)
    frac = fraction
    while True:
        B, R, sol, z_max = _repair_round(
            arr, X, v, headroom, norm, thr_alloc, frac, options, symmetry
        )
        facts["repair_rounds"] += 1
        if session is not None:
            session.record_solves(sol.report, "repair.")
        facts["repair_build_s"] += sol.timings.get("build_s", 0.0)
        facts["repair_solve_s"] += sol.timings.get("solve_s", 0.0)
        if sol.status.has_solution and (best is None or sol.z > best.z):
            best, best_B, best_R = sol, B, R
        # the cap z <= min_R headroom binds: re-optimise more jobs
        capped = z_max is not None and sol.status.has_solution and sol.z >= z_max * (1 - 1e-6)
        if not capped or frac >= max_fraction or len(R) == 0:
            break
        frac = min(max_fraction, 2 * frac)
    facts["repair_jobs"] = len(best_B)
    facts["repair_fraction"] = frac
    sol = best if best is not None else sol
    B, R = best_B, best_R
    before = float(v.min())
    facts["repair_status"] = sol.status.value
    if not sol.status.has_solution or sol.z <= before:
        facts["repair_s"] = time.perf_counter() - t0
        return X, facts
    z = sol.z
    Y = X.copy()
    Y[B] = sol.X
    if len(R):
        sigma = z / v[R]
        hi = np.maximum(1.0, sigma)
        base = arr.scale[:, None] * Y
        base[R] = arr.scale[R, None] * X[R] * sigma[:, None]
        used = base.sum(axis=0)
        slope = (arr.scale[R, None] * X[R] * (hi - sigma)[:, None]).sum(axis=0)
        room = arr.workers - used
        with np.errstate(divide="ignore", invalid="ignore"):
            lam_t = np.where(slope > 1e-12, room / slope, np.inf)
        lam = float(np.clip(np.min(lam_t) * (1 - 1e-9), 0.0, 1.0))
        s = sigma + lam * (hi - sigma)
        Y[R] = X[R] * s[:, None]
    facts["repair_s"] = time.perf_counter() - t0
    return Y, facts


def _check_partition(arr: Any, parts: list[np.ndarray], cap: np.ndarray) -> None:
    """A custom partitioner's output: each job once, GPUs within the cluster's."""
    seen: list[int] = (
        np.concatenate([np.asarray(p, dtype=np.int64) for p in parts]).tolist() if parts else []
    )
    if sorted(seen) != list(range(arr.num_jobs)):
        raise UsageError("the partitioner must put every job in exactly one part")
    if cap.shape != (len(parts), len(arr.types)) or (cap < 0).any():
        raise UsageError(
            f"the partitioner must return GPUs as a {len(parts)} x {len(arr.types)} "
            "non-negative array"
        )
    if (cap.sum(axis=0) > arr.workers * (1 + 1e-12)).any():
        raise UsageError("the partitioner hands out more GPUs than the cluster has")


def solve_partitioned(
    instance: Any,
    partitions: int,
    method: str | Partitioner = "stratified",
    options: SolveOptions | None = None,
    executor: SubmitExecutor | None = None,
    seed: int = 0,
    repair: bool | None = None,
    repair_fraction: float = 0.05,
    agnostic: bool = False,
    symmetry: bool = True,
) -> Result:
    """Approximate decomposition of a ``gpu_cluster`` max-min fairness instance.

    Parameters
    ----------
    instance
        A ``gpu_cluster`` instance (or dict or path).
    partitions
        Number of parts ``k >= 1``.
    method
        ``"stratified"`` (strata dealt round-robin, largest-remainder GPUs, repair LP),
        ``"pop"`` (POP: random parts, ``floor(W_t / k)`` GPUs each, no repair), or any
        :class:`Partitioner` callable (checked: every job in exactly one part, GPUs
        within the cluster's).
    options
        Solve options (each part runs with ``threads=1``).
    executor
        Where parts run (default: serially in this thread; the generic driver passes its
        plan, decided by :func:`hetopt.decompose.place` from :func:`part_seconds`).
    seed
        Seed of the random part assignment.
    repair
        Run :func:`repair_max_min` after merging (default: on for ``stratified``,
        off for ``pop``).
    repair_fraction
        Share of jobs re-optimised by the repair LP.
    agnostic
        Allocate with the heterogeneity-agnostic throughputs (the reported objective is
        still the true one).
    symmetry
        Solve each part and the repair LP over its symmetry groups (:func:`group_problem`;
        the kind's ``symmetry`` parameter; never with ``agnostic``, whose true value
        depends on which of the agnostic optima is returned).

    Returns
    -------
    Result
        ``feasible`` (a decomposition proves no optimality), objective recomputed on the
        whole instance, checked by the ``gpu_cluster`` verifier; ``info`` has the
        partitions, method, per-part timings and the repair gain.
    """
    t0 = time.perf_counter()
    inst = _load(instance)
    if inst.kind != "gpu_cluster":
        raise UsageError(
            f"partitioned decomposition is only available for gpu_cluster, not {inst.kind!r}"
        )
    if isinstance(method, str) and method not in METHODS:
        raise UsageError(
            f"unknown decomposition method {method!r}; expected one of: {', '.join(METHODS)}"
        )
    if partitions < 1:
        raise UsageError(f"partitions must be >= 1, got {partitions}")
    if not 0 < repair_fraction <= 1:
        raise UsageError(f"repair_fraction must be in (0, 1], got {repair_fraction}")
    from . import KIND
    from . import verify as V
    from .formulations import agnostic_throughputs

    session = session_for(KIND, options, t0)
    arr = inst.arrays
    thr_alloc = agnostic_throughputs(arr) if agnostic else arr.thr
    norm = arr.proportional_throughput(thr_alloc)
    rng = np.random.default_rng(seed)
    if method == "pop":
        parts, cap = pop_partition(arr, partitions, rng)
    elif method == "stratified":
        parts, cap = stratified_partition(arr, partitions, rng, [j.job_type for j in inst.jobs])
    else:
        assert not isinstance(method, str)
        parts, cap = method(arr, partitions, rng)
        _check_partition(arr, parts, np.asarray(cap, dtype=float))
    method_name = method if isinstance(method, str) else getattr(method, "__name__", "custom")
    problems = [
        MaxMinProblem(
            thr=thr_alloc[p],
            scale=arr.scale[p],
            weight=arr.weight[p],
            norm=norm[p],
            allowed=arr.allowed[p],
            capacity=cap[q],
            jobs=p,
        )
        for q, p in enumerate(parts)
        if len(p)
    ]
    grouping = symmetry and not agnostic
    shipped = [group_problem(pb) if grouping else (pb, None) for pb in problems]
    t1 = time.perf_counter()
    opts = worker_options(options)
    where = place(executor, [part_seconds(_columns(g)) for g, _ in shipped])
    outs = run_all(where.executor, _solve_part, [(g, wire(opts)) for g, _ in shipped])
    t2 = time.perf_counter()
    X = np.zeros((arr.num_jobs, len(arr.types)))
    parts_info = []
    statuses = []
    for pb, (g, group_of), (sol, wall) in zip(problems, shipped, outs, strict=True):
        X[pb.jobs] = sol.X if group_of is None else sol.X[group_of]
        statuses.append(sol.status)
        session.record_solves(sol.report, "part.")
        parts_info.append(
            {
                "jobs": pb.num_jobs,
                "symmetry_groups": g.num_jobs,
                "gpus": {t: float(c) for t, c in zip(arr.types, pb.capacity, strict=True)},
                "status": sol.status.value,
                "objective_value": sol.z,
                "wall_s": wall,
                **sol.timings,
            }
        )
    placed = where.details()
    timings = sum_timings(parts_info, _PHASES)
    timings.update({"split_s": t1 - t0, "parts_wall_s": t2 - t1})
    if any(not s.has_solution for s in statuses):
        bad = next(s for s in statuses if not s.has_solution)
        failed = Outcome(
            status=bad,
            termination=f"a part ended {bad.value}",
            details={
                "partitions": partitions,
                "method": method_name,
                "parts": parts_info,
                **placed,
            },
        )
        return finish_merged(KIND, inst, "max_min_fairness", failed, timings, session)

    # the true objective (with the agnostic view the repair optimises the agnostic LP)
    merged_value = V.max_min_value(arr, X)
    do_repair = (method != "pop") if repair is None else repair
    repair_facts: dict[str, Any] = {}
    if do_repair:
        X, repair_facts = repair_max_min(
            arr, X, norm, thr_alloc, repair_fraction, opts, session=session, symmetry=grouping
        )
    t3 = time.perf_counter()

    value = V.max_min_value(arr, X)
    before = merged_value
    outcome = Outcome(
        value,
        _allocation_tables(arr, X),
        status=Status.FEASIBLE,
        termination="decomposed: feasible, optimality not proven",
    )
    t4 = time.perf_counter()
    outcome.details = {
        "decomposition": "partitions",
        "method": method_name,
        "partitions": partitions,
        "agnostic": agnostic,
        "seed": seed,
        "parts": parts_info,
        "merged_objective": before,
        "repair_gain": (value - before) if do_repair else 0.0,
        "symmetry_groups": int(sum(g.num_jobs for g, _ in shipped)),
        **repair_facts,
        **placed,
    }
    timings.update(
        {
            "repair_s": float(repair_facts.get("repair_s", 0.0)),
            "merge_s": (t4 - t3) + (t3 - t2) - float(repair_facts.get("repair_s", 0.0)),
        }
    )
    return finish_merged(KIND, inst, "max_min_fairness", outcome, timings, session)


_PHASES = ("build_s", "transfer_s", "solve_s")


def _allocation_tables(arr: Any, X: np.ndarray) -> dict[str, pd.DataFrame]:
    job, typ = np.nonzero(arr.thr > 0)
    allocation = pd.DataFrame(
        {
            "job": np.asarray(arr.job_ids, dtype=object)[job],
            "worker_type": np.asarray(arr.types, dtype=object)[typ],
            "fraction": X[job, typ],
        }
    )
    thr_eff = (arr.thr * X).sum(axis=1)
    p = arr.proportional_throughput()
    jobs = pd.DataFrame(
        {
            "job": arr.job_ids,
            "time_share": X.sum(axis=1),
            "throughput": thr_eff,
            "normalized_throughput": arr.scale * thr_eff / (arr.weight * p),
        }
    )
    return {"allocation": allocation, "jobs": jobs}


# --------------------------------------------------------------------------- hooks
class GpuClusterDecomposer:
    """The ``gpu_cluster`` kind's :class:`~hetopt.contract.Decomposer`."""

    separable: Mapping[str, str] = SEPARABLE
    methods: tuple[str, ...] = METHODS
    details = DETAILS

    def components(self, instance: Any) -> list[np.ndarray]:
        return components(instance)

    def sub_instance(self, instance: Any, jobs: np.ndarray) -> Any:
        return sub_instance(instance, jobs)

    def estimate_s(self, instance: Any, groups: Sequence[np.ndarray]) -> list[float]:
        """Estimated seconds of the kind's solve of each group of jobs (a component's
        LP over its symmetry groups: :func:`part_seconds` of its columns)."""
        from .formulations import job_groups

        arr = instance.arrays
        group_of, reps, _ = job_groups(arr, False)
        cols = arr.allowed[reps].sum(axis=1)
        return [part_seconds(int(cols[np.unique(group_of[g])].sum())) for g in groups]

    def partitioned(
        self,
        instance: Any,
        objective: str,
        params: Any,
        partitions: int,
        method: str,
        options: SolveOptions | None,
        executor: Any,
        seed: int,
    ) -> Result:
        """Max-min fairness split into ``partitions`` parts (:func:`solve_partitioned`);
        other objectives are refused (the separable ones were solved exactly by
        components when there are enough of them)."""
        from . import KIND

        if objective != "max_min_fairness":
            if partitions == 1 or len(components(instance)) >= partitions:
                raise not_separable(KIND, objective)
            raise UsageError(
                f"splitting one component into parts is implemented for max_min_fairness, "
                f"not {objective!r}; use partitions=1 (exact components)"
            )
        parsed = KIND.parse_params(params)
        return solve_partitioned(
            instance,
            partitions,
            method,
            options,
            executor,
            seed=seed,
            agnostic=parsed.agnostic,
            symmetry=parsed.symmetry,
        )


DECOMPOSER = GpuClusterDecomposer()
