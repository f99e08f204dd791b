"""Hostile and careless input to the core (issue 21): one clear line every time, nothing
lost, nothing overwritten, Ctrl-C stops HiGHS and keeps its incumbent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import hetopt
from hetopt.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "instances" / "gpu_cluster" / "example.json"
MK01 = ROOT / "instances" / "fjsp" / "brandimarte" / "mk01.txt"


def run(*args: object) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, [str(a) for a in args])
    return r.exit_code, r.stdout, r.stderr


def one_line(err: str, *needles: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    for n in needles:
        assert n in lines[0], (n, lines[0])


# ------------------------------------------------------------------ files that are not instances
BOMB = "".join(
    f"{chr(97 + i)}: &{chr(97 + i)} [{', '.join([f'*{chr(96 + i)}'] * 9) if i else 'x, x'}]\n"
    for i in range(10)
)


@pytest.mark.parametrize(
    ("name", "content", "needle"),
    [
        ("dup.yaml", "kind: cpu_gpu\nprograms: []\nprograms: []\n", "appears twice"),
        ("dup2.yaml", "kind: cpu_gpu\na:\n  b: 1\n  b: 2\n", "lines 3 and 4"),
        ("bomb.yaml", BOMB + "kind: cpu_gpu\n", "aliases expand"),
        ("cycle.yaml", "kind: cpu_gpu\na: &a [*a]\n", "refers to itself"),
        ("deep.json", "[" * 1500 + "]" * 1500, "levels deep"),
        ("deep_flow.yaml", "[" * 100_000 + "]" * 100_000, "levels deep"),
        ("deep_block.yaml", "".join("  " * i + "a:\n" for i in range(3000)), "levels deep"),
        ("deep_field.json", '{"kind": "cpu_gpu", "x": ' + "[" * 80 + "]" * 80 + "}", "levels"),
        ("digits.json", '{"kind": "cpu_gpu", "x": ' + "9" * 5000 + "}", "digits"),
        ("big.json", '{"kind": "cpu_gpu", "x": ' + "9" * 400 + "}", "too large"),
        ("binary.json", b"\x00\x01\x02{}", "not a text file"),
        ("latin1.json", '{"kind": "cpu_gpu", "x": "caf\xe9"}'.encode("latin-1"), "UTF-8"),
    ],
)
def test_bad_files_are_one_line_errors(
    tmp_path: Path, name: str, content: object, needle: str
) -> None:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(str(content))
    t0 = time.perf_counter()
    code, _, err = run("validate", path)
    assert time.perf_counter() - t0 < 30  # a hang would be a bug (not a timing assertion)
    assert code == 3, err
    one_line(err, str(path), needle)


def test_dev_zero_is_not_read_into_memory() -> None:
    code, _, err = run("validate", "/dev/zero")
    assert code == 3
    one_line(err, "/dev/zero", "not a text file")


def test_a_directory_is_an_invalid_file_like_a_missing_one(tmp_path: Path) -> None:
    for cmd in ("validate", "solve"):
        code, _, err = run(cmd, tmp_path)
        assert code == 3, err
        one_line(err, str(tmp_path), "directory")
        code, _, err = run(cmd, tmp_path / "missing.json")
        assert code == 3, err
        one_line(err, "no such file")


def test_top_level_self_key_is_an_unknown_field(tmp_path: Path) -> None:
    data = json.loads(EXAMPLE.read_text())
    data["self"] = 1
    path = tmp_path / "self.json"
    path.write_text(json.dumps(data))
    code, _, err = run("validate", path)
    assert code == 3
    one_line(err, "self", "unknown field")
    with pytest.raises(hetopt.InstanceError, match="self"):
        hetopt.instance_from_dict(data)


def test_python_api_deep_and_huge_values_are_instance_errors() -> None:
    data = json.loads(EXAMPLE.read_text())
    deep: list = []
    cur = deep
    for _ in range(5000):
        cur.append([])
        cur = cur[0]
    with pytest.raises(hetopt.InstanceError, match="levels deep"):
        hetopt.solve({**data, "x": deep})
    data["jobs"][0]["weight"] = 10**400
    with pytest.raises(hetopt.InstanceError, match=r"jobs\[0\]\.weight: number too large"):
        hetopt.solve(data)


def test_a_value_of_many_lines_is_named_by_its_type_in_one_line() -> None:
    """A pandas Series given for a list of records: its repr took several lines of the
    message (``got 0    0.0\\n1    1.0 ...``)."""
    import numpy as np
    import pandas as pd

    data = {"kind": "client_selection", "round_deadline_s": 300}
    for value, shown in (
        (pd.Series(np.arange(1000.0)), "got a pandas Series of 1000 values"),
        (np.ones((3, 3)), "got a numpy ndarray of 3 values"),
        (np.arange(5), "got array([0, 1, 2, 3, 4])"),  # (one line: shown as it is)
    ):
        with pytest.raises(hetopt.InstanceError) as caught:
            hetopt.solve({**data, "clients": value})
        one_line(str(caught.value), "clients: Input should be a valid list", shown)


# ------------------------------------------------------------------ silent fixes
def test_empty_objective_is_an_error_not_the_default(tmp_path: Path) -> None:
    data = json.loads(EXAMPLE.read_text())
    data["objective"] = ""
    path = tmp_path / "empty.json"
    path.write_text(json.dumps(data))
    for cmd in ("validate", "solve"):
        code, _, err = run(cmd, path)
        assert code == 3, err
        one_line(err, "objective", "empty objective")
    code, _, err = run("solve", EXAMPLE, "--objective", "")
    assert code == 2, err
    one_line(err, "objective")


@pytest.mark.parametrize("field", ["time_limit_s", "seed", "mip_rel_gap", "threads"])
def test_options_reject_booleans(tmp_path: Path, field: str) -> None:
    with pytest.raises(hetopt.OptionsError, match=field):
        hetopt.SolveOptions(**{field: True})
    path = tmp_path / "o.toml"
    path.write_text(f"{field} = true\n")
    code, _, err = run("solve", EXAMPLE, "--options", path)
    assert code == 2, err
    one_line(err, field)


@pytest.mark.parametrize(
    ("field", "given", "kept"),
    [
        ("threads", np.int64(1), 1),
        ("threads", 1.0, 1),
        ("seed", np.int32(7), 7),
        ("time_limit_s", np.int64(30), 30),
        ("time_limit_s", np.float64(2.5), 2.5),
        ("mip_rel_gap", np.float64(0.01), 0.01),
    ],
)
def test_options_take_numpy_numbers_as_plain_ones(field: str, given: object, kept: object) -> None:
    """``threads=np.int64(1)`` was refused ("must be a whole number") while
    ``time_limit_s=np.float64(5)`` passed and stayed a numpy scalar in the options."""
    value = given
    options = hetopt.SolveOptions(**{field: value})
    got = getattr(options, field)
    assert got == kept and type(got) is type(kept)
    assert options == hetopt.SolveOptions(**{field: kept})


@pytest.mark.parametrize(("field", "value"), [("threads", 1.5), ("seed", -1.0), ("threads", 0)])
def test_options_refuse_counts_that_are_not_whole(field: str, value: float) -> None:
    with pytest.raises(hetopt.OptionsError, match=f"{field} must be a whole number"):
        hetopt.SolveOptions(**{field: value})


def test_parameters_take_numpy_scalars_as_plain_values() -> None:
    """``symmetry=np.False_`` was refused ("must be true or false"); instance fields took
    numpy scalars already."""
    plain = hetopt.solve(EXAMPLE, symmetry=False)
    numpy_ = hetopt.solve(EXAMPLE, symmetry=np.False_)
    assert numpy_.params == plain.params and type(numpy_.params["symmetry"]) is bool
    assert numpy_.objective_value == plain.objective_value
    with pytest.raises(hetopt.UsageError, match="symmetry must be true or false, got 1"):
        hetopt.solve(EXAMPLE, symmetry=1)


def test_binary_options_file(tmp_path: Path) -> None:
    path = tmp_path / "o.toml"
    path.write_bytes(b"\x00\xff\xfe")
    code, _, err = run("solve", EXAMPLE, "--options", path)
    assert code == 2
    one_line(err, str(path), "not a text file")


def test_options_as_a_mapping_or_clearly_rejected() -> None:
    r = hetopt.solve(EXAMPLE, options={"threads": 1, "time_limit_s": 30})
    assert r.status == hetopt.Status.OPTIMAL
    with pytest.raises(hetopt.OptionsError, match="unknown option"):
        hetopt.solve(EXAMPLE, options={"thread": 1})
    with pytest.raises(hetopt.OptionsError, match="must be SolveOptions or a mapping"):
        hetopt.solve(EXAMPLE, options=[("threads", 1)])  # type: ignore[arg-type]


# ------------------------------------------------------------------ outputs
def test_output_over_the_input_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "in.json"
    text = EXAMPLE.read_text()
    path.write_text(text)
    for args in (("solve", path, "-o", path), ("export", path, "--format", "lp", "-o", path)):
        code, _, err = run(*args)
        assert code == 2, err
        one_line(err, "input file", "refusing")
        assert path.read_text() == text  # untouched
    opts = tmp_path / "o.toml"
    opts.write_text("threads = 1\n")
    code, _, err = run("solve", path, "--options", opts, "-o", opts)
    assert code == 2 and opts.read_text() == "threads = 1\n"


def test_outputs_are_written_whole(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    out.write_text("old")
    code, _, _ = run("solve", EXAMPLE, "-o", out)
    assert code == 0
    assert json.loads(out.read_text())["status"] == "optimal"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary file left


def test_full_disk_names_the_file() -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    code, _, err = run("solve", EXAMPLE, "-o", "/dev/full")
    assert code == 2, err
    one_line(err, "/dev/full", "No space left")


def test_unknown_bound_is_null_in_json() -> None:
    r = hetopt.Result(kind="x", objective="y", status=hetopt.Status.NO_SOLUTION, termination="t")
    d = json.loads(json.dumps({**r.to_dict(), "bound": r.to_dict()["bound"]}))
    assert d["bound"] is None
    r2 = type(r)(**{**r.__dict__, "bound": float("-inf"), "gap": float("inf")})
    assert r2.to_dict()["bound"] is None and r2.to_dict()["gap"] is None


def test_newline_in_a_value_stays_on_one_line(tmp_path: Path) -> None:
    code, _, err = run("solve", EXAMPLE, "-O", "max_min\nfairness")
    assert code == 2
    one_line(err, "\\n")


def test_too_many_threads_are_capped_with_a_warning() -> None:
    from hetopt.highs import available_cores

    code, _, err = run("solve", EXAMPLE, "--threads", "1000")
    assert code == 0, err
    one_line(err, "warning", f"{available_cores()} cores")


def test_a_closed_pipe_is_a_quiet_exit() -> None:
    cmd = [sys.executable, "-m", "hetopt.cli", "solve", str(EXAMPLE), "--table", "allocation"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # ``| head -1``
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert err == ""


# ------------------------------------------------------------------ Ctrl-C
@pytest.fixture(scope="module")
def mk01(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Brandimarte mk01 as a multicore MILP: proven optimal only after about a minute."""
    path = tmp_path_factory.mktemp("mk01") / "mk01.json"
    code, _, err = run("convert", "fjsp", MK01, "-o", path)
    assert code == 0, err
    return path


def test_ctrl_c_stops_highs_and_reports_the_incumbent(mk01: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    cmd = [sys.executable, "-m", "hetopt.cli", "solve", str(mk01), "--json", "-v", "-o", str(out)]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT
    )
    assert proc.stderr is not None
    for line in proc.stderr:  # the HiGHS log (-v): wait until branch and bound runs
        if "Nodes" in line or "Solving MIP" in line:
            break
    time.sleep(2)  # HiGHS has an incumbent by then (the list-schedule start at least)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "hetopt: interrupted"
    d = json.loads(stdout)
    assert d["status"] in ("feasible", "no_solution")
    assert d["termination"].lower().startswith("interrupted")
    if d["status"] == "feasible":
        assert d["verification"]["ok"] and d["gap"] is not None and d["bound"] is not None
    assert json.loads(out.read_text()) == d  # -o written, and whole


def test_python_api_raises_keyboard_interrupt_with_the_result(mk01: Path) -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals go to the main thread")
    timer = threading.Timer(4.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt) as caught:
            hetopt.solve(mk01, options=hetopt.SolveOptions(threads=1))
    finally:
        timer.cancel()
    assert isinstance(caught.value, hetopt.errors.Interrupted)
    res = caught.value.result
    assert res.status in (hetopt.Status.FEASIBLE, hetopt.Status.NO_SOLUTION)
    assert res.termination.lower().startswith("interrupted")
    # HiGHS has stopped and the library is usable again
    again = hetopt.solve(EXAMPLE)
    assert again.status == hetopt.Status.OPTIMAL


def test_json_with_verbose_keeps_stdout_pure_json() -> None:
    cmd = [sys.executable, "-m", "hetopt.cli", "solve", str(EXAMPLE), "--json", "-v"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["status"] == "optimal"  # nothing but the JSON
    assert "HiGHS" in proc.stderr  # the solver log went to stderr
