"""Space sharing (two jobs on the same GPUs), aggregated by job-type pairs.

See ``models/gpu_cluster_space_sharing.md``. Jobs fall into *classes*
``(job_type, scale_factor)``; a co-location entry lets class ``a`` share GPUs of type
``w`` with class ``b`` (same scale factor). Instead of one variable per job pair (Gavel,
O(N^2)), each job has one variable per partner class and type, ``pair[i, b, w]``: the
share of time job ``i`` runs next to *some* job of class ``b`` on ``w``. Link rows make
the two sides agree (``sum_{i in a} pair[i,b,w] = sum_{j in b} pair[j,a,w]``); for a class
paired with itself, no job may share more than all the others together
(``2 pair[i,a,w] <= sum_{j in a} pair[j,a,w]``). :func:`disaggregate` turns an optimum
back into per-job-pair fractions exactly (a transportation plan for ``a != b``, the
"antipodal circle" for ``a == b``), so the aggregate loses nothing.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ...contract import Built, Outcome
from ...status import Status
from . import maxmin as M
from .data import ClusterArrays, GpuClusterInstance
from .formulations import INF, Pairs, bounded_kappa, contention, makespan_reference
from .maxmin import MaxMinLayout, Rows, TimeColumns

if TYPE_CHECKING:
    from ...pipeline import Session

Class = tuple[str, int]


@dataclass(frozen=True)
class Relation:
    """Class ``a`` may run next to class ``b`` on type index ``w`` at ``thr`` steps/s."""

    a: int
    b: int
    w: int
    thr: float


@dataclass(frozen=True)
class PairColumns:
    """The ``pair`` variables: column ``k`` is job ``job[k]`` next to class ``partner[k]``
    on type ``type[k]`` at throughput ``thr[k]`` (``rel[k]`` indexes the relation)."""

    job: np.ndarray
    partner: np.ndarray
    type: np.ndarray
    thr: np.ndarray
    rel: np.ndarray

    def __len__(self) -> int:
        return len(self.job)


@dataclass(frozen=True)
class ColocationData:
    classes: list[Class]
    job_class: np.ndarray  # class index per job (-1: no job_type)
    relations: list[Relation]
    cols: PairColumns
    true_rates: dict[tuple[int, int, int], float]
    """Measured pair throughputs ``(a, b, w) -> steps/s of a`` (before pruning and the
    agnostic view): what the results report."""
    dominated_pairs: int = 0
    """Pair entries (per type) left out because time-slicing dominates them."""


def colocation_data(
    inst: GpuClusterInstance,
    arr: ClusterArrays,
    agnostic: bool = False,
    thr_solo: np.ndarray | None = None,
) -> ColocationData:
    """Classes, usable pair relations and the pair columns of an instance.

    An entry is used when both throughputs are positive, the type has at least
    ``scale_factor`` GPUs and both classes have jobs. For a type paired with itself the
    two numbers are averaged. ``agnostic`` replaces each relation's throughput by its
    mean over the worker types where it exists (every type treated as equal).
    """
    classes: list[Class] = []
    index: dict[Class, int] = {}
    job_class = np.full(arr.num_jobs, -1, dtype=np.int64)
    for i, job in enumerate(inst.jobs):
        if job.job_type is None:
            continue
        key = (job.job_type, job.scale_factor)
        if key not in index:
            index[key] = len(classes)
            classes.append(key)
        job_class[i] = index[key]
    thr_solo = arr.thr if thr_solo is None else thr_solo
    type_pos = {t: k for k, t in enumerate(arr.types)}
    rels: dict[tuple[int, int, int], float] = {}
    for entry in inst.colocation or []:
        ta, tb = entry.throughput
        w = type_pos[entry.worker_type]
        if ta <= 0 or tb <= 0 or arr.workers[w] < entry.scale_factor:
            continue
        ka = (entry.job_types[0], entry.scale_factor)
        kb = (entry.job_types[1], entry.scale_factor)
        if ka not in index or kb not in index:
            continue
        a, b = index[ka], index[kb]
        if a == b:
            rels[(a, a, w)] = 0.5 * (ta + tb)
        else:
            rels[(a, b, w)] = ta
            rels[(b, a, w)] = tb
    true_rates = dict(rels)
    if agnostic:
        sums: dict[tuple[int, int], list[float]] = {}
        for (a, b, _w), t in rels.items():
            sums.setdefault((a, b), []).append(t)
        rels = {k: float(np.mean(sums[(k[0], k[1])])) for k in rels}
    # an exact reduction: a pair whose two jobs together get no more than one GPU's worth
    # of their solo speeds (ta / solo_a + tb / solo_b <= 1) is dominated by time-slicing
    # the two alone on the same GPUs (same GPU-time, no more time for either job, at
    # least the same steps), so it never helps any of these objectives.
    solo_min = np.full((len(classes), len(arr.types)), np.inf)
    for c in range(len(classes)):
        members_c = job_class == c
        solo_min[c] = np.where(arr.allowed[members_c], thr_solo[members_c], 0.0).min(axis=0)
    dominated = set()
    for (a, b, w), t in rels.items():
        if (b, a, w) not in rels or solo_min[a, w] <= 0 or solo_min[b, w] <= 0:
            continue
        if a == b:
            if 2 * t / solo_min[a, w] <= 1 + 1e-12:
                dominated.add((a, b, w))
        elif t / solo_min[a, w] + rels[(b, a, w)] / solo_min[b, w] <= 1 + 1e-12:
            dominated.add((a, b, w))
    pruned = len(dominated) - sum(1 for (a, b, _w) in dominated if a != b) // 2
    rels = {k: v for k, v in rels.items() if k not in dominated}
    relations = [Relation(a, b, w, t) for (a, b, w), t in sorted(rels.items())]
    cols = pair_columns(relations, job_class)
    return ColocationData(classes, job_class, relations, cols, true_rates, pruned)


def pair_columns(relations: list[Relation], row_class: np.ndarray) -> PairColumns:
    """One column per (row, partner class, type) for every relation of the row's class,
    in row-major order (a row's columns are adjacent)."""
    parts = []
    for r, rel in enumerate(relations):
        js = np.nonzero(row_class == rel.a)[0]
        k = len(js)
        parts.append((js, np.full(k, rel.b), np.full(k, rel.w), np.full(k, rel.thr), np.full(k, r)))
    if not parts:
        z = np.zeros(0, dtype=np.int64)
        return PairColumns(z, z, z, np.zeros(0), z)
    job, partner, typ, thr, rel_idx = (np.concatenate(z) for z in zip(*parts, strict=True))
    order = np.lexsort((typ, partner, job))
    return PairColumns(
        job[order].astype(np.int64),
        partner[order].astype(np.int64),
        typ[order].astype(np.int64),
        thr[order].astype(float),
        rel_idx[order].astype(np.int64),
    )


def symmetry_groups(
    arr: ClusterArrays, job_class: np.ndarray, thr: np.ndarray, by_steps: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group interchangeable jobs: same class, scale factor, weight, throughputs (and steps
    for makespan). The LPs are invariant under permuting a group's jobs and convex, so
    averaging an optimum over those permutations gives an optimum in which every job of
    a group has the same values: solving one representative per group (with its
    multiplicity) is exact. Returns ``(group_of_job, representatives, multiplicity)``.
    """
    cols = [job_class[:, None], arr.scale[:, None], arr.weight[:, None], thr, arr.allowed]
    if by_steps:
        cols.append(arr.steps[:, None])
    key = np.hstack([np.asarray(c, dtype=float) for c in cols])
    _, reps, group_of, mult = np.unique(
        key, axis=0, return_index=True, return_inverse=True, return_counts=True
    )
    return group_of.ravel().astype(np.int64), reps.astype(np.int64), mult.astype(float)


@dataclass(frozen=True)
class ColocationLayout:
    """What the space-sharing model's extractor needs."""

    lp: MaxMinLayout
    """The ``alloc`` columns (one per usable (group, type)) and the objective's scale."""
    co: ColocationData
    group_of: np.ndarray
    reps: np.ndarray
    mult: np.ndarray
    """:func:`symmetry_groups`: each job's group, one representative per group, its size."""
    group_cols: PairColumns
    """The ``pair`` columns (one per group, partner class and type)."""

    @property
    def pairs(self) -> Pairs:
        return self.lp.pairs

    @property
    def scale(self) -> float:
        return self.lp.scale


def build_colocation_model(
    inst: GpuClusterInstance,
    objective: str,
    thr: np.ndarray | None = None,
    agnostic: bool = False,
) -> Built:
    """``max_min_fairness`` or ``makespan`` with space sharing (see the module docstring),
    built by the kind's one max-min LP builder (:func:`.maxmin.build`) from
    :func:`colocation_lp`."""
    lp, parts = colocation_lp(inst, objective, thr, agnostic)
    built = M.build(lp)
    return Built(built.model, ColocationLayout(built.layout, *parts))


def colocation_lp(
    inst: GpuClusterInstance,
    objective: str,
    thr: np.ndarray | None = None,
    agnostic: bool = False,
) -> tuple[M.MaxMinLP, tuple[ColocationData, np.ndarray, np.ndarray, np.ndarray, PairColumns]]:
    """The data of :func:`build_colocation_model` and its layout's parts ``(co, group_of,
    reps, mult, group_cols)``.

    The model's rows are :func:`symmetry_groups` of interchangeable jobs (``mult[g]``
    jobs each). Columns: ``alloc`` (solo, one per usable (group, type)), ``pair`` (one per
    group, partner class and type), ``self_total`` (one per class paired with itself, per
    type) and ``z``. Rows: ``c_time``, ``c_capacity``, ``c_link``, ``c_self_total``,
    ``c_self`` and ``c_fair`` (max-min) or ``c_progress`` (makespan).
    """
    arr = inst.arrays
    thr = arr.thr if thr is None else thr
    co = colocation_data(inst, arr, agnostic, thr)
    group_of, reps, mult = symmetry_groups(arr, co.job_class, thr, objective == "makespan")
    ga = arr.subset(reps)
    gthr = thr[reps]
    gclass = co.job_class[reps]
    pc = pair_columns(co.relations, gclass)
    pairs = Pairs.of(ga)
    n, K, Q = len(reps), len(pairs), len(pc)
    self_rel = [r for r, rel in enumerate(co.relations) if rel.a == rel.b]
    S = len(self_rel)
    P0, S0 = K, K + Q
    pk = P0 + np.arange(Q)
    gm_solo = mult[pairs.job]
    gm_pair = mult[pc.job]

    # c_capacity[w]: solo GPUs + scale * (pair time counted once per job pair) <= workers[w]
    own = gclass[pc.job]
    pair_cap = gm_pair * ga.scale[pc.job] * np.where(pc.partner == own, 0.5, 1.0)
    first = own <= pc.partner
    solo = TimeColumns(
        "alloc",
        "PAIRS",
        pairs.job,
        pairs.type,
        gthr[pairs.job, pairs.type],
        gm_solo * ga.scale[pairs.job],
        ga.allowed[pairs.job, pairs.type],
    )
    shared = TimeColumns(
        "pair", "PAIR_COLS", pc.job, pc.type, pc.thr, np.where(first, pair_cap, 0.0)
    )

    # c_link[(a,b,w)], a < b: sum_{i in a} pair[i,b,w] - sum_{j in b} pair[j,a,w] = 0
    rel_key = {(r.a, r.b, r.w): k for k, r in enumerate(co.relations)}
    link_of = np.full(len(co.relations), -1)
    sign = np.zeros(len(co.relations))
    L = 0
    for ridx, r in enumerate(co.relations):
        if r.a < r.b and (r.b, r.a, r.w) in rel_key:
            link_of[ridx], sign[ridx] = L, 1.0
            link_of[rel_key[(r.b, r.a, r.w)]], sign[rel_key[(r.b, r.a, r.w)]] = L, -1.0
            L += 1
    sel = link_of[pc.rel] >= 0 if Q else np.zeros(0, dtype=bool)
    link = Rows(
        "c_link",
        link_of[pc.rel][sel],
        pk[sel],
        (sign[pc.rel] * gm_pair)[sel],
        L,
        np.zeros(L),
        np.zeros(L),
    )
    # c_self_total[(a,w)]: sum_{i in a} pair[i,a,w] - self_total[a,w] = 0
    # c_self[q]: 2 pair[i,a,w] - self_total[a,w] <= 0  (nobody shares more than the rest)
    self_pos = np.full(len(co.relations), -1)
    self_pos[self_rel] = np.arange(S)
    sp = self_pos[pc.rel] if Q else np.zeros(0, dtype=np.int64)
    qs = np.nonzero(sp >= 0)[0]
    self_total = Rows(
        "c_self_total",
        np.concatenate([sp[qs], np.arange(S)]),
        np.concatenate([pk[qs], S0 + np.arange(S)]),
        np.concatenate([gm_pair[qs], -np.ones(S)]),
        S,
        np.zeros(S),
        np.zeros(S),
    )
    R = len(qs)
    self_rows = Rows(
        "c_self",
        np.concatenate([np.arange(R), np.arange(R)]),
        np.concatenate([pk[qs], S0 + sp[qs]]),
        np.concatenate([np.full(R, 2.0), -np.ones(R)]),
        R,
        np.full(R, -INF),
        np.zeros(R),
    )
    # per-group progress rows (kappa of the whole cluster, folded into row_scale)
    if objective == "max_min_fairness":
        p = ga.proportional_throughput(gthr)
        base = ga.scale / (ga.weight * p)
        best = (gthr * base[:, None]).max(axis=1)
        kappa = bounded_kappa(contention(arr), float(best.min()))
        row_scale = kappa * base
        scale, scale_name, value_rows = kappa, "kappa", "c_fair"
    else:
        t_ref = makespan_reference(arr, thr)
        row_scale = t_ref / ga.steps
        scale, scale_name, value_rows = t_ref, "t_ref", "c_progress"
    lp = M.MaxMinLP(
        name="gpu_cluster_space_sharing",
        row_set="GROUPS",
        num_rows=n,
        types=arr.types,
        columns=(solo, shared),
        capacity=arr.workers.astype(float),
        row_scale=row_scale,
        scale=scale,
        scale_name=scale_name,
        value_rows=value_rows,
        free=(M.FreeColumns("self_total", "SELF", S),),
        extra_rows=(link, self_total, self_rows),
    )
    return lp, (co, group_of, reps, mult, pc)


def expand_solution(
    arr: ClusterArrays, layout: ColocationLayout, x_solo: np.ndarray, x_pair: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per-job solo matrix ``X`` and per-job pair values (columns of ``co.cols``) from the
    group model's values: every job of a group gets the group's values."""
    group_of, _reps = layout.group_of, layout.reps
    co = layout.co
    gp = layout.pairs
    Xg = np.zeros((len(_reps), len(arr.types)))
    Xg[gp.job, gp.type] = np.clip(np.where(np.abs(x_solo) < 1e-10, 0.0, x_solo), 0.0, None)
    X = Xg[group_of]
    gc = layout.group_cols
    B, T = max(len(co.classes), 1), len(arr.types)
    gkey = (gc.job * B + gc.partner) * T + gc.type
    jc = co.cols
    jkey = (group_of[jc.job] * B + jc.partner) * T + jc.type
    pos = np.searchsorted(gkey, jkey)
    vals = np.zeros(len(jc))
    if len(gkey):
        ok = (pos < len(gkey)) & (gkey[np.minimum(pos, len(gkey) - 1)] == jkey)
        vals[ok] = x_pair[pos[ok]]
    return X, vals


# ----------------------------------------------------------------- disaggregation


def _transport(
    supply: np.ndarray, demand: np.ndarray, tol: float = 1e-12
) -> list[tuple[int, int, float]]:
    """North-west-corner plan: ``sum_j f[i,j] = supply[i]``, ``sum_i f[i,j] = demand[j]``
    (totals equal up to rounding; the last pieces absorb the difference)."""
    out: list[tuple[int, int, float]] = []
    i = j = 0
    s = supply.astype(float).copy()
    d = demand.astype(float).copy()
    while i < len(s) and j < len(d):
        f = min(s[i], d[j])
        if f > tol:
            out.append((i, j, float(f)))
        s[i] -= f
        d[j] -= f
        if s[i] <= tol:
            i += 1
        if j < len(d) and d[j] <= tol:
            j += 1
    return out


def _circle(deg: np.ndarray, tol: float = 1e-12) -> list[tuple[int, int, float]]:
    """Symmetric pairing with zero diagonal and row sums ``deg`` (needs ``max <= sum/2``).

    Lay the arcs ``deg[i]`` end to end on a circle of length ``S = sum(deg)`` and pair
    every point ``x`` with ``x + S/2``: job ``i`` shares ``|{x in arc_i : x + S/2 in arc_j}|``
    with job ``j``. Returns unordered pairs ``(i, j, f)``; each job's total is ``deg[i]``.
    """
    total = float(deg.sum())
    if total <= tol:
        return []
    half = total / 2
    ends = np.cumsum(deg)
    starts = ends - deg
    # first half [0, half) against second half shifted down by half
    pts = np.unique(np.concatenate([[0.0, half], starts[starts < half], ends[ends < half],
                                    starts[starts > half] - half, ends[ends > half] - half]))  # fmt: skip
    pts = pts[(pts >= 0) & (pts <= half)]
    out: dict[tuple[int, int], float] = {}
    for lo, hi in itertools.pairwise(pts):
        length = hi - lo
        if length <= tol:
            continue
        mid = 0.5 * (lo + hi)
        i = int(np.searchsorted(ends, mid, side="right"))
        j = int(np.searchsorted(ends, mid + half, side="right"))
        i, j = min(i, len(deg) - 1), min(j, len(deg) - 1)
        if i == j:
            continue  # only possible by rounding when deg[i] == S/2
        key = (min(i, j), max(i, j))
        out[key] = out.get(key, 0.0) + float(length)
    return [(i, j, f) for (i, j), f in out.items()]


def disaggregate(co: ColocationData, pair_values: np.ndarray) -> list[tuple[int, int, int, float]]:
    """Per-job-pair fractions ``(i, j, w, f)`` (unordered, ``i != j``) from ``pair`` values.

    For classes ``a < b`` on type ``w`` the supplies ``pair[i,b,w]`` (``i`` in ``a``) and
    demands ``pair[j,a,w]`` (``j`` in ``b``) have equal totals (``c_link``): a
    transportation plan splits them. For a class with itself, ``c_self`` guarantees
    ``pair[i,a,w] <= sum / 2`` and :func:`_circle` pairs the jobs.
    """
    pc = co.cols
    out: list[tuple[int, int, int, float]] = []
    by_rel: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    order = np.argsort(pc.rel, kind="stable")
    rel_sorted = pc.rel[order]
    bounds = np.flatnonzero(np.diff(rel_sorted)) + 1
    for chunk in np.split(order, bounds):
        if len(chunk) and (pair_values[chunk] > 0).any():
            by_rel[int(pc.rel[chunk[0]])] = (pc.job[chunk], pair_values[chunk])
    rel_key = {(rel.a, rel.b, rel.w): k for k, rel in enumerate(co.relations)}
    for k, rel in enumerate(co.relations):
        if k not in by_rel:
            continue
        jobs_a, vals_a = by_rel[k]
        if rel.a == rel.b:
            for i, j, f in _circle(np.clip(vals_a, 0, None)):
                out.append((int(jobs_a[i]), int(jobs_a[j]), rel.w, f))
        elif rel.a < rel.b:
            other = rel_key.get((rel.b, rel.a, rel.w))
            if other is None or other not in by_rel:
                continue
            jobs_b, vals_b = by_rel[other]
            for i, j, f in _transport(np.clip(vals_a, 0, None), np.clip(vals_b, 0, None)):
                out.append((int(jobs_a[i]), int(jobs_b[j]), rel.w, f))
    return out


def pair_tables(
    arr: ClusterArrays,
    co: ColocationData,
    pair_values: np.ndarray,
    solo: pd.DataFrame,
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, int]:
    """The allocation table with pair rows, and each job's pair throughput and time.

    Every job pair sharing type ``w`` for a fraction ``f`` of the time gives two rows,
    ``(i, w, other_job=j, f)`` and ``(j, w, other_job=i, f)``, so each job's rows sum to
    its time share; solo rows get ``other_job = ""``. Throughputs are the measured ones
    (also when the model was solved with the agnostic view).
    """
    vals = np.where(pair_values > 1e-10, pair_values, 0.0)
    plan = disaggregate(co, vals)
    n = arr.num_jobs
    pair_thr = np.zeros(n)
    pair_share = np.zeros(n)
    solo = solo.assign(other_job="")
    if not plan:
        return solo, pair_thr, pair_share, 0
    pi, pj, pw, pf = (np.array(c) for c in zip(*plan, strict=True))
    a = np.concatenate([pi, pj])
    b = np.concatenate([pj, pi])
    w = np.concatenate([pw, pw]).astype(np.int64)
    f = np.concatenate([pf, pf]).astype(float)
    ca, cb = co.job_class[a], co.job_class[b]
    rate = np.array(
        [co.true_rates[(int(x), int(y), int(z))] for x, y, z in zip(ca, cb, w, strict=True)]
    )
    np.add.at(pair_thr, a, f * rate)
    np.add.at(pair_share, a, f)
    ids = np.asarray(arr.job_ids, dtype=object)
    types = np.asarray(arr.types, dtype=object)
    shared = pd.DataFrame(
        {"job": ids[a], "worker_type": types[w], "fraction": f, "other_job": ids[b]}
    )
    table = pd.concat([solo, shared], ignore_index=True) if len(shared) else solo
    return table, pair_thr, pair_share, len(plan)


def colocation_tables(
    arr: ClusterArrays, lay: ColocationLayout, x_solo: np.ndarray, x_pair: np.ndarray
) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray, dict[str, Any]]:
    """Allocation and job tables, effective throughputs and ``info`` of a space-sharing
    solution (``x_solo``: the ``alloc`` columns, ``x_pair``: the ``pair`` columns)."""
    from . import verify as V
    from .methods import allocation_table

    X, pair_vals = expand_solution(arr, lay, x_solo, x_pair)
    pairs = Pairs.of(arr)
    x = X[pairs.job, pairs.type]
    thr_eff = V.effective_throughput(arr, X)
    share = X.sum(axis=1)
    allocation, pair_thr, pair_share, n_pairs = pair_tables(
        arr, lay.co, pair_vals, allocation_table(arr, pairs, x)
    )
    thr_eff = thr_eff + pair_thr
    share = share + pair_share
    jobs = pd.DataFrame({"job": arr.job_ids, "time_share": share, "throughput": thr_eff})
    jobs["shared_time"] = pair_share
    info: dict[str, Any] = {
        "colocated_pairs": n_pairs,
        "pair_columns": len(lay.group_cols),  # in the LP (one per symmetry group)
        "pair_columns_per_job": len(lay.co.cols),
        "dominated_pairs_dropped": lay.co.dominated_pairs,
        "symmetry_groups": len(lay.reps),
    }
    return allocation, jobs, thr_eff, info


# ----------------------------------------------------------------- priced solve
PRICED_MIN_COLUMNS = 20_000
"""``lp_strategy="auto"`` generates pair columns when the LP has this many (after
symmetry groups; measured faster from 512 Gavel jobs, makespan 1.5 s against 14 s)."""

PRICED_GAP_TOL = 2e-10
"""The certificate must come this close to ``z`` (relative)."""

PRICE_TOL = 1e-9
PER_ROW = 2
"""Pair columns that may enter per row and round."""
MAX_ROUNDS = 20
"""After this many rounds every remaining pair column enters (the full LP)."""


def wants_pricing(params: Any, inst: GpuClusterInstance, by_steps: bool) -> bool:
    """Generate pair columns (``lp_strategy``; never agnostic)? ``auto``: a cheap
    pre-check (:func:`solve_priced` counts the LP's pair columns)."""
    if params.agnostic or params.lp_strategy == "monolithic":
        return False
    if params.lp_strategy == "column_generation":
        return True
    return pair_columns_bound(inst, by_steps) >= PRICED_MIN_COLUMNS


def pair_columns_bound(inst: GpuClusterInstance, by_steps: bool) -> int:
    """An upper bound on the LP's pair columns, without building them: per symmetry
    group (:func:`symmetry_groups`), the entries that name its class."""
    entries = inst.colocation or ()
    if not entries:
        return 0
    arr = inst.arrays
    per_class: dict[tuple[str | None, int], int] = {}
    for e in entries:
        for t in set(e.job_types):
            per_class[(t, e.scale_factor)] = per_class.get((t, e.scale_factor), 0) + 1
    keys = [(j.job_type, j.scale_factor) for j in inst.jobs]
    codes = {k: c for c, k in enumerate(dict.fromkeys(keys))}
    job_class = np.array([codes[k] for k in keys], dtype=float)
    _, reps, _ = symmetry_groups(arr, job_class, arr.thr, by_steps)
    return int(sum(per_class.get(keys[int(r)], 0) for r in reps))


@dataclass(frozen=True)
class FullLP:
    """The space-sharing LP as one matrix (what :func:`.maxmin.build` builds).

    Rows: ``c_time`` (``n``), ``c_capacity`` (``T``), the extra rows in order
    (``c_link``, ``c_self_total``, ``c_self``), the value rows (``n``). Columns: ``alloc``
    (``K``), ``pair`` (``Q``), ``self_total`` (``S``), ``z``."""

    A: Any  # scipy.sparse.csc_array
    c: np.ndarray
    col_upper: np.ndarray
    cert_upper: np.ndarray
    """Finite upper bounds every feasible point meets (the certificate's box):
    ``self_total <= `` its row's pair coefficients summed, ``z <= min_r max_k coef``."""
    row_lower: np.ndarray
    row_upper: np.ndarray
    K: int
    Q: int
    S: int
    pair_row: np.ndarray
    """Row (group) of each pair column."""

    @property
    def num_cols(self) -> int:
        return self.K + self.Q + self.S + 1


def full_lp(lp: M.MaxMinLP) -> FullLP:
    """:class:`FullLP` of a space-sharing :class:`~.maxmin.MaxMinLP`."""
    import scipy.sparse as sp

    assert lp.z_usage is None and len(lp.columns) == 2 and len(lp.free) == 1
    n, T = lp.num_rows, len(lp.capacity)
    solo, shared = lp.columns
    K, Q, S = len(solo), len(shared), lp.free[0].count
    ncol = K + Q + S + 1
    zc = ncol - 1
    extra_rows = sum(r.num_rows for r in lp.extra_rows)
    fair0 = n + T + extra_rows
    rows, cols, vals = [], [], []
    best = np.zeros(n)
    for block, off in ((solo, 0), (shared, K)):
        k = off + np.arange(len(block))
        coef = lp.row_scale[block.row] * block.rate * lp.coefficient_scale
        rows += [block.row, n + block.type, fair0 + block.row]
        cols += [k, k, k]
        vals += [np.ones(len(block)), block.usage, coef]
        ok = np.ones(len(block), dtype=bool) if block.open is None else block.open
        np.maximum.at(best, block.row[ok], coef[ok])
    ro = n + T
    for r in lp.extra_rows:
        rows.append(ro + r.rows)
        cols.append(r.cols)
        vals.append(r.vals)
        ro += r.num_rows
    rows.append(fair0 + np.arange(n))
    cols.append(np.full(n, zc))
    vals.append(-np.ones(n))
    A = sp.csc_array(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(fair0 + n, ncol),
    )
    A.sum_duplicates()
    A.eliminate_zeros()
    col_upper = np.ones(ncol)
    if solo.open is not None:
        col_upper[:K] = np.where(solo.open, 1.0, 0.0)
    z_max = np.inf if lp.z_max is None else lp.z_max * lp.scale
    col_upper[K + Q : K + Q + S] = np.inf
    col_upper[zc] = z_max
    cert = col_upper.copy()
    st = lp.extra_rows[1]  # c_self_total[s]: sum gm * pair - self_total[s] = 0
    on_pairs = st.cols < K + Q
    cert[K + Q : K + Q + S] = np.bincount(
        st.rows[on_pairs], np.abs(st.vals[on_pairs]), minlength=S
    )[:S]
    cert[zc] = min(float(best.min()) if n else 0.0, z_max)
    c = np.zeros(ncol)
    c[zc] = 1.0
    row_lower = np.concatenate(
        [np.full(n + T, -np.inf), *(r.lower for r in lp.extra_rows), np.zeros(n)]
    )
    row_upper = np.concatenate(
        [np.ones(n), lp.capacity, *(r.upper for r in lp.extra_rows), np.full(n, np.inf)]
    )
    return FullLP(A, c, col_upper, cert, row_lower, row_upper, K, Q, S, shared.row)


def lagrangian_bound(f: FullLP, y: np.ndarray) -> tuple[float, np.ndarray]:
    """An upper bound on the full LP's ``z`` from ANY row duals ``y`` (clipped to their
    signs: ``>= 0`` on rows with only an upper bound, ``<= 0`` on rows with only a lower
    one), and every column's reduced cost ``d = c - A^T y``.

    Lagrangian relaxation of every row over the box ``0 <= x <= cert_upper``: ::

        z* <= sum_r (y_r > 0 ? y_r upper_r : y_r lower_r) + sum_k max(0, d_k) cert_upper_k
    """
    y = np.where(np.isinf(f.row_lower), np.maximum(y, 0.0), y)
    y = np.where(np.isinf(f.row_upper), np.minimum(y, 0.0), y)
    up = np.where(np.isinf(f.row_upper), 0.0, f.row_upper)
    lo = np.where(np.isinf(f.row_lower), 0.0, f.row_lower)
    d = f.c - f.A.T @ y
    rows = float(np.where(y > 0, y * up, y * lo).sum())
    return rows + float((np.maximum(d, 0.0) * f.cert_upper).sum()), d


def restricted(f: FullLP, pick: np.ndarray, name: str) -> Any:
    """A :class:`~hetopt.highs.CompiledModel` of the columns ``pick`` of ``f`` (all rows)."""
    import pyomo.environ as pyo

    from ...highs import CompiledModel

    A = f.A[:, pick]
    A.sort_indices()
    k, m = len(pick), A.shape[0]
    return CompiledModel(
        model=pyo.ConcreteModel(name=name),
        columns=[None] * k,
        rows=[None] * m,
        A=A,
        c=f.c[pick],
        offset=0.0,
        maximize=True,
        col_lower=np.zeros(k),
        col_upper=f.col_upper[pick],
        row_lower=f.row_lower,
        row_upper=f.row_upper,
        integrality=np.zeros(k, dtype=np.int32),
    )


def solve_priced(
    session: Session,
    instance: GpuClusterInstance,
    objective: str,
    reader: Any,
    auto: bool = False,
) -> Outcome | None:
    """Space sharing by generating pair columns (exact, certified).

    The restricted LP holds every row of the full LP, every ``alloc``, ``self_total``
    and ``z`` column and, at first, no ``pair`` column: the time-sharing LP over the same
    groups. Its row duals price every pair column (:func:`lagrangian_bound`, valid for any
    duals); the (at most :data:`PER_ROW`) best positive ones of each row enter and HiGHS
    re-solves warm by primal simplex (adding columns keeps its basis primal feasible),
    until the bound meets ``z``; after :data:`MAX_ROUNDS` every remaining pair column
    enters. ``None`` when HiGHS does not solve the first LP to optimality, or when
    ``auto`` and the LP has fewer than :data:`PRICED_MIN_COLUMNS` pair columns (the
    caller then solves the full LP).
    """
    from ...highs import HighsModel

    arr = instance.arrays
    with session.timer("build_s"):
        lp, parts = colocation_lp(instance, objective, None, False)
        if auto and len(lp.columns[1]) < PRICED_MIN_COLUMNS:
            return None
        f = full_lp(lp)
        K, Q, S = f.K, f.Q, f.S
        zc = f.num_cols - 1
        pick = np.r_[np.arange(K), K + Q + np.arange(S), zc]
        compiled = restricted(f, pick, lp.name)
    with session.timer("transfer_s"):
        hm = HighsModel(compiled)
    lay = ColocationLayout(M.MaxMinLayout(Pairs(lp.columns[0].row, lp.columns[0].type),
                                          lp.value_rows, lp.scale), *parts)  # fmt: skip
    live = session.adopt(Built(compiled.model, lay), hm)
    h = hm.highs
    in_lp = np.zeros(f.num_cols, dtype=bool)
    in_lp[pick] = True
    view = live.solve(session.remaining(session.options), M.LP_METHOD, "restricted")
    rounds, added, bound, certified = 0, 0, None, False
    while True:
        raw = view.raw
        if raw.status != Status.OPTIMAL or raw.row_dual is None or raw.x is None:
            if rounds == 0:
                return None
            break
        z = float(raw.x[K + S])  # (z stays at its place: new columns go last)
        bound, d = lagrangian_bound(f, raw.row_dual)
        if bound - z <= PRICED_GAP_TOL * max(abs(z), 1e-12):
            certified = True
            break
        enter = np.nonzero((d > PRICE_TOL) & ~in_lp)[0]
        if len(enter) == 0:
            break
        rounds += 1
        if rounds > MAX_ROUNDS:
            enter = np.nonzero(~in_lp)[0]
        else:
            row = f.pair_row[np.clip(enter - K, 0, max(Q - 1, 0))]
            order = np.lexsort((-d[enter], row))
            enter, row = enter[order], row[order]
            first = np.searchsorted(row, row, side="left")
            enter = np.sort(enter[np.arange(len(enter)) - first < PER_ROW])
        sub = f.A[:, enter]
        sub.sort_indices()
        k = len(enter)
        h.addCols(
            k, f.c[enter], np.zeros(k), f.col_upper[enter], int(sub.nnz),
            sub.indptr[:-1].astype(np.int32), sub.indices.astype(np.int32),
            sub.data.astype(np.float64),
        )  # fmt: skip
        pick = np.r_[pick, enter]
        in_lp[enter] = True
        added += k
        opts = session.remaining(session.options)
        opts = opts.replace(highs_options={"simplex_strategy": 4, **opts.highs_options})
        view = live.solve(opts, M.LP_METHOD, "priced")

    with session.timer("load_s"):
        raw = view.raw
        if not raw.status.has_solution or raw.x is None:
            return None
        x = np.zeros(f.num_cols)
        x[pick] = raw.x
        z = float(x[zc])
        allocation, jobs, thr_eff, info = colocation_tables(arr, lay, x[:K], x[K : K + Q])
        info.update(
            {
                "lp_strategy": "column_generation",
                "pricing_rounds": rounds,
                "columns_generated": added,
                "lp_columns": int(in_lp[: K + Q].sum()),
                "pair_columns_full": K + Q,
            }
        )
        scale = lp.scale
        optimal = raw.status == Status.OPTIMAL and certified
        value, status, term = reader.read(arr, jobs, thr_eff, z, scale, optimal, info)
        tables = {"allocation": allocation, "jobs": jobs}
        if status is not None:  # makespan: some job cannot progress
            return Outcome(None, tables, info, status, term, None, None)
        if not optimal or bound is None or value is None:
            return Outcome(value, tables, info, raw.status, raw.termination, None, None)
        z_bound = max(bound, z)
        proven = scale / z_bound if objective == "makespan" else z_bound / scale
        gap = abs(proven - value) / max(abs(proven), abs(value), 1e-12)
        status = Status.OPTIMAL if gap <= 1e-9 else Status.FEASIBLE
        term = raw.termination if status == Status.OPTIMAL else "pricing gap above 1e-9"
        return Outcome(value, tables, info, status, term, proven, gap)
