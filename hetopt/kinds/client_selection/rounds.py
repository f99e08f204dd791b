"""Multi-round client selection with availability churn and participation quotas.

Each round, every client is available with probability ``availability`` and its
``ready_s`` / ``upload_s`` are the base values times a ``LogNormal(0, jitter)`` factor
(rounded to 0.1 s), all drawn from one seeded generator. ``group_quota[g]`` asks for at
least that many selections of group ``g`` *in total* over the rounds: each round gets
``group_min[g] = ceil(remaining / rounds left)`` (at most the available members of
``g``, and at least the instance's own ``group_min``). If a round is infeasible with the
driver's quota, it is solved again with only the instance's own constraints and the
round is marked ``quota_relaxed``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ...errors import InstanceError
from ...options import SolveOptions
from ...result import Result
from ...status import Status
from .data import ClientSelectionInstance

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RoundsResult:
    """Per-round and per-client tables of :func:`run_rounds`.

    Attributes
    ----------
    rounds
        One row per round: ``round, status, objective_value, method, available,
        selected, quota_relaxed, runtime_s``.
    selections
        One row per (round, client): ``round, client, group, available, selected,
        ready_s, upload_s, upload_start_s, finish_s``.
    participation
        One row per client: ``client, group, rounds_available, times_selected``.
    results
        The :class:`~hetopt.Result` of every round (``None`` for a round without clients).
    """

    rounds: pd.DataFrame
    selections: pd.DataFrame
    participation: pd.DataFrame
    results: list[Result | None] = field(default_factory=list)


def run_rounds(
    instance: ClientSelectionInstance,
    num_rounds: int,
    *,
    seed: int = 0,
    availability: float = 1.0,
    jitter: float = 0.0,
    group_quota: Mapping[str, int] | None = None,
    objective: str | None = None,
    options: SolveOptions | None = None,
    method: str = "auto",
) -> RoundsResult:
    """Select clients over ``num_rounds`` rounds (see the module docstring).

    Parameters
    ----------
    instance
        The base round (clients, deadline, uplink, side constraints).
    num_rounds
        Number of rounds (>= 1).
    seed
        Seed of the availability / jitter generator.
    availability
        Probability that a client is available in a round, in ``(0, 1]``.
    jitter
        Sigma of the lognormal factor on ``ready_s`` and ``upload_s`` (0: unchanged).
    group_quota
        Minimum total selections per group over all rounds.
    objective, options, method
        How each round is solved (through :func:`hetopt.pipeline.solve`, without the
        greedy baseline).

    Returns
    -------
    RoundsResult
    """
    from . import KIND

    if num_rounds < 1:
        raise InstanceError("must be at least 1", "num_rounds")
    if not 0 < availability <= 1:
        raise InstanceError("must be in (0, 1]", "availability")
    if jitter < 0:
        raise InstanceError("must be >= 0", "jitter")
    arr = instance.arrays
    quota = dict(group_quota or {})
    for g, q in quota.items():
        if g not in arr.groups:
            raise InstanceError(f"no client is in group {g!r}", f"group_quota.{g}")
        if not isinstance(q, int) or q < 0:
            raise InstanceError("must be a whole number >= 0", f"group_quota.{g}")
    params = KIND.parse_params({"method": method, "baseline": False})
    rng = np.random.default_rng(seed)
    base = instance.to_dict()
    own_min = dict(instance.group_min or {})
    done = dict.fromkeys(quota, 0)
    ids = arr.ids
    groups = np.array([*arr.groups, None], dtype=object)[arr.group]
    times_sel = np.zeros(arr.n, dtype=np.int64)
    times_av = np.zeros(arr.n, dtype=np.int64)
    round_rows: list[dict[str, Any]] = []
    frames: list[pd.DataFrame] = []
    results: list[Result | None] = []
    for rnd in range(num_rounds):
        avail = rng.random(arr.n) < availability
        f_ready = np.exp(rng.normal(0.0, jitter, arr.n)) if jitter > 0 else np.ones(arr.n)
        f_up = np.exp(rng.normal(0.0, jitter, arr.n)) if jitter > 0 else np.ones(arr.n)
        ready = np.round(arr.ready * f_ready, 1)
        upload = np.maximum(np.round(arr.upload * f_up, 1), 0.1 if jitter > 0 else 0.0)
        if jitter == 0:
            ready, upload = arr.ready.copy(), arr.upload.copy()
        times_av += avail
        left = num_rounds - rnd
        gmin = dict(own_min)
        for g, q in quota.items():
            members = int(np.sum(avail & (groups == g)))
            want = min(math.ceil(max(q - done[g], 0) / left), members)
            if want > gmin.get(g, 0):
                gmin[g] = want
        sel = np.zeros(arr.n, dtype=bool)
        start = np.full(arr.n, np.nan)
        finish = np.full(arr.n, np.nan)
        res: Result | None = None
        relaxed = False
        if avail.any():
            data = _round_data(base, avail, ready, upload, ids, groups, gmin)
            inst = ClientSelectionInstance.from_dict(data)
            res = _solve_round(inst, objective, options, params)
            if not res.status.has_solution and gmin != own_min:
                relaxed = True
                log.info("round %d infeasible with the participation quota; relaxing it", rnd)
                data = _round_data(base, avail, ready, upload, ids, groups, own_min)
                inst = ClientSelectionInstance.from_dict(data)
                res = _solve_round(inst, objective, options, params)
            if res.status.has_solution:
                t = res.tables["selection"]
                pos = np.flatnonzero(avail)
                sel[pos] = t["selected"].to_numpy(dtype=bool)
                if "upload_start_s" in t.columns:  # not for min_duration
                    start[pos] = t["upload_start_s"].to_numpy(dtype=float)
                    finish[pos] = t["finish_s"].to_numpy(dtype=float)
        times_sel += sel
        for g in quota:
            done[g] += int(np.sum(sel & (groups == g)))
        results.append(res)
        round_rows.append(
            {
                "round": rnd,
                "status": res.status.value if res else Status.OPTIMAL.value,
                "objective_value": res.objective_value if res else 0.0,
                "method": res.info.get("method") if res else "none",
                "available": int(avail.sum()),
                "selected": int(sel.sum()),
                "quota_relaxed": relaxed,
                "runtime_s": res.runtime_s if res else 0.0,
            }
        )
        frames.append(
            pd.DataFrame(
                {
                    "round": rnd,
                    "client": ids,
                    "group": groups,
                    "available": avail,
                    "selected": sel,
                    "ready_s": ready,
                    "upload_s": upload,
                    "upload_start_s": start,
                    "finish_s": finish,
                }
            )
        )
    participation = pd.DataFrame(
        {"client": ids, "group": groups, "rounds_available": times_av, "times_selected": times_sel}
    )
    return RoundsResult(
        pd.DataFrame(round_rows), pd.concat(frames, ignore_index=True), participation, results
    )


def _solve_round(
    inst: ClientSelectionInstance,
    objective: str | None,
    options: SolveOptions | None,
    params: Any,
) -> Result:
    """One round's verified :class:`Result`, from :func:`hetopt.pipeline.solve`."""
    from ... import pipeline
    from . import KIND

    return pipeline.solve(KIND, inst, KIND.resolve_objective(inst, objective), options, params)


def _round_data(
    base: dict[str, Any],
    avail: np.ndarray,
    ready: np.ndarray,
    upload: np.ndarray,
    ids: list[str],
    groups: np.ndarray,
    gmin: Mapping[str, int],
) -> dict[str, Any]:
    clients = []
    for i in np.flatnonzero(avail).tolist():
        c = dict(base["clients"][i])
        c["ready_s"] = float(ready[i])
        c["upload_s"] = float(upload[i])
        clients.append(c)
    present = {ids[i] for i in np.flatnonzero(avail).tolist()}
    present_groups = {groups[i] for i in np.flatnonzero(avail).tolist()}
    data = {k: v for k, v in base.items() if k not in ("clients", "group_min", "group_max")}
    data["clients"] = clients
    data["must_include"] = [c for c in base.get("must_include", []) if c in present]
    data["exclude"] = [c for c in base.get("exclude", []) if c in present]
    q = {g: v for g, v in gmin.items() if g in present_groups and v > 0}
    if q:
        data["group_min"] = q
    gmax = {g: v for g, v in (base.get("group_max") or {}).items() if g in present_groups}
    if gmax:
        data["group_max"] = gmax
    return data
