"""A ``gpu_cluster`` policy kept in one live HiGHS model across scheduler rounds."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from typing import TYPE_CHECKING, Annotated, Any, cast

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ...contract import Built
from ...errors import InstanceError, UsageError
from ...instance import validation_to_instance_error
from ...options import SolveOptions
from .data import ClusterArrays, GpuClusterInstance, GpuJob
from .formulations import agnostic_throughputs
from .maxmin import INF, MaxMinLayout, Pairs

if TYPE_CHECKING:
    from ...highs import HighsModel
    from ...result import Result
    from .methods import OneLP

__all__ = ["PersistentPolicy"]


COMPACT_SHARE = 0.0
"""Share of the live model's rows that removed jobs may hold before they are deleted
(``PersistentPolicy.compact_share``). 0: deleted at once. Measured at 2,000 jobs with
2 % churn per round (``bench_persistent_churn``): deleting them at once (rows and
columns gone, the basis restored) re-solves in ~25 dual simplex iterations; keeping them
switched off (columns fixed at 0, rows free) costs ~100 (the removed jobs' basic columns
are pivoted out one by one), more than the basis restore saves."""


class _NewJobs(BaseModel):
    """Validates added job records with the kind's own record model (field paths
    ``jobs[i]....``, ``i`` the position in the batch)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    jobs: list[GpuJob]


_WORKERS = TypeAdapter(
    dict[str, Annotated[int, Field(ge=0, strict=True)]], config=ConfigDict(strict=True)
)


@dataclass(frozen=True)
class _Names:
    """Stand-ins for the Pyomo variables in :class:`_View` (the live model outgrew the
    Pyomo model it was compiled from)."""

    z: str = "z"
    alloc: str = "alloc"


class _View:
    """A HiGHS solution as the kind's extractor reads it (``value(m.z)``,
    ``values(m.alloc, ...)``), over the live columns."""

    def __init__(self, raw: Any, options: SolveOptions, alloc: np.ndarray, zcol: int):
        self.raw, self.options = raw, options
        self._alloc, self._zcol = alloc, zcol

    @property
    def status(self) -> Any:
        return self.raw.status

    def value(self, var: Any, default: float = 0.0) -> float:
        x = self.raw.x
        return default if x is None else float(x[self._zcol])

    def values(self, var: Any, keys: Iterable[Any] | None = None) -> np.ndarray:
        x = self.raw.x
        if x is None:
            return np.zeros(len(self._alloc))
        ok = self._alloc >= 0
        out = np.zeros(len(self._alloc))
        out[ok] = np.asarray(x)[self._alloc[ok]]
        return out


def _job_problem(i: int, job: GpuJob, workers: Mapping[str, int], instance: Any) -> None:
    """The per-job checks of :class:`GpuClusterInstance` (and of the kind's ``check``)
    for one time-sharing job, as one :class:`InstanceError` naming ``jobs[i]...``."""
    if job.elastic is not None:
        raise InstanceError(
            "PersistentPolicy allocates time shares to fixed-size jobs; an elastic job is "
            "scheduled by max_progress (or give it throughput and scale_factor instead)",
            f"jobs[{i}].elastic",
        )
    if job.throughput is None:
        raise InstanceError(
            "required field is missing (or give the job's options in elastic)",
            f"jobs[{i}].throughput",
        )
    for t in job.throughput:
        if t not in workers:
            raise InstanceError(
                f"unknown worker type {t!r}; the cluster has: {', '.join(workers)}",
                f"jobs[{i}].throughput.{t}",
            )
    sf = job.scale_factor
    if not any(v > 0 and workers[t] >= sf for t, v in job.throughput.items()):
        raise InstanceError(
            f"job {job.id!r} can run on no worker type: it needs a positive throughput on a "
            f"type with at least scale_factor={sf} GPUs",
            f"jobs[{i}]",
        )
    if job.current_workers is not None and job.current_workers != sf:
        raise InstanceError(
            f"a job that is not elastic runs on scale_factor={sf} GPUs, got {job.current_workers}",
            f"jobs[{i}].current_workers",
        )
    ents = instance.entity_weights
    if ents is not None and job.entity is not None and job.entity not in ents:
        raise InstanceError(
            f"entity {job.entity!r} has no weight in entity_weights", f"jobs[{i}].entity"
        )


def _restore_basis(h: Any, col_status: list[Any], row_status: list[Any]) -> None:
    """Give HiGHS back the basis of the rows and columns kept by a deletion (HiGHS drops
    it): as many basic variables as rows, by making row slacks basic or nonbasic; HiGHS
    repairs a singular basis itself, so the next solve is a warm dual simplex."""
    import highspy

    S = highspy.HighsBasisStatus
    excess = col_status.count(S.kBasic) + row_status.count(S.kBasic) - len(row_status)
    if excess > 0:  # too many basic: slacks of rows leave the basis (at their finite bound)
        lo = h.getLp().row_lower_
        for r, st in enumerate(row_status):
            if excess == 0:
                break
            if st == S.kBasic:
                row_status[r] = S.kLower if np.isfinite(lo[r]) else S.kUpper
                excess -= 1
    elif excess < 0:  # too few: slacks of rows enter it
        for r, st in enumerate(row_status):
            if excess == 0:
                break
            if st != S.kBasic:
                row_status[r] = S.kBasic
                excess += 1
    b = highspy.HighsBasis()
    b.col_status = col_status
    b.row_status = row_status
    b.valid = True
    h.setBasis(b)


class PersistentPolicy:
    """A ``gpu_cluster`` policy kept in one live HiGHS model for fast re-solves.

    Scheduler loops call :meth:`solve` every round; between rounds they change the
    model in place, and HiGHS restarts from the previous basis:

    * :meth:`update_workers` when the cluster changes (a node fails or joins, a new GPU
      type arrives);
    * :meth:`add_jobs` / :meth:`remove_jobs` when jobs arrive and finish;
    * :meth:`update_jobs` when a job's ``steps_remaining``, ``weight`` or
      ``throughput`` changes.

    Each change edits only the rows and columns it touches (``addCols``/``addRows``,
    ``deleteCols``/``deleteRows``, ``changeCoeff``, bounds) and validates only the new
    or changed records (with the kind's own record model, errors naming
    ``jobs[i].field`` of the batch given); the instance is never re-validated whole.
    The model is the kind's own (``max_min_fairness`` or ``makespan`` without space
    sharing, one row per job: no symmetry groups), held by a
    :class:`~hetopt.pipeline.Session`; every :meth:`solve` returns a result built and
    verified by :func:`hetopt.pipeline.finish` against :attr:`instance`, the changed
    instance, whose optimum is the one a cold :func:`hetopt.solve` of it finds. The
    scale of ``z`` (``kappa``, or ``t_ref`` for makespan) stays the first instance's:
    the objective's value does not depend on it.

    Removed jobs' rows and columns are deleted from HiGHS at once and the basis is given
    back (``compact_share = 0``, the default); with ``compact_share > 0`` they are only
    switched off until they make up that share of the rows (:meth:`compact` deletes
    them now). :attr:`instance` is always the changed instance.

    Examples
    --------
    >>> policy = PersistentPolicy(instance, "max_min_fairness")   # doctest: +SKIP
    >>> first = policy.solve()                                    # doctest: +SKIP
    >>> policy.update_workers({"v100": 32})                       # doctest: +SKIP
    >>> policy.remove_jobs(["job-7"])                             # doctest: +SKIP
    >>> policy.add_jobs([{"id": "job-9", "throughput": {"v100": 2.5}}])  # doctest: +SKIP
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
        self._index_live_model(built)

    # ------------------------------------------------------------------ bookkeeping
    def _index_live_model(self, built: Built) -> None:
        """Where each job's rows and columns are in HiGHS (current job order)."""
        arr = self.instance.arrays
        m, hm = built.model, self._live.highs_model
        layout = built.layout
        n, T = arr.num_jobs, len(arr.types)
        self._scale = float(layout.scale)
        col = np.full((n, T), -1, dtype=np.int64)
        pairs = layout.pairs
        col[pairs.job, pairs.type] = self._live.compiled.columns_of(m.alloc, range(len(pairs)))
        self._col = col
        self._time_row = np.array([hm.row(m.c_time[i]) for i in range(n)], dtype=np.int64)
        value_rows = getattr(m, layout.value_rows)
        self._value_row = np.array([hm.row(value_rows[i]) for i in range(n)], dtype=np.int64)
        self._cap_row = np.array([hm.row(m.c_capacity[t]) for t in range(T)], dtype=np.int64)
        self._zcol = int(self._live.compiled.column(m.z))
        # rows' x coefficients were written with p_ref; z's coefficient is -p / p_ref
        self._p_ref = self._p(arr)
        self._zcoef = np.ones(n)
        # rows and columns of removed jobs: switched off (bounds), deleted in batches
        self._dead_cols: list[np.ndarray] = []
        self._dead_rows: list[np.ndarray] = []
        self.compact_share = COMPACT_SHARE

    def _alloc_thr(self, arr: ClusterArrays) -> np.ndarray:
        return agnostic_throughputs(arr) if self.agnostic else arr.thr

    def _p(self, arr: ClusterArrays) -> np.ndarray:
        return arr.proportional_throughput(self._alloc_thr(arr))

    def _coefficients(self, arr: ClusterArrays, rows: np.ndarray) -> np.ndarray:
        """The value row's ``x`` coefficients of jobs ``rows`` (rows x types), with the
        current normalisation."""
        thr = self._alloc_thr(arr)[rows]
        if self.objective == "makespan":
            return thr * (self._scale / arr.steps[rows])[:, None]
        p = arr.proportional_throughput(self._alloc_thr(arr))[rows]
        return thr * (self._scale * arr.scale[rows] / (arr.weight[rows] * p))[:, None]

    def _set_instance(
        self, jobs: list[GpuJob], workers: dict[str, int], arr: ClusterArrays
    ) -> None:
        """The changed instance, not re-validated (its records were, one by one)."""
        inst = self.instance
        fields = {k: getattr(inst, k) for k in type(inst).model_fields}
        fields.update(jobs=jobs, workers=workers)
        new = GpuClusterInstance.model_construct(inst.model_fields_set, **fields)
        new.__dict__["arrays"] = arr  # the cached numpy view, kept in step
        self.instance = new

    @property
    def highs_model(self) -> HighsModel:
        """The live HiGHS model (its ``compiled`` view describes the first instance's
        model only: after job changes, address rows and columns through this class)."""
        return self._live.highs_model

    @property
    def num_jobs(self) -> int:
        return self.instance.arrays.num_jobs

    # ------------------------------------------------------------------ HiGHS edits
    def _add_columns(self, rows: np.ndarray, types: np.ndarray, arr: ClusterArrays) -> None:
        """Columns for the pairs ``(rows[k], types[k])``: 1 in ``c_time``, the job's GPUs
        in ``c_capacity``, its coefficient in its value row; upper bound 1 if allowed."""
        if len(rows) == 0:
            return
        h = self.highs_model.highs
        start = h.getNumCol()
        k = len(rows)
        coef = self._coefficients(arr, rows)[np.arange(k), types] if k else np.zeros(0)
        p_now = self._p(arr)[rows]
        if self.objective == "max_min_fairness":
            # the row's x coefficients are scaled to its p_ref; z carries p / p_ref
            coef = coef * p_now / self._p_ref[rows]
        upper = arr.allowed[rows, types].astype(float)
        idx = np.empty(3 * k, dtype=np.int32)
        idx[0::3] = self._time_row[rows]
        idx[1::3] = self._cap_row[types]
        idx[2::3] = self._value_row[rows]
        val = np.empty(3 * k)
        val[0::3] = 1.0
        val[1::3] = arr.scale[rows]
        val[2::3] = coef
        h.addCols(
            k,
            np.zeros(k),
            np.zeros(k),
            upper,
            3 * k,
            np.arange(0, 3 * k, 3, dtype=np.int32),
            idx,
            val,
        )
        self._col[rows, types] = start + np.arange(k)

    def _retire(self, cols: np.ndarray, rows: np.ndarray) -> None:
        """Switch columns (bounds 0) and rows (free) off: the basis and HiGHS's
        factorisation stay valid, so the next solve is a hot dual simplex. They are
        deleted once they make up ``compact_share`` of the rows."""
        h = self.highs_model.highs
        cols = cols[cols >= 0].astype(np.int32)
        rows = rows[rows >= 0].astype(np.int32)
        if len(cols):
            h.changeColsBounds(len(cols), cols, np.zeros(len(cols)), np.zeros(len(cols)))
            self._dead_cols.append(cols)
        if len(rows):
            k = len(rows)
            h.changeRowsBounds(k, rows, np.full(k, -INF), np.full(k, INF))
            self._dead_rows.append(rows)
        dead = sum(len(r) for r in self._dead_rows)
        if dead > self.compact_share * h.getNumRow():
            self.compact()

    def compact(self) -> None:
        """Delete the rows and columns of removed jobs from the live model now (done
        by itself once they are ``compact_share`` of the rows; the basis is kept)."""
        if not self._dead_cols and not self._dead_rows:
            return
        empty = np.zeros(0, dtype=np.int64)
        cols = np.concatenate([empty, *self._dead_cols])
        rows = np.concatenate([empty, *self._dead_rows])
        self._dead_cols, self._dead_rows = [], []
        self._delete(cols, rows)

    def _delete(self, cols: np.ndarray, rows: np.ndarray) -> None:
        """Delete HiGHS columns and rows and renumber the ones kept."""
        h = self.highs_model.highs
        cols = np.unique(cols[cols >= 0]).astype(np.int32)
        rows = np.unique(rows[rows >= 0]).astype(np.int32)
        basis = h.getBasis()
        keep_cols = keep_rows = None
        if basis.valid:
            keep_cols = np.ones(h.getNumCol(), dtype=bool)
            keep_cols[cols] = False
            keep_rows = np.ones(h.getNumRow(), dtype=bool)
            keep_rows[rows] = False
            col_status = list(compress(basis.col_status, keep_cols))
            row_status = list(compress(basis.row_status, keep_rows))
        if len(cols):
            h.deleteCols(len(cols), cols)
        if len(rows):
            h.deleteRows(len(rows), rows)
        if keep_cols is not None:
            _restore_basis(h, col_status, row_status)

        def shift(a: np.ndarray, gone: np.ndarray) -> np.ndarray:
            out = a - np.searchsorted(gone, a)
            return np.where(a >= 0, out, -1)

        self._col = shift(self._col, cols)
        self._zcol = int(shift(np.array([self._zcol]), cols)[0])
        self._time_row = shift(self._time_row, rows)
        self._value_row = shift(self._value_row, rows)
        self._cap_row = shift(self._cap_row, rows)

    # ------------------------------------------------------------------ changes
    def update_workers(self, workers: Mapping[str, int]) -> None:
        """Change worker counts; a type the cluster does not have yet is added (jobs
        use it once :meth:`add_jobs` or :meth:`update_jobs` give them a throughput
        there)."""
        try:
            given = _WORKERS.validate_python(dict(workers))
        except ValidationError as exc:
            err = validation_to_instance_error(exc, None)
            field = f"workers.{err.field}" if err.field else "workers"
            raise InstanceError(err.message, field) from None
        old = self.instance.arrays
        new = dict(self.instance.workers)
        new.update(given)
        if sum(new.values()) <= 0:
            raise InstanceError("the cluster has no GPUs: every worker count is 0", "workers")
        types = list(new)
        added = types[len(old.types) :]
        T = len(types)
        wk = np.array([new[t] for t in types], dtype=float)
        thr = np.hstack([old.thr, np.zeros((old.num_jobs, len(added)))])
        allowed = (thr > 0) & (old.scale[:, None] <= wk[None, :])
        dead = np.nonzero(~allowed.any(axis=1))[0]
        if len(dead):
            i = int(dead[0])
            raise InstanceError(
                f"job {old.job_ids[i]!r} can run on no worker type: it needs a positive "
                f"throughput on a type with at least scale_factor={int(old.scale[i])} GPUs",
                f"jobs[{i}]",
            )
        arr = ClusterArrays(old.job_ids, types, thr, old.scale, old.weight, old.steps, wk, allowed)
        h = self.highs_model.highs
        if added:
            start = h.getNumRow()
            h.addRows(
                len(added),
                np.full(len(added), -INF),
                wk[len(old.types) :],
                0,
                np.zeros(len(added), dtype=np.int32),
                np.zeros(0, dtype=np.int32),
                np.zeros(0),
            )
            self._cap_row = np.concatenate([self._cap_row, start + np.arange(len(added))])
            self._col = np.hstack([self._col, np.full((old.num_jobs, len(added)), -1)])
        for t in range(T):
            h.changeRowBounds(int(self._cap_row[t]), -INF, float(wk[t]))
        self._open_columns(arr)
        if self.objective == "max_min_fairness":
            self._renormalise(arr)
        self._set_instance(list(self.instance.jobs), new, arr)

    def _open_columns(self, arr: ClusterArrays) -> None:
        """Upper bounds of the columns whose ``allowed`` changed; columns for usable
        pairs the compiler had dropped."""
        missing = np.nonzero((arr.thr > 0) & (self._col < 0))
        self._add_columns(missing[0], missing[1], arr)
        h = self.highs_model.highs
        k = np.nonzero(self._col >= 0)
        cols = self._col[k].astype(np.int32)
        ub = arr.allowed[k].astype(float)
        h.changeColsBounds(len(cols), cols, np.zeros(len(cols)), ub)

    def _renormalise(self, arr: ClusterArrays) -> None:
        """z's coefficient in each fairness row: ``-p / p_ref`` (``p`` depends on the
        cluster)."""
        zc = self._p(arr) / self._p_ref
        h = self.highs_model.highs
        for i in np.nonzero(zc != self._zcoef)[0]:
            h.changeCoeff(int(self._value_row[i]), self._zcol, -float(zc[i]))
        self._zcoef = zc

    def add_jobs(self, jobs: Sequence[Mapping[str, Any] | GpuJob]) -> None:
        """Add jobs (records as in an instance file, or
        :class:`~hetopt.kinds.gpu_cluster.GpuJob` objects), at
        the end of :attr:`instance`'s job list."""
        try:
            batch = _NewJobs.model_validate({"jobs": list(jobs)}).jobs
        except ValidationError as exc:
            raise validation_to_instance_error(exc, None) from None
        if not batch:
            return
        inst = self.instance
        old = inst.arrays
        workers = dict(inst.workers)
        known = set(old.job_ids)
        for i, job in enumerate(batch):
            _job_problem(i, job, workers, inst)
            if job.id in known:
                raise InstanceError(f"duplicate job id {job.id!r}", f"jobs[{i}].id")
            known.add(job.id)
            self._require_steps(i, job)
        add = ClusterArrays.from_instance(
            GpuClusterInstance.model_construct(workers=workers, jobs=batch)
        )
        arr = ClusterArrays(
            [*old.job_ids, *add.job_ids],
            old.types,
            np.vstack([old.thr, add.thr]),
            np.concatenate([old.scale, add.scale]),
            np.concatenate([old.weight, add.weight]),
            np.concatenate([old.steps, add.steps]),
            old.workers,
            np.vstack([old.allowed, add.allowed]),
        )
        self._check_weights(arr, [*inst.jobs, *batch])
        n0, k, T = old.num_jobs, add.num_jobs, len(old.types)
        h = self.highs_model.highs
        r0 = h.getNumRow()
        # c_time[i] <= 1, then the value rows >= 0 with z's coefficient -1
        h.addRows(
            k,
            np.full(k, -INF),
            np.ones(k),
            0,
            np.zeros(k, dtype=np.int32),
            np.zeros(0, dtype=np.int32),
            np.zeros(0),
        )
        h.addRows(
            k,
            np.zeros(k),
            np.full(k, INF),
            k,
            np.arange(k, dtype=np.int32),
            np.full(k, self._zcol, dtype=np.int32),
            -np.ones(k),
        )
        self._time_row = np.concatenate([self._time_row, r0 + np.arange(k)])
        self._value_row = np.concatenate([self._value_row, r0 + k + np.arange(k)])
        self._col = np.vstack([self._col, np.full((k, T), -1, dtype=np.int64)])
        self._p_ref = np.concatenate([self._p_ref, self._p(arr)[n0:]])
        self._zcoef = np.concatenate([self._zcoef, np.ones(k)])
        rows, types = np.nonzero(add.thr > 0)
        self._add_columns(rows + n0, types, arr)
        self._set_instance([*inst.jobs, *batch], workers, arr)

    def _require_steps(self, i: int, job: GpuJob) -> None:
        if self.objective == "makespan" and job.steps_remaining is None:
            raise InstanceError(
                "required for the makespan objective (steps the job still has to run)",
                f"jobs[{i}].steps_remaining",
            )

    def _check_weights(self, arr: ClusterArrays, jobs: list[GpuJob]) -> None:
        if self.objective != "max_min_fairness":
            return
        from .inputs import check_weight_ratio

        probe = GpuClusterInstance.model_construct(workers=dict(self.instance.workers), jobs=jobs)
        probe.__dict__["arrays"] = arr
        check_weight_ratio(probe, self.objective)

    def remove_jobs(self, ids: Iterable[str]) -> None:
        """Remove the jobs with these ids (each must be in :attr:`instance`)."""
        ids = list(ids)
        inst = self.instance
        old = inst.arrays
        pos = {j: i for i, j in enumerate(old.job_ids)}
        gone = []
        for k, j in enumerate(ids):
            if j not in pos:
                raise UsageError(f"remove_jobs: unknown job id {j!r} (ids[{k}]); no job removed")
            gone.append(pos[j])
        if not gone:
            return
        idx = np.unique(np.array(gone, dtype=np.int64))
        if len(idx) == old.num_jobs:
            raise UsageError("remove_jobs: an instance needs at least one job")
        keep = np.ones(old.num_jobs, dtype=bool)
        keep[idx] = False
        self._retire(
            self._col[idx].ravel(), np.concatenate([self._time_row[idx], self._value_row[idx]])
        )
        self._col, self._time_row = self._col[keep], self._time_row[keep]
        self._value_row, self._p_ref = self._value_row[keep], self._p_ref[keep]
        self._zcoef = self._zcoef[keep]
        rows = np.nonzero(keep)[0]
        arr = old.subset(rows)
        jobs = [inst.jobs[int(i)] for i in rows]
        self._set_instance(jobs, dict(inst.workers), arr)

    def update_jobs(
        self,
        ids: Sequence[str],
        *,
        steps_remaining: Sequence[float] | None = None,
        weight: Sequence[float] | None = None,
        throughput: Sequence[Mapping[str, float]] | None = None,
    ) -> None:
        """Change ``steps_remaining``, ``weight`` and/or ``throughput`` of the jobs
        ``ids`` (one value per id); the changed records are validated as new ones."""
        ids = list(ids)
        inst = self.instance
        old = inst.arrays
        pos = {j: i for i, j in enumerate(old.job_ids)}
        changes: dict[str, Sequence[Any]] = {}
        for name, values in (
            ("steps_remaining", steps_remaining),
            ("weight", weight),
            ("throughput", throughput),
        ):
            if values is not None:
                if len(values) != len(ids):
                    raise UsageError(f"update_jobs: {len(values)} {name} values for {len(ids)} ids")
                changes[name] = values
        records = []
        for k, j in enumerate(ids):
            if j not in pos:
                raise UsageError(f"update_jobs: unknown job id {j!r} (ids[{k}]); nothing changed")
            rec = inst.jobs[pos[j]].model_dump(exclude_none=True)
            rec.update({name: values[k] for name, values in changes.items()})
            records.append(rec)
        if not records:
            return
        try:
            batch = _NewJobs.model_validate({"jobs": records}).jobs
        except ValidationError as exc:
            raise validation_to_instance_error(exc, None) from None
        for k, job in enumerate(batch):
            _job_problem(k, job, inst.workers, inst)
            self._require_steps(k, job)
        rows = np.array([pos[j] for j in ids], dtype=np.int64)
        if len(np.unique(rows)) != len(rows):
            raise UsageError("update_jobs: an id is given twice")
        jobs = list(inst.jobs)
        for r, job in zip(rows, batch, strict=True):
            jobs[int(r)] = job
        add = ClusterArrays.from_instance(
            GpuClusterInstance.model_construct(workers=dict(inst.workers), jobs=batch)
        )
        thr, scale, weight_a, steps, allowed = (
            old.thr.copy(),
            old.scale.copy(),
            old.weight.copy(),
            old.steps.copy(),
            old.allowed.copy(),
        )
        thr[rows], weight_a[rows], steps[rows], allowed[rows] = (
            add.thr,
            add.weight,
            add.steps,
            add.allowed,
        )
        arr = ClusterArrays(
            old.job_ids, old.types, thr, scale, weight_a, steps, old.workers, allowed
        )
        self._check_weights(arr, jobs)
        # rewrite the rows' coefficients with the current normalisation
        h = self.highs_model.highs
        gone = old.thr[rows] > 0
        now = thr[rows] > 0
        drop = self._col[rows][gone & ~now]
        self._retire(drop, np.zeros(0, dtype=np.int64))
        self._col[rows] = np.where(now, self._col[rows], -1)
        self._p_ref[rows] = self._p(arr)[rows]
        self._zcoef[rows] = 1.0
        coef = self._coefficients(arr, rows)
        for a, i in enumerate(rows):
            vr = int(self._value_row[i])
            h.changeCoeff(vr, self._zcol, -1.0)
            for t in np.nonzero(now[a] & (self._col[i] >= 0))[0]:
                h.changeCoeff(vr, int(self._col[i, t]), float(coef[a, t]))
        new_r, new_t = np.nonzero(now & (self._col[rows] < 0))
        self._add_columns(rows[new_r], new_t, arr)
        nz = np.nonzero(self._col[rows] >= 0)
        cols = self._col[rows][nz].astype(np.int32)
        h.changeColsBounds(len(cols), cols, np.zeros(len(cols)), allowed[rows][nz].astype(float))
        self._set_instance(jobs, dict(inst.workers), arr)

    # ------------------------------------------------------------------ solve
    def solve(self) -> Result:
        """Re-solve the live model (warm after the first call) and return its result."""
        from ...pipeline import finish
        from . import KIND

        session, method = self._session, self._method
        session.restart_clock()
        raw = self._live.solve(self.options, method.lp_method).raw
        arr = self.instance.arrays
        with session.timer("load_s"):
            pairs = Pairs.of(arr)
            cols = self._col[pairs.job, pairs.type]
            layout = MaxMinLayout(pairs, self._live.layout.value_rows, self._scale)
            built = Built(_Names(), layout)
            view = _View(raw, self.options, cols, self._zcol)
            outcome = session.resolve(method, self.instance, self._params, built, view)  # type: ignore[arg-type]
        outcome.details = {"agnostic": self.agnostic, "warm": True, **outcome.details}
        return finish(KIND, self.instance, self.objective, outcome, session)
