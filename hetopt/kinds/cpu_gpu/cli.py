"""``hetopt generate cpu-gpu``."""

from __future__ import annotations

from pathlib import Path

import click

from ...console import count_type, emit_instance, handle_errors, output_option, seed_option


@click.command("cpu-gpu")
@click.option(
    "--programs",
    "num_programs",
    type=count_type(),
    required=True,
    help="Number of programs.",
)
@click.option("--cpus", "num_cpus", type=click.IntRange(min=0), default=1, show_default=True)
@click.option("--gpus", "num_gpus", type=click.IntRange(min=0), default=1, show_default=True)
@seed_option()
@click.option(
    "--divisible",
    "divisible_fraction",
    type=click.FloatRange(0, 1),
    default=0.3,
    show_default=True,
    help="Probability that a program is divisible.",
)
@click.option(
    "--slowdown-pairs",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Number of (CPU program, GPU program) pairs with slowdown factors.",
)
@click.option(
    "--objective",
    type=click.Choice(["makespan", "throughput"]),
    default="makespan",
    show_default=True,
)
@output_option()
@handle_errors
def generate_cmd(
    num_programs: int,
    num_cpus: int,
    num_gpus: int,
    seed: int,
    divisible_fraction: float,
    slowdown_pairs: int,
    objective: str,
    output: Path | None,
) -> None:
    """Sample a cpu_gpu batch: log-uniform CPU times and GPU speed-ups (see the docs)."""
    from .generate import generate

    inst = generate(
        num_programs, num_cpus, num_gpus, seed, divisible_fraction, slowdown_pairs, objective
    )
    emit_instance(inst, output, f"{num_programs} programs")
