"""Gantt chart of a ``human_robot`` schedule (matplotlib is imported only when used)."""

from __future__ import annotations

from typing import Any

from ...result import Result


def plot_gantt(result: Result, ax: Any = None) -> Any:
    """Draw one row per agent, one bar per task, coloured by agent type.

    Parameters
    ----------
    result
        A solved ``human_robot`` result (it needs the ``schedule`` table).
    ax
        A matplotlib ``Axes``; a new figure is made when ``None``.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    if "schedule" not in result.tables:
        raise ValueError(f"result has no schedule table (status {result.status.value})")
    df = result.tables["schedule"]
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 0.5 + 0.45 * max(1, df["agent"].nunique())))
    agents = list(dict.fromkeys(df["agent"]))
    types = sorted(set(df["agent_type"]))
    cmap = plt.get_cmap("tab10")
    colour = {t: cmap(k % 10) for k, t in enumerate(types)}
    for y, agent in enumerate(agents):
        rows = df[df["agent"] == agent]
        for task, typ, s, e in zip(
            rows["task"], rows["agent_type"], rows["start_s"], rows["end_s"], strict=True
        ):
            ax.broken_barh([(s, e - s)], (y - 0.4, 0.8), facecolors=colour[typ], edgecolor="k")
            ax.text((s + e) / 2, y, str(task), ha="center", va="center", fontsize=7)
    ax.set_yticks(range(len(agents)))
    ax.set_yticklabels(agents)
    ax.invert_yaxis()
    ax.set_xlabel("time (s)")
    ax.set_title(f"{result.objective}: {result.objective_value}")
    ax.legend(handles=[Patch(color=colour[t], label=t) for t in types], loc="upper right")
    return ax
