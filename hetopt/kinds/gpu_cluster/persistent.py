"""A ``gpu_cluster`` policy kept in one live HiGHS model across scheduler rounds."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, ValidationError

from ...contract import Built
from ...errors import InstanceError, UsageError
from ...instance import failure_to_instance_error, validation_to_instance_error
from ...options import SolveOptions
from .data import ClusterArrays, GpuClusterInstance, GpuJob, worker_counts
from .formulations import agnostic_throughputs, job_groups
from .maxmin import INF, MaxMinLayout, Pairs
from .methods import job_names, set_job_names, string_column
from .verify import job_id_objects, set_job_id_objects

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


def _group_keys(arr: ClusterArrays, rows: np.ndarray, by_steps: bool) -> list[bytes]:
    """The symmetry-group keys of jobs ``rows``: the data
    :func:`~hetopt.kinds.gpu_cluster.formulations.job_groups` groups by (scale factor,
    weight, throughputs, and steps for makespan; the usable types follow from these and
    the cluster), as bytes. Jobs with equal keys are interchangeable in the LP."""
    rows = np.asarray(rows, dtype=np.int64)
    T = arr.thr.shape[1]
    key = np.empty((len(rows), T + 2 + by_steps))  # (C order: a row's bytes in a run)
    key[:, 0] = arr.scale[rows]
    key[:, 1] = arr.weight[rows]
    key[:, 2 : 2 + T] = arr.thr[rows]
    if by_steps:
        key[:, -1] = arr.steps[rows]
    key += 0.0  # -0.0 is 0.0
    data, width = key.tobytes(), key.shape[1] * key.itemsize
    return [data[a : a + width] for a in range(0, len(data), width)]


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


_SLICED = 64
"""Removed jobs up to which :func:`_kept` copies the kept runs of a list slice by
slice (more: one pass with :func:`itertools.compress`)."""


def _job_records(jobs: Any) -> list[Any]:
    """:meth:`PersistentPolicy.add_jobs`' argument as a list of records: columns are
    validated column-wise into records (errors naming ``jobs[i].field``); one record
    given alone (a mapping with an ``id`` string) is a :class:`UsageError`, not its keys
    taken for records."""
    from ...columns import is_columnar, records_from_columns

    if isinstance(jobs, str | bytes):
        raise UsageError(f"add_jobs: expected a list of job records, got the string {jobs!r}")
    if isinstance(jobs, Mapping) and isinstance(jobs.get("id"), str):
        raise UsageError(
            f"add_jobs: expected a list of job records (or columns), got one record "
            f"(id {jobs['id']!r}): pass [record]"
        )
    if is_columnar(jobs):
        try:
            return records_from_columns(GpuJob, "jobs", jobs)[0]
        except ValueError as exc:
            raise failure_to_instance_error(exc) from None
    return list(jobs)


def _id_list(ids: Any, what: str) -> list[Any]:
    """Job ids given to ``what`` as a list (one string alone is a :class:`UsageError`,
    not its characters taken for ids)."""
    if isinstance(ids, str | bytes):
        raise UsageError(f"{what}: expected a list of job ids, got the string {ids!r}: pass [id]")
    return list(ids)


def _kept(items: list[Any], keep: np.ndarray) -> list[Any]:
    """``[x for x, k in zip(items, keep) if k]``: the items at the positions ``keep``
    marks, in order. A round's few removals leave long runs of kept items, copied a
    slice at a time (2,000 jobs, 20 removed: ~4x faster than a pass over every item)."""
    gone = np.flatnonzero(~keep)
    if len(gone) > _SLICED:
        return list(compress(items, keep.tolist()))  # (numpy booleans: 3x slower)
    out: list[Any] = []
    start = 0
    for g in gone.tolist():
        out += items[start:g]
        start = g + 1
    out += items[start:]
    return out


def _all_strings(ids: np.ndarray) -> bool:
    """Whether pandas infers ``ids`` (an object array) as strings
    (``infer_dtype(ids, skipna=False) == "string"``), without asking it when every id is
    exactly a ``str`` (validated ids always are: pandas then says ``"string"``)."""
    if len(ids) and all(type(i) is str for i in ids):
        return True
    return bool(pd.api.types.infer_dtype(ids, skipna=False) == "string")


def _ok(status: Any, what: str) -> None:
    """A HiGHS edit of the live model that HiGHS refused (its ``kError``: e.g. a
    coefficient beyond its limits) as an error, not a model out of step with the policy."""
    import highspy

    if status == highspy.HighsStatus.kError:
        from ...errors import SolveError

        raise SolveError(
            f"HiGHS refused the live model's {what} (a coefficient beyond its limits?); "
            "the policy no longer matches its model: build a new PersistentPolicy"
        )


def _weight_range(arr: ClusterArrays) -> tuple[float, float]:
    """The least and the greatest weight of ``arr``'s jobs, found once per arrays
    (:meth:`~.data.ClusterArrays.derived`)."""
    return arr.derived("weight_range", lambda a: (float(a.weight.min()), float(a.weight.max())))


@dataclass
class _Changes:
    """Removals and arrivals not yet written into :attr:`PersistentPolicy.instance`
    (it is rebuilt once when next read, not once per change)."""

    keep: np.ndarray | None
    """The rows of the instance's jobs still there (``None``: all)."""
    added: list[tuple[list[GpuJob], ClusterArrays]]
    """Arrivals after them: each batch's validated jobs and their arrays."""


def _pass_names(old: ClusterArrays, new: ClusterArrays) -> None:
    """Give ``new``, whose ids are ``old``'s (the same list), ``old``'s read-only id array
    (:func:`~.verify.job_id_objects`) and the result tables' ``job`` column made of it,
    instead of making them again from every id."""
    set_job_id_objects(new, job_id_objects(old))
    set_job_names(new, job_names(old))


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

    The model is the kind's own (``max_min_fairness`` or ``makespan`` without space
    sharing). By default (``symmetry=True``, as :func:`hetopt.solve`) it has one row per
    group of identical jobs (same scale factor, weight, throughputs, and steps for
    makespan), whose GPUs count ``mult`` times in the capacity rows, exactly as the cold
    grouped LP; every job of a group gets the group's shares. Churn splits and merges
    groups in place: a job leaving or joining a group changes its capacity
    coefficients, a job unlike every other creates a group (its rows and columns), the
    last job leaving a group deletes them, and :meth:`update_jobs` moves a job between
    groups. With ``symmetry=False`` (and always for the agnostic baseline) the model has
    one row per job.

    Each change edits only the rows and columns it touches (``addCols``/``addRows``,
    ``deleteCols``/``deleteRows``, ``changeCoeff``, bounds) and validates only the new
    or changed records (with the kind's own record model, errors naming
    ``jobs[i].field`` of the batch given); the instance is never re-validated whole.
    The model is held by a :class:`~hetopt.pipeline.Session`; every :meth:`solve`
    returns a result built and verified by :func:`hetopt.pipeline.finish` against
    :attr:`instance`, the changed instance, whose optimum is the one a cold
    :func:`hetopt.solve` of it finds. The scale of ``z`` (``kappa``, or ``t_ref`` for
    makespan) stays the first instance's: the objective's value does not depend on it.

    Removed rows and columns are deleted from HiGHS at once and the basis is given
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
        symmetry: bool = True,
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
        self.symmetry = bool(symmetry) and not agnostic
        """One row per group of identical jobs (the agnostic baseline: one per job, as
        :func:`hetopt.solve`: its true value is not unique)."""
        self._params = KIND.parse_params({"agnostic": agnostic, "symmetry": self.symmetry})
        KIND.check(instance, self.objective, self._params)  # as hetopt.solve would
        self._instance0 = instance
        self._instance = instance
        self._changes: _Changes | None = None
        self._method = cast("OneLP", KIND.method_for(self.objective, instance, self._params))
        self._session = Session(KIND, self.options)
        built = self._session.build(self._method, instance, self._params)
        self._live = self._session.open(built)
        self._transfer_s = self._session.timings["transfer_s"]
        self._index_live_model(built)

    # ------------------------------------------------------------------ bookkeeping
    def _index_live_model(self, built: Built) -> None:
        """Where each group's (each job's) rows and columns are in HiGHS.

        The live model's rows are groups ``g = 0..G-1``: ``_group_of[i]`` is job ``i``'s
        group, ``_mult[g]`` its number of jobs, and ``_col[g, t]``, ``_time_row[g]``,
        ``_value_row[g]``, ``_p_ref[g]``, ``_zcoef[g]`` its HiGHS columns, rows and
        normalisation. Without symmetry every job is its own group (``g = i``)."""
        arr = self.instance.arrays
        m, hm = built.model, self._live.highs_model
        layout = built.layout
        n, T = arr.num_jobs, len(arr.types)
        if self.symmetry:
            # the grouping the cold model was built with (its rows are these groups,
            # in this order; all jobs distinct: one group per job, in job order)
            group_of, reps, mult = job_groups(arr, self._by_steps)
        else:
            group_of, reps, mult = np.arange(n), np.arange(n), np.ones(n)
        G = len(reps)
        self._scale = float(layout.scale)
        col = np.full((G, T), -1, dtype=np.int64)
        pairs = layout.pairs
        col[pairs.job, pairs.type] = self._live.compiled.columns_of(m.alloc, range(len(pairs)))
        self._col = col
        self._time_row = np.array([hm.row(m.c_time[g]) for g in range(G)], dtype=np.int64)
        value_rows = getattr(m, layout.value_rows)
        self._value_row = np.array([hm.row(value_rows[g]) for g in range(G)], dtype=np.int64)
        self._cap_row = np.array([hm.row(m.c_capacity[t]) for t in range(T)], dtype=np.int64)
        self._zcol = int(self._live.compiled.column(m.z))
        # rows' x coefficients were written with p_ref; z's coefficient is -p / p_ref
        self._p_ref = self._p(arr)[reps]
        self._zcoef = np.ones(G)
        self._group_of = np.asarray(group_of, dtype=np.int64)
        self._mult = np.asarray(mult, dtype=float)
        self._mult_hi = self._mult.copy()  # the job counts HiGHS's coefficients hold
        self._gscale = arr.scale[reps]  # GPUs of one job of the group
        # job ids -> slots (increasing in job order: positions by binary search)
        self._slot_of = {j: i for i, j in enumerate(arr.job_ids)}
        self._slots = np.arange(n, dtype=np.int64)
        self._next_slot = n
        self._keys: list[bytes] = _group_keys(arr, reps, self._by_steps) if self.symmetry else []
        self._key_index = {k: g for g, k in enumerate(self._keys)}
        # rows and columns of removed jobs: switched off (bounds), deleted in batches
        self._dead_cols: list[np.ndarray] = []
        self._dead_rows: list[np.ndarray] = []
        self.compact_share = COMPACT_SHARE

    @property
    def _by_steps(self) -> bool:
        return self.objective == "makespan"

    def _reps(self) -> np.ndarray:
        """A job of each group (``-1`` for a group without jobs)."""
        if not self.symmetry:
            return np.arange(len(self._group_of))
        n = len(self._group_of)
        reps = np.full(max(len(self._mult), int(self._group_of.max()) + 1), -1, dtype=np.int64)
        reps[self._group_of] = np.arange(n)  # (which job of a group: all are alike)
        return reps

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
        inst = self._instance
        fields = {k: getattr(inst, k) for k in type(inst).model_fields}
        fields.update(jobs=jobs, workers=workers)
        new = GpuClusterInstance.model_construct(inst.model_fields_set, **fields)
        new.__dict__["arrays"] = arr  # the cached numpy view, kept in step
        self._instance = new
        self._changes = None

    @property
    def instance(self) -> GpuClusterInstance:
        """The changed instance (the removals and arrivals since it was last read are
        written into a new instance and its arrays now: once for a round's changes)."""
        self._write_changes()
        return self._instance

    def _write_changes(self) -> None:
        if self._changes is not None:
            arr, jobs = self._combined()
            self._set_instance(jobs, dict(self._instance.workers), arr)

    def _combined(
        self, extra: tuple[list[GpuJob], ClusterArrays] | None = None
    ) -> tuple[ClusterArrays, list[GpuJob]]:
        """The arrays and jobs of the instance with the pending changes (and the
        arrivals ``extra``): the kept jobs in their order, then the arrivals in theirs.

        The ids are written once into an object array (the kept ones taken from the
        instance's, :func:`~.verify.job_id_objects`, then the arrivals'), which the new
        arrays keep as theirs and, when the ``job`` column is pandas's string array, as
        that column's strings: one pass over the 2,000 ids a round instead of one per
        list, column and verifier lookup."""
        inst = self._instance
        base = inst.arrays
        changes = self._changes
        keep = None if changes is None else changes.keep
        added = [] if changes is None else list(changes.added)
        if extra is not None:
            added.append(extra)
        old_ids = job_id_objects(base)
        if keep is None:
            id_parts = [old_ids]
            jobs = list(inst.jobs)
            thr, scale, weight = [base.thr], [base.scale], [base.weight]
            steps, allowed = [base.steps], [base.allowed]
        else:
            rows = np.flatnonzero(keep)  # (take: a 2-d boolean mask is 4x slower)
            id_parts = [old_ids[keep]]
            jobs = _kept(inst.jobs, keep)
            thr, scale, weight = (
                [base.thr.take(rows, axis=0)],
                [base.scale[keep]],
                [base.weight[keep]],
            )
            steps, allowed = [base.steps[keep]], [base.allowed.take(rows, axis=0)]
        strings = True  # every arriving id a string (validated ids always are)
        for batch, add in added:
            new_ids = job_id_objects(add)
            id_parts.append(new_ids)
            strings = strings and _all_strings(new_ids)
            jobs.extend(batch)
            thr.append(add.thr)
            scale.append(add.scale)
            weight.append(add.weight)
            steps.append(add.steps)
            allowed.append(add.allowed)
        ids_obj = np.concatenate(id_parts)  # (a new array, also of one part)
        one = len(thr) == 1
        arr = ClusterArrays(
            ids_obj.tolist(),
            base.types,
            thr[0] if one else np.concatenate(thr),
            scale[0] if one else np.concatenate(scale),
            weight[0] if one else np.concatenate(weight),
            steps[0] if one else np.concatenate(steps),
            base.workers,
            allowed[0] if one else np.concatenate(allowed),
        )
        set_job_id_objects(arr, ids_obj)
        names = string_column(ids_obj) if strings else None
        if names is not None:
            set_job_names(arr, names)
        return arr, jobs

    @property
    def highs_model(self) -> HighsModel:
        """The live HiGHS model (its ``compiled`` view describes the first instance's
        model only: after job changes, address rows and columns through this class)."""
        self._flush_usage()
        return self._live.highs_model

    @property
    def _h(self) -> Any:
        """The live ``highspy.Highs`` (capacity coefficients may be pending)."""
        return self._live.highs_model.highs

    @property
    def num_jobs(self) -> int:
        return self.instance.arrays.num_jobs

    @property
    def num_groups(self) -> int:
        """Rows of the live model: groups of identical jobs (jobs without symmetry)."""
        return len(self._mult)

    # ------------------------------------------------------------------ HiGHS edits
    def _add_columns(
        self, groups: np.ndarray, types: np.ndarray, arr: ClusterArrays, jobs: np.ndarray
    ) -> None:
        """Columns for the pairs ``(groups[k], types[k])`` (``jobs[k]``: a job of the
        group): 1 in ``c_time``, the group's GPUs (scale factor x jobs) in
        ``c_capacity``, its coefficient in its value row; upper bound 1 if allowed."""
        if len(groups) == 0:
            return
        h = self._h
        start = h.getNumCol()
        k = len(groups)
        coef = self._coefficients(arr, jobs)[np.arange(k), types]
        p_now = self._p(arr)[jobs]
        if self.objective == "max_min_fairness":
            # the row's x coefficients are scaled to its p_ref; z carries p / p_ref
            coef = coef * p_now / self._p_ref[groups]
        upper = arr.allowed[jobs, types].astype(float)
        idx = np.empty(3 * k, dtype=np.int32)
        idx[0::3] = self._time_row[groups]
        idx[1::3] = self._cap_row[types]
        idx[2::3] = self._value_row[groups]
        val = np.empty(3 * k)
        val[0::3] = 1.0
        val[1::3] = self._gscale[groups] * self._mult_hi[groups]
        val[2::3] = coef
        _ok(
            h.addCols(
                k,
                np.zeros(k),
                np.zeros(k),
                upper,
                3 * k,
                np.arange(0, 3 * k, 3, dtype=np.int32),
                idx,
                val,
            ),
            "addCols",
        )
        self._col[groups, types] = start + np.arange(k)

    def _new_groups(self, jobs: np.ndarray, mult: np.ndarray, arr: ClusterArrays) -> None:
        """Rows and columns of new groups (``jobs[k]``: a job of group ``k``, ``mult[k]``
        its number of jobs), numbered after the existing ones: ``c_time[g] <= 1``, the
        value row ``>= 0`` with z's coefficient -1, a column per usable type."""
        k = len(jobs)
        if k == 0:
            return
        h = self._h
        g0, T = len(self._mult), len(arr.types)
        r0 = h.getNumRow()
        _ok(
            h.addRows(
                k,
                np.full(k, -INF),
                np.ones(k),
                0,
                np.zeros(k, dtype=np.int32),
                np.zeros(0, dtype=np.int32),
                np.zeros(0),
            ),
            "addRows",
        )
        _ok(
            h.addRows(
                k,
                np.zeros(k),
                np.full(k, INF),
                k,
                np.arange(k, dtype=np.int32),
                np.full(k, self._zcol, dtype=np.int32),
                -np.ones(k),
            ),
            "addRows",
        )
        self._time_row = np.concatenate([self._time_row, r0 + np.arange(k)])
        self._value_row = np.concatenate([self._value_row, r0 + k + np.arange(k)])
        self._col = np.vstack([self._col, np.full((k, T), -1, dtype=np.int64)])
        self._p_ref = np.concatenate([self._p_ref, self._p(arr)[jobs]])
        self._zcoef = np.concatenate([self._zcoef, np.ones(k)])
        self._mult = np.concatenate([self._mult, np.asarray(mult, dtype=float)])
        self._mult_hi = np.concatenate([self._mult_hi, np.asarray(mult, dtype=float)])
        self._gscale = np.concatenate([self._gscale, arr.scale[jobs]])
        rows, types = np.nonzero(arr.thr[jobs] > 0)
        self._add_columns(g0 + rows, types, arr, jobs[rows])

    def _flush_usage(self) -> None:
        """Write the capacity coefficients of groups whose number of jobs changed since
        they were last written (``scale_factor * mult`` GPUs per unit of time share):
        once per solve, for the net change of all edits since the last one."""
        changed = np.nonzero(self._mult != self._mult_hi)[0]
        if len(changed) == 0:
            return
        g, t = np.nonzero(self._col[changed] >= 0)
        g = changed[g]
        usage = (self._gscale[g] * self._mult[g]).tolist()
        rows, cols = self._cap_row[t].tolist(), self._col[g, t].tolist()
        # (one C-level loop of calls; HiGHS's statuses were never read)
        deque(map(self._h.changeCoeff, rows, cols, usage), maxlen=0)
        self._mult_hi[changed] = self._mult[changed]

    def _drop_groups(self, dead: np.ndarray) -> None:
        """Delete the rows and columns of groups left without jobs (``_group_of`` must no
        longer name them) and renumber the others."""
        if len(dead) == 0:
            return
        self._retire(
            self._col[dead].ravel(), np.concatenate([self._time_row[dead], self._value_row[dead]])
        )
        keep = np.ones(len(self._mult), dtype=bool)
        keep[dead] = False
        self._col, self._time_row = self._col[keep], self._time_row[keep]
        self._value_row, self._p_ref = self._value_row[keep], self._p_ref[keep]
        self._zcoef, self._mult = self._zcoef[keep], self._mult[keep]
        self._mult_hi, self._gscale = self._mult_hi[keep], self._gscale[keep]
        renumber = np.cumsum(keep) - 1
        self._group_of = renumber[self._group_of]
        if self.symmetry:
            self._keys = list(compress(self._keys, keep.tolist()))
            self._key_index = {k: g for g, k in enumerate(self._keys)}

    def _retire(self, cols: np.ndarray, rows: np.ndarray) -> None:
        """Switch columns (bounds 0) and rows (free) off: the basis and HiGHS's
        factorisation stay valid, so the next solve is a hot dual simplex. They are
        deleted once they make up ``compact_share`` of the rows."""
        h = self._h
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
        h = self._h
        cols = np.unique(cols[cols >= 0]).astype(np.int32)
        rows = np.unique(rows[rows >= 0]).astype(np.int32)
        basis = h.getBasis()
        keep_cols = keep_rows = None
        if basis.valid:
            keep_cols = np.ones(h.getNumCol(), dtype=bool)
            keep_cols[cols] = False
            keep_rows = np.ones(h.getNumRow(), dtype=bool)
            keep_rows[rows] = False
            col_status = list(compress(basis.col_status, keep_cols.tolist()))
            row_status = list(compress(basis.row_status, keep_rows.tolist()))
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
        given = worker_counts(workers)  # (as the instance's workers take them)
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
        _pass_names(old, arr)
        h = self._h
        reps = self._reps()
        if added:
            start = h.getNumRow()
            _ok(
                h.addRows(
                    len(added),
                    np.full(len(added), -INF),
                    wk[len(old.types) :],
                    0,
                    np.zeros(len(added), dtype=np.int32),
                    np.zeros(0, dtype=np.int32),
                    np.zeros(0),
                ),
                "addRows",
            )
            self._cap_row = np.concatenate([self._cap_row, start + np.arange(len(added))])
            self._col = np.hstack([self._col, np.full((self.num_groups, len(added)), -1)])
            if self.symmetry:  # keys span the types
                self._keys = _group_keys(arr, reps, self._by_steps)
                self._key_index = {k: g for g, k in enumerate(self._keys)}
        for t in range(T):
            h.changeRowBounds(int(self._cap_row[t]), -INF, float(wk[t]))
        self._open_columns(arr, reps)
        if self.objective == "max_min_fairness":
            self._renormalise(arr, reps)
        self._set_instance(list(self.instance.jobs), new, arr)

    def _open_columns(self, arr: ClusterArrays, reps: np.ndarray) -> None:
        """Upper bounds of the columns whose ``allowed`` changed; columns for usable
        pairs the compiler had dropped."""
        missing = np.nonzero((arr.thr[reps] > 0) & (self._col < 0))
        self._add_columns(missing[0], missing[1], arr, reps[missing[0]])
        h = self._h
        k = np.nonzero(self._col >= 0)
        cols = self._col[k].astype(np.int32)
        ub = arr.allowed[reps][k].astype(float)
        h.changeColsBounds(len(cols), cols, np.zeros(len(cols)), ub)

    def _renormalise(self, arr: ClusterArrays, reps: np.ndarray) -> None:
        """z's coefficient in each fairness row: ``-p / p_ref`` (``p`` depends on the
        cluster)."""
        zc = self._p(arr)[reps] / self._p_ref
        h = self._h
        for g in np.nonzero(zc != self._zcoef)[0]:
            h.changeCoeff(int(self._value_row[g]), self._zcol, -float(zc[g]))
        self._zcoef = zc

    def add_jobs(self, jobs: Sequence[Mapping[str, Any] | GpuJob] | Any) -> None:
        """Add jobs (records as in an instance file, or
        :class:`~hetopt.kinds.gpu_cluster.GpuJob` objects, or columns: a pandas
        ``DataFrame`` or a mapping of equal-length arrays, as :func:`hetopt.solve` takes
        them), at the end of :attr:`instance`'s job list. A job identical to the jobs of a
        group joins it (its capacity coefficients change); others make new groups."""
        records = _job_records(jobs)
        try:
            batch = _NewJobs.model_validate({"jobs": records}).jobs
        except ValidationError as exc:
            raise validation_to_instance_error(exc, None) from None
        if not batch:
            return
        inst = self._instance  # (the cluster and the fields jobs do not change)
        workers = dict(inst.workers)
        known = self._slot_of
        fresh: set[str] = set()
        for i, job in enumerate(batch):
            _job_problem(i, job, workers, inst)
            if job.id in known or job.id in fresh:
                raise InstanceError(f"duplicate job id {job.id!r}", f"jobs[{i}].id")
            fresh.add(job.id)
            self._require_steps(i, job)
        add = ClusterArrays.of_jobs(batch, workers)
        self._check_weights_with(batch, add)
        self._check_work_with(batch, add)
        k, g0 = add.num_jobs, self.num_groups
        local = np.arange(k)  # the new jobs' rows in add (after the others' in the instance)
        if self.symmetry:
            gof = np.empty(k, dtype=np.int64)
            firsts: list[int] = []  # a job of each new group (its row in add)
            for a, key in enumerate(_group_keys(add, local, self._by_steps)):
                g = self._key_index.get(key)
                if g is None:
                    g = g0 + len(firsts)
                    self._key_index[key] = g
                    self._keys.append(key)
                    firsts.append(a)
                gof[a] = g
            count = np.bincount(gof, minlength=g0 + len(firsts)).astype(float)
        else:
            gof, firsts, count = g0 + local, local.tolist(), np.ones(g0 + k)
            count[:g0] = 0.0
        self._mult = self._mult + count[:g0]  # (written before the next solve)
        self._new_groups(np.array(firsts, dtype=np.int64), count[g0:], add)
        self._group_of = np.concatenate([self._group_of, gof])
        s0 = self._next_slot
        self._slot_of.update((job.id, s0 + a) for a, job in enumerate(batch))
        self._slots = np.concatenate([self._slots, s0 + local])
        self._next_slot = s0 + k
        changes = self._changes or _Changes(None, [])
        changes.added.append((batch, add))
        self._changes = changes

    def _require_steps(self, i: int, job: GpuJob) -> None:
        if self.objective == "makespan" and job.steps_remaining is None:
            raise InstanceError(
                "required for the makespan objective (steps the job still has to run)",
                f"jobs[{i}].steps_remaining",
            )

    def _check_weights_with(self, batch: list[GpuJob], add: ClusterArrays) -> None:
        """:meth:`_check_weights` of the instance with the arrivals ``batch`` (``add``
        their arrays), which is built only to name a job whose weight is refused."""
        if self.objective != "max_min_fairness":
            return
        from .inputs import MAX_WEIGHT_RATIO

        # the extremes of a superset first (the instance's jobs before the removals):
        # their ratio is at least the true one, so within the limit it is too
        lo, hi = _weight_range(self._instance.arrays)
        changes = self._changes
        for arrivals in [add, *(a for _, a in changes.added)] if changes else [add]:
            w = arrivals.weight.tolist()  # (a few: Python's min and max are quicker)
            lo, hi = min(lo, *w), max(hi, *w)
        if hi / lo <= MAX_WEIGHT_RATIO:
            return
        w = np.concatenate([self._weights(), add.weight])
        if float(w.max() / w.min()) <= MAX_WEIGHT_RATIO:
            return
        self._check_weights(*self._combined((batch, add)))

    def _weights(self) -> np.ndarray:
        """The weights of the instance's jobs with the pending changes."""
        base = self._instance.arrays
        changes = self._changes
        if changes is None:
            return base.weight
        parts = [base.weight if changes.keep is None else base.weight[changes.keep]]
        return np.concatenate([*parts, *(add.weight for _, add in changes.added)])

    def _check_weights(self, arr: ClusterArrays, jobs: list[GpuJob]) -> None:
        if self.objective != "max_min_fairness":
            return
        from .inputs import MAX_WEIGHT_RATIO, check_weight_ratio

        w = arr.weight
        if float(w.max() / w.min()) <= MAX_WEIGHT_RATIO:
            return  # (check_weight_ratio's test; it names the field otherwise)
        check_weight_ratio(self._probe(arr, jobs), self.objective)

    def _check_work_with(self, batch: list[GpuJob], add: ClusterArrays) -> None:
        """The makespan's :func:`~.inputs.check_work_ratio` of the instance with the
        arrivals ``batch`` (``add`` their arrays): decided from the work range of a
        superset (the instance before its pending removals, every pending arrival) first;
        the exact check, which names the outlier, only beyond it."""
        if self.objective != "makespan":
            return
        from .inputs import MAX_WORK_RATIO, job_work

        changes = self._changes
        parts = (
            [self._instance.arrays, *(a for _, a in changes.added)]
            if changes
            else [self._instance.arrays]
        )
        works = np.concatenate([job_work(a) for a in (*parts, add)])
        works = works[np.isfinite(works) & (works > 0)]  # (a job that can run nowhere)
        if len(works) < 2 or float(works.max() / works.min()) <= MAX_WORK_RATIO:
            return
        self._check_work(*self._combined((batch, add)))

    def _check_work(self, arr: ClusterArrays, jobs: list[GpuJob]) -> None:
        if self.objective != "makespan":
            return
        from .inputs import check_work_ratio

        check_work_ratio(self._probe(arr, jobs))

    def _probe(self, arr: ClusterArrays, jobs: list[GpuJob]) -> GpuClusterInstance:
        """An instance of ``jobs`` (``arr`` their arrays) on the policy's cluster, not
        validated, for an instance-level check to name its field."""
        probe = GpuClusterInstance.model_construct(workers=dict(self._instance.workers), jobs=jobs)
        probe.__dict__["arrays"] = arr
        return probe

    def remove_jobs(self, ids: Iterable[str]) -> None:
        """Remove the jobs with these ids (each must be in :attr:`instance`). A group
        keeps its rows while it has jobs (its capacity coefficients change)."""
        ids = _id_list(ids, "remove_jobs")
        if not ids:
            return
        idx = np.unique(self._positions(ids, "remove_jobs", "no job removed"))
        n = len(self._group_of)
        if len(idx) == n:
            raise UsageError("remove_jobs: an instance needs at least one job")
        if self._changes is not None and self._changes.added:
            self._write_changes()  # (arrivals first: the removals are rows of the base)
        base = self._instance.arrays
        changes = self._changes
        if changes is None or changes.keep is None:  # (no arrivals: the jobs are base's)
            kept_base = np.ones(base.num_jobs, dtype=bool)
            kept_base[idx] = False
            keep = kept_base  # (both only read from now on)
        else:
            kept_base = changes.keep.copy()
            kept_base[np.flatnonzero(kept_base)[idx]] = False  # (the jobs' rows in base)
            keep = np.ones(n, dtype=bool)
            keep[idx] = False
        left = np.bincount(self._group_of[idx], minlength=self.num_groups).astype(float)
        mult = self._mult - left
        self._mult = mult  # (written before the next solve)
        self._group_of = self._group_of[keep]
        self._drop_groups(np.nonzero(mult == 0)[0])
        for j in ids:
            self._slot_of.pop(j, None)
        self._slots = self._slots[keep]
        self._changes = _Changes(kept_base, [])

    def _positions(self, ids: list[str], what: str, nothing: str) -> np.ndarray:
        """Positions of jobs ``ids`` in :attr:`instance` (a :class:`UsageError` naming
        the first unknown id)."""
        slot = self._slot_of
        try:  # (an unhashable id raises TypeError here, as in the test below)
            want: list[int] | None = [slot[j] for j in ids]
        except KeyError:
            want = None
        if want is None:  # (raised outside the handler: no exception context)
            for k, j in enumerate(ids):
                if j not in slot:
                    raise UsageError(f"{what}: unknown job id {j!r} (ids[{k}]); {nothing}")
        return np.searchsorted(self._slots, np.array(want, dtype=np.int64))

    def update_jobs(
        self,
        ids: Sequence[str],
        *,
        steps_remaining: Sequence[float] | None = None,
        weight: Sequence[float] | None = None,
        throughput: Sequence[Mapping[str, float]] | None = None,
    ) -> None:
        """Change ``steps_remaining``, ``weight`` and/or ``throughput`` of the jobs
        ``ids`` (one value per id); the changed records are validated as new ones. A
        job that is no longer like its group's others moves to the group it is now
        like (or a new one); the only job of a group has its rows rewritten."""
        ids = _id_list(ids, "update_jobs")
        inst = self.instance
        old = inst.arrays
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
        if not ids:
            return
        rows = self._positions(ids, "update_jobs", "nothing changed")
        records = []
        for k, r in enumerate(rows.tolist()):
            rec = inst.jobs[r].model_dump(exclude_none=True)
            rec.update({name: values[k] for name, values in changes.items()})
            records.append(rec)
        try:
            batch = _NewJobs.model_validate({"jobs": records}).jobs
        except ValidationError as exc:
            raise validation_to_instance_error(exc, None) from None
        for k, job in enumerate(batch):
            _job_problem(k, job, inst.workers, inst)
            self._require_steps(k, job)
        if len(np.unique(rows)) != len(rows):
            raise UsageError("update_jobs: an id is given twice")
        jobs = list(inst.jobs)
        for r, job in zip(rows, batch, strict=True):
            jobs[int(r)] = job
        add = ClusterArrays.of_jobs(batch, dict(inst.workers))
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
        _pass_names(old, arr)
        self._check_weights(arr, jobs)
        self._check_work(arr, jobs)
        if self.symmetry:
            self._regroup(rows, old, arr)
        else:  # every job is its own group
            self._rewrite(rows, rows, old, arr)
        self._set_instance(jobs, dict(inst.workers), arr)

    def _regroup(self, rows: np.ndarray, old: ClusterArrays, arr: ClusterArrays) -> None:
        """Jobs ``rows`` changed (``old`` -> ``arr``): each stays in its group if its key
        is the same, has its group re-keyed and rewritten if it was the group's only
        job and no group has its new key, else leaves its group for the group of its
        new key (a new group if none)."""
        g0 = self.num_groups
        mult = self._mult.copy()
        rewrite: list[tuple[int, int]] = []  # (group, its only job): rewritten in place
        firsts: list[int] = []  # a job of each new group
        extra: list[float] = []  # job counts of the new groups
        group_of = self._group_of = self._group_of.copy()
        for r, key in zip(rows.tolist(), _group_keys(arr, rows, self._by_steps), strict=True):
            g = int(group_of[r])  # an existing group: each job moves at most once
            if key == self._keys[g]:
                continue
            if mult[g] == 1 and key not in self._key_index:
                if self._key_index.get(self._keys[g]) == g:
                    del self._key_index[self._keys[g]]
                self._keys[g] = key
                self._key_index[key] = g
                rewrite.append((g, r))
                continue
            mult[g] -= 1  # leave g ...
            if mult[g] == 0 and self._key_index.get(self._keys[g]) == g:
                del self._key_index[self._keys[g]]
            g2 = self._key_index.get(key)  # ... for the group of key (or a new one)
            if g2 is None:
                g2 = g0 + len(firsts)
                self._key_index[key] = g2
                self._keys.append(key)
                firsts.append(r)
                extra.append(1.0)
            elif g2 < g0:
                mult[g2] += 1
            else:
                extra[g2 - g0] += 1
            group_of[r] = g2
        if rewrite:
            gs, js = (np.array(a, dtype=np.int64) for a in zip(*rewrite, strict=True))
            self._rewrite(gs, js, old, arr)
        self._mult = mult  # (written before the next solve)
        self._new_groups(np.array(firsts, dtype=np.int64), np.array(extra), arr)
        self._drop_groups(np.nonzero(self._mult == 0)[0])

    def _rewrite(
        self, groups: np.ndarray, jobs: np.ndarray, old: ClusterArrays, arr: ClusterArrays
    ) -> None:
        """Rewrite the value rows and columns of ``groups`` (``jobs``: a job of each,
        ``old`` -> ``arr`` its data) with the current normalisation."""
        h = self._h
        gone = old.thr[jobs] > 0
        now = arr.thr[jobs] > 0
        drop = self._col[groups][gone & ~now]
        self._retire(drop, np.zeros(0, dtype=np.int64))
        self._col[groups] = np.where(now, self._col[groups], -1)
        self._p_ref[groups] = self._p(arr)[jobs]
        self._zcoef[groups] = 1.0
        coef = self._coefficients(arr, jobs)
        for a, g in enumerate(groups):
            vr = int(self._value_row[g])
            h.changeCoeff(vr, self._zcol, -1.0)
            for t in np.nonzero(now[a] & (self._col[g] >= 0))[0]:
                h.changeCoeff(vr, int(self._col[g, t]), float(coef[a, t]))
        new_r, new_t = np.nonzero(now & (self._col[groups] < 0))
        self._add_columns(groups[new_r], new_t, arr, jobs[new_r])
        nz = np.nonzero(self._col[groups] >= 0)
        cols = self._col[groups][nz].astype(np.int32)
        h.changeColsBounds(
            len(cols), cols, np.zeros(len(cols)), arr.allowed[jobs][nz].astype(float)
        )

    # ------------------------------------------------------------------ solve
    def solve(self) -> Result:
        """Re-solve the live model (warm after the first call) and return its result.

        Ctrl-C during the round's HiGHS run is handled as :func:`hetopt.solve` handles
        it: :class:`~hetopt.errors.Interrupted` (a ``KeyboardInterrupt``) is raised
        carrying the round's honest result, and the next :meth:`solve` starts afresh
        from the live model."""
        from ...pipeline import interruptible

        return interruptible(self._solve_round)

    def _solve_round(self) -> Result:
        from ...pipeline import finish
        from . import KIND

        session, method = self._session, self._method
        session.restart_clock()
        self._flush_usage()
        raw = self._live.solve(self.options, method.lp_method).raw
        arr = self.instance.arrays
        with session.timer("load_s"):
            if self.symmetry:  # rows are groups: every job gets its group's shares
                job, typ = np.nonzero(arr.thr.take(self._reps(), axis=0) > 0)
                pairs = Pairs(job.astype(np.int64), typ.astype(np.int64))
                group_of: np.ndarray | None = self._group_of
            else:
                pairs, group_of = Pairs.of(arr), None
            cols = self._col[pairs.job, pairs.type]
            layout = MaxMinLayout(pairs, self._live.layout.value_rows, self._scale, group_of)
            built = Built(_Names(), layout)
            view = _View(raw, self.options, cols, self._zcol)
            outcome = session.resolve(method, self.instance, self._params, built, view)  # type: ignore[arg-type]
        outcome.details = {"agnostic": self.agnostic, "warm": True, **outcome.details}
        return finish(KIND, self.instance, self.objective, outcome, session)
