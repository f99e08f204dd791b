"""Independent verifier for ``multi_resource`` solutions.

Reads only the instance and the ``placement`` table (never the Pyomo model or the numpy
views the model was built from) and re-derives: every job present with all its GPUs,
one profile per job, resources proportional to GPUs, the floor (fair share and
``min_throughput``), server capacities, single-server placement of jobs that fit on a
server, every placement rule (hard rules unbroken; soft rules' violations recounted and
compared with the ``violations`` table) and the objective (throughput minus penalties,
or for ``min_cost`` the cost per hour of the servers in use plus penalties).
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
    instance: MultiResourceInstance,
    objective_value: float | None,
    placement: pd.DataFrame,
    objective: str | None = None,
    violations: pd.DataFrame | None = None,
) -> Verification:
    """Check a ``placement(job, server, profile, gpus, cpus, mem_gb, throughput, ...)``
    table (and the ``violations`` table of an instance with placement rules) for
    ``objective`` (default ``max_total_throughput``)."""
    min_cost = objective == "min_cost"
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
    if instance.placement_rules:
        checks.append("placement_rules")
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
        need = job.min_throughput
        if min_cost:
            if need is None and prof.throughput < fair * (1 - 1e-12):
                problems.append(
                    f"job {jid}: throughput {prof.throughput} below its fair share {fair}"
                )
        elif prof.throughput < fair * (1 - 1e-12):
            problems.append(f"job {jid}: throughput {prof.throughput} below its fair share {fair}")
        if need is not None and prof.throughput < need * (1 - 1e-12):
            problems.append(
                f"job {jid}: throughput {prof.throughput} below its min_throughput {need}"
            )
        total += prof.throughput
    for sid, (g, c, mm) in used.items():
        s = servers[sid]
        if g > s.gpus + ABS_TOL:
            problems.append(f"server {sid}: {g:g} GPUs used > {s.gpus}")
        if c > s.cpus * (1 + REL_TOL) + ABS_TOL:
            problems.append(f"server {sid}: {c:g} CPUs used > {s.cpus:g}")
        if mm > s.mem_gb * (1 + REL_TOL) + ABS_TOL:
            problems.append(f"server {sid}: {mm:g} GB used > {s.mem_gb:g}")
    penalty = 0.0
    if instance.placement_rules:
        penalty = _check_rules(instance, placement, violations, problems)
    if min_cost:
        cost = 0.0
        for sid, (g, _, _) in used.items():
            if g > ABS_TOL:
                price = servers[sid].cost_per_hour
                if price is None:
                    problems.append(f"server {sid} is in use and has no cost_per_hour")
                else:
                    cost += price
        value = cost + penalty
    else:
        value = total - penalty
    if objective_value is None or not _close(value, objective_value):
        problems.append(f"objective recomputed as {value:.9g}, result says {objective_value}")
    return Verification(
        ok=not problems, objective_value=value, violations=tuple(problems), checks=tuple(checks)
    )


def _check_rules(
    instance: MultiResourceInstance,
    placement: pd.DataFrame,
    table: pd.DataFrame | None,
    problems: list[str],
) -> float:
    """Recount every placement rule's violations from the placement; report broken hard
    rules and disagreements with the ``violations`` table. Returns the soft penalty."""
    tags = {j.id: set(j.tags or ()) for j in instance.jobs}
    label_of = {s.id: dict(s.labels or {}) for s in instance.servers}
    # the servers each job has GPUs on
    on: dict[str, set[str]] = defaultdict(set)
    for row in placement.to_dict("records"):
        if float(row["gpus"]) > ABS_TOL:
            on[str(row["job"])].add(str(row["server"]))
    reported: dict[str, float] = defaultdict(float)
    reported_pen: dict[str, float] = defaultdict(float)
    if table is None:
        problems.append("the instance has placement rules but the result has no violations table")
    else:
        for row in table.to_dict("records"):
            reported[str(row["rule"])] += float(row["violations"])
            reported_pen[str(row["rule"])] += float(row["penalty"])
    penalty = 0.0
    for k, rule in enumerate(instance.placement_rules or []):
        name = f"placement_rules[{k}]"

        def group(sid: str, scope: str = rule.scope) -> str | None:
            if scope == "server":
                return sid
            return label_of[sid].get(scope)

        if rule.scope == "server":
            all_groups = sorted(label_of)
        else:
            all_groups = sorted({v[rule.scope] for v in label_of.values() if rule.scope in v})
        members: dict[str, set[str]] = {g: set() for g in all_groups}
        partners: dict[str, set[str]] = {g: set() for g in all_groups}
        homeless: set[str] = set()
        with_tag = getattr(rule, "with_tag", None)
        for jid, srvs in on.items():
            for sid in srvs:
                g = group(sid)
                if rule.tag in tags[jid]:
                    if g is None:
                        homeless.add(jid)
                    else:
                        members[g].add(jid)
                if with_tag is not None and with_tag in tags[jid] and g is not None:
                    partners[g].add(jid)
        if rule.rule == "anti_affinity":
            count = sum(max(0, len(js) - 1) for js in members.values())
        elif rule.rule == "max_per_group":
            count = sum(max(0, len(js) - rule.max_per_group) for js in members.values())
        elif rule.rule == "affinity":
            count = len(homeless) + sum(
                1 for g, js in members.items() for j in js if not (partners[g] - {j})
            )
        else:
            sizes = [len(js) for js in members.values()]
            skew = max(sizes) - min(sizes) if sizes else 0
            count = max(0, skew - rule.max_skew)
        if rule.hard and count:
            problems.append(f"{name} (hard {rule.rule} of {rule.tag!r}): {count} violations")
        if not rule.hard:
            penalty += rule.penalty * count
        if table is not None:
            if not _close(reported.get(name, 0.0), float(count)):
                problems.append(
                    f"{name}: {count} violations recounted, the violations table says "
                    f"{reported.get(name, 0.0):g}"
                )
            want = 0.0 if rule.hard else rule.penalty * count
            if not _close(reported_pen.get(name, 0.0), want):
                problems.append(
                    f"{name}: penalty recounted as {want:g}, the violations table says "
                    f"{reported_pen.get(name, 0.0):g}"
                )
    if table is not None:
        known = {f"placement_rules[{k}]" for k in range(len(instance.placement_rules or []))}
        for name in set(reported) - known:
            problems.append(f"the violations table names an unknown rule {name!r}")
    return penalty
