"""``hetopt plot`` on a client_selection result draws the round's timeline; the JCT CDF
of long replays reads in hours."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import hetopt
from hetopt.cli import main

pytest.importorskip("matplotlib")

from hetopt.plotting import available_plots, plot_jct_cdf, plot_result, plot_selection


@pytest.mark.parametrize(
    ("path", "objective", "phases"),
    [
        ("instances/client_selection/fedcs_quotas.json", None, ["training", "upload"]),
        ("instances/client_selection/parallel_budget.json", None, ["training", "upload"]),
        (
            "instances/client_selection/oort_testing.json",
            "min_duration",
            ["training + upload", "testing"],
        ),
    ],
)
def test_client_selection_results_plot_their_timeline(path, objective, phases, tmp_path):
    r = hetopt.solve(path, objective)
    assert available_plots(r) == ["selection"]
    ax = plot_result(r)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == phases
    chosen = int(r.tables["selection"]["selected"].sum())
    assert len(ax.get_yticks()) == chosen
    assert f"{chosen} of {len(r.tables['selection'])} clients" in ax.get_title()
    saved = tmp_path / "r.json"
    r.to_json(saved)
    out = tmp_path / "round.png"
    res = CliRunner().invoke(main, ["plot", str(saved), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_large_round_and_deadline():
    from hetopt.kinds.client_selection.generate import generate

    r = hetopt.solve(generate(2000, seed=4))
    ax = plot_selection(r.tables["selection"], deadline_s=300.0)
    assert len(ax.get_yticks()) == 0 and "selected clients" in ax.get_ylabel()
    assert "deadline" in [t.get_text() for t in ax.get_legend().get_texts()]
    with pytest.raises(hetopt.UsageError, match="no client is selected"):
        plot_selection(r.tables["selection"].assign(selected=False))


def test_jct_cdf_reads_in_hours_for_long_replays():
    week = np.array([2.0, 30.0, 100.0, 160.0]) * 3600.0
    ax = plot_jct_cdf(week)
    assert ax.get_xlabel() == "job completion time (h)"
    assert ax.get_lines()[0].get_xdata()[-1] == pytest.approx(160.0)
    assert "mean 73 h" in ax.get_lines()[0].get_label()
    short = plot_jct_cdf([10.0, 20.0])
    assert short.get_xlabel() == "job completion time (s)"
    assert plot_jct_cdf(week, unit="min").get_xlabel() == "job completion time (min)"
    with pytest.raises(hetopt.UsageError, match="unit"):
        plot_jct_cdf(week, unit="days")


def test_cli_kind_of_plot_offers_selection(tmp_path: Path):
    res = CliRunner().invoke(main, ["plot", "--help"])
    assert "selection" in res.output
