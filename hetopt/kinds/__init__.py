"""The registry of problem kinds.

Each kind lives in its own module (or sub-package) under ``hetopt.kinds`` and exposes a
module attribute ``KIND``: an instance of :class:`hetopt.kinds.base.Kind`. Modules are
imported lazily, so ``hetopt kinds`` and the CLI start fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import Kind

# kind name -> module that defines ``KIND``. Add one line per new kind.
_MODULES: dict[str, str] = {
    "gpu_cluster": "hetopt.kinds.gpu_cluster",
}

_CACHE: dict[str, Kind] = {}


def kind_names() -> list[str]:
    """Names of every registered kind."""
    return list(_MODULES)


def get_kind(name: str) -> Kind:
    """Return the :class:`Kind` registered under ``name``."""
    if name not in _CACHE:
        if name not in _MODULES:
            raise KeyError(f"unknown kind {name!r}; expected one of: {', '.join(_MODULES)}")
        module = importlib.import_module(_MODULES[name])
        _CACHE[name] = module.KIND
    return _CACHE[name]
