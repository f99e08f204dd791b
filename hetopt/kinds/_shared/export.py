"""Exported models carry the true objective (issue 20).

A formulation may minimise a scaled objective (times in units of a reference time, so
that the variables are O(1)); the model HiGHS solves stays as it is, but the LP/MPS file
``hetopt export`` writes has its objective in the objective's own unit, so that any
solver reading the file finds hetopt's ``objective_value``.

A method does this in its ``export_objective(instance, params, built)`` hook (declared by
:class:`~hetopt.contract.BuildMethod` and :class:`~hetopt.contract.RunMethod`; the bases'
default leaves the model as it is): it rewrites ``built.model``'s objective in place
(usually :func:`rescale_objective`) or raises :class:`~hetopt.UsageError` naming the stage
it cannot export. :func:`hetopt.export_model` calls it on every exported model.
"""

from __future__ import annotations

from typing import Any

import pyomo.environ as pyo

__all__ = ["active_objective", "rescale_objective"]


def active_objective(model: pyo.ConcreteModel) -> Any:
    """The model's one active objective."""
    objs = list(model.component_data_objects(pyo.Objective, active=True))
    if len(objs) != 1:  # pragma: no cover - every hetopt model has exactly one
        raise ValueError(f"expected one active objective, found {len(objs)}")
    return objs[0]


def rescale_objective(model: pyo.ConcreteModel, scale: float, offset: float = 0.0) -> None:
    """Replace the objective ``f`` by ``scale * f + offset`` (``scale > 0``: same optimum
    point, same sense), e.g. a makespan variable in units of ``t_ref`` by seconds."""
    if not scale > 0:
        raise ValueError(f"objective scale must be positive, got {scale!r}")
    if scale == 1.0 and offset == 0.0:
        return
    obj = active_objective(model)
    expr = obj.expr
    obj.set_value(scale * expr + offset if offset else scale * expr)
