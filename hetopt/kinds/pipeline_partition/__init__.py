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

import numpy as np
import pandas as pd
from pydantic import Field

from ...contract import Column, Detail, Objective, Outcome, Params, RunMethodBase, Table
from ...errors import UsageError
from ...result import Result, Verification
from ...status import Status
from ..base import Kind
from . import serving as S
from . import split as SP
from . import training as TR
from . import verify as V
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


WARM_START_SHARE = 0.3
"""Share of the time limit the warm-start bisection may use."""
LP_BOUND_SHARE = 0.2
"""Share of the time limit the LP-bound bisection may use."""
LP_BOUND_STEPS = 6
LP_BOUND_TOL = 5e-3
"""The bisection stops when the bound is within this (relative) of the threshold."""
IMPROVE_EPS = 1e-6
"""Relative improvement over the warm start the solved model asks for, unless the
options give ``mip_rel_gap`` (then that)."""


def _finite(bound: float | None) -> bool:
    return bound is not None and bool(np.isfinite(bound))


class MaxThroughput(RunMethodBase):
    """Serving: build the arc-flow MILP, start HiGHS from the warm start, solve once;
    the placement's flow table is its networkx maximum flow."""

    def build(self, instance: ServingInstance, params: PipelinePartitionParams) -> Any:
        return S.build(instance, params.warm_start, params.cover_cuts, params.aggregate)

    def run(
        self, session: Any, instance: ServingInstance, params: PipelinePartitionParams
    ) -> Outcome:
        eps = session.options.mip_rel_gap
        eps = IMPROVE_EPS if eps is None else float(eps)
        limit = session.options.time_limit_s
        with session.timer("build_s"):
            net = S.node_groups(instance, params.aggregate)
            budget = None if limit is None else WARM_START_SHARE * limit
            start = S.warm_start(instance, net, budget) if params.warm_start else S.WarmStart()
            improve = eps if params.cover_cuts and start.tokens_s > 0 else None
            built = S.build(
                instance, params.warm_start, params.cover_cuts, params.aggregate, improve, start
            )
        lay: S.ServingLayout = built.layout
        details: dict[str, Any] = {
            "groups": len(lay.net.groups),
            "arcs": len(lay.arcs),
            "warm_start_tokens_s": start.tokens_s,
            "warm_start_s": start.seconds,
            "cover_rows": lay.cover,
        }
        upper: float | None = None
        proven = False
        if lay.improve is not None:
            upper, solves, proven = _lp_bound(session, instance, params, built)
            details["lp_bound_solves"] = solves
            if upper is not None:
                details["lp_bound_tokens_s"] = upper
        bound: float | None
        if proven:
            status, termination, bound = Status.INFEASIBLE, "LP relaxation infeasible", None
            view = None
        else:
            live = session.open(built)
            with session.timer("transfer_s"):
                x0 = S.start_vector(built, live.compiled)
                if x0 is not None:
                    live.highs_model.set_start(x0)
                if upper is not None:
                    live.highs_model.set_col_bounds(built.model.throughput, lay.theta, upper)
            view = live.solve(session.remaining(), "auto", "main")
            for key in ("simplex_iterations", "ipm_iterations", "mip_nodes"):
                if view.raw.info.get(key, 0) > 0:
                    details[key] = int(view.raw.info[key])
            bound = view.bound if _finite(view.bound) else None
            if bound is not None and upper is not None:
                bound = min(bound, upper)
            status, termination = view.status, view.termination
        with session.timer("load_s"):
            placement: list[tuple[int, int]] | None = None
            if view is not None and status.has_solution:
                hold = view.values(built.model.hold, range(len(lay.arcs)))
                placement = S.placement_from_counts(instance, lay, hold)
                details["milp_tokens_s"] = float(view.objective or 0.0)
                details["warm_start_used"] = False
            elif start.pipelines and status in (Status.INFEASIBLE, Status.NO_SOLUTION):
                placement = S.placement_of_start(instance, lay)
                details["warm_start_used"] = True
                if status == Status.INFEASIBLE and lay.improve is not None:
                    # no placement reaches theta = F0 (1 + eps): the start is optimal
                    how = "the LP relaxation" if proven else "HiGHS"
                    status = Status.OPTIMAL
                    termination = (
                        f"optimal: {how} proves that no placement reaches "
                        f"{lay.theta:.12g} tokens/s (the warm start's value x (1 + {eps:g}))"
                    )
                    bound = lay.theta
                else:
                    status = Status.FEASIBLE
                    termination = f"{termination}; nothing better than the warm start found"
                    if lay.improve is not None:
                        bound = max(bound, lay.theta) if bound is not None else upper
            if placement is None:
                return Outcome(None, {}, details, status, termination, bound=bound, gap=None)
            where = {nd.id: placement[i] for i, nd in enumerate(instance.nodes)}
            value, flows = V.placement_max_flow(instance, where)
            tables = _serving_tables(instance, where, flows)
        if bound is not None or status == Status.OPTIMAL:
            bound = max(bound if bound is not None else value, value)
        gap = (bound - value) / abs(value) if bound is not None and value > 0 else None
        return Outcome(value, tables, details, status, termination, bound=bound, gap=gap)


def _lp_relaxation(session: Any, built: Any, stage: str) -> tuple[Status, float | None]:
    """Solve the LP relaxation of ``built`` on the session (its own stage)."""
    from ...highs import HighsModel, compile_model

    with session.timer("transfer_s"):
        cm = compile_model(built.model)
        cm.integrality = np.zeros_like(cm.integrality)
        live = session.adopt(built, HighsModel(cm))
    view = live.solve(session.remaining(), "auto", stage)
    return view.status, view.objective


def _lp_bound(
    session: Any, instance: ServingInstance, params: PipelinePartitionParams, built: Any
) -> tuple[float | None, int, bool]:
    """A proven upper bound on the throughput by LP relaxations of the cover model.

    The LP with the cover rows written for a threshold ``t`` (and ``throughput >= t``) is
    a relaxation of every placement carrying at least ``t``; its feasible set only grows
    as ``t`` falls. So if it is infeasible, every placement carries less than ``t``; if
    feasible, every placement carrying at least ``t`` carries at most its optimum.
    Bisection on ``t`` from the warm start's threshold, within ``LP_BOUND_SHARE`` of the
    time limit and ``LP_BOUND_STEPS`` solves. Returns ``(bound or None, solves, proven)``
    where ``proven``: the LP at the warm start's threshold is infeasible (the warm start
    is optimal within ``eps``).
    """
    lay: S.ServingLayout = built.layout
    limit = session.options.time_limit_s
    t0 = session.elapsed()
    st, obj = _lp_relaxation(session, built, "lp_bound")
    if st == Status.INFEASIBLE:
        return None, 1, True
    if st != Status.OPTIMAL or obj is None:
        return None, 1, False
    lo, hi, solves = lay.theta, max(lay.theta, float(obj)), 1
    while solves < LP_BOUND_STEPS and hi > lo * (1 + LP_BOUND_TOL):
        if limit is not None and session.elapsed() - t0 > LP_BOUND_SHARE * limit:
            break
        mid = (lo + hi) / 2
        with session.timer("build_s"):
            probe = S.build(
                instance, True, True, params.aggregate, 0.0, S.WarmStart((S.Pipeline((), mid),))
            )
        st, obj = _lp_relaxation(session, probe, "lp_bound")
        solves += 1
        if st == Status.INFEASIBLE:
            hi = mid
        elif st == Status.OPTIMAL and obj is not None:
            lo, hi = mid, min(hi, max(mid, float(obj)))
        else:
            break
    return hi, solves, False


def _serving_tables(
    inst: ServingInstance,
    where: dict[str, tuple[int, int]],
    flows: dict[tuple[str, str], float],
) -> dict[str, pd.DataFrame]:
    load: dict[str, float] = {}
    for (_u, v), f in flows.items():
        if v != "sink":
            load[v] = load.get(v, 0.0) + f
    rows = []
    for nd in inst.nodes:
        s, k = where[nd.id]
        rows.append(
            (
                nd.id,
                s,
                k,
                nd.type or "",
                float(nd.throughput_by_layers[k - 1]),
                load.get(nd.id, 0.0),
            )
        )
    placement = pd.DataFrame(
        rows,
        columns=[
            "node",
            "start_layer",
            "num_layers",
            "node_type",
            "capacity_tokens_s",
            "load_tokens_s",
        ],
    )
    order = {"source": -1, "sink": len(inst.nodes)}
    pos = {nd.id: i for i, nd in enumerate(inst.nodes)}
    frows = sorted(
        ((u, v, f) for (u, v), f in flows.items() if f > 0),
        key=lambda r: (order.get(r[0], pos.get(r[0], 0)), order.get(r[1], pos.get(r[1], 0))),
    )
    flow = pd.DataFrame(frows, columns=["from", "to", "tokens_s"])
    if flow.empty:
        flow = flow.astype({"from": object, "to": object, "tokens_s": float})
    return {"placement": placement, "flow": flow}


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
        "max_throughput": MaxThroughput(),
        "min_stage_time": TR.MinStageTime(),
        "min_iteration_time": TR.MinIterationTime(),
    }
    split_methods = {("min_iteration_time", "split"): SP.BatchSplit()}
    """Methods when the instance asks for several pipelines (``pipelines > 1``)."""
    tables = (PLACEMENT, FLOW, STAGES, LAYER_STAGE, BATCH_SPLIT)
    details = DETAILS

    def resolve_objective(self, instance: Any, objective: str | None) -> str:
        if objective is None and getattr(instance, "objective", None) is None:
            return OBJECTIVES_OF_MODE[instance.mode][0]
        return super().resolve_objective(instance, objective)

    def method_for(self, objective: str, instance: Any, params: Any) -> Any:
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
        return super().method_for(objective, instance, params)

    def verify(self, instance: Any, result: Result) -> Verification:
        if isinstance(instance, ServingInstance):
            return V.verify_serving(
                instance,
                result.objective_value,
                result.tables.get("placement", pd.DataFrame()),
                result.tables.get("flow", pd.DataFrame(columns=["from", "to", "tokens_s"])),
            )
        return V.verify_training(instance, result.objective, result.objective_value, result.tables)


KIND = PipelinePartitionKind()
