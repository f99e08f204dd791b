"""Gantt chart and Pareto front plots (matplotlib is imported only when plotting)."""

from __future__ import annotations

from typing import Any

from ...result import Result


def plot_gantt(result: Result, ax: Any = None, point: int | None = None) -> Any:
    """Draw the ``schedule`` table as a Gantt chart, one row per core, coloured by type.

    Parameters
    ----------
    result
        A ``multicore`` result (or one loaded with :meth:`Result.from_json`).
    ax
        A matplotlib ``Axes`` (default: a new figure).
    point
        For a Pareto result, which point's schedule to draw (default: the first).

    Returns
    -------
    matplotlib.axes.Axes
    """
    import matplotlib.pyplot as plt

    df = result.tables["schedule"]
    if "point" in df.columns:
        df = df[df["point"] == (df["point"].min() if point is None else point)]
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 0.4 * max(df["core"].nunique(), 2) + 1.5))
    cores = sorted(df["core"].astype(str).unique())
    types = sorted(df["core_type"].astype(str).unique()) if "core_type" in df else ["core"]
    cmap = plt.get_cmap("tab10")
    color = {t: cmap(k % 10) for k, t in enumerate(types)}
    row = {c: k for k, c in enumerate(cores)}
    for rec in df.itertuples(index=False):
        t = str(getattr(rec, "core_type", "core"))
        ax.barh(
            row[str(rec.core)],
            rec.end_s - rec.start_s,
            left=rec.start_s,
            color=color[t],
            edgecolor="black",
            linewidth=0.5,
        )
        ax.text(
            (rec.start_s + rec.end_s) / 2,
            row[str(rec.core)],
            str(rec.task),
            ha="center",
            va="center",
            fontsize=7,
        )
    ax.set_yticks(range(len(cores)))
    ax.set_yticklabels(cores)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("core")
    from matplotlib.patches import Patch

    ax.legend(
        handles=[Patch(color=color[t], label=t) for t in types],
        title="core type",
        loc="upper right",
        fontsize=7,
    )
    return ax


def plot_pareto(result: Result, ax: Any = None) -> Any:
    """Draw the ``pareto`` table: energy (J) against makespan (s).

    Returns
    -------
    matplotlib.axes.Axes
    """
    import matplotlib.pyplot as plt

    df = result.tables["pareto"].sort_values("makespan_s")
    if ax is None:
        _, ax = plt.subplots()
    ax.plot(df["makespan_s"], df["energy_j"], marker="o", drawstyle="steps-post")
    ax.set_xlabel("makespan (s)")
    ax.set_ylabel("energy (J)")
    ax.set_title("makespan-energy Pareto front")
    return ax
