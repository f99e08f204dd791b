"""The decomposition method for many GPUs: a pooled bound, then one exact solve per GPU.

The full MILP is weak when several GPUs share the sessions (its LP lets a session spread
over every GPU, which amounts to pooling their memory) and symmetric when the GPUs are
alike: measured, 20 sessions x 5 pauses on 2 GPUs leave a 20 % gap after 30 s, and at
500 x 20 x 16 HiGHS does not finish its root node in 13 minutes. This method:

1. **bound** (stage ``pooled_bound``): the LP relaxation of the *pooled* instance, one GPU
   with the summed capacity and active batches and the fastest prefill speed. Every plan
   of the real instance is a plan of the pooled one that recomputes no more (per session),
   so the pooled LP optimum bounds the real optimum: total recompute from below directly;
   the largest load from below by ``max(largest work_s, (sum of work_s + recompute bound) /
   GPUs)``; the fair share from above (``1 / (1 + slowdown bound)``). It solves in seconds
   at 10^4 pauses (the pooled MILP's root took minutes for the same bound);
2. **affinity**: the greedy affinity of :mod:`.heuristics` (least memory overflow);
3. **keeps** (stage ``gpu``): for that affinity the GPUs are independent for every
   objective, so each GPU's sessions are solved exactly as a one-GPU instance (minimum
   recompute, which also minimises the GPU's load; the max-min fair share for
   ``agent_fair_share``), each started from the greedy keeps and given an equal share of
   the time. A GPU whose solve finds nothing keeps its greedy keeps;
4. **polish** (stage ``polish``, up to :data:`POLISH_MAX_KEEPS` pairs): the full MILP,
   started from that plan, with the time left; its plan replaces the decomposition's if
   better and its bound is combined with the pooled one. Without a time limit this makes
   the method exact.

The result is feasible (verified like any other) with the best bound and its gap; optimal
when they meet.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyomo.environ as pyo

from ...contract import Built, Outcome, RunMethodBase
from ...status import Status
from . import formulations as F
from .data import AgentArrays, AgentSessionsInstance
from .heuristics import earliest_end_keeps, greedy_affinity
from .methods import KeepEvict, plan_details, read_plan, start_vector
from .params import AgentSessionsParams
from .plan import Plan, objective_value, plan_tables

if TYPE_CHECKING:
    from ...options import SolveOptions
    from ...pipeline import Session

BOUND_SHARE = 0.3
"""Share of the time limit the pooled bound may use (its LP takes seconds at 10^4 pauses)."""

POLISH_SHARE = 0.5
"""Share of the time left after the bound that the polish stage keeps for itself."""

POLISH_MAX_KEEPS = 5000
"""Polish with the full MILP only up to this many (pause, GPU) pairs (beyond, HiGHS's root
alone outlasts any sensible limit: measured 13 min at 500 x 20 x 16)."""

SUB_OBJECTIVE = {
    "min_recompute_s": "min_recompute_s",
    "min_max_load": "min_recompute_s",
    "agent_fair_share": "agent_fair_share",
}
"""Objective -> what each GPU's sub-instance is solved for (and the pooled bound)."""


BOUND_FROM_POOLED: dict[str, Callable[[AgentArrays, float], float]] = {
    "min_recompute_s": lambda arr, recompute: recompute,
    "min_max_load": lambda arr, recompute: max(
        float(arr.work.max()), (float(arr.work.sum()) + recompute) / arr.num_gpus
    ),
    "agent_fair_share": lambda arr, slowdown: 1.0 / (1.0 + slowdown),
}
"""Objective -> its bound from the pooled LP optimum (recompute, or largest slowdown)."""


def pooled_instance(instance: AgentSessionsInstance) -> AgentSessionsInstance:
    """One GPU holding every GPU's memory (and active batch), with the fastest prefill."""
    data = instance.to_dict()
    active = [a for g in data["gpus"] for a in g.get("active_kv", [])]
    pooled: dict[str, Any] = {
        "id": "pooled",
        "kv_capacity_tokens": sum(g["kv_capacity_tokens"] for g in data["gpus"]),
        "prefill_tokens_s": max(g["prefill_tokens_s"] for g in data["gpus"]),
    }
    if active:
        pooled["active_kv"] = active
    for s in data["sessions"]:
        s.pop("gpu", None)
    data["gpus"] = [pooled]
    data.pop("links", None)  # one GPU: nothing to migrate to
    return AgentSessionsInstance.from_dict(data)


def gpu_instance(
    instance: AgentSessionsInstance, gpu: np.ndarray, g: int
) -> AgentSessionsInstance | None:
    """The sessions with affinity to GPU ``g`` alone on it (``None`` if it has none)."""
    data = instance.to_dict()
    sessions = [s for i, s in enumerate(data["sessions"]) if gpu[i] == g]
    if not sessions:
        return None
    for s in sessions:
        s.pop("gpu", None)
    data["gpus"] = [data["gpus"][g]]
    data["sessions"] = sessions
    data.pop("links", None)
    return AgentSessionsInstance.from_dict(data)


def _budget(session: Session, share: float) -> SolveOptions:
    opts = session.remaining()
    if opts.time_limit_s is None:
        return opts
    return opts.replace(time_limit_s=max(1e-3, opts.time_limit_s * share))


class Decomposed(RunMethodBase):
    """Pooled bound + greedy affinity + one exact keep/evict solve per GPU."""

    def __init__(self, objective: str):
        self.objective = objective

    def build(self, instance: AgentSessionsInstance, params: AgentSessionsParams) -> Built:
        """The full MILP (what this method bounds and approximates)."""
        return F.build(instance.arrays, self.objective, params)

    def export_objective(
        self, instance: AgentSessionsInstance, params: AgentSessionsParams, built: Built
    ) -> None:
        """The full MILP's objective is in the user's units already (the fair share's
        says what its optimum is)."""
        F.note_export(self.objective)

    def run(
        self, session: Session, instance: AgentSessionsInstance, params: AgentSessionsParams
    ) -> Outcome:
        arr = instance.arrays
        sub = SUB_OBJECTIVE[self.objective]
        method = KeepEvict(sub)
        fair = sub == "agent_fair_share"
        # 1. the pooled bound: the LP relaxation of the pooled instance
        bound = pooled = self._pooled_bound(session, instance, params, method)
        # 2. affinity, greedy keeps as the fallback
        with session.timer("heuristic_s"):
            gpu = greedy_affinity(arr, self.objective)
            kept = earliest_end_keeps(arr, gpu)
            greedy = objective_value(arr, Plan(gpu, kept.copy()), self.objective)
        # 3. one exact solve per GPU
        first = np.searchsorted(arr.p_session, np.arange(arr.num_sessions))
        pos = {sid: i for i, sid in enumerate(arr.session_ids)}
        used = [g for g in range(arr.num_gpus) if (gpu[arr.p_session] == g).any()]
        share = 1.0 - POLISH_SHARE if self._polishes(instance, params) else 1.0
        optimal = 0
        for k, g in enumerate(used):
            with session.timer("build_s"):
                inst_g = gpu_instance(instance, gpu, g)
            assert inst_g is not None
            out, _ = session.solve_method(
                method, inst_g, params, _budget(session, share / (len(used) - k)), "gpu"
            )
            if out.status is None or not out.status.has_solution:
                continue
            optimal += out.status == Status.OPTIMAL
            ret = out.tables["retention"]
            idx = first[ret["session"].map(pos).to_numpy()] + ret["pause"].to_numpy()
            kept[idx] = ret["kept"].to_numpy(dtype=bool)
        plan = Plan(gpu, kept)
        value = objective_value(arr, plan, self.objective)
        # 4. polish: the full MILP from this plan, with the time left
        polished = None
        if share < 1.0:
            polished = self._polish(session, instance, params, plan)
            if polished is not None:
                better, milp_bound = polished
                if better is not None:
                    cand = objective_value(arr, better, self.objective)
                    if (cand > value) if fair else (cand < value):
                        plan, value = better, cand
                if milp_bound is not None:
                    bound = (
                        milp_bound
                        if bound is None
                        else (min(bound, milp_bound) if fair else max(bound, milp_bound))
                    )
        details = plan_details(arr, plan)
        details.update(
            {
                "method": "decompose",
                "capacity_rows": params.capacity_rows,
                "num_pauses": arr.num_pauses,
                "gpu_subproblems": len(used),
                "gpu_subproblems_optimal": int(optimal),
                "greedy_objective": greedy,
                "polished": polished is not None,
            }
        )
        gap = None
        status = Status.FEASIBLE
        if pooled is not None:
            details["pooled_bound"] = float(pooled)
        if bound is not None:
            gap = abs(value - bound) / max(abs(value), 1e-9)
            tol = session.options.mip_rel_gap if session.options.mip_rel_gap is not None else 1e-4
            if gap <= tol:
                status = Status.OPTIMAL
        termination = f"decomposition: {optimal} of {len(used)} GPU sub-problems optimal" + (
            "; full MILP polished" if polished is not None else ""
        )
        return Outcome(
            value, plan_tables(arr, plan), details, status, termination, bound=bound, gap=gap
        )

    def _pooled_bound(
        self,
        session: Session,
        instance: AgentSessionsInstance,
        params: AgentSessionsParams,
        method: KeepEvict,
    ) -> float | None:
        """A valid bound on the objective from the pooled instance's LP relaxation."""
        arr = instance.arrays
        built = session.build(method, pooled_instance(instance), params)
        pyo.TransformationFactory("core.relax_integer_vars").apply_to(built.model)
        live = session.open(built)
        view = live.solve(_budget(session, BOUND_SHARE), stage="pooled_bound")
        if view.status != Status.OPTIMAL or view.objective is None:
            return None
        return BOUND_FROM_POOLED[self.objective](arr, max(0.0, float(view.objective)))

    def _polishes(self, instance: AgentSessionsInstance, params: AgentSessionsParams) -> bool:
        arr = instance.arrays
        return int(arr.allowed[arr.p_session].sum()) <= POLISH_MAX_KEEPS

    def _polish(
        self,
        session: Session,
        instance: AgentSessionsInstance,
        params: AgentSessionsParams,
        plan: Plan,
    ) -> tuple[Plan | None, float | None] | None:
        """The full MILP started from ``plan``: its best plan and bound (``None``: no time)."""
        opts = session.remaining()
        if opts.time_limit_s is not None and opts.time_limit_s < 0.05:
            return None
        arr = instance.arrays
        method = KeepEvict(self.objective)
        built = session.build(method, instance, params)
        live = session.open(built)
        start = plan
        if params.symmetry_breaking:
            start = Plan(F.canonical_gpus(arr, plan.gpu), plan.kept)
        live.highs_model.set_start(start_vector(arr, built, live.compiled, start))
        view = live.solve(opts, stage="polish")
        better = read_plan(arr, built, view) if view.status.has_solution else None
        milp_bound = view.bound
        if milp_bound is not None and method.fair_share:
            milp_bound = 1.0 / (1.0 + max(0.0, milp_bound))
        return better, milp_bound
