"""Tests of the ``cpu_gpu`` kind (programs on CPU and GPU devices)."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import hetopt
from hetopt import InstanceError, SolveOptions, Status
from hetopt.cli import main
from hetopt.kinds.cpu_gpu import KIND, CpuGpuInstance, plot_gantt
from hetopt.kinds.cpu_gpu.generate import generate

EXACT = SolveOptions(mip_rel_gap=0.0, threads=1)
INSTANCES = Path(__file__).resolve().parents[3] / "instances" / "cpu_gpu"


def solve(inst: CpuGpuInstance, objective: str = "makespan") -> hetopt.Result:
    res = KIND.solve(inst, objective, EXACT)
    assert res.verification is None or res.verification.ok, res.verification
    return res


def devices(n_cpu: int, n_gpu: int) -> list[dict]:
    return [{"id": f"c{i}", "type": "cpu"} for i in range(n_cpu)] + [
        {"id": f"g{i}", "type": "gpu"} for i in range(n_gpu)
    ]


# ---------------------------------------------------------------- closed forms
@settings(max_examples=25, deadline=None)
@given(
    st.floats(0.1, 1000.0),
    st.floats(0.1, 1000.0),
    st.integers(1, 3),
    st.integers(1, 3),
)
def test_single_divisible_program_closed_form(tc: float, tg: float, k: int, g: int) -> None:
    # rates add: C* = 1 / (k / t_cpu + g / t_gpu); k = g = 1 gives t_cpu t_gpu / (t_cpu + t_gpu)
    data = {
        "kind": "cpu_gpu",
        "devices": devices(k, g),
        "programs": [{"id": "p", "duration_s": {"cpu": tc, "gpu": tg}, "divisible": True}],
    }
    res = solve(CpuGpuInstance.from_dict(data))
    assert res.status == Status.OPTIMAL
    assert res.objective_value == pytest.approx(1.0 / (k / tc + g / tg), rel=1e-6)
    thr = solve(CpuGpuInstance.from_dict(data), "throughput")
    assert thr.objective_value == pytest.approx(k / tc + g / tg, rel=1e-6)


def test_issue_example_closed_form() -> None:
    inst = hetopt.read_instance(INSTANCES / "single_divisible.json")
    res = solve(inst)
    assert res.objective_value == pytest.approx(8.0 * 2.0 / (8.0 + 2.0))
    sched = res.tables["schedule"]
    assert sched["fraction"].sum() == pytest.approx(1.0)
    assert set(sched["device"]) == {"cpu0", "gpu0"}


# ---------------------------------------------------------------- brute force, no slowdown
def brute_independent(data: dict) -> float:
    """Enumerate device choices of the indivisible programs; divisible ones by scipy LP."""
    devs = data["devices"]
    progs = data["programs"]
    D = len(devs)
    t = np.array(
        [[p["duration_s"].get(d["type"], np.inf) for d in devs] for p in progs], dtype=float
    )
    whole = [i for i, p in enumerate(progs) if not p.get("divisible", False)]
    div = [i for i, p in enumerate(progs) if p.get("divisible", False)]
    best = np.inf
    for choice in itertools.product(range(D), repeat=len(whole)):
        base = np.zeros(D)
        ok = True
        for i, d in zip(whole, choice, strict=True):
            if not np.isfinite(t[i, d]):
                ok = False
                break
            base[d] += t[i, d]
        if not ok:
            continue
        if not div:
            best = min(best, base.max())
            continue
        # variables: x[i, d] for divisible i (finite), then C; minimise C
        pairs = [(i, d) for i in div for d in range(D) if np.isfinite(t[i, d])]
        nv = len(pairs) + 1
        c = np.zeros(nv)
        c[-1] = 1
        A_ub = np.zeros((D, nv))
        for k, (i, d) in enumerate(pairs):
            A_ub[d, k] = t[i, d]
        A_ub[:, -1] = -1
        A_eq = np.zeros((len(div), nv))
        for k, (i, _) in enumerate(pairs):
            A_eq[div.index(i), k] = 1
        r = linprog(
            c, A_ub, -base, A_eq, np.ones(len(div)), bounds=[(0, 1)] * len(pairs) + [(0, None)]
        )
        assert r.status == 0
        best = min(best, r.fun)
    return float(best)


def random_programs(rng: np.random.Generator, n: int, p_div: float) -> list[dict]:
    out = []
    for i in range(n):
        dur = {
            "cpu": round(float(rng.uniform(1, 20)), 2),
            "gpu": round(float(rng.uniform(1, 20)), 2),
        }
        if rng.uniform() < 0.15:
            del dur[str(rng.choice(["cpu", "gpu"]))]
        out.append({"id": f"p{i}", "duration_s": dur, "divisible": bool(rng.uniform() < p_div)})
    return out


@pytest.mark.parametrize("seed", range(10))
def test_independent_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    nc, ng = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    data = {
        "kind": "cpu_gpu",
        "devices": devices(nc, ng),
        "programs": random_programs(rng, int(rng.integers(1, 6)), 0.3),
    }
    res = solve(CpuGpuInstance.from_dict(data))
    assert res.status == Status.OPTIMAL
    assert res.objective_value == pytest.approx(brute_independent(data), rel=1e-6)
    assert set(res.tables["schedule"]["program"]) == {p["id"] for p in data["programs"]}


# ---------------------------------------------------------------- brute force, pairing
def lane_time(cpu_progs: list[int], gpu_progs: list[int], tc, tg, fc, fg) -> float:
    """Shortest slot sequence of one lane: best partial matching of CPU and GPU programs."""
    if not cpu_progs:
        return float(sum(tg[q] for q in gpu_progs))
    p, rest = cpu_progs[0], cpu_progs[1:]
    best = tc[p] + lane_time(rest, gpu_progs, tc, tg, fc, fg)
    for q in gpu_progs:
        slot = max(fc[p][q] * tc[p], fg[p][q] * tg[q])
        others = [x for x in gpu_progs if x != q]
        best = min(best, slot + lane_time(rest, others, tc, tg, fc, fg))
    return best


def brute_pairing(data: dict) -> float:
    devs = data["devices"]
    progs = data["programs"]
    n = len(progs)
    pid = {p["id"]: i for i, p in enumerate(progs)}
    tc = [p["duration_s"].get("cpu", np.inf) for p in progs]
    tg = [p["duration_s"].get("gpu", np.inf) for p in progs]
    fc = [[1.0] * n for _ in range(n)]
    fg = [[1.0] * n for _ in range(n)]
    for s in data.get("slowdown", []):
        fc[pid[s["cpu_program"]]][pid[s["gpu_program"]]] = s["factor"][0]
        fg[pid[s["cpu_program"]]][pid[s["gpu_program"]]] = s["factor"][1]
    cpus = [k for k, d in enumerate(devs) if d["type"] == "cpu"]
    gpus = [k for k, d in enumerate(devs) if d["type"] == "gpu"]
    L = min(len(cpus), len(gpus))
    best = np.inf
    for choice in itertools.product(range(len(devs)), repeat=n):
        times = []
        ok = True
        for i, d in enumerate(choice):
            if not np.isfinite(tc[i] if devs[d]["type"] == "cpu" else tg[i]):
                ok = False
        if not ok:
            continue
        for lane in range(L):
            cp = [i for i in range(n) if choice[i] == cpus[lane]]
            gp = [i for i in range(n) if choice[i] == gpus[lane]]
            times.append(lane_time(cp, gp, tc, tg, fc, fg))
        for d in cpus[L:] + gpus[L:]:
            times.append(
                sum(
                    (tc[i] if devs[d]["type"] == "cpu" else tg[i])
                    for i in range(n)
                    if choice[i] == d
                )
            )
        best = min(best, max(times))
    return float(best)


@pytest.mark.parametrize("seed", range(10))
def test_pairing_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(50 + seed)
    nc, ng = [(1, 1), (1, 1), (2, 1), (1, 2), (2, 2)][seed % 5]
    n = int(rng.integers(2, 6 if nc + ng == 2 else 5))
    progs = random_programs(rng, n, 0.0)
    pairs = [
        (a["id"], b["id"])
        for a in progs
        for b in progs
        if a is not b and "cpu" in a["duration_s"] and "gpu" in b["duration_s"]
    ]
    rng.shuffle(pairs)
    slow = [
        {
            "cpu_program": a,
            "gpu_program": b,
            "factor": [float(x) for x in np.round(rng.uniform(1, 2, 2), 2)],
        }
        for a, b in pairs[: max(1, len(pairs) // 2)]
    ]
    # the draw must be usable (a co-runnable pair): a generator change fails here instead
    # of silently skipping
    assert slow, f"seed {seed}: no co-runnable pair drawn (pick other seeds)"
    data = {"kind": "cpu_gpu", "devices": devices(nc, ng), "programs": progs, "slowdown": slow}
    res = solve(CpuGpuInstance.from_dict(data))
    assert res.status == Status.OPTIMAL
    assert res.info["model"] == "pairing"
    assert res.objective_value == pytest.approx(brute_pairing(data), rel=1e-6)


def test_pairing_example_known_answer() -> None:
    inst = hetopt.read_instance(INSTANCES / "pairing.json")
    answers = json.loads((INSTANCES / "answers.json").read_text())
    res = solve(inst)
    assert res.objective_value == pytest.approx(answers["pairing.json"]["makespan_s"])
    sched = res.tables["schedule"].set_index("program")
    assert sched.loc["p2", "co_runner"] == "p3"


# ---------------------------------------------------------------- verifier
def test_verifier_catches_tampering() -> None:
    inst = generate(8, 2, 1, seed=4, divisible_fraction=0.5)
    res = solve(inst)
    sched = res.tables["schedule"]
    bad = [
        sched.iloc[1:],  # a program missing
        sched.assign(end_s=sched["end_s"] * 0.5),  # too short
        sched.assign(start_s=0.0, end_s=sched["end_s"] - sched["start_s"]),  # overlaps
    ]
    for table in bad:
        assert not KIND.verify(inst, replace(res, tables={"schedule": table})).ok
    assert not KIND.verify(inst, replace(res, objective_value=res.objective_value * 0.9)).ok


def test_verifier_rejects_unaccounted_corun() -> None:
    inst = hetopt.read_instance(INSTANCES / "pairing.json")
    res = solve(inst)
    sched = res.tables["schedule"].copy()
    # drop the co-runner declaration but keep the timing: interference unaccounted
    sched["co_runner"] = ""
    v = KIND.verify(inst, replace(res, tables={"schedule": sched}))
    assert not v.ok


# ---------------------------------------------------------------- generator, CLI, plot
def test_generator_is_seeded() -> None:
    a = generate(12, 2, 1, seed=3, slowdown_pairs=5)
    assert a.to_dict() == generate(12, 2, 1, seed=3, slowdown_pairs=5).to_dict()
    assert a.to_dict() != generate(12, 2, 1, seed=4, slowdown_pairs=5).to_dict()
    assert len(a.slowdown) == 5
    assert all(1.0 <= f <= 1.5 for s in a.slowdown for f in s.factor)
    for p in a.programs:
        assert 1.0 <= p.duration_s["cpu"] <= 100.0


def test_cli_generate_solve(tmp_path: Path) -> None:
    out = tmp_path / "cg.json"
    r = CliRunner().invoke(
        main, ["generate", "cpu-gpu", "--programs", "6", "--seed", "2", "-o", str(out)]
    )
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["solve", str(out), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["status"] == "optimal"


def test_plot_gantt_returns_ax() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = solve(hetopt.read_instance(INSTANCES / "pairing.json"))
    fig, ax = plt.subplots()
    assert plot_gantt(res, ax=ax) is ax
    assert len(ax.patches) == len(res.tables["schedule"])
    plt.close(fig)
    ax2 = plot_gantt(res)
    assert ax2 is not None
    plt.close("all")


GOOD = {
    "kind": "cpu_gpu",
    "devices": [{"id": "cpu0", "type": "cpu"}, {"id": "gpu0", "type": "gpu"}],
    "programs": [
        {"id": "p1", "duration_s": {"cpu": 8.0, "gpu": 2.0}},
        {"id": "p2", "duration_s": {"cpu": 4.0, "gpu": 3.0}},
    ],
    "slowdown": [{"cpu_program": "p1", "gpu_program": "p2", "factor": [1.2, 1.1]}],
}


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        (lambda d: d["devices"].append(dict(d["devices"][0])), "devices[2].id"),
        (lambda d: d["devices"][0].update(type="tpu"), "devices[0].type"),
        (lambda d: d["programs"][0].update(duration_s={"cpu": -1.0}), "programs[0].duration_s.cpu"),
        (lambda d: d["programs"][1].update(id="p1"), "programs[1].id"),
        (lambda d: d["slowdown"][0].update(gpu_program="zz"), "slowdown[0].gpu_program"),
        (lambda d: d["slowdown"][0].update(factor=[1.0]), "slowdown[0].factor"),
        (
            lambda d: (
                d.update(devices=[{"id": "cpu0", "type": "cpu"}])
                or d["programs"][0].update(duration_s={"gpu": 1.0})
            ),
            "programs[0].duration_s",
        ),
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


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_pairing_many_random_against_brute_force(seed: int) -> None:
    rng = np.random.default_rng(500 + seed)
    progs = random_programs(rng, int(rng.integers(4, 7)), 0.0)
    slow = [
        {"cpu_program": a["id"], "gpu_program": b["id"], "factor": [1.3, 1.2]}
        for a in progs
        for b in progs
        if a is not b
        and "cpu" in a["duration_s"]
        and "gpu" in b["duration_s"]
        and rng.uniform() < 0.5
    ]
    # the draw must be usable (a slowdown pair): a generator change fails here instead of
    # silently skipping
    assert slow, f"seed {seed}: no slowdown pair drawn (pick other seeds)"
    data = {"kind": "cpu_gpu", "devices": devices(1, 1), "programs": progs, "slowdown": slow}
    res = solve(CpuGpuInstance.from_dict(data))
    assert res.objective_value == pytest.approx(brute_pairing(data), rel=1e-6)


def test_pairing_runs_divisible_programs_whole() -> None:
    inst = generate(8, 1, 1, seed=9, divisible_fraction=0.6, slowdown_pairs=10)
    assert any(p.divisible for p in inst.programs)
    res = solve(inst)
    assert res.status == Status.OPTIMAL and res.verification.ok
    assert res.info["divisible_ignored"] == sum(p.divisible for p in inst.programs)
    sched = res.tables["schedule"]
    assert (sched["fraction"] == 1.0).all()
    assert sorted(sched["program"]) == sorted(p.id for p in inst.programs)
