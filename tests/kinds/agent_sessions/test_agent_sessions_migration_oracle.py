"""Independent brute force for ``agent_sessions`` with ``migration=True`` (no hetopt code).

Every GPU for every call (segment) of every session, and for every pause every choice it
has: evict (re-prefill ``n / prefill`` on the GPU of the next call), keep (the calls
before and after on one GPU; the context held there over the pause) or migrate (calls on
``u != v`` with a link ``u -> v`` of rate ``r``: ``n / r`` seconds, the context held on
``v`` over the pause and on ``u`` over ``[a, min(b, a + n / r))``). A session's
``work_s`` is split evenly over its calls; recompute and transfer seconds are charged to
the GPU of the next call. Capacities (with the active batch) are checked by a sweep over
half-open intervals.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

from test_agent_sessions_oracles import fits

EVICT, HOLD = 0, 1


def _allowed(s: dict[str, Any], j: int, gpu: dict[str, Any]) -> bool:
    if s.get("gpu") is not None and s["gpu"] != gpu["id"]:
        return False
    near = [s["pauses"][k]["context_tokens"] for k in (j - 1, j) if 0 <= k < len(s["pauses"])]
    return not near or max(near) <= gpu["kv_capacity_tokens"]


def brute_force_migration(data: dict[str, Any], objective: str) -> float:
    """The exact optimum of ``data`` with migration for ``objective``."""
    gpus = data["gpus"]
    sessions = data["sessions"]
    G = len(gpus)
    rate = {(k["src"], k["dst"]): k["kv_transfer_tokens_s"] for k in data.get("links") or []}
    active = [
        tuple((a["start_s"], a["end_s"], a["tokens"]) for a in g.get("active_kv") or [])
        for g in gpus
    ]
    per_session = []
    for s in sessions:
        calls = len(s["pauses"]) + 1
        options = [[g for g in range(G) if _allowed(s, j, gpus[g])] for j in range(calls)]
        per_session.append(list(itertools.product(*options)))
    pauses = [(i, j, p) for i, s in enumerate(sessions) for j, p in enumerate(s["pauses"])]
    ideal = [
        s.get("work_s", 0.0) + sum(p["end_s"] - p["start_s"] for p in s["pauses"]) for s in sessions
    ]
    best: float | None = None
    for segs in itertools.product(*per_session):
        # which pauses can hold their context, and what holding / evicting costs
        holdable = []
        for i, j, p in pauses:
            u, v = segs[i][j], segs[i][j + 1]
            n = p["context_tokens"]
            evict = n / gpus[v]["prefill_tokens_s"]
            if u == v:
                holdable.append((evict, 0.0, [(v, p["start_s"], p["end_s"], n)]))
            elif (gpus[u]["id"], gpus[v]["id"]) in rate:
                t = n / rate[(gpus[u]["id"], gpus[v]["id"])]
                a, b = p["start_s"], p["end_s"]
                holdable.append((evict, t, [(v, a, b, n), (u, a, min(b, a + t), n)]))
            else:
                holdable.append((evict, None, []))
        choices = [(EVICT, HOLD) if h[1] is not None else (EVICT,) for h in holdable]
        for mask in itertools.product(*choices):
            held: list[list[tuple[float, float, int]]] = [[] for _ in range(G)]
            cost = []
            for (evict, transfer, items), c in zip(holdable, mask, strict=True):
                if c == HOLD:
                    assert transfer is not None
                    cost.append(transfer)
                    for g, a, b, n in items:
                        if b > a:
                            held[g].append((a, b, n))
                else:
                    cost.append(evict)
            if not all(fits(held[g], gpus[g]["kv_capacity_tokens"], active[g]) for g in range(G)):
                continue
            if objective == "min_recompute_s":
                value = sum(cost)
            elif objective == "min_max_load":
                load = [0.0] * G
                for i, s in enumerate(sessions):
                    for g in segs[i]:
                        load[g] += s.get("work_s", 0.0) / len(segs[i])
                for (i, j, _), c in zip(pauses, cost, strict=True):
                    load[segs[i][j + 1]] += c
                value = max(load)
            else:
                per = [0.0] * len(sessions)
                for (i, _, _), c in zip(pauses, cost, strict=True):
                    per[i] += c
                value = -min(
                    ideal[i] / (ideal[i] + per[i]) if ideal[i] + per[i] > 0 else 1.0
                    for i in range(len(sessions))
                )
            if best is None or value < best:
                best = value
    assert best is not None
    return -best if objective == "agent_fair_share" else best


def with_links(data: dict[str, Any], seed: int, fast: bool = True) -> dict[str, Any]:
    """``data`` with a link between every ordered pair of GPUs: rates of 1-8x the fastest
    prefill (``fast``) or at most the slowest prefill (every transfer slower than any
    re-prefill)."""
    rng = random.Random(1000 + seed)
    gpus = data["gpus"]
    hi = max(g["prefill_tokens_s"] for g in gpus)
    lo = min(g["prefill_tokens_s"] for g in gpus)
    links = []
    for u, v in itertools.permutations(range(len(gpus)), 2):
        r = hi * rng.uniform(1.0, 8.0) if fast else lo * rng.uniform(0.2, 1.0)
        links.append({"src": gpus[u]["id"], "dst": gpus[v]["id"], "kv_transfer_tokens_s": r})
    return dict(data, links=links)


# --- the oracle checked against the no-migration oracle ---------------------------------
def test_one_gpu_migration_oracle_equals_affinity_oracle() -> None:
    """With one GPU every call runs there: keep / evict only, the no-migration optimum."""
    from test_agent_sessions_oracles import brute_force, random_instance

    for seed in range(4):
        data = random_instance(seed, sessions=3, pauses=2, gpus=1)
        for objective in ("min_recompute_s", "min_max_load", "agent_fair_share"):
            want = brute_force(data, objective)
            assert abs(brute_force_migration(data, objective) - want) < 1e-9


def test_pinned_sessions_cannot_move() -> None:
    """Every session pinned: the oracle is the no-migration oracle on several GPUs."""
    from test_agent_sessions_oracles import brute_force, random_instance

    for seed in range(3):
        data = with_links(random_instance(seed, sessions=3, pauses=2, gpus=2), seed)
        for k, s in enumerate(data["sessions"]):
            need = max(p["context_tokens"] for p in s["pauses"])
            fit = [g["id"] for g in data["gpus"] if g["kv_capacity_tokens"] >= need]
            s["gpu"] = fit[k % len(fit)]
        for objective in ("min_recompute_s", "min_max_load", "agent_fair_share"):
            want = brute_force(data, objective)
            assert abs(brute_force_migration(data, objective) - want) < 1e-9


def with_busy_gpus(data: dict[str, Any], seed: int, blocks: int = 2) -> dict[str, Any]:
    """``data`` with running batches that fill most of each GPU at random times (the
    GPU a session should hold its context on then changes over time: migration's case)."""
    rng = random.Random(2000 + seed)
    end = max((p["end_s"] for s in data["sessions"] for p in s["pauses"]), default=1.0)
    gpus = []
    for g in data["gpus"]:
        entries = []
        t = rng.uniform(0.0, end / blocks)
        for _ in range(blocks):
            length = rng.uniform(1.0, 4.0)
            tokens = int(g["kv_capacity_tokens"] * rng.uniform(0.6, 0.95))
            entries.append(
                {"start_s": round(t, 3), "end_s": round(t + length, 3), "tokens": tokens}
            )
            t += length + rng.uniform(1.0, end / blocks)
        gpus.append(dict(g, active_kv=entries))
    return dict(data, gpus=gpus)
