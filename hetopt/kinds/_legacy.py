"""TEMPORARY: the solve path of the kinds not yet moved onto :mod:`hetopt.pipeline`.

Deleted when the last kind is ported (issue 12); nothing new may use it."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd
import pyomo.environ as pyo

from ..highs import CompiledModel, HighsModel, RawSolution, compile_model
from ..options import SolveOptions
from ..result import Result
from ..status import Status


@dataclass
class Extracted:
    """What a kind's extractor returns from a raw solution."""

    objective_value: float | None
    tables: dict[str, pd.DataFrame]
    info: dict[str, Any] = field(default_factory=dict)
    status: Status | None = None  # override (e.g. a makespan LP whose z = 0 means infeasible)
    termination: str | None = None
    bound: float | None = None
    """The bound in the objective's own unit, when the LP/MIP objective is a scaled or
    transformed version of it (e.g. ``z = t_ref / makespan``)."""
    gap: float | None = None


def run_model(
    kind: Any,
    instance: Any,
    objective: str,
    options: SolveOptions,
    build: Callable[[], pyo.ConcreteModel],
    extract: Callable[[CompiledModel, RawSolution], Extracted],
    default_lp_method: str = "auto",
    info: Mapping[str, Any] | None = None,
    start: Callable[[CompiledModel], Any] | None = None,
    bound_to_objective: Callable[[float], float] | None = None,
) -> tuple[Result, HighsModel]:
    """The shared pipeline: build -> compile -> HiGHS -> extract -> verify.

    Returns the :class:`Result` (timings split into ``build_s``, ``transfer_s``,
    ``solve_s``, ``load_s``) and the live :class:`HighsModel` for re-solves.
    ``bound_to_objective`` maps a solver bound (in the model's scaled units) to the
    objective's unit; it is used when there is no solution to extract (e.g. a MILP that
    stops at a time limit without an incumbent but with a proven bound).
    """
    t0 = time.perf_counter()
    model = build()
    t1 = time.perf_counter()
    compiled = compile_model(model)
    hm = HighsModel(compiled)
    if start is not None:
        x0 = start(compiled)
        if x0 is not None:
            hm.set_start(x0)
    t2 = time.perf_counter()
    raw = hm.solve(options, default_lp_method)
    t3 = time.perf_counter()
    result = finish(kind, instance, objective, compiled, raw, extract, info, bound_to_objective)
    t4 = time.perf_counter()
    timings = {
        "build_s": t1 - t0,
        "transfer_s": t2 - t1,
        "solve_s": raw.solve_s,
        "load_s": t4 - t3,
    }
    return _with_timings(result, timings, t4 - t0), hm


def finish(
    kind: Any,
    instance: Any,
    objective: str,
    compiled: CompiledModel,
    raw: RawSolution,
    extract: Callable[[CompiledModel, RawSolution], Extracted],
    info: Mapping[str, Any] | None = None,
    bound_to_objective: Callable[[float], float] | None = None,
) -> Result:
    """Turn a raw solution into a verified :class:`Result`."""
    status, termination = raw.status, raw.termination
    tables: dict[str, pd.DataFrame] = {}
    value = None
    extra: dict[str, Any] = dict(info or {})
    extra.update(
        {
            k: v
            for k, v in raw.info.items()
            if k in ("simplex_iterations", "ipm_iterations", "mip_nodes") and v > 0
        }
    )
    bound, gap = raw.bound, raw.gap
    if status.has_solution:
        ex = extract(compiled, raw)
        value, tables = ex.objective_value, ex.tables
        extra.update(ex.info)
        if ex.bound is not None:
            bound = ex.bound
            gap = ex.gap
        if ex.status is not None:
            status = ex.status
            termination = ex.termination or termination
            if not status.has_solution:
                value, bound, gap = None, None, None
    elif bound is not None and bound_to_objective is not None:
        bound = bound_to_objective(bound)
    result = Result(
        kind=kind.name,
        objective=objective,
        status=status,
        termination=termination,
        objective_value=value,
        bound=bound,
        gap=gap,
        tables=tables,
        info=extra,
    )
    return verified(kind, instance, result)


def verified(kind: Any, instance: Any, result: Result) -> Result:
    """Attach the kind's independent verification to a result that has a solution.

    A solution the verifier rejects is never reported optimal or feasible: its status
    becomes ``error`` (the tables stay for inspection)."""
    if not result.status.has_solution:
        return result
    return enforce_verification(replace(result, verification=kind.verify(instance, result)))


def enforce_verification(result: Result) -> Result:
    """Downgrade a result whose attached verification failed to status ``error``.

    Applied by :func:`hetopt.solve` to every kind's result, so no code path (own solve
    pipelines, decompositions, rolling horizons) can report a rejected solution as
    optimal or feasible."""
    v = result.verification
    if v is None or v.ok or not result.status.has_solution:
        return result
    first = v.violations[0] if v.violations else "?"
    return replace(
        result,
        status=Status.ERROR,
        termination=f"{result.termination}; verifier rejected the solution: {first}",
    )


def _with_timings(result: Result, timings: Mapping[str, float], total: float) -> Result:
    return replace(result, timings=dict(timings), runtime_s=total)
