"""The ``hetopt`` command line: the roof over the library (nothing imports it).

The kinds contribute their ``generate``/``convert``/top-level commands through the
registry (:mod:`hetopt.kinds`); the pieces every command shares are in
:mod:`hetopt.console`.

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

import ast
import importlib
import importlib.machinery
import importlib.util
import json
import logging
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

import click

from ..console import (
    EXIT_CODES_HELP,
    EXIT_INFEASIBLE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_NO_SOLUTION,
    EXIT_OK,
    EXIT_USAGE,
    STATUS_EXIT,
    check_output,
    die,
    emit_instance,
    handle_errors,
    quiet_broken_pipe,
    warn,
    write_output,
)
from ..errors import InstanceError, Interrupted, UsageError
from ..kinds import cli_entries

__all__ = [
    "EXIT_CODES_HELP",
    "EXIT_INFEASIBLE",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_NO_SOLUTION",
    "EXIT_OK",
    "EXIT_USAGE",
    "STATUS_EXIT",
    "emit_instance",
    "handle_errors",
    "main",
]

# roof-level commands: name -> "module:attribute"; the kinds add theirs in the registry
_COMMANDS: dict[str, str] = {"plot": "hetopt.cli.plot:plot_cmd"}
_CONVERTERS: dict[str, str] = {"fjsp": "hetopt.cli.fjsp:convert_fjsp_cmd"}

COMMANDS = {**_COMMANDS, **cli_entries("commands")}
GENERATORS = cli_entries("generate")
CONVERTERS = {**_CONVERTERS, **cli_entries("convert")}

_die = die  # the name earlier releases used


class LazyGroup(click.Group):
    """A click group whose sub-commands are imported on first use."""

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.lazy = lazy if lazy is not None else {}

    _listing = False  # True while ``--help`` lists the commands (see format_commands)

    def _present(self) -> dict[str, str]:
        return {n: t for n, t in self.lazy.items() if _find_spec(t.partition(":")[0])}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self._present()))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # the listing of ``--help`` describes a command not imported yet from its source,
        # so that ``hetopt --help`` does not import the kinds (and Pyomo, pandas, ...)
        self._listing = True
        try:
            super().format_commands(ctx, formatter)
        finally:
            self._listing = False

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        present = self._present()
        if name in present and self._listing:
            module, _, attr = present[name].partition(":")
            if module not in sys.modules:
                listed = _listed_command(name, module, attr)
                if listed is not None:
                    return listed
        if name in present:
            module, _, attr = present[name].partition(":")
            try:
                cmd = getattr(importlib.import_module(module), attr)
                assert isinstance(cmd, click.Command)
                return cmd
            except ImportError as exc:  # an optional extra that is not installed
                reason = str(exc)

                @click.command(name=name, help=f"(unavailable: {reason})")
                def unavailable() -> None:
                    die(EXIT_USAGE, f"'{name}' needs a package that is not installed: {reason}")

                return unavailable
        return super().get_command(ctx, name)


class ProgressLine:
    """The progress of a solve as one line on stderr, rewritten in place.

    MIP progress (incumbent, bound, gap) shows once a solve has run for
    :attr:`MIP_DELAY_S` seconds; the steps of multi-solve methods (Pareto points,
    decomposition iterations, LP rounding, ...) after :attr:`STEP_DELAY_S`.
    """

    MIP_DELAY_S = 2.0
    STEP_DELAY_S = 0.5
    EVERY_S = 0.1

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._shown = False
        self._last = 0.0

    def __call__(self, event: Any) -> None:
        delay = self.MIP_DELAY_S if event.event == "mip" else self.STEP_DELAY_S
        if event.elapsed_s < delay:
            return
        if event.event == "solved" and event.stage == "main" and event.total is None:
            return  # one model: its result follows
        now = time.monotonic()
        with self._lock:
            if event.event == "mip" and now - self._last < self.EVERY_S:
                return
            self._last = now
            width = max(20, shutil.get_terminal_size((100, 20)).columns - 1)
            text = f"hetopt: {event}"[:width]
            sys.stderr.write("\r\x1b[K" + text)
            sys.stderr.flush()
            self._shown = True

    def clear(self) -> None:
        """Remove the line (before anything else is written to stderr)."""
        with self._lock:
            if self._shown:
                sys.stderr.write("\r\x1b[K")
                sys.stderr.flush()
                self._shown = False


_LINE: ProgressLine | None = None
"""The progress line being shown (log lines clear it first)."""


class _Stderr(logging.Handler):
    """Writes to the ``sys.stderr`` of the moment (click's test runner swaps it)."""

    def emit(self, record: logging.LogRecord) -> None:
        if _LINE is not None:
            _LINE.clear()
        try:
            msg = record.getMessage()
            if record.levelno >= logging.WARNING:
                msg = f"hetopt: warning: {msg}".replace("\r", "\\r").replace("\n", "\\n")
            sys.stderr.write(msg + "\n")
            sys.stderr.flush()
        except Exception:  # pragma: no cover - a closed stderr
            self.handleError(record)


def _setup_logging(verbose: int, quiet: bool = False) -> None:
    """Warnings (an automatic choice falling back, ...) on stderr as ``hetopt: warning:``
    lines unless ``quiet``; -v: the HiGHS log on stderr too; -vv: hetopt's debug messages."""
    top = logging.getLogger("hetopt")
    solver = logging.getLogger("hetopt.solver")
    for lg in (top, solver):  # the CLI may run several times in one process (tests)
        for h in [h for h in lg.handlers if isinstance(h, _Stderr)]:
            lg.removeHandler(h)
    level = logging.DEBUG if verbose >= 2 else logging.ERROR if quiet else logging.WARNING
    handler = _Stderr(level)
    top.addHandler(handler)
    top.setLevel(level)
    solver.setLevel(logging.NOTSET)
    solver.propagate = True
    if verbose == 1:
        solver.addHandler(_Stderr(logging.INFO))
        solver.setLevel(logging.INFO)
        solver.propagate = False


def _find_spec(module: str) -> importlib.machinery.ModuleSpec | None:
    """The spec of ``module`` without importing its parent packages (``find_spec`` of
    ``hetopt.kinds.gpu_cluster.cli`` would run the kind's ``__init__``)."""
    parent = module.rpartition(".")[0]
    try:
        if not parent or parent in sys.modules:
            return importlib.util.find_spec(module)
        outer = _find_spec(parent)
        if outer is None or outer.submodule_search_locations is None:
            return None
        return importlib.machinery.PathFinder.find_spec(
            module, list(outer.submodule_search_locations)
        )
    except (ModuleNotFoundError, ValueError):
        return None


_HELP_KEYS = ("help", "short_help", "hidden", "deprecated")
_UNLISTED_KEYS = ("epilog", "context_settings", "options_metavar", "add_help_option")


def _listed_command(name: str, module: str, attr: str) -> click.Command | None:
    """A stand-in for the listing of ``--help``: the command's help as its source
    declares it (the ``@click.command(...)`` keywords, else the docstring), read
    without importing; None when the source does not say it plainly (then the command
    is imported)."""
    spec = _find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    try:
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == attr:
            calls = [
                d
                for d in node.decorator_list
                if isinstance(d, ast.Call)
                and isinstance(d.func, ast.Attribute | ast.Name)
                and (d.func.attr if isinstance(d.func, ast.Attribute) else d.func.id) == "command"
            ]
            if len(calls) != 1:
                return None
            attrs: dict[str, Any] = {}
            for kw in calls[0].keywords:
                if kw.arg in _UNLISTED_KEYS:
                    continue
                if kw.arg not in _HELP_KEYS or not isinstance(kw.value, ast.Constant):
                    return None  # cls=..., a computed help text, **kwargs: import it
                attrs[kw.arg] = kw.value.value
            if attrs.get("help") is None:
                attrs["help"] = ast.get_docstring(node, clean=False)
            return click.Command(name, **attrs)
    return None


@click.group(
    cls=LazyGroup,
    lazy=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=EXIT_CODES_HELP,
)
@click.version_option(package_name="hetopt")
def main() -> None:
    """hetopt: exact optimisation (Pyomo + HiGHS) for work on heterogeneous resources."""
    import warnings

    # numpy's floating-point RuntimeWarnings (a 0/0 in a table column) are not messages
    # for a user of the command line; errors are one line each, warnings say "warning"
    warnings.simplefilter("ignore", RuntimeWarning)


def _parse_param(values: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint="--param")
        try:
            out[key.replace("-", "_")] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.replace("-", "_")] = raw
    return out


def _check_table_names(file: Path, names: tuple[str, ...]) -> None:
    """``--table`` names a table the kind of ``file`` declares: else a usage error
    (exit 2) before solving. The file is only parsed here; a file that cannot be read
    or names no known kind is left to the solve, which reports it as always."""
    from ..instance import load_data
    from ..kinds import get_kind, kind_names

    try:
        kind = load_data(file).get("kind")
    except InstanceError:
        return
    if not isinstance(kind, str) or kind not in kind_names():
        return
    declared = [t.name for t in get_kind(kind).tables]
    for name in names:
        if name not in declared:
            raise click.UsageError(
                f"--table {name!r}: a {kind} result has the tables {', '.join(declared)}"
            )


@main.command(epilog=EXIT_CODES_HELP)
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--objective", "-O", help="Objective name (overrides the instance's; see 'hetopt kinds')."
)
@click.option(
    "--agnostic",
    is_flag=True,
    default=None,
    help="Heterogeneity-agnostic baseline: allocate as if every resource type were equal.",
)
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0, min_open=True),
    help="Solver time limit in seconds.",
)
@click.option(
    "--gap", type=click.FloatRange(0, 1, max_open=True), help="Relative MIP gap to stop at."
)
@click.option("--threads", type=click.IntRange(min=1), help="Solver threads.")
@click.option("--seed", type=click.IntRange(min=0), help="Solver random seed.")
@click.option(
    "--options",
    "options_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="TOML file of solve options (time_limit_s, mip_rel_gap, threads, seed, [highs_options]).",
)
@click.option(
    "--param",
    "-p",
    "params",
    multiple=True,
    metavar="KEY=VALUE",
    help="Kind-specific parameter (value parsed as JSON when possible); repeatable.",
)
@click.option(
    "--partitions",
    type=click.IntRange(min=1),
    default=None,
    help="Solve by decomposition into K parts (exact when the instance splits into independent "
    "components; otherwise stratified partitioning with a repair step).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="With --partitions: solve the parts on a local process pool of W processes.",
)
@click.option(
    "--scheduler-address",
    default=None,
    metavar="ADDR",
    help="With --partitions: solve the parts on this Dask scheduler (pip install 'hetopt[dask]').",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the result JSON here.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the result JSON on stdout instead of the summary.",
)
@click.option(
    "--table",
    "show_tables",
    multiple=True,
    metavar="NAME",
    help="Also print this result table (repeatable).",
)
@click.option("-v", "--verbose", count=True, help="Show the HiGHS log on stderr (-vv: debug).")
@click.option(
    "--quiet",
    "-q",
    is_flag=True,
    help="No progress line and no warnings on stderr (errors only).",
)
@click.option(
    "--progress/--no-progress",
    "show_progress",
    default=None,
    help="Show the progress line on stderr (default: when stderr is a terminal and "
    "without -v): MIP incumbent, bound and gap past a few seconds; Pareto points, "
    "decomposition iterations and other multi-solve steps.",
)
@handle_errors
def solve(
    file: Path,
    objective: str | None,
    agnostic: bool | None,
    time_limit: float | None,
    gap: float | None,
    threads: int | None,
    seed: int | None,
    options_file: Path | None,
    params: tuple[str, ...],
    partitions: int | None,
    workers: int | None,
    scheduler_address: str | None,
    output: Path | None,
    as_json: bool,
    show_tables: tuple[str, ...],
    verbose: int,
    quiet: bool,
    show_progress: bool | None,
) -> None:
    """Solve an instance FILE (JSON or YAML) and print a summary."""
    global _LINE
    from ..api import solve as api_solve
    from ..options import SolveOptions

    _setup_logging(verbose, quiet)
    if show_progress is None:
        show_progress = not quiet and not verbose and _is_terminal(sys.stderr)
    line = ProgressLine() if show_progress and not quiet else None
    check_output(output, "--output", tuple(p for p in (file, options_file) if p is not None))
    opts = SolveOptions.from_file(options_file) if options_file else SolveOptions()
    changes = {
        k: v
        for k, v in {
            "time_limit_s": time_limit,
            "mip_rel_gap": gap,
            "threads": threads,
            "seed": seed,
        }.items()
        if v is not None
    }
    opts = opts.replace(**changes) if changes else opts
    opts = _warn_threads(opts)
    kw = _parse_param(params)
    if agnostic:
        kw["agnostic"] = True
    if partitions is None and (workers is not None or scheduler_address is not None):
        raise click.UsageError("--workers and --scheduler-address go with --partitions")
    if show_tables:
        _check_table_names(file, show_tables)
    code: int | None = None
    try:
        if partitions is not None:
            from ..decompose import solve_decomposed

            result = solve_decomposed(
                file,
                objective,
                opts,
                partitions=partitions,
                workers=workers,
                scheduler_address=scheduler_address,
                **kw,
            )
        else:
            _LINE = line
            result = api_solve(file, objective, opts, progress=line, **kw)
    except Interrupted as stop:  # Ctrl-C: HiGHS has stopped; report what it had
        result, code = stop.result, EXIT_INTERRUPTED
    finally:
        if line is not None:
            line.clear()
        _LINE = None
    if output is not None:
        write_output(output, result.to_json() + "\n", "--output")
    try:
        if as_json:
            click.echo(result.to_json())
        else:
            click.echo(str(result))
            for name in show_tables:
                if name not in result.tables:
                    click.echo(f"(no table {name!r}; tables: {', '.join(result.tables)})", err=True)
                    continue
                click.echo(f"\n{name}:\n{result.tables[name].to_string(index=False)}")
    except BrokenPipeError:  # ``| head``: the reader has what it wanted
        quiet_broken_pipe()
    if code is not None:
        click.echo("hetopt: interrupted", err=True)
        sys.exit(code)
    sys.exit(STATUS_EXIT[result.status])


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _warn_threads(opts: Any) -> Any:
    """``opts`` with more threads than cores capped, saying so once."""
    from ..highs import available_cores

    cores = available_cores()
    threads = opts.threads
    if threads is not None and threads > cores:
        warn(f"--threads {threads} is more than the {cores} cores available: using {cores}")
        return opts.replace(threads=cores)
    return opts


@main.command(epilog=EXIT_CODES_HELP)
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--objective",
    "-O",
    help="Check what this objective needs (default: the instance's, else the kind's first).",
)
@click.option(
    "--param",
    "-p",
    "params",
    multiple=True,
    metavar="KEY=VALUE",
    help="Kind-specific parameter, checked as 'solve' would (repeatable).",
)
@handle_errors
def validate(file: Path, objective: str | None, params: tuple[str, ...]) -> None:
    """Check an instance FILE without solving it: the file, and everything the chosen
    objective needs (what 'solve' would reject, 'validate' rejects)."""
    from ..kinds import get_kind, read_instance

    inst = read_instance(file)
    kind = get_kind(inst.kind)
    try:
        name = kind.resolve_objective(inst, objective)
        parsed = kind.parse_params(_parse_param(params))
        effective = kind.instance_for(inst, parsed)
        kind.check(effective, name, parsed)
        kind.choose_method(name, effective, parsed)  # a refused combination fails here too
    except InstanceError as exc:
        raise exc.with_source(str(file)) if not exc.source else exc from None
    click.echo(f"{file}: valid {inst.kind} instance ({name})")


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@handle_errors
def kinds(as_json: bool) -> None:
    """List the problem kinds and their objectives."""
    from ..kinds import get_kind, kind_names

    data: dict[str, dict[str, Any]] = {}
    for name in kind_names():
        k = get_kind(name)
        data[name] = {
            "description": k.description,
            "objectives": {o.name: o.description for o in k.objectives},
            "params": dict(k.params),
            "parameters": k.param_specs(),
        }
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    for name, d in data.items():
        click.echo(f"{name}: {d['description']}")
        for o, desc in d["objectives"].items():
            click.echo(f"  {o:<32} {desc}")
        for p, desc in d["params"].items():
            spec = d["parameters"].get(p)
            typed = f" ({spec['type']}, default {spec['default']!r})" if spec else ""
            click.echo(f"  param {p:<26} {desc}{typed}")


@main.command()
@click.argument("kind")
@click.option(
    "--result",
    "of_result",
    is_flag=True,
    help="The JSON Schema of KIND's results ('solve --json' output) instead, from the "
    "kind's declared tables and details.",
)
@handle_errors
def schema(kind: str, of_result: bool) -> None:
    """Print the JSON Schema of instance files of KIND (--result: of its results)."""
    from ..kinds import get_kind, kind_names

    if kind not in kind_names():
        raise UsageError(f"unknown kind {kind!r}; expected one of: {', '.join(kind_names())}")
    k = get_kind(kind)
    if of_result:
        from ..schema import result_schema

        click.echo(json.dumps(result_schema(k), indent=2))
        return
    click.echo(json.dumps(k.instance_model.model_json_schema(), indent=2))


@main.command(epilog=EXIT_CODES_HELP)
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--format", "fmt", type=click.Choice(["lp", "mps"]), required=True, help="Output format."
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Output file.",
)
@click.option("--objective", "-O", help="Objective name.")
@click.option(
    "--agnostic", is_flag=True, default=None, help="Export the heterogeneity-agnostic model."
)
@click.option(
    "--param", "-p", "params", multiple=True, metavar="KEY=VALUE", help="Kind-specific parameter."
)
@handle_errors
def export(
    file: Path,
    fmt: str,
    output: Path,
    objective: str | None,
    agnostic: bool | None,
    params: tuple[str, ...],
) -> None:
    """Write the model of FILE as LP or MPS, for another solver."""
    from ..api import export_model

    _setup_logging(0)  # (what the file's optimum is, where it is not objective_value)
    check_output(output, "--output", (file,))
    kw = _parse_param(params)
    if agnostic:
        kw["agnostic"] = True
    export_model(file, output, fmt, objective, **kw)
    click.echo(f"wrote {output}")


@main.group(cls=LazyGroup, lazy=GENERATORS)
def generate() -> None:
    """Generate random instances from published distributions and real data."""


@main.group(cls=LazyGroup, lazy=CONVERTERS)
def convert() -> None:
    """Convert standard benchmark formats to hetopt instances."""


if __name__ == "__main__":  # pragma: no cover
    main()
