"""Turn a pytest-benchmark JSON file into a Markdown table and a PNG plot.

Usage::

    python -m pytest benchmarks --benchmark-json=run.json
    python docs/bench_report.py run.json -o report.md --plot report.png

The docs build calls :func:`load`, :func:`markdown` and :func:`plot` on
``.benchmarks/ci.json`` (the file CI writes). The time split columns come from the
``extra_info`` that ``benchmarks/registry.py:record`` stores: ``build_s`` (Pyomo model),
``transfer_s`` (to HiGHS), ``solve_s`` (HiGHS) and ``load_s`` (solution, tables, verifier).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

SPLIT = ("build_s", "transfer_s", "solve_s", "load_s")
SPLIT_LABELS = {"build_s": "build", "transfer_s": "transfer", "solve_s": "HiGHS", "load_s": "load"}
PEER = (
    "peer",
    "hetopt_min_s",
    "peer_min_s",
    "ratio_to_peer",
    "wall_to_highs",
    "around_highs_s",
    "validation_s",
    "strategy",
)
"""``extra_info`` of ``benchmarks/bench_peers.py``: hetopt against a cvxpy model of the same
LP, timed side by side in one run."""


@dataclass
class Report:
    """The benchmarks of one pytest-benchmark run."""

    rows: pd.DataFrame
    """One row per benchmark: ``name, group, mean_s, min_s, rounds``, the split columns
    present, ``status`` and ``objective_value``."""
    machine: str
    commit: str
    when: str


def _natural(text: str) -> list[tuple[int, Any]]:
    return [(0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", text) if p]


def load(path: str | Path) -> Report:
    """Read a pytest-benchmark JSON file.

    Parameters
    ----------
    path
        The file written by ``pytest --benchmark-json=PATH``.

    Returns
    -------
    Report
        The benchmarks as a table plus where and when they ran.

    Raises
    ------
    ValueError
        The file is not JSON or not a pytest-benchmark report.
    """
    try:
        data = json.loads(Path(path).read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise ValueError("not a pytest-benchmark report (no 'benchmarks' list)")
    records: list[dict[str, Any]] = []
    for b in data["benchmarks"]:
        stats = b.get("stats") or {}
        extra = b.get("extra_info") or {}
        rec: dict[str, Any] = {
            "name": b.get("name") or b.get("fullname", "?"),
            "group": b.get("group") or "",
            "mean_s": stats.get("mean"),
            "min_s": stats.get("min"),
            "rounds": stats.get("rounds"),
        }
        for key in SPLIT:
            if isinstance(extra.get(key), int | float):
                rec[key] = float(extra[key])
        rec["status"] = extra.get("status", "")
        rec["objective_value"] = extra.get("objective_value")
        for key in PEER:
            if key in extra:
                rec[key] = extra[key]
        records.append(rec)
    rows = pd.DataFrame.from_records(records)
    if len(rows):
        # natural order: size 100 before 1000 before 5000
        key = rows["name"].map(lambda n: tuple(_natural(str(n))))
        rows = rows.assign(_key=key).sort_values(["group", "_key"], kind="stable")
        rows = rows.drop(columns="_key").reset_index(drop=True)
    mi = data.get("machine_info") or {}
    cpu = mi.get("cpu") or {}
    machine = ", ".join(
        str(x)
        for x in (
            cpu.get("brand_raw"),
            f"{cpu['count']} CPUs" if cpu.get("count") else None,
            mi.get("python_implementation") and f"Python {mi.get('python_version', '')}",
        )
        if x
    )
    commit = (data.get("commit_info") or {}).get("id") or ""
    return Report(rows, machine or "unknown machine", commit[:10], str(data.get("datetime", "")))


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v).replace("|", "\\|")


def markdown(report: Report, heading_level: int = 1) -> str:
    """The report as Markdown: provenance line and one table row per benchmark.

    Parameters
    ----------
    report
        From :func:`load`.
    heading_level
        Level of the section heading (``#`` count).

    Returns
    -------
    str
        Markdown text.
    """
    h = "#" * heading_level
    lines = [f"{h} Run", ""]
    lines.append(
        f"{len(report.rows)} benchmarks, run {report.when or 'at an unknown time'}"
        + (f" at commit `{report.commit}`" if report.commit else "")
        + f" on {report.machine}. Times are wall-clock seconds of one run; on a shared "
        "machine they are noisy."
    )
    lines.append("")
    if not len(report.rows):
        lines.append("The run holds no benchmark.")
        return "\n".join(lines) + "\n"
    split = [c for c in SPLIT if c in report.rows.columns]
    cols = ["name", "mean_s", "min_s", "rounds", *split, "status", "objective_value"]
    header = ["benchmark", "mean (s)", "min (s)", "rounds"]
    header += [f"{SPLIT_LABELS[c]} (s)" for c in split] + ["status", "objective"]
    lines += [f"{h} Results", ""]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for rec in report.rows[cols].itertuples(index=False, name=None):
        cells = [f"`{rec[0]}`", *(_fmt(v) for v in rec[1:])]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    if split:
        lines.append(
            "The split columns: `build` the Pyomo model, `transfer` compiling it into HiGHS, "
            "`HiGHS` the solver, `load` reading the solution, building the tables and running "
            "the independent verifier."
        )
        lines.append("")
    if "ratio_to_peer" in report.rows.columns:
        peers = report.rows[report.rows["ratio_to_peer"].notna()]
        lines += [f"{h} Against peers", ""]
        lines.append(
            "The same LP written independently in cvxpy, solved side by side in the same run "
            "(`benchmarks/bench_peers.py`, threads=1, optima asserted equal to 1e-9). "
            "`ratio` is hetopt's fastest run over the peer's (below 1: hetopt is faster); "
            "`/ HiGHS` is hetopt's wall time over HiGHS's own solve time; `around` the "
            "seconds of it outside HiGHS's runs; `validation` is what validating the "
            "instance dict takes on its own (a large LP's instance is validated beside "
            "HiGHS's first run, `hetopt.deferred`, and then adds almost nothing to `around`)."
        )
        lines.append("")
        header = ["benchmark", "hetopt (s)", "peer", "peer (s)", "ratio", "/ HiGHS"]
        header += ["around (s)", "validation (s)", "strategy"]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        cols = ["name", "hetopt_min_s", "peer", "peer_min_s", "ratio_to_peer", "wall_to_highs"]
        cols += ["around_highs_s", "validation_s"]
        for rec in peers.reindex(columns=[*cols, "strategy"]).itertuples(index=False, name=None):
            cells = [f"`{rec[0]}`", *(_fmt(v) for v in rec[1:])]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines) + "\n"


def plot(report: Report, path: str | Path) -> Path:
    """Horizontal bars of each benchmark's time, split by phase when recorded.

    Parameters
    ----------
    report
        From :func:`load`.
    path
        PNG (or any matplotlib format) to write.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report.rows
    n = len(rows)
    fig, ax = plt.subplots(figsize=(9.0, min(16.0, 1.5 + 0.32 * max(n, 1))), layout="constrained")
    y = list(range(n))
    split = [c for c in SPLIT if c in rows.columns]
    if split:
        left = [0.0] * n
        for k, col in enumerate(split):
            vals = [float(v) if v == v and v is not None else 0.0 for v in rows[col]]
            ax.barh(y, vals, left=left, color=f"C{k}", label=SPLIT_LABELS[col])
            left = [a + b for a, b in zip(left, vals, strict=True)]
        # benchmarks without a split (e.g. pure-Python ones) show their mean time in grey
        rest = [
            (m if (s == 0 and m == m and m is not None) else 0.0)
            for m, s in zip(rows["mean_s"], left, strict=True)
        ]
        if any(rest):
            ax.barh(y, rest, color="0.6", label="total (no split)")
        ax.legend(fontsize=8, loc="lower right")
    else:
        ax.barh(y, rows["mean_s"].fillna(0.0), color="C0")
    ax.set_yticks(y, [str(s) for s in rows["name"]], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("seconds (one run)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title("hetopt benchmarks")
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("json_file", type=Path, help="pytest-benchmark JSON")
    parser.add_argument("-o", "--output", type=Path, help="Markdown file (default: stdout)")
    parser.add_argument("--plot", type=Path, help="also write this PNG")
    args = parser.parse_args(argv)
    try:
        report = load(args.json_file)
    except (OSError, ValueError) as exc:
        print(f"bench_report: {args.json_file}: {exc}", file=sys.stderr)
        return 3
    text = markdown(report)
    if args.plot is not None:
        plot(report, args.plot)
        text += f"\n![benchmark times]({args.plot.name})\n"
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
