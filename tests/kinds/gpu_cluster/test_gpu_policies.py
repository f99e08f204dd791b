"""Water-filling, finish-time fairness, total throughput and min-cost policies.

Known answers are hand-derived from the definitions (Gavel, OSDI 2020, section 4;
Themis, NSDI 2020) or computed by independent textbook algorithms written here with
scipy (not hetopt's models).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linprog

import hetopt
from hetopt import Status
from hetopt.errors import InstanceError
from hetopt.kinds.gpu_cluster import GpuClusterInstance, generate
from hetopt.kinds.gpu_cluster import policies as P

WF = "max_min_fairness_water_filling"


def cluster(workers: dict[str, int], jobs: list[dict], **extra: object) -> GpuClusterInstance:
    return GpuClusterInstance.from_dict(
        {"kind": "gpu_cluster", "workers": workers, "jobs": jobs, **extra}
    )


def job(i: int, thr: dict[str, float], sf: int = 1, w: float = 1.0, **extra: object) -> dict:
    return {"id": str(i), "throughput": thr, "scale_factor": sf, "weight": w, **extra}


def random_instance(seed: int) -> GpuClusterInstance:
    rng = np.random.default_rng(seed)
    while True:
        n = int(rng.integers(2, 9))
        workers = {f"t{k}": int(rng.integers(1, 5)) for k in range(3)}
        jobs = []
        for i in range(n):
            thr = {
                f"t{k}": float(np.round(rng.uniform(0.5, 5), 2)) if rng.uniform() < 0.8 else 0.0
                for k in range(3)
            }
            thr["t0"] = thr["t0"] or 1.0
            jobs.append(
                job(
                    i,
                    thr,
                    int(rng.choice([1, 1, 2])),
                    float(rng.choice([1, 2])),
                    steps_remaining=float(rng.uniform(100, 1000)),
                    time_elapsed_s=float(rng.uniform(0, 300)),
                )
            )
        try:
            return cluster(workers, jobs)
        except InstanceError:
            continue


def values_matrix(inst: GpuClusterInstance) -> np.ndarray:
    arr = inst.arrays
    p = arr.proportional_throughput()
    return (arr.scale / (arr.weight * p))[:, None] * np.where(arr.allowed, arr.thr, 0.0)


def leximin_reference(inst: GpuClusterInstance) -> np.ndarray:
    """Textbook leximin (Radunovic & Le Boudec 2007): after each max-min LP, one LP per
    free job asks whether it can rise above the level; those that cannot are frozen."""
    arr = inst.arrays
    C = values_matrix(inst)
    n, T = C.shape
    idx = [(i, t) for i in range(n) for t in range(T) if C[i, t] > 0]
    K = len(idx)
    A, b = [], []
    for i in range(n):
        A.append([1.0 if ii == i else 0.0 for ii, _ in idx] + [0.0])
        b.append(1.0)
    for t in range(T):
        A.append([arr.scale[ii] if tt == t else 0.0 for ii, tt in idx] + [0.0])
        b.append(arr.workers[t])
    val = np.zeros((n, K + 1))
    for k, (i, t) in enumerate(idx):
        val[i, k] = C[i, t]
    frozen: dict[int, float] = {}
    free = set(range(n))
    while free:
        Au, bu = list(A), list(b)
        for i in range(n):
            r = -val[i].copy()
            if i in frozen:
                Au.append(r)
                bu.append(-frozen[i])
            else:
                r[K] = 1.0
                Au.append(r)
                bu.append(0.0)
        c = np.zeros(K + 1)
        c[K] = -1
        z = linprog(c, A_ub=np.array(Au), b_ub=np.array(bu), method="highs").x[K]
        stuck = []
        for i in sorted(free):
            Au2, bu2 = list(A), list(b)
            for j in range(n):
                if j in frozen:
                    Au2.append(-val[j])
                    bu2.append(-frozen[j])
                elif j != i:
                    Au2.append(-val[j])
                    bu2.append(-z * (1 - 1e-9))
            best = -linprog(-val[i], A_ub=np.array(Au2), b_ub=np.array(bu2), method="highs").fun
            if best <= z * (1 + 1e-6):
                stuck.append(i)
        for i in stuck:
            frozen[i] = z * (1 - 1e-9)
            free.discard(i)
    return np.array(sorted(frozen.values()))


# ----------------------------------------------------------------- water-filling
@pytest.mark.parametrize("duals", [True, False])
@pytest.mark.parametrize("seed", range(5))
def test_water_filling_matches_textbook_leximin(seed: int, duals: bool, monkeypatch) -> None:
    monkeypatch.setattr(P, "DUAL_CERTIFICATES", duals)
    inst = random_instance(seed)
    r = hetopt.solve(inst, WF)
    assert r.status == Status.OPTIMAL and r.verification.ok, r.verification
    got = np.sort(r.tables["jobs"]["normalized_throughput"].to_numpy())
    ref = leximin_reference(inst)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-8)
    assert r.info["levels"] >= 1


@pytest.mark.parametrize("seed", range(3))
def test_water_filling_symmetry_groups_match_textbook(seed: int) -> None:
    # Gavel-generated jobs repeat (model, scale factor, weight): one LP row per group
    inst = generate(30, "k80=12,p100=12,v100=12", seed=seed, priority_fraction=0.3)
    r = hetopt.solve(inst, WF)
    assert r.info["symmetry_groups"] < 30 and r.info["levels"] > 1 and r.verification.ok
    got = np.sort(r.tables["jobs"]["normalized_throughput"].to_numpy())
    np.testing.assert_allclose(got, leximin_reference(inst), rtol=1e-5, atol=1e-8)


def test_water_filling_closed_form_two_levels() -> None:
    # job 0 only on a (p0 = 0.5), job 1 on a or b (p1 = 1): leximin gives job 1 all of b
    # (value 1, its time-share limit) and job 0 all of a (value 2); plain max-min only
    # guarantees min = 1.
    inst = cluster({"a": 1, "b": 1}, [job(0, {"a": 1.0}), job(1, {"a": 1.0, "b": 1.0})])
    r = hetopt.solve(inst, WF)
    vals = r.tables["jobs"]["normalized_throughput"].to_numpy()
    np.testing.assert_allclose(vals, [2.0, 1.0], rtol=1e-6)
    assert r.objective_value == pytest.approx(1.0, rel=1e-6)
    assert r.info["levels"] == 2


def test_water_filling_entity_weights_closed_form() -> None:
    # one GPU, three identical jobs; entity A (weight 1) owns jobs 0 and 1, entity B
    # (weight 1) owns job 2: effective weights 1/2, 1/2, 1 -> time shares 1/4, 1/4, 1/2
    inst = cluster(
        {"a": 1},
        [
            job(0, {"a": 3.0}, entity="A"),
            job(1, {"a": 3.0}, entity="A"),
            job(2, {"a": 3.0}, entity="B"),
        ],
        entity_weights={"A": 1.0, "B": 1.0},
    )
    r = hetopt.solve(inst, WF)
    np.testing.assert_allclose(r.tables["jobs"]["time_share"], [0.25, 0.25, 0.5], rtol=1e-6)
    assert r.objective_value == pytest.approx(0.5, rel=1e-6)
    assert r.verification.ok


@pytest.mark.parametrize("seed", range(3))
def test_water_filling_same_min_and_leximin_better(seed: int) -> None:
    inst = generate(60, "k80=6,p100=6,v100=6", seed=seed, priority_fraction=0.2)
    wf = hetopt.solve(inst, WF)
    mm = hetopt.solve(inst, "max_min_fairness")
    assert wf.objective_value == pytest.approx(mm.objective_value, rel=1e-5)
    a = np.sort(wf.tables["jobs"]["normalized_throughput"].to_numpy())
    b = np.sort(mm.tables["jobs"]["normalized_throughput"].to_numpy())
    tol = 1e-5 * b.max()
    diff = np.nonzero(np.abs(a - b) > tol)[0]
    assert len(diff) == 0 or a[diff[0]] > b[diff[0]]  # lexicographically >=


# ------------------------------------------------------------ finish-time fairness
@pytest.mark.parametrize(("elapsed", "expected"), [(0.0, 0.75), (50.0, 100.0 / (50.0 + 200.0 / 3))])
def test_ftf_closed_form(elapsed: float, expected: float) -> None:
    # types a, b with one GPU each; job 0 runs 2/s on a and 1/s on b, job 1 the reverse.
    # Isolated share: half of each type -> 1.5 steps/s; best: each on its fast type, 2/s.
    jobs = [
        job(0, {"a": 2.0, "b": 1.0}, steps_remaining=100.0, time_elapsed_s=elapsed),
        job(1, {"a": 1.0, "b": 2.0}, steps_remaining=100.0, time_elapsed_s=elapsed),
    ]
    r = hetopt.solve(cluster({"a": 1, "b": 1}, jobs), "finish_time_fairness")
    assert r.status == Status.OPTIMAL and r.verification.ok
    assert r.objective_value == pytest.approx(expected, rel=2e-6)
    assert r.bound <= r.objective_value <= r.bound * (1 + 2e-6)


@pytest.mark.parametrize("seed", range(6))
def test_ftf_is_optimal_by_scipy_lp(seed: int) -> None:
    # independent check: at (1 - 1e-4) * the reported ratio, the feasibility LP is infeasible
    inst = random_instance(seed)
    r = hetopt.solve(inst, "finish_time_fairness")
    assert r.status == Status.OPTIMAL and r.verification.ok, r.verification
    rho = r.objective_value * (1 - 1e-4)
    arr = inst.arrays
    n, T = arr.thr.shape
    W = arr.workers.sum()
    elapsed = np.array([j.time_elapsed_s for j in inst.jobs])
    iso = (np.where(arr.allowed, arr.thr, 0) @ arr.workers / W) * np.minimum(1, W / (n * arr.scale))
    t_iso = elapsed + arr.steps / iso
    gap = rho * t_iso - elapsed
    if (gap <= 0).any():
        return  # that ratio is below what some job could reach even alone: infeasible
    need = arr.steps / gap
    idx = [(i, t) for i in range(n) for t in range(T) if arr.allowed[i, t]]
    A, b = [], []
    for i in range(n):
        A.append([1.0 if ii == i else 0.0 for ii, _ in idx])
        b.append(1.0)
        A.append([-arr.thr[ii, tt] if ii == i else 0.0 for ii, tt in idx])
        b.append(-need[i])
    for t in range(T):
        A.append([arr.scale[ii] if tt == t else 0.0 for ii, tt in idx])
        b.append(arr.workers[t])
    res = linprog(np.zeros(len(idx)), A_ub=np.array(A), b_ub=np.array(b), method="highs")
    assert res.status == 2  # infeasible


# ------------------------------------------------------------ throughput and cost
def test_max_total_throughput_closed_form() -> None:
    jobs = [job(i, {"a": 1.0 + i}, w=float(i + 1)) for i in range(3)]
    r = hetopt.solve(cluster({"a": 2}, jobs), "max_total_throughput")
    assert r.objective_value == pytest.approx(5.0, rel=1e-7)  # the two heaviest run
    assert r.verification.ok


def test_min_cost_closed_forms() -> None:
    cost = {"a": 1.0, "b": 3.0}
    one = [job(0, {"a": 1.0, "b": 2.0}, steps_remaining=150.0)]
    r = hetopt.solve(cluster({"a": 1, "b": 1}, one, cost_per_hour=cost), "min_cost")
    assert r.objective_value == pytest.approx(0.5, rel=1e-6)  # all on the cheap type
    slo = [job(0, {"a": 1.0, "b": 2.0}, steps_remaining=150.0, deadline_s=100.0)]
    r = hetopt.solve(cluster({"a": 1, "b": 1}, slo, cost_per_hour=cost), "min_cost")
    # needs 1.5 steps/s: X_a = X_b = 1/2, value (0.25 + 0.5) / (0.5 + 1.5)
    assert r.objective_value == pytest.approx(0.375, rel=1e-6)
    assert r.info["slo_all_met"] and bool(r.tables["jobs"]["deadline_met"].all())
    assert r.verification.ok


def test_min_cost_reports_unmet_slos() -> None:
    jobs = [job(i, {"a": 1.0}, steps_remaining=100.0, deadline_s=100.0) for i in range(2)]
    inst = cluster({"a": 1}, jobs, cost_per_hour={"a": 2.0})
    r = hetopt.solve(inst, "min_cost")
    assert r.status.has_solution and r.verification.ok
    assert len(r.info["slo_unmet"]) == 1 and not r.info["slo_all_met"]
    met = r.tables["jobs"].set_index("job")["deadline_met"]
    assert met.sum() == 1 and not met[r.info["slo_unmet"][0]]


def test_min_cost_needs_prices() -> None:
    with pytest.raises(InstanceError, match="cost_per_hour"):
        hetopt.solve(cluster({"a": 1}, [job(0, {"a": 1.0})]), "min_cost")


def test_ftf_needs_steps() -> None:
    with pytest.raises(InstanceError, match=r"jobs\[0\].steps_remaining"):
        hetopt.solve(cluster({"a": 1}, [job(0, {"a": 1.0})]), "finish_time_fairness")


# --------------------------------------------------------------------- agnostic
@pytest.mark.parametrize("seed", range(3))
def test_aware_never_worse_than_agnostic(seed: int) -> None:
    inst = generate(40, "k80=4,p100=4,v100=4", seed=seed)
    inst = GpuClusterInstance.from_dict(
        {**inst.to_dict(), "cost_per_hour": {"k80": 0.9, "p100": 1.46, "v100": 2.48}}
    )
    for obj, better in [
        (WF, 1),
        ("finish_time_fairness", -1),
        ("max_total_throughput", 1),
        ("min_cost", 1),
    ]:
        aware = hetopt.solve(inst, obj)
        agn = hetopt.solve(inst, obj, agnostic=True)
        assert aware.verification.ok and agn.verification.ok, obj
        assert agn.info["agnostic"] and agn.bound is None
        slack = 1e-5 * abs(aware.objective_value)
        assert better * (aware.objective_value - agn.objective_value) >= -slack, obj
        assert math.isfinite(agn.objective_value)


# -------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (
            {"colocation": [{"worker_type": "x", "job_types": ["A", "B"], "throughput": [1, 1]}]},
            "colocation[0].worker_type",
        ),
        (
            {
                "colocation": [
                    {"worker_type": "a", "job_types": ["A", "B"], "throughput": [1.0, 1.0]},
                    {"worker_type": "a", "job_types": ["B", "A"], "throughput": [1.0, 1.0]},
                ]
            },
            "colocation[1]",
        ),
        (
            {"colocation": [{"worker_type": "a", "job_types": ["A"], "throughput": [1.0]}]},
            "colocation[0].job_types",
        ),
        ({"entity_weights": {"T": 1.0}}, "jobs[0].entity"),
    ],
)
def test_bad_policy_fields_name_the_field(extra: dict, field: str) -> None:
    jobs = [job(0, {"a": 1.0}, entity="U", job_type="A")]
    with pytest.raises(InstanceError) as err:
        cluster({"a": 1}, jobs, **extra)
    assert field in str(err.value)


def test_cli_new_objectives(tmp_path) -> None:
    from click.testing import CliRunner

    from hetopt.cli import main

    inst = cluster(
        {"a": 2, "b": 1}, [job(i, {"a": 1.0, "b": 2.0}, steps_remaining=50.0) for i in range(3)]
    )
    path = tmp_path / "i.json"
    inst.to_json(path)
    for obj in (WF, "finish_time_fairness", "max_total_throughput"):
        res = CliRunner().invoke(main, ["solve", str(path), "--objective", obj, "--json"])
        assert res.exit_code == 0, res.output
    res = CliRunner().invoke(main, ["solve", str(path), "--objective", "min_cost"])
    assert res.exit_code == 3 and "cost_per_hour" in res.output


POLICY_DIR = Path(__file__).resolve().parents[3] / "instances" / "gpu_cluster" / "policies"
POLICY_ANSWERS = json.loads((POLICY_DIR / "answers.json").read_text())


@pytest.mark.parametrize("rel", sorted(POLICY_ANSWERS))
def test_shipped_policy_instances(rel: str) -> None:
    for objective, expected in POLICY_ANSWERS[rel].items():
        r = hetopt.solve(POLICY_DIR / rel, objective)
        assert r.status == Status.OPTIMAL and r.verification.ok
        assert r.objective_value == pytest.approx(expected, rel=2e-6)
