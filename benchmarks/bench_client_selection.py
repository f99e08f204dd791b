"""client_selection benchmarks: the exact fast path and the MILP at several sizes.

Every benchmark asserts its answer against an independent exact algorithm:
the MILP against Moore-Hodgson (``1 || sum U_j``), the Moore-Hodgson fast path against
the dynamic program over counts (``algorithms.max_on_time_count``), the Lawler-Moore
fast path against the MILP. Times on a shared machine are noisy.
"""

from __future__ import annotations

import numpy as np
import pytest
from registry import BenchSpec, record, register

import hetopt
from hetopt import SolveOptions, Status
from hetopt.kinds.client_selection import ClientSelectionInstance
from hetopt.kinds.client_selection import algorithms as A
from hetopt.kinds.client_selection.generate import generate

OPTS = SolveOptions(threads=1)


def instance(
    n: int, seed: int, deadline: float, integer: bool = False, upload_s: float | None = None
) -> ClientSelectionInstance:
    """Ready times uniform over the round, lognormal uploads (median ``upload_s``,
    default ``4 * deadline / n``)."""
    rng = np.random.default_rng(seed)
    ready = rng.uniform(0, 0.9 * deadline, n)
    upload = rng.lognormal(np.log(upload_s or 4 * deadline / n), 0.8, n)
    if integer:
        ready, upload = np.round(ready), np.maximum(np.round(upload), 1)
    else:
        ready, upload = np.round(ready, 2), np.round(upload, 2) + 0.01
    w = rng.integers(1, 10, n).astype(float)
    clients = [
        {"id": f"c{i}", "ready_s": r, "upload_s": p, "weight": x}
        for i, (r, p, x) in enumerate(zip(ready.tolist(), upload.tolist(), w.tolist(), strict=True))
    ]
    return ClientSelectionInstance.from_dict(
        {"kind": "client_selection", "round_deadline_s": deadline, "clients": clients}
    )


SPECS = (
    [
        register(
            BenchSpec(
                f"client_selection/fast_mh/{n}",
                "client_selection",
                "max_clients",
                {"clients": n, "deadline_s": 3600.0},
                slow=n > 100_000,
                make=lambda n=n: instance(n, 1, 3600.0, upload_s=4.0),
            )
        )
        for n in (10_000, 100_000, 1_000_000)
    ]
    + [
        register(
            BenchSpec(
                f"client_selection/fast_lm/{n}",
                "client_selection",
                "max_weight",
                {"clients": n},
                slow=n > 200,
                make=lambda n=n: instance(n, 2, 600.0, True),
            )
        )
        for n in (200, 500)
    ]
    + [
        register(
            BenchSpec(
                f"client_selection/milp/{n}",
                "client_selection",
                "max_clients",
                {"clients": n},
                slow=n > 200,
                make=lambda n=n: instance(n, 3, 1000.0),
            )
        )
        for n in (100, 200, 500)
    ]
)


def _param(spec: BenchSpec) -> object:
    return pytest.param(spec, id=spec.name, marks=[pytest.mark.slow] if spec.slow else [])


@pytest.mark.parametrize("spec", [_param(s) for s in SPECS if "/fast_mh/" in s.name])
def test_fast_moore_hodgson(benchmark, spec: BenchSpec) -> None:
    inst = spec.make()
    r = benchmark.pedantic(
        lambda: hetopt.solve(inst, "max_clients", OPTS, baseline=False), rounds=1, iterations=1
    )
    assert r.info["method"] == "moore_hodgson" and r.status == Status.OPTIMAL and r.ok
    arr = inst.arrays
    # an independent exact count: the dynamic program over counts (real-valued data)
    assert r.objective_value == A.max_on_time_count(arr.upload, arr.slack, A.REL_TOL * 3600.0)
    record(benchmark, r, clients=arr.n)


@pytest.mark.parametrize("spec", [_param(s) for s in SPECS if "/fast_lm/" in s.name])
def test_fast_lawler_moore(benchmark, spec: BenchSpec) -> None:
    inst = spec.make()
    r = benchmark.pedantic(lambda: hetopt.solve(inst, "max_weight", OPTS), rounds=1, iterations=1)
    assert r.info["method"] == "lawler_moore" and r.ok
    m = hetopt.solve(inst, "max_weight", OPTS, method="milp", baseline=False)
    assert m.status == Status.OPTIMAL
    assert r.objective_value == pytest.approx(m.objective_value, rel=1e-6)
    record(benchmark, r, clients=inst.arrays.n, milp_s=m.runtime_s, greedy_gap=r.info["greedy_gap"])


@pytest.mark.parametrize("spec", [_param(s) for s in SPECS if "/milp/" in s.name])
def test_milp_shared(benchmark, spec: BenchSpec) -> None:
    inst = spec.make()
    r = benchmark.pedantic(
        lambda: hetopt.solve(inst, "max_clients", OPTS, method="milp"), rounds=1, iterations=1
    )
    arr = inst.arrays
    assert r.status == Status.OPTIMAL and r.ok
    assert r.objective_value == A.moore_hodgson(arr.upload, arr.slack).sum()
    record(benchmark, r, clients=arr.n, greedy_gap=r.info["greedy_gap"])


TESTING = [
    register(
        BenchSpec(
            f"client_selection/testing/{n}",
            "client_selection",
            "min_duration",
            {"clients": n, "classes": 5, "max_clients": 20},
            slow=True,
            make=lambda n=n: generate(
                n, seed=3, objective="min_duration", max_clients=20, classes=5
            ),
        )
    )
    for n in (400,)
]


@pytest.mark.parametrize("spec", [_param(s) for s in TESTING])
def test_testing_lp_round_vs_milp(benchmark, spec: BenchSpec) -> None:
    """Oort testing selection: lp_round timed; its bound and value bracket the MILP's."""
    inst = spec.make()
    r = benchmark.pedantic(
        lambda: hetopt.solve(inst, "min_duration", OPTS, method="lp_round"),
        rounds=1,
        iterations=1,
    )
    m = hetopt.solve(inst, "min_duration", OPTS.replace(time_limit_s=120), method="milp")
    assert r.ok and m.ok
    assert r.bound <= m.objective_value * (1 + 1e-6)
    assert m.bound <= r.objective_value * (1 + 1e-6)
    record(benchmark, r, milp_s=m.runtime_s, milp_value=m.objective_value, lp_gap=r.gap)


COLUMNS = [
    register(
        BenchSpec(
            f"client_selection/columns_end_to_end/{n}",
            "client_selection",
            "max_clients",
            {"clients": n, "deadline_s": 3600.0, "input": "dict of numpy arrays"},
            slow=n > 100_000,
        )
    )
    for n in (100_000, 1_000_000)
]


def client_columns(n: int, seed: int, deadline: float, upload_s: float) -> dict[str, np.ndarray]:
    """The clients of :func:`instance` as columns (numpy arrays), as a federated-learning
    server holds them."""
    rng = np.random.default_rng(seed)
    ready = np.round(rng.uniform(0, 0.9 * deadline, n), 2)
    upload = np.round(rng.lognormal(np.log(upload_s), 0.8, n), 2) + 0.01
    weight = rng.integers(1, 10, n).astype(float)
    ids = np.array([f"c{i}" for i in range(n)], dtype=object)
    return {"id": ids, "ready_s": ready, "upload_s": upload, "weight": weight}


@pytest.mark.parametrize("spec", [_param(s) for s in COLUMNS])
def test_columns_end_to_end(benchmark, spec: BenchSpec) -> None:
    """Validate columns of ``n`` clients and solve the fast path (Moore-Hodgson, with
    FedCS's greedy baseline, as ``hetopt.solve`` does by default): end to end."""
    import time

    n = spec.size["clients"]
    cols = client_columns(n, 1, 3600.0, 4.0)
    split: dict[str, float] = {}

    def run() -> hetopt.Result:
        t0, c0 = time.perf_counter(), time.process_time()
        inst = ClientSelectionInstance(round_deadline_s=3600.0, clients=cols)
        t1 = time.perf_counter()
        r = hetopt.solve(inst, "max_clients", OPTS)
        split.update(
            validate_s=t1 - t0,
            solve_total_s=time.perf_counter() - t1,
            end_to_end_s=time.perf_counter() - t0,
            end_to_end_cpu_s=time.process_time() - c0,
        )
        return r

    r = benchmark.pedantic(run, rounds=1, iterations=1)
    assert r.info["method"] == "moore_hodgson" and r.status == Status.OPTIMAL and r.ok
    p, d = cols["upload_s"], 3600.0 - cols["ready_s"]
    assert r.objective_value == A.max_on_time_count(p, d, A.REL_TOL * 3600.0)
    record(benchmark, r, clients=n, **split)
