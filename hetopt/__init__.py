"""hetopt: exact optimisation models for heterogeneous resources (Pyomo + HiGHS).

>>> import hetopt
>>> result = hetopt.solve(hetopt.examples.path("gpu_cluster/example.json"))  # doctest: +SKIP
>>> result.status, result.objective_value                        # doctest: +SKIP
>>> result.allocation                                            # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import logging
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

from . import examples
from .errors import HetoptError, InstanceError, OptionsError, SolveError, UsageError
from .kinds import get_kind, instance_from_dict, kind_names, read_instance
from .options import SolveOptions
from .status import Status

if TYPE_CHECKING:
    from .api import build_model, export_model, solve, verify
    from .result import Result, Verification

# imported on first use (PEP 562), so that ``hetopt --help`` and ``import hetopt`` do not
# pay for Pyomo, HiGHS, pandas and scipy: name -> module
_LAZY = {
    "build_model": ".api",
    "export_model": ".api",
    "solve": ".api",
    "verify": ".api",
    "Result": ".result",
    "Verification": ".result",
}

__version__ = "0.1.0"

__all__ = [
    "HetoptError",
    "InstanceError",
    "OptionsError",
    "Result",
    "SolveError",
    "SolveOptions",
    "Status",
    "UsageError",
    "Verification",
    "__version__",
    "build_model",
    "examples",
    "export_model",
    "get_kind",
    "instance_from_dict",
    "kind_names",
    "read_instance",
    "solve",
    "verify",
]

logging.getLogger(__name__).addHandler(logging.NullHandler())


def _drop_scipy_hook(deps: ModuleType) -> None:
    """Pyomo declares scipy a deferred import whose callback imports scipy.stats,
    scipy.integrate and scipy.spatial (~0.8 s) the moment scipy is first imported by
    anyone; hetopt needs scipy.sparse only. Without the callback the deferred import
    still resolves to scipy itself (and ``scipy.stats`` still loads when asked for)."""
    indicator = getattr(deps, "scipy_available", None)
    if getattr(indicator, "_callback", None) is getattr(deps, "_finalize_scipy", None):
        indicator._callback = None  # type: ignore[union-attr]


class _PyomoDepsFinder(importlib.abc.MetaPathFinder):
    """Runs :func:`_drop_scipy_hook` right after ``pyomo.common.dependencies`` loads."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != "pyomo.common.dependencies":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            exec_module = spec.loader.exec_module

            def exec_then_drop(module: ModuleType) -> None:
                exec_module(module)
                _drop_scipy_hook(module)

            spec.loader.exec_module = exec_then_drop  # type: ignore[method-assign]
        return spec


if "pyomo.common.dependencies" in sys.modules:
    _drop_scipy_hook(sys.modules["pyomo.common.dependencies"])
elif "scipy" not in sys.modules:
    sys.meta_path.insert(0, _PyomoDepsFinder())


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
