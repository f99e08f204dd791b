"""``hetopt convert azure-llm`` and the hourly re-solve of ``llm_serving``.

The trace excerpt is ``instances/llm_serving/azure_llm_2023`` (Splitwise's Azure LLM
inference trace, CC BY 4.0; see its SOURCE.md). Hand-made traces check the bucketing
and the rates exactly.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

import hetopt
from hetopt import Status
from hetopt.cli import main
from hetopt.kinds.llm_serving import LlmServingInstance
from hetopt.kinds.llm_serving.azure import parse_buckets, trace_periods
from hetopt.kinds.llm_serving.hourly import solve_hourly

DIR = Path(__file__).resolve().parents[3] / "instances" / "llm_serving"
CONV = DIR / "azure_llm_2023" / "AzureLLMInferenceTrace_conv_head300.csv"
CODE = DIR / "azure_llm_2023" / "AzureLLMInferenceTrace_code_head200.csv"
CATALOGUE = DIR / "gpu_catalogue.json"


def run(*args) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=True)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise AssertionError(f"hetopt {args} raised {res.exception!r}")
    return res.exit_code, res.stdout, res.stderr


def write_trace(path: Path, rows: list[tuple[str, int, int]]) -> Path:
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"] + [f"{t},{a},{b}" for t, a, b in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


TINY = [
    ("2023-11-16 18:00:00.0000000", 100, 10),
    ("2023-11-16 18:00:01.5000000", 600, 10),
    ("2023-11-16 18:00:02.0000000", 700, 300),
    ("2023-11-16 18:00:03.0000000", 50, 200),
    ("2023-11-16 18:00:10.0000000", 5000, 20),
]


def test_tiny_trace_buckets_by_hand(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.csv", TINY)
    out = tmp_path / "w.json"
    code, _, err = run("convert", "azure-llm", trace, "--buckets", "512/100", "-o", out)
    assert code == 0, err
    data = json.loads(out.read_text())
    assert data["trace"] == {
        "file": "t.csv",
        "requests": 5,
        "duration_s": 10.0,
        "start": "2023-11-16 18:00:00.0000000",
    }
    got = {b["id"]: (b["requests"], b["rate_rps"]) for b in data["buckets"]}
    # prompt [0,512) / [512,inf), output [0,100) / [100,inf)
    assert got == {
        "in0_out0": (1, 0.1),
        "in0_out1": (1, 0.1),
        "in1_out0": (2, 0.2),
        "in1_out1": (1, 0.1),
    }
    b = next(b for b in data["buckets"] if b["id"] == "in1_out0")
    assert b["input_tokens"] == 2800.0 and b["input_range"] == [600, 5000]
    assert "gpus" not in data  # a workload only without --gpus


@pytest.mark.parametrize("trace", [CONV, CODE], ids=["conv", "code"])
def test_no_request_is_lost(tmp_path: Path, trace: Path) -> None:
    with open(trace) as fh:
        rows = list(csv.DictReader(fh))
    stamps = [datetime.fromisoformat(r["TIMESTAMP"]) for r in rows]
    duration = (stamps[-1] - stamps[0]).total_seconds()
    out = tmp_path / "i.json"
    code, _, err = run("convert", "azure-llm", trace, "--gpus", CATALOGUE, "-o", out)
    assert code == 0, err
    data = json.loads(out.read_text())
    assert data["trace"]["requests"] == len(rows)
    assert data["trace"]["duration_s"] == pytest.approx(duration, abs=1e-5)
    total = sum(b["rate_rps"] * data["trace"]["duration_s"] for b in data["buckets"])
    assert total == pytest.approx(len(rows))
    assert sum(b["requests"] for b in data["buckets"]) == len(rows)
    tokens_in = sum(int(r["ContextTokens"]) for r in rows)
    assert sum(b["input_tokens"] * b["requests"] for b in data["buckets"]) == pytest.approx(
        tokens_in
    )
    # with --gpus the output solves directly, for every objective that needs no deployment
    for objective in ("min_cost", "pd_split"):
        r = hetopt.solve(out, objective)
        assert r.status == Status.OPTIMAL and r.verification.ok, objective


def test_catalogue_context_limit_and_token_model(tmp_path: Path) -> None:
    out = tmp_path / "i.json"
    code, _, err = run("convert", "azure-llm", CODE, "--gpus", CATALOGUE, "-o", out)
    assert code == 0, err
    data = json.loads(out.read_text())
    cat = {g["type"]: g for g in json.loads(CATALOGUE.read_text())["gpus"]}
    for b in data["buckets"]:
        longest = b["input_range"][1] + b["output_range"][1]
        for t, g in cat.items():
            if longest > g["max_context_tokens"]:
                assert t not in b["throughput_rps"]
            else:
                want = 1 / (
                    max(b["input_tokens"], 1) / g["prefill_tokens_s"]
                    + b["output_tokens"] / g["decode_tokens_s"]
                )
                assert b["throughput_rps"][t] == pytest.approx(want)
    assert any(len(b["throughput_rps"]) < 3 for b in data["buckets"])  # the limit bites


def test_bad_traces_and_options(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("time,in,out\n1,2,3\n")
    code, _, err = run("convert", "azure-llm", bad)
    assert code == 3 and str(bad) in err and "line 1" in err
    bad = write_trace(tmp_path / "neg.csv", [TINY[0], ("2023-11-16 18:00:01", -4, 3)])
    code, _, err = run("convert", "azure-llm", bad)
    assert code == 3 and "line 3" in err and "ContextTokens" in err
    bad = write_trace(tmp_path / "one.csv", TINY[:1])
    code, _, err = run("convert", "azure-llm", bad)
    assert code == 3 and "two requests" in err
    code, _, err = run("convert", "azure-llm", CONV, "--buckets", "512,100/64")
    assert code == 2 and "--buckets" in err
    code, _, err = run("convert", "azure-llm", CONV, "--buckets", "512")
    assert code == 2
    cat = tmp_path / "cat.json"
    cat.write_text(json.dumps({"gpus": [{"type": "X", "cost_per_hour": 1.0}]}))
    code, _, err = run("convert", "azure-llm", CONV, "--gpus", cat)
    assert code == 3 and "gpus[0].prefill_tokens_s" in err and str(cat) in err
    code, _, err = run("convert", "azure-llm", tmp_path / "missing.csv")
    assert code == 2


def test_parse_buckets() -> None:
    assert parse_buckets("256,1024/64") == ([256, 1024], [64])
    assert parse_buckets("/") == ([], [])
    for spec in ("0,5/1", "5,5/1", "a/1", "1/2/3"):
        with pytest.raises(ValueError):
            parse_buckets(spec)


# ----------------------------------------------------------------------------- hourly
def test_trace_periods_cover_every_request() -> None:
    periods = trace_periods(CONV, "512,2048/64,256", period_s=20.0)
    assert len(periods) >= 4
    total = sum(r * p.length_s for p in periods for r in p.rates_rps.values())
    assert total == pytest.approx(300)
    assert periods[0].start_s == 0.0
    assert all(
        a.start_s + a.length_s == pytest.approx(b.start_s) for a, b in itertools.pairwise(periods)
    )


def test_hourly_without_change_cost_is_independent_per_hour() -> None:
    inst = hetopt.read_instance(DIR / "melange_example.json")
    hours = [
        {"in0_out0": 6.0, "in0_out1": 3.0, "in1_out0": 15.0, "in1_out1": 6.0},
        {"in1_out0": 5.0},
        {"in0_out1": 8.0, "in1_out1": 2.0},
    ]
    plan = solve_hourly(inst, hours)
    assert plan.status == Status.OPTIMAL and all(r.verification.ok for r in plan.results)
    for k, rates in enumerate(hours):
        d = inst.to_dict()
        for b in d["buckets"]:
            b["rate_rps"] = rates.get(b["id"], 0.0)
        alone = hetopt.solve(d)
        assert plan.results[k].objective_value == pytest.approx(alone.objective_value)
    assert plan.total_cost == pytest.approx(sum(r.objective_value for r in plan.results))
    assert list(plan.plan.columns) == [
        "period",
        "start_s",
        "gpu_type",
        "count",
        "started",
        "stopped",
        "cost_per_hour",
    ]


def test_hourly_change_cost_keeps_instances() -> None:
    """One type (A10G, 1.01 $/h), loads 12, 3, 7 instances: free changes follow the load;
    stopping costs 5 $ > 1.01 $/h x 1 h saved, so the plan keeps the first hour's 12."""
    d = json.loads((DIR / "melange_example.json").read_text())
    d["gpus"] = d["gpus"][:1]
    for b in d["buckets"]:
        b["throughput_rps"] = {"A10G": b["throughput_rps"]["A10G"]}
    inst = LlmServingInstance.from_dict(d)
    hours = [
        {"in0_out0": 6.0, "in0_out1": 3.0, "in1_out0": 15.0, "in1_out1": 6.0},  # 12
        {"in1_out0": 15.0},  # 3
        {"in1_out0": 35.0},  # 7
    ]
    free = solve_hourly(inst, hours)
    assert list(free.plan["count"]) == [12, 3, 7]
    assert free.total_cost == pytest.approx(22 * 1.01)
    sticky = solve_hourly(inst, hours, change_cost=5.0)
    assert list(sticky.plan["count"]) == [12, 12, 12]
    assert list(sticky.plan["started"]) == [12, 0, 0]
    assert sticky.total_cost == pytest.approx(36 * 1.01 + 12 * 5.0)
    cheap = solve_hourly(inst, hours, change_cost=0.4)
    assert list(cheap.plan["count"]) == [12, 3, 7]
    assert cheap.total_cost == pytest.approx(22 * 1.01 + (12 + 9 + 4) * 0.4)
    assert math.isclose(cheap.results[1].info["change_cost"], 9 * 0.4)


def test_hourly_from_the_trace() -> None:
    data = json.loads((DIR / "azure_conv_head300.json").read_text())
    inst = hetopt.read_instance(DIR / "azure_conv_head300.json")
    periods = trace_periods(CONV, "512,2048/64,256", period_s=30.0)
    assert {b for p in periods for b in p.rates_rps} <= {b["id"] for b in data["buckets"]}
    plan = solve_hourly(inst, periods, change_cost=0.5)
    assert plan.status == Status.OPTIMAL
    assert len(plan.plan) == len(periods) * len(data["gpus"])
    assert all(r.verification.ok for r in plan.results)
