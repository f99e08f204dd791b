"""The ``human_robot`` kind: allocate and schedule tasks on a team of humans and robots.

Agents differ in what they can do and how fast; tasks have time windows, precedence with
minimum and maximum lags (RCPSP/max), shared workspaces and travel between them. See
``models/human_robot.md`` for the mathematics.

Methods (parameter ``method``): ``"exact"`` (the MILP of :mod:`.formulations`, practical
to about 15 tasks x 5 agents; :mod:`.exact`), ``"decomposition"`` (allocate, then
sequence, iterate; :mod:`.decomposition`) and ``"auto"`` (exact up to 15 tasks and 75
capable task-agent pairs). :func:`replan` re-solves with the past fixed; the rolling
horizon (:func:`hetopt.rolling.rolling_schedule`) uses :mod:`.rolling`'s hooks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from ...contract import Method
from ...errors import InstanceError
from ...options import SolveOptions
from ...result import Result, Verification
from ..base import Kind, Objective
from . import verify as V
from .data import Agent, HumanRobotInstance, Precedence, Task, TeamArrays
from .decomposition import Decomposition
from .exact import Exact
from .fjsp import fjsp_to_instance
from .params import HumanRobotParams, parse_fixed, setup
from .plot import plot_gantt
from .rolling import ROLLING_DETAILS, HumanRobotReplanner
from .tables import DETAILS, TABLES, conflict_table, objective_of, schedule_tables, start_order

__all__ = [
    "KIND",
    "Agent",
    "HumanRobotInstance",
    "HumanRobotKind",
    "HumanRobotParams",
    "Precedence",
    "Task",
    "conflict_table",
    "fjsp_to_instance",
    "objective_of",
    "parse_fixed",
    "plot_gantt",
    "replan",
    "schedule_tables",
    "start_order",
]

EXACT_MAX_TASKS = 15
EXACT_MAX_PAIRS = 75
"""``method="auto"`` runs the exact MILP up to 15 tasks and 75 capable task-agent pairs."""

OBJECTIVES = (
    Objective("makespan", "minimise the time the last task ends", "s", "min"),
    Objective("weighted_completion", "minimise sum of weight * end time over tasks", "s", "min"),
    Objective(
        "max_human_workload",
        "minimise the largest total task time of any human (agent type 'human')",
        "s",
        "min",
    ),
)

METHODS: dict[tuple[str, str], Method] = {
    **{(o.name, "exact"): Exact(o.name) for o in OBJECTIVES},
    **{(o.name, "decomposition"): Decomposition(o.name) for o in OBJECTIVES},
}
"""(objective, method) -> the method object."""


def auto_method(arr: TeamArrays) -> str:
    """What ``method="auto"`` runs: the exact MILP on small instances."""
    pairs = int(arr.capable.sum())
    small = pairs <= EXACT_MAX_PAIRS and arr.num_tasks <= EXACT_MAX_TASKS
    return "exact" if small else "decomposition"


class HumanRobotKind(Kind):
    name = "human_robot"
    description = (
        "human-robot team task allocation and scheduling (lags, deadlines, shared workspaces)"
    )
    objectives = OBJECTIVES
    instance_model = HumanRobotInstance
    params_model = HumanRobotParams
    methods: ClassVar[Mapping[str, Method]] = {o.name: METHODS[o.name, "exact"] for o in OBJECTIVES}
    tables = TABLES
    details = (*DETAILS, *ROLLING_DETAILS)
    replanner: ClassVar[HumanRobotReplanner] = HumanRobotReplanner()
    """The hooks :func:`hetopt.rolling.rolling_schedule` calls."""

    def method_for(
        self, objective: str, instance: HumanRobotInstance, params: HumanRobotParams
    ) -> Method:
        """``params.method`` for ``objective`` (``auto``: :func:`auto_method`)."""
        arr = instance.arrays
        _needs_a_human(arr, objective)  # export builds through here too
        method = auto_method(arr) if params.method == "auto" else params.method
        if (objective, method) not in METHODS:  # an objective the kind does not offer
            return super().method_for(objective, instance, params)
        return METHODS[objective, method]

    def check(self, instance: HumanRobotInstance, objective: str, params: HumanRobotParams) -> None:
        """``max_human_workload`` needs a human (an invalid instance for it, naming
        ``agents``); ``fixed`` must name known tasks and agents able to do them (a usage
        error naming the parameter)."""
        arr = instance.arrays
        _needs_a_human(arr, objective)
        setup(arr, params)

    def verify(self, instance: HumanRobotInstance, result: Result) -> Verification:
        fixed = result.info.get("fixed") if result.info else None
        now = result.info.get("now_s") if result.info else None
        return V.verify(
            instance,
            result.objective,
            result.objective_value,
            result.tables["schedule"],
            {t: tuple(v) for t, v in fixed.items()} if fixed else None,
            now,
        )


def _needs_a_human(arr: TeamArrays, objective: str) -> None:
    if objective == "max_human_workload" and not arr.humans.any():
        types = ", ".join(sorted(set(arr.agent_types)))
        raise InstanceError(
            "objective 'max_human_workload' needs at least one agent of type 'human'; "
            f"the agents' types are: {types}",
            "agents",
        )


KIND = HumanRobotKind()


def replan(
    instance: HumanRobotInstance,
    previous: Result,
    now_s: float,
    objective: str | None = None,
    options: SolveOptions | None = None,
    overrides: Mapping[str, tuple[str, float]] | None = None,
    method: str = "auto",
) -> Result:
    """Re-solve with the past fixed: tasks that ``previous`` started before ``now_s``
    keep their agent and start; the others start at or after ``now_s``.

    ``overrides`` records deviations, e.g. ``{"t3": ("h1", 42.0)}`` when a human started
    ``t3`` at 42 s instead of the planned time (it counts as started). The solve goes
    through :func:`hetopt.pipeline.solve` (``fixed`` and ``now_s`` parameters).
    """
    sched = previous.tables["schedule"]
    fixed: dict[str, tuple[str, float]] = {
        str(t): (str(a), float(s))
        for t, a, s in zip(sched["task"], sched["agent"], sched["start_s"], strict=True)
        if s < now_s
    }
    for t, v in (overrides or {}).items():
        fixed[t] = (str(v[0]), float(v[1]))
    obj = KIND.resolve_objective(instance, objective or previous.objective)
    return KIND.solve(instance, obj, options, method=method, fixed=fixed, now_s=now_s)
