"""The ``progress=`` callback of :func:`hetopt.solve` and the command line's progress
line: MIP incumbent/bound/gap from inside HiGHS, every HiGHS run, and the steps of
multi-solve methods (Pareto points, decomposition iterations, LP rounding)."""

from __future__ import annotations

import logging

import pytest
from click.testing import CliRunner

import hetopt
from hetopt.cli import main
from hetopt.progress import Progress

OPTS = hetopt.SolveOptions(threads=1)


def _multicore_milp() -> object:
    from hetopt.kinds.multicore.generate import generate

    return generate("U1-100", 4, 30, seed=1)


def test_mip_progress_in_the_objective_unit() -> None:
    events: list[Progress] = []
    r = hetopt.solve(
        _multicore_milp(),
        "makespan",
        OPTS.replace(time_limit_s=30),
        progress=events.append,
        formulation="disjunctive",
    )
    assert r.ok
    assert events and events[-1].event == "solved" and events[-1].stage == "main"
    mips = [e for e in events if e.event == "mip"]
    assert mips, "a MILP of several seconds reports its incumbent and bound"
    for e in mips:
        assert e.kind == "multicore" and not e.scaled
        if e.incumbent is not None and e.bound is not None:
            assert e.bound <= e.incumbent + 1e-6  # minimisation, in seconds
            assert e.incumbent >= r.objective_value - 1e-6
    assert [e.elapsed_s for e in events] == sorted(e.elapsed_s for e in events)
    assert str(mips[-1]).startswith("multicore main")


def test_pareto_points_are_steps() -> None:
    events: list[Progress] = []
    r = hetopt.solve(
        "instances/multicore/big_little_dag.json",
        "pareto",
        OPTS,
        progress=events.append,
        pareto_points=4,
    )
    steps = [e for e in events if e.event == "step" and e.stage == "point"]
    assert steps[0].done == 0 and all(e.total == 4 for e in steps)
    assert [e.done for e in steps] == list(range(len(steps)))
    assert len(steps) - 1 == len(r.tables["pareto"]) or r.info["points"] <= len(steps) - 1


def test_decomposition_iterations_and_lp_round_steps(monkeypatch) -> None:
    from hetopt.kinds.human_robot.generate import generate

    events: list[Progress] = []
    hetopt.solve(generate(20, 3, seed=1), progress=events.append, method="decomposition")
    its = [e for e in events if e.stage == "decomposition"]
    assert its and its[0].done == 1 and its[0].total is not None
    events.clear()
    hetopt.solve(
        "instances/client_selection/oort_testing.json",
        "min_duration",
        progress=events.append,
        method="lp_round",
    )
    stages = [e.stage for e in events if e.event == "step"]
    assert stages[0] == "lp_relaxation" and "restricted_milp" in stages


def test_a_failing_callback_never_breaks_the_solve(caplog) -> None:
    def boom(event: Progress) -> None:
        raise RuntimeError("no")

    caplog.set_level(logging.WARNING, logger="hetopt")
    r = hetopt.solve("instances/multicore/big_little_dag.json", "pareto", OPTS, progress=boom)
    plain = hetopt.solve("instances/multicore/big_little_dag.json", "pareto", OPTS)
    assert r.ok and r.to_dict()["tables"] == plain.to_dict()["tables"]
    assert any("progress callback raised RuntimeError" in m.getMessage() for m in caplog.records)


def test_cli_progress_line_on_request_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from hetopt import cli

    runner = CliRunner()
    args = ["solve", "instances/multicore/big_little_dag.json", "-O", "pareto"]
    args += ["-p", "pareto_points=4", "--threads", "1"]
    res = runner.invoke(main, args)  # stderr is not a terminal here: no line
    assert res.exit_code == 0 and "\r" not in res.stderr
    monkeypatch.setattr(cli.ProgressLine, "STEP_DELAY_S", 0.0)
    res = runner.invoke(main, [*args, "--progress", "--json"])
    assert res.exit_code == 0
    assert "hetopt: multicore point" in res.stderr and res.stderr.endswith("\r\x1b[K")
    assert res.stdout.lstrip().startswith("{")  # stdout is only the JSON
    res = runner.invoke(main, [*args, "--progress", "--quiet"])
    assert res.exit_code == 0 and res.stderr == ""
