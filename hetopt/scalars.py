"""Plain Python numbers from what callers pass: one reading for the whole package.

An instance file's validation, the solve options, the generators' arguments and the
scheduler APIs take numbers the same way: a Python ``int`` or ``float``, a numpy scalar
(as the Python number it holds) or another real number; never a ``bool`` (``True`` is no
count) or a string. A whole number may also come as a float without a fractional part
(``4.0``: JSON has one number type). Callers check the range and word their own errors.
This module imports nothing beyond the standard library (the command line reads it at
start-up).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

__all__ = ["real_number", "whole_number"]


def real_number(value: Any) -> int | float | None:
    """``value`` as an exact ``int`` (an integer of any kind) or a ``float`` (another
    real number: numpy's, a ``Fraction``; one too large for a float is ``inf``);
    ``None`` when it is no real number (a ``bool``, numpy's ``bool_``, a string,
    ``None``, a complex number)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    try:
        return float(value)
    except (OverflowError, ValueError):  # (a huge Fraction)
        return math.inf


def whole_number(value: Any) -> int | None:
    """``value`` as an ``int`` when it is a whole number (an integer, or a finite real
    number without a fractional part), else ``None``."""
    x = real_number(value)
    if isinstance(x, int):
        return x
    if x is not None and math.isfinite(x) and x.is_integer():
        return int(x)
    return None
