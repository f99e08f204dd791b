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
        methods = {"makespan": LazyMethod(".methods:Makespan", __name__), ...}
        tables = (Table("schedule", "...", (Column(...), ...)),)
        details = (Detail("model", "str", "..."),)

        def verify(self, instance, result): ...

Method-table entries may be :class:`LazyMethod` s (``"module:Class"`` plus the
constructor's arguments), imported when a solve first needs them: defining a kind (its
objectives, parameters, declared tables, instance model) then imports no solver stack,
so ``hetopt kinds``, ``schema`` and ``validate`` start without Pyomo, HiGHS or pandas.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import ValidationError

from ..contract import Decomposer, Detail, Method, NoParams, Objective, Params, Table
from ..errors import InstanceError, UsageError
from ..instance import InstanceBase

if TYPE_CHECKING:
    import pyomo.environ as pyo

    from ..deferred import Pending, Speculation
    from ..options import SolveOptions
    from ..result import Result, Verification

__all__ = [
    "Kind",
    "LazyAttribute",
    "LazyMethod",
    "MethodEntry",
    "MethodTable",
    "Objective",
    "UsageError",
    "lazy_exports",
    "resolve",
]


_RESOLVING = threading.RLock()  # re-entrant: an entry's arguments resolve inside it


class LazyMethod:
    """A method-table entry imported on first use.

    ``LazyMethod("pkg.mod:Class", *args, **kwargs)`` stands for ``Class(*args,
    **kwargs)`` (an argument that is itself a :class:`LazyMethod` is resolved first, e.g.
    a method wrapping another); a relative module (``".methods:Class"``) needs the package as
    ``package=`` (a kind's ``__name__``). :meth:`resolve` imports the module, builds the
    method once and returns that same object ever after, as a table of instances did.
    """

    __slots__ = ("_factory", "_method", "args", "target")

    def __init__(self, target: str, *args: Any, package: str | None = None, **kwargs: Any):
        module, sep, attr = target.partition(":")
        if not sep or not module or not attr:
            raise ValueError(f"expected 'module:Class', got {target!r}")
        self.target = target
        self.args = args

        def factory() -> Any:
            cls = getattr(importlib.import_module(module, package), attr)
            return cls(
                *(resolve(a) if isinstance(a, LazyMethod) else a for a in args),
                **kwargs,
            )

        self._factory: Callable[[], Any] = factory
        self._method: Any = None

    def resolve(self) -> Method:
        """The method (imported and built on the first call; one object per entry, also
        when threads of a parallel solve ask at once)."""
        if self._method is None:
            with _RESOLVING:
                if self._method is None:
                    self._method = self._factory()
        return self._method  # type: ignore[no-any-return]

    def then(self, fn: Callable[..., Any], *args: Any) -> LazyMethod:
        """A new entry standing for ``fn(self.resolve(), *args)`` (e.g. the method marked
        with an automatic choice), still not imported."""
        derived = LazyMethod.__new__(LazyMethod)
        derived.target = self.target
        derived.args = self.args
        derived._factory = lambda: fn(self.resolve(), *args)
        derived._method = None
        return derived

    def __repr__(self) -> str:
        return f"LazyMethod({self.target!r})"


class LazyAttribute:
    """A class attribute imported on first access: ``decomposer =
    LazyAttribute("pkg.mod:DECOMPOSER")`` reads as that object, from the class and from
    its instances, once the module is imported (``build=True``: the attribute called
    with no arguments, e.g. a class instantiated once)."""

    __slots__ = ("_build", "_value", "target")

    _MISSING: ClassVar[object] = object()

    def __init__(self, target: str, build: bool = False):
        self.target = target
        self._build = build
        self._value: Any = LazyAttribute._MISSING

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if self._value is LazyAttribute._MISSING:
            module, _, attr = self.target.partition(":")
            value = getattr(importlib.import_module(module), attr)
            self._value = value() if self._build else value
        return self._value


def lazy_exports(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) for a kind's package: ``names`` maps a public
    name to the module defining it (``".persistent"``), imported on first use, so that
    importing the package (and defining ``KIND``) does not import the solver stack. A
    sub-module of the package is an attribute too, imported on first use
    (``hetopt.kinds.gpu_cluster.rounds``), as after ``import package.name``."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            if not name.startswith("_") and importlib.util.find_spec(f"{package}.{name}"):
                return importlib.import_module(f"{package}.{name}")  # (sets the attribute)
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__


MethodEntry = Method | LazyMethod
"""What a method table holds: a method, or a :class:`LazyMethod` standing for one."""


def resolve(entry: MethodEntry) -> Method:
    """The method ``entry`` stands for (``entry`` itself unless it is a :class:`LazyMethod`)."""
    return entry.resolve() if isinstance(entry, LazyMethod) else entry


class MethodTable(Mapping[Any, Method]):
    """A kind's objective -> method table (:attr:`Kind.methods`; also a kind's own table
    keyed by (objective, variant)): looking a key up resolves its :class:`LazyMethod`;
    :meth:`entry` returns the entry unresolved, and iterating or testing membership
    imports nothing."""

    __slots__ = ("_entries",)

    def __init__(self, entries: Mapping[Any, MethodEntry]):
        self._entries = dict(entries)

    def __getitem__(self, objective: Any) -> Method:
        return resolve(self._entries[objective])

    def entry(self, objective: Any) -> MethodEntry:
        """The entry of ``objective``, not resolved (``KeyError`` when absent)."""
        return self._entries[objective]

    def entries(self) -> dict[Any, MethodEntry]:
        """Every entry, not resolved."""
        return dict(self._entries)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, objective: object) -> bool:
        return objective in self._entries

    def __repr__(self) -> str:
        return f"MethodTable({self._entries!r})"


class Kind:
    """Base class of a problem kind: a subclass sets the class attributes below.

    Attributes
    ----------
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
        :class:`~hetopt.contract.RunMethod`) or a :class:`LazyMethod` standing for one
        (a subclass's plain dict becomes a :class:`MethodTable`, whose lookups resolve);
        override :meth:`choose_method` when the instance or a parameter picks among
        several.
    tables, details
        The declared result tables and ``info`` entries.
    decomposer
        The kind's :class:`~hetopt.contract.Decomposer` hooks, if it can be decomposed.
    replanner
        The kind's :class:`hetopt.rolling.Replanner` hooks, if it has a rolling horizon.
    """

    name: str = ""
    description: str = ""
    objectives: tuple[Objective, ...] = ()
    instance_model: type[InstanceBase] = InstanceBase
    params_model: ClassVar[type[Params]] = NoParams
    methods: ClassVar[Mapping[str, MethodEntry]] = MethodTable({})
    tables: ClassVar[tuple[Table, ...]] = ()
    details: ClassVar[tuple[Detail, ...]] = ()
    decomposer: ClassVar[Decomposer | None] = None
    """What :func:`hetopt.decompose.solve_decomposed` may do with this kind (``None``:
    no decomposition)."""
    replanner: ClassVar[Any] = None
    """The kind's :class:`hetopt.rolling.Replanner` hooks for
    :func:`hetopt.rolling.rolling_schedule` (``None``: no rolling horizon)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "method_for" in cls.__dict__:  # validate asks choose_method: it would miss it
            raise TypeError(f"{cls.__name__}: override choose_method, not method_for")
        table = cls.__dict__.get("methods")
        if table is not None and not isinstance(table, MethodTable):
            cls.methods = MethodTable(table)

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
        from ..instance import _lenient

        try:
            # (numpy scalars and integral floats as the plain values, as in instances)
            return _lenient(self.params_model.model_validate, dict(params))
        except ValidationError as exc:
            raise UsageError(param_message(exc)) from None

    # ------------------------------------------------------------------ input
    def speculate(
        self, data: dict[str, Any], objective: str | None, pending: Pending
    ) -> Speculation | None:
        """A provisional instance read off the unvalidated input ``data``, so that its
        validation (``pending``) runs beside HiGHS (:mod:`hetopt.deferred`); ``None``
        (the default): validate first. ``objective``: the one asked for, if any.

        The provisional instance must give the solve exactly the values the validated
        one would, wherever it does not defer to ``pending`` (its records as
        :class:`~hetopt.deferred.PendingRecords`); the ``certify`` it comes with checks
        that against the validated instance. Reading ``data`` must be cheap (a fraction
        of validating it) and must not fail: anything unexpected is ``None``.
        """
        return None

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

    def choose_method(self, objective: str, instance: Any, params: Any) -> MethodEntry:
        """The method that solves ``objective``, possibly a :class:`LazyMethod` not
        imported yet (a table lookup; kinds whose instance or parameters choose among
        methods override this). Refusals (a :class:`~hetopt.UsageError` or
        :class:`~hetopt.InstanceError`) happen here, so ``hetopt validate`` reports them
        without importing the method."""
        table = self.methods
        try:
            return table.entry(objective) if isinstance(table, MethodTable) else table[objective]
        except KeyError:
            raise UsageError(f"kind {self.name!r} has no method for {objective!r}") from None

    def method_for(self, objective: str, instance: Any, params: Any) -> Method:
        """The method that solves ``objective``: :meth:`choose_method`, resolved."""
        return resolve(self.choose_method(objective, instance, params))

    # ------------------------------------------------------------------ entry points
    def solve(
        self,
        instance: Any,
        objective: str,
        options: SolveOptions | None = None,
        **params: Any,
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
    elif etype in (
        "greater_than_equal",
        "greater_than",
        "less_than_equal",
        "less_than",
    ):
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
