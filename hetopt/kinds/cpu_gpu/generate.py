"""Seeded random ``cpu_gpu`` batches."""

from __future__ import annotations

import numpy as np

from ...errors import InstanceError
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
    """
    if num_programs < 1:
        raise InstanceError("must be at least 1", "programs")
    if num_cpus < 0 or num_gpus < 0 or num_cpus + num_gpus < 1:
        raise InstanceError("need at least one device", "devices")
    if not 0 <= divisible_fraction <= 1:
        raise InstanceError("must be in [0, 1]", "divisible_fraction")
    max_pairs = num_programs * (num_programs - 1)
    if slowdown_pairs < 0 or slowdown_pairs > max_pairs:
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
        cand = [(a, b) for a in range(num_programs) for b in range(num_programs) if a != b]
        pick = rng.choice(len(cand), size=slowdown_pairs, replace=False)
        for k in sorted(int(x) for x in pick):
            a, b = cand[k]
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
