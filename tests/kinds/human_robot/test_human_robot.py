"""Tests of the human_robot kind: validation, formulation features, infeasibility
diagnosis, re-planning, FJSP known answers, decomposition, generator and CLI."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import hetopt
from hetopt import InstanceError, SolveOptions, Status, UsageError
from hetopt.cli import main
from hetopt.formats.fjsp import read_fjsp
from hetopt.kinds.human_robot import KIND, fjsp_to_instance, plot_gantt, replan
from hetopt.kinds.human_robot import formulations as F
from hetopt.kinds.human_robot.generate import generate

ROOT = Path(__file__).resolve().parents[3]
SMALL = ROOT / "instances" / "human_robot" / "small.json"
FJSP = ROOT / "instances" / "fjsp"
OPTS = SolveOptions(threads=1)


def small() -> dict[str, Any]:
    return json.loads(SMALL.read_text())


def two(tasks: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    d = {
        "kind": "human_robot",
        "agents": [{"id": "h1", "type": "human"}, {"id": "r1", "type": "robot"}],
        "tasks": tasks,
    }
    d.update(extra)
    return d


# ------------------------------------------------------------------ instance model
def test_example_and_duration_lookup() -> None:
    inst = hetopt.instance_from_dict(small())
    arr = inst.arrays
    i = arr.task_ids.index("drill")
    # r2 has its own duration (id overrides type), r1 the robot one, the human none
    assert arr.duration[i, arr.agent_ids.index("r2")] == 5
    assert arr.duration[i, arr.agent_ids.index("r1")] == 8
    assert not arr.capable[i, arr.agent_ids.index("h1")]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d["agents"].append({"id": "h1", "type": "robot"}), "agents[3].id"),
        (lambda d: d["tasks"].append(dict(d["tasks"][0])), "tasks[6].id"),
        (lambda d: d["tasks"][0]["duration_s"].update({"drone": 3}), "tasks[0].duration_s.drone"),
        (lambda d: d["tasks"][1].update({"duration_s": {}}), "tasks[1].duration_s"),
        (
            lambda d: d["tasks"][1].update({"duration_s": {"human": -1}}),
            "tasks[1].duration_s.human",
        ),
        (lambda d: d["precedence"][0].update({"after": "nope"}), "precedence[0].after"),
        (lambda d: d["precedence"][0].update({"after": "fetch"}), "precedence[0].after"),
        (lambda d: d["precedence"][1].update({"max_lag_s": 1}), "precedence[1].max_lag_s"),
        (lambda d: d["travel_s"].update({"moon": {"dock": 1}}), "travel_s.moon"),
        (lambda d: d["travel_s"]["shelf"].update({"mars": 1}), "travel_s.shelf.mars"),
        (lambda d: d["agents"].append({"id": "robot", "type": "robot"}), "agents[3].id"),
        (lambda d: d["tasks"][0].update({"deadline_s": -3}), "tasks[0].deadline_s"),
        (lambda d: d["tasks"][0].update({"colour": "red"}), "tasks[0].colour"),
    ],
)
def test_validation_names_the_field(change: Any, field: str) -> None:
    d = small()
    change(d)
    with pytest.raises(InstanceError) as exc:
        hetopt.instance_from_dict(d)
    # the path is in the message (InstanceError.field is None for cross-field checks: core)
    assert str(exc.value).startswith(field + ":") or exc.value.field == field, str(exc.value)


def test_cli_invalid_instance_exit_3(tmp_path: Path) -> None:
    d = small()
    d["precedence"][0]["before"] = "ghost"
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(d))
    r = CliRunner().invoke(main, ["solve", str(p)])
    assert r.exit_code == 3
    assert "precedence[0].before" in r.output and "Traceback" not in r.output


# ------------------------------------------------------------------ formulation features
def test_location_exclusivity_serialises_tasks() -> None:
    d = two(
        [
            {"id": "a", "duration_s": {"human": 4}, "location": "L"},
            {"id": "b", "duration_s": {"robot": 6}, "location": "L"},
        ]
    )
    r = hetopt.solve(d, "makespan", OPTS)
    assert r.status == Status.OPTIMAL and r.objective_value == pytest.approx(10)
    d["tasks"][1]["location"] = "M"
    assert hetopt.solve(d, "makespan", OPTS).objective_value == pytest.approx(6)


def test_travel_is_shortest_path_closed() -> None:
    d = two(
        [
            {"id": "a", "duration_s": {"human": 2}, "location": "L1"},
            {"id": "b", "duration_s": {"human": 3}, "location": "L3"},
            {"id": "c", "duration_s": {"human": 1}, "location": "L2", "release_s": 100},
        ],
        precedence=[{"before": "a", "after": "b"}],
        travel_s={"L1": {"L3": 50, "L2": 1}, "L2": {"L3": 2}},
    )
    r = hetopt.solve(d, "weighted_completion", OPTS)
    sched = r.schedule.set_index("task")
    # a ends at 2, travel L1 -> L3 is 3 via L2 (not 50)
    assert sched.loc["b", "start_s"] == pytest.approx(5)
    assert r.verification is not None and r.verification.ok


def test_id_duration_overrides_type_and_human_objective() -> None:
    d = two(
        [
            {"id": "a", "duration_s": {"human": 10, "h1": 3}},
            {"id": "b", "duration_s": {"human": 4, "robot": 9}},
        ]
    )
    r = hetopt.solve(d, "max_human_workload", OPTS)
    assert r.objective_value == pytest.approx(3)  # a on h1 (3 s), b on the robot
    d["agents"] = [{"id": "r1", "type": "robot"}]
    d["tasks"] = [{"id": "a", "duration_s": {"robot": 1}}]
    # an invalid instance for this objective (issue 21: was a usage error naming no field)
    with pytest.raises(InstanceError) as exc:
        hetopt.solve(d, "max_human_workload", OPTS)
    assert exc.value.field == "agents"


def test_big_m_comes_from_the_instance_horizon() -> None:
    inst = hetopt.instance_from_dict(small())
    m = KIND.build(inst, "makespan")
    plan = F.make_plan(inst.arrays)
    assert plan.horizon_s == pytest.approx(70.0)  # latest release 0 + sum(max d + 6 + lag)
    assert max(m.big_m.values()) <= m.horizon.value + max(m.travel.values()) + 1e-9
    inst2 = hetopt.instance_from_dict({**small(), "travel_s": {}})
    assert F.make_plan(inst2.arrays).horizon_s < plan.horizon_s


def test_every_task_in_schedule_and_locations_table() -> None:
    r = hetopt.solve(SMALL, options=OPTS)
    assert r.status == Status.OPTIMAL and r.objective_value == pytest.approx(25)
    assert sorted(r.schedule["task"]) == sorted(t["id"] for t in small()["tasks"])
    assert set(r.locations.columns) >= {"location", "task", "agent", "start_s", "end_s"}
    assert len(r.locations) == 6 and r.info["method"] == "exact"


def test_verifier_catches_violations() -> None:
    inst = hetopt.instance_from_dict(small())
    r = hetopt.solve(inst, options=OPTS)
    for col, task, delta in [("start_s", "label", -3.0), ("end_s", "pack", 1.0)]:
        bad = r.schedule.copy()
        bad.loc[bad["task"] == task, col] += delta
        res = hetopt.Result(**{**r.__dict__, "tables": {**r.tables, "schedule": bad}})
        assert not KIND.verify(inst, res).ok
    bad = r.schedule.copy()
    bad.loc[bad["task"] == "fasten", "agent"] = "r9"
    res = hetopt.Result(**{**r.__dict__, "tables": {**r.tables, "schedule": bad}})
    assert not KIND.verify(inst, res).ok


# ------------------------------------------------------------------ infeasibility
def test_cyclic_lags_infeasible_with_cycle_conflict() -> None:
    """RCPSP/max semantics: cyclic lags are fine when consistent, infeasible otherwise."""
    d = two(
        [
            {"id": "a", "duration_s": {"human": 5}},
            {"id": "b", "duration_s": {"robot": 5}},
        ],
        precedence=[
            {"before": "a", "after": "b", "min_lag_s": 2},
            {"before": "b", "after": "a", "min_lag_s": -20, "max_lag_s": -13},
        ],
    )
    # s_b >= s_a + 7 and s_b + 5 - 20 <= s_a <= s_b + 5 - 13: best s_a = 0, s_b = 8
    r = hetopt.solve(d, "makespan", OPTS)
    assert r.status == Status.OPTIMAL and r.objective_value == pytest.approx(13)
    # s_b = s_a + 7 exactly, and s_a >= s_b + 5 - 3: a positive cycle
    d["precedence"][0]["max_lag_s"] = 2
    d["precedence"][1] = {"before": "b", "after": "a", "min_lag_s": -3}
    r = hetopt.solve(d, "makespan", OPTS)
    assert r.status == Status.INFEASIBLE
    assert set(r.info["conflict"]) == {"precedence[0].min_lag_s", "precedence[1].min_lag_s"}
    assert list(r.tables["conflict"].columns) == ["constraint", "description"]


def test_resource_conflict_is_diagnosed_and_irreducible() -> None:
    d = small()
    d["precedence"] = []
    d["tasks"][1]["deadline_s"] = 5  # inspect (human, 5 s) at the bench
    d["tasks"][2]["deadline_s"] = 5  # drill (>= 5 s) at the bench too
    r = hetopt.solve(d, options=OPTS)
    assert r.status == Status.INFEASIBLE
    conflict = r.info["conflict"]
    assert set(conflict) == {"tasks[1].deadline_s", "tasks[2].deadline_s"}
    assert r.info["conflict_minimal"] is True
    for name in conflict:  # irreducible: dropping any member makes it feasible
        e = copy.deepcopy(d)
        del e["tasks"][int(name[6])]["deadline_s"]
        assert hetopt.solve(e, options=OPTS).status == Status.OPTIMAL


def test_cli_infeasible_exit_4(tmp_path: Path) -> None:
    d = small()
    d["tasks"][3]["deadline_s"] = 3
    p = tmp_path / "inf.json"
    p.write_text(json.dumps(d))
    r = CliRunner().invoke(main, ["solve", str(p), "--table", "conflict"])
    assert r.exit_code == 4, r.output
    assert "tasks[3].deadline_s" in r.output


# ------------------------------------------------------------------ re-planning
def test_replan_keeps_started_tasks() -> None:
    inst = hetopt.instance_from_dict(small())
    first = hetopt.solve(inst, options=OPTS)
    plan = first.schedule.set_index("task")
    # the human starts 'fasten' 2 s late
    late = float(plan.loc["fasten", "start_s"]) + 2
    again = replan(inst, first, now_s=late, options=OPTS, overrides={"fasten": ("h1", late)})
    assert again.status == Status.OPTIMAL and again.verification.ok
    new = again.schedule.set_index("task")
    for t in plan.index:
        if plan.loc[t, "start_s"] < late and t != "fasten":
            assert new.loc[t, "start_s"] == pytest.approx(plan.loc[t, "start_s"])
            assert new.loc[t, "agent"] == plan.loc[t, "agent"]
        elif t != "fasten":
            assert new.loc[t, "start_s"] >= late - 1e-9
    assert new.loc["fasten", "start_s"] == pytest.approx(late)
    assert again.objective_value >= first.objective_value


def test_fixed_param_errors() -> None:
    for bad in ({"ghost": ["h1", 0]}, {"inspect": ["r1", 0]}, {"inspect": ["h1", -1]}):
        with pytest.raises(UsageError):
            hetopt.solve(SMALL, options=OPTS, fixed=bad)


# ------------------------------------------------------------------ FJSP known answers
@pytest.mark.parametrize(
    ("path", "optimum"),
    [("kacem/k1.txt", 11), ("fattahi/sfjs01.txt", 66), ("fattahi/sfjs02.txt", 107)],
)
def test_fjsp_known_optimum(path: str, optimum: int) -> None:
    """Optima from instances/fjsp/instances.json (SchedulingLab, MIT; Kacem 2002,
    Fattahi 2007)."""
    inst = fjsp_to_instance(read_fjsp(FJSP / path))
    r = hetopt.solve(inst, options=OPTS, method="exact")
    assert r.status == Status.OPTIMAL and r.verification.ok
    assert r.objective_value == pytest.approx(optimum)


@pytest.mark.slow
def test_fjsp_kacem_k3() -> None:
    inst = fjsp_to_instance(read_fjsp(FJSP / "kacem" / "k3.txt"))
    r = hetopt.solve(inst, options=OPTS, method="exact")
    assert r.status == Status.OPTIMAL and r.objective_value == pytest.approx(7)


# ------------------------------------------------------------------ decomposition
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("objective", ["makespan", "weighted_completion", "max_human_workload"])
def test_decomposition_brackets_the_exact_optimum(seed: int, objective: str) -> None:
    inst = generate(7, 3, seed)
    exact = hetopt.solve(inst, objective, OPTS, method="exact")
    dec = hetopt.solve(inst, objective, OPTS, method="decomposition")
    assert exact.status == Status.OPTIMAL
    assert dec.status in (Status.OPTIMAL, Status.FEASIBLE) and dec.verification.ok
    assert dec.info["method"] == "decomposition"
    assert dec.bound <= exact.objective_value + 1e-6 <= dec.objective_value + 2e-6
    assert dec.gap == pytest.approx((dec.objective_value - dec.bound) / dec.objective_value)


def test_auto_picks_decomposition_for_large() -> None:
    inst = generate(20, 5, 1)
    r = hetopt.solve(inst, "makespan", OPTS.replace(time_limit_s=4))
    assert r.info["method"] == "decomposition" and r.verification.ok
    assert len(r.schedule) == 20


# ------------------------------------------------------------------ generator, plot, CLI
def test_generator_is_seeded_and_valid() -> None:
    a, b, c = generate(10, 4, 3), generate(10, 4, 3), generate(10, 4, 4)
    assert a.to_dict() == b.to_dict() and a.to_dict() != c.to_dict()
    r = CliRunner().invoke(main, ["generate", "human-robot", "--tasks", "5", "--agents", "2"])
    assert r.exit_code == 0
    assert hetopt.instance_from_dict(json.loads(r.output)).kind == "human_robot"


def test_plot_gantt() -> None:
    import matplotlib

    matplotlib.use("Agg")
    r = hetopt.solve(SMALL, options=OPTS)
    ax = plot_gantt(r)
    assert len(ax.get_yticklabels()) == 3
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {"human", "robot"}


# ------------------------------------------------------------------ shipped instances
ANSWERS = json.loads((SMALL.parent / "answers.json").read_text())


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_shipped_instances_and_answers(name: str) -> None:
    for objective, expected in ANSWERS[name].items():
        if objective == "infeasible":
            r = hetopt.solve(SMALL.parent / name, options=OPTS)
            assert r.status == Status.INFEASIBLE
            assert sorted(r.info["conflict"]) == sorted(expected)
            continue
        r = hetopt.solve(SMALL.parent / name, objective, OPTS)
        assert r.status == Status.OPTIMAL and r.verification.ok
        assert r.objective_value == pytest.approx(expected)


def test_cli_params_method_and_fixed(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    args = ["solve", str(SMALL), "-p", "method=decomposition", "-o", str(out)]
    assert CliRunner().invoke(main, args).exit_code == 0
    assert json.loads(out.read_text())["info"]["method"] == "decomposition"
    args = ["solve", str(SMALL), "-p", 'fixed={"inspect": ["h1", 4]}', "-o", str(out)]
    assert CliRunner().invoke(main, args).exit_code == 0
    rows = json.loads(out.read_text())["tables"]["schedule"]
    assert [r["start_s"] for r in rows if r["task"] == "inspect"] == [4]
    args = ["solve", str(SMALL), "-p", 'fixed={"inspect": ["r1", 4]}']
    assert CliRunner().invoke(main, args).exit_code == 2


def test_replan_with_decomposition_keeps_started_tasks() -> None:
    inst = generate(20, 5, 2)
    opts = OPTS.replace(time_limit_s=4)
    first = hetopt.solve(inst, "makespan", opts, method="decomposition")
    assert first.verification.ok
    now = float(first.schedule["start_s"].median())
    again = replan(inst, first, now_s=now, options=opts, method="decomposition")
    assert again.status in (Status.OPTIMAL, Status.FEASIBLE) and again.verification.ok
    old = first.schedule.set_index("task")
    new = again.schedule.set_index("task")
    for t in old.index:
        if old.loc[t, "start_s"] < now:
            assert new.loc[t, "start_s"] == pytest.approx(old.loc[t, "start_s"])
            assert new.loc[t, "agent"] == old.loc[t, "agent"]
        else:
            assert new.loc[t, "start_s"] >= now - 1e-9


def test_time_limit_status_is_honest() -> None:
    inst = generate(15, 5, 3)
    r = hetopt.solve(inst, "weighted_completion", OPTS.replace(time_limit_s=0.2), method="exact")
    assert r.status in (Status.OPTIMAL, Status.FEASIBLE, Status.NO_SOLUTION)
    if r.status == Status.FEASIBLE:
        assert r.verification.ok and r.bound is not None and r.bound <= r.objective_value
        assert r.gap == pytest.approx((r.objective_value - r.bound) / r.objective_value)
    if r.status == Status.OPTIMAL:
        assert r.gap is not None and r.gap <= 1e-4
