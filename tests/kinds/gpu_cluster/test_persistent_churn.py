"""PersistentPolicy under job churn (issue 20): every in-place change gives the optimum
of a cold solve of the changed instance, verified against that instance."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

import hetopt
from hetopt import SolveOptions, Status
from hetopt.errors import InstanceError, UsageError
from hetopt.kinds.gpu_cluster import GpuClusterInstance, PersistentPolicy, generate
from hetopt.kinds.gpu_cluster.formulations import job_groups

OPTS = SolveOptions(threads=1)
WORKERS = "k80=8,p100=8,v100=8"


def _cold_check(policy: PersistentPolicy, warm: hetopt.Result) -> None:
    changed = GpuClusterInstance.from_dict(policy.instance.to_dict())  # validated whole
    cold = hetopt.solve(changed, policy.objective, OPTS)
    assert warm.status == Status.OPTIMAL and warm.verification.ok
    assert warm.objective_value == pytest.approx(cold.objective_value, rel=1e-9)
    # the kind's independent verifier, against the changed instance
    from hetopt.kinds.gpu_cluster import KIND

    check = KIND.verify(changed, warm)
    assert check.ok, check.violations
    _group_check(policy, warm)


def _group_check(policy: PersistentPolicy, warm: hetopt.Result) -> None:
    """The live model's rows are the cold grouping's groups (one per job without
    symmetry), each job gets exactly its group's shares, and no rows are left over."""
    arr = policy.instance.arrays
    group_of, reps, _ = job_groups(arr, policy.objective == "makespan")
    h = policy.highs_model.highs
    if policy.compact_share == 0:
        assert h.getNumRow() == 2 * policy.num_groups + len(arr.types)
    if not policy.symmetry:
        assert policy.num_groups == policy.num_jobs
        assert "symmetry_groups" not in warm.info
        return
    assert policy.num_groups == len(reps) == warm.info["symmetry_groups"]
    alloc = warm.tables["allocation"]
    X = np.zeros((arr.num_jobs, len(arr.types)))
    pos = {j: i for i, j in enumerate(arr.job_ids)}
    X[alloc["job"].map(pos), alloc["worker_type"].map(arr.types.index)] = alloc["fraction"]
    assert (X[reps][group_of] == X).all()  # every job: its group's shares, exactly


@pytest.mark.parametrize("symmetry", [True, False])
@pytest.mark.parametrize("objective", ["max_min_fairness", "makespan"])
@pytest.mark.parametrize(("seed", "compact_share"), [(0, 0.0), (1, 0.0), (2, 0.0), (3, 0.3)])
def test_seeded_churn_matches_cold_solves(
    objective: str, seed: int, compact_share: float, symmetry: bool
) -> None:
    """Seeded sequences of removals + arrivals, weight/steps and throughput updates and
    worker changes; ``compact_share=0.3`` keeps removed jobs switched off in the model
    (deleted in batches) instead of deleting them at once. With ``symmetry`` (the
    default) the live model has a row per group of identical jobs, else one per job."""
    rng = np.random.default_rng(seed)
    pool = generate(140, WORKERS, seed=seed).to_dict()["jobs"]
    for j in pool:  # few identical jobs: no symmetry to hide a wrong row
        j["weight"] = float(rng.choice([0.5, 1.0, 2.0]))
    d = generate(60, WORKERS, seed=seed).to_dict()
    d["jobs"] = pool[:60]
    policy = PersistentPolicy(GpuClusterInstance.from_dict(d), objective, OPTS, symmetry=symmetry)
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


def test_one_string_or_one_record_is_a_usage_error_not_its_parts() -> None:
    """A string was taken for its characters (``remove_jobs("job-1")``: "unknown job id
    'j'"), one record for its keys (``add_jobs(record)``: "jobs[0]: ... got 'id'")."""
    inst = generate(10, "k80=4,v100=4", seed=1)
    policy = PersistentPolicy(inst, "max_min_fairness", OPTS)
    one = inst.jobs[0].id
    for call in (policy.remove_jobs, lambda ids: policy.update_jobs(ids, weight=[2.0])):
        with pytest.raises(
            UsageError, match=rf"expected a list of job ids, got the string '{one}'"
        ):
            call(one)
    record = {"id": "new", "throughput": {"v100": 1.0}}
    with pytest.raises(UsageError, match=r"got one record \(id 'new'\): pass \[record\]"):
        policy.add_jobs(record)
    with pytest.raises(UsageError, match="got the string 'new'"):
        policy.add_jobs("new")
    assert policy.num_jobs == 10
    _cold_check(policy, policy.solve())


@pytest.mark.parametrize("objective", ["max_min_fairness", "makespan"])
def test_add_jobs_takes_columns_as_records(objective: str) -> None:
    """A DataFrame or a mapping of columns adds the same jobs as their records, and a bad
    value names ``jobs[i].field`` as the records path does."""
    import pandas as pd

    records = generate(30, "k80=4,p100=4,v100=4", seed=3).to_dict()["jobs"]
    start = GpuClusterInstance.from_dict(
        {"workers": {"k80": 4, "p100": 4, "v100": 4}, "jobs": records[:20]}
    )
    by_columns = PersistentPolicy(start, objective, OPTS)
    by_records = PersistentPolicy(start, objective, OPTS)
    by_columns.add_jobs(pd.DataFrame(records[20:25]))
    by_columns.add_jobs({k: [r[k] for r in records[25:]] for k in records[25]})
    by_records.add_jobs(records[20:])
    a, b = by_columns.solve(), by_records.solve()
    assert a.objective_value == b.objective_value
    assert a.tables["allocation"].equals(b.tables["allocation"])
    assert by_columns.instance.jobs == by_records.instance.jobs
    _cold_check(by_columns, a)
    bad = pd.DataFrame([{**records[0], "id": "y0"}, {**records[1], "id": "y1", "scale_factor": 0}])
    with pytest.raises(InstanceError) as err:
        by_columns.add_jobs(bad)
    assert err.value.field == "jobs[1].scale_factor"
    assert by_columns.num_jobs == 30


def test_update_workers_takes_numpy_integers() -> None:
    """As the instance's ``workers`` do (issue 20: numpy integers are integers)."""
    inst = generate(10, "k80=4,v100=4", seed=1)
    policy = PersistentPolicy(inst, "max_min_fairness", OPTS)
    policy.update_workers({"v100": np.int64(6), "k80": 5.0})  # type: ignore[dict-item]
    assert policy.instance.workers == {"k80": 5, "v100": 6}
    assert all(type(v) is int for v in policy.instance.workers.values())
    _cold_check(policy, policy.solve())
    with pytest.raises(InstanceError) as err:
        policy.update_workers({5: 3})  # type: ignore[dict-item]
    assert (err.value.field, str(err.value).split(": ", 1)[1]) == (
        "workers",
        "key 5: Input should be a valid string, got 5",
    )


def _pool(style: str, n: int, seed: int) -> list[dict]:
    """Job records: ``gavel`` as generated (many identical jobs: same model, scale
    factor and weight; steps from two values, so makespan has groups too) or
    ``distinct`` (every weight and steps different: one group per job)."""
    rng = np.random.default_rng(seed)
    jobs = generate(n, WORKERS, seed=seed).to_dict()["jobs"]
    for j in jobs:
        if style == "gavel":
            j["steps_remaining"] = float(rng.choice([2e4, 5e4]))
        else:
            j["weight"] = float(rng.uniform(0.5, 3.0))
            j["steps_remaining"] = float(rng.uniform(1e4, 1e6))
    return jobs


@pytest.mark.parametrize("style", ["gavel", "distinct"])
@pytest.mark.parametrize("objective", ["max_min_fairness", "makespan"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_seeded_churn_splits_and_merges_groups(objective: str, style: str, seed: int) -> None:
    """Symmetry groups under churn: arrivals that copy a live job join its group, the
    last job of a group leaving deletes the group's rows, updates move jobs between
    groups (onto another job's data, or onto data of their own), a new worker type
    and capacity changes; after every round the grouped live model's optimum is the
    cold solve's (1e-9) and every job of a group gets the group's shares."""
    rng = np.random.default_rng(100 + seed)
    pool = _pool(style, 160, seed)
    d = {"kind": "gpu_cluster", "workers": dict(k80=8, p100=8, v100=8), "jobs": pool[:60]}
    policy = PersistentPolicy(GpuClusterInstance.from_dict(d), objective, OPTS)
    assert policy.symmetry
    _cold_check(policy, policy.solve())
    nxt, copies = 60, 0
    for step in range(10):
        what = step % 5
        jobs = policy.instance.jobs
        ids = [j.id for j in jobs]
        if what == 0:  # 2 leave, 3 arrive, 2 of them copies of live jobs
            policy.remove_jobs([ids[i] for i in rng.choice(len(ids), 2, replace=False)])
            twins = [
                dict(jobs[int(i)].model_dump(exclude_none=True), id=f"copy{copies + k}")
                for k, i in enumerate(rng.choice(len(jobs) - 2, 2, replace=False))
            ]
            copies += 2
            policy.add_jobs([*twins, pool[nxt]])
            nxt += 1
        elif what == 1:  # a whole group leaves (and a job of another group)
            arr = policy.instance.arrays
            group_of, _, mult = job_groups(arr, objective == "makespan")
            g = int(np.argmax(mult)) if step % 2 else int(np.argmin(mult))
            gone = [ids[i] for i in np.nonzero(group_of == g)[0][:5]]
            if len(gone) < len(ids) - 1:
                policy.remove_jobs([*gone, ids[-1]] if ids[-1] not in gone else gone)
        elif what == 2:  # moves: onto another job's data, onto data of its own
            a, b, c = (int(i) for i in rng.choice(len(jobs), 3, replace=False))
            other = jobs[b]
            policy.update_jobs(
                [ids[a], ids[c]],
                weight=[other.weight, float(rng.uniform(0.5, 3))],
                steps_remaining=[other.steps_remaining, float(rng.uniform(1e4, 1e5))],
                throughput=[dict(other.throughput or {}), dict(jobs[c].throughput or {})],
            )
        elif what == 3:
            workers = {"v100": int(rng.integers(4, 12)), "k80": int(rng.integers(3, 9))}
            if step == 3:
                workers["a100"] = 4
            policy.update_workers(workers)
            policy.update_jobs([ids[0]], weight=[jobs[0].weight])  # same data: same group
        else:  # a copy onto a new type; a whole group moves onto one job's data
            rec = dict(pool[nxt], id=f"new{step}")
            rec["throughput"] = {**rec["throughput"], "a100": 7.5}
            nxt += 1
            policy.add_jobs([rec, dict(rec, id=f"new{step}b")])
            arr = policy.instance.arrays
            group_of, _, mult = job_groups(arr, objective == "makespan")
            g = int(np.argmax(mult))
            members = [ids[i] for i in np.nonzero(group_of[: len(ids)] == g)[0][:4]]
            target = jobs[int(rng.integers(len(jobs)))]
            k = len(members)
            policy.update_jobs(
                members,
                weight=[target.weight] * k,
                steps_remaining=[target.steps_remaining] * k,
                throughput=[dict(target.throughput or {})] * k,
            )
        _cold_check(policy, policy.solve())
    per_job = PersistentPolicy(policy.instance, objective, OPTS, symmetry=False)
    assert per_job.num_groups == per_job.num_jobs
    assert per_job.solve().objective_value == pytest.approx(
        policy.solve().objective_value, rel=1e-9
    )


def test_copies_join_a_group_and_leave_it_in_place() -> None:
    """A copy of a job joins its group (no new rows: the capacity coefficients change);
    removing the copies gives the group back its old coefficients; the agnostic
    baseline has one row per job (its cold solve does not group either)."""
    inst = generate(40, "k80=4,p100=4,v100=4", seed=3)
    policy = PersistentPolicy(inst, "max_min_fairness", OPTS)
    first = policy.solve()
    groups, rows = policy.num_groups, policy.highs_model.highs.getNumRow()
    assert groups < policy.num_jobs
    twins = [dict(inst.jobs[k].model_dump(exclude_none=True), id=f"t{k}") for k in range(6)]
    policy.add_jobs(twins)
    assert policy.num_groups == groups and policy.highs_model.highs.getNumRow() == rows
    _cold_check(policy, policy.solve())
    policy.remove_jobs([t["id"] for t in twins])
    again = policy.solve()
    assert again.objective_value == pytest.approx(first.objective_value, rel=1e-9)
    _cold_check(policy, again)
    agnostic = PersistentPolicy(inst, "max_min_fairness", OPTS, agnostic=True)
    assert not agnostic.symmetry and agnostic.num_groups == agnostic.num_jobs


def test_result_tables_name_the_changed_jobs() -> None:
    """The tables' ``job`` column, passed on from round to round (taken on removals,
    joined on arrivals, kept on updates), is what pandas infers from the changed
    instance's ids; each round's tables are the frames the constructor builds."""
    import pandas as pd

    from hetopt.kinds.gpu_cluster import methods as M

    inst = generate(40, "k80=4,p100=4,v100=4", seed=3)
    extra = generate(10, "k80=4,p100=4,v100=4", seed=8).to_dict()["jobs"]
    policy = PersistentPolicy(inst, "max_min_fairness", OPTS)
    policy.solve()
    for step in range(4):
        ids = policy.instance.arrays.job_ids
        policy.remove_jobs(ids[step::9])
        policy.add_jobs([dict(r, id=f"n{step}-{k}") for k, r in enumerate(extra[:3])])
        policy.update_jobs([policy.instance.arrays.job_ids[1]], weight=[2.0])
        policy.update_workers({"v100": 4 + step})
        warm = policy.solve()
        arr = policy.instance.arrays
        names = M.job_names(arr)
        pd.testing.assert_extension_array_equal(names, M._inferred(list(arr.job_ids)))
        alloc, jobs = warm.tables["allocation"], warm.tables["jobs"]
        job, typ = np.nonzero(arr.thr > 0)
        expected = pd.DataFrame(
            {
                "job": np.asarray(arr.job_ids, dtype=object)[job],
                "worker_type": np.asarray(arr.types, dtype=object)[typ],
                "fraction": alloc["fraction"].to_numpy(),
            }
        )
        pd.testing.assert_frame_equal(alloc, expected, check_exact=True)
        assert jobs["job"].tolist() == list(arr.job_ids)
        cold = hetopt.solve(policy.instance, "max_min_fairness", OPTS)
        assert jobs.dtypes.to_dict() == cold.tables["jobs"].dtypes.to_dict()


@pytest.mark.parametrize("objective", ["max_min_fairness", "makespan"])
def test_changes_between_solves_in_any_order(objective: str) -> None:
    """Several removals and arrivals between two solves, in any order (removals of jobs
    that just arrived too), are written into the instance once, when it is read: the
    same instance as made one change at a time (ids, arrays, records), the cold optimum;
    a refused arrival leaves the pending changes as they were."""
    rng = np.random.default_rng(11)
    pool = _pool("gavel", 120, 4)
    d = {"kind": "gpu_cluster", "workers": dict(k80=8, p100=8, v100=8), "jobs": pool[:50]}
    inst = GpuClusterInstance.from_dict(d)
    policy = PersistentPolicy(inst, objective, OPTS)
    policy.solve()
    jobs = {j["id"]: j for j in pool[:50]}  # the expected instance's records, in order
    nxt = 50
    for step in range(6):
        for _ in range(3):
            ids = list(jobs)
            if rng.random() < 0.5:
                gone = [ids[int(i)] for i in rng.choice(len(ids), 3, replace=False)]
                policy.remove_jobs(gone)
                for j in gone:
                    del jobs[j]
            else:
                new = pool[nxt : nxt + 2]
                nxt += 2
                policy.add_jobs(new)
                jobs.update((r["id"], r) for r in new)
        if step == 2 and objective == "max_min_fairness":
            bad = dict(pool[nxt], id="heavy", weight=1e12)
            with pytest.raises(InstanceError):
                policy.add_jobs([bad])
        assert policy.num_jobs == len(jobs)
        expected = GpuClusterInstance.from_dict({**d, "jobs": list(jobs.values())})
        got = policy.instance
        assert got.arrays.job_ids == expected.arrays.job_ids == [j.id for j in got.jobs]
        for name in ("thr", "scale", "weight", "steps", "workers", "allowed"):
            a, b = getattr(got.arrays, name), getattr(expected.arrays, name)
            assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True), name
        assert got.to_dict() == expected.to_dict()
        _cold_check(policy, policy.solve())


def test_job_names_after_removals_only_and_several_batches() -> None:
    """The ``job`` column passed on is what pandas infers from the ids when a round only
    removes jobs, and when it removes jobs and adds several batches."""
    import pandas as pd

    from hetopt.kinds.gpu_cluster import methods as M

    inst = generate(30, "k80=4,p100=4,v100=4", seed=5)
    extra = generate(6, "k80=4,p100=4,v100=4", seed=9).to_dict()["jobs"]
    policy = PersistentPolicy(inst, "max_min_fairness", OPTS)
    policy.solve()
    rounds = [
        ([0, 7], []),
        ([3], [extra[:2], extra[2:3]]),
        ([], [extra[3:5]]),
        ([1, 2, 4], [extra[5:]]),
    ]
    for step, (gone, batches) in enumerate(rounds):
        ids = policy.instance.arrays.job_ids
        policy.remove_jobs([ids[i] for i in gone])
        for b, batch in enumerate(batches):
            policy.add_jobs([dict(r, id=f"m{step}-{b}-{k}") for k, r in enumerate(batch)])
        warm = policy.solve()
        arr = policy.instance.arrays
        pd.testing.assert_extension_array_equal(M.job_names(arr), M._inferred(list(arr.job_ids)))
        assert warm.tables["jobs"]["job"].tolist() == list(arr.job_ids)
        _cold_check(policy, warm)


def test_rounds_write_the_ids_once() -> None:
    """The changed instance's arrays hold their ids once: ``job_id_objects`` (read-only)
    holds the id list's own strings, and so does the ``job`` column passed on; the
    verifier matches each round's tables by these objects (its fast path)."""
    from hetopt.kinds.gpu_cluster import methods as M
    from hetopt.kinds.gpu_cluster import verify as V

    inst = generate(40, "k80=4,p100=4,v100=4", seed=3)
    extra = generate(12, "k80=4,p100=4,v100=4", seed=8).to_dict()["jobs"]
    policy = PersistentPolicy(inst, "max_min_fairness", OPTS)
    policy.solve()
    for step in range(3):
        ids = policy.instance.arrays.job_ids
        policy.remove_jobs(ids[step::7])
        policy.add_jobs([dict(r, id=f"w{step}-{k}") for k, r in enumerate(extra[4 * step :][:4])])
        warm = policy.solve()
        arr = policy.instance.arrays
        held = V.job_id_objects(arr)
        assert not held.flags.writeable
        assert all(a is b for a, b in zip(held, arr.job_ids, strict=True))
        names = np.asarray(M.job_names(arr))
        assert all(a is b for a, b in zip(names, arr.job_ids, strict=True))
        alloc = warm.tables["allocation"]
        codes = V._pair_codes(arr, alloc["job"], alloc["worker_type"])
        assert codes is not None and warm.verification.ok
        _cold_check(policy, warm)


@pytest.mark.parametrize("symmetry", [True, False])
def test_makespan_work_ratio_is_checked_on_arrivals_and_updates(symmetry: bool) -> None:
    """As the cold solve: work ratios above ``MAX_WORK_RATIO`` are an ``InstanceError``
    naming the steps, before the live model changes (it raised IndexError: HiGHS refused
    the new columns unnoticed); tiny work within the limit solves and verifies."""
    inst = generate(30, "k80=4,p100=4,v100=4", seed=8)
    policy = PersistentPolicy(inst, "makespan", OPTS, symmetry=symmetry)
    ref = policy.solve()
    tiny = inst.jobs[0].model_dump(exclude_none=True) | {"id": "tiny", "steps_remaining": 1e-9}
    with pytest.raises(InstanceError, match="cannot honour work ratios") as got:
        policy.add_jobs([tiny])
    assert got.value.field == f"jobs[{len(inst.jobs)}].steps_remaining"
    with pytest.raises(InstanceError, match="cannot honour work ratios"):
        policy.update_jobs([inst.jobs[1].id], steps_remaining=[1e-9])
    again = policy.solve()  # nothing changed
    assert policy.num_jobs == len(inst.jobs) and again.objective_value == ref.objective_value
    policy.add_jobs([tiny | {"steps_remaining": 1e-4}])
    r = policy.solve()
    cold = hetopt.solve(policy.instance, "makespan", OPTS)
    assert r.status == Status.OPTIMAL and r.verification.ok, r.termination
    assert r.objective_value == pytest.approx(cold.objective_value, rel=1e-9)


def test_a_refused_highs_edit_is_a_solve_error() -> None:
    import highspy

    from hetopt.errors import SolveError
    from hetopt.kinds.gpu_cluster.persistent import _ok

    _ok(highspy.HighsStatus.kOk, "addCols")
    _ok(highspy.HighsStatus.kWarning, "addCols")
    with pytest.raises(SolveError, match="refused the live model's addRows"):
        _ok(highspy.HighsStatus.kError, "addRows")


def test_ctrl_c_in_a_round_raises_interrupted_and_the_next_round_solves(
    highs_log: Any,
) -> None:
    """Ctrl-C while a round's HiGHS run goes: ``Interrupted`` with the round's honest
    result, as ``hetopt.solve``; the next round solves (it was swallowed: the round said
    optimal, and every later round 'no_solution: interrupted before this solve')."""
    inst = generate(60, WORKERS, seed=4)
    policy = PersistentPolicy(inst, "max_min_fairness", OPTS)
    assert policy.solve().status == Status.OPTIMAL
    policy.update_workers({"k80": 9, "p100": 8, "v100": 8})
    highs_log.ctrl_c = True
    with pytest.raises(hetopt.errors.Interrupted) as caught:
        policy.solve()
    assert highs_log.sent
    stopped = caught.value.result
    assert stopped.status in (Status.FEASIBLE, Status.NO_SOLUTION)
    assert stopped.termination.lower().startswith("interrupted")
    if stopped.status == Status.FEASIBLE:
        assert stopped.verification.ok
    policy.update_workers({"k80": 8, "p100": 9, "v100": 8})
    _cold_check(policy, policy.solve())
