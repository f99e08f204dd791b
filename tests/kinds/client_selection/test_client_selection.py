"""client_selection: exact oracles, MILP vs Moore-Hodgson / Lawler-Moore, side constraints.

Independent answers used here:

* brute force over every subset on tiny instances, with the shared-uplink feasibility
  of a set checked by a plain-Python earliest-ready-first simulation and, separately,
  by trying every upload order (itertools.permutations);
* Moore-Hodgson's algorithm (Moore 1968) for ``1 || sum U_j`` and the textbook example
  of Pinedo, *Scheduling: Theory, Algorithms, and Systems*, Example 3.3.1
  (p = 7, 8, 4, 6, 6; d = 9, 17, 18, 19, 21: at most 3 jobs on time);
* Lawler-Moore's dynamic program for ``1 || sum w_j U_j``;
* networkx max-flow for Oort's per-class assignment on tiny instances.
"""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hetopt
from hetopt import InstanceError, SolveOptions, Status
from hetopt.cli import main
from hetopt.kinds.client_selection import ClientSelectionInstance, fast_path_blocker
from hetopt.kinds.client_selection import algorithms as A
from hetopt.kinds.client_selection.generate import generate

FAST = SolveOptions(threads=1)


def make(clients: list[dict], deadline: float = 300.0, **kw: object) -> ClientSelectionInstance:
    return ClientSelectionInstance.from_dict(
        {"kind": "client_selection", "round_deadline_s": deadline, "clients": clients, **kw}
    )


def random_clients(
    n: int, seed: int, deadline: float = 100.0, integer: bool = True, groups: int = 0
) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        r = rng.uniform(0, deadline * 0.9)
        p = rng.uniform(1, deadline * 0.3)
        if integer:
            r, p = float(round(r)), float(max(1, round(p)))
        c = {
            "id": f"c{i}",
            "ready_s": float(r),
            "upload_s": float(p),
            "weight": float(rng.integers(1, 20)),
        }
        if groups:
            c["group"] = f"g{i % groups}"
        out.append(c)
    return out


# ------------------------------------------------------------------ independent oracles
def feasible_by_simulation(clients: list[dict], deadline: float) -> bool:
    t = 0.0
    for c in sorted(clients, key=lambda c: c["ready_s"]):
        t = max(t, c["ready_s"]) + c["upload_s"]
        if t > deadline + 1e-9:
            return False
    return True


def feasible_by_any_order(clients: list[dict], deadline: float) -> bool:
    for perm in itertools.permutations(clients):
        t = 0.0
        for c in perm:
            t = max(t, c["ready_s"]) + c["upload_s"]
            if t > deadline + 1e-9:
                break
        else:
            return True
    return not clients


def brute_shared(clients: list[dict], deadline: float, weighted: bool, ok=lambda s: True) -> float:
    best = -math.inf
    for k in range(len(clients) + 1):
        for sub in itertools.combinations(clients, k):
            if ok(sub) and feasible_by_simulation(list(sub), deadline):
                v = sum(c["weight"] for c in sub) if weighted else float(k)
                best = max(best, v)
    return best


# ------------------------------------------------------------------ known answers
def test_pinedo_moore_hodgson_example() -> None:
    # Pinedo, Example 3.3.1: p = (7, 8, 4, 6, 6), d = (9, 17, 18, 19, 21); optimum: 3 on time
    p = np.array([7, 8, 4, 6, 6], dtype=float)
    d = np.array([9, 17, 18, 19, 21], dtype=float)
    keep = A.moore_hodgson(p, d)
    assert keep.sum() == 3
    assert sorted(np.flatnonzero(keep) + 1) == [3, 4, 5]  # jobs 1 and 2 are late
    # as a round: D = 21, ready = D - d
    clients = [{"id": f"j{j + 1}", "ready_s": 21.0 - d[j], "upload_s": p[j]} for j in range(5)]
    inst = make(clients, deadline=21.0)
    for method in ("fast", "milp"):
        r = hetopt.solve(inst, "max_clients", FAST, method=method)
        assert r.status == Status.OPTIMAL and r.ok
        assert r.objective_value == 3


def test_erd_order_is_optimal_on_tiny_sets() -> None:
    # the shared-uplink model fixes the upload order to earliest-ready-first
    for seed in range(40):
        clients = random_clients(5, seed, deadline=60.0)
        for k in range(1, 6):
            for sub in itertools.combinations(clients, k):
                assert feasible_by_simulation(list(sub), 60.0) == feasible_by_any_order(
                    list(sub), 60.0
                )


@pytest.mark.parametrize("seed", range(12))
def test_tiny_brute_force_shared(seed: int) -> None:
    clients = random_clients(7, seed, deadline=80.0)
    inst = make(clients, deadline=80.0)
    for objective, weighted in (("max_clients", False), ("max_weight", True)):
        want = brute_shared(clients, 80.0, weighted)
        for method in ("fast", "milp"):
            r = hetopt.solve(inst, objective, FAST, method=method)
            assert r.status == Status.OPTIMAL and r.ok, r.verification
            assert r.objective_value == pytest.approx(want)
        g = hetopt.solve(inst, objective, FAST, method="greedy")
        assert g.status == Status.FEASIBLE and g.ok
        assert g.objective_value <= want + 1e-9


@pytest.mark.parametrize(("n", "seed"), [(7, 0), (7, 1), (10, 2), (14, 3)])
def test_disjunctive_formulation_needs_no_order_lemma(n: int, seed: int) -> None:
    # the order-free MILP (pair binaries, big-M from the deadline) agrees with the
    # ERD-ordered MILP and Moore-Hodgson: an MILP-level check of the order lemma
    clients = random_clients(n, 40 + seed, deadline=80.0, groups=2)
    inst = make(clients, deadline=80.0, group_max={"g0": 3})
    for objective in ("max_clients", "max_weight"):
        d = hetopt.solve(inst, objective, FAST, formulation="disjunctive")
        e = hetopt.solve(inst, objective, FAST, formulation="erd")
        assert d.status == e.status == Status.OPTIMAL and d.ok and e.ok
        assert d.info["formulation"] == "disjunctive"
        assert d.objective_value == pytest.approx(e.objective_value)
        if n <= 10:
            ok = lambda s: sum(c["group"] == "g0" for c in s) <= 3  # noqa: E731
            want = brute_shared(clients, 80.0, objective == "max_weight", ok)
            assert d.objective_value == pytest.approx(want)
    free = make(clients, deadline=80.0)
    arr = free.arrays
    d = hetopt.solve(free, "max_clients", FAST, formulation="disjunctive")
    assert d.objective_value == A.moore_hodgson(arr.upload, arr.slack).sum()


@pytest.mark.parametrize("seed", range(8))
def test_tiny_brute_force_side_constraints(seed: int) -> None:
    clients = random_clients(7, seed, deadline=80.0, groups=2)
    must, excl = [clients[1]["id"]], [clients[2]["id"]]
    inst = make(
        clients,
        deadline=80.0,
        max_clients=3,
        group_min={"g1": 1},
        must_include=must,
        exclude=excl,
    )

    def ok(sub: tuple) -> bool:
        ids = {c["id"] for c in sub}
        return (
            len(sub) <= 3
            and set(must) <= ids
            and not ids & set(excl)
            and sum(c["group"] == "g1" for c in sub) >= 1
        )

    for objective, weighted in (("max_clients", False), ("max_weight", True)):
        want = brute_shared(clients, 80.0, weighted, ok)
        r = hetopt.solve(inst, objective, FAST)
        assert r.info["method"] in ("milp", "precheck")
        if want == -math.inf:
            assert r.status == Status.INFEASIBLE
        else:
            assert r.status == Status.OPTIMAL and r.ok, r.verification
            assert r.objective_value == pytest.approx(want)


# ------------------------------------------------------------------ MILP vs oracles
@pytest.mark.parametrize(
    ("n", "seed"),
    [(20, 0), (20, 1), (50, 2), (100, 3)]
    + [pytest.param(n, s, marks=pytest.mark.slow) for n, s in [(200, 4), (300, 5), (500, 6)]],
)
def test_milp_matches_moore_hodgson(n: int, seed: int) -> None:
    clients = random_clients(n, seed, deadline=1000.0, integer=False)
    inst = make(clients, deadline=1000.0)
    arr = inst.arrays
    want = int(A.moore_hodgson(arr.upload, arr.slack).sum())
    assert want == A.max_on_time_count(arr.upload, arr.slack)  # a second exact algorithm
    r = hetopt.solve(inst, "max_clients", FAST, method="milp")
    assert r.status == Status.OPTIMAL and r.ok, r.verification
    assert r.objective_value == want
    f = hetopt.solve(inst, "max_clients", FAST)
    assert f.info["method"] == "moore_hodgson" and f.objective_value == want and f.ok


@pytest.mark.parametrize(
    ("n", "seed"),
    [(20, 10), (50, 11), (80, 12)]
    + [pytest.param(n, s, marks=pytest.mark.slow) for n, s in [(200, 13), (500, 14)]],
)
def test_weighted_milp_matches_lawler_moore(n: int, seed: int) -> None:
    clients = random_clients(n, seed, deadline=1000.0, integer=True)
    inst = make(clients, deadline=1000.0)
    r = hetopt.solve(inst, "max_weight", FAST, method="milp")
    f = hetopt.solve(inst, "max_weight", FAST)
    assert f.info["method"] == "lawler_moore" and f.ok
    assert r.status == Status.OPTIMAL and r.ok
    assert r.objective_value == pytest.approx(f.objective_value, rel=1e-6)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ps=st.lists(st.integers(1, 15), min_size=1, max_size=8),
    seed=st.integers(0, 10_000),
)
def test_property_fast_path_matches_brute_force(ps: list[int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    D = 40.0
    clients = [
        {
            "id": f"c{i}",
            "ready_s": float(rng.integers(0, 40)),
            "upload_s": float(p),
            "weight": float(rng.integers(0, 9)),
        }
        for i, p in enumerate(ps)
    ]
    inst = make(clients, deadline=D)
    assert hetopt.solve(inst, "max_clients", FAST).objective_value == brute_shared(
        clients, D, False
    )
    rw = hetopt.solve(inst, "max_weight", FAST)
    assert rw.info["method"] == "lawler_moore"
    assert rw.objective_value == pytest.approx(brute_shared(clients, D, True))


def test_lawler_moore_decimal_scaling_and_fallback() -> None:
    clients = random_clients(12, 3, deadline=50.0)
    half = [{**c, "upload_s": c["upload_s"] + 0.5} for c in clients]
    inst = make(half, deadline=50.0)
    assert fast_path_blocker(inst, "max_weight") is None  # 0.5 s scales by 10 exactly
    r = hetopt.solve(inst, "max_weight", FAST)
    assert r.info["method"] == "lawler_moore"
    assert r.objective_value == pytest.approx(brute_shared(half, 50.0, True))
    odd = [{**c, "upload_s": c["upload_s"] + 1 / 3} for c in clients]
    inst = make(odd, deadline=50.0)
    assert fast_path_blocker(inst, "max_weight") is not None
    r = hetopt.solve(inst, "max_weight", FAST)
    assert r.info["method"] == "milp" and "fast_path_blocker" in r.info
    assert r.objective_value == pytest.approx(brute_shared(odd, 50.0, True))
    with pytest.raises(hetopt.errors.HetoptError, match="fast path does not apply"):
        hetopt.solve(inst, "max_weight", FAST, method="fast")


def test_max_clients_cap_fast_and_weighted() -> None:
    clients = random_clients(40, 7, deadline=500.0)
    inst = make(clients, deadline=500.0, max_clients=4)
    r = hetopt.solve(inst, "max_clients", FAST)
    assert r.info["method"] == "moore_hodgson" and r.objective_value == 4 and r.ok
    # the cap binds for max_weight: Lawler-Moore does not model it, the MILP runs
    w = hetopt.solve(inst, "max_weight", FAST)
    assert w.info["method"] == "milp" and w.ok
    assert w.objective_value == pytest.approx(brute_capped(clients, 500.0, 4))


def brute_capped(clients: list[dict], D: float, cap: int) -> float:
    best = 0.0
    for k in range(cap + 1):
        for sub in itertools.combinations(clients, k):
            if feasible_by_simulation(list(sub), D):
                best = max(best, sum(c["weight"] for c in sub))
    return best


def test_fedcs_greedy_gap_reported() -> None:
    # one early long upload blocks three short ones: greedy takes the short ones... or not
    clients = [
        {"id": "big", "ready_s": 0.0, "upload_s": 9.0, "weight": 10.0},
        {"id": "a", "ready_s": 1.0, "upload_s": 3.0, "weight": 1.0},
        {"id": "b", "ready_s": 1.0, "upload_s": 3.0, "weight": 1.0},
        {"id": "c", "ready_s": 1.0, "upload_s": 3.0, "weight": 1.0},
    ]
    inst = make(clients, deadline=10.0)
    r = hetopt.solve(inst, "max_clients", FAST)
    # greedy: at t=0 only 'big' is ready (increment 9) vs a (1 + 3 = 4): takes a, b, c (t=10)
    assert r.objective_value == 3 and r.info["greedy_objective"] == 3
    w = hetopt.solve(inst, "max_weight", FAST)
    assert w.objective_value == 10.0
    assert w.info["greedy_objective"] == 3.0
    assert w.info["greedy_gap"] == pytest.approx(0.7)


# ------------------------------------------------------------------ fast path at scale
def _big_instance(n: int, seed: int) -> ClientSelectionInstance:
    rng = np.random.default_rng(seed)
    ready = np.round(rng.uniform(0, 3000, n), 1)
    upload = np.round(rng.lognormal(np.log(8.0), 1, n), 1) + 0.1  # ~300 fit: the DP is cheap
    clients = [
        {"id": f"c{i}", "ready_s": r, "upload_s": p}
        for i, (r, p) in enumerate(zip(ready.tolist(), upload.tolist(), strict=True))
    ]
    return make(clients, deadline=3000.0)


@pytest.mark.parametrize("seed", range(20))
def test_moore_hodgson_matches_count_dp(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    p = rng.lognormal(0, 1, n)
    d = rng.uniform(0, 40, n)
    assert A.moore_hodgson(p, d).sum() == A.max_on_time_count(p, d)


def _check_big(n: int) -> None:
    """The fast path's answer at scale (its time is measured by the benchmark
    ``client_selection/fast_mh/*`` in ``benchmarks/bench_client_selection.py``, never
    asserted here)."""
    inst = _big_instance(n, 5)
    arr = inst.arrays
    r = hetopt.solve(inst, "max_clients", FAST, baseline=False)
    assert r.info["method"] == "moore_hodgson" and r.status == Status.OPTIMAL
    assert r.ok, r.verification
    assert len(r.tables["selection"]) == n
    # independent checks: FedCS's greedy is a lower bound; the count DP is exact
    g = A.fedcs_greedy(arr.ready, arr.upload, arr.deadline)
    assert r.objective_value >= g.sum()
    if n <= 100_000:
        assert r.objective_value == A.max_on_time_count(arr.upload, arr.slack, A.REL_TOL * 3000.0)


def test_fast_path_1e5() -> None:
    _check_big(100_000)


@pytest.mark.slow
def test_fast_path_1e6() -> None:
    _check_big(1_000_000)


# ------------------------------------------------------------------ parallel uplink
def brute_parallel(inst: ClientSelectionInstance, weighted: bool) -> float:
    arr = inst.arrays
    need = A.parallel_need_mbps(arr.ready, arr.deadline, inst.update_mb or 0.0)
    ok = arr.ready + arr.upload <= arr.deadline
    best = 0.0
    for k in range(arr.n + 1):
        for sub in itertools.combinations(range(arr.n), k):
            s = list(sub)
            if (
                ok[s].all()
                and need[s].sum() <= (inst.bandwidth_budget_mbps or math.inf) + 1e-9
                and (inst.max_clients is None or k <= inst.max_clients)
            ):
                best = max(best, arr.weight[s].sum() if weighted else float(k))
    return best


@pytest.mark.parametrize("seed", range(6))
def test_parallel_knapsack_brute_force(seed: int) -> None:
    clients = random_clients(8, seed, deadline=100.0)
    inst = make(
        clients,
        deadline=100.0,
        uplink="parallel",
        update_mb=10.0,
        bandwidth_budget_mbps=6.0,
        max_clients=5,
    )
    for objective, weighted in (("max_clients", False), ("max_weight", True)):
        want = brute_parallel(inst, weighted)
        r = hetopt.solve(inst, objective, FAST)
        assert r.ok and r.status == Status.OPTIMAL
        assert r.objective_value == pytest.approx(want)
        m = hetopt.solve(inst, objective, FAST, method="milp")
        assert m.objective_value == pytest.approx(want)
    assert hetopt.solve(inst, "max_clients", FAST).info["method"] == "smallest_need_first"
    sel = hetopt.solve(inst, "max_clients", FAST).tables["selection"]
    chosen = sel[sel.selected]
    assert chosen["bandwidth_mbps"].sum() <= 6.0 + 1e-9
    assert (chosen["finish_s"] <= 100.0).all()


@pytest.mark.parametrize("seed", range(4))
def test_parallel_fast_path_with_must_include_and_exclude(seed: int) -> None:
    clients = random_clients(8, 20 + seed, deadline=100.0)
    fits = [c["id"] for c in clients if c["ready_s"] + c["upload_s"] <= 100.0]
    must, excl = fits[-1:], fits[:1]
    inst = make(
        clients,
        deadline=100.0,
        uplink="parallel",
        update_mb=10.0,
        bandwidth_budget_mbps=5.0,
        max_clients=4,
        must_include=must,
        exclude=excl,
    )
    arr = inst.arrays
    need = A.parallel_need_mbps(arr.ready, 100.0, 10.0)
    best = -1
    for k in range(5):
        for sub in itertools.combinations(range(8), k):
            ids = {arr.ids[i] for i in sub}
            s = list(sub)
            if (
                set(must) <= ids
                and not ids & set(excl)
                and (arr.ready[s] + arr.upload[s] <= 100.0).all()
                and need[s].sum() <= 5.0 + 1e-9
            ):
                best = max(best, k)
    r = hetopt.solve(inst, "max_clients", FAST)
    if best < 0:
        assert r.status == Status.INFEASIBLE
    else:
        assert r.info["method"] == "smallest_need_first" and r.ok
        assert r.objective_value == best
        assert hetopt.solve(inst, "max_clients", FAST, method="milp").objective_value == best


def test_parallel_without_budget_takes_everyone_who_fits() -> None:
    clients = random_clients(30, 4, deadline=100.0)
    inst = make(clients, deadline=100.0, uplink="parallel")
    fits = sum(c["ready_s"] + c["upload_s"] <= 100.0 for c in clients)
    r = hetopt.solve(inst, "max_clients", FAST)
    assert r.info["method"] == "sort" and r.objective_value == fits and r.ok


# ------------------------------------------------------------------ Oort testing selection
def oort_brute(inst: ClientSelectionInstance) -> float:
    """Min duration by subsets x candidate durations x max-flow (independent of the MILP)."""
    arr = inst.arrays
    targets = inst.class_targets or {}
    need = sum(targets.values())
    best = math.inf
    n = arr.n
    for k in range(1, (inst.max_clients or n) + 1):
        for sub in itertools.combinations(range(n), k):
            cands = sorted(
                {
                    arr.ready[i] + arr.upload[i] + arr.sample_s[i] * q
                    for i in sub
                    for q in range(need + 1)
                }
            )
            for T in cands:
                if best <= T:
                    break
                g = nx.DiGraph()
                ok = True
                for i in sub:
                    fixed = arr.ready[i] + arr.upload[i]
                    if fixed > T + 1e-9:
                        ok = False
                        break
                    a = arr.sample_s[i]
                    cap = need if a == 0 else math.floor((T - fixed) / a + 1e-9)
                    g.add_edge(("c", i), "t", capacity=cap)
                    for cls, v in inst.clients[i].samples.items():
                        if cls in targets:
                            g.add_edge(("k", cls), ("c", i), capacity=v)
                if not ok:
                    continue
                for cls, t in targets.items():
                    g.add_edge("s", ("k", cls), capacity=t)
                if need == 0 or ("s" in g and nx.maximum_flow_value(g, "s", "t") >= need):
                    best = T
                    break
    return best


@pytest.mark.parametrize(
    ("seed", "rates"),
    [(s, (0.0, 0.5, 1.0, 2.0)) for s in range(5)] + [(s, (0.0,)) for s in range(5, 8)],
)
def test_oort_testing_selection_brute_force(seed: int, rates: tuple[float, ...]) -> None:
    rng = np.random.default_rng(100 + seed)
    clients = [
        {
            "id": f"c{i}",
            "ready_s": float(rng.integers(1, 30)),
            "upload_s": float(rng.integers(1, 10)),
            "sample_s": float(rng.choice(rates)),
            "samples": {"x": int(rng.integers(0, 6)), "y": int(rng.integers(0, 6))},
        }
        for i in range(6)
    ]
    tx = max(1, sum(c["samples"]["x"] for c in clients) // 2)
    ty = max(1, sum(c["samples"]["y"] for c in clients) // 3)
    inst = make(clients, deadline=100.0, max_clients=3, class_targets={"x": tx, "y": ty})
    want = oort_brute(inst)
    r = hetopt.solve(inst, "min_duration", FAST)
    if want == math.inf:
        assert r.status == Status.INFEASIBLE
        return
    assert r.status.has_solution and r.ok, r.verification
    # the MILP counts samples fractionally, then whole samples are assigned exactly:
    # bound <= integer optimum <= value <= bound + one sample's time
    assert r.bound <= want + 1e-6 <= r.objective_value + 2e-6
    assert r.objective_value <= r.bound + max(rates) + 1e-6
    if r.status == Status.OPTIMAL:  # optimal within HiGHS's default mip_rel_gap 1e-4
        assert r.objective_value == pytest.approx(want, rel=1e-4)
    if max(rates) == 0:
        assert r.status == Status.OPTIMAL
    cs = r.tables["class_samples"]
    assert cs.groupby("class")["samples"].sum().to_dict() == {"x": tx, "y": ty}
    lp = hetopt.solve(inst, "min_duration", FAST, method="lp_round")
    assert lp.info["method"] == "lp_round"
    if lp.status.has_solution:
        assert lp.ok and lp.bound <= want + 1e-6 <= lp.objective_value + 2e-6


def test_oort_lp_round_on_generated_pool() -> None:
    inst = generate(80, seed=3, objective="min_duration", max_clients=8, classes=4)
    exact = hetopt.solve(inst, "min_duration", FAST.replace(time_limit_s=20))
    lp = hetopt.solve(inst, "min_duration", FAST.replace(time_limit_s=20), method="lp_round")
    assert lp.status in (Status.OPTIMAL, Status.FEASIBLE) and lp.ok, lp.verification
    assert lp.bound <= lp.objective_value + 1e-9
    assert lp.gap == pytest.approx((lp.objective_value - lp.bound) / lp.objective_value)
    assert exact.ok and exact.bound <= exact.objective_value + 1e-9
    assert lp.bound <= exact.objective_value * (1 + 1e-6)
    assert lp.objective_value >= exact.bound * (1 - 1e-6)


@pytest.mark.slow
def test_oort_lp_round_on_a_larger_pool() -> None:
    inst = generate(
        1500, seed=8, objective="min_duration", max_clients=30, classes=10, target_fraction=0.005
    )
    r = hetopt.solve(inst, "min_duration", FAST.replace(time_limit_s=120), method="lp_round")
    assert r.info["method"] == "lp_round"
    assert r.info["coverage_bound"] <= r.objective_value + 1e-9
    assert r.status in (Status.OPTIMAL, Status.FEASIBLE) and r.ok, r.verification
    assert r.bound <= r.objective_value + 1e-9
    assert len(r.tables["selection"]) == 1500


def test_min_duration_needs_targets() -> None:
    inst = make(random_clients(3, 0))
    with pytest.raises(InstanceError, match="class_targets"):
        hetopt.solve(inst, "min_duration")


# ------------------------------------------------------------------ statuses and tables
def test_infeasible_statuses() -> None:
    clients = random_clients(6, 1, deadline=50.0, groups=2)
    late = {"id": "late", "ready_s": 49.0, "upload_s": 5.0}
    inst = make([*clients, late], deadline=50.0, must_include=["late"])
    r = hetopt.solve(inst, "max_clients")
    assert r.status == Status.INFEASIBLE and "late" in r.termination
    inst = make(clients, deadline=50.0, group_min={"g0": 4})
    assert hetopt.solve(inst, "max_clients").status == Status.INFEASIBLE
    inst = make(clients, deadline=50.0, max_clients=1, must_include=["c0", "c1"])
    assert hetopt.solve(inst, "max_clients").status == Status.INFEASIBLE
    # a quota on a group none of whose members can upload in time (no solver needed)
    late2 = {"id": "late2", "ready_s": 49.0, "upload_s": 5.0, "group": "slow"}
    inst = make([*clients, late2], deadline=50.0, group_min={"slow": 1})
    r = hetopt.solve(inst, "max_clients", method="milp")
    assert r.status == Status.INFEASIBLE and "group_min.slow" in r.termination


def test_quota_member_without_samples_can_fill_a_testing_quota() -> None:
    clients = [
        {"id": "a", "ready_s": 1.0, "upload_s": 1.0, "samples": {"x": 5}, "group": "big"},
        {"id": "b", "ready_s": 7.0, "upload_s": 1.0, "group": "small"},
    ]
    inst = make(clients, class_targets={"x": 3}, group_min={"small": 1})
    r = hetopt.solve(inst, "min_duration", FAST)
    assert r.status == Status.OPTIMAL and r.ok
    assert r.objective_value == 8.0  # b must take part, and it needs 7 + 1 s


def test_time_limit_is_an_honest_status() -> None:
    inst = generate(3000, seed=1, groups=3, time_resolution_s=None)
    d = {**inst.to_dict(), "group_min": {"g0": 5}, "max_clients": 200}
    r = hetopt.solve(d, "max_weight", SolveOptions(threads=1, time_limit_s=0.05))
    if r.status == Status.OPTIMAL:  # a fast machine: then it must be proven
        assert r.gap is not None and r.gap <= 1e-4 and r.ok
    elif r.status == Status.FEASIBLE:
        assert r.ok and r.bound >= r.objective_value - 1e-9 and r.gap is not None
    else:
        assert r.status == Status.NO_SOLUTION and r.objective_value is None
        assert r.bound is None or r.bound > 0


def test_selection_table_lists_every_client_and_verifier_catches_tampering() -> None:
    clients = random_clients(15, 2, deadline=120.0)
    inst = make(clients, deadline=120.0, exclude=["c3"])
    r = hetopt.solve(inst, "max_clients", FAST)
    sel = r.tables["selection"]
    assert list(sel["client"]) == [c["id"] for c in clients]
    assert not sel.loc[sel.client == "c3", "selected"].any()
    chosen = sel[sel.selected].sort_values("upload_order")
    assert (chosen["upload_start_s"] >= chosen["ready_s"] - 1e-9).all()
    assert (chosen["finish_s"] <= 120.0 + 1e-9).all()
    assert (
        chosen["upload_start_s"].to_numpy()[1:] >= chosen["finish_s"].to_numpy()[:-1] - 1e-9
    ).all()
    verify = hetopt.kinds.get_kind("client_selection").verify

    def broken(df):
        from dataclasses import replace

        return verify(inst, replace(r, tables={"selection": df}))

    assert broken(sel).ok
    assert not broken(sel.iloc[1:]).ok  # a client missing
    bad = sel.copy()
    bad.loc[bad.client == "c3", "selected"] = True
    assert not broken(bad).ok  # excluded client selected
    bad = sel.copy()
    i = bad.index[bad.selected][0]
    bad.loc[i, "finish_s"] = 500.0
    assert not broken(bad).ok  # late / wrong duration
    bad = sel.copy()
    idx = bad.index[bad.selected]
    if len(idx) > 1:
        bad.loc[idx[1], "upload_start_s"] = bad.loc[idx[0], "upload_start_s"]
        bad.loc[idx[1], "finish_s"] = (
            bad.loc[idx[1], "upload_start_s"] + bad.loc[idx[1], "upload_s"]
        )
        assert not broken(bad).ok  # overlapping uploads


# ------------------------------------------------------------------ validation and CLI
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"round_deadline_s": -1}, "round_deadline_s"),
        ({"uplink": "radio"}, "uplink"),
        ({"clients": [{"id": "a", "ready_s": 1.0, "upload_s": -2.0}]}, "clients[0].upload_s"),
        (
            {"clients": [{"id": "a", "ready_s": 1.0, "upload_s": 2.0}] * 2},
            "clients[1].id",
        ),
        ({"must_include": ["zz"]}, "must_include[0]"),
        ({"exclude": ["a"], "must_include": ["a"]}, "exclude[0]"),
        ({"group_min": {"nope": 1}}, "group_min.nope"),
        ({"bandwidth_budget_mbps": 5.0}, "bandwidth_budget_mbps"),
        ({"uplink": "parallel", "bandwidth_budget_mbps": 5.0}, "update_mb"),
        ({"class_targets": {"zebra": 3}}, "class_targets.zebra"),
        ({"objective": "fastest"}, "objective"),
        (
            {"clients": [{"id": "a", "ready_s": 1.0, "upload_s": 2.0, "colour": 1}]},
            "clients[0].colour",
        ),
    ],
)
def test_invalid_instances_name_the_field(change: dict, field: str) -> None:
    base = {
        "kind": "client_selection",
        "round_deadline_s": 100.0,
        "clients": [{"id": "a", "ready_s": 1.0, "upload_s": 2.0, "group": "g"}],
    }
    with pytest.raises(InstanceError) as err:
        hetopt.instance_from_dict({**base, **change})
    assert field in str(err.value)


def test_cli_generate_solve_and_bad_file(tmp_path) -> None:
    runner = CliRunner()
    out = tmp_path / "i.json"
    res = runner.invoke(
        main, ["generate", "client-selection", "--clients", "60", "--seed", "4", "-o", str(out)]
    )
    assert res.exit_code == 0, res.output
    res = runner.invoke(main, ["solve", str(out), "--json"])
    assert res.exit_code == 0, res.output
    import json

    d = json.loads(res.output)
    assert d["info"]["method"] == "moore_hodgson" and len(d["tables"]["selection"]) == 60
    res = runner.invoke(main, ["solve", str(out), "-p", "method=greedy"])
    assert res.exit_code == 0 and "fedcs_greedy" in res.output
    res = runner.invoke(main, ["solve", str(out), "-p", "method=lp_round"])
    assert res.exit_code == 2 and "lp_round" in res.output
    bad = tmp_path / "bad.json"
    bad.write_text(out.read_text().replace('"round_deadline_s": 300.0', '"round_deadline_s": 0'))
    res = runner.invoke(main, ["solve", str(bad)])
    assert res.exit_code == 3
    assert "round_deadline_s" in res.output and "Traceback" not in res.output


def test_generator_is_seeded_and_valid() -> None:
    a = generate(50, seed=9, groups=3, uplink="parallel")
    b = generate(50, seed=9, groups=3, uplink="parallel")
    assert a.to_dict() == b.to_dict()
    assert a.bandwidth_budget_mbps and a.update_mb
    r = hetopt.solve(a, "max_weight", FAST)
    assert r.ok and r.info["method"] == "milp"


# ------------------------------------------------------------------ example instances
EXAMPLES = {
    "pinedo_3_3_1": 3.0,  # Pinedo, Scheduling, Example 3.3.1
    "fedcs_small": 13.0,
    "fedcs_quotas": 5.0,
    "parallel_budget": 11.5,
    "oort_testing": 162.5,
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_instances_known_answers(name: str, instances_dir) -> None:
    import json

    path = instances_dir / "client_selection" / f"{name}.json"
    inst = hetopt.read_instance(path)
    raw = json.loads(path.read_text())
    r = hetopt.solve(path, options=FAST)
    assert r.status == Status.OPTIMAL and r.ok
    assert r.objective_value == pytest.approx(EXAMPLES[name])
    cl, D = raw["clients"], inst.round_deadline_s
    if name == "pinedo_3_3_1":
        brute = brute_shared(cl, D, False)
    elif name == "fedcs_small":
        brute = brute_shared(cl, D, True, lambda s: len(s) <= 5)
    elif name == "fedcs_quotas":

        def ok(s: tuple) -> bool:
            ids = {c["id"] for c in s}
            return (
                len(s) <= 5
                and "tablet-c" in ids
                and "phone-g" not in ids
                and any(c["group"] == "asia" for c in s)
            )

        brute = brute_shared(cl, D, False, ok)
    elif name == "parallel_budget":
        brute = brute_parallel(inst, True)
    else:
        brute = oort_brute(inst)
    assert brute == pytest.approx(EXAMPLES[name])


# ------------------------------------------------------------------ the method choice
def test_method_for_picks_the_documented_method() -> None:
    from hetopt.kinds.client_selection import methods as M

    kind = hetopt.get_kind("client_selection")
    clients = random_clients(8, 1, deadline=80.0, groups=2)
    plain = make(clients, deadline=80.0)
    quotas = make(clients, deadline=80.0, group_min={"g0": 1})
    oort = make(
        [{**c, "samples": {"x": 3}} for c in clients], deadline=80.0, class_targets={"x": 4}
    )

    def pick(inst: ClientSelectionInstance, objective: str, **params: object) -> object:
        return kind.method_for(objective, inst, kind.parse_params(params))

    m = pick(plain, "max_clients")
    assert isinstance(m, M.WithBaseline) and isinstance(m.inner, M.Fast)
    assert isinstance(pick(plain, "max_clients", baseline=False), M.Fast)
    assert isinstance(pick(plain, "max_weight", method="milp", baseline=False), M.CountMilp)
    assert isinstance(pick(plain, "max_clients", method="greedy"), M.Greedy)
    assert isinstance(pick(quotas, "max_clients"), M.CountMilp)  # no greedy baseline
    assert isinstance(pick(quotas, "max_clients", method="fast"), M.Refused)
    assert isinstance(pick(oort, "min_duration"), M.Testing)
    assert isinstance(pick(oort, "min_duration", method="lp_round"), M.LpRound)
    assert isinstance(pick(oort, "min_duration", method="fast"), M.Refused)
    many = make(clients, deadline=80.0, max_clients=1, must_include=["c0", "c1"])
    assert isinstance(pick(many, "max_clients", method="fast"), M.Infeasible)
    # a refused combination still exports the objective's MILP (as before the pipeline)
    with pytest.raises(hetopt.UsageError, match="lp_round"):
        hetopt.solve(plain, "max_clients", FAST, method="lp_round")
    model = hetopt.build_model(plain, "max_clients", method="lp_round")
    assert model.name == "client_selection_shared"
    with pytest.raises(hetopt.UsageError, match="baseline"):
        hetopt.solve(plain, "max_clients", FAST, baseline="yes")
