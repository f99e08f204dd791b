"""Trace replay for ``gpu_cluster`` policies: Gavel's simulator loop, and hetopt's.

Two round mechanisms (``mechanism=``, see :mod:`~hetopt.kinds.gpu_cluster.rounds`):

``"gavel"`` reproduces Gavel's simulator (``Scheduler.simulate`` of stanford-futuredata/
gavel, commit ``c4fa400``) rule by rule, so that a Gavel user gets Gavel's numbers:

* every job the round mechanism picks gets a *lease* of ``floor(throughput * round_s)``
  steps (fewer when it has fewer left) and runs at its full throughput; a round ends when
  its longest lease ends; then finished jobs leave and arrived jobs join;
* the allocation is recomputed only when jobs arrived or left and at least
  ``reset_interval_s`` (1,920 s) passed since the last recompute: arrivals wait; a job
  that arrived since is not placed; an empty cluster jumps to the next arrival;
* priorities over the window since the last allocation reset, per-type queues filled
  v100 -> p100 -> k80 (shuffled, seeded, for the agnostic policies), back-fill;
* the agnostic policies see throughput 1.0 on every type (max-min fairness) or the V100
  throughput on every type (makespan), as Gavel's do; Gavel's makespan policy bisects
  the finish time to within 5 % and takes an interior point of that feasibility LP, and
  so does this replay (HiGHS's interior point method without crossover stands in for
  ECOS); max-min fairness is solved by interior point without crossover too;
* Gavel's accounting quirks are kept: a multi-GPU lease of fewer steps than GPUs fails
  (five failures in a row drop the job, reported as ``failed_jobs``), a round after an
  idle gap counts the gap in the priorities' run time.

``"hetopt"`` (the default) keeps hetopt's choices and is work-conserving: the policy is
re-solved at every round boundary where jobs arrived or left (one live LP, a few
milliseconds), priorities keep each job's history across re-solves, idle GPUs are
back-filled with waiting jobs, a job finishing inside a round hands its GPUs to a
waiting job at once and an arriving job starts on an idle GPU at once. Rounds are
``round_s`` long (an empty cluster jumps to the next arrival); steps are continuous.

With ``loanable=`` (a :class:`LoanCurve`, ``hetopt`` mechanism) the cluster also borrows
idle inference GPUs over time, as Lyra (EuroSys'23) does: at a round boundary where the
lent capacity changed, the round mechanism's cluster and the policy's capacity rows follow
it and the policy is re-solved; jobs on GPUs taken back are preempted there.

``progress="fluid"`` instead lets every active job run at its allocated effective
throughput ``sum_t X[i,t] * thr[i,t]`` steps/s (time-sharing inside a round is not
placed; re-solves at boundaries where the active set changed).
"""

from __future__ import annotations

import heapq
import logging
import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...errors import InstanceError, UsageError
from ...options import SolveOptions
from ...status import Status
from .._shared import arguments as check
from .rounds import GAVEL_TYPE_ORDER, MECHANISMS, RESET_INTERVAL_S, RoundScheduler, Unit

log = logging.getLogger(__name__)

ROUND_S = 360.0
MAX_FAILED_ATTEMPTS = 5
"""Gavel drops a job after this many failed leases in a row."""
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
    "mechanism",
    "reset_interval_s",
    "solve_latency_max_s",
    "solve_latency_max_over_round",
    "failed_jobs",
    "space_sharing",
    "loaned_gpu_s",
    "failed_solves",
    "nonoptimal_solves",
)
"""Keys of ``SimResult.summary`` (a fixed contract of ``hetopt simulate --json``; new
keys are only ever appended)."""

TIMELINE_COLUMNS = (
    "round",
    "start_s",
    "end_s",
    "active_jobs",
    "running_jobs",
    "busy_gpus",
    "utilization",
    "solved",
)
"""Columns of ``SimResult.timeline``: one row per round; ``busy_gpus`` at its start,
``utilization`` = busy GPU-seconds / (GPUs * round length) over the round, ``solved``:
the policy was re-solved at its start."""

ON_SOLVE_FAILURE = ("abort", "keep_previous")
"""What a replay does when a policy solve fails: stop with the error (``abort``, the
default) or keep the last allocation for that round and count it (``keep_previous``)."""


class SolveFailed(UsageError):
    """A policy solve of a replay ended without an allocation (status and termination in
    the message)."""


ProgressCallback = Callable[[float, int, int], None]
"""``(simulated time s, jobs finished, jobs in the trace)``, called after every round."""


@dataclass(frozen=True)
class LoanCurve:
    """GPUs lent to training over time (Lyra's loanable inference capacity).

    Piecewise constant: during ``[k * step_s, (k + 1) * step_s)`` the cluster may borrow
    ``gpus[type][k]`` GPUs of ``type`` beside the owned ``workers``; with ``repeat`` the
    curve starts over every ``len * step_s`` seconds (a daily load), else its last step
    holds. The replay applies a change at the next round boundary: loaned GPUs taken back
    preempt the jobs on them (they wait or move, as at any round boundary).

    Examples
    --------
    >>> curve = LoanCurve.diurnal({"v100": 16})  # 0 at 15:00, 16 at 03:00, hourly steps
    >>> curve.at(3 * 3600.0)
    {'v100': 16}
    """

    step_s: float
    gpus: Mapping[str, tuple[int, ...]]
    repeat: bool = True

    def __post_init__(self) -> None:
        if not self.step_s > 0 or not math.isfinite(self.step_s):
            raise UsageError(f"loan curve: step_s must be > 0, got {self.step_s}")
        lengths = {len(v) for v in self.gpus.values()}
        if not self.gpus or len(lengths) != 1 or 0 in lengths:
            raise UsageError("loan curve: one non-empty GPU list per type, all of one length")
        for t, v in self.gpus.items():
            if any(int(g) != g or g < 0 for g in v):
                raise UsageError(f"loan curve: GPUs of {t!r} must be whole numbers >= 0")
        object.__setattr__(
            self, "gpus", {str(t): tuple(int(g) for g in v) for t, v in self.gpus.items()}
        )

    @property
    def steps(self) -> int:
        return len(next(iter(self.gpus.values())))

    def _index(self, t: float) -> int:
        k = max(math.floor(t / self.step_s), 0)
        return k % self.steps if self.repeat else min(k, self.steps - 1)

    def at(self, t: float) -> dict[str, int]:
        """GPUs lent at time ``t`` (seconds), by type."""
        k = self._index(t)
        return {ty: v[k] for ty, v in self.gpus.items()}

    def peak(self) -> dict[str, int]:
        """The most GPUs of each type ever lent."""
        return {ty: max(v) for ty, v in self.gpus.items()}

    def gpu_seconds(self, t0: float, t1: float) -> float:
        """GPU-seconds lent (all types) over ``[t0, t1]``."""
        total, t = 0.0, float(t0)
        while t < t1:
            nxt = min((math.floor(t / self.step_s) + 1) * self.step_s, t1)
            total += sum(self.at(t).values()) * (nxt - t)
            t = nxt
        return total

    @classmethod
    def diurnal(
        cls,
        peak: Mapping[str, int],
        trough: Mapping[str, int] | None = None,
        period_s: float = 86_400.0,
        step_s: float = 3_600.0,
        peak_at_s: float = 3 * 3_600.0,
    ) -> LoanCurve:
        """A daily curve: inference load is lowest at ``peak_at_s`` (most GPUs lent,
        ``peak``) and highest half a period later (``trough``, default 0), a cosine in
        between, rounded to whole GPUs per step."""
        n = max(round(period_s / step_s), 1)
        low = trough or {}
        mid = (np.arange(n) + 0.5) * step_s
        wave = (0.5 * (1.0 + np.cos(2.0 * math.pi * (mid - peak_at_s) / period_s))).tolist()
        gpus = {
            t: tuple(round(low.get(t, 0) + (p - low.get(t, 0)) * w) for w in wave)
            for t, p in peak.items()
        }
        return cls(period_s / n, gpus, True)


@dataclass
class SimResult:
    """Outcome of a trace replay.

    ``jobs`` has one row per trace job: ``job, job_type, scale_factor, weight,
    arrival_s, finish_s, jct_s`` (``finish_s``/``jct_s`` are NaN for a job still
    running when the replay stopped, or dropped by Gavel's failure rule). ``summary`` has
    the keys in :data:`SUMMARY_KEYS`; ``timeline`` the columns in
    :data:`TIMELINE_COLUMNS`; ``leases`` (with ``record_leases=True``) one row per job and
    stretch of run time: ``job, other_job, worker_type, gpus, start_s, end_s``.
    """

    jobs: pd.DataFrame
    summary: dict[str, Any]
    solve_latencies_s: list[float] = field(default_factory=list)
    levels: list[float] = field(default_factory=list)
    """The policy's objective value at every re-solve (max-min: the level ``z``)."""
    timeline: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=TIMELINE_COLUMNS))
    leases: pd.DataFrame | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"summary": {...}, "jobs": [...], "timeline": [...]}`` (what ``--json``
        prints)."""
        from ...result import _jsonable

        return {
            "summary": {k: _jsonable(self.summary.get(k)) for k in SUMMARY_KEYS},
            "jobs": _records(self.jobs),
            "timeline": _records(self.timeline),
        }


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    from ...result import _jsonable

    return [{k: _jsonable(v) for k, v in row.items()} for row in df.to_dict(orient="records")]


# ----------------------------------------------------------------------------- traces
def _arrival_rate(value: Any, where: str) -> float:
    """A trace generator's ``arrival_rate`` (jobs per hour): a finite one of 0 or below is
    the :class:`~hetopt.InstanceError` the generators always raised; anything else that
    is no number above 0 (at most 1e12) a :class:`~hetopt.UsageError`."""
    rate = check.finite(value)
    if rate is not None and rate <= 0:
        raise InstanceError(f"must be > 0 jobs per hour, got {value}", "arrival_rate")
    return check.positive(value, "arrival_rate", where=where)


def generate_trace(
    num_jobs: int,
    workers: Mapping[str, int],
    arrival_rate: float,
    seed: int = 0,
    multi_gpu: bool = True,
    priority_fraction: float = 0.0,
) -> list[dict[str, Any]]:
    """A Gavel-style trace: hetopt's job generator with Poisson arrivals.

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

    See Also
    --------
    gavel_trace : the same distributions drawn exactly as Gavel's simulator draws them.

    Notes
    -----
    ``num_jobs`` is a whole number from 1 to ``MAX_GENERATED`` (1,000,000), ``seed`` one
    >= 0, ``arrival_rate`` a number above 0 and at most 1e12 and ``priority_fraction``
    one from 0 to 1; anything else is a :class:`~hetopt.UsageError` naming the parameter
    (a finite ``arrival_rate`` of 0 or below is an :class:`~hetopt.InstanceError`, as before).
    """
    from .generate import generate_jobs

    where = "generate_trace"
    num_jobs = check.count(num_jobs, "num_jobs", where=where)
    arrival_rate = _arrival_rate(arrival_rate, where)
    seed = check.seed(seed, where=where)
    priority_fraction = check.fraction(priority_fraction, "priority_fraction", where=where)
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


# Gavel's job templates in the order its generator draws from them (``job_table.py``):
# (model family, batch sizes, has a distributed (multi-GPU) version)
_GAVEL_TEMPLATES = (
    ("ResNet-18 (batch size {})", (16, 32, 64, 128, 256), True),
    ("ResNet-50 (batch size {})", (16, 32, 64, 128), True),
    ("Transformer (batch size {})", (16, 32, 64, 128, 256), True),
    ("LM (batch size {})", (5, 10, 20, 40, 80), True),
    ("Recommendation (batch size {})", (512, 1024, 2048, 4096, 8192), False),
    ("A3C", (None,), False),
    ("CycleGAN", (None,), False),
)
GAVEL_JOB_TABLE: tuple[tuple[str, bool], ...] = tuple(
    (name.format(b) if b is not None else name, dist)
    for name, sizes, dist in _GAVEL_TEMPLATES
    for b in sizes
)
"""Gavel's 26 job templates ``(model, distributed)`` in its order."""


def gavel_trace(
    num_jobs: int,
    arrival_rate: float,
    seed: int = 0,
    multi_gpu: bool = True,
    multi_priority: bool = False,
    table: Any = None,
) -> list[dict[str, Any]]:
    """A continuous trace drawn exactly as Gavel's simulator draws one.

    Gavel's ``simulate(lam=..., generate_multi_gpu_jobs=...)`` samples each job from a
    ``random.Random(seed + 2)`` (scale factor 1/2/4/8 with probability 0.7/0.1/0.15/0.05,
    run time ``60 * 10**U(1.5, 3)`` s with probability 0.8 else ``60 * 10**U(3, 4)``, then
    a template uniformly among those with a multi-GPU version when the scale factor is
    above 1; ``steps = run time * V100 throughput``) and inter-arrival times from a
    ``random.Random(seed + 3)`` (exponential, mean ``3600 / arrival_rate`` s, first job at
    0). The same streams are drawn here, so the jobs are Gavel's for the same seed and
    throughput table (default: the simulation table).

    Returns
    -------
    list of dict
        Trace records (``job_type, scale_factor, total_steps`` (a float, as Gavel's),
        ``priority_weight, slo, arrival_s``).

    Notes
    -----
    ``num_jobs`` is a whole number from 1 to ``MAX_GENERATED`` (1,000,000), ``seed`` a
    whole number (of either sign, as Gavel's) and ``arrival_rate`` a number above 0 and at
    most 1e12; anything else is a :class:`~hetopt.UsageError` naming the parameter (a
    finite ``arrival_rate`` of 0 or below is an :class:`~hetopt.InstanceError`, as in
    :func:`generate_trace`).
    """
    from .gavel import simulation_table

    where = "gavel_trace"
    num_jobs = check.count(num_jobs, "num_jobs", where=where)
    arrival_rate = _arrival_rate(arrival_rate, where)
    seed = check.count(seed, "seed", None, None, where=where)
    table = table or simulation_table()
    jobs_rng = random.Random(seed + 2)
    gaps_rng = random.Random(seed + 3)
    lam = 3600.0 / arrival_rate
    out = []
    arrival = 0.0
    for k in range(num_jobs):
        r = jobs_rng.uniform(0, 1)
        sf = 1
        if 0.7 <= r <= 0.8:
            sf = 2
        elif 0.8 <= r <= 0.95:
            sf = 4
        elif r >= 0.95:
            sf = 8
        if jobs_rng.random() >= 0.8:
            run_time = 60 * (10 ** jobs_rng.uniform(3, 4))
        else:
            run_time = 60 * (10 ** jobs_rng.uniform(1.5, 3))
        if not multi_gpu:
            sf = 1
        while True:
            model, distributed = jobs_rng.choice(GAVEL_JOB_TABLE)
            if sf == 1 or distributed:
                break
        solo = table.solo.get((model, sf))
        if solo is None or not solo.get("v100", 0.0) > 0:
            raise InstanceError(
                f"job type ({model!r}, {sf}) has no V100 throughput in the table", "table"
            )
        weight = 1.0
        if multi_priority and jobs_rng.uniform(0, 1) <= 0.2:
            weight = 5.0
        out.append(
            {
                "line": k + 1,
                "job_type": model,
                "scale_factor": sf,
                "total_steps": run_time * float(solo["v100"]),
                "priority_weight": weight,
                "slo": None,
                "arrival_s": arrival,
            }
        )
        arrival += -math.log(1.0 - gaps_rng.random()) * lam
    return out


def load_trace(path: str | Path, table: Any = None) -> list[dict[str, Any]]:
    """Read a Gavel-format trace (the ``gpu_cluster`` kind's reader)."""
    from .trace import read_gavel_trace

    return read_gavel_trace(path, table)


def trace_instance(
    records: Sequence[Mapping[str, Any]],
    workers: Mapping[str, int],
    table: Any = None,
    colocation: bool = False,
) -> Any:
    """All trace jobs as one ``gpu_cluster`` instance (ids ``"0"``, ``"1"``, ...)."""
    from .gavel import simulation_table
    from .trace import trace_to_instance

    return trace_to_instance(records, table or simulation_table(), workers, colocation=colocation)


# --------------------------------------------------------------------------- policies
@dataclass
class _Allocation:
    """Time shares of the active jobs: ``X`` (jobs x types) and pairs sharing GPUs."""

    X: np.ndarray
    level: float
    pairs: dict[tuple[int, int], dict[int, float]] = field(default_factory=dict)
    nonoptimal: str = ""
    """Why the policy's solve is not proven optimal (its status and termination), or ``""``."""


class _Policy:
    """Allocation for the active jobs at one round boundary."""

    def allocate(self, active: np.ndarray, remaining: np.ndarray, now: float) -> _Allocation:
        raise NotImplementedError

    def set_capacity(self, capacity: np.ndarray) -> None:
        """GPUs per type from now on (a loan curve changed the cluster)."""
        raise UsageError("this policy replays a fixed cluster only (no loan curve)")


def _interior(options: SolveOptions) -> SolveOptions:
    """Interior point without crossover: a point inside the optimal face (as ECOS's)."""
    hopts = {"solver": "ipm", "run_crossover": "off", **dict(options.highs_options)}
    return options.replace(lp_method="ipm", highs_options=hopts)


class _LiveMaxMin(_Policy):
    """Max-min fairness over every trace job in one live LP (jobs switched by bounds)."""

    def __init__(self, arr: Any, thr: np.ndarray, options: SolveOptions):
        from .maxmin import MaxMinProblem, PersistentMaxMin

        allowed = (thr > 0) & (arr.scale[:, None] <= arr.workers[None, :])
        problem = MaxMinProblem(
            thr=thr,
            scale=arr.scale,
            weight=arr.weight,
            norm=thr @ arr.workers / arr.workers.sum(),
            allowed=allowed,
            capacity=arr.workers.astype(float),
            jobs=np.arange(arr.num_jobs),
        )
        self.lp = PersistentMaxMin(problem, options)
        self.scale = arr.scale
        self.fits = allowed
        self.capacity = arr.workers.astype(float)

    def set_capacity(self, capacity: np.ndarray) -> None:
        """Change the capacity rows' upper bounds in the live LP."""
        lp = self.lp
        hm = lp.live.highs_model
        rows = np.array([hm.row(lp.model.c_capacity[k]) for k in range(len(capacity))])
        h = hm.highs
        h.changeRowsBounds(
            len(rows), rows.astype(np.int32), np.full(len(rows), -np.inf), capacity.astype(float)
        )
        self.capacity = capacity.astype(float)

    def allocate(self, active: np.ndarray, remaining: np.ndarray, now: float) -> _Allocation:
        # a job that fits on no type of the cluster as it is now waits outside the LP
        # (else its fairness row would hold everyone's level down)
        active = active & (self.fits & (self.scale[:, None] <= self.capacity[None, :])).any(axis=1)
        self.lp.set_active(active)
        sol = self.lp.solve()
        if not sol.status.has_solution:
            raise SolveFailed(f"the max-min LP ended {sol.status.value}: {sol.termination}")
        why = "" if sol.status == Status.OPTIMAL else f"{sol.status.value}: {sol.termination}"
        return _Allocation(sol.X, sol.z, nonoptimal=why)


class _GavelMakespan(_Policy):
    """Gavel's makespan policy: bisect the finish time ``T`` between 100 s and 10**6 s
    (x10 while infeasible) to within 5 %, then any feasible allocation at that ``T``
    (an interior point of the feasibility LP, as ECOS returns)."""

    def __init__(self, arr: Any, thr: np.ndarray, options: SolveOptions):
        self.arr = arr
        self.thr = thr
        self.options = options

    def allocate(self, active: np.ndarray, remaining: np.ndarray, now: float) -> _Allocation:
        from ...pipeline import Session
        from . import KIND
        from . import maxmin as M

        arr = self.arr
        idx = np.nonzero(active)[0]
        thr = self.thr[idx]
        scale = arr.scale[idx]
        steps = np.maximum(remaining[idx], 1e-9)
        fits = scale[:, None] <= arr.workers[None, :]
        ok = (thr > 0) & fits
        # Gavel's LP has a column for every (job, type), useful or not
        job, typ = np.nonzero(fits)
        best = np.where(ok, thr, 0.0).max(axis=1)
        t_ref = float((steps / best).max())
        block = M.TimeColumns("alloc", "PAIRS", job, typ, thr[job, typ], scale[job])
        built = M.build(
            M.MaxMinLP(
                name="gavel_makespan",
                row_set="JOBS",
                num_rows=len(idx),
                types=arr.types,
                columns=(block,),
                capacity=arr.workers.astype(float),
                row_scale=t_ref / steps,
                scale=t_ref,
                scale_name="t_ref",
                value_rows="c_progress",
            )
        )
        session = Session(KIND, self.options)
        live = session.open(built)
        view = live.solve(self.options, "ipm")
        if not view.raw.status.has_solution:
            raise SolveFailed(f"the makespan LP ended {view.raw.status.value}")
        z = view.value(built.model.z)
        t_star = t_ref / z if z > 0 else math.inf
        t_gavel = gavel_bisection(t_star)
        # the feasibility LP at Gavel's T: z fixed at t_ref / T, no objective
        hm = live.highs_model
        zlev = t_ref / t_gavel
        hm.set_col_bounds(built.model.z, zlev, zlev)
        hm.set_objective_coefficients(
            np.array([live.compiled.column(built.model.z)]), np.array([0.0])
        )
        # and, as Gavel's, no upper bound 1 on a time share (the time rows imply it)
        cols = live.compiled.columns_of(built.model.alloc, range(len(job))).astype(np.int32)
        hm.highs.changeColsBounds(len(cols), cols, np.zeros(len(cols)), np.full(len(cols), np.inf))
        raw = live.solve(_interior(self.options), "ipm").raw
        if not raw.status.has_solution or raw.x is None:  # numerically at the edge: the optimum
            raw = view.raw
        assert raw.x is not None
        X = np.zeros((arr.num_jobs, len(arr.types)))
        X[idx[job], typ] = np.clip(raw.x[cols], 0.0, 1.0)
        X[X < 1e-10] = 0.0
        return _Allocation(X, t_gavel)


def gavel_bisection(t_star: float) -> float:
    """The finish time Gavel's makespan policy settles on when the optimum is
    ``t_star``: bisection from [100 s, 10**6 s] until the bracket is within 5 %, the
    bracket moved up tenfold while nothing was feasible."""
    hi, lo, last_hi = 1e6, 100.0, 1e6
    found = None
    while found is None:
        while 1.05 * lo < hi:
            mid = (lo + hi) / 2.0
            if mid >= t_star:
                found, hi = mid, mid
            else:
                lo = mid
        hi, lo, last_hi = last_hi * 10.0, last_hi, last_hi * 10.0
        if last_hi > 1e30:
            return t_star
    return found


class _KindPolicy(_Policy):
    """Any ``gpu_cluster`` objective through the kind's own ``solve``."""

    def __init__(
        self,
        inst: Any,
        policy: str,
        agnostic: bool,
        options: SolveOptions,
        throughputs: np.ndarray | None = None,
    ):
        from . import KIND

        self.kind = KIND
        self.inst = inst
        self.policy = KIND.resolve_objective(inst, policy)
        self.agnostic = agnostic
        self.options = options
        self.data = inst.to_dict()
        self.arrival = np.array([j.arrival_s or 0.0 for j in inst.jobs])
        self.throughputs = throughputs
        self.capacity: np.ndarray | None = None

    def set_capacity(self, capacity: np.ndarray) -> None:
        self.capacity = np.asarray(capacity, dtype=int)

    def allocate(self, active: np.ndarray, remaining: np.ndarray, now: float) -> _Allocation:
        from .data import GpuClusterInstance

        arr = self.inst.arrays
        data = self.data
        if self.capacity is not None:  # jobs that fit nowhere now wait outside the solve
            cap = self.capacity
            data = {**data, "workers": {t: int(c) for t, c in zip(arr.types, cap, strict=True)}}
            active = active & ((arr.thr > 0) & (arr.scale[:, None] <= cap[None, :])).any(axis=1)
        idx = np.nonzero(active)[0]
        if len(idx) == 0:
            return _Allocation(np.zeros((arr.num_jobs, len(arr.types))), 0.0)
        jobs = []
        for i in idx:
            job = dict(self.data["jobs"][i])
            job["steps_remaining"] = float(max(remaining[i], 1e-9))
            job["time_elapsed_s"] = float(max(now - self.arrival[i], 0.0))
            job.pop("arrival_s", None)
            if self.throughputs is not None:
                job["throughput"] = {
                    t: float(v) for t, v in zip(arr.types, self.throughputs[i], strict=True)
                }
            if "deadline_s" in job:  # relative to now; an SLO already missed is dropped
                left = self.arrival[i] + job["deadline_s"] - now
                if left > 0:
                    job["deadline_s"] = float(left)
                else:
                    job.pop("deadline_s")
            jobs.append(job)
        sub = GpuClusterInstance.from_dict({**data, "jobs": jobs})
        kw = {"agnostic": True} if self.agnostic else {}
        res = self.kind.solve(sub, self.policy, self.options, **kw)
        if not res.status.has_solution:
            raise SolveFailed(f"policy {self.policy} ended {res.status.value}: {res.termination}")
        X = np.zeros((arr.num_jobs, len(arr.types)))
        al = res.tables["allocation"]
        pos = {j: i for i, j in enumerate(arr.job_ids)}
        tpos = {t: k for k, t in enumerate(arr.types)}
        pairs: dict[tuple[int, int], dict[int, float]] = {}
        if "other_job" in al.columns:
            other = al["other_job"].fillna("").astype(str)
            for j, o, t, f in zip(
                al["job"].astype(str)[other != ""], other[other != ""],
                al["worker_type"][other != ""], al["fraction"][other != ""], strict=True,
            ):  # fmt: skip
                a, b = pos[j], pos[o]
                if a < b and f > 1e-9:
                    row = pairs.setdefault((a, b), {})
                    row[tpos[t]] = row.get(tpos[t], 0.0) + float(f)
            al = al[other == ""]
        np.add.at(
            X,
            (al["job"].astype(str).map(pos).to_numpy(), al["worker_type"].map(tpos).to_numpy()),
            al["fraction"].to_numpy(dtype=float),
        )
        why = "" if res.status == Status.OPTIMAL else f"{res.status.value}: {res.termination}"
        return _Allocation(np.clip(X, 0.0, 1.0), float(res.objective_value or 0.0), pairs, why)


def _progress_mode(progress: str) -> str:
    return "rounds" if progress == "auto" else progress


def gavel_throughputs(arr: Any, policy: str, agnostic: bool) -> np.ndarray:
    """The throughputs Gavel's policies allocate with: the measured ones; agnostic:
    1.0 on every type (max-min fairness and others) or, for makespan, the V100
    throughput on every type (the mean over usable types when there is no ``v100``)."""
    if not agnostic:
        return arr.thr
    if policy == "makespan":
        if "v100" in arr.types:
            v = arr.thr[:, arr.types.index("v100")]
            return np.repeat(v[:, None], len(arr.types), axis=1)
        from .formulations import agnostic_throughputs

        return agnostic_throughputs(arr)
    return np.ones_like(arr.thr)


def _make_policy(
    inst: Any,
    policy: str,
    agnostic: bool,
    options: SolveOptions,
    mechanism: str,
    persistent: bool,
) -> _Policy:
    from .formulations import agnostic_throughputs

    arr = inst.arrays
    spaced = bool(inst.colocation)
    if mechanism == "gavel":
        thr = gavel_throughputs(arr, policy, agnostic)
        if policy == "max_min_fairness" and not spaced:
            return _LiveMaxMin(arr, thr, _interior(options))
        if policy == "makespan" and not spaced:
            return _GavelMakespan(arr, thr, options)
        return _KindPolicy(inst, policy, agnostic, options)
    if policy == "max_min_fairness" and persistent and not spaced:
        # interior point: the allocation in the middle of the optimal face, not a vertex
        # that gives every job's surplus to a few (measured: lower JCTs, same level)
        thr = agnostic_throughputs(arr) if agnostic else arr.thr
        return _LiveMaxMin(arr, thr, _interior(options))
    return _KindPolicy(inst, policy, agnostic, options)


# ----------------------------------------------------------------------- the replay
@dataclass
class _Run:
    """What every replay loop reads and writes."""

    inst: Any
    policy: _Policy
    round_s: float
    max_rounds: int
    arrival: np.ndarray
    remaining: np.ndarray
    finish: np.ndarray
    on_progress: ProgressCallback | None
    record_leases: bool
    failed: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    latencies: list[float] = field(default_factory=list)
    levels: list[float] = field(default_factory=list)
    busy_gpu_s: float = 0.0
    rounds: int = 0
    timeline: list[tuple[Any, ...]] = field(default_factory=list)
    leases: list[tuple[Any, ...]] = field(default_factory=list)
    loan: LoanCurve | None = None
    on_solve_failure: str = "abort"
    failed_solves: int = 0
    nonoptimal_solves: int = 0
    last: _Allocation | None = None

    def solve(self, active: np.ndarray, now: float) -> _Allocation:
        t0 = time.perf_counter()
        try:
            out = self.policy.allocate(active, self.remaining, now)
        except SolveFailed as exc:
            _stop_if_interrupted(now)
            if self.on_solve_failure == "abort":
                raise SolveFailed(
                    f"t = {now:.0f} s, {int(active.sum())} active jobs: {exc} (the replay "
                    "stops; on_solve_failure='keep_previous' keeps the last allocation "
                    "instead)"
                ) from None
            self.failed_solves += 1
            out = self.previous(active)
            log.warning(
                "t = %.0f s, %d active jobs: %s; keeping the previous allocation "
                "(on_solve_failure='keep_previous', %d failed solve(s) so far)",
                now,
                int(active.sum()),
                exc,
                self.failed_solves,
            )
        _stop_if_interrupted(now)
        if out.nonoptimal:
            # a feasible allocation the policy could not prove optimal (a limit, a
            # level LP stopped early) is used, but never silently
            self.nonoptimal_solves += 1
            log.warning(
                "t = %.0f s, %d active jobs: the policy's solve is not proven optimal "
                "(%s); using its feasible allocation (%d such solve(s) so far)",
                now,
                int(active.sum()),
                out.nonoptimal,
                self.nonoptimal_solves,
            )
        self.last = out
        self.latencies.append(time.perf_counter() - t0)
        self.levels.append(out.level)
        log.debug("t=%.0f s: re-solved for %d jobs (%.1f ms)", now, int(active.sum()),
                  self.latencies[-1] * 1e3)  # fmt: skip
        return out

    def previous(self, active: np.ndarray) -> _Allocation:
        """The last allocation restricted to ``active`` (jobs that arrived since get no
        share; none before the first solve)."""
        n, k = len(self.remaining), len(self.inst.arrays.types)
        if self.last is None:
            return _Allocation(np.zeros((n, k)), 0.0)
        X = np.where(active[:, None], self.last.X, 0.0)
        pairs = {pq: row for pq, row in self.last.pairs.items() if active[pq[0]] and active[pq[1]]}
        return _Allocation(X, self.last.level, pairs)

    def progress(self, now: float) -> None:
        if self.on_progress is not None:
            done = int(np.isfinite(self.finish).sum() + self.failed.sum())
            self.on_progress(now, done, len(self.finish))


def _alloc_map(arr: Any, a: _Allocation, active: np.ndarray) -> dict[Unit, dict[str, float]]:
    """Every active job's row (zeros included: Gavel's "in the allocation") and pairs."""
    out: dict[Unit, dict[str, float]] = {}
    for i in np.nonzero(active)[0]:
        out[arr.job_ids[i]] = {arr.types[k]: float(a.X[i, k]) for k in range(len(arr.types))}
    for (p, q), row in a.pairs.items():
        if active[p] and active[q]:
            out[(arr.job_ids[p], arr.job_ids[q])] = {arr.types[t]: f for t, f in row.items()}
    return out


def _type_order(arr: Any) -> list[str]:
    """Gavel's order for its type names; other types fastest first (mean throughput)."""
    known = [t for t in GAVEL_TYPE_ORDER if t in arr.types]
    rest = [t for t in arr.types if t not in known]
    mean = {t: float(arr.thr[:, arr.types.index(t)].mean()) for t in rest}
    return [*known, *sorted(rest, key=lambda t: -mean[t])]


def _replay_gavel(
    run: _Run,
    workers: Mapping[str, int],
    gpus_per_server: Mapping[str, int] | None,
    reset_interval_s: float,
    agnostic: bool,
    seed: int,
) -> None:
    """Gavel's simulator loop (``Scheduler.simulate`` with a trace)."""
    arr = run.inst.arrays
    n = arr.num_jobs
    round_s = run.round_s
    sched = RoundScheduler(
        workers,
        round_s=round_s,
        gpus_per_server=gpus_per_server,
        mechanism="gavel",
        reset_interval_s=reset_interval_s,
        type_order=_type_order(arr),
        shuffle_types=agnostic,
        seed=seed,
    )
    tpos = {t: k for k, t in enumerate(arr.types)}
    order = np.argsort(run.arrival, kind="stable")
    active = np.zeros(n, dtype=bool)
    fails = np.zeros(n, dtype=int)
    done_steps = np.zeros(n)
    steps = arr.steps.astype(float)
    gpus_total = float(arr.workers.sum())
    now = float(run.arrival[order[0]])
    round_start, round_end = 0.0, None  # Gavel's bookkeeping (starts at 0)
    leases: list[tuple[int, int, float, float, float]] = []  # job, type, steps, start, end
    qi = 0
    left = n
    idle_spins = 0
    row: tuple[Any, ...] | None = None  # this round's timeline entry, until it ends
    while left > 0 and run.rounds < run.max_rounds:
        if qi >= n and not leases:
            sched.force_reset()  # trace exhausted and nothing running
        if leases:
            end = max(lease[4] for lease in leases)
            if round_end is not None:
                round_start = round_end
            round_end = end
            now = end
        elif qi < n:
            now = float(run.arrival[order[qi]])
        # the round's leases end
        busy = 0.0
        for i, k, st, start, end in leases:
            sf = int(arr.scale[i])
            busy += sf * (end - start)
            if run.record_leases:
                run.leases.append((arr.job_ids[i], "", arr.types[k], sf, start, end))
            if sf > 1 and st // sf <= 0:  # a worker got no step: Gavel's failed micro-task
                fails[i] += 1
                sched.pending = True
                if fails[i] >= MAX_FAILED_ATTEMPTS:
                    run.failed[i] = True
                    active[i] = False
                    sched.remove_job(arr.job_ids[i])
                    left -= 1
                continue
            fails[i] = 0
            sched.record(arr.job_ids[i], arr.types[k], end - round_start)
            done_steps[i] += st
            run.remaining[i] = steps[i] - done_steps[i]
            if run.remaining[i] <= 0:
                run.finish[i] = end
                active[i] = False
                sched.remove_job(arr.job_ids[i])
                left -= 1
        if leases and row is not None:
            run.busy_gpu_s += busy
            span = round_end - row[1] if round_end is not None else 0.0
            util = busy / (gpus_total * span) if span > 0 else 0.0
            run.timeline.append((row[0], row[1], round_end, row[2], row[3], row[4], util, row[5]))
            run.progress(now)
        leases = []
        if left == 0:
            break
        # arrivals join
        while qi < n and run.arrival[order[qi]] <= now:
            i = int(order[qi])
            sched.add_job(arr.job_ids[i], int(arr.scale[i]), _thr_row(arr, i), now=now)
            active[i] = True
            qi += 1
        # the allocation, at most every reset interval
        solved = False
        if sched.due(now):
            if active.any():
                a = run.solve(active.copy(), now)
                sched.set_allocation(_alloc_map(arr, a, active), now)
                solved = True
            else:  # Gavel's policies allocate nothing to no job (and reset the windows)
                sched.set_allocation({}, now)
        plan = sched.plan(now)
        for unit, (tname, _) in plan.placements.items():
            i = int(str(unit))
            k = tpos[tname]
            rate = float(arr.thr[i, k])
            st = min(float(math.floor(rate * round_s)), float(run.remaining[i]))
            leases.append((i, k, st, now, now + st / rate))
        if leases:
            busy_now = int(sum(arr.scale[lease[0]] for lease in leases))
            row = (run.rounds, now, int(active.sum()), len(leases), busy_now, solved)
            run.rounds += 1
            idle_spins = 0
        else:
            idle_spins += 1
            if qi >= n and idle_spins > 2:
                log.warning("nothing can run any more: stopping at %g s", now)
                break


def _thr_row(arr: Any, i: int) -> dict[str, float]:
    return {t: float(arr.thr[i, k]) for k, t in enumerate(arr.types)}


@dataclass
class _Lease:
    unit: Unit
    members: tuple[int, ...]
    k: int
    rates: tuple[float, ...]
    start: float
    gpus: int
    seq: int


def _pair_rates(inst: Any) -> dict[tuple[str, str, str, int], tuple[float, float]]:
    """``(worker_type, job_type_a, job_type_b, scale_factor) -> (rate a, rate b)``."""
    out: dict[tuple[str, str, str, int], tuple[float, float]] = {}
    for e in inst.colocation or ():
        a, b = e.job_types
        out[(e.worker_type, a, b, e.scale_factor)] = (e.throughput[0], e.throughput[1])
        out[(e.worker_type, b, a, e.scale_factor)] = (e.throughput[1], e.throughput[0])
    return out


def _replay_hetopt(
    run: _Run,
    workers: Mapping[str, int],
    gpus_per_server: Mapping[str, int] | None,
) -> None:
    """hetopt's work-conserving loop (see the module docstring)."""
    arr = run.inst.arrays
    n = arr.num_jobs
    round_s = run.round_s
    owned = {t: int(workers.get(t, 0)) for t in arr.types}
    loan = run.loan

    def cluster_at(t: float) -> dict[str, int]:
        if loan is None:
            return owned
        lent = loan.at(t)
        return {ty: owned[ty] + lent.get(ty, 0) for ty in arr.types}

    cap = cluster_at(float(run.arrival.min()))
    if loan is not None:
        run.policy.set_capacity(np.array([cap[ty] for ty in arr.types]))
    sched = RoundScheduler(
        cap,
        round_s=round_s,
        gpus_per_server=gpus_per_server,
        mechanism="hetopt",
        type_order=_type_order(arr),
    )
    pair_rate = _pair_rates(run.inst)
    jtype = [j.job_type or "" for j in run.inst.jobs]
    tpos = {t: k for k, t in enumerate(arr.types)}
    pos = {j: i for i, j in enumerate(arr.job_ids)}
    order = np.argsort(run.arrival, kind="stable")
    active = np.zeros(n, dtype=bool)
    gpus_total = float(sum(cap.values()))
    running: dict[Unit, _Lease] = {}
    heap: list[tuple[float, int, Unit]] = []
    seq = 0
    qi = 0
    left = n

    def rates_of(unit: Unit, k: int) -> tuple[tuple[int, ...], tuple[float, ...]]:
        if isinstance(unit, tuple):
            a, b = pos[unit[0]], pos[unit[1]]
            key = (arr.types[k], jtype[a], jtype[b], int(arr.scale[a]))
            ra, rb = pair_rate.get(key, (0.0, 0.0))
            return (a, b), (ra, rb)
        i = pos[unit]
        return (i,), (float(arr.thr[i, k]),)

    def start(plan_placements: Mapping[Unit, tuple[str, Any]], now: float, end: float) -> None:
        nonlocal seq
        for unit, (tname, gpus) in plan_placements.items():
            k = tpos[tname]
            members, rates = rates_of(unit, k)
            seq += 1
            lease = _Lease(unit, members, k, rates, now, len(gpus), seq)
            running[unit] = lease
            t_fin = min(
                (now + run.remaining[i] / r for i, r in zip(members, rates, strict=True) if r > 0),
                default=math.inf,
            )
            if t_fin < end:
                heapq.heappush(heap, (t_fin, seq, unit))

    def stop(lease: _Lease, now: float) -> float:
        """End ``lease`` at ``now``: progress, received time; returns GPU-seconds."""
        dt = now - lease.start
        if dt > 0:
            sched.record(lease.unit, arr.types[lease.k], dt)
        for i, r in zip(lease.members, lease.rates, strict=True):
            run.remaining[i] -= r * dt
            if run.remaining[i] <= 1e-9 * max(1.0, float(arr.steps[i])):
                run.remaining[i] = 0.0
        if run.record_leases and dt > 0:
            for i in lease.members:
                other = [arr.job_ids[o] for o in lease.members if o != i]
                run.leases.append(
                    (arr.job_ids[i], other[0] if other else "", arr.types[lease.k], lease.gpus,
                     lease.start, now)
                )  # fmt: skip
        del running[lease.unit]
        sched.release(lease.unit)
        return lease.gpus * dt

    def finished(lease_members: Sequence[int], now: float) -> None:
        nonlocal left
        for i in lease_members:
            if run.remaining[i] <= 0 and not np.isfinite(run.finish[i]):
                run.finish[i] = now
                active[i] = False
                sched.remove_job(arr.job_ids[i])
                left -= 1

    t = float(run.arrival[order[0]])
    while left > 0 and run.rounds < run.max_rounds:
        while qi < n and run.arrival[order[qi]] <= t:
            i = int(order[qi])
            sched.add_job(arr.job_ids[i], int(arr.scale[i]), _thr_row(arr, i), now=t)
            active[i] = True
            qi += 1
        if not active.any():
            if qi >= n:
                break
            t = float(run.arrival[order[qi]])  # an empty cluster: jump to the next arrival
            continue
        if loan is not None:
            now_cap = cluster_at(t)
            if now_cap != cap:  # loaned GPUs lent or taken back: re-place and re-solve
                cap = now_cap
                sched.update_workers(cap)
                run.policy.set_capacity(np.array([cap[ty] for ty in arr.types]))
                gpus_total = float(sum(cap.values()))
        solved = False
        if sched.due(t):
            a = run.solve(active.copy(), t)
            sched.set_allocation(_alloc_map(arr, a, active), t)
            solved = True
        end = t + round_s
        heap.clear()
        plan = sched.plan(t)
        start(plan.placements, t, end)
        n_active, n_running = int(active.sum()), len(running)
        busy_now = sum(lease.gpus for lease in running.values())
        busy = 0.0
        while True:
            tc = heap[0][0] if heap else math.inf
            ta = float(run.arrival[order[qi]]) if qi < n else math.inf
            e = min(tc, ta)
            if e >= end:
                break
            changed = False
            while heap and heap[0][0] <= e:
                _, s, unit = heapq.heappop(heap)
                lease = running.get(unit)
                if lease is None or lease.seq != s:
                    continue
                busy += stop(lease, e)
                finished(lease.members, e)
                changed = True
            while qi < n and run.arrival[order[qi]] <= e:
                i = int(order[qi])
                sched.add_job(arr.job_ids[i], int(arr.scale[i]), _thr_row(arr, i), now=e)
                active[i] = True
                qi += 1
                changed = True
            if changed and left > 0:
                start(sched.backfill(e).placements, e, end)
        for lease in list(running.values()):
            members = lease.members
            t_fin = [
                lease.start + run.remaining[i] / r if r > 0 else math.inf
                for i, r in zip(members, lease.rates, strict=True)
            ]
            busy += stop(lease, end)
            for i, tf in zip(members, t_fin, strict=True):
                if run.remaining[i] <= 0 and not np.isfinite(run.finish[i]):
                    run.finish[i] = min(tf, end)
                    active[i] = False
                    sched.remove_job(arr.job_ids[i])
                    left -= 1
        run.busy_gpu_s += busy
        run.timeline.append(
            (run.rounds, t, end, n_active, n_running, busy_now, busy / (gpus_total * round_s),
             solved)
        )  # fmt: skip
        run.rounds += 1
        run.progress(end)
        t = end


def _replay_fluid(run: _Run) -> None:
    """Every active job runs at its allocated effective throughput."""
    arr = run.inst.arrays
    n = arr.num_jobs
    round_s = run.round_s
    done = np.zeros(n, dtype=bool)
    t = float(run.arrival.min())
    last_active: np.ndarray | None = None
    X = np.zeros((n, len(arr.types)))
    gpus_total = float(arr.workers.sum())
    while not done.all() and run.rounds < run.max_rounds:
        active = (run.arrival <= t + 1e-9) & ~done
        if not active.any():
            nxt = run.arrival[~done].min()
            t = t + math.ceil((nxt - t) / round_s) * round_s  # next boundary after arrival
            continue
        solved = False
        if last_active is None or (active != last_active).any():
            X = run.solve(active, t).X
            last_active = active.copy()
            solved = True
        rate = (arr.thr * X).sum(axis=1)
        share = X.sum(axis=1)
        run_ = active & (rate > 0)
        if not run_.any() and not (run.arrival > t + 1e-9).any():
            log.warning("the policy gives no active job any GPU time: stopping at %g s", t)
            break  # nothing can change any more: the rest stays unfinished
        dt = np.full(n, round_s)
        with np.errstate(divide="ignore", invalid="ignore"):
            need = np.where(run_, run.remaining / np.where(run_, rate, 1.0), np.inf)
        ends = run_ & (need <= round_s)
        dt[ends] = need[ends]
        busy = float((arr.scale[run_] * share[run_] * dt[run_]).sum())
        run.busy_gpu_s += busy
        run.remaining[run_] -= rate[run_] * dt[run_]
        run.finish[ends] = t + need[ends]
        run.remaining[ends] = 0.0
        done |= ends
        run.timeline.append(
            (run.rounds, t, t + round_s, int(active.sum()), int(run_.sum()),
             float((arr.scale[run_] * share[run_]).sum()), busy / (gpus_total * round_s), solved)
        )  # fmt: skip
        t += round_s
        run.rounds += 1
        run.progress(t)


def _stop_if_interrupted(now: float) -> None:
    """Ctrl-C stopped a HiGHS run of the replay (:func:`hetopt.highs.interrupted`):
    the replay stops with ``KeyboardInterrupt``, as a Ctrl-C anywhere else in it does.
    (Its policy solves are one solve, :func:`hetopt.pipeline.one_solve`: the runs after
    the Ctrl-C would not start, and every later round would fail or, with
    ``on_solve_failure='keep_previous'``, keep a stale allocation to the end.)"""
    from ...highs import interrupted

    if interrupted():
        raise KeyboardInterrupt(f"interrupted at t = {now:.0f} s of the replay")


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
    *,
    mechanism: str = "hetopt",
    reset_interval_s: float = RESET_INTERVAL_S,
    gpus_per_server: Mapping[str, int] | None = None,
    space_sharing: bool = False,
    seed: int = 0,
    record_leases: bool = False,
    on_progress: ProgressCallback | None = None,
    loanable: LoanCurve | None = None,
    on_solve_failure: str = "abort",
) -> SimResult:
    """Replay a trace under a ``gpu_cluster`` policy and measure job completion times.

    Parameters
    ----------
    records
        Trace jobs (from :func:`load_trace`, :func:`generate_trace` or :func:`gavel_trace`).
    workers
        GPUs per type, e.g. ``{"k80": 24, "p100": 16, "v100": 8}``.
    policy
        A ``gpu_cluster`` objective (``hetopt kinds``), default ``max_min_fairness``.
    agnostic
        Allocate as if every GPU type were equal (progress uses the true throughputs).
    round_s
        Round length in seconds (Gavel: 360).
    options
        Solve options (default ``threads=1``).
    table
        Throughput table (default: Gavel's simulation table shipped with hetopt).
    persistent
        ``hetopt`` mechanism: keep max-min fairness in one live LP (else rebuild it at
        every re-solve).
    max_rounds
        Stop after this many rounds (unfinished jobs get NaN times).
    progress
        ``"rounds"`` (``"auto"``): the round mechanism places jobs on GPUs and a placed job
        runs at its full throughput; ``"fluid"``: every active job runs at its allocated
        effective throughput.
    mechanism
        ``"hetopt"`` (work-conserving) or ``"gavel"`` (Gavel's simulator, rule by rule);
        see the module docstring.
    reset_interval_s
        ``gavel``: least time between two allocation recomputes (Gavel: 1,920 s).
    gpus_per_server
        GPUs per server of each type, e.g. ``{"v100": 4, "p100": 4, "k80": 8}`` (default:
        one server per type); jobs are placed on servers.
    space_sharing
        Let the policy pair jobs on the same GPUs (the table's co-location throughputs;
        ``max_min_fairness`` and ``makespan``; ``hetopt`` mechanism).
    seed
        ``gavel``: the seed of Gavel's scheduler (its worker-type shuffler).
    record_leases
        Keep every stretch of run time in ``SimResult.leases``.
    on_progress
        Called after every round with ``(simulated s, jobs finished, jobs)``.
    loanable
        GPUs the cluster may borrow over time beside ``workers`` (Lyra's idle inference
        GPUs, e.g. :meth:`LoanCurve.diurnal`; ``hetopt`` mechanism, rounds). Changes take
        effect at round boundaries: the policy is re-solved for the new cluster and jobs on
        GPUs taken back are preempted. ``summary["loaned_gpu_s"]`` is the GPU-time lent and
        ``utilization`` counts owned and lent GPUs.
    on_solve_failure
        What a failed policy solve (no allocation: a numerical error, a time limit without
        a solution) does: ``"abort"`` (default) stops the replay with
        :class:`SolveFailed`; ``"keep_previous"`` keeps the last allocation for that
        round (restricted to the active jobs; jobs that arrived since get none until the
        next solve), logs a warning and counts the round in ``summary["failed_solves"]``.

    Returns
    -------
    SimResult
        Per-job finish times and JCTs; mean/median/p95 JCT, makespan, utilisation (also
        per round in ``timeline``), solves and their latency against the round length.
    """
    if not round_s > 0 or not math.isfinite(round_s):
        raise UsageError(f"round_s must be > 0, got {round_s}")
    if progress not in ("auto", "rounds", "fluid"):
        raise UsageError(f"progress must be 'auto', 'rounds' or 'fluid', got {progress!r}")
    if mechanism not in MECHANISMS:
        raise UsageError(f"mechanism must be one of {', '.join(MECHANISMS)}, got {mechanism!r}")
    if not reset_interval_s >= 0 or not math.isfinite(reset_interval_s):
        raise UsageError(f"reset_interval_s must be >= 0, got {reset_interval_s}")
    if on_solve_failure not in ON_SOLVE_FAILURE:
        raise UsageError(
            f"on_solve_failure must be one of {', '.join(ON_SOLVE_FAILURE)}, "
            f"got {on_solve_failure!r}"
        )
    mode = _progress_mode(progress)
    if mode == "fluid" and mechanism == "gavel":
        raise UsageError("the gavel mechanism places jobs in rounds: drop progress='fluid'")
    if space_sharing and mechanism == "gavel":
        raise UsageError("space sharing is replayed by the hetopt mechanism only")
    if loanable is not None and (mechanism == "gavel" or mode == "fluid"):
        raise UsageError("a loan curve is replayed by the hetopt mechanism in rounds only")
    options = options or SolveOptions(threads=1)
    cluster = {str(t): int(c) for t, c in workers.items()}
    if loanable is not None:  # the instance spans every GPU that may ever be there
        for t, g in loanable.peak().items():
            cluster[t] = cluster.get(t, 0) + g
    inst = trace_instance(records, cluster, table, colocation=space_sharing)
    arr = inst.arrays
    n = arr.num_jobs
    pol = _make_policy(inst, policy, agnostic, options, mechanism, persistent)
    run = _Run(
        inst=inst,
        policy=pol,
        round_s=float(round_s),
        max_rounds=max_rounds,
        arrival=np.array([float(r["arrival_s"]) for r in records]),
        remaining=arr.steps.astype(float).copy(),
        finish=np.full(n, np.nan),
        on_progress=on_progress,
        record_leases=record_leases,
        failed=np.zeros(n, dtype=bool),
        loan=loanable,
        on_solve_failure=on_solve_failure,
    )
    from ...pipeline import one_solve

    w = {t: int(c) for t, c in workers.items()}
    with one_solve():  # (Ctrl-C: see _stop_if_interrupted)
        if mode == "fluid":
            _replay_fluid(run)
        elif mechanism == "gavel":
            _replay_gavel(run, w, gpus_per_server, reset_interval_s, agnostic, seed)
        else:
            _replay_hetopt(run, w, gpus_per_server)
    return _result(run, policy, agnostic, mode, mechanism, reset_interval_s, space_sharing)


def _result(
    run: _Run,
    policy: str,
    agnostic: bool,
    mode: str,
    mechanism: str,
    reset_interval_s: float,
    space_sharing: bool,
) -> SimResult:
    inst, arr = run.inst, run.inst.arrays
    arrival, finish = run.arrival, run.finish
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
    loaned = 0.0
    if run.loan is not None and ok.any():
        loaned = run.loan.gpu_seconds(start, start + makespan)
    owned = float(arr.workers.sum()) - (sum(run.loan.peak().values()) if run.loan else 0.0)
    lat = np.array(run.latencies) if run.latencies else np.array([math.nan])
    round_s = run.round_s
    summary = {
        "mean_jct_s": float(jct[ok].mean()) if ok.any() else math.nan,
        "median_jct_s": float(np.median(jct[ok])) if ok.any() else math.nan,
        "p95_jct_s": float(np.percentile(jct[ok], 95)) if ok.any() else math.nan,
        "makespan_s": makespan,
        "utilization": run.busy_gpu_s / (owned * makespan + loaned)
        if ok.any() and makespan > 0
        else math.nan,
        "num_jobs": arr.num_jobs,
        "completed_jobs": int(ok.sum()),
        "rounds": run.rounds,
        "solves": len(run.latencies),
        "solve_latency_p50_s": float(np.percentile(lat, 50)),
        "solve_latency_p95_s": float(np.percentile(lat, 95)),
        "round_s": float(round_s),
        "solve_latency_p95_over_round": float(np.percentile(lat, 95)) / round_s,
        "policy": policy,
        "agnostic": bool(agnostic),
        "progress_model": mode,
        "mechanism": mechanism if mode == "rounds" else "fluid",
        "reset_interval_s": float(reset_interval_s) if mechanism == "gavel" else 0.0,
        "solve_latency_max_s": float(np.max(lat)),
        "solve_latency_max_over_round": float(np.max(lat)) / round_s,
        "failed_jobs": int(run.failed.sum()),
        "space_sharing": bool(space_sharing),
        "loaned_gpu_s": loaned,
        "failed_solves": run.failed_solves,
        "nonoptimal_solves": run.nonoptimal_solves,
    }
    timeline = pd.DataFrame(run.timeline, columns=list(TIMELINE_COLUMNS))
    leases = None
    if run.record_leases:
        leases = pd.DataFrame(
            run.leases, columns=["job", "other_job", "worker_type", "gpus", "start_s", "end_s"]
        )
    return SimResult(jobs, summary, run.latencies, run.levels, timeline, leases)


def idle_while_waiting(
    sim: SimResult,
    records: Sequence[Mapping[str, Any]],
    workers: Mapping[str, int],
    table: Any = None,
    loanable: LoanCurve | None = None,
) -> pd.DataFrame:
    """Every moment a GPU type had enough idle GPUs for a waiting job that can run on it.

    Reads only the trace, the cluster (with ``loanable``: the GPUs lent at the start of
    the round, from ``sim.timeline``) and ``sim.leases`` (``record_leases=True``), not
    the mechanism's state: an independent check of work conservation. Returns one row per
    violation: ``time_s, job, worker_type, idle_gpus, scale_factor`` (``idle_gpus`` < 0:
    more GPUs in use than the cluster had).
    """
    if sim.leases is None:
        raise UsageError("idle_while_waiting needs a replay with record_leases=True")
    cluster = {str(t): int(c) for t, c in workers.items()}
    for t, g in (loanable.peak() if loanable is not None else {}).items():
        cluster[t] = cluster.get(t, 0) + g
    arr = trace_instance(records, cluster, table).arrays
    owned = np.array([float(workers.get(t, 0)) for t in arr.types])
    round_starts = np.sort(sim.timeline["start_s"].to_numpy(dtype=float))
    le = sim.leases
    job = le["job"].astype(str).to_numpy()
    other = le["other_job"].astype(str).to_numpy()
    counts = (other == "") | (job < other)  # a pair's GPUs once
    typ = le["worker_type"].to_numpy()
    gpus = le["gpus"].to_numpy(dtype=float)
    starts, ends = le["start_s"].to_numpy(dtype=float), le["end_s"].to_numpy(dtype=float)
    arrival = sim.jobs["arrival_s"].to_numpy(dtype=float)
    finish = sim.jobs["finish_s"].to_numpy(dtype=float)
    finish = np.where(np.isnan(finish), np.inf, finish)
    done = finish[np.isfinite(finish)]
    times = np.unique(np.concatenate([starts, ends, arrival, done]))
    last = float(done.max()) if len(done) else 0.0
    rows = []
    for tau in times[times < last]:
        on = (starts <= tau) & (ends > tau)
        busy = {t: float(gpus[on & counts & (typ == t)].sum()) for t in arr.types}
        cap = owned
        if loanable is not None and len(round_starts):
            r0 = round_starts[max(int(np.searchsorted(round_starts, tau, side="right")) - 1, 0)]
            lent = loanable.at(float(r0))
            cap = owned + np.array([float(lent.get(t, 0)) for t in arr.types])
        for k, t in enumerate(arr.types):
            if busy[t] > cap[k] + 1e-9:
                rows.append((float(tau), "", t, round(float(cap[k]) - busy[t]), 0))
        running = set(job[on])
        for i in np.nonzero((arrival <= tau) & (finish > tau))[0]:
            if arr.job_ids[i] in running:
                continue
            for k, t in enumerate(arr.types):
                idle = round(float(cap[k]) - busy[t])
                if arr.thr[i, k] > 0 and idle >= arr.scale[i]:
                    rows.append((float(tau), arr.job_ids[i], t, idle, int(arr.scale[i])))
    return pd.DataFrame(rows, columns=["time_s", "job", "worker_type", "idle_gpus", "scale_factor"])


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
