"""Fanjul-Peyro & Ruiz generator, ``hetopt generate multicore`` and the plots."""

from __future__ import annotations

import json

import matplotlib
import numpy as np
import pytest
from click.testing import CliRunner

import hetopt
from hetopt import SolveOptions, Status
from hetopt.cli import main
from hetopt.kinds.multicore import FAMILIES, generate, plot_gantt, plot_pareto
from hetopt.kinds.multicore.generate import processing_times

matplotlib.use("Agg")


@pytest.mark.parametrize(
    ("family", "lo", "hi"),
    [
        ("U1-100", 1, 100),
        ("U10-100", 10, 100),
        ("U100-120", 100, 120),
        ("U100-200", 100, 200),
        ("U1000-1100", 1000, 1100),
        ("JobsCorre", 2, 120),
        ("MaqCorre", 2, 120),
    ],
)
def test_family_ranges_and_seeding(family: str, lo: int, hi: int) -> None:
    p = processing_times(family, 10, 200, seed=3)
    assert p.shape == (200, 10)
    assert p.min() >= lo and p.max() <= hi
    assert np.array_equal(p, processing_times(family, 10, 200, seed=3))
    assert not np.array_equal(p, processing_times(family, 10, 200, seed=4))


def test_correlated_families_structure() -> None:
    jobs = processing_times("JobsCorre", 8, 300, seed=0)
    spread = jobs.max(axis=1) - jobs.min(axis=1)  # b_j cancels: only d_ij (1..20) varies
    assert spread.max() <= 19 and np.ptp(jobs.min(axis=1)) > 50
    mach = processing_times("MaqCorre", 8, 300, seed=0)
    spread = mach.max(axis=0) - mach.min(axis=0)  # a_i cancels within a machine
    assert spread.max() <= 19


def test_generated_instance_every_machine_its_own_type() -> None:
    inst = generate("U1-100", 4, 12, seed=1)
    arr = inst.arrays
    assert len(set(arr.core_types)) == 4 and not arr.has_dag
    assert arr.eligible.all()
    assert sorted(FAMILIES) == sorted(
        ["U1-100", "U10-100", "U100-120", "U100-200", "U1000-1100", "JobsCorre", "MaqCorre"]
    )


def test_generate_cli(tmp_path) -> None:
    out = tmp_path / "g.json"
    res = CliRunner().invoke(
        main,
        [
            "generate",
            "multicore",
            "--family",
            "MaqCorre",
            "--machines",
            "3",
            "--tasks",
            "7",
            "--seed",
            "2",
            "-o",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["kind"] == "multicore" and len(data["tasks"]) == 7
    res = CliRunner().invoke(
        main, ["generate", "multicore", "--family", "Nope", "--machines", "3", "--tasks", "7"]
    )
    assert res.exit_code == 2


def test_plots_return_axes() -> None:
    inst = generate("U1-100", 3, 6, seed=0)
    r = hetopt.solve(inst, "makespan", SolveOptions(threads=1))
    ax = plot_gantt(r)
    assert len(ax.patches) == 6
    data = inst.to_dict()
    data["cores"][0]["idle_power_w"] = 0.5
    front = hetopt.solve(data, "pareto", SolveOptions(threads=1), pareto_points=4)
    assert front.status == Status.OPTIMAL
    ax2 = plot_pareto(front)
    assert ax2.get_xlabel() == "makespan (s)"
    ax3 = plot_gantt(hetopt.Result.from_dict(json.loads(front.to_json())))
    assert len(ax3.patches) == 6
    import matplotlib.pyplot as plt

    plt.close("all")
