"""``multicore`` DAG jobs: releases, weights, the weighted completion time (Decima),
availability windows and capacities.

The references are not the model: Smith's rule (WSPT, Smith 1956: on one machine,
independent jobs in increasing ``p_j / w_j`` minimise ``sum w_j C_j``) written out here,
and brute force over every assignment and every order of the tasks on each core, each
turned into its semi-active schedule (starts as early as predecessors, the core, the
release and the core's windows allow). For regular objectives (makespan, energy for a
fixed assignment, weighted completion) some semi-active schedule is optimal, so the
brute force is exact.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import highspy
import numpy as np
import pandas as pd
import pytest

import hetopt
from hetopt import InstanceError, SolveOptions, Status, UsageError
from hetopt.kinds.multicore import MulticoreInstance
from hetopt.kinds.multicore.data import MulticoreArrays

ROOT = Path(__file__).resolve().parents[3]
EXACT = SolveOptions(threads=1, mip_rel_gap=0.0)
DECIMA = ROOT / "instances/multicore/decima_jobs.json"


# ----------------------------------------------------------------------------- references
def wspt_value(p: list[float], w: list[float]) -> float:
    """Smith's rule on one machine: jobs by increasing p/w, sum of w_j C_j."""
    t, total = 0.0, 0.0
    for j in sorted(range(len(p)), key=lambda j: p[j] / w[j]):
        t += p[j]
        total += w[j] * t
    return total


def _fit(arr: MulticoreArrays, c: int, t: float, p: float) -> float:
    """Earliest start >= t inside a window of core c (written here, not the kind's)."""
    w = arr.windows[c]
    if w is None:
        return t
    for a, b in w.tolist():
        s = max(t, a)
        if s + p <= b + 1e-9:
            return s
    return math.inf


def _semi_active(arr: MulticoreArrays, core: np.ndarray, orders: tuple) -> np.ndarray | None:
    """Ends of the semi-active schedule with exactly these core sequences (None: the
    sequences contradict the precedences or a task fits in no window)."""
    n = arr.num_tasks
    deps = [list(ps) for ps in arr.preds]
    for seq in orders:
        for a, b in itertools.pairwise(seq):
            deps[b].append(a)
    waiting = [len(d) for d in deps]
    users: list[list[int]] = [[] for _ in range(n)]
    for i, d in enumerate(deps):
        for q in d:
            users[q].append(i)
    queue = [i for i in range(n) if not waiting[i]]
    end = [0.0] * n
    for i in queue:  # the queue grows while it is read (Kahn's algorithm)
        t = max([end[q] for q in deps[i]] + [float(arr.release[i])])
        p = float(arr.dur[i, core[i]])
        s = _fit(arr, int(core[i]), t, p)
        if not math.isfinite(s):
            return None
        end[i] = s + p
        for j in users[i]:
            waiting[j] -= 1
            if not waiting[j]:
                queue.append(j)
    return np.array(end) if len(queue) == n else None


def _sequences(arr: MulticoreArrays, tasks: list[int]) -> list[tuple[int, ...]]:
    """The orders of ``tasks`` on one core that no precedence path contradicts."""
    after = arr.successors_closure
    return [
        seq
        for seq in itertools.permutations(tasks)
        if not any(seq[a] in after[seq[b]] for a in range(len(seq)) for b in range(a + 1, len(seq)))
    ]


def schedules(arr: MulticoreArrays):  # type: ignore[no-untyped-def]
    """(core of each task, ends) of every semi-active schedule."""
    n = arr.num_tasks
    options = [np.nonzero(arr.eligible[i])[0] for i in range(n)]
    for assignment in itertools.product(*options):
        core = np.array(assignment)
        if any(len(set(core[arr.job == j])) > arr.executors[j] for j in range(arr.num_jobs)):
            continue  # a job on more cores than its job_executors limit
        per_core = [_sequences(arr, list(np.nonzero(core == c)[0])) for c in range(arr.num_cores)]
        for orders in itertools.product(*per_core):
            end = _semi_active(arr, core, orders)
            if end is not None:
                yield core, end


def brute_force(arr: MulticoreArrays) -> dict[str, float]:
    """Optimal makespan, energy and weighted completion (within deadline and budget)."""
    n = arr.num_tasks
    best = {"makespan": math.inf, "energy": math.inf, "weighted_completion": math.inf}
    for core, end in schedules(arr):
        mk = float(end.max())
        en = arr.energy(core, mk)
        if arr.deadline is not None and mk > arr.deadline + 1e-9:
            continue
        if arr.budget is not None and en > arr.budget + 1e-9:
            continue
        done = np.zeros(arr.num_jobs)
        for i in range(n):
            done[arr.job[i]] = max(done[arr.job[i]], end[i])
        wc = float(arr.weight @ done)
        best["makespan"] = min(best["makespan"], mk)
        best["energy"] = min(best["energy"], en)
        best["weighted_completion"] = min(best["weighted_completion"], wc)
    return best


def random_jobs(
    seed: int,
    jobs: int = 3,
    tasks_per_job: tuple[int, int] = (1, 3),
    cores: int = 2,
    integer: bool = True,
    releases: bool = True,
    windows: bool = False,
) -> dict:
    """Small DAG jobs on ``cores`` cores of different types, releases per job."""
    rng = np.random.default_rng(seed)
    core_list = []
    for k in range(cores):
        core = {
            "id": f"c{k}",
            "type": f"type{k}",
            "active_power_w": float(rng.integers(1, 4)),
            "idle_power_w": float(rng.integers(0, 2)) / 4,
        }
        if windows and k == 0:
            a = float(rng.integers(0, 3))
            core["windows"] = [
                {"start_s": a, "end_s": a + float(rng.integers(3, 7))},
                {"start_s": a + 8.0, "end_s": a + 30.0},
            ]
        core_list.append(core)
    tasks = []
    weights = {}
    for j in range(jobs):
        name = f"j{j}"
        weights[name] = float(rng.integers(1, 5))
        release = float(rng.integers(0, 4)) if releases else 0.0
        ids: list[str] = []
        for t in range(int(rng.integers(tasks_per_job[0], tasks_per_job[1] + 1))):
            d = {}
            for k in range(cores):
                if rng.uniform() < 0.8 or not d:
                    v = rng.integers(1, 6) if integer else rng.uniform(0.5, 5.0)
                    d[f"type{k}"] = float(round(float(v), 3))
            task: dict = {"id": f"{name}.t{t}", "duration_s": d, "job": name}
            if release:
                task["release_s"] = release
            preds = [q for q in ids if rng.uniform() < 0.6]
            if preds:
                task["predecessors"] = preds
            ids.append(task["id"])
            tasks.append(task)
    return {"kind": "multicore", "cores": core_list, "tasks": tasks, "job_weights": weights}


def one_core(p: list[float], w: list[float], release: list[float] | None = None) -> dict:
    tasks = []
    for i, d in enumerate(p):
        task: dict = {"id": f"t{i}", "duration_s": {"cpu": d}}
        if release is not None and release[i] > 0:
            task["release_s"] = release[i]
        tasks.append(task)
    return {
        "kind": "multicore",
        "cores": [{"id": "core0", "type": "cpu"}],
        "tasks": tasks,
        "job_weights": {f"t{i}": x for i, x in enumerate(w)},
    }


# ----------------------------------------------------------------------------- Smith's rule
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("integer", [True, False])
def test_one_core_independent_jobs_follow_smiths_rule(seed: int, integer: bool) -> None:
    rng = np.random.default_rng(1000 + seed)
    n = 6
    p = [float(rng.integers(1, 9)) if integer else float(rng.uniform(0.5, 8.0)) for _ in range(n)]
    w = [float(rng.integers(1, 6)) for _ in range(n)]
    r = hetopt.solve(one_core(p, w), "weighted_completion", EXACT)
    assert r.status == Status.OPTIMAL and r.ok
    assert r.info["formulation"] == ("time_indexed" if integer else "disjunctive")
    assert r.objective_value == pytest.approx(wspt_value(p, w), abs=1e-6)
    assert r.bound == pytest.approx(r.objective_value, abs=1e-5)
    # the warm start is Smith's rule itself (the job_work dispatch rule)
    assert r.info["heuristic_weighted_completion"] == pytest.approx(wspt_value(p, w))


@pytest.mark.parametrize("formulation", ["disjunctive", "time_indexed"])
def test_smiths_rule_with_explicit_jobs_and_both_formulations(formulation: str) -> None:
    p, w = [3.0, 1.0, 4.0, 1.0, 5.0], [2.0, 1.0, 4.0, 3.0, 1.0]
    data = one_core(p, w)
    for i, task in enumerate(data["tasks"]):
        task["job"] = f"job{i}"
    data["job_weights"] = {f"job{i}": x for i, x in enumerate(w)}
    r = hetopt.solve(data, "weighted_completion", EXACT, formulation=formulation)
    assert r.status == Status.OPTIMAL and r.ok
    assert r.objective_value == pytest.approx(wspt_value(p, w))
    jobs = r.tables["jobs"].set_index("job")
    assert jobs.loc["job3", "completion_s"] == pytest.approx(1.0)  # p/w = 1/3 goes first
    assert (jobs["weighted_completion_s"] == jobs["weight"] * jobs["completion_s"]).all()


# ----------------------------------------------------------------------------- brute force
@pytest.mark.parametrize("seed", range(5))
def test_one_core_with_releases_matches_permutations(seed: int) -> None:
    rng = np.random.default_rng(2000 + seed)
    n = 5
    p = [float(rng.integers(1, 6)) for _ in range(n)]
    w = [float(rng.integers(1, 5)) for _ in range(n)]
    rel = [float(rng.integers(0, 8)) for _ in range(n)]
    data = one_core(p, w, rel)
    inst = MulticoreInstance.from_dict(data)
    # every permutation of the single core, tasks as early as release and core allow
    best_wc, best_mk = math.inf, math.inf
    for perm in itertools.permutations(range(n)):
        t, wc = 0.0, 0.0
        for j in perm:
            t = max(t, rel[j]) + p[j]
            wc += w[j] * t
        best_wc, best_mk = min(best_wc, wc), min(best_mk, t)
    assert brute_force(inst.arrays)["weighted_completion"] == pytest.approx(best_wc)
    for formulation in ("disjunctive", "time_indexed"):
        r = hetopt.solve(inst, "weighted_completion", EXACT, formulation=formulation)
        assert r.status == Status.OPTIMAL and r.ok, formulation
        assert r.objective_value == pytest.approx(best_wc, abs=1e-6), formulation
        mk = hetopt.solve(inst, "makespan", EXACT, formulation=formulation)
        assert mk.objective_value == pytest.approx(best_mk, abs=1e-6), formulation
        sched = r.tables["schedule"].set_index("task")
        for i in range(n):
            assert sched.loc[f"t{i}", "start_s"] >= rel[i] - 1e-9


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("formulation", ["disjunctive", "time_indexed"])
def test_two_cores_three_dag_jobs_match_brute_force(seed: int, formulation: str) -> None:
    data = random_jobs(3000 + seed, jobs=3, tasks_per_job=(1, 2), cores=2)
    inst = MulticoreInstance.from_dict(data)
    assert inst.arrays.num_tasks <= 6
    best = brute_force(inst.arrays)
    for objective in ("weighted_completion", "makespan", "energy"):
        r = hetopt.solve(inst, objective, EXACT, formulation=formulation)
        assert r.status == Status.OPTIMAL and r.ok, objective
        assert r.objective_value == pytest.approx(best[objective], abs=1e-6), objective


@pytest.mark.parametrize("seed", range(3))
def test_fractional_times_disjunctive_matches_brute_force(seed: int) -> None:
    data = random_jobs(4000 + seed, jobs=3, tasks_per_job=(1, 2), cores=2, integer=False)
    for task in data["tasks"]:
        if "release_s" in task:
            task["release_s"] += 0.25
    inst = MulticoreInstance.from_dict(data)
    assert not inst.arrays.integer_times
    best = brute_force(inst.arrays)
    r = hetopt.solve(inst, "weighted_completion", EXACT)
    assert r.info["formulation"] == "disjunctive"
    assert r.status == Status.OPTIMAL and r.ok
    assert r.objective_value == pytest.approx(best["weighted_completion"], abs=1e-6)
    with pytest.raises(UsageError, match="whole-number durations"):
        hetopt.solve(inst, "weighted_completion", EXACT, formulation="time_indexed")
    whole = one_core([1.0, 2.0], [1.0, 1.0], [0.0, 0.5])
    with pytest.raises(UsageError, match="whole-number releases"):
        hetopt.solve(whole, "makespan", EXACT, formulation="time_indexed")
    r = hetopt.solve(whole, "makespan", EXACT)
    assert r.info["formulation"] == "disjunctive" and r.objective_value == pytest.approx(3.0)


@pytest.mark.parametrize("seed", range(4))
def test_independent_tasks_with_releases_are_sequenced(seed: int) -> None:
    """Releases make an independent-task makespan a sequencing problem (no assignment)."""
    rng = np.random.default_rng(5000 + seed)
    tasks = [
        {
            "id": f"t{i}",
            "duration_s": {"big": float(rng.integers(1, 5)), "little": float(rng.integers(2, 8))},
            "release_s": float(rng.integers(0, 6)),
        }
        for i in range(5)
    ]
    data = {
        "kind": "multicore",
        "cores": [
            {"id": "b0", "type": "big", "active_power_w": 3.0, "idle_power_w": 0.5},
            {"id": "l0", "type": "little", "active_power_w": 1.0, "idle_power_w": 0.25},
        ],
        "tasks": tasks,
    }
    inst = MulticoreInstance.from_dict(data)
    best = brute_force(inst.arrays)
    for objective in ("makespan", "energy", "weighted_completion"):
        r = hetopt.solve(inst, objective, EXACT)
        assert r.info["formulation"] != "assignment"
        assert r.status == Status.OPTIMAL and r.ok
        assert r.objective_value == pytest.approx(best[objective], abs=1e-6), objective
    with pytest.raises(UsageError, match="release times"):
        hetopt.solve(inst, "makespan", EXACT, formulation="assignment")


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("formulation", ["disjunctive", "time_indexed"])
def test_windows_match_brute_force(seed: int, formulation: str) -> None:
    data = random_jobs(6000 + seed, jobs=2, tasks_per_job=(1, 3), cores=2, windows=True)
    inst = MulticoreInstance.from_dict(data)
    best = brute_force(inst.arrays)
    for objective in ("weighted_completion", "makespan", "energy"):
        r = hetopt.solve(inst, objective, EXACT, formulation=formulation)
        if not math.isfinite(best[objective]):
            assert r.status == Status.INFEASIBLE
            continue
        assert r.status == Status.OPTIMAL and r.ok, objective
        assert "windows" in r.verification.checks
        assert r.objective_value == pytest.approx(best[objective], abs=1e-6), objective


def test_pareto_front_with_releases_matches_brute_force() -> None:
    data = random_jobs(7001, jobs=2, tasks_per_job=(2, 2), cores=2)
    inst = MulticoreInstance.from_dict(data)
    arr = inst.arrays
    # every (makespan, energy) of a semi-active schedule; the front is its lower hull
    pts = {
        (round(float(end.max()), 6), round(arr.energy(core, float(end.max())), 6))
        for core, end in schedules(arr)
    }
    front = sorted(
        (m, e)
        for m, e in pts
        if not any(m2 <= m and e2 <= e and (m2, e2) != (m, e) for m2, e2 in pts)
    )
    r = hetopt.solve(inst, "pareto", EXACT)
    assert r.status == Status.OPTIMAL and r.ok
    got = sorted(
        (round(a, 6), round(b, 6))
        for a, b in r.tables["pareto"][["makespan_s", "energy_j"]].to_numpy()
    )
    assert got == front


# ----------------------------------------------------------------------------- the example
def test_decima_example_known_answers_by_brute_force() -> None:
    known = json.loads((ROOT / "instances/multicore/known_answers.json").read_text())
    mine = {e["objective"]: e["value"] for e in known if e["file"] == DECIMA.name}
    assert set(mine) == {"weighted_completion", "makespan", "energy"}
    best = brute_force(hetopt.read_instance(DECIMA).arrays)
    for objective, value in mine.items():
        assert best[objective] == pytest.approx(value), objective


def test_decima_example_solves_to_its_answer() -> None:
    r = hetopt.solve(DECIMA, "weighted_completion", EXACT)
    assert r.status == Status.OPTIMAL and r.ok
    jobs = r.tables["jobs"]
    assert set(jobs["job"]) == {"etl", "query", "ml"}
    assert r.objective_value == pytest.approx(float(jobs["weighted_completion_s"].sum()))
    assert (jobs["jct_s"] == jobs["completion_s"] - jobs["arrival_s"]).all()
    assert "job" in r.tables["schedule"].columns


# ----------------------------------------------------------------------------- export units
@pytest.mark.parametrize("fmt", ["lp", "mps"])
@pytest.mark.parametrize("formulation", ["disjunctive", "time_indexed"])
def test_exported_objective_is_the_reported_one(tmp_path: Path, fmt: str, formulation: str) -> None:
    """The weighted_completion model is in user units: solving the exported file gives
    the reported objective."""
    r = hetopt.solve(DECIMA, "weighted_completion", EXACT, formulation=formulation)
    path = hetopt.export_model(
        DECIMA, tmp_path / f"m.{fmt}", fmt, "weighted_completion", formulation=formulation
    )
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.readModel(str(path))
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    assert h.getInfo().objective_function_value == pytest.approx(r.objective_value, abs=1e-6)


# ----------------------------------------------------------------------------- executors
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("formulation", ["disjunctive", "time_indexed"])
def test_executor_limits_match_brute_force(seed: int, formulation: str) -> None:
    data = random_jobs(8000 + seed, jobs=2, tasks_per_job=(2, 3), cores=3)
    data["job_executors"] = {"j0": 1, "j1": 2}
    inst = MulticoreInstance.from_dict(data)
    best = brute_force(inst.arrays)
    free = brute_force(MulticoreInstance.from_dict({**data, "job_executors": None}).arrays)
    assert best["weighted_completion"] >= free["weighted_completion"] - 1e-9
    for objective in ("weighted_completion", "makespan", "energy"):
        r = hetopt.solve(inst, objective, EXACT, formulation=formulation)
        assert r.status == Status.OPTIMAL and r.ok, objective
        assert "executors" in r.verification.checks
        assert r.objective_value == pytest.approx(best[objective], abs=1e-6), objective
        sched = r.tables["schedule"]
        assert sched[sched["job"] == "j0"]["core"].nunique() == 1


def test_executor_limit_on_independent_tasks_keeps_the_assignment_model() -> None:
    """One job of four tasks limited to two of four identical cores: makespan = the best
    split of the work over two cores (brute force), not over four."""
    p = [3.0, 2.0, 2.0, 1.0]
    data = {
        "kind": "multicore",
        "cores": [{"id": f"c{k}", "type": "cpu"} for k in range(4)],
        "tasks": [{"id": f"t{i}", "duration_s": {"cpu": d}, "job": "app"} for i, d in enumerate(p)],
        "job_executors": {"app": 2},
    }
    best = min(
        max(
            sum(d for d, s in zip(p, side, strict=True) if s),
            sum(p) - sum(d for d, s in zip(p, side, strict=True) if s),
        )
        for side in itertools.product([0, 1], repeat=len(p))
    )
    r = hetopt.solve(data, "makespan", EXACT)
    assert r.info["formulation"] == "assignment"
    assert r.status == Status.OPTIMAL and r.ok
    assert r.objective_value == pytest.approx(best) and best == 4.0
    assert r.tables["schedule"]["core"].nunique() == 2
    with pytest.raises(InstanceError, match=r"job_executors\.nope"):
        MulticoreInstance.from_dict({**data, "job_executors": {"nope": 1}})
    with pytest.raises(InstanceError, match=r"job_executors\.app"):
        MulticoreInstance.from_dict({**data, "job_executors": {"app": 0}})


# ----------------------------------------------------------------------------- capacities
def test_capacity_restricts_where_a_task_runs() -> None:
    data = {
        "kind": "multicore",
        "cores": [
            {"id": "fpga_small", "type": "fpga", "capacity": {"lut": 100.0, "dsp": 4.0}},
            {"id": "fpga_big", "type": "fpga", "capacity": {"lut": 400.0}},
            {"id": "cpu", "type": "cpu"},
        ],
        "tasks": [
            {"id": "k0", "duration_s": {"fpga": 1.0, "cpu": 9.0}, "demand": {"lut": 200.0}},
            {"id": "k1", "duration_s": {"fpga": 1.0}, "demand": {"lut": 50.0, "dsp": 8.0}},
            {"id": "k2", "duration_s": {"fpga": 2.0, "cpu": 5.0}},
        ],
    }
    arr = MulticoreInstance.from_dict(data).arrays
    # k0 does not fit the small FPGA's LUTs; k1 exceeds its DSPs (the big one lists no
    # DSPs, so they are not limited there); the CPU lists no capacity at all
    assert arr.eligible.tolist() == [[False, True, True], [False, True, False], [True, True, True]]
    r = hetopt.solve(data, "makespan", EXACT)
    assert r.ok and r.objective_value == pytest.approx(2.0)
    bad = json.loads(json.dumps(data))
    bad["tasks"][1]["demand"]["lut"] = 500.0
    with pytest.raises(InstanceError, match=r"tasks\[1\]\.demand"):
        MulticoreInstance.from_dict(bad)


# ----------------------------------------------------------------------------- validation
def _decima() -> dict:
    data: dict = json.loads(DECIMA.read_text())
    return data


def _bad(edit) -> dict:  # type: ignore[no-untyped-def]
    data = _decima()
    edit(data)
    return data


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (_bad(lambda d: d["job_weights"].update(nope=1.0)), "job_weights.nope"),
        (_bad(lambda d: d["job_weights"].pop("ml")), "tasks[5].job"),
        (_bad(lambda d: d["job_weights"].update(ml=-1.0)), "job_weights.ml"),
        (_bad(lambda d: d["tasks"][3].update(release_s=-1.0)), "tasks[3].release_s"),
        (_bad(lambda d: d["tasks"][0].update(job="query.scan")), "tasks[0].job"),
        (_bad(lambda d: d["tasks"][0].update(job="")), "tasks[0].job"),
        (
            _bad(lambda d: d["cores"][0].update(windows=[{"start_s": 5.0, "end_s": 5.0}])),
            "cores[0].windows[0].end_s",
        ),
        (
            _bad(
                lambda d: d["cores"][0].update(
                    windows=[{"start_s": 0.0, "end_s": 5.0}, {"start_s": 4.0, "end_s": 9.0}]
                )
            ),
            "cores[0].windows[1].start_s",
        ),
        (_bad(lambda d: d["cores"][0].update(windows=[])), "cores[0].windows"),
        (_bad(lambda d: d["cores"][0].update(capacity={"mem_gb": -1.0})), "cores[0].capacity"),
    ],
)
def test_bad_job_fields_name_the_field(data: dict, field: str) -> None:
    with pytest.raises(InstanceError) as exc:
        MulticoreInstance.from_dict(data)
    assert field in str(exc.value)


def test_a_task_without_job_among_jobs_is_refused_for_weighted_completion() -> None:
    data = _decima()
    data.pop("job_weights")
    del data["tasks"][2]["job"]  # etl.reduce is now a job of its own ...
    inst = MulticoreInstance.from_dict(data)  # ... which is a valid instance
    assert hetopt.solve(inst, "makespan", EXACT).ok
    with pytest.raises(InstanceError, match=r"tasks\[2\]\.job.*no job"):
        hetopt.solve(inst, "weighted_completion", EXACT)
    kind = hetopt.get_kind("multicore")
    with pytest.raises(InstanceError):
        kind.check(inst, "weighted_completion", kind.parse_params({}))


def test_no_jobs_means_each_task_is_a_job_of_weight_one() -> None:
    p = [2.0, 1.0, 3.0]
    data = one_core(p, [1.0, 1.0, 1.0])
    data.pop("job_weights")
    r = hetopt.solve(data, "weighted_completion", EXACT)
    assert r.objective_value == pytest.approx(1 + 3 + 6)  # shortest processing time first
    assert "jobs" in r.tables and "job" not in r.tables["schedule"].columns


# ----------------------------------------------------------------------------- verifier
def test_verifier_checks_releases_windows_and_weighted_completion() -> None:
    data = random_jobs(6002, jobs=2, tasks_per_job=(2, 3), cores=2, windows=True)
    inst = MulticoreInstance.from_dict(data)
    r = hetopt.solve(inst, "weighted_completion", EXACT)
    assert r.ok
    kind = hetopt.get_kind("multicore")

    def problems(tables: dict[str, pd.DataFrame], value: float | None = r.objective_value) -> str:
        from dataclasses import replace

        v = kind.verify(inst, replace(r, tables=tables, objective_value=value))
        return " | ".join(v.violations)

    sched, jobs = r.tables["schedule"], r.tables["jobs"]
    assert problems({"schedule": sched, "jobs": jobs}) == ""
    assert problems({"schedule": sched}) == ""  # the jobs table is a cross-check
    assert "objective recomputed" in problems({"schedule": sched}, r.objective_value + 1)
    wrong = jobs.copy()
    wrong.loc[0, "completion_s"] += 1.0
    assert "its last task ends" in problems({"schedule": sched, "jobs": wrong})
    assert "missing" in problems({"schedule": sched, "jobs": jobs.iloc[1:]})
    # a task moved to before its release; a task moved outside its core's windows
    arr = inst.arrays
    i = int(np.argmax(arr.release))
    assert arr.release[i] > 0
    early = sched.copy()
    row = early["task"] == arr.task_ids[i]
    early.loc[row, ["start_s", "end_s"]] -= float(early.loc[row, "start_s"].iloc[0]) - (
        arr.release[i] - 0.5
    )
    assert "before its release_s" in problems({"schedule": early}, None)
    on_c0 = sched[sched["core"] == "c0"]
    assert len(on_c0)
    outside = sched.copy()
    row = outside["task"] == on_c0["task"].iloc[-1]
    outside.loc[row, ["start_s", "end_s"]] += 100.0  # past every window of c0
    assert "outside every availability window" in problems({"schedule": outside}, None)


@pytest.mark.parametrize("formulation", ["disjunctive", "time_indexed"])
def test_windows_the_list_schedules_cannot_fill(formulation: str) -> None:
    """Greedy list scheduling puts ``a`` in ``x``'s only window, leaving none for ``b``:
    no warm start, the serial bound as horizon, the MILP still finds the optimum."""
    data = {
        "kind": "multicore",
        "cores": [
            {"id": "x", "type": "x", "windows": [{"start_s": 0.0, "end_s": 2.0}]},
            {"id": "y", "type": "y"},
        ],
        "tasks": [
            {"id": "a", "duration_s": {"x": 2.0, "y": 2.0}},
            {"id": "b", "duration_s": {"x": 2.0}},
        ],
    }
    for objective, value in (("makespan", 2.0), ("weighted_completion", 4.0)):
        r = hetopt.solve(data, objective, EXACT, formulation=formulation)
        assert r.status == Status.OPTIMAL and r.ok
        assert r.objective_value == pytest.approx(value)
        assert "heuristic_makespan_s" not in r.info and r.info["horizon_s"] == 4.0
        lp = hetopt.solve(data, objective, EXACT, formulation=formulation, relaxation=True)
        assert lp.status == Status.NO_SOLUTION and "windows" in lp.termination
