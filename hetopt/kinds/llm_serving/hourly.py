"""Hour-by-hour capacity plans with a cost of changes (self-contained rolling re-solve).

:func:`solve_hourly` re-solves ``min_cost`` once per period with that period's bucket
rates; each solve goes through the pipeline (:func:`hetopt.pipeline.solve`, so every plan
is verified) with ``deployed`` set to the previous period's plan and ``change_cost`` $ per
instance started or stopped. Each period's plan is optimal for that period given the
previous one (a myopic rolling horizon, one period look-ahead); the sum over periods is
not a multi-period optimum.

This is the kind's own loop, independent of :mod:`hetopt.rolling` (whose generic driver
is being reworked).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ...options import SolveOptions
from ...result import Result
from ...status import Status
from .azure import Period
from .data import LlmServingInstance


@dataclass(frozen=True)
class HourlyPlan:
    """The plans of :func:`solve_hourly`.

    ``plan`` has one row per (period, GPU type): ``period``, ``start_s``, ``gpu_type``,
    ``count``, ``started``, ``stopped``, ``cost_per_hour``. ``results`` are the verified
    per-period results (``objective_value`` = serving cost of the period's hour + cost of
    its changes). ``total_cost`` is ``sum_p (serving $/h x length_p / 3600 h + change $)``.
    """

    plan: pd.DataFrame
    results: list[Result]
    total_cost: float
    status: Status
    """``optimal`` when every period was solved to optimality, else the worst status."""


def solve_hourly(
    instance: LlmServingInstance,
    periods: Sequence[Period | Mapping[str, float]],
    change_cost: float = 0.0,
    options: SolveOptions | None = None,
    initial: Mapping[str, int] | None = None,
    **params: Any,
) -> HourlyPlan:
    """Plan each period's instances, paying ``change_cost`` per instance started/stopped.

    Parameters
    ----------
    instance
        GPU types and buckets (their ``rate_rps`` are replaced period by period).
    periods
        Per period, the rate of every bucket (a :class:`~.azure.Period` from
        :func:`~.azure.trace_periods`, or a plain ``{bucket id: rate_rps}`` for one hour);
        a bucket missing from a period has rate 0.
    change_cost
        $ per instance started or stopped between consecutive periods.
    options
        Solve options of every period.
    initial
        The deployment before the first period (default: ``instance.deployed``, else
        nothing).
    **params
        Other ``min_cost`` parameters (``slices``, ``target_utilization``).

    Returns
    -------
    HourlyPlan
        The plan table, the per-period results and the total cost. A period that has no
        solution (e.g. infeasible for the stock) keeps the previous deployment in the plan
        and sets ``status``.
    """
    from ... import pipeline
    from . import KIND

    base = instance.to_dict()
    known = {b["id"] for b in base["buckets"]}
    current = dict(initial if initial is not None else (instance.deployed or {}))
    rows = []
    results: list[Result] = []
    total = 0.0
    worst = Status.OPTIMAL
    rank = [
        Status.OPTIMAL,
        Status.FEASIBLE,
        Status.NO_SOLUTION,
        Status.INFEASIBLE,
        Status.UNBOUNDED,
        Status.ERROR,
    ]
    p = KIND.parse_params({"change_cost": float(change_cost), **params})
    for k, period in enumerate(periods):
        if isinstance(period, Period):
            rates, start, length = period.rates_rps, period.start_s, period.length_s
        else:
            rates, start, length = dict(period), 3600.0 * k, 3600.0
        unknown = sorted(set(rates) - known)
        if unknown:
            from ...errors import InstanceError

            raise InstanceError(f"unknown bucket {unknown[0]!r} in period {k}", "periods")
        data = dict(base)
        data["buckets"] = [
            {**b, "rate_rps": float(rates.get(b["id"], 0.0))} for b in base["buckets"]
        ]
        data["deployed"] = {t: int(n) for t, n in current.items() if n}
        inst = LlmServingInstance.from_dict(data)
        res = pipeline.solve(KIND, inst, "min_cost", options, p)
        results.append(res)
        if rank.index(res.status) > rank.index(worst):
            worst = res.status
        if res.status.has_solution:
            counts = dict(zip(res.instances["gpu_type"], res.instances["count"], strict=True))
            serving = float(res.info.get("serving_cost_per_hour", 0.0))
            total += serving * length / 3600.0 + float(res.info.get("change_cost", 0.0))
        else:
            counts = {g.type: int(current.get(g.type, 0)) for g in instance.gpus}
        for g in instance.gpus:
            n, before = int(counts.get(g.type, 0)), int(current.get(g.type, 0))
            rows.append(
                {
                    "period": k,
                    "start_s": float(start),
                    "gpu_type": g.type,
                    "count": n,
                    "started": max(0, n - before),
                    "stopped": max(0, before - n),
                    "cost_per_hour": n * g.cost_per_hour,
                }
            )
        current = {t: int(n) for t, n in counts.items()}
    return HourlyPlan(pd.DataFrame(rows), results, total, worst)
