"""hetopt.kinds.gpu_cluster.rounds: allocation -> per-round placements (Gavel's round-based mechanism)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import hetopt
from hetopt.errors import InstanceError
from hetopt.kinds.gpu_cluster import generate
from hetopt.kinds.gpu_cluster.rounds import RoundScheduler


def max_error(rs: RoundScheduler) -> float:
    sh = rs.received_shares()
    return float((sh["received"] - sh["allocated"]).abs().max())


@pytest.mark.parametrize("seed", range(3))
def test_single_gpu_shares_converge(seed: int) -> None:
    # single-GPU jobs: the allocation lies in the (integral) transportation polytope, so
    # it can be realised by whole rounds; received shares must approach it
    inst = generate(14, "k80=4,p100=4,v100=4", seed=seed, multi_gpu=False)
    res = hetopt.solve(inst, "max_min_fairness")
    rs = RoundScheduler.from_result(inst, res, gpus_per_server={"k80": 2, "v100": 2})
    for _ in range(150):
        rs.next_round()
    early = max_error(rs)
    for _ in range(1350):
        rs.next_round()
    late = max_error(rs)
    assert late < 0.02 and late < early


def test_multi_gpu_realisable_allocation_converges_and_packs() -> None:
    # 4 GPUs on 2 servers of 2: the 4-GPU job half the time, the two 2-GPU jobs the other
    # half -> exactly realisable (alternate rounds)
    alloc = {"big": {"a": 0.5}, "x": {"a": 0.5}, "y": {"a": 0.5}}
    rs = RoundScheduler({"a": 4}, {"big": 4, "x": 2, "y": 2}, alloc, gpus_per_server={"a": 2})
    for _ in range(400):
        r = rs.next_round()
        per_job = r.placements.groupby("job")
        assert r.placements["worker_id"].is_unique
        for job, rows in per_job:
            if job in ("x", "y"):
                assert rows["server"].nunique() == 1  # a 2-GPU job on one server
            else:
                assert len(rows) == 4
    assert max_error(rs) < 0.01


def test_jobs_keep_their_gpus() -> None:
    # one job allocated full time keeps the same two GPUs every round
    rs = RoundScheduler({"a": 8}, {"j": 2, "k": 1}, {"j": {"a": 1.0}, "k": {"a": 1.0}},
                        gpus_per_server={"a": 4})  # fmt: skip
    first = rs.next_round().placements
    for _ in range(5):
        again = rs.next_round().placements
        for job in ("j", "k"):
            a = sorted(first.loc[first["job"] == job, "worker_id"])
            b = sorted(again.loc[again["job"] == job, "worker_id"])
            assert a == b


def test_round_timing_and_one_type_per_job() -> None:
    inst = generate(30, "k80=4,p100=4,v100=4", seed=4)
    res = hetopt.solve(inst, "max_min_fairness")
    rs = RoundScheduler.from_result(inst, res)
    for k in range(20):
        r = rs.next_round()
        assert r.start_s == pytest.approx(360.0 * k)
        assert (r.placements.groupby("job")["worker_type"].nunique() == 1).all()
        used = r.placements.groupby("worker_type").size()
        for t, n in used.items():
            assert n <= inst.workers[t]
        sf = {j.id: j.scale_factor for j in inst.jobs}
        sizes = r.placements.groupby("job").size()
        assert all(sizes[j] == sf[j] for j in sizes.index)


def test_bad_input() -> None:
    with pytest.raises(InstanceError, match="unknown worker type"):
        RoundScheduler({"a": 2}, {"j": 1}, {"j": {"b": 1.0}})
    with pytest.raises(InstanceError, match="round_s"):
        RoundScheduler({"a": 2}, {"j": 1}, {"j": {"a": 1.0}}, round_s=0)
    with pytest.raises(InstanceError, match="gpus_per_server"):
        RoundScheduler({"a": 2}, {"j": 1}, {"j": {"a": 1.0}}, gpus_per_server={"a": 0})
    assert np.isfinite(RoundScheduler({"a": 2}, {"j": 1}, {"j": {"a": 1.0}}).round_s)


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        ({"workers": {"a": 2.5}}, "workers.a", "expected a whole number >= 0, got 2.5"),
        ({"workers": {"a": True}}, "workers.a", "expected a whole number >= 0, got True"),
        ({"workers": {"a": -1}}, "workers.a", "must be >= 0, got -1"),
        ({"scale_factors": {"j": 1.5}}, "scale_factors.j", "whole number >= 1, got 1.5"),
        ({"scale_factors": {"j": 0}}, "scale_factors.j", "must be >= 1, got 0"),
        ({"gpus_per_server": {"a": 1.5}}, "gpus_per_server.a", "whole number >= 1, got 1.5"),
        ({"throughputs": {"j": {"a": float("nan")}}}, "throughputs.j.a", "got nan"),
        ({"throughputs": {"j": {"a": -1.0}}}, "throughputs.j.a", "steps/s >= 0, got -1.0"),
        ({"throughputs": {"j": {"a": "3"}}}, "throughputs.j.a", "got '3'"),
    ],
)
def test_counts_and_rates_are_checked_not_cut(
    kwargs: dict[str, Any], field: str, message: str
) -> None:
    """``int()`` cut 2.5 GPUs to 2 and a scale factor of 1.5 to 1, took True for 1, and NaN
    or negative throughputs went through."""
    args: dict[str, Any] = {"workers": {"a": 4}, "scale_factors": {"j": 1}, **kwargs}
    with pytest.raises(InstanceError) as err:
        RoundScheduler(**args)
    assert err.value.field == field and message in str(err.value)


def test_counts_take_numpy_integers_and_whole_floats() -> None:
    rs = RoundScheduler({"a": np.int64(4), "b": 2.0}, {"j": np.int32(2), "k": 1.0})
    assert rs.workers == {"a": 4, "b": 2} and rs.scale == {"j": 2, "k": 1}
    assert all(type(v) is int for v in (*rs.workers.values(), *rs.scale.values()))


def test_a_refused_cluster_change_changes_nothing() -> None:
    """The counts were kept before ``gpus_per_server`` was refused: workers said 6 GPUs
    on servers that still held 4."""
    rs = RoundScheduler({"a": 4, "b": 4}, {"j": 1}, gpus_per_server={"a": 2})
    before = (dict(rs.workers), {t: list(v) for t, v in rs.servers.items()})
    for workers, gps in (({"a": 6}, {"b": 0}), ({"a": 2.5}, None), ({"a": -2}, None)):
        with pytest.raises(InstanceError):
            rs.update_workers(workers, gps)
        assert (rs.workers, rs.servers) == before


# ----------------------------------------------------------------- issue 18
def test_add_remove_update_keep_the_received_time_history() -> None:
    rs = RoundScheduler({"a": 2, "b": 2}, {"x": 1, "y": 1}, {"x": {"a": 1.0}, "y": {"b": 1.0}})
    for _ in range(3):
        rs.next_round()
    got = dict(rs.received_s)
    assert got[("x", "a")] == pytest.approx(3 * 360.0)
    rs.add_job("z", 2, {"a": 1.0, "b": 0.0})
    assert rs.due(rs.now) and rs.jobs == ["x", "y", "z"]
    assert rs.received_s[("x", "a")] == got[("x", "a")]  # history kept
    rs.set_allocation({"x": {"a": 0.5}, "y": {"b": 1.0}, "z": {"a": 0.5}})
    assert not rs.due(rs.now)
    r = rs.next_round()
    assert set(r.placements["worker_type"][r.placements["job"] == "z"]) <= {"a"}
    rs.update_workers({"b": 1})  # a node of type b failed
    assert rs.workers == {"a": 2, "b": 1} and rs.received_s[("y", "b")] >= 3 * 360.0
    assert rs.due(rs.now)
    rs.next_round()
    rs.remove_job("x")
    assert "x" not in rs.jobs and all(k[0] != "x" for k in rs.received_s)
    assert rs.received_s[("y", "b")] >= 4 * 360.0
    with pytest.raises(InstanceError, match="already present"):
        rs.add_job("y", 1)
    with pytest.raises(InstanceError, match="unknown worker type"):
        rs.update_workers({"c": 3})


def test_hetopt_backfills_idle_gpus_and_moves_jobs_to_faster_idle_types() -> None:
    # x allocated only to the slow type k80 while the v100 idles: it moves up; y has no
    # allocation at all but waits: it is back-filled
    thr = {"x": {"v100": 3.0, "k80": 1.0}, "y": {"v100": 3.0, "k80": 1.0}}
    rs = RoundScheduler(
        {"v100": 1, "k80": 1}, {"x": 1, "y": 1}, {"x": {"k80": 0.5}}, throughputs=thr
    )
    plan = rs.plan(0.0)
    assert plan.placements["x"][0] == "v100" and plan.placements["y"][0] == "k80"
    assert plan.backfill == frozenset({"x", "y"})  # neither runs on its allocated type
    # the gavel mechanism follows its queues: v100's queue first, x has priority 0 there
    # but is back-filled, y waits (it arrived after the allocation: reserved, not placed)
    gv = RoundScheduler({"v100": 1, "k80": 1}, {"x": 1}, {"x": {"k80": 0.5}},
                        throughputs=thr, mechanism="gavel")  # fmt: skip
    gv.add_job("y", 1, thr["y"])
    plan = gv.plan(0.0)
    assert plan.placements == {"x": ("v100", ((0, 0),))}
    assert plan.idle_reserved == (("y", "k80"),)


def test_hetopt_backfill_inside_a_round() -> None:
    rs = RoundScheduler({"a": 2}, {"x": 1, "y": 1, "z": 1},
                        {"x": {"a": 0.5}, "y": {"a": 0.5}, "z": {"a": 0.5}})  # fmt: skip
    first = rs.plan(0.0)
    assert len(first.placements) == 2
    done = next(iter(first.placements))
    rs.release(done)
    rs.remove_job(done)
    more = rs.backfill(100.0)
    waiting = {"x", "y", "z"} - set(first.placements)
    assert set(more.placements) == waiting
    assert len({g for _, gpus in rs.running.values() for g in gpus}) == 2
    assert rs.backfill(150.0).placements == {}  # nothing free


def test_gavel_priorities_use_the_window_since_the_last_reset() -> None:
    # Gavel: fraction = (time on the type since the reset + half a round) / the type's
    # total; priority = allocation / fraction
    rs = RoundScheduler({"a": 1}, {"x": 1, "y": 1}, mechanism="gavel")
    rs.set_allocation({"x": {"a": 0.5}, "y": {"a": 0.5}}, now=0.0)
    assert rs.priorities() == {("x", "a"): pytest.approx(1.0), ("y", "a"): pytest.approx(1.0)}
    rs.record("x", "a", 360.0)  # x ran one round: x 540 s, y 180 s of 720 s
    p = rs.priorities()
    assert p[("x", "a")] == pytest.approx(0.5 / (540 / 720))
    assert p[("y", "a")] == pytest.approx(0.5 / (180 / 720))
    assert rs.plan(360.0).placements.keys() == {"y"}
    # a reset adds what each job should have received minus what it got to its deficit
    rs.record("y", "a", 360.0)
    rs.add_job("z", 1)
    assert not rs.due(1000.0) or rs.last_reset_s == 0.0
    rs.set_allocation({"x": {"a": 0.2}, "y": {"a": 0.4}, "z": {"a": 0.4}}, now=2000.0)
    assert rs._deficit[("x", "a")] == pytest.approx(0.5 * 2000 - 360)
    assert rs._deficit[("z", "a")] == pytest.approx(0.0)
    assert rs.priorities()[("z", "a")] == pytest.approx(0.4 / (180 / 540))
    assert not rs.due(2100.0)
    rs.remove_job("x")
    assert not rs.due(2000.0 + 1919.0) and rs.due(2000.0 + 1920.0)


def test_gavel_shuffles_types_like_gavels_seeded_shuffler() -> None:
    import random

    rs = RoundScheduler({"k80": 1, "p100": 1, "v100": 1}, {}, mechanism="gavel",
                        shuffle_types=True, seed=0)  # fmt: skip
    ref = random.Random(5)
    for _ in range(5):
        order = ["v100", "p100", "k80"]
        ref.shuffle(order)
        assert rs._order() == order
    fixed = RoundScheduler({"k80": 1, "p100": 1, "v100": 1}, {}, mechanism="gavel")
    assert fixed._order() == ["v100", "p100", "k80"]


def test_gavel_placement_keeps_gpus_and_strides_over_servers() -> None:
    # 8 GPUs in servers of 4; a 4-GPU job and four 1-GPU jobs, all allocated fully
    alloc = {"big": {"a": 1.0}, **{f"s{k}": {"a": 1.0} for k in range(4)}}
    scale = {"big": 4, **{f"s{k}": 1 for k in range(4)}}
    rs = RoundScheduler({"a": 8}, scale, alloc, gpus_per_server={"a": 4}, mechanism="gavel")
    first = rs.next_round().placements
    big = first[first["job"] == "big"]
    assert big["server"].nunique() == 1  # biggest first, on one server
    for _ in range(3):
        again = rs.next_round().placements
        assert (
            again.sort_values(["job", "worker_id"])
            .reset_index(drop=True)
            .equals(first.sort_values(["job", "worker_id"]).reset_index(drop=True))
        )
    with pytest.raises(InstanceError, match="mechanism"):
        RoundScheduler({"a": 1}, {}, mechanism="fifo")
    with pytest.raises(InstanceError, match="other_job"):
        RoundScheduler({"a": 2}, {"x": 1, "y": 1}, {("x", "y"): {"a": 1.0}}, mechanism="gavel")


def test_pairs_share_gpus() -> None:
    rs = RoundScheduler({"a": 1}, {"x": 1, "y": 1, "z": 1},
                        {("x", "y"): {"a": 0.6}, "z": {"a": 0.4}})  # fmt: skip
    seen = []
    for _ in range(50):
        r = rs.next_round()
        seen.append(tuple(sorted(r.jobs)))
        if len(r.placements) == 2:
            assert r.placements["worker_id"].nunique() == 1  # two jobs, one GPU
    assert seen.count(("x", "y")) == pytest.approx(30, abs=2)
    assert seen.count(("z",)) == pytest.approx(20, abs=2)
    shares = rs.received_shares().set_index("job")
    assert shares.loc["x+y", "received"] == pytest.approx(0.6, abs=0.05)
