"""Independent oracles for the ``agent_sessions`` tests (no hetopt code is used here).

* :func:`belady_kept` — offline caching on one GPU with equal context sizes: sweep the
  pauses by start and, when more than ``k`` are kept, drop the one that ends last
  (Bélády's rule; for intervals it is Carlisle and Lloyd's exact algorithm for the maximum
  k-colourable subgraph of an interval graph).
* :func:`brute_force` — every affinity, and for each GPU every keep/evict subset of its
  pauses, with a sweep feasibility check; exact for all three objectives (for a fixed
  affinity the GPUs are independent).
* :func:`random_instance` — small seeded instances as plain dicts.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable
from functools import cache
from typing import Any

Interval = tuple[float, float, int]


def fits(intervals: Iterable[Interval], capacity: int, active: Iterable[Interval] = ()) -> bool:
    """Half-open intervals ``[a, b)`` holding ``n`` tokens never exceed ``capacity``."""
    events = []
    for a, b, n in (*intervals, *active):
        events.append((a, 1, n))
        events.append((b, 0, -n))
    level = 0
    for _, _, delta in sorted(events):  # ends (0) before starts (1) at equal times
        level += delta
        if level > capacity:
            return False
    return True


def belady_kept(intervals: list[tuple[float, float]], k: int) -> int:
    """Most intervals keepable with at most ``k`` kept at any instant."""
    dropped = 0
    kept: list[tuple[float, float]] = []
    for a, b in sorted(intervals):
        kept = [iv for iv in kept if iv[1] > a]  # those still under way at ``a``
        kept.append((a, b))
        if len(kept) > k:
            kept.remove(max(kept, key=lambda iv: iv[1]))  # drop the one ending last
            dropped += 1
    return len(intervals) - dropped


def _active(gpu: dict[str, Any]) -> tuple[Interval, ...]:
    return tuple((a["start_s"], a["end_s"], a["tokens"]) for a in gpu.get("active_kv") or [])


def brute_force(data: dict[str, Any], objective: str) -> float:
    """The exact optimum of an instance dict for ``objective``."""
    gpus = data["gpus"]
    sessions = data["sessions"]
    G = len(gpus)

    def ideal(s: dict[str, Any]) -> float:
        return s.get("work_s", 0.0) + sum(p["end_s"] - p["start_s"] for p in s["pauses"])

    @cache
    def best_on(g: int, members: tuple[int, ...]) -> tuple[float, float]:
        """(min recompute, max of the min fair share) of ``members`` alone on GPU ``g``."""
        gpu = gpus[g]
        pauses = [(i, p) for i in members for p in sessions[i]["pauses"]]
        best_rec, best_share = float("inf"), -1.0
        for mask in itertools.product((0, 1), repeat=len(pauses)):
            kept = [
                (p["start_s"], p["end_s"], p["context_tokens"])
                for (_, p), k in zip(pauses, mask, strict=True)
                if k
            ]
            if not fits(kept, gpu["kv_capacity_tokens"], _active(gpu)):
                continue
            rec = dict.fromkeys(members, 0.0)
            for (i, p), k in zip(pauses, mask, strict=True):
                if not k:
                    rec[i] += p["context_tokens"] / gpu["prefill_tokens_s"]
            best_rec = min(best_rec, sum(rec.values()))
            shares = [
                ideal(sessions[i]) / (ideal(sessions[i]) + rec[i])
                if ideal(sessions[i]) + rec[i] > 0
                else 1.0
                for i in members
            ]
            best_share = max(best_share, min(shares, default=1.0))
        return best_rec, best_share

    def allowed(i: int, g: int) -> bool:
        s = sessions[i]
        if s.get("gpu") is not None and s["gpu"] != gpus[g]["id"]:
            return False
        need = max((p["context_tokens"] for p in s["pauses"]), default=0)
        return need <= gpus[g]["kv_capacity_tokens"]

    best = None
    for aff in itertools.product(range(G), repeat=len(sessions)):
        if not all(allowed(i, g) for i, g in enumerate(aff)):
            continue
        per = {g: best_on(g, tuple(i for i, a in enumerate(aff) if a == g)) for g in range(G)}
        if objective == "min_recompute_s":
            value = sum(r for r, _ in per.values())
            better = best is None or value < best
        elif objective == "min_max_load":
            work = {
                g: sum(sessions[i].get("work_s", 0.0) for i, a in enumerate(aff) if a == g)
                for g in range(G)
            }
            value = max(work[g] + per[g][0] for g in range(G))
            better = best is None or value < best
        else:
            value = min(s for _, s in per.values())
            better = best is None or value > best
        if better:
            best = value
    assert best is not None
    return best


def random_instance(
    seed: int,
    sessions: int,
    pauses: int,
    gpus: int = 1,
    equal: int | None = None,
    identical: bool = False,
    work: bool = True,
    room: float = 2.6,
) -> dict[str, Any]:
    """A small random instance (plain dict): pauses of 0.5-6 s, gaps of 0.1-2 s, GPU
    capacities between the largest context and ``room`` times it."""
    rng = random.Random(seed)
    out = []
    largest = 1
    for i in range(sessions):
        t = rng.uniform(0.0, 4.0)
        plist = []
        for _ in range(pauses):
            start = round(t + rng.uniform(0.1, 2.0), 3)
            end = round(start + rng.uniform(0.5, 6.0), 3)
            size = equal if equal is not None else rng.randrange(500, 4000)
            largest = max(largest, size)
            plist.append({"start_s": start, "end_s": end, "context_tokens": size})
            t = end
        entry: dict[str, Any] = {"id": f"s{i}", "pauses": plist}
        if work:
            entry["work_s"] = round(rng.uniform(0.0, 5.0), 3)
        out.append(entry)
    glist = []
    for g in range(gpus):
        if identical and g:
            glist.append(dict(glist[0], id=f"g{g}"))
            continue
        cap = rng.randrange(largest, int(room * largest) + 1)
        glist.append(
            {
                "id": f"g{g}",
                "kv_capacity_tokens": cap,
                "prefill_tokens_s": rng.choice([4000.0, 8000.0]),
            }
        )
    return {"kind": "agent_sessions", "gpus": glist, "sessions": out}


# --- the oracles checked against each other (so that they can be trusted) --------------


def test_fits_half_open_intervals() -> None:
    assert fits([(0.0, 1.0, 5), (1.0, 2.0, 5)], 5)  # [0,1) and [1,2) do not overlap
    assert not fits([(0.0, 1.5, 5), (1.0, 2.0, 5)], 9)
    assert not fits([(0.0, 1.0, 3)], 5, active=[(0.5, 2.0, 3)])


def test_belady_matches_subset_enumeration() -> None:
    rng = random.Random(5)
    for _ in range(30):
        ivs = []
        for _ in range(rng.randrange(1, 9)):
            a = rng.uniform(0, 10)
            ivs.append((round(a, 2), round(a + rng.uniform(0.2, 4), 2)))
        k = rng.randrange(1, 4)
        best = max(
            sum(mask)
            for mask in itertools.product((0, 1), repeat=len(ivs))
            if fits([(a, b, 1) for (a, b), m in zip(ivs, mask, strict=True) if m], k)
        )
        assert belady_kept(ivs, k) == best
