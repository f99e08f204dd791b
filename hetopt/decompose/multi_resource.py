"""Partitioned solve of the ``multi_resource`` MILP (Synergy's setting).

Servers and jobs are dealt round-robin into ``k`` parts by stratum (server shape; job
GPUs x profile list), each part is solved by the kind's own MILP, and the placements are
merged: servers are disjoint, so the union respects every capacity, and the total
throughput is the sum over parts.

The kind's fair-share floor uses the WHOLE cluster's CPUs and memory per GPU. A part
recomputes it from its own servers, so the split is only allowed when every part has
exactly the cluster's CPUs/GPU and memory/GPU (always true for identical servers, the
Synergy default); otherwise :class:`~hetopt.kinds.base.UsageError` is raised rather than
letting a part enforce a different floor. The merged placement is re-checked by the
kind's verifier against the whole instance.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from ..executors import SubmitExecutor, executor_for, run_all
from ..kinds.base import UsageError
from ..options import SolveOptions
from ..result import Result
from ..status import Status

REL_TOL = 1e-9


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
    from . import _kind, _solve_sub, _wire, _worker_options

    t0 = time.perf_counter()
    kind = _kind(instance)
    subs = split(instance, partitions, seed)
    t1 = time.perf_counter()
    opts = _worker_options(options)
    with executor_for(executor=executor) as ex:
        outs = run_all(
            ex, _solve_sub, [(s, "max_total_throughput", _wire(opts), dict(params)) for s in subs]
        )
    t2 = time.perf_counter()
    results = [r for r, _ in outs]
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
    info = {"decomposition": "partitions", "method": "stratified", "partitions": partitions}
    if bad:
        return Result(
            kind=instance.kind,
            objective="max_total_throughput",
            status=bad[0].status,
            termination=f"a part ended {bad[0].status.value}: {bad[0].termination}",
            info={**info, "parts": parts},
        )
    tables = {
        name: pd.concat([r.tables[name] for r in results], ignore_index=True)
        for name in ("placement", "servers")
        if all(name in r.tables for r in results)
    }
    value = float(sum(r.objective_value or 0.0 for r in results))
    merged = Result(
        kind=instance.kind,
        objective="max_total_throughput",
        status=Status.FEASIBLE,
        termination="decomposed: feasible, optimality not proven",
        objective_value=value,
        tables=tables,
        info={**info, "parts": parts, "repair_gain": 0.0},
    )
    merged = replace(merged, verification=kind.verify(instance, merged))
    t3 = time.perf_counter()
    timings = {
        "build_s": float(sum(p.get("build_s", 0.0) for p in parts)),
        "solve_s": float(sum(p.get("solve_s", 0.0) for p in parts)),
        "split_s": t1 - t0,
        "parts_wall_s": t2 - t1,
        "merge_s": t3 - t2,
    }
    return replace(merged, timings=timings, runtime_s=t3 - t0)
