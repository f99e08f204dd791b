"""Training mode with several pipelines: the data-parallel batch split (see
``models/pipeline_partition.md``, "Several pipelines").

Up to ``P`` pipeline *slots* share the device pool; slot ``r``, if used, is a path
``0 -> L`` of stage arcs (the arcs of :func:`.training.stage_arcs`) carrying ``b_r >= 1``
of the ``B`` micro-batches, and its iteration time is ``(b_r + S_r - 1) x bottleneck_r``.
The product is linearised exactly by copying each slot's path per *multiplier*
``k = b_r + S_r - 1`` (``k = 1 .. B + S_max - 1``): in copy ``(r, k)`` every stage time
enters the rows ``k x time <= iteration_ms``, and the batch the slot carries is the linear
``b_r = k x [a stage starts at 0] - (S_r - 1) = sum_a coef[a, k] stage[a, (r, k)]`` with
``coef = k`` for an arc starting at layer 0 and ``-1`` otherwise. No big-M; the slots are
interchangeable, so ``b_0 >= b_1 >= ...`` breaks their symmetry.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyomo.environ as pyo

from ...contract import BuildMethodBase, Built, Outcome, SolveView
from ...pyomo_ext import LinearRows
from .data import TrainingInstance
from .training import (
    INF,
    Stage,
    StageArcs,
    _cat,
    _catf,
    _type_rows,
    has_allreduce,
    layer_times,
    max_stages,
    stage_allreduce,
    stage_arcs,
    stage_tables,
    stage_times,
    tp_degrees,
    transfer_ms,
    transition_keys,
    usage_dp,
    work_lower_bound,
)


@dataclass(frozen=True)
class SplitLayout:
    arcs: StageArcs
    slots: int
    """Pipeline slots ``P`` (at most ``pipelines``, ``micro_batches`` and devices)."""
    mults: tuple[int, ...]
    """Multiplier ``k`` of each copy of a slot; copy ``c = r x len(mults) + j``."""
    transfer: np.ndarray | None
    trans_keys: tuple[tuple[int, int, int, int], ...]
    """Per ``transition`` column: (boundary, from type, to type, copy)."""


@dataclass(frozen=True)
class Pipeline:
    """One pipeline of a plan: its stages in layer order and its micro-batches."""

    stages: tuple[Stage, ...]
    micro_batches: int


def slots_of(inst: TrainingInstance) -> int:
    """Pipelines that can be used: at most ``pipelines``, one micro-batch and one device
    each."""
    devices = sum(d.count for d in inst.devices)
    return max(1, min(inst.pipelines or 1, inst.micro_batches, devices))


def build_split(inst: TrainingInstance, stage_cap: int | None = None) -> Built:
    """The slot x multiplier copies of the boundary-path MILP (``min_iteration_time``)."""
    L = len(inst.layers)
    arcs = stage_arcs(inst)
    A = len(arcs)
    B = inst.micro_batches
    Smax = max_stages(inst, stage_cap)
    P = slots_of(inst)
    mults = tuple(range(1, B + Smax))
    K = len(mults)
    C = P * K
    comm = transfer_ms(inst)
    Tn = len(inst.devices)
    mult = np.tile(np.array(mults, dtype=float), P)
    slot = np.repeat(np.arange(P), K)

    m = pyo.ConcreteModel(name="pipeline_partition_batch_split")
    m.STAGE_COLS = pyo.RangeSet(0, A * C - 1)
    m.stage = pyo.Var(m.STAGE_COLS, domain=pyo.Binary)
    trans_keys = transition_keys(arcs, L, Tn, C) if comm is not None else []
    R = len(trans_keys)
    m.TRANSITIONS = pyo.RangeSet(0, R - 1)
    m.transition = pyo.Var(m.TRANSITIONS, domain=pyo.Binary)
    m.iteration_ms = pyo.Var(bounds=(0.0, None))
    cols = [*m.stage.values(), *m.transition.values(), m.iteration_ms]
    XT, OB = A * C, A * C + R
    # per slot the gradient all-reduce of its stages' replicas, once per iteration
    allreduce = bool(arcs.allreduce_ms.any())
    if allreduce:
        m.SLOTS = pyo.RangeSet(0, P - 1)
        m.allreduce_ms = pyo.Var(m.SLOTS, bounds=(0.0, None))
        cols += list(m.allreduce_ms.values())
    AR = OB + 1

    def col(a: np.ndarray, c: int) -> np.ndarray:
        return c * A + a

    ar = np.arange(A)
    first = np.nonzero(arcs.start == 0)[0]
    is_first = arcs.start == 0
    # c_start[r]: slot r carries at most one pipeline (slot 0 exactly one)
    m.c_start = LinearRows.from_coo(
        np.repeat(slot, len(first)),
        np.concatenate([col(first, c) for c in range(C)]),
        np.ones(len(first) * C),
        P,
        np.array([1.0] + [0.0] * (P - 1)),
        np.ones(P),
        cols,
    )
    # c_flow[b, c]: in copy c a stage ends at b iff one starts at b
    rr, cc, vv = [], [], []
    inner_e, inner_s = arcs.end < L, arcs.start > 0
    for c in range(C):
        rr += [c * (L - 1) + arcs.end[inner_e] - 1, c * (L - 1) + arcs.start[inner_s] - 1]
        cc += [col(ar[inner_e], c), col(ar[inner_s], c)]
        vv += [np.ones(int(inner_e.sum())), -np.ones(int(inner_s.sum()))]
    nb = C * (L - 1)
    m.c_flow = LinearRows.from_coo(
        _cat(rr), _cat(cc), _catf(vv), nb, np.zeros(nb), np.zeros(nb), cols
    )
    # c_devices[t]: devices of type t used by every pipeline together
    m.c_devices = LinearRows.from_coo(
        np.tile(arcs.type, C),
        np.arange(A * C),
        np.tile(arcs.devices.astype(float), C),
        Tn,
        np.full(Tn, -INF),
        np.array([float(d.count) for d in inst.devices]),
        cols,
    )
    # c_stage_limit[c]: copy (r, k) has S <= min(k, S_max) stages (b = k + 1 - S >= 1)
    rr, cc, vv = [], [], []
    for c in range(C):
        rr += [np.full(A, c), np.full(len(first), c)]
        cc += [col(ar, c), col(first, c)]
        vv += [np.ones(A), np.full(len(first), -float(min(mult[c], Smax)))]
    m.c_stage_limit = LinearRows.from_coo(
        _cat(rr), _cat(cc), _catf(vv), C, np.full(C, -INF), np.zeros(C), cols
    )
    # batch carried: coef[a, c] = k for an arc starting at 0, -1 otherwise
    coef = np.concatenate([np.where(is_first, mult[c], -1.0) for c in range(C)])
    # c_batch: the slots carry B micro-batches
    m.c_batch = LinearRows.from_coo(
        np.zeros(A * C, dtype=np.int64),
        np.arange(A * C),
        coef,
        1,
        np.full(1, float(B)),
        np.full(1, float(B)),
        cols,
    )
    if P > 1:
        # c_slot_order[r]: b_r - b_{r+1} >= 0 (the slots are interchangeable)
        rr, cc, vv = [], [], []
        for r in range(P - 1):
            for c in range(r * K, (r + 2) * K):
                rr.append(np.full(A, r))
                cc.append(col(ar, c))
                vv.append(coef[c * A : (c + 1) * A] * (1.0 if c < (r + 1) * K else -1.0))
        m.c_slot_order = LinearRows.from_coo(
            _cat(rr), _cat(cc), _catf(vv), P - 1, np.zeros(P - 1), np.full(P - 1, INF), cols
        )
    if A:
        # c_work_bound[r]: copy (r, k) has S <= k stages sharing at least W of work, so
        # iteration_ms >= k max(W / S, t_max) >= max(W, k t_max)
        W, slowest = work_lower_bound(inst, arcs)
        lb = np.maximum(W, mult * slowest)
        rr = [np.repeat(slot, len(first)), np.arange(P)]
        cc = [np.concatenate([col(first, c) for c in range(C)]), np.full(P, OB)]
        vv = [np.repeat(lb, len(first)), -np.ones(P)]
        m.c_work_bound = LinearRows.from_coo(
            _cat(rr), _cat(cc), _catf(vv), P, np.full(P, -INF), np.zeros(P), cols
        )
        # c_device_time: every device is busy at most iteration_ms and each micro-batch
        # keeps devices busy for at least D ms (per layer the least d x time(l, t, d))
        m.c_device_time = LinearRows.from_coo(
            np.zeros(1, dtype=np.int64),
            np.full(1, OB),
            np.ones(1),
            1,
            np.full(1, B * device_work(inst) / sum(d.count for d in inst.devices)),
            np.full(1, INF),
            cols,
        )
    # c_layer_time[r, l]: sum_k k x time of the stage of slot r holding l <= iteration_ms
    lens = arcs.end - arcs.start
    held = (
        np.concatenate([np.arange(s, e) for s, e in zip(arcs.start, arcs.end, strict=True)])
        if A
        else np.zeros(0, np.int64)
    )
    rr, cc, vv = [], [], []
    for c in range(C):
        rr.append(slot[c] * L + held)
        cc.append(col(np.repeat(ar, lens), c))
        vv.append(np.repeat(arcs.compute_ms * mult[c], lens))
    rr.append(np.arange(P * L))
    cc.append(np.full(P * L, OB))
    vv.append(-np.ones(P * L))
    if allreduce:
        rr.append(np.arange(P * L))
        cc.append(AR + np.repeat(np.arange(P), L))
        vv.append(np.ones(P * L))
    m.c_layer_time = LinearRows.from_coo(
        _cat(rr), _cat(cc), _catf(vv), P * L, np.full(P * L, -INF), np.zeros(P * L), cols
    )
    if comm is not None:
        tk = np.array(trans_keys, dtype=np.int64).reshape(-1, 4)
        for name, side in (("c_leave_type", "end"), ("c_enter_type", "start")):
            r_, c_, v_, n = _type_rows(arcs, trans_keys, C, L, XT, side)
            m.add_component(
                name, LinearRows.from_coo(r_, c_, v_, n, np.zeros(n), np.zeros(n), cols)
            )
        # c_boundary_time[r, b]: k x (compute of slot r's stage ending at b + its transfer)
        rr, cc, vv = [], [], []
        inner = np.nonzero(arcs.end < L)[0]
        for c in range(C):
            rr.append(slot[c] * (L - 1) + arcs.end[inner] - 1)
            cc.append(col(inner, c))
            vv.append(arcs.compute_ms[inner] * mult[c])
        if len(tk):
            rr.append(slot[tk[:, 3]] * (L - 1) + tk[:, 0] - 1)
            cc.append(XT + np.arange(R))
            vv.append(comm[tk[:, 0], tk[:, 1], tk[:, 2]] * mult[tk[:, 3]])
        n = P * (L - 1)
        rr.append(np.arange(n))
        cc.append(np.full(n, OB))
        vv.append(-np.ones(n))
        if allreduce:
            rr.append(np.arange(n))
            cc.append(AR + np.repeat(np.arange(P), L - 1))
            vv.append(np.ones(n))
        m.c_boundary_time = LinearRows.from_coo(
            _cat(rr), _cat(cc), _catf(vv), n, np.full(n, -INF), np.zeros(n), cols
        )
    if allreduce:
        # c_allreduce[r, l]: the all-reduce of slot r's stage holding l <= allreduce_ms[r]
        rr, cc, vv = [], [], []
        for c in range(C):
            rr.append(slot[c] * L + held)
            cc.append(col(np.repeat(ar, lens), c))
            vv.append(np.repeat(arcs.allreduce_ms, lens))
        rr.append(np.arange(P * L))
        cc.append(AR + np.repeat(np.arange(P), L))
        vv.append(-np.ones(P * L))
        m.c_allreduce = LinearRows.from_coo(
            _cat(rr), _cat(cc), _catf(vv), P * L, np.full(P * L, -INF), np.zeros(P * L), cols
        )
    m.obj = pyo.Objective(expr=m.iteration_ms, sense=pyo.minimize)
    return Built(m, SplitLayout(arcs, P, mults, comm, tuple(trans_keys)))


def device_work(inst: TrainingInstance) -> float:
    """Device-milliseconds one micro-batch needs at least: per layer the least
    ``d x time(l, t, d)`` over types and tensor-parallel degrees (``r`` replicas of a
    stage share a micro-batch, so replicas add no device time)."""
    total = 0.0
    for i in range(len(inst.layers)):
        best = INF
        for dev in inst.devices:
            for d in tp_degrees(inst, dev.type):
                if d <= dev.count:
                    best = min(best, d * float(layer_times(inst, dev.type, d)[i]))
        total += best if np.isfinite(best) else 0.0
    return total


# ----------------------------------------------------------------------------- plans
def pipeline_time(inst: TrainingInstance, p: Pipeline) -> tuple[float, float, float]:
    """``(bottleneck_ms, allreduce_ms, time_ms)`` of a pipeline, recomputed from the
    profiles: ``time = (b + S - 1) x bottleneck + allreduce``."""
    comp, trans, _ = stage_times(inst, list(p.stages))
    bottleneck = float((comp + trans).max())
    extra = float(stage_allreduce(inst, list(p.stages)).max())
    return bottleneck, extra, (p.micro_batches + len(p.stages) - 1) * bottleneck + extra


def plan_value(inst: TrainingInstance, plan: list[Pipeline]) -> float:
    return max(pipeline_time(inst, p)[2] for p in plan)


def split_tables(inst: TrainingInstance, plan: list[Pipeline]) -> dict[str, pd.DataFrame]:
    """``stages`` and ``layer_stage`` with a ``pipeline`` column, and ``batch_split``."""
    stages, layers, rows = [], [], []
    for r, p in enumerate(plan):
        t = stage_tables(inst, list(p.stages))
        stages.append(t["stages"].assign(pipeline=r))
        layers.append(t["layer_stage"].assign(pipeline=r))
        b, extra, tm = pipeline_time(inst, p)
        rows.append((r, p.micro_batches, len(p.stages), b, tm, extra))
    names = ["pipeline", "micro_batches", "stages", "bottleneck_ms", "time_ms", "allreduce_ms"]
    split = pd.DataFrame(rows, columns=names)
    if not has_allreduce(inst):
        split = split.drop(columns="allreduce_ms")
    return {
        "stages": pd.concat(stages, ignore_index=True),
        "layer_stage": pd.concat(layers, ignore_index=True),
        "batch_split": split,
    }


def even_split_start(
    inst: TrainingInstance, slots: int, stage_cap: int | None = None
) -> list[Pipeline] | None:
    """A feasible plan for HiGHS's start: for ``p = 1 .. slots``, ``p`` copies of the best
    pipeline (:func:`.training.usage_dp`) on ``1/p`` of every type's devices with the
    batch split as evenly as possible; the best of them. ``None`` if none fits."""
    best: tuple[float, list[Pipeline]] | None = None
    B = inst.micro_batches
    for p in range(1, slots + 1):
        devices = [d.model_copy(update={"count": d.count // p}) for d in inst.devices]
        if not any(d.count for d in devices):
            break
        share = inst.model_copy(update={"devices": devices, "micro_batches": -(-B // p)})
        got = usage_dp(share, "min_iteration_time", stage_cap)
        if got is None:
            continue
        plan = [Pipeline(tuple(got[1]), B // p + (1 if i < B % p else 0)) for i in range(p)]
        value = plan_value(inst, plan)
        if best is None or value < best[0]:
            best = (value, plan)
    return None if best is None else best[1]


class BatchSplit(BuildMethodBase):
    """``min_iteration_time`` with ``pipelines > 1``: the slot x multiplier MILP, started
    from :func:`even_split_start`."""

    def build(self, instance: TrainingInstance, params: Any) -> Built:
        return build_split(instance, params.max_stages)

    def describe(self, instance: TrainingInstance, params: Any, built: Built) -> dict[str, Any]:
        return {}

    def start(
        self, instance: TrainingInstance, params: Any, built: Built, compiled: Any
    ) -> np.ndarray | None:
        plan = even_split_start(instance, built.layout.slots, params.max_stages)
        return None if plan is None else start_vector(instance, built, compiled, plan)

    def extract(
        self, instance: TrainingInstance, params: Any, built: Built, solution: SolveView
    ) -> Outcome:
        lay: SplitLayout = built.layout
        arcs, A, K = lay.arcs, len(lay.arcs), len(lay.mults)
        x = solution.values(built.model.stage, range(A * K * lay.slots))
        chosen: dict[int, list[Stage]] = {}
        mult_of: dict[int, int] = {}
        for i in np.nonzero(x > 0.5)[0]:
            c, a = divmod(int(i), A)
            r = c // K
            mult_of[r] = lay.mults[c % K]
            chosen.setdefault(r, []).append(
                Stage(
                    int(arcs.type[a]),
                    int(arcs.start[a]),
                    int(arcs.end[a]),
                    int(arcs.replicas[a]),
                    int(arcs.tp[a]),
                )
            )
        plan = []
        for r in sorted(chosen):
            st = tuple(sorted(chosen[r], key=lambda s: s.start))
            plan.append(Pipeline(st, mult_of[r] + 1 - len(st)))
        plan.sort(key=lambda p: -p.micro_batches)
        value = plan_value(instance, plan)
        details = {
            "pipelines": len(plan),
            "stages": sum(len(p.stages) for p in plan),
            "iteration_ms": value,
        }
        return Outcome(value, split_tables(instance, plan), details)


def start_vector(
    inst: TrainingInstance, built: Built, compiled: Any, plan: list[Pipeline]
) -> np.ndarray | None:
    """HiGHS's start for a plan (pipelines in non-increasing batch order), ``None`` if
    the model has no columns for it."""
    lay: SplitLayout = built.layout
    arcs, A, K = lay.arcs, len(lay.arcs), len(lay.mults)
    if len(plan) > lay.slots:
        return None
    key = {
        (int(t), int(s), int(e), int(r), int(d)): a
        for a, (t, s, e, r, d) in enumerate(
            zip(arcs.type, arcs.start, arcs.end, arcs.replicas, arcs.tp, strict=True)
        )
    }
    x0 = np.zeros(compiled.num_col)
    stage_cols = compiled.columns_of(built.model.stage)
    tidx = {k: q for q, k in enumerate(lay.trans_keys)}
    tcols = compiled.columns_of(built.model.transition) if lay.transfer is not None else None
    for r, p in enumerate(sorted(plan, key=lambda p: -p.micro_batches)):
        k = p.micro_batches + len(p.stages) - 1
        if k not in lay.mults:
            return None
        c = r * K + lay.mults.index(k)
        for st in p.stages:
            a = key.get((st.type, st.start, st.end, st.replicas, st.tp))
            if a is None:
                return None
            j = stage_cols[c * A + a]
            if j >= 0:
                x0[j] = 1.0
        if tcols is not None:
            for s1, s2 in itertools.pairwise(p.stages):
                q = tidx.get((s1.end, s1.type, s2.type, c))
                if q is None:
                    return None
                if tcols[q] >= 0:
                    x0[tcols[q]] = 1.0
    if lay.arcs.allreduce_ms.any():
        cols = compiled.columns_of(built.model.allreduce_ms)
        for r, p in enumerate(sorted(plan, key=lambda p: -p.micro_batches)):
            if cols[r] >= 0:
                x0[cols[r]] = pipeline_time(inst, p)[1]
    j = compiled.column(built.model.iteration_ms)
    if j >= 0:
        x0[j] = plan_value(inst, plan)
    return x0
