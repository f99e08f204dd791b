"""``hetopt convert fjsp``: flexible job-shop files to the instances of any kind that
reads them (each kind's registry entry names its reader)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..console import check_output, emit_instance, handle_errors
from ..kinds import instance_from_dict, load_target, readers

_READERS = readers("fjsp")


@click.command("fjsp")
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Output JSON file (default: stdout).",
)
@click.option(
    "--kind",
    "target",
    type=click.Choice(list(_READERS)),
    default="multicore",
    show_default=True,
    help="Kind of the instance to write.",
)
@handle_errors
def convert_fjsp_cmd(file: Path, output: Path | None, target: str) -> None:
    """Convert a flexible job-shop FILE (Brandimarte/Kacem/Fattahi text format).

    Each job becomes a chain of tasks and each machine a core (or agent) of its own type.
    """
    from ..formats.fjsp import read_fjsp

    check_output(output, "--output", (file,))
    data = read_fjsp(file)
    inst = load_target(_READERS[target])(data)
    instance_from_dict(inst, source=str(file))  # the converted instance must be valid
    summary = (
        f"{len(data.jobs)} jobs, {data.num_operations} operations, {data.num_machines} machines"
    )
    emit_instance(json.dumps(inst, indent=1), output, summary)
