"""The coarse solve status shared by every kind."""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """Coarse outcome of a solve.

    The solver's exact termination string is kept beside it in
    :attr:`hetopt.Result.termination`.
    """

    OPTIMAL = "optimal"
    """Proven optimal (within the MIP gap tolerance asked for, for MILPs)."""
    FEASIBLE = "feasible"
    """A solution exists but optimality is not proven; see ``bound`` and ``gap``."""
    INFEASIBLE = "infeasible"
    """Proven that no solution exists."""
    UNBOUNDED = "unbounded"
    """The objective can be improved without limit."""
    NO_SOLUTION = "no_solution"
    """A limit (time, iterations, ...) was reached before any solution was found."""
    ERROR = "error"
    """The solver failed; see ``termination``."""

    @property
    def has_solution(self) -> bool:
        """Whether a solution (and so the result tables) is available."""
        return self in (Status.OPTIMAL, Status.FEASIBLE)
