"""Known answers of the ``agent_sessions`` kind (issue 15).

* one GPU, equal context sizes: LP = MILP = Bélády's greedy (the memory rows are an
  interval matrix, totally unimodular); seeded random instances, capacities that are not
  multiples of the size;
* unequal sizes: brute force on <= 12 pauses; two or three GPUs: brute force over
  affinities (oracles in ``test_agent_sessions_oracles.py``), for every objective;
* shipped instances and their closed forms (``instances/agent_sessions/README.md``);
* exported LP/MPS objective = reported objective; the verifier rejects broken tables;
  statuses stay honest at a time limit; the decomposition's bound is valid.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import highspy
import numpy as np
import pandas as pd
import pyomo.environ as pyo
import pytest
from test_agent_sessions_oracles import belady_kept, brute_force, random_instance

import hetopt
from hetopt import SolveOptions, Status
from hetopt.highs import HighsModel, compile_model
from hetopt.kinds.agent_sessions import KIND, AgentSessionsInstance
from hetopt.kinds.agent_sessions.generate import generate

ROOT = Path(__file__).resolve().parents[3]
DIR = ROOT / "instances" / "agent_sessions"
ANSWERS = json.loads((DIR / "answers.json").read_text())
OBJECTIVES = ("min_recompute_s", "min_max_load", "agent_fair_share")
TOL = 1e-6


def solve(data: dict, objective: str, **params) -> hetopt.Result:
    inst = AgentSessionsInstance.from_dict(data)
    r = KIND.solve(inst, objective, SolveOptions(threads=1, time_limit_s=60), **params)
    assert r.verification is not None and r.verification.ok, r.verification
    return r


def lp_relaxation(inst: AgentSessionsInstance, **params) -> tuple[float, np.ndarray]:
    """The LP relaxation of the built model: objective and the keep values."""
    m = KIND.build(inst, "min_recompute_s", **params)
    pyo.TransformationFactory("core.relax_integer_vars").apply_to(m)
    cm = compile_model(m)
    raw = HighsModel(cm).solve(SolveOptions(threads=1, lp_method="simplex"))
    assert raw.status == Status.OPTIMAL
    return float(raw.objective), raw.values(cm, m.keep)


# --- one GPU, equal sizes: totally unimodular -------------------------------------------
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("rows", ["sweep", "clique"])
def test_one_gpu_equal_sizes_lp_equals_milp_equals_greedy(seed: int, rows: str) -> None:
    size = 1000
    data = random_instance(seed, sessions=8, pauses=4, equal=size, work=False)
    # a capacity that is not a multiple of the size: the gcd rounding keeps the LP integral
    k = 1 + seed % 3
    data["gpus"][0]["kv_capacity_tokens"] = k * size + 1 + 37 * seed
    rate = data["gpus"][0]["prefill_tokens_s"]
    pauses = [(p["start_s"], p["end_s"]) for s in data["sessions"] for p in s["pauses"]]
    greedy = (len(pauses) - belady_kept(pauses, k)) * size / rate
    milp = solve(data, "min_recompute_s", capacity_rows=rows)
    assert milp.status == Status.OPTIMAL
    lp, keep = lp_relaxation(AgentSessionsInstance.from_dict(data), capacity_rows=rows)
    assert milp.objective_value == pytest.approx(greedy, abs=TOL)
    assert lp == pytest.approx(greedy, abs=TOL)
    assert np.all(np.minimum(np.abs(keep), np.abs(keep - 1)) < 1e-6), "LP vertex not integral"
    assert greedy > 0  # the instances are not trivial


def test_unequal_sizes_lp_can_be_fractional() -> None:
    """Control for the test above: without equal sizes the LP is not integral in general
    (two 3000-token contexts and a 4000-token one over an 8000-token GPU: the LP keeps
    8000 tokens, an integral plan at most 7000)."""
    data = {
        "kind": "agent_sessions",
        "gpus": [{"id": "g", "kv_capacity_tokens": 8000, "prefill_tokens_s": 1000.0}],
        "sessions": [
            {"id": "a", "pauses": [{"start_s": 0.0, "end_s": 4.0, "context_tokens": 3000}]},
            {"id": "b", "pauses": [{"start_s": 1.0, "end_s": 5.0, "context_tokens": 3000}]},
            {"id": "c", "pauses": [{"start_s": 2.0, "end_s": 6.0, "context_tokens": 4000}]},
        ],
    }
    lp, _ = lp_relaxation(AgentSessionsInstance.from_dict(data))
    milp = solve(data, "min_recompute_s")
    assert milp.objective_value == pytest.approx(3.0)  # evict one 3000-token context
    assert lp == pytest.approx(2.0)


# --- brute force ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_one_gpu_unequal_sizes_brute_force(seed: int) -> None:
    data = random_instance(100 + seed, sessions=4, pauses=3)  # 12 pauses
    for objective in OBJECTIVES:
        r = solve(data, objective)
        assert r.status == Status.OPTIMAL
        assert r.objective_value == pytest.approx(brute_force(data, objective), abs=1e-5)


@pytest.mark.parametrize(
    ("seed", "gpus"),
    [
        (200, 2),
        (203, 3),
        pytest.param(201, 2, marks=pytest.mark.slow),
        pytest.param(205, 3, marks=pytest.mark.slow),
    ],
)
def test_multi_gpu_brute_force_over_affinities(seed: int, gpus: int) -> None:
    data = random_instance(seed, sessions=5, pauses=2, gpus=gpus, room=1.3)
    for objective in OBJECTIVES:
        exact = brute_force(data, objective)
        r = solve(data, objective, method="milp")
        assert r.status == Status.OPTIMAL
        assert r.objective_value == pytest.approx(exact, abs=1e-5), objective
        if objective == "min_recompute_s":
            assert exact > 0  # memory binds: the affinity matters


def test_symmetry_breaking_keeps_the_optimum() -> None:
    data = random_instance(7, sessions=5, pauses=2, gpus=3, identical=True, room=1.2)
    exact = brute_force(data, "min_recompute_s")
    for sym in (False, True):
        r = solve(data, "min_recompute_s", method="milp", symmetry_breaking=sym)
        assert r.objective_value == pytest.approx(exact, abs=1e-5)
    assert exact > 0
    sym = KIND.build(
        AgentSessionsInstance.from_dict(data), "min_recompute_s", symmetry_breaking=True
    )
    full = KIND.build(AgentSessionsInstance.from_dict(data), "min_recompute_s")
    assert len(sym.assign) < len(full.assign)


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_decomposition_bound_is_valid(objective: str) -> None:
    """pooled bound <= optimum <= decomposition (>= and <= for the fair share)."""
    data = random_instance(11, sessions=5, pauses=2, gpus=2, room=1.3)
    exact = brute_force(data, objective)
    r = solve(data, objective, method="decompose")
    assert r.status in (Status.OPTIMAL, Status.FEASIBLE)
    assert r.info["method"] == "decompose" and r.bound is not None
    if objective == "agent_fair_share":
        assert r.bound >= exact - TOL >= r.objective_value - 2 * TOL
    else:
        assert r.bound <= exact + TOL <= r.objective_value + 2 * TOL
    assert r.gap is not None and r.gap >= 0


def test_auto_method_by_size() -> None:
    one = AgentSessionsInstance.from_dict(random_instance(1, sessions=3, pauses=2, gpus=1))
    two = AgentSessionsInstance.from_dict(random_instance(1, sessions=3, pauses=2, gpus=2))
    params = KIND.parse_params({})
    assert KIND.method_for("min_recompute_s", one, params) is KIND.methods["min_recompute_s"]
    assert type(KIND.method_for("min_recompute_s", two, params)).__name__ == "Decomposed"
    forced = KIND.parse_params({"method": "milp"})
    assert KIND.method_for("min_max_load", two, forced) is KIND.methods["min_max_load"]


# --- closed forms and shipped instances --------------------------------------------------
@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_shipped_instances_known_answers(name: str) -> None:
    for objective, want in ANSWERS[name]["answers"].items():
        r = hetopt.solve(DIR / name, objective, options=SolveOptions(threads=1))
        assert r.status == Status.OPTIMAL, (objective, r.termination)
        assert r.verification.ok
        assert r.objective_value == pytest.approx(want, abs=1e-6), objective


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=[pytest.mark.slow] if n.startswith("generated") else [])
        for n in sorted(ANSWERS)
        if ANSWERS[n].get("brute_force")
    ],
)
def test_shipped_answers_are_brute_force(name: str) -> None:
    data = json.loads((DIR / name).read_text())
    for objective, want in ANSWERS[name]["answers"].items():
        assert brute_force(data, objective) == pytest.approx(want, abs=1e-6)


def test_one_gpu_equal_closed_form_tables() -> None:
    r = hetopt.solve(DIR / "one_gpu_equal.json")
    ret = r.tables["retention"]
    assert len(ret) == 8 and ret["kept"].sum() == 5
    assert r.objective_value == pytest.approx(3 * 4096 / 8000)
    mem = r.tables["memory_timeline"]
    assert mem["kept_tokens"].max() <= 2 * 4096
    assert set(r.tables["affinity"]["gpu"]) == {"g0"}


def test_min_max_load_closed_form() -> None:
    """No pauses: the least makespan of work 10, 6 and 3 on two GPUs is 10."""
    data = {
        "kind": "agent_sessions",
        "gpus": [
            {"id": "g0", "kv_capacity_tokens": 10, "prefill_tokens_s": 1.0},
            {"id": "g1", "kv_capacity_tokens": 10, "prefill_tokens_s": 1.0},
        ],
        "sessions": [
            {"id": "a", "work_s": 10.0},
            {"id": "b", "work_s": 6.0},
            {"id": "c", "work_s": 3.0},
        ],
    }
    r = solve(data, "min_max_load")
    assert r.objective_value == pytest.approx(10.0)
    aff = dict(zip(r.tables["affinity"]["session"], r.tables["affinity"]["gpu"], strict=True))
    assert aff["a"] != aff["b"] and aff["b"] == aff["c"]


def test_fair_share_evicts_the_longer_session() -> None:
    """Two overlapping pauses, room for one: evicting the session with the larger ideal
    completion hurts its share less (closed form ideal / (ideal + n / rate))."""
    data = {
        "kind": "agent_sessions",
        "gpus": [{"id": "g", "kv_capacity_tokens": 1000, "prefill_tokens_s": 500.0}],
        "sessions": [
            {
                "id": "a",
                "work_s": 2.0,
                "pauses": [{"start_s": 0.0, "end_s": 4.0, "context_tokens": 1000}],
            },
            {
                "id": "b",
                "work_s": 8.0,
                "pauses": [{"start_s": 1.0, "end_s": 5.0, "context_tokens": 1000}],
            },
        ],
    }
    r = solve(data, "agent_fair_share")
    assert r.objective_value == pytest.approx(12.0 / 14.0)  # b: ideal 12, +2 s recompute
    kept = dict(zip(r.tables["retention"]["session"], r.tables["retention"]["kept"], strict=True))
    assert kept == {"a": True, "b": False}
    assert r.info["max_slowdown"] == pytest.approx(2.0 / 12.0)
    assert solve(data, "min_recompute_s").objective_value == pytest.approx(2.0)


# --- exported model = reported objective ---------------------------------------------------
@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("fmt", ["mps", "lp"])
def test_exported_model_objective_is_the_reported_one(tmp_path, objective: str, fmt: str) -> None:
    path = DIR / "two_gpus.json"
    r = hetopt.solve(path, objective, options=SolveOptions(threads=1))
    out = hetopt.export_model(path, tmp_path / f"m.{fmt}", objective=objective)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(out))
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    exported = h.getInfo().objective_function_value
    if objective == "agent_fair_share":
        # the exported model minimises the largest relative slowdown z; share = 1 / (1 + z)
        assert 1.0 / (1.0 + exported) == pytest.approx(r.objective_value, abs=1e-6)
    else:
        assert exported == pytest.approx(r.objective_value, abs=1e-6)


# --- the verifier can fail -------------------------------------------------------------------
def _tampered(r: hetopt.Result, table: str, change) -> hetopt.Verification:
    tables = {k: v.copy() for k, v in r.tables.items()}
    tables[table] = change(tables[table])
    inst = hetopt.read_instance(DIR / "one_gpu_equal.json")
    return KIND.verify(inst, replace(r, tables=tables))


def test_verifier_rejects_broken_plans() -> None:
    r = hetopt.solve(DIR / "one_gpu_equal.json")
    evicted = int(np.flatnonzero(~r.tables["retention"]["kept"].to_numpy())[0])

    def keep_one_more(df):
        df.loc[evicted, "kept"] = True
        df.loc[evicted, "recompute_s"] = 0.0
        return df

    cases = {
        "keep an evicted pause (capacity exceeded)": ("retention", keep_one_more),
        "wrong recompute": ("retention", lambda df: df.assign(recompute_s=df["recompute_s"] * 2)),
        "a pause missing": ("retention", lambda df: df.drop(index=0)),
        "memory timeline off": (
            "memory_timeline",
            lambda df: df.assign(kept_tokens=df["kept_tokens"] + 1),
        ),
        "unknown GPU": ("affinity", lambda df: df.assign(gpu="nope")),
        "two rows for a session": ("affinity", lambda df: pd.concat([df, df.iloc[:1]])),
        "wrong load": ("gpu_load", lambda df: df.assign(load_s=df["load_s"] + 1)),
        "wrong share": ("completion", lambda df: df.assign(fair_share=0.5)),
    }
    for label, (table, change) in cases.items():
        v = _tampered(r, table, change)
        assert not v.ok, label
    assert KIND.verify(hetopt.read_instance(DIR / "one_gpu_equal.json"), r).ok


def test_verifier_checks_pins_and_active_batch() -> None:
    data = json.loads((DIR / "active_batch.json").read_text())
    r = hetopt.solve(data)
    ret = r.tables["retention"].copy()
    ret["kept"] = True
    ret["recompute_s"] = 0.0
    tables = dict(r.tables, retention=ret)
    v = KIND.verify(hetopt.read_instance(DIR / "active_batch.json"), replace(r, tables=tables))
    assert not v.ok and any("holds" in x for x in v.violations)
    data["sessions"][0]["gpu"] = "g0"
    pinned = AgentSessionsInstance.from_dict(data)
    aff = r.tables["affinity"].copy()
    assert KIND.verify(pinned, r).ok
    aff.loc[0, "gpu"] = "elsewhere"
    assert not KIND.verify(pinned, replace(r, tables=dict(r.tables, affinity=aff))).ok


# --- honest statuses ---------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["milp", "decompose"])
def test_time_limit_is_an_honest_status(method: str) -> None:
    inst = generate(40, 4, 5, seed=1)
    r = KIND.solve(
        inst, "min_recompute_s", SolveOptions(threads=1, time_limit_s=1.0), method=method
    )
    assert r.status in (Status.FEASIBLE, Status.OPTIMAL, Status.NO_SOLUTION)
    if r.status.has_solution:
        assert r.verification.ok
        if r.bound is not None:
            assert r.bound <= r.objective_value + TOL and r.gap >= 0
    if r.status == Status.OPTIMAL:
        assert r.gap is not None and r.gap <= 1e-4


def test_greedy_start_is_an_upper_bound() -> None:
    inst = hetopt.read_instance(DIR / "generated_6x2_2gpus.json")
    for method in ("milp", "decompose"):
        r = KIND.solve(inst, "min_recompute_s", SolveOptions(threads=1), method=method)
        assert r.status == Status.OPTIMAL  # decompose polishes with the full MILP here
        assert r.objective_value <= r.info["greedy_objective"] + TOL
    off = KIND.solve(inst, "min_recompute_s", method="milp", greedy_start=False)
    assert off.objective_value == pytest.approx(r.objective_value, abs=TOL)
    assert "greedy_objective" not in off.info
