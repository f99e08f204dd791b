"""``hetopt generate multi-resource``."""

from __future__ import annotations

from pathlib import Path

import click

from ...console import emit_instance, handle_errors, output_option, seed_option


@click.command("multi-resource")
@click.option(
    "--jobs", "num_jobs", type=click.IntRange(min=1), required=True, help="Number of jobs."
)
@click.option(
    "--servers", "num_servers", type=click.IntRange(min=1), required=True, help="Number of servers."
)
@seed_option()
@click.option("--gpus-per-server", type=click.IntRange(min=1), default=8, show_default=True)
@click.option("--cpus-per-server", type=click.FloatRange(min=0), default=24.0, show_default=True)
@click.option("--mem-gb-per-server", type=click.FloatRange(min=0), default=500.0, show_default=True)
@click.option(
    "--profile-set",
    type=click.Choice(["models", "models-4", "models-5", "models-6"]),
    default="models",
    show_default=True,
    help="Synergy profile set (CPU:GPU ratio 3, 4, 5 or 6).",
)
@output_option()
@handle_errors
def generate_cmd(
    num_jobs: int,
    num_servers: int,
    seed: int,
    gpus_per_server: int,
    cpus_per_server: float,
    mem_gb_per_server: float,
    profile_set: str,
    output: Path | None,
) -> None:
    """Sample a multi_resource instance from Synergy's measured job profiles."""
    from .generate import generate

    inst = generate(
        num_jobs,
        num_servers,
        seed,
        gpus_per_server,
        cpus_per_server,
        mem_gb_per_server,
        profile_set,
    )
    emit_instance(inst, output, f"{num_jobs} jobs, {num_servers} servers")
