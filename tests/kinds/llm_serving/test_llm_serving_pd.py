"""``llm_serving`` / ``pd_split``: prefill and decode pools by brute force over the pool
sizes.

Written from the issue's definition: integer pools per type covering
``P = sum_b rate_b input_tokens_b`` prompt tokens/s and ``D = sum_b rate_b output_tokens_b``
generated tokens/s. The token work of a pool may be split over its types in any shares,
so a choice of pool sizes is feasible iff the pools' capacities add up. With a KV-cache
size ``kv`` GB/token, a prefill instance of type g sends at most ``kv_link_gb_s`` GB/s
(capacity ``min(target prefill_tokens_s, kv_link_gb_s / kv)`` tokens/s), and a decode pool
that decodes a share ``s`` of the tokens receives ``s kv P`` GB/s.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path

import pytest

import hetopt
from hetopt import InstanceError, Status

DIR = Path(__file__).resolve().parents[3] / "instances" / "llm_serving"


def _alone(need: float, per_instance: float) -> int:
    """Instances of one type that cover ``need`` alone: no optimal pool (costs > 0) has
    more of that type, since one fewer would still cover it."""
    return math.ceil(need / per_instance - 1e-9) if need > 0 else 0


def brute_force_pd(d: dict, target: float = 1.0) -> float | None:
    gpus = d["gpus"]
    P = sum(b["rate_rps"] * b["input_tokens"] for b in d["buckets"])
    D = sum(b["rate_rps"] * b["output_tokens"] for b in d["buckets"])
    kv = d.get("kv_gb_per_token")
    cap = d.get("power_cap_w")
    best = None
    pre_ranges, dec_ranges = [], []
    for g in gpus:
        link = g.get("kv_link_gb_s") if kv is not None else None
        pc = target * g["prefill_tokens_s"]
        dc = target * g["decode_tokens_s"]
        if link is not None:
            pc = min(pc, link / kv)
            dc = min(dc, link / (kv * P) * D) if P > 0 else dc
        stock = g.get("available", 10**9)
        pre_ranges.append(range(min(stock, _alone(P, pc)) + 1))
        dec_ranges.append(range(min(stock, _alone(D, dc)) + 1))
    for pre in itertools.product(*pre_ranges):
        for dec in itertools.product(*dec_ranges):
            if any(
                g.get("available") is not None and p + q > g["available"]
                for g, p, q in zip(gpus, pre, dec, strict=True)
            ):
                continue
            if any(p and "prefill_tokens_s" not in g for g, p in zip(gpus, pre, strict=True)):
                continue
            if any(q and "decode_tokens_s" not in g for g, q in zip(gpus, dec, strict=True)):
                continue
            if (
                cap is not None
                and sum((p + q) * g["power_w"] for g, p, q in zip(gpus, pre, dec, strict=True))
                > cap + 1e-9
            ):
                continue
            pcap = 0.0
            dshare = 0.0
            for g, p, q in zip(gpus, pre, dec, strict=True):
                link = g.get("kv_link_gb_s")
                if p:
                    c = target * g["prefill_tokens_s"]
                    if kv is not None and link is not None:
                        c = min(c, link / kv)
                    pcap += p * c
                if q:
                    s = target * g["decode_tokens_s"] / D if D > 0 else float("inf")
                    if kv is not None and link is not None and P > 0:
                        s = min(s, link / (kv * P))
                    dshare += q * s
            if (P > 0 and pcap < P - 1e-9) or (D > 0 and dshare < 1 - 1e-9):
                continue
            cost = sum((p + q) * g["cost_per_hour"] for g, p, q in zip(gpus, pre, dec, strict=True))
            best = cost if best is None else min(best, cost)
    return best


def random_pd(rng: random.Random) -> dict:
    types = rng.randint(1, 3)
    gpus = []
    for j in range(types):
        g = {
            "type": f"g{j}",
            "cost_per_hour": round(rng.uniform(0.5, 6.0), 2),
            "prefill_tokens_s": float(rng.choice([1500, 3000, 6000, 9000])),
            "decode_tokens_s": float(rng.choice([300, 600, 1200, 2000])),
            "power_w": float(rng.choice([150, 300, 450, 700])),
        }
        if rng.random() < 0.4:
            g["available"] = rng.randint(2, 8)
        if rng.random() < 0.5:
            g["kv_link_gb_s"] = float(rng.choice([0.5, 1.0, 3.0]))
        gpus.append(g)
    buckets = [
        {
            "id": f"b{b}",
            "rate_rps": round(rng.uniform(0.1, 3.0), 2),
            "throughput_rps": {"g0": 1.0},
            "input_tokens": float(rng.choice([64, 256, 1024, 3000])),
            "output_tokens": float(rng.choice([16, 128, 400])),
        }
        for b in range(rng.randint(1, 3))
    ]
    d = {"kind": "llm_serving", "gpus": gpus, "buckets": buckets}
    if any("kv_link_gb_s" in g for g in gpus):
        d["kv_gb_per_token"] = rng.choice([0.0001, 0.0005])
    if rng.random() < 0.5:
        d["power_cap_w"] = float(rng.choice([1500, 2500, 4000, 8000]))
    return d


@pytest.mark.parametrize("seed", range(14))
def test_pd_split_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    d = random_pd(rng)
    target = rng.choice([1.0, 0.7])
    expected = brute_force_pd(d, target)
    r = hetopt.solve(d, "pd_split", target_utilization=target)
    if expected is None:
        assert r.status == Status.INFEASIBLE
        return
    assert r.status == Status.OPTIMAL and r.verification.ok, r.verification.violations
    assert r.objective_value == pytest.approx(expected, abs=1e-7), d
    # every bucket's whole rate appears once per pool
    for pool in ("prefill", "decode"):
        got = r.routing[r.routing["pool"] == pool].groupby("bucket")["rate_rps"].sum()
        for b in d["buckets"]:
            assert got[b["id"]] == pytest.approx(b["rate_rps"])


def test_pd_split_example_kv_link_binds() -> None:
    """README.md: 1 A100 prefill + 1 A100 decode = 7.34 $/h; without the KV-link limit
    3 A10G can decode (1260 >= 1112 tokens/s): 3.67 + 3.03 = 6.70 $/h."""
    path = DIR / "pd_split_example.json"
    d = json.loads(path.read_text())
    r = hetopt.solve(path)
    assert r.objective_value == pytest.approx(7.34)
    assert brute_force_pd(d) == pytest.approx(7.34)
    del d["kv_gb_per_token"]
    for g in d["gpus"]:
        del g["kv_link_gb_s"]
    r = hetopt.solve(d)
    assert r.objective_value == pytest.approx(6.70)
    pools = r.pools.set_index(["pool", "gpu_type"])["count"].to_dict()
    assert pools[("decode", "A10G")] == 3 and pools[("prefill", "A100-80GB")] == 1
    assert r.info["prefill_tokens_s"] == pytest.approx(4 * 512 + 1.5 * 3000)
    assert r.info["decode_tokens_s"] == pytest.approx(4 * 128 + 1.5 * 400)


def test_pd_split_needs_token_rates() -> None:
    d = json.loads((DIR / "pd_split_example.json").read_text())
    for g in d["gpus"]:
        del g["decode_tokens_s"]
    with pytest.raises(InstanceError) as info:
        hetopt.solve(d)
    assert "decode_tokens_s" in str(info.value)
