"""Independent verifier for ``agent_sessions`` plans.

Reads only the instance (its pydantic objects, never the numpy views or the Pyomo model)
and the result tables, and re-derives:

* ``affinity``: one row per session, a known GPU, the pin honoured, every context of the
  session fits on that GPU;
* ``retention``: every pause of every session exactly once, on its session's GPU, with
  its times and size, ``recompute_s`` = 0 when kept, else ``context_tokens /
  prefill_tokens_s``;
* the **timeline replay**: per GPU, an event sweep over every kept pause and active-batch
  entry (ends before starts at equal times, as the intervals are half-open) checks that
  kept plus active tokens never exceed ``kv_capacity_tokens`` at any instant;
* ``memory_timeline``: each GPU's segments are contiguous, every kept pause's start and
  end is a segment boundary, and each segment's kept / active tokens and capacity equal
  the replay's;
* ``gpu_load`` and ``completion``: recomputed from the above;
* the objective, recomputed for the objective solved.

A result with a ``segment`` table (``migration=True``) is checked by
:func:`verify_migration`: a GPU per call, each pause kept (same GPU before and after),
migrated (over a link of the instance, the context on the destination for the whole pause
and on the source while it is copied) or evicted (re-prefilled on the GPU it resumes on),
and the same replay over those holdings.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from ...result import Verification
from .data import AgentSessionsInstance

TOL = 1e-6


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=TOL, abs_tol=TOL)


class _Steps:
    """The level of a set of half-open intervals ``[a, b)`` as a step function."""

    def __init__(self, intervals: list[tuple[float, float, int]]):
        events = sorted(
            [(a, 1, n) for a, _, n in intervals] + [(b, 0, -n) for _, b, n in intervals]
        )
        self.times: list[float] = []
        self.levels: list[int] = []
        level = 0
        for t, _, delta in events:  # at equal times ends (0) come before starts (1)
            level += delta
            if self.times and self.times[-1] == t:
                self.levels[-1] = level
            else:
                self.times.append(t)
                self.levels.append(level)

    def at(self, t: float) -> int:
        k = bisect.bisect_right(self.times, t) - 1
        return self.levels[k] if k >= 0 else 0


RowCheck = Callable[[str, dict[str, Any]], "str | None"]
"""One more check of a table row (its key, the row): a problem, or ``None``."""


def _check_gpu_load(
    problems: list[str],
    table: pd.DataFrame,
    loads: Mapping[str, float],
    counts: Mapping[str, int],
    more: RowCheck | None = None,
) -> None:
    """The ``gpu_load`` table: one row per GPU, its session count and load."""
    seen = set()
    for r in table.to_dict("records"):
        g = str(r["gpu"])
        if g not in loads:
            problems.append(f"gpu_load names an unknown GPU {g!r}")
            continue
        seen.add(g)
        if int(r["sessions"]) != counts.get(g, 0) or not _close(float(r["load_s"]), loads[g]):
            problems.append(f"gpu_load of {g}: load_s {r['load_s']}, expected {loads[g]}")
        extra = more(g, r) if more is not None else None
        if extra is not None:
            problems.append(extra)
    if seen != set(loads):
        problems.append("gpu_load does not list every GPU")


def _fair_shares(sessions: Mapping[str, Any], cost: Mapping[str, float]) -> dict[str, float]:
    """Each session's fair share: its ideal time (work plus pauses) over the time it
    takes with ``cost`` (seconds of recompute, transfers) added."""
    shares: dict[str, float] = {}
    for se in sessions.values():
        ideal = se.work_s + sum(p.end_s - p.start_s for p in se.pauses)
        achieved = ideal + cost[se.id]
        shares[se.id] = ideal / achieved if achieved > 0 else 1.0
    return shares


def _check_completion(
    problems: list[str],
    table: pd.DataFrame,
    shares: Mapping[str, float],
    more: RowCheck | None = None,
) -> None:
    """The ``completion`` table: one row per session, its fair share."""
    seen = set()
    for r in table.to_dict("records"):
        s = str(r["session"])
        if s not in shares:
            problems.append(f"completion names an unknown session {s!r}")
            continue
        seen.add(s)
        if not _close(float(r["fair_share"]), shares[s]):
            problems.append(
                f"completion of {s}: fair_share {r['fair_share']}, expected {shares[s]}"
            )
        extra = more(s, r) if more is not None else None
        if extra is not None:
            problems.append(extra)
    if seen != set(shares):
        problems.append("completion does not list every session")


def _replay(
    gpus: Mapping[str, Any],
    held_on: Mapping[str, list[tuple[float, float, int]]],
    problems: list[str],
) -> dict[str, tuple[_Steps, _Steps]]:
    """Per GPU, the KV it holds (``held_on``: ``(start_s, end_s, tokens)``) and its
    active batch as step functions; a GPU above its capacity at any event is a problem."""
    replays: dict[str, tuple[_Steps, _Steps]] = {}
    for g, gpu in gpus.items():
        kept_steps = _Steps(held_on.get(g, []))
        active_steps = _Steps([(a.start_s, a.end_s, a.tokens) for a in gpu.active_kv or []])
        replays[g] = (kept_steps, active_steps)
        for t in sorted(set(kept_steps.times) | set(active_steps.times)):
            total = kept_steps.at(t) + active_steps.at(t)
            if total > gpu.kv_capacity_tokens:
                problems.append(
                    f"GPU {g} holds {total} tokens at t={t:g} s (capacity {gpu.kv_capacity_tokens})"
                )
                break
    return replays


def _timeline_rows(
    tables: Mapping[str, Any], gpus: Mapping[str, Any], problems: list[str]
) -> dict[str, list[dict[str, Any]]]:
    """The ``memory_timeline`` rows per known GPU (a row naming another is a problem)."""
    by_gpu: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in tables["memory_timeline"].to_dict("records"):
        if str(r["gpu"]) not in gpus:
            problems.append(f"memory_timeline names an unknown GPU {r['gpu']!r}")
            continue
        by_gpu[str(r["gpu"])].append(r)
    return by_gpu


def verify(
    instance: AgentSessionsInstance,
    objective: str,
    objective_value: float | None,
    tables: Mapping[str, pd.DataFrame],
) -> Verification:
    if "segment" in tables:
        return verify_migration(instance, objective, objective_value, tables)
    problems: list[str] = []
    checks = [
        "affinity",
        "retention",
        "capacity_replay",
        "memory_timeline",
        "gpu_load",
        "completion",
        "objective",
    ]
    gpus = {g.id: g for g in instance.gpus}
    sessions = {s.id: s for s in instance.sessions}

    # --- affinity
    gpu_of: dict[str, str] = {}
    for r in tables["affinity"].to_dict("records"):
        s, g = str(r["session"]), str(r["gpu"])
        if s not in sessions:
            problems.append(f"affinity names an unknown session {s!r}")
        elif s in gpu_of:
            problems.append(f"session {s} has two affinity rows")
        elif g not in gpus:
            problems.append(f"session {s} is on an unknown GPU {g!r}")
        else:
            gpu_of[s] = g
    for se in sessions.values():
        placed = gpu_of.get(se.id)
        if placed is None:
            problems.append(f"session {se.id} has no affinity")
            continue
        if se.gpu is not None and placed != se.gpu:
            problems.append(f"session {se.id} is pinned to {se.gpu} but placed on {placed}")
        need = max((p.context_tokens for p in se.pauses), default=0)
        if need > gpus[placed].kv_capacity_tokens:
            problems.append(f"session {se.id}: a {need}-token context does not fit on {placed}")

    # --- retention
    decision: dict[tuple[str, int], tuple[bool, float]] = {}
    for r in tables["retention"].to_dict("records"):
        if bool(r.get("migrated", False)):
            problems.append("retention has a migrated pause but the result no segment table")
        s, j = str(r["session"]), int(r["pause"])
        if s not in sessions or not 0 <= j < len(sessions[s].pauses):
            problems.append(f"retention names an unknown pause {s}[{j}]")
            continue
        if (s, j) in decision:
            problems.append(f"pause {s}[{j}] appears twice in retention")
            continue
        p = sessions[s].pauses[j]
        if s in gpu_of and str(r.get("gpu", gpu_of[s])) != gpu_of[s]:
            problems.append(f"pause {s}[{j}] is on {r['gpu']}, its session on {gpu_of[s]}")
        for col, want in (("start_s", p.start_s), ("end_s", p.end_s)):
            if col in r and not _close(float(r[col]), want):
                problems.append(f"pause {s}[{j}]: {col} {r[col]} differs from the instance")
        if "context_tokens" in r and int(r["context_tokens"]) != p.context_tokens:
            problems.append(f"pause {s}[{j}]: context_tokens differs from the instance")
        kept = bool(r["kept"])
        decision[(s, j)] = (kept, float(r["recompute_s"]))
    session_rec: dict[str, float] = defaultdict(float)
    gpu_rec: dict[str, float] = defaultdict(float)
    kept_on: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    for se in sessions.values():
        for j, p in enumerate(se.pauses):
            if (se.id, j) not in decision:
                problems.append(f"pause {se.id}[{j}] is missing from retention")
                continue
            if se.id not in gpu_of:
                continue
            g = gpu_of[se.id]
            kept, rec = decision[(se.id, j)]
            want = 0.0 if kept else p.context_tokens / gpus[g].prefill_tokens_s
            if not _close(rec, want):
                problems.append(f"pause {se.id}[{j}]: recompute_s {rec}, expected {want}")
            session_rec[se.id] += want
            gpu_rec[g] += want
            if kept:
                kept_on[g].append((p.start_s, p.end_s, p.context_tokens))

    # --- replay the timeline
    replays = _replay(gpus, kept_on, problems)

    # --- memory timeline
    by_gpu = _timeline_rows(tables, gpus, problems)
    for g, gpu in gpus.items():
        rows = sorted(by_gpu.get(g, []), key=lambda r: float(r["start_s"]))
        bounds: set[float] = set()
        for a, b in itertools.pairwise(rows):
            if not _close(float(a["end_s"]), float(b["start_s"])):
                problems.append(f"memory_timeline of {g}: a gap or overlap at {a['end_s']}")
                break
        kept_steps, active_steps = replays[g]
        for r in rows:
            t0 = float(r["start_s"])
            bounds.update((t0, float(r["end_s"])))
            if int(r["kept_tokens"]) != kept_steps.at(t0):
                problems.append(
                    f"memory_timeline of {g} at {t0:g} s: kept_tokens {r['kept_tokens']}, "
                    f"replay {kept_steps.at(t0)}"
                )
                break
            if int(r["active_tokens"]) != active_steps.at(t0):
                problems.append(f"memory_timeline of {g} at {t0:g} s: active_tokens differ")
                break
            if int(r["capacity_tokens"]) != gpu.kv_capacity_tokens:
                problems.append(f"memory_timeline of {g}: capacity_tokens differ")
                break
        for t0, t1, _ in kept_on.get(g, []):
            if t0 not in bounds or t1 not in bounds:
                problems.append(f"memory_timeline of {g} does not show the kept pause [{t0}, {t1})")
                break

    # --- per-GPU load and per-session completion
    work_on: dict[str, float] = defaultdict(float)
    count_on: dict[str, int] = defaultdict(int)
    for s, g in gpu_of.items():
        work_on[g] += sessions[s].work_s
        count_on[g] += 1
    loads = {g: work_on[g] + gpu_rec[g] for g in gpus}
    _check_gpu_load(problems, tables["gpu_load"], loads, count_on)
    shares = _fair_shares(sessions, session_rec)
    _check_completion(problems, tables["completion"], shares)

    # --- objective
    recompute = {
        "min_recompute_s": lambda: sum(session_rec.values()),
        "min_max_load": lambda: max(loads.values()),
        "agent_fair_share": lambda: min(shares.values()),
    }
    value = recompute[objective]()
    if objective_value is None or not _close(value, objective_value):
        problems.append(f"objective recomputed as {value}, result says {objective_value}")
    return Verification(
        ok=not problems, objective_value=value, violations=tuple(problems), checks=tuple(checks)
    )


def verify_migration(
    instance: AgentSessionsInstance,
    objective: str,
    objective_value: float | None,
    tables: Mapping[str, pd.DataFrame],
) -> Verification:
    """The checks of :func:`verify` for a plan with a GPU per call (``segment`` table)."""
    problems: list[str] = []
    checks = [
        "segment",
        "affinity",
        "retention",
        "capacity_replay",
        "memory_timeline",
        "gpu_load",
        "completion",
        "objective",
    ]
    gpus = {g.id: g for g in instance.gpus}
    sessions = {s.id: s for s in instance.sessions}
    links = {(k.src, k.dst): k.kv_transfer_tokens_s for k in instance.links or []}

    # --- segments: call j of a session runs after its pause j-1 and before its pause j
    seg: dict[tuple[str, int], str] = {}
    share: dict[tuple[str, int], float] = {}
    for r in tables["segment"].to_dict("records"):
        s, j, g = str(r["session"]), int(r["segment"]), str(r["gpu"])
        if s not in sessions or not 0 <= j <= len(sessions[s].pauses):
            problems.append(f"segment names an unknown call {s}[{j}]")
        elif (s, j) in seg:
            problems.append(f"call {s}[{j}] appears twice in segment")
        elif g not in gpus:
            problems.append(f"call {s}[{j}] is on an unknown GPU {g!r}")
        else:
            seg[(s, j)] = g
            share[(s, j)] = float(r.get("work_s", 0.0))
    for se in sessions.values():
        calls = len(se.pauses) + 1
        for j in range(calls):
            placed = seg.get((se.id, j))
            if placed is None:
                problems.append(f"call {se.id}[{j}] is missing from segment")
                continue
            g = placed
            if se.gpu is not None and g != se.gpu:
                problems.append(f"call {se.id}[{j}] is on {g}, the session is pinned to {se.gpu}")
            near = [se.pauses[k].context_tokens for k in (j - 1, j) if 0 <= k < len(se.pauses)]
            if near and max(near) > gpus[g].kv_capacity_tokens:
                problems.append(f"call {se.id}[{j}]: a {max(near)}-token context exceeds {g}")
            if "work_s" in tables["segment"] and not _close(share[(se.id, j)], se.work_s / calls):
                problems.append(
                    f"call {se.id}[{j}]: work_s {share[(se.id, j)]}, not work_s / {calls}"
                )

    # --- affinity = the GPU of the first call
    seen_aff = set()
    for r in tables["affinity"].to_dict("records"):
        s, g = str(r["session"]), str(r["gpu"])
        seen_aff.add(s)
        if s not in sessions:
            problems.append(f"affinity names an unknown session {s!r}")
        elif (s, 0) in seg and g != seg[(s, 0)]:
            problems.append(f"affinity of {s} is {g}, its first call runs on {seg[(s, 0)]}")
    if seen_aff != set(sessions):
        problems.append("affinity does not list every session")

    # --- retention: kept / migrated / evicted and their seconds
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for r in tables["retention"].to_dict("records"):
        key = (str(r["session"]), int(r["pause"]))
        if key[0] not in sessions or not 0 <= key[1] < len(sessions[key[0]].pauses):
            problems.append(f"retention names an unknown pause {key[0]}[{key[1]}]")
        elif key in rows:
            problems.append(f"pause {key[0]}[{key[1]}] appears twice in retention")
        else:
            rows[key] = r
    session_cost: dict[str, float] = defaultdict(float)
    session_rec: dict[str, float] = defaultdict(float)
    session_mig: dict[str, float] = defaultdict(float)
    gpu_rec: dict[str, float] = defaultdict(float)
    gpu_mig: dict[str, float] = defaultdict(float)
    held_on: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    for se in sessions.values():
        for j, p in enumerate(se.pauses):
            where = f"pause {se.id}[{j}]"
            r = rows.get((se.id, j))
            if r is None:
                problems.append(f"{where} is missing from retention")
                continue
            u, v = seg.get((se.id, j)), seg.get((se.id, j + 1))
            if u is None or v is None:
                continue
            if str(r["gpu"]) != v:
                problems.append(f"{where} resumes on {v}, retention says {r['gpu']}")
            for col, want in (("start_s", p.start_s), ("end_s", p.end_s)):
                if col in r and not _close(float(r[col]), want):
                    problems.append(f"{where}: {col} {r[col]} differs from the instance")
            if "context_tokens" in r and int(r["context_tokens"]) != p.context_tokens:
                problems.append(f"{where}: context_tokens differs from the instance")
            kept, moved = bool(r["kept"]), bool(r.get("migrated", False))
            rec = mig = 0.0
            if kept and moved:
                problems.append(f"{where} is both kept and migrated")
            elif kept:
                if u != v:
                    problems.append(f"{where} is kept but its calls run on {u} and {v}")
                held_on[v].append((p.start_s, p.end_s, p.context_tokens))
            elif moved:
                rate = links.get((u, v))
                if u == v or rate is None:
                    problems.append(f"{where} migrates {u} -> {v}: no such link")
                else:
                    mig = p.context_tokens / rate
                    held_on[v].append((p.start_s, p.end_s, p.context_tokens))
                    held_on[u].append((p.start_s, min(p.end_s, p.start_s + mig), p.context_tokens))
            else:
                rec = p.context_tokens / gpus[v].prefill_tokens_s
            if not _close(float(r["recompute_s"]), rec):
                problems.append(f"{where}: recompute_s {r['recompute_s']}, expected {rec}")
            if not _close(float(r.get("migrate_s", 0.0)), mig):
                problems.append(f"{where}: migrate_s {r.get('migrate_s')}, expected {mig}")
            session_rec[se.id] += rec
            session_mig[se.id] += mig
            session_cost[se.id] += rec + mig
            gpu_rec[v] += rec
            gpu_mig[v] += mig

    # --- replay every GPU's holdings with its active batch
    nonempty = {g: [iv for iv in ivs if iv[1] > iv[0]] for g, ivs in held_on.items()}
    replays = _replay(gpus, nonempty, problems)

    # --- memory timeline against the replay
    by_gpu = _timeline_rows(tables, gpus, problems)
    for g, gpu in gpus.items():
        trows = sorted(by_gpu.get(g, []), key=lambda r: float(r["start_s"]))
        for a, b in itertools.pairwise(trows):
            if not _close(float(a["end_s"]), float(b["start_s"])):
                problems.append(f"memory_timeline of {g}: a gap or overlap at {a['end_s']}")
                break
        kept_steps, active_steps = replays[g]
        bounds: set[float] = set()
        for r in trows:
            t0 = float(r["start_s"])
            bounds.update((t0, float(r["end_s"])))
            if (
                int(r["kept_tokens"]) != kept_steps.at(t0)
                or int(r["active_tokens"]) != active_steps.at(t0)
                or int(r["capacity_tokens"]) != gpu.kv_capacity_tokens
            ):
                problems.append(f"memory_timeline of {g} at {t0:g} s differs from the replay")
                break
        for t0, t1, _ in held_on.get(g, []):
            if t1 > t0 and not any(_close(t0, b) for b in bounds):
                problems.append(f"memory_timeline of {g} does not show the held [{t0}, {t1})")
                break
            if t1 > t0 and not any(_close(t1, b) for b in bounds):
                problems.append(f"memory_timeline of {g} does not show the held [{t0}, {t1})")
                break

    # --- per-GPU load (calls' work shares + recompute + transfers) and completion
    work_on: dict[str, float] = defaultdict(float)
    users: dict[str, set[str]] = defaultdict(set)
    for (s, _j), g in seg.items():
        work_on[g] += sessions[s].work_s / (len(sessions[s].pauses) + 1)
        users[g].add(s)
    loads = {g: work_on[g] + gpu_rec[g] + gpu_mig[g] for g in gpus}

    def migrated(g: str, r: dict[str, Any]) -> str | None:
        if "migrate_s" in r and not _close(float(r["migrate_s"]), gpu_mig[g]):
            return f"gpu_load of {g}: migrate_s {r['migrate_s']}, expected {gpu_mig[g]}"
        return None

    def retained(s: str, r: dict[str, Any]) -> str | None:
        if not _close(float(r["recompute_s"]), session_rec[s]) or not _close(
            float(r.get("migrate_s", 0.0)), session_mig[s]
        ):
            return f"completion of {s}: recompute_s / migrate_s differ from retention"
        return None

    counts = {g: len(users[g]) for g in gpus}
    _check_gpu_load(problems, tables["gpu_load"], loads, counts, migrated)
    shares = _fair_shares(sessions, session_cost)
    _check_completion(problems, tables["completion"], shares, retained)

    recompute = {
        "min_recompute_s": lambda: sum(session_cost.values()),
        "min_max_load": lambda: max(loads.values()),
        "agent_fair_share": lambda: min(shares.values()),
    }
    value = recompute[objective]()
    if objective_value is None or not _close(value, objective_value):
        problems.append(f"objective recomputed as {value}, result says {objective_value}")
    return Verification(
        ok=not problems, objective_value=value, violations=tuple(problems), checks=tuple(checks)
    )
