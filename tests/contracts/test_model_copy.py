"""``model_copy(update=...)`` of every kind's instance does not carry over what the
instance computed from its old fields (cached properties such as ``arrays``): the copy's
derived values equal those of the same data validated afresh, and a copy solves as
the fresh instance does."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import numpy as np
import pytest
from schema_mutations import shipped

import hetopt
from hetopt.errors import InstanceError
from hetopt.kinds import instance_from_dict


def _cached(cls: type) -> list[str]:
    return [
        name
        for klass in cls.__mro__
        for name, value in vars(klass).items()
        if isinstance(value, functools.cached_property)
    ]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
        )
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and all(
            _same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
        )
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return bool(a == b)


def _cases() -> list[Any]:
    """(data, field): every shipped instance with a list-of-records field of at least
    two records, once per such field (the copy drops its last or first record, or
    reverses them: whichever is still a valid instance)."""
    out = []
    for label, data in shipped():
        for field, value in data.items():
            if isinstance(value, list) and len(value) >= 2 and isinstance(value[0], dict):
                out.append(pytest.param(data, field, id=f"{label}:{field}"))
    return out


@pytest.mark.parametrize(("data", "field"), _cases())
def test_copy_with_other_records_recomputes_cached_values(data: Any, field: str) -> None:
    inst = instance_from_dict(data)
    names = _cached(type(inst))
    for name in names:
        getattr(inst, name)  # computed and cached on the original
    records = getattr(inst, field)
    for other in (records[:-1], records[1:], records[::-1]):
        copied = inst.model_copy(update={field: other})
        try:
            fresh = instance_from_dict(copied.to_dict())
            break
        except InstanceError:
            continue
    else:
        pytest.skip("without its first or last record, or reversed, it is not a valid instance")
    assert copied == fresh
    for name in names:
        assert _same(getattr(copied, name), getattr(fresh, name)), name
    if names:
        # and the original still has (and uses) its own
        again = instance_from_dict(data)
        for name in names:
            assert _same(getattr(inst, name), getattr(again, name)), name


def test_copy_of_a_gpu_cluster_solves_its_own_jobs() -> None:
    data = {
        "kind": "gpu_cluster",
        "workers": {"k80": 4, "v100": 4},
        "jobs": [
            {"id": "a", "throughput": {"k80": 1.0, "v100": 3.0}},
            {"id": "b", "throughput": {"k80": 2.0, "v100": 2.0}, "scale_factor": 4},
        ],
    }
    inst = instance_from_dict(data)
    hetopt.solve(inst, "max_min_fairness")  # builds and caches the arrays
    one = inst.model_copy(update={"jobs": inst.jobs[1:]})
    got = hetopt.solve(one, "max_min_fairness")
    want = hetopt.solve(instance_from_dict(one.to_dict()), "max_min_fairness")
    assert set(got.tables["allocation"]["job"]) == {"b"}
    assert got.objective_value == pytest.approx(want.objective_value, rel=1e-12)
    assert got.verification.ok


def test_copy_without_update_keeps_cached_values() -> None:
    inst = instance_from_dict(
        {
            "kind": "gpu_cluster",
            "workers": {"v100": 2},
            "jobs": [{"id": "a", "throughput": {"v100": 1.0}}],
        }
    )
    arrays = inst.arrays
    assert inst.model_copy().arrays is arrays
