"""Rolling horizon for a scheduling kind whose work has release times.

Items (tasks) become known over time. At each epoch ``t = t0, t0 + step_s, ...`` the
items released by ``t + lookahead_s`` are *visible* (closed by the kind's
:meth:`Replanner.closure`, e.g. under predecessors, so a committed item never strands a
partner it must stay close to); the visible items are solved by the kind's own method
through :func:`hetopt.pipeline.solve`, with the committed items fixed and every other
item starting at or after ``t`` (:meth:`Replanner.window_params`); the items that start
before the next epoch are committed; the clock rolls forward. Once every item is visible
the last window commits everything. The committed schedule of the whole instance is the
kind's :meth:`Replanner.combine` outcome, built and verified against the full instance
by :func:`hetopt.pipeline.finish`.

The ``myopic`` baseline sees only released items (``lookahead_s = 0``) and commits the
whole plan of each window (no re-planning).

The windows change size and structure, so each window is a fresh solve (no persistent
solver is reused here).

A kind takes part by offering a :class:`Replanner` as ``Kind.replanner`` and declaring
:data:`ROLLING_DETAILS` among its details (``human_robot``:
:mod:`hetopt.kinds.human_robot.rolling`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from ..contract import Detail, Outcome
from ..errors import UsageError
from ..options import SolveOptions

if TYPE_CHECKING:
    from ..result import Result

__all__ = ["ROLLING_DETAILS", "Replanner", "rolling_gap", "rolling_schedule"]

ROLLING_DETAILS: tuple[Detail, ...] = (
    Detail("rolling", "str", "'rolling' (re-plan each window) or 'myopic' (commit each plan)"),
    Detail("step_s", "float", "time between epochs", "s"),
    Detail("lookahead_s", "float", "how far ahead of the clock released work is known", "s"),
    Detail("windows", "int", "windows solved"),
    Detail(
        "window_log",
        "list",
        "per window: t_s, tasks (visible), open (not committed), status, objective_value, wall_s",
    ),
    Detail("window_wall_s", "float", "wall-clock time of the window solves", "s"),
)
"""The ``info`` entries :func:`rolling_schedule` adds (declared by every kind that
offers a :class:`Replanner`)."""


@runtime_checkable
class Replanner(Protocol):
    """What a kind offers :func:`rolling_schedule` (``Kind.replanner``).

    An *item* is a unit of work with a release time (a task); a *commitment* is what
    fixing it means to the kind (for ``human_robot``: ``(agent, start_s)``).
    """

    def item_ids(self, instance: Any) -> list[str]:
        """The ids of the items, in instance order."""
        ...

    def releases(self, instance: Any) -> np.ndarray:
        """Release time (s) of each item, in instance order."""
        ...

    def closure(self, instance: Any, visible: np.ndarray) -> np.ndarray:
        """``visible`` (bool per item) plus what a window must also hold (e.g. the
        predecessors of visible items)."""
        ...

    def sub_instance(self, instance: Any, keep: np.ndarray) -> Any:
        """The instance restricted to the items in ``keep`` (same resources)."""
        ...

    def window_params(self, params: Any, committed: Mapping[str, Any], now_s: float) -> Any:
        """The parameters of a window's solve: ``params`` with the ``committed`` items
        fixed and every other item starting at or after ``now_s``."""
        ...

    def plan(self, result: Result) -> Iterable[tuple[str, float, Any]]:
        """(item, start_s, commitment) of every item a window's result schedules."""
        ...

    def combine(
        self, instance: Any, objective: str, committed: Mapping[str, Any], params: Any
    ) -> Outcome:
        """The outcome of the committed schedule of the whole instance (status
        ``feasible``: a rolling horizon proves nothing about optimality)."""
        ...


def rolling_schedule(
    instance: Any,
    objective: str | None = None,
    step_s: float = 60.0,
    lookahead_s: float = 0.0,
    options: SolveOptions | None = None,
    myopic: bool = False,
    max_windows: int = 10_000,
    **params: Any,
) -> Result:
    """Schedule an instance with a rolling horizon.

    Parameters
    ----------
    instance
        Instance (or dict / path) of a kind with a :class:`Replanner` (``human_robot``),
        whose items have release times.
    objective
        The kind's objective (default: the instance's, else the kind's first).
    step_s
        Time between epochs; items starting before the next epoch are committed.
    lookahead_s
        How far ahead of the clock released items are known.
    options
        Options of every window solve (e.g. a per-window time limit).
    myopic
        Baseline: commit each window's whole plan (no re-planning).
    max_windows
        Safety limit on the number of windows.
    **params
        The kind's parameters for the window solves (e.g. ``method="exact"``).

    Returns
    -------
    Result
        The committed schedule, verified on the whole instance; ``feasible``. ``info``
        has ``windows`` and per-window facts (:data:`ROLLING_DETAILS`).
    """
    from .. import pipeline
    from ..api import load
    from ..kinds import get_kind, kind_names

    inst, _ = load(instance)
    kind = get_kind(inst.kind)
    rp = getattr(kind, "replanner", None)
    if rp is None:
        able = [n for n in kind_names() if getattr(get_kind(n), "replanner", None) is not None]
        raise UsageError(f"rolling_schedule supports {', '.join(able)}, not {inst.kind!r}")
    if not step_s > 0:
        raise UsageError(f"step_s must be > 0, got {step_s}")
    if lookahead_s < 0:
        raise UsageError(f"lookahead_s must be >= 0, got {lookahead_s}")
    name = kind.resolve_objective(inst, objective)
    base = kind.parse_params(params)
    options = options or SolveOptions(threads=1)
    session = pipeline.Session(kind, options)
    ids = rp.item_ids(inst)
    n = len(ids)
    release = rp.releases(inst)
    committed: dict[str, Any] = {}
    t = float(release.min())
    windows: list[dict[str, Any]] = []
    look = 0.0 if myopic else lookahead_s
    while len(committed) < n:
        if len(windows) >= max_windows:
            raise UsageError(f"rolling horizon did not finish in {max_windows} windows")
        visible = rp.closure(inst, release <= t + look + 1e-9)
        open_ = visible & np.array([i not in committed for i in ids])
        if not open_.any():
            pending = release[~visible]
            t = max(t + step_s, float(pending.min()) - look) if len(pending) else t + step_s
            continue
        sub = rp.sub_instance(inst, visible)
        t0 = time.perf_counter()
        res = pipeline.solve(kind, sub, name, options, rp.window_params(base, committed, t))
        wall = time.perf_counter() - t0
        session.record_solves(res.report)
        for key, seconds in res.timings.items():
            session.add_time(key, seconds)
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
            failed = Outcome(
                details={"windows": len(windows), "window_log": windows},
                status=res.status,
                termination=f"window at t={t:g} s ended {res.status.value}: {res.termination}",
            )
            return pipeline.finish(kind, inst, name, failed, session)
        last = bool(visible.all())
        for item, start, what in rp.plan(res):
            if item in committed:
                continue
            if myopic or last or start < t + step_s - 1e-9:
                committed[item] = what
        t += step_s
    outcome = rp.combine(inst, name, committed, base)
    outcome.details = {
        "rolling": "myopic" if myopic else "rolling",
        "step_s": step_s,
        "lookahead_s": look,
        "windows": len(windows),
        "window_log": windows,
        "window_wall_s": float(sum(w["wall_s"] for w in windows)),
        **outcome.details,
    }
    return pipeline.finish(kind, inst, name, outcome, session)


def rolling_gap(rolling: Result, reference: Result) -> float:
    """Relative gap ``(rolling - reference) / reference`` of two ``min`` objectives."""
    if rolling.objective_value is None or reference.objective_value is None:
        raise UsageError("both results need an objective value")
    ref = float(reference.objective_value)
    return (float(rolling.objective_value) - ref) / max(abs(ref), 1e-9)
