"""The ``agent_sessions`` instance: AI-agent sessions whose KV cache waits out tool pauses.

A session is a chain of LLM calls with tool calls (pauses) in between, on a predicted
timeline. During a pause ``[start_s, end_s)`` the session's context (``context_tokens`` of
KV cache) is either *kept* on the session's GPU or *evicted* and re-prefilled when the
session resumes, costing ``context_tokens / prefill_tokens_s`` seconds of that GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ...instance import InstanceBase, fail
from .._shared.validation import id_positions

NonNegFloat = Annotated[float, Field(ge=0)]
PosInt = Annotated[int, Field(gt=0)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class ActiveKv(_Strict):
    """KV tokens the GPU's running batch holds during ``[start_s, end_s)`` (optional
    per-GPU active-batch profile; overlapping entries add up)."""

    start_s: NonNegFloat
    end_s: NonNegFloat
    tokens: PosInt

    @model_validator(mode="after")
    def _order(self) -> ActiveKv:
        if self.end_s <= self.start_s:
            raise fail("end_s", f"must be after start_s ({self.start_s}), got {self.end_s}")
        return self


class Gpu(_Strict):
    """One GPU: how many KV tokens it can hold and how fast it re-prefills a context."""

    id: Annotated[str, Field(min_length=1)]
    kv_capacity_tokens: PosInt
    prefill_tokens_s: Annotated[float, Field(gt=0)]
    active_kv: list[ActiveKv] | None = None


class Pause(_Strict):
    """A tool call: the session waits during ``[start_s, end_s)`` holding
    ``context_tokens`` of KV cache (kept) or none (evicted, re-prefilled afterwards)."""

    start_s: NonNegFloat
    end_s: NonNegFloat
    context_tokens: PosInt

    @model_validator(mode="after")
    def _order(self) -> Pause:
        if self.end_s <= self.start_s:
            raise fail(
                "end_s",
                f"must be after start_s ({self.start_s}), got {self.end_s} (a pause ends after it starts)",
            )
        return self


class Session(_Strict):
    """An agent session: its pauses in time order, its own GPU work (prompt and decode
    seconds, without recompute) and optionally a GPU it is pinned to."""

    id: Annotated[str, Field(min_length=1)]
    pauses: list[Pause] = Field(default_factory=list)
    work_s: NonNegFloat = 0.0
    gpu: str | None = None
    """Pin the session to this GPU (e.g. it is already running there)."""


class Link(_Strict):
    """A KV transfer path from GPU ``src`` to GPU ``dst`` (directed; list both directions
    for a symmetric link). Used only by solves with ``migration=True``: a context can then
    move from ``src`` to ``dst`` during a pause in ``context_tokens / kv_transfer_tokens_s``
    seconds instead of being re-prefilled."""

    src: Annotated[str, Field(min_length=1)]
    dst: Annotated[str, Field(min_length=1)]
    kv_transfer_tokens_s: Annotated[float, Field(gt=0)]


class AgentSessionsInstance(InstanceBase):
    """Agent sessions with tool pauses on GPUs with KV-cache capacity.

    Example::

        {"kind": "agent_sessions",
         "gpus": [{"id": "g0", "kv_capacity_tokens": 40000, "prefill_tokens_s": 8000.0}],
         "sessions": [{"id": "a0", "pauses": [{"start_s": 3.0, "end_s": 18.5,
                                               "context_tokens": 4096}]}],
         "objective": "min_recompute_s"}
    """

    kind: Literal["agent_sessions"] = "agent_sessions"
    gpus: Annotated[list[Gpu], Field(min_length=1)]
    sessions: Annotated[list[Session], Field(min_length=1)]
    links: list[Link] | None = None
    """KV transfer links between GPUs (optional; read only with ``migration=True``)."""
    objective: str | None = None

    @model_validator(mode="after")
    def _cross_checks(self) -> AgentSessionsInstance:
        gpos = id_positions(self.gpus, "gpus", "GPU")
        id_positions(self.sessions, "sessions", "session")
        for g, gpu in enumerate(self.gpus):
            t, level = active_profile(gpu.active_kv)
            if len(level) and level.max() > gpu.kv_capacity_tokens:
                k = int(np.argmax(level))
                raise fail(
                    f"gpus[{g}].active_kv",
                    f"the running batch holds {int(level[k])} tokens at t={t[k]:g} s, more than "
                    f"kv_capacity_tokens ({gpu.kv_capacity_tokens})",
                )
        seen: set[tuple[str, str]] = set()
        for k, link in enumerate(self.links or []):
            for end in ("src", "dst"):
                if getattr(link, end) not in gpos:
                    raise fail(f"links[{k}].{end}", f"unknown GPU {getattr(link, end)!r}")
            if link.src == link.dst:
                raise fail(f"links[{k}].dst", f"a link joins two GPUs, got {link.src!r} twice")
            if (link.src, link.dst) in seen:
                raise fail(f"links[{k}]", f"a second link {link.src!r} -> {link.dst!r}")
            seen.add((link.src, link.dst))
        biggest = max(gpu.kv_capacity_tokens for gpu in self.gpus)
        for i, s in enumerate(self.sessions):
            for j, p in enumerate(s.pauses):
                where = f"sessions[{i}].pauses[{j}]"
                if p.context_tokens > biggest:
                    raise fail(
                        f"{where}.context_tokens",
                        f"{p.context_tokens} tokens fit on no GPU (the largest holds {biggest})",
                    )
                if j and p.start_s < s.pauses[j - 1].end_s:
                    raise fail(
                        f"{where}.start_s",
                        f"starts at {p.start_s:g} s, before the previous pause of session "
                        f"{s.id!r} ends ({s.pauses[j - 1].end_s:g} s): a session's pauses are "
                        "in time order and do not overlap",
                    )
            need = max((p.context_tokens for p in s.pauses), default=0)
            if s.gpu is not None:
                if s.gpu not in gpos:
                    raise fail(f"sessions[{i}].gpu", f"unknown GPU {s.gpu!r}")
                cap = self.gpus[gpos[s.gpu]].kv_capacity_tokens
                if need > cap:
                    raise fail(
                        f"sessions[{i}].gpu",
                        f"session {s.id!r} has a {need}-token context; GPU {s.gpu!r} holds "
                        f"only {cap}",
                    )
        return self

    @cached_property
    def arrays(self) -> AgentArrays:
        return AgentArrays.from_instance(self)


def active_profile(entries: list[ActiveKv] | None) -> tuple[np.ndarray, np.ndarray]:
    """The active-batch KV as a step function: breakpoints ``t`` (sorted) and the level
    on ``[t[k], t[k+1])`` (0 before ``t[0]`` and from the last breakpoint on)."""
    if not entries:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    times = np.array([e.start_s for e in entries] + [e.end_s for e in entries])
    delta = np.array([e.tokens for e in entries] + [-e.tokens for e in entries], dtype=np.int64)
    t, inv = np.unique(times, return_inverse=True)
    step = np.zeros(len(t), dtype=np.int64)
    np.add.at(step, inv, delta)
    return t, np.cumsum(step)


@dataclass(frozen=True)
class AgentArrays:
    """Numpy views of an instance (derived once).

    Pauses are flattened in session order: pause ``q`` belongs to session
    ``p_session[q]`` and is its ``p_index[q]``-th pause.
    """

    gpu_ids: list[str]
    session_ids: list[str]
    capacity: np.ndarray
    """KV tokens per GPU."""
    prefill: np.ndarray
    """Re-prefill speed per GPU (tokens/s)."""
    active_t: list[np.ndarray]
    active_level: list[np.ndarray]
    """Per GPU: the active-batch step function (see :func:`active_profile`)."""
    work: np.ndarray
    """Per session: its own GPU seconds (``work_s``)."""
    pinned: np.ndarray
    """Per session: the GPU it is pinned to, -1 if none."""
    allowed: np.ndarray
    """sessions x GPUs: the session may run there (its contexts fit; its pin)."""
    p_session: np.ndarray
    p_index: np.ndarray
    p_start: np.ndarray
    p_end: np.ndarray
    p_tokens: np.ndarray

    @classmethod
    def from_instance(cls, inst: AgentSessionsInstance) -> AgentArrays:
        gpos = {g.id: k for k, g in enumerate(inst.gpus)}
        cap = np.array([g.kv_capacity_tokens for g in inst.gpus], dtype=np.int64)
        profiles = [active_profile(g.active_kv) for g in inst.gpus]
        ps, pi, st, en, tok = [], [], [], [], []
        need = np.zeros(len(inst.sessions), dtype=np.int64)
        for i, s in enumerate(inst.sessions):
            for j, p in enumerate(s.pauses):
                ps.append(i)
                pi.append(j)
                st.append(p.start_s)
                en.append(p.end_s)
                tok.append(p.context_tokens)
                need[i] = max(need[i], p.context_tokens)
        pinned = np.array(
            [gpos[s.gpu] if s.gpu is not None else -1 for s in inst.sessions], dtype=np.int64
        )
        allowed = need[:, None] <= cap[None, :]
        for i, g in enumerate(pinned):
            if g >= 0:
                allowed[i] = False
                allowed[i, g] = True
        return cls(
            gpu_ids=[g.id for g in inst.gpus],
            session_ids=[s.id for s in inst.sessions],
            capacity=cap,
            prefill=np.array([g.prefill_tokens_s for g in inst.gpus], dtype=float),
            active_t=[p[0] for p in profiles],
            active_level=[p[1] for p in profiles],
            work=np.array([s.work_s for s in inst.sessions], dtype=float),
            pinned=pinned,
            allowed=allowed,
            p_session=np.array(ps, dtype=np.int64),
            p_index=np.array(pi, dtype=np.int64),
            p_start=np.array(st, dtype=float),
            p_end=np.array(en, dtype=float),
            p_tokens=np.array(tok, dtype=np.int64),
        )

    @property
    def num_gpus(self) -> int:
        return len(self.gpu_ids)

    @property
    def num_sessions(self) -> int:
        return len(self.session_ids)

    @property
    def num_pauses(self) -> int:
        return len(self.p_session)

    def active_at(self, g: int, t: np.ndarray) -> np.ndarray:
        """Active-batch KV tokens on GPU ``g`` at the instants ``t``."""
        bt, lv = self.active_t[g], self.active_level[g]
        if not len(bt):
            return np.zeros(len(t), dtype=np.int64)
        k = np.searchsorted(bt, t, side="right") - 1
        return np.where(k >= 0, lv[np.maximum(k, 0)], 0)

    def ideal(self) -> np.ndarray:
        """Per session: its completion without recompute, ``work_s`` plus its pauses."""
        pause = np.zeros(self.num_sessions)
        np.add.at(pause, self.p_session, self.p_end - self.p_start)
        return self.work + pause
