"""Packaging (issue 20): networkx is a test extra, not a dependency; the library runs
without importing it."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_networkx_is_a_test_extra() -> None:
    project = _project()
    assert not any(d.startswith("networkx") for d in project["dependencies"])
    extras = project["optional-dependencies"]
    assert any(d.startswith("networkx") for d in extras["test"])
    assert any(d.startswith("networkx") for d in extras["dev"])


def test_solving_does_not_import_networkx() -> None:
    code = (
        "import sys, hetopt\n"
        "hetopt.solve(hetopt.examples.path('multicore/big_little_dag.json'))\n"
        "hetopt.solve(hetopt.examples.path('gpu_cluster/example.json'))\n"
        "import hetopt.decompose, hetopt.rolling\n"
        "assert 'networkx' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=300)
