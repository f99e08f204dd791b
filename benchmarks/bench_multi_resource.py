"""Benchmarks of ``multi_resource`` (Synergy): 16 servers x 100 jobs and 64 x 400 jobs,
with and without placement rules, and ``min_cost``.

Instances come from ``hetopt generate multi-resource`` (Synergy's measured profiles, seed 0).
Each benchmark asserts a verified solution whose throughput is at least every job's fair
share and at most the configuration-only bound; where the solve is proven optimal and the
MILP value equals the configuration-only knapsack bound, the answer is certified by that
independent relaxation too (``mip_rel_gap=0``, so optimal means proven exactly). The
64 x 400 runs stop at ``TIME_LIMIT_S`` and record the gap.

``64x400/rules``: the same cluster in 8 racks of 8 servers, 20 % of the jobs tagged
(``db``, ``web``, ``cache``, ``batch``) and the five rules of :data:`RULES` (three hard,
two soft). It records its time and gap next to the rule-free solve of the same jobs
(``rule_free_*``, solved after the timed run). ``min_cost/16x40/rules``: the cheapest
servers that hold the jobs under the same rules; certified by the GPU bound (the
cheapest servers whose GPUs hold every job's).
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from registry import BenchSpec, record, register

from hetopt import SolveOptions, Status
from hetopt.kinds.multi_resource import KIND
from hetopt.kinds.multi_resource.generate import generate

TIME_LIMIT_S = 60.0

RULES = [
    {"rule": "anti_affinity", "tag": "db"},
    {"rule": "spread", "tag": "db", "scope": "rack", "max_skew": 1},
    {
        "rule": "affinity",
        "tag": "web",
        "with_tag": "cache",
        "scope": "rack",
        "hard": False,
        "penalty": 0.5,
    },
    {"rule": "max_per_group", "tag": "batch", "scope": "rack", "max_per_group": 3},
    {"rule": "anti_affinity", "tag": "cache", "hard": False, "penalty": 0.1},
]
"""The benchmark's placement rules (``hard`` unless said otherwise)."""


def with_rules(num_jobs: int, num_servers: int, racks: int, costs: bool = False) -> Any:
    """Seed-0 instance in ``racks`` racks, 20 % tagged, :data:`RULES`; with ``costs``,
    servers cost 1.0, 1.25, 1.5, 1.75 per hour in turn."""
    inst = generate(num_jobs, num_servers, seed=0, racks=racks, tagged_fraction=0.2, rules=RULES)
    if not costs:
        return inst
    data = inst.to_dict()
    for i, srv in enumerate(data["servers"]):
        srv["cost_per_hour"] = 1.0 + 0.25 * (i % 4)
    return type(inst).from_dict(data)


def gpu_cost_bound(inst: Any) -> float:
    """Servers with equal GPUs: every solution uses at least ``ceil(GPUs asked / GPUs per
    server)`` of them, so the cheapest that many is a lower bound on ``min_cost``."""
    gpus = {s.gpus for s in inst.servers}
    assert len(gpus) == 1
    k = math.ceil(sum(j.gpus for j in inst.jobs) / gpus.pop())
    return float(sum(sorted(s.cost_per_hour for s in inst.servers)[:k]))


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
    register(
        BenchSpec(
            "multi_resource/max_total_throughput/64x400/rules",
            "multi_resource",
            "max_total_throughput",
            {"servers": 64, "jobs": 400, "racks": 8, "tagged": 0.2, "rules": len(RULES)},
            slow=True,
            make=lambda: with_rules(400, 64, 8),
        )
    ),
    register(
        BenchSpec(
            "multi_resource/min_cost/16x40/rules",
            "multi_resource",
            "min_cost",
            {"servers": 16, "jobs": 40, "racks": 4, "tagged": 0.2, "rules": len(RULES)},
            slow=False,
            make=lambda: with_rules(40, 16, 4, costs=True),
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
    if inst.placement_rules:
        assert not result.tables["violations"]["hard"].astype(bool).any()
    if spec.objective == "min_cost":
        bound = gpu_cost_bound(inst)
        assert result.status == Status.OPTIMAL
        assert result.objective_value == pytest.approx(bound, abs=1e-9)
        record(benchmark, result, gap=result.gap, gpu_cost_bound=bound)
        return
    throughput = result.info.get("total_throughput", result.objective_value)
    assert throughput >= result.info["fair_share_total"] - 1e-6
    if inst.placement_rules:
        # the same jobs without tags and rules, solved after the timed run
        free = generate(len(inst.jobs), len(inst.servers), seed=0)
        ref = KIND.solve(free, spec.objective, opts)
        assert ref.verification is not None and ref.verification.ok
        record(
            benchmark,
            result,
            gap=result.gap,
            bound=result.bound,
            config_only_bound=result.info["config_only_bound"],
            total_penalty=result.info["total_penalty"],
            time_limit_s=TIME_LIMIT_S,
            rule_free_objective=ref.objective_value,
            rule_free_gap=ref.gap,
            rule_free_runtime_s=ref.runtime_s,
        )
        assert result.objective_value <= result.info["config_only_bound"] + 1e-6
        return
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
