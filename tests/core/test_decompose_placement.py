"""Where a decomposition's parts run: the automatic rule, explicit choices, the warm pool."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

import pytest

import hetopt.executors as E
import hetopt.highs as H
from hetopt import SolveOptions
from hetopt.decompose import POOL_START_S, auto_placement, solve_decomposed
from hetopt.errors import OptionsError
from hetopt.executors import SerialExecutor, executor_for, process_pool
from hetopt.kinds.gpu_cluster import generate

OPTS = SolveOptions(threads=1)


@pytest.fixture
def fake_pool(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Two cores and a thread pool standing in for the process pool (starts nothing)."""
    with ThreadPoolExecutor(2) as ex:
        monkeypatch.setattr(H, "available_cores", lambda: 2)
        monkeypatch.setattr(E, "process_pool", lambda workers: ex)
        yield ex


def test_auto_runs_small_parts_serially(fake_pool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(E, "pool_running", lambda workers: False)
    p = auto_placement([0.05] * 4)
    assert p.kind == "serial" and p.workers == 1 and isinstance(p.executor, SerialExecutor)
    assert p.why.startswith("auto: serial") and "not running" in p.why


def test_auto_uses_the_pool_when_it_pays(fake_pool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(E, "pool_running", lambda workers: False)
    big = [2 * POOL_START_S] * 4  # serial 8 x start; pool: start + 4 x start
    p = auto_placement(big)
    assert p.kind == "process_pool" and p.workers == 2 and p.executor is fake_pool
    # a warm pool pays for parts that would not pay for starting it
    mid = [POOL_START_S / 2] * 4
    assert auto_placement(mid).kind == "serial"
    monkeypatch.setattr(E, "pool_running", lambda workers: True)
    assert auto_placement(mid).kind == "process_pool"


def test_one_part_or_one_core_is_serial(fake_pool, monkeypatch: pytest.MonkeyPatch) -> None:
    assert auto_placement([100.0]).kind == "serial"
    monkeypatch.setattr(H, "available_cores", lambda: 1)
    assert auto_placement([100.0] * 4).kind == "serial"


def test_choice_is_reported_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    inst = generate(64, "k80=4,p100=4,v100=4", seed=2)
    with caplog.at_level(logging.INFO, logger="hetopt.decompose"):
        auto = solve_decomposed(inst, "max_min_fairness", OPTS, partitions=2)
    assert auto.info["executor"] == "serial" and auto.info["workers"] == 1
    assert auto.info["executor_choice"].startswith("auto: serial")
    assert any("auto: serial" in r.getMessage() for r in caplog.records)
    one = solve_decomposed(inst, "max_min_fairness", OPTS, partitions=2, workers=1)
    assert one.info["executor"] == "serial" and one.info["executor_choice"] == "serial (workers=1)"
    with ThreadPoolExecutor(2) as ex:
        given = solve_decomposed(inst, "max_min_fairness", OPTS, partitions=2, executor=ex)
    assert given.info["executor"] == "given"
    assert "ThreadPoolExecutor" in given.info["executor_choice"]
    assert given.objective_value == auto.objective_value == one.objective_value
    for bad in ("many", 0, True):
        with pytest.raises(OptionsError, match="workers"):
            solve_decomposed(inst, "max_min_fairness", OPTS, partitions=2, workers=bad)


def test_components_report_where_they_ran() -> None:
    inst = generate(64, "k80=4,p100=4,v100=4", seed=2)
    res = solve_decomposed(inst, "max_min_fairness", OPTS)  # partitions=1: exact
    assert res.info["decomposition"] == "components" and res.info["executor"] == "serial"


def test_explicit_workers_are_honoured_on_one_warm_pool() -> None:
    inst = generate(64, "k80=4,p100=4,v100=4", seed=2)
    with executor_for(workers=2) as ex:
        assert ex is process_pool(2)  # one pool per process, reused
    with executor_for(workers=2) as again:
        assert again is ex  # not shut down by the first context
    res = solve_decomposed(inst, "max_min_fairness", OPTS, partitions=2, workers=2)
    assert res.info["executor"] == "process_pool" and res.info["workers"] == 2
    # honoured, and it says that these tiny parts would be cheaper serially
    choice = res.info["executor_choice"]
    assert choice.startswith("a process pool of 2 (workers=2); the automatic rule would run")
    ref = solve_decomposed(inst, "max_min_fairness", OPTS, partitions=2, workers=1)
    assert res.objective_value == ref.objective_value
