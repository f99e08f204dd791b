"""The temporal network of a schedule: difference constraints ``s_v >= s_u + w``.

Node 0 is time zero; node ``i + 1`` is the start of task ``i``. Releases, deadlines,
minimum and maximum lags, fixed starts and (for a given assignment and order) the
sequencing arcs of agents and locations are arcs. The least solution (longest paths
from node 0, Bellman-Ford) is the earliest-start schedule; a positive cycle proves that
no schedule exists, and its arcs name the constraints in conflict (RCPSP/max semantics).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .data import TeamArrays

EPS = 1e-9


@dataclass(frozen=True)
class Arc:
    """``s[v] >= s[u] + w`` (node 0 is time zero, node ``i + 1`` task ``i``)."""

    u: int
    v: int
    w: float
    label: str
    """The instance constraint this arc comes from, e.g. ``precedence[2].max_lag_s``."""
    text: str = ""
    """A readable sentence."""


@dataclass
class Network:
    num_tasks: int
    arcs: list[Arc] = field(default_factory=list)

    def add(self, u: int, v: int, w: float, label: str, text: str = "") -> None:
        if np.isfinite(w):
            self.arcs.append(Arc(u, v, float(w), label, text))

    def longest_paths(self) -> tuple[np.ndarray | None, list[Arc] | None]:
        """Earliest starts (node 0 dropped) or, if none exist, a positive cycle.

        Bellman-Ford with early exit; a relaxation in pass ``n`` proves a positive cycle,
        found in the predecessor graph.
        """
        n = self.num_tasks + 1
        arcs = [(a.u, a.v, a.w) for a in self.arcs]
        dist = [-math.inf] * n
        dist[0] = 0.0
        pred = [-1] * n
        for _ in range(n):
            changed = False
            for k, (u, v, w) in enumerate(arcs):
                du = dist[u]
                if du == -math.inf:
                    continue
                cand = du + w
                if cand > dist[v] + EPS * max(1.0, abs(cand)):
                    dist[v] = cand
                    pred[v] = k
                    changed = True
            if not changed:
                return np.asarray(dist[1:], dtype=float), None
        cycle = self._cycle(pred)
        if cycle is None:  # pragma: no cover - Bellman-Ford guarantees a cycle here
            raise RuntimeError("Bellman-Ford found no cycle in the predecessor graph")
        return None, cycle

    def _cycle(self, pred: list[int]) -> list[Arc] | None:
        """A cycle of the predecessor graph (each node has at most one predecessor arc)."""
        n = len(pred)
        state = [0] * n  # 0 new, 1 on the current walk, 2 done
        for s in range(n):
            walk = []
            node = s
            while node >= 0 and state[node] == 0:
                state[node] = 1
                walk.append(node)
                k = pred[node]
                node = self.arcs[k].u if k >= 0 else -1
            if node >= 0 and state[node] == 1:
                cycle: list[Arc] = []
                cur = node
                while True:
                    arc = self.arcs[pred[cur]]
                    cycle.append(arc)
                    cur = arc.u
                    if cur == node:
                        break
                cycle.reverse()
                return cycle
            for x in walk:
                state[x] = 2
        return None


def task_network(
    arr: TeamArrays,
    dur_for_min: np.ndarray,
    dur_for_max: np.ndarray,
    fixed: Mapping[int, float] | None = None,
    now_s: float | None = None,
) -> Network:
    """Releases, deadlines, lags and fixed starts (no resource arcs).

    ``dur_for_min`` is the duration used in minimum-lag arcs and deadlines,
    ``dur_for_max`` the one in maximum-lag arcs: the shortest and the longest duration
    make the network a relaxation of every assignment; actual durations make it exact.
    """
    fixed = dict(fixed or {})
    ids = arr.task_ids
    net = Network(arr.num_tasks)
    for i in range(arr.num_tasks):
        if i in fixed:
            f = fixed[i]
            net.add(0, i + 1, f, f"fixed.{ids[i]}", f"{ids[i]} already started at {f:g} s")
            net.add(i + 1, 0, -f, f"fixed.{ids[i]}", f"{ids[i]} already started at {f:g} s")
        else:
            r = float(arr.release[i])
            if now_s is not None and now_s > r:
                net.add(0, i + 1, now_s, "now_s", f"{ids[i]} cannot start before now ({now_s:g} s)")
            else:
                net.add(
                    0, i + 1, r, f"tasks[{i}].release_s", f"{ids[i]} starts at or after {r:g} s"
                )
        if np.isfinite(arr.deadline[i]):
            d = float(arr.deadline[i])
            net.add(
                i + 1,
                0,
                -(d - dur_for_min[i]),
                f"tasks[{i}].deadline_s",
                f"{ids[i]} (at least {dur_for_min[i]:g} s long) ends by {d:g} s",
            )
    for k in range(len(arr.prec_before)):
        b, a = int(arr.prec_before[k]), int(arr.prec_after[k])
        lo, hi = float(arr.prec_min[k]), float(arr.prec_max[k])
        net.add(
            b + 1,
            a + 1,
            dur_for_min[b] + lo,
            f"precedence[{k}].min_lag_s",
            f"{ids[a]} starts at least {lo:g} s after {ids[b]} ends",
        )
        if np.isfinite(hi):
            net.add(
                a + 1,
                b + 1,
                -(dur_for_max[b] + hi),
                f"precedence[{k}].max_lag_s",
                f"{ids[a]} starts at most {hi:g} s after {ids[b]} ends",
            )
    return net


def add_sequence_arcs(
    net: Network,
    arr: TeamArrays,
    dur: np.ndarray,
    agent_of: np.ndarray,
    order: Sequence[int],
) -> None:
    """Arcs of a fixed sequence: ``order`` lists tasks by start; consecutive tasks of one
    agent are separated by duration + travel, consecutive tasks at one location by the
    duration."""
    ids = arr.task_ids
    last_agent: dict[int, int] = {}
    last_loc: dict[int, int] = {}
    for i in order:
        a = int(agent_of[i])
        if a in last_agent:
            p = last_agent[a]
            net.add(
                p + 1,
                i + 1,
                dur[p] + arr.travel_between(p, i),
                f"sequence.{arr.agent_ids[a]}",
                f"{arr.agent_ids[a]} does {ids[p]} before {ids[i]}",
            )
        last_agent[a] = i
        q = int(arr.loc[i])
        if q >= 0:
            if q in last_loc:
                p = last_loc[q]
                net.add(
                    p + 1,
                    i + 1,
                    dur[p],
                    f"location.{arr.locations[q]}",
                    f"{ids[p]} before {ids[i]} at {arr.locations[q]}",
                )
            last_loc[q] = i


def earliest_schedule(
    arr: TeamArrays,
    agent_of: np.ndarray,
    order: Sequence[int],
    fixed: Mapping[int, float] | None = None,
    now_s: float | None = None,
) -> np.ndarray | None:
    """Earliest starts for an assignment and a start order, or ``None`` if infeasible."""
    dur = arr.duration[np.arange(arr.num_tasks), agent_of]
    net = task_network(arr, dur, dur, fixed, now_s)
    add_sequence_arcs(net, arr, dur, agent_of, order)
    starts, cycle = net.longest_paths()
    return starts if cycle is None else None


def precheck(
    arr: TeamArrays,
    fixed_agent: Mapping[int, int] | None = None,
    fixed: Mapping[int, float] | None = None,
    now_s: float | None = None,
) -> list[Arc] | None:
    """A positive cycle of the temporal relaxation (shortest durations in minimum lags
    and deadlines, longest in maximum lags), or ``None`` when it has a solution."""
    dmin = arr.min_duration.copy()
    dmax = arr.max_duration.copy()
    for i, a in (fixed_agent or {}).items():
        dmin[i] = dmax[i] = arr.duration[i, a]
    _, cycle = task_network(arr, dmin, dmax, fixed, now_s).longest_paths()
    return cycle
