"""``hetopt generate pipeline-partition`` and ``hetopt convert helix``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ...console import count_type, emit_instance, handle_errors, output_option, seed_option


@click.command("pipeline-partition")
@click.option(
    "--mode",
    type=click.Choice(["serving", "training"]),
    default="serving",
    show_default=True,
    help="Serving placement (Helix) or training pipeline stages.",
)
@click.option(
    "--nodes",
    type=count_type(),
    default=4,
    show_default=True,
    help="Serving: compute nodes. Training: devices in total.",
)
@click.option("--layers", type=count_type(), default=12, show_default=True)
@click.option(
    "--types",
    type=click.IntRange(min=1, max=8),
    default=2,
    show_default=True,
    help="Node / device types.",
)
@click.option(
    "--micro-batches",
    type=count_type(),
    default=8,
    show_default=True,
    help="Training only.",
)
@click.option(
    "--slow-links",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="Serving: probability that a node-to-node link can limit the flow.",
)
@seed_option()
@click.option(
    "--objective",
    type=click.Choice(["max_throughput", "min_stage_time", "min_iteration_time"]),
    default=None,
    help="Objective written into the instance (must belong to the mode).",
)
@output_option()
@handle_errors
def generate_cmd(
    mode: str,
    nodes: int,
    layers: int,
    types: int,
    micro_batches: int,
    slow_links: float,
    seed: int,
    objective: str | None,
    output: Path | None,
) -> None:
    """Sample a pipeline_partition instance (distributions in the docs)."""
    from ...errors import InstanceError, UsageError
    from .generate import generate

    try:
        inst = generate(mode, nodes, layers, types, seed, micro_batches, slow_links, objective)
    except InstanceError as exc:
        raise UsageError(f"--{(exc.field or 'option').replace('_', '-')}: {exc.message}") from None
    what = "nodes" if mode == "serving" else "devices"
    emit_instance(inst, output, f"{mode}: {layers} layers, {nodes} {what}")


@click.command("helix")
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("ilp", type=click.Path(dir_okay=False, path_type=Path))
@output_option()
@handle_errors
def convert_helix_cmd(config: Path, ilp: Path, output: Path | None) -> None:
    """Import Helix's cluster CONFIG.ini and the ILP.lp it wrote as a serving instance.

    The profiled throughput table of every node and the link capacities are read from
    the ILP's rows; node types and connections from the config.
    """
    from .data import PipelinePartitionInstance
    from .helix import helix_to_instance

    data = helix_to_instance(config, ilp)
    inst = PipelinePartitionInstance.from_dict(data, source=str(ilp))
    emit_instance(
        json.dumps(inst.to_dict(), indent=1),
        output,
        f"{len(data['nodes'])} nodes, {data['layers']} layers, {len(data['links'])} links",
    )
