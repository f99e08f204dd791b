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


def test_unknown_kind_is_a_usage_error_and_still_a_key_error() -> None:
    import hetopt
    from hetopt.errors import UnknownKindError

    with pytest.raises(UnknownKindError) as got:
        hetopt.get_kind("nosuch")
    assert isinstance(got.value, hetopt.UsageError) and isinstance(got.value, KeyError)
    assert str(got.value).startswith("unknown kind 'nosuch'; expected one of: gpu_cluster")


def test_an_example_outside_the_examples_names_the_kinds_only() -> None:
    import hetopt

    for name in ("../x.json", "../../etc/passwd", "nosuch/x.json"):
        with pytest.raises(FileNotFoundError) as got:
            hetopt.examples.path(name)
        msg = str(got.value)
        assert "; kinds: " in msg and "gpu_cluster" in msg and len(msg) < 300, msg
    with pytest.raises(FileNotFoundError, match=r"gpu_cluster/ has: .*gpu_cluster/example\.json"):
        hetopt.examples.path("gpu_cluster/nosuch.json")


def test_export_format_errors_are_usage_errors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import hetopt

    example = hetopt.examples.path("gpu_cluster/example.json")
    with pytest.raises(hetopt.UsageError, match="format must be 'lp' or 'mps', got 'gms'"):
        hetopt.export_model(example, tmp_path / "m.gms")
    with pytest.raises(hetopt.UsageError, match=r"name it \.mps"):
        hetopt.export_model(example, tmp_path / "m.lp", "mps")
    assert hetopt.export_model(example, tmp_path / "m.lp").read_text().startswith("\\*")


def test_a_kinds_sub_modules_are_attributes_of_its_package() -> None:
    import hetopt.kinds.gpu_cluster as g

    assert g.rounds.__name__ == "hetopt.kinds.gpu_cluster.rounds"
    assert g.simulate.__name__ == "hetopt.kinds.gpu_cluster.simulate"
    for missing in ("nosuch", "_private"):
        with pytest.raises(AttributeError, match=missing):
            getattr(g, missing)
