"""Where sub-problems run: any :class:`concurrent.futures.Executor`.

:func:`hetopt.decompose.solve_decomposed` hands each sub-problem (an instance plus a few
numpy arrays, never a Pyomo model) to ``executor.submit``. Anything with ``submit``
works: the in-process :class:`SerialExecutor` (the default), a
:class:`~concurrent.futures.ThreadPoolExecutor`, a
:class:`~concurrent.futures.ProcessPoolExecutor`, or a Dask cluster through
``distributed.Client(...).get_executor(pure=False)`` (see :func:`dask_executor`).
"""

from __future__ import annotations

import contextlib
import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from typing import Any, Protocol, TypeVar, runtime_checkable

from .errors import OptionsError

T = TypeVar("T")

__all__ = [
    "SerialExecutor",
    "SubmitExecutor",
    "dask_executor",
    "executor_for",
    "run_all",
    "warm_up",
]


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
    ``scheduler_address`` is given; else a process pool of ``workers`` processes
    (``spawn`` start method: HiGHS's thread pool does not survive ``fork``); else
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
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        yield pool
