"""multicore: times far apart (a release of 1e11 s beside 1 s tasks) are an
``InstanceError`` naming the field, not a HiGHS "Solve error" (exit 1); within
:data:`~hetopt.kinds.multicore.goals.MAX_TIME_RATIO` they solve and verify."""

from __future__ import annotations

import json
from typing import Any

import pytest

import hetopt
from hetopt import InstanceError, Status
from hetopt.kinds.multicore.goals import MAX_TIME_RATIO

OPTS = hetopt.SolveOptions(threads=1, time_limit_s=60)


def _decima() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        hetopt.examples.path("multicore/decima_jobs.json").read_text()
    )
    return data


@pytest.mark.parametrize("release", [1e6, MAX_TIME_RATIO])
def test_times_within_the_limit_solve_and_verify(release: float) -> None:
    data = _decima()
    data["tasks"][3]["release_s"] = release  # its shortest duration is 1 s
    r = hetopt.solve(data, options=OPTS)
    assert r.status == Status.OPTIMAL and r.verification.ok, r.termination


def test_a_far_release_is_an_error_naming_it() -> None:
    data = _decima()
    data["tasks"][3]["release_s"] = 1e11  # before: "HiGHS run failed (Solve error)"
    with pytest.raises(InstanceError, match="cannot honour spans above 1e\\+09") as got:
        hetopt.solve(data, options=OPTS)
    assert got.value.field == "tasks[3].release_s" and "\n" not in str(got.value)
    # validate (the kind's check) says the same, before any solve
    kind = hetopt.get_kind("multicore")
    inst = hetopt.instance_from_dict(data)
    with pytest.raises(InstanceError) as again:
        kind.check(inst, "weighted_completion", kind.parse_params({}))
    assert str(again.value) == str(got.value)


def test_a_tiny_duration_is_named_when_it_is_the_outlier() -> None:
    data = _decima()
    data["tasks"][2]["duration_s"] = dict.fromkeys(data["tasks"][2]["duration_s"], 1e-10)
    with pytest.raises(InstanceError, match="a duration of 1e-10 s") as got:
        hetopt.solve(data, options=OPTS)
    assert got.value.field is not None
    assert got.value.field.startswith("tasks[2].duration_s.")
