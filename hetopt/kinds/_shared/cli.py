"""Click options shared by the kinds' ``hetopt generate`` commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click


def output_option() -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``-o/--output FILE`` (default: stdout); pair with :func:`hetopt.cli.emit_instance`."""
    return click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Output file (default: stdout).",
    )


def seed_option(
    help_text: str = "Random seed.",
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--seed N`` (a whole number >= 0, default 0) of a generator."""
    return click.option(
        "--seed", type=click.IntRange(min=0), default=0, show_default=True, help=help_text
    )
