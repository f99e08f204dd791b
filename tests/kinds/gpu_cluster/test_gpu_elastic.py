"""Lyra's elastic jobs on loaned capacity: ``max_progress`` and ``reclaim`` (gpu_cluster).

Known answers come from oracles written here, independently of the kind's code:

* one GPU type: ``max_progress`` is a multiple-choice knapsack, solved exactly by the
  textbook dynamic programme over capacity (Sinha and Zoltners, Oper. Res. 1979);
* two GPU types: brute force over every job's options (or none);
* ``reclaim``: brute force over every set of ``servers`` loaned servers, applying the
  shrink-or-preempt rule of ``models/gpu_cluster_elastic.md``.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
from pathlib import Path
from typing import Any

import highspy
import numpy as np
import pandas as pd
import pytest

import hetopt
from hetopt import Status
from hetopt.cli import main as cli_main
from hetopt.kinds.gpu_cluster import GpuClusterInstance

ROOT = Path(__file__).resolve().parents[3]
ELASTIC = ROOT / "instances" / "gpu_cluster" / "elastic"
EXACT = hetopt.SolveOptions(mip_rel_gap=0.0, threads=1)


# ------------------------------------------------------------------ random instances
def random_jobs(rng: np.random.Generator, n: int, types: list[str]) -> list[dict[str, Any]]:
    """A mix of elastic and fixed-size jobs with random throughputs on ``types``."""
    jobs = []
    for i in range(n):
        steps = float(rng.integers(1, 20) * 1800)
        weight = float(rng.choice([1.0, 1.0, 2.0, 0.5]))
        if rng.random() < 0.6:
            counts = sorted(rng.choice([1, 2, 3, 4, 6, 8], size=rng.integers(1, 4), replace=False))
            thr = {}
            for t in types:
                if rng.random() < 0.8 or not thr:
                    base = float(rng.uniform(0.5, 5.0))
                    thr[t] = [round(base * w ** float(rng.uniform(0.5, 1.0)), 3) for w in counts]
                    if rng.random() < 0.15:
                        thr[t][0] = 0.0  # cannot run that small there
            job = {
                "id": f"e{i}",
                "elastic": {"workers": [int(w) for w in counts], "throughput": thr},
            }
        else:
            thr = {t: round(float(rng.uniform(0.5, 8.0)), 3) for t in types if rng.random() < 0.8}
            if not thr:
                thr = {types[0]: 1.0}
            job = {"id": f"j{i}", "throughput": thr, "scale_factor": int(rng.choice([1, 2, 4]))}
        job.update({"steps_remaining": steps, "weight": weight})
        jobs.append(job)
    return jobs


def instance(
    workers: dict[str, int], loanable: dict[str, int], jobs: list[dict[str, Any]]
) -> dict[str, Any]:
    return {"kind": "gpu_cluster", "workers": workers, "loanable": loanable, "jobs": jobs}


def job_options(job: dict[str, Any], cap: dict[str, int]) -> list[tuple[str, int, float]]:
    """(type, workers, value in 1/h) of every usable option of a job dict."""
    out = []
    scale = 3600.0 * job.get("weight", 1.0) / job["steps_remaining"]
    if "elastic" in job:
        for t, values in job["elastic"]["throughput"].items():
            for w, v in zip(job["elastic"]["workers"], values, strict=True):
                if v > 0 and w <= cap[t]:
                    out.append((t, w, scale * v))
    else:
        for t, v in job["throughput"].items():
            if v > 0 and job["scale_factor"] <= cap[t]:
                out.append((t, job["scale_factor"], scale * v))
    return out


def feasible(data: dict[str, Any]) -> bool:
    cap = {t: n + data["loanable"].get(t, 0) for t, n in data["workers"].items()}
    return all(job_options(j, cap) for j in data["jobs"])


def mckp_dp(groups: list[list[tuple[int, float]]], capacity: int) -> float:
    """Multiple-choice knapsack by dynamic programming over capacity: at most one
    (weight, value) item per group, total weight <= capacity."""
    best = [0.0] * (capacity + 1)  # best[c]: largest value with total weight <= c
    for items in groups:
        new = best[:]
        for c in range(capacity + 1):
            for w, v in items:
                if w <= c and best[c - w] + v > new[c]:
                    new[c] = best[c - w] + v
        best = new
    return best[capacity]


def brute_force(data: dict[str, Any]) -> float:
    cap = {t: n + data["loanable"].get(t, 0) for t, n in data["workers"].items()}
    choices = [[None, *job_options(j, cap)] for j in data["jobs"]]
    best = 0.0
    for combo in itertools.product(*choices):
        used = dict.fromkeys(cap, 0)
        value = 0.0
        for c in combo:
            if c is not None:
                used[c[0]] += c[1]
                value += c[2]
        if all(used[t] <= cap[t] for t in cap):
            best = max(best, value)
    return best


def solve(data: dict[str, Any], objective: str = "max_progress", **params: Any) -> hetopt.Result:
    r = hetopt.solve(copy.deepcopy(data), objective, EXACT, **params)
    assert r.status == Status.OPTIMAL, r
    assert r.verification is not None and r.verification.ok, r.verification
    return r


# ------------------------------------------------------------------ max_progress: oracles
@pytest.mark.parametrize("seed", range(12))
def test_one_type_matches_the_mckp_dynamic_programme(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(20):
        data = instance(
            {"v100": int(rng.integers(0, 9))},
            {"v100": int(rng.integers(0, 9))},
            random_jobs(rng, int(rng.integers(3, 11)), ["v100"]),
        )
        if data["workers"]["v100"] == 0:
            data["workers"]["v100"] = 1
        if feasible(data):
            break
    else:  # pragma: no cover - the generator always finds one
        pytest.skip("no feasible instance drawn")
    cap = data["workers"]["v100"] + data["loanable"]["v100"]
    groups = [[(w, v) for _, w, v in job_options(j, {"v100": cap})] for j in data["jobs"]]
    expected = mckp_dp(groups, cap)
    r = solve(data)
    assert r.objective_value == pytest.approx(expected, rel=1e-9, abs=1e-12)
    alloc = r.tables["elastic_allocation"]
    assert list(alloc["job"]) == [j["id"] for j in data["jobs"]]
    assert int(alloc["workers"].sum()) <= cap


@pytest.mark.parametrize("seed", range(10))
def test_two_types_match_brute_force(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    for _ in range(50):
        data = instance(
            {"v100": int(rng.integers(1, 6)), "t4": int(rng.integers(0, 3))},
            {"t4": int(rng.integers(0, 7))},
            random_jobs(rng, int(rng.integers(2, 6)), ["v100", "t4"]),
        )
        if feasible(data):
            break
    r = solve(data)
    assert r.objective_value == pytest.approx(brute_force(data), rel=1e-9, abs=1e-12)
    cap = r.tables["capacity"].set_index("worker_type")
    assert (cap["used"] <= cap["workers"] + cap["loanable"]).all()
    assert (cap["borrowed"] == np.maximum(cap["used"] - cap["workers"], 0)).all()


def test_loaning_raises_progress_and_borrows_only_beyond_owned_gpus() -> None:
    jobs = [
        {"id": "a", "elastic": {"workers": [1, 2, 4], "throughput": {"v100": [2, 3.6, 6], "t4": [1, 1.8, 3.0]}}, "steps_remaining": 3600},
        {"id": "b", "throughput": {"v100": 4.0, "t4": 2.5}, "scale_factor": 2, "steps_remaining": 3600},
    ]  # fmt: skip
    own = solve(instance({"v100": 4, "t4": 0}, {}, jobs))
    loan = solve(instance({"v100": 4, "t4": 0}, {"t4": 4}, jobs))
    # owned only: a on 2 v100 (3.6) + b on 2 v100 (4.0) beats a on 4 (6.0) alone
    assert own.objective_value == pytest.approx(7.6)
    assert own.info["gpus_borrowed"] == 0
    # with 4 t4 to borrow: a on 4 v100 (6.0) and b on 2 borrowed t4 (2.5)
    assert loan.objective_value == pytest.approx(8.5)
    alloc = loan.tables["elastic_allocation"].set_index("job")
    assert (alloc.loc["a", "worker_type"], alloc.loc["a", "workers"]) == ("v100", 4)
    assert (alloc.loc["b", "worker_type"], alloc.loc["b", "workers"]) == ("t4", 2)
    assert loan.info["gpus_borrowed"] == 2


def test_mixed_instance_fixed_size_jobs_run_on_scale_factor_gpus_or_wait() -> None:
    jobs = [
        {"id": "big", "throughput": {"v100": 10.0}, "scale_factor": 4, "steps_remaining": 36000},
        {"id": "e", "elastic": {"workers": [1, 2], "throughput": {"v100": [3.0, 5.0]}}, "steps_remaining": 3600},
    ]  # fmt: skip
    r = solve(instance({"v100": 4}, {}, jobs))
    alloc = r.tables["elastic_allocation"].set_index("job")
    # big alone: 3600*10/36000 = 1; e alone on 2: 5 -> e runs, big (4 GPUs) must wait
    assert r.objective_value == pytest.approx(5.0)
    assert alloc.loc["big", "workers"] == 0 and alloc.loc["big", "worker_type"] == ""
    assert alloc.loc["e", "workers"] == 2 and bool(alloc.loc["e", "elastic"])
    assert set(alloc.loc[alloc["workers"] > 0, "workers"]) <= {1, 2, 4}


def test_weights_scale_the_progress_terms() -> None:
    jobs = [
        {"id": "x", "throughput": {"v100": 1.0}, "steps_remaining": 3600, "weight": 3.0},
        {"id": "y", "throughput": {"v100": 2.0}, "steps_remaining": 3600},
    ]
    r = solve(instance({"v100": 1}, {}, jobs))
    assert r.objective_value == pytest.approx(3.0)
    assert r.tables["elastic_allocation"].set_index("job").loc["x", "workers"] == 1


def test_exported_objective_is_the_reported_one(tmp_path: Path) -> None:
    for name, objective, params in (
        ("lyra_small.json", "max_progress", {}),
        ("lyra_small.json", "reclaim", {"servers": 2}),
        ("lyra_small.json", "reclaim", {"servers": 1, "shrink_cost": 0.25}),
    ):
        r = hetopt.solve(ELASTIC / name, objective, EXACT, **params)
        for fmt in ("mps", "lp"):
            path = tmp_path / f"m.{fmt}"
            hetopt.export_model(ELASTIC / name, path, fmt, objective, **params)
            h = highspy.Highs()
            h.setOptionValue("output_flag", False)
            h.setOptionValue("mip_rel_gap", 0.0)
            h.readModel(str(path))
            h.run()
            assert h.getInfo().objective_function_value == pytest.approx(
                r.objective_value, rel=1e-9, abs=1e-9
            ), (name, objective, params, fmt)


# ------------------------------------------------------------------ reclaim: brute force
def reclaim_oracle(
    data: dict[str, Any], servers: int, shrink_cost: float, server_type: str | None = None
) -> float:
    jobs = {j["id"]: j for j in data["jobs"]}
    loaned = data["loaned_servers"]
    on: dict[str, int] = {}
    typ: dict[str, str] = {}
    for s in loaned:
        for j, g in s.get("jobs", {}).items():
            on[j] = on.get(j, 0) + g
            typ[j] = s["worker_type"]
    candidates = [k for k, s in enumerate(loaned) if server_type in (None, s["worker_type"])]
    best = math.inf
    for subset in itertools.combinations(candidates, servers):
        lost: dict[str, int] = {}
        for k in subset:
            for j, g in loaned[k].get("jobs", {}).items():
                lost[j] = lost.get(j, 0) + g
        cost = 0.0
        for j, gone in lost.items():
            job = jobs[j]
            if "elastic" in job:
                now = job.get("current_workers", on[j])
                thr = job["elastic"]["throughput"][typ[j]]
                fits = [
                    w
                    for w, v in zip(job["elastic"]["workers"], thr, strict=True)
                    if v > 0 and w <= now - gone
                ]
                if fits:
                    cost += shrink_cost * (now - max(fits))
                    continue
            cost += job.get("preemption_cost", 1.0)
        best = min(best, cost)
    return best


def random_placement(rng: np.random.Generator) -> dict[str, Any]:
    S = int(rng.integers(2, 7))
    servers = [{"id": f"s{k}", "worker_type": "t4", "gpus": 4, "jobs": {}} for k in range(S)]
    free = [4] * S
    jobs = []
    for i in range(int(rng.integers(2, 7))):
        elastic = rng.random() < 0.6
        spread = rng.choice(S, size=int(rng.integers(1, 3)), replace=False)
        take = {int(k): int(rng.integers(1, 3)) for k in spread}
        take = {k: min(g, free[k]) for k, g in take.items() if free[k] > 0}
        take = {k: g for k, g in take.items() if g > 0}
        if not take:
            continue
        on = sum(take.values())
        if elastic:
            own = int(rng.integers(0, 3))
            now = on + own
            counts = sorted({1, now, *[int(w) for w in rng.integers(1, now + 3, size=2)]})
            thr = [round(float(w) ** 0.8, 3) for w in counts]
            if rng.random() < 0.3 and counts[0] != now:
                thr[0] = 0.0  # cannot run on one t4
            job: dict[str, Any] = {
                "id": f"e{i}",
                "elastic": {"workers": counts, "throughput": {"t4": thr}},
                "current_workers": now,
            }
        else:
            job = {"id": f"j{i}", "throughput": {"t4": 1.0}, "scale_factor": on}
        if rng.random() < 0.4:
            job["preemption_cost"] = float(rng.choice([0.5, 2.0, 3.0]))
        for k, g in take.items():
            servers[k]["jobs"][job["id"]] = g
            free[k] -= g
        jobs.append(job)
    if not jobs:
        jobs.append({"id": "idle", "throughput": {"t4": 1.0}})
    return {
        "kind": "gpu_cluster",
        "workers": {"t4": 4},
        "loanable": {"t4": 4 * S},
        "loaned_servers": servers,
        "jobs": jobs,
    }


@pytest.mark.parametrize("seed", range(15))
def test_reclaim_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(500 + seed)
    data = random_placement(rng)
    S = len(data["loaned_servers"])
    for servers in range(1, S + 1):
        for sigma in (0.0, 0.25):
            r = solve(data, "reclaim", servers=servers, shrink_cost=sigma)
            assert r.objective_value == pytest.approx(
                reclaim_oracle(data, servers, sigma), abs=1e-9
            )
            back = r.tables["loaned_servers"]["returned"]
            assert int(back.sum()) == servers


def test_reclaim_server_type_returns_only_that_type() -> None:
    data = {
        "kind": "gpu_cluster",
        "workers": {"v100": 4, "t4": 0},
        "loanable": {"v100": 8, "t4": 8},
        "loaned_servers": [
            {"id": "v-0", "worker_type": "v100", "gpus": 4, "jobs": {}},
            {"id": "t-0", "worker_type": "t4", "gpus": 4, "jobs": {"a": 4}},
            {"id": "t-1", "worker_type": "t4", "gpus": 4, "jobs": {"b": 2}},
        ],
        "jobs": [
            {"id": "a", "throughput": {"t4": 1.0}, "scale_factor": 4, "preemption_cost": 5.0},
            {"id": "b", "throughput": {"t4": 1.0}, "scale_factor": 2},
        ],
    }
    assert solve(data, "reclaim", servers=1).objective_value == 0.0  # the idle v100 server
    r = solve(data, "reclaim", servers=1, server_type="t4")
    assert r.objective_value == pytest.approx(1.0)
    assert r.objective_value == reclaim_oracle(data, 1, 0.0, "t4")
    t = r.tables["loaned_servers"].set_index("server")
    assert bool(t.loc["t-1", "returned"]) and not bool(t.loc["v-0", "returned"])
    jobs = r.tables["reclaim_jobs"].set_index("job")
    assert jobs.loc["b", "action"] == "preempt" and jobs.loc["a", "action"] == "keep"


def test_elastic_jobs_shrink_instead_of_stopping() -> None:
    data = json.loads((ELASTIC / "lyra_small.json").read_text())
    r = solve(data, "reclaim", servers=1)
    jobs = r.tables["reclaim_jobs"].set_index("job")
    shrunk = jobs[jobs["action"] == "shrink"]
    assert len(shrunk) >= 1
    assert (shrunk["workers_after"] < shrunk["workers_before"]).all()
    assert (shrunk["workers_after"] > 0).all()
    assert r.info["shrunk_jobs"] == len(shrunk)


# ------------------------------------------------------------------ shipped known answers
ANSWERS = json.loads((ELASTIC / "answers.json").read_text())


@pytest.mark.parametrize(
    ("name", "case"),
    [(n, c) for n, cases in ANSWERS.items() for c in cases],
    ids=lambda v: v if isinstance(v, str) else f"{v['objective']}{v.get('params', {})}",
)
def test_shipped_elastic_answers(name: str, case: dict[str, Any]) -> None:
    r = hetopt.solve(ELASTIC / name, case["objective"], EXACT, **case.get("params", {}))
    assert r.status == Status.OPTIMAL and r.verification.ok
    assert r.objective_value == pytest.approx(case["value"], rel=1e-9, abs=1e-12)
    data = json.loads((ELASTIC / name).read_text())
    if case["objective"] == "max_progress":
        assert r.objective_value == pytest.approx(brute_force(data), rel=1e-9)
    else:
        p = case.get("params", {})
        assert r.objective_value == pytest.approx(
            reclaim_oracle(
                data, p.get("servers", 1), p.get("shrink_cost", 0.0), p.get("server_type")
            )
        )


# ------------------------------------------------------------------ validation and refusals
BASE = {
    "kind": "gpu_cluster",
    "workers": {"v100": 4, "t4": 0},
    "loanable": {"t4": 4},
    "jobs": [
        {"id": "a", "elastic": {"workers": [1, 2], "throughput": {"v100": [1.0, 1.8]}}, "steps_remaining": 100},
        {"id": "b", "throughput": {"t4": 1.0}, "scale_factor": 2, "steps_remaining": 100},
    ],
}  # fmt: skip


def mutated(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    for path, value in changes.items():
        where: Any = data
        keys = path.split("__")
        for key in keys[:-1]:
            where = where[int(key)] if key.isdigit() else where[key]
        last = keys[-1]
        if value is DELETE:
            del where[int(last) if last.isdigit() else last]
        else:
            where[int(last) if last.isdigit() else last] = value
    return data


DELETE = object()


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"jobs__0__throughput": {"v100": 1.0}}, "jobs[0].throughput"),
        ({"jobs__0__scale_factor": 2}, "jobs[0].scale_factor"),
        ({"jobs__0__elastic__workers": [2, 1]}, "jobs[0].elastic.workers[1]"),
        ({"jobs__0__elastic__throughput__v100": [1.0]}, "jobs[0].elastic.throughput.v100"),
        ({"jobs__0__elastic__throughput": {"h100": [1.0, 2.0]}}, "jobs[0].elastic.throughput.h100"),
        ({"jobs__0__elastic__throughput__v100": [0.0, 0.0]}, "jobs[0]"),
        ({"jobs__1__throughput": DELETE}, "jobs[1].throughput"),
        ({"jobs__1__current_workers": 3}, "jobs[1].current_workers"),
        ({"jobs__0__current_workers": 3}, "jobs[0].current_workers"),
        ({"loanable": {"a100": 2}}, "loanable.a100"),
        ({"loanable": DELETE}, "jobs[1]"),  # b needs 2 t4 and the cluster owns none
    ],
)
def test_bad_elastic_fields_name_the_field(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(hetopt.InstanceError) as info:
        GpuClusterInstance.from_dict(mutated(**changes))
    assert info.value.field == field, info.value


def server(jobs: dict[str, int], **kw: Any) -> dict[str, Any]:
    return {
        "id": kw.get("id", "s0"),
        "worker_type": kw.get("worker_type", "t4"),
        "gpus": kw.get("gpus", 4),
        "jobs": jobs,
    }


@pytest.mark.parametrize(
    ("servers", "field"),
    [
        ([server({"b": 2}), server({}, id="s0")], "loaned_servers[1].id"),
        ([server({"b": 2}, worker_type="p100")], "loaned_servers[0].worker_type"),
        ([server({"b": 2}, gpus=8)], "loaned_servers[0].gpus"),  # loanable.t4 is 4
        ([server({"b": 2, "zz": 1})], "loaned_servers[0].jobs.zz"),
        ([server({"b": 2, "a": 3})], "loaned_servers[0].jobs"),  # 5 GPUs on a 4-GPU server
        ([server({"b": 3})], "loaned_servers[0].jobs.b"),  # more than scale_factor
        ([server({"a": 1})], "loaned_servers[0].jobs.a"),  # a cannot run on t4
        ([], "loaned_servers"),
    ],
)
def test_bad_loaned_servers_name_the_field(servers: list[dict[str, Any]], field: str) -> None:
    data = mutated(loaned_servers=servers)
    with pytest.raises(hetopt.InstanceError) as info:
        GpuClusterInstance.from_dict(data)
    assert info.value.field == field, info.value


def test_loaned_servers_need_loanable() -> None:
    data = mutated(loaned_servers=[server({})])
    data["workers"]["t4"] = 4
    del data["loanable"]
    with pytest.raises(hetopt.InstanceError) as info:
        GpuClusterInstance.from_dict(data)
    assert info.value.field == "loaned_servers"


TIME_SHARE = [
    "max_min_fairness",
    "makespan",
    "max_min_fairness_water_filling",
    "finish_time_fairness",
    "max_total_throughput",
    "min_cost",
]


@pytest.mark.parametrize("objective", TIME_SHARE)
def test_time_share_objectives_refuse_elastic_jobs_and_loanable(objective: str) -> None:
    with pytest.raises(hetopt.InstanceError) as info:
        hetopt.solve(mutated(), objective)
    assert info.value.field == "jobs[0].elastic"
    plain = mutated(jobs__0=BASE["jobs"][1] | {"id": "a", "throughput": {"v100": 1.0}})
    with pytest.raises(hetopt.InstanceError) as info:
        hetopt.solve(plain, objective)
    assert info.value.field == "loanable"
    with pytest.raises(hetopt.UsageError, match="servers"):
        hetopt.solve(ROOT / "instances/gpu_cluster/example.json", objective, servers=2)


def test_elastic_objectives_say_what_they_need() -> None:
    with pytest.raises(hetopt.InstanceError) as info:
        hetopt.solve(mutated(jobs__1__steps_remaining=DELETE), "max_progress")
    assert info.value.field == "jobs[1].steps_remaining"
    with pytest.raises(hetopt.InstanceError) as info:
        hetopt.solve(mutated(), "reclaim")
    assert info.value.field == "loaned_servers"
    with pytest.raises(hetopt.UsageError, match="agnostic"):
        hetopt.solve(mutated(), "max_progress", agnostic=True)
    with pytest.raises(hetopt.UsageError, match="servers"):
        hetopt.solve(mutated(), "max_progress", servers=1)
    with pytest.raises(hetopt.UsageError, match="servers must be <= 3"):
        hetopt.solve(ELASTIC / "lyra_small.json", "reclaim", servers=4)
    with pytest.raises(hetopt.UsageError, match="server_type"):
        hetopt.solve(ELASTIC / "lyra_small.json", "reclaim", server_type="v100")
    with pytest.raises(hetopt.UsageError, match="space sharing"):
        hetopt.solve(
            ROOT / "instances/gpu_cluster/policies/colocation_triangle.json", "max_progress"
        )


def run_cli(*args: str) -> tuple[int, str]:
    from click.testing import CliRunner

    res = CliRunner().invoke(cli_main, list(args))
    return res.exit_code, res.output


@pytest.mark.parametrize(
    ("data", "objective", "params", "code"),
    [
        (mutated(), "max_progress", [], 0),
        (mutated(jobs__1__steps_remaining=DELETE), "max_progress", [], 3),
        (mutated(), "max_min_fairness", [], 3),
        (mutated(), "reclaim", [], 3),
        (mutated(), "max_progress", ["-p", "agnostic=true"], 2),
        (mutated(), "max_progress", ["-p", "shrink_cost=1"], 2),
    ],
)
def test_validate_agrees_with_solve(
    tmp_path: Path, data: dict[str, Any], objective: str, params: list[str], code: int
) -> None:
    path = tmp_path / "inst.json"
    path.write_text(json.dumps(data))
    got, out = run_cli("validate", str(path), "-O", objective, *params)
    assert got == code, out
    solved, out = run_cli("solve", str(path), "-O", objective, *params)
    assert (solved == 0) == (code == 0), out
    if code:
        assert solved == code, out


def test_validate_reclaim_checks_servers(tmp_path: Path) -> None:
    path = ELASTIC / "lyra_small.json"
    assert run_cli("validate", str(path), "-O", "reclaim", "-p", "servers=3")[0] == 0
    assert run_cli("validate", str(path), "-O", "reclaim", "-p", "servers=4")[0] == 2
    assert run_cli("solve", str(path), "-O", "reclaim", "-p", "servers=4")[0] == 2


def test_persistent_policy_refuses_elastic_jobs() -> None:
    from hetopt.kinds.gpu_cluster import PersistentPolicy

    with pytest.raises(hetopt.InstanceError):
        PersistentPolicy(GpuClusterInstance.from_dict(mutated()), "max_min_fairness")


# ------------------------------------------------------------------ the verifier
def tampered(r: hetopt.Result, table: str, change: Any) -> hetopt.Result:
    from dataclasses import replace

    tables = dict(r.tables)
    df = tables[table].copy()
    out = change(df)
    tables[table] = df if out is None else out
    return replace(r, tables=tables)


def test_verifier_recomputes_max_progress_from_the_tables() -> None:
    path = ELASTIC / "lyra_small.json"
    r = hetopt.solve(path, "max_progress", EXACT)
    assert hetopt.verify(path, r).ok

    def overfill(df: pd.DataFrame) -> None:
        df.loc[:, "worker_type"] = "t4"
        df.loc[:, "workers"] = df["workers"].where(df["workers"] == 0, 4)

    def wrong_count(df: pd.DataFrame) -> None:
        k = int(np.nonzero(df["elastic"].to_numpy() & (df["workers"].to_numpy() > 0))[0][0])
        df.loc[k, "workers"] = 3

    def drop(df: pd.DataFrame) -> pd.DataFrame:
        return df.iloc[1:]

    for change in (overfill, wrong_count, drop):
        v = hetopt.verify(path, tampered(r, "elastic_allocation", change))
        assert not v.ok, change.__name__
    from dataclasses import replace

    assert not hetopt.verify(path, replace(r, objective_value=r.objective_value + 0.5)).ok


def test_verifier_recomputes_reclaim_from_the_tables() -> None:
    path = ELASTIC / "lyra_small.json"
    r = hetopt.solve(path, "reclaim", EXACT, servers=1)
    assert hetopt.verify(path, r).ok

    def swap(df: pd.DataFrame) -> None:
        df.loc[:, "returned"] = ~df["returned"].astype(bool)

    def all_back(df: pd.DataFrame) -> None:
        df.loc[:, "returned"] = True

    for change in (swap, all_back):
        assert not hetopt.verify(path, tampered(r, "loaned_servers", change)).ok, change.__name__

    def keep_everyone(df: pd.DataFrame) -> None:
        df.loc[:, "action"] = "keep"

    assert not hetopt.verify(path, tampered(r, "reclaim_jobs", keep_everyone)).ok
