"""Benchmarks of ``human_robot``: the exact MILP's practical size and the decomposition.

Instances come from ``hetopt generate human-robot`` (seed 1; the distribution is in
``hetopt/kinds/human_robot/generate.py``) plus the Kacem k1 flexible job shop (12
operations, 5 machines; optimum 11, SchedulingLab fjsp-instances, MIT).

Exact runs assert a verified optimum that lies between the decomposition's lower bound
and its value (two independent methods bracketing it); decomposition runs assert a
verified schedule whose value is at least its reported lower bound, and record time and
gap.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from registry import BenchSpec, record, register

from hetopt import SolveOptions, Status, instance_from_dict
from hetopt.formats.fjsp import read_fjsp
from hetopt.kinds.human_robot import KIND, fjsp_to_instance
from hetopt.kinds.human_robot.generate import generate

ROOT = Path(__file__).resolve().parents[1]

EXACT = [
    # name, tasks, agents, slow
    ("8x3", 8, 3, False),
    ("12x4", 12, 4, False),
    ("15x5", 15, 5, False),
]
DECOMPOSITION = [("50x10", 50, 10, True), ("100x10", 100, 10, True)]

EXACT_SPECS = [
    register(
        BenchSpec(
            f"human_robot/makespan/exact/{name}",
            "human_robot",
            "makespan",
            {"tasks": n, "agents": a},
            slow=slow,
            make=lambda n=n, a=a: generate(n, a, seed=1),
        )
    )
    for name, n, a, slow in EXACT
]
K1_SPEC = register(
    BenchSpec(
        "human_robot/makespan/exact/fjsp-kacem-k1",
        "human_robot",
        "makespan",
        {"tasks": 12, "agents": 5},
        make=lambda: instance_from_dict(
            fjsp_to_instance(read_fjsp(ROOT / "instances/fjsp/kacem/k1.txt"))
        ),
    )
)
DEC_SPECS = [
    register(
        BenchSpec(
            f"human_robot/makespan/decomposition/{name}",
            "human_robot",
            "makespan",
            {"tasks": n, "agents": a},
            slow=slow,
            make=lambda n=n, a=a: generate(n, a, seed=1),
        )
    )
    for name, n, a, slow in DECOMPOSITION
]

OPTS = SolveOptions(threads=1, time_limit_s=300.0)


def _params(specs: list[BenchSpec]) -> list:
    return [pytest.param(s, id=s.name, marks=[pytest.mark.slow] if s.slow else []) for s in specs]


@pytest.mark.parametrize("spec", _params([*EXACT_SPECS, K1_SPEC]))
def bench_human_robot_exact(benchmark, spec: BenchSpec) -> None:
    assert spec.make is not None
    inst = spec.make()
    result = benchmark.pedantic(
        lambda: KIND.solve(inst, "makespan", OPTS, method="exact"), rounds=1, iterations=1
    )
    assert result.status == Status.OPTIMAL
    assert result.verification is not None and result.verification.ok
    if spec is K1_SPEC:
        assert result.objective_value == pytest.approx(11)
    dec = KIND.solve(inst, "makespan", OPTS, method="decomposition")
    assert dec.bound is not None and dec.objective_value is not None
    assert dec.bound - 1e-6 <= result.objective_value <= dec.objective_value + 1e-6
    record(
        benchmark,
        result,
        decomposition_value=dec.objective_value,
        decomposition_bound=dec.bound,
    )


@pytest.mark.parametrize("spec", _params(DEC_SPECS))
def bench_human_robot_decomposition(benchmark, spec: BenchSpec) -> None:
    assert spec.make is not None
    inst = spec.make()
    result = benchmark.pedantic(
        lambda: KIND.solve(inst, "makespan", OPTS, method="decomposition"),
        rounds=1,
        iterations=1,
    )
    assert result.status in (Status.OPTIMAL, Status.FEASIBLE)
    assert result.verification is not None and result.verification.ok
    assert len(result.tables["schedule"]) == spec.size["tasks"]
    assert result.bound is not None and result.bound <= result.objective_value + 1e-6
    record(benchmark, result, gap=result.gap, iterations=result.info["iterations"])
