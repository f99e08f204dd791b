"""Instance loading from Python and files: YAML, dicts, objects, error paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import hetopt
from hetopt import InstanceError
from hetopt.kinds.gpu_cluster import GpuClusterInstance

DATA = {
    "kind": "gpu_cluster",
    "workers": {"v100": 2},
    "jobs": [{"id": "a", "throughput": {"v100": 3.0}, "steps_remaining": 30.0}],
}


def test_yaml_and_json_and_dict_and_object_agree(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml")
    fy = tmp_path / "i.yaml"
    fy.write_text(yaml.safe_dump(DATA))
    fj = tmp_path / "i.json"
    fj.write_text(json.dumps(DATA))
    values = {
        hetopt.solve(x, "makespan").objective_value
        for x in (fy, fj, str(fj), DATA, GpuClusterInstance.from_dict(DATA))
    }
    assert values == {10.0}


def test_python_construction_errors_name_the_field() -> None:
    with pytest.raises(InstanceError, match=r"jobs\[0\]\.throughput\.v100"):
        GpuClusterInstance(workers={"v100": 1}, jobs=[{"id": "a", "throughput": {"v100": -2.0}}])
    with pytest.raises(InstanceError, match="duplicate job id"):
        hetopt.instance_from_dict({**DATA, "jobs": DATA["jobs"] * 2})
    with pytest.raises(ValueError):  # InstanceError is also a ValueError
        hetopt.instance_from_dict({"kind": "nope"})


def test_instances_are_immutable_and_round_trip() -> None:
    inst = GpuClusterInstance.from_dict(DATA)
    with pytest.raises(Exception):  # noqa: B017 - pydantic's frozen error
        inst.workers = {}  # type: ignore[misc]
    assert GpuClusterInstance.from_dict(inst.to_dict()) == inst


def test_bad_yaml_is_instance_error(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    f = tmp_path / "bad.yml"
    f.write_text("kind: [unclosed\n")
    with pytest.raises(InstanceError, match="not valid YAML"):
        hetopt.read_instance(f)


def test_cross_field_error_keeps_field_and_source() -> None:
    bad = {**DATA, "jobs": [{"id": "a", "throughput": {"h100": 1.0}}]}
    with pytest.raises(InstanceError) as info:
        hetopt.instance_from_dict(bad, source="f.json")
    assert info.value.field == "jobs[0].throughput.h100"
    assert info.value.source == "f.json"
