"""The ``human_robot`` instance: agents, tasks, precedence with lags, shared workspaces.

Times are seconds. ``duration_s`` of a task is keyed by agent id or agent type (an id
overrides its type); an agent that matches no key cannot do the task. ``min_lag_s`` and
``max_lag_s`` of a precedence are measured from the *end* of ``before`` to the *start*
of ``after``. ``travel_s[a][b]`` is the time an agent needs between a task at location
``a`` and its next task at location ``b``; a missing reverse direction is the same as
the given one, a missing pair is 0, and the matrix is closed under shortest paths (an
agent may route through other locations). Travel from a location to itself is 0 (an
entry for it must say 0). Two tasks at the same location never overlap.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from ...instance import InstanceBase, RecordBase, fail
from .._shared.validation import note_id

NonNegFloat = Annotated[float, Field(ge=0)]
PosFloat = Annotated[float, Field(gt=0)]
Ident = Annotated[str, Field(min_length=1)]


_Strict = RecordBase
"""Base of the records (strict, frozen; numpy scalars and ``4.0`` for an integer accepted)."""


class Agent(_Strict):
    """A human or a robot (``type`` is free text; ``"human"`` marks humans)."""

    id: Ident
    type: Ident


class Task(_Strict):
    """One task: per-agent (or per-type) durations, a workspace, a time window."""

    id: Ident
    duration_s: dict[str, NonNegFloat]
    location: Ident | None = None
    release_s: NonNegFloat = 0.0
    deadline_s: NonNegFloat | None = None
    weight: PosFloat = 1.0


class Precedence(_Strict):
    """``after`` starts between ``min_lag_s`` and ``max_lag_s`` after ``before`` ends."""

    before: Ident
    after: Ident
    min_lag_s: float = 0.0
    max_lag_s: float | None = None


@dataclass(frozen=True)
class TeamArrays:
    """Numpy views of an instance (index order = order in the instance)."""

    task_ids: list[str]
    agent_ids: list[str]
    agent_types: list[str]
    duration: np.ndarray
    """tasks x agents, seconds; NaN where the agent cannot do the task."""
    capable: np.ndarray
    """tasks x agents, bool."""
    release: np.ndarray
    deadline: np.ndarray
    """+inf where the task has no deadline."""
    weight: np.ndarray
    locations: list[str]
    loc: np.ndarray
    """location index per task, -1 for none."""
    travel: np.ndarray
    """locations x locations, shortest-path closed, 0 on the diagonal."""
    prec_before: np.ndarray
    prec_after: np.ndarray
    prec_min: np.ndarray
    prec_max: np.ndarray
    """+inf where a precedence has no maximum lag."""

    @property
    def num_tasks(self) -> int:
        return len(self.task_ids)

    @property
    def num_agents(self) -> int:
        return len(self.agent_ids)

    @property
    def humans(self) -> np.ndarray:
        return np.array([t == "human" for t in self.agent_types], dtype=bool)

    def travel_between(self, i: int, j: int) -> float:
        """Travel time from task ``i``'s location to task ``j``'s (0 without locations)."""
        a, b = self.loc[i], self.loc[j]
        if a < 0 or b < 0:
            return 0.0
        return float(self.travel[a, b])

    @property
    def min_duration(self) -> np.ndarray:
        return np.nanmin(self.duration, axis=1)

    @property
    def max_duration(self) -> np.ndarray:
        return np.nanmax(self.duration, axis=1)


def close_travel(travel: np.ndarray) -> np.ndarray:
    """Shortest-path closure (Floyd-Warshall) of a travel-time matrix."""
    t = travel.copy()
    for k in range(len(t)):
        t = np.minimum(t, t[:, k : k + 1] + t[k : k + 1, :])
    return t


class HumanRobotInstance(InstanceBase):
    """Human-robot team task allocation and scheduling.

    Example::

        {"kind": "human_robot",
         "agents": [{"id": "h1", "type": "human"}, {"id": "r1", "type": "robot"}],
         "tasks": [{"id": "t1", "duration_s": {"h1": 10, "r1": 7}, "location": "L1",
                    "release_s": 0, "deadline_s": 100}],
         "precedence": [{"before": "t1", "after": "t2", "min_lag_s": 0, "max_lag_s": 30}],
         "travel_s": {"L1": {"L2": 5}},
         "objective": "makespan"}
    """

    kind: Literal["human_robot"] = "human_robot"
    agents: Annotated[list[Agent], Field(min_length=1)]
    tasks: Annotated[list[Task], Field(min_length=1)]
    precedence: list[Precedence] = []
    travel_s: dict[str, dict[str, NonNegFloat]] = {}
    objective: str | None = None

    @model_validator(mode="after")
    def _cross_checks(self) -> HumanRobotInstance:
        agent_pos: dict[str, int] = {}
        types: set[str] = set()
        for k, a in enumerate(self.agents):
            note_id(agent_pos, "agents", "agent", k, a.id)
            types.add(a.type)
        for k, a in enumerate(self.agents):
            if a.id in types:
                raise fail(
                    f"agents[{k}].id",
                    f"agent id {a.id!r} is also an agent type: duration_s keys would be ambiguous",
                )
        task_pos: dict[str, int] = {}
        locations: set[str] = set()
        for i, t in enumerate(self.tasks):
            note_id(task_pos, "tasks", "task", i, t.id)
            for key in t.duration_s:
                if key not in agent_pos and key not in types:
                    raise fail(
                        f"tasks[{i}].duration_s.{key}",
                        f"unknown agent or agent type {key!r}; agents: {', '.join(agent_pos)}; "
                        f"types: {', '.join(sorted(types))}",
                    )
            if not t.duration_s:
                raise fail(
                    f"tasks[{i}].duration_s",
                    f"task {t.id!r} can be done by nobody: give a duration for at least one "
                    "agent id or agent type",
                )
            if t.location is not None:
                locations.add(t.location)
        for k, p in enumerate(self.precedence):
            for side in ("before", "after"):
                name = getattr(p, side)
                if name not in task_pos:
                    raise fail(f"precedence[{k}].{side}", f"unknown task {name!r}")
            if p.before == p.after:
                raise fail(f"precedence[{k}].after", f"task {p.after!r} cannot follow itself")
            if p.max_lag_s is not None and p.max_lag_s < p.min_lag_s:
                raise fail(
                    f"precedence[{k}].max_lag_s",
                    f"max_lag_s={p.max_lag_s:g} is below min_lag_s={p.min_lag_s:g}",
                )
        for src, row in self.travel_s.items():
            if src not in locations:
                raise fail(f"travel_s.{src}", f"unknown location {src!r} (no task is there)")
            for b, v in row.items():
                if b not in locations:
                    raise fail(f"travel_s.{src}.{b}", f"unknown location {b!r} (no task is there)")
                if b == src and v != 0:
                    raise fail(
                        f"travel_s.{src}.{b}",
                        f"travel from {src!r} to itself must be 0, got {v:g}: an agent that "
                        "stays at a workspace does not travel (leave the entry out)",
                    )
        return self

    @cached_property
    def arrays(self) -> TeamArrays:
        """Numpy views (computed once)."""
        agent_ids = [a.id for a in self.agents]
        agent_types = [a.type for a in self.agents]
        n, na = len(self.tasks), len(agent_ids)
        dur = np.full((n, na), np.nan)
        for i, t in enumerate(self.tasks):
            for k, (aid, typ) in enumerate(zip(agent_ids, agent_types, strict=True)):
                if aid in t.duration_s:
                    dur[i, k] = t.duration_s[aid]
                elif typ in t.duration_s:
                    dur[i, k] = t.duration_s[typ]
        locations = sorted({t.location for t in self.tasks if t.location is not None})
        lpos = {name: q for q, name in enumerate(locations)}
        loc = np.array([lpos[t.location] if t.location is not None else -1 for t in self.tasks])
        nl = len(locations)
        given = np.full((nl, nl), np.nan)
        for a, row in self.travel_s.items():
            for b, v in row.items():
                given[lpos[a], lpos[b]] = v
        travel = np.where(np.isnan(given), given.T, given)
        travel = np.where(np.isnan(travel), 0.0, travel)
        np.fill_diagonal(travel, 0.0)
        tpos = {t.id: i for i, t in enumerate(self.tasks)}
        return TeamArrays(
            task_ids=[t.id for t in self.tasks],
            agent_ids=agent_ids,
            agent_types=agent_types,
            duration=dur,
            capable=~np.isnan(dur),
            release=np.array([t.release_s for t in self.tasks], dtype=float),
            deadline=np.array(
                [np.inf if t.deadline_s is None else t.deadline_s for t in self.tasks]
            ),
            weight=np.array([t.weight for t in self.tasks], dtype=float),
            locations=locations,
            loc=loc.astype(np.int64),
            travel=close_travel(travel) if nl else travel,
            prec_before=np.array([tpos[p.before] for p in self.precedence], dtype=np.int64),
            prec_after=np.array([tpos[p.after] for p in self.precedence], dtype=np.int64),
            prec_min=np.array([p.min_lag_s for p in self.precedence], dtype=float),
            prec_max=np.array(
                [np.inf if p.max_lag_s is None else p.max_lag_s for p in self.precedence]
            ),
        )
