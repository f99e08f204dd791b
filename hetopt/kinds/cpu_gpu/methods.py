"""The ``cpu_gpu`` method: one MILP for both objectives, and the schedule it reads."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ...contract import BuildMethodBase, Built, NoParams, Outcome, SolveView
from ...errors import UsageError
from ...status import Status
from .._shared.export import rescale_objective
from . import formulations as F
from .data import CpuGpuInstance


class Batch(BuildMethodBase):
    """Both objectives share one MILP (max n / C <=> min C); the data picks the model:
    :func:`formulations.build_pairing` with slowdowns, else
    :func:`formulations.build_independent`."""

    def __init__(self, objective: str):
        self.objective = objective

    def build(self, instance: CpuGpuInstance, params: NoParams) -> Built:
        if instance.slowdown:
            return F.build_pairing(instance.arrays)
        return F.build_independent(instance.arrays)

    def export_objective(self, instance: CpuGpuInstance, params: NoParams, built: Built) -> None:
        """The makespan in seconds (the model's is in units of ``t_ref``); ``throughput``
        (programs / makespan) is not linear, so it is not exported."""
        if self.objective == "throughput":
            raise UsageError(
                "objective 'throughput' (programs / makespan) is not linear and has no LP/MPS "
                "export: export objective 'makespan' (the model it solves; same schedule)"
            )
        rescale_objective(built.model, built.layout.t_ref)

    def describe(self, instance: CpuGpuInstance, params: NoParams, built: Built) -> dict[str, Any]:
        info: dict[str, Any] = {"model": "pairing" if instance.slowdown else "independent"}
        if instance.slowdown and any(p.divisible for p in instance.programs):
            # the pairing model runs programs whole
            info["divisible_ignored"] = sum(p.divisible for p in instance.programs)
        return info

    def extract(
        self, instance: CpuGpuInstance, params: NoParams, built: Built, solution: SolveView
    ) -> Outcome:
        arr = instance.arrays
        layout = built.layout
        t_ref = layout.t_ref
        if isinstance(layout, F.PairingLayout):
            schedule = _pairing_schedule(arr, built, solution)
        else:
            schedule = _independent_schedule(arr, built, solution)
        makespan = float(schedule["end_s"].max()) if len(schedule) else 0.0
        n = arr.num_programs
        lb = None
        if solution.status == Status.OPTIMAL:
            lb = makespan
        elif solution.bound is not None and np.isfinite(solution.bound):
            lb = max(0.0, float(solution.bound) * t_ref)
        info: dict[str, Any] = {"makespan_s": makespan, "time_reference_s": t_ref}
        if self.objective == "throughput":
            value = n / makespan
            bound = (n / lb if lb and lb > 0 else None) if lb is not None else None
        else:
            value = makespan
            bound = lb
        gap = abs(value - bound) / abs(value) if bound is not None and value else None
        if solution.status == Status.OPTIMAL:
            gap = 0.0
        if bound is None:  # no usable bound here: keep HiGHS's (as earlier releases did)
            return Outcome(value, {"schedule": schedule}, info)
        return Outcome(value, {"schedule": schedule}, info, bound=bound, gap=gap)


def _independent_schedule(arr: Any, built: Built, sol: SolveView) -> pd.DataFrame:
    asg: F.Assignment = built.layout.assignment
    x = sol.values(built.model.share, range(len(asg.job)))
    whole = ~arr.divisible[asg.job]
    x = np.where(whole, np.round(x), x)
    x = np.where(x < 1e-9, 0.0, x)
    # renormalise the fractions of divisible programs (solver tolerance)
    tot = np.zeros(arr.num_programs)
    np.add.at(tot, asg.job, x)
    x = x / tot[asg.job]
    rows = []
    clock = np.zeros(len(arr.device_ids))
    for k in np.lexsort((asg.job, asg.machine)):
        if x[k] <= 0:
            continue
        p, d = int(asg.job[k]), int(asg.machine[k])
        dur = float(x[k] * arr.times[p, d])
        rows.append((arr.program_ids[p], arr.device_ids[d], clock[d], clock[d] + dur, x[k], ""))
        clock[d] += dur
    return _table(rows, arr)


def _pairing_schedule(arr: Any, built: Built, sol: SolveView) -> pd.DataFrame:
    pc: F.Pairing = built.layout.pairing
    m = built.model
    y = np.round(sol.values(m.pair, range(len(pc.pair_cpu)))) if len(pc.pair_cpu) else np.zeros(0)
    s = np.round(sol.values(m.solo, range(len(pc.solo_prog))))
    tc, tg = arr.type_times[:, 0], arr.type_times[:, 1]
    clock = np.zeros(len(arr.device_ids))
    lane_of = {}
    for r, (c, g) in enumerate(pc.lanes):
        lane_of[c] = lane_of[g] = r
    lane_clock = np.zeros(len(pc.lanes))
    rows = []
    for k in np.nonzero(np.asarray(y) > 0.5)[0]:
        p, q, r = int(pc.pair_cpu[k]), int(pc.pair_gpu[k]), int(pc.pair_lane[k])
        c, g = pc.lanes[r]
        t0 = lane_clock[r]
        ep = t0 + arr.factor_cpu[p, q] * tc[p]
        eq = t0 + arr.factor_gpu[p, q] * tg[q]
        rows.append((arr.program_ids[p], arr.device_ids[c], t0, ep, 1.0, arr.program_ids[q]))
        rows.append((arr.program_ids[q], arr.device_ids[g], t0, eq, 1.0, arr.program_ids[p]))
        lane_clock[r] = max(ep, eq)
    for k in np.nonzero(s > 0.5)[0]:
        p, d = int(pc.solo_prog[k]), int(pc.solo_dev[k])
        dur = float(arr.times[p, d])
        if d in lane_of:
            r = lane_of[d]
            t0 = lane_clock[r]
            lane_clock[r] += dur
        else:
            t0 = clock[d]
            clock[d] += dur
        rows.append((arr.program_ids[p], arr.device_ids[d], t0, t0 + dur, 1.0, ""))
    return _table(rows, arr)


def _table(rows: list[tuple], arr: Any) -> pd.DataFrame:
    df = pd.DataFrame(
        rows, columns=["program", "device", "start_s", "end_s", "fraction", "co_runner"]
    )
    order = {p: i for i, p in enumerate(arr.program_ids)}
    df["_o"] = df["program"].map(order)
    return df.sort_values(["_o", "start_s"]).drop(columns="_o").reset_index(drop=True)
