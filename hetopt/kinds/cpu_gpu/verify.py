"""Independent verifier for ``cpu_gpu`` schedules.

Reads only the instance and the ``schedule`` table (never the Pyomo model or the numpy
views) and re-derives: every program runs completely, durations match (fraction x time
x slowdown factor), no device runs two things at once, and, in the pairing model (an
instance with slowdowns), that a CPU program and a GPU program of the same lane overlap in
time only as declared co-runners that start together. The objective is recomputed from
the schedule.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

import pandas as pd

from ...result import Verification
from .data import CpuGpuInstance

TOL = 1e-6


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=TOL, abs_tol=TOL)


def verify(
    instance: CpuGpuInstance, objective: str, objective_value: float | None, schedule: pd.DataFrame
) -> Verification:
    problems: list[str] = []
    pairing = bool(instance.slowdown)
    checks = ["programs_present", "fractions", "durations", "no_overlap", "objective"]
    if pairing:
        checks.append("co_runs")
    progs = {p.id: p for p in instance.programs}
    dev_type = {d.id: d.type for d in instance.devices}
    factor = {(s.cpu_program, s.gpu_program): s.factor for s in instance.slowdown}
    cpus = [d.id for d in instance.devices if d.type == "cpu"]
    gpus = [d.id for d in instance.devices if d.type == "gpu"]
    lane = {}
    for k, (c, g) in enumerate(zip(cpus, gpus, strict=False)):
        lane[c] = lane[g] = k
    rows = schedule.to_dict("records")
    by_prog: dict[str, list[dict]] = defaultdict(list)
    by_dev: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        pid, did = str(r["program"]), str(r["device"])
        if pid not in progs or did not in dev_type:
            problems.append(f"row names an unknown program {pid!r} or device {did!r}")
            continue
        by_prog[pid].append(r)
        by_dev[did].append(r)
    for pid, p in progs.items():
        rs = by_prog.get(pid, [])
        if not rs:
            problems.append(f"program {pid} is missing from the schedule")
            continue
        total = sum(float(r["fraction"]) for r in rs)
        if not _close(total, 1.0):
            problems.append(f"program {pid}: fractions add up to {total:.9g}, not 1")
        if (not p.divisible or pairing) and len(rs) != 1:
            problems.append(f"program {pid} must run whole on one device, has {len(rs)} rows")
        for r in rs:
            f, did = float(r["fraction"]), str(r["device"])
            t = dev_type[did]
            if f < -TOL or f > 1 + TOL:
                problems.append(f"program {pid}: fraction {f} outside [0, 1]")
            if t not in p.duration_s:
                problems.append(f"program {pid} cannot run on {t} device {did}")
                continue
            mult = 1.0
            other = str(r.get("co_runner", "") or "")
            if other:
                key = (pid, other) if t == "cpu" else (other, pid)
                mult = factor.get(key, [1.0, 1.0])[0 if t == "cpu" else 1]
            want = f * p.duration_s[t] * mult
            dur = float(r["end_s"]) - float(r["start_s"])
            if float(r["start_s"]) < -TOL or not _close(dur, want):
                problems.append(
                    f"program {pid} on {did}: runs {dur:.9g} s from {r['start_s']}, needs {want:.9g} s"
                )
    for did, rs in by_dev.items():
        rs = sorted(rs, key=lambda r: float(r["start_s"]))
        for a, b in itertools.pairwise(rs):
            if float(b["start_s"]) < float(a["end_s"]) - TOL:
                problems.append(f"device {did}: {a['program']} and {b['program']} overlap")
    if pairing:
        for r in rows:
            other = str(r.get("co_runner", "") or "")
            if not other:
                continue
            mates = [
                x
                for x in by_prog.get(other, [])
                if str(x.get("co_runner", "") or "") == str(r["program"])
            ]
            if len(mates) != 1 or not _close(float(mates[0]["start_s"]), float(r["start_s"])):
                problems.append(f"program {r['program']}: co-runner {other} does not start with it")
                continue
            d1, d2 = str(r["device"]), str(mates[0]["device"])
            if dev_type[d1] == dev_type[d2] or lane.get(d1, -1) != lane.get(d2, -2):
                problems.append(f"programs {r['program']} and {other} are not on one CPU-GPU lane")
        for c in cpus:
            if c not in lane:
                continue
            g = gpus[lane[c]]
            for a in by_dev.get(c, []):
                for b in by_dev.get(g, []):
                    lo = max(float(a["start_s"]), float(b["start_s"]))
                    hi = min(float(a["end_s"]), float(b["end_s"]))
                    declared = str(a.get("co_runner", "") or "") == str(b["program"])
                    if hi - lo > TOL and not declared:
                        problems.append(
                            f"{a['program']} on {c} and {b['program']} on {g} overlap without "
                            "being declared co-runners (their slowdown is not accounted)"
                        )
    makespan = max((float(r["end_s"]) for r in rows), default=0.0)
    value: float | None
    if objective == "throughput":
        value = len(progs) / makespan if makespan > 0 else None
    else:
        value = makespan
    if value is None or objective_value is None or not _close(value, objective_value):
        problems.append(f"objective recomputed as {value}, result says {objective_value}")
    return Verification(
        ok=not problems, objective_value=value, violations=tuple(problems), checks=tuple(checks)
    )
