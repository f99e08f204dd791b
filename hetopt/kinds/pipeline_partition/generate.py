"""Seeded random ``pipeline_partition`` instances (both modes)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import InstanceError
from .._shared import arguments as check
from .data import OBJECTIVES_OF_MODE, PipelinePartitionInstance

TYPE_NAMES = ("A100", "L4", "T4", "V100", "H100", "A10", "P100", "K80")


def generate(
    mode: str = "serving",
    nodes: int = 4,
    layers: int = 12,
    types: int = 2,
    seed: int = 0,
    micro_batches: int = 8,
    slow_links: float = 0.0,
    objective: str | None = None,
) -> Any:
    """A reproducible instance.

    Serving: ``nodes`` compute nodes of ``types`` types (node ``i`` has type
    ``i mod types``). Type ``t`` has a speed ``10 ** U(3, 4)`` tokens/s for one layer
    and holds at most ``K_t = U{ceil(L / nodes), ceil(2 L / nodes) + 1}`` layers (capped
    at ``layers``); holding ``k`` layers it sustains ``speed / k ** U(0.9, 1.1)`` x
    ``U(0.95, 1.05)`` per entry, rounded to 0.01. Every node links to every other node
    both ways, the source to every node and every node to the sink; a node-to-node link
    is slow with probability ``slow_links`` (capacity ``U(0.2, 1) x`` the smallest
    one-layer speed), else fast (10x the largest speed, never limiting).

    Training: ``layers`` layers with times ``U(1, 3)`` ms on the fastest type, each
    further type ``U(1.3, 2.5)`` times slower (rounded to 0.01); memory ``U(2, 8)`` GB
    per layer (0.1); ``nodes`` devices split round-robin over the types; device memory
    is ``U(1.2, 2)`` x the model's memory divided by the number of devices, rounded up to
    a whole GB, at least the largest layer.

    ``nodes``, ``layers`` and ``micro_batches`` (checked in both modes) are whole numbers
    from 1 to ``MAX_GENERATED`` (1,000,000), ``types`` one from 1 to 8, ``seed`` one >= 0
    and ``slow_links`` a number from 0 to 1; anything else is a
    :class:`~hetopt.UsageError` naming the parameter (an unknown mode or an objective of
    the other mode an :class:`~hetopt.InstanceError`).
    """
    if mode not in OBJECTIVES_OF_MODE:
        raise InstanceError(f"must be one of {', '.join(OBJECTIVES_OF_MODE)}", "mode")
    nodes = check.count(nodes, "nodes")
    layers = check.count(layers, "layers")
    types = check.count(types, "types", 1, len(TYPE_NAMES))
    seed = check.seed(seed)
    micro_batches = check.count(micro_batches, "micro_batches")
    slow_links = check.fraction(slow_links, "slow_links")
    if objective is not None and objective not in OBJECTIVES_OF_MODE[mode]:
        raise InstanceError(
            f"unknown objective {objective!r} for mode {mode!r}; expected one of: "
            f"{', '.join(OBJECTIVES_OF_MODE[mode])}",
            "objective",
        )
    rng = np.random.default_rng(seed)
    types = min(types, nodes)
    names = list(TYPE_NAMES[:types])
    data: dict[str, Any]
    if mode == "serving":
        speed = 10 ** rng.uniform(3, 4, types)
        lo = -(-layers // nodes)
        kmax = [
            min(layers, int(rng.integers(lo, -(-2 * layers // nodes) + 2))) for _ in range(types)
        ]
        tables = []
        for t in range(types):
            alpha = rng.uniform(0.9, 1.1)
            k = np.arange(1, kmax[t] + 1)
            tab = speed[t] / k**alpha * rng.uniform(0.95, 1.05, len(k))
            tables.append([round(float(v), 2) for v in tab])
        ids = [str(i) for i in range(nodes)]
        node_list = [
            {"id": ids[i], "type": names[i % types], "throughput_by_layers": tables[i % types]}
            for i in range(nodes)
        ]
        big = round(float(10 * speed.max()), 2)
        links: list[dict[str, Any]] = [
            {"from": "source", "to": i, "capacity_tokens_s": big} for i in ids
        ]
        for a in ids:
            for b in ids:
                if a == b:
                    continue
                if slow_links > 0 and rng.uniform() < slow_links:
                    cap = round(float(rng.uniform(0.2, 1.0) * speed.min()), 2)
                else:
                    cap = big
                links.append({"from": a, "to": b, "capacity_tokens_s": cap})
        links += [{"from": i, "to": "sink", "capacity_tokens_s": big} for i in ids]
        data = {
            "kind": "pipeline_partition",
            "mode": "serving",
            "layers": layers,
            "nodes": node_list,
            "links": links,
        }
    else:
        base = rng.uniform(1, 3, layers)
        slow = np.concatenate([[1.0], rng.uniform(1.3, 2.5, types - 1)])
        mem = np.round(rng.uniform(2, 8, layers), 1)
        counts = [nodes // types + (1 if t < nodes % types else 0) for t in range(types)]
        per = float(mem.sum()) / nodes
        dev_mem = [
            max(float(mem.max()), float(np.ceil(rng.uniform(1.2, 2.0) * per))) for _ in range(types)
        ]
        data = {
            "kind": "pipeline_partition",
            "mode": "training",
            "layers": [
                {
                    "id": f"l{i}",
                    "time_ms": {names[t]: round(float(base[i] * slow[t]), 2) for t in range(types)},
                    "memory_gb": float(mem[i]),
                }
                for i in range(layers)
            ],
            "devices": [
                {"type": names[t], "count": counts[t], "memory_gb": dev_mem[t]}
                for t in range(types)
            ],
            "micro_batches": micro_batches,
        }
    if objective:
        data["objective"] = objective
    return PipelinePartitionInstance.from_dict(data)
