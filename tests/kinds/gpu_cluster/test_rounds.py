"""hetopt.kinds.gpu_cluster.rounds: allocation -> per-round placements (Gavel's round-based mechanism)."""

from __future__ import annotations

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
