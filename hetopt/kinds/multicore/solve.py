"""Solving ``multicore`` instances: parameters, plan, the makespan/energy MILP method and
the LP-relaxation method (the Pareto front is :mod:`.pareto`)."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ...contract import (
    BuildMethodBase,
    Built,
    Method,
    Outcome,
    RunMethodBase,
    SolveView,
)
from ...errors import UsageError
from ...options import SolveOptions
from ...status import Status
from .._shared.export import rescale_objective
from . import formulations as F
from .data import MulticoreArrays, MulticoreInstance
from .goals import GOALS, _order_reason, check_formulation
from .heuristics import Schedule, left_shift
from .params import MulticoreParams

if TYPE_CHECKING:
    from ...highs import CompiledModel
    from ...pipeline import Session

log = logging.getLogger(__name__)

_INT_TOL = 1e-6


# ------------------------------------------------------------------------------- plan
def make_plan(
    arr: MulticoreArrays,
    objective: str,
    formulation: str,
    heuristic: Schedule | None,
    symmetry: bool = True,
) -> F.Plan:
    """Resolve the formulation and choose the scales and the horizon.

    The horizon (big-M of the disjunctive model, length of the time-indexed one) is the
    list-scheduling makespan when minimising the makespan without an energy budget (an
    optimal schedule is never longer), otherwise the serial bound (the latest release or
    window start plus the sum of each task's longest duration: no semi-active schedule
    is longer); a deadline caps both. Without a list schedule (windows it could not
    fill) the serial bound serves for both.
    """
    if formulation not in F.FORMULATIONS:
        raise UsageError(
            f"formulation must be one of {', '.join(F.FORMULATIONS)}, got {formulation!r}"
        )
    goal = GOALS[objective]
    serial = arr.serial_bound()
    if heuristic is None:
        horizon = serial
        t_ref = serial if serial > 0 else 1.0
    else:
        t_ref = heuristic.makespan if heuristic.makespan > 0 else 1.0
        if goal.list_horizon and arr.budget is None:
            horizon = heuristic.makespan
        else:
            horizon = max(serial, heuristic.makespan)
    p_ref = float(max(arr.active.max(), arr.idle.max()))
    p_ref = p_ref if p_ref > 0 else 1.0
    if goal.user_units:
        t_ref = 1.0
    e_ref = p_ref * t_ref
    if arr.deadline is not None:
        horizon = min(horizon, arr.deadline)
    integer = arr.integer_times
    assignment_ok = goal.assignment_exact and not arr.sequencing
    choice = ""
    if formulation == "auto":
        formulation, choice = _auto_formulation(arr, objective, horizon, integer, assignment_ok)
        log.info("multicore: %s", choice)
    check_formulation(arr, formulation, objective)
    return F.Plan(
        formulation=formulation,
        objective=goal.minimise,
        t_ref=float(t_ref),
        e_ref=float(e_ref),
        horizon=float(horizon),
        symmetry=symmetry,
        integer_makespan=integer and goal.whole_makespan,
        integer_objective=integer and goal.whole_weighted and arr.integer_weights,
        choice=choice,
    )


def _auto_formulation(
    arr: MulticoreArrays, objective: str, horizon: float, integer: bool, assignment_ok: bool
) -> tuple[str, str]:
    """What ``formulation="auto"`` builds, and why (``info["method_choice"]``)."""
    if assignment_ok:
        return "assignment", "auto chose assignment (independent tasks: no order to model)"
    why = _order_reason(arr, objective)
    if not integer:
        return "disjunctive", (
            f"auto chose disjunctive (tasks need an order: {why}; durations, releases or "
            "window bounds are not whole numbers, which time_indexed needs)"
        )
    limits = f"{F.TIME_INDEXED_MAX_HORIZON:g} s, {F.TIME_INDEXED_MAX_SLOTS:,} start binaries"
    if horizon > F.TIME_INDEXED_MAX_HORIZON:
        return "disjunctive", (
            f"auto chose disjunctive (tasks need an order: {why}; whole-number times, but "
            f"the horizon {horizon:g} s exceeds time_indexed's limits: {limits})"
        )
    slots = F.horizon_slots(arr, horizon)
    if slots <= F.TIME_INDEXED_MAX_SLOTS:
        return "time_indexed", (
            f"auto chose time_indexed (tasks need an order: {why}; whole-number times, "
            f"horizon {horizon:g} s and {slots:,} start binaries within {limits}); "
            "formulation='disjunctive' for the big-M model"
        )
    return "disjunctive", (
        f"auto chose disjunctive (tasks need an order: {why}; whole-number times, but "
        f"{slots:,} start binaries exceed time_indexed's limits: {limits})"
    )


@dataclass(frozen=True)
class Prepared:
    """The layout of a ``multicore`` model (:attr:`Built.layout`): the formulation's
    :class:`~.formulations.Layout` plus what the plan was made from."""

    arrays: MulticoreArrays
    """Of the instance under the parameters' ``deadline_s`` / ``energy_budget_j``."""
    heuristic: Schedule | None
    """The best list schedule: ``t_ref``, the horizon, the warm start, an incumbent
    (``None``: the greedy schedules found no room in the cores' windows)."""
    layout: F.Layout

    @property
    def plan(self) -> F.Plan:
        return self.layout.plan


def prepare(instance: MulticoreInstance, params: MulticoreParams, objective: str) -> Built:
    """List-schedule, plan and build the model (the instance carries the parameters'
    limits already: :meth:`MulticoreKind.instance_for`)."""
    arr = instance.arrays
    heuristic = GOALS[objective].heuristic(arr)
    plan = make_plan(arr, objective, params.formulation, heuristic, params.symmetry)
    built = F.build(arr, plan)
    return Built(built.model, Prepared(arr, heuristic, built.layout))


def whole_second_gap(options: SolveOptions, t_ref: float) -> SolveOptions:
    """With whole-number durations a makespan gap below one second proves optimality
    (unless the user set ``mip_abs_gap``); likewise a weighted completion gap below one
    with whole-number times and weights."""
    if "mip_abs_gap" not in options.highs_options:
        gap = (1.0 - 1e-3) / t_ref
        return options.replace(highs_options={**options.highs_options, "mip_abs_gap": gap})
    return options


def plan_info(prep: Prepared) -> dict[str, Any]:
    """The details every ``multicore`` result reports (known before solving)."""
    plan = prep.plan
    info: dict[str, Any] = {"formulation": plan.formulation, "horizon_s": plan.horizon}
    if prep.heuristic is not None:
        info["heuristic_makespan_s"] = prep.heuristic.makespan
        if plan.weighted:
            h = prep.arrays.weighted_completion(prep.heuristic.end)
            info["heuristic_weighted_completion"] = h
    info["symmetry_classes"] = len(prep.arrays.identical_core_classes()) if plan.symmetry else 0
    if plan.choice:
        info["method_choice"] = plan.choice
    return info


# ------------------------------------------------------------------------------- extraction
def schedule_from_solution(built: Built, solution: SolveView) -> Schedule:
    """The assignment and core orders of a MIP solution, left-shifted (semi-active)."""
    prep: Prepared = built.layout
    m, arr, plan, pairs = built.model, prep.arrays, prep.plan, prep.layout.pairs
    n = arr.num_tasks
    a = solution.values(m.assign, range(len(pairs)))
    # each task's core: its pair with the largest assign value
    best = np.full(n, -1.0)
    core = np.zeros(n, dtype=np.int64)
    for k in np.argsort(a, kind="stable"):
        i = pairs.task[k]
        if a[k] >= best[i]:
            best[i], core[i] = a[k], pairs.core[k]
    slots = prep.layout.slots
    if plan.formulation == "disjunctive":
        key = solution.values(m.start, range(n))
    elif slots is not None:
        z = solution.values(m.start_at, range(len(slots.pair)))
        key = np.zeros(n)
        on = z > 0.5
        key[pairs.task[slots.pair[on]]] = slots.time[on] / plan.t_ref
    else:
        key = np.zeros(n)
    return left_shift(arr, core, np.round(key, 6))


def tables_of(arr: MulticoreArrays, sched: Schedule, jobs: bool = False) -> dict[str, pd.DataFrame]:
    """``schedule`` (one row per task; with a ``job`` column when the instance names
    jobs), ``cores`` (one row per core) and, with ``jobs``, ``jobs`` (one row per job)."""
    n = arr.num_tasks
    order = np.lexsort((sched.core, sched.start))
    columns: dict[str, Any] = {"task": [arr.task_ids[i] for i in order]}
    if arr.has_jobs:
        columns["job"] = [arr.job_ids[arr.job[i]] for i in order]
    columns.update(
        {
            "core": [arr.core_ids[sched.core[i]] for i in order],
            "core_type": [arr.core_types[sched.core[i]] for i in order],
            "start_s": sched.start[order],
            "end_s": sched.end[order],
        }
    )
    schedule = pd.DataFrame(columns)
    p = arr.dur[np.arange(n), sched.core]
    busy = np.bincount(sched.core, weights=p, minlength=arr.num_cores)
    mk = sched.makespan
    cores = pd.DataFrame(
        {
            "core": arr.core_ids,
            "core_type": arr.core_types,
            "busy_s": busy,
            "idle_s": mk - busy,
            "energy_j": arr.active * busy + arr.idle * (mk - busy),
        }
    )
    out = {"schedule": schedule, "cores": cores}
    if jobs or arr.has_jobs:
        out["jobs"] = jobs_table(arr, sched)
    return out


def jobs_table(arr: MulticoreArrays, sched: Schedule) -> pd.DataFrame:
    """``jobs(job, weight, arrival_s, completion_s, jct_s, weighted_completion_s)``."""
    done = arr.completion(sched.end)
    arrival = np.full(arr.num_jobs, np.inf)
    np.minimum.at(arrival, arr.job, arr.release)
    return pd.DataFrame(
        {
            "job": arr.job_ids,
            "weight": arr.weight,
            "arrival_s": arrival,
            "completion_s": done,
            "jct_s": done - arrival,
            "weighted_completion_s": arr.weight * done,
        }
    )


def scaled_bound(plan: F.Plan, bound: float | None) -> float | None:
    """A bound of the model's objective in the objective's unit (``None`` if unknown);
    whole-number makespans round it up."""
    if bound is None or not math.isfinite(bound):
        return None
    b = bound * plan.scale
    if plan.whole_objective:
        b = math.ceil(b - _INT_TOL)
    return float(b)


def _gap(value: float, bound: float | None) -> float | None:
    if bound is None:
        return None
    return max(value - bound, 0.0) / max(abs(value), 1e-9)


def _measures(arr: MulticoreArrays, sched: Schedule) -> dict[str, float]:
    """Objective name -> value of a schedule."""
    mk = sched.makespan
    return {
        "makespan": mk,
        "energy": arr.energy(sched.core, mk),
        "weighted_completion": arr.weighted_completion(sched.end),
    }


def _details(measures: dict[str, float], objective: str) -> dict[str, Any]:
    """The schedule's makespan and energy (and weighted completion when minimised)."""
    out: dict[str, Any] = {"makespan_s": measures["makespan"], "energy_j": measures["energy"]}
    if objective == "weighted_completion":
        out["weighted_completion_s"] = measures["weighted_completion"]
    return out


# ------------------------------------------------------------------------------- methods
class Scheduled(BuildMethodBase):
    """One MILP minimising the makespan or the energy (the plan picks the formulation),
    warm-started from the list schedule; the reported schedule is the solution's
    left-shifted schedule."""

    def __init__(self, objective: str):
        self.objective = objective

    def build(self, instance: MulticoreInstance, params: MulticoreParams) -> Built:
        return prepare(instance, params, self.objective)

    def describe(
        self, instance: MulticoreInstance, params: MulticoreParams, built: Built
    ) -> dict[str, Any]:
        return plan_info(built.layout)

    def start(
        self,
        instance: MulticoreInstance,
        params: MulticoreParams,
        built: Built,
        compiled: CompiledModel,
    ) -> np.ndarray | None:
        prep: Prepared = built.layout
        if not params.warm_start or prep.heuristic is None:
            return None
        return F.start_vector(built.model, prep.layout, compiled, prep.arrays, prep.heuristic)

    def options(
        self,
        instance: MulticoreInstance,
        params: MulticoreParams,
        built: Built,
        options: SolveOptions,
    ) -> SolveOptions:
        plan = built.layout.plan
        return whole_second_gap(options, plan.t_ref) if plan.whole_objective else options

    def export_objective(
        self, instance: MulticoreInstance, params: MulticoreParams, built: Built
    ) -> None:
        """The makespan in seconds or the energy in joules (the model's is in units of
        ``t_ref`` / ``e_ref``)."""
        rescale_objective(built.model, built.layout.plan.scale)

    def unscale_bound(self, built: Built, bound: float) -> float:
        # HiGHS reports a finite bound or none when it stops without a solution
        b = scaled_bound(built.layout.plan, bound)
        return bound if b is None else b

    def extract(
        self,
        instance: MulticoreInstance,
        params: MulticoreParams,
        built: Built,
        solution: SolveView,
    ) -> Outcome:
        prep: Prepared = built.layout
        arr = prep.arrays
        sched = schedule_from_solution(built, solution)
        measures = _measures(arr, sched)
        value = measures[self.objective]
        bound = scaled_bound(prep.plan, solution.bound)
        if bound is not None:
            bound = min(bound, value)
        status = None
        if solution.status == Status.FEASIBLE and bound is not None and value <= bound + _INT_TOL:
            status = Status.OPTIMAL  # e.g. a whole-number makespan equal to its rounded bound
        details = _details(measures, self.objective)
        tables = tables_of(arr, sched, jobs=self.objective == "weighted_completion")
        if bound is None:  # no usable bound: keep HiGHS's
            return Outcome(value, tables, details, status)
        return Outcome(value, tables, details, status, bound=bound, gap=_gap(value, bound))


def heuristic_ok(arr: MulticoreArrays, sched: Schedule | None) -> bool:
    """Is there a schedule, and does it meet the deadline and the energy budget?"""
    if sched is None:
        return False
    mk = sched.makespan
    if arr.deadline is not None and mk > arr.deadline * (1 + 1e-9):
        return False
    return not (arr.budget is not None and arr.energy(sched.core, mk) > arr.budget * (1 + 1e-9))


class Relaxation(RunMethodBase):
    """The LP relaxation of :class:`Scheduled`'s model as a fast lower bound; the list
    schedule as the incumbent (``optimal`` only when they meet)."""

    def __init__(self, objective: str):
        self.objective = objective
        self.mip = Scheduled(objective)

    def build(self, instance: MulticoreInstance, params: MulticoreParams) -> Built:
        return self.mip.build(instance, params)

    def export_objective(
        self, instance: MulticoreInstance, params: MulticoreParams, built: Built
    ) -> None:
        self.mip.export_objective(instance, params, built)

    def run(
        self, session: Session, instance: MulticoreInstance, params: MulticoreParams
    ) -> Outcome:
        from ...highs import HighsModel, compile_model

        built = session.build(self, instance, params)
        prep: Prepared = built.layout
        arr, heuristic = prep.arrays, prep.heuristic
        with session.timer("transfer_s"):
            cm = compile_model(built.model)
            cm.integrality[:] = 0
            live = session.adopt(built, HighsModel(cm))
        lp = live.solve(stage="relaxation")
        with session.timer("load_s"):
            return self._outcome(arr, heuristic, prep, lp)

    def _outcome(
        self, arr: MulticoreArrays, heuristic: Schedule | None, prep: Prepared, lp: SolveView
    ) -> Outcome:
        info = plan_info(prep)
        info["relaxation"] = True
        bound = scaled_bound(prep.plan, lp.objective) if lp.status == Status.OPTIMAL else None
        if lp.status in (Status.INFEASIBLE, Status.UNBOUNDED):
            return Outcome(
                None,
                details=info,
                status=Status.INFEASIBLE,
                termination=f"LP relaxation: {lp.termination}",
                bound=bound,
                gap=None,
            )
        if heuristic is None or not heuristic_ok(arr, heuristic):
            why = (
                "no list schedule fits the cores' windows"
                if heuristic is None
                else "the list schedule breaks a deadline or budget"
            )
            return Outcome(
                None,
                details=info,
                status=Status.NO_SOLUTION,
                termination=f"LP relaxation bound only ({why})",
                bound=bound,
                gap=None,
            )
        measures = _measures(arr, heuristic)
        value = measures[self.objective]
        info.update(_details(measures, self.objective))
        if bound is not None:
            bound = min(bound, value)
        proven = bound is not None and value <= bound + _INT_TOL * max(1.0, abs(value))
        return Outcome(
            value,
            tables_of(arr, heuristic, jobs=self.objective == "weighted_completion"),
            info,
            Status.OPTIMAL if proven else Status.FEASIBLE,
            "list schedule with LP relaxation bound",
            bound=bound,
            gap=_gap(value, bound),
        )


class Refused(RunMethodBase):
    """A parameter combination that is not offered: ``hetopt export`` still writes
    ``method``'s model, solving raises a :class:`~hetopt.UsageError`."""

    def __init__(self, method: Method, reason: str):
        self.method = method
        self.reason = reason

    def build(self, instance: MulticoreInstance, params: MulticoreParams) -> Built:
        return self.method.build(instance, params)

    def export_objective(
        self, instance: MulticoreInstance, params: MulticoreParams, built: Built
    ) -> None:
        self.method.export_objective(instance, params, built)

    def run(
        self, session: Session, instance: MulticoreInstance, params: MulticoreParams
    ) -> Outcome:
        raise UsageError(self.reason)
