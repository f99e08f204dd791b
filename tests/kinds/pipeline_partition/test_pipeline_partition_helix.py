"""pipeline_partition serving on Helix's published artifacts (ASPLOS'25, Apache-2.0;
``instances/pipeline_partition/helix/SOURCE.md``).

* the importer: the max flow of Helix's own layout in each converted instance is Helix's
  published objective (so tables and capacities were read right);
* known answers: llama30b on 4 A100s, 1044.5333450564908 tokens/s, proven optimal;
  llama30b on 12 T4s, 397.6850640835783 (= 12 x max_k k T_k / 60, the capacity bound);
  llama30b on 8 L4s, 252.6498460282083 (see ``instances/pipeline_partition/README.md``
  for the counting proof); the 24-node llama70b cluster: 2045.641047336262, proven by
  HiGHS (slow), against Helix's Gurobi runs 1044.53, 214.98, 397.69 and 1289.56;
* Helix's own MILP (its ``.lp``), with the ranges fixed to ours, reaches our value: the
  two models agree on what a placement is worth.
"""

from __future__ import annotations

import json
from pathlib import Path

import highspy
import pytest
from click.testing import CliRunner

import hetopt
from hetopt import InstanceError, SolveOptions, Status
from hetopt.cli import main
from hetopt.kinds.pipeline_partition.data import PipelinePartitionInstance
from hetopt.kinds.pipeline_partition.helix import helix_to_instance, read_lp, read_solution
from hetopt.kinds.pipeline_partition.verify import placement_max_flow

HELIX = Path(__file__).resolve().parents[3] / "instances" / "pipeline_partition" / "helix"
CASES = {
    "a100": ("single_cluster_config_a100.ini", "single_cluster_llama30b_a100"),
    "l4": ("single_cluster_config_l4.ini", "single_cluster_llama30b_l4"),
    "t4": ("single_cluster_config_t4.ini", "single_cluster_llama30b_t4"),
    "70b": ("single_cluster_config_cluster24.ini", "single_cluster_llama70b"),
}
HELIX_VALUE = {
    "a100": 1044.5333450564908,
    "l4": 214.98140196132908,
    "t4": 397.68506408357825,
    "70b": 1289.5557702751735,
}
OPTIMUM = {
    "a100": 1044.5333450564908,
    "l4": 252.6498460282083,
    "t4": 397.6850640835783,
    "70b": 2045.641047336262,
}


def instance(name: str) -> PipelinePartitionInstance:
    cfg, base = CASES[name]
    return PipelinePartitionInstance.from_dict(helix_to_instance(HELIX / cfg, HELIX / f"{base}.lp"))


def run(*args: object) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return res.exit_code, res.stdout, res.stderr


@pytest.mark.parametrize("name", list(CASES))
def test_helix_layout_reaches_helix_objective(name: str) -> None:
    inst = instance(name)
    layout = read_solution(HELIX / f"{CASES[name][1]}.helix_sol.ini")
    assert set(layout) == {nd.id for nd in inst.nodes}
    value, _ = placement_max_flow(inst, layout)
    published = float((HELIX / f"{CASES[name][1]}.helix_objective.txt").read_text().split()[-1])
    assert published == pytest.approx(HELIX_VALUE[name], rel=1e-15)
    assert value == pytest.approx(published, rel=1e-9)


def test_importer_reads_tables_and_capacities() -> None:
    inst = instance("70b")
    assert inst.layers == 80 and len(inst.nodes) == 24
    types = {nd.type for nd in inst.nodes}
    assert types == {"A100", "L4", "T4"}
    by_type = {nd.type: len(nd.throughput_by_layers) for nd in inst.nodes}
    assert by_type == {"A100": 12, "L4": 7, "T4": 4}
    caps = {
        ln.capacity_tokens_s
        for ln in inst.links
        if "source" not in (ln.from_, ln.to) and "sink" not in (ln.from_, ln.to)
    }
    assert caps == {61035.15625}
    assert len(inst.links) == 24 * 23 + 48


def test_convert_cli_then_solve_a100(tmp_path: Path) -> None:
    cfg, base = CASES["a100"]
    out = tmp_path / "a100.json"
    code, _, err = run("convert", "helix", HELIX / cfg, HELIX / f"{base}.lp", "-o", out)
    assert code == 0, err
    assert "4 nodes, 60 layers" in err
    code, text, err = run("solve", out, "--json", "--threads", "1")
    assert code == 0, err
    data = json.loads(text)
    assert data["status"] == "optimal"
    assert abs(data["objective_value"] - 1044.5333450564908) <= 1e-6
    assert data["verification"]["ok"]


def test_a100_known_answer_proven_optimal() -> None:
    r = hetopt.solve(instance("a100"), options=SolveOptions(threads=1))
    assert r.status == Status.OPTIMAL
    assert abs(r.objective_value - 1044.5333450564908) <= 1e-6
    assert r.bound is not None and r.bound <= 1044.5333450564908 * (1 + 1.1e-6)
    # one pipeline of four A100s, 15 layers each
    assert sorted(r.tables["placement"]["num_layers"]) == [15, 15, 15, 15]


@pytest.mark.parametrize("name", ["l4", "t4"])
def test_l4_t4_optimal_at_least_helix(name: str) -> None:
    r = hetopt.solve(instance(name), options=SolveOptions(threads=1, time_limit_s=60))
    assert r.status == Status.OPTIMAL
    assert r.objective_value >= HELIX_VALUE[name] - 1e-6
    assert r.objective_value == pytest.approx(OPTIMUM[name], rel=1e-9)


@pytest.mark.slow
def test_llama70b_cluster_optimal_and_beats_helix() -> None:
    r = hetopt.solve(instance("70b"), options=SolveOptions(threads=1, time_limit_s=60))
    assert r.status == Status.OPTIMAL
    assert r.objective_value >= HELIX_VALUE["70b"] - 1e-6
    assert r.objective_value == pytest.approx(OPTIMUM["70b"], rel=1e-9)


def helix_value_of(name: str, placement: dict[str, tuple[int, int]]) -> float:
    """Helix's own MILP with every node's start and length fixed to ``placement``."""
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.readModel(str(HELIX / f"{CASES[name][1]}.lp"))
    K = {i: len(t) for i, t in read_lp(HELIX / f"{CASES[name][1]}.lp")["tables"].items()}
    for i, (s, k) in placement.items():
        _, j = h.getColByName(f"start_{i}")
        h.changeColBounds(j, s, s)
        for kk in range(1, K[i] + 1):
            _, j = h.getColByName(f"hold_{i}_{kk}")
            v = 1.0 if kk == k else 0.0
            h.changeColBounds(j, v, v)
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return float(h.getInfo().objective_function_value)


@pytest.mark.parametrize("name", ["a100", "l4", "t4"])
def test_helix_milp_agrees_on_our_placement(name: str) -> None:
    r = hetopt.solve(instance(name), options=SolveOptions(threads=1))
    place = {
        row.node: (int(row.start_layer), int(row.num_layers))
        for row in r.tables["placement"].itertuples()
    }
    assert helix_value_of(name, place) == pytest.approx(r.objective_value, rel=1e-7)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Maximize\n x\nEnd\n", "Subject To"),
        ("Maximize\n x\nSubject To\n c: x <= 1\nEnd\n", "node_throughput_constraint"),
    ],
)
def test_importer_rejects_other_lp_files(tmp_path: Path, text: str, message: str) -> None:
    lp = tmp_path / "x.lp"
    lp.write_text(text)
    with pytest.raises(InstanceError, match=message):
        read_lp(lp)
    code, _, err = run("convert", "helix", HELIX / CASES["a100"][0], lp, "-o", tmp_path / "o.json")
    assert code == 3 and str(lp) in err


def test_importer_checks_config_against_lp(tmp_path: Path) -> None:
    with pytest.raises(InstanceError, match="the MILP has nodes"):
        helix_to_instance(HELIX / CASES["l4"][0], HELIX / f"{CASES['a100'][1]}.lp")
    bad = tmp_path / "c.ini"
    bad.write_text("[SourceNode]\nconnected_nodes=[0]\n")
    code, _, err = run("convert", "helix", bad, HELIX / f"{CASES['a100'][1]}.lp")
    assert code == 3 and "NodeNames" in err
