"""Independent verifier for ``multi_resource`` solutions.

Reads only the instance and the ``placement`` table (never the Pyomo model or the numpy
views the model was built from) and re-derives: every job present with all its GPUs,
one profile per job, resources proportional to GPUs, the fair-share floor, server
capacities, single-server placement of jobs that fit on a server, and the objective.
"""

from __future__ import annotations

import math
from collections import defaultdict

import pandas as pd

from ...result import Verification
from .data import MultiResourceInstance

REL_TOL = 1e-6
ABS_TOL = 1e-7


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def verify(
    instance: MultiResourceInstance, objective_value: float | None, placement: pd.DataFrame
) -> Verification:
    """Check a ``placement(job, server, profile, gpus, cpus, mem_gb, throughput, ...)`` table."""
    problems: list[str] = []
    checks = [
        "jobs_present",
        "gpus",
        "one_profile",
        "proportional_resources",
        "fair_share",
        "single_server",
        "capacity",
        "objective",
    ]
    servers = {s.id: s for s in instance.servers}
    jobs = {j.id: j for j in instance.jobs}
    total_gpus = sum(s.gpus for s in instance.servers)
    cpg = sum(s.cpus for s in instance.servers) / total_gpus
    mpg = sum(s.mem_gb for s in instance.servers) / total_gpus
    biggest = max(s.gpus for s in instance.servers)
    used: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    rows_of: dict[str, list[dict]] = defaultdict(list)
    for row in placement.to_dict("records"):
        jid, sid = str(row["job"]), str(row["server"])
        if jid not in jobs:
            problems.append(f"placement names an unknown job {jid!r}")
            continue
        if sid not in servers:
            problems.append(f"job {jid}: unknown server {sid!r}")
            continue
        rows_of[jid].append(row)
    total = 0.0
    for jid, job in jobs.items():
        rows = rows_of.get(jid, [])
        if not rows:
            problems.append(f"job {jid} is missing from the placement")
            continue
        profs = {int(r["profile"]) for r in rows}
        if len(profs) != 1:
            problems.append(f"job {jid} uses several profiles {sorted(profs)}")
            continue
        k = profs.pop()
        if not 0 <= k < len(job.profile):
            problems.append(f"job {jid}: profile {k} does not exist")
            continue
        prof = job.profile[k]
        g = 0.0
        srv_seen = set()
        for r in rows:
            gr = float(r["gpus"])
            if gr < 1 - ABS_TOL or not _close(gr, round(gr)):
                problems.append(f"job {jid} on {r['server']}: {gr} GPUs is not a positive integer")
            g += gr
            if not _close(float(r["cpus"]), gr * prof.cpus_per_gpu):
                problems.append(
                    f"job {jid} on {r['server']}: {r['cpus']} CPUs, profile {k} needs "
                    f"{gr * prof.cpus_per_gpu}"
                )
            if not _close(float(r["mem_gb"]), gr * prof.mem_gb_per_gpu):
                problems.append(
                    f"job {jid} on {r['server']}: {r['mem_gb']} GB, profile {k} needs "
                    f"{gr * prof.mem_gb_per_gpu}"
                )
            if not _close(float(r["throughput"]), prof.throughput):
                problems.append(
                    f"job {jid}: throughput {r['throughput']} is not profile {k}'s {prof.throughput}"
                )
            u = used[str(r["server"])]
            u[0] += gr
            u[1] += gr * prof.cpus_per_gpu
            u[2] += gr * prof.mem_gb_per_gpu
            srv_seen.add(str(r["server"]))
        if not _close(g, job.gpus):
            problems.append(f"job {jid} gets {g:g} GPUs, asks for {job.gpus}")
        if job.gpus <= biggest and len(srv_seen) != 1:
            problems.append(f"job {jid} fits on one server but is spread over {len(srv_seen)}")
        fair = max(
            (
                p.throughput
                for p in job.profile
                if p.cpus_per_gpu <= cpg * (1 + 1e-9) and p.mem_gb_per_gpu <= mpg * (1 + 1e-9)
            ),
            default=0.0,
        )
        if prof.throughput < fair * (1 - 1e-12):
            problems.append(f"job {jid}: throughput {prof.throughput} below its fair share {fair}")
        total += prof.throughput
    for sid, (g, c, mm) in used.items():
        s = servers[sid]
        if g > s.gpus + ABS_TOL:
            problems.append(f"server {sid}: {g:g} GPUs used > {s.gpus}")
        if c > s.cpus * (1 + REL_TOL) + ABS_TOL:
            problems.append(f"server {sid}: {c:g} CPUs used > {s.cpus:g}")
        if mm > s.mem_gb * (1 + REL_TOL) + ABS_TOL:
            problems.append(f"server {sid}: {mm:g} GB used > {s.mem_gb:g}")
    if objective_value is None or not _close(total, objective_value):
        problems.append(f"objective recomputed as {total:.9g}, result says {objective_value}")
    return Verification(
        ok=not problems, objective_value=total, violations=tuple(problems), checks=tuple(checks)
    )
