"""The shape of the package (issue 12's "done when"), checked on the source itself.

* the CLI is the roof: no library module imports ``hetopt.cli``;
* a solve's ``Result`` is built in one module (:mod:`hetopt.pipeline`;
  ``Result.from_dict`` only rebuilds results from JSON);
* no generic driver or core module branches on a kind's name;
* no import cycle among module-level imports;
* formulations hand layouts over as typed objects (no ``m._xxx = ...`` attributes on
  Pyomo models);
* registering a kind is one entry in ``hetopt/kinds/__init__.py``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import hetopt
from hetopt.contract import BuildMethod, RunMethod

PKG = Path(hetopt.__file__).resolve().parent
MODULES = sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _resolve(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(path: Path, module_level_only: bool) -> set[str]:
    """Modules imported by ``path`` (``module_level_only``: outside functions and
    ``if TYPE_CHECKING:`` blocks)."""
    tree = ast.parse(path.read_text())
    module = _module_name(path)
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(module, node, is_package)
                found.add(target)
                # ``from . import x`` may import the sub-module ``x``
                found.update(f"{target}.{a.name}" for a in node.names)
            elif isinstance(node, ast.If):
                test = ast.unparse(node.test)
                if module_level_only and "TYPE_CHECKING" in test:
                    visit(node.orelse)
                    continue
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for h in node.handlers:
                    visit(h.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif not module_level_only:
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, ast.stmt):
                        visit([child])
                    for grand in ast.walk(child):
                        if isinstance(grand, ast.Import | ast.ImportFrom) and grand is not child:
                            visit([grand])

    visit(tree.body)
    return {m for m in found if m.startswith("hetopt")}


ALL = {_module_name(p): p for p in MODULES}


def _library_modules() -> dict[str, Path]:
    return {m: p for m, p in ALL.items() if not (m == "hetopt.cli" or m.startswith("hetopt.cli."))}


def test_nothing_in_the_library_imports_the_cli() -> None:
    offenders = [
        m
        for m, p in _library_modules().items()
        if any(i == "hetopt.cli" or i.startswith("hetopt.cli.") for i in _imports(p, False))
    ]
    assert offenders == []


def test_results_are_built_in_one_module() -> None:
    pattern = re.compile(r"(?<![\w.])Result\(")
    builders = sorted(m for m, p in ALL.items() if pattern.search(p.read_text()))
    # (Result.from_dict rebuilds one from JSON as ``cls(...)``; the pipeline builds solves')
    assert builders == ["hetopt.pipeline"]


def test_no_module_replaces_fields_of_a_result() -> None:
    pattern = re.compile(r"replace\(\s*(result|res|merged|r)\b")
    offenders = sorted(
        m for m, p in ALL.items() if m != "hetopt.pipeline" and pattern.search(p.read_text())
    )
    assert offenders == []


GENERIC = ("hetopt.api", "hetopt.pipeline", "hetopt.decompose", "hetopt.rolling", "hetopt.cli")


@pytest.mark.parametrize(
    "module", sorted(m for m in ALL if m.startswith(GENERIC) or m.count(".") == 1)
)
def test_generic_code_does_not_branch_on_a_kind_name(module: str) -> None:
    text = ALL[module].read_text()
    names = "|".join(hetopt.kind_names())
    branch = re.compile(rf"(kind|\.name)\s*(==|!=|in)\s*\(?\s*['\"]({names})['\"]")
    assert not branch.search(text), branch.search(text)


def test_no_import_cycles_at_module_level() -> None:
    graph = {m: {i for i in _imports(p, True) if i in ALL and i != m} for m, p in ALL.items()}
    # a package's __init__ importing its own sub-modules is how packages work; a cycle
    # through two different packages' module-level imports is what this catches
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def dfs(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt.startswith(node + ".") or node.startswith(nxt + "."):
                continue  # package <-> its own sub-module
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                dfs(nxt)
        stack.pop()
        state[node] = 2

    for m in sorted(graph):
        if m not in state:
            dfs(m)
    assert cycles == []


def test_formulations_do_not_stick_attributes_on_models() -> None:
    pattern = re.compile(r"\bm\._[a-z]\w*\s*=")
    offenders = sorted(m for m, p in ALL.items() if pattern.search(p.read_text()))
    assert offenders == []


def test_every_registered_kind_is_on_the_pipeline() -> None:
    for name in hetopt.kind_names():
        kind = hetopt.get_kind(name)
        assert kind.methods, f"{name}: no objective -> method table"
        assert set(kind.methods) >= set(kind.objective_names()) or type(kind).choose_method is not (
            hetopt.kinds.base.Kind.choose_method
        ), name
        # the table's lazy entries resolve to methods (tests/contracts/test_lazy_methods.py
        # checks every lazy entry of every table a kind module declares)
        for objective in kind.methods:
            method = kind.methods[objective]
            assert isinstance(method, BuildMethod | RunMethod), (name, objective, method)
        assert kind.tables, f"{name}: declares no result table"


TESTS = Path(__file__).resolve().parents[1]
TEST_AREAS = {"core", "kinds", "cli", "contracts"}


def test_tests_mirror_the_package() -> None:
    """Tests live in ``tests/core``, ``tests/kinds/<kind>``, ``tests/cli`` or
    ``tests/contracts``; every registered kind has its folder and nothing else does."""
    flat = sorted(p.name for p in TESTS.glob("*.py") if p.name != "conftest.py")
    assert flat == [], f"tests directly in tests/: {flat}"
    areas = {p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    assert areas <= TEST_AREAS, sorted(areas - TEST_AREAS)
    kind_dirs = {p.name for p in (TESTS / "kinds").iterdir() if p.is_dir() and p.name[0] != "_"}
    assert kind_dirs == set(hetopt.kind_names())
    for d in kind_dirs:
        assert list((TESTS / "kinds" / d).glob("test_*.py")), f"tests/kinds/{d} has no tests"
