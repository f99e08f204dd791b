"""``max_throughput`` of the ``pipeline_partition`` kind (serving mode): the placement
MILP, warm-started by a bisection, with an LP bound, and its tables."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ...contract import Outcome, RunMethodBase
from ...status import Status
from . import serving as S
from . import verify as V
from .data import ServingInstance

if TYPE_CHECKING:
    from . import PipelinePartitionParams


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
