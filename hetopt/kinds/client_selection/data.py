"""The ``client_selection`` instance (one federated-learning round), its numpy views and
its solve parameters."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from ...columns import columns_of
from ...contract import Params
from ...instance import InstanceBase, RecordBase, fail
from .._shared.validation import id_positions

NonNegFloat = Annotated[float, Field(ge=0)]
PosFloat = Annotated[float, Field(gt=0)]
NonNegInt = Annotated[int, Field(ge=0)]

OBJECTIVES = ("max_clients", "max_weight", "min_duration")


class ClientSelectionParams(Params):
    """The solve parameters of ``client_selection`` (``-p KEY=VALUE``)."""

    method: Literal["auto", "milp", "fast", "greedy", "lp_round"] = Field(
        "auto",
        description="auto (default) | milp | fast (exact Moore-Hodgson / Lawler-Moore / "
        "sorting) | greedy (FedCS heuristic) | lp_round (min_duration: LP relaxation + "
        "restricted MILP)",
    )
    baseline: bool = Field(
        True, description="also run FedCS's greedy and report its gap (default true)"
    )
    formulation: Literal["erd", "disjunctive"] = Field(
        "erd",
        description="shared uplink MILP: erd (default; upload order fixed, proven optimal) "
        "| disjunctive (order as pair binaries, O(n^2), a cross-check)",
    )


_Strict = RecordBase
"""Base of the records (strict, frozen; numpy scalars and ``4.0`` for an integer accepted)."""


class Client(_Strict):
    """One FL client (device) in a round.

    ``ready_s`` is when its update is ready (download + local training), ``upload_s`` how
    long the upload takes on its own link when it has the uplink to itself.
    """

    id: Annotated[str, Field(min_length=1)]
    ready_s: NonNegFloat
    upload_s: NonNegFloat
    weight: NonNegFloat = 1.0
    """Utility of selecting the client (``max_weight``), e.g. Oort's statistical utility."""
    samples: dict[str, NonNegInt] = Field(default_factory=dict)
    """Samples the client holds per class (label)."""
    group: str | None = None
    """Group the client belongs to (region, device class, ...) for participation quotas."""
    sample_s: NonNegFloat = 0.0
    """Seconds to process one test sample (Oort testing-set selection, ``min_duration``)."""


class ClientSelectionInstance(InstanceBase):
    """One round of federated-learning client selection.

    Example::

        {"kind": "client_selection",
         "round_deadline_s": 300,
         "uplink": "shared",
         "clients": [{"id": "c1", "ready_s": 120.0, "upload_s": 30.0, "weight": 1.0,
                      "samples": {"cat": 50, "dog": 10}}],
         "max_clients": 100,
         "objective": "max_clients"}
    """

    kind: Literal["client_selection"] = "client_selection"
    round_deadline_s: PosFloat
    uplink: Literal["shared", "parallel"] = "shared"
    clients: Annotated[list[Client], Field(min_length=1)]
    max_clients: Annotated[int, Field(ge=1)] | None = None
    """At most this many clients are selected (``None``: no limit)."""
    objective: str | None = None
    update_mb: PosFloat | None = None
    """Size of one model update in megabytes (``uplink: "parallel"`` with a budget)."""
    bandwidth_budget_mbps: PosFloat | None = None
    """Total server uplink bandwidth in Mbit/s shared by parallel uploads."""
    class_targets: dict[str, NonNegInt] | None = None
    """Test samples wanted per class (Oort's testing-set selection, ``min_duration``)."""
    group_min: dict[str, NonNegInt] | None = None
    """At least this many selected clients from each group."""
    group_max: dict[str, NonNegInt] | None = None
    """At most this many selected clients from each group."""
    must_include: list[str] = Field(default_factory=list)
    """Client ids that must be selected."""
    exclude: list[str] = Field(default_factory=list)
    """Client ids that must not be selected."""

    @model_validator(mode="after")
    def _cross_checks(self) -> ClientSelectionInstance:
        if self.objective is not None and self.objective not in OBJECTIVES:
            raise fail(
                "objective",
                f"unknown objective {self.objective!r}; expected one of: {', '.join(OBJECTIVES)}",
            )
        seen = id_positions(self.clients, "clients", "client")
        if self.bandwidth_budget_mbps is not None:
            if self.uplink != "parallel":
                raise fail(
                    "bandwidth_budget_mbps",
                    "only applies to uplink 'parallel' (uplink is 'shared')",
                )
            if self.update_mb is None:
                raise fail(
                    "update_mb",
                    "required with bandwidth_budget_mbps (the size of one model update in MB)",
                )
        elif self.update_mb is not None:
            raise fail("update_mb", "only used together with bandwidth_budget_mbps")
        groups = {c.group for c in self.clients if c.group is not None}
        for name in ("group_min", "group_max"):
            quota = getattr(self, name)
            for g in quota or {}:
                if g not in groups:
                    shown = ", ".join(sorted(groups)[:8]) or "none"
                    raise fail(f"{name}.{g}", f"no client is in group {g!r}; groups: {shown}")
        if self.group_min and self.group_max:
            for g, lo in self.group_min.items():
                hi = self.group_max.get(g)
                if hi is not None and lo > hi:
                    raise fail(f"group_min.{g}", f"{lo} is above group_max.{g} = {hi}")
        for name in ("must_include", "exclude"):
            ids: list[str] = getattr(self, name)
            dup: dict[str, int] = {}
            for j, cid in enumerate(ids):
                if cid not in seen:
                    raise fail(f"{name}[{j}]", f"unknown client id {cid!r}")
                if cid in dup:
                    raise fail(f"{name}[{j}]", f"client {cid!r} is listed twice")
                dup[cid] = j
        both = set(self.must_include) & set(self.exclude)
        if both:
            j = next(j for j, cid in enumerate(self.exclude) if cid in both)
            raise fail(f"exclude[{j}]", f"client {self.exclude[j]!r} is also in must_include")
        if self.class_targets is not None:
            have: set[str] = set()
            for c in self.clients:
                have.update(k for k, v in c.samples.items() if v > 0)
            for k, v in self.class_targets.items():
                if v > 0 and k not in have:
                    raise fail(f"class_targets.{k}", f"no client holds samples of class {k!r}")
        return self

    @cached_property
    def arrays(self) -> ClientArrays:
        return ClientArrays.from_instance(self)


@dataclass(frozen=True)
class ClientArrays:
    """Numpy views of a :class:`ClientSelectionInstance` (client order kept)."""

    ids: list[str]
    ready: np.ndarray
    upload: np.ndarray
    weight: np.ndarray
    sample_s: np.ndarray
    group: np.ndarray
    """Group index per client (``-1``: no group)."""
    groups: list[str]
    allowed: np.ndarray
    """False for excluded clients."""
    forced: np.ndarray
    """True for clients in ``must_include``."""
    deadline: float

    @classmethod
    def from_instance(cls, inst: ClientSelectionInstance) -> ClientArrays:
        cl = inst.clients
        n = len(cl)
        given = columns_of(inst, "clients") or {}

        def column(name: str) -> np.ndarray:
            if name in given:  # the validated column the instance was built from
                return np.asarray(given[name], dtype=float)
            return np.fromiter((getattr(c, name) for c in cl), dtype=float, count=n)

        ready = column("ready_s")
        upload = column("upload_s")
        weight = column("weight")
        sample_s = column("sample_s")
        ids = [c.id for c in cl]
        groups = [c.group for c in cl]
        names = sorted({g for g in groups if g is not None})
        if names:
            gpos = {g: k for k, g in enumerate(names)}
            group = np.fromiter(
                (-1 if g is None else gpos[g] for g in groups), dtype=np.int64, count=n
            )
        else:
            group = np.full(n, -1, dtype=np.int64)
        allowed = np.ones(n, dtype=bool)
        forced = np.zeros(n, dtype=bool)
        if inst.exclude or inst.must_include:
            pos = {cid: i for i, cid in enumerate(ids)}
            allowed[[pos[c] for c in inst.exclude]] = False
            forced[[pos[c] for c in inst.must_include]] = True
        return cls(
            ids,
            ready,
            upload,
            weight,
            sample_s,
            group,
            names,
            allowed,
            forced,
            float(inst.round_deadline_s),
        )

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def slack(self) -> np.ndarray:
        """Due date in reversed time: ``deadline - ready_s``."""
        return self.deadline - self.ready

    @property
    def can_finish(self) -> np.ndarray:
        """Clients that could finish alone: ``ready_s + upload_s <= deadline``."""
        return self.ready + self.upload <= self.deadline * (1 + 1e-12)


@dataclass(frozen=True)
class SampleArrays:
    """Sparse (client, class, count) triplets of positive sample counts."""

    classes: list[str]
    client: np.ndarray
    cls: np.ndarray
    count: np.ndarray

    @classmethod
    def from_instance(cls, inst: ClientSelectionInstance) -> SampleArrays:
        targets = inst.class_targets or {}
        names = sorted(set(targets))
        pos = {k: j for j, k in enumerate(names)}
        ci: list[int] = []
        kj: list[int] = []
        cnt: list[int] = []
        for i, c in enumerate(inst.clients):
            for k, v in c.samples.items():
                if v > 0 and k in pos:
                    ci.append(i)
                    kj.append(pos[k])
                    cnt.append(v)
        return cls(
            names,
            np.asarray(ci, dtype=np.int64),
            np.asarray(kj, dtype=np.int64),
            np.asarray(cnt, dtype=float),
        )
