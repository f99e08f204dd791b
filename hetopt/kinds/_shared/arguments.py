"""Checks of the size, fraction, rate and seed arguments of the kinds' generators.

Every public generator (``generate``, ``generate_jobs``, ``generate_trace``, ...) runs
its arguments through these first, so that a bad one is a one-line
:class:`~hetopt.errors.UsageError` naming the parameter, the range it takes and what was
given (``generate: num_jobs must be a whole number from 1 to 1,000,000, got 2.5``)
instead of a ``TypeError`` from deep inside, a silent fix (``True`` drawn as one job) or
a draw that fills memory.

Whole numbers are taken as instance files take them: a Python ``int``, a numpy integer
or a float without a fractional part (``4.0``); never a ``bool``, a string, a
non-integral or non-finite float. The value returned is the one the generator goes on
with: a plain ``int`` for a whole number, the given ``int`` or ``float`` unchanged (any
other real number as a ``float``) for a fraction or a positive number, so that a valid
call draws exactly what it drew before.

This module imports nothing heavy (the command line's :mod:`hetopt.console` takes
:data:`MAX_GENERATED` from here).
"""

from __future__ import annotations

import math
from typing import Any

from ...errors import UsageError
from ...scalars import real_number, whole_number

MAX_GENERATED = 1_000_000
"""Most items a generator draws (jobs, clients, tasks, ...), from Python as with
``hetopt generate``'s size options (``--jobs``, ``--clients``, ``--tasks``, ...): a
million clients took 44 s, 5.6 GB of memory and a 281 MB file here; without a bound
``--jobs 100000000`` kept growing until the machine ran out of memory."""

MAX_WHOLE = 10**12
"""Largest whole number a generator writes into an instance as it is given
(``available``, ``gpus_per_server``, ``kv_capacity_tokens``, ...):
``floor(hetopt.instance.MAX_ABS)``, the largest an instance holds."""


def _shown(value: Any) -> str:
    from ...instance import _shown as shown  # (the error path only: no pydantic import)

    return shown(value)


def _fail(where: str, name: str, expected: str, value: Any) -> UsageError:
    return UsageError(f"{where}: {name} must be {expected}, got {_shown(value)}")


def count(
    value: Any,
    name: str,
    minimum: int | None = 1,
    maximum: int | None = MAX_GENERATED,
    *,
    where: str = "generate",
) -> int:
    """A whole-number argument (a size, a count) from ``minimum`` to ``maximum``.

    Parameters
    ----------
    value
        What the caller passed: an ``int``, a numpy integer or an integral float.
    name
        The parameter's name, for the message.
    minimum, maximum
        The range, both ends included; ``None``: no bound on that side.
    where
        The function that checks, for the message (``"generate"``).

    Returns
    -------
    int
        ``value`` as a plain ``int``.

    Raises
    ------
    UsageError
        ``value`` is no whole number (``True``, ``2.5``, ``"5"``, NaN, infinity) or lies
        outside the range.
    """
    whole = whole_number(value)
    n = 0 if whole is None else whole
    ok = (
        whole is not None
        and (minimum is None or n >= minimum)
        and (maximum is None or n <= maximum)
    )
    if not ok:
        if minimum is not None and maximum is not None:
            expected = f"a whole number from {minimum:,} to {maximum:,}"
        elif minimum is not None:
            expected = f"a whole number >= {minimum:,}"
        elif maximum is not None:
            expected = f"a whole number <= {maximum:,}"
        else:
            expected = "a whole number"
        raise _fail(where, name, expected, value)
    return n


def _number(
    value: Any, name: str, where: str, minimum: float, above: bool, maximum: float
) -> float:
    x = real_number(value)
    ok = (
        x is not None
        and (isinstance(x, int) or math.isfinite(x))
        and (x > minimum if above else x >= minimum)
        and x <= maximum
    )
    if not ok:
        low = f"above {minimum:g} and at most" if above else f"from {minimum:g} to"
        raise _fail(where, name, f"a number {low} {maximum:g}", value)
    return value if type(value) in (int, float) else float(value)


def fraction(value: Any, name: str, *, where: str = "generate") -> float:
    """A fraction or a probability: a finite real number from 0 to 1.

    Parameters
    ----------
    value
        What the caller passed (a real number, not a ``bool``).
    name
        The parameter's name, for the message.
    where
        The function that checks, for the message.

    Returns
    -------
    float
        ``value`` itself when it is an ``int`` or a ``float``, else ``float(value)``.

    Raises
    ------
    UsageError
        ``value`` is no real number, not finite or outside [0, 1].
    """
    return _number(value, name, where, 0.0, False, 1.0)


def positive(value: Any, name: str, *, where: str = "generate") -> float:
    """A positive real number (a rate, a size in MB, a duration): finite, above 0 and at
    most :data:`hetopt.instance.MAX_ABS`.

    Parameters
    ----------
    value
        What the caller passed (a real number, not a ``bool``).
    name
        The parameter's name, for the message.
    where
        The function that checks, for the message.

    Returns
    -------
    float
        ``value`` itself when it is an ``int`` or a ``float``, else ``float(value)``.

    Raises
    ------
    UsageError
        ``value`` is no real number, not finite, at most 0 or above ``MAX_ABS``.
    """
    from ...instance import MAX_ABS

    return _number(value, name, where, 0.0, True, MAX_ABS)


def nonnegative(value: Any, name: str, *, where: str = "generate") -> float:
    """A real number that may be 0 (CPUs per server, a cost, an arrival window): finite,
    from 0 to :data:`hetopt.instance.MAX_ABS`.

    Parameters
    ----------
    value
        What the caller passed (a real number, not a ``bool``).
    name
        The parameter's name, for the message.
    where
        The function that checks, for the message.

    Returns
    -------
    float
        ``value`` itself when it is an ``int`` or a ``float``, else ``float(value)``.

    Raises
    ------
    UsageError
        ``value`` is no real number, not finite, negative or above ``MAX_ABS``.
    """
    from ...instance import MAX_ABS

    return _number(value, name, where, 0.0, False, MAX_ABS)


def seed(value: Any, name: str = "seed", *, where: str = "generate") -> int:
    """A random seed for ``numpy.random.default_rng``: a whole number >= 0 (no upper
    bound, as numpy's).

    Parameters
    ----------
    value
        What the caller passed.
    name
        The parameter's name, for the message.
    where
        The function that checks, for the message.

    Returns
    -------
    int
        ``value`` as a plain ``int``.

    Raises
    ------
    UsageError
        ``value`` is no whole number or is negative.
    """
    return count(value, name, 0, None, where=where)


def finite(value: Any) -> int | float | None:
    """``value`` as an ``int`` (an integer) or a ``float`` (another real number) when it
    is a finite real number, else ``None`` (a ``bool``, a string, ``None``, NaN,
    infinity): for a range check a generator keeps from before these helpers, with its
    own error, on the numbers it refused then (anything else goes on to the helpers)."""
    x = real_number(value)
    return x if x is not None and (isinstance(x, int) or math.isfinite(x)) else None
