"""The ``multi_resource`` instance (Synergy's setting) and its derived numpy views."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from ...instance import InstanceBase, RecordBase, fail
from .._shared.validation import id_positions, note_id

PosFloat = Annotated[float, Field(gt=0)]
NonNegFloat = Annotated[float, Field(ge=0)]

FAIR_TOL = 1e-9
"""Relative tolerance when comparing a profile's CPUs/memory per GPU with the fair share."""


_Strict = RecordBase
"""Base of the records (strict, frozen; numpy scalars and ``4.0`` for an integer accepted)."""


class Server(_Strict):
    """One server: its GPUs, CPU cores and memory."""

    id: Annotated[str, Field(min_length=1)]
    gpus: Annotated[int, Field(ge=1)]
    cpus: NonNegFloat
    mem_gb: NonNegFloat


class Profile(_Strict):
    """One profiled configuration of a job: resources per GPU and the job's throughput."""

    cpus_per_gpu: PosFloat
    mem_gb_per_gpu: PosFloat
    throughput: PosFloat
    """Throughput of the whole job in this configuration (Synergy: normalised, 1.0 = the
    throughput at the GPU-proportional fair share). Leave unprofiled configurations out."""


class Job(_Strict):
    """A DNN training job asking for ``gpus`` GPUs, with its throughput profile."""

    id: Annotated[str, Field(min_length=1)]
    gpus: Annotated[int, Field(ge=1)]
    profile: Annotated[list[Profile], Field(min_length=1)]


class MultiResourceInstance(InstanceBase):
    """Servers with GPUs, CPUs and memory; DNN jobs with (CPUs, memory) per GPU profiles.

    Example::

        {"kind": "multi_resource",
         "servers": [{"id": "s0", "gpus": 8, "cpus": 24, "mem_gb": 500}],
         "jobs": [{"id": "j1", "gpus": 1,
                   "profile": [{"cpus_per_gpu": 3, "mem_gb_per_gpu": 62.5, "throughput": 1.0},
                               {"cpus_per_gpu": 6, "mem_gb_per_gpu": 62.5, "throughput": 1.4}]}],
         "objective": "max_total_throughput"}
    """

    kind: Literal["multi_resource"] = "multi_resource"
    servers: Annotated[list[Server], Field(min_length=1)]
    jobs: Annotated[list[Job], Field(min_length=1)]
    objective: str | None = None

    @model_validator(mode="after")
    def _cross_checks(self) -> MultiResourceInstance:
        id_positions(self.servers, "servers", "server")
        total = sum(srv.gpus for srv in self.servers)
        jseen: dict[str, int] = {}
        for i, job in enumerate(self.jobs):
            note_id(jseen, "jobs", "job", i, job.id)
            if job.gpus > total:
                raise fail(
                    f"jobs[{i}].gpus",
                    f"job {job.id!r} asks for {job.gpus} GPUs; the cluster has only {total}",
                )
        return self

    @cached_property
    def arrays(self) -> MultiResourceArrays:
        return MultiResourceArrays.from_instance(self)


def fair_share_throughput(
    profiles: list[Profile], cpus_per_gpu: float, mem_gb_per_gpu: float
) -> float:
    """Best throughput among ``profiles`` within the fair share of CPUs and memory per GPU.

    0.0 when no profile fits within the fair share (the job then has no floor).
    """
    best = 0.0
    for p in profiles:
        if p.cpus_per_gpu <= cpus_per_gpu * (
            1 + FAIR_TOL
        ) and p.mem_gb_per_gpu <= mem_gb_per_gpu * (1 + FAIR_TOL):
            best = max(best, p.throughput)
    return best


@dataclass(frozen=True)
class MultiResourceArrays:
    """Numpy views of a :class:`MultiResourceInstance`.

    Profiles are flattened: ``prof_job[k]`` is the job of profile ``k`` and
    ``prof_pos[k]`` its position in that job's ``profile`` list.
    """

    job_ids: list[str]
    server_ids: list[str]
    job_gpus: np.ndarray
    srv_gpus: np.ndarray
    srv_cpus: np.ndarray
    srv_mem: np.ndarray
    prof_job: np.ndarray
    prof_pos: np.ndarray
    prof_cpu: np.ndarray
    prof_mem: np.ndarray
    prof_tput: np.ndarray
    fair_share: np.ndarray
    cpus_per_gpu: float
    mem_gb_per_gpu: float

    @classmethod
    def from_instance(cls, inst: MultiResourceInstance) -> MultiResourceArrays:
        srv_gpus = np.array([s.gpus for s in inst.servers], dtype=float)
        srv_cpus = np.array([s.cpus for s in inst.servers], dtype=float)
        srv_mem = np.array([s.mem_gb for s in inst.servers], dtype=float)
        cpg = float(srv_cpus.sum() / srv_gpus.sum())
        mpg = float(srv_mem.sum() / srv_gpus.sum())
        pj, pp, pc, pm, pt = [], [], [], [], []
        for i, job in enumerate(inst.jobs):
            for k, p in enumerate(job.profile):
                pj.append(i)
                pp.append(k)
                pc.append(p.cpus_per_gpu)
                pm.append(p.mem_gb_per_gpu)
                pt.append(p.throughput)
        fair = np.array([fair_share_throughput(j.profile, cpg, mpg) for j in inst.jobs])
        return cls(
            job_ids=[j.id for j in inst.jobs],
            server_ids=[s.id for s in inst.servers],
            job_gpus=np.array([j.gpus for j in inst.jobs], dtype=float),
            srv_gpus=srv_gpus,
            srv_cpus=srv_cpus,
            srv_mem=srv_mem,
            prof_job=np.array(pj, dtype=np.int64),
            prof_pos=np.array(pp, dtype=np.int64),
            prof_cpu=np.array(pc, dtype=float),
            prof_mem=np.array(pm, dtype=float),
            prof_tput=np.array(pt, dtype=float),
            fair_share=fair,
            cpus_per_gpu=cpg,
            mem_gb_per_gpu=mpg,
        )

    @property
    def num_jobs(self) -> int:
        return len(self.job_ids)

    @property
    def num_servers(self) -> int:
        return len(self.server_ids)

    @property
    def max_server_gpus(self) -> float:
        return float(self.srv_gpus.max())

    def is_split(self) -> np.ndarray:
        """Jobs that need more GPUs than the largest server has (placed on several)."""
        return self.job_gpus > self.max_server_gpus
