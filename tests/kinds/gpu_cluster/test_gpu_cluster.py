"""gpu_cluster max-min fairness and makespan: closed forms, properties, persistence.

Known answers are derived by hand from the definitions in Gavel (OSDI 2020, section 4):
they do not depend on hetopt's code.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hetopt
from hetopt import SolveOptions, Status
from hetopt.kinds.gpu_cluster import GpuClusterInstance, PersistentPolicy, generate


def cluster(workers: dict[str, int], jobs: list[dict]) -> GpuClusterInstance:
    return GpuClusterInstance.from_dict({"kind": "gpu_cluster", "workers": workers, "jobs": jobs})


def job(
    i: int, thr: dict[str, float], sf: int = 1, w: float = 1.0, steps: float | None = None
) -> dict:
    d: dict = {"id": str(i), "throughput": thr, "scale_factor": sf, "weight": w}
    if steps is not None:
        d["steps_remaining"] = steps
    return d


# --------------------------------------------------------------------- closed forms
@pytest.mark.parametrize(("sf", "w"), [(1, 1.0), (4, 1.0), (2, 3.0)])
def test_one_job_one_type(sf: int, w: float) -> None:
    # X = 1, p = thr, value = s / w
    inst = cluster({"v100": 8}, [job(0, {"v100": 7.5}, sf, w, steps=900.0)])
    r = hetopt.solve(inst, "max_min_fairness")
    assert r.status == Status.OPTIMAL
    assert r.objective_value == pytest.approx(sf / w, rel=1e-7)
    m = hetopt.solve(inst, "makespan")
    assert m.objective_value == pytest.approx(900.0 / 7.5, rel=1e-7)


@pytest.mark.parametrize(("n", "gpus", "sf"), [(3, 8, 1), (10, 4, 1), (7, 6, 2), (16, 16, 1)])
def test_identical_jobs_one_type(n: int, gpus: int, sf: int) -> None:
    # each job gets X = min(1, W / (n s)); value = s X; makespan = steps / (thr X)
    inst = cluster({"a": gpus}, [job(i, {"a": 2.0}, sf, steps=100.0) for i in range(n)])
    x = min(1.0, gpus / (n * sf))
    r = hetopt.solve(inst, "max_min_fairness")
    assert r.objective_value == pytest.approx(sf * x, rel=1e-7)
    m = hetopt.solve(inst, "makespan")
    assert m.objective_value == pytest.approx(100.0 / (2.0 * x), rel=1e-7)


def test_one_job_several_types_takes_best() -> None:
    # one job: X = 1 on its fastest type; value = best / p with p = sum thr W / sum W
    thr = {"k80": 1.0, "p100": 4.0, "v100": 6.0}
    W = {"k80": 2, "p100": 3, "v100": 1}
    inst = cluster(W, [job(0, thr, steps=60.0)])
    p = sum(thr[t] * W[t] for t in W) / sum(W.values())
    assert hetopt.solve(inst).objective_value == pytest.approx(6.0 / p, rel=1e-7)
    assert hetopt.solve(inst, "makespan").objective_value == pytest.approx(10.0, rel=1e-7)


def identical_heterogeneous_value(n: int, thr: dict[str, float], W: dict[str, int]) -> float:
    """Closed form for n identical single-GPU jobs: by symmetry every job gets the same
    fractions, the LP becomes a fractional knapsack filled fastest type first."""
    p = sum(thr[t] * W[t] for t in W) / sum(W.values())
    left, total = 1.0, 0.0
    for t in sorted(W, key=lambda t: -thr[t]):
        x = min(W[t] / n, left)
        total += thr[t] * x
        left -= x
    return total / p


@pytest.mark.parametrize("n", [1, 2, 5, 9, 40])
def test_identical_jobs_heterogeneous_closed_form(n: int) -> None:
    thr = {"k80": 1.5, "p100": 5.0, "v100": 9.0}
    W = {"k80": 4, "p100": 2, "v100": 3}
    inst = cluster(W, [job(i, thr) for i in range(n)])
    r = hetopt.solve(inst)
    assert r.objective_value == pytest.approx(identical_heterogeneous_value(n, thr, W), rel=1e-6)
    if n >= sum(W.values()):
        assert r.objective_value == pytest.approx(sum(W.values()) / n, rel=1e-6)


def test_job_bigger_than_a_type_is_kept_off_it() -> None:
    # 8-GPU job, only 4 v100: must run on the 8 k80 only
    inst = cluster({"k80": 8, "v100": 4}, [job(0, {"k80": 1.0, "v100": 5.0}, sf=8, steps=10.0)])
    r = hetopt.solve(inst, "makespan")
    alloc = r.allocation.set_index("worker_type")["fraction"]
    assert alloc["v100"] == pytest.approx(0.0, abs=1e-9)
    assert r.objective_value == pytest.approx(10.0, rel=1e-7)


# --------------------------------------------------------------------- properties
@st.composite
def small_instances(draw: st.DrawFn) -> GpuClusterInstance:
    types = ["a", "b", "c"][: draw(st.integers(1, 3))]
    W = {t: draw(st.integers(1, 6)) for t in types}
    n = draw(st.integers(1, 7))
    jobs = []
    for i in range(n):
        thr = {t: draw(st.sampled_from([0.0, 0.5, 1.0, 2.5, 7.0, 13.0])) for t in types}
        sf = draw(st.sampled_from([1, 1, 2, 4]))
        if not any(v > 0 and W[t] >= sf for t, v in thr.items()):
            thr[types[0]] = 1.0
            sf = 1
        jobs.append(
            job(
                i, thr, sf, draw(st.sampled_from([1.0, 2.0, 5.0])), steps=draw(st.floats(10.0, 1e6))
            )
        )
    return cluster(W, jobs)


PROP = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROP
@given(small_instances())
def test_verifier_passes_and_aware_beats_agnostic(inst: GpuClusterInstance) -> None:
    for obj in ("max_min_fairness", "makespan"):
        aware = hetopt.solve(inst, obj)
        agn = hetopt.solve(inst, obj, agnostic=True)
        assert aware.status == Status.OPTIMAL and agn.status == Status.OPTIMAL
        assert aware.verification.ok, aware.verification.violations
        assert agn.verification.ok, agn.verification.violations
        # every job appears in the result
        assert set(aware.allocation["job"]) == {j.id for j in inst.jobs}
        if obj == "max_min_fairness":
            assert aware.objective_value >= agn.objective_value * (1 - 1e-6) - 1e-9
        else:
            assert aware.objective_value <= agn.objective_value * (1 + 1e-6) + 1e-9


@PROP
@given(small_instances(), st.sampled_from([0.1, 3.0, 250.0]))
def test_scaling_throughputs(inst: GpuClusterInstance, c: float) -> None:
    d = inst.to_dict()
    for j in d["jobs"]:
        j["throughput"] = {t: v * c for t, v in j["throughput"].items()}
    scaled = GpuClusterInstance.from_dict(d)
    mm0, mm1 = hetopt.solve(inst).objective_value, hetopt.solve(scaled).objective_value
    assert mm1 == pytest.approx(mm0, rel=1e-6)
    ms0 = hetopt.solve(inst, "makespan").objective_value
    ms1 = hetopt.solve(scaled, "makespan").objective_value
    assert ms1 == pytest.approx(ms0 / c, rel=1e-6)


@PROP
@given(small_instances(), st.integers(1, 5))
def test_adding_capacity_never_hurts(inst: GpuClusterInstance, extra: int) -> None:
    d = inst.to_dict()
    t0 = next(iter(d["workers"]))
    d["workers"][t0] += extra
    bigger = GpuClusterInstance.from_dict(d)
    # makespan: more GPUs can only help
    assert hetopt.solve(bigger, "makespan").objective_value <= (
        hetopt.solve(inst, "makespan").objective_value * (1 + 1e-6)
    )
    # max-min: p_i depends on the worker counts (Gavel's normalisation), so monotonicity
    # holds for a fixed p, e.g. on a single-type cluster
    if len(d["workers"]) == 1:
        assert hetopt.solve(bigger).objective_value >= hetopt.solve(inst).objective_value * (
            1 - 1e-6
        )


def test_gavel_generated_instances_verify() -> None:
    for seed in range(3):
        inst = generate(200, "k80=20,p100=20,v100=20", seed=seed, priority_fraction=0.2)
        for obj in ("max_min_fairness", "makespan"):
            r = hetopt.solve(inst, obj)
            assert r.status == Status.OPTIMAL and r.verification.ok
            assert r.gap == 0.0 and r.bound == pytest.approx(r.objective_value)
            assert r.verification.objective_value == pytest.approx(r.objective_value, rel=1e-6)


def test_generator_is_reproducible_and_follows_gavel() -> None:
    a = generate(400, seed=7)
    b = generate(400, seed=7)
    assert a == b
    sfs = np.array([j.scale_factor for j in a.jobs])
    assert set(sfs) <= {1, 2, 4, 8}
    assert 0.6 < (sfs == 1).mean() < 0.95  # 0.70 plus models without multi-GPU variants
    dur = np.array([j.steps_remaining / j.throughput["v100"] for j in a.jobs])
    assert dur.min() >= 60 * 10**1.5 * 0.999 and dur.max() <= 60 * 10**4 * 1.001


# --------------------------------------------------------------------- persistence
def test_persistent_policy_warm_resolve_matches_cold() -> None:
    inst = generate(300, "k80=12,p100=12,v100=12", seed=3)
    for obj in ("max_min_fairness", "makespan"):
        policy = PersistentPolicy(inst, obj)
        first = policy.solve()
        assert first.objective_value == pytest.approx(
            hetopt.solve(inst, obj).objective_value, rel=1e-6
        )
        policy.update_workers({"v100": 4, "k80": 20})
        warm = policy.solve()
        d = inst.to_dict()
        d["workers"].update({"v100": 4, "k80": 20})
        cold = hetopt.solve(GpuClusterInstance.from_dict(d), obj)
        assert warm.status == Status.OPTIMAL and warm.verification.ok
        assert warm.objective_value == pytest.approx(cold.objective_value, rel=1e-6)


def test_time_limit_is_honest() -> None:
    inst = generate(3000, "k80=50,p100=50,v100=50", seed=1)
    r = hetopt.solve(inst, "max_min_fairness", SolveOptions(time_limit_s=1e-4, lp_method="simplex"))
    assert r.status in (Status.NO_SOLUTION, Status.FEASIBLE, Status.OPTIMAL)
    if r.status == Status.NO_SOLUTION:
        assert r.objective_value is None and not r.tables
    if r.status != Status.OPTIMAL:
        assert "limit" in r.termination.lower()


def test_result_json_contract() -> None:
    inst = generate(5, "k80=2,p100=2,v100=2", seed=0)
    r = hetopt.solve(inst)
    d = r.to_dict()
    for key in (
        "kind",
        "objective",
        "status",
        "objective_value",
        "bound",
        "gap",
        "runtime_s",
        "tables",
    ):
        assert key in d
    rec = d["tables"]["allocation"][0]
    assert set(rec) >= {"job", "worker_type", "fraction"}
    back = hetopt.Result.from_dict(d)
    assert back.status == r.status and math.isclose(back.objective_value, r.objective_value)
    assert hetopt.verify(inst, back).ok
