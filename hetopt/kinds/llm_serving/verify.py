"""Independent verifier of ``llm_serving`` results.

Reads only the instance, the result tables and the facts the result declares about what
was solved (``info``: ``model``, ``target_utilization``, ``change_cost_per_instance``);
never the Pyomo model, the numpy views or the formulation's layout. It re-derives:

* every routing row names a known bucket and a GPU type that can serve it (has a
  ``throughput_rps`` entry; for ``pd_split``, the pool's token rate), with a rate >= 0;
* every bucket's whole rate is routed (per pool for ``pd_split``); with integer slices,
  each of a bucket's ``slice_factor`` slices is routed exactly once at ``rate / F``;
* instance counts are whole, within stock, and carry their load: ``sum rate / throughput
  <= target * count`` per type (``min_cost``, provisioning), every positive rate on a
  deployed type and the counts equal to ``deployed`` (routing), token capacities, KV links,
  stock and power (``pd_split``);
* the ``cost_per_hour`` of every row and the objective are recomputed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ...result import Verification
from .data import LlmServingInstance

REL = 1e-6
ABS = 1e-7


def _close(a: float, b: float, scale: float = 1.0) -> bool:
    return abs(a - b) <= REL * max(abs(a), abs(b), scale) + ABS


def _le(a: float, b: float) -> bool:
    return a <= b + REL * max(abs(a), abs(b), 1.0) + ABS


def verify(
    instance: LlmServingInstance,
    objective: str,
    objective_value: float | None,
    tables: Mapping[str, pd.DataFrame],
    info: Mapping[str, Any],
) -> Verification:
    problems: list[str] = []
    checks = ["routing_rows", "whole_rate_routed", "instance_counts", "capacity", "objective"]
    model = str(info.get("model", ""))
    target = float(info.get("target_utilization", 1.0))
    gpus = {g.type: g for g in instance.gpus}
    buckets = {b.id: b for b in instance.buckets}
    Fs = instance.slice_factor
    pd_split = objective == "pd_split"

    routing = tables.get("routing")
    inst_table = tables.get("instances")
    if routing is None or inst_table is None:
        return Verification(False, None, ("tables 'routing' and 'instances' are required",), ())

    # ---- instances: counts per (type, pool)
    counts: dict[tuple[str, str], int] = {}
    for r in inst_table.to_dict("records"):
        t, pool = str(r["gpu_type"]), str(r.get("pool", "") or "")
        if t not in gpus:
            problems.append(f"instances: unknown GPU type {t!r}")
            continue
        n = r["count"]
        if (isinstance(n, float) and not float(n).is_integer()) or int(n) < 0:
            problems.append(f"instances: {t} count {n} is not a whole number >= 0")
            continue
        n = int(n)
        if (t, pool) in counts:
            problems.append(f"instances: {t} {pool} listed twice")
        counts[(t, pool)] = n
        if not _close(float(r["cost_per_hour"]), n * gpus[t].cost_per_hour):
            problems.append(
                f"instances: {t} {pool} costs {r['cost_per_hour']} $/h, "
                f"{n} x {gpus[t].cost_per_hour} = {n * gpus[t].cost_per_hour}"
            )
    per_type: dict[str, int] = defaultdict(int)
    for (t, _), n in counts.items():
        per_type[t] += n
    for t, n in per_type.items():
        stock = gpus[t].available
        if stock is not None and n > stock:
            problems.append(f"instances: {n} of {t} but only {stock} available")

    # ---- routing rows
    rates: dict[tuple[str, str], float] = defaultdict(float)
    load: dict[tuple[str, str], float] = defaultdict(float)
    tokens: dict[tuple[str, str], float] = defaultdict(float)
    slices_seen: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for r in routing.to_dict("records"):
        bid, t = str(r["bucket"]), str(r["gpu_type"])
        pool = str(r.get("pool", "") or "")
        rate = float(r["rate_rps"])
        if bid not in buckets or t not in gpus:
            problems.append(f"routing: unknown bucket {bid!r} or GPU type {t!r}")
            continue
        b = buckets[bid]
        if not rate >= -ABS:
            problems.append(f"routing: bucket {bid} on {t}: negative rate {rate}")
            continue
        rates[(bid, pool)] += rate
        if pd_split:
            g = gpus[t]
            tok_b = b.input_tokens if pool == "prefill" else b.output_tokens
            cap = g.prefill_tokens_s if pool == "prefill" else g.decode_tokens_s
            if pool not in ("prefill", "decode"):
                problems.append(f"routing: bucket {bid}: pool {pool!r} is not prefill/decode")
            elif rate > ABS and (cap is None or tok_b is None):
                problems.append(f"routing: {t} cannot run the {pool} of bucket {bid}")
            else:
                tokens[(t, pool)] += rate * float(tok_b or 0.0)
            continue
        tp = b.throughput_rps.get(t)
        if tp is None:
            problems.append(f"routing: {t} cannot serve bucket {bid} (no throughput_rps entry)")
            continue
        load[(t, "")] += rate / tp
        slices_seen[bid].append((int(r["slice"]), rate))

    # ---- every bucket's whole rate
    pools = ("prefill", "decode") if pd_split else ("",)
    for bid, b in buckets.items():
        for pool in pools:
            if pd_split:
                tok = b.input_tokens if pool == "prefill" else b.output_tokens
                if not tok or b.rate_rps == 0:
                    continue
            got = rates.get((bid, pool), 0.0)
            if not _close(got, b.rate_rps, 1e-9):
                where = f" ({pool})" if pool else ""
                problems.append(
                    f"bucket {bid}{where}: {got:.9g} req/s routed, rate is {b.rate_rps}"
                )
        if not pd_split and not any(k[0] == bid for k in rates):
            problems.append(f"bucket {bid} is missing from the routing table")
    if pd_split:
        listed = {str(x) for x in routing["bucket"]} if len(routing) else set()
        for bid in buckets:
            if bid not in listed:
                problems.append(f"bucket {bid} is missing from the routing table")

    # ---- integer slices: each slice exactly once at rate / F
    if model in ("min_cost/aggregated", "min_cost/binary"):
        checks.append("slices")
        for bid, b in buckets.items():
            seen = sorted(slices_seen.get(bid, []))
            if [s for s, _ in seen] != list(range(Fs)):
                problems.append(
                    f"bucket {bid}: slices {[s for s, _ in seen]}, expected 0..{Fs - 1}"
                )
            elif any(not _close(rt, b.rate_rps / Fs, 1e-9) for _, rt in seen):
                problems.append(f"bucket {bid}: a slice's rate is not {b.rate_rps}/{Fs}")

    # ---- capacity and objective
    value: float | None = None
    if pd_split:
        kv = instance.kv_gb_per_token
        total_p = sum(b.rate_rps * (b.input_tokens or 0.0) for b in buckets.values())
        power = 0.0
        for (t, pool), n in counts.items():
            g = gpus[t]
            cap = g.prefill_tokens_s if pool == "prefill" else g.decode_tokens_s
            tok = tokens.get((t, pool), 0.0)
            if cap is None:
                if n > 0:
                    problems.append(f"{t} has no {pool}_tokens_s but {n} {pool} instances")
                continue
            if not _le(tok, target * cap * n):
                problems.append(
                    f"{pool} pool of {t}: {tok:.9g} tokens/s > {target} x {cap} x {n} instances"
                )
            if kv is not None and g.kv_link_gb_s is not None and tok > 0:
                # KV cache of the pool's requests: sent by prefill, received by decode
                share = tok / sum(v for (tt, pp), v in tokens.items() if pp == pool)
                gb_s = kv * total_p * share
                if not _le(gb_s, g.kv_link_gb_s * n):
                    problems.append(
                        f"{pool} pool of {t}: {gb_s:.9g} GB/s of KV cache > "
                        f"{g.kv_link_gb_s} x {n} instances"
                    )
            power += n * (g.power_w or 0.0)
        for t, pool in tokens:
            if (t, pool) not in counts and tokens[(t, pool)] > ABS:
                problems.append(f"{pool} tokens routed to {t}, which has no {pool} pool")
        if instance.power_cap_w is not None:
            checks.append("power")
            if not _le(power, instance.power_cap_w):
                problems.append(f"power {power:.9g} W exceeds the cap {instance.power_cap_w} W")
        value = sum(n * gpus[t].cost_per_hour for (t, _), n in counts.items())
    elif model == "routing":
        dep = instance.deployed or {}
        umax = 0.0
        for t in gpus:
            n = counts.get((t, ""), 0)
            if n != dep.get(t, 0):
                problems.append(f"instances: {n} of {t} listed, {dep.get(t, 0)} deployed")
            lt = load.get((t, ""), 0.0)
            if n == 0:
                if lt > ABS:
                    problems.append(f"requests routed to {t}, which has no deployed instance")
                continue
            umax = max(umax, lt / n)
        value = umax
    else:
        for t in gpus:
            n = counts.get((t, ""), 0)
            lt = load.get((t, ""), 0.0)
            if not _le(lt, target * n):
                problems.append(
                    f"{t}: load {lt:.9g} instances > {target} x {n} instances (capacity)"
                )
        if model == "provision/count":
            value = float(sum(counts.values()))
        else:
            value = sum(n * gpus[t].cost_per_hour for (t, _), n in counts.items())
            per_change = float(info.get("change_cost_per_instance", 0.0) or 0.0)
            if per_change > 0:
                checks.append("change_cost")
                dep = instance.deployed or {}
                changed = sum(abs(counts.get((t, ""), 0) - dep.get(t, 0)) for t in gpus)
                value += per_change * changed

    # ---- utilisation table, if present
    util = tables.get("utilization")
    if util is not None and not pd_split:
        checks.append("utilization_table")
        for r in util.to_dict("records"):
            t = str(r["gpu_type"])
            lt = load.get((t, ""), 0.0)
            n = int(r["count"])
            if not _close(float(r["count_used"]), lt):
                problems.append(f"utilization: {t} uses {r['count_used']}, routing gives {lt:.9g}")
            want = lt / n if n else 0.0
            if not _close(float(r["utilization"]), want):
                problems.append(f"utilization: {t} is {r['utilization']}, routing gives {want:.9g}")

    if value is None or objective_value is None or not _close(value, objective_value):
        problems.append(f"objective recomputed as {value}, result says {objective_value}")
    return Verification(
        ok=not problems,
        objective_value=value,
        violations=tuple(problems),
        checks=tuple(checks),
    )
