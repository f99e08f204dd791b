"""Pyomo formulations of the ``llm_serving`` kind (see ``models/llm_serving.md``).

* :func:`build_min_cost`: Mélange's bucket/slice bin-packing ILP (three slicings: integer
  slice counts per type, one binary per slice and type, or the continuous limit), with an
  optional change cost against the current deployment; also stage 1 of auto-provisioning.
* :func:`build_routing`: Block-style routing LP over a given deployment, minimising the
  largest utilisation.
* :func:`build_pd_split`: Splitwise/DistServe prefill and decode pools.

Every model is written in the user's units: the objective is $/h (or instances, or a
utilisation), rates are requests/s, capacities are instances. Nothing is rescaled, so an
exported LP/MPS file has the objective the result reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyomo.environ as pyo

from ...contract import Built
from ...errors import InstanceError
from ...pyomo_ext import LinearRows
from .data import LlmArrays, LlmServingInstance, require_tokens

INF = float("inf")


def _ub(avail: float | np.floating) -> float | None:
    return None if not np.isfinite(avail) else float(avail)


# ----------------------------------------------------------------------------- min_cost
@dataclass(frozen=True)
class MinCostLayout:
    """Columns of :func:`build_min_cost`.

    ``pair_bucket[k]`` / ``pair_type[k]``: the (bucket, type) pair of column ``k`` of
    ``n_slices`` (aggregated) or ``share`` (continuous); for ``binary``, ``col_pair[j]`` and
    ``col_slice[j]`` give the pair and the slice number (0..F-1) of column ``j`` of
    ``assign``.
    """

    slices: str
    pair_bucket: np.ndarray
    pair_type: np.ndarray
    col_pair: np.ndarray
    col_slice: np.ndarray
    target: float
    change_cost: float
    weights: np.ndarray
    """Objective weight of one instance of each type ($/h, or 1 when counting)."""


def build_min_cost(
    arr: LlmArrays,
    slices: str = "aggregated",
    target: float = 1.0,
    change_cost: float = 0.0,
    weights: np.ndarray | None = None,
) -> Built:
    """Mélange's ILP: every slice of every bucket on one type, integer instances per type.

    Bucket ``b`` is cut into ``F = slice_factor`` slices of rate ``rate_b / F``. With
    ``slices="aggregated"`` the variable is ``n_slices[k]`` in ``0..F`` (how many of the
    bucket's slices go to the pair's type: slices of a bucket are identical, so this is
    Mélange's model without its symmetry); ``"binary"`` is Mélange's ``assign[j]`` binary
    per (slice, type); ``"continuous"`` is ``share[k]`` in ``[0, 1]`` (the limit
    ``F -> inf``). ``count[g]`` integer in ``[0, available_g]``;
    ``c_capacity[g]: sum load - target * count[g] <= 0`` in instances;
    ``obj = sum_g weights_g count[g] (+ change_cost * sum_g change[g])``.
    """
    F = arr.slice_factor
    G = len(arr.types)
    B = len(arr.bucket_ids)
    pb, pg = arr.pairs
    K = len(pb)
    load_whole = arr.rate[pb] / arr.throughput[pb, pg]  # instances if all of b went to g
    w = arr.cost if weights is None else np.asarray(weights, dtype=float)

    m = pyo.ConcreteModel(name=f"llm_serving_min_cost_{slices}")
    m.TYPES = pyo.RangeSet(0, G - 1)
    m.count = pyo.Var(
        m.TYPES,
        domain=pyo.NonNegativeIntegers,
        bounds=lambda _, g: (0, _ub(float(arr.available[g]))),
    )
    m.PAIRS = pyo.RangeSet(0, K - 1)
    col_pair = np.arange(K)
    col_slice = np.zeros(K, dtype=np.int64)
    if slices == "aggregated":
        m.n_slices = pyo.Var(m.PAIRS, domain=pyo.NonNegativeIntegers, bounds=(0, F))
        xs = list(m.n_slices.values())
        m.c_slices = LinearRows.from_coo(
            pb, np.arange(K), np.ones(K), B, np.full(B, float(F)), np.full(B, float(F)), xs
        )
        coef = load_whole / F
        x_type = pg
    elif slices == "binary":
        col_pair = np.repeat(np.arange(K), F)
        col_slice = np.tile(np.arange(F), K)
        J = len(col_pair)
        m.ASSIGN = pyo.RangeSet(0, J - 1)
        m.assign = pyo.Var(m.ASSIGN, domain=pyo.Binary)
        xs = list(m.assign.values())
        slice_row = pb[col_pair] * F + col_slice
        m.c_slice = LinearRows.from_coo(
            slice_row, np.arange(J), np.ones(J), B * F, np.ones(B * F), np.ones(B * F), xs
        )
        coef = load_whole[col_pair] / F
        x_type = pg[col_pair]
    elif slices == "continuous":
        m.share = pyo.Var(m.PAIRS, bounds=(0.0, 1.0))
        xs = list(m.share.values())
        m.c_share = LinearRows.from_coo(pb, np.arange(K), np.ones(K), B, np.ones(B), np.ones(B), xs)
        coef = load_whole
        x_type = pg
    else:  # pragma: no cover - the parameter model allows only the three
        raise ValueError(f"unknown slicing {slices!r}")
    counts = list(m.count.values())
    n = len(xs)
    m.c_capacity = LinearRows.from_coo(
        np.concatenate([x_type, np.arange(G)]),
        np.concatenate([np.arange(n), n + np.arange(G)]),
        np.concatenate([coef, np.full(G, -target)]),
        G,
        np.full(G, -INF),
        np.zeros(G),
        [*xs, *counts],
    )
    serving = sum(float(w[g]) * m.count[g] for g in range(G))
    if change_cost > 0:
        dep = arr.deployed.astype(float)
        m.change = pyo.Var(m.TYPES, domain=pyo.NonNegativeReals)
        ch = list(m.change.values())
        rows = np.concatenate([np.arange(G), np.arange(G), G + np.arange(G), G + np.arange(G)])
        cols = np.concatenate([np.arange(G), G + np.arange(G), np.arange(G), G + np.arange(G)])
        vals = np.concatenate([np.ones(G), -np.ones(G), -np.ones(G), -np.ones(G)])
        # c_change[g]: count[g] - change[g] <= deployed_g; c_change[G+g]: -count[g] - change[g] <= -deployed_g
        m.c_change = LinearRows.from_coo(
            rows,
            cols,
            vals,
            2 * G,
            np.full(2 * G, -INF),
            np.concatenate([dep, -dep]),
            [*counts, *ch],
        )
        m.obj = pyo.Objective(expr=serving + change_cost * sum(ch), sense=pyo.minimize)
    else:
        m.obj = pyo.Objective(expr=serving, sense=pyo.minimize)
    layout = MinCostLayout(slices, pb, pg, col_pair, col_slice, target, change_cost, w)
    return Built(m, layout)


# ----------------------------------------------------------------------------- routing
@dataclass(frozen=True)
class RoutingLayout:
    """Columns of :func:`build_routing`: ``route[k]`` is bucket ``pair_bucket[k]`` on type
    ``pair_type[k]``; ``counts`` the instances routed over."""

    pair_bucket: np.ndarray
    pair_type: np.ndarray
    counts: np.ndarray


def build_routing(arr: LlmArrays, counts: np.ndarray) -> Built:
    """Route every bucket's rate over the instances ``counts``, minimising the largest
    utilisation ``util_max``.

    ``route[k] >= 0`` (requests/s of the pair's bucket on its type, only types with
    ``counts > 0``); ``c_rate[b]: sum_k route[k] = rate_b``;
    ``c_util[g]: sum_k route[k] / (throughput_k counts_g) - util_max <= 0``;
    ``obj = util_max``. A bucket with a positive rate that no deployed type can serve
    leaves ``c_rate[b]`` empty: HiGHS reports the LP infeasible.
    """
    counts = np.asarray(counts, dtype=np.int64)
    G = len(arr.types)
    B = len(arr.bucket_ids)
    pb, pg = arr.pairs
    keep = counts[pg] > 0
    pb, pg = pb[keep], pg[keep]
    K = len(pb)
    m = pyo.ConcreteModel(name="llm_serving_routing")
    m.PAIRS = pyo.RangeSet(0, K - 1)
    m.route = pyo.Var(m.PAIRS, domain=pyo.NonNegativeReals)
    m.util_max = pyo.Var(domain=pyo.NonNegativeReals)
    xs = [*m.route.values(), m.util_max]
    m.c_rate = LinearRows.from_coo(pb, np.arange(K), np.ones(K), B, arr.rate, arr.rate, xs)
    used = np.nonzero(counts > 0)[0]
    row_of = np.full(G, -1)
    row_of[used] = np.arange(len(used))
    R = len(used)
    m.c_util = LinearRows.from_coo(
        np.concatenate([row_of[pg], np.arange(R)]),
        np.concatenate([np.arange(K), np.full(R, K)]),
        np.concatenate([1.0 / (arr.throughput[pb, pg] * counts[pg]), -np.ones(R)]),
        R,
        np.full(R, -INF),
        np.zeros(R),
        xs,
    )
    m.obj = pyo.Objective(expr=m.util_max, sense=pyo.minimize)
    return Built(m, RoutingLayout(pb, pg, counts))


# ----------------------------------------------------------------------------- pd_split
@dataclass(frozen=True)
class PdLayout:
    """Columns of :func:`build_pd_split`: the types of ``n_prefill`` / ``share_prefill``
    (``pre_types``) and of ``n_decode`` / ``share_decode`` (``dec_types``), the token
    rates to cover and the per-instance capacities used (tokens/s, after the target)."""

    pre_types: np.ndarray
    dec_types: np.ndarray
    prefill_tokens_s: float
    decode_tokens_s: float
    pre_capacity: np.ndarray
    dec_capacity: np.ndarray
    target: float


def pd_inputs(inst: LlmServingInstance) -> tuple[float, float]:
    """Prompt and generated tokens/s of the whole workload (``sum_b rate_b * tokens_b``)."""
    tin, tout = require_tokens(inst)
    rate = inst.arrays.rate
    return float(rate @ tin), float(rate @ tout)


def build_pd_split(inst: LlmServingInstance, target: float = 1.0) -> Built:
    """Integer prefill and decode pools per type covering the workload's token rates.

    ``P = sum_b rate_b input_tokens_b``, ``D = sum_b rate_b output_tokens_b`` (tokens/s).
    ``n_prefill[g]``, ``n_decode[g]`` integer; ``share_prefill[g]``, ``share_decode[g]`` in
    ``[0, 1]`` (the share of ``P`` / ``D`` the type's pool processes; every bucket is split
    over a pool's types in these shares).
    ``c_prefill_share: sum share_prefill = 1``;
    ``c_prefill_cap[g]: share_prefill[g] - target prefill_tokens_s_g / P * n_prefill[g] <= 0``
    (and the decode rows alike);
    ``c_kv_send[g]: share_prefill[g] - kv_link_gb_s_g / (kv_gb_per_token P) * n_prefill[g] <= 0``;
    ``c_kv_recv[g]: share_decode[g] - kv_link_gb_s_g / (kv_gb_per_token P) * n_decode[g] <= 0``;
    ``c_stock[g]: n_prefill[g] + n_decode[g] <= available_g``;
    ``c_power: sum_g power_w_g (n_prefill[g] + n_decode[g]) <= power_cap_w``;
    ``obj = sum_g cost_g (n_prefill[g] + n_decode[g])`` ($/h).
    """
    P, D = pd_inputs(inst)
    gpus = inst.gpus
    G = len(gpus)
    pre = np.array([j for j, g in enumerate(gpus) if g.prefill_tokens_s is not None], dtype=int)
    dec = np.array([j for j, g in enumerate(gpus) if g.decode_tokens_s is not None], dtype=int)
    if P > 0 and not len(pre):
        raise InstanceError(
            "pd_split needs prefill_tokens_s for at least one GPU type", "gpus[0].prefill_tokens_s"
        )
    if D > 0 and not len(dec):
        raise InstanceError(
            "pd_split needs decode_tokens_s for at least one GPU type", "gpus[0].decode_tokens_s"
        )
    if P <= 0:
        pre = np.zeros(0, dtype=int)
    if D <= 0:
        dec = np.zeros(0, dtype=int)
    pre_cap = np.array([gpus[j].prefill_tokens_s for j in pre], dtype=float) * target
    dec_cap = np.array([gpus[j].decode_tokens_s for j in dec], dtype=float) * target
    avail = inst.arrays.available
    m = pyo.ConcreteModel(name="llm_serving_pd_split")
    m.PREFILL_TYPES = pyo.RangeSet(0, len(pre) - 1)
    m.DECODE_TYPES = pyo.RangeSet(0, len(dec) - 1)
    m.n_prefill = pyo.Var(
        m.PREFILL_TYPES,
        domain=pyo.NonNegativeIntegers,
        bounds=lambda _, i: (0, _ub(avail[pre[i]])),
    )
    m.n_decode = pyo.Var(
        m.DECODE_TYPES,
        domain=pyo.NonNegativeIntegers,
        bounds=lambda _, i: (0, _ub(avail[dec[i]])),
    )
    m.share_prefill = pyo.Var(m.PREFILL_TYPES, bounds=(0.0, 1.0))
    m.share_decode = pyo.Var(m.DECODE_TYPES, bounds=(0.0, 1.0))
    npre, ndec = list(m.n_prefill.values()), list(m.n_decode.values())
    spre, sdec = list(m.share_prefill.values()), list(m.share_decode.values())
    kv = inst.kv_gb_per_token
    for name, shares, ns, caps, total, types in (
        ("prefill", spre, npre, pre_cap, P, pre),
        ("decode", sdec, ndec, dec_cap, D, dec),
    ):
        T = len(types)
        if not T:
            continue
        xs = [*shares, *ns]
        m.add_component(
            f"c_{name}_share",
            LinearRows.from_coo(
                np.zeros(T, int), np.arange(T), np.ones(T), 1, np.ones(1), np.ones(1), xs
            ),
        )
        m.add_component(
            f"c_{name}_cap",
            LinearRows.from_coo(
                np.concatenate([np.arange(T), np.arange(T)]),
                np.concatenate([np.arange(T), T + np.arange(T)]),
                np.concatenate([np.ones(T), -caps / total]),
                T,
                np.full(T, -INF),
                np.zeros(T),
                xs,
            ),
        )
        if kv is not None and P > 0:
            linked = [i for i, j in enumerate(types) if gpus[j].kv_link_gb_s is not None]
            if linked:
                li = np.array(linked, dtype=int)
                link = np.array([gpus[types[i]].kv_link_gb_s for i in linked], dtype=float)
                L = len(li)
                m.add_component(
                    "c_kv_send" if name == "prefill" else "c_kv_recv",
                    LinearRows.from_coo(
                        np.concatenate([np.arange(L), np.arange(L)]),
                        np.concatenate([li, T + li]),
                        np.concatenate([np.ones(L), -link / (kv * P)]),
                        L,
                        np.full(L, -INF),
                        np.zeros(L),
                        xs,
                    ),
                )
    # pool sizes per GPU type (a type may appear in both pools)
    pos_pre = {int(j): i for i, j in enumerate(pre)}
    pos_dec = {int(j): i for i, j in enumerate(dec)}

    def pool_sum(j: int, weight: float) -> Any:
        terms = []
        if j in pos_pre:
            terms.append(weight * m.n_prefill[pos_pre[j]])
        if j in pos_dec:
            terms.append(weight * m.n_decode[pos_dec[j]])
        return sum(terms)

    stocked = [j for j in range(G) if np.isfinite(avail[j]) and (j in pos_pre and j in pos_dec)]
    if stocked:
        m.STOCKED = pyo.Set(initialize=stocked, ordered=True)
        m.c_stock = pyo.Constraint(m.STOCKED, rule=lambda _, j: pool_sum(j, 1.0) <= float(avail[j]))
    if inst.power_cap_w is not None and (len(pre) or len(dec)):
        m.c_power = pyo.Constraint(
            expr=sum(pool_sum(j, float(gpus[j].power_w or 0.0)) for j in range(G))
            <= float(inst.power_cap_w)
        )
    m.obj = pyo.Objective(
        expr=sum(float(gpus[j].cost_per_hour) * m.n_prefill[i] for i, j in enumerate(pre))
        + sum(float(gpus[j].cost_per_hour) * m.n_decode[i] for i, j in enumerate(dec)),
        sense=pyo.minimize,
    )
    return Built(m, PdLayout(pre, dec, P, D, pre_cap, dec_cap, target))
