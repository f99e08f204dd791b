"""The method of every ``agent_sessions`` objective: one MILP, one HiGHS solve.

:class:`KeepEvict` builds :func:`formulations.build` for its objective, starts HiGHS
from the greedy plan (:mod:`.heuristics`), reads the affinity and keep decisions back
and turns them into the declared tables (:mod:`.plan`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...contract import BuildMethodBase, Built, Outcome, SolveView
from ...highs import CompiledModel
from . import formulations as F
from .data import AgentArrays, AgentSessionsInstance
from .heuristics import greedy_plan
from .params import AgentSessionsParams
from .plan import Plan, model_level, objective_value, plan_tables


def _share(slowdown: float) -> float:
    return 1.0 / (1.0 + max(0.0, slowdown))


class KeepEvict(BuildMethodBase):
    """Affinity + keep/evict MILP for one objective (``formulations.OBJECTIVES``)."""

    def __init__(self, objective: str):
        self.objective = objective
        self.fair_share = F.OBJECTIVES[objective][1] == "slowdown"

    def build(self, instance: AgentSessionsInstance, params: AgentSessionsParams) -> Built:
        return F.build(instance.arrays, self.objective, params)

    def export_objective(
        self, instance: AgentSessionsInstance, params: AgentSessionsParams, built: Built
    ) -> None:
        """In the user's units already; the fair share's says what its optimum is."""
        F.note_export(self.objective)

    def describe(
        self, instance: AgentSessionsInstance, params: AgentSessionsParams, built: Built
    ) -> dict[str, Any]:
        pc: F.PlanColumns = built.layout.columns
        return {
            "method": "milp",
            "capacity_rows": params.capacity_rows,
            "num_pauses": instance.arrays.num_pauses,
            "num_keeps": pc.num_keep,
            "num_event_points": pc.num_events,
        }

    def start(
        self,
        instance: AgentSessionsInstance,
        params: AgentSessionsParams,
        built: Built,
        compiled: CompiledModel,
    ) -> np.ndarray | None:
        if not params.greedy_start:
            return None
        arr = instance.arrays
        plan = greedy_plan(arr, self.objective)
        if params.symmetry_breaking:
            plan = Plan(F.canonical_gpus(arr, plan.gpu), plan.kept)
        return start_vector(arr, built, compiled, plan)

    def unscale_bound(self, built: Built, bound: float) -> float:
        return _share(bound) if self.fair_share else bound

    def extract(
        self,
        instance: AgentSessionsInstance,
        params: AgentSessionsParams,
        built: Built,
        solution: SolveView,
    ) -> Outcome:
        arr = instance.arrays
        plan = read_plan(arr, built, solution)
        value = objective_value(arr, plan, self.objective)
        details = plan_details(arr, plan)
        if params.greedy_start:
            greedy = greedy_plan(arr, self.objective)
            details["greedy_objective"] = objective_value(arr, greedy, self.objective)
        out = Outcome(value, plan_tables(arr, plan), details)
        if self.fair_share:
            details["max_slowdown"] = model_level(arr, plan, self.objective)
            # HiGHS bounds the largest slowdown from below: the share from above
            if solution.bound is not None and math.isfinite(solution.bound):
                out.bound = _share(float(solution.bound))
                out.gap = max(0.0, out.bound - value) / max(abs(value), 1e-9)
            else:
                out.bound, out.gap = None, None
        return out


def plan_details(arr: AgentArrays, plan: Plan) -> dict[str, Any]:
    """The plan's figures for every objective (``Result.info``)."""
    return {
        "kept_pauses": int(plan.kept.sum()),
        "total_recompute_s": objective_value(arr, plan, "min_recompute_s"),
        "max_load_s": objective_value(arr, plan, "min_max_load"),
        "min_fair_share": objective_value(arr, plan, "agent_fair_share"),
    }


def read_plan(arr: AgentArrays, built: Built, solution: SolveView) -> Plan:
    """The affinity and keep decisions of a solution (binaries rounded)."""
    pc: F.PlanColumns = built.layout.columns
    m = built.model
    a = solution.values(m.assign, range(pc.num_assign))
    gpu = np.full(arr.num_sessions, -1, dtype=np.int64)
    best = np.full(arr.num_sessions, -1.0)
    for k in range(pc.num_assign):  # the largest assign value of each session
        s = pc.a_session[k]
        if a[k] > best[s]:
            best[s], gpu[s] = a[k], pc.a_gpu[k]
    kept = np.zeros(arr.num_pauses, dtype=bool)
    if pc.num_keep:
        kv = solution.values(m.keep, range(pc.num_keep)) > 0.5
        on = pc.k_gpu == gpu[arr.p_session[pc.k_pause]]
        kept[pc.k_pause[kv & on]] = True
    return Plan(gpu, kept)


def start_vector(arr: AgentArrays, built: Built, compiled: CompiledModel, plan: Plan) -> np.ndarray:
    """``plan`` as one value per compiled column (a MIP start)."""
    pc: F.PlanColumns = built.layout.columns
    layout: F.PlanLayout = built.layout
    m = built.model
    x = np.zeros(compiled.num_col)

    def put(var: Any, keys: range, values: np.ndarray) -> None:
        cols = compiled.columns_of(var, keys)
        ok = cols >= 0
        x[cols[ok]] = values[ok]

    put(m.assign, range(pc.num_assign), (plan.gpu[pc.a_session] == pc.a_gpu).astype(float))
    keep = plan.kept[pc.k_pause] & (plan.gpu[arr.p_session[pc.k_pause]] == pc.k_gpu)
    if pc.num_keep:
        put(m.keep, range(pc.num_keep), keep.astype(float))
    if layout.capacity_rows == "sweep" and pc.num_events:
        tok = np.where(keep, arr.p_tokens[pc.k_pause], 0).astype(float)
        step = np.zeros(pc.num_events)
        np.add.at(step, pc.k_add, tok)
        ends = pc.k_sub >= 0
        np.add.at(step, pc.k_sub[ends], -tok[ends])
        level = np.cumsum(step)
        first = np.searchsorted(pc.ev_gpu, pc.ev_gpu, side="left")
        base = np.concatenate([[0.0], level])[first]  # cumulative sum before each GPU
        put(m.kv, range(pc.num_events), level - base)
    if layout.level is not None:
        j = compiled.column(getattr(m, layout.level))
        if j >= 0:
            x[j] = model_level(arr, plan, layout.objective)
    return x
