"""replan(..., delays=...) and plan_diff of the robot planner (issue 20)."""

from __future__ import annotations

import pytest

import hetopt
from hetopt.kinds.human_robot import plan_diff, replan

SMALL = hetopt.examples.path("human_robot/small.json")


def test_delay_of_a_started_task_fixes_it_later() -> None:
    inst = hetopt.read_instance(SMALL)
    first = hetopt.solve(inst, "makespan")
    sched = first.schedule.set_index("task")
    task = str(sched["start_s"].idxmin())
    now = float(sched.loc[task, "start_s"]) + 0.5
    again = replan(inst, first, now, delays={task: 3.0})
    assert again.ok
    row = again.schedule.set_index("task").loc[task]
    assert row["agent"] == sched.loc[task, "agent"]
    assert row["start_s"] == pytest.approx(sched.loc[task, "start_s"] + 3.0)
    diff = plan_diff(first, again)
    assert list(diff.columns) == [
        "task",
        "agent_before",
        "start_before_s",
        "agent_after",
        "start_after_s",
        "shift_s",
        "reassigned",
    ]
    assert diff.set_index("task").loc[task, "shift_s"] == pytest.approx(3.0)
    assert again.objective_value >= first.objective_value - 1e-9


def test_delay_of_a_later_task_is_a_release_time() -> None:
    inst = hetopt.read_instance(SMALL)
    first = hetopt.solve(inst, "makespan")
    sched = first.schedule.set_index("task")
    task = str(sched["start_s"].idxmax())
    planned = float(sched.loc[task, "start_s"])
    again = replan(inst, first, 0.0, delays={task: 5.0})
    assert again.ok
    assert again.schedule.set_index("task").loc[task, "start_s"] >= planned + 5.0 - 1e-9
    assert set(plan_diff(first, again)["task"]) == set(sched.index)


def test_bad_delays_name_the_task() -> None:
    inst = hetopt.read_instance(SMALL)
    first = hetopt.solve(inst, "makespan")
    with pytest.raises(hetopt.UsageError, match="no task 'nope'"):
        replan(inst, first, 1.0, delays={"nope": 1.0})
    task = str(first.schedule["task"].iloc[0])
    with pytest.raises(hetopt.UsageError, match=">= 0"):
        replan(inst, first, 1.0, delays={task: -1.0})
