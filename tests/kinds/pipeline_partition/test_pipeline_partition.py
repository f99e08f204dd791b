"""pipeline_partition: known answers by brute force, the model's exactness switches,
verifiers that catch wrong tables, bad input naming the field, the CLI.

Serving known answers: every placement of 2-3 nodes on a few layers enumerated, each
one's max flow computed with networkx here (not with the kind's code). Training known
answers: every cut of the chain into stages and every sequence of device types the
counts allow, stage times summed here; and the O(L^2 S) DP for fixed device orders.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import highspy
import networkx as nx
import numpy as np
import pytest
from click.testing import CliRunner

import hetopt
from hetopt import InstanceError, SolveOptions, Status, UsageError
from hetopt.cli import main
from hetopt.kinds.pipeline_partition import KIND, serving, training
from hetopt.kinds.pipeline_partition.data import PipelinePartitionInstance
from hetopt.kinds.pipeline_partition.generate import generate

ROOT = Path(__file__).resolve().parents[3]
INST = ROOT / "instances" / "pipeline_partition"


def load(name: str) -> dict[str, Any]:
    return json.loads((INST / name).read_text())


def run(*args: Any) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return res.exit_code, res.stdout, res.stderr


# ----------------------------------------------------------------------------- serving
def random_serving(seed: int) -> dict[str, Any]:
    """2-3 nodes, 3-5 layers, random tables (not monotone), random links (some missing,
    some limiting), identical twins sometimes."""
    rng = random.Random(seed)
    L = rng.randint(3, 5)
    n = rng.randint(2, 3)
    nodes = []
    for i in range(n):
        if i > 0 and rng.random() < 0.3:
            tab = list(nodes[0]["throughput_by_layers"])
        else:
            tab = [
                round(rng.uniform(50, 400) / (k + 1) ** rng.uniform(0.5, 1.2), 1)
                for k in range(rng.randint(1, L))
            ]
        nodes.append({"id": f"n{i}", "throughput_by_layers": tab})
    links = []
    ids = [nd["id"] for nd in nodes]
    for a in ["source", *ids]:
        for b in [*ids, "sink"]:
            if a == b or (a == "source" and b == "sink") or rng.random() < 0.25:
                continue
            cap = rng.choice([1e4, 1e4, round(rng.uniform(20, 200), 1)])
            links.append({"from": a, "to": b, "capacity_tokens_s": cap})
    return {
        "kind": "pipeline_partition",
        "mode": "serving",
        "layers": L,
        "nodes": nodes,
        "links": links,
    }


def brute_force_serving(data: dict[str, Any]) -> float:
    """Max over every placement of the networkx max flow (node-split network)."""
    L = data["layers"]
    ranges = [
        [
            (s, k)
            for k in range(1, min(len(nd["throughput_by_layers"]), L) + 1)
            for s in range(L - k + 1)
        ]
        for nd in data["nodes"]
    ]
    best = 0.0
    for combo in itertools.product(*ranges):
        where = {nd["id"]: r for nd, r in zip(data["nodes"], combo, strict=True)}
        g = nx.DiGraph()
        g.add_nodes_from(["S", "T"])
        for nd in data["nodes"]:
            _s, k = where[nd["id"]]
            g.add_edge(("i", nd["id"]), ("o", nd["id"]), capacity=nd["throughput_by_layers"][k - 1])
        for ln in data["links"]:
            u, v, c = ln["from"], ln["to"], ln["capacity_tokens_s"]
            if u == "source" and where[v][0] == 0:
                g.add_edge("S", ("i", v), capacity=c)
            elif v == "sink" and sum(where[u]) == L:
                g.add_edge(("o", u), "T", capacity=c)
            elif u != "source" and v != "sink" and sum(where[u]) == where[v][0]:
                g.add_edge(("o", u), ("i", v), capacity=c)
        best = max(best, nx.maximum_flow_value(g, "S", "T"))
    return best


@pytest.mark.parametrize("seed", range(10))
def test_serving_matches_brute_force(seed: int) -> None:
    data = random_serving(seed)
    want = brute_force_serving(data)
    for params in ({}, {"aggregate": False}, {"warm_start": False}, {"cover_cuts": False}):
        r = hetopt.solve(data, **params)
        assert r.status == Status.OPTIMAL, (params, r)
        assert r.verification is not None and r.verification.ok
        assert r.objective_value == pytest.approx(want, rel=1e-6, abs=1e-6), params
        assert r.bound is not None and r.bound >= want - 1e-6
        assert r.info.get("lp_bound_tokens_s", want) >= want - 1e-6


def test_serving_small_known_answer() -> None:
    # a holds [0,3) at 330, b [3,6) at 330 (a -> c is a 120 tokens/s link; c holds at
    # most 3 layers at 100): 330 tokens/s (README.md; brute force agrees)
    data = load("serving_small.json")
    assert brute_force_serving(data) == pytest.approx(330.0)
    r = hetopt.solve(data)
    assert r.status == Status.OPTIMAL and r.objective_value == pytest.approx(330.0, rel=1e-9)
    place = r.tables["placement"].set_index("node")
    assert set(place.index) == {"a", "b", "c"}
    assert list(r.tables["flow"].columns) == ["from", "to", "tokens_s"]


def test_identical_nodes_are_grouped_and_limiting_links_split_them() -> None:
    inst = generate("serving", nodes=4, layers=8, types=2, seed=4)
    net = serving.node_groups(inst)
    assert [g.size for g in net.groups] == [2, 2] and net.complete
    assert len(serving.node_groups(inst, aggregate=False).groups) == 4
    slow = generate("serving", nodes=4, layers=8, types=2, seed=4, slow_links=0.3)
    sizes = [g.size for g in serving.node_groups(slow).groups]
    assert len(sizes) > 2 and not serving.node_groups(slow).complete
    a = hetopt.solve(inst)
    b = hetopt.solve(inst, aggregate=False)
    assert a.status == b.status == Status.OPTIMAL
    assert a.objective_value == pytest.approx(b.objective_value, rel=1e-6)
    assert a.info["groups"] == 2 and b.info["groups"] == 4


def test_cover_rows_and_improvement_prove_the_warm_start() -> None:
    inst = generate("serving", nodes=4, layers=8, types=2, seed=4)
    r = hetopt.solve(inst)
    assert r.info["cover_rows"] and r.info["warm_start_tokens_s"] > 0
    assert r.objective_value >= r.info["warm_start_tokens_s"] - 1e-9
    # the model hetopt export writes keeps the warm start feasible and has the same optimum
    m = hetopt.build_model(inst)
    assert m.throughput.lb == pytest.approx(r.info["warm_start_tokens_s"], rel=1e-6)


def _highs_objective(path: Path) -> float:
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 1e-9)
    h.readModel(str(path))
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return float(h.getInfo().objective_function_value)


@pytest.mark.parametrize(
    ("name", "objective"),
    [
        ("serving_small.json", "max_throughput"),
        ("training_small.json", "min_stage_time"),
        ("training_small.json", "min_iteration_time"),
    ],
)
@pytest.mark.parametrize("fmt", ["lp", "mps"])
def test_exported_model_objective_is_the_reported_objective(
    tmp_path: Path, name: str, objective: str, fmt: str
) -> None:
    out = tmp_path / f"m.{fmt}"
    hetopt.export_model(INST / name, out, objective=objective)
    r = hetopt.solve(INST / name, objective)
    assert r.status == Status.OPTIMAL
    assert _highs_objective(out) == pytest.approx(r.objective_value, rel=1e-6)


def test_time_limited_serving_is_feasible_with_a_bound(tmp_path: Path) -> None:
    # without the cover rows HiGHS does not close l4's gap in 2 s (it needs minutes):
    # an honest 'feasible' with the warm start's value and a bound above it
    from hetopt.kinds.pipeline_partition.helix import helix_to_instance

    h = INST / "helix"
    data = helix_to_instance(
        h / "single_cluster_config_l4.ini", h / "single_cluster_llama30b_l4.lp"
    )
    r = hetopt.solve(data, options=SolveOptions(time_limit_s=2, threads=1), cover_cuts=False)
    assert r.status == Status.FEASIBLE
    assert r.objective_value == pytest.approx(252.6498460282083, rel=1e-9)
    assert r.bound is not None and r.bound > r.objective_value
    assert r.gap is not None and r.gap > 0
    assert r.verification is not None and r.verification.ok


@pytest.mark.slow
def test_node_limit_reports_the_warm_start_with_a_bound() -> None:
    # generated seed 5 is not proven at the root: with one node HiGHS finds nothing better
    # than the warm start; it is reported 'feasible' with HiGHS's bound (above theta)
    inst = generate("serving", 9, 30, 3, seed=5)
    r = hetopt.solve(inst, options=SolveOptions(threads=1, highs_options={"mip_max_nodes": 1}))
    assert r.status == Status.FEASIBLE and r.info["warm_start_used"]
    assert r.objective_value == pytest.approx(r.info["warm_start_tokens_s"])
    assert r.bound is not None and r.bound > r.objective_value * (1 + 1e-6)
    assert r.verification is not None and r.verification.ok


def _tamper(result: hetopt.Result, table: str, row: int, col: str, value: Any) -> hetopt.Result:
    import dataclasses

    tables = {k: v.copy() for k, v in result.tables.items()}
    tables[table].loc[row, col] = value
    return dataclasses.replace(result, tables=tables)


def test_serving_verifier_catches_wrong_tables() -> None:
    data = load("serving_small.json")
    r = hetopt.solve(data)
    inst = PipelinePartitionInstance.from_dict(data)
    assert KIND.verify(inst, r).ok
    flow = r.tables["flow"]
    i = int(flow.index[flow["from"] == "source"][0])
    bad = [
        _tamper(r, "flow", i, "tokens_s", 400.0),  # not conserved, objective differs
        _tamper(r, "placement", 0, "start_layer", 1),  # ranges no longer chain
        _tamper(r, "placement", 0, "num_layers", 5),  # more layers than memory allows
    ]
    for b in bad:
        assert not KIND.verify(inst, b).ok
    # a flow that is feasible but not maximal for the placement is rejected too
    import dataclasses

    half = {k: v.copy() for k, v in r.tables.items()}
    half["flow"]["tokens_s"] = half["flow"]["tokens_s"] / 2
    v = KIND.verify(inst, dataclasses.replace(r, tables=half, objective_value=165.0))
    assert not v.ok and any("carries" in p for p in v.violations)


# ----------------------------------------------------------------------------- training
def random_training(seed: int, transfers: bool = False) -> dict[str, Any]:
    rng = random.Random(seed)
    L = rng.randint(2, 6)
    types = ["A", "B", "C"][: rng.randint(1, 3)]
    layers = []
    for i in range(L):
        tm = {t: round(rng.uniform(1, 5), 1) for t in types if rng.random() < 0.85 or t == types[0]}
        layers.append({"id": f"l{i}", "time_ms": tm, "memory_gb": round(rng.uniform(1, 6), 1)})
        if transfers:
            layers[-1]["activation_gb"] = round(rng.uniform(0, 0.02), 3)
    devices = [
        {"type": t, "count": rng.randint(1, 3), "memory_gb": round(rng.uniform(4, 16), 1)}
        for t in types
    ]
    data: dict[str, Any] = {
        "kind": "pipeline_partition",
        "mode": "training",
        "layers": layers,
        "devices": devices,
        "micro_batches": rng.randint(1, 8),
    }
    if transfers:
        data["interconnect"] = [
            {"from_type": a, "to_type": b, "bandwidth_gb_s": round(rng.uniform(1, 10), 1)}
            for a in types
            for b in types
            if rng.random() < 0.8
        ]
    return data


def brute_force_training(
    data: dict[str, Any], objective: str, order: tuple[str, ...] | None = None, max_s: int = 99
) -> float | None:
    """Min over every cut of the chain and every type sequence (one device per stage)."""
    layers, L = data["layers"], len(data["layers"])
    dev = {d["type"]: d for d in data["devices"]}
    bw = {(c["from_type"], c["to_type"]): c["bandwidth_gb_s"] for c in data.get("interconnect", [])}
    best = None
    for S in range(1, min(L, max_s) + 1):
        for cuts in itertools.combinations(range(1, L), S - 1):
            bounds = [0, *cuts, L]
            seqs = [order] if order is not None else itertools.product(dev, repeat=S)
            for seq in seqs:
                if len(seq) != S or any(seq.count(t) > dev[t]["count"] for t in dev):
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
                    val = max(times)
                    if objective == "min_iteration_time":
                        val *= data["micro_batches"] + S - 1
                    best = val if best is None else min(best, val)
    return best


@pytest.mark.parametrize("objective", ["min_stage_time", "min_iteration_time"])
@pytest.mark.parametrize("seed", range(8))
def test_training_matches_brute_force(seed: int, objective: str) -> None:
    data = random_training(seed, transfers=seed % 2 == 1)
    want = brute_force_training(data, objective)
    r = hetopt.solve(data, objective)
    if want is None:
        assert r.status == Status.INFEASIBLE
        return
    assert r.status == Status.OPTIMAL, r
    assert r.verification is not None and r.verification.ok, r.verification
    assert r.objective_value == pytest.approx(want, rel=1e-6)
    assert len(r.tables["layer_stage"]) == len(data["layers"])
    dp = training.usage_dp(PipelinePartitionInstance.from_dict(data), objective)
    assert dp is not None and dp[0] >= want - 1e-9  # a feasible plan
    if "interconnect" not in data:  # exact without transfers
        assert dp[0] == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_fixed_order_dp_matches_brute_force(seed: int) -> None:
    data = random_training(seed, transfers=True)
    inst = PipelinePartitionInstance.from_dict(data)
    count = {d["type"]: d["count"] for d in data["devices"]}
    for S in range(1, len(data["layers"]) + 1):
        orders = [
            o
            for o in itertools.product(count, repeat=S)
            if all(o.count(t) <= n for t, n in count.items())
        ]
        for order in orders[:20]:
            want = brute_force_training(data, "min_stage_time", order)
            got = training.fixed_order_dp(inst, list(order))
            if want is None:
                assert got is None
            else:
                assert got is not None and got[0] == pytest.approx(want, rel=1e-9)
                assert training.objective_of(inst, "min_stage_time", got[1]) == pytest.approx(want)


def test_training_small_known_answer() -> None:
    # V100 [l0] 4.1 | A100 [l1,l2] 4.1 | V100 [l3] 3.1 | A100 [l4,l5] 4.1: bottleneck 4.1 ms
    # with 4 stages; (8 + 4 - 1) x 4.1 = 45.1 ms (brute force agrees; README.md)
    data = load("training_small.json")
    for objective, want in (("min_stage_time", 4.1), ("min_iteration_time", 45.1)):
        assert brute_force_training(data, objective) == pytest.approx(want)
        r = hetopt.solve(data, objective)
        assert r.status == Status.OPTIMAL and r.objective_value == pytest.approx(want, rel=1e-9)


def test_min_iteration_time_chooses_fewer_stages() -> None:
    # one micro-batch: (1 + S - 1) x bottleneck = S x bottleneck >= total work on the
    # fastest device; 2 layers of 3 ms on one A100 (6 ms) beat 2 stages (2 x 3 ms = 6 ms)
    # only in a tie, so make the split uneven: 5 + 1 on one device = 6 < 2 x 5 = 10
    data = {
        "kind": "pipeline_partition",
        "mode": "training",
        "layers": [
            {"id": "a", "time_ms": {"A100": 5.0}, "memory_gb": 1.0},
            {"id": "b", "time_ms": {"A100": 1.0}, "memory_gb": 1.0},
        ],
        "devices": [{"type": "A100", "count": 2, "memory_gb": 8}],
        "micro_batches": 1,
    }
    assert hetopt.solve(data, "min_stage_time").objective_value == pytest.approx(5.0)
    r = hetopt.solve(data, "min_iteration_time")
    assert r.objective_value == pytest.approx(6.0) and r.info["stages"] == 1


def test_max_stages_param() -> None:
    data = load("training_small.json")
    r = hetopt.solve(data, "min_stage_time", max_stages=2)
    assert r.info["stages"] <= 2
    assert r.objective_value == pytest.approx(brute_force_training(data, "min_stage_time", max_s=2))
    assert r.objective_value > 4.1


def test_infeasible_training_is_a_status() -> None:
    r = hetopt.solve(INST / "training_infeasible.json")
    assert r.status == Status.INFEASIBLE and r.objective_value is None
    code, _, _ = run("solve", INST / "training_infeasible.json")
    assert code == 4


def test_data_parallel_replicas() -> None:
    base = {
        "kind": "pipeline_partition",
        "mode": "training",
        "layers": [{"id": "x", "time_ms": {"A100": 10.0}, "memory_gb": 4.0}],
        "devices": [{"type": "A100", "count": 3, "memory_gb": 8}],
        "micro_batches": 4,
    }
    assert hetopt.solve(base, "min_stage_time").objective_value == pytest.approx(10.0)
    r = hetopt.solve({**base, "max_data_parallel": 3}, "min_stage_time")
    assert r.objective_value == pytest.approx(10.0 / 3)
    st = r.tables["stages"].iloc[0]
    assert st["replicas"] == 3 and st["devices"] == 3 and st["memory_gb"] == pytest.approx(4.0)
    # at most count devices: 2 replicas allowed of 2 devices
    two = {
        **base,
        "devices": [{"type": "A100", "count": 2, "memory_gb": 8}],
        "max_data_parallel": 3,
    }
    assert hetopt.solve(two, "min_stage_time").objective_value == pytest.approx(5.0)


def test_tensor_parallel_degree_from_the_profile() -> None:
    base = {
        "kind": "pipeline_partition",
        "mode": "training",
        "layers": [
            {
                "id": "big",
                "time_ms": {"A100": 8.0},
                "memory_gb": 30.0,
                "tp_time_ms": {"A100": {"2": 5.0, "4": 3.5}},
            },
            {
                "id": "small",
                "time_ms": {"A100": 2.0},
                "memory_gb": 2.0,
                "tp_time_ms": {"A100": {"2": 1.2, "4": 0.8}},
            },
        ],
        "devices": [{"type": "A100", "count": 4, "memory_gb": 20}],
        "micro_batches": 4,
    }
    # 30 GB does not fit in 20 GB on one device
    assert hetopt.solve(base, "min_stage_time").status == Status.INFEASIBLE
    r = hetopt.solve({**base, "max_tensor_parallel": 4}, "min_stage_time")
    # tp 2 for 'big' (15 GB, 5 ms) + 'small' on another device (2 ms), or tp 4 for both
    # (32/4 = 8 GB, 3.5 + 0.8 = 4.3 ms): 4.3 is best
    assert r.status == Status.OPTIMAL and r.objective_value == pytest.approx(4.3)
    assert list(r.tables["stages"]["tp_degree"]) == [4]


def test_activation_transfer_between_types() -> None:
    data = {
        "kind": "pipeline_partition",
        "mode": "training",
        "layers": [
            {
                "id": "a",
                "time_ms": {"A100": 4.0, "V100": 4.0},
                "memory_gb": 10.0,
                "activation_gb": 0.01,
            },
            {"id": "b", "time_ms": {"A100": 4.0, "V100": 4.0}, "memory_gb": 10.0},
        ],
        "devices": [
            {"type": "A100", "count": 1, "memory_gb": 16},
            {"type": "V100", "count": 1, "memory_gb": 16},
        ],
        "micro_batches": 4,
        "interconnect": [
            {"from_type": "A100", "to_type": "V100", "bandwidth_gb_s": 2.0},
            {"from_type": "V100", "to_type": "A100", "bandwidth_gb_s": 10.0},
        ],
    }
    # the two layers need two devices (memory); V100 -> A100 sends 0.01 GB at 10 GB/s = 1 ms,
    # A100 -> V100 at 2 GB/s = 5 ms: V100 first, bottleneck 4 + 1 = 5 ms
    r = hetopt.solve(data, "min_stage_time")
    assert r.objective_value == pytest.approx(5.0)
    assert list(r.tables["stages"]["device_type"]) == ["V100", "A100"]
    assert list(r.tables["stages"]["transfer_ms"]) == pytest.approx([1.0, 0.0])


# ----------------------------------------------------------------------------- bad input
SERVING = {
    "kind": "pipeline_partition",
    "mode": "serving",
    "layers": 2,
    "nodes": [{"id": "0", "throughput_by_layers": [10.0, 5.0]}],
    "links": [
        {"from": "source", "to": "0", "capacity_tokens_s": 100.0},
        {"from": "0", "to": "sink", "capacity_tokens_s": 100.0},
    ],
}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"mode": None}, "mode"),
        ({"mode": "inference"}, "mode"),
        ({"layers": 0}, "layers"),
        ({"layers": 2.5}, "layers"),
        ({"nodes": []}, "nodes"),
        ({"nodes": [{"id": "source", "throughput_by_layers": [1.0]}]}, "nodes[0].id"),
        ({"nodes": [{"id": "0", "throughput_by_layers": []}]}, "nodes[0].throughput_by_layers"),
        (
            {"nodes": [{"id": "0", "throughput_by_layers": [-1.0]}]},
            "nodes[0].throughput_by_layers[0]",
        ),
        ({"links": [{"from": "source", "to": "9", "capacity_tokens_s": 1.0}]}, "links[0].to"),
        ({"links": [{"from": "sink", "to": "0", "capacity_tokens_s": 1.0}]}, "links[0].from"),
        ({"links": [{"from": "source", "to": "sink", "capacity_tokens_s": 1.0}]}, "links[0]"),
        (
            {"links": [{"from": "0", "to": "sink", "capacity_tokens_s": 0.0}]},
            "links[0].capacity_tokens_s",
        ),
        ({"objective": "min_stage_time"}, "objective"),
        ({"devices": []}, None),
    ],
)
def test_bad_serving_input_names_the_field(change: dict[str, Any], field: str | None) -> None:
    data = {**SERVING, **change}
    if change.get("mode", "") is None:
        del data["mode"]
    with pytest.raises(InstanceError) as exc:
        hetopt.solve(data)
    if field is not None:
        assert exc.value.field == field, str(exc.value)


TRAINING = load("training_small.json")


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("layers", 0, "time_ms"), {"H100": 1.0}, "layers[0].time_ms.H100"),
        (("layers", 0, "time_ms"), {}, "layers[0].time_ms"),
        (("layers", 1, "id"), "l0", "layers[1].id"),
        (("layers", 0, "tp_time_ms"), {"A100": {"one": 1.0}}, "layers[0].tp_time_ms.A100.one"),
        (("layers", 0, "memory_gb"), -1.0, "layers[0].memory_gb"),
        (("devices", 1, "type"), "A100", "devices[1].type"),
        (("devices", 0, "count"), 0, "devices[0].count"),
        (("micro_batches",), 0, "micro_batches"),
        (("objective",), "max_throughput", "objective"),
    ],
)
def test_bad_training_input_names_the_field(path: tuple[Any, ...], value: Any, field: str) -> None:
    data = json.loads(json.dumps(TRAINING))
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(InstanceError) as exc:
        hetopt.solve(data)
    assert exc.value.field == field, str(exc.value)


def test_objective_of_the_other_mode_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="not for mode 'serving'"):
        hetopt.solve(INST / "serving_small.json", "min_stage_time")
    code, _, err = run("solve", INST / "training_small.json", "-O", "max_throughput")
    assert code == 2 and "not for mode 'training'" in err


def test_bad_instance_exit_3_names_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**SERVING, "layers": -1}))
    code, _, err = run("solve", bad)
    assert code == 3 and str(bad) in err and "layers" in err


def test_schema_is_the_discriminated_union() -> None:
    schema = PipelinePartitionInstance.model_json_schema()
    assert schema["type"] == "object" and "mode" in schema["required"]
    assert schema["discriminator"]["propertyName"] == "mode"
    assert {"ServingInstance", "TrainingInstance"} <= set(schema["$defs"])
    code, out, _ = run("schema", "pipeline_partition")
    assert code == 0 and json.loads(out) == schema


# ----------------------------------------------------------------------------- generator, CLI
@pytest.mark.parametrize("mode", ["serving", "training"])
def test_generator_is_seeded_and_solves(tmp_path: Path, mode: str) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for out in (a, b):
        code, _, err = run(
            "generate",
            "pipeline-partition",
            "--mode",
            mode,
            "--nodes",
            "4",
            "--layers",
            "6",
            "--seed",
            "2",
            "-o",
            out,
        )
        assert code == 0, err
    assert a.read_text() == b.read_text()
    code, out, err = run("solve", a, "--json")
    assert code == 0, err
    assert json.loads(out)["verification"]["ok"]


def test_generator_rejects_an_objective_of_the_other_mode(tmp_path: Path) -> None:
    code, _, err = run("generate", "pipeline-partition", "--objective", "min_stage_time")
    assert code == 2 and "objective" in err


def test_numpy_free_tables_are_json(tmp_path: Path) -> None:
    code, out, err = run("solve", INST / "training_small.json", "--json")
    assert code == 0, err
    tables = json.loads(out)["tables"]
    assert {r["layer"] for r in tables["layer_stage"]} == {f"l{i}" for i in range(6)}
    assert np.isclose(max(r["time_ms"] for r in tables["stages"]), 4.1)
