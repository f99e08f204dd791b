"""Flexible job shop (FJSP) as a ``human_robot`` instance.

Machines become agents (``m1``, ``m2``, ... of type ``machine``); operation ``o`` of job
``j`` becomes task ``j<j+1>o<o+1>`` with a duration on each eligible machine; each job
is a chain of precedences with zero lag. No locations, no travel; objective makespan.
"""

from __future__ import annotations

from typing import Any

from ...formats.fjsp import FjspData


def fjsp_to_instance(data: FjspData) -> dict[str, Any]:
    """Map a parsed FJSP instance to a ``human_robot`` instance dict.

    Parameters
    ----------
    data
        From :func:`hetopt.formats.fjsp.read_fjsp` (0-based machines).

    Returns
    -------
    dict
        A ``human_robot`` instance (validate with ``hetopt.instance_from_dict``); its
        optimal makespan is the FJSP optimum.
    """
    agents = [{"id": f"m{k + 1}", "type": "machine"} for k in range(data.num_machines)]
    tasks: list[dict[str, Any]] = []
    precedence: list[dict[str, Any]] = []
    for j, job in enumerate(data.jobs):
        prev = None
        for o, op in enumerate(job):
            tid = f"j{j + 1}o{o + 1}"
            tasks.append(
                {"id": tid, "duration_s": {f"m{k + 1}": float(p) for k, p in sorted(op.items())}}
            )
            if prev is not None:
                precedence.append({"before": prev, "after": tid, "min_lag_s": 0.0})
            prev = tid
    return {
        "kind": "human_robot",
        "agents": agents,
        "tasks": tasks,
        "precedence": precedence,
        "objective": "makespan",
    }
