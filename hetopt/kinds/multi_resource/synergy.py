"""Synergy's measured job profiles (OSDI'22), shipped in ``hetopt/data/synergy``.

``synergy_tput_matrix.csv`` has one row per (profile set, model, GPUs, CPU level, memory
level) with ``norm_tput``: the job's throughput normalised so that 1.0 is its throughput at
the GPU-proportional fair share (3 CPUs and 62.5 GB per GPU on Synergy's 8 GPU / 24 CPU /
500 GB servers). The memory column is already mapped positionally (profiles with only 4
memory columns use the first 4 levels). ``norm_tput == 0`` means "not profiled" and is
dropped. Source and licence: ``hetopt/data/synergy/SOURCE.md`` (MIT, Microsoft).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import pandas as pd

PROFILE_SETS = ("models", "models-4", "models-5", "models-6")
"""Synergy's profile sets: CPU:GPU ratio 3 (the default) and ratios 4, 5 and 6."""


@lru_cache(maxsize=1)
def tput_matrix() -> pd.DataFrame:
    """The raw throughput matrix (every row, zeros included)."""
    ref = resources.files("hetopt").joinpath("data/synergy/synergy_tput_matrix.csv")
    with ref.open("r") as fh:
        return pd.read_csv(fh)


def profiles(profile_set: str = "models") -> dict[tuple[str, int], list[dict[str, float]]]:
    """Profiles of one profile set: ``(model, gpus) -> [{cpus_per_gpu, mem_gb_per_gpu,
    throughput}, ...]`` with the unprofiled (zero) entries left out."""
    df = tput_matrix()
    df = df[(df["profile_set"] == profile_set) & (df["norm_tput"] > 0)]
    out: dict[tuple[str, int], list[dict[str, float]]] = {}
    for (model, gpus), grp in df.groupby(["model", "gpus"], sort=True):
        out[(str(model), int(gpus))] = [
            {
                "cpus_per_gpu": float(r.cpu_per_gpu),
                "mem_gb_per_gpu": float(r.mem_gb_per_gpu),
                "throughput": float(r.norm_tput),
            }
            for r in grp.itertuples()
        ]
    return out
