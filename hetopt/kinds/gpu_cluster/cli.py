"""``hetopt generate gpu-cluster``."""

from __future__ import annotations

from pathlib import Path

import click

from ...console import emit_instance, handle_errors, output_option, seed_option
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
@click.option(
    "--jobs", "num_jobs", type=click.IntRange(min=1), required=True, help="Number of jobs."
)
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
