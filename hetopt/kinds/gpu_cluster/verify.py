"""Independent verifier for ``gpu_cluster`` allocations.

It reads only the instance and the ``allocation`` table (never the Pyomo model) and
re-derives everything: time shares, capacities, eligibility and the objective.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ...result import Verification
from .data import ClusterArrays, GpuClusterInstance

ABS_TOL = 1e-7
REL_TOL = 1e-6


def allocation_matrix(arr: ClusterArrays, allocation: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """Jobs x types matrix of time fractions from an allocation table (solo rows only)."""
    problems: list[str] = []
    X = np.zeros((arr.num_jobs, len(arr.types)))
    if allocation.empty:
        return X, ["the allocation table is empty"]
    job_pos = {j: i for i, j in enumerate(arr.job_ids)}
    type_pos = {t: k for k, t in enumerate(arr.types)}
    df = allocation
    if "other_job" in df.columns:
        df = df[df["other_job"].fillna("").astype(str) == ""]
    jobs = df["job"].astype(str).map(job_pos)
    types = df["worker_type"].astype(str).map(type_pos)
    bad = jobs.isna() | types.isna()
    if bad.any():
        problems.append(f"{int(bad.sum())} allocation row(s) name an unknown job or worker type")
    ok = ~bad
    np.add.at(
        X,
        (jobs[ok].astype(int).to_numpy(), types[ok].astype(int).to_numpy()),
        df.loc[ok, "fraction"].to_numpy(dtype=float),
    )
    missing = set(arr.job_ids) - set(allocation["job"].astype(str))
    if missing:
        problems.append(
            f"{len(missing)} job(s) missing from the allocation, e.g. {sorted(missing)[:3]}"
        )
    return X, problems


def check_allocation(
    arr: ClusterArrays,
    X: np.ndarray,
    extra_usage: np.ndarray | None = None,
    extra_share: np.ndarray | None = None,
) -> list[str]:
    """Feasibility checks on a solo allocation matrix (plus shared GPUs' usage and time)."""
    problems: list[str] = []
    if (X < -ABS_TOL).any():
        i, t = np.argwhere(X < -ABS_TOL)[0]
        problems.append(
            f"negative fraction {X[i, t]:.3g} for job {arr.job_ids[i]} on {arr.types[t]}"
        )
    share = X.sum(axis=1)
    if extra_share is not None:
        share = share + extra_share
    over = share > 1 + REL_TOL
    if over.any():
        i = int(np.argmax(share))
        problems.append(
            f"{int(over.sum())} job(s) get more than 100% of the time, e.g. job {arr.job_ids[i]}: {share[i]:.9f}"
        )
    used = (arr.scale[:, None] * X).sum(axis=0)
    if extra_usage is not None:
        used = used + extra_usage
    cap_over = used > arr.workers * (1 + REL_TOL) + ABS_TOL
    for t in np.nonzero(cap_over)[0]:
        problems.append(
            f"worker type {arr.types[t]}: {used[t]:.6f} GPUs used > {arr.workers[t]:g} present"
        )
    forbidden = (~arr.allowed) & (X > ABS_TOL)
    if forbidden.any():
        i, t = np.argwhere(forbidden)[0]
        problems.append(
            f"job {arr.job_ids[i]} runs on {arr.types[t]} where it cannot (zero throughput or "
            f"fewer than scale_factor GPUs)"
        )
    return problems


def effective_throughput(arr: ClusterArrays, X: np.ndarray) -> np.ndarray:
    return (arr.thr * np.clip(X, 0, None)).sum(axis=1)


def max_min_value(arr: ClusterArrays, X: np.ndarray, extra_thr: np.ndarray | None = None) -> float:
    p = arr.proportional_throughput()
    thr = effective_throughput(arr, X) + (0.0 if extra_thr is None else extra_thr)
    vals = arr.scale * thr / (arr.weight * p)
    return float(vals.min())


def makespan_value(arr: ClusterArrays, X: np.ndarray, extra_thr: np.ndarray | None = None) -> float:
    thr = effective_throughput(arr, X) + (0.0 if extra_thr is None else extra_thr)
    with np.errstate(divide="ignore"):
        finish = np.where(thr > 0, arr.steps / np.where(thr > 0, thr, 1), np.inf)
    return float(finish.max())


def pair_usage(
    instance: GpuClusterInstance, allocation: pd.DataFrame
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Throughput, time and GPUs of the co-located rows (``other_job`` not empty).

    Each pair must appear from both sides with the same fraction, share a scale factor,
    and have a co-location entry with positive throughputs for its job types on that
    worker type; the GPUs of a pair are counted once.
    """
    arr = instance.arrays
    n, T = arr.num_jobs, len(arr.types)
    thr = np.zeros(n)
    share = np.zeros(n)
    gpus = np.zeros(T)
    problems: list[str] = []
    rates: dict[tuple[str, str, str, int], float] = {}
    for e in instance.colocation or []:
        a, b = e.job_types
        ta, tb = e.throughput
        if ta > 0 and tb > 0:
            if a == b:
                rates[(e.worker_type, a, a, e.scale_factor)] = 0.5 * (ta + tb)
            else:
                rates[(e.worker_type, a, b, e.scale_factor)] = ta
                rates[(e.worker_type, b, a, e.scale_factor)] = tb
    job_pos = {j: i for i, j in enumerate(arr.job_ids)}
    type_pos = {t: k for k, t in enumerate(arr.types)}
    other = allocation["other_job"].fillna("").astype(str)
    rows = allocation[other != ""]
    seen: dict[tuple[str, str, str], float] = {}
    for job, wt, oth, f in zip(
        rows["job"].astype(str), rows["worker_type"].astype(str), rows["other_job"].astype(str),
        rows["fraction"].astype(float), strict=True,
    ):  # fmt: skip
        if job not in job_pos or oth not in job_pos or wt not in type_pos:
            problems.append(f"pair row {job}/{oth} on {wt} names an unknown job or type")
            continue
        if job == oth:
            problems.append(f"job {job} is paired with itself")
            continue
        i, j, w = job_pos[job], job_pos[oth], type_pos[wt]
        if f < -ABS_TOL:
            problems.append(f"negative pair fraction for {job}/{oth} on {wt}")
        ji, jj = instance.jobs[i], instance.jobs[j]
        if ji.scale_factor != jj.scale_factor:
            problems.append(f"jobs {job} and {oth} share GPUs with different scale factors")
            continue
        if arr.workers[w] < ji.scale_factor:
            problems.append(f"pair {job}/{oth} needs {ji.scale_factor} GPUs of {wt}")
        key = (wt, ji.job_type or "", jj.job_type or "", ji.scale_factor)
        if key not in rates:
            problems.append(f"no usable colocation entry for {key[1]!r} + {key[2]!r} on {wt}")
            continue
        thr[i] += f * rates[key]
        share[i] += f
        gpus[w] += 0.5 * f * ji.scale_factor  # each pair has one row per side
        seen[(job, oth, wt)] = seen.get((job, oth, wt), 0.0) + f
    for (job, oth, wt), f in seen.items():
        back = seen.get((oth, job, wt))
        if back is None or not np.isclose(back, f, rtol=1e-9, atol=1e-12):
            problems.append(f"pair {job}/{oth} on {wt} is not reported from both sides equally")
            break
    return thr, share, gpus, problems


def _best(arr: ClusterArrays) -> np.ndarray:
    return np.where(arr.allowed, arr.thr, 0.0).max(axis=1)


def normalized_throughput(arr: ClusterArrays, X: np.ndarray) -> np.ndarray:
    """``weight_i * thr_i(X) / best_i`` (1 = full time on the job's fastest usable type)."""
    return arr.weight * effective_throughput(arr, X) / _best(arr)


def cost_per_hour(arr: ClusterArrays, X: np.ndarray, cost: np.ndarray) -> float:
    """Dollars per hour the allocation pays: ``sum_{i,t} cost[t] * scale_i * X[i,t]``."""
    return float((arr.scale[:, None] * np.clip(X, 0, None) * cost[None, :]).sum())


def throughput_per_dollar(arr: ClusterArrays, X: np.ndarray, cost: np.ndarray) -> float:
    paid = cost_per_hour(arr, X, cost)
    total = float(normalized_throughput(arr, X).sum())
    return total / paid if paid > 0 else 0.0


def _entity_weights(instance: GpuClusterInstance) -> np.ndarray:
    # written out again on purpose (not shared with the solver): entity weight split over
    # the entity's jobs in proportion to their own weights
    weights = [j.weight for j in instance.jobs]
    totals: dict[str, float] = {}
    for j in instance.jobs:
        if j.entity is not None:
            totals[j.entity] = totals.get(j.entity, 0.0) + j.weight
    ew = instance.entity_weights or {}
    out = []
    for j, w in zip(instance.jobs, weights, strict=True):
        out.append(w if j.entity is None else ew.get(j.entity, 1.0) * w / totals[j.entity])
    return np.array(out)


def _ftf_value(instance: GpuClusterInstance, X: np.ndarray) -> float:
    arr = instance.arrays
    elapsed = np.array([j.time_elapsed_s or 0.0 for j in instance.jobs])
    W = arr.workers.sum()
    share = np.minimum(1.0, W / (arr.num_jobs * arr.scale))
    iso = np.zeros(arr.num_jobs)
    for t in range(len(arr.types)):
        iso += np.where(arr.allowed[:, t], arr.thr[:, t], 0.0) * arr.workers[t] / W * share
    thr = effective_throughput(arr, X)
    if (thr <= 0).any():
        return float("inf")
    ratio = (elapsed + arr.steps / thr) / (elapsed + arr.steps / iso)
    return float(ratio.max())


def _check_deadlines(
    instance: GpuClusterInstance, X: np.ndarray, jobs: pd.DataFrame | None
) -> list[str]:
    arr = instance.arrays
    thr = effective_throughput(arr, X)
    problems = []
    claimed: dict[str, bool] = {}
    if jobs is not None and "deadline_met" in jobs.columns:
        claimed = dict(zip(jobs["job"].astype(str), jobs["deadline_met"].astype(bool), strict=True))
    for i, j in enumerate(instance.jobs):
        if j.deadline_s is None:
            continue
        finish = arr.steps[i] / thr[i] if thr[i] > 0 else float("inf")
        met = finish <= j.deadline_s * (1 + 1e-5)
        if j.id not in claimed:
            problems.append(f"job {j.id} has an SLO but the jobs table does not say if it is met")
        elif claimed[j.id] and not met:
            problems.append(
                f"job {j.id}: SLO reported met but finishes at {finish:.6g} s > {j.deadline_s} s"
            )
    return problems


# ------------------------------------------------------------------ objectives
# each recomputes one objective from the allocation (and may add checks of its own)
def _max_min(inst: GpuClusterInstance, X: np.ndarray, pair_thr: Any, *_: Any) -> float:
    return max_min_value(inst.arrays, X, pair_thr)


def _makespan(inst: GpuClusterInstance, X: np.ndarray, pair_thr: Any, *_: Any) -> float:
    return makespan_value(inst.arrays, X, pair_thr)


def _water_filling(inst: GpuClusterInstance, X: np.ndarray, *_: Any) -> float:
    arr = inst.arrays
    p = arr.proportional_throughput()
    w = _entity_weights(inst)
    return float((arr.scale * effective_throughput(arr, X) / (w * p)).min())


def _finish_time(inst: GpuClusterInstance, X: np.ndarray, *_: Any) -> float:
    return _ftf_value(inst, X)


def _total_throughput(inst: GpuClusterInstance, X: np.ndarray, *_: Any) -> float:
    return float(normalized_throughput(inst.arrays, X).sum())


def _min_cost(
    inst: GpuClusterInstance,
    X: np.ndarray,
    pair_thr: Any,
    jobs: pd.DataFrame | None,
    problems: list[str],
    checks: list[str],
) -> float:
    arr = inst.arrays
    cost = np.array([(inst.cost_per_hour or {}).get(t, 0.0) for t in arr.types])
    value = throughput_per_dollar(arr, X, cost)
    problems += _check_deadlines(inst, X, jobs)
    checks.append("deadlines")
    return value


_OBJECTIVES: dict[str, Callable[..., float]] = {
    "max_min_fairness": _max_min,
    "makespan": _makespan,
    "max_min_fairness_water_filling": _water_filling,
    "finish_time_fairness": _finish_time,
    "max_total_throughput": _total_throughput,
    "min_cost": _min_cost,
}


def verify(
    instance: GpuClusterInstance,
    objective: str,
    objective_value: float | None,
    allocation: pd.DataFrame,
    jobs: pd.DataFrame | None = None,
) -> Verification:
    arr = instance.arrays
    X, problems = allocation_matrix(arr, allocation)
    checks = ["jobs_present", "nonnegative", "time_share", "capacity", "eligibility"]
    pair_thr = pair_share = pair_gpus = None
    if "other_job" in allocation.columns:
        pair_thr, pair_share, pair_gpus, pp = pair_usage(instance, allocation)
        problems += pp
        checks.append("colocation_pairs")
    problems += check_allocation(arr, X, pair_gpus, pair_share)
    value: float | None = None
    recompute = _OBJECTIVES.get(objective)
    if recompute is not None:
        value = recompute(instance, X, pair_thr, jobs, problems, checks)
    if value is not None:
        checks.append("objective")
        if objective_value is None or not np.isclose(value, objective_value, rtol=1e-5, atol=1e-9):
            problems.append(f"objective recomputed as {value:.9g}, result says {objective_value}")
    return Verification(
        ok=not problems, objective_value=value, violations=tuple(problems), checks=tuple(checks)
    )
