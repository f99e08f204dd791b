"""Pyomo formulations of the ``gpu_cluster`` policies (see ``models/gpu_cluster.md``).

Every builder is a pure function of :class:`ClusterArrays`: it returns the Pyomo model
with its typed layout (:class:`~hetopt.contract.Built`) and never solves. The max-min
and makespan LPs are built by the kind's one max-min LP builder (:mod:`.maxmin`).
Variables exist only for (job, type) pairs with positive throughput, so the model grows
with the pairs a job can use, not with jobs x types. Row blocks are
:class:`~hetopt.pyomo_ext.LinearRows` (vectorised Pyomo constraints): building 20,000
jobs takes a few numpy operations plus the Pyomo variables.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ...contract import Built
from . import maxmin as M
from .data import ClusterArrays
from .maxmin import INF, MaxMinLayout, Pairs, TimeColumns

if TYPE_CHECKING:  # Pyomo is imported by the functions that build Pyomo models
    import pyomo.environ as pyo

__all__ = [
    "INF",
    "Base",
    "MaxMinLayout",
    "Pairs",
    "agnostic_throughputs",
    "build_grouped",
    "build_makespan",
    "build_max_min_fairness",
    "contention",
    "grouped_lp",
    "makespan_reference",
    "max_min_coefficients",
]


def agnostic_throughputs(arr: ClusterArrays) -> np.ndarray:
    """The heterogeneity-agnostic view: every usable GPU type is equal.

    Each job runs at one throughput on every type it can use (its mean over those
    types). For max-min fairness this is the same as treating every throughput as 1
    (the ratio ``thr / p`` does not depend on the job's constant); for makespan it keeps
    steps and seconds consistent instead of hard-coding one type (Gavel uses V100's).
    """
    usable = arr.thr > 0
    mean = arr.thr.sum(axis=1) / usable.sum(axis=1)
    return usable * mean[:, None]


@dataclass(frozen=True)
class Base:
    """The columns every allocation LP shares: ``alloc`` over :class:`Pairs`, with the
    ``VarData`` in column order."""

    pairs: Pairs
    alloc: tuple[Any, ...]


def _alloc_columns(
    arr: ClusterArrays,
    pairs: Pairs,
    thr: np.ndarray | None = None,
    mult: np.ndarray | None = None,
) -> TimeColumns:
    """The ``alloc`` block: pair ``k`` counts ``scale_i`` (times ``mult[i]``) GPUs and
    runs at ``thr[i,t]``; pairs whose type has fewer GPUs than the job's
    ``scale_factor`` get upper bound 0."""
    usage = arr.scale[pairs.job] * (1.0 if mult is None else mult[pairs.job])
    rate = np.zeros(len(pairs)) if thr is None else thr[pairs.job, pairs.type]
    return TimeColumns(
        "alloc", "PAIRS", pairs.job, pairs.type, rate, usage, arr.allowed[pairs.job, pairs.type]
    )


def _base(arr: ClusterArrays, pairs: Pairs) -> tuple[pyo.ConcreteModel, Base]:
    """Sets, the allocation variables, ``z`` and the two resource constraints (over the
    ``alloc`` columns only: the LPs built on this fix ``z``).

    Pairs whose type has fewer GPUs than the job's ``scale_factor`` get a column with
    upper bound 0, so a capacity change in a persistent model can open them.
    """
    import pyomo.environ as pyo

    m = pyo.ConcreteModel(name="gpu_cluster")
    block = _alloc_columns(arr, pairs)
    alloc = M.add_columns(m, "JOBS", arr.num_jobs, arr.types, (block,))
    M.add_resource_rows(m, (block,), arr.num_jobs, arr.workers.astype(float), alloc)
    return m, Base(pairs, tuple(alloc))


def contention(arr: ClusterArrays, mult: np.ndarray | None = None) -> float:
    """Scale factor that keeps the max-min objective O(1): GPUs wanted / GPUs present."""
    wanted = arr.scale.sum() if mult is None else (arr.scale * mult).sum()
    return M.contention(wanted, arr.workers.sum())


MAX_KAPPA_SPAN = 1e6
"""Largest ``kappa * upper`` (the scaled best value of the worst-off job) kept as is."""


def bounded_kappa(kappa: float, upper: float) -> float:
    """``kappa``, unless the scaled values would be huge (``kappa * upper`` above
    :data:`MAX_KAPPA_SPAN`, e.g. every weight 1e-15): then ``1 / upper``, so the worst-off
    job's best value is 1 and no row coefficient reaches HiGHS's limit (issue 21)."""
    if upper > 0 and kappa * upper > MAX_KAPPA_SPAN:
        return 1.0 / upper
    return kappa


def max_min_coefficients(
    arr: ClusterArrays, thr: np.ndarray, weight: np.ndarray | None = None
) -> np.ndarray:
    """``scale_i * thr[i,t] / (weight_i * p_i)`` for every job and type."""
    return _row_scale(arr, thr, weight)[:, None] * thr


def _row_scale(arr: ClusterArrays, thr: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
    p = arr.proportional_throughput(thr)
    w = arr.weight if weight is None else weight
    return arr.scale / (w * p)


def build_max_min_fairness(
    arr: ClusterArrays,
    thr: np.ndarray | None = None,
    weight: np.ndarray | None = None,
    mult: np.ndarray | None = None,
) -> Built:
    """Gavel's heterogeneity-aware max-min fairness LP (:func:`maxmin.build`).

    ``thr`` overrides the throughputs used to *allocate* (the agnostic baseline);
    ``weight`` overrides the job weights (entity weights in water-filling); ``mult``
    makes row ``i`` stand for ``mult[i]`` identical jobs (symmetry groups: their GPUs
    count ``mult`` times in ``c_capacity``). The objective variable is
    ``z = kappa * min_i value_i`` with ``kappa`` the larger of :func:`contention` and
    ``1 / min_i (best value job i could reach alone)``, so it is O(1) however
    oversubscribed the cluster or extreme the weights.
    """
    return M.build(max_min_lp(arr, thr, weight, mult))


def max_min_lp(
    arr: ClusterArrays,
    thr: np.ndarray | None = None,
    weight: np.ndarray | None = None,
    mult: np.ndarray | None = None,
) -> M.MaxMinLP:
    """The data of :func:`build_max_min_fairness` (its one ``alloc`` block holds every
    pair: column generation restricts it)."""
    thr = arr.thr if thr is None else thr
    pairs = Pairs.of(arr)
    row_scale = _row_scale(arr, thr, weight)
    full = row_scale[:, None] * thr
    # no job's value can exceed its best type full time: if even that bound is tiny
    # (e.g. a weight of 1e9), scale z up so the optimum is O(1) and not lost below
    # HiGHS's tolerances
    upper = float(row_max(np.where(arr.allowed, full, 0.0)).min())
    kappa = max(contention(arr, mult), 1.0 / upper if upper > 0 else 1.0)
    kappa = bounded_kappa(kappa, upper)  # nor lost above them (tiny weights)
    block = _alloc_columns(arr, pairs, thr, mult)
    # c_fair[i]: sum_t kappa * scale_i * thr[i,t] / (weight_i * p_i) * alloc[i,t] >= z
    return M.MaxMinLP(
        name="gpu_cluster",
        row_set="JOBS",
        num_rows=arr.num_jobs,
        types=arr.types,
        columns=(block,),
        capacity=arr.workers.astype(float),
        row_scale=row_scale,
        scale=kappa,
        coefficient_scale=kappa,
    )


def makespan_reference(arr: ClusterArrays, thr: np.ndarray) -> float:
    """A lower bound on the makespan, used to scale the makespan LP (z in (0, 1]).

    The larger of (a) the longest job on its fastest usable type full time and (b) the
    GPU-seconds all jobs need on their fastest types divided by the GPUs present.
    """
    best = row_max(np.where(arr.allowed, thr, 0.0))
    per_job = arr.steps / best
    total = float((arr.scale * per_job).sum() / arr.workers.sum())
    return max(float(per_job.max()), total)


def build_makespan(
    arr: ClusterArrays,
    thr: np.ndarray | None = None,
    mult: np.ndarray | None = None,
    t_ref: float | None = None,
) -> Built:
    """Exact minimum-makespan LP: maximise ``z = t_ref / T`` subject to
    ``sum_t thr[i,t] * t_ref / steps_i * alloc[i,t] >= z`` for every job.

    ``mult`` makes row ``i`` stand for ``mult[i]`` identical jobs; ``t_ref`` (the whole
    instance's :func:`makespan_reference`) is then given by the caller."""
    return M.build(makespan_lp(arr, thr, mult, t_ref))


def makespan_lp(
    arr: ClusterArrays,
    thr: np.ndarray | None = None,
    mult: np.ndarray | None = None,
    t_ref: float | None = None,
) -> M.MaxMinLP:
    """The data of :func:`build_makespan`."""
    thr = arr.thr if thr is None else thr
    pairs = Pairs.of(arr)
    if t_ref is None:
        t_ref = makespan_reference(arr, thr)
    block = _alloc_columns(arr, pairs, thr, mult)
    # c_progress[i]: sum_t thr[i,t] * t_ref / steps_i * alloc[i,t] >= z
    return M.MaxMinLP(
        name="gpu_cluster",
        row_set="JOBS",
        num_rows=arr.num_jobs,
        types=arr.types,
        columns=(block,),
        capacity=arr.workers.astype(float),
        row_scale=t_ref / arr.steps,
        scale=t_ref,
        scale_name="t_ref",
        value_rows="c_progress",
    )


def row_max(a: np.ndarray) -> np.ndarray:
    """``a.max(axis=1)`` of a rows x types array, one type at a time (numpy reduces a
    short last axis row by row: 0.2 ms against 0.8 at 20,000 x 8, measured; the same
    values, ``NaN`` propagated as there)."""
    out = np.array(a[:, 0], dtype=a.dtype)
    for k in range(1, a.shape[1]):
        np.maximum(out, a[:, k], out=out)
    return out


def row_min(a: np.ndarray) -> np.ndarray:
    """``a.min(axis=1)`` as :func:`row_max` computes the maximum."""
    out = np.array(a[:, 0], dtype=a.dtype)
    for k in range(1, a.shape[1]):
        np.minimum(out, a[:, k], out=out)
    return out


def job_groups(arr: ClusterArrays, by_steps: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Groups of identical jobs for the time-sharing LPs: same throughputs, usable types,
    scale factor, weight (and steps for makespan). ``(group_of_job, representatives,
    multiplicity)``; representatives in first-occurrence order, so the grouped LP keeps
    the jobs' order. Computed once per arrays and ``by_steps`` (the method's choice and
    its LP share one grouping), read-only."""
    key = "job_groups_by_steps" if by_steps else "job_groups"
    return arr.derived(key, lambda a: _job_groups(a, by_steps))


def _job_groups(arr: ClusterArrays, by_steps: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cols = [arr.scale[:, None], arr.weight[:, None], arr.thr, arr.allowed]
    if by_steps:
        cols.append(arr.steps[:, None])
    key = np.hstack([np.asarray(c, dtype=float) for c in cols])
    groups = row_groups(key)
    for a in groups:
        a.flags.writeable = False
    return groups


def row_groups(key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows of ``key`` that are equal (``==`` on every entry), as
    ``(group_of_row, first_row_of_each_group, rows_in_each_group)``, groups numbered by
    first occurrence.

    The partition of ``np.unique(key, axis=0)`` (which sorts the rows as structured
    records: about 3.5 ms of CPU at 2,048 x 8, measured) from one stable sort of a hash of
    each row and one comparison of neighbouring rows (:func:`_row_order`), then the
    groups renumbered by first occurrence."""
    n = key.shape[0]
    order, new = _row_order(key)
    if new.all():  # no two rows alike: each row its own group, in row order
        return np.arange(n, dtype=np.int64), np.arange(n, dtype=np.int64), np.ones(n)
    starts = np.flatnonzero(new)
    first = np.minimum.reduceat(order, starts)  # each group's first row, groups sorted
    counts = np.diff(np.append(starts, n))
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    by_first = np.argsort(first, kind="stable")  # groups numbered by first occurrence
    rank = np.empty_like(by_first)
    rank[by_first] = np.arange(len(by_first))
    group_of = rank[inverse].astype(np.int64)
    return group_of, first[by_first].astype(np.int64), counts[by_first].astype(float)


_ROW_HASH = np.random.default_rng(20261201).integers(0, 2**63, size=64, dtype=np.uint64) * 2 + 1
"""Odd multipliers of :func:`_row_hash` (one per column, repeated past 64 columns)."""


def _row_hash(key: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row of ``key`` (a float array): ``sum_j bits[i,j] * C_j`` mod
    2**64 over the rows' IEEE bits, ``-0.0`` counted as ``0.0``. Rows that are equal
    (``==``) hash alike; unequal rows may too (:func:`_row_order` then checks)."""
    bits = np.ascontiguousarray(key, dtype=np.float64) + 0.0  # (-0.0 + 0.0 is 0.0)
    c = np.resize(_ROW_HASH, bits.shape[1])
    return bits.view(np.uint64) @ c  # type: ignore[no-any-return]  # (wraps: mod 2**64)


def _row_order(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An order of the rows of ``key`` in which equal rows are contiguous, and where
    each run of equal rows starts (in that order); within a run the rows may come in
    any order (:func:`row_groups` takes each run's smallest row).

    Sorted by :func:`_row_hash` (one sort instead of ``np.lexsort``'s one per column:
    3 ms against 25 ms at 20,000 x 18, measured; numpy's default sort, not the stable
    one: 0.4 ms against 1.6 ms on 20,000 hashes, measured); when two neighbours with the
    same hash differ (a collision, or a NaN, which equals nothing) the rows are sorted by
    every column instead (``np.lexsort``), as before. Either order gives the same runs,
    so the partition is the same."""
    n = key.shape[0]
    new = np.ones(n, dtype=bool)
    if n < 2:
        return np.arange(n), new
    h = _row_hash(key)
    order = np.argsort(h)
    hs = h[order]
    same = np.flatnonzero(hs[1:] == hs[:-1])  # neighbours of one hash: equal rows?
    if not (key[order[same + 1]] != key[order[same]]).any():
        new[1:] = hs[1:] != hs[:-1]
        return order, new  # each run of one hash is one group: the hash told them apart
    # stable: a run of equal rows starts at its first row (contiguous keys: 3x faster)
    order = np.lexsort(np.ascontiguousarray(key.T[::-1]))
    srt = key[order]
    new[1:] = (srt[1:] != srt[:-1]).any(axis=1)
    return order, new


def build_grouped(arr: ClusterArrays, objective: str, thr: np.ndarray | None = None) -> Built:
    """The max-min fairness or makespan LP with one row per group of identical jobs.

    Both LPs are convex and invariant under permuting identical jobs, so averaging an
    optimum over a group's permutations gives an optimum in which every job of a group
    has the same shares: the LP over one representative per group, whose GPUs count
    ``mult`` times, has the same optimum, and giving each job its group's shares
    (:attr:`MaxMinLayout.group_of`) is an optimal allocation of the per-job LP. When no
    two jobs are alike this is exactly the per-job model.
    """
    lp, group_of = grouped_lp(arr, objective, thr)
    built = M.build(lp)
    if group_of is None:
        return built
    return Built(built.model, replace(built.layout, group_of=group_of))


def grouped_lp(
    arr: ClusterArrays, objective: str, thr: np.ndarray | None = None
) -> tuple[M.MaxMinLP, np.ndarray | None]:
    """The data of :func:`build_grouped` and each job's group (``None``: no two jobs
    alike, the per-job LP)."""
    makespan = objective == "makespan"
    group_of, reps, mult = job_groups(arr, makespan)
    if len(reps) == arr.num_jobs:
        return (makespan_lp(arr, thr) if makespan else max_min_lp(arr, thr)), None
    sub = arr.subset(reps)
    thr_sub = None if thr is None else thr[reps]
    if makespan:
        t_ref = makespan_reference(arr, arr.thr if thr is None else thr)
        return makespan_lp(sub, thr_sub, mult, t_ref), group_of
    return max_min_lp(sub, thr_sub, None, mult), group_of
