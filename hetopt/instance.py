"""Instance files: loading, validation and clear errors.

Every instance is a JSON (or YAML) object with a ``kind`` field that selects the
pydantic model that validates it. Unknown fields are errors; every error names the
file, the field path (``jobs[3].throughput.v100``) and what was expected.
"""

from __future__ import annotations

import contextvars
import json
import math
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, model_validator
from pydantic.json_schema import DEFAULT_REF_TEMPLATE, GenerateJsonSchema, JsonSchemaMode
from pydantic_core import SchemaValidator

from . import collector
from .columns import is_columnar, list_record_model, records_from_columns, remember
from .errors import InstanceError

_FIELD_MARK = "@@"

RECORDS_ONLY: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "hetopt_records_only", default=False
)
"""Set while an instance file is validated: its list fields take records only."""
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
    ``(field path, message)``, else ``None`` (depth first, in order). Recursion stops at
    :data:`MAX_DEPTH`; a path string is built only for what it reports; records that are
    already validated models are not entered."""
    if isinstance(data, Mapping | list | tuple):
        return _scan(data, ())
    return (_path([]), _too_large()) if _huge(data) else None


def _huge(value: Any) -> bool:
    if isinstance(value, bool | np.bool_):
        return False
    if isinstance(value, int | np.integer):  # exact for integers of any size
        return abs(int(value)) > MAX_ABS
    if isinstance(value, float | np.floating):
        return math.isfinite(value) and abs(float(value)) > MAX_ABS
    return False


def _scan(value: Any, parts: tuple[Any, ...]) -> tuple[str, str] | None:
    if len(parts) >= MAX_DEPTH:
        return _path(list(parts[:3])) + "...", f"nested more than {MAX_DEPTH} levels deep"
    items = value.items() if isinstance(value, Mapping) else enumerate(value)
    hi, lo = MAX_ABS, -MAX_ABS
    for k, v in items:
        t = type(v)
        if t is float:
            if (v > hi or v < lo) and v - v == 0:  # finite and too large
                return _path([*parts, k]), _too_large()
        elif t is int:
            if v > hi or v < lo:
                return _path([*parts, k]), _too_large()
        elif t is str or t is bool or v is None:
            continue
        elif t is dict or t is list or t is tuple:
            found = _scan(v, (*parts, k))
            if found is not None:
                return found
        elif isinstance(v, BaseModel):
            continue
        elif isinstance(v, Mapping | list | tuple):
            found = _scan(v, (*parts, k))
            if found is not None:
                return found
        elif _huge(v):
            return _path([*parts, k]), _too_large()
    return None


def _too_large() -> str:
    return f"number too large (|value| > {MAX_ABS:g}); use other units"


_LENIENT_TYPES = ("int_type", "float_type", "bool_type")


def _plain(value: Any, etype: str) -> Any:
    """The plain Python value a strict field accepts for ``value``, or :data:`_KEEP`.

    numpy scalars become Python ones; a float with a zero fractional part is an integer
    where an integer is expected (JSON has one number type, and JSON Schema's
    ``integer`` accepts ``4.0``). Booleans never become numbers."""
    if isinstance(value, bool | np.bool_):
        return bool(value) if etype == "bool_type" and isinstance(value, np.bool_) else _KEEP
    if etype == "int_type":
        if isinstance(value, np.integer):
            return int(value)
        if isinstance(value, float | np.floating) and math.isfinite(value):
            return int(value) if float(value).is_integer() else _KEEP
    if etype == "float_type" and isinstance(value, np.integer | np.floating):
        return int(value) if isinstance(value, np.integer) else float(value)
    return _KEEP


_KEEP = object()


def _lenient_copy(data: Any, exc: ValidationError) -> Any:
    """``data`` with the values of ``exc``'s type errors that are numpy scalars or
    integral floats replaced by plain Python values (copying only the containers on
    the way), or ``None`` when no error is of that sort."""
    fixes = []
    for err in exc.errors(include_url=False):
        if err.get("type") not in _LENIENT_TYPES or "input" not in err:
            continue  # a real problem: reported after the others are fixed
        new = _plain(err["input"], str(err["type"]))
        if new is not _KEEP:
            fixes.append((tuple(err.get("loc", ())), err["input"], new))
    if not fixes:
        return None
    copied: dict[int, Any] = {}

    def own(container: Any) -> Any:
        if id(container) in copied:
            return copied[id(container)]
        dup = dict(container) if isinstance(container, Mapping) else list(container)
        copied[id(dup)] = dup
        copied[id(container)] = dup
        return dup

    root: Any = own(data) if isinstance(data, Mapping | list) else None
    if root is None:
        return None
    changed = False
    for loc, old, new in fixes:
        node: Any = root
        parent: Any = None
        key: Any = None
        for part in loc:  # parts that are not keys of the data are pydantic's union tags
            holder: Any = node
            if (isinstance(node, Mapping) and part in node) or (
                isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
            ):
                child = holder[part]
            else:
                continue
            if isinstance(child, Mapping | list) and child is not old:
                child = own(child)
                holder[part] = child
            node, parent, key = child, holder, part
        if parent is None or (parent[key] is not old and parent[key] != old):
            continue
        parent[key] = new
        changed = True
    return root if changed else None


def _lenient(handler: Any, data: Any) -> Any:
    """Validate with ``handler``; on type errors that are only numpy scalars or integral
    floats, validate once more with plain Python values."""
    for _ in range(3):
        try:
            return handler(data)
        except ValidationError as exc:
            fixed = _lenient_copy(data, exc)
            if fixed is None:
                raise
            data = fixed
    return handler(data)


class RecordBase(BaseModel):
    """Base of the records of an instance (a job, a client, a task, ...): strict,
    frozen, no unknown fields; numpy scalars and integral floats (``4.0`` for an
    integer) are accepted as the plain values they stand for."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    def __init__(self, /, **data: Any) -> None:
        # inside an instance, InstanceBase handles numpy scalars for its records (a
        # validator per record would cost every record of a large instance); a record
        # built on its own in Python gets the same leniency here
        _lenient(lambda d: super(RecordBase, self).__init__(**d), data)

    # records validated inside an instance go straight through pydantic (see
    # InstanceBase: a custom __init__ would be called per record and validate again)
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]


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

    @model_validator(mode="wrap")
    @classmethod
    def _plain_numbers(cls, data: Any, handler: Any) -> Any:
        """Columns for list-of-records fields (:mod:`hetopt.columns`); numpy scalars
        and integral floats (``4.0`` for an integer field) accepted as the plain Python
        values they stand for, anywhere in the instance."""
        given: dict[str, dict[str, Any]] = {}
        if isinstance(data, Mapping):
            fields = cls._record_fields()
            columnar = (
                [k for k in fields if k in data and is_columnar(data[k])]
                if not RECORDS_ONLY.get()
                else []
            )
            if columnar:
                data = dict(data)
                for name in columnar:
                    data[name], given[name] = records_from_columns(fields[name], name, data[name])
        instance = _lenient(handler, data)
        for name, arrays in given.items():
            remember(instance, name, arrays)
        return instance

    @classmethod
    def _record_fields(cls) -> dict[str, type[BaseModel]]:
        """Field name -> record model of every list-of-records field."""
        cached = cls.__dict__.get("_hetopt_record_fields")
        if cached is None:
            cached = {}
            for name, info in cls.model_fields.items():
                rec = list_record_model(info)
                if rec is not None:
                    cached[name] = rec
            type.__setattr__(cls, "_hetopt_record_fields", cached)
        return cached  # type: ignore[no-any-return]

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

    # Only keyword construction needs the error conversion above (``from_dict`` converts
    # its own). Marked as pydantic's base ``__init__`` so that ``model_validate`` does not
    # route through it: a custom ``__init__`` made pydantic validate twice per
    # ``from_dict`` (every model validator, the magnitude scan, the columnar wrap).
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str | None = None) -> Any:
        """Validate ``data`` into an instance; raise :class:`InstanceError` on bad input.

        ``source`` names the file ``data`` was read from: a file's list-of-records
        fields must be lists of records (columns are a Python API form,
        :mod:`hetopt.columns`).

        Records (no columns) of a model whose every number pydantic-core can bound
        are validated by :func:`_capped_validator`'s copy of the schema, which enforces
        :data:`MAX_ABS` itself; the Python walk of :func:`_find_huge` then runs only when
        validation fails, to name the first offender as it always has. When every record
        is a plain dict of known keys, its twin that does not scan records for unknown
        keys (:func:`_ignoring_validator`) validates instead, to the same verdict, and
        tells a kind's checks which keys the records used (:func:`record_keys`).

        Python's cyclic garbage collector is paused meanwhile
        (:func:`hetopt.collector.paused`): validating ``n`` records allocates a few ``n``
        containers, all of them kept, and the collections they would trigger (ten young
        ones per solve and a full one about every ten solves at 2,048 GPU jobs, measured)
        find nothing."""
        token = RECORDS_ONLY.set(True) if source is not None else None
        try:
            with collector.paused():
                data = dict(data)
                capped = _capped_validator(cls)
                if capped is None or any(
                    is_columnar(data[k]) for k in cls._record_fields() if k in data
                ):
                    return cls.model_validate(data)
                ignoring = _ignoring_validator(cls)
                seen = _records_known(data, ignoring[1]) if ignoring is not None else None
                context = None
                if ignoring is not None and seen is not None:
                    capped = ignoring[0]  # the same verdict, without the unknown-key scan
                    context = {_RECORD_KEYS: seen}  # for record_keys
                try:
                    return capped.validate_python(data, context=context)
                except ValidationError:
                    found = _find_huge(data)  # what the uncapped schema would have reported
                    if found is not None:
                        raise InstanceError(found[1], found[0]) from None
                    raise
        except ValidationError as exc:
            raise validation_to_instance_error(exc, source) from None
        except InstanceError as exc:
            raise exc.with_source(source) if source else exc from None
        except RecursionError:
            raise InstanceError(f"nested more than {MAX_DEPTH} levels deep", None, source) from None
        finally:
            if token is not None:
                RECORDS_ONLY.reset(token)

    @classmethod
    def model_json_schema(  # type: ignore[override]
        cls,
        by_alias: bool = True,
        ref_template: str = DEFAULT_REF_TEMPLATE,
        schema_generator: type[GenerateJsonSchema] = GenerateJsonSchema,
        mode: JsonSchemaMode = "validation",
        **kwargs: Any,
    ) -> dict[str, Any]:
        """The published JSON Schema of instance files of this kind (``hetopt schema
        KIND``): pydantic's, plus the limits hetopt enforces that a schema can state
        (:class:`hetopt.schema.InstanceJsonSchema`)."""
        if schema_generator is GenerateJsonSchema:
            from .schema import InstanceJsonSchema

            schema_generator = InstanceJsonSchema
        return super().model_json_schema(by_alias, ref_template, schema_generator, mode, **kwargs)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Any:
        """A copy, as pydantic's ``model_copy`` (``update`` is not validated: use
        :meth:`from_dict` on ``to_dict() | changes`` for a checked instance).

        What the instance computed from its fields and keeps (cached properties such as a
        kind's numpy ``arrays``) is not carried into a copy whose fields ``update``
        changes: pydantic copies it with the fields, so a copy with other jobs would
        otherwise be solved with the old jobs' arrays."""
        copied = super().model_copy(update=update, deep=deep)
        if update:
            keep = set(type(self).model_fields) | set(update)
            for key in [k for k in copied.__dict__ if k not in keep]:
                del copied.__dict__[key]
        return copied

    def to_dict(self) -> dict[str, Any]:
        """The instance as a plain dict (round-trips through :meth:`from_dict`)."""
        return self.model_dump(mode="json", exclude_none=True)

    def to_json(self, path: str | Path | None = None) -> str:
        text = json.dumps(self.to_dict(), indent=1)
        if path is not None:
            Path(path).write_text(text + "\n")
        return text


class _Uncapped(Exception):
    """A schema node through which a number could pass unbounded (see
    :func:`_capped_schema`)."""


_NO_NUMBERS = frozenset({"str", "bool", "none", "bytes"})


def _capped_validator(cls: type[InstanceBase]) -> SchemaValidator | None:
    """The validator of ``cls`` with :data:`MAX_ABS` enforced by pydantic-core on every
    number, or ``None`` when some number could escape that bound (built on first use).

    Validating records with it accepts exactly what the model's own validator accepts:
    a number beyond the bound fails a field's ``le``/``ge`` instead of
    ``_reject_huge_numbers``'s Python walk of every value (``from_dict`` then runs the
    walk to name the first offender, as before)."""
    cached = cls.__dict__.get("_hetopt_capped", _KEEP)
    if cached is _KEEP:
        schema = _capped_schema(cls.__pydantic_core_schema__)
        cached = None
        if schema is not None and cls.__pydantic_complete__:
            cached = _build_validator(schema)
        type.__setattr__(cls, "_hetopt_capped", cached)
    return cached  # type: ignore[no-any-return]


def _ignoring_validator(
    cls: type[InstanceBase],
) -> tuple[SchemaValidator, dict[str, frozenset[str]]] | None:
    """:func:`_capped_validator`'s twin whose records (the items of ``cls``'s
    list-of-records fields) ignore unknown keys instead of forbidding them, and the keys
    the records of each such field may have; ``None`` when ``cls`` has no such field
    (built on first use).

    :meth:`InstanceBase.from_dict` uses it only for data whose records are plain dicts of
    those keys (:func:`_records_known`): there pydantic-core's scan of every record's
    keys for unknown ones (forbid) finds nothing, so both validators give the same
    instance or the same errors, and the scan costs ~5 ms at 20,000 GPU jobs (measured).
    Nested models (a job's ``elastic``) and the instance itself still forbid."""
    cached = cls.__dict__.get("_hetopt_capped_ignoring", _KEEP)
    if cached is _KEEP:
        cached = None
        schema = _capped_schema(cls.__pydantic_core_schema__) if cls.__pydantic_complete__ else None
        if schema is not None:
            keys = _ignore_record_extras(schema, cls._record_fields())
            if keys:
                cached = (_build_validator(schema), keys)
        type.__setattr__(cls, "_hetopt_capped_ignoring", cached)
    return cached  # type: ignore[no-any-return]


def _ignore_record_extras(schema: Any, names: Iterable[str]) -> dict[str, frozenset[str]]:
    """Make the record model of each list-of-records field ``names`` of ``schema`` (a
    fresh :func:`_capped_schema`, changed in place; its ``config`` dicts are shared with
    the model's own schema, so they are replaced, not changed) ignore unknown keys; the
    keys each changed field's records may have. A record model whose fields have
    aliases, or a field whose schema is not a list of models, is left as it is."""
    top = _top_model(schema)["schema"]
    fields = top.get("fields", {}) if top.get("type") == "model-fields" else {}
    out: dict[str, frozenset[str]] = {}
    for name in names:
        if name not in fields:
            continue
        node = fields[name]["schema"]
        while node.get("type") in ("default", "nullable", "function-after"):
            node = node["schema"]
        if node.get("type") != "list":
            continue
        record = node["items_schema"]
        while record.get("type") == "function-after":
            record = record["schema"]
        inner = record.get("schema") or {}
        if record.get("type") != "model" or inner.get("type") != "model-fields":
            continue
        if any("validation_alias" in f for f in inner["fields"].values()):
            continue  # a record's keys are not then its field names
        record["config"] = {**(record.get("config") or {}), "extra_fields_behavior": "ignore"}
        inner["extra_behavior"] = "ignore"
        out[name] = frozenset(inner["fields"])
    return out


def _records_known(
    data: Mapping[str, Any], keys: dict[str, frozenset[str]]
) -> dict[str, frozenset[str]] | None:
    """The keys the records of each field ``keys`` names use, when every such record
    is a plain ``dict`` whose keys are all among that field's (absent and ``None``
    fields have no records); ``None`` otherwise.

    Set operations in C: ~1.5 ms at 20,000 GPU jobs (measured), against the ~5 ms the
    ignoring validator saves (:func:`_ignoring_validator`). A key that is equal to a
    field name by ``==`` and ``hash`` is taken for it: ``str`` and its subclasses that
    keep ``str``'s comparison are judged by their text alike."""
    seen: dict[str, frozenset[str]] = {}
    for name, allowed in keys.items():
        records = data.get(name)
        if records is None:
            seen[name] = frozenset()
            continue
        if type(records) is not list or not {dict}.issuperset(map(type, records)):
            return None
        used = frozenset().union(*records)
        if not allowed.issuperset(used):
            return None
        seen[name] = used
    return seen


_RECORD_KEYS = "hetopt_record_keys"


def record_keys(info: ValidationInfo, field: str) -> frozenset[str] | None:
    """In a kind's ``after`` model validator (one that takes ``info``): the keys that
    any record of the list-of-records ``field`` had, when :meth:`InstanceBase.from_dict`
    validated records that were all plain dicts of known keys, else ``None`` (other
    input, or another way in). A field no record names holds its default in every
    record, so a check of it can be skipped (``gpu_cluster``: ``elastic``)."""
    context = info.context
    if not isinstance(context, dict):
        return None
    seen = context.get(_RECORD_KEYS)
    return seen.get(field) if isinstance(seen, dict) else None


_BUILD_LOCK = threading.Lock()


def _build_validator(schema: dict[str, Any]) -> SchemaValidator:
    """A validator of ``schema`` that validates every record with ``schema``'s own copy
    of the record's schema, or ``None`` when pydantic-core would not.

    pydantic-core validates a record model with the validator its class already has (a
    "prebuilt" validator, found through the class's ``__pydantic_complete__``) instead of
    the schema it is given, which would drop the bounds: the classes read as incomplete
    while the validator is built (tests/contracts/test_capped_validation_kinds.py
    checks that no record of a kind delegates)."""
    classes: list[type] = []
    _model_classes(schema, classes)
    with _BUILD_LOCK:
        saved = [(c, c.__dict__.get("__pydantic_complete__", _KEEP)) for c in classes]
        try:
            for c, _ in saved:
                type.__setattr__(c, "__pydantic_complete__", False)
            validator = SchemaValidator(schema, _top_model(schema).get("config"))
        finally:
            for c, was in saved:
                if was is _KEEP:
                    type.__delattr__(c, "__pydantic_complete__")
                else:
                    type.__setattr__(c, "__pydantic_complete__", was)
    return validator


def _model_classes(node: Any, out: list[type]) -> None:
    if isinstance(node, dict):
        if node.get("type") == "model" and node.get("cls") not in out:
            out.append(node["cls"])
        for key, child in node.items():
            if key not in ("cls", "function", "metadata", "serialization", "default"):
                _model_classes(child, out)
    elif isinstance(node, list | tuple):
        for child in node:
            _model_classes(child, out)


def _top_model(schema: Any) -> dict[str, Any]:
    while schema.get("type") != "model":
        schema = schema["schema"]
    return schema  # type: ignore[no-any-return]


def _capped_schema(schema: Any) -> Any:
    """A copy of an instance model's core schema in which every ``int``/``float`` has
    ``ge >= -MAX_ABS`` and ``le <= MAX_ABS`` and the magnitude walk
    (``_reject_huge_numbers``) is gone; ``None`` when that would not be exact.

    Exact means: data the copy accepts is data the walk finds nothing in, and the
    reverse. So every number of an accepted instance must reach one of those ``int`` or
    ``float`` nodes unchanged: the models strict (no strings read as numbers) with
    ``allow_inf_nan=False`` (infinities are not "too large"), unknown fields forbidden
    (ignored ones would go unchecked), no validator of a kind's own that sees the raw
    data (``before``, ``wrap`` or ``plain``), no free-form (``Any``) value, no recursive
    definitions, and no nesting the walk would call too deep."""
    try:
        return _cap_node(schema, strict=False, inf_nan=True, level=0, top=True)
    except _Uncapped:
        return None


def _cap_node(node: Any, *, strict: bool, inf_nan: bool, level: int, top: bool = False) -> Any:
    if not isinstance(node, dict):
        raise _Uncapped
    kind = node.get("type")
    out = dict(node)

    def sub(key: str, child: Any = None, **kw: Any) -> Any:
        args = {"strict": strict, "inf_nan": inf_nan, "level": level, **kw}
        return _cap_node(node[key] if child is None else child, **args)

    if kind in ("int", "float"):
        if not node.get("strict", strict):
            raise _Uncapped  # lax: "1e13" would be a number the walk never saw
        if kind == "float" and node.get("allow_inf_nan", inf_nan):
            raise _Uncapped  # inf would fail le, and the walk accepts it
        hi = math.floor(MAX_ABS) if kind == "int" else MAX_ABS
        out["le"] = min(node.get("le", hi), hi)
        out["ge"] = max(node.get("ge", -hi), -hi)
        return out
    if kind in _NO_NUMBERS:
        if node.get("coerce_numbers_to_str"):
            raise _Uncapped
        return out
    if kind == "literal":
        if any(_huge(v) for v in node.get("expected", ())):
            raise _Uncapped
        return out
    if kind == "model":
        config = node.get("config") or {}
        if (
            config.get("extra_fields_behavior") != "forbid"
            or node.get("custom_init")
            or node.get("post_init")
            or node.get("root_model")
        ):
            raise _Uncapped
        if level >= MAX_DEPTH - 1:
            raise _Uncapped
        out["schema"] = sub(
            "schema",
            strict=config.get("strict", False),
            inf_nan=config.get("allow_inf_nan", True),
            top=top,
        )
        return out
    if kind == "model-fields":
        if node.get("extras_schema") is not None or node.get("extra_behavior", "forbid") != (
            "forbid"
        ):
            raise _Uncapped
        out["fields"] = {
            name: sub("schema", field, level=level + 1) for name, field in node["fields"].items()
        }
        return out
    if kind == "function-after":  # sees validated values only
        out["schema"] = sub("schema", top=top)
        return out
    if kind in ("model-field", "nullable"):
        out["schema"] = sub("schema")
        return out
    if kind == "default":
        if node.get("validate_default"):
            raise _Uncapped
        out["schema"] = sub("schema")
        return out
    if kind == "function-before" and top and _is(node, "_reject_huge_numbers"):
        return sub("schema", top=False)  # pydantic-core now does what it did
    if kind == "function-wrap" and top and _is(node, "_plain_numbers"):
        out["schema"] = sub("schema", top=True)
        return out
    if kind in ("list", "set", "frozenset"):
        if "items_schema" not in node or level >= MAX_DEPTH - 1:
            raise _Uncapped
        out["items_schema"] = sub("items_schema", level=level + 1)
        return out
    if kind == "dict":
        if "values_schema" not in node or level >= MAX_DEPTH - 1:
            raise _Uncapped
        out["values_schema"] = sub("values_schema", level=level + 1)  # keys are not walked
        return out
    if kind == "union":
        out["choices"] = [
            (sub("", c[0]), *c[1:]) if isinstance(c, tuple) else sub("", c) for c in node["choices"]
        ]
        return out
    if kind == "tagged-union":
        out["choices"] = {tag: sub("", c) for tag, c in node["choices"].items()}
        return out
    raise _Uncapped  # any, definitions, plain/before/wrap validators, ...


def _is(node: dict[str, Any], name: str) -> bool:
    """Whether ``node`` calls :class:`InstanceBase`'s validator ``name``."""
    func = (node.get("function") or {}).get("function")
    own = getattr(InstanceBase, name)
    return getattr(func, "__func__", None) is own.__func__


def fail(field: str, message: str) -> ValueError:
    """Build an error for a cross-field check inside a pydantic validator.

    ``raise fail("jobs[3].id", "duplicate job id '7'")`` keeps the field path through
    pydantic's wrapping, so the final :class:`InstanceError` names it.
    """
    return ValueError(f"{_FIELD_MARK}{field}{_FIELD_MARK}{message}")


def failure_to_instance_error(exc: ValueError, source: str | None = None) -> InstanceError:
    """The :class:`InstanceError` of a :func:`fail` error raised outside pydantic (its
    field path and message); another ``ValueError`` is re-raised."""
    text = str(exc)
    if not text.startswith(_FIELD_MARK):
        raise exc
    _, field, message = text.split(_FIELD_MARK, 2)
    return InstanceError(message, field or None, source)


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
    where = tuple(first.get("loc", ()))
    key = ""
    if len(where) >= 2 and where[-1] == "[key]":
        # a mapping's key itself is invalid (pydantic's location: the key, then "[key]"):
        # the mapping's path, and which key, not "workers[5].[key]"
        key, where = f"key {where[-2]!r}: ", where[:-2]
    path = _loc_to_path(where)
    sub, msg = _message(exc)
    msg = key + msg
    if sub:
        path = f"{path}.{sub}" if path else sub
    return InstanceError(msg, path or None, source)


def _message(exc: ValidationError) -> tuple[str, str]:
    """The first problem of ``exc`` as ``(sub-path, message)``: the sub-path a
    :func:`fail` error names below the error's location (else empty), and one line (with
    a count of the other problems)."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    sub = ""
    msg = str(first.get("msg", "invalid value"))
    if _FIELD_MARK in msg:
        _, sub, msg = msg.split(_FIELD_MARK, 2)
    else:
        etype = first.get("type", "")
        if etype == "extra_forbidden":
            msg = "unknown field (check the spelling; unknown fields are not ignored)"
        elif etype == "missing":
            msg = "required field is missing"
        elif "input" in first and etype not in ("value_error",):
            msg = f"{msg}, got {_shown(first['input'])}"
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
    if len(errors) > 1:
        msg += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return sub, msg


def _shown(value: Any) -> str:
    """``value`` as an error message shows it: its repr, cut at 60 characters; a value
    whose repr takes several lines (a pandas ``Series``, a large array) by its type and
    length (``a pandas Series of 1000 values``), so the message stays one line."""
    shown = repr(value)
    if "\n" in shown:
        cls = type(value)
        name = f"{cls.__module__.split('.')[0]} {cls.__name__}"
        try:
            return f"a {name} of {len(value)} values"
        except TypeError:
            return f"a {name}"
    return shown if len(shown) <= 60 else shown[:57] + "..."


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


def _json_type(value: Any) -> str:
    """What a parsed file's top level is, in the file's terms (``null``, an array, ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__


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
            f"expected a JSON object with a 'kind' field, got {_json_type(data)}", None, src
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
