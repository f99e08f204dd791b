"""Seeded random ``agent_sessions`` instances.

Token sizes follow the Azure LLM inference trace 2023 (:mod:`.tokens`); everything about
time is synthetic:

* a session arrives at ``U(0, arrival_window_s)``;
* it alternates LLM calls and tool pauses (``pauses`` of them, then a last call). Call
  ``j`` prefills its new tokens (the first prompt, then the tool's output) at
  ``prefill_tokens_s`` and decodes its generated tokens at ``DECODE_TOKENS_S``; those
  seconds are the session's ``work_s``;
* a pause lasts ``exp(N(log 3, 1))`` seconds, clipped to [0.2, 120] (synthetic: tool calls
  of a few seconds with a heavy tail, not measured);
* the context grows by each call's generated tokens (Azure ``GeneratedTokens``) and each
  tool's output (``U{20, 400}`` tokens, synthetic), capped at ``MAX_CONTEXT``; the first
  prompt is an Azure ``ContextTokens`` of the code trace.

Without ``kv_capacity_tokens`` every GPU holds the time-average KV demand of the paused
contexts per GPU divided by ``memory_pressure`` (at least the largest context), rounded
up to a multiple of 256: pressure 2 means keeping every context would need about twice
the memory there is.
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import InstanceError
from .data import AgentSessionsInstance
from .tokens import CONTEXT_QUANTILES, GENERATED_QUANTILES, sample

DECODE_TOKENS_S = 50.0
MAX_CONTEXT = 32768


def generate(
    num_sessions: int,
    num_gpus: int = 1,
    pauses: int = 5,
    seed: int = 0,
    kv_capacity_tokens: int | None = None,
    memory_pressure: float = 2.0,
    prefill_tokens_s: float = 8000.0,
    heterogeneous: bool = False,
    equal_context: int | None = None,
    arrival_window_s: float | None = None,
    objective: str | None = "min_recompute_s",
) -> AgentSessionsInstance:
    """A reproducible instance (see the module for the distributions).

    Parameters
    ----------
    num_sessions, num_gpus, pauses
        Sessions, GPUs and pauses per session.
    kv_capacity_tokens
        Capacity of every GPU (default: from ``memory_pressure``).
    heterogeneous
        Every other GPU is a bigger one: twice the capacity, 1.5x the prefill speed.
    equal_context
        Give every pause this context size (the one-GPU known-answer case).
    arrival_window_s
        Sessions arrive within ``[0, arrival_window_s)`` (default: ``4 x pauses`` s).
    """
    if num_sessions < 1:
        raise InstanceError("must be at least 1", "sessions")
    if num_gpus < 1:
        raise InstanceError("must be at least 1", "gpus")
    if pauses < 0:
        raise InstanceError("must be at least 0", "pauses")
    if not memory_pressure > 0:
        raise InstanceError("must be > 0", "memory_pressure")
    rng = np.random.default_rng(seed)
    window = arrival_window_s if arrival_window_s is not None else 4.0 * max(1, pauses)
    sessions = []
    demand = 0.0
    largest = 1
    horizon = 0.0
    for i in range(num_sessions):
        t = float(rng.uniform(0.0, window))
        ctx = int(sample(CONTEXT_QUANTILES, rng, 1)[0])
        new = ctx
        gen = sample(GENERATED_QUANTILES, rng, pauses + 1)
        tool = rng.integers(20, 401, pauses)
        length = np.clip(np.exp(rng.normal(math.log(3.0), 1.0, pauses)), 0.2, 120.0)
        work = 0.0
        plist = []
        for j in range(pauses + 1):
            call = new / prefill_tokens_s + gen[j] / DECODE_TOKENS_S
            t += call
            work += call
            ctx = min(MAX_CONTEXT, ctx + int(gen[j]))
            if j == pauses:
                break
            start = round(t, 3)
            end = round(t + float(length[j]), 3)
            size = equal_context if equal_context is not None else ctx
            plist.append({"start_s": start, "end_s": end, "context_tokens": int(size)})
            demand += size * (end - start)
            largest = max(largest, int(size))
            t = end
            new = int(tool[j])
            ctx = min(MAX_CONTEXT, ctx + new)
        horizon = max(horizon, t)
        sessions.append({"id": f"a{i}", "pauses": plist, "work_s": round(work, 3)})
    factor = [2 if heterogeneous and g % 2 else 1 for g in range(num_gpus)]
    if kv_capacity_tokens is None:
        per_gpu = demand / max(horizon, 1e-9) / sum(factor) / memory_pressure
        base = max(largest, math.ceil(per_gpu / 256.0) * 256)
        caps = [base * f for f in factor]
    else:
        if kv_capacity_tokens < largest:
            raise InstanceError(
                f"must be at least the largest context ({largest} tokens)", "kv_capacity_tokens"
            )
        caps = [kv_capacity_tokens * f for f in factor]
    gpus = [
        {
            "id": f"g{g}",
            "kv_capacity_tokens": int(caps[g]),
            "prefill_tokens_s": float(prefill_tokens_s * (1.5 if factor[g] == 2 else 1.0)),
        }
        for g in range(num_gpus)
    ]
    data: dict = {"kind": "agent_sessions", "gpus": gpus, "sessions": sessions}
    if objective:
        data["objective"] = objective
    return AgentSessionsInstance.from_dict(data)
