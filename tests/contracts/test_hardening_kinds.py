"""Hostile and careless input to the non-GPU kinds (issue 21): ``validate`` agrees with
``solve``, no silent fixes, every message names its field or line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import hetopt
from hetopt import InstanceError, UsageError
from hetopt.cli import main
from hetopt.formats.fjsp import parse_fjsp

ROOT = Path(__file__).resolve().parents[2]
INSTANCES = ROOT / "instances"
KINDS = ("cpu_gpu", "multicore", "multi_resource", "human_robot", "client_selection")
HR_SMALL = INSTANCES / "human_robot" / "small.json"


def run(*args: object) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, [str(a) for a in args])
    return r.exit_code, r.stdout, r.stderr


def one_line(err: str, *needles: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    for n in needles:
        assert n in lines[0], (n, lines[0])


def write(tmp_path: Path, data: dict, name: str = "inst.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(data))
    return p


def shipped() -> list[Path]:
    out = []
    for kind in KINDS:
        for p in sorted((INSTANCES / kind).glob("*.json")):
            data = json.loads(p.read_text())
            if isinstance(data, dict) and data.get("kind") == kind:
                out.append(p)
    return out


# ------------------------------------------------------------------ validate == solve
VERDICT = {0: "valid", 4: "valid", 5: "valid", 2: "usage", 3: "invalid"}
"""Exit code -> verdict class: solve's 0 (solved), 4 (infeasible) and 5 (no solution in
time) all say the instance is valid."""


def verdicts(path: Path, objective: str, *params: str) -> tuple[str, str, str, str]:
    extra = [a for p in params for a in ("-p", p)]
    vc, _, verr = run("validate", path, "--objective", objective, *extra)
    sc, _, serr = run(
        "solve", path, "--objective", objective, "--time-limit", "1", "--threads", "1", *extra
    )
    return VERDICT.get(vc, f"exit {vc}"), VERDICT.get(sc, f"exit {sc}"), verr, serr


def _cases() -> list[tuple[Path, str]]:
    return [
        (p, o)
        for p in shipped()
        for o in hetopt.get_kind(json.loads(p.read_text())["kind"]).objective_names()
    ]


@pytest.mark.parametrize(
    ("path", "objective"),
    [pytest.param(p, o, id=f"{p.parent.name}/{p.stem}-{o}") for p, o in _cases()],
)
def test_validate_agrees_with_solve_on_every_shipped_instance(path: Path, objective: str) -> None:
    """For every shipped instance of the non-GPU kinds and every objective, validate's
    verdict is solve's (client_selection's min_duration without class_targets was valid
    for validate and invalid for solve)."""
    v, s, verr, serr = verdicts(path, objective)
    assert v == s, (v, s, verr, serr)
    if v != "valid":
        one_line(verr)
        assert verr == serr


def test_there_are_shipped_instances_of_every_kind() -> None:
    kinds = {json.loads(p.read_text())["kind"] for p in shipped()}
    assert kinds == set(KINDS)


def _no_humans() -> dict:
    data = json.loads(HR_SMALL.read_text())
    data["agents"] = [{"id": "r1", "type": "robot"}, {"id": "r2", "type": "robot"}]
    for t in data["tasks"]:
        t["duration_s"] = {"robot": 5}
    return data


@pytest.mark.parametrize(
    ("data", "objective", "params", "verdict", "needle"),
    [
        pytest.param(_no_humans(), "max_human_workload", (), "invalid", "agents", id="no-human"),
        pytest.param(
            json.loads((INSTANCES / "client_selection" / "fedcs_small.json").read_text()),
            "min_duration",
            (),
            "invalid",
            "class_targets",
            id="no-class-targets",
        ),
        pytest.param(
            json.loads(HR_SMALL.read_text()),
            "makespan",
            ('fixed={"nope": ["h1", 0]}',),
            "usage",
            "fixed.nope",
            id="hr-fixed-unknown-task",
        ),
        pytest.param(
            json.loads(HR_SMALL.read_text()),
            "makespan",
            ('fixed={"inspect": ["r1", 0]}',),
            "usage",
            "cannot do task",
            id="hr-fixed-incapable-agent",
        ),
        pytest.param(
            json.loads((INSTANCES / "client_selection" / "fedcs_small.json").read_text()),
            "max_clients",
            ("method=lp_round",),
            "usage",
            "lp_round",
            id="cs-lp-round-count",
        ),
        pytest.param(
            json.loads((INSTANCES / "client_selection" / "oort_testing.json").read_text()),
            "min_duration",
            ("method=greedy",),
            "usage",
            "greedy",
            id="cs-greedy-testing",
        ),
        pytest.param(
            json.loads((INSTANCES / "multicore" / "big_little_dag.json").read_text()),
            "makespan",
            ("formulation=assignment",),
            "usage",
            "predecessors",
            id="mc-assignment-dag",
        ),
        pytest.param(
            json.loads((INSTANCES / "multicore" / "big_little_dag.json").read_text()),
            "pareto",
            ("relaxation=true",),
            "usage",
            "relaxation",
            id="mc-pareto-relaxation",
        ),
    ],
)
def test_validate_rejects_what_solve_rejects(
    tmp_path: Path, data: dict, objective: str, params: tuple[str, ...], verdict: str, needle: str
) -> None:
    path = write(tmp_path, data)
    v, s, verr, serr = verdicts(path, objective, *params)
    assert v == s == verdict, (v, s, verr, serr)
    one_line(verr, needle)
    one_line(serr, needle)
    if verdict == "invalid":
        assert str(path) in verr


def test_max_human_workload_without_a_human_names_agents_in_the_api() -> None:
    with pytest.raises(InstanceError) as exc:
        hetopt.solve(_no_humans(), "max_human_workload")
    assert exc.value.field == "agents"
    assert "type 'human'" in str(exc.value)


def test_fixed_agent_that_cannot_do_the_task_is_a_usage_error_before_solving() -> None:
    kind = hetopt.get_kind("human_robot")
    inst = hetopt.read_instance(HR_SMALL)
    params = kind.parse_params({"fixed": {"inspect": ["r1", 0.0]}})
    with pytest.raises(UsageError, match="cannot do task"):
        kind.check(inst, "makespan", params)


@pytest.mark.parametrize("kind", KINDS)
def test_kind_solve_with_an_unknown_objective_is_a_usage_error(kind: str) -> None:
    path = next(p for p in shipped() if p.parent.name == kind)
    k = hetopt.get_kind(kind)
    with pytest.raises(UsageError):
        k.solve(hetopt.read_instance(path), "no_such_objective")


# ------------------------------------------------------------------ silent fixes
def test_travel_self_loop_is_an_error_naming_the_field(tmp_path: Path) -> None:
    data = json.loads(HR_SMALL.read_text())
    data["travel_s"]["bench"]["bench"] = 4
    code, _, err = run("validate", write(tmp_path, data))
    assert code == 3
    one_line(err, "travel_s.bench.bench", "itself must be 0")


def test_travel_self_loop_of_zero_is_accepted() -> None:
    data = json.loads(HR_SMALL.read_text())
    data["travel_s"]["bench"]["bench"] = 0
    inst = hetopt.instance_from_dict(data)
    ref = hetopt.read_instance(HR_SMALL)
    assert (inst.arrays.travel == ref.arrays.travel).all()


# ------------------------------------------------------------------ the FJSP reader
@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("1 2\n1 2 1 5 1 7\n", "line 2: operation 1 lists machine 1 twice"),
        ("1 2\n1 1 1 5\n1 1 2 5\n", "line 3: line 1 states 1 jobs but more job lines follow"),
        ("2 2\n1 1 1 5\n\n1 1 2 5\n1 1 1 3\n", "line 5:"),
        ("1 2\n0\n", "line 2: a job needs at least 1 operation"),
        ("1 2\n-1\n", "line 2: a job needs at least 1 operation"),
        ("1 2\n2 1 1 5 1 7 4\n", "line 2: operation 2: machine 7 out of range"),
    ],
)
def test_fjsp_errors_name_the_line(text: str, needle: str) -> None:
    with pytest.raises(InstanceError) as exc:
        parse_fjsp(text, source="x.txt")
    assert needle in str(exc.value)
    assert "\n" not in str(exc.value)


def test_fjsp_trailing_blank_lines_are_fine() -> None:
    data = parse_fjsp("1 2\n1 2 1 5 2 7\n\n\n")
    assert data.jobs == (({0: 5, 1: 7},),)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"\x00\x01\x02", "not a text file"),
        (b"\xff\xfe1 1\n1 1 1 5\n", "not UTF-8"),
        (b"1 2\n1 2 1 5 1 7\n", "line 2"),
    ],
)
def test_convert_fjsp_bad_files_are_one_line_exit_3(
    tmp_path: Path, content: bytes, needle: str
) -> None:
    p = tmp_path / "bad.txt"
    p.write_bytes(content)
    code, out, err = run("convert", "fjsp", p)
    assert code == 3, (code, err)
    one_line(err, str(p), needle)
    assert out == ""


def test_convert_fjsp_directory_is_exit_3_like_a_missing_file(tmp_path: Path) -> None:
    code, _, err = run("convert", "fjsp", tmp_path)
    assert code == 3, err
    one_line(err, "is a directory")
    code, _, err = run("convert", "fjsp", tmp_path / "missing.txt")
    assert code == 3, err
    one_line(err, "no such file")


def test_convert_fjsp_refuses_to_overwrite_its_input(tmp_path: Path) -> None:
    src = ROOT / "instances" / "fjsp" / "kacem" / "k1.txt"
    p = tmp_path / "k1.txt"
    p.write_text(src.read_text())
    code, _, err = run("convert", "fjsp", p, "-o", p)
    assert code == 2
    one_line(err, "refusing to overwrite")
    assert p.read_text() == src.read_text()
    out = tmp_path / "k1.json"
    code, _, err = run("convert", "fjsp", p, "-o", out)
    assert code == 0, err
    assert json.loads(out.read_text())["kind"] == "multicore"
    assert not list(tmp_path.glob(".k1.json.*"))  # no temporary file left behind


def test_convert_fjsp_names_an_unwritable_output_before_reading(tmp_path: Path) -> None:
    src = ROOT / "instances" / "fjsp" / "kacem" / "k1.txt"
    code, _, err = run("convert", "fjsp", src, "-o", tmp_path / "no" / "dir" / "x.json")
    assert code == 2
    one_line(err, "does not exist")


def test_every_shipped_fjsp_file_still_reads() -> None:
    from hetopt.formats.fjsp import read_fjsp

    files = [p for p in (ROOT / "instances" / "fjsp").rglob("*.txt") if "LICENSE" not in p.name]
    assert len(files) >= 30
    for p in files:
        assert read_fjsp(p).num_operations > 0


# ------------------------------------------------------------------ the decomposition
def test_allocation_with_a_human_who_can_do_nothing_does_not_crash() -> None:
    """max_human_workload's human cap had a row ``0 <= cap`` (Pyomo refuses a trivial
    constraint: exit 1) for a human who can do no task."""
    data = json.loads(HR_SMALL.read_text())
    data["agents"].append({"id": "h9", "type": "human"})
    for t in data["tasks"]:  # what humans did, h1 does: h9 can do nothing
        if "human" in t["duration_s"]:
            t["duration_s"]["h1"] = t["duration_s"].pop("human")
    r = hetopt.solve(data, "max_human_workload", {"threads": 1}, method="decomposition")
    assert r.status in (hetopt.Status.OPTIMAL, hetopt.Status.FEASIBLE) and r.ok
    assert "h9" not in set(r.tables["schedule"]["agent"])
