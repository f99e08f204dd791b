"""Fingerprint every model hetopt builds and every result it returns, to prove a refactor
changed nothing.

For each case (every shipped instance x every objective of its kind x the parameter
variants that select another formulation, plus seeded generated instances and FJSP
conversions) it records

* the SHA-256 of the exported MPS and LP files (``hetopt.export_model``);
* the SHA-256 of every model HiGHS was asked to solve during ``hetopt.solve`` (read back
  from HiGHS with ``getLp()`` at each solve, with the HiGHS options that matter), in order;
* the result: status, termination, objective value, bound, gap, every table and the
  ``info`` entries that are not timings.

Usage::

    python benchmarks/fingerprint_models.py --save before.json
    # ... change the code ...
    python benchmarks/fingerprint_models.py --compare before.json

``--compare`` exits 1 and lists the cases that differ. Solves run with ``threads=1`` and a
fixed seed, so a run is deterministic on one machine and one HiGHS version.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
INSTANCES = ROOT / "instances"

# parameter variants that select another formulation or method (beyond the defaults)
VARIANTS: dict[str, list[dict[str, Any]]] = {
    "gpu_cluster": [{}, {"agnostic": True}],
    "multicore": [
        {},
        {"relaxation": True},
        {"warm_start": False},
        {"symmetry": False},
        {"formulation": "disjunctive"},
        {"formulation": "time_indexed"},
        {"pareto_points": 4},
    ],
    "cpu_gpu": [{}],
    "multi_resource": [
        {},
        {"fragmentation": False},
        {"symmetry": False},
        {"config_bound": False},
        {"warm_start": False},
    ],
    "human_robot": [{}, {"method": "exact"}, {"method": "decomposition"}, {"diagnose": False}],
    "client_selection": [
        {},
        {"method": "milp"},
        {"method": "fast"},
        {"method": "greedy"},
        {"method": "lp_round"},
        {"baseline": False},
        {"formulation": "disjunctive"},
    ],
}

# info keys that measure time (they differ from run to run)
_TIME_WORDS = ("_s", "time", "seconds", "runtime", "elapsed")


def _timing_key(key: str) -> bool:
    k = key.lower()
    if k in ("horizon_s", "now_s", "makespan_s", "deadline_s", "energy_budget_j"):
        return False
    return k.endswith("_s") or any(w in k for w in _TIME_WORDS[1:])


def _num(x: Any) -> Any:
    if isinstance(x, bool) or x is None or isinstance(x, str | int):
        return x
    if isinstance(x, np.generic):
        return _num(x.item())
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return float(f"{x:.12g}")
    if isinstance(x, dict):
        return {str(k): _num(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_num(v) for v in x]
    return str(x)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _arr(a: Any) -> bytes:
    return np.ascontiguousarray(np.asarray(a, dtype=float)).tobytes()


class Recorder:
    """Hashes every model HiGHS solves (patched into ``HighsModel.solve``)."""

    def __init__(self) -> None:
        self.models: list[str] = []

    def record(self, h: Any) -> None:
        lp = h.getLp()
        a = lp.a_matrix_
        parts = [
            _arr(lp.col_cost_),
            _arr(lp.col_lower_),
            _arr(lp.col_upper_),
            _arr(lp.row_lower_),
            _arr(lp.row_upper_),
            _arr(a.start_),
            _arr(a.index_),
            _arr(a.value_),
            _arr([int(v) for v in lp.integrality_]),
            _arr([lp.offset_]),
            str(lp.sense_).encode(),
        ]
        opts = []
        for name in (
            "solver",
            "presolve",
            "time_limit",
            "mip_rel_gap",
            "mip_abs_gap",
            "simplex_dual_edge_weight_strategy",
            "simplex_strategy",
            "random_seed",
            "threads",
            "objective_bound",
            "mip_max_nodes",
        ):
            got = h.getOptionValue(name)
            opts.append(f"{name}={got[1] if isinstance(got, tuple) else got}")
        self.models.append(_sha(b"".join(parts)) + ":" + _sha(";".join(opts).encode()))


@contextlib.contextmanager
def recording() -> Iterator[Recorder]:
    from hetopt import highs

    rec = Recorder()
    original_run = highs._HighsClass.run

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        rec.record(self)
        return original_run(self, *args, **kwargs)

    highs._HighsClass.run = run
    try:
        yield rec
    finally:
        highs._HighsClass.run = original_run


def cases() -> list[tuple[str, dict[str, Any], str, dict[str, Any]]]:
    """(label, instance dict, objective, params) for every case."""
    import hetopt
    from hetopt.instance import load_data

    out: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = []
    dicts: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(INSTANCES.rglob("*.json")):
        if path.name in ("answers.json", "known_answers.json", "instances.json"):
            continue
        data = load_data(path)
        if "kind" not in data:
            continue
        dicts.append((str(path.relative_to(ROOT)), data))

    from hetopt.formats.fjsp import read_fjsp
    from hetopt.kinds.human_robot import fjsp_to_instance
    from hetopt.kinds.multicore import fjsp_to_multicore

    for name in ("kacem/k1.txt", "fattahi/sfjs01.txt", "fattahi/sfjs02.txt"):
        fj = read_fjsp(INSTANCES / "fjsp" / name)
        dicts.append((f"fjsp/{name}->multicore", fjsp_to_multicore(fj)))
        dicts.append((f"fjsp/{name}->human_robot", fjsp_to_instance(fj)))

    from hetopt.kinds.client_selection.generate import generate as cs_gen
    from hetopt.kinds.cpu_gpu.generate import generate as cg_gen
    from hetopt.kinds.gpu_cluster.generate import generate as gc_gen
    from hetopt.kinds.human_robot.generate import generate as hr_gen
    from hetopt.kinds.multi_resource.generate import generate as mr_gen
    from hetopt.kinds.multicore.generate import generate as mc_gen

    gens: list[tuple[str, Any]] = [
        ("gen/gpu_cluster/40", lambda: gc_gen(40, seed=3)),
        ("gen/gpu_cluster/40/single", lambda: gc_gen(40, seed=4, multi_gpu=False)),
        ("gen/multicore/U1-100/3x8", lambda: mc_gen("U1-100", 3, 8, seed=1)),
        ("gen/cpu_gpu/8", lambda: cg_gen(8, seed=2, slowdown_pairs=2)),
        ("gen/cpu_gpu/8/2x2", lambda: cg_gen(8, num_cpus=2, num_gpus=2, seed=5)),
        ("gen/multi_resource/8x3", lambda: mr_gen(8, 3, seed=1)),
        ("gen/human_robot/6x3", lambda: hr_gen(6, 3, seed=1)),
        ("gen/human_robot/6x3/dl", lambda: hr_gen(6, 3, seed=2, deadline_fraction=0.5)),
        ("gen/client_selection/8", lambda: cs_gen(8, seed=1)),
        ("gen/client_selection/8/par", lambda: cs_gen(8, seed=2, uplink="parallel")),
        (
            "gen/client_selection/8/mindur",
            lambda: cs_gen(8, seed=3, objective="min_duration"),
        ),
    ]
    for label, make in gens:
        dicts.append((label, make().to_dict()))

    for label, data in dicts:
        kind = hetopt.get_kind(data["kind"])
        for obj in kind.objective_names():
            for params in VARIANTS.get(data["kind"], [{}]):
                tag = ",".join(f"{k}={v}" for k, v in params.items())
                out.append((f"{label} | {obj} | {tag}", data, obj, params))
    return out


def fingerprint(
    data: dict[str, Any], objective: str, params: dict[str, Any], time_cap_s: float
) -> dict[str, Any]:
    import hetopt

    fp: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in ("mps", "lp"):
            path = Path(tmp) / f"model.{fmt}"
            try:
                hetopt.export_model(data, path, fmt, objective, **params)
                fp[f"export_{fmt}"] = _sha(path.read_bytes())
            except Exception as exc:
                fp[f"export_{fmt}"] = f"raised {type(exc).__name__}: {exc}"
    opts = hetopt.SolveOptions(threads=1, seed=0)
    t0 = time.perf_counter()
    with recording() as rec:
        try:
            res = hetopt.solve(data, objective, opts, **params)
        except Exception as exc:
            fp["solve"] = f"raised {type(exc).__name__}: {exc}"
            fp["highs_models"] = rec.models
            return fp
    fp["seconds"] = round(time.perf_counter() - t0, 3)
    fp["highs_models"] = rec.models
    d = res.to_dict()
    fp["status"] = d["status"]
    fp["termination"] = d["termination"]
    for key in ("objective_value", "bound", "gap"):
        fp[key] = _num(d[key])
    fp["tables"] = {
        name: _sha(json.dumps(_num(rows), sort_keys=True).encode())
        for name, rows in d["tables"].items()
    }
    fp["table_columns"] = {
        name: list(rows[0]) if rows else [] for name, rows in d["tables"].items()
    }
    fp["verification"] = _num(d["verification"])
    fp["info"] = {k: v for k, v in _num(d["info"]).items() if not _timing_key(k)}
    if fp["seconds"] > time_cap_s:
        fp["slow"] = True
    return fp


def run(select: str | None, time_cap_s: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    all_cases = cases()
    for n, (label, data, objective, params) in enumerate(all_cases):
        if select and select not in label:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out[label] = fingerprint(data, objective, params, time_cap_s)
        print(
            f"[{n + 1}/{len(all_cases)}] {label}: {out[label].get('status', out[label].get('solve'))}"
            f" ({out[label].get('seconds', '?')} s)",
            file=sys.stderr,
        )
    return out


_IGNORED = ("seconds", "slow")


def _comparable(fp: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in fp.items() if k not in _IGNORED}
    if isinstance(out.get("info"), dict):
        out["info"] = {k: v for k, v in out["info"].items() if not _timing_key(k)}
    return out


def compare(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    diffs = []
    for label in sorted(set(before) | set(after)):
        if label not in after:
            diffs.append(f"{label}: missing after")
            continue
        if label not in before:
            diffs.append(f"{label}: new case")
            continue
        b = _comparable(before[label])
        a = _comparable(after[label])
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                diffs.append(f"{label}: {key}: {b.get(key)!r} -> {a.get(key)!r}")
    return diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--save", type=Path, help="write the fingerprints here")
    ap.add_argument("--compare", type=Path, help="compare with fingerprints saved earlier")
    ap.add_argument("--select", help="only cases whose label contains this")
    ap.add_argument("--time-cap", type=float, default=60.0, help="flag cases slower than this")
    ap.add_argument(
        "--rename",
        action="append",
        default=[],
        metavar="KIND:OLD=NEW",
        help="a table deliberately renamed in KIND's cases (compare its old hash under NEW)",
    )
    args = ap.parse_args()
    fps = run(args.select, args.time_cap)
    if args.save:
        args.save.write_text(json.dumps(fps, indent=1, sort_keys=True) + "\n")
        print(f"wrote {args.save} ({len(fps)} cases)", file=sys.stderr)
    if args.compare:
        before = json.loads(args.compare.read_text())
        if args.select:
            before = {k: v for k, v in before.items() if args.select in k}
        for spec in args.rename:
            kind, _, names = spec.partition(":")
            old, _, new = names.partition("=")
            for label, fp in before.items():
                if kind in label:
                    for key in ("tables", "table_columns"):
                        if isinstance(fp.get(key), dict) and old in fp[key]:
                            fp[key] = {new if k == old else k: v for k, v in fp[key].items()}
        diffs = compare(before, fps)
        for d in diffs:
            print(d)
        print(
            f"{len(fps)} cases compared: {'identical' if not diffs else f'{len(diffs)} differences'}",
            file=sys.stderr,
        )
        return 1 if diffs else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
