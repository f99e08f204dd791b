"""The verifier's and the tables' shortcuts give exactly what the plain computations
they replace give: the capacity test decided from ``scale @ X`` and a roundoff bound,
the largest share, the eligibility comparison, the jobs-present count, the effective
throughput without ``np.clip``, the cached ``p`` and ``weight * p``, the group time
shares, the object take and the remembered worker-type column (seeded random inputs,
edge cases, and the old code written out here as the reference)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest

from hetopt.kinds.gpu_cluster import GpuClusterInstance
from hetopt.kinds.gpu_cluster import methods as M
from hetopt.kinds.gpu_cluster import verify as V
from hetopt.kinds.gpu_cluster.data import ClusterArrays

ABS_TOL, REL_TOL = V.ABS_TOL, V.REL_TOL


def _old_check_allocation(
    arr: Any,
    X: np.ndarray,
    extra_usage: np.ndarray | None = None,
    extra_share: np.ndarray | None = None,
) -> list[str]:
    """``check_allocation`` as it was (the reference)."""
    problems: list[str] = []
    if (X < -ABS_TOL).any():
        i, t = np.argwhere(X < -ABS_TOL)[0]
        problems.append(
            f"negative fraction {X[i, t]:.3g} for job {arr.job_ids[i]} on {arr.types[t]}"
        )
    share = V.row_sums(X)
    if extra_share is not None:
        share = share + extra_share
    over = share > 1 + REL_TOL
    if over.any():
        i = int(np.argmax(share))
        problems.append(
            f"{int(over.sum())} job(s) get more than 100% of the time, e.g. job "
            f"{arr.job_ids[i]}: {share[i]:.9f}"
        )
    used = (arr.scale[:, None] * X).sum(axis=0)
    if extra_usage is not None:
        used = used + extra_usage
    cap_over = used > arr.workers * (1 + REL_TOL) + ABS_TOL
    for t in np.nonzero(cap_over)[0]:
        problems.append(
            f"worker type {arr.types[t]}: {used[t]:.6f} GPUs used > {arr.workers[t]:g} present"
        )
    forbidden = (~arr.allowed) & (X > ABS_TOL)
    if forbidden.any():
        i, t = np.argwhere(forbidden)[0]
        problems.append(
            f"job {arr.job_ids[i]} runs on {arr.types[t]} where it cannot (zero throughput or "
            f"fewer than scale_factor GPUs)"
        )
    return problems


def _arrays(rng: np.random.Generator, n: int, T: int) -> ClusterArrays:
    thr = rng.random((n, T)) * 10.0 ** rng.integers(-3, 4, size=(n, T))
    thr[rng.random((n, T)) < 0.2] = 0.0
    scale = rng.choice([1.0, 2.0, 4.0], size=n)
    workers = rng.integers(0, 3 * n + 2, size=T).astype(float)
    allowed = (thr > 0) & (scale[:, None] <= workers[None, :])
    return ClusterArrays(
        [f"j{i}" for i in range(n)],
        [f"t{k}" for k in range(T)],
        thr,
        scale,
        rng.random(n) + 0.5,
        rng.random(n),
        workers,
        allowed,
    )


def _allocation(rng: np.random.Generator, arr: ClusterArrays, case: int) -> np.ndarray:
    n, T = arr.thr.shape
    X = rng.random((n, T)) / max(T, 1)
    X[rng.random((n, T)) < 0.3] = 0.0
    if case % 4 == 1:  # capacities exactly at, just above and just below the limit
        used = (arr.scale[:, None] * X).sum(axis=0)
        target = arr.workers * (1 + REL_TOL) + ABS_TOL
        k = rng.choice([1 - 1e-15, 1.0, 1 + 1e-15, 1 + 1e-9, 1 - 1e-9], size=T)
        X = X * np.where(used > 0, target * k / np.where(used > 0, used, 1.0), 1.0)
    elif case % 4 == 2:  # small negatives, -0.0, a share above 1, a forbidden pair
        X[rng.random((n, T)) < 0.05] = -0.0
        X[rng.integers(n), rng.integers(T)] = -(10.0 ** rng.integers(-12, -5))
        X[rng.integers(n)] *= 4.0
        X[~arr.allowed] += rng.random((~arr.allowed).sum()) * (rng.random() < 0.5)
    elif case % 4 == 3 and case % 8 == 3:  # a NaN or an infinity
        X[rng.integers(n), rng.integers(T)] = rng.choice([np.nan, np.inf, -np.inf])
    return X


@pytest.mark.parametrize("seed", range(60))
def test_check_allocation_is_the_old_one(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 2, 7, 40, 500, 3000]))
    T = int(rng.integers(1, 10))
    arr = _arrays(rng, n, T)
    for case in range(8):
        X = _allocation(rng, arr, case)
        assert V.check_allocation(arr, X) == _old_check_allocation(arr, X)
        extra = rng.random(T) * (case % 2), rng.random(n) * (case % 3 == 0)
        assert V.check_allocation(arr, X, *extra) == _old_check_allocation(arr, X, *extra)


def test_check_allocation_edge_shapes() -> None:
    rng = np.random.default_rng(0)
    for n, T in [(0, 3), (3, 0), (0, 0)]:
        arr = _arrays(rng, n, T)
        X = np.zeros((n, T))
        assert V.check_allocation(arr, X) == _old_check_allocation(arr, X)
    arr = _arrays(rng, 4, 2)
    X = np.full((4, 2), 0.25, dtype=np.float32)  # (another dtype: the plain sums)
    assert V.check_allocation(arr, X) == _old_check_allocation(arr, X)


@pytest.mark.parametrize("seed", range(200))
def test_within_capacity_true_only_when_the_sum_is_within(seed: int) -> None:
    """Its ``True`` is a proof: the row-by-row sum is then ``<= limit`` (limits set at
    the sum itself, one float above and below it, and a relative hair around it)."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 3, 100, 5000]))
    T = int(rng.integers(1, 9))
    scale = rng.choice([1.0, 2.0, 8.0], size=n)
    X = rng.random((n, T)) * 10.0 ** rng.integers(-300, 5, size=(n, T))
    used = (scale[:, None] * X).sum(axis=0)
    for limit in (
        used,
        np.nextafter(used, np.inf),
        np.nextafter(used, -np.inf),
        used * (1 + 1e-12),
        used * (1 - 1e-12),
        used * 2,
    ):
        if V._within_capacity(scale, X, limit, X.min()):
            assert (used <= limit).all()
    assert V._within_capacity(scale, X, used * (1 + 1e-9) + 1e-300, X.min())
    assert not V._within_capacity(scale, X, used, None)  # (X's least entry not read)
    assert not V._within_capacity(scale, -X, -used, (-X).min())


@pytest.mark.parametrize("seed", range(20))
def test_effective_throughput_and_max_min_value_are_the_old_ones(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, T = int(rng.integers(1, 400)), int(rng.integers(1, 12))
    arr = _arrays(rng, n, T)
    X = rng.random((n, T)) - 0.2
    X[rng.random((n, T)) < 0.1] = -0.0
    old = V.row_sums(arr.thr * np.clip(X, 0, None))
    assert V.effective_throughput(arr, X).tobytes() == old.tobytes()
    Xi = rng.integers(-1, 2, size=(n, T))  # (integer shares: the plain product)
    old_i = V.row_sums(arr.thr * np.clip(Xi, 0, None))
    assert V.effective_throughput(arr, Xi).tobytes() == old_i.tobytes()
    p = arr.proportional_throughput()
    with np.errstate(divide="ignore", invalid="ignore"):
        _check_values(arr, X, old, p, rng)


def _check_values(
    arr: ClusterArrays, X: np.ndarray, old: np.ndarray, p: np.ndarray, rng: np.random.Generator
) -> None:
    n = len(old)
    old_value = float((arr.scale * (old + 0.0) / (arr.weight * p)).min())
    assert V.max_min_value(arr, X) == old_value or np.isnan(old_value)
    extra = rng.random(n)
    old_extra = float((arr.scale * (old + extra) / (arr.weight * p)).min())
    assert V.max_min_value(arr, X, extra) == old_extra


def test_cached_proportional_and_fairness_weights_are_fresh_and_read_only() -> None:
    arr = _arrays(np.random.default_rng(1), 50, 4)
    p = V.proportional_throughput(arr)
    assert p.tobytes() == arr.proportional_throughput().tobytes()
    w = V.fairness_weights(arr)
    assert w.tobytes() == (arr.weight * arr.proportional_throughput()).tobytes()
    assert V.proportional_throughput(arr) is p and V.fairness_weights(arr) is w
    for a in (p, w):
        with pytest.raises(ValueError):
            a[0] = 1.0


def _instance(n: int, seed: int) -> GpuClusterInstance:
    rng = np.random.default_rng(seed)
    jobs = []
    for i in range(n):
        thr = {t: float(v) for t, v in zip(("v100", "k80"), rng.random(2), strict=True)}
        if i % 3 == 0:
            thr["k80"] = 0.0
        jobs.append({"id": f"j{i}", "throughput": thr, "scale_factor": 1})
    return GpuClusterInstance.from_dict(
        {"kind": "gpu_cluster", "workers": {"v100": 2, "k80": 1}, "jobs": jobs}
    )


@pytest.mark.parametrize("drop", [None, 0, 4, 9])
def test_pairs_matrix_finds_the_missing_jobs_as_before(drop: int | None) -> None:
    """All jobs present (the run count) or some without a row (the scatter): the same
    problems as the lookup path gives."""
    inst = _instance(10, 3)
    arr = inst.arrays
    job, typ = V.positive_pairs(arr)
    keep = np.ones(len(job), dtype=bool) if drop is None else job != drop
    df = pd.DataFrame(
        {
            "job": np.asarray(arr.job_ids, dtype=object)[job[keep]],
            "worker_type": np.asarray(arr.types, dtype=object)[typ[keep]],
            "fraction": np.full(int(keep.sum()), 0.1),
        }
    )
    got = V.allocation_matrix(arr, df)
    with pytest.MonkeyPatch().context() as m:
        m.setattr(V, "_pair_codes", lambda *a, **k: None)
        m.setattr(V, "_job_codes", lambda *a, **k: None)
        plain = V.allocation_matrix(arr, df)
    assert got[0].tobytes() == plain[0].tobytes()
    assert got[1] == plain[1]
    assert bool(got[1]) == (drop is not None)


def test_type_names_follow_the_list() -> None:
    types = ["v100", "k80"]
    first = M._type_names(types)
    assert M._type_names(types) is first
    types[1] = "p100"  # (changed in place: not the column of before)
    second = M._type_names(types)
    assert second.tolist() == ["v100", "p100"]
    other = ["v100", "".join(["p", "100"])]  # equal strings, other objects
    third = M._type_names(other)
    assert third.tolist() == ["v100", "p100"]
    assert all(a is b for a, b in zip(np.asarray(third), other, strict=True))


@pytest.mark.parametrize("seed", range(10))
def test_group_time_shares_are_the_jobs_row_sums(seed: int) -> None:
    rng = np.random.default_rng(seed)
    G, T = int(rng.integers(1, 30)), int(rng.integers(1, 12))
    Xg = rng.random((G, T))
    Xg[rng.random((G, T)) < 0.3] = 0.0
    group_of = rng.integers(0, G, 200)
    X = Xg.take(group_of, axis=0)
    assert M._row_wise(Xg)
    assert V.row_sums(Xg).take(group_of).tobytes() == V.row_sums(X).tobytes()
    assert not M._row_wise(np.zeros((2, 128)))


def test_time_share_columns_with_and_without_the_shares() -> None:
    inst = _instance(12, 5)
    arr = inst.arrays
    X = np.random.default_rng(0).random((12, 2)) * arr.allowed
    a1, j1, t1 = M.time_share_columns(arr, X)
    a2, j2, t2 = M.time_share_columns(arr, X, share=V.row_sums(X))
    pd.testing.assert_frame_equal(a1, a2, check_exact=True)
    assert list(j1) == list(j2) == ["job", "time_share", "throughput"]
    for k in j1:
        assert np.asarray(j1[k]).tolist() == np.asarray(j2[k]).tolist()
    assert t1.tobytes() == t2.tobytes()


def test_allocation_table_of_the_positive_pairs_equals_the_inferred_table() -> None:
    inst = _instance(9, 2)
    arr = inst.arrays
    job, typ = V.positive_pairs(arr)
    x = np.linspace(0, 1, len(job))
    got = M.allocation_table(arr, SimpleNamespace(job=job, type=typ), x)  # type: ignore[arg-type]
    want = pd.DataFrame(
        {
            "job": np.asarray(arr.job_ids, dtype=object)[job],
            "worker_type": np.asarray(arr.types, dtype=object)[typ],
            "fraction": x,
        }
    )
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert got.dtypes.to_dict() == want.dtypes.to_dict()


def test_solo_columns_by_label_list_answer_as_the_index() -> None:
    """The table's labels read as a list (all str) or through the index (others): the
    same columns found, the same tables refused."""
    inst = _instance(6, 4)
    arr = inst.arrays
    job, typ = V.positive_pairs(arr)
    base = pd.DataFrame(
        {
            "job": np.asarray(arr.job_ids, dtype=object)[job],
            "worker_type": np.asarray(arr.types, dtype=object)[typ],
            "fraction": np.full(len(job), 0.2),
        }
    )
    want = V._solo_columns(base)
    assert want is not None
    numbered = base.assign(**{"x": 1.0}).rename(columns={"x": 7})
    as_np = base.rename(columns={"job": np.str_("job")})
    for df in (numbered, as_np):
        got = V._solo_columns(df)
        assert got is not None
        assert all(a.tobytes() == b.tobytes() for a, b in zip(got, want, strict=True))
    refused = [
        base.assign(other_job=""),
        pd.concat([base, base[["fraction"]]], axis=1),
        base.rename(columns={"job": "id"}),
        base.assign(**{"x": 1.0}).rename(columns={"x": 7}).assign(other_job=""),
    ]
    for df in refused:
        assert V._solo_columns(df) is None
