"""Every automatic method choice says what it chose and why (``info["method_choice"]``),
logs a warning when it falls back (slower, or without an optimality proof), and can be
made explicit with the parameter (which silences it)."""

from __future__ import annotations

import logging

import pytest
from click.testing import CliRunner

import hetopt
from hetopt.cli import main

FALLBACK = "hetopt.kinds"


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_client_selection_fallback_to_the_milp_warns_and_says_why(caplog) -> None:
    caplog.set_level(logging.INFO, logger="hetopt")
    r = hetopt.solve("instances/client_selection/fedcs_quotas.json")
    assert r.info["method"] == "milp"
    assert "group quotas need the MILP" in r.info["method_choice"]
    assert "method='milp'" in r.info["method_choice"]
    (w,) = _warnings(caplog)
    assert w.startswith("client_selection: auto fell back from the exact fast path to the MILP")
    caplog.clear()
    r = hetopt.solve("instances/client_selection/fedcs_quotas.json", method="milp")
    assert "method_choice" not in r.info and not _warnings(caplog)
    assert r.info["fast_path_blocker"] == "group quotas need the MILP"


def test_client_selection_fast_path_choice_is_reported_without_a_warning(caplog) -> None:
    caplog.set_level(logging.INFO, logger="hetopt")
    r = hetopt.solve("instances/client_selection/pinedo_3_3_1.json", "max_weight")
    assert r.info["method"] == "lawler_moore"
    assert r.info["method_choice"].startswith("auto chose the exact fast path")
    assert not _warnings(caplog)
    assert any("auto chose the exact fast path" in m.getMessage() for m in caplog.records)


def test_client_selection_lp_round_choice_warns(monkeypatch, caplog) -> None:
    from hetopt.kinds.client_selection import inputs  # the choice (was in .methods)

    monkeypatch.setattr(inputs, "LP_ROUND_PAIRS", 5)
    caplog.set_level(logging.INFO, logger="hetopt")
    r = hetopt.solve("instances/client_selection/oort_testing.json", "min_duration")
    assert r.info["method"] == "lp_round" and "pairs > 5" in r.info["method_choice"]
    assert "method='milp'" in r.info["method_choice"]
    assert any(w.startswith("client_selection: auto chose lp_round") for w in _warnings(caplog))


def test_human_robot_decomposition_choice_warns(caplog) -> None:
    from hetopt.kinds.human_robot.generate import generate

    caplog.set_level(logging.INFO, logger="hetopt")
    big = generate(20, 3, seed=1)
    r = hetopt.solve(big, options=hetopt.SolveOptions(time_limit_s=20))
    assert r.info["method"] == "decomposition"
    assert "20 tasks" in r.info["method_choice"] and "method='exact'" in r.info["method_choice"]
    assert any(w.startswith("human_robot: auto chose decomposition") for w in _warnings(caplog))
    caplog.clear()
    small = hetopt.solve("instances/human_robot/small.json")
    assert small.info["method"] == "exact"
    assert small.info["method_choice"].startswith("auto chose the exact MILP")
    assert not _warnings(caplog)
    explicit = hetopt.solve("instances/human_robot/small.json", method="exact")
    assert "method_choice" not in explicit.info


@pytest.mark.parametrize(
    ("path", "formulation"),
    [
        ("instances/multicore/big_little_independent.json", "assignment"),
        ("instances/multicore/big_little_dag.json", None),
    ],
)
def test_multicore_formulation_choice_is_reported(path: str, formulation: str | None) -> None:
    r = hetopt.solve(path)
    assert r.info["method_choice"].startswith(f"auto chose {r.info['formulation']}")
    if formulation:
        assert r.info["formulation"] == formulation
    explicit = hetopt.solve(path, formulation=r.info["formulation"])
    assert "method_choice" not in explicit.info


def test_cli_prints_the_fallback_warning_on_stderr_only() -> None:
    runner = CliRunner()
    res = runner.invoke(main, ["solve", "instances/client_selection/fedcs_quotas.json", "--json"])
    assert res.exit_code == 0
    import json

    assert json.loads(res.stdout)["info"]["method"] == "milp"
    assert "hetopt: warning: client_selection: auto fell back" in res.stderr
    res = runner.invoke(
        main, ["solve", "instances/client_selection/fedcs_quotas.json", "-p", "method=milp"]
    )
    assert res.exit_code == 0 and "warning" not in res.stderr
