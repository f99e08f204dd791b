"""``llm_serving`` / ``min_max_load``: the routing LP against an independently written LP
(``scipy.optimize.linprog``), and auto-provisioning against brute force over counts.

The reference LP here is written from the issue's definition only: route fractional rates
``r[b, g] >= 0`` of every bucket over the deployed types that can serve it,
``sum_g r[b, g] = rate_b``, minimise ``L`` with
``sum_b r[b, g] / (throughput[b, g] * deployed_g) <= L``.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linprog

import hetopt
from hetopt import Status

DIR = Path(__file__).resolve().parents[3] / "instances" / "llm_serving"


def random_deployment(rng: random.Random, types: int, buckets: int) -> dict:
    names = [f"g{j}" for j in range(types)]
    bs = []
    for b in range(buckets):
        servable = [n for n in names if rng.random() < 0.6] or [rng.choice(names)]
        bs.append(
            {
                "id": f"b{b}",
                "rate_rps": round(rng.uniform(0.0, 20.0), 3),
                "throughput_rps": {n: round(rng.uniform(0.5, 12.0), 3) for n in servable},
            }
        )
    gpus = [
        {
            "type": n,
            "cost_per_hour": round(rng.uniform(0.5, 7.0), 2),
            "available": rng.randint(1, 6),
        }
        for n in names
    ]
    deployed = {n: rng.randint(0, g["available"]) for n, g in zip(names, gpus, strict=True)}
    return {"kind": "llm_serving", "gpus": gpus, "buckets": bs, "deployed": deployed}


def reference_min_max_load(d: dict) -> float | None:
    """min L over r >= 0 (columns: r[b, g] for deployed servable pairs, then L)."""
    names = [g["type"] for g in d["gpus"]]
    dep = d["deployed"]
    pairs = [
        (b, g)
        for b, bk in enumerate(d["buckets"])
        for g, n in enumerate(names)
        if n in bk["throughput_rps"] and dep.get(n, 0) > 0
    ]
    nvar = len(pairs) + 1
    A_eq = np.zeros((len(d["buckets"]), nvar))
    b_eq = np.array([bk["rate_rps"] for bk in d["buckets"]])
    A_ub = np.zeros((len(names), nvar))
    for k, (b, g) in enumerate(pairs):
        A_eq[b, k] = 1.0
        n = names[g]
        A_ub[g, k] = 1.0 / (d["buckets"][b]["throughput_rps"][n] * dep[n])
    A_ub[:, -1] = -1.0
    c = np.zeros(nvar)
    c[-1] = 1.0
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(len(names)), A_eq=A_eq, b_eq=b_eq, method="highs")
    if res.status == 2:
        return None
    assert res.status == 0, res.message
    return float(res.fun)


@pytest.mark.parametrize("seed", range(12))
def test_routing_lp_matches_an_independent_lp(seed: int) -> None:
    rng = random.Random(seed)
    d = random_deployment(rng, rng.randint(1, 4), rng.randint(1, 8))
    expected = reference_min_max_load(d)
    r = hetopt.solve(d, "min_max_load")
    if expected is None:
        assert r.status == Status.INFEASIBLE
        return
    assert r.status == Status.OPTIMAL and r.verification.ok, r.verification.violations
    assert r.objective_value == pytest.approx(expected, rel=1e-7, abs=1e-9)
    # every bucket's whole rate is routed, only over deployed types
    got = r.routing.groupby("bucket")["rate_rps"].sum()
    for b in d["buckets"]:
        assert got[b["id"]] == pytest.approx(b["rate_rps"], abs=1e-7)
    used = set(r.routing.loc[r.routing["rate_rps"] > 0, "gpu_type"])
    assert used <= {n for n, k in d["deployed"].items() if k > 0}
    assert r.info["max_utilization"] == pytest.approx(r.utilization["utilization"].max())


def test_routing_known_answer_9_over_11() -> None:
    """3 A10G + 1 A100 on Mélange's workload: the A100 takes in0_out1, in0_out0, in1_out1
    (load 0.75) and 30/11 req/s of in1_out0; both types end at 9/11 (README.md)."""
    r = hetopt.solve(DIR / "melange_deployed.json")
    assert r.objective_value == pytest.approx(9 / 11, rel=1e-9)
    util = dict(zip(r.utilization["gpu_type"], r.utilization["utilization"], strict=True))
    assert util == pytest.approx({"A10G": 9 / 11, "A100-80GB": 9 / 11})


def test_bucket_no_deployed_type_serves_is_infeasible() -> None:
    d = json.loads((DIR / "melange_deployed.json").read_text())
    d["deployed"] = {"A10G": 3}
    d["buckets"][0]["throughput_rps"] = {"A100-80GB": 20}
    r = hetopt.solve(d, "min_max_load")
    assert r.status == Status.INFEASIBLE


# ----------------------------------------------------------------------------- provisioning
def brute_force_provision(d: dict, target: float, by: str, limit: int = 6) -> float | None:
    """Enumerate counts; keep those for which the reference LP routes everything with
    every utilisation <= target."""
    names = [g["type"] for g in d["gpus"]]
    best = None
    ranges = [range(min(limit, g.get("available", limit)) + 1) for g in d["gpus"]]
    for counts in itertools.product(*ranges):
        dep = {n: c for n, c in zip(names, counts, strict=True) if c}
        if not dep:
            if any(b["rate_rps"] > 0 for b in d["buckets"]):
                continue
            util = 0.0
        else:
            util = reference_min_max_load({**d, "deployed": dep})
        if util is None or util > target + 1e-9:
            continue
        value = (
            sum(counts)
            if by == "count"
            else sum(c * g["cost_per_hour"] for c, g in zip(counts, d["gpus"], strict=True))
        )
        best = value if best is None else min(best, value)
    return best


@pytest.mark.parametrize("seed", range(6))
def test_provisioning_matches_brute_force(seed: int) -> None:
    rng = random.Random(50 + seed)
    d = random_deployment(rng, rng.randint(1, 3), rng.randint(1, 4))
    for g in d["gpus"]:
        g["available"] = 4
    del d["deployed"]
    by = "count" if seed % 2 else "cost"
    target = rng.choice([1.0, 0.8])
    expected = brute_force_provision(d, target, by, limit=4)
    r = hetopt.solve(d, "min_max_load", provision=by, target_utilization=target)
    if expected is None:
        assert r.status == Status.INFEASIBLE
        return
    assert r.status == Status.OPTIMAL and r.verification.ok, r.verification.violations
    assert r.objective_value == pytest.approx(expected, abs=1e-7)
    assert r.info["model"] == f"provision/{by}" and r.info["routing_status"] == "optimal"
    # the second stage balances the provisioned instances: its max utilisation is the LP's
    counts = dict(zip(r.instances["gpu_type"], r.instances["count"], strict=True))
    balanced = reference_min_max_load({**d, "deployed": counts}) if sum(counts.values()) else 0
    assert r.info["max_utilization"] == pytest.approx(balanced, abs=1e-7)
    assert r.info["max_utilization"] <= target + 1e-7


@pytest.mark.parametrize(
    ("objective", "params"),
    [
        ("min_cost", {}),
        ("min_cost", {"slices": "binary"}),
        ("min_cost", {"slices": "continuous"}),
        ("min_max_load", {}),
        ("min_max_load", {"provision": "cost"}),
        ("pd_split", {}),
    ],
)
def test_zero_workload_lists_every_bucket(objective: str, params: dict) -> None:
    """No requests: nothing to rent, and every bucket still appears (rate 0) in the
    routing, also when nothing that could serve it is deployed."""
    d = json.loads((DIR / "pd_split_example.json").read_text())
    for b in d["buckets"]:
        b["rate_rps"] = 0.0
    d["deployed"] = {"A10G": 0}
    r = hetopt.solve(d, objective, **params)
    assert r.status == Status.OPTIMAL and r.verification.ok, r.verification.violations
    assert r.objective_value == 0.0
    assert set(r.routing["bucket"]) == {"short", "long"}
    assert (r.routing["rate_rps"] == 0).all()
