"""The ``cpu_gpu`` kind: a batch of programs on CPU and GPU devices.

Without slowdowns the devices run independently and the model is unrelated-machine
minimum makespan with divisible programs (:func:`formulations.build_independent`, built on
the shared :func:`formulations.add_unrelated_assignment`). With slowdown factors the
pairing model (:func:`formulations.build_pairing`) decides which CPU program co-runs with
which GPU program. See ``models/cpu_gpu.md``.
"""

from __future__ import annotations

from ...contract import Column, Detail, Table
from ...result import Result, Verification
from ..base import Kind, LazyMethod, Objective
from .data import CpuGpuInstance, Device, Program, Slowdown
from .plot import plot_gantt

__all__ = [
    "KIND",
    "CpuGpuInstance",
    "CpuGpuKind",
    "Device",
    "Program",
    "Slowdown",
    "plot_gantt",
]

SCHEDULE = Table(
    "schedule",
    "when each program (or its share of a divisible program) runs on which device",
    (
        Column("program", "str", "program id"),
        Column("device", "str", "device id"),
        Column("start_s", "float", "start time", "s"),
        Column("end_s", "float", "end time", "s"),
        Column("fraction", "float", "share of the program's work run in this row"),
        Column(
            "co_runner", "str", "the program co-running on the lane's other device ('' if none)"
        ),
    ),
)

DETAILS = (
    Detail("model", "str", "'independent' (no slowdowns) or 'pairing' (co-run slowdowns)"),
    Detail("divisible_ignored", "int", "divisible programs the pairing model runs whole"),
    Detail("makespan_s", "float", "time until the last program ends", "s"),
    Detail("time_reference_s", "float", "time unit of the makespan variable", "s"),
)


class CpuGpuKind(Kind):
    name = "cpu_gpu"
    description = (
        "a batch of programs on CPU and GPU devices (divisible programs, co-run slowdowns)"
    )
    objectives = (
        Objective("makespan", "time until every program of the batch has finished", "s", "min"),
        Objective(
            "throughput",
            "programs per second over the batch: number of programs / makespan",
            "programs/s",
            "max",
        ),
    )
    instance_model = CpuGpuInstance
    methods = {
        "makespan": LazyMethod("hetopt.kinds.cpu_gpu.methods:Batch", "makespan"),
        "throughput": LazyMethod("hetopt.kinds.cpu_gpu.methods:Batch", "throughput"),
    }
    tables = (SCHEDULE,)
    details = DETAILS

    def verify(self, instance: CpuGpuInstance, result: Result) -> Verification:
        from . import verify as V

        return V.verify(
            instance, result.objective, result.objective_value, result.tables["schedule"]
        )


KIND = CpuGpuKind()
