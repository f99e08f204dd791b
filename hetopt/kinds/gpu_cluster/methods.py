"""The single-LP methods of the ``gpu_cluster`` kind: Gavel's max-min fairness and the
exact makespan LP, each with time sharing only or with space sharing (the instance's
``colocation`` list). One LP, solved once by interior point, then read back into the
``allocation`` and ``jobs`` tables (see ``models/gpu_cluster.md`` and
``models/gpu_cluster_space_sharing.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ...contract import UNSET, BuildMethodBase, Built, Outcome, SolveView
from ...errors import InstanceError
from ...status import Status
from . import formulations as F
from . import verify as V
from .data import GpuClusterInstance

if TYPE_CHECKING:
    from ...pipeline import Session
    from . import GpuClusterParams

DEFAULT_LP_METHOD = "ipm"
"""Measured on Gavel-generated instances (``benchmarks/bench_gpu_cluster.py``, notes on
issue 2): interior point is several times faster than dual simplex on these LPs from a
cold start."""


def require_steps(inst: GpuClusterInstance, objective: str = "makespan") -> None:
    """Every job needs ``steps_remaining`` for ``objective``."""
    for i, job in enumerate(inst.jobs):
        if job.steps_remaining is None:
            raise InstanceError(
                f"required for the {objective} objective (steps the job still has to run)",
                f"jobs[{i}].steps_remaining",
            )


def allocation_throughputs(inst: GpuClusterInstance, agnostic: bool) -> np.ndarray | None:
    """The throughputs the LP allocates with: ``None`` (the true ones) or the agnostic view."""
    return F.agnostic_throughputs(inst.arrays) if agnostic else None


class OneLP(BuildMethodBase):
    """``max_min_fairness`` or ``makespan`` as one LP: build, solve, extract.

    Subclasses choose the model (:meth:`model`); the objective decides how ``z`` is read
    back (``z / kappa`` or ``t_ref / z``). ``info`` reports the LP algorithm used.
    """

    lp_method = DEFAULT_LP_METHOD
    objective = "max_min_fairness"

    def model(self, inst: GpuClusterInstance, thr: np.ndarray | None, agnostic: bool) -> Built:
        raise NotImplementedError  # pragma: no cover - abstract

    def build(self, instance: GpuClusterInstance, params: GpuClusterParams) -> Built:
        if self.objective == "makespan":
            require_steps(instance)
        thr = allocation_throughputs(instance, params.agnostic)
        return self.model(instance, thr, params.agnostic)

    def run(self, session: Session, instance: GpuClusterInstance, params: Any) -> Outcome:
        outcome, _ = session.solve_method(self, instance, params)
        opts = session.options
        outcome.details["lp_method"] = (
            opts.lp_method if opts.lp_method != "auto" else DEFAULT_LP_METHOD
        )
        return outcome

    def describe(
        self, instance: GpuClusterInstance, params: GpuClusterParams, built: Built
    ) -> dict[str, Any]:
        return {"agnostic": bool(params.agnostic)}

    def extract(
        self,
        instance: GpuClusterInstance,
        params: GpuClusterParams,
        built: Built,
        solution: SolveView,
    ) -> Outcome:
        arr = instance.arrays
        m, layout = built.model, built.layout
        z = solution.value(m.z)
        allocation, jobs, thr_eff, info = self.tables(instance, built, solution)
        agnostic = params.agnostic
        status = termination = None
        value: float | None
        if self.objective == "max_min_fairness":
            p = arr.proportional_throughput()
            jobs["normalized_throughput"] = arr.scale * thr_eff / (arr.weight * p)
            if agnostic or solution.status != Status.OPTIMAL:
                # the true value of the allocation returned (an interrupted LP's z is only
                # a lower estimate of it)
                value = float(jobs["normalized_throughput"].min())
                key = "agnostic_lp_value" if agnostic else "lp_value"
                info[key] = z / layout.scale
            else:
                value = z / layout.scale
        else:
            t_ref = layout.scale
            with np.errstate(divide="ignore"):
                jobs["finish_s"] = np.where(
                    thr_eff > 0, arr.steps / np.where(thr_eff > 0, thr_eff, 1), np.inf
                )
            if z <= 1e-9:
                status, termination = Status.INFEASIBLE, "some job can make no progress"
                value = None
            elif agnostic or solution.status != Status.OPTIMAL:
                value = float(jobs["finish_s"].max())
                info["agnostic_lp_value" if agnostic else "lp_value"] = t_ref / z
            else:
                value = t_ref / z
        tables = {"allocation": allocation, "jobs": jobs}
        out = Outcome(value, tables, info, status, termination)
        if agnostic:
            # bound and gap refer to the agnostic LP, not to the true objective reported
            out.bound, out.gap = None, None
        elif value is not None and solution.status == Status.OPTIMAL:
            out.bound, out.gap = value, 0.0  # an LP solved to optimality
        else:
            out.bound, out.gap = UNSET, UNSET  # HiGHS's
        return out

    def tables(
        self, instance: GpuClusterInstance, built: Built, solution: SolveView
    ) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray, dict[str, Any]]:
        """The allocation table, the jobs table (time share, throughput), each job's
        effective throughput and the model's facts."""
        arr = instance.arrays
        pairs = built.layout.pairs
        x = solution.values(built.model.alloc, range(len(pairs)))
        x = np.where(np.abs(x) < 1e-10, 0.0, x)
        X = np.zeros((arr.num_jobs, len(arr.types)))
        X[pairs.job, pairs.type] = x
        allocation = allocation_table(arr, pairs, x)
        thr_eff = V.effective_throughput(arr, X)
        jobs = pd.DataFrame(
            {"job": arr.job_ids, "time_share": X.sum(axis=1), "throughput": thr_eff}
        )
        return allocation, jobs, thr_eff, {}


def allocation_table(arr: Any, pairs: F.Pairs, x: np.ndarray) -> pd.DataFrame:
    """``job, worker_type, fraction`` for every (job, type) pair with positive throughput."""
    return pd.DataFrame(
        {
            "job": [arr.job_ids[i] for i in pairs.job],
            "worker_type": [arr.types[t] for t in pairs.type],
            "fraction": x,
        }
    )


class MaxMinFairness(OneLP):
    """Gavel's heterogeneity-aware max-min fairness LP (time sharing)."""

    objective = "max_min_fairness"

    def model(self, inst: GpuClusterInstance, thr: np.ndarray | None, agnostic: bool) -> Built:
        return F.build_max_min_fairness(inst.arrays, thr)


class Makespan(OneLP):
    """The exact minimum-makespan LP (time sharing)."""

    objective = "makespan"

    def model(self, inst: GpuClusterInstance, thr: np.ndarray | None, agnostic: bool) -> Built:
        # agnostic: all types equal; steps are read as seconds of work at throughput 1
        return F.build_makespan(inst.arrays, thr)


class SpaceSharing(OneLP):
    """``max_min_fairness`` or ``makespan`` with space sharing (pair columns per symmetry
    group; see ``models/gpu_cluster_space_sharing.md``)."""

    def __init__(self, objective: str):
        self.objective = objective

    def model(self, inst: GpuClusterInstance, thr: np.ndarray | None, agnostic: bool) -> Built:
        from .colocation import build_colocation_model

        return build_colocation_model(inst, self.objective, thr, agnostic)

    def tables(
        self, instance: GpuClusterInstance, built: Built, solution: SolveView
    ) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray, dict[str, Any]]:
        from .colocation import expand_solution, pair_tables

        arr = instance.arrays
        m = built.model
        lay = built.layout
        X, pair_vals = expand_solution(
            arr,
            lay,
            solution.values(m.alloc, range(len(lay.pairs))),
            solution.values(m.pair, range(len(lay.group_cols))),
        )
        pairs = F.Pairs.of(arr)
        x = X[pairs.job, pairs.type]
        thr_eff = V.effective_throughput(arr, X)
        share = X.sum(axis=1)
        allocation, pair_thr, pair_share, n_pairs = pair_tables(
            arr, lay.co, pair_vals, allocation_table(arr, pairs, x)
        )
        thr_eff = thr_eff + pair_thr
        share = share + pair_share
        jobs = pd.DataFrame({"job": arr.job_ids, "time_share": share, "throughput": thr_eff})
        jobs["shared_time"] = pair_share
        info: dict[str, Any] = {
            "colocated_pairs": n_pairs,
            "pair_columns": len(lay.group_cols),  # in the LP (one per symmetry group)
            "pair_columns_per_job": len(lay.co.cols),
            "dominated_pairs_dropped": lay.co.dominated_pairs,
            "symmetry_groups": len(lay.reps),
        }
        return allocation, jobs, thr_eff, info
