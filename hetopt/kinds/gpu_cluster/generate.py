"""Gavel-style random ``gpu_cluster`` instances from the measured throughput table."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...errors import InstanceError, UsageError
from .._shared import arguments as check
from .data import GpuClusterInstance, worker_counts
from .gavel import ThroughputTable, simulation_table

SCALE_FACTORS = (1, 2, 4, 8)
SCALE_PROBS = (0.70, 0.10, 0.15, 0.05)


def parse_workers(text: str) -> dict[str, int]:
    """Parse ``"k80=36,p100=36,v100=36"``."""
    out: dict[str, int] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, count = part.partition("=")
        if not sep or not name.strip():
            raise InstanceError(f"expected TYPE=COUNT, got {part!r}", "workers")
        try:
            n = int(count)
        except ValueError:
            raise InstanceError(
                f"count for {name.strip()!r} must be a whole number, got {count!r}", "workers"
            ) from None
        if n < 0:
            raise InstanceError(f"count for {name.strip()!r} must be >= 0", "workers")
        out[name.strip()] = n
    if not out:
        raise InstanceError("expected at least one TYPE=COUNT", "workers")
    return out


def workers_option(text: str, option: str = "--workers") -> dict[str, int]:
    """:func:`parse_workers` for a command-line option: a bad value is a one-line
    :class:`~hetopt.UsageError` naming ``option`` and what it expects (exit 2), not an
    error of an instance file."""
    try:
        return parse_workers(text)
    except InstanceError as exc:
        raise UsageError(
            f"{option}: expected TYPE=COUNT,... with whole-number counts "
            f"(e.g. k80=4,v100=2), got {text!r}: {exc.message}"
        ) from None


def generate_jobs(
    num_jobs: int,
    rng: np.random.Generator,
    workers: Mapping[str, int],
    table: ThroughputTable | None = None,
    multi_gpu: bool = True,
    priority_fraction: float = 0.0,
    id_offset: int = 0,
) -> list[dict]:
    """Sample jobs the way Gavel's simulator does.

    Model uniform over the scale-factor-1 job table; scale factor 1/2/4/8 with
    probability 0.70/0.10/0.15/0.05 (1 for models without a distributed variant; halved
    while larger than the biggest GPU type of the cluster);
    duration ``60 * 10**U(1.5, 3)`` s with probability 0.8, else ``60 * 10**U(3, 4)`` s;
    ``steps = duration * throughput on V100``; a ``priority_fraction`` of jobs get weight 5.

    ``num_jobs`` is a whole number from 0 to ``MAX_GENERATED`` (1,000,000),
    ``priority_fraction`` a number from 0 to 1 and ``id_offset`` (the first job's id) a
    whole number >= 0; anything else is a :class:`~hetopt.UsageError` naming the
    parameter.
    """
    num_jobs = check.count(num_jobs, "num_jobs", 0, where="generate_jobs")
    priority_fraction = check.fraction(
        priority_fraction, "priority_fraction", where="generate_jobs"
    )
    id_offset = check.count(id_offset, "id_offset", 0, None, where="generate_jobs")
    table = table or simulation_table()
    worker_types = list(workers)
    missing = [t for t in worker_types if t not in table.worker_types]
    if missing:
        raise InstanceError(
            f"worker type(s) {', '.join(missing)} not in the throughput table; it has: "
            f"{', '.join(t for t in table.worker_types)}",
            "workers",
        )
    models = table.models(1)
    biggest = max(workers.values()) if workers else 0
    jobs = []
    for k in range(num_jobs):
        model = models[int(rng.integers(len(models)))]
        sf = 1
        if multi_gpu:
            sf = int(rng.choice(SCALE_FACTORS, p=SCALE_PROBS))
            if (model, sf) not in table.solo:
                sf = 1
            while sf > 1 and sf > biggest:  # a small cluster cannot host it: halve
                sf //= 2
        if rng.uniform() < 0.8:
            duration = 60.0 * 10 ** rng.uniform(1.5, 3.0)
        else:
            duration = 60.0 * 10 ** rng.uniform(3.0, 4.0)
        solo = table.solo[(model, sf)]
        steps = duration * solo["v100"]
        weight = 5.0 if priority_fraction > 0 and rng.uniform() < priority_fraction else 1.0
        jobs.append(
            {
                "id": str(id_offset + k),
                "job_type": model,
                "throughput": {t: float(solo.get(t, 0.0)) for t in worker_types},
                "scale_factor": sf,
                "weight": weight,
                "steps_remaining": round(float(steps), 3),
            }
        )
    return jobs


def generate(
    num_jobs: int,
    workers: Mapping[str, int] | str = "k80=36,p100=36,v100=36",
    seed: int = 0,
    multi_gpu: bool = True,
    priority_fraction: float = 0.0,
    objective: str | None = None,
) -> GpuClusterInstance:
    """A Gavel-generated ``gpu_cluster`` instance (reproducible for a given seed).

    ``num_jobs`` is a whole number from 1 to ``MAX_GENERATED`` (1,000,000), ``seed`` one
    >= 0 and ``priority_fraction`` a number from 0 to 1; anything else is a
    :class:`~hetopt.UsageError` naming the parameter.
    """
    num_jobs = check.count(num_jobs, "num_jobs")
    seed = check.seed(seed)
    priority_fraction = check.fraction(priority_fraction, "priority_fraction")
    w = parse_workers(workers) if isinstance(workers, str) else worker_counts(workers)
    rng = np.random.default_rng(seed)
    jobs = generate_jobs(num_jobs, rng, w, None, multi_gpu, priority_fraction)
    data: dict = {"kind": "gpu_cluster", "workers": w, "jobs": jobs}
    if objective:
        data["objective"] = objective
    return GpuClusterInstance.from_dict(data)
