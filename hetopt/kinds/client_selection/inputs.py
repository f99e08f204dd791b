"""What a ``client_selection`` solve needs and which method it runs, without a solver.

Light (numpy only): ``hetopt validate`` runs the same checks and the same choice as a
solve without importing Pyomo. :func:`choose` returns lazy entries
(:class:`~hetopt.kinds.base.LazyMethod`) standing for the methods of :mod:`.methods`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from ...errors import InstanceError
from .._shared.choice import Choice, chosen
from ..base import LazyMethod, MethodEntry
from . import algorithms as A
from .algorithms import parallel_need_mbps
from .data import (
    ClientArrays,
    ClientSelectionInstance,
    ClientSelectionParams,
    SampleArrays,
)

_M = "hetopt.kinds.client_selection.methods"

TESTING = "min_duration"
"""The objective of Oort's testing-set selection (the other two count clients)."""

LP_ROUND_PAIRS = 20_000
"""``min_duration`` with more (client, class) pairs than this uses ``lp_round`` by default."""


def _tol(arr: ClientArrays) -> float:
    return A.REL_TOL * arr.deadline


def parallel_need(inst: ClientSelectionInstance) -> np.ndarray:
    """Bandwidth (Mbit/s) each client needs to finish by the deadline (0 without a budget)."""
    arr = inst.arrays
    if inst.bandwidth_budget_mbps is None or inst.update_mb is None:
        return np.zeros(arr.n)
    return parallel_need_mbps(arr.ready, arr.deadline, inst.update_mb)


def parallel_feasible(inst: ClientSelectionInstance) -> np.ndarray:
    """Clients that can finish alone with parallel uploads (and need finite bandwidth)."""
    arr = inst.arrays
    return arr.can_finish & np.isfinite(parallel_need(inst))


def testing_members(inst: ClientSelectionInstance, sa: SampleArrays) -> np.ndarray:
    """Clients the testing model needs: allowed clients holding samples of a targeted
    class or belonging to a ``group_min`` group, plus every must-include client."""
    arr = inst.arrays
    useful = np.zeros(arr.n, dtype=bool)
    useful[sa.client] = True
    if inst.group_min:  # a member without useful samples can still fill a quota
        gpos = {g: j for j, g in enumerate(arr.groups)}
        useful |= np.isin(arr.group, [gpos[g] for g, q in inst.group_min.items() if q > 0])
    return np.flatnonzero((useful & arr.allowed) | arr.forced)


def fast_path_blocker(inst: ClientSelectionInstance, objective: str) -> str | None:
    """Why the exact fast path cannot solve this instance (``None``: it can)."""
    if objective == TESTING:
        return "min_duration has no combinatorial fast path"
    if inst.group_min or inst.group_max:
        return "group quotas need the MILP"
    arr = inst.arrays
    if inst.uplink == "shared":
        if inst.must_include:
            return "must_include needs the MILP with a shared uplink"
        if objective == "max_weight":
            cand = arr.allowed & arr.can_finish
            if inst.max_clients is not None:
                most = int(A.moore_hodgson(arr.upload[cand], arr.slack[cand], _tol(arr)).sum())
                if most > inst.max_clients:
                    return "max_clients binds, which Lawler-Moore's DP does not model"
            plan = A.dp_plan(arr.upload[cand], arr.slack[cand], _tol(arr))
            if plan is None:
                return (
                    "Lawler-Moore needs upload_s in multiples of 0.001 s and a table of at most "
                    f"{A.DP_MAX_CELLS:,} cells"
                )
        return None
    if objective == "max_weight" and inst.bandwidth_budget_mbps is not None:
        return "a weighted knapsack needs the MILP"
    return None


def precheck(inst: ClientSelectionInstance, objective: str) -> str | None:
    """A reason the instance is infeasible that needs no solver (``None``: none found)."""
    arr = inst.arrays
    nf = int(arr.forced.sum())
    if inst.max_clients is not None and nf > inst.max_clients:
        return f"must_include lists {nf} clients > max_clients = {inst.max_clients}"
    if inst.group_min:
        if objective == TESTING:
            sa = SampleArrays.from_instance(inst)
            eligible = np.zeros(arr.n, dtype=bool)
            eligible[testing_members(inst, sa)] = True
        elif inst.uplink == "shared":
            eligible = (arr.allowed & arr.can_finish) | arr.forced
        else:
            eligible = (arr.allowed & parallel_feasible(inst)) | arr.forced
        gpos = {g: j for j, g in enumerate(arr.groups)}
        for g, q in inst.group_min.items():
            have = int(np.sum(eligible & (arr.group == gpos[g])))
            if have < q:
                return f"group_min.{g} = {q} but only {have} client(s) of group {g!r} can take part"
    if objective == TESTING or not nf:
        return None
    ok = arr.can_finish if inst.uplink == "shared" else parallel_feasible(inst)
    bad = arr.forced & ~ok
    if bad.any():
        return f"must-include client {arr.ids[int(np.argmax(bad))]!r} cannot upload by the deadline"
    if inst.uplink == "shared":
        _, finish, _ = A.shared_schedule(arr.ready, arr.upload, arr.forced)
        if np.nanmax(finish) > arr.deadline + _tol(arr):
            return "the must-include clients alone cannot all upload by the deadline"
    elif inst.bandwidth_budget_mbps is not None:
        need = float(parallel_need(inst)[arr.forced].sum())
        if need > inst.bandwidth_budget_mbps * (1 + A.REL_TOL):
            return f"the must-include clients need {need:.6g} Mbit/s > the budget"
    return None


def require_targets(inst: ClientSelectionInstance) -> None:
    if not inst.class_targets:
        raise InstanceError(
            "required for the min_duration objective (test samples wanted per class)",
            "class_targets",
        )


def greedy_ok(inst: ClientSelectionInstance) -> bool:
    """Whether FedCS's greedy applies (shared uplink, no must_include, no quotas)."""
    return inst.uplink == "shared" and not (inst.must_include or inst.group_min or inst.group_max)


def _refused(objective: str, milp: MethodEntry, why: str) -> LazyMethod:
    """The entry that refuses the parameters, saying ``why`` (read back by :func:`refusal`)."""
    return LazyMethod(f"{_M}:Refused", objective, milp, why)


def refusal(entry: MethodEntry) -> str | None:
    """Why :func:`choose` refused the parameters (``None``: it did not)."""
    if isinstance(entry, LazyMethod) and entry.target == f"{_M}:Refused":
        return str(entry.args[2])
    return None


def _choose_testing(
    objective: str,
    inst: ClientSelectionInstance,
    method: str,
    baseline: bool,
    milp: MethodEntry,
) -> LazyMethod:
    require_targets(inst)
    if method in ("fast", "greedy"):
        return _refused(objective, milp, f"method {method!r} does not apply to min_duration")
    reason = precheck(inst, objective)
    if reason:
        return LazyMethod(f"{_M}:Infeasible", objective, milp, reason)
    choice: Choice | None = None
    if method == "auto":
        pairs = len(SampleArrays.from_instance(inst).client)
        method = "lp_round" if pairs > LP_ROUND_PAIRS else "milp"
        if method == "lp_round":
            choice = Choice(
                f"auto chose lp_round (LP relaxation, then a restricted MILP: feasible with "
                f"a bound, optimal only when the bound is met) because {pairs:,} "
                f"(client, class) pairs > {LP_ROUND_PAIRS:,}; method='milp' solves the full "
                "MILP",
                fallback=True,
            )
        else:
            choice = Choice(
                f"auto chose the MILP ({pairs:,} (client, class) pairs <= {LP_ROUND_PAIRS:,}); "
                "method='lp_round' for large pools"
            )
    picked = LazyMethod(f"{_M}:LpRound" if method == "lp_round" else f"{_M}:Testing", milp)
    return picked.then(chosen, choice) if choice is not None else picked


def _choose_count(
    objective: str,
    inst: ClientSelectionInstance,
    method: str,
    baseline: bool,
    milp: MethodEntry,
) -> LazyMethod:
    if method == "lp_round":
        return _refused(objective, milp, "method 'lp_round' applies only to min_duration")
    reason = precheck(inst, objective)
    if reason:
        return LazyMethod(f"{_M}:Infeasible", objective, milp, reason)
    blocker = fast_path_blocker(inst, objective)
    choice: Choice | None = None
    if method == "auto":
        method = "fast" if blocker is None else "milp"
        if blocker is None:
            choice = Choice("auto chose the exact fast path (no side constraint needs the MILP)")
        else:
            other = " or 'greedy' (FedCS's heuristic)" if greedy_ok(inst) else ""
            choice = Choice(
                f"auto fell back from the exact fast path to the MILP because {blocker}; "
                f"choose method='milp' (the same, without this warning){other}",
                fallback=True,
            )
    if method == "fast" and blocker is not None:
        return _refused(objective, milp, f"the fast path does not apply: {blocker}")
    if method == "greedy":
        if not greedy_ok(inst):
            return _refused(
                objective,
                milp,
                "FedCS's greedy needs a shared uplink and no must_include or group quotas",
            )
        return LazyMethod(f"{_M}:Greedy", objective, milp)
    picked = (
        LazyMethod(f"{_M}:Fast", objective, milp)
        if method == "fast"
        else LazyMethod(f"{_M}:CountMilp", objective, blocker)
    )
    if baseline and greedy_ok(inst):
        picked = LazyMethod(f"{_M}:WithBaseline", objective, picked)
    return picked.then(chosen, choice) if choice is not None else picked


_CHOOSERS: Mapping[
    str, Callable[[str, ClientSelectionInstance, str, bool, MethodEntry], LazyMethod]
] = {
    "max_clients": _choose_count,
    "max_weight": _choose_count,
    TESTING: _choose_testing,
}


def choose(
    objective: str,
    inst: ClientSelectionInstance,
    params: ClientSelectionParams,
    milp: MethodEntry,
) -> LazyMethod:
    """The method a solve of ``objective`` runs with ``params`` (``milp``: the
    objective's MILP, which every method exports)."""
    method: str = params.method
    formulation = params.formulation
    if formulation != "erd":
        if inst.uplink != "shared" or objective == TESTING:
            return _refused(
                objective, milp, "formulation 'disjunctive' applies to the shared-uplink MILP"
            )
        if method in ("fast", "greedy", "lp_round"):
            return _refused(
                objective, milp, f"formulation {formulation!r} needs method 'milp' or 'auto'"
            )
        method = "milp"
    return _CHOOSERS[objective](objective, inst, method, params.baseline, milp)
