"""``hetopt generate gpu-cluster``."""

from __future__ import annotations

from pathlib import Path

import click

from ...cli import handle_errors


@click.command("gpu-cluster")
@click.option(
    "--jobs", "num_jobs", type=click.IntRange(min=1), required=True, help="Number of jobs."
)
@click.option(
    "--workers",
    default="k80=36,p100=36,v100=36",
    show_default=True,
    help="GPU types and counts, TYPE=COUNT,...",
)
@click.option(
    "--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Random seed."
)
@click.option(
    "--priority",
    "priority_fraction",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="Fraction of jobs with weight 5 (Gavel uses 0.2).",
)
@click.option("--single-gpu", is_flag=True, help="Only scale factor 1 jobs.")
@click.option("--objective", help="Objective to record in the instance.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Output file (default: stdout).",
)
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
    from .generate import generate

    inst = generate(num_jobs, workers, seed, not single_gpu, priority_fraction, objective)
    text = inst.to_json(output)
    if output is None:
        click.echo(text)
    else:
        click.echo(f"wrote {output} ({num_jobs} jobs)", err=True)
