"""Rolling horizon: re-solve as work arrives, commit, roll forward.

* :func:`rolling_schedule` schedules a kind whose work has release times window by
  window, committing the first part of each window's plan, through the hooks the kind
  offers (:class:`Replanner`; ``human_robot``: :mod:`hetopt.kinds.human_robot.rolling`,
  whose :func:`~hetopt.kinds.human_robot.rolling.with_release_times` makes tasks arrive
  as a Poisson process).

Trace replay of ``gpu_cluster`` policies in Gavel's rounds (``hetopt simulate``) lives
in its kind: :mod:`hetopt.kinds.gpu_cluster.simulate`.
"""

from __future__ import annotations

from .horizon import ROLLING_DETAILS, Replanner, rolling_gap, rolling_schedule

__all__ = ["ROLLING_DETAILS", "Replanner", "rolling_gap", "rolling_schedule"]
