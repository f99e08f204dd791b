"""Instance base classes: validation runs once per from_dict (issue 19)."""

from __future__ import annotations

import numpy as np
import pytest


# ------------------------------------------- validation runs once per from_dict
def test_from_dict_validates_once_and_keyword_construction_still_converts_errors() -> None:
    from pydantic import model_validator

    from hetopt import InstanceError
    from hetopt.instance import InstanceBase, RecordBase

    calls = {"instance": 0, "record": 0}

    class Rec(RecordBase):
        x: int

        @model_validator(mode="after")
        def _count(self) -> Rec:
            calls["record"] += 1
            return self

    class Inst(InstanceBase):
        kind: str = "t"
        items: list[Rec]

        @model_validator(mode="after")
        def _count(self) -> Inst:
            calls["instance"] += 1
            return self

    Inst.from_dict({"items": [{"x": 1}, {"x": 2}]})
    assert calls == {"instance": 1, "record": 2}  # was 2 and 4 (a custom __init__)
    with pytest.raises(InstanceError, match=r"items\[1\]\.x"):
        Inst.from_dict({"items": [{"x": 1}, {"x": "two"}]})
    with pytest.raises(InstanceError, match="x"):
        Inst(items=[{"x": "two"}])
    assert Rec(x=np.int64(3)).x == 3  # a record built alone is still lenient
