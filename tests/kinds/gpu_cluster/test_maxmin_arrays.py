"""gpu_cluster: the max-min LP compiled from arrays is the compiled Pyomo model, bit for bit.

``maxmin.compile_lp`` hands HiGHS the LP without building Pyomo components; it must give
exactly what ``compile_model(maxmin.build(lp).model)`` gives (column order, rows,
coefficients, bounds, objective), for every LP the kind's max-min builder makes: Gavel's
max-min fairness and makespan LPs (per job and per symmetry group, agnostic), the
space-sharing LP (two column blocks, free columns, extra rows) and the sub-problems of a
decomposition (GPUs per unit of ``z``, an upper bound on ``z``). The row grouping that
replaced ``np.unique(axis=0)`` must give its partition.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hetopt
from hetopt import SolveOptions, Status
from hetopt.highs import compile_model
from hetopt.instance import load_data
from hetopt.kinds.gpu_cluster import GpuClusterInstance, generate
from hetopt.kinds.gpu_cluster import formulations as F
from hetopt.kinds.gpu_cluster import maxmin as M

ROOT = Path(__file__).resolve().parents[3]


def _same(lp: M.MaxMinLP) -> None:
    ref = compile_model(M.build(lp).model)
    got, columns = M.compile_lp(lp)
    assert (got.num_col, got.num_row) == (ref.num_col, ref.num_row)
    for name in ("c", "col_lower", "col_upper", "row_lower", "row_upper", "integrality"):
        a, b = getattr(got, name), getattr(ref, name)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
    assert (got.offset, got.maximize) == (ref.offset, ref.maximize)
    for name in ("indptr", "indices", "data"):
        a = np.asarray(getattr(got.A, name), dtype=float)
        b = np.asarray(getattr(ref.A, name), dtype=float)
        assert a.tobytes() == b.tobytes(), name
    m = M.build(lp).model
    ref2 = compile_model(m)  # the columns the Pyomo variables landed on
    assert ref2.column(m.z) == columns.z
    assert np.array_equal(ref2.columns_of(m.alloc, range(len(lp.columns[0]))), columns.alloc)


def _captured(monkeypatch: pytest.MonkeyPatch, make: Any) -> list[M.MaxMinLP]:
    """The LPs ``make()`` hands to ``maxmin.build``."""
    seen: list[M.MaxMinLP] = []
    build = M.build

    def spy(lp: M.MaxMinLP) -> Any:
        seen.append(lp)
        return build(lp)

    monkeypatch.setattr(M, "build", spy)
    make()
    monkeypatch.undo()
    return seen


def _instances() -> list[GpuClusterInstance]:
    out = [
        GpuClusterInstance.from_dict(load_data(p))
        for p in [
            ROOT / "instances/gpu_cluster/example.json",
            ROOT / "instances/gpu_cluster/gavel_100.json",
            ROOT / "instances/gpu_cluster/closed_form/identical_jobs_three_types.json",
            ROOT / "instances/gpu_cluster/closed_form/one_job_three_types.json",
        ]
    ]
    out.append(generate(40, seed=3))
    out.append(generate(40, seed=4, multi_gpu=False))
    out.append(generate(300, "k80=4,p100=4,v100=4", seed=2))  # scale factors above some types
    return out


@pytest.fixture(scope="module")
def instances() -> list[GpuClusterInstance]:
    return _instances()


@pytest.mark.parametrize("objective", ["max_min_fairness", "makespan"])
@pytest.mark.parametrize("variant", ["grouped", "per_job", "agnostic"])
def test_time_sharing_lps(instances: list[Any], objective: str, variant: str) -> None:
    for inst in instances:
        arr = inst.arrays
        if objective == "makespan" and np.isnan(arr.steps).any():
            continue
        thr = F.agnostic_throughputs(arr) if variant == "agnostic" else None
        if variant == "grouped":
            lp, _ = F.grouped_lp(arr, objective, thr)
        elif objective == "makespan":
            lp = F.makespan_lp(arr, thr)
        else:
            lp = F.max_min_lp(arr, thr)
        _same(lp)


def test_space_sharing_lp(monkeypatch: pytest.MonkeyPatch) -> None:
    from hetopt.kinds.gpu_cluster.colocation import build_colocation_model

    inst = GpuClusterInstance.from_dict(
        load_data(ROOT / "instances/gpu_cluster/policies/colocation_triangle.json")
    )
    for objective in ("max_min_fairness", "makespan"):
        if objective == "makespan" and np.isnan(inst.arrays.steps).any():
            continue
        lps = _captured(monkeypatch, lambda o=objective: build_colocation_model(inst, o))
        assert lps and lps[0].free and lps[0].extra_rows
        for lp in lps:
            _same(lp)


def test_sub_problem_lps() -> None:
    arr = generate(60, "k80=6,p100=6,v100=6", seed=5).arrays
    n, T = arr.thr.shape
    base = dict(
        thr=arr.thr,
        scale=arr.scale,
        weight=arr.weight,
        norm=arr.proportional_throughput(),
        allowed=arr.allowed,
        capacity=arr.workers * 0.5,
        jobs=np.arange(n),
    )
    _same(M.MaxMinProblem(**base).lp())  # type: ignore[arg-type]
    rng = np.random.default_rng(1)
    z_usage = rng.uniform(0.0, 2.0, T)
    z_usage[0] = 0.0  # an explicit zero is dropped
    lp = M.MaxMinProblem(**base, z_usage=z_usage, z_max=3.5).lp()  # type: ignore[arg-type]
    _same(lp)
    # an extra block with a repeated entry (summed) and an explicit zero (dropped)
    from dataclasses import replace

    extra = M.Rows(
        "c_extra",
        np.array([0, 0, 1, 1, 1]),
        np.array([2, 2, 3, 4, M.num_columns(lp) - 1]),
        np.array([0.1, 0.2, 0.0, 1.5, -1.0]),
        2,
        np.full(2, -np.inf),
        np.ones(2),
    )
    _same(replace(lp, extra_rows=(extra,)))


@pytest.mark.parametrize("lp_method", ["ipm", "simplex"])
@pytest.mark.parametrize("objective", ["max_min_fairness", "makespan"])
@pytest.mark.parametrize("params", [{}, {"symmetry": False}, {"agnostic": True}])
def test_solve_from_arrays_equals_pyomo_path(
    monkeypatch: pytest.MonkeyPatch, objective: str, params: dict[str, Any], lp_method: str
) -> None:
    """The same result as solving the Pyomo model (the array path switched off), with
    the same LP algorithm (the array path picks one by size when it is ``auto``; the
    Pyomo path is only the space-sharing methods' in production)."""
    from hetopt.kinds.gpu_cluster import methods

    inst = generate(80, "k80=7,p100=7,v100=7", seed=7)
    opts = SolveOptions(threads=1, lp_method=lp_method)
    fast = hetopt.solve(inst, objective, opts, **params)
    monkeypatch.setattr(methods.OneLP, "solve_arrays", lambda *a, **k: None)
    slow = hetopt.solve(inst, objective, opts, **params)
    assert fast.status == slow.status == Status.OPTIMAL
    assert fast.verification.ok
    assert (fast.objective_value, fast.bound, fast.gap) == (
        slow.objective_value,
        slow.bound,
        slow.gap,
    )
    for name, df in slow.tables.items():
        assert fast.tables[name].equals(df), name
    strip = ("_s", "iterations")
    assert {k: v for k, v in fast.info.items() if not k.endswith(strip)} == {
        k: v for k, v in slow.info.items() if not k.endswith(strip)
    }


def _unique_groups(key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The grouping as it was computed before (``np.unique`` over rows)."""
    _, first, inverse, counts = np.unique(
        key, axis=0, return_index=True, return_inverse=True, return_counts=True
    )
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[inverse.ravel()].astype(np.int64), first[order], counts[order].astype(float)


def test_pairs_are_the_positive_throughputs_job_major() -> None:
    """:meth:`maxmin.Pairs.of` (from the flat positions) is ``np.nonzero(thr > 0)`` as
    int64 arrays: jobs with no usable type, every type, one type, no jobs."""

    class Arrays:
        def __init__(self, thr: np.ndarray) -> None:
            self.thr = thr

    rng = np.random.default_rng(4)
    thrs = [rng.random((n, T)) * (rng.random((n, T)) < 0.6) for n, T in ((50, 8), (7, 1), (30, 3))]
    thrs += [np.zeros((5, 4)), np.ones((6, 2)), np.zeros((0, 3))]
    for thr in thrs:
        pairs = M.Pairs.of(Arrays(thr))  # type: ignore[arg-type]
        job, typ = np.nonzero(thr > 0)
        assert pairs.job.dtype == np.int64 and pairs.type.dtype == np.int64
        assert np.array_equal(pairs.job, job) and np.array_equal(pairs.type, typ)
        assert pairs.job.flags.writeable and pairs.type.flags.writeable


def test_row_groups_is_the_unique_partition() -> None:
    rng = np.random.default_rng(0)
    keys = []
    for _ in range(200):
        n, c = int(rng.integers(1, 50)), int(rng.integers(1, 6))
        k = rng.integers(0, 3, size=(n, c)).astype(float)
        k[rng.random((n, c)) < 0.1] = -0.0  # equal to 0.0
        if rng.random() < 0.3:
            k[rng.random((n, c)) < 0.05] = np.nan  # equal to nothing
        keys.append(k)
    arr = generate(500, "k80=40,p100=40,v100=40", seed=1).arrays
    keys.append(np.hstack([arr.scale[:, None], arr.weight[:, None], arr.thr, arr.allowed]))
    for k in keys:
        want = _unique_groups(k)
        got = F.row_groups(k)
        for a, b in zip(got, want, strict=True):
            assert np.array_equal(a, b)


def test_row_groups_same_partition_when_hashes_collide(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows are sorted by a hash; when unequal rows share one (here: every row, or every
    other row, hashes alike) the partition is still ``np.unique``'s (the sort falls back
    to every column). Distinct rows (the no-two-alike shortcut) and ``-0.0`` too."""
    rng = np.random.default_rng(3)
    keys = [rng.integers(0, 3, size=(int(rng.integers(2, 60)), 3)).astype(float) for _ in range(50)]
    distinct = rng.random((300, 5))
    distinct[::7, 2] = -0.0
    keys.append(distinct)
    zeros = np.zeros((40, 3))
    zeros[::3, 1] = -0.0  # one group: -0.0 == 0.0
    keys.append(zeros)
    real = F._row_hash
    for fake in (
        lambda k: np.zeros(len(k), dtype=np.uint64),
        lambda k: real(k) % np.uint64(2),
        real,
    ):
        monkeypatch.setattr(F, "_row_hash", fake)
        for k in keys:
            for a, b in zip(F.row_groups(k), _unique_groups(k), strict=True):
                assert np.array_equal(a, b)
    assert len(F.row_groups(zeros)[1]) == 1
    assert len(F.row_groups(distinct)[1]) == 300


# ------------------------------------------------------------ job checks, fast path
def _jobs_variant(change: Any) -> dict[str, Any]:
    import copy

    data = copy.deepcopy(generate(12, "k80=4,p100=4,v100=2", seed=1).to_dict())
    change(data["jobs"])
    return data


def _elastic(job: dict[str, Any]) -> dict[str, Any]:
    return {"id": job["id"], "elastic": {"workers": [1, 2], "throughput": {"v100": [1.0, 2.0]}}}


_BAD_JOBS: list[tuple[str, Any, str]] = [
    (
        "dup",
        lambda j: j.__setitem__(7, {**j[7], "id": j[2]["id"]}),
        r"jobs[7].id: duplicate job id '2' (also jobs[2])",
    ),
    (
        "dup_first",
        lambda j: (j.__setitem__(3, {**j[3], "id": j[1]["id"]}), j[9]["throughput"].update(zz=1.0)),
        "jobs[3].id: duplicate job id '1' (also jobs[1])",
    ),
    (
        "unknown_first",
        lambda j: (j[2]["throughput"].update(zz=1.0), j.__setitem__(8, {**j[8], "id": j[0]["id"]})),
        "jobs[2].throughput.zz: unknown worker type 'zz'; the cluster has: k80, p100, v100",
    ),
    (
        "no_positive",
        lambda j: j[5].update(throughput={"v100": 0.0}),
        "jobs[5]: job '5' can run on no worker type: it needs a positive throughput on a type "
        "with at least scale_factor=1 GPUs",
    ),
    (
        "too_few_gpus",
        lambda j: j[5].update(throughput={"v100": 3.0, "k80": 0.0}, scale_factor=4),
        "jobs[5]: job '5' can run on no worker type: it needs a positive throughput on a type "
        "with at least scale_factor=4 GPUs",
    ),
    (
        "empty",
        lambda j: j[4].update(throughput={}),
        "jobs[4]: job '4' can run on no worker type",
    ),
    (
        "missing",
        lambda j: j[4].pop("throughput"),
        "jobs[4].throughput: required field is missing (or give the job's options in elastic)",
    ),
    (
        "current_workers",
        lambda j: j[6].update(current_workers=3),
        "jobs[6].current_workers: a job that is not elastic runs on scale_factor=1 GPUs, got 3",
    ),
    (
        "elastic_dup",
        lambda j: (j.__setitem__(3, _elastic(j[3])), j.__setitem__(9, {**j[9], "id": j[3]["id"]})),
        "jobs[9].id: duplicate job id '3' (also jobs[3])",
    ),
]


@pytest.mark.parametrize(
    ("change", "message"), [c[1:] for c in _BAD_JOBS], ids=[c[0] for c in _BAD_JOBS]
)
def test_job_checks_name_the_first_problem(change: Any, message: str) -> None:
    """The set-based check of every job (``_plain_jobs_ok``) falls back to the job-by-job
    loop, which names the first problem in job order."""
    with pytest.raises(hetopt.InstanceError) as err:
        GpuClusterInstance.from_dict(_jobs_variant(change))
    assert str(err.value).startswith(message)


def test_job_checks_accept() -> None:
    for change in (
        lambda j: j[6].update(current_workers=j[6].get("scale_factor", 1)),
        lambda j: j[5].update(throughput={"v100": 0.0, "k80": 2.0}, scale_factor=4),
    ):
        GpuClusterInstance.from_dict(_jobs_variant(change))


def test_solve_max_min_from_arrays() -> None:
    """A decomposition's sub-problem solved from arrays: the allocation and level the
    Pyomo model gives."""
    arr = generate(60, "k80=6,p100=6,v100=6", seed=5).arrays
    n, T = arr.thr.shape
    for z_usage, z_max in ((None, None), (np.full(T, 0.5), 2.0)):
        problem = M.MaxMinProblem(
            arr.thr,
            arr.scale,
            arr.weight,
            arr.proportional_throughput(),
            arr.allowed,
            arr.workers * 0.5,
            np.arange(n),
            z_usage,
            z_max,
        )
        opts = SolveOptions(threads=1)
        sol = M.solve_max_min(problem, opts)
        session = M._session(opts)
        built = M.build_max_min(problem)
        live = session.open(built)
        view = live.solve(session.options, M.LP_METHOD)
        assert view.raw.x is not None and sol.status == view.status == Status.OPTIMAL
        assert np.array_equal(sol.X, M._read(live, view.raw.x, n, T))
        assert sol.z == view.value(built.model.z) / built.layout.scale


@pytest.mark.parametrize(
    ("objective", "params", "expected"),
    [
        ("max_min_fairness", {}, "simplex"),  # 80 Gavel jobs in a few symmetry groups
        ("max_min_fairness", {"agnostic": True}, "ipm"),  # never chosen for agnostic
        ("makespan", {}, "simplex"),
        ("makespan", {"agnostic": True}, "ipm"),
    ],
)
def test_the_lp_algorithm_is_chosen_by_size_and_reported(
    objective: str, params: dict[str, Any], expected: str
) -> None:
    inst = generate(80, "k80=7,p100=7,v100=7", seed=7)
    auto = hetopt.solve(inst, objective, SolveOptions(threads=1), **params)
    assert auto.info["lp_method"] == expected
    other = "ipm" if expected == "simplex" else "simplex"
    forced = hetopt.solve(inst, objective, SolveOptions(threads=1, lp_method=other), **params)
    assert forced.info["lp_method"] == other
    if not params:  # the same optimum either way
        assert auto.objective_value == pytest.approx(forced.objective_value, rel=1e-9)


def test_large_max_min_lps_stay_on_interior_point() -> None:
    from hetopt.kinds.gpu_cluster.methods import MaxMinFairness

    inst = generate(300, "k80=30,p100=30,v100=30", seed=3)
    res = hetopt.solve(inst, "max_min_fairness", SolveOptions(threads=1), symmetry=False)
    assert inst.arrays.num_jobs > MaxMinFairness.simplex_max_rows
    assert res.info["lp_method"] == "ipm"


def test_row_max_and_min_equal_numpy() -> None:
    """One type at a time, the same values as ``max``/``min`` over the last axis
    (``NaN`` propagated, infinities kept), without writing into the input."""
    rng = np.random.default_rng(4)
    for shape in ((0, 3), (1, 1), (7, 1), (50, 8), (3, 20)):
        a = rng.normal(size=shape)
        a[rng.random(shape) < 0.1] = np.inf
        a[rng.random(shape) < 0.1] = -np.inf
        if shape[0] > 2:
            a[1, 0] = np.nan
        before = a.copy()
        np.testing.assert_array_equal(F.row_max(a), a.max(axis=1))
        np.testing.assert_array_equal(F.row_min(a), a.min(axis=1))
        np.testing.assert_array_equal(a, before)
