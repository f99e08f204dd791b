"""The magnitude cap enforced by pydantic-core (:func:`hetopt.instance._capped_validator`):
used only where it is exact, the same errors as the Python walk, record classes left
as they were."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from pydantic import ConfigDict, Field, ValidationError, ValidationInfo, model_validator

import hetopt.instance as I
from hetopt.errors import InstanceError
from hetopt.instance import InstanceBase, RecordBase


class Rec(RecordBase):
    id: str
    size: Annotated[int, Field(ge=1)] = 1
    rate: Annotated[float, Field(gt=0, lt=5e12)] = 1.0
    shares: dict[str, float] = Field(default_factory=dict)


class Good(InstanceBase):
    kind: Literal["good"] = "good"
    recs: list[Rec]
    limit: float | int | None = None

    @model_validator(mode="after")
    def _ids(self) -> Good:
        if len({r.id for r in self.recs}) != len(self.recs):
            raise I.fail("recs", "duplicate id")
        return self


class WithAny(InstanceBase):
    kind: Literal["any"] = "any"
    extra: Any = None


class Lax(InstanceBase):
    model_config = ConfigDict(strict=False)
    kind: Literal["lax"] = "lax"
    x: float = 0.0


class LaxRecord(RecordBase):
    model_config = ConfigDict(strict=False)
    x: float


class WithLaxRecord(InstanceBase):
    kind: Literal["laxrec"] = "laxrec"
    recs: list[LaxRecord]


class InfRecord(RecordBase):
    model_config = ConfigDict(allow_inf_nan=True)
    x: float


class WithInfRecord(InstanceBase):
    kind: Literal["inf"] = "inf"
    recs: list[InfRecord]


class IgnoringRecord(RecordBase):
    model_config = ConfigDict(extra="ignore")
    x: float


class WithIgnoringRecord(InstanceBase):
    kind: Literal["ignore"] = "ignore"
    recs: list[IgnoringRecord]


class Before(InstanceBase):
    kind: Literal["before"] = "before"
    x: float = 0.0

    @model_validator(mode="before")
    @classmethod
    def _drop(cls, data: Any) -> Any:
        return {k: v for k, v in data.items() if k != "ignored"}


class Tree(RecordBase):
    children: list[Tree] = Field(default_factory=list)


class WithTree(InstanceBase):
    kind: Literal["tree"] = "tree"
    root: Tree


@pytest.mark.parametrize(
    "model", [WithAny, Lax, WithLaxRecord, WithInfRecord, WithIgnoringRecord, Before, WithTree]
)
def test_not_capped_where_a_number_could_pass_unchecked(model: type[InstanceBase]) -> None:
    assert I._capped_validator(model) is None


def test_uncapped_models_keep_the_python_walk() -> None:
    # a kind's own before-validator runs first: the walk sees what it returns
    assert Before.from_dict({"ignored": 1e13}).x == 0.0
    with pytest.raises(InstanceError, match=r"^x: number too large"):
        Before.from_dict({"x": 1e13})
    assert Lax.from_dict({"x": "1e13"}).x == 1e13  # a string is no number to the walk
    assert WithInfRecord.from_dict({"recs": [{"x": float("inf")}]}).recs[0].x == float("inf")
    with pytest.raises(InstanceError, match=r"^recs\[0\]\.y: number too large"):
        WithIgnoringRecord.from_dict({"recs": [{"x": 1.0, "y": 1e13}]})


def _walked(data: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> str:
    with monkeypatch.context() as m:
        m.setattr(I, "_capped_validator", lambda cls: None)
        with pytest.raises(InstanceError) as exc:
            Good.from_dict(data)
    return str(exc.value)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"recs": [{"id": "a", "size": 10**13}]}, "recs[0].size: number too large"),
        ({"recs": [{"id": "a", "rate": 2e12}]}, "recs[0].rate: number too large"),
        ({"recs": [{"id": "a", "shares": {"x": -1e13}}]}, "recs[0].shares.x: number too large"),
        ({"recs": [{"id": "a"}], "limit": 10**400}, "limit: number too large"),
        # the first in the data's order, not pydantic's, and alone (no "more problems")
        (
            {"limit": 1e13, "recs": [{"id": "a", "size": 0, "rate": 1e14}]},
            "limit: number too large",
        ),
        ({"recs": [{"id": "a", "size": 1e13}]}, "recs[0].size: number too large"),
        ({"recs": [{"id": "a"}], "zz": [[1e13]]}, "zz[0][0]: number too large"),
    ],
)
def test_huge_numbers_named_as_by_the_walk(
    data: dict[str, Any], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert I._capped_validator(Good) is not None
    with pytest.raises(InstanceError) as exc:
        Good.from_dict(data)
    assert str(exc.value).startswith(message), str(exc.value)
    assert str(exc.value) == _walked(data, monkeypatch)


def test_bounds_and_other_errors_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    ok = Good.from_dict({"recs": [{"id": "a", "size": 10**12, "rate": 1e12}], "limit": -1e12})
    assert ok.recs[0].size == 10**12 and ok.limit == -1e12
    for data in (
        {"recs": [{"id": "a", "size": 0}]},
        {"recs": [{"id": "a", "rate": float("inf")}]},
        {"recs": [{"id": "a"}, {"id": "a"}]},
        {"recs": [{"id": "a", "size": 2.5, "rate": -1}]},
    ):
        with pytest.raises(InstanceError) as exc:
            Good.from_dict(data)
        assert str(exc.value) == _walked(data, monkeypatch)


def test_record_classes_keep_their_own_validators() -> None:
    assert I._capped_validator(Good) is not None
    assert Rec.__pydantic_complete__ is True
    assert "__pydantic_complete__" in Rec.__dict__
    # a record built on its own is not an instance: no magnitude cap, as before
    assert Rec(id="a", size=10**13).size == 10**13


class Inner(RecordBase):
    a: int = 0


class Outer(RecordBase):
    id: str
    inner: Inner | None = None


class Solo(RecordBase):
    id: str


class WithOuter(InstanceBase):
    kind: Literal["outer"] = "outer"
    outers: list[Outer]
    single: Solo | None = None  # a record, but not in a list of records


class Aliased(RecordBase):
    x: float = Field(1.0, validation_alias="X")


class WithAliased(InstanceBase):
    kind: Literal["aliased"] = "aliased"
    recs: list[Aliased]


def test_ignoring_twin_ignores_only_the_records_own_unknown_keys() -> None:
    got = I._ignoring_validator(WithOuter)
    assert got is not None
    twin, keys = got
    assert keys == {"outers": frozenset({"id", "inner"})}
    assert "Prebuilt" not in repr(twin)
    assert twin.validate_python({"outers": [{"id": "a", "zz": 1}]}).outers[0].id == "a"
    for data in (
        {"outers": [{"id": "a", "inner": {"a": 1, "zz": 1}}]},  # nested models still forbid
        {"outers": [{"id": "a"}], "single": {"id": "b", "zz": 1}},
        {"outers": [{"id": "a"}], "zz": 1},  # and so does the instance
        {"outers": [{"id": "a", "inner": {"a": 10**13}}]},  # and the cap holds
    ):
        with pytest.raises(ValidationError):
            twin.validate_python(data)
    # the record classes keep their own validators (forbid)
    assert Outer.__pydantic_complete__ is True
    with pytest.raises(ValidationError):
        Outer(id="a", zz=1)  # type: ignore[call-arg]
    assert I._ignoring_validator(WithAliased) is None  # keys are not field names there


def test_records_known() -> None:
    keys = {"outers": frozenset({"id", "inner"})}
    known = I._records_known
    assert known({"outers": [{"id": "a"}, {"id": "b", "inner": None}]}, keys) == {
        "outers": frozenset({"id", "inner"})
    }
    assert known({"outers": []}, keys) and known({"outers": None}, keys) and known({}, keys)
    for records in (
        [{"id": "a"}, {"id": "b", "zz": 1}],
        [{"id": "a"}, {1: "b"}],
        [{"id": "a"}, ["id"]],
        [{"id": "a"}, Outer(id="b")],
        [{"id": "a"}, _Dict(id="b")],
        ({"id": "a"},),
        "id",
    ):
        assert not known({"outers": records}, keys), records


class _Dict(dict):  # type: ignore[type-arg]
    pass


def test_records_of_unknown_or_odd_keys_keep_todays_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    def outcome(data: dict[str, Any]) -> tuple[str, Any]:
        try:
            return "ok", WithOuter.from_dict(data).model_dump()
        except InstanceError as exc:
            return "error", str(exc)

    recs = [{"id": "a"}, {"id": "b", "inner": {"a": 1}}, {"id": "c"}]
    cases: list[tuple[dict[str, Any], str | None]] = [
        ({"outers": recs}, None),
        ({"outers": [*recs[:2], {"id": "c", "zz": 1}]}, "outers[2].zz: unknown field"),
        ({"outers": [{"id": "a", "zz": 1}, *recs[1:]]}, "outers[0].zz: unknown field"),
        ({"outers": [{"id": 7}, {"id": "b", "zz": 1}]}, "outers[0].id: Input should be"),
        ({"outers": [{"id": "a", 1: 2}]}, "outers[0][1]: Keys should be strings"),
        ({"outers": [{"id": "a"}, ["id"]]}, "outers[1]: Input should be"),
        ({"outers": [{"id": "a"}, Outer(id="b")]}, None),
        ({"outers": [_Dict(id="a"), {"id": "b", "zz": 1}]}, "outers[1].zz: unknown field"),
        ({"outers": ({"id": "a"},)}, "outers: Input should be a valid list"),
        ({"outers": recs, "zz": 1}, "zz: unknown field"),
        ({"outers": [{"id": "a", "inner": {"zz": 1}}]}, "outers[0].inner.zz: unknown field"),
        ({"outers": [{"id": "a", "inner": {"a": 1e13}}]}, "outers[0].inner.a: number too large"),
    ]
    for data, start in cases:
        got = outcome(data)
        with monkeypatch.context() as m:
            m.setattr(I, "_ignoring_validator", lambda cls: None)
            assert got == outcome(data), data
        if start is None:
            assert got[0] == "ok", got
        else:
            assert got[0] == "error" and got[1].startswith(start), (data, got)


class Seen(InstanceBase):
    kind: Literal["seen"] = "seen"
    recs: list[Rec]
    more: list[Solo] = Field(default_factory=list)

    @model_validator(mode="after")
    def _keep(self, info: ValidationInfo) -> Seen:
        self.__dict__["seen"] = (I.record_keys(info, "recs"), I.record_keys(info, "more"))
        return self


def test_record_keys_tell_the_keys_the_records_used() -> None:
    data: dict[str, Any] = {"recs": [{"id": "a"}, {"id": "b", "size": 2}]}
    assert Seen.from_dict(data).seen == (frozenset({"id", "size"}), frozenset())
    data["more"] = [{"id": "c"}]
    assert Seen.from_dict(data).seen == (frozenset({"id", "size"}), frozenset({"id"}))
    assert Seen.from_dict({"recs": []}).seen == (frozenset(), frozenset())
    # other records, or another way in: not known
    assert Seen.from_dict({"recs": [{"id": "a"}, Rec(id="b")]}).seen == (None, None)
    assert Seen.model_validate(data).seen == (None, None)
    assert Seen(recs=[Rec(id="a")]).seen == (None, None)
