"""What each ``gpu_cluster`` objective needs from an instance (issue 21).

Pure functions of the instance's fields, called by ``GpuClusterKind.check`` (so
``hetopt validate FILE --objective NAME`` rejects what ``solve`` would) and before every
solve. Each problem is one :class:`~hetopt.InstanceError` naming the field.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import InstanceError, UsageError
from .data import GpuClusterInstance

if TYPE_CHECKING:
    from . import GpuClusterParams

MAX_WEIGHT_RATIO = 1e9
"""Largest ratio of two jobs' (effective) weights the max-min objectives accept.

A job's share of the max-min optimum shrinks with its weight: with one weight 1e-10
times another, the job needs about 1e-10 of a GPU's time, below what HiGHS's
tolerances and the allocation table (values under 1e-10 read as 0) can represent; at
1e-15 the row coefficient reaches HiGHS's limit and the model is refused. Up to 1e9 the
optimum is verified (tests/test_hardening_gpu_cluster.py)."""

MAX_WORK_RATIO = 1e12
"""Largest ratio of two jobs' work (``steps_remaining`` over the job's best usable
throughput: its run time on the whole of its best type) the makespan objective accepts.

The makespan LP's coefficients span that ratio: HiGHS refuses the model beyond about 1e15
(its ``large_matrix_value``; the shipped example with one job's steps made 1e-9:
ratio 1.5e15, refused), and up to 5e14 the optimum is verified, the tiniest job's share
(below 1e-10) kept by :func:`~.methods.clean_shares`. 1e12 leaves a thousandfold
margin (tests/kinds/gpu_cluster/test_hardening_gpu_cluster.py)."""

MAX_MIN_OBJECTIVES = ("max_min_fairness", "max_min_fairness_water_filling")
"""Objectives whose rows are scaled by ``1 / weight``."""

STEPS_OBJECTIVES = ("makespan", "finish_time_fairness")
"""Objectives that need every job's ``steps_remaining``."""

ELASTIC_OBJECTIVES = ("max_progress", "reclaim")
"""Lyra's objectives (:mod:`.elastic`): whole GPUs, elastic jobs, loaned servers."""

RECLAIM_PARAMS = ("servers", "server_type", "shrink_cost")
"""Parameters only ``reclaim`` reads."""


def require_steps(inst: GpuClusterInstance, objective: str = "makespan") -> None:
    """Every job needs ``steps_remaining`` for ``objective`` (read off the arrays, NaN
    where a job has none, for time-sharing instances: their jobs then stay unread
    before HiGHS runs, :mod:`hetopt.deferred`)."""
    if inst.has_elastic:
        missing = [i for i, job in enumerate(inst.jobs) if job.steps_remaining is None]
    else:
        missing = np.flatnonzero(np.isnan(inst.arrays.steps)).tolist()
    if missing:
        raise InstanceError(
            f"required for the {objective} objective (steps the job still has to run)",
            f"jobs[{missing[0]}].steps_remaining",
        )


def check(instance: GpuClusterInstance, objective: str) -> None:
    """Raise :class:`~hetopt.InstanceError` when ``instance`` lacks what ``objective``
    needs: ``steps_remaining`` on every job (makespan, finish-time fairness); a positive
    ``cost_per_hour`` for every usable type and ``steps_remaining`` on every job with a
    ``deadline_s`` (min_cost); weights within :data:`MAX_WEIGHT_RATIO` (max-min)."""
    if objective in STEPS_OBJECTIVES:
        require_steps(instance, objective)
        if objective == "makespan":
            check_work_ratio(instance)
    elif objective == "min_cost":
        min_cost_inputs(instance)
    elif objective in MAX_MIN_OBJECTIVES:
        check_weight_ratio(instance, objective)


def _outlier(values: np.ndarray) -> tuple[int, int]:
    """The extreme of ``values`` (positive) farther from their median in log scale, and
    the other extreme."""
    lo, hi = int(np.argmin(values)), int(np.argmax(values))
    logs = np.log(values)
    med = float(np.median(logs))
    return (hi, lo) if logs[hi] - med > med - logs[lo] else (lo, hi)


def job_work(arr: Any) -> np.ndarray:
    """Each job's work for the makespan: ``steps_remaining`` over its best usable
    throughput, its run time on the whole of its best type (``inf`` for a job that can
    run nowhere)."""
    best = np.where(arr.allowed, arr.thr, 0.0).max(axis=1, initial=0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return arr.steps / best  # type: ignore[no-any-return]


def check_work_ratio(instance: GpuClusterInstance) -> None:
    """Jobs' work (:func:`job_work`) within :data:`MAX_WORK_RATIO` of each other for the
    makespan; the error names the outlier's ``steps_remaining``."""
    work = job_work(instance.arrays)
    if len(work) < 2 or not np.isfinite(work).all():
        return  # (a job that can run nowhere: the solve reports it)
    ratio = float(work.max() / work.min())
    if ratio <= MAX_WORK_RATIO:
        return
    out, other = _outlier(work)
    job, them = instance.jobs[out], instance.jobs[other]
    side = "more" if work[out] > work[other] else "less"
    raise InstanceError(
        f"job {job.id!r} has {job.steps_remaining:g} steps left: {ratio:.3g} times {side} "
        f"work than job {them.id!r} (steps over the best usable throughput); makespan "
        f"cannot honour work ratios above {MAX_WORK_RATIO:g} in double precision (the "
        "LP's coefficients span the ratio): bring the jobs' work closer together",
        f"jobs[{out}].steps_remaining",
    )


def check_weight_ratio(instance: GpuClusterInstance, objective: str) -> None:
    """Weights (entity weights split over their jobs for water-filling) within
    :data:`MAX_WEIGHT_RATIO` of each other; the error names the outlier's field (the
    extreme weight farther from the others' median)."""
    water = objective == "max_min_fairness_water_filling"
    w = entity_weights(instance) if water else instance.arrays.weight
    ratio = float(w.max() / w.min())
    if ratio <= MAX_WEIGHT_RATIO:
        return
    out, other = _outlier(w)
    hi = int(np.argmax(w))
    job = instance.jobs[out]
    field, what = f"jobs[{out}].weight", f"weight {job.weight:g}"
    own = max(job.weight, instance.jobs[other].weight) / min(
        job.weight, instance.jobs[other].weight
    )
    ents = instance.entity_weights or {}
    if water and own <= MAX_WEIGHT_RATIO and job.entity in ents:
        # the jobs' own weights are close: the entity weights make the spread
        field = f"entity_weights.{job.entity}"
        what = f"entity weight {ents[job.entity]:g}"
    side = "larger" if out == hi else "smaller"
    raise InstanceError(
        f"{what} makes the effective weight of job {job.id!r} {ratio:.3g} times {side} "
        f"than that of job {instance.jobs[other].id!r}; {objective} cannot honour weight "
        f"ratios above "
        f"{MAX_WEIGHT_RATIO:g} in double precision (a share that small is below the "
        "solver's tolerances): bring the weights closer together",
        field,
    )


# --------------------------------------------------------------------------- Lyra (elastic)
def check_elastic(instance: GpuClusterInstance, objective: str, params: GpuClusterParams) -> None:
    """What ``objective`` needs: steps for ``max_progress``, a placement on loaned
    servers and a feasible ``servers`` for ``reclaim``; ``agnostic`` is refused."""
    if params.agnostic:
        raise UsageError(
            f"agnostic is not defined for {objective}: it chooses GPU types and worker counts"
        )
    if objective == "max_progress":
        given = sorted(set(RECLAIM_PARAMS) & params.model_fields_set)
        if given:
            raise UsageError(f"{', '.join(given)}: only the reclaim objective takes it")
        for i, job in enumerate(instance.jobs):
            if job.steps_remaining is None:
                raise InstanceError(
                    "required for the max_progress objective (steps the job still has to run)",
                    f"jobs[{i}].steps_remaining",
                )
        return
    if instance.loaned_servers is None:
        raise InstanceError(
            "required for the reclaim objective: the loaned servers and the jobs on them",
            "loaned_servers",
        )
    types = {s.worker_type for s in instance.loaned_servers}
    if params.server_type is not None and params.server_type not in types:
        raise UsageError(
            f"server_type {params.server_type!r} names no loaned server; their types: "
            f"{', '.join(sorted(types))}"
        )
    candidates = len(reclaimable(instance, params.server_type))
    if params.servers > candidates:
        what = f"of type {params.server_type!r} " if params.server_type is not None else ""
        raise UsageError(
            f"servers must be <= {candidates} (the loaned servers {what}to return from), "
            f"got {params.servers}"
        )


def reclaimable(instance: GpuClusterInstance, server_type: str | None) -> list[int]:
    """Indices of the loaned servers ``reclaim`` may return."""
    return [
        k
        for k, s in enumerate(instance.loaned_servers or [])
        if server_type is None or s.worker_type == server_type
    ]


# ------------------------------------------------------------ shared by checks and methods
def entity_weights(inst: GpuClusterInstance) -> np.ndarray:
    """Job weights with entity weights split over each entity's jobs.

    A job of entity ``e`` gets ``entity_weights[e] * weight_i / sum_{j in e} weight_j``
    (an entity's weight is shared in proportion to its jobs' own weights; a missing
    ``entity_weights`` entry counts as 1). Jobs without an entity keep ``weight``.
    """
    arr = inst.arrays
    w = arr.weight.copy()
    ents = [j.entity for j in inst.jobs]
    if all(e is None for e in ents):
        return w
    ew = dict(inst.entity_weights or {})
    totals: dict[str, float] = {}
    for e, wi in zip(ents, arr.weight, strict=True):
        if e is not None:
            totals[e] = totals.get(e, 0.0) + float(wi)
    for i, e in enumerate(ents):
        if e is not None:
            w[i] = ew.get(e, 1.0) * arr.weight[i] / totals[e]
    return w


def costs(inst: GpuClusterInstance) -> np.ndarray:
    arr = inst.arrays
    if inst.cost_per_hour is None:
        raise InstanceError(
            "required for the min_cost objective (price per GPU-hour)", "cost_per_hour"
        )
    out = np.zeros(len(arr.types))
    for k, t in enumerate(arr.types):
        c = inst.cost_per_hour.get(t)
        if c is None and arr.allowed[:, k].any():
            raise InstanceError(f"missing the price of {t!r} GPUs", "cost_per_hour")
        if c is not None and c <= 0 and arr.allowed[:, k].any():
            raise InstanceError(
                "must be > 0 for min_cost (a free GPU makes throughput per dollar infinite)",
                f"cost_per_hour.{t}",
            )
        out[k] = c if c is not None else 0.0
    return out


def min_cost_inputs(inst: GpuClusterInstance) -> None:
    """Raise :class:`~hetopt.InstanceError` when ``min_cost`` lacks prices (or steps for
    a job with an SLO): what :class:`MinCost` would reject."""
    costs(inst)
    slo_need(inst)


def slo_need(inst: GpuClusterInstance) -> np.ndarray:
    """Steps/s each job with an SLO needs (``steps / deadline_s``; NaN without SLO)."""
    out = np.full(len(inst.jobs), math.nan)
    for i, j in enumerate(inst.jobs):
        if j.deadline_s is not None:
            if j.steps_remaining is None:
                raise InstanceError(
                    "a job with deadline_s needs steps_remaining", f"jobs[{i}].steps_remaining"
                )
            out[i] = j.steps_remaining / j.deadline_s
    return out
