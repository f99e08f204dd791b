"""``hetopt plot RESULT.json -o FILE.png [--kind-of-plot NAME]``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ..console import EXIT_CODES_HELP, handle_errors
from ..errors import InstanceError, UsageError
from ..plotting.plots import PLOT_NAMES


def _load(path: Path) -> Any:
    """A :class:`hetopt.Result`, or the ``jobs`` table of a ``hetopt simulate --json`` file."""
    import pandas as pd

    from ..result import Result

    if not path.exists():  # (exit 3 with the file named, as solve and validate say it)
        raise InstanceError("no such file", None, str(path))
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise InstanceError(f"cannot read the file: {exc}", None, str(path)) from None
    except json.JSONDecodeError as exc:
        raise InstanceError(
            f"not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}", None, str(path)
        ) from None
    if not isinstance(data, dict):
        raise InstanceError("expected a JSON object (a hetopt result)", None, str(path))
    if "kind" not in data and isinstance(data.get("jobs"), list) and "summary" in data:
        return pd.DataFrame.from_records(data["jobs"])  # trace replay output
    for key in ("kind", "objective", "status"):
        if key not in data:
            raise InstanceError(
                f"missing key {key!r}: expected a result written by 'hetopt solve -o' "
                "or 'hetopt solve --json'",
                key,
                str(path),
            )
    try:
        return Result.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise InstanceError(f"not a hetopt result: {exc}", None, str(path)) from None


@click.command("plot", epilog=EXIT_CODES_HELP)
@click.argument("result_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Image file to write; the format follows the suffix (.png, .svg, .pdf, ...).",
)
@click.option(
    "--kind-of-plot",
    "-k",
    type=click.Choice(PLOT_NAMES),
    help="Which plot; default: the natural one for the result "
    "(pareto > gantt > allocation > selection > utilisation > jct_cdf).",
)
@click.option("--dpi", type=click.IntRange(min=30, max=1200), default=150, show_default=True)
@handle_errors
def plot_cmd(result_file: Path, output: Path, kind_of_plot: str | None, dpi: int) -> None:
    """Plot a result JSON (from 'hetopt solve -o' or 'hetopt simulate --json').

    allocation -> heatmap (jobs x worker types); schedule -> Gantt chart;
    pareto -> makespan-energy front; client selection -> the round's timeline
    (training and upload of each selected client); per-server capacities ->
    utilisation bars; per-job JCTs -> CDF (hours for long replays).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise UsageError(
            f"'hetopt plot' needs matplotlib: pip install 'hetopt[plot]' ({exc})"
        ) from None
    import pandas as pd

    from ..plotting.plots import plot_jct_cdf, plot_result

    loaded = _load(result_file)
    fig = plt.figure(layout="constrained")
    try:
        ax = fig.add_subplot()
        if isinstance(loaded, pd.DataFrame):
            if kind_of_plot not in (None, "jct_cdf"):
                raise UsageError(
                    f"{result_file} is a trace-replay result: only the 'jct_cdf' plot applies"
                )
            plot_jct_cdf(loaded, ax, label=result_file.stem)
        else:
            plot_result(loaded, kind_of_plot, ax)
        _fit(fig, ax)
        suffix = output.suffix.lower().lstrip(".")
        formats = fig.canvas.get_supported_filetypes()
        if suffix not in formats:
            raise UsageError(
                f"cannot write {output}: unknown image format {suffix or '(no suffix)'!r}; "
                f"use one of: {', '.join(sorted(formats))}"
            )
        try:
            fig.savefig(output, dpi=dpi)
        except OSError as exc:
            raise UsageError(f"cannot write {output}: {exc}") from None
    finally:
        plt.close(fig)
    click.echo(f"wrote {output}")


def _fit(fig: Any, ax: Any) -> None:
    """Size the figure to what was drawn (many Gantt rows or heatmap jobs need height)."""
    rows = len(ax.get_yticks())
    fig.set_size_inches(max(6.4, fig.get_figwidth()), min(14.0, max(4.8, 1.5 + 0.3 * rows)))
