"""The result tables and ``info`` entries of the ``human_robot`` kind, declared once, and
the functions that fill the tables from a schedule (agent per task + start times)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ...contract import Column, Detail, Table
from .data import TeamArrays

if TYPE_CHECKING:
    import pandas as pd

SCHEDULE = Table(
    "schedule",
    "when each task runs and who does it (ordered by agent, then start)",
    (
        Column("task", "str", "task id"),
        Column("agent", "str", "agent id"),
        Column("agent_type", "str", "the agent's type ('human', 'robot', ...)"),
        Column("location", "str", "the task's workspace (empty if it has none)"),
        Column("start_s", "float", "start time", "s"),
        Column("end_s", "float", "end time", "s"),
    ),
)
LOCATIONS = Table(
    "locations",
    "occupation of each workspace (tasks with a location, ordered by location, then start)",
    (
        Column("location", "str", "workspace"),
        Column("task", "str", "task id"),
        Column("agent", "str", "agent id"),
        Column("start_s", "float", "start time", "s"),
        Column("end_s", "float", "end time", "s"),
    ),
)
AGENTS = Table(
    "agents",
    "per agent: tasks done, total task time and when it is last busy",
    (
        Column("agent", "str", "agent id"),
        Column("type", "str", "agent type"),
        Column("tasks", "int", "number of tasks assigned"),
        Column("workload_s", "float", "sum of the durations of its tasks", "s"),
        Column("busy_until_s", "float", "end of its last task (0 if it has none)", "s"),
    ),
)
CONFLICT = Table(
    "conflict",
    "on infeasibility: the constraints in conflict (a positive cycle of the temporal "
    "network, or the deletion filter's set)",
    (
        Column("constraint", "str", "the instance field, e.g. 'precedence[2].max_lag_s'"),
        Column("description", "str", "a readable sentence"),
    ),
    optional=True,
)
TABLES = (SCHEDULE, LOCATIONS, AGENTS, CONFLICT)

DETAILS = (
    Detail("method", "str", "the method that produced the result: 'exact' or 'decomposition'"),
    Detail("fixed", "dict", "the tasks fixed by re-planning: {task: [agent, start_s]}"),
    Detail("now_s", "float", "tasks not in 'fixed' start at or after this time", "s"),
    Detail("horizon_s", "float", "latest finish any schedule needs (big-M source)", "s"),
    Detail(
        "pruned_pairs",
        "int",
        "task-agent pairs left out because no optimal schedule uses them (too long for a "
        "deadline, or for the value of a known schedule)",
    ),
    Detail("mip_start_s", "float", "time spent finding the exact MILP's starting solution", "s"),
    Detail("left_shift", "bool", "false when left-shifting the MILP schedule failed"),
    Detail(
        "resequenced",
        "bool",
        "the MILP's order failed exact re-timing; its assignment was list-scheduled again",
    ),
    Detail("makespan_s", "float", "time until the last task ends", "s"),
    Detail("conflict", "list", "the constraints in conflict (infeasible instances)"),
    Detail("conflict_source", "str", "how the conflict was found"),
    Detail("conflict_minimal", "bool", "every check of the deletion filter was decided"),
    Detail(
        "exact_rejected",
        "str",
        "the verifier's first objection to the exact MILP's schedule (then the "
        "decomposition ran instead)",
    ),
    Detail("local_search_gain", "float", "objective improvement of the local search"),
    Detail("sequence_milp_gain", "float", "objective improvement of the sequencing MILP"),
    Detail("iterations", "int", "allocate / sequence iterations of the decomposition"),
    Detail("iteration_values", "list", "objective of each iteration (null if not sequenced)"),
)


def conflict_table(arcs: list[tuple[str, str]]) -> pd.DataFrame:
    """The ``conflict`` table of (label, description) pairs (first description per label)."""
    import pandas as pd  # on use: declaring the tables imports no pandas (issue 19)

    seen: dict[str, str] = {}
    for label, text in arcs:
        seen.setdefault(label, text)
    return pd.DataFrame({"constraint": list(seen), "description": list(seen.values())})


def schedule_tables(
    arr: TeamArrays, agent_of: np.ndarray, starts: np.ndarray
) -> dict[str, pd.DataFrame]:
    """``schedule``, ``locations`` and ``agents`` tables of a schedule."""
    import pandas as pd

    n = arr.num_tasks
    dur = arr.duration[np.arange(n), agent_of]
    ends = starts + dur
    loc = [arr.locations[q] if q >= 0 else None for q in arr.loc]
    schedule = pd.DataFrame(
        {
            "task": arr.task_ids,
            "agent": [arr.agent_ids[a] for a in agent_of],
            "agent_type": [arr.agent_types[a] for a in agent_of],
            "location": loc,
            "start_s": starts,
            "end_s": ends,
        }
    )
    schedule["_a"] = agent_of
    schedule = schedule.sort_values(["_a", "start_s", "end_s"], kind="stable")
    schedule = schedule.drop(columns="_a").reset_index(drop=True)
    located = schedule[schedule["location"].notna()]
    locations = (
        located[["location", "task", "agent", "start_s", "end_s"]]
        .sort_values(["location", "start_s", "end_s"], kind="stable")
        .reset_index(drop=True)
    )
    workload = np.zeros(arr.num_agents)
    np.add.at(workload, agent_of, dur)
    busy = np.zeros(arr.num_agents)
    np.maximum.at(busy, agent_of, ends)
    counts = np.bincount(agent_of, minlength=arr.num_agents)
    agents = pd.DataFrame(
        {
            "agent": arr.agent_ids,
            "type": arr.agent_types,
            "tasks": counts,
            "workload_s": workload,
            "busy_until_s": busy,
        }
    )
    return {"schedule": schedule, "locations": locations, "agents": agents}


def start_order(starts: np.ndarray, ends: np.ndarray) -> list[int]:
    """Task indices by start, then end."""
    return [int(i) for i in np.lexsort((ends, starts))]


def _makespan(arr: TeamArrays, agent_of: np.ndarray, dur: np.ndarray, ends: np.ndarray) -> float:
    return float(ends.max())


def _weighted_completion(
    arr: TeamArrays, agent_of: np.ndarray, dur: np.ndarray, ends: np.ndarray
) -> float:
    return float((arr.weight * ends).sum())


def _max_human_workload(
    arr: TeamArrays, agent_of: np.ndarray, dur: np.ndarray, ends: np.ndarray
) -> float:
    load = np.zeros(arr.num_agents)
    np.add.at(load, agent_of, dur)
    return float(load[arr.humans].max())


OBJECTIVE_VALUES: dict[str, Callable[[TeamArrays, np.ndarray, np.ndarray, np.ndarray], float]] = {
    "makespan": _makespan,
    "weighted_completion": _weighted_completion,
    "max_human_workload": _max_human_workload,
}
"""Objective -> its value from (arrays, agent per task, durations, ends)."""


def objective_of(
    arr: TeamArrays, objective: str, agent_of: np.ndarray, starts: np.ndarray
) -> float:
    """The value of ``objective`` for a schedule."""
    dur = arr.duration[np.arange(arr.num_tasks), agent_of]
    return OBJECTIVE_VALUES[objective](arr, agent_of, dur, starts + dur)
