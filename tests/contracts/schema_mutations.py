"""Seeded single-field mutations of instance dicts, and how hetopt and the published
JSON Schema judge each one (used by ``test_instance_schema.py``)."""

from __future__ import annotations

import copy
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hetopt
from hetopt.errors import InstanceError
from hetopt.kinds import get_kind, instance_from_dict

ROOT = Path(__file__).resolve().parents[2]


def shipped() -> list[tuple[str, dict[str, Any]]]:
    """(label, data) of every shipped instance of every kind present (small files)."""
    out = []
    kinds = set(hetopt.kind_names())
    for path in sorted((ROOT / "instances").rglob("*.json")):
        if path.stat().st_size > 200_000:
            continue
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and data.get("kind") in kinds:
            out.append((str(path.relative_to(ROOT)), data))
    return out


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:3]):  # the first few records are enough
            yield from _leaves(v, (*path, i))


def _get(data: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        data = data[p]
    return data


_DELETE = object()


def _replacements(value: Any) -> list[Any]:
    if isinstance(value, bool):
        return [1, "true", None]
    if isinstance(value, int | float):
        out = [-1, 0, 4.5, 1e13, -1e13, 2**41, "7", True, None, []]
        if isinstance(value, int):
            out.append(float(value))
        return out
    if isinstance(value, str):
        return ["", 7, None, "zz_not_a_name", True]
    if isinstance(value, list):
        return [[], {}, "x", None, [None]]
    if isinstance(value, dict):
        return [{}, [], None, "x", {"zz_unknown": 1}]
    return ["x"]


@dataclass(frozen=True)
class Mutation:
    label: str
    path: tuple[Any, ...]
    change: str
    data: dict[str, Any]


def mutations(seed: int = 0, per_instance: int = 60) -> list[Mutation]:
    """``per_instance`` seeded single-field mutations of every shipped instance: a value
    replaced, a field deleted, an unknown field added."""
    rng = random.Random(seed)
    out = []
    for label, data in shipped():
        paths = [p for p in _leaves(data) if p]
        options: list[tuple[tuple[Any, ...], Any]] = []
        for p in paths:
            v = _get(data, p)
            options += [(p, r) for r in _replacements(v)]
            if isinstance(p[-1], str):
                options.append((p, _DELETE))
        for p in [(), *[q for q in paths if isinstance(_get(data, q), dict)]]:
            options.append(((*p, "zz_unknown_field"), 1))
        options += [(("kind",), _DELETE), (("kind",), "nope"), (("objective",), "nope")]
        rng.shuffle(options)
        for p, r in options[:per_instance]:
            d = copy.deepcopy(data)
            parent = _get(d, p[:-1])
            if r is _DELETE:
                if p[-1] not in parent:
                    continue
                del parent[p[-1]]
                change = "delete"
            else:
                if isinstance(parent, list) and p[-1] >= len(parent):
                    continue
                parent[p[-1]] = r
                change = f"= {r!r}"
            out.append(Mutation(label, p, change, d))
    return out


SCHEMA_MESSAGES = re.compile(
    r"(^|: )(Input should be |required field is missing|unknown field |List should have |"
    r"String should have |Dictionary should have |number too large|unknown objective |"
    r"empty objective|unknown kind )"
)
"""Messages of the checks a JSON Schema can state: pydantic's type, range, length,
literal and required errors, unknown fields, the magnitude cap, kind and objective
names. Every other message is a cross-field check (ids, references, quotas, ...)."""


def hetopt_verdict(data: dict[str, Any]) -> tuple[bool, bool, str]:
    """(rejected, for a reason a schema can state, the message)."""
    try:
        inst = instance_from_dict(data)
        get_kind(inst.kind).resolve_objective(inst, None)
    except InstanceError as exc:
        msg = str(exc)
        return True, SCHEMA_MESSAGES.search(msg) is not None, msg
    return False, False, ""
