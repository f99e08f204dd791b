"""Exceptions raised by hetopt.

Infeasible, unbounded or out-of-time solves are *statuses* on :class:`hetopt.Result`,
never exceptions. Exceptions are for bad input (:class:`InstanceError`), bad options
(:class:`OptionsError`) and solver crashes (:class:`SolveError`).
"""

from __future__ import annotations

from typing import Any


class HetoptError(Exception):
    """Base class of every error hetopt raises on purpose."""


class InstanceError(HetoptError, ValueError):
    """An instance (file or in-memory data) is invalid.

    Parameters
    ----------
    message
        What was wrong and what was expected.
    field
        Dotted path of the offending field, e.g. ``jobs[3].throughput.v100``.
    source
        The file the instance came from, if any.
    """

    def __init__(self, message: str, field: str | None = None, source: str | None = None):
        self.message = message
        self.field = field
        self.source = source
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.source:
            where.append(str(self.source))
        if self.field:
            where.append(self.field)
        prefix = ": ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message

    def with_source(self, source: str) -> InstanceError:
        """Return a copy of this error that names ``source`` as the file."""
        return InstanceError(self.message, self.field, source)


class UsageError(HetoptError, ValueError):
    """A valid instance asked for something the kind does not offer (objective, parameter)."""


class UnknownKindError(UsageError, KeyError):
    """No kind is registered under the name asked for (a :class:`UsageError`, and a
    ``KeyError`` as :func:`hetopt.get_kind`'s lookups raised before)."""

    def __str__(self) -> str:  # (KeyError's would quote the message)
        return str(self.args[0]) if self.args else ""


class OptionsError(HetoptError, ValueError):
    """A solver option or option file is invalid (unknown HiGHS option, bad value, ...)."""


class SolveError(HetoptError, RuntimeError):
    """The solver crashed or returned something hetopt cannot interpret."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped a solve. HiGHS has stopped and its models are usable;
    :attr:`result` is the honest result of what was found (the incumbent with status
    ``feasible`` and its gap, or ``no_solution``), termination ``interrupted: ...``."""

    def __init__(self, result: Any):
        super().__init__("interrupted")
        self.result = result
