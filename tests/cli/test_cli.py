"""The CLI contract: commands, JSON keys, exit codes, one-line errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hetopt.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "instances" / "gpu_cluster" / "example.json"


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.stdout, res.stderr


def test_solve_summary_and_json(tmp_path: Path) -> None:
    code, out, _ = run("solve", str(EXAMPLE))
    assert code == 0 and "optimal" in out and "verified" in out
    out_file = tmp_path / "r.json"
    code, out, _ = run(
        "solve", str(EXAMPLE), "--json", "--output", str(out_file), "--objective", "makespan"
    )
    assert code == 0
    d = json.loads(out)
    assert d == json.loads(out_file.read_text())
    assert {
        "kind",
        "objective",
        "status",
        "objective_value",
        "bound",
        "gap",
        "runtime_s",
        "tables",
    } <= set(d)
    assert d["kind"] == "gpu_cluster" and d["objective"] == "makespan" and d["status"] == "optimal"
    assert {"job", "worker_type", "fraction"} <= set(d["tables"]["allocation"][0])


def test_agnostic_flag_and_solver_flags() -> None:
    code, out, _ = run(
        "solve",
        str(EXAMPLE),
        "--agnostic",
        "--json",
        "--threads",
        "1",
        "--time-limit",
        "30",
        "--seed",
        "3",
    )
    assert code == 0 and json.loads(out)["info"]["agnostic"] is True


def test_options_file(tmp_path: Path) -> None:
    opts = tmp_path / "o.toml"
    opts.write_text('time_limit_s = 10\nthreads = 1\n[highs_options]\npresolve = "on"\n')
    assert run("solve", str(EXAMPLE), "--options", str(opts))[0] == 0
    opts.write_text("[highs_options]\nno_such_highs_option = 1\n")
    code, _, err = run("solve", str(EXAMPLE), "--options", str(opts))
    assert code == 2 and "no_such_highs_option" in err
    opts.write_text("tim_limit_s = 10\n")
    code, _, err = run("solve", str(EXAMPLE), "--options", str(opts))
    assert code == 2 and "tim_limit_s" in err


def test_validate_kinds_schema_export(tmp_path: Path) -> None:
    assert run("validate", str(EXAMPLE))[0] == 0
    code, out, _ = run("kinds")
    assert code == 0 and "gpu_cluster" in out and "max_min_fairness" in out and "makespan" in out
    code, out, _ = run("schema", "gpu_cluster")
    assert code == 0 and json.loads(out)["properties"]["jobs"]
    assert run("schema", "no_such_kind")[0] == 2
    for fmt in ("lp", "mps"):
        target = tmp_path / f"m.{fmt}"
        code, _, err = run("export", str(EXAMPLE), "--format", fmt, "-o", str(target))
        assert code == 0, err
        text = target.read_text()
        assert "alloc" in text and "c_capacity" in text


def test_generate_then_solve(tmp_path: Path) -> None:
    f = tmp_path / "g.json"
    code, _, _ = run(
        "generate",
        "gpu-cluster",
        "--jobs",
        "30",
        "--workers",
        "k80=4,v100=4",
        "--seed",
        "1",
        "-o",
        str(f),
    )
    assert code == 0
    assert run("solve", str(f))[0] == 0
    code, _, err = run("generate", "gpu-cluster", "--jobs", "3", "--workers", "tpu=4")
    assert code == 3 and "tpu" in err


def test_usage_errors_exit_2() -> None:
    assert run("solve", str(EXAMPLE), "--objective", "nope")[0] == 2
    assert run("solve", str(EXAMPLE), "--gap", "2")[0] == 2
    assert run("solve", str(EXAMPLE), "--param", "colour=3")[0] == 2
    assert run("frobnicate")[0] == 2


BASE = {
    "kind": "gpu_cluster",
    "workers": {"v100": 4, "k80": 4},
    "jobs": [{"id": "a", "throughput": {"v100": 2.0, "k80": 1.0}, "steps_remaining": 10.0}],
}


def _with(**changes: object) -> dict:
    d = json.loads(json.dumps(BASE))
    d.update(changes)
    return d


BAD_INSTANCES = {
    "duplicate_key": (
        '{"kind": "gpu_cluster", "workers": {"v100": 1}, "workers": {"v100": 2}, "jobs": []}',
        "'workers' appears twice",
    ),
    "huge_number": (json.dumps(_with(workers={"v100": 10**14})), "workers.v100: number too large"),
    "malformed": ("{not json", "not valid JSON"),
    "not_object": ("[1, 2]", "expected a JSON object"),
    "no_kind": (json.dumps({"workers": {}}), "kind"),
    "unknown_kind": (json.dumps(_with(kind="tpu_farm")), "unknown kind"),
    "wrong_type": (json.dumps(_with(workers={"v100": "four"})), "workers.v100"),
    "negative_thr": (
        json.dumps(_with(jobs=[{"id": "a", "throughput": {"v100": -1.0}}])),
        "jobs[0].throughput.v100",
    ),
    "nan_thr": (
        '{"kind": "gpu_cluster", "workers": {"v100": 1}, "jobs": [{"id": "a", "throughput": {"v100": NaN}}]}',
        "NaN",
    ),
    "unknown_type": (
        json.dumps(_with(jobs=[{"id": "a", "throughput": {"h100": 1.0}}])),
        "unknown worker type 'h100'",
    ),
    "duplicate_ids": (
        json.dumps(
            _with(
                jobs=[
                    {"id": "a", "throughput": {"v100": 1.0}},
                    {"id": "a", "throughput": {"v100": 1.0}},
                ]
            )
        ),
        "duplicate job id 'a'",
    ),
    "empty_jobs": (json.dumps(_with(jobs=[])), "jobs"),
    "unknown_field": (json.dumps(_with(jobz=[])), "jobz: unknown field"),
    "typo_in_job": (
        json.dumps(_with(jobs=[{"id": "a", "throughput": {"v100": 1.0}, "wieght": 2}])),
        "jobs[0].wieght",
    ),
    "cannot_run": (
        json.dumps(_with(jobs=[{"id": "a", "throughput": {"v100": 1.0}, "scale_factor": 8}])),
        "can run on no worker type",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_INSTANCES))
def test_bad_instances_exit_3_with_one_line(tmp_path: Path, name: str) -> None:
    text, expected = BAD_INSTANCES[name]
    f = tmp_path / f"{name}.json"
    f.write_text(text)
    for cmd in ("solve", "validate"):
        code, out, err = run(cmd, str(f))
        assert code == 3, (cmd, out, err)
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and "Traceback" not in err
        assert str(f) in lines[0] and expected in lines[0]


def test_missing_steps_for_makespan_names_field(tmp_path: Path) -> None:
    d = _with(jobs=[{"id": "a", "throughput": {"v100": 1.0}}])
    f = tmp_path / "nosteps.json"
    f.write_text(json.dumps(d))
    code, _, err = run("solve", str(f), "--objective", "makespan")
    assert code == 3 and "jobs[0].steps_remaining" in err and str(f) in err
    assert run("solve", str(f))[0] == 0  # max-min does not need steps


def test_unknown_objective_in_file_is_invalid_instance(tmp_path: Path) -> None:
    f = tmp_path / "obj.json"
    f.write_text(json.dumps(_with(objective="fastest")))
    code, _, err = run("solve", str(f))
    assert code == 3 and "fastest" in err and str(f) in err and "objective" in err
    # the --objective flag overrides the file's field; a bad flag is a usage error
    assert run("solve", str(f), "--objective", "makespan")[0] == 0
    assert run("solve", str(f), "--objective", "fastest")[0] == 2


def test_output_in_missing_directory_is_usage_error(tmp_path: Path) -> None:
    target = tmp_path / "nope" / "r.json"
    code, _, err = run("solve", str(EXAMPLE), "--output", str(target))
    assert code == 2 and str(target) in err and len(err.strip().splitlines()) == 1


def test_missing_file() -> None:
    code, _, err = run("solve", "/nonexistent/x.json")
    assert code == 3 and "no such file" in err


def test_verbose_shows_highs_log() -> None:
    code, _, err = run("solve", str(EXAMPLE), "-v")
    assert code == 0
    assert "Coefficient ranges" in err or "HiGHS" in err


def test_partitions_flag_runs_decomposition() -> None:
    gavel = EXAMPLE.parent / "gavel_100.json"
    code, out, _ = run("solve", str(gavel), "--json")
    mono = json.loads(out)["objective_value"]
    code, out, err = run("solve", str(gavel), "--partitions", "2", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["status"] in ("optimal", "feasible")
    assert d["verification"]["ok"]
    assert 0.9 * mono <= d["objective_value"] <= mono * (1 + 1e-6)
    assert run("solve", str(gavel), "--workers", "2")[0] == 2


def test_an_unknown_table_is_a_usage_error_before_solving(monkeypatch) -> None:
    """``--table`` names a table the kind declares: else exit 2 naming them, and no
    solve runs; a declared table prints as before."""
    import hetopt.api

    def no_solve(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("solved")

    with monkeypatch.context() as m:
        m.setattr(hetopt.api, "solve", no_solve)
        code, out, err = run("solve", str(EXAMPLE), "--table", "jobs", "--table", "nosuch")
    assert code == 2 and out == ""
    assert "--table 'nosuch'" in err and "allocation, jobs" in err
    code, out, _ = run("solve", str(EXAMPLE), "--table", "jobs")
    assert code == 0 and "\njobs:\n" in out


def test_a_file_that_is_not_an_object_says_what_it_holds(tmp_path: Path) -> None:
    for text, said in (("null", "got null"), ("[1]", "got an array"), ("3", "got a number")):
        f = tmp_path / "x.json"
        f.write_text(text)
        code, _, err = run("validate", str(f))
        assert code == 3 and said in err, (text, err)


def test_export_refuses_a_format_its_file_name_contradicts(tmp_path: Path) -> None:
    code, _, err = run("export", str(EXAMPLE), "--format", "lp", "-o", str(tmp_path / "m.mps"))
    assert code == 2 and "name it .lp" in err and not (tmp_path / "m.mps").exists()
    code, _, _ = run("export", str(EXAMPLE), "--format", "mps", "-o", str(tmp_path / "m.mps"))
    assert code == 0 and "\nNAME " in (tmp_path / "m.mps").read_text()


def test_export_says_when_the_files_optimum_is_not_objective_value(tmp_path: Path) -> None:
    """The two documented exceptions say so on stderr; other exports say nothing."""
    agent = EXAMPLE.parents[1] / "agent_sessions" / "two_gpus.json"
    cases = [
        ((str(EXAMPLE), "--agnostic"), "agnostic_lp_value"),
        ((str(agent), "-O", "agent_fair_share"), "1 / (1 + slowdown)"),
        ((str(agent), "-O", "agent_fair_share", "-p", "migration=true"), "1 / (1 + slowdown)"),
        ((str(EXAMPLE),), None),
        ((str(agent),), None),
    ]
    for args, said in cases:
        code, _, err = run("export", *args, "--format", "lp", "-o", str(tmp_path / "m.lp"))
        assert code == 0, err
        if said is None:
            assert "warning" not in err, (args, err)
        else:
            assert "hetopt: warning:" in err and said in err, (args, err)


def test_plot_of_a_missing_file_is_exit_3_as_for_solve(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    for args in (("plot", str(missing), "-o", str(tmp_path / "p.png")), ("solve", str(missing))):
        code, _, err = run(*args)
        assert code == 3 and f"{missing}: no such file" in err, (args, err)


def test_simulate_generated_jobs_have_a_bound() -> None:
    from hetopt.console import MAX_GENERATED

    code, _, err = run("simulate", "--generate-jobs", str(MAX_GENERATED + 1))
    assert code == 2 and "--generate-jobs" in err and f"{MAX_GENERATED}" in err, err


def test_simulate_names_the_trace_file_or_the_options_that_drew_the_jobs() -> None:
    trace = EXAMPLE.parent / "traces" / "max_min_fairness.trace"
    none = "k80=0,p100=0,v100=0"
    code, _, err = run("simulate", str(trace), "--workers", none)
    assert code == 3 and err.startswith(f"hetopt: error: {trace}: line 1: job type"), err
    code, _, err = run("simulate", "--generate-jobs", "5", "--workers", none)
    assert code == 2 and "<trace>" not in err, err
    assert f"--generate-jobs 5 on --workers {none}: job 1: job type" in err


@pytest.mark.parametrize(
    "command, option",
    [
        ("gpu-cluster", "--jobs"),
        ("multi-resource", "--jobs"),
        ("multi-resource", "--servers"),
        ("client-selection", "--clients"),
        ("human-robot", "--tasks"),
        ("multicore", "--tasks"),
        ("agent-sessions", "--agents"),
        ("cpu-gpu", "--programs"),
        ("llm-serving", "--buckets"),
        ("pipeline-partition", "--nodes"),
        ("human-robot", "--locations"),
        ("pipeline-partition", "--layers"),
        ("pipeline-partition", "--micro-batches"),
    ],
)
def test_generate_sizes_have_a_bound(command: str, option: str) -> None:
    """A size past MAX_GENERATED is exit 2 naming the option, before drawing anything
    (``--jobs 100000000`` grew until memory ran out)."""
    from hetopt.console import MAX_GENERATED

    r = CliRunner().invoke(main, ["generate", command, option, str(MAX_GENERATED + 1)])
    assert r.exit_code == 2, r.output
    assert option in r.output and f"{MAX_GENERATED}" in r.output
