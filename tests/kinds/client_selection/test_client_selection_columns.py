"""client_selection at scale: columnar clients (a DataFrame or a dict of arrays), the
arrays taken from the validated columns, and FedCS's greedy baseline without heaps of
waiting clients (the same selection as the reference implementation)."""

from __future__ import annotations

import heapq
import math

import numpy as np
import pandas as pd
import pytest

import hetopt
from hetopt.columns import columns_of
from hetopt.kinds.client_selection import algorithms as A
from hetopt.kinds.client_selection.data import ClientSelectionInstance


def _reference_greedy(ready, upload, deadline, allowed=None, max_clients=None, tol=0.0):
    """FedCS's greedy with two heaps, as released before (the reference)."""
    n = len(ready)
    ok = np.ones(n, dtype=bool) if allowed is None else allowed.copy()
    cap = n if max_clients is None else max_clients
    sel = np.zeros(n, dtype=bool)
    used = ~ok
    by_ready = np.flatnonzero(ok)
    by_ready = by_ready[np.argsort(ready[by_ready], kind="stable")]
    r, u, br = ready.tolist(), upload.tolist(), by_ready.tolist()
    ready_heap: list[tuple[float, int]] = []
    wait_heap = [(r[i] + u[i], i) for i in br]
    heapq.heapify(wait_heap)
    nxt, elapsed, limit, count = 0, 0.0, deadline + tol, 0
    used_l = used.tolist()
    while count < cap:
        while nxt < len(br) and r[br[nxt]] <= elapsed:
            i = br[nxt]
            if not used_l[i]:
                heapq.heappush(ready_heap, (u[i], i))
            nxt += 1
        while ready_heap and used_l[ready_heap[0][1]]:
            heapq.heappop(ready_heap)
        while wait_heap and (used_l[wait_heap[0][1]] or r[wait_heap[0][1]] <= elapsed):
            heapq.heappop(wait_heap)
        best, pick = math.inf, -1
        if ready_heap:
            best, pick = ready_heap[0]
        if wait_heap and wait_heap[0][0] - elapsed < best:
            best, pick = wait_heap[0][0] - elapsed, wait_heap[0][1]
        if pick < 0 or elapsed + best > limit:
            break
        used_l[pick] = True
        elapsed += best
        sel[pick] = True
        count += 1
    return sel


@pytest.mark.parametrize("seed", range(60))
def test_fedcs_greedy_matches_the_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    whole = seed % 2 == 0  # ties in ready and upload times
    ready = rng.integers(0, 50, n).astype(float) if whole else rng.uniform(0, 50, n)
    upload = rng.integers(1, 6, n).astype(float) if whole else rng.uniform(0.1, 5, n)
    deadline = float(rng.uniform(5, 120))
    allowed = rng.random(n) > 0.2 if seed % 3 == 0 else None
    cap = int(rng.integers(1, n + 1)) if seed % 5 == 0 else None
    tol = 1e-9 * deadline if seed % 7 == 0 else 0.0
    got = A.fedcs_greedy(ready, upload, deadline, allowed, cap, tol)
    want = _reference_greedy(ready, upload, deadline, allowed, cap, tol)
    np.testing.assert_array_equal(got, want)


def _clients(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "id": np.array([f"c{i}" for i in range(n)], dtype=object),
        "ready_s": np.round(rng.uniform(0, 200, n), 1),
        "upload_s": np.round(rng.uniform(0.1, 5, n), 1),
        "weight": np.round(rng.uniform(0, 10, n), 3),
        "group": np.array([None if i % 3 else f"g{i % 2}" for i in range(n)], dtype=object),
    }


def _records(cols: dict[str, np.ndarray]) -> list[dict[str, object]]:
    names = list(cols)
    rows = zip(*(cols[k].tolist() for k in names), strict=True)
    return [{k: v for k, v in zip(names, row, strict=True) if v is not None} for row in rows]


@pytest.mark.parametrize("form", ["dict", "frame"])
def test_columns_give_the_instance_and_result_records_give(form: str) -> None:
    cols = _clients(300, seed=1)
    given = cols if form == "dict" else pd.DataFrame(cols)
    base = {"kind": "client_selection", "round_deadline_s": 150.0, "max_clients": 40}
    a = hetopt.instance_from_dict({**base, "clients": given})
    b = hetopt.instance_from_dict({**base, "clients": _records(cols)})
    assert a == b and a.to_dict() == b.to_dict()
    assert columns_of(a, "clients") is not None and columns_of(b, "clients") is None
    np.testing.assert_array_equal(a.arrays.ready, b.arrays.ready)
    np.testing.assert_array_equal(a.arrays.group, b.arrays.group)
    for objective in ("max_clients", "max_weight"):
        ra, rb = hetopt.solve(a, objective), hetopt.solve(b, objective)
        assert ra.to_dict()["tables"] == rb.to_dict()["tables"]
        assert ra.objective_value == rb.objective_value and ra.verification.ok
    # the keyword constructor takes columns too
    c = ClientSelectionInstance(round_deadline_s=150.0, max_clients=40, clients=given)
    assert c == a


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda c: c["ready_s"].__setitem__(3, -1.0),
            r"^clients\[3\]\.ready_s: Input should be greater than or equal to 0, got -1\.0$",
        ),
        (
            lambda c: c["upload_s"].__setitem__(7, np.nan),
            r"^clients\[7\]\.upload_s: Input should be a finite number, got nan$",
        ),
        (
            lambda c: c["weight"].__setitem__(2, 2e12),
            r"^clients\[2\]\.weight: number too large",
        ),
        (
            lambda c: c.__setitem__("colour", np.zeros(10)),
            r"^clients\[0\]\.colour: unknown field",
        ),
        (lambda c: c.pop("upload_s"), r"^clients\[0\]\.upload_s: required field is missing$"),
        (
            lambda c: c.__setitem__("weight", np.ones(9)),
            r"^clients\.weight: column has 9 values, expected 10",
        ),
        (
            lambda c: c["id"].__setitem__(4, ""),
            r"^clients\[4\]\.id: String should have at least 1 character",
        ),
        (
            lambda c: c["id"].__setitem__(5, "c1"),
            r"^clients\[5\]\.id: duplicate client id 'c1' \(also clients\[1\]\)$",
        ),
        (
            lambda c: c.__setitem__("group", np.arange(10)),
            r"^clients\[0\]\.group: Input should be a valid string, got 0",
        ),
    ],
)
def test_column_errors_name_the_row_and_field_as_records_do(change, message) -> None:
    cols = _clients(10)
    change(cols)
    base = {"kind": "client_selection", "round_deadline_s": 150.0}
    with pytest.raises(hetopt.InstanceError, match=message):
        hetopt.instance_from_dict({**base, "clients": cols})
    if "column has" in message or "colour" in message or "required" in message:
        return
    with pytest.raises(hetopt.InstanceError, match=message):  # the records path agrees
        hetopt.instance_from_dict({**base, "clients": _records(cols)})


def test_columns_with_nested_values_and_numpy_integers() -> None:
    cols = _clients(6)
    cols["samples"] = [{"cat": np.int64(3)}, {}, {"dog": 2}, {}, {"cat": 1.0}, {}]
    data = {
        "kind": "client_selection",
        "round_deadline_s": 150.0,
        "max_clients": np.int64(2),
        "clients": cols,
    }
    inst = hetopt.instance_from_dict(data)
    assert inst.clients[0].samples == {"cat": 3} and type(inst.clients[4].samples["cat"]) is int
    assert inst.max_clients == 2
    cols["samples"][2] = {"dog": -1}
    with pytest.raises(hetopt.InstanceError, match=r"^clients\[2\]\.samples\.dog: Input should"):
        hetopt.instance_from_dict(data)


def test_columns_for_other_kinds() -> None:
    data = hetopt.read_instance("instances/cpu_gpu/pairing.json").to_dict()
    progs = pd.DataFrame(data["programs"])
    inst = hetopt.instance_from_dict({**data, "programs": progs})
    assert inst == hetopt.instance_from_dict(data)
    data = hetopt.read_instance("instances/multicore/big_little_dag.json").to_dict()
    cols = {k: [t.get(k) for t in data["tasks"]] for k in data["tasks"][0]}
    assert hetopt.instance_from_dict({**data, "tasks": cols}) == hetopt.instance_from_dict(data)


def test_instance_files_take_records_only(tmp_path) -> None:
    cols = {k: v.tolist() for k, v in _clients(4).items()}
    path = tmp_path / "cols.json"
    import json

    path.write_text(
        json.dumps({"kind": "client_selection", "round_deadline_s": 9.0, "clients": cols})
    )
    with pytest.raises(hetopt.InstanceError, match="clients: Input should be a valid list"):
        hetopt.read_instance(path)
    # ... while the Python API takes the same dict as columns
    assert len(hetopt.instance_from_dict(json.loads(path.read_text())).clients) == 4
