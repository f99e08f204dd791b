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
from ...status import Status
from . import formulations as F
from . import verify as V
from .data import GpuClusterInstance
from .inputs import require_steps

if TYPE_CHECKING:
    from ...pipeline import Session
    from . import GpuClusterParams

DEFAULT_LP_METHOD = "ipm"
"""Measured on Gavel-generated instances (``benchmarks/bench_gpu_cluster.py``, notes on
issue 2): interior point is several times faster than dual simplex on these LPs from a
cold start."""


def allocation_throughputs(inst: GpuClusterInstance, agnostic: bool) -> np.ndarray | None:
    """The throughputs the LP allocates with: ``None`` (the true ones) or the agnostic view."""
    return F.agnostic_throughputs(inst.arrays) if agnostic else None


class OneLP(BuildMethodBase):
    """One LP (``max_min_fairness`` or ``makespan``): build, solve, extract.

    Two choices make a method: the model (:meth:`model` and :meth:`tables`: time sharing
    only, or with space sharing) and the objective (:meth:`read`: ``z / kappa`` of the
    max-min LP or ``t_ref / z`` of the makespan LP, mixed in by :class:`MaxMinRead` or
    :class:`MakespanRead`). ``info`` reports the LP algorithm used.
    """

    lp_method = DEFAULT_LP_METHOD
    needs_steps = False

    def model(
        self, inst: GpuClusterInstance, thr: np.ndarray | None, params: GpuClusterParams
    ) -> Built:
        raise NotImplementedError  # pragma: no cover - abstract

    def read(
        self,
        arr: Any,
        jobs: pd.DataFrame,
        thr_eff: np.ndarray,
        z: float,
        scale: float,
        exact: bool,
        info: dict[str, Any],
    ) -> tuple[float | None, Status | None, str | None]:
        """The objective value (and a status override) from ``z``; adds the per-job
        column to ``jobs`` and the LP's own value to ``info`` when ``z`` is not it."""
        raise NotImplementedError  # pragma: no cover - abstract

    def build(self, instance: GpuClusterInstance, params: GpuClusterParams) -> Built:
        if self.needs_steps:
            require_steps(instance)
        thr = allocation_throughputs(instance, params.agnostic)
        return self.model(instance, thr, params)

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
        out: dict[str, Any] = {"agnostic": bool(params.agnostic)}
        group_of = getattr(built.layout, "group_of", None)
        if isinstance(built.layout, F.MaxMinLayout) and group_of is not None:
            out["symmetry_groups"] = int(group_of.max()) + 1
        return out

    def extract(
        self,
        instance: GpuClusterInstance,
        params: GpuClusterParams,
        built: Built,
        solution: SolveView,
    ) -> Outcome:
        z = solution.value(built.model.z)
        allocation, jobs, thr_eff, info = self.tables(instance, built, solution)
        agnostic = params.agnostic
        optimal = solution.status == Status.OPTIMAL
        exact = optimal and not agnostic
        value, status, termination = self.read(
            instance.arrays, jobs, thr_eff, z, built.layout.scale, exact, info
        )
        if not exact and agnostic and "lp_value" in info:
            info["agnostic_lp_value"] = info.pop("lp_value")
        tables = {"allocation": allocation, "jobs": jobs}
        out = Outcome(value, tables, info, status, termination)
        if agnostic:
            # bound and gap refer to the agnostic LP, not to the true objective reported
            out.bound, out.gap = None, None
        elif value is not None and optimal:
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
        group_of = built.layout.group_of
        if group_of is None:
            X = np.zeros((arr.num_jobs, len(arr.types)))
            X[pairs.job, pairs.type] = x
            return (*time_share_tables(arr, X, pairs, x), {})
        # rows are symmetry groups: every job gets its group's shares
        Xg = np.zeros((int(group_of.max()) + 1, len(arr.types)))
        Xg[pairs.job, pairs.type] = x
        return (*time_share_tables(arr, Xg[group_of]), {})


def time_share_tables(
    arr: Any, X: np.ndarray, pairs: F.Pairs | None = None, x: np.ndarray | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """The allocation and jobs tables of a jobs x types time-share matrix ``X`` (and each
    job's effective throughput); ``pairs``/``x``: its pairs and their values if known."""
    if pairs is None or x is None:
        pairs = F.Pairs.of(arr)
        x = X[pairs.job, pairs.type]
    allocation = allocation_table(arr, pairs, x)
    thr_eff = V.effective_throughput(arr, X)
    jobs = pd.DataFrame({"job": arr.job_ids, "time_share": X.sum(axis=1), "throughput": thr_eff})
    return allocation, jobs, thr_eff


class MaxMinRead:
    """Max-min fairness: the value is ``z / kappa``, every job's normalised throughput
    goes to ``jobs``."""

    needs_steps = False

    def read(
        self,
        arr: Any,
        jobs: pd.DataFrame,
        thr_eff: np.ndarray,
        z: float,
        scale: float,
        exact: bool,
        info: dict[str, Any],
    ) -> tuple[float | None, Status | None, str | None]:
        p = arr.proportional_throughput()
        jobs["normalized_throughput"] = arr.scale * thr_eff / (arr.weight * p)
        if exact:
            return z / scale, None, None
        # the true value of the allocation returned (an interrupted LP's z is only a lower
        # estimate of it; the agnostic LP's z is its own objective)
        info["lp_value"] = z / scale
        return float(jobs["normalized_throughput"].min()), None, None

    def export_objective(
        self, instance: GpuClusterInstance, params: GpuClusterParams, built: Built
    ) -> None:
        """The exported objective is ``z / kappa``, the value itself."""
        from .export import check, max_min_objective

        check(instance, "max_min_fairness", params)
        max_min_objective(built.model, built.layout.scale)


class MakespanRead:
    """Makespan: the value is ``t_ref / z`` seconds, every job's finish time goes to
    ``jobs``; ``z = 0`` means some job cannot progress (infeasible)."""

    needs_steps = True

    def read(
        self,
        arr: Any,
        jobs: pd.DataFrame,
        thr_eff: np.ndarray,
        z: float,
        scale: float,
        exact: bool,
        info: dict[str, Any],
    ) -> tuple[float | None, Status | None, str | None]:
        with np.errstate(divide="ignore"):
            jobs["finish_s"] = np.where(
                thr_eff > 0, arr.steps / np.where(thr_eff > 0, thr_eff, 1), np.inf
            )
        if z <= 1e-9:
            return None, Status.INFEASIBLE, "some job can make no progress"
        if exact:
            return scale / z, None, None
        info["lp_value"] = scale / z
        return float(jobs["finish_s"].max()), None, None

    def export_objective(
        self, instance: GpuClusterInstance, params: GpuClusterParams, built: Built
    ) -> None:
        """The exported model is the LP in time variables (``tau = x * T``, minimise the
        makespan ``T`` in seconds; :func:`.export.time_model`)."""
        from .export import check, replace_model, time_model

        check(instance, "makespan", params)
        layout = built.layout
        steps = instance.arrays.steps
        reps = getattr(layout, "reps", None)  # space sharing: one row per group
        if reps is None and layout.group_of is not None:
            _, reps = np.unique(layout.group_of, return_index=True)
        row_steps = steps if reps is None else steps[reps]
        model = time_model(built.model, layout.scale, "c_progress", row_steps)
        replace_model(built.model, model)


def allocation_table(arr: Any, pairs: F.Pairs, x: np.ndarray) -> pd.DataFrame:
    """``job, worker_type, fraction`` for every (job, type) pair with positive throughput."""
    return pd.DataFrame(
        {
            "job": np.asarray(arr.job_ids, dtype=object)[pairs.job],
            "worker_type": np.asarray(arr.types, dtype=object)[pairs.type],
            "fraction": x,
        }
    )


class ColumnsRun(OneLP):
    """A one-LP method that may instead generate columns (:mod:`.colgen`, parameter
    ``lp_strategy``)."""

    objective_name = "max_min_fairness"

    def run(self, session: Session, instance: GpuClusterInstance, params: Any) -> Outcome:
        if not self.by_columns(instance, params):
            return super().run(session, instance, params)
        from .colgen import solve_by_columns

        outcome = solve_by_columns(session, instance, params, self.objective_name)
        opts = session.options
        outcome.details["lp_method"] = (
            opts.lp_method if opts.lp_method != "auto" else DEFAULT_LP_METHOD
        )
        return outcome

    @classmethod
    def by_columns(cls, instance: GpuClusterInstance, params: Any) -> bool:
        """Column generation: asked for, or ``auto`` and the LP is large (never agnostic)."""
        if params.agnostic or params.lp_strategy == "monolithic":
            return False
        if params.lp_strategy == "column_generation":
            return True
        from .colgen import AUTO_MIN_PAIRS, wants_columns

        arr = instance.arrays
        pairs = int(arr.allowed.sum())
        if pairs < AUTO_MIN_PAIRS:
            return False
        if params.symmetry:
            _, reps, _ = F.job_groups(arr, cls.objective_name == "makespan")
            pairs = int(arr.allowed[reps].sum())
            return wants_columns(pairs, len(reps))
        return wants_columns(pairs, arr.num_jobs)


class MaxMinFairness(MaxMinRead, ColumnsRun):
    """Gavel's heterogeneity-aware max-min fairness LP (time sharing): one monolithic LP,
    or by column generation."""

    def model(
        self, inst: GpuClusterInstance, thr: np.ndarray | None, params: GpuClusterParams
    ) -> Built:
        if params.symmetry and not params.agnostic:  # agnostic: the true value is not unique
            return F.build_grouped(inst.arrays, "max_min_fairness", thr)
        return F.build_max_min_fairness(inst.arrays, thr)


class Makespan(MakespanRead, ColumnsRun):
    """The exact minimum-makespan LP (time sharing): one monolithic LP, or by column
    generation."""

    objective_name = "makespan"

    def model(
        self, inst: GpuClusterInstance, thr: np.ndarray | None, params: GpuClusterParams
    ) -> Built:
        # agnostic: all types equal; steps are read as seconds of work at throughput 1
        if params.symmetry and not params.agnostic:  # agnostic: the true value is not unique
            return F.build_grouped(inst.arrays, "makespan", thr)
        return F.build_makespan(inst.arrays, thr)


class SpaceSharing(OneLP):
    """One LP with space sharing: pair columns per symmetry group (see
    ``models/gpu_cluster_space_sharing.md``)."""

    objective = "max_min_fairness"

    def model(
        self, inst: GpuClusterInstance, thr: np.ndarray | None, params: GpuClusterParams
    ) -> Built:
        from .colocation import build_colocation_model

        return build_colocation_model(inst, self.objective, thr, params.agnostic)

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


class MaxMinSpaceSharing(MaxMinRead, SpaceSharing):
    """Max-min fairness with space sharing."""

    objective = "max_min_fairness"


class MakespanSpaceSharing(MakespanRead, SpaceSharing):
    """Makespan with space sharing."""

    objective = "makespan"
