"""The ``hetopt-run`` directive: run a Python snippet at build time and show its results.

The snippet runs from the repository root (so ``instances/...`` paths work as in a clone),
in a namespace shared by the snippets of one page. The directive shows the code, what it
printed, the value of its last expression (a DataFrame becomes a table) and every
matplotlib figure it left open. A snippet that raises fails the build.

Options: ``:requires-kind: NAME`` and ``:requires-module: hetopt.x`` (show a note
instead when the kind or module is not in this build), ``:hide-code:``, ``:hide-output:``, ``:max-rows: N``, ``:figure-width: 80%``.
"""

from __future__ import annotations

import ast
import contextlib
import io
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from hetopt_docs import BROKEN_KINDS, FIGURES, ROOT
from sphinx.util.docutils import SphinxDirective


def _format_cell(v: Any) -> str:
    if isinstance(v, float):
        return "–" if v != v else f"{v:.6g}"  # NaN: no value (e.g. cannot run there)
    if v is None:
        return ""
    return str(v)


def dataframe_table(df: Any, max_rows: int) -> list[nodes.Node]:
    """A docutils table of a pandas DataFrame (first ``max_rows`` rows)."""
    shown = df.head(max_rows)
    cols = [str(c) for c in shown.columns]
    table = nodes.table(classes=["hetopt-table"])
    group = nodes.tgroup(cols=len(cols))
    table += group
    for _ in cols:
        group += nodes.colspec(colwidth=1)
    head = nodes.thead()
    group += head
    row = nodes.row()
    head += row
    for c in cols:
        entry = nodes.entry()
        entry += nodes.paragraph(text=c)
        row += entry
    body = nodes.tbody()
    group += body
    for rec in shown.itertuples(index=False, name=None):
        row = nodes.row()
        for v in rec:
            entry = nodes.entry()
            entry += nodes.paragraph(text=_format_cell(v))
            row += entry
        body += row
    out: list[nodes.Node] = [table]
    if len(df) > max_rows:
        out.append(nodes.paragraph(text=f"({len(df) - max_rows} more rows not shown)"))
    return out


def _module_present(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


class HetoptRun(SphinxDirective):
    """Run Python at build time and show code, output, last value and figures."""

    has_content = True
    option_spec = {
        "requires-kind": directives.unchanged,
        "requires-module": directives.unchanged,
        "hide-code": directives.flag,
        "hide-output": directives.flag,
        "max-rows": directives.positive_int,
        "figure-width": directives.unchanged,
    }

    def run(self) -> list[nodes.Node]:
        import hetopt

        kind = self.options.get("requires-kind")
        if kind and (kind not in hetopt.kind_names() or kind in BROKEN_KINDS):
            note = nodes.note()
            note += nodes.paragraph(
                text=f"The {kind} kind is not part of this build yet: this example runs "
                "(and its output appears here) once it lands."
            )
            return [note]
        module = self.options.get("requires-module")
        if module and not _module_present(module):
            note = nodes.note()
            note += nodes.paragraph(
                text=f"{module} is not part of this build yet: this example runs (and its "
                "output appears here) once it lands."
            )
            return [note]
        code = "\n".join(self.content)
        out: list[nodes.Node] = []
        if "hide-code" not in self.options:
            block = nodes.literal_block(code, code, language="python")
            out.append(block)
        namespace = self.env.temp_data.setdefault("hetopt_run_namespace", {"__name__": "docs"})
        stdout = io.StringIO()
        import matplotlib.pyplot as plt

        plt.close("all")
        try:
            tree = ast.parse(code)
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            with contextlib.chdir(ROOT), contextlib.redirect_stdout(stdout):
                exec(compile(tree, f"<{self.env.docname}>", "exec"), namespace)
                value = (
                    eval(compile(last, f"<{self.env.docname}>", "eval"), namespace)
                    if last
                    else None
                )
        except Exception as exc:
            plt.close("all")
            raise self.error(f"hetopt-run: the example raised {type(exc).__name__}: {exc}") from exc
        text = stdout.getvalue().rstrip()
        if "hide-output" not in self.options:
            if text:
                out.append(nodes.literal_block(text, text, language="none"))
            if value is not None:
                import pandas as pd

                if isinstance(value, pd.DataFrame):
                    out.extend(dataframe_table(value, self.options.get("max-rows", 15)))
                elif not hasattr(value, "figure"):  # an Axes: the figure is shown below
                    rep = repr(value)
                    out.append(nodes.literal_block(rep, rep, language="none"))
        serial = self.env.new_serialno("hetopt-run")
        slug = self.env.docname.replace("/", "-")
        for k, num in enumerate(plt.get_fignums()):
            fig = plt.figure(num)
            name = f"{slug}-{serial}-{k}.png"
            FIGURES.mkdir(parents=True, exist_ok=True)
            fig.savefig(FIGURES / name, dpi=110)
            image = nodes.image(uri=f"/generated/figures/{name}", alt=f"figure {k + 1}")
            image["width"] = self.options.get("figure-width", "90%")
            out.append(image)
        plt.close("all")
        return out
