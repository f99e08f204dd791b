"""gpu_cluster max-min fairness and makespan by column generation: the monolithic LP's
optimum (1e-9) with a dual-bound certificate, verified by the independent verifier."""

from __future__ import annotations

from typing import Any

import pytest

import hetopt
from hetopt import SolveOptions, Status
from hetopt.errors import UsageError
from hetopt.kinds.gpu_cluster import GpuClusterInstance, colgen, generate

OPTS = SolveOptions(threads=1)


def _eight_types(n: int, seed: int) -> GpuClusterInstance:
    import numpy as np

    rng = np.random.default_rng(seed)
    types = [f"g{k}" for k in range(8)]
    jobs = [
        {
            "id": str(i),
            "throughput": {t: float(rng.uniform(0.5, 4.0)) for t in types},
            "scale_factor": int(rng.choice([1, 2, 4])),
            "weight": float(rng.choice([1.0, 2.0])),
            "steps_remaining": float(rng.uniform(1e3, 1e5)),
        }
        for i in range(n)
    ]
    return GpuClusterInstance.from_dict(
        {"kind": "gpu_cluster", "workers": dict.fromkeys(types, max(4, n // 10)), "jobs": jobs}
    )


def _as_monolithic(
    inst: GpuClusterInstance, objective: str, **params: Any
) -> tuple[hetopt.Result, hetopt.Result]:
    """The monolithic LP's result and column generation's, the latter asserted optimal,
    verified, equal to the monolithic optimum to 1e-9 and certified by a dual bound
    within a gap of 1e-9."""
    mono = hetopt.solve(inst, objective, OPTS, lp_strategy="monolithic", **params)
    cg = hetopt.solve(inst, objective, OPTS, lp_strategy="column_generation", **params)
    assert cg.status == mono.status == Status.OPTIMAL
    assert cg.verification.ok, cg.verification.violations
    assert cg.objective_value == pytest.approx(mono.objective_value, rel=1e-9)
    # the certificate: a dual bound within 1e-9 of the value
    assert cg.gap is not None and cg.gap <= 1e-9
    return mono, cg


CASES = [
    ("8types", lambda: _eight_types(300, 1)),
    ("gavel", lambda: generate(300, "k80=25,p100=25,v100=25", seed=2)),
    ("gavel-1gpu", lambda: generate(300, "k80=25,p100=25,v100=25", seed=3, multi_gpu=False)),
]


@pytest.mark.parametrize("objective", ["max_min_fairness", "makespan"])
@pytest.mark.parametrize(("initial", "max_rounds"), [(3, 20), (1, 20), (1, 0)])
@pytest.mark.parametrize(("label", "make"), CASES, ids=[c[0] for c in CASES])
def test_column_generation_equals_monolithic(
    monkeypatch: pytest.MonkeyPatch,
    label: str,
    make,
    initial: int,
    max_rounds: int,
    objective: str,
) -> None:
    monkeypatch.setattr(colgen, "INITIAL", initial)
    monkeypatch.setattr(colgen, "MAX_ROUNDS", max_rounds)
    monkeypatch.setattr(colgen, "BOTTLENECK_FILL", False)  # the LPs and their pricing
    inst = make()
    mono, cg = _as_monolithic(inst, objective)
    assert cg.bound is not None
    if objective == "makespan":  # a lower bound on the makespan
        assert cg.bound <= cg.objective_value * (1 + 1e-12)
    else:  # an upper bound on the max-min value
        assert cg.bound >= cg.objective_value * (1 - 1e-12)
    info = cg.info
    assert info["lp_strategy"] == "column_generation"
    assert info["lp_columns"] <= info["pair_columns_full"]
    if initial == 1:
        assert info["pricing_rounds"] >= 1 and info["columns_generated"] > 0
    if max_rounds == 0:  # every remaining column added after the first round
        assert info["lp_columns"] == info["pair_columns_full"]
    assert len(cg.tables["allocation"]) == len(mono.tables["allocation"])


def test_auto_keeps_small_lps_monolithic_and_agnostic_is_never_priced() -> None:
    inst = _eight_types(100, 4)
    r = hetopt.solve(inst, "max_min_fairness", OPTS)
    assert "lp_strategy" not in r.info
    a = hetopt.solve(inst, "max_min_fairness", OPTS, agnostic=True, lp_strategy="column_generation")
    assert "lp_strategy" not in a.info


def test_auto_tries_the_fill_below_the_column_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """From :data:`colgen.AUTO_FILL_MIN_PAIRS` pairs, ``auto`` ends with the bottleneck
    fill where it fills (no LP: the monolithic optimum, certified), and solves the
    monolithic LP where it does not, exactly as ``lp_strategy="monolithic"`` does."""
    import pandas as pd

    gavel = generate(512, "k80=42,p100=42,v100=42", seed=1)  # 1,500+ pairs, no two alike
    assert colgen.AUTO_FILL_MIN_PAIRS <= int(gavel.arrays.allowed.sum()) < colgen.AUTO_MIN_PAIRS
    gavel_mono = hetopt.solve(gavel, "makespan", OPTS, lp_strategy="monolithic")
    auto = hetopt.solve(gavel, "makespan", OPTS)
    assert auto.status == gavel_mono.status == Status.OPTIMAL and auto.verification.ok
    assert auto.info["lp_strategy"] == "column_generation" and auto.info["bottleneck_fill"]
    assert "lp_method" not in auto.info and auto.timings.get("solve_s", 0.0) == 0.0
    assert auto.objective_value == pytest.approx(gavel_mono.objective_value, rel=1e-9)
    assert auto.gap is not None and auto.gap <= 1e-9
    # too few GPUs: no fill; the monolithic LP, the same result as asking for it
    tight = _eight_types(300, 1).to_dict()
    tight["workers"] = dict.fromkeys(tight["workers"], 4)
    inst = GpuClusterInstance.from_dict(tight)
    for objective in ("max_min_fairness", "makespan"):
        mono = hetopt.solve(inst, objective, OPTS, lp_strategy="monolithic")
        auto = hetopt.solve(inst, objective, OPTS)
        assert "lp_strategy" not in auto.info and "bottleneck_fill" not in auto.info
        assert auto.objective_value == mono.objective_value
        for name in ("allocation", "jobs"):
            pd.testing.assert_frame_equal(auto.tables[name], mono.tables[name])
    # the fill switched off: auto is the monolithic LP again
    monkeypatch.setattr(colgen, "BOTTLENECK_FILL", False)
    off = hetopt.solve(gavel, "makespan", OPTS)
    assert "lp_strategy" not in off.info
    assert off.objective_value == gavel_mono.objective_value
    pd.testing.assert_frame_equal(off.tables["allocation"], gavel_mono.tables["allocation"])


def test_auto_equals_monolithic_on_seeded_instances() -> None:
    """``auto`` (the fill where it fills, else the monolithic LP) gives the monolithic
    optimum to 1e-9, verified, on seeded Gavel instances from scarce to ample GPUs,
    both paths taken."""
    paths = set()
    for seed, gpus in ((11, 6), (12, 20), (13, 60), (14, 200)):
        inst = generate(400, f"k80={gpus},p100={gpus},v100={gpus}", seed=seed)
        for objective in ("max_min_fairness", "makespan"):
            mono = hetopt.solve(inst, objective, OPTS, lp_strategy="monolithic")
            auto = hetopt.solve(inst, objective, OPTS)
            assert auto.status == mono.status == Status.OPTIMAL
            assert auto.verification.ok, auto.verification.violations
            assert auto.objective_value == pytest.approx(mono.objective_value, rel=1e-9)
            paths.add(bool(auto.info.get("bottleneck_fill")))
    assert paths == {True, False}


def test_symmetry_groups_are_made_once_per_arrays_and_read_only() -> None:
    from hetopt.kinds.gpu_cluster import formulations as F

    arr = generate(200, "k80=8,p100=8,v100=8", seed=5).arrays
    for by_steps in (False, True):
        first = F.job_groups(arr, by_steps)
        again = F.job_groups(arr, by_steps)
        assert all(a is b for a, b in zip(first, again, strict=True))
        assert not any(a.flags.writeable for a in first)
    assert F.job_groups(arr, False)[0] is not F.job_groups(arr, True)[0]


def test_auto_threshold() -> None:
    assert not colgen.wants_columns(20_000, 5_000)
    assert colgen.wants_columns(160_000, 20_000)
    assert not colgen.wants_columns(60_000, 20_000)  # three pairs per job: nothing to save


def test_unknown_strategy_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="lp_strategy"):
        hetopt.solve(_eight_types(5, 1), "max_min_fairness", OPTS, lp_strategy="fast")


def test_certificate_holds_for_any_duals() -> None:
    """Weak duality: the Lagrangian bound from any row duals (clipped to their signs) is
    never below the full LP's optimum."""
    import numpy as np

    from hetopt.kinds.gpu_cluster import formulations as F

    inst = _eight_types(60, 5)
    mono = hetopt.solve(inst, "max_min_fairness", OPTS, lp_strategy="monolithic", symmetry=False)
    lp = F.max_min_lp(inst.arrays)
    p = colgen.Pricing.of(lp)
    n, T = lp.num_rows, len(lp.capacity)
    lay = colgen.ColumnsLayout(n, T)
    z_ub = colgen.z_upper_of(p, n, None)
    z_star = mono.objective_value * lp.scale
    assert z_ub >= z_star
    rng = np.random.default_rng(0)
    for _ in range(20):
        y = rng.normal(size=2 * n + T)
        bound, _d = colgen.certificate(p, lay, y, lp.capacity, z_ub)
        assert bound >= z_star * (1 - 1e-12)


def _fills(inst: GpuClusterInstance, objective: str) -> bool:
    from hetopt.kinds.gpu_cluster import formulations as F

    arr = inst.arrays
    if objective == "makespan":
        lp = F.makespan_lp(arr, None, None, F.makespan_reference(arr, arr.thr))
    else:
        lp = F.max_min_lp(arr)
    p = colgen.Pricing.of(lp)
    z_ub = colgen.z_upper_of(p, lp.num_rows, None)
    return colgen.bottleneck_fill(p, lp.num_rows, len(lp.capacity), lp.capacity, z_ub) is not None


@pytest.mark.parametrize("objective", ["max_min_fairness", "makespan"])
@pytest.mark.parametrize(("label", "make"), CASES, ids=[c[0] for c in CASES])
def test_bottleneck_fill_or_lp_equals_monolithic(label: str, make, objective: str) -> None:
    """With the fill on (the default): the monolithic optimum, certified, whether the fill
    ended it (no LP) or the LPs did."""
    inst = make()
    _, cg = _as_monolithic(inst, objective, symmetry=False)
    assert cg.info.get("bottleneck_fill", False) == _fills(inst, objective)
    if cg.info.get("bottleneck_fill"):
        assert cg.info["lp_columns"] == 0 and "lp_method" not in cg.info
        assert cg.bound == pytest.approx(cg.objective_value, rel=1e-12)


def test_bottleneck_fill_is_feasible_and_reaches_the_bound() -> None:
    """Where the fill succeeds every row gets value z_ub (the proven upper bound) within
    its time and the capacities; where the GPUs are too few it declines."""
    import numpy as np

    from hetopt.kinds.gpu_cluster import formulations as F

    seen = set()
    for n, gpus in ((300, 30), (300, 4), (200, 4)):
        inst = _eight_types(n, 7)
        data = inst.to_dict()
        data["workers"] = dict.fromkeys(data["workers"], gpus)
        inst = GpuClusterInstance.from_dict(data)
        lp = F.max_min_lp(inst.arrays)
        p = colgen.Pricing.of(lp)
        T = len(lp.capacity)
        z_ub = colgen.z_upper_of(p, n, None)
        x = colgen.bottleneck_fill(p, n, T, lp.capacity, z_ub)
        seen.add(x is not None)
        mono = hetopt.solve(inst, "max_min_fairness", OPTS, lp_strategy="monolithic")
        reached = mono.objective_value * lp.scale >= z_ub * (1 - 1e-9)
        if x is None:
            assert colgen.bottleneck_fill(p, n, T, lp.capacity * 1e-3, z_ub) is None
            continue
        assert reached  # the fill never claims more than the LP's optimum
        assert (x >= 0).all() and (x <= 1).all()
        assert (np.bincount(p.row, x, n) <= 1 + 1e-12).all()
        assert (np.bincount(p.type, p.usage * x, T) <= lp.capacity).all()
        value = np.bincount(p.row, p.coef * x, n)
        assert value.min() == pytest.approx(z_ub, rel=1e-12)
    assert seen == {True, False}


def test_bottleneck_fill_declines_at_once_only_where_the_greedy_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The quick test of too few GPUs (:func:`colgen._too_few_gpus`) changes no answer:
    with it and without it the fill is the same array, or ``None`` for both, on
    capacities from far too few to plenty (and at the edge where it starts to fill)."""
    import numpy as np

    from hetopt.kinds.gpu_cluster import formulations as F

    declined_early = 0
    for seed in range(4):
        inst = _eight_types(200, seed)
        lp = F.max_min_lp(inst.arrays)
        p = colgen.Pricing.of(lp)
        n, T = lp.num_rows, len(lp.capacity)
        z_ub = colgen.z_upper_of(p, n, None)
        for factor in (0.01, 0.2, 0.5, 0.7, 0.9, 1.0, 1.1, 1.5, 3.0):
            cap = np.asarray(lp.capacity, dtype=float) * factor
            with monkeypatch.context() as m:
                m.setattr(colgen, "_too_few_gpus", lambda gpus, capacity: False)
                slow = colgen.bottleneck_fill(p, n, T, cap, z_ub)
            fast = colgen.bottleneck_fill(p, n, T, cap, z_ub)
            assert (slow is None) == (fast is None)
            if fast is not None:
                assert np.array_equal(slow, fast)
            ok = p.coef >= z_ub
            gpus = np.full((n, T), np.inf)
            gpus[p.row[ok], p.type[ok]] = p.usage[ok] * z_ub / p.coef[ok]
            declined_early += colgen._too_few_gpus(gpus, cap)
    assert declined_early > 0


def _ways_reference(d: colgen.Dense, w, z: float):  # type: ignore[no-untyped-def]
    """Each row's cheapest way, a loop over the type pairs (as :meth:`Ways.at` was)."""
    import numpy as np

    n, T = d.coef.shape
    price = np.where(d.has, w[None, :] * d.usage, np.inf)
    best, second = np.full(n, np.inf), np.full(n, np.inf)
    a, b = np.full(n, -1), np.full(n, -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        for tb in range(T):
            ok_b = d.has[:, tb] & (d.coef[:, tb] >= z)
            cb = d.coef[:, tb]
            ways = [(-1, np.where(ok_b, z / cb * price[:, tb], np.inf))]
            for ta in range(T):
                if ta == tb:
                    continue
                ca = d.coef[:, ta]
                ok = ok_b & d.has[:, ta] & (ca < z)
                val = price[:, ta] + (price[:, tb] - price[:, ta]) * (z - ca) / (cb - ca)
                ways.append((ta, np.where(ok, val, np.inf)))
            for ta, val in ways:
                better = val < best
                second = np.where(better, best, np.minimum(second, val))
                a, b = np.where(better, ta, a), np.where(better, tb, b)
                best = np.where(better, val, best)
    return a, b, best, second


def test_ways_in_blocks_equal_the_loop_over_type_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The blocked candidates of :meth:`colgen.Ways.at` give the loop's ways exactly:
    types, cost and next cost of every row, ties to the first in the loop's order, rows
    with no way (``-1``), missing pairs, equal coefficients, blocks that do not divide
    the rows."""
    import numpy as np

    rng = np.random.default_rng(5)
    monkeypatch.setattr(colgen, "WAYS_BLOCK", 7)
    for trial in range(40):
        n, T = int(rng.integers(1, 40)), int(rng.integers(1, 6))
        coef = rng.choice([0.5, 1.0, 1.5, 2.0, 3.0], size=(n, T)) * rng.choice([1.0, 1.3])
        has = rng.random((n, T)) < 0.8
        usage = rng.choice([1.0, 2.0, 4.0], size=(n, T))
        pair = np.where(has, np.arange(n * T).reshape(n, T), -1)
        d = colgen.Dense(np.where(has, coef, 0.0), np.where(has, usage, 0.0), has, pair)
        w = rng.choice([0.0, 0.25, 1.0, 2.0], size=T) if trial % 2 else rng.random(T)
        z = float(rng.choice([0.7, 1.0, 1.5, 2.2, 5.0]))
        got = colgen.Ways.at(d, w, z)
        want = _ways_reference(d, w, z)
        for x, y in zip((got.a, got.b, got.cost, got.second), want, strict=True):
            assert x.dtype == y.dtype
            assert np.array_equal(x, y)


def _ways_full_grid(d: colgen.Dense, w, z: float):  # type: ignore[no-untyped-def]
    """Each row's cheapest way from all ``T x (T + 1)`` candidates of every row (``inf``
    where no way), first minimum by ``argmin`` (as :meth:`Ways.at` was before it took the
    rows by their number of types below ``z``; NaN prices give NaN ways, as there)."""
    import numpy as np

    n, T = d.coef.shape
    price = np.where(d.has, w[None, :] * d.usage, np.inf)
    cf, pr, hs = d.coef.T, price.T, d.has.T
    ok_b, ok_a = hs & (cf >= z), hs & (cf < z)
    cand = np.empty((T, T + 1, n))
    with np.errstate(divide="ignore", invalid="ignore"):
        cand[:, 0, :] = np.where(ok_b, z / cf * pr, np.inf)
        pa, pb, ca, cb = pr[None], pr[:, None], cf[None], cf[:, None]
        val = ((pb - pa) * (z - ca)) / (cb - ca) + pa
        cand[:, 1:, :] = np.where(ok_b[:, None, :] & ok_a[None, :, :], val, np.inf)
    flat = cand.reshape(T * (T + 1), n)
    k = flat.argmin(axis=0)
    cols = np.arange(n)
    first = flat[k, cols].copy()
    flat[k, cols] = np.inf
    second = flat.min(axis=0)
    found = np.isfinite(first)
    b = np.where(found, k // (T + 1), -1)
    a = np.where(found, np.r_[-1, np.arange(T)][k % (T + 1)], -1)
    return a, b, first, second


def test_ways_by_types_below_z_equal_the_full_grid(monkeypatch: pytest.MonkeyPatch) -> None:
    """:meth:`colgen.Ways.at` (rows taken by their number of types below ``z``) gives the
    ways of the full grid of candidates bit for bit, NaN where it has NaN: ties, missing
    pairs, rows with no way, prices 0, ``-0.0``, ``inf`` and NaN, ``z`` of 0 and below,
    blocks of one row and of many."""
    import numpy as np

    rng = np.random.default_rng(11)
    for trial in range(300):
        monkeypatch.setattr(colgen, "WAYS_BLOCK", int(rng.choice([1, 7, 50, 16_384])))
        n, T = int(rng.integers(1, 120)), int(rng.integers(1, 10))
        coef = rng.choice([0.5, 1.0, 1.5, 2.0, 3.0], size=(n, T)) * rng.choice([1.0, 1.3])
        if trial % 4 == 0:
            coef = rng.uniform(0.1, 3.0, size=(n, T))
        has = rng.random((n, T)) < rng.choice([0.5, 0.9, 1.0])
        usage = rng.choice([1.0, 2.0, 4.0], size=(n, T))
        pair = np.where(has, np.arange(n * T).reshape(n, T), -1)
        d = colgen.Dense(np.where(has, coef, 0.0), np.where(has, usage, 0.0), has, pair)
        w = rng.choice([0.0, 0.25, 1.0, 2.0], size=T) if trial % 2 else rng.random(T)
        for every, value in ((5, np.nan), (7, np.inf), (3, -0.0)):
            if trial % every == 0:
                w[rng.integers(T)] = value
        z = float(rng.choice([0.7, 1.0, 1.5, 2.2, 5.0, 0.0, -1.0]))
        with np.errstate(invalid="ignore"):  # (inf * 0: numpy warns in both)
            got = colgen.Ways.at(d, w, z)
            want = _ways_full_grid(d, w, z)
        for x, y in zip((got.a, got.b, got.cost, got.second), want, strict=True):
            assert x.dtype == y.dtype
            assert np.array_equal(x, y, equal_nan=True)


def test_first_min_is_argmin_over_the_first_axis() -> None:
    """:func:`colgen._first_min` (reductions along the rows) is ``argmin(axis=0)``:
    ties to the first row, columns all ``inf``, ``-0.0`` against ``0.0``, NaN."""
    import numpy as np

    rng = np.random.default_rng(8)
    for trial in range(200):
        rows, cols = int(rng.integers(1, 80)), int(rng.integers(1, 30))
        flat = rng.integers(0, 4, size=(rows, cols)).astype(float)
        flat[rng.random(flat.shape) < 0.3] = np.inf
        if trial % 5 == 0:
            flat[rng.random(flat.shape) < 0.2] = -0.0
        if trial % 3 == 0:
            flat[rng.random(flat.shape) < 0.05] = np.nan
        order = np.arange(rows, dtype=np.min_scalar_type(rows))[:, None]
        got = colgen._first_min(flat, order)
        assert got.dtype == np.intp and np.array_equal(got, flat.argmin(axis=0))


def test_reduced_lp_matrix_equals_its_triplets() -> None:
    """The reduced LP's CSC matrix, laid out column by column, is the matrix of its
    (row, column, value) triplets (as scipy assembles them), explicit zeros included."""
    import numpy as np
    import scipy.sparse as sp

    from hetopt.kinds.gpu_cluster import formulations as F

    inst = _eight_types(120, 3)
    data = inst.to_dict()
    data["jobs"][5]["throughput"].pop("g3")  # a missing pair
    inst = GpuClusterInstance.from_dict(data)
    lp = F.max_min_lp(inst.arrays)
    p = colgen.Pricing.of(lp)
    n, T = lp.num_rows, len(lp.capacity)
    d = colgen.Dense.of(p, n, T)
    rng = np.random.default_rng(0)
    for keep, z_column in (
        (np.sort(rng.choice(n, 30, replace=False)), np.zeros(T)),
        (np.arange(n), rng.random(T)),
        (np.array([5]), np.r_[0.0, rng.random(T - 1)]),
    ):
        got = colgen._reduced(p, d, keep, lp.capacity, z_column, (0.0, 1.0))[0].A
        m = len(keep)
        local = np.full(n, -1)
        local[keep] = np.arange(m)
        pk = d.pair[keep].ravel()
        pk = pk[pk >= 0]
        k, r = len(pk), local[p.row[pk]]
        rows = np.concatenate(
            [r, m + p.type[pk], m + T + r, m + np.arange(T), m + T + np.arange(m)]
        )
        cols = np.concatenate([*(1 + np.arange(k),) * 3, np.zeros(T + m, dtype=np.int64)])
        vals = np.concatenate([np.ones(k), p.usage[pk], p.coef[pk], z_column, -np.ones(m)])
        want = sp.csc_array((vals, (rows, cols)), shape=(2 * m + T, k + 1))
        want.sum_duplicates()
        assert got.shape == want.shape
        for a, b in ((got.indptr, want.indptr), (got.indices, want.indices), (got.data, want.data)):
            assert np.array_equal(a, b)


@pytest.mark.parametrize("objective", ["max_min_fairness", "makespan"])
@pytest.mark.parametrize("seed", [1, 2])
def test_price_directed_reduced_lp_equals_monolithic(
    monkeypatch: pytest.MonkeyPatch, objective: str, seed: int
) -> None:
    """Few GPUs (the capacities bind, no bottleneck fill): rows aggregated at sampled
    prices, the rest in a reduced LP, certified over every pair; or, when that does not
    close, the restricted LP. The monolithic optimum either way."""
    monkeypatch.setattr(colgen, "PRICE_MIN_ROWS", 100)
    monkeypatch.setattr(colgen, "SAMPLE_ROWS", 300)
    inst = _eight_types(600, seed)
    data = inst.to_dict()
    data["workers"] = dict.fromkeys(data["workers"], 15)
    inst = GpuClusterInstance.from_dict(data)
    _, cg = _as_monolithic(inst, objective, symmetry=False)
    assert not cg.info.get("bottleneck_fill", False)
    assert 0 < cg.info["reduced_rows"] <= 600 // 2  # (these instances: the reduced LP closed)


def test_pricing_holds_the_open_pairs_of_the_lp() -> None:
    """:meth:`colgen.Pricing.of` holds exactly the LP's open pairs (in column order) with
    their value coefficients, whether every pair is open (the block's own arrays) or a
    type has too few GPUs for some jobs."""
    import numpy as np

    from hetopt.kinds.gpu_cluster import formulations as F

    inst = _eight_types(40, 2)
    data = inst.to_dict()
    closed = GpuClusterInstance.from_dict({**data, "workers": {**data["workers"], "g3": 1}})
    opened = []
    for case in (inst, closed):
        lp = F.max_min_lp(case.arrays)
        b = lp.columns[0]
        ok = np.ones(len(b), dtype=bool) if b.open is None else np.asarray(b.open)
        opened.append(bool(ok.all()))
        coef = lp.row_scale[b.row] * b.rate * lp.coefficient_scale
        p = colgen.Pricing.of(lp)
        for got, want in ((p.row, b.row), (p.type, b.type), (p.usage, b.usage), (p.coef, coef)):
            assert got.dtype == want.dtype
            assert np.array_equal(got, want[ok])
    assert opened == [True, False]
