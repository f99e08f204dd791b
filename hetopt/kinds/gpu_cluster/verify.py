"""Independent verifier for ``gpu_cluster`` allocations.

It reads only the instance and the ``allocation`` table (never the Pyomo model) and
re-derives everything: time shares, capacities, eligibility and the objective.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ...contract import frame_blocks
from ...result import Verification
from .data import ClusterArrays, GpuClusterInstance

ABS_TOL = 1e-7
REL_TOL = 1e-6


def allocation_matrix(arr: ClusterArrays, allocation: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """Jobs x types matrix of time fractions from an allocation table (solo rows only)."""
    problems: list[str] = []
    X = np.zeros((arr.num_jobs, len(arr.types)))
    if 0 in allocation.shape:  # (``allocation.empty``)
        return X, ["the allocation table is empty"]
    solo = _solo_columns(allocation)
    if solo is not None:
        matched = _pair_codes(arr, solo[0], solo[1])
        if matched is not None:
            return _pairs_matrix(arr, X, matched, solo[2])
    df = allocation
    if "other_job" in df.columns:
        df = df[df["other_job"].fillna("").astype(str) == ""]
    # integer codes (-1: unknown), not a Python mapping per row: implied by the table's
    # layout and checked row by row, else by hash lookup
    codes, types = _lookup_pairs(arr, df["job"], df["worker_type"])
    bad = (codes < 0) | (types < 0)
    n, T = X.shape
    jobs, frac = codes, df["fraction"].to_numpy(dtype=float)
    if bad.any():
        problems.append(f"{int(bad.sum())} allocation row(s) name an unknown job or worker type")
        ok = ~bad
        jobs, types, frac = jobs[ok], types[ok], frac[ok]
    X += np.bincount(jobs * T + types, weights=frac, minlength=n * T).reshape(n, T)
    all_codes = codes if df is allocation else _lookup_jobs(arr, allocation["job"])
    seen = np.zeros(arr.num_jobs, dtype=bool)
    seen[all_codes[all_codes >= 0]] = True
    if not seen.all():
        missing = [arr.job_ids[i] for i in np.nonzero(~seen)[0]]
        problems.append(
            f"{len(missing)} job(s) missing from the allocation, e.g. {sorted(missing)[:3]}"
        )
    return X, problems


def _lookup_pairs(
    arr: ClusterArrays, job: pd.Series, worker_type: pd.Series
) -> tuple[np.ndarray, np.ndarray]:
    """Positions of every row's job among the instance's job ids and of its worker type
    among its types (-1: unknown): :func:`_pair_codes`, else :func:`_lookup_jobs` and
    a lookup of the types."""
    codes = _pair_codes(arr, job, worker_type)
    if codes is not None:
        return codes
    jobs = _lookup_jobs(arr, job)
    types = np.asarray(pd.Index(arr.types).get_indexer(_as_str(worker_type)), np.int64)
    return jobs, types


def _pair_codes(
    arr: ClusterArrays, job: pd.Series | np.ndarray, worker_type: pd.Series | np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """The codes of a table with one row per (job, type) pair of positive throughput,
    job-major (as the methods write it), found by comparing each row with the pair at
    its position (one vectorised comparison per column, not a hash lookup per row);
    ``None`` for any other table. A returned code is exactly what a lookup gives (the
    ids are unique). The columns: Series, or their values as :func:`_objects` gives them."""
    jobs, types = positive_pairs(arr)
    if len(jobs) != len(job) or len(types) != len(worker_type):
        return None
    if not _equal_at(job_id_objects(arr), jobs, _objects(job)):
        return None
    if not _equal_at(_names(arr.types), types, _objects(worker_type)):
        return None
    return jobs, types


def _pairs_matrix(
    arr: ClusterArrays, X: np.ndarray, codes: tuple[np.ndarray, np.ndarray], frac: np.ndarray
) -> tuple[np.ndarray, list[str]]:
    """:func:`allocation_matrix` of a table whose rows are the positive pairs
    (:func:`_pair_codes`): every row names a known job and type, each pair once, so ``X``
    is the fractions put in place (``+ 0.0``: the sum the general path's ``bincount``
    makes of one value, bit for bit, ``-0.0`` included), and the jobs missing are those
    without a pair."""
    jobs = codes[0]  # (the positive pairs: their flat positions are known)
    X.reshape(-1)[pair_positions(arr)] = frac + 0.0
    problems: list[str] = []
    # (ascending, each job's pairs in one run: every job is there when there are as many
    # runs as jobs)
    if len(jobs) and np.count_nonzero(jobs[1:] != jobs[:-1]) + 1 == arr.num_jobs:
        return X, problems
    seen = np.zeros(arr.num_jobs, dtype=bool)
    seen[jobs] = True
    if not seen.all():
        missing = [arr.job_ids[i] for i in np.nonzero(~seen)[0]]
        problems.append(
            f"{len(missing)} job(s) missing from the allocation, e.g. {sorted(missing)[:3]}"
        )
    return X, problems


def _solo_columns(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The ``job`` and ``worker_type`` columns' values as object arrays (as :func:`_objects`
    gives them) and ``fraction`` as float64 values, read from the frame's block manager
    once (three ``df[col]`` Series cost ~40 us, measured); ``None`` (the general path) for
    a table with ``other_job`` rows, repeated column names, or columns of other types."""
    labels = df.columns
    names = labels.tolist()
    if all(type(c) is str for c in names):
        # (string labels: a list's membership, a set's size and positions by name answer
        # as the index's lookups do)
        where = {c: i for i, c in enumerate(names)}
        if "other_job" in where or len(where) != len(names):
            return None
        at: Callable[[str], Any] = where.__getitem__
    else:
        if "other_job" in labels or not labels.is_unique:
            return None
        at = labels.get_loc
    stored = _stored_columns(df)
    try:
        job, worker_type, fraction = (stored[at(c)] for c in ("job", "worker_type", "fraction"))
    except (KeyError, TypeError):
        return None
    if not (type(fraction) is np.ndarray and fraction.dtype == np.float64):
        return None
    if fraction.ndim != 1 or len(fraction) != len(df):
        return None
    names = tuple(_held_objects(v, len(df)) for v in (job, worker_type))
    if names[0] is None or names[1] is None:
        return None
    return names[0], names[1], fraction


def _stored_columns(df: pd.DataFrame) -> dict[Any, Any]:
    """Each column's values as the frame stores them (what its block manager's
    ``iget_values`` gives: an extension array, or a row of a 2-d numpy block), by
    position, read from the blocks and their placements (:func:`hetopt.contract.frame_blocks`;
    a new frame's column-to-block map is built on first use, ~10-35 us, measured; this
    walks its few blocks). Empty for a frame without a block manager."""
    out: dict[Any, Any] = {}
    for locs, blk in frame_blocks(df):
        values = blk.values
        if getattr(values, "ndim", 0) == 1:  # an extension array: one column
            if len(locs) == 1:
                out[locs[0]] = values
        else:
            for k, i in enumerate(locs):
                out[i] = values[k]
    return out


def _held_objects(values: Any, rows: int) -> np.ndarray | None:
    """:func:`_objects` of a column stored as ``values``: a pandas string array (python
    storage) or an object array, read in place; ``None`` for others."""
    if type(values) is pd.arrays.StringArray or (
        type(values) is np.ndarray and values.dtype == object
    ):
        held = np.asarray(values)
        if held.dtype == object and held.ndim == 1 and len(held) == rows:
            return held
    return None


def _names(values: list[str]) -> np.ndarray:
    """``values`` (ids or type names) as an object array."""
    return np.asarray(values, dtype=object)


def _objects(column: pd.Series | np.ndarray) -> np.ndarray:
    """``column.to_numpy(dtype=object)`` for comparing with :func:`_equal_at`: the
    values the column holds, as an object array. A column of pandas's string array (or
    of objects) is read in place (``np.asarray`` of its array: the array it keeps, no
    copy of every reference); other columns are converted as ``to_numpy`` does. An
    object array (:func:`_solo_columns`' values) is itself."""
    if isinstance(column, np.ndarray):
        if column.dtype == object and column.ndim == 1:
            return column
        return column.astype(object)
    values = np.asarray(column.array)
    if values.dtype != object or values.ndim != 1 or len(values) != len(column):
        return column.to_numpy(dtype=object)
    return values


def job_id_objects(arr: ClusterArrays) -> np.ndarray:
    """``arr.job_ids`` as a read-only object array (the id strings themselves), made once
    per arrays (:meth:`~.data.ClusterArrays.derived`); a
    :class:`~.persistent.PersistentPolicy` gives the arrays it derives theirs
    (:func:`set_job_id_objects`)."""
    return arr.derived("job_id_objects", _id_objects)


def _id_objects(arr: ClusterArrays) -> np.ndarray:
    ids = np.fromiter(arr.job_ids, dtype=object, count=len(arr.job_ids))
    ids.flags.writeable = False
    return ids


def set_job_id_objects(arr: ClusterArrays, ids: np.ndarray) -> None:
    """Give ``arr`` its :func:`job_id_objects`: an object array holding exactly
    ``arr.job_ids``' strings, in order (made read-only here)."""
    ids.flags.writeable = False
    arr.give("job_id_objects", ids)


def _equal_at(names: np.ndarray, at: np.ndarray, values: np.ndarray) -> bool:
    """Whether every ``values[k]`` equals ``names[at[k]]`` (``values``: an object array
    as long as ``at``), as Python's containers and pandas's lookup compare: the same
    object is equal to itself (``PyObject_RichCompareBool``), others by ``==``. A table
    made by taking the instance's own strings holds the very objects, so the objects'
    addresses are compared first, vectorised; only the rows that differ are compared as
    values (for the ids and type names, strings, exactly ``names[at] == values``)."""
    try:
        # (an object array's buffer holds its objects' addresses)
        address = np.frombuffer(np.ascontiguousarray(names), dtype=np.intp)
        same = address.take(at) == np.frombuffer(np.ascontiguousarray(values), dtype=np.intp)
    except (TypeError, ValueError, BufferError):  # pragma: no cover - not object arrays
        return bool((names.take(at) == values).all())
    if same.all():
        return True
    rest = np.flatnonzero(~same)
    return bool((names.take(at[rest]) == values[rest]).all())


def positive_pairs(arr: ClusterArrays) -> tuple[np.ndarray, np.ndarray]:
    """``np.nonzero(arr.thr > 0)`` as int64 arrays (job-major: the (job, type) pairs of
    positive throughput), computed once per arrays (which never change) and read-only."""
    return _positive_pairs(arr)[:2]


def pair_positions(arr: ClusterArrays) -> np.ndarray:
    """The flat positions ``job * T + type`` in a jobs x types matrix of
    :func:`positive_pairs` (read-only, made with them)."""
    return _positive_pairs(arr)[2]


def _positive_pairs(arr: ClusterArrays) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return arr.derived("positive_pairs", _pairs_of)


def _pairs_of(arr: ClusterArrays) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # (the flat positions, then divided: a third of 2-d nonzero's time at 20,000 x 8)
    T = arr.thr.shape[1]
    flat = (arr.thr > 0).reshape(-1).nonzero()[0].astype(np.int64, copy=False)
    if T:
        job = flat // T
        typ = job * T
        np.subtract(flat, typ, out=typ)  # (flat - job * T)
    else:  # pragma: no cover - no types: no pairs
        job, typ = flat.copy(), flat.copy()
    for a in (job, typ, flat):
        a.flags.writeable = False
    return job, typ, flat


def _lookup_jobs(arr: ClusterArrays, column: pd.Series) -> np.ndarray:
    """Position of every value of ``column`` among the instance's job ids (-1: unknown)."""
    codes = _job_codes(job_id_objects(arr), column)
    if codes is None:
        codes = np.asarray(pd.Index(arr.job_ids).get_indexer(_as_str(column)), dtype=np.int64)
    return codes


def _job_codes(job_ids: Any, column: pd.Series) -> np.ndarray | None:
    """Positions in ``job_ids`` (unique) of every value of ``column`` when the column lists
    the ids in order, each as a run of rows (a job-major table, as the methods write);
    ``None`` (look them up) otherwise. Every row is compared with the id at its guessed
    position, so a returned code is exactly what a lookup gives."""
    values = _objects(column)
    ids = np.asarray(job_ids, dtype=object)
    if len(values) == 0 or len(ids) == 0:
        return None
    start = np.empty(len(values), dtype=bool)
    start[0] = True
    np.not_equal(values[1:], values[:-1], out=start[1:])
    codes = np.cumsum(start, dtype=np.int64) - 1
    if codes[-1] != len(ids) - 1 or not _equal_at(ids, codes, values):
        return None
    return codes


def _as_str(column: pd.Series) -> Any:
    """``column.astype(str)``; a column of strings only as it is (a C-level scan instead
    of a copy)."""
    if pd.api.types.infer_dtype(column, skipna=False) == "string":
        return column
    return column.astype(str)


def check_allocation(
    arr: ClusterArrays,
    X: np.ndarray,
    extra_usage: np.ndarray | None = None,
    extra_share: np.ndarray | None = None,
) -> list[str]:
    """Feasibility checks on a solo allocation matrix (plus shared GPUs' usage and time)."""
    problems: list[str] = []
    # (the least entry, read once, decides both the sign test and the capacity bound's
    # precondition; a NaN in it: ``X < -ABS_TOL`` itself)
    low = X.min() if X.dtype == np.float64 and X.size else None
    if (X < -ABS_TOL).any() if low is None or low != low else low < -ABS_TOL:
        i, t = np.argwhere(X < -ABS_TOL)[0]
        problems.append(
            f"negative fraction {X[i, t]:.3g} for job {arr.job_ids[i]} on {arr.types[t]}"
        )
    share = row_sums(X)
    if extra_share is not None:
        share = share + extra_share
    # (the largest share decides when it is a number: a NaN one, ``share > 1 + REL_TOL``)
    top = share.max() if len(share) else np.nan
    if (share > 1 + REL_TOL).any() if top != top else top > 1 + REL_TOL:
        over = share > 1 + REL_TOL
        i = int(np.argmax(share))
        problems.append(
            f"{int(over.sum())} job(s) get more than 100% of the time, e.g. job {arr.job_ids[i]}: {share[i]:.9f}"
        )
    limit = arr.workers * (1 + REL_TOL) + ABS_TOL
    if extra_usage is not None or not _within_capacity(arr.scale, X, limit, low):
        used = gpus_used(arr.scale, X)
        if extra_usage is not None:
            used = used + extra_usage
        for t in np.nonzero(used > limit)[0]:
            problems.append(
                f"worker type {arr.types[t]}: {used[t]:.6f} GPUs used > {arr.workers[t]:g} present"
            )
    # (``((~allowed) & (X > ABS_TOL)).any()``: a pair above the tolerance is allowed)
    if not np.less_equal(X > ABS_TOL, arr.allowed).all():
        forbidden = (~arr.allowed) & (X > ABS_TOL)
        i, t = np.argwhere(forbidden)[0]
        problems.append(
            f"job {arr.job_ids[i]} runs on {arr.types[t]} where it cannot (zero throughput or "
            f"fewer than scale_factor GPUs)"
        )
    return problems


def gpus_used(scale: np.ndarray, X: np.ndarray) -> np.ndarray:
    """The GPUs of each type an allocation uses: ``(scale[:, None] * X).sum(axis=0)``
    (numpy's sum over the rows of a C-ordered matrix: one row after the other, from 0.0)."""
    return (scale[:, None] * X).sum(axis=0)


_EPS = float(np.finfo(np.float64).eps)


def _within_capacity(scale: np.ndarray, X: np.ndarray, limit: np.ndarray, low: Any) -> bool:
    """Whether every type's :func:`gpus_used` is surely ``<= limit``, decided from
    ``scale @ X`` (one BLAS product, a tenth of the row-by-row sum's time at 2,000 x 3,
    measured) and a bound on how far the two sums may differ; ``False`` (compute the
    sum) when that cannot be decided, or the entries are not all non-negative (NaN
    included; ``low``: ``X.min()``, or ``None`` when not read).

    Both sums add the same ``n`` products (each rounded, or fused, at most one unit of
    roundoff ``u`` off), in some order: each is within ``(n + 1) u`` times the sum of the
    products' magnitudes of the exact sum, so within ``2 (n + 2) u S`` of each other (``S``:
    the exact sum of the non-negative products, at most ``scale @ X`` times
    ``1 / (1 - (n + 1) u)``). Allowed here: ``4 (n + 4) eps`` times ``scale @ X``
    (``eps = 2u``: about four times that, which also covers the roundings of this
    test's own two operations), plus ``1e-300`` for products below the normal range. An
    answer ``True`` is then exact: the row-by-row sum is ``<= limit`` too, so its verdict
    (and its absence of messages) is the one the sum would give (a bound that overflows
    is ``inf``: not ``<= limit``)."""
    n = len(scale)
    if X.ndim != 2 or X.dtype != np.float64 or scale.dtype != np.float64 or scale.ndim != 1:
        return False
    if n == 0 or X.shape[0] != n or X.size == 0 or n * _EPS > 1e-6:
        return False
    if low is None or not (low >= 0.0 and scale.min() >= 0.0):
        return False
    factor = 1.0 + 4.0 * (n + 4) * _EPS
    # (Python floats: the same IEEE products and sums as numpy's, a type at a time)
    high, top = (scale @ X).tolist(), limit.tolist()
    if len(high) != len(top):  # (the sum's own error is raised)
        return False
    return all(h * factor + 1e-300 <= m for h, m in zip(high, top, strict=True))


def effective_throughput(arr: ClusterArrays, X: np.ndarray) -> np.ndarray:
    """Each job's throughput ``(thr * max(X, 0)).sum(axis=1)`` (:func:`row_sums`; writing
    the products type-major instead of the transposed copy was slower, measured).
    ``np.maximum(X, 0)`` is what ``np.clip(X, 0, None)`` computes (without its Python
    wrapper), and the products are written over it when it is a new float matrix of
    ``thr``'s shape (the same products, ``thr`` the first operand)."""
    Y = np.maximum(X, 0)
    if Y.dtype == np.float64 and Y.shape == arr.thr.shape and arr.thr.dtype == np.float64:
        return row_sums(np.multiply(arr.thr, Y, out=Y))
    return row_sums(arr.thr * Y)


def row_sums(M: np.ndarray) -> np.ndarray:
    """``M.sum(axis=1)`` of a 2-d float array, bit for bit: with fewer than 8 columns
    numpy adds a row's entries one after the other to 0.0, and so does this, a column at a time
    (a reduction over a short axis costs ~20 ns an entry, the column adds a tenth:
    tests/kinds/gpu_cluster/test_verify_codes.py compares the two); with 8 to 127 see
    :func:`_pairwise_row_sums`."""
    n, T = M.shape
    if T == 0 or T >= 128 or M.dtype != np.float64:
        return M.sum(axis=1)
    if T >= 8:
        return _pairwise_row_sums(M)
    out = np.zeros(n)  # (from 0.0, as numpy: a row of -0.0 sums to 0.0)
    for t in range(T):
        out += M[:, t]
    return out


def _pairwise_row_sums(M: np.ndarray) -> np.ndarray:
    """``M.sum(axis=1)`` for 8 <= ``T`` < 128 columns, bit for bit, on the transposed
    copy a row at a time (half the time of numpy's short-axis reduction at 20,000 x 8,
    measured): numpy's pairwise sum of a row that short keeps 8 partial sums ``r[j]``
    (entries ``j``, ``j + 8``, ... of the first ``T - T % 8``), adds them as
    ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))``, then the last ``T % 8``
    entries one by one, and adds that to 0.0."""
    return _pairwise_rows(M.T.copy())


def _pairwise_rows(rows: np.ndarray) -> np.ndarray:
    """:func:`_pairwise_row_sums` of ``M`` given as ``M.T`` in C order (a new array:
    its first rows may be added to in place)."""
    T = rows.shape[0]
    full = T - T % 8
    r = rows[:8]  # (rows 8 on are only read)
    for i in range(8, full, 8):
        r += rows[i : i + 8]
    out = r[0] + r[1]
    out += r[2] + r[3]
    rest = r[4] + r[5]
    rest += r[6] + r[7]
    out += rest
    for i in range(full, T):
        out += rows[i]
    out += 0.0  # (0.0 + the sum: a row of -0.0 sums to 0.0, as numpy's)
    return out


def proportional_throughput(arr: ClusterArrays) -> np.ndarray:
    """``arr.proportional_throughput()`` (Gavel's ``p_i``), computed once per arrays
    (which never change) and read-only."""
    return arr.derived("proportional_throughput", _proportional)


def _proportional(arr: ClusterArrays) -> np.ndarray:
    p = arr.proportional_throughput()
    p.flags.writeable = False
    return p


def fairness_weights(arr: ClusterArrays) -> np.ndarray:
    """``arr.weight * p`` (:func:`proportional_throughput`): a job's normalised throughput
    is ``scale * throughput / (weight * p)``; computed once per arrays, read-only."""
    return arr.derived("fairness_weights", _fairness)


def _fairness(arr: ClusterArrays) -> np.ndarray:
    w = arr.weight * proportional_throughput(arr)
    w.flags.writeable = False
    return w


def max_min_value(arr: ClusterArrays, X: np.ndarray, extra_thr: np.ndarray | None = None) -> float:
    thr = effective_throughput(arr, X)  # (never -0.0: + 0.0 would change nothing)
    if extra_thr is not None:
        thr = thr + extra_thr
    vals = arr.scale * thr / fairness_weights(arr)
    return float(vals.min())


def makespan_value(arr: ClusterArrays, X: np.ndarray, extra_thr: np.ndarray | None = None) -> float:
    thr = effective_throughput(arr, X) + (0.0 if extra_thr is None else extra_thr)
    with np.errstate(divide="ignore"):
        finish = np.where(thr > 0, arr.steps / np.where(thr > 0, thr, 1), np.inf)
    return float(finish.max())


def pair_usage(
    instance: GpuClusterInstance, allocation: pd.DataFrame
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Throughput, time and GPUs of the co-located rows (``other_job`` not empty).

    Each pair must appear from both sides with the same fraction, share a scale factor,
    and have a co-location entry with positive throughputs for its job types on that
    worker type; the GPUs of a pair are counted once.
    """
    arr = instance.arrays
    n, T = arr.num_jobs, len(arr.types)
    thr = np.zeros(n)
    share = np.zeros(n)
    gpus = np.zeros(T)
    problems: list[str] = []
    rates: dict[tuple[str, str, str, int], float] = {}
    for e in instance.colocation or []:
        a, b = e.job_types
        ta, tb = e.throughput
        if ta > 0 and tb > 0:
            if a == b:
                rates[(e.worker_type, a, a, e.scale_factor)] = 0.5 * (ta + tb)
            else:
                rates[(e.worker_type, a, b, e.scale_factor)] = ta
                rates[(e.worker_type, b, a, e.scale_factor)] = tb
    job_pos = {j: i for i, j in enumerate(arr.job_ids)}
    type_pos = {t: k for k, t in enumerate(arr.types)}
    other = allocation["other_job"].fillna("").astype(str)
    rows = allocation[other != ""]
    seen: dict[tuple[str, str, str], float] = {}
    for job, wt, oth, f in zip(
        rows["job"].astype(str), rows["worker_type"].astype(str), rows["other_job"].astype(str),
        rows["fraction"].astype(float), strict=True,
    ):  # fmt: skip
        if job not in job_pos or oth not in job_pos or wt not in type_pos:
            problems.append(f"pair row {job}/{oth} on {wt} names an unknown job or type")
            continue
        if job == oth:
            problems.append(f"job {job} is paired with itself")
            continue
        i, j, w = job_pos[job], job_pos[oth], type_pos[wt]
        if f < -ABS_TOL:
            problems.append(f"negative pair fraction for {job}/{oth} on {wt}")
        ji, jj = instance.jobs[i], instance.jobs[j]
        if ji.scale_factor != jj.scale_factor:
            problems.append(f"jobs {job} and {oth} share GPUs with different scale factors")
            continue
        if arr.workers[w] < ji.scale_factor:
            problems.append(f"pair {job}/{oth} needs {ji.scale_factor} GPUs of {wt}")
        key = (wt, ji.job_type or "", jj.job_type or "", ji.scale_factor)
        if key not in rates:
            problems.append(f"no usable colocation entry for {key[1]!r} + {key[2]!r} on {wt}")
            continue
        thr[i] += f * rates[key]
        share[i] += f
        gpus[w] += 0.5 * f * ji.scale_factor  # each pair has one row per side
        seen[(job, oth, wt)] = seen.get((job, oth, wt), 0.0) + f
    for (job, oth, wt), f in seen.items():
        back = seen.get((oth, job, wt))
        if back is None or not np.isclose(back, f, rtol=1e-9, atol=1e-12):
            problems.append(f"pair {job}/{oth} on {wt} is not reported from both sides equally")
            break
    return thr, share, gpus, problems


def _best(arr: ClusterArrays) -> np.ndarray:
    return np.where(arr.allowed, arr.thr, 0.0).max(axis=1)


def normalized_throughput(arr: ClusterArrays, X: np.ndarray) -> np.ndarray:
    """``weight_i * thr_i(X) / best_i`` (1 = full time on the job's fastest usable type)."""
    return arr.weight * effective_throughput(arr, X) / _best(arr)


def cost_per_hour(arr: ClusterArrays, X: np.ndarray, cost: np.ndarray) -> float:
    """Dollars per hour the allocation pays: ``sum_{i,t} cost[t] * scale_i * X[i,t]``."""
    return float((arr.scale[:, None] * np.clip(X, 0, None) * cost[None, :]).sum())


def throughput_per_dollar(arr: ClusterArrays, X: np.ndarray, cost: np.ndarray) -> float:
    paid = cost_per_hour(arr, X, cost)
    total = float(normalized_throughput(arr, X).sum())
    return total / paid if paid > 0 else 0.0


def _entity_weights(instance: GpuClusterInstance) -> np.ndarray:
    # written out again on purpose (not shared with the solver): entity weight split over
    # the entity's jobs in proportion to their own weights
    weights = [j.weight for j in instance.jobs]
    totals: dict[str, float] = {}
    for j in instance.jobs:
        if j.entity is not None:
            totals[j.entity] = totals.get(j.entity, 0.0) + j.weight
    ew = instance.entity_weights or {}
    out = []
    for j, w in zip(instance.jobs, weights, strict=True):
        out.append(w if j.entity is None else ew.get(j.entity, 1.0) * w / totals[j.entity])
    return np.array(out)


def _ftf_value(instance: GpuClusterInstance, X: np.ndarray) -> float:
    arr = instance.arrays
    elapsed = np.array([j.time_elapsed_s or 0.0 for j in instance.jobs])
    W = arr.workers.sum()
    share = np.minimum(1.0, W / (arr.num_jobs * arr.scale))
    iso = np.zeros(arr.num_jobs)
    for t in range(len(arr.types)):
        iso += np.where(arr.allowed[:, t], arr.thr[:, t], 0.0) * arr.workers[t] / W * share
    thr = effective_throughput(arr, X)
    if (thr <= 0).any():
        return float("inf")
    ratio = (elapsed + arr.steps / thr) / (elapsed + arr.steps / iso)
    return float(ratio.max())


def _check_deadlines(
    instance: GpuClusterInstance, X: np.ndarray, jobs: pd.DataFrame | None
) -> list[str]:
    arr = instance.arrays
    thr = effective_throughput(arr, X)
    problems = []
    claimed: dict[str, bool] = {}
    if jobs is not None and "deadline_met" in jobs.columns:
        claimed = dict(zip(jobs["job"].astype(str), jobs["deadline_met"].astype(bool), strict=True))
    for i, j in enumerate(instance.jobs):
        if j.deadline_s is None:
            continue
        finish = arr.steps[i] / thr[i] if thr[i] > 0 else float("inf")
        met = finish <= j.deadline_s * (1 + 1e-5)
        if j.id not in claimed:
            problems.append(f"job {j.id} has an SLO but the jobs table does not say if it is met")
        elif claimed[j.id] and not met:
            problems.append(
                f"job {j.id}: SLO reported met but finishes at {finish:.6g} s > {j.deadline_s} s"
            )
    return problems


# ------------------------------------------------------------------ objectives
# each recomputes one objective from the allocation (and may add checks of its own)
def _max_min(inst: GpuClusterInstance, X: np.ndarray, pair_thr: Any, *_: Any) -> float:
    return max_min_value(inst.arrays, X, pair_thr)


def _makespan(inst: GpuClusterInstance, X: np.ndarray, pair_thr: Any, *_: Any) -> float:
    return makespan_value(inst.arrays, X, pair_thr)


def _water_filling(inst: GpuClusterInstance, X: np.ndarray, *_: Any) -> float:
    arr = inst.arrays
    p = arr.proportional_throughput()
    w = _entity_weights(inst)
    return float((arr.scale * effective_throughput(arr, X) / (w * p)).min())


def _finish_time(inst: GpuClusterInstance, X: np.ndarray, *_: Any) -> float:
    return _ftf_value(inst, X)


def _total_throughput(inst: GpuClusterInstance, X: np.ndarray, *_: Any) -> float:
    return float(normalized_throughput(inst.arrays, X).sum())


def _min_cost(
    inst: GpuClusterInstance,
    X: np.ndarray,
    pair_thr: Any,
    jobs: pd.DataFrame | None,
    problems: list[str],
    checks: list[str],
) -> float:
    arr = inst.arrays
    cost = np.array([(inst.cost_per_hour or {}).get(t, 0.0) for t in arr.types])
    value = throughput_per_dollar(arr, X, cost)
    problems += _check_deadlines(inst, X, jobs)
    checks.append("deadlines")
    return value


_OBJECTIVES: dict[str, Callable[..., float]] = {
    "max_min_fairness": _max_min,
    "makespan": _makespan,
    "max_min_fairness_water_filling": _water_filling,
    "finish_time_fairness": _finish_time,
    "max_total_throughput": _total_throughput,
    "min_cost": _min_cost,
}


def verify(
    instance: GpuClusterInstance,
    objective: str,
    objective_value: float | None,
    allocation: pd.DataFrame,
    jobs: pd.DataFrame | None = None,
) -> Verification:
    arr = instance.arrays
    X, problems = allocation_matrix(arr, allocation)
    checks = ["jobs_present", "nonnegative", "time_share", "capacity", "eligibility"]
    pair_thr = pair_share = pair_gpus = None
    if "other_job" in allocation.columns:
        pair_thr, pair_share, pair_gpus, pp = pair_usage(instance, allocation)
        problems += pp
        checks.append("colocation_pairs")
    problems += check_allocation(arr, X, pair_gpus, pair_share)
    value: float | None = None
    recompute = _OBJECTIVES.get(objective)
    if recompute is not None:
        value = recompute(instance, X, pair_thr, jobs, problems, checks)
    if value is not None:
        checks.append("objective")
        if objective_value is None or not _close(value, objective_value, 1e-5, 1e-9):
            problems.append(f"objective recomputed as {value:.9g}, result says {objective_value}")
    return Verification(
        ok=not problems, objective_value=value, violations=tuple(problems), checks=tuple(checks)
    )


def _close(a: float, b: float, rtol: float, atol: float) -> bool:
    """``np.isclose(a, b, rtol=rtol, atol=atol)`` of two numbers (its formula for finite
    ones, ``|a - b| <= atol + rtol * |b|``, without numpy's array set-up: ~20 us)."""
    a, b = float(a), float(b)
    if math.isfinite(a) and math.isfinite(b):
        return abs(a - b) <= atol + rtol * abs(b)
    return bool(np.isclose(a, b, rtol=rtol, atol=atol))


# ------------------------------------------------------------------ elastic (Lyra)
# written from the instance fields on purpose (not from the solver's option arrays)
def _job_rate(job: Any, worker_type: str, workers: int) -> float | None:
    """Throughput of ``job`` with ``workers`` GPUs of ``worker_type`` (``None``: not one
    of its options)."""
    if job.elastic is not None:
        if workers not in job.elastic.workers or worker_type not in job.elastic.throughput:
            return None
        v = job.elastic.throughput[worker_type][job.elastic.workers.index(workers)]
    else:
        if workers != job.scale_factor:
            return None
        v = (job.throughput or {}).get(worker_type, 0.0)
    return float(v) if v > 0 else None


def verify_max_progress(instance: GpuClusterInstance, result: Any) -> Verification:
    """``elastic_allocation``: one row per job, each a (type, workers) option of the job or
    nothing; GPUs per type within ``workers + loanable``; the objective recomputed as
    ``sum 3600 * weight * throughput / steps_remaining``; the ``capacity`` table agrees."""
    problems: list[str] = []
    checks = ["jobs_present", "options", "capacity", "objective"]
    alloc = result.tables.get("elastic_allocation")
    if alloc is None:
        return Verification(ok=False, violations=("the result has no elastic_allocation table",))
    jobs = {j.id: j for j in instance.jobs}
    ids = alloc["job"].astype(str).tolist()
    if sorted(ids) != sorted(jobs):
        missing = sorted(set(jobs) - set(ids))
        extra = sorted(set(ids) - set(jobs))
        problems.append(
            f"elastic_allocation must list every job once (missing {missing[:3]}, "
            f"unknown or repeated {extra[:3] or [j for j in ids if ids.count(j) > 1][:3]})"
        )
    loan = instance.loanable or {}
    used = dict.fromkeys(instance.workers, 0)
    value = 0.0
    for row in alloc.itertuples(index=False):
        job = jobs.get(str(row.job))
        if job is None:
            continue
        w, t = int(row.workers), str(row.worker_type or "")
        if w == 0:
            if t or abs(float(row.throughput)) > ABS_TOL:
                problems.append(f"job {job.id} waits but has a worker type or a throughput")
            continue
        if t not in used:
            problems.append(f"job {job.id} runs on unknown worker type {t!r}")
            continue
        rate = _job_rate(job, t, w)
        if rate is None:
            problems.append(f"job {job.id}: {w} x {t} is not one of its options")
            continue
        if not np.isclose(float(row.throughput), rate, rtol=1e-9, atol=1e-12):
            problems.append(f"job {job.id}: throughput {row.throughput} but {w} x {t} gives {rate}")
        used[t] += w
        steps = job.steps_remaining
        if steps is None:
            problems.append(f"job {job.id} has no steps_remaining")
            continue
        value += 3600.0 * job.weight * rate / steps
    for t, n in used.items():
        if n > instance.workers[t] + loan.get(t, 0):
            problems.append(
                f"worker type {t}: {n} GPUs used > {instance.workers[t]} owned + "
                f"{loan.get(t, 0)} loanable"
            )
    cap = result.tables.get("capacity")
    if cap is not None:
        checks.append("capacity_table")
        for row in cap.itertuples(index=False):
            t = str(row.worker_type)
            if t not in used:
                problems.append(f"capacity table names unknown type {t!r}")
            elif int(row.used) != used[t] or int(row.borrowed) != max(
                0, used[t] - instance.workers[t]
            ):
                problems.append(f"capacity table disagrees with the allocation on {t}")
    if result.objective_value is None or not np.isclose(
        value, result.objective_value, rtol=1e-6, atol=1e-12
    ):
        problems.append(
            f"objective recomputed as {value:.9g}, result says {result.objective_value}"
        )
    return Verification(
        ok=not problems, objective_value=value, violations=tuple(problems), checks=tuple(checks)
    )


def verify_reclaim(instance: GpuClusterInstance, result: Any) -> Verification:
    """``loaned_servers``: as many servers returned as requested (``info``), of the
    requested type; ``reclaim_jobs``: each job's lost GPUs, the largest worker count it
    can keep (elastic) or preemption, and the objective recomputed."""
    problems: list[str] = []
    checks = ["servers", "jobs", "objective"]
    servers = result.tables.get("loaned_servers")
    jobs_t = result.tables.get("reclaim_jobs")
    if servers is None or jobs_t is None:
        return Verification(
            ok=False, violations=("the result needs the loaned_servers and reclaim_jobs tables",)
        )
    loaned = {s.id: s for s in instance.loaned_servers or []}
    if sorted(servers["server"].astype(str)) != sorted(loaned):
        problems.append("loaned_servers must list every loaned server once")
    back = [str(s) for s, r in zip(servers["server"], servers["returned"], strict=True) if r]
    want = result.info.get("servers_requested")
    if want is None:
        problems.append("the result does not say how many servers were requested")
    elif len(back) != int(want):
        problems.append(f"{len(back)} servers returned, {want} requested")
    only = result.info.get("server_type")
    sigma = float(result.info.get("shrink_cost") or 0.0)
    lost: dict[str, int] = {}
    on: dict[str, int] = {}
    wtype: dict[str, str] = {}
    for sid, srv in loaned.items():
        if sid in back and only is not None and srv.worker_type != only:
            problems.append(f"server {sid} is of type {srv.worker_type}, not {only}")
        for j, g in srv.jobs.items():
            on[j] = on.get(j, 0) + g
            wtype[j] = srv.worker_type
            if sid in back:
                lost[j] = lost.get(j, 0) + g
    rows = {str(r.job): r for r in jobs_t.itertuples(index=False)}
    if sorted(rows) != sorted(j.id for j in instance.jobs) or len(jobs_t) != len(instance.jobs):
        problems.append("reclaim_jobs must list every job once")
    total = 0.0
    for job in instance.jobs:
        gone = lost.get(job.id, 0)
        cost = 0.0
        expect = "keep"
        if gone:
            if job.current_workers is not None:
                now = job.current_workers
            elif job.elastic is not None:
                now = on[job.id]
            else:
                now = job.scale_factor
            t = wtype[job.id]
            left = [w for w in range(now - gone, 0, -1) if _job_rate(job, t, w) is not None]
            if job.elastic is not None and left:
                expect, cost = "shrink", sigma * (now - left[0])
                after = left[0]
            else:
                expect, after = "preempt", 0
                cost = 1.0 if job.preemption_cost is None else float(job.preemption_cost)
        total += cost
        r = rows.get(job.id)
        if r is None:
            continue
        if str(r.action) != expect or int(r.gpus_lost) != gone:
            problems.append(
                f"job {job.id}: reported {r.action} losing {r.gpus_lost} GPUs, "
                f"expected {expect} losing {gone}"
            )
        elif gone and int(r.workers_after) != after:
            problems.append(f"job {job.id}: {r.workers_after} workers after, expected {after}")
        if not np.isclose(float(r.cost), cost, rtol=1e-9, atol=1e-12):
            problems.append(f"job {job.id}: cost {r.cost}, expected {cost}")
    if result.objective_value is None or not np.isclose(
        total, result.objective_value, rtol=1e-9, atol=1e-9
    ):
        problems.append(
            f"objective recomputed as {total:.9g}, result says {result.objective_value}"
        )
    return Verification(
        ok=not problems, objective_value=total, violations=tuple(problems), checks=tuple(checks)
    )
