"""The public entry points: :func:`solve`, :func:`build_model`, :func:`export_model`."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import collector, deferred, pipeline
from .errors import InstanceError, SolveError, UsageError
from .instance import InstanceBase
from .kinds import get_kind, instance_from_dict, kind_names
from .kinds.base import Kind
from .options import SolveOptions
from .progress import ProgressCallback
from .result import Result, Verification

if TYPE_CHECKING:
    import pyomo.environ as pyo

InstanceLike = InstanceBase | Mapping[str, Any] | str | Path


def load(instance: InstanceLike) -> tuple[Any, str | None]:
    """Return ``(validated instance, source file or None)``."""
    if isinstance(instance, InstanceBase):
        return instance, None
    data, source = _input(instance)
    return instance_from_dict(data, source), source


def kind_of(instance: Any) -> Kind:
    return get_kind(instance.kind)


def solve(
    instance: InstanceLike,
    objective: str | None = None,
    options: SolveOptions | Mapping[str, Any] | None = None,
    progress: ProgressCallback | None = None,
    **params: Any,
) -> Result:
    """Solve an instance of any kind exactly with HiGHS.

    Parameters
    ----------
    instance
        A validated instance (e.g. :class:`~hetopt.kinds.gpu_cluster.GpuClusterInstance`),
        a dict with a ``kind`` field, or the path of a JSON/YAML instance file.
    objective
        Objective name (see ``hetopt kinds``); default: the instance's ``objective``
        field, else the kind's first objective.
    options
        :class:`SolveOptions` (time limit, gap, threads, seed, raw HiGHS options), or a
        mapping of the same names (``{"time_limit_s": 10}``).
    progress
        Called with :class:`hetopt.progress.Progress` events while the solve runs:
        MIP incumbent, bound and gap (about twice a second), each HiGHS run, and the
        steps of multi-solve methods (Pareto points, decomposition iterations, ...).
    **params
        Kind-specific switches, e.g. ``agnostic=True`` for ``gpu_cluster``.

    Returns
    -------
    Result
        Status, objective value, bound, gap, timings, tables and the verifier's verdict.
        Infeasible or out-of-time solves are statuses, not exceptions.

    Raises
    ------
    InstanceError
        The instance is invalid (the message names the file and field).
    """
    opts = SolveOptions.coerce(options)
    # (the collections validation and the build make due run while HiGHS's first run
    # works: hetopt.collector; so does the validation of a large instance: hetopt.deferred)
    with collector.paused_until_solver():
        if isinstance(instance, InstanceBase):
            return _solve_valid(instance, None, objective, opts, params, progress)
        data, source = _input(instance)
        deferring = _speculation(data, source, objective)
        if deferring is None:
            inst = instance_from_dict(data, source)
            return _solve_valid(inst, source, objective, opts, params, progress)
        return _solve_deferred(*deferring, source, objective, opts, params, progress)


def _solve_valid(
    inst: Any,  # (validated, or provisional: hetopt.deferred)
    source: str | None,
    objective: str | None,
    opts: SolveOptions,
    params: Mapping[str, Any],
    progress: ProgressCallback | None,
) -> Result:
    kind = kind_of(inst)
    try:
        name = kind.resolve_objective(inst, objective)
        return pipeline.solve(kind, inst, name, opts, kind.parse_params(params), progress)
    except InstanceError as exc:
        raise (exc.with_source(source) if source and not exc.source else exc) from None


def _input(instance: Any) -> tuple[Any, str | None]:
    """The unvalidated data of ``instance`` (a mapping, or a file read as
    :func:`hetopt.kinds.read_instance` reads it) and its file."""
    if isinstance(instance, str | Path):
        from .instance import load_data

        return load_data(instance), str(instance)
    if isinstance(instance, Mapping):
        return instance, None
    raise TypeError(f"expected an instance, a dict or a path, got {type(instance).__name__}")


def _speculation(
    data: Any, source: str | None, objective: str | None
) -> tuple[Kind, deferred.Speculation, deferred.Pending] | None:
    """What a kind reads provisionally off ``data``, to validate it beside HiGHS
    (:mod:`hetopt.deferred`; the main thread's outermost solve only), or ``None``."""
    if type(data) is not dict or deferred.due():
        return None
    if threading.current_thread() is not threading.main_thread():
        return None
    name = data.get("kind")
    if type(name) is not str or name not in kind_names():
        return None
    kind = get_kind(name)
    pending = deferred.Pending(lambda: instance_from_dict(data, source))
    spec = kind.speculate(data, objective, pending)
    if spec is None:
        return None
    pending.bind(spec.certify)
    return kind, spec, pending


def _solve_deferred(
    kind: Kind,
    spec: deferred.Speculation,
    pending: deferred.Pending,
    source: str | None,
    objective: str | None,
    opts: SolveOptions,
    params: Mapping[str, Any],
    progress: ProgressCallback | None,
) -> Result:
    """Solve the provisional instance while its input is validated beside HiGHS; the
    validation's verdict decides (:mod:`hetopt.deferred`)."""
    try:
        with deferred.beside_solver(pending):
            return _solve_valid(spec.instance, source, objective, opts, params, progress)
    except deferred.DeferredFailed as failed:
        if not isinstance(failed.error, deferred.Mismatch):
            raise failed.error from None  # the input is invalid: validation's own error
        text = (
            f"{kind.name}: the instance read before validation differs from the validated "
            f"one ({failed.error}); solving the validated instance again (a bug: please "
            "report it)"
        )
        if os.environ.get("HETOPT_CHECK_CONTRACT"):
            raise SolveError(text) from None
        logging.getLogger(f"hetopt.kinds.{kind.name}").warning("%s", text)
        return _solve_valid(pending.validated, source, objective, opts, params, progress)


def build_model(
    instance: InstanceLike, objective: str | None = None, **params: Any
) -> pyo.ConcreteModel:
    """The Pyomo model hetopt would solve (for inspection or another solver)."""
    inst, source = load(instance)
    kind = kind_of(inst)
    try:
        name = kind.resolve_objective(inst, objective)
        return pipeline.build(kind, inst, name, kind.parse_params(params)).model
    except InstanceError as exc:
        raise (exc.with_source(source) if source and not exc.source else exc) from None


def export_model(
    instance: InstanceLike,
    path: str | Path,
    fmt: str | None = None,
    objective: str | None = None,
    **params: Any,
) -> Path:
    """Write the model as LP or MPS (names as in the model cards), its objective in the
    objective's own unit: HiGHS (or any solver) on the file finds hetopt's
    ``objective_value`` (single-solve methods; a multi-stage method writes the stage it
    documents or refuses with a :class:`~hetopt.UsageError` naming the stage).

    ``fmt`` defaults to the file name's suffix (``.lp`` or ``.mps``).

    Raises
    ------
    UsageError
        ``fmt`` (or the suffix) is neither ``lp`` nor ``mps``, or contradicts a ``.lp`` /
        ``.mps`` suffix; or the objective or a parameter does not apply.
    InstanceError
        The instance is invalid.
    OSError
        The file cannot be written (e.g. its folder does not exist).
    """
    p = Path(path)
    suffix = p.suffix.lstrip(".").lower()
    fmt = (fmt or suffix).lower()
    if fmt not in ("lp", "mps"):
        raise UsageError(f"format must be 'lp' or 'mps', got {fmt!r}")
    if suffix in ("lp", "mps") and suffix != fmt:
        raise UsageError(f"format {fmt!r} for a file named {p.name!r}: name it .{fmt}")
    model = _export_model(instance, objective, params)
    # Pyomo warns when the file name does not end in the format's usual extension; the
    # format is explicit here, so that warning is noise
    core_log = logging.getLogger("pyomo.core")
    level = core_log.level
    core_log.setLevel(logging.ERROR)
    try:
        model.write(str(p), format=fmt, io_options={"symbolic_solver_labels": True})
    finally:
        core_log.setLevel(level)
    return p


def _export_model(
    instance: InstanceLike, objective: str | None, params: Mapping[str, Any]
) -> pyo.ConcreteModel:
    """:func:`build_model`'s model with its objective in the objective's own unit: the
    method's ``export_objective(instance, params, built)`` hook rewrites it (or refuses a
    stage it cannot export; see :mod:`hetopt.kinds._shared.export`)."""
    inst, source = load(instance)
    kind = kind_of(inst)
    try:
        name = kind.resolve_objective(inst, objective)
        parsed = kind.parse_params(dict(params))
        inst = kind.instance_for(inst, parsed)
        kind.check(inst, name, parsed)  # export refuses what solve refuses, before building
        method = kind.method_for(name, inst, parsed)
        built = method.build(inst, parsed)
        method.export_objective(inst, parsed, built)
        return built.model
    except InstanceError as exc:
        raise (exc.with_source(source) if source and not exc.source else exc) from None


def verify(instance: InstanceLike, result: Result) -> Verification:
    """Re-check a result against an instance with the kind's independent verifier."""
    inst, _ = load(instance)
    return pipeline.verify(kind_of(inst), inst, result)
