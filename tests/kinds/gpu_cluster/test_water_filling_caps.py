"""Water-filling's cap certificates (issue 19): jobs frozen ahead at the largest value they
can reach alone, proven by the next level LP, give exactly the one-LP-per-level answer."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import linprog

import hetopt
from hetopt import SolveOptions, Status
from hetopt.kinds.gpu_cluster import GpuClusterInstance, generate
from hetopt.kinds.gpu_cluster import policies as P

WF = "max_min_fairness_water_filling"
OPTS = SolveOptions(threads=1)


def distinct_weights(n: int, seed: int, per_type: int | None = None) -> GpuClusterInstance:
    """No two jobs alike: most levels are single jobs at their caps (roomy cluster)."""
    g = per_type if per_type is not None else max(8, n // 3)
    d = generate(n, f"k80={g},p100={g},v100={g}", seed=seed, priority_fraction=0.2).to_dict()
    rng = np.random.default_rng(seed)
    for job in d["jobs"]:
        job["weight"] = float(np.round(rng.uniform(1, 5), 3))
    return GpuClusterInstance.from_dict(d)


def values(res) -> np.ndarray:
    return res.tables["jobs"]["normalized_throughput"].to_numpy()


def one_lp_per_level(monkeypatch, inst: GpuClusterInstance, **params):
    with monkeypatch.context() as m:
        m.setattr(P, "CAP_CERTIFICATES", False)
        return hetopt.solve(inst, WF, options=OPTS, **params)


def assert_same_leximin(got, ref, rtol: float = 1e-9) -> None:
    assert got.status == ref.status == Status.OPTIMAL
    assert got.verification.ok, got.verification.violations
    assert got.info["levels"] == ref.info["levels"]
    assert (got.tables["jobs"]["level"] == ref.tables["jobs"]["level"]).all()
    np.testing.assert_allclose(values(got), values(ref), rtol=rtol)
    # (a level proven at a cap has the cap as its value, the LP's z within HiGHS's
    # tolerances of it)
    np.testing.assert_allclose(
        got.info["level_values_first"], ref.info["level_values_first"], rtol=rtol
    )
    assert got.objective_value == pytest.approx(ref.objective_value, rel=rtol)
    assert got.bound == pytest.approx(ref.bound, rel=1e-12)


@pytest.mark.parametrize("n,seed", [(150, 0), (200, 1), (120, 2)])
def test_caps_give_the_one_lp_per_level_answer_in_fewer_lps(monkeypatch, n, seed):
    inst = distinct_weights(n, seed)
    got = hetopt.solve(inst, WF, options=OPTS)
    ref = one_lp_per_level(monkeypatch, inst)
    assert_same_leximin(got, ref)
    assert got.info["groups_frozen_at_caps"] > 0 == ref.info["groups_frozen_at_caps"]
    assert got.info["level_lps"] < ref.info["level_lps"]
    assert got.info["lp_solves"] == (
        got.info["level_lps"] + got.info["check_lps"] + got.info["cold_resolves"]
    )


@pytest.mark.parametrize("n,seed,per_type", [(150, 3, None), (160, 4, 40), (130, 5, 30)])
def test_wrong_guesses_are_released_and_the_answer_is_unchanged(monkeypatch, n, seed, per_type):
    # guess every free job but one at its cap: the LP is infeasible or leaves some below
    # their caps; those are released (bounds only) and the level LP solved again
    inst = distinct_weights(n, seed, per_type)
    ref = one_lp_per_level(monkeypatch, inst)
    released: list[int] = []
    release = P.release_ahead

    def counting(h, wrong):
        released.append(len(wrong))
        release(h, wrong)

    monkeypatch.setattr(P, "release_ahead", counting)
    monkeypatch.setattr(P, "CAP_LOOKAHEAD", 10**6)
    got = hetopt.solve(inst, WF, options=OPTS)
    assert released, "no guess was wrong: the test does not exercise the release"
    assert_same_leximin(got, ref)


def test_agnostic_and_entity_weights_keep_their_answer(monkeypatch):
    d = distinct_weights(100, 6).to_dict()
    for k, job in enumerate(d["jobs"]):
        if k % 3 == 0:
            job["entity"] = f"e{k % 4}"
    d["entity_weights"] = {"e0": 2.0, "e1": 0.5, "e2": 1.0, "e3": 1.5}
    inst = GpuClusterInstance.from_dict(d)
    got = hetopt.solve(inst, WF, options=OPTS)
    assert got.info["groups_frozen_at_caps"] > 0
    assert_same_leximin(got, one_lp_per_level(monkeypatch, inst))
    # agnostic: the levels are the agnostic view's; the reported values (true throughputs
    # of a non-unique agnostic allocation) may differ between optima
    got = hetopt.solve(inst, WF, options=OPTS, agnostic=True)
    ref = one_lp_per_level(monkeypatch, inst, agnostic=True)
    assert got.info["groups_frozen_at_caps"] > 0
    assert got.info["levels"] == ref.info["levels"]
    assert (got.tables["jobs"]["level"] == ref.tables["jobs"]["level"]).all()


def test_small_lps_solve_one_lp_per_level(monkeypatch):
    # below CAP_MIN_ROWS rows the loop is the one-LP-per-level loop, LP for LP
    inst = distinct_weights(P.CAP_MIN_ROWS - 4, 7)
    got = hetopt.solve(inst, WF, options=OPTS)
    ref = one_lp_per_level(monkeypatch, inst)
    assert got.info["groups_frozen_at_caps"] == 0
    assert got.info["lp_solves"] == ref.info["lp_solves"]
    np.testing.assert_array_equal(values(got), values(ref))


@pytest.mark.parametrize("seed", range(4))
def test_value_caps_are_each_rows_lp_optimum(seed):
    # the fractional knapsack against scipy's LP of each row alone
    rng = np.random.default_rng(seed)
    n = 12
    row = np.sort(rng.integers(0, n, 40))
    coef = rng.uniform(0.1, 3.0, len(row))
    upper = rng.choice([0.0, 0.25, 0.6, 1.0, 2.0], len(row))
    caps = P.value_caps(coef, row, upper, n)
    for i in range(n):
        k = np.nonzero(row == i)[0]
        if len(k) == 0:
            assert caps[i] == 0.0
            continue
        lp = linprog(
            -coef[k], A_ub=np.ones((1, len(k))), b_ub=[1.0], bounds=[(0.0, u) for u in upper[k]]
        )
        assert caps[i] == pytest.approx(-lp.fun, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("seed", range(12))
def test_tiny_tight_clusters_with_guesses_on(monkeypatch, seed):
    # guesses switched on for tiny LPs, where they are often wrong (few GPUs, jobs
    # needing several): the answer stays the one-LP-per-level answer (the same levels;
    # values to the freeze slack: a frozen job may end anywhere in [its level
    # (1 - LEVEL_TOL / 10), its level] when the last LP has several optima)
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(3, 12))
    workers = {f"t{k}": int(rng.integers(1, 6)) for k in range(3)}
    jobs = []
    for i in range(n):
        thr = {f"t{k}": float(np.round(rng.uniform(0.5, 5), 2)) for k in range(3)}
        for k in range(3):
            if rng.uniform() < 0.2:
                thr[f"t{k}"] = 0.0
        thr["t0"] = thr["t0"] or 1.0
        jobs.append(
            {
                "id": str(i),
                "throughput": thr,
                "scale_factor": int(rng.choice([1, 1, 2])),
                "weight": float(np.round(rng.uniform(1, 5), 3)),
            }
        )
    inst = GpuClusterInstance.from_dict({"kind": "gpu_cluster", "workers": workers, "jobs": jobs})
    monkeypatch.setattr(P, "CAP_MIN_ROWS", 1)
    monkeypatch.setattr(P, "CAP_LOOKAHEAD", int(rng.choice([1, 2, 10**6])))
    got = hetopt.solve(inst, WF, options=OPTS)
    assert_same_leximin(got, one_lp_per_level(monkeypatch, inst), rtol=P.LEVEL_TOL / 5)


def test_freeze_ahead_takes_whole_ties_and_release_frees_the_rows():
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    n = 6
    h.addVar(0.0, math.inf)  # z: column 0
    for _ in range(n):
        h.addRow(0.0, math.inf, 1, np.array([0], dtype=np.int32), np.array([-1.0]))
    frows = np.arange(n)
    caps = np.array([3.0, 1.0, 2.0, 2.0, 2.0, 5.0])
    free = np.ones(n, dtype=bool)
    ahead = P.freeze_ahead(h, frows, 0, caps, free, 2)  # rows 1, then 2 splits the tie 2,3,4
    assert [a.rows.tolist() for a in ahead] == [[1], [2, 3, 4]]
    assert [a.cap for a in ahead] == [1.0, 2.0]
    assert h.getNumCol() == 3 and h.getNumRow() == n + 2
    lp = h.getLp()
    assert lp.row_lower_[n] == pytest.approx(1.0 * (1 - P.LEVEL_TOL / 10))
    everything = P.freeze_ahead(h, frows, 0, caps, free, 100)
    assert sum(len(a.rows) for a in everything) == n - 1  # never every free row
    P.release_ahead(h, ahead)
    lp = h.getLp()
    for a in ahead:
        assert lp.col_lower_[a.col] == lp.col_upper_[a.col] == 0.0
        assert lp.row_lower_[a.row] == -math.inf and lp.row_upper_[a.row] == math.inf
