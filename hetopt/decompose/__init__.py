"""Decomposition: solve one big instance as many small ones, serially or on a cluster.

The generic driver; what a kind can be split into is its
:class:`~hetopt.contract.Decomposer` (``Kind.decomposer``). Two methods (the mathematics
is in ``models/decomposition.md``):

* **exact** (:func:`solve_components`): the decomposer's ``components`` share no
  resource, so for an objective the decomposer lists as ``separable`` the optimum of the
  whole is the combination (min, max or sum) of the components' optima. Each component
  is solved by the kind's own ``solve`` on the decomposer's ``sub_instance``.
* **approximate** (the decomposer's ``partitioned``): the kind splits its instance into
  parts, solves them and merges them itself (e.g. ``gpu_cluster``'s POP / stratified
  partitions with a repair LP, ``multi_resource``'s server groups).

Sub-problems (instances or numpy arrays, never Pyomo models) run on any
``concurrent.futures``-style executor: see :mod:`hetopt.executors`. Every merged result
is built and verified by :func:`hetopt.pipeline.finish` (:func:`finish_merged`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from ..contract import Decomposer, Detail, Outcome
from ..errors import UsageError
from ..executors import SubmitExecutor, executor_for, run_all
from ..options import SolveOptions
from ..result import Result
from ..status import Status

if TYPE_CHECKING:
    from ..kinds.base import Kind
    from ..pipeline import Session

__all__ = [
    "DETAILS",
    "MAX_COMPONENT_TASKS",
    "components",
    "finish_merged",
    "session_for",
    "solve_components",
    "solve_decomposed",
    "solve_sub",
]

MAX_COMPONENT_TASKS = 64
"""More components than this are packed (largest first) into this many tasks."""

DETAILS = (
    Detail("decomposition", "str", "'components' (exact) or 'partitions' (approximate)"),
    Detail("method", "str", "the decomposition method ('components', 'stratified', 'pop', ...)"),
    Detail("partitions", "int", "sub-problems solved"),
    Detail("components", "int", "independent components of the instance"),
    Detail("combine", "str", "how the components' optima combine: 'min', 'max' or 'sum'"),
    Detail("parts", "list", "per sub-problem: jobs, status, objective value, timings"),
    Detail("repair_gain", "float", "objective after the repair minus the merged one"),
)
"""The ``info`` entries of every decomposed result (declared here, once, for every kind;
a decomposer's own entries are its ``details``)."""

_COMBINE: dict[str, Callable[[Sequence[float]], float]] = {
    "min": lambda v: float(min(v)),
    "max": lambda v: float(max(v)),
    "sum": lambda v: float(sum(v)),
}


# --------------------------------------------------------------------------- helpers
def _load(instance: Any) -> Any:
    from ..api import load

    inst, _ = load(instance)
    return inst


def _kind(inst: Any) -> Any:
    from ..kinds import get_kind

    return get_kind(inst.kind)


def _decomposer(kind: Any) -> Decomposer:
    if kind.decomposer is None:
        raise UsageError(f"decomposition is not available for kind {kind.name!r}")
    return kind.decomposer


def not_separable(kind: Any, objective: str) -> UsageError:
    """The error for an objective whose component decomposition is not proven."""
    return UsageError(
        f"objective {objective!r} of kind {kind.name!r} is not known to separate over "
        "components; solve it without decomposition"
    )


def components(instance: Any) -> list[np.ndarray]:
    """Job indices of each independent component of ``instance`` (largest first), as
    its kind's decomposer finds them."""
    inst = _load(instance)
    return _decomposer(_kind(inst)).components(inst)


def _pack(comps: list[np.ndarray], bins: int) -> list[np.ndarray]:
    """Greedy largest-first packing of components into at most ``bins`` groups."""
    if len(comps) <= bins:
        return comps
    groups: list[list[np.ndarray]] = [[] for _ in range(bins)]
    sizes = [0] * bins
    for c in comps:  # already largest first
        b = int(np.argmin(sizes))
        groups[b].append(c)
        sizes[b] += len(c)
    return [np.sort(np.concatenate(g)) for g in groups if g]


class _Declared:
    """``kind`` as :func:`hetopt.pipeline.finish` sees a merged result: its details plus
    the decomposition's (:data:`DETAILS` and the decomposer's own ``details``)."""

    def __init__(self, kind: Any):
        self._kind = kind
        own = getattr(kind.decomposer, "details", ())
        self.details = (*kind.details, *DETAILS, *own)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kind, name)


def session_for(kind: Any, options: SolveOptions | None, started: float) -> Session:
    """The session of a decomposition: its clock starts at ``started``; the parts'
    HiGHS runs are added to its report (:meth:`~hetopt.pipeline.Session.record_solves`)."""
    from ..pipeline import Session

    session = Session(kind, options)
    session.started = started
    return session


def finish_merged(
    kind: Any,
    instance: Any,
    objective: str,
    outcome: Outcome,
    timings: dict[str, float],
    session: Session,
) -> Result:
    """Build and verify a decomposition's merged result (:func:`hetopt.pipeline.finish`
    against the WHOLE instance), with the driver's own ``timings``; the runtime is the
    session's (from the start of the decomposition to the verified result)."""
    from ..pipeline import finish

    declared = cast("Kind", _Declared(kind))
    return finish(declared, instance, objective, outcome, session, timings)


# --------------------------------------------------------------------------- workers
def solve_sub(payload: tuple[Any, str, dict[str, Any], dict[str, Any]]) -> tuple[Result, float]:
    """Worker entry point: solve one sub-instance with the kind's own ``solve``."""
    inst, objective, options, params = payload
    t0 = time.perf_counter()
    result = _kind(inst).solve(inst, objective, SolveOptions.from_dict(options), **params)
    return result, time.perf_counter() - t0


def worker_options(options: SolveOptions | None) -> SolveOptions:
    """Sub-problems run with ``threads=1``."""
    return (options or SolveOptions()).replace(threads=1)


def wire(options: SolveOptions) -> dict[str, Any]:
    """Options as a plain dict: ``SolveOptions`` holds a mappingproxy, which cannot be
    pickled to a process pool or a Dask worker."""
    return options.to_dict()


def sum_timings(parts: list[dict[str, Any]], keys: Sequence[str]) -> dict[str, float]:
    """Per-phase totals over the parts' timings."""
    return {key: float(sum(p.get(key, 0.0) for p in parts)) for key in keys}


class _Lazy:
    """An executor opened (:func:`~hetopt.executors.executor_for`) at the first submit:
    a decomposition that needs no sub-problem opens no pool and no scheduler."""

    def __init__(self, stack: contextlib.ExitStack, *how: Any):
        self._stack = stack
        self._how = how
        self._ex: SubmitExecutor | None = None

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        if self._ex is None:
            self._ex = self._stack.enter_context(executor_for(*self._how))
        return self._ex.submit(fn, *args, **kwargs)


@contextlib.contextmanager
def _executor(
    workers: int | None, scheduler_address: str | None, executor: SubmitExecutor | None
) -> Iterator[SubmitExecutor]:
    with contextlib.ExitStack() as stack:
        yield _Lazy(stack, workers, scheduler_address, executor)


# --------------------------------------------------------------------------- exact
def solve_components(
    instance: Any,
    objective: str | None = None,
    options: SolveOptions | None = None,
    executor: SubmitExecutor | None = None,
    max_tasks: int = MAX_COMPONENT_TASKS,
    **params: Any,
) -> Result:
    """Exact decomposition: solve each connected component, combine, verify.

    Parameters
    ----------
    instance
        A validated instance, a dict or a path.
    objective
        An objective the kind's decomposer lists as ``separable``.
    options
        Solve options; every sub-solve runs with ``threads=1``.
    executor
        Where sub-problems run (default: in this thread, one after the other).
    max_tasks
        Components are packed into at most this many sub-problems.
    **params
        Kind parameters passed to every sub-solve (``agnostic=True``).

    Returns
    -------
    Result
        The merged result, checked by the kind's verifier against the WHOLE instance;
        ``optimal`` only when every component was solved to optimality.
    """
    t0 = time.perf_counter()
    inst = _load(instance)
    kind = _kind(inst)
    name = kind.resolve_objective(inst, objective)
    kind.check_params(params)
    dec = kind.decomposer
    rule = None if dec is None else dec.separable.get(name)
    if dec is None or rule is None:
        raise not_separable(kind, name)
    session = session_for(kind, options, t0)
    comps = dec.components(inst)
    groups = _pack(comps, max_tasks)
    subs = [inst if len(groups) == 1 else dec.sub_instance(inst, g) for g in groups]
    t1 = time.perf_counter()
    opts = worker_options(options)
    with executor_for(executor=executor) as ex:
        outs = run_all(ex, solve_sub, [(s, name, wire(opts), dict(params)) for s in subs])
    t2 = time.perf_counter()
    results = [r for r, _ in outs]
    for r in results:
        session.record_solves(r.report)
    parts_info = [
        {
            "jobs": len(g),
            "status": r.status.value,
            "objective_value": r.objective_value,
            "wall_s": w,
            **{k: float(v) for k, v in r.timings.items()},
            **{k: v for k, v in r.info.items() if k == "agnostic_lp_value"},
        }
        for g, (r, w) in zip(groups, outs, strict=True)
    ]
    outcome = _merge(rule, results)
    outcome.details = {
        **{k: v for k, v in results[0].info.items() if isinstance(v, str | bool)},
        "decomposition": "components",
        "method": "components",
        "partitions": len(groups),
        "components": len(comps),
        "combine": rule,
        "parts": parts_info,
        "repair_gain": 0.0,
    }
    timings = sum_timings(parts_info, ("build_s", "transfer_s", "solve_s"))
    timings.update(
        {"split_s": t1 - t0, "parts_wall_s": t2 - t1, "merge_s": time.perf_counter() - t2}
    )
    return finish_merged(kind, inst, name, outcome, timings, session)


def _merge(rule: str, results: list[Result]) -> Outcome:
    """The components' results combined: the first failure, else the combined value,
    bound and status with every table stacked."""
    order = [Status.ERROR, Status.UNBOUNDED, Status.INFEASIBLE, Status.NO_SOLUTION]
    statuses = [r.status for r in results]
    for bad in order:
        if bad in statuses:
            first = results[statuses.index(bad)]
            return Outcome(
                status=bad,
                termination=f"a component ended {bad.value}: {first.termination}",
                bound=None,
                gap=None,
            )
    combine = _COMBINE[rule]
    value = combine([r.objective_value for r in results if r.objective_value is not None])
    bounds = [r.bound for r in results]
    bound = combine([b for b in bounds if b is not None]) if None not in bounds else None
    gap = None
    if bound is not None:
        gap = abs(value - bound) / max(abs(value), 1e-9)
    status = Status.OPTIMAL if all(s == Status.OPTIMAL for s in statuses) else Status.FEASIBLE
    names = sorted({n for r in results for n in r.tables})
    tables = {
        n: pd.concat([r.tables[n] for r in results if n in r.tables], ignore_index=True)
        for n in names
    }
    termination = (
        "all components optimal"
        if status == Status.OPTIMAL
        else "some component stopped at a limit"
    )
    return Outcome(value, tables, {}, status, termination, bound, gap)


# --------------------------------------------------------------------------- entry point
def solve_decomposed(
    instance: Any,
    objective: str | None = None,
    options: SolveOptions | None = None,
    partitions: int = 1,
    workers: int | None = None,
    scheduler_address: str | None = None,
    method: str = "stratified",
    executor: SubmitExecutor | None = None,
    seed: int = 0,
    **params: Any,
) -> Result:
    """Solve ``instance`` by decomposition (what ``hetopt solve --partitions K`` runs).

    For an objective the kind's decomposer lists as separable, with ``partitions=1`` or
    when the instance has at least ``partitions`` components, the exact component
    decomposition is used (same optimum as the monolithic solve). Otherwise the
    decomposer splits the instance into ``partitions`` parts with ``method`` (see the
    kind's ``decompose`` module: ``gpu_cluster`` max-min fairness by ``"stratified"`` or
    ``"pop"`` parts; ``multi_resource`` by server groups, each solved as its own MILP).

    Parameters
    ----------
    instance
        Instance, dict or path.
    objective
        Objective name (default: the instance's, else the kind's first).
    options
        Solve options; each sub-solve runs with ``threads=1``.
    partitions
        Number of parts ``K`` (``--partitions``).
    workers
        Run parts on a process pool of this many processes (``--workers``).
    scheduler_address
        Run parts on this Dask scheduler (``--scheduler-address``).
    method
        Approximate method, one of the decomposer's ``methods`` (default
        ``"stratified"``).
    executor
        An explicit executor (overrides ``workers`` and ``scheduler_address``).
    seed
        Seed of the random part assignment.
    **params
        Kind parameters (``agnostic=True``).

    Returns
    -------
    Result
        Verified against the whole instance; ``info`` holds ``partitions``, ``method``,
        ``parts`` (per-part jobs, status, build/solve/wall seconds) and ``repair_gain``.
    """
    if partitions < 1:
        raise UsageError(f"partitions must be >= 1, got {partitions}")
    inst = _load(instance)
    kind = _kind(inst)
    name = kind.resolve_objective(inst, objective)
    kind.check_params(params)
    dec = _decomposer(kind)
    if method not in dec.methods:
        raise UsageError(
            f"unknown decomposition method {method!r}; expected one of: {', '.join(dec.methods)}"
        )
    with _executor(workers, scheduler_address, executor) as ex:
        if name in dec.separable and (partitions == 1 or len(dec.components(inst)) >= partitions):
            return solve_components(inst, name, options, ex, **params)
        return dec.partitioned(inst, name, params, partitions, method, options, ex, seed)
