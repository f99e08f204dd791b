"""Shipped instances: every file validates and solves, closed forms match."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import hetopt
from hetopt import Status

GPU = Path(__file__).resolve().parents[2] / "instances" / "gpu_cluster"
ANSWERS = json.loads((GPU / "closed_form" / "answers.json").read_text())


@pytest.mark.parametrize("rel", sorted(ANSWERS))
def test_closed_form_instances(rel: str) -> None:
    for objective, expected in ANSWERS[rel].items():
        r = hetopt.solve(GPU / rel, objective)
        assert r.status == Status.OPTIMAL and r.verification.ok
        assert r.objective_value == pytest.approx(expected, rel=1e-7)


@pytest.mark.parametrize("name", ["example.json", "gavel_100.json", "gavel_1000.json"])
def test_shipped_gavel_instances_solve_and_verify(name: str) -> None:
    for objective in ("max_min_fairness", "makespan"):
        r = hetopt.solve(GPU / name, objective)
        assert r.status == Status.OPTIMAL
        assert r.verification.ok, r.verification.violations
        inst = hetopt.read_instance(GPU / name)
        assert len(r.tables["jobs"]) == len(inst.jobs)
