"""``hetopt generate multi-resource``."""

from __future__ import annotations

from pathlib import Path

import click

from ...console import count_type, emit_instance, handle_errors, output_option, seed_option


@click.command("multi-resource")
@click.option("--jobs", "num_jobs", type=count_type(), required=True, help="Number of jobs.")
@click.option(
    "--servers", "num_servers", type=count_type(), required=True, help="Number of servers."
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
@click.option(
    "--racks",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Label the servers rack=r0, r1, ... in this many contiguous blocks (0: no labels).",
)
@click.option(
    "--tagged-fraction",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="Fraction of jobs tagged db, web, cache or batch (for placement rules).",
)
@click.option(
    "--cost-per-hour",
    type=click.FloatRange(min=0),
    default=None,
    help="Every server's cost_per_hour (for the min_cost objective).",
)
@click.option(
    "--rule",
    "rules",
    multiple=True,
    metavar="JSON",
    help='A placement rule, e.g. \'{"rule": "anti_affinity", "tag": "db", "scope": "rack"}\' '
    "(repeatable).",
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
    racks: int,
    tagged_fraction: float,
    cost_per_hour: float | None,
    rules: tuple[str, ...],
    output: Path | None,
) -> None:
    """Sample a multi_resource instance from Synergy's measured job profiles."""
    import json

    from .generate import generate

    parsed = []
    for k, text in enumerate(rules):
        try:
            parsed.append(json.loads(text))
        except json.JSONDecodeError as exc:
            raise click.BadParameter(
                f"rule {k + 1} is not JSON: {exc.msg}", param_hint="--rule"
            ) from None
    inst = generate(
        num_jobs,
        num_servers,
        seed,
        gpus_per_server,
        cpus_per_server,
        mem_gb_per_server,
        profile_set,
        racks=racks,
        tagged_fraction=tagged_fraction,
        cost_per_hour=cost_per_hour,
        rules=parsed or None,
    )
    emit_instance(inst, output, f"{num_jobs} jobs, {num_servers} servers")
