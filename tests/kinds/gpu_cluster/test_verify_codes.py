"""The verifier's id lookup: the fast path (a job-major table of the instance's own ids)
and the hash lookup it falls back to give the same matrix and the same problems."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from hetopt.kinds.gpu_cluster import GpuClusterInstance
from hetopt.kinds.gpu_cluster import verify as V

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
