"""Independent verifier for ``gpu_cluster`` allocations.

It reads only the instance and the ``allocation`` table (never the Pyomo model) and
re-derives everything: time shares, capacities, eligibility and the objective.
"""

from __future__ import annotations

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
    arr: ClusterArrays, X: np.ndarray, extra_usage: np.ndarray | None = None
) -> list[str]:
    """Feasibility checks on a solo allocation matrix."""
    problems: list[str] = []
    if (X < -ABS_TOL).any():
        i, t = np.argwhere(X < -ABS_TOL)[0]
        problems.append(
            f"negative fraction {X[i, t]:.3g} for job {arr.job_ids[i]} on {arr.types[t]}"
        )
    share = X.sum(axis=1)
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


def max_min_value(arr: ClusterArrays, X: np.ndarray) -> float:
    p = arr.proportional_throughput()
    vals = arr.scale * effective_throughput(arr, X) / (arr.weight * p)
    return float(vals.min())


def makespan_value(arr: ClusterArrays, X: np.ndarray) -> float:
    thr = effective_throughput(arr, X)
    with np.errstate(divide="ignore"):
        finish = np.where(thr > 0, arr.steps / np.where(thr > 0, thr, 1), np.inf)
    return float(finish.max())


def verify(
    instance: GpuClusterInstance,
    objective: str,
    objective_value: float | None,
    allocation: pd.DataFrame,
) -> Verification:
    arr = instance.arrays
    X, problems = allocation_matrix(arr, allocation)
    problems += check_allocation(arr, X)
    checks = ["jobs_present", "nonnegative", "time_share", "capacity", "eligibility"]
    value: float | None = None
    if objective == "max_min_fairness":
        value = max_min_value(arr, X)
    elif objective == "makespan":
        value = makespan_value(arr, X)
    if value is not None:
        checks.append("objective")
        if objective_value is None or not np.isclose(value, objective_value, rtol=1e-5, atol=1e-9):
            problems.append(f"objective recomputed as {value:.9g}, result says {objective_value}")
    return Verification(
        ok=not problems, objective_value=value, violations=tuple(problems), checks=tuple(checks)
    )
