"""Lazy method tables (issue 19): a kind's module defines ``KIND`` without importing its
methods (Pyomo, HiGHS, pandas); every lazy entry resolves to a method."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

import hetopt
from hetopt.contract import BuildMethod, RunMethod
from hetopt.kinds import REGISTRY
from hetopt.kinds.base import Kind, LazyMethod, MethodTable, resolve

ROOT = Path(hetopt.__file__).resolve().parents[1]
HEAVY = ("pyomo", "highspy", "pandas", "scipy")


def _tables(obj: Any) -> Iterator[tuple[str, Mapping[Any, Any]]]:
    for attr, value in vars(obj).items():
        if isinstance(value, MethodTable):
            yield attr, value.entries()
        elif isinstance(value, Mapping) and not attr.startswith("__"):
            yield attr, value


def _lazy_entries() -> list[tuple[str, str, Any, LazyMethod]]:
    """(kind, table, key, entry) of every LazyMethod a kind's module or class declares."""
    out = []
    for name in hetopt.kind_names():
        kind = hetopt.get_kind(name)
        module = importlib.import_module(REGISTRY[name].module)
        for owner in (module, *type(kind).__mro__[:-1]):
            if owner is Kind or owner is object:
                continue
            for table, entries in _tables(owner):
                for key, entry in entries.items():
                    if isinstance(entry, LazyMethod):
                        out.append((name, table, key, entry))
    return out


def test_every_kind_declares_its_methods_lazily() -> None:
    kinds = {k for k, *_ in _lazy_entries()}
    assert kinds == set(hetopt.kind_names())


@pytest.mark.parametrize(
    "kind,table,key,entry",
    _lazy_entries(),
    ids=lambda v: str(v) if isinstance(v, str | tuple) else "",
)
def test_lazy_entry_resolves_to_a_method(kind: str, table: str, key: Any, entry: Any) -> None:
    module, _, attr = entry.target.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    assert isinstance(cls, type), entry.target
    method = entry.resolve()
    assert isinstance(method, BuildMethod | RunMethod), (kind, table, key, method)
    assert callable(method.build), (kind, table, key)
    assert entry.resolve() is method  # built once, like a table of instances


def test_method_table_resolves_on_lookup_only() -> None:
    calls = []

    class Probe(LazyMethod):
        def resolve(self) -> Any:
            calls.append(self.target)
            return super().resolve()

    entry = Probe("hetopt.kinds.cpu_gpu.methods:Batch", "makespan")
    table = MethodTable({"makespan": entry})
    assert list(table) == ["makespan"] and "makespan" in table and len(table) == 1
    assert table.entry("makespan") is entry
    assert calls == []
    method = table["makespan"]
    assert calls == [entry.target]
    assert resolve(entry) is method is table["makespan"]
    assert type(method).__name__ == "Batch" and method.objective == "makespan"


def test_then_derives_a_new_lazy_entry() -> None:
    base = LazyMethod("hetopt.kinds.cpu_gpu.methods:Batch", "makespan")
    derived = base.then(lambda m, tag: (m, tag), "x")
    assert isinstance(derived, LazyMethod) and derived.target == base.target
    got = derived.resolve()
    assert got == (base.resolve(), "x")


def test_bad_target_is_refused() -> None:
    with pytest.raises(ValueError, match="module:Class"):
        LazyMethod("hetopt.kinds.cpu_gpu.methods.Batch")


def test_method_for_resolves_choose_method() -> None:
    kind = hetopt.get_kind("cpu_gpu")
    entry = kind.choose_method("makespan", None, kind.parse_params({}))
    assert isinstance(entry, LazyMethod)
    assert kind.method_for("makespan", None, kind.parse_params({})) is entry.resolve()
    assert kind.methods["makespan"] is entry.resolve()


def test_defining_every_kind_imports_no_solver_stack() -> None:
    """``get_kind`` of every kind, its objectives, parameters, declared tables and details
    and its instance schema need pydantic and numpy only."""
    code = (
        "import json, sys, hetopt\n"
        "from hetopt.schema import result_schema\n"
        "for name in hetopt.kind_names():\n"
        "    k = hetopt.get_kind(name)\n"
        "    k.param_specs(), k.tables, k.details, k.objective_names()\n"
        "    k.instance_model.model_json_schema(), result_schema(k)\n"
        "print(json.dumps(sorted(m for m in " + repr(HEAVY) + " if m in sys.modules)))\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_public_name_of_a_kind_package_resolves(name: str) -> None:
    """Names a kind's package re-exports on first use (PEP 562) are still there."""
    module = importlib.import_module(REGISTRY[name].module)
    missing = [n for n in getattr(module, "__all__", ()) if getattr(module, n, None) is None]
    assert missing == []
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = module.no_such_name
