"""Re-planning ``agent_sessions`` as pauses end (``hetopt.kinds.agent_sessions.replan``).

Known answer: with the timeline unchanged, re-planning an optimal plan at any time gives
the same total recompute (the past was optimal for the future it assumed, and a re-plan
can only do as well as the optimum). With moved pauses the past stays fixed and the
future plan is verified like any solve.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from test_agent_sessions_oracles import random_instance

import hetopt
from hetopt import SolveOptions
from hetopt.kinds.agent_sessions import KIND, AgentSessionsInstance, replan, replan_instance

DIR = Path(__file__).resolve().parents[3] / "instances" / "agent_sessions"
OPTS = SolveOptions(threads=1, time_limit_s=30)


def _times(inst: AgentSessionsInstance) -> list[float]:
    ts = sorted({p.start_s for s in inst.sessions for p in s.pauses})
    return [ts[0] - 1.0, *[(a + b) / 2 for a, b in itertools.pairwise(ts)], ts[-1] + 1.0]


@pytest.mark.parametrize("source", ["one_gpu_equal.json", "two_gpus.json", "random"])
def test_unchanged_timeline_keeps_the_optimum(source: str) -> None:
    if source == "random":
        inst = AgentSessionsInstance.from_dict(random_instance(3, 5, 2, gpus=2, room=1.3))
    else:
        inst = hetopt.read_instance(DIR / source)
    first = KIND.solve(inst, "min_recompute_s", OPTS, method="milp")
    assert first.objective_value > 0
    previous = first.tables
    for now in _times(inst)[::2]:
        rp = replan(inst, previous, now, "min_recompute_s", OPTS, method="milp")
        assert rp.result.verification.ok
        assert rp.total_recompute_s == pytest.approx(first.objective_value, abs=1e-6), now
        previous = rp.tables  # chain: the merged plan is the next one's past


def test_replan_before_anything_is_a_fresh_solve() -> None:
    inst = hetopt.read_instance(DIR / "two_gpus.json")
    rp = replan(inst, KIND.solve(inst, "min_recompute_s").tables, -1.0)
    assert rp.committed.empty
    assert all(s.gpu is None for s in rp.future.sessions)
    assert rp.result.objective_value == pytest.approx(0.25)


def test_moved_pauses_fix_the_past() -> None:
    data = json.loads((DIR / "one_gpu_equal.json").read_text())
    inst = AgentSessionsInstance.from_dict(data)
    plan = KIND.solve(inst, "min_recompute_s")
    now = 7.0
    # the tools of a1 and a2 run late: their second pauses start 3 s later
    for s in data["sessions"]:
        if s["id"] in ("a1", "a2"):
            p = s["pauses"][1]
            if p["start_s"] >= now:
                p["start_s"] += 3.0
                p["end_s"] += 3.0
    moved = AgentSessionsInstance.from_dict(data)
    future, committed, pmap = replan_instance(moved, plan.tables, now)
    # ended pauses, and ongoing ones that were evicted, are committed with their decision
    old = plan.tables["retention"].set_index(["session", "pause"])
    for r in committed.itertuples():
        assert bool(old.loc[(r.session, r.pause), "kept"]) == r.kept
        s = next(x for x in inst.sessions if x.id == r.session)
        p = s.pauses[r.pause]
        assert p.end_s <= now or (p.start_s < now and not r.kept)
    # a kept pause under way continues from now; every session that has paused is pinned
    for fp in pmap:
        p = next(x for x in future.sessions if x.id == fp.session).pauses[fp.future_pause]
        assert p.start_s >= now
    assert all(s.gpu == "g0" for s in future.sessions)
    rp = replan(moved, plan.tables, now)
    assert rp.result.verification.ok
    ret = rp.tables["retention"]
    assert len(ret) == sum(len(s.pauses) for s in moved.sessions)
    assert rp.total_recompute_s == pytest.approx(ret["recompute_s"].sum())


def test_previous_plan_must_cover_the_instance() -> None:
    inst = hetopt.read_instance(DIR / "one_gpu_equal.json")
    tables = KIND.solve(inst, "min_recompute_s").tables
    short = dict(tables, retention=tables["retention"].iloc[1:])
    with pytest.raises(hetopt.InstanceError, match="no decision"):
        replan(inst, short, 5.0)
    with pytest.raises(hetopt.InstanceError, match="affinity"):
        replan(inst, {"retention": tables["retention"]}, 5.0)
