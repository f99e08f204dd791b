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

A bad argument (a size that is no whole number in its range, a fraction outside [0, 1],
a time or size that is not a finite positive number, a negative seed, ...) is a
:class:`~hetopt.UsageError` naming the parameter.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from .._shared import arguments as check
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
    ``group`` (int, -1 none), ``samples`` (clients x classes int)).

    ``num_clients``, ``classes`` and ``groups`` are whole numbers from 0 to
    ``MAX_GENERATED`` (1,000,000), ``alpha`` and ``model_mb`` positive numbers and
    ``time_resolution_s`` ``None`` or a number from 0 to 1e12 (0 or ``None``: full
    precision); anything else is a :class:`~hetopt.UsageError` naming the parameter.
    """
    where = "generate_clients"
    num_clients = check.count(num_clients, "num_clients", 0, where=where)
    classes = check.count(classes, "classes", 0, where=where)
    alpha = check.positive(alpha, "alpha", where=where)
    model_mb = check.positive(model_mb, "model_mb", where=where)
    groups = check.count(groups, "groups", 0, where=where)
    if time_resolution_s is not None:
        time_resolution_s = check.nonnegative(time_resolution_s, "time_resolution_s", where=where)
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
        Number of clients (a whole number from 1 to ``MAX_GENERATED``, 1,000,000).
    seed
        Seed of the random generator (a whole number >= 0).
    deadline_s
        Round deadline (a number above 0, at most 1e12).
    uplink
        ``"shared"`` or ``"parallel"``; parallel instances get a bandwidth budget of
        ``budget_fraction`` (a number from 0 to 1e12) times the sum of every client's
        need.
    objective, max_clients
        Recorded in the instance (``max_clients``: ``None`` or a whole number >= 1).
    classes, groups
        Number of labels and of client groups (whole numbers from 0 to 1,000,000).
    target_fraction
        ``class_targets`` = this fraction (from 0 to 1) of the pool's samples of each
        class (set when ``objective == "min_duration"``).
    time_resolution_s
        Round times to multiples of this (``None`` or 0: keep full precision).
    model_mb
        Model update size in MB (a number above 0).

    Raises
    ------
    UsageError
        An argument outside the range above, naming the parameter.
    """
    num_clients = check.count(num_clients, "num_clients")
    seed = check.seed(seed)
    deadline_s = check.positive(deadline_s, "deadline_s")
    if max_clients is not None:
        max_clients = check.count(max_clients, "max_clients", 1, check.MAX_WHOLE)
    classes = check.count(classes, "classes", 0)
    groups = check.count(groups, "groups", 0)
    budget_fraction = check.nonnegative(budget_fraction, "budget_fraction")
    target_fraction = check.fraction(target_fraction, "target_fraction")
    if time_resolution_s is not None:
        time_resolution_s = check.nonnegative(time_resolution_s, "time_resolution_s")
    model_mb = check.positive(model_mb, "model_mb")
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
