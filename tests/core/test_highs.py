"""The Pyomo -> HiGHS path: compilation, honest statuses, options, persistence."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyomo.environ as pyo
import pytest

import hetopt
from hetopt import OptionsError, SolveOptions, Status
from hetopt.highs import HighsModel, compile_model, solve_pyomo
from hetopt.pyomo_ext import LinearRows


def lp(sense: int = pyo.maximize) -> pyo.ConcreteModel:
    m = pyo.ConcreteModel()
    m.x = pyo.Var([0, 1], bounds=(0, None))
    m.obj = pyo.Objective(expr=m.x[0] + 2 * m.x[1], sense=sense)
    return m


def test_optimal_lp_with_ranged_and_equality_rows() -> None:
    m = lp()
    m.c_range = pyo.Constraint(expr=pyo.inequality(1, m.x[0] + m.x[1], 4))
    m.c_eq = pyo.Constraint(expr=m.x[0] - m.x[1] == 1)
    hm, raw, timings = solve_pyomo(m)
    assert raw.status == Status.OPTIMAL
    # x0 + x1 <= 4, x0 = x1 + 1 -> x1 = 1.5, x0 = 2.5, obj = 5.5
    assert raw.objective == pytest.approx(5.5)
    assert raw.value(hm.compiled, m.x[1]) == pytest.approx(1.5)
    assert hm.compiled.num_row == 2  # the ranged constraint is one row, not two
    assert set(timings) >= {"compile_s", "pass_s", "solve_s"}


def test_infeasible_and_unbounded_are_statuses() -> None:
    m = lp()
    m.c1 = pyo.Constraint(expr=m.x[0] + m.x[1] <= 1)
    m.c2 = pyo.Constraint(expr=m.x[0] + m.x[1] >= 3)
    assert solve_pyomo(m)[1].status == Status.INFEASIBLE
    u = lp()
    u.c = pyo.Constraint(expr=u.x[0] - u.x[1] <= 1)
    raw = solve_pyomo(u)[1]
    assert raw.status == Status.UNBOUNDED and raw.x is None


def market_split(seed: int, n: int = 40, m_rows: int = 4) -> pyo.ConcreteModel:
    """Cornuejols-Dawande market split with slacks: trivially feasible, hard to prove."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 100, size=(m_rows, n))
    b = a.sum(axis=1) // 2
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(n), domain=pyo.Binary)
    m.sp = pyo.Var(range(m_rows), bounds=(0, None))
    m.sm = pyo.Var(range(m_rows), bounds=(0, None))
    m.c = pyo.Constraint(
        range(m_rows),
        rule=lambda m, i: (
            sum(int(a[i, j]) * m.x[j] for j in range(n)) + m.sp[i] - m.sm[i] == int(b[i])
        ),
    )
    m.obj = pyo.Objective(expr=sum(m.sp[i] + m.sm[i] for i in range(m_rows)))
    return m


def test_time_limit_with_incumbent_is_feasible_with_bound_and_gap() -> None:
    m = market_split(1)
    hm = HighsModel(compile_model(m))
    hm.set_start(np.zeros(hm.compiled.num_col))  # x = 0 is feasible (slacks absorb b)
    raw = hm.solve(SolveOptions(time_limit_s=0.3, threads=1, seed=0))
    assert raw.status in (Status.FEASIBLE, Status.OPTIMAL)
    assert raw.bound is not None and raw.objective is not None
    assert raw.bound <= raw.objective + 1e-6
    if raw.status == Status.FEASIBLE:
        assert "time limit" in raw.termination.lower()
        assert raw.gap is not None and raw.gap > 0


def test_time_limit_without_incumbent_is_no_solution() -> None:
    # equality market split with no slack: HiGHS finds no solution in a tiny limit
    m = market_split(2)
    for i in m.sp:
        m.sp[i].fix(0)
        m.sm[i].fix(0)
    raw = HighsModel(compile_model(m)).solve(
        SolveOptions(time_limit_s=0.05, threads=1, highs_options={"mip_heuristic_effort": 0.0})
    )
    assert raw.status in (Status.NO_SOLUTION, Status.INFEASIBLE, Status.FEASIBLE, Status.OPTIMAL)
    if raw.status == Status.NO_SOLUTION:
        assert raw.x is None and raw.objective is None


def test_unknown_or_rejected_highs_option_raises() -> None:
    hm = HighsModel(compile_model(lp()))
    with pytest.raises(OptionsError, match="no_such_option"):
        hm.solve(SolveOptions(highs_options={"no_such_option": 1}))
    with pytest.raises(OptionsError, match="presolve"):
        hm.solve(SolveOptions(highs_options={"presolve": "sometimes"}))


def test_linear_rows_match_pyomo_constraints(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    A = rng.integers(-3, 4, size=(6, 5)).astype(float)
    lo = rng.uniform(-5, 0, 6)
    hi = lo + rng.uniform(0, 5, 6)
    results = []
    for vectorised in (True, False):
        m = pyo.ConcreteModel()
        m.x = pyo.Var(range(5), bounds=(-2, 2))
        if vectorised:
            r, c = np.nonzero(A)
            m.c_rows = LinearRows.from_coo(r, c, A[r, c], 6, lo, hi, list(m.x.values()))
        else:
            m.c_rows = pyo.Constraint(
                range(6),
                rule=lambda m, i: pyo.inequality(
                    lo[i], sum(A[i, j] * m.x[j] for j in range(5)), hi[i]
                ),
            )
        m.obj = pyo.Objective(expr=sum((j + 1) * m.x[j] for j in range(5)), sense=pyo.maximize)
        results.append(solve_pyomo(m)[1].objective)
        # the vectorised block is a real Pyomo constraint: Pyomo's LP writer handles it
        m.write(str(tmp_path / f"m{vectorised}.lp"), io_options={"symbolic_solver_labels": True})
    assert results[0] == pytest.approx(results[1])


def test_persistent_bound_change_resolves_warm() -> None:
    m = lp()
    m.cap = pyo.Constraint(expr=m.x[0] + m.x[1] <= 3)
    hm = HighsModel(compile_model(m))
    assert hm.solve().objective == pytest.approx(6.0)
    hm.set_row_bounds(m.cap, None, 5.0)
    assert hm.solve().objective == pytest.approx(10.0)
    hm.set_col_bounds(m.x[1], 0, 1)
    assert hm.solve().objective == pytest.approx(4 + 2)


def test_solve_options_validation_and_toml(tmp_path: Path) -> None:
    with pytest.raises(OptionsError):
        SolveOptions(time_limit_s=-1)
    with pytest.raises(OptionsError):
        SolveOptions(threads=0)
    with pytest.raises(OptionsError):
        SolveOptions(mip_rel_gap=1.5)
    f = tmp_path / "o.toml"
    f.write_text(
        '[solve]\ntime_limit_s = 5\nmip_rel_gap = 0.01\n[solve.highs_options]\npresolve = "off"\n'
    )
    o = SolveOptions.from_file(f)
    assert o.time_limit_s == 5 and o.mip_rel_gap == 0.01 and o.highs_options["presolve"] == "off"
    f.write_text("time_limit = 5\n")
    with pytest.raises(OptionsError, match="time_limit"):
        SolveOptions.from_file(f)


def test_constant_infeasible_row_is_infeasible_not_optimal() -> None:
    m = lp()
    m.x[0].fix(0)
    m.x[1].fix(0)
    m.c_bad = pyo.Constraint(expr=m.x[0] + m.x[1] >= 1)  # 0 >= 1 once fixed
    raw = solve_pyomo(m)[1]
    assert raw.status == Status.INFEASIBLE
    empty = pyo.ConcreteModel()
    empty.y = pyo.Var(bounds=(0, 0))
    empty.c_rows = LinearRows([], [], [0, 0], [1.0], [None], [empty.y])  # 0 >= 1
    empty.obj = pyo.Objective(expr=0 * empty.y)
    assert solve_pyomo(empty)[1].status == Status.INFEASIBLE


def test_options_do_not_leak_between_solves() -> None:
    hm = HighsModel(compile_model(lp()))
    hm.solve(SolveOptions(highs_options={"mip_abs_gap": 5.0}, time_limit_s=3))
    hm.solve(SolveOptions())

    def opt(name: str) -> object:
        got = hm.highs.getOptionValue(name)
        return got[1] if isinstance(got, tuple) else got

    assert opt("mip_abs_gap") != 5.0
    assert opt("time_limit") == float("inf")


KEY_OPTIONS = (
    "time_limit",
    "threads",
    "solver",
    "simplex_dual_edge_weight_strategy",
    "mip_abs_gap",
    "mip_rel_gap",
    "random_seed",
    "output_flag",
    "log_to_console",
    "presolve",
)


def _options(hm: HighsModel) -> dict[str, object]:
    out = {}
    for name in KEY_OPTIONS:
        got = hm.highs.getOptionValue(name)
        out[name] = got[1] if isinstance(got, tuple) else got
    return out


def test_a_resolve_with_the_same_options_holds_what_setting_them_again_gives() -> None:
    """A re-solve with the options of the last run sets none again (the fast path); HiGHS
    then holds exactly the options the full path sets, for a cold and a warm run, and any
    change (options that differ in one value, a new basis state) takes the full path."""
    m = lp()
    m.cap = pyo.Constraint(expr=m.x[0] + m.x[1] <= 3)
    hm = HighsModel(compile_model(m))
    gap = {"mip_abs_gap": 0.25}
    opts = SolveOptions(threads=1, seed=3, time_limit_s=60, highs_options=gap)
    for step in range(4):
        hm.solve(opts)
        applied = hm._applied
        hm._apply_options(opts, "auto")  # as the next run does
        assert (hm._applied is applied) == (step > 0)  # the first run was cold: set again
        fast = _options(hm)
        hm._applied = None  # the full path, from HiGHS's defaults
        hm._apply_options(opts, "auto")
        assert _options(hm) == fast, step
        assert fast["solver"] == "simplex" and fast["mip_abs_gap"] == 0.25
        hm.set_row_bounds(m.cap, None, 3.0 + step)
    gap["mip_abs_gap"] = 0.5  # (SolveOptions holds a copy: opts is unchanged)
    hm.solve(opts)
    assert _options(hm)["mip_abs_gap"] == 0.25
    hm.solve(opts.replace(highs_options=gap))  # equal but for one value: set again
    assert _options(hm)["mip_abs_gap"] == 0.5
    hm.solve(SolveOptions(threads=1))
    assert _options(hm)["mip_abs_gap"] != 0.5 and _options(hm)["time_limit"] == float("inf")
    assert hm.solve(SolveOptions(threads=1)).objective == pytest.approx(6.0 + 3 * 2.0)


# ------------------------------------ HiGHS answers that contradict themselves (MIP start)
# Found by the multi_resource min_cost property test (brute force: 3.0): HiGHS 1.16 with
# this greedy MIP start and presolve on ends "Optimal" at 2.0 with the start's point
# (cost 5.0), and hetopt reported 5.0 as optimal. The answer is now re-solved and said so.
INCONSISTENT_START = {
    "kind": "multi_resource",
    "servers": [
        {
            "id": "s0",
            "gpus": 3,
            "cpus": 17.0,
            "mem_gb": 375.0,
            "cost_per_hour": 3.0,
            "labels": {"rack": "r0"},
        },
        {
            "id": "s1",
            "gpus": 3,
            "cpus": 18.0,
            "mem_gb": 187.5,
            "cost_per_hour": 2.0,
            "labels": {"rack": "r0"},
        },
        {
            "id": "s2",
            "gpus": 2,
            "cpus": 2.0,
            "mem_gb": 200.0,
            "cost_per_hour": 5.0,
            "labels": {"rack": "r1"},
        },
    ],
    "jobs": [
        {
            "id": "j0",
            "gpus": 1,
            "profile": [{"cpus_per_gpu": 4.0, "mem_gb_per_gpu": 125.0, "throughput": 0.51}],
            "tags": ["a"],
        },
        {
            "id": "j1",
            "gpus": 1,
            "profile": [
                {"cpus_per_gpu": 2.0, "mem_gb_per_gpu": 20.0, "throughput": 0.34},
                {"cpus_per_gpu": 4.0, "mem_gb_per_gpu": 62.5, "throughput": 0.21},
            ],
            "tags": ["a"],
        },
        {
            "id": "j2",
            "gpus": 1,
            "profile": [
                {"cpus_per_gpu": 6.0, "mem_gb_per_gpu": 62.5, "throughput": 0.78},
                {"cpus_per_gpu": 1.0, "mem_gb_per_gpu": 125.0, "throughput": 1.0},
            ],
            "tags": ["a"],
        },
    ],
    "placement_rules": [
        {"rule": "max_per_group", "tag": "b", "scope": "server", "max_per_group": 2}
    ],
}


def test_an_inconsistent_mip_answer_is_solved_again_and_said(caplog) -> None:
    with caplog.at_level("WARNING", logger="hetopt.highs"):
        r = hetopt.solve(INCONSISTENT_START, "min_cost")
    assert r.status == hetopt.Status.OPTIMAL and r.verification.ok
    assert r.objective_value == pytest.approx(3.0)  # brute force over the 3 servers
    if "solved again" in r.termination:  # only where this HiGHS build needs it
        assert "did not match its own objective" in caplog.text
    no_start = hetopt.solve(INCONSISTENT_START, "min_cost", warm_start=False)
    assert no_start.objective_value == pytest.approx(3.0)


def test_the_consistency_check_compares_cx_with_the_reported_objective() -> None:
    from types import SimpleNamespace as NS

    from hetopt.highs import _MS, _inconsistent_mip_answer

    def fake(reported: float, x: list[float], feasible: int = 2) -> NS:
        info = NS(primal_solution_status=feasible, objective_function_value=reported)
        lp = NS(col_cost_=[1.0, 2.0], offset_=0.5)
        return NS(getInfo=lambda: info, getLp=lambda: lp, getSolution=lambda: NS(col_value=x))

    assert not _inconsistent_mip_answer(fake(5.5, [1.0, 2.0]), _MS.kOptimal)  # 1 + 4 + 0.5
    assert not _inconsistent_mip_answer(fake(5.5 + 1e-9, [1.0, 2.0]), _MS.kOptimal)
    assert _inconsistent_mip_answer(fake(2.0, [1.0, 2.0]), _MS.kOptimal)
    assert not _inconsistent_mip_answer(fake(2.0, [1.0, 2.0], feasible=0), _MS.kOptimal)
    assert not _inconsistent_mip_answer(fake(2.0, [1.0, 2.0]), _MS.kInfeasible)
