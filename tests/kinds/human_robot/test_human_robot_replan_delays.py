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
    with pytest.raises(hetopt.UsageError, match="from 0 to 1e"):
        replan(inst, first, 1.0, delays={task: -1.0})


@pytest.mark.parametrize("delay", [True, 1e300, float("nan"), "3", -1])
def test_a_delay_that_is_no_time_is_refused(delay: object) -> None:
    """``True`` was a delay of 1 s, and 1e300 s made the re-plan "infeasible"."""
    first = hetopt.solve(SMALL, "makespan")
    task = str(first.schedule["task"].iloc[0])
    with pytest.raises(
        hetopt.UsageError, match=rf"delays\['{task}'\]: must be a number of seconds"
    ):
        replan(first, 1.0, delays={task: delay})


def test_numpy_delays_are_numbers() -> None:
    import numpy as np

    first = hetopt.solve(SMALL, "makespan")
    task = str(first.schedule["task"].iloc[-1])
    a = replan(first, 0.0, delays={task: np.int64(5)})
    b = replan(first, 0.0, delays={task: 5.0})
    assert a.objective_value == b.objective_value and a.ok


@pytest.mark.parametrize("override", [3.0, "h1", ("h1", 1.0, 2)])
def test_an_override_that_is_no_agent_and_start_is_a_usage_error(override: object) -> None:
    """A float for ``(agent, start_s)`` raised ``TypeError: 'float' object is not
    subscriptable``."""
    first = hetopt.solve(SMALL, "makespan")
    task = str(first.schedule["task"].iloc[0])
    with pytest.raises(hetopt.UsageError, match=r"expected \(agent, start_s\)"):
        replan(first, 5.0, overrides={task: override})


# ------------------------------------------------ result-first form (issue 20)
def test_result_first_form_equals_the_instance_first_form() -> None:
    inst = hetopt.read_instance(SMALL)
    first = hetopt.solve(inst, "makespan")
    assert first.instance is not None  # the result carries what it solved
    sched = first.schedule.set_index("task")
    task = str(sched["start_s"].idxmin())
    now = float(sched.loc[task, "start_s"]) + 0.5
    a = replan(first, now, delays={task: 3.0})
    b = replan(inst, first, now, delays={task: 3.0})
    c = replan(first, now_s=now, delays={task: 3.0})
    assert a.ok and b.ok and c.ok
    assert a.objective_value == pytest.approx(b.objective_value, rel=1e-9)
    assert a.schedule.equals(b.schedule) and a.schedule.equals(c.schedule)
    # chained: the re-plan's result carries the instance it solved
    assert a.instance is not None
    d = replan(a, now + 1.0)
    assert d.ok
    kept = a.schedule[a.schedule["start_s"] < now + 1.0].set_index("task")
    after = d.schedule.set_index("task").loc[kept.index]
    assert (after["agent"] == kept["agent"]).all()
    assert after["start_s"].to_numpy() == pytest.approx(kept["start_s"].to_numpy())


def test_a_result_read_back_from_json_needs_its_instance() -> None:
    inst = hetopt.read_instance(SMALL)
    first = hetopt.solve(inst, "makespan")
    back = hetopt.Result.from_json(first.to_json())
    assert back.instance is None
    with pytest.raises(hetopt.UsageError, match="pass instance="):
        replan(back, 1.0)
    again = replan(back, 1.0, instance=inst)
    assert again.objective_value == pytest.approx(replan(first, 1.0).objective_value)


def test_the_instance_is_not_pickled() -> None:
    import pickle

    first = hetopt.solve(hetopt.read_instance(SMALL), "makespan")
    back = pickle.loads(pickle.dumps(first))
    assert back.instance is None
    assert back.objective_value == first.objective_value
    assert back.schedule.equals(first.schedule)


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((), {}, "give now_s once"),
        ((1.0,), {"now_s": 2.0}, "give now_s once"),
        (("soon",), {}, "finite number"),
        ((float("nan"),), {}, "finite number"),
    ],
)
def test_bad_calls_say_what_is_expected(args, kwargs, match) -> None:
    first = hetopt.solve(hetopt.read_instance(SMALL), "makespan")
    with pytest.raises(hetopt.UsageError, match=match):
        replan(first, *args, **kwargs)


def test_instance_first_form_needs_a_result() -> None:
    inst = hetopt.read_instance(SMALL)
    with pytest.raises(hetopt.UsageError, match="must be a Result"):
        replan(inst, 1.0)
