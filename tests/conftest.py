from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INSTANCES = ROOT / "instances"

# every result the tests produce must keep the kind contract: an undeclared or mistyped
# ``info`` entry is an error here (a debug message for users)
os.environ["HETOPT_CHECK_CONTRACT"] = "1"


@pytest.fixture
def instances_dir() -> Path:
    return INSTANCES


class HighsLog(logging.Handler):
    """HiGHS's log records as they come (from the thread that runs HiGHS, while it
    runs): the name of that thread each time, and Ctrl-C (SIGINT to this process)
    pressed once, at the first record while ``ctrl_c`` is on."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.names: list[str] = []
        self.ctrl_c = False
        self.sent = False

    def emit(self, record: logging.LogRecord) -> None:
        self.names.append(record.threadName)
        if self.ctrl_c and not self.sent:
            self.sent = True
            os.kill(os.getpid(), signal.SIGINT)


@pytest.fixture
def highs_log() -> Iterator[HighsLog]:
    """HiGHS's log on (``hetopt.solver`` at INFO) into a :class:`HighsLog`."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals go to the main thread")
    handler = HighsLog()
    log = logging.getLogger("hetopt.solver")
    level = log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
