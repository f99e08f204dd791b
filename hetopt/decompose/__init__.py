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
``concurrent.futures``-style executor: see :mod:`hetopt.executors`. Where they run is
decided by :func:`place` once the parts are known, and reported in ``info["executor"]``
and ``info["executor_choice"]`` (and logged): an explicit ``executor`` or
``workers=W`` is honoured; ``workers="auto"`` (the default, also when ``workers`` is
not given) runs them on the shared
process pool only when the decomposer's cost estimate says the pool pays for itself
(:func:`auto_placement`). Every merged result is built and verified by
:func:`hetopt.pipeline.finish` (:func:`finish_merged`).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
import pandas as pd

from ..contract import Decomposer, Detail, Outcome
from ..errors import OptionsError, UsageError
from ..executors import SerialExecutor, SubmitExecutor, executor_for, run_all
from ..options import SolveOptions
from ..result import Result
from ..status import Status

if TYPE_CHECKING:
    from ..kinds.base import Kind
    from ..pipeline import Session

log = logging.getLogger(__name__)

__all__ = [
    "AUTO",
    "DETAILS",
    "MAX_COMPONENT_TASKS",
    "POOL_START_S",
    "SHIP_S",
    "Placement",
    "auto_placement",
    "components",
    "finish_merged",
    "place",
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
    Detail(
        "executor", "str", "where the sub-problems ran: 'serial', 'process_pool', 'dask' or 'given'"
    ),
    Detail("workers", "int", "processes the sub-problems ran on (1: in this process)"),
    Detail("executor_choice", "str", "why they ran there (the automatic rule's estimate)"),
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


# --------------------------------------------------------------------------- placement
AUTO = "auto"
"""``workers=AUTO``: the shared process pool when it pays for itself, else serial."""

POOL_START_S = 2.0
"""Seconds to start the shared pool's workers (each imports hetopt's solve path once:
1.5-2 s of CPU on an idle core, measured; much more on a loaded machine, where the parts'
solves slow down as much, so the rule's ratio holds)."""

SHIP_S = 0.005
"""Seconds per sub-problem to pickle its arrays to a warm worker and its answer back
(a 4,096-job max-min part is ~0.3 MB each way; measured 1-5 ms)."""

PAYOFF = 0.8
"""The pool is used only when its estimate is below this share of the serial one (the
estimates are rough: a near tie runs serially, which starts no process)."""


@dataclass(frozen=True)
class Placement:
    """Where the sub-problems of one decomposition run, and why (``info`` entries)."""

    executor: SubmitExecutor
    kind: Literal["serial", "process_pool", "dask", "given"]
    workers: int
    why: str

    def details(self) -> dict[str, Any]:
        return {"executor": self.kind, "workers": self.workers, "executor_choice": self.why}


def _makespan(estimates: Sequence[float], workers: int) -> float:
    """Longest-processing-time-first schedule of the parts on ``workers`` processes."""
    loads = [0.0] * workers
    for t in sorted(estimates, reverse=True):
        i = loads.index(min(loads))
        loads[i] += t
    return max(loads) if loads else 0.0


def _estimate(estimates_s: Sequence[float], workers: int) -> tuple[bool, str]:
    """Whether the pool of ``workers`` pays for the parts (:func:`auto_placement`'s
    inequality), and the estimate as a sentence."""
    from ..executors import pool_running

    k = len(estimates_s)
    serial = float(sum(estimates_s))
    warm = pool_running(workers)
    start = 0.0 if warm else POOL_START_S
    pool = start + _makespan(estimates_s, workers) + SHIP_S * k
    state = "running" if warm else f"not running: ~{POOL_START_S:g} s to start"
    est = (
        f"{k} parts estimated {serial:.3g} s in this process vs {pool:.3g} s on a pool of "
        f"{workers} processes ({state})"
    )
    return pool < PAYOFF * serial, est


def auto_placement(estimates_s: Sequence[float]) -> Placement:
    """The automatic rule (``workers="auto"``): run the parts on the shared pool of
    ``W = min(cores, parts)`` processes when

        POOL_START_S (0 if that pool is already up) + LPT makespan of the parts on W
        + SHIP_S * parts  <  PAYOFF * (sum of the parts' estimated seconds),

    else serially in this process. ``estimates_s`` are the decomposer's estimates of
    each part's solve time in this process (``gpu_cluster``: from the LP's columns after
    symmetry grouping, :data:`hetopt.kinds.gpu_cluster.decompose.PART_S`)."""
    from ..executors import process_pool
    from ..highs import available_cores

    k = len(estimates_s)
    workers = min(available_cores(), k)
    if workers < 2:
        why = f"auto: serial ({k} part{'s' * (k != 1)}, {available_cores()} core available)"
        return Placement(SerialExecutor(), "serial", 1, why)
    pays, est = _estimate(estimates_s, workers)
    if pays:
        return Placement(process_pool(workers), "process_pool", workers, f"auto: pool; {est}")
    return Placement(SerialExecutor(), "serial", 1, f"auto: serial; {est}")


class _Plan:
    """The driver's executor: decided by :func:`place` once the parts are known (or at
    the first submit, for a decomposer that does not call :func:`place`)."""

    def __init__(
        self,
        stack: contextlib.ExitStack,
        workers: int | str | None,
        scheduler_address: str | None,
        executor: SubmitExecutor | None,
    ):
        self._stack = stack
        self._workers = workers
        self._address = scheduler_address
        self._given = executor
        self.placement: Placement | None = None

    def place(self, estimates_s: Sequence[float]) -> Placement:
        if self.placement is not None:
            return self.placement
        w = self._workers
        if self._given is not None:
            name = type(self._given).__name__
            p = Placement(self._given, "given", 0, f"the executor given ({name})")
        elif self._address:
            ex = self._stack.enter_context(executor_for(scheduler_address=self._address))
            p = Placement(ex, "dask", 0, f"the Dask scheduler at {self._address}")
        elif w is None or w == AUTO:
            p = auto_placement(estimates_s)
        elif w == 1:
            p = Placement(SerialExecutor(), "serial", 1, "serial (workers=1)")
        else:
            assert isinstance(w, int)
            why = f"a process pool of {w} (workers={w})"
            pays, est = _estimate(estimates_s, w) if estimates_s else (True, "")
            if not pays:  # honoured, but say what it costs
                why += f"; the automatic rule would run them serially: {est}"
            ex = self._stack.enter_context(executor_for(workers=w))
            p = Placement(ex, "process_pool", w, why)
        log.info("decomposition: %s", p.why)
        self.placement = p
        return p

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        return self.place(()).executor.submit(fn, *args, **kwargs)


def place(executor: Any, estimates_s: Sequence[float]) -> Placement:
    """Where a decomposer's parts run: the driver's plan decides (explicit ``executor``
    or ``workers=W`` honoured, ``"auto"`` by :func:`auto_placement`); an executor a
    caller handed to a kind's function directly is used as given; ``None`` is serial."""
    if isinstance(executor, _Plan):
        return executor.place(estimates_s)
    if executor is None:
        return Placement(SerialExecutor(), "serial", 1, "serial (no executor given)")
    name = type(executor).__name__
    return Placement(executor, "given", 0, f"the executor given ({name})")


def _check_workers(workers: int | str | None) -> None:
    if workers is None or workers == AUTO:
        return
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise OptionsError(f"workers must be a positive integer or 'auto', got {workers!r}")


@contextlib.contextmanager
def _executor(
    workers: int | str | None, scheduler_address: str | None, executor: SubmitExecutor | None
) -> Iterator[_Plan]:
    _check_workers(workers)
    with contextlib.ExitStack() as stack:
        yield _Plan(stack, workers, scheduler_address, executor)


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
    where = place(executor, estimates(dec, inst, groups))
    outs = run_all(where.executor, solve_sub, [(s, name, wire(opts), dict(params)) for s in subs])
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
        **where.details(),
    }
    timings = sum_timings(parts_info, ("build_s", "transfer_s", "solve_s"))
    timings.update(
        {"split_s": t1 - t0, "parts_wall_s": t2 - t1, "merge_s": time.perf_counter() - t2}
    )
    return finish_merged(kind, inst, name, outcome, timings, session)


def estimates(dec: Any, instance: Any, groups: Sequence[np.ndarray]) -> list[float]:
    """The decomposer's estimate of each group's solve time in seconds (its optional
    ``estimate_s(instance, groups)``; without one every estimate is 0, so ``"auto"``
    runs serially)."""
    hook = getattr(dec, "estimate_s", None)
    if hook is None:
        return [0.0] * len(groups)
    return [float(t) for t in hook(instance, groups)]


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
    workers: int | str | None = AUTO,
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
        ``"auto"`` or ``None`` (not given, the default; ``--workers`` omitted): the shared
        process pool of ``min(cores, parts)`` processes when the decomposer's estimate
        says it pays for starting and feeding it (:func:`auto_placement`), else serially;
        an integer ``W >= 2`` (``--workers W``): the pool of ``W`` processes, always;
        ``1``: serially. The choice is in ``info["executor"]``, ``info["workers"]`` and
        ``info["executor_choice"]``, and logged (``hetopt.decompose``, INFO).
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
        ``parts`` (per-part jobs, status, build/solve/wall seconds), ``repair_gain`` and
        where the parts ran (``executor``, ``workers``, ``executor_choice``).
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
