"""Benchmarks of ``agent_sessions``: the one-GPU TU case, the full MILP, the decomposition.

Instances come from ``hetopt generate agent-sessions`` (seed 1; token sizes from the Azure
LLM trace 2023, pause lengths synthetic). One HiGHS thread. Each benchmark asserts its
known answer:

* ``one-gpu-equal``: one GPU, every context 2048 tokens; the optimum is Bélády's greedy
  (offline caching, computed here independently of the kind), and HiGHS proves it;
* ``milp``/``decompose``: a verified plan no worse than the greedy plan the solve starts
  from, with a valid bound (``bound <= objective``) and the proven gap recorded in the
  benchmark JSON (``gap``, ``bound``, ``greedy_objective``); at 10 x 4 x 2 both methods
  prove the same optimum (asserted).

The issue's size, 500 sessions x 20 pauses on 16 GPUs, runs the decomposition with a
300 s limit (slow-marked).
"""

from __future__ import annotations

import pytest
from registry import BenchSpec, record, register

from hetopt import SolveOptions, Status
from hetopt.kinds.agent_sessions import KIND
from hetopt.kinds.agent_sessions.generate import generate

SIZES = [
    # name, sessions, gpus, pauses, method, equal context, time limit (s), slow
    ("one-gpu-equal/200x10", 200, 1, 10, "milp", 2048, 120.0, False),
    ("milp/10x4x2", 10, 2, 4, "milp", None, 60.0, False),
    ("decompose/10x4x2", 10, 2, 4, "decompose", None, 60.0, False),
    ("milp/20x5x2", 20, 2, 5, "milp", None, 60.0, True),
    ("decompose/20x5x2", 20, 2, 5, "decompose", None, 60.0, True),
    ("decompose/100x10x4", 100, 4, 10, "decompose", None, 60.0, True),
    ("decompose/500x20x16", 500, 16, 20, "decompose", None, 300.0, True),
]

SPECS = [
    register(
        BenchSpec(
            f"agent_sessions/min_recompute_s/{name}",
            "agent_sessions",
            "min_recompute_s",
            {"sessions": n, "gpus": g, "pauses": p, "method": method, "time_limit_s": limit},
            slow=slow,
            make=lambda n=n, g=g, p=p, eq=eq: generate(n, g, p, seed=1, equal_context=eq),
        )
    )
    for name, n, g, p, method, eq, limit, slow in SIZES
]
KNOWN_10x4x2 = 2.172375
"""Optimum of ``generate(10, 2, 4, seed=1)``, proven by both methods (the MILP, and the
decomposition through its polish), which so check each other."""
_METHOD = {f"agent_sessions/min_recompute_s/{s[0]}": (s[4], s[6]) for s in SIZES}


def belady_evictions(intervals: list[tuple[float, float]], k: int) -> int:
    """Fewest evictions keeping at most ``k`` intervals at any instant (drop the kept one
    that ends last when a start overflows)."""
    dropped = 0
    kept: list[tuple[float, float]] = []
    for a, b in sorted(intervals):
        kept = [iv for iv in kept if iv[1] > a]
        kept.append((a, b))
        if len(kept) > k:
            kept.remove(max(kept, key=lambda iv: iv[1]))
            dropped += 1
    return dropped


@pytest.mark.parametrize(
    "spec",
    [pytest.param(s, id=s.name, marks=[pytest.mark.slow] if s.slow else []) for s in SPECS],
)
def bench_agent_sessions(benchmark, spec: BenchSpec) -> None:
    assert spec.make is not None
    inst = spec.make()
    method, limit = _METHOD[spec.name]
    opts = SolveOptions(threads=1, time_limit_s=limit)
    result = benchmark.pedantic(
        lambda: KIND.solve(inst, "min_recompute_s", opts, method=method), rounds=1, iterations=1
    )
    assert result.status in (Status.OPTIMAL, Status.FEASIBLE)
    assert result.verification is not None and result.verification.ok
    extra = {"gap": result.gap, "bound": result.bound, "method": result.info["method"]}
    if spec.size["gpus"] == 1 and inst.gpus[0].kv_capacity_tokens:
        size = inst.sessions[0].pauses[0].context_tokens
        k = inst.gpus[0].kv_capacity_tokens // size
        ivs = [(p.start_s, p.end_s) for s in inst.sessions for p in s.pauses]
        known = belady_evictions(ivs, k) * size / inst.gpus[0].prefill_tokens_s
        assert result.status == Status.OPTIMAL
        assert result.objective_value == pytest.approx(known, abs=1e-6)
        extra["known_answer"] = known
    else:
        greedy = result.info.get("greedy_objective")
        if greedy is not None:
            assert result.objective_value <= greedy + 1e-6
            extra["greedy_objective"] = greedy
        if result.bound is not None:
            assert result.bound <= result.objective_value + 1e-6
    if spec.name.endswith("/10x4x2"):
        assert result.status == Status.OPTIMAL
        assert result.objective_value == pytest.approx(KNOWN_10x4x2, abs=1e-6)
    record(benchmark, result, **extra)
