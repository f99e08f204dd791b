"""Gavel's physical-cluster trace format -> ``gpu_cluster`` jobs and instances.

A trace has one job per line, 10 tab-separated fields::

    job_type  command  working_directory  num_steps_arg  needs_data_dir  total_steps
    scale_factor  priority_weight  SLO  arrival_time

``SLO`` is ``-1`` for none, otherwise Gavel's factor: the job should finish within
``SLO * duration`` seconds of its arrival, where ``duration`` is its run time alone
(Gavel's ``scheduler.add_job``). Bad or inconsistent lines raise
:class:`~hetopt.errors.InstanceError` naming the file and ``line N``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...errors import InstanceError
from .data import GpuClusterInstance
from .gavel import ThroughputTable

FIELDS = (
    "job_type",
    "command",
    "working_directory",
    "num_steps_arg",
    "needs_data_dir",
    "total_steps",
    "scale_factor",
    "priority_weight",
    "slo",
    "arrival_s",
)


def _number(text: str, name: str, where: str, source: str, integer: bool = False) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InstanceError(f"{name} must be a number, got {text!r}", where, source) from None
    if not math.isfinite(value):
        raise InstanceError(f"{name} must be finite, got {text!r}", where, source)
    if integer and value != int(value):
        raise InstanceError(f"{name} must be a whole number, got {text!r}", where, source)
    return value


def parse_trace_line(
    line: str, lineno: int, source: str = "<trace>", table: ThroughputTable | None = None
) -> dict[str, Any]:
    """Parse one trace line (``lineno`` is 1-based, used in error messages)."""
    where = f"line {lineno}"
    parts = line.rstrip("\r\n").split("\t")
    if len(parts) != len(FIELDS):
        raise InstanceError(
            f"expected {len(FIELDS)} tab-separated fields ({', '.join(FIELDS)}), "
            f"found {len(parts)}",
            where,
            source,
        )
    job_type = parts[0].strip()
    if not job_type:
        raise InstanceError("job_type is empty", where, source)
    needs = parts[4].strip()
    if needs not in ("0", "1"):
        raise InstanceError(f"needs_data_dir must be 0 or 1, got {needs!r}", where, source)
    steps = _number(parts[5], "total_steps", where, source, integer=True)
    if steps <= 0:
        raise InstanceError(f"total_steps must be > 0, got {parts[5]!r}", where, source)
    sf = _number(parts[6], "scale_factor", where, source, integer=True)
    if sf < 1:
        raise InstanceError(f"scale_factor must be >= 1, got {parts[6]!r}", where, source)
    prio = _number(parts[7], "priority_weight", where, source)
    if prio <= 0:
        raise InstanceError(f"priority_weight must be > 0, got {parts[7]!r}", where, source)
    slo_raw = _number(parts[8], "SLO", where, source)
    if slo_raw != -1 and slo_raw <= 0:
        raise InstanceError(f"SLO must be -1 (none) or > 0, got {parts[8]!r}", where, source)
    arrival = _number(parts[9], "arrival_time", where, source)
    if arrival < 0:
        raise InstanceError(f"arrival_time must be >= 0, got {parts[9]!r}", where, source)
    if table is not None and (job_type, int(sf)) not in table.solo:
        raise InstanceError(
            f"job type ({job_type!r}, {int(sf)}) is not in the throughput table", where, source
        )
    return {
        "line": lineno,
        "job_type": job_type,
        "command": parts[1],
        "working_directory": parts[2],
        "num_steps_arg": parts[3],
        "needs_data_dir": needs == "1",
        "total_steps": int(steps),
        "scale_factor": int(sf),
        "priority_weight": prio,
        "slo": None if slo_raw == -1 else slo_raw,
        "arrival_s": arrival,
    }


def read_gavel_trace(
    path: str | Path, table: ThroughputTable | None = None
) -> list[dict[str, Any]]:
    """Read a Gavel physical-cluster trace.

    Parameters
    ----------
    path
        The trace file (10 tab-separated fields per line; blank lines are skipped).
    table
        If given, every ``(job_type, scale_factor)`` must be in this throughput table.

    Returns
    -------
    list of dict
        One dict per job, in file order, with keys ``line``, ``job_type``,
        ``scale_factor`` (int), ``total_steps`` (int), ``priority_weight``, ``slo``
        (Gavel's SLO factor or ``None``), ``arrival_s`` and the command fields
        ``command``, ``working_directory``, ``num_steps_arg``, ``needs_data_dir``.

    Raises
    ------
    InstanceError
        Missing file, empty trace, or a bad line (the message names ``line N``).
    """
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise InstanceError("no such file", None, str(p)) from None
    except UnicodeDecodeError:
        raise InstanceError("not a text file", None, str(p)) from None
    out = [
        parse_trace_line(line, k, str(p), table)
        for k, line in enumerate(text.splitlines(), start=1)
        if line.strip()
    ]
    if not out:
        raise InstanceError("the trace has no jobs", None, str(p))
    return out


def trace_to_instance(
    records: Sequence[Mapping[str, Any]],
    table: ThroughputTable,
    workers: Mapping[str, int],
    objective: str | None = None,
    source: str = "<trace>",
    colocation: bool = False,
) -> GpuClusterInstance:
    """Turn trace records (from :func:`read_gavel_trace`) into a ``gpu_cluster`` instance.

    Job ``k`` gets id ``str(k)`` (Gavel's numbering), ``job_type``, ``scale_factor``,
    ``weight = priority_weight``, ``steps_remaining = total_steps``, ``arrival_s`` and,
    for jobs with an SLO, ``deadline_s = SLO * total_steps / (fastest solo throughput)``
    (Gavel's ``SLO * duration``, measured from arrival; the fastest type is used because
    the physical trace does not record the duration Gavel sampled).
    With ``colocation=True`` the table's non-zero pair throughputs among the trace's
    job types are added as the instance's ``colocation`` list (see
    :func:`colocation_entries`).
    """
    missing = [t for t in workers if t not in table.worker_types]
    if missing:
        raise InstanceError(
            f"worker type(s) {', '.join(missing)} not in the throughput table; it has: "
            f"{', '.join(table.worker_types)}",
            "workers",
            source,
        )
    jobs = []
    for k, rec in enumerate(records):
        key = (str(rec["job_type"]), int(rec["scale_factor"]))
        where = f"line {rec.get('line', k + 1)}"
        if key not in table.solo:
            raise InstanceError(
                f"job type ({key[0]!r}, {key[1]}) is not in the throughput table", where, source
            )
        solo = table.solo[key]
        thr = {t: float(solo.get(t, 0.0)) for t in workers}
        runnable = [t for t, v in thr.items() if v > 0 and workers[t] >= key[1]]
        if not runnable:
            raise InstanceError(
                f"job type ({key[0]!r}, {key[1]}) can run on none of the workers "
                f"{', '.join(f'{t}={n}' for t, n in workers.items())}",
                where,
                source,
            )
        job: dict[str, Any] = {
            "id": str(k),
            "job_type": key[0],
            "throughput": thr,
            "scale_factor": key[1],
            "weight": float(rec["priority_weight"]),
            "steps_remaining": float(rec["total_steps"]),
            "arrival_s": float(rec["arrival_s"]),
        }
        if rec.get("slo") is not None:
            fastest = max(thr[t] for t in runnable)
            job["deadline_s"] = float(rec["slo"]) * float(rec["total_steps"]) / fastest
        jobs.append(job)
    data: dict[str, Any] = {"kind": "gpu_cluster", "workers": dict(workers), "jobs": jobs}
    if colocation:
        keys = {(str(r["job_type"]), int(r["scale_factor"])) for r in records}
        data["colocation"] = colocation_entries(table, workers, keys)
    if objective:
        data["objective"] = objective
    return GpuClusterInstance.from_dict(data, source)


def colocation_entries(
    table: ThroughputTable, workers: Mapping[str, int], keys: set[tuple[str, int]]
) -> list[dict[str, Any]]:
    """The table's co-location pairs among job keys ``(job_type, scale_factor)``.

    One entry per unordered pair and worker type (Gavel's table is symmetric; the first
    orientation in sorted order is kept); pairs whose throughputs are both 0 (cannot
    share, usually out of memory) are left out.
    """
    out: list[dict[str, Any]] = []
    for wt in workers:
        for (a, b), (ta, tb) in sorted(table.pairs.get(wt, {}).items()):
            if a not in keys or b not in keys or a[1] != b[1] or a > b:
                continue
            if ta <= 0 and tb <= 0:
                continue
            out.append(
                {
                    "worker_type": wt,
                    "job_types": [a[0], b[0]],
                    "scale_factor": a[1],
                    "throughput": [float(ta), float(tb)],
                }
            )
    return out
