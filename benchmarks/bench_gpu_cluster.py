"""gpu_cluster max-min fairness and makespan: hetopt end-to-end vs HiGHS alone.

For each size the benchmark times ``hetopt.solve`` (build + transfer + HiGHS + load,
recorded separately) and a *direct* highspy solve of the same LP built here with numpy
from the definitions in Gavel (independent code: it also cross-checks the optimum). The
ratio ``runtime_s / direct_total_s`` is the overhead hetopt adds to HiGHS's own work.
All solves use ``threads=1``.
"""

from __future__ import annotations

import time
from typing import Any

import highspy
import numpy as np
import pytest
from registry import REGISTRY, BenchSpec, record, register

import hetopt
from hetopt import SolveOptions, Status
from hetopt.highs import _HighsClass
from hetopt.kinds.gpu_cluster import generate

SIZES = [
    # jobs, workers, slow
    (100, "k80=36,p100=36,v100=36", False),
    (1000, "k80=36,p100=36,v100=36", False),
    (5000, "k80=300,p100=300,v100=300", False),
    (20000, "k80=1000,p100=1000,v100=1000", True),
]
OBJECTIVES = ("max_min_fairness", "makespan")

for _n, _w, _slow in SIZES:
    for _obj in OBJECTIVES:
        register(
            BenchSpec(
                name=f"gpu_cluster/{_obj}/{_n}",
                kind="gpu_cluster",
                objective=_obj,
                size={"jobs": _n, "workers": _w},
                slow=_slow,
                make=lambda n=_n, w=_w: generate(n, w, seed=1),
            )
        )

SPECS = [s for s in REGISTRY.values() if s.kind == "gpu_cluster" and s.name.count("/") == 2]


def direct_highs(
    inst: hetopt.kinds.gpu_cluster.GpuClusterInstance, objective: str
) -> tuple[float, float, float]:
    """Build the LP straight from numpy and solve it with highspy (IPM, threads=1).

    Returns (objective value in the objective's unit, HiGHS run seconds, total seconds)."""
    t0 = time.perf_counter()
    a = inst.arrays
    job, typ = np.nonzero(a.thr > 0)
    K, n, T = len(job), a.num_jobs, len(a.types)
    fits = a.allowed[job, typ]
    if objective == "max_min_fairness":
        p = a.thr @ a.workers / a.workers.sum()
        coef = (a.scale / (a.weight * p))[job] * a.thr[job, typ]
    else:
        coef = a.thr[job, typ] / a.steps[job]
        coef = coef / coef.max()  # a simple row-independent scaling, undone below
    import scipy.sparse as sp

    rows = np.concatenate([job, n + typ, 2 * n + T + job, 2 * n + T + np.arange(n)])
    cols = np.concatenate([np.arange(K), np.arange(K), np.arange(K), np.full(n, K)])
    vals = np.concatenate([np.ones(K), a.scale[job], coef, -np.ones(n)])
    # rows: time (n), capacity (T), objective rows (n)
    rows = np.where(rows >= 2 * n + T, rows - n, rows)
    A = sp.csc_array((vals, (rows, cols)), shape=(2 * n + T, K + 1))
    inf = highspy.kHighsInf
    lo = np.concatenate([np.full(n + T, -inf), np.zeros(n)])
    hi = np.concatenate([np.ones(n), a.workers, np.full(n, inf)])
    c = np.zeros(K + 1)
    c[K] = 1.0
    h = _HighsClass()  # the bare class: no banner on stdout
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("solver", "ipm")
    h.passModel(
        K + 1,
        2 * n + T,
        A.nnz,
        1,
        -1,
        0.0,
        c,
        np.zeros(K + 1),
        np.concatenate([np.where(fits, 1.0, 0.0), [inf]]),
        lo,
        hi,
        A.indptr.astype(np.int32),
        A.indices.astype(np.int32),
        A.data,
        np.zeros(K + 1, dtype=np.int32),
    )
    t1 = time.perf_counter()
    h.run()
    t2 = time.perf_counter()
    z = h.getInfo().objective_function_value
    if objective == "makespan":
        scale = (a.thr[job, typ] / a.steps[job]).max()
        value = 1.0 / (z * scale)
    else:
        value = z
    return value, t2 - t1, t2 - t0


@pytest.mark.parametrize(
    "spec", [pytest.param(s, marks=[pytest.mark.slow] if s.slow else [], id=s.name) for s in SPECS]
)
def bench_gpu_cluster(benchmark, spec: BenchSpec) -> None:  # type: ignore[no-untyped-def]
    inst = spec.make()
    opts = SolveOptions(threads=1)
    result = benchmark.pedantic(
        hetopt.solve, args=(inst, spec.objective, opts), rounds=1, iterations=1
    )
    assert result.status == Status.OPTIMAL
    assert result.verification.ok, result.verification.violations
    value, highs_s, direct_total_s = direct_highs(inst, spec.objective)
    # the known answer: an independent numpy + highspy build of the same LP
    assert result.objective_value == pytest.approx(value, rel=1e-5)
    record(
        benchmark,
        result,
        jobs=spec.size["jobs"],
        direct_highs_s=highs_s,
        direct_total_s=direct_total_s,
        ratio_to_direct=result.runtime_s / direct_total_s,
    )


CHURN_ROUNDS = 15
CHURN_WARMUP = 2
"""Rounds measured after the warm-up rounds (a scheduler's steady state: both sides'
first rounds pay one-time costs, and 5 rounds left the median to the machine's noise)."""
CHURN = register(
    BenchSpec(
        name="gpu_cluster/persistent_churn/2000",
        kind="gpu_cluster",
        objective="max_min_fairness",
        size={
            "jobs": 2000,
            "workers": "k80=100,p100=100,v100=100",
            "churn": 20,
            "rounds": CHURN_ROUNDS,
            "warmup_rounds": CHURN_WARMUP,
        },
        make=lambda: generate(
            2000 + 20 * (CHURN_ROUNDS + CHURN_WARMUP), "k80=100,p100=100,v100=100", seed=1
        ),
    )
)


def bench_persistent_churn(benchmark) -> None:  # type: ignore[no-untyped-def]
    """Scheduler rounds with 2 % churn (20 jobs leave, 20 arrive, then a solve) on a
    live ``PersistentPolicy`` (symmetry groups kept warm, the default), each against
    the default (grouped) cold ``hetopt.solve`` of the same changed instance, timed in
    the same run (issue 20's goal: a warm round costs <= 1/3 of the cold solve); the
    one-row-per-job policy (``symmetry=False``) and its cold LP for comparison."""
    from statistics import median

    from hetopt.kinds.gpu_cluster import GpuClusterInstance, PersistentPolicy

    assert CHURN.make is not None
    pool = CHURN.make()
    n, c = 2000, 20
    d = pool.to_dict()
    records = d["jobs"]
    d["jobs"] = records[:n]
    opts = SolveOptions(threads=1)
    start = GpuClusterInstance.from_dict(d)
    policy = PersistentPolicy(start, "max_min_fairness", opts)
    per_job = PersistentPolicy(start, "max_min_fairness", opts, symmetry=False)
    policy.solve()
    per_job.solve()
    warm_s: list[float] = []
    cold_s: list[float] = []
    records_s: list[float] = []
    per_job_s: list[float] = []
    done: list[hetopt.Result] = []

    def churn(p: PersistentPolicy, r: int) -> hetopt.Result:
        ids = p.instance.arrays.job_ids
        arriving = records[n + c * r : n + c * (r + 1)]
        assert len(arriving) == c  # (a pool too small would measure removals only)
        p.remove_jobs(ids[:: n // c][:c])
        p.add_jobs(arriving)
        return p.solve()

    def round_() -> hetopt.Result:
        r = len(warm_s)
        t0 = time.perf_counter()
        warm = churn(policy, r)
        warm_s.append(time.perf_counter() - t0)
        done.append(warm)
        return warm

    def compare() -> None:
        """The last round's cold solve and per-job round, right after it (untimed by
        pytest-benchmark: its ``setup`` of the next round)."""
        if len(cold_s) == len(warm_s):
            return
        warm = done[-1]
        changed = GpuClusterInstance.from_dict(policy.instance.to_dict())  # untimed
        t0 = time.perf_counter()
        cold = hetopt.solve(changed, "max_min_fairness", opts)  # the default: grouped
        cold_s.append(time.perf_counter() - t0)
        # the cold path of a scheduler without the warm API: its job records, validated
        # and solved (the records' dict is made untimed)
        data = policy.instance.to_dict()
        t0 = time.perf_counter()
        from_records = hetopt.solve(data, "max_min_fairness", opts)
        records_s.append(time.perf_counter() - t0)
        assert from_records.objective_value == cold.objective_value
        t0 = time.perf_counter()
        warm_per_job = churn(per_job, len(cold_s) - 1)
        per_job_s.append(time.perf_counter() - t0)
        for got in (warm, warm_per_job):
            assert got.status == Status.OPTIMAL and got.verification.ok
            assert got.objective_value == pytest.approx(cold.objective_value, rel=1e-9)
        assert policy.num_groups == cold.info["symmetry_groups"]
        last[:] = [changed, cold]

    last: list[Any] = []
    benchmark.pedantic(
        round_, setup=compare, rounds=CHURN_ROUNDS, warmup_rounds=CHURN_WARMUP, iterations=1
    )
    compare()
    # the warm-up rounds (and their cold solves) are not measured
    for series in (warm_s, cold_s, records_s, per_job_s):
        assert len(series) == CHURN_ROUNDS + CHURN_WARMUP
        del series[:CHURN_WARMUP]
    changed, cold = last
    warm = done[-1]
    # the same per-job LP the symmetry=False policy holds, cold (last round's instance)
    t0 = time.perf_counter()
    cold_per_job = hetopt.solve(changed, "max_min_fairness", opts, symmetry=False)
    cold_per_job_s = time.perf_counter() - t0
    assert cold_per_job.objective_value == pytest.approx(cold.objective_value, rel=1e-9)
    record(
        benchmark,
        warm,
        jobs=n,
        churn=c,
        rounds=CHURN_ROUNDS,
        warm_round_s=median(warm_s),
        warm_round_min_s=min(warm_s),
        cold_solve_s=median(cold_s),
        cold_solve_min_s=min(cold_s),
        warm_to_cold=median(warm_s) / median(cold_s),
        warm_to_cold_per_round=median(w / k for w, k in zip(warm_s, cold_s, strict=True)),
        cold_from_records_s=median(records_s),
        warm_to_cold_from_records=median(warm_s) / median(records_s),
        cold_highs_s=cold.timings["solve_s"],
        cold_symmetry_groups=cold.info.get("symmetry_groups"),
        warm_groups=policy.num_groups,
        warm_per_job_round_s=median(per_job_s),
        cold_per_job_s=cold_per_job_s,
        warm_per_job_to_cold=median(per_job_s) / median(cold_s),
        warm_per_job_to_cold_per_job=median(per_job_s) / cold_per_job_s,
        warm_simplex_iterations=warm.info.get("simplex_iterations", 0),
    )
