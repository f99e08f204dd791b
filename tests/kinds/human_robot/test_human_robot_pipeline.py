"""human_robot on the pipeline contract: the method table, the exact method's verified
fallback, bounds without a schedule, the rolling-horizon hooks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import hetopt
from hetopt import SolveOptions, Status
from hetopt.contract import BuildMethod, RunMethod
from hetopt.highs import HighsModel, RawSolution
from hetopt.kinds.human_robot import KIND, METHODS, exact
from hetopt.kinds.human_robot import formulations as F
from hetopt.kinds.human_robot.decomposition import Decomposition
from hetopt.kinds.human_robot.exact import Exact, ExactMilp
from hetopt.kinds.human_robot.generate import generate
from hetopt.rolling import Replanner

SMALL = Path(__file__).resolve().parents[3] / "instances" / "human_robot" / "small.json"
OPTS = SolveOptions(threads=1)


def test_method_table() -> None:
    inst = hetopt.read_instance(SMALL)
    for objective in KIND.objective_names():
        for name in ("exact", "decomposition"):
            method = METHODS[objective, name]
            assert isinstance(method, RunMethod) and method.objective == objective
        got = KIND.method_for(objective, inst, KIND.parse_params({}))
        assert isinstance(got, Exact)  # 'auto' on a small instance
    big = generate(20, 5, 1)
    assert isinstance(KIND.method_for("makespan", big, KIND.parse_params({})), Decomposition)
    assert isinstance(ExactMilp("makespan"), BuildMethod)


def test_layout_is_typed() -> None:
    inst = hetopt.read_instance(SMALL)
    built = ExactMilp("weighted_completion").build(inst, KIND.parse_params({}))
    layout = built.layout
    assert isinstance(layout, F.ExactLayout) and not layout.loose
    assert layout.objective_scale == pytest.approx(
        layout.plan.time_unit_s * sum(t.weight for t in inst.tasks)
    )


def test_rejected_exact_schedule_falls_back_to_the_decomposition(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A schedule the kind's verifier function rejects (numerical trouble) is replaced by
    the decomposition's, which the pipeline then verifies."""
    monkeypatch.setattr(exact, "_rejection", lambda *args: "injected by the test")
    r = hetopt.solve(SMALL, options=OPTS, method="exact")
    assert r.info["method"] == "decomposition"
    assert r.info["exact_rejected"] == "injected by the test"
    assert r.status in (Status.OPTIMAL, Status.FEASIBLE) and r.verification.ok
    assert {"exact", "allocation"} <= set(r.report.stages)


def test_bound_without_a_schedule_is_in_the_objective_unit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """HiGHS stopped without an incumbent but with a dual bound (in units of ``obj``):
    the result's bound is in (weighted) seconds."""

    def stopped(self: Any, options: Any = None, default_lp_method: str = "auto") -> RawSolution:
        return RawSolution(Status.NO_SOLUTION, "Time limit reached", None, 0.5, None, None, None, 0)

    inst = hetopt.read_instance(SMALL)
    monkeypatch.setattr(HighsModel, "solve", stopped)
    r = hetopt.solve(inst, "weighted_completion", OPTS, method="exact")
    assert r.status == Status.NO_SOLUTION
    scale = ExactMilp("weighted_completion").build(inst, KIND.parse_params({})).layout
    assert r.bound == pytest.approx(0.5 * scale.objective_scale)


def test_kind_offers_a_replanner() -> None:
    assert isinstance(KIND.replanner, Replanner)
