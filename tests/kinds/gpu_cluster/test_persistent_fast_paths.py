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


def _old_group_keys(arr: object, rows: np.ndarray, by_steps: bool) -> list[bytes]:
    """The keys as first written: one hstack, then each row's bytes."""
    rows = np.asarray(rows, dtype=np.int64)
    cols = [arr.scale[rows, None], arr.weight[rows, None], arr.thr[rows]]  # type: ignore[attr-defined]
    if by_steps:
        cols.append(arr.steps[rows, None])  # type: ignore[attr-defined]
    key = np.ascontiguousarray(np.hstack(cols), dtype=float) + 0.0
    return [r.tobytes() for r in key]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("by_steps", [False, True])
def test_group_keys_as_before(seed: int, by_steps: bool) -> None:
    from hetopt.kinds.gpu_cluster.data import ClusterArrays

    rng = np.random.default_rng(seed)
    n, T = 50, int(rng.integers(1, 6))
    thr = rng.choice([0.0, -0.0, 1.5, 2.0, 1e-300], size=(n, T))
    scale = rng.choice([1.0, 2.0, 4.0], size=n)
    weight = rng.choice([0.5, 1.0, -0.0], size=n)
    steps = rng.choice([np.nan, 100.0, -0.0], size=n)
    workers = np.full(T, 8.0)
    arr = ClusterArrays(
        [str(i) for i in range(n)],
        [f"t{t}" for t in range(T)],
        thr,
        scale,
        weight,
        steps,
        workers,
        thr > 0,
    )
    for rows in (np.arange(n), rng.choice(n, 17), np.zeros(0, dtype=np.int64), [3]):
        assert P._group_keys(arr, rows, by_steps) == _old_group_keys(arr, rows, by_steps)


@pytest.mark.parametrize("seed", range(5))
def test_arrays_of_jobs_are_from_instance(seed: int) -> None:
    from hetopt.kinds.gpu_cluster import GpuClusterInstance, generate
    from hetopt.kinds.gpu_cluster.data import ClusterArrays

    rng = np.random.default_rng(seed)
    inst = generate(30, "k80=4,p100=8,v100=2", seed=seed)
    jobs = list(inst.jobs)
    for i in rng.choice(len(jobs), 8, replace=False):  # missing types, steps, odd order
        thr = dict(jobs[i].throughput or {})
        thr.pop(rng.choice(list(thr)), None)
        thr = dict(reversed(list(thr.items())))
        update = {"throughput": thr, "steps_remaining": None, "scale_factor": 1}
        if any(v > 0 for v in thr.values()):  # (still runnable)
            jobs[i] = jobs[i].model_copy(update=update)
    workers = dict(inst.workers)
    got = ClusterArrays.of_jobs(jobs, workers)
    types = list(workers)
    thr = np.array([[(j.throughput or {}).get(t, 0.0) for t in types] for j in jobs])
    scale = np.array([j.scale_factor for j in jobs], dtype=float)
    wk = np.array([workers[t] for t in types], dtype=float)
    want = {  # as from_instance made them before it used of_jobs
        "thr": thr,
        "scale": scale,
        "weight": np.array([j.weight for j in jobs], dtype=float),
        "steps": np.array([j.steps_remaining for j in jobs], dtype=float),
        "workers": wk,
        "allowed": (thr > 0) & (scale[:, None] <= wk[None, :]),
    }
    # and as a validated instance of the same jobs has them (validation's own columns)
    valid = GpuClusterInstance.from_dict(
        {"workers": workers, "jobs": [j.model_dump(exclude_none=True) for j in jobs]}
    ).arrays
    assert got.job_ids == [j.id for j in jobs] == valid.job_ids and got.types == types
    for name, b in want.items():
        a = getattr(got, name)
        assert a.dtype == b.dtype and a.shape == b.shape and a.flags.c_contiguous
        assert a.tobytes() == b.tobytes() == getattr(valid, name).tobytes(), name


def _policy(weights: list[float]) -> object:
    from hetopt import SolveOptions
    from hetopt.kinds.gpu_cluster import GpuClusterInstance, PersistentPolicy

    jobs = [
        {"id": f"j{i}", "throughput": {"k80": 1.0 + i, "v100": 2.0}, "weight": w}
        for i, w in enumerate(weights)
    ]
    inst = GpuClusterInstance.from_dict({"workers": {"k80": 4, "v100": 4}, "jobs": jobs})
    return PersistentPolicy(inst, "max_min_fairness", SolveOptions(threads=1))


def test_weights_of_removed_jobs_do_not_count() -> None:
    """The quick test of the weight ratio looks at the jobs before the removals (a
    superset): past the limit there, the jobs left decide (removed: accepted)."""
    from hetopt.errors import InstanceError
    from hetopt.kinds.gpu_cluster.inputs import MAX_WEIGHT_RATIO

    policy = _policy([1.0, 1.0, 1e-3])
    heavy = {"id": "h", "throughput": {"k80": 1.0}, "weight": MAX_WEIGHT_RATIO * 1e-2}
    with pytest.raises(InstanceError, match="weight") as err:
        policy.add_jobs([heavy])  # 1e-3 and 1e7: beyond the limit
    assert err.value.field == "jobs[3].weight"
    policy.remove_jobs(["j2"])  # pending: not yet written into the instance
    policy.add_jobs([heavy])  # 1 and 1e7: within it
    assert policy.instance.arrays.job_ids == ["j0", "j1", "h"]
    assert policy.solve().verification.ok


def test_unknown_and_unhashable_ids() -> None:
    from hetopt.errors import UsageError

    policy = _policy([1.0, 2.0, 3.0])
    with pytest.raises(UsageError) as err:
        policy.remove_jobs(["j0", "nope", "j1"])
    assert str(err.value) == "remove_jobs: unknown job id 'nope' (ids[1]); no job removed"
    assert err.value.__context__ is None and err.value.__cause__ is None
    with pytest.raises(UsageError, match=r"unknown job id 'x' \(ids\[0\]\)"):
        policy.remove_jobs(["x", ["unhashable"]])  # the first problem, in order
    with pytest.raises(TypeError, match="unhashable"):
        policy.remove_jobs(["j0", ["unhashable"], "nope"])
    with pytest.raises(UsageError, match=r"update_jobs: unknown job id 'y' \(ids\[1\]\)"):
        policy.update_jobs(["j0", "y"], weight=[1.0, 1.0])
    assert policy.instance.arrays.job_ids == ["j0", "j1", "j2"]
    policy.remove_jobs(["j2", "j0", "j2"])  # repeated: once
    assert policy.instance.arrays.job_ids == ["j1"]


def test_pending_arrivals_count_in_the_weight_ratio() -> None:
    """Arrivals not yet written into the instance take part in the quick test."""
    from hetopt.errors import InstanceError
    from hetopt.kinds.gpu_cluster.inputs import MAX_WEIGHT_RATIO

    policy = _policy([1.0, 1.0])
    policy.add_jobs([{"id": "h", "throughput": {"k80": 1.0}, "weight": MAX_WEIGHT_RATIO / 10}])
    light = {"id": "l", "throughput": {"k80": 1.0}, "weight": 1e-2}
    with pytest.raises(InstanceError, match="weight") as err:
        policy.add_jobs([light])  # 1e-2 against the pending 1e8: beyond the limit
    assert err.value.field == "jobs[2].weight"  # (the heavy one, in the instance's order)
    policy.add_jobs([dict(light, weight=0.5)])
    assert policy.instance.arrays.job_ids == ["j0", "j1", "h", "l"]
