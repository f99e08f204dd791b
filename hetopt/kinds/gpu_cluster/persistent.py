"""A ``gpu_cluster`` policy kept in one live HiGHS model across scheduler rounds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

import numpy as np

from ...errors import InstanceError, UsageError
from ...options import SolveOptions
from .data import GpuClusterInstance
from .formulations import agnostic_throughputs

if TYPE_CHECKING:
    from ...highs import HighsModel
    from ...result import Result
    from .methods import OneLP

__all__ = ["PersistentPolicy"]


class PersistentPolicy:
    """A ``gpu_cluster`` policy kept in one live HiGHS model for fast re-solves.

    Scheduler loops call :meth:`solve` every round and :meth:`update_workers` when the
    cluster changes (a node fails or joins); HiGHS restarts from the previous basis.
    The model is the kind's own (``max_min_fairness`` or ``makespan`` without space
    sharing), held by a :class:`~hetopt.pipeline.Session`; every :meth:`solve` returns
    a result built and verified by :func:`hetopt.pipeline.finish`.

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
        from ...pipeline import Session
        from . import KIND

        self.objective = KIND.resolve_objective(instance, objective)
        if self.objective not in ("max_min_fairness", "makespan") or instance.colocation:
            raise UsageError(
                "PersistentPolicy keeps max_min_fairness or makespan without space sharing "
                "in one live model; solve other objectives (or colocation) with hetopt.solve"
            )
        self.options = options or SolveOptions()
        self.agnostic = agnostic
        # one row per job (no symmetry groups): updates address jobs' rows and columns
        self._params = KIND.parse_params({"agnostic": agnostic, "symmetry": False})
        KIND.check(instance, self.objective, self._params)  # as hetopt.solve would
        self._instance0 = instance
        self.instance = instance
        self._method = cast("OneLP", KIND.method_for(self.objective, instance, self._params))
        self._session = Session(KIND, self.options)
        built = self._session.build(self._method, instance, self._params)
        self._live = self._session.open(built)
        self._transfer_s = self._session.timings["transfer_s"]
        self._p0 = instance.arrays.proportional_throughput(
            agnostic_throughputs(instance.arrays) if agnostic else None
        )
        self._ratio = np.ones(instance.arrays.num_jobs)

    @property
    def highs_model(self) -> HighsModel:
        return self._live.highs_model

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
        m, hm = self._live.model, self._live.highs_model
        for g in range(len(arr.types)):
            hm.set_row_bounds(m.c_capacity[g], None, float(arr.workers[g]))
        pairs = self._live.layout.pairs
        old = self.instance.arrays.allowed[pairs.job, pairs.type]
        fits = arr.allowed[pairs.job, pairs.type]
        for k in np.nonzero(old != fits)[0]:
            hm.set_col_bounds(m.alloc[int(k)], 0.0, 1.0 if fits[k] else 0.0)
        if self.objective == "max_min_fairness":
            thr = agnostic_throughputs(arr) if self.agnostic else None
            p = arr.proportional_throughput(thr)
            ratio = p / self._p0
            h = hm.highs
            zcol = self._live.compiled.column(m.z)
            for i in np.nonzero(np.abs(ratio - self._ratio) > 0)[0]:
                h.changeCoeff(hm.row(m.c_fair[int(i)]), zcol, -float(ratio[i]))
            self._ratio = ratio
        self.instance = inst

    def solve(self) -> Result:
        """Re-solve the live model (warm after the first call) and return its result."""
        from ...pipeline import finish
        from . import KIND

        session, method = self._session, self._method
        session.restart_clock()
        view = self._live.solve(self.options, method.lp_method)
        with session.timer("load_s"):
            outcome = session.resolve(method, self.instance, self._params, self._live.built, view)
        outcome.details = {"agnostic": self.agnostic, "warm": True, **outcome.details}
        return finish(KIND, self.instance, self.objective, outcome, session)
