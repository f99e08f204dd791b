"""The one path from an instance to a verified :class:`~hetopt.Result`.

``build -> compile -> HiGHS -> extract -> verify -> Result``, for every kind:

* :func:`solve` picks the kind's method for the objective (:mod:`hetopt.contract`) and
  runs it on a :class:`Session`: a :class:`~hetopt.contract.BuildMethod` is built,
  compiled, solved once and extracted by :meth:`Session.solve_method`; a
  :class:`~hetopt.contract.RunMethod` solves as often as it needs to on live models the
  session opens (water-filling levels, bisections, Pareto points, lexicographic stages).
* :func:`finish` is the only place a solve's :class:`Result` is built, and the only
  place verification is enforced: the tables are checked against the kind's
  declaration, then by the kind's independent verifier; a solution that fails either
  is reported with status ``error``, never ``optimal`` or ``feasible``.

Drivers that combine several solves (decomposition, rolling horizons, persistent
policies) hand their combined :class:`~hetopt.contract.Outcome` to :func:`finish` too.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .contract import (
    UNSET,
    Built,
    Outcome,
    SolveView,
    check_details,
    check_tables,
)
from .errors import Interrupted, SolveError
from .options import SolveOptions
from .result import Result, SolverReport, StageReport, Verification
from .status import Status

if TYPE_CHECKING:
    from .contract import BuildMethod, Method
    from .highs import CompiledModel, HighsModel, RawSolution
    from .kinds.base import Kind
    from .progress import ProgressCallback

log = logging.getLogger(__name__)

PHASES = ("build_s", "transfer_s", "solve_s", "load_s")
"""The timings every result reports (seconds): model building, compiling and passing
the model to HiGHS, HiGHS's own solve time, reading the solution into tables."""

_SOLVER_COUNTERS = ("simplex_iterations", "ipm_iterations", "mip_nodes")


@dataclass
class _Stage:
    solves: int = 0
    solve_s: float = 0.0
    simplex_iterations: int = 0
    ipm_iterations: int = 0
    mip_nodes: int = 0


class LiveModel:
    """A compiled model held in one persistent HiGHS instance, opened by a session.

    Edit it through :attr:`highs_model` (row and column bounds, costs, coefficients)
    and solve it again with :meth:`solve`: HiGHS restarts from the previous basis.
    """

    def __init__(self, session: Session, built: Built, highs_model: HighsModel):
        self.session = session
        self.built = built
        self.highs_model = highs_model

    @property
    def model(self) -> Any:
        return self.built.model

    @property
    def layout(self) -> Any:
        return self.built.layout

    @property
    def compiled(self) -> CompiledModel:
        return self.highs_model.compiled

    def solve(
        self,
        options: SolveOptions | None = None,
        lp_method: str = "auto",
        stage: str = "main",
        unscale: Callable[[float], float] | None = None,
    ) -> SolveView:
        """Run HiGHS (``options`` default to the session's) and account for the run.

        ``unscale`` turns the model's objective into the kind's unit for progress
        events (without it they say ``scaled=True``)."""
        return self.session.run_highs(self, options, lp_method, stage, unscale)

    def view(self, raw: RawSolution, options: SolveOptions | None = None) -> SolveView:
        return SolveView(self.compiled, raw, options)


class Session:
    """The solver side of one solve: options, timings, live HiGHS models, a report.

    Methods that solve many times open their models here (:meth:`open`) and solve them
    (:meth:`LiveModel.solve`); every HiGHS run is timed and counted per stage, so the
    result's ``timings`` and ``report`` cover the whole method.

    Parameters
    ----------
    kind
        The kind being solved.
    options
        The solve options the user gave.
    progress
        Receives :class:`~hetopt.progress.Progress` events: from inside HiGHS's MIP
        solves, after every HiGHS run, and from the method (:meth:`notify`).
    """

    def __init__(
        self,
        kind: Kind,
        options: SolveOptions | None = None,
        params: Any = None,
        progress: ProgressCallback | None = None,
    ):
        self.kind = kind
        self.options = options or SolveOptions()
        self.params = params
        """The validated parameters of the solve (reported as ``Result.params``)."""
        self.progress = progress
        self.started = time.perf_counter()
        self.timings: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        self._stages: dict[str, _Stage] = {}
        self._totals: dict[str, int] = {}
        self.last: SolveView | None = None

    # ---------------------------------------------------------------- progress
    def expect(self, stage: str, total: int | None) -> None:
        """Say how many HiGHS runs (or steps) ``stage`` will take, for progress events
        (``None``: unknown)."""
        if total is None:
            self._totals.pop(stage, None)
        else:
            self._totals[stage] = int(total)

    def notify(
        self,
        stage: str,
        done: int | None = None,
        total: int | None = None,
        message: str = "",
        incumbent: float | None = None,
        bound: float | None = None,
        gap: float | None = None,
    ) -> None:
        """Report a step of a multi-solve method (a Pareto point, an iteration, ...) to
        the session's progress callback, if any."""
        if self.progress is None:
            return
        from .progress import Progress, deliver, finite

        deliver(
            self.progress,
            Progress(
                self.kind.name,
                stage,
                "step",
                self.elapsed(),
                done,
                total if total is not None else self._totals.get(stage),
                finite(incumbent),
                finite(bound),
                finite(gap),
                message=message,
            ),
        )

    def _mip_receiver(
        self, stage: str, unscale: Callable[[float], float] | None
    ) -> Callable[[dict[str, Any]], None] | None:
        if self.progress is None:
            return None
        from .progress import Progress, deliver, finite

        callback = self.progress
        name = self.kind.name

        def receive(d: dict[str, Any]) -> None:
            inc, bnd = finite(d["incumbent"]), finite(d["bound"])
            if unscale is not None:
                inc = None if inc is None else unscale(inc)
                bnd = None if bnd is None else unscale(bnd)
            deliver(
                callback,
                Progress(
                    name,
                    stage,
                    "mip",
                    self.elapsed(),
                    incumbent=inc,
                    bound=bnd,
                    gap=finite(d["gap"]) if inc is not None else None,
                    nodes=int(d["nodes"]),
                    scaled=unscale is None,
                ),
            )

        return receive

    # ---------------------------------------------------------------- clock
    def elapsed(self) -> float:
        """Seconds since the session started."""
        return time.perf_counter() - self.started

    def restart_clock(self) -> None:
        """Start a new solve on the same session (persistent policies re-solve warm)."""
        self.started = time.perf_counter()
        self.timings = dict.fromkeys(PHASES, 0.0)
        self._stages = {}
        self.last = None

    def remaining(self, options: SolveOptions | None = None) -> SolveOptions:
        """``options`` (default: the session's) with the time limit reduced by the time
        already spent (at least 1 ms)."""
        options = options or self.options
        if options.time_limit_s is None:
            return options
        left = max(1e-3, options.time_limit_s - self.elapsed())
        return options.replace(time_limit_s=left)

    @contextmanager
    def timer(self, key: str) -> Iterator[None]:
        """Add the time spent in the ``with`` block to ``timings[key]``."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.timings[key] = self.timings.get(key, 0.0) + time.perf_counter() - t0

    def add_time(self, key: str, seconds: float) -> None:
        self.timings[key] = self.timings.get(key, 0.0) + seconds

    # ---------------------------------------------------------------- models
    def build(self, method: BuildMethod | Method, instance: Any, params: Any) -> Built:
        """``method.build`` timed as ``build_s``."""
        with self.timer("build_s"):
            built = method.build(instance, params)
        if not isinstance(built, Built):
            raise SolveError(f"{type(method).__name__}.build returned {type(built).__name__}")
        return built

    def open(self, built: Built) -> LiveModel:
        """Compile ``built`` and pass it to a new HiGHS instance (timed as ``transfer_s``)."""
        from .highs import HighsModel, compile_model

        with self.timer("transfer_s"):
            hm = HighsModel(compile_model(built.model))
        return LiveModel(self, built, hm)

    def adopt(self, built: Built, highs_model: HighsModel) -> LiveModel:
        """Wrap a model already held in HiGHS (a persistent policy's)."""
        return LiveModel(self, built, highs_model)

    def run_highs(
        self,
        live: LiveModel,
        options: SolveOptions | None = None,
        lp_method: str = "auto",
        stage: str = "main",
        unscale: Callable[[float], float] | None = None,
    ) -> SolveView:
        """Solve ``live`` once; HiGHS's own time goes to ``solve_s`` and to ``stage``.

        With a progress callback, MIP progress is reported during the run (``unscale``
        converts the model's objective to the kind's unit) and a ``solved`` event after
        it."""
        opts = options or self.options
        receiver = self._mip_receiver(stage, unscale)
        if receiver is None:  # (the call every HighsModel-like object understands)
            raw = live.highs_model.solve(opts, lp_method)
        else:
            raw = live.highs_model.solve(opts, lp_method, progress=receiver)
        self.timings["solve_s"] += raw.solve_s
        st = self._stages.setdefault(stage, _Stage())
        st.solves += 1
        st.solve_s += raw.solve_s
        for key in _SOLVER_COUNTERS:  # HiGHS says -1 for "not applicable"
            setattr(st, key, getattr(st, key) + max(0, int(raw.info.get(key, 0))))
        view = live.view(raw, opts)
        self.last = view
        if self.progress is not None:
            from .progress import Progress, deliver

            deliver(
                self.progress,
                Progress(
                    self.kind.name,
                    stage,
                    "solved",
                    self.elapsed(),
                    st.solves,
                    self._totals.get(stage),
                    message=raw.status.value,
                ),
            )
        return view

    def record_solves(self, report: SolverReport | None, prefix: str = "") -> None:
        """Add the HiGHS runs of another solve (a sub-result) to this session's report."""
        if report is None:
            return
        for name, s in report.stages.items():
            st = self._stages.setdefault(prefix + name, _Stage())
            st.solves += s.solves
            st.solve_s += s.solve_s
            st.simplex_iterations += s.simplex_iterations
            st.ipm_iterations += s.ipm_iterations
            st.mip_nodes += s.mip_nodes

    def solve_method(
        self,
        method: BuildMethod,
        instance: Any,
        params: Any,
        options: SolveOptions | None = None,
        stage: str = "main",
    ) -> tuple[Outcome, LiveModel]:
        """Build, compile, (MIP-)start, solve once and extract: one model's outcome.

        The outcome's status, termination, bound and gap are resolved (HiGHS's unless
        the extractor set its own); it is not verified yet (:func:`finish` does that).
        Returns the outcome and the live model (for re-solves).
        """
        built = self.build(method, instance, params)
        with self.timer("transfer_s"):
            from .highs import HighsModel, compile_model

            hm = HighsModel(compile_model(built.model))
            x0 = method.start(instance, params, built, hm.compiled)
            if x0 is not None:
                hm.set_start(x0)
        live = LiveModel(self, built, hm)
        opts = method.options(instance, params, built, options or self.options)
        view = live.solve(opts, method.lp_method, stage, lambda v: method.unscale_bound(built, v))
        with self.timer("load_s"):
            outcome = self.resolve(method, instance, params, built, view)
        return outcome, live

    def resolve(
        self,
        method: BuildMethod,
        instance: Any,
        params: Any,
        built: Built,
        view: SolveView,
    ) -> Outcome:
        """Turn one HiGHS solution into an outcome (HiGHS's status, bound and gap unless
        the extractor overrides them)."""
        raw = view.raw
        status, termination = raw.status, raw.termination
        details: dict[str, Any] = dict(method.describe(instance, params, built))
        details.update({k: v for k, v in raw.info.items() if k in _SOLVER_COUNTERS and v > 0})
        bound, gap = raw.bound, raw.gap
        value: float | None = None
        tables: dict[str, Any] = {}
        timings: dict[str, float] = {}
        if status.has_solution:
            ex = method.extract(instance, params, built, view)
            value, tables, timings = ex.objective_value, ex.tables, ex.timings
            details.update(ex.details)
            if ex.bound is not UNSET:
                bound = ex.bound
                gap = None if ex.gap is UNSET else ex.gap
            elif ex.gap is not UNSET:
                gap = ex.gap
            if ex.status is not None:
                status = ex.status
                termination = ex.termination or termination
                if not status.has_solution:
                    value, bound, gap = None, None, None
        elif bound is not None:
            bound = method.unscale_bound(built, bound)
        return Outcome(value, tables, details, status, termination, bound, gap, timings)

    # ---------------------------------------------------------------- report
    def report(self) -> SolverReport:
        stages = {
            k: StageReport(s.solves, s.solve_s, s.simplex_iterations, s.ipm_iterations, s.mip_nodes)
            for k, s in self._stages.items()
        }
        return SolverReport(
            solves=sum(s.solves for s in stages.values()),
            solve_s=sum(s.solve_s for s in stages.values()),
            simplex_iterations=sum(s.simplex_iterations for s in stages.values()),
            ipm_iterations=sum(s.ipm_iterations for s in stages.values()),
            mip_nodes=sum(s.mip_nodes for s in stages.values()),
            stages=stages,
        )


# ------------------------------------------------------------------------- entry points
def run_method(
    kind: Kind,
    method: Method,
    instance: Any,
    params: Any,
    session: Session,
) -> Outcome:
    """Run ``method`` on ``session``: one model (build method) or its own loop."""
    if hasattr(method, "run"):
        outcome = method.run(session, instance, params)
        if not isinstance(outcome, Outcome) or outcome.status is None:
            raise SolveError(f"{type(method).__name__}.run must return an Outcome with a status")
        return outcome
    outcome, _ = session.solve_method(method, instance, params)  # type: ignore[arg-type]
    return outcome


def announce_choice(kind: Kind, method: Any) -> None:
    """Log what an automatic choice picked (``method.choice``: text and whether it falls
    back from a faster exact path, then as a warning) on the kind's logger."""
    choice = getattr(method, "choice", None)
    text = getattr(choice, "text", None)
    if isinstance(text, str) and text:
        level = logging.WARNING if getattr(choice, "fallback", False) else logging.INFO
        logging.getLogger(f"hetopt.kinds.{kind.name}").log(level, "%s: %s", kind.name, text)


def solve(
    kind: Kind,
    instance: Any,
    objective: str,
    options: SolveOptions | None = None,
    params: Any = None,
    progress: ProgressCallback | None = None,
) -> Result:
    """Solve a validated ``instance`` of ``kind`` for ``objective`` (already resolved)
    with validated ``params`` (default: the kind's defaults); ``progress`` receives
    :class:`~hetopt.progress.Progress` events."""
    params = kind.parse_params({}) if params is None else params
    instance = kind.instance_for(instance, params)
    kind.check(instance, objective, params)
    method = kind.method_for(objective, instance, params)
    announce_choice(kind, method)

    def run() -> Result:
        session = Session(kind, options, params, progress)
        outcome = run_method(kind, method, instance, params, session)
        return finish(kind, instance, objective, outcome, session)

    return interruptible(run)


def interruptible(run: Any) -> Result:
    """Call ``run()`` (which returns a Result) as one solve that Ctrl-C may stop.

    The outermost solve of the main thread forgets an earlier Ctrl-C first; if Ctrl-C
    stopped HiGHS meanwhile, it raises :class:`~hetopt.errors.Interrupted` carrying the
    honest result (drivers that run many solves wrap their whole loop in this)."""
    from . import highs

    with one_solve() as top:
        result: Result = run()
    if top and highs.interrupted():
        raise Interrupted(interrupted_result(result))
    return result


@contextmanager
def one_solve() -> Iterator[bool]:
    """A stretch of HiGHS runs as one solve for Ctrl-C: the outermost solve of the main
    thread forgets an earlier Ctrl-C as it starts, and solves inside it do not. Yields
    whether this is that outermost solve. :func:`interruptible` is this for a run that
    returns a :class:`Result`; a driver that returns none (a trace replay) uses it
    directly and checks :func:`hetopt.highs.interrupted` after its runs."""
    top = _enter()
    try:
        yield top
    finally:
        _leave()


_LOCAL = threading.local()


def _enter() -> bool:
    """Count nested solves of this thread; the main thread's outermost solve forgets an
    earlier Ctrl-C. Returns whether this is that outermost solve."""
    from . import highs

    depth = getattr(_LOCAL, "depth", 0)
    _LOCAL.depth = depth + 1
    top = depth == 0 and threading.current_thread() is threading.main_thread()
    if top:
        highs.clear_interrupt()
    return top


def _leave() -> None:
    _LOCAL.depth = getattr(_LOCAL, "depth", 1) - 1


def interrupted_result(result: Result) -> Result:
    """``result`` marked as stopped by Ctrl-C (termination ``interrupted: ...``); a
    solution it carries was verified like any other, so it stays ``feasible`` at best."""
    status = Status.FEASIBLE if result.status == Status.OPTIMAL else result.status
    termination = result.termination
    if not termination.lower().startswith("interrupted"):
        termination = f"interrupted: {termination}"
    return replace(result, status=status, termination=termination)


def build(kind: Kind, instance: Any, objective: str, params: Any = None) -> Built:
    """The model ``objective`` is solved with (its first stage for multi-solve methods)."""
    params = kind.parse_params({}) if params is None else params
    instance = kind.instance_for(instance, params)
    return kind.method_for(objective, instance, params).build(instance, params)


def finish(
    kind: Kind,
    instance: Any,
    objective: str,
    outcome: Outcome,
    session: Session | None = None,
    timings: Mapping[str, float] | None = None,
    runtime_s: float | None = None,
) -> Result:
    """Build the :class:`Result` of ``outcome`` and verify it: the one place both happen.

    Timings are the session's phases plus ``outcome.timings`` (or ``timings``, replacing
    them, for drivers that report their own split), then ``verify_s``.
    """
    if outcome.status is None:
        raise SolveError("an outcome reached the pipeline without a status")
    t0 = time.perf_counter()
    status = outcome.status
    termination = outcome.termination if outcome.termination is not None else status.value
    bound = None if outcome.bound is UNSET else outcome.bound
    gap = None if outcome.gap is UNSET else outcome.gap
    if timings is not None:
        times = dict(timings)
    else:
        times = dict(session.timings) if session is not None else dict.fromkeys(PHASES, 0.0)
        for k, v in outcome.timings.items():
            times[k] = times.get(k, 0.0) + v
    _check_details(kind, outcome.details)
    fields: dict[str, Any] = {
        "kind": kind.name,
        "objective": objective,
        "status": status,
        "termination": termination,
        "objective_value": outcome.objective_value,
        "bound": bound,
        "gap": gap,
        "tables": dict(outcome.tables),
        "info": dict(outcome.details),
        "report": session.report() if session is not None else None,
        "params": _params_dict(session.params if session is not None else None),
        "instance": instance,
    }
    result = Result(**fields)
    verification = verify(kind, instance, result) if status.has_solution else None
    times["verify_s"] = times.get("verify_s", 0.0) + time.perf_counter() - t0
    if runtime_s is None:
        runtime_s = session.elapsed() if session is not None else sum(times.values())
    # the Result with everything found since, made from the same fields (what
    # ``dataclasses.replace`` makes, without reading them back; another copy only when
    # the verifier rejects the solution)
    if verification is None:
        return Result(**fields, timings=times, runtime_s=runtime_s)
    return _enforce(Result(**fields, verification=verification, timings=times, runtime_s=runtime_s))


def check(kind: Kind, instance: Any, objective: str, outcome: Outcome) -> Verification:
    """Verify a provisional outcome (a method deciding between candidates, e.g. falling
    back when a solution is rejected) exactly as :func:`finish` will."""
    status = outcome.status or Status.FEASIBLE
    provisional = Result(
        kind=kind.name,
        objective=objective,
        status=status,
        termination=outcome.termination or "",
        objective_value=outcome.objective_value,
        tables=dict(outcome.tables),
        info=dict(outcome.details),
    )
    return verify(kind, instance, provisional)


def _params_dict(params: Any) -> dict[str, Any]:
    if params is None:
        return {}
    if hasattr(params, "model_dump"):
        return dict(params.model_dump(mode="json"))
    return dict(params)


def verify(kind: Kind, instance: Any, result: Result) -> Verification:
    """The tables checked against the kind's declaration, then the kind's verifier."""
    problems = check_tables(kind.tables, result.tables)
    if problems:
        return Verification(ok=False, violations=tuple(problems), checks=("declared tables",))
    return kind.verify(instance, result)


def _enforce(result: Result) -> Result:
    """A solution the verifier rejected is reported with status ``error``."""
    v = result.verification
    if v is None or v.ok or not result.status.has_solution:
        return result
    first = v.violations[0] if v.violations else "?"
    return replace(
        result,
        status=Status.ERROR,
        termination=f"{result.termination}; verifier rejected the solution: {first}",
    )


def _check_details(kind: Kind, details: Mapping[str, Any]) -> None:
    """Undeclared ``info`` entries are a bug of the kind: an error under the test suite
    (``HETOPT_CHECK_CONTRACT=1``), a debug message otherwise."""
    problems = check_details(kind.details, details)
    if not problems:
        return
    if os.environ.get("HETOPT_CHECK_CONTRACT"):
        raise SolveError(f"kind {kind.name!r}: " + "; ".join(problems))
    log.debug("kind %r: %s", kind.name, "; ".join(problems))
