"""The process pool's forkserver set-up (:mod:`hetopt.executors`)."""

from __future__ import annotations

import multiprocessing

import pytest

from hetopt import executors

pytestmark = pytest.mark.skipif(
    "forkserver" not in multiprocessing.get_all_start_methods(), reason="no forkserver here"
)


def _server():  # type: ignore[no-untyped-def]
    import multiprocessing.forkserver as forkserver

    return forkserver._forkserver


def test_the_programs_own_preload_modules_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_server(), "_preload_modules", ["json", "hetopt.api"])
    executors._add_forkserver_preload(multiprocessing.get_context("forkserver"))
    extra = [m for m in executors.PRELOAD if m != "hetopt.api"]
    assert _server()._preload_modules == ["json", "hetopt.api", *extra]


def test_pythons_default_preload_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_server(), "_preload_modules", ["__main__"])
    executors._add_forkserver_preload(multiprocessing.get_context("forkserver"))
    assert _server()._preload_modules == list(executors.PRELOAD)
