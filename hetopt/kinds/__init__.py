"""The registry of problem kinds.

Each kind lives in its own module (or sub-package) under ``hetopt.kinds`` and exposes a
module attribute ``KIND``: an instance of :class:`hetopt.kinds.base.Kind`. Modules are
imported lazily, so ``hetopt kinds`` and the CLI start fast.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import Kind

# kind name -> module that defines ``KIND``. Add one line per new kind.
_MODULES: dict[str, str] = {
    "gpu_cluster": "hetopt.kinds.gpu_cluster",
    "multicore": "hetopt.kinds.multicore",
    "cpu_gpu": "hetopt.kinds.cpu_gpu",
    "multi_resource": "hetopt.kinds.multi_resource",
    "human_robot": "hetopt.kinds.human_robot",
    "client_selection": "hetopt.kinds.client_selection",
}

_CACHE: dict[str, Kind] = {}


def kind_names() -> list[str]:
    """Names of every registered kind whose module is present."""
    return [name for name, mod in _MODULES.items() if _exists(mod)]


def _exists(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def get_kind(name: str) -> Kind:
    """Return the :class:`Kind` registered under ``name``."""
    if name not in _CACHE:
        if name not in kind_names():
            raise KeyError(f"unknown kind {name!r}; expected one of: {', '.join(kind_names())}")
        module = importlib.import_module(_MODULES[name])
        _CACHE[name] = module.KIND
    return _CACHE[name]
