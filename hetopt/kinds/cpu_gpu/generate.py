"""Seeded random ``cpu_gpu`` batches."""

from __future__ import annotations

import numpy as np

from ...errors import InstanceError
from .._shared import arguments as check
from .data import CpuGpuInstance


def generate(
    num_programs: int,
    num_cpus: int = 1,
    num_gpus: int = 1,
    seed: int = 0,
    divisible_fraction: float = 0.3,
    slowdown_pairs: int = 0,
    objective: str | None = "makespan",
) -> CpuGpuInstance:
    """A reproducible batch of programs.

    Distribution (independent per program): CPU time ``10 ** U(0, 2)`` s (1 to 100 s,
    log-uniform); GPU speed-up ``10 ** U(log10 0.5, log10 20)`` (0.5x to 20x, log-uniform),
    GPU time = CPU time / speed-up; divisible with probability ``divisible_fraction``.
    Times are rounded to 3 decimals. ``slowdown_pairs`` distinct (CPU program, GPU program)
    pairs, drawn uniformly, get factors ``U(1.0, 1.5)`` each, rounded to 2 decimals.

    ``num_programs`` is a whole number from 1 to ``MAX_GENERATED`` (1,000,000),
    ``num_cpus``, ``num_gpus`` and ``slowdown_pairs`` whole numbers from 0 to that,
    ``seed`` one >= 0 and ``divisible_fraction`` a number from 0 to 1; anything else is a
    :class:`~hetopt.UsageError` naming the parameter. No device at all, or more slowdown
    pairs than ``num_programs * (num_programs - 1)``, is an :class:`~hetopt.InstanceError`.
    """
    num_programs = check.count(num_programs, "num_programs")
    num_cpus = check.count(num_cpus, "num_cpus", 0)
    num_gpus = check.count(num_gpus, "num_gpus", 0)
    seed = check.seed(seed)
    divisible_fraction = check.fraction(divisible_fraction, "divisible_fraction")
    slowdown_pairs = check.count(slowdown_pairs, "slowdown_pairs", 0)
    if num_cpus + num_gpus < 1:
        raise InstanceError("need at least one device", "devices")
    max_pairs = num_programs * (num_programs - 1)
    if slowdown_pairs > max_pairs:
        raise InstanceError(f"must be in [0, {max_pairs}] for {num_programs} programs", "slowdown")
    rng = np.random.default_rng(seed)
    t_cpu = 10 ** rng.uniform(0.0, 2.0, num_programs)
    speedup = 10 ** rng.uniform(np.log10(0.5), np.log10(20.0), num_programs)
    div = rng.uniform(size=num_programs) < divisible_fraction
    devices = [{"id": f"cpu{i}", "type": "cpu"} for i in range(num_cpus)]
    devices += [{"id": f"gpu{i}", "type": "gpu"} for i in range(num_gpus)]
    programs = [
        {
            "id": f"p{i}",
            "duration_s": {
                "cpu": round(float(t_cpu[i]), 3),
                "gpu": max(0.001, round(float(t_cpu[i] / speedup[i]), 3)),
            },
            "divisible": bool(div[i]),
        }
        for i in range(num_programs)
    ]
    slowdown = []
    if slowdown_pairs:
        # pair k of the (a, b), a != b, in order (a's row skips b == a), without listing
        # all num_programs**2 of them
        pick = rng.choice(max_pairs, size=slowdown_pairs, replace=False)
        for k in sorted(int(x) for x in pick):
            a, r = divmod(k, num_programs - 1)
            b = r if r < a else r + 1
            f = np.round(rng.uniform(1.0, 1.5, 2), 2)
            slowdown.append(
                {
                    "cpu_program": f"p{a}",
                    "gpu_program": f"p{b}",
                    "factor": [float(f[0]), float(f[1])],
                }
            )
    data: dict = {"kind": "cpu_gpu", "devices": devices, "programs": programs}
    if slowdown:
        data["slowdown"] = slowdown
    if objective:
        data["objective"] = objective
    return CpuGpuInstance.from_dict(data)
