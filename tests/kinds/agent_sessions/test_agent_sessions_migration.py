"""Migration (``migration=True``) of the ``agent_sessions`` kind (issue 15, the option).

* brute force over per-call GPUs and keep / evict / migrate on tiny instances (2-3 GPUs,
  <= 6 pauses), seeded, every objective, both memory-row forms;
* properties: with migration the optimum is never worse than without; with every
  transfer slower than any re-prefill no pause migrates and the links change nothing
  (the optimum equals migration without links); without links, calls may still change
  GPU at an eviction, which can beat one GPU per session (so "equal to the no-migration
  optimum" does not hold in general: a hand-made instance shows it);
* default off: links are ignored without ``migration=True``; usage errors; the verifier
  rejects broken migration tables; the exported model reports the solve's optimum;
  the shipped ``migration.json`` and its answers; the CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from test_agent_sessions_migration_oracle import brute_force_migration, with_busy_gpus, with_links
from test_agent_sessions_oracles import brute_force, random_instance

import hetopt
from hetopt import InstanceError, SolveOptions, Status, UsageError
from hetopt.kinds.agent_sessions import KIND, AgentSessionsInstance, replan
from hetopt.kinds.agent_sessions import verify as V

ROOT = Path(__file__).resolve().parents[3]
DIR = ROOT / "instances" / "agent_sessions"
ANSWERS = json.loads((DIR / "answers.json").read_text())
OBJECTIVES = ("min_recompute_s", "min_max_load", "agent_fair_share")
TOL = 1e-6
OPTS = SolveOptions(threads=1, time_limit_s=60, mip_rel_gap=0.0)


def solve(data: dict, objective: str, **params) -> hetopt.Result:
    inst = AgentSessionsInstance.from_dict(data)
    r = KIND.solve(inst, objective, OPTS, **params)
    assert r.status == Status.OPTIMAL, r.termination
    assert r.verification is not None and r.verification.ok, r.verification
    return r


SHAPES = [(2, 3, 2), (3, 2, 2), (2, 2, 3)]  # sessions, pauses each, GPUs


def tiny(seed: int, shape: tuple[int, int, int]) -> dict:
    """A seeded tiny instance with fast links and running batches that fill each GPU at
    times (so that where a context can be held changes during a session)."""
    S, P, G = shape
    data = random_instance(seed, sessions=S, pauses=P, gpus=G, room=1.6)
    return with_busy_gpus(with_links(data, seed), seed)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_migration_equals_brute_force(seed: int, shape: tuple, objective: str) -> None:
    data = tiny(seed, shape)
    rows = "clique" if seed % 2 else "sweep"
    r = solve(data, objective, migration=True, capacity_rows=rows)
    assert r.objective_value == pytest.approx(brute_force_migration(data, objective), abs=TOL)
    assert set(r.tables) >= {"segment", "affinity", "retention", "memory_timeline"}


def test_brute_force_instances_do_migrate() -> None:
    """Control for the test above: its instances use the option (some pause migrates,
    some session runs on two GPUs)."""
    migrated = moved = 0
    for seed in range(4):
        for shape in SHAPES:
            r = solve(tiny(seed, shape), "min_recompute_s", migration=True)
            migrated += int(r.tables["retention"]["migrated"].sum())
            moved += int((r.tables["segment"].groupby("session")["gpu"].nunique() > 1).sum())
    assert migrated > 0 and moved > 0


@pytest.mark.parametrize("seed", range(5))
def test_migration_never_worse_than_one_gpu_per_session(seed: int) -> None:
    data = with_busy_gpus(
        with_links(random_instance(seed, sessions=6, pauses=3, gpus=2), seed), seed
    )
    for objective in OBJECTIVES:
        without = solve(data, objective, method="milp").objective_value
        with_ = solve(data, objective, migration=True).objective_value
        if objective == "agent_fair_share":
            assert with_ >= without - TOL
        else:
            assert with_ <= without + TOL


@pytest.mark.parametrize("seed", range(5))
def test_slow_links_change_nothing(seed: int) -> None:
    """Every transfer slower than any re-prefill: migrating is dominated (same GPU
    charged, more memory held), so no pause migrates and the optimum is that without
    links; checked against both brute forces on tiny instances."""
    base = with_busy_gpus(random_instance(seed, sessions=3, pauses=2, gpus=2, room=1.6), seed)
    slow = with_links(base, seed, fast=False)
    for objective in OBJECTIVES:
        r = solve(slow, objective, migration=True)
        assert not r.tables["retention"]["migrated"].any()
        assert r.info["num_migrations"] == 0  # not even a column
        assert r.objective_value == pytest.approx(
            solve(base, objective, migration=True).objective_value, abs=TOL
        )
        assert r.objective_value == pytest.approx(brute_force_migration(base, objective), abs=TOL)
        assert r.objective_value == pytest.approx(brute_force_migration(slow, objective), abs=TOL)


SWITCH = {
    "kind": "agent_sessions",
    "gpus": [
        {"id": "g0", "kv_capacity_tokens": 4000, "prefill_tokens_s": 1000.0},
        {"id": "g1", "kv_capacity_tokens": 4000, "prefill_tokens_s": 1000.0},
    ],
    "sessions": [
        {
            "id": "x",
            "gpu": "g0",
            "pauses": [{"start_s": 0.0, "end_s": 4.0, "context_tokens": 4000}],
        },
        {
            "id": "y",
            "gpu": "g1",
            "pauses": [{"start_s": 6.0, "end_s": 10.0, "context_tokens": 4000}],
        },
        {
            "id": "z",
            "pauses": [
                {"start_s": 1.0, "end_s": 3.0, "context_tokens": 2000},
                {"start_s": 4.5, "end_s": 5.5, "context_tokens": 500},
                {"start_s": 7.0, "end_s": 9.0, "context_tokens": 2000},
            ],
        },
    ],
}
"""x fills g0 over [0, 4), y fills g1 over [6, 10) (both pinned). On one GPU, z keeps its
first pause (g1) or its last (g0), not both: 2.0 s recomputed. With migration and no link
at all, z's first two calls run on g1, it evicts its small middle pause (0.5 s) and its
last two calls run on g0: 0.5 s."""


def test_switching_gpus_at_an_eviction_beats_one_gpu_per_session() -> None:
    objective = "min_recompute_s"
    without = solve(SWITCH, objective, method="milp").objective_value
    assert without == pytest.approx(brute_force(SWITCH, objective), abs=TOL)
    assert without == pytest.approx(2.0)
    r = solve(SWITCH, objective, migration=True)
    assert r.objective_value == pytest.approx(brute_force_migration(SWITCH, objective), abs=TOL)
    assert r.objective_value == pytest.approx(0.5)
    z = r.tables["segment"].query("session == 'z'")["gpu"].tolist()
    assert z == ["g1", "g1", "g0", "g0"]
    assert not r.tables["retention"]["migrated"].any()


def test_links_ignored_without_migration() -> None:
    data = with_links(random_instance(2, sessions=5, pauses=3, gpus=2), 2)
    plain = {k: v for k, v in data.items() if k != "links"}
    for objective in OBJECTIVES:
        a = solve(data, objective, method="milp")
        b = solve(plain, objective, method="milp")
        assert a.objective_value == pytest.approx(b.objective_value, abs=1e-9)
        assert "segment" not in a.tables and "migrated" not in a.tables["retention"]


def test_usage_errors() -> None:
    data = with_links(random_instance(0, sessions=2, pauses=2, gpus=2), 0)
    inst = AgentSessionsInstance.from_dict(data)
    with pytest.raises(UsageError, match="decompose"):
        KIND.solve(inst, "min_recompute_s", OPTS, migration=True, method="decompose")
    with pytest.raises(UsageError, match="symmetry_breaking"):
        KIND.solve(inst, "min_recompute_s", OPTS, migration=True, symmetry_breaking=True)
    first = KIND.solve(inst, "min_recompute_s", OPTS)
    with pytest.raises(UsageError, match="migration"):
        replan(inst, first, 1.0, migration=True)


@pytest.mark.parametrize(
    ("link", "field"),
    [
        ({"src": "g0", "dst": "nope", "kv_transfer_tokens_s": 1.0}, "links[0].dst"),
        ({"src": "g0", "dst": "g0", "kv_transfer_tokens_s": 1.0}, "links[0].dst"),
        ({"src": "g0", "dst": "g1", "kv_transfer_tokens_s": 0.0}, "links.0.kv_transfer"),
    ],
)
def test_invalid_links(link: dict, field: str) -> None:
    data = random_instance(0, sessions=2, pauses=1, gpus=2)
    data["links"] = [link]
    with pytest.raises(InstanceError) as exc:
        AgentSessionsInstance.from_dict(data)
    assert field.split(".")[0] in str(exc.value)


def test_duplicate_link() -> None:
    data = random_instance(0, sessions=2, pauses=1, gpus=2)
    link = {"src": "g0", "dst": "g1", "kv_transfer_tokens_s": 1.0}
    data["links"] = [link, dict(link)]
    with pytest.raises(InstanceError, match=r"links\[1\]"):
        AgentSessionsInstance.from_dict(data)


# --- the verifier ------------------------------------------------------------------------
def _migrating_result() -> tuple[AgentSessionsInstance, hetopt.Result]:
    inst = hetopt.read_instance(DIR / "migration.json")
    r = KIND.solve(inst, "min_recompute_s", OPTS, migration=True)
    assert r.verification.ok and r.tables["retention"]["migrated"].any()
    return inst, r


def _check(inst: AgentSessionsInstance, r: hetopt.Result, tables: dict) -> list[str]:
    return list(V.verify(inst, r.objective, r.objective_value, tables).violations)


def test_verifier_rejects_broken_migration_tables() -> None:
    inst, r = _migrating_result()
    t = {k: v.copy() for k, v in r.tables.items()}
    assert _check(inst, r, t) == []
    ret = t["retention"]
    q = ret.index[ret["migrated"]][0]
    # a migrated pause declared kept: its calls run on two GPUs
    bad = {**t, "retention": ret.assign(kept=ret.index == q, migrated=False)}
    assert any("kept but its calls" in p for p in _check(inst, r, bad))
    # a migration over a link the instance does not have
    data = inst.to_dict()
    s, j = ret.loc[q, "session"], int(ret.loc[q, "pause"])
    seg = t["segment"].set_index(["session", "segment"])["gpu"]
    u, v = seg[(s, j)], seg[(s, j + 1)]
    data["links"] = [k for k in data["links"] if (k["src"], k["dst"]) != (u, v)]
    assert any("no such link" in p for p in _check(AgentSessionsInstance.from_dict(data), r, t))
    # wrong transfer seconds
    wrong = ret.copy()
    wrong.loc[q, "migrate_s"] += 0.5
    assert any("migrate_s" in p for p in _check(inst, r, {**t, "retention": wrong}))
    # a call moved to another GPU without paying anything
    segs = t["segment"].copy()
    k = segs.index[(segs["session"] == s) & (segs["segment"] == j + 1)][0]
    segs.loc[k, "gpu"] = u
    assert _check(inst, r, {**t, "segment": segs})
    # a missing call
    assert any("missing from segment" in p for p in _check(inst, r, {**t, "segment": segs.drop(k)}))
    # a migrated pause in a result without a segment table
    plain = {k2: v2 for k2, v2 in t.items() if k2 != "segment"}
    assert any("no segment table" in p for p in _check(inst, r, plain))


def test_verifier_replays_the_source_during_the_copy() -> None:
    """The source holds a migrated context until it is copied: a timeline without that
    occupation differs from the replay."""
    inst, r = _migrating_result()
    mem = r.tables["memory_timeline"].copy()
    mem["kept_tokens"] = 0
    assert any(
        "differs from the replay" in p
        for p in _check(inst, r, {**r.tables, "memory_timeline": mem})
    )


def test_capacity_counts_the_copy_on_the_source() -> None:
    """m keeps its first pause on g0 (g1's running batch leaves no room then); at its
    second pause g0 is needed by o from t=2.1 on, so m migrates to g1. That fits only if
    the copy (3000 tokens) has left g0 by 2.1: copy done at 2.05 -> 0.05 s of transfer;
    done at 2.4 -> migrating would overflow g0 (or cost o's 4.0 s), so 3.0 s of re-prefill.
    A model that freed the source at the pause start would report 0.4."""
    data = {
        "kind": "agent_sessions",
        "gpus": [
            {"id": "g0", "kv_capacity_tokens": 5000, "prefill_tokens_s": 1000.0},
            {
                "id": "g1",
                "kv_capacity_tokens": 5000,
                "prefill_tokens_s": 1000.0,
                "active_kv": [{"start_s": 0.0, "end_s": 1.5, "tokens": 4000}],
            },
        ],
        "links": [{"src": "g0", "dst": "g1", "kv_transfer_tokens_s": 10000.0}],
        "sessions": [
            {
                "id": "m",
                "pauses": [
                    {"start_s": 0.0, "end_s": 1.0, "context_tokens": 3000},
                    {"start_s": 2.0, "end_s": 6.0, "context_tokens": 3000},
                ],
            },
            {
                "id": "o",
                "gpu": "g0",
                "pauses": [{"start_s": 2.1, "end_s": 5.0, "context_tokens": 4000}],
            },
        ],
    }
    for copy_ends, want in ((2.05, 0.05), (2.4, 3.0)):
        data["links"][0]["kv_transfer_tokens_s"] = 3000 / (copy_ends - 2.0)
        r = solve(data, "min_recompute_s", migration=True)
        assert r.objective_value == pytest.approx(want, abs=TOL)
        assert brute_force_migration(data, "min_recompute_s") == pytest.approx(want, abs=TOL)


# --- export, shipped instance, CLI --------------------------------------------------------
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_exported_model_reports_the_optimum(tmp_path: Path, objective: str) -> None:
    import highspy

    path = DIR / "migration.json"
    r = hetopt.solve(path, objective, options=OPTS, migration=True)
    out = hetopt.export_model(path, tmp_path / "m.mps", objective=objective, migration=True)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.readModel(str(out))
    h.run()
    exported = h.getInfo().objective_function_value
    if objective == "agent_fair_share":
        exported = 1.0 / (1.0 + exported)
    assert exported == pytest.approx(r.objective_value, abs=TOL)


def test_shipped_migration_answers() -> None:
    entry = ANSWERS["migration.json"]
    data = json.loads((DIR / "migration.json").read_text())
    for objective, want in entry["migration_answers"].items():
        r = hetopt.solve(DIR / "migration.json", objective, options=OPTS, migration=True)
        assert r.status == Status.OPTIMAL and r.verification.ok
        assert r.objective_value == pytest.approx(want, abs=TOL), objective
        assert brute_force_migration(data, objective) == pytest.approx(want, abs=TOL)
        assert want <= entry["answers"][objective] + TOL or objective == "agent_fair_share"


def test_cli_solves_with_migration() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "hetopt.cli",
            "solve",
            str(DIR / "migration.json"),
            "-p",
            "migration=true",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    want = ANSWERS["migration.json"]["migration_answers"]["min_recompute_s"]
    assert result["objective_value"] == pytest.approx(want, abs=TOL)
    seg = pd.DataFrame(result["tables"]["segment"])
    assert {"session", "segment", "gpu"} <= set(seg.columns)


# --- the best of the two MILPs --------------------------------------------------------
def test_no_migration_plan_as_migration_tables_verifies() -> None:
    """The fallback of ``MigratingBest``: a one-GPU-per-session plan written as migration
    tables passes the migration verifier with the same objective."""
    from hetopt.kinds.agent_sessions import migration as M

    inst = hetopt.read_instance(DIR / "two_gpus.json")
    for objective in OBJECTIVES:
        r = KIND.solve(inst, objective, OPTS, method="milp")
        out = hetopt.contract.Outcome(r.objective_value, dict(r.tables), {})
        sg = M.segments(inst)
        plan = M._plan_of(inst.arrays, sg, out)
        tables = M.plan_tables(inst.arrays, sg, plan)
        v = V.verify(inst, objective, r.objective_value, tables)
        assert v.ok, v.violations
        assert not tables["retention"]["migrated"].any()


def test_migration_result_never_worse_than_its_first_stage() -> None:
    """Whatever the time limit, the returned plan is at least as good as the
    one-GPU-per-session plan of the first stage (``no_migration_objective``)."""
    data = with_busy_gpus(with_links(random_instance(4, sessions=8, pauses=3, gpus=3), 4), 4)
    inst = AgentSessionsInstance.from_dict(data)
    for limit in (0.2, 5.0):
        r = KIND.solve(
            inst, "min_recompute_s", SolveOptions(threads=1, time_limit_s=limit), migration=True
        )
        assert r.status.has_solution and r.verification.ok
        assert r.objective_value <= r.info["no_migration_objective"] + TOL


def test_verifier_checks_the_load_and_completion_tables_of_a_migration() -> None:
    """The per-GPU and per-session summaries are recomputed from the instance and the
    plan: each tampered row is named."""
    inst, r = _migrating_result()
    t = {k: v.copy() for k, v in r.tables.items()}
    load, done = t["gpu_load"], t["completion"]
    g, s = str(load["gpu"].iloc[0]), str(done["session"].iloc[0])
    cases = {
        f"gpu_load of {g}: migrate_s": {
            **t,
            "gpu_load": load.assign(migrate_s=load["migrate_s"] + 1),
        },
        f"gpu_load of {g}: load_s": {**t, "gpu_load": load.assign(load_s=load["load_s"] * 2)},
        "gpu_load does not list every GPU": {**t, "gpu_load": load.iloc[1:]},
        "gpu_load names an unknown GPU": {**t, "gpu_load": load.assign(gpu="nope")},
        f"completion of {s}: fair_share": {**t, "completion": done.assign(fair_share=0.01)},
        f"completion of {s}: recompute_s / migrate_s": {
            **t,
            "completion": done.assign(recompute_s=done["recompute_s"] + 1),
        },
        "completion does not list every session": {**t, "completion": done.iloc[1:]},
        "completion names an unknown session": {**t, "completion": done.assign(session="nope")},
    }
    for message, tables in cases.items():
        assert any(message in p for p in _check(inst, r, tables)), message
