"""pipeline_partition, training with several pipelines (``pipelines > 1``): the
data-parallel batch split ``min tau, (b_r + S_r - 1) bottleneck_r <= tau, sum b_r = B``.

Known answers: brute force here (every cut of the chain and every type sequence gives a
pipeline, every set of at most ``pipelines`` of them the device counts allow, every
split of the batch into whole numbers >= 1), closed forms for identical pipelines (the
even split, proven by the device-time bound), seeded random instances, and the shipped
``training_split.json``.
"""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import hetopt
from hetopt import InstanceError, Status, UsageError
from hetopt.cli import main
from hetopt.kinds.pipeline_partition import split
from hetopt.kinds.pipeline_partition.data import PipelinePartitionInstance

ROOT = Path(__file__).resolve().parents[3]
INST = ROOT / "instances" / "pipeline_partition"


def run(*args: Any) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return res.exit_code, res.stdout, res.stderr


def single_pipelines(data: dict[str, Any]) -> dict[tuple[tuple[int, ...], int], float]:
    """Every pipeline (one device per stage): ``(devices used per type, stages)`` -> the
    least bottleneck (a pipeline with the same devices and stage count and a larger
    bottleneck is never better)."""
    layers, L = data["layers"], len(data["layers"])
    types = [d["type"] for d in data["devices"]]
    dev = {d["type"]: d for d in data["devices"]}
    bw = {(c["from_type"], c["to_type"]): c["bandwidth_gb_s"] for c in data.get("interconnect", [])}
    best: dict[tuple[tuple[int, ...], int], float] = {}
    for S in range(1, L + 1):
        for cuts in itertools.combinations(range(1, L), S - 1):
            bounds = [0, *cuts, L]
            for seq in itertools.product(types, repeat=S):
                if any(seq.count(t) > dev[t]["count"] for t in types):
                    continue
                times = []
                for j in range(S):
                    part = layers[bounds[j] : bounds[j + 1]]
                    t = seq[j]
                    if any(t not in x["time_ms"] for x in part):
                        break
                    if sum(x["memory_gb"] for x in part) > dev[t]["memory_gb"]:
                        break
                    tm = sum(x["time_ms"][t] for x in part)
                    if j + 1 < S and (t, seq[j + 1]) in bw:
                        tm += part[-1].get("activation_gb", 0.0) / bw[t, seq[j + 1]] * 1000
                    times.append(tm)
                else:
                    key = (tuple(seq.count(t) for t in types), S)
                    best[key] = min(best.get(key, float("inf")), max(times))
    return best


def brute_force_split(data: dict[str, Any]) -> float | None:
    """Min over every set of at most ``pipelines`` pipelines within the device counts
    and every split of the batch into whole numbers >= 1 of the slowest pipeline's
    ``(b + S - 1) x bottleneck``."""
    B, P = data["micro_batches"], data.get("pipelines", 1)
    counts = [d["count"] for d in data["devices"]]
    pipes = list(single_pipelines(data).items())
    best = None
    for n in range(1, min(P, B) + 1):
        for combo in itertools.combinations_with_replacement(range(len(pipes)), n):
            use = [sum(pipes[i][0][0][t] for i in combo) for t in range(len(counts))]
            if any(u > c for u, c in zip(use, counts, strict=True)):
                continue
            for parts in itertools.product(range(1, B + 1), repeat=n - 1):
                last = B - sum(parts)
                if last < 1:
                    continue
                val = max(
                    (b + pipes[i][0][1] - 1) * pipes[i][1]
                    for b, i in zip((*parts, last), combo, strict=True)
                )
                best = val if best is None else min(best, val)
    return best


def random_split(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    L = rng.randint(2, 4)
    types = ["A", "B"][: rng.randint(1, 2)]
    layers = []
    for i in range(L):
        tm = {t: round(rng.uniform(1, 5), 1) for t in types if rng.random() < 0.85 or t == types[0]}
        layers.append({"id": f"l{i}", "time_ms": tm, "memory_gb": round(rng.uniform(1, 6), 1)})
        if seed % 2:
            layers[-1]["activation_gb"] = round(rng.uniform(0, 0.01), 3)
    data: dict[str, Any] = {
        "kind": "pipeline_partition",
        "mode": "training",
        "layers": layers,
        "devices": [
            {"type": t, "count": rng.randint(1, 3), "memory_gb": round(rng.uniform(4, 14), 1)}
            for t in types
        ],
        "micro_batches": rng.randint(2, 6),
        "pipelines": rng.randint(2, 3),
    }
    if seed % 2:
        data["interconnect"] = [
            {"from_type": a, "to_type": b, "bandwidth_gb_s": round(rng.uniform(1, 10), 1)}
            for a in types
            for b in types
            if rng.random() < 0.8
        ]
    return data


def _check(r: hetopt.Result, data: dict[str, Any]) -> None:
    assert r.status == Status.OPTIMAL, r
    assert r.verification is not None and r.verification.ok, r.verification
    bs = r.tables["batch_split"]
    assert int(bs["micro_batches"].sum()) == data["micro_batches"]
    assert (bs["micro_batches"] >= 1).all()
    assert len(bs) <= data["pipelines"]
    assert set(r.tables["stages"]["pipeline"]) == set(bs["pipeline"])
    assert r.objective_value == pytest.approx(float(bs["time_ms"].max()), rel=1e-9)


@pytest.mark.parametrize("seed", range(10))
def test_split_matches_brute_force(seed: int) -> None:
    data = random_split(seed)
    want = brute_force_split(data)
    r = hetopt.solve(data, "min_iteration_time")
    if want is None:
        assert r.status == Status.INFEASIBLE
        return
    _check(r, data)
    assert r.objective_value == pytest.approx(want, rel=1e-6)
    one = hetopt.solve({**data, "pipelines": 1}, "min_iteration_time")
    assert r.objective_value <= one.objective_value + 1e-9  # one pipeline is a split
    # the MIP start is a feasible plan: devices within the counts, the batch covered
    inst = PipelinePartitionInstance.from_dict(data)
    plan = split.even_split_start(inst, split.slots_of(inst))
    if plan is not None:
        assert sum(p.micro_batches for p in plan) == data["micro_batches"]
        used = Counter(st.type for p in plan for st in p.stages)
        assert all(used[i] <= d["count"] for i, d in enumerate(data["devices"]))
        assert split.plan_value(inst, plan) >= want - 1e-9


def _identical(n: int, layers: int, memory_gb: float, batch: int, pipes: int) -> dict[str, Any]:
    return {
        "kind": "pipeline_partition",
        "mode": "training",
        "layers": [
            {"id": f"l{i}", "time_ms": {"G": 1.0 + 0.5 * i}, "memory_gb": 4.0}
            for i in range(layers)
        ],
        "devices": [{"type": "G", "count": n, "memory_gb": memory_gb}],
        "micro_batches": batch,
        "pipelines": pipes,
        "objective": "min_iteration_time",
    }


@pytest.mark.parametrize(("n", "batch"), [(2, 6), (3, 9), (4, 8)])
def test_identical_single_stage_pipelines_split_evenly(n: int, batch: int) -> None:
    # every device holds the whole model (work W = sum of layer times): n one-stage
    # pipelines with B / n micro-batches each take B W / n, which is the device-time
    # bound (each micro-batch keeps devices busy >= W ms, n devices busy <= tau each)
    data = _identical(n, 3, 16.0, batch, n)
    W = 1.0 + 1.5 + 2.0
    r = hetopt.solve(data)
    _check(r, data)
    assert r.objective_value == pytest.approx(batch * W / n, rel=1e-9)
    assert list(r.tables["batch_split"]["micro_batches"]) == [batch // n] * n
    assert brute_force_split(data) == pytest.approx(batch * W / n)


def test_identical_two_stage_pipelines_split_evenly() -> None:
    # a device holds one layer (4 GB of 6): 2 pipelines of 2 stages (1 and 1.5 ms) on 4
    # devices; b split (4, 4): (4 + 1) x 1.5 = 7.5; (5, 3): 6 x 1.5 = 9; one pipeline
    # of 2 stages: 9 x 1.5 = 13.5
    data = _identical(4, 2, 6.0, 8, 2)
    r = hetopt.solve(data)
    _check(r, data)
    assert r.objective_value == pytest.approx(7.5, rel=1e-9)
    assert list(r.tables["batch_split"]["micro_batches"]) == [4, 4]
    assert list(r.tables["batch_split"]["stages"]) == [2, 2]
    assert brute_force_split(data) == pytest.approx(7.5)


def test_training_split_known_answer() -> None:
    data = json.loads((INST / "training_split.json").read_text())
    answers = json.loads((INST / "answers.json").read_text())
    want = answers["training_split.json"]["min_iteration_time"]
    assert brute_force_split(data) == pytest.approx(want)
    r = hetopt.solve(data)
    _check(r, data)
    assert r.objective_value == pytest.approx(want, rel=1e-9)
    assert r.info["pipelines"] == 2
    # one pipeline of the same devices is slower (training_small.json: 45.1 ms)
    assert hetopt.solve({**data, "pipelines": 1}).objective_value == pytest.approx(45.1)


def test_pipelines_1_is_the_single_pipeline_model() -> None:
    data = json.loads((INST / "training_small.json").read_text())
    a = hetopt.solve(data)
    b = hetopt.solve({**data, "pipelines": 1})
    assert a.objective_value == b.objective_value
    assert "batch_split" not in b.tables and "pipeline" not in b.tables["stages"]


def test_max_stages_caps_every_pipeline() -> None:
    data = json.loads((INST / "training_split.json").read_text())
    r = hetopt.solve(data, max_stages=2)
    assert r.verification is not None and r.verification.ok
    assert (r.tables["batch_split"]["stages"] <= 2).all()
    assert r.objective_value >= 40.5 - 1e-9


def _tamper(r: hetopt.Result, table: str, row: int, col: str, value: Any) -> hetopt.Result:
    import dataclasses

    tables = dict(r.tables)
    df = tables[table].copy()
    df.loc[row, col] = value
    tables[table] = df
    return dataclasses.replace(r, tables=tables)


def test_split_verifier_catches_wrong_tables() -> None:
    from hetopt.kinds.pipeline_partition import KIND

    data = json.loads((INST / "training_split.json").read_text())
    inst = PipelinePartitionInstance.from_dict(data)
    r = hetopt.solve(data)
    assert KIND.verify(inst, r).ok
    for table, col, value, needle in (
        ("batch_split", "micro_batches", 5, "micro-batches"),
        ("batch_split", "micro_batches", 0, "whole number >= 1"),
        ("batch_split", "time_ms", 1.0, "time_ms"),
        ("batch_split", "stages", 9, "stages"),
        ("stages", "pipeline", 1, "pipeline"),
        ("stages", "device_type", "A100", ""),
    ):
        v = KIND.verify(inst, _tamper(r, table, 0, col, value))
        assert not v.ok, (table, col)
        assert any(needle in p for p in v.violations), v.violations
    tables = {k: v for k, v in r.tables.items() if k != "batch_split"}
    import dataclasses

    assert not KIND.verify(inst, dataclasses.replace(r, tables=tables)).ok


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"pipelines": 0}, "pipelines"),
        ({"pipelines": 2.5}, "pipelines"),
        ({"pipelines": 2, "objective": "min_stage_time"}, "pipelines"),
    ],
)
def test_bad_split_input_names_the_field(change: dict[str, Any], field: str) -> None:
    data = {**json.loads((INST / "training_split.json").read_text()), **change}
    with pytest.raises(InstanceError) as exc:
        hetopt.solve(data)
    assert exc.value.field == field, str(exc.value)


def test_stage_time_objective_with_several_pipelines_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="pipelines"):
        hetopt.solve(INST / "training_split.json", "min_stage_time")
    code, _, err = run("solve", INST / "training_split.json", "-O", "min_stage_time")
    assert code == 2 and "pipelines" in err


def test_split_cli_solve_and_export(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    code, stdout, _ = run("solve", INST / "training_split.json", "-o", out)
    assert code == 0 and "40.5" in stdout
    res = json.loads(out.read_text())
    assert "batch_split" in res["tables"]
    code, _, _ = run(
        "export", INST / "training_split.json", "--format", "lp", "-o", tmp_path / "m.lp"
    )
    assert code == 0 and (tmp_path / "m.lp").stat().st_size > 0


def test_more_pipelines_than_micro_batches_leaves_slots_empty() -> None:
    data = {**json.loads((INST / "training_split.json").read_text()), "micro_batches": 2}
    data["pipelines"] = 6
    r = hetopt.solve(data)
    assert r.verification is not None and r.verification.ok
    assert len(r.tables["batch_split"]) <= 2
    assert r.objective_value == pytest.approx(brute_force_split(data))


# ----------------------------------------------------------------------------- all-reduce
def _one_layer(bw: float | None, grad_gb: float = 1.0, pipelines: int | None = None) -> dict:
    dev: dict[str, Any] = {"type": "G", "count": 4, "memory_gb": 16}
    if bw is not None:
        dev["allreduce_gb_s"] = bw
    data: dict[str, Any] = {
        "kind": "pipeline_partition",
        "mode": "training",
        "layers": [{"id": "l0", "time_ms": {"G": 8.0}, "memory_gb": 4.0, "grad_gb": grad_gb}],
        "devices": [dev],
        "micro_batches": 4,
        "max_data_parallel": 4,
        "objective": "min_iteration_time",
    }
    if pipelines is not None:
        data["pipelines"] = pipelines
    return data


@pytest.mark.parametrize(
    ("bw", "want", "replicas"),
    [
        # r replicas: 4 x 8 / r + 2 (r - 1) / r x 1 GB / bw x 1000
        (None, 8.0, 4),  # no bandwidth: not costed, 4 x 8 / 4
        (1000.0, 8.0 + 1.5, 4),  # r = 4: 8 + 1.5; r = 3: 10.67 + 1.33; r = 2: 16 + 1
        (10.0, 32.0, 1),  # r = 2: 16 + 100: one device (no all-reduce) is best
    ],
)
def test_gradient_allreduce_closed_form(bw: float | None, want: float, replicas: int) -> None:
    r = hetopt.solve(_one_layer(bw))
    assert r.status == Status.OPTIMAL and r.verification is not None and r.verification.ok
    assert r.objective_value == pytest.approx(want, rel=1e-9)
    assert list(r.tables["stages"]["replicas"]) == [replicas]
    if bw is not None:
        ar = 2 * (replicas - 1) / replicas * 1.0 / bw * 1000
        assert r.tables["stages"]["allreduce_ms"][0] == pytest.approx(ar)
        assert r.info["allreduce_ms"] == pytest.approx(ar)
    else:
        assert "allreduce_ms" not in r.tables["stages"]
    # the bottleneck objective ignores the once-per-iteration all-reduce
    assert hetopt.solve(_one_layer(bw), "min_stage_time").objective_value == pytest.approx(2.0)


def test_gradient_allreduce_with_several_pipelines() -> None:
    # 4 pipelines of one device each (b = 1 each, no all-reduce among a stage's
    # replicas) take 8 ms; one pipeline of 4 replicas 8 + 1.5 (whole-pipeline replicas
    # pay no all-reduce here: not modelled, see the model card)
    r = hetopt.solve(_one_layer(1000.0, pipelines=4))
    assert r.verification is not None and r.verification.ok
    assert r.objective_value == pytest.approx(8.0)
    r = hetopt.solve(_one_layer(1000.0, pipelines=2))
    # 2 pipelines x 2 replicas: 2 x 8 / 2 + 1.0 = 9; (3, 1) split over 3 + 1 devices:
    # max(3 x 8 / 3 + 1.33, 8) = 9.33; 2 pipelines of one device: 2 x 8 = 16
    assert r.objective_value == pytest.approx(9.0)
    assert "allreduce_ms" in r.tables["batch_split"]
    assert list(r.tables["batch_split"]["allreduce_ms"]) == pytest.approx([1.0, 1.0])
    from hetopt.kinds.pipeline_partition import KIND

    inst = PipelinePartitionInstance.from_dict(_one_layer(1000.0, pipelines=2))
    assert KIND.verify(inst, r).ok
    for table in ("stages", "batch_split"):
        v = KIND.verify(inst, _tamper(r, table, 0, "allreduce_ms", 0.0))
        assert not v.ok and any("allreduce_ms" in p or "time_ms" in p for p in v.violations)


def brute_force_replicas(data: dict[str, Any]) -> float | None:
    """One pipeline, every cut, every (type, replicas) per stage: ``(M + S - 1) x
    bottleneck + the largest stage all-reduce``."""
    layers, L = data["layers"], len(data["layers"])
    dev = {d["type"]: d for d in data["devices"]}
    choices = [(t, r) for t in dev for r in range(1, data["max_data_parallel"] + 1)]
    best = None
    for S in range(1, L + 1):
        for cuts in itertools.combinations(range(1, L), S - 1):
            bounds = [0, *cuts, L]
            for seq in itertools.product(choices, repeat=S):
                if any(sum(r for u, r in seq if u == t) > dev[t]["count"] for t in dev):
                    continue
                times, ars = [], []
                for j, (t, r) in enumerate(seq):
                    part = layers[bounds[j] : bounds[j + 1]]
                    if any(t not in x["time_ms"] for x in part):
                        break
                    if sum(x["memory_gb"] for x in part) > dev[t]["memory_gb"]:
                        break
                    times.append(sum(x["time_ms"][t] for x in part) / r)
                    bw = dev[t].get("allreduce_gb_s")
                    grad = sum(x.get("grad_gb", 0.0) for x in part)
                    ars.append(0.0 if bw is None else 2 * (r - 1) / r * grad / bw * 1000)
                else:
                    val = (data["micro_batches"] + S - 1) * max(times) + max(ars)
                    best = val if best is None else min(best, val)
    return best


@pytest.mark.parametrize("seed", range(6))
def test_gradient_allreduce_matches_brute_force(seed: int) -> None:
    rng = random.Random(100 + seed)
    data = random_split(seed)
    data.pop("pipelines")
    data.pop("interconnect", None)
    for layer in data["layers"]:
        layer.pop("activation_gb", None)
        layer["grad_gb"] = round(rng.uniform(0, 0.05), 3)
    for d in data["devices"]:
        d["allreduce_gb_s"] = round(rng.uniform(5, 50), 1)
    data["max_data_parallel"] = 3
    want = brute_force_replicas(data)
    r = hetopt.solve(data, "min_iteration_time")
    if want is None:
        assert r.status == Status.INFEASIBLE
        return
    assert r.status == Status.OPTIMAL and r.verification is not None and r.verification.ok
    assert r.objective_value == pytest.approx(want, rel=1e-6)
