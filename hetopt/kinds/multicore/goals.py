"""What each ``multicore`` objective asks of the model, and the formulations an instance
cannot use (a light module: ``hetopt validate`` checks them without Pyomo)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ...errors import InstanceError, UsageError
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


MAX_TIME_RATIO = 1e9
"""Largest ratio of the latest time an instance names (a release, a window's end, the
deadline, a duration) to its shortest positive duration. The MILPs measure time in one
unit, so a horizon that many times the shortest task leaves that task below HiGHS's
tolerances: the Decima example with one release made 1e11 s (ratio 1e11) ended
"HiGHS run failed (Solve error)", at 1e10 it solved; 1e9 leaves a tenfold margin
(tests/kinds/multicore/test_multicore_hardening.py)."""


def check_time_range(inst: Any) -> None:
    """Times within :data:`MAX_TIME_RATIO` of the shortest duration; the error names the
    outlier: the latest time's field or the shortest duration's, whichever is farther
    from the durations' median (log scale)."""
    import math

    arr = inst.arrays
    durs = arr.dur[arr.eligible]
    durs = durs[durs > 0]
    if len(durs) == 0:
        return
    shortest = float(durs.min())
    latest, field = 0.0, ""
    if len(arr.release) and float(arr.release.max()) > 0:
        i = int(np.argmax(arr.release))
        latest, field = float(arr.release[i]), f"tasks[{i}].release_s"
    for c, w in enumerate(arr.windows):
        if w is not None and len(w) and float(w[:, 1].max()) > latest:
            k = int(np.argmax(w[:, 1]))
            latest, field = float(w[k, 1]), f"cores[{c}].windows[{k}].end_s"
    if arr.deadline is not None and arr.deadline > latest:
        latest, field = float(arr.deadline), "deadline_s"
    longest = float(durs.max())
    if longest > latest:
        latest, field = longest, _duration_field(inst, longest)
    ratio = latest / shortest
    if ratio <= MAX_TIME_RATIO:
        return
    med = float(np.median(np.log(durs)))
    if med - math.log(shortest) > math.log(latest) - med:
        field, what = _duration_field(inst, shortest), f"a duration of {shortest:g} s"
    else:
        what = f"{latest:g} s"
    raise InstanceError(
        f"{what}: the instance's times span {ratio:.3g} times its shortest duration "
        f"({shortest:g} s); the schedule's MILP cannot honour spans above "
        f"{MAX_TIME_RATIO:g} in double precision (the short tasks fall below the solver's "
        "tolerances): bring the times closer together",
        field,
    )


def _duration_field(inst: Any, value: float) -> str:
    """The field of a task's duration equal to ``value``."""
    for i, task in enumerate(inst.tasks):
        for key, v in task.duration_s.items():
            if v == value:
                return f"tasks[{i}].duration_s.{key}"
    return "tasks"  # pragma: no cover - the value comes from these durations
