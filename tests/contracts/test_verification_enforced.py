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

INSTANCES = Path(__file__).resolve().parents[2] / "instances"
CASES = {
    "gpu_cluster": ("gpu_cluster/example.json", None),
    "gpu_cluster_water_filling": ("gpu_cluster/example.json", "max_min_fairness_water_filling"),
    "gpu_cluster_makespan": ("gpu_cluster/example.json", "makespan"),
    "gpu_cluster_space_sharing": ("gpu_cluster/policies/colocation_triangle.json", None),
    "gpu_cluster_finish_time_fairness": ("gpu_cluster/policies/ftf_swap.json", None),
    "gpu_cluster_max_total_throughput": ("gpu_cluster/example.json", "max_total_throughput"),
    "gpu_cluster_min_cost": ("gpu_cluster/policies/min_cost_slo.json", None),
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


def _gpu_paths() -> dict[str, Any]:
    """gpu_cluster results that do not come from ``hetopt.solve`` of one instance."""
    from hetopt.decompose import solve_decomposed
    from hetopt.kinds.gpu_cluster import GpuClusterInstance, PersistentPolicy, generate
    from hetopt.kinds.gpu_cluster.decompose import solve_partitioned

    opts = hetopt.SolveOptions(threads=1)
    two = GpuClusterInstance.from_dict(
        {
            "kind": "gpu_cluster",
            "workers": {"a": 2, "b": 1},
            "jobs": [
                {"id": "0", "throughput": {"a": 1.0}, "steps_remaining": 10.0},
                {"id": "1", "throughput": {"b": 1.0}, "steps_remaining": 10.0},
            ],
        }
    )
    gav = generate(24, "k80=4,p100=4,v100=4", seed=1)

    def persistent() -> Any:
        policy = PersistentPolicy(gav, "max_min_fairness", opts)
        policy.solve()
        policy.update_workers({"v100": 2})
        return policy.solve()

    return {
        "components": lambda: solve_decomposed(two, "makespan", opts),
        "stratified": lambda: solve_partitioned(gav, 2, "stratified", opts),
        "pop": lambda: solve_partitioned(gav, 2, "pop", opts),
        "persistent": persistent,
    }


@pytest.mark.parametrize("path", ["components", "stratified", "pop", "persistent"])
def test_rejected_gpu_cluster_solution_is_error_on_every_path(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    solve = _gpu_paths()[path]
    assert solve().status.has_solution  # sanity: solvable as built
    monkeypatch.setattr(hetopt.get_kind("gpu_cluster"), "verify", _reject)
    r = solve()
    assert r.status == Status.ERROR and "injected by the test" in r.termination


def test_rejected_multi_resource_decomposition_is_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from hetopt.decompose import solve_decomposed
    from hetopt.kinds.multi_resource.generate import generate

    inst = generate(24, 4, seed=1)
    opts = hetopt.SolveOptions(threads=1, time_limit_s=30)
    assert solve_decomposed(inst, options=opts, partitions=2).status.has_solution
    monkeypatch.setattr(hetopt.get_kind("multi_resource"), "verify", _reject)
    r = solve_decomposed(inst, options=opts, partitions=2)
    assert r.status == Status.ERROR and "injected by the test" in r.termination
