"""Gavel trace and throughput-table importers (``hetopt convert gavel-trace``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hetopt.cli import main
from hetopt.errors import InstanceError
from hetopt.kinds.gpu_cluster.gavel import simulation_table
from hetopt.kinds.gpu_cluster.trace import read_gavel_trace, trace_to_instance

TRACES = Path(__file__).resolve().parents[3] / "instances" / "gpu_cluster" / "traces"
MMF = TRACES / "max_min_fairness.trace"
MAKESPAN = TRACES / "minimize_makespan.trace"
GOOD = (
    "ResNet-18 (batch size 128)\tpython3 main.py\timage_classification/cifar10\t--num_steps"
    "\t1\t925982\t4\t1\t-1.000000\t0"
)


def test_read_both_traces_counts_and_arrivals() -> None:
    # counts and arrival range from the traces' README (Gavel commit c4fa400)
    mmf = read_gavel_trace(MMF, simulation_table())
    assert len(mmf) == 96
    assert mmf[0]["arrival_s"] == 0 and max(r["arrival_s"] for r in mmf) == 46317
    assert mmf[0]["job_type"] == "ResNet-18 (batch size 128)"
    assert mmf[0]["scale_factor"] == 4 and mmf[0]["total_steps"] == 925982
    assert all(r["slo"] is None for r in mmf)
    mk = read_gavel_trace(MAKESPAN)
    assert len(mk) == 100 and all(r["arrival_s"] == 0 for r in mk)


def test_trace_to_instance_keeps_fields() -> None:
    table = simulation_table()
    recs = read_gavel_trace(MMF, table)
    inst = trace_to_instance(recs, table, {"k80": 8, "p100": 8, "v100": 8}, colocation=True)
    assert [j.id for j in inst.jobs] == [str(k) for k in range(96)]
    j = inst.jobs[0]
    assert j.scale_factor == 4 and j.steps_remaining == 925982
    assert j.throughput["v100"] == table.solo[("ResNet-18 (batch size 128)", 4)]["v100"]
    assert inst.jobs[-1].arrival_s == 46317
    assert inst.colocation
    for c in inst.colocation:
        assert c.worker_type in inst.workers and max(c.throughput) > 0
        a = (c.job_types[0], c.scale_factor)
        b = (c.job_types[1], c.scale_factor)
        assert tuple(c.throughput) == table.pairs[c.worker_type][(a, b)]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("a\tb", "expected 10 tab-separated fields"),
        (GOOD.replace("925982", "12.5"), "total_steps must be a whole number"),
        (GOOD.replace("\t4\t1\t-1", "\t0\t1\t-1"), "scale_factor must be >= 1"),
        (GOOD.replace("\t1\t-1.000000", "\t-2\t-1.000000"), "priority_weight must be > 0"),
        (GOOD.replace("-1.000000", "0"), "SLO must be -1"),
        (GOOD.replace("-1.000000\t0", "-1.000000\tsoon"), "arrival_time must be a number"),
        (GOOD.replace("\t4\t1\t", "\t3\t1\t"), "not in the throughput table"),
    ],
)
def test_bad_line_reports_line_number(tmp_path: Path, line: str, message: str) -> None:
    p = tmp_path / "t.trace"
    p.write_text(GOOD + "\n\n" + line + "\n")
    with pytest.raises(InstanceError) as err:
        read_gavel_trace(p, simulation_table())
    assert "line 3" in str(err.value) and message in str(err.value)


def test_cli_convert(tmp_path: Path) -> None:
    out = tmp_path / "inst.json"
    res = CliRunner().invoke(
        main,
        ["convert", "gavel-trace", str(MAKESPAN), "--workers", "v100=4,k80=4", "-o", str(out)],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert len(data["jobs"]) == 100 and set(data["workers"]) == {"v100", "k80"}


def test_cli_convert_bad_line_exit_3(tmp_path: Path) -> None:
    p = tmp_path / "bad.trace"
    p.write_text(GOOD + "\nnot a trace line\n")
    res = CliRunner().invoke(main, ["convert", "gavel-trace", str(p)])
    assert res.exit_code == 3
    assert "line 2" in res.output and "Traceback" not in res.output


def test_cli_convert_unknown_worker_type_exit_3() -> None:
    res = CliRunner().invoke(main, ["convert", "gavel-trace", str(MMF), "--workers", "a100=8"])
    assert res.exit_code == 3
