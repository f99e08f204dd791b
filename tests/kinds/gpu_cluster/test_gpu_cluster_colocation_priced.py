"""Space sharing by pair column generation (``colocation.solve_priced``): the monolithic
LP's optimum (1e-9) with a Lagrangian dual bound, both where no pair column is needed
and where sharing helps."""

from __future__ import annotations

import numpy as np
import pytest

import hetopt
from hetopt import SolveOptions, Status
from hetopt.kinds.gpu_cluster import GpuClusterInstance, colocation, generate
from hetopt.kinds.gpu_cluster.gavel import simulation_table
from hetopt.kinds.gpu_cluster.trace import colocation_entries

OPTS = SolveOptions(threads=1)


def shared(n: int, seed: int, long_job: float | None = None) -> GpuClusterInstance:
    g = max(4, n // 12)
    inst = generate(n, f"k80={g},p100={g},v100={g}", seed=seed)
    d = inst.to_dict()
    keys = {(j.job_type, j.scale_factor) for j in inst.jobs}
    d["colocation"] = colocation_entries(simulation_table(), inst.workers, keys)
    if long_job is not None:  # one job bounds the makespan: pairs cannot help
        d["jobs"][0]["steps_remaining"] *= long_job
    return GpuClusterInstance.from_dict(d)


@pytest.mark.parametrize("objective", ["makespan", "max_min_fairness"])
@pytest.mark.parametrize(("n", "seed", "long_job"), [(64, 1, 200.0), (96, 2, None), (128, 3, None)])
def test_priced_space_sharing_equals_monolithic(
    objective: str, n: int, seed: int, long_job: float | None
) -> None:
    inst = shared(n, seed, long_job)
    mono = hetopt.solve(inst, objective, OPTS, lp_strategy="monolithic")
    priced = hetopt.solve(inst, objective, OPTS, lp_strategy="column_generation")
    assert mono.status == priced.status == Status.OPTIMAL
    assert priced.verification.ok, priced.verification.violations
    assert priced.objective_value == pytest.approx(mono.objective_value, rel=1e-9)
    assert priced.gap is not None and priced.gap <= 1e-9
    assert priced.info["lp_strategy"] == "column_generation"
    assert priced.info["lp_columns"] <= priced.info["pair_columns_full"]
    if priced.info["pricing_rounds"] == 0:  # certified without pair columns
        assert priced.info["colocated_pairs"] == 0
    if objective == "makespan":
        assert priced.bound <= priced.objective_value * (1 + 1e-12)
    else:
        assert priced.bound >= priced.objective_value * (1 - 1e-12)


def test_a_job_that_bounds_the_makespan_is_certified_without_pairs() -> None:
    inst = shared(64, 1, long_job=200.0)
    r = hetopt.solve(inst, "makespan", OPTS, lp_strategy="column_generation")
    assert r.info["lp_strategy"] == "column_generation"
    assert r.info["lp_columns"] < r.info["pair_columns_full"]
    # auto keeps small instances on the one monolithic LP
    assert "lp_strategy" not in hetopt.solve(inst, "makespan", OPTS).info


def test_lagrangian_bound_holds_for_any_duals() -> None:
    """Weak duality: whatever the duals, the bound is never below the LP's optimum."""
    inst = shared(48, 4)
    mono = hetopt.solve(inst, "max_min_fairness", OPTS, lp_strategy="monolithic")
    lp, _ = colocation.colocation_lp(inst, "max_min_fairness")
    f = colocation.full_lp(lp)
    z_star = mono.objective_value * lp.scale
    rng = np.random.default_rng(0)
    for _ in range(20):
        bound, _d = colocation.lagrangian_bound(f, rng.normal(size=f.A.shape[0]))
        assert bound >= z_star * (1 - 1e-12)
