"""Instance files: loading, validation and clear errors.

Every instance is a JSON (or YAML) object with a ``kind`` field that selects the
pydantic model that validates it. Unknown fields are errors; every error names the
file, the field path (``jobs[3].throughput.v100``) and what was expected.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from .errors import InstanceError

_FIELD_MARK = "@@"
MAX_ABS = 1e12
"""Largest magnitude a number in an instance may have (HiGHS treats 1e20 as infinite and
rejects matrix coefficients from 1e15 on)."""


MAX_DEPTH = 64
"""Deepest nesting of objects and lists an instance may have."""

MAX_FILE_BYTES = 2**30
"""Largest instance or options file read (1 GiB): a device such as ``/dev/zero`` or a
wrong file is refused instead of filling memory."""


def _path(parts: list[Any]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return out or "(value)"


def _find_huge(data: Any) -> tuple[str, str] | None:
    """The first number beyond :data:`MAX_ABS` or nesting beyond :data:`MAX_DEPTH`:
    ``(field path, message)``, else ``None``. A fast scan (no paths, scalars never
    stacked) answers the common case; only a bad instance is walked again for the path."""
    if _clean(data):
        return None
    return _locate(data)


def _huge_number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):  # exact for integers of any size
        return abs(value) > MAX_ABS
    if isinstance(value, float):
        return math.isfinite(value) and abs(value) > MAX_ABS
    return False


def _clean(data: Any) -> bool:
    """No number beyond :data:`MAX_ABS` and no nesting beyond :data:`MAX_DEPTH`."""
    lim = MAX_ABS
    stack: list[tuple[Any, int]] = [(data, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        value, depth = pop()
        if isinstance(value, Mapping):
            values: Iterable[Any] = value.values()
        elif isinstance(value, list | tuple):
            values = value
        else:
            if _huge_number(value):
                return False
            continue
        if depth >= MAX_DEPTH:
            return False
        for v in values:
            t = type(v)
            if t is str or v is None or t is bool:
                continue
            if t is float:
                if -lim <= v <= lim or v != v or v in (math.inf, -math.inf):
                    continue
                return False
            if t is int:
                if -lim <= v <= lim:
                    continue
                return False
            push((v, depth + 1))
    return True


def _locate(data: Any) -> tuple[str, str] | None:
    """What :func:`_clean` refused, with its field path (the slow walk)."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    while stack:
        value, parts = stack.pop()
        if isinstance(value, bool) or value is None or isinstance(value, str):
            continue
        if isinstance(value, int | float):
            if _huge_number(value):
                return _path(list(parts)), _too_large()
            continue
        if len(parts) >= MAX_DEPTH and isinstance(value, Mapping | list | tuple):
            return _path(list(parts[:3])) + "...", f"nested more than {MAX_DEPTH} levels deep"
        if isinstance(value, Mapping):
            items = list(value.items())
            stack.extend((v, (*parts, k)) for k, v in reversed(items))
        elif isinstance(value, list | tuple):
            stack.extend((v, (*parts, i)) for i, v in reversed(list(enumerate(value))))
    return None


def _too_large() -> str:
    return f"number too large (|value| > {MAX_ABS:g}); use other units"


class InstanceBase(BaseModel):
    """Base of every kind's instance model: strict, frozen, no unknown fields.

    Construct from Python with keyword arguments or :meth:`from_dict`; either way a
    bad value raises :class:`~hetopt.InstanceError` naming the field.
    """

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        strict=True,
        allow_inf_nan=False,
        arbitrary_types_allowed=False,
    )

    @model_validator(mode="before")
    @classmethod
    def _reject_huge_numbers(cls, data: Any) -> Any:
        """Numbers beyond ``MAX_ABS`` would reach HiGHS as coefficients it rejects (or
        drown its tolerances); name the field instead of failing inside the solver."""
        found = _find_huge(data)
        if found is not None:
            raise fail(*found)
        return data

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise validation_to_instance_error(exc, None) from None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str | None = None) -> Any:
        """Validate ``data`` into an instance; raise :class:`InstanceError` on bad input."""
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            raise validation_to_instance_error(exc, source) from None
        except InstanceError as exc:
            raise exc.with_source(source) if source else exc from None
        except RecursionError:
            raise InstanceError(f"nested more than {MAX_DEPTH} levels deep", None, source) from None

    def to_dict(self) -> dict[str, Any]:
        """The instance as a plain dict (round-trips through :meth:`from_dict`)."""
        return self.model_dump(mode="json", exclude_none=True)

    def to_json(self, path: str | Path | None = None) -> str:
        text = json.dumps(self.to_dict(), indent=1)
        if path is not None:
            Path(path).write_text(text + "\n")
        return text


def fail(field: str, message: str) -> ValueError:
    """Build an error for a cross-field check inside a pydantic validator.

    ``raise fail("jobs[3].id", "duplicate job id '7'")`` keeps the field path through
    pydantic's wrapping, so the final :class:`InstanceError` names it.
    """
    return ValueError(f"{_FIELD_MARK}{field}{_FIELD_MARK}{message}")


def _loc_to_path(loc: Iterable[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def validation_to_instance_error(exc: ValidationError, source: str | None) -> InstanceError:
    """Turn pydantic's error into one clear :class:`InstanceError` (the first problem,
    with a count of the others)."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    inner = (first.get("ctx") or {}).get("error")
    if isinstance(inner, InstanceError):
        # already converted by InstanceBase.__init__ (pydantic calls it for the
        # after-validators of a model with a custom __init__): keep its field path
        err = inner.with_source(source) if source else inner
        loc = _loc_to_path(first.get("loc", ()))
        if loc and err.field:
            err = InstanceError(err.message, f"{loc}.{err.field}", err.source)
        return err
    path = _loc_to_path(first.get("loc", ()))
    msg = str(first.get("msg", "invalid value"))
    if _FIELD_MARK in msg:
        _, sub, msg = msg.split(_FIELD_MARK, 2)
        path = f"{path}.{sub}" if path and sub else (sub or path)
    else:
        etype = first.get("type", "")
        if etype == "extra_forbidden":
            msg = "unknown field (check the spelling; unknown fields are not ignored)"
        elif etype == "missing":
            msg = "required field is missing"
        elif "input" in first and etype not in ("value_error",):
            shown = repr(first["input"])
            if len(shown) > 60:
                shown = shown[:57] + "..."
            msg = f"{msg}, got {shown}"
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
    if len(errors) > 1:
        msg += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return InstanceError(msg, path or None, source)


class FileProblem(ValueError):
    """A file cannot be read as text (missing, a directory, binary, too large, ...)."""


def read_text(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of ``path``, refusing what is not a text file of sane size.

    Raises
    ------
    FileProblem
        With a message that does not repeat the file name.
    """
    p = Path(path)
    try:
        if p.is_dir():
            raise FileProblem("is a directory, expected a file")
        with open(p, "rb") as fh:
            head = fh.read(65536)
            if b"\x00" in head:
                raise FileProblem("not a text file (it contains NUL bytes)")
            rest = fh.read(max_bytes + 1 - len(head)) if len(head) == 65536 else b""
    except FileNotFoundError:
        raise FileProblem("no such file") from None
    except IsADirectoryError:
        raise FileProblem("is a directory, expected a file") from None
    except PermissionError:
        raise FileProblem("permission denied") from None
    except OSError as exc:
        raise FileProblem(f"cannot read file: {exc.strerror or exc}") from None
    raw = head + rest
    if len(raw) > max_bytes:
        raise FileProblem(f"larger than {max_bytes / 2**20:.0f} MiB: not an instance file")
    if b"\x00" in rest:
        raise FileProblem("not a text file (it contains NUL bytes)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise FileProblem("not a text file (it is not UTF-8)") from None


def load_data(path: str | Path) -> dict[str, Any]:
    """Read a JSON or YAML instance file into a dict (no validation beyond syntax).

    Duplicate keys, nesting deeper than :data:`MAX_DEPTH`, integers of thousands of
    digits, YAML aliases that expand to huge documents, binary and oversized files are
    all one-line :class:`InstanceError` s naming the file.
    """
    p = Path(path)
    src = str(p)
    try:
        text = read_text(p)
    except FileProblem as exc:
        msg = str(exc)
        if msg.startswith("not a text file"):
            msg += "; expected JSON or YAML"
        if msg.startswith("is a directory"):
            msg = "is a directory, expected an instance file"
        raise InstanceError(msg, None, src) from None
    if p.suffix.lower() in (".yaml", ".yml"):
        data = _load_yaml(text, src)
    else:
        try:
            data = json.loads(
                text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates
            )
        except json.JSONDecodeError as exc:
            raise InstanceError(
                f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}", None, src
            ) from None
        except RecursionError:
            raise InstanceError(f"nested more than {MAX_DEPTH} levels deep", None, src) from None
        except ValueError as exc:
            msg = str(exc)
            if "digits" in msg and "integer" in msg:
                msg = "an integer has thousands of digits"
            raise InstanceError(msg, None, src) from None
    if not isinstance(data, dict):
        raise InstanceError(
            f"expected a JSON object with a 'kind' field, got {type(data).__name__}", None, src
        )
    found = _find_huge(data)
    if found is not None and found[1].startswith("nested"):
        raise InstanceError(found[1], found[0], src)
    return data


MAX_YAML_EXPANSION = 1_000_000
"""Most values a YAML document's aliases may expand to beyond its own nodes."""


def _load_yaml(text: str, src: str) -> Any:
    try:
        import yaml
    except ImportError:
        raise InstanceError(
            "YAML instances need PyYAML: pip install 'hetopt[yaml]'", None, src
        ) from None

    class Loader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                line = key_node.start_mark.line + 1
                if isinstance(key, str | int | float | bool) and key in seen:
                    raise _YamlDuplicate(
                        f"not valid YAML: the key {key!r} appears twice in one mapping "
                        f"(lines {seen[key]} and {line})"
                    )
                if isinstance(key, str | int | float | bool):
                    seen[key] = line
            return super().construct_mapping(node, deep=deep)

    loader = Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        return loader.construct_document(node)
    except _YamlDuplicate as exc:
        raise InstanceError(str(exc), None, src) from None
    except _YamlBomb as exc:
        raise InstanceError(str(exc), None, src) from None
    except RecursionError:
        raise InstanceError(f"nested more than {MAX_DEPTH} levels deep", None, src) from None
    except yaml.YAMLError as exc:
        where = ""
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f" at line {mark.line + 1}, column {mark.column + 1}"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InstanceError(f"not valid YAML: {problem}{where}", None, src) from None
    finally:
        loader.dispose()


class _YamlDuplicate(ValueError):
    pass


class _YamlBomb(ValueError):
    pass


def _check_expansion(root: Any) -> None:
    """Refuse a YAML node graph whose aliases expand to more than
    :data:`MAX_YAML_EXPANSION` extra values (a "billion laughs" document)."""
    import yaml

    size: dict[int, int] = {}
    open_: set[int] = set()
    distinct = 0
    stack = [(root, False)]
    while stack:  # post-order without recursion
        node, done = stack.pop()
        if id(node) in size:
            continue
        if not done and id(node) in open_:
            raise _YamlBomb("a YAML alias refers to itself (a cycle)")
        if done:
            total = 1
            if isinstance(node, yaml.MappingNode):
                total += sum(size[id(k)] + size[id(v)] for k, v in node.value)
            elif isinstance(node, yaml.SequenceNode):
                total += sum(size[id(v)] for v in node.value)
            size[id(node)] = total
            distinct += 1
            if total - distinct > MAX_YAML_EXPANSION:
                raise _YamlBomb(
                    f"YAML aliases expand to more than "
                    f"{MAX_YAML_EXPANSION:,} values; write the data out"
                )
            continue
        stack.append((node, True))
        open_.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                stack.extend(((v, False), (k, False)))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((v, False) for v in node.value)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"not valid JSON: the key {key!r} appears twice in one object")
        out[key] = value
    return out


def _reject_constant(name: str) -> float:
    raise ValueError(f"not valid JSON: {name} is not a number JSON allows")
