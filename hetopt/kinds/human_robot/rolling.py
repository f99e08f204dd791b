"""Rolling-horizon hooks of the ``human_robot`` kind (:class:`HumanRobotReplanner`, the
:class:`hetopt.rolling.horizon.Replanner` :func:`hetopt.rolling.rolling_schedule` calls)
and :func:`with_release_times`, which makes tasks arrive as a Poisson process.

Items are tasks; committing a task fixes its agent and start (the ``fixed`` parameter);
a window is the visible tasks closed under predecessors and under max-lag links (both
ways), so a committed task never strands a partner it must stay close to.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from ...contract import Outcome
from ...errors import InstanceError
from ...rolling.horizon import ROLLING_DETAILS
from ...status import Status
from .data import HumanRobotInstance
from .params import HumanRobotParams
from .tables import objective_of, schedule_tables

if TYPE_CHECKING:
    from ...result import Result

__all__ = ["ROLLING_DETAILS", "HumanRobotReplanner", "with_release_times"]


def with_release_times(
    instance: HumanRobotInstance, mean_gap_s: float, seed: int = 0, batch: int = 1
) -> HumanRobotInstance:
    """A copy of a ``human_robot`` instance whose tasks arrive as a Poisson process.

    Tasks are released in instance order, ``batch`` at a time, with exponential gaps of
    mean ``mean_gap_s`` seconds between batches (the first batch at 0).
    """
    if not mean_gap_s > 0:
        raise InstanceError(f"must be > 0, got {mean_gap_s}", "mean_gap_s")
    rng = np.random.default_rng(seed)
    n = len(instance.tasks)
    nb = -(-n // batch)
    gaps = rng.exponential(mean_gap_s, size=nb)
    gaps[0] = 0.0
    rel = np.round(np.cumsum(gaps), 1)
    data = instance.to_dict()
    for i, task in enumerate(data["tasks"]):
        task["release_s"] = float(max(task.get("release_s", 0.0), rel[i // batch]))
    return type(instance).from_dict(data)


class HumanRobotReplanner:
    """The :class:`~hetopt.rolling.horizon.Replanner` of ``human_robot``: items are
    tasks, a commitment is ``(agent, start_s)``."""

    def item_ids(self, instance: HumanRobotInstance) -> list[str]:
        return list(instance.arrays.task_ids)

    def releases(self, instance: HumanRobotInstance) -> np.ndarray:
        return instance.arrays.release

    def closure(self, instance: HumanRobotInstance, visible: np.ndarray) -> np.ndarray:
        """Add predecessors (transitively) and max-lag partners (both ways)."""
        arr = instance.arrays
        vis = visible.copy()
        b, a = arr.prec_before, arr.prec_after
        tight = np.isfinite(arr.prec_max)
        while True:
            new = vis.copy()
            new[b[vis[a]]] = True  # predecessors of visible tasks
            new[a[tight & vis[b]]] = True  # max-lag successors of visible tasks
            if (new == vis).all():
                return vis
            vis = new

    def sub_instance(self, instance: HumanRobotInstance, keep: np.ndarray) -> HumanRobotInstance:
        """The tasks in ``keep``, the precedences among them and their locations' travel."""
        data = instance.to_dict()
        ids = {t["id"] for t, k in zip(data["tasks"], keep, strict=True) if k}
        data["tasks"] = [t for t, k in zip(data["tasks"], keep, strict=True) if k]
        data["precedence"] = [
            p for p in data.get("precedence", []) if p["before"] in ids and p["after"] in ids
        ]
        locs = {t.get("location") for t in data["tasks"]} - {None}
        data["travel_s"] = {
            a: {b: v for b, v in row.items() if b in locs}
            for a, row in data.get("travel_s", {}).items()
            if a in locs
        }
        return type(instance).from_dict(data)

    def window_params(
        self,
        params: HumanRobotParams,
        committed: Mapping[str, tuple[str, float]],
        now_s: float,
    ) -> HumanRobotParams:
        return params.model_copy(update={"fixed": dict(committed) or None, "now_s": now_s})

    def plan(self, result: Result) -> Iterable[tuple[str, float, tuple[str, float]]]:
        sched = result.tables["schedule"]
        for task, agent, start in zip(sched["task"], sched["agent"], sched["start_s"], strict=True):
            yield str(task), float(start), (str(agent), float(start))

    def combine(
        self,
        instance: HumanRobotInstance,
        objective: str,
        committed: Mapping[str, tuple[str, float]],
        params: HumanRobotParams,
    ) -> Outcome:
        arr = instance.arrays
        apos = {a: k for k, a in enumerate(arr.agent_ids)}
        agent_of = np.array([apos[committed[i][0]] for i in arr.task_ids], dtype=np.int64)
        starts = np.array([committed[i][1] for i in arr.task_ids], dtype=float)
        return Outcome(
            objective_of(arr, objective, agent_of, starts),
            schedule_tables(arr, agent_of, starts),
            {"method": params.method},
            status=Status.FEASIBLE,
            termination="rolling horizon: committed schedule (optimality not proven)",
        )
