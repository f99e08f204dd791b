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
from .._shared import arguments as check
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

    Raises
    ------
    UsageError
        A bad argument, naming the parameter: ``num_sessions`` and ``num_gpus`` must be
        whole numbers from 1 to ``MAX_GENERATED`` (1,000,000), ``pauses`` one from 0 to
        that, ``seed`` one >= 0, ``kv_capacity_tokens`` and ``equal_context`` ``None``
        or whole numbers from 1 to 1e12, ``memory_pressure`` and ``prefill_tokens_s``
        numbers above 0 (at most 1e12), ``arrival_window_s`` ``None`` or a number from
        0 to 1e12.
    InstanceError
        ``num_sessions`` below 1 (as before), or a ``kv_capacity_tokens`` below the
        largest context drawn.
    """
    given = check.finite(num_sessions)
    if given is not None and given < 1:  # (the error of before: tests match it)
        raise InstanceError("must be at least 1", "sessions")
    num_sessions = check.count(num_sessions, "num_sessions")
    num_gpus = check.count(num_gpus, "num_gpus")
    pauses = check.count(pauses, "pauses", 0)
    seed = check.seed(seed)
    if kv_capacity_tokens is not None:
        kv_capacity_tokens = check.count(
            kv_capacity_tokens, "kv_capacity_tokens", 1, check.MAX_WHOLE
        )
    memory_pressure = check.positive(memory_pressure, "memory_pressure")
    prefill_tokens_s = check.positive(prefill_tokens_s, "prefill_tokens_s")
    if equal_context is not None:
        equal_context = check.count(equal_context, "equal_context", 1, check.MAX_WHOLE)
    if arrival_window_s is not None:
        arrival_window_s = check.nonnegative(arrival_window_s, "arrival_window_s")
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
