"""``allocation_table`` builds its string columns once per name: the table equals the one
pandas infers from the per-row object arrays (values and dtypes), empty tables included."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from hetopt.kinds.gpu_cluster import methods as M


@pytest.mark.parametrize("rows", [0, 1, 7])
def test_allocation_table_equals_the_inferred_table(rows: int) -> None:
    arr = SimpleNamespace(job_ids=["a", "b", "c"], types=["v100", "k80"])
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
