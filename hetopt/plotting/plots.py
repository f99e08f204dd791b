"""The plot functions. matplotlib is imported inside each function, never at import time."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..kinds.base import UsageError
from ..result import Result

if TYPE_CHECKING:
    from matplotlib.axes import Axes

PLOT_NAMES: tuple[str, ...] = ("allocation", "gantt", "pareto", "utilisation", "jct_cdf")
"""Names accepted by :func:`plot_result` (and ``hetopt plot --kind-of-plot``)."""

# Column names the generic functions recognise, most specific first.
TASK_COLUMNS = ("task", "program", "operation", "job", "client")
RESOURCE_COLUMNS = ("resource", "core", "agent", "device", "machine", "worker", "server", "gpu")
TYPE_COLUMNS = (
    "resource_type",
    "core_type",
    "agent_type",
    "device_type",
    "machine_type",
    "worker_type",
    "type",
)
JCT_COLUMNS = ("jct_s", "completion_time_s", "jct")
PARETO_X = ("makespan_s", "makespan")
PARETO_Y = ("energy_j", "energy_wh", "energy")

_UNITS = {"s": "s", "j": "J", "w": "W", "wh": "Wh", "gb": "GB", "kwh": "kWh"}
_MAX_ANNOTATED_CELLS = 200
_MAX_LABELLED_BARS = 60


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "hetopt plots need matplotlib: pip install 'hetopt[plot]' (or matplotlib>=3.7)"
        ) from exc
    return plt


def _new_axes(ax: Axes | None, figsize: tuple[float, float] | None = None) -> Axes:
    if ax is not None:
        return ax
    _, new = _pyplot().subplots(figsize=figsize, layout="constrained")
    return new


def _pretty(column: str) -> str:
    """``makespan_s`` -> ``makespan (s)``, ``energy_j`` -> ``energy (J)``."""
    head, _, tail = column.rpartition("_")
    if head and tail.lower() in _UNITS:
        return f"{head.replace('_', ' ')} ({_UNITS[tail.lower()]})"
    return column.replace("_", " ")


def _natural_key(value: Any) -> tuple[Any, ...]:
    parts = re.split(r"(\d+)", str(value))
    return tuple(int(p) if p.isdigit() else p for p in parts)


def _first_present(df: pd.DataFrame, candidates: Iterable[str]) -> str | None:
    for name in candidates:
        if name in df.columns:
            return name
    return None


def _require_columns(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise UsageError(
            f"{what} needs column(s) {', '.join(missing)}; the table has: "
            f"{', '.join(map(str, df.columns)) or 'no columns'}"
        )


def _table(data: Result | pd.DataFrame, names: Sequence[str], what: str) -> pd.DataFrame:
    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, Result):
        for name in names:
            if name in data.tables:
                return data.tables[name]
        raise UsageError(
            f"{what}: the {data.kind} result has no {' or '.join(repr(n) for n in names)} table "
            f"(status {data.status.value}; tables: {', '.join(data.tables) or 'none'})"
        )
    raise TypeError(f"{what}: expected a hetopt.Result or a pandas DataFrame, got {type(data)}")


# -- allocation heatmap --------------------------------------------------------------------


def plot_allocation(
    result: Result | pd.DataFrame,
    ax: Axes | None = None,
    *,
    value: str = "fraction",
    cmap: str = "viridis",
    annotate: bool | None = None,
) -> Axes:
    """Heatmap of an allocation: jobs (rows) x worker types (columns).

    Parameters
    ----------
    result
        A ``gpu_cluster`` :class:`~hetopt.Result`, or its ``allocation`` table with columns
        ``job``, ``worker_type`` and ``value``. Rows that repeat a (job, worker type) pair,
        as space-sharing results do (one row per partner job), are summed.
    ax
        Axes to draw on; a new figure is made when omitted.
    value
        Column to show (default ``fraction``: share of wall-clock time on that type).
    cmap
        A matplotlib colormap name.
    annotate
        Write each cell's value in it; default: when there are at most 200 cells.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    df = _table(result, ("allocation",), "plot_allocation")
    _require_columns(df, ("job", "worker_type", value), "plot_allocation")
    if df.empty:
        raise UsageError("plot_allocation: the allocation table is empty")
    jobs = list(dict.fromkeys(df["job"].astype(str)))
    types = list(dict.fromkeys(df["worker_type"].astype(str)))
    grid = (
        df.assign(job=df["job"].astype(str), worker_type=df["worker_type"].astype(str))
        .pivot_table(index="job", columns="worker_type", values=value, aggfunc="sum")
        .reindex(index=jobs, columns=types)
        .fillna(0.0)
    )
    matrix = grid.to_numpy(dtype=float)
    ax = _new_axes(ax, (1.6 + 1.3 * len(types), min(12.0, 1.5 + 0.28 * len(jobs))))
    vmax = max(1.0, float(np.nanmax(matrix))) if matrix.size else 1.0
    image = ax.imshow(matrix, aspect="auto", cmap=cmap, vmin=0.0, vmax=vmax, interpolation="none")
    ax.set_xticks(range(len(types)), types)
    step = max(1, math.ceil(len(jobs) / 40))
    ticks = list(range(0, len(jobs), step))
    ax.set_yticks(ticks, [jobs[i] for i in ticks])
    ax.set_xlabel("worker type")
    ax.set_ylabel("job")
    if annotate is None:
        annotate = matrix.size <= _MAX_ANNOTATED_CELLS
    if annotate:
        for (i, j), v in np.ndenumerate(matrix):
            if v > 0:
                ax.text(
                    j,
                    i,
                    f"{v:.2f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if v < 0.6 * vmax else "black",
                )
    ax.figure.colorbar(image, ax=ax, label=_pretty(value))
    if isinstance(result, Result):
        ax.set_title(f"{result.kind} / {result.objective}")
    return ax


# -- Gantt chart ---------------------------------------------------------------------------


def plot_gantt(
    schedule: pd.DataFrame,
    color_by: str | Mapping[str, str] | None = None,
    ax: Axes | None = None,
    *,
    task: str | None = None,
    resource: str | None = None,
    start: str = "start_s",
    end: str = "end_s",
    labels: bool | None = None,
    title: str | None = None,
) -> Axes:
    """Gantt chart of a schedule table: one row per resource, one bar per task.

    Generic over kinds: ``multicore`` (task, core), ``cpu_gpu`` (program, device),
    ``human_robot`` (task, agent), or any table with a task column, a resource column and
    start / end times.

    Parameters
    ----------
    schedule
        The table, e.g. ``result.tables["schedule"]``. Rows with a missing start or end
        (tasks not scheduled) are skipped.
    color_by
        What colours the bars: a column name (e.g. ``"core_type"`` or ``"agent_type"``),
        or a mapping resource -> group (e.g. ``{"big0": "big", "little0": "little"}``).
        Default: the first type column present (``resource_type``, ``core_type``,
        ``agent_type``, ``device_type``, ...), else the resource itself.
    ax
        Axes to draw on; a new figure is made when omitted.
    task, resource
        Column names; default: the first present of ``task, program, operation, job,
        client`` and of ``resource, core, agent, device, machine, worker, server, gpu``.
    start, end
        Start and end time columns (seconds).
    labels
        Write task names on the bars; default: when there are at most 60 bars.
    title
        Axes title.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    if not isinstance(schedule, pd.DataFrame):
        raise TypeError(f"plot_gantt: expected a pandas DataFrame, got {type(schedule)}")
    task = task or _first_present(schedule, TASK_COLUMNS)
    resource = resource or _first_present(schedule, RESOURCE_COLUMNS)
    if task is None or resource is None:
        raise UsageError(
            "plot_gantt needs a task column (one of "
            f"{', '.join(TASK_COLUMNS)}) and a resource column (one of "
            f"{', '.join(RESOURCE_COLUMNS)}); pass task=/resource=; the table has: "
            f"{', '.join(map(str, schedule.columns))}"
        )
    _require_columns(schedule, (task, resource, start, end), "plot_gantt")
    df = schedule.dropna(subset=[start, end, resource])
    if df.empty:
        raise UsageError("plot_gantt: no scheduled rows (every start/end is missing)")
    starts = df[start].to_numpy(dtype=float)
    ends = df[end].to_numpy(dtype=float)
    if np.any(ends < starts - 1e-9):
        bad = df[task].astype(str).to_numpy()[ends < starts - 1e-9][0]
        raise UsageError(f"plot_gantt: task {bad!r} ends before it starts")
    res = df[resource].astype(str).to_numpy()

    if color_by is None:
        type_col = _first_present(df, TYPE_COLUMNS)
        groups = df[type_col].astype(str).to_numpy() if type_col else res
        legend_title = type_col or resource
    elif isinstance(color_by, str):
        _require_columns(df, (color_by,), "plot_gantt color_by")
        groups = df[color_by].astype(str).to_numpy()
        legend_title = color_by
    else:
        groups = np.array([str(color_by.get(r, r)) for r in res], dtype=object)
        legend_title = "group"

    groups_of: dict[str, set[str]] = {}
    for r, g in zip(res, groups, strict=True):
        groups_of.setdefault(r, set()).add(g)
    # colour by a resource attribute (a type column, a mapping): rows grouped by it;
    # by anything else (e.g. the job): rows in natural resource order
    by_type = not isinstance(color_by, str) or color_by in TYPE_COLUMNS
    if by_type and all(len(gs) == 1 for gs in groups_of.values()):
        rows = sorted(
            groups_of, key=lambda r: (_natural_key(next(iter(groups_of[r]))), _natural_key(r))
        )
    else:
        rows = sorted(groups_of, key=_natural_key)
    row_of = {r: i for i, r in enumerate(rows)}
    group_names = sorted(set(groups), key=_natural_key)
    cmap = _pyplot().get_cmap("tab10" if len(group_names) <= 10 else "tab20")
    color = {g: cmap(i % cmap.N) for i, g in enumerate(group_names)}

    ax = _new_axes(ax, (9.0, min(10.0, 1.4 + 0.45 * len(rows))))
    tasks = df[task].astype(str).to_numpy()
    if labels is None:
        labels = len(df) <= _MAX_LABELLED_BARS
    horizon = float(ends.max() - min(0.0, starts.min())) or 1.0
    for name, r, g, s, e in zip(tasks, res, groups, starts, ends, strict=True):
        y = row_of[r]
        width = max(e - s, horizon * 1e-3)  # a zero-length task stays visible
        ax.broken_barh(
            [(s, width)], (y - 0.4, 0.8), facecolors=color[g], edgecolor="black", linewidth=0.5
        )
        if labels:
            ax.text(s + width / 2, y, name, ha="center", va="center", fontsize=7, clip_on=True)
    ax.set_yticks(range(len(rows)), rows)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(min(0.0, float(starts.min())), float(ends.max()) + 0.02 * horizon)
    ax.set_xlabel(_pretty(start).replace("start ", "time "))
    ax.set_ylabel(resource)
    ax.grid(axis="x", alpha=0.3)
    if len(group_names) <= 20:
        from matplotlib.patches import Patch

        handles = [Patch(facecolor=color[g], edgecolor="black", label=g) for g in group_names]
        ax.legend(
            handles=handles,
            title=legend_title,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            fontsize=8,
        )
    if title:
        ax.set_title(title)
    return ax


# -- Pareto front --------------------------------------------------------------------------


def _pareto_mask(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Points not dominated by another (both objectives minimised)."""
    keep = np.ones(len(x), dtype=bool)
    for i in range(len(x)):
        dominated = (x <= x[i]) & (y <= y[i]) & ((x < x[i]) | (y < y[i]))
        keep[i] = not dominated.any()
    return keep


def plot_pareto(
    front: Result | pd.DataFrame,
    ax: Axes | None = None,
    *,
    x: str | None = None,
    y: str | None = None,
    label: str | None = None,
    annotate: bool = True,
) -> Axes:
    """A two-objective trade-off, e.g. the makespan-energy Pareto front of ``multicore``.

    Both objectives are taken as minimised: points of the table that another point
    dominates are drawn hollow and grey; the front is drawn as a staircase.

    Parameters
    ----------
    front
        A table with one row per point (e.g. ``result.tables["pareto"]``) or a result
        holding a ``pareto`` / ``front`` table.
    ax
        Axes to draw on; a new figure is made when omitted.
    x, y
        Column names; default: ``makespan_s`` / ``makespan`` and ``energy_j`` /
        ``energy_wh`` / ``energy``, else the table's only two numeric columns.
    label
        Legend label of the front.
    annotate
        Number the points along the front.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    df = _table(front, ("pareto", "pareto_front", "front"), "plot_pareto")
    x = x or _first_present(df, PARETO_X)
    y = y or _first_present(df, PARETO_Y)
    if x is None or y is None:
        numeric = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c])]
        numeric = [c for c in numeric if c not in ("point", "index", "epsilon")]
        if len(numeric) != 2:
            raise UsageError(
                "plot_pareto: cannot tell the two objectives apart; pass x= and y= "
                f"(numeric columns: {', '.join(map(str, numeric)) or 'none'})"
            )
        x, y = x or numeric[0], y or numeric[1]
    _require_columns(df, (x, y), "plot_pareto")
    pts = df[[x, y]].apply(pd.to_numeric, errors="coerce").dropna()
    if pts.empty:
        raise UsageError("plot_pareto: the front table has no numeric points")
    xs, ys = pts[x].to_numpy(dtype=float), pts[y].to_numpy(dtype=float)
    keep = _pareto_mask(xs, ys)
    order = np.argsort(xs[keep], kind="stable")
    fx, fy = xs[keep][order], ys[keep][order]

    ax = _new_axes(ax, (6.0, 4.5))
    ax.step(fx, fy, where="post", color="C0", alpha=0.6)
    ax.plot(fx, fy, "o", color="C0", label=label or f"Pareto front ({len(fx)} points)")
    if (~keep).any():
        ax.plot(xs[~keep], ys[~keep], "o", mfc="none", color="grey", label="dominated (in table)")
    if annotate and len(fx) <= 30:
        for k, (a, b) in enumerate(zip(fx, fy, strict=True)):
            ax.annotate(str(k + 1), (a, b), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xlabel(_pretty(x))
    ax.set_ylabel(_pretty(y))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return ax


# -- utilisation --------------------------------------------------------------------------


def _capacity_pairs(df: pd.DataFrame) -> list[tuple[str, str]]:
    """``(used, capacity)`` column pairs such as ``("cpus_used", "cpus")``."""
    pairs = []
    for col in df.columns:
        name = str(col)
        if name.endswith("_used") and name[: -len("_used")] in df.columns:
            pairs.append((name, name[: -len("_used")]))
    return pairs


def plot_utilisation(
    table: Result | pd.DataFrame,
    ax: Axes | None = None,
    *,
    label: str | None = None,
) -> Axes:
    """Used share of each capacity per resource, e.g. GPUs, CPUs and memory per server.

    Parameters
    ----------
    table
        A table with a label column and pairs of columns ``<r>_used`` / ``<r>`` (used and
        capacity of resource ``r``), such as the ``servers`` table of ``multi_resource``;
        or a result holding a ``servers`` table.
    ax
        Axes to draw on; a new figure is made when omitted.
    label
        The label column; default: the first present of ``server``, ``resource``,
        ``core``, ``agent``, ``device``, ``machine``, ``worker``, ``gpu``, else the first
        column.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    df = _table(table, ("servers", "utilisation", "utilization"), "plot_utilisation")
    pairs = _capacity_pairs(df)
    if not pairs:
        raise UsageError(
            "plot_utilisation needs column pairs <resource>_used and <resource> (e.g. "
            f"cpus_used, cpus); the table has: {', '.join(map(str, df.columns))}"
        )
    if df.empty:
        raise UsageError("plot_utilisation: the table is empty")
    label = label or _first_present(df, ("server", *RESOURCE_COLUMNS)) or str(df.columns[0])
    names = df[label].astype(str).to_list()
    ax = _new_axes(ax, (7.0, min(10.0, 1.6 + 0.3 * len(names) * len(pairs))))
    height = 0.8 / len(pairs)
    for k, (used, cap) in enumerate(pairs):
        u = pd.to_numeric(df[used], errors="coerce").to_numpy(dtype=float)
        c = pd.to_numeric(df[cap], errors="coerce").to_numpy(dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(c > 0, u / c, 0.0)
        ys = np.arange(len(names)) - 0.4 + height * (k + 0.5)
        ax.barh(ys, share, height=height, color=f"C{k}", label=cap)
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlim(0.0, 1.05)
    ax.set_xlabel("share of capacity used")
    ax.set_ylabel(label)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax


# -- JCT CDF -------------------------------------------------------------------------------


def _jct_values(data: Any) -> np.ndarray:
    if isinstance(data, pd.DataFrame):
        col = _first_present(data, JCT_COLUMNS)
        if col is None:
            raise UsageError(
                f"plot_jct_cdf needs a column {' or '.join(JCT_COLUMNS)}; the table has: "
                f"{', '.join(map(str, data.columns))}"
            )
        data = data[col]
    values = pd.to_numeric(pd.Series(np.asarray(data, dtype=object).ravel()), errors="coerce")
    return values.to_numpy(dtype=float)


def plot_jct_cdf(
    jcts: Any,
    ax: Axes | None = None,
    *,
    label: str | None = None,
    log_x: bool = False,
    unit: str = "s",
) -> Axes:
    """Empirical CDF of job completion times (JCT), e.g. from trace replay.

    Parameters
    ----------
    jcts
        JCTs in seconds: an array-like, a DataFrame with a ``jct_s`` column, or a mapping
        ``label -> array-like`` to compare policies on one plot (e.g. heterogeneity-aware
        vs agnostic). Missing or infinite values (jobs that never finished) are left out
        and counted in the legend.
    ax
        Axes to draw on; a new figure is made when omitted.
    label
        Legend label when ``jcts`` is a single series.
    log_x
        Logarithmic time axis (JCTs often span orders of magnitude).
    unit
        Time unit of the axis and the legend's means: ``"s"`` (default), ``"min"`` or
        ``"h"`` (the JCTs given are always seconds).

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    curves: dict[str, np.ndarray]
    if isinstance(jcts, Mapping):
        curves = {str(k): _jct_values(v) for k, v in jcts.items()}
    else:
        curves = {label or "jobs": _jct_values(jcts)}
    if not curves:
        raise UsageError("plot_jct_cdf: no JCT series given")
    scale = {"s": 1.0, "min": 60.0, "h": 3600.0}.get(unit)
    if scale is None:
        raise UsageError(f"plot_jct_cdf: unit must be 's', 'min' or 'h', got {unit!r}")
    ax = _new_axes(ax, (6.0, 4.5))
    for name, values in curves.items():
        done = np.sort(values[np.isfinite(values)]) / scale
        unfinished = len(values) - len(done)
        if len(done) == 0:
            raise UsageError(f"plot_jct_cdf: series {name!r} has no finished job")
        frac = np.arange(1, len(done) + 1) / len(values)
        text = f"{name} (mean {np.mean(done):.4g} {unit}"
        text += f", {unfinished} unfinished)" if unfinished else ")"
        ax.step(
            np.concatenate(([done[0]], done)),
            np.concatenate(([0.0], frac)),
            where="post",
            label=text,
        )
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel(f"job completion time ({unit})")
    ax.set_ylabel("fraction of jobs")
    ax.set_ylim(0.0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return ax


# -- dispatch on a result ------------------------------------------------------------------


def _schedule_table(result: Result) -> str | None:
    names = sorted(result.tables, key=lambda n: (n != "schedule", n))
    for name in names:
        df = result.tables[name]
        if (
            {"start_s", "end_s"} <= set(df.columns)
            and _first_present(df, TASK_COLUMNS)
            and _first_present(df, RESOURCE_COLUMNS)
            and not df.empty
        ):
            return name
    return None


def _pareto_table(result: Result) -> str | None:
    for name, df in result.tables.items():
        if ("pareto" in name or "front" in name) and not df.empty:
            return name
    return None


def _utilisation_table(result: Result) -> str | None:
    for name, df in result.tables.items():
        if _capacity_pairs(df) and not df.empty:
            return name
    return None


def _jct_table(result: Result) -> str | None:
    for name, df in result.tables.items():
        if _first_present(df, JCT_COLUMNS) and not df.empty:
            return name
    return None


def available_plots(result: Result) -> list[str]:
    """The plots :func:`plot_result` can draw from ``result``, most specific first.

    Parameters
    ----------
    result
        Any hetopt result.

    Returns
    -------
    list of str
        A subset of :data:`PLOT_NAMES`.
    """
    out = []
    if _pareto_table(result):
        out.append("pareto")
    if _schedule_table(result):
        out.append("gantt")
    alloc = result.tables.get("allocation")
    if (
        alloc is not None
        and not alloc.empty
        and {"job", "worker_type", "fraction"} <= set(alloc.columns)
    ):
        out.append("allocation")
    if _utilisation_table(result):
        out.append("utilisation")
    if _jct_table(result):
        out.append("jct_cdf")
    return out


def plot_result(result: Result, kind_of_plot: str | None = None, ax: Axes | None = None) -> Axes:
    """Draw the natural plot of a result: Pareto front, Gantt, allocation, utilisation or JCTs.

    Parameters
    ----------
    result
        A solved :class:`~hetopt.Result` (e.g. from :meth:`hetopt.Result.from_json`).
    kind_of_plot
        One of :data:`PLOT_NAMES`; default: the first of :func:`available_plots`.
    ax
        Axes to draw on; a new figure is made when omitted.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Raises
    ------
    hetopt.UsageError
        The result holds no table for the requested plot (e.g. an infeasible result).
    """
    options = available_plots(result)
    if kind_of_plot is not None and kind_of_plot not in PLOT_NAMES:
        raise UsageError(f"unknown plot {kind_of_plot!r}; expected one of: {', '.join(PLOT_NAMES)}")
    if not options:
        raise UsageError(
            f"nothing to plot: the {result.kind} result (status {result.status.value}) has no "
            f"plottable table (tables: {', '.join(result.tables) or 'none'})"
        )
    name = kind_of_plot or options[0]
    if name not in options:
        raise UsageError(
            f"the {result.kind} result has no table for a {name!r} plot; it can draw: "
            f"{', '.join(options)}"
        )
    title = f"{result.kind} / {result.objective}"
    if name == "allocation":
        return plot_allocation(result, ax)
    if name == "gantt":
        table = _schedule_table(result)
        assert table is not None
        schedule = result.tables[table]
        value = result.objective_value
        suffix = f" = {value:.6g}" if value is not None else ""
        if "point" in schedule.columns and schedule["point"].nunique() > 1:
            # a Pareto result keeps one schedule per point: draw the first
            first = schedule["point"].min()
            schedule = schedule[schedule["point"] == first]
            suffix = f" (Pareto point {first})"
        return plot_gantt(schedule, ax=ax, title=title + suffix)
    if name == "pareto":
        table = _pareto_table(result)
        assert table is not None
        ax = plot_pareto(result.tables[table], ax)
        ax.set_title(title)
        return ax
    if name == "utilisation":
        table = _utilisation_table(result)
        assert table is not None
        ax = plot_utilisation(result.tables[table], ax)
        ax.set_title(title)
        return ax
    table = _jct_table(result)
    assert table is not None
    ax = plot_jct_cdf(result.tables[table], ax, label=result.kind)
    ax.set_title(title)
    return ax
