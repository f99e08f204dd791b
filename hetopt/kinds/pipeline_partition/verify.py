"""Independent verifiers of ``pipeline_partition`` results.

They read only the instance and the result tables (never the Pyomo model, the groups or
the layout):

* serving: every node holds one contiguous range it has memory for; the ``flow`` table
  is a flow (links exist, ranges chain along every link that carries tokens, source
  links enter ranges starting at 0, sink links leave ranges ending at ``layers``,
  capacities and node throughputs hold, tokens are conserved); its value is the
  objective; and the max flow of the placement, recomputed with networkx on the
  node-split network, is not larger (the flow is maximal for the placement);
* training: stages are contiguous, cover every layer once, run where their layers have
  times, fit in memory, use no more devices of a type than there are; stage times are
  recomputed from the layers' profiles and the objective from them. With
  ``pipelines > 1`` every pipeline of the ``stages`` table is checked so, the devices are
  counted over all of them, and the ``batch_split`` table is checked (whole micro-batches
  ``>= 1`` summing to the batch, each pipeline's ``(b + S - 1) x bottleneck``); the
  objective is recomputed as the slowest pipeline's time.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ...result import Verification
from .data import SINK, SOURCE, ServingInstance, TrainingInstance

TOL = 1e-6


def placement_network(inst: ServingInstance, placement: dict[str, tuple[int, int]]) -> Any:
    """The node-split network of a placement: ``in:<id> -> out:<id>`` with the node's
    throughput, links whose ranges chain, ``source``/``sink`` at the ends."""
    import networkx as nx

    g = nx.DiGraph()
    g.add_node(SOURCE)
    g.add_node(SINK)
    for nd in inst.nodes:
        s, k = placement[nd.id]
        g.add_edge(f"in:{nd.id}", f"out:{nd.id}", capacity=float(nd.throughput_by_layers[k - 1]))
    L = inst.layers
    for ln in inst.links:
        c = float(ln.capacity_tokens_s)
        if ln.from_ == SOURCE:
            if placement[ln.to][0] == 0:
                g.add_edge(SOURCE, f"in:{ln.to}", capacity=c)
        elif ln.to == SINK:
            s, k = placement[ln.from_]
            if s + k == L:
                g.add_edge(f"out:{ln.from_}", SINK, capacity=c)
        else:
            s, k = placement[ln.from_]
            if s + k == placement[ln.to][0]:
                g.add_edge(f"out:{ln.from_}", f"in:{ln.to}", capacity=c)
    return g


def placement_max_flow(
    inst: ServingInstance, placement: dict[str, tuple[int, int]]
) -> tuple[float, dict[tuple[str, str], float]]:
    """Max tokens/s through a placement and a flow achieving it (link -> tokens/s)."""
    import networkx as nx

    g = placement_network(inst, placement)
    value, fd = nx.maximum_flow(g, SOURCE, SINK)
    flows: dict[tuple[str, str], float] = {}
    for u, nbrs in fd.items():
        for v, f in nbrs.items():
            if f <= 0 or (u.startswith("in:") and v.startswith("out:")):
                continue
            a = u[4:] if u.startswith("out:") else u
            b = v[3:] if v.startswith("in:") else v
            flows[a, b] = float(f)
    return float(value), flows


def verify_serving(
    inst: ServingInstance,
    objective_value: float | None,
    placement: pd.DataFrame,
    flow: pd.DataFrame,
) -> Verification:
    checks = (
        "placement",
        "links",
        "chaining",
        "capacities",
        "conservation",
        "objective",
        "maximal",
    )
    problems: list[str] = []
    L = inst.layers
    nodes = {nd.id: nd for nd in inst.nodes}
    where: dict[str, tuple[int, int]] = {}
    for r in placement.to_dict("records"):
        nid = str(r["node"])
        if nid not in nodes:
            problems.append(f"placement names an unknown node {nid!r}")
            continue
        if nid in where:
            problems.append(f"node {nid} is placed twice")
            continue
        s, k = int(r["start_layer"]), int(r["num_layers"])
        if s != r["start_layer"] or k != r["num_layers"]:
            problems.append(f"node {nid}: start/num_layers are not whole numbers")
        if s < 0 or k < 1 or s + k > L:
            problems.append(f"node {nid}: range [{s}, {s + k}) is not inside [0, {L})")
            continue
        if k > len(nodes[nid].throughput_by_layers):
            problems.append(
                f"node {nid}: holds {k} layers, its memory allows "
                f"{len(nodes[nid].throughput_by_layers)}"
            )
            continue
        where[nid] = (s, k)
    for nid in nodes:
        if nid not in where and not any(p.startswith(f"node {nid}") for p in problems):
            problems.append(f"node {nid} is missing from the placement")
    if problems:
        return Verification(ok=False, violations=tuple(problems), checks=checks)
    caps = {(ln.from_, ln.to): ln.capacity_tokens_s for ln in inst.links}
    scale = max(1.0, abs(objective_value or 0.0))
    tol = TOL * scale
    inflow: dict[str, float] = defaultdict(float)
    outflow: dict[str, float] = defaultdict(float)
    total = 0.0
    for r in flow.to_dict("records"):
        u, v, f = str(r["from"]), str(r["to"]), float(r["tokens_s"])
        if not math.isfinite(f) or f < -tol:
            problems.append(f"link {u} -> {v}: flow {f} is negative or not finite")
            continue
        if (u, v) not in caps:
            problems.append(f"flow on {u} -> {v}, which is not a link")
            continue
        if f > caps[u, v] * (1 + TOL) + tol:
            problems.append(f"link {u} -> {v}: {f:.9g} tokens/s over its capacity {caps[u, v]:.9g}")
        if f > tol:
            if u == SOURCE and where[v][0] != 0:
                problems.append(
                    f"source -> {v} carries tokens but {v}'s range starts at {where[v][0]}"
                )
            elif v == SINK and sum(where[u]) != L:
                problems.append(
                    f"{u} -> sink carries tokens but {u}'s range ends at {sum(where[u])}"
                )
            elif u != SOURCE and v != SINK and sum(where[u]) != where[v][0]:
                problems.append(
                    f"{u} -> {v} carries tokens but {u} ends at layer {sum(where[u])} and {v} "
                    f"starts at {where[v][0]}"
                )
        if u == SOURCE:
            total += f
        else:
            outflow[u] += f
        if v != SINK:
            inflow[v] += f
    for nid, nd in nodes.items():
        fin, fout = inflow.get(nid, 0.0), outflow.get(nid, 0.0)
        if abs(fin - fout) > tol:
            problems.append(f"node {nid}: {fin:.9g} tokens/s in, {fout:.9g} out")
        cap = nd.throughput_by_layers[where[nid][1] - 1]
        if fin > cap * (1 + TOL) + tol:
            problems.append(f"node {nid}: {fin:.9g} tokens/s over its throughput {cap:.9g}")
    if objective_value is None or not math.isclose(
        total, objective_value, rel_tol=TOL, abs_tol=TOL
    ):
        problems.append(
            f"flow out of the source is {total:.12g}, the result says {objective_value}"
        )
    best, _ = placement_max_flow(inst, where)
    if best > total * (1 + TOL) + tol:
        problems.append(f"the placement carries {best:.12g} tokens/s, the flow only {total:.12g}")
    return Verification(
        ok=not problems, objective_value=total, violations=tuple(problems), checks=checks
    )


def verify_training(
    inst: TrainingInstance,
    objective: str,
    objective_value: float | None,
    tables: Mapping[str, pd.DataFrame],
) -> Verification:
    checks: tuple[str, ...] = (
        "contiguous",
        "runs_there",
        "memory",
        "devices",
        "times",
        "objective",
    )
    problems: list[str] = []
    df = tables.get("stages")
    if df is None or df.empty:
        return Verification(ok=False, violations=("no stages table",), checks=checks)
    split = inst.split
    if split:
        checks = (*checks, "batch_split")
        if "pipeline" not in df.columns:
            return Verification(
                ok=False, violations=("stages has no pipeline column",), checks=checks
            )
    groups: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in df.to_dict("records"):
        groups[int(r["pipeline"]) if split else 0].append(r)
    used: dict[str, int] = defaultdict(int)
    times: dict[int, list[float]] = {}
    reduce: dict[int, float] = {}
    for p, rows in sorted(groups.items()):
        label = f"pipeline {p}: " if split else ""
        rows.sort(key=lambda r: int(r["stage"]))
        groups[p] = rows
        times[p], ar = _check_chain(inst, rows, label, used, problems)
        reduce[p] = max(ar, default=0.0)
    dev = {d.type: d for d in inst.devices}
    for t, n in used.items():
        if t in dev and n > dev[t].count:
            problems.append(f"{n} devices of type {t} used, there are {dev[t].count}")
    ls = tables.get("layer_stage")
    if ls is not None:
        got = {
            (int(r["pipeline"]) if split else 0, str(r["layer"])): int(r["stage"])
            for r in ls.to_dict("records")
        }
        for p, rows in groups.items():
            label = f"pipeline {p}: " if split else ""
            for k, r in enumerate(rows):
                s, n = int(r["start_layer"]), int(r["num_layers"])
                for layer in inst.layers[s : s + n]:
                    if got.get((p, layer.id)) != k:
                        problems.append(
                            f"layer_stage: {label}layer {layer.id} is in stage "
                            f"{got.get((p, layer.id))}, not {k}"
                        )
                        break
    value = None
    if not problems and all(times.values()):
        if split:
            value = _check_split(inst, tables.get("batch_split"), times, reduce, problems)
        else:
            ((p, ts),) = times.items()
            value = max(ts)
            if objective == "min_iteration_time":
                value = (inst.micro_batches + len(ts) - 1) * value + reduce[p]
        if value is not None and (
            objective_value is None
            or not math.isclose(value, objective_value, rel_tol=TOL, abs_tol=TOL)
        ):
            problems.append(
                f"objective recomputed as {value:.12g}, the result says {objective_value}"
            )
    return Verification(
        ok=not problems, objective_value=value, violations=tuple(problems), checks=checks
    )


def _check_chain(
    inst: TrainingInstance,
    rows: list[dict[str, Any]],
    label: str,
    used: dict[str, int],
    problems: list[str],
) -> tuple[list[float], list[float]]:
    """Check one pipeline's stages (sorted by ``stage``): contiguous from layer 0 to the
    end, runnable, in memory, times recomputed; count its devices into ``used``; return
    its stage times and the gradient all-reduce of each stage (ring, among its replicas:
    ``2 (r - 1) / r x grad / tp / bw``)."""
    layers = inst.layers
    L = len(layers)
    dev = {d.type: d for d in inst.devices}
    bw = {(c.from_type, c.to_type): c.bandwidth_gb_s for c in inst.interconnect}
    nxt = 0
    times: list[float] = []
    reduce: list[float] = []
    start = len(problems)
    for k, r in enumerate(rows):
        t = str(r["device_type"])
        s, n = int(r["start_layer"]), int(r["num_layers"])
        rep, tp = int(r["replicas"]), int(r["tp_degree"])
        if int(r["stage"]) != k:
            problems.append(
                f"{label}stages are numbered {[int(x['stage']) for x in rows]}, "
                f"not 0..{len(rows) - 1}"
            )
            break
        if s != nxt or n < 1 or s + n > L:
            problems.append(f"{label}stage {k}: layers [{s}, {s + n}) do not continue at {nxt}")
            break
        nxt = s + n
        if t not in dev:
            problems.append(f"{label}stage {k}: unknown device type {t!r}")
            continue
        if rep < 1 or rep > inst.max_data_parallel or tp < 1 or tp > inst.max_tensor_parallel:
            problems.append(f"{label}stage {k}: {rep} replicas x tp {tp} not allowed")
            continue
        used[t] += rep * tp
        if int(r["devices"]) != rep * tp:
            problems.append(f"{label}stage {k}: devices {r['devices']} != replicas x tp_degree")
        comp = 0.0
        for layer in layers[s : s + n]:
            tm = layer.time_ms.get(t) if tp == 1 else layer.tp_time_ms.get(t, {}).get(str(tp))
            if tm is None:
                problems.append(f"{label}stage {k}: layer {layer.id} has no time on {t} (tp {tp})")
                tm = math.inf
            comp += tm
        comp /= rep
        mem = sum(layer.memory_gb for layer in layers[s : s + n]) / tp
        if mem > dev[t].memory_gb * (1 + TOL):
            problems.append(
                f"{label}stage {k}: needs {mem:.6g} GB per device, {t} has {dev[t].memory_gb:g}"
            )
        trans = 0.0
        if k + 1 < len(rows) and layers[s + n - 1].activation_gb > 0:
            b = bw.get((t, str(rows[k + 1]["device_type"])))
            if b is not None:
                trans = layers[s + n - 1].activation_gb / b * 1000.0
        ar = 0.0
        bw_ar = dev[t].allreduce_gb_s
        if bw_ar is not None and rep > 1:
            grad = sum(layer.grad_gb for layer in layers[s : s + n])
            ar = 2.0 * (rep - 1) / rep * grad / tp / bw_ar * 1000.0
        reduce.append(ar)
        checked = [
            ("compute_ms", comp),
            ("transfer_ms", trans),
            ("time_ms", comp + trans),
            ("memory_gb", mem),
        ]
        if "allreduce_ms" in r:
            checked.append(("allreduce_ms", ar))
        elif ar > 0:
            problems.append(f"{label}stage {k}: no allreduce_ms, recomputed {ar:.9g}")
        for name, want in checked:
            if not math.isclose(float(r[name]), want, rel_tol=TOL, abs_tol=TOL):
                problems.append(f"{label}stage {k}: {name} is {r[name]}, recomputed {want:.9g}")
        times.append(comp + trans)
    if nxt != L and len(problems) == start:
        problems.append(f"{label}the stages end at layer {nxt}, the model has {L}")
    return times, reduce


def _check_split(
    inst: TrainingInstance,
    split: pd.DataFrame | None,
    times: dict[int, list[float]],
    reduce: dict[int, float],
    problems: list[str],
) -> float | None:
    """The batch split: one row per pipeline of the stages table, whole micro-batches
    ``>= 1`` summing to ``micro_batches``, at most ``pipelines`` pipelines, each row's
    stage count, bottleneck and ``(b + S - 1) x bottleneck + allreduce`` recomputed;
    returns the slowest pipeline's time (the objective)."""
    if split is None or split.empty:
        problems.append("no batch_split table")
        return None
    rows = {int(r["pipeline"]): r for r in split.to_dict("records")}
    if len(rows) != len(split) or set(rows) != set(times):
        problems.append(
            f"batch_split names pipelines {sorted(int(p) for p in split['pipeline'])}, "
            f"the stages table {sorted(times)}"
        )
        return None
    if inst.pipelines is not None and len(rows) > inst.pipelines:
        problems.append(f"{len(rows)} pipelines used, at most {inst.pipelines} allowed")
    total = 0
    value = 0.0
    for p, r in sorted(rows.items()):
        b = r["micro_batches"]
        if b != int(b) or int(b) < 1:
            problems.append(f"pipeline {p}: {b} micro-batches is not a whole number >= 1")
            continue
        b = int(b)
        total += b
        S = len(times[p])
        bottleneck = max(times[p])
        want = (b + S - 1) * bottleneck + reduce[p]
        checked = [
            ("stages", r["stages"], S),
            ("bottleneck_ms", r["bottleneck_ms"], bottleneck),
            ("time_ms", r["time_ms"], want),
        ]
        if "allreduce_ms" in r:
            checked.append(("allreduce_ms", r["allreduce_ms"], reduce[p]))
        for name, got, exp in checked:
            if not math.isclose(float(got), exp, rel_tol=TOL, abs_tol=TOL):
                problems.append(f"pipeline {p}: {name} is {got}, recomputed {exp:.9g}")
        value = max(value, want)
    if total != inst.micro_batches:
        problems.append(
            f"the pipelines run {total} micro-batches, the batch is {inst.micro_batches}"
        )
    return value
