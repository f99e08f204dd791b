"""Every kind's instances validated with the magnitude cap inside pydantic-core
(:func:`hetopt.instance._capped_validator`) are judged exactly as by the model's own
validator, whose ``_reject_huge_numbers`` walks every value in Python: the same
instances accepted (equal), the same error (message, field path, file) for every
rejected one, huge numbers anywhere, several problems at once, numpy scalars. Records
of known keys validated by the twin that skips the unknown-key scan
(:func:`hetopt.instance._ignoring_validator`) are judged as by the capped validator."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from schema_mutations import _get, _leaves, mutations, shipped

import hetopt
import hetopt.instance as I
from hetopt.errors import InstanceError
from hetopt.kinds import get_kind, instance_from_dict


def _outcome(data: Any, source: str | None) -> tuple[str, Any]:
    try:
        inst = instance_from_dict(data, source=source)
    except InstanceError as exc:
        return "rejected", (exc.message, exc.field, exc.source)
    return "accepted", inst.to_dict()


def _both(monkeypatch: pytest.MonkeyPatch, data: Any, source: str | None = None) -> None:
    capped = _outcome(data, source)
    with monkeypatch.context() as m:
        m.setattr(I, "_capped_validator", lambda cls: None)
        walked = _outcome(data, source)
    assert capped == walked


def _models() -> list[type]:
    for name in hetopt.kind_names():
        get_kind(name).instance_model  # noqa: B018 - imports the kind's models
    out, todo = [], [I.InstanceBase]
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls.__module__.startswith("hetopt.kinds.") and cls.model_fields:
            out.append(cls)
    return out


def test_every_kind_is_capped_in_pydantic_core() -> None:
    models = _models()
    assert len(models) >= len(hetopt.kind_names())
    for model in models:
        v = I._capped_validator(model)
        assert v is not None, model
        # each record is validated by the copy's own (capped) schema, not by the
        # validator its class already has ("prebuilt")
        assert "Prebuilt" not in repr(v), model


def _huge_mutations() -> list[tuple[str, dict[str, Any]]]:
    """Every numeric leaf of every shipped instance (first records) made too large, one
    at a time and, for each instance, several at once and beside another problem."""
    out = []
    for label, data in shipped():
        paths = [p for p in _leaves(data) if p]
        nums = [
            p
            for p in paths
            if isinstance(_get(data, p), int | float) and not isinstance(_get(data, p), bool)
        ]
        for k, p in enumerate(nums):
            d = copy.deepcopy(data)
            old = _get(d, p)
            big: Any = [1e13, -1e13, 10**13, np.float64(2e12), np.int64(-(2**41)), 10**400][k % 6]
            if isinstance(old, int) and k % 2:
                big = 10**12 + 1
            _get(d, p[:-1])[p[-1]] = big
            out.append((f"{label}:{p}", d))
        if len(nums) >= 2:
            d = copy.deepcopy(data)
            for p in (nums[-1], nums[0]):
                _get(d, p[:-1])[p[-1]] = 1e15
            out.append((f"{label}:two", d))
            d = copy.deepcopy(d)
            d["zz_unknown"] = 1
            out.append((f"{label}:two+unknown", d))
            d = copy.deepcopy(data)
            _get(d, nums[-1][:-1])[nums[-1][-1]] = 1e13
            _get(d, nums[0][:-1])[nums[0][-1]] = "7"
            out.append((f"{label}:huge+type", d))
            d = copy.deepcopy(data)
            _get(d, nums[0][:-1])[nums[0][-1]] = float("inf")
            out.append((f"{label}:inf", d))
            d = copy.deepcopy(data)
            _get(d, nums[0][:-1])[nums[0][-1]] = 1e12
            out.append((f"{label}:at the cap", d))
        d = copy.deepcopy(data)
        d["zz_deep"] = nested = []
        for _ in range(80):
            nested.append([])
            nested = nested[0]
        out.append((f"{label}:deep", d))
        d = copy.deepcopy(data)
        d["zz_unknown"] = {"x": [1, 2e13]}
        out.append((f"{label}:huge in unknown", d))
    return out


HUGE = _huge_mutations()


@pytest.mark.parametrize("source", [None, "file.json"])
def test_huge_numbers_are_judged_as_by_the_python_walk(
    monkeypatch: pytest.MonkeyPatch, source: str | None
) -> None:
    assert len(HUGE) > 200
    for _label, data in HUGE:
        _both(monkeypatch, data, source)


def test_single_field_mutations_are_judged_as_by_the_python_walk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for m in mutations(seed=7, per_instance=40):
        _both(monkeypatch, m.data)


def test_shipped_instances_and_numpy_scalars_are_accepted_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for _label, data in shipped():
        _both(monkeypatch, data)
        d = copy.deepcopy(data)
        for p in [p for p in _leaves(d) if p]:
            v = _get(d, p)
            if isinstance(v, float):
                _get(d, p[:-1])[p[-1]] = np.float64(v)
            elif isinstance(v, int) and not isinstance(v, bool):
                _get(d, p[:-1])[p[-1]] = np.int64(v)
        _both(monkeypatch, d)


def test_every_kind_with_records_has_an_ignoring_twin() -> None:
    twins = 0
    for model in _models():
        got = I._ignoring_validator(model)
        records = model._record_fields()
        if not records:
            assert got is None, model
            continue
        assert got is not None, model
        assert "Prebuilt" not in repr(got[0]), model
        for name, rec in records.items():  # all but records with aliases (their keys)
            aliased = any(f.validation_alias for f in rec.model_fields.values())
            assert (name in got[1]) == (not aliased), (model, name)
            if name in got[1]:
                assert got[1][name] == set(rec.model_fields), (model, name)
        twins += 1
    assert twins >= 5


def _direct(validator: Any, data: Any) -> tuple[str, Any]:
    try:
        return "accepted", validator.validate_python(data).to_dict()
    except Exception as exc:  # compared, not handled
        if isinstance(exc, I.ValidationError):
            return "rejected", [(e["type"], e["loc"], e["msg"]) for e in exc.errors()]
        return type(exc).__name__, str(exc)


def test_single_field_mutations_are_judged_alike_by_the_ignoring_twin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seeded single-field mutations of every shipped instance (values replaced, fields
    deleted, unknown fields added in records and elsewhere) and the shipped instances
    themselves: the same outcome through ``from_dict`` with and without the twin, and
    where the twin applies, the same pydantic errors from both validators."""
    cases = [data for _label, data in shipped()]
    cases += [m.data for m in mutations(seed=11, per_instance=60)]
    eligible = unknown_in_records = 0
    for data in cases:
        with_twin = _outcome(data, None)
        with monkeypatch.context() as m:
            m.setattr(I, "_ignoring_validator", lambda cls: None)
            assert with_twin == _outcome(data, None), data
        kind = data.get("kind")
        if not isinstance(kind, str) or kind not in hetopt.kind_names():
            continue
        model = get_kind(kind).instance_model
        got = I._ignoring_validator(model)
        if got is None or I._capped_validator(model) is None:
            continue
        if I._records_known(data, got[1]):
            eligible += 1
            assert _direct(got[0], data) == _direct(I._capped_validator(model), data), data
        elif with_twin[0] == "rejected" and "unknown field" in with_twin[1][0]:
            unknown_in_records += 1
    assert eligible > 300 and unknown_in_records > 10, (eligible, unknown_in_records)
