"""The base class of every kind: objectives, typed parameters, methods, declarations.

A kind subclasses :class:`Kind` and sets class attributes; the shared behaviour
(objective resolution, parameter validation, the objective -> method table, solving
through :mod:`hetopt.pipeline`) lives here once::

    class CpuGpuKind(Kind):
        name = "cpu_gpu"
        description = "..."
        objectives = (Objective("makespan", "...", "s", "min"), ...)
        instance_model = CpuGpuInstance
        params_model = CpuGpuParams          # a hetopt.contract.Params subclass
        methods = {"makespan": Makespan(), "throughput": Throughput()}
        tables = (Table("schedule", "...", (Column(...), ...)),)
        details = (Detail("model", "str", "..."),)

        def verify(self, instance, result): ...
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import ValidationError

from ..contract import Decomposer, Detail, Method, NoParams, Objective, Params, Table
from ..errors import InstanceError, UsageError
from ..instance import InstanceBase

if TYPE_CHECKING:
    import pyomo.environ as pyo

    from ..options import SolveOptions
    from ..result import Result, Verification

__all__ = ["Kind", "Objective", "UsageError"]


class Kind:
    """Base class of a problem kind.

    Class attributes
    ----------------
    name, description
        The kind's name (the ``kind`` field of its instances) and one line about it.
    objectives
        The :class:`~hetopt.contract.Objective` s it offers (the first is the default).
    instance_model
        Its pydantic instance model.
    params_model
        Its :class:`~hetopt.contract.Params` model (types, defaults, help).
    methods
        Objective name -> method (:class:`~hetopt.contract.BuildMethod` or
        :class:`~hetopt.contract.RunMethod`); override :meth:`method_for` when the
        instance or a parameter picks among several.
    tables, details
        The declared result tables and ``info`` entries.
    decomposer
        The kind's :class:`~hetopt.contract.Decomposer` hooks, if it can be decomposed.
    """

    name: str = ""
    description: str = ""
    objectives: tuple[Objective, ...] = ()
    instance_model: type[InstanceBase] = InstanceBase
    params_model: ClassVar[type[Params]] = NoParams
    methods: ClassVar[Mapping[str, Method]] = {}
    tables: ClassVar[tuple[Table, ...]] = ()
    details: ClassVar[tuple[Detail, ...]] = ()
    decomposer: ClassVar[Decomposer | None] = None
    """What :func:`hetopt.decompose.solve_decomposed` may do with this kind (``None``:
    no decomposition)."""
    replanner: ClassVar[Any] = None
    """The kind's :class:`hetopt.rolling.Replanner` hooks for
    :func:`hetopt.rolling.rolling_schedule` (``None``: no rolling horizon)."""

    # ------------------------------------------------------------------ objectives
    def objective_names(self) -> list[str]:
        return [o.name for o in self.objectives]

    def objective(self, name: str) -> Objective:
        for o in self.objectives:
            if o.name == name:
                return o
        raise UsageError(f"kind {self.name!r} has no objective {name!r}")

    def resolve_objective(self, instance: Any, objective: str | None) -> str:
        """The objective to solve: ``objective``, else the instance's, else the first."""
        from_file = getattr(instance, "objective", None)
        if objective is not None and not (isinstance(objective, str) and objective.strip()):
            raise UsageError(
                f"objective must be one of: {', '.join(self.objective_names())}; got {objective!r}"
            )
        if objective is None and from_file is not None and not from_file.strip():
            raise InstanceError(
                f"empty objective; kind {self.name!r} offers: {', '.join(self.objective_names())}"
                " (or leave the field out for the default)",
                "objective",
            )
        name = objective or from_file or self.objectives[0].name
        if objective is None and from_file is not None and name not in self.objective_names():
            # bad input in the instance itself: an invalid instance (exit 3), naming the field
            raise InstanceError(
                f"unknown objective {name!r}; kind {self.name!r} offers: "
                f"{', '.join(self.objective_names())}",
                "objective",
            )
        if name not in self.objective_names():
            raise UsageError(
                f"kind {self.name!r} has no objective {name!r}; expected one of: "
                f"{', '.join(self.objective_names())}"
            )
        return name

    # ------------------------------------------------------------------ parameters
    @property
    def params(self) -> dict[str, str]:
        """Parameter name -> one-line description (``hetopt kinds``)."""
        return {name: f.description or "" for name, f in self.params_model.model_fields.items()}

    def param_specs(self) -> dict[str, dict[str, Any]]:
        """Parameter name -> ``{"type", "default", "description"}`` (JSON-ready)."""
        schema = self.params_model.model_json_schema().get("properties", {})
        out = {}
        for name, f in self.params_model.model_fields.items():
            prop = schema.get(name, {})
            out[name] = {
                "type": _type_name(prop),
                "default": f.default if _jsonable(f.default) else repr(f.default),
                "description": f.description or "",
            }
        return out

    def check_params(self, params: Mapping[str, Any]) -> None:
        """Reject parameter names the kind does not take."""
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            offered = ", ".join(self.params) or "none"
            raise UsageError(
                f"kind {self.name!r} does not take {', '.join(unknown)}; it takes: {offered}"
            )

    def parse_params(self, params: Mapping[str, Any] | Params) -> Any:
        """Validate parameters (Python keywords or parsed ``-p`` values) into the kind's
        :class:`~hetopt.contract.Params` model; any problem is one
        :class:`~hetopt.UsageError` naming the parameter."""
        if isinstance(params, self.params_model):
            return params
        if isinstance(params, Params):
            raise UsageError(
                f"kind {self.name!r} takes {self.params_model.__name__}, "
                f"not {type(params).__name__}"
            )
        self.check_params(params)
        try:
            return self.params_model.model_validate(dict(params))
        except ValidationError as exc:
            raise UsageError(param_message(exc)) from None

    # ------------------------------------------------------------------ methods
    def instance_for(self, instance: Any, params: Any) -> Any:
        """The instance the solve and its verification use: ``instance`` with what the
        parameters override applied (e.g. a deadline given as a parameter). Raise
        :class:`~hetopt.UsageError` naming the parameter for a bad value."""
        return instance

    def check(self, instance: Any, objective: str, params: Any) -> None:
        """Raise :class:`~hetopt.InstanceError` (naming the field) when ``instance`` lacks
        what ``objective`` needs (e.g. ``steps_remaining`` for a makespan).

        Called by every solve and by ``hetopt validate``, so the two always agree.
        """

    def method_for(self, objective: str, instance: Any, params: Any) -> Method:
        """The method that solves ``objective`` (a table lookup; kinds whose instance or
        parameters choose among methods override this)."""
        try:
            return self.methods[objective]
        except KeyError:
            raise UsageError(f"kind {self.name!r} has no method for {objective!r}") from None

    # ------------------------------------------------------------------ entry points
    def solve(
        self, instance: Any, objective: str, options: SolveOptions | None = None, **params: Any
    ) -> Result:
        """Solve ``instance`` for ``objective`` through :func:`hetopt.pipeline.solve`."""
        from .. import pipeline

        return pipeline.solve(self, instance, objective, options, self.parse_params(params))

    def build(self, instance: Any, objective: str, **params: Any) -> pyo.ConcreteModel:
        """The Pyomo model for ``objective`` (what ``hetopt export`` writes)."""
        from .. import pipeline

        return pipeline.build(self, instance, objective, self.parse_params(params)).model

    def verify(self, instance: Any, result: Result) -> Verification:
        """The kind's independent verifier (reads only the instance and the tables)."""
        raise NotImplementedError


# ---------------------------------------------------------------------------- messages
_EXPECTED = {
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "finite_number": "a finite number",
    "string_type": "a string",
    "dict_type": "an object (JSON {...})",
    "list_type": "a list",
}


def param_message(exc: ValidationError) -> str:
    """One line for the first problem of a parameter validation error."""
    err = exc.errors(include_url=False)[0]
    loc = ".".join(str(p) for p in err.get("loc", ())) or "parameters"
    etype = str(err.get("type", ""))
    ctx = err.get("ctx") or {}
    if etype in _EXPECTED:
        text = f"must be {_EXPECTED[etype]}"
    elif etype == "literal_error":
        text = f"must be one of {ctx.get('expected', '?')}"
    elif etype in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        op = {
            "greater_than_equal": ">=",
            "greater_than": ">",
            "less_than_equal": "<=",
            "less_than": "<",
        }[etype]
        limit = next(iter(ctx.values()), "?")
        text = f"must be {op} {limit}"
    else:
        text = str(err.get("msg", "invalid value"))
        if text.startswith("Value error, "):
            text = text[len("Value error, ") :]
    shown = repr(err.get("input"))
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"{loc} {text}, got {shown}".replace("\n", "\\n")


def _type_name(prop: Mapping[str, Any]) -> str:
    if "enum" in prop:
        return " | ".join(repr(v) for v in prop["enum"])
    if "anyOf" in prop:
        return " | ".join(_type_name(p) for p in prop["anyOf"])
    if "const" in prop:
        return repr(prop["const"])
    return str(prop.get("type", "any"))


def _jsonable(v: Any) -> bool:
    return v is None or isinstance(v, str | int | float | bool | list | dict)
