"""``hetopt generate llm-serving`` and ``hetopt convert azure-llm``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ...console import count_type, emit_instance, handle_errors, output_option, seed_option
from ...errors import UsageError

OBJECTIVES = ["min_cost", "min_max_load", "pd_split"]


@click.command("llm-serving")
@click.option(
    "--buckets",
    "num_buckets",
    type=count_type(),
    required=True,
    help="Number of request-size buckets.",
)
@click.option(
    "--types",
    "num_types",
    type=click.IntRange(1, 8),
    default=3,
    show_default=True,
    help="Number of GPU types (the first of the built-in catalogue).",
)
@click.option(
    "--slice-factor",
    type=click.IntRange(1, 4096),
    default=4,
    show_default=True,
    help="Slices per bucket (min_cost).",
)
@click.option(
    "--rate",
    "rate_rps",
    type=click.FloatRange(min=0, min_open=True),
    default=50.0,
    show_default=True,
    help="Total request rate (req/s).",
)
@click.option(
    "--stock",
    type=click.IntRange(min=0),
    default=None,
    help="Instances available per type (default: no limit).",
)
@seed_option()
@click.option("--objective", type=click.Choice(OBJECTIVES), default="min_cost", show_default=True)
@output_option()
@handle_errors
def generate_cmd(
    num_buckets: int,
    num_types: int,
    slice_factor: int,
    rate_rps: float,
    stock: int | None,
    seed: int,
    objective: str,
    output: Path | None,
) -> None:
    """Sample an llm_serving instance: log-uniform request sizes, Dirichlet rates, token-model
    throughputs on a catalogue of GPU types (see the docs)."""
    from .generate import generate

    inst = generate(num_buckets, num_types, seed, slice_factor, rate_rps, stock, objective)
    emit_instance(inst, output, f"{num_buckets} buckets on {num_types} GPU types")


@click.command("azure-llm")
@click.argument("trace", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--gpus",
    "catalogue",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help='GPU catalogue JSON ({"gpus": [...]}, with prefill/decode tokens/s): the output is '
    "then a solvable instance; without it, only the workload (buckets and rates).",
)
@click.option(
    "--buckets",
    "bucket_spec",
    default=None,
    metavar="PROMPT_EDGES/OUTPUT_EDGES",
    help="Inner token edges of the buckets, e.g. 512,2048/128,512 makes 3 x 3 ranges "
    "[0,512),[512,2048),[2048,inf) x [0,128),[128,512),[512,inf). "
    "Default: 256,512,1024,2048,4096/32,64,128,256,512.",
)
@click.option("--slice-factor", type=click.IntRange(1, 4096), default=1, show_default=True)
@click.option("--objective", type=click.Choice(OBJECTIVES), default=None)
@output_option()
@handle_errors
def convert_azure_cmd(
    trace: Path,
    catalogue: Path | None,
    bucket_spec: str | None,
    slice_factor: int,
    objective: str | None,
    output: Path | None,
) -> None:
    """Convert an Azure LLM inference trace (TIMESTAMP,ContextTokens,GeneratedTokens) into
    request buckets with rate_rps = requests in the bucket / trace duration."""
    from ...kinds import instance_from_dict
    from .azure import DEFAULT_BUCKETS, azure_to_instance, load_catalogue, parse_buckets

    spec = bucket_spec or DEFAULT_BUCKETS
    try:
        parse_buckets(spec)
    except ValueError as exc:
        raise UsageError(f"--buckets: {exc}") from None
    if output is not None and not (output.parent if str(output.parent) else Path(".")).is_dir():
        raise UsageError(f"--output {output}: directory {output.parent} does not exist")
    cat = load_catalogue(catalogue) if catalogue is not None else None
    data = azure_to_instance(trace, cat, spec, slice_factor, objective)
    n = len(data["buckets"])
    if cat is not None:
        instance_from_dict(data, source=str(trace))  # what we write must be a valid instance
        summary = f"{n} buckets, {len(cat.gpus)} GPU types, {data['trace']['requests']} requests"
    else:
        summary = f"{n} buckets, {data['trace']['requests']} requests (workload only: add gpus)"
    emit_instance(json.dumps(data, indent=1), output, summary)
