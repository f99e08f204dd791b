"""The ``llm_serving`` instance: GPU types, request buckets, a deployment.

The field names are those of issue 13 (a contract): ``gpus[].type/cost_per_hour/available/
prefill_tokens_s/decode_tokens_s``, ``buckets[].id/rate_rps/throughput_rps/input_tokens/
output_tokens``, ``slice_factor``, ``deployed``, ``objective``. The fields around them
(``power_w``, ``kv_link_gb_s``, ``power_cap_w``, ``kv_gb_per_token``, ``trace``, the token
ranges of a bucket) are for ``pd_split``'s caps and for converted traces.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ...errors import InstanceError
from ...instance import InstanceBase, fail
from .._shared.validation import id_positions

NonNegFloat = Annotated[float, Field(ge=0)]
PosFloat = Annotated[float, Field(gt=0)]
NonNegInt = Annotated[int, Field(ge=0)]
Name = Annotated[str, Field(min_length=1)]

MAX_SLICE_FACTOR = 4096
"""Largest ``slice_factor`` accepted (slices per bucket)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class GpuType(_Strict):
    """One GPU instance type that can be rented (one instance = one model replica).

    ``available`` is the stock (no limit when omitted). ``prefill_tokens_s`` and
    ``decode_tokens_s`` are the prompt tokens and generated tokens per second one
    instance sustains at the SLO (only ``pd_split`` uses them). ``power_w`` (power draw of
    one instance) and ``kv_link_gb_s`` (bandwidth one instance can send or receive KV
    cache at) are for ``pd_split``'s optional caps.
    """

    type: Name
    cost_per_hour: NonNegFloat
    available: NonNegInt | None = None
    prefill_tokens_s: PosFloat | None = None
    decode_tokens_s: PosFloat | None = None
    power_w: NonNegFloat | None = None
    kv_link_gb_s: PosFloat | None = None


class Bucket(_Strict):
    """Requests of similar size: their arrival rate and, per GPU type, the requests/s one
    instance of that type sustains at the SLO (a type missing from ``throughput_rps`` cannot
    serve the bucket).

    ``input_tokens`` / ``output_tokens``: mean prompt and generated tokens of a request
    (``pd_split`` needs them). ``input_range`` / ``output_range``: the bucket's token
    ranges ``[low, high)`` (informative; written by ``hetopt convert azure-llm``).
    ``requests``: the number of trace requests the rate was measured from (informative).
    """

    id: Name
    rate_rps: NonNegFloat
    throughput_rps: dict[Name, PosFloat]
    input_tokens: NonNegFloat | None = None
    output_tokens: NonNegFloat | None = None
    input_range: Annotated[list[NonNegInt], Field(min_length=2, max_length=2)] | None = None
    output_range: Annotated[list[NonNegInt], Field(min_length=2, max_length=2)] | None = None
    requests: NonNegInt | None = None


class Trace(_Strict):
    """Where the bucket rates come from: ``rate_rps = requests in bucket / duration_s``."""

    file: Name
    requests: NonNegInt
    duration_s: PosFloat
    start: str | None = None
    """Timestamp of the first request (as written in the trace)."""


class LlmServingInstance(InstanceBase):
    """GPU types, request-size buckets and (for routing) the deployed instances.

    Example::

        {"kind": "llm_serving",
         "gpus": [{"type": "A10G", "cost_per_hour": 1.01, "available": 8,
                   "prefill_tokens_s": 1800.0, "decode_tokens_s": 420.0}],
         "buckets": [{"id": "in0_out0", "rate_rps": 6.0,
                      "throughput_rps": {"A10G": 2.0},
                      "input_tokens": 512, "output_tokens": 128}],
         "slice_factor": 1, "deployed": {"A10G": 3}, "objective": "min_cost"}
    """

    kind: Literal["llm_serving"] = "llm_serving"
    gpus: Annotated[list[GpuType], Field(min_length=1)]
    buckets: Annotated[list[Bucket], Field(min_length=1)]
    slice_factor: Annotated[int, Field(ge=1, le=MAX_SLICE_FACTOR)] = 1
    deployed: dict[Name, NonNegInt] | None = None
    power_cap_w: PosFloat | None = None
    kv_gb_per_token: PosFloat | None = None
    trace: Trace | None = None
    objective: str | None = None

    @model_validator(mode="after")
    def _cross_checks(self) -> LlmServingInstance:
        types = {g.type: i for i, g in enumerate(self.gpus)}
        if len(types) != len(self.gpus):
            seen: dict[str, int] = {}
            for i, g in enumerate(self.gpus):
                if g.type in seen:
                    raise fail(
                        f"gpus[{i}].type",
                        f"duplicate GPU type {g.type!r} (also gpus[{seen[g.type]}])",
                    )
                seen[g.type] = i
        id_positions(self.buckets, "buckets", "bucket")
        for i, b in enumerate(self.buckets):
            if not b.throughput_rps:
                raise fail(
                    f"buckets[{i}].throughput_rps",
                    f"no GPU type can serve bucket {b.id!r}: give requests/s for at least one type",
                )
            for t in b.throughput_rps:
                if t not in types:
                    raise fail(
                        f"buckets[{i}].throughput_rps.{t}",
                        f"unknown GPU type {t!r}; the gpus are {', '.join(types)}",
                    )
            for name in ("input_range", "output_range"):
                r = getattr(b, name)
                if r is not None and r[0] > r[1]:
                    raise fail(f"buckets[{i}].{name}", f"low {r[0]} exceeds high {r[1]}")
        for t, n in (self.deployed or {}).items():
            if t not in types:
                raise fail(
                    f"deployed.{t}", f"unknown GPU type {t!r}; the gpus are {', '.join(types)}"
                )
            stock = self.gpus[types[t]].available
            if stock is not None and n > stock:
                raise fail(f"deployed.{t}", f"{n} instances deployed but only {stock} available")
        if self.kv_gb_per_token is None:
            for i, g in enumerate(self.gpus):
                if g.kv_link_gb_s is not None:
                    raise fail(
                        f"gpus[{i}].kv_link_gb_s",
                        "a KV link bandwidth needs kv_gb_per_token (KV-cache size of one token)",
                    )
        if self.power_cap_w is not None:
            for i, g in enumerate(self.gpus):
                if g.power_w is None:
                    raise fail(f"gpus[{i}].power_w", "required when power_cap_w is given")
        return self

    @cached_property
    def arrays(self) -> LlmArrays:
        return LlmArrays.from_instance(self)


@dataclass(frozen=True)
class LlmArrays:
    """Numpy views of an instance (derived once).

    ``throughput[b, g]`` is requests/s of one instance of type ``g`` on bucket ``b``
    (``nan`` where the type cannot serve the bucket); ``available[g]`` is ``inf`` without
    a stock limit.
    """

    types: list[str]
    bucket_ids: list[str]
    cost: np.ndarray
    available: np.ndarray
    rate: np.ndarray
    throughput: np.ndarray
    deployed: np.ndarray
    slice_factor: int

    @classmethod
    def from_instance(cls, inst: LlmServingInstance) -> LlmArrays:
        types = [g.type for g in inst.gpus]
        col = {t: j for j, t in enumerate(types)}
        tp = np.full((len(inst.buckets), len(types)), np.nan)
        for i, b in enumerate(inst.buckets):
            for t, v in b.throughput_rps.items():
                tp[i, col[t]] = v
        dep = np.zeros(len(types), dtype=np.int64)
        for t, n in (inst.deployed or {}).items():
            dep[col[t]] = n
        return cls(
            types=types,
            bucket_ids=[b.id for b in inst.buckets],
            cost=np.array([g.cost_per_hour for g in inst.gpus], dtype=float),
            available=np.array(
                [np.inf if g.available is None else g.available for g in inst.gpus], dtype=float
            ),
            rate=np.array([b.rate_rps for b in inst.buckets], dtype=float),
            throughput=tp,
            deployed=dep,
            slice_factor=inst.slice_factor,
        )

    @property
    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(bucket, type) index pairs where the type can serve the bucket, bucket-major."""
        b, g = np.nonzero(~np.isnan(self.throughput))
        return b, g


def require_tokens(inst: LlmServingInstance) -> tuple[np.ndarray, np.ndarray]:
    """Mean input and output tokens per bucket (``pd_split`` needs them).

    Raises
    ------
    InstanceError
        Naming the first bucket without ``input_tokens`` / ``output_tokens``.
    """
    for i, b in enumerate(inst.buckets):
        for name in ("input_tokens", "output_tokens"):
            if getattr(b, name) is None:
                raise InstanceError(
                    f"pd_split needs the mean {name.split('_')[0]} tokens of every bucket",
                    f"buckets[{i}].{name}",
                )
    return (
        np.array([b.input_tokens for b in inst.buckets], dtype=float),
        np.array([b.output_tokens for b in inst.buckets], dtype=float),
    )
