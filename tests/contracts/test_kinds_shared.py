"""The pieces in ``hetopt.kinds._shared`` and ``hetopt.cli.emit_instance`` on their own.

The kinds that use them (multicore, cpu_gpu, multi_resource, human_robot,
client_selection) test them again through their models, instances and CLIs.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pyomo.environ as pyo
import pytest

import hetopt
from hetopt import SolveOptions, Status
from hetopt.cli import emit_instance
from hetopt.highs import solve_pyomo
from hetopt.kinds._shared.assignment import add_unrelated_assignment
from hetopt.kinds._shared.validation import id_positions, note_id


def _solve_block(times: np.ndarray, fractional: bool | np.ndarray) -> float:
    """Minimum makespan of the shared block alone (times in seconds, inf = not eligible)."""
    job, mach = np.nonzero(np.isfinite(times))
    m = pyo.ConcreteModel()
    add_unrelated_assignment(
        m, job, mach, times[job, mach], times.shape[0], times.shape[1], fractional=fractional
    )
    m.obj = pyo.Objective(expr=m.makespan)
    _, raw, _ = solve_pyomo(m, SolveOptions(threads=1))
    assert raw.status == Status.OPTIMAL
    assert raw.objective is not None
    return raw.objective


def _brute_force(times: np.ndarray) -> float:
    n, k = times.shape
    best = np.inf
    for choice in itertools.product(range(k), repeat=n):
        busy = np.zeros(k)
        for j, i in enumerate(choice):
            busy[i] += times[j, i]
        best = min(best, busy.max())
    return float(best)


@pytest.mark.parametrize("seed", range(8))
def test_block_matches_brute_force_on_tiny_r_cmax(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(2, 6)), int(rng.integers(2, 4))
    times = rng.integers(1, 20, size=(n, k)).astype(float)
    # some pairs not eligible, every job keeps one machine
    drop = rng.random((n, k)) < 0.25
    drop[np.arange(n), rng.integers(0, k, n)] = False
    times[drop] = np.inf
    assert _solve_block(times, False) == pytest.approx(_brute_force(times), rel=1e-9)


def test_block_divisible_job_closed_form() -> None:
    # one divisible job on two machines: C* = t1 t2 / (t1 + t2)
    t1, t2 = 8.0, 2.0
    got = _solve_block(np.array([[t1, t2]]), np.array([True, True]))
    assert got == pytest.approx(t1 * t2 / (t1 + t2), rel=1e-9)
    # indivisible: the faster machine
    assert _solve_block(np.array([[t1, t2]]), False) == pytest.approx(t2)


def test_block_component_names_are_parameters() -> None:
    m = pyo.ConcreteModel()
    x, mk = add_unrelated_assignment(
        m,
        np.array([0, 0]),
        np.array([0, 1]),
        np.array([1.0, 2.0]),
        1,
        2,
        pair_set="ASSIGNABLE",
        share="share",
        load_rows="c_load",
    )
    assert x is m.share and mk is m.makespan
    assert len(m.ASSIGNABLE) == 2 and len(m.c_assign) == 1 and len(m.c_load) == 2
    assert not hasattr(m, "assign") and not hasattr(m, "c_busy")


def test_note_id_and_id_positions() -> None:
    class Item:
        def __init__(self, ident: str) -> None:
            self.id = ident

    assert id_positions([Item("a"), Item("b")], "jobs", "job") == {"a": 0, "b": 1}
    with pytest.raises(ValueError, match=r"duplicate job id 'a' \(also jobs\[0\]\)"):
        id_positions([Item("a"), Item("b"), Item("a")], "jobs", "job")
    seen: dict[str, int] = {}
    note_id(seen, "tasks", "task", 0, "t")
    with pytest.raises(ValueError, match=r"tasks\[1\]\.id"):
        note_id(seen, "tasks", "task", 1, "t")


def test_duplicate_id_reaches_user_as_instance_error() -> None:
    doc = {
        "kind": "cpu_gpu",
        "devices": [{"id": "cpu0", "type": "cpu"}, {"id": "cpu0", "type": "gpu"}],
        "programs": [{"id": "p", "duration_s": {"cpu": 1.0}}],
    }
    with pytest.raises(hetopt.InstanceError) as exc:
        hetopt.instance_from_dict(doc)
    assert "devices[1].id" in str(exc.value)
    assert "duplicate device id 'cpu0' (also devices[0])" in str(exc.value)


def test_emit_instance_stdout_and_file(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from hetopt.kinds.cpu_gpu.generate import generate

    inst = generate(3, 1, 1, 0, 0.3, 0, "makespan")
    emit_instance(inst, None, "unused")
    out, err = capsys.readouterr()
    assert json.loads(out) == inst.to_dict() and err == ""
    path = tmp_path / "i.json"
    emit_instance(inst, path, "3 programs")
    out, err = capsys.readouterr()
    assert out == "" and err.strip() == f"wrote {path} (3 programs)"
    assert path.read_text() == inst.to_json() + "\n"
    emit_instance('{"a": 1}', path, "text")
    assert path.read_text() == '{"a": 1}\n'
