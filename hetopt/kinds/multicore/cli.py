"""``hetopt generate multicore``."""

from __future__ import annotations

from pathlib import Path

import click

from ...console import count_type, emit_instance, handle_errors, output_option, seed_option
from .. import get_kind
from .generate import FAMILIES


@click.command("multicore")
@click.option(
    "--family",
    type=click.Choice(FAMILIES),
    required=True,
    help="Fanjul-Peyro & Ruiz R||Cmax family.",
)
@click.option("--machines", type=count_type(), required=True, help="Number of cores.")
@click.option("--tasks", type=count_type(), required=True, help="Number of tasks.")
@seed_option()
@click.option(
    "--objective",
    type=click.Choice(get_kind("multicore").objective_names()),
    help="Objective to record in the instance.",
)
@output_option()
@handle_errors
def generate_cmd(
    family: str,
    machines: int,
    tasks: int,
    seed: int,
    objective: str | None,
    output: Path | None,
) -> None:
    """Sample independent tasks on unrelated cores (Fanjul-Peyro & Ruiz families)."""
    from .generate import generate

    inst = generate(family, machines, tasks, seed, objective)
    emit_instance(inst, output, f"{tasks} tasks on {machines} cores")
