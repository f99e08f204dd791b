"""The ``gpu_cluster`` kind: Gavel's heterogeneity-aware GPU-cluster policies, and
Lyra's elastic jobs on loaned capacity.

Decision ``alloc[i,t]``: fraction of wall-clock time job ``i`` runs on GPU type ``t``.
See ``models/gpu_cluster.md`` for the mathematics. The objectives' methods: one LP for
``max_min_fairness`` and ``makespan`` (:mod:`.methods`; with space sharing when the
instance has a ``colocation`` list), several LPs on one live model for the other
policies (:mod:`.policies`), and one MILP each for Lyra's ``max_progress`` (whole GPUs
per job, elastic worker counts, loaned GPUs) and ``reclaim`` (which loaned servers to
return) (:mod:`.elastic`, ``models/gpu_cluster_elastic.md``). The kind also offers
decomposition (:mod:`.decompose`), a live policy for scheduler loops
(:class:`PersistentPolicy`), Gavel's round mechanism (:mod:`.rounds`) and trace replay
(:mod:`.simulate`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from ...contract import Column, Detail, Objective, Params, Table
from ...errors import InstanceError, UsageError
from ...result import Result, Verification
from ..base import Kind, LazyAttribute, LazyMethod, lazy_exports
from .data import ElasticSpec, GpuClusterInstance, GpuJob, LoanedServer
from .generate import generate
from .inputs import ELASTIC_OBJECTIVES, RECLAIM_PARAMS, check_elastic, require_steps
from .inputs import check as check_inputs
from .trace import read_gavel_trace, trace_to_instance

if TYPE_CHECKING:
    from .formulations import agnostic_throughputs
    from .methods import DEFAULT_LP_METHOD as DEFAULT_LP_METHOD
    from .persistent import PersistentPolicy

__all__ = [
    "KIND",
    "ElasticSpec",
    "GpuClusterInstance",
    "GpuClusterKind",
    "GpuClusterParams",
    "GpuJob",
    "LoanedServer",
    "PersistentPolicy",
    "agnostic_throughputs",
    "generate",
    "read_gavel_trace",
    "trace_to_instance",
]

# imported on first use: defining KIND imports no Pyomo, HiGHS or pandas (issue 19)
__getattr__ = lazy_exports(
    __name__,
    {
        "DEFAULT_LP_METHOD": ".methods",
        "PersistentPolicy": ".persistent",
        "agnostic_throughputs": ".formulations",
    },
)


class GpuClusterParams(Params):
    """Solve parameters of the ``gpu_cluster`` kind."""

    agnostic: bool = Field(
        False,
        description="allocate as if every GPU type were equal (heterogeneity-agnostic baseline)",
    )
    symmetry: bool = Field(
        True,
        description="max_min_fairness, makespan (time sharing): solve one LP row per group "
        "of identical jobs and give every job of a group the same shares (exact); "
        "false: one row per job",
    )
    lp_strategy: Literal["auto", "monolithic", "column_generation"] = Field(
        "auto",
        description="max_min_fairness, makespan (time sharing): solve the LP with every (job, type) "
        "column at once (monolithic), or by column generation from each job's best types, "
        "priced by HiGHS's duals, with a dual-bound certificate (exact to 1e-9); auto: "
        "column generation for LPs of 50,000 pairs and more; from 1,000 pairs, first the "
        "bottleneck fill, which ends the solve without an LP when every job can reach "
        "its bound within the GPUs (certified; reported as bottleneck_fill)",
    )
    servers: int = Field(1, ge=1, description="reclaim: how many loaned servers to return")
    server_type: str | None = Field(
        None, description="reclaim: return servers of this GPU type only (default: any)"
    )
    shrink_cost: float = Field(
        0.0,
        ge=0,
        description="reclaim: cost per worker an elastic job gives up when it shrinks "
        "(in units of preemption cost; 0: count preemptions only)",
    )


ALLOCATION = Table(
    "allocation",
    "time shares: the fraction of wall-clock time each job runs on each GPU type "
    "(every objective but max_progress and reclaim, which use whole GPUs)",
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
    optional=True,
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

ELASTIC_ALLOCATION = Table(
    "elastic_allocation",
    "whole GPUs per job (max_progress): the one option each job runs with, one row per "
    "job; a job that waits has workers 0 and worker_type ''",
    (
        Column("job", "str", "job id"),
        Column("worker_type", "str", "GPU type the job runs on ('' when it waits)"),
        Column(
            "workers",
            "int",
            "GPUs the job runs on (an elastic job's chosen count, else scale_factor; 0: waits)",
        ),
        Column("throughput", "float", "whole-job throughput with those workers", "steps/s"),
        Column(
            "progress_per_h",
            "float",
            "the job's term of the objective: 3600 * weight * throughput / steps_remaining",
            "1/h",
        ),
        Column("elastic", "bool", "the job is elastic (its worker count was chosen)"),
    ),
    optional=True,
)

CAPACITY = Table(
    "capacity",
    "GPUs per type (max_progress): owned, loanable, used by the allocation, borrowed",
    (
        Column("worker_type", "str", "GPU type"),
        Column("workers", "int", "GPUs the cluster owns (the instance's workers)"),
        Column("loanable", "int", "GPUs that may be borrowed (the instance's loanable)"),
        Column("used", "int", "GPUs the allocation uses"),
        Column("borrowed", "int", "GPUs used beyond the owned ones: max(0, used - workers)"),
    ),
    optional=True,
)

LOANED_SERVERS = Table(
    "loaned_servers",
    "the loaned servers (reclaim): one row per server, returned or kept",
    (
        Column("server", "str", "server id"),
        Column("worker_type", "str", "GPU type of the server"),
        Column("gpus", "int", "GPUs of the server"),
        Column("gpus_used", "int", "GPUs the jobs placed on it use now"),
        Column("returned", "bool", "the server goes back to its owner"),
    ),
    optional=True,
)

RECLAIM_JOBS = Table(
    "reclaim_jobs",
    "what returning the servers does to each job (reclaim): one row per job",
    (
        Column("job", "str", "job id"),
        Column("worker_type", "str", "GPU type of its loaned servers ('' when on none)"),
        Column("loaned_gpus", "int", "GPUs the job has on loaned servers now"),
        Column("gpus_lost", "int", "GPUs it has on the returned servers"),
        Column(
            "workers_before",
            "int",
            "workers it runs with now (current_workers; 0 when unknown: an elastic job on "
            "no loaned server without current_workers)",
        ),
        Column("workers_after", "int", "workers after the return (0: preempted)"),
        Column(
            "action",
            "str",
            "'keep' (loses nothing), 'shrink' (an elastic job runs on fewer workers) or 'preempt'",
        ),
        Column(
            "cost",
            "float",
            "its term of the objective: preemption_cost if preempted, shrink_cost * "
            "workers given up if shrunk",
            "preemption cost",
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
    Detail("lp_strategy", "str", "column_generation when the LP was solved by pricing columns"),
    Detail("pricing_rounds", "int", "column generation: rounds that added columns"),
    Detail("columns_generated", "int", "column generation: columns added by pricing"),
    Detail("lp_columns", "int", "column generation: (job, type) columns in the final LP"),
    Detail("pair_columns_full", "int", "column generation: columns of the monolithic LP"),
    Detail(
        "reduced_rows",
        "int",
        "column generation: job rows kept in the LP whose other rows were aggregated "
        "at sampled GPU prices",
    ),
    Detail(
        "bottleneck_fill",
        "bool",
        "column generation: no LP solved; every job reached the bound min over jobs of the "
        "best type full time (a proof of optimality)",
    ),
    Detail("levels", "int", "water-filling levels"),
    Detail("level_lps", "int", "LPs that raised a level"),
    Detail("lp_solves", "int", "LP solves in all"),
    Detail("check_lps", "int", "extra LPs checking jobs without a dual certificate"),
    Detail(
        "cold_resolves",
        "int",
        "warm simplex re-solves that ended without a verified optimum and were solved "
        "again from scratch (the same LP)",
    ),
    Detail("groups_frozen_by_duals", "int", "rows frozen by a dual certificate"),
    Detail(
        "groups_frozen_at_caps",
        "int",
        "rows frozen at their cap (the largest value they can reach alone) ahead of the "
        "level LP that proved it",
    ),
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
    Detail("options", "int", "max_progress: (job, type, workers) options in the MILP"),
    Detail("elastic_jobs", "int", "max_progress: jobs with elastic worker counts"),
    Detail("jobs_running", "int", "max_progress: jobs given an option"),
    Detail("gpus_borrowed", "int", "max_progress: GPUs used beyond the owned workers"),
    Detail("servers_requested", "int", "reclaim: loaned servers to return (servers)"),
    Detail("server_type", "str", "reclaim: the only GPU type returned (server_type; null: any)"),
    Detail("shrink_cost", "float", "reclaim: cost per worker an elastic job gives up"),
    Detail("preempted_jobs", "int", "reclaim: jobs preempted"),
    Detail("shrunk_jobs", "int", "reclaim: elastic jobs that shrink"),
    Detail("gpus_returned", "int", "reclaim: GPUs of the returned servers"),
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
    Objective(
        "max_progress",
        "Lyra: give each job one (GPU type, worker count) option or none, whole GPUs within "
        "workers + loanable, maximising the sum of 3600 * weight * throughput / "
        "steps_remaining (remaining work finished per hour); elastic jobs choose their "
        "worker count, the others run on scale_factor GPUs or wait (MILP)",
        "1/h",
        "max",
    ),
    Objective(
        "reclaim",
        "Lyra: return `servers` loaned servers at the least preemption cost; an elastic "
        "job on them shrinks to a worker count it still has GPUs for instead of stopping "
        "(MILP)",
        "preemption cost",
        "min",
    ),
)

TIME_SHARING = "time_sharing"
SPACE_SHARING = "space_sharing"

_LP = "hetopt.kinds.gpu_cluster.methods"
_P = "hetopt.kinds.gpu_cluster.policies"
_E = "hetopt.kinds.gpu_cluster.elastic"

BY_VARIANT: dict[tuple[str, str], LazyMethod] = {
    ("max_min_fairness", TIME_SHARING): LazyMethod(f"{_LP}:MaxMinFairness"),
    ("makespan", TIME_SHARING): LazyMethod(f"{_LP}:Makespan"),
    ("max_min_fairness_water_filling", TIME_SHARING): LazyMethod(f"{_P}:WaterFilling"),
    ("finish_time_fairness", TIME_SHARING): LazyMethod(f"{_P}:FinishTimeFairness"),
    ("max_total_throughput", TIME_SHARING): LazyMethod(f"{_P}:MaxTotalThroughput"),
    ("min_cost", TIME_SHARING): LazyMethod(f"{_P}:MinCost"),
    ("max_progress", TIME_SHARING): LazyMethod(f"{_E}:MaxProgress"),
    ("reclaim", TIME_SHARING): LazyMethod(f"{_E}:Reclaim"),
    ("max_min_fairness", SPACE_SHARING): LazyMethod(f"{_LP}:MaxMinSpaceSharing"),
    ("makespan", SPACE_SHARING): LazyMethod(f"{_LP}:MakespanSpaceSharing"),
}
"""(objective, variant) -> method; the variant is ``space_sharing`` when the instance has
a ``colocation`` list."""


DEFERRED_OBJECTIVES = frozenset({"max_min_fairness", "makespan", "max_total_throughput"})
"""The objectives :meth:`GpuClusterKind.speculate` defers the validation of: their
solves read the jobs' arrays only until HiGHS's first run (the others read the jobs'
own fields before, which would validate them there: the provisional reading would only
add its cost)."""


class GpuClusterKind(Kind):
    name = "gpu_cluster"
    description = "GPU cluster with several accelerator types (Gavel's policies)"
    objectives = OBJECTIVES
    instance_model = GpuClusterInstance
    params_model = GpuClusterParams
    methods = {o.name: BY_VARIANT[(o.name, TIME_SHARING)] for o in OBJECTIVES}
    tables = (ALLOCATION, JOBS, ELASTIC_ALLOCATION, CAPACITY, LOANED_SERVERS, RECLAIM_JOBS)
    details = DETAILS
    decomposer = LazyAttribute("hetopt.kinds.gpu_cluster.decompose:DECOMPOSER")

    def choose_method(
        self, objective: str, instance: GpuClusterInstance, params: Any
    ) -> LazyMethod:
        variant = SPACE_SHARING if instance.colocation else TIME_SHARING
        method = BY_VARIANT.get((objective, variant))
        if method is None:
            raise UsageError(
                f"objective {objective!r} does not model space sharing; use max_min_fairness "
                "or makespan, or drop the instance's colocation list"
            )
        return method

    def speculate(self, data: dict[str, Any], objective: str | None, pending: Any) -> Any:
        """Large time-sharing clusters as plain records: validated beside HiGHS
        (:func:`.data.speculate`), for the objectives whose solve reads nothing of the
        jobs but their arrays before HiGHS runs (:data:`DEFERRED_OBJECTIVES`)."""
        from .data import speculate

        name = objective if objective is not None else data.get("objective")
        if name is None:
            name = self.objectives[0].name
        if type(name) is not str or name not in DEFERRED_OBJECTIVES:
            return None  # (a name that is no string: the validation says what is wrong)
        return speculate(data, pending)

    def check(self, instance: GpuClusterInstance, objective: str, params: Any) -> None:
        """What each objective needs (``hetopt validate -O NAME`` agrees with solve).

        * Every objective: a method for the instance's variant (space sharing is
          modelled by ``max_min_fairness`` and ``makespan`` only).
        * ``max_progress``: ``steps_remaining`` on every job; ``reclaim``:
          ``loaned_servers`` and at most as many ``servers`` as can be returned; neither
          takes ``agnostic`` (:func:`.inputs.check_elastic`).
        * The time-share objectives: no elastic job (``jobs[i].elastic``) and no
          ``loanable`` capacity (they allocate the owned ``workers``), no reclaim
          parameter; ``steps_remaining`` for ``makespan`` and ``finish_time_fairness``;
          ``cost_per_hour`` (and steps for jobs with an SLO) for ``min_cost``.
        """
        self.choose_method(objective, instance, params)
        if objective in ELASTIC_OBJECTIVES:
            check_elastic(instance, objective, params)
            return
        for i, job in enumerate(instance.jobs if instance.has_elastic else ()):
            if job.elastic is not None:
                raise InstanceError(
                    f"objective {objective!r} allocates time shares to fixed-size jobs; an "
                    "elastic job is scheduled by max_progress (or give it throughput and "
                    "scale_factor instead)",
                    f"jobs[{i}].elastic",
                )
        if instance.loanable is not None:
            raise InstanceError(
                f"loaned capacity is used by max_progress and reclaim only; objective "
                f"{objective!r} allocates the owned workers (drop loanable)",
                "loanable",
            )
        given = sorted(set(RECLAIM_PARAMS) & params.model_fields_set)
        if given:
            raise UsageError(f"{', '.join(given)}: only the reclaim objective takes it")
        if objective in ("makespan", "finish_time_fairness"):
            require_steps(instance, objective)
        check_inputs(instance, objective)  # weights within what HiGHS can honour

    def verify(self, instance: GpuClusterInstance, result: Result) -> Verification:
        from . import verify as V

        if result.objective == "max_progress":
            return V.verify_max_progress(instance, result)
        if result.objective == "reclaim":
            return V.verify_reclaim(instance, result)
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
