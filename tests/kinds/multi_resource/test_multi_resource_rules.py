"""Placement rules and ``min_cost`` of the ``multi_resource`` kind (issue 16).

Known answers come from an independent brute force over every profile and placement of
every job (<= 6 jobs x 3 servers, seeded random instances), written from the rule
semantics of ``models/multi_resource.md`` and sharing no code with the kind.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import highspy
import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hetopt
from hetopt import InstanceError, SolveOptions, Status
from hetopt.cli import main
from hetopt.kinds.multi_resource import KIND, MultiResourceInstance
from hetopt.kinds.multi_resource import formulations as F
from hetopt.kinds.multi_resource.generate import generate

EXACT = SolveOptions(mip_rel_gap=0.0, threads=1)
RULES = ("anti_affinity", "affinity", "max_per_group", "spread")
TAGS = ("a", "b")


def solve(data: dict, objective: str = "max_total_throughput", **params) -> hetopt.Result:
    return KIND.solve(MultiResourceInstance.from_dict(data), objective, EXACT, **params)


# ---------------------------------------------------------------- brute force (independent)
def _group(server: dict, scope: str) -> str | None:
    if scope == "server":
        return server["id"]
    return (server.get("labels") or {}).get(scope)


def rule_violations(data: dict, rule: dict, touched: list[set[int]]) -> int:
    """Violations of ``rule`` when job ``i`` touches the servers ``touched[i]``."""
    servers, jobs = data["servers"], data["jobs"]
    scope = rule.get("scope", "server")
    groups = sorted({g for s in servers if (g := _group(s, scope)) is not None})
    members: dict[str, set[int]] = {g: set() for g in groups}
    partners: dict[str, set[int]] = {g: set() for g in groups}
    homeless = set()
    for i, (job, where) in enumerate(zip(jobs, touched, strict=True)):
        tags = set(job.get("tags") or ())
        for s in where:
            g = _group(servers[s], scope)
            if rule["tag"] in tags:
                if g is None:
                    homeless.add(i)
                else:
                    members[g].add(i)
            if rule.get("with_tag") in tags and g is not None:
                partners[g].add(i)
    kind = rule["rule"]
    if kind == "anti_affinity":
        return sum(max(0, len(m) - 1) for m in members.values())
    if kind == "max_per_group":
        return sum(max(0, len(m) - rule["max_per_group"]) for m in members.values())
    if kind == "affinity":
        lone = sum(1 for g, m in members.items() for i in m if not partners[g] - {i})
        return lone + len(homeless)
    sizes = [len(m) for m in members.values()]
    return max(0, max(sizes) - min(sizes) - rule["max_skew"]) if sizes else 0


def splits(g: int, caps: list[int]) -> list[tuple[int, ...]]:
    return [v for v in itertools.product(*(range(c + 1) for c in caps)) if sum(v) == g]


def brute_force_all(data: dict) -> dict[tuple[str, bool], float | None]:
    """Best objective over every (profile, placement) of every job, for both objectives,
    with and without the rules: ``{(objective, with_rules): value or None}`` (``None``:
    nothing feasible). Throughput: sum of throughputs - soft penalties (floor: fair share
    and min_throughput); min_cost: cost of the servers in use + soft penalties (floor:
    min_throughput, else the fair share). Depth-first over jobs, pruned on capacity."""
    servers, jobs = data["servers"], data["jobs"]
    rules = data.get("placement_rules") or []
    G = sum(s["gpus"] for s in servers)
    cpg = sum(s["cpus"] for s in servers) / G
    mpg = sum(s["mem_gb"] for s in servers) / G
    caps_g = [s["gpus"] for s in servers]
    biggest = max(caps_g)
    S = len(servers)
    cap = np.array([[s["gpus"], s["cpus"], s["mem_gb"]] for s in servers], dtype=float)
    options = []  # per job: (throughput, meets tput floor, meets cost floor, use, servers)
    for j in jobs:
        fair = max(
            (
                p["throughput"]
                for p in j["profile"]
                if p["cpus_per_gpu"] <= cpg + 1e-9 and p["mem_gb_per_gpu"] <= mpg + 1e-9
            ),
            default=0.0,
        )
        need = j.get("min_throughput")
        floor_t = max(fair, need or 0.0)
        floor_c = need if need is not None else fair
        if j["gpus"] <= biggest:
            places = [tuple(j["gpus"] if t == s else 0 for t in range(S)) for s in range(S)]
        else:
            places = splits(j["gpus"], caps_g)
        opts = []
        for p in j["profile"]:
            ok_t = p["throughput"] >= floor_t - 1e-12
            ok_c = p["throughput"] >= floor_c - 1e-12
            if not (ok_t or ok_c):
                continue
            for v in places:
                n = np.array(v, dtype=float)
                use = np.stack([n, n * p["cpus_per_gpu"], n * p["mem_gb_per_gpu"]], axis=1)
                opts.append((p["throughput"], ok_t, ok_c, use, {s for s in range(S) if v[s]}))
        options.append(opts)
    best: dict[tuple[str, bool], float | None] = {
        (o, r): None for o in ("max_total_throughput", "min_cost") for r in (True, False)
    }

    def leaf(combo: list) -> None:
        touched = [o[4] for o in combo]
        penalty, ok = 0.0, True
        for r in rules:
            n = rule_violations(data, r, touched)
            if r.get("hard", True):
                ok = ok and not n
            else:
                penalty += r.get("penalty", 0.0) * n
        used = {s for t in touched for s in t}
        cost = sum(servers[s].get("cost_per_hour", math.nan) for s in used)
        tput = sum(o[0] for o in combo)
        for with_rules in (True, False):
            if with_rules and not ok:
                continue
            pen = penalty if with_rules else 0.0
            if all(o[1] for o in combo):
                key = ("max_total_throughput", with_rules)
                old = best[key]
                best[key] = tput - pen if old is None else max(old, tput - pen)
            if all(o[2] for o in combo):
                key = ("min_cost", with_rules)
                old = best[key]
                best[key] = cost + pen if old is None else min(old, cost + pen)

    def dfs(i: int, used: np.ndarray, combo: list) -> None:
        if i == len(jobs):
            leaf(combo)
            return
        for o in options[i]:
            u = used + o[3]
            if (u <= cap + 1e-9).all():
                combo.append(o)
                dfs(i + 1, u, combo)
                combo.pop()

    dfs(0, np.zeros((S, 3)), [])
    return best


def brute_force(data: dict, objective: str = "max_total_throughput") -> float | None:
    """The brute-force optimum of ``objective`` with the instance's rules."""
    return brute_force_all(data)[(objective, True)]


# ---------------------------------------------------------------- random instances
def random_data(
    rng: np.random.Generator,
    rule: str,
    hard: bool,
    n_jobs: int | None = None,
    split: bool = False,
) -> dict:
    """<= 6 jobs x 3 servers, tags from TAGS, servers in racks r0 (s0, s1) and r1 (s2) or
    unlabelled, one rule of type ``rule`` (plus, sometimes, a second random one)."""
    n_jobs = n_jobs or int(rng.integers(3, 7))
    n_prof = 2 if n_jobs >= 5 else 3
    jobs = []
    for i in range(n_jobs):
        prof = [
            {
                "cpus_per_gpu": float(rng.choice([1, 2, 3, 4, 6])),
                "mem_gb_per_gpu": float(rng.choice([20.0, 62.5, 125.0])),
                "throughput": round(float(rng.uniform(0.2, 2.0)), 2),
            }
            for _ in range(int(rng.integers(1, n_prof + 1)))
        ]
        tags = [t for t in TAGS if rng.random() < 0.5]
        job = {"id": f"j{i}", "gpus": int(rng.choice([1, 1, 2])), "profile": prof}
        if tags:
            job["tags"] = tags
        if rng.random() < 0.2:
            job["min_throughput"] = max(p["throughput"] for p in prof) * 0.8
        jobs.append(job)
    if split:
        jobs[0]["gpus"] = 5
    racks = ["r0", "r0", "r1"] if rng.random() < 0.8 else ["r0", None, "r1"]
    need = sum(j["gpus"] for j in jobs)
    servers = []
    for s in range(3):
        gs = 4 if split else int(max(2, math.ceil(need / 3) + int(rng.integers(0, 3))))
        srv = {
            "id": f"s{s}",
            "gpus": gs,
            "cpus": float(rng.integers(gs, 6 * gs + 1)),
            "mem_gb": float(rng.choice([62.5, 100.0, 125.0]) * gs),
            "cost_per_hour": float(rng.integers(1, 6)),
        }
        if racks[s] is not None:
            srv["labels"] = {"rack": racks[s]}
        servers.append(srv)
    rules = [random_rule(rng, rule, hard)]
    if rng.random() < 0.3:
        rules.append(random_rule(rng, str(rng.choice(RULES)), bool(rng.random() < 0.5)))
    return {"kind": "multi_resource", "servers": servers, "jobs": jobs, "placement_rules": rules}


def random_rule(rng: np.random.Generator, rule: str, hard: bool) -> dict:
    r: dict = {
        "rule": rule,
        "tag": str(rng.choice(TAGS)),
        "scope": str(rng.choice(["server", "rack"])),
    }
    if rule == "affinity":
        r["with_tag"] = str(rng.choice(TAGS))
    elif rule == "max_per_group":
        r["max_per_group"] = int(rng.integers(0, 3))
    elif rule == "spread":
        r["max_skew"] = int(rng.integers(0, 2))
    if not hard:
        r["hard"] = False
        r["penalty"] = round(float(rng.uniform(0.05, 1.5)), 2)
    return r


def check(data: dict, objective: str = "max_total_throughput") -> tuple[float | None, float | None]:
    """Solve and compare with the brute force; returns (with rules, without rules)."""
    bf = brute_force_all(data)
    expected = bf[(objective, True)]
    res = solve(data, objective)
    if expected is None:
        assert res.status == Status.INFEASIBLE, (res.status, res.termination)
    else:
        assert res.status == Status.OPTIMAL, res.termination
        assert res.verification is not None and res.verification.ok, res.verification
        assert res.objective_value == pytest.approx(expected, rel=1e-7, abs=1e-7)
    return expected, bf[(objective, False)]


def _binds(with_rules: float | None, without: float | None) -> str:
    """``"feasible"``: the rule changes a feasible optimum; ``"infeasible"``: it makes the
    instance infeasible; ``""``: it does not bind."""
    if with_rules is None:
        return "infeasible" if without is not None else ""
    return "feasible" if without is None or abs(with_rules - without) > 1e-9 else ""


@pytest.mark.parametrize("hard", [True, False], ids=["hard", "soft"])
@pytest.mark.parametrize("rule", RULES)
def test_rules_match_brute_force(rule: str, hard: bool) -> None:
    # seeded random instances, both objectives; the rule must bind (change a feasible
    # optimum) in some of them
    binding = []
    for seed in range(10):
        rng = np.random.default_rng([16, RULES.index(rule), int(hard), seed])
        data = random_data(rng, rule, hard)
        for objective in ("max_total_throughput", "min_cost"):
            binding.append(_binds(*check(data, objective)))
    assert binding.count("feasible") >= 1, f"{rule} never changed a feasible optimum"
    assert len(binding) - binding.count("") >= 2, f"{rule} bound in {binding}"


@pytest.mark.parametrize("rule", RULES)
def test_rules_with_split_jobs_match_brute_force(rule: str) -> None:
    # a 5-GPU job on 4-GPU servers touches every group it has GPUs in
    for seed in range(3):
        rng = np.random.default_rng([161, RULES.index(rule), seed])
        data = random_data(rng, rule, bool(seed % 2), n_jobs=3, split=True)
        data["jobs"][0]["tags"] = ["a", "b"]
        assert MultiResourceInstance.from_dict(data).arrays.is_split().any()
        check(data)


@pytest.mark.parametrize("seed", range(10))
def test_min_cost_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng([162, seed])
    rule = RULES[seed % 4]
    data = random_data(rng, rule, seed % 3 != 0)
    if seed >= 7:
        data["placement_rules"] = []
    check(data, "min_cost")


def test_min_cost_right_sizes_below_the_fair_share() -> None:
    # min_throughput 0.5 lets j0 run at 1 CPU/GPU: both jobs fit on the cheap server
    prof = [
        {"cpus_per_gpu": 1, "mem_gb_per_gpu": 50, "throughput": 0.5},
        {"cpus_per_gpu": 3, "mem_gb_per_gpu": 50, "throughput": 1.0},
    ]
    data = {
        "kind": "multi_resource",
        "servers": [
            {"id": "cheap", "gpus": 2, "cpus": 4, "mem_gb": 100, "cost_per_hour": 1.0},
            {"id": "dear", "gpus": 2, "cpus": 8, "mem_gb": 100, "cost_per_hour": 5.0},
        ],
        "jobs": [
            {"id": "j0", "gpus": 1, "profile": prof, "min_throughput": 0.5},
            {"id": "j1", "gpus": 1, "profile": prof},
        ],
    }
    res = solve(data, "min_cost")
    assert res.status == Status.OPTIMAL and res.objective_value == pytest.approx(1.0)
    place = res.tables["placement"].set_index("job")
    assert set(place["server"]) == {"cheap"}
    assert place.loc["j0", "throughput"] == 0.5 and place.loc["j1", "throughput"] == 1.0
    assert res.info["server_cost"] == pytest.approx(1.0)
    assert res.info["total_throughput"] == pytest.approx(1.5)
    # without j0's target, its fair share (3 CPUs: 1.0) needs the dear server too
    del data["jobs"][0]["min_throughput"]
    assert solve(data, "min_cost").objective_value == pytest.approx(5.0)
    assert brute_force(data, "min_cost") == pytest.approx(5.0)


def test_min_throughput_is_a_floor_of_the_throughput_objective_too() -> None:
    prof = [
        {"cpus_per_gpu": 3, "mem_gb_per_gpu": 50, "throughput": 1.0},
        {"cpus_per_gpu": 5, "mem_gb_per_gpu": 50, "throughput": 3.0},
    ]
    data = {
        "kind": "multi_resource",
        "servers": [{"id": "s", "gpus": 2, "cpus": 8, "mem_gb": 100}],
        "jobs": [
            {"id": "j0", "gpus": 1, "profile": prof},
            {"id": "j1", "gpus": 1, "profile": prof, "min_throughput": 2.0},
        ],
    }
    res = solve(data)
    place = res.tables["placement"].set_index("job")
    assert place.loc["j1", "throughput"] == 3.0  # j0 would otherwise take the 5 CPUs
    assert res.objective_value == pytest.approx(4.0) == brute_force(data)


# ---------------------------------------------------------------- properties (hypothesis)
@st.composite
def instances(draw: st.DrawFn, rule: str, hard: bool) -> dict:
    seed = draw(st.integers(0, 2**32 - 1))
    return random_data(np.random.default_rng(seed), rule, hard)


def _groups_of(data: dict, scope: str, placement) -> dict[str, set[str]]:
    servers = {s["id"]: s for s in data["servers"]}
    tags = {j["id"]: set(j.get("tags") or ()) for j in data["jobs"]}
    out: dict[str, set[str]] = {}
    for row in placement.itertuples():
        g = _group(servers[row.server], scope)
        if g is not None:
            out.setdefault(g, set())
            if tags and "a" in tags[row.job]:
                out[g].add(row.job)
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances("anti_affinity", True))
def test_hard_anti_affinity_never_shares_a_group(data: dict) -> None:
    data["placement_rules"] = [{"rule": "anti_affinity", "tag": "a", "scope": "rack"}]
    res = solve(data, fragmentation=False)
    if res.status == Status.INFEASIBLE:
        assert res.info["conflict"] in ([], ["placement_rules[0]"])
        return
    assert res.status == Status.OPTIMAL and res.verification.ok
    for members in _groups_of(data, "rack", res.tables["placement"]).values():
        assert len(members) <= 1
    assert len(res.tables["violations"]) == 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances("affinity", False), st.sampled_from(RULES))
def test_soft_penalties_equal_a_recount(data: dict, second: str) -> None:
    rng = np.random.default_rng(len(json.dumps(data)))
    data["placement_rules"] = [
        {**r, "hard": False, "penalty": r.get("penalty", 0.7)} for r in data["placement_rules"]
    ] + [random_rule(rng, second, False)]
    res = solve(data, fragmentation=False)
    if res.status == Status.INFEASIBLE:  # soft rules never are the reason
        assert solve({**data, "placement_rules": []}).status == Status.INFEASIBLE
        return
    assert res.status == Status.OPTIMAL and res.verification.ok
    place = res.tables["placement"]
    index = {j["id"]: i for i, j in enumerate(data["jobs"])}
    sidx = {s["id"]: i for i, s in enumerate(data["servers"])}
    touched: list[set[int]] = [set() for _ in data["jobs"]]
    for row in place.itertuples():
        touched[index[row.job]].add(sidx[row.server])
    counts = [rule_violations(data, r, touched) for r in data["placement_rules"]]
    penalty = sum(r["penalty"] * n for r, n in zip(data["placement_rules"], counts, strict=True))
    assert res.info["total_penalty"] == pytest.approx(penalty, abs=1e-9)
    assert res.info["rule_violations"] == sum(counts)
    viol = res.tables["violations"]
    for k, n in enumerate(counts):
        assert viol.loc[viol["rule"] == f"placement_rules[{k}]", "violations"].sum() == n
    throughput = place.drop_duplicates("job")["throughput"].sum()
    assert res.objective_value == pytest.approx(throughput - penalty, abs=1e-9)
    assert res.info["total_throughput"] == pytest.approx(throughput, abs=1e-9)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances("max_per_group", True))
def test_min_cost_property_matches_brute_force(data: dict) -> None:
    check(data, "min_cost")


# ---------------------------------------------------------------- infeasibility, conflicts
def _conflict_data() -> dict:
    prof = [{"cpus_per_gpu": 3, "mem_gb_per_gpu": 62.5, "throughput": 1.0}]
    servers = [
        {"id": f"s{i}", "gpus": 4, "cpus": 12, "mem_gb": 250, "labels": {"rack": f"r{i % 2}"}}
        for i in range(3)
    ]
    jobs = [{"id": f"db{i}", "gpus": 1, "profile": prof, "tags": ["db"]} for i in range(3)]
    jobs.append({"id": "cache", "gpus": 1, "profile": prof, "tags": ["cache"]})
    jobs.append({"id": "web", "gpus": 1, "profile": prof, "tags": ["web"]})
    rules = [
        {"rule": "max_per_group", "tag": "web", "max_per_group": 1},  # harmless
        {"rule": "anti_affinity", "tag": "db"},
        {"rule": "spread", "tag": "db", "scope": "rack", "max_skew": 3},  # harmless
        {"rule": "affinity", "tag": "db", "with_tag": "cache"},
    ]
    return {"kind": "multi_resource", "servers": servers, "jobs": jobs, "placement_rules": rules}


@pytest.mark.parametrize("objective", ["max_total_throughput", "min_cost"])
def test_hard_conflict_names_an_irreducible_set_of_rules(objective: str) -> None:
    # three db jobs, each on its own server (anti_affinity) but each with the only cache
    # job (affinity): infeasible; the other two rules are not part of the conflict
    data = _conflict_data()
    for s in data["servers"]:
        s["cost_per_hour"] = 1.0
    res = solve(data, objective)
    assert res.status == Status.INFEASIBLE
    assert res.info["conflict"] == ["placement_rules[1]", "placement_rules[3]"]
    assert res.info["conflict_minimal"] is True
    assert list(res.tables["conflict"]["constraint"]) == res.info["conflict"]
    assert "placement_rules[1]" in res.termination and "placement_rules[3]" in res.termination
    for k in (1, 3):  # irreducible: without either rule the rest is feasible
        rest = {
            **data,
            "placement_rules": [r for i, r in enumerate(data["placement_rules"]) if i != k],
        }
        assert solve(rest, objective).status == Status.OPTIMAL


def test_infeasible_without_rules_names_no_rule() -> None:
    data = _conflict_data()
    for j in data["jobs"]:
        j["gpus"] = 3  # 15 GPUs on 12
    res = solve(data)
    assert res.status == Status.INFEASIBLE
    assert res.info["conflict"] == []
    assert "without any placement rule" in res.info["conflict_source"]


def test_diagnose_off_skips_the_deletion_filter() -> None:
    res = solve(_conflict_data(), diagnose=False)
    assert res.status == Status.INFEASIBLE and "conflict" not in res.info
    assert res.report.stages.get("diagnose") is None


def test_cli_conflict_is_exit_4_naming_the_rules(tmp_path: Path) -> None:
    p = tmp_path / "conflict.json"
    p.write_text(json.dumps(_conflict_data()))
    r = CliRunner().invoke(main, ["solve", str(p), "--json"])
    assert r.exit_code == 4, r.output
    d = json.loads(r.stdout)
    assert d["info"]["conflict"] == ["placement_rules[1]", "placement_rules[3]"]
    assert "placement_rules[3]" in d["termination"]


# ---------------------------------------------------------------- validation, check
def _small() -> dict:
    data = _conflict_data()
    data["placement_rules"] = [{"rule": "anti_affinity", "tag": "db", "scope": "zone"}]
    return data


def test_scope_label_no_server_has_is_exit_3_naming_the_rule(tmp_path: Path) -> None:
    with pytest.raises(InstanceError) as exc:
        MultiResourceInstance.from_dict(_small())
    assert exc.value.field == "placement_rules[0].scope"
    assert "'zone'" in str(exc.value)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(_small()))
    r = CliRunner().invoke(main, ["solve", str(p)])
    assert r.exit_code == 3 and len(r.output.strip().splitlines()) == 1
    assert "placement_rules[0]" in r.output


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        (lambda d: d["jobs"][0].update(tags=["db", "db"]), "jobs[0].tags"),
        (lambda d: d["jobs"][0].update(min_throughput=5.0), "jobs[0].min_throughput"),
        (lambda d: d["servers"][0].update(cost_per_hour=-1.0), "servers[0].cost_per_hour"),
        (lambda d: d["servers"][0].update(labels={"rack": ""}), "servers[0].labels"),
        (lambda d: d["placement_rules"][0].update(rule="colocate"), "placement_rules[0]"),
        (lambda d: d["placement_rules"][1].pop("with_tag"), "placement_rules[1]"),
        (lambda d: d["placement_rules"][0].update(penalty=-1), "placement_rules[0]"),
        # beyond HiGHS's tolerances (a feasible model was reported infeasible)
        (
            lambda d: d["jobs"][1].update(
                profile=[{"cpus_per_gpu": 3, "mem_gb_per_gpu": 62.5, "throughput": 1e12}]
            ),
            "jobs[1].profile[0]",
        ),
        (
            lambda d: (
                [s.update(cost_per_hour=1.0) for s in d["servers"]]
                and d["servers"][2].update(cost_per_hour=1e11)
            ),
            "servers[2].cost_per_hour",
        ),
    ],
)
def test_bad_rule_fields_name_the_field(patch, field: str) -> None:
    data = _conflict_data()
    data["placement_rules"] = [
        {"rule": "anti_affinity", "tag": "db"},
        {"rule": "affinity", "tag": "db", "with_tag": "cache"},
    ]
    patch(data)
    with pytest.raises(InstanceError) as exc:
        MultiResourceInstance.from_dict(data)
    assert field in str(exc.value)


def test_min_cost_needs_costs_in_validate_and_solve(tmp_path: Path) -> None:
    data = _conflict_data()
    data["placement_rules"] = []
    p = tmp_path / "nocost.json"
    p.write_text(json.dumps(data))
    run = CliRunner().invoke
    assert run(main, ["validate", str(p)]).exit_code == 0
    r = run(main, ["validate", str(p), "-O", "min_cost"])
    assert r.exit_code == 3 and "servers[0].cost_per_hour" in r.output
    r = run(main, ["solve", str(p), "-O", "min_cost"])
    assert r.exit_code == 3 and "servers[0].cost_per_hour" in r.output
    with pytest.raises(InstanceError):
        hetopt.export_model(data, tmp_path / "m.lp", objective="min_cost")
    for s in data["servers"]:
        s["cost_per_hour"] = 2.0
    p.write_text(json.dumps(data))
    assert run(main, ["validate", str(p), "-O", "min_cost"]).exit_code == 0
    r = run(main, ["solve", str(p), "-O", "min_cost", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["objective_value"] == pytest.approx(4.0)  # 5 GPUs on 4-GPU servers


def test_penalty_beyond_the_throughputs_range_is_exit_3_naming_it(tmp_path: Path) -> None:
    """A soft penalty more than MAX_RANGE times the smallest throughput is refused
    (max_total_throughput: at 1e11 HiGHS failed, or called the model infeasible);
    at the limit it solves, and min_cost, which solved at every ratio, is not limited."""
    from hetopt.kinds.multi_resource.data import MAX_RANGE

    root = Path(__file__).resolve().parents[3] / "instances" / "multi_resource"
    data = json.loads((root / "rules.json").read_text())
    smallest = min(p["throughput"] for j in data["jobs"] for p in j["profile"])
    assert data["placement_rules"][1]["hard"] is False
    data["placement_rules"][1]["penalty"] = MAX_RANGE * smallest
    res = solve(data)
    assert res.status == Status.OPTIMAL and res.verification.ok
    # the penalty dominates: the fewest violations the rules allow (one, as at 0.25)
    assert res.info["total_penalty"] == pytest.approx(MAX_RANGE * smallest)
    data["placement_rules"][1]["penalty"] = 100 * MAX_RANGE * smallest
    p = tmp_path / "pen.json"
    p.write_text(json.dumps(data))
    run = CliRunner().invoke
    for cmd in ("validate", "solve"):
        r = run(main, [cmd, str(p)])
        assert r.exit_code == 3, r.output
        assert "placement_rules[1].penalty" in r.output and "hard" in r.output
    with pytest.raises(InstanceError, match=r"placement_rules\[1\]\.penalty"):
        hetopt.solve(data)
    hard = {**data, "placement_rules": [dict(r) for r in data["placement_rules"]]}
    hard["placement_rules"][1]["hard"] = True  # a hard rule's penalty is not in the model
    p.write_text(json.dumps(hard))
    assert run(main, ["validate", str(p)]).exit_code == 0
    cheap = solve(data, "min_cost")
    assert cheap.status == Status.OPTIMAL and cheap.verification.ok
    assert cheap.info["total_penalty"] == pytest.approx(100 * MAX_RANGE * smallest)


# ---------------------------------------------------------------- model structure
def test_jobs_with_different_tags_are_never_one_class() -> None:
    prof = [{"cpus_per_gpu": 3, "mem_gb_per_gpu": 62.5, "throughput": 1.0}]
    jobs = [
        {"id": "x0", "gpus": 1, "profile": prof},
        {"id": "x1", "gpus": 1, "profile": prof},
        {"id": "d0", "gpus": 1, "profile": prof, "tags": ["db"]},
        {"id": "d1", "gpus": 1, "profile": prof, "tags": ["db"]},
        {"id": "w0", "gpus": 1, "profile": prof, "tags": ["db", "web"]},
    ]
    data = {"kind": "multi_resource", "servers": _conflict_data()["servers"], "jobs": jobs}
    arr = MultiResourceInstance.from_dict(data).arrays
    classes = [sorted(arr.job_ids[j] for j in c) for c in F.job_classes(arr, np.arange(5))]
    assert sorted(classes) == [["d0", "d1"], ["w0"], ["x0", "x1"]]


def test_symmetry_keeps_apart_servers_in_different_groups() -> None:
    data = _conflict_data()
    arr = MultiResourceInstance.from_dict(data).arrays
    assert len(F.interchangeable_servers(arr)) == 0  # racks r0, r1, r0 alternate
    data["placement_rules"] = [{"rule": "anti_affinity", "tag": "db"}]  # server scope
    arr = MultiResourceInstance.from_dict(data).arrays
    assert list(F.interchangeable_servers(arr)) == [0, 1]
    for i, s in enumerate(data["servers"]):
        s["cost_per_hour"] = float(i)
    arr = MultiResourceInstance.from_dict(data).arrays
    assert list(F.interchangeable_servers(arr, F.MIN_COST)) == []


def test_labels_and_costs_alone_leave_the_model_unchanged(tmp_path: Path) -> None:
    base = generate(8, 3, seed=1).to_dict()
    decorated = json.loads(json.dumps(base))
    for i, s in enumerate(decorated["servers"]):
        s["labels"] = {"rack": f"r{i % 2}"}
        s["cost_per_hour"] = 1.0 + i
    a, b = tmp_path / "a.mps", tmp_path / "b.mps"
    hetopt.export_model(base, a)
    hetopt.export_model(decorated, b)
    assert a.read_bytes() == b.read_bytes()
    # tags split the job classes (never merged across tags) but change no optimum
    for j in decorated["jobs"][:3]:
        j["tags"] = ["db"]
    assert solve(decorated).objective_value == pytest.approx(solve(base).objective_value)


def _exported_objective(data: dict, objective: str, path: Path) -> float:
    hetopt.export_model(data, path, objective=objective)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("threads", 1)
    h.readModel(str(path))
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return float(h.getInfo().objective_function_value)


@pytest.mark.parametrize("fmt", ["lp", "mps"])
def test_exported_objective_equals_the_reported_one(fmt: str, tmp_path: Path) -> None:
    data = _conflict_data()
    data["placement_rules"] = [
        {"rule": "anti_affinity", "tag": "db", "scope": "rack", "hard": False, "penalty": 0.4},
        {"rule": "affinity", "tag": "db", "with_tag": "cache", "hard": False, "penalty": 0.25},
    ]
    for i, s in enumerate(data["servers"]):
        s["cost_per_hour"] = 1.5 + i
    for objective in ("max_total_throughput", "min_cost"):
        res = solve(data, objective)
        assert res.status == Status.OPTIMAL and res.verification.ok
        assert res.info["total_penalty"] > 0
        got = _exported_objective(data, objective, tmp_path / f"{objective}.{fmt}")
        assert got == pytest.approx(res.objective_value, abs=1e-7)


def test_verifier_catches_broken_rules_and_wrong_violations() -> None:
    from dataclasses import replace

    data = _conflict_data()
    data["placement_rules"] = [
        {"rule": "anti_affinity", "tag": "db"},
        {
            "rule": "spread",
            "tag": "db",
            "scope": "rack",
            "max_skew": 0,
            "hard": False,
            "penalty": 0.5,
        },
    ]
    inst = MultiResourceInstance.from_dict(data)
    res = KIND.solve(inst, "max_total_throughput", EXACT)
    assert res.verification.ok and res.info["rule_violations"] == 1  # 3 db over 2 racks
    place = res.tables["placement"].copy()
    db = place["job"].str.startswith("db")
    place.loc[db, "server"] = "s0"  # every db job on one server: breaks anti_affinity
    bad = KIND.verify(inst, replace(res, tables={**res.tables, "placement": place}))
    assert not bad.ok and any("placement_rules[0]" in v for v in bad.violations)
    viol = res.tables["violations"].copy()
    viol["violations"] = 0
    bad = KIND.verify(inst, replace(res, tables={**res.tables, "violations": viol}))
    assert not bad.ok
    no_table = {k: v for k, v in res.tables.items() if k != "violations"}
    assert not KIND.verify(inst, replace(res, tables=no_table)).ok
    assert not KIND.verify(inst, replace(res, objective_value=res.objective_value + 0.5)).ok


def test_fragmentation_keeps_the_penalised_optimum() -> None:
    data = _conflict_data()
    data["placement_rules"] = [
        {"rule": "anti_affinity", "tag": "db", "hard": False, "penalty": 0.3},
    ]
    a = solve(data, fragmentation=True)
    b = solve(data, fragmentation=False)
    assert a.objective_value == pytest.approx(b.objective_value)
    assert a.info["fragmentation_status"] == "optimal"
    assert a.info["servers_used"] <= b.info["servers_used"]


def test_greedy_start_respects_hard_caps_and_is_feasible() -> None:
    from hetopt.highs import compile_model
    from hetopt.kinds.multi_resource import heuristic as H

    inst = generate(30, 6, seed=4, racks=3, tagged_fraction=0.3, cost_per_hour=2.0)
    rules = [
        {"rule": "anti_affinity", "tag": "db"},
        {"rule": "max_per_group", "tag": "web", "scope": "rack", "max_per_group": 3},
        {
            "rule": "spread",
            "tag": "cache",
            "scope": "rack",
            "max_skew": 5,
            "hard": False,
            "penalty": 0.1,
        },
    ]
    inst = MultiResourceInstance.from_dict({**inst.to_dict(), "placement_rules": rules})
    arr = inst.arrays
    for objective, packing in (
        (F.MAX_THROUGHPUT, H.greedy_packing(arr, {})),
        (F.MIN_COST, H.cost_packing(arr)),
    ):
        assert packing is not None
        built = F.build_integrated(arr, True, objective)
        cm = compile_model(built.model)
        x = H.start_vector(arr, built.model, cm, packing, built.layout)
        assert x is not None
        ax = cm.A @ x
        assert (ax >= cm.row_lower - 1e-7).all() and (ax <= cm.row_upper + 1e-7).all()
        assert (x >= cm.col_lower - 1e-9).all() and (x <= cm.col_upper + 1e-9).all()


# ---------------------------------------------------------------- generator
def test_generator_rules_options_are_seeded_and_leave_the_default_alone() -> None:
    assert (
        generate(12, 3, seed=2).to_dict() == generate(12, 3, seed=2, tagged_fraction=0.0).to_dict()
    )
    inst = generate(20, 4, seed=2, racks=2, tagged_fraction=0.25, cost_per_hour=3.0)
    assert (
        inst.to_dict()
        == generate(20, 4, seed=2, racks=2, tagged_fraction=0.25, cost_per_hour=3.0).to_dict()
    )
    base = generate(20, 4, seed=2).to_dict()
    d = inst.to_dict()
    assert [j["profile"] for j in d["jobs"]] == [j["profile"] for j in base["jobs"]]
    assert [s["labels"]["rack"] for s in d["servers"]] == ["r0", "r0", "r1", "r1"]
    assert {s["cost_per_hour"] for s in d["servers"]} == {3.0}
    assert sum(1 for j in d["jobs"] if j.get("tags")) == 5


def test_cli_generate_with_rules(tmp_path: Path) -> None:
    out = tmp_path / "g.json"
    rule = '{"rule": "anti_affinity", "tag": "db", "scope": "rack", "hard": false, "penalty": 0.5}'
    args = ["generate", "multi-resource", "--jobs", "12", "--servers", "4", "--racks", "2"]
    args += ["--tagged-fraction", "0.5", "--cost-per-hour", "2", "--rule", rule, "-o", str(out)]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    d = json.loads(out.read_text())
    assert d["placement_rules"][0]["scope"] == "rack"
    r = CliRunner().invoke(main, ["solve", str(out), "-O", "min_cost", "--json"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, [*args[:-2], "--rule", "{not json"])
    assert r.exit_code in (2, 3) and "Traceback" not in r.output


# ---------------------------------------------------------------- shipped instance
def test_shipped_rules_instance_known_answers() -> None:
    root = Path(__file__).resolve().parents[3] / "instances" / "multi_resource"
    answers = json.loads((root / "answers.json").read_text())["rules.json"]
    data = json.loads((root / "rules.json").read_text())
    res = hetopt.solve(root / "rules.json", options=EXACT)
    assert res.status == Status.OPTIMAL
    assert res.objective_value == pytest.approx(answers["objective_value"])
    assert res.info["total_penalty"] == pytest.approx(0.25)
    cheap = hetopt.solve(root / "rules.json", "min_cost", EXACT)
    assert cheap.objective_value == pytest.approx(answers["min_cost"])
    assert set(cheap.placement["server"]) == {"s0", "s2"}
    free = {**data, "placement_rules": []}
    assert solve(free, "min_cost").objective_value == pytest.approx(5.0)


def test_partitioned_solve_refuses_rules_and_min_cost() -> None:
    """Rules span parts and min_cost is no sum over parts: --partitions > 1 refuses both
    with a usage error rather than a part-wise answer (or a false infeasibility)."""
    from hetopt.decompose import solve_decomposed
    from hetopt.errors import UsageError

    inst = hetopt.read_instance("instances/multi_resource/rules.json")
    with pytest.raises(UsageError, match="placement_rules"):
        solve_decomposed(inst, "max_total_throughput", partitions=2)
    plain = hetopt.read_instance("instances/multi_resource/rules.json").model_copy(
        update={"placement_rules": None}
    )
    with pytest.raises(UsageError, match="min_cost"):
        solve_decomposed(plain, "min_cost", partitions=2)
    one = solve_decomposed(inst, "max_total_throughput", partitions=1)
    assert one.verification.ok


@pytest.mark.parametrize("objective", ["max_total_throughput", "min_cost"])
def test_failed_milp_returns_the_start_as_feasible(monkeypatch, objective: str) -> None:
    """When HiGHS's main run fails after it was handed the warm start, the start comes
    back as a verified ``feasible`` plan (it was dropped: status error, no tables);
    without a start the failure stays ``error``."""
    import dataclasses

    from hetopt.pipeline import Session

    run_highs = Session.run_highs

    def failing(self, live, options=None, lp_method="auto", stage="main", unscale=None):  # type: ignore[no-untyped-def]
        view = run_highs(self, live, options, lp_method, stage, unscale)
        if stage != "main":
            return view
        raw = dataclasses.replace(
            view.raw,
            status=Status.ERROR,
            termination="HiGHS run failed (Solve error)",
            objective=None,
            bound=None,
            gap=None,
            x=None,
            row_dual=None,
        )
        return live.view(raw)

    monkeypatch.setattr(Session, "run_highs", failing)
    root = Path(__file__).resolve().parents[3] / "instances" / "multi_resource"
    data = json.loads((root / "rules.json").read_text())
    res = solve(data, objective)
    assert res.status == Status.FEASIBLE, res.termination
    assert "Solve error" in res.termination and "warm start" in res.termination
    assert res.verification.ok, res.verification.violations
    assert len(res.tables["placement"]) == len(data["jobs"])
    if objective == "min_cost":
        # the start's server cost, plus its soft rules' penalties
        start = res.info["start_cost"] + res.info["total_penalty"]
        assert res.objective_value == pytest.approx(start)
    else:
        assert "neighbourhood search" in res.termination
        assert res.objective_value == pytest.approx(res.info["lns_objective"])
        assert res.bound is not None and res.bound >= res.objective_value  # the knapsack's
    bare = solve(data, objective, warm_start=False)
    assert bare.status == Status.ERROR and not bare.tables.get("placement", [])
