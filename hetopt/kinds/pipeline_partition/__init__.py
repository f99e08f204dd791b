"""The ``pipeline_partition`` kind: cut a chain of layers into contiguous ranges on
heterogeneous devices.

* ``mode: serving`` (Helix, ASPLOS'25): each compute node holds one layer range, tokens
  flow source -> nodes -> sink; ``max_throughput`` by the arc-flow MILP of
  :mod:`.serving` (identical nodes aggregated, no big-M), warm-started by a segment
  pipeline DP;
* ``mode: training`` (HETHUB, Metis, HetPipe): pipeline stages on device types;
  ``min_stage_time`` (the bottleneck) and ``min_iteration_time``
  (``(micro_batches + stages - 1) x bottleneck``, the number of stages chosen too) by the
  boundary-path MILP of :mod:`.training`; with ``pipelines > 1`` the batch is split over
  several pipelines sharing the devices (:mod:`.split`).

See ``models/pipeline_partition.md``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ...contract import Column, Detail, Objective, Params, Table
from ...errors import UsageError
from ...result import Result, Verification
from ..base import Kind, LazyMethod, MethodEntry
from .data import (
    OBJECTIVES_OF_MODE,
    DeviceType,
    Interconnect,
    Link,
    PipelinePartitionInstance,
    ServingInstance,
    ServingNode,
    TrainingInstance,
    TrainingLayer,
)

__all__ = [
    "KIND",
    "DeviceType",
    "Interconnect",
    "Link",
    "PipelinePartitionInstance",
    "PipelinePartitionKind",
    "PipelinePartitionParams",
    "ServingInstance",
    "ServingNode",
    "TrainingInstance",
    "TrainingLayer",
]


class PipelinePartitionParams(Params):
    """Solve switches (the formulation stays exact whatever they are)."""

    aggregate: bool = Field(
        True,
        description="serving: count identical nodes in one column per range (exact; "
        "false gives every node its own columns)",
    )
    warm_start: bool = Field(
        True,
        description="serving: start HiGHS from the best segment pipeline found by a "
        "dynamic programme (and add the cover rows it proves valid)",
    )
    cover_cuts: bool = Field(
        True,
        description="serving: with a warm start of value F0, require throughput >= F0 and "
        "every layer held with F0 tokens/s of capacity (valid for every optimum)",
    )
    max_stages: int | None = Field(
        None,
        ge=1,
        description="training: at most this many pipeline stages (default: as many as "
        "there are devices)",
    )


# ----------------------------------------------------------------------------- tables
PLACEMENT = Table(
    "placement",
    "serving: the layer range each node holds (every node holds one)",
    (
        Column("node", "str", "node id"),
        Column("start_layer", "int", "first layer held (0-based)"),
        Column("num_layers", "int", "number of consecutive layers held"),
        Column("node_type", "str", "the node's type ('' if the instance gives none)"),
        Column("capacity_tokens_s", "float", "the node's throughput holding them", "tokens/s"),
        Column("load_tokens_s", "float", "tokens/s flowing through the node", "tokens/s"),
    ),
    optional=True,
)
FLOW = Table(
    "flow",
    "serving: tokens/s on each link that carries any (a maximum flow of the placement)",
    (
        Column("from", "str", "node id or 'source'"),
        Column("to", "str", "node id or 'sink'"),
        Column("tokens_s", "float", "tokens per second on the link", "tokens/s"),
    ),
    optional=True,
)
STAGES = Table(
    "stages",
    "training: the pipeline stages in layer order",
    (
        Column("stage", "int", "stage number (0-based, in pipeline order)"),
        Column("device_type", "str", "type of the stage's devices"),
        Column("start_layer", "int", "position of its first layer (0-based)"),
        Column("num_layers", "int", "number of consecutive layers"),
        Column("first_layer", "str", "id of its first layer"),
        Column("last_layer", "str", "id of its last layer"),
        Column("replicas", "int", "data-parallel replicas (devices running the stage)"),
        Column("tp_degree", "int", "tensor-parallel degree of each replica"),
        Column("devices", "int", "devices used: replicas x tp_degree"),
        Column("compute_ms", "float", "compute time per micro-batch", "ms"),
        Column("transfer_ms", "float", "time to send its output to the next stage", "ms"),
        Column("time_ms", "float", "stage time: compute + transfer", "ms"),
        Column("memory_gb", "float", "memory per device", "GB"),
        Column(
            "pipeline",
            "int",
            "pipelines > 1: the pipeline of the stage (stages numbered within it)",
            optional=True,
        ),
        Column(
            "allreduce_ms",
            "float",
            "with replicas, grad_gb and allreduce_gb_s: ring all-reduce of the stage's "
            "gradients among its replicas, once per iteration",
            "ms",
            optional=True,
        ),
    ),
    optional=True,
)
LAYER_STAGE = Table(
    "layer_stage",
    "training: the stage of every layer",
    (
        Column("layer", "str", "layer id"),
        Column("stage", "int", "its stage"),
        Column("device_type", "str", "the stage's device type"),
        Column("pipeline", "int", "pipelines > 1: the pipeline of the stage", optional=True),
    ),
    optional=True,
)
BATCH_SPLIT = Table(
    "batch_split",
    "training with pipelines > 1: the micro-batches of every pipeline used",
    (
        Column("pipeline", "int", "pipeline number (0-based, most micro-batches first)"),
        Column("micro_batches", "int", "micro-batches it runs per iteration (b_r >= 1)"),
        Column("stages", "int", "its number of stages S_r"),
        Column("bottleneck_ms", "float", "its largest stage time", "ms"),
        Column(
            "time_ms",
            "float",
            "its iteration time (b_r + S_r - 1) x bottleneck (+ allreduce_ms)",
            "ms",
        ),
        Column(
            "allreduce_ms",
            "float",
            "with a gradient all-reduce cost: the largest of its stages'",
            "ms",
            optional=True,
        ),
    ),
    optional=True,
)
DETAILS = (
    Detail("groups", "int", "serving: node groups after aggregating identical nodes"),
    Detail("arcs", "int", "serving: (group, layer range) columns of the model"),
    Detail("warm_start_tokens_s", "float", "serving: value of the DP warm start", "tokens/s"),
    Detail("warm_start_s", "float", "serving: time spent in the warm-start DP", "s"),
    Detail(
        "warm_start_used",
        "bool",
        "serving: the result is the warm start (HiGHS found nothing better)",
    ),
    Detail("cover_rows", "bool", "serving: the cover rows and throughput >= F0 were added"),
    Detail(
        "lp_bound_tokens_s",
        "float",
        "serving: upper bound proven by LP relaxations of the cover model",
        "tokens/s",
    ),
    Detail("lp_bound_solves", "int", "serving: LP relaxations solved for that bound"),
    Detail(
        "milp_tokens_s",
        "float",
        "serving: HiGHS's objective (the placement's max flow may be higher)",
        "tokens/s",
    ),
    Detail("stages", "int", "training: number of pipeline stages"),
    Detail("bottleneck_ms", "float", "training: the largest stage time", "ms"),
    Detail(
        "iteration_ms",
        "float",
        "training: (micro_batches + stages - 1) x bottleneck (pipelines > 1: of the slowest "
        "pipeline)",
        "ms",
    ),
    Detail("pipelines", "int", "training with pipelines > 1: pipelines used"),
    Detail(
        "allreduce_ms",
        "float",
        "training with a gradient all-reduce cost: the largest stage all-reduce (added once "
        "to the iteration time)",
        "ms",
    ),
)


_TR = "hetopt.kinds.pipeline_partition.training"


class PipelinePartitionKind(Kind):
    name = "pipeline_partition"
    description = (
        "a chain of layers cut into contiguous ranges on heterogeneous devices: serving "
        "placement (max tokens/s, Helix) and training pipeline stages (bottleneck, iteration time)"
    )
    objectives = (
        Objective(
            "max_throughput",
            "serving: tokens/s from source to sink through the nodes' layer ranges",
            "tokens/s",
            "max",
        ),
        Objective(
            "min_stage_time", "training: the largest stage time per micro-batch", "ms", "min"
        ),
        Objective(
            "min_iteration_time",
            "training: (micro_batches + stages - 1) x the largest stage time (1F1B / GPipe), "
            "the number of stages chosen too",
            "ms",
            "min",
        ),
    )
    instance_model = PipelinePartitionInstance
    params_model = PipelinePartitionParams
    methods = {
        "max_throughput": LazyMethod("hetopt.kinds.pipeline_partition.methods:MaxThroughput"),
        "min_stage_time": LazyMethod(f"{_TR}:MinStageTime"),
        "min_iteration_time": LazyMethod(f"{_TR}:MinIterationTime"),
    }
    split_methods = {
        ("min_iteration_time", "split"): LazyMethod(
            "hetopt.kinds.pipeline_partition.split:BatchSplit"
        )
    }
    """Methods when the instance asks for several pipelines (``pipelines > 1``)."""
    tables = (PLACEMENT, FLOW, STAGES, LAYER_STAGE, BATCH_SPLIT)
    details = DETAILS

    def resolve_objective(self, instance: Any, objective: str | None) -> str:
        if objective is None and getattr(instance, "objective", None) is None:
            return OBJECTIVES_OF_MODE[instance.mode][0]
        return super().resolve_objective(instance, objective)

    def choose_method(self, objective: str, instance: Any, params: Any) -> MethodEntry:
        allowed = OBJECTIVES_OF_MODE[instance.mode]
        if objective not in allowed:
            raise UsageError(
                f"objective {objective!r} is not for mode {instance.mode!r}; "
                f"expected one of: {', '.join(allowed)}"
            )
        if isinstance(instance, TrainingInstance) and instance.split:
            try:
                return self.split_methods[objective, "split"]
            except KeyError:
                raise UsageError(
                    f"objective {objective!r} is not for several pipelines (pipelines: "
                    f"{instance.pipelines}); expected min_iteration_time"
                ) from None
        return super().choose_method(objective, instance, params)

    def verify(self, instance: Any, result: Result) -> Verification:
        import pandas as pd

        from . import verify as V

        if isinstance(instance, ServingInstance):
            return V.verify_serving(
                instance,
                result.objective_value,
                result.tables.get("placement", pd.DataFrame()),
                result.tables.get("flow", pd.DataFrame(columns=["from", "to", "tokens_s"])),
            )
        return V.verify_training(instance, result.objective, result.objective_value, result.tables)


KIND = PipelinePartitionKind()
