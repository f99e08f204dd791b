"""``llm_serving`` / ``min_cost``: Mélange's published example, closed forms, brute force,
bad input, export round trip and the verifier.

Known answers and where they come from:

* Mélange's example (``melange/config/example.json`` and README of
  github.com/tyler-griggs/melange-release): slice_factor 1 -> 3 A10G + 1 A100-80GB =
  6.70 $/h (the README's solver output). 5.69 $/h at slice factors 4 and 16 and 4.68 $/h
  in the continuous limit are derived by hand in ``instances/llm_serving/README.md``.
* One type: ``count = ceil(sum_b rate_b / throughput_b / target)``.
* Up to 3 types: the optimum by enumerating every way of distributing each bucket's slices
  over the types (counts = the load rounded up), written here independently of the kind.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path

import highspy
import numpy as np
import pytest
from click.testing import CliRunner

import hetopt
from hetopt import InstanceError, Status, UsageError
from hetopt.cli import main

ROOT = Path(__file__).resolve().parents[3]
DIR = ROOT / "instances" / "llm_serving"
MELANGE = DIR / "melange_example.json"


def melange(slice_factor: int = 1, **changes) -> dict:
    d = json.loads(MELANGE.read_text())
    d["slice_factor"] = slice_factor
    d.update(changes)
    return d


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=True)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise AssertionError(f"hetopt {' '.join(map(str, args))} raised {res.exception!r}")
    return res.exit_code, res.stdout, res.stderr


# ----------------------------------------------------------------------------- Mélange
@pytest.mark.parametrize("slices", ["aggregated", "binary"])
@pytest.mark.parametrize(("slice_factor", "expected"), [(1, 6.70), (4, 5.69), (16, 5.69)])
def test_melange_published_example(slices: str, slice_factor: int, expected: float) -> None:
    r = hetopt.solve(melange(slice_factor), slices=slices)
    assert r.status == Status.OPTIMAL and r.verification.ok, r.verification.violations
    assert r.objective_value == pytest.approx(expected, abs=1e-9)
    assert r.info["model"] == f"min_cost/{slices}"
    # the continuous limit's counts (1 + 1) cannot hold integer slices: the full ILP runs
    assert r.info["stages"] == "relaxation+slices+full"
    assert r.info["relaxation_bound"] == pytest.approx(4.68)
    direct = hetopt.solve(melange(slice_factor), slices=slices, two_stage=False)
    assert direct.objective_value == pytest.approx(expected, abs=1e-9)
    counts = dict(zip(r.instances["gpu_type"], r.instances["count"], strict=True))
    if slice_factor == 1:  # the README's recommendation
        assert counts == {"A10G": 3, "A100-80GB": 1}
    else:
        assert counts == {"A10G": 2, "A100-80GB": 1}
    # every slice of every bucket routed once, at rate / F
    assert len(r.routing) == 4 * slice_factor
    assert r.routing.groupby("bucket")["rate_rps"].sum().to_dict() == pytest.approx(
        {"in0_out0": 6.0, "in0_out1": 3.0, "in1_out0": 15.0, "in1_out1": 6.0}
    )


def test_melange_continuous_limit() -> None:
    r = hetopt.solve(melange(1), slices="continuous")
    assert r.status == Status.OPTIMAL and r.verification.ok
    assert r.objective_value == pytest.approx(4.68, abs=1e-9)
    counts = dict(zip(r.instances["gpu_type"], r.instances["count"], strict=True))
    assert counts == {"A10G": 1, "A100-80GB": 1}
    # the continuous limit is not the LP relaxation of the counts (3.67 x 1.125 = 4.13)
    assert r.objective_value > 3.67 * 1.125 + 0.5


def test_slice_factor_only_tightens_towards_the_continuous_limit() -> None:
    values = [hetopt.solve(melange(f)).objective_value for f in (1, 2, 4, 8)]
    limit = hetopt.solve(melange(1), slices="continuous").objective_value
    assert all(v >= limit - 1e-9 for v in values)
    assert values[0] >= values[1] >= values[3]  # a refinement of 1 and of 2 and 4


def test_shipped_answers() -> None:
    answers = json.loads((DIR / "answers.json").read_text())
    assert answers
    for name, cases in answers.items():
        for case in cases:
            r = hetopt.solve(DIR / name, case["objective"], **case.get("params", {}))
            if case["value"] is None:
                assert r.status == Status.INFEASIBLE, (name, r.status)
                continue
            assert r.status == Status.OPTIMAL, (name, case, r.termination)
            assert r.verification.ok, r.verification.violations
            assert r.objective_value == pytest.approx(case["value"], rel=1e-7), (name, case)


def test_stock_too_small_is_infeasible_exit_4() -> None:
    path = DIR / "stock_infeasible.json"
    r = hetopt.solve(path)
    assert r.status == Status.INFEASIBLE and r.objective_value is None
    code, _, _ = run("solve", path)
    assert code == 4


# ----------------------------------------------------------------------------- closed form
def random_instance(rng: random.Random, types: int, buckets: int, stock: bool = False) -> dict:
    names = [f"g{j}" for j in range(types)]
    gpus = []
    for j in range(types):
        g: dict = {"type": names[j], "cost_per_hour": round(rng.uniform(0.5, 8.0), 2)}
        if stock:
            g["available"] = rng.randint(0, 3)
        gpus.append(g)
    bs = []
    for b in range(buckets):
        servable = [n for n in names if rng.random() < 0.7] or [rng.choice(names)]
        bs.append(
            {
                "id": f"b{b}",
                "rate_rps": round(rng.uniform(0.0, 12.0), 3),
                "throughput_rps": {n: round(rng.uniform(0.5, 15.0), 3) for n in servable},
            }
        )
    return {"kind": "llm_serving", "gpus": gpus, "buckets": bs}


@pytest.mark.parametrize("seed", range(6))
def test_one_type_closed_form(seed: int) -> None:
    rng = random.Random(seed)
    d = random_instance(rng, 1, rng.randint(1, 6))
    d["slice_factor"] = rng.choice([1, 3, 8])
    target = rng.choice([1.0, 0.8, 0.55])
    load = sum(b["rate_rps"] / b["throughput_rps"]["g0"] for b in d["buckets"])
    count = math.ceil(load / target - 1e-12)
    r = hetopt.solve(d, target_utilization=target)
    assert r.status == Status.OPTIMAL and r.verification.ok
    assert int(r.instances["count"].iloc[0]) == count
    assert r.objective_value == pytest.approx(count * d["gpus"][0]["cost_per_hour"])


# ----------------------------------------------------------------------------- brute force
def brute_force_min_cost(d: dict, target: float = 1.0) -> float | None:
    """Every distribution of every bucket's slices over the types that can serve it; the
    counts are the loads rounded up (capped by the stock)."""
    F = d.get("slice_factor", 1)
    gpus = d["gpus"]
    names = [g["type"] for g in gpus]
    options = []
    for b in d["buckets"]:
        serv = [names.index(t) for t in b["throughput_rps"]]
        opts = []
        for split in itertools.product(range(F + 1), repeat=len(serv)):
            if sum(split) != F:
                continue
            load = [0.0] * len(gpus)
            for j, k in zip(serv, split, strict=True):
                load[j] += k * b["rate_rps"] / F / b["throughput_rps"][names[j]]
            opts.append(load)
        options.append(opts)
    best = None
    for combo in itertools.product(*options):
        load = np.sum(combo, axis=0)
        counts = [math.ceil(x / target - 1e-9) for x in load]
        if any(
            g.get("available") is not None and n > g["available"]
            for g, n in zip(gpus, counts, strict=True)
        ):
            continue
        cost = sum(n * g["cost_per_hour"] for g, n in zip(gpus, counts, strict=True))
        best = cost if best is None else min(best, cost)
    return best


@pytest.mark.parametrize("seed", range(10))
def test_brute_force_up_to_three_types(seed: int) -> None:
    rng = random.Random(100 + seed)
    d = random_instance(rng, rng.randint(1, 3), rng.randint(1, 3), stock=seed % 3 == 0)
    d["slice_factor"] = rng.choice([1, 2, 3])
    target = rng.choice([1.0, 0.75])
    expected = brute_force_min_cost(d, target)
    for slices, two_stage in (("aggregated", True), ("aggregated", False), ("binary", True)):
        r = hetopt.solve(d, slices=slices, two_stage=two_stage, target_utilization=target)
        if expected is None:
            assert r.status == Status.INFEASIBLE, (slices, r.objective_value)
            continue
        assert r.status == Status.OPTIMAL and r.verification.ok, r.verification.violations
        assert r.objective_value == pytest.approx(expected, abs=1e-6), (slices, d)
        assert ("stages" in r.info) == two_stage


# ----------------------------------------------------------------------------- change cost
def test_change_cost_keeps_instances_when_stopping_costs_more() -> None:
    d = json.loads(MELANGE.read_text())
    d["gpus"] = d["gpus"][:1]
    for b in d["buckets"]:
        b["throughput_rps"] = {"A10G": b["throughput_rps"]["A10G"]}
    d["deployed"] = {"A10G": 15}  # 12 needed
    free = hetopt.solve(d)
    assert free.objective_value == pytest.approx(12 * 1.01)
    sticky = hetopt.solve(d, change_cost=2.0)  # stopping 3 costs 6 > 3 x 1.01 saved
    assert sticky.instances["count"].iloc[0] == 15
    assert sticky.objective_value == pytest.approx(15 * 1.01)
    cheap = hetopt.solve(d, change_cost=0.5)  # 3 x 0.5 < 3 x 1.01
    assert cheap.instances["count"].iloc[0] == 12
    assert cheap.objective_value == pytest.approx(12 * 1.01 + 1.5)
    assert cheap.info["change_cost"] == pytest.approx(1.5)
    assert cheap.verification.ok


# ----------------------------------------------------------------------------- bad input
BAD = [
    (lambda d: d["buckets"][0].update(rate_rps=-1.0), "buckets[0].rate_rps"),
    (lambda d: d["buckets"][1].update(throughput_rps={}), "buckets[1].throughput_rps"),
    (
        lambda d: d["buckets"][0]["throughput_rps"].update(H100=3.0),
        "buckets[0].throughput_rps.H100",
    ),
    (
        lambda d: d["buckets"][0]["throughput_rps"].update(A10G=0.0),
        "buckets[0].throughput_rps.A10G",
    ),
    (lambda d: d.update(deployed={"H100": 1}), "deployed.H100"),
    (lambda d: d.update(deployed={"A10G": -1}), "deployed.A10G"),
    (lambda d: d["gpus"].append(dict(d["gpus"][0])), "gpus[2].type"),
    (lambda d: d["buckets"].append(dict(d["buckets"][0])), "buckets[4].id"),
    (lambda d: d["gpus"][0].update(cost_per_hour=-1.01), "gpus[0].cost_per_hour"),
    (lambda d: d.update(slice_factor=0), "slice_factor"),
    (
        lambda d: (d["gpus"][0].update(available=2), d.update(deployed={"A10G": 3})),
        "deployed.A10G",
    ),
    (lambda d: d.update(power_cap_w=100.0), "gpus[0].power_w"),
    (lambda d: d["gpus"][0].update(kv_link_gb_s=2.0), "gpus[0].kv_link_gb_s"),
]


@pytest.mark.parametrize(("mutate", "field"), BAD, ids=[f for _, f in BAD])
def test_bad_input_names_the_field(tmp_path: Path, mutate, field: str) -> None:
    d = melange()
    mutate(d)
    with pytest.raises(InstanceError) as info:
        hetopt.solve(d)
    assert info.value.field == field, str(info.value)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(d))
    code, _, err = run("solve", bad)
    assert code == 3 and field in err and str(bad) in err


def test_objective_needs_its_fields_exit_3(tmp_path: Path) -> None:
    code, _, err = run("solve", MELANGE, "-O", "min_max_load")
    assert code == 3 and "deployed" in err
    code, _, err = run("solve", MELANGE, "-O", "pd_split")
    assert code == 3 and "buckets[0].input_tokens" in err


def test_parameters_are_checked() -> None:
    with pytest.raises(UsageError, match="provision"):
        hetopt.solve(MELANGE, provision="cost")  # a min_max_load parameter
    with pytest.raises(UsageError, match="target_utilization"):
        hetopt.solve(MELANGE, target_utilization=1.5)
    with pytest.raises(UsageError, match="slices"):
        hetopt.solve(MELANGE, slices="fractional")
    code, _, err = run("solve", MELANGE, "-p", "change_cost=-1")
    assert code == 2 and "change_cost" in err


# ----------------------------------------------------------------------------- export
EXPORTS = [
    ("melange_example.json", "min_cost", {}),
    ("melange_slice4.json", "min_cost", {"slices": "binary"}),
    ("melange_example.json", "min_cost", {"slices": "continuous"}),
    ("melange_deployed.json", "min_max_load", {}),
    ("melange_deployed.json", "min_max_load", {"provision": "cost", "target_utilization": 0.8}),
    ("pd_split_example.json", "pd_split", {}),
    ("melange_deployed.json", "min_cost", {"change_cost": 0.3}),
]


@pytest.mark.parametrize("fmt", ["lp", "mps"])
@pytest.mark.parametrize(("name", "objective", "params"), EXPORTS)
def test_exported_model_has_the_reported_objective(
    tmp_path: Path, name: str, objective: str, params: dict, fmt: str
) -> None:
    """The model is in the user's units: HiGHS on the exported file finds the value the
    result reports (for provisioning: its first stage, the cost)."""
    path = DIR / name
    r = hetopt.solve(path, objective, **params)
    assert r.status == Status.OPTIMAL and r.verification.ok
    out = tmp_path / f"model.{fmt}"
    args = ["export", path, "-O", objective, "--format", fmt, "-o", out]
    for k, v in params.items():
        args += ["-p", f"{k}={v}"]
    code, _, err = run(*args)
    assert code == 0, err
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 0.0)
    assert h.readModel(str(out)) != highspy.HighsStatus.kError
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    assert h.getInfo().objective_function_value == pytest.approx(r.objective_value, abs=1e-7)


# ----------------------------------------------------------------------------- verifier
def _tampered(result, table: str, edit) -> hetopt.Verification:
    tables = {k: v.copy() for k, v in result.tables.items()}
    edit(tables[table])
    bad = hetopt.Result(
        result.kind,
        result.objective,
        result.status,
        result.termination,
        result.objective_value,
        tables=tables,
        info=result.info,
    )
    return hetopt.verify(MELANGE, bad)


def test_verifier_rejects_tampered_solutions() -> None:
    r = hetopt.solve(MELANGE)
    assert hetopt.verify(MELANGE, r).ok

    def less_rate(df):
        df.loc[0, "rate_rps"] *= 0.5

    def fewer_a10g(df):
        df.loc[df["gpu_type"] == "A10G", "count"] -= 1
        df.loc[df["gpu_type"] == "A10G", "cost_per_hour"] -= 1.01

    def wrong_cost(df):
        df.loc[0, "cost_per_hour"] += 1.0

    def unservable(df):
        df.loc[0, "gpu_type"] = "nope"

    for table, edit in (
        ("routing", less_rate),
        ("instances", fewer_a10g),
        ("instances", wrong_cost),
        ("routing", unservable),
    ):
        v = _tampered(r, table, edit)
        assert not v.ok, edit.__name__
    wrong = hetopt.Result(
        r.kind,
        r.objective,
        r.status,
        r.termination,
        r.objective_value + 1.0,
        tables=r.tables,
        info=r.info,
    )
    assert not hetopt.verify(MELANGE, wrong).ok


def test_generator_round_trip_and_cli(tmp_path: Path) -> None:
    out = tmp_path / "g.json"
    code, _, err = run("generate", "llm-serving", "--buckets", "6", "--types", "3", "-o", out)
    assert code == 0, err
    for objective in ("min_cost", "min_max_load", "pd_split"):
        code, text, err = run("solve", out, "-O", objective, "--json")
        assert code == 0, (objective, err)
        assert json.loads(text)["verification"]["ok"]


def test_converted_trace_brute_force() -> None:
    """The instance converted from the Azure trace excerpt (3 types, 7 buckets, F = 1)."""
    path = DIR / "azure_conv_head300.json"
    d = json.loads(path.read_text())
    expected = brute_force_min_cost(d)
    assert expected is not None
    r = hetopt.solve(path)
    assert r.status == Status.OPTIMAL and r.verification.ok
    assert r.objective_value == pytest.approx(expected, abs=1e-9)
