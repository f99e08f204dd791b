"""Import Helix's published artifacts (ASPLOS'25, Apache-2.0) as a serving instance.

Helix writes, per experiment, a cluster config (``.ini``: compute nodes, their GPU type,
who is connected to whom) and the MILP it solved (Gurobi ``.lp``), whose rows carry the
profiled numbers:

* ``node_throughput_constraint_<i>``: ``- T_1 hold_<i>_1 - T_2 hold_<i>_2 ... + inflow <= 0``,
  so ``T_k`` is node ``i``'s tokens/s holding ``k`` layers (the list's length is the
  most layers that fit in its memory);
* ``edge_flow_constr_<u>_<v>``: ``flow_<u>_<v> - C switch_<u>_<v> <= 0``, so ``C`` is the
  link's capacity in tokens/s (``u`` may be ``source``, ``v`` may be ``sink``);
* ``end_constraint_<i>``: ``start_<i> + sum_k k hold_<i>_k <= L``: the model's layers.

Node ``i`` of the LP is ``[ComputeNode-i]`` of the config; its ``type`` comes from there,
and every link of the LP must join nodes the config connects. Helix's solution files
(``compute_node_<i + offset>=[layers]``) read with :func:`read_solution`.
"""

from __future__ import annotations

import ast
import configparser
import re
from pathlib import Path
from typing import Any

from ...errors import InstanceError

_SECTION_END = re.compile(r"^\s*(Bounds|Binaries|Binary|Generals|General|End)\s*$", re.I | re.M)
_ROW = re.compile(r"(?:^|\n)\s*([A-Za-z_][\w.\[\]]*)\s*:", re.M)
_TERM = re.compile(r"([+-])?\s*((?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)?\s*([A-Za-z_]\w*)")
_SENSE = re.compile(r"(<=|>=|=<|=>|<|>|=)\s*([+-]?\s*(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*$")


def _rows(text: str, source: str) -> dict[str, tuple[list[tuple[float, str]], str, float]]:
    """``name -> (terms, sense, rhs)`` of the ``Subject To`` section of an LP file."""
    m = re.search(r"^\s*(Subject To|such that|st|s\.t\.)\s*$", text, re.I | re.M)
    if m is None:
        raise InstanceError("no 'Subject To' section: not an LP file", None, source)
    body = text[m.end() :]
    end = _SECTION_END.search(body)
    if end is not None:
        body = body[: end.start()]
    names = list(_ROW.finditer(body))
    out: dict[str, tuple[list[tuple[float, str]], str, float]] = {}
    for k, nm in enumerate(names):
        chunk = body[nm.end() : names[k + 1].start() if k + 1 < len(names) else len(body)]
        chunk = " ".join(chunk.split())
        sm = _SENSE.search(chunk)
        if sm is None:
            raise InstanceError(f"row {nm.group(1)!r}: no <=, >= or = found", None, source)
        lhs = chunk[: sm.start()]
        terms = []
        for t in _TERM.finditer(lhs):
            sign = -1.0 if t.group(1) == "-" else 1.0
            coef = float(t.group(2)) if t.group(2) else 1.0
            terms.append((sign * coef, t.group(3)))
        out[nm.group(1)] = (terms, sm.group(1), float(sm.group(2).replace(" ", "")))
    return out


def _node_key(s: str) -> str:
    return s.strip().strip("'\"")


def read_config(path: str | Path) -> dict[str, Any]:
    """Helix's cluster config: ``{"nodes": {id: {"type", "connected"}}, "source": [...],
    "sink": [...]}`` (ids as strings)."""
    src = str(path)
    cp = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise InstanceError("no such file", None, src) from None
    except UnicodeDecodeError:
        raise InstanceError("not a text file (expected Helix's cluster .ini)", None, src) from None
    try:
        cp.read_string(text, source=src)
    except configparser.Error as exc:
        raise InstanceError(
            f"not a valid .ini file: {str(exc).splitlines()[0]}", None, src
        ) from None

    def parse_list(section: str, key: str) -> list[str]:
        raw = cp.get(section, key, fallback=None)
        if raw is None:
            raise InstanceError(f"[{section}] has no '{key}'", None, src)
        try:
            items = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            raise InstanceError(f"[{section}] {key}: not a list: {raw!r}", None, src) from None
        if not isinstance(items, list | tuple):
            raise InstanceError(f"[{section}] {key}: not a list: {raw!r}", None, src)
        return [_node_key(str(v)) for v in items]

    if not cp.has_section("NodeNames"):
        raise InstanceError("no [NodeNames] section: not a Helix cluster config", None, src)
    try:
        total = cp.getint("NodeNames", "total_compute_nodes")
    except (configparser.Error, ValueError):
        raise InstanceError(
            "[NodeNames] total_compute_nodes: expected a whole number", None, src
        ) from None
    nodes: dict[str, dict[str, Any]] = {}
    for i in range(total):
        sec = f"ComputeNode-{i}"
        if not cp.has_section(sec):
            raise InstanceError(f"[{sec}] is missing (total_compute_nodes={total})", None, src)
        nodes[str(i)] = {
            "type": cp.get(sec, "type", fallback=None),
            "connected": parse_list(sec, "connected_nodes"),
        }
    return {
        "nodes": nodes,
        "source": parse_list("SourceNode", "connected_nodes"),
        "sink": parse_list("SinkNode", "connected_nodes"),
    }


def read_lp(path: str | Path) -> dict[str, Any]:
    """The numbers of Helix's MILP: ``{"layers", "tables": {i: [T_1..T_K]},
    "links": {(u, v): C}}``."""
    src = str(path)
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise InstanceError("no such file", None, src) from None
    except UnicodeDecodeError:
        raise InstanceError("not a text file (expected Helix's .lp)", None, src) from None
    rows = _rows(text, src)
    tables: dict[str, dict[int, float]] = {}
    links: dict[tuple[str, str], float] = {}
    layers: set[float] = set()
    for name, (terms, sense, rhs) in rows.items():
        if m := re.fullmatch(r"node_throughput_constraint_(\d+)", name):
            i = m.group(1)
            tab: dict[int, float] = {}
            for coef, var in terms:
                hm = re.fullmatch(rf"hold_{i}_(\d+)", var)
                if hm:
                    tab[int(hm.group(1))] = -coef
            tables[i] = tab
        elif m := re.fullmatch(r"edge_flow_constr_(source|\d+)_(sink|\d+)", name):
            u, v = m.group(1), m.group(2)
            cap = [-c for c, var in terms if var == f"switch_{u}_{v}"]
            if len(cap) != 1 or sense not in ("<=", "=<", "<") or rhs != 0:
                raise InstanceError(
                    f"row {name}: expected 'flow_{u}_{v} - C switch_{u}_{v} <= 0'", None, src
                )
            links[u, v] = cap[0]
        elif re.fullmatch(r"end_constraint_\d+", name):
            layers.add(rhs)
    if not tables:
        raise InstanceError(
            "no node_throughput_constraint rows: not a Helix placement MILP", None, src
        )
    if len(layers) != 1:
        raise InstanceError(
            f"end_constraint rows give {len(layers)} different layer counts", None, src
        )
    (L,) = layers
    out_tables: dict[str, list[float]] = {}
    for i, tab in tables.items():
        ks = sorted(tab)
        if ks != list(range(1, len(ks) + 1)):
            raise InstanceError(f"node {i}: hold_{i}_k for k = {ks}, expected 1..K", None, src)
        vals = [tab[k] for k in ks]
        if any(not v > 0 for v in vals):
            raise InstanceError(f"node {i}: a throughput is not positive: {vals}", None, src)
        out_tables[i] = vals
    return {"layers": int(L), "tables": out_tables, "links": links}


def helix_to_instance(config: str | Path, lp: str | Path) -> dict[str, Any]:
    """A serving instance (as a dict) from Helix's cluster config and MILP."""
    cfg = read_config(config)
    milp = read_lp(lp)
    src = str(lp)
    ids = sorted(cfg["nodes"], key=int)
    if sorted(milp["tables"], key=int) != ids:
        raise InstanceError(
            f"the MILP has nodes {sorted(milp['tables'], key=int)}, the config {ids}", None, src
        )
    links = []
    for (u, v), cap in sorted(
        milp["links"].items(), key=lambda kv: (_order(kv[0][0]), _order(kv[0][1]))
    ):
        known = all(x in cfg["nodes"] for x in (u, v) if x not in ("source", "sink"))
        ok = known and (
            (u == "source" and (v in cfg["source"] or "source" in cfg["nodes"][v]["connected"]))
            or (v == "sink" and (u in cfg["sink"] or "sink" in cfg["nodes"][u]["connected"]))
            or (u in cfg["nodes"] and v in cfg["nodes"][u]["connected"])
        )
        if not ok:
            raise InstanceError(
                f"the MILP links {u} -> {v}, which the config does not connect", None, src
            )
        links.append({"from": u, "to": v, "capacity_tokens_s": cap})
    nodes = []
    for i in ids:
        nd: dict[str, Any] = {"id": i, "throughput_by_layers": milp["tables"][i]}
        if cfg["nodes"][i]["type"]:
            nd = {
                "id": i,
                "type": cfg["nodes"][i]["type"],
                "throughput_by_layers": milp["tables"][i],
            }
        nodes.append(nd)
    return {
        "kind": "pipeline_partition",
        "mode": "serving",
        "layers": milp["layers"],
        "nodes": nodes,
        "links": links,
        "objective": "max_throughput",
    }


def _order(u: str) -> tuple[int, int]:
    if u == "source":
        return (0, 0)
    if u == "sink":
        return (2, 0)
    return (1, int(u))


def read_solution(path: str | Path) -> dict[str, tuple[int, int]]:
    """Helix's layout file: node id -> ``(start_layer, num_layers)`` (``[Settings]
    offset`` is subtracted from the ``compute_node_<n>`` numbers)."""
    src = str(path)
    cp = configparser.ConfigParser(interpolation=None)
    cp.read_string(Path(path).read_text(), source=src)
    offset = cp.getint("Settings", "offset", fallback=0)
    out: dict[str, tuple[int, int]] = {}
    for key, raw in cp.items("Solution"):
        m = re.fullmatch(r"compute_node_(\d+)", key)
        if not m:
            continue
        layers = sorted(int(v) for v in ast.literal_eval(raw))
        if layers != list(range(layers[0], layers[0] + len(layers))):
            raise InstanceError(f"{key}: layers {layers} are not contiguous", None, src)
        out[str(int(m.group(1)) - offset)] = (layers[0], len(layers))
    return out
