"""``hetopt simulate``: replay a Gavel trace under a ``gpu_cluster`` policy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ..console import handle_errors
from ..kinds.base import UsageError


@click.command("simulate")
@click.argument("trace", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--policy",
    default="max_min_fairness",
    show_default=True,
    help="gpu_cluster objective to allocate with (see 'hetopt kinds').",
)
@click.option(
    "--workers",
    default="k80=24,p100=16,v100=8",
    show_default=True,
    help="GPU types and counts, TYPE=COUNT,...",
)
@click.option("--agnostic", is_flag=True, help="Heterogeneity-agnostic variant of the policy.")
@click.option(
    "--round-s",
    type=click.FloatRange(min=0, min_open=True),
    default=360.0,
    show_default=True,
    help="Round length in seconds (Gavel: 360).",
)
@click.option(
    "--throughputs",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Gavel throughput table (default: the simulation table shipped with hetopt).",
)
@click.option(
    "--generate-jobs",
    type=click.IntRange(min=1),
    help="Instead of TRACE, generate this many Gavel jobs with Poisson arrivals.",
)
@click.option(
    "--arrival-rate",
    type=click.FloatRange(min=0, min_open=True),
    default=20.0,
    show_default=True,
    help="Arrivals per hour of a generated trace.",
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--max-rounds", type=click.IntRange(min=1), default=1_000_000, show_default=True)
@click.option(
    "--progress",
    type=click.Choice(["auto", "rounds", "fluid"]),
    default="auto",
    show_default=True,
    help="rounds: Gavel's per-round placements (hetopt.rounds); fluid: allocated rates.",
)
@click.option(
    "--compare",
    is_flag=True,
    help="Also run the heterogeneity-agnostic variant and report the JCT ratio.",
)
@click.option("--json", "as_json", is_flag=True, help="Print {summary, jobs} as JSON.")
@click.option(
    "--plot",
    "plot_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write a JCT CDF plot (PNG/PDF/SVG).",
)
@handle_errors
def simulate_cmd(
    trace: Path | None,
    policy: str,
    workers: str,
    agnostic: bool,
    round_s: float,
    throughputs: Path | None,
    generate_jobs: int | None,
    arrival_rate: float,
    seed: int,
    max_rounds: int,
    progress: str,
    compare: bool,
    as_json: bool,
    plot_file: Path | None,
) -> None:
    """Replay a Gavel-format TRACE (or a generated one) in rounds and report JCTs.

    Each round either Gavel's round mechanism places jobs (--progress rounds) or every
    job runs at its allocated effective throughput (--progress fluid). Reports mean,
    median and p95 job completion time, makespan, utilisation and solve latency against
    the round length. --json prints {"summary": {...}, "jobs": [...]} (with --compare
    also "agnostic": {"summary": {...}} and "mean_jct_ratio_agnostic_over_aware").
    """
    from ..kinds.gpu_cluster.gavel import load_table
    from ..kinds.gpu_cluster.generate import workers_option
    from ..options import SolveOptions
    from .gpu import generate_trace, load_trace, plot_jct_cdf, simulate

    if (trace is None) == (generate_jobs is None):
        raise UsageError("give either a TRACE file or --generate-jobs N (not both)")
    if compare and agnostic:
        raise UsageError("--compare already runs the agnostic variant; drop --agnostic")
    if plot_file is not None:  # check before a long simulation, not after it
        _check_plot_file(plot_file)
    w = workers_option(workers)
    table = load_table(throughputs)
    if trace is not None:
        records = load_trace(trace, table)
    else:
        assert generate_jobs is not None
        records = generate_trace(generate_jobs, w, arrival_rate, seed)

    def run(agn: bool) -> Any:
        return simulate(
            records,
            w,
            policy,
            agn,
            round_s,
            SolveOptions(threads=1),
            table,
            max_rounds=max_rounds,
            progress=progress,
        )

    res = run(agnostic)
    other = run(True) if compare else None
    ratio = None
    if other is not None:
        ratio = other.summary["mean_jct_s"] / res.summary["mean_jct_s"]
    if plot_file is not None:
        import matplotlib

        matplotlib.use("Agg")
        ax = plot_jct_cdf([res] if other is None else [res, other])
        try:
            ax.figure.savefig(plot_file, dpi=120, bbox_inches="tight")
        except OSError as exc:
            raise UsageError(f"--plot {plot_file}: cannot write: {exc.strerror or exc}") from None
    if as_json:
        out = res.to_dict()
        if other is not None:
            out["agnostic"] = {"summary": other.to_dict()["summary"]}
            out["mean_jct_ratio_agnostic_over_aware"] = ratio
        click.echo(json.dumps(out, indent=1, allow_nan=False))
        return
    _echo(res.summary, f"{policy}{' (agnostic)' if agnostic else ''}")
    if other is not None:
        _echo(other.summary, f"{policy} (agnostic)")
        click.echo(f"mean JCT agnostic / heterogeneity-aware: {ratio:.2f}x")
    if plot_file is not None:
        click.echo(f"plot: {plot_file}")


def _check_plot_file(path: Path) -> None:
    """A usage error (exit 2) for a --plot file matplotlib cannot write."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    formats = Figure().canvas.get_supported_filetypes()
    suffix = path.suffix.lstrip(".").lower()
    if suffix and suffix not in formats:  # no suffix: matplotlib writes PNG
        raise UsageError(
            f"--plot {path}: unsupported format {suffix!r}; expected one of: "
            f"{', '.join(sorted(formats))}"
        )
    if not path.parent.is_dir():
        raise UsageError(f"--plot {path}: directory {path.parent} does not exist")


def _echo(s: dict[str, Any], name: str) -> None:
    click.echo(f"hetopt simulate: {name}, {s['num_jobs']} jobs, rounds of {s['round_s']:g} s")
    click.echo(f"  completed        : {s['completed_jobs']} / {s['num_jobs']}")
    for key, label in (
        ("mean_jct_s", "mean JCT"),
        ("median_jct_s", "median JCT"),
        ("p95_jct_s", "p95 JCT"),
        ("makespan_s", "makespan"),
    ):
        click.echo(f"  {label:<17}: {s[key]:.1f} s ({s[key] / 3600:.2f} h)")
    click.echo(f"  utilisation      : {s['utilization']:.1%}")
    click.echo(
        f"  solves           : {s['solves']} (latency p50 {s['solve_latency_p50_s'] * 1e3:.1f} ms, "
        f"p95 {s['solve_latency_p95_s'] * 1e3:.1f} ms = {s['solve_latency_p95_over_round']:.2e} "
        "of a round)"
    )
    model = {
        "rounds": "rounds (Gavel's per-round placements, hetopt.rounds)",
        "fluid": "fluid (allocated effective throughput per round)",
    }[s["progress_model"]]
    click.echo(f"  progress model   : {model}")
