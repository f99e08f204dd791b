"""An instance validated while HiGHS solves it.

Validating 20,000 GPU jobs takes pydantic-core 110-170 ms, and HiGHS's run of their LP
seconds, on a worker thread that releases the GIL while the main thread only waits
(:func:`hetopt.highs._run_waiting`). A kind that can read the numbers its model is
built from straight off the input (:meth:`hetopt.kinds.base.Kind.speculate`) gives
:func:`hetopt.solve` a *provisional* instance: its fields as given, its numpy views read
off the records, and its records themselves :class:`PendingRecords`. The model is built
from it and handed to HiGHS; the full validation of the input (the same call that
validates it otherwise) runs on the main thread while HiGHS works (:func:`run_due`,
called by the HiGHS wrapper once its worker is inside the run). Its verdict is final
before the solve returns:

* invalid input: HiGHS is stopped, and the validation's
  :class:`~hetopt.InstanceError` is what the solve raises: the error (file, field,
  message) that validating first raises;
* valid input: the kind's ``certify`` checks that every value the provisional instance
  gave the solve equals the validated one, and completes it with the validated
  records; from then on it is the validated instance in all but identity. A difference
  would be a bug in the kind's reading: the solve is repeated from the validated
  instance, with a warning (an error under the test suite, ``HETOPT_CHECK_CONTRACT=1``).

A solve that reads the records before HiGHS runs (:class:`PendingRecords`), that ends
without a HiGHS run on the worker, or that fails, validates at that moment: no solve
returns, and no error but the validation's is raised, before the input is validated.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = ["DeferredFailed", "Pending", "PendingRecords", "Speculation", "due", "run_due"]


class DeferredFailed(BaseException):
    """The deferred validation failed (``error``: what it raised, an
    :class:`~hetopt.InstanceError`, or :class:`Mismatch`), carried through the solver's
    frames up to :func:`hetopt.solve` (a ``BaseException``, so that no ``except
    Exception`` on the way takes it for a failure of the solve itself)."""

    def __init__(self, error: BaseException):
        super().__init__(error)
        self.error = error


class Mismatch(Exception):
    """The provisional instance differs from the validated one (a bug of the kind's
    :meth:`~hetopt.kinds.base.Kind.speculate`)."""


@dataclass(frozen=True)
class Speculation:
    """What :meth:`~hetopt.kinds.base.Kind.speculate` gives: the provisional
    ``instance``, and ``certify(validated)``, which raises :class:`Mismatch` unless every
    value the provisional instance holds equals ``validated``'s, and else completes it
    with ``validated``'s records."""

    instance: Any
    certify: Callable[[Any], None]


class Pending:
    """The deferred validation of one solve: ``validate()`` returns the validated
    instance (or raises), run at most once to completion (a ``KeyboardInterrupt`` in it
    leaves it due), from any thread."""

    def __init__(self, validate: Callable[[], Any]):
        self._validate = validate
        self._certify: Callable[[Any], None] | None = None
        self._lock = threading.Lock()
        self.done = False
        self.validated: Any = None
        self.error: BaseException | None = None

    def bind(self, certify: Callable[[Any], None]) -> None:
        """What checks the provisional instance against the validated one."""
        self._certify = certify

    def run(self) -> Any:
        """Validate (once) and certify; return the validated instance, or raise
        :class:`DeferredFailed` with what the validation raised (or the
        :class:`Mismatch`), the same verdict at every later call."""
        with self._lock:
            if not self.done:
                try:
                    validated = self._validate()
                except KeyboardInterrupt:
                    raise  # (still due)
                except Exception as exc:
                    self.done, self.error = True, exc
                    raise DeferredFailed(exc) from None
                self.done, self.validated = True, validated
                if self._certify is not None:
                    try:
                        self._certify(validated)
                    except Mismatch as exc:
                        self.error = exc
        if self.error is not None:
            raise DeferredFailed(self.error)
        return self.validated


class PendingRecords(Sequence[Any]):
    """The records (``jobs``, ...) of a provisional instance: their count is known; any
    other use of them validates the input first (:meth:`Pending.run`) and reads
    the validated records. Not a ``list`` on purpose: C code that reads a list's items
    directly (``PySequence_Fast``) then goes through this sequence's methods too.
    ``certify`` replaces it with the validated list in the instance itself."""

    __slots__ = ("_n", "_name", "_pending")

    def __init__(self, n: int, pending: Pending, name: str):
        self._n = n
        self._pending = pending
        self._name = name

    def records(self) -> list[Any]:
        """The validated records (validating the input now if it has not been)."""
        return getattr(self._pending.run(), self._name)  # type: ignore[no-any-return]

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: Any) -> Any:
        return self.records()[i]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.records())

    def __reversed__(self) -> Iterator[Any]:
        return reversed(self.records())

    def __contains__(self, item: object) -> bool:
        return item in self.records()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PendingRecords):
            other = other.records()
        return self.records() == other

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Any) -> Any:
        return self.records() + other

    def __radd__(self, other: Any) -> Any:
        return other + self.records()

    def __reduce__(self) -> Any:
        return (list, (self.records(),))

    def __copy__(self) -> list[Any]:
        return list(self.records())

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        import copy

        return copy.deepcopy(self.records(), memo)

    def __repr__(self) -> str:
        return repr(self.records())

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:
        return self.records().index(value, start, len(self) if stop is None else stop)

    def count(self, value: Any) -> int:
        return self.records().count(value)

    def copy(self) -> list[Any]:
        return list(self.records())


_LOCAL = threading.local()
"""``pending``: the :class:`Pending` validation of this thread's solve, until it ran."""


@contextmanager
def beside_solver(pending: Pending) -> Iterator[None]:
    """``pending`` runs at this thread's next HiGHS run (:func:`run_due`), or at the end
    of the block, whichever comes first (an exception leaving the block gives way to a
    failed validation's)."""
    _LOCAL.pending = pending
    try:
        yield
    except DeferredFailed:
        raise
    except BaseException:
        pending.run()  # (invalid input: its error, not the solve's)
        raise
    finally:
        _LOCAL.pending = None
    pending.run()


def due() -> bool:
    """Whether this thread has a deferred validation that has not run yet."""
    pending: Pending | None = getattr(_LOCAL, "pending", None)
    return pending is not None and not pending.done


def run_due() -> None:
    """Run this thread's deferred validation now, if one is due (the HiGHS wrapper, once
    its worker is inside the run, or before a run on this thread). Raises
    :class:`DeferredFailed` when the input is invalid; a ``KeyboardInterrupt`` during it
    leaves it due (the end of :func:`beside_solver` runs it)."""
    pending: Pending | None = getattr(_LOCAL, "pending", None)
    if pending is not None and not pending.done:
        pending.run()
