"""The ``multicore`` kind: tasks on heterogeneous cores (big.LITTLE, CPUs + accelerators).

Independent tasks use an assignment MILP (R||Cmax with eligibility); tasks with
``predecessors`` a disjunctive or a time-indexed scheduling MILP. Objectives: makespan,
energy (active plus idle power over the makespan) and the makespan-energy Pareto front.
See ``models/multicore.md`` for the mathematics.
"""

from __future__ import annotations

from typing import Any

import pyomo.environ as pyo

from ...options import SolveOptions
from ...result import Result, Verification
from ..base import Kind, Objective, UsageError
from . import formulations as F
from . import verify as V
from .data import Core, MulticoreArrays, MulticoreInstance, Task
from .fjsp import fjsp_to_multicore
from .generate import FAMILIES, generate
from .heuristics import best_list_schedule, list_schedule
from .plotting import plot_gantt, plot_pareto

__all__ = [
    "FAMILIES",
    "KIND",
    "Core",
    "MulticoreArrays",
    "MulticoreInstance",
    "MulticoreKind",
    "Task",
    "fjsp_to_multicore",
    "generate",
    "list_schedule",
    "plot_gantt",
    "plot_pareto",
]


class MulticoreKind(Kind):
    name = "multicore"
    description = "tasks (independent or a DAG) on heterogeneous cores: makespan, energy, Pareto"
    objectives = (
        Objective("makespan", "time until the last task ends", "s", "min"),
        Objective(
            "energy",
            "active energy of the tasks plus idle power of every core until the makespan",
            "J",
            "min",
        ),
        Objective(
            "pareto",
            "the makespan-energy Pareto front (epsilon-constraint), table 'pareto'",
            "",
            "min",
        ),
    )
    instance_model = MulticoreInstance
    params = {
        "formulation": "auto | assignment | disjunctive | time_indexed (auto: by size)",
        "relaxation": "solve the LP relaxation only: a fast bound, list schedule as incumbent",
        "warm_start": "start HiGHS from a list schedule (default true)",
        "symmetry": "order the busy time of interchangeable cores (default true)",
        "pareto_points": "most points of the Pareto front (default 25)",
        "deadline_s": "every task ends by then (overrides the instance's deadline_s)",
        "energy_budget_j": "energy at most this (overrides the instance's energy_budget_j)",
    }

    def build(
        self,
        instance: MulticoreInstance,
        objective: str,
        formulation: str = "auto",
        symmetry: bool = True,
        deadline_s: float | None = None,
        energy_budget_j: float | None = None,
        **_: Any,
    ) -> pyo.ConcreteModel:
        from .solve import make_plan

        instance = with_limits(instance, deadline_s, energy_budget_j)
        arr = instance.arrays
        plan = make_plan(arr, objective, formulation, best_list_schedule(arr), symmetry)
        return F.build(arr, plan)

    def solve(
        self,
        instance: MulticoreInstance,
        objective: str,
        options: SolveOptions,
        formulation: str = "auto",
        relaxation: bool = False,
        warm_start: bool = True,
        symmetry: bool = True,
        pareto_points: int = 25,
        deadline_s: float | None = None,
        energy_budget_j: float | None = None,
    ) -> Result:
        from .solve import solve

        instance = with_limits(instance, deadline_s, energy_budget_j)
        for flag, val in (
            ("relaxation", relaxation),
            ("warm_start", warm_start),
            ("symmetry", symmetry),
        ):
            if not isinstance(val, bool):
                raise UsageError(f"{flag} must be true or false, got {val!r}")
        if (
            isinstance(pareto_points, bool)
            or not isinstance(pareto_points, int)
            or pareto_points < 2
        ):
            raise UsageError(f"pareto_points must be a whole number >= 2, got {pareto_points!r}")
        if relaxation and objective == "pareto":
            raise UsageError("relaxation is not offered for the pareto objective")
        return solve(
            self,
            instance,
            objective,
            options,
            formulation,
            relaxation,
            warm_start,
            symmetry,
            pareto_points,
        )

    def verify(self, instance: MulticoreInstance, result: Result) -> Verification:
        return V.verify(instance, result.objective, result.objective_value, dict(result.tables))


def with_limits(
    instance: MulticoreInstance, deadline_s: float | None, energy_budget_j: float | None
) -> MulticoreInstance:
    """The instance with ``deadline_s`` / ``energy_budget_j`` replaced (validated)."""
    if deadline_s is None and energy_budget_j is None:
        return instance
    data = instance.to_dict()
    if deadline_s is not None:
        data["deadline_s"] = float(deadline_s) if isinstance(deadline_s, int) else deadline_s
    if energy_budget_j is not None:
        data["energy_budget_j"] = (
            float(energy_budget_j) if isinstance(energy_budget_j, int) else energy_budget_j
        )
    return MulticoreInstance.from_dict(data)


KIND = MulticoreKind()
