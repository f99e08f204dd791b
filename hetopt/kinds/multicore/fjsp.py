"""Flexible job-shop (FJSP) data as a ``multicore`` instance (a thin mapping of the
neutral view :attr:`hetopt.formats.fjsp.FjspData.operations`)."""

from __future__ import annotations

from typing import Any

from ...formats.fjsp import FjspData


def _task_id(job: int, position: int) -> str:
    return f"j{job}.o{position}"


def fjsp_to_multicore(data: FjspData, objective: str = "makespan") -> dict[str, Any]:
    """A ``multicore`` instance dict from parsed FJSP data.

    Each machine becomes a core of its own type (``m0``, ``m1``, ...; active power 1 W,
    idle 0 W); operation ``o`` of job ``j`` becomes task ``j<j>.o<o>`` whose durations are
    keyed by core id, and each job is a chain (``predecessors`` = the previous operation).
    """
    cores = [
        {"id": f"m{k}", "type": f"m{k}", "active_power_w": 1.0, "idle_power_w": 0.0}
        for k in data.machines
    ]
    tasks: list[dict[str, Any]] = []
    for op in data.operations:
        task: dict[str, Any] = {
            "id": _task_id(op.job, op.position),
            "duration_s": {f"m{k}": float(p) for k, p in op.times},
        }
        if op.predecessor is not None:
            task["predecessors"] = [_task_id(*op.predecessor)]
        tasks.append(task)
    return {
        "kind": "multicore",
        "name": data.name,
        "cores": cores,
        "tasks": tasks,
        "objective": objective,
    }
