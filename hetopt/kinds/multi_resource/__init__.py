"""The ``multi_resource`` kind: GPU, CPU and memory for DNN training jobs (Synergy, OSDI'22).

Each job has a profile: its throughput at several (CPUs per GPU, memory per GPU) levels.
One integrated MILP picks a profile per job (never below the job's fair-share
throughput) and places the job on servers within their GPU, CPU and memory capacity,
maximising the total throughput. A lexicographic second solve then minimises the number
of servers in use with the throughput fixed at its optimum (:mod:`.methods`). The result's
``placement`` table says which job runs on which server with which profile. See
``models/multi_resource.md``.
"""

from __future__ import annotations

from typing import Any

from ...contract import Column, Detail, Table
from ...options import SolveOptions
from ...pipeline import Session
from ...result import Result, Verification
from ..base import Kind, Objective
from . import methods as M
from . import verify as V
from .data import Job, MultiResourceInstance, Profile, Server
from .decompose import DECOMPOSER
from .methods import FRAGMENTATION_TIME_LIMIT_S, MultiResourceParams

__all__ = [
    "FRAGMENTATION_TIME_LIMIT_S",
    "KIND",
    "Job",
    "MultiResourceInstance",
    "MultiResourceKind",
    "MultiResourceParams",
    "Profile",
    "Server",
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

THROUGHPUT = "normalised throughput"

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
    )
    instance_model = MultiResourceInstance
    params_model = MultiResourceParams
    methods = {"max_total_throughput": M.Throughput()}
    tables = (PLACEMENT, SERVERS)
    details = DETAILS
    decomposer = DECOMPOSER

    def _config_bound(
        self, instance: MultiResourceInstance, options: SolveOptions | None
    ) -> tuple[dict[str, Any], dict[int, int]]:
        """Solve the configuration-only knapsack on its own: its details and its profile
        per job (:func:`methods.config_bound`)."""
        return M.config_bound(Session(self, options), instance)

    def verify(self, instance: MultiResourceInstance, result: Result) -> Verification:
        return V.verify(instance, result.objective_value, result.tables["placement"])


KIND = MultiResourceKind()
