"""The ``gpu_cluster`` kind's commands: ``hetopt generate gpu-cluster``, ``hetopt convert
gavel-trace`` and ``hetopt simulate`` (replay a Gavel trace under a policy)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ...console import count_type, emit_instance, handle_errors, output_option, seed_option
from ...errors import InstanceError, UsageError
from .. import get_kind

# options shared by ``generate gpu-cluster`` and ``convert gavel-trace``
_workers_option = click.option(
    "--workers",
    default="k80=36,p100=36,v100=36",
    show_default=True,
    help="GPU types and counts, TYPE=COUNT,...",
)
_objective_option = click.option(
    "--objective",
    type=click.Choice(get_kind("gpu_cluster").objective_names()),
    help="Objective to record in the instance.",
)


@click.command("gpu-cluster")
@click.option("--jobs", "num_jobs", type=count_type(), required=True, help="Number of jobs.")
@_workers_option
@seed_option()
@click.option(
    "--priority",
    "priority_fraction",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="Fraction of jobs with weight 5 (Gavel uses 0.2).",
)
@click.option("--single-gpu", is_flag=True, help="Only scale factor 1 jobs.")
@_objective_option
@output_option()
@handle_errors
def generate_cmd(
    num_jobs: int,
    workers: str,
    seed: int,
    priority_fraction: float,
    single_gpu: bool,
    objective: str | None,
    output: Path | None,
) -> None:
    """Sample a gpu_cluster instance the way Gavel's simulator does (measured throughputs)."""
    from .generate import generate, workers_option

    inst = generate(
        num_jobs, workers_option(workers), seed, not single_gpu, priority_fraction, objective
    )
    emit_instance(inst, output, f"{num_jobs} jobs")


@click.command("gavel-trace")
@click.argument("trace", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--throughputs",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Gavel throughput table (JSON); default: the shipped simulation table.",
)
@_workers_option
@click.option(
    "--colocation",
    is_flag=True,
    help="Also import the table's co-location (space sharing) pairs for the trace's job types.",
)
@_objective_option
@output_option()
@handle_errors
def convert_trace_cmd(
    trace: Path,
    throughputs: Path | None,
    workers: str,
    colocation: bool,
    objective: str | None,
    output: Path | None,
) -> None:
    """Convert a Gavel physical-cluster trace (10 tab-separated fields) to a gpu_cluster
    instance. Bad lines are reported with their line number (exit 3)."""
    from .gavel import load_table
    from .generate import workers_option
    from .trace import read_gavel_trace, trace_to_instance

    w = workers_option(workers)  # before reading the trace
    table = load_table(throughputs)
    records = read_gavel_trace(trace, table)
    inst = trace_to_instance(records, table, w, objective, str(trace), colocation=colocation)
    emit_instance(inst, output, f"{len(records)} jobs")


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
    "--mechanism",
    type=click.Choice(["hetopt", "gavel"]),
    default="hetopt",
    show_default=True,
    help="Round mechanism: hetopt (work-conserving: re-solves on every change, back-fills "
    "idle GPUs at once) or gavel (Gavel's simulator rule by rule, to reproduce its numbers).",
)
@click.option(
    "--reset-interval-s",
    type=click.FloatRange(min=0),
    default=1920.0,
    show_default=True,
    help="gavel: least time between two allocation recomputes (arrivals wait).",
)
@click.option(
    "--gpus-per-server",
    help="GPUs per server, TYPE=COUNT,... (e.g. v100=4,p100=4,k80=8); default: one server "
    "per type.",
)
@click.option(
    "--space-sharing",
    is_flag=True,
    help="Let the policy pair jobs on the same GPUs (max_min_fairness, makespan; hetopt "
    "mechanism).",
)
@click.option(
    "--loanable",
    help="GPUs lent by idle inference servers, TYPE=PEAK,... (Lyra): a daily curve, the most "
    "at 03:00 and none at 15:00, hourly steps (hetopt mechanism).",
)
@click.option(
    "--loan-period-s",
    type=click.FloatRange(min=0, min_open=True),
    default=86_400.0,
    show_default=True,
    help="Period of the --loanable curve in seconds.",
)
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
    type=count_type(),
    help="Instead of TRACE, generate this many Gavel jobs with Poisson arrivals.",
)
@click.option(
    "--arrival-rate",
    type=click.FloatRange(min=0, min_open=True),
    default=20.0,
    show_default=True,
    help="Arrivals per hour of a generated trace.",
)
@click.option(
    "--generator",
    type=click.Choice(["hetopt", "gavel"]),
    default="hetopt",
    show_default=True,
    help="How --generate-jobs draws jobs: hetopt's generator, or exactly Gavel's random "
    "streams (the same jobs as Gavel's simulator for the same --seed).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of a generated trace and of the gavel mechanism's type shuffler.",
)
@click.option("--max-rounds", type=click.IntRange(min=1), default=1_000_000, show_default=True)
@click.option(
    "--on-solve-failure",
    type=click.Choice(["abort", "keep-previous"]),
    default="abort",
    show_default=True,
    help="When a policy solve ends without an allocation: abort the replay with the error, "
    "or keep the previous allocation for that round (logged as a warning and counted as "
    "failed_solves in the summary).",
)
@click.option(
    "--progress",
    type=click.Choice(["auto", "rounds", "fluid"]),
    default="auto",
    show_default=True,
    help="rounds: per-round placements by the round mechanism "
    "(hetopt.kinds.gpu_cluster.rounds); fluid: allocated rates.",
)
@click.option(
    "--compare",
    is_flag=True,
    help="Also run the heterogeneity-agnostic variant and report the JCT ratio.",
)
@click.option("--json", "as_json", is_flag=True, help="Print {summary, jobs, timeline} as JSON.")
@click.option(
    "--plot",
    "plot_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write a JCT CDF plot (PNG/PDF/SVG).",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar on stderr.")
@click.option("-v", "--verbose", count=True, help="Show the HiGHS log on stderr (-vv: debug).")
@handle_errors
def simulate_cmd(
    trace: Path | None,
    policy: str,
    workers: str,
    agnostic: bool,
    mechanism: str,
    reset_interval_s: float,
    gpus_per_server: str | None,
    space_sharing: bool,
    loanable: str | None,
    loan_period_s: float,
    round_s: float,
    throughputs: Path | None,
    generate_jobs: int | None,
    arrival_rate: float,
    generator: str,
    seed: int,
    max_rounds: int,
    on_solve_failure: str,
    progress: str,
    compare: bool,
    as_json: bool,
    plot_file: Path | None,
    quiet: bool,
    verbose: int,
) -> None:
    """Replay a Gavel-format TRACE (or a generated one) in rounds and report JCTs.

    --mechanism gavel reproduces Gavel's simulator (per-type queues, priorities since the
    last allocation reset, recompute at most every --reset-interval-s, leases, placement on
    servers); the default hetopt mechanism is work-conserving. Reports mean, median and p95
    job completion time, makespan, utilisation, solves and solve latency against the round
    length. --json prints {"summary": {...}, "jobs": [...], "timeline": [...]} (with
    --compare also "agnostic": {"summary", "jobs", "timeline"} and
    "mean_jct_ratio_agnostic_over_aware"). A progress bar goes to stderr when it is a
    terminal (--quiet: none).
    """
    from ...options import SolveOptions
    from .gavel import load_table
    from .generate import workers_option
    from .simulate import (
        LoanCurve,
        gavel_trace,
        generate_trace,
        load_trace,
        plot_jct_cdf,
        simulate,
    )

    _setup_logging(verbose)
    if (trace is None) == (generate_jobs is None):
        raise UsageError("give either a TRACE file or --generate-jobs N (not both)")
    if compare and agnostic:
        raise UsageError("--compare already runs the agnostic variant; drop --agnostic")
    if mechanism == "gavel" and progress == "fluid":
        raise UsageError("--mechanism gavel places jobs in rounds; drop --progress fluid")
    if mechanism == "gavel" and space_sharing:
        raise UsageError("--space-sharing is replayed by --mechanism hetopt only")
    if loanable and (mechanism == "gavel" or progress == "fluid"):
        raise UsageError("--loanable is replayed by --mechanism hetopt in rounds only")
    if plot_file is not None:  # check before a long simulation, not after it
        _check_plot_file(plot_file)
    w = workers_option(workers)
    gps = _parse_gpus_per_server(gpus_per_server, w) if gpus_per_server else None
    loan = None
    if loanable:
        peak = workers_option(loanable, "--loanable")  # the TYPE=COUNT syntax of --workers
        step = min(3600.0, loan_period_s)
        loan = LoanCurve.diurnal(peak, None, loan_period_s, step, loan_period_s / 8.0)
    table = load_table(throughputs)
    if trace is not None:
        records = load_trace(trace, table)
    else:
        assert generate_jobs is not None
        if generator == "gavel":
            records = gavel_trace(generate_jobs, arrival_rate, seed, table=table)
        else:
            records = generate_trace(generate_jobs, w, arrival_rate, seed)

    def run(agn: bool) -> Any:
        bar = _ProgressBar(f"{policy}{' (agnostic)' if agn else ''}", quiet)
        try:
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
                mechanism=mechanism,
                reset_interval_s=reset_interval_s,
                gpus_per_server=gps,
                space_sharing=space_sharing,
                seed=seed,
                loanable=loan,
                on_progress=bar.update if bar.enabled else None,
                on_solve_failure=on_solve_failure.replace("-", "_"),
            )
        finally:
            bar.close()

    try:
        res = run(agnostic)
        other = run(True) if compare else None
    except InstanceError as exc:
        if exc.source != "<trace>":
            raise
        # (the jobs were read or drawn here: name the file, or the options that drew them)
        if trace is not None:
            raise InstanceError(exc.message, exc.field, str(trace)) from None
        at = (exc.field or "").replace("line", "job")
        raise UsageError(
            f"--generate-jobs {generate_jobs} on --workers {workers}: {at}: {exc.message}"
        ) from None
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
            out["agnostic"] = other.to_dict()
            out["mean_jct_ratio_agnostic_over_aware"] = ratio
        click.echo(json.dumps(out, indent=1, allow_nan=False))
        return
    _echo(res.summary, f"{policy}{' (agnostic)' if agnostic else ''}")
    if other is not None:
        _echo(other.summary, f"{policy} (agnostic)")
        click.echo(f"mean JCT agnostic / heterogeneity-aware: {ratio:.2f}x")
    if plot_file is not None:
        click.echo(f"plot: {plot_file}")


def _setup_logging(verbose: int) -> None:
    """-v: the HiGHS log on stderr; -vv: hetopt's debug messages too (as ``hetopt solve``)."""
    import logging
    import sys

    if verbose <= 0:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    target = logging.getLogger("hetopt.solver" if verbose == 1 else "hetopt")
    target.addHandler(handler)
    target.setLevel(logging.INFO if verbose == 1 else logging.DEBUG)
    target.propagate = False


def _parse_gpus_per_server(text: str, workers: dict[str, int]) -> dict[str, int]:
    from .generate import parse_workers

    try:
        gps = parse_workers(text)
    except Exception as exc:  # the same TYPE=COUNT syntax as --workers
        raise UsageError(f"--gpus-per-server: {exc}") from None
    for t, g in gps.items():
        if t not in workers:
            raise UsageError(
                f"--gpus-per-server: unknown type {t!r}; the cluster has: {', '.join(workers)}"
            )
        if g < 1:
            raise UsageError(f"--gpus-per-server: {t} needs at least 1 GPU per server")
    return gps


class _ProgressBar:
    """A one-line progress bar on stderr (only when stderr is a terminal)."""

    def __init__(self, label: str, quiet: bool):
        import sys

        self.label = label
        self.enabled = not quiet and sys.stderr.isatty()
        self._last = 0.0
        self._drawn = False

    def update(self, now_s: float, done: int, total: int) -> None:
        import time

        t = time.monotonic()
        if t - self._last < 0.1 and done < total:
            return
        self._last = t
        width = 30
        fill = int(width * done / max(total, 1))
        click.echo(
            f"\r{self.label}: [{'#' * fill}{'.' * (width - fill)}] {done}/{total} jobs, "
            f"t = {now_s / 3600:.1f} h",
            err=True,
            nl=False,
        )
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            click.echo("", err=True)


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
        f"of a round, max {s['solve_latency_max_s'] * 1e3:.1f} ms)"
    )
    model = {
        "hetopt": "rounds, hetopt mechanism (work-conserving)",
        "gavel": f"rounds, Gavel's mechanism (reset interval {s['reset_interval_s']:g} s)",
        "fluid": "fluid (allocated effective throughput per round)",
    }[s["mechanism"]]
    click.echo(f"  progress model   : {model}")
    if s.get("failed_solves"):
        click.echo(
            f"  failed solves    : {s['failed_solves']} (kept the previous allocation; see "
            "the warnings)"
        )
    if s.get("nonoptimal_solves"):
        click.echo(
            f"  not optimal      : {s['nonoptimal_solves']} solves ended feasible, not proven "
            "optimal (their allocations were used; see the warnings)"
        )
    if s["failed_jobs"]:
        click.echo(f"  failed (Gavel)   : {s['failed_jobs']} jobs dropped after 5 failed leases")
    if s.get("loaned_gpu_s"):
        click.echo(
            f"  loaned GPU time  : {s['loaned_gpu_s'] / 3600:.1f} GPU-h (idle inference GPUs)"
        )
