"""hetopt.examples: the shipped example instances, as the tutorials use them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import hetopt
from hetopt import examples

ROOT = Path(__file__).resolve().parents[2]


def test_examples_are_the_repository_instances() -> None:
    names = examples.names()
    assert "gpu_cluster/example.json" in names
    assert examples.names("client_selection")
    assert all(n.startswith("client_selection/") for n in examples.names("client_selection"))
    assert examples.names("no_such_kind") == []
    for name in names:
        assert examples.path(name).read_bytes() == (ROOT / "instances" / name).read_bytes()


def test_path_accepts_the_tutorials_spelling() -> None:
    assert examples.path("instances/multicore/big_little_dag.json") == examples.path(
        "multicore/big_little_dag.json"
    )
    assert hetopt.solve(examples.path("cpu_gpu/single_divisible.json")).objective_value == (
        pytest.approx(1.6)
    )


def test_unknown_example_lists_the_folder() -> None:
    with pytest.raises(FileNotFoundError, match=r"cpu_gpu/ has: .*pairing\.json"):
        examples.path("cpu_gpu/nope.json")
    with pytest.raises(FileNotFoundError, match=r"kinds: .*multicore"):
        examples.path("nokind/x.json")
    with pytest.raises(FileNotFoundError):
        examples.path("../pyproject.toml")


def test_every_example_the_docs_name_exists() -> None:
    pattern = re.compile(r'examples\.path\("([^"]+)"\)')
    found = set()
    for md in (ROOT / "docs").rglob("*.md"):
        found.update(pattern.findall(md.read_text()))
    assert found, "the docs use hetopt.examples.path"
    for name in sorted(found):
        assert examples.path(name).is_file(), name


def test_package_data_ships_the_examples() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert '"examples/instances/**/*"' in text
