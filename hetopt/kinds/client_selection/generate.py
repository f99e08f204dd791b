"""Seeded random ``client_selection`` instances.

Distributions (all from one ``numpy.random.default_rng(seed)``), in the spirit of the
device traces used by FedScale and Oort (heavy-tailed compute and network speeds):

* uplink bandwidth ``up_mbps ~ LogNormal(log 5, 1.0)`` Mbit/s, download bandwidth
  ``4 * up_mbps``; ``upload_s = 8 * model_mb / up_mbps``, download ``8 * model_mb /
  down_mbps``;
* samples per client ``~ 1 + LogNormal(log 200, 0.8)`` (integer), split over
  ``classes`` labels with Dirichlet(``alpha``) proportions (non-IID);
* compute seconds per sample ``~ LogNormal(log 0.02, 0.7)``; local training
  ``epochs * samples * s_per_sample``; ``ready_s = download + training``;
* ``weight = sqrt(samples)`` (Oort's statistical utility with unit loss), 3 decimals;
* ``sample_s`` (testing) = the compute seconds per sample;
* group ``g{k}`` uniform over ``groups`` groups (none when ``groups = 0``);
* times are rounded to ``time_resolution_s`` (0.1 s by default, so Lawler-Moore's DP
  applies exactly after scaling by 10).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from ...errors import InstanceError
from .data import ClientSelectionInstance


def generate_clients(
    num_clients: int,
    rng: np.random.Generator,
    classes: int = 10,
    alpha: float = 0.5,
    model_mb: float = 20.0,
    epochs: int = 1,
    groups: int = 0,
    time_resolution_s: float | None = 0.1,
) -> dict[str, np.ndarray]:
    """Client attributes as arrays (``ready_s``, ``upload_s``, ``weight``, ``sample_s``,
    ``group`` (int, -1 none), ``samples`` (clients x classes int))."""
    n = num_clients
    up = rng.lognormal(np.log(5.0), 1.0, n)
    down = 4.0 * up
    total = 1 + np.floor(rng.lognormal(np.log(200.0), 0.8, n)).astype(np.int64)
    s_per = rng.lognormal(np.log(0.02), 0.7, n)
    upload = 8.0 * model_mb / up
    ready = 8.0 * model_mb / down + epochs * total * s_per
    if classes > 0:
        props = rng.dirichlet(np.full(classes, alpha), n)
        samples = np.floor(props * total[:, None]).astype(np.int64)
    else:
        samples = np.zeros((n, 0), dtype=np.int64)
    group = rng.integers(0, groups, n) if groups > 0 else np.full(n, -1)
    if time_resolution_s:
        q = time_resolution_s
        upload = np.maximum(np.round(upload / q), 1) * q
        ready = np.round(ready / q) * q
        decimals = max(0, int(np.ceil(-np.log10(q))) + 1)
        upload, ready = np.round(upload, decimals), np.round(ready, decimals)
    weight = np.round(np.sqrt(total), 3)
    return {
        "ready_s": ready,
        "upload_s": upload,
        "weight": weight,
        "sample_s": np.round(s_per, 6),
        "group": group,
        "samples": samples,
    }


def generate(
    num_clients: int,
    seed: int = 0,
    deadline_s: float = 300.0,
    uplink: Literal["shared", "parallel"] = "shared",
    objective: str | None = None,
    max_clients: int | None = None,
    classes: int = 10,
    groups: int = 0,
    budget_fraction: float = 0.2,
    target_fraction: float = 0.05,
    time_resolution_s: float | None = 0.1,
    model_mb: float = 20.0,
) -> ClientSelectionInstance:
    """A seeded random instance (see the module docstring for the distributions).

    Parameters
    ----------
    num_clients
        Number of clients.
    seed
        Seed of the random generator.
    deadline_s
        Round deadline.
    uplink
        ``"shared"`` or ``"parallel"``; parallel instances get a bandwidth budget of
        ``budget_fraction`` times the sum of every client's need.
    objective, max_clients
        Recorded in the instance.
    classes, groups
        Number of labels and of client groups.
    target_fraction
        ``class_targets`` = this fraction of the pool's samples of each class (set when
        ``objective == "min_duration"``).
    time_resolution_s
        Round times to multiples of this (``None``: keep full precision).
    model_mb
        Model update size in MB.
    """
    if num_clients < 1:
        raise InstanceError("must be at least 1", "num_clients")
    rng = np.random.default_rng(seed)
    a = generate_clients(
        num_clients,
        rng,
        classes,
        model_mb=model_mb,
        groups=groups,
        time_resolution_s=time_resolution_s,
    )
    names = [f"class{k}" for k in range(classes)]
    clients: list[dict[str, Any]] = []
    for i in range(num_clients):
        c: dict[str, Any] = {
            "id": f"c{i}",
            "ready_s": float(a["ready_s"][i]),
            "upload_s": float(a["upload_s"][i]),
            "weight": float(a["weight"][i]),
        }
        row = a["samples"][i]
        if classes:
            c["samples"] = {names[k]: int(v) for k, v in enumerate(row) if v > 0}
            c["sample_s"] = float(a["sample_s"][i])
        if groups:
            c["group"] = f"g{int(a['group'][i])}"
        clients.append(c)
    data: dict[str, Any] = {
        "kind": "client_selection",
        "round_deadline_s": float(deadline_s),
        "uplink": uplink,
        "clients": clients,
    }
    if max_clients is not None:
        data["max_clients"] = max_clients
    if objective is not None:
        data["objective"] = objective
    if uplink == "parallel":
        window = deadline_s - a["ready_s"]
        need = np.where(window > 0, 8.0 * model_mb / np.where(window > 0, window, 1.0), 0.0)
        data["update_mb"] = float(model_mb)
        data["bandwidth_budget_mbps"] = round(max(float(need.sum()) * budget_fraction, 1.0), 3)
    if objective == "min_duration" and classes:
        pool = a["samples"].sum(axis=0)
        data["class_targets"] = {
            names[k]: int(np.floor(pool[k] * target_fraction))
            for k in range(classes)
            if pool[k] > 0
        }
    return ClientSelectionInstance.from_dict(data)
