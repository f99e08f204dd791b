"""The solve parameters of the ``multicore`` kind (a light module: pydantic only)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...contract import Params


class MulticoreParams(Params):
    """Solve parameters of the ``multicore`` kind."""

    formulation: Literal["auto", "assignment", "disjunctive", "time_indexed"] = Field(
        "auto",
        description="the model; auto: assignment for independent tasks, time_indexed for "
        "short whole-number DAGs, else disjunctive",
    )
    relaxation: bool = Field(
        False,
        description="solve the LP relaxation only: a fast bound, list schedule as incumbent",
    )
    warm_start: bool = Field(True, description="start HiGHS from a list schedule")
    symmetry: bool = Field(True, description="order the busy time of interchangeable cores")
    pareto_points: int = Field(25, ge=2, description="most points of the Pareto front")
    deadline_s: float | None = Field(
        None, description="every task ends by then (overrides the instance's deadline_s)"
    )
    energy_budget_j: float | None = Field(
        None, description="energy at most this (overrides the instance's energy_budget_j)"
    )
