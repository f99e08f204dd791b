"""Migration (solve parameter ``migration=True``): a GPU per call, not per session.

A session with pauses ``q_1 .. q_m`` makes ``m + 1`` calls (its **segments**: before the
first pause, between two pauses, after the last). With migration each segment runs on a
GPU of its own, and at pause ``q`` (between segment ``j - 1`` on GPU ``u`` and segment
``j`` on GPU ``v``) the context is

* **kept** (``u = v``): it stays on ``u`` during ``[a_q, b_q)``, costing nothing;
* **evicted**: nothing is held, and it is re-prefilled on ``v`` (``n_q / rho_v`` seconds
  of ``v``), whether or not ``u = v``;
* **migrated** (``u != v``, over a link ``u -> v`` of the instance with rate ``r``): it
  is copied to ``v`` at the pause start, costing ``n_q / r`` transfer seconds (counted
  in full, like re-prefill seconds, charged to ``v``). It occupies ``v`` for the whole
  pause ``[a_q, b_q)`` (the blocks are reserved when the copy starts) and ``u`` while it
  is being copied, ``[a_q, min(b_q, a_q + n_q / r))`` (the source frees it once sent).

A session's own ``work_s`` is spread evenly over its segments (its GPU load then follows
its calls); with every segment on one GPU every figure equals the no-migration model's,
so the optimum with migration is never worse. See ``models/agent_sessions.md``
("Migration").

The formulation, its plan and tables live here (:class:`Migrating`, one MILP;
:class:`MigratingBest`, the method: no-migration MILP first, then the migration MILP,
the better plan); the verifier replays them in :mod:`.verify` (``segment`` table
present).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyomo.environ as pyo

from ...contract import BuildMethodBase, Built, Outcome, RunMethodBase, SolveView
from ...pyomo_ext import LinearRows
from ...status import Status
from . import formulations as F
from .data import AgentArrays, AgentSessionsInstance
from .heuristics import greedy_plan
from .params import AgentSessionsParams

if TYPE_CHECKING:
    from ...pipeline import Session

INF = float("inf")
EVICT, KEEP, MIGRATE = 0, 1, 2


# ----------------------------------------------------------------------------- data
@dataclass(frozen=True)
class Segments:
    """The calls of every session and the transfer links (derived from an instance).

    Segment ``e`` (flat, session order) is call ``seg_index[e]`` of session
    ``seg_session[e]``; session ``s`` has segments ``first[s] .. first[s+1]-1``. Pause
    ``q`` lies between segments ``before[q]`` and ``before[q] + 1``. ``allowed[e, g]``:
    the segment may run on ``g`` (the contexts of its neighbouring pauses fit; its
    session's pin). ``rate[u, v]``: tokens/s of the link ``u -> v`` (0: none).
    ``share[e]``: the segment's part of its session's ``work_s``.
    """

    seg_session: np.ndarray
    seg_index: np.ndarray
    first: np.ndarray
    before: np.ndarray
    allowed: np.ndarray
    rate: np.ndarray
    share: np.ndarray

    @property
    def num_segments(self) -> int:
        return len(self.seg_session)


def segments(inst: AgentSessionsInstance) -> Segments:
    arr = inst.arrays
    S, G = arr.num_sessions, arr.num_gpus
    count = np.bincount(arr.p_session, minlength=S) + 1
    first = np.concatenate([[0], np.cumsum(count)]).astype(np.int64)
    seg_session = np.repeat(np.arange(S), count).astype(np.int64)
    seg_index = (np.arange(int(count.sum())) - first[seg_session]).astype(np.int64)
    before = (first[arr.p_session] + arr.p_index).astype(np.int64)
    need = np.zeros(len(seg_session), dtype=np.int64)
    np.maximum.at(need, before, arr.p_tokens)
    np.maximum.at(need, before + 1, arr.p_tokens)
    allowed = need[:, None] <= arr.capacity[None, :]
    pinned = arr.pinned[seg_session]
    for e in np.nonzero(pinned >= 0)[0]:
        allowed[e] = False
        allowed[e, pinned[e]] = True
    gpos = {g: k for k, g in enumerate(arr.gpu_ids)}
    rate = np.zeros((G, G))
    for link in inst.links or []:
        rate[gpos[link.src], gpos[link.dst]] = link.kv_transfer_tokens_s
    share = arr.work[seg_session] / count[seg_session]
    return Segments(seg_session, seg_index, first, before, allowed, rate, share)


# ----------------------------------------------------------------------------- columns
@dataclass(frozen=True)
class MigrationColumns:
    """Columns and event grid of the migration MILP.

    ``run[y]``: segment ``y_seg[y]`` runs on GPU ``y_gpu[y]``. ``hold[h]``: pause
    ``h_pause[h]`` holds its context from GPU ``h_src[h]`` (segment before) to
    ``h_dst[h]`` (segment after): a keep when they are equal, else a migration costing
    ``h_transfer_s[h]``. Memory item ``i`` is ``it_tokens[i]`` tokens on GPU
    ``it_gpu[i]`` during ``[it_start[i], it_end[i])`` while ``hold[it_hold[i]]`` is 1
    (one item per keep, two per migration). The event grid is that of
    :class:`~.formulations.PlanColumns`, built from the items: ``it_add[i]`` is the event
    point of its start, ``it_sub[i]`` the first at or after its end (-1: none).
    """

    y_seg: np.ndarray
    y_gpu: np.ndarray
    h_pause: np.ndarray
    h_src: np.ndarray
    h_dst: np.ndarray
    h_transfer_s: np.ndarray
    it_hold: np.ndarray
    it_gpu: np.ndarray
    it_start: np.ndarray
    it_end: np.ndarray
    it_tokens: np.ndarray
    ev_gpu: np.ndarray
    ev_time: np.ndarray
    ev_cap: np.ndarray
    it_add: np.ndarray
    it_sub: np.ndarray

    @property
    def num_run(self) -> int:
        return len(self.y_seg)

    @property
    def num_hold(self) -> int:
        return len(self.h_pause)

    @property
    def num_events(self) -> int:
        return len(self.ev_time)


def _i(parts: list[Any], dtype: Any = np.int64) -> np.ndarray:
    return np.asarray(parts, dtype=dtype) if len(parts) else np.zeros(0, dtype=dtype)


def migration_columns(arr: AgentArrays, sg: Segments) -> MigrationColumns:
    """Segment placements, holds (keeps and useful migrations) and memory items."""
    y_seg, y_gpu = np.nonzero(sg.allowed)
    G = arr.num_gpus
    room = np.stack([arr.capacity[g] - arr.active_at(g, arr.p_start) for g in range(G)])
    holds: list[tuple[int, int, int, float]] = []  # pause, source, destination, transfer
    for q in range(arr.num_pauses):
        b = sg.before[q]
        n = int(arr.p_tokens[q])
        for u in range(G):
            if not sg.allowed[b, u] or n > room[u, q]:
                continue
            for v in range(G):
                if not sg.allowed[b + 1, v] or n > room[v, q]:
                    continue
                if u == v:
                    holds.append((q, u, v, 0.0))
                # a migration only where it beats re-prefilling on v (else dominated:
                # same GPU charged, more memory)
                elif sg.rate[u, v] > arr.prefill[v]:
                    holds.append((q, u, v, n / sg.rate[u, v]))
    h_pause, h_src, h_dst = (_i([h[k] for h in holds]) for k in range(3))
    h_transfer = _i([h[3] for h in holds], float)
    # memory items: the destination over the pause; a migration's source while copying
    a, b = arr.p_start[h_pause], arr.p_end[h_pause]
    mig = np.nonzero(h_src != h_dst)[0]
    it_hold = np.concatenate([np.arange(len(h_pause)), mig]).astype(np.int64)
    it_gpu = np.concatenate([h_dst, h_src[mig]]).astype(np.int64)
    it_start = np.concatenate([a, a[mig]])
    it_end = np.concatenate([b, np.minimum(b[mig], a[mig] + h_transfer[mig])])
    it_tokens = arr.p_tokens[h_pause[it_hold]].astype(np.int64)
    order = np.lexsort((it_start, it_gpu))
    it_hold, it_gpu = it_hold[order], it_gpu[order]
    it_start, it_end, it_tokens = it_start[order], it_end[order], it_tokens[order]
    add = np.zeros(len(it_hold), dtype=np.int64)
    sub = np.full(len(it_hold), -1, dtype=np.int64)
    eg: list[np.ndarray] = []
    et: list[np.ndarray] = []
    ec: list[np.ndarray] = []
    offset = 0
    for g in range(G):
        i = np.nonzero(it_gpu == g)[0]
        if not len(i):
            continue
        at, lv = arr.active_t[g], arr.active_level[g]
        rises = at[np.diff(np.concatenate([[0], lv])) > 0] if len(at) else np.zeros(0)
        times = np.unique(np.concatenate([it_start[i], rises]))
        times = times[times >= it_start[i].min()]
        step = int(np.gcd.reduce(it_tokens[i]))
        free = arr.capacity[g] - arr.active_at(g, times)
        add[i] = np.searchsorted(times, it_start[i]) + offset
        s = np.searchsorted(times, it_end[i], side="left")
        sub[i] = np.where(s < len(times), s + offset, -1)
        eg.append(np.full(len(times), g))
        et.append(times)
        ec.append((free // step) * step)
        offset += len(times)

    def cat(parts: list[np.ndarray], dtype: Any = np.int64) -> np.ndarray:
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)

    return MigrationColumns(
        y_seg=y_seg.astype(np.int64),
        y_gpu=y_gpu.astype(np.int64),
        h_pause=h_pause,
        h_src=h_src,
        h_dst=h_dst,
        h_transfer_s=h_transfer,
        it_hold=it_hold,
        it_gpu=it_gpu,
        it_start=it_start,
        it_end=it_end,
        it_tokens=it_tokens,
        ev_gpu=cat(eg),
        ev_time=cat(et, float),
        ev_cap=cat(ec),
        it_add=add,
        it_sub=sub,
    )


@dataclass(frozen=True)
class MigrationLayout:
    objective: str
    capacity_rows: str
    segments: Segments
    columns: MigrationColumns
    level: str | None


# ----------------------------------------------------------------------------- model
def _costs(arr: AgentArrays, sg: Segments, mc: MigrationColumns) -> tuple[np.ndarray, ...]:
    """Per ``run`` column: the re-prefill of the pause before its segment on its GPU (0
    for a first segment) and the segment's work share; per ``hold``: what it saves
    against that re-prefill (the re-prefill minus the transfer seconds)."""
    pause_before = np.full(sg.num_segments, -1, dtype=np.int64)
    pause_before[sg.before + 1] = np.arange(arr.num_pauses)
    q = pause_before[mc.y_seg]
    evict = np.where(q >= 0, arr.p_tokens[np.maximum(q, 0)] / arr.prefill[mc.y_gpu], 0.0)
    save = arr.p_tokens[mc.h_pause] / arr.prefill[mc.h_dst] - mc.h_transfer_s
    return evict, sg.share[mc.y_seg], save


def build(inst: AgentSessionsInstance, objective: str, params: AgentSessionsParams) -> Built:
    """The migration MILP of ``inst`` for ``objective`` (component names: the model card)."""
    arr = inst.arrays
    sg = segments(inst)
    mc = migration_columns(arr, sg)
    sweep = params.capacity_rows == "sweep"
    Y, H, V = mc.num_run, mc.num_hold, mc.num_events
    m = pyo.ConcreteModel(name=f"agent_sessions_{objective}_migration")

    def rng(n: int) -> Any:
        return pyo.RangeSet(0, n - 1) if n else pyo.Set(initialize=[])

    m.RUNS = rng(Y)
    m.HOLDS = rng(H)
    m.run = pyo.Var(m.RUNS, domain=pyo.Binary)
    m.hold = pyo.Var(m.HOLDS, domain=pyo.Binary)
    xs: list[Any] = [*m.run.values(), *m.hold.values()]
    h0, kv0 = Y, Y + H
    if sweep:
        m.EVENTS = rng(V)
        cap = mc.ev_cap.astype(float)
        m.kv = pyo.Var(m.EVENTS, bounds=lambda _m, v: (0.0, cap[v]))
        xs += list(m.kv.values())
    E = sg.num_segments
    m.c_segment = LinearRows.from_coo(
        mc.y_seg, np.arange(Y), np.ones(Y), E, np.ones(E), np.ones(E), xs
    )
    # a hold needs the segment before on its source and the one after on its destination
    run_of = np.full((E, arr.num_gpus), -1, dtype=np.int64)
    run_of[mc.y_seg, mc.y_gpu] = np.arange(Y)
    for name, gpu, seg in (
        ("c_hold_from", mc.h_src, sg.before[mc.h_pause]),
        ("c_hold_to", mc.h_dst, sg.before[mc.h_pause] + 1),
    ):
        key = mc.h_pause * arr.num_gpus + gpu
        uniq, row = np.unique(key, return_inverse=True)
        R = len(uniq)
        run_col = run_of[_first(seg, row, R), uniq % arr.num_gpus]
        m.add_component(
            name,
            LinearRows.from_coo(
                np.concatenate([row, np.arange(R)]),
                np.concatenate([h0 + np.arange(H), run_col]),
                np.concatenate([np.ones(H), -np.ones(R)]),
                R,
                np.full(R, -INF),
                np.zeros(R),
                xs,
            ),
        )
    _capacity_rows(m, mc, xs, h0, kv0, sweep)
    evict, share, save = _costs(arr, sg, mc)
    c = F._Cols(xs, h0, kv0)
    level: str | None = None
    hold_cols = h0 + np.arange(H)
    if objective == "min_recompute_s":
        m.obj = pyo.Objective(
            expr=F._linear(np.concatenate([evict, -save, np.zeros(len(xs) - Y - H)]), xs),
            sense=pyo.minimize,
        )
    elif objective == "min_max_load":
        level = "max_load"
        F.add_min_max(
            m,
            c,
            level,
            np.concatenate([mc.y_gpu, mc.h_dst]),
            np.concatenate([np.arange(Y), hold_cols]),
            np.concatenate([share + evict, -save]),
            arr.num_gpus,
        )
    else:  # agent_fair_share: recompute + transfer of a session over its ideal <= level
        level = "slowdown"
        ideal = arr.ideal()
        has = np.zeros(arr.num_sessions, dtype=bool)
        has[arr.p_session] = True
        row_of = np.full(arr.num_sessions, -1)
        row_of[has] = np.arange(int(has.sum()))
        ys = sg.seg_session[mc.y_seg]
        hs = arr.p_session[mc.h_pause]
        ysel = has[ys] & (evict > 0)
        F.add_min_max(
            m,
            c,
            level,
            np.concatenate([row_of[ys[ysel]], row_of[hs]]),
            np.concatenate([np.nonzero(ysel)[0], hold_cols]),
            np.concatenate([evict[ysel] / ideal[ys[ysel]], -save / ideal[hs]]),
            int(has.sum()),
        )
    return Built(m, MigrationLayout(objective, params.capacity_rows, sg, mc, level))


def _first(seg: np.ndarray, row: np.ndarray, R: int) -> np.ndarray:
    """Per row: the segment of (any) hold in it (all holds of a row share it)."""
    out = np.zeros(R, dtype=np.int64)
    out[row] = seg
    return out


def _capacity_rows(
    m: pyo.ConcreteModel, mc: MigrationColumns, xs: list[Any], h0: int, kv0: int, sweep: bool
) -> None:
    """Memory of the items, as :func:`.formulations.add_capacity_rows` (``c_sweep`` or
    ``c_capacity``), one coefficient per item on its hold's column."""
    N, V = len(mc.it_hold), mc.num_events
    if not N:
        return
    G = int(mc.ev_gpu.max()) + 1 if V else 0
    F.event_capacity_rows(
        m,
        ev_gpu=mc.ev_gpu,
        ev_cap=mc.ev_cap,
        add=mc.it_add,
        sub=mc.it_sub,
        gpu_of=mc.it_gpu,
        tok=mc.it_tokens.astype(float),
        cols=h0 + mc.it_hold,
        kv0=kv0,
        num_gpus=G,
        xs=xs,
        sweep=sweep,
    )


# ----------------------------------------------------------------------------- plan
@dataclass(frozen=True)
class MigrationPlan:
    """``seg_gpu[e]``: the GPU of segment ``e``; ``action[q]``: EVICT, KEEP or MIGRATE."""

    seg_gpu: np.ndarray
    action: np.ndarray


@dataclass(frozen=True)
class _Figures:
    recompute: np.ndarray
    transfer: np.ndarray
    resume_gpu: np.ndarray
    from_gpu: np.ndarray


def _figures(arr: AgentArrays, sg: Segments, plan: MigrationPlan) -> _Figures:
    u = plan.seg_gpu[sg.before]
    v = plan.seg_gpu[sg.before + 1]
    rec = np.where(plan.action == EVICT, arr.p_tokens / arr.prefill[v], 0.0)
    mig = plan.action == MIGRATE
    rate = np.where(mig, sg.rate[u, v], 1.0)
    transfer = np.where(mig, arr.p_tokens / rate, 0.0)
    return _Figures(rec, transfer, v, u)


def objective_value(arr: AgentArrays, sg: Segments, plan: MigrationPlan, objective: str) -> float:
    return float(_values(arr, sg, plan)[objective])


def _values(arr: AgentArrays, sg: Segments, plan: MigrationPlan) -> dict[str, float]:
    f = _figures(arr, sg, plan)
    cost = f.recompute + f.transfer
    load = np.zeros(arr.num_gpus)
    np.add.at(load, plan.seg_gpu, sg.share)
    np.add.at(load, f.resume_gpu, cost)
    per = np.zeros(arr.num_sessions)
    np.add.at(per, arr.p_session, cost)
    ideal = arr.ideal()
    share = np.where(ideal + per > 0, ideal / np.where(ideal + per > 0, ideal + per, 1.0), 1.0)
    has = ideal > 0
    return {
        "min_recompute_s": float(cost.sum()),
        "min_max_load": float(load.max()),
        "agent_fair_share": float(share.min()),
        "slowdown": float((per[has] / ideal[has]).max()) if has.any() else 0.0,
    }


def plan_tables(arr: AgentArrays, sg: Segments, plan: MigrationPlan) -> dict[str, pd.DataFrame]:
    """The declared tables of a migration plan (``segment`` and the optional columns)."""
    sid = np.array(arr.session_ids, dtype=object)
    gid = np.array(arr.gpu_ids, dtype=object)
    f = _figures(arr, sg, plan)
    first_gpu = plan.seg_gpu[sg.first[:-1]]
    segment = pd.DataFrame(
        {
            "session": sid[sg.seg_session],
            "segment": sg.seg_index,
            "gpu": gid[plan.seg_gpu],
            "work_s": sg.share,
        }
    )
    retention = pd.DataFrame(
        {
            "session": sid[arr.p_session],
            "pause": arr.p_index.astype(np.int64),
            "gpu": gid[f.resume_gpu],
            "start_s": arr.p_start,
            "end_s": arr.p_end,
            "context_tokens": arr.p_tokens.astype(np.int64),
            "kept": plan.action == KEEP,
            "recompute_s": f.recompute,
            "migrated": plan.action == MIGRATE,
            "migrate_s": f.transfer,
        }
    )
    # memory: every held context on its GPU(s)
    items: list[tuple[int, float, float, int]] = []
    for q in np.nonzero(plan.action != EVICT)[0]:
        a, b, n = float(arr.p_start[q]), float(arr.p_end[q]), int(arr.p_tokens[q])
        items.append((int(f.resume_gpu[q]), a, b, n))
        if plan.action[q] == MIGRATE:
            items.append((int(f.from_gpu[q]), a, min(b, a + float(f.transfer[q])), n))
    parts = []
    for g in range(arr.num_gpus):
        mine = [it for it in items if it[0] == g]
        on = np.nonzero(plan.seg_gpu[sg.before] == g)[0]
        on2 = np.nonzero(plan.seg_gpu[sg.before + 1] == g)[0]
        times = np.unique(
            np.concatenate(
                [
                    arr.p_start[on],
                    arr.p_end[on],
                    arr.p_start[on2],
                    arr.p_end[on2],
                    np.array([it[1] for it in mine] + [it[2] for it in mine], dtype=float),
                    arr.active_t[g],
                ]
            )
        )
        if len(times) < 2:
            continue
        step = np.zeros(len(times), dtype=np.int64)
        for _, a, b, n in mine:
            step[np.searchsorted(times, a)] += n
            step[np.searchsorted(times, b)] -= n
        parts.append(
            pd.DataFrame(
                {
                    "gpu": arr.gpu_ids[g],
                    "start_s": times[:-1],
                    "end_s": times[1:],
                    "kept_tokens": np.cumsum(step)[:-1],
                    "active_tokens": arr.active_at(g, times[:-1]).astype(np.int64),
                    "capacity_tokens": np.full(len(times) - 1, int(arr.capacity[g])),
                }
            )
        )
    memory = pd.concat(parts, ignore_index=True) if parts else _empty_timeline()
    work = np.zeros(arr.num_gpus)
    np.add.at(work, plan.seg_gpu, sg.share)
    grec = np.zeros(arr.num_gpus)
    np.add.at(grec, f.resume_gpu, f.recompute)
    gmig = np.zeros(arr.num_gpus)
    np.add.at(gmig, f.resume_gpu, f.transfer)
    on_gpu = np.zeros((arr.num_sessions, arr.num_gpus), dtype=bool)
    on_gpu[sg.seg_session, plan.seg_gpu] = True
    gpu_load = pd.DataFrame(
        {
            "gpu": gid,
            "sessions": on_gpu.sum(axis=0).astype(np.int64),
            "work_s": work,
            "recompute_s": grec,
            "migrate_s": gmig,
            "load_s": work + grec + gmig,
        }
    )
    srec = np.zeros(arr.num_sessions)
    np.add.at(srec, arr.p_session, f.recompute)
    smig = np.zeros(arr.num_sessions)
    np.add.at(smig, arr.p_session, f.transfer)
    ideal = arr.ideal()
    achieved = ideal + srec + smig
    completion = pd.DataFrame(
        {
            "session": sid,
            "gpu": gid[first_gpu],
            "ideal_s": ideal,
            "recompute_s": srec,
            "migrate_s": smig,
            "achieved_s": achieved,
            "fair_share": np.where(
                achieved > 0, ideal / np.where(achieved > 0, achieved, 1.0), 1.0
            ),
        }
    )
    return {
        "affinity": pd.DataFrame({"session": sid, "gpu": gid[first_gpu]}),
        "segment": segment,
        "retention": retention,
        "memory_timeline": memory,
        "gpu_load": gpu_load,
        "completion": completion,
    }


def _empty_timeline() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "gpu": pd.Series([], dtype=object),
            "start_s": pd.Series([], dtype=float),
            "end_s": pd.Series([], dtype=float),
            "kept_tokens": pd.Series([], dtype=np.int64),
            "active_tokens": pd.Series([], dtype=np.int64),
            "capacity_tokens": pd.Series([], dtype=np.int64),
        }
    )


def from_affinity_plan(
    arr: AgentArrays, sg: Segments, gpu: np.ndarray, kept: np.ndarray
) -> MigrationPlan:
    """A no-migration plan (one GPU per session) as a migration plan."""
    return MigrationPlan(gpu[sg.seg_session].astype(np.int64), np.where(kept, KEEP, EVICT))


# ----------------------------------------------------------------------------- method
def _share(slowdown: float) -> float:
    return 1.0 / (1.0 + max(0.0, slowdown))


class Migrating(BuildMethodBase):
    """The migration MILP for one objective.

    No MIP start: on this model HiGHS 1.16 (presolve on) returned the start's column
    values with the optimum's objective and a zero gap once it had found a better
    solution (reproduced with a plain ``highspy`` run of the exported MPS), i.e. a plan
    worse than the one it reported. The greedy plan's objective is still reported
    (``greedy_objective``)."""

    def __init__(self, objective: str):
        self.objective = objective
        self.fair_share = objective == "agent_fair_share"

    def build(self, instance: AgentSessionsInstance, params: AgentSessionsParams) -> Built:
        return build(instance, self.objective, params)

    def export_objective(
        self, instance: AgentSessionsInstance, params: AgentSessionsParams, built: Built
    ) -> None:
        """In the user's units already; the fair share's says what its optimum is."""
        from .formulations import note_export

        note_export(self.objective)

    def describe(
        self, instance: AgentSessionsInstance, params: AgentSessionsParams, built: Built
    ) -> dict[str, Any]:
        mc: MigrationColumns = built.layout.columns
        return {
            "method": "milp",
            "capacity_rows": params.capacity_rows,
            "num_pauses": instance.arrays.num_pauses,
            "num_keeps": int((mc.h_src == mc.h_dst).sum()),
            "num_migrations": int((mc.h_src != mc.h_dst).sum()),
            "num_segments": built.layout.segments.num_segments,
            "num_event_points": mc.num_events,
        }

    def _greedy(self, instance: AgentSessionsInstance) -> MigrationPlan:
        arr = instance.arrays
        g = greedy_plan(arr, self.objective)
        return from_affinity_plan(arr, segments(instance), g.gpu, g.kept)

    def unscale_bound(self, built: Built, bound: float) -> float:
        return _share(bound) if self.fair_share else bound

    def extract(
        self,
        instance: AgentSessionsInstance,
        params: AgentSessionsParams,
        built: Built,
        solution: SolveView,
    ) -> Outcome:
        arr = instance.arrays
        layout: MigrationLayout = built.layout
        sg = layout.segments
        plan = read_plan(arr, built, solution)
        vals = _values(arr, sg, plan)
        value = vals[self.objective]
        f = _figures(arr, sg, plan)
        details: dict[str, Any] = {
            "kept_pauses": int((plan.action == KEEP).sum()),
            "migrated_pauses": int((plan.action == MIGRATE).sum()),
            "total_recompute_s": float(f.recompute.sum()),
            "total_migrate_s": float(f.transfer.sum()),
            "max_load_s": vals["min_max_load"],
            "min_fair_share": vals["agent_fair_share"],
        }
        if params.greedy_start:
            details["greedy_objective"] = _values(arr, sg, self._greedy(instance))[self.objective]
        out = Outcome(value, plan_tables(arr, sg, plan), details)
        if self.fair_share:
            details["max_slowdown"] = vals["slowdown"]
            if solution.bound is not None and math.isfinite(solution.bound):
                out.bound = _share(float(solution.bound))
                out.gap = max(0.0, out.bound - value) / max(abs(value), 1e-9)
            else:
                out.bound, out.gap = None, None
        return out


def read_plan(arr: AgentArrays, built: Built, solution: SolveView) -> MigrationPlan:
    """Segment GPUs (the largest ``run`` of each segment) and the holds consistent with
    them (binaries rounded)."""
    layout: MigrationLayout = built.layout
    sg, mc = layout.segments, layout.columns
    m = built.model
    y = solution.values(m.run, range(mc.num_run))
    seg_gpu = np.full(sg.num_segments, -1, dtype=np.int64)
    best = np.full(sg.num_segments, -1.0)
    for k in range(mc.num_run):
        e = mc.y_seg[k]
        if y[k] > best[e]:
            best[e], seg_gpu[e] = y[k], mc.y_gpu[k]
    action = np.full(arr.num_pauses, EVICT, dtype=np.int64)
    if mc.num_hold:
        h = solution.values(m.hold, range(mc.num_hold)) > 0.5
        b = sg.before[mc.h_pause]
        ok = h & (seg_gpu[b] == mc.h_src) & (seg_gpu[b + 1] == mc.h_dst)
        action[mc.h_pause[ok]] = np.where(mc.h_src[ok] == mc.h_dst[ok], KEEP, MIGRATE)
    return MigrationPlan(seg_gpu, action)


# ----------------------------------------------------------------------------- best of two
NO_MIGRATION_SHARE = 0.3
"""Share of a time limit the one-GPU-per-session MILP gets before the migration MILP."""


class MigratingBest(RunMethodBase):
    """The method of ``migration=True``: first the no-migration MILP (one GPU per session,
    greedy start, a share of the time limit), then the migration MILP with the time left;
    the better plan is returned (in the migration tables), with the migration MILP's
    bound. Every no-migration plan is a migration plan, so the result is never worse than
    solving without migration, even when the migration MILP stops at its limit."""

    def __init__(self, objective: str):
        self.objective = objective
        self.milp = Migrating(objective)

    def build(self, instance: AgentSessionsInstance, params: AgentSessionsParams) -> Built:
        return self.milp.build(instance, params)

    def export_objective(
        self, instance: AgentSessionsInstance, params: AgentSessionsParams, built: Built
    ) -> None:
        self.milp.export_objective(instance, params, built)

    def run(
        self, session: Session, instance: AgentSessionsInstance, params: AgentSessionsParams
    ) -> Outcome:
        from .methods import KeepEvict

        arr = instance.arrays
        sg = segments(instance)
        first = session.remaining()
        if first.time_limit_s is not None:
            first = first.replace(time_limit_s=max(1e-3, first.time_limit_s * NO_MIGRATION_SHARE))
        base, _ = session.solve_method(
            KeepEvict(self.objective),
            instance,
            params.model_copy(update={"migration": False}),
            first,
            stage="no_migration",
        )
        out, _ = session.solve_method(
            self.milp, instance, params, session.remaining(), stage="migration"
        )
        base_plan = _plan_of(arr, sg, base) if base.objective_value is not None else None
        if base_plan is None:
            return out
        base_value = _values(arr, sg, base_plan)[self.objective]
        out.details["no_migration_objective"] = base_value
        sign = -1.0 if self.milp.fair_share else 1.0
        if out.objective_value is not None and sign * out.objective_value <= sign * base_value:
            return out
        bound = out.bound if isinstance(out.bound, float) else None
        gap = None if bound is None else abs(base_value - bound) / max(abs(base_value), 1e-9)
        f = _figures(arr, sg, base_plan)
        details = dict(out.details)
        details.update(
            kept_pauses=int((base_plan.action == KEEP).sum()),
            migrated_pauses=0,
            total_recompute_s=float(f.recompute.sum()),
            total_migrate_s=0.0,
            max_load_s=_values(arr, sg, base_plan)["min_max_load"],
            min_fair_share=_values(arr, sg, base_plan)["agent_fair_share"],
        )
        if self.milp.fair_share:
            details["max_slowdown"] = _values(arr, sg, base_plan)["slowdown"]
        optimal = gap is not None and gap <= 1e-9
        return Outcome(
            base_value,
            plan_tables(arr, sg, base_plan),
            details,
            Status.OPTIMAL if optimal else Status.FEASIBLE,
            f"migration MILP: {out.termination}; the one-GPU-per-session plan is better "
            "and returned",
            bound=bound,
            gap=gap,
        )


def _plan_of(arr: AgentArrays, sg: Segments, outcome: Outcome) -> MigrationPlan:
    """A no-migration outcome's plan (its affinity and retention tables) as a migration plan."""
    gpos = {g: k for k, g in enumerate(arr.gpu_ids)}
    aff = dict(
        zip(outcome.tables["affinity"]["session"], outcome.tables["affinity"]["gpu"], strict=True)
    )
    gpu = np.array([gpos[aff[s]] for s in arr.session_ids], dtype=np.int64)
    ret = outcome.tables["retention"]
    kept_of = {
        (s, int(j)): bool(k)
        for s, j, k in zip(ret["session"], ret["pause"], ret["kept"], strict=True)
    }
    kept = np.array(
        [
            kept_of[(arr.session_ids[s], int(j))]
            for s, j in zip(arr.p_session, arr.p_index, strict=True)
        ],
        dtype=bool,
    )
    return from_affinity_plan(arr, sg, gpu, kept)
