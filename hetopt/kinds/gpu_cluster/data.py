"""The ``gpu_cluster`` instance (Gavel's setting) and its derived numpy views."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as _field
from functools import cached_property
from itertools import chain, repeat
from typing import Annotated, Any, Literal, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from ...instance import InstanceBase, fail, record_keys

_CHECKED = threading.local()
"""The instance :meth:`GpuClusterInstance._cross_checks` passed last (a weak reference)
and the columns its job checks computed (:class:`_JobColumns`)."""

NonNegFloat = Annotated[float, Field(ge=0)]
PosFloat = Annotated[float, Field(gt=0)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class ElasticSpec(_Strict):
    """The options of an elastic job (Lyra): how fast it runs with each worker count.

    ``throughput[t][k]`` is steps/s of the whole job with ``workers[k]`` GPUs of type
    ``t`` (0: it cannot run with that many there). ``workers`` is strictly increasing.
    """

    workers: Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=1)]
    throughput: Annotated[dict[str, list[NonNegFloat]], Field(min_length=1)]

    @model_validator(mode="after")
    def _shape(self) -> ElasticSpec:
        for k in range(1, len(self.workers)):
            if self.workers[k] <= self.workers[k - 1]:
                raise fail(
                    f"workers[{k}]",
                    f"worker counts must be strictly increasing, got {self.workers}",
                )
        for t, values in self.throughput.items():
            if len(values) != len(self.workers):
                raise fail(
                    f"throughput.{t}",
                    f"expected {len(self.workers)} values (one per entry of workers), "
                    f"got {len(values)}",
                )
        return self


class GpuJob(_Strict):
    """One job of a GPU cluster.

    ``throughput[t]`` is steps/s of the whole job on ``scale_factor`` GPUs of type ``t``;
    0 or a missing type means the job cannot run there. An elastic job gives its options
    in ``elastic`` instead (and omits ``throughput`` and ``scale_factor``).
    """

    # the published JSON Schema says what the validator enforces: throughput unless elastic
    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"required": ["throughput"], "properties": {"throughput": {"type": "object"}}},
                {"required": ["elastic"], "properties": {"elastic": {"type": "object"}}},
            ]
        }
    )

    id: Annotated[str, Field(min_length=1)]
    throughput: dict[str, NonNegFloat] | None = None
    """Required unless the job is ``elastic``."""
    scale_factor: Annotated[int, Field(ge=1)] = 1
    weight: PosFloat = 1.0
    steps_remaining: PosFloat | None = None
    job_type: str | None = None
    time_elapsed_s: NonNegFloat | None = None
    """Time the job has already spent in the system (finish-time fairness)."""
    deadline_s: PosFloat | None = None
    """SLO: the job should finish within this many seconds from now."""
    entity: str | None = None
    """User or team the job belongs to (entity weights in water-filling)."""
    arrival_s: NonNegFloat | None = None
    """When the job arrives (seconds from the start of a trace); kept for trace replay."""
    elastic: ElasticSpec | None = None
    """Worker counts and throughputs of an elastic job (``max_progress``, ``reclaim``)."""
    current_workers: Annotated[int, Field(ge=1)] | None = None
    """Workers the job runs with now (``reclaim``), all of the type of its loaned servers;
    default: ``scale_factor``, or for an elastic job its GPUs on loaned servers."""
    preemption_cost: PosFloat | None = None
    """What preempting the job costs (``reclaim``; default 1: count preemptions)."""


class LoanedServer(_Strict):
    """A server lent to the training cluster (Lyra's capacity loaning) and the jobs on it.

    ``jobs[j]`` is how many of the server's GPUs job ``j`` uses now (``reclaim``).
    """

    id: Annotated[str, Field(min_length=1)]
    worker_type: Annotated[str, Field(min_length=1)]
    gpus: Annotated[int, Field(ge=1)]
    jobs: dict[str, Annotated[int, Field(ge=1)]] = Field(default_factory=dict)


class Colocation(_Strict):
    """Two jobs sharing the same GPUs (Gavel's space sharing).

    A job of type ``job_types[0]`` runs at ``throughput[0]`` steps/s and one of type
    ``job_types[1]`` at ``throughput[1]`` when both run on the same ``scale_factor`` GPUs
    of ``worker_type``. Only jobs whose ``scale_factor`` equals the entry's pair; naming a
    type twice allows two jobs of that type to share.
    """

    worker_type: Annotated[str, Field(min_length=1)]
    job_types: Annotated[
        list[Annotated[str, Field(min_length=1)]], Field(min_length=2, max_length=2)
    ]
    scale_factor: Annotated[int, Field(ge=1)] = 1
    throughput: Annotated[list[NonNegFloat], Field(min_length=2, max_length=2)]


_MAYBE_NAMED = frozenset({"elastic", "current_workers"})
"""The job fields :meth:`GpuClusterInstance._plain_jobs_ok` reads only when some job
record may name them."""


class GpuClusterInstance(InstanceBase):
    """A GPU cluster with several accelerator types and a set of jobs.

    Example::

        {"kind": "gpu_cluster",
         "workers": {"k80": 36, "p100": 36, "v100": 36},
         "jobs": [{"id": "0", "throughput": {"k80": 2.41, "p100": 10.36, "v100": 9.45},
                   "scale_factor": 4, "weight": 1.0, "steps_remaining": 503349.9}],
         "objective": "max_min_fairness"}
    """

    kind: Literal["gpu_cluster"] = "gpu_cluster"
    workers: dict[str, Annotated[int, Field(ge=0)]]
    jobs: Annotated[list[GpuJob], Field(min_length=1)]
    objective: str | None = None
    cost_per_hour: dict[str, NonNegFloat] | None = None
    """Optional price of one GPU of each type per hour (``min_cost``)."""
    entity_weights: dict[str, PosFloat] | None = None
    """Optional weights of users/teams, split over their jobs (water-filling)."""
    colocation: list[Colocation] | None = None
    """Optional space-sharing throughputs of job-type pairs (``max_min_fairness`` and
    ``makespan`` then also consider two jobs sharing GPUs)."""
    loanable: dict[str, Annotated[int, Field(ge=0)]] | None = None
    """GPUs of each type the training cluster may borrow beside ``workers`` (Lyra's
    capacity loaning, e.g. idle inference GPUs; ``max_progress`` and ``reclaim``). Every
    type must be listed in ``workers`` (with 0 if the cluster owns none)."""
    loaned_servers: Annotated[list[LoanedServer], Field(min_length=1)] | None = None
    """The loaned servers in use and the jobs placed on them (``reclaim``)."""

    @model_validator(mode="after")
    def _cross_checks(self, info: ValidationInfo) -> GpuClusterInstance:
        # pydantic validates a model with its own __init__ (InstanceBase's) through that
        # __init__ and then runs the after-validators once more on the same object: check
        # a (frozen) instance once
        last = getattr(_CHECKED, "last", None)
        if last is not None and last() is self:
            return self
        self._check_fields(record_keys(info, "jobs"))
        _CHECKED.last = weakref.ref(self)
        return self

    def _check_fields(self, job_keys: frozenset[str] | None = None) -> None:
        """Every check across fields; ``job_keys``: the keys any job record had, if
        known (:func:`hetopt.instance.record_keys`)."""
        if not self.workers:
            raise fail("workers", "expected at least one worker type, e.g. {'v100': 8}")
        if sum(self.workers.values()) <= 0:
            raise fail("workers", "the cluster has no GPUs: every worker count is 0")
        for t in self.loanable or {}:
            if t not in self.workers:
                raise fail(
                    f"loanable.{t}",
                    f"unknown worker type {t!r}; list it in workers (0 if the cluster owns "
                    f"none), the cluster has: {', '.join(self.workers)}",
                )
        cap = self.capacity
        if not self._plain_jobs_ok(cap, job_keys):
            self._check_jobs(cap)  # the first problem, job by job
        if self.loaned_servers is not None:
            _check_loaned_servers(self, {job.id: i for i, job in enumerate(self.jobs)})
        if self.colocation is not None:
            seen_pairs: dict[tuple[str, str, str, int], int] = {}
            for k, entry in enumerate(self.colocation):
                if entry.worker_type not in self.workers:
                    raise fail(
                        f"colocation[{k}].worker_type",
                        f"unknown worker type {entry.worker_type!r}; the cluster has: "
                        f"{', '.join(self.workers)}",
                    )
                a, b = sorted(entry.job_types)
                key = (entry.worker_type, a, b, entry.scale_factor)
                if key in seen_pairs:
                    raise fail(
                        f"colocation[{k}]",
                        f"duplicate entry for {a!r} + {b!r} on {entry.worker_type} at "
                        f"scale_factor {entry.scale_factor} (also colocation[{seen_pairs[key]}])",
                    )
                seen_pairs[key] = k
        if self.entity_weights is not None:
            for i, job in enumerate(self.jobs):
                if job.entity is not None and job.entity not in self.entity_weights:
                    raise fail(
                        f"jobs[{i}].entity",
                        f"entity {job.entity!r} has no weight in entity_weights",
                    )
        if self.cost_per_hour is not None:
            for t in self.cost_per_hour:
                if t not in self.workers:
                    raise fail(f"cost_per_hour.{t}", f"unknown worker type {t!r}")

    def _plain_jobs_ok(self, cap: dict[str, int], job_keys: frozenset[str] | None = None) -> bool:
        """Whether every job passes :meth:`_check_jobs` (unique ids, time-sharing jobs with
        known types, each runnable somewhere, ``current_workers`` = ``scale_factor``),
        decided with set operations and numpy instead of a loop of checks per job (about
        a fifth of validating 2,048 Gavel jobs, measured). ``False`` (some job is
        elastic, or a check fails): :meth:`_check_jobs` finds and names the first problem.

        ``True`` keeps what it computed for :class:`ClusterArrays` (the ids, the
        throughput matrix and the scale factors: :class:`_JobColumns`, one instance
        per thread).

        ``job_keys`` (the keys any job record had, when known) spares reading the
        ``elastic`` and ``current_workers`` of every job when no record names them
        (then all are ``None``, their default): 2 of ~14 ms at 20,000 jobs (measured)."""
        jobs = self.jobs
        ids = [job.id for job in jobs]
        if len(set(ids)) != len(jobs):
            return False
        n = len(jobs)
        named = _MAYBE_NAMED if job_keys is None else job_keys
        if "elastic" in named and [job.elastic for job in jobs].count(None) != n:
            return False  # elastic jobs and current_workers: checked job by job
        if "current_workers" in named and [job.current_workers for job in jobs].count(None) != n:
            return False
        thrs = [t for t in [job.throughput for job in jobs] if t is not None]
        if len(thrs) != len(jobs):
            return False
        types = list(self.workers)
        thr = _aligned_matrix(thrs, types)  # (every job names exactly the types, in order)
        if thr is None:
            if not set().union(*thrs) <= self.workers.keys():
                return False
            thr = _lookup_matrix(thrs, types)
        # runnable: a positive throughput on a type with at least scale_factor GPUs
        # (throughputs are validated >= 0, a type a job omits is 0 in the matrix)
        scale = np.array([job.scale_factor for job in jobs], dtype=float)
        room = np.array([cap[t] for t in types], dtype=float)
        if not ((thr > 0) & (scale[:, None] <= room[None, :])).any(axis=1).all():
            return False
        mine = weakref.ref(self, _drop_columns)
        _CHECKED.columns = _JobColumns(mine, jobs, self.workers, ids, thr, scale)
        self.__dict__["has_elastic"] = False  # (seen above: GpuClusterKind.check reads it)
        return True

    def _check_jobs(self, cap: dict[str, int]) -> None:
        """Raise for the first job that fails a check (:meth:`_plain_jobs_ok`)."""
        known = self.workers.keys()
        seen: dict[str, int] = {}
        for i, job in enumerate(self.jobs):
            if job.id in seen:
                raise fail(
                    f"jobs[{i}].id", f"duplicate job id {job.id!r} (also jobs[{seen[job.id]}])"
                )
            seen[job.id] = i
            if job.elastic is not None:
                _check_elastic_job(i, job, self.workers, cap)
                continue
            if job.throughput is None:
                raise fail(
                    f"jobs[{i}].throughput",
                    "required field is missing (or give the job's options in elastic)",
                )
            if not job.throughput.keys() <= known:
                for t in job.throughput:
                    if t not in self.workers:
                        raise fail(
                            f"jobs[{i}].throughput.{t}",
                            f"unknown worker type {t!r}; the cluster has: "
                            f"{', '.join(self.workers)}",
                        )
            sf = job.scale_factor
            if not any(v > 0 and cap[t] >= sf for t, v in job.throughput.items()):
                raise fail(
                    f"jobs[{i}]",
                    f"job {job.id!r} can run on no worker type: it needs a positive throughput on a "
                    f"type with at least scale_factor={job.scale_factor} GPUs",
                )
            if job.current_workers is not None and job.current_workers != job.scale_factor:
                raise fail(
                    f"jobs[{i}].current_workers",
                    f"a job that is not elastic runs on scale_factor={job.scale_factor} GPUs, "
                    f"got {job.current_workers}",
                )

    # ---- derived views (computed once) -------------------------------------------------
    @cached_property
    def arrays(self) -> ClusterArrays:
        return ClusterArrays.from_instance(self)

    @property
    def capacity(self) -> dict[str, int]:
        """GPUs of each type the cluster may use: ``workers`` plus ``loanable``."""
        loan = self.loanable or {}
        return {t: n + loan.get(t, 0) for t, n in self.workers.items()}

    @cached_property
    def has_elastic(self) -> bool:
        """Some job is elastic (known from validation when :meth:`_plain_jobs_ok` passed)."""
        return any(j.elastic is not None for j in self.jobs)


def _check_elastic_job(i: int, job: GpuJob, workers: dict[str, int], cap: dict[str, int]) -> None:
    """An elastic job: no fixed-size fields, known types, one option that fits."""
    spec = job.elastic
    assert spec is not None
    if job.throughput is not None:
        raise fail(
            f"jobs[{i}].throughput",
            "an elastic job takes its throughputs from elastic.throughput; drop throughput "
            "(or drop elastic)",
        )
    if job.scale_factor != 1:
        raise fail(
            f"jobs[{i}].scale_factor",
            "an elastic job's worker counts are elastic.workers; drop scale_factor",
        )
    for t in spec.throughput:
        if t not in workers:
            raise fail(
                f"jobs[{i}].elastic.throughput.{t}",
                f"unknown worker type {t!r}; the cluster has: {', '.join(workers)}",
            )
    if not any(
        v > 0 and w <= cap[t]
        for t, values in spec.throughput.items()
        for w, v in zip(spec.workers, values, strict=True)
    ):
        raise fail(
            f"jobs[{i}]",
            f"job {job.id!r} can run on no worker type: it needs a positive throughput with a "
            "worker count that fits in workers + loanable of that type",
        )
    if job.current_workers is not None and job.current_workers not in spec.workers:
        raise fail(
            f"jobs[{i}].current_workers",
            f"must be one of elastic.workers {spec.workers}, got {job.current_workers}",
        )


def _check_loaned_servers(inst: GpuClusterInstance, job_pos: dict[str, int]) -> None:
    """Loaned servers: known types within ``loanable``, known jobs that fit, one type per
    job, and a current worker count each job can run with."""
    servers = inst.loaned_servers or []
    if inst.loanable is None:
        raise fail("loaned_servers", "servers on loan need loanable (the GPUs lent, by type)")
    seen: dict[str, int] = {}
    lent: dict[str, int] = {}
    job_type: dict[str, tuple[str, int]] = {}
    on_loan: dict[str, int] = {}
    for k, srv in enumerate(servers):
        where = f"loaned_servers[{k}]"
        if srv.id in seen:
            raise fail(
                f"{where}.id",
                f"duplicate server id {srv.id!r} (also loaned_servers[{seen[srv.id]}])",
            )
        seen[srv.id] = k
        if srv.worker_type not in inst.workers:
            raise fail(
                f"{where}.worker_type",
                f"unknown worker type {srv.worker_type!r}; the cluster has: "
                f"{', '.join(inst.workers)}",
            )
        lent[srv.worker_type] = lent.get(srv.worker_type, 0) + srv.gpus
        if lent[srv.worker_type] > inst.loanable.get(srv.worker_type, 0):
            raise fail(
                f"{where}.gpus",
                f"loaned servers of type {srv.worker_type!r} hold {lent[srv.worker_type]} GPUs, "
                f"more than loanable.{srv.worker_type} = {inst.loanable.get(srv.worker_type, 0)}",
            )
        if sum(srv.jobs.values()) > srv.gpus:
            raise fail(
                f"{where}.jobs",
                f"the jobs use {sum(srv.jobs.values())} GPUs, the server has {srv.gpus}",
            )
        for j, n in srv.jobs.items():
            if j not in job_pos:
                raise fail(f"{where}.jobs.{j}", f"unknown job {j!r}")
            if j in job_type and job_type[j][0] != srv.worker_type:
                other = servers[job_type[j][1]]
                raise fail(
                    f"{where}.jobs.{j}",
                    f"job {j!r} is also on server {other.id!r} of type {other.worker_type!r}; "
                    "a job's workers are all of one type",
                )
            job_type.setdefault(j, (srv.worker_type, k))
            on_loan[j] = on_loan.get(j, 0) + n
    for j, loaned in on_loan.items():
        i = job_pos[j]
        job = inst.jobs[i]
        t, k = job_type[j]
        where = f"loaned_servers[{k}].jobs.{j}"
        if job.elastic is None:
            if (job.throughput or {}).get(t, 0.0) <= 0:
                raise fail(where, f"job {j!r} has no positive throughput on {t!r}")
            if loaned > job.scale_factor:
                raise fail(
                    where,
                    f"job {j!r} has {loaned} GPUs on loaned servers, more than its "
                    f"scale_factor={job.scale_factor}",
                )
            continue
        now = job.current_workers if job.current_workers is not None else loaned
        if now < loaned:
            raise fail(
                f"jobs[{i}].current_workers",
                f"job {j!r} has {loaned} GPUs on loaned servers, more than current_workers={now}",
            )
        if now not in job.elastic.workers:
            raise fail(
                where,
                f"job {j!r} runs on {loaned} loaned GPUs, not one of its elastic.workers "
                f"{job.elastic.workers}; give its current_workers",
            )
        thr = job.elastic.throughput.get(t)
        if thr is None or thr[job.elastic.workers.index(now)] <= 0:
            raise fail(
                where,
                f"job {j!r} cannot run with {now} workers of type {t!r} "
                f"(no positive elastic.throughput.{t})",
            )


def _throughput_matrix(thrs: list[dict[str, float]], types: list[str]) -> np.ndarray:
    """Jobs x ``types`` (C order) from each job's ``throughput`` dict (0 where a job
    names no throughput; every name a dict uses must be one of ``types``)."""
    aligned = _aligned_matrix(thrs, types)
    return aligned if aligned is not None else _lookup_matrix(thrs, types)


def _lookup_matrix(thrs: list[dict[str, float]], types: list[str]) -> np.ndarray:
    """:func:`_throughput_matrix` by looking every type up in every dict."""
    n, T = len(thrs), len(types)
    if T <= 16:
        # a column per type (5x faster than an assignment per entry)
        thr = np.array(
            [list(map(dict.get, thrs, repeat(t), repeat(0.0))) for t in types], dtype=float
        )
        return np.ascontiguousarray(thr.reshape(T, n).T)
    col = {t: k for k, t in enumerate(types)}  # wide clusters: the (few) entries of each job
    out = np.zeros((n, T))
    for i, d in enumerate(thrs):
        for t, v in d.items():
            out[i, col[t]] = v
    return out


def _aligned_matrix(thrs: list[dict[str, float]], types: list[str]) -> np.ndarray | None:
    """:func:`_throughput_matrix` when every dict names exactly ``types`` in that order
    (as generators and exporters write them), read off the dicts' values in one pass (9
    ms against 22 ms at 20,000 x 8, measured); ``None`` otherwise.

    The dicts' keys in sequence equal ``types`` repeated once per dict only then: no dict
    repeats a key, so none holds more than ``len(types)`` of them, and the total says
    each holds that many."""
    n, T = len(thrs), len(types)
    if n == 0 or T == 0:
        return None
    keys = list(chain.from_iterable(thrs))
    if len(keys) != n * T or keys != types * n:
        return None
    values = np.fromiter(chain.from_iterable(map(dict.values, thrs)), float, count=n * T)
    return values.reshape(n, T)


def _drop_columns(gone: weakref.ref[GpuClusterInstance]) -> None:
    """The instance whose columns :data:`_CHECKED` keeps died: let its jobs go with it
    (they were kept, and freed by the next validation in the thread: 20 ms of it at
    20,000 jobs, measured). From another thread nothing is dropped (as before)."""
    done = getattr(_CHECKED, "columns", None)
    if done is not None and done.instance is gone:
        _CHECKED.columns = None


@dataclass(frozen=True, eq=False)
class _JobColumns:
    """What :meth:`GpuClusterInstance._plain_jobs_ok` computed for the instance it last
    passed in this thread, for :meth:`ClusterArrays.from_instance` (taken once): valid
    while that instance lives and holds the same ``jobs`` list and ``workers`` dict."""

    instance: weakref.ref[GpuClusterInstance]
    jobs: list[GpuJob]
    workers: dict[str, int]
    ids: list[str]
    thr: np.ndarray
    scale: np.ndarray

    @staticmethod
    def of(inst: GpuClusterInstance) -> _JobColumns | None:
        done: _JobColumns | None = getattr(_CHECKED, "columns", None)
        if done is None or done.instance() is not inst:
            return None
        _CHECKED.columns = None
        if done.jobs is inst.jobs and done.workers is inst.workers:
            return done
        return None


_T = TypeVar("_T")

DERIVED: dict[str, str] = {
    "job_id_objects": "verify: the ids as a read-only object array (the job column's strings)",
    "positive_pairs": "verify: the pairs of positive throughput, job-major, and their positions",
    "proportional_throughput": "verify: Gavel's p_i, read-only",
    "fairness_weights": "verify: weight * p_i, read-only",
    "job_names": "methods: the tables' job column, as pandas infers it",
    "job_groups": "formulations: the symmetry groups of the time-sharing LPs, read-only",
    "job_groups_by_steps": "formulations: the same, jobs with other steps apart (makespan)",
    "weight_range": "persistent: the least and the greatest weight",
}
"""The values a :class:`ClusterArrays` keeps (:meth:`ClusterArrays.derived`): key -> the
module that computes it, and what it is. The verifier computes its entries from the
arrays itself; a policy may give the ids and the ``job`` column exactly
(:meth:`ClusterArrays.give`)."""


@dataclass(frozen=True, eq=False)
class ClusterArrays:
    """Dense numpy views of a :class:`GpuClusterInstance`.

    ``thr`` is jobs x types; ``allowed`` marks the pairs a job can use (positive
    throughput and at least ``scale_factor`` GPUs of that type). Compared by identity
    (arrays have no single truth value): two instances whose views are both computed
    compare by their fields.

    The arrays never change, so what other modules compute from them once (the ids as
    an object array, the positive pairs, the ``job`` column, ...) is kept on them by
    :meth:`derived`, under one of the keys :data:`DERIVED` declares.
    """

    job_ids: list[str]
    types: list[str]
    thr: np.ndarray
    scale: np.ndarray
    weight: np.ndarray
    steps: np.ndarray  # NaN where missing
    workers: np.ndarray
    allowed: np.ndarray
    _derived: dict[str, Any] = _field(default_factory=dict, init=False, repr=False)

    def derived(self, key: str, make: Callable[[ClusterArrays], _T]) -> _T:
        """``make(self)``, computed once per arrays and kept under ``key`` (one of
        :data:`DERIVED`'s). Every later caller shares what ``make`` returned, so
        callers never modify it."""
        found = self._derived.get(key)
        if found is None:
            if key not in DERIVED:
                raise KeyError(f"undeclared derived value {key!r} (declare it in DERIVED)")
            found = self._derived[key] = make(self)
        return found  # type: ignore[no-any-return]

    def give(self, key: str, value: Any) -> None:
        """Keep ``value`` under ``key`` as what :meth:`derived` would compute from these
        arrays (a :class:`~.persistent.PersistentPolicy` makes its next arrays' ids and
        ``job`` column from the last arrays' ones, exactly)."""
        if key not in DERIVED:
            raise KeyError(f"undeclared derived value {key!r} (declare it in DERIVED)")
        self._derived[key] = value

    @classmethod
    def from_instance(cls, inst: GpuClusterInstance) -> ClusterArrays:
        done = _JobColumns.of(inst)
        if done is None:
            return cls.of_jobs(inst.jobs, inst.workers)
        # from the job checks of validation
        return cls._assemble(done.ids, done.thr, done.scale, inst.jobs, inst.workers)

    @classmethod
    def of_jobs(cls, jobs: list[GpuJob], workers: dict[str, int]) -> ClusterArrays:
        """The arrays of the validated jobs ``jobs`` on a cluster of ``workers``: what
        :meth:`from_instance` gives for an instance of them, without making one (a
        :class:`~.persistent.PersistentPolicy`'s arriving jobs).

        Parameters
        ----------
        jobs
            Validated job records (each with a ``throughput`` naming only types of
            ``workers``, or none).
        workers
            GPUs per worker type, in the cluster's order.

        Returns
        -------
        ClusterArrays
            The jobs' arrays, the types in ``workers``' order.
        """
        ids = [j.id for j in jobs]
        thr = _throughput_matrix([job.throughput or {} for job in jobs], list(workers))
        scale = np.array([j.scale_factor for j in jobs], dtype=float)
        return cls._assemble(ids, thr, scale, jobs, workers)

    @classmethod
    def _assemble(
        cls,
        ids: list[str],
        thr: np.ndarray,
        scale: np.ndarray,
        jobs: list[GpuJob],
        workers: dict[str, int],
    ) -> ClusterArrays:
        types = list(workers)
        weight = np.array([j.weight for j in jobs], dtype=float)
        # (None is NaN in a float array: 3 ms against 4 with a test per job, measured)
        steps = np.array([j.steps_remaining for j in jobs], dtype=float)
        wk = np.array([workers[t] for t in types], dtype=float)
        allowed = (thr > 0) & (scale[:, None] <= wk[None, :])
        return cls(ids, types, thr, scale, weight, steps, wk, allowed)

    @property
    def num_jobs(self) -> int:
        return len(self.job_ids)

    def subset(self, rows: np.ndarray) -> ClusterArrays:
        """The same cluster with only the jobs ``rows`` (e.g. one per symmetry group)."""
        return ClusterArrays(
            [self.job_ids[i] for i in rows],
            self.types,
            self.thr[rows],
            self.scale[rows],
            self.weight[rows],
            self.steps[rows],
            self.workers,
            self.allowed[rows],
        )

    def proportional_throughput(self, thr: np.ndarray | None = None) -> np.ndarray:
        """Gavel's ``p_i = sum_t thr[i,t] * workers[t] / sum_t workers[t]``."""
        thr = self.thr if thr is None else thr
        return thr @ self.workers / self.workers.sum()


# ---- validation beside HiGHS (hetopt.deferred) -------------------------------------------
SPECULATE_MIN_PAIRS = 50_000
"""Jobs x worker types from which :func:`speculate` reads an instance provisionally:
validating it then takes pydantic-core tens of milliseconds (about 6 us a job), and its
LP goes to HiGHS's worker thread, beside which the validation runs; below, reading the
records twice would cost more than it hides."""

_SPECULATE_FIELDS = frozenset({"kind", "workers", "jobs", "objective"})
_SPECULATE_JOB_FIELDS = frozenset(GpuJob.model_fields) - _MAYBE_NAMED


def speculate(data: dict[str, Any], pending: Any) -> Any:
    """The provisional instance of a time-sharing cluster given as plain records
    (:meth:`hetopt.kinds.base.Kind.speculate`): ``workers``, ``objective`` and the
    defaults of the other fields as they are, :class:`ClusterArrays` read off the job
    records (every ``throughput`` naming the worker types in ``workers``' order, as
    generators and exporters write them), the jobs themselves pending. ``None`` for
    anything else (fewer than :data:`SPECULATE_MIN_PAIRS` pairs, other fields, elastic
    jobs, numbers beyond ``MAX_ABS``, ...): validated first, as always.

    It checks nothing the validation checks: values are read as the arrays hold them
    (``float``), and ``certify`` compares them with the validated instance's."""
    from ...deferred import PendingRecords, Speculation
    from ...instance import MAX_ABS

    if not data.keys() <= _SPECULATE_FIELDS:
        return None
    workers, jobs, objective = data.get("workers"), data.get("jobs"), data.get("objective")
    if type(workers) is not dict or type(jobs) is not list or not workers:
        return None
    if objective is not None and type(objective) is not str:
        return None
    types = list(workers)
    n = len(jobs)
    if n * len(types) < SPECULATE_MIN_PAIRS:
        return None
    if {type(t) for t in types} != {str} or {type(v) for v in workers.values()} != {int}:
        return None
    if {type(job) for job in jobs} != {dict}:
        return None
    if not set(chain.from_iterable(jobs)) <= _SPECULATE_JOB_FIELDS:
        return None
    try:
        ids = [job["id"] for job in jobs]
        thrs = [job["throughput"] for job in jobs]
        if {type(i) for i in ids} != {str} or {type(t) for t in thrs} != {dict}:
            return None
        thr = _aligned_matrix(thrs, types)
        if thr is None:
            return None
        scale = np.array([job.get("scale_factor", 1) for job in jobs], dtype=float)
        weight = np.array([job.get("weight", 1.0) for job in jobs], dtype=float)
        steps = np.array([job.get("steps_remaining") for job in jobs], dtype=float)
        wk = np.array(list(workers.values()), dtype=float)
    except (KeyError, TypeError, ValueError, OverflowError):
        return None
    finite = (thr, scale, weight, wk)
    if not all(np.isfinite(a).all() and (np.abs(a) <= MAX_ABS).all() for a in finite):
        return None
    known = steps[~np.isnan(steps)]
    if not (np.isfinite(known).all() and (np.abs(known) <= MAX_ABS).all()):
        return None
    allowed = (thr > 0) & (scale[:, None] <= wk)
    # (values the validation will reject would reach the model as divisions by zero and
    # the like, with numpy's warnings: such input is validated first)
    if not ((thr >= 0).all() and (scale >= 1).all() and (weight > 0).all() and (known > 0).all()):
        return None
    if not ((wk >= 0).all() and wk.sum() > 0 and allowed.any(axis=1).all()):
        return None
    arrays = ClusterArrays(ids, types, thr, scale, weight, steps, wk, allowed)
    inst = object.__new__(GpuClusterInstance)
    fields = {name: info.default for name, info in GpuClusterInstance.model_fields.items()}
    fields.update(kind="gpu_cluster", workers=dict(workers), objective=objective)
    fields["jobs"] = PendingRecords(n, pending, "jobs")
    object.__setattr__(inst, "__dict__", {**fields, "arrays": arrays, "has_elastic": False})
    object.__setattr__(inst, "__pydantic_fields_set__", set(data))
    object.__setattr__(inst, "__pydantic_extra__", None)
    object.__setattr__(inst, "__pydantic_private__", None)

    def certify(validated: GpuClusterInstance) -> None:
        from ...deferred import Mismatch

        mine = inst.__dict__
        for name in GpuClusterInstance.model_fields:
            if name != "jobs" and validated.__dict__[name] != mine[name]:
                raise Mismatch(f"field {name}")
        if validated.model_fields_set != inst.model_fields_set:
            raise Mismatch("the fields given")
        theirs = validated.arrays
        same = (
            theirs.job_ids == arrays.job_ids
            and theirs.types == arrays.types
            and np.array_equal(theirs.thr, arrays.thr)
            and np.array_equal(theirs.scale, arrays.scale)
            and np.array_equal(theirs.weight, arrays.weight)
            and np.array_equal(theirs.steps, arrays.steps, equal_nan=True)
            and np.array_equal(theirs.workers, arrays.workers)
            and validated.has_elastic is False
        )
        if not same:
            raise Mismatch("the jobs' arrays")
        mine["jobs"] = validated.jobs

    return Speculation(inst, certify)


_WORKER_COUNTS: Any = None


def worker_counts(workers: Any) -> dict[str, int]:
    """``workers`` (type -> GPU count) checked as an instance's ``workers`` entries are
    (whole numbers >= 0; numpy integers and integral floats as plain ints), for the APIs
    that take a cluster outside an instance (a policy's change, a generator's cluster).
    A bad count is an :class:`~hetopt.InstanceError` naming ``workers.<type>``."""
    global _WORKER_COUNTS
    from pydantic import TypeAdapter, ValidationError

    from ...errors import InstanceError
    from ...instance import _lenient, validation_to_instance_error

    if _WORKER_COUNTS is None:
        _WORKER_COUNTS = TypeAdapter(
            dict[str, Annotated[int, Field(ge=0, strict=True)]], config=ConfigDict(strict=True)
        )
    try:
        return dict(_lenient(_WORKER_COUNTS.validate_python, dict(workers)))
    except ValidationError as exc:
        err = validation_to_instance_error(exc, None)
        field = f"workers.{err.field}" if err.field else "workers"
        raise InstanceError(err.message, field) from None
