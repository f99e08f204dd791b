"""Pyomo formulations of the ``multicore`` kind (see ``models/multicore.md``).

Three pure builders share one skeleton (assignment variables, makespan, energy):

* :func:`build_assignment`: independent tasks (R||Cmax with eligibility).
* :func:`build_disjunctive`: a DAG of tasks; start times and one order binary per pair of
  tasks that may share a core; big-M = the per-instance horizon.
* :func:`build_time_indexed`: a DAG with integer durations and a short horizon; one binary
  per (task, core, start time).

Times are divided by ``t_ref`` (a list-scheduling makespan) and energies by
``e_ref = p_ref * t_ref`` so the model's numbers are O(1); the ``weighted_completion``
models keep times in seconds (``t_ref = 1``, ``e_ref = p_ref``), so that the objective
of an exported model is the reported one. Row blocks are
:class:`~hetopt.pyomo_ext.LinearRows`. Each builder returns
:class:`~hetopt.contract.Built` with a :class:`Layout` (what the extractor and the warm
start need: the plan, the pairs, the order pairs or the slots).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyomo.environ as pyo

from ...contract import Built
from ...pyomo_ext import LinearRows
from .._shared.assignment import add_unrelated_assignment
from .data import MulticoreArrays
from .heuristics import Schedule

INF = float("inf")
FORMULATIONS = ("auto", "assignment", "disjunctive", "time_indexed")
TIME_INDEXED_MAX_SLOTS = 4000
TIME_INDEXED_MAX_HORIZON = 100
"""``formulation="auto"`` picks the time-indexed model for a DAG with whole-number
durations when the horizon is at most this many seconds and the model has at most
``TIME_INDEXED_MAX_SLOTS`` (task, core, start) binaries (measured on Kacem/Fattahi)."""


@dataclass(frozen=True)
class Plan:
    """What to build: formulation, scales, horizon (seconds) and switches."""

    formulation: str
    objective: str
    t_ref: float
    e_ref: float
    horizon: float
    symmetry: bool = True
    integer_makespan: bool = False
    """Durations are whole numbers and the objective is the makespan: the optimum is a
    whole number, so a bound can be rounded up."""
    integer_objective: bool = False
    """Weighted completion with whole-number times and weights: the objective of every
    semi-active schedule is a whole number (``completion`` is integer, bounds round up)."""
    choice: str = ""
    """Why ``formulation="auto"`` chose :attr:`formulation` (empty when it was given)."""

    @property
    def scale(self) -> float:
        """Unit of the minimised variable: ``t_ref`` (makespan, weighted completion) or
        ``e_ref`` (energy)."""
        return self.e_ref if self.objective == "energy" else self.t_ref

    @property
    def weighted(self) -> bool:
        """The model minimises ``sum_j weight_j completion_j`` (adds ``completion``)."""
        return self.objective == "weighted_completion"

    @property
    def whole_objective(self) -> bool:
        """The optimum is a whole number (of seconds, or weighted seconds)."""
        return self.integer_makespan or self.integer_objective


@dataclass
class _Columns:
    """Column offsets of the variable blocks in the list passed to every row block."""

    xs: list[Any] = field(default_factory=list)
    offsets: dict[str, int] = field(default_factory=dict)

    def add(self, name: str, var: pyo.Var) -> None:
        self.offsets[name] = len(self.xs)
        self.xs.extend(var.values())

    def __getitem__(self, name: str) -> int:
        return self.offsets[name]


class _Rows:
    """Accumulates COO triplets of one row block."""

    def __init__(self) -> None:
        self.r: list[np.ndarray] = []
        self.c: list[np.ndarray] = []
        self.v: list[np.ndarray] = []

    def add(self, rows: Any, cols: Any, vals: Any) -> None:
        rows = np.atleast_1d(np.asarray(rows, dtype=np.int64))
        cols = np.atleast_1d(np.asarray(cols, dtype=np.int64))
        vals = np.broadcast_to(np.asarray(vals, dtype=float), np.broadcast(rows, cols).shape)
        rows, cols = np.broadcast_arrays(rows, cols)
        self.r.append(rows.ravel())
        self.c.append(cols.ravel())
        self.v.append(np.asarray(vals, dtype=float).ravel())

    def build(self, n_rows: int, lower: Any, upper: Any, lay: _Columns) -> LinearRows:
        lo = np.broadcast_to(np.asarray(lower, dtype=float), (n_rows,)).copy()
        hi = np.broadcast_to(np.asarray(upper, dtype=float), (n_rows,)).copy()
        cat = np.concatenate if self.r else (lambda _: np.zeros(0))
        return LinearRows.from_coo(
            cat(self.r).astype(np.int64),
            cat(self.c).astype(np.int64),
            cat(self.v),
            n_rows,
            lo,
            hi,
            lay.xs,
        )


@dataclass(frozen=True)
class Pairs:
    """The eligible (task, core) pairs, task-major, and their scaled durations."""

    task: np.ndarray
    core: np.ndarray
    p: np.ndarray  # duration / t_ref

    @classmethod
    def of(cls, arr: MulticoreArrays, t_ref: float) -> Pairs:
        task, core = np.nonzero(arr.eligible)
        return cls(task.astype(np.int64), core.astype(np.int64), arr.dur[task, core] / t_ref)

    def __len__(self) -> int:
        return len(self.task)

    def index(self, n: int, m: int) -> np.ndarray:
        """``(n, m)`` array of pair indices (-1 where not eligible)."""
        out = np.full((n, m), -1, dtype=np.int64)
        out[self.task, self.core] = np.arange(len(self))
        return out


@dataclass(frozen=True)
class Slots:
    """The (pair, start time) binaries of the time-indexed model."""

    pair: np.ndarray
    time: np.ndarray  # whole seconds


@dataclass(frozen=True)
class Layout:
    """What a formulation tells its extractor and its warm start (:attr:`Built.layout`).

    ``order_pairs`` are the task pairs of ``m.order`` and ``windows`` the (pair, window)
    binaries of ``m.in_window`` (disjunctive model), ``slots`` the (pair, start)
    binaries of ``m.start_at`` and ``capacity_keys`` the ``core * H + t`` key of each
    ``c_capacity`` row (time-indexed model).
    """

    plan: Plan
    pairs: Pairs
    symmetry_rows: int
    order_pairs: tuple[tuple[int, int], ...] = ()
    slots: Slots | None = None
    capacity_keys: np.ndarray | None = None
    windows: WindowChoices | None = None


@dataclass(frozen=True)
class WindowChoices:
    """The (pair, window) binaries ``in_window`` of the disjunctive model (pairs on cores
    with availability windows, windows long enough for the pair), window bounds in s."""

    pair: np.ndarray
    start: np.ndarray
    end: np.ndarray


@dataclass(frozen=True)
class ExecutorUses:
    """The (job, core) binaries ``uses`` of the jobs with an executor limit: every core
    some task of the job can run on."""

    job: np.ndarray
    core: np.ndarray

    @classmethod
    def of(cls, arr: MulticoreArrays) -> ExecutorUses:
        can = np.zeros((arr.num_jobs, arr.num_cores), dtype=bool)
        np.logical_or.at(can, arr.job, arr.eligible)
        limited = np.zeros(arr.num_jobs, dtype=bool)
        limited[arr.limited_jobs] = True
        job, core = np.nonzero(can & limited[:, None])
        return cls(job.astype(np.int64), core.astype(np.int64))


def horizon_slots(arr: MulticoreArrays, horizon: float) -> int:
    """Number of (task, core, start) binaries of the time-indexed model for ``horizon``."""
    H = math.floor(horizon + 1e-9)
    task, core = np.nonzero(arr.eligible)
    width = H - arr.dur[task, core] - arr.heads[task] - arr.tails[task] + 1
    return int(np.clip(np.floor(width + 1e-9), 0, None).sum())


# ---------------------------------------------------------------------------- skeleton
def _skeleton(arr: MulticoreArrays, plan: Plan, binary_assign: bool) -> tuple[Any, Pairs]:
    """Sets, ``assign``, ``makespan``, ``energy`` (the variables every model shares) and the
    shared assignment rows ``c_assign``, ``c_busy``."""
    m = pyo.ConcreteModel(name=f"multicore_{plan.formulation}")
    pairs = Pairs.of(arr, plan.t_ref)
    n = arr.num_tasks
    m.TASKS = pyo.Set(initialize=arr.task_ids, ordered=True)
    m.CORES = pyo.Set(initialize=arr.core_ids, ordered=True)
    lb = arr.makespan_lower_bound() / plan.t_ref
    ub = plan.horizon / plan.t_ref
    # PAIRS, assign, makespan, c_assign, c_busy; lb > ub (a deadline below the lower
    # bound) is left to HiGHS to report infeasible
    add_unrelated_assignment(
        m,
        pairs.task,
        pairs.core,
        pairs.p,
        n,
        arr.num_cores,
        fractional=not binary_assign,
        makespan_bounds=(lb, ub),
        pair_set="PAIRS",
        share="assign",
        load_rows="c_busy",
    )
    # a pair longer than the horizon cannot be used (makespan <= horizon); with
    # releases: a pair that cannot end by the horizon
    late = arr.release[pairs.task] / plan.t_ref + pairs.p
    for k in np.nonzero(late > plan.horizon / plan.t_ref * (1 + 1e-9))[0]:
        m.assign[int(k)].setub(0)
    e_ub = None if arr.budget is None else arr.budget / plan.e_ref
    m.energy = pyo.Var(bounds=(0.0, e_ub))
    if arr.has_executor_limits:
        uses = ExecutorUses.of(arr)
        m.EXECUTOR_USES = pyo.RangeSet(0, len(uses.job) - 1)
        m.uses = pyo.Var(m.EXECUTOR_USES, within=pyo.Binary)
    if plan.integer_makespan:
        # whole-number durations: the optimal makespan is a whole number of seconds;
        # an integer copy lets HiGHS round node bounds up (objective integrality)
        lo = math.ceil(arr.makespan_lower_bound() - 1e-9)
        hi = max(lo, math.floor(plan.horizon + 1e-9))
        m.makespan_whole = pyo.Var(within=pyo.Integers, bounds=(lo, hi))
        m.c_whole = pyo.Constraint(expr=m.makespan - m.makespan_whole / plan.t_ref == 0)
    return m, pairs


def _base_columns(m: Any, arr: MulticoreArrays) -> _Columns:
    """The first columns of every row block: ``assign``, ``makespan``, ``energy`` (and
    ``uses`` with executor limits)."""
    lay = _Columns()
    lay.add("assign", m.assign)
    lay.add("makespan", m.makespan)
    lay.add("energy", m.energy)
    if arr.has_executor_limits:
        lay.add("uses", m.uses)
    return lay


def _common_rows(m: Any, arr: MulticoreArrays, plan: Plan, pairs: Pairs, lay: _Columns) -> int:
    """``c_symmetry``, ``c_energy`` (``c_assign``, ``c_busy`` come from :func:`_skeleton`);
    returns the number of ``c_symmetry`` rows."""
    K = len(pairs)
    a, mk, en = lay["assign"], lay["makespan"], lay["energy"]
    cols = a + np.arange(K)
    # c_symmetry: busy(c_a) >= busy(c_b) for consecutive interchangeable cores a, b
    classes = arr.identical_core_classes() if plan.symmetry else []
    r = _Rows()
    row = 0
    for group in classes:
        for ca, cb in itertools.pairwise(group):
            on_a, on_b = pairs.core == ca, pairs.core == cb
            r.add(row, cols[on_a], pairs.p[on_a])
            r.add(row, cols[on_b], -pairs.p[on_b])
            row += 1
    m.c_symmetry = r.build(row, 0.0, INF, lay)
    symmetry_rows = row
    # c_energy: energy - sum (active-idle)/p_ref * p * assign - idle_total/p_ref * makespan = 0
    p_ref = plan.e_ref / plan.t_ref
    coef = (arr.active - arr.idle)[pairs.core] / p_ref * pairs.p
    r = _Rows()
    r.add(0, en, 1.0)
    r.add(0, cols, -coef)
    r.add(0, mk, -float(arr.idle.sum()) / p_ref)
    m.c_energy = r.build(1, 0.0, 0.0, lay)
    if arr.has_executor_limits:
        _executor_rows(m, arr, pairs, lay)
    return symmetry_rows


def _executor_rows(m: Any, arr: MulticoreArrays, pairs: Pairs, lay: _Columns) -> None:
    """``c_uses[k]``: ``uses[j(i), c] - assign[i,c] >= 0`` for the pairs of limited jobs;
    ``c_executors[j]``: ``sum_c uses[j,c] <= executors_j``."""
    eu = ExecutorUses.of(arr)
    col = np.full((arr.num_jobs, arr.num_cores), -1, dtype=np.int64)
    col[eu.job, eu.core] = np.arange(len(eu.job))
    q = col[arr.job[pairs.task], pairs.core]
    ks = np.nonzero(q >= 0)[0]
    a, u = lay["assign"], lay["uses"]
    r = _Rows()
    r.add(np.arange(len(ks)), u + q[ks], 1.0)
    r.add(np.arange(len(ks)), a + ks, -1.0)
    m.c_uses = r.build(len(ks), 0.0, INF, lay)
    jobs = arr.limited_jobs
    row = np.full(arr.num_jobs, -1, dtype=np.int64)
    row[jobs] = np.arange(len(jobs))
    r = _Rows()
    r.add(row[eu.job], u + np.arange(len(eu.job)), 1.0)
    m.c_executors = r.build(len(jobs), -INF, arr.executors[jobs].astype(float), lay)


def _objective(m: Any, objective: str) -> None:
    target = m.energy if objective == "energy" else m.makespan
    m.obj = pyo.Objective(expr=target, sense=pyo.minimize)


def _add_completion(m: Any, arr: MulticoreArrays, plan: Plan) -> None:
    """``JOBS`` and ``completion[j]`` in ``[max_i (head_i + min p_i), H]`` over the tasks
    of job ``j`` (integer when :attr:`Plan.integer_objective`)."""
    t = plan.t_ref
    lo = np.zeros(arr.num_jobs)
    np.maximum.at(lo, arr.job, (arr.heads + arr.min_dur) / t)
    hi = plan.horizon / t
    if plan.integer_objective:
        lo = np.ceil(lo - 1e-9)
        hi = float(math.floor(hi + 1e-9))
    m.JOBS = pyo.Set(initialize=arr.job_ids, ordered=True)
    m.completion = pyo.Var(
        range(arr.num_jobs),
        within=pyo.Integers if plan.integer_objective else pyo.Reals,
        bounds=lambda _, j: (float(lo[j]), max(hi, float(lo[j]))),
    )


def _weighted_objective(m: Any, arr: MulticoreArrays) -> None:
    """``obj``: minimise ``sum_j weight_j completion_j``."""
    m.obj = pyo.Objective(
        expr=pyo.quicksum(
            float(arr.weight[j]) * m.completion[j]
            for j in range(arr.num_jobs)
            if arr.weight[j] != 0
        ),
        sense=pyo.minimize,
    )


def _completion_rows(
    m: Any, arr: MulticoreArrays, lay: _Columns, ends: Callable[[_Rows, int, int], None]
) -> None:
    """``c_completion[r]`` for each job sink ``i`` (no task of its job succeeds it):
    ``completion[job(i)] - end(i) >= 0``; ``ends(rows, r, i)`` adds ``-end(i)``."""
    sinks = arr.job_sinks
    r = _Rows()
    cj = lay["completion"]
    r.add(np.arange(len(sinks)), cj + arr.job[sinks], 1.0)
    for row, i in enumerate(sinks):
        ends(r, row, int(i))
    m.c_completion = r.build(len(sinks), 0.0, INF, lay)


# ---------------------------------------------------------------------------- builders
def build_assignment(arr: MulticoreArrays, plan: Plan) -> Built:
    """Independent tasks: ``makespan >= busy[c]`` for every core (R||Cmax)."""
    m, pairs = _skeleton(arr, plan, binary_assign=True)
    lay = _base_columns(m, arr)
    sym = _common_rows(m, arr, plan, pairs, lay)
    _objective(m, plan.objective)
    return Built(m, Layout(plan, pairs, sym))


def order_pairs(arr: MulticoreArrays) -> list[tuple[int, int]]:
    """Task pairs ``i < j`` that may share a core and that no precedence path orders."""
    closure = arr.successors_closure
    share = arr.eligible.astype(np.int64) @ arr.eligible.T.astype(np.int64) > 0
    out = []
    for i, j in zip(*np.nonzero(np.triu(share, 1)), strict=True):
        i, j = int(i), int(j)
        if j not in closure[i] and i not in closure[j]:
            out.append((i, j))
    return out


def build_disjunctive(arr: MulticoreArrays, plan: Plan) -> Built:
    """A DAG of tasks: start times, precedences and big-M disjunctions per shared core."""
    m, pairs = _skeleton(arr, plan, binary_assign=True)
    n, t = arr.num_tasks, plan.t_ref
    Hs = plan.horizon / t
    heads, tails = arr.heads / t, arr.tails / t
    s_ub = np.maximum(Hs - arr.min_dur / t - tails, 0.0)
    m.start = pyo.Var(
        range(n), bounds=lambda _, i: (float(heads[i]), float(max(s_ub[i], heads[i])))
    )
    op = order_pairs(arr)
    m.ORDER_PAIRS = pyo.RangeSet(0, len(op) - 1)
    m.order = pyo.Var(m.ORDER_PAIRS, within=pyo.Binary)
    win = _window_choices(arr, pairs) if arr.has_windows else None
    if win is not None:
        m.WINDOW_CHOICES = pyo.RangeSet(0, len(win.pair) - 1)
        m.in_window = pyo.Var(m.WINDOW_CHOICES, within=pyo.Binary)
    if plan.weighted:
        _add_completion(m, arr, plan)
    lay = _base_columns(m, arr)
    lay.add("start", m.start)
    lay.add("order", m.order)
    if win is not None:
        lay.add("in_window", m.in_window)
    if plan.weighted:
        lay.add("completion", m.completion)
    sym = _common_rows(m, arr, plan, pairs, lay)
    a, s, mk, y = lay["assign"], lay["start"], lay["makespan"], lay["order"]
    K = len(pairs)
    cols = a + np.arange(K)
    # c_precedence[e]: start[j] - start[i] - sum_c p[i,c] assign[i,c] >= 0
    E = len(arr.edges)
    r = _Rows()
    if E:
        pi, pj = arr.edges[:, 0], arr.edges[:, 1]
        r.add(np.arange(E), s + pj, 1.0)
        r.add(np.arange(E), s + pi, -1.0)
        pos = _pairs_of_tasks(pairs, n)
        for e, i in enumerate(pi):
            ks = pos[int(i)]
            r.add(e, cols[ks], -pairs.p[ks])
    m.c_precedence = r.build(E, 0.0, INF, lay)
    # c_finish[i]: makespan - start[i] - sum_c p[i,c] assign[i,c] >= tail[i]
    r = _Rows()
    r.add(np.arange(n), mk, 1.0)
    r.add(np.arange(n), s + np.arange(n), -1.0)
    r.add(pairs.task, cols, -pairs.p)
    m.c_finish = r.build(n, tails, INF, lay)
    # c_before[q,c]: start[j] >= start[i] + p[i,c] - M (3 - assign[i,c] - assign[j,c] - order[q])
    # c_after[q,c]:  start[i] >= start[j] + p[j,c] - M' (2 - assign[i,c] - assign[j,c] + order[q])
    # M = ub(start[i]) + p[i,c] - lb(start[j]) (<= horizon + p[i,c]): the least valid big-M.
    idx = pairs.index(n, arr.num_cores)
    s_hi = np.maximum(s_ub, heads)
    rb, ra = _Rows(), _Rows()
    lo_b: list[float] = []
    lo_a: list[float] = []
    row = 0
    for q, (i, j) in enumerate(op):
        for c in np.nonzero(arr.eligible[i] & arr.eligible[j])[0]:
            ki, kj = idx[i, c], idx[j, c]
            mb = max(float(s_hi[i] + pairs.p[ki] - heads[j]), 0.0)
            ma = max(float(s_hi[j] + pairs.p[kj] - heads[i]), 0.0)
            rb.add(row, [s + j, s + i, a + ki, a + kj, y + q], [1.0, -1.0, -mb, -mb, -mb])
            ra.add(row, [s + i, s + j, a + ki, a + kj, y + q], [1.0, -1.0, -ma, -ma, ma])
            lo_b.append(pairs.p[ki] - 3 * mb)
            lo_a.append(pairs.p[kj] - 2 * ma)
            row += 1
    m.c_before = rb.build(row, np.asarray(lo_b), INF, lay)
    m.c_after = ra.build(row, np.asarray(lo_a), INF, lay)
    if win is not None:
        _window_rows(m, arr, plan, pairs, win, heads, s_hi, lay)
    if plan.weighted:
        pos = _pairs_of_tasks(pairs, n)

        def ends(r: _Rows, row: int, i: int) -> None:
            r.add(row, s + i, -1.0)
            r.add(row, cols[pos[i]], -pairs.p[pos[i]])

        _completion_rows(m, arr, lay, ends)
        _weighted_objective(m, arr)
    else:
        _objective(m, plan.objective)
    return Built(m, Layout(plan, pairs, sym, order_pairs=tuple(op), windows=win))


def _window_choices(arr: MulticoreArrays, pairs: Pairs) -> WindowChoices:
    """The (pair, window) choices: every window of a windowed core long enough for the
    pair's duration."""
    pk: list[np.ndarray] = []
    lo: list[np.ndarray] = []
    hi: list[np.ndarray] = []
    for k in range(len(pairs)):
        w = arr.windows[int(pairs.core[k])]
        if w is None:
            continue
        d = arr.dur[pairs.task[k], pairs.core[k]]
        ok = w[:, 1] - w[:, 0] >= d - 1e-9
        pk.append(np.full(int(ok.sum()), k, dtype=np.int64))
        lo.append(w[ok, 0])
        hi.append(w[ok, 1])
    cat = np.concatenate
    if not pk:
        return WindowChoices(np.zeros(0, np.int64), np.zeros(0), np.zeros(0))
    return WindowChoices(cat(pk), cat(lo), cat(hi))


def _window_rows(
    m: Any,
    arr: MulticoreArrays,
    plan: Plan,
    pairs: Pairs,
    win: WindowChoices,
    lb: np.ndarray,
    ub: np.ndarray,
    lay: _Columns,
) -> None:
    """``c_window_pick``, ``c_window_open``, ``c_window_close`` (disjunctive model):
    a pair on a windowed core picks one window that holds the task."""
    t = plan.t_ref
    a, s, u = lay["assign"], lay["start"], lay["in_window"]
    windowed = np.nonzero([arr.windows[int(c)] is not None for c in pairs.core])[0]
    row_of = np.full(len(pairs), -1, dtype=np.int64)
    row_of[windowed] = np.arange(len(windowed))
    W = len(win.pair)
    uc = u + np.arange(W)
    # c_window_pick[k]: sum_w in_window[k,w] - assign[k] = 0
    r = _Rows()
    r.add(np.arange(len(windowed)), a + windowed, -1.0)
    r.add(row_of[win.pair], uc, 1.0)
    m.c_window_pick = r.build(len(windowed), 0.0, 0.0, lay)
    i = pairs.task[win.pair]
    # c_window_open[w]: start[i] - (a_w - lb_i) in_window[w] >= lb_i
    r = _Rows()
    r.add(np.arange(W), s + i, 1.0)
    r.add(np.arange(W), uc, -np.maximum(win.start / t - lb[i], 0.0))
    m.c_window_open = r.build(W, lb[i], INF, lay)
    # c_window_close[w]: start[i] + M in_window[w] <= b_w - p + M, M = ub_i - (b_w - p)
    latest = win.end / t - pairs.p[win.pair]
    big = np.maximum(ub[i] - latest, 0.0)
    r = _Rows()
    r.add(np.arange(W), s + i, 1.0)
    r.add(np.arange(W), uc, big)
    m.c_window_close = r.build(W, -INF, latest + big, lay)


def _pairs_of_tasks(pairs: Pairs, n: int) -> list[np.ndarray]:
    order = np.argsort(pairs.task, kind="stable")
    bounds = np.searchsorted(pairs.task[order], np.arange(n + 1))
    return [order[bounds[i] : bounds[i + 1]] for i in range(n)]


def build_time_indexed(arr: MulticoreArrays, plan: Plan) -> Built:
    """A DAG with integer durations: ``start_at[k, t] = 1`` if pair ``k`` starts at ``t``."""
    m, pairs = _skeleton(arr, plan, binary_assign=False)
    n, M, t_ref = arr.num_tasks, arr.num_cores, plan.t_ref
    H = math.floor(plan.horizon + 1e-9)
    dur = np.rint(arr.dur[pairs.task, pairs.core]).astype(np.int64)
    first = np.ceil(arr.heads[pairs.task] - 1e-9).astype(np.int64)
    last = np.floor(H - dur - arr.tails[pairs.task] + 1e-9).astype(np.int64)
    width = np.clip(last - first + 1, 0, None)
    slot_pair = np.repeat(np.arange(len(pairs)), width)
    offs = np.arange(int(width.sum())) - np.repeat(np.cumsum(width) - width, width)
    slot_time = np.repeat(first, width) + offs
    if arr.has_windows:  # only starts whose whole run fits in a window of the core
        keep = _in_windows(arr, pairs.core[slot_pair], slot_time, dur[slot_pair])
        slot_pair, slot_time = slot_pair[keep], slot_time[keep]
    slots = Slots(slot_pair, slot_time)
    S = len(slot_pair)
    m.SLOTS = pyo.RangeSet(0, S - 1)
    m.start_at = pyo.Var(m.SLOTS, within=pyo.Binary)
    if plan.weighted:
        _add_completion(m, arr, plan)
    lay = _base_columns(m, arr)
    lay.add("start_at", m.start_at)
    if plan.weighted:
        lay.add("completion", m.completion)
    sym = _common_rows(m, arr, plan, pairs, lay)
    a, z, mk = lay["assign"], lay["start_at"], lay["makespan"]
    zc = z + np.arange(S)
    # c_link[k]: assign[k] - sum_t start_at[k,t] = 0
    r = _Rows()
    r.add(np.arange(len(pairs)), a + np.arange(len(pairs)), 1.0)
    r.add(slot_pair, zc, -1.0)
    m.c_link = r.build(len(pairs), 0.0, 0.0, lay)
    # c_capacity[c,t]: sum of start_at[k,s] of pairs on core c with s <= t < s + p_k  <= 1
    d = dur[slot_pair]
    occ_slot = np.repeat(np.arange(S), d)
    occ_time = slot_time[occ_slot] + (np.arange(int(d.sum())) - np.repeat(np.cumsum(d) - d, d))
    key = pairs.core[slot_pair[occ_slot]] * max(H, 1) + occ_time
    used, row_of = np.unique(key, return_inverse=True)
    r = _Rows()
    r.add(row_of, zc[occ_slot], 1.0)
    m.c_capacity = r.build(len(used), -INF, 1.0, lay)
    # c_precedence[e]: sum t start_at[j,.] - sum (t + p) start_at[i,.] >= 0   (over t_ref)
    task_of_slot = pairs.task[slot_pair]
    end_s = (slot_time + d) / t_ref
    E = len(arr.edges)
    r = _Rows()
    if E:
        by_task = _pairs_of_tasks(Pairs(task_of_slot, task_of_slot, end_s), n)
        for e, (i, j) in enumerate(arr.edges):
            si, sj = by_task[int(i)], by_task[int(j)]
            r.add(e, zc[sj], slot_time[sj] / t_ref)
            r.add(e, zc[si], -end_s[si])
    m.c_precedence = r.build(E, 0.0, INF, lay)
    # c_finish[i]: makespan - sum (t + p) / t_ref start_at[i,.] >= tail[i] / t_ref
    r = _Rows()
    r.add(np.arange(n), mk, 1.0)
    r.add(task_of_slot, zc, -end_s)
    m.c_finish = r.build(n, arr.tails / t_ref, INF, lay)
    del M
    if plan.weighted:
        slots_of = _pairs_of_tasks(Pairs(task_of_slot, task_of_slot, end_s), n)

        def ends(r: _Rows, row: int, i: int) -> None:
            r.add(row, zc[slots_of[i]], -end_s[slots_of[i]])

        _completion_rows(m, arr, lay, ends)
        _weighted_objective(m, arr)
    else:
        _objective(m, plan.objective)
    return Built(m, Layout(plan, pairs, sym, slots=slots, capacity_keys=used))


def _in_windows(
    arr: MulticoreArrays, core: np.ndarray, start: np.ndarray, dur: np.ndarray
) -> np.ndarray:
    """Which runs ``[start, start + dur]`` on ``core`` lie inside one of its windows."""
    ok = np.ones(len(core), dtype=bool)
    for c, w in enumerate(arr.windows):
        if w is None:
            continue
        on = np.nonzero(core == c)[0]
        inside = (w[None, :, 0] <= start[on, None] + 1e-9) & (
            start[on, None] + dur[on, None] <= w[None, :, 1] + 1e-9
        )
        ok[on] = inside.any(axis=1)
    return ok


BUILDERS: dict[str, Callable[[MulticoreArrays, Plan], Built]] = {
    "assignment": build_assignment,
    "disjunctive": build_disjunctive,
    "time_indexed": build_time_indexed,
}
"""Formulation name -> builder (``"auto"`` is resolved by the plan first)."""


def build(arr: MulticoreArrays, plan: Plan) -> Built:
    """The model ``plan.formulation`` names (already resolved, not ``"auto"``)."""
    return BUILDERS[plan.formulation](arr, plan)


# ---------------------------------------------------------------------------- warm start
def start_vector(
    m: Any, layout: Layout, compiled: Any, arr: MulticoreArrays, sched: Schedule
) -> np.ndarray:
    """Column values of a schedule (a MIP start for HiGHS)."""
    plan, pairs = layout.plan, layout.pairs
    x = np.clip(np.zeros(compiled.num_col), compiled.col_lower, compiled.col_upper)
    n = arr.num_tasks
    chosen = pairs.index(n, arr.num_cores)[np.arange(n), sched.core]
    a = np.zeros(len(pairs))
    a[chosen] = 1.0
    _put(x, compiled.columns_of(m.assign, range(len(pairs))), a)
    mk = sched.makespan / plan.t_ref
    _put(x, compiled.columns_of(m.makespan, [None]), np.array([mk]))
    if plan.integer_makespan:
        whole = np.array([float(np.rint(sched.makespan))])
        _put(x, compiled.columns_of(m.makespan_whole, [None]), whole)
    energy = arr.energy(sched.core, sched.makespan) / plan.e_ref
    _put(x, compiled.columns_of(m.energy, [None]), np.array([energy]))
    if plan.formulation == "disjunctive":
        _put(x, compiled.columns_of(m.start, range(n)), sched.start / plan.t_ref)
        op = layout.order_pairs
        y = np.array([1.0 if sched.start[i] <= sched.start[j] else 0.0 for i, j in op])
        _put(x, compiled.columns_of(m.order, range(len(op))), y)
    if arr.has_executor_limits:
        eu = ExecutorUses.of(arr)
        used = np.zeros((arr.num_jobs, arr.num_cores), dtype=bool)
        used[arr.job, sched.core] = True
        _put(x, compiled.columns_of(m.uses, range(len(eu.job))), used[eu.job, eu.core] * 1.0)
    if plan.weighted:
        done = arr.completion(sched.end) / plan.t_ref
        _put(x, compiled.columns_of(m.completion, range(arr.num_jobs)), done)
    if layout.windows is not None:
        win = layout.windows
        k = win.pair
        on = chosen[pairs.task[k]] == k
        s = sched.start[pairs.task[k]]
        inside = (
            on
            & (win.start <= s + 1e-9)
            & (s + arr.dur[pairs.task[k], pairs.core[k]] <= win.end + 1e-9)
        )
        # one window per chosen pair (the first that holds it)
        first = np.zeros(len(k), dtype=bool)
        seen: set[int] = set()
        for q in np.nonzero(inside)[0]:
            if int(k[q]) not in seen:
                seen.add(int(k[q]))
                first[q] = True
        _put(x, compiled.columns_of(m.in_window, range(len(k))), first.astype(float))
    if layout.slots is not None:
        slots = layout.slots
        want = chosen[pairs.task[slots.pair]] == slots.pair
        hit = want & (slots.time == np.rint(sched.start[pairs.task[slots.pair]]))
        _put(x, compiled.columns_of(m.start_at, range(len(slots.pair))), hit.astype(float))
    return x


def _put(x: np.ndarray, cols: np.ndarray, vals: np.ndarray) -> None:
    ok = cols >= 0
    x[cols[ok]] = vals[ok]
