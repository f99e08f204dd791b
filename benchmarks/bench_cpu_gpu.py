"""Benchmarks of ``cpu_gpu``: the independent model and the pairing model's practical size.

Instances come from ``hetopt generate cpu-gpu`` (seed 1, ``2 n`` slowdown pairs for the
pairing model). Each benchmark asserts a verified optimal schedule and a known lower bound:
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
    # name, programs, cpus, gpus, slowdown pairs, slow
    ("independent/500x(4+2)", 500, 4, 2, 0, False),
    ("pairing/40x(1+1)", 40, 1, 1, 80, False),
    ("pairing/80x(1+1)", 80, 1, 1, 160, True),
    ("pairing/150x(1+1)", 150, 1, 1, 300, True),
    ("pairing/40x(2+2)", 40, 2, 2, 80, True),
    ("pairing/40x(4+4)", 40, 4, 4, 80, True),
]

SPECS = [
    register(
        BenchSpec(
            f"cpu_gpu/makespan/{name}",
            "cpu_gpu",
            "makespan",
            {"programs": n, "cpus": c, "gpus": g, "slowdown_pairs": s},
            slow=slow,
            make=lambda n=n, c=c, g=g, s=s: generate(n, c, g, seed=1, slowdown_pairs=s),
        )
    )
    for name, n, c, g, s, slow in SIZES
]

OPTS = SolveOptions(threads=1, time_limit_s=120.0)


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
    assert result.status == Status.OPTIMAL
    assert result.verification is not None and result.verification.ok
    if inst.slowdown:
        lower = KIND.solve(_without(inst), "makespan", OPTS).objective_value
    else:
        lower = KIND.solve(_without(inst, all_divisible=True), "makespan", OPTS).objective_value
    assert result.objective_value >= lower - 1e-6
    record(benchmark, result, lower_bound=lower)
