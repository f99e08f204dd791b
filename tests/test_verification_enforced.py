"""Whatever pipeline a kind uses, a solution its verifier rejects is never reported
optimal or feasible (status error, CLI exit 1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import hetopt
from hetopt import Status, Verification
from hetopt.cli import main

INSTANCES = Path(__file__).resolve().parents[1] / "instances"
CASES = {
    "gpu_cluster": ("gpu_cluster/example.json", None),
    "gpu_cluster_water_filling": ("gpu_cluster/example.json", "max_min_fairness_water_filling"),
    "multicore": ("multicore/big_little_independent.json", None),
    "multicore_pareto": ("multicore/big_little_independent.json", "pareto"),
    "cpu_gpu": ("cpu_gpu/single_divisible.json", None),
    "multi_resource": ("multi_resource/split_job.json", None),
    "human_robot": ("human_robot/small.json", None),
    "client_selection": ("client_selection/fedcs_small.json", None),
}


def _reject(instance: Any, result: Any) -> Verification:
    return Verification(ok=False, violations=("injected by the test",), checks=("x",))


@pytest.mark.parametrize("case", sorted(CASES))
def test_rejected_solution_is_error(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rel, objective = CASES[case]
    path = INSTANCES / rel
    kind = hetopt.get_kind(hetopt.read_instance(path).kind)
    assert hetopt.solve(path, objective).status.has_solution  # sanity: solvable as shipped
    monkeypatch.setattr(kind, "verify", _reject)
    r = hetopt.solve(path, objective)
    assert r.status == Status.ERROR and "injected by the test" in r.termination
    args = ["solve", str(path)] + (["--objective", objective] if objective else [])
    assert CliRunner().invoke(main, args).exit_code == 1
