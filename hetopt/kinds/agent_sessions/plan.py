"""A keep/evict plan (affinity + one decision per pause) and its result tables.

The tables and the objective values of a plan are computed here from the decisions
alone, for the MILP's extractor, the greedy plan and re-planning alike. The verifier
(:mod:`.verify`) re-derives everything independently from the instance and the tables.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .data import AgentArrays


@dataclass(frozen=True)
class Plan:
    """``gpu[s]``: the GPU of session ``s``; ``kept[q]``: pause ``q`` (flat order of
    :class:`~.data.AgentArrays`) keeps its context."""

    gpu: np.ndarray
    kept: np.ndarray


def pause_recompute(arr: AgentArrays, plan: Plan) -> np.ndarray:
    """Re-prefill seconds of each pause: 0 if kept, else tokens / prefill of its GPU."""
    rate = arr.prefill[plan.gpu[arr.p_session]]
    return np.where(plan.kept, 0.0, arr.p_tokens / rate)


def session_recompute(arr: AgentArrays, plan: Plan) -> np.ndarray:
    out = np.zeros(arr.num_sessions)
    np.add.at(out, arr.p_session, pause_recompute(arr, plan))
    return out


def gpu_work(arr: AgentArrays, plan: Plan) -> tuple[np.ndarray, np.ndarray]:
    """Per GPU: its sessions' own work and its recompute seconds."""
    work = np.zeros(arr.num_gpus)
    np.add.at(work, plan.gpu, arr.work)
    rec = np.zeros(arr.num_gpus)
    np.add.at(rec, plan.gpu[arr.p_session], pause_recompute(arr, plan))
    return work, rec


def fair_shares(arr: AgentArrays, plan: Plan) -> np.ndarray:
    """Per session: ideal / achieved completion (1 for a session without pauses or work)."""
    ideal = arr.ideal()
    achieved = ideal + session_recompute(arr, plan)
    return np.where(achieved > 0, ideal / np.where(achieved > 0, achieved, 1.0), 1.0)


def max_slowdown(arr: AgentArrays, plan: Plan) -> float:
    """The largest ``recompute_s / ideal_s`` (the fair-share model's level variable)."""
    ideal = arr.ideal()
    rec = session_recompute(arr, plan)
    has = ideal > 0
    return float((rec[has] / ideal[has]).max()) if has.any() else 0.0


def total_recompute(arr: AgentArrays, plan: Plan) -> float:
    """``min_recompute_s``: re-prefill seconds over every pause."""
    return float(pause_recompute(arr, plan).sum())


def max_load(arr: AgentArrays, plan: Plan) -> float:
    """``min_max_load``: the largest per-GPU work (own work plus recompute)."""
    work, rec = gpu_work(arr, plan)
    return float((work + rec).max())


def min_fair_share(arr: AgentArrays, plan: Plan) -> float:
    """``agent_fair_share``: the smallest ideal / achieved completion."""
    return float(fair_shares(arr, plan).min())


VALUES = {
    "min_recompute_s": total_recompute,
    "min_max_load": max_load,
    "agent_fair_share": min_fair_share,
}
"""Objective -> its value for a plan (in the objective's unit)."""

LEVELS = {**VALUES, "agent_fair_share": max_slowdown}
"""Objective -> the value of the model's own objective for a plan (the fair-share model
minimises the largest relative slowdown)."""


def objective_value(arr: AgentArrays, plan: Plan, objective: str) -> float:
    return VALUES[objective](arr, plan)


def model_level(arr: AgentArrays, plan: Plan, objective: str) -> float:
    return LEVELS[objective](arr, plan)


def memory_timeline(arr: AgentArrays, plan: Plan) -> pd.DataFrame:
    """Per GPU, the segments between consecutive event points (its sessions' pause starts
    and ends, active-batch breakpoints) with the kept and active tokens held there."""
    parts = []
    gpu_of_pause = plan.gpu[arr.p_session]
    for g in range(arr.num_gpus):
        q = np.nonzero(gpu_of_pause == g)[0]
        times = np.unique(np.concatenate([arr.p_start[q], arr.p_end[q], arr.active_t[g]]))
        if len(times) < 2:
            continue
        kq = q[plan.kept[q]]
        step = np.zeros(len(times), dtype=np.int64)
        np.add.at(step, np.searchsorted(times, arr.p_start[kq]), arr.p_tokens[kq])
        np.add.at(step, np.searchsorted(times, arr.p_end[kq]), -arr.p_tokens[kq])
        kept = np.cumsum(step)[:-1]
        parts.append(
            pd.DataFrame(
                {
                    "gpu": arr.gpu_ids[g],
                    "start_s": times[:-1],
                    "end_s": times[1:],
                    "kept_tokens": kept,
                    "active_tokens": arr.active_at(g, times[:-1]).astype(np.int64),
                    "capacity_tokens": np.full(len(kept), int(arr.capacity[g])),
                }
            )
        )
    if not parts:
        return pd.DataFrame(
            {
                "gpu": pd.Series([], dtype=object),
                "start_s": pd.Series([], dtype=float),
                "end_s": pd.Series([], dtype=float),
                "kept_tokens": pd.Series([], dtype=np.int64),
                "active_tokens": pd.Series([], dtype=np.int64),
                "capacity_tokens": pd.Series([], dtype=np.int64),
            }
        )
    return pd.concat(parts, ignore_index=True)


def plan_tables(arr: AgentArrays, plan: Plan) -> dict[str, pd.DataFrame]:
    """The declared tables of ``plan`` (see the kind's ``tables``)."""
    sid = np.array(arr.session_ids, dtype=object)
    gid = np.array(arr.gpu_ids, dtype=object)
    rec = pause_recompute(arr, plan)
    affinity = pd.DataFrame({"session": sid, "gpu": gid[plan.gpu]})
    retention = pd.DataFrame(
        {
            "session": sid[arr.p_session],
            "pause": arr.p_index.astype(np.int64),
            "gpu": gid[plan.gpu[arr.p_session]],
            "start_s": arr.p_start,
            "end_s": arr.p_end,
            "context_tokens": arr.p_tokens.astype(np.int64),
            "kept": plan.kept.astype(bool),
            "recompute_s": rec,
        }
    )
    work, grec = gpu_work(arr, plan)
    count = np.bincount(plan.gpu, minlength=arr.num_gpus).astype(np.int64)
    gpu_load = pd.DataFrame(
        {"gpu": gid, "sessions": count, "work_s": work, "recompute_s": grec, "load_s": work + grec}
    )
    ideal = arr.ideal()
    srec = session_recompute(arr, plan)
    completion = pd.DataFrame(
        {
            "session": sid,
            "gpu": gid[plan.gpu],
            "ideal_s": ideal,
            "recompute_s": srec,
            "achieved_s": ideal + srec,
            "fair_share": fair_shares(arr, plan),
        }
    )
    return {
        "affinity": affinity,
        "retention": retention,
        "memory_timeline": memory_timeline(arr, plan),
        "gpu_load": gpu_load,
        "completion": completion,
    }
