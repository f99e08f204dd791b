"""Solving ``multicore`` instances: plan, build, warm start, extract, LP bound, Pareto front."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyomo.environ as pyo

from ...highs import CompiledModel, HighsModel, RawSolution, compile_model
from ...options import SolveOptions
from ...result import Result
from ...status import Status
from ..base import Extracted, UsageError, run_model
from . import formulations as F
from .data import MulticoreArrays, MulticoreInstance
from .heuristics import Schedule, best_list_schedule, left_shift

if TYPE_CHECKING:
    from . import MulticoreKind

log = logging.getLogger(__name__)

_INT_TOL = 1e-6


def make_plan(
    arr: MulticoreArrays,
    objective: str,
    formulation: str,
    heuristic: Schedule,
    symmetry: bool = True,
) -> F.Plan:
    """Resolve the formulation and choose the scales and the horizon.

    The horizon (big-M of the disjunctive model, length of the time-indexed one) is the
    list-scheduling makespan when minimising the makespan without an energy budget (an
    optimal schedule is never longer), otherwise the serial bound (sum of each task's
    longest duration: no semi-active schedule is longer); a deadline caps both.
    """
    if formulation not in F.FORMULATIONS:
        raise UsageError(
            f"formulation must be one of {', '.join(F.FORMULATIONS)}, got {formulation!r}"
        )
    t_ref = heuristic.makespan if heuristic.makespan > 0 else 1.0
    p_ref = float(max(arr.active.max(), arr.idle.max()))
    p_ref = p_ref if p_ref > 0 else 1.0
    if objective == "makespan" and arr.budget is None:
        horizon = heuristic.makespan
    else:
        horizon = max(arr.serial_bound(), heuristic.makespan)
    if arr.deadline is not None:
        horizon = min(horizon, arr.deadline)
    integer = arr.integer_durations
    if formulation == "auto":
        if not arr.has_dag:
            formulation = "assignment"
        elif (
            integer
            and horizon <= F.TIME_INDEXED_MAX_HORIZON
            and F.horizon_slots(arr, horizon) <= F.TIME_INDEXED_MAX_SLOTS
        ):
            formulation = "time_indexed"
        else:
            formulation = "disjunctive"
    if formulation == "assignment" and arr.has_dag:
        raise UsageError(
            "formulation 'assignment' is for independent tasks; this instance has predecessors"
        )
    if formulation == "time_indexed" and not integer:
        raise UsageError("formulation 'time_indexed' needs whole-number durations")
    return F.Plan(
        formulation=formulation,
        objective="energy" if objective == "energy" else "makespan",
        t_ref=float(t_ref),
        e_ref=float(p_ref * t_ref),
        horizon=float(horizon),
        symmetry=symmetry,
        integer_makespan=integer and objective == "makespan",
    )


def _options_for(plan: F.Plan, options: SolveOptions) -> SolveOptions:
    """With whole-number durations a makespan gap below one second proves optimality."""
    if plan.integer_makespan and "mip_abs_gap" not in options.highs_options:
        gap = (1.0 - 1e-3) / plan.t_ref
        return options.replace(highs_options={**options.highs_options, "mip_abs_gap": gap})
    return options


def schedule_from_solution(
    m: Any, cm: CompiledModel, raw: RawSolution, arr: MulticoreArrays
) -> Schedule:
    """The assignment and core orders of a MIP solution, left-shifted (semi-active)."""
    plan: F.Plan = m._plan
    pairs: F.Pairs = m._pairs
    n = arr.num_tasks
    a = raw.values(cm, m.assign, range(len(pairs)))
    # each task's core: its pair with the largest assign value
    best = np.full(n, -1.0)
    core = np.zeros(n, dtype=np.int64)
    for k in np.argsort(a, kind="stable"):
        i = pairs.task[k]
        if a[k] >= best[i]:
            best[i], core[i] = a[k], pairs.core[k]
    if plan.formulation == "disjunctive":
        key = raw.values(cm, m.start, range(n))
    elif plan.formulation == "time_indexed":
        slots: F.Slots = m._slots
        z = raw.values(cm, m.start_at, range(len(slots.pair)))
        key = np.zeros(n)
        on = z > 0.5
        key[pairs.task[slots.pair[on]]] = slots.time[on] / plan.t_ref
    else:
        key = np.zeros(n)
    return left_shift(arr, core, np.round(key, 6))


def tables_of(arr: MulticoreArrays, sched: Schedule) -> dict[str, pd.DataFrame]:
    """``schedule`` (one row per task) and ``cores`` (one row per core) tables."""
    n = arr.num_tasks
    order = np.lexsort((sched.core, sched.start))
    schedule = pd.DataFrame(
        {
            "task": [arr.task_ids[i] for i in order],
            "core": [arr.core_ids[sched.core[i]] for i in order],
            "core_type": [arr.core_types[sched.core[i]] for i in order],
            "start_s": sched.start[order],
            "end_s": sched.end[order],
        }
    )
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
    return {"schedule": schedule, "cores": cores}


def _scaled_bound(plan: F.Plan, bound: float | None, objective: str) -> float | None:
    if bound is None or not math.isfinite(bound):
        return None
    if objective == "makespan":
        b = bound * plan.t_ref
        if plan.integer_makespan:
            b = math.ceil(b - _INT_TOL)
        return float(b)
    return float(bound * plan.e_ref)


def _gap(value: float, bound: float | None) -> float | None:
    if bound is None:
        return None
    return max(value - bound, 0.0) / max(abs(value), 1e-9)


def solve(
    kind: MulticoreKind,
    instance: MulticoreInstance,
    objective: str,
    options: SolveOptions,
    formulation: str = "auto",
    relaxation: bool = False,
    warm_start: bool = True,
    symmetry: bool = True,
    pareto_points: int = 25,
) -> Result:
    """Solve one objective (or the Pareto front) of a ``multicore`` instance."""
    arr = instance.arrays
    heuristic = best_list_schedule(arr)
    if objective == "pareto":
        from .pareto import solve_pareto

        return solve_pareto(
            kind, instance, options, formulation, heuristic, symmetry, pareto_points
        )
    plan = make_plan(arr, objective, formulation, heuristic, symmetry)
    if relaxation:
        return _solve_relaxation(kind, instance, objective, options, plan, heuristic)
    holder: dict[str, Any] = {}

    def build() -> pyo.ConcreteModel:
        holder["m"] = F.build(arr, plan)
        return holder["m"]

    def extract(cm: CompiledModel, raw: RawSolution) -> Extracted:
        m = holder["m"]
        sched = schedule_from_solution(m, cm, raw, arr)
        mk = sched.makespan
        en = arr.energy(sched.core, mk)
        value = mk if objective == "makespan" else en
        bound = _scaled_bound(plan, raw.bound, objective)
        if bound is not None:
            bound = min(bound, value)
        status = None
        if raw.status == Status.FEASIBLE and bound is not None and value <= bound + _INT_TOL:
            status = Status.OPTIMAL  # e.g. a whole-number makespan equal to its rounded bound
        info = {"makespan_s": mk, "energy_j": en}
        return Extracted(
            value, tables_of(arr, sched), info, status, None, bound, _gap(value, bound)
        )

    info = _plan_info(arr, plan, heuristic)

    def start(cm: CompiledModel) -> np.ndarray | None:
        if not warm_start:
            return None
        return F.start_vector(holder["m"], cm, arr, heuristic)

    result, _ = run_model(
        kind,
        instance,
        objective,
        _options_for(plan, options),
        build,
        extract,
        "auto",
        info,
        start,
    )
    if result.status == Status.NO_SOLUTION and result.bound is not None:
        result = replace(result, bound=_scaled_bound(plan, result.bound, objective))
    return result


def _plan_info(arr: MulticoreArrays, plan: F.Plan, heuristic: Schedule) -> dict[str, Any]:
    return {
        "formulation": plan.formulation,
        "horizon_s": plan.horizon,
        "heuristic_makespan_s": heuristic.makespan,
        "symmetry_classes": len(arr.identical_core_classes()) if plan.symmetry else 0,
    }


def _heuristic_ok(arr: MulticoreArrays, sched: Schedule) -> bool:
    mk = sched.makespan
    if arr.deadline is not None and mk > arr.deadline * (1 + 1e-9):
        return False
    return not (arr.budget is not None and arr.energy(sched.core, mk) > arr.budget * (1 + 1e-9))


def _solve_relaxation(
    kind: MulticoreKind,
    instance: MulticoreInstance,
    objective: str,
    options: SolveOptions,
    plan: F.Plan,
    heuristic: Schedule,
) -> Result:
    """LP relaxation as a fast lower bound; the list schedule as the incumbent."""
    arr = instance.arrays
    t0 = time.perf_counter()
    m = F.build(arr, plan)
    t1 = time.perf_counter()
    cm = compile_model(m)
    cm.integrality[:] = 0
    hm = HighsModel(cm)
    t2 = time.perf_counter()
    raw = hm.solve(options)
    t3 = time.perf_counter()
    info = _plan_info(arr, plan, heuristic)
    info["relaxation"] = True
    bound = _scaled_bound(plan, raw.objective, objective) if raw.status == Status.OPTIMAL else None
    tables: dict[str, pd.DataFrame] = {}
    value = None
    if raw.status in (Status.INFEASIBLE, Status.UNBOUNDED):
        status, termination = Status.INFEASIBLE, f"LP relaxation: {raw.termination}"
    elif not _heuristic_ok(arr, heuristic):
        status = Status.NO_SOLUTION
        termination = "LP relaxation bound only (the list schedule breaks a deadline or budget)"
    else:
        mk = heuristic.makespan
        en = arr.energy(heuristic.core, mk)
        value = mk if objective == "makespan" else en
        tables = tables_of(arr, heuristic)
        info.update({"makespan_s": mk, "energy_j": en})
        if bound is not None:
            bound = min(bound, value)
        proven = bound is not None and value <= bound + _INT_TOL * max(1.0, abs(value))
        status = Status.OPTIMAL if proven else Status.FEASIBLE
        termination = "list schedule with LP relaxation bound"
    result = Result(
        kind=kind.name,
        objective=objective,
        status=status,
        termination=termination,
        objective_value=value,
        bound=bound,
        gap=_gap(value, bound) if value is not None else None,
        tables=tables,
        info=info,
        timings={
            "build_s": t1 - t0,
            "transfer_s": t2 - t1,
            "solve_s": raw.solve_s,
            "load_s": time.perf_counter() - t3,
        },
        runtime_s=time.perf_counter() - t0,
    )
    if status.has_solution:
        result = replace(result, verification=kind.verify(instance, result))
    return result
