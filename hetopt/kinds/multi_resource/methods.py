"""The solve of the ``multi_resource`` kind: parameters, the integrated MILP and its stages.

:class:`Throughput` (a :class:`~hetopt.contract.RunMethod`) runs on one
:class:`~hetopt.pipeline.Session`, in three stages:

1. ``config_bound``: the configuration-only knapsack (:func:`config_bound`), for its bound
   on the total throughput and its profile per job (the warm start's preference);
2. ``main``: the integrated MILP (:class:`Integrated`), started from the greedy packing of
   :mod:`.heuristic` (the ``start`` hook);
3. ``fragmentation``: when the throughput is proven optimal, the same live HiGHS model is
   re-solved minimising the servers in use with the throughput fixed at its optimum
   (:func:`fragmentation`).

Status, bound and gap are always the throughput solve's. See ``models/multi_resource.md``.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyomo.environ as pyo

from ...contract import (
    BuildMethodBase,
    Built,
    Outcome,
    RunMethodBase,
    SolveView,
)
from ...highs import INF as HIGHS_INF
from ...highs import CompiledModel
from ...pipeline import LiveModel, Session
from ...status import Status
from . import formulations as F
from . import heuristic as H
from . import rules as RU
from .data import MultiResourceInstance, require_costs
from .params import FRAGMENTATION_TIME_LIMIT_S, MultiResourceParams

log = logging.getLogger(__name__)

DIAGNOSE_CHECK_S = 10.0
"""Time limit of one feasibility check of the deletion filter over hard rules."""


# --------------------------------------------------------------------------- stage 1
class ConfigOnly(BuildMethodBase):
    """The configuration-only knapsack (:func:`formulations.build_config_only`)."""

    def build(self, instance: MultiResourceInstance, params: Any) -> Built:
        return F.build_config_only(instance.arrays)


def config_bound(
    session: Session, instance: MultiResourceInstance
) -> tuple[dict[str, Any], dict[int, int]]:
    """Solve the configuration-only knapsack (stage ``config_bound``, the session's options).

    Returns its details (``config_only_status``, ``config_only_bound`` when known,
    ``config_only_s``) and its profile per job (job -> flat profile index; empty without
    a solution).
    """
    t0 = time.perf_counter()
    arr = instance.arrays
    built = session.build(ConfigOnly(), instance, None)
    live = session.open(built)
    sol = live.solve(session.options, stage="config_bound")
    out: dict[str, Any] = {"config_only_status": str(sol.status)}
    if sol.status == Status.OPTIMAL and sol.objective is not None:
        out["config_only_bound"] = float(sol.objective)
    elif sol.bound is not None and np.isfinite(sol.bound):
        out["config_only_bound"] = float(sol.bound)
    preferred: dict[int, int] = {}
    if sol.x is not None:
        prof = built.layout.profiles
        chosen = sol.values(built.model.choice, range(len(prof))) > 0.5
        preferred = {int(arr.prof_job[p]): int(p) for p in prof[chosen]}
    out["config_only_s"] = time.perf_counter() - t0
    return out, preferred


# --------------------------------------------------------------------------- stage 2
@dataclass(frozen=True)
class Integrated(BuildMethodBase):
    """The integrated MILP (:func:`formulations.build_integrated`): build, greedy start,
    extract.

    ``preferred`` is the profile per job the warm start tries first (the knapsack's);
    ``objective`` is ``max_total_throughput`` or ``min_cost``.
    """

    preferred: Mapping[int, int] = field(default_factory=dict)
    objective: str = F.MAX_THROUGHPUT

    def build(self, instance: MultiResourceInstance, params: MultiResourceParams) -> Built:
        if self.objective == F.MIN_COST:
            require_costs(instance)
        return F.build_integrated(instance.arrays, params.symmetry, self.objective)

    def describe(
        self, instance: MultiResourceInstance, params: MultiResourceParams, built: Built
    ) -> dict[str, Any]:
        arr = instance.arrays
        lay: F.Layout = built.layout
        out: dict[str, Any] = {
            "fair_share_cpus_per_gpu": arr.cpus_per_gpu,
            "fair_share_mem_gb_per_gpu": arr.mem_gb_per_gpu,
            "candidate_profiles": lay.num_candidates,
            "split_jobs": len(lay.split_jobs),
            "symmetry_breaking": params.symmetry,
        }
        if arr.rules:
            out["placement_rules"] = len(arr.rules)
        return out

    def start(
        self,
        instance: MultiResourceInstance,
        params: MultiResourceParams,
        built: Built,
        compiled: CompiledModel,
    ) -> np.ndarray | None:
        """The greedy packing (:func:`heuristic.greedy_packing`) as a MIP start."""
        if not params.warm_start:
            return None
        arr = instance.arrays
        if self.objective == F.MIN_COST:
            packing = H.cost_packing(arr)
        else:
            packing = H.greedy_packing(arr, dict(self.preferred))
        if packing is None:
            return None
        return H.start_vector(arr, built.model, compiled, packing, built.layout)

    def extract(
        self,
        instance: MultiResourceInstance,
        params: MultiResourceParams,
        built: Built,
        solution: SolveView,
    ) -> Outcome:
        return extract(instance, built, solution)


def extract(instance: MultiResourceInstance, built: Built, sol: SolveView) -> Outcome:
    """The ``placement`` and ``servers`` tables of one solution of the integrated model
    (and ``violations`` when the instance has placement rules)."""
    arr = instance.arrays
    m = built.model
    lay: F.Layout = built.layout
    recs: list[tuple[int, int, int, float]] = []  # job, server, flat profile, gpus
    if len(lay.assign_prof):
        # hand out each class's jobs, in order, to its (profile, server) counts
        xa = np.round(sol.values(m.assign, range(len(lay.assign_prof)))).astype(int)
        nxt = [0] * len(lay.class_members)
        rep_bounds = np.searchsorted(arr.prof_job, np.arange(arr.num_jobs + 1))
        for k in np.nonzero(xa >= 1)[0]:
            c = int(lay.assign_cls[k])
            members = lay.class_members[c]
            pos = int(lay.assign_prof[k]) - rep_bounds[members[0]]
            for j in members[nxt[c] : nxt[c] + xa[k]]:
                p = int(rep_bounds[j] + pos)
                recs.append((int(j), int(lay.assign_srv[k]), p, float(arr.job_gpus[j])))
            nxt[c] += int(xa[k])
    if len(lay.split_prof):
        xs = np.round(sol.values(m.split_gpus, range(len(lay.split_prof))))
        for k in np.nonzero(xs >= 1)[0]:
            p = int(lay.split_prof[k])
            recs.append((int(arr.prof_job[p]), int(lay.split_srv[k]), p, float(xs[k])))
    recs.sort()
    p_idx = np.array([r[2] for r in recs], dtype=np.int64)
    g = np.array([r[3] for r in recs], dtype=float)
    jobs = np.array([r[0] for r in recs], dtype=np.int64)
    srv = np.array([r[1] for r in recs], dtype=np.int64)
    placement = pd.DataFrame(
        {
            "job": [arr.job_ids[j] for j in jobs],
            "server": [arr.server_ids[s] for s in srv],
            "profile": arr.prof_pos[p_idx],
            "gpus": g.astype(int),
            "cpus": g * arr.prof_cpu[p_idx],
            "mem_gb": g * arr.prof_mem[p_idx],
            "throughput": arr.prof_tput[p_idx],
            "fair_share_throughput": arr.fair_share[jobs],
        }
    )
    S = arr.num_servers
    gu, cu, mu = np.zeros(S), np.zeros(S), np.zeros(S)
    np.add.at(gu, srv, g)
    np.add.at(cu, srv, placement["cpus"].to_numpy())
    np.add.at(mu, srv, placement["mem_gb"].to_numpy())
    nj = np.zeros(S, dtype=int)
    np.add.at(nj, srv, 1)
    servers = pd.DataFrame(
        {
            "server": arr.server_ids,
            "gpus_used": gu.astype(int),
            "gpus": arr.srv_gpus.astype(int),
            "cpus_used": cu,
            "cpus": arr.srv_cpus,
            "mem_gb_used": mu,
            "mem_gb": arr.srv_mem,
            "jobs": nj,
        }
    )
    # each job counted once (a split job has one row per server)
    first = ~pd.Series(jobs).duplicated().to_numpy()
    value = float(arr.prof_tput[p_idx][first].sum())
    details: dict[str, Any] = {
        "servers_used": int((gu > 0).sum()),
        "fair_share_total": float(arr.fair_share.sum()),
    }
    tables = {"placement": placement, "servers": servers}
    penalty = 0.0
    if arr.rules:
        viol = RU.violations_table(arr, jobs, srv)
        tables["violations"] = viol
        soft = ~viol["hard"].astype(bool) if len(viol) else np.zeros(0, dtype=bool)
        penalty = float(viol["penalty"].to_numpy(dtype=float)[soft].sum()) if len(viol) else 0.0
        details["rule_violations"] = (
            int(viol["violations"].to_numpy(dtype=np.int64)[soft].sum()) if len(viol) else 0
        )
        details["total_penalty"] = penalty
    has_cost = not np.isnan(arr.srv_cost).any()
    cost = float(arr.srv_cost[gu > 0].sum()) if has_cost else None
    if has_cost:
        details["server_cost"] = cost
    if lay.objective == F.MIN_COST:
        details["total_throughput"] = value
        assert cost is not None
        return Outcome(cost + penalty, tables, details)
    if arr.rules:
        details["total_throughput"] = value
    return Outcome(value - penalty, tables, details)


# --------------------------------------------------------------------------- stage 3
def fragmentation(
    live: LiveModel, instance: MultiResourceInstance, first: SolveView
) -> tuple[SolveView, dict[str, Any]]:
    """Minimise servers in use with ``total_throughput`` fixed at its optimum (stage
    ``fragmentation``, on the live model of the throughput solve).

    Returns the solution to report (the first one with the second's columns when the
    second is accepted, else ``first``) and the fragmentation details.
    """
    assert first.x is not None
    m, lay, cm, hm = live.model, live.layout, live.compiled, live.highs_model
    tput = instance.arrays.prof_tput
    options = live.session.options
    # the first objective's column: the throughput, net of penalties with soft rules
    keep = m.net_throughput if lay.rules is not None and lay.rules.soft else m.total_throughput
    jt = cm.column(keep)
    z1 = float(first.x[jt])
    used_cols = cm.columns_of(m.in_use)
    hm.set_col_bounds(keep, z1 - 1e-9 * max(1.0, abs(z1)), None)
    hm.set_objective_coefficients(np.array([jt]), np.array([0.0]))
    hm.set_objective_coefficients(used_cols, -np.ones(len(used_cols)))
    # start from the throughput-optimal solution with in_use at its smallest value
    x0 = first.x.copy()
    gpu_used = _server_gpus(m, lay, cm, x0)
    x0[used_cols] = (gpu_used > 0.5).astype(float)
    hm.set_start(x0)
    limit = options.time_limit_s or FRAGMENTATION_TIME_LIMIT_S
    second = live.solve(options.replace(time_limit_s=limit), stage="fragmentation")
    info: dict[str, Any] = {"fragmentation_status": str(second.status)}
    if second.x is None:
        info["fragmentation_status"] = f"no solution: {second.termination}"
        return first, info
    if second.bound is not None:
        info["servers_used_bound"] = -float(second.bound)
    if lay.rules is None:
        t1 = _throughput(m, lay, cm, tput, first.x)
        t2 = _throughput(m, lay, cm, tput, second.x)
    else:  # the objective recounted from the placements (penalties included)
        t1 = extract(instance, live.built, first).objective_value or 0.0
        t2 = extract(instance, live.built, live.view(second.raw)).objective_value or 0.0
    if t2 < t1 - 1e-9 * max(1.0, abs(t1)):
        info["fragmentation_status"] = "rejected: it lowered the throughput"
        return first, info
    # status, bound and gap stay the throughput solve's; the columns are the second's
    return live.view(dataclasses.replace(first.raw, x=second.x)), info


def _server_gpus(
    m: pyo.ConcreteModel, lay: F.Layout, cm: CompiledModel, x: np.ndarray
) -> np.ndarray:
    arr_g = np.zeros(len(m.in_use))
    a = x[cm.columns_of(m.assign)] if len(lay.assign_prof) else np.zeros(0)
    s = x[cm.columns_of(m.split_gpus)] if len(lay.split_prof) else np.zeros(0)
    np.add.at(arr_g, lay.assign_srv, np.round(a))
    np.add.at(arr_g, lay.split_srv, np.round(s))
    return arr_g


def _throughput(
    m: pyo.ConcreteModel, lay: F.Layout, cm: CompiledModel, tput: np.ndarray, x: np.ndarray
) -> float:
    a = np.round(x[cm.columns_of(m.assign)]) if len(lay.assign_prof) else np.zeros(0)
    ch = np.round(x[cm.columns_of(m.choice)]) if len(lay.choice_prof) else np.zeros(0)
    return float(a @ tput[lay.assign_prof] + ch @ tput[lay.choice_prof])


def start_on_failure(
    live: LiveModel, view: SolveView, x0: np.ndarray | None, what: str
) -> SolveView:
    """``view``, or, when HiGHS's run failed (status ``error``, no solution) after it was
    handed the start ``x0``, that start as a ``feasible`` solution with no bound.

    The start is a complete placement (the greedy packing, improved by the
    neighbourhood search with rules); the verifier re-checks it like any solution, and
    the termination says what was returned and why, so the plan a failed MILP leaves
    behind is not dropped.
    """
    if view.status != Status.ERROR or view.x is not None or x0 is None:
        return view
    log.warning("%s; returning %s (not proven optimal)", view.raw.termination, what)
    raw = dataclasses.replace(
        view.raw,
        status=Status.FEASIBLE,
        termination=f"{view.raw.termination}; returned {what}, not proven optimal",
        objective=None,
        bound=None,
        gap=None,
        x=x0.copy(),
        row_dual=None,
    )
    return live.view(raw)


# --------------------------------------------------------------------------- the method
class Throughput(RunMethodBase):
    """``max_total_throughput``: knapsack bound, integrated MILP, fragmentation solve.

    ``build`` is the integrated MILP (what ``hetopt export`` writes).
    """

    def build(self, instance: MultiResourceInstance, params: MultiResourceParams) -> Built:
        return Integrated().build(instance, params)

    def run(
        self, session: Session, instance: MultiResourceInstance, params: MultiResourceParams
    ) -> Outcome:
        found: dict[str, Any] = {}
        preferred: dict[int, int] = {}
        cinfo: dict[str, Any] = {}
        x0: np.ndarray | None = None
        if params.config_bound or params.warm_start:
            cinfo, preferred = config_bound(session, instance)
            if params.config_bound:
                found.update(cinfo)
            found["config_only_s"] = cinfo["config_only_s"]
        method = Integrated(preferred)
        built = session.build(method, instance, params)
        live = session.open(built)
        if params.warm_start:
            ts = time.perf_counter()
            x0 = method.start(instance, params, built, live.compiled)
            if x0 is not None:
                live.highs_model.set_start(x0)
                found["start_throughput"] = float(
                    x0[live.compiled.column(built.model.total_throughput)]
                )
            else:
                found["start_throughput"] = None
            found["start_s"] = time.perf_counter() - ts
        options = session.options
        if x0 is not None and instance.arrays.rules and params.lns:
            t_lns = time.perf_counter()
            x0, rounds = neighbourhood_search(live, instance, x0, method.lp_method)
            live.highs_model.set_start(x0)
            spent = time.perf_counter() - t_lns
            found["lns_rounds"] = rounds
            found["lns_objective"] = float(x0[live.compiled.column(objective_column(live))])
            found["lns_s"] = spent
            if options.time_limit_s:  # the search's time counts in the limit
                options = options.replace(time_limit_s=max(1e-3, options.time_limit_s - spent))
        first = live.solve(options, method.lp_method, stage="main")
        first = start_on_failure(
            live,
            first,
            x0,
            "the warm start" + (" after the neighbourhood search" if "lns_rounds" in found else ""),
        )
        final = first
        if params.fragmentation and first.status == Status.OPTIMAL and first.x is not None:
            final, frag = fragmentation(live, instance, first)
            found.update(frag)
        elif params.fragmentation:
            found["fragmentation_status"] = "skipped: throughput not proven optimal"
        with session.timer("load_s"):
            out = session.resolve(method, instance, params, built, final)
        # the details in the order earlier releases reported them: the model's, the
        # stages', HiGHS's counters (of the throughput solve), the solution's
        details = {**method.describe(instance, params, built), **found, **out.details}
        bound, gap = out.bound, out.gap
        knapsack = cinfo.get("config_only_bound")
        if (
            out.status == Status.FEASIBLE
            and out.objective_value is not None
            and knapsack is not None
            and (bound is None or not np.isfinite(bound) or knapsack < bound)
        ):
            # HiGHS stopped before proving a (better) bound: the configuration-only
            # knapsack relaxes the placement, so its bound holds for the whole problem
            bound = float(knapsack)
            gap = abs(bound - out.objective_value) / max(abs(out.objective_value), 1e-9)
        out = Outcome(
            out.objective_value,
            out.tables,
            details,
            out.status,
            out.termination,
            bound,
            gap,
            out.timings,
        )
        if out.status == Status.INFEASIBLE and params.diagnose:
            explain_infeasible(session, live, instance, out)
        return out


class MinCost(RunMethodBase):
    """``min_cost``: the integrated MILP minimising the cost per hour of the servers in
    use (plus soft-rule penalties), started from a first-fit packing (:func:`heuristic.
    cost_packing`); on infeasibility, the deletion filter over hard rules.

    ``build`` is that MILP (what ``hetopt export`` writes).
    """

    def build(self, instance: MultiResourceInstance, params: MultiResourceParams) -> Built:
        return Integrated(objective=F.MIN_COST).build(instance, params)

    def run(
        self, session: Session, instance: MultiResourceInstance, params: MultiResourceParams
    ) -> Outcome:
        method = Integrated(objective=F.MIN_COST)
        built = session.build(method, instance, params)
        live = session.open(built)
        found: dict[str, Any] = {}
        x0: np.ndarray | None = None
        if params.warm_start:
            ts = time.perf_counter()
            x0 = method.start(instance, params, built, live.compiled)
            if x0 is not None:
                live.highs_model.set_start(x0)
                found["start_cost"] = float(x0[live.compiled.column(built.model.server_cost)])
            else:
                found["start_cost"] = None
            found["start_s"] = time.perf_counter() - ts
        view = live.solve(session.options, method.lp_method, stage="main")
        view = start_on_failure(live, view, x0, "the warm start")
        with session.timer("load_s"):
            out = session.resolve(method, instance, params, built, view)
        out.details = {**method.describe(instance, params, built), **found, **out.details}
        if out.status == Status.INFEASIBLE and params.diagnose:
            explain_infeasible(session, live, instance, out)
        return out


# --------------------------------------------------------------------------- LNS
LNS_FRACTION = 0.2
"""Share of the job classes (and split jobs) each neighbourhood frees."""
LNS_ROUND_S = 3.0
"""Time limit of one neighbourhood solve."""
LNS_BUDGET_S = 30.0
"""Most time the search takes (and at most ``LNS_SHARE`` of the options' time limit)."""
LNS_SHARE = 0.4
LNS_MAX_ROUNDS = 24


def objective_column(live: LiveModel) -> Any:
    """The variable the integrated model's objective is (``net_throughput`` with soft
    rules, else ``total_throughput``)."""
    m, lay = live.model, live.layout
    return m.net_throughput if lay.rules is not None and lay.rules.soft else m.total_throughput


def neighbourhood_search(
    live: LiveModel, instance: MultiResourceInstance, x: np.ndarray, lp_method: str
) -> tuple[np.ndarray, int]:
    """Improve a start of the integrated model with placement rules (large neighbourhood
    search, stage ``lns``).

    Each round fixes the placement of all job classes and split jobs but a random
    :data:`LNS_FRACTION` of them (their ``assign`` / ``split_gpus`` / ``choice`` columns at
    the incumbent's values, on the live HiGHS model) and re-solves for at most
    :data:`LNS_ROUND_S`: the freed jobs may move anywhere and change profile; a better
    solution becomes the incumbent. Rules couple jobs across the whole cluster, which
    HiGHS's own heuristics handle poorly on these models (the 64 x 400 benchmark: HiGHS
    alone keeps the greedy start for 60 s). Stops after :data:`LNS_MAX_ROUNDS` rounds or
    :data:`LNS_BUDGET_S` (at most :data:`LNS_SHARE` of the time limit). The column bounds
    are restored. Returns the incumbent and the rounds run.
    """
    arr = instance.arrays
    session = live.session
    m, lay, cm = live.model, live.layout, live.compiled
    h = live.highs_model.highs
    options = session.options
    budget = LNS_BUDGET_S
    if options.time_limit_s:
        budget = min(budget, LNS_SHARE * float(options.time_limit_s))
    rng = np.random.default_rng(0 if options.seed is None else options.seed)
    a_cols = cm.columns_of(m.assign) if len(lay.assign_prof) else np.zeros(0, dtype=np.int64)
    s_cols = cm.columns_of(m.split_gpus) if len(lay.split_prof) else np.zeros(0, dtype=np.int64)
    c_cols = cm.columns_of(m.choice) if len(lay.choice_prof) else np.zeros(0, dtype=np.int64)
    s_job = arr.prof_job[lay.split_prof]
    c_job = arr.prof_job[lay.choice_prof]
    obj = cm.column(objective_column(live))
    n_cls = len(lay.class_members)
    units = n_cls + len(lay.split_jobs)
    take = max(1, round(LNS_FRACTION * units))
    t0 = time.perf_counter()
    rounds = 0
    while rounds < LNS_MAX_ROUNDS:
        left = budget - (time.perf_counter() - t0)
        if left < 0.5:
            break
        free = rng.choice(units, size=min(take, units), replace=False)
        free_jobs = lay.split_jobs[free[free >= n_cls] - n_cls]
        fixed = np.concatenate(
            [
                a_cols[~np.isin(lay.assign_cls, free[free < n_cls])],
                s_cols[~np.isin(s_job, free_jobs)],
                c_cols[~np.isin(c_job, free_jobs)],
            ]
        )
        fixed = np.ascontiguousarray(fixed[fixed >= 0], dtype=np.int32)
        at = np.round(x[fixed])  # integer columns
        h.changeColsBounds(len(fixed), fixed, at, at)
        live.highs_model.set_start(x)
        view = live.solve(options.replace(time_limit_s=min(LNS_ROUND_S, left)), lp_method, "lns")
        h.changeColsBounds(
            len(fixed),
            fixed,
            np.ascontiguousarray(cm.col_lower[fixed]),
            np.ascontiguousarray(cm.col_upper[fixed]),
        )
        rounds += 1
        if view.x is not None and view.x[obj] > x[obj] + 1e-9 * max(1.0, abs(x[obj])):
            x = view.x.copy()
    h.clearSolver()
    return x, rounds


# --------------------------------------------------------------------------- diagnosis
def explain_infeasible(
    session: Session, live: LiveModel, instance: MultiResourceInstance, out: Outcome
) -> None:
    """Name the hard rules in conflict in ``out`` (an infeasible outcome of ``live``):
    the ``conflict`` table, ``info.conflict`` / ``conflict_source`` / ``conflict_minimal``
    and the termination. Nothing when the instance has no hard rule."""
    arr = instance.arrays
    lay: F.Layout = live.layout
    if lay.rules is None or not any(r.hard for r in arr.rules):
        return
    with session.timer("diagnose_s"):
        found, minimal = deletion_filter(session, live, instance)
    if found is None:
        out.details["conflict"] = []
        out.details["conflict_source"] = (
            "infeasible without any placement rule (GPUs, CPUs, memory, profile floors)"
        )
        out.details["conflict_minimal"] = minimal
        return
    rules = [arr.rules[q] for q in found]
    table = pd.DataFrame(
        {"constraint": [r.label for r in rules], "description": [r.text for r in rules]}
    )
    out.tables = {"conflict": table}
    out.details["conflict"] = list(table["constraint"])
    out.details["conflict_source"] = "deletion filter over the hard placement rules"
    out.details["conflict_minimal"] = minimal
    named = "; ".join(f"{r.label} ({r.text})" for r in rules)
    out.termination = f"{out.termination}: placement rules in conflict: {named}"


def deletion_filter(
    session: Session, live: LiveModel, instance: MultiResourceInstance
) -> tuple[list[int] | None, bool]:
    """Deletion filter (Chinneck) over the hard placement rules, on the live model of the
    infeasible solve (its objective is zeroed: every check is a feasibility problem).

    First every hard rule is switched off (its rows freed): if the rest is still
    infeasible, the rules are not the cause (returns ``None``). Otherwise each rule in
    turn is switched off and left off if the rest stays infeasible. Returns the positions
    (in ``arr.rules``) of the rules left and whether every check was decided (then the
    set is irreducible: switching any one off makes the rest feasible). Every check is
    one HiGHS run (stage ``diagnose``).
    """
    arr = instance.arrays
    m, lay, cm, hm = live.model, live.layout, live.compiled, live.highs_model
    rl: F.RuleLayout = lay.rules
    h = hm.highs
    hm.set_objective_coefficients(np.arange(cm.num_col), np.zeros(cm.num_col))
    limit = DIAGNOSE_CHECK_S
    if session.options.time_limit_s:
        limit = min(limit, float(session.options.time_limit_s))
    opts = session.options.replace(time_limit_s=limit)
    rows: dict[int, list[int]] = {}
    for q, rule in enumerate(arr.rules):
        if rule.hard:
            got = [r for k in rl.rows_of(q) for r in cm.row_index.get(id(m.c_rules[int(k)]), [])]
            if got:
                rows[q] = got

    def switch(q: int, on: bool) -> None:
        for r in rows[q]:
            if on:
                h.changeRowBounds(r, float(cm.row_lower[r]), float(cm.row_upper[r]))
            else:
                h.changeRowBounds(r, -float(HIGHS_INF), float(HIGHS_INF))

    def infeasible() -> bool | None:
        h.clearSolver()
        view = live.solve(opts, stage="diagnose")
        if view.status == Status.INFEASIBLE:
            return True
        return False if view.status.has_solution else None

    minimal = True
    for q in rows:
        switch(q, False)
    free = infeasible()
    if free:
        return None, True
    if free is None:
        minimal = False
    for q in rows:
        switch(q, True)
    keep: list[int] = []
    for q in rows:
        switch(q, False)
        still = infeasible()
        if still:
            continue  # still infeasible without it: leave it out
        if still is None:
            minimal = False
        switch(q, True)
        keep.append(q)
    return keep, minimal
