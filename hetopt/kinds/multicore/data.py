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


class Window(_Strict):
    """A time interval ``[start_s, end_s)`` in which a core is available."""

    start_s: NonNegFloat
    end_s: PosFloat


class Core(_Strict):
    """One core (processor, accelerator, machine).

    ``active_power_w`` is drawn while it runs a task and ``idle_power_w`` while it waits,
    from time 0 to the makespan. With ``windows`` the core is available only inside
    them (sorted, disjoint): a task on it starts and ends inside one window. With
    ``capacity`` (resource -> amount) a task whose ``demand`` exceeds it on a resource
    the core lists cannot run there (resources it does not list are not limited).
    """

    id: Name
    type: Name
    active_power_w: NonNegFloat = 1.0
    idle_power_w: NonNegFloat = 0.0
    windows: Annotated[list[Window], Field(min_length=1)] | None = None
    capacity: dict[Name, NonNegFloat] | None = None


class Task(_Strict):
    """One task.

    ``duration_s`` maps a core type or a core id to the running time there (a core id
    overrides its type); a core neither names has no entry: the task cannot run there.
    ``job`` is the DAG job the task belongs to (a task without one is a job of its own,
    named by its id); the task never starts before ``release_s``. ``demand`` (resource ->
    amount) must fit in the ``capacity`` of the core that runs it.
    """

    id: Name
    duration_s: dict[str, NonNegFloat]
    predecessors: list[Name] = Field(default_factory=list)
    job: Name | None = None
    release_s: NonNegFloat | None = None
    demand: dict[Name, NonNegFloat] | None = None


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
    most this) are hard constraints for every objective when given, like the tasks'
    ``release_s`` and the cores' ``windows``. ``job_weights`` (job -> weight, every job
    when given; default 1 each) weighs the jobs' completion times for the
    ``weighted_completion`` objective. ``job_executors`` (job -> count) caps the number of
    distinct cores a job's tasks run on (Spark's executors of an application).
    """

    kind: Literal["multicore"] = "multicore"
    name: str | None = None
    cores: Annotated[list[Core], Field(min_length=1)]
    tasks: Annotated[list[Task], Field(min_length=1)]
    objective: str | None = None
    deadline_s: PosFloat | None = None
    energy_budget_j: PosFloat | None = None
    job_weights: dict[Name, NonNegFloat] | None = None
    job_executors: dict[Name, Annotated[int, Field(ge=1)]] | None = None

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
            _check_windows(k, core)
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
        self._check_demands()
        self._check_jobs()
        return self

    def _check_demands(self) -> None:
        """Every task with a ``demand`` fits some core its ``duration_s`` names."""
        for i, task in enumerate(self.tasks):
            if not task.demand:
                continue
            named = [c for c in self.cores if c.id in task.duration_s or c.type in task.duration_s]
            if not any(fits(task.demand, c.capacity) for c in named):
                raise fail(
                    f"tasks[{i}].demand",
                    f"task {task.id!r} fits the capacity of no core it can run on",
                )

    def _check_jobs(self) -> None:
        """Job names do not collide with job-less tasks; weights cover exactly the jobs."""
        alone = {t.id: i for i, t in enumerate(self.tasks) if t.job is None}
        for i, task in enumerate(self.tasks):
            if task.job is not None and task.job in alone and task.job != task.id:
                raise fail(
                    f"tasks[{i}].job",
                    f"job {task.job!r} is also the id of task {task.job!r}, which has no job "
                    "(a task without a job is a job of its own)",
                )
        jobs = {task.job if task.job is not None else task.id for task in self.tasks}
        for key in self.job_executors or {}:
            if key not in jobs:
                raise fail(f"job_executors.{key}", f"no task belongs to job {key!r}")
        if self.job_weights is None:
            return
        for key in self.job_weights:
            if key not in jobs:
                raise fail(f"job_weights.{key}", f"no task belongs to job {key!r}")
        for i, task in enumerate(self.tasks):
            if task.job is not None and task.job not in self.job_weights:
                raise fail(f"tasks[{i}].job", f"job {task.job!r} has no weight in job_weights")
            if task.job is None and task.id not in self.job_weights:
                raise fail(
                    f"tasks[{i}].job",
                    f"task {task.id!r} has no job, so it is a job of its own, and "
                    "job_weights has no weight for it",
                )

    @cached_property
    def arrays(self) -> MulticoreArrays:
        """Dense numpy views (computed once)."""
        return MulticoreArrays.from_instance(self)


def fits(demand: dict[str, float] | None, capacity: dict[str, float] | None) -> bool:
    """Does ``demand`` fit ``capacity`` (only the resources the capacity lists limit)?"""
    if not demand or not capacity:
        return True
    return all(v <= capacity[r] for r, v in demand.items() if r in capacity)


def _check_windows(k: int, core: Core) -> None:
    """Windows of a core: each non-empty, sorted by start and disjoint."""
    prev_end = -math.inf
    for w, win in enumerate(core.windows or ()):
        if win.end_s <= win.start_s:
            raise fail(
                f"cores[{k}].windows[{w}].end_s",
                f"window ends at {win.end_s:g} s, not after its start {win.start_s:g} s",
            )
        if win.start_s < prev_end:
            raise fail(
                f"cores[{k}].windows[{w}].start_s",
                f"windows must be sorted and disjoint; this one starts at {win.start_s:g} s, "
                f"before the previous one ends at {prev_end:g} s",
            )
        prev_end = win.end_s


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

    ``dur[i, c]`` is task ``i``'s duration on core ``c`` (NaN where it cannot run: no
    duration, or its demand exceeds the core's capacity); ``edges`` is a ``(E, 2)`` array
    of ``(predecessor, successor)`` task indices; ``release[i]`` the release time (0
    without one); ``job[i]`` the index of task ``i``'s job in ``job_ids`` (jobs in order
    of first appearance), ``weight[j]`` its weight, ``executors[j]`` the most cores it may
    use (``num_cores`` without a limit); ``windows[c]`` a ``(W, 2)`` array of the
    availability windows of core ``c`` (``None``: always available).
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
    release: np.ndarray
    job: np.ndarray
    job_ids: list[str]
    weight: np.ndarray
    has_jobs: bool
    """Some task names its ``job`` or the instance gives ``job_weights`` or
    ``job_executors``."""
    executors: np.ndarray
    windows: tuple[np.ndarray | None, ...]

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
            if task.demand:
                for k, core in enumerate(inst.cores):
                    if not fits(task.demand, core.capacity):
                        dur[i, k] = np.nan
        eligible = ~np.isnan(dur)
        tpos = {t.id: i for i, t in enumerate(inst.tasks)}
        preds = [[tpos[p] for p in t.predecessors] for t in inst.tasks]
        edges = np.array(
            [(p, j) for j, ps in enumerate(preds) for p in ps], dtype=np.int64
        ).reshape(-1, 2)
        job_names = [t.job if t.job is not None else t.id for t in inst.tasks]
        job_pos = {j: k for k, j in enumerate(dict.fromkeys(job_names))}
        weights = inst.job_weights or {}
        limits = inst.job_executors or {}
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
            np.array([t.release_s or 0.0 for t in inst.tasks], dtype=float),
            np.array([job_pos[j] for j in job_names], dtype=np.int64),
            list(job_pos),
            np.array([weights.get(j, 1.0) for j in job_pos], dtype=float),
            inst.job_weights is not None
            or inst.job_executors is not None
            or any(t.job is not None for t in inst.tasks),
            np.array([min(limits.get(j, m), m) for j in job_pos], dtype=np.int64),
            tuple(
                None
                if c.windows is None
                else np.array([(w.start_s, w.end_s) for w in c.windows], dtype=float)
                for c in inst.cores
            ),
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

    @property
    def num_jobs(self) -> int:
        return len(self.job_ids)

    @cached_property
    def has_releases(self) -> bool:
        return bool(np.any(self.release > 0))

    @cached_property
    def has_windows(self) -> bool:
        return any(w is not None for w in self.windows)

    @property
    def sequencing(self) -> bool:
        """Do start times matter beyond the assignment (precedences, releases or
        windows)? Without them every core runs its tasks back to back from 0."""
        return self.has_dag or self.has_releases or self.has_windows

    @cached_property
    def limited_jobs(self) -> np.ndarray:
        """Jobs whose executor limit is below the number of cores their tasks can use."""
        can = np.zeros((self.num_jobs, self.num_cores), dtype=bool)
        np.logical_or.at(can, self.job, self.eligible)
        return np.nonzero(self.executors < can.sum(axis=1))[0]

    @property
    def has_executor_limits(self) -> bool:
        return len(self.limited_jobs) > 0

    @cached_property
    def integer_times(self) -> bool:
        """Durations, releases and window bounds are whole numbers (so are the starts
        and ends of every semi-active schedule)."""
        if not self.integer_durations:
            return False
        if not np.all(self.release == np.round(self.release)):
            return False
        return all(w is None or bool(np.all(w == np.round(w))) for w in self.windows)

    @cached_property
    def integer_weights(self) -> bool:
        return bool(np.all(self.weight == np.round(self.weight)))

    def earliest_fit(self, c: int, t: float, p: float) -> float:
        """Earliest start ``>= t`` of a task of duration ``p`` on core ``c`` inside one of
        its windows (``inf`` if none fits; ``t`` for a core without windows)."""
        w = self.windows[c]
        if w is None:
            return t
        s = np.maximum(w[:, 0], t)
        ok = np.nonzero(s + p <= w[:, 1] + 1e-9)[0]
        return float(s[ok[0]]) if len(ok) else math.inf

    def completion(self, end: np.ndarray) -> np.ndarray:
        """Completion time of each job (its tasks' latest end) from the tasks' ends."""
        out = np.zeros(self.num_jobs)
        np.maximum.at(out, self.job, end)
        return out

    def weighted_completion(self, end: np.ndarray) -> float:
        """``sum_j weight_j C_j`` of the tasks' ends."""
        return float(self.weight @ self.completion(end))

    @cached_property
    def job_sinks(self) -> np.ndarray:
        """Tasks no other task of their job succeeds (the ends that bound ``C_j``)."""
        inner = np.zeros(self.num_tasks, dtype=bool)
        for p, j in self.edges:
            if self.job[p] == self.job[j]:
                inner[p] = True
        return np.nonzero(~inner)[0]

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
        """Earliest start of each task (its release, and the longest chain of shortest
        durations and releases before it)."""
        h = self.release.copy()
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
        """Largest of: longest chain of shortest durations (from the releases), and the
        earliest release plus total shortest work / cores."""
        chain = float((self.heads + self.min_dur).max())
        first = float(self.release.min())
        return max(chain, first + float(self.min_dur.sum()) / self.num_cores)

    def serial_bound(self) -> float:
        """No semi-active schedule is longer than the latest release or window start
        plus the sum of the longest durations (each start is a release, a window start or
        the end of another task, so some chain of distinct tasks fills the time after one
        of them); when every core has windows, than their latest end."""
        latest = float(self.release.max())
        for w in self.windows:
            if w is not None:
                latest = max(latest, float(w[:, 0].max()))
        bound = latest + float(np.nanmax(self.dur, axis=1).sum())
        if self.windows and all(w is not None for w in self.windows):
            bound = min(bound, max(float(w[:, 1].max()) for w in self.windows if w is not None))
        return bound

    def identical_core_classes(self) -> list[list[int]]:
        """Groups (size >= 2) of interchangeable cores: same type, powers and durations."""
        groups: dict[tuple, list[int]] = {}
        for c in range(self.num_cores):
            col = np.where(self.eligible[:, c], self.dur[:, c], -1.0)
            w = self.windows[c]
            key = (
                self.core_types[c],
                self.active[c],
                self.idle[c],
                col.tobytes(),
                None if w is None else w.tobytes(),
            )
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
