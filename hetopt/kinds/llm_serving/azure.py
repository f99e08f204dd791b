"""The Azure LLM inference trace (Splitwise, ISCA'24) as ``llm_serving`` workloads.

The trace format is one request per line, ``TIMESTAMP,ContextTokens,GeneratedTokens``
(``2023-11-16 18:17:03.9799600,4808,10``). :func:`azure_to_instance` cuts it into
buckets over (prompt tokens, generated tokens) ranges with
``rate_rps = requests in the bucket / duration_s``, where ``duration_s`` is the time from
the first to the last request, so that ``sum_b rate_rps_b * duration_s`` is the number of
requests: none is lost. With a GPU catalogue (:func:`load_catalogue`) every bucket gets
``throughput_rps`` per type and the result is a solvable instance.

:func:`trace_periods` gives the bucket rates per period (an hour by default) for
:func:`hetopt.kinds.llm_serving.hourly.solve_hourly`.
"""

from __future__ import annotations

import csv
import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import Field, ValidationError

from ...errors import InstanceError
from ...instance import validation_to_instance_error
from .data import GpuType, _Strict
from .generate import token_throughput

HEADER = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
DEFAULT_BUCKETS = "256,512,1024,2048,4096/32,64,128,256,512"
"""Default bucket boundaries: prompt tokens / generated tokens (inner edges)."""


@dataclass(frozen=True)
class TraceRequests:
    """Requests of a trace: seconds since the first request, prompt and output tokens."""

    file: str
    start: str
    t_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray

    @property
    def duration_s(self) -> float:
        return float(self.t_s.max() - self.t_s.min()) if len(self.t_s) else 0.0


def read_azure_trace(path: str | Path) -> TraceRequests:
    """Read a trace CSV.

    Raises
    ------
    InstanceError
        Naming the file and the line of a bad header, timestamp or token count.
    """
    src = str(path)
    times: list[float] = []
    tin: list[int] = []
    tout: list[int] = []
    start = ""
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None or tuple(h.strip() for h in header[:3]) != HEADER:
            raise InstanceError(
                f"expected the header {','.join(HEADER)}, got {','.join(header or [])!r}",
                "line 1",
                src,
            )
        t0: datetime | None = None
        for lineno, row in enumerate(reader, start=2):
            if not row or not "".join(row).strip():
                continue
            if len(row) < 3:
                raise InstanceError("expected 3 comma-separated values", f"line {lineno}", src)
            try:
                ts = datetime.fromisoformat(row[0].strip())
            except ValueError:
                raise InstanceError(
                    f"TIMESTAMP {row[0]!r} is not a date and time", f"line {lineno}", src
                ) from None
            vals = []
            for name, raw in zip(HEADER[1:], row[1:3], strict=True):
                try:
                    v = int(raw.strip())
                except ValueError:
                    v = -1
                if v < 0:
                    raise InstanceError(
                        f"{name} {raw!r} is not a whole number >= 0", f"line {lineno}", src
                    )
                vals.append(v)
            if t0 is None:
                t0, start = ts, row[0].strip()
            times.append((ts - t0).total_seconds())
            tin.append(vals[0])
            tout.append(vals[1])
    if len(times) < 2:
        raise InstanceError("a trace needs at least two requests to have a duration", None, src)
    t = np.array(times)
    if float(t.max() - t.min()) <= 0:
        raise InstanceError("every request has the same timestamp: no duration", None, src)
    return TraceRequests(Path(src).name, start, t, np.array(tin), np.array(tout))


def parse_buckets(spec: str) -> tuple[list[int], list[int]]:
    """``"256,1024/64,256"`` -> inner edges of the prompt and output token ranges.

    Edges split ``[0, inf)``: ``256,1024`` makes ``[0, 256)``, ``[256, 1024)`` and
    ``[1024, inf)``. Either side may be empty (one range).

    Raises
    ------
    ValueError
        With what is wrong in ``spec``.
    """
    parts = spec.split("/")
    if len(parts) != 2:
        raise ValueError(
            f"expected PROMPT_EDGES/OUTPUT_EDGES like {DEFAULT_BUCKETS!r}, got {spec!r}"
        )
    out = []
    for side, text in zip(("prompt", "output"), parts, strict=True):
        edges = []
        for item in filter(None, (x.strip() for x in text.split(","))):
            try:
                v = int(item)
            except ValueError:
                raise ValueError(f"{side} edge {item!r} is not a whole number") from None
            edges.append(v)
        if any(v <= 0 for v in edges) or any(b <= a for a, b in itertools.pairwise(edges)):
            raise ValueError(f"{side} edges must be increasing whole numbers > 0, got {text!r}")
        out.append(edges)
    return out[0], out[1]


def bucket_index(tokens: np.ndarray, edges: Sequence[int]) -> np.ndarray:
    """Range index of each token count (``edges`` as in :func:`parse_buckets`)."""
    return np.searchsorted(np.asarray(edges, dtype=float), tokens, side="right")


def workload_buckets(
    reqs: TraceRequests, in_edges: Sequence[int], out_edges: Sequence[int]
) -> list[dict[str, Any]]:
    """The non-empty buckets of a trace: id ``in{i}_out{j}``, rate, mean tokens, the
    observed token ranges and the number of requests."""
    duration = reqs.duration_s
    bi = bucket_index(reqs.input_tokens, in_edges)
    bo = bucket_index(reqs.output_tokens, out_edges)
    out = []
    for i in range(len(in_edges) + 1):
        for j in range(len(out_edges) + 1):
            sel = (bi == i) & (bo == j)
            n = int(sel.sum())
            if not n:
                continue
            xi, xo = reqs.input_tokens[sel], reqs.output_tokens[sel]
            out.append(
                {
                    "id": f"in{i}_out{j}",
                    "rate_rps": n / duration,
                    "input_tokens": float(xi.mean()),
                    "output_tokens": float(xo.mean()),
                    "input_range": [int(xi.min()), int(xi.max())],
                    "output_range": [int(xo.min()), int(xo.max())],
                    "requests": n,
                }
            )
    return out


class CatalogueGpu(GpuType):
    """A GPU type of a catalogue: an instance's ``gpus`` entry plus the longest request
    (prompt + output tokens) one instance can hold (no limit when omitted)."""

    max_context_tokens: Annotated[int, Field(gt=0)] | None = None


class Catalogue(_Strict):
    gpus: Annotated[list[CatalogueGpu], Field(min_length=1)]


def load_catalogue(path: str | Path) -> Catalogue:
    """Read a GPU catalogue ``{"gpus": [{"type", "cost_per_hour", "prefill_tokens_s",
    "decode_tokens_s", "available"?, "max_context_tokens"?, ...}]}``.

    Raises
    ------
    InstanceError
        Naming the file and the field.
    """
    src = str(path)
    try:
        data = json.loads(Path(path).read_text())
    except json.JSONDecodeError as exc:
        raise InstanceError(f"not valid JSON: {exc.msg} (line {exc.lineno})", None, src) from None
    try:
        cat = Catalogue.model_validate(data)
    except ValidationError as exc:
        raise validation_to_instance_error(exc, src) from None
    for i, g in enumerate(cat.gpus):
        for name in ("prefill_tokens_s", "decode_tokens_s"):
            if getattr(g, name) is None:
                raise InstanceError(
                    "a catalogue type needs prefill_tokens_s and decode_tokens_s "
                    "(requests/s per bucket are derived from them)",
                    f"gpus[{i}].{name}",
                    src,
                )
    return cat


def attach_throughputs(buckets: list[dict[str, Any]], catalogue: Catalogue) -> None:
    """Give every bucket ``throughput_rps`` per catalogue type (in place).

    Requests/s of one instance: ``1 / (input_tokens / prefill_tokens_s + output_tokens /
    decode_tokens_s)`` at the bucket's mean sizes (:func:`generate.token_throughput`); a
    type whose ``max_context_tokens`` is below the bucket's longest request
    (``input_range[1] + output_range[1]``) cannot serve it.
    """
    for b in buckets:
        longest = b["input_range"][1] + b["output_range"][1]
        tp = {}
        for g in catalogue.gpus:
            if g.max_context_tokens is not None and longest > g.max_context_tokens:
                continue
            assert g.prefill_tokens_s is not None and g.decode_tokens_s is not None
            tp[g.type] = token_throughput(
                max(b["input_tokens"], 1.0),
                b["output_tokens"],
                g.prefill_tokens_s,
                g.decode_tokens_s,
            )
        b["throughput_rps"] = tp


def azure_to_instance(
    path: str | Path,
    catalogue: Catalogue | None = None,
    buckets: str = DEFAULT_BUCKETS,
    slice_factor: int = 1,
    objective: str | None = None,
) -> dict[str, Any]:
    """A trace as an ``llm_serving`` instance dict (a workload without ``gpus`` and
    ``throughput_rps`` when ``catalogue`` is ``None``).

    Raises
    ------
    InstanceError
        A bad trace line (naming the file and line).
    ValueError
        A bad ``buckets`` specification.
    """
    in_edges, out_edges = parse_buckets(buckets)
    reqs = read_azure_trace(path)
    bs = workload_buckets(reqs, in_edges, out_edges)
    data: dict[str, Any] = {"kind": "llm_serving"}
    if catalogue is not None:
        attach_throughputs(bs, catalogue)
        data["gpus"] = [
            g.model_dump(exclude_none=True, exclude={"max_context_tokens"}) for g in catalogue.gpus
        ]
    data["buckets"] = bs
    data["slice_factor"] = slice_factor
    data["trace"] = {
        "file": reqs.file,
        "requests": len(reqs.t_s),
        "duration_s": reqs.duration_s,
        "start": reqs.start,
    }
    if objective:
        data["objective"] = objective
    return data


@dataclass(frozen=True)
class Period:
    """One period of a trace: its start (s after the first request), length and the
    rate of every bucket in it."""

    start_s: float
    length_s: float
    rates_rps: dict[str, float]


def trace_periods(
    path: str | Path, buckets: str = DEFAULT_BUCKETS, period_s: float = 3600.0
) -> list[Period]:
    """Bucket rates per period ``[k period_s, (k + 1) period_s)`` of a trace.

    The last period ends at the last request (a period shorter than 1% of ``period_s``
    is merged into the one before); rates are requests in the period / its length, so
    ``sum_p sum_b rate * length`` is the number of requests.
    """
    if not period_s > 0:
        raise ValueError(f"period_s must be > 0, got {period_s}")
    in_edges, out_edges = parse_buckets(buckets)
    reqs = read_azure_trace(path)
    t = reqs.t_s - reqs.t_s.min()
    end = float(t.max())
    starts = list(np.arange(0.0, end, period_s)) or [0.0]
    if len(starts) > 1 and end - starts[-1] < 0.01 * period_s:
        starts.pop()
    bounds = [*starts, end]
    ids = np.array(
        [
            f"in{i}_out{j}"
            for i, j in zip(
                bucket_index(reqs.input_tokens, in_edges),
                bucket_index(reqs.output_tokens, out_edges),
                strict=True,
            )
        ]
    )
    out = []
    for k, s in enumerate(starts):
        e = bounds[k + 1]
        last = k == len(starts) - 1
        sel = (t >= s) & ((t <= e) if last else (t < e))
        names, n = np.unique(ids[sel], return_counts=True)
        length = e - s
        out.append(
            Period(
                float(s),
                float(length),
                {str(a): int(c) / length for a, c in zip(names, n, strict=True)},
            )
        )
    return out
