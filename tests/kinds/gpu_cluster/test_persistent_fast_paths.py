"""The warm churn round's shortcuts (issue 20) against the plain algorithms they replace,
on seeded random inputs and edge cases."""

from __future__ import annotations

from itertools import compress

import numpy as np
import pandas as pd
import pytest

from hetopt.kinds.gpu_cluster import persistent as P


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("gone", [0, 1, 3, P._SLICED, P._SLICED + 1, 300])
def test_kept_is_compress(seed: int, gone: int) -> None:
    rng = np.random.default_rng(seed)
    n = 400
    items = [object() for _ in range(n)]
    keep = np.ones(n, dtype=bool)
    keep[rng.choice(n, gone, replace=False)] = False
    got = P._kept(items, keep)
    want = list(compress(items, keep.tolist()))
    assert len(got) == len(want) and all(a is b for a, b in zip(got, want, strict=True))


@pytest.mark.parametrize(
    "where", [[0], [399], [0, 1, 2], [398, 399], [0, 399], list(range(0, 400, 7))]
)
def test_kept_at_the_ends(where: list[int]) -> None:
    items = list(range(400))
    keep = np.ones(400, dtype=bool)
    keep[where] = False
    assert P._kept(items, keep) == [x for x, k in zip(items, keep, strict=True) if k]


def test_kept_of_nothing_and_of_all() -> None:
    assert P._kept([], np.zeros(0, dtype=bool)) == []
    assert P._kept([1, 2], np.zeros(2, dtype=bool)) == []
    assert P._kept([1, 2], np.ones(2, dtype=bool)) == [1, 2]


class _Str(str):
    pass


@pytest.mark.parametrize(
    "values",
    [
        ["a", "b"],
        ["a"],
        [],
        ["a", None],
        ["a", 1],
        [_Str("a"), "b"],
        ["a", np.nan],
        [b"a", "b"],
    ],
)
def test_all_strings_is_pandas_inference(values: list[object]) -> None:
    ids = np.empty(len(values), dtype=object)
    ids[:] = values
    want = pd.api.types.infer_dtype(ids, skipna=False) == "string"
    assert P._all_strings(ids) is want
