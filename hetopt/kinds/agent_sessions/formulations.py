"""Pyomo formulations of the ``agent_sessions`` kind (see ``models/agent_sessions.md``).

One MILP with three objectives, built from small pieces (PyJobShop's split):

* :func:`plan_columns`: which ``(session, GPU)`` affinities and ``(pause, GPU)`` keeps
  exist, and the event points of each GPU's memory sweep;
* :func:`add_variables`: ``assign[a]``, ``keep[k]`` (binary), ``kv[v]`` (kept tokens on a
  GPU from event point ``v`` on, sweep rows only);
* :func:`add_affinity_rows`, :func:`add_capacity_rows`: one GPU per session, a pause is kept
  only on its session's GPU, kept contexts plus the active batch never exceed
  ``kv_capacity_tokens``;
* :func:`add_min_max` (the small max-min / min-max LP block used by ``min_max_load`` and
  ``agent_fair_share``) and the objective builders in :data:`OBJECTIVES`.

Every objective is in the user's units (seconds; the fair share's exported objective is
the largest relative slowdown, see :func:`objective_fair_share`), so an exported LP/MPS
file reports the same optimum as :func:`hetopt.solve`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyomo.environ as pyo
from pyomo.core.expr.numeric_expr import LinearExpression

from ...contract import Built
from ...pyomo_ext import LinearRows
from .data import AgentArrays
from .params import AgentSessionsParams

INF = float("inf")


# ----------------------------------------------------------------------------- columns
@dataclass(frozen=True)
class PlanColumns:
    """The columns of the model and the event grid of the memory sweep.

    ``assign[a]`` is session ``a_session[a]`` on GPU ``a_gpu[a]``; ``keep[k]`` keeps
    pause ``k_pause[k]`` on GPU ``k_gpu[k]`` (only allowed with affinity ``k_pair[k]``).
    Event point ``v`` is time ``ev_time[v]`` on GPU ``ev_gpu[v]`` (sorted per GPU, GPUs
    in order); the kept set of a GPU changes only at these points. ``k_add[k]`` is the
    event point where pause ``k`` starts, ``k_sub[k]`` the first event point at or after
    its end (-1: none, the pause outlasts every later start). ``ev_cap[v]`` bounds the
    kept tokens there: capacity minus the active batch, rounded down to a multiple of the
    gcd of the context sizes that may be kept on that GPU (a valid tightening that makes
    the one-GPU equal-size LP integral for any capacity).
    """

    a_session: np.ndarray
    a_gpu: np.ndarray
    k_pause: np.ndarray
    k_gpu: np.ndarray
    k_pair: np.ndarray
    ev_gpu: np.ndarray
    ev_time: np.ndarray
    ev_cap: np.ndarray
    k_add: np.ndarray
    k_sub: np.ndarray

    @property
    def num_assign(self) -> int:
        return len(self.a_session)

    @property
    def num_keep(self) -> int:
        return len(self.k_pause)

    @property
    def num_events(self) -> int:
        return len(self.ev_time)


def symmetry_classes(arr: AgentArrays) -> list[list[int]]:
    """Classes (of two or more) of interchangeable GPUs: equal capacity, prefill speed and
    active-batch profile, none of them named by a session's pin."""
    pinned = {int(g) for g in arr.pinned if g >= 0}
    classes: dict[tuple, list[int]] = {}
    for g in range(arr.num_gpus):
        if g in pinned:
            continue
        key = (
            int(arr.capacity[g]),
            float(arr.prefill[g]),
            tuple(arr.active_t[g].tolist()),
            tuple(arr.active_level[g].tolist()),
        )
        classes.setdefault(key, []).append(g)
    return [c for c in classes.values() if len(c) > 1]


def symmetric_forbidden(arr: AgentArrays) -> np.ndarray:
    """sessions x GPUs: affinities that symmetry breaking removes.

    Relabel a class of interchangeable GPUs (:func:`symmetry_classes`) so that its GPUs
    are ordered by the first session (in instance order, among those allowed there) they
    serve: the ``r``-th GPU's first session is then at least the ``r``-th, so the
    ``i``-th session (0-based) never needs a GPU of rank above ``i``.
    """
    out = np.zeros((arr.num_sessions, arr.num_gpus), dtype=bool)
    for members in symmetry_classes(arr):
        ok = arr.allowed[:, members[0]] & (arr.pinned < 0)
        position = np.cumsum(ok) - 1  # rank of each session among those allowed here
        for r, g in enumerate(members):
            out[ok & (position < r), g] = True
    return out


def canonical_gpus(arr: AgentArrays, gpu: np.ndarray) -> np.ndarray:
    """``gpu`` (session -> GPU) relabelled within each class of interchangeable GPUs so
    that it respects :func:`symmetric_forbidden` (same plan up to the symmetry)."""
    out = gpu.copy()
    S = arr.num_sessions
    for members in symmetry_classes(arr):
        first = [int(np.argmax(gpu == g)) if (gpu == g).any() else S for g in members]
        order = [members[k] for k in np.argsort(first, kind="stable")]
        relabel = dict(zip(order, members, strict=True))
        for old, new in relabel.items():
            out[gpu == old] = new
    return out


def plan_columns(arr: AgentArrays, symmetry_breaking: bool = False) -> PlanColumns:
    """Affinities, keeps and the per-GPU event grid of ``arr`` (see :class:`PlanColumns`)."""
    allowed = arr.allowed.copy()
    if symmetry_breaking:
        allowed &= ~symmetric_forbidden(arr)
    a_session, a_gpu = np.nonzero(allowed)
    pair_of = np.full(allowed.shape, -1, dtype=np.int64)
    pair_of[a_session, a_gpu] = np.arange(len(a_session))
    kp, kg, kpair, kadd, ksub = [], [], [], [], []
    eg, et, ec = [], [], []
    offset = 0
    for g in range(arr.num_gpus):
        q = np.nonzero(allowed[arr.p_session, g])[0]
        # a context that does not fit beside the active batch when its pause starts
        # cannot be kept there
        room = arr.capacity[g] - arr.active_at(g, arr.p_start[q])
        q = q[arr.p_tokens[q] <= room]
        if not len(q):
            continue
        at, lv = arr.active_t[g], arr.active_level[g]
        rises = at[np.diff(np.concatenate([[0], lv])) > 0] if len(at) else np.zeros(0)
        times = np.unique(np.concatenate([arr.p_start[q], rises]))
        # only event points from the first possible keep on matter
        times = times[times >= arr.p_start[q].min()]
        step = int(np.gcd.reduce(arr.p_tokens[q]))
        free = arr.capacity[g] - arr.active_at(g, times)
        cap = (free // step) * step
        add = np.searchsorted(times, arr.p_start[q])
        sub = np.searchsorted(times, arr.p_end[q], side="left")
        sub = np.where(sub < len(times), sub + offset, -1)
        kp.append(q)
        kg.append(np.full(len(q), g))
        kpair.append(pair_of[arr.p_session[q], g])
        kadd.append(add + offset)
        ksub.append(sub)
        eg.append(np.full(len(times), g))
        et.append(times)
        ec.append(cap)
        offset += len(times)

    def cat(parts: list[np.ndarray], dtype: Any = np.int64) -> np.ndarray:
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)

    return PlanColumns(
        a_session=a_session.astype(np.int64),
        a_gpu=a_gpu.astype(np.int64),
        k_pause=cat(kp),
        k_gpu=cat(kg),
        k_pair=cat(kpair),
        ev_gpu=cat(eg),
        ev_time=cat(et, float),
        ev_cap=cat(ec),
        k_add=cat(kadd),
        k_sub=cat(ksub),
    )


# ----------------------------------------------------------------------------- layout
@dataclass(frozen=True)
class PlanLayout:
    """What a model tells its extractor and its MIP start."""

    objective: str
    capacity_rows: str
    columns: PlanColumns
    level: str | None
    """Name of the min-max level variable (``max_load``, ``slowdown``) or ``None``."""


@dataclass(frozen=True)
class _Cols:
    """Column offsets of the variable blocks in the LinearRows variable list."""

    xs: list[Any]
    keep0: int
    kv0: int


# ----------------------------------------------------------------------------- pieces
def add_variables(m: pyo.ConcreteModel, pc: PlanColumns, sweep: bool) -> _Cols:
    """``assign[a]``, ``keep[k]`` binary; ``kv[v]`` in ``[0, ev_cap[v]]`` (sweep rows)."""
    m.PAIRS = pyo.RangeSet(0, pc.num_assign - 1)
    m.KEEPS = pyo.RangeSet(0, pc.num_keep - 1) if pc.num_keep else pyo.Set(initialize=[])
    m.assign = pyo.Var(m.PAIRS, domain=pyo.Binary)
    m.keep = pyo.Var(m.KEEPS, domain=pyo.Binary)
    xs: list[Any] = [*m.assign.values(), *m.keep.values()]
    if sweep:
        V = pc.num_events
        m.EVENTS = pyo.RangeSet(0, V - 1) if V else pyo.Set(initialize=[])
        cap = pc.ev_cap.astype(float)
        m.kv = pyo.Var(m.EVENTS, bounds=lambda _m, v: (0.0, cap[v]))
        xs += list(m.kv.values())
    return _Cols(xs, pc.num_assign, pc.num_assign + pc.num_keep)


def add_affinity_rows(m: pyo.ConcreteModel, arr: AgentArrays, pc: PlanColumns, c: _Cols) -> None:
    """``c_affinity[s]: sum_g assign[s,g] = 1``; ``c_link[k]: keep[k] - assign[pair] <= 0``."""
    S, A, K = arr.num_sessions, pc.num_assign, pc.num_keep
    m.c_affinity = LinearRows.from_coo(
        pc.a_session, np.arange(A), np.ones(A), S, np.ones(S), np.ones(S), c.xs
    )
    if K:
        m.c_link = LinearRows.from_coo(
            np.concatenate([np.arange(K), np.arange(K)]),
            np.concatenate([c.keep0 + np.arange(K), pc.k_pair]),
            np.concatenate([np.ones(K), -np.ones(K)]),
            K,
            np.full(K, -INF),
            np.zeros(K),
            c.xs,
        )


def add_capacity_rows(
    m: pyo.ConcreteModel, arr: AgentArrays, pc: PlanColumns, c: _Cols, sweep: bool
) -> None:
    """Kept tokens on each GPU never exceed its capacity minus the active batch.

    ``sweep``: ``c_sweep[v]: kv[v] - kv[v-1] - sum_{k starts at v} tokens_k keep[k] +
    sum_{k ends by v} tokens_k keep[k] = 0`` (``kv[v-1]`` only within one GPU), with the
    bound ``kv[v] <= ev_cap[v]``: two nonzeros per keep. Otherwise one clique row per event
    point, ``c_capacity[v]: sum_{k kept over ev_time[v]} tokens_k keep[k] <= ev_cap[v]``
    (the interval matrix of the offline caching problem), rows that cannot bind left out.
    """
    K = pc.num_keep
    if not K:
        return
    tok = arr.p_tokens[pc.k_pause].astype(float)
    event_capacity_rows(
        m,
        ev_gpu=pc.ev_gpu,
        ev_cap=pc.ev_cap,
        add=pc.k_add,
        sub=pc.k_sub,
        gpu_of=pc.k_gpu,
        tok=tok,
        cols=c.keep0 + np.arange(K),
        kv0=c.kv0,
        num_gpus=arr.num_gpus,
        xs=c.xs,
        sweep=sweep,
    )


def event_capacity_rows(
    m: pyo.ConcreteModel,
    *,
    ev_gpu: np.ndarray,
    ev_cap: np.ndarray,
    add: np.ndarray,
    sub: np.ndarray,
    gpu_of: np.ndarray,
    tok: np.ndarray,
    cols: np.ndarray,
    kv0: int,
    num_gpus: int,
    xs: list[Any],
    sweep: bool,
) -> None:
    """The memory rows of :func:`add_capacity_rows` for items (kept pauses, or held
    intervals of the migration model) that occupy ``tok[i]`` tokens on column ``cols[i]``
    from event point ``add[i]`` to before ``sub[i]`` (``-1``: to the end of GPU
    ``gpu_of[i]``'s events); event points are sorted by GPU (``ev_gpu``) with capacities
    ``ev_cap``; ``kv0`` is the first ``kv`` column (sweep form)."""
    V = len(ev_gpu)
    if sweep:
        first = np.ones(V, dtype=bool)
        first[1:] = ev_gpu[1:] != ev_gpu[:-1]
        prev = np.nonzero(~first)[0]
        ends = np.nonzero(sub >= 0)[0]
        m.c_sweep = LinearRows.from_coo(
            np.concatenate([np.arange(V), prev, add, sub[ends]]),
            np.concatenate([kv0 + np.arange(V), kv0 + prev - 1, cols, cols[ends]]),
            np.concatenate([np.ones(V), -np.ones(len(prev)), -tok, tok[ends]]),
            V,
            np.zeros(V),
            np.zeros(V),
            xs,
        )
        return
    # item i covers event points add[i] .. last[i] (those before its end)
    gpu_end = np.searchsorted(ev_gpu, np.arange(num_gpus), side="right")
    last = np.where(sub >= 0, sub, gpu_end[gpu_of]) - 1
    n = np.maximum(last - add + 1, 0)
    rows = np.repeat(add, n) + (np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n))
    i_of = np.repeat(np.arange(len(add)), n)
    demand = np.zeros(V)
    np.add.at(demand, rows, tok[i_of])
    binding = np.nonzero(demand > ev_cap)[0]
    renum = np.full(V, -1)
    renum[binding] = np.arange(len(binding))
    sel = renum[rows] >= 0
    R = len(binding)
    m.c_capacity = LinearRows.from_coo(
        renum[rows[sel]],
        cols[i_of[sel]],
        tok[i_of[sel]],
        R,
        np.full(R, -INF),
        ev_cap[binding].astype(float),
        xs,
    )


def add_min_max(
    m: pyo.ConcreteModel,
    c: _Cols,
    name: str,
    rows: np.ndarray,
    cols: np.ndarray,
    vals: np.ndarray,
    num_rows: int,
    constant: np.ndarray | None = None,
) -> None:
    """The min-max LP block: ``min level`` s.t. ``expr_r + constant_r <= level`` for
    every row ``r`` (``expr`` given as triplets over ``c.xs``).

    It is the max-min LP of Gavel-style fairness with the sign flipped (maximising the
    smallest of ``-expr_r``). Issue 12 asks for ONE core max-min LP builder (being merged
    from ``gpu_cluster`` by another branch); this block should call it once it lands.
    Adds ``m.<name>`` (the level, >= 0), ``m.c_<name>[r]: expr_r - level <= -constant_r``
    and ``m.obj``.
    """
    level = pyo.Var(bounds=(0.0, None))
    m.add_component(name, level)
    xs = [*c.xs, level]
    z = len(c.xs)
    const = np.zeros(num_rows) if constant is None else constant
    m.add_component(
        f"c_{name}",
        LinearRows.from_coo(
            np.concatenate([rows, np.arange(num_rows)]),
            np.concatenate([cols, np.full(num_rows, z)]),
            np.concatenate([vals, -np.ones(num_rows)]),
            num_rows,
            np.full(num_rows, -INF),
            -const,
            xs,
        ),
    )
    m.obj = pyo.Objective(expr=level, sense=pyo.minimize)


# ----------------------------------------------------------------------------- costs
def recompute_costs(arr: AgentArrays, pc: PlanColumns) -> tuple[np.ndarray, np.ndarray]:
    """Seconds of re-prefill: per affinity, if every pause of the session were evicted
    (``tokens / prefill_tokens_s`` of that GPU, summed); per keep, what keeping saves."""
    per_session_tokens = np.zeros(arr.num_sessions)
    np.add.at(per_session_tokens, arr.p_session, arr.p_tokens.astype(float))
    full = per_session_tokens[pc.a_session] / arr.prefill[pc.a_gpu]
    save = arr.p_tokens[pc.k_pause] / arr.prefill[pc.k_gpu]
    return full, save


def _linear(coefs: np.ndarray, xs: list[Any]) -> LinearExpression:
    nz = np.nonzero(coefs)[0]
    return LinearExpression(
        linear_coefs=[float(coefs[k]) for k in nz], linear_vars=[xs[k] for k in nz], constant=0
    )


def objective_recompute(m: pyo.ConcreteModel, arr: AgentArrays, pc: PlanColumns, c: _Cols) -> None:
    """``min sum_a full_a assign[a] - sum_k save_k keep[k]``: total re-prefill seconds."""
    full, save = recompute_costs(arr, pc)
    m.obj = pyo.Objective(expr=_linear(np.concatenate([full, -save]), c.xs), sense=pyo.minimize)


def objective_max_load(m: pyo.ConcreteModel, arr: AgentArrays, pc: PlanColumns, c: _Cols) -> None:
    """``min max_load`` with ``c_max_load[g]: sum_a (work_s + full_a) assign[a] -
    sum_k save_k keep[k] <= max_load`` (a GPU's work is its sessions' own work plus its
    recompute, in seconds)."""
    full, save = recompute_costs(arr, pc)
    A, K = pc.num_assign, pc.num_keep
    add_min_max(
        m,
        c,
        "max_load",
        np.concatenate([pc.a_gpu, pc.k_gpu]),
        np.concatenate([np.arange(A), c.keep0 + np.arange(K)]),
        np.concatenate([arr.work[pc.a_session] + full, -save]),
        arr.num_gpus,
    )


def objective_fair_share(m: pyo.ConcreteModel, arr: AgentArrays, pc: PlanColumns, c: _Cols) -> None:
    """``min slowdown`` with ``c_slowdown[s]: recompute_s / ideal_s <= slowdown`` for every
    session with a pause.

    A session's fair share is ``ideal_s / achieved_s`` with ``ideal_s = work_s + its pause
    seconds`` and ``achieved_s = ideal_s + recompute_s``; maximising the smallest share is
    minimising the largest relative slowdown ``recompute_s / ideal_s``, a linear min-max.
    The reported objective is ``1 / (1 + slowdown)``.
    """
    full, save = recompute_costs(arr, pc)
    ideal = arr.ideal()
    has = np.zeros(arr.num_sessions, dtype=bool)
    has[arr.p_session] = True
    row_of = np.full(arr.num_sessions, -1)
    row_of[has] = np.arange(int(has.sum()))
    s_keep = arr.p_session[pc.k_pause]
    a_sel = has[pc.a_session]
    k_sel = has[s_keep]
    add_min_max(
        m,
        c,
        "slowdown",
        np.concatenate([row_of[pc.a_session[a_sel]], row_of[s_keep[k_sel]]]),
        np.concatenate([np.nonzero(a_sel)[0], c.keep0 + np.nonzero(k_sel)[0]]),
        np.concatenate(
            [full[a_sel] / ideal[pc.a_session[a_sel]], -save[k_sel] / ideal[s_keep[k_sel]]]
        ),
        int(has.sum()),
    )


ObjectiveBuilder = Callable[[pyo.ConcreteModel, AgentArrays, PlanColumns, _Cols], None]
OBJECTIVES: dict[str, tuple[ObjectiveBuilder, str | None]] = {
    "min_recompute_s": (objective_recompute, None),
    "min_max_load": (objective_max_load, "max_load"),
    "agent_fair_share": (objective_fair_share, "slowdown"),
}
"""Objective name -> (builder, name of its min-max level variable)."""


def build(arr: AgentArrays, objective: str, params: AgentSessionsParams) -> Built:
    """The keep/evict MILP of ``arr`` for ``objective``."""
    sweep = params.capacity_rows == "sweep"
    pc = plan_columns(arr, params.symmetry_breaking)
    m = pyo.ConcreteModel(name=f"agent_sessions_{objective}")
    c = add_variables(m, pc, sweep)
    add_affinity_rows(m, arr, pc, c)
    add_capacity_rows(m, arr, pc, c, sweep)
    builder, level = OBJECTIVES[objective]
    builder(m, arr, pc, c)
    return Built(m, PlanLayout(objective, params.capacity_rows, pc, level))


def note_export(objective: str) -> None:
    """On export of ``agent_fair_share``, say that the file's optimum is the slowdown,
    not the share: the one exported objective whose optimum is not ``objective_value``
    itself (``models/agent_sessions.md``). The other objectives say nothing."""
    if objective != "agent_fair_share":
        return
    import logging

    logging.getLogger("hetopt.export").warning(
        "agent_fair_share: the exported model minimises the largest relative slowdown; "
        "hetopt reports objective_value = 1 / (1 + slowdown) of its optimum"
    )
