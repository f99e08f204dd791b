"""The ``gpu_cluster`` instance (Gavel's setting) and its derived numpy views."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ...instance import InstanceBase, fail

NonNegFloat = Annotated[float, Field(ge=0)]
PosFloat = Annotated[float, Field(gt=0)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class GpuJob(_Strict):
    """One job of a GPU cluster.

    ``throughput[t]`` is steps/s of the whole job on ``scale_factor`` GPUs of type ``t``;
    0 or a missing type means the job cannot run there.
    """

    id: Annotated[str, Field(min_length=1)]
    throughput: dict[str, NonNegFloat]
    scale_factor: Annotated[int, Field(ge=1)] = 1
    weight: PosFloat = 1.0
    steps_remaining: PosFloat | None = None
    job_type: str | None = None
    time_elapsed_s: NonNegFloat | None = None
    """Time the job has already spent in the system (finish-time fairness)."""
    deadline_s: PosFloat | None = None
    """SLO: the job should finish within this many seconds from now."""
    entity: str | None = None
    """User or team the job belongs to (entity weights in water-filling)."""
    arrival_s: NonNegFloat | None = None
    """When the job arrives (seconds from the start of a trace); kept for trace replay."""


class Colocation(_Strict):
    """Two jobs sharing the same GPUs (Gavel's space sharing).

    A job of type ``job_types[0]`` runs at ``throughput[0]`` steps/s and one of type
    ``job_types[1]`` at ``throughput[1]`` when both run on the same ``scale_factor`` GPUs
    of ``worker_type``. Only jobs whose ``scale_factor`` equals the entry's pair; naming a
    type twice allows two jobs of that type to share.
    """

    worker_type: Annotated[str, Field(min_length=1)]
    job_types: Annotated[
        list[Annotated[str, Field(min_length=1)]], Field(min_length=2, max_length=2)
    ]
    scale_factor: Annotated[int, Field(ge=1)] = 1
    throughput: Annotated[list[NonNegFloat], Field(min_length=2, max_length=2)]


class GpuClusterInstance(InstanceBase):
    """A GPU cluster with several accelerator types and a set of jobs.

    Example::

        {"kind": "gpu_cluster",
         "workers": {"k80": 36, "p100": 36, "v100": 36},
         "jobs": [{"id": "0", "throughput": {"k80": 2.41, "p100": 10.36, "v100": 9.45},
                   "scale_factor": 4, "weight": 1.0, "steps_remaining": 503349.9}],
         "objective": "max_min_fairness"}
    """

    kind: Literal["gpu_cluster"] = "gpu_cluster"
    workers: dict[str, Annotated[int, Field(ge=0)]]
    jobs: Annotated[list[GpuJob], Field(min_length=1)]
    objective: str | None = None
    cost_per_hour: dict[str, NonNegFloat] | None = None
    """Optional price of one GPU of each type per hour (``min_cost``)."""
    entity_weights: dict[str, PosFloat] | None = None
    """Optional weights of users/teams, split over their jobs (water-filling)."""
    colocation: list[Colocation] | None = None
    """Optional space-sharing throughputs of job-type pairs (``max_min_fairness`` and
    ``makespan`` then also consider two jobs sharing GPUs)."""

    @model_validator(mode="after")
    def _cross_checks(self) -> GpuClusterInstance:
        if not self.workers:
            raise fail("workers", "expected at least one worker type, e.g. {'v100': 8}")
        if sum(self.workers.values()) <= 0:
            raise fail("workers", "the cluster has no GPUs: every worker count is 0")
        seen: dict[str, int] = {}
        for i, job in enumerate(self.jobs):
            if job.id in seen:
                raise fail(
                    f"jobs[{i}].id", f"duplicate job id {job.id!r} (also jobs[{seen[job.id]}])"
                )
            seen[job.id] = i
            for t in job.throughput:
                if t not in self.workers:
                    raise fail(
                        f"jobs[{i}].throughput.{t}",
                        f"unknown worker type {t!r}; the cluster has: {', '.join(self.workers)}",
                    )
            runnable = [
                t
                for t, v in job.throughput.items()
                if v > 0 and self.workers[t] >= job.scale_factor
            ]
            if not runnable:
                raise fail(
                    f"jobs[{i}]",
                    f"job {job.id!r} can run on no worker type: it needs a positive throughput on a "
                    f"type with at least scale_factor={job.scale_factor} GPUs",
                )
        if self.colocation is not None:
            seen_pairs: dict[tuple[str, str, str, int], int] = {}
            for k, entry in enumerate(self.colocation):
                if entry.worker_type not in self.workers:
                    raise fail(
                        f"colocation[{k}].worker_type",
                        f"unknown worker type {entry.worker_type!r}; the cluster has: "
                        f"{', '.join(self.workers)}",
                    )
                a, b = sorted(entry.job_types)
                key = (entry.worker_type, a, b, entry.scale_factor)
                if key in seen_pairs:
                    raise fail(
                        f"colocation[{k}]",
                        f"duplicate entry for {a!r} + {b!r} on {entry.worker_type} at "
                        f"scale_factor {entry.scale_factor} (also colocation[{seen_pairs[key]}])",
                    )
                seen_pairs[key] = k
        if self.entity_weights is not None:
            for i, job in enumerate(self.jobs):
                if job.entity is not None and job.entity not in self.entity_weights:
                    raise fail(
                        f"jobs[{i}].entity",
                        f"entity {job.entity!r} has no weight in entity_weights",
                    )
        if self.cost_per_hour is not None:
            for t in self.cost_per_hour:
                if t not in self.workers:
                    raise fail(f"cost_per_hour.{t}", f"unknown worker type {t!r}")
        return self

    # ---- derived views (computed once) -------------------------------------------------
    @cached_property
    def arrays(self) -> ClusterArrays:
        return ClusterArrays.from_instance(self)


@dataclass(frozen=True)
class ClusterArrays:
    """Dense numpy views of a :class:`GpuClusterInstance`.

    ``thr`` is jobs x types; ``allowed`` marks the pairs a job can use (positive
    throughput and at least ``scale_factor`` GPUs of that type).
    """

    job_ids: list[str]
    types: list[str]
    thr: np.ndarray
    scale: np.ndarray
    weight: np.ndarray
    steps: np.ndarray  # NaN where missing
    workers: np.ndarray
    allowed: np.ndarray

    @classmethod
    def from_instance(cls, inst: GpuClusterInstance) -> ClusterArrays:
        types = list(inst.workers)
        col = {t: k for k, t in enumerate(types)}
        n, T = len(inst.jobs), len(types)
        thr = np.zeros((n, T))
        for i, job in enumerate(inst.jobs):
            for t, v in job.throughput.items():
                thr[i, col[t]] = v
        scale = np.array([j.scale_factor for j in inst.jobs], dtype=float)
        weight = np.array([j.weight for j in inst.jobs], dtype=float)
        steps = np.array(
            [math.nan if j.steps_remaining is None else j.steps_remaining for j in inst.jobs]
        )
        workers = np.array([inst.workers[t] for t in types], dtype=float)
        allowed = (thr > 0) & (scale[:, None] <= workers[None, :])
        return cls([j.id for j in inst.jobs], types, thr, scale, weight, steps, workers, allowed)

    @property
    def num_jobs(self) -> int:
        return len(self.job_ids)

    def subset(self, rows: np.ndarray) -> ClusterArrays:
        """The same cluster with only the jobs ``rows`` (e.g. one per symmetry group)."""
        return ClusterArrays(
            [self.job_ids[i] for i in rows],
            self.types,
            self.thr[rows],
            self.scale[rows],
            self.weight[rows],
            self.steps[rows],
            self.workers,
            self.allowed[rows],
        )

    def proportional_throughput(self, thr: np.ndarray | None = None) -> np.ndarray:
        """Gavel's ``p_i = sum_t thr[i,t] * workers[t] / sum_t workers[t]``."""
        thr = self.thr if thr is None else thr
        return thr @ self.workers / self.workers.sum()
