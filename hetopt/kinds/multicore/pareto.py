"""The makespan-energy Pareto front by the epsilon-constraint method.

One model is compiled once and kept in a persistent HiGHS object (a
:class:`~hetopt.pipeline.LiveModel` of the session); each step changes the bounds of
``makespan`` and ``energy`` and the two objective coefficients:

1. ``C* = min makespan`` (the left end of the front).
2. ``E* = min energy``, then ``min makespan s.t. energy <= E*``: the right end.
3. From the last point ``(C, E)``: ``min energy s.t. makespan <= C - delta``, then
   ``min makespan s.t. energy <=`` that energy; repeat until the makespan reaches ``C*``.

With whole-number durations (and releases and windows) every makespan of a semi-active schedule is a whole number,
so ``delta = 1`` enumerates every non-dominated point (up to ``pareto_points``).
Otherwise ``delta = (C_right - C*) / (pareto_points - 1)``: each point is Pareto-optimal
but points between two steps may be skipped.

Solves are reported in the stages ``makespan`` (``C*`` and each point's second solve)
and ``energy`` (each point's first solve).
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ...contract import Built, Outcome, RunMethodBase, SolveView
from ...options import SolveOptions
from ...status import Status
from .._shared.export import rescale_objective
from . import formulations as F
from .data import MulticoreArrays, MulticoreInstance
from .heuristics import Schedule
from .solve import (
    MulticoreParams,
    Prepared,
    plan_info,
    prepare,
    schedule_from_solution,
    tables_of,
    whole_second_gap,
)

if TYPE_CHECKING:
    from ...pipeline import LiveModel, Session

log = logging.getLogger(__name__)

_REL = 1e-7

Point = tuple[float, float, Schedule]
"""(makespan, energy, schedule) of one point of the front."""


def non_dominated(points: list[tuple[float, float]], tol: float = 1e-6) -> list[int]:
    """Indices of the points no other point dominates (ties: the first one is kept)."""
    keep = []
    for i, (m1, e1) in enumerate(points):
        dominated = False
        for j, (m2, e2) in enumerate(points):
            if i == j:
                continue
            weakly = m2 <= m1 + tol and e2 <= e1 + tol
            strictly = m2 < m1 - tol or e2 < e1 - tol
            if weakly and (strictly or j < i):
                dominated = True
                break
        if not dominated:
            keep.append(i)
    return keep


class _Epsilon:
    """The epsilon-constraint solves on one live model: bounds, objective, accounting."""

    def __init__(self, session: Session, live: LiveModel):
        self.session = session
        self.live = live
        self.built: Built = live.built
        self.prep: Prepared = live.layout
        m, cm = live.model, live.compiled
        self.j_mk, self.j_en = cm.column(m.makespan), cm.column(m.energy)
        self.mk_lo = float(cm.col_lower[self.j_mk])
        self.mk_hi = float(cm.col_upper[self.j_mk])
        self.en_hi = float(cm.col_upper[self.j_en])
        self.statuses: list[Status] = []
        self.timed_out = False

    def options(self, which: str) -> SolveOptions | None:
        """The session's options for one solve (``None``: out of time)."""
        opts = self.session.options
        if opts.time_limit_s is not None:
            left = opts.time_limit_s - self.session.elapsed()
            if left <= 0:
                self.timed_out = True
                return None
            opts = opts.replace(time_limit_s=left)
        if which == "makespan":
            if self.prep.arrays.integer_times:
                opts = whole_second_gap(opts, self.prep.plan.t_ref)
        elif "mip_abs_gap" not in opts.highs_options:
            # HiGHS keeps options between runs: undo the makespan runs' whole-second gap
            opts = opts.replace(highs_options={**opts.highs_options, "mip_abs_gap": 1e-6})
        return opts

    def solve(
        self, which: str, mk_ub: float, en_ub: float, start: np.ndarray | None
    ) -> SolveView | None:
        """Minimise ``which`` (``"makespan"`` or ``"energy"``) under the two bounds
        (scaled units); ``None`` when out of time."""
        opts = self.options(which)
        if opts is None:
            return None
        m, hm = self.live.model, self.live.highs_model
        hm.set_col_bounds(m.makespan, self.mk_lo, max(mk_ub, self.mk_lo))
        hm.set_col_bounds(m.energy, 0.0, en_ub if math.isfinite(en_ub) else None)
        costs = np.array([1.0, 0.0]) if which == "makespan" else np.array([0.0, 1.0])
        hm.set_objective_coefficients(np.array([self.j_mk, self.j_en]), costs)
        if start is not None:
            hm.set_start(start)
        view = self.live.solve(opts, stage=which)
        self.statuses.append(view.status)
        if view.status in (Status.FEASIBLE, Status.NO_SOLUTION):
            self.timed_out = True  # a limit was hit: the front is not proven
        return view

    def point(self, mk_ub: float) -> Point | None:
        """min energy s.t. makespan <= mk_ub (seconds), then min makespan at that energy."""
        t_ref, arr = self.prep.plan.t_ref, self.prep.arrays
        first = self.solve("energy", mk_ub / t_ref, self.en_hi, None)
        if first is None or not first.status.has_solution:
            return None
        e = float(first.objective or 0.0)
        e_ub = min(e * (1 + _REL) + 1e-9, self.en_hi)
        second = self.solve("makespan", mk_ub / t_ref, e_ub, first.x)
        best = second if second is not None and second.status.has_solution else first
        sched = schedule_from_solution(self.built, best)
        return sched.makespan, arr.energy(sched.core, sched.makespan), sched


class Pareto(RunMethodBase):
    """The makespan-energy front (see the module docstring); ``build`` is the model of
    every solve (minimising the makespan, the serial-bound horizon)."""

    def build(self, instance: MulticoreInstance, params: MulticoreParams) -> Built:
        return prepare(instance, params, "pareto")

    def export_objective(
        self, instance: MulticoreInstance, params: MulticoreParams, built: Built
    ) -> None:
        """The first stage, the shortest makespan, in seconds (the later points add an
        energy or makespan cap to this model and change its objective; they are not
        exported)."""
        rescale_objective(built.model, built.layout.plan.scale)

    def run(
        self, session: Session, instance: MulticoreInstance, params: MulticoreParams
    ) -> Outcome:
        built = session.build(self, instance, params)
        prep: Prepared = built.layout
        arr, plan = prep.arrays, prep.plan
        live = session.open(built)
        eps = _Epsilon(session, live)
        x0 = None
        if prep.heuristic is not None:
            x0 = F.start_vector(built.model, prep.layout, live.compiled, arr, prep.heuristic)
        first = eps.solve("makespan", eps.mk_hi, eps.en_hi, x0)
        if first is None:
            return Outcome(
                details=plan_info(prep),
                status=Status.NO_SOLUTION,
                termination="time limit before the first solve",
            )
        if not first.status.has_solution:
            return Outcome(
                details=plan_info(prep), status=first.status, termination=first.termination
            )
        first_sched = schedule_from_solution(built, first)
        c_star = first_sched.makespan
        points: list[Point] = []
        session.notify("point", 0, params.pareto_points, f"shortest makespan {c_star:.6g} s")
        p = eps.point(eps.mk_hi * plan.t_ref)
        if p is not None:
            points.append(p)
            session.notify("point", len(points), params.pareto_points, _point_text(p))
        step = 1.0
        if p is not None and not arr.integer_times:
            step = max((p[0] - c_star) / (params.pareto_points - 1), 1e-6 * max(c_star, 1e-9))
        while p is not None and len(points) < params.pareto_points and not eps.timed_out:
            c_last = points[-1][0]
            if c_last <= c_star * (1 + 1e-9) + 1e-9:
                break
            mk_ub = max(c_last - step, c_star)
            if arr.integer_times:
                mk_ub = c_last - 1 + 1e-6
            p = eps.point(mk_ub)
            if p is not None:
                if p[0] >= c_last - 1e-9:  # no progress (numerics): stop
                    break
                points.append(p)
                session.notify("point", len(points), params.pareto_points, _point_text(p))
        if not points:  # out of time after the first solve: its schedule is all there is
            points.append((c_star, arr.energy(first_sched.core, c_star), first_sched))
        return _front(arr, prep, eps, points, c_star, params.pareto_points)


def _point_text(p: Point) -> str:
    return f"makespan {p[0]:.6g} s, energy {p[1]:.6g} J"


def _front(
    arr: MulticoreArrays,
    prep: Prepared,
    eps: _Epsilon,
    points: list[Point],
    c_star: float,
    pareto_points: int,
) -> Outcome:
    """The ``pareto`` and ``schedule`` tables of the non-dominated points."""
    termination = "every point solved to optimality"
    if eps.timed_out:
        termination = "time limit: the front may be incomplete or not proven optimal"
    elif len(points) >= pareto_points and points[-1][0] > c_star * (1 + 1e-9) + 1e-9:
        termination = f"stopped at pareto_points={pareto_points}; the front continues"
    keep = non_dominated([(mk, en) for mk, en, _ in points])
    kept = sorted((points[i] for i in keep), key=lambda q: q[0])
    front = pd.DataFrame(
        {
            "point": np.arange(len(kept)),
            "makespan_s": [q[0] for q in kept],
            "energy_j": [q[1] for q in kept],
        }
    )
    parts = []
    for k, (_, _, sched) in enumerate(kept):
        df = tables_of(arr, sched)["schedule"]
        df.insert(0, "point", k)
        parts.append(df)
    schedule = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    all_optimal = not eps.timed_out and all(
        s in (Status.OPTIMAL, Status.INFEASIBLE) for s in eps.statuses
    )
    status = Status.OPTIMAL if all_optimal and kept else Status.FEASIBLE
    info: dict[str, Any] = plan_info(prep)
    info.update({"points": len(kept), "solves": len(eps.statuses), "min_makespan_s": c_star})
    return Outcome(
        None, {"pareto": front, "schedule": schedule}, info, status, termination, None, None
    )
