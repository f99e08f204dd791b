"""The methods of ``llm_serving``: one per (objective, variant), and their extractors.

* :class:`MinCost` (``min_cost``): :func:`formulations.build_min_cost`, one MILP.
* :class:`Routing` (``min_max_load``): :func:`formulations.build_routing`, one LP over the
  ``deployed`` instances.
* :class:`Provision` (``min_max_load`` with ``provision='cost'|'count'``): two stages on one
  session: the cheapest (or fewest) instances with every utilisation at most the target
  (:func:`formulations.build_min_cost` in its continuous form), then the routing LP over
  them.
* :class:`PdSplit` (``pd_split``): :func:`formulations.build_pd_split`, one MILP.

Extractors recompute every number they report from the solution they read (rates,
loads, instance counts, the objective), so the reported objective is the one the tables
have. An instance count is raised to the load it carries when HiGHS's solution overloads
it by more than the row tolerance :data:`FEAS_TOL`; the result is then reported as
``feasible``, not ``optimal``, if that made it costlier than HiGHS's objective.

* :class:`TwoStageMinCost` (``min_cost`` with integer slices, the default): the continuous
  limit's bound first, then integer slices within its counts, then the full ILP.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ...contract import UNSET, BuildMethodBase, Built, Outcome, RunMethodBase, SolveView
from ...errors import InstanceError
from ...status import Status
from . import formulations as F
from .data import LlmArrays, LlmServingInstance
from .params import LlmServingParams

ROUTING_COLUMNS = ["bucket", "slice", "gpu_type", "rate_rps", "share"]
TINY = 1e-9


FEAS_TOL = 1e-6
"""Overload (in instances) a capacity row may carry: HiGHS's MIP feasibility tolerance.
The verifier accepts it too (``verify.REL``)."""


def _needed(load: np.ndarray, target: float) -> np.ndarray:
    """Instances needed to carry ``load`` instances' worth of work at utilisation
    ``target``, allowing the row tolerance :data:`FEAS_TOL`."""
    return np.ceil(np.maximum(load - FEAS_TOL, 0.0) / target - 1e-12)


def _instances_table(arr: LlmArrays, counts: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "gpu_type": arr.types,
            "count": counts.astype(np.int64),
            "cost_per_hour": counts * arr.cost,
        }
    )


def _utilization_table(arr: LlmArrays, counts: np.ndarray, load: np.ndarray) -> pd.DataFrame:
    with np.errstate(divide="ignore", invalid="ignore"):
        util = np.where(counts > 0, load / np.maximum(counts, 1), 0.0)
    return pd.DataFrame(
        {
            "gpu_type": arr.types,
            "count": counts.astype(np.int64),
            "count_used": load,
            "utilization": util,
        }
    )


def _routing_frame(rows: list[tuple[str, int, str, float, float]]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=ROUTING_COLUMNS)
    return df.astype({"slice": np.int64, "rate_rps": float, "share": float})


def _split_rows(
    arr: LlmArrays, pb: np.ndarray, pg: np.ndarray, share: np.ndarray
) -> tuple[list[tuple[str, int, str, float, float]], np.ndarray]:
    """Routing rows of fractional shares per (bucket, type) pair, and the load per type.

    Shares below ``TINY`` are dropped and each bucket's shares renormalised to sum to 1;
    a bucket without any share left keeps one zero-rate row on its first pair.
    """
    share = np.clip(share, 0.0, 1.0)
    share = np.where(share < TINY, 0.0, share)
    B, G = len(arr.bucket_ids), len(arr.types)
    tot = np.zeros(B)
    np.add.at(tot, pb, share)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(tot[pb] > 0, share / tot[pb], 0.0)
    rows: list[tuple[str, int, str, float, float]] = []
    load = np.zeros(G)
    slice_no = np.zeros(B, dtype=np.int64)
    seen = np.zeros(B, dtype=bool)
    for k in range(len(pb)):
        b, g = int(pb[k]), int(pg[k])
        if share[k] <= 0:
            continue
        rate = float(arr.rate[b] * share[k])
        rows.append((arr.bucket_ids[b], int(slice_no[b]), arr.types[g], rate, float(share[k])))
        slice_no[b] += 1
        seen[b] = True
        load[g] += rate / arr.throughput[b, g]
    for z in np.nonzero(~seen)[0]:
        # a zero-rate bucket: listed with rate 0 on its first pair (or first servable type)
        ks = np.nonzero(pb == z)[0]
        g0 = int(pg[ks[0]]) if len(ks) else int(np.nonzero(~np.isnan(arr.throughput[z]))[0][0])
        rows.append((arr.bucket_ids[int(z)], 0, arr.types[g0], 0.0, 1.0))
    order = {b: i for i, b in enumerate(arr.bucket_ids)}
    rows.sort(key=lambda r: (order[r[0]], r[1]))
    return rows, load


def _finish_counts(
    arr: LlmArrays,
    raw_counts: np.ndarray,
    load: np.ndarray,
    target: float,
) -> tuple[np.ndarray, int]:
    """Counts HiGHS chose, raised to carry their load; and how many were raised."""
    counts = np.round(raw_counts).astype(np.int64)
    need = _needed(load, target).astype(np.int64)
    raised = int(np.sum(need > counts))
    return np.maximum(counts, need), raised


def _honest(value: float, sol: SolveView, raised: int) -> dict[str, Any]:
    """Outcome fields that downgrade to feasible (with the gap to HiGHS's bound) if raising
    counts made the answer worse than HiGHS's; empty otherwise."""
    obj = sol.objective
    if raised and obj is not None and value > obj + 1e-6 * max(1.0, abs(obj)):
        bound = sol.bound
        gap = abs(value - bound) / abs(value) if bound is not None and value else None
        return {
            "status": Status.FEASIBLE,
            "termination": f"{sol.termination}; {raised} instance count(s) raised to carry "
            "their load (beyond HiGHS's feasibility tolerance)",
            "bound": bound,
            "gap": gap,
        }
    return {}


# ----------------------------------------------------------------------------- min_cost
class MinCost(BuildMethodBase):
    """Mélange's ILP (:func:`formulations.build_min_cost`), one solve.

    ``slices`` overrides the parameter (the continuous stage of :class:`TwoStageMinCost`
    and of :class:`Provision`); ``count_weights`` counts instances instead of $/h;
    ``caps`` are extra upper bounds on the counts (the second stage of
    :class:`TwoStageMinCost`).
    """

    def __init__(
        self,
        slices: str | None = None,
        count_weights: bool = False,
        caps: np.ndarray | None = None,
    ):
        self.slices = slices
        self.count_weights = count_weights
        self.caps = caps

    def _slices(self, params: LlmServingParams) -> str:
        return self.slices or params.slices

    def build(self, instance: LlmServingInstance, params: LlmServingParams) -> Built:
        arr = instance.arrays
        weights = np.ones(len(arr.types)) if self.count_weights else None
        built = F.build_min_cost(
            arr, self._slices(params), params.target_utilization, params.change_cost, weights
        )
        if self.caps is not None:
            for g, cap in enumerate(self.caps):
                var = built.model.count[g]
                ub = var.ub
                var.setub(int(cap) if ub is None else min(int(ub), int(cap)))
        return built

    def describe(
        self, instance: LlmServingInstance, params: LlmServingParams, built: Built
    ) -> dict[str, Any]:
        lay: F.MinCostLayout = built.layout
        out: dict[str, Any] = {
            "model": f"min_cost/{lay.slices}",
            "target_utilization": lay.target,
            "total_rate_rps": float(instance.arrays.rate.sum()),
        }
        if lay.slices != "continuous":
            out["slices"] = len(instance.buckets) * instance.slice_factor
        if lay.change_cost > 0:
            out["change_cost_per_instance"] = lay.change_cost
        return out

    def extract(
        self,
        instance: LlmServingInstance,
        params: LlmServingParams,
        built: Built,
        solution: SolveView,
    ) -> Outcome:
        arr = instance.arrays
        lay: F.MinCostLayout = built.layout
        m = built.model
        Fs = arr.slice_factor
        G = len(arr.types)
        rows: list[tuple[str, int, str, float, float]] = []
        load = np.zeros(G)
        if lay.slices == "continuous":
            share = solution.values(m.share, range(len(lay.pair_bucket)))
            rows, load = _split_rows(arr, lay.pair_bucket, lay.pair_type, share)
        else:
            if lay.slices == "aggregated":
                per_pair = np.round(solution.values(m.n_slices, range(len(lay.pair_bucket))))
                slots = [
                    (int(k), s)
                    for k in range(len(lay.pair_bucket))
                    for s in range(int(max(per_pair[k], 0)))
                ]
                # number a bucket's slices consecutively over its pairs
                counter: dict[int, int] = {}
                picked = []
                for k, _ in slots:
                    b = int(lay.pair_bucket[k])
                    picked.append((k, counter.get(b, 0)))
                    counter[b] = counter.get(b, 0) + 1
            else:
                x = solution.values(m.assign, range(len(lay.col_pair)))
                picked = [
                    (int(lay.col_pair[j]), int(lay.col_slice[j])) for j in np.nonzero(x > 0.5)[0]
                ]
            for k, s in picked:
                b, g = int(lay.pair_bucket[k]), int(lay.pair_type[k])
                rate = float(arr.rate[b] / Fs)
                rows.append((arr.bucket_ids[b], s, arr.types[g], rate, 1.0 / Fs))
                load[g] += rate / arr.throughput[b, g]
            order = {b: i for i, b in enumerate(arr.bucket_ids)}
            rows.sort(key=lambda r: (order[r[0]], r[1]))
        raw = solution.values(m.count, range(G))
        counts, raised = _finish_counts(arr, raw, load, lay.target)
        serving = float(counts @ arr.cost)
        changes = float(np.abs(counts - arr.deployed).sum()) if lay.change_cost > 0 else 0.0
        value = float(counts @ lay.weights) + lay.change_cost * changes
        util = _utilization_table(arr, counts, load)
        details: dict[str, Any] = {
            "serving_cost_per_hour": serving,
            "instances_total": int(counts.sum()),
            "max_utilization": float(util["utilization"].max()) if G else 0.0,
        }
        if lay.change_cost > 0:
            details["change_cost"] = lay.change_cost * changes
            details["instances_changed"] = int(changes)
        if raised:
            details["counts_raised"] = raised
        tables = {
            "instances": _instances_table(arr, counts),
            "routing": _routing_frame(rows),
            "utilization": util,
        }
        return Outcome(value, tables, details, **_honest(value, solution, raised))


def _rel_gap(value: float, bound: float) -> float:
    return abs(value - bound) / abs(value) if value else abs(value - bound)


class TwoStageMinCost(RunMethodBase):
    """``min_cost`` with integer slices, relaxation first (the default, ``two_stage``).

    Stage ``relaxation``: the continuous limit (every bucket's rate splits freely; the
    counts stay integer), a relaxation of the slice ILP: its bound ``LB`` bounds the ILP
    from below. Stage ``slices``: the slice ILP with every count capped at the
    relaxation's counts. If it has a solution within the MIP gap of ``LB`` it is optimal
    (value >= optimum >= LB). Otherwise stage ``full``: the slice ILP without caps, in the
    time left; its bound is raised to ``LB`` when that is higher.

    On Mélange-like instances the relaxation's counts almost always admit integer slices
    at the same cost, so the ILP is proven optimal in two short solves (measured in
    ``benchmarks/bench_llm_serving.py``) where the direct ILP spends most of its time on
    the symmetric counts. ``hetopt export`` writes the slice ILP (:class:`MinCost`).
    """

    def __init__(self) -> None:
        self.direct = MinCost()
        self.relaxed = MinCost(slices="continuous")

    def build(self, instance: LlmServingInstance, params: LlmServingParams) -> Built:
        return self.direct.build(instance, params)

    def run(self, session: Any, instance: LlmServingInstance, params: LlmServingParams) -> Outcome:
        model = f"min_cost/{params.slices}"
        first, _ = session.solve_method(self.relaxed, instance, params, stage="relaxation")
        if first.status is None or not first.status.has_solution:
            first.details["model"] = model
            first.details["stages"] = "relaxation"
            return first  # infeasible relaxation: the ILP is infeasible too
        lb = first.bound if first.bound is not UNSET else None
        rel = session.options.mip_rel_gap
        rel = 1e-4 if rel is None else rel
        caps = first.tables["instances"]["count"].to_numpy(dtype=np.int64)
        capped, _ = session.solve_method(
            MinCost(caps=caps), instance, params, session.remaining(), stage="slices"
        )
        stages = "relaxation+slices"
        best = capped if capped.status is not None and capped.status.has_solution else None
        proven = (
            best is not None
            and lb is not None
            and best.objective_value is not None
            and best.objective_value - lb <= max(1e-6, rel * abs(best.objective_value))
        )
        bound = lb
        if not proven:
            stages += "+full"
            full, _ = session.solve_method(
                self.direct, instance, params, session.remaining(), stage="full"
            )
            fb = full.bound if full.bound is not UNSET else None
            if fb is not None:
                bound = fb if bound is None else max(bound, fb)
            if full.status is not None and full.status.has_solution:
                if best is None or (full.objective_value or 0.0) <= (best.objective_value or 0.0):
                    best = full
            elif best is None:
                full.details["model"] = model
                full.details["stages"] = stages
                if bound is not None:
                    full.bound = bound
                return full
        assert best is not None and best.objective_value is not None
        value = best.objective_value
        gap = _rel_gap(value, bound) if bound is not None else None
        optimal = gap is not None and (value - (bound or 0.0)) <= max(1e-6, rel * abs(value))
        details = dict(best.details)
        details["model"] = model
        details["stages"] = stages
        if lb is not None:
            details["relaxation_bound"] = lb
        termination = (
            "Optimal (the continuous limit's bound is reached)"
            if proven
            else (best.termination or "")
        )
        return Outcome(
            value,
            best.tables,
            details,
            status=Status.OPTIMAL if optimal else Status.FEASIBLE,
            termination=termination,
            bound=bound,
            gap=gap,
        )


# ----------------------------------------------------------------------------- routing
def _deployed(instance: LlmServingInstance) -> np.ndarray:
    if instance.deployed is None:
        raise InstanceError(
            "min_max_load routes over the deployed instances: give deployed {type: count} "
            "(or solve with -p provision=cost)",
            "deployed",
        )
    return instance.arrays.deployed


def routing_outcome(
    arr: LlmArrays, built: Built, solution: SolveView
) -> tuple[float, pd.DataFrame, pd.DataFrame, np.ndarray]:
    """Routing rows, utilisation table, largest utilisation and loads of a routing LP."""
    lay: F.RoutingLayout = built.layout
    route = solution.values(built.model.route, range(len(lay.pair_bucket)))
    rate = arr.rate[lay.pair_bucket]
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(rate > 0, route / rate, 0.0)
    # buckets of rate 0 have no positive route: list them on their first deployed pair
    rows, load = _split_rows(arr, lay.pair_bucket, lay.pair_type, share)
    util = _utilization_table(arr, lay.counts, load)
    return float(util["utilization"].max()), _routing_frame(rows), util, load


class Routing(BuildMethodBase):
    """Block's routing LP over the ``deployed`` instances (:func:`formulations.build_routing`)."""

    def build(self, instance: LlmServingInstance, params: LlmServingParams) -> Built:
        return F.build_routing(instance.arrays, _deployed(instance))

    def describe(
        self, instance: LlmServingInstance, params: LlmServingParams, built: Built
    ) -> dict[str, Any]:
        return {"model": "routing", "total_rate_rps": float(instance.arrays.rate.sum())}

    def extract(
        self,
        instance: LlmServingInstance,
        params: LlmServingParams,
        built: Built,
        solution: SolveView,
    ) -> Outcome:
        arr = instance.arrays
        value, routing, util, _ = routing_outcome(arr, built, solution)
        counts = built.layout.counts
        details = {
            "max_utilization": value,
            "serving_cost_per_hour": float(counts @ arr.cost),
            "instances_total": int(counts.sum()),
        }
        tables = {
            "instances": _instances_table(arr, counts),
            "routing": routing,
            "utilization": util,
        }
        return Outcome(value, tables, details)


class Provision(RunMethodBase):
    """Auto-provisioning (``min_max_load`` with ``provision='cost'|'count'``).

    Stage ``provision``: the cheapest (or fewest) instances such that a routing with every
    utilisation at most ``target_utilization`` exists (the continuous ``min_cost`` model).
    Stage ``routing``: the routing LP over those instances, minimising the largest
    utilisation. The objective is stage 1's ($/h or instances).
    """

    def __init__(self, by: str):
        self.by = by
        self.stage1 = MinCost(slices="continuous", count_weights=by == "count")

    def build(self, instance: LlmServingInstance, params: LlmServingParams) -> Built:
        return self.stage1.build(instance, params)

    def run(self, session: Any, instance: LlmServingInstance, params: LlmServingParams) -> Outcome:
        arr = instance.arrays
        first, _ = session.solve_method(self.stage1, instance, params, stage="provision")
        first.details["model"] = f"provision/{self.by}"
        first.details.pop("max_utilization", None)
        if first.status is None or not first.status.has_solution:
            return first
        counts = first.tables["instances"]["count"].to_numpy(dtype=np.int64)
        with session.timer("build_s"):
            built = F.build_routing(arr, counts)
        live = session.open(built)
        view = live.solve(session.remaining(), stage="routing")
        details = dict(first.details)
        details["routing_status"] = view.status.value
        tables = dict(first.tables)
        if view.status.has_solution:
            with session.timer("load_s"):
                umax, routing, util, _ = routing_outcome(arr, built, view)
            tables["routing"] = routing
            tables["utilization"] = util
            details["max_utilization"] = umax
        else:
            details["max_utilization"] = float(first.tables["utilization"]["utilization"].max())
        return Outcome(
            first.objective_value,
            tables,
            details,
            status=first.status,
            termination=first.termination,
            bound=first.bound if first.bound is not UNSET else None,
            gap=first.gap if first.gap is not UNSET else None,
        )


# ----------------------------------------------------------------------------- pd_split
class PdSplit(BuildMethodBase):
    """Prefill and decode pools (:func:`formulations.build_pd_split`).

    The extractor reads the pool sizes and splits each pool's work over its types in
    proportion to their capacity (every type of a pool at the same utilisation); the
    model's shares only prove that such a split exists.
    """

    def build(self, instance: LlmServingInstance, params: LlmServingParams) -> Built:
        return F.build_pd_split(instance, params.target_utilization)

    def describe(
        self, instance: LlmServingInstance, params: LlmServingParams, built: Built
    ) -> dict[str, Any]:
        lay: F.PdLayout = built.layout
        out: dict[str, Any] = {
            "model": "pd_split",
            "target_utilization": lay.target,
            "prefill_tokens_s": lay.prefill_tokens_s,
            "decode_tokens_s": lay.decode_tokens_s,
            "total_rate_rps": float(instance.arrays.rate.sum()),
        }
        if instance.kv_gb_per_token is not None:
            out["kv_transfer_gb_s"] = instance.kv_gb_per_token * lay.prefill_tokens_s
        return out

    def extract(
        self,
        instance: LlmServingInstance,
        params: LlmServingParams,
        built: Built,
        solution: SolveView,
    ) -> Outcome:
        arr = instance.arrays
        lay: F.PdLayout = built.layout
        m = built.model
        gpus = instance.gpus
        kv = instance.kv_gb_per_token
        inst_rows: list[tuple[str, str, int, float]] = []
        pool_rows: list[tuple[str, str, int, float, float, float]] = []
        routing: list[tuple[str, int, str, str, float, float]] = []
        raised_total = 0
        power = 0.0
        cost = 0.0
        for pool, types, nvar, total, caps in (
            (
                "prefill",
                lay.pre_types,
                m.n_prefill,
                lay.prefill_tokens_s,
                lay.pre_capacity,
            ),
            (
                "decode",
                lay.dec_types,
                m.n_decode,
                lay.decode_tokens_s,
                lay.dec_capacity,
            ),
        ):
            T = len(types)
            if not T:
                continue
            counts = np.round(solution.values(nvar, range(T))).astype(np.int64)
            # the share of the pool's tokens one instance takes at most (token rate, KV link)
            per = caps / total
            if kv is not None and lay.prefill_tokens_s > 0:
                link = np.array([gpus[j].kv_link_gb_s or math.inf for j in types], dtype=float)
                per = np.minimum(per, link / (kv * lay.prefill_tokens_s))
            short = 1.0 - float(counts @ per)
            if short > FEAS_TOL:  # rounding left the pool short: add the cheapest capacity
                price = np.array([gpus[j].cost_per_hour for j in types]) / per
                j = int(np.argmin(price))
                counts[j] += math.ceil(short / per[j])
                raised_total += 1
            # split the pool's work in proportion to capacity: equal utilisation per type
            capacity = counts * per
            share = capacity / capacity.sum() if capacity.sum() > 0 else np.eye(T)[0]
            for i, j in enumerate(types):
                g = gpus[int(j)]
                raw_cap = caps[i] / lay.target
                tok = float(share[i] * total)
                inst_rows.append((g.type, pool, int(counts[i]), float(counts[i] * g.cost_per_hour)))
                util = tok / (counts[i] * raw_cap) if counts[i] > 0 else 0.0
                pool_rows.append(
                    (pool, g.type, int(counts[i]), tok, float(counts[i] * raw_cap), util)
                )
                cost += counts[i] * g.cost_per_hour
                power += counts[i] * (g.power_w or 0.0)
            for b, bid in enumerate(arr.bucket_ids):
                k = 0
                for i, j in enumerate(types):
                    if share[i] > 0:
                        routing.append(
                            (
                                bid,
                                k,
                                gpus[int(j)].type,
                                pool,
                                float(arr.rate[b] * share[i]),
                                float(share[i]),
                            )
                        )
                        k += 1
        value = float(cost)
        rdf = pd.DataFrame(
            routing, columns=["bucket", "slice", "gpu_type", "pool", "rate_rps", "share"]
        ).astype({"slice": np.int64, "rate_rps": float, "share": float})
        if rdf.empty:  # a workload without tokens: every bucket listed with rate 0
            rdf = pd.DataFrame(
                {
                    "bucket": arr.bucket_ids,
                    "slice": np.zeros(len(arr.bucket_ids), dtype=np.int64),
                    "gpu_type": [next(iter(b.throughput_rps)) for b in instance.buckets],
                    "pool": "prefill",
                    "rate_rps": arr.rate * 0.0,
                    "share": np.ones(len(arr.bucket_ids)),
                }
            )
        tables = {
            "instances": pd.DataFrame(
                inst_rows, columns=["gpu_type", "pool", "count", "cost_per_hour"]
            ).astype({"count": np.int64, "cost_per_hour": float}),
            "routing": rdf,
            "pools": pd.DataFrame(
                pool_rows,
                columns=[
                    "pool",
                    "gpu_type",
                    "count",
                    "tokens_s",
                    "capacity_tokens_s",
                    "utilization",
                ],
            ).astype({"count": np.int64}),
        }
        details: dict[str, Any] = {
            "serving_cost_per_hour": value,
            "instances_total": int(tables["instances"]["count"].sum()),
        }
        if instance.power_cap_w is not None:
            details["power_w"] = float(power)
        if raised_total:
            details["counts_raised"] = raised_total
        return Outcome(value, tables, details, **_honest(value, solution, raised_total))
