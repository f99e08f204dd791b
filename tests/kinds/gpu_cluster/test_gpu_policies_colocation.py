"""Space sharing (co-location) in max_min_fairness and makespan.

The reference is Gavel's own per-job-pair LP (one variable per pair of jobs and type,
O(N^2)), written here with scipy: the aggregated model must reach the same optimum.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linprog

import hetopt
from hetopt import Status
from hetopt.kinds.base import UsageError
from hetopt.kinds.gpu_cluster import GpuClusterInstance, generate
from hetopt.kinds.gpu_cluster import verify as V
from hetopt.kinds.gpu_cluster.colocation import _circle, _transport
from hetopt.kinds.gpu_cluster.gavel import simulation_table
from hetopt.kinds.gpu_cluster.trace import colocation_entries


def with_pairs(inst: GpuClusterInstance) -> GpuClusterInstance:
    keys = {(j.job_type, j.scale_factor) for j in inst.jobs}
    d = inst.to_dict()
    d["colocation"] = colocation_entries(simulation_table(), inst.workers, keys)
    return GpuClusterInstance.from_dict(d)


def one_type(n: int, rate: float, gpus: int = 1, sf: int = 1) -> GpuClusterInstance:
    jobs = [
        {"id": str(i), "throughput": {"a": 1.0}, "job_type": "A", "scale_factor": sf,
         "steps_remaining": 100.0}
        for i in range(n)
    ]  # fmt: skip
    return GpuClusterInstance.from_dict(
        {
            "kind": "gpu_cluster",
            "workers": {"a": gpus},
            "jobs": jobs,
            "colocation": [
                {
                    "worker_type": "a",
                    "job_types": ["A", "A"],
                    "scale_factor": sf,
                    "throughput": [rate, rate],
                }
            ],
        }
    )


def pairwise_reference(inst: GpuClusterInstance, objective: str) -> float:
    """Gavel's per-job-pair LP (exact, O(N^2) variables) with scipy's HiGHS."""
    arr = inst.arrays
    n, T = arr.thr.shape
    rate = {}
    for e in inst.colocation or []:
        a, b = e.job_types
        if min(e.throughput) <= 0:
            continue
        t = arr.types.index(e.worker_type)
        if a == b:
            rate[(t, a, a, e.scale_factor)] = (np.mean(e.throughput),) * 2
        else:
            rate[(t, a, b, e.scale_factor)] = tuple(e.throughput)
            rate[(t, b, a, e.scale_factor)] = tuple(reversed(e.throughput))
    solo = [(i, t) for i in range(n) for t in range(T) if arr.allowed[i, t]]
    pairs = []
    for i, j in itertools.combinations(range(n), 2):
        ji, jj = inst.jobs[i], inst.jobs[j]
        if ji.scale_factor != jj.scale_factor:
            continue
        for t in range(T):
            key = (t, ji.job_type, jj.job_type, ji.scale_factor)
            if key in rate and arr.workers[t] >= ji.scale_factor:
                pairs.append((i, j, t, *rate[key]))
    nv = len(solo) + len(pairs) + 1
    thr = np.zeros((n, nv))
    A, b = [], []
    time_rows = np.zeros((n, nv))
    cap = np.zeros((T, nv))
    for k, (i, t) in enumerate(solo):
        thr[i, k] = arr.thr[i, t]
        time_rows[i, k] = 1
        cap[t, k] = arr.scale[i]
    for k, (i, j, t, ri, rj) in enumerate(pairs, start=len(solo)):
        thr[i, k], thr[j, k] = ri, rj
        time_rows[i, k] = time_rows[j, k] = 1
        cap[t, k] = arr.scale[i]
    A += list(time_rows) + list(cap)
    b += [1.0] * n + list(arr.workers)
    if objective == "max_min_fairness":
        coef = arr.scale / (arr.weight * arr.proportional_throughput())
    else:
        coef = 1.0 / arr.steps
    for i in range(n):
        r = -coef[i] * thr[i]
        r[-1] = 1.0
        A.append(r)
        b.append(0.0)
    c = np.zeros(nv)
    c[-1] = -1
    res = linprog(c, A_ub=np.array(A), b_ub=np.array(b), method="highs")
    z = res.x[-1]
    return z if objective == "max_min_fairness" else 1.0 / z


# ------------------------------------------------------------------- closed forms
def test_two_jobs_share_one_gpu() -> None:
    # alone: half the time each (value 0.5); together: full time at 0.8 steps/s each
    r = hetopt.solve(one_type(2, 0.8), "max_min_fairness")
    assert r.objective_value == pytest.approx(0.8, rel=1e-7) and r.verification.ok
    shared = r.tables["allocation"].query("other_job != ''")
    assert sorted(zip(shared["job"], shared["other_job"], strict=True)) == [("0", "1"), ("1", "0")]
    np.testing.assert_allclose(shared["fraction"], 1.0, rtol=1e-7)


def test_three_jobs_pair_in_a_triangle() -> None:
    # pair time d each with capacity 3 d / 2 <= 1: d = 2/3, throughput 0.8 * 2/3 = 8/15
    r = hetopt.solve(one_type(3, 0.8), "max_min_fairness")
    assert r.objective_value == pytest.approx(8 / 15, rel=1e-6)
    assert r.verification.ok
    assert r.tables["jobs"]["shared_time"].to_numpy() == pytest.approx([2 / 3] * 3, rel=1e-6)


def test_a_job_cannot_share_with_itself() -> None:
    r = hetopt.solve(one_type(1, 0.9), "max_min_fairness")
    assert r.objective_value == pytest.approx(1.0, rel=1e-7)
    assert r.info["colocated_pairs"] == 0


def test_dominated_pairs_are_dropped_and_change_nothing() -> None:
    # 0.4 + 0.4 < 1 solo speed: time-slicing is at least as good
    r = hetopt.solve(one_type(2, 0.4), "max_min_fairness")
    assert r.objective_value == pytest.approx(0.5, rel=1e-7)
    assert r.info["dominated_pairs_dropped"] == 1


def test_mixed_scale_factors_do_not_pair() -> None:
    d = one_type(2, 0.8, gpus=4).to_dict()
    d["jobs"][1]["scale_factor"] = 2
    r = hetopt.solve(GpuClusterInstance.from_dict(d), "max_min_fairness")
    assert r.verification.ok and r.info["colocated_pairs"] == 0


# -------------------------------------------------- exact against Gavel's pair LP
@pytest.mark.parametrize("objective", ["max_min_fairness", "makespan"])
@pytest.mark.parametrize("seed", range(5))
def test_matches_pairwise_lp(seed: int, objective: str) -> None:
    inst = with_pairs(generate(9, "k80=2,p100=2,v100=3", seed=seed))
    r = hetopt.solve(inst, objective)
    assert r.status == Status.OPTIMAL and r.verification.ok, r.verification
    assert r.objective_value == pytest.approx(pairwise_reference(inst, objective), rel=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_colocation_never_hurts(seed: int) -> None:
    base = generate(40, "k80=4,p100=4,v100=4", seed=seed, priority_fraction=0.2)
    co = with_pairs(base)
    for obj, sign in [("max_min_fairness", 1), ("makespan", -1)]:
        a = hetopt.solve(base, obj).objective_value
        r = hetopt.solve(co, obj)
        assert r.verification.ok, r.verification
        assert sign * (r.objective_value - a) >= -1e-6 * abs(a), obj
    agn = hetopt.solve(co, "max_min_fairness", agnostic=True)
    assert agn.verification.ok


def test_other_objectives_refuse_colocation() -> None:
    with pytest.raises(UsageError, match="space sharing"):
        hetopt.solve(one_type(2, 0.8), "max_min_fairness_water_filling")


# --------------------------------------------------------------- verifier, splits
def test_verifier_counts_pairs_against_capacity() -> None:
    inst = one_type(4, 0.8)
    ok = pd.DataFrame(
        {"job": ["0", "1", "2", "3"], "worker_type": "a", "fraction": 0.0, "other_job": ""}
    )
    pairs = pd.DataFrame(
        {"job": ["0", "1", "2", "3"], "worker_type": "a", "fraction": 1.0,
         "other_job": ["1", "0", "3", "2"]}
    )  # fmt: skip
    table = pd.concat([ok, pairs], ignore_index=True)
    v = V.verify(inst, "max_min_fairness", 0.8, table)
    assert not v.ok and any("GPUs used" in p for p in v.violations)  # 2 pairs, 1 GPU
    half = table.assign(fraction=np.where(table["other_job"] != "", 0.5, 0.0))
    assert V.verify(inst, "max_min_fairness", 0.4, half).ok
    lopsided = half.copy()
    lopsided.loc[4, "fraction"] = 0.3
    assert not V.verify(inst, "max_min_fairness", 0.24, lopsided).ok


@pytest.mark.parametrize("seed", range(20))
def test_circle_pairing_is_exact(seed: int) -> None:
    rng = np.random.default_rng(seed)
    deg = rng.uniform(0, 1, int(rng.integers(2, 12)))
    deg[0] = min(deg[0] * 3, deg[1:].sum())  # one big job, still <= the rest
    got = np.zeros(len(deg))
    for i, j, f in _circle(deg):
        assert i != j and f > 0
        got[i] += f
        got[j] += f
    np.testing.assert_allclose(got, deg, atol=1e-12)


def test_transport_plan_is_exact() -> None:
    rng = np.random.default_rng(0)
    s = rng.uniform(0, 1, 7)
    d = rng.uniform(0, 1, 5)
    d *= s.sum() / d.sum()
    rows, cols = np.zeros(7), np.zeros(5)
    for i, j, f in _transport(s, d):
        rows[i] += f
        cols[j] += f
    np.testing.assert_allclose(rows, s, atol=1e-12)
    np.testing.assert_allclose(cols, d, atol=1e-12)
