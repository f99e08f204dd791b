"""What every command of the ``hetopt`` command line shares: exit codes, one-line
errors, writing instances, common options.

A plain module of the library (no command is defined here), so that the kinds'
``generate``/``convert`` commands and the roof (:mod:`hetopt.cli`) use the same pieces
without the library importing the CLI.

Exit codes (a fixed contract; other tools rely on them):

==  =====================================================================
0   optimal or feasible solution (``validate``: the instance is valid)
1   internal error (solver crash, bug)
2   usage error (bad flag, unknown objective or kind, bad option file)
3   invalid instance (the message names the file, the field and what was expected)
4   infeasible or unbounded
5   no solution within the limits (time limit reached before any solution)
==  =====================================================================
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from .errors import HetoptError, InstanceError, OptionsError, UsageError
from .status import Status

if TYPE_CHECKING:
    from .instance import InstanceBase

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_INVALID = 3
EXIT_INFEASIBLE = 4
EXIT_NO_SOLUTION = 5

EXIT_CODES_HELP = (
    "Exit codes: 0 optimal or feasible; 1 internal error; 2 usage error; "
    "3 invalid instance; 4 infeasible or unbounded; 5 no solution within the limits."
)

STATUS_EXIT = {
    Status.OPTIMAL: EXIT_OK,
    Status.FEASIBLE: EXIT_OK,
    Status.INFEASIBLE: EXIT_INFEASIBLE,
    Status.UNBOUNDED: EXIT_INFEASIBLE,
    Status.NO_SOLUTION: EXIT_NO_SOLUTION,
    Status.ERROR: EXIT_INTERNAL,
}


def die(code: int, message: str) -> NoReturn:
    """Print ``hetopt: error: <message>`` on stderr and exit with ``code``."""
    click.echo(f"hetopt: error: {message}", err=True)
    sys.exit(code)


def handle_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    """Turn exceptions into one clear line on stderr and a documented exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except InstanceError as exc:
            die(EXIT_INVALID, str(exc))
        except (UsageError, OptionsError) as exc:
            die(EXIT_USAGE, str(exc))
        except HetoptError as exc:
            die(EXIT_INTERNAL, str(exc))
        except OSError as exc:  # a file the user named cannot be read or written
            name = exc.filename if exc.filename is not None else ""
            die(EXIT_USAGE, f"cannot use file {name}: {exc.strerror or exc}")
        except (click.exceptions.Exit, click.ClickException, SystemExit, KeyboardInterrupt):
            raise
        except Exception as exc:  # never a traceback for users
            if os.environ.get("HETOPT_DEBUG"):
                raise
            die(
                EXIT_INTERNAL,
                f"internal error: {type(exc).__name__}: {exc} (set HETOPT_DEBUG=1 for a traceback)",
            )

    return wrapper


def emit_instance(instance: str | InstanceBase, output: Path | None, summary: str) -> None:
    """Write a generated or converted instance: its JSON to ``output`` (then ``wrote
    <output> (<summary>)`` on stderr) or, without ``output``, to stdout.

    Parameters
    ----------
    instance
        The instance, or its JSON text.
    output
        The file to write, or ``None`` for stdout.
    summary
        What was written, e.g. ``"20 tasks on 4 cores"``.
    """
    text = instance if isinstance(instance, str) else instance.to_json()
    if output is None:
        click.echo(text)
    else:
        output.write_text(text + "\n")
        click.echo(f"wrote {output} ({summary})", err=True)


def output_option() -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``-o/--output FILE`` (default: stdout); pair with :func:`emit_instance`."""
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
