"""PersistentPolicy under job churn (issue 20): every in-place change gives the optimum
of a cold solve of the changed instance, verified against that instance."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import hetopt
from hetopt import SolveOptions, Status
from hetopt.errors import InstanceError, UsageError
from hetopt.kinds.gpu_cluster import GpuClusterInstance, PersistentPolicy, generate

OPTS = SolveOptions(threads=1)


def _cold_check(policy: PersistentPolicy, warm: hetopt.Result) -> None:
    changed = GpuClusterInstance.from_dict(policy.instance.to_dict())  # validated whole
    cold = hetopt.solve(changed, policy.objective, OPTS)
    assert warm.status == Status.OPTIMAL and warm.verification.ok
    assert warm.objective_value == pytest.approx(cold.objective_value, rel=1e-9)
    # the kind's independent verifier, against the changed instance
    from hetopt.kinds.gpu_cluster import KIND

    check = KIND.verify(changed, warm)
    assert check.ok, check.violations


@pytest.mark.parametrize("objective", ["max_min_fairness", "makespan"])
@pytest.mark.parametrize(("seed", "compact_share"), [(0, 0.0), (1, 0.0), (2, 0.0), (3, 0.3)])
def test_seeded_churn_matches_cold_solves(objective: str, seed: int, compact_share: float) -> None:
    """Seeded sequences of removals + arrivals, weight/steps and throughput updates and
    worker changes; ``compact_share=0.3`` keeps removed jobs switched off in the model
    (deleted in batches) instead of deleting them at once."""
    rng = np.random.default_rng(seed)
    pool = generate(140, "k80=8,p100=8,v100=8", seed=seed).to_dict()["jobs"]
    for j in pool:  # distinct jobs: no symmetry to hide a wrong row
        j["weight"] = float(rng.choice([0.5, 1.0, 2.0]))
    d = generate(60, "k80=8,p100=8,v100=8", seed=seed).to_dict()
    d["jobs"] = pool[:60]
    policy = PersistentPolicy(GpuClusterInstance.from_dict(d), objective, OPTS)
    policy.compact_share = compact_share
    _cold_check(policy, policy.solve())
    nxt = 60
    for step in range(8):
        what = step % 4
        ids = policy.instance.arrays.job_ids
        if what == 0:
            policy.remove_jobs([ids[i] for i in rng.choice(len(ids), 4, replace=False)])
            policy.add_jobs(pool[nxt : nxt + 5])
            nxt += 5
        elif what == 1:
            pick = [ids[i] for i in rng.choice(len(ids), 3, replace=False)]
            policy.update_jobs(
                pick,
                weight=[float(w) for w in rng.uniform(0.5, 3, 3)],
                steps_remaining=[float(s) for s in rng.uniform(1e4, 1e6, 3)],
            )
        elif what == 2:
            policy.update_workers(
                {"v100": int(rng.integers(3, 12)), "k80": int(rng.integers(2, 9))}
            )
        else:
            pick = [ids[i] for i in rng.choice(len(ids), 2, replace=False)]
            policy.update_jobs(pick, throughput=[{"k80": 0.7, "v100": 2.0}, {"p100": 1.5}])
        _cold_check(policy, policy.solve())
    policy.compact()
    _cold_check(policy, policy.solve())


def test_new_worker_type_and_jobs_using_it() -> None:
    inst = generate(40, "k80=4,v100=4", seed=5)
    for objective in ("max_min_fairness", "makespan"):
        policy = PersistentPolicy(inst, objective, OPTS)
        policy.solve()
        policy.update_workers({"a100": 6})
        _cold_check(policy, policy.solve())
        rec = copy.deepcopy(inst.to_dict()["jobs"][0])
        rec.update(id="fast", throughput={"a100": 9.0, "k80": 1.0})
        policy.add_jobs([rec])
        first = policy.instance.arrays.job_ids[0]
        policy.update_jobs([first], throughput=[{"a100": 4.0}])
        assert policy.instance.arrays.types == ["k80", "v100", "a100"]
        _cold_check(policy, policy.solve())


def test_add_validated_job_objects_and_remove_all_but_one() -> None:
    inst = generate(30, "k80=4,p100=4,v100=4", seed=2)
    other = generate(5, "k80=4,p100=4,v100=4", seed=9)
    jobs = [j.model_copy(update={"id": f"o{k}"}) for k, j in enumerate(other.jobs)]
    policy = PersistentPolicy(inst, "max_min_fairness", OPTS)
    policy.solve()
    policy.add_jobs(jobs)
    policy.remove_jobs([j.id for j in inst.jobs])
    assert policy.num_jobs == 5
    _cold_check(policy, policy.solve())


def test_bad_records_name_the_field() -> None:
    inst = generate(20, "k80=4,v100=4", seed=1)
    policy = PersistentPolicy(inst, "makespan", OPTS)
    good = {"id": "x", "throughput": {"v100": 1.0}, "steps_remaining": 100.0}
    cases = [
        ({"id": "x", "throughput": {"v100": -1.0}, "steps_remaining": 1.0}, "jobs[1].throughput"),
        ({"id": "x", "throughput": {"tpu": 1.0}, "steps_remaining": 1.0}, "jobs[1].throughput.tpu"),
        (
            {"id": inst.jobs[0].id, "throughput": {"v100": 1.0}, "steps_remaining": 1.0},
            "jobs[1].id",
        ),
        ({"id": "y", "throughput": {"v100": 1.0}}, "jobs[1].steps_remaining"),
        (
            {"id": "y", "throughput": {"v100": 1.0}, "scale_factor": 8, "steps_remaining": 1.0},
            "jobs[1]",
        ),
        (
            {"id": "y", "throughput": {"v100": 1.0}, "steps_remaining": 1.0, "colour": 1},
            "jobs[1].colour",
        ),
    ]
    for bad, field in cases:
        with pytest.raises(InstanceError) as err:
            policy.add_jobs([{**good, "id": "ok"}, bad])
        assert err.value.field is not None and err.value.field.startswith(field), (
            err.value.field,
            field,
        )
        assert policy.num_jobs == 20  # nothing added
    with pytest.raises(InstanceError) as err:
        policy.update_jobs([inst.jobs[3].id], weight=[-1.0])
    assert err.value.field == "jobs[0].weight"
    with pytest.raises(InstanceError) as err:
        policy.update_jobs([inst.jobs[3].id, inst.jobs[4].id], steps_remaining=[5.0, None])  # type: ignore[list-item]
    assert err.value.field == "jobs[1].steps_remaining"
    with pytest.raises(InstanceError) as err:
        policy.update_workers({"v100": 2.5})  # type: ignore[dict-item]
    assert err.value.field == "workers.v100"
    with pytest.raises(InstanceError) as err:
        policy.update_workers({"v100": 0, "k80": 0})
    assert err.value.field == "workers"
    r = policy.solve()  # still the original instance
    assert r.verification.ok and policy.num_jobs == 20


def test_unknown_ids_are_clear_errors() -> None:
    inst = generate(10, "k80=4,v100=4", seed=1)
    policy = PersistentPolicy(inst, "max_min_fairness", OPTS)
    with pytest.raises(UsageError, match="unknown job id 'nope'"):
        policy.remove_jobs([inst.jobs[0].id, "nope"])
    with pytest.raises(UsageError, match="unknown job id 'nope'"):
        policy.update_jobs(["nope"], weight=[2.0])
    with pytest.raises(UsageError, match="at least one job"):
        policy.remove_jobs([j.id for j in inst.jobs])
    assert policy.num_jobs == 10
    _cold_check(policy, policy.solve())
