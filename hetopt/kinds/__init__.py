"""The registry of problem kinds: the one shared file a new kind is added to.

Each kind lives in its own sub-package under ``hetopt.kinds`` and exposes a module
attribute ``KIND`` (a :class:`hetopt.kinds.base.Kind`). Its entry here also names the
command-line pieces it contributes (its ``hetopt generate`` command, its converters, any
top-level command), as ``"module:attribute"`` strings: nothing is imported until used,
so ``hetopt --help``, ``hetopt kinds`` and the CLI start fast.

This module also turns raw data into validated instances (:func:`instance_from_dict`,
:func:`read_instance`), since that needs the registry.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InstanceError

if TYPE_CHECKING:
    from .base import Kind

__all__ = [
    "REGISTRY",
    "KindEntry",
    "get_kind",
    "instance_from_dict",
    "kind_names",
    "read_instance",
]


@dataclass(frozen=True)
class KindEntry:
    """Where a kind lives and what it adds to the command line.

    Parameters
    ----------
    module
        The module that defines ``KIND``.
    generate
        ``"module:attribute"`` of its ``hetopt generate <kind-with-dashes>`` command.
    convert
        Converter name -> ``"module:attribute"`` (``hetopt convert <name>``).
    commands
        Top-level command name -> ``"module:attribute"`` (e.g. ``hetopt simulate``).
    readers
        Standard format -> ``"module:function"`` turning that format's parsed data into
        an instance dict of this kind (``hetopt convert fjsp --kind <kind>``).
    """

    module: str
    generate: str | None = None
    convert: Mapping[str, str] = field(default_factory=dict)
    commands: Mapping[str, str] = field(default_factory=dict)
    readers: Mapping[str, str] = field(default_factory=dict)


# kind name -> entry. Registering a new kind is one entry here.
REGISTRY: dict[str, KindEntry] = {
    "gpu_cluster": KindEntry(
        "hetopt.kinds.gpu_cluster",
        generate="hetopt.kinds.gpu_cluster.cli:generate_cmd",
        convert={"gavel-trace": "hetopt.kinds.gpu_cluster.cli:convert_trace_cmd"},
        commands={"simulate": "hetopt.kinds.gpu_cluster.cli:simulate_cmd"},
    ),
    "multicore": KindEntry(
        "hetopt.kinds.multicore",
        generate="hetopt.kinds.multicore.cli:generate_cmd",
        readers={"fjsp": "hetopt.kinds.multicore.fjsp:fjsp_to_multicore"},
    ),
    "cpu_gpu": KindEntry("hetopt.kinds.cpu_gpu", generate="hetopt.kinds.cpu_gpu.cli:generate_cmd"),
    "multi_resource": KindEntry(
        "hetopt.kinds.multi_resource", generate="hetopt.kinds.multi_resource.cli:generate_cmd"
    ),
    "human_robot": KindEntry(
        "hetopt.kinds.human_robot",
        generate="hetopt.kinds.human_robot.cli:generate_cmd",
        readers={"fjsp": "hetopt.kinds.human_robot.fjsp:fjsp_to_instance"},
    ),
    "client_selection": KindEntry(
        "hetopt.kinds.client_selection",
        generate="hetopt.kinds.client_selection.cli:generate_cmd",
    ),
    "llm_serving": KindEntry(
        "hetopt.kinds.llm_serving",
        generate="hetopt.kinds.llm_serving.cli:generate_cmd",
        convert={"azure-llm": "hetopt.kinds.llm_serving.cli:convert_azure_cmd"},
    ),
    "pipeline_partition": KindEntry(
        "hetopt.kinds.pipeline_partition",
        generate="hetopt.kinds.pipeline_partition.cli:generate_cmd",
        convert={"helix": "hetopt.kinds.pipeline_partition.cli:convert_helix_cmd"},
    ),
    "agent_sessions": KindEntry(
        "hetopt.kinds.agent_sessions", generate="hetopt.kinds.agent_sessions.cli:generate_cmd"
    ),
}

_CACHE: dict[str, Kind] = {}


def kind_names() -> list[str]:
    """Names of every registered kind whose module is present."""
    return [name for name, e in REGISTRY.items() if _exists(e.module)]


def _exists(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def get_kind(name: str) -> Kind:
    """Return the :class:`~hetopt.kinds.base.Kind` registered under ``name``.

    Raises
    ------
    hetopt.errors.UnknownKindError
        No kind has that name (a :class:`~hetopt.errors.UsageError` and a ``KeyError``);
        the message lists the kinds.
    """
    if name not in _CACHE:
        if name not in kind_names():
            from ..errors import UnknownKindError

            raise UnknownKindError(
                f"unknown kind {name!r}; expected one of: {', '.join(kind_names())}"
            )
        module = importlib.import_module(REGISTRY[name].module)
        _CACHE[name] = module.KIND
    return _CACHE[name]


def cli_entries(what: str) -> dict[str, str]:
    """Command-line pieces of every present kind: ``what`` is ``"generate"`` (kind name
    with dashes -> target), ``"convert"`` or ``"commands"``."""
    out: dict[str, str] = {}
    for name in kind_names():
        e = REGISTRY[name]
        if what == "generate":
            if e.generate:
                out[name.replace("_", "-")] = e.generate
        else:
            out.update(getattr(e, what))
    return out


def readers(fmt: str) -> dict[str, str]:
    """Kind name -> ``"module:function"`` of every present kind that reads ``fmt``."""
    return {n: REGISTRY[n].readers[fmt] for n in kind_names() if fmt in REGISTRY[n].readers}


def load_target(target: str) -> Any:
    """Import ``"module:attribute"``."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def instance_from_dict(data: Mapping[str, Any], source: str | None = None) -> Any:
    """Validate a dict into the instance model its ``kind`` names.

    Raises
    ------
    InstanceError
        Naming ``source`` (if given), the field and what was expected.
    """
    if not isinstance(data, Mapping):
        raise InstanceError("expected an object with a 'kind' field", None, source)
    kind = data.get("kind")
    if kind is None:
        raise InstanceError(
            f"required field is missing; expected one of: {', '.join(kind_names())}", "kind", source
        )
    if not isinstance(kind, str) or kind not in kind_names():
        raise InstanceError(
            f"unknown kind {kind!r}; expected one of: {', '.join(kind_names())}", "kind", source
        )
    return get_kind(kind).instance_model.from_dict(data, source=source)


def read_instance(path: str | Path) -> Any:
    """Load and validate an instance file (JSON or YAML) of any kind.

    Raises
    ------
    InstanceError
        With the file, the field path and what was expected.
    """
    from ..instance import load_data

    return instance_from_dict(load_data(path), source=str(path))
