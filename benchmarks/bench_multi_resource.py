"""Benchmarks of ``multi_resource`` (Synergy): 16 servers x 100 jobs and 64 x 400 jobs.

Instances come from ``hetopt generate multi-resource`` (Synergy's measured profiles, seed 0).
Each benchmark asserts a verified solution whose throughput is at least every job's fair
share and at most the configuration-only bound; where the solve is proven optimal and the
MILP value equals the configuration-only knapsack bound, the answer is certified by that
independent relaxation too (``mip_rel_gap=0``, so optimal means proven exactly). The
64 x 400 run stops at ``TIME_LIMIT_S`` and records the gap.
"""

from __future__ import annotations

import pytest
from registry import BenchSpec, record, register

from hetopt import SolveOptions, Status
from hetopt.kinds.multi_resource import KIND
from hetopt.kinds.multi_resource.generate import generate

TIME_LIMIT_S = 60.0

SPECS = [
    register(
        BenchSpec(
            "multi_resource/max_total_throughput/16x100",
            "multi_resource",
            "max_total_throughput",
            {"servers": 16, "jobs": 100},
            slow=False,
            make=lambda: generate(100, 16, seed=0),
        )
    ),
    register(
        BenchSpec(
            "multi_resource/max_total_throughput/64x400",
            "multi_resource",
            "max_total_throughput",
            {"servers": 64, "jobs": 400},
            slow=True,
            make=lambda: generate(400, 64, seed=0),
        )
    ),
]

# certified optimum: the MILP value equals the configuration-only knapsack bound
KNOWN = {"multi_resource/max_total_throughput/16x100": 129.4}


@pytest.mark.parametrize(
    "spec",
    [pytest.param(s, id=s.name, marks=[pytest.mark.slow] if s.slow else []) for s in SPECS],
)
def bench_multi_resource(benchmark, spec: BenchSpec) -> None:
    assert spec.make is not None
    inst = spec.make()
    opts = SolveOptions(threads=1, time_limit_s=TIME_LIMIT_S, mip_rel_gap=0.0)
    result = benchmark.pedantic(
        lambda: KIND.solve(inst, spec.objective, opts), rounds=1, iterations=1
    )
    assert result.status in (Status.OPTIMAL, Status.FEASIBLE)
    assert result.verification is not None and result.verification.ok
    assert result.objective_value >= result.info["fair_share_total"] - 1e-6
    assert result.objective_value <= result.info["config_only_bound"] + 1e-6
    if spec.name in KNOWN:
        assert result.status == Status.OPTIMAL
        assert result.objective_value == pytest.approx(KNOWN[spec.name], abs=1e-6)
        assert result.info["config_only_bound"] == pytest.approx(KNOWN[spec.name], abs=1e-6)
    record(
        benchmark,
        result,
        gap=result.gap,
        bound=result.bound,
        config_only_bound=result.info["config_only_bound"],
        time_limit_s=TIME_LIMIT_S,
    )
