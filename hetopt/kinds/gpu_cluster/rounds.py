"""From a time-share allocation to per-round placements (Gavel's round-based mechanism).

A policy answers "what fraction of the time should job ``j`` run on GPU type ``t``"
(``allocation`` table: ``job, worker_type, fraction``). A scheduler has to answer a
different question every round: *which jobs run on which GPUs for the next round*.
:class:`RoundScheduler` does what Gavel's scheduler does (OSDI 2020, section 5):

* rounds of ``round_s`` seconds (360 s by default);
* priority of ``(job, type)`` = allocated fraction / fraction of time received so far on
  that type (never run yet: infinite priority, ties broken by the larger allocation);
* greedy by priority: a job runs on at most one type per round, only where its
  allocation is positive, when the type still has ``scale_factor`` free GPUs;
* placement: a job keeps last round's GPUs when it stays on the same type; other
  multi-GPU jobs are packed on as few servers as possible (``gpus_per_server``), the
  biggest jobs first, each on the fullest server that fits it (best fit).

Over many rounds each job's received time share on each type converges to its
allocation whenever the allocation can be realised by whole-GPU rounds (always for
single-GPU jobs; see ``tests/kinds/gpu_cluster/test_rounds.py``). Gavel's LP ignores that a multi-GPU job
needs all its GPUs at once, so some allocations cannot be realised: e.g. a 4-GPU job
allocated 47% of a 4-GPU type leaves at most 53% of that type to anyone else, whatever
the other jobs were allocated; received shares then stay below such allocations. Co-located pairs (``other_job``) are not
scheduled here: the scheduler refuses such allocations.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...errors import InstanceError

__all__ = ["Round", "RoundScheduler"]


@dataclass(frozen=True)
class Round:
    """One round's placements.

    ``placements`` has one row per GPU used: ``job, worker_type, server, gpu, worker_id``
    (``worker_id`` numbers every GPU of the cluster, type by type).
    """

    index: int
    start_s: float
    round_s: float
    placements: pd.DataFrame

    @property
    def jobs(self) -> list[str]:
        """Jobs that run this round."""
        return list(dict.fromkeys(self.placements["job"]))


class RoundScheduler:
    """Turns an allocation into per-round placements and tracks received time.

    Parameters
    ----------
    workers
        GPUs per type, e.g. ``{"v100": 8, "k80": 8}`` (an instance's ``workers``).
    scale_factors
        GPUs each job needs (``{job: scale_factor}``).
    allocation
        ``job, worker_type, fraction`` records (a ``Result``'s ``allocation`` table, a
        DataFrame or a ``{job: {type: fraction}}`` mapping).
    round_s
        Round length in seconds (Gavel: 360).
    gpus_per_server
        GPUs per server for each type (default: one server holding all of a type's GPUs).
        The last server of a type may be smaller.

    Examples
    --------
    >>> res = hetopt.solve(instance, "max_min_fairness")            # doctest: +SKIP
    >>> rs = RoundScheduler.from_result(instance, res, gpus_per_server={"v100": 4})  # doctest: +SKIP
    >>> rs.next_round().placements                                   # doctest: +SKIP
    """

    def __init__(
        self,
        workers: Mapping[str, int],
        scale_factors: Mapping[str, int],
        allocation: Any,
        round_s: float = 360.0,
        gpus_per_server: Mapping[str, int] | None = None,
    ):
        if not round_s > 0 or not math.isfinite(round_s):
            raise InstanceError("must be a positive number of seconds", "round_s")
        self.round_s = float(round_s)
        self.types = [t for t in workers]
        self.workers = {t: int(n) for t, n in workers.items()}
        gps = dict(gpus_per_server or {})
        for t, g in gps.items():
            if t not in self.workers:
                raise InstanceError(f"unknown worker type {t!r}", f"gpus_per_server.{t}")
            if int(g) < 1:
                raise InstanceError("must be >= 1", f"gpus_per_server.{t}")
        # servers[t] = list of server sizes; worker ids run type by type, server by server
        self.servers: dict[str, list[int]] = {}
        self._first_id: dict[str, int] = {}
        next_id = 0
        for t, n in self.workers.items():
            g = int(gps.get(t, max(n, 1)))
            sizes = [g] * (n // g) + ([n % g] if n % g else [])
            self.servers[t] = sizes
            self._first_id[t] = next_id
            next_id += n
        self.scale = {str(j): int(s) for j, s in scale_factors.items()}
        self.rounds_run = 0
        self.received_s: dict[tuple[str, str], float] = {}
        self._last: dict[str, tuple[str, list[tuple[int, int]]]] = {}
        self.alloc: dict[str, dict[str, float]] = {}
        self.set_allocation(allocation)

    @classmethod
    def from_result(
        cls,
        instance: Any,
        result: Any,
        round_s: float = 360.0,
        gpus_per_server: Mapping[str, int] | None = None,
    ) -> RoundScheduler:
        """Build from a ``gpu_cluster`` instance and a solved :class:`~hetopt.Result`."""
        scale = {j.id: j.scale_factor for j in instance.jobs}
        return cls(instance.workers, scale, result.tables["allocation"], round_s, gpus_per_server)

    # ------------------------------------------------------------------ inputs
    def set_allocation(self, allocation: Any) -> None:
        """Replace the target allocation (e.g. after a re-solve); received time is kept."""
        table: dict[str, dict[str, float]] = {}
        if isinstance(allocation, Mapping):
            for j, row in allocation.items():
                table[str(j)] = {str(t): float(f) for t, f in row.items()}
        else:
            df = pd.DataFrame(allocation)
            if "other_job" in df.columns and (df["other_job"].fillna("").astype(str) != "").any():
                raise InstanceError(
                    "co-located (other_job) allocations are not supported by rounds",
                    "allocation",
                )
            for j, t, f in zip(
                df["job"].astype(str), df["worker_type"].astype(str), df["fraction"], strict=True
            ):
                table.setdefault(j, {})[t] = table.get(j, {}).get(t, 0.0) + float(f)
        for j, row in table.items():
            if j not in self.scale:
                raise InstanceError(f"job {j!r} has no scale factor", "allocation")
            for t, f in row.items():
                if t not in self.workers:
                    raise InstanceError(f"unknown worker type {t!r}", f"allocation.{j}")
                if not (f >= -1e-9 and math.isfinite(f)):
                    raise InstanceError(f"bad fraction {f!r}", f"allocation.{j}.{t}")
        self.alloc = table

    def remove_job(self, job: str) -> None:
        """Forget a finished job."""
        self.alloc.pop(job, None)
        self._last.pop(job, None)

    # ------------------------------------------------------------------ rounds
    def priorities(self) -> dict[tuple[str, str], float]:
        """Allocated fraction / received fraction for every (job, type) with a positive
        allocation (``inf`` when nothing was received yet)."""
        elapsed = self.rounds_run * self.round_s
        out = {}
        for j, row in self.alloc.items():
            for t, f in row.items():
                if f <= 1e-9:
                    continue
                got = self.received_s.get((j, t), 0.0) / elapsed if elapsed > 0 else 0.0
                out[(j, t)] = f / got if got > 0 else math.inf
        return out

    def next_round(self) -> Round:
        """Decide and record the next round: which jobs run on which GPUs."""
        prio = self.priorities()
        order = sorted(
            prio, key=lambda k: (-prio[k], -self.alloc[k[0]][k[1]], k[0], k[1])
        )  # fmt: skip
        free = dict(self.workers)
        chosen: dict[str, str] = {}
        for j, t in order:
            if j in chosen or self.scale[j] > free[t]:
                continue
            chosen[j] = t
            free[t] -= self.scale[j]
        placements = self._place(chosen)
        index = self.rounds_run
        self.rounds_run += 1
        for j, t in chosen.items():
            self.received_s[(j, t)] = self.received_s.get((j, t), 0.0) + self.round_s
        rows = []
        for j, (t, gpus) in placements.items():
            for s, g in gpus:
                wid = self._first_id[t] + sum(self.servers[t][:s]) + g
                rows.append((j, t, s, g, wid))
        df = pd.DataFrame(rows, columns=["job", "worker_type", "server", "gpu", "worker_id"])
        self._last = placements
        return Round(index, index * self.round_s, self.round_s, df)

    def _place(self, chosen: Mapping[str, str]) -> dict[str, tuple[str, list[tuple[int, int]]]]:
        used = {t: [np.zeros(n, dtype=bool) for n in self.servers[t]] for t in self.types}
        out: dict[str, tuple[str, list[tuple[int, int]]]] = {}
        # 1. jobs staying on the same type keep their GPUs (last round had no conflicts)
        for j, t in chosen.items():
            last = self._last.get(j)
            if last is not None and last[0] == t and len(last[1]) == self.scale[j]:
                for s, g in last[1]:
                    used[t][s][g] = True
                out[j] = (t, list(last[1]))
        # 2. the rest, biggest first, packed on as few servers as possible (best fit)
        rest = sorted((j for j in chosen if j not in out), key=lambda j: (-self.scale[j], j))
        for j in rest:
            t = chosen[j]
            need = self.scale[j]
            free = [int((~u).sum()) for u in used[t]]
            fits = [s for s, f in enumerate(free) if f >= need]
            if fits:
                servers = [min(fits, key=lambda s: (free[s], s))]
            else:  # spread: fullest-free servers first, fewest servers
                servers = sorted(range(len(free)), key=lambda s: (-free[s], s))
            gpus: list[tuple[int, int]] = []
            for s in servers:
                for gpu in np.nonzero(~used[t][s])[0].tolist():
                    if len(gpus) == need:
                        break
                    used[t][s][gpu] = True
                    gpus.append((s, gpu))
                if len(gpus) == need:
                    break
            out[j] = (t, gpus)
        return out

    # ------------------------------------------------------------------ reports
    def received_shares(self) -> pd.DataFrame:
        """``job, worker_type, allocated, received`` (fractions of elapsed time)."""
        elapsed = self.rounds_run * self.round_s
        rows = []
        for j, row in self.alloc.items():
            for t, f in row.items():
                got = self.received_s.get((j, t), 0.0) / elapsed if elapsed > 0 else 0.0
                rows.append((j, t, f, got))
        return pd.DataFrame(rows, columns=["job", "worker_type", "allocated", "received"])
