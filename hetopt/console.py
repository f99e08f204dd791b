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
130 interrupted (Ctrl-C); ``solve`` still reports what HiGHS had found
==  =====================================================================
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from .errors import HetoptError, InstanceError, OptionsError, UsageError
from .kinds._shared.arguments import MAX_GENERATED  # (also hetopt.console.MAX_GENERATED)
from .status import Status

if TYPE_CHECKING:
    from .instance import InstanceBase

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_INVALID = 3
EXIT_INFEASIBLE = 4
EXIT_NO_SOLUTION = 5
EXIT_INTERRUPTED = 130
"""Ctrl-C (128 + SIGINT), as shells report it."""

EXIT_CODES_HELP = (
    "Exit codes: 0 optimal or feasible; 1 internal error; 2 usage error; "
    "3 invalid instance; 4 infeasible or unbounded; 5 no solution within the limits; "
    "130 interrupted (Ctrl-C)."
)

STATUS_EXIT = {
    Status.OPTIMAL: EXIT_OK,
    Status.FEASIBLE: EXIT_OK,
    Status.INFEASIBLE: EXIT_INFEASIBLE,
    Status.UNBOUNDED: EXIT_INFEASIBLE,
    Status.NO_SOLUTION: EXIT_NO_SOLUTION,
    Status.ERROR: EXIT_INTERNAL,
}


def one_line(message: str) -> str:
    """``message`` on one line (newlines and carriage returns escaped)."""
    return message.replace("\r", "\\r").replace("\n", "\\n")


def die(code: int, message: str) -> NoReturn:
    """Print ``hetopt: error: <message>`` (one line) on stderr and exit with ``code``."""
    click.echo(f"hetopt: error: {one_line(message)}", err=True)
    sys.exit(code)


def warn(message: str) -> None:
    """Print ``hetopt: warning: <message>`` (one line) on stderr."""
    click.echo(f"hetopt: warning: {one_line(message)}", err=True)


def quiet_broken_pipe() -> None:
    """The reader of stdout went away (``hetopt ... | head -1``): send what is left of
    stdout to /dev/null so that Python's exit flush does not complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # pragma: no cover - stdout without a descriptor
        pass


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
        except BrokenPipeError:  # the reader of stdout has gone: a quiet exit
            quiet_broken_pipe()
            sys.exit(EXIT_OK)
        except OSError as exc:  # a file the user named cannot be read or written
            name = exc.filename if exc.filename is not None else ""
            die(EXIT_USAGE, f"cannot use file {name}: {exc.strerror or exc}")
        except KeyboardInterrupt:
            die(EXIT_INTERRUPTED, "interrupted")
        except (click.exceptions.Exit, click.ClickException, SystemExit):
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
        write_output(output, text + "\n", "--output")
        click.echo(f"wrote {output} ({summary})", err=True)


def check_output(path: Path | None, option: str, inputs: tuple[Path, ...] = ()) -> None:
    """Fail (exit 2) before any work when ``path`` cannot be written or is an input.

    Raises
    ------
    UsageError
        The directory does not exist or is not writable, ``path`` is a directory, or it
        is one of ``inputs`` (writing there would destroy the input).
    """
    if path is None:
        return
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{option} {path}: directory {parent} does not exist")
    if path.is_dir():
        raise UsageError(f"{option} {path}: is a directory")
    if path.exists():
        if not os.access(path, os.W_OK):
            raise UsageError(f"{option} {path}: not writable")
    elif not os.access(parent, os.W_OK):
        raise UsageError(f"{option} {path}: directory {parent} is not writable")
    for src in inputs:
        try:
            same = path.exists() and src.exists() and os.path.samefile(path, src)
        except OSError:
            same = False
        if same:
            raise UsageError(f"{option} {path} is the input file: refusing to overwrite it")


def write_output(path: Path, text: str, option: str = "--output") -> None:
    """Write ``text`` to ``path`` whole or not at all.

    A regular file is written to a temporary file beside it and renamed over it, so a
    crash or a concurrent run never leaves half a file; a device or pipe
    (``/dev/stdout``) is written directly. Errors name the option and the file.
    """
    try:
        if path.exists() and not path.is_file():
            with open(path, "w") as fh:
                fh.write(text)
            return
        parent = path.parent if str(path.parent) else Path(".")
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            if path.exists():
                os.chmod(tmp, path.stat().st_mode & 0o7777)
            else:
                umask = os.umask(0)
                os.umask(umask)
                os.chmod(tmp, 0o666 & ~umask)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise UsageError(f"cannot write {option} {path}: {exc.strerror or exc}") from None


def count_type(min: int = 1) -> click.IntRange:
    """A ``hetopt generate`` size option's type: a whole number from ``min`` to
    :data:`MAX_GENERATED` (click's own message names the option and the range)."""
    return click.IntRange(min=min, max=MAX_GENERATED)


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
