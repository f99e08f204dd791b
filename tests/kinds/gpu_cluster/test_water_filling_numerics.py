"""Water-filling's warm level re-solves (issue 18: a 3,000-job replay aborted on one)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import hetopt
from hetopt import SolveOptions, Status
from hetopt.kinds.gpu_cluster import GpuClusterInstance, generate
from hetopt.kinds.gpu_cluster import policies as P

DATA = Path(__file__).parent / "data"
OPTS = SolveOptions(threads=1)


def load(name: str) -> GpuClusterInstance:
    return GpuClusterInstance.from_dict(json.loads((DATA / name).read_text()))


def old_freeze(h, rows, zcol, floor):
    """The edit water-filling made before the fix: z's coefficient 0 in the frozen rows
    and their lower bound raised (the same LP; the live basis may become singular)."""
    for r in rows:
        h.changeCoeff(int(r), int(zcol), 0.0)
    k = len(rows)
    h.changeRowsBounds(k, np.asarray(rows, dtype=np.int32), np.full(k, floor), np.full(k, math.inf))


def values(res) -> np.ndarray:
    return res.tables["jobs"].set_index("job")["normalized_throughput"].sort_index().to_numpy()


@pytest.mark.parametrize("name", ["water_filling_round_4454.json", "water_filling_round_541.json"])
def test_replay_rounds_that_failed_solve_to_a_verified_optimum(name):
    # before the fix: 4454 ended "Optimal (but no feasible primal solution was returned)"
    # (status error, the replay aborted), 541 "Unknown" (feasible, stopped early)
    inst = load(name)
    res = hetopt.solve(inst, "max_min_fairness_water_filling", options=OPTS)
    assert res.status == Status.OPTIMAL, res.termination
    assert res.verification.ok, res.verification.violations
    assert res.info["cold_resolves"] == 0  # no warm re-solve needed a second try
    mm = hetopt.solve(inst, "max_min_fairness", options=OPTS)
    assert res.objective_value == pytest.approx(mm.objective_value, rel=1e-6)


def test_a_failed_warm_resolve_is_solved_again_from_scratch(monkeypatch, caplog):
    # the old edit reproduces the failure: the loop re-solves that LP cold, says so, and
    # ends at the same leximin values as the fixed path
    inst = load("water_filling_round_4454.json")
    good = hetopt.solve(inst, "max_min_fairness_water_filling", options=OPTS)
    monkeypatch.setattr(P, "freeze_rows", old_freeze)
    with caplog.at_level("WARNING", logger="hetopt.kinds.gpu_cluster.policies"):
        res = hetopt.solve(inst, "max_min_fairness_water_filling", options=OPTS)
    assert res.info["cold_resolves"] >= 1
    assert "solving the same LP again from scratch" in caplog.text
    assert res.status == Status.OPTIMAL, res.termination
    assert res.verification.ok, res.verification.violations
    assert res.info["lp_solves"] == (
        res.info["level_lps"] + res.info["check_lps"] + res.info["cold_resolves"]
    )
    np.testing.assert_allclose(values(res), values(good), rtol=1e-6)


def distinct_weights(n: int, seed: int) -> GpuClusterInstance:
    """No two jobs alike and a roomy cluster: one level per few jobs."""
    g = max(8, n // 3)
    d = generate(n, f"k80={g},p100={g},v100={g}", seed=seed, priority_fraction=0.2).to_dict()
    rng = np.random.default_rng(seed)
    for job in d["jobs"]:
        job["weight"] = float(np.round(rng.uniform(1, 5), 3))
    return GpuClusterInstance.from_dict(d)


@pytest.mark.parametrize("n,seed", [(64, 0), (128, 1), (96, 2)])
def test_appended_freeze_rows_give_the_old_edits_levels(monkeypatch, n, seed):
    # the new freeze (a free column and a row per level) means exactly what the old
    # coefficient edit meant: the same levels, the same per-job values
    inst = distinct_weights(n, seed)
    new = hetopt.solve(inst, "max_min_fairness_water_filling", options=OPTS)
    monkeypatch.setattr(P, "freeze_rows", old_freeze)
    old = hetopt.solve(inst, "max_min_fairness_water_filling", options=OPTS)
    assert new.status == old.status == Status.OPTIMAL
    assert new.info["levels"] == old.info["levels"] > 5
    assert (new.tables["jobs"]["level"] == old.tables["jobs"]["level"]).all()
    np.testing.assert_allclose(values(new), values(old), rtol=1e-9)


def test_a_failed_first_level_interior_point_is_solved_again_with_crossover(monkeypatch):
    # an interior point without crossover may end "Optimal" without a feasible primal
    # solution (IPX's point outside the tolerances): the same LP again, counted
    import dataclasses

    from hetopt import highs as H

    inst = load("water_filling_round_4454.json")
    good = hetopt.solve(inst, "max_min_fairness_water_filling", options=OPTS)
    orig = H.HighsModel._solve
    calls = []

    def _solve(self):
        raw = orig(self)
        calls.append(raw.info.get("ipm_iterations", 0))
        if len(calls) == 1:  # the first level's IPM, as HiGHS reported it in issue 18
            return dataclasses.replace(
                raw,
                status=Status.ERROR,
                termination="Optimal (but no feasible primal solution was returned)",
                x=None,
                row_dual=None,
            )
        return raw

    monkeypatch.setattr(H.HighsModel, "_solve", _solve)
    res = hetopt.solve(inst, "max_min_fairness_water_filling", options=OPTS)
    assert calls[0] > 0  # it was the interior point
    assert res.info["cold_resolves"] == 1
    assert res.status == Status.OPTIMAL and res.verification.ok
    np.testing.assert_allclose(values(res), values(good), rtol=1e-6)
