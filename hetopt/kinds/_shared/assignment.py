"""The unrelated-machine assignment block shared by ``multicore`` and ``cpu_gpu``.

Jobs go onto machines (R||Cmax with eligibility): one column per eligible (job, machine)
pair, each job's columns sum to one and every machine's scaled busy time is at most the
makespan. The component names are parameters so that each kind keeps the names of its
model card (``models/multicore.md``: ``PAIRS``, ``assign``, ``c_busy``;
``models/cpu_gpu.md``: ``ASSIGNABLE``, ``share``, ``c_load``).
"""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo

from ...pyomo_ext import LinearRows

INF = float("inf")


def add_unrelated_assignment(
    m: pyo.ConcreteModel,
    job: np.ndarray,
    machine: np.ndarray,
    p: np.ndarray,
    num_jobs: int,
    num_machines: int,
    *,
    fractional: bool | np.ndarray = False,
    makespan_bounds: tuple[float, float | None] = (0.0, None),
    pair_set: str = "PAIRS",
    share: str = "assign",
    load_rows: str = "c_busy",
) -> tuple[pyo.Var, pyo.Var]:
    """Add the assignment columns, ``makespan`` and the rows ``c_assign`` and ``load_rows``.

    Adds the set ``m.<pair_set>`` = ``0..K-1``, ``m.<share>[k]`` (the part of job ``job[k]``
    run on machine ``machine[k]``), ``m.makespan``, and the row blocks

    * ``c_assign[j]``: ``sum_{k: job[k] = j} share[k] = 1``;
    * ``<load_rows>[i]``: ``sum_{k: machine[k] = i} p[k] share[k] - makespan <= 0``.

    Parameters
    ----------
    m
        The model to extend.
    job, machine
        Per column ``k``: the job and the machine of the pair (``K`` entries each).
    p
        Per column: the job's duration on the machine, in the unit of ``makespan``.
    num_jobs, num_machines
        Numbers of rows of ``c_assign`` and of ``load_rows``.
    fractional
        ``False``: every ``share`` is binary; ``True``: every one is in ``[0, 1]``; an array
        of ``K`` booleans: per column (a divisible job's work may be split over machines).
    makespan_bounds
        Bounds of ``makespan`` (in the unit of ``p``).
    pair_set, share, load_rows
        Component names of the pair set, the assignment variable and the load rows.

    Returns
    -------
    tuple[pyomo.environ.Var, pyomo.environ.Var]
        The assignment variable and ``makespan``.
    """
    K = len(job)
    pairs = pyo.RangeSet(0, K - 1)
    m.add_component(pair_set, pairs)
    if isinstance(fractional, np.ndarray):
        frac = fractional
        x = pyo.Var(pairs, domain=lambda _, k: pyo.UnitInterval if frac[k] else pyo.Binary)
    else:
        x = pyo.Var(pairs, within=pyo.UnitInterval if fractional else pyo.Binary)
    m.add_component(share, x)
    m.makespan = pyo.Var(bounds=makespan_bounds)
    cols = [*x.values(), m.makespan]
    ks = np.arange(K)
    m.c_assign = LinearRows.from_coo(
        np.asarray(job, dtype=np.int64),
        ks,
        np.ones(K),
        num_jobs,
        np.ones(num_jobs),
        np.ones(num_jobs),
        cols,
    )
    busy = LinearRows.from_coo(
        np.concatenate([np.asarray(machine, dtype=np.int64), np.arange(num_machines)]),
        np.concatenate([ks, np.full(num_machines, K)]),
        np.concatenate([np.asarray(p, dtype=float), -np.ones(num_machines)]),
        num_machines,
        np.full(num_machines, -INF),
        np.zeros(num_machines),
        cols,
    )
    m.add_component(load_rows, busy)
    return x, m.makespan
