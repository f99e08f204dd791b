"""Sphinx extension for the hetopt docs.

* :func:`generate_all` (called from ``conf.py`` before Sphinx reads any page) writes
  ``docs/generated/``: the model cards copied from ``models/``, one page per kind with
  its JSON Schema, the CLI reference captured from the click app, and the benchmark
  report. Nothing there is typed in by hand, and a kind that is not installed simply has
  no page.
* The ``hetopt-run`` directive (``hetopt_run.py``) executes a Python snippet from the repository root at
  build time and shows the code, what it printed, the value of its last expression (a
  DataFrame becomes a table) and any matplotlib figure it drew. A snippet that raises
  fails the build, so tutorials cannot go stale.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sphinx.application import Sphinx


DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
GENERATED = DOCS / "generated"
FIGURES = GENERATED / "figures"


# -- generated pages -----------------------------------------------------------------------


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:  # keep mtimes: incremental builds
        path.write_text(text)


def _toctree(entries: list[str], maxdepth: int = 1, caption: str | None = None) -> str:
    head = f"```{{toctree}}\n:maxdepth: {maxdepth}\n"
    if caption:
        head += f":caption: {caption}\n"
    return head + "\n" + "\n".join(entries) + "\n```\n"


_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")


def _fix_card_links(text: str, card_dir: Path) -> str:
    """Links from a card to repository files outside ``models/`` become code text.

    Links to other cards, to headings and to web pages stay links.
    """

    def repl(m: re.Match[str]) -> str:
        bang, label, target = m.groups()
        if bang or "://" in target or target.startswith(("#", "mailto:")):
            return m.group(0)
        path = target.split("#", 1)[0]
        if path.endswith(".md") and (card_dir / path).resolve().is_relative_to(ROOT / "models"):
            return m.group(0)
        rel = os.path.normpath(card_dir.relative_to(ROOT) / path)
        return f"{label} (`{rel}`)" if label and label.strip("`") != rel else f"`{rel}`"

    return _LINK.sub(repl, text)


def generate_models() -> list[str]:
    """Copy ``models/`` (cards and their pictures) into ``generated/models``."""
    src = ROOT / "models"
    dst = GENERATED / "models"
    if dst.exists():
        shutil.rmtree(dst)
    cards: list[str] = []
    if src.is_dir():
        for path in sorted(src.rglob("*")):
            if path.is_dir() or path.name.startswith("."):
                continue
            rel = path.relative_to(src)
            out = dst / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            if path.suffix != ".md":
                shutil.copy2(path, out)
                continue
            text = _fix_card_links(path.read_text(), path.parent)
            if not re.match(r"\s*# ", text):  # every page needs a title for the toctree
                text = f"# {path.stem.replace('_', ' ')}\n\n{text}"
            out.write_text(text)
            if path.name.lower() != "readme.md":
                cards.append(rel.with_suffix("").as_posix())
    intro = (
        "# Model cards\n\n"
        "The mathematics of every formulation: sets, parameters, variables, constraints and\n"
        "objective, with the same names as the Pyomo components in `hetopt/kinds/`. The\n"
        "cards are copied from the repository's `models/` folder at build time, so this\n"
        "page always shows the cards that ship with the code.\n\n"
    )
    readme = dst / "README.md"
    if readme.exists():
        intro += readme.read_text().split("\n", 1)[-1] + "\n\n"
        readme.unlink()
    if cards:
        body = intro + _toctree([f"models/{c}" for c in cards])
    else:
        body = intro + "No model card is present in this build.\n"
    _write(GENERATED / "models.md", body)
    return cards


def _example_files(kind: str) -> list[Path]:
    """JSON instance files of ``kind`` under ``instances/<kind>/`` (not answer files)."""
    folder = ROOT / "instances" / kind
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.rglob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(data, dict) and data.get("kind") == kind:
            out.append(path)
    return out


BROKEN_KINDS: dict[str, str] = {}
"""Kinds whose module is present but fails to load: reported as build warnings."""


def available_kinds() -> list[str]:
    """The registered kinds whose module is present and loads."""
    import hetopt

    names = []
    for name in hetopt.kind_names():
        try:
            hetopt.get_kind(name)
        except Exception as exc:
            BROKEN_KINDS[name] = f"{type(exc).__name__}: {exc}"
            continue
        names.append(name)
    return names


def _record_models(model: Any) -> list[Any]:
    """The nested pydantic models of an instance model that have a docstring."""
    import sys

    from pydantic import BaseModel

    module = sys.modules[model.__module__]
    out = []
    for name in model.model_json_schema().get("$defs", {}):
        cls = getattr(module, name, None)
        if isinstance(cls, type) and issubclass(cls, BaseModel) and cls.__doc__:
            out.append(cls)
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _result_sections(kind: Any) -> list[str]:
    """The kind's declared result tables and ``info`` entries (``Kind.tables``,
    ``Kind.details``): the same declaration the pipeline checks every result against."""
    lines: list[str] = []
    if kind.tables:
        lines += [
            "## Result tables",
            "",
            "Every result of this kind carries these tables (`result.tables[name]`, the "
            "`tables` key of `--json`); the pipeline checks each against this declaration "
            "before the kind's verifier runs.",
            "",
        ]
        for t in kind.tables:
            when = " (only for some objectives or parameters)" if t.optional else ""
            desc = t.description[:1].upper() + t.description[1:]
            lines += [f"### `{t.name}`{when}", "", f"{desc}.", ""]
            lines += ["| column | type | unit | meaning |", "|---|---|---|---|"]
            for c in t.columns:
                opt = " (optional)" if c.optional else ""
                lines.append(
                    f"| `{c.name}` | {c.dtype} | {c.unit or '-'} | {_cell(c.description)}{opt} |"
                )
            lines.append("")
    if kind.details:
        lines += [
            "## Result details (`info`)",
            "",
            "| entry | type | unit | meaning |",
            "|---|---|---|---|",
        ]
        for d in kind.details:
            lines.append(f"| `{d.name}` | {d.type} | {d.unit or '-'} | {_cell(d.description)} |")
        lines.append("")
    return lines


def generate_kinds() -> list[str]:
    """One page per installed kind: objectives, parameters, instance model, JSON Schema."""
    import hetopt

    dst = GENERATED / "kinds"
    if dst.exists():
        shutil.rmtree(dst)
    names = available_kinds()
    for name in names:
        kind = hetopt.get_kind(name)
        model = kind.instance_model
        lines = [f"# `{name}`", "", f"{kind.description}.", ""]
        lines += [
            "## Objectives",
            "",
            "| objective | sense | unit | meaning |",
            "|---|---|---|---|",
        ]
        for o in kind.objectives:
            desc = o.description.replace("|", "\\|").replace("\n", " ")
            lines.append(f"| `{o.name}` | {o.sense} | {o.unit or '-'} | {desc} |")
        lines.append("")
        if kind.params:
            specs = kind.param_specs()
            lines += ["## Parameters of `solve`", ""]
            lines += [
                "Pass them as keywords to `hetopt.solve` or as `--param KEY=VALUE` on the "
                "command line; both are validated by the same typed model.",
                "",
                "| parameter | type | default | meaning |",
                "|---|---|---|---|",
            ]
            for p, desc in kind.params.items():
                spec = specs.get(p, {})
                cell = desc.replace("|", "\\|")
                typ = str(spec.get("type", "")).replace("|", "\\|") or "-"
                default = f"`{spec['default']!r}`" if "default" in spec else "-"
                lines.append(f"| `{p}` | {typ} | {default} | {cell} |")
            lines.append("")
        lines += _result_sections(kind)
        lines += [
            "## Instance model",
            "",
            "```{eval-rst}",
            f".. autoclass:: {model.__module__}.{model.__qualname__}(**fields)",
            "   :no-members:",
            "```",
            "",
        ]
        records = _record_models(model)
        if records:
            lines += ["### Records", "", "```{eval-rst}"]
            for rec in records:
                lines += [f".. autoclass:: {rec.__module__}.{rec.__qualname__}(**fields)", ""]
            lines += ["```", ""]
        examples = _example_files(name)
        if examples:
            lines += ["## Example instances", ""]
            lines += [f"- `{p.relative_to(ROOT).as_posix()}`" for p in examples]
            lines.append("")
            small = min(examples, key=lambda p: p.stat().st_size)
            if small.stat().st_size <= 4000:
                lines += [
                    f"The smallest, `{small.relative_to(ROOT).as_posix()}`:",
                    "",
                    "```json",
                    small.read_text().rstrip(),
                    "```",
                    "",
                ]
        schema = json.dumps(model.model_json_schema(), indent=2)
        lines += [
            "## JSON Schema",
            "",
            f"Generated at build time from `{model.__qualname__}` (the same schema as "
            f"`hetopt schema {name}`). Editors that understand JSON Schema can check instance "
            "files against it.",
            "",
            "```json",
            schema,
            "```",
            "",
        ]
        from hetopt.schema import result_schema

        lines += [
            "## Result JSON Schema",
            "",
            "The schema of this kind's results as `hetopt solve --json` and `--output` write "
            f"them (`Result.to_dict`), the same as `hetopt schema {name} --result`. It is "
            "generated from the declared tables and details above; see {doc}`/results`.",
            "",
            "```json",
            json.dumps(result_schema(kind), indent=2),
            "```",
            "",
        ]
        _write(dst / f"{name}.md", "\n".join(lines))
    intro = (
        "# Instance formats\n\n"
        "An instance is a JSON (or YAML) object whose `kind` field selects the model that\n"
        "validates it. Unknown fields are errors, and every error names the file, the field\n"
        "path (e.g. `jobs[3].throughput.v100`) and what was expected (exit code 3 on the\n"
        "command line). The pages below are generated from the pydantic models of the kinds\n"
        "present in this build.\n\n"
    )
    _write(GENERATED / "kinds.md", intro + _toctree([f"kinds/{n}" for n in names]))
    return names


def _cli_commands(cmd: Any, ctx: Any, path: list[str]) -> list[tuple[list[str], Any, Any]]:
    import click

    out = [(path, cmd, ctx)]
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is None or getattr(sub, "hidden", False):
                continue
            sub_ctx = click.Context(
                sub, info_name=name, parent=ctx, max_content_width=88, terminal_width=88
            )
            out += _cli_commands(sub, sub_ctx, [*path, name])
    return out


def generate_cli() -> None:
    """The CLI reference: ``--help`` of every (sub-)command, and the exit codes."""
    import click

    from hetopt import cli

    root = click.Context(
        cli.main,
        info_name="hetopt",
        max_content_width=88,
        terminal_width=88,
        **cli.main.context_settings,
    )
    lines = [
        "# Command-line reference",
        "",
        "Generated at build time from the click application (`hetopt.cli.main`), so it lists",
        "exactly the commands of this build, including the sub-commands that kinds add.",
        "",
        "## Exit codes",
        "",
        "A fixed contract: scripts and schedulers rely on them.",
        "",
        "| code | meaning |",
        "|---|---|",
    ]
    meaning = {
        cli.EXIT_OK: "optimal or feasible solution (`validate`: the instance is valid)",
        cli.EXIT_INTERNAL: "internal error (solver crash, bug)",
        cli.EXIT_USAGE: "usage error (bad flag, unknown objective or kind, bad option file, "
        "nothing to plot)",
        cli.EXIT_INVALID: "invalid instance or input file (the message names the file, the "
        "field and what was expected)",
        cli.EXIT_INFEASIBLE: "infeasible or unbounded",
        cli.EXIT_NO_SOLUTION: "no solution within the limits (time limit before any solution)",
        cli.EXIT_INTERRUPTED: "interrupted (Ctrl-C); `solve` still prints and writes what HiGHS had found",
    }
    for code in sorted(meaning):
        lines.append(f"| {code} | {meaning[code]} |")
    lines += [
        "",
        "Errors are one line on stderr, `hetopt: error: ...`; set `HETOPT_DEBUG=1` for a",
        "traceback of an internal error.",
        "",
    ]
    for path, cmd, ctx in _cli_commands(cli.main, root, ["hetopt"]):
        title = " ".join(path)
        lines += [f"## `{title}`", "", "```text", cmd.get_help(ctx).rstrip(), "```", ""]
    _write(GENERATED / "cli.md", "\n".join(lines))


COLD_START = """## Cold start

What a fresh `hetopt` process costs before it does any work (issue 19). `hetopt --help`,
`kinds`, `schema` and `validate` import no Pyomo, HiGHS, pandas or scipy: a kind's
package defines `KIND` (objectives, parameters, declared tables, instance model) from
pydantic and numpy only, and its method table holds lazy entries (`LazyMethod`) that a
solve imports on first use; the checks `validate` shares with `solve` (and the kinds'
method choices) live in light modules too (not yet those of gpu_cluster's
`max_min_fairness_water_filling` and `min_cost`, in its policies module). `solve` imports the modules of the method it runs, not the
kind's other methods nor any other kind. CPU seconds (user + sys), median of 5 cold
runs, before and after the lazy method tables, measured side by side on a loaded 2-core
machine:

| command | before | after |
|---|---|---|
| `hetopt --help` | 0.15 | 0.15 |
| `hetopt kinds` | 2.59 | 0.86 |
| `hetopt schema gpu_cluster` | 1.89 | 0.56 |
| `hetopt validate instances/gpu_cluster/example.json` | 2.07 | 0.59 |
| `hetopt solve instances/gpu_cluster/example.json` | 2.00 | 2.04 |

A cold solve is the solver stack's import: `pyomo.environ` (0.73 s CPU on its own; its
solver plugins make up half of it, `pyomo.core` alone is 0.37 s), pandas (0.70 s),
scipy.sparse (0.47 s) and highspy (0.24 s). gpu_cluster's max-min and makespan LPs go to
HiGHS as arrays (no Pyomo model), and `hetopt.highs` and the gpu_cluster formulations
import Pyomo only in the functions that build or compile Pyomo models, so their cold solve
imports no Pyomo at all (every other kind imports it when it builds). CPU seconds (user +
sys), median of 5 cold runs, before and after that change, interleaved with an
independently written cvxpy+ECOS script of the same LP (`benchmarks/peers.py`), on a
loaded 2-core machine:

| `hetopt solve instances/gpu_cluster/example.json` | before | after | cvxpy+ECOS |
|---|---|---|---|
| `max_min_fairness` (the default) | 1.92 | 1.25 | 1.83 |
| `--objective makespan` | 1.98 | 1.30 | 1.99 |

What that solve still imports is scipy.sparse (`compile_lp` stacks the row blocks with
it), highspy and pandas (the result tables). `tests/cli/test_cold_start.py` checks what
each command imports (never times).

"""


def generate_benchmarks() -> None:
    """The benchmark page from ``.benchmarks/ci.json`` (written by CI), if present."""
    import bench_report

    source = Path(os.environ.get("HETOPT_BENCH_JSON", ROOT / ".benchmarks" / "ci.json"))
    head = (
        "# Benchmark results\n\n"
        "Generated at build time from the pytest-benchmark JSON that CI writes\n"
        "(`python -m pytest --benchmark-json=.benchmarks/ci.json`, the quick subset; "
        "`python -m pytest -m slow` runs the large sizes). To make the same report from\n"
        "your own run: `python docs/bench_report.py RUN.json -o report.md --plot report.png`.\n"
        "Every benchmark asserts its known answer before it is timed; solve benchmarks run\n"
        "HiGHS with one thread.\n\n" + COLD_START
    )
    if not source.is_file():
        _write(GENERATED / "benchmarks.md", head + "No benchmark run available.\n")
        return
    try:
        report = bench_report.load(source)
    except (ValueError, KeyError) as exc:
        _write(
            GENERATED / "benchmarks.md",
            head + f"No benchmark run available (`{source.name}` is unreadable: {exc}).\n",
        )
        return
    FIGURES.mkdir(parents=True, exist_ok=True)
    body = bench_report.markdown(report, heading_level=2)
    if len(report.rows):
        bench_report.plot(report, FIGURES / "benchmarks.png")
        body += "\n![benchmark times](figures/benchmarks.png)\n"
    _write(GENERATED / "benchmarks.md", head + body)


def generate_all() -> None:
    """Write every generated page (called from ``conf.py``)."""
    GENERATED.mkdir(exist_ok=True)
    FIGURES.mkdir(exist_ok=True)
    generate_models()
    generate_kinds()
    generate_cli()
    generate_benchmarks()


def _report_broken_kinds(app: Sphinx) -> None:
    from sphinx.util import logging

    if os.environ.get("HETOPT_DOCS_ALLOW_BROKEN_KINDS"):
        return
    log = logging.getLogger("hetopt_docs")
    for name, error in BROKEN_KINDS.items():
        log.warning("kind %r is registered and present but does not load: %s", name, error)


def setup(app: Sphinx) -> dict[str, Any]:
    from hetopt_run import HetoptRun  # needs Sphinx; the generators above do not

    app.add_directive("hetopt-run", HetoptRun)
    app.connect("builder-inited", _report_broken_kinds)
    return {"version": "1", "parallel_read_safe": False, "parallel_write_safe": True}
