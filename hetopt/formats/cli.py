"""``hetopt convert fjsp``: flexible job-shop files to hetopt instances."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import click

from ..cli import EXIT_USAGE, _die, handle_errors


@click.command("fjsp")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Output JSON file (default: stdout).",
)
@click.option(
    "--kind",
    "target",
    type=click.Choice(["multicore", "human_robot"]),
    default="multicore",
    show_default=True,
    help="Kind of the instance to write.",
)
@handle_errors
def convert_fjsp_cmd(file: Path, output: Path | None, target: str) -> None:
    """Convert a flexible job-shop FILE (Brandimarte/Kacem/Fattahi text format).

    Each job becomes a chain of tasks and each machine a core (or agent) of its own type.
    """
    from ..instance import instance_from_dict
    from .fjsp import read_fjsp

    data = read_fjsp(file)
    if target == "multicore":
        from ..kinds.multicore.fjsp import fjsp_to_multicore

        inst = fjsp_to_multicore(data)
    else:
        try:
            module = importlib.import_module("hetopt.kinds.human_robot.fjsp")
            convert = module.fjsp_to_instance
        except (ImportError, AttributeError) as exc:
            _die(
                EXIT_USAGE,
                "--kind human_robot needs hetopt.kinds.human_robot.fjsp.fjsp_to_instance, "
                f"which is not available ({exc})",
            )
        inst = convert(data)
    instance_from_dict(inst, source=str(file))  # the converted instance must be valid
    text = json.dumps(inst, indent=1)
    if output is None:
        click.echo(text)
    else:
        output.write_text(text + "\n")
        n_ops = data.num_operations
        click.echo(
            f"wrote {output} ({len(data.jobs)} jobs, {n_ops} operations, "
            f"{data.num_machines} machines)",
            err=True,
        )
