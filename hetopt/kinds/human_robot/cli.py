"""``hetopt generate human-robot``."""

from __future__ import annotations

from pathlib import Path

import click

from ...console import count_type, emit_instance, handle_errors, output_option, seed_option


@click.command("human-robot")
@click.option("--tasks", "num_tasks", type=count_type(), required=True, help="Tasks.")
@click.option("--agents", "num_agents", type=count_type(), required=True, help="Agents.")
@seed_option("Seed.")
@click.option(
    "--humans",
    "human_fraction",
    type=click.FloatRange(0, 1),
    default=0.4,
    show_default=True,
    help="Fraction of agents that are humans (at least one).",
)
@click.option(
    "--locations",
    type=count_type(),
    help="Number of workspaces (default: one per three tasks).",
)
@click.option(
    "--precedence",
    "precedence_prob",
    type=click.FloatRange(0, 1),
    default=0.3,
    show_default=True,
    help="Probability that a task gets a predecessor.",
)
@click.option(
    "--deadlines",
    "deadline_fraction",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="Fraction of tasks with a deadline.",
)
@click.option(
    "--objective",
    type=click.Choice(["makespan", "weighted_completion", "max_human_workload"]),
    help="Objective to record in the instance.",
)
@output_option()
@handle_errors
def generate_cmd(
    num_tasks: int,
    num_agents: int,
    seed: int,
    human_fraction: float,
    locations: int | None,
    precedence_prob: float,
    deadline_fraction: float,
    objective: str | None,
    output: Path | None,
) -> None:
    """Sample a seeded human_robot instance (distribution: hetopt.kinds.human_robot.generate)."""
    from .generate import generate

    inst = generate(
        num_tasks,
        num_agents,
        seed,
        human_fraction,
        locations,
        precedence_prob,
        deadline_fraction,
        objective,
    )
    emit_instance(inst, output, f"{num_tasks} tasks, {num_agents} agents")
