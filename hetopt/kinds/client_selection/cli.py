"""``hetopt generate client-selection``."""

from __future__ import annotations

from pathlib import Path

import click

from ...console import count_type, emit_instance, handle_errors, output_option, seed_option


@click.command("client-selection")
@click.option(
    "--clients", "num_clients", type=count_type(), required=True, help="Number of clients."
)
@seed_option()
@click.option(
    "--deadline",
    "deadline_s",
    type=click.FloatRange(min=0, min_open=True),
    default=300.0,
    show_default=True,
    help="Round deadline in seconds.",
)
@click.option(
    "--uplink", type=click.Choice(["shared", "parallel"]), default="shared", show_default=True
)
@click.option("--max-clients", type=click.IntRange(min=1), help="At most this many clients.")
@click.option(
    "--classes", type=click.IntRange(min=0), default=10, show_default=True, help="Labels."
)
@click.option(
    "--groups", type=click.IntRange(min=0), default=0, show_default=True, help="Client groups."
)
@click.option(
    "--budget-fraction",
    type=click.FloatRange(min=0, min_open=True),
    default=0.2,
    show_default=True,
    help="Parallel uplink: bandwidth budget as a fraction of all clients' needs.",
)
@click.option(
    "--target-fraction",
    type=click.FloatRange(min=0, max=1),
    default=0.05,
    show_default=True,
    help="min_duration: class_targets as this fraction of the pool's samples per class.",
)
@click.option(
    "--time-resolution",
    type=click.FloatRange(min=0),
    default=0.1,
    show_default=True,
    help="Round times to multiples of this many seconds (0: full precision).",
)
@click.option(
    "--objective",
    type=click.Choice(["max_clients", "max_weight", "min_duration"]),
    help="Objective to record (min_duration also writes class_targets).",
)
@output_option()
@handle_errors
def generate_cmd(
    num_clients: int,
    seed: int,
    deadline_s: float,
    uplink: str,
    max_clients: int | None,
    classes: int,
    groups: int,
    budget_fraction: float,
    target_fraction: float,
    time_resolution: float,
    objective: str | None,
    output: Path | None,
) -> None:
    """Sample a client_selection instance (lognormal compute and bandwidth, Dirichlet labels)."""
    from .generate import generate

    inst = generate(
        num_clients,
        seed,
        deadline_s,
        uplink,  # type: ignore[arg-type]
        objective,
        max_clients,
        classes,
        groups,
        budget_fraction,
        target_fraction,
        time_resolution_s=time_resolution or None,
    )
    emit_instance(inst, output, f"{num_clients} clients")
