"""Packaging (issue 20): networkx is a dependency because a kind's verifier serves on it
(pipeline_partition recomputes the placement's max flow with networkx, issue 14); every
other kind solves without importing it."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_networkx_is_a_dependency_used_where_it_serves() -> None:
    deps = _project()["dependencies"]
    assert any(d.startswith("networkx") for d in deps)
    users = sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / "hetopt").rglob("*.py")
        if "import networkx" in p.read_text()
    )
    # the pipeline_partition verifier and gpu_cluster's reference components
    assert users == [
        "hetopt/kinds/gpu_cluster/decompose.py",
        "hetopt/kinds/pipeline_partition/verify.py",
    ]


def test_solving_other_kinds_does_not_import_networkx() -> None:
    code = (
        "import sys, hetopt, hetopt.examples\n"
        "hetopt.solve(hetopt.examples.path('multicore/big_little_dag.json'))\n"
        "hetopt.solve(hetopt.examples.path('gpu_cluster/example.json'))\n"
        "import hetopt.decompose, hetopt.rolling\n"
        "assert 'networkx' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=300)
