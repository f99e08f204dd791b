"""One registry of benchmark specs (linopy's ``BenchSpec`` pattern).

Each ``benchmarks/bench_<kind>.py`` declares its specs with :func:`register`; the same
spec drives the pytest-benchmark test, the CI quick subset (``slow=False``) and the
scaling tables in the notes and docs. Every benchmark asserts its known answer and
records build / transfer / HiGHS / load seconds in ``benchmark.extra_info``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class BenchSpec:
    name: str
    """Unique id, e.g. ``gpu_cluster/max_min_fairness/5000``."""
    kind: str
    objective: str
    size: dict[str, Any]
    """Size parameters, e.g. ``{"jobs": 5000, "types": 3}``."""
    slow: bool = False
    """Left out of the default (CI) run; ``pytest -m slow`` runs it."""
    make: Callable[[], Any] | None = field(default=None, compare=False)
    """Builds the instance (seeded)."""


REGISTRY: dict[str, BenchSpec] = {}


def register(spec: BenchSpec) -> BenchSpec:
    if spec.name in REGISTRY:
        raise ValueError(f"duplicate benchmark {spec.name}")
    REGISTRY[spec.name] = spec
    return spec


def record(benchmark: Any, result: Any, **extra: Any) -> None:
    """Put a result's timing split (and ``extra``) into the benchmark JSON."""
    info = benchmark.extra_info
    for k, v in result.timings.items():
        info[k] = v
    info["runtime_s"] = result.runtime_s
    solve_s = result.timings.get("solve_s") or 0.0
    if solve_s > 0:
        info["ratio_to_highs"] = result.runtime_s / solve_s
    info["status"] = str(result.status)
    info["objective_value"] = result.objective_value
    info.update(extra)
