"""Decomposition: solve one big instance as many small ones, serially or on a cluster.

Two methods (the mathematics is in ``models/decomposition.md``):

* **exact** (:func:`solve_components`): the connected components of the job-resource
  compatibility graph share no resource, so for an objective that separates the
  optimum of the whole is the combination (min, max or sum) of the components' optima.
  Each component is solved by the kind's own ``solve`` on a sub-instance that keeps the
  whole cluster's worker counts (for ``gpu_cluster`` the max-min normalisation
  ``p_i`` depends on them; types outside a component are unusable by its jobs, so the
  extra capacity rows are slack and ``p_i`` is unchanged).
* **approximate** (:func:`solve_partitioned`, ``gpu_cluster`` max-min fairness): jobs
  and GPUs are split into ``k`` parts, each part is solved with the ORIGINAL ``p_i``
  passed explicitly, the allocations are merged and (``method="stratified"``) repaired
  by a small LP. ``method="pop"`` is POP's baseline (random parts, ``floor(W_t / k)``
  GPUs each, no repair).

Sub-problems (instances or numpy arrays, never Pyomo models) run on any
``concurrent.futures``-style executor: see :mod:`hetopt.executors`.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol

import numpy as np
import pandas as pd

from ..executors import SubmitExecutor, executor_for, run_all
from ..kinds.base import UsageError
from ..options import SolveOptions
from ..result import Result
from ..status import Status
from .maxmin import MaxMinProblem, MaxMinSolution, solve_max_min

log = logging.getLogger(__name__)

__all__ = [
    "METHODS",
    "SEPARABLE",
    "Partitioner",
    "components",
    "components_networkx",
    "pop_partition",
    "repair_max_min",
    "solve_components",
    "solve_decomposed",
    "solve_partitioned",
    "stratified_partition",
]

METHODS = ("stratified", "pop")

SEPARABLE: dict[str, dict[str, str]] = {
    # kind -> objective -> how component optima combine into the global optimum
    "gpu_cluster": {
        "max_min_fairness": "min",  # min_i over all jobs = min over components
        "makespan": "max",  # the last job to finish, over all components
        "max_total_throughput": "sum",  # sum of per-job terms normalised per job
    },
}
"""Objectives for which the exact component decomposition is proven (see the model card).

Objectives not listed are refused rather than silently approximated: water-filling
(entity weights couple jobs across components), finish-time fairness (the isolated
finish time depends on the number of jobs in the WHOLE cluster) and min_cost (a ratio of
sums, not a sum)."""

MAX_COMPONENT_TASKS = 64
"""More components than this are packed (largest first) into this many tasks."""

_COMBINE: dict[str, Callable[[Sequence[float]], float]] = {
    "min": lambda v: float(min(v)),
    "max": lambda v: float(max(v)),
    "sum": lambda v: float(sum(v)),
}


# --------------------------------------------------------------------------- helpers
def _load(instance: Any) -> Any:
    from ..api import load

    inst, _ = load(instance)
    return inst


def _kind(inst: Any) -> Any:
    from ..kinds import get_kind

    return get_kind(inst.kind)


def _sub_instance(inst: Any, jobs: Sequence[int] | np.ndarray) -> Any:
    """The same instance (same workers, same fields) with only ``jobs``."""
    data = {name: getattr(inst, name) for name in type(inst).model_fields}
    data["jobs"] = [inst.jobs[i] for i in jobs]
    return type(inst)(**data)


def components(instance: Any) -> list[np.ndarray]:
    """Job indices of each connected component of the job-resource graph.

    For ``gpu_cluster`` a job is joined to every worker type it may run on (positive
    throughput and at least ``scale_factor`` GPUs). Components are sorted largest first;
    jobs keep their instance order inside a component. (Computed with
    ``scipy.sparse.csgraph``: the same components as networkx's, ~20x faster at 10^5
    edges; ``tests/test_decompose.py`` checks the two agree.)
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
    """:func:`components` computed with networkx (the reference implementation the tests
    compare with; networkx is in the ``test`` and ``dev`` extras, not a dependency)."""
    try:
        import networkx as nx
    except ImportError:  # pragma: no cover - networkx is installed with the test extra
        raise ImportError(
            "components_networkx needs networkx: pip install 'hetopt[test]' (or networkx)"
        ) from None

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


def _pack(comps: list[np.ndarray], bins: int) -> list[np.ndarray]:
    """Greedy largest-first packing of components into at most ``bins`` groups."""
    if len(comps) <= bins:
        return comps
    groups: list[list[np.ndarray]] = [[] for _ in range(bins)]
    sizes = [0] * bins
    for c in comps:  # already largest first
        b = int(np.argmin(sizes))
        groups[b].append(c)
        sizes[b] += len(c)
    return [np.sort(np.concatenate(g)) for g in groups if g]


# --------------------------------------------------------------------------- workers
def _solve_sub(payload: tuple[Any, str, dict[str, Any], dict[str, Any]]) -> tuple[Result, float]:
    """Worker entry point: solve one sub-instance with the kind's own ``solve``."""
    inst, objective, options, params = payload
    t0 = time.perf_counter()
    result = _kind(inst).solve(inst, objective, SolveOptions.from_dict(options), **params)
    return result, time.perf_counter() - t0


def _solve_part(payload: tuple[MaxMinProblem, dict[str, Any]]) -> tuple[MaxMinSolution, float]:
    """Worker entry point: one max-min part with the explicit normalisation."""
    problem, options = payload
    t0 = time.perf_counter()
    sol = solve_max_min(problem, SolveOptions.from_dict(options))
    return sol, time.perf_counter() - t0


def _worker_options(options: SolveOptions | None) -> SolveOptions:
    return (options or SolveOptions()).replace(threads=1)


def _wire(options: SolveOptions) -> dict[str, Any]:
    """Options as a plain dict: ``SolveOptions`` holds a mappingproxy, which cannot be
    pickled to a process pool or a Dask worker."""
    return options.to_dict()


# --------------------------------------------------------------------------- exact
def solve_components(
    instance: Any,
    objective: str | None = None,
    options: SolveOptions | None = None,
    executor: SubmitExecutor | None = None,
    max_tasks: int = MAX_COMPONENT_TASKS,
    **params: Any,
) -> Result:
    """Exact decomposition: solve each connected component, combine, verify.

    Parameters
    ----------
    instance
        A validated instance, a dict or a path.
    objective
        An objective in :data:`SEPARABLE` for the instance's kind.
    options
        Solve options; every sub-solve runs with ``threads=1``.
    executor
        Where sub-problems run (default: in this thread, one after the other).
    max_tasks
        Components are packed into at most this many sub-problems.
    **params
        Kind parameters passed to every sub-solve (``agnostic=True``).

    Returns
    -------
    Result
        The merged result, checked by the kind's verifier against the WHOLE instance;
        ``optimal`` only when every component was solved to optimality.
    """
    t0 = time.perf_counter()
    inst = _load(instance)
    kind = _kind(inst)
    name = kind.resolve_objective(inst, objective)
    kind.check_params(params)
    rule = SEPARABLE.get(inst.kind, {}).get(name)
    if rule is None:
        raise UsageError(
            f"objective {name!r} of kind {inst.kind!r} is not known to separate over "
            "components; solve it without decomposition"
        )
    comps = components(inst)
    groups = _pack(comps, max_tasks)
    subs = [inst if len(groups) == 1 else _sub_instance(inst, g) for g in groups]
    t1 = time.perf_counter()
    opts = _worker_options(options)
    with executor_for(executor=executor) as ex:
        outs = run_all(ex, _solve_sub, [(s, name, _wire(opts), dict(params)) for s in subs])
    t2 = time.perf_counter()
    results = [r for r, _ in outs]
    parts_info = [
        {
            "jobs": len(g),
            "status": r.status.value,
            "objective_value": r.objective_value,
            "wall_s": w,
            **{k: float(v) for k, v in r.timings.items()},
            **{k: v for k, v in r.info.items() if k == "agnostic_lp_value"},
        }
        for g, (r, w) in zip(groups, outs, strict=True)
    ]
    merged = _merge_results(kind, inst, name, rule, results)
    t3 = time.perf_counter()
    info = {
        **{k: v for k, v in results[0].info.items() if isinstance(v, str | bool)},
        "decomposition": "components",
        "method": "components",
        "partitions": len(groups),
        "components": len(comps),
        "combine": rule,
        "parts": parts_info,
        "repair_gain": 0.0,
    }
    timings = _sum_timings(parts_info)
    timings.update({"split_s": t1 - t0, "parts_wall_s": t2 - t1, "merge_s": t3 - t2})
    return replace(merged, info=info, timings=timings, runtime_s=t3 - t0)


def _sum_timings(parts: list[dict[str, Any]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key in ("build_s", "transfer_s", "solve_s"):
        out[key] = float(sum(p.get(key, 0.0) for p in parts))
    return out


def _merge_results(
    kind: Any, inst: Any, objective: str, rule: str, results: list[Result]
) -> Result:
    order = [Status.ERROR, Status.UNBOUNDED, Status.INFEASIBLE, Status.NO_SOLUTION]
    statuses = [r.status for r in results]
    for bad in order:
        if bad in statuses:
            first = results[statuses.index(bad)]
            return Result(
                kind=inst.kind,
                objective=objective,
                status=bad,
                termination=f"a component ended {bad.value}: {first.termination}",
            )
    combine = _COMBINE[rule]
    value = combine([r.objective_value for r in results if r.objective_value is not None])
    bounds = [r.bound for r in results]
    bound = combine([b for b in bounds if b is not None]) if None not in bounds else None
    gap = None
    if bound is not None:
        gap = abs(value - bound) / max(abs(value), 1e-9)
    status = Status.OPTIMAL if all(s == Status.OPTIMAL for s in statuses) else Status.FEASIBLE
    names = sorted({n for r in results for n in r.tables})
    tables = {
        n: pd.concat([r.tables[n] for r in results if n in r.tables], ignore_index=True)
        for n in names
    }
    merged = Result(
        kind=inst.kind,
        objective=objective,
        status=status,
        termination="all components optimal"
        if status == Status.OPTIMAL
        else "some component stopped at a limit",
        objective_value=value,
        bound=bound,
        gap=gap,
        tables=tables,
    )
    return replace(merged, verification=kind.verify(inst, merged))


# --------------------------------------------------------------------------- partitions
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
    """Stratum label per job: (job type or throughput row, scale factor, weight)."""
    keys: dict[tuple[Any, ...], int] = {}
    out = np.empty(arr.num_jobs, dtype=np.int64)
    for i in range(arr.num_jobs):
        jt = job_types[i] if job_types is not None else None
        ident: Any = jt if jt is not None else tuple(np.round(arr.thr[i], 9))
        key = (ident, float(arr.scale[i]), float(arr.weight[i]))
        out[i] = keys.setdefault(key, len(keys))
    return out


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
) -> tuple[np.ndarray, np.ndarray, MaxMinSolution, float | None]:
    """One repair LP over the bottleneck set of size ``ceil(fraction * n)``."""
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
    return B, R, solve_max_min(problem, options or SolveOptions(threads=1)), z_max


def repair_max_min(
    arr: Any,
    X: np.ndarray,
    norm: np.ndarray,
    thr_alloc: np.ndarray,
    fraction: float = 0.05,
    options: SolveOptions | None = None,
    max_fraction: float = 0.4,
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
        B, R, sol, z_max = _repair_round(arr, X, v, headroom, norm, thr_alloc, frac, options)
        facts["repair_rounds"] += 1
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
        Where parts run (default: serially in this thread).
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
    from ..kinds.gpu_cluster import KIND, agnostic_throughputs

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
    t1 = time.perf_counter()
    opts = _worker_options(options)
    with executor_for(executor=executor) as ex:
        outs = run_all(ex, _solve_part, [(pb, _wire(opts)) for pb in problems])
    t2 = time.perf_counter()
    X = np.zeros((arr.num_jobs, len(arr.types)))
    parts_info = []
    statuses = []
    for pb, (sol, wall) in zip(problems, outs, strict=True):
        X[pb.jobs] = sol.X
        statuses.append(sol.status)
        parts_info.append(
            {
                "jobs": pb.num_jobs,
                "gpus": {t: float(c) for t, c in zip(arr.types, pb.capacity, strict=True)},
                "status": sol.status.value,
                "objective_value": sol.z,
                "wall_s": wall,
                **sol.timings,
            }
        )
    if any(not s.has_solution for s in statuses):
        bad = next(s for s in statuses if not s.has_solution)
        return Result(
            kind=inst.kind,
            objective="max_min_fairness",
            status=bad,
            termination=f"a part ended {bad.value}",
            info={"partitions": partitions, "method": method_name, "parts": parts_info},
        )
    from ..kinds.gpu_cluster import verify as V

    # the true objective (with the agnostic view the repair optimises the agnostic LP)
    merged_value = V.max_min_value(arr, X)
    do_repair = (method != "pop") if repair is None else repair
    repair_facts: dict[str, Any] = {}
    if do_repair:
        X, repair_facts = repair_max_min(arr, X, norm, thr_alloc, repair_fraction, opts)
    t3 = time.perf_counter()

    value = V.max_min_value(arr, X)
    before = merged_value
    result = _allocation_result(inst, arr, X, value)
    result = replace(result, verification=KIND.verify(inst, result))
    t4 = time.perf_counter()
    info = {
        "decomposition": "partitions",
        "method": method_name,
        "partitions": partitions,
        "agnostic": agnostic,
        "seed": seed,
        "parts": parts_info,
        "merged_objective": before,
        "repair_gain": (value - before) if do_repair else 0.0,
        **repair_facts,
    }
    timings = _sum_timings(parts_info)
    timings.update(
        {
            "split_s": t1 - t0,
            "parts_wall_s": t2 - t1,
            "repair_s": float(repair_facts.get("repair_s", 0.0)),
            "merge_s": (t4 - t3) + (t3 - t2) - float(repair_facts.get("repair_s", 0.0)),
        }
    )
    return replace(result, info=info, timings=timings, runtime_s=t4 - t0)


def _allocation_result(inst: Any, arr: Any, X: np.ndarray, value: float) -> Result:
    job, typ = np.nonzero(arr.thr > 0)
    allocation = pd.DataFrame(
        {
            "job": [arr.job_ids[i] for i in job],
            "worker_type": [arr.types[t] for t in typ],
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
    return Result(
        kind=inst.kind,
        objective="max_min_fairness",
        status=Status.FEASIBLE,
        termination="decomposed: feasible, optimality not proven",
        objective_value=value,
        tables={"allocation": allocation, "jobs": jobs},
    )


# --------------------------------------------------------------------------- entry point
def solve_decomposed(
    instance: Any,
    objective: str | None = None,
    options: SolveOptions | None = None,
    partitions: int = 1,
    workers: int | None = None,
    scheduler_address: str | None = None,
    method: str = "stratified",
    executor: SubmitExecutor | None = None,
    seed: int = 0,
    **params: Any,
) -> Result:
    """Solve ``instance`` by decomposition (what ``hetopt solve --partitions K`` runs).

    With ``partitions=1``, or when the instance has at least ``partitions`` connected
    components, the exact component decomposition is used (same optimum as the
    monolithic solve). Otherwise a ``gpu_cluster`` max-min instance is split into
    ``partitions`` parts with ``method`` (``"stratified"`` or ``"pop"``), and a
    ``multi_resource`` instance into ``partitions`` server groups each solved as its own
    MILP (:mod:`hetopt.decompose.multi_resource`).

    Parameters
    ----------
    instance
        Instance, dict or path.
    objective
        Objective name (default: the instance's, else the kind's first).
    options
        Solve options; each sub-solve runs with ``threads=1``.
    partitions
        Number of parts ``K`` (``--partitions``).
    workers
        Run parts on a process pool of this many processes (``--workers``).
    scheduler_address
        Run parts on this Dask scheduler (``--scheduler-address``).
    method
        Approximate method, ``"stratified"`` (default) or ``"pop"``.
    executor
        An explicit executor (overrides ``workers`` and ``scheduler_address``).
    seed
        Seed of the random part assignment.
    **params
        Kind parameters (``agnostic=True``).

    Returns
    -------
    Result
        Verified against the whole instance; ``info`` holds ``partitions``, ``method``,
        ``parts`` (per-part jobs, status, build/solve/wall seconds) and ``repair_gain``.
    """
    if partitions < 1:
        raise UsageError(f"partitions must be >= 1, got {partitions}")
    inst = _load(instance)
    kind = _kind(inst)
    name = kind.resolve_objective(inst, objective)
    kind.check_params(params)
    if method not in METHODS:
        raise UsageError(
            f"unknown decomposition method {method!r}; expected one of: {', '.join(METHODS)}"
        )
    if inst.kind == "multi_resource" and partitions == 1:
        # one part is the whole instance: the exact monolithic MILP (as K=1 is for
        # gpu_cluster), so a sweep over K = 1, 2, 4, ... does not fail at K = 1
        return kind.solve(inst, name, options, **params)
    if inst.kind == "multi_resource" and partitions > 1:
        from .multi_resource import solve_partitioned_multi_resource

        with executor_for(workers, scheduler_address, executor) as ex:
            return solve_partitioned_multi_resource(inst, partitions, options, ex, seed, **params)
    if inst.kind not in SEPARABLE:
        raise UsageError(f"decomposition is not available for kind {inst.kind!r}")
    with executor_for(workers, scheduler_address, executor) as ex:
        ncomp = len(components(inst))
        if partitions == 1 or ncomp >= partitions:
            return solve_components(inst, name, options, ex, **params)
        if name != "max_min_fairness":
            raise UsageError(
                f"splitting one component into parts is implemented for max_min_fairness, "
                f"not {name!r}; use partitions=1 (exact components)"
            )
        extra = set(params) - {"agnostic"}
        if extra:
            raise UsageError(f"partitioned solve does not take {', '.join(sorted(extra))}")
        return solve_partitioned(
            inst,
            partitions,
            method,
            options,
            ex,
            seed=seed,
            agnostic=bool(params.get("agnostic", False)),
        )
