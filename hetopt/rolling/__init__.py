"""Rolling horizon: re-solve as work arrives, commit, roll forward.

* :func:`rolling_schedule` schedules a MILP kind with release times (``human_robot``)
  window by window, committing the first part of each window's plan;
  :func:`with_release_times` makes tasks arrive as a Poisson process.

Trace replay of ``gpu_cluster`` policies in Gavel's rounds (``hetopt simulate``) lives
in its kind: :mod:`hetopt.kinds.gpu_cluster.simulate`.
"""

from __future__ import annotations

from .milp import rolling_gap, rolling_schedule, with_release_times

__all__ = [
    "rolling_gap",
    "rolling_schedule",
    "with_release_times",
]
