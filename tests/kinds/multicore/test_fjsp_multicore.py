"""FJSP benchmarks as ``multicore`` instances: conversion, CLI and published optima.

Optima from ``instances/fjsp/instances.json`` (SchedulingLab/fjsp-instances, MIT):
Kacem k1 = 11, k2 = 11, k3 = 7; Fattahi sfjs01 = 66, sfjs02 = 107, sfjs09 = 210;
Brandimarte mk01 = 40.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import hetopt
from hetopt import SolveOptions, Status
from hetopt.cli import main
from hetopt.formats.fjsp import read_fjsp
from hetopt.kinds.multicore import MulticoreInstance, fjsp_to_multicore

FJSP = Path(__file__).resolve().parents[3] / "instances" / "fjsp"
OPTS = SolveOptions(threads=1, time_limit_s=120)


def _published(name: str) -> int:
    data = json.loads((FJSP / "instances.json").read_text())
    return next(e["optimum"] for e in data if e["name"] == name)


def _instance(path: str) -> MulticoreInstance:
    return MulticoreInstance.from_dict(fjsp_to_multicore(read_fjsp(FJSP / path)))


def test_conversion_structure() -> None:
    data = read_fjsp(FJSP / "kacem/k1.txt")
    inst = _instance("kacem/k1.txt")
    arr = inst.arrays
    assert arr.num_cores == data.num_machines == 5
    assert arr.num_tasks == data.num_operations == 12
    assert len(set(arr.core_types)) == arr.num_cores  # every machine its own type
    # job = chain: one edge per operation after the first
    assert len(arr.edges) == data.num_operations - len(data.jobs)
    assert arr.dur[0].tolist() == [float(data.jobs[0][0][k]) for k in range(5)]


def test_operations_view_matches_jobs() -> None:
    """The reader's neutral view (what every converter maps) is the jobs, flattened."""
    data = read_fjsp(FJSP / "kacem/k1.txt")
    ops = data.operations
    assert len(ops) == data.num_operations and list(data.machines) == list(range(5))
    k = 0
    for j, job in enumerate(data.jobs):
        for o, times in enumerate(job):
            op = ops[k]
            assert (op.job, op.position) == (j, o)
            assert op.times == tuple(sorted(times.items()))
            assert op.predecessor == ((j, o - 1) if o else None)
            k += 1


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("kacem/k1.txt", "k1"),
        ("kacem/k3.txt", "k3"),
        ("fattahi/sfjs01.txt", "sfjs01"),
        ("fattahi/sfjs02.txt", "sfjs02"),
        ("fattahi/sfjs09.txt", "sfjs09"),
    ],
)
def test_published_optima(path: str, name: str) -> None:
    expected = _published(name)
    r = hetopt.solve(_instance(path), "makespan", OPTS)
    assert r.status == Status.OPTIMAL
    assert r.objective_value == expected
    assert r.bound == expected
    assert r.ok and len(r.tables["schedule"]) == _instance(path).arrays.num_tasks


@pytest.mark.parametrize("formulation", ["disjunctive", "time_indexed"])
def test_both_dag_formulations_on_kacem_k1(formulation: str) -> None:
    r = hetopt.solve(_instance("kacem/k1.txt"), "makespan", OPTS, formulation=formulation)
    assert r.status == Status.OPTIMAL and r.objective_value == 11 and r.ok


def test_sfjs09_disjunctive() -> None:
    r = hetopt.solve(_instance("fattahi/sfjs09.txt"), "makespan", OPTS, formulation="disjunctive")
    assert r.status == Status.OPTIMAL and r.objective_value == 210 and r.ok


@pytest.mark.slow
def test_kacem_k2_time_indexed() -> None:
    r = hetopt.solve(_instance("kacem/k2.txt"), "makespan", OPTS)
    assert r.status == Status.OPTIMAL and r.objective_value == _published("k2")


@pytest.mark.slow
def test_brandimarte_mk01_bound_and_incumbent() -> None:
    r = hetopt.solve(
        _instance("brandimarte/mk01.txt"), "makespan", SolveOptions(threads=1, time_limit_s=300)
    )
    assert r.ok
    if r.status == Status.OPTIMAL:
        assert r.objective_value == 40
    else:
        assert r.status == Status.FEASIBLE
        assert r.bound is not None and r.bound <= 40 <= r.objective_value


# ----------------------------------------------------------------------------- CLI
def test_cli_convert_then_solve(tmp_path: Path) -> None:
    out = tmp_path / "k1.json"
    runner = CliRunner()
    res = runner.invoke(main, ["convert", "fjsp", str(FJSP / "kacem/k1.txt"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["kind"] == "multicore" and len(data["tasks"]) == 12
    res = runner.invoke(main, ["solve", str(out), "--threads", "1", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["objective_value"] == 11


def test_cli_convert_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(main, ["convert", "fjsp", str(tmp_path / "missing.txt")])
    assert res.exit_code == 3
    bad = tmp_path / "bad.txt"
    bad.write_text("2 2\n1 1 1 x\n")
    res = runner.invoke(main, ["convert", "fjsp", str(bad)])
    assert res.exit_code == 3 and "Traceback" not in res.output


def test_cli_convert_human_robot(tmp_path: Path) -> None:
    """Exit 2 with a clear message when the human_robot converter is missing, else a
    valid human_robot instance."""
    import importlib.util

    out = tmp_path / "k1h.json"
    res = CliRunner().invoke(
        main,
        ["convert", "fjsp", str(FJSP / "kacem/k1.txt"), "--kind", "human_robot", "-o", str(out)],
    )
    try:
        present = importlib.util.find_spec("hetopt.kinds.human_robot.fjsp") is not None
    except ModuleNotFoundError:
        present = False
    if present:
        assert res.exit_code == 0, res.output
        assert json.loads(out.read_text())["kind"] == "human_robot"
    else:
        assert res.exit_code == 2
        assert "human_robot" in res.output


def test_cli_bad_instance_exits_3(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {
                "kind": "multicore",
                "cores": [{"id": "a", "type": "a"}],
                "tasks": [{"id": "t", "duration_s": {"a": 1.0}, "predecessors": ["zz"]}],
            }
        )
    )
    res = CliRunner().invoke(main, ["solve", str(bad)])
    assert res.exit_code == 3
    assert "tasks[0].predecessors[0]" in res.output and "Traceback" not in res.output
