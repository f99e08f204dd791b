"""The ``multicore`` instance (tasks on heterogeneous cores) and its derived numpy views."""

from __future__ import annotations

import graphlib
import math
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from ...instance import InstanceBase, RecordBase, fail
from .._shared.validation import id_positions, note_id

NonNegFloat = Annotated[float, Field(ge=0)]
PosFloat = Annotated[float, Field(gt=0)]
Name = Annotated[str, Field(min_length=1)]


_Strict = RecordBase
"""Base of the records (strict, frozen; numpy scalars and ``4.0`` for an integer accepted)."""


class Core(_Strict):
    """One core (processor, accelerator, machine).

    ``active_power_w`` is drawn while it runs a task and ``idle_power_w`` while it waits,
    from time 0 to the makespan.
    """

    id: Name
    type: Name
    active_power_w: NonNegFloat = 1.0
    idle_power_w: NonNegFloat = 0.0


class Task(_Strict):
    """One task.

    ``duration_s`` maps a core type or a core id to the running time there (a core id
    overrides its type); a core neither names has no entry: the task cannot run there.
    """

    id: Name
    duration_s: dict[str, NonNegFloat]
    predecessors: list[Name] = Field(default_factory=list)


class MulticoreInstance(InstanceBase):
    """Tasks (independent, or a DAG through ``predecessors``) on heterogeneous cores.

    Example::

        {"kind": "multicore",
         "cores": [{"id": "big0", "type": "big", "active_power_w": 2.0, "idle_power_w": 0.1},
                   {"id": "little0", "type": "little", "active_power_w": 0.5,
                    "idle_power_w": 0.05}],
         "tasks": [{"id": "t0", "duration_s": {"big": 1.0, "little": 2.6}},
                   {"id": "t1", "duration_s": {"big": 2.0, "little": 4.0},
                    "predecessors": ["t0"]}],
         "objective": "makespan"}

    ``deadline_s`` (every task ends by then) and ``energy_budget_j`` (total energy at
    most this) are hard constraints for every objective when given.
    """

    kind: Literal["multicore"] = "multicore"
    name: str | None = None
    cores: Annotated[list[Core], Field(min_length=1)]
    tasks: Annotated[list[Task], Field(min_length=1)]
    objective: str | None = None
    deadline_s: PosFloat | None = None
    energy_budget_j: PosFloat | None = None

    @model_validator(mode="after")
    def _cross_checks(self) -> MulticoreInstance:
        core_pos: dict[str, int] = {}
        type_cores: dict[str, list[int]] = {}
        for k, core in enumerate(self.cores):
            note_id(core_pos, "cores", "core", k, core.id)
            type_cores.setdefault(core.type, []).append(k)
        for k, core in enumerate(self.cores):
            if core.id in type_cores and type_cores[core.id] != [k]:
                raise fail(
                    f"cores[{k}].id",
                    f"core id {core.id!r} is also the name of a core type of other cores; "
                    "duration_s keys would be ambiguous",
                )
        task_pos = id_positions(self.tasks, "tasks", "task")
        for i, task in enumerate(self.tasks):
            if not task.duration_s:
                raise fail(f"tasks[{i}].duration_s", f"task {task.id!r} can run on no core")
            for key in task.duration_s:
                if key not in core_pos and key not in type_cores:
                    raise fail(
                        f"tasks[{i}].duration_s.{key}",
                        f"{key!r} is neither a core id nor a core type; types: "
                        f"{', '.join(type_cores)}",
                    )
            seen: set[str] = set()
            for q, p in enumerate(task.predecessors):
                if p not in task_pos:
                    raise fail(f"tasks[{i}].predecessors[{q}]", f"unknown task {p!r}")
                if p == task.id:
                    raise fail(f"tasks[{i}].predecessors[{q}]", "a task cannot precede itself")
                if p in seen:
                    raise fail(f"tasks[{i}].predecessors[{q}]", f"task {p!r} is listed twice")
                seen.add(p)
        cycle = _find_cycle([[task_pos[p] for p in t.predecessors] for t in self.tasks])
        if cycle is not None:
            names = " -> ".join(self.tasks[i].id for i in cycle)
            raise fail(f"tasks[{cycle[0]}].predecessors", f"cycle in predecessors: {names}")
        return self

    @cached_property
    def arrays(self) -> MulticoreArrays:
        """Dense numpy views (computed once)."""
        return MulticoreArrays.from_instance(self)


def _find_cycle(preds: list[list[int]]) -> list[int] | None:
    """A cycle of the predecessor graph (as task indices, first repeated last) or None."""
    n = len(preds)
    state = [0] * n  # 0 new, 1 on stack, 2 done
    parent = [-1] * n
    for root in range(n):
        if state[root]:
            continue
        stack = [(root, 0)]
        state[root] = 1
        while stack:
            v, k = stack[-1]
            if k < len(preds[v]):
                stack[-1] = (v, k + 1)
                w = preds[v][k]
                if state[w] == 0:
                    state[w] = 1
                    parent[w] = v
                    stack.append((w, 0))
                elif state[w] == 1:
                    cyc = [w]
                    u = v
                    while u != w:
                        cyc.append(u)
                        u = parent[u]
                    cyc.append(w)
                    return cyc  # w <- ... <- v <- w in predecessor order
            else:
                state[v] = 2
                stack.pop()
    return None


@dataclass(frozen=True)
class MulticoreArrays:
    """Numpy views of a :class:`MulticoreInstance`.

    ``dur[i, c]`` is task ``i``'s duration on core ``c`` (NaN where it cannot run);
    ``edges`` is a ``(E, 2)`` array of ``(predecessor, successor)`` task indices.
    """

    task_ids: list[str]
    core_ids: list[str]
    core_types: list[str]
    dur: np.ndarray
    eligible: np.ndarray
    active: np.ndarray
    idle: np.ndarray
    preds: list[list[int]]
    edges: np.ndarray
    topo: list[int]
    deadline: float | None
    budget: float | None

    @classmethod
    def from_instance(cls, inst: MulticoreInstance) -> MulticoreArrays:
        core_ids = [c.id for c in inst.cores]
        types = [c.type for c in inst.cores]
        n, m = len(inst.tasks), len(core_ids)
        dur = np.full((n, m), np.nan)
        col = {c: k for k, c in enumerate(core_ids)}
        for i, task in enumerate(inst.tasks):
            for k, t in enumerate(types):  # by type first, then core ids override
                if t in task.duration_s:
                    dur[i, k] = task.duration_s[t]
            for key, v in task.duration_s.items():
                if key in col:
                    dur[i, col[key]] = v
        eligible = ~np.isnan(dur)
        tpos = {t.id: i for i, t in enumerate(inst.tasks)}
        preds = [[tpos[p] for p in t.predecessors] for t in inst.tasks]
        edges = np.array(
            [(p, j) for j, ps in enumerate(preds) for p in ps], dtype=np.int64
        ).reshape(-1, 2)
        return cls(
            [t.id for t in inst.tasks],
            core_ids,
            types,
            dur,
            eligible,
            np.array([c.active_power_w for c in inst.cores], dtype=float),
            np.array([c.idle_power_w for c in inst.cores], dtype=float),
            preds,
            edges,
            _topological(preds),
            inst.deadline_s,
            inst.energy_budget_j,
        )

    @property
    def num_tasks(self) -> int:
        return len(self.task_ids)

    @property
    def num_cores(self) -> int:
        return len(self.core_ids)

    @property
    def has_dag(self) -> bool:
        return len(self.edges) > 0

    @cached_property
    def min_dur(self) -> np.ndarray:
        """Shortest duration of each task over the cores it can use."""
        return np.nanmin(self.dur, axis=1)

    @cached_property
    def integer_durations(self) -> bool:
        d = self.dur[self.eligible]
        return bool(np.all(d == np.round(d)))

    @cached_property
    def heads(self) -> np.ndarray:
        """Earliest start of each task (longest chain of shortest durations before it)."""
        h = np.zeros(self.num_tasks)
        for j in self.topo:
            for p in self.preds[j]:
                h[j] = max(h[j], h[p] + self.min_dur[p])
        return h

    @cached_property
    def tails(self) -> np.ndarray:
        """Shortest time after each task ends until the last of its successors ends."""
        t = np.zeros(self.num_tasks)
        for j in reversed(self.topo):
            for p in self.preds[j]:
                t[p] = max(t[p], t[j] + self.min_dur[j])
        return t

    @cached_property
    def successors_closure(self) -> list[set[int]]:
        """All (transitive) successors of each task."""
        out: list[set[int]] = [set() for _ in range(self.num_tasks)]
        succ: list[list[int]] = [[] for _ in range(self.num_tasks)]
        for p, j in self.edges:
            succ[int(p)].append(int(j))
        for i in reversed(self.topo):
            for j in succ[i]:
                out[i].add(j)
                out[i] |= out[j]
        return out

    def makespan_lower_bound(self) -> float:
        """Largest of: longest chain of shortest durations, and total shortest work / cores."""
        chain = float((self.heads + self.min_dur).max())
        return max(chain, float(self.min_dur.sum()) / self.num_cores)

    def serial_bound(self) -> float:
        """No semi-active schedule is longer than the sum of the longest durations."""
        return float(np.nanmax(self.dur, axis=1).sum())

    def identical_core_classes(self) -> list[list[int]]:
        """Groups (size >= 2) of interchangeable cores: same type, powers and durations."""
        groups: dict[tuple, list[int]] = {}
        for c in range(self.num_cores):
            col = np.where(self.eligible[:, c], self.dur[:, c], -1.0)
            key = (self.core_types[c], self.active[c], self.idle[c], col.tobytes())
            groups.setdefault(key, []).append(c)
        return [g for g in groups.values() if len(g) > 1]

    def energy(self, core: np.ndarray, makespan: float) -> float:
        """Energy of an assignment (``core[i]``) over ``makespan`` seconds."""
        p = self.dur[np.arange(self.num_tasks), core]
        busy = np.bincount(core, weights=p, minlength=self.num_cores)
        return float((self.active * busy).sum() + (self.idle * (makespan - busy)).sum())

    def idle_free_energy_bound(self) -> float:
        """Energy if every task ran on its cheapest core and no core ever idled."""
        e = np.where(self.eligible, self.dur * self.active[None, :], np.inf)
        return float(e.min(axis=1).sum())


def _topological(preds: list[list[int]]) -> list[int]:
    """Kahn's order (tasks without predecessors by index, then each task as its last
    predecessor is placed), by :class:`graphlib.TopologicalSorter`: every task is added
    first, in index order, so its ready tasks come out in that order."""
    ts: graphlib.TopologicalSorter[int] = graphlib.TopologicalSorter()
    for i in range(len(preds)):
        ts.add(i)
    for j, ps in enumerate(preds):
        ts.add(j, *ps)
    try:
        return list(ts.static_order())
    except graphlib.CycleError:  # pragma: no cover - the validator rejects cycles
        raise ValueError("cycle in predecessors") from None


def is_finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def with_limits(
    instance: MulticoreInstance, deadline_s: float | None, energy_budget_j: float | None
) -> MulticoreInstance:
    """The instance with ``deadline_s`` / ``energy_budget_j`` replaced (validated)."""
    if deadline_s is None and energy_budget_j is None:
        return instance
    data = instance.to_dict()
    if deadline_s is not None:
        data["deadline_s"] = float(deadline_s) if isinstance(deadline_s, int) else deadline_s
    if energy_budget_j is not None:
        data["energy_budget_j"] = (
            float(energy_budget_j) if isinstance(energy_budget_j, int) else energy_budget_j
        )
    return MulticoreInstance.from_dict(data)
