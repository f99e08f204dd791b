"""The docs: generated pages match the code, the quick start matches CI, the site builds."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import hetopt

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(DOCS))

import bench_report  # noqa: E402
import hetopt_docs  # noqa: E402


@pytest.fixture
def gen(tmp_path, monkeypatch) -> Path:
    """Point the page generators at a temporary folder instead of docs/generated."""
    monkeypatch.setattr(hetopt_docs, "GENERATED", tmp_path)
    monkeypatch.setattr(hetopt_docs, "FIGURES", tmp_path / "figures")
    return tmp_path


def test_quick_start_commands_are_the_ones_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text()
    install = re.search(r"^INSTALL_CMD='(.*)'$", ci, re.M).group(1)
    test = re.search(r"^TEST_CMD='(.*)'$", ci, re.M).group(1)
    page = (DOCS / "installation.md").read_text()
    block = re.search(r"## Quick start.*?```bash\n(.*?)```", page, re.S).group(1)
    assert block.splitlines() == [install, test]
    readme = (ROOT / "README.md").read_text()
    assert install in readme and test in readme


def test_every_kind_has_a_tutorial_on_a_shipped_instance():
    index = (DOCS / "index.md").read_text()
    for name in hetopt.kind_names():
        page = DOCS / "tutorials" / f"{name}.md"
        assert page.exists(), f"no tutorial for kind {name}: add docs/tutorials/{name}.md"
        assert f"tutorials/{name}" in index
        text = page.read_text()
        shipped = re.findall(rf"instances/{name}/[\w./-]+\.json", text)
        assert shipped, f"the {name} tutorial solves no instance shipped in instances/{name}/"
        for path in shipped:
            assert (ROOT / path).exists(), path


def test_kind_pages_carry_the_generated_schema(gen):
    names = hetopt_docs.generate_kinds()
    assert "gpu_cluster" in names
    index = (gen / "kinds.md").read_text()
    for name in names:
        assert f"kinds/{name}" in index
        page = (gen / "kinds" / f"{name}.md").read_text()
        schema_text = page.split("## JSON Schema", 1)[1].split("```json\n", 1)[1].split("```")[0]
        expected = hetopt.get_kind(name).instance_model.model_json_schema()
        assert json.loads(schema_text) == expected
        for objective in hetopt.get_kind(name).objectives:
            assert f"`{objective.name}`" in page


def test_cli_page_lists_every_command_and_exit_code(gen):
    from hetopt import cli

    hetopt_docs.generate_cli()
    page = (gen / "cli.md").read_text()
    for name in ("solve", "validate", "kinds", "schema", "export", "generate", "convert", "plot"):
        assert f"## `hetopt {name}`" in page
    assert "## `hetopt generate gpu-cluster`" in page
    for code in range(6):
        assert f"| {code} |" in page
    assert cli.EXIT_INVALID == 3 and "| 3 | invalid instance" in page
    assert "--kind-of-plot" in page


def test_model_cards_are_all_published(gen):
    cards = hetopt_docs.generate_models()
    on_disk = sorted(
        p.relative_to(ROOT / "models").with_suffix("").as_posix()
        for p in (ROOT / "models").rglob("*.md")
        if p.name.lower() != "readme.md"
    )
    assert cards == on_disk
    index = (gen / "models.md").read_text()
    for card in cards:
        assert f"models/{card}" in index
        assert (gen / "models" / f"{card}.md").read_text().lstrip().startswith("# ")


def test_card_links_outside_models_become_code_text():
    card_dir = ROOT / "models"
    text = (
        "See [the code](../hetopt/kinds/gpu_cluster/formulations.py), "
        "[another card](other.md#sets), [web](https://highs.dev) and [a heading](#sets)."
    )
    out = hetopt_docs._fix_card_links(text, card_dir)
    assert "the code (`hetopt/kinds/gpu_cluster/formulations.py`)" in out
    assert "[another card](other.md#sets)" in out
    assert "[web](https://highs.dev)" in out and "[a heading](#sets)" in out


def _bench_json(path: Path) -> Path:
    data = {
        "machine_info": {"cpu": {"brand_raw": "Test CPU", "count": 2}},
        "commit_info": {"id": "0123456789abcdef"},
        "datetime": "2026-11-30T12:00:00",
        "benchmarks": [
            {
                "name": "bench_gpu_cluster[128]",
                "group": "gpu_cluster",
                "stats": {"mean": 0.5, "min": 0.4, "rounds": 1},
                "extra_info": {
                    "build_s": 0.1,
                    "transfer_s": 0.05,
                    "solve_s": 0.3,
                    "load_s": 0.05,
                    "status": "optimal",
                    "objective_value": 1.25,
                },
            },
            {
                "name": "bench_reader",
                "group": None,
                "stats": {"mean": 0.02, "min": 0.01, "rounds": 5},
                "extra_info": {},
            },
        ],
    }
    path.write_text(json.dumps(data))
    return path


def test_bench_report_table_and_plot(tmp_path):
    report = bench_report.load(_bench_json(tmp_path / "run.json"))
    text = bench_report.markdown(report)
    rows = [ln for ln in text.splitlines() if ln.startswith("| `")]
    assert len(rows) == 2
    gpu = next(r for r in rows if "gpu_cluster" in r)
    assert "| 0.5 |" in gpu and "| 0.3 |" in gpu and "optimal" in gpu and "1.25" in gpu
    assert "Test CPU" in text and "0123456789" in text
    png = bench_report.plot(report, tmp_path / "b.png")
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000


def test_bench_report_cli_and_bad_input(tmp_path):
    src = _bench_json(tmp_path / "run.json")
    assert bench_report.main([str(src), "-o", str(tmp_path / "r.md")]) == 0
    assert "bench_gpu_cluster[128]" in (tmp_path / "r.md").read_text()
    bad = tmp_path / "bad.json"
    bad.write_text('{"benchmarks": 3}')
    assert bench_report.main([str(bad)]) == 3
    with pytest.raises(ValueError, match="pytest-benchmark"):
        bench_report.load(bad)


def test_benchmark_page_without_a_run(gen, monkeypatch, tmp_path):
    monkeypatch.setenv("HETOPT_BENCH_JSON", str(tmp_path / "absent.json"))
    hetopt_docs.generate_benchmarks()
    assert "No benchmark run available." in (gen / "benchmarks.md").read_text()
    monkeypatch.setenv("HETOPT_BENCH_JSON", str(_bench_json(tmp_path / "run.json")))
    hetopt_docs.generate_benchmarks()
    page = (gen / "benchmarks.md").read_text()
    assert "bench_gpu_cluster[128]" in page and "figures/benchmarks.png" in page
    assert (gen / "figures" / "benchmarks.png").stat().st_size > 2000


def _have(*modules: str) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in modules)


@pytest.mark.slow
@pytest.mark.skipif(
    not _have("sphinx", "furo", "myst_parser", "numpydoc"), reason="needs hetopt[docs]"
)
def test_docs_build_with_warnings_as_errors(tmp_path):
    out = tmp_path / "html"
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "-q", "docs", out],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / "tutorials" / "gpu_cluster.html").exists()
    assert (out / "generated" / "cli.html").exists()


def test_bench_report_peer_table(tmp_path):
    data = json.loads(_bench_json(tmp_path / "run.json").read_text())
    data["benchmarks"].append(
        {
            "name": "bench_peers[peers/gavel/max_min_fairness/512/ecos]",
            "group": None,
            "stats": {"mean": 0.05, "min": 0.05, "rounds": 1},
            "extra_info": {
                "solve_s": 0.01,
                "peer": "cvxpy+ECOS",
                "hetopt_min_s": 0.04,
                "peer_min_s": 0.08,
                "ratio_to_peer": 0.5,
                "wall_to_highs": 4.0,
                "strategy": "monolithic",
            },
        }
    )
    path = tmp_path / "peers.json"
    path.write_text(json.dumps(data))
    text = bench_report.markdown(bench_report.load(path))
    assert "Against peers" in text
    row = next(ln for ln in text.splitlines() if "cvxpy+ECOS" in ln)
    assert "| 0.5 |" in row and "| 0.08 |" in row and "monolithic" in row
    # a run without peers has no peer table
    assert "Against peers" not in bench_report.markdown(bench_report.load(tmp_path / "run.json"))
