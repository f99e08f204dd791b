"""The ``agent_sessions`` kind: keep or evict an AI agent's KV cache across tool pauses.

Agents chain LLM calls with tool calls in between; during a tool pause the session's
context is either kept on its GPU (holding ``context_tokens`` of KV memory) or evicted
and re-prefilled when the session resumes. The kind plans, offline and exactly, which
GPU each session has affinity to and which pauses keep their context, with the KV
capacity of every GPU respected at every instant (the event points where a kept set
changes, not a time grid). Objectives: total re-prefill seconds (``min_recompute_s``, the
offline optimum SAGA compares its retention policy with), the busiest GPU's work
(``min_max_load``) and the Agent Fair Share (``agent_fair_share``, the smallest ideal over
achieved completion). :func:`replan` re-solves as pauses end. See
``models/agent_sessions.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...contract import Column, Detail, Table
from ...errors import UsageError
from ...result import Result, Verification
from ..base import Kind, LazyMethod, MethodEntry, Objective, lazy_exports
from .data import ActiveKv, AgentArrays, AgentSessionsInstance, Gpu, Pause, Session
from .params import AgentSessionsParams

if TYPE_CHECKING:
    from .decompose import gpu_instance, pooled_instance
    from .heuristics import greedy_plan
    from .plan import Plan, plan_tables
    from .replan import Replan, replan, replan_instance

# imported on first use: defining KIND imports no Pyomo, HiGHS or pandas (issue 19)
__getattr__ = lazy_exports(
    __name__,
    {
        "gpu_instance": ".decompose",
        "pooled_instance": ".decompose",
        "greedy_plan": ".heuristics",
        "Plan": ".plan",
        "plan_tables": ".plan",
        "Replan": ".replan",
        "replan": ".replan",
        "replan_instance": ".replan",
    },
)

__all__ = [
    "KIND",
    "ActiveKv",
    "AgentArrays",
    "AgentSessionsInstance",
    "AgentSessionsKind",
    "AgentSessionsParams",
    "Gpu",
    "Pause",
    "Plan",
    "Replan",
    "Session",
    "gpu_instance",
    "greedy_plan",
    "plan_tables",
    "pooled_instance",
    "replan",
    "replan_instance",
]

TABLES = (
    Table(
        "affinity",
        "the GPU each session runs on (all its calls, all its kept contexts)",
        (
            Column("session", "str", "session id"),
            Column("gpu", "str", "GPU id (with migration: the GPU of the session's first call)"),
        ),
    ),
    Table(
        "segment",
        "migration only: the GPU of each call of each session (the calls between pauses)",
        (
            Column("session", "str", "session id"),
            Column("segment", "int", "call j runs after the session's pause j-1 (0-based)"),
            Column("gpu", "str", "GPU id"),
            Column("work_s", "float", "its part of the session's work_s (an even split)", "s"),
        ),
        optional=True,
    ),
    Table(
        "retention",
        "one row per pause of every session: kept on the GPU or evicted and re-prefilled",
        (
            Column("session", "str", "session id"),
            Column("pause", "int", "position of the pause in the session's pauses (0-based)"),
            Column("gpu", "str", "the session's GPU (with migration: the GPU it resumes on)"),
            Column("start_s", "float", "pause start", "s"),
            Column("end_s", "float", "pause end", "s"),
            Column("context_tokens", "int", "KV tokens of the context", "tokens"),
            Column("kept", "bool", "the context stays on the GPU during the pause"),
            Column(
                "recompute_s",
                "float",
                "re-prefill seconds after the pause (0 if kept, else tokens / prefill speed)",
                "s",
            ),
            Column(
                "migrated",
                "bool",
                "migration only: the context moved to the next call's GPU over a link",
                optional=True,
            ),
            Column(
                "migrate_s",
                "float",
                "migration only: transfer seconds (tokens / kv_transfer_tokens_s), else 0",
                "s",
                optional=True,
            ),
        ),
    ),
    Table(
        "memory_timeline",
        "per GPU, the segments between event points with the KV tokens held there",
        (
            Column("gpu", "str", "GPU id"),
            Column("start_s", "float", "segment start", "s"),
            Column("end_s", "float", "segment end", "s"),
            Column(
                "kept_tokens",
                "int",
                "tokens of the contexts kept in the segment (with migration: also those "
                "being copied from or to the GPU)",
                "tokens",
            ),
            Column("active_tokens", "int", "tokens of the GPU's running batch", "tokens"),
            Column("capacity_tokens", "int", "the GPU's kv_capacity_tokens", "tokens"),
        ),
    ),
    Table(
        "gpu_load",
        "per GPU, its sessions' own work plus the recompute it does",
        (
            Column("gpu", "str", "GPU id"),
            Column("sessions", "int", "sessions with affinity to the GPU (migration: with a call)"),
            Column("work_s", "float", "the sessions' own work (work_s)", "s"),
            Column("recompute_s", "float", "re-prefill seconds of its evicted pauses", "s"),
            Column(
                "migrate_s",
                "float",
                "migration only: transfer seconds of the contexts migrated to the GPU",
                "s",
                optional=True,
            ),
            Column("load_s", "float", "work_s + recompute_s (+ migrate_s)", "s"),
        ),
    ),
    Table(
        "completion",
        "per session, ideal and achieved completion and their ratio (the fair share)",
        (
            Column("session", "str", "session id"),
            Column("gpu", "str", "the session's GPU"),
            Column("ideal_s", "float", "work_s plus its pause seconds (nothing recomputed)", "s"),
            Column("recompute_s", "float", "re-prefill seconds of its evicted pauses", "s"),
            Column(
                "migrate_s",
                "float",
                "migration only: transfer seconds of its migrated pauses",
                "s",
                optional=True,
            ),
            Column("achieved_s", "float", "ideal_s + recompute_s (+ migrate_s)", "s"),
            Column("fair_share", "float", "ideal_s / achieved_s (1 without pauses or work)"),
        ),
    ),
)

DETAILS = (
    Detail("method", "str", "'milp' (one MILP) or 'decompose' (pooled bound + one solve per GPU)"),
    Detail("capacity_rows", "str", "'sweep' or 'clique' memory rows (parameter)"),
    Detail("num_pauses", "int", "pauses in the instance"),
    Detail("num_keeps", "int", "(pause, GPU) keep decisions in the model"),
    Detail("num_event_points", "int", "per-GPU event points of the memory sweep in the model"),
    Detail("kept_pauses", "int", "pauses whose context is kept"),
    Detail("total_recompute_s", "float", "re-prefill seconds of the plan", "s"),
    Detail("max_load_s", "float", "largest per-GPU work of the plan", "s"),
    Detail("min_fair_share", "float", "smallest ideal / achieved completion of the plan"),
    Detail("max_slowdown", "float", "agent_fair_share: the model's level, max recompute / ideal"),
    Detail("migrated_pauses", "int", "migration: pauses whose context moved over a link"),
    Detail("total_migrate_s", "float", "migration: transfer seconds of the plan", "s"),
    Detail("num_migrations", "int", "migration: (pause, link) migrate decisions in the model"),
    Detail("num_segments", "int", "migration: calls (segments) of all sessions in the model"),
    Detail(
        "no_migration_objective",
        "float",
        "migration: the objective of the one-GPU-per-session MILP solved first",
    ),
    Detail("greedy_objective", "float", "the objective of the greedy plan HiGHS starts from"),
    Detail(
        "pooled_bound",
        "float",
        "decompose: the bound from the pooled instance's LP relaxation (objective unit)",
    ),
    Detail("polished", "bool", "decompose: the full MILP was run from the decomposition's plan"),
    Detail("gpu_subproblems", "int", "decompose: GPUs with sessions, each solved alone"),
    Detail("gpu_subproblems_optimal", "int", "decompose: GPU sub-problems solved to optimality"),
)


OBJECTIVE_NAMES = ("min_recompute_s", "min_max_load", "agent_fair_share")
_AS = "hetopt.kinds.agent_sessions"

METHODS: dict[tuple[str, str], LazyMethod] = {
    **{(name, "milp"): LazyMethod(f"{_AS}.methods:KeepEvict", name) for name in OBJECTIVE_NAMES},
    **{
        (name, "decompose"): LazyMethod(f"{_AS}.decompose:Decomposed", name)
        for name in OBJECTIVE_NAMES
    },
}
"""(objective, method) -> method."""
MIGRATION: dict[str, LazyMethod] = {
    name: LazyMethod(f"{_AS}.migration:MigratingBest", name) for name in OBJECTIVE_NAMES
}
"""objective -> the migration method (parameter ``migration=True``)."""


class AgentSessionsKind(Kind):
    name = "agent_sessions"
    description = (
        "agent sessions with tool pauses: GPU affinity and keep/evict of each pause's KV cache"
    )
    objectives = (
        Objective(
            "min_recompute_s",
            "total re-prefill seconds of the contexts evicted during pauses",
            "s",
            "min",
        ),
        Objective(
            "min_max_load",
            "the largest per-GPU work: its sessions' work_s plus its recompute seconds",
            "s",
            "min",
        ),
        Objective(
            "agent_fair_share",
            "Agent Fair Share: the smallest ideal / achieved completion over sessions "
            "(ideal = work_s + pause seconds, achieved = ideal + recompute)",
            "",
            "max",
        ),
    )
    instance_model = AgentSessionsInstance
    params_model = AgentSessionsParams
    methods = {name: METHODS[(name, "milp")] for name in OBJECTIVE_NAMES}
    tables = TABLES
    details = DETAILS

    def choose_method(
        self, objective: str, instance: AgentSessionsInstance, params: AgentSessionsParams
    ) -> MethodEntry:
        """``params.method`` picks the MILP or the decomposition (``auto``: the MILP for
        one GPU, where it is near-integral; the decomposition for several, where the
        MILP's LP pools the GPUs' memory and its bound barely moves). ``migration=True``
        selects the migration MILP (:mod:`.migration`)."""
        choice = params.method
        if params.migration:
            if choice == "decompose":
                raise UsageError(
                    "method='decompose' does not support migration=True (the decomposition "
                    "fixes one GPU per session); use method='milp' or 'auto'"
                )
            if params.symmetry_breaking:
                raise UsageError(
                    "symmetry_breaking=True is not available with migration=True "
                    "(it orders GPUs by the sessions they serve, not by their calls)"
                )
            try:
                return MIGRATION[objective]
            except KeyError:
                raise UsageError(f"kind {self.name!r} has no method for {objective!r}") from None
        if choice == "auto":
            choice = "milp" if instance.arrays.num_gpus == 1 else "decompose"
        try:
            return METHODS[(objective, choice)]
        except KeyError:
            raise UsageError(f"kind {self.name!r} has no method for {objective!r}") from None

    def verify(self, instance: AgentSessionsInstance, result: Result) -> Verification:
        from . import verify as V

        return V.verify(instance, result.objective, result.objective_value, result.tables)


KIND = AgentSessionsKind()
