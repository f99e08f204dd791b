"""The ``cpu_gpu`` instance: a batch of programs on CPU and GPU devices."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from ...instance import InstanceBase, RecordBase, fail
from .._shared.validation import id_positions, note_id

PosFloat = Annotated[float, Field(gt=0)]
DEVICE_TYPES = ("cpu", "gpu")


_Strict = RecordBase
"""Base of the records (strict, frozen; numpy scalars and ``4.0`` for an integer accepted)."""


class Device(_Strict):
    """One CPU or GPU device."""

    id: Annotated[str, Field(min_length=1)]
    type: Literal["cpu", "gpu"]


class Program(_Strict):
    """A program with its run time alone on each device type.

    A missing type means the program cannot run there. A ``divisible`` program
    (data-parallel kernel) may be split: a fraction ``f`` of it takes ``f * duration_s``.
    """

    id: Annotated[str, Field(min_length=1)]
    duration_s: Annotated[
        dict[Literal["cpu", "gpu"], PosFloat], Field(json_schema_extra={"minProperties": 1})
    ]
    divisible: bool = False


class Slowdown(_Strict):
    """Co-running ``cpu_program`` (on a CPU) with ``gpu_program`` (on a GPU) multiplies
    their durations by ``factor[0]`` and ``factor[1]``."""

    cpu_program: str
    gpu_program: str
    factor: Annotated[list[PosFloat], Field(min_length=2, max_length=2)]


class CpuGpuInstance(InstanceBase):
    """A batch of programs on CPU and GPU devices.

    Example::

        {"kind": "cpu_gpu",
         "devices": [{"id": "cpu0", "type": "cpu"}, {"id": "gpu0", "type": "gpu"}],
         "programs": [{"id": "p1", "duration_s": {"cpu": 8.0, "gpu": 2.0}, "divisible": false}],
         "slowdown": [{"cpu_program": "p1", "gpu_program": "p2", "factor": [1.2, 1.1]}],
         "objective": "makespan"}
    """

    kind: Literal["cpu_gpu"] = "cpu_gpu"
    devices: Annotated[list[Device], Field(min_length=1)]
    programs: Annotated[list[Program], Field(min_length=1)]
    slowdown: list[Slowdown] = Field(default_factory=list)
    objective: str | None = None

    @model_validator(mode="after")
    def _cross_checks(self) -> CpuGpuInstance:
        id_positions(self.devices, "devices", "device")
        types = {d.type for d in self.devices}
        pseen: dict[str, int] = {}
        for i, p in enumerate(self.programs):
            note_id(pseen, "programs", "program", i, p.id)
            if not p.duration_s:
                raise fail(f"programs[{i}].duration_s", "give a duration for 'cpu' and/or 'gpu'")
            if not set(p.duration_s) & types:
                raise fail(
                    f"programs[{i}].duration_s",
                    f"program {p.id!r} can run on no device: it has durations for "
                    f"{', '.join(p.duration_s)} but the devices are {', '.join(sorted(types))}",
                )
        pairs: dict[tuple[str, str], int] = {}
        for k, s in enumerate(self.slowdown):
            for fld, pid, t in (
                ("cpu_program", s.cpu_program, "cpu"),
                ("gpu_program", s.gpu_program, "gpu"),
            ):
                if pid not in pseen:
                    raise fail(f"slowdown[{k}].{fld}", f"unknown program {pid!r}")
                if t not in self.programs[pseen[pid]].duration_s:
                    raise fail(f"slowdown[{k}].{fld}", f"program {pid!r} has no {t} duration")
            if s.cpu_program == s.gpu_program:
                raise fail(f"slowdown[{k}]", "a program cannot co-run with itself")
            key = (s.cpu_program, s.gpu_program)
            if key in pairs:
                raise fail(f"slowdown[{k}]", f"duplicate pair (also slowdown[{pairs[key]}])")
            pairs[key] = k
        return self

    @cached_property
    def arrays(self) -> CpuGpuArrays:
        return CpuGpuArrays.from_instance(self)


@dataclass(frozen=True)
class CpuGpuArrays:
    """Numpy views: ``times[p, d]`` is program ``p``'s duration alone on device ``d``
    (``inf`` where it cannot run); ``factor[p, q]`` the (CPU, GPU) slowdown of ``p`` on a
    CPU co-running with ``q`` on a GPU (1 when no entry)."""

    program_ids: list[str]
    device_ids: list[str]
    device_type: list[str]
    times: np.ndarray
    type_times: np.ndarray
    """programs x 2 (cpu, gpu) durations, ``inf`` where missing."""
    divisible: np.ndarray
    factor_cpu: np.ndarray
    factor_gpu: np.ndarray

    @classmethod
    def from_instance(cls, inst: CpuGpuInstance) -> CpuGpuArrays:
        n = len(inst.programs)
        tt = np.full((n, 2), math.inf)
        for i, p in enumerate(inst.programs):
            for t, v in p.duration_s.items():
                tt[i, DEVICE_TYPES.index(t)] = v
        dtype: list[str] = [d.type for d in inst.devices]
        col = np.array([DEVICE_TYPES.index(t) for t in dtype])
        pos = {p.id: i for i, p in enumerate(inst.programs)}
        fc, fg = np.ones((n, n)), np.ones((n, n))
        for s in inst.slowdown:
            fc[pos[s.cpu_program], pos[s.gpu_program]] = s.factor[0]
            fg[pos[s.cpu_program], pos[s.gpu_program]] = s.factor[1]
        return cls(
            program_ids=[p.id for p in inst.programs],
            device_ids=[d.id for d in inst.devices],
            device_type=dtype,
            times=tt[:, col],
            type_times=tt,
            divisible=np.array([p.divisible for p in inst.programs], dtype=bool),
            factor_cpu=fc,
            factor_gpu=fg,
        )

    @property
    def num_programs(self) -> int:
        return len(self.program_ids)

    def lanes(self) -> tuple[list[tuple[int, int]], list[int]]:
        """Co-run lanes of the pairing model: the i-th CPU with the i-th GPU (device order);
        devices left over run alone."""
        cpus = [d for d, t in enumerate(self.device_type) if t == "cpu"]
        gpus = [d for d, t in enumerate(self.device_type) if t == "gpu"]
        L = min(len(cpus), len(gpus))
        return list(zip(cpus[:L], gpus[:L], strict=True)), cpus[L:] + gpus[L:]
