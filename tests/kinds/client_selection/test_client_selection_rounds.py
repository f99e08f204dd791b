"""Multi-round client selection: per-round tables, availability churn, participation quotas."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import hetopt
from hetopt import InstanceError, Status
from hetopt.kinds.client_selection import ClientSelectionInstance
from hetopt.kinds.client_selection import algorithms as A
from hetopt.kinds.client_selection.generate import generate
from hetopt.kinds.client_selection.rounds import run_rounds


def two_speed_pool() -> ClientSelectionInstance:
    # 6 fast clients (upload 10 s) and 4 slow ones (upload 40 s); D = 100 s, all ready at 0:
    # the count optimum is 7 (6 fast + 1 slow = 100 s), so only one slow client per round.
    clients = [
        {"id": f"f{i}", "ready_s": 0.0, "upload_s": 10.0, "group": "fast"} for i in range(6)
    ] + [{"id": f"s{i}", "ready_s": 0.0, "upload_s": 40.0, "group": "slow"} for i in range(4)]
    return ClientSelectionInstance.from_dict(
        {"kind": "client_selection", "round_deadline_s": 100.0, "clients": clients}
    )


def test_static_rounds_repeat_the_single_round_optimum() -> None:
    inst = generate(80, seed=2)
    arr = inst.arrays
    want = A.moore_hodgson(arr.upload, arr.slack).sum()
    out = run_rounds(inst, 3, seed=1)
    assert list(out.rounds["selected"]) == [want] * 3
    assert (out.rounds["method"] == "moore_hodgson").all()
    assert len(out.selections) == 3 * arr.n
    assert all(r is not None and r.ok for r in out.results)


def test_availability_and_jitter_are_seeded_and_respected() -> None:
    inst = generate(60, seed=5, groups=2)
    a = run_rounds(inst, 4, seed=7, availability=0.6, jitter=0.3)
    b = run_rounds(inst, 4, seed=7, availability=0.6, jitter=0.3)
    pd.testing.assert_frame_equal(a.selections, b.selections)
    s = a.selections
    assert not (s["selected"] & ~s["available"]).any()
    assert (s.groupby("round").size() == 60).all()
    # per-round feasibility, recomputed here from the round's own times
    for _rnd, df in s[s.selected].groupby("round"):
        df = df.sort_values("upload_start_s")
        assert (df["upload_start_s"] >= df["ready_s"] - 1e-6).all()
        assert (df["finish_s"] <= inst.round_deadline_s + 1e-6).all()
        assert (df["upload_start_s"].to_numpy()[1:] >= df["finish_s"].to_numpy()[:-1] - 1e-6).all()
    part = a.participation
    assert (part["times_selected"] <= part["rounds_available"]).all()
    assert part["times_selected"].sum() == a.rounds["selected"].sum()


def test_group_quota_over_rounds() -> None:
    inst = two_speed_pool()
    plain = run_rounds(inst, 4, seed=0)
    slow_plain = plain.participation.query("group == 'slow'")["times_selected"].sum()
    out = run_rounds(inst, 4, seed=0, group_quota={"slow": 8})
    slow = out.participation.query("group == 'slow'")["times_selected"].sum()
    assert slow >= 8 > slow_plain
    assert (out.rounds["method"] == "milp").all()
    assert not out.rounds["quota_relaxed"].any()
    # each round: 2 slow (80 s) + 2 fast (20 s) = 100 s is the best with 2 slow ones
    assert list(out.rounds["selected"]) == [4, 4, 4, 4]


def test_impossible_quota_is_relaxed_not_hidden() -> None:
    inst = two_speed_pool()
    out = run_rounds(inst, 1, group_quota={"slow": 4})  # 4 * 40 s > 100 s
    assert out.rounds["quota_relaxed"].all()
    assert out.rounds["status"].iloc[0] == Status.OPTIMAL.value


def test_bad_driver_arguments() -> None:
    inst = two_speed_pool()
    with pytest.raises(InstanceError, match=r"group_quota\.nope"):
        run_rounds(inst, 2, group_quota={"nope": 1})
    with pytest.raises(InstanceError, match="availability"):
        run_rounds(inst, 2, availability=0.0)
    with pytest.raises(InstanceError, match="num_rounds"):
        run_rounds(inst, 0)


def test_parallel_rounds_use_bandwidth_columns() -> None:
    inst = generate(40, seed=3, uplink="parallel")
    out = run_rounds(inst, 2, seed=3, availability=0.8)
    assert (out.rounds["method"] == "smallest_need_first").all()
    for res in out.results:
        assert res is not None and res.ok
        sel = res.tables["selection"]
        assert sel.loc[sel.selected, "bandwidth_mbps"].sum() <= inst.bandwidth_budget_mbps + 1e-6
    assert np.isfinite(out.selections.loc[out.selections.selected, "finish_s"]).all()
    assert hetopt.solve(inst).ok
