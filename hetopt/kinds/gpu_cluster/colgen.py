"""Max-min fairness and makespan by column generation (``lp_strategy``).

The max-min LP (:mod:`.maxmin`) has a column per (job, type) pair but, with ``K`` GPU
types and ``N`` jobs, an optimal basis has at most ``2N + K`` basic variables over the
``2N + K`` rows: most jobs use one or two types. So the LP is solved over a few columns
per job and grown only where it pays:

1. the restricted LP holds, for every row, the ``initial`` pairs with the largest value
   coefficient (its best types) and is solved by interior point (with crossover);
2. with its row duals ``y`` (time ``u_i``, capacity ``w_t``, fairness ``v_i``) the
   reduced cost of every absent pair is, in numpy,
   ``d[i,t] = -(u_i + w_t * usage[i,t] + v_i * coef[i,t])`` (HiGHS: ``c - A^T y``);
3. pairs with ``d > tol`` enter (the best per row) and HiGHS re-solves warm from its
   basis (primal simplex: the basis stays primal feasible), or by interior point when
   many enter; repeat.

Certificate: for any row duals of the right signs, ``z* <= y^T b + sum_k max(0, d_k) *
ub_k`` (Lagrangian relaxation of the rows, box ``0 <= x <= 1``), and at an optimum of
the restricted LP ``y^T b`` is its objective. So ``bound = z_rmp + sum_k max(0, d_k)``
over every pair is a proven dual bound of the full LP; the loop stops when no pair
prices out (``d <= tol`` everywhere: gap below ``tol`` times the number of pairs).
After ``max_rounds`` every remaining pair is added (the monolithic LP, solved warm).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ...contract import Outcome
from ...status import Status
from . import formulations as F
from . import maxmin as M

if TYPE_CHECKING:
    from ...pipeline import Session
    from . import GpuClusterParams
    from .data import GpuClusterInstance

PRICE_TOL = 1e-9
"""A pair enters when its reduced cost exceeds this (the LP's ``z`` is O(1))."""

INITIAL = 3
"""Pairs per row in the first restricted LP (the row's best types)."""

MAX_ROUNDS = 20
WARM_FRACTION = 0.05
"""Re-solve warm by simplex when fewer pairs than this fraction of the rows enter."""

AUTO_MIN_PAIRS = 50_000
"""``lp_strategy="auto"`` generates columns from this many pairs (and more than
:data:`INITIAL` pairs per row on average): measured faster than the monolithic LP at
20,000 jobs x 8 types, slower on small LPs where one interior-point solve is cheap."""


@dataclass(frozen=True)
class Pricing:
    """Every pair of the full LP, with its coefficients in the three row blocks."""

    row: np.ndarray
    type: np.ndarray
    usage: np.ndarray
    coef: np.ndarray
    """Value-row coefficient (``row_scale * rate * coefficient_scale``)."""

    @classmethod
    def of(cls, lp: M.MaxMinLP) -> Pricing:
        b = lp.columns[0]
        ok = np.ones(len(b), dtype=bool) if b.open is None else b.open
        coef = lp.row_scale[b.row] * b.rate * lp.coefficient_scale
        return cls(b.row[ok], b.type[ok], b.usage[ok], coef[ok])

    def __len__(self) -> int:
        return len(self.row)


def wants_columns(num_pairs: int, num_rows: int) -> bool:
    """``auto``: is the LP large enough, with enough pairs per row, to generate columns?"""
    return num_pairs >= AUTO_MIN_PAIRS and num_pairs > INITIAL * num_rows * 1.5


def initial_pairs(p: Pricing, num_rows: int, per_row: int = INITIAL) -> np.ndarray:
    """Indices of each row's ``per_row`` pairs with the largest value coefficient."""
    order = np.lexsort((-p.coef, p.row))  # by row, best first
    rows = p.row[order]
    start = np.searchsorted(rows, np.arange(num_rows))
    rank = np.arange(len(order)) - start[rows]
    return np.sort(order[rank < per_row])


def solve_by_columns(
    session: Session,
    instance: GpuClusterInstance,
    params: GpuClusterParams,
    objective: str = "max_min_fairness",
) -> Outcome:
    """The max-min fairness or makespan LP of ``instance`` by column generation (module
    docstring)."""
    from .methods import MakespanRead, MaxMinRead, require_steps, time_share_tables

    makespan = objective == "makespan"
    if makespan:
        require_steps(instance)
    arr = instance.arrays
    with session.timer("build_s"):
        group_of: np.ndarray | None = None
        sub, mult = arr, None
        if params.symmetry:
            group_of, reps, mult = F.job_groups(arr, makespan)
            if len(reps) == arr.num_jobs:
                group_of, mult = None, None
            else:
                sub = arr.subset(reps)
        if makespan:
            t_ref = F.makespan_reference(arr, arr.thr)
            lp = F.makespan_lp(sub, None, mult, t_ref)
        else:
            lp = F.max_min_lp(sub, None, None, mult)
        pricing = Pricing.of(lp)
        n, T = sub.num_jobs, len(sub.types)
        first = initial_pairs(pricing, n, INITIAL)
        full = lp.columns[0]
        ok = np.ones(len(full), dtype=bool) if full.open is None else full.open
        idx = np.nonzero(ok)[0][first]
        block = M.TimeColumns(
            full.var, full.index, full.row[idx], full.type[idx], full.rate[idx], full.usage[idx]
        )
        built = M.build(replace(lp, columns=(block,)))
    live = session.open(built)
    m, hm = built.model, live.highs_model
    time0 = hm.row(m.c_time[0])
    cap0 = hm.row(m.c_capacity[0])
    value_rows = getattr(m, lp.value_rows)
    fair0 = hm.row(value_rows[0])
    assert hm.row(m.c_time[n - 1]) == time0 + n - 1 and hm.row(value_rows[n - 1]) == fair0 + n - 1
    cols = [live.compiled.columns_of(m.alloc, range(len(first)))]
    zcol = live.compiled.column(m.z)
    in_lp = np.zeros(len(pricing), dtype=bool)
    in_lp[first] = True
    members = [first]

    options = session.options
    view = live.solve(options, M.LP_METHOD, "restricted")
    rounds, added, bound, certified = 0, 0, None, False
    while True:
        raw = view.raw
        if raw.status != Status.OPTIMAL or raw.row_dual is None or raw.x is None:
            break
        y = raw.row_dual
        u, w, v = y[time0 : time0 + n], y[cap0 : cap0 + T], y[fair0 : fair0 + n]
        d = -(u[pricing.row] + w[pricing.type] * pricing.usage + v[pricing.row] * pricing.coef)
        d[in_lp] = 0.0  # in the LP already: their part is in its optimum (strong duality)
        z = float(raw.x[zcol])
        bound = z + float(np.maximum(d, 0.0).sum())
        enter = np.nonzero(d > PRICE_TOL)[0]
        if len(enter) == 0:
            certified = True
            break
        rounds += 1
        if rounds > MAX_ROUNDS:  # the monolithic LP, warm
            enter = np.nonzero(~in_lp)[0]
        else:  # the best entering pair of each row
            best = np.lexsort((-d[enter], pricing.row[enter]))
            rows = pricing.row[enter][best]
            enter = enter[best][np.r_[True, rows[1:] != rows[:-1]]]
        k = len(enter)
        start = hm.highs.getNumCol()
        starts = np.arange(0, 3 * k, 3, dtype=np.int32)
        index = np.stack(
            [time0 + pricing.row[enter], cap0 + pricing.type[enter], fair0 + pricing.row[enter]],
            axis=1,
        ).ravel()
        values = np.stack([np.ones(k), pricing.usage[enter], pricing.coef[enter]], axis=1).ravel()
        hm.highs.addCols(
            k,
            np.zeros(k),
            np.zeros(k),
            np.ones(k),
            3 * k,
            starts,
            index.astype(np.int32),
            values.astype(np.float64),
        )
        cols.append(np.arange(start, start + k, dtype=np.int64))
        members.append(enter)
        in_lp[enter] = True
        added += k
        warm = k <= WARM_FRACTION * n
        extra = {"simplex_strategy": 4} if warm else {"solver": "ipm"}
        opts = session.remaining(options)
        opts = opts.replace(highs_options={**extra, **opts.highs_options})
        view = live.solve(opts, M.LP_METHOD, "priced" if warm else "restricted")

    with session.timer("load_s"):
        raw = view.raw
        info: dict[str, Any] = {
            "lp_strategy": "column_generation",
            "pricing_rounds": rounds,
            "columns_generated": added,
            "lp_columns": int(in_lp.sum()),
            "pair_columns_full": len(pricing),
        }
        if group_of is not None:
            info["symmetry_groups"] = n
        if not raw.status.has_solution or raw.x is None:
            return Outcome(None, {}, info, raw.status, raw.termination, None, None)
        pick = np.concatenate(members)
        col = np.concatenate(cols)
        x = np.zeros(len(pricing))
        ok_cols = col >= 0
        x[pick[ok_cols]] = np.clip(raw.x[col[ok_cols]], 0.0, 1.0)
        x = np.where(np.abs(x) < 1e-10, 0.0, x)
        Xr = np.zeros((n, T))
        Xr[pricing.row, pricing.type] = x
        X = Xr if group_of is None else Xr[group_of]
        allocation, jobs, thr_eff = time_share_tables(arr, X)
        scale = lp.scale
        z = float(raw.x[zcol])
        optimal = raw.status == Status.OPTIMAL and certified
        reader = MakespanRead() if makespan else MaxMinRead()
        value, status, term = reader.read(arr, jobs, thr_eff, z, scale, optimal, info)
        tables = {"allocation": allocation, "jobs": jobs}
        if status is not None:  # makespan: some job cannot progress
            return Outcome(None, tables, info, status, term, None, None)
        if not optimal or bound is None or value is None:
            return Outcome(value, tables, info, raw.status, raw.termination, None, None)
        z_bound = max(bound, z)  # a proven upper bound on the LP's z
        # max-min: value z / kappa <= z_bound / kappa; makespan: t_ref / z >= t_ref / z_bound
        proven = scale / z_bound if makespan else z_bound / scale
        gap = abs(proven - value) / max(abs(proven), abs(value), 1e-12)
        status = Status.OPTIMAL if gap <= 1e-9 else Status.FEASIBLE
        term = raw.termination if status == Status.OPTIMAL else "pricing gap above 1e-9"
        return Outcome(value, tables, info, status, term, proven, gap)
