"""``gpu_cluster`` job records validated by the twin that skips pydantic's unknown-key
scan (:func:`hetopt.instance._ignoring_validator`, used when every job is a plain dict
of known keys) give today's instance, and every other input today's error: an unknown
key in any job, a job that is not a dict, unknown keys in a nested ``elastic``."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import hetopt.instance as I
from hetopt import InstanceError
from hetopt.kinds.gpu_cluster import GpuClusterInstance, generate
from hetopt.kinds.gpu_cluster.data import GpuJob

UNKNOWN = "unknown field (check the spelling; unknown fields are not ignored)"


def _outcome(data: dict[str, Any]) -> tuple[str, Any]:
    try:
        inst = GpuClusterInstance.from_dict(data)
    except InstanceError as exc:
        return "error", (exc.field, exc.message)
    arrays = inst.arrays
    return "ok", (inst.to_dict(), arrays.thr.tobytes(), arrays.steps.tobytes())


def _judged_as_today(data: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> tuple[str, Any]:
    got = _outcome(data)
    with monkeypatch.context() as m:
        m.setattr(I, "_ignoring_validator", lambda cls: None)
        assert _outcome(data) == got
    return got


def test_unknown_keys_in_any_job_keep_todays_error(monkeypatch: pytest.MonkeyPatch) -> None:
    base = generate(40, "k80=8,v100=8", seed=3).to_dict()
    assert I._records_known(base, {"jobs": frozenset(GpuJob.model_fields)})
    assert _judged_as_today(base, monkeypatch)[0] == "ok"
    for i in (0, 17, 39):
        data = copy.deepcopy(base)
        data["jobs"][i]["throughput_typo"] = 1.0
        assert _judged_as_today(data, monkeypatch) == (
            "error",
            (f"jobs[{i}].throughput_typo", UNKNOWN),
        )
        data["jobs"][0]["weight"] = -1.0  # an earlier problem as well: the count of others
        field, message = _judged_as_today(data, monkeypatch)[1]
        assert field == "jobs[0].weight" and message.endswith("(and 1 more problem)")


def test_odd_jobs_keep_todays_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    base = generate(10, "k80=8,v100=8", seed=4).to_dict()
    as_object = copy.deepcopy(base)
    as_object["jobs"][5] = GpuJob(**as_object["jobs"][5])
    assert _judged_as_today(as_object, monkeypatch)[0] == "ok"
    not_a_dict = copy.deepcopy(base)
    not_a_dict["jobs"][5] = ["id", "x"]
    assert _judged_as_today(not_a_dict, monkeypatch)[1][0] == "jobs[5]"
    elastic = {
        "kind": "gpu_cluster",
        "workers": {"v100": 8},
        "jobs": [{"id": "e", "elastic": {"workers": [1, 2], "throughput": {"v100": [1.0, 1.8]}}}],
    }
    assert _judged_as_today(elastic, monkeypatch)[0] == "ok"
    elastic["jobs"][0]["elastic"]["zz"] = 1
    assert _judged_as_today(elastic, monkeypatch) == ("error", ("jobs[0].elastic.zz", UNKNOWN))


def test_current_workers_and_elastic_are_checked_when_a_job_names_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the plain-jobs check reads elastic and current_workers only when some job record
    # names them (hetopt.instance.record_keys): named in one job of many, they count
    base = generate(30, "k80=8,v100=8", seed=5).to_dict()
    data = copy.deepcopy(base)
    data["jobs"][7]["current_workers"] = data["jobs"][7].get("scale_factor", 1) + 1
    field, message = _judged_as_today(data, monkeypatch)[1]
    assert field == "jobs[7].current_workers" and message.startswith("a job that is not elastic")
    data["jobs"][7]["current_workers"] = data["jobs"][7].get("scale_factor", 1)
    assert _judged_as_today(data, monkeypatch)[0] == "ok"
    mixed = copy.deepcopy(base)
    mixed["jobs"][20] = {
        "id": "e",
        "elastic": {"workers": [1, 2], "throughput": {"v100": [1.0, 1.8]}},
    }
    assert _judged_as_today(mixed, monkeypatch)[0] == "ok"
    assert GpuClusterInstance.from_dict(mixed).has_elastic
    assert not GpuClusterInstance.from_dict(base).has_elastic
