"""Fanjul-Peyro & Ruiz R||Cmax instance families as a seeded generator.

Fanjul-Peyro, L. & Ruiz, R. (2010), "Iterated greedy local search methods for unrelated
parallel machine scheduling", EJOR 207(1): processing times ``p_ij`` of job ``j`` on
machine ``i`` drawn uniformly from ``{1..100}``, ``{10..100}``, ``{100..120}``,
``{100..200}``, ``{1000..1100}``; *JobsCorre* ``p_ij = b_j + d_ij`` and *MaqCorre*
``p_ij = a_i + d_ij`` with ``a_i, b_j ~ U{1..100}`` and ``d_ij ~ U{1..20}``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import InstanceError
from .._shared import arguments as check
from .data import MulticoreInstance

_UNIFORM = {
    "U1-100": (1, 100),
    "U10-100": (10, 100),
    "U100-120": (100, 120),
    "U100-200": (100, 200),
    "U1000-1100": (1000, 1100),
}
FAMILIES = (*_UNIFORM, "JobsCorre", "MaqCorre")


def processing_times(family: str, machines: int, tasks: int, seed: int = 0) -> np.ndarray:
    """``(tasks, machines)`` whole-number processing times of one family.

    ``machines`` and ``tasks`` are whole numbers from 1 to ``MAX_GENERATED`` (1,000,000)
    and ``seed`` one >= 0; anything else is a :class:`~hetopt.UsageError` naming the
    parameter (an unknown family an :class:`~hetopt.InstanceError`).
    """
    if family not in FAMILIES:
        raise InstanceError(
            f"unknown family {family!r}; expected one of: {', '.join(FAMILIES)}", "family"
        )
    machines = check.count(machines, "machines", where="processing_times")
    tasks = check.count(tasks, "tasks", where="processing_times")
    seed = check.seed(seed, where="processing_times")
    rng = np.random.default_rng(seed)
    if family in _UNIFORM:
        lo, hi = _UNIFORM[family]
        return rng.integers(lo, hi + 1, size=(tasks, machines))
    d = rng.integers(1, 21, size=(tasks, machines))
    if family == "JobsCorre":
        return rng.integers(1, 101, size=(tasks, 1)) + d
    return rng.integers(1, 101, size=(1, machines)) + d


def generate(
    family: str,
    machines: int,
    tasks: int,
    seed: int = 0,
    objective: str | None = None,
) -> MulticoreInstance:
    """A seeded ``multicore`` instance of independent tasks; every machine its own type.

    ``machines`` and ``tasks`` are whole numbers from 1 to ``MAX_GENERATED`` (1,000,000)
    and ``seed`` one >= 0; anything else is a :class:`~hetopt.UsageError` naming the
    parameter.
    """
    machines = check.count(machines, "machines")
    tasks = check.count(tasks, "tasks")
    seed = check.seed(seed)
    p = processing_times(family, machines, tasks, seed)
    cores = [{"id": f"m{i}", "type": f"m{i}"} for i in range(machines)]
    task_list = [
        {"id": f"j{j}", "duration_s": {f"m{i}": float(p[j, i]) for i in range(machines)}}
        for j in range(tasks)
    ]
    data: dict[str, Any] = {
        "kind": "multicore",
        "name": f"{family}_m{machines}_n{tasks}_s{seed}",
        "cores": cores,
        "tasks": task_list,
    }
    if objective:
        data["objective"] = objective
    return MulticoreInstance.from_dict(data)
