"""The verifier's id lookup: the fast path (a job-major table of the instance's own ids)
and the hash lookup it falls back to give the same matrix and the same problems."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest

from hetopt.kinds.gpu_cluster import GpuClusterInstance
from hetopt.kinds.gpu_cluster import verify as V
from hetopt.kinds.gpu_cluster.data import ClusterArrays

DATA: dict[str, Any] = {
    "kind": "gpu_cluster",
    "workers": {"v100": 2, "k80": 1, "p100": 1},
    "jobs": [
        {"id": f"j{i}", "throughput": {"v100": 2.0, "k80": 1.0, "p100": 1.5}, "scale_factor": 1}
        for i in range(5)
    ],
}


def _table() -> pd.DataFrame:
    rows = [(f"j{i}", t, 0.1 * (i + 1)) for i in range(5) for t in ("v100", "k80", "p100")]
    return pd.DataFrame(rows, columns=["job", "worker_type", "fraction"])


def _plain(arr: Any, df: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """The matrix by plain hash lookup (both fast paths switched off)."""
    mp = pytest.MonkeyPatch()
    with mp.context() as m:
        m.setattr(V, "_job_codes", lambda *a, **k: None)
        m.setattr(V, "_pair_codes", lambda *a, **k: None)
        return V.allocation_matrix(arr, df)


def _tampered(case: str) -> pd.DataFrame:
    """The methods' table, changed as ``case`` says."""
    df = _table()
    if case == "shuffled":
        df = df.sample(frac=1.0, random_state=3).reset_index(drop=True)
    elif case == "unknown_job":
        df.loc[4, "job"] = "nope"
    elif case == "unknown_type":
        df.loc[7, "worker_type"] = "a100"
    elif case == "swapped_types":
        df.loc[[3, 4], "worker_type"] = df.loc[[4, 3], "worker_type"].to_numpy()
    elif case == "missing_job":
        df = df[df["job"] != "j2"].reset_index(drop=True)
    elif case == "extra":
        df = pd.concat([df, df.iloc[:1]], ignore_index=True)
    else:
        raise ValueError(case)
    return df


def test_fast_path_codes_equal_a_lookup() -> None:
    arr = GpuClusterInstance.from_dict(DATA).arrays
    df = _table()
    codes = V._job_codes(arr.job_ids, df["job"])
    assert codes is not None
    assert codes.tolist() == pd.Index(arr.job_ids).get_indexer(df["job"]).tolist()
    X, problems = V.allocation_matrix(arr, df)
    X0, problems0 = _plain(arr, df)
    assert problems == problems0 == []
    assert np.array_equal(X, X0)


@pytest.mark.parametrize("case", ["shuffled", "unknown_job", "unknown_type", "missing_job"])
def test_fallback_gives_the_lookup_answer(case: str) -> None:
    arr = GpuClusterInstance.from_dict(DATA).arrays
    df = _tampered(case)
    X, problems = V.allocation_matrix(arr, df)
    X0, problems0 = _plain(arr, df)
    assert problems == problems0
    assert np.array_equal(X, X0)
    if case != "shuffled":
        assert problems
        assert (V._job_codes(arr.job_ids, df["job"]) is None) == (case != "unknown_type")
    else:
        assert V._job_codes(arr.job_ids, df["job"]) is None


def test_pair_codes_equal_a_lookup() -> None:
    """A table of the methods' layout (every positive-throughput pair, job-major) is read
    by comparison with the pairs: the codes a lookup gives."""
    arr = GpuClusterInstance.from_dict(DATA).arrays
    df = _table()
    codes = V._pair_codes(arr, df["job"], df["worker_type"])
    assert codes is not None
    assert codes[0].tolist() == pd.Index(arr.job_ids).get_indexer(df["job"]).tolist()
    assert codes[1].tolist() == pd.Index(arr.types).get_indexer(df["worker_type"]).tolist()
    X, problems = V.allocation_matrix(arr, df)
    X0, problems0 = _plain(arr, df)
    assert problems == problems0 == []
    assert np.array_equal(X, X0)


@pytest.mark.parametrize(
    "case", ["shuffled", "unknown_job", "unknown_type", "swapped_types", "missing_job", "extra"]
)
def test_pair_codes_fall_back_to_the_lookup(case: str) -> None:
    arr = GpuClusterInstance.from_dict(DATA).arrays
    df = _tampered(case)
    assert V._pair_codes(arr, df["job"], df["worker_type"]) is None
    X, problems = V.allocation_matrix(arr, df)
    X0, problems0 = _plain(arr, df)
    assert problems == problems0
    assert np.array_equal(X, X0)
    assert bool(problems) == (case in ("unknown_job", "unknown_type", "missing_job"))


@pytest.mark.parametrize("types", [1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 24, 31, 40, 127, 128])
def test_row_sums_are_numpys_bit_for_bit(types: int) -> None:
    """The tables' time shares and throughputs are summed a column at a time: the same
    bits as ``sum(axis=1)`` (values of many magnitudes, zeros, negative zeros)."""
    rng = np.random.default_rng(types)
    M = rng.random((500, types)) * rng.choice([1e-9, 1e-3, 1.0, 1e5], size=(500, types))
    M[rng.random(M.shape) < 0.3] = 0.0
    M[rng.random(M.shape) < 0.1] = -0.0
    M[:3] = -0.0  # rows of negative zeros only
    M[3, 0] = 1e300
    M[4] = np.nan
    got = V.row_sums(M)
    assert got.tobytes() == M.sum(axis=1).tobytes()
    assert V.row_sums(M[:0]).shape == (0,)


def test_equal_at_answers_as_the_comparison() -> None:
    """The address shortcut of the id check: equal objects that are not the same object
    and unequal values give the comparison's answer; the same object is equal to itself
    (as a pandas lookup, the reference of the fast paths, finds it)."""
    names = np.asarray([f"j{i}" for i in range(6)], dtype=object)
    at = np.array([0, 0, 1, 2, 5, 5, 3])
    same = names.take(at)
    assert V._equal_at(names, at, same)
    copies = np.asarray(["".join(v) for v in same], dtype=object)  # equal, not identical
    assert all(c is not v for c, v in zip(copies, same, strict=True))
    assert V._equal_at(names, at, copies)
    for k, bad in ((3, "j9"), (6, None), (0, float("nan"))):
        tampered = same.copy()
        tampered[k] = bad
        assert not V._equal_at(names, at, tampered)
    nan = float("nan")
    odd = np.asarray([nan, "a"], dtype=object)
    assert V._equal_at(odd, np.array([0, 1]), odd.take([0, 1]))  # the same nan object
    assert pd.Index(odd).get_indexer(odd.take([0, 1])).tolist() == [0, 1]  # as a lookup
    assert not V._equal_at(odd, np.array([0]), np.asarray([float("nan")], dtype=object))


def test_close_is_numpys_isclose() -> None:
    values = [0.0, -0.0, 1.0, 1.0 + 1e-6, 1.0 + 2e-5, -1.0, 1e-10, 3e-9, 1e300, float("inf")]
    values += [-float("inf"), float("nan")]
    for a in values:
        for b in values:
            assert V._close(a, b, 1e-5, 1e-9) == bool(np.isclose(a, b, rtol=1e-5, atol=1e-9))


@pytest.mark.parametrize(
    "column",
    [
        pd.Series(["j0", "j1", None, "j1"]),  # pandas's string array (missing value too)
        pd.Series(np.array(["j0", 1, None], dtype=object)),  # objects
        pd.Series(pd.Categorical(["v100", "k80", "v100"])),
        pd.Series([0.5, 1.0]),
        pd.Series([], dtype=object),
    ],
)
def test_column_objects_are_to_numpy_objects(column: pd.Series) -> None:
    """The verifier reads a column's values in place (``_objects``): the values, in the
    same order, that ``to_numpy(dtype=object)`` gives (the very objects for strings and
    objects; missing values as pandas gives them), for every kind of column."""
    got, expected = V._objects(column), column.to_numpy(dtype=object)
    assert got.dtype == object and got.shape == expected.shape
    pairs = zip(got, expected, strict=True)
    assert all(a is b or (type(a) is type(b) and (a == b or a != a)) for a, b in pairs)


def test_job_id_objects_are_the_ids_read_only() -> None:
    """``job_id_objects``: the instance's id strings themselves, in order, made once per
    arrays and read-only."""
    arr = GpuClusterInstance.from_dict(DATA).arrays
    ids = V.job_id_objects(arr)
    assert ids is V.job_id_objects(arr) and not ids.flags.writeable
    assert all(a is b for a, b in zip(ids, arr.job_ids, strict=True))
    X, problems = V.allocation_matrix(arr, _table())
    assert not problems and np.array_equal(X, _plain(arr, _table())[0])


def _methods_table(arr: Any, fraction: np.ndarray) -> pd.DataFrame:
    """The allocation table as the methods build it (their string columns, taken)."""
    from hetopt.kinds.gpu_cluster import methods as M

    pairs = SimpleNamespace(job=V.positive_pairs(arr)[0], type=V.positive_pairs(arr)[1])
    return M.allocation_table(arr, pairs, fraction)  # type: ignore[arg-type]


@pytest.mark.parametrize("case", ["methods", "object", "signed_zero", "nan", "unpaired"])
def test_solo_column_read_gives_the_lookup_answer(case: str) -> None:
    """The verifier's one-time read of a solo table's columns (block manager, the pair
    fast path, fractions put in place) gives the hash lookup's matrix bit for bit and its
    problems: the methods' tables, object columns, -0.0 and NaN fractions, and a job
    without any pair (missing from every table)."""
    arr = GpuClusterInstance.from_dict(DATA).arrays
    if case == "unpaired":  # (validation refuses such a job: arrays made by hand)
        thr = arr.thr.copy()
        thr[2] = 0.0
        arr = dataclasses.replace(arr, thr=thr, allowed=arr.allowed & (thr > 0))
    rows = len(V.positive_pairs(arr)[0])
    fraction = np.linspace(0.0, 0.3, rows)
    if case == "signed_zero":
        fraction[::2] = -0.0
    elif case == "nan":
        fraction[3] = np.nan
    df = _methods_table(arr, fraction)
    if case == "object":
        df = df.astype({"job": object, "worker_type": object})
    assert V._solo_columns(df) is not None
    got, problems = V.allocation_matrix(arr, df)
    want, want_problems = _plain(arr, df)
    assert got.tobytes() == want.tobytes()
    assert problems == want_problems
    assert bool(problems) == (case == "unpaired")


def test_solo_columns_fall_back_for_other_tables() -> None:
    """Tables the one-time read does not take (pair rows, a repeated column name, a
    fraction column of another type) go the general way with its answer."""
    arr = GpuClusterInstance.from_dict(DATA).arrays
    df = _table()
    with_pairs = df.assign(other_job="")
    repeated = pd.concat([df, df[["fraction"]]], axis=1)
    as_text = df.astype({"fraction": object})
    for other in (with_pairs, repeated, as_text):
        assert V._solo_columns(other) is None
    got, problems = V.allocation_matrix(arr, as_text)
    want, want_problems = _plain(arr, df)
    assert got.tobytes() == want.tobytes() and problems == want_problems


@pytest.mark.parametrize("types", [8, 11, 19])
def test_pairwise_row_sums_are_numpys_on_many_rows(types: int) -> None:
    """The 8-to-127-column sums are numpy's bit for bit on 20,000 rows too (infinities,
    NaN, signed zeros)."""
    rng = np.random.default_rng(types)
    M = rng.random((20_000, types)) * rng.choice([1e-12, 1.0, 1e8], size=(20_000, types))
    M[rng.random(M.shape) < 0.2] = -0.0
    M[7, 2], M[8, 1], M[8, 3] = np.inf, np.inf, -np.inf
    with np.errstate(invalid="ignore"):
        assert V.row_sums(M).tobytes() == M.sum(axis=1).tobytes()


@pytest.mark.parametrize("shape", [(1, 1), (7, 3), (50, 8), (3, 11)])
def test_positive_pairs_are_nonzeros_pairs(shape: tuple[int, int]) -> None:
    """The pairs (from the flat positions) are ``np.nonzero(thr > 0)``'s, int64 and
    read-only, and their flat positions index the same entries."""
    rng = np.random.default_rng(shape[0])
    thr = rng.random(shape) * (rng.random(shape) < 0.6)
    n, t = shape
    ids, types = [f"j{i}" for i in range(n)], [f"t{k}" for k in range(t)]
    one = np.ones(n)
    arr = ClusterArrays(ids, types, thr, one, one, one, np.ones(t), thr > 0)
    job, typ = V.positive_pairs(arr)
    want_job, want_typ = np.nonzero(thr > 0)
    assert job.dtype == typ.dtype == np.int64
    assert np.array_equal(job, want_job) and np.array_equal(typ, want_typ)
    flat = V.pair_positions(arr)
    assert np.array_equal(thr.reshape(-1)[flat], thr[want_job, want_typ])
    assert not (job.flags.writeable or typ.flags.writeable or flat.flags.writeable)


@pytest.mark.parametrize("types", [3, 7, 8, 11, 19, 130])
def test_effective_throughput_is_the_plain_sum(types: int) -> None:
    """Each job's throughput is ``(thr * clip(X, 0)).sum(axis=1)`` bit for bit, however
    many types (the type-major products from 8 types on)."""
    rng = np.random.default_rng(types)
    thr = rng.random((300, types)) * (rng.random((300, types)) < 0.7) * 1e3
    X = rng.random((300, types)) - 0.1  # (some negative: clipped)
    X[:2] = -0.0
    arr = SimpleNamespace(thr=thr)
    got = V.effective_throughput(arr, X)  # type: ignore[arg-type]
    assert got.tobytes() == (thr * np.clip(X, 0, None)).sum(axis=1).tobytes()


def test_stored_columns_are_the_managers_values() -> None:
    """The columns read from a frame's blocks are what its block manager's
    ``iget_values`` gives, column by column (strings, floats, ints, objects)."""
    from hetopt.kinds.gpu_cluster import methods as M

    names = M._inferred(["a", "b", "c"])
    df = M.table(
        {"job": names.copy(), "x": np.arange(3.0), "n": np.arange(3), "y": np.ones(3)}
    ).assign(o=np.array(["p", 1, None], dtype=object))
    stored = V._stored_columns(df)
    assert sorted(stored) == list(range(df.shape[1]))
    for i in range(df.shape[1]):
        want = df._mgr.iget_values(i)
        got = stored[i]
        assert type(got) is type(want) and got.dtype == want.dtype
        assert np.shares_memory(np.asarray(got), np.asarray(want)) or got is want
        assert list(np.asarray(got)) == list(np.asarray(want))
