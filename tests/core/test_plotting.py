"""Plots: each renders a non-empty PNG, draws what the table says, and fails clearly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import hetopt
from hetopt.cli import main
from hetopt.plotting import (
    available_plots,
    plot_allocation,
    plot_gantt,
    plot_jct_cdf,
    plot_pareto,
    plot_result,
    plot_utilisation,
)
from hetopt.plotting.plots import _pareto_mask
from hetopt.status import Status

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def assert_png(path: Path) -> None:
    """A real, non-blank PNG: signature, size, and more than one colour in the pixels."""
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 2000
    pixels = plt.imread(path)
    assert pixels.ndim == 3 and pixels.shape[0] > 100 and pixels.shape[1] > 100
    assert float(pixels[..., :3].std()) > 0.01, "the image is blank"


def save(ax, path: Path) -> Path:
    ax.figure.savefig(path, dpi=80)
    plt.close(ax.figure)
    return path


@pytest.fixture(scope="module")
def gpu_result(tmp_path_factory) -> tuple[hetopt.Result, Path]:
    root = Path(__file__).resolve().parents[2]
    result = hetopt.solve(root / "instances" / "gpu_cluster" / "example.json")
    assert result.status == Status.OPTIMAL
    path = tmp_path_factory.mktemp("res") / "gpu.json"
    result.to_json(path)
    return result, path


def schedule_table() -> pd.DataFrame:
    # a hand-made big.LITTLE schedule: 2 big cores, 2 little cores, 6 tasks
    return pd.DataFrame(
        {
            "task": ["t0", "t1", "t2", "t3", "t4", "t5"],
            "core": ["big0", "big0", "big1", "little0", "little1", "little1"],
            "core_type": ["big", "big", "big", "little", "little", "little"],
            "start_s": [0.0, 1.0, 0.0, 0.0, 0.0, 2.5],
            "end_s": [1.0, 2.0, 1.5, 2.6, 2.5, 2.5],  # t5 has zero length
        }
    )


def make_result(tables: dict[str, pd.DataFrame], kind: str = "multicore") -> hetopt.Result:
    return hetopt.Result(
        kind=kind,
        objective="makespan",
        status=Status.OPTIMAL,
        termination="Optimal",
        objective_value=2.6,
        tables=tables,
    )


# -- allocation ----------------------------------------------------------------------------


def test_plot_allocation_heatmap_matches_table(gpu_result, tmp_path):
    result, _ = gpu_result
    ax = plot_allocation(result)
    image = ax.images[0].get_array()
    alloc = result.allocation
    assert image.shape == (alloc["job"].nunique(), alloc["worker_type"].nunique())
    # row of job "1", column of "p100", in order of first appearance
    jobs = list(dict.fromkeys(alloc["job"]))
    types = list(dict.fromkeys(alloc["worker_type"]))
    row = alloc[(alloc["job"] == "1") & (alloc["worker_type"] == "p100")]["fraction"].sum()
    assert image[jobs.index("1"), types.index("p100")] == pytest.approx(row)
    assert_png(save(ax, tmp_path / "alloc.png"))


def test_plot_allocation_sums_space_sharing_rows_and_uses_given_ax(tmp_path):
    df = pd.DataFrame(
        {
            "job": ["a", "a", "b"],
            "worker_type": ["v100", "v100", "k80"],
            "other_job": ["", "b", ""],
            "fraction": [0.25, 0.5, 1.0],
        }
    )
    _fig, ax = plt.subplots()
    out = plot_allocation(df, ax=ax, annotate=False)
    assert out is ax
    grid = ax.images[0].get_array()
    assert grid[0, 0] == pytest.approx(0.75) and grid[0, 1] == 0 and grid[1, 1] == 1.0
    assert_png(save(ax, tmp_path / "alloc2.png"))


def test_plot_allocation_errors():
    with pytest.raises(hetopt.UsageError, match="worker_type"):
        plot_allocation(pd.DataFrame({"job": ["a"], "fraction": [1.0]}))
    with pytest.raises(hetopt.UsageError, match="no 'allocation' table"):
        plot_allocation(make_result({"schedule": schedule_table()}))


# -- Gantt ---------------------------------------------------------------------------------


def test_plot_gantt_one_bar_per_task_coloured_by_type(tmp_path):
    df = schedule_table()
    ax = plot_gantt(df)
    bars = ax.collections
    assert len(bars) == len(df)
    # rows are the 4 cores, big before little
    assert [t.get_text() for t in ax.get_yticklabels()] == ["big0", "big1", "little0", "little1"]
    legend = ax.get_legend()
    assert legend.get_title().get_text() == "core_type"
    assert [t.get_text() for t in legend.get_texts()] == ["big", "little"]
    colours = {tuple(np.round(c.get_facecolor()[0], 3)) for c in bars}
    assert len(colours) == 2
    assert ax.get_xlim()[1] >= 2.6
    assert_png(save(ax, tmp_path / "gantt.png"))


def test_plot_gantt_colour_mapping_and_other_column_names(tmp_path):
    df = pd.DataFrame(
        {
            "task": ["weld", "carry", "inspect"],
            "agent": ["r1", "h1", "h2"],
            "start_s": [0.0, 3.0, np.nan],  # inspect not scheduled: skipped
            "end_s": [4.0, 5.0, np.nan],
        }
    )
    ax = plot_gantt(df, color_by={"r1": "robot", "h1": "human", "h2": "human"})
    assert len(ax.collections) == 2
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["human", "robot"]
    assert_png(save(ax, tmp_path / "gantt2.png"))


def test_plot_gantt_colour_by_task_attribute_keeps_resource_order():
    df = pd.DataFrame(
        {
            "job": ["a", "b", "a", "c"],
            "gpu": ["v100-10", "k80-2", "k80-9", "v100-1"],
            "start_s": [0.0, 0.0, 1.0, 1.0],
            "end_s": [1.0, 1.0, 2.0, 2.0],
        }
    )
    ax = plot_gantt(df, color_by="job")
    rows = [t.get_text() for t in ax.get_yticklabels()]
    assert rows == ["k80-2", "k80-9", "v100-1", "v100-10"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b", "c"]
    plt.close(ax.figure)


def test_plot_gantt_errors():
    with pytest.raises(hetopt.UsageError, match="resource column"):
        plot_gantt(pd.DataFrame({"task": ["a"], "start_s": [0.0], "end_s": [1.0]}))
    bad = schedule_table().assign(end_s=lambda d: d["start_s"] - 1)
    with pytest.raises(hetopt.UsageError, match="ends before it starts"):
        plot_gantt(bad)
    with pytest.raises(hetopt.UsageError, match="needs column"):
        plot_gantt(schedule_table(), color_by="nope")


# -- Pareto --------------------------------------------------------------------------------


def test_plot_pareto_front_and_dominated_points(tmp_path):
    df = pd.DataFrame(
        {"makespan_s": [10.0, 12.0, 15.0, 13.0], "energy_j": [50.0, 40.0, 35.0, 45.0]}
    )  # (13, 45) is dominated by (12, 40)
    ax = plot_pareto(df)
    lines = ax.get_lines()
    front = [ln for ln in lines if ln.get_label().startswith("Pareto front")]
    assert len(front) == 1
    assert list(front[0].get_xdata()) == [10.0, 12.0, 15.0]
    dominated = [ln for ln in lines if ln.get_label().startswith("dominated")]
    assert list(dominated[0].get_xdata()) == [13.0]
    assert ax.get_xlabel() == "makespan (s)" and ax.get_ylabel() == "energy (J)"
    assert_png(save(ax, tmp_path / "pareto.png"))


def test_plot_pareto_needs_two_objectives():
    with pytest.raises(hetopt.UsageError, match="x= and y="):
        plot_pareto(pd.DataFrame({"a": [1.0], "b": [2.0], "c": [3.0]}))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=15))
def test_pareto_mask_is_exactly_the_non_dominated_set(points):
    x = np.array([p[0] for p in points], dtype=float)
    y = np.array([p[1] for p in points], dtype=float)
    keep = _pareto_mask(x, y)
    for i, (a, b) in enumerate(points):
        dominated = any(
            c <= a and d <= b and (c < a or d < b) for j, (c, d) in enumerate(points) if j != i
        )
        assert keep[i] == (not dominated)
    assert keep.any()


# -- JCT CDF -------------------------------------------------------------------------------


def test_plot_jct_cdf_two_policies(tmp_path):
    aware = [100.0, 200.0, 300.0, 400.0]
    agnostic = [150.0, 500.0, float("inf"), 900.0]  # one job never finished
    ax = plot_jct_cdf({"aware": aware, "agnostic": agnostic}, log_x=True)
    lines = ax.get_lines()
    assert len(lines) == 2
    assert lines[0].get_ydata()[-1] == pytest.approx(1.0)
    assert lines[1].get_ydata()[-1] == pytest.approx(0.75)  # 3 of 4 finished
    assert "1 unfinished" in lines[1].get_label()
    assert ax.get_xscale() == "log"
    assert_png(save(ax, tmp_path / "jct.png"))


def test_plot_jct_cdf_from_table_and_errors():
    ax = plot_jct_cdf(pd.DataFrame({"job": ["a", "b"], "jct_s": [1.0, 3.0]}))
    assert list(ax.get_lines()[0].get_xdata()) == [1.0, 1.0, 3.0]
    plt.close(ax.figure)
    with pytest.raises(hetopt.UsageError, match="jct_s"):
        plot_jct_cdf(pd.DataFrame({"job": ["a"]}))
    with pytest.raises(hetopt.UsageError, match="no finished job"):
        plot_jct_cdf([float("nan")])


def test_plot_jct_cdf_in_hours():
    ax = plot_jct_cdf({"a": [3600.0, 7200.0]}, unit="h")
    assert list(ax.get_lines()[0].get_xdata()) == [1.0, 1.0, 2.0]
    assert ax.get_xlabel() == "job completion time (h)"
    assert "mean 1.5 h" in ax.get_lines()[0].get_label()
    plt.close(ax.figure)
    with pytest.raises(hetopt.UsageError, match="unit"):
        plot_jct_cdf([1.0], unit="days")


# -- utilisation ----------------------------------------------------------------------------


def test_plot_utilisation_shares(tmp_path):
    servers = pd.DataFrame(
        {
            "server": ["s0", "s1"],
            "gpus_used": [6, 0],
            "gpus": [8, 8],
            "cpus_used": [24.0, 12.0],
            "cpus": [24.0, 24.0],
            "jobs": [2, 1],  # no "jobs_used": not a capacity
        }
    )
    ax = plot_utilisation(servers)
    widths = [p.get_width() for p in ax.patches]
    assert widths == pytest.approx([0.75, 0.0, 1.0, 0.5])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["gpus", "cpus"]
    assert_png(save(ax, tmp_path / "util.png"))
    with pytest.raises(hetopt.UsageError, match="_used"):
        plot_utilisation(pd.DataFrame({"server": ["s0"], "jobs": [1]}))


# -- dispatch ------------------------------------------------------------------------------


def test_available_plots_and_dispatch(gpu_result):
    result, _ = gpu_result
    assert available_plots(result) == ["allocation"]
    sched = make_result({"schedule": schedule_table()})
    assert available_plots(sched) == ["gantt"]
    both = make_result(
        {
            "schedule": schedule_table(),
            "pareto": pd.DataFrame({"makespan_s": [1.0, 2.0], "energy_j": [2.0, 1.0]}),
        }
    )
    assert available_plots(both) == ["pareto", "gantt"]
    ax = plot_result(both, "gantt")
    assert len(ax.collections) == 6 and "multicore / makespan" in ax.get_title()
    plt.close(ax.figure)
    # a Pareto result with one schedule per point: only the first point is drawn
    two = pd.concat([schedule_table().assign(point=0), schedule_table().assign(point=1)])
    ax = plot_result(make_result({"schedule": two}))
    assert len(ax.collections) == 6 and "Pareto point 0" in ax.get_title()
    plt.close(ax.figure)
    empty = hetopt.Result("multicore", "makespan", Status.INFEASIBLE, "Infeasible")
    with pytest.raises(hetopt.UsageError, match="nothing to plot"):
        plot_result(empty)
    with pytest.raises(hetopt.UsageError, match="unknown plot"):
        plot_result(sched, "pie")


# -- CLI -----------------------------------------------------------------------------------


def run(*args: str):
    return CliRunner().invoke(main, ["plot", *args])


def test_cli_plot_allocation(gpu_result, tmp_path):
    _, path = gpu_result
    out = tmp_path / "a.png"
    res = run(str(path), "-o", str(out))
    assert res.exit_code == 0, res.output
    assert_png(out)


def test_cli_plot_schedule_pareto_and_trace(tmp_path):
    both = make_result(
        {
            "schedule": schedule_table(),
            "pareto": pd.DataFrame({"makespan_s": [1.0, 2.0], "energy_j": [2.0, 1.0]}),
        }
    )
    path = tmp_path / "r.json"
    both.to_json(path)
    for plot in ("gantt", "pareto"):
        out = tmp_path / f"{plot}.png"
        res = run(str(path), "-o", str(out), "--kind-of-plot", plot)
        assert res.exit_code == 0, res.output
        assert_png(out)
    trace = tmp_path / "sim.json"
    trace.write_text(
        json.dumps(
            {
                "summary": {"mean_jct_s": 2.0},
                "jobs": [{"job": "a", "jct_s": 1.0}, {"job": "b", "jct_s": 3.0}],
            }
        )
    )
    out = tmp_path / "jct.png"
    res = run(str(trace), "-o", str(out))
    assert res.exit_code == 0, res.output
    assert_png(out)
    assert run(str(trace), "-o", str(out), "-k", "gantt").exit_code == 2


def test_cli_plot_exit_codes(gpu_result, tmp_path):
    _, path = gpu_result
    # a result without a plottable table: usage error, one line, no traceback
    empty = tmp_path / "empty.json"
    hetopt.Result("multicore", "makespan", Status.INFEASIBLE, "Infeasible").to_json(empty)
    res = run(str(empty), "-o", str(tmp_path / "x.png"))
    assert res.exit_code == 2
    assert "nothing to plot" in res.output and "Traceback" not in res.output
    assert run(str(path), "-o", str(tmp_path / "x.png"), "-k", "gantt").exit_code == 2
    assert run(str(path), "-o", str(tmp_path / "x.unknown")).exit_code == 2
    # a missing file: invalid input, named, as solve and validate say it
    res = run(str(tmp_path / "missing.json"), "-o", str(tmp_path / "x.png"))
    assert res.exit_code == 3 and "missing.json: no such file" in res.output
    # not a result at all: invalid input
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    res = run(str(bad), "-o", str(tmp_path / "x.png"))
    assert res.exit_code == 3 and "not valid JSON" in res.output
    bad.write_text(json.dumps({"kind": "gpu_cluster"}))
    res = run(str(bad), "-o", str(tmp_path / "x.png"))
    assert res.exit_code == 3 and "objective" in res.output
    assert not (tmp_path / "x.png").exists()


def test_plotting_imports_matplotlib_lazily():
    code = "import sys, hetopt.plotting; assert 'matplotlib' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


REAL = [
    ("multicore/big_little_dag.json", {}, "gantt"),
    ("multicore/big_little_independent.json", {"objective": "pareto"}, "pareto"),
    ("human_robot/small.json", {}, "gantt"),
    ("cpu_gpu/pairing.json", {}, "gantt"),
    ("multi_resource/split_job.json", {}, "utilisation"),
]


@pytest.mark.parametrize(("path", "kw", "expected"), REAL, ids=[r[0] for r in REAL])
def test_cli_plot_results_of_every_kind(path, kw, expected, tmp_path, instances_dir):
    """Each kind's real result gets its natural plot through 'hetopt plot'."""
    file = instances_dir / path
    kind = path.split("/")[0]
    if kind not in hetopt.kind_names() or not file.exists():
        pytest.skip(f"{kind} or {path} is not in this build")
    result = hetopt.solve(file, options=hetopt.SolveOptions(threads=1, time_limit_s=60), **kw)
    assert result.status.has_solution
    assert available_plots(result)[0] == expected
    saved = tmp_path / "r.json"
    result.to_json(saved)
    out = tmp_path / "plot.png"
    res = run(str(saved), "-o", str(out))
    assert res.exit_code == 0, res.output
    assert_png(out)


def test_cli_plot_trace_replay_output(tmp_path):
    """'hetopt simulate --json' output (a real trace replay) plots as a JCT CDF."""
    rolling = pytest.importorskip("hetopt.kinds.gpu_cluster.simulate")
    workers = {"k80": 2, "p100": 2, "v100": 2}
    trace = rolling.generate_trace(8, workers, arrival_rate=10, seed=0)
    sim = rolling.simulate(trace, workers, options=hetopt.SolveOptions(threads=1))
    path = tmp_path / "sim.json"
    path.write_text(json.dumps(sim.to_dict()))
    out = tmp_path / "jct.png"
    res = run(str(path), "-o", str(out))
    assert res.exit_code == 0, res.output
    assert_png(out)
