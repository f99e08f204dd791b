"""Tests of the ``multi_resource`` kind (Synergy-style GPU/CPU/memory allocation)."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import hetopt
from hetopt import InstanceError, SolveOptions, Status
from hetopt.cli import main
from hetopt.kinds.multi_resource import KIND, MultiResourceInstance
from hetopt.kinds.multi_resource.generate import generate
from hetopt.kinds.multi_resource.synergy import profiles, tput_matrix

EXACT = SolveOptions(mip_rel_gap=0.0, threads=1)
INSTANCES = Path(__file__).resolve().parents[3] / "instances" / "multi_resource"


def solve(inst: MultiResourceInstance, **params) -> hetopt.Result:
    return KIND.solve(inst, "max_total_throughput", EXACT, **params)


# ---------------------------------------------------------------- brute force (independent)
def fair_share(job: dict, cpg: float, mpg: float) -> float:
    ok = [
        p["throughput"]
        for p in job["profile"]
        if p["cpus_per_gpu"] <= cpg + 1e-9 and p["mem_gb_per_gpu"] <= mpg + 1e-9
    ]
    return max(ok, default=0.0)


def splits(g: int, caps: list[int]) -> list[tuple[int, ...]]:
    """Every way to put ``g`` GPUs on servers with ``caps`` GPUs (whole GPUs)."""
    return [v for v in itertools.product(*(range(c + 1) for c in caps)) if sum(v) == g]


def brute_force(data: dict) -> float | None:
    """Best total throughput by enumerating every profile and placement of every job.

    A job with more GPUs than the largest server is enumerated over every split of its GPUs
    (CPUs and memory proportional to the GPUs on each server); other jobs over every single
    server. ``None`` when nothing is feasible.
    """
    servers, jobs = data["servers"], data["jobs"]
    G = sum(s["gpus"] for s in servers)
    cpg = sum(s["cpus"] for s in servers) / G
    mpg = sum(s["mem_gb"] for s in servers) / G
    caps_g = [s["gpus"] for s in servers]
    biggest = max(caps_g)
    S = len(servers)
    floors = [fair_share(j, cpg, mpg) for j in jobs]
    options = []
    for j, fl in zip(jobs, floors, strict=True):
        if j["gpus"] <= biggest:
            places = [tuple(j["gpus"] if t == s else 0 for t in range(S)) for s in range(S)]
        else:
            places = splits(j["gpus"], caps_g)
        options.append([(p, v) for p in j["profile"] if p["throughput"] >= fl for v in places])
    cap = np.array([[s["gpus"], s["cpus"], s["mem_gb"]] for s in servers])
    best = None
    for combo in itertools.product(*options):
        used = np.zeros((S, 3))
        for p, v in combo:
            n = np.array(v, dtype=float)
            used += np.stack([n, n * p["cpus_per_gpu"], n * p["mem_gb_per_gpu"]], axis=1)
        if (used <= cap + 1e-9).all():
            val = sum(p["throughput"] for p, _ in combo)
            best = val if best is None else max(best, val)
    return best


def random_data(rng: np.random.Generator, n_jobs: int, n_servers: int) -> dict:
    jobs = []
    for i in range(n_jobs):
        g = int(rng.choice([1, 1, 2, 4]))
        k = int(rng.integers(1, 5))
        prof = [
            {
                "cpus_per_gpu": float(rng.choice([1, 2, 3, 4, 6])),
                "mem_gb_per_gpu": float(rng.choice([20.0, 62.5, 125.0])),
                "throughput": round(float(rng.uniform(0.2, 2.0)), 2),
            }
            for _ in range(k)
        ]
        jobs.append({"id": f"j{i}", "gpus": g, "profile": prof})
    need = sum(j["gpus"] for j in jobs)
    servers = []
    for s in range(n_servers):
        gs = int(max(4, math.ceil(need / n_servers) + int(rng.integers(0, 3))))
        servers.append(
            {
                "id": f"s{s}",
                "gpus": gs,
                "cpus": float(rng.integers(2 * gs, 5 * gs + 1)),
                "mem_gb": float(rng.choice([62.5, 100.0, 125.0]) * gs),
            }
        )
    return {"kind": "multi_resource", "servers": servers, "jobs": jobs}


def check_against(data: dict, expected: float | None) -> None:
    inst = MultiResourceInstance.from_dict(data)
    res = solve(inst, fragmentation=False)
    if expected is None:
        assert res.status == Status.INFEASIBLE
        return
    assert res.status == Status.OPTIMAL, res.termination
    assert res.verification is not None and res.verification.ok, res.verification
    assert res.objective_value == pytest.approx(expected, rel=1e-7, abs=1e-7)
    cb = res.info["config_only_bound"]
    assert cb >= res.objective_value - 1e-6


@pytest.mark.parametrize("seed", range(12))
def test_single_server_matches_brute_force(seed: int) -> None:
    # one server holding all jobs: a multiple-choice knapsack with two resources and floors
    rng = np.random.default_rng(seed)
    data = random_data(rng, int(rng.integers(2, 9)), 1)
    check_against(data, brute_force(data))


@pytest.mark.parametrize("seed", range(8))
def test_small_clusters_match_brute_force(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    data = random_data(rng, int(rng.integers(2, 5)), int(rng.integers(2, 4)))
    check_against(data, brute_force(data))


@pytest.mark.parametrize("seed", range(6))
def test_split_jobs_match_brute_force(seed: int) -> None:
    # a job larger than every server, split in whole GPUs with proportional CPUs and memory
    rng = np.random.default_rng(300 + seed)
    data = random_data(rng, int(rng.integers(1, 3)), 1)
    S = int(rng.integers(2, 4))
    data["servers"] = [
        {
            "id": f"s{s}",
            "gpus": 4,
            "cpus": float(rng.integers(8, 17)),
            "mem_gb": float(rng.choice([250.0, 400.0, 500.0])),
        }
        for s in range(S)
    ]
    for j in data["jobs"]:
        j["gpus"] = 1
    big = random_data(rng, 1, 1)["jobs"][0]
    big.update(id="big", gpus=int(rng.integers(5, 4 * S - 1)))
    data["jobs"].append(big)
    inst = MultiResourceInstance.from_dict(data)
    assert inst.arrays.is_split().any()
    check_against(data, brute_force(data))


def test_interchangeable_jobs_are_aggregated_correctly() -> None:
    # 5 copies of one job: the class-count model must equal the brute force
    rng = np.random.default_rng(7)
    one = random_data(rng, 1, 1)["jobs"][0]
    one["gpus"] = 1
    jobs = [{**one, "id": f"c{i}"} for i in range(5)]
    data = {
        "kind": "multi_resource",
        "servers": [
            {"id": "a", "gpus": 4, "cpus": 10, "mem_gb": 250},
            {"id": "b", "gpus": 4, "cpus": 8, "mem_gb": 250},
        ],
        "jobs": jobs,
    }
    check_against(data, brute_force(data))


# ---------------------------------------------------------------- known small answers
def test_example_instance_known_answer() -> None:
    inst = hetopt.read_instance(INSTANCES / "split_job.json")
    res = solve(inst)
    answers = json.loads((INSTANCES / "answers.json").read_text())["split_job.json"]
    assert res.status == Status.OPTIMAL
    assert res.objective_value == pytest.approx(answers["objective_value"])
    assert res.info["servers_used"] == answers["servers_used"]
    alloc = res.tables["placement"]
    big = alloc[alloc["job"] == "big"]
    assert big["gpus"].sum() == 12 and len(big) >= 2  # split over several servers
    assert set(alloc["job"]) == {j.id for j in inst.jobs}


def test_fair_share_floor_is_enforced() -> None:
    # 3.0 (j1 at 5 CPUs) + 0.5 (j2 at 1 CPU) = 3.5 fits in 6 CPUs but puts j2 below its fair
    # share (1.0 at 3 CPUs); with the floor, both jobs take 3 CPUs: 2.0.
    data = {
        "kind": "multi_resource",
        "servers": [{"id": "s", "gpus": 2, "cpus": 6, "mem_gb": 100}],
        "jobs": [
            {
                "id": "j1",
                "gpus": 1,
                "profile": [
                    {"cpus_per_gpu": 3, "mem_gb_per_gpu": 50, "throughput": 1.0},
                    {"cpus_per_gpu": 5, "mem_gb_per_gpu": 50, "throughput": 3.0},
                ],
            },
            {
                "id": "j2",
                "gpus": 1,
                "profile": [
                    {"cpus_per_gpu": 1, "mem_gb_per_gpu": 50, "throughput": 0.5},
                    {"cpus_per_gpu": 3, "mem_gb_per_gpu": 50, "throughput": 1.0},
                ],
            },
        ],
    }
    res = solve(MultiResourceInstance.from_dict(data))
    assert res.objective_value == pytest.approx(2.0)  # 3.0 + 0.5 would break j2's floor
    alloc = res.tables["placement"].set_index("job")
    assert alloc.loc["j2", "throughput"] >= alloc.loc["j2", "fair_share_throughput"]
    assert brute_force(data) == pytest.approx(2.0)


def test_fragmentation_packs_onto_fewest_servers() -> None:
    prof = [{"cpus_per_gpu": 3, "mem_gb_per_gpu": 62.5, "throughput": 1.0}]
    data = {
        "kind": "multi_resource",
        "servers": [{"id": f"s{i}", "gpus": 8, "cpus": 24, "mem_gb": 500} for i in range(4)],
        "jobs": [
            {"id": f"j{i}", "gpus": g, "profile": prof} for i, g in enumerate([2, 2, 4, 4, 4])
        ],
    }
    res = solve(MultiResourceInstance.from_dict(data))
    assert res.objective_value == pytest.approx(5.0)
    assert res.info["fragmentation_status"] == "optimal"
    assert res.info["servers_used"] == 2  # 16 GPUs on two 8-GPU servers
    assert res.tables["servers"]["gpus_used"].tolist().count(0) == 2


def test_infeasible_is_a_status() -> None:
    prof = [{"cpus_per_gpu": 3, "mem_gb_per_gpu": 62.5, "throughput": 1.0}]
    data = {
        "kind": "multi_resource",
        "servers": [{"id": "s0", "gpus": 4, "cpus": 12, "mem_gb": 250}],
        "jobs": [{"id": f"j{i}", "gpus": 2, "profile": prof} for i in range(3)],
    }
    res = solve(MultiResourceInstance.from_dict(data))
    assert res.status == Status.INFEASIBLE
    assert res.objective_value is None


# ---------------------------------------------------------------- verifier
def test_verifier_catches_tampering() -> None:
    inst = generate(20, 3, seed=3)
    res = solve(inst)
    assert res.verification is not None and res.verification.ok
    alloc = res.tables["placement"]
    dropped = alloc.iloc[1:]
    assert not KIND.verify(inst, replace(res, tables={**res.tables, "placement": dropped})).ok
    more = alloc.copy()
    more.loc[:, "server"] = alloc["server"].iloc[0]  # everything on one server
    assert not KIND.verify(inst, replace(res, tables={**res.tables, "placement": more})).ok
    cheat = alloc.copy()
    cheat.loc[cheat.index[0], "cpus"] = 0.0
    assert not KIND.verify(inst, replace(res, tables={**res.tables, "placement": cheat})).ok
    wrong = replace(res, objective_value=res.objective_value + 1)
    assert not KIND.verify(inst, wrong).ok


# ---------------------------------------------------------------- Synergy data + generator
def test_synergy_data_shape_and_fair_share_invariant() -> None:
    df = tput_matrix()
    assert df.groupby(["profile_set", "model", "gpus"]).ngroups == 69
    # Synergy normalises throughput to the GPU-proportional share: 3 CPUs, 62.5 GB per GPU
    at_fair = df[(df["cpu_per_gpu"] == 3) & (df["mem_gb_per_gpu"] == 62.5) & (df["gpus"] == 1)]
    assert len(at_fair) == 4 * 12
    assert (at_fair["norm_tput"] == 1.0).all()
    table = profiles("models")
    for (_, g), prof in table.items():
        assert all(p["throughput"] > 0 for p in prof)
        if g == 1:
            fair = fair_share({"profile": prof}, 3.0, 62.5)
            assert fair == 1.0


def test_generator_is_seeded_and_feasible() -> None:
    a, b = generate(25, 4, seed=5), generate(25, 4, seed=5)
    assert a.to_dict() == b.to_dict()
    assert a.to_dict() != generate(25, 4, seed=6).to_dict()
    assert sum(j.gpus for j in a.jobs) <= 32
    table = profiles("models")
    for j in a.jobs:
        model = j.id.split("-", 1)[1]
        assert [p.model_dump() for p in j.profile] == table[(model, j.gpus)]
    res = solve(a)
    assert res.status == Status.OPTIMAL and res.verification.ok
    assert (res.tables["placement"]["throughput"] >= 1.0 - 1e-12).all()
    assert set(res.tables["placement"]["job"]) == {j.id for j in a.jobs}


def test_generator_split_jobs_are_placed() -> None:
    # a 12-GPU job on 8-GPU servers is split with CPU/memory proportional to its GPUs
    drawn = (generate(6, 3, seed=seed) for seed in range(200))
    inst = next((i for i in drawn if any(j.gpus > 8 for j in i.jobs)), None)
    # the draw must be usable: a generator change that never draws a 12-GPU job fails here
    assert inst is not None, "no 12-GPU job drawn in 200 seeds"
    res = solve(inst)
    assert res.status == Status.OPTIMAL and res.verification.ok
    assert res.info["split_jobs"] >= 1


def test_cli_generate_and_solve(tmp_path: Path) -> None:
    out = tmp_path / "mr.json"
    r = CliRunner().invoke(
        main,
        [
            "generate",
            "multi-resource",
            "--jobs",
            "10",
            "--servers",
            "2",
            "--seed",
            "1",
            "-o",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["solve", str(out), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["status"] == "optimal"


def test_cli_generate_too_many_jobs_is_one_line() -> None:
    r = CliRunner().invoke(main, ["generate", "multi-resource", "--jobs", "20", "--servers", "1"])
    assert r.exit_code == 3
    assert "Traceback" not in r.output


# ---------------------------------------------------------------- validation
GOOD = {
    "kind": "multi_resource",
    "servers": [{"id": "s0", "gpus": 8, "cpus": 24, "mem_gb": 500}],
    "jobs": [
        {
            "id": "j1",
            "gpus": 1,
            "profile": [{"cpus_per_gpu": 3, "mem_gb_per_gpu": 62.5, "throughput": 1.0}],
        }
    ],
}


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        (lambda d: d["servers"].append(dict(d["servers"][0])), "servers[1].id"),
        (lambda d: d["jobs"].append(dict(d["jobs"][0])), "jobs[1].id"),
        (lambda d: d["jobs"][0].update(gpus=9), "jobs[0].gpus"),
        (
            lambda d: d["jobs"][0]["profile"][0].update(throughput=0),
            "jobs[0].profile[0].throughput",
        ),
        (lambda d: d["jobs"][0].update(profile=[]), "jobs[0].profile"),
        (lambda d: d["servers"][0].update(gpus=0), "servers[0].gpus"),
        (lambda d: d["jobs"][0].update(color="red"), "jobs[0].color"),
    ],
)
def test_bad_input_names_the_field(patch, field: str, tmp_path: Path) -> None:
    data = json.loads(json.dumps(GOOD))
    patch(data)
    with pytest.raises(InstanceError) as exc:
        hetopt.instance_from_dict(data)
    assert field in str(exc.value)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(data))
    r = CliRunner().invoke(main, ["solve", str(p)])
    assert r.exit_code == 3
    assert len(r.output.strip().splitlines()) == 1


def test_build_names_and_export() -> None:
    m = KIND.build(MultiResourceInstance.from_dict(GOOD), "max_total_throughput")
    assert hasattr(m, "c_cpu") and hasattr(m, "c_mem") and hasattr(m, "c_gpu")


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(30))
def test_many_random_against_brute_force(seed: int) -> None:
    rng = np.random.default_rng(1000 + seed)
    data = random_data(rng, int(rng.integers(5, 9)), 1)
    check_against(data, brute_force(data))


def test_time_limit_is_honest() -> None:
    inst = generate(100, 16, seed=0)
    res = KIND.solve(inst, "max_total_throughput", SolveOptions(time_limit_s=0.2, threads=1))
    assert res.status in (Status.FEASIBLE, Status.NO_SOLUTION, Status.OPTIMAL)
    if res.status == Status.FEASIBLE:
        assert res.bound is not None and res.bound >= res.objective_value - 1e-9
        assert res.gap is not None
        assert res.info["fragmentation_status"].startswith("skipped")
        assert res.verification.ok
    if res.status == Status.NO_SOLUTION:
        assert res.objective_value is None


def test_job_that_fits_nowhere_is_infeasible() -> None:
    data = {
        "kind": "multi_resource",
        "servers": [{"id": "s0", "gpus": 8, "cpus": 24, "mem_gb": 500}],
        "jobs": [
            {
                "id": "j1",
                "gpus": 4,
                "profile": [{"cpus_per_gpu": 12, "mem_gb_per_gpu": 62.5, "throughput": 1.0}],
            }
        ],
    }
    assert solve(MultiResourceInstance.from_dict(data)).status == Status.INFEASIBLE


def test_bad_param_is_a_usage_error() -> None:
    with pytest.raises(hetopt.UsageError):
        solve(MultiResourceInstance.from_dict(GOOD), fragmentation="yes")


def test_symmetry_breaking_does_not_change_the_optimum() -> None:
    inst = generate(24, 4, seed=11)
    a, b = solve(inst, symmetry=True), solve(inst, symmetry=False)
    assert a.objective_value == pytest.approx(b.objective_value, abs=1e-9)
    assert a.info["servers_used"] == b.info["servers_used"]


@pytest.mark.parametrize("seed", range(4))
def test_greedy_start_is_feasible_for_the_model(seed: int) -> None:
    from hetopt.highs import compile_model
    from hetopt.kinds.multi_resource import formulations as F
    from hetopt.kinds.multi_resource import heuristic as H

    inst = generate(20 + 8 * seed, 4 + seed, seed=seed)
    arr = inst.arrays
    _, preferred = KIND._config_bound(inst, EXACT)
    packing = H.greedy_packing(arr, preferred)
    assert packing is not None
    assert sorted(j for j, _, _ in packing) == list(range(arr.num_jobs))
    m = F.build_max_total_throughput(arr)
    cm = compile_model(m)
    x = H.start_vector(arr, m, cm, packing)
    assert x is not None
    ax = cm.A @ x
    assert (ax >= cm.row_lower - 1e-7).all() and (ax <= cm.row_upper + 1e-7).all()
    assert (x >= cm.col_lower - 1e-9).all() and (x <= cm.col_upper + 1e-9).all()
    assert np.allclose(x[cm.integrality == 1], np.round(x[cm.integrality == 1]))
    res = solve(inst)
    assert res.objective_value >= x[cm.column(m.total_throughput)] - 1e-9


def test_warm_start_does_not_change_the_optimum() -> None:
    inst = generate(30, 4, seed=21)
    a, b = solve(inst, warm_start=True), solve(inst, warm_start=False)
    assert a.objective_value == pytest.approx(b.objective_value, abs=1e-9)
