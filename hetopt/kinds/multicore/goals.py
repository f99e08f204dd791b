"""What each ``multicore`` objective asks of the model, and the formulations an instance
cannot use (a light module: ``hetopt validate`` checks them without Pyomo)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from ...errors import UsageError
from .data import MulticoreArrays
from .heuristics import Schedule, best_list_schedule, best_weighted_schedule


@dataclass(frozen=True)
class Goal:
    """What an objective asks of the model."""

    minimise: Literal["makespan", "energy", "weighted_completion"]
    """The variable (or sum) ``m.obj`` minimises."""
    list_horizon: bool
    """Without an energy budget, no optimal schedule is longer than the list schedule."""
    whole_makespan: bool
    """With whole-number durations the optimum is a whole number of seconds."""
    whole_weighted: bool = False
    """With whole-number times and weights the optimum is a whole number."""
    assignment_exact: bool = True
    """Without precedences, releases and windows the assignment model is exact."""
    user_units: bool = False
    """Times in seconds (``t_ref = 1``), so the objective is in user units; the energy
    stays divided by ``p_ref`` (it is not in the objective)."""
    heuristic: Callable[[MulticoreArrays], Schedule | None] = best_list_schedule
    """The list schedule that sets the scales, the horizon and the warm start."""


GOALS: dict[str, Goal] = {
    "makespan": Goal("makespan", list_horizon=True, whole_makespan=True),
    "energy": Goal("energy", list_horizon=False, whole_makespan=False),
    "pareto": Goal("makespan", list_horizon=False, whole_makespan=False),
    "weighted_completion": Goal(
        "weighted_completion",
        list_horizon=False,
        whole_makespan=False,
        whole_weighted=True,
        assignment_exact=False,
        user_units=True,
        heuristic=best_weighted_schedule,
    ),
}
"""Objective -> what its model minimises and which shortcuts are exact for it."""


def check_formulation(arr: MulticoreArrays, formulation: str, objective: str) -> None:
    """Refuse (:class:`~hetopt.UsageError`) a formulation the instance cannot use."""
    if formulation == "assignment" and not (
        GOALS[objective].assignment_exact and not arr.sequencing
    ):
        raise UsageError(_no_assignment(arr, objective))
    if formulation == "time_indexed" and not arr.integer_durations:
        raise UsageError("formulation 'time_indexed' needs whole-number durations")
    if formulation == "time_indexed" and not arr.integer_times:
        raise UsageError("formulation 'time_indexed' needs whole-number releases and window bounds")


def _order_reason(arr: MulticoreArrays, objective: str) -> str:
    """Why the tasks need an order (the assignment model does not apply)."""
    if arr.has_dag:
        return "this instance has predecessors"
    if not GOALS[objective].assignment_exact:
        return f"objective {objective} orders tasks"
    return "tasks have release times or availability windows"


def _no_assignment(arr: MulticoreArrays, objective: str) -> str:
    """Why the assignment model does not fit (a usage error message)."""
    if arr.has_dag:
        return "formulation 'assignment' is for independent tasks; this instance has predecessors"
    if not GOALS[objective].assignment_exact:
        return f"formulation 'assignment' cannot order tasks, which objective {objective} needs"
    return (
        "formulation 'assignment' is for tasks free to start at 0; this instance has "
        "release times or availability windows"
    )
