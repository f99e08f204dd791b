"""What ``hetopt export`` writes for the ``gpu_cluster`` kind (issue 20): every exported
model's optimum is hetopt's ``objective_value`` in the objective's own unit.

* Max-min fairness (per job, per symmetry group, with space sharing) and the first
  water-filling level maximise ``z = kappa * value``: the exported objective is
  ``z / kappa`` (:func:`max_min_objective`).
* Makespan maximises the reciprocal ``z = t_ref / T``: the exported model is the same LP
  in time variables (:func:`time_model`, a Charnes-Cooper transformation; see
  ``models/gpu_cluster.md``): ``tau = x * T`` for every time column, minimise ``T``
  seconds.

The solved models are never changed: only the model handed to the writer.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyomo.environ as pyo

from ...pyomo_ext import LinearRows
from .._shared.export import rescale_objective

__all__ = ["TIME_NAMES", "check", "max_min_objective", "replace_model", "time_model"]

INF = float("inf")

TIME_NAMES = {"alloc": "tau", "pair": "tau_pair", "self_total": "tau_self_total"}
"""The time variable of each column block of the makespan LP (seconds)."""


def check(instance: Any, objective: str, params: Any) -> None:
    """Refuse to export what a solve refuses (:meth:`GpuClusterKind.check`: an elastic
    job for a time-share objective, reclaim without loaned servers, ...)."""
    from . import KIND

    KIND.check(instance, objective, params)
    if getattr(params, "agnostic", False):
        import logging

        logging.getLogger("hetopt.export").warning(
            "gpu_cluster agnostic: the exported model is the type-agnostic LP; its optimum "
            "is the result's info['agnostic_lp_value'], not objective_value (that "
            "allocation's value under the true throughputs)"
        )


def max_min_objective(model: pyo.ConcreteModel, kappa: float) -> None:
    """Objective ``z / kappa``: the smallest normalised throughput itself."""
    rescale_objective(model, 1.0 / kappa)


def replace_model(model: pyo.ConcreteModel, new: pyo.ConcreteModel) -> None:
    """Make ``model`` (the object :func:`hetopt.export_model` writes) hold ``new``'s
    components instead of its own."""
    for comp in list(model.component_objects(descend_into=False)):
        model.del_component(comp)
    model.transfer_attributes_from(new)
    model.name = new.name


def _copy_set(new: pyo.ConcreteModel, s: Any) -> None:
    n = len(s)
    if isinstance(s, pyo.RangeSet):
        setattr(new, s.local_name, pyo.RangeSet(0, n - 1))
    else:
        setattr(new, s.local_name, pyo.Set(initialize=list(s), ordered=True))


def time_model(
    model: pyo.ConcreteModel, t_ref: float, value_rows: str, row_steps: np.ndarray
) -> pyo.ConcreteModel:
    """The makespan LP ``model`` (maximise ``z = t_ref / T``, :func:`.maxmin.build`) in
    time variables, whose optimum is the makespan ``T`` in seconds.

    Every column ``x[k]`` becomes ``tau[k] = x[k] * T`` (same bounds times ``T``: 0 for
    a pair the job cannot get its GPUs on; the upper bound 1 of a time column is implied
    by its ``c_time`` row, ``sum tau <= T``), and ``z * T = t_ref``. A row
    ``lower <= a . x + a_z z <= upper`` becomes ``a . tau - lower * T >= -a_z t_ref``
    (and the same for ``upper``): ``c_time[r]: sum tau - T <= 0``, ``c_capacity[t]:
    sum usage tau - workers_t T <= 0``, space sharing's zero rows unchanged. The value
    rows, divided by ``t_ref / steps_r`` (``row_steps``), read ``c_progress[r]:
    sum_t thr[r,t] tau[r,t] >= steps_r``. The objective: minimise ``makespan`` (``T``).
    """
    new = pyo.ConcreteModel(name=f"{model.name}_time")
    for s in model.component_objects((pyo.Set, pyo.RangeSet), descend_into=False):
        if not s.local_name.endswith("_index"):
            _copy_set(new, s)
    z = model.z
    lb = 0.0 if z.ub is None else t_ref / z.ub  # z <= z_ub  <=>  T >= t_ref / z_ub
    new.makespan = pyo.Var(bounds=(lb, None))
    col_of: dict[int, Any] = {id(z): None}
    for var in model.component_objects(pyo.Var, descend_into=False):
        if var is z:
            continue
        name = TIME_NAMES.get(var.local_name, f"tau_{var.local_name}")
        index = getattr(new, var.index_set().local_name)
        tau = pyo.Var(index, bounds=(0.0, None))
        setattr(new, name, tau)
        for key, old in var.items():
            if old.ub is not None and old.ub == 0.0:
                tau[key].setub(0.0)
            elif old.ub not in (None, 1.0) or old.lb not in (None, 0.0):
                raise ValueError(f"{old.name}: bounds {old.bounds} have no time form")
            col_of[id(old)] = tau[key]
    for rows in model.component_objects(pyo.Constraint, descend_into=False):
        if not isinstance(rows, LinearRows):  # pragma: no cover - every row is a block
            raise ValueError(f"{rows.name}: not a LinearRows block")
        _time_rows(new, rows, col_of, t_ref, row_steps if rows.local_name == value_rows else None)
    new.obj = pyo.Objective(expr=new.makespan, sense=pyo.minimize)
    return new


def _time_rows(
    new: pyo.ConcreteModel,
    rows: LinearRows,
    col_of: dict[int, Any],
    t_ref: float,
    row_steps: np.ndarray | None,
) -> None:
    data, indices, indptr = rows.csr
    xs = rows.variables
    lo, hi = rows.row_lower.astype(float), rows.row_upper.astype(float)
    n = len(lo)
    counts = np.diff(indptr)
    r = np.repeat(np.arange(n), counts)
    is_z = np.array([col_of[id(xs[j])] is None for j in range(len(xs))], dtype=bool)
    zmask = is_z[indices]
    const = np.bincount(r[zmask], data[zmask], minlength=n) * t_ref  # a_z * z * T
    ranged = np.isfinite(lo) & np.isfinite(hi) & (lo != hi)
    if ranged.any():  # pragma: no cover - no gpu_cluster LP has one
        raise ValueError(f"{rows.name}: a ranged row has no one-row time form")
    side = np.where(np.isfinite(lo), lo, np.where(np.isfinite(hi), hi, 0.0))
    factor = np.ones(n) if row_steps is None else row_steps / t_ref
    keep = ~zmask
    tau = [col_of[id(x)] for x in xs if col_of[id(x)] is not None]
    tau_col = np.cumsum(~is_z) - 1  # old column -> new column
    T = len(tau)
    cols = np.concatenate([tau_col[indices[keep]], np.full(n, T)])
    vals = np.concatenate([data[keep] * factor[r[keep]], -side * factor])
    rhs = 0.0 - const * factor  # no "-0.0" in the file
    lower = np.where(np.isfinite(lo), rhs, -INF)
    upper = np.where(np.isfinite(hi), rhs, INF)
    block = LinearRows.from_coo(
        np.concatenate([r[keep], np.arange(n)]), cols, vals, n, lower, upper, [*tau, new.makespan]
    )
    setattr(new, rows.local_name, block)
