"""Rolling horizon: Gavel trace replay and the human_robot MILP with release times.

* ``rolling/gpu_cluster/...``: replay a trace under max-min fairness, heterogeneity-aware
  and agnostic; records mean / p95 JCT, their ratio (Gavel reports up to 3.5x in favour
  of the aware policy) and the re-solve latency against the 360 s round. Known answer:
  the DIRECTION of Gavel's headline (aware mean JCT < agnostic).
* ``rolling/human_robot/...``: rolling-horizon schedule vs the full-horizon optimum
  (small: known answer ``gap >= 0``, the offline MILP is proven optimal) and vs the myopic
  baseline (large, where the monolithic MILP does not finish within its time limit).
"""

from __future__ import annotations

import time

import pytest
from registry import REGISTRY, BenchSpec, record, register

import hetopt
from hetopt import SolveOptions, Status
from hetopt.kinds.gpu_cluster.simulate import generate_trace, load_trace, simulate
from hetopt.kinds.human_robot.generate import generate as hr_generate
from hetopt.kinds.human_robot.rolling import with_release_times
from hetopt.rolling import rolling_gap, rolling_schedule

TRACE = "instances/gpu_cluster/traces/max_min_fairness.trace"
PHYSICAL = {"v100": 8, "p100": 16, "k80": 24}

register(
    BenchSpec(
        name="rolling/gpu_cluster/max_min_fairness/physical_trace",
        kind="gpu_cluster",
        objective="max_min_fairness",
        size={"jobs": 96, "workers": PHYSICAL},
        make=lambda: (load_trace(TRACE), PHYSICAL),
    )
)
_W = {"k80": 36, "p100": 36, "v100": 36}
register(
    BenchSpec(
        name="rolling/gpu_cluster/max_min_fairness/generated_1000",
        kind="gpu_cluster",
        objective="max_min_fairness",
        size={"jobs": 1000, "workers": _W, "arrival_rate_per_h": 40.0},
        slow=True,
        make=lambda: (generate_trace(1000, _W, 40.0, seed=0), _W),
    )
)
GPU_SPECS = [s for s in REGISTRY.values() if s.name.startswith("rolling/gpu_cluster/")]


@pytest.mark.parametrize(
    "spec",
    [pytest.param(s, marks=[pytest.mark.slow] if s.slow else [], id=s.name) for s in GPU_SPECS],
)
def bench_trace_replay(benchmark, spec: BenchSpec) -> None:  # type: ignore[no-untyped-def]
    records, workers = spec.make()
    aware = benchmark.pedantic(simulate, args=(records, workers), rounds=1, iterations=1)
    agn = simulate(records, workers, agnostic=True)
    assert aware.summary["completed_jobs"] == agn.summary["completed_jobs"] == len(records)
    assert aware.summary["mean_jct_s"] < agn.summary["mean_jct_s"]
    info = benchmark.extra_info
    for tag, r in (("aware", aware), ("agnostic", agn)):
        for key in ("mean_jct_s", "p95_jct_s", "makespan_s", "utilization", "solves"):
            info[f"{tag}_{key}"] = r.summary[key]
        info[f"{tag}_solve_latency_p95_s"] = r.summary["solve_latency_p95_s"]
    info["mean_jct_ratio_agnostic_over_aware"] = (
        agn.summary["mean_jct_s"] / aware.summary["mean_jct_s"]
    )


HR_CASES = [
    # tasks, agents, batch, mean gap between batches (s), step, lookahead, offline limit, slow
    (9, 3, 1, 15.0, 20.0, 20.0, 60.0, False),
    (60, 5, 10, 60.0, 60.0, 0.0, 60.0, True),
]
for _n, _a, _b, _g, _st, _la, _tl, _slow in HR_CASES:
    register(
        BenchSpec(
            name=f"rolling/human_robot/makespan/{_n}x{_a}",
            kind="human_robot",
            objective="makespan",
            size={
                "tasks": _n,
                "agents": _a,
                "batch": _b,
                "mean_gap_s": _g,
                "step_s": _st,
                "lookahead_s": _la,
                "offline_time_limit_s": _tl,
            },
            slow=_slow,
            make=lambda n=_n, a=_a, b=_b, g=_g: with_release_times(
                hr_generate(n, a, seed=1), g, seed=1, batch=b
            ),
        )
    )
HR_SPECS = [s for s in REGISTRY.values() if s.name.startswith("rolling/human_robot/")]


@pytest.mark.parametrize(
    "spec",
    [pytest.param(s, marks=[pytest.mark.slow] if s.slow else [], id=s.name) for s in HR_SPECS],
)
def bench_rolling_milp(benchmark, spec: BenchSpec) -> None:  # type: ignore[no-untyped-def]
    inst = spec.make()
    size = spec.size
    opts = SolveOptions(threads=1, time_limit_s=20.0)  # per window
    roll = benchmark.pedantic(
        rolling_schedule,
        args=(inst, "makespan"),
        kwargs={"step_s": size["step_s"], "lookahead_s": size["lookahead_s"], "options": opts},
        rounds=1,
        iterations=1,
    )
    assert roll.verification.ok, roll.verification.violations
    myo = rolling_schedule(inst, "makespan", step_s=size["step_s"], myopic=True, options=opts)
    assert myo.verification.ok
    t0 = time.perf_counter()
    full = hetopt.solve(
        inst,
        "makespan",
        SolveOptions(threads=1, time_limit_s=size["offline_time_limit_s"]),
        method="exact",
    )
    full_s = time.perf_counter() - t0
    extra = {
        "rolling_makespan_s": roll.objective_value,
        "myopic_makespan_s": myo.objective_value,
        "rolling_vs_myopic": rolling_gap(roll, myo),
        "windows": roll.info["windows"],
        "offline_status": full.status.value,
        "offline_s": full_s,
    }
    if full.status.has_solution:
        extra["offline_makespan_s"] = full.objective_value
        extra["offline_gap"] = full.gap
        extra["rolling_gap_vs_offline"] = rolling_gap(roll, full)
    if full.status == Status.OPTIMAL:
        # a committed online schedule is feasible offline: it cannot beat the optimum
        assert rolling_gap(roll, full) >= -1e-6
    record(benchmark, roll, **extra)


register(
    BenchSpec(
        name="rolling/gpu_cluster/max_min_fairness/resolve_latency_2000",
        kind="gpu_cluster",
        objective="max_min_fairness",
        size={"jobs": 2000, "workers": {"k80": 200, "p100": 200, "v100": 200}, "rounds": 40},
        slow=True,
        make=lambda: generate_trace(2000, {"k80": 200, "p100": 200, "v100": 200}, 400.0, seed=0),
    )
)


@pytest.mark.slow
def bench_persistent_resolve_latency(benchmark) -> None:  # type: ignore[no-untyped-def]
    """Re-solve latency: one live LP over all trace jobs vs rebuilding per re-solve."""
    spec = REGISTRY["rolling/gpu_cluster/max_min_fairness/resolve_latency_2000"]
    records = spec.make()
    w = spec.size["workers"]
    kw = {"max_rounds": spec.size["rounds"], "progress": "fluid"}
    warm = benchmark.pedantic(
        simulate, args=(records, w), kwargs={**kw, "persistent": True}, rounds=1, iterations=1
    )
    cold = simulate(records, w, persistent=False, **kw)
    # same active sets in the first round -> the same optimal level (known answer)
    assert warm.levels[0] == pytest.approx(cold.levels[0], rel=1e-6)
    info = benchmark.extra_info
    for tag, r in (("persistent", warm), ("rebuilt", cold)):
        info[f"{tag}_latency_p50_s"] = r.summary["solve_latency_p50_s"]
        info[f"{tag}_latency_p95_s"] = r.summary["solve_latency_p95_s"]
        info[f"{tag}_solves"] = r.summary["solves"]
