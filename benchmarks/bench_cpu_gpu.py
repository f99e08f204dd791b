"""Benchmarks of ``cpu_gpu``: the independent model and the pairing model's practical size.

Instances come from ``hetopt generate cpu-gpu`` (seed 1, ``2 n`` slowdown pairs for the
pairing model). Time limit 60 s, one HiGHS thread. Each benchmark asserts a verified optimal schedule and a known lower bound:
the independent model is bounded below by its LP relaxation with every program divisible
(solved here separately); the pairing makespan is bounded below by the independent
makespan of the same programs without slowdowns (factors >= 1 only lengthen slots).
"""

from __future__ import annotations

import pytest
from registry import BenchSpec, record, register

from hetopt import SolveOptions, Status
from hetopt.kinds.cpu_gpu import KIND, CpuGpuInstance
from hetopt.kinds.cpu_gpu.generate import generate

SIZES = [
    # name, programs, cpus, gpus, slowdown pairs, divisible fraction, slow
    ("independent/500x(4+2)", 500, 4, 2, 0, 0.3, False),
    ("independent/2000x(8+8)", 2000, 8, 8, 0, 0.3, True),
    ("independent-indivisible/500x(4+2)", 500, 4, 2, 0, 0.0, True),
    ("pairing/40x(1+1)", 40, 1, 1, 80, 0.3, False),
    ("pairing/80x(1+1)", 80, 1, 1, 160, 0.3, True),
    ("pairing/150x(1+1)", 150, 1, 1, 300, 0.3, True),
    ("pairing/40x(2+2)", 40, 2, 2, 80, 0.3, True),
    ("pairing/40x(4+4)", 40, 4, 4, 80, 0.3, True),
]

SPECS = [
    register(
        BenchSpec(
            f"cpu_gpu/makespan/{name}",
            "cpu_gpu",
            "makespan",
            {"programs": n, "cpus": c, "gpus": g, "slowdown_pairs": s, "divisible": d},
            slow=slow,
            make=lambda n=n, c=c, g=g, s=s, d=d: generate(
                n, c, g, seed=1, divisible_fraction=d, slowdown_pairs=s
            ),
        )
    )
    for name, n, c, g, s, d, slow in SIZES
]

OPTS = SolveOptions(threads=1, time_limit_s=60.0)
# R||Cmax with only indivisible programs on identical devices: optimality is hard to prove;
# these may stop at the time limit (feasible, with the gap recorded)
MAY_TIME_OUT = {"cpu_gpu/makespan/independent-indivisible/500x(4+2)"}


def _without(inst: CpuGpuInstance, **changes) -> CpuGpuInstance:
    d = inst.to_dict()
    d.pop("slowdown", None)
    if changes.get("all_divisible"):
        for p in d["programs"]:
            p["divisible"] = True
    return CpuGpuInstance.from_dict(d)


@pytest.mark.parametrize(
    "spec",
    [pytest.param(s, id=s.name, marks=[pytest.mark.slow] if s.slow else []) for s in SPECS],
)
def bench_cpu_gpu(benchmark, spec: BenchSpec) -> None:
    assert spec.make is not None
    inst = spec.make()
    result = benchmark.pedantic(lambda: KIND.solve(inst, "makespan", OPTS), rounds=1, iterations=1)
    if spec.name in MAY_TIME_OUT:
        assert result.status in (Status.OPTIMAL, Status.FEASIBLE)
    else:
        assert result.status == Status.OPTIMAL
    assert result.verification is not None and result.verification.ok
    if inst.slowdown:
        lower = KIND.solve(_without(inst), "makespan", OPTS).objective_value
    else:
        lower = KIND.solve(_without(inst, all_divisible=True), "makespan", OPTS).objective_value
    assert result.objective_value >= lower - 1e-6
    record(benchmark, result, lower_bound=lower, gap=result.gap, bound=result.bound)
