"""Peer solvers for the ``gpu_cluster`` benchmarks: cvxpy models of the same LPs.

Written here from the definitions (Gavel's max-min fairness LP and the exact makespan
LP), not copied from Gavel or from hetopt: one column per (job, type) pair a job may
use, row blocks as scipy sparse matrices, solved by cvxpy with ECOS (what Gavel uses
every round) or Clarabel (the fastest open conic IPM on the large LPs).

* max-min fairness: ``max z`` s.t. ``sum_t x[i,t] <= 1``, ``sum_i scale_i x[i,t] <=
  W_t``, ``sum_t scale_i thr[i,t] / (weight_i p_i) x[i,t] >= z`` with Gavel's
  ``p_i = sum_t thr[i,t] W_t / sum_t W_t``;
* makespan, in seconds of work ``tau[i,t]`` (time job ``i`` runs on type ``t``):
  ``min M`` s.t. ``sum_t tau[i,t] <= M``, ``sum_i scale_i tau[i,t] <= W_t M``,
  ``sum_t thr[i,t] / steps_i tau[i,t] >= 1``.

The peers take plain arrays (:func:`arrays_of` reads them from an instance dict, as a
scheduler holding its own job records would), so their timings include building the
cvxpy problem and cvxpy's canonicalisation, as Gavel's do.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

PEER_OPTIONS: dict[str, dict[str, Any]] = {
    # ECOS with its defaults (Gavel's setting) meets the 1e-9 agreement on these LPs;
    # Clarabel's defaults (1e-8) do not, so its gap and feasibility tolerances are 1e-10
    "ECOS": {},
    "CLARABEL": {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10},
}


def available() -> bool:
    """cvxpy and both peer solvers are installed (``pip install hetopt[bench]``)."""
    try:
        import cvxpy as cp
    except ImportError:
        return False
    return {"ECOS", "CLARABEL"} <= set(cp.installed_solvers())


@dataclass(frozen=True)
class Arrays:
    thr: np.ndarray
    scale: np.ndarray
    weight: np.ndarray
    steps: np.ndarray
    workers: np.ndarray


def arrays_of(data: Mapping[str, Any]) -> Arrays:
    """Dense arrays of an instance dict (``{"workers": ..., "jobs": [...]}``)."""
    types = list(data["workers"])
    col = {t: k for k, t in enumerate(types)}
    jobs = data["jobs"]
    thr = np.zeros((len(jobs), len(types)))
    for i, job in enumerate(jobs):
        for t, v in job["throughput"].items():
            thr[i, col[t]] = v
    scale = np.array([j.get("scale_factor", 1) for j in jobs], dtype=float)
    weight = np.array([j.get("weight", 1.0) for j in jobs], dtype=float)
    steps = np.array([j.get("steps_remaining", np.nan) or np.nan for j in jobs], dtype=float)
    workers = np.array([data["workers"][t] for t in types], dtype=float)
    return Arrays(thr, scale, weight, steps, workers)


def _blocks(a: Arrays, coef: np.ndarray) -> tuple[Any, Any, Any, int]:
    import scipy.sparse as sp

    usable = (a.thr > 0) & (a.scale[:, None] <= a.workers[None, :])
    job, typ = np.nonzero(usable)
    n, T, K = len(a.scale), len(a.workers), len(job)
    k = np.arange(K)
    one_per_job = sp.csr_array((np.ones(K), (job, k)), shape=(n, K))
    gpus = sp.csr_array((a.scale[job], (typ, k)), shape=(T, K))
    value = sp.csr_array((coef[job, typ], (job, k)), shape=(n, K))
    return one_per_job, gpus, value, K


def max_min_fairness(a: Arrays, solver: str) -> float:
    """Gavel's max-min fairness optimum (normalised throughput) by cvxpy + ``solver``."""
    import cvxpy as cp

    p = a.thr @ a.workers / a.workers.sum()
    coef = (a.scale / (a.weight * p))[:, None] * a.thr
    time_rows, gpu_rows, value_rows, K = _blocks(a, coef)
    x = cp.Variable(K, nonneg=True)
    z = cp.Variable()
    prob = cp.Problem(
        cp.Maximize(z), [time_rows @ x <= 1, gpu_rows @ x <= a.workers, value_rows @ x >= z]
    )
    prob.solve(solver=solver, **PEER_OPTIONS[solver])
    if prob.status != "optimal":
        raise RuntimeError(f"{solver} ended {prob.status}")
    return float(prob.value)


def makespan(a: Arrays, solver: str) -> float:
    """The minimum makespan (seconds) by cvxpy + ``solver``, in time variables."""
    import cvxpy as cp

    time_rows, gpu_rows, work_rows, K = _blocks(a, a.thr / a.steps[:, None])
    tau = cp.Variable(K, nonneg=True)
    span = cp.Variable()
    prob = cp.Problem(
        cp.Minimize(span),
        [time_rows @ tau <= span, gpu_rows @ tau <= a.workers * span, work_rows @ tau >= 1],
    )
    prob.solve(solver=solver, **PEER_OPTIONS[solver])
    if prob.status != "optimal":
        raise RuntimeError(f"{solver} ended {prob.status}")
    return float(prob.value)


PEERS = {"max_min_fairness": max_min_fairness, "makespan": makespan}


def timed(objective: str, data: Mapping[str, Any], solver: str) -> tuple[float, float]:
    """(optimum, wall seconds) of the peer, from the instance dict to the number."""
    t0 = time.perf_counter()
    value = PEERS[objective](arrays_of(data), solver)
    return value, time.perf_counter() - t0


# ------------------------------------------------------------------- instances
TYPES8 = ("k80", "p100", "v100", "t4", "a10", "l4", "a100", "h100")
SPEED8 = {"t4": 0.7, "a10": 1.3, "l4": 1.1, "a100": 2.2, "h100": 3.4}
"""Speed of the five types Gavel did not measure, relative to a V100."""


def eight_types(num_jobs: int, seed: int = 1, gpus_per_type: int | None = None) -> dict[str, Any]:
    """A ``gpu_cluster`` instance dict with 8 GPU types and no two jobs alike.

    Gavel's models and scale factors (its table's K80/P100/V100 throughputs), the other
    five types at a fixed speed relative to a V100; every throughput then gets its own
    log-normal factor (sigma 0.25), weights are 1, 2 or 5: no symmetry to aggregate, so
    the LP keeps one row per job (the hard case for every method).
    """
    from hetopt.kinds.gpu_cluster.gavel import simulation_table

    rng = np.random.default_rng(seed)
    table = simulation_table()
    models = table.models(1)
    g = gpus_per_type or max(8, num_jobs // 10)
    jobs = []
    for k in range(num_jobs):
        model = models[int(rng.integers(len(models)))]
        sf = int(rng.choice([1, 2, 4, 8], p=[0.7, 0.1, 0.15, 0.05]))
        if (model, sf) not in table.solo:
            sf = 1
        solo = table.solo[(model, sf)]
        noise = rng.lognormal(0.0, 0.25, len(TYPES8))
        thr = {
            t: round(float(solo.get(t, solo["v100"] * SPEED8.get(t, 1.0)) * f), 6)
            for t, f in zip(TYPES8, noise, strict=True)
        }
        duration = 60.0 * 10 ** rng.uniform(1.5, 3.0)
        jobs.append(
            {
                "id": str(k),
                "job_type": model,
                "throughput": thr,
                "scale_factor": sf,
                "weight": float(rng.choice([1.0, 2.0, 5.0])),
                "steps_remaining": round(float(duration * solo["v100"]), 3),
            }
        )
    return {"kind": "gpu_cluster", "workers": dict.fromkeys(TYPES8, g), "jobs": jobs}
