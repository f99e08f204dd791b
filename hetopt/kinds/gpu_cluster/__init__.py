"""The ``gpu_cluster`` kind: Gavel's heterogeneity-aware GPU-cluster policies.

Decision ``alloc[i,t]``: fraction of wall-clock time job ``i`` runs on GPU type ``t``.
See ``models/gpu_cluster.md`` for the mathematics.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyomo.environ as pyo

from ...errors import InstanceError
from ...highs import CompiledModel, HighsModel, RawSolution
from ...options import SolveOptions
from ...result import Result, Verification
from ...status import Status
from ..base import Extracted, Kind, Objective, UsageError, finish, run_model
from . import formulations as F
from . import verify as V
from .data import ClusterArrays, GpuClusterInstance, GpuJob
from .generate import generate
from .inputs import check as check_inputs
from .trace import read_gavel_trace, trace_to_instance

__all__ = [
    "KIND",
    "GpuClusterInstance",
    "GpuClusterKind",
    "GpuJob",
    "PersistentPolicy",
    "generate",
    "read_gavel_trace",
    "trace_to_instance",
]

# Measured on Gavel-generated instances (benchmarks/bench_gpu_cluster.py, notes on issue 2):
# interior point is several times faster than dual simplex on these LPs from a cold start.
DEFAULT_LP_METHOD = "ipm"


def agnostic_throughputs(arr: ClusterArrays) -> np.ndarray:
    """The heterogeneity-agnostic view: every usable GPU type is equal.

    Each job runs at one throughput on every type it can use (its mean over those
    types). For max-min fairness this is the same as treating every throughput as 1
    (the ratio ``thr / p`` does not depend on the job's constant); for makespan it keeps
    steps and seconds consistent instead of hard-coding one type (Gavel uses V100's).
    """
    usable = arr.thr > 0
    mean = arr.thr.sum(axis=1) / usable.sum(axis=1)
    return usable * mean[:, None]


def _check_flag(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise UsageError(f"{name} must be true or false, got {value!r}")


def _require_steps(inst: GpuClusterInstance) -> None:
    for i, job in enumerate(inst.jobs):
        if job.steps_remaining is None:
            raise InstanceError(
                "required for the makespan objective (steps the job still has to run)",
                f"jobs[{i}].steps_remaining",
            )


class GpuClusterKind(Kind):
    name = "gpu_cluster"
    description = "GPU cluster with several accelerator types (Gavel's policies)"
    objectives = (
        Objective(
            "max_min_fairness",
            "Gavel's heterogeneity-aware LAS: maximise the smallest "
            "normalised throughput scale_factor*thr/(weight*p)",
            "normalised throughput",
            "max",
        ),
        Objective(
            "makespan", "exact minimum time to finish every job's steps_remaining", "s", "min"
        ),
        Objective(
            "max_min_fairness_water_filling",
            "leximin (hierarchical) max-min fairness over the same normalised values, "
            "with entity weights; exact by LPs (no MILP)",
            "normalised throughput",
            "max",
        ),
        Objective(
            "finish_time_fairness",
            "Themis: minimise the largest ratio of finish time to the finish time under an "
            "isolated 1/N share (bisection over LPs)",
            "ratio",
            "min",
        ),
        Objective(
            "max_total_throughput",
            "maximise the sum of weight * throughput / fastest throughput (normalised)",
            "normalised throughput",
            "max",
        ),
        Objective(
            "min_cost",
            "maximise normalised throughput per dollar (cost_per_hour), meeting SLOs "
            "(deadline_s) and reporting any that cannot be met",
            "normalised throughput per $/h",
            "max",
        ),
    )
    instance_model = GpuClusterInstance
    params = {
        "agnostic": "allocate as if every GPU type were equal (heterogeneity-agnostic baseline)"
    }

    def build(
        self, instance: GpuClusterInstance, objective: str, agnostic: bool = False
    ) -> pyo.ConcreteModel:
        _check_flag("agnostic", agnostic)
        arr = instance.arrays
        thr = agnostic_throughputs(arr) if agnostic else None
        if instance.colocation and objective in ("max_min_fairness", "makespan"):
            from .colocation import build_colocation_model

            if objective == "makespan":
                _require_steps(instance)
            return build_colocation_model(instance, objective, thr, agnostic)
        if instance.colocation:
            from ..base import UsageError

            raise UsageError(
                f"objective {objective!r} does not model space sharing; use max_min_fairness "
                "or makespan, or drop the instance's colocation list"
            )
        if objective == "max_min_fairness":
            return F.build_max_min_fairness(arr, thr)
        if objective == "makespan":
            _require_steps(instance)
            if agnostic:
                # all types equal: steps are read as seconds of work at throughput 1
                return F.build_makespan(arr, thr)
            return F.build_makespan(arr)
        from . import policies as P
        from . import policy_models as PM

        thr_a = agnostic_throughputs(arr) if agnostic else arr.thr
        if objective == "max_min_fairness_water_filling":  # the first level's LP
            return F.build_max_min_fairness(arr, thr_a, P.entity_weights(instance))
        if objective == "finish_time_fairness":  # the feasibility LP at ratio 1
            P.require_steps(instance, objective)
            return PM.build_finish_time_fairness(arr, thr_a)
        if objective == "max_total_throughput":
            return PM.build_max_total_throughput(arr, thr_a)
        if objective == "min_cost":
            return PM.build_min_cost(arr, thr_a, P._costs(instance), P.slo_need(instance))
        raise KeyError(objective)

    def solve(
        self,
        instance: GpuClusterInstance,
        objective: str,
        options: SolveOptions,
        agnostic: bool = False,
    ) -> Result:
        _check_flag("agnostic", agnostic)
        from . import policies as P

        self.check(instance, objective, None)  # what validate checks, in the same order
        multi = {
            "max_min_fairness_water_filling": P.solve_water_filling,
            "finish_time_fairness": P.solve_finish_time_fairness,
            "max_total_throughput": P.solve_max_total_throughput,
            "min_cost": P.solve_min_cost,
        }
        if objective in multi:
            if instance.colocation:
                self.build(instance, objective, agnostic)  # raises UsageError
            return multi[objective](self, instance, options, agnostic)
        result, _ = self.solve_persistent(instance, objective, options, agnostic)
        return result

    def solve_persistent(
        self,
        instance: GpuClusterInstance,
        objective: str,
        options: SolveOptions,
        agnostic: bool = False,
    ) -> tuple[Result, HighsModel]:
        if objective == "makespan":
            _require_steps(instance)
        holder: dict[str, pyo.ConcreteModel] = {}

        def build() -> pyo.ConcreteModel:
            holder["m"] = self.build(instance, objective, agnostic)
            return holder["m"]

        def extract(cm: CompiledModel, raw: RawSolution) -> Extracted:
            return self.extract(instance, objective, holder["m"], cm, raw, agnostic)

        info = {
            "agnostic": bool(agnostic),
            "lp_method": options.lp_method if options.lp_method != "auto" else DEFAULT_LP_METHOD,
        }
        result, hm = run_model(
            self, instance, objective, options, build, extract, DEFAULT_LP_METHOD, info
        )
        if agnostic and result.status.has_solution:
            # bound and gap refer to the agnostic LP, not to the true objective reported
            from dataclasses import replace

            result = replace(result, bound=None, gap=None)
        return result, hm

    def extract(
        self,
        instance: GpuClusterInstance,
        objective: str,
        m: pyo.ConcreteModel,
        cm: CompiledModel,
        raw: RawSolution,
        agnostic: bool = False,
        z_scale: float = 1.0,
    ) -> Extracted:
        arr = instance.arrays
        z = raw.value(cm, m.z)
        if hasattr(m, "_colocation"):
            from .colocation import expand_solution, pair_tables

            X, pair_vals = expand_solution(
                arr,
                m,
                raw.values(cm, m.alloc, range(len(m._pairs))),
                raw.values(cm, m.pair, range(len(m._group_cols))),
            )
            pairs = F.Pairs.of(arr)
            x = X[pairs.job, pairs.type]
        else:
            pairs = m._pairs
            x = raw.values(cm, m.alloc, range(len(pairs)))
            x = np.where(np.abs(x) < 1e-10, 0.0, x)
            X = np.zeros((arr.num_jobs, len(arr.types)))
            X[pairs.job, pairs.type] = x
        thr_eff = V.effective_throughput(arr, X)
        share = X.sum(axis=1)
        allocation = pd.DataFrame(
            {
                "job": [arr.job_ids[i] for i in pairs.job],
                "worker_type": [arr.types[t] for t in pairs.type],
                "fraction": x,
            }
        )
        if hasattr(m, "_colocation"):
            allocation, pair_thr, pair_share, n_pairs = pair_tables(
                arr, m._colocation, pair_vals, allocation
            )
            thr_eff = thr_eff + pair_thr
            share = share + pair_share
        jobs = pd.DataFrame({"job": arr.job_ids, "time_share": share, "throughput": thr_eff})
        info: dict[str, Any] = {}
        if hasattr(m, "_colocation"):
            jobs["shared_time"] = pair_share
            info["colocated_pairs"] = n_pairs
            info["pair_columns"] = len(m._group_cols)  # in the LP (one per symmetry group)
            info["pair_columns_per_job"] = len(m._colocation.cols)
            info["dominated_pairs_dropped"] = m._colocation.dominated_pairs
            info["symmetry_groups"] = len(m._groups[1])
        status = None
        termination = None
        if objective == "max_min_fairness":
            p = arr.proportional_throughput()
            jobs["normalized_throughput"] = arr.scale * thr_eff / (arr.weight * p)
            if agnostic or raw.status != Status.OPTIMAL:
                # the true value of the allocation returned (an interrupted LP's z is only
                # a lower estimate of it)
                value = float(jobs["normalized_throughput"].min())
                key = "agnostic_lp_value" if agnostic else "lp_value"
                info[key] = z / float(pyo.value(m.kappa)) * z_scale
            else:
                value = z / float(pyo.value(m.kappa)) * z_scale
        else:
            t_ref = float(pyo.value(m.t_ref))
            with np.errstate(divide="ignore"):
                jobs["finish_s"] = np.where(
                    thr_eff > 0, arr.steps / np.where(thr_eff > 0, thr_eff, 1), np.inf
                )
            if z <= 1e-9:
                status, termination = Status.INFEASIBLE, "some job can make no progress"
                value = None
            elif agnostic or raw.status != Status.OPTIMAL:
                value = float(jobs["finish_s"].max())
                info["agnostic_lp_value" if agnostic else "lp_value"] = t_ref / z
            else:
                value = t_ref / z
        bound = gap = None
        if value is not None and raw.status == Status.OPTIMAL:
            bound, gap = value, 0.0  # an LP solved to optimality: the bound is the value
        return Extracted(
            value, {"allocation": allocation, "jobs": jobs}, info, status, termination, bound, gap
        )

    def check(self, instance: GpuClusterInstance, objective: str, params: Any) -> None:
        """What each objective needs from the instance (:func:`.inputs.check`), and
        space sharing only for ``max_min_fairness`` and ``makespan``."""
        if instance.colocation and objective not in ("max_min_fairness", "makespan"):
            self.build(instance, objective)  # raises the UsageError solve raises
        check_inputs(instance, objective)

    def verify(self, instance: GpuClusterInstance, result: Result) -> Verification:
        if "allocation" not in result.tables:
            return Verification(ok=False, violations=("the result has no allocation table",))
        return V.verify(
            instance,
            result.objective,
            result.objective_value,
            result.tables["allocation"],
            result.tables.get("jobs"),
        )


KIND = GpuClusterKind()


class PersistentPolicy:
    """A ``gpu_cluster`` policy kept in one live HiGHS model for fast re-solves.

    Scheduler loops call :meth:`solve` every round and :meth:`update_workers` when the
    cluster changes (a node fails or joins); HiGHS restarts from the previous basis.

    Examples
    --------
    >>> policy = PersistentPolicy(instance, "max_min_fairness")   # doctest: +SKIP
    >>> first = policy.solve()                                    # doctest: +SKIP
    >>> policy.update_workers({"v100": 32})                       # doctest: +SKIP
    >>> second = policy.solve()  # warm start                      # doctest: +SKIP
    """

    def __init__(
        self,
        instance: GpuClusterInstance,
        objective: str = "max_min_fairness",
        options: SolveOptions | None = None,
        agnostic: bool = False,
    ):
        self.objective = KIND.resolve_objective(instance, objective)
        if self.objective not in ("max_min_fairness", "makespan") or instance.colocation:
            from ..base import UsageError

            raise UsageError(
                "PersistentPolicy keeps max_min_fairness or makespan without space sharing "
                "in one live model; solve other objectives (or colocation) with hetopt.solve"
            )
        self.options = options or SolveOptions()
        self.agnostic = agnostic
        self._instance0 = instance
        self.instance = instance
        self._model = KIND.build(instance, self.objective, agnostic)
        import time

        from ...highs import compile_model

        t0 = time.perf_counter()
        self._cm = compile_model(self._model)
        self._hm = HighsModel(self._cm)
        self._transfer_s = time.perf_counter() - t0
        self._p0 = instance.arrays.proportional_throughput(
            agnostic_throughputs(instance.arrays) if agnostic else None
        )
        self._ratio = np.ones(instance.arrays.num_jobs)

    @property
    def highs_model(self) -> HighsModel:
        return self._hm

    def update_workers(self, workers: Mapping[str, int]) -> None:
        """Change worker counts (types must already exist in the instance)."""
        new = dict(self.instance.workers)
        for t, n in workers.items():
            if t not in new:
                raise InstanceError(
                    f"unknown worker type {t!r}; the cluster has: {', '.join(new)}", f"workers.{t}"
                )
            new[t] = n
        inst = GpuClusterInstance.from_dict({**self.instance.to_dict(), "workers": new})
        arr = inst.arrays
        m, hm = self._model, self._hm
        for g in range(len(arr.types)):
            hm.set_row_bounds(m.c_capacity[g], None, float(arr.workers[g]))
        pairs: F.Pairs = m._pairs
        old = self.instance.arrays.allowed[pairs.job, pairs.type]
        fits = arr.allowed[pairs.job, pairs.type]
        for k in np.nonzero(old != fits)[0]:
            hm.set_col_bounds(m._alloc_list[k], 0.0, 1.0 if fits[k] else 0.0)
        if self.objective == "max_min_fairness":
            thr = agnostic_throughputs(arr) if self.agnostic else None
            p = arr.proportional_throughput(thr)
            ratio = p / self._p0
            h = hm.highs
            zcol = self._cm.column(m.z)
            for i in np.nonzero(np.abs(ratio - self._ratio) > 0)[0]:
                h.changeCoeff(hm.row(m.c_fair[int(i)]), zcol, -float(ratio[i]))
            self._ratio = ratio
        self.instance = inst

    def solve(self) -> Result:
        import time

        t0 = time.perf_counter()
        raw = self._hm.solve(self.options, DEFAULT_LP_METHOD)
        t1 = time.perf_counter()

        def extract(cm: CompiledModel, r: RawSolution) -> Extracted:
            return KIND.extract(self.instance, self.objective, self._model, cm, r, self.agnostic)

        res = finish(
            KIND,
            self.instance,
            self.objective,
            self._cm,
            raw,
            extract,
            {"agnostic": self.agnostic, "warm": True},
        )
        from dataclasses import replace

        t2 = time.perf_counter()
        timings = {"build_s": 0.0, "transfer_s": 0.0, "solve_s": raw.solve_s, "load_s": t2 - t1}
        if self.agnostic and res.status.has_solution:
            res = replace(res, bound=None, gap=None)
        return replace(res, timings=timings, runtime_s=t2 - t0)
