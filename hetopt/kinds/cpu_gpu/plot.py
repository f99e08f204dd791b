"""Gantt chart of a ``cpu_gpu`` schedule (matplotlib is imported only when plotting)."""

from __future__ import annotations

from typing import Any

from ...errors import HetoptError


def plot_gantt(result: Any, ax: Any = None) -> Any:
    """Draw the ``schedule`` table of a ``cpu_gpu`` result as a Gantt chart.

    One row per device, one bar per program (piece); co-running programs are hatched.

    Parameters
    ----------
    result
        A :class:`hetopt.Result` of kind ``cpu_gpu`` with a ``schedule`` table.
    ax
        A matplotlib ``Axes`` to draw on (a new figure when ``None``).

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    if "schedule" not in result.tables:
        raise HetoptError("the result has no 'schedule' table (no solution to plot)")
    import matplotlib.pyplot as plt

    df = result.tables["schedule"]
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 1 + 0.5 * max(1, df["device"].nunique())))
    devices = sorted(dict.fromkeys(df["device"]))
    programs = list(dict.fromkeys(df["program"]))
    cmap = plt.get_cmap("tab20")
    for r in df.itertuples():
        y = devices.index(r.device)
        ax.barh(
            y,
            r.end_s - r.start_s,
            left=r.start_s,
            height=0.6,
            color=cmap(programs.index(r.program) % 20),
            edgecolor="black",
            hatch="//" if getattr(r, "co_runner", "") else None,
        )
        ax.text((r.start_s + r.end_s) / 2, y, str(r.program), ha="center", va="center", fontsize=8)
    ax.set_yticks(range(len(devices)), devices)
    ax.set_xlabel("time (s)")
    ax.invert_yaxis()
    value = result.objective_value
    ax.set_title(f"cpu_gpu {result.objective}: {value:.4g}" if value is not None else "cpu_gpu")
    return ax
