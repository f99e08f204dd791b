"""Decomposition: exact components, POP / stratified partitions, repair, executors."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hetopt
from hetopt import SolveOptions, Status, UsageError
from hetopt.decompose import components, solve_components, solve_decomposed
from hetopt.executors import SerialExecutor, executor_for
from hetopt.kinds.gpu_cluster import GpuClusterInstance, generate
from hetopt.kinds.gpu_cluster import verify as V
from hetopt.kinds.gpu_cluster.decompose import (
    components_networkx,
    largest_remainder,
    pop_partition,
    repair_max_min,
    solve_partitioned,
    stratified_partition,
)
from hetopt.kinds.gpu_cluster.maxmin import MaxMinProblem, PersistentMaxMin, solve_max_min

OPTS = SolveOptions(threads=1)


def multi_component(seed: int, n: int = 40) -> GpuClusterInstance:
    """Random cluster whose types fall into 3 groups; each job uses types of one group."""
    rng = np.random.default_rng(seed)
    groups = [["a", "b"], ["c"], ["d", "e", "f"]]
    workers = {t: int(rng.integers(1, 9)) for g in groups for t in g}
    jobs = []
    for i in range(n):
        g = groups[int(rng.integers(len(groups)))]
        thr = {t: float(rng.uniform(0.5, 5.0)) for t in g if rng.uniform() < 0.8}
        if not thr:
            thr = {g[0]: 1.0}
        jobs.append(
            {
                "id": f"j{i}",
                "throughput": thr,
                "scale_factor": int(rng.choice([1, 1, 2])),
                "weight": float(rng.choice([1.0, 2.0])),
                "steps_remaining": float(rng.uniform(100, 1000)),
            }
        )
    # every job must fit somewhere: scale 2 needs a type with >= 2 GPUs
    for j in jobs:
        if all(workers[t] < j["scale_factor"] for t in j["throughput"]):
            j["scale_factor"] = 1
    return GpuClusterInstance.from_dict({"kind": "gpu_cluster", "workers": workers, "jobs": jobs})


def test_closed_form_two_components_keep_whole_cluster_normalisation():
    # types a (2 GPUs) and b (1 GPU); jobs 0-2 only on a, jobs 3-4 only on b, thr 1.
    # p_i = thr . W / sum W: 2/3 on a, 1/3 on b (the WHOLE cluster, 3 GPUs).
    # a: 3 jobs share 2 GPUs -> x = 2/3 each -> value (2/3) / (2/3) = 1.
    # b: 2 jobs share 1 GPU  -> x = 1/2 each -> value (1/2) / (1/3) = 1.5.
    # max-min = min(1, 1.5) = 1. (A sub-instance that kept only its own types would
    # have p_i = 1 and report 2/3 and 1/2 instead.)
    jobs = [{"id": str(i), "throughput": {"a": 1.0}} for i in range(3)]
    jobs += [{"id": str(i), "throughput": {"b": 1.0}} for i in range(3, 5)]
    inst = GpuClusterInstance.from_dict(
        {"kind": "gpu_cluster", "workers": {"a": 2, "b": 1}, "jobs": jobs}
    )
    comps = components(inst)
    assert [c.tolist() for c in comps] == [[0, 1, 2], [3, 4]]
    res = solve_components(inst, "max_min_fairness", OPTS)
    assert res.status == Status.OPTIMAL
    assert res.objective_value == pytest.approx(1.0, rel=1e-9)
    assert res.verification.ok
    vals = res.tables["jobs"].set_index("job")["normalized_throughput"]
    assert vals["0"] == pytest.approx(1.0, rel=1e-7)
    assert min(vals["3"], vals["4"]) == pytest.approx(1.5, rel=1e-7)
    assert res.info["partitions"] == 2 and res.info["method"] == "components"


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("objective", ["max_min_fairness", "makespan", "max_total_throughput"])
def test_components_equal_monolithic(seed, objective):
    inst = multi_component(seed)
    assert len(components(inst)) >= 2
    mono = hetopt.solve(inst, objective, OPTS)
    dec = solve_decomposed(inst, objective, OPTS)
    assert dec.status == mono.status == Status.OPTIMAL
    assert dec.objective_value == pytest.approx(mono.objective_value, rel=1e-6)
    assert dec.verification.ok, dec.verification.violations
    assert set(dec.tables["jobs"]["job"]) == {j.id for j in inst.jobs}


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(3, 25))
def test_components_equal_monolithic_property(seed, n):
    inst = multi_component(seed, n=n)
    mono = hetopt.solve(inst, "max_min_fairness", OPTS)
    dec = solve_components(inst, "max_min_fairness", OPTS)
    assert dec.objective_value == pytest.approx(mono.objective_value, rel=1e-6)
    assert dec.verification.ok


def test_components_agnostic_matches_monolithic():
    inst = multi_component(7)
    mono = hetopt.solve(inst, "max_min_fairness", OPTS, agnostic=True)
    dec = solve_decomposed(inst, "max_min_fairness", OPTS, agnostic=True)
    # the agnostic LP's optimum is not unique, so compare the agnostic LP values: the
    # whole instance's is the min over the components' (and the reported objective is
    # the true min normalised throughput of the merged allocation, re-checked)
    assert dec.verification.ok
    assert dec.info["agnostic"] is True
    parts = [p["agnostic_lp_value"] for p in dec.info["parts"]]
    assert min(parts) == pytest.approx(mono.info["agnostic_lp_value"], rel=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_components_agree_with_networkx(seed):
    inst = multi_component(seed, n=30 + 10 * seed)
    fast, ref = components(inst), components_networkx(inst)
    assert [c.tolist() for c in fast] == [c.tolist() for c in ref]
    assert sorted(np.concatenate(fast).tolist()) == list(range(len(inst.jobs)))


def test_single_component_gavel_instance_is_the_monolithic_solve():
    inst = generate(64, "k80=8,p100=8,v100=8", seed=3)
    assert len(components(inst)) == 1
    dec = solve_decomposed(inst, partitions=1)
    mono = hetopt.solve(inst, "max_min_fairness", OPTS)
    assert dec.objective_value == pytest.approx(mono.objective_value, rel=1e-6)


def test_packing_many_components_is_still_exact():
    inst = multi_component(11, n=60)
    one_task = solve_components(inst, "makespan", OPTS, max_tasks=1)
    many = solve_components(inst, "makespan", OPTS, max_tasks=2)
    assert many.info["partitions"] == 2
    assert many.info["components"] == len(components(inst)) >= 3
    assert many.objective_value == pytest.approx(one_task.objective_value, rel=1e-6)


def test_unsupported_objective_and_bad_arguments():
    inst = multi_component(0)
    with pytest.raises(UsageError, match="method"):
        solve_decomposed(inst, partitions=4, method="nope")
    with pytest.raises(UsageError, match="partitions"):
        solve_decomposed(inst, partitions=0)
    gav = generate(32, "k80=4,p100=4,v100=4", seed=0)
    with pytest.raises(UsageError, match="max_min_fairness"):
        solve_decomposed(gav, "makespan", partitions=2)


# --------------------------------------------------------------------- partitions
@settings(max_examples=40, deadline=None)
@given(
    total=st.integers(0, 5000),
    weights=st.lists(st.floats(0.0, 100.0), min_size=1, max_size=70),
)
def test_largest_remainder_splits_exactly(total, weights):
    out = largest_remainder(total, np.array(weights))
    assert out.sum() == total
    assert (out >= 0).all()
    w = np.array(weights) if sum(weights) > 0 else np.ones(len(weights))
    quota = total * w / w.sum()
    assert np.all(np.abs(out - quota) < 1 + 1e-9)  # Hamilton: each within one of its quota


def test_partitioners_cover_every_job_once_and_respect_capacity():
    inst = generate(300, "k80=20,p100=18,v100=19", seed=2)
    arr = inst.arrays
    rng = np.random.default_rng(0)
    for parts, cap in (
        pop_partition(arr, 4, rng),
        stratified_partition(arr, 4, rng, [j.job_type for j in inst.jobs]),
    ):
        allj = np.sort(np.concatenate(parts))
        assert allj.tolist() == list(range(arr.num_jobs))
        assert (cap.sum(axis=0) <= arr.workers + 1e-9).all()
    _, pop_cap = pop_partition(arr, 4, rng)
    assert pop_cap.sum(axis=0).tolist() == [20.0, 16.0, 16.0]  # POP loses the remainders
    parts, st_cap = stratified_partition(arr, 4, rng, [j.job_type for j in inst.jobs])
    assert st_cap.sum(axis=0).tolist() == [20.0, 18.0, 19.0]
    sizes = [len(p) for p in parts]
    assert max(sizes) - min(sizes) <= 1


def test_stratified_beats_pop_and_is_close_to_monolithic():
    inst = generate(1024, "k80=48,p100=44,v100=44", seed=5)
    mono = hetopt.solve(inst, "max_min_fairness", OPTS)
    pop = solve_partitioned(inst, 4, "pop", OPTS, seed=1)
    strat = solve_partitioned(inst, 4, "stratified", OPTS, seed=1)
    for r in (pop, strat):
        assert r.status == Status.FEASIBLE  # a decomposition proves nothing
        assert r.verification.ok, r.verification.violations
        assert r.objective_value <= mono.objective_value * (1 + 1e-6)
    ratio_pop = pop.objective_value / mono.objective_value
    ratio = strat.objective_value / mono.objective_value
    assert ratio >= 0.99
    assert ratio >= ratio_pop
    assert strat.info["repair_gain"] >= 0
    assert strat.info["method"] == "stratified" and strat.info["partitions"] == 4
    assert len(strat.info["parts"]) == 4
    assert {"build_s", "solve_s", "wall_s"} <= set(strat.info["parts"][0])


def test_custom_partitioner_is_checked_and_used():
    inst = generate(120, "k80=12,p100=12,v100=12", seed=6)

    def halves(arr, k, rng):  # first half / second half, GPUs split evenly
        parts = np.array_split(np.arange(arr.num_jobs), k)
        return parts, np.tile(arr.workers / k, (k, 1))

    res = solve_partitioned(inst, 2, halves, OPTS)
    assert res.info["method"] == "halves" and res.verification.ok
    assert "repair_jobs" in res.info  # custom partitions get the repair by default

    def greedy(arr, k, rng):
        return [np.arange(arr.num_jobs)] * k, np.tile(arr.workers, (k, 1))

    with pytest.raises(UsageError, match="exactly one part"):
        solve_partitioned(inst, 2, greedy, OPTS)


def test_explicit_normalisation_equals_the_kind_lp():
    # one part holding the whole cluster is the kind's own LP
    inst = generate(200, "k80=10,p100=10,v100=10", seed=4)
    arr = inst.arrays
    pb = MaxMinProblem(
        arr.thr,
        arr.scale,
        arr.weight,
        arr.proportional_throughput(),
        arr.allowed,
        arr.workers,
        np.arange(arr.num_jobs),
    )
    sol = solve_max_min(pb, OPTS)
    mono = hetopt.solve(inst, "max_min_fairness", OPTS)
    assert sol.z == pytest.approx(mono.objective_value, rel=1e-6)
    assert V.max_min_value(arr, sol.X) == pytest.approx(sol.z, rel=1e-6)
    assert not V.check_allocation(arr, sol.X)


@pytest.mark.parametrize("seed", range(3))
def test_repair_never_lowers_the_minimum_and_stays_feasible(seed):
    inst = generate(400, "k80=30,p100=25,v100=25", seed=seed)
    arr = inst.arrays
    norm = arr.proportional_throughput()
    # a poor but feasible starting point: POP's merged allocation at k = 8
    pop = solve_partitioned(inst, 8, "pop", OPTS, seed=seed)
    X0 = np.zeros((arr.num_jobs, len(arr.types)))
    al = pop.tables["allocation"]
    pos = {j: i for i, j in enumerate(arr.job_ids)}
    tpos = {t: k for k, t in enumerate(arr.types)}
    X0[al["job"].map(pos), al["worker_type"].map(tpos)] = al["fraction"]
    X1, facts = repair_max_min(arr, X0, norm, arr.thr, 0.05, OPTS)
    assert not V.check_allocation(arr, X1)
    assert V.max_min_value(arr, X1) >= V.max_min_value(arr, X0) * (1 - 1e-9)
    assert facts["repair_jobs"] >= 20


def test_persistent_max_min_matches_fresh_solves():
    inst = generate(60, "k80=6,p100=6,v100=6", seed=8)
    arr = inst.arrays
    norm = arr.proportional_throughput()
    full = MaxMinProblem(
        arr.thr, arr.scale, arr.weight, norm, arr.allowed, arr.workers, np.arange(arr.num_jobs)
    )
    pm = PersistentMaxMin(full, OPTS)
    rng = np.random.default_rng(0)
    for _ in range(4):
        active = rng.uniform(size=arr.num_jobs) < 0.5
        pm.set_active(active)
        warm = pm.solve()
        idx = np.nonzero(active)[0]
        sub = MaxMinProblem(
            arr.thr[idx],
            arr.scale[idx],
            arr.weight[idx],
            norm[idx],
            arr.allowed[idx],
            arr.workers,
            idx,
        )
        cold = solve_max_min(sub, OPTS)
        assert warm.z == pytest.approx(cold.z, rel=1e-6)
        assert (warm.X[~active] == 0).all()


# --------------------------------------------------------------------- executors
def _answer(executor):
    inst = generate(256, "k80=16,p100=16,v100=16", seed=9)
    r = solve_decomposed(inst, partitions=4, executor=executor)
    return r.objective_value, r.tables["allocation"]["fraction"].to_numpy()


@pytest.fixture(scope="module")
def process_pool():
    # one spawned pool for the module: each spawned worker pays hetopt's import once
    with executor_for(workers=2) as ex:
        assert isinstance(ex, ProcessPoolExecutor)
        yield ex


def test_same_answer_serial_threads_processes(process_pool):
    ref_v, ref_x = _answer(SerialExecutor())
    with ThreadPoolExecutor(2) as ex:
        v, x = _answer(ex)
    assert v == pytest.approx(ref_v, rel=1e-9)
    np.testing.assert_allclose(x, ref_x, atol=1e-9)
    v, x = _answer(process_pool)
    assert v == pytest.approx(ref_v, rel=1e-9)
    np.testing.assert_allclose(x, ref_x, atol=1e-9)


def test_components_on_process_pool(process_pool):
    inst = multi_component(3)
    ref = solve_decomposed(inst, "makespan", OPTS)
    got = solve_decomposed(inst, "makespan", OPTS, executor=process_pool)
    assert got.objective_value == pytest.approx(ref.objective_value, rel=1e-9)
    assert got.verification.ok


@pytest.mark.dask
def test_same_answer_on_dask_local_cluster():
    distributed = pytest.importorskip("distributed")
    ref_v, ref_x = _answer(SerialExecutor())
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    )
    client = distributed.Client(cluster)
    try:
        v, x = _answer(client.get_executor(pure=False))
        # the --scheduler-address path connects its own client to the same scheduler
        inst = generate(256, "k80=16,p100=16,v100=16", seed=9)
        by_address = solve_decomposed(
            inst, partitions=4, scheduler_address=cluster.scheduler_address
        )
    finally:
        client.close()
        cluster.close()
    assert v == pytest.approx(ref_v, rel=1e-9)
    np.testing.assert_allclose(x, ref_x, atol=1e-9)
    assert by_address.objective_value == pytest.approx(ref_v, rel=1e-9)
