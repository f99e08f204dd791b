"""Random ``multi_resource`` instances drawn from Synergy's measured profiles."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import InstanceError
from .._shared import arguments as check
from .data import MultiResourceInstance
from .synergy import PROFILE_SETS, profiles

TAG_NAMES = ("db", "web", "cache", "batch")
"""Tags the generator gives its tagged jobs (uniformly)."""

GPU_SIZES = (1, 2, 4, 12)
GPU_PROBS = (0.70, 0.10, 0.15, 0.05)
"""GPU demand of a job: Gavel's 1/2/4/8 mix with 8 replaced by 12, the largest size Synergy
profiled (shufflenet); sizes a profile set lacks fall back to 1."""


def generate(
    num_jobs: int,
    num_servers: int,
    seed: int = 0,
    gpus_per_server: int = 8,
    cpus_per_server: float = 24.0,
    mem_gb_per_server: float = 500.0,
    profile_set: str = "models",
    objective: str | None = "max_total_throughput",
    racks: int = 0,
    tagged_fraction: float = 0.0,
    cost_per_hour: float | None = None,
    rules: list[dict[str, Any]] | None = None,
) -> MultiResourceInstance:
    """A reproducible instance: ``num_servers`` identical servers (Synergy's default 8 GPUs,
    24 CPUs, 500 GB) and ``num_jobs`` jobs with Synergy's profiles.

    Each job draws its GPU count from :data:`GPU_SIZES` / :data:`GPU_PROBS` (kept only if the
    cluster has that many GPUs and the profile set has that size), then a model uniformly
    among those profiled at that size. While the jobs ask for more GPUs than the cluster
    has, the largest job (the last drawn among ties) is redrawn as a 1-GPU job, so every
    instance can place all its jobs.

    Placement rules (all off by default, and the jobs and servers above are the same with
    or without them): ``racks`` labels the servers ``rack = r0, r1, ...`` in contiguous
    blocks; ``round(tagged_fraction * num_jobs)`` jobs, drawn with their own random stream,
    get one tag of :data:`TAG_NAMES`; ``cost_per_hour`` is every server's cost;
    ``rules`` are the instance's ``placement_rules``.

    ``num_jobs``, ``num_servers`` and ``racks`` are whole numbers from 1 (``racks``: 0)
    to ``MAX_GENERATED`` (1,000,000), ``seed`` one >= 0, ``gpus_per_server`` one from 1
    to 1e12, ``cpus_per_server``, ``mem_gb_per_server`` and ``cost_per_hour`` numbers
    from 0 to 1e12 and ``tagged_fraction`` one from 0 to 1; anything else is a
    :class:`~hetopt.UsageError` naming the parameter. More jobs than GPUs, or more racks
    than servers, is an :class:`~hetopt.InstanceError`.
    """
    num_jobs = check.count(num_jobs, "num_jobs")
    num_servers = check.count(num_servers, "num_servers")
    seed = check.seed(seed)
    gpus_per_server = check.count(gpus_per_server, "gpus_per_server", 1, check.MAX_WHOLE)
    cpus_per_server = check.nonnegative(cpus_per_server, "cpus_per_server")
    mem_gb_per_server = check.nonnegative(mem_gb_per_server, "mem_gb_per_server")
    racks = check.count(racks, "racks", 0)
    tagged_fraction = check.fraction(tagged_fraction, "tagged_fraction")
    if cost_per_hour is not None:
        cost_per_hour = check.nonnegative(cost_per_hour, "cost_per_hour")
    if profile_set not in PROFILE_SETS:
        raise InstanceError(
            f"unknown profile set {profile_set!r}; expected one of: {', '.join(PROFILE_SETS)}",
            "profile_set",
        )
    cluster = num_servers * gpus_per_server
    if num_jobs > cluster:
        raise InstanceError(
            f"{num_jobs} jobs need at least {num_jobs} GPUs; {num_servers} servers have {cluster}",
            "jobs",
        )
    table = profiles(profile_set)
    by_size: dict[int, list[str]] = {}
    for model, g in table:
        by_size.setdefault(g, []).append(model)
    rng = np.random.default_rng(seed)
    drawn: list[tuple[str, int]] = []
    for _ in range(num_jobs):
        g = int(rng.choice(GPU_SIZES, p=GPU_PROBS))
        if g not in by_size or g > cluster:
            g = 1
        models = by_size[g]
        drawn.append((models[int(rng.integers(len(models)))], g))
    while sum(g for _, g in drawn) > cluster:
        sizes = np.array([g for _, g in drawn])
        k = int(np.nonzero(sizes == sizes.max())[0][-1])
        models = by_size[1]
        drawn[k] = (models[int(rng.integers(len(models)))], 1)
    if racks > num_servers:
        raise InstanceError(f"must be between 0 and the {num_servers} servers", "racks")
    servers: list[dict[str, Any]] = [
        {
            "id": f"s{s}",
            "gpus": gpus_per_server,
            "cpus": cpus_per_server,
            "mem_gb": mem_gb_per_server,
        }
        for s in range(num_servers)
    ]
    for s, srv in enumerate(servers):
        if racks:
            srv["labels"] = {"rack": f"r{s * racks // num_servers}"}
        if cost_per_hour is not None:
            srv["cost_per_hour"] = cost_per_hour
    jobs: list[dict[str, Any]] = [
        {"id": f"j{k}-{model}", "gpus": g, "profile": table[(model, g)]}
        for k, (model, g) in enumerate(drawn)
    ]
    n_tagged = round(tagged_fraction * num_jobs)
    if n_tagged:
        trng = np.random.default_rng([seed, 16])
        for k in sorted(trng.choice(num_jobs, size=n_tagged, replace=False).tolist()):
            jobs[k]["tags"] = [TAG_NAMES[int(trng.integers(len(TAG_NAMES)))]]
    data: dict = {"kind": "multi_resource", "servers": servers, "jobs": jobs}
    if rules:
        data["placement_rules"] = list(rules)
    if objective:
        data["objective"] = objective
    return MultiResourceInstance.from_dict(data)
