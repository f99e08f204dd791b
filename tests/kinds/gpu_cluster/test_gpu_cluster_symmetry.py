"""gpu_cluster: max-min fairness and makespan over symmetry groups of identical jobs.

The grouped LP must reach the per-job LP's optimum (1e-9), give every job of a group the
same shares and pass the independent verifier, which reads only the per-job table.
"""

from __future__ import annotations

import numpy as np
import pytest

import hetopt
from hetopt import SolveOptions, Status
from hetopt.kinds.gpu_cluster import GpuClusterInstance, generate
from hetopt.kinds.gpu_cluster.formulations import job_groups

OPTS = SolveOptions(threads=1)


def _mixed(n: int, seed: int, multi_gpu: bool) -> GpuClusterInstance:
    g = max(4, n // 12)
    return generate(n, f"k80={g},p100={g},v100={g}", seed=seed, multi_gpu=multi_gpu)


@pytest.mark.parametrize("objective", ["max_min_fairness", "makespan"])
@pytest.mark.parametrize(("n", "seed", "multi_gpu"), [(300, 1, False), (300, 2, True)])
def test_grouped_equals_per_job(objective: str, n: int, seed: int, multi_gpu: bool) -> None:
    inst = _mixed(n, seed, multi_gpu)
    if objective == "makespan":  # identical steps too, so that makespan groups form
        data = inst.to_dict()
        for j in data["jobs"]:
            j["steps_remaining"] = 1000.0 * j["throughput"]["v100"]
        inst = GpuClusterInstance.from_dict(data)
    per_job = hetopt.solve(inst, objective, OPTS, symmetry=False)
    grouped = hetopt.solve(inst, objective, OPTS)
    assert per_job.status == grouped.status == Status.OPTIMAL
    assert grouped.verification.ok, grouped.verification.violations
    assert grouped.objective_value == pytest.approx(per_job.objective_value, rel=1e-9)
    assert grouped.verification.objective_value == pytest.approx(per_job.objective_value, rel=1e-6)
    groups = grouped.info["symmetry_groups"]
    assert 1 < groups < n and "symmetry_groups" not in per_job.info
    # every job of a group gets the group's shares
    group_of, _, _ = job_groups(inst.arrays, objective == "makespan")
    alloc = grouped.tables["allocation"].pivot(
        index="job", columns="worker_type", values="fraction"
    )
    X = alloc.loc[inst.arrays.job_ids].fillna(0.0).to_numpy()
    for g in range(groups):
        rows = X[group_of == g]
        assert np.abs(rows - rows[0]).max() <= 1e-12
    assert len(grouped.tables["allocation"]) == len(per_job.tables["allocation"])


def test_groups_keep_first_occurrence_order_and_distinct_jobs_keep_the_model() -> None:
    inst = _mixed(200, 3, True)
    group_of, reps, mult = job_groups(inst.arrays, False)
    assert (np.diff(reps) > 0).all() and reps[0] == 0
    assert (group_of[reps] == np.arange(len(reps))).all()
    assert mult.sum() == 200
    # no two jobs alike: the grouped model is the per-job model
    data = inst.to_dict()
    for k, j in enumerate(data["jobs"]):
        j["weight"] = 1.0 + k / 1000
    distinct = GpuClusterInstance.from_dict(data)
    r = hetopt.solve(distinct, "max_min_fairness", OPTS)
    assert "symmetry_groups" not in r.info and r.verification.ok


def test_agnostic_is_never_grouped() -> None:
    # the agnostic LP's optimum does not fix the true value: keep the per-job LP
    inst = _mixed(200, 1, True)
    a = hetopt.solve(inst, "max_min_fairness", OPTS, agnostic=True)
    b = hetopt.solve(inst, "max_min_fairness", OPTS, agnostic=True, symmetry=False)
    assert "symmetry_groups" not in a.info
    assert a.objective_value == b.objective_value
