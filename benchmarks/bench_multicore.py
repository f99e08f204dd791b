"""``multicore`` benchmarks: Fanjul-Peyro & Ruiz R||Cmax families, FJSP known optima and
the weighted completion time of the Decima-like DAG jobs.

Each benchmark asserts its answer: FJSP instances their published optimum; generated
R||Cmax instances a verified schedule and an honest bound (``bound <= value``; optimal
only with a zero gap); ``instances/multicore/decima_jobs.json`` its brute-force optimum.
Timings are split into build / transfer / HiGHS / load.

The summary the issue asks for (share proven optimal and mean final gap per family)::

    python benchmarks/bench_multicore.py --machines 10 --tasks 100 --seeds 3 --time-limit 20
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
from pathlib import Path
from typing import Any

import pytest
from registry import REGISTRY, BenchSpec, record, register

import hetopt
from hetopt import SolveOptions, Status
from hetopt.formats.fjsp import read_fjsp
from hetopt.kinds.multicore import FAMILIES, fjsp_to_multicore, generate

log = logging.getLogger("hetopt.bench.multicore")
INSTANCES = Path(__file__).resolve().parents[1] / "instances"
FJSP = INSTANCES / "fjsp"
TIME_LIMIT_S = float(os.environ.get("HETOPT_BENCH_TIME_LIMIT", "60"))
FJSP_OPTIMA = {
    "kacem/k1": 11,
    "kacem/k3": 7,
    "fattahi/sfjs01": 66,
    "fattahi/sfjs02": 107,
    "fattahi/sfjs09": 210,
}


def _fr(family: str, m: int, n: int, seed: int) -> Any:
    return lambda: generate(family, m, n, seed)


def _fjsp(path: str) -> Any:
    return lambda: fjsp_to_multicore(read_fjsp(FJSP / f"{path}.txt"))


for _family in FAMILIES:
    for _m, _n, _slow in ((4, 12, False), (10, 100, True), (20, 200, True)):
        register(
            BenchSpec(
                name=f"multicore/makespan/{_family}/m{_m}_n{_n}",
                kind="multicore",
                objective="makespan",
                size={"family": _family, "machines": _m, "tasks": _n, "seed": 0},
                slow=_slow,
                make=_fr(_family, _m, _n, 0),
            )
        )
for _path in FJSP_OPTIMA:
    register(
        BenchSpec(
            name=f"multicore/makespan/fjsp/{_path}",
            kind="multicore",
            objective="makespan",
            size={"fjsp": _path},
            slow=False,
            make=_fjsp(_path),
        )
    )

# instance file -> (objective, known optimum) from instances/multicore/known_answers.json
KNOWN = {"decima_jobs": ("weighted_completion", 26.0)}
for _name, (_objective, _) in KNOWN.items():
    register(
        BenchSpec(
            name=f"multicore/{_objective}/{_name}",
            kind="multicore",
            objective=_objective,
            size={"instance": _name},
            slow=False,
            make=(lambda n=_name: hetopt.read_instance(INSTANCES / "multicore" / f"{n}.json")),
        )
    )

SPECS = [s for s in REGISTRY.values() if s.kind == "multicore"]


def _check(spec: BenchSpec, result: hetopt.Result) -> None:
    assert result.ok, result.verification
    assert result.bound is not None and result.bound <= result.objective_value + 1e-6
    if result.status == Status.OPTIMAL:
        assert result.gap is not None and result.gap <= 1e-4
    if "fjsp" in spec.size:
        expected = FJSP_OPTIMA[spec.size["fjsp"]]
        assert result.bound <= expected <= result.objective_value
        if result.status == Status.OPTIMAL:
            assert result.objective_value == expected
    if "instance" in spec.size:
        objective, known = KNOWN[spec.size["instance"]]
        assert spec.objective == objective
        assert result.status == Status.OPTIMAL
        assert result.objective_value == pytest.approx(known, abs=1e-6)


@pytest.mark.parametrize(
    "spec",
    [pytest.param(s, id=s.name, marks=[pytest.mark.slow] if s.slow else []) for s in SPECS],
)
def bench_multicore(benchmark: Any, spec: BenchSpec) -> None:
    assert spec.make is not None
    instance = spec.make()
    options = SolveOptions(threads=1, time_limit_s=TIME_LIMIT_S)
    result = benchmark.pedantic(
        hetopt.solve, args=(instance, spec.objective, options), rounds=1, iterations=1
    )
    _check(spec, result)
    record(benchmark, result, gap=result.gap, bound=result.bound)


def summary(machines: int, tasks: int, seeds: int, time_limit_s: float) -> list[dict[str, Any]]:
    """Per family: share of seeds proven optimal within the limit and the mean final gap."""
    rows = []
    for family in FAMILIES:
        gaps, optimal, times, splits = [], 0, [], []
        for seed in range(seeds):
            r = hetopt.solve(
                generate(family, machines, tasks, seed),
                "makespan",
                SolveOptions(threads=1, time_limit_s=time_limit_s),
            )
            log.info(
                "%s seed %d: %s value %s bound %s in %.1f s",
                family,
                seed,
                r.status,
                r.objective_value,
                r.bound,
                r.runtime_s,
            )
            assert r.ok and r.bound is not None and r.bound <= r.objective_value + 1e-6
            optimal += r.status == Status.OPTIMAL
            gaps.append(r.gap or 0.0)
            times.append(r.runtime_s)
            splits.append(r.timings)
        rows.append(
            {
                "family": family,
                "m": machines,
                "n": tasks,
                "seeds": seeds,
                "optimal_share": optimal / seeds,
                "mean_gap": statistics.fmean(gaps),
                "mean_runtime_s": statistics.fmean(times),
                "mean_build_s": statistics.fmean(t["build_s"] for t in splits),
                "mean_transfer_s": statistics.fmean(t["transfer_s"] for t in splits),
                "mean_highs_s": statistics.fmean(t["solve_s"] for t in splits),
            }
        )
    return rows


if __name__ == "__main__":  # pragma: no cover - a report, not a test
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--machines", type=int, default=10)
    ap.add_argument("--tasks", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=60.0)
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    logging.getLogger("hetopt.solver").setLevel(logging.WARNING)  # no HiGHS log
    for row in summary(a.machines, a.tasks, a.seeds, a.time_limit):
        print(
            f"{row['family']:<11} m={row['m']} n={row['n']} seeds={row['seeds']} "
            f"optimal={row['optimal_share']:.0%} mean_gap={row['mean_gap']:.3%} "
            f"runtime={row['mean_runtime_s']:.1f}s (build {row['mean_build_s']:.2f}, "
            f"transfer {row['mean_transfer_s']:.2f}, highs {row['mean_highs_s']:.1f})",
            flush=True,
        )
