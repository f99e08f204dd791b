"""A large instance given as plain records is validated beside HiGHS (hetopt.deferred):
the same answers, the same errors, and HiGHS stopped when the input is invalid.

``SPECULATE_MIN_PAIRS`` is lowered here so that small instances take the deferred path;
every test that relies on it checks that they did (``spied.speculated``)."""

from __future__ import annotations

import copy
import json
import logging
import pickle
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import hetopt
from hetopt import api, deferred
from hetopt import highs as H
from hetopt.errors import InstanceError, Interrupted, SolveError
from hetopt.kinds import instance_from_dict
from hetopt.kinds.gpu_cluster import data as D
from hetopt.options import SolveOptions

TYPES = ("k80", "p100", "v100")
OPTS = SolveOptions(threads=1)


def cluster(n: int, seed: int, types: tuple[str, ...] = TYPES) -> dict[str, Any]:
    """A random time-sharing cluster as an instance file holds it (seeded)."""
    rng = np.random.default_rng(seed)
    jobs = []
    for i in range(n):
        thr = {t: float(round(rng.uniform(0.5, 50.0), 3)) for t in types}
        if rng.random() < 0.3:
            thr[types[int(rng.integers(len(types)))]] = 0.0
        job: dict[str, Any] = {
            "id": f"j{i}",
            "throughput": thr,
            "scale_factor": int(rng.choice([1, 1, 2, 4])),
            "weight": float(rng.choice([1.0, 2.0, 0.5])),
            "steps_remaining": float(round(rng.uniform(1e3, 1e5), 1)),
        }
        if rng.random() < 0.5:
            job["job_type"] = f"model-{int(rng.integers(5))}"
        jobs.append(job)
    workers = {t: int(rng.integers(4, 4 + n)) for t in types}
    return {"kind": "gpu_cluster", "workers": workers, "jobs": jobs}


class Spied:
    """How many solves were read provisionally, and where their validation ran."""

    def __init__(self) -> None:
        self.speculated = 0
        self.beside_highs = 0


@pytest.fixture
def spied(monkeypatch: pytest.MonkeyPatch) -> Spied:
    """Deferred validation for any size, counted."""
    monkeypatch.setattr(D, "SPECULATE_MIN_PAIRS", 1)
    out = Spied()
    speculate, run_due = D.speculate, deferred.run_due

    def counted(data: Any, pending: Any) -> Any:
        spec = speculate(data, pending)
        out.speculated += spec is not None
        return spec

    def beside() -> None:
        # the HiGHS wrapper's wait for its worker, which is inside the run then
        waiting = sys._getframe(1).f_code.co_name == "_run_waiting"
        if deferred.due() and waiting and threading.current_thread() is threading.main_thread():
            out.beside_highs += 1
        run_due()

    monkeypatch.setattr(D, "speculate", counted)
    monkeypatch.setattr(deferred, "run_due", beside)
    return out


def validated_first(data: Any, objective: str, **params: Any) -> hetopt.Result:
    """The solve as it ran before deferral: the instance validated, then solved."""
    return hetopt.solve(instance_from_dict(data), objective, OPTS, **params)


def same_result(a: hetopt.Result, b: hetopt.Result) -> None:
    assert a.status == b.status
    assert a.objective_value == b.objective_value  # the same LP: bit for bit
    assert a.tables.keys() == b.tables.keys()
    for name in a.tables:
        pd.testing.assert_frame_equal(a.tables[name], b.tables[name])
    assert a.verification is not None and a.verification.ok


# ------------------------------------------------------------------ the same answers
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("objective", ["max_min_fairness", "makespan", "max_total_throughput"])
def test_deferred_solves_equal_validated_ones(spied: Spied, objective: str, seed: int) -> None:
    data = cluster(30 + 17 * seed, seed)
    got = hetopt.solve(data, objective, OPTS)
    assert spied.speculated == 1
    same_result(got, validated_first(data, objective))
    # the result's instance is the validated one in all but identity
    assert type(got.instance.jobs) is list
    assert got.instance.model_dump() == instance_from_dict(data).model_dump()
    assert got.instance.model_fields_set == instance_from_dict(data).model_fields_set


def test_max_min_validates_beside_highs(spied: Spied) -> None:
    data = cluster(60, 7)
    same_result(
        hetopt.solve(data, "max_min_fairness", OPTS), validated_first(data, "max_min_fairness")
    )
    assert spied.speculated == 1
    assert spied.beside_highs == 1  # not before: while HiGHS's worker ran its first LP


def test_a_file_is_validated_beside_highs_too(spied: Spied, tmp_path: Path) -> None:
    data = cluster(40, 3)
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(data))
    same_result(hetopt.solve(path, "makespan", OPTS), validated_first(data, "makespan"))
    assert spied.speculated == 1


def test_what_is_not_read_provisionally_is_validated_first(spied: Spied) -> None:
    data = cluster(40, 5)
    del data["jobs"][3]["throughput"]["k80"]  # not every job names the types in order
    float_workers = cluster(40, 5)
    float_workers["workers"]["k80"] = 10.0  # (a whole float: the validation decides)
    for d in (data, copy.deepcopy(data) | {"colocation": None}, float_workers):
        same_result(
            hetopt.solve(d, "max_min_fairness", OPTS), validated_first(d, "max_min_fairness")
        )
    assert spied.speculated == 0


@pytest.mark.parametrize("objective", ["max_min_fairness_water_filling", "finish_time_fairness"])
def test_objectives_that_read_the_jobs_first_are_validated_first(
    spied: Spied, objective: str
) -> None:
    data = cluster(40, 8)
    same_result(hetopt.solve(data, objective, OPTS), validated_first(data, objective))
    assert spied.speculated == 0


def test_small_instances_are_validated_first() -> None:
    data = cluster(20, 1)
    assert D.speculate(data, deferred.Pending(lambda: None)) is None  # 60 pairs
    assert D.SPECULATE_MIN_PAIRS > 60


def test_other_threads_validate_first(spied: Spied) -> None:
    data = cluster(40, 2)
    box: list[Any] = []
    t = threading.Thread(target=lambda: box.append(hetopt.solve(data, "makespan", OPTS)))
    t.start()
    t.join()
    same_result(box[0], validated_first(data, "makespan"))
    assert spied.speculated == 0


# ------------------------------------------------------------------ the same errors
def _set(path: str, value: Any) -> Any:
    def change(d: dict[str, Any]) -> None:
        *where, last = path.split(".")
        node: Any = d
        for key in where:
            node = node[int(key)] if isinstance(node, list) else node[key]
        key: Any = int(last) if isinstance(node, list) else last
        if value is KeyError:
            del node[key]
        else:
            node[key] = value

    return change


MUTATIONS = {
    "negative weight": _set("jobs.5.weight", -1.0),
    "zero weight": _set("jobs.5.weight", 0.0),
    "weight as text": _set("jobs.5.weight", "2"),
    "weight as bool": _set("jobs.5.weight", True),
    "weight beyond the cap": _set("jobs.5.weight", 1e13),
    "negative throughput": _set("jobs.7.throughput.p100", -0.5),
    "throughput as text": _set("jobs.7.throughput.p100", "x"),
    "empty id": _set("jobs.3.id", ""),
    "id as int": _set("jobs.3.id", 5),
    "duplicate id": _set("jobs.9.id", "j2"),
    "no id": _set("jobs.4.id", KeyError),
    "scale factor 0": _set("jobs.4.scale_factor", 0),
    "scale factor as float": _set("jobs.4.scale_factor", 2.0),
    "runs nowhere": _set("jobs.4.scale_factor", 10**6),
    "negative steps": _set("jobs.6.steps_remaining", -3.0),
    "job_type as int": _set("jobs.8.job_type", 5),
    "negative deadline": _set("jobs.2.deadline_s", -1.0),
    "unknown job field": _set("jobs.2.colour", "red"),
    "negative workers": _set("workers.k80", -1),
    "unknown objective": _set("objective", "nope"),
    "objective as int": _set("objective", 5),
    "objective as list": _set("objective", [1]),
    "objective as dict": _set("objective", {}),
    "all zero throughput": _set("jobs.1.throughput", dict.fromkeys(TYPES, 0.0)),
    "throughput as list": _set("jobs.1.throughput", [1.0, 2.0, 3.0]),
    "job as list": _set("jobs.1", ["j1"]),
    "no jobs": _set("jobs", []),
}


def _error(fn: Any) -> str:
    with pytest.raises(InstanceError) as err:
        fn()
    return str(err.value)


def _outcome(data: Any, objective: str | None) -> Any:
    """The error's text, or the result's answer."""
    try:
        r = hetopt.solve(data, objective, OPTS)
    except InstanceError as exc:
        return str(exc)
    return r.status, r.objective_value, r.tables["allocation"].to_dict()


@pytest.mark.parametrize("objective", ["max_min_fairness", "makespan", None])
@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_invalid_input_raises_the_validations_error(
    spied: Spied, monkeypatch: pytest.MonkeyPatch, name: str, objective: str | None
) -> None:
    """Each single-field change: the deferred solve raises the error validating first
    raises (or, where the validation accepts the value, gives the same answer);
    ``None``: the instance's own objective."""
    data = cluster(30, 11)
    MUTATIONS[name](data)
    got = _outcome(data, objective)
    with monkeypatch.context() as m:
        m.setattr(D, "SPECULATE_MIN_PAIRS", 10**9)
        assert _outcome(data, objective) == got


VALUES = [-1, 0, 1, 3, 2.5, -0.5, 0.0, 1e13, float("inf"), "x", "", None, True, [], {}, [1.0]]


@pytest.mark.parametrize("seed", range(6))
def test_random_mutations_give_what_validating_first_gives(
    spied: Spied, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Seeded single-field mutations of any job field, workers entry or top-level field,
    to values of every type: the deferred solve's outcome (error text or answer) is the
    one validating first gives."""
    rng = np.random.default_rng(seed)
    base = cluster(25, 100 + seed)
    fields = [*sorted(D.GpuJob.model_fields), "throughput.k80", "throughput.v100"]
    for _ in range(12):
        data = copy.deepcopy(base)
        where = rng.integers(10)
        value = VALUES[int(rng.integers(len(VALUES)))]
        if where == 0:
            data["workers"][TYPES[int(rng.integers(3))]] = value
        elif where == 1:
            data[str(rng.choice(["objective", "kind", "loanable", "workers"]))] = value
        else:
            job = data["jobs"][int(rng.integers(25))]
            name = str(rng.choice(fields))
            if name.startswith("throughput."):
                job["throughput"][name.split(".")[1]] = value
            else:
                job[name] = value
        got = _outcome(data, None)
        with monkeypatch.context() as m:
            m.setattr(D, "SPECULATE_MIN_PAIRS", 10**9)
            assert _outcome(data, None) == got, (where, value)
    assert spied.speculated >= 4  # (most mutations are read provisionally)


def test_the_mutations_exercise_the_deferred_path(
    spied: Spied, recwarn: pytest.WarningsRecorder
) -> None:
    """Most invalid inputs are read provisionally and rejected by the validation
    beside HiGHS (not refused by the provisional reading), without a warning on the way."""
    errors = 0
    for change in MUTATIONS.values():
        data = cluster(30, 11)
        change(data)
        errors += isinstance(_outcome(data, "max_min_fairness"), str)
    assert errors >= len(MUTATIONS) - 3
    assert spied.speculated >= 8
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_a_files_error_names_the_file(spied: Spied, tmp_path: Path) -> None:
    data = cluster(30, 4)
    data["jobs"][12]["job_type"] = 2
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    message = _error(lambda: hetopt.solve(path, "max_min_fairness", OPTS))
    assert str(path) in message and "jobs[12].job_type" in message
    assert spied.speculated == 1


def test_an_invalid_value_comes_before_what_the_objective_lacks(spied: Spied) -> None:
    """Validated first, an id that is not a string is the error; a missing
    steps_remaining that makespan needs (checked on the provisional instance) must not
    take its place."""
    data = cluster(30, 6)
    del data["jobs"][2]["steps_remaining"]
    data["jobs"][20]["id"] = ""
    assert "jobs[20].id" in _error(lambda: hetopt.solve(data, "makespan", OPTS))
    data["jobs"][20]["id"] = "j20"
    assert "jobs[2].steps_remaining" in _error(lambda: hetopt.solve(data, "makespan", OPTS))
    assert spied.speculated == 2


def test_invalid_input_stops_highs(spied: Spied, monkeypatch: pytest.MonkeyPatch) -> None:
    """The validation fails while HiGHS's worker runs: HiGHS is stopped, not waited
    for (its run ends interrupted), and the validation's error is raised."""
    statuses: list[Any] = []
    run = H._run_waiting

    def watched(h: Any, direct: bool = False, hooks: Any = None) -> Any:
        try:
            return run(h, direct, hooks)
        finally:
            statuses.append(h.getModelStatus())

    def invalid(data: Any, source: str | None = None) -> Any:
        raise InstanceError("made up for the test", "jobs[0].weight")

    monkeypatch.setattr(H, "_run_waiting", watched)
    monkeypatch.setattr(api, "instance_from_dict", invalid)
    data = cluster(1500, 8, ("a", "b", "c", "d", "e", "f"))
    solve = lambda: hetopt.solve(data, "max_min_fairness", OPTS, lp_strategy="monolithic")  # noqa: E731
    assert "made up for the test" in _error(solve)
    assert statuses == [H._MS.kInterrupt]
    assert spied.beside_highs == 1


def test_ctrl_c_during_a_deferred_solve(spied: Spied, highs_log: Any) -> None:
    """Ctrl-C at HiGHS's first log line (the main thread is then waiting or validating):
    the solve stops as interrupted, its instance validated and complete."""
    highs_log.ctrl_c = True
    data = cluster(800, 9, ("a", "b", "c", "d", "e", "f"))
    with pytest.raises(Interrupted) as stopped:
        hetopt.solve(data, "max_min_fairness", OPTS, lp_strategy="monolithic")
    assert highs_log.sent
    result = stopped.value.result
    assert type(result.instance.jobs) is list and len(result.instance.jobs) == 800
    assert spied.speculated == 1
    # and the next solve is whole
    highs_log.ctrl_c = False
    same_result(
        hetopt.solve(data, "max_min_fairness", OPTS), validated_first(data, "max_min_fairness")
    )


# ------------------------------------------------------------------ a bug of the reading
def _differing(monkeypatch: pytest.MonkeyPatch) -> None:
    speculate = D.speculate

    def wrong(data: Any, pending: Any) -> Any:
        spec = speculate(data, pending)
        if spec is None:
            return None
        spec.instance.arrays.weight[0] += 1.0  # as if it had misread a weight

        def certify(validated: Any) -> None:
            spec.certify(validated)

        return deferred.Speculation(spec.instance, certify)

    monkeypatch.setattr(D, "speculate", wrong)


def test_a_misread_instance_is_an_error_under_the_test_suite(
    spied: Spied, monkeypatch: pytest.MonkeyPatch
) -> None:
    _differing(monkeypatch)
    monkeypatch.setenv("HETOPT_CHECK_CONTRACT", "1")
    with pytest.raises(SolveError, match="differs from the validated one"):
        hetopt.solve(cluster(40, 1), "max_min_fairness", OPTS)


def test_a_misread_instance_is_solved_again_validated(
    spied: Spied, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _differing(monkeypatch)
    monkeypatch.delenv("HETOPT_CHECK_CONTRACT", raising=False)
    data = cluster(40, 1)
    with caplog.at_level(logging.WARNING, "hetopt.kinds.gpu_cluster"):
        got = hetopt.solve(data, "max_min_fairness", OPTS)
    assert any("differs from the validated one" in r.getMessage() for r in caplog.records)
    same_result(got, validated_first(data, "max_min_fairness"))


# ------------------------------------------------------------------ pending records
def test_pending_records_validate_when_read() -> None:
    calls: list[int] = []

    class Validated:
        jobs = [1, 2, 3]

    def validate() -> Any:
        calls.append(1)
        return Validated()

    pending = deferred.Pending(validate)
    recs = deferred.PendingRecords(3, pending, "jobs")
    assert len(recs) == 3 and not calls  # the count is known
    assert list(recs) == [1, 2, 3] and calls == [1]
    assert recs[1] == 2 and 3 in recs and recs == [1, 2, 3] and recs.index(3) == 2
    assert pickle.loads(pickle.dumps(recs)) == [1, 2, 3]
    assert type(copy.deepcopy(recs)) is list and recs + [4] == [1, 2, 3, 4]  # noqa: RUF005
    assert not isinstance(recs, list)  # (C code reading a list's items goes through it)
    assert calls == [1]  # validated once


def test_a_failed_validation_is_the_verdict_every_time() -> None:
    def validate() -> Any:
        raise InstanceError("bad", "jobs[0].id")

    pending = deferred.Pending(validate)
    for _ in range(2):
        with pytest.raises(deferred.DeferredFailed) as failed:
            pending.run()
        assert isinstance(failed.value.error, InstanceError)
    assert not issubclass(deferred.DeferredFailed, Exception)  # no except Exception takes it


def test_ctrl_c_inside_the_validation_leaves_it_due() -> None:
    presses = [1]

    def validate() -> Any:
        if presses:
            presses.pop()
            raise KeyboardInterrupt
        return "validated"

    pending = deferred.Pending(validate)
    with pytest.raises(KeyboardInterrupt):
        pending.run()
    assert not pending.done
    assert pending.run() == "validated"
