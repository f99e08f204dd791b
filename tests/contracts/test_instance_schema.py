"""Instance schemas say what the validator enforces.

Every shipped instance is mutated one field at a time (seeded); whenever hetopt rejects
the mutated instance for a reason a JSON Schema can state (a type, a range, the 1e12
magnitude cap, an enum such as the objective names, a required or unknown field), the
published schema (``hetopt schema KIND``) must reject it too, and the schema never
rejects what hetopt accepts. Cross-field checks (unique ids, references between records,
quotas against group sizes, ...) cannot be written in a schema: they are counted, not
asserted.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jsonschema_subset import validator
from schema_mutations import hetopt_verdict, mutations

import hetopt
from hetopt.instance import MAX_ABS

ROOT = Path(__file__).resolve().parents[2]


def _numbers(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    out = []
    if isinstance(node, dict):
        if node.get("type") in ("number", "integer"):
            out.append((path, node))
        for k, v in node.items():
            out += _numbers(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _numbers(v, f"{path}/{i}")
    return out


@pytest.mark.parametrize("name", hetopt.kind_names())
def test_schema_states_the_cap_the_kind_and_the_objectives(name: str) -> None:
    kind = hetopt.get_kind(name)
    schema = kind.instance_model.model_json_schema()
    assert "kind" in schema["required"]
    assert schema["properties"]["kind"]["const"] == name
    if "objective" in schema["properties"]:
        (names,) = [a["enum"] for a in schema["properties"]["objective"]["anyOf"] if "enum" in a]
        assert names == kind.objective_names()
    nums = _numbers(schema)
    assert nums
    for path, node in nums:
        hi = node.get("maximum", node.get("exclusiveMaximum"))
        lo = node.get("minimum", node.get("exclusiveMinimum"))
        assert hi is not None and hi <= MAX_ABS, path
        assert lo is not None and lo >= -MAX_ABS, path


def _schema_accepts(data: dict[str, Any], validators: dict[str, Any]) -> bool:
    names = hetopt.kind_names()
    kind = data.get("kind")
    for name in names if kind not in names else [kind]:
        if name not in validators:
            validators[name] = validator(hetopt.get_kind(name).instance_model.model_json_schema())
        if validators[name](data):
            return True
    return False


def test_single_field_mutations_rejected_by_hetopt_are_rejected_by_the_schema() -> None:
    validators: dict[str, Any] = {}
    counts: collections.Counter[str] = collections.Counter()
    residual, too_strict = [], []
    for m in mutations(seed=20, per_instance=60):
        rejected, expressible, message = hetopt_verdict(m.data)
        accepted_by_schema = _schema_accepts(m.data, validators)
        if rejected and accepted_by_schema:
            counts["cross-field (no schema can say it)" if not expressible else "residual"] += 1
            if expressible:
                residual.append((m.label, m.path, m.change, message))
        elif not rejected and not accepted_by_schema:
            counts["schema too strict"] += 1
            too_strict.append((m.label, m.path, m.change))
        else:
            counts["agree"] += 1
    print(dict(counts))
    assert sum(counts.values()) > 1000
    assert not residual, residual[:10]
    assert not too_strict, too_strict[:10]


def test_numpy_integers_and_integral_floats_are_integers() -> None:
    data = json.loads((ROOT / "instances/client_selection/oort_testing.json").read_text())
    data["max_clients"] = np.int64(3)
    data["class_targets"] = {k: float(v) for k, v in data["class_targets"].items()}
    data["clients"][0]["samples"] = {
        k: np.int32(v) for k, v in data["clients"][0]["samples"].items()
    }
    data["clients"][1]["ready_s"] = np.float32(2.5)
    inst = hetopt.instance_from_dict(data)
    assert inst.max_clients == 3 and type(inst.max_clients) is int
    assert all(type(v) is int for v in inst.class_targets.values())
    assert all(type(v) is int for v in inst.clients[0].samples.values())
    assert inst.clients[1].ready_s == 2.5 and type(inst.clients[1].ready_s) is float
    assert hetopt.instance_from_dict(inst.to_dict()) == inst
    for bad, message in (
        (3.5, "max_clients: Input should be a valid integer, got 3.5"),
        (True, "max_clients: Input should be a valid integer, got True"),
        (np.bool_(True), "max_clients: Input should be a valid integer"),
        (np.int64(2**41), "max_clients: number too large"),
        ("3", "max_clients: Input should be a valid integer"),
    ):
        data["max_clients"] = bad
        with pytest.raises(hetopt.InstanceError, match=message.replace("(", r"\(")):
            hetopt.instance_from_dict(data)


def test_records_built_in_python_accept_numpy_integers() -> None:
    from hetopt.kinds.client_selection import Client
    from hetopt.kinds.multi_resource.data import Server

    c = Client(id="a", ready_s=np.int64(1), upload_s=np.float32(0.5), samples={"x": np.int8(2)})
    assert c.ready_s == 1.0 and c.samples == {"x": 2} and type(c.samples["x"]) is int
    s = Server(id="s", gpus=np.int64(8), cpus=np.int64(24), mem_gb=4.0)
    assert s.gpus == 8 and type(s.gpus) is int and type(s.cpus) is float
    with pytest.raises(ValueError, match="valid integer"):
        Server(id="s", gpus=np.float64(7.5), cpus=1.0, mem_gb=1.0)
