"""Benchmarks of ``pipeline_partition``: Helix's clusters and generated pipelines.

Serving: Helix's published MILPs converted with ``hetopt convert helix`` (llama30b on 4
A100, 8 L4, 12 T4; llama70b on the 24-node mixed cluster). Each asserts at least Helix's
Gurobi value and the proven optimum (``instances/pipeline_partition/README.md``); the
``no-cover`` variants (slow) show what HiGHS does on the same arc-flow model without the
cover rows (feasible, gap recorded). Generated serving clusters assert at least the warm
start. Training: generated pipelines assert the value of :func:`training.usage_dp`, exact
for one device per stage without transfers (as generated). Time limit 60 s, one HiGHS thread.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from registry import BenchSpec, record, register

from hetopt import SolveOptions, Status
from hetopt.kinds.pipeline_partition import KIND
from hetopt.kinds.pipeline_partition import training as TR
from hetopt.kinds.pipeline_partition.data import PipelinePartitionInstance
from hetopt.kinds.pipeline_partition.generate import generate
from hetopt.kinds.pipeline_partition.helix import helix_to_instance

HELIX = Path(__file__).resolve().parents[1] / "instances" / "pipeline_partition" / "helix"
HELIX_CASES = {
    # name: (config, milp, Helix's Gurobi value, proven optimum)
    "llama30b_a100": (
        "single_cluster_config_a100.ini",
        "single_cluster_llama30b_a100",
        1044.5333450564908,
        1044.5333450564908,
    ),
    "llama30b_l4": (
        "single_cluster_config_l4.ini",
        "single_cluster_llama30b_l4",
        214.98140196132908,
        252.6498460282083,
    ),
    "llama30b_t4": (
        "single_cluster_config_t4.ini",
        "single_cluster_llama30b_t4",
        397.68506408357825,
        397.6850640835783,
    ),
    "llama70b_cluster24": (
        "single_cluster_config_cluster24.ini",
        "single_cluster_llama70b",
        1289.5557702751735,
        2045.641047336262,
    ),
}


def _helix(name: str) -> PipelinePartitionInstance:
    cfg, lp, _, _ = HELIX_CASES[name]
    return PipelinePartitionInstance.from_dict(helix_to_instance(HELIX / cfg, HELIX / f"{lp}.lp"))


SERVING = [
    register(
        BenchSpec(
            f"pipeline_partition/max_throughput/helix/{name}{suffix}",
            "pipeline_partition",
            "max_throughput",
            {
                "nodes": {
                    "llama70b_cluster24": 24,
                    "llama30b_a100": 4,
                    "llama30b_l4": 8,
                    "llama30b_t4": 12,
                }[name],
                "cover_cuts": suffix == "",
            },
            slow=name == "llama70b_cluster24" or suffix != "",
            make=lambda name=name: _helix(name),
        )
    )
    for name in HELIX_CASES
    for suffix in ("", "/no-cover")
]
GENERATED_SERVING = [
    # name, nodes, layers, types, slow links, slow
    ("complete/8x24x2", 8, 24, 2, 0.0, False),
    ("complete/16x48x3", 16, 48, 3, 0.0, True),
    ("complete/12x40x3-seed3", 12, 40, 3, 0.0, True),
    ("complete/32x96x4", 32, 96, 4, 0.0, True),
    ("slow-links/6x24x2", 6, 24, 2, 0.3, True),
]
SERVING += [
    register(
        BenchSpec(
            f"pipeline_partition/max_throughput/{name}",
            "pipeline_partition",
            "max_throughput",
            {"nodes": n, "layers": L, "types": t, "slow_links": s, "cover_cuts": True},
            slow=slow,
            make=lambda n=n, L=L, t=t, s=s, seed=seed: generate(
                "serving", n, L, t, seed=seed, slow_links=s
            ),
        )
    )
    for name, n, L, t, s, slow in GENERATED_SERVING
    for seed in [3 if name.endswith("seed3") else (2 if name == "complete/8x24x2" else 1)]
]
TRAINING_SIZES = [
    # name, devices, layers, types, slow
    ("8x16x2", 8, 16, 2, False),
    ("12x24x3", 12, 24, 3, True),
    ("16x32x2", 16, 32, 2, True),
]
TRAINING = [
    register(
        BenchSpec(
            f"pipeline_partition/{objective}/{name}",
            "pipeline_partition",
            objective,
            {"devices": n, "layers": L, "types": t},
            slow=slow,
            make=lambda n=n, L=L, t=t: generate("training", n, L, t, seed=1),
        )
    )
    for objective in ("min_stage_time", "min_iteration_time")
    for name, n, L, t, slow in TRAINING_SIZES
]

SPLIT_SIZES = [
    # name, devices, layers, types, pipelines, slow
    ("8x8x2p2", 8, 8, 2, 2, False),
    ("8x12x2p4", 8, 12, 2, 4, True),
]


def _split_instance(n: int, L: int, t: int, P: int) -> object:
    data = generate("training", n, L, t, seed=1).to_dict()
    return PipelinePartitionInstance.from_dict({**data, "pipelines": P})


SPLIT = [
    register(
        BenchSpec(
            f"pipeline_partition/batch_split/{name}",
            "pipeline_partition",
            "min_iteration_time",
            {"devices": n, "layers": L, "types": t, "pipelines": P},
            slow=slow,
            make=lambda n=n, L=L, t=t, P=P: _split_instance(n, L, t, P),
        )
    )
    for name, n, L, t, P, slow in SPLIT_SIZES
]

OPTS = SolveOptions(threads=1, time_limit_s=60.0)


def _param(s: BenchSpec) -> object:
    return pytest.param(s, id=s.name, marks=[pytest.mark.slow] if s.slow else [])


@pytest.mark.parametrize("spec", [_param(s) for s in SERVING])
def bench_pipeline_partition_serving(benchmark, spec: BenchSpec) -> None:
    assert spec.make is not None
    inst = spec.make()
    cover = bool(spec.size["cover_cuts"])
    result = benchmark.pedantic(
        lambda: KIND.solve(inst, "max_throughput", OPTS, cover_cuts=cover), rounds=1, iterations=1
    )
    assert result.status in (Status.OPTIMAL, Status.FEASIBLE), result
    assert result.verification is not None and result.verification.ok
    assert result.bound is not None and result.bound >= result.objective_value - 1e-6
    helix = next((v for k, v in HELIX_CASES.items() if f"/helix/{k}" in spec.name), None)
    extra = {}
    if helix is not None:
        _, _, helix_value, optimum = helix
        assert result.objective_value >= helix_value - 1e-6
        assert result.objective_value <= optimum * (1 + 1e-9)
        if cover:
            assert result.status == Status.OPTIMAL
            assert result.objective_value == pytest.approx(optimum, rel=1e-9)
        extra = {"helix_tokens_s": helix_value, "optimum_tokens_s": optimum}
    else:
        assert result.objective_value >= result.info["warm_start_tokens_s"] - 1e-6
    record(
        benchmark,
        result,
        bound=result.bound,
        gap=result.gap,
        **extra,
        **{
            k: result.info.get(k) for k in ("groups", "arcs", "warm_start_tokens_s", "warm_start_s")
        },
    )


@pytest.mark.parametrize("spec", [_param(s) for s in TRAINING])
def bench_pipeline_partition_training(benchmark, spec: BenchSpec) -> None:
    assert spec.make is not None
    inst = spec.make()
    result = benchmark.pedantic(
        lambda: KIND.solve(inst, spec.objective, OPTS), rounds=1, iterations=1
    )
    assert result.status in (Status.OPTIMAL, Status.FEASIBLE), result
    assert result.verification is not None and result.verification.ok
    dp = TR.usage_dp(inst, spec.objective)
    if dp is not None:  # exact here (one device per stage, no transfers): equal
        assert result.objective_value <= dp[0] + 1e-6
        if result.status == Status.OPTIMAL:
            assert result.objective_value == pytest.approx(dp[0], rel=1e-4)
    record(
        benchmark,
        result,
        bound=result.bound,
        gap=result.gap,
        dp_ms=dp[0] if dp else None,
        stages=result.info.get("stages"),
    )


@pytest.mark.parametrize("spec", [_param(s) for s in SPLIT])
def bench_pipeline_partition_batch_split(benchmark, spec: BenchSpec) -> None:
    """Several pipelines: at most the best single pipeline (a split with one pipeline;
    exact here by ``usage_dp``), verified."""
    assert spec.make is not None
    inst = spec.make()
    result = benchmark.pedantic(
        lambda: KIND.solve(inst, spec.objective, OPTS), rounds=1, iterations=1
    )
    assert result.status in (Status.OPTIMAL, Status.FEASIBLE), result
    assert result.verification is not None and result.verification.ok
    dp = TR.usage_dp(inst, spec.objective)
    assert dp is not None and result.objective_value <= dp[0] + 1e-6
    record(
        benchmark,
        result,
        bound=result.bound,
        gap=result.gap,
        single_pipeline_ms=dp[0],
        pipelines=result.info.get("pipelines"),
    )
