"""The ``pipeline_partition`` instances: a chain of layers cut into contiguous ranges.

Two modes share the kind (the ``mode`` field discriminates):

* ``serving`` (Helix): compute nodes each hold one contiguous range of layers; tokens
  flow source -> nodes -> sink through links; maximise tokens/s
  (:class:`ServingInstance`);
* ``training`` (HETHUB, Metis, HetPipe): pipeline stages, each a contiguous layer range
  on devices of one type; minimise the bottleneck stage time or the iteration time
  (:class:`TrainingInstance`).

:class:`PipelinePartitionInstance` is the kind's instance model: ``from_dict`` reads
``mode`` and validates with the mode's model; its JSON Schema is the discriminated union.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from ...errors import InstanceError
from ...instance import InstanceBase, fail
from .._shared.validation import note_id

PosFloat = Annotated[float, Field(gt=0)]
NonNegFloat = Annotated[float, Field(ge=0)]
Ident = Annotated[str, Field(min_length=1)]
MODES = ("serving", "training")
SERVING_OBJECTIVES = ("max_throughput",)
TRAINING_OBJECTIVES = ("min_stage_time", "min_iteration_time")
OBJECTIVES_OF_MODE = {"serving": SERVING_OBJECTIVES, "training": TRAINING_OBJECTIVES}
SOURCE, SINK = "source", "sink"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


# ----------------------------------------------------------------------------- serving
class ServingNode(_Strict):
    """A compute node of the serving cluster.

    ``throughput_by_layers[k-1]`` is the tokens/s the node sustains while holding ``k``
    consecutive layers; the list's length is the most layers that fit in its memory.
    ``type`` (e.g. ``"A100"``) is informational: nodes with equal tables and equal links
    are aggregated whatever their type.
    """

    id: Ident
    type: Ident | None = None
    throughput_by_layers: Annotated[list[PosFloat], Field(min_length=1)]


class Link(_Strict):
    """A directed network link (``from`` -> ``to``) with its capacity in tokens/s.

    ``from`` is a node id or ``"source"``; ``to`` is a node id or ``"sink"``.
    """

    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=True, allow_inf_nan=False, populate_by_name=True
    )

    from_: Ident = Field(alias="from")
    to: Ident
    capacity_tokens_s: PosFloat


class _Mode(InstanceBase):
    """Fields both modes share."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        strict=True,
        allow_inf_nan=False,
        arbitrary_types_allowed=False,
        populate_by_name=True,
    )

    kind: Literal["pipeline_partition"] = "pipeline_partition"

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True, by_alias=True)

    def _check_objective(self, mode: str) -> None:
        obj = getattr(self, "objective", None)
        if obj is not None and obj not in OBJECTIVES_OF_MODE[mode]:
            other = next(m for m in MODES if m != mode)
            hint = f" (an objective of mode {other!r})" if obj in OBJECTIVES_OF_MODE[other] else ""
            raise fail(
                "objective",
                f"unknown objective {obj!r} for mode {mode!r}{hint}; expected one of: "
                f"{', '.join(OBJECTIVES_OF_MODE[mode])}",
            )


class ServingInstance(_Mode):
    """Serving (Helix): place a model of ``layers`` layers on compute nodes, maximise the
    tokens/s that flow from ``source`` through the nodes' layer ranges to ``sink``.

    Example::

        {"kind": "pipeline_partition", "mode": "serving", "layers": 60,
         "nodes": [{"id": "0", "type": "A100", "throughput_by_layers": [24422.7, 11751.7]}],
         "links": [{"from": "source", "to": "0", "capacity_tokens_s": 5e8},
                   {"from": "0", "to": "sink", "capacity_tokens_s": 5e8}],
         "objective": "max_throughput"}

    Each node holds one contiguous range of ``k >= 1`` layers,
    ``k <= len(throughput_by_layers)``. A link ``i -> j`` carries tokens only if ``j``'s
    range starts where ``i``'s ends; ``source -> i`` needs ``i``'s range to start at layer
    0, ``i -> sink`` to end at ``layers``.
    """

    mode: Literal["serving"]
    layers: Annotated[int, Field(ge=1, le=100_000)]
    nodes: Annotated[list[ServingNode], Field(min_length=1)]
    links: list[Link] = Field(default_factory=list)
    objective: str | None = None

    @model_validator(mode="after")
    def _cross_checks(self) -> ServingInstance:
        seen: dict[str, int] = {}
        for i, n in enumerate(self.nodes):
            if n.id in (SOURCE, SINK):
                raise fail(f"nodes[{i}].id", f"{n.id!r} is reserved for the network's end")
            note_id(seen, "nodes", "node", i, n.id)
        pairs: dict[tuple[str, str], int] = {}
        for k, ln in enumerate(self.links):
            if ln.from_ != SOURCE and ln.from_ not in seen:
                where = "is the sink (no link leaves it)" if ln.from_ == SINK else "is unknown"
                raise fail(f"links[{k}].from", f"node {ln.from_!r} {where}")
            if ln.to != SINK and ln.to not in seen:
                where = "is the source (no link enters it)" if ln.to == SOURCE else "is unknown"
                raise fail(f"links[{k}].to", f"node {ln.to!r} {where}")
            if ln.from_ == ln.to:
                raise fail(f"links[{k}]", f"a link from {ln.from_!r} to itself")
            if ln.from_ == SOURCE and ln.to == SINK:
                raise fail(f"links[{k}]", "a link from source to sink would skip every layer")
            key = (ln.from_, ln.to)
            if key in pairs:
                raise fail(f"links[{k}]", f"duplicate link {key} (also links[{pairs[key]}])")
            pairs[key] = k
        self._check_objective("serving")
        return self

    @cached_property
    def node_index(self) -> dict[str, int]:
        return {n.id: i for i, n in enumerate(self.nodes)}

    def max_layers(self, i: int) -> int:
        """The most layers node ``i`` can hold (its table's length, at most ``layers``)."""
        return min(len(self.nodes[i].throughput_by_layers), self.layers)


# ----------------------------------------------------------------------------- training
class TrainingLayer(_Strict):
    """One layer of the model being trained.

    ``time_ms[type]`` is its forward + backward time per micro-batch on one device of
    that type (a type without an entry cannot run it); ``memory_gb`` its memory on one
    device (weights, optimiser state, stashed activations). Optional profiles:
    ``activation_gb``, the activation (and gradient) it sends to the next stage per
    micro-batch; ``tp_time_ms[type][degree]``, its time split over ``degree`` devices
    of that type by tensor parallelism (its memory is then ``memory_gb / degree``);
    ``grad_gb``, its gradient, all-reduced once per iteration among the data-parallel
    replicas of its stage (over the type's ``allreduce_gb_s``).
    """

    id: Ident
    time_ms: dict[Ident, PosFloat]
    memory_gb: NonNegFloat
    activation_gb: NonNegFloat = 0.0
    grad_gb: NonNegFloat = 0.0
    tp_time_ms: dict[Ident, dict[Ident, PosFloat]] = Field(default_factory=dict)


class DeviceType(_Strict):
    """``count`` devices of one type, each with ``memory_gb`` of memory.

    ``allreduce_gb_s``: the ring bandwidth between devices of the type (GB/s) for the
    gradient all-reduce of a stage's data-parallel replicas (none: not costed)."""

    type: Ident
    count: Annotated[int, Field(ge=1, le=100_000)]
    memory_gb: PosFloat
    allreduce_gb_s: PosFloat | None = None


class Interconnect(_Strict):
    """Bandwidth between a device of ``from_type`` and one of ``to_type`` (GB/s). A pair
    without an entry sends activations in no time (not a bottleneck)."""

    from_type: Ident
    to_type: Ident
    bandwidth_gb_s: PosFloat


class TrainingInstance(_Mode):
    """Training (HETHUB, Metis, HetPipe): cut ``layers`` into pipeline stages.

    Example::

        {"kind": "pipeline_partition", "mode": "training",
         "layers": [{"id": "l0", "time_ms": {"A100": 1.9, "V100": 4.1}, "memory_gb": 6.5}],
         "devices": [{"type": "A100", "count": 2, "memory_gb": 40},
                     {"type": "V100", "count": 4, "memory_gb": 16}],
         "micro_batches": 8, "objective": "min_iteration_time"}

    A stage is a contiguous layer range on devices of one type: by default one device;
    with ``max_data_parallel > 1`` up to that many data-parallel replicas (each runs the
    stage on ``1/r`` of every micro-batch: time ``/ r``, memory unchanged); with
    ``max_tensor_parallel > 1`` a tensor-parallel degree listed in every layer's
    ``tp_time_ms`` for the type. Stage time = the sum of its layers' times (+ the
    transfer of its output activation to the next stage, from ``interconnect``).

    With ``pipelines: P > 1`` (``min_iteration_time`` only) up to ``P`` pipelines share
    the device pool (data parallelism across heterogeneous pipelines):
    ``micro_batches`` is then the global batch ``B``, split into whole numbers
    ``b_r >= 1`` (``sum b_r = B``) over the pipelines used, and the iteration time is
    ``max_r (b_r + S_r - 1) x bottleneck_r``.
    """

    mode: Literal["training"]
    layers: Annotated[list[TrainingLayer], Field(min_length=1)]
    devices: Annotated[list[DeviceType], Field(min_length=1)]
    micro_batches: Annotated[int, Field(ge=1, le=1_000_000)]
    max_data_parallel: Annotated[int, Field(ge=1, le=1024)] = 1
    max_tensor_parallel: Annotated[int, Field(ge=1, le=1024)] = 1
    interconnect: list[Interconnect] = Field(default_factory=list)
    pipelines: Annotated[int, Field(ge=1, le=1024)] | None = None
    objective: str | None = None

    @model_validator(mode="after")
    def _cross_checks(self) -> TrainingInstance:
        if self.split and self.objective == "min_stage_time":
            raise fail(
                "pipelines",
                "several pipelines split the batch to minimise the iteration time: use "
                "objective 'min_iteration_time' (or pipelines: 1)",
            )
        types: dict[str, int] = {}
        for i, d in enumerate(self.devices):
            if d.type in types:
                raise fail(
                    f"devices[{i}].type",
                    f"duplicate device type {d.type!r} (also devices[{types[d.type]}])",
                )
            types[d.type] = i
        seen: dict[str, int] = {}
        for i, layer in enumerate(self.layers):
            note_id(seen, "layers", "layer", i, layer.id)
            if not layer.time_ms:
                raise fail(
                    f"layers[{i}].time_ms", "give the layer's time on at least one device type"
                )
            for t in layer.time_ms:
                if t not in types:
                    raise fail(f"layers[{i}].time_ms.{t}", f"unknown device type {t!r}")
            for t, by_degree in layer.tp_time_ms.items():
                if t not in types:
                    raise fail(f"layers[{i}].tp_time_ms.{t}", f"unknown device type {t!r}")
                if t not in layer.time_ms:
                    raise fail(
                        f"layers[{i}].tp_time_ms.{t}",
                        f"the layer has no time_ms for {t!r}, so it cannot run there at all",
                    )
                for deg in by_degree:
                    if not deg.isdigit() or int(deg) < 2:
                        raise fail(
                            f"layers[{i}].tp_time_ms.{t}.{deg}",
                            "a tensor-parallel degree is a whole number >= 2 (as a string key)",
                        )
        pairs: dict[tuple[str, str], int] = {}
        for k, c in enumerate(self.interconnect):
            for fld, t in (("from_type", c.from_type), ("to_type", c.to_type)):
                if t not in types:
                    raise fail(f"interconnect[{k}].{fld}", f"unknown device type {t!r}")
            key = (c.from_type, c.to_type)
            if key in pairs:
                raise fail(
                    f"interconnect[{k}]", f"duplicate pair {key} (also interconnect[{pairs[key]}])"
                )
            pairs[key] = k
        self._check_objective("training")
        return self

    @property
    def split(self) -> bool:
        """Several pipelines share the devices and split the batch (``pipelines > 1``)."""
        return self.pipelines is not None and self.pipelines > 1

    @cached_property
    def type_names(self) -> list[str]:
        return [d.type for d in self.devices]


# ----------------------------------------------------------------------------- the union
_MODELS: dict[str, type[_Mode]] = {"serving": ServingInstance, "training": TrainingInstance}
_UNION: Any = TypeAdapter(
    Annotated[ServingInstance | TrainingInstance, Field(discriminator="mode")]
)


class PipelinePartitionInstance(InstanceBase):
    """The kind's instance model: a :class:`ServingInstance` or a
    :class:`TrainingInstance`, chosen by the ``mode`` field (required).

    ``PipelinePartitionInstance.from_dict(data)`` returns the mode's instance.
    """

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str | None = None) -> Any:
        if not isinstance(data, Mapping):
            raise InstanceError("expected an object", None, source)
        mode = data.get("mode")
        if mode is None:
            raise InstanceError(
                f"required field is missing; expected one of: {', '.join(MODES)}", "mode", source
            )
        if not isinstance(mode, str) or mode not in _MODELS:
            raise InstanceError(
                f"unknown mode {mode!r}; expected one of: {', '.join(MODES)}", "mode", source
            )
        return _MODELS[mode].from_dict(data, source=source)

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        """The discriminated union of the two modes, with the fields they share (and the
        union of their properties) at the top level for editors and tools."""
        from ...schema import InstanceJsonSchema

        kwargs.setdefault("schema_generator", InstanceJsonSchema)  # caps, kind, objectives
        union = copy.deepcopy(_UNION.json_schema(*args, **kwargs))
        defs = union.get("$defs", {})
        serving, training = defs["ServingInstance"], defs["TrainingInstance"]
        props: dict[str, Any] = {}
        for name in [*serving["properties"], *training["properties"]]:
            a, b = serving["properties"].get(name), training["properties"].get(name)
            if name == "mode":
                props[name] = {"enum": list(MODES), "title": "Mode", "type": "string"}
            elif a is not None and b is not None and a != b:
                props[name] = {"anyOf": [a, b], "title": a.get("title", name)}
            else:
                props[name] = a if a is not None else b
        required = [r for r in serving.get("required", []) if r in training.get("required", [])]
        return {
            "title": "PipelinePartitionInstance",
            "description": (cls.__doc__ or "").strip().splitlines()[0],
            "type": "object",
            "properties": props,
            "required": sorted({"kind", *required}),
            **{k: v for k, v in union.items() if k != "$defs"},
            "$defs": defs,
        }


Instance = ServingInstance | TrainingInstance
