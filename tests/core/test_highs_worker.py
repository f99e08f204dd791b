"""HiGHS runs of the main thread go to one long-lived worker thread (not a new thread per
run); a reset of HiGHS's global scheduler or an ended thread gets a new worker."""

from __future__ import annotations

import highspy

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
