"""hetopt.collector: the garbage-collector policy of validation and :func:`hetopt.solve`.

The collector is paused while an instance is validated and, inside ``hetopt.solve``, until
HiGHS's first run starts (the due young collection then runs while HiGHS works); it is
always left as it was found, nothing is frozen, and a caller's cyclic garbage is still
collected in a loop of solves.
"""

from __future__ import annotations

import gc
import json
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import pytest

import hetopt
from hetopt import collector
from hetopt.errors import InstanceError

EXAMPLE = Path(__file__).resolve().parents[2] / "instances" / "gpu_cluster" / "example.json"


def _data() -> dict[str, Any]:
    return json.loads(EXAMPLE.read_text())


class _Cycle:
    def __init__(self) -> None:
        self.me = self


@pytest.fixture(autouse=True)
def _collector_on() -> Any:
    assert gc.isenabled() and gc.get_freeze_count() == 0
    yield
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_paused_restores_the_state_it_found() -> None:
    with collector.paused():
        assert not gc.isenabled()
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # (the inner block found it off)
    assert gc.isenabled()
    gc.disable()
    try:
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_resume_ends_the_pause_once_and_runs_the_due_young_collection() -> None:
    threshold = gc.get_threshold()[0]
    with collector.paused_until_solver():
        assert not gc.isenabled()
        junk = [[] for _ in range(threshold * 3)]  # tracked containers: gen0 count grows
        assert gc.get_count()[0] > threshold
        collector.resume()
        assert gc.isenabled()
        assert gc.get_count()[0] <= threshold  # collected at once, not at a later line
        gc.disable()  # a later resume in the same block changes nothing
        collector.resume()
        assert not gc.isenabled()
        gc.enable()
    assert gc.isenabled()
    del junk


def test_a_block_that_never_resumes_collects_before_it_ends() -> None:
    threshold = gc.get_threshold()[0]
    with collector.paused_until_solver():
        junk = [[] for _ in range(threshold * 3)]
        assert not gc.isenabled() and gc.get_count()[0] > threshold
    assert gc.isenabled() and gc.get_count()[0] <= threshold
    del junk


def test_a_collector_the_user_turned_off_stays_off() -> None:
    gc.disable()
    try:
        with collector.paused_until_solver():
            collector.resume()
            assert not gc.isenabled()
        assert not gc.isenabled()
        hetopt.solve(_data())
        assert not gc.isenabled()
    finally:
        gc.enable()
    old = gc.get_threshold()
    gc.set_threshold(0)  # automatic collection off: resume collects nothing either
    try:
        with collector.paused_until_solver():
            junk = [[] for _ in range(5000)]
        assert gc.get_count()[0] >= 5000
        del junk
    finally:
        gc.set_threshold(*old)


def test_only_the_pausing_thread_resumes() -> None:
    seen: list[bool] = []
    with collector.paused_until_solver():
        t = threading.Thread(target=lambda: (collector.resume(), seen.append(gc.isenabled())))
        t.start()
        t.join()
        assert seen == [False] and not gc.isenabled()
    assert gc.isenabled()


def test_solve_resumes_the_collector_while_highs_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The young collection validation made due runs once HiGHS's run is handed to its
    worker (a run is in flight), and the collector is on again after the solve."""
    from hetopt import highs

    calls: list[tuple[bool, bool]] = []
    real = collector.resume

    def spy() -> None:
        calls.append((gc.isenabled(), bool(highs._RUNNING)))
        real()

    monkeypatch.setattr(highs.collector, "resume", spy)
    result = hetopt.solve(_data())
    assert result.status == hetopt.Status.OPTIMAL and result.verification.ok
    assert calls and calls[0] == (False, True)  # paused until then, a run in flight


def test_the_held_collection_runs_once_highs_is_inside_its_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The main thread runs the held-back collection only after the worker entered the
    run: a collection holds the GIL, and the worker needs the GIL to start HiGHS, so a
    collection run as the job is handed over runs before HiGHS, not beside it."""
    from hetopt import highs

    order: list[str] = []
    real = collector.resume

    class Run:
        def getOptionValue(self, name: str) -> tuple[None, int]:  # (highspy's name)
            return None, 0  # (threads: HiGHS decides)

        def run(self) -> str:
            order.append("run")
            time.sleep(0.05)  # (HiGHS releases the GIL here)
            order.append("run ended")
            return "ok"

    def spy() -> None:
        if collector.held():  # (the block's end calls it again, with nothing held)
            order.append("resume")
        real()

    monkeypatch.setattr(highs.collector, "resume", spy)
    with collector.paused_until_solver():
        assert not gc.isenabled()
        assert highs._run_waiting(Run()) == "ok"
        assert gc.isenabled()  # (resumed inside the run, not at the block's end)
    assert order == ["run", "resume", "run ended"]


def test_a_run_that_fails_before_highs_starts_raises_instead_of_hanging() -> None:
    """The worker raised before it entered HiGHS (here: an object without HiGHS's
    options): the main thread, holding a collection back, waited for the entry forever
    (the full suite hung on it once)."""
    from hetopt import highs

    class Broken:
        def run(self) -> str:  # pragma: no cover - never reached
            return "ok"

    result: list[BaseException] = []

    def call() -> None:
        with collector.paused_until_solver():
            try:
                highs._run_waiting(Broken())
            except AttributeError as exc:
                result.append(exc)

    import threading

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("the worker serves the main thread")
    timer = threading.Timer(10.0, lambda: result.append(TimeoutError("hung")))
    timer.start()
    try:
        call()
    finally:
        timer.cancel()
    assert len(result) == 1 and isinstance(result[0], AttributeError), result
    assert gc.isenabled()


def test_solve_leaves_the_collector_on_after_bad_input() -> None:
    data = _data()
    data["jobs"][0]["throughput"] = {"v100": -1.0}
    with pytest.raises(InstanceError):
        hetopt.solve(data)
    assert gc.isenabled()


def test_a_loop_of_solves_lets_the_callers_garbage_be_collected() -> None:
    """A scheduler solving a dict every round while making cyclic garbage of its own:
    that garbage is still collected as it goes (nothing is frozen or handed to the oldest
    generation uncounted)."""
    data = _data()
    refs = []
    for _ in range(60):
        for _ in range(100):
            refs.append(weakref.ref(_Cycle()))
        hetopt.solve(data)
    alive = sum(r() is not None for r in refs)
    assert alive < len(refs) // 4, (alive, len(refs))
