"""The methods of ``client_selection`` (the choice among them: :mod:`.inputs`).

* :class:`CountMilp` / :class:`TestingMilp`: the MILPs (one build, one HiGHS solve);
* :class:`Fast`: the exact combinatorial fast path (Moore-Hodgson, Lawler-Moore,
  sorting), no solver;
* :class:`Greedy`: FedCS's greedy heuristic, no solver;
* :class:`LpRound`: ``min_duration`` on large pools: the LP relaxation, then restricted
  MILPs;
* :class:`Infeasible`: infeasibility proven without a solver (the precheck);
* :class:`WithBaseline`: another method, plus FedCS's greedy as a reported baseline;
* :class:`Refused`: parameters a solve rejects (``hetopt export`` still writes the MILP).

:func:`.inputs.choose` makes the choice the ``method``, ``formulation`` and ``baseline``
parameters and the instance call for, in the order earlier releases checked them (so
the same input gets the same error). Every method's ``build`` is the MILP of its
objective: what ``hetopt export`` writes whatever the method.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ...contract import (
    UNSET,
    BuildMethodBase,
    Built,
    Method,
    Outcome,
    RunMethodBase,
    SolveView,
)
from ...errors import UsageError
from ...options import SolveOptions
from ...pipeline import run_method
from ...status import Status
from .._shared.choice import ReportsChoice
from .._shared.export import rescale_objective
from . import algorithms as A
from . import formulations as F
from .data import (
    ClientSelectionInstance,
    ClientSelectionParams,
    SampleArrays,
)
from .inputs import (
    TESTING,
    _tol,
    parallel_feasible,
    parallel_need,
    require_targets,
)

if TYPE_CHECKING:
    from ...pipeline import Session

log = logging.getLogger(__name__)

DEFAULT_MIP_REL_GAP = 1e-4
"""HiGHS's default ``mip_rel_gap`` (the whole-sample test of ``min_duration`` uses it
unless the solve options set another)."""


# ---------------------------------------------------------------------------- tables
def selection_table(inst: ClientSelectionInstance, mask: np.ndarray) -> pd.DataFrame:
    """``selection(client, group, selected, ready_s, upload_s, weight, upload_start_s,
    finish_s, ...)`` with one row per client of the instance."""
    arr = inst.arrays
    groups = np.array([*arr.groups, None], dtype=object)[arr.group]
    cols: dict[str, Any] = {
        "client": arr.ids,
        "group": groups,
        "selected": mask,
        "ready_s": arr.ready,
        "upload_s": arr.upload,
        "weight": arr.weight,
    }
    if inst.uplink == "shared":
        start, finish, order = A.shared_schedule(arr.ready, arr.upload, mask)
        cols.update(upload_start_s=start, finish_s=finish, upload_order=order)
    else:
        start = np.where(mask, arr.ready, np.nan)
        if inst.bandwidth_budget_mbps is not None:
            need = parallel_need(inst)
            # each selected client gets exactly the bandwidth that ends its upload at D
            cols.update(
                upload_start_s=start,
                finish_s=np.where(mask, arr.deadline, np.nan),
                bandwidth_mbps=np.where(mask, need, np.nan),
            )
        else:
            cols.update(upload_start_s=start, finish_s=start + arr.upload)
    return pd.DataFrame(cols)


def count_value(inst: ClientSelectionInstance, objective: str, mask: np.ndarray) -> float:
    """``max_clients``: the number selected; ``max_weight``: their total weight."""
    if objective == "max_clients":
        return float(mask.sum())
    return float(inst.arrays.weight[mask].sum())


def _rel_gap(bound: float, value: float) -> float:
    return abs(bound - value) / max(abs(value), 1e-9)


def _mask(inst: ClientSelectionInstance, built: Built, solution: SolveView) -> np.ndarray:
    members = built.layout.members
    y = solution.values(built.model.select, range(len(members)))
    mask = np.zeros(inst.arrays.n, dtype=bool)
    mask[members[y > 0.5]] = True
    return mask


# ---------------------------------------------------------------------------- MILPs
_COUNT_BUILDERS: Mapping[tuple[str, str], Callable[[ClientSelectionInstance, str], Built]] = {
    ("shared", "erd"): F.build_shared,
    ("shared", "disjunctive"): F.build_shared_disjunctive,
    # the parallel uplink has one model (a solve refuses formulation="disjunctive" there;
    # ``hetopt export`` writes the knapsack, as earlier releases did)
    ("parallel", "erd"): F.build_parallel,
    ("parallel", "disjunctive"): F.build_parallel,
}


class _Scaled:
    """A MILP whose objective is divided by ``layout.scale``: HiGHS's bound and the
    exported objective in the objective's own unit."""

    def unscale_bound(self, built: Built, bound: float) -> float:
        return bound * built.layout.scale

    def export_objective(
        self,
        instance: ClientSelectionInstance,
        params: ClientSelectionParams,
        built: Built,
    ) -> None:
        """The objective in its own unit (the model's is divided by ``layout.scale``)."""
        rescale_objective(built.model, built.layout.scale)


class CountMilp(_Scaled, ReportsChoice, BuildMethodBase):
    """``max_clients`` / ``max_weight`` as a MILP: :func:`~.formulations.build_shared`
    (or ``build_shared_disjunctive``) with a shared uplink, the knapsack
    :func:`~.formulations.build_parallel` with parallel uploads.

    ``blocker`` (why the fast path did not run) is reported in ``info``.
    """

    def __init__(self, objective: str, blocker: str | None = None):
        self.objective = objective
        self.blocker = blocker

    def build(self, instance: ClientSelectionInstance, params: ClientSelectionParams) -> Built:
        return _COUNT_BUILDERS[instance.uplink, params.formulation](instance, self.objective)

    def describe(
        self,
        instance: ClientSelectionInstance,
        params: ClientSelectionParams,
        built: Built,
    ) -> dict[str, Any]:
        info: dict[str, Any] = {"method": "milp"}
        if instance.uplink == "shared":
            info["formulation"] = params.formulation
        if self.blocker is not None:
            info["fast_path_blocker"] = self.blocker
        return {**info, **self.choice_details()}

    def extract(
        self,
        instance: ClientSelectionInstance,
        params: ClientSelectionParams,
        built: Built,
        solution: SolveView,
    ) -> Outcome:
        mask = _mask(instance, built, solution)
        value = count_value(instance, self.objective, mask)
        tables = {"selection": selection_table(instance, mask)}
        if solution.bound is None:  # keep HiGHS's (none)
            return Outcome(value, tables)
        bound = solution.bound * built.layout.scale
        return Outcome(value, tables, bound=bound, gap=_rel_gap(bound, value))


class TestingMilp(_Scaled, BuildMethodBase):
    """``min_duration`` (Oort's testing-set selection) as a MILP
    (:func:`~.formulations.build_testing`), restricted to ``members`` if given.

    Samples are fractional in the model; the extractor assigns whole samples exactly
    (:func:`~.algorithms.integer_assignment`) and calls the result optimal only if that
    costs at most ``gap_tol`` (relative) over the model's bound. ``details`` are
    reported in ``info`` (default ``{"method": "milp"}``).
    """

    def __init__(
        self,
        members: np.ndarray | None = None,
        gap_tol: float = DEFAULT_MIP_REL_GAP,
        details: Mapping[str, Any] | None = None,
    ):
        self.members = members
        self.gap_tol = gap_tol
        self.details = dict(details) if details is not None else {"method": "milp"}

    def build(self, instance: ClientSelectionInstance, params: ClientSelectionParams) -> Built:
        require_targets(instance)
        return F.build_testing(instance, self.members)

    def describe(
        self,
        instance: ClientSelectionInstance,
        params: ClientSelectionParams,
        built: Built,
    ) -> dict[str, Any]:
        return dict(self.details)

    def extract(
        self,
        instance: ClientSelectionInstance,
        params: ClientSelectionParams,
        built: Built,
        solution: SolveView,
    ) -> Outcome:
        inst = instance
        arr = inst.arrays
        mask = _mask(inst, built, solution)
        sa = SampleArrays.from_instance(inst)
        targets = np.array([(inst.class_targets or {})[c] for c in sa.classes])
        S = np.flatnonzero(mask)
        local = np.full(arr.n, -1, dtype=np.int64)
        local[S] = np.arange(len(S))
        keep = local[sa.client] >= 0
        pc, pk, cnt = local[sa.client[keep]], sa.cls[keep], sa.count[keep]
        fixed = (arr.ready + arr.upload)[S]
        found = A.integer_assignment(fixed, arr.sample_s[S], targets, pc, pk, cnt)
        if found is None:  # cannot happen for a feasible MILP selection; be honest anyway
            return Outcome(
                status=Status.ERROR,
                termination="no whole-sample assignment for the selection",
            )
        value, take = found
        nz = take > 0
        cs = pd.DataFrame(
            {
                "client": [arr.ids[i] for i in S[pc[nz]]],
                "class": [sa.classes[j] for j in pk[nz]],
                "samples": np.round(take[nz]).astype(np.int64),
            }
        )
        q = np.zeros(arr.n)
        np.add.at(q, S[pc[nz]], take[nz])
        # upload times do not apply to testing: keep the columns that do
        sel = selection_table(inst, mask)[["client", "group", "selected", "ready_s", "upload_s"]]
        sel = sel.assign(sample_s=arr.sample_s)
        sel["test_samples"] = q.astype(np.int64)
        sel["duration_s"] = np.where(mask, arr.ready + arr.upload + arr.sample_s * q, np.nan)
        tables = {"selection": sel, "class_samples": cs}
        t_ref = built.layout.scale
        bound = None if solution.bound is None else min(solution.bound * t_ref, value)
        proven = bound if bound is not None else (solution.objective or 0.0) * t_ref
        status = termination = None
        if solution.status == Status.OPTIMAL and value - proven > self.gap_tol * max(value, 1e-9):
            # the fractional-sample optimum was proven; whole samples cost more than
            # the gap tolerance (HiGHS's mip_rel_gap) allows calling optimal
            status = Status.FEASIBLE
            termination = "selection optimal with fractional samples; whole-sample gap"
        if bound is None:  # keep HiGHS's (none)
            return Outcome(value, tables, status=status, termination=termination)
        return Outcome(
            value,
            tables,
            status=status,
            termination=termination,
            bound=bound,
            gap=_rel_gap(bound, value),
        )


def _gap_tol(options: SolveOptions) -> float:
    return DEFAULT_MIP_REL_GAP if options.mip_rel_gap is None else options.mip_rel_gap


class _Exports(ReportsChoice, RunMethodBase):
    """A method whose exported model is its objective's MILP (``milp``)."""

    def __init__(self, objective: str, milp: Method):
        self.objective = objective
        self.milp = milp

    def build(self, instance: ClientSelectionInstance, params: ClientSelectionParams) -> Built:
        return self.milp.build(instance, params)

    def export_objective(
        self,
        instance: ClientSelectionInstance,
        params: ClientSelectionParams,
        built: Built,
    ) -> None:
        self.milp.export_objective(instance, params, built)


class Testing(_Exports):
    """The full ``min_duration`` MILP, its whole-sample test at the session's
    ``mip_rel_gap`` (an extractor does not see the solve options)."""

    def __init__(self, milp: Method):
        super().__init__("min_duration", milp)

    def run(
        self,
        session: Session,
        instance: ClientSelectionInstance,
        params: ClientSelectionParams,
    ) -> Outcome:
        method = TestingMilp(gap_tol=_gap_tol(session.options))
        outcome, _ = session.solve_method(method, instance, params)
        return self.report_choice(outcome)


# ---------------------------------------------------------------------------- no solver
def _selected(
    session: Session,
    inst: ClientSelectionInstance,
    objective: str,
    mask: np.ndarray,
    status: Status,
    termination: str,
    method: str,
    bound: float | None,
) -> Outcome:
    with session.timer("load_s"):
        tables = {"selection": selection_table(inst, mask)}
        value = count_value(inst, objective, mask)
    gap = None if bound is None else _rel_gap(bound, value)
    return Outcome(value, tables, {"method": method}, status, termination, bound, gap)


def fast_select(inst: ClientSelectionInstance, objective: str) -> tuple[np.ndarray, str]:
    """The fast path's selection and the name of the algorithm that made it."""
    arr = inst.arrays
    tol = _tol(arr)
    K = inst.max_clients
    if inst.uplink == "shared":
        cand = np.flatnonzero(arr.allowed & arr.can_finish)
        mask = np.zeros(arr.n, dtype=bool)
        if objective == "max_clients":
            keep = A.moore_hodgson(arr.upload[cand], arr.slack[cand], tol)
            chosen = cand[keep]
            if K is not None and len(chosen) > K:  # any subset of an on-time set is on time
                chosen = chosen[np.argsort(arr.upload[chosen], kind="stable")[:K]]
            mask[chosen] = True
            return mask, "moore_hodgson"
        plan = A.dp_plan(arr.upload[cand], arr.slack[cand], tol)
        assert plan is not None
        mask[cand[A.lawler_moore(plan.p, plan.d, arr.weight[cand])]] = True
        return mask, "lawler_moore"
    feasible = arr.allowed & parallel_feasible(inst)
    mask = arr.forced.copy()
    rest = feasible & ~arr.forced
    room = arr.n if K is None else K - int(arr.forced.sum())
    if inst.bandwidth_budget_mbps is None:
        idx = np.flatnonzero(rest)
        if objective == "max_weight":
            idx = idx[np.argsort(-arr.weight[idx], kind="stable")]
        mask[idx[:room]] = True
        return mask, "sort"
    need = parallel_need(inst)
    left = inst.bandwidth_budget_mbps - float(need[arr.forced].sum())
    mask |= A.smallest_first(need, left, rest, room)
    return mask, "smallest_need_first"


class Fast(_Exports):
    """The exact fast path: Moore-Hodgson, Lawler-Moore or sorting (no solver)."""

    def run(
        self,
        session: Session,
        instance: ClientSelectionInstance,
        params: ClientSelectionParams,
    ) -> Outcome:
        with session.timer("solve_s"):
            mask, name = fast_select(instance, self.objective)
        value = count_value(instance, self.objective, mask)
        outcome = _selected(
            session,
            instance,
            self.objective,
            mask,
            Status.OPTIMAL,
            f"optimal ({name}, exact)",
            name,
            bound=value,
        )
        return self.report_choice(outcome)


def greedy_mask(inst: ClientSelectionInstance) -> np.ndarray:
    """FedCS's greedy selection (:func:`~.algorithms.fedcs_greedy`)."""
    arr = inst.arrays
    return A.fedcs_greedy(
        arr.ready,
        arr.upload,
        arr.deadline,
        arr.allowed & arr.can_finish,
        inst.max_clients,
        _tol(arr),
    )


class Greedy(_Exports):
    """FedCS's greedy heuristic (feasible, no bound)."""

    def run(
        self,
        session: Session,
        instance: ClientSelectionInstance,
        params: ClientSelectionParams,
    ) -> Outcome:
        with session.timer("solve_s"):
            mask = greedy_mask(instance)
        return _selected(
            session,
            instance,
            self.objective,
            mask,
            Status.FEASIBLE,
            "feasible (FedCS greedy heuristic, no bound)",
            "fedcs_greedy",
            bound=None,
        )


class WithBaseline(_Exports):
    """``inner``, then FedCS's greedy as a baseline: ``greedy_objective``, ``greedy_s``
    and, when ``inner`` is proven optimal, ``greedy_gap = (opt - greedy) / opt``."""

    def __init__(self, objective: str, inner: Method):
        super().__init__(objective, inner)
        self.inner = inner

    def run(
        self,
        session: Session,
        instance: ClientSelectionInstance,
        params: ClientSelectionParams,
    ) -> Outcome:
        outcome = self.report_choice(
            run_method(session.kind, self.inner, instance, params, session)
        )
        if outcome.status is None or not outcome.status.has_solution:
            return outcome
        t0 = time.perf_counter()
        g = count_value(instance, self.objective, greedy_mask(instance))
        outcome.details["greedy_objective"] = g
        outcome.details["greedy_s"] = time.perf_counter() - t0
        if outcome.status == Status.OPTIMAL and outcome.objective_value is not None:
            opt = outcome.objective_value
            outcome.details["greedy_gap"] = (opt - g) / opt if opt > 0 else 0.0
        return outcome


class Infeasible(_Exports):
    """Infeasibility found without a solver (:func:`precheck`)."""

    def __init__(self, objective: str, milp: Method, reason: str):
        super().__init__(objective, milp)
        self.reason = reason
        self.method = "precheck"

    def run(
        self,
        session: Session,
        instance: ClientSelectionInstance,
        params: ClientSelectionParams,
    ) -> Outcome:
        return _infeasible(self.reason, self.method)


def _infeasible(reason: str, method: str) -> Outcome:
    return Outcome(
        status=Status.INFEASIBLE,
        termination=f"infeasible: {reason}",
        details={"method": method},
        bound=None,
        gap=None,
    )


class Refused(_Exports):
    """Parameters a solve rejects with a :class:`~hetopt.UsageError` (exit 2); the
    exported model is still the objective's MILP, as in earlier releases."""

    def __init__(self, objective: str, milp: Method, reason: str):
        super().__init__(objective, milp)
        self.reason = reason

    def run(
        self,
        session: Session,
        instance: ClientSelectionInstance,
        params: ClientSelectionParams,
    ) -> Outcome:
        raise UsageError(self.reason)


# ---------------------------------------------------------------------------- lp_round
class LpRound(_Exports):
    """``min_duration`` on large pools: LP relaxation, then the MILP restricted to the
    clients the LP uses most.

    Guarantee: the answer is feasible (verified) and ``bound`` is a valid lower bound on
    the true optimum (the larger of the LP relaxation's optimum and the coverage bound,
    see ``models/client_selection.md``); ``gap`` is measured against it. Status is
    ``optimal`` only when the answer meets that bound.
    """

    def __init__(self, milp: Method):
        super().__init__(TESTING, milp)

    def run(
        self,
        session: Session,
        instance: ClientSelectionInstance,
        params: ClientSelectionParams,
    ) -> Outcome:
        return self.report_choice(self._run(session, instance, params))

    def _run(
        self,
        session: Session,
        instance: ClientSelectionInstance,
        params: ClientSelectionParams,
    ) -> Outcome:
        inst = instance
        t0 = time.perf_counter()
        with session.timer("build_s"):
            relaxed = F.build_testing(inst, relax=True)
        view = session.open(relaxed).solve(stage="lp_relaxation")
        t_ref = relaxed.layout.scale
        if view.status == Status.INFEASIBLE:
            return _infeasible("the LP relaxation is infeasible", "lp_round")
        if not view.status.has_solution or view.x is None:
            return Outcome(
                status=view.status,
                termination=f"LP relaxation: {view.termination}",
                details={"method": "lp_round"},
                bound=None,
                gap=None,
            )
        lp_bound = float(view.objective or 0.0) * t_ref
        session.notify("lp_relaxation", 1, 1, "LP relaxation solved", bound=lp_bound)
        members = relaxed.layout.members
        y = view.values(relaxed.model.select, range(len(members)))
        support = int((y > 1e-9).sum())
        C = len(inst.class_targets or {})
        size = 2 * inst.max_clients + C if inst.max_clients else support
        gap_tol = _gap_tol(session.options)
        while True:  # widen the candidate pool until the restricted MILP has a solution
            chosen = _round_candidates(inst, members, y, size)
            t1 = time.perf_counter()
            info = {
                "method": "lp_round",
                "lp_bound": lp_bound,
                "candidates": len(chosen),
                "lp_s": t1 - t0,
            }
            session.notify("restricted_milp", message=f"{len(chosen):,} candidate clients")
            restricted = TestingMilp(chosen, gap_tol, info)
            res, _ = session.solve_method(restricted, inst, params, stage="restricted_milp")
            assert res.status is not None
            if res.status.has_solution or size >= len(members):
                break
            if res.status not in (Status.INFEASIBLE, Status.UNBOUNDED):
                break  # a limit: do not start a bigger MILP
            size *= 4
        if not res.status.has_solution:
            return Outcome(
                details=res.details,
                status=Status.NO_SOLUTION,
                termination=(
                    f"LP rounding found no feasible selection among {len(chosen)} candidate "
                    f"clients ({res.termination})"
                ),
                bound=lp_bound,
                gap=None if res.gap is UNSET else res.gap,
            )
        value = float(res.objective_value or 0.0)
        # the LP bound of this min-max model is weak: also bound by coverage within T
        sa = SampleArrays.from_instance(inst)
        arr = inst.arrays
        targets = np.array([(inst.class_targets or {})[c] for c in sa.classes])
        ok = arr.allowed[sa.client]
        forced_t = float((arr.ready + arr.upload)[arr.forced].max()) if arr.forced.any() else 0.0
        cover = A.coverage_lower_bound(
            arr.ready + arr.upload,
            arr.sample_s,
            targets,
            sa.client[ok],
            sa.cls[ok],
            sa.count[ok],
            max(lp_bound, forced_t),
            value,
        )
        details = dict(res.details)
        details["coverage_bound"] = cover
        lp_bound = max(lp_bound, forced_t, cover)
        gap = max(value - lp_bound, 0.0) / max(abs(value), 1e-9)
        status = Status.OPTIMAL if gap <= 1e-6 and res.status == Status.OPTIMAL else Status.FEASIBLE
        term = (
            "LP bound met" if status == Status.OPTIMAL else "LP rounding: feasible, gap to LP bound"
        )
        return Outcome(value, res.tables, details, status, term, lp_bound, gap)


def _round_candidates(
    inst: ClientSelectionInstance, members: np.ndarray, y: np.ndarray, size: int
) -> np.ndarray:
    """Forced clients, the ``size`` clients with the largest LP ``select`` values and,
    per quota group, its ``2 q + 1`` best members."""
    arr = inst.arrays
    order = np.argsort(-y, kind="stable")
    L = max(size, 1)
    pick = set(members[order[:L]].tolist())
    pick.update(np.flatnonzero(arr.forced).tolist())
    gpos = {g: j for j, g in enumerate(arr.groups)}
    for g, lo in (inst.group_min or {}).items():
        in_g = np.flatnonzero(arr.group[members[order]] == gpos[g])
        pick.update(members[order[in_g[: 2 * lo + 1]]].tolist())
    return np.array(sorted(pick), dtype=np.int64)
