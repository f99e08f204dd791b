"""Trace replay (``hetopt.kinds.gpu_cluster.simulate`` and ``hetopt simulate``)."""

from __future__ import annotations

import importlib.util
import json

import matplotlib
import numpy as np
import pytest
from click.testing import CliRunner

from hetopt import InstanceError, UsageError
from hetopt.cli import main
from hetopt.kinds.gpu_cluster.gavel import parse_table
from hetopt.kinds.gpu_cluster.simulate import (
    SUMMARY_KEYS,
    generate_trace,
    load_trace,
    plot_jct_cdf,
    simulate,
)

matplotlib.use("Agg")

HAS_ROUNDS = importlib.util.find_spec("hetopt.kinds.gpu_cluster.rounds") is not None
needs_rounds = pytest.mark.skipif(
    not HAS_ROUNDS, reason="hetopt.kinds.gpu_cluster.rounds (issue 3) not present"
)
PROGRESS = ["fluid", *(["rounds"] if HAS_ROUNDS else [])]

TRACE = "instances/gpu_cluster/traces/max_min_fairness.trace"
PHYSICAL = {"v100": 8, "p100": 16, "k80": 24}  # Gavel's 48-GPU physical cluster

# a one-type table for hand-computed answers: job type "A" runs 2 steps/s on one GPU
TINY = parse_table({"g": {"('A', 1)": {"null": 2.0}}})


def rec(steps: int, arrival: float = 0.0) -> dict:
    return {
        "job_type": "A",
        "scale_factor": 1,
        "total_steps": steps,
        "priority_weight": 1.0,
        "slo": None,
        "arrival_s": arrival,
    }


def test_single_job_runs_at_full_speed():
    for progress in PROGRESS:
        res = simulate([rec(1000)], {"g": 1}, table=TINY, progress=progress)
        assert res.jobs["jct_s"].tolist() == pytest.approx([500.0])
        assert res.summary["progress_model"] == progress
    assert res.summary["makespan_s"] == pytest.approx(500.0)
    assert res.summary["utilization"] == pytest.approx(1.0)


def test_two_jobs_share_then_the_survivor_speeds_up_at_the_next_round():
    # 1 GPU, 2 steps/s. Both get half the GPU (1 step/s): job 0 (1000 steps) ends at
    # 1000 s, inside round [720, 1080). Job 1 keeps its half until 1080 s (Gavel
    # recomputes at round boundaries): 2000 - 1080 = 920 steps left, then the whole GPU:
    # 920 / 2 = 460 s -> 1540 s.
    res = simulate([rec(1000), rec(2000)], {"g": 1}, table=TINY, progress="fluid")
    assert res.jobs["finish_s"].tolist() == pytest.approx([1000.0, 1540.0])
    assert res.summary["solves"] == 2
    assert res.summary["mean_jct_s"] == pytest.approx(1270.0)
    assert res.summary["median_jct_s"] == pytest.approx(1270.0)
    # busy GPU-seconds: 0.5 * 1000 (job 0) + 0.5 * 1080 + 1 * 460 (job 1) = 1500 of 1540
    assert res.summary["utilization"] == pytest.approx(1500 / 1540)


def test_a_job_arriving_mid_round_starts_at_the_next_boundary():
    res = simulate([rec(720, arrival=100.0)], {"g": 1}, table=TINY, progress="fluid")
    # the clock starts at the first arrival: one round of 360 s at 2 steps/s
    assert res.jobs["finish_s"].tolist() == pytest.approx([100.0 + 360.0])
    res = simulate([rec(100000), rec(720, arrival=100.0)], {"g": 1}, table=TINY, progress="fluid")
    # job 1 joins at t = 360 with half the GPU (1 step/s): 720 s -> finishes at 1080
    assert res.jobs["finish_s"].iloc[1] == pytest.approx(1080.0)


@needs_rounds
def test_rounds_give_one_gpu_to_one_job_at_a_time():
    # 1 GPU, two jobs: each round exactly one job runs at the full 2 steps/s, so the
    # GPU is busy for all 3000 / 2 = 1500 s of work and idle only after a finish
    # inside a round: makespan in [1500, 1500 + 360).
    res = simulate([rec(1000), rec(2000)], {"g": 1}, table=TINY, progress="rounds")
    assert res.summary["completed_jobs"] == 2
    assert 1500.0 <= res.summary["makespan_s"] < 1860.0
    assert res.summary["utilization"] == pytest.approx(1500.0 / res.summary["makespan_s"])


@pytest.mark.parametrize("progress", PROGRESS)
def test_physical_trace_heterogeneity_aware_beats_agnostic(progress):
    # Gavel's headline (Narayanan et al., OSDI 2020): heterogeneity-aware LAS gives a
    # lower average JCT than the agnostic policy on the same trace.
    records = load_trace(TRACE)
    aware = simulate(records, PHYSICAL, progress=progress)
    agn = simulate(records, PHYSICAL, agnostic=True, progress=progress)
    for r in (aware, agn):
        assert r.summary["completed_jobs"] == 96
        assert set(SUMMARY_KEYS) <= set(r.summary)
        assert r.summary["solves"] >= 2
    assert aware.summary["mean_jct_s"] < agn.summary["mean_jct_s"]
    assert 0 < aware.summary["utilization"] <= 1 + 1e-9


def test_generated_trace_heterogeneity_aware_beats_agnostic():
    w = {"k80": 8, "p100": 8, "v100": 8}
    records = generate_trace(50, w, arrival_rate=8.0, seed=5)
    aware = simulate(records, w)
    agn = simulate(records, w, agnostic=True)
    assert aware.summary["completed_jobs"] == agn.summary["completed_jobs"] == 50
    assert aware.summary["mean_jct_s"] < agn.summary["mean_jct_s"]


def test_persistent_and_rebuilt_policies_agree_on_the_first_levels():
    w = {"k80": 4, "p100": 4, "v100": 4}
    records = generate_trace(12, w, arrival_rate=30.0, seed=1)
    fast = simulate(records, w, max_rounds=3)
    slow = simulate(records, w, persistent=False, max_rounds=3)
    # same active sets in the first rounds -> the same max-min level (the LP optimum)
    k = min(len(fast.levels), len(slow.levels), 2)
    assert k >= 1
    assert fast.levels[:k] == pytest.approx(slow.levels[:k], rel=1e-6)


def test_other_policy_through_the_kind():
    w = {"k80": 4, "p100": 4, "v100": 4}
    records = generate_trace(10, w, arrival_rate=30.0, seed=2)
    res = simulate(records, w, policy="makespan")
    assert res.summary["completed_jobs"] == 10
    assert res.summary["policy"] == "makespan"


def test_generate_trace_is_poisson_and_seeded():
    w = {"k80": 36, "p100": 36, "v100": 36}
    a = generate_trace(1500, w, arrival_rate=60.0, seed=5)
    b = generate_trace(1500, w, arrival_rate=60.0, seed=5)
    assert a == b
    arr = np.array([r["arrival_s"] for r in a])
    assert arr[0] == 0 and (np.diff(arr) >= 0).all()
    gaps = np.diff(arr)
    assert gaps.mean() == pytest.approx(60.0, rel=0.1)  # 3600 s / 60 per hour
    assert gaps.std() == pytest.approx(60.0, rel=0.15)  # exponential: std = mean


def test_bad_input():
    with pytest.raises(UsageError, match="round_s"):
        simulate([rec(10)], {"g": 1}, table=TINY, round_s=0)
    with pytest.raises(UsageError, match="progress"):
        simulate([rec(10)], {"g": 1}, table=TINY, progress="teleport")
    with pytest.raises(InstanceError, match="arrival_rate"):
        generate_trace(5, {"k80": 1}, arrival_rate=0)


def test_plot_returns_axes():
    res = simulate([rec(1000), rec(2000)], {"g": 1}, table=TINY)
    ax = plot_jct_cdf(res)
    assert ax.get_xlabel().startswith("job completion time")
    ax2 = plot_jct_cdf([res, res], ax=ax)
    assert ax2 is ax


def test_cli_json_and_plot(tmp_path):
    runner = CliRunner()
    png = tmp_path / "jct.png"
    out = runner.invoke(
        main,
        [
            "simulate",
            "--generate-jobs",
            "15",
            "--workers",
            "k80=4,p100=4,v100=4",
            "--arrival-rate",
            "30",
            "--json",
            "--plot",
            str(png),
        ],
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert list(data["summary"]) == list(SUMMARY_KEYS)
    assert len(data["jobs"]) == 15
    assert {"job", "arrival_s", "finish_s", "jct_s"} <= set(data["jobs"][0])
    assert png.stat().st_size > 1000


def test_cli_compare_reports_both_policies():
    runner = CliRunner()
    args = ["simulate", TRACE, "--workers", "v100=8,p100=16,k80=24", "--compare"]
    out = runner.invoke(main, [*args, "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["agnostic"]["summary"]["agnostic"] is True
    assert data["summary"]["agnostic"] is False
    ratio = data["mean_jct_ratio_agnostic_over_aware"]
    assert ratio == pytest.approx(
        data["agnostic"]["summary"]["mean_jct_s"] / data["summary"]["mean_jct_s"]
    )
    assert ratio > 1  # Gavel's direction
    out = runner.invoke(main, [*args, "--agnostic"])
    assert out.exit_code == 2


def test_cli_text_and_errors():
    runner = CliRunner()
    out = runner.invoke(main, ["simulate", TRACE, "--workers", "v100=8,p100=16,k80=24"])
    assert out.exit_code == 0, out.output
    assert "mean JCT" in out.output
    out = runner.invoke(main, ["simulate", "--workers", "k80=4"])
    assert out.exit_code == 2
    out = runner.invoke(main, ["simulate", "no/such.trace"])
    assert out.exit_code == 3
    assert "Traceback" not in out.output
