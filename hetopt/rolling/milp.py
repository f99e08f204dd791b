"""Rolling horizon for a scheduling MILP with release times (``human_robot``).

Tasks become known over time. At each epoch ``t = t0, t0 + step_s, ...`` the tasks
released by ``t + lookahead_s`` are *visible* (closed under predecessors and under
max-lag links, so a committed task never strands a partner it must stay close to);
the visible tasks are scheduled by the kind's own solver with the committed tasks
fixed (``fixed={task: (agent, start_s)}``) and every other task starting at or after
``t`` (``now_s``); the tasks that start before the next epoch are committed; the clock
rolls forward. Once every task is visible the last window commits everything. The
final schedule is re-solved on the whole instance with every task fixed, so the kind's
verifier checks it against the full instance.

The ``myopic`` baseline sees only released tasks (``lookahead_s = 0``) and commits the
whole plan of each window (no re-planning).

The windows change size and structure, so each window is a fresh MILP (no persistent
solver is reused here, unlike the ``gpu_cluster`` LPs).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np

from ..errors import InstanceError
from ..kinds.base import UsageError
from ..options import SolveOptions
from ..result import Result
from ..status import Status

MILP_KINDS = ("human_robot",)


def with_release_times(instance: Any, mean_gap_s: float, seed: int = 0, batch: int = 1) -> Any:
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


def _closure(inst: Any, seed_set: np.ndarray) -> np.ndarray:
    """Add predecessors (transitively) and max-lag partners (both ways) to a task set."""
    arr = inst.arrays
    vis = seed_set.copy()
    b, a = arr.prec_before, arr.prec_after
    tight = np.isfinite(arr.prec_max)
    while True:
        new = vis.copy()
        new[b[vis[a]]] = True  # predecessors of visible tasks
        new[a[tight & vis[b]]] = True  # max-lag successors of visible tasks
        if (new == vis).all():
            return vis
        vis = new


def _sub_instance(inst: Any, keep: np.ndarray) -> Any:
    data = inst.to_dict()
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
    return type(inst).from_dict(data)


def rolling_schedule(
    instance: Any,
    objective: str | None = None,
    step_s: float = 60.0,
    lookahead_s: float = 0.0,
    options: SolveOptions | None = None,
    method: str = "auto",
    myopic: bool = False,
    max_windows: int = 10_000,
) -> Result:
    """Schedule a ``human_robot`` instance with a rolling horizon.

    Parameters
    ----------
    instance
        Instance (or dict / path) whose tasks have ``release_s``.
    objective
        ``makespan``, ``weighted_completion`` or ``max_human_workload``.
    step_s
        Time between epochs; tasks starting before the next epoch are committed.
    lookahead_s
        How far ahead of the clock released tasks are known.
    options
        Options of every window solve (e.g. a per-window time limit).
    method
        The kind's ``method`` for the window solves (``auto``, ``exact``,
        ``decomposition``).
    myopic
        Baseline: commit each window's whole plan (no re-planning).
    max_windows
        Safety limit on the number of windows.

    Returns
    -------
    Result
        The committed schedule, re-checked on the whole instance; ``feasible`` (a
        rolling horizon proves nothing about optimality). ``info`` has ``windows`` and
        per-window facts.
    """
    from ..api import load
    from ..kinds import get_kind

    inst, _ = load(instance)
    if inst.kind not in MILP_KINDS:
        raise UsageError(f"rolling_schedule supports {', '.join(MILP_KINDS)}, not {inst.kind!r}")
    if not step_s > 0:
        raise UsageError(f"step_s must be > 0, got {step_s}")
    if lookahead_s < 0:
        raise UsageError(f"lookahead_s must be >= 0, got {lookahead_s}")
    kind = get_kind(inst.kind)
    name = kind.resolve_objective(inst, objective)
    options = options or SolveOptions(threads=1)
    arr = inst.arrays
    n = arr.num_tasks
    ids = arr.task_ids
    release = arr.release
    committed: dict[str, tuple[str, float]] = {}
    t = float(release.min())
    windows: list[dict[str, Any]] = []
    t_start = time.perf_counter()
    look = 0.0 if myopic else lookahead_s
    while len(committed) < n:
        if len(windows) >= max_windows:
            raise UsageError(f"rolling horizon did not finish in {max_windows} windows")
        visible = _closure(inst, release <= t + look + 1e-9)
        open_ = visible & np.array([i not in committed for i in ids])
        if not open_.any():
            pending = release[~visible]
            t = max(t + step_s, float(pending.min()) - look) if len(pending) else t + step_s
            continue
        sub = _sub_instance(inst, visible)
        t0 = time.perf_counter()
        res = kind.solve(sub, name, options, method=method, fixed=dict(committed) or None, now_s=t)
        wall = time.perf_counter() - t0
        windows.append(
            {
                "t_s": t,
                "tasks": int(visible.sum()),
                "open": int(open_.sum()),
                "status": res.status.value,
                "objective_value": res.objective_value,
                "wall_s": wall,
            }
        )
        if not res.status.has_solution:
            return Result(
                kind=inst.kind,
                objective=name,
                status=res.status,
                termination=f"window at t={t:g} s ended {res.status.value}: {res.termination}",
                info={"windows": len(windows), "window_log": windows},
            )
        sched = res.tables["schedule"]
        last = bool(visible.all())
        for task, agent, start in zip(sched["task"], sched["agent"], sched["start_s"], strict=True):
            if task in committed:
                continue
            if myopic or last or start < t + step_s - 1e-9:
                committed[str(task)] = (str(agent), float(start))
        t += step_s
    from ..kinds.human_robot import objective_of, schedule_tables

    apos = {a: k for k, a in enumerate(arr.agent_ids)}
    agent_of = np.array([apos[committed[i][0]] for i in ids], dtype=np.int64)
    starts = np.array([committed[i][1] for i in ids], dtype=float)
    info = {
        "rolling": "myopic" if myopic else "rolling",
        "step_s": step_s,
        "lookahead_s": look,
        "windows": len(windows),
        "window_log": windows,
        "window_wall_s": float(sum(w["wall_s"] for w in windows)),
        "method": method,
    }
    result = Result(
        kind=inst.kind,
        objective=name,
        status=Status.FEASIBLE,
        termination="rolling horizon: committed schedule (optimality not proven)",
        objective_value=objective_of(arr, name, agent_of, starts),
        tables=schedule_tables(arr, agent_of, starts),
        info=info,
        runtime_s=time.perf_counter() - t_start,
    )
    return replace(result, verification=kind.verify(inst, result))


def rolling_gap(rolling: Result, reference: Result) -> float:
    """Relative gap ``(rolling - reference) / reference`` of two ``min`` objectives."""
    if rolling.objective_value is None or reference.objective_value is None:
        raise UsageError("both results need an objective value")
    ref = float(reference.objective_value)
    return (float(rolling.objective_value) - ref) / max(abs(ref), 1e-9)
