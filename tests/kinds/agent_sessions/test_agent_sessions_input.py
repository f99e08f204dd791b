"""Bad input to ``agent_sessions`` is an InstanceError naming the field (CLI exit 3);
parameters, the generator and the CLI pieces of the kind."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import hetopt
from hetopt.cli import main
from hetopt.kinds.agent_sessions import KIND, AgentSessionsInstance
from hetopt.kinds.agent_sessions.generate import generate
from hetopt.kinds.agent_sessions.tokens import CONTEXT_QUANTILES

DIR = Path(__file__).resolve().parents[3] / "instances" / "agent_sessions"
BASE: dict[str, Any] = json.loads((DIR / "one_gpu_equal.json").read_text())


def _with(change) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    change(data)
    return data


def _pause(data: dict, s: int = 0, j: int = 0) -> dict:
    return data["sessions"][s]["pauses"][j]


BAD = {
    "end before start": (
        lambda d: _pause(d).update(start_s=5.0, end_s=4.0),
        "sessions[0].pauses[0].end_s",
    ),
    "zero-length pause": (
        lambda d: _pause(d).update(end_s=_pause(d)["start_s"]),
        "sessions[0].pauses[0].end_s",
    ),
    "overlapping pauses of a session": (
        lambda d: _pause(d, 0, 1).update(start_s=9.0),
        "sessions[0].pauses[1].start_s",
    ),
    "pauses out of order": (
        lambda d: d["sessions"][0]["pauses"].reverse(),
        "sessions[0].pauses[1].start_s",
    ),
    "negative context": (
        lambda d: _pause(d).update(context_tokens=-4096),
        "sessions[0].pauses[0].context_tokens",
    ),
    "fractional context": (
        lambda d: _pause(d).update(context_tokens=4096.5),
        "sessions[0].pauses[0].context_tokens",
    ),
    "negative start": (
        lambda d: _pause(d).update(start_s=-1.0),
        "sessions[0].pauses[0].start_s",
    ),
    "context bigger than every GPU": (
        lambda d: _pause(d, 1, 0).update(context_tokens=10001),
        "sessions[1].pauses[0].context_tokens",
    ),
    "negative work": (lambda d: d["sessions"][2].update(work_s=-1.0), "sessions[2].work_s"),
    "zero capacity": (
        lambda d: d["gpus"][0].update(kv_capacity_tokens=0),
        "gpus[0].kv_capacity_tokens",
    ),
    "zero prefill": (
        lambda d: d["gpus"][0].update(prefill_tokens_s=0.0),
        "gpus[0].prefill_tokens_s",
    ),
    "pin to an unknown GPU": (lambda d: d["sessions"][3].update(gpu="g9"), "sessions[3].gpu"),
    "pin to a GPU too small": (
        lambda d: (
            d["gpus"].append({"id": "tiny", "kv_capacity_tokens": 100, "prefill_tokens_s": 1.0}),
            d["sessions"][0].update(gpu="tiny"),
        ),
        "sessions[0].gpu",
    ),
    "active batch over capacity": (
        lambda d: d["gpus"][0].update(
            active_kv=[
                {"start_s": 0.0, "end_s": 5.0, "tokens": 6000},
                {"start_s": 4.0, "end_s": 6.0, "tokens": 6000},
            ]
        ),
        "gpus[0].active_kv",
    ),
    "active batch ends before it starts": (
        lambda d: d["gpus"][0].update(active_kv=[{"start_s": 3.0, "end_s": 1.0, "tokens": 10}]),
        "gpus[0].active_kv[0].end_s",
    ),
    "duplicate session id": (lambda d: d["sessions"][1].update(id="a0"), "sessions[1].id"),
    "duplicate GPU id": (
        lambda d: d["gpus"].append(dict(d["gpus"][0])),
        "gpus[1].id",
    ),
    "no GPUs": (lambda d: d.update(gpus=[]), "gpus"),
    "no sessions": (lambda d: d.update(sessions=[]), "sessions"),
    "unknown field": (lambda d: _pause(d).update(size=3), "sessions[0].pauses[0].size"),
    "unknown objective": (lambda d: d.update(objective="min_latency"), "objective"),
}


@pytest.mark.parametrize("label", sorted(BAD))
def test_bad_input_names_the_field(label: str) -> None:
    change, field = BAD[label]
    data = _with(change)
    with pytest.raises(hetopt.InstanceError) as info:
        hetopt.solve(data)
    assert info.value.field == field, (label, str(info.value))
    assert "\n" not in str(info.value)


def test_bad_file_is_exit_3_naming_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_with(BAD["end before start"][0])))
    for cmd in ("validate", "solve"):
        res = CliRunner().invoke(main, [cmd, str(bad)])
        assert res.exit_code == 3, res.output
        assert "sessions[0].pauses[0].end_s" in res.stderr and str(bad) in res.stderr


def test_touching_pauses_are_valid() -> None:
    """Pauses are half-open: one may start when the previous ends."""
    data = _with(lambda d: _pause(d, 0, 1).update(start_s=10.0))
    assert hetopt.solve(data).verification.ok


def test_session_without_pauses_and_pins() -> None:
    data = _with(lambda d: d["sessions"].append({"id": "idle", "work_s": 3.0, "gpu": "g0"}))
    r = hetopt.solve(data, "agent_fair_share")
    assert r.verification.ok
    share = dict(
        zip(r.tables["completion"]["session"], r.tables["completion"]["fair_share"], strict=True)
    )
    assert share["idle"] == 1.0


# --- parameters --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("params", "word"),
    [
        ({"method": "fast"}, "method"),
        ({"capacity_rows": "grid"}, "capacity_rows"),
        ({"symmetry_breaking": "maybe"}, "symmetry_breaking"),
        ({"no_such": 1}, "no_such"),
    ],
)
def test_bad_parameter_is_a_usage_error(params: dict, word: str) -> None:
    with pytest.raises(hetopt.UsageError, match=word):
        hetopt.solve(BASE, **params)


def test_cli_parameters() -> None:
    path = DIR / "one_gpu_equal.json"
    res = CliRunner().invoke(main, ["solve", str(path), "-p", "capacity_rows=clique", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["objective_value"] == pytest.approx(1.536)
    res = CliRunner().invoke(main, ["solve", str(path), "-p", "method=nope"])
    assert res.exit_code == 2 and "method" in res.stderr


def test_kinds_lists_the_parameters() -> None:
    specs = KIND.param_specs()
    assert set(specs) == {
        "method",
        "capacity_rows",
        "symmetry_breaking",
        "greedy_start",
        "migration",
    }
    assert specs["method"]["default"] == "auto"


# --- generator --------------------------------------------------------------------------------
def test_generator_is_seeded_and_valid() -> None:
    a = generate(12, 3, 4, seed=5, heterogeneous=True)
    b = generate(12, 3, 4, seed=5, heterogeneous=True)
    assert a.to_dict() == b.to_dict()
    assert a.to_dict() != generate(12, 3, 4, seed=6, heterogeneous=True).to_dict()
    caps = [g.kv_capacity_tokens for g in a.gpus]
    assert caps[1] == 2 * caps[0] and a.gpus[1].prefill_tokens_s == 1.5 * a.gpus[0].prefill_tokens_s
    largest = max(p.context_tokens for s in a.sessions for p in s.pauses)
    assert min(caps) >= largest
    # contexts grow along a session (generated tokens and tool output are added)
    for s in a.sessions:
        sizes = [p.context_tokens for p in s.pauses]
        assert sizes == sorted(sizes)
        assert s.work_s > 0
    first = [s.pauses[0].context_tokens for s in a.sessions]
    assert min(first) >= CONTEXT_QUANTILES[0]


def test_generator_equal_context_and_explicit_capacity() -> None:
    inst = generate(10, 1, 3, seed=2, equal_context=2048, kv_capacity_tokens=5000)
    assert {p.context_tokens for s in inst.sessions for p in s.pauses} == {2048}
    assert inst.gpus[0].kv_capacity_tokens == 5000
    with pytest.raises(hetopt.InstanceError, match="kv_capacity_tokens"):
        generate(10, 1, 3, seed=2, equal_context=2048, kv_capacity_tokens=1000)
    with pytest.raises(hetopt.InstanceError):
        generate(0)


def test_generate_command(tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    args = ["generate", "agent-sessions", "--agents", "4", "--gpus", "2", "--pauses", "2"]
    res = CliRunner().invoke(main, [*args, "--seed", "1", "-o", str(out)])
    assert res.exit_code == 0, res.output
    inst = hetopt.read_instance(out)
    assert isinstance(inst, AgentSessionsInstance) and len(inst.sessions) == 4
    res = CliRunner().invoke(main, [*args, "--kv-capacity", "1", "-o", str(tmp_path / "b.json")])
    assert res.exit_code == 3 and "kv_capacity_tokens" in res.stderr
