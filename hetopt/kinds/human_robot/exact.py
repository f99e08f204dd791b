"""The exact MILP of the ``human_robot`` kind as pipeline methods.

* :class:`ExactMilp` (a :class:`~hetopt.contract.BuildMethod`): the MILP of
  :mod:`.formulations`, started from a heuristic schedule, extracted with a left shift.
* :class:`Exact` (a :class:`~hetopt.contract.RunMethod`): the temporal pre-check
  (a positive cycle is a proof of infeasibility), the heuristic MIP start (two rounds of
  the decomposition from 8 tasks), the MILP, the deletion filter when the MILP is
  infeasible (:func:`deletion_filter`), and the fallback to the decomposition when the
  MILP's schedule fails the kind's verifier (numerical trouble).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyomo.environ as pyo

from ...contract import BuildMethodBase, Built, Outcome, RunMethodBase, SolveView
from ...highs import INF as HIGHS_INF
from ...options import SolveOptions
from ...status import Status
from .._shared.choice import Choice, ReportsChoice
from .._shared.export import rescale_objective
from . import formulations as F
from . import verify as V
from .data import HumanRobotInstance, TeamArrays
from .params import HumanRobotParams, Setup, setup
from .pruning import long_pairs, prune, reduce_and_solve
from .tables import conflict_table, objective_of, schedule_tables, start_order
from .temporal import Arc, earliest_schedule, precheck, task_network

if TYPE_CHECKING:
    from ...highs import CompiledModel
    from ...pipeline import Session

log = logging.getLogger(__name__)

DIAGNOSE_CHECK_S = 10.0
"""Time limit of one feasibility check of the deletion filter."""
MIP_START_MIN_TASKS = 8
"""The exact MILP gets a starting solution from two decomposition rounds from this size."""
MIP_START_TIME_S = 2.0
"""Time limit of each allocation MILP of the starting heuristic."""

Schedule = tuple[np.ndarray, np.ndarray]
"""(agent index per task, start per task in seconds)."""


# ---------------------------------------------------------------------------- the MILP
@dataclass(frozen=True)
class ExactMilp(BuildMethodBase):
    """One solve of the exact MILP for ``objective``, MIP-started from ``warm``."""

    objective: str
    warm: Schedule | None = None
    prune: bool = True
    """Leave out the task-agent pairs no optimal schedule uses (:func:`.pruning.prune`);
    ``False`` when ``instance`` is already pruned."""

    def build(self, instance: HumanRobotInstance, params: HumanRobotParams) -> Built:
        su = setup(instance.arrays, params)
        if self.prune:
            instance = prune(instance, self.objective, su).instance
        plan = F.make_plan(instance.arrays, su.fixed_agent, su.fixed_start, su.now_s)
        return F.build(instance, self.objective, plan)

    def describe(
        self, instance: HumanRobotInstance, params: HumanRobotParams, built: Built
    ) -> dict[str, Any]:
        return {"horizon_s": built.layout.plan.horizon_s}

    def unscale_bound(self, built: Built, bound: float) -> float:
        """HiGHS's bound (in units of ``m.obj``) in seconds (or weighted seconds), for a
        solve that stopped without a schedule."""
        return float(bound) * built.layout.objective_scale

    def export_objective(
        self, instance: HumanRobotInstance, params: HumanRobotParams, built: Built
    ) -> None:
        """The objective in seconds (or weighted seconds), as hetopt reports it."""
        rescale_objective(built.model, built.layout.objective_scale)

    def start(
        self,
        instance: HumanRobotInstance,
        params: HumanRobotParams,
        built: Built,
        compiled: CompiledModel,
    ) -> np.ndarray | None:
        if self.warm is None:
            return None
        agent_of, starts = self.warm
        return start_vector(instance.arrays, built, compiled, agent_of, starts)

    def extract(
        self,
        instance: HumanRobotInstance,
        params: HumanRobotParams,
        built: Built,
        solution: SolveView,
    ) -> Outcome:
        arr = instance.arrays
        m = built.model
        layout: F.ExactLayout = built.layout
        plan = layout.plan
        n = arr.num_tasks
        cap = list(m.CAPABLE)
        x = solution.values(m.assign, cap)
        score = np.full((n, arr.num_agents), -1.0)
        tpos = {t: i for i, t in enumerate(arr.task_ids)}
        apos = {a: k for k, a in enumerate(arr.agent_ids)}
        for (t, a), v in zip(cap, x, strict=True):
            score[tpos[t], apos[a]] = v
        agent_of = score.argmax(axis=1)
        tau = plan.time_unit_s
        raw_starts = solution.values(m.start, arr.task_ids) * tau
        dur = arr.duration[np.arange(n), agent_of]
        order = start_order(raw_starts, raw_starts + dur)
        starts = earliest_schedule(arr, agent_of, order, plan.fixed_start, plan.now_s)
        info: dict[str, Any] = {}
        resequenced = False
        if starts is None:  # numerical trouble: the solver's order breaks a constraint
            log.warning("left-shifting the MILP schedule failed; list-scheduling its assignment")
            info["left_shift"] = False
            starts = resequence(arr, self.objective, agent_of, order, plan)
            resequenced = starts is not None
            if starts is None:  # keep the solver's times (the verifier will decide)
                starts = raw_starts
            else:
                info["resequenced"] = True
        value = objective_of(arr, self.objective, agent_of, starts)
        tables = schedule_tables(arr, agent_of, starts)
        info["makespan_s"] = float((starts + dur).max())
        raw_bound = solution.bound
        if raw_bound is None or not np.isfinite(raw_bound):
            if resequenced:  # no proof that the new order is optimal
                return Outcome(value, tables, info, Status.FEASIBLE, _RESEQUENCED, None, None)
            return Outcome(value, tables, info)  # HiGHS's bound and gap stay
        bound = min(float(raw_bound) * layout.objective_scale, value)
        gap = abs(value - bound) / max(abs(value), 1e-9)
        if resequenced and gap > 1e-9:
            return Outcome(value, tables, info, Status.FEASIBLE, _RESEQUENCED, bound, gap)
        if solution.status == Status.OPTIMAL:
            # re-timing never makes a schedule worse than the MILP's, so the gap stays
            # within HiGHS's; beyond it the MILP's times were wrong (numerical trouble)
            # and HiGHS's proof of optimality does not hold for this schedule
            opts = solution.options
            allowed = opts.mip_rel_gap if opts and opts.mip_rel_gap is not None else 1e-4
            if gap > allowed + 1e-6:
                return Outcome(value, tables, info, Status.FEASIBLE, _RETIMED, bound, gap)
            gap = min(gap, solution.gap if solution.gap is not None else gap)
        return Outcome(value, tables, info, bound=bound, gap=gap)


_RETIMED = (
    "HiGHS proved its schedule optimal, but exact re-timing of its order is worse than its "
    "bound allows (numerical tolerance): feasible, with that bound"
)
_RESEQUENCED = (
    "the MILP's order broke a constraint after exact re-timing (numerical tolerance); its "
    "assignment was list-scheduled again"
)


def resequence(
    arr: TeamArrays, objective: str, agent_of: np.ndarray, order: list[int], plan: F.Plan
) -> np.ndarray | None:
    """The best left-shifted list schedule of the assignment ``agent_of`` (the solver's
    order first, then the decomposition's priority orders); ``None`` if none works."""
    from .decomposition import list_schedule, priority_orders

    fs, now = plan.fixed_start, plan.now_s
    dur = arr.duration[np.arange(arr.num_tasks), agent_of]
    best: tuple[float, np.ndarray] | None = None
    es, _ = task_network(arr, dur, dur, fs, now).longest_paths()
    orders: list[list[int]] = [list(order)]
    if es is not None:
        orders += priority_orders(arr, es, dur, 0)
    # the same orders with the long tasks (wide range) last: they delay everything after
    long = long_pairs(arr)[np.arange(arr.num_tasks), agent_of]
    if long.any():
        orders += [[i for i in o if not long[i]] + [i for i in o if long[i]] for o in orders]
    for o in orders:
        cand = list_schedule(arr, agent_of, fs, now, o)
        if cand is None:
            continue
        shifted = earliest_schedule(arr, agent_of, start_order(cand, cand + dur), fs, now)
        cand = cand if shifted is None else shifted
        v = objective_of(arr, objective, agent_of, cand)
        if best is None or v < best[0]:
            best = (v, cand)
    return None if best is None else best[1]


def start_vector(
    arr: TeamArrays,
    built: Built,
    cm: CompiledModel,
    agent_of: np.ndarray,
    starts: np.ndarray,
) -> np.ndarray:
    """The column values of a schedule (assignment + starts) in a compiled exact model."""
    m = built.model
    layout: F.ExactLayout = built.layout
    tau = layout.plan.time_unit_s
    n = arr.num_tasks
    dur = arr.duration[np.arange(n), agent_of]
    ends = starts + dur
    x = np.zeros(cm.num_col)

    def put(var: Any, value: float) -> None:
        j = cm.column(var)
        if j >= 0:
            x[j] = value

    pos = {t: i for i, t in enumerate(arr.task_ids)}
    apos = {a: k for k, a in enumerate(arr.agent_ids)}
    for t, a in m.CAPABLE:
        put(m.assign[t, a], float(agent_of[pos[t]] == apos[a]))
    for t in m.TASKS:
        put(m.start[t], starts[pos[t]] / tau)
        put(m.finish[t], ends[pos[t]] / tau)
    for ti, tj in m.PAIRS:
        i, j = pos[ti], pos[tj]
        put(m.precedes[ti, tj], float((starts[i], ends[i]) <= (starts[j], ends[j])))
    variable = F.OBJECTIVES[layout.objective].variable
    if variable is not None:
        value = objective_of(arr, layout.objective, agent_of, starts)
        put(m.component(variable), value / layout.objective_scale)
    return np.clip(x, cm.col_lower, cm.col_upper)


# ---------------------------------------------------------------------------- the method
def cycle_outcome(cycle: list[Arc], details: dict[str, Any]) -> Outcome:
    """Infeasible: the temporal pre-check found a positive cycle (its arcs are the conflict)."""
    table = conflict_table([(a.label, a.text) for a in cycle])
    info = dict(details)
    info["conflict"] = list(table["constraint"])
    info["conflict_source"] = "positive cycle of the temporal network"
    return Outcome(
        tables={"conflict": table},
        details=info,
        status=Status.INFEASIBLE,
        termination="the temporal network (releases, deadlines, lags) has a positive cycle",
    )


@dataclass(frozen=True)
class Exact(ReportsChoice, RunMethodBase):
    """``method="exact"``: pre-check, MIP start, MILP, diagnosis or fallback."""

    objective: str
    choice: Choice | None = None
    """Set when ``method="auto"`` picked this method (reported in ``info``)."""

    def build(self, instance: HumanRobotInstance, params: HumanRobotParams) -> Built:
        return ExactMilp(self.objective).build(instance, params)

    def export_objective(
        self, instance: HumanRobotInstance, params: HumanRobotParams, built: Built
    ) -> None:
        ExactMilp(self.objective).export_objective(instance, params, built)

    def run(
        self, session: Session, instance: HumanRobotInstance, params: HumanRobotParams
    ) -> Outcome:
        return self.report_choice(self._run(session, instance, params))

    def _run(
        self, session: Session, instance: HumanRobotInstance, params: HumanRobotParams
    ) -> Outcome:
        arr = instance.arrays
        su = setup(arr, params)
        details = su.details("exact")
        cycle = precheck(arr, su.fixed_agent, su.fixed_start, su.now_s)
        if cycle is not None:
            return cycle_outcome(cycle, details)
        quick = params.model_copy(update={"diagnose": False})

        def solve(
            inst: HumanRobotInstance, info: dict[str, Any], warm: Schedule | None, phase: str
        ) -> Outcome:
            if phase == "narrow":
                return self.solve(session, inst, quick, su, info, stage="narrow")
            options = session.remaining() if phase == "after_narrow" else None
            return self.solve(session, inst, params, su, info, warm, options)

        return reduce_and_solve(instance, self.objective, su, details, solve)

    def solve(
        self,
        session: Session,
        instance: HumanRobotInstance,
        params: HumanRobotParams,
        su: Setup,
        details: dict[str, Any],
        warm: Schedule | None = None,
        options: SolveOptions | None = None,
        stage: str = "exact",
    ) -> Outcome:
        """MIP start, MILP, diagnosis or fallback on ``instance`` (already pruned)."""
        arr = instance.arrays
        details = dict(details)
        plan = F.make_plan(arr, su.fixed_agent, su.fixed_start, su.now_s)
        details["horizon_s"] = plan.horizon_s
        if warm is None and arr.num_tasks >= MIP_START_MIN_TASKS:
            t0 = time.perf_counter()
            warm = heuristic_start(session, arr, self.objective, su)
            details["mip_start_s"] = time.perf_counter() - t0
        outcome, _ = session.solve_method(
            ExactMilp(self.objective, warm, prune=False), instance, params, options, stage=stage
        )
        outcome.details = {**details, **outcome.details}
        if outcome.status == Status.INFEASIBLE and params.diagnose:
            with session.timer("diagnose_s"):
                labels, minimal = deletion_filter(session, instance, self.objective, plan)
            table = conflict_table(labels)
            outcome.tables = {"conflict": table}
            outcome.details["conflict"] = list(table["constraint"])
            outcome.details["conflict_source"] = (
                "deletion filter over releases, deadlines, lags and fixed tasks (agents and "
                "locations do one task at a time in every check)"
            )
            outcome.details["conflict_minimal"] = minimal
            return outcome
        rejected = _rejection(instance, self.objective, outcome, su)
        if rejected is None:
            return outcome
        # numerical trouble (e.g. durations 12 orders of magnitude apart: the MILP's
        # tolerance in scaled time exceeds the short tasks): never report a schedule
        # the verifier rejects; fall back to the decomposition, which is verified
        log.warning("the exact MILP's schedule fails verification (%s)", rejected)
        from .decomposition import run_decomposition

        info = {**details, "method": "decomposition", "exact_rejected": rejected}
        return run_decomposition(session, instance, self.objective, su, info)


def _rejection(
    instance: HumanRobotInstance, objective: str, outcome: Outcome, su: Setup
) -> str | None:
    """The verifier's first objection to the MILP's schedule (``None``: none, or no
    schedule).

    The kind's verifier function itself (not ``Kind.verify``, which needs a
    :class:`~hetopt.Result`): whatever the status, a schedule it rejects is replaced by
    the decomposition's; :func:`hetopt.pipeline.finish` verifies the final outcome.
    """
    if "schedule" not in outcome.tables:
        return None
    ver = V.verify(
        instance,
        objective,
        outcome.objective_value,
        outcome.tables["schedule"],
        su.fixed or None,
        su.now_s,
    )
    if ver.ok:
        return None
    return ver.violations[0] if ver.violations else "?"


def heuristic_start(
    session: Session, arr: TeamArrays, objective: str, su: Setup
) -> Schedule | None:
    """A starting schedule for the exact MILP from two rounds of the decomposition
    (``None`` if they find none); their allocation MILPs run on ``session`` (stage
    ``mip_start``)."""
    from .decomposition import relaxation_earliest, search

    fa, fs, now = su.fixed_agent, su.fixed_start, su.now_s
    es = relaxation_earliest(arr, fa, fs, now)
    options = session.options
    quick = SolveOptions(time_limit_s=MIP_START_TIME_S, threads=options.threads, seed=options.seed)
    best, _, _ = search(
        session, arr, objective, quick, fa, fs, now, es, iterations=2, stage="mip_start"
    )
    if best is None:
        return None
    _, agent_of, starts = best
    return agent_of, starts


# ---------------------------------------------------------------------------- diagnosis
def _candidate_rows(
    instance: HumanRobotInstance, m: pyo.ConcreteModel, plan: F.Plan
) -> list[tuple[str, str, list[Any]]]:
    """The soft constraints of the deletion filter: (label, description, rows)."""
    arr = instance.arrays
    ids = arr.task_ids
    pos = {t: i for i, t in enumerate(ids)}
    out: list[tuple[str, str, list[Any]]] = []
    for t in m.c_release:
        i = pos[t]
        if m.release[t] <= 0:
            continue  # start >= 0 is a variable bound anyway
        if plan.now_s is not None and plan.now_s > arr.release[i]:
            label, text = f"now_s[{t}]", f"{t} cannot start before now ({plan.now_s:g} s)"
        else:
            label, text = f"tasks[{i}].release_s", f"{t} starts at or after {arr.release[i]:g} s"
        out.append((label, text, [m.c_release[t]]))
    for t in m.c_deadline:
        i = pos[t]
        out.append(
            (f"tasks[{i}].deadline_s", f"{t} ends by {arr.deadline[i]:g} s", [m.c_deadline[t]])
        )
    for k in m.c_min_lag:
        b, a = ids[arr.prec_before[k]], ids[arr.prec_after[k]]
        out.append(
            (
                f"precedence[{k}].min_lag_s",
                f"{a} starts at least {arr.prec_min[k]:g} s after {b} ends",
                [m.c_min_lag[k]],
            )
        )
    for k in m.c_max_lag:
        b, a = ids[arr.prec_before[k]], ids[arr.prec_after[k]]
        out.append(
            (
                f"precedence[{k}].max_lag_s",
                f"{a} starts at most {arr.prec_max[k]:g} s after {b} ends",
                [m.c_max_lag[k]],
            )
        )
    for t in m.FIXED:
        out.append(
            (
                f"fixed.{t}",
                f"{t} already started at {m.fixed_start[t] * plan.time_unit_s:g} s",
                [m.c_fixed_start[t], m.c_fixed_agent[t]],
            )
        )
    return out


def deletion_filter(
    session: Session, instance: HumanRobotInstance, objective: str, plan: F.Plan
) -> tuple[list[tuple[str, str]], bool]:
    """Deletion filter (Chinneck): drop each soft constraint (release, deadline, lag,
    fixed task) in turn and keep it dropped if the rest is still infeasible.

    Runs on the ``loose`` model (big-M from the horizon only), so switching a row off
    is exact; every check is one HiGHS run on ``session`` (stage ``diagnose``). Returns
    the conflict and whether every check was decided (then the set is irreducible:
    removing any one member makes the rest feasible).
    """
    with session.timer("build_s"):
        built = F.build(instance, objective, plan, loose=True)
    live = session.open(built)
    hm = live.highs_model
    cm = hm.compiled
    h = hm.highs
    hm.set_objective_coefficients(np.arange(cm.num_col), np.zeros(cm.num_col))  # feasibility
    options = session.options
    limit = DIAGNOSE_CHECK_S
    if options.time_limit_s:
        limit = min(limit, float(options.time_limit_s))
    check_opts = options.replace(time_limit_s=limit)
    minimal = True
    keep: list[tuple[str, str]] = []
    for label, text, cons in _candidate_rows(instance, built.model, plan):
        rows = [r for c in cons for r in cm.row_index.get(id(c), [])]
        saved = [(r, cm.row_lower[r], cm.row_upper[r]) for r in rows]
        for r, _, _ in saved:
            h.changeRowBounds(r, -float(HIGHS_INF), float(HIGHS_INF))
        h.clearSolver()
        view = live.solve(check_opts, stage="diagnose")
        if view.status == Status.INFEASIBLE:
            continue  # still infeasible without it: leave it out
        if not view.status.has_solution:
            minimal = False
        for r, lo, hi in saved:
            h.changeRowBounds(r, lo, hi)
        keep.append((label, text))
    if not keep:  # the soft constraints are not the cause (should not happen)
        minimal = False
    return keep, minimal
