"""gpu_cluster decomposition parts: matrices built from arrays, symmetry groups."""

from __future__ import annotations

import numpy as np
import pytest

from hetopt import SolveOptions
from hetopt.decompose import solve_decomposed
from hetopt.highs import compile_model
from hetopt.kinds.gpu_cluster import generate
from hetopt.kinds.gpu_cluster import verify as V
from hetopt.kinds.gpu_cluster.decompose import (
    compile_part,
    group_problem,
    solve_part,
    stratified_partition,
)
from hetopt.kinds.gpu_cluster.maxmin import MaxMinProblem, build_max_min, solve_max_min

OPTS = SolveOptions(threads=1)


def _parts(n: int = 96, k: int = 3, seed: int = 4) -> tuple[object, list[MaxMinProblem]]:
    inst = generate(n, "k80=6,p100=5,v100=5", seed=seed)
    arr = inst.arrays
    norm = arr.proportional_throughput(arr.thr)
    parts, cap = stratified_partition(
        arr, k, np.random.default_rng(0), [j.job_type for j in inst.jobs]
    )
    probs = [
        MaxMinProblem(
            thr=arr.thr[p],
            scale=arr.scale[p],
            weight=arr.weight[p],
            norm=norm[p],
            allowed=arr.allowed[p],
            capacity=cap[q],
            jobs=p,
        )
        for q, p in enumerate(parts)
    ]
    return arr, probs


def _repair_like(pb: MaxMinProblem) -> MaxMinProblem:
    # the repair LP's extra data: GPUs used per unit of z (one type unused) and a cap
    usage = np.array([0.5, 0.0, 1.25])
    return MaxMinProblem(
        pb.thr, pb.scale, pb.weight, pb.norm, pb.allowed, pb.capacity, pb.jobs, usage, 0.8
    )


@pytest.mark.parametrize("repair", [False, True])
def test_part_matrix_equals_the_compiled_pyomo_model(repair: bool) -> None:
    _, probs = _parts()
    for pb in probs:
        pb = _repair_like(pb) if repair else pb
        ref = compile_model(build_max_min(pb).model)
        got, _, _, _ = compile_part(pb)
        assert got.num_col == ref.num_col and got.num_row == ref.num_row
        for name in ("indptr", "indices", "data"):
            np.testing.assert_array_equal(getattr(got.A, name), getattr(ref.A, name))
        for name in ("c", "col_lower", "col_upper", "row_lower", "row_upper", "integrality"):
            np.testing.assert_array_equal(getattr(got, name), getattr(ref, name))
        assert got.maximize == ref.maximize and got.offset == ref.offset


def test_solve_part_equals_solve_max_min() -> None:
    _, probs = _parts()
    for pb in [*probs, _repair_like(probs[0])]:
        ref = solve_max_min(pb, OPTS)
        got = solve_part(pb, OPTS)
        assert got.status == ref.status
        assert got.z == ref.z
        np.testing.assert_array_equal(got.X, ref.X)


def test_grouped_part_has_the_same_optimum() -> None:
    _, probs = _parts(n=120)
    for pb in probs:
        grouped, group_of = group_problem(pb)
        assert group_of is not None and grouped.num_jobs < pb.num_jobs
        full = solve_part(pb, OPTS)
        sol = solve_part(grouped, OPTS)
        assert sol.z == pytest.approx(full.z, rel=1e-7)
        X = sol.X[group_of]
        # every job of a group gets its group's shares, within the part's GPUs
        assert (X.sum(axis=1) <= 1 + 1e-9).all()
        assert ((pb.scale[:, None] * X).sum(axis=0) <= pb.capacity + 1e-6).all()
        coef = pb.coefficients()
        assert (coef * X).sum(axis=1).min() == pytest.approx(full.z, rel=1e-6)


def test_distinct_jobs_are_not_grouped() -> None:
    _, probs = _parts()
    pb = probs[0]
    thr = pb.thr * (1 + 1e-3 * np.arange(pb.num_jobs))[:, None]
    distinct = MaxMinProblem(thr, pb.scale, pb.weight, pb.norm, pb.allowed, pb.capacity, pb.jobs)
    same, group_of = group_problem(distinct)
    assert same is distinct and group_of is None


def test_partitioned_solve_reports_symmetry_groups() -> None:
    inst = generate(256, "k80=16,p100=16,v100=16", seed=9)
    grouped = solve_decomposed(inst, "max_min_fairness", OPTS, partitions=4)
    plain = solve_decomposed(inst, "max_min_fairness", OPTS, partitions=4, symmetry=False)
    agn = solve_decomposed(inst, "max_min_fairness", OPTS, partitions=4, agnostic=True)
    for r in (grouped, plain, agn):
        assert r.verification.ok, r.verification.violations
    assert sum(p["jobs"] for p in grouped.info["parts"]) == 256
    assert grouped.info["symmetry_groups"] < 256
    assert all(p["symmetry_groups"] <= p["jobs"] for p in grouped.info["parts"])
    assert plain.info["symmetry_groups"] == agn.info["symmetry_groups"] == 256
    # every part has the same optimum grouped or not
    for a, b in zip(grouped.info["parts"], plain.info["parts"], strict=True):
        assert a["objective_value"] == pytest.approx(b["objective_value"], rel=1e-7)
    assert grouped.objective_value == pytest.approx(V.max_min_value(inst.arrays, _x(grouped)))


def _x(result: object) -> np.ndarray:
    inst = generate(256, "k80=16,p100=16,v100=16", seed=9)
    arr = inst.arrays
    alloc = result.tables["allocation"]  # type: ignore[attr-defined]
    X = np.zeros((arr.num_jobs, len(arr.types)))
    row = {j: i for i, j in enumerate(arr.job_ids)}
    col = {t: i for i, t in enumerate(arr.types)}
    for j, t, f in zip(alloc["job"], alloc["worker_type"], alloc["fraction"], strict=True):
        X[row[j], col[t]] = f
    return X


def _strata_reference(arr, job_types):  # type: ignore[no-untyped-def]
    """The stratum labels as first computed (one dict lookup per job)."""
    keys: dict[tuple[object, ...], int] = {}
    out = np.empty(arr.num_jobs, dtype=np.int64)
    for i in range(arr.num_jobs):
        jt = job_types[i] if job_types is not None else None
        ident = jt if jt is not None else tuple(np.round(arr.thr[i], 9))
        out[i] = keys.setdefault((ident, float(arr.scale[i]), float(arr.weight[i])), len(keys))
    return out


@pytest.mark.parametrize("seed", [0, 3])
def test_strata_equal_the_reference_labels(seed: int) -> None:
    from hetopt.kinds.gpu_cluster.decompose import _strata

    inst = generate(300, "k80=20,p100=20,v100=20", seed=seed)
    arr = inst.arrays
    types = [j.job_type for j in inst.jobs]
    mixed = [None if i % 3 == 0 else t for i, t in enumerate(types)]
    for jt in (types, mixed, None):
        np.testing.assert_array_equal(_strata(arr, jt), _strata_reference(arr, jt))


def test_row_groups_equal_numpy_unique() -> None:
    from hetopt.kinds.gpu_cluster.decompose import row_groups

    rng = np.random.default_rng(1)
    key = rng.integers(0, 3, size=(500, 4)).astype(float)
    group, first, counts = row_groups(key)
    _, f, inv, c = np.unique(
        key, axis=0, return_index=True, return_inverse=True, return_counts=True
    )
    order = np.argsort(f, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    np.testing.assert_array_equal(group, rank[inv.ravel()])
    np.testing.assert_array_equal(first, f[order])
    np.testing.assert_array_equal(counts, c[order])
