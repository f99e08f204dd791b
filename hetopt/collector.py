"""Python's cyclic garbage collector around hetopt's allocation-heavy stretches.

One policy for the package:

* :func:`paused`: the collector off inside a block (unless it already was), as Pyomo's
  ``PauseGC`` while it builds models. Validating ``n`` records allocates a few ``n``
  containers, all of them kept; the collections they would trigger find nothing.
  :meth:`hetopt.instance.InstanceBase.from_dict` validates under it.
* :func:`paused_until_solver`: :func:`hetopt.solve`'s scope. The collector stays off from
  reading the instance until HiGHS's first run starts; :func:`resume` (called by the
  HiGHS wrapper once its worker thread is inside the run, which releases the GIL) turns
  it back on and runs the young collection that is due at once, on the main thread
  while HiGHS works. A solve
  that never reaches HiGHS turns it back on, and runs that collection, before it returns:
  the collection is always paid inside the solve, never left to the caller's next line.

Nothing else: the objects stay in the generations the collector put them in.
Handing them to the oldest generation (``gc.freeze()`` then ``gc.unfreeze()``) would skip
a collection, but it moves the caller's young garbage there too without counting it
towards the next full collection, so a loop of solves grew without bound
(tests/core/test_collector.py checks that it does not).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["held", "paused", "paused_until_solver", "resume"]

_PAUSED = threading.local()
"""``held``: this thread's :func:`paused_until_solver` turned the collector off and
:func:`resume` has not turned it back on yet."""


@contextmanager
def paused() -> Iterator[None]:
    """The collector off inside the block (unless it already was)."""
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def paused_until_solver() -> Iterator[None]:
    """The collector off until :func:`resume` or the end of the block, whichever comes
    first (unless it already was off: then nothing changes)."""
    if not gc.isenabled() or getattr(_PAUSED, "held", False):
        yield
        return
    gc.disable()
    _PAUSED.held = True
    try:
        yield
    finally:
        resume()


def held() -> bool:
    """Whether this thread's :func:`paused_until_solver` holds the collector off (until
    :func:`resume`)."""
    return bool(getattr(_PAUSED, "held", False))


def resume() -> None:
    """Turn the collector back on if this thread's :func:`paused_until_solver` turned it
    off, and run the young collection its allocations made due (what the next
    allocation would have run)."""
    if not getattr(_PAUSED, "held", False):
        return
    _PAUSED.held = False
    gc.enable()
    threshold = gc.get_threshold()[0]  # (0: the user turned automatic collection off)
    if threshold and gc.get_count()[0] > threshold:
        gc.collect(0)
