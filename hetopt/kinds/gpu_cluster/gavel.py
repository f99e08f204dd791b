"""Gavel's measured throughput tables (MIT, Stanford Future Data Systems).

The simulation table ships in ``hetopt/data/gavel/`` with its attribution README.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from ...errors import InstanceError

JobKey = tuple[str, int]  # (model, scale_factor)

CONSOLIDATED_TYPES = ("k80", "p100", "v100")


@dataclass(frozen=True)
class ThroughputTable:
    """Solo (and co-located) throughputs per worker type and (model, scale_factor).

    ``solo[(model, sf)][worker_type]`` is steps/s of the whole job; ``pairs[worker_type]
    [(a, b)]`` is ``(steps/s of a, steps/s of b)`` when they share the GPUs.
    """

    solo: Mapping[JobKey, Mapping[str, float]]
    pairs: Mapping[str, Mapping[tuple[JobKey, JobKey], tuple[float, float]]]
    worker_types: tuple[str, ...]

    def models(self, scale_factor: int = 1) -> list[str]:
        return sorted({m for (m, sf) in self.solo if sf == scale_factor})


def _parse_key(key: str, source: str) -> JobKey:
    try:
        model, sf = ast.literal_eval(key)
        return str(model), int(sf)
    except (ValueError, SyntaxError, TypeError):
        raise InstanceError(
            f"bad job key {key!r}, expected \"('<model>', <scale_factor>)\"", None, source
        ) from None


def parse_table(raw: Mapping[str, object], source: str = "<table>") -> ThroughputTable:
    solo: dict[JobKey, dict[str, float]] = {}
    pairs: dict[str, dict[tuple[JobKey, JobKey], tuple[float, float]]] = {}
    types = []
    for wtype, entries in raw.items():
        if not isinstance(entries, dict):
            raise InstanceError("expected an object of job keys", wtype, source)
        types.append(wtype)
        pairs[wtype] = {}
        for key, vals in entries.items():
            jk = _parse_key(key, source)
            if not isinstance(vals, dict) or "null" not in vals:
                raise InstanceError(
                    "expected an object with a 'null' (solo) entry", f"{wtype}.{key}", source
                )
            solo.setdefault(jk, {})[wtype] = float(vals["null"])
            for other, ab in vals.items():
                if other == "null":
                    continue
                ok = _parse_key(other, source)
                pairs[wtype][(jk, ok)] = (float(ab[0]), float(ab[1]))
    return ThroughputTable(solo, pairs, tuple(types))


@cache
def simulation_table() -> ThroughputTable:
    """Gavel's ``simulation_throughputs.json`` (shipped with hetopt)."""
    ref = resources.files("hetopt").joinpath("data/gavel/simulation_throughputs.json")
    return parse_table(json.loads(ref.read_text()), "hetopt/data/gavel/simulation_throughputs.json")


def load_table(path: str | Path | None = None) -> ThroughputTable:
    """Load a Gavel-format throughput table (``None``: the shipped simulation table)."""
    if path is None:
        return simulation_table()
    p = Path(path)
    try:
        raw = json.loads(p.read_text())
    except FileNotFoundError:
        raise InstanceError("no such file", None, str(p)) from None
    except json.JSONDecodeError as exc:
        raise InstanceError(
            f"not valid JSON: {exc.msg} at line {exc.lineno}", None, str(p)
        ) from None
    if not isinstance(raw, dict):
        raise InstanceError("expected an object of worker types", None, str(p))
    return parse_table(raw, str(p))
