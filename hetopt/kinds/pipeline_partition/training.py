"""Training mode: pipeline stages on device types (see ``models/pipeline_partition.md``).

A stage is an *arc* ``a = (type, [s, e), replicas, tp_degree)`` on the boundary line
``0..L``; a pipeline is a path ``0 -> L`` of arcs (binary ``stage[a]``, flow conservation
at each boundary), so contiguity needs no ordering variables and no big-M:

* ``min_stage_time``: ``min bottleneck`` with ``c_layer_time[l]``: the time of the one
  stage holding layer ``l`` is at most ``bottleneck`` (and ``c_boundary_time[b]`` with
  the activation transfer of the stage ending at ``b`` when transfers are modelled);
* ``min_iteration_time``: ``(micro_batches + S - 1) x bottleneck`` with the number of
  stages ``S`` chosen too. The path is copied per stage count ``S``
  (``stage_s[a, S]``, exactly one copy carries the pipeline, with exactly ``S`` arcs),
  so the rows ``iteration >= (micro_batches + S - 1) x time`` are linear: an exact
  extended formulation without big-M.

:func:`fixed_order_dp` is the O(L^2 S) dynamic programme for a fixed device order (a
known answer the tests compare with); :func:`usage_dp` is exact over every order for one
device per stage without transfers (a DP over the devices used per type) and gives the
MILP its start.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyomo.environ as pyo

from ...contract import BuildMethodBase, Built, Outcome, SolveView
from ...pyomo_ext import LinearRows
from .data import TrainingInstance

INF = float("inf")


# ----------------------------------------------------------------------------- arcs
@dataclass(frozen=True)
class StageArcs:
    """Every feasible stage: device type index ``type[a]``, layers ``[start, end)``,
    ``replicas[a]`` x ``tp[a]`` devices, ``compute_ms[a]`` per micro-batch,
    ``memory_gb[a]`` per device and ``allreduce_ms[a]``, the ring all-reduce of its
    gradients among its replicas once per iteration."""

    type: np.ndarray
    start: np.ndarray
    end: np.ndarray
    replicas: np.ndarray
    tp: np.ndarray
    compute_ms: np.ndarray
    memory_gb: np.ndarray
    allreduce_ms: np.ndarray

    @property
    def devices(self) -> np.ndarray:
        return self.replicas * self.tp

    def __len__(self) -> int:
        return len(self.type)


def layer_times(inst: TrainingInstance, t: str, degree: int) -> np.ndarray:
    """Per layer: its time on ``degree`` devices of type ``t`` (``inf`` where none)."""
    out = np.full(len(inst.layers), INF)
    for i, layer in enumerate(inst.layers):
        if degree == 1:
            out[i] = layer.time_ms.get(t, INF)
        else:
            out[i] = layer.tp_time_ms.get(t, {}).get(str(degree), INF)
    return out


def tp_degrees(inst: TrainingInstance, t: str) -> list[int]:
    """Tensor-parallel degrees profiled for type ``t`` (1 always)."""
    degs = {1}
    if inst.max_tensor_parallel > 1:
        for layer in inst.layers:
            degs.update(int(d) for d in layer.tp_time_ms.get(t, {}))
    return sorted(d for d in degs if d <= inst.max_tensor_parallel)


def allreduce_time(grad_gb: float, replicas: int, tp: int, bw_gb_s: float | None) -> float:
    """Ring all-reduce of ``grad_gb`` of gradients split ``tp`` ways among ``replicas``
    devices: ``2 (r - 1) / r x grad_gb / tp / bw x 1000`` ms (0 without a bandwidth)."""
    if bw_gb_s is None or replicas <= 1:
        return 0.0
    return 2.0 * (replicas - 1) / replicas * grad_gb / tp / bw_gb_s * 1000.0


def has_allreduce(inst: TrainingInstance) -> bool:
    """Some stage may pay a gradient all-reduce (replicas, gradients and a bandwidth)."""
    return (
        inst.max_data_parallel > 1
        and any(layer.grad_gb > 0 for layer in inst.layers)
        and any(d.allreduce_gb_s is not None and d.count > 1 for d in inst.devices)
    )


def stage_arcs(inst: TrainingInstance) -> StageArcs:
    """All feasible stages (every layer has a time there, memory fits, enough devices)."""
    L = len(inst.layers)
    mem = np.array([layer.memory_gb for layer in inst.layers])
    mem_pre = np.concatenate([[0.0], np.cumsum(mem)])
    grad_pre = np.concatenate([[0.0], np.cumsum([layer.grad_gb for layer in inst.layers])])
    s_all, e_all = np.triu_indices(L + 1, k=1)
    keys = ("t", "s", "e", "r", "d", "c", "m", "g")
    cols: dict[str, list[np.ndarray]] = {k: [] for k in keys}
    for ti, dev in enumerate(inst.devices):
        for d in tp_degrees(inst, dev.type):
            if d > dev.count:
                continue
            tm = layer_times(inst, dev.type, d)
            bad = np.concatenate([[0], np.cumsum(~np.isfinite(tm))])
            pre = np.concatenate([[0.0], np.cumsum(np.where(np.isfinite(tm), tm, 0.0))])
            ok = bad[e_all] - bad[s_all] == 0
            m_gb = (mem_pre[e_all] - mem_pre[s_all]) / d
            ok &= m_gb <= dev.memory_gb * (1 + 1e-12)
            s, e = s_all[ok], e_all[ok]
            base = pre[e] - pre[s]
            for r in range(1, min(inst.max_data_parallel, dev.count // d) + 1):
                cols["t"].append(np.full(len(s), ti))
                cols["s"].append(s)
                cols["e"].append(e)
                cols["r"].append(np.full(len(s), r))
                cols["d"].append(np.full(len(s), d))
                cols["c"].append(base / r)
                cols["m"].append(m_gb[ok])
                cols["g"].append(
                    allreduce_time(1.0, r, d, dev.allreduce_gb_s) * (grad_pre[e] - grad_pre[s])
                )

    def cat(key: str, dt: Any) -> np.ndarray:
        return np.concatenate(cols[key]).astype(dt) if cols[key] else np.zeros(0, dt)

    return StageArcs(
        cat("t", np.int64),
        cat("s", np.int64),
        cat("e", np.int64),
        cat("r", np.int64),
        cat("d", np.int64),
        cat("c", float),
        cat("m", float),
        cat("g", float),
    )


def transfer_ms(inst: TrainingInstance) -> np.ndarray | None:
    """``[b, t, u]``: ms to send layer ``b-1``'s activation from type ``t`` to ``u`` at
    boundary ``b`` (``None`` when no transfer costs anything)."""
    act = np.array([layer.activation_gb for layer in inst.layers])
    if not inst.interconnect or not act.any():
        return None
    T = len(inst.devices)
    pos = {d.type: i for i, d in enumerate(inst.devices)}
    bw = np.full((T, T), INF)
    for c in inst.interconnect:
        bw[pos[c.from_type], pos[c.to_type]] = c.bandwidth_gb_s
    L = len(inst.layers)
    out = np.zeros((L + 1, T, T))
    for b in range(1, L):
        out[b] = act[b - 1] / bw * 1000.0
    return out


# ----------------------------------------------------------------------------- model
@dataclass(frozen=True)
class TrainingLayout:
    arcs: StageArcs
    copies: tuple[int, ...]
    """Stage counts of the path copies (``(0,)``: one copy, any number of stages)."""
    transfer: np.ndarray | None
    trans_keys: tuple[tuple[int, int, int, int], ...]
    """Per ``transition`` column: (boundary, from type, to type, copy)."""


def transition_keys(
    arcs: StageArcs, L: int, Tn: int, copies: int
) -> list[tuple[int, int, int, int]]:
    """``(boundary b, type t, type u, copy c)`` for every boundary where a stage of type ``t``
    can end and one of type ``u`` can start: the ``transition`` columns of the models with
    activation transfers."""
    ends = {(int(e), int(t)) for e, t in zip(arcs.end, arcs.type, strict=True) if e < L}
    starts = {(int(s), int(t)) for s, t in zip(arcs.start, arcs.type, strict=True) if s > 0}
    return [
        (b, t, u, c)
        for c in range(copies)
        for b in range(1, L)
        for t in range(Tn)
        for u in range(Tn)
        if (b, t) in ends and (b, u) in starts
    ]


def max_stages(inst: TrainingInstance, cap: int | None) -> int:
    n = min(len(inst.layers), sum(d.count for d in inst.devices))
    return n if cap is None else min(n, cap)


def build(inst: TrainingInstance, objective: str, stage_cap: int | None = None) -> Built:
    """The boundary-path MILP: one path copy (``min_stage_time``) or one per stage count
    (``min_iteration_time``)."""
    L = len(inst.layers)
    arcs = stage_arcs(inst)
    A = len(arcs)
    Smax = max_stages(inst, stage_cap)
    iteration = objective == "min_iteration_time"
    copies: tuple[int, ...] = tuple(range(1, Smax + 1)) if iteration else (0,)
    C = len(copies)
    comm = transfer_ms(inst)
    Tn = len(inst.devices)
    M = inst.micro_batches
    # per copy the multiplier of a stage time in the objective's rows
    mult = np.array([M + S - 1 for S in copies], dtype=float) if iteration else np.ones(1)

    m = pyo.ConcreteModel(name=f"pipeline_partition_{objective}")
    m.STAGE_COLS = pyo.RangeSet(0, A * C - 1)
    m.stage = pyo.Var(m.STAGE_COLS, domain=pyo.Binary)
    trans_keys = transition_keys(arcs, L, Tn, C) if comm is not None else []
    R = len(trans_keys)
    m.TRANSITIONS = pyo.RangeSet(0, R - 1)
    m.transition = pyo.Var(m.TRANSITIONS, domain=pyo.Binary)
    unit = "iteration" if iteration else "bottleneck"
    m.add_component(unit + "_ms", pyo.Var(bounds=(0.0, None)))
    obj_var = m.component(unit + "_ms")
    cols = [*m.stage.values(), *m.transition.values(), obj_var]
    XT, OB = A * C, A * C + R
    # the gradient all-reduce, once per iteration: iteration_ms = pipeline + allreduce_ms
    allreduce = iteration and bool(arcs.allreduce_ms.any())
    if allreduce:
        m.allreduce_ms = pyo.Var(bounds=(0.0, None))
        cols.append(m.allreduce_ms)
    AR = OB + 1

    def col(a: np.ndarray, c: int) -> np.ndarray:
        return c * A + a

    ar = np.arange(A)
    first = np.nonzero(arcs.start == 0)[0]
    # c_start: exactly one stage (of one copy) starts at layer 0
    m.c_start = LinearRows.from_coo(
        np.zeros(len(first) * C, dtype=np.int64),
        np.concatenate([col(first, c) for c in range(C)]) if C else np.zeros(0, np.int64),
        np.ones(len(first) * C),
        1,
        np.ones(1),
        np.ones(1),
        cols,
    )
    # c_flow[b, copy]: a stage ends at b iff one starts at b (the path goes on)
    rr, cc, vv = [], [], []
    for c in range(C):
        inner_e = arcs.end < L
        rr.append((c * (L - 1)) + arcs.end[inner_e] - 1)
        cc.append(col(ar[inner_e], c))
        vv.append(np.ones(int(inner_e.sum())))
        inner_s = arcs.start > 0
        rr.append((c * (L - 1)) + arcs.start[inner_s] - 1)
        cc.append(col(ar[inner_s], c))
        vv.append(-np.ones(int(inner_s.sum())))
    nb = C * (L - 1)
    m.c_flow = LinearRows.from_coo(
        _cat(rr), _cat(cc), _catf(vv), nb, np.zeros(nb), np.zeros(nb), cols
    )
    # c_devices[t]: devices of type t used by the stages
    m.c_devices = LinearRows.from_coo(
        np.tile(arcs.type, C),
        np.arange(A * C),
        np.tile(arcs.devices.astype(float), C),
        Tn,
        np.full(Tn, -INF),
        np.array([float(d.count) for d in inst.devices]),
        cols,
    )
    if iteration:
        # c_stage_count[S]: the copy for S stages has S stages (or none)
        rr, cc, vv = [], [], []
        for c, S in enumerate(copies):
            rr += [np.full(A, c), np.full(len(first), c)]
            cc += [col(ar, c), col(first, c)]
            vv += [np.ones(A), np.full(len(first), -float(S))]
        m.c_stage_count = LinearRows.from_coo(
            _cat(rr), _cat(cc), _catf(vv), C, np.zeros(C), np.zeros(C), cols
        )
    elif stage_cap is not None:
        m.c_max_stages = LinearRows.from_coo(
            np.zeros(A, dtype=np.int64),
            ar,
            np.ones(A),
            1,
            np.full(1, -INF),
            np.array([float(stage_cap)]),
            cols,
        )
    if iteration and A:
        # c_work_bound: with S stages the bottleneck is at least the least total work W
        # over S (and the slowest layer's least time): sum_S (M + S - 1) lb_S sigma_S <= it.
        W, slowest = work_lower_bound(inst, arcs)
        lb = np.array([(M + S - 1) * max(W / S, slowest) for S in copies])
        m.c_work_bound = LinearRows.from_coo(
            np.zeros(len(first) * C + 1, dtype=np.int64),
            np.concatenate([*[col(first, c) for c in range(C)], [OB]]),
            np.concatenate([*[np.full(len(first), lb[c]) for c in range(C)], [-1.0]]),
            1,
            np.full(1, -INF),
            np.zeros(1),
            cols,
        )
    # c_layer_time[l]: sum over copies of mult x time of the stage holding l <= objective
    lens = arcs.end - arcs.start
    held = (
        np.concatenate([np.arange(s, e) for s, e in zip(arcs.start, arcs.end, strict=True)])
        if A
        else np.zeros(0, np.int64)
    )
    rr, cc, vv = [], [], []
    for c in range(C):
        rr.append(held)
        cc.append(col(np.repeat(ar, lens), c))
        vv.append(np.repeat(arcs.compute_ms * mult[c], lens))
    rr.append(np.arange(L))
    cc.append(np.full(L, OB))
    vv.append(-np.ones(L))
    if allreduce:
        rr.append(np.arange(L))
        cc.append(np.full(L, AR))
        vv.append(np.ones(L))
    m.c_layer_time = LinearRows.from_coo(
        _cat(rr), _cat(cc), _catf(vv), L, np.full(L, -INF), np.zeros(L), cols
    )
    if comm is not None:
        # transitions: the type pair at each boundary the path crosses
        tk = np.array(trans_keys, dtype=np.int64).reshape(-1, 4)
        for name, side in (("c_leave_type", "end"), ("c_enter_type", "start")):
            r_, c_, v_, n = _type_rows(arcs, trans_keys, C, L, XT, side)
            m.add_component(
                name,
                LinearRows.from_coo(r_, c_, v_, n, np.zeros(n), np.zeros(n), cols),
            )
        # c_boundary_time[b]: mult x (compute of the stage ending at b + its transfer)
        rr, cc, vv = [], [], []
        inner = np.nonzero(arcs.end < L)[0]
        for c in range(C):
            rr.append(arcs.end[inner] - 1)
            cc.append(col(inner, c))
            vv.append(arcs.compute_ms[inner] * mult[c])
        if len(tk):
            rr.append(tk[:, 0] - 1)
            cc.append(XT + np.arange(R))
            vv.append(comm[tk[:, 0], tk[:, 1], tk[:, 2]] * mult[tk[:, 3]])
        rr.append(np.arange(L - 1))
        cc.append(np.full(L - 1, OB))
        vv.append(-np.ones(L - 1))
        if allreduce:
            rr.append(np.arange(L - 1))
            cc.append(np.full(L - 1, AR))
            vv.append(np.ones(L - 1))
        m.c_boundary_time = LinearRows.from_coo(
            _cat(rr), _cat(cc), _catf(vv), L - 1, np.full(L - 1, -INF), np.zeros(L - 1), cols
        )
    if allreduce:
        # c_allreduce[l]: the all-reduce of the stage holding l <= allreduce_ms
        rr, cc, vv = [], [], []
        for c in range(C):
            rr.append(held)
            cc.append(col(np.repeat(ar, lens), c))
            vv.append(np.repeat(arcs.allreduce_ms, lens))
        rr.append(np.arange(L))
        cc.append(np.full(L, AR))
        vv.append(-np.ones(L))
        m.c_allreduce = LinearRows.from_coo(
            _cat(rr), _cat(cc), _catf(vv), L, np.full(L, -INF), np.zeros(L), cols
        )
    m.obj = pyo.Objective(expr=obj_var, sense=pyo.minimize)
    return Built(m, TrainingLayout(arcs, copies, comm, tuple(trans_keys)))


def work_lower_bound(inst: TrainingInstance, arcs: StageArcs) -> tuple[float, float]:
    """``(W, t)``: ``W`` = the sum over layers of the least time a stage spends on it (over
    every type, tensor-parallel degree and replica count an arc offers), so ``S`` stages
    have a bottleneck of at least ``W / S``; ``t`` = the largest such least time."""
    L = len(inst.layers)
    least = np.full(L, INF)
    for ti, dev in enumerate(inst.devices):
        for d in tp_degrees(inst, dev.type):
            sel = (arcs.type == ti) & (arcs.tp == d)
            if not sel.any():
                continue
            r = int(arcs.replicas[sel].max())
            least = np.minimum(least, layer_times(inst, dev.type, d) / r)
    least = np.where(np.isfinite(least), least, 0.0)
    return float(least.sum()), float(least.max(initial=0.0))


def _type_rows(
    arcs: StageArcs,
    trans_keys: list[tuple[int, int, int, int]],
    C: int,
    L: int,
    XT: int,
    side: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Rows tying stages to transitions at a boundary: the stages of type ``t`` ending
    (``side="end"``) or starting (``"start"``) at ``b`` in copy ``c`` = the transitions
    leaving / entering ``t`` there. A stage no transition can follow gets a row of its
    own, which forbids it."""
    A = len(arcs)
    key: dict[tuple[int, int, int], int] = {}
    for b, t, u, c in trans_keys:
        key.setdefault((b, t if side == "end" else u, c), len(key))
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    at = arcs.end if side == "end" else arcs.start
    for a in range(A):
        b, t = int(at[a]), int(arcs.type[a])
        if 0 < b < L:
            for c in range(C):
                rows.append(key.setdefault((b, t, c), len(key)))
                cols.append(c * A + a)
                vals.append(1.0)
    for q, (b, t, u, c) in enumerate(trans_keys):
        rows.append(key[b, t if side == "end" else u, c])
        cols.append(XT + q)
        vals.append(-1.0)
    return (
        np.array(rows, dtype=np.int64),
        np.array(cols, dtype=np.int64),
        np.array(vals, dtype=float),
        len(key),
    )


def _cat(xs: list[Any]) -> np.ndarray:
    return (
        np.concatenate([np.asarray(x, dtype=np.int64) for x in xs]) if xs else np.zeros(0, np.int64)
    )


def _catf(xs: list[Any]) -> np.ndarray:
    return np.concatenate([np.asarray(x, dtype=float) for x in xs]) if xs else np.zeros(0)


# ----------------------------------------------------------------------------- stages
@dataclass(frozen=True)
class Stage:
    type: int
    start: int
    end: int
    replicas: int = 1
    tp: int = 1


def stage_times(
    inst: TrainingInstance, stages: list[Stage]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per stage: compute ms, transfer ms, memory GB per device (recomputed from the
    profiles)."""
    comm = transfer_ms(inst)
    comp, trans, mem = [], [], []
    for k, st in enumerate(stages):
        t = inst.devices[st.type].type
        tm = layer_times(inst, t, st.tp)[st.start : st.end]
        comp.append(float(tm.sum()) / st.replicas)
        mem.append(sum(layer.memory_gb for layer in inst.layers[st.start : st.end]) / st.tp)
        if comm is not None and k + 1 < len(stages):
            trans.append(float(comm[st.end, st.type, stages[k + 1].type]))
        else:
            trans.append(0.0)
    return np.array(comp), np.array(trans), np.array(mem)


def stage_allreduce(inst: TrainingInstance, stages: list[Stage]) -> np.ndarray:
    """Per stage: the ring all-reduce of its gradients among its replicas (ms)."""
    return np.array(
        [
            allreduce_time(
                sum(layer.grad_gb for layer in inst.layers[st.start : st.end]),
                st.replicas,
                st.tp,
                inst.devices[st.type].allreduce_gb_s,
            )
            for st in stages
        ]
    )


def objective_of(inst: TrainingInstance, objective: str, stages: list[Stage]) -> float:
    comp, trans, _ = stage_times(inst, stages)
    bottleneck = float((comp + trans).max())
    if objective == "min_iteration_time":
        extra = float(stage_allreduce(inst, stages).max()) if stages else 0.0
        return (inst.micro_batches + len(stages) - 1) * bottleneck + extra
    return bottleneck


def stage_tables(inst: TrainingInstance, stages: list[Stage]) -> dict[str, pd.DataFrame]:
    comp, trans, mem = stage_times(inst, stages)
    rows, lrows = [], []
    for k, st in enumerate(stages):
        t = inst.devices[st.type].type
        rows.append(
            (
                k,
                t,
                st.start,
                st.end - st.start,
                inst.layers[st.start].id,
                inst.layers[st.end - 1].id,
                st.replicas,
                st.tp,
                st.replicas * st.tp,
                float(comp[k]),
                float(trans[k]),
                float(comp[k] + trans[k]),
                float(mem[k]),
            )
        )
        for i in range(st.start, st.end):
            lrows.append((inst.layers[i].id, k, t))
    stages_df = pd.DataFrame(
        rows,
        columns=[
            "stage",
            "device_type",
            "start_layer",
            "num_layers",
            "first_layer",
            "last_layer",
            "replicas",
            "tp_degree",
            "devices",
            "compute_ms",
            "transfer_ms",
            "time_ms",
            "memory_gb",
        ],
    )
    if has_allreduce(inst):
        stages_df["allreduce_ms"] = stage_allreduce(inst, stages)
    return {
        "stages": stages_df,
        "layer_stage": pd.DataFrame(lrows, columns=["layer", "stage", "device_type"]),
    }


# ----------------------------------------------------------------------------- methods
class _Pipeline(BuildMethodBase):
    objective = ""

    def build(self, instance: TrainingInstance, params: Any) -> Built:
        return build(instance, self.objective, params.max_stages)

    def describe(self, instance: TrainingInstance, params: Any, built: Built) -> dict[str, Any]:
        return {}

    def start(
        self, instance: TrainingInstance, params: Any, built: Built, compiled: Any
    ) -> np.ndarray | None:
        got = usage_dp(instance, self.objective, params.max_stages)
        if got is None:
            return None
        _, stages = got
        return start_vector(instance, built, compiled, stages)

    def extract(
        self, instance: TrainingInstance, params: Any, built: Built, solution: SolveView
    ) -> Outcome:
        lay: TrainingLayout = built.layout
        A = len(lay.arcs)
        x = solution.values(built.model.stage, range(A * len(lay.copies)))
        chosen = np.nonzero(x > 0.5)[0] % A if A else np.zeros(0, np.int64)
        arcs = lay.arcs
        stages = sorted(
            (
                Stage(
                    int(arcs.type[a]),
                    int(arcs.start[a]),
                    int(arcs.end[a]),
                    int(arcs.replicas[a]),
                    int(arcs.tp[a]),
                )
                for a in chosen
            ),
            key=lambda s: s.start,
        )
        value = objective_of(instance, self.objective, stages)
        comp, trans, _ = stage_times(instance, stages)
        b = float((comp + trans).max())
        details = {
            "stages": len(stages),
            "bottleneck_ms": b,
            "iteration_ms": objective_of(instance, "min_iteration_time", stages),
        }
        if has_allreduce(instance):
            details["allreduce_ms"] = float(stage_allreduce(instance, stages).max())
        return Outcome(value, stage_tables(instance, stages), details)


class MinStageTime(_Pipeline):
    objective = "min_stage_time"


class MinIterationTime(_Pipeline):
    objective = "min_iteration_time"


def start_vector(
    inst: TrainingInstance, built: Built, compiled: Any, stages: list[Stage]
) -> np.ndarray | None:
    lay: TrainingLayout = built.layout
    arcs, A = lay.arcs, len(lay.arcs)
    key = {
        (int(t), int(s), int(e), int(r), int(d)): a
        for a, (t, s, e, r, d) in enumerate(
            zip(arcs.type, arcs.start, arcs.end, arcs.replicas, arcs.tp, strict=True)
        )
    }
    c = 0
    if lay.copies != (0,):
        if len(stages) not in lay.copies:
            return None
        c = lay.copies.index(len(stages))
    x0 = np.zeros(compiled.num_col)
    stage_cols = compiled.columns_of(built.model.stage)
    for st in stages:
        a = key.get((st.type, st.start, st.end, st.replicas, st.tp))
        if a is None:
            return None
        j = stage_cols[c * A + a]
        if j >= 0:
            x0[j] = 1.0
    if lay.transfer is not None:
        tidx = {k: q for q, k in enumerate(lay.trans_keys)}
        tcols = compiled.columns_of(built.model.transition)
        for s1, s2 in itertools.pairwise(stages):
            q = tidx.get((s1.end, s1.type, s2.type, c))
            if q is None:
                return None
            if tcols[q] >= 0:
                x0[tcols[q]] = 1.0
    name = "iteration_ms" if lay.copies != (0,) else "bottleneck_ms"
    ar = built.model.component("allreduce_ms")
    if ar is not None and compiled.column(ar) >= 0:
        x0[compiled.column(ar)] = float(stage_allreduce(inst, stages).max())
    j = compiled.column(built.model.component(name))
    if j >= 0:
        x0[j] = objective_of(
            inst, "min_iteration_time" if lay.copies != (0,) else "min_stage_time", stages
        )
    return x0


# ----------------------------------------------------------------------------- DP
def fixed_order_dp(
    inst: TrainingInstance, order: list[str], objective: str = "min_stage_time"
) -> tuple[float, list[Stage]] | None:
    """The O(L^2 S) dynamic programme for a fixed device order: stage ``j`` on one
    device of type ``order[j]`` (one replica, no tensor parallelism), every device of
    the order used, stages contiguous and non-empty; minimise the bottleneck (stage
    time including the transfer to the next stage's type). ``None`` if no partition
    fits in memory. ``min_iteration_time`` multiplies by ``micro_batches + S - 1``."""
    L, S = len(inst.layers), len(order)
    if S == 0 or S > L:
        return None
    pos = {d.type: i for i, d in enumerate(inst.devices)}
    comm = transfer_ms(inst)
    mem = np.concatenate([[0.0], np.cumsum([layer.memory_gb for layer in inst.layers])])
    ss = np.arange(L + 1)[:, None]
    ee = np.arange(L + 1)[None, :]
    base: dict[str, np.ndarray] = {}
    for t in set(order):
        tm = layer_times(inst, t, 1)
        pre = np.concatenate([[0.0], np.cumsum(np.where(np.isfinite(tm), tm, 0.0))])
        bad = np.concatenate([[0], np.cumsum(~np.isfinite(tm))])
        cap = inst.devices[pos[t]].memory_gb * (1 + 1e-12)
        ok = (ee > ss) & (bad[ee] - bad[ss] == 0) & (mem[ee] - mem[ss] <= cap)
        base[t] = np.where(ok, pre[ee] - pre[ss], INF)
    cost = []  # cost[j][s, e]: stage j on [s, e), with the transfer to stage j + 1
    for j, t in enumerate(order):
        c = base[t]
        if comm is not None and j + 1 < S:
            extra = np.zeros(L + 1)
            extra[:L] = comm[:L, pos[t], pos[order[j + 1]]]
            c = c + extra[None, :]
        cost.append(c)
    best = np.full((S + 1, L + 1), INF)
    arg = np.zeros((S + 1, L + 1), dtype=np.int64)
    best[0, 0] = 0.0
    for j in range(1, S + 1):
        for e in range(j, L + 1):
            cand = np.maximum(best[j - 1, :e], cost[j - 1][:e, e])
            s = int(np.argmin(cand))
            best[j, e], arg[j, e] = cand[s], s
    if not math.isfinite(best[S, L]):
        return None
    stages, e = [], L
    for j in range(S, 0, -1):
        s = int(arg[j, e])
        stages.append(Stage(pos[order[j - 1]], s, e))
        e = s
    stages.reverse()
    value = float(best[S, L])
    if objective == "min_iteration_time":
        value *= inst.micro_batches + S - 1
    return value, stages


def usage_dp(
    inst: TrainingInstance,
    objective: str,
    stage_cap: int | None = None,
    max_states: int = 2_000_000,
) -> tuple[float, list[Stage]] | None:
    """Exact for one device per stage without transfers: a DP over (boundary, devices
    used per type) of the smallest bottleneck, ``best[e][u + 1_t] = min(max(best[s][u],
    cost_t(s, e)))``; the number of stages is ``sum(u)``, so ``min_iteration_time`` is
    ``min_u (micro_batches + sum(u) - 1) best[L][u]``. With replicas, tensor parallelism
    or transfers its plan is still feasible (an upper bound, the MILP's start); its value
    is then recomputed with them. ``None`` if no plan fits or the state space exceeds
    ``max_states``."""
    L = len(inst.layers)
    counts = [d.count for d in inst.devices]
    shape = tuple(min(c, L) + 1 for c in counts)
    if L * math.prod(shape) > max_states:
        return None
    T = len(counts)
    mem = np.concatenate([[0.0], np.cumsum([layer.memory_gb for layer in inst.layers])])
    costs = []
    for dev in inst.devices:
        tm = layer_times(inst, dev.type, 1)
        pre = np.concatenate([[0.0], np.cumsum(np.where(np.isfinite(tm), tm, 0.0))])
        bad = np.concatenate([[0], np.cumsum(~np.isfinite(tm))])
        ss = np.arange(L + 1)[:, None]
        ee = np.arange(L + 1)[None, :]
        ok = (ee > ss) & (bad[ee] - bad[ss] == 0)
        ok &= mem[ee] - mem[ss] <= dev.memory_gb * (1 + 1e-12)
        costs.append(np.where(ok, pre[ee] - pre[ss], INF))
    best = [np.full(shape, INF) for _ in range(L + 1)]
    par_p = [np.full(shape, -1, dtype=np.int64) for _ in range(L + 1)]
    par_t = [np.full(shape, -1, dtype=np.int64) for _ in range(L + 1)]
    best[0][(0,) * T] = 0.0
    for p in range(L):
        if not np.isfinite(best[p]).any():
            continue
        for t in range(T):
            src = tuple(slice(0, n - 1) if d == t else slice(None) for d, n in enumerate(shape))
            dst = tuple(slice(1, n) if d == t else slice(None) for d, n in enumerate(shape))
            from_p = best[p][src]
            for e in range(p + 1, L + 1):
                c = costs[t][p, e]
                if not math.isfinite(c):
                    continue
                cand = np.maximum(from_p, c)
                cur = best[e][dst]
                better = cand < cur - 1e-12
                if better.any():
                    cur[better] = cand[better]
                    par_p[e][dst][better] = p
                    par_t[e][dst][better] = t
    final = best[L].copy()
    used = np.indices(shape).sum(axis=0)
    if stage_cap is not None:
        final[used > stage_cap] = INF
    if objective == "min_iteration_time":
        mult = (inst.micro_batches + used - 1).astype(float)
        final = np.multiply(final, mult, out=np.full(shape, INF), where=np.isfinite(final))
    if not np.isfinite(final).any():
        return None
    u = np.array(np.unravel_index(int(np.argmin(final)), shape))
    stages: list[Stage] = []
    e = L
    while e > 0:
        p, t = int(par_p[e][tuple(u)]), int(par_t[e][tuple(u)])
        stages.append(Stage(t, p, e))
        u[t] -= 1
        e = p
    stages.reverse()
    return objective_of(inst, objective, stages), stages
