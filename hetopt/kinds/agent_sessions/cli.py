"""``hetopt generate agent-sessions``."""

from __future__ import annotations

from pathlib import Path

import click

from ...console import count_type, emit_instance, handle_errors, output_option, seed_option


@click.command("agent-sessions")
@click.option(
    "--agents",
    "num_sessions",
    type=count_type(),
    required=True,
    help="Number of agent sessions (one agent each).",
)
@click.option("--gpus", "num_gpus", type=click.IntRange(min=1), default=1, show_default=True)
@click.option(
    "--pauses",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="Tool pauses per session.",
)
@seed_option()
@click.option(
    "--kv-capacity",
    "kv_capacity_tokens",
    type=click.IntRange(min=1),
    default=None,
    help="KV tokens per GPU (default: from --memory-pressure).",
)
@click.option(
    "--memory-pressure",
    type=click.FloatRange(min=0, min_open=True),
    default=2.0,
    show_default=True,
    help="Time-average KV demand of the paused contexts over the capacity.",
)
@click.option(
    "--prefill",
    "prefill_tokens_s",
    type=click.FloatRange(min=0, min_open=True),
    default=8000.0,
    show_default=True,
    help="Re-prefill speed of a GPU (tokens/s).",
)
@click.option(
    "--heterogeneous", is_flag=True, help="Every other GPU: 2x capacity, 1.5x prefill speed."
)
@click.option(
    "--equal-context",
    type=click.IntRange(min=1),
    default=None,
    help="Give every pause this context size (tokens).",
)
@click.option(
    "--arrival-window",
    "arrival_window_s",
    type=click.FloatRange(min=0),
    default=None,
    help="Sessions arrive within [0, this) seconds (default: 4 s per pause).",
)
@click.option(
    "--objective",
    type=click.Choice(["min_recompute_s", "min_max_load", "agent_fair_share"]),
    default="min_recompute_s",
    show_default=True,
)
@output_option()
@handle_errors
def generate_cmd(
    num_sessions: int,
    num_gpus: int,
    pauses: int,
    seed: int,
    kv_capacity_tokens: int | None,
    memory_pressure: float,
    prefill_tokens_s: float,
    heterogeneous: bool,
    equal_context: int | None,
    arrival_window_s: float | None,
    objective: str,
    output: Path | None,
) -> None:
    """Sample agent sessions: Azure-trace token sizes, synthetic pause lengths (see the docs)."""
    from .generate import generate

    inst = generate(
        num_sessions,
        num_gpus,
        pauses,
        seed,
        kv_capacity_tokens=kv_capacity_tokens,
        memory_pressure=memory_pressure,
        prefill_tokens_s=prefill_tokens_s,
        heterogeneous=heterogeneous,
        equal_context=equal_context,
        arrival_window_s=arrival_window_s,
        objective=objective,
    )
    emit_instance(inst, output, f"{num_sessions} sessions x {pauses} pauses on {num_gpus} GPUs")
