"""Published JSON Schemas: of instance files and of results (``--json`` output).

* :class:`InstanceJsonSchema` is the generator every instance model's
  ``model_json_schema()`` uses (:class:`hetopt.instance.InstanceBase`): pydantic's
  schema plus what hetopt's validator enforces beyond the field types, where JSON
  Schema can say it -- the magnitude cap :data:`hetopt.instance.MAX_ABS` on every number
  (``minimum`` / ``maximum``), ``kind`` as a required field, the objective names as an
  ``enum``. Cross-field checks (unique ids, references between records, a quota below
  its group's size, ...) cannot be written in a schema; the validator still runs them.
* :func:`result_schema` is the schema of :meth:`hetopt.Result.to_dict` output for one
  kind, generated from the kind's declared tables and details
  (:attr:`~hetopt.kinds.base.Kind.tables`, :attr:`~hetopt.kinds.base.Kind.details`):
  ``hetopt schema KIND --result``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue

from .status import Status

if TYPE_CHECKING:
    from pydantic_core import core_schema

    from .contract import Column, Detail, Table
    from .kinds.base import Kind

__all__ = ["DIALECT", "InstanceJsonSchema", "result_schema"]

DIALECT = "https://json-schema.org/draft/2020-12/schema"


# ------------------------------------------------------------------------ instances
class InstanceJsonSchema(GenerateJsonSchema):
    """pydantic's JSON Schema generator with hetopt's own limits written in.

    * every ``number`` / ``integer`` gets ``minimum: -MAX_ABS`` and ``maximum:
      MAX_ABS`` (tightening, never loosening, the field's own bounds);
    * the instance model's ``kind`` is ``required`` (files must name their kind);
    * its ``objective`` is an ``enum`` of the kind's objective names (or ``null``).
    """

    def _cap(self, js: JsonSchemaValue) -> JsonSchemaValue:
        from .instance import MAX_ABS

        hi = int(MAX_ABS) if float(MAX_ABS).is_integer() else MAX_ABS
        lo = -hi
        if not ("exclusiveMaximum" in js and js["exclusiveMaximum"] <= hi):
            js["maximum"] = min(js.get("maximum", hi), hi)
        if not ("exclusiveMinimum" in js and js["exclusiveMinimum"] >= lo):
            js["minimum"] = max(js.get("minimum", lo), lo)
        return js

    def int_schema(self, schema: core_schema.IntSchema) -> JsonSchemaValue:
        return self._cap(super().int_schema(schema))

    def float_schema(self, schema: core_schema.FloatSchema) -> JsonSchemaValue:
        return self._cap(super().float_schema(schema))

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        js = super().model_schema(schema)
        cls = schema.get("cls")
        from .instance import InstanceBase

        if isinstance(cls, type) and issubclass(cls, InstanceBase):
            _instance_extras(cls, js)
        return js


def _instance_extras(cls: type, js: JsonSchemaValue) -> None:
    props = js.get("properties", {})
    kind_field = getattr(cls, "model_fields", {}).get("kind")
    if "kind" in props:
        required = js.setdefault("required", [])
        if "kind" not in required:
            required.insert(0, "kind")
    name = getattr(kind_field, "default", None)
    if "objective" in props and isinstance(name, str):
        names = _objective_names(name)
        if names:
            prop = props["objective"]
            keep = {k: v for k, v in prop.items() if k in ("default", "title", "description")}
            props["objective"] = {
                **keep,
                "anyOf": [{"type": "string", "enum": names}, {"type": "null"}],
            }


def _objective_names(kind: str) -> list[str]:
    try:
        from .kinds import get_kind

        return get_kind(kind).objective_names()
    except Exception:  # a model of a kind that is not registered (tests, templates)
        return []


# ------------------------------------------------------------------------ results
_NUMBER = {
    "description": "a number; null when unknown or NaN, the strings inf / -inf for infinities",
    "anyOf": [{"type": "number"}, {"type": "null"}, {"enum": ["inf", "-inf"]}],
}

_HEADER = {"type": ["number", "null"]}


def _column_schema(c: Column) -> dict[str, Any]:
    desc = c.description + (f" [{c.unit}]" if c.unit else "")
    if c.dtype == "float":
        return {"description": desc, "$ref": "#/$defs/number"}
    if c.dtype == "int":
        return {"description": desc, "type": "integer"}
    if c.dtype == "bool":
        return {"description": desc, "type": "boolean"}
    if c.dtype == "str":
        return {"description": desc, "type": ["string", "null"]}
    return {"description": desc}


def _table_schema(t: Table) -> dict[str, Any]:
    return {
        "description": t.description,
        "type": "array",
        "items": {
            "type": "object",
            "properties": {c.name: _column_schema(c) for c in t.columns},
            "required": [c.name for c in t.columns if not c.optional],
            "additionalProperties": False,
        },
    }


_DETAIL_TYPES: dict[str, dict[str, Any]] = {
    "str": {"type": ["string", "null"]},
    "int": {"type": ["integer", "null"]},
    "float": {"$ref": "#/$defs/number"},
    "bool": {"type": ["boolean", "null"]},
    "list": {"type": ["array", "null"]},
    "dict": {"type": ["object", "null"]},
    "any": {},
}


def _detail_schema(d: Detail) -> dict[str, Any]:
    desc = d.description + (f" [{d.unit}]" if d.unit else "")
    return {"description": desc, **_DETAIL_TYPES[d.type]}


_STAGE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "solves": {"type": "integer", "minimum": 0},
        "solve_s": {"$ref": "#/$defs/number"},
        "simplex_iterations": {"type": "integer", "minimum": 0},
        "ipm_iterations": {"type": "integer", "minimum": 0},
        "mip_nodes": {"type": "integer", "minimum": 0},
    },
    "required": ["solves", "solve_s", "simplex_iterations", "ipm_iterations", "mip_nodes"],
}


def result_schema(kind: Kind) -> dict[str, Any]:
    """The JSON Schema of a ``kind`` result as :meth:`hetopt.Result.to_dict` writes it
    (``hetopt solve --json``, ``--output``), from the kind's declared tables and details.

    Tables and ``info`` entries the kind does not declare are rejected (the pipeline
    rejects them too); a kind that declares no tables yet gets open ``tables`` and
    ``info`` objects. When the status is ``optimal`` or ``feasible``, every table the
    kind does not mark optional is required.
    """
    from .contract import SOLVER_DETAILS

    declared = bool(kind.tables)
    tables: dict[str, Any] = {
        "description": "table name -> list of records (one object per row)",
        "type": "object",
    }
    info: dict[str, Any] = {
        "description": "facts about how the result was found (the kind's declared details)",
        "type": "object",
    }
    columns: dict[str, Any] = {
        "description": "table name -> its column names, in order (kept for empty tables)",
        "type": "object",
        "additionalProperties": {"type": "array", "items": {"type": "string"}},
    }
    if declared:
        tables["properties"] = {t.name: _table_schema(t) for t in kind.tables}
        tables["additionalProperties"] = False
        columns["propertyNames"] = {"enum": [t.name for t in kind.tables]}
    if kind.details or declared:
        info["properties"] = {d.name: _detail_schema(d) for d in (*SOLVER_DETAILS, *kind.details)}
        info["additionalProperties"] = False
    objectives = kind.objective_names()
    schema: dict[str, Any] = {
        "$schema": DIALECT,
        "$id": f"hetopt:result:{kind.name}",
        "title": f"hetopt {kind.name} result",
        "description": (
            f"A solve of a {kind.name!r} instance, as 'hetopt solve --json' prints it "
            "(hetopt.Result.to_dict). kind, objective, status, objective_value, bound, gap, "
            "runtime_s and tables are a fixed contract."
        ),
        "type": "object",
        "properties": {
            "kind": {"const": kind.name},
            "objective": {"enum": objectives},
            "status": {
                "description": "coarse status (exit code: 0 optimal/feasible, 4 infeasible/"
                "unbounded, 5 no_solution, 1 error)",
                "enum": [s.value for s in Status],
            },
            "termination": {
                "description": "the solver's (or method's) exact wording",
                "type": "string",
            },
            "objective_value": {
                **_HEADER,
                "description": "the objective in the kind's unit; null without a solution",
            },
            "bound": {**_HEADER, "description": "best proven bound; null when unknown"},
            "gap": {
                **_HEADER,
                "description": "relative gap |value - bound| / |value|; null when unknown",
            },
            "runtime_s": {"description": "wall-clock seconds", "$ref": "#/$defs/number"},
            "tables": tables,
            "columns": columns,
            "verification": {
                "anyOf": [{"type": "null"}, {"$ref": "#/$defs/verification"}],
            },
            "timings": {
                "description": "seconds per phase (build_s, transfer_s, solve_s, load_s, "
                "verify_s, ...)",
                "type": "object",
                "additionalProperties": {"$ref": "#/$defs/number"},
            },
            "info": info,
            "report": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/report"}]},
        },
        "required": [
            "kind",
            "objective",
            "status",
            "termination",
            "objective_value",
            "bound",
            "gap",
            "runtime_s",
            "tables",
        ],
        "$defs": {
            "number": _NUMBER,
            "verification": {
                "type": "object",
                "properties": {
                    "ok": {"type": "boolean"},
                    "objective_value": {"$ref": "#/$defs/number"},
                    "violations": {"type": "array", "items": {"type": "string"}},
                    "checks": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["ok", "objective_value", "violations", "checks"],
                "additionalProperties": False,
            },
            "stage": _STAGE,
            "report": {
                "description": "HiGHS runs of the solve, in total and per stage",
                "type": "object",
                "properties": {
                    **_STAGE["properties"],
                    "stages": {
                        "type": "object",
                        "additionalProperties": {"$ref": "#/$defs/stage"},
                    },
                },
                "required": [*_STAGE["required"], "stages"],
            },
        },
    }
    required = [t.name for t in kind.tables if not t.optional]
    if required:
        schema["allOf"] = [
            {
                "if": {
                    "properties": {"status": {"enum": ["optimal", "feasible"]}},
                    "required": ["status"],
                },
                "then": {"properties": {"tables": {"required": required}}},
            }
        ]
    return schema
