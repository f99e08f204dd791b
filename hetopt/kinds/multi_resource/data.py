"""The ``multi_resource`` instance (Synergy's setting) and its derived numpy views."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from ...errors import InstanceError
from ...instance import InstanceBase, RecordBase, fail
from .._shared.validation import id_positions, note_id

PosFloat = Annotated[float, Field(gt=0)]
NonNegFloat = Annotated[float, Field(ge=0)]

MAX_RANGE = 1e9
"""Largest ratio between two profile throughputs (or two positive server costs) of one
instance: the model's ``c_total`` (``c_cost``) row holds them side by side, and beyond
this range HiGHS's tolerances mistake feasible models for infeasible ones (measured: a
1e12 throughput next to 1.3 made HiGHS report ``infeasible``)."""

FAIR_TOL = 1e-9
"""Relative tolerance when comparing a profile's CPUs/memory per GPU with the fair share."""


_Strict = RecordBase
"""Base of the records (strict, frozen; numpy scalars and ``4.0`` for an integer accepted)."""


Name = Annotated[str, Field(min_length=1)]

SERVER_SCOPE = "server"
"""The scope of a placement rule whose groups are the servers themselves."""


class Server(_Strict):
    """One server: its GPUs, CPU cores and memory; optional labels and cost."""

    id: Name
    gpus: Annotated[int, Field(ge=1)]
    cpus: NonNegFloat
    mem_gb: NonNegFloat
    labels: dict[Name, Name] | None = None
    """Label key -> value (e.g. ``{"rack": "r0", "zone": "z1"}``): the groups of placement
    rules scoped on that key."""
    cost_per_hour: NonNegFloat | None = None
    """What the server costs per hour while it runs any job (``min_cost``)."""


class Profile(_Strict):
    """One profiled configuration of a job: resources per GPU and the job's throughput."""

    cpus_per_gpu: PosFloat
    mem_gb_per_gpu: PosFloat
    throughput: PosFloat
    """Throughput of the whole job in this configuration (Synergy: normalised, 1.0 = the
    throughput at the GPU-proportional fair share). Leave unprofiled configurations out."""


class Job(_Strict):
    """A DNN training job asking for ``gpus`` GPUs, with its throughput profile."""

    id: Name
    gpus: Annotated[int, Field(ge=1)]
    profile: Annotated[list[Profile], Field(min_length=1)]
    tags: list[Name] | None = None
    """What placement rules call the job (e.g. ``["db"]``)."""
    min_throughput: PosFloat | None = None
    """The throughput the job's deadline needs: ``min_cost`` gives it at least this
    (instead of its fair share), ``max_total_throughput`` at least this and its fair share."""


class _Rule(_Strict):
    tag: Name
    """The jobs the rule constrains: those with this tag."""
    scope: Name = SERVER_SCOPE
    """``"server"`` (each server is a group) or a label key (servers with the same value
    of that label form a group; servers without the label are in no group)."""
    hard: bool = True
    """Hard rules must hold; a soft rule's violations cost ``penalty`` each."""
    penalty: NonNegFloat = 0.0
    """Cost of one violation of a soft rule, in the objective's unit (ignored when hard)."""


class AntiAffinity(_Rule):
    """At most one job with ``tag`` per group; each further one is a violation."""

    rule: Literal["anti_affinity"]


class Affinity(_Rule):
    """Each job with ``tag`` must share its group with another job with ``with_tag``;
    every (job, group it touches) without one is a violation."""

    rule: Literal["affinity"]
    with_tag: Name


class MaxPerGroup(_Rule):
    """At most ``max_per_group`` jobs with ``tag`` per group; each further one is a
    violation."""

    rule: Literal["max_per_group"]
    max_per_group: Annotated[int, Field(ge=0)]


class Spread(_Rule):
    """Jobs with ``tag`` spread over the scope's groups: the most and least loaded
    groups differ by at most ``max_skew`` jobs; each job of excess skew is a violation."""

    rule: Literal["spread"]
    max_skew: Annotated[int, Field(ge=0)]


PlacementRule = Annotated[
    AntiAffinity | Affinity | MaxPerGroup | Spread, Field(discriminator="rule")
]


class MultiResourceInstance(InstanceBase):
    """Servers with GPUs, CPUs and memory; DNN jobs with (CPUs, memory) per GPU profiles.

    Example::

        {"kind": "multi_resource",
         "servers": [{"id": "s0", "gpus": 8, "cpus": 24, "mem_gb": 500}],
         "jobs": [{"id": "j1", "gpus": 1,
                   "profile": [{"cpus_per_gpu": 3, "mem_gb_per_gpu": 62.5, "throughput": 1.0},
                               {"cpus_per_gpu": 6, "mem_gb_per_gpu": 62.5, "throughput": 1.4}]}],
         "objective": "max_total_throughput"}
    """

    kind: Literal["multi_resource"] = "multi_resource"
    servers: Annotated[list[Server], Field(min_length=1)]
    jobs: Annotated[list[Job], Field(min_length=1)]
    placement_rules: list[PlacementRule] | None = None
    objective: str | None = None

    @model_validator(mode="after")
    def _cross_checks(self) -> MultiResourceInstance:
        id_positions(self.servers, "servers", "server")
        total = sum(srv.gpus for srv in self.servers)
        jseen: dict[str, int] = {}
        for i, job in enumerate(self.jobs):
            note_id(jseen, "jobs", "job", i, job.id)
            if job.gpus > total:
                raise fail(
                    f"jobs[{i}].gpus",
                    f"job {job.id!r} asks for {job.gpus} GPUs; the cluster has only {total}",
                )
            tags = job.tags or []
            if len(set(tags)) != len(tags):
                dup = next(t for t in tags if tags.count(t) > 1)
                raise fail(f"jobs[{i}].tags", f"job {job.id!r} lists tag {dup!r} twice")
            best = max(p.throughput for p in job.profile)
            if job.min_throughput is not None and job.min_throughput > best:
                raise fail(
                    f"jobs[{i}].min_throughput",
                    f"job {job.id!r} needs {job.min_throughput:g}; its best profile gives {best:g}",
                )
        _check_range(
            [
                (f"jobs[{i}].profile[{k}].throughput", p.throughput)
                for i, job in enumerate(self.jobs)
                for k, p in enumerate(job.profile)
            ],
            "throughputs",
        )
        _check_range(
            [
                (f"servers[{i}].cost_per_hour", srv.cost_per_hour)
                for i, srv in enumerate(self.servers)
                if srv.cost_per_hour
            ],
            "costs per hour",
        )
        keys = {k for srv in self.servers for k in (srv.labels or {})}
        for k, rule in enumerate(self.placement_rules or []):
            if rule.scope != SERVER_SCOPE and rule.scope not in keys:
                raise fail(
                    f"placement_rules[{k}].scope",
                    f"rule {k} ({describe_rule(rule)}): no server has the label {rule.scope!r}"
                    + (
                        f" (labels: {', '.join(sorted(keys))})"
                        if keys
                        else " (no server has labels)"
                    ),
                )
        return self

    @cached_property
    def arrays(self) -> MultiResourceArrays:
        return MultiResourceArrays.from_instance(self)


def _check_range(values: list[tuple[str, float]], what: str) -> None:
    """Reject ``values`` (field, positive value) spanning more than :data:`MAX_RANGE`."""
    if not values:
        return
    lo = min(values, key=lambda fv: fv[1])
    hi = max(values, key=lambda fv: fv[1])
    if hi[1] > MAX_RANGE * lo[1]:
        raise fail(
            hi[0],
            f"{hi[1]:g} is more than {MAX_RANGE:g} times {lo[0]} ({lo[1]:g}): {what} that far "
            "apart are beyond the solver's tolerances; rescale them",
        )


def describe_rule(rule: AntiAffinity | Affinity | MaxPerGroup | Spread) -> str:
    """One phrase for a placement rule, e.g. ``anti_affinity of 'db' per 'rack' group, hard``."""
    per = "server" if rule.scope == SERVER_SCOPE else f"{rule.scope!r} group"
    if isinstance(rule, Affinity):
        what = f"affinity of {rule.tag!r} with {rule.with_tag!r} per {per}"
    elif isinstance(rule, MaxPerGroup):
        what = f"at most {rule.max_per_group} {rule.tag!r} per {per}"
    elif isinstance(rule, Spread):
        what = f"spread of {rule.tag!r} over {per}s, max_skew {rule.max_skew}"
    else:
        what = f"anti_affinity of {rule.tag!r} per {per}"
    return what + (", hard" if rule.hard else f", soft with penalty {rule.penalty:g}")


def fair_share_throughput(
    profiles: list[Profile], cpus_per_gpu: float, mem_gb_per_gpu: float
) -> float:
    """Best throughput among ``profiles`` within the fair share of CPUs and memory per GPU.

    0.0 when no profile fits within the fair share (the job then has no floor).
    """
    best = 0.0
    for p in profiles:
        if p.cpus_per_gpu <= cpus_per_gpu * (
            1 + FAIR_TOL
        ) and p.mem_gb_per_gpu <= mem_gb_per_gpu * (1 + FAIR_TOL):
            best = max(best, p.throughput)
    return best


@dataclass(frozen=True)
class RuleArrays:
    """One placement rule as arrays: its groups of servers and its jobs."""

    index: int
    """Position in ``placement_rules``."""
    rule: str
    tag: str
    with_tag: str | None
    scope: str
    hard: bool
    penalty: float
    limit: int
    """anti_affinity: 1; max_per_group: ``max_per_group``; spread: ``max_skew``;
    affinity: 0."""
    group_of: np.ndarray
    """Group of each server (``-1``: the server lacks the scope's label)."""
    group_names: list[str]
    """Name of each group: the server id (scope ``server``) or the label value."""
    tagged: np.ndarray
    """Jobs with ``tag``."""
    partner: np.ndarray
    """Jobs with ``with_tag`` (affinity; all false otherwise)."""
    text: str
    """One phrase (:func:`describe_rule`)."""

    @property
    def label(self) -> str:
        return f"placement_rules[{self.index}]"

    @property
    def num_groups(self) -> int:
        return len(self.group_names)

    @classmethod
    def of(cls, inst: MultiResourceInstance, k: int) -> RuleArrays:
        rule = (inst.placement_rules or [])[k]
        if rule.scope == SERVER_SCOPE:
            names = [s.id for s in inst.servers]
            group_of = np.arange(len(names))
        else:
            pos: dict[str, int] = {}
            group_of = np.array(
                [
                    pos.setdefault(s.labels[rule.scope], len(pos))
                    if s.labels and rule.scope in s.labels
                    else -1
                    for s in inst.servers
                ],
                dtype=np.int64,
            )
            names = list(pos)
        with_tag = rule.with_tag if isinstance(rule, Affinity) else None
        tags = [set(j.tags or ()) for j in inst.jobs]
        if isinstance(rule, MaxPerGroup):
            limit = rule.max_per_group
        elif isinstance(rule, Spread):
            limit = rule.max_skew
        else:
            limit = 1 if isinstance(rule, AntiAffinity) else 0
        return cls(
            index=k,
            rule=rule.rule,
            tag=rule.tag,
            with_tag=with_tag,
            scope=rule.scope,
            hard=rule.hard,
            penalty=float(rule.penalty),
            limit=int(limit),
            group_of=np.asarray(group_of, dtype=np.int64),
            group_names=names,
            tagged=np.array([rule.tag in t for t in tags], dtype=bool),
            partner=np.array([with_tag is not None and with_tag in t for t in tags], dtype=bool),
            text=describe_rule(rule),
        )


@dataclass(frozen=True)
class MultiResourceArrays:
    """Numpy views of a :class:`MultiResourceInstance`.

    Profiles are flattened: ``prof_job[k]`` is the job of profile ``k`` and
    ``prof_pos[k]`` its position in that job's ``profile`` list.
    """

    job_ids: list[str]
    server_ids: list[str]
    job_gpus: np.ndarray
    srv_gpus: np.ndarray
    srv_cpus: np.ndarray
    srv_mem: np.ndarray
    prof_job: np.ndarray
    prof_pos: np.ndarray
    prof_cpu: np.ndarray
    prof_mem: np.ndarray
    prof_tput: np.ndarray
    fair_share: np.ndarray
    cpus_per_gpu: float
    mem_gb_per_gpu: float
    floor: np.ndarray
    """Least throughput of each job under ``max_total_throughput``: its fair share, or its
    ``min_throughput`` when higher (equal to ``fair_share`` without ``min_throughput``)."""
    cost_floor: np.ndarray
    """Least throughput of each job under ``min_cost``: its ``min_throughput``, else its
    fair share."""
    job_tags: list[tuple[str, ...]]
    """Each job's tags (sorted)."""
    srv_cost: np.ndarray
    """Each server's ``cost_per_hour`` (NaN where not given)."""
    srv_labels: list[dict[str, str]]
    rules: tuple[RuleArrays, ...]

    @classmethod
    def from_instance(cls, inst: MultiResourceInstance) -> MultiResourceArrays:
        srv_gpus = np.array([s.gpus for s in inst.servers], dtype=float)
        srv_cpus = np.array([s.cpus for s in inst.servers], dtype=float)
        srv_mem = np.array([s.mem_gb for s in inst.servers], dtype=float)
        cpg = float(srv_cpus.sum() / srv_gpus.sum())
        mpg = float(srv_mem.sum() / srv_gpus.sum())
        pj, pp, pc, pm, pt = [], [], [], [], []
        for i, job in enumerate(inst.jobs):
            for k, p in enumerate(job.profile):
                pj.append(i)
                pp.append(k)
                pc.append(p.cpus_per_gpu)
                pm.append(p.mem_gb_per_gpu)
                pt.append(p.throughput)
        fair = np.array([fair_share_throughput(j.profile, cpg, mpg) for j in inst.jobs])
        mt = np.array([np.nan if j.min_throughput is None else j.min_throughput for j in inst.jobs])
        given = ~np.isnan(mt)
        return cls(
            job_ids=[j.id for j in inst.jobs],
            server_ids=[s.id for s in inst.servers],
            job_gpus=np.array([j.gpus for j in inst.jobs], dtype=float),
            srv_gpus=srv_gpus,
            srv_cpus=srv_cpus,
            srv_mem=srv_mem,
            prof_job=np.array(pj, dtype=np.int64),
            prof_pos=np.array(pp, dtype=np.int64),
            prof_cpu=np.array(pc, dtype=float),
            prof_mem=np.array(pm, dtype=float),
            prof_tput=np.array(pt, dtype=float),
            fair_share=fair,
            cpus_per_gpu=cpg,
            mem_gb_per_gpu=mpg,
            floor=np.where(given, np.fmax(fair, mt), fair),
            cost_floor=np.where(given, mt, fair),
            job_tags=[tuple(sorted(j.tags or ())) for j in inst.jobs],
            srv_cost=np.array(
                [np.nan if s.cost_per_hour is None else s.cost_per_hour for s in inst.servers]
            ),
            srv_labels=[dict(s.labels or {}) for s in inst.servers],
            rules=tuple(RuleArrays.of(inst, k) for k in range(len(inst.placement_rules or []))),
        )

    @property
    def num_jobs(self) -> int:
        return len(self.job_ids)

    @property
    def num_servers(self) -> int:
        return len(self.server_ids)

    @property
    def max_server_gpus(self) -> float:
        return float(self.srv_gpus.max())

    def is_split(self) -> np.ndarray:
        """Jobs that need more GPUs than the largest server has (placed on several)."""
        return self.job_gpus > self.max_server_gpus


def check_penalty_range(instance: MultiResourceInstance, objective: str) -> None:
    """``max_total_throughput``: soft rules' penalties at most :data:`MAX_RANGE` times
    the smallest throughput (:class:`InstanceError` naming the largest penalty).

    The model's ``c_net`` row holds the total penalty beside the total throughput.
    Measured on ``instances/multi_resource/rules.json`` (throughputs 1-1.3): a penalty of
    1e11 ended "HiGHS run failed (Solve error)", and without the warm start HiGHS called
    the feasible model ``infeasible``; 1e10 solved. The limit leaves the same tenfold
    margin as the throughputs' own range. ``min_cost`` adds the penalties to the costs in
    its objective with no such row, and solved correctly at every ratio tried (penalties
    up to the 1e12 cap beside costs down to 1e-6), so it is not limited.
    """
    if objective == "min_cost":
        return
    top: tuple[str, float] | None = None
    for k, rule in enumerate(instance.placement_rules or []):
        if not rule.hard and (top is None or rule.penalty > top[1]):
            top = (f"placement_rules[{k}].penalty", float(rule.penalty))
    if top is None or top[1] == 0:
        return
    lo = min(
        (
            (f"jobs[{i}].profile[{k}].throughput", float(p.throughput))
            for i, job in enumerate(instance.jobs)
            for k, p in enumerate(job.profile)
        ),
        key=lambda fv: fv[1],
    )
    if top[1] > MAX_RANGE * lo[1]:
        raise InstanceError(
            f"{top[1]:g} is more than {MAX_RANGE:g} times {lo[0]} ({lo[1]:g}): objective "
            f"{objective} subtracts soft rules' penalties from the throughputs, and "
            "coefficients that far apart are beyond the solver's tolerances; lower the "
            'penalty, or make the rule hard ("hard": true)',
            top[0],
        )


def require_costs(instance: MultiResourceInstance) -> None:
    """``min_cost`` needs every server's ``cost_per_hour`` (:class:`InstanceError`
    naming the first server without one)."""
    for i, srv in enumerate(instance.servers):
        if srv.cost_per_hour is None:
            raise InstanceError(
                f"objective min_cost needs every server's cost_per_hour; server {srv.id!r} "
                "has none",
                f"servers[{i}].cost_per_hour",
            )
