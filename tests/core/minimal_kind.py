"""A complete, minimal kind: the template for adding one (CONTRIBUTING.md, "Adding a kind").

A 0/1 knapsack with two objectives, to show both kinds of method:

* ``max_value`` — a :class:`~hetopt.contract.BuildMethod`: ``build`` returns the model and
  a typed layout, ``extract`` reads one HiGHS solution into the declared table;
* ``max_value_then_min_weight`` — a :class:`~hetopt.contract.RunMethod`: two solves on
  one live HiGHS model (a lexicographic second stage), each accounted by the session.

It is registered only by the tests (``tests/core/test_contract.py``); a real kind lives in
``hetopt/kinds/<kind>/`` (data.py, formulations.py, verify.py, cli.py, ...) and gets one
``KindEntry`` in ``hetopt/kinds/__init__.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyomo.environ as pyo
from pydantic import BaseModel, ConfigDict, Field

from hetopt.contract import (
    BuildMethodBase,
    Built,
    Column,
    Detail,
    Outcome,
    Params,
    RunMethodBase,
    SolveView,
    Table,
)
from hetopt.instance import InstanceBase
from hetopt.kinds.base import Kind, Objective
from hetopt.pipeline import Session
from hetopt.result import Result, Verification
from hetopt.status import Status


# -- 1. the instance: validated, immutable data ------------------------------------------
class Item(BaseModel):
    """One item: its value and weight."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)
    id: str
    value: float = Field(ge=0)
    weight_kg: float = Field(gt=0)


class KnapsackInstance(InstanceBase):
    """Items and a capacity."""

    kind: Literal["minimal_knapsack"] = "minimal_knapsack"
    objective: str | None = None
    capacity_kg: float = Field(ge=0)
    items: list[Item]


# -- 2. the parameters: typed, with defaults and help -------------------------------------
class KnapsackParams(Params):
    relax: bool = Field(False, description="solve the LP relaxation (fractional items)")


# -- 3. the formulation: a pure function returning the model and a typed layout ------------
@dataclass(frozen=True)
class Layout:
    ids: tuple[str, ...]


def build_knapsack(inst: KnapsackInstance, relax: bool) -> Built:
    m = pyo.ConcreteModel(name="minimal_knapsack")
    m.ITEMS = pyo.RangeSet(0, len(inst.items) - 1)
    m.take = pyo.Var(m.ITEMS, domain=pyo.UnitInterval if relax else pyo.Binary)
    m.c_capacity = pyo.Constraint(
        expr=sum(it.weight_kg * m.take[i] for i, it in enumerate(inst.items)) <= inst.capacity_kg
    )
    value = sum(it.value * m.take[i] for i, it in enumerate(inst.items))
    # c_value: slack here (values are >= 0); the lexicographic method raises its bound
    m.c_value = pyo.Constraint(expr=value >= 0)
    m.obj = pyo.Objective(expr=value, sense=pyo.maximize)
    return Built(m, Layout(tuple(it.id for it in inst.items)))


def selection_table(inst: KnapsackInstance, x: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"item": [it.id for it in inst.items], "fraction": x})


# -- 4. the methods -------------------------------------------------------------------------
class MaxValue(BuildMethodBase):
    def build(self, instance: KnapsackInstance, params: KnapsackParams) -> Built:
        return build_knapsack(instance, params.relax)

    def describe(self, instance: KnapsackInstance, params: KnapsackParams, built: Built) -> dict:
        return {"relaxed": params.relax}

    def extract(
        self, instance: KnapsackInstance, params: KnapsackParams, built: Built, solution: SolveView
    ) -> Outcome:
        x = solution.values(built.model.take, range(len(built.layout.ids)))
        x = x if params.relax else np.round(x)
        value = float(sum(it.value * xi for it, xi in zip(instance.items, x, strict=True)))
        return Outcome(value, {"selection": selection_table(instance, x)})


class MaxValueThenMinWeight(RunMethodBase):
    """Stage 1: the best value; stage 2: the lightest selection of that value."""

    def build(self, instance: KnapsackInstance, params: KnapsackParams) -> Built:
        return build_knapsack(instance, params.relax)  # what ``hetopt export`` writes

    def run(self, session: Session, instance: KnapsackInstance, params: KnapsackParams) -> Outcome:
        built = session.build(self, instance, params)
        live = session.open(built)
        first = live.solve(stage="value")
        if not first.status.has_solution or first.objective is None:
            return Outcome(status=first.status, termination=first.termination)
        m, hm = built.model, live.highs_model
        best = first.objective
        # keep the value (c_value's bound), then maximise -weight on the same HiGHS model
        hm.set_row_bounds(m.c_value, best - 1e-6 * max(1.0, abs(best)), None)
        w = np.array([it.weight_kg for it in instance.items])
        v = np.array([it.value for it in instance.items])
        hm.set_objective_coefficients(hm.compiled.columns_of(m.take), -w)
        second = live.solve(stage="weight")
        if not second.status.has_solution:
            return Outcome(status=second.status, termination=f"stage 2: {second.termination}")
        x = second.values(m.take, range(len(instance.items)))
        x = x if params.relax else np.round(x)
        value = float(v @ x)
        return Outcome(
            value,
            {"selection": selection_table(instance, x)},
            {"weight_kg": float(w @ x), "relaxed": params.relax},
            status=Status.OPTIMAL if second.status == Status.OPTIMAL else Status.FEASIBLE,
            termination=second.termination,
            bound=best,
            gap=abs(best - value) / max(abs(value), 1e-9),
        )


# -- 5. the kind: declarations and the independent verifier ------------------------------
class KnapsackKind(Kind):
    name = "minimal_knapsack"
    description = "0/1 knapsack (the template kind of the tests)"
    objectives = (
        Objective("max_value", "total value of the items taken", "", "max"),
        Objective(
            "max_value_then_min_weight", "best value, then the lightest such selection", "", "max"
        ),
    )
    instance_model = KnapsackInstance
    params_model = KnapsackParams
    methods = {"max_value": MaxValue(), "max_value_then_min_weight": MaxValueThenMinWeight()}
    tables = (
        Table(
            "selection",
            "which items are taken",
            (
                Column("item", "str", "item id"),
                Column("fraction", "float", "1 taken, 0 not (fractional when relaxed)"),
            ),
        ),
    )
    details = (
        Detail("relaxed", "bool", "the LP relaxation was solved"),
        Detail("weight_kg", "float", "weight of the selection", "kg"),
    )

    def verify(self, instance: KnapsackInstance, result: Result) -> Verification:
        sel = result.tables["selection"]
        x = sel["fraction"].to_numpy(dtype=float)
        w = sum(it.weight_kg * xi for it, xi in zip(instance.items, x, strict=True))
        v = sum(it.value * xi for it, xi in zip(instance.items, x, strict=True))
        bad = []
        if list(sel["item"]) != [it.id for it in instance.items]:
            bad.append("every item appears once, in order")
        if w > instance.capacity_kg + 1e-6:
            bad.append(f"weight {w} exceeds the capacity {instance.capacity_kg}")
        if result.objective_value is not None and abs(v - result.objective_value) > 1e-6:
            bad.append(f"objective {result.objective_value} but the selection is worth {v}")
        return Verification(
            ok=not bad,
            objective_value=v,
            violations=tuple(bad),
            checks=("items", "capacity", "value"),
        )


KIND: Any = KnapsackKind()
