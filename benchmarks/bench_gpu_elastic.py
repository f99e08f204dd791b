"""Lyra's elastic jobs on loaned GPUs (``gpu_cluster`` ``max_progress`` and ``reclaim``).

Every benchmark asserts an answer computed here independently of the MILP:

* ``max_progress``: each job may use one GPU type only (drawn at random), so the problem
  splits into one multiple-choice knapsack per type, each solved exactly by the dynamic
  programme over capacity; the optimum is their sum.
* ``reclaim``: each job lives on one loaned server, so a server's cost does not depend on
  the others (the shrink-or-preempt rule applied to its jobs); the optimum is the sum of
  the ``servers`` cheapest servers.

All solves use ``threads=1`` and ``mip_rel_gap=0``; timings are split into build /
transfer / HiGHS / load (``benchmark.extra_info``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from registry import REGISTRY, BenchSpec, record, register

import hetopt
from hetopt import SolveOptions, Status
from hetopt.kinds.gpu_cluster import GpuClusterInstance

TYPES = ("v100", "p100", "t4")
COUNTS = (1, 2, 4, 8)


def progress_instance(n: int, seed: int = 1) -> GpuClusterInstance:
    """``n`` jobs (60% elastic), each usable on one random type; capacity for about a
    third of what the jobs could use."""
    rng = np.random.default_rng(seed)
    jobs = []
    for i in range(n):
        t = TYPES[int(rng.integers(len(TYPES)))]
        steps = float(rng.integers(2, 48) * 1800)
        if rng.random() < 0.6:
            counts = sorted(int(c) for c in rng.choice(COUNTS, size=3, replace=False))
            base = float(rng.uniform(0.5, 5.0))
            alpha = float(rng.uniform(0.6, 0.95))
            thr = [round(base * c**alpha, 4) for c in counts]
            jobs.append(
                {
                    "id": f"e{i}",
                    "elastic": {"workers": counts, "throughput": {t: thr}},
                    "steps_remaining": steps,
                }
            )
        else:
            jobs.append(
                {
                    "id": f"j{i}",
                    "throughput": {t: round(float(rng.uniform(0.5, 8.0)), 4)},
                    "scale_factor": int(rng.choice([1, 2, 4])),
                    "steps_remaining": steps,
                }
            )
    g = max(8, n // 3)
    return GpuClusterInstance.from_dict(
        {
            "kind": "gpu_cluster",
            "workers": {"v100": g, "p100": g, "t4": 0},
            "loanable": {"t4": g},
            "jobs": jobs,
        }
    )


def mckp_dp(items: list[list[tuple[int, float]]], capacity: int) -> float:
    """Multiple-choice knapsack by dynamic programming over capacity (numpy per group)."""
    best = np.zeros(capacity + 1)
    for group in items:
        new = best.copy()
        for w, v in group:
            if w <= capacity:
                new[w:] = np.maximum(new[w:], best[: capacity + 1 - w] + v)
        best = new
    return float(best[capacity])


def progress_answer(inst: GpuClusterInstance) -> float:
    cap = inst.capacity
    total = 0.0
    for t in inst.workers:
        groups = []
        for j in inst.jobs:
            assert j.steps_remaining is not None
            scale = 3600.0 * j.weight / j.steps_remaining
            if j.elastic is not None:
                pts = zip(j.elastic.workers, j.elastic.throughput.get(t, []), strict=False)
            else:
                pts = iter([(j.scale_factor, (j.throughput or {}).get(t, 0.0))])
            groups.append([(w, scale * v) for w, v in pts if v > 0])
        total += mckp_dp([g for g in groups if g], cap[t])
    return total


def reclaim_instance(servers: int, seed: int = 2) -> tuple[GpuClusterInstance, float, int]:
    """``servers`` loaned 8-GPU T4 servers, each hosting its own jobs; returns the
    instance, the optimum and how many servers to return."""
    rng = np.random.default_rng(seed)
    loaned, jobs, costs = [], [], []
    for k in range(servers):
        free, placed, cost = 8, {}, 0.0
        for q in range(int(rng.integers(1, 4))):
            if free == 0:
                break
            jid = f"s{k}j{q}"
            if rng.random() < 0.6:  # elastic: some workers here, some on owned T4s
                here = int(rng.integers(1, free + 1))
                now = here + int(rng.integers(0, 3))
                counts = sorted({1, 2, 4, now} | {int(rng.integers(1, now + 1))})
                counts = [c for c in counts if c <= max(now, 4)]
                smallest = int(rng.choice([1, 2]))
                thr = [1.0 * c**0.8 if c >= smallest else 0.0 for c in counts]
                if now not in counts or thr[counts.index(now)] == 0:
                    continue
                job: dict[str, Any] = {
                    "id": jid,
                    "elastic": {"workers": counts, "throughput": {"t4": thr}},
                    "current_workers": now,
                }
                fits = [c for c, v in zip(counts, thr, strict=True) if v > 0 and c <= now - here]
                job_cost = 0.0 if fits else 1.0
            else:
                here = int(rng.integers(1, free + 1))
                pc = float(rng.choice([1.0, 2.0, 3.0]))
                job = {"id": jid, "throughput": {"t4": 1.0}, "scale_factor": here}
                job["preemption_cost"] = pc
                job_cost = pc
            jobs.append(job)
            placed[jid] = here
            free -= here
            cost += job_cost
        loaned.append({"id": f"inf-{k}", "worker_type": "t4", "gpus": 8, "jobs": placed})
        costs.append(cost)
    ret = max(1, int(0.3 * servers))
    data = {
        "kind": "gpu_cluster",
        "workers": {"v100": 8, "t4": 16},
        "loanable": {"t4": 8 * servers},
        "loaned_servers": loaned,
        "jobs": jobs or [{"id": "idle", "throughput": {"v100": 1.0}}],
    }
    return GpuClusterInstance.from_dict(data), float(sum(sorted(costs)[:ret])), ret


for _n, _slow in ((300, False), (2000, False), (10000, True)):
    register(
        BenchSpec(
            name=f"gpu_elastic/max_progress/{_n}",
            kind="gpu_cluster",
            objective="max_progress",
            size={"jobs": _n, "types": len(TYPES)},
            slow=_slow,
            make=lambda n=_n: progress_instance(n),
        )
    )
for _s, _slow in ((100, False), (1000, False), (5000, True)):
    register(
        BenchSpec(
            name=f"gpu_elastic/reclaim/{_s}",
            kind="gpu_cluster",
            objective="reclaim",
            size={"servers": _s},
            slow=_slow,
            make=lambda s=_s: reclaim_instance(s),
        )
    )

SPECS = [s for s in REGISTRY.values() if s.name.startswith("gpu_elastic/")]
OPTS = SolveOptions(threads=1, mip_rel_gap=0.0)


@pytest.mark.parametrize(
    "spec",
    [pytest.param(s, id=s.name, marks=[pytest.mark.slow] if s.slow else []) for s in SPECS],
)
def test_elastic(benchmark: Any, spec: BenchSpec) -> None:
    assert spec.make is not None
    if spec.objective == "max_progress":
        inst = spec.make()
        expected = progress_answer(inst)
        params: dict[str, Any] = {}
    else:
        inst, expected, servers = spec.make()
        params = {"servers": servers}
    res = benchmark.pedantic(
        lambda: hetopt.solve(inst, spec.objective, OPTS, **params), rounds=1, iterations=1
    )
    assert res.status == Status.OPTIMAL, res.termination
    assert res.verification.ok, res.verification.violations
    assert res.objective_value == pytest.approx(expected, rel=1e-9, abs=1e-9)
    record(benchmark, res, expected=expected, **{k: v for k, v in res.info.items() if k in (
        "options", "jobs_running", "gpus_borrowed", "preempted_jobs", "shrunk_jobs")})  # fmt: skip
