"""The pipeline contract, exercised through the template kind (``tests/core/minimal_kind.py``).

Known answers: brute force over every subset (0/1 knapsack) and Dantzig's greedy
(fractional knapsack, exact for the LP relaxation)."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import highspy
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import hetopt
from hetopt import pipeline
from hetopt.cli import main
from hetopt.contract import UNSET, Column, Detail, Outcome, Table, check_details, check_tables
from hetopt.kinds import _CACHE, REGISTRY, KindEntry


@pytest.fixture(autouse=True)
def registered() -> Iterator[Any]:
    REGISTRY["minimal_knapsack"] = KindEntry("minimal_kind")
    try:
        yield hetopt.get_kind("minimal_knapsack")
    finally:
        REGISTRY.pop("minimal_knapsack", None)
        _CACHE.pop("minimal_knapsack", None)


def random_instance(seed: int, n: int = 7) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    w = rng.integers(1, 20, n).astype(float)
    v = rng.integers(0, 30, n).astype(float)
    return {
        "kind": "minimal_knapsack",
        "capacity_kg": float(np.floor(w.sum() * rng.uniform(0.2, 0.7))),
        "items": [
            {"id": f"i{k}", "value": float(v[k]), "weight_kg": float(w[k])} for k in range(n)
        ],
    }


def brute(data: dict[str, Any]) -> tuple[float, float]:
    """(best value, least weight among selections of that value)."""
    items = data["items"]
    best = (-1.0, 0.0)
    for mask in itertools.product((0, 1), repeat=len(items)):
        w = sum(it["weight_kg"] * x for it, x in zip(items, mask, strict=True))
        if w > data["capacity_kg"]:
            continue
        v = sum(it["value"] * x for it, x in zip(items, mask, strict=True))
        if v > best[0] or (v == best[0] and w < best[1]):
            best = (v, w)
    return best


def dantzig(data: dict[str, Any]) -> float:
    left, total = data["capacity_kg"], 0.0
    for it in sorted(data["items"], key=lambda it: -it["value"] / it["weight_kg"]):
        take = min(1.0, left / it["weight_kg"])
        total += take * it["value"]
        left -= take * it["weight_kg"]
        if left <= 0:
            break
    return total


@pytest.mark.parametrize("seed", range(8))
def test_build_method_matches_brute_force(seed: int) -> None:
    data = random_instance(seed)
    r = hetopt.solve(data, "max_value", hetopt.SolveOptions(mip_rel_gap=0))
    assert r.status == hetopt.Status.OPTIMAL and r.verification and r.verification.ok
    assert r.objective_value == pytest.approx(brute(data)[0])
    assert r.info == {"relaxed": False, **{k: v for k, v in r.info.items() if k != "relaxed"}}
    assert r.report is not None and r.report.solves == 1 and set(r.report.stages) == {"main"}
    assert {"build_s", "transfer_s", "solve_s", "load_s", "verify_s"} <= set(r.timings)


@pytest.mark.parametrize("seed", range(8))
def test_relaxation_matches_dantzig(seed: int) -> None:
    data = random_instance(seed)
    r = hetopt.solve(data, "max_value", relax=True)
    assert r.objective_value == pytest.approx(dantzig(data), rel=1e-7)


@pytest.mark.parametrize("seed", range(8))
def test_run_method_two_stages_on_one_live_model(seed: int) -> None:
    data = random_instance(seed)
    r = hetopt.solve(data, "max_value_then_min_weight", hetopt.SolveOptions(mip_rel_gap=0))
    value, weight = brute(data)
    assert r.status == hetopt.Status.OPTIMAL and r.verification and r.verification.ok
    assert r.objective_value == pytest.approx(value)
    assert r.info["weight_kg"] == pytest.approx(weight)
    assert r.report is not None and {k: s.solves for k, s in r.report.stages.items()} == {
        "value": 1,
        "weight": 1,
    }
    assert r.to_dict()["report"]["solves"] == 2


def test_result_round_trips_through_json() -> None:
    r = hetopt.solve(random_instance(1), "max_value_then_min_weight")
    back = hetopt.Result.from_dict(json.loads(r.to_json()))
    assert back.report == r.report
    assert back.tables["selection"].equals(r.tables["selection"])


def test_params_are_validated_once_with_one_clear_message(registered: Any) -> None:
    with pytest.raises(hetopt.UsageError, match=r"^relax must be true or false, got 'yes'$"):
        hetopt.solve(random_instance(0), relax="yes")
    with pytest.raises(hetopt.UsageError, match="does not take colour; it takes: relax"):
        hetopt.solve(random_instance(0), colour=1)
    assert registered.param_specs() == {
        "relax": {
            "type": "boolean",
            "default": False,
            "description": "solve the LP relaxation (fractional items)",
        }
    }


def test_cli_solve_kinds_and_param_errors(tmp_path: Path) -> None:
    path = tmp_path / "k.json"
    path.write_text(json.dumps(random_instance(2)))
    runner = CliRunner()
    ok = runner.invoke(main, ["solve", str(path), "-p", "relax=true", "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["info"]["relaxed"] is True
    bad = runner.invoke(main, ["solve", str(path), "-p", "relax=maybe"])
    assert bad.exit_code == 2
    assert bad.output.strip().splitlines() == [
        "hetopt: error: relax must be true or false, got 'maybe'"
    ]
    kinds = json.loads(runner.invoke(main, ["kinds", "--json"]).output)
    assert kinds["minimal_knapsack"]["parameters"]["relax"]["type"] == "boolean"


def test_exported_model_has_the_objective_the_user_reads(tmp_path: Path) -> None:
    data = random_instance(3)
    r = hetopt.solve(data, "max_value", hetopt.SolveOptions(mip_rel_gap=0))
    out = hetopt.export_model(data, tmp_path / "k.mps", "mps", "max_value")
    h = highspy.Highs()
    h.silent()
    h.readModel(str(out))
    h.setOptionValue("mip_rel_gap", 0.0)
    h.run()
    assert h.getInfo().objective_function_value == pytest.approx(r.objective_value)


# --------------------------------------------------------------------- enforcement
def test_a_rejected_solution_is_an_error(registered: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        registered,
        "verify",
        lambda inst, res: hetopt.Verification(ok=False, violations=("planted",)),
    )
    r = hetopt.solve(random_instance(4))
    assert r.status == hetopt.Status.ERROR and "planted" in r.termination


def test_undeclared_table_fails_verification(registered: Any) -> None:
    method = registered.methods["max_value"]
    real = method.extract

    def extract(*args: Any) -> Outcome:
        out = real(*args)
        out.tables["extra"] = pd.DataFrame({"a": [1]})
        return out

    method.extract = extract  # type: ignore[method-assign]
    try:
        r = hetopt.solve(random_instance(5))
    finally:
        del method.extract
    assert r.status == hetopt.Status.ERROR
    assert "table 'extra' is not declared" in r.termination


def test_undeclared_detail_is_an_error_under_the_test_suite(registered: Any) -> None:
    assert os.environ.get("HETOPT_CHECK_CONTRACT") == "1"  # set by tests/conftest.py
    session = pipeline.Session(registered)
    with pytest.raises(hetopt.SolveError, match="info entry 'mystery' is not declared"):
        pipeline.finish(
            registered,
            registered.instance_model.from_dict(random_instance(0)),
            "max_value",
            Outcome(status=hetopt.Status.INFEASIBLE, details={"mystery": 1}),
            session,
        )


def test_unset_bound_keeps_highs_and_none_drops_it(registered: Any) -> None:
    method = registered.methods["max_value"]
    real = method.extract
    data = random_instance(6)
    assert hetopt.solve(data).bound is not None  # UNSET: HiGHS's bound
    method.extract = lambda *a: Outcome(**{**real(*a).__dict__, "bound": None})  # type: ignore[method-assign]
    try:
        r = hetopt.solve(data)
    finally:
        del method.extract
    assert r.bound is None and r.gap is None
    assert UNSET is not None and not UNSET


def test_check_tables_and_details_directly() -> None:
    t = Table("t", "a table", (Column("a", "int", "x"), Column("b", "float", "y", optional=True)))
    assert check_tables([t], {"t": pd.DataFrame({"a": [1, 2]})}) == []
    assert check_tables([t], {"t": pd.DataFrame({"a": [1.5]})}) == [
        "table 't': column 'a' is not of type int"
    ]
    assert check_tables([t], {"t": pd.DataFrame({"b": [1.5]})}) == [
        "table 't': column 'a' is missing"
    ]
    assert check_tables([t], {}) == ["table 't' is missing"]
    assert check_tables([t], {"t": pd.DataFrame({"a": [1], "c": ["x"]})}) == [
        "table 't': column 'c' is not declared"
    ]
    d = Detail("n", "int", "a count")
    assert check_details([d], {"n": 3, "mip_nodes": 2}) == []
    assert check_details([d], {"n": 3.5}) == ["info entry 'n' is not of type int: 3.5"]


@pytest.mark.parametrize(
    ("values", "ok"),
    [
        (["a", "b"], True),
        (["a", None], True),
        (["a", float("nan")], True),
        ([None, None], True),
        ([], True),
        (["a", 1], False),
        (["a", b"x"], False),
    ],
)
def test_str_columns_are_checked_value_by_value(values: list, ok: bool) -> None:
    """A declared str column holds strings or missing values, as object or string dtype."""
    import pandas as pd

    from hetopt.contract import _dtype_ok

    assert _dtype_ok("str", pd.Series(values, dtype=object)) is ok
    if ok:
        assert _dtype_ok("str", pd.Series(values, dtype="string")) is True
    assert _dtype_ok("str", pd.Series([1, 2])) is False


def _check_tables_per_column(declared: Any, tables: Any) -> list[str]:
    """check_tables as it read every column (``df[col]``) before it took the dtypes
    once: the reference for the test below."""
    from hetopt.contract import _dtype_ok

    spec = {t.name: t for t in declared}
    problems: list[str] = []
    for name, df in tables.items():
        t = spec.get(name)
        if t is None:
            problems.append(f"table {name!r} is not declared by the kind")
            continue
        for col in df.columns:
            c = t.column(str(col))
            if c is None:
                problems.append(f"table {name!r}: column {col!r} is not declared")
            elif len(df) and not _dtype_ok(c.dtype, df[col]):
                problems.append(f"table {name!r}: column {col!r} is not of type {c.dtype}")
        for c in t.columns:
            if not c.optional and c.name not in df.columns:
                problems.append(f"table {name!r}: column {c.name!r} is missing")
    for t in declared:
        if not t.optional and t.name not in tables:
            problems.append(f"table {t.name!r} is missing")
    return problems


COLUMN_VALUES: dict[str, Any] = {
    "float": [1.5, 2.0],
    "int": [1, 2],
    "bool": [True, False],
    "str": ["a", "b"],
    "object_num": pd.Series([1, 2.5], dtype=object),
    "object_int": pd.Series([1, 2], dtype=object),
    "object_bool": pd.Series([True, False], dtype=object),
    "object_mixed": pd.Series(["a", 1], dtype=object),
    "object_none": pd.Series([None, None], dtype=object),
    "string": pd.Series(["a", None], dtype="string"),
    "Float64": pd.Series([1.0, None], dtype="Float64"),
    "Int64": pd.Series([1, None], dtype="Int64"),
    "category": pd.Series(["a", "b"], dtype="category"),
    "bytes": pd.Series([b"x", b"y"], dtype=object),
    "datetime": pd.to_datetime(["2020-01-01", "2020-01-02"]),
}


@pytest.mark.parametrize("dtype", ["str", "int", "float", "bool", "any"])
@pytest.mark.parametrize("rows", [2, 0])
def test_check_tables_reads_dtypes_once_with_the_same_answers(dtype: Any, rows: int) -> None:
    """Every declared dtype against columns of many pandas dtypes (and a repeated column
    name): the same violations, in the same order, as checking column by column."""
    t = Table("t", "a table", tuple(Column(k, dtype, "x") for k in COLUMN_VALUES))
    df = pd.DataFrame(
        {k: pd.Series(v).iloc[:rows].reset_index(drop=True) for k, v in COLUMN_VALUES.items()}
    )
    dup = pd.concat([df[["str", "int"]], df[["int"]]], axis=1)
    undeclared = df.assign(extra=1.0) if rows else df.assign(extra=[])
    for tables in ({"t": df}, {"t": dup}, {"t": undeclared, "u": df}, {}):
        assert check_tables([t], tables) == _check_tables_per_column([t], tables)


@pytest.mark.parametrize("rows", [2, 0])
def test_dtypes_read_from_the_frame_are_its_dtypes(rows: int) -> None:
    """check_tables reads a frame's dtypes from its block manager: the same list, in
    column order, as ``df.dtypes`` (many dtypes, a repeated column, no columns)."""
    from hetopt.contract import _dtypes

    df = pd.DataFrame(
        {k: pd.Series(v).iloc[:rows].reset_index(drop=True) for k, v in COLUMN_VALUES.items()}
    )
    dup = pd.concat([df[["str", "int"]], df[["int"]], df[["float"]]], axis=1)
    mixed = df.copy()
    mixed.insert(1, "late", 1.0)  # a block of its own between others
    for frame in (df, dup, mixed, df[[]], pd.DataFrame()):
        got = _dtypes(frame)
        assert got == frame.dtypes.tolist()
        assert [type(d) for d in got] == [type(d) for d in frame.dtypes.tolist()]


def test_frame_dtypes_read_from_blocks_are_pandas_dtypes() -> None:
    """``check_tables``' dtype read (each block's dtype at its columns) is
    ``df.dtypes.tolist()``: mixed, repeated-name, unconsolidated and empty frames."""
    from hetopt.contract import _dtypes

    mixed = pd.DataFrame({"a": [1, 2], "b": ["x", "y"], "c": [0.5, 1.5], "d": [True, False]})
    mixed["e"] = np.array([3, 4], dtype=np.int32)  # (a block of its own, added last)
    mixed.insert(1, "f", [9.0, 8.0])
    repeated = pd.concat([mixed[["a", "c"]], mixed[["c"]]], axis=1)
    frames = [mixed, repeated, pd.DataFrame(), pd.DataFrame({"a": []}), mixed.astype(object)]
    for df in frames:
        assert _dtypes(df) == df.dtypes.tolist()


@pytest.mark.parametrize("rows", [2, 0])
def test_check_tables_of_a_declaration_tuple_remembers_only_what_dtypes_decide(
    rows: int,
) -> None:
    """A kind's tuple of tables: the answers remembered for frames like one seen before
    (same string labels, same dtype objects, rows or none) are the reference answers,
    for frames in any order; a column whose values decide (object columns, a repeated
    name, labels that are not str) is read again every time."""
    t = (
        Table("t", "a table", tuple(Column(k, "str", "x") for k in ("a", "b"))),
        Table("u", "another", (Column("n", "int", "x"), Column("o", "float", "x", True))),
    )
    frames = [
        pd.DataFrame({"a": pd.Series(["x", "y"], dtype="string"), "b": ["p", "q"]}),
        pd.DataFrame({"a": pd.Series(["x", "y"], dtype="string"), "b": ["p", 1]}),
        pd.DataFrame({"a": pd.Series(["x", "y"], dtype="string"), "b": [1.0, 2.0]}),
        pd.DataFrame({"a": pd.Series(["x", "y"], dtype="string"), "c": [1.0, 2.0]}),
        pd.DataFrame({np.str_("a"): pd.Series(["x", "y"], dtype="string"), "b": ["p", "q"]}),
        pd.DataFrame({"a": pd.Series(["x", "y"], dtype="string"), np.str_("c"): [1.0, 2.0]}),
        pd.DataFrame({"a": pd.Series(["x", "y"], dtype="string"), 1: [1.0, 2.0]}),
        pd.DataFrame({"a": pd.Series(["x", "y"], dtype="string"), 1.0: [1.0, 2.0]}),
        pd.concat([pd.DataFrame({"a": ["x", "y"]}), pd.DataFrame({"a": [1, 2]})], axis=1),
    ]
    others = [
        pd.DataFrame({"n": [1, 2]}),
        pd.DataFrame({"n": [1.5, 2.0]}),
        pd.DataFrame({"n": pd.Series([1, 2], dtype=object)}),
        pd.DataFrame({"n": pd.Series([1, "x"], dtype=object)}),
        pd.DataFrame({"n": [1, 2], "o": [True, False]}),
        pd.DataFrame({"n": [1, 2], "c": [1.0, 2.0]}),
        pd.DataFrame({"n": [1, 2], np.str_("c"): [1.0, 2.0]}),
        pd.DataFrame({"n": [1, 2], 1: [1.0, 2.0]}),
        pd.DataFrame({"n": [1, 2], 1.0: [1.0, 2.0]}),
        pd.DataFrame({"n": [1, 2], True: [1.0, 2.0]}),
    ]
    frames = [f.iloc[:rows] for f in frames]
    others = [f.iloc[:rows] for f in others]
    order = [(f, g) for f in frames for g in others]
    for f, g in order + order[::-1] + order:
        for tables in ({"t": f, "u": g}, {"t": f}, {"u": g, "v": f}):
            assert check_tables(t, tables) == _check_tables_per_column(t, tables)


def test_check_details_of_a_declaration_tuple_is_the_same_each_time() -> None:
    declared = (Detail("n", "int", "x"), Detail("s", "str", "x"))
    for _ in range(2):
        assert check_details(declared, {"n": 3, "s": "a", "mip_nodes": 1}) == []
        assert check_details(declared, {"n": 3.5, "z": 1}) == [
            "info entry 'n' is not of type int: 3.5",
            "info entry 'z' is not declared by the kind",
        ]
    assert check_details(list(declared), {"s": 1}) == ["info entry 's' is not of type str: 1"]
