"""Partitioned multi_resource MILP (disjoint server groups, same fair share)."""

from __future__ import annotations

import pytest

import hetopt
from hetopt import SolveOptions, Status, UsageError
from hetopt.decompose import solve_decomposed
from hetopt.kinds.multi_resource import MultiResourceInstance
from hetopt.kinds.multi_resource.decompose import split
from hetopt.kinds.multi_resource.generate import generate

OPTS = SolveOptions(threads=1, time_limit_s=60)


def test_split_is_a_partition_with_the_cluster_fair_share():
    inst = generate(40, 6, seed=2)
    subs = split(inst, 3, seed=0)
    assert sorted(j.id for s in subs for j in s.jobs) == sorted(j.id for j in inst.jobs)
    assert sorted(v.id for s in subs for v in s.servers) == sorted(v.id for v in inst.servers)
    for s in subs:
        assert s.arrays.cpus_per_gpu == pytest.approx(inst.arrays.cpus_per_gpu)
        assert s.arrays.mem_gb_per_gpu == pytest.approx(inst.arrays.mem_gb_per_gpu)
        # the fair-share floors are the whole cluster's
        pos = {j.id: i for i, j in enumerate(inst.jobs)}
        for i, j in enumerate(s.jobs):
            assert s.arrays.fair_share[i] == inst.arrays.fair_share[pos[j.id]]


@pytest.mark.parametrize("seed", range(2))
def test_partitioned_is_feasible_and_bounded_by_the_monolithic_optimum(seed):
    inst = generate(48, 6, seed=seed)
    mono = hetopt.solve(inst, options=OPTS)
    assert mono.status == Status.OPTIMAL
    dec = solve_decomposed(inst, options=OPTS, partitions=3, seed=seed)
    assert dec.status == Status.FEASIBLE
    assert dec.verification.ok, dec.verification.violations
    assert set(dec.tables["placement"]["job"]) == {j.id for j in inst.jobs}
    assert dec.objective_value <= mono.objective_value * (1 + 1e-6)
    assert dec.objective_value >= 0.9 * mono.objective_value
    assert dec.info["partitions"] == 3 and len(dec.info["parts"]) == 3


def test_heterogeneous_servers_that_would_change_the_fair_share_are_refused():
    data = generate(8, 2, seed=0).to_dict()
    data["servers"][1]["cpus"] = 48.0  # the two parts would see 3 and 6 CPUs per GPU
    inst = MultiResourceInstance.from_dict(data)
    with pytest.raises(UsageError, match="fair-share"):
        solve_decomposed(inst, partitions=2)
    with pytest.raises(UsageError, match="servers"):
        split(generate(8, 2, seed=0), 3)
