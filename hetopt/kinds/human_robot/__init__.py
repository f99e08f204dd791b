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

import logging
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

from ...errors import InstanceError
from ...instance import MAX_ABS
from ...options import SolveOptions
from ...result import Result, Verification
from ...scalars import real_number
from .._shared.choice import CHOICE_DETAIL, Choice, chosen
from ..base import Kind, LazyMethod, MethodEntry, MethodTable, Objective, UsageError
from .data import Agent, HumanRobotInstance, Precedence, Task, TeamArrays
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
    "plan_diff",
    "plot_gantt",
    "replan",
    "schedule_tables",
    "start_order",
]

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

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

METHODS = MethodTable(
    {
        **{
            (o.name, "exact"): LazyMethod("hetopt.kinds.human_robot.exact:Exact", o.name)
            for o in OBJECTIVES
        },
        **{
            (o.name, "decomposition"): LazyMethod(
                "hetopt.kinds.human_robot.decomposition:Decomposition", o.name
            )
            for o in OBJECTIVES
        },
    }
)
"""(objective, method) -> the method object (imported on lookup; ``entry`` does not)."""


def auto_method(arr: TeamArrays) -> str:
    """What ``method="auto"`` runs: the exact MILP on small instances."""
    return auto_choice(arr)[0]


def auto_choice(arr: TeamArrays) -> tuple[str, Choice]:
    """What ``method="auto"`` runs and why (reported as ``info["method_choice"]``)."""
    pairs = int(arr.capable.sum())
    tasks = arr.num_tasks
    size = f"{tasks} tasks, {pairs} capable task-agent pairs"
    limits = f"exact up to {EXACT_MAX_TASKS} tasks and {EXACT_MAX_PAIRS} pairs"
    if pairs <= EXACT_MAX_PAIRS and tasks <= EXACT_MAX_TASKS:
        return "exact", Choice(f"auto chose the exact MILP ({size}; {limits})")
    return "decomposition", Choice(
        f"auto chose decomposition (allocate, then sequence: feasible, no optimality "
        f"proof) for {size} ({limits}); method='exact' runs the MILP",
        fallback=True,
    )


class HumanRobotKind(Kind):
    name = "human_robot"
    description = (
        "human-robot team task allocation and scheduling (lags, deadlines, shared workspaces)"
    )
    objectives = OBJECTIVES
    instance_model = HumanRobotInstance
    params_model = HumanRobotParams
    methods = {o.name: METHODS.entry((o.name, "exact")) for o in OBJECTIVES}
    tables = TABLES
    details = (*DETAILS, *ROLLING_DETAILS, CHOICE_DETAIL)
    replanner: ClassVar[HumanRobotReplanner] = HumanRobotReplanner()
    """The hooks :func:`hetopt.rolling.rolling_schedule` calls."""

    def choose_method(
        self, objective: str, instance: HumanRobotInstance, params: HumanRobotParams
    ) -> MethodEntry:
        """``params.method`` for ``objective`` (``auto``: :func:`auto_method`)."""
        arr = instance.arrays
        _needs_a_human(arr, objective)  # export builds through here too
        if params.method == "auto":
            method, choice = auto_choice(arr)
        else:
            method, choice = params.method, None
        if (objective, method) not in METHODS:  # an objective the kind does not offer
            return super().choose_method(objective, instance, params)
        entry = METHODS.entry((objective, method))
        if choice is None:
            return entry
        return (
            entry.then(chosen, choice) if isinstance(entry, LazyMethod) else chosen(entry, choice)
        )

    def check(self, instance: HumanRobotInstance, objective: str, params: HumanRobotParams) -> None:
        """``max_human_workload`` needs a human (an invalid instance for it, naming
        ``agents``); ``fixed`` must name known tasks and agents able to do them (a usage
        error naming the parameter)."""
        arr = instance.arrays
        _needs_a_human(arr, objective)
        setup(arr, params)

    def verify(self, instance: HumanRobotInstance, result: Result) -> Verification:
        from . import verify as V

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
    previous: Result | HumanRobotInstance,
    *args: Result | float,
    now_s: float | None = None,
    objective: str | None = None,
    options: SolveOptions | None = None,
    overrides: Mapping[str, tuple[str, float]] | None = None,
    method: str = "auto",
    delays: Mapping[str, float] | None = None,
    instance: HumanRobotInstance | None = None,
) -> Result:
    """Re-solve with the past fixed: tasks that ``previous`` started before ``now_s``
    keep their agent and start; the others start at or after ``now_s``.

    Call it as ``replan(result, now_s, delays=...)``: the result of
    :func:`hetopt.solve` carries the instance it solved (:attr:`hetopt.Result.instance`).
    Pass ``instance=`` for a result without one (read back from JSON), or to re-plan
    against a changed instance; the older form ``replan(instance, result, now_s)`` is
    accepted too.

    ``overrides`` records deviations, e.g. ``{"t3": ("h1", 42.0)}`` when a human started
    ``t3`` at 42 s instead of the planned time (it counts as started). ``delays`` maps a
    task to the seconds it starts later than planned, e.g. ``{"drill": 8.0}``: a task
    planned to start before ``now_s`` counts as started at its planned start plus the
    delay, on its planned agent; a task planned later cannot start before that time (its
    release time). :func:`plan_diff` shows what changed. The solve goes through
    :func:`hetopt.pipeline.solve` (``fixed`` and ``now_s`` parameters).

    Raises
    ------
    UsageError
        Without an instance (neither on the result nor given), for a task in ``delays``
        that is not in the previous schedule, or for a negative or non-finite delay.
    """
    given = list(args) + ([] if now_s is None else [now_s])
    if isinstance(previous, HumanRobotInstance):  # the older form: replan(instance, result, now_s)
        if instance is not None:
            raise UsageError("replan(instance, result, now_s): instance given twice")
        if not given or not isinstance(given[0], Result):
            raise UsageError(
                "replan(instance, result, now_s): the second argument must be a Result"
            )
        instance = previous
        first: object = given.pop(0)
    else:
        first = previous
    if len(given) != 1:
        raise UsageError(
            "replan(result, now_s, ...): give now_s once; the other arguments are keywords"
        )
    when = given[0]
    if not isinstance(first, Result):
        raise UsageError(f"replan: expected a Result, got {type(first).__name__}")
    previous = first
    if isinstance(when, Result) or not isinstance(when, int | float) or not math.isfinite(when):
        raise UsageError(f"replan: now_s must be a finite number of seconds, got {when!r}")
    now_s = float(when)
    if instance is None:
        instance = previous.instance
    if not isinstance(instance, HumanRobotInstance):
        raise UsageError(
            "replan: the result does not carry its human_robot instance (it was read "
            "back from JSON or sent between processes): pass instance="
        )
    sched = previous.tables["schedule"]
    planned = {
        str(t): (str(a), float(s))
        for t, a, s in zip(sched["task"], sched["agent"], sched["start_s"], strict=True)
    }
    fixed = {t: v for t, v in planned.items() if v[1] < now_s}
    later: dict[str, float] = {}
    for t, d in (delays or {}).items():
        if t not in planned:
            raise UsageError(f"delays: no task {t!r} in the previous schedule")
        delay = real_number(d)
        if delay is None or not (math.isfinite(delay) and 0 <= delay <= MAX_ABS):
            raise UsageError(
                f"delays[{t!r}]: must be a number of seconds from 0 to {MAX_ABS:g}, got {d!r}"
            )
        agent, start = planned[t]
        if start < now_s:
            fixed[t] = (agent, start + float(delay))
        else:
            later[t] = start + float(delay)
    for t, v in (overrides or {}).items():
        if isinstance(v, str | bytes) or not (isinstance(v, Sequence) and len(v) == 2):
            raise UsageError(f"overrides[{t!r}]: expected (agent, start_s), got {v!r}")
        fixed[t] = (v[0], v[1])  # (checked with the other fixed starts by the solve)
    if later:
        data = instance.to_dict()
        for task in data["tasks"]:
            if task["id"] in later:
                task["release_s"] = max(float(task.get("release_s") or 0.0), later[task["id"]])
        instance = type(instance).from_dict(data)
    obj = KIND.resolve_objective(instance, objective or previous.objective)
    return KIND.solve(instance, obj, options, method=method, fixed=fixed, now_s=now_s)


def plan_diff(before: Result, after: Result) -> pd.DataFrame:
    """What a re-plan changed, one row per task of either schedule: ``agent_before``,
    ``agent_after``, ``start_before_s``, ``start_after_s``, ``shift_s`` (after - before),
    ``reassigned`` (the agent changed), in the order of ``before``'s schedule."""
    cols = ["task", "agent", "start_s"]
    a = before.tables["schedule"][cols]
    b = after.tables["schedule"][cols]
    diff = a.merge(b, on="task", how="outer", suffixes=("_before", "_after"), sort=False)
    diff = diff.rename(
        columns={"start_s_before": "start_before_s", "start_s_after": "start_after_s"}
    )
    diff["shift_s"] = diff["start_after_s"] - diff["start_before_s"]
    diff["reassigned"] = diff["agent_before"] != diff["agent_after"]
    return diff.reset_index(drop=True)
