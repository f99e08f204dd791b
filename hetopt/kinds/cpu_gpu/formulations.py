"""Pyomo formulations of the ``cpu_gpu`` kind (see ``models/cpu_gpu.md``).

* :func:`add_unrelated_assignment`: the unrelated-machine piece (assignment of programs to
  devices, fractions for divisible programs, per-device load <= makespan), built by the
  block :mod:`hetopt.kinds._shared.assignment` that the ``multicore`` kind also uses.
* :func:`build_independent`: minimum makespan without slowdowns (devices run independently).
* :func:`build_pairing`: the co-run pairing model used when slowdown factors are given.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo

from ...contract import Built
from ...pyomo_ext import LinearRows
from .._shared import assignment as shared
from .data import CpuGpuArrays

INF = float("inf")


def time_reference(times: np.ndarray) -> float:
    """Scale of the makespan variable: the average device load if every program ran on its
    fastest device (a lower bound on the makespan, so ``makespan`` is O(1))."""
    best = np.where(np.isfinite(times), times, INF).min(axis=1)
    return float(best.sum() / times.shape[1])


@dataclass(frozen=True)
class Assignment:
    """The (job, machine) pairs with a finite duration, in column order."""

    job: np.ndarray
    machine: np.ndarray


def add_unrelated_assignment(
    m: pyo.ConcreteModel, times: np.ndarray, divisible: np.ndarray, t_ref: float
) -> Assignment:
    """Add the unrelated-machine assignment and load rows to ``m`` (programs on devices).

    The shared block :func:`hetopt.kinds._shared.assignment.add_unrelated_assignment`
    (also used by ``multicore``) with this kind's names: ``m.ASSIGNABLE``, ``m.share[k]``
    (fraction of job ``job[k]`` on machine ``machine[k]``: binary for indivisible jobs, in
    [0, 1] for divisible ones), ``m.makespan`` (in units of ``t_ref``),
    ``c_assign[j]: sum_k share[k] = 1`` and
    ``c_load[i]: sum_k times[j,i] / t_ref * share[k] - makespan <= 0``.

    Parameters
    ----------
    m
        The model to extend.
    times
        Jobs x machines durations in seconds; ``inf`` where a job cannot run.
    divisible
        Per job: may its work be split over several machines (running at the same time)?
    t_ref
        Time unit of ``m.makespan``, in seconds.
    """
    n, D = times.shape
    job, mach = np.nonzero(np.isfinite(times))
    shared.add_unrelated_assignment(
        m,
        job,
        mach,
        times[job, mach] / t_ref,
        n,
        D,
        fractional=divisible[job],
        makespan_bounds=(0.0, None),
        pair_set="ASSIGNABLE",
        share="share",
        load_rows="c_load",
    )
    return Assignment(job, mach)


@dataclass(frozen=True)
class IndependentLayout:
    """What the independent model tells its extractor."""

    t_ref: float
    """Time unit of ``makespan``, in seconds."""
    assignment: Assignment


def build_independent(arr: CpuGpuArrays) -> Built:
    """Minimum makespan, devices independent (no slowdowns): unrelated machines with
    divisible programs."""
    m = pyo.ConcreteModel(name="cpu_gpu")
    m.t_ref = pyo.Param(initialize=time_reference(arr.times), mutable=False)
    t_ref = float(pyo.value(m.t_ref))
    asg = add_unrelated_assignment(m, arr.times, arr.divisible, t_ref)
    m.obj = pyo.Objective(expr=m.makespan, sense=pyo.minimize)
    return Built(m, IndependentLayout(t_ref, asg))


@dataclass(frozen=True)
class Pairing:
    """Columns of the pairing model: co-run pairs per lane and solo runs per device."""

    pair_cpu: np.ndarray
    pair_gpu: np.ndarray
    pair_lane: np.ndarray
    pair_cost: np.ndarray
    """Seconds the pair's slot lasts: max(slowed CPU time, slowed GPU time)."""
    solo_prog: np.ndarray
    solo_dev: np.ndarray
    lanes: list[tuple[int, int]]
    alone: list[int]


def pairing_columns(arr: CpuGpuArrays) -> Pairing:
    lanes, alone = arr.lanes()
    tc, tg = arr.type_times[:, 0], arr.type_times[:, 1]
    p, q = np.nonzero(np.isfinite(tc)[:, None] & np.isfinite(tg)[None, :])
    keep = p != q
    p, q = p[keep], q[keep]
    cost = np.maximum(arr.factor_cpu[p, q] * tc[p], arr.factor_gpu[p, q] * tg[q])
    L = len(lanes)
    sp, sd = np.nonzero(np.isfinite(arr.times))
    return Pairing(
        pair_cpu=np.tile(p, L),
        pair_gpu=np.tile(q, L),
        pair_lane=np.repeat(np.arange(L), len(p)),
        pair_cost=np.tile(cost, L),
        solo_prog=sp,
        solo_dev=sd,
        lanes=lanes,
        alone=alone,
    )


@dataclass(frozen=True)
class PairingLayout:
    """What the pairing model tells its extractor."""

    t_ref: float
    """Time unit of ``makespan``, in seconds."""
    pairing: Pairing


def build_pairing(arr: CpuGpuArrays) -> Built:
    """The co-run pairing model (slowdowns given; programs run whole).

    Lane ``l`` is the ``l``-th CPU with the ``l``-th GPU. Its time is a sequence of slots:
    a pair ``(p on the CPU, q on the GPU)`` starting together, lasting
    ``max(factor_cpu * t_cpu(p), factor_gpu * t_gpu(q))``, or one program alone on one of
    the lane's devices. Devices outside lanes run their programs back to back.
    ``pair[k]``, ``solo[k]`` binary; ``makespan`` in units of ``t_ref``.

    Size ``n (n - 1) L + n D`` binaries. Practical (measured, one HiGHS thread, proven
    optimal): one lane up to a few hundred programs (150: ~3 s, 300: ~23 s); 2-4 identical
    lanes about 40-60 programs (seconds to a minute, instance dependent). Beyond that, give
    a time limit and read the gap.
    """
    pc = pairing_columns(arr)
    n = arr.num_programs
    t_ref = time_reference(arr.times)
    m = pyo.ConcreteModel(name="cpu_gpu_pairing")
    m.t_ref = pyo.Param(initialize=t_ref, mutable=False)
    P, S = len(pc.pair_cpu), len(pc.solo_prog)
    m.PAIRS = pyo.RangeSet(0, P - 1)
    m.SOLOS = pyo.RangeSet(0, S - 1)
    m.pair = pyo.Var(m.PAIRS, domain=pyo.Binary)
    m.solo = pyo.Var(m.SOLOS, domain=pyo.Binary)
    m.makespan = pyo.Var(bounds=(0.0, None))
    cols = [*m.pair.values(), *m.solo.values(), m.makespan]
    colP, colS = np.arange(P), P + np.arange(S)
    # c_cover[p]: every program runs exactly once (in a pair, on either side, or alone)
    m.c_cover = LinearRows.from_coo(
        np.concatenate([pc.pair_cpu, pc.pair_gpu, pc.solo_prog]),
        np.concatenate([colP, colP, colS]),
        np.ones(2 * P + S),
        n,
        np.ones(n),
        np.ones(n),
        cols,
    )
    # c_time[r]: slots of lane r (rows 0..L-1) or programs of a device alone <= makespan
    L = len(pc.lanes)
    row_of_dev = np.full(len(arr.device_ids), -1)
    for r, (c, g) in enumerate(pc.lanes):
        row_of_dev[c] = row_of_dev[g] = r
    for r, d in enumerate(pc.alone):
        row_of_dev[d] = L + r
    R = L + len(pc.alone)
    m.c_time = LinearRows.from_coo(
        np.concatenate([pc.pair_lane, row_of_dev[pc.solo_dev], np.arange(R)]),
        np.concatenate([colP, colS, np.full(R, P + S)]),
        np.concatenate(
            [pc.pair_cost / t_ref, arr.times[pc.solo_prog, pc.solo_dev] / t_ref, -np.ones(R)]
        ),
        R,
        np.full(R, -INF),
        np.zeros(R),
        cols,
    )
    m.obj = pyo.Objective(expr=m.makespan, sense=pyo.minimize)
    return Built(m, PairingLayout(t_ref, pc))
