"""The ``multi_resource`` kind: GPU, CPU and memory for DNN training jobs (Synergy, OSDI'22).

Each job has a profile: its throughput at several (CPUs per GPU, memory per GPU) levels.
One integrated MILP picks a profile per job (never below the job's fair-share
throughput) and places the job on servers within their GPU, CPU and memory capacity,
maximising the total throughput. A lexicographic second solve then minimises the number
of servers in use with the throughput fixed at its optimum (:mod:`.methods`). The result's
``placement`` table says which job runs on which server with which profile.

Placement rules (affinity, anti-affinity, at most k per group, spread over labelled
groups of servers; :mod:`.rules`) hold as constraints (hard) or cost a penalty per
violation (soft, listed in the ``violations`` table). ``min_cost`` right-sizes instead:
every job meets its ``min_throughput`` and the cost per hour of the servers in use is
minimised. See ``models/multi_resource.md``.
"""

from __future__ import annotations

from typing import Any

from ...contract import Column, Detail, Table
from ...options import SolveOptions
from ...result import Result, Verification
from ..base import Kind, LazyAttribute, LazyMethod, Objective
from .data import (
    Affinity,
    AntiAffinity,
    Job,
    MaxPerGroup,
    MultiResourceInstance,
    Profile,
    Server,
    Spread,
    check_penalty_range,
    require_costs,
)
from .params import FRAGMENTATION_TIME_LIMIT_S, MultiResourceParams

__all__ = [
    "FRAGMENTATION_TIME_LIMIT_S",
    "KIND",
    "Affinity",
    "AntiAffinity",
    "Job",
    "MaxPerGroup",
    "MultiResourceInstance",
    "MultiResourceKind",
    "MultiResourceParams",
    "Profile",
    "Server",
    "Spread",
]

PLACEMENT = Table(
    "placement",
    "where each job runs: one row per (job, server) piece with the job's chosen profile; "
    "a job split over several servers has one row per server",
    (
        Column("job", "str", "job id"),
        Column("server", "str", "server id"),
        Column("profile", "int", "position of the chosen profile in the job's profile list"),
        Column("gpus", "int", "GPUs of the job on this server"),
        Column("cpus", "float", "CPUs of the job on this server (gpus x CPUs per GPU)"),
        Column("mem_gb", "float", "memory of the job on this server (gpus x GB per GPU)", "GB"),
        Column(
            "throughput",
            "float",
            "the job's normalised throughput with its profile (repeated on each row of a "
            "split job: count it once)",
        ),
        Column(
            "fair_share_throughput",
            "float",
            "the job's best throughput within the cluster's CPUs and memory per GPU (its floor)",
        ),
    ),
)

SERVERS = Table(
    "servers",
    "use of each server's GPUs, CPUs and memory",
    (
        Column("server", "str", "server id"),
        Column("gpus_used", "int", "GPUs allocated to jobs"),
        Column("gpus", "int", "GPUs of the server"),
        Column("cpus_used", "float", "CPUs allocated to jobs"),
        Column("cpus", "float", "CPUs of the server"),
        Column("mem_gb_used", "float", "memory allocated to jobs", "GB"),
        Column("mem_gb", "float", "memory of the server", "GB"),
        Column("jobs", "int", "jobs (or pieces of split jobs) placed on the server"),
    ),
)

VIOLATIONS = Table(
    "violations",
    "placement rules broken by the placement (instances with placement_rules): one row "
    "per (rule, group) with violations; no rows when every rule holds",
    (
        Column("rule", "str", "the rule, e.g. 'placement_rules[2]'"),
        Column("type", "str", "anti_affinity, affinity, max_per_group or spread"),
        Column("tag", "str", "the tag the rule constrains"),
        Column("scope", "str", "'server' or the label key that groups servers"),
        Column(
            "group",
            "str",
            "the group (server id or label value; spread: the fullest group; null: servers "
            "without the label)",
        ),
        Column(
            "jobs",
            "int",
            "jobs with the tag in the group (affinity outside every group: those jobs)",
        ),
        Column(
            "violations",
            "int",
            "jobs beyond the limit, jobs without a partner, or skew beyond max_skew",
        ),
        Column("penalty", "float", "penalty x violations (0 for hard rules)", "objective unit"),
        Column("hard", "bool", "the rule is hard (a hard rule never has violations)"),
        Column("description", "str", "a readable sentence naming the jobs"),
    ),
    optional=True,
)

CONFLICT = Table(
    "conflict",
    "on infeasibility with hard placement rules: an irreducible set of rules in conflict "
    "(deletion filter; diagnose=true)",
    (
        Column("constraint", "str", "the instance field, e.g. 'placement_rules[1]'"),
        Column("description", "str", "a readable sentence"),
    ),
    optional=True,
)

THROUGHPUT = "normalised throughput"
COST = "cost per hour"

DETAILS = (
    Detail(
        "fair_share_cpus_per_gpu", "float", "the cluster's CPUs per GPU (the fair share)", "CPUs"
    ),
    Detail(
        "fair_share_mem_gb_per_gpu", "float", "the cluster's memory per GPU (the fair share)", "GB"
    ),
    Detail(
        "candidate_profiles",
        "int",
        "profiles the model may choose (at least the fair share, not dominated)",
    ),
    Detail("split_jobs", "int", "jobs larger than every server, split over several"),
    Detail("symmetry_breaking", "bool", "identical servers ordered by GPUs used (symmetry)"),
    Detail(
        "config_only_status",
        "str",
        "status of the configuration-only knapsack (config_bound=true)",
    ),
    Detail(
        "config_only_bound",
        "float",
        "configuration-only bound on the total throughput (config_bound=true)",
        THROUGHPUT,
    ),
    Detail(
        "config_only_s",
        "float",
        "time of the configuration-only knapsack (config_bound or warm_start)",
        "s",
    ),
    Detail(
        "start_throughput",
        "float",
        "total throughput of the greedy warm start (null: no start; warm_start=true)",
        THROUGHPUT,
    ),
    Detail("start_s", "float", "time to compute the greedy warm start (warm_start=true)", "s"),
    Detail(
        "lns_rounds",
        "int",
        "neighbourhood solves run on the warm start (instances with rules, lns=true)",
    ),
    Detail(
        "lns_objective",
        "float",
        "objective of the warm start after the neighbourhood search",
        "objective unit",
    ),
    Detail("lns_s", "float", "time of the neighbourhood search (counts in the time limit)", "s"),
    Detail(
        "fragmentation_status",
        "str",
        "outcome of the servers-in-use solve: its status, 'skipped: ...', 'rejected: ...' "
        "or 'no solution: ...' (fragmentation=true)",
    ),
    Detail(
        "servers_used_bound",
        "float",
        "proven lower bound on the servers in use (fragmentation solve)",
    ),
    Detail("servers_used", "int", "servers hosting at least one GPU of a job"),
    Detail("placement_rules", "int", "placement rules of the instance"),
    Detail("rule_violations", "int", "violations of soft placement rules (instances with rules)"),
    Detail(
        "total_penalty",
        "float",
        "sum of penalty x violations of the soft rules (instances with rules)",
        "objective unit",
    ),
    Detail(
        "total_throughput",
        "float",
        "sum of the chosen profiles' throughputs (min_cost, or when rules make the "
        "objective differ from it)",
        THROUGHPUT,
    ),
    Detail(
        "server_cost",
        "float",
        "cost_per_hour of the servers in use (when every server has one)",
        COST,
    ),
    Detail(
        "start_cost", "float", "cost of the first-fit warm start of min_cost (null: none)", COST
    ),
    Detail("conflict", "list", "the hard placement rules in conflict (infeasible instances)"),
    Detail("conflict_source", "str", "how the conflict was found"),
    Detail("conflict_minimal", "bool", "every check of the deletion filter was decided"),
    Detail(
        "fair_share_total",
        "float",
        "sum of the jobs' fair-share throughputs (a lower bound on the optimum)",
        THROUGHPUT,
    ),
    # results of hetopt.decompose (partitioned solves)
    Detail("decomposition", "str", "how the instance was decomposed ('partitions')"),
    Detail("method", "str", "the decomposition's partitioning method"),
    Detail("partitions", "int", "number of parts of a decomposed solve"),
    Detail("parts", "list", "per part: jobs, servers, status, objective, gap, timings"),
    Detail("repair_gain", "float", "throughput gained by repairing the merged parts", THROUGHPUT),
)


class MultiResourceKind(Kind):
    name = "multi_resource"
    description = "GPU, CPU and memory for DNN training jobs on servers (Synergy)"
    objectives = (
        Objective(
            "max_total_throughput",
            "choose a profiled (CPUs, memory) per GPU configuration per job, never below its "
            "fair share, and place jobs on servers; maximise the sum of throughputs",
            THROUGHPUT,
            "max",
        ),
        Objective(
            "min_cost",
            "every job runs with a profile whose throughput is at least its min_throughput "
            "(default: its fair share); minimise the cost_per_hour of the servers in use "
            "(plus soft-rule penalties)",
            COST,
            "min",
        ),
    )
    instance_model = MultiResourceInstance
    params_model = MultiResourceParams
    methods = {
        "max_total_throughput": LazyMethod("hetopt.kinds.multi_resource.methods:Throughput"),
        "min_cost": LazyMethod("hetopt.kinds.multi_resource.methods:MinCost"),
    }
    tables = (PLACEMENT, SERVERS, VIOLATIONS, CONFLICT)
    details = DETAILS
    decomposer = LazyAttribute("hetopt.kinds.multi_resource.decompose:DECOMPOSER")

    def check(self, instance: MultiResourceInstance, objective: str, params: Any) -> None:
        """``min_cost`` needs every server's ``cost_per_hour``; soft rules' penalties lie
        within the range of the objective's other coefficients
        (:func:`~hetopt.kinds.multi_resource.data.check_penalty_range`)."""
        if objective == "min_cost":
            require_costs(instance)
        check_penalty_range(instance, objective)

    def _config_bound(
        self, instance: MultiResourceInstance, options: SolveOptions | None
    ) -> tuple[dict[str, Any], dict[int, int]]:
        """Solve the configuration-only knapsack on its own: its details and its profile
        per job (:func:`methods.config_bound`)."""
        from ...pipeline import Session
        from . import methods as M

        return M.config_bound(Session(self, options), instance)

    def verify(self, instance: MultiResourceInstance, result: Result) -> Verification:
        from . import verify as V

        return V.verify(
            instance,
            result.objective_value,
            result.tables["placement"],
            objective=result.objective,
            violations=result.tables.get("violations"),
        )


KIND = MultiResourceKind()
