"""HiGHS runs of the main thread go to one long-lived worker thread (not a new thread per
run); a reset of HiGHS's global scheduler or an ended thread gets a new worker. Small LPs
run on the main thread itself."""

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


def test_a_scheduler_reset_or_a_dead_thread_gets_a_new_worker() -> None:
    h = _tiny()
    H._run(h)
    first = H._worker
    assert first is not None
    H._claim_scheduler(h, 1)
    H._claim_scheduler(h, None)  # 1 -> 0 (HiGHS decides): a change of count resets
    H._run(h)
    second = H._worker
    assert second is not None and second is not first
    first.thread.join(timeout=10)
    assert not first.thread.is_alive()  # told to end
    second.put(None)
    second.thread.join(timeout=10)
    assert H._run(h) == highspy.HighsStatus.kOk
    assert H._worker is not second


# ------------------------------------------------------------------ small LPs: no hand-off
# An LP of at most DIRECT_MAX_NONZEROS entries runs on the main thread itself (the hand-off
# to the worker and back cost more than such a run); MIPs and larger LPs keep the worker,
# where Ctrl-C stops HiGHS mid-run. Which thread ran HiGHS is read off its log's records.

EXAMPLE = Path(__file__).resolve().parents[2] / "instances" / "gpu_cluster" / "example.json"


@pytest.fixture
def solver_log(highs_log: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    # (an earlier test's scheduler reset would have handed this thread's runs to the
    # worker for good: start as a process that never reset)
    monkeypatch.setattr(H, "_direct_generation", None)
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


def test_after_a_scheduler_reset_the_main_thread_hands_runs_to_the_worker(
    solver_log: Any,
) -> None:
    hetopt.solve(EXAMPLE, options=hetopt.SolveOptions(threads=1))
    assert set(solver_log.names) == {"MainThread"}
    solver_log.names.clear()
    hetopt.solve(EXAMPLE, options=hetopt.SolveOptions(threads=None))  # 1 -> 0: a reset
    assert set(solver_log.names) == {"highs-run"}


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
