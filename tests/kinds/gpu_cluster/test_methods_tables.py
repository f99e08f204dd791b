"""``allocation_table`` builds its string columns once per name: the table equals the one
pandas infers from the per-row object arrays (values and dtypes), empty tables included."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest

from hetopt.kinds.gpu_cluster import methods as M
from hetopt.kinds.gpu_cluster.data import ClusterArrays


def _arrays(job_ids: list[str], types: list[str]) -> ClusterArrays:
    """Arrays of these jobs and types (every throughput 1: the tables read the names)."""
    n, t = len(job_ids), len(types)
    thr = np.ones((n, t))
    steps = np.full(n, np.nan)
    return ClusterArrays(job_ids, types, thr, np.ones(n), np.ones(n), steps, np.ones(t), thr > 0)


@pytest.mark.parametrize("rows", [0, 1, 7])
def test_allocation_table_equals_the_inferred_table(rows: int) -> None:
    arr = _arrays(["a", "b", "c"], ["v100", "k80"])
    rng = np.random.default_rng(rows)
    pairs = SimpleNamespace(job=rng.integers(0, 3, rows), type=rng.integers(0, 2, rows))
    x = rng.random(rows)
    expected = pd.DataFrame(
        {
            "job": np.asarray(arr.job_ids, dtype=object)[pairs.job],
            "worker_type": np.asarray(arr.types, dtype=object)[pairs.type],
            "fraction": x,
        }
    )
    got = M.allocation_table(arr, pairs, x)  # type: ignore[arg-type]
    assert got.dtypes.to_dict() == expected.dtypes.to_dict()
    pd.testing.assert_frame_equal(got, expected, check_exact=True)


def _same_frame(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    """Equal values, dtypes, column index and row index (type included)."""
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert got.dtypes.to_dict() == expected.dtypes.to_dict()
    assert got.columns.dtype == expected.columns.dtype
    assert type(got.index) is type(expected.index)
    assert [type(got[c].array) for c in got] == [type(expected[c].array) for c in expected]


@pytest.mark.parametrize("rows", [0, 1, 5])
def test_table_is_the_constructors_frame(rows: int) -> None:
    """``table`` builds the frame ``pd.DataFrame`` infers from the same columns."""
    rng = np.random.default_rng(rows)
    names = M._inferred([f"j{i}" for i in range(rows)])  # (empty: an object array)
    columns = {
        "job": M._names_at(names, rng.integers(0, max(rows, 1), rows)),
        "ids": names.copy(),
        "fraction": rng.random(rows),
        "count": rng.integers(0, 9, rows),
        "flag": rng.random(rows) > 0.5,
    }
    _same_frame(M.table(dict(columns)), pd.DataFrame(dict(columns)))


def test_tables_own_their_columns() -> None:
    """Frames never share the cached names or the caller's values: changing one in place
    (or renaming its columns) leaves the next one as it was."""
    arr = _arrays(["a", "b"], ["v100"])
    X = np.full((2, 1), 0.5)
    pairs = SimpleNamespace(job=np.array([0, 1]), type=np.array([0, 0]))
    x = np.array([0.5, 0.5])
    alloc, jobs, _ = M.time_share_tables(arr, X, pairs, x)  # type: ignore[arg-type]
    alloc.loc[0, "job"] = "zz"
    alloc.loc[0, "fraction"] = 9.0
    jobs.loc[0, "job"] = "zz"
    jobs.columns.name = "renamed"
    assert x[0] == 0.5 and list(M.job_names(arr)) == ["a", "b"]
    again, jobs2, _ = M.time_share_tables(arr, X, pairs, x)  # type: ignore[arg-type]
    assert again["job"].tolist() == ["a", "b"] and jobs2["job"].tolist() == ["a", "b"]
    assert jobs2.columns.name is None


def test_time_share_tables_are_the_inferred_tables() -> None:
    """The allocation and jobs tables of a time-share matrix, as the constructor builds
    them from the ids and type names (the cached name columns, taken)."""
    from hetopt.kinds.gpu_cluster import generate
    from hetopt.kinds.gpu_cluster import verify as V

    arr = generate(12, "k80=2,p100=2,v100=2", seed=4).arrays
    X = np.random.default_rng(1).random(arr.thr.shape) * arr.allowed
    alloc, jobs, thr = M.time_share_tables(arr, X)
    job, typ = np.nonzero(arr.thr > 0)
    _same_frame(
        alloc,
        pd.DataFrame(
            {
                "job": np.asarray(arr.job_ids, dtype=object)[job],
                "worker_type": np.asarray(arr.types, dtype=object)[typ],
                "fraction": X[job, typ],
            }
        ),
    )
    expected = pd.DataFrame({"job": arr.job_ids, "time_share": X.sum(axis=1), "throughput": thr})
    _same_frame(jobs, expected)
    assert np.array_equal(thr, V.effective_throughput(arr, X))


def test_worker_type_column_holds_the_instances_own_names() -> None:
    """The cached ``worker_type`` column of a list of type names holds that list's own
    strings: made again for an instance whose names are equal strings of other objects
    (the verifier then matches the table's rows with the instance's types by address,
    not by comparing 6,000 strings); the table is the same either way."""
    from hetopt.kinds.gpu_cluster import verify as V

    first = ["k80", "p100", "v100"]
    other = ["".join(list(t)) for t in first]  # equal strings, other objects
    assert all(a == b and a is not b for a, b in zip(first, other, strict=True))
    pairs = SimpleNamespace(job=np.array([0, 0, 1]), type=np.array([0, 2, 1]))
    x = np.array([0.25, 0.5, 1.0])
    tables = []
    for types in (first, other, first):
        arr = _arrays(["a", "b"], types)
        got = M.allocation_table(arr, pairs, x)  # type: ignore[arg-type]
        held = V._objects(got["worker_type"])
        assert all(h is types[t] for h, t in zip(held, pairs.type, strict=True))
        tables.append(got)
    for got in tables[1:]:
        _same_frame(got, tables[0])


@pytest.mark.parametrize(
    "names",
    [["a", "b", "c"], ["a", None, "c"], ["a", 1, "c"], [np.str_("x"), "y"], ["a", float("nan")]],
)
def test_inferred_is_what_pandas_infers(names: list[Any]) -> None:
    """``_inferred`` of strings (its direct string array) and of anything else (pandas's
    inference) is the column ``pd.Series`` makes of the same object array: same array
    type, dtype and values; a direct one holds the very strings given."""
    values = np.asarray(names, dtype=object)
    got = M._inferred(values.copy())
    expected = pd.Series(values).array
    if isinstance(expected.dtype, pd.StringDtype):
        assert type(got) is type(expected) and got.dtype == expected.dtype
        pd.testing.assert_extension_array_equal(got, expected)
    else:
        assert isinstance(got, np.ndarray) and got.dtype == object
        assert list(got) == list(values) or all(
            a is b or (a != a and b != b) for a, b in zip(got, values, strict=True)
        )
    if M._string_template() is not None and all(isinstance(v, str) for v in names):
        assert all(h is v for h, v in zip(np.asarray(got), values, strict=True))


def test_job_names_column_is_the_inferred_column() -> None:
    """The cached ``job`` column of an instance is pandas's column of its ids, and the
    tables' ``job`` columns taken from it are writable copies (the cache is never
    written: it rests on the verifier's read-only ids)."""
    from hetopt.kinds.gpu_cluster import generate

    arr = generate(6, "k80=2,v100=2", seed=2).arrays
    names = M.job_names(arr)
    expected = pd.Series(np.asarray(arr.job_ids, dtype=object)).array
    assert type(names) is type(expected) and names.dtype == expected.dtype
    pd.testing.assert_extension_array_equal(names, expected)
    alloc, jobs, _ = M.time_share_tables(arr, np.full(arr.thr.shape, 0.1) * arr.allowed)
    jobs.loc[0, "job"] = "zz"
    alloc.loc[0, "job"] = "zz"
    assert list(M.job_names(arr)) == arr.job_ids
