"""Where sub-problems run: any :class:`concurrent.futures.Executor`.

:func:`hetopt.decompose.solve_decomposed` hands each sub-problem (an instance plus a few
numpy arrays, never a Pyomo model) to ``executor.submit``. Anything with ``submit``
works: the in-process :class:`SerialExecutor` (the default), a
:class:`~concurrent.futures.ThreadPoolExecutor`, a
:class:`~concurrent.futures.ProcessPoolExecutor`, or a Dask cluster through
``distributed.Client(...).get_executor(pure=False)`` (see :func:`dask_executor`).

``workers=W`` (``--workers W``) runs them on :func:`process_pool`: ONE pool of ``W``
processes per Python process, started at its first use and kept until exit (or
:func:`close_pools`), whose workers import hetopt's solve path once, when they start
(``forkserver`` with that path preloaded where available: a new worker is a fork of an
already warm server instead of a fresh interpreter; else ``spawn``). Later
decompositions in the same process reuse the warm workers.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from typing import Any, Protocol, TypeVar, runtime_checkable

from .errors import OptionsError

T = TypeVar("T")

__all__ = [
    "SerialExecutor",
    "SubmitExecutor",
    "close_pools",
    "dask_executor",
    "executor_for",
    "pool_running",
    "process_pool",
    "run_all",
    "warm_up",
]

PRELOAD = (
    "hetopt.api",
    "hetopt.highs",
    "hetopt.pipeline",
    "hetopt.pyomo_ext",
    "hetopt.kinds.gpu_cluster.decompose",
)
"""Modules a ``forkserver`` imports once before it forks the pool's workers."""


@runtime_checkable
class SubmitExecutor(Protocol):
    """The one method hetopt needs from an executor (``concurrent.futures`` style)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any: ...


class SerialExecutor(Executor):
    """Runs each call at once in the calling thread (the default: no parallelism)."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        fut: Future[T] = Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # delivered through the future, like a real pool
            fut.set_exception(exc)
        return fut


def run_all(executor: SubmitExecutor, fn: Callable[[T], Any], items: Iterable[T]) -> list[Any]:
    """Submit ``fn(item)`` for every item and return the results in order.

    The first failure is re-raised after the remaining futures are cancelled.
    """
    futures = [executor.submit(fn, item) for item in items]
    try:
        return [f.result() for f in futures]
    except BaseException:
        for f in futures:
            with contextlib.suppress(Exception):
                f.cancel()
        raise


def _warm(_: int) -> int:
    import os

    # pays Pyomo's, highspy's and pandas's import and the kinds' (hetopt itself imports
    # them lazily, so a worker would otherwise pay them in its first timed sub-solve)
    from . import api, highs, pipeline, pyomo_ext  # noqa: F401
    from .kinds import get_kind, kind_names

    for name in kind_names():
        get_kind(name)
    return os.getpid()


def warm_up(executor: SubmitExecutor, tasks: int = 8) -> int:
    """Make every worker import hetopt before timing starts; returns distinct workers seen."""
    return len(set(run_all(executor, _warm, range(tasks))))


def _init_worker() -> None:
    """A pool worker's initializer: the solve path is imported before the first task."""
    _warm(0)


_POOLS: dict[int, ProcessPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def _start_method() -> str:
    # HiGHS's thread pool does not survive ``fork``; a forkserver forks from a process
    # that has imported hetopt but never run HiGHS
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def _add_forkserver_preload(ctx: Any) -> None:
    """Add :data:`PRELOAD` to the modules the process's forkserver imports, keeping the
    ones the program asked for itself.

    ``set_forkserver_preload`` replaces the list, and the forkserver is shared by the
    whole process: setting :data:`PRELOAD` alone dropped a program's own choice. Python
    offers no getter, so the list is read from the forkserver object (where CPython keeps
    it); Python's default (``["__main__"]``, which the program did not choose) and a list
    that is not found are replaced, as before."""
    import multiprocessing.forkserver as forkserver

    current = getattr(getattr(forkserver, "_forkserver", None), "_preload_modules", None)
    names = list(current) if isinstance(current, list | tuple) else []
    if names == ["__main__"]:
        names = []
    names += [m for m in PRELOAD if m not in names]
    ctx.set_forkserver_preload(names)


def process_pool(workers: int) -> ProcessPoolExecutor:
    """The process-wide pool of ``workers`` processes (started at the first call, reused
    by every later one; a broken pool is replaced). Not to be shut down by the caller:
    :func:`close_pools` does, at the latest at exit."""
    if workers < 2:
        raise OptionsError(f"a process pool needs at least 2 workers, got {workers}")
    with _POOLS_LOCK:
        pool = _POOLS.get(workers)
        if pool is not None and not getattr(pool, "_broken", False):
            return pool
        ctx = multiprocessing.get_context(_start_method())
        if ctx.get_start_method() == "forkserver":
            _add_forkserver_preload(ctx)
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init_worker)
        _POOLS[workers] = pool
        return pool


def pool_running(workers: int) -> bool:
    """Whether :func:`process_pool` of ``workers`` processes is already up (warm)."""
    with _POOLS_LOCK:
        pool = _POOLS.get(workers)
        return pool is not None and not getattr(pool, "_broken", False)


def close_pools() -> None:
    """Shut down every pool :func:`process_pool` started (also run at exit)."""
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for pool in pools:
        pool.shutdown(wait=True, cancel_futures=True)


atexit.register(close_pools)


def dask_executor(address: str | None = None, **cluster_kwargs: Any) -> tuple[Executor, Any]:
    """A Dask ``ClientExecutor`` and its client (close the client when done).

    Parameters
    ----------
    address
        Scheduler address (``tcp://host:8786``); ``None`` starts a ``LocalCluster``
        with ``cluster_kwargs`` (e.g. ``n_workers=2, threads_per_worker=1``).

    Raises
    ------
    OptionsError
        ``distributed`` is not installed (``pip install hetopt[dask]``).
    """
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - dask is an optional extra
        raise OptionsError(
            f"a Dask scheduler needs the 'distributed' package (pip install hetopt[dask]): {exc}"
        ) from None
    if address is None:
        client = Client(LocalCluster(**cluster_kwargs))
    else:
        try:
            client = Client(address)
        except (OSError, ValueError) as exc:  # unreachable or malformed address
            # (an OSError would otherwise read as a file problem in the CLI)
            raise OptionsError(
                f"cannot connect to the Dask scheduler at {address!r}: {exc}"
            ) from None
    return client.get_executor(pure=False), client


@contextlib.contextmanager
def executor_for(
    workers: int | None = None,
    scheduler_address: str | None = None,
    executor: SubmitExecutor | None = None,
) -> Iterator[SubmitExecutor]:
    """The executor for a ``--workers`` / ``--scheduler-address`` choice (closed on exit).

    ``executor`` wins when given (and is not closed here); else a Dask client when
    ``scheduler_address`` is given; else the shared :func:`process_pool` of ``workers``
    processes (kept warm for later calls, not closed here); else
    :class:`SerialExecutor`.
    """
    if executor is not None:
        yield executor
        return
    if workers is not None and workers < 1:
        raise OptionsError(f"workers must be >= 1, got {workers}")
    if scheduler_address:
        ex, client = dask_executor(scheduler_address)
        try:
            yield ex
        finally:
            client.close()
        return
    if workers is None or workers == 1:
        yield SerialExecutor()
        return
    yield process_pool(workers)
