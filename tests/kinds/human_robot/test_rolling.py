"""Rolling horizon on the human_robot MILP (tasks with release times)."""

from __future__ import annotations

import numpy as np
import pytest

import hetopt
from hetopt import InstanceError, SolveOptions, Status, UsageError
from hetopt.kinds.gpu_cluster import generate as gpu_generate
from hetopt.kinds.human_robot.generate import generate
from hetopt.kinds.human_robot.rolling import with_release_times
from hetopt.rolling import rolling_gap, rolling_schedule

OPTS = SolveOptions(threads=1, time_limit_s=60)


def arriving(seed: int, n: int = 8, agents: int = 3, gap: float = 15.0):
    return with_release_times(generate(n, agents, seed=seed), mean_gap_s=gap, seed=seed)


def test_release_times_are_poisson_batches():
    inst = arriving(0, n=9)
    rel = np.array([t.release_s for t in inst.tasks])
    assert rel[0] == 0 and (np.diff(rel) >= 0).all() and rel[-1] > 0
    batched = with_release_times(generate(9, 3, seed=0), mean_gap_s=15.0, seed=0, batch=3)
    rb = np.array([t.release_s for t in batched.tasks])
    assert len(set(rb[:3])) == 1 and len(set(rb[3:6])) == 1
    with pytest.raises(InstanceError, match="mean_gap_s"):
        with_release_times(inst, 0.0)


def test_one_window_seeing_everything_is_the_full_horizon_optimum():
    # lookahead past the last release: the first window is the offline problem
    inst = arriving(1)
    full = hetopt.solve(inst, "makespan", OPTS, method="exact")
    assert full.status == Status.OPTIMAL
    roll = rolling_schedule(inst, "makespan", step_s=10.0, lookahead_s=1e6, method="exact")
    assert roll.info["windows"] == 1
    assert roll.objective_value == pytest.approx(full.objective_value, rel=1e-6)
    assert roll.verification.ok


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("objective", ["makespan", "weighted_completion"])
def test_rolling_is_feasible_and_never_beats_the_offline_optimum(seed, objective):
    inst = arriving(seed)
    full = hetopt.solve(inst, objective, OPTS, method="exact")
    assert full.status == Status.OPTIMAL
    roll = rolling_schedule(inst, objective, step_s=20.0, lookahead_s=20.0, method="exact")
    myo = rolling_schedule(inst, objective, step_s=20.0, myopic=True, method="exact")
    for r in (roll, myo):
        assert r.status == Status.FEASIBLE
        assert r.verification.ok, r.verification.violations
        assert set(r.tables["schedule"]["task"]) == {t.id for t in inst.tasks}
        # a committed online schedule is feasible offline: it cannot beat the optimum
        assert rolling_gap(r, full) >= -1e-6
    sched = roll.tables["schedule"].set_index("task")
    for t in inst.tasks:
        assert sched.loc[t.id, "start_s"] >= t.release_s - 1e-6


def test_bad_arguments():
    inst = arriving(0)
    with pytest.raises(UsageError, match="step_s"):
        rolling_schedule(inst, step_s=0)
    with pytest.raises(UsageError, match="lookahead_s"):
        rolling_schedule(inst, lookahead_s=-1)
    with pytest.raises(UsageError, match="supports"):
        rolling_schedule(gpu_generate(4, "k80=2,p100=2,v100=2"))
