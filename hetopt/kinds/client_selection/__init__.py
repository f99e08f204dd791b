"""The ``client_selection`` kind: federated-learning client selection per round.

Three formulations (see ``models/client_selection.md``):

* FedCS (Nishio & Yonetani, ICC 2019) with a shared uplink: uploads one at a time; pick
  clients that all finish by the round deadline (``max_clients`` / ``max_weight``).
* Parallel uplink with a total bandwidth budget: a 0-1 knapsack.
* Oort's testing-set selection (Lai et al., OSDI 2021, Appendix G): meet per-class
  sample targets with at most ``max_clients`` clients, minimising the slowest client's
  time (``min_duration``).

With no side constraint that needs the MILP, the exact combinatorial fast path runs
(Moore-Hodgson, Lawler-Moore, smallest-need-first); ``result.info["method"]`` says
which method ran.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import pyomo.environ as pyo

from ...errors import InstanceError
from ...highs import CompiledModel, RawSolution, solve_pyomo
from ...options import SolveOptions
from ...result import Result, Verification
from ...status import Status
from ..base import Extracted, Kind, Objective, UsageError, run_model
from . import algorithms as A
from . import formulations as F
from . import verify as V
from .data import Client, ClientArrays, ClientSelectionInstance, SampleArrays
from .generate import generate
from .rounds import RoundsResult, run_rounds

__all__ = [
    "KIND",
    "Client",
    "ClientSelectionInstance",
    "ClientSelectionKind",
    "RoundsResult",
    "fast_path_blocker",
    "generate",
    "run_rounds",
]

METHODS = ("auto", "milp", "fast", "greedy", "lp_round")
LP_ROUND_PAIRS = 20_000
"""``min_duration`` with more (client, class) pairs than this uses ``lp_round`` by default."""


def _tol(arr: ClientArrays) -> float:
    return A.REL_TOL * arr.deadline


def fast_path_blocker(inst: ClientSelectionInstance, objective: str) -> str | None:
    """Why the exact fast path cannot solve this instance (``None``: it can)."""
    if objective == "min_duration":
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


def _fast_select(inst: ClientSelectionInstance, objective: str) -> tuple[np.ndarray, str]:
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
    feasible = arr.allowed & F.parallel_feasible(inst)
    mask = arr.forced.copy()
    rest = feasible & ~arr.forced
    room = arr.n if K is None else K - int(arr.forced.sum())
    if inst.bandwidth_budget_mbps is None:
        idx = np.flatnonzero(rest)
        if objective == "max_weight":
            idx = idx[np.argsort(-arr.weight[idx], kind="stable")]
        mask[idx[:room]] = True
        return mask, "sort"
    need = F.parallel_need(inst)
    left = inst.bandwidth_budget_mbps - float(need[arr.forced].sum())
    mask |= A.smallest_first(need, left, rest, room)
    return mask, "smallest_need_first"


def _precheck(inst: ClientSelectionInstance, objective: str) -> str | None:
    """A reason the instance is infeasible that needs no solver (``None``: none found)."""
    arr = inst.arrays
    nf = int(arr.forced.sum())
    if inst.max_clients is not None and nf > inst.max_clients:
        return f"must_include lists {nf} clients > max_clients = {inst.max_clients}"
    if inst.group_min:
        if objective == "min_duration":
            sa = SampleArrays.from_instance(inst)
            eligible = np.zeros(arr.n, dtype=bool)
            eligible[F.testing_members(inst, sa)] = True
        elif inst.uplink == "shared":
            eligible = (arr.allowed & arr.can_finish) | arr.forced
        else:
            eligible = (arr.allowed & F.parallel_feasible(inst)) | arr.forced
        gpos = {g: j for j, g in enumerate(arr.groups)}
        for g, q in inst.group_min.items():
            have = int(np.sum(eligible & (arr.group == gpos[g])))
            if have < q:
                return f"group_min.{g} = {q} but only {have} client(s) of group {g!r} can take part"
    if objective == "min_duration" or not nf:
        return None
    ok = arr.can_finish if inst.uplink == "shared" else F.parallel_feasible(inst)
    bad = arr.forced & ~ok
    if bad.any():
        return f"must-include client {arr.ids[int(np.argmax(bad))]!r} cannot upload by the deadline"
    if inst.uplink == "shared":
        _, finish, _ = A.shared_schedule(arr.ready, arr.upload, arr.forced)
        if np.nanmax(finish) > arr.deadline + _tol(arr):
            return "the must-include clients alone cannot all upload by the deadline"
    elif inst.bandwidth_budget_mbps is not None:
        need = float(F.parallel_need(inst)[arr.forced].sum())
        if need > inst.bandwidth_budget_mbps * (1 + A.REL_TOL):
            return f"the must-include clients need {need:.6g} Mbit/s > the budget"
    return None


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
            need = F.parallel_need(inst)
            # each selected client gets exactly the bandwidth that ends its upload at D
            cols.update(
                upload_start_s=start,
                finish_s=np.where(mask, arr.deadline, np.nan),
                bandwidth_mbps=np.where(mask, need, np.nan),
            )
        else:
            cols.update(upload_start_s=start, finish_s=start + arr.upload)
    return pd.DataFrame(cols)


def _count_value(inst: ClientSelectionInstance, objective: str, mask: np.ndarray) -> float:
    if objective == "max_clients":
        return float(mask.sum())
    return float(inst.arrays.weight[mask].sum())


class ClientSelectionKind(Kind):
    name = "client_selection"
    description = "federated-learning client selection (FedCS, bandwidth knapsack, Oort testing)"
    objectives = (
        Objective("max_clients", "most clients that upload by the round deadline", "clients"),
        Objective("max_weight", "largest total weight of clients that upload by the deadline"),
        Objective(
            "min_duration",
            "Oort testing-set selection: meet per-class targets, minimise the slowest client",
            "s",
            "min",
        ),
    )
    instance_model = ClientSelectionInstance
    params = {
        "method": "auto (default) | milp | fast (exact Moore-Hodgson / Lawler-Moore / sorting) "
        "| greedy (FedCS heuristic) | lp_round (min_duration: LP relaxation + restricted MILP)",
        "baseline": "also run FedCS's greedy and report its gap (default true)",
        "formulation": "shared uplink MILP: erd (default; upload order fixed, proven optimal) "
        "| disjunctive (order as pair binaries, O(n^2), a cross-check)",
    }

    # ------------------------------------------------------------------ build
    def build(
        self,
        instance: ClientSelectionInstance,
        objective: str,
        method: str = "auto",
        baseline: bool = True,
        formulation: str = "erd",
    ) -> pyo.ConcreteModel:
        _check_formulation(formulation)
        if objective == "min_duration":
            _require_targets(instance)
            return F.build_testing(instance)
        if instance.uplink == "shared":
            if formulation == "disjunctive":
                return F.build_shared_disjunctive(instance, objective)
            return F.build_shared(instance, objective)
        return F.build_parallel(instance, objective)

    # ------------------------------------------------------------------ solve
    def solve(
        self,
        instance: ClientSelectionInstance,
        objective: str,
        options: SolveOptions,
        method: str = "auto",
        baseline: bool = True,
        formulation: str = "erd",
    ) -> Result:
        _check_formulation(formulation)
        if not isinstance(baseline, bool):  # -p baseline=bogus must not read as true
            raise UsageError(f"baseline must be true or false, got {baseline!r}")
        if formulation != "erd":
            if instance.uplink != "shared" or objective == "min_duration":
                raise UsageError("formulation 'disjunctive' applies to the shared-uplink MILP")
            if method in ("fast", "greedy", "lp_round"):
                raise UsageError(f"formulation {formulation!r} needs method 'milp' or 'auto'")
            method = "milp"
        if method not in METHODS:
            raise UsageError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
        inst = instance
        if objective == "min_duration":
            _require_targets(inst)
            if method in ("fast", "greedy"):
                raise UsageError(f"method {method!r} does not apply to min_duration")
            reason = _precheck(inst, objective)
            if reason:
                return self._infeasible(inst, objective, reason)
            if method == "auto":
                pairs = len(SampleArrays.from_instance(inst).client)
                method = "lp_round" if pairs > LP_ROUND_PAIRS else "milp"
            if method == "lp_round":
                return self._solve_lp_round(inst, options)
            return self._solve_milp(inst, objective, options, {"method": "milp"})
        if method == "lp_round":
            raise UsageError("method 'lp_round' applies only to min_duration")
        reason = _precheck(inst, objective)
        if reason:
            return self._infeasible(inst, objective, reason)
        blocker = fast_path_blocker(inst, objective)
        if method == "auto":
            method = "fast" if blocker is None else "milp"
        if method == "fast" and blocker is not None:
            raise UsageError(f"the fast path does not apply: {blocker}")
        greedy_ok = inst.uplink == "shared" and not (
            inst.must_include or inst.group_min or inst.group_max
        )
        if method == "greedy":
            if not greedy_ok:
                raise UsageError(
                    "FedCS's greedy needs a shared uplink and no must_include or group quotas"
                )
            return self._solve_greedy(inst, objective)
        if method == "fast":
            result = self._solve_fast(inst, objective)
        else:
            info: dict[str, Any] = {"method": "milp"}
            if inst.uplink == "shared":
                info["formulation"] = formulation
            if blocker is not None:
                info["fast_path_blocker"] = blocker
            result = self._solve_milp(inst, objective, options, info, formulation=formulation)
        if baseline and greedy_ok and result.status.has_solution:
            result = self._with_baseline(inst, objective, result)
        return result

    def _infeasible(self, inst: ClientSelectionInstance, objective: str, reason: str) -> Result:
        return Result(
            kind=self.name,
            objective=objective,
            status=Status.INFEASIBLE,
            termination=f"infeasible: {reason}",
            info={"method": "precheck"},
        )

    def _finish(
        self,
        inst: ClientSelectionInstance,
        objective: str,
        mask: np.ndarray,
        status: Status,
        termination: str,
        info: dict[str, Any],
        t0: float,
        t1: float,
        bound: float | None = None,
    ) -> Result:
        tables = {"selection": selection_table(inst, mask)}
        value = _count_value(inst, objective, mask)
        t2 = time.perf_counter()
        gap = None if bound is None else abs(bound - value) / max(abs(value), 1e-9)
        result = Result(
            kind=self.name,
            objective=objective,
            status=status,
            termination=termination,
            objective_value=value,
            bound=bound,
            gap=gap,
            tables=tables,
            info=info,
        )
        result = replace(result, verification=self.verify(inst, result))
        t3 = time.perf_counter()
        timings = {"build_s": 0.0, "transfer_s": 0.0, "solve_s": t1 - t0, "load_s": t2 - t1}
        timings["verify_s"] = t3 - t2
        return replace(result, timings=timings, runtime_s=t3 - t0)

    def _solve_fast(self, inst: ClientSelectionInstance, objective: str) -> Result:
        t0 = time.perf_counter()
        mask, method = _fast_select(inst, objective)
        t1 = time.perf_counter()
        value = _count_value(inst, objective, mask)
        return self._finish(
            inst,
            objective,
            mask,
            Status.OPTIMAL,
            f"optimal ({method}, exact)",
            {"method": method},
            t0,
            t1,
            bound=value,
        )

    def _greedy_mask(self, inst: ClientSelectionInstance) -> np.ndarray:
        arr = inst.arrays
        return A.fedcs_greedy(
            arr.ready,
            arr.upload,
            arr.deadline,
            arr.allowed & arr.can_finish,
            inst.max_clients,
            _tol(arr),
        )

    def _solve_greedy(self, inst: ClientSelectionInstance, objective: str) -> Result:
        t0 = time.perf_counter()
        mask = self._greedy_mask(inst)
        t1 = time.perf_counter()
        return self._finish(
            inst,
            objective,
            mask,
            Status.FEASIBLE,
            "feasible (FedCS greedy heuristic, no bound)",
            {"method": "fedcs_greedy"},
            t0,
            t1,
        )

    def _with_baseline(
        self, inst: ClientSelectionInstance, objective: str, result: Result
    ) -> Result:
        t0 = time.perf_counter()
        g = _count_value(inst, objective, self._greedy_mask(inst))
        info = dict(result.info)
        info["greedy_objective"] = g
        info["greedy_s"] = time.perf_counter() - t0
        if result.status == Status.OPTIMAL and result.objective_value is not None:
            opt = result.objective_value
            info["greedy_gap"] = (opt - g) / opt if opt > 0 else 0.0
        return replace(result, info=info)

    def _solve_milp(
        self,
        inst: ClientSelectionInstance,
        objective: str,
        options: SolveOptions,
        info: dict[str, Any],
        members: np.ndarray | None = None,
        formulation: str = "erd",
    ) -> Result:
        holder: dict[str, pyo.ConcreteModel] = {}

        def build() -> pyo.ConcreteModel:
            if objective == "min_duration":
                holder["m"] = F.build_testing(inst, members)
            elif inst.uplink == "shared" and formulation == "disjunctive":
                holder["m"] = F.build_shared_disjunctive(inst, objective)
            elif inst.uplink == "shared":
                holder["m"] = F.build_shared(inst, objective)
            else:
                holder["m"] = F.build_parallel(inst, objective)
            return holder["m"]

        def extract(cm: CompiledModel, raw: RawSolution) -> Extracted:
            gap_tol = 1e-4 if options.mip_rel_gap is None else options.mip_rel_gap
            return self._extract(inst, objective, holder["m"], cm, raw, gap_tol)

        result, _ = run_model(self, inst, objective, options, build, extract, "auto", info)
        if not result.status.has_solution and result.bound is not None:
            # no extraction ran: the solver's bound is still in the model's scaled units
            m = holder["m"]
            if objective == "min_duration":
                scale = float(pyo.value(m.t_ref))
            elif objective == "max_weight":
                scale = float(pyo.value(m.weight_scale))
            else:
                scale = 1.0
            result = replace(result, bound=result.bound * scale)
        return result

    def _extract(
        self,
        inst: ClientSelectionInstance,
        objective: str,
        m: pyo.ConcreteModel,
        cm: CompiledModel,
        raw: RawSolution,
        gap_tol: float = 1e-4,
    ) -> Extracted:
        arr = inst.arrays
        members = m._members.index
        y = raw.values(cm, m.select, range(len(members)))
        mask = np.zeros(arr.n, dtype=bool)
        mask[members[y > 0.5]] = True
        tables = {"selection": selection_table(inst, mask)}
        bound = None
        status = termination = None
        if objective == "min_duration":
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
                return Extracted(
                    None, {}, {}, Status.ERROR, "no whole-sample assignment for the selection"
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
            sel = tables["selection"][["client", "group", "selected", "ready_s", "upload_s"]]
            sel = sel.assign(sample_s=arr.sample_s)
            tables["selection"] = sel
            sel["test_samples"] = q.astype(np.int64)
            sel["duration_s"] = np.where(mask, arr.ready + arr.upload + arr.sample_s * q, np.nan)
            tables["class_samples"] = cs
            t_ref = float(pyo.value(m.t_ref))
            if raw.bound is not None:
                bound = min(raw.bound * t_ref, value)
            proven = bound if bound is not None else (raw.objective or 0.0) * t_ref
            if raw.status == Status.OPTIMAL and value - proven > gap_tol * max(value, 1e-9):
                # the fractional-sample optimum was proven; whole samples cost more than
                # the gap tolerance (HiGHS's mip_rel_gap) allows calling optimal
                status = Status.FEASIBLE
                termination = "selection optimal with fractional samples; whole-sample gap"
        else:
            value = _count_value(inst, objective, mask)
            if raw.bound is not None:
                scale = float(pyo.value(m.weight_scale)) if objective == "max_weight" else 1.0
                bound = raw.bound * scale
        gap = None if bound is None else abs(bound - value) / max(abs(value), 1e-9)
        return Extracted(value, tables, {}, status, termination, bound, gap)

    def _solve_lp_round(self, inst: ClientSelectionInstance, options: SolveOptions) -> Result:
        """LP relaxation, then the MILP restricted to the clients the LP uses most.

        Guarantee: the answer is feasible (verified) and ``bound`` is a valid lower bound
        on the true optimum (the larger of the LP relaxation's optimum and the coverage
        bound, see ``models/client_selection.md``); ``gap`` is measured against it.
        Status is ``optimal`` only when the answer meets that bound.
        """
        t0 = time.perf_counter()
        relaxed = F.build_testing(inst, relax=True)
        hm, raw, _ = solve_pyomo(relaxed, options)
        t_ref = float(pyo.value(relaxed.t_ref))
        if raw.status == Status.INFEASIBLE:
            return replace(
                self._infeasible(inst, "min_duration", "the LP relaxation is infeasible"),
                info={"method": "lp_round"},
            )
        if not raw.status.has_solution or raw.x is None:
            return Result(
                kind=self.name,
                objective="min_duration",
                status=raw.status,
                termination=f"LP relaxation: {raw.termination}",
                info={"method": "lp_round"},
            )
        lp_bound = float(raw.objective or 0.0) * t_ref
        members = relaxed._members.index
        y = raw.values(hm.compiled, relaxed.select, range(len(members)))
        support = int((y > 1e-9).sum())
        C = len(inst.class_targets or {})
        size = 2 * inst.max_clients + C if inst.max_clients else support
        while True:  # widen the candidate pool until the restricted MILP has a solution
            chosen = _round_candidates(inst, members, y, size)
            t1 = time.perf_counter()
            info = {
                "method": "lp_round",
                "lp_bound": lp_bound,
                "candidates": len(chosen),
                "lp_s": t1 - t0,
            }
            res = self._solve_milp(inst, "min_duration", options, info, members=chosen)
            if res.status.has_solution or size >= len(members):
                break
            if res.status not in (Status.INFEASIBLE, Status.UNBOUNDED):
                break  # a limit: do not start a bigger MILP
            size *= 4
        if not res.status.has_solution:
            return replace(
                res,
                status=Status.NO_SOLUTION,
                termination=(
                    f"LP rounding found no feasible selection among {len(chosen)} candidate "
                    f"clients ({res.termination})"
                ),
                bound=lp_bound,
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
        info = dict(res.info)
        info["coverage_bound"] = cover
        lp_bound = max(lp_bound, forced_t, cover)
        gap = max(value - lp_bound, 0.0) / max(abs(value), 1e-9)
        status = Status.OPTIMAL if gap <= 1e-6 and res.status == Status.OPTIMAL else Status.FEASIBLE
        term = (
            "LP bound met" if status == Status.OPTIMAL else "LP rounding: feasible, gap to LP bound"
        )
        return replace(
            res,
            status=status,
            termination=term,
            bound=lp_bound,
            gap=gap,
            info=info,
            runtime_s=res.runtime_s + (t1 - t0),
        )

    # ------------------------------------------------------------------ verify
    def verify(self, instance: ClientSelectionInstance, result: Result) -> Verification:
        return V.verify(instance, result.objective, result.objective_value, dict(result.tables))


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


FORMULATIONS = ("erd", "disjunctive")


def _check_formulation(formulation: str) -> None:
    if formulation not in FORMULATIONS:
        raise UsageError(
            f"formulation must be one of {', '.join(FORMULATIONS)}, got {formulation!r}"
        )


def _require_targets(inst: ClientSelectionInstance) -> None:
    if not inst.class_targets:
        raise InstanceError(
            "required for the min_duration objective (test samples wanted per class)",
            "class_targets",
        )


KIND = ClientSelectionKind()
