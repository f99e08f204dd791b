"""The ``gpu_cluster`` kind: Gavel's heterogeneity-aware GPU-cluster policies.

Decision ``alloc[i,t]``: fraction of wall-clock time job ``i`` runs on GPU type ``t``.
See ``models/gpu_cluster.md`` for the mathematics. The objectives' methods: one LP for
``max_min_fairness`` and ``makespan`` (:mod:`.methods`; with space sharing when the
instance has a ``colocation`` list), several LPs on one live model for the other
policies (:mod:`.policies`). The kind also offers decomposition (:mod:`.decompose`),
a live policy for scheduler loops (:class:`PersistentPolicy`), Gavel's round mechanism
(:mod:`.rounds`) and trace replay (:mod:`.simulate`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from ...contract import Column, Decomposer, Detail, Method, Objective, Params, Table
from ...errors import UsageError
from ...result import Result, Verification
from ..base import Kind
from . import methods as LP
from . import policies as P
from . import verify as V
from .data import GpuClusterInstance, GpuJob
from .decompose import DECOMPOSER
from .formulations import agnostic_throughputs
from .generate import generate
from .persistent import PersistentPolicy
from .trace import read_gavel_trace, trace_to_instance

__all__ = [
    "KIND",
    "GpuClusterInstance",
    "GpuClusterKind",
    "GpuClusterParams",
    "GpuJob",
    "PersistentPolicy",
    "agnostic_throughputs",
    "generate",
    "read_gavel_trace",
    "trace_to_instance",
]

DEFAULT_LP_METHOD = LP.DEFAULT_LP_METHOD


class GpuClusterParams(Params):
    """Solve parameters of the ``gpu_cluster`` kind."""

    agnostic: bool = Field(
        False,
        description="allocate as if every GPU type were equal (heterogeneity-agnostic baseline)",
    )


ALLOCATION = Table(
    "allocation",
    "time shares: the fraction of wall-clock time each job runs on each GPU type",
    (
        Column("job", "str", "job id"),
        Column("worker_type", "str", "GPU type"),
        Column("fraction", "float", "share of wall-clock time the job runs on that type"),
        Column(
            "other_job",
            "str",
            "the job sharing the same GPUs in this row ('' when running alone; space sharing only)",
            optional=True,
        ),
    ),
)

JOBS = Table(
    "jobs",
    "per job: time share, throughput and the objective's per-job value",
    (
        Column("job", "str", "job id"),
        Column("time_share", "float", "share of wall-clock time the job runs at all"),
        Column("throughput", "float", "effective throughput of the allocation", "steps/s"),
        Column(
            "normalized_throughput",
            "float",
            "the objective's per-job value (max-min: scale*thr/(weight*p); throughput "
            "objectives: weight*thr/best thr)",
            optional=True,
        ),
        Column("finish_s", "float", "time to finish steps_remaining at this rate", "s", True),
        Column(
            "shared_time", "float", "share of time spent sharing GPUs (space sharing)", "", True
        ),
        Column(
            "effective_weight", "float", "weight after entity weights (water-filling)", "", True
        ),
        Column("level", "int", "water-filling level at which the job was frozen", "", True),
        Column(
            "isolated_finish_s",
            "float",
            "finish time under an isolated 1/N share (finish-time fairness)",
            "s",
            True,
        ),
        Column("ftf_ratio", "float", "finish time / isolated finish time", "", True),
        Column("deadline_s", "float", "the job's SLO (NaN: none; min_cost)", "s", True),
        Column(
            "deadline_met", "bool", "the allocation finishes before the SLO (min_cost)", "", True
        ),
    ),
    optional=True,
)

DETAILS = (
    Detail("agnostic", "bool", "allocated with the heterogeneity-agnostic throughputs"),
    Detail("lp_method", "str", "the LP algorithm"),
    Detail("warm", "bool", "re-solved warm in a persistent model (PersistentPolicy)"),
    Detail("lp_value", "float", "the LP's own value of an interrupted solve"),
    Detail("agnostic_lp_value", "float", "the agnostic LP's optimum (its own objective)"),
    Detail("colocated_pairs", "int", "job pairs sharing GPUs in the allocation"),
    Detail("pair_columns", "int", "pair columns in the LP (one per symmetry group)"),
    Detail("pair_columns_per_job", "int", "pair columns a per-job model would have"),
    Detail("dominated_pairs_dropped", "int", "pair entries dominated by time slicing"),
    Detail("symmetry_groups", "int", "groups of interchangeable jobs solved as one row"),
    Detail("levels", "int", "water-filling levels"),
    Detail("level_lps", "int", "LPs that raised a level"),
    Detail("lp_solves", "int", "LP solves in all"),
    Detail("check_lps", "int", "extra LPs checking jobs without a dual certificate"),
    Detail("groups_frozen_by_duals", "int", "rows frozen by a dual certificate"),
    Detail("level_tolerance", "float", "relative tolerance of a level"),
    Detail("entity_weights", "bool", "some job belongs to an entity"),
    Detail("level_values_first", "list", "the first ten level values"),
    Detail("tolerance", "float", "relative tolerance of the bisection on the ratio"),
    Detail("ratio_lower_bound", "float", "proven lower bound on the ratio"),
    Detail("ratio_upper_bound", "float", "ratio the best allocation found achieves"),
    Detail("isolated_share", "str", "how the isolated 1/N share is defined"),
    Detail("normalisation", "str", "how throughputs are normalised"),
    Detail("raw_total_steps_per_s", "float", "total throughput", "steps/s"),
    Detail("slo_jobs", "int", "jobs with an SLO (deadline_s)"),
    Detail("slo_unmet", "list", "jobs whose SLO cannot be met together with the others"),
    Detail("slo_all_met", "bool", "every SLO is met"),
    Detail("cost_per_hour", "float", "what the allocation pays", "$/h"),
)

OBJECTIVES = (
    Objective(
        "max_min_fairness",
        "Gavel's heterogeneity-aware LAS: maximise the smallest "
        "normalised throughput scale_factor*thr/(weight*p)",
        "normalised throughput",
        "max",
    ),
    Objective("makespan", "exact minimum time to finish every job's steps_remaining", "s", "min"),
    Objective(
        "max_min_fairness_water_filling",
        "leximin (hierarchical) max-min fairness over the same normalised values, "
        "with entity weights; exact by LPs (no MILP)",
        "normalised throughput",
        "max",
    ),
    Objective(
        "finish_time_fairness",
        "Themis: minimise the largest ratio of finish time to the finish time under an "
        "isolated 1/N share (bisection over LPs)",
        "ratio",
        "min",
    ),
    Objective(
        "max_total_throughput",
        "maximise the sum of weight * throughput / fastest throughput (normalised)",
        "normalised throughput",
        "max",
    ),
    Objective(
        "min_cost",
        "maximise normalised throughput per dollar (cost_per_hour), meeting SLOs "
        "(deadline_s) and reporting any that cannot be met",
        "normalised throughput per $/h",
        "max",
    ),
)

TIME_SHARING = "time_sharing"
SPACE_SHARING = "space_sharing"

BY_VARIANT: dict[tuple[str, str], Method] = {
    ("max_min_fairness", TIME_SHARING): LP.MaxMinFairness(),
    ("makespan", TIME_SHARING): LP.Makespan(),
    ("max_min_fairness_water_filling", TIME_SHARING): P.WaterFilling(),
    ("finish_time_fairness", TIME_SHARING): P.FinishTimeFairness(),
    ("max_total_throughput", TIME_SHARING): P.MaxTotalThroughput(),
    ("min_cost", TIME_SHARING): P.MinCost(),
    ("max_min_fairness", SPACE_SHARING): LP.MaxMinSpaceSharing(),
    ("makespan", SPACE_SHARING): LP.MakespanSpaceSharing(),
}
"""(objective, variant) -> method; the variant is ``space_sharing`` when the instance has
a ``colocation`` list."""


class GpuClusterKind(Kind):
    name = "gpu_cluster"
    description = "GPU cluster with several accelerator types (Gavel's policies)"
    objectives = OBJECTIVES
    instance_model = GpuClusterInstance
    params_model = GpuClusterParams
    methods: ClassVar[dict[str, Method]] = {
        o.name: BY_VARIANT[(o.name, TIME_SHARING)] for o in OBJECTIVES
    }
    tables = (ALLOCATION, JOBS)
    details = DETAILS
    decomposer: ClassVar[Decomposer | None] = DECOMPOSER

    def method_for(self, objective: str, instance: GpuClusterInstance, params: Any) -> Method:
        variant = SPACE_SHARING if instance.colocation else TIME_SHARING
        method = BY_VARIANT.get((objective, variant))
        if method is None:
            raise UsageError(
                f"objective {objective!r} does not model space sharing; use max_min_fairness "
                "or makespan, or drop the instance's colocation list"
            )
        return method

    def verify(self, instance: GpuClusterInstance, result: Result) -> Verification:
        if "allocation" not in result.tables:
            return Verification(ok=False, violations=("the result has no allocation table",))
        return V.verify(
            instance,
            result.objective,
            result.objective_value,
            result.tables["allocation"],
            result.tables.get("jobs"),
        )


KIND = GpuClusterKind()
