"""Flexible job-shop (FJSP) data as a ``multicore`` instance."""

from __future__ import annotations

from typing import Any

from ...formats.fjsp import FjspData


def fjsp_to_multicore(data: FjspData, objective: str = "makespan") -> dict[str, Any]:
    """A ``multicore`` instance dict from parsed FJSP data.

    Each machine becomes a core of its own type (``m0``, ``m1``, ...; active power 1 W,
    idle 0 W); operation ``o`` of job ``j`` becomes task ``j<j>.o<o>`` whose durations are
    keyed by core id, and each job is a chain (``predecessors`` = the previous operation).
    """
    cores = [
        {"id": f"m{k}", "type": f"m{k}", "active_power_w": 1.0, "idle_power_w": 0.0}
        for k in range(data.num_machines)
    ]
    tasks: list[dict[str, Any]] = []
    for j, job in enumerate(data.jobs):
        for o, op in enumerate(job):
            task: dict[str, Any] = {
                "id": f"j{j}.o{o}",
                "duration_s": {f"m{k}": float(p) for k, p in sorted(op.items())},
            }
            if o > 0:
                task["predecessors"] = [f"j{j}.o{o - 1}"]
            tasks.append(task)
    return {
        "kind": "multicore",
        "name": data.name,
        "cores": cores,
        "tasks": tasks,
        "objective": objective,
    }
