"""gpu_cluster under careless and hostile input (issue 21).

Extreme weight ratios are refused with a clear error naming the field (not a HiGHS
refusal or a failed verification); ``validate`` (``Kind.check``) rejects what ``solve``
rejects; ``--workers`` is a one-line usage error naming the option; and each check of
the independent verifier has a killer test (an allocation a loosened check would pass).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import hetopt
from hetopt import InstanceError, SolveOptions, Status
from hetopt.kinds import get_kind
from hetopt.kinds.gpu_cluster import GpuClusterInstance
from hetopt.kinds.gpu_cluster import verify as V
from hetopt.kinds.gpu_cluster.inputs import MAX_WEIGHT_RATIO, MAX_WORK_RATIO

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "instances" / "gpu_cluster" / "example.json"
OPTS = SolveOptions(threads=1)
KIND = get_kind("gpu_cluster")
MAX_MIN = ("max_min_fairness", "max_min_fairness_water_filling")


def example() -> dict[str, Any]:
    return json.loads(EXAMPLE.read_text())


def with_weight(w: float, job: int = 0) -> dict[str, Any]:
    data = example()
    data["jobs"][job]["weight"] = w
    return data


# ------------------------------------------------------------------ extreme weights
@pytest.mark.parametrize("weight", [1e-15, 1e-12, 1e-10, 1e10, 1e12])
@pytest.mark.parametrize("objective", MAX_MIN)
def test_extreme_weight_ratio_is_an_error_naming_the_weight(weight: float, objective: str) -> None:
    """Before: 1e-15 gave "HiGHS rejected the model" (exit 1), 1e-12 status error (the
    verifier recomputed another objective)."""
    data = with_weight(weight)
    with pytest.raises(InstanceError, match="cannot honour weight ratios") as exc:
        hetopt.solve(data, objective, OPTS)
    assert exc.value.field == "jobs[0].weight"
    assert "\n" not in str(exc.value)
    # validate (Kind.check) says the same
    with pytest.raises(InstanceError) as exc2:
        KIND.check(GpuClusterInstance.from_dict(data), objective, KIND.parse_params({}))
    assert str(exc2.value) == str(exc.value)


@pytest.mark.parametrize("weight", [1e-9, 1e-6, 1e6, 1e9])
@pytest.mark.parametrize("objective", MAX_MIN)
def test_weight_ratios_up_to_the_limit_solve_and_verify(weight: float, objective: str) -> None:
    assert weight <= MAX_WEIGHT_RATIO and 1 / weight <= MAX_WEIGHT_RATIO
    data = with_weight(weight)
    r = hetopt.solve(data, objective, OPTS)
    assert r.status == Status.OPTIMAL and r.ok, (r.status, r.termination)
    assert r.verification is not None and r.verification.ok


def with_steps(steps: float, job: int = 0) -> dict[str, Any]:
    data = example()
    data["jobs"][job]["steps_remaining"] = steps
    return data


@pytest.mark.parametrize("steps", [1e-9, 1e-12])
def test_extreme_work_ratio_is_an_error_naming_the_steps(steps: float) -> None:
    """Before: 1e-9 steps beside millions gave "HiGHS rejected the model" (SolveError,
    exit 1): the makespan LP's coefficients span the work ratio (1.5e15 here)."""
    data = with_steps(steps)
    with pytest.raises(InstanceError, match="cannot honour work ratios above 1e\\+12") as exc:
        hetopt.solve(data, "makespan", OPTS)
    assert exc.value.field == "jobs[0].steps_remaining"
    assert "\n" not in str(exc.value) and "less work than job" in str(exc.value)
    with pytest.raises(InstanceError) as exc2:
        KIND.check(GpuClusterInstance.from_dict(data), "makespan", KIND.parse_params({}))
    assert str(exc2.value) == str(exc.value)
    # the other objectives do not read work this way: they solve
    r = hetopt.solve(data, "max_min_fairness", OPTS)
    assert r.status == Status.OPTIMAL and r.verification.ok


@pytest.mark.parametrize("steps", [1e-4, 1e-5])
@pytest.mark.parametrize("strategy", ["auto", "column_generation"])
def test_tiny_work_within_the_limit_solves_and_verifies(steps: float, strategy: str) -> None:
    """Before: 1e-4 steps (work ratio 1.5e10) ended ``error``: the job's share, ~7e-11,
    was read as 0 (values under 1e-10 are the solver's noise), so the verifier found a
    job that never finishes. A row's only positive shares are kept now."""
    data = with_steps(steps)
    inst = GpuClusterInstance.from_dict(data)
    arr = inst.arrays
    work = arr.steps / np.where(arr.allowed, arr.thr, 0.0).max(axis=1)
    assert 1e10 < work.max() / work.min() <= MAX_WORK_RATIO
    ref = hetopt.solve(example(), "makespan", OPTS)
    r = hetopt.solve(inst, "makespan", OPTS, lp_strategy=strategy)
    assert r.status == Status.OPTIMAL and r.verification.ok, (r.status, r.termination)
    assert r.objective_value == pytest.approx(ref.objective_value, rel=1e-9)
    share = r.tables["allocation"].query("job == @inst.jobs[0].id")["fraction"]
    assert 0 < share.sum() < 1e-10


@pytest.mark.parametrize("weight", [1e-15, 1e12])
@pytest.mark.parametrize(
    "objective", ["makespan", "finish_time_fairness", "max_total_throughput", "min_cost"]
)
def test_extreme_weights_are_fine_where_weights_do_not_scale_rows(
    weight: float, objective: str
) -> None:
    data = with_weight(weight)
    data["cost_per_hour"] = {"k80": 0.9, "p100": 1.46, "v100": 2.48}
    KIND.check(GpuClusterInstance.from_dict(data), objective, KIND.parse_params({}))
    r = hetopt.solve(data, objective, OPTS)
    assert r.status == Status.OPTIMAL and r.ok


@pytest.mark.parametrize("weight", [1e-15, 1e-12, 1e12])
@pytest.mark.parametrize(
    ("name", "objective"),
    [
        ("example.json", "max_min_fairness"),
        ("example.json", "max_min_fairness_water_filling"),
        ("policies/colocation_triangle.json", "max_min_fairness"),
    ],
)
def test_uniformly_extreme_weights_solve(weight: float, name: str, objective: str) -> None:
    """Every weight 1e-15 is a ratio of one: the objective rows are scaled so the values
    are O(1) (before: "HiGHS rejected the model"); the value scales with 1 / weight."""
    data = json.loads((EXAMPLE.parent / name).read_text())
    ref = hetopt.solve(data, objective, OPTS)
    for job in data["jobs"]:
        job["weight"] = job.get("weight", 1.0) * weight
    r = hetopt.solve(data, objective, OPTS)
    assert r.status == Status.OPTIMAL and r.ok, (r.status, r.termination)
    assert r.objective_value == pytest.approx(ref.objective_value / weight, rel=1e-6)


def test_entity_weights_spread_names_the_entity_weight() -> None:
    data = example()
    for i, job in enumerate(data["jobs"]):
        job["entity"] = "small" if i == 0 else "big"
    data["entity_weights"] = {"small": 1e-12, "big": 1.0}
    with pytest.raises(InstanceError, match="entity weight 1e-12") as exc:
        hetopt.solve(data, "max_min_fairness_water_filling", OPTS)
    assert exc.value.field == "entity_weights.small"
    # plain max-min ignores entity weights: the jobs' own weights are equal
    assert hetopt.solve(data, "max_min_fairness", OPTS).ok


def test_cli_extreme_weight_is_one_line_exit_3(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text(json.dumps(with_weight(1e-15)))
    for cmd in ("validate", "solve"):
        p = subprocess.run(
            [sys.executable, "-m", "hetopt.cli", cmd, str(path), "--objective", "max_min_fairness"],
            capture_output=True,
            text=True,
        )
        if cmd == "validate" and not KIND.methods:
            # validate calls Kind.check only for kinds on the pipeline contract (issue 12)
            continue
        assert p.returncode == 3, (cmd, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1 and "jobs[0].weight" in p.stderr


# ---------------------------------------------------------- check agrees with solve
def _no_steps(d: dict[str, Any]) -> None:
    del d["jobs"][1]["steps_remaining"]


def _no_cost(d: dict[str, Any]) -> None:
    d.pop("cost_per_hour", None)


def _partial_cost(d: dict[str, Any]) -> None:
    d["cost_per_hour"] = {"k80": 0.9}


def _deadline_without_steps(d: dict[str, Any]) -> None:
    d["cost_per_hour"] = {"k80": 0.9, "p100": 1.46, "v100": 2.48}
    del d["jobs"][1]["steps_remaining"]
    d["jobs"][1]["deadline_s"] = 100.0


@pytest.mark.parametrize(
    ("mutate", "objective", "field"),
    [
        (_no_steps, "makespan", "jobs[1].steps_remaining"),
        (_no_steps, "finish_time_fairness", "jobs[1].steps_remaining"),
        (_no_cost, "min_cost", "cost_per_hour"),
        (_partial_cost, "min_cost", "cost_per_hour"),
        (_deadline_without_steps, "min_cost", "jobs[1].steps_remaining"),
    ],
)
def test_check_rejects_what_solve_rejects(mutate: Any, objective: str, field: str) -> None:
    data = example()
    mutate(data)
    with pytest.raises(InstanceError) as solved:
        hetopt.solve(data, objective, OPTS)
    with pytest.raises(InstanceError) as checked:
        KIND.check(GpuClusterInstance.from_dict(data), objective, KIND.parse_params({}))
    assert solved.value.field == checked.value.field == field
    assert str(solved.value) == str(checked.value)


def shipped() -> list[Path]:
    out = []
    for p in sorted((ROOT / "instances" / "gpu_cluster").rglob("*.json")):
        data = json.loads(p.read_text())
        if isinstance(data, dict) and data.get("kind") == "gpu_cluster":
            out.append(p)
    return out


def test_there_are_shipped_gpu_cluster_instances() -> None:
    assert len(shipped()) >= 8


@pytest.mark.parametrize(
    ("path", "objective"),
    [pytest.param(p, o, id=f"{p.stem}-{o}") for p in shipped() for o in KIND.objective_names()],
)
def test_check_agrees_with_solve_on_every_shipped_instance(path: Path, objective: str) -> None:
    """``Kind.check`` (what ``validate --objective`` runs) rejects exactly what ``solve``
    rejects, with the same message, for every shipped instance and objective."""
    data = json.loads(path.read_text())
    inst = GpuClusterInstance.from_dict(data)
    try:
        KIND.check(inst, objective, KIND.parse_params({}))
    except (InstanceError, hetopt.UsageError) as exc:
        with pytest.raises(type(exc)) as solved:
            hetopt.solve(data, objective, OPTS)
        assert str(solved.value) == str(exc)
        return
    r = hetopt.solve(data, objective, SolveOptions(threads=1, time_limit_s=5))
    assert r.status in (Status.OPTIMAL, Status.FEASIBLE, Status.NO_SOLUTION), r.termination


# ------------------------------------------------------------------------ --workers
@pytest.mark.parametrize(
    "args",
    [
        ["simulate", "--generate-jobs", "3", "--workers", "k80=x"],
        ["simulate", "--generate-jobs", "3", "--workers", "k80"],
        ["generate", "gpu-cluster", "--jobs", "3", "--workers", "k80=-1"],
        ["convert", "gavel-trace", "missing.trace", "--workers", ","],
        ["simulate", "--generate-jobs", "3", "--workers", "k80=1\nv100=2"],
    ],
)
def test_bad_workers_option_is_a_one_line_usage_error(args: list[str]) -> None:
    p = subprocess.run([sys.executable, "-m", "hetopt.cli", *args], capture_output=True, text=True)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "--workers" in lines[0] and "expected TYPE=COUNT" in lines[0]


# ------------------------------------------------------------- verifier killer tests
# one GPU type with 2 GPUs, three single-GPU jobs; a check loosened 2x passes each bad
# allocation below, so each check has its own killer test
TINY = {
    "kind": "gpu_cluster",
    "workers": {"v100": 2, "k80": 1},
    "jobs": [
        {"id": str(i), "throughput": {"v100": 2.0, "k80": 1.0}, "scale_factor": 1} for i in range(3)
    ],
}


def _verify(alloc: list[tuple[str, str, float]], data: dict[str, Any] = TINY) -> Any:
    inst = GpuClusterInstance.from_dict(data)
    df = pd.DataFrame(alloc, columns=["job", "worker_type", "fraction"])
    X, _ = V.allocation_matrix(inst.arrays, df)
    value = V.max_min_value(inst.arrays, X)  # the true value: only feasibility fails
    return V.verify(inst, "max_min_fairness", value, df)


def test_verifier_accepts_a_full_feasible_allocation() -> None:
    good = [("0", "v100", 1.0), ("1", "v100", 1.0), ("2", "k80", 1.0)]
    assert _verify(good).ok


def test_verifier_capacity_killer() -> None:
    # 3 GPUs of v100 used, 2 present (1.5x): a capacity check loosened 2x accepts it
    v = _verify([("0", "v100", 1.0), ("1", "v100", 1.0), ("2", "v100", 1.0)])
    assert not v.ok and any("GPUs used > 2 present" in s for s in v.violations)
    # and a 0.1% overuse is caught too
    v = _verify([("0", "v100", 1.0), ("1", "v100", 1.0), ("2", "v100", 0.002)])
    assert not v.ok and any("v100" in s and "GPUs used" in s for s in v.violations)


def test_verifier_capacity_counts_the_scale_factor() -> None:
    data = copy.deepcopy(TINY)
    data["jobs"][0]["scale_factor"] = 2
    data["jobs"][0]["throughput"] = {"v100": 2.0}
    # job 0 uses 2 GPUs for 0.75 of the time, job 1 one GPU for 0.6: 2.1 > 2
    v = _verify([("0", "v100", 0.75), ("1", "v100", 0.6), ("2", "k80", 1.0)], data)
    assert not v.ok and any("v100" in s and "GPUs used" in s for s in v.violations)


def test_verifier_time_share_killer() -> None:
    # job 0 gets 1.5 of the time (0.75 + 0.75): a time check loosened 2x accepts it
    v = _verify([("0", "v100", 0.75), ("0", "k80", 0.75), ("1", "v100", 1.0), ("2", "k80", 0.0)])
    assert not v.ok and any("more than 100% of the time" in s for s in v.violations)


def test_verifier_eligibility_and_sign_killers() -> None:
    data = copy.deepcopy(TINY)
    data["jobs"][2]["throughput"] = {"v100": 2.0}  # job 2 cannot use k80
    v = _verify([("0", "v100", 1.0), ("1", "v100", 1.0), ("2", "k80", 0.5)], data)
    assert not v.ok and any("where it cannot" in s for s in v.violations)
    v = _verify([("0", "v100", 1.0), ("1", "v100", 1.0), ("2", "k80", -0.5)])
    assert not v.ok and any("negative fraction" in s for s in v.violations)


def test_verifier_objective_killer() -> None:
    inst = GpuClusterInstance.from_dict(TINY)
    df = pd.DataFrame(
        [("0", "v100", 1.0), ("1", "v100", 1.0), ("2", "k80", 1.0)],
        columns=["job", "worker_type", "fraction"],
    )
    X, _ = V.allocation_matrix(inst.arrays, df)
    true = V.max_min_value(inst.arrays, X)
    assert V.verify(inst, "max_min_fairness", true, df).ok
    bad = V.verify(inst, "max_min_fairness", true * 1.001, df)
    assert not bad.ok and any("objective recomputed" in s for s in bad.violations)
    assert np.isfinite(true) and true > 0
