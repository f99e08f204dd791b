"""Rolling horizon: re-solve as work arrives, commit, roll forward.

* :func:`simulate` replays a Gavel-format trace (or :func:`generate_trace`'s Poisson
  arrivals) under a ``gpu_cluster`` policy in Gavel's rounds and reports job completion
  times, makespan, utilisation and solve latency (``hetopt simulate``).
* :func:`plot_jct_cdf` draws the JCT distribution.
* :func:`rolling_schedule` schedules a kind whose work has release times window by
  window, committing the first part of each window's plan, through the hooks the kind
  offers (:class:`Replanner`; ``human_robot``: :mod:`hetopt.kinds.human_robot.rolling`,
  whose :func:`~hetopt.kinds.human_robot.rolling.with_release_times` makes tasks arrive
  as a Poisson process).
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
from .horizon import ROLLING_DETAILS, Replanner, rolling_gap, rolling_schedule

__all__ = [
    "ROLLING_DETAILS",
    "ROUND_S",
    "SUMMARY_KEYS",
    "Replanner",
    "SimResult",
    "generate_trace",
    "load_trace",
    "plot_jct_cdf",
    "rolling_gap",
    "rolling_schedule",
    "simulate",
    "trace_instance",
]
