"""The ``multicore`` kind: tasks on heterogeneous cores (big.LITTLE, CPUs + accelerators).

Independent tasks use an assignment MILP (R||Cmax with eligibility); tasks with
``predecessors`` a disjunctive or a time-indexed scheduling MILP. Objectives: makespan,
energy (active plus idle power over the makespan) and the makespan-energy Pareto front.
See ``models/multicore.md`` for the mathematics.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...contract import Column, Detail, Method, Table
from ...errors import InstanceError, UsageError
from ...result import Result, Verification
from ..base import Kind, Objective
from . import verify as V
from .data import Core, MulticoreArrays, MulticoreInstance, Task, with_limits
from .fjsp import fjsp_to_multicore
from .generate import FAMILIES, generate
from .heuristics import list_schedule
from .pareto import Pareto
from .plotting import plot_gantt, plot_pareto
from .solve import MulticoreParams, Refused, Relaxation, Scheduled, check_formulation

__all__ = [
    "FAMILIES",
    "KIND",
    "Core",
    "MulticoreArrays",
    "MulticoreInstance",
    "MulticoreKind",
    "MulticoreParams",
    "Task",
    "fjsp_to_multicore",
    "generate",
    "list_schedule",
    "plot_gantt",
    "plot_pareto",
    "with_limits",
]

SCHEDULE = Table(
    "schedule",
    "when each task runs on which core (the Pareto front: one schedule per point)",
    (
        Column(
            "point",
            "int",
            "the Pareto point this row's schedule belongs to (objective pareto only)",
            optional=True,
        ),
        Column("task", "str", "task id"),
        Column("core", "str", "core id"),
        Column("core_type", "str", "type of the core"),
        Column("start_s", "float", "start time", "s"),
        Column("end_s", "float", "end time", "s"),
    ),
)

CORES = Table(
    "cores",
    "busy time, idle time and energy of each core until the makespan "
    "(objectives makespan and energy)",
    (
        Column("core", "str", "core id"),
        Column("core_type", "str", "type of the core"),
        Column("busy_s", "float", "time spent running tasks", "s"),
        Column("idle_s", "float", "time spent waiting before the makespan", "s"),
        Column("energy_j", "float", "active plus idle energy of the core", "J"),
    ),
    optional=True,
)

PARETO = Table(
    "pareto",
    "the non-dominated (makespan, energy) points, by increasing makespan (objective pareto)",
    (
        Column("point", "int", "point number (0: the shortest makespan)"),
        Column("makespan_s", "float", "makespan of the point's schedule", "s"),
        Column("energy_j", "float", "energy of the point's schedule", "J"),
    ),
    optional=True,
)

DETAILS = (
    Detail("formulation", "str", "the model solved: assignment, disjunctive or time_indexed"),
    Detail("horizon_s", "float", "horizon of the model (big-M, time-indexed length)", "s"),
    Detail("heuristic_makespan_s", "float", "makespan of the best list schedule", "s"),
    Detail("symmetry_classes", "int", "classes of interchangeable cores ordered (0: off)"),
    Detail("makespan_s", "float", "makespan of the reported schedule", "s"),
    Detail("energy_j", "float", "energy of the reported schedule", "J"),
    Detail("relaxation", "bool", "the bound is the LP relaxation's, the schedule a list one"),
    Detail("points", "int", "points of the Pareto front"),
    Detail("solves", "int", "HiGHS solves of the Pareto front"),
    Detail("min_makespan_s", "float", "shortest makespan (left end of the front)", "s"),
)

_PARETO = Pareto()

METHODS: Mapping[tuple[str, bool], Method] = {
    ("makespan", False): Scheduled("makespan"),
    ("energy", False): Scheduled("energy"),
    ("pareto", False): _PARETO,
    ("makespan", True): Relaxation("makespan"),
    ("energy", True): Relaxation("energy"),
    ("pareto", True): Refused(_PARETO, "relaxation is not offered for the pareto objective"),
}
"""(objective, ``relaxation``) -> method."""


class MulticoreKind(Kind):
    name = "multicore"
    description = "tasks (independent or a DAG) on heterogeneous cores: makespan, energy, Pareto"
    objectives = (
        Objective("makespan", "time until the last task ends", "s", "min"),
        Objective(
            "energy",
            "active energy of the tasks plus idle power of every core until the makespan",
            "J",
            "min",
        ),
        Objective(
            "pareto",
            "the makespan-energy Pareto front (epsilon-constraint), table 'pareto'",
            "",
            "min",
        ),
    )
    instance_model = MulticoreInstance
    params_model = MulticoreParams
    methods = {obj: m for (obj, relaxation), m in METHODS.items() if not relaxation}
    tables = (SCHEDULE, CORES, PARETO)
    details = DETAILS

    def instance_for(self, instance: MulticoreInstance, params: Any) -> MulticoreInstance:
        """The instance under the ``deadline_s`` / ``energy_budget_j`` parameters (they
        override the instance's own limits, for the solve and for its verification)."""
        try:
            return with_limits(instance, params.deadline_s, params.energy_budget_j)
        except InstanceError as exc:  # a bad value given as a parameter, not in the file
            raise UsageError(f"parameter {exc.field}: {exc.message}") from None

    def method_for(self, objective: str, instance: Any, params: Any) -> Method:
        """``relaxation=True`` picks the LP-relaxation method (refused for pareto)."""
        method = METHODS.get((objective, params.relaxation))
        return method if method is not None else super().method_for(objective, instance, params)

    def check(self, instance: MulticoreInstance, objective: str, params: Any) -> None:
        """Parameter combinations a solve would refuse (usage errors): ``relaxation``
        for ``pareto``, a ``formulation`` the instance cannot use."""
        method = self.method_for(objective, instance, params)
        if isinstance(method, Refused):
            raise UsageError(method.reason)
        check_formulation(instance.arrays, params.formulation)

    def verify(self, instance: MulticoreInstance, result: Result) -> Verification:
        return V.verify(instance, result.objective, result.objective_value, dict(result.tables))


KIND = MulticoreKind()
