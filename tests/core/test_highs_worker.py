"""HiGHS runs of the main thread go to one long-lived worker thread (not a new thread per
run); an ended thread gets a new worker. Small LPs run on the main thread itself. HiGHS
keeps a task scheduler per thread: a change of ``threads`` resets the running thread's own
(keeping the worker, and small LPs on the main thread), never another thread's."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import highspy
import pytest

import hetopt
from hetopt import highs as H


def _tiny() -> highspy.Highs:
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.addVar(0.0, 1.0)
    h.changeColCost(0, 1.0)
    return h


def test_runs_reuse_one_worker_thread() -> None:
    h = _tiny()
    assert H._run(h) == highspy.HighsStatus.kOk
    worker = H._worker
    assert worker is not None and worker.thread.is_alive()
    for _ in range(3):
        assert H._run(h) == highspy.HighsStatus.kOk
        assert H._worker is worker
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal


def test_a_dead_thread_gets_a_new_worker() -> None:
    h = _tiny()
    H._run(h)
    first = H._worker
    assert first is not None
    first.put(None)
    first.thread.join(timeout=10)
    assert not first.thread.is_alive()
    assert H._run(h) == highspy.HighsStatus.kOk
    assert H._worker is not first


def _threads(h: highspy.Highs, n: int) -> highspy.Highs:
    assert h.setOptionValue("threads", n) == highspy.HighsStatus.kOk
    return h


def test_a_change_of_threads_keeps_the_worker_and_runs() -> None:
    """The worker resets its own scheduler when the count changes (HiGHS refuses a run
    whose ``threads`` differs from its thread's scheduler: kError)."""
    h = _tiny()
    assert H._run(_threads(h, 1)) == highspy.HighsStatus.kOk
    worker = H._worker
    for n in (2, 1, 0, 2):  # (2: at most the cores of CI's machine)
        if n > H.available_cores():
            continue
        assert H._run(_threads(h, n)) == highspy.HighsStatus.kOk, n
        assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
        assert H._worker is worker


def test_pool_threads_with_different_counts_do_not_break_each_other() -> None:
    """Thread A solves with 2 threads, thread B with 1, then A with 1: A's scheduler is A's
    own (B's change of count reset nothing there). A process-wide record of the count
    (before) skipped A's reset, and A's solve ended with status ``error``."""
    from concurrent.futures import ThreadPoolExecutor

    if H.available_cores() < 2:
        pytest.skip("needs 2 cores for threads=2")

    def solve(n: int) -> hetopt.Status:
        return hetopt.solve(EXAMPLE, options=hetopt.SolveOptions(threads=n)).status

    with ThreadPoolExecutor(1) as a, ThreadPoolExecutor(1) as b:
        assert a.submit(solve, 2).result() == hetopt.Status.OPTIMAL
        assert b.submit(solve, 1).result() == hetopt.Status.OPTIMAL
        assert a.submit(solve, 1).result() == hetopt.Status.OPTIMAL
        assert b.submit(solve, 2).result() == hetopt.Status.OPTIMAL


def test_a_scheduler_the_program_made_on_the_thread_is_replaced() -> None:
    """The program ran highspy itself with 2 threads on this (pool) thread first; a solve
    with ``threads=1`` there ended with status ``error`` before."""
    from concurrent.futures import ThreadPoolExecutor

    if H.available_cores() < 2:
        pytest.skip("needs 2 cores for threads=2")

    def both() -> tuple[Any, hetopt.Status]:
        own = _threads(_tiny(), 2).run()
        return own, hetopt.solve(EXAMPLE, options=hetopt.SolveOptions(threads=1)).status

    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(both).result() == (highspy.HighsStatus.kOk, hetopt.Status.OPTIMAL)


def test_a_scheduler_the_program_changed_behind_hetopts_record_is_replaced() -> None:
    """hetopt ran with 1 thread here; the program then reset the scheduler and ran
    highspy with 2. hetopt's record still says 1: HiGHS refuses its run (kError, model
    status not set), and the run is tried again after a reset instead of ending
    ``error``."""
    from concurrent.futures import ThreadPoolExecutor

    if H.available_cores() < 2:
        pytest.skip("needs 2 cores for threads=2")

    def steps() -> list[Any]:
        opts = hetopt.SolveOptions(threads=1)
        first = hetopt.solve(EXAMPLE, options=opts).status
        highspy.Highs.resetGlobalScheduler(True)
        own = _threads(_tiny(), 2).run()
        return [first, own, hetopt.solve(EXAMPLE, options=opts).status]

    with ThreadPoolExecutor(1) as pool:
        got = pool.submit(steps).result()
    assert got == [hetopt.Status.OPTIMAL, highspy.HighsStatus.kOk, hetopt.Status.OPTIMAL]


# ------------------------------------------------------------------ small LPs: no hand-off
# An LP of at most DIRECT_MAX_NONZEROS entries runs on the main thread itself (the hand-off
# to the worker and back cost more than such a run); MIPs and larger LPs keep the worker,
# where Ctrl-C stops HiGHS mid-run. Which thread ran HiGHS is read off its log's records.

EXAMPLE = Path(__file__).resolve().parents[2] / "instances" / "gpu_cluster" / "example.json"


@pytest.fixture
def solver_log(highs_log: Any) -> Any:
    return highs_log


def test_a_small_lp_runs_on_the_main_thread(solver_log: Any) -> None:
    res = hetopt.solve(EXAMPLE, options=hetopt.SolveOptions(threads=1))
    assert res.status == hetopt.Status.OPTIMAL and res.verification.ok
    assert set(solver_log.names) == {"MainThread"}
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_large_lp_and_a_mip_keep_the_worker(solver_log: Any) -> None:
    from hetopt.kinds.gpu_cluster.generate import generate

    big = generate(4_000, "k80=100,p100=100,v100=100", seed=1)
    res = hetopt.solve(big, "max_min_fairness", hetopt.SolveOptions(threads=1), symmetry=False)
    assert res.status == hetopt.Status.OPTIMAL
    # a column per (job, type) pair, each in its job's time and value rows and its
    # type's capacity row
    assert len(res.tables["allocation"]) * 3 > H.DIRECT_MAX_NONZEROS
    assert set(solver_log.names) == {"highs-run"}
    solver_log.names.clear()
    mip = Path(EXAMPLE).parents[1] / "multicore" / "big_little_dag.json"  # a MILP
    res = hetopt.solve(mip, options=hetopt.SolveOptions(threads=1))
    assert res.status == hetopt.Status.OPTIMAL
    assert solver_log.names and set(solver_log.names) == {"highs-run"}


def test_ctrl_c_during_a_small_lp_ends_the_solve_as_interrupted(solver_log: Any) -> None:
    solver_log.ctrl_c = True  # Ctrl-C while HiGHS runs (at its first log line)
    with pytest.raises(KeyboardInterrupt) as caught:
        hetopt.solve(EXAMPLE, options=hetopt.SolveOptions(threads=1))
    assert solver_log.sent and set(solver_log.names) == {"MainThread"}
    assert isinstance(caught.value, hetopt.errors.Interrupted)
    res = caught.value.result
    # the run had ended: its solution is kept, verified, and not claimed optimal
    assert res.status == hetopt.Status.FEASIBLE and res.verification.ok
    assert res.termination.lower().startswith("interrupted")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    again = hetopt.solve(EXAMPLE, options=hetopt.SolveOptions(threads=1))
    assert again.status == hetopt.Status.OPTIMAL


def test_a_programs_own_sigint_handler_stays_in_place(solver_log: Any) -> None:
    seen: list[int] = []

    def mine(signum: int, frame: Any) -> None:
        seen.append(signum)

    previous = signal.signal(signal.SIGINT, mine)
    try:
        solver_log.ctrl_c = True
        res = hetopt.solve(EXAMPLE, options=hetopt.SolveOptions(threads=1))
        assert signal.getsignal(signal.SIGINT) is mine
    finally:
        signal.signal(signal.SIGINT, previous)
    assert seen == [signal.SIGINT]  # the program's handler had the Ctrl-C, not hetopt
    assert res.status == hetopt.Status.OPTIMAL and not H.interrupted()


def test_after_a_change_of_threads_small_lps_stay_on_the_main_thread(
    solver_log: Any,
) -> None:
    """A change of count resets the main thread's own scheduler; its small LPs kept going
    to the worker for the rest of the process before (0.5-0.9 ms a run: a scheduler loop
    after one solve with other threads paid it every round)."""
    for threads in (1, None, 1):  # 1 -> 0 (HiGHS decides) -> 1: each a reset
        res = hetopt.solve(EXAMPLE, options=hetopt.SolveOptions(threads=threads))
        assert res.status == hetopt.Status.OPTIMAL and res.verification.ok
        assert set(solver_log.names) == {"MainThread"}, threads
        solver_log.names.clear()


def test_a_ctrl_c_as_the_wait_for_the_run_returns_does_not_hang(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C arriving just as the main thread's wait for HiGHS's worker returned (the
    run had ended): the wait took the worker's signal and then lost it to the
    KeyboardInterrupt, and waited again forever (seen once in a replay's Ctrl-C test)."""
    import threading

    real = threading.Lock
    waits: list[int] = []

    class CtrlCAsItReturns:
        """A lock whose first timed acquire that succeeds raises KeyboardInterrupt
        (what Python does when SIGINT arrives as the call returns); a wait that goes on
        past 5 s fails the test instead of hanging it."""

        def __init__(self) -> None:
            self._lock = real()

        def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
            got = self._lock.acquire(blocking, timeout)
            if timeout > 0:
                waits.append(1)
                if len(waits) > 100:
                    raise AssertionError("the wait for the run never ended")
                if got and not fired:
                    fired.append(1)
                    raise KeyboardInterrupt
            return got

        def release(self) -> None:
            self._lock.release()

    fired: list[int] = []
    h = _tiny()
    H._run(h)  # (the worker exists before locks are replaced)
    monkeypatch.setattr(threading, "Lock", CtrlCAsItReturns)
    try:
        status = H._run(h)
    finally:
        monkeypatch.setattr(threading, "Lock", real)
        H.clear_interrupt()
    assert fired and status == highspy.HighsStatus.kOk
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
