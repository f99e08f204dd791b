import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

os.environ["HETOPT_CHECK_CONTRACT"] = "1"  # benchmarks keep the kind contract too

sys.path.insert(0, str(Path(__file__).parent))

ROOT = Path(__file__).resolve().parents[1]
WARM_UP = (
    "gpu_cluster/example.json",
    "multicore/big_little_dag.json",
    "cpu_gpu/pairing.json",
    "human_robot/small.json",
    "client_selection/fedcs_small.json",
)


@pytest.fixture(scope="session", autouse=True)
def _warm_solve_path() -> None:
    """hetopt imports its solve path lazily: solve a few tiny instances once, so the first
    timed benchmark of a run does not pay Pyomo's, highspy's and the kinds' imports and
    HiGHS's start-up (it measured 8x slower than the same benchmark later in a run)."""
    import hetopt

    for name in WARM_UP:
        hetopt.solve(ROOT / "instances" / name)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """The default run prints one short table of the benchmarks (per kind: how many,
    their time, the slowest) instead of pytest-benchmark's tables of every statistic.
    ``HETOPT_BENCH_TABLE=1`` or ``--benchmark-verbose`` gives the full tables back;
    ``--benchmark-json=FILE`` saves every figure (what CI and the docs' page use)."""
    session = getattr(config, "_benchmarksession", None)
    if session is None or os.environ.get("HETOPT_BENCH_TABLE"):
        return
    full = session.display

    def display(tr: Any) -> None:
        if getattr(session, "verbose", False):
            full(tr)
            return
        _summary(tr, list(getattr(session, "benchmarks", [])))
        session.check_regressions()

    session.display = display


def _kind(bench: Any) -> str:
    name = str(getattr(bench, "name", ""))
    if "[" in name and "/" in name:
        return name.split("[", 1)[1].split("/", 1)[0]
    module = str(getattr(bench, "fullname", "")).split("::", 1)[0]
    return Path(module).stem.removeprefix("bench_") or "?"


def _seconds(bench: Any) -> float:
    stats = getattr(bench, "stats", None)
    for attr in ("total", "mean"):
        value = getattr(stats, attr, None)
        if isinstance(value, int | float):
            return float(value)
    return 0.0


def _summary(tr: Any, benchmarks: list[Any]) -> None:
    if not benchmarks:
        return
    groups: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for b in benchmarks:
        label = str(getattr(b, "param", None) or getattr(b, "name", "?"))
        groups[_kind(b)].append((_seconds(b), label))
    total = sum(s for g in groups.values() for s, _ in g)
    tr.ensure_newline()
    tr.write_line(
        f"benchmarks: {len(benchmarks)} timed, {total:.1f} s in total "
        "(each asserts its known answer; solves use 1 HiGHS thread)"
    )
    tr.write_line(f"  {'kind':<18}{'runs':>5}{'seconds':>10}   slowest")
    for kind in sorted(groups):
        runs = groups[kind]
        slow_s, slow = max(runs)
        tr.write_line(
            f"  {kind:<18}{len(runs):>5}{sum(s for s, _ in runs):>10.2f}   {slow} ({slow_s:.2f} s)"
        )
    tr.write_line(
        "  (every benchmark: HETOPT_BENCH_TABLE=1 or --benchmark-verbose; "
        "all figures as JSON: --benchmark-json=FILE)"
    )
