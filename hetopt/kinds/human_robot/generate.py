"""Seeded random ``human_robot`` instances (``hetopt generate human-robot``).

Distribution (all draws from ``numpy.random.default_rng(seed)``):

* agents: ``round(agents * human_fraction)`` humans (at least one) ``h1..``, the rest
  robots ``r1..``;
* each task has a base work ``w ~ U{5, ..., 30}`` s; humans can do it with probability
  0.9, with duration ``round(w * U(0.8, 1.2))``; robots can do it with probability 0.7,
  with a type duration ``round(w * U(0.6, 1.5))``; each robot gets its own duration
  (``round(w * U(0.5, 1.6))``) with probability 0.2; a task nobody can do gets a human
  duration;
* ``locations`` workspaces ``L1..`` at uniform points of a 20 m x 20 m floor; travel is the
  Euclidean distance at 1 m/s rounded up; each task sits at a uniform workspace;
* precedence: each task after the first gets a uniform earlier predecessor with
  probability ``precedence_prob``, minimum lag ``U{0, ..., 5}`` and, with probability 0.2,
  a maximum lag of minimum lag + ``U{10, ..., 40}``;
* a fraction ``deadline_fraction`` of tasks gets a deadline of ``U(1.5, 3)`` times the
  sum of the tasks' shortest durations divided by the number of agents (so deadlines
  can make an instance infeasible).

``num_tasks``, ``num_agents`` and ``locations`` (when given) are whole numbers from 1 to
``MAX_GENERATED`` (1,000,000), ``seed`` one >= 0, ``human_fraction``,
``precedence_prob`` and ``deadline_fraction`` numbers from 0 to 1; anything else is a
:class:`~hetopt.UsageError` naming the parameter.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._shared import arguments as check
from .data import HumanRobotInstance


def generate(
    num_tasks: int,
    num_agents: int,
    seed: int = 0,
    human_fraction: float = 0.4,
    locations: int | None = None,
    precedence_prob: float = 0.3,
    deadline_fraction: float = 0.0,
    objective: str | None = None,
) -> HumanRobotInstance:
    """Sample an instance (see the module docstring for the distribution and the
    arguments' ranges)."""
    num_tasks = check.count(num_tasks, "num_tasks")
    num_agents = check.count(num_agents, "num_agents")
    seed = check.seed(seed)
    human_fraction = check.fraction(human_fraction, "human_fraction")
    if locations is not None:
        locations = check.count(locations, "locations")
    precedence_prob = check.fraction(precedence_prob, "precedence_prob")
    deadline_fraction = check.fraction(deadline_fraction, "deadline_fraction")
    rng = np.random.default_rng(seed)
    nh = max(1, min(num_agents, round(num_agents * human_fraction)))
    agents = [{"id": f"h{k + 1}", "type": "human"} for k in range(nh)]
    agents += [{"id": f"r{k + 1}", "type": "robot"} for k in range(num_agents - nh)]
    robots = [a["id"] for a in agents if a["type"] == "robot"]
    nloc = locations if locations is not None else max(1, -(-num_tasks // 3))
    pts = rng.uniform(0, 20, size=(nloc, 2))
    names = [f"L{q + 1}" for q in range(nloc)]
    travel = {
        names[a]: {
            names[b]: float(np.ceil(np.hypot(*(pts[a] - pts[b])))) for b in range(nloc) if b != a
        }
        for a in range(nloc)
    }
    tasks: list[dict[str, Any]] = []
    for i in range(num_tasks):
        w = int(rng.integers(5, 31))
        dur: dict[str, float] = {}
        if rng.random() < 0.9:
            dur["human"] = float(max(1, round(w * rng.uniform(0.8, 1.2))))
        if robots and rng.random() < 0.7:
            dur["robot"] = float(max(1, round(w * rng.uniform(0.6, 1.5))))
            for r in robots:
                if rng.random() < 0.2:
                    dur[r] = float(max(1, round(w * rng.uniform(0.5, 1.6))))
        if not dur:
            dur["human"] = float(w)
        tasks.append({"id": f"t{i + 1}", "duration_s": dur, "location": names[rng.integers(nloc)]})
    if deadline_fraction > 0:
        shortest = sum(min(t["duration_s"].values()) for t in tasks)
        for t in tasks:
            if rng.random() < deadline_fraction:
                t["deadline_s"] = float(round(shortest / num_agents * rng.uniform(1.5, 3.0)))
    precedence = []
    for j in range(1, num_tasks):
        if rng.random() < precedence_prob:
            i = int(rng.integers(j))
            p: dict[str, Any] = {
                "before": f"t{i + 1}",
                "after": f"t{j + 1}",
                "min_lag_s": float(rng.integers(0, 6)),
            }
            if rng.random() < 0.2:
                p["max_lag_s"] = p["min_lag_s"] + float(rng.integers(10, 41))
            precedence.append(p)
    used = {t["location"] for t in tasks}
    data: dict[str, Any] = {
        "kind": "human_robot",
        "agents": agents,
        "tasks": tasks,
        "precedence": precedence,
        "travel_s": {
            a: {b: v for b, v in row.items() if b in used} for a, row in travel.items() if a in used
        },
    }
    if objective:
        data["objective"] = objective
    return HumanRobotInstance.from_dict(data)
