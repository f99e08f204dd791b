"""Trace replay for ``gpu_cluster`` policies (Gavel's simulator loop).

Time advances in rounds of ``round_s`` seconds (Gavel: 360 s). At each round boundary
the jobs that have arrived join, finished jobs leave and, when that set changed, the
policy is re-solved (Gavel recomputes on arrivals and completions). Then, for the round:

* ``progress="rounds"`` (default): Gavel's round mechanism
  (:class:`~hetopt.kinds.gpu_cluster.rounds.RoundScheduler`, priority = allocated /
  received share) picks which jobs run on which GPU type; a chosen job runs at its full
  throughput ``thr[i,t]`` on that type for the round;
* ``progress="fluid"``: every active job runs at its allocated effective throughput
  ``sum_t X[i,t] * thr[i,t]`` steps/s (time-sharing inside a round is not placed).

A job that finishes inside a round records its exact finish time; its GPUs stay idle
until the next boundary, as in Gavel.

``max_min_fairness`` re-solves one persistent LP over all jobs of the trace, switching
jobs on and off by bounds (:class:`~hetopt.kinds.gpu_cluster.maxmin.PersistentMaxMin`); other
policies (or ``persistent=False``) call the kind's ``solve`` on an instance of the
active jobs with their remaining steps and elapsed time.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...errors import InstanceError, UsageError
from ...options import SolveOptions

log = logging.getLogger(__name__)

ROUND_S = 360.0
SUMMARY_KEYS = (
    "mean_jct_s",
    "median_jct_s",
    "p95_jct_s",
    "makespan_s",
    "utilization",
    "num_jobs",
    "completed_jobs",
    "rounds",
    "solves",
    "solve_latency_p50_s",
    "solve_latency_p95_s",
    "round_s",
    "solve_latency_p95_over_round",
    "policy",
    "agnostic",
    "progress_model",
)
"""Keys of ``SimResult.summary`` (a fixed contract of ``hetopt simulate --json``)."""


@dataclass
class SimResult:
    """Outcome of a trace replay.

    ``jobs`` has one row per trace job: ``job, job_type, scale_factor, weight,
    arrival_s, finish_s, jct_s`` (``finish_s``/``jct_s`` are NaN for a job still
    running when the replay stopped). ``summary`` has the keys in :data:`SUMMARY_KEYS`.
    """

    jobs: pd.DataFrame
    summary: dict[str, Any]
    solve_latencies_s: list[float] = field(default_factory=list)
    levels: list[float] = field(default_factory=list)
    """The policy's objective value at every re-solve (max-min: the level ``z``)."""

    def to_dict(self) -> dict[str, Any]:
        """``{"summary": {...}, "jobs": [...]}`` (what ``--json`` prints)."""
        from ...result import _jsonable

        return {
            "summary": {k: _jsonable(self.summary.get(k)) for k in SUMMARY_KEYS},
            "jobs": [
                {k: _jsonable(v) for k, v in row.items()}
                for row in self.jobs.to_dict(orient="records")
            ],
        }


def generate_trace(
    num_jobs: int,
    workers: Mapping[str, int],
    arrival_rate: float,
    seed: int = 0,
    multi_gpu: bool = True,
    priority_fraction: float = 0.0,
) -> list[dict[str, Any]]:
    """A Gavel-style trace: Gavel's job generator with Poisson arrivals.

    Parameters
    ----------
    num_jobs
        Number of jobs.
    workers
        Cluster (to size scale factors, as the generator does).
    arrival_rate
        Mean arrivals per hour (exponential inter-arrival times, first job at 0).
    seed
        Random seed.

    Returns
    -------
    list of dict
        Records shaped like :func:`~hetopt.kinds.gpu_cluster.trace.read_gavel_trace`'s
        (``job_type, scale_factor, total_steps, priority_weight, slo, arrival_s``).
    """
    from .generate import generate_jobs

    if num_jobs < 1:
        raise InstanceError("must be at least 1", "generate_jobs")
    if not arrival_rate > 0:
        raise InstanceError(f"must be > 0 jobs per hour, got {arrival_rate}", "arrival_rate")
    rng = np.random.default_rng(seed)
    jobs = generate_jobs(num_jobs, rng, workers, None, multi_gpu, priority_fraction)
    gaps = rng.exponential(3600.0 / arrival_rate, size=num_jobs)
    gaps[0] = 0.0
    arrivals = np.cumsum(gaps)
    return [
        {
            "line": k + 1,
            "job_type": j["job_type"],
            "scale_factor": j["scale_factor"],
            "total_steps": max(1, round(j["steps_remaining"])),
            "priority_weight": j["weight"],
            "slo": None,
            "arrival_s": round(float(a), 3),
        }
        for k, (j, a) in enumerate(zip(jobs, arrivals, strict=True))
    ]


def load_trace(path: str | Path, table: Any = None) -> list[dict[str, Any]]:
    """Read a Gavel-format trace (the ``gpu_cluster`` kind's reader)."""
    from .trace import read_gavel_trace

    return read_gavel_trace(path, table)


def trace_instance(
    records: Sequence[Mapping[str, Any]], workers: Mapping[str, int], table: Any = None
) -> Any:
    """All trace jobs as one ``gpu_cluster`` instance (ids ``"0"``, ``"1"``, ...)."""
    from .gavel import simulation_table
    from .trace import trace_to_instance

    return trace_to_instance(records, table or simulation_table(), workers)


class _Policy:
    """Allocation for the active jobs at one round boundary."""

    def allocate(
        self, active: np.ndarray, remaining: np.ndarray, now: float
    ) -> tuple[np.ndarray, float]:
        raise NotImplementedError


class _PersistentMaxMin(_Policy):
    def __init__(self, inst: Any, agnostic: bool, options: SolveOptions):
        from .formulations import agnostic_throughputs
        from .maxmin import MaxMinProblem, PersistentMaxMin

        arr = inst.arrays
        thr = agnostic_throughputs(arr) if agnostic else arr.thr
        problem = MaxMinProblem(
            thr=thr,
            scale=arr.scale,
            weight=arr.weight,
            norm=arr.proportional_throughput(thr),
            allowed=arr.allowed,
            capacity=arr.workers.astype(float),
            jobs=np.arange(arr.num_jobs),
        )
        self.lp = PersistentMaxMin(problem, options)

    def allocate(
        self, active: np.ndarray, remaining: np.ndarray, now: float
    ) -> tuple[np.ndarray, float]:
        self.lp.set_active(active)
        sol = self.lp.solve()
        if not sol.status.has_solution:
            raise UsageError(f"the max-min LP ended {sol.status.value}: {sol.termination}")
        return sol.X, sol.z


class _KindPolicy(_Policy):
    """Any ``gpu_cluster`` objective through the kind's own ``solve``."""

    def __init__(self, inst: Any, policy: str, agnostic: bool, options: SolveOptions):
        from . import KIND

        self.kind = KIND
        self.inst = inst
        self.policy = KIND.resolve_objective(inst, policy)
        self.agnostic = agnostic
        self.options = options
        self.data = inst.to_dict()
        self.arrival = np.array([j.arrival_s or 0.0 for j in inst.jobs])

    def allocate(
        self, active: np.ndarray, remaining: np.ndarray, now: float
    ) -> tuple[np.ndarray, float]:
        from .data import GpuClusterInstance

        idx = np.nonzero(active)[0]
        jobs = []
        for i in idx:
            job = dict(self.data["jobs"][i])
            job["steps_remaining"] = float(max(remaining[i], 1e-9))
            job["time_elapsed_s"] = float(max(now - self.arrival[i], 0.0))
            job.pop("arrival_s", None)
            if "deadline_s" in job:  # relative to now; an SLO already missed is dropped
                left = self.arrival[i] + job["deadline_s"] - now
                if left > 0:
                    job["deadline_s"] = float(left)
                else:
                    job.pop("deadline_s")
            jobs.append(job)
        sub = GpuClusterInstance.from_dict({**self.data, "jobs": jobs})
        kw = {"agnostic": True} if self.agnostic else {}
        res = self.kind.solve(sub, self.policy, self.options, **kw)
        if not res.status.has_solution:
            raise UsageError(f"policy {self.policy} ended {res.status.value}: {res.termination}")
        arr = self.inst.arrays
        X = np.zeros((arr.num_jobs, len(arr.types)))
        al = res.tables["allocation"]
        if "other_job" in al.columns:
            al = al[al["other_job"].fillna("").astype(str) == ""]
        pos = {j: i for i, j in enumerate(arr.job_ids)}
        tpos = {t: k for k, t in enumerate(arr.types)}
        np.add.at(
            X,
            (al["job"].astype(str).map(pos).to_numpy(), al["worker_type"].map(tpos).to_numpy()),
            al["fraction"].to_numpy(dtype=float),
        )
        return np.clip(X, 0.0, 1.0), float(res.objective_value or 0.0)


def _progress_mode(progress: str) -> str:
    return "rounds" if progress == "auto" else progress


def _round_scheduler(inst: Any, round_s: float) -> Any:
    from .rounds import RoundScheduler

    scale = {j.id: j.scale_factor for j in inst.jobs}
    return RoundScheduler(inst.workers, scale, {}, round_s)


def _alloc_map(arr: Any, X: np.ndarray, active: np.ndarray) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for i in np.nonzero(active)[0]:
        row = {arr.types[k]: float(X[i, k]) for k in np.nonzero(X[i] > 1e-9)[0]}
        out[arr.job_ids[i]] = row
    return out


def simulate(
    records: Sequence[Mapping[str, Any]],
    workers: Mapping[str, int],
    policy: str = "max_min_fairness",
    agnostic: bool = False,
    round_s: float = ROUND_S,
    options: SolveOptions | None = None,
    table: Any = None,
    persistent: bool = True,
    max_rounds: int = 1_000_000,
    progress: str = "auto",
) -> SimResult:
    """Replay a trace under a ``gpu_cluster`` policy and measure job completion times.

    Parameters
    ----------
    records
        Trace jobs (from :func:`load_trace` or :func:`generate_trace`).
    workers
        GPUs per type, e.g. ``{"k80": 24, "p100": 16, "v100": 8}``.
    policy
        A ``gpu_cluster`` objective (``hetopt kinds``), default ``max_min_fairness``.
    agnostic
        Allocate with the heterogeneity-agnostic throughputs (progress uses the true ones).
    round_s
        Round length in seconds (Gavel: 360).
    options
        Solve options (default ``threads=1``).
    table
        Throughput table (default: Gavel's simulation table shipped with hetopt).
    persistent
        Keep max-min fairness in one live LP (else re-build every re-solve).
    max_rounds
        Stop after this many rounds (unfinished jobs get NaN times).
    progress
        ``"rounds"``: every round :class:`~hetopt.kinds.gpu_cluster.rounds.RoundScheduler`
        picks which jobs run on which type (Gavel's priorities), and a chosen job runs at
        its full throughput on that type; ``"fluid"``: every active job runs at its
        allocated effective throughput. ``"auto"``: rounds (the round mechanism ships with
        the kind).

    Returns
    -------
    SimResult
        Per-job finish times and JCTs; mean/median/p95 JCT, makespan, utilisation and
        solve latency p50/p95 against the round length.
    """
    if not round_s > 0:
        raise UsageError(f"round_s must be > 0, got {round_s}")
    if progress not in ("auto", "rounds", "fluid"):
        raise UsageError(f"progress must be 'auto', 'rounds' or 'fluid', got {progress!r}")
    mode = _progress_mode(progress)
    options = options or SolveOptions(threads=1)
    inst = trace_instance(records, workers, table)
    arr = inst.arrays
    n = arr.num_jobs
    arrival = np.array([float(r["arrival_s"]) for r in records])
    remaining = arr.steps.astype(float).copy()
    finish = np.full(n, np.nan)
    pol: _Policy
    if policy == "max_min_fairness" and persistent:
        pol = _PersistentMaxMin(inst, agnostic, options)
    else:
        pol = _KindPolicy(inst, policy, agnostic, options)
    done = np.zeros(n, dtype=bool)
    t = float(arrival.min())
    rounds = 0
    latencies: list[float] = []
    levels: list[float] = []
    busy_gpu_s = 0.0
    last_active: np.ndarray | None = None
    X = np.zeros((n, len(arr.types)))
    sched = _round_scheduler(inst, round_s) if mode == "rounds" else None
    type_pos = {t: k for k, t in enumerate(arr.types)}
    job_pos = {j: i for i, j in enumerate(arr.job_ids)}
    while not done.all() and rounds < max_rounds:
        active = (arrival <= t + 1e-9) & ~done
        if not active.any():
            nxt = arrival[~done].min()
            t = t + math.ceil((nxt - t) / round_s) * round_s  # next boundary after arrival
            continue
        if last_active is None or (active != last_active).any():
            t0 = time.perf_counter()
            X, level = pol.allocate(active, remaining, t)
            latencies.append(time.perf_counter() - t0)
            levels.append(level)
            last_active = active.copy()
            if sched is not None:
                sched.set_allocation(_alloc_map(arr, X, active))
        if sched is None:
            rate = (arr.thr * X).sum(axis=1)
            share = X.sum(axis=1)
        else:  # the jobs Gavel's round mechanism picks run full speed on their type
            rate = np.zeros(n)
            share = np.zeros(n)
            placed = sched.next_round().placements
            for j, tname in zip(placed["job"], placed["worker_type"], strict=True):
                i = job_pos[str(j)]
                if active[i] and share[i] == 0:
                    rate[i] = arr.thr[i, type_pos[str(tname)]]
                    share[i] = 1.0
        run = active & (rate > 0)
        if not run.any() and not (arrival > t + 1e-9).any():
            log.warning("policy %s gives no active job any GPU time: stopping at %g s", policy, t)
            break  # nothing can change any more: the rest stays unfinished
        dt = np.full(n, round_s)
        with np.errstate(divide="ignore", invalid="ignore"):
            need = np.where(run, remaining / np.where(run, rate, 1.0), np.inf)
        ends = run & (need <= round_s)
        dt[ends] = need[ends]
        busy_gpu_s += float((arr.scale[run] * share[run] * dt[run]).sum())
        remaining[run] -= rate[run] * dt[run]
        finish[ends] = t + need[ends]
        remaining[ends] = 0.0
        done |= ends
        if sched is not None:
            for k in np.nonzero(ends)[0].tolist():
                sched.remove_job(arr.job_ids[k])
        t += round_s
        rounds += 1
    jct = finish - arrival
    jobs = pd.DataFrame(
        {
            "job": arr.job_ids,
            "job_type": [j.job_type for j in inst.jobs],
            "scale_factor": arr.scale.astype(int),
            "weight": arr.weight,
            "arrival_s": arrival,
            "finish_s": finish,
            "jct_s": jct,
        }
    )
    ok = ~np.isnan(jct)
    start = float(arrival.min())
    makespan = float(np.nanmax(finish) - start) if ok.any() else math.nan
    lat = np.array(latencies) if latencies else np.array([math.nan])
    summary = {
        "mean_jct_s": float(jct[ok].mean()) if ok.any() else math.nan,
        "median_jct_s": float(np.median(jct[ok])) if ok.any() else math.nan,
        "p95_jct_s": float(np.percentile(jct[ok], 95)) if ok.any() else math.nan,
        "makespan_s": makespan,
        "utilization": busy_gpu_s / (float(arr.workers.sum()) * makespan)
        if ok.any() and makespan > 0
        else math.nan,
        "num_jobs": n,
        "completed_jobs": int(ok.sum()),
        "rounds": rounds,
        "solves": len(latencies),
        "solve_latency_p50_s": float(np.percentile(lat, 50)),
        "solve_latency_p95_s": float(np.percentile(lat, 95)),
        "round_s": float(round_s),
        "solve_latency_p95_over_round": float(np.percentile(lat, 95)) / round_s,
        "policy": policy,
        "agnostic": bool(agnostic),
        "progress_model": mode,
    }
    return SimResult(jobs, summary, latencies, levels)


def plot_jct_cdf(
    sim_result: SimResult | Sequence[SimResult], ax: Any = None, label: str | None = None
) -> Any:
    """Plot the empirical CDF of job completion times (hours); returns the ``ax``.

    Pass several results (e.g. heterogeneity-aware and agnostic) to overlay them.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    results = [sim_result] if isinstance(sim_result, SimResult) else list(sim_result)
    for r in results:
        jct = np.sort(r.jobs["jct_s"].dropna().to_numpy()) / 3600.0
        if len(jct) == 0:
            continue
        y = np.arange(1, len(jct) + 1) / len(jct)
        name = (
            label
            if label and len(results) == 1
            else (f"{r.summary['policy']}{' (agnostic)' if r.summary['agnostic'] else ''}")
        )
        ax.step(jct, y, where="post", label=f"{name}: mean {r.summary['mean_jct_s'] / 3600:.2f} h")
    ax.set_xlabel("job completion time (h)")
    ax.set_ylabel("fraction of jobs")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    return ax
