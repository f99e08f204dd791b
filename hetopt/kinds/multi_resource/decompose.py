"""Partitioned solve of the ``multi_resource`` MILP (Synergy's setting): the kind's
:class:`~hetopt.contract.Decomposer` (the generic driver is :mod:`hetopt.decompose`).

Servers and jobs are dealt round-robin into ``k`` parts by stratum (server shape; job
GPUs x profile list), each part is solved by the kind's own MILP, and the placements are
merged: servers are disjoint, so the union respects every capacity, and the total
throughput is the sum over parts.

The kind's fair-share floor uses the WHOLE cluster's CPUs and memory per GPU. A part
recomputes it from its own servers, so the split is only allowed when every part has
exactly the cluster's CPUs/GPU and memory/GPU (always true for identical servers, the
Synergy default); otherwise :class:`~hetopt.UsageError` is raised rather than letting a
part enforce a different floor. The merged placement is built and re-checked against the
whole instance by :func:`hetopt.pipeline.finish`. Every job may use every server, so the
instance is one component: nothing separates exactly, and one part is the monolithic
MILP. The parts are solved through the kind's public ``KIND.solve``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...contract import Outcome
from ...decompose import (
    finish_merged,
    place,
    session_for,
    solve_sub,
    sum_timings,
    wire,
    worker_options,
)
from ...errors import UsageError
from ...executors import SubmitExecutor, run_all
from ...options import SolveOptions
from ...result import Result
from ...status import Status

REL_TOL = 1e-9

PART_S = (0.05, 1.0e-3)
"""``(a, b)``: one part's MILP costs about ``a + b * jobs * servers`` seconds (its
placement binaries; ~0.6 s for 64 jobs on 8 servers, the ``128x16/k2`` benchmark's
parts). A MILP's time varies far more than an LP's: this only keeps ``workers="auto"``
from starting processes for parts that finish in well under a second."""


def part_seconds(jobs: int, servers: int) -> float:
    """Estimated seconds of one part's MILP (:data:`PART_S`)."""
    a, b = PART_S
    return a + b * jobs * servers


def _deal(keys: list[Any], k: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Sort by stratum (random inside) and deal round-robin into ``k`` parts."""
    labels: dict[Any, int] = {}
    strata = np.array([labels.setdefault(key, len(labels)) for key in keys], dtype=np.int64)
    order = np.lexsort((rng.permutation(len(keys)), strata))
    assign = np.empty(len(keys), dtype=np.int64)
    assign[order] = np.arange(len(keys)) % k
    return [np.nonzero(assign == p)[0] for p in range(k)]


def split(inst: Any, k: int, seed: int = 0) -> list[Any]:
    """``k`` sub-instances (disjoint servers and jobs) with the cluster's fair share."""
    if k < 1:
        raise UsageError(f"partitions must be >= 1, got {k}")
    if k > len(inst.servers):
        raise UsageError(f"partitions={k} exceeds the {len(inst.servers)} servers")
    rng = np.random.default_rng(seed)
    servers = _deal([(s.gpus, s.cpus, s.mem_gb) for s in inst.servers], k, rng)
    jobs = _deal(
        [
            (j.gpus, tuple((p.cpus_per_gpu, p.mem_gb_per_gpu, p.throughput) for p in j.profile))
            for j in inst.jobs
        ],
        k,
        rng,
    )
    arr = inst.arrays
    data = inst.to_dict()
    subs = []
    for p in range(k):
        srv = [inst.servers[i] for i in servers[p]]
        g = sum(s.gpus for s in srv)
        cpg, mpg = sum(s.cpus for s in srv) / g, sum(s.mem_gb for s in srv) / g
        if not (
            np.isclose(cpg, arr.cpus_per_gpu, rtol=REL_TOL)
            and np.isclose(mpg, arr.mem_gb_per_gpu, rtol=REL_TOL)
        ):
            raise UsageError(
                f"part {p} would have {cpg:.6g} CPUs and {mpg:.6g} GB per GPU instead of the "
                f"cluster's {arr.cpus_per_gpu:.6g} and {arr.mem_gb_per_gpu:.6g}: the fair-share "
                "floor would change; use partitions=1"
            )
        big = [inst.jobs[i].id for i in jobs[p] if inst.jobs[i].gpus > g]
        if big:
            raise UsageError(
                f"job {big[0]} needs more GPUs than part {p} has ({g}); use fewer parts"
            )
        subs.append(
            type(inst).from_dict(
                {
                    **data,
                    "servers": [data["servers"][i] for i in servers[p]],
                    "jobs": [data["jobs"][i] for i in jobs[p]],
                }
            )
        )
    return subs


def solve_partitioned_multi_resource(
    instance: Any,
    partitions: int,
    options: SolveOptions | None = None,
    executor: SubmitExecutor | None = None,
    seed: int = 0,
    **params: Any,
) -> Result:
    """Solve a ``multi_resource`` instance as ``partitions`` independent MILPs.

    Parameters
    ----------
    instance
        A validated ``multi_resource`` instance.
    partitions
        Number of parts (at most the number of servers).
    options
        Options of every part (each runs with ``threads=1``; ``time_limit_s`` applies
        per part).
    executor
        Where parts run (default serially).
    seed
        Seed of the random order inside each stratum.
    **params
        The kind's parameters, passed to every part.

    Returns
    -------
    Result
        ``feasible`` (no global bound is proven), total throughput = sum over parts,
        checked by the kind's verifier against the whole instance.
    """
    from .. import get_kind

    t0 = time.perf_counter()
    kind = get_kind(instance.kind)
    session = session_for(kind, options, t0)
    subs = split(instance, partitions, seed)
    t1 = time.perf_counter()
    opts = worker_options(options)
    where = place(executor, [part_seconds(len(s.jobs), len(s.servers)) for s in subs])
    outs = run_all(
        where.executor,
        solve_sub,
        [(s, "max_total_throughput", wire(opts), dict(params)) for s in subs],
    )
    t2 = time.perf_counter()
    results = [r for r, _ in outs]
    for r in results:
        session.record_solves(r.report)
    parts = [
        {
            "jobs": len(s.jobs),
            "servers": len(s.servers),
            "status": r.status.value,
            "objective_value": r.objective_value,
            "gap": r.gap,
            "wall_s": w,
            **{k: float(v) for k, v in r.timings.items()},
        }
        for s, (r, w) in zip(subs, outs, strict=True)
    ]
    bad = [r for r in results if not r.status.has_solution]
    info = {
        "decomposition": "partitions",
        "method": "stratified",
        "partitions": partitions,
        **where.details(),
    }
    timings = sum_timings(parts, ("build_s", "solve_s"))
    timings.update({"split_s": t1 - t0, "parts_wall_s": t2 - t1})
    if bad:
        failed = Outcome(
            status=bad[0].status,
            termination=f"a part ended {bad[0].status.value}: {bad[0].termination}",
            details={**info, "parts": parts},
        )
        return finish_merged(kind, instance, "max_total_throughput", failed, timings, session)
    # every table all parts return, stacked (servers are disjoint)
    names = [n for n in results[0].tables if all(n in r.tables for r in results)]
    tables = {n: pd.concat([r.tables[n] for r in results], ignore_index=True) for n in names}
    value = float(sum(r.objective_value or 0.0 for r in results))
    merged = Outcome(
        value,
        tables,
        {**info, "parts": parts, "repair_gain": 0.0},
        Status.FEASIBLE,
        "decomposed: feasible, optimality not proven",
    )
    timings["merge_s"] = time.perf_counter() - t2
    return finish_merged(kind, instance, "max_total_throughput", merged, timings, session)


class MultiResourceDecomposer:
    """The ``multi_resource`` kind's :class:`~hetopt.contract.Decomposer`: disjoint
    server groups (:func:`split`), each its own MILP."""

    separable: Mapping[str, str] = {}
    methods: tuple[str, ...] = ("stratified", "pop")
    """The generic driver's method names; every split here is stratified (``info``
    reports ``"stratified"``)."""

    def components(self, instance: Any) -> list[np.ndarray]:
        """One component: every job may use every server."""
        return [np.arange(len(instance.jobs))]

    def sub_instance(self, instance: Any, jobs: np.ndarray) -> Any:
        """The instance with only ``jobs`` (every server)."""
        data = instance.to_dict()
        return type(instance).from_dict({**data, "jobs": [data["jobs"][i] for i in jobs]})

    def partitioned(
        self,
        instance: Any,
        objective: str,
        params: Any,
        partitions: int,
        method: str,
        options: SolveOptions | None,
        executor: Any,
        seed: int,
    ) -> Result:
        """``partitions`` server groups (:func:`solve_partitioned_multi_resource`); one
        part is the whole instance: the exact monolithic MILP (as ``partitions=1`` is
        for ``gpu_cluster``), so a sweep over K = 1, 2, 4, ... does not fail at K = 1."""
        from .. import get_kind

        if partitions == 1:
            return get_kind(instance.kind).solve(instance, objective, options, **params)
        if objective != "max_total_throughput":
            raise UsageError(
                f"--partitions {partitions}: objective {objective!r} is not a sum over "
                "parts; the decomposition of multi_resource solves max_total_throughput "
                "only (drop --partitions for the exact MILP)"
            )
        if getattr(instance, "placement_rules", None):
            raise UsageError(
                f"--partitions {partitions}: placement_rules span servers of different "
                "parts, so a partitioned solve could break them or end infeasible; drop "
                "--partitions for the exact MILP"
            )
        return solve_partitioned_multi_resource(
            instance, partitions, options, executor, seed, **params
        )


DECOMPOSER = MultiResourceDecomposer()
