"""Re-planning as pauses end: fix the past, re-solve the future through the pipeline.

Pause times are predictions; as the agents run they move. :func:`replan` takes the
updated timeline (``instance``: the same sessions and pauses, with the times now
expected), the plan followed so far (``previous``: its ``affinity`` and ``retention``
tables) and the current time ``now_s``, and:

* **fixes the past**: a pause that has ended keeps its decision (its recompute is
  committed); a pause under way that was evicted stays evicted (committed); a session
  that has paused before ``now_s`` (or is listed in ``started``) stays on its GPU;
* **re-solves the future**: pauses under way that were kept continue as pauses
  ``[now_s, end_s)`` that may still be kept or evicted now, later pauses are decided
  afresh, other sessions may move; active-batch entries are clipped to ``[now_s, ...)``.
  This future instance (:func:`replan_instance`) is an ordinary instance of the kind,
  solved by :func:`hetopt.solve`'s pipeline, so the future plan is verified as usual;
* **merges** the two into tables in the original pause numbering (``Replan.tables``),
  which the next call takes as ``previous``.

This driver is self-contained: the generic rolling-horizon driver of ``hetopt.rolling``
is being reworked (issue 12) and should later call :func:`replan_instance` as a kind
hook.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from ...errors import InstanceError, UsageError
from .data import AgentSessionsInstance

if TYPE_CHECKING:
    from ...options import SolveOptions
    from ...result import Result


@dataclass(frozen=True)
class FuturePause:
    """Where a pause of the future instance comes from."""

    session: str
    pause: int
    """Position of the pause in the session's pauses of the full timeline."""
    future_pause: int
    """Its position in the future instance."""


@dataclass(frozen=True)
class Replan:
    """One re-plan: the future solve and the merged plan over the whole timeline."""

    now_s: float
    future: AgentSessionsInstance
    """The instance that was solved: what is still to be decided."""
    result: Result
    """The verified result of the future instance (its own pause numbering)."""
    committed: pd.DataFrame
    """Decisions fixed before ``now_s``: ``session, pause, gpu, kept, recompute_s``."""
    tables: dict[str, pd.DataFrame]
    """``affinity`` and ``retention`` over the whole timeline (original numbering);
    pass them as ``previous`` to the next :func:`replan`. Empty without a solution."""

    @property
    def total_recompute_s(self) -> float | None:
        """Committed plus planned re-prefill seconds (``None`` without a solution)."""
        if "retention" not in self.tables:
            return None
        return float(self.tables["retention"]["recompute_s"].sum())


def _tables_of(previous: Result | Mapping[str, pd.DataFrame]) -> Mapping[str, pd.DataFrame]:
    tables: Mapping[str, pd.DataFrame] = (
        previous if isinstance(previous, Mapping) else previous.tables
    )
    for name in ("affinity", "retention"):
        if name not in tables:
            raise InstanceError(f"the previous plan has no {name!r} table", "previous")
    return tables


def replan_instance(
    instance: AgentSessionsInstance,
    previous: Result | Mapping[str, pd.DataFrame],
    now_s: float,
    started: Collection[str] = (),
) -> tuple[AgentSessionsInstance, pd.DataFrame, list[FuturePause]]:
    """The future instance at ``now_s``, the committed decisions and the pause map.

    Raises
    ------
    InstanceError
        When ``previous`` does not plan every session and pause of ``instance``.
    """
    tables = _tables_of(previous)
    gpu_of = {str(r["session"]): str(r["gpu"]) for r in tables["affinity"].to_dict("records")}
    kept_of = {
        (str(r["session"]), int(r["pause"])): bool(r["kept"])
        for r in tables["retention"].to_dict("records")
    }
    prefill = {g.id: g.prefill_tokens_s for g in instance.gpus}
    started = set(started)
    committed: list[dict[str, Any]] = []
    pmap: list[FuturePause] = []
    sessions = []
    for s in instance.sessions:
        if s.id not in gpu_of:
            raise InstanceError(
                f"the previous plan has no affinity for session {s.id!r}", "previous"
            )
        g = gpu_of[s.id]
        pauses: list[dict[str, Any]] = []
        for j, p in enumerate(s.pauses):
            if (s.id, j) not in kept_of:
                raise InstanceError(
                    f"the previous plan has no decision for pause {s.id}[{j}]", "previous"
                )
            kept = kept_of[(s.id, j)]
            ongoing = p.start_s < now_s < p.end_s
            if p.end_s <= now_s or (ongoing and not kept):
                committed.append(
                    {
                        "session": s.id,
                        "pause": j,
                        "gpu": g,
                        "kept": kept,
                        "recompute_s": 0.0 if kept else p.context_tokens / prefill[g],
                    }
                )
                continue
            pmap.append(FuturePause(s.id, j, len(pauses)))
            start = max(p.start_s, now_s)
            pauses.append({"start_s": start, "end_s": p.end_s, "context_tokens": p.context_tokens})
        begun = s.id in started or any(p.start_s < now_s for p in s.pauses)
        entry: dict[str, Any] = {"id": s.id, "pauses": pauses, "work_s": s.work_s}
        pin = s.gpu if s.gpu is not None else (g if begun else None)
        if pin is not None:
            entry["gpu"] = pin
        sessions.append(entry)
    gpus = []
    for gpu in instance.gpus:
        active = [
            {"start_s": max(a.start_s, now_s), "end_s": a.end_s, "tokens": a.tokens}
            for a in gpu.active_kv or []
            if a.end_s > now_s
        ]
        entry = {
            "id": gpu.id,
            "kv_capacity_tokens": gpu.kv_capacity_tokens,
            "prefill_tokens_s": gpu.prefill_tokens_s,
        }
        if active:
            entry["active_kv"] = active
        gpus.append(entry)
    data: dict[str, Any] = {"kind": "agent_sessions", "gpus": gpus, "sessions": sessions}
    if instance.objective is not None:
        data["objective"] = instance.objective
    cols = ["session", "pause", "gpu", "kept", "recompute_s"]
    return (
        AgentSessionsInstance.from_dict(data),
        pd.DataFrame(committed, columns=cols),
        pmap,
    )


def replan(
    instance: AgentSessionsInstance,
    previous: Result | Mapping[str, pd.DataFrame],
    now_s: float,
    objective: str | None = None,
    options: SolveOptions | None = None,
    started: Collection[str] = (),
    **params: Any,
) -> Replan:
    """Fix the plan before ``now_s`` and re-solve the rest (see the module).

    Parameters
    ----------
    instance
        The timeline as now expected (same sessions and pauses as ``previous`` plans).
    previous
        The plan followed so far: a :class:`~hetopt.Result` or its ``affinity`` and
        ``retention`` tables (e.g. ``Replan.tables`` of the previous call).
    now_s
        The current time.
    objective, options, params
        As for :func:`hetopt.solve` (objective default: the instance's, else
        ``min_recompute_s``).
    started
        Sessions to keep on their GPU even if they have not paused yet.
    """
    from . import KIND

    if params.get("migration"):
        raise UsageError(
            "replan() does not support migration=True: it fixes the past by one GPU per "
            "session (re-plan without migration, or solve the future instance directly)"
        )
    future, committed, pmap = replan_instance(instance, previous, now_s, started)
    name = KIND.resolve_objective(future, objective)
    result = KIND.solve(future, name, options, **params)
    tables: dict[str, pd.DataFrame] = {}
    if result.status.has_solution:
        tables = _merge(future, result, committed, pmap)
    return Replan(now_s, future, result, committed, tables)


def _merge(
    future: AgentSessionsInstance,
    result: Result,
    committed: pd.DataFrame,
    pmap: list[FuturePause],
) -> dict[str, pd.DataFrame]:
    affinity = result.tables["affinity"][["session", "gpu"]].reset_index(drop=True)
    ret = result.tables["retention"].set_index(["session", "pause"])
    rows = [
        {
            "session": fp.session,
            "pause": fp.pause,
            "gpu": ret.loc[(fp.session, fp.future_pause), "gpu"],
            "kept": bool(ret.loc[(fp.session, fp.future_pause), "kept"]),
            "recompute_s": float(ret.loc[(fp.session, fp.future_pause), "recompute_s"]),
        }
        for fp in pmap
    ]
    merged = pd.concat(
        [committed, pd.DataFrame(rows, columns=committed.columns)], ignore_index=True
    )
    order = {s.id: i for i, s in enumerate(future.sessions)}
    merged["_o"] = merged["session"].map(order)
    merged = merged.sort_values(["_o", "pause"]).drop(columns="_o").reset_index(drop=True)
    merged["kept"] = merged["kept"].astype(bool)
    return {"affinity": affinity, "retention": merged}
