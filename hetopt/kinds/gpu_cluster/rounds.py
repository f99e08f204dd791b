"""From a time-share allocation to per-round placements (the round-based mechanism).

A policy answers "what fraction of the time should job ``j`` run on GPU type ``t``"
(``allocation`` table: ``job, worker_type, fraction``). A scheduler has to answer a
different question every round: *which jobs run on which GPUs for the next round*.
:class:`RoundScheduler` answers it with one of two mechanisms.

``mechanism="gavel"`` is Gavel's (Narayanan et al., OSDI 2020, section 5; read from
``scheduler/scheduler.py`` of stanford-futuredata/gavel, commit ``c4fa400``), rule by rule:

* **per-type queues**: every type has a queue holding *every* job; types are filled in the
  order v100, p100, k80 (``type_order``; shuffled every round, seeded, for the
  heterogeneity-agnostic policies: ``shuffle_types``);
* **priority** of ``(job, type)`` = allocation / fraction, where fraction is the job's
  time on that type since the last *allocation reset* over all jobs' time on it (every
  job starts a window with half a round of credit); no allocation, or no throughput on
  the type: priority 0 (those jobs come last: back-fill). Ties: the deficit (time the job
  should have received minus what it got, summed over past windows), then the allocation,
  then arrival order;
* greedy over the queues: a job runs on at most one type per round, when its type still
  has ``scale_factor`` free GPUs; a job that arrived after the last allocation was
  computed takes its GPUs in the queue but is not placed (they stay idle for the round);
* **reset**: the allocation is recomputed, and the windows reset, only when jobs arrived or
  left *and* at least ``reset_interval_s`` (1,920 s) passed since the last reset
  (:meth:`RoundScheduler.due`);
* **placement**: per type, biggest jobs first; a job keeps last round's GPUs when it stays
  on that type and none of them is taken yet; the others take the next free GPUs server
  by server (a job may span servers).

``mechanism="hetopt"`` (the default) keeps the same inputs but is *work-conserving* and
keeps each job's history across re-solves:

* every (job, type) with a positive allocation accrues an entitlement ``fraction * dt``
  while the job is present; time run on the type is charged against it (never more than
  one round ahead); pairs are served by the largest outstanding entitlement (*deficit*)
  first, whatever the type;
* then every idle GPU is back-filled with a runnable job, types fastest first, the job
  that has run least first (back-fill is not charged);
* :meth:`RoundScheduler.backfill` fills GPUs freed inside a round (a finished job) and
  starts arriving jobs on idle GPUs at once;
* placement: a job keeps last round's GPUs when it stays on the same type; other
  multi-GPU jobs are packed on as few servers as possible (best fit, biggest first);
* allocations may pair two jobs on the same GPUs (space sharing, ``other_job``).

Over many rounds each job's received time share on each type converges to its
allocation whenever the allocation can be realised by whole-GPU rounds and uses the
cluster's capacity (always for single-GPU jobs; see ``tests/kinds/gpu_cluster/test_rounds.py``); with
idle capacity the ``hetopt`` mechanism gives jobs more (back-fill). Gavel's LP ignores that
a multi-GPU job needs all its GPUs at once, so some allocations cannot be realised: e.g. a
4-GPU job allocated 47% of a 4-GPU type leaves at most 53% of that type to anyone else.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...errors import InstanceError
from ...scalars import real_number, whole_number

__all__ = ["GAVEL_TYPE_ORDER", "MECHANISMS", "Plan", "Round", "RoundScheduler", "Unit"]

MECHANISMS = ("hetopt", "gavel")
GAVEL_TYPE_ORDER = ("v100", "p100", "k80")
"""The order in which Gavel fills its per-type queues (fastest first)."""
RESET_INTERVAL_S = 1920.0
"""Gavel's ``minimum_time_between_allocation_resets``."""
_EPS = 1e-9

Unit = str | tuple[str, str]
"""What a round places: a job id, or two job ids sharing the same GPUs."""
Gpus = tuple[tuple[int, int], ...]
"""``(server, gpu)`` pairs (indices within one type)."""


@dataclass(frozen=True)
class Round:
    """One round's placements.

    ``placements`` has one row per GPU used: ``job, worker_type, server, gpu, worker_id``
    (``worker_id`` numbers every GPU of the cluster, type by type; two jobs sharing GPUs
    give two rows per GPU).
    """

    index: int
    start_s: float
    round_s: float
    placements: pd.DataFrame

    @property
    def jobs(self) -> list[str]:
        """Jobs that run this round."""
        return list(dict.fromkeys(self.placements["job"]))


@dataclass(frozen=True)
class Plan:
    """One decision in its light form (what a simulator reads).

    ``placements`` maps each unit placed to its type and GPUs; ``idle_reserved`` lists
    units the ``gavel`` mechanism chose but could not place (they arrived after the
    allocation was computed: their GPUs stay idle); ``backfill`` the units placed
    without an allocation on their type.
    """

    start_s: float
    placements: dict[Unit, tuple[str, Gpus]]
    idle_reserved: tuple[tuple[Unit, str], ...] = ()
    backfill: frozenset[Unit] = frozenset()


def _members(unit: Unit) -> tuple[str, ...]:
    return unit if isinstance(unit, tuple) else (unit,)


_NUMBERS = (int, float, np.integer, np.floating)
"""The number types the scheduler's counts and rates take (numpy's as Python's)."""


def _whole(value: Any, field: str, minimum: int) -> int:
    """``value`` as a count (an int, a numpy integer or a float with no fraction, as an
    instance's counts take them), refused with an :class:`InstanceError` naming
    ``field`` otherwise: ``int()`` would have cut 2.5 to 2 and taken ``True`` for 1."""
    n = whole_number(value) if isinstance(value, _NUMBERS) else None
    if n is None:
        raise InstanceError(f"expected a whole number >= {minimum}, got {value!r}", field)
    if n < minimum:
        raise InstanceError(f"must be >= {minimum}, got {n}", field)
    return n


def _rate(value: Any, field: str) -> float:
    """``value`` as a throughput: a finite number >= 0 (an :class:`InstanceError` naming
    ``field`` otherwise)."""
    x = real_number(value) if isinstance(value, _NUMBERS) else None
    rate = math.nan if x is None else float(x)
    if not (math.isfinite(rate) and rate >= 0):
        raise InstanceError(f"expected a finite number of steps/s >= 0, got {value!r}", field)
    return rate


class RoundScheduler:
    """Turns an allocation into per-round placements and tracks received time.

    Parameters
    ----------
    workers
        GPUs per type, e.g. ``{"v100": 8, "k80": 8}`` (an instance's ``workers``).
    scale_factors
        GPUs each job needs (``{job: scale_factor}``); more jobs join with :meth:`add_job`.
    allocation
        ``job, worker_type, fraction`` records (a ``Result``'s ``allocation`` table, a
        DataFrame or a ``{job: {type: fraction}}`` mapping; pairs sharing GPUs as
        ``{(job, other): {type: fraction}}`` or rows with ``other_job``).
    round_s
        Round length in seconds (Gavel: 360).
    gpus_per_server
        GPUs per server for each type (default: one server holding all of a type's GPUs).
        The last server of a type may be smaller.
    throughputs
        ``{job: {type: steps/s}}``: a job runs only on types where it is positive
        (default: every type with at least ``scale_factor`` GPUs).
    mechanism
        ``"hetopt"`` (work-conserving, the default) or ``"gavel"`` (Gavel's rules exactly);
        see the module docstring.
    reset_interval_s
        Least time between two allocation resets (:meth:`due`); default 1,920 s for
        ``gavel``, 0 (every change) for ``hetopt``.
    type_order
        Order in which types' queues are filled (default v100, p100, k80, then the others).
    shuffle_types
        Shuffle ``type_order`` before every decision (Gavel's agnostic policies), with a
        ``random.Random(seed + 5)`` (the way Gavel seeds its shuffler from its ``seed``).

    Examples
    --------
    >>> res = hetopt.solve(instance, "max_min_fairness")            # doctest: +SKIP
    >>> rs = RoundScheduler.from_result(instance, res, gpus_per_server={"v100": 4})  # doctest: +SKIP
    >>> rs.next_round().placements                                   # doctest: +SKIP
    """

    def __init__(
        self,
        workers: Mapping[str, int],
        scale_factors: Mapping[str, int] | None = None,
        allocation: Any = None,
        round_s: float = 360.0,
        gpus_per_server: Mapping[str, int] | None = None,
        *,
        throughputs: Mapping[str, Mapping[str, float]] | None = None,
        mechanism: str = "hetopt",
        reset_interval_s: float | None = None,
        type_order: Sequence[str] | None = None,
        shuffle_types: bool = False,
        seed: int = 0,
    ):
        if mechanism not in MECHANISMS:
            raise InstanceError(
                f"unknown mechanism {mechanism!r}; expected one of: {', '.join(MECHANISMS)}",
                "mechanism",
            )
        if not round_s > 0 or not math.isfinite(round_s):
            raise InstanceError("must be a positive number of seconds", "round_s")
        if reset_interval_s is None:
            reset_interval_s = RESET_INTERVAL_S if mechanism == "gavel" else 0.0
        if not reset_interval_s >= 0 or not math.isfinite(reset_interval_s):
            raise InstanceError("must be a number of seconds >= 0", "reset_interval_s")
        self.mechanism = mechanism
        self.round_s = float(round_s)
        self.reset_interval_s = float(reset_interval_s)
        self.shuffle_types = bool(shuffle_types)
        self._rng = random.Random(seed + 5)
        self._type_order_arg = list(type_order) if type_order is not None else None
        self._gps = dict(gpus_per_server or {})
        self._set_cluster(workers, self._gps)
        # jobs, in arrival order (ties of the gavel queues)
        self.scale: dict[str, int] = {}
        self._thr: dict[str, dict[str, float]] = {}
        self._can: dict[str, frozenset[str]] = {}
        self._added_s: dict[str, float] = {}
        self.alloc: dict[Unit, dict[str, float]] = {}
        self.received_s: dict[tuple[Unit, str], float] = {}
        self._ran: dict[str, float] = {}
        """Total time each job ran (any type, alone or shared)."""
        self._rank_cache: dict[str, int] | None = None
        self.rounds_run = 0
        self.now = 0.0
        self.pending = True
        """Jobs arrived or left (or the cluster changed) since the last allocation."""
        # gavel's window since the last reset
        self._job_time: dict[Unit, dict[str, float]] = {}
        self._worker_time: dict[str, float] = {t: 0.0 for t in self.types}
        self._deficit: dict[tuple[Unit, str], float] = {}
        self.last_reset_s = 0.0
        # hetopt's outstanding entitlements
        self._debt: dict[tuple[Unit, str], float] = {}
        self._clock = 0.0
        # placements: last decision (kept GPUs) and what runs now (mid-round back-fill)
        self._last: dict[Unit, tuple[str, Gpus]] = {}
        self._running: dict[Unit, tuple[str, Gpus]] = {}
        self._charge: dict[Unit, str] = {}
        """hetopt: units moved to a faster type this round, and the type they are
        charged on."""
        for j, s in (scale_factors or {}).items():
            self.add_job(str(j), s, (throughputs or {}).get(j), now=0.0)
        if allocation is not None:
            self.set_allocation(allocation, now=0.0)

    # ------------------------------------------------------------------ cluster
    def _set_cluster(self, workers: Mapping[str, int], gps: Mapping[str, int]) -> None:
        # (every value checked before any is kept: a refused change leaves the cluster)
        counts = {str(t): _whole(n, f"workers.{t}", 0) for t, n in workers.items()}
        for t, g in gps.items():
            if t not in counts:
                raise InstanceError(f"unknown worker type {t!r}", f"gpus_per_server.{t}")
            _whole(g, f"gpus_per_server.{t}", 1)
        self.workers = counts
        self.types = [t for t in self.workers]
        # servers[t] = list of server sizes; worker ids run type by type, server by server
        self.servers: dict[str, list[int]] = {}
        self._first_id: dict[str, int] = {}
        self._server_start: dict[str, list[int]] = {}
        next_id = 0
        for t, n in self.workers.items():
            g = int(gps.get(t, max(n, 1)))
            sizes = [g] * (n // g) + ([n % g] if n % g else [])
            self.servers[t] = sizes
            self._first_id[t] = next_id
            self._server_start[t] = [int(v) for v in np.cumsum([0, *sizes[:-1]])] if sizes else []
            next_id += n
        known = [t for t in GAVEL_TYPE_ORDER if t in self.workers]
        base = self._type_order_arg or [*known, *(t for t in self.types if t not in known)]
        self.type_order = [t for t in base if t in self.workers and self.workers[t] > 0]

    def update_workers(
        self, workers: Mapping[str, int], gpus_per_server: Mapping[str, int] | None = None
    ) -> None:
        """Change the cluster (a node failed or joined): GPU counts per type (types not
        named keep theirs) and optionally their server sizes. Received time, deficits and
        the allocation are kept; placements on a type whose servers changed are dropped."""
        new = dict(self.workers)
        for t, n in workers.items():
            if t not in new:
                raise InstanceError(
                    f"unknown worker type {t!r}; the cluster has: {', '.join(new)}", f"workers.{t}"
                )
            new[t] = _whole(n, f"workers.{t}", 0)
        gps = {**self._gps, **dict(gpus_per_server or {})}
        old = dict(self.servers)
        self._set_cluster(new, gps)
        self._gps = gps
        for u, (t, _) in list(self._last.items()):
            if old.get(t) != self.servers[t]:
                del self._last[u]
        self._running = {
            u: p for u, p in self._running.items() if old.get(p[0]) == self.servers[p[0]]
        }
        for j in self.scale:
            self._can[j] = self._runnable(j)
        self.pending = True

    # ------------------------------------------------------------------ jobs
    def _runnable(self, job: str) -> frozenset[str]:
        thr = self._thr.get(job)
        sf = self.scale[job]
        return frozenset(
            t
            for t in self.types
            if self.workers[t] >= sf and (thr is None or float(thr.get(t, 0.0)) > 0)
        )

    def add_job(
        self,
        job: str,
        scale_factor: int,
        throughputs: Mapping[str, float] | None = None,
        now: float | None = None,
    ) -> None:
        """A job joins (it waits for the next allocation; :meth:`due` becomes true).

        ``throughputs`` (steps/s per type) limits it to the types where it is positive."""
        job = str(job)
        if job in self.scale:
            raise InstanceError(f"job {job!r} is already present", "add_job")
        scale = _whole(scale_factor, f"scale_factors.{job}", 1)
        thr = None
        if throughputs is not None:
            thr = {str(t): _rate(v, f"throughputs.{job}.{t}") for t, v in throughputs.items()}
        self.scale[job] = scale
        if thr is not None:
            self._thr[job] = thr
        self._can[job] = self._runnable(job)
        self._added_s[job] = self.now if now is None else float(now)
        self._job_time[job] = {t: self.round_s / 2.0 for t in self.types}
        self._rank_cache = None
        self.pending = True

    def remove_job(self, job: str) -> None:
        """Forget a job (finished or cancelled), and every pair it belongs to."""
        job = str(job)
        if job not in self.scale:
            return
        del self.scale[job], self._can[job], self._added_s[job]
        self._thr.pop(job, None)
        self._ran.pop(job, None)
        self._rank_cache = None
        for units in (self.alloc, self._job_time, self._last, self._running):
            for u in [u for u in units if job in _members(u)]:
                del units[u]  # type: ignore[attr-defined]
        for history in (self.received_s, self._deficit, self._debt):
            for key in [k for k in history if job in _members(k[0])]:
                del history[key]
        self.pending = True

    @property
    def jobs(self) -> list[str]:
        """Present jobs, in arrival order."""
        return list(self.scale)

    # ------------------------------------------------------------------ allocation
    def due(self, now: float) -> bool:
        """Whether the allocation should be recomputed at ``now``: jobs arrived or left
        since the last one, and (``gavel``) ``reset_interval_s`` passed since the last
        reset or no reset happened after time 0 yet."""
        if not self.pending:
            return False
        if self.mechanism == "gavel":
            return now - self.last_reset_s >= self.reset_interval_s or self.last_reset_s == 0
        return now - self.last_reset_s >= self.reset_interval_s

    def force_reset(self) -> None:
        """Let the next :meth:`due` pass at once (Gavel does this when its trace is
        exhausted and nothing runs)."""
        self.last_reset_s = 0.0

    def _parse(self, allocation: Any) -> dict[Unit, dict[str, float]]:
        table: dict[Unit, dict[str, float]] = {}
        if isinstance(allocation, Mapping):
            for j, row in allocation.items():
                u: Unit = (str(j[0]), str(j[1])) if isinstance(j, tuple) else str(j)
                table[u] = {str(t): float(f) for t, f in row.items()}
        else:
            df = pd.DataFrame(allocation)
            other = (
                df["other_job"].fillna("").astype(str)
                if "other_job" in df.columns
                else pd.Series([""] * len(df), index=df.index)
            )
            for j, t, f, o in zip(
                df["job"].astype(str), df["worker_type"].astype(str), df["fraction"], other,
                strict=True,
            ):  # fmt: skip
                if o:
                    if j > o:  # each pair appears twice (once from each job): keep one
                        continue
                    u = (j, o)
                else:
                    u = j
                row = table.setdefault(u, {})
                row[t] = row.get(t, 0.0) + float(f)
        for u, row in table.items():
            for j in _members(u):
                if j not in self.scale:
                    raise InstanceError(f"job {j!r} has no scale factor", "allocation")
            if isinstance(u, tuple):
                if self.mechanism == "gavel":
                    raise InstanceError(
                        "co-located (other_job) allocations need mechanism 'hetopt'",
                        "allocation",
                    )
                if self.scale[u[0]] != self.scale[u[1]]:
                    raise InstanceError(
                        f"jobs {u[0]!r} and {u[1]!r} share GPUs but need different numbers",
                        "allocation",
                    )
            for t, f in row.items():
                if t not in self.workers:
                    raise InstanceError(f"unknown worker type {t!r}", f"allocation.{u}")
                if not (f >= -1e-9 and math.isfinite(f)):
                    raise InstanceError(f"bad fraction {f!r}", f"allocation.{u}.{t}")
        return table

    def set_allocation(self, allocation: Any, now: float | None = None) -> None:
        """Replace the target allocation (after a re-solve); received time is kept.

        ``gavel``: first resets the windows (each job's deficit grows by what it should
        have received under the old allocation minus what it got); ``hetopt``: the
        entitlements accrued so far are kept."""
        table = self._parse(allocation)
        now = self.now if now is None else float(now)
        if self.mechanism == "gavel":
            self._reset(now)
        else:
            self._accrue(now)
            self.last_reset_s = now
        self.alloc = table
        for u in table:
            if isinstance(u, tuple) and u not in self._job_time:
                self._job_time[u] = {t: self.round_s / 2.0 for t in self.types}
        self.pending = False

    def _reset(self, now: float) -> None:
        """Gavel's reset of the time-run-so-far windows."""
        elapsed = now - self.last_reset_s
        for t in self.types:
            self._worker_time[t] = 0.0
            for u, times in self._job_time.items():
                got = times.get(t, self.round_s / 2.0) - self.round_s / 2.0
                row = self.alloc.get(u)
                should = row.get(t, 0.0) * elapsed if row is not None else 0.0
                self._deficit[(u, t)] = self._deficit.get((u, t), 0.0) + should - got
                times[t] = self.round_s / 2.0
                self._worker_time[t] += times[t]
        self.last_reset_s = now

    def _accrue(self, now: float) -> None:
        """hetopt: every allocated pair's entitlement grows with the time passed."""
        dt = now - self._clock
        if dt > 0:
            for u, row in self.alloc.items():
                for t, f in row.items():
                    if f > _EPS:
                        key = (u, t)
                        self._debt[key] = self._debt.get(key, 0.0) + f * dt
        self._clock = max(self._clock, now)

    # ------------------------------------------------------------------ received time
    def record(self, unit: Unit, worker_type: str, seconds: float) -> None:
        """Credit ``seconds`` of run time of ``unit`` on ``worker_type`` (what a lease
        actually ran: a job finishing inside a round ran less than a round)."""
        u: Unit = unit if isinstance(unit, tuple) else str(unit)
        key = (u, worker_type)
        self.received_s[key] = self.received_s.get(key, 0.0) + seconds
        for j in _members(u):
            self._ran[j] = self._ran.get(j, 0.0) + seconds
        times = self._job_time.get(u)
        if times is not None:  # the type's total counts jobs still present (Gavel's)
            times[worker_type] = times.get(worker_type, 0.0) + seconds
            self._worker_time[worker_type] = self._worker_time.get(worker_type, 0.0) + seconds
        if self.mechanism == "hetopt":
            charged = self._charge.get(u, worker_type)
            f = self.alloc.get(u, {}).get(charged, 0.0)
            if f > _EPS:  # back-fill is not charged
                ck = (u, charged)
                self._debt[ck] = max(self._debt.get(ck, 0.0) - seconds, -self.round_s)

    # ------------------------------------------------------------------ priorities
    def priorities(self, now: float | None = None) -> dict[tuple[Unit, str], float]:
        """The priority of every (unit, type) with a positive allocation.

        ``gavel``: allocation / fraction of the type's time since the last reset
        (``allocation * 1e9`` before any time was recorded); ``hetopt``: the outstanding
        entitlement in seconds."""
        out: dict[tuple[Unit, str], float] = {}
        if self.mechanism == "hetopt":
            self._accrue(self.now if now is None else float(now))
        for u, row in self.alloc.items():
            for t, f in row.items():
                if f <= _EPS:
                    continue
                if self.mechanism == "gavel":
                    out[(u, t)] = self._gavel_priority(u, t, f)
                else:
                    out[(u, t)] = self._debt.get((u, t), 0.0)
        return out

    def _gavel_priority(self, u: Unit, t: str, f: float) -> float:
        if f == 0.0 or t not in self._can.get(u if isinstance(u, str) else u[0], frozenset()):
            return 0.0
        wt = self._worker_time.get(t, 0.0)
        jt = self._job_time.get(u, {}).get(t)
        fraction = 0.0 if wt == 0.0 or jt is None else jt / wt
        return f / fraction if fraction > 0.0 else f * 1e9

    def _order(self) -> list[str]:
        order = list(self.type_order)
        if self.shuffle_types:
            self._rng.shuffle(order)
        return order

    def _queue_gavel(self, types: Sequence[str]) -> list[tuple[Unit, str]]:
        out: list[tuple[Unit, str]] = []
        for t in types:
            entries = []
            for j in self.scale:  # arrival order: ties keep it (a stable sort)
                row = self.alloc.get(j)
                f = row.get(t, 0.0) if row is not None else 0.0
                prio = self._gavel_priority(j, t, f) if row is not None else 0.0
                entries.append((prio, self._deficit.get((j, t), 0.0), f, j))
            entries.sort(key=lambda e: (e[0], e[1], e[2]), reverse=True)
            out.extend((e[3], t) for e in entries)
        return out

    def _queue_hetopt(
        self, types: Sequence[str], now: float
    ) -> tuple[list[tuple[Unit, str]], list[tuple[Unit, str]]]:
        """hetopt's two queues: allocated (unit, type) pairs, largest outstanding
        entitlement first (any type); then back-fill, types fastest first, the job that
        has run least first."""
        self._accrue(now)
        rank = self._rank()
        debt = self._debt
        allocated = []
        for u, row in self.alloc.items():
            first = u[0] if isinstance(u, tuple) else u
            for t, f in row.items():
                if f > _EPS:
                    allocated.append((-debt.get((u, t), 0.0), -f, rank.get(first, 0), u, t))
        allocated.sort(key=lambda e: (e[0], e[1], e[2]))
        ran = self._ran
        by_service = sorted(self.scale, key=lambda j: (ran.get(j, 0.0), rank[j]))
        fill: list[tuple[Unit, str]] = [(j, t) for t in types for j in by_service]
        return [(e[3], e[4]) for e in allocated], fill

    def _faster(self, job: str, a: str, b: str) -> bool:
        """Whether ``job`` runs faster on type ``a`` than on ``b``."""
        thr = self._thr.get(job)
        if thr is None:  # unknown: never moved
            return False
        return float(thr.get(a, 0.0)) > float(thr.get(b, 0.0))

    def _upgrade(
        self, chosen: list[tuple[Unit, str]], free: dict[str, int], types: Sequence[str]
    ) -> list[tuple[Unit, str]]:
        """Move chosen jobs onto idle GPUs of a type where they run faster (slowest
        first): an allocation that put a job on a slow type while a fast one idles."""
        pos = {t: k for k, t in enumerate(types)}
        order = sorted(range(len(chosen)), key=lambda k: -pos.get(chosen[k][1], 0))
        out = list(chosen)
        for k in order:
            u, t = out[k]
            if isinstance(u, tuple):
                continue
            sf = self.scale[u]
            best = None
            for f in types:
                fits = free.get(f, 0) >= sf and f in self._can[u] and self._faster(u, f, t)
                if fits and (best is None or self._faster(u, f, best)):
                    best = f
            if best is not None:
                free[best] -= sf
                free[t] += sf
                out[k] = (u, best)
                self._charge[u] = t
        return out

    def _rank(self) -> dict[str, int]:
        if self._rank_cache is None:
            self._rank_cache = {j: k for k, j in enumerate(self.scale)}
        return self._rank_cache

    # ------------------------------------------------------------------ decisions
    def _choose(
        self,
        queue: Iterable[tuple[Unit, str]],
        free: dict[str, int],
        taken: set[str],
    ) -> tuple[list[tuple[Unit, str]], list[tuple[Unit, str]]]:
        """Greedy over the queue: (placed units, gavel's reserved-but-unplaced units)."""
        chosen: list[tuple[Unit, str]] = []
        idle: list[tuple[Unit, str]] = []
        left = sum(free.values())
        scale, can = self.scale, self._can
        for u, t in queue:
            if left == 0:
                break
            room = free.get(t, 0)
            if room == 0:
                continue
            if isinstance(u, str):
                if u in taken or u not in can or t not in can[u]:
                    continue
                members: tuple[str, ...] = (u,)
            else:
                members = u
                if any(j in taken or j not in can or t not in can[j] for j in members):
                    continue
            sf = scale[members[0]]
            if sf > room:
                continue
            free[t] -= sf
            left -= sf
            taken.update(members)
            if self.mechanism == "gavel" and u not in self.alloc:
                idle.append((u, t))
            else:
                chosen.append((u, t))
        return chosen, idle

    def plan(self, now: float | None = None) -> Plan:
        """Decide the next round at ``now`` (every GPU free): which units run where.

        Does not record received time: call :meth:`record` with what each lease ran."""
        now = self.now if now is None else float(now)
        self.now = max(self.now, now)
        types = self._order()
        free = {t: self.workers[t] for t in self.types}
        self._charge = {}
        if self.mechanism == "gavel":
            chosen, idle = self._choose(self._queue_gavel(types), free, set())
        else:
            allocated, fill = self._queue_hetopt(types, now)
            taken: set[str] = set()
            chosen, idle = self._choose(allocated, free, taken)
            chosen = self._upgrade(chosen, free, types)
            more, _ = self._choose(fill, free, taken)
            chosen.extend(more)
        if self.mechanism == "gavel":
            placements = self._place_gavel(chosen, types)
        else:
            placements = self._place_best_fit(chosen, {})
        self._last = dict(placements)
        self._running = dict(placements)
        return Plan(now, placements, tuple(idle), self._backfilled(placements))

    def _backfilled(self, placements: Mapping[Unit, tuple[str, Gpus]]) -> frozenset[Unit]:
        return frozenset(
            u for u, (t, _) in placements.items() if self.alloc.get(u, {}).get(t, 0.0) <= _EPS
        )

    def release(self, unit: Unit) -> None:
        """``unit``'s GPUs are free again (it finished inside the round)."""
        u: Unit = unit if isinstance(unit, tuple) else str(unit)
        self._running.pop(u, None)

    def backfill(self, now: float) -> Plan:
        """Place waiting jobs on the GPUs free right now (``hetopt``: after a job
        finished inside the round, or when a job arrives on an idle GPU). The new
        placements last until the end of the round."""
        if self.mechanism != "hetopt":
            return Plan(float(now), {})
        used: dict[str, list[np.ndarray]] = {
            t: [np.zeros(n, dtype=bool) for n in self.servers[t]] for t in self.types
        }
        taken: set[str] = set()
        for u, (t, gpus) in self._running.items():
            taken.update(_members(u))
            for s, g in gpus:
                used[t][s][g] = True
        free = {t: int(sum(int((~m).sum()) for m in used[t])) for t in self.types}
        if not any(free.values()):
            return Plan(float(now), {})
        allocated, fill = self._queue_hetopt(self._order(), float(now))
        chosen, _ = self._choose([*allocated, *fill], free, taken)
        placements = self._place_best_fit(chosen, used)
        self._running.update(placements)
        self._last.update(placements)
        return Plan(float(now), placements, (), self._backfilled(placements))

    @property
    def running(self) -> dict[Unit, tuple[str, Gpus]]:
        """Units holding GPUs now, with their type and ``(server, gpu)`` pairs."""
        return dict(self._running)

    def next_round(self, now: float | None = None) -> Round:
        """Decide and record the next round: which jobs run on which GPUs.

        Each placed job is credited a full round (a standalone loop without leases)."""
        now = self.rounds_run * self.round_s if now is None else float(now)
        plan = self.plan(now)
        for u, (t, _) in plan.placements.items():
            self.record(u, t, self.round_s)
        index = self.rounds_run
        self.rounds_run += 1
        self.now = now + self.round_s
        return Round(index, now, self.round_s, self.placements_frame(plan.placements))

    def placements_frame(self, placements: Mapping[Unit, tuple[str, Gpus]]) -> pd.DataFrame:
        """``job, worker_type, server, gpu, worker_id``: one row per job and GPU."""
        rows = []
        for u, (t, gpus) in placements.items():
            for s, g in gpus:
                wid = self._first_id[t] + self._server_start[t][s] + g
                for j in _members(u):
                    rows.append((j, t, s, g, wid))
        return pd.DataFrame(rows, columns=["job", "worker_type", "server", "gpu", "worker_id"])

    # ------------------------------------------------------------------ placement
    def _place_gavel(
        self, chosen: Sequence[tuple[Unit, str]], types: Sequence[str]
    ) -> dict[Unit, tuple[str, Gpus]]:
        """Gavel's placement: per type, biggest first; keep last round's GPUs if none is
        taken yet; the others take the next free GPUs server by server."""
        out: dict[Unit, tuple[str, Gpus]] = {}
        for t in types:
            mine = [u for u, tt in chosen if tt == t]
            if not mine:
                continue
            pool = [list(range(n)) for n in self.servers[t]]
            ptr = 0
            taken: set[tuple[int, int]] = set()
            for sf in sorted({self.scale[_members(u)[0]] for u in mine}, reverse=True):
                group = [u for u in mine if self.scale[_members(u)[0]] == sf]
                for u in group:
                    last = self._last.get(u)
                    if last is not None and last[0] == t and not (set(last[1]) & taken):
                        out[u] = last
                        taken.update(last[1])
                for u in group:
                    if u in out:
                        continue
                    gpus: list[tuple[int, int]] = []
                    while len(gpus) < sf and ptr < len(pool):
                        if not pool[ptr]:
                            ptr += 1
                            continue
                        g = pool[ptr].pop(0)
                        if (ptr, g) not in taken:
                            gpus.append((ptr, g))
                            taken.add((ptr, g))
                    out[u] = (t, tuple(gpus))
        return out

    def _place_best_fit(
        self, chosen: Sequence[tuple[Unit, str]], used: dict[str, list[np.ndarray]]
    ) -> dict[Unit, tuple[str, Gpus]]:
        """Keep last GPUs when staying on the same type and they are free; pack the rest
        on as few servers as possible, biggest first, each on the fullest server that
        fits (best fit)."""
        for t in self.types:
            used.setdefault(t, [np.zeros(n, dtype=bool) for n in self.servers[t]])
        out: dict[Unit, tuple[str, Gpus]] = {}
        for u, t in chosen:
            last = self._last.get(u)
            if (
                last is not None
                and last[0] == t
                and len(last[1]) == self.scale[_members(u)[0]]
                and all(s < len(used[t]) and not used[t][s][g] for s, g in last[1])
            ):
                for s, g in last[1]:
                    used[t][s][g] = True
                out[u] = last
        rest = sorted(
            ((u, t) for u, t in chosen if u not in out),
            key=lambda e: (-self.scale[_members(e[0])[0]], str(e[0])),
        )
        for u, t in rest:
            need = self.scale[_members(u)[0]]
            free = [int((~m).sum()) for m in used[t]]
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
            out[u] = (t, tuple(gpus))
        return out

    # ------------------------------------------------------------------ reports
    def received_shares(self) -> pd.DataFrame:
        """``job, worker_type, allocated, received``: received time as a fraction of the
        time since the job joined (pairs: ``job`` is ``"a+b"``)."""
        rows = []
        for u, row in self.alloc.items():
            members = _members(u)
            since = min(self._added_s.get(j, 0.0) for j in members)
            elapsed = self.now - since
            name = "+".join(members)
            for t, f in row.items():
                got = self.received_s.get((u, t), 0.0) / elapsed if elapsed > 0 else 0.0
                rows.append((name, t, f, got))
        return pd.DataFrame(rows, columns=["job", "worker_type", "allocated", "received"])

    @classmethod
    def from_result(
        cls,
        instance: Any,
        result: Any,
        round_s: float = 360.0,
        gpus_per_server: Mapping[str, int] | None = None,
        **kwargs: Any,
    ) -> RoundScheduler:
        """Build from a ``gpu_cluster`` instance and a solved :class:`~hetopt.Result`
        (its throughputs decide where each job can run)."""
        scale = {j.id: j.scale_factor for j in instance.jobs}
        thr = {j.id: dict(j.throughput) for j in instance.jobs}
        return cls(
            instance.workers,
            scale,
            result.tables["allocation"],
            round_s,
            gpus_per_server,
            throughputs=thr,
            **kwargs,
        )
