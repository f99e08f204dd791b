"""``gpu_cluster`` exports carry the true objective (issue 20): HiGHS on the exported
LP/MPS file finds hetopt's ``objective_value`` for every shipped instance x objective
and for seeded generated instances; the makespan file is the LP in time variables
(``tau = x * T``, minimise ``T`` seconds); finish-time fairness is refused, naming its
stages; the solved models are unchanged."""

from __future__ import annotations

import json
import math
from pathlib import Path

import highspy
import numpy as np
import pyomo.environ as pyo
import pytest

import hetopt
from hetopt.errors import HetoptError
from hetopt.kinds.gpu_cluster import generate
from hetopt.status import Status

ROOT = Path(__file__).resolve().parents[3]
KIND = hetopt.get_kind("gpu_cluster")
OPTIONS = hetopt.SolveOptions(threads=1, seed=0, time_limit_s=60)
REL = 1e-6


def _instances() -> list[str]:
    base = ROOT / "instances" / "gpu_cluster"
    out = []
    for path in sorted(base.rglob("*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and data.get("kind") == "gpu_cluster":
            out.append(str(path.relative_to(base)))
    return out


INSTANCES = _instances()
CASES = [(name, o) for name in INSTANCES for o in KIND.objective_names()]


def _solve_file(path: Path) -> tuple[str, float]:
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("time_limit", 60.0)
    assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    h.run()
    return h.modelStatusToString(h.getModelStatus()), h.getInfo().objective_function_value


def _check(instance: object, objective: str, tmp_path: Path, **params: object) -> None:
    try:
        result = hetopt.solve(instance, objective, OPTIONS, **params)
    except HetoptError as exc:  # the objective needs fields the instance lacks
        with pytest.raises(type(exc)):
            hetopt.export_model(instance, tmp_path / "m.mps", "mps", objective, **params)
        return
    if objective == "finish_time_fairness":
        with pytest.raises(hetopt.UsageError, match="one feasibility LP per bisection step"):
            hetopt.export_model(instance, tmp_path / "m.mps", "mps", objective, **params)
        return
    for fmt in ("mps", "lp"):
        path = hetopt.export_model(instance, tmp_path / f"m.{fmt}", fmt, objective, **params)
        status, value = _solve_file(path)
        if result.status == Status.INFEASIBLE:
            assert status == "Infeasible", (fmt, status)
            continue
        assert result.status == Status.OPTIMAL, result.status
        if objective == "min_cost" and not result.info["slo_all_met"]:
            assert status == "Infeasible", (fmt, status)  # the file asks for every SLO
            continue
        assert status == "Optimal", (fmt, status)
        expected = result.objective_value
        assert math.isclose(value, expected, rel_tol=REL, abs_tol=1e-9), (fmt, value, expected)


def test_every_shipped_instance_is_covered() -> None:
    assert {"example.json", "gavel_100.json", "gavel_1000.json"} <= set(INSTANCES)
    assert "policies/colocation_triangle.json" in INSTANCES  # space sharing
    assert "elastic/lyra_small.json" in INSTANCES  # max_progress, reclaim


@pytest.mark.parametrize(("name", "objective"), CASES, ids=[f"{n}:{o}" for n, o in CASES])
def test_exported_objective_is_hetopts(name: str, objective: str, tmp_path: Path) -> None:
    _check(hetopt.examples.path(f"gpu_cluster/{name}"), objective, tmp_path)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("objective", ["makespan", "max_min_fairness"])
@pytest.mark.parametrize("symmetry", [True, False])
def test_generated_instances(seed: int, objective: str, symmetry: bool, tmp_path: Path) -> None:
    inst = generate(40, "k80=6,p100=4,v100=3", seed=seed, priority_fraction=0.2)
    _check(inst, objective, tmp_path, symmetry=symmetry)


def test_generated_instance_with_identical_jobs(tmp_path: Path) -> None:
    """Symmetry groups with several jobs each (rows are groups, GPUs counted mult times)."""
    data = generate(6, "k80=2,p100=2,v100=1", seed=5).to_dict()
    for job in list(data["jobs"]):
        for r in range(3):
            data["jobs"].append({**job, "id": f"{job['id']}-{r}"})
    for objective in ("makespan", "max_min_fairness", "max_min_fairness_water_filling"):
        _check(data, objective, tmp_path)


def _coefs(row: object) -> dict[int, float]:
    body = row.body  # type: ignore[attr-defined]
    return {id(v): c for v, c in zip(body.linear_vars, body.linear_coefs, strict=True)}


def test_makespan_file_is_the_lp_in_time_variables() -> None:
    """``c_progress[i]: sum_t thr[i,t] tau[i,t] >= steps_i``, ``c_capacity[t]: sum_i sf_i
    tau[i,t] - workers_t T <= 0``, ``c_time[i]: sum_t tau[i,t] - T <= 0``, minimise T."""
    from hetopt.api import _export_model, load

    path = hetopt.examples.path("gpu_cluster/example.json")
    inst = load(path)[0]
    arr = inst.arrays
    m = _export_model(path, "makespan", {"symmetry": False})
    obj = next(m.component_data_objects(pyo.Objective, active=True))
    assert obj.sense == pyo.minimize and obj.expr is m.makespan
    job, typ = np.nonzero(arr.thr > 0)
    for i in range(arr.num_jobs):
        row = m.c_progress[i]
        assert math.isclose(row.lower, arr.steps[i], rel_tol=1e-12)
        coefs = _coefs(row)
        for k in np.nonzero(job == i)[0]:
            assert math.isclose(coefs[id(m.tau[k])], arr.thr[i, typ[k]], rel_tol=1e-12)
    for t, name in enumerate(arr.types):
        row = m.c_capacity[t]
        coefs = _coefs(row)
        assert coefs[id(m.makespan)] == -arr.workers[t] and row.upper == 0
        for k in np.nonzero(typ == t)[0]:
            assert coefs[id(m.tau[k])] == arr.scale[job[k]], name
    row = m.c_time[0]
    coefs = _coefs(row)
    assert coefs[id(m.makespan)] == -1 and row.upper == 0


def test_export_keeps_the_solved_model(tmp_path: Path) -> None:
    """Only the file changes: the model hetopt solves keeps ``max z``."""
    path = hetopt.examples.path("gpu_cluster/example.json")
    for objective in ("makespan", "max_min_fairness"):

        def objective_text(objective: str = objective) -> str:
            model = hetopt.build_model(path, objective)
            return str(next(model.component_data_objects(pyo.Objective, active=True)).expr)

        before = objective_text()
        hetopt.export_model(path, tmp_path / "m.lp", "lp", objective)
        assert objective_text() == before == "z"


def test_cli_export_reports_the_true_makespan(tmp_path: Path) -> None:
    """The issue's numbers: the exported example's optimum is hetopt's value (272,774 s
    makespan, 1.111 max-min), not 1.0 and 1.574."""
    path = hetopt.examples.path("gpu_cluster/example.json")
    out = hetopt.export_model(path, tmp_path / "m.mps", "mps", "makespan")
    assert _solve_file(out)[1] == pytest.approx(272774.307, rel=1e-6)
    out = hetopt.export_model(path, tmp_path / "m.mps", "mps", "max_min_fairness")
    assert _solve_file(out)[1] == pytest.approx(1.1112946, rel=1e-6)


def _space_sharing(seed: int) -> dict[str, object]:
    """A random space-sharing instance: three job classes on two GPU types, three
    co-location entries (a class paired with itself among them)."""
    rng = np.random.default_rng(seed)
    thr = {c: {"a": float(rng.uniform(0.5, 2)), "b": float(rng.uniform(0.5, 3))} for c in "ABC"}
    jobs = [
        {
            "id": f"j{i}",
            "job_type": c,
            "throughput": thr[c],
            "steps_remaining": float(rng.integers(100, 1000)),
        }
        for i, c in enumerate(rng.choice(list("ABC"), size=9))
    ]

    def co(w: str, a: str, b: str) -> dict[str, object]:
        share = rng.uniform(0.5, 0.9, size=2)
        return {
            "worker_type": w,
            "job_types": [a, b],
            "scale_factor": 1,
            "throughput": [float(share[0] * thr[a][w]), float(share[1] * thr[b][w])],
        }

    return {
        "kind": "gpu_cluster",
        "workers": {"a": 2, "b": 3},
        "jobs": jobs,
        "colocation": [co("a", "A", "B"), co("b", "B", "B"), co("b", "A", "C")],
    }


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("objective", ["makespan", "max_min_fairness"])
def test_generated_space_sharing(seed: int, objective: str, tmp_path: Path) -> None:
    data = _space_sharing(seed)
    result = hetopt.solve(data, objective, OPTIONS)
    assert result.info["pair_columns"] > 0  # the LP has pair columns
    _check(data, objective, tmp_path)


@pytest.mark.parametrize("objective", ["makespan", "max_min_fairness"])
def test_agnostic_export_is_the_agnostic_lp(objective: str, tmp_path: Path) -> None:
    """``agnostic=True`` exports the agnostic LP: its optimum is the LP's own value
    (``info["agnostic_lp_value"]``), not the true value of its allocation."""
    path = hetopt.examples.path("gpu_cluster/gavel_100.json")
    result = hetopt.solve(path, objective, OPTIONS, agnostic=True)
    out = hetopt.export_model(path, tmp_path / "m.mps", "mps", objective, agnostic=True)
    status, value = _solve_file(out)
    assert status == "Optimal"
    assert math.isclose(value, result.info["agnostic_lp_value"], rel_tol=REL)
