"""A small JSON Schema (draft 2020-12) validator for the keywords hetopt's published
schemas use, so the schema tests run without the ``jsonschema`` package.

:func:`validator` returns ``jsonschema.Draft202012Validator(schema).is_valid`` when that
package is installed, else :func:`is_valid` here. Unknown keywords raise, so a schema
that starts using one this subset does not know cannot pass silently.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

_ANNOTATIONS = {
    "$schema",
    "$id",
    "title",
    "description",
    "default",
    "examples",
    "format",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "discriminator",  # pydantic's OpenAPI hint beside a oneOf (the oneOf decides)
    "$defs",
}


def _type_ok(t: str, v: Any) -> bool:
    if t == "null":
        return v is None
    if t == "boolean":
        return isinstance(v, bool)
    if t == "string":
        return isinstance(v, str)
    if t == "array":
        return isinstance(v, list)
    if t == "object":
        return isinstance(v, dict)
    if isinstance(v, bool) or not isinstance(v, int | float):
        return False
    if t == "number":
        return True
    if t == "integer":  # draft 2020-12: a number with a zero fractional part
        return isinstance(v, int) or (math.isfinite(v) and float(v).is_integer())
    raise ValueError(f"unknown type {t!r}")


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


class _Validator:
    def __init__(self, root: dict[str, Any]):
        self.root = root

    def resolve(self, ref: str) -> Any:
        if not ref.startswith("#/"):
            raise ValueError(f"only local $ref are supported, got {ref!r}")
        node: Any = self.root
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def ok(self, s: Any, v: Any) -> bool:
        if s is True or s == {}:
            return True
        if s is False:
            return False
        for key in s:
            if key in _ANNOTATIONS or key in ("then", "else", "if"):
                continue
            if not self.keyword(key, s, v):
                return False
        if "if" in s:
            branch = s.get("then") if self.ok(s["if"], v) else s.get("else")
            if branch is not None and not self.ok(branch, v):
                return False
        return True

    def keyword(self, key: str, s: dict[str, Any], v: Any) -> bool:
        x = s[key]
        if key == "$ref":
            return self.ok(self.resolve(x), v)
        if key == "type":
            types = x if isinstance(x, list) else [x]
            return any(_type_ok(t, v) for t in types)
        if key == "enum":
            return any(_equal(v, e) for e in x)
        if key == "const":
            return _equal(v, x)
        if key == "anyOf":
            return any(self.ok(sub, v) for sub in x)
        if key == "oneOf":
            return sum(self.ok(sub, v) for sub in x) == 1
        if key == "allOf":
            return all(self.ok(sub, v) for sub in x)
        if key == "not":
            return not self.ok(x, v)
        number = isinstance(v, int | float) and not isinstance(v, bool)
        if key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
            if not number:
                return True
            if key == "minimum":
                return v >= x
            if key == "maximum":
                return v <= x
            if key == "exclusiveMinimum":
                return v > x
            if key == "exclusiveMaximum":
                return v < x
            q = v / x
            return math.isfinite(q) and float(q).is_integer()
        if key in ("minLength", "maxLength", "pattern"):
            if not isinstance(v, str):
                return True
            if key == "minLength":
                return len(v) >= x
            if key == "maxLength":
                return len(v) <= x
            return re.search(x, v) is not None
        if key in ("items", "prefixItems", "minItems", "maxItems", "uniqueItems"):
            if not isinstance(v, list):
                return True
            if key == "minItems":
                return len(v) >= x
            if key == "maxItems":
                return len(v) <= x
            if key == "uniqueItems":
                return not x or all(not _equal(a, b) for i, a in enumerate(v) for b in v[i + 1 :])
            if key == "prefixItems":
                return all(self.ok(sub, item) for sub, item in zip(x, v, strict=False))
            start = len(s.get("prefixItems", ()))
            return all(self.ok(x, item) for item in v[start:])
        if key in (
            "properties",
            "required",
            "additionalProperties",
            "patternProperties",
            "propertyNames",
            "minProperties",
            "maxProperties",
        ):
            if not isinstance(v, dict):
                return True
            if key == "properties":
                return all(self.ok(sub, v[k]) for k, sub in x.items() if k in v)
            if key == "required":
                return all(k in v for k in x)
            if key == "minProperties":
                return len(v) >= x
            if key == "maxProperties":
                return len(v) <= x
            if key == "propertyNames":
                return all(self.ok(x, k) for k in v)
            if key == "patternProperties":
                return all(
                    self.ok(sub, val)
                    for pat, sub in x.items()
                    for k, val in v.items()
                    if re.search(pat, k)
                )
            known = set(s.get("properties", {}))
            pats = list(s.get("patternProperties", {}))
            extra = [k for k in v if k not in known and not any(re.search(p, k) for p in pats)]
            return all(self.ok(x, v[k]) for k in extra)
        raise ValueError(f"JSON Schema keyword {key!r} is not supported by this subset")


def is_valid(schema: dict[str, Any], value: Any) -> bool:
    """Whether ``value`` (parsed JSON) is valid against ``schema``."""
    return _Validator(schema).ok(schema, value)


def validator(schema: dict[str, Any]) -> Callable[[Any], bool]:
    """``value -> bool``: the ``jsonschema`` package's validator when installed."""
    try:
        import jsonschema
    except ImportError:
        v = _Validator(schema)
        return lambda value: v.ok(schema, value)
    return jsonschema.Draft202012Validator(schema).is_valid  # type: ignore[no-any-return]
