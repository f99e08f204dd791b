"""Results as data: the published JSON Schema of ``--json`` output (generated from each
kind's declared tables and details) and the ``to_json`` / ``from_json`` round trip."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from jsonschema_subset import validator

import hetopt
from hetopt.cli import main
from hetopt.result import Result, SolverReport, StageReport, Verification
from hetopt.schema import result_schema

ROOT = Path(__file__).resolve().parents[2]


def _shipped(kind: str, max_bytes: int = 20_000) -> list[Path]:
    out = []
    for p in sorted((ROOT / "instances" / kind).rglob("*.json")):
        if p.stat().st_size > max_bytes:
            continue
        try:
            data = json.loads(p.read_text())
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and data.get("kind") == kind:
            out.append(p)
    return out


PORTED = [n for n in hetopt.kind_names() if hetopt.get_kind(n).tables]


def _cases() -> list[Any]:
    out = []
    for name in PORTED:
        for path in _shipped(name):
            for objective in hetopt.get_kind(name).objective_names():
                out.append(pytest.param(path, objective, id=f"{path.name}-{objective}"))
    return out


@pytest.mark.parametrize(("path", "objective"), _cases())
def test_every_shipped_result_matches_its_schema_and_round_trips(path: Path, objective: str):
    try:
        r = hetopt.solve(path, objective, hetopt.SolveOptions(time_limit_s=20, threads=1))
    except (hetopt.UsageError, hetopt.InstanceError):
        pytest.skip("objective does not apply to this instance")
    d = r.to_dict()
    schema = result_schema(hetopt.get_kind(r.kind))
    assert validator(schema)(json.loads(r.to_json())), f"{path.name}/{objective}"
    back = Result.from_json(r.to_json())
    assert back.to_dict() == d
    assert back.report == r.report
    kind = hetopt.get_kind(r.kind)
    for name, df in back.tables.items():
        table = next(t for t in kind.tables if t.name == name)
        assert list(df.columns) == list(r.tables[name].columns)
        for col in df.columns:
            c = table.column(str(col))
            assert c is not None
            if c.dtype == "float":
                assert df[col].dtype == np.float64, (name, col)
                np.testing.assert_array_equal(
                    df[col].to_numpy(), r.tables[name][col].to_numpy(dtype=float)
                )
            elif c.dtype in ("int", "bool") and len(df):
                assert df[col].dtype.kind == ("b" if c.dtype == "bool" else "i"), (name, col)


def _synthetic() -> Result:
    """A client_selection result with every awkward value: inf, NaN, numpy scalars and
    arrays, an empty table, unknown header numbers."""
    sel = pd.DataFrame(
        {
            "client": ["a", "b", "c"],
            "group": [None, "g", None],
            "selected": np.array([True, False, True]),
            "ready_s": np.array([1.0, np.inf, 2.5]),
            "upload_s": np.array([0.5, 1.0, -np.inf]),
            "finish_s": np.array([np.nan, 3.0, 4.0]),
            "upload_order": np.array([1, -1, 2], dtype=np.int32),
        }
    )
    empty = pd.DataFrame(
        {
            "client": pd.Series([], dtype=object),
            "class": pd.Series([], dtype=object),
            "samples": np.array([], dtype=np.int64),
        }
    )
    return Result(
        kind="client_selection",
        objective="max_clients",
        status=hetopt.Status.FEASIBLE,
        termination="feasible",
        objective_value=np.float64(2.0),
        bound=-math.inf,
        gap=math.nan,
        runtime_s=0.25,
        tables={"selection": sel, "class_samples": empty},
        verification=Verification(True, np.float64(math.inf), (), ("x",)),
        timings={"build_s": 0.1, "solve_s": math.inf},
        info={
            "method": "milp",
            "candidates": np.int64(3),
            "lp_bound": math.inf,
            "greedy_objective": np.float32(1.5),
        },
        report=SolverReport(1, 0.1, 2, 0, 0, {"main": StageReport(1, 0.1, 2, 0, 0)}),
    )


def test_inf_nan_numpy_and_empty_tables_round_trip():
    r = _synthetic()
    text = r.to_json()
    d = json.loads(text)
    assert d["bound"] is None and d["gap"] is None  # unknown header numbers are null
    assert d["objective_value"] == 2.0
    rows = d["tables"]["selection"]
    assert rows[1]["ready_s"] == "inf" and rows[2]["upload_s"] == "-inf"
    assert rows[0]["finish_s"] is None and rows[0]["upload_order"] == 1
    assert d["tables"]["class_samples"] == []
    assert d["columns"]["class_samples"] == ["client", "class", "samples"]
    assert d["info"]["candidates"] == 3 and d["info"]["lp_bound"] == "inf"
    assert validator(result_schema(hetopt.get_kind("client_selection")))(d)

    back = Result.from_json(text)
    assert back.to_json() == text
    sel = back.tables["selection"]
    assert sel["ready_s"].tolist()[1] == math.inf and sel["upload_s"].tolist()[2] == -math.inf
    assert math.isnan(sel["finish_s"].tolist()[0])
    assert sel["selected"].dtype == bool and sel["upload_order"].dtype == np.int64
    cs = back.tables["class_samples"]
    assert cs.empty and list(cs.columns) == ["client", "class", "samples"]
    assert cs["samples"].dtype == np.int64
    assert back.bound is None and back.gap is None and back.objective_value == 2.0
    assert back.verification is not None and back.verification.objective_value == math.inf
    assert back.timings["solve_s"] == math.inf
    assert back.info["lp_bound"] == math.inf and back.info["candidates"] == 3
    assert back.report == r.report


def test_from_json_reads_a_file_or_the_text(tmp_path: Path):
    r = _synthetic()
    path = tmp_path / "r.json"
    r.to_json(path)
    assert Result.from_json(path).to_dict() == Result.from_json(r.to_json()).to_dict()
    assert Result.from_json(str(path)).to_dict() == r.to_dict()


def test_schema_rejects_undeclared_tables_columns_and_details():
    kind = hetopt.get_kind("client_selection")
    ok = validator(result_schema(kind))
    d = json.loads(_synthetic().to_json())
    assert ok(d)
    bad = json.loads(json.dumps(d))
    bad["tables"]["allocation"] = []
    assert not ok(bad)
    bad = json.loads(json.dumps(d))
    bad["tables"]["selection"][0]["colour"] = "red"
    assert not ok(bad)
    bad = json.loads(json.dumps(d))
    bad["info"]["undeclared"] = 1
    assert not ok(bad)
    bad = json.loads(json.dumps(d))
    bad["info"]["candidates"] = 2.5  # an int detail
    assert not ok(bad)
    bad = json.loads(json.dumps(d))
    del bad["tables"]["selection"]  # a feasible result must carry its tables
    assert not ok(bad)
    bad["status"] = "infeasible"  # ... an infeasible one need not
    bad["tables"] = {}
    assert ok(bad)
    bad = json.loads(json.dumps(d))
    bad["tables"]["selection"][0]["ready_s"] = "fast"
    assert not ok(bad)


def test_unported_kind_gets_an_open_schema():
    for name in hetopt.kind_names():
        kind = hetopt.get_kind(name)
        s = result_schema(kind)
        assert s["properties"]["kind"] == {"const": name}
        if not kind.tables:
            assert "additionalProperties" not in s["properties"]["tables"]


def test_cli_schema_result_and_instance():
    runner = CliRunner()
    res = runner.invoke(main, ["schema", "client_selection", "--result"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output) == result_schema(hetopt.get_kind("client_selection"))
    res = runner.invoke(main, ["schema", "client_selection"])
    assert res.exit_code == 0
    expected = hetopt.get_kind("client_selection").instance_model.model_json_schema()
    assert json.loads(res.output) == expected
    res = runner.invoke(main, ["schema", "nope", "--result"])
    assert res.exit_code == 2
