"""The decomposition method for many GPUs: a pooled bound, then one exact solve per GPU.

The full MILP is weak when many GPUs share the sessions (its LP lets a session spread
over every GPU, which amounts to pooling their memory) and symmetric when the GPUs are
alike; past a few GPUs HiGHS spends its time limit at the root. This method instead:

1. **bound** (stage ``pooled_bound``): the same model on the *pooled* instance, one GPU
   with the summed capacity and active batches and the fastest prefill speed. Every plan
   of the real instance is a plan of the pooled one that recomputes no more (per session),
   so HiGHS's bound there bounds the real optimum: total recompute from below directly;
   the largest load from below by ``max(largest work_s, (sum of work_s + recompute bound) /
   GPUs)``; the fair share from above. It gets :data:`BOUND_SHARE` of the time limit.
2. **affinity**: the greedy affinity of :mod:`.heuristics` (least memory overflow).
3. **keeps** (stage ``gpu``): for that affinity the GPUs are independent for every
   objective, so each GPU's sessions are solved exactly as a one-GPU instance (minimum
   recompute, which also minimises the GPU's load; the max-min fair share for
   ``agent_fair_share``), each started from the greedy keeps and given an equal share of
   the time left. A GPU whose solve finds nothing keeps its greedy keeps.

The result is feasible (verified like any other) with the pooled bound and its gap;
optimal only when the two meet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...contract import Built, Outcome, RunMethodBase
from ...status import Status
from . import formulations as F
from .data import AgentSessionsInstance
from .heuristics import earliest_end_keeps, greedy_affinity
from .methods import KeepEvict, plan_details
from .params import AgentSessionsParams
from .plan import Plan, objective_value, plan_tables

if TYPE_CHECKING:
    from ...options import SolveOptions
    from ...pipeline import Session

BOUND_SHARE = 0.3
"""Share of the time limit the pooled bound may use."""

SUB_OBJECTIVE = {
    "min_recompute_s": "min_recompute_s",
    "min_max_load": "min_recompute_s",
    "agent_fair_share": "agent_fair_share",
}
"""Objective -> what each GPU's sub-instance is solved for (and the pooled bound)."""


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

    def run(
        self, session: Session, instance: AgentSessionsInstance, params: AgentSessionsParams
    ) -> Outcome:
        arr = instance.arrays
        sub = SUB_OBJECTIVE[self.objective]
        method = KeepEvict(sub)
        # 1. the pooled bound
        pooled, _ = session.solve_method(
            method, pooled_instance(instance), params, _budget(session, BOUND_SHARE), "pooled_bound"
        )
        bound = pooled.bound
        if bound is not None:
            # recompute is >= 0 and a share <= 1 (HiGHS's bound may be looser)
            bound = min(1.0, bound) if sub == "agent_fair_share" else max(0.0, bound)
        if bound is not None and self.objective == "min_max_load":
            bound = max(float(arr.work.max()), (float(arr.work.sum()) + bound) / arr.num_gpus)
        # 2. affinity, greedy keeps as the fallback
        with session.timer("heuristic_s"):
            gpu = greedy_affinity(arr, self.objective)
            kept = earliest_end_keeps(arr, gpu)
        # 3. one exact solve per GPU
        first = np.searchsorted(arr.p_session, np.arange(arr.num_sessions))
        pos = {sid: i for i, sid in enumerate(arr.session_ids)}
        used = [g for g in range(arr.num_gpus) if (gpu[arr.p_session] == g).any()]
        optimal = 0
        for k, g in enumerate(used):
            with session.timer("build_s"):
                inst_g = gpu_instance(instance, gpu, g)
            assert inst_g is not None
            out, _ = session.solve_method(
                method, inst_g, params, _budget(session, 1.0 / (len(used) - k)), "gpu"
            )
            if out.status is None or not out.status.has_solution:
                continue
            optimal += out.status == Status.OPTIMAL
            ret = out.tables["retention"]
            idx = first[ret["session"].map(pos).to_numpy()] + ret["pause"].to_numpy()
            kept[idx] = ret["kept"].to_numpy(dtype=bool)
        plan = Plan(gpu, kept)
        value = objective_value(arr, plan, self.objective)
        details = plan_details(arr, plan)
        details.update(
            {
                "method": "decompose",
                "capacity_rows": params.capacity_rows,
                "num_pauses": arr.num_pauses,
                "gpu_subproblems": len(used),
                "gpu_subproblems_optimal": int(optimal),
            }
        )
        gap = None
        status = Status.FEASIBLE
        if bound is not None:
            details["pooled_bound"] = float(bound)
            gap = abs(value - bound) / max(abs(value), 1e-9)
            tol = session.options.mip_rel_gap if session.options.mip_rel_gap is not None else 1e-4
            if gap <= tol:
                status = Status.OPTIMAL
        termination = (
            f"decomposition: pooled bound {pooled.termination}; "
            f"{optimal} of {len(used)} GPU sub-problems optimal"
        )
        return Outcome(
            value, plan_tables(arr, plan), details, status, termination, bound=bound, gap=gap
        )
