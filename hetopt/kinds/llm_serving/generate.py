"""Seeded random ``llm_serving`` instances (``hetopt generate llm-serving``).

GPU types come from :data:`CATALOGUE` (illustrative on-demand prices and token rates of
one model replica; replace them with your own profile). Per bucket the mean prompt
length is log-uniform in [16, 8192] tokens and the mean output length log-uniform in
[8, 2048]; the rates are ``rate_rps * Dirichlet(0.5)``. A type's requests/s on a bucket
is the token model of :func:`token_throughput` times a factor ``U(0.85, 1.15)`` (rounded
to 4 significant digits); a type whose context limit is below ``input + output`` cannot
serve the bucket. Every instance also carries a ``deployed`` plan (about 1.25x the
instances the rates need, spread over the types), so that ``min_max_load`` and
``pd_split`` solve on it too.
"""

from __future__ import annotations

import math

import numpy as np

from .._shared import arguments as check
from .data import MAX_SLICE_FACTOR, LlmServingInstance

# type, $/h, prefill tokens/s, decode tokens/s, largest prompt + output (tokens)
CATALOGUE: tuple[tuple[str, float, float, float, int], ...] = (
    ("L4", 0.80, 2600.0, 480.0, 8192),
    ("A10G", 1.01, 3000.0, 600.0, 8192),
    ("L40S", 1.86, 7000.0, 1300.0, 16384),
    ("A100-40GB", 2.93, 9000.0, 1800.0, 16384),
    ("A100-80GB", 3.67, 10000.0, 2200.0, 32768),
    ("H100-80GB", 6.98, 22000.0, 4500.0, 32768),
    ("H200", 8.50, 26000.0, 6000.0, 65536),
    ("T4", 0.53, 1200.0, 220.0, 4096),
)


def token_throughput(
    input_tokens: float, output_tokens: float, prefill: float, decode: float
) -> float:
    """Requests/s of one instance that spends ``input/prefill`` s on a request's prompt and
    ``output/decode`` s on its generated tokens (a first estimate before profiling)."""
    return 1.0 / (input_tokens / prefill + output_tokens / decode)


def _sig(x: float, digits: int = 4) -> float:
    return float(f"{x:.{digits}g}")


def generate(
    num_buckets: int,
    num_types: int = 3,
    seed: int = 0,
    slice_factor: int = 4,
    rate_rps: float = 50.0,
    available: int | None = None,
    objective: str | None = "min_cost",
) -> LlmServingInstance:
    """A reproducible instance with ``num_buckets`` buckets on the first ``num_types``
    types of :data:`CATALOGUE` (see the module docstring for the distributions).

    ``num_buckets`` is a whole number from 1 to ``MAX_GENERATED`` (1,000,000),
    ``num_types`` one from 1 to ``len(CATALOGUE)``, ``seed`` one >= 0, ``slice_factor``
    one from 1 to 4096, ``rate_rps`` a number above 0 (at most 1e12) and ``available``
    ``None`` or a whole number >= 0; anything else is a :class:`~hetopt.UsageError`
    naming the parameter.
    """
    num_buckets = check.count(num_buckets, "num_buckets")
    num_types = check.count(num_types, "num_types", 1, len(CATALOGUE))
    seed = check.seed(seed)
    slice_factor = check.count(slice_factor, "slice_factor", 1, MAX_SLICE_FACTOR)
    rate_rps = check.positive(rate_rps, "rate_rps")
    if available is not None:
        available = check.count(available, "available", 0, check.MAX_WHOLE)
    rng = np.random.default_rng(seed)
    types = CATALOGUE[:num_types]
    tin = np.round(10 ** rng.uniform(math.log10(16), math.log10(8192), num_buckets))
    tout = np.round(10 ** rng.uniform(math.log10(8), math.log10(2048), num_buckets))
    rates = rate_rps * rng.dirichlet(np.full(num_buckets, 0.5))
    noise = rng.uniform(0.85, 1.15, (num_buckets, num_types))
    largest = max(range(num_types), key=lambda g: (types[g][4], types[g][3]))
    buckets = []
    need = np.zeros(num_types)
    for b in range(num_buckets):
        tp = {}
        for g, (name, _, pre, dec, ctx) in enumerate(types):
            if tin[b] + tout[b] <= ctx or g == largest:
                tp[name] = _sig(token_throughput(tin[b], tout[b], pre, dec) * noise[b, g])
        rate = _sig(float(rates[b]), 6)
        for name, v in tp.items():
            need[[t[0] for t in types].index(name)] += rate / v / len(tp)
        buckets.append(
            {
                "id": f"b{b}",
                "rate_rps": rate,
                "throughput_rps": tp,
                "input_tokens": float(tin[b]),
                "output_tokens": float(tout[b]),
            }
        )
    gpus = []
    for name, cost, pre, dec, _ in types:
        entry: dict = {
            "type": name,
            "cost_per_hour": cost,
            "prefill_tokens_s": pre,
            "decode_tokens_s": dec,
        }
        if available is not None:
            entry["available"] = available
        gpus.append(entry)
    deployed = {t[0]: math.ceil(1.25 * need[g]) for g, t in enumerate(types)}
    if available is not None:
        deployed = {k: min(v, available) for k, v in deployed.items()}
    data: dict = {
        "kind": "llm_serving",
        "gpus": gpus,
        "buckets": buckets,
        "slice_factor": slice_factor,
        "deployed": deployed,
    }
    if objective:
        data["objective"] = objective
    return LlmServingInstance.from_dict(data)
