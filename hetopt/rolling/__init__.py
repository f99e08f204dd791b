"""Rolling horizon: re-solve as work arrives, commit, roll forward.

* :func:`simulate` replays a Gavel-format trace (or :func:`generate_trace`'s Poisson
  arrivals) under a ``gpu_cluster`` policy in Gavel's rounds and reports job completion
  times, makespan, utilisation and solve latency (``hetopt simulate``).
* :func:`plot_jct_cdf` draws the JCT distribution.
"""

from __future__ import annotations

from .gpu import (
    ROUND_S,
    SUMMARY_KEYS,
    SimResult,
    generate_trace,
    load_trace,
    plot_jct_cdf,
    simulate,
    trace_instance,
)

__all__ = [
    "ROUND_S",
    "SUMMARY_KEYS",
    "SimResult",
    "generate_trace",
    "load_trace",
    "plot_jct_cdf",
    "simulate",
    "trace_instance",
]
