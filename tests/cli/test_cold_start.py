"""Cold start (issue 19): what a fresh interpreter imports for each command.

These tests assert imports, never times: each runs the command line in a new Python
process and reads ``sys.modules`` afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import hetopt
from hetopt.cli import LazyGroup, _listed_command, main
from hetopt.kinds import REGISTRY, load_target

ROOT = Path(hetopt.__file__).resolve().parents[1]
EXAMPLE = "instances/gpu_cluster/example.json"
HEAVY = ("pyomo", "highspy", "pandas", "scipy")
# what Pyomo's deferred-scipy callback imports the moment scipy is first touched
SCIPY_HOOK = ("scipy.stats", "scipy.integrate", "scipy.spatial")

_RUN = """
import json, runpy, sys
sys.argv = ["hetopt", *json.loads(sys.argv[1])]
code = 0
try:
    runpy.run_module("hetopt.cli", run_name="__main__")
except SystemExit as exc:
    code = exc.code
print("\\n" + json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _python(code: str, arg: Any) -> Any:
    """Run ``code`` in a new interpreter with ``json.dumps(arg)`` as its argument, from
    the project root: the JSON on its last line of output."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(arg)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _fresh(args: list[str]) -> tuple[int, set[str]]:
    """Run ``hetopt ARGS`` in a new interpreter: (exit code, modules it imported)."""
    out = _python(_RUN, args)
    return out["code"] or 0, set(out["modules"])


def _imported(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(p for p in packages if p in modules)


def _kind_packages(modules: set[str]) -> list[str]:
    return sorted(e.module for e in REGISTRY.values() if e.module in modules)


@pytest.mark.parametrize("args", [["--help"], ["generate", "--help"], ["convert", "--help"]])
def test_help_imports_no_solver_stack_and_no_kind(args: list[str]) -> None:
    code, modules = _fresh(args)
    assert code == 0
    assert _imported(modules, HEAVY) == []
    assert _kind_packages(modules) == []


def test_import_hetopt_is_light_and_keeps_every_public_name() -> None:
    code = (
        "import sys, hetopt\n"
        "heavy = [m for m in " + repr(HEAVY) + " if m in sys.modules]\n"
        "assert heavy == [], heavy\n"
        "missing = [n for n in hetopt.__all__ if n not in dir(hetopt)]\n"
        "assert missing == [], missing\n"
        "from hetopt import *  # noqa: F403\n"
        "for name in hetopt.__all__:\n"
        "    exec(f'from hetopt import {name}')\n"
        "print(hetopt.solve.__module__, hetopt.Result.__module__)\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["hetopt.api", "hetopt.result"]


def test_lazy_public_names() -> None:
    for name in hetopt.__all__:
        assert getattr(hetopt, name) is not None
    assert set(hetopt.__all__) <= set(dir(hetopt))
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = hetopt.no_such_name  # type: ignore[attr-defined]


def _lazy_groups() -> list[LazyGroup]:
    groups = [main]
    groups += [c for c in main.commands.values() if isinstance(c, LazyGroup)]
    return groups


def test_help_listing_matches_the_imported_commands() -> None:
    """The listing of ``--help`` reads each lazy command's help from its source; it
    must say what the imported command says."""
    seen = 0
    for group in _lazy_groups():
        for name, target in group.lazy.items():
            module, _, attr = target.partition(":")
            listed = _listed_command(name, module, attr)
            real = load_target(target)
            assert listed is not None, target
            assert listed.get_short_help_str(45) == real.get_short_help_str(45), target
            assert listed.get_short_help_str(200) == real.get_short_help_str(200), target
            assert listed.hidden == real.hidden
            seen += 1
    assert seen >= len(REGISTRY)


@pytest.mark.parametrize(
    "args",
    [["kinds"], ["schema", "gpu_cluster"], ["validate", EXAMPLE]],
)
def test_no_pyomo_scipy_hook(args: list[str]) -> None:
    """Pyomo's deferred-scipy callback (scipy.stats, .integrate, .spatial: most of a
    cold start) does not fire; hetopt needs scipy.sparse only."""
    code, modules = _fresh(args)
    assert code == 0
    assert _imported(modules, SCIPY_HOOK) == []


def test_solve_imports_only_its_kind_and_no_pyomo_scipy_hook() -> None:
    code, modules = _fresh(["solve", EXAMPLE])
    assert code == 0
    assert _kind_packages(modules) == ["hetopt.kinds.gpu_cluster"]
    assert _imported(modules, SCIPY_HOOK) == []


@pytest.mark.parametrize("args", [["kinds"], ["schema", "gpu_cluster"], ["validate", EXAMPLE]])
def test_metadata_commands_import_no_solver_stack(args: list[str]) -> None:
    code, modules = _fresh(args)
    assert code == 0
    assert _imported(modules, HEAVY) == []


@pytest.mark.parametrize(
    "args", [["kinds", "--json"], ["schema", "multicore", "--result"], ["schema", "human_robot"]]
)
def test_more_metadata_commands_import_no_solver_stack(args: list[str]) -> None:
    code, modules = _fresh(args)
    assert code == 0
    assert _imported(modules, HEAVY) == []


# one shipped instance per kind; the objective's checks run too (what 'solve' would refuse)
VALIDATE = [
    "instances/agent_sessions/active_batch.json",
    "instances/cpu_gpu/pairing.json",
    "instances/gpu_cluster/gavel_100.json",
    "instances/gpu_cluster/policies/colocation_triangle.json",
    "instances/human_robot/small.json",
    "instances/llm_serving/melange_example.json",
    "instances/multi_resource/rules.json",
    "instances/multicore/big_little_dag.json",
    "instances/pipeline_partition/serving_small.json",
    "instances/pipeline_partition/training_split.json",
    "instances/gpu_cluster/elastic/lyra_small.json",
    "instances/client_selection/fedcs_quotas.json",
    "instances/client_selection/oort_testing.json",
]


@pytest.mark.parametrize("path", VALIDATE)
def test_validate_of_every_kind_imports_no_solver_stack(path: str) -> None:
    code, modules = _fresh(["validate", path])
    assert code == 0
    assert _imported(modules, HEAVY) == []


def test_solve_imports_none_of_the_other_methods_of_its_kind() -> None:
    """A max-min solve imports its own method modules, not the policies', Lyra's, the
    decomposition's or the persistent policy's."""
    code, modules = _fresh(["solve", EXAMPLE])
    assert code == 0
    others = [
        f"hetopt.kinds.gpu_cluster.{m}"
        for m in ("elastic", "policies", "policy_models", "decompose", "persistent")
    ]
    assert sorted(m for m in others if m in modules) == []
    assert "hetopt.decompose" not in modules


@pytest.mark.parametrize("objective", ["max_min_fairness", "makespan"])
def test_gpu_cluster_array_solve_imports_no_pyomo(objective: str) -> None:
    """The gpu_cluster max-min and makespan LPs go to HiGHS as arrays (``compile_lp``):
    a cold solve imports no Pyomo module at all (hetopt.highs, maxmin and formulations
    import it inside the functions that build or compile Pyomo models)."""
    code, modules = _fresh(["solve", EXAMPLE, "--objective", objective])
    assert code == 0
    assert sorted(m for m in modules if m == "pyomo" or m.startswith("pyomo.")) == []
    assert "hetopt.pyomo_ext" not in modules
    assert "highspy" in modules  # it did solve


_RUN_ALL_VALIDATE = """
import json, pathlib, sys
from hetopt.cli import main
from hetopt.kinds import REGISTRY, get_kind
heavy = json.loads(sys.argv[1])
runs, found = 0, []
for path in sorted(pathlib.Path("instances").rglob("*.json")):
    if path.stat().st_size > 200_000:
        continue
    data = json.loads(path.read_text())
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind not in REGISTRY:
        continue
    for objective in get_kind(kind).objectives:
        before = {m for m in heavy if m in sys.modules}
        try:
            main(["validate", str(path), "--objective", objective.name], standalone_mode=False)
        except SystemExit:
            pass
        runs += 1
        found += [[str(path), objective.name, m] for m in heavy if m in sys.modules and m not in before]
print("\\n" + json.dumps({"runs": runs, "found": found}))
"""


def test_validate_with_every_objective_imports_no_solver_stack() -> None:
    """``validate --objective NAME`` runs the objective's own checks (prices for
    min_cost, entity weights for water-filling, ...): none of them may pull in the
    solver stack. Every shipped instance under 200 kB x every objective of its kind, in
    one interpreter (an import anywhere is seen by the first pair that makes it)."""
    out = _python(_RUN_ALL_VALIDATE, HEAVY)
    assert out["runs"] > 100  # the instances and objectives were all found
    assert out["found"] == []
