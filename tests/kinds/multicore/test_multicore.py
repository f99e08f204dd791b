"""The ``multicore`` kind: validation, brute force on tiny instances, properties, verifier.

Brute force (every assignment, and for a DAG every order of the tasks on each core, each
turned into its semi-active schedule) is the reference nobody here invented.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hetopt
from hetopt import InstanceError, SolveOptions, Status, UsageError
from hetopt.kinds.multicore import MulticoreInstance
from hetopt.kinds.multicore.data import MulticoreArrays
from hetopt.kinds.multicore.heuristics import left_shift
from hetopt.kinds.multicore.pareto import non_dominated

ROOT = Path(__file__).resolve().parents[3]
EXACT = SolveOptions(threads=1, mip_rel_gap=0.0)


# ----------------------------------------------------------------------------- helpers
def random_instance(
    seed: int,
    n: int = 5,
    m: int = 3,
    dag: bool = False,
    integer: bool = True,
    identical: bool = False,
) -> dict:
    rng = np.random.default_rng(seed)
    types = ["big", "big", "little", "gpu"][:m] if identical else [f"c{k}" for k in range(m)]
    cores = [
        {
            "id": f"c{k}",
            "type": types[k],
            "active_power_w": float(rng.integers(1, 5)) if not identical else 1.0 + (k >= 2),
            "idle_power_w": float(rng.integers(0, 3)) / 4,
        }
        for k in range(m)
    ]
    if identical:  # cores of one type share their powers
        for c in cores:
            if c["type"] == "big":
                c["idle_power_w"] = 0.25
    tasks = []
    for i in range(n):
        d = {}
        for t in dict.fromkeys(types):
            if rng.uniform() < 0.85 or not d:
                v = rng.integers(1, 9) if integer else rng.uniform(0.5, 8.0)
                d[t] = float(round(float(v), 3))
        task = {"id": f"t{i}", "duration_s": d}
        if dag and i > 0:
            preds = [f"t{j}" for j in range(i) if rng.uniform() < 0.35]
            if preds:
                task["predecessors"] = preds
        tasks.append(task)
    return {"kind": "multicore", "cores": cores, "tasks": tasks}


def brute_force(arr: MulticoreArrays) -> list[tuple[float, float]]:
    """(makespan, energy) of the best schedule of every assignment that meets the limits.

    For a fixed assignment energy grows with the makespan, so the shortest schedule of
    each assignment is the only one that can be Pareto-optimal or optimal.
    """
    n = arr.num_tasks
    options = [np.nonzero(arr.eligible[i])[0] for i in range(n)]
    out = []
    for core in itertools.product(*options):
        core_arr = np.array(core)
        best = math.inf
        if not arr.has_dag:
            p = arr.dur[np.arange(n), core_arr]
            best = float(np.bincount(core_arr, weights=p, minlength=arr.num_cores).max())
        else:
            per_core = [list(np.nonzero(core_arr == c)[0]) for c in range(arr.num_cores)]
            for orders in itertools.product(*(itertools.permutations(t) for t in per_core)):
                try:
                    sched = _strict_left_shift(arr, core_arr, orders)
                except ValueError:
                    continue
                best = min(best, sched)
        if not math.isfinite(best):
            continue
        energy = arr.energy(core_arr, best)
        if arr.deadline is not None and best > arr.deadline + 1e-9:
            continue
        if arr.budget is not None and energy > arr.budget + 1e-9:
            continue
        out.append((best, energy))
    return out


def _strict_left_shift(arr: MulticoreArrays, core: np.ndarray, orders: tuple) -> float:
    """Makespan of the semi-active schedule with exactly these core sequences."""
    n = arr.num_tasks
    prev = [-1] * n
    for seq in orders:
        for a, b in itertools.pairwise(seq):
            prev[b] = a
    end = [math.nan] * n
    done = 0
    p = arr.dur[np.arange(n), core]
    while done < n:
        progress = False
        for i in range(n):
            if not math.isnan(end[i]):
                continue
            deps = list(arr.preds[i]) + ([prev[i]] if prev[i] >= 0 else [])
            if all(not math.isnan(end[d]) for d in deps):
                end[i] = max((end[d] for d in deps), default=0.0) + p[i]
                done += 1
                progress = True
        if not progress:
            raise ValueError("cycle")
    return float(max(end))


def front_of(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    keep = non_dominated(points, tol=1e-9)
    return sorted({(round(points[i][0], 6), round(points[i][1], 6)) for i in keep})


# ----------------------------------------------------------------------------- validation
BASE = {
    "kind": "multicore",
    "cores": [
        {"id": "big0", "type": "big", "active_power_w": 2.0, "idle_power_w": 0.1},
        {"id": "little0", "type": "little", "active_power_w": 0.5, "idle_power_w": 0.05},
    ],
    "tasks": [
        {"id": "t0", "duration_s": {"big": 1.0, "little": 2.6}},
        {"id": "t1", "duration_s": {"big": 1.0, "little": 2.6}, "predecessors": ["t0"]},
    ],
}


def _with(path: list, value: object) -> dict:
    data = json.loads(json.dumps(BASE))
    obj = data
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value
    return data


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (_with(["tasks", 1, "predecessors"], ["nope"]), "tasks[1].predecessors[0]"),
        (_with(["tasks", 0, "predecessors"], ["t1"]), "predecessors"),
        (_with(["tasks", 1, "id"], "t0"), "tasks[1].id"),
        (_with(["cores", 1, "id"], "big0"), "cores[1].id"),
        (_with(["tasks", 0, "duration_s"], {}), "tasks[0].duration_s"),
        (_with(["tasks", 0, "duration_s"], {"big": -1.0}), "tasks[0].duration_s.big"),
        (_with(["tasks", 0, "duration_s"], {"fpga": 1.0}), "tasks[0].duration_s.fpga"),
        (_with(["tasks", 0, "predecessors"], ["t0"]), "tasks[0].predecessors[0]"),
        (_with(["cores", 0, "active_power_w"], -2.0), "cores[0].active_power_w"),
        (_with(["deadline_s"], 0.0), "deadline_s"),
    ],
)
def test_invalid_instances_name_the_field(data: dict, field: str) -> None:
    with pytest.raises(InstanceError) as exc:
        MulticoreInstance.from_dict(data)
    # the message names the field (InstanceError.field itself is lost by the shared
    # InstanceBase for model-level checks under pydantic 2.13; see the issue-4 report)
    assert field in str(exc.value)


def test_cycle_is_reported_with_its_tasks() -> None:
    data = _with(["tasks", 0, "predecessors"], ["t1"])
    with pytest.raises(InstanceError, match="cycle in predecessors: t"):
        MulticoreInstance.from_dict(data)


def test_core_id_overrides_type_and_missing_key_forbids() -> None:
    data = json.loads(json.dumps(BASE))
    data["cores"].append({"id": "little1", "type": "little"})
    data["tasks"][0]["duration_s"] = {"big": 1.0, "little": 2.0, "little1": 5.0}
    data["tasks"][1]["duration_s"] = {"little1": 3.0}
    arr = MulticoreInstance.from_dict(data).arrays
    assert arr.dur[0].tolist() == [1.0, 2.0, 5.0]
    assert arr.eligible[1].tolist() == [False, False, True]
    assert arr.identical_core_classes() == []


# ----------------------------------------------------------------------------- examples
def test_example_instances_match_known_answers() -> None:
    known = json.loads((ROOT / "instances/multicore/known_answers.json").read_text())
    assert known
    for entry in known:
        r = hetopt.solve(ROOT / "instances/multicore" / entry["file"], entry["objective"], EXACT)
        assert r.status == Status.OPTIMAL, entry
        assert r.ok
        if entry["objective"] == "pareto":
            got = r.tables["pareto"][["makespan_s", "energy_j"]].to_numpy().tolist()
            assert np.allclose(got, entry["front"], atol=1e-6), entry
        else:
            assert r.objective_value == pytest.approx(entry["value"], abs=1e-6), entry


# ----------------------------------------------------------------------------- brute force
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("identical", [False, True])
def test_independent_matches_brute_force(seed: int, identical: bool) -> None:
    data = random_instance(seed, n=6, m=4 if identical else 3, identical=identical)
    inst = MulticoreInstance.from_dict(data)
    pts = brute_force(inst.arrays)
    mk = hetopt.solve(inst, "makespan", EXACT)
    en = hetopt.solve(inst, "energy", EXACT)
    assert mk.status == en.status == Status.OPTIMAL
    assert mk.info["formulation"] == "assignment"
    assert mk.objective_value == pytest.approx(min(p[0] for p in pts), abs=1e-6)
    assert en.objective_value == pytest.approx(min(p[1] for p in pts), abs=1e-6)
    assert mk.ok and en.ok
    if identical:
        assert mk.info["symmetry_classes"] >= 1
        off = hetopt.solve(inst, "makespan", EXACT, symmetry=False, warm_start=False)
        assert off.objective_value == pytest.approx(mk.objective_value, abs=1e-6)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("formulation", ["disjunctive", "time_indexed"])
def test_dag_matches_brute_force(seed: int, formulation: str) -> None:
    inst = MulticoreInstance.from_dict(random_instance(100 + seed, n=5, m=2, dag=True))
    assert inst.arrays.has_dag
    pts = brute_force(inst.arrays)
    mk = hetopt.solve(inst, "makespan", EXACT, formulation=formulation)
    en = hetopt.solve(inst, "energy", EXACT, formulation=formulation)
    assert mk.status == en.status == Status.OPTIMAL
    assert mk.objective_value == pytest.approx(min(p[0] for p in pts), abs=1e-6)
    assert en.objective_value == pytest.approx(min(p[1] for p in pts), abs=1e-6)
    assert mk.ok and en.ok
    assert set(mk.tables["schedule"]["task"]) == set(inst.arrays.task_ids)


@pytest.mark.parametrize("seed", range(3))
def test_dag_fractional_durations_disjunctive(seed: int) -> None:
    inst = MulticoreInstance.from_dict(random_instance(200 + seed, 5, 2, dag=True, integer=False))
    pts = brute_force(inst.arrays)
    r = hetopt.solve(inst, "makespan", EXACT)
    assert r.info["formulation"] == "disjunctive"
    assert r.objective_value == pytest.approx(min(p[0] for p in pts), abs=1e-6)


@pytest.mark.parametrize("dag", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_pareto_front_matches_brute_force(seed: int, dag: bool) -> None:
    inst = MulticoreInstance.from_dict(random_instance(300 + seed, n=5, m=3 - dag, dag=dag))
    expected = front_of(brute_force(inst.arrays))
    r = hetopt.solve(inst, "pareto", EXACT)
    assert r.status == Status.OPTIMAL and r.ok
    got = sorted(
        (round(a, 6), round(b, 6))
        for a, b in r.tables["pareto"][["makespan_s", "energy_j"]].to_numpy()
    )
    assert got == expected


@pytest.mark.parametrize("seed", range(4))
def test_deadline_and_budget_match_brute_force(seed: int) -> None:
    data = random_instance(400 + seed, n=5, m=3, dag=seed % 2 == 1)
    free = brute_force(MulticoreInstance.from_dict(data).arrays)
    c_min = min(p[0] for p in free)
    e_min = min(p[1] for p in free)
    data["deadline_s"] = c_min + 1.0
    data["energy_budget_j"] = max(p[1] for p in free if p[0] <= c_min + 1.0)
    inst = MulticoreInstance.from_dict(data)
    pts = brute_force(inst.arrays)
    en = hetopt.solve(inst, "energy", EXACT)
    assert en.objective_value == pytest.approx(min(p[1] for p in pts), abs=1e-6)
    budget = dict(data, energy_budget_j=(e_min + max(p[1] for p in free)) / 2)
    budget.pop("deadline_s")
    inst2 = MulticoreInstance.from_dict(budget)
    pts2 = brute_force(inst2.arrays)
    mk = hetopt.solve(inst2, "makespan", EXACT)
    assert mk.objective_value == pytest.approx(min(p[0] for p in pts2), abs=1e-6)
    assert en.ok and mk.ok


def test_impossible_deadline_is_infeasible_status() -> None:
    data = random_instance(7, n=5, m=3)
    data["deadline_s"] = 0.5
    r = hetopt.solve(data, "energy", EXACT)
    assert r.status == Status.INFEASIBLE
    assert r.objective_value is None


def test_relaxation_bound_brackets_the_optimum() -> None:
    inst = MulticoreInstance.from_dict(random_instance(11, n=6, m=3))
    opt = hetopt.solve(inst, "makespan", EXACT).objective_value
    lp = hetopt.solve(inst, "makespan", EXACT, relaxation=True)
    assert lp.status in (Status.OPTIMAL, Status.FEASIBLE)
    assert lp.info["relaxation"] is True
    assert lp.bound <= opt + 1e-9 <= lp.objective_value + 1e-9
    assert lp.ok


def test_time_limit_is_honest() -> None:
    from hetopt.kinds.multicore import generate

    inst = generate("JobsCorre", 10, 100, seed=1)
    r = hetopt.solve(inst, "makespan", SolveOptions(threads=1, time_limit_s=0.5))
    assert r.status in (Status.OPTIMAL, Status.FEASIBLE)
    assert r.ok and len(r.tables["schedule"]) == 100
    assert r.bound is not None and r.bound <= r.objective_value + 1e-9
    if r.status == Status.FEASIBLE:
        assert r.gap is not None and r.gap > 0


# ----------------------------------------------------------------------------- properties
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), dag=st.booleans())
def test_properties_energy_bound_and_verifier(seed: int, dag: bool) -> None:
    inst = MulticoreInstance.from_dict(random_instance(seed, n=6, m=3, dag=dag, integer=False))
    arr = inst.arrays
    r = hetopt.solve(inst, "energy", SolveOptions(threads=1))
    assert r.ok
    assert r.objective_value >= arr.idle_free_energy_bound() - 1e-9
    # the verifier recomputes makespan and energy from the schedule alone
    sched = r.tables["schedule"]
    assert r.verification.objective_value == pytest.approx(r.objective_value)
    assert float(sched["end_s"].max()) == pytest.approx(r.info["makespan_s"])
    m = hetopt.solve(inst, "makespan", SolveOptions(threads=1))
    assert m.ok and m.objective_value <= r.info["makespan_s"] + 1e-9


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000))
def test_pareto_points_are_non_dominated(seed: int) -> None:
    inst = MulticoreInstance.from_dict(random_instance(seed, n=6, m=3, integer=False))
    r = hetopt.solve(inst, "pareto", SolveOptions(threads=1), pareto_points=6)
    assert r.ok
    pts = r.tables["pareto"][["makespan_s", "energy_j"]].to_numpy()
    for a in pts:
        for b in pts:
            if a is not b:
                assert not (b[0] <= a[0] and b[1] <= a[1] and (b[0] < a[0] or b[1] < a[1]))


# ----------------------------------------------------------------------------- verifier
def test_verifier_rejects_broken_schedules() -> None:
    inst = MulticoreInstance.from_dict(random_instance(5, n=5, m=2, dag=True))
    r = hetopt.solve(inst, "makespan", EXACT)
    assert r.ok
    kind = hetopt.get_kind("multicore")
    sched = r.tables["schedule"]

    def check(df: pd.DataFrame, value: float | None = r.objective_value) -> bool:
        from dataclasses import replace

        return kind.verify(inst, replace(r, tables={"schedule": df}, objective_value=value)).ok

    assert check(sched)
    assert not check(sched.iloc[1:])  # a task missing
    shifted = sched.copy()
    shifted.loc[:, ["start_s", "end_s"]] = shifted[["start_s", "end_s"]] * 0 + [0.0, 0.0]
    assert not check(shifted)  # wrong durations
    early = sched.copy()
    early["start_s"] = 0.0
    early["end_s"] = early["end_s"] - sched["start_s"]
    assert not check(early)  # overlaps and/or precedences broken
    assert not check(sched, value=r.objective_value + 1)  # wrong objective


def test_left_shift_rejects_orders_against_precedences() -> None:
    inst = MulticoreInstance.from_dict(
        {
            "kind": "multicore",
            "cores": [{"id": "a", "type": "a"}],
            "tasks": [
                {"id": "x", "duration_s": {"a": 1.0}},
                {"id": "y", "duration_s": {"a": 1.0}, "predecessors": ["x"]},
            ],
        }
    )
    with pytest.raises(ValueError, match="contradict"):
        left_shift(inst.arrays, np.array([0, 0]), np.array([1.0, 0.0]))


def test_pareto_time_limit_is_honest() -> None:
    from hetopt.kinds.multicore import generate

    data = generate("U1-100", 8, 60, seed=2).to_dict()
    for k, c in enumerate(data["cores"]):
        c["active_power_w"], c["idle_power_w"] = 1.0 + k, 0.1 * k
    r = hetopt.solve(data, "pareto", SolveOptions(threads=1, time_limit_s=1.0))
    assert r.status in (Status.FEASIBLE, Status.NO_SOLUTION)
    if r.status == Status.FEASIBLE:
        assert r.ok and "time limit" in r.termination
        assert len(r.tables["pareto"]) >= 1


def test_limits_as_parameters() -> None:
    path = ROOT / "instances/multicore/deadline_energy.json"
    data = json.loads(path.read_text())
    data.pop("deadline_s")
    free = hetopt.solve(data, "energy", EXACT)
    via_param = hetopt.solve(data, "energy", EXACT, deadline_s=9)
    assert via_param.objective_value == pytest.approx(27.2)
    assert free.objective_value <= via_param.objective_value + 1e-9
    assert via_param.ok
    budget = hetopt.solve(data, "makespan", EXACT, energy_budget_j=28.0)
    assert budget.objective_value == pytest.approx(8.0) and budget.ok
    # a bad value given as a parameter is a usage error naming the parameter, not an
    # error of the instance file (issue 21)
    with pytest.raises(UsageError, match="parameter deadline_s"):
        hetopt.solve(data, "energy", EXACT, deadline_s=-1.0)


@pytest.mark.parametrize("formulation", ["disjunctive", "time_indexed"])
def test_export_every_formulation(tmp_path: Path, formulation: str) -> None:
    path = ROOT / "instances/multicore/big_little_dag.json"
    out = hetopt.export_model(path, tmp_path / "m.lp", "lp", "energy", formulation=formulation)
    text = out.read_text()
    assert "makespan" in text and "c_busy" in text and "c_precedence" in text
    m = hetopt.build_model(path, "makespan", formulation=formulation)
    assert hasattr(m, "c_symmetry") and hasattr(m, "obj")


def test_looser_limit_parameter_overrides_the_instance() -> None:
    """A parameter overrides the instance's limit for the solve and for its verification
    (main before the pipeline: optimal 25.5 J at makespan 12 s)."""
    path = ROOT / "instances/multicore/deadline_energy.json"  # deadline_s = 9
    r = hetopt.solve(path, "energy", EXACT, deadline_s=20.0)
    assert r.status == Status.OPTIMAL and r.ok
    assert r.objective_value == pytest.approx(25.5)


# ------------------------------------------------- killer instances (issue 21)
# Each constraint family binds in one tiny hand-checked instance, so loosening that family
# (halving the precedence rows, the per-core disjunctions or the energy budget; dropping
# the deadline) changes an optimum here. Brute force confirms each hand-computed answer.
def _cores(big_w: float = 4.0, little_w: float = 1.0) -> list[dict]:
    return [
        {"id": "big0", "type": "big", "active_power_w": big_w, "idle_power_w": 0.0},
        {"id": "little0", "type": "little", "active_power_w": little_w, "idle_power_w": 0.0},
    ]


# a (4 s on p, 1 s on r) precedes b (4 s on q, 1 s on r); z (7 s, r only) fills core r.
# Best: a on p then b on q, or z then b on r, or a then z on r: 8 s. A precedence row
# weakened by half lets b start at 2 s on q (7 s); overlaps on r give less than 8 s too.
# The earliest start of b (1 s) and the tail of a (1 s) do not imply the row.
PRECEDENCE = {
    "kind": "multicore",
    "cores": [
        {"id": f"c{t}", "type": t, "active_power_w": 1.0, "idle_power_w": 0.0} for t in "pqr"
    ],
    "tasks": [
        {"id": "a", "duration_s": {"p": 4, "r": 1}},
        {"id": "b", "duration_s": {"q": 4, "r": 1}, "predecessors": ["a"]},
        {"id": "z", "duration_s": {"r": 7}},
    ],
}

# w (2 s, p only) precedes y and z (2 s each, r only): y and z wait for w and then run
# one after the other on r, 6 s. An overlap of y and z on r gives 5 s; the load of r
# (4 s) and the earliest starts (2 s) do not imply the disjunctions.
NO_OVERLAP = {
    "kind": "multicore",
    "cores": PRECEDENCE["cores"],
    "tasks": [
        {"id": "w", "duration_s": {"p": 2}},
        {"id": "y", "duration_s": {"r": 2}, "predecessors": ["w"]},
        {"id": "z", "duration_s": {"r": 2}, "predecessors": ["w"]},
    ],
}

# t (1 s on big at 10 W = 10 J, or 4 s on little at 1 W = 4 J) precedes u (1 s, little
# only, 1 J). Makespan 2 s at 11 J, or 5 s at 5 J.
BUDGET = {
    "kind": "multicore",
    "cores": _cores(big_w=10.0),
    "tasks": [
        {"id": "t", "duration_s": {"big": 1, "little": 4}},
        {"id": "u", "duration_s": {"little": 1}, "predecessors": ["t"]},
    ],
}
BUDGET_ALONE = {"kind": "multicore", "cores": _cores(big_w=10.0), "tasks": [BUDGET["tasks"][0]]}


@pytest.mark.parametrize("formulation", ["disjunctive", "time_indexed"])
def test_killer_precedence(formulation: str) -> None:
    inst = MulticoreInstance.from_dict(PRECEDENCE)
    assert min(p[0] for p in brute_force(inst.arrays)) == 8.0
    r = hetopt.solve(inst, "makespan", EXACT, formulation=formulation)
    assert r.status == Status.OPTIMAL and r.ok
    # the schedule is re-timed from the assignment and the orders, so a loosened row shows
    # in the bound (a model optimum below the true one), not always in the schedule
    assert r.objective_value == pytest.approx(8.0) and r.bound == pytest.approx(8.0)


@pytest.mark.parametrize("formulation", ["disjunctive", "time_indexed"])
def test_killer_no_overlap(formulation: str) -> None:
    inst = MulticoreInstance.from_dict(NO_OVERLAP)
    assert min(p[0] for p in brute_force(inst.arrays)) == 6.0
    r = hetopt.solve(inst, "makespan", EXACT, formulation=formulation)
    assert r.status == Status.OPTIMAL and r.ok
    assert r.objective_value == pytest.approx(6.0) and r.bound == pytest.approx(6.0)


@pytest.mark.parametrize(
    ("data", "formulation"),
    [(BUDGET, "disjunctive"), (BUDGET, "time_indexed"), (BUDGET_ALONE, "assignment")],
)
def test_killer_energy_budget_and_deadline(data: dict, formulation: str) -> None:
    dag = "u" in {t["id"] for t in data["tasks"]}
    fast, slow = (2.0, 5.0) if dag else (1.0, 4.0)
    fast_j, slow_j = (11.0, 5.0) if dag else (10.0, 4.0)
    free = brute_force(MulticoreInstance.from_dict(data).arrays)
    assert sorted(free) == [(fast, fast_j), (slow, slow_j)]
    # the budget binds: only the slow schedule fits (twice the budget admits the fast one)
    mk = hetopt.solve(data, "makespan", EXACT, formulation=formulation, energy_budget_j=slow_j + 1)
    assert mk.status == Status.OPTIMAL and mk.ok
    assert mk.objective_value == pytest.approx(slow) and mk.bound == pytest.approx(slow)
    assert mk.info["energy_j"] == pytest.approx(slow_j)
    # the deadline binds: only the fast schedule is in time
    en = hetopt.solve(data, "energy", EXACT, formulation=formulation, deadline_s=fast)
    assert en.status == Status.OPTIMAL and en.ok
    assert en.objective_value == pytest.approx(fast_j) and en.bound == pytest.approx(fast_j)
    # without limits each objective picks its own schedule
    assert hetopt.solve(data, "makespan", EXACT, formulation=formulation).objective_value == (
        pytest.approx(fast)
    )
    assert hetopt.solve(data, "energy", EXACT, formulation=formulation).objective_value == (
        pytest.approx(slow_j)
    )
