"""Columnar input: a list-of-records field given as columns.

A field holding a list of records (``jobs``, ``clients``, ``tasks``, ``programs``, ...)
also accepts, through the Python API, a pandas ``DataFrame`` or a mapping of
equal-length arrays (one per record field)::

    hetopt.solve({"kind": "client_selection", "round_deadline_s": 300,
                  "clients": {"id": ids, "ready_s": ready, "upload_s": upload}})

The columns are validated column by column with numpy, with the same rules and the
same field-path errors as records (``clients[3].ready_s: Input should be greater than
or equal to 0, got -1.0``): a column that passes the vectorised checks is accepted as a
whole; any other column is validated value by value by pydantic, exactly as records
are. Fields left out take their defaults; in a column, a missing value (``None``, NaN,
``pd.NA``) of an optional field is ``null``. :func:`columns_of` gives the validated
columns back as numpy arrays (kinds use them for their numpy views).
"""

from __future__ import annotations

import types
import typing
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import annotated_types as at
import numpy as np
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from . import collector

__all__ = ["columns_of", "is_columnar", "list_record_model", "records_from_columns"]


def is_columnar(value: Any) -> bool:
    """Whether ``value`` is columns (a DataFrame or a mapping of arrays), not records."""
    if isinstance(value, Mapping):
        return len(value) > 0  # {} is no columns: the records path reports the type
    cls = type(value)
    return cls.__name__ == "DataFrame" and cls.__module__.startswith("pandas")


def list_record_model(field: FieldInfo) -> type[BaseModel] | None:
    """The record model of a ``list[Record]`` field (``None`` for other fields)."""
    ann = _strip(field.annotation)[0]
    if typing.get_origin(ann) is list:
        (item,) = typing.get_args(ann) or (None,)
        item = _strip(item)[0]
        if isinstance(item, type) and issubclass(item, BaseModel):
            return item
    return None


def _strip(ann: Any) -> tuple[Any, list[Any]]:
    """``ann`` without ``Annotated`` wrappers, and the metadata they carried."""
    meta: list[Any] = []
    while typing.get_origin(ann) is typing.Annotated:
        args = typing.get_args(ann)
        ann, extra = args[0], args[1:]
        for m in extra:
            meta.extend(m.metadata if isinstance(m, FieldInfo) else [m])
    return ann, meta


def _optional(ann: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(ann)
    if origin is typing.Union or origin is types.UnionType:
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(ann)) == 2:
            return args[0], True
    return ann, False


# --------------------------------------------------------------------------- columns
@dataclass(frozen=True)
class _Spec:
    """What a column of one record field must hold (a vectorised check's view)."""

    base: Any  # float, int, bool, str, ("literal", values) or None (no fast check)
    optional: bool
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    min_len: int | None = None
    max_len: int | None = None


def _spec(field: FieldInfo) -> _Spec:
    ann, meta = _strip(field.annotation)
    ann, optional = _optional(ann)
    ann, inner = _strip(ann)
    meta = [*field.metadata, *meta, *inner]
    base: Any = None
    if ann in (float, int, bool, str):
        base = ann
    elif typing.get_origin(ann) is Literal:
        values = typing.get_args(ann)
        if all(isinstance(v, str) for v in values):
            base = ("literal", frozenset(values))
    bounds: dict[str, Any] = {}
    for m in meta:
        if isinstance(m, at.Ge):
            bounds["ge"] = m.ge
        elif isinstance(m, at.Gt):
            bounds["gt"] = m.gt
        elif isinstance(m, at.Le):
            bounds["le"] = m.le
        elif isinstance(m, at.Lt):
            bounds["lt"] = m.lt
        elif isinstance(m, at.MinLen):
            bounds["min_len"] = m.min_length
        elif isinstance(m, at.MaxLen):
            bounds["max_len"] = m.max_length
        elif isinstance(m, at.Len):
            bounds["min_len"], bounds["max_len"] = m.min_length, m.max_length
        else:  # a constraint the fast check does not know: pydantic checks the column
            base = None
    return _Spec(base, optional, **bounds)


def _missing(arr: np.ndarray) -> np.ndarray:
    """Where an object/float column holds a missing value (None, NaN, pd.NA)."""
    if arr.dtype.kind == "f":
        return np.isnan(arr)
    if arr.dtype.kind != "O":
        return np.zeros(len(arr), dtype=bool)
    import pandas as pd

    return np.asarray(pd.isna(arr), dtype=bool)


def _fast(spec: _Spec, arr: np.ndarray) -> list[Any] | None:
    """The column's plain Python values when the vectorised checks accept it, else
    ``None`` (pydantic then validates it value by value). Never accepts what pydantic
    would refuse."""
    from .instance import MAX_ABS

    if spec.base is None:
        return None
    miss = _missing(arr) if spec.optional else None
    if miss is not None and miss.any():
        if miss.all():
            return [None] * len(arr)
        present = arr[~miss]
        vals = _fast(_Spec(**{**spec.__dict__, "optional": False}), present)
        if vals is None:
            return None
        out: list[Any] = [None] * len(arr)
        for i, v in zip(np.flatnonzero(~miss).tolist(), vals, strict=True):
            out[i] = v
        return out
    kind = arr.dtype.kind
    if spec.base in (float, int):
        if kind not in "iuf":
            return None
        if kind == "f":
            if not np.isfinite(arr).all():
                return None
            if spec.base is int and not np.all(arr == np.round(arr)):
                return None
        if len(arr) and not _bounded(spec, arr, MAX_ABS):
            return None
        if spec.base is float:
            return arr.astype(float).tolist()  # type: ignore[no-any-return]
        return arr.astype(np.int64).tolist()  # type: ignore[no-any-return]
    if spec.base is bool:
        return arr.tolist() if kind == "b" else None  # type: ignore[no-any-return]
    # strings and string literals
    if kind == "U":
        vals = arr.tolist()
    elif kind == "O":
        vals = arr.tolist()
        if not all(type(v) is str for v in vals):
            return None
    else:
        return None
    if spec.min_len is not None or spec.max_len is not None:
        lens = np.fromiter(map(len, vals), dtype=np.int64, count=len(vals))
        if spec.min_len is not None and (lens < spec.min_len).any():
            return None
        if spec.max_len is not None and (lens > spec.max_len).any():
            return None
    if isinstance(spec.base, tuple) and not set(vals) <= spec.base[1]:
        return None
    return vals  # type: ignore[no-any-return]


def _bounded(spec: _Spec, arr: np.ndarray, cap: float) -> bool:
    lo, hi = float(arr.min()), float(arr.max())
    if hi > cap or lo < -cap:
        return False
    if spec.ge is not None and lo < spec.ge:
        return False
    if spec.gt is not None and lo <= spec.gt:
        return False
    if spec.le is not None and hi > spec.le:
        return False
    return not (spec.lt is not None and hi >= spec.lt)


def _as_array(values: Any) -> np.ndarray:
    if isinstance(values, np.ndarray):
        return values if values.ndim == 1 else _object_array(list(values))
    to_numpy = getattr(values, "to_numpy", None)
    if to_numpy is not None:  # a pandas Series / Index
        arr = np.asarray(to_numpy())
        if arr.dtype.kind not in "biufUO":
            arr = np.asarray(values.astype(object).to_numpy())
        return arr
    vals = list(values)
    arr = np.asarray(vals) if vals and _homogeneous(vals) else _object_array(vals)
    return arr if arr.ndim == 1 else _object_array(vals)


def _homogeneous(vals: list[Any]) -> bool:
    t = type(vals[0])
    return t in (float, int, bool, str) and all(type(v) is t for v in vals)


def _object_array(vals: list[Any]) -> np.ndarray:
    out = np.empty(len(vals), dtype=object)
    out[:] = vals
    return out


def _columns(value: Any, field: str) -> dict[str, np.ndarray]:
    from .instance import fail

    if not isinstance(value, Mapping):  # a DataFrame
        cols = {str(c): value[c] for c in value.columns}
    else:
        cols = {str(k): v for k, v in value.items()}
    out: dict[str, np.ndarray] = {}
    n: int | None = None
    first = ""
    for name, values in cols.items():
        if isinstance(values, str | bytes) or not hasattr(values, "__len__"):
            raise fail(f"{field}.{name}", "expected a column (a list or array of values)")
        arr = _as_array(values)
        if n is None:
            n, first = len(arr), name
        elif len(arr) != n:
            raise fail(
                f"{field}.{name}",
                f"column has {len(arr)} values, expected {n} (the length of {first!r})",
            )
        out[name] = arr
    return out


_RAW_OK: dict[type, bool] = {}


def _raw_ok(model: type[BaseModel]) -> bool:
    """Whether records of ``model`` can be built without re-validation: no validators
    of their own (beyond :class:`~hetopt.instance.RecordBase`'s number handling), no
    private attributes, no unknown-field store."""
    if model not in _RAW_OK:
        from .instance import RecordBase

        dec = model.__pydantic_decorators__
        init = model.__init__ is BaseModel.__init__ or (
            issubclass(model, RecordBase) and model.__init__ is RecordBase.__init__
        )
        _RAW_OK[model] = init and not (
            dec.model_validators
            or dec.field_validators
            or dec.validators
            or dec.root_validators
            or dec.computed_fields
            or model.__private_attributes__
            or model.model_config.get("extra") == "allow"
            or getattr(model, "__pydantic_post_init__", None)
        )
    return _RAW_OK[model]


_ADAPTERS: dict[tuple[type, str], TypeAdapter[Any]] = {}


def _adapter(model: type[BaseModel], name: str, field: FieldInfo) -> TypeAdapter[Any]:
    """A validator of a whole column of ``model.<name>`` (its type and constraints, the
    model's strictness)."""
    key = (model, name)
    if key not in _ADAPTERS:
        config = model.model_config
        cfg = ConfigDict(
            strict=config.get("strict", False), allow_inf_nan=config.get("allow_inf_nan", True)
        )
        item: Any = typing.Annotated[field.annotation, field]  # type: ignore[name-defined]
        _ADAPTERS[key] = TypeAdapter(list[item], config=cfg)  # type: ignore[valid-type]
    return _ADAPTERS[key]


def records_from_columns(
    model: type[BaseModel], field: str, value: Any
) -> tuple[list[Any], dict[str, np.ndarray]]:
    """Validate ``value`` (columns) as the list-of-``model`` field ``field``.

    Returns the records and the validated columns (numpy arrays, one per field of the
    model, defaults filled in for fields left out).

    Raises
    ------
    ValueError
        A :func:`hetopt.instance.fail` error naming ``field[i].name`` (the first row
        with a problem), as the records path would.
    """
    from .instance import _find_huge, _lenient, _message, fail

    cols = _columns(value, field)
    n = len(next(iter(cols.values()))) if cols else 0
    fields = model.model_fields
    for name in cols:
        if name not in fields:
            raise fail(
                f"{field}[0].{name}",
                "unknown field (check the spelling; unknown fields are not ignored)",
            )
    values: dict[str, list[Any]] = {}
    arrays: dict[str, np.ndarray] = {}
    for name, info in fields.items():
        if name not in cols:
            if info.is_required():
                if n == 0:
                    continue
                raise fail(f"{field}[0].{name}", "required field is missing")
            continue
        arr = cols[name]
        fast = _fast(_spec(info), arr)
        if fast is None:
            spec = _spec(info)
            raw = arr.tolist()
            if spec.optional:
                miss = _missing(arr)
                raw = [None if m else v for v, m in zip(raw, miss.tolist(), strict=True)]
            found = _find_huge(raw)
            if found is not None:
                raise fail(_huge_path(field, name, found[0]), found[1])
            try:
                fast = _lenient(_adapter(model, name, info).validate_python, raw)
            except ValidationError as exc:
                err = exc.errors(include_url=False)[0]
                loc = list(err.get("loc", ()))
                row = loc.pop(0) if loc and isinstance(loc[0], int) else 0
                sub, msg = _message(exc)
                loc_path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)
                sub = loc_path + (f".{sub}" if sub else "")
                raise fail(f"{field}[{row}].{name}{sub}", msg) from None
        values[name] = fast
    records = _build(model, fields, values, n)
    for name in fields:
        if name in cols:
            arr = cols[name]
            arrays[name] = arr if arr.dtype.kind in "biuf" else _object_array(values[name])
    return records, arrays


def _huge_path(field: str, name: str, found: str) -> str:
    """``clients[3].samples.x`` from ``[3].x`` (a path inside the column's values)."""
    row, _, rest = found.partition("]")
    return f"{field}{row}].{name}{rest}"


def _build(
    model: type[BaseModel], fields: dict[str, FieldInfo], values: dict[str, list[Any]], n: int
) -> list[Any]:
    """``n`` records from validated column values (defaults for the fields left out)."""
    given = set(values)
    if not _raw_ok(model):
        names = list(values)
        rows = zip(*(values[k] for k in names), strict=True) if names else iter([()] * n)
        return [model.model_validate(dict(zip(names, r, strict=True))) for r in rows]
    order = list(fields)
    cols: list[Any] = []
    for name in order:
        if name in values:
            cols.append(values[name])
            continue
        info = fields[name]
        if info.default_factory is not None:
            factory: Any = info.default_factory
            cols.append([factory() for _ in range(n)])
        else:
            cols.append([info.default] * n)
    new, setattr_ = object.__new__, object.__setattr__

    def record(row: tuple[Any, ...]) -> Any:  # what model_construct does, minus its checks
        obj = new(model)
        setattr_(obj, "__dict__", dict(zip(order, row, strict=True)))
        setattr_(obj, "__pydantic_fields_set__", set(given))
        setattr_(obj, "__pydantic_extra__", None)
        setattr_(obj, "__pydantic_private__", None)
        return obj

    rows = zip(*cols, strict=True) if cols else iter([()] * n)
    with collector.paused():  # n new objects would trigger collections that find nothing
        return list(map(record, rows))


# --------------------------------------------------------------------------- memory
_MEMORY: dict[int, dict[str, tuple[Any, dict[str, np.ndarray]]]] = {}


def remember(instance: Any, field: str, arrays: dict[str, np.ndarray]) -> None:
    """Keep the validated columns of ``instance.<field>`` (see :func:`columns_of`)."""
    key = id(instance)
    if key not in _MEMORY:
        _MEMORY[key] = {}
        weakref.finalize(instance, _MEMORY.pop, key, None)
    _MEMORY[key][field] = (getattr(instance, field), arrays)


def columns_of(instance: Any, field: str) -> dict[str, np.ndarray] | None:
    """The validated columns ``instance.<field>`` was built from (numpy arrays in the
    records' order, one per field the columns gave), or ``None`` when it was given as
    records."""
    entry = _MEMORY.get(id(instance), {}).get(field)
    if entry is None or entry[0] is not getattr(instance, field, None):
        return None
    return entry[1]
