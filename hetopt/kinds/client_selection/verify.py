"""Independent verifier for ``client_selection`` results.

It reads only the instance and the result tables (``selection`` and, for
``min_duration``, ``class_samples``), never a Pyomo model, and re-checks every
constraint: every client listed once, exclusions and must-includes, the client cap,
group quotas, the upload schedule (shared uplink: uploads start after ``ready_s``, do
not overlap and end by the deadline), the bandwidth budget (parallel uplink) and the
per-class targets; then it recomputes the objective.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...result import Verification
from .algorithms import parallel_need_mbps
from .data import ClientSelectionInstance

REL_TOL = 1e-6
"""Time tolerance relative to the deadline (the MILP works in units of the deadline with
HiGHS's 1e-7 feasibility tolerance)."""


def _aligned(
    inst: ClientSelectionInstance, selection: pd.DataFrame
) -> tuple[pd.DataFrame, list[str]]:
    ids = inst.arrays.ids
    problems: list[str] = []
    if "client" not in selection.columns or "selected" not in selection.columns:
        return selection, ["the selection table needs the columns client and selected"]
    clients = selection["client"].astype(str)
    dup = clients.duplicated()
    if dup.any():
        problems.append(f"{int(dup.sum())} client(s) listed twice, e.g. {clients[dup].iloc[0]!r}")
        selection = selection[~dup.to_numpy()]
        clients = clients[~dup]
    df = selection.set_index(clients)
    unknown = df.index.difference(pd.Index(ids))
    if len(unknown):
        problems.append(f"{len(unknown)} unknown client(s) in the table, e.g. {unknown[0]!r}")
    df = df.reindex(ids)
    missing = df["selected"].isna()
    if missing.any():
        problems.append(
            f"{int(missing.sum())} client(s) missing from the selection table, "
            f"e.g. {ids[int(np.argmax(missing.to_numpy()))]!r}"
        )
    return df, problems


def verify(
    instance: ClientSelectionInstance,
    objective: str,
    objective_value: float | None,
    tables: dict[str, pd.DataFrame],
) -> Verification:
    """Check a selection against ``instance`` and recompute ``objective``."""
    inst = instance
    arr = inst.arrays
    D = arr.deadline
    tol = REL_TOL * D
    checks = ["clients_present", "exclude", "must_include", "max_clients", "group_quotas"]
    df, problems = _aligned(inst, tables.get("selection", pd.DataFrame()))
    if problems and "selected" not in df.columns:
        return Verification(False, None, tuple(problems), tuple(checks))
    sel = df["selected"].fillna(False).astype(bool).to_numpy()
    if (sel & ~arr.allowed).any():
        i = int(np.argmax(sel & ~arr.allowed))
        problems.append(f"excluded client {arr.ids[i]!r} is selected")
    if (arr.forced & ~sel).any():
        i = int(np.argmax(arr.forced & ~sel))
        problems.append(f"must-include client {arr.ids[i]!r} is not selected")
    count = int(sel.sum())
    if inst.max_clients is not None and count > inst.max_clients:
        problems.append(f"{count} clients selected > max_clients = {inst.max_clients}")
    if arr.groups:
        per_group = np.bincount(arr.group[sel & (arr.group >= 0)], minlength=len(arr.groups))
        gpos = {g: j for j, g in enumerate(arr.groups)}
        for g, lo in (inst.group_min or {}).items():
            if per_group[gpos[g]] < lo:
                problems.append(f"group {g!r}: {per_group[gpos[g]]} selected < group_min {lo}")
        for g, hi in (inst.group_max or {}).items():
            if per_group[gpos[g]] > hi:
                problems.append(f"group {g!r}: {per_group[gpos[g]]} selected > group_max {hi}")

    value: float | None
    if objective in ("max_clients", "max_weight"):
        if inst.uplink == "shared":
            problems += _check_shared(inst, df, sel, tol)
            checks += ["ready_before_upload", "upload_duration", "no_overlap", "deadline"]
        else:
            problems += _check_parallel(inst, df, sel, tol)
            checks += ["deadline", "bandwidth"]
        value = float(count) if objective == "max_clients" else float(arr.weight[sel].sum())
    elif objective == "min_duration":
        value, more = _check_testing(inst, df, sel, tables.get("class_samples"))
        problems += more
        checks += ["class_targets", "class_samples", "duration"]
    else:
        value = None
        problems.append(f"unknown objective {objective!r}")
    if value is not None:
        checks.append("objective")
        if objective_value is None or not np.isclose(value, objective_value, rtol=1e-6, atol=1e-6):
            problems.append(f"objective recomputed as {value:.9g}, result says {objective_value}")
    return Verification(
        ok=not problems, objective_value=value, violations=tuple(problems), checks=tuple(checks)
    )


def _col(df: pd.DataFrame, name: str, problems: list[str]) -> np.ndarray:
    if name not in df.columns:
        problems.append(f"the selection table has no column {name}")
        return np.full(len(df), np.nan)
    return df[name].to_numpy(dtype=float)


def _check_shared(
    inst: ClientSelectionInstance, df: pd.DataFrame, sel: np.ndarray, tol: float
) -> list[str]:
    arr = inst.arrays
    problems: list[str] = []
    start = _col(df, "upload_start_s", problems)[sel]
    finish = _col(df, "finish_s", problems)[sel]
    if problems:
        return problems
    ids = np.asarray(arr.ids, dtype=object)[sel]
    ready = arr.ready[sel]
    upload = arr.upload[sel]
    if np.isnan(start).any() or np.isnan(finish).any():
        problems.append("a selected client has no upload_start_s / finish_s")
        return problems
    bad = start < ready - tol
    if bad.any():
        i = int(np.argmax(bad))
        problems.append(
            f"client {ids[i]!r} starts uploading at {start[i]:.6g} s before it is ready ({ready[i]:.6g} s)"
        )
    bad = np.abs(finish - start - upload) > tol
    if bad.any():
        i = int(np.argmax(bad))
        problems.append(f"client {ids[i]!r}: finish_s - upload_start_s != upload_s")
    bad = finish > arr.deadline + tol
    if bad.any():
        i = int(np.argmax(bad))
        problems.append(
            f"client {ids[i]!r} finishes at {finish[i]:.9g} s, after the deadline {arr.deadline:g} s"
        )
    # by start, then finish: a zero-length upload that starts when a longer one does is
    # not an overlap (sorting by start alone compared it against the longer one's end)
    order = np.lexsort((finish, start))
    s, f = start[order], finish[order]
    overlap = s[1:] < f[:-1] - tol
    if overlap.any():
        k = int(np.argmax(overlap))
        problems.append(
            f"uploads of {ids[order[k]]!r} and {ids[order[k + 1]]!r} overlap on the shared uplink"
        )
    return problems


def _check_parallel(
    inst: ClientSelectionInstance, df: pd.DataFrame, sel: np.ndarray, tol: float
) -> list[str]:
    arr = inst.arrays
    problems: list[str] = []
    ids = np.asarray(arr.ids, dtype=object)
    late = sel & (arr.ready + arr.upload > arr.deadline + tol)
    if late.any():
        i = int(np.argmax(late))
        problems.append(f"client {ids[i]!r} cannot upload by the deadline even on its own link")
    finish = _col(df, "finish_s", problems)
    if not problems and (finish[sel] > arr.deadline + tol).any():
        problems.append("a selected client's finish_s is after the deadline")
    if inst.bandwidth_budget_mbps is not None and inst.update_mb is not None:
        need = parallel_need_mbps(arr.ready, arr.deadline, inst.update_mb)
        if not np.isfinite(need[sel]).all():
            problems.append("a selected client is ready only at the deadline")
        used = float(need[sel].sum())
        if used > inst.bandwidth_budget_mbps * (1 + REL_TOL):
            problems.append(
                f"selected clients need {used:.6g} Mbit/s > budget {inst.bandwidth_budget_mbps:g}"
            )
    return problems


def _check_testing(
    inst: ClientSelectionInstance,
    df: pd.DataFrame,
    sel: np.ndarray,
    class_samples: pd.DataFrame | None,
) -> tuple[float | None, list[str]]:
    arr = inst.arrays
    problems: list[str] = []
    targets = inst.class_targets or {}
    pos = {cid: i for i, cid in enumerate(arr.ids)}
    q = np.zeros(arr.n)
    got = dict.fromkeys(targets, 0.0)
    if class_samples is None:
        class_samples = pd.DataFrame({"client": [], "class": [], "samples": []})
    for cid, k, v in class_samples[["client", "class", "samples"]].itertuples(
        index=False, name=None
    ):
        i = pos.get(str(cid))
        if i is None:
            problems.append(f"class_samples names unknown client {cid!r}")
            continue
        if k not in targets:
            problems.append(f"class_samples names class {k!r} without a target")
            continue
        v = float(v)
        if v < -1e-9 or abs(v - round(v)) > 1e-6:
            problems.append(f"client {cid!r} class {k!r}: {v} is not a whole number of samples")
        if v > inst.clients[i].samples.get(k, 0) + 1e-6:
            problems.append(
                f"client {cid!r} class {k!r}: {v:g} samples > {inst.clients[i].samples.get(k, 0)} held"
            )
        if v > 1e-9 and not sel[i]:
            problems.append(f"client {cid!r} gives samples but is not selected")
        q[i] += v
        got[k] += v
    for k, t in targets.items():
        if abs(got[k] - t) > 1e-6 * max(1.0, t):
            problems.append(f"class {k!r}: {got[k]:g} samples taken, target {t}")
    if not sel.any():
        return 0.0, problems
    duration = arr.ready + arr.upload + arr.sample_s * q
    return float(duration[sel].max()), problems
