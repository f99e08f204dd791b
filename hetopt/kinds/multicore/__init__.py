"""The ``multicore`` kind: tasks on heterogeneous cores (big.LITTLE, CPUs + accelerators).

Independent tasks use an assignment MILP (R||Cmax with eligibility); tasks with
``predecessors``, release times or cores with availability windows a disjunctive or a
time-indexed scheduling MILP. Objectives: makespan, energy (active plus idle power over
the makespan), the makespan-energy Pareto front and the weighted completion time of DAG
jobs (Decima's average job completion time). See ``models/multicore.md`` for the
mathematics.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...contract import Column, Detail, Method, Table
from ...errors import InstanceError, UsageError
from ...result import Result, Verification
from .._shared.choice import CHOICE_DETAIL
from ..base import Kind, LazyMethod, Objective
from .data import Core, MulticoreArrays, MulticoreInstance, Task, Window, with_limits
from .fjsp import fjsp_to_multicore
from .generate import FAMILIES, generate
from .goals import check_formulation, check_time_range
from .heuristics import list_schedule
from .params import MulticoreParams
from .plotting import plot_gantt, plot_pareto

__all__ = [
    "FAMILIES",
    "KIND",
    "Core",
    "MulticoreArrays",
    "MulticoreInstance",
    "MulticoreKind",
    "MulticoreParams",
    "Task",
    "Window",
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
        Column(
            "job",
            "str",
            "the task's job (when the instance names jobs or gives job_weights)",
            optional=True,
        ),
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

JOBS = Table(
    "jobs",
    "completion of each job: the end of its last task (objective weighted_completion, "
    "and every objective when the instance names jobs or gives job_weights)",
    (
        Column("job", "str", "job id (a task without a job is a job named by its id)"),
        Column("weight", "float", "the job's weight (job_weights; 1 without them)"),
        Column("arrival_s", "float", "earliest release of the job's tasks", "s"),
        Column("completion_s", "float", "end of the job's last task", "s"),
        Column("jct_s", "float", "job completion time: completion_s - arrival_s", "s"),
        Column("weighted_completion_s", "float", "weight * completion_s", "s"),
    ),
    optional=True,
)

DETAILS = (
    Detail("formulation", "str", "the model solved: assignment, disjunctive or time_indexed"),
    CHOICE_DETAIL,
    Detail("horizon_s", "float", "horizon of the model (big-M, time-indexed length)", "s"),
    Detail("heuristic_makespan_s", "float", "makespan of the best list schedule", "s"),
    Detail(
        "heuristic_weighted_completion",
        "float",
        "weighted completion of the best list schedule (objective weighted_completion)",
        "s",
    ),
    Detail("symmetry_classes", "int", "classes of interchangeable cores ordered (0: off)"),
    Detail("makespan_s", "float", "makespan of the reported schedule", "s"),
    Detail("energy_j", "float", "energy of the reported schedule", "J"),
    Detail(
        "weighted_completion_s",
        "float",
        "weighted completion of the reported schedule (objective weighted_completion)",
        "s",
    ),
    Detail("relaxation", "bool", "the bound is the LP relaxation's, the schedule a list one"),
    Detail("points", "int", "points of the Pareto front"),
    Detail("solves", "int", "HiGHS solves of the Pareto front"),
    Detail("min_makespan_s", "float", "shortest makespan (left end of the front)", "s"),
)

_SOLVE = "hetopt.kinds.multicore.solve"
REFUSED = {("pareto", True): "relaxation is not offered for the pareto objective"}
"""(objective, ``relaxation``) -> why that combination is not offered (``hetopt export``
still writes the model; a solve raises a :class:`~hetopt.UsageError`)."""
_PARETO = LazyMethod("hetopt.kinds.multicore.pareto:Pareto")


def _refused(method: Method, reason: str) -> Method:
    from .solve import Refused

    return Refused(method, reason)


METHODS: Mapping[tuple[str, bool], LazyMethod] = {
    ("makespan", False): LazyMethod(f"{_SOLVE}:Scheduled", "makespan"),
    ("energy", False): LazyMethod(f"{_SOLVE}:Scheduled", "energy"),
    ("pareto", False): _PARETO,
    ("weighted_completion", False): LazyMethod(f"{_SOLVE}:Scheduled", "weighted_completion"),
    ("makespan", True): LazyMethod(f"{_SOLVE}:Relaxation", "makespan"),
    ("energy", True): LazyMethod(f"{_SOLVE}:Relaxation", "energy"),
    ("weighted_completion", True): LazyMethod(f"{_SOLVE}:Relaxation", "weighted_completion"),
    ("pareto", True): _PARETO.then(_refused, REFUSED["pareto", True]),
}
"""(objective, ``relaxation``) -> method."""


class MulticoreKind(Kind):
    name = "multicore"
    description = (
        "tasks (independent or DAG jobs, with releases) on heterogeneous cores: makespan, "
        "energy, Pareto, weighted completion"
    )
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
        Objective(
            "weighted_completion",
            "sum over jobs of job_weights[j] times the end of job j's last task "
            "(Decima's job completion time), table 'jobs'",
            "s",
            "min",
        ),
    )
    instance_model = MulticoreInstance
    params_model = MulticoreParams
    methods = {obj: m for (obj, relaxation), m in METHODS.items() if not relaxation}
    tables = (SCHEDULE, CORES, PARETO, JOBS)
    details = DETAILS

    def instance_for(self, instance: MulticoreInstance, params: Any) -> MulticoreInstance:
        """The instance under the ``deadline_s`` / ``energy_budget_j`` parameters (they
        override the instance's own limits, for the solve and for its verification)."""
        try:
            return with_limits(instance, params.deadline_s, params.energy_budget_j)
        except InstanceError as exc:  # a bad value given as a parameter, not in the file
            raise UsageError(f"parameter {exc.field}: {exc.message}") from None

    def check(self, instance: MulticoreInstance, objective: str, params: Any) -> None:
        """What a solve would refuse. Parameter combinations (usage errors):
        ``relaxation`` for ``pareto``, a ``formulation`` the instance cannot use.
        ``weighted_completion`` sums over jobs: either every task names its ``job`` or
        none does (then each task is a job of its own); a mix is most likely a forgotten
        ``job`` field, which would count that task as a separate job of weight 1."""
        self.choose_method(objective, instance, params)
        refused = REFUSED.get((objective, params.relaxation))
        if refused is not None:
            raise UsageError(refused)
        check_formulation(instance.arrays, params.formulation, objective)
        check_time_range(instance)
        if objective != "weighted_completion":
            return
        named = [t.job is not None for t in instance.tasks]
        if any(named) and not all(named):
            i = named.index(False)
            raise InstanceError(
                f"objective weighted_completion: task {instance.tasks[i].id!r} has no job "
                "while other tasks have one; give every task a job (or none: each task "
                "is then a job of its own)",
                field=f"tasks[{i}].job",
            )

    def choose_method(self, objective: str, instance: Any, params: Any) -> Any:
        """``relaxation=True`` picks the LP-relaxation method (refused for pareto)."""
        method = METHODS.get((objective, params.relaxation))
        return method if method is not None else super().choose_method(objective, instance, params)

    def verify(self, instance: MulticoreInstance, result: Result) -> Verification:
        from . import verify as V

        return V.verify(instance, result.objective, result.objective_value, dict(result.tables))


KIND = MulticoreKind()
