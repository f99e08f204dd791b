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


def _find_huge(data: Any, path: str) -> str | None:
    if isinstance(data, bool):
        return None
    if isinstance(data, int | float):
        return path or "(value)" if math.isfinite(data) and abs(data) > MAX_ABS else None
    if isinstance(data, Mapping):
        for k, v in data.items():
            found = _find_huge(v, f"{path}.{k}" if path else str(k))
            if found is not None:
                return found
    elif isinstance(data, list | tuple):
        for i, v in enumerate(data):
            found = _find_huge(v, f"{path}[{i}]")
            if found is not None:
                return found
    return None


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
        path = _find_huge(data, "")
        if path is not None:
            raise fail(path, f"number too large (|value| > {MAX_ABS:g}); use other units")
        return data

    def __init__(self, **data: Any) -> None:
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


def load_data(path: str | Path) -> dict[str, Any]:
    """Read a JSON or YAML instance file into a dict (no validation beyond syntax)."""
    p = Path(path)
    src = str(p)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise InstanceError("no such file", None, src) from None
    except IsADirectoryError:
        raise InstanceError("is a directory, expected an instance file", None, src) from None
    except UnicodeDecodeError:
        raise InstanceError("not a text file (expected JSON or YAML)", None, src) from None
    except OSError as exc:
        raise InstanceError(f"cannot read file: {exc.strerror}", None, src) from None
    if p.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise InstanceError(
                "YAML instances need PyYAML: pip install 'hetopt[yaml]'", None, src
            ) from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            where = ""
            mark = getattr(exc, "problem_mark", None)
            if mark is not None:
                where = f" at line {mark.line + 1}, column {mark.column + 1}"
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise InstanceError(f"not valid YAML: {problem}{where}", None, src) from None
    else:
        try:
            data = json.loads(
                text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates
            )
        except json.JSONDecodeError as exc:
            raise InstanceError(
                f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}", None, src
            ) from None
        except ValueError as exc:
            raise InstanceError(str(exc), None, src) from None
    if not isinstance(data, dict):
        raise InstanceError(
            f"expected a JSON object with a 'kind' field, got {type(data).__name__}", None, src
        )
    return data


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"not valid JSON: the key {key!r} appears twice in one object")
        out[key] = value
    return out


def _reject_constant(name: str) -> float:
    raise ValueError(f"not valid JSON: {name} is not a number JSON allows")
