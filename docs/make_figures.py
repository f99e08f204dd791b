"""Regenerate the committed pictures in ``docs/_static/`` (README and docs front page).

Run from anywhere: ``python docs/make_figures.py``. It solves the quick-start instance
(``instances/gpu_cluster/example.json``, Gavel's max-min fairness) and draws the
allocation heatmap with :func:`hetopt.plotting.plot_allocation`.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

import hetopt
from hetopt.plotting import plot_allocation

ROOT = Path(__file__).resolve().parents[1]
STATIC = Path(__file__).resolve().parent / "_static"


def main() -> None:
    result = hetopt.solve(ROOT / "instances" / "gpu_cluster" / "example.json")
    fig, ax = plt.subplots(figsize=(6.4, 4.6), layout="constrained")
    plot_allocation(result, ax=ax)
    ax.set_title(
        f"max-min fairness on 12 jobs x 3 GPU types (smallest normalised throughput {result.objective_value:.3f})"
        "\n(time fraction of each job on each GPU type)",
        fontsize=9,
    )
    STATIC.mkdir(exist_ok=True)
    out = STATIC / "allocation.png"
    fig.savefig(out, dpi=100)
    plt.close(fig)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
