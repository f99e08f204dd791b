"""Placement rules of the ``multi_resource`` kind: who touches which group, and the
violations of a placement (see ``models/multi_resource.md``, "Placement rules").

A rule's *scope* groups servers: each server alone (``"server"``) or the servers sharing
a value of a label. A job *touches* every group holding a server it runs on (a split job
touches each group it has GPUs in). Per rule:

* ``anti_affinity`` / ``max_per_group``: per group, the jobs with ``tag`` beyond the first
  (beyond ``max_per_group``) are violations;
* ``affinity``: each (job with ``tag``, group it touches) whose group holds no *other* job
  with ``with_tag`` is a violation; a job on a server without the scope's label has no
  group, so it is a violation too;
* ``spread``: ``max - min`` jobs with ``tag`` over the scope's groups beyond ``max_skew``
  is that many violations.

Jobs on servers without the scope's label are outside every group (they count for no
group of ``anti_affinity``, ``max_per_group`` and ``spread``).

These functions read a placement as (job, server) index arrays; the extractor and the
warm start use them. The verifier (:mod:`.verify`) recounts independently.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .data import MultiResourceArrays, RuleArrays


@dataclass(frozen=True)
class Counts:
    """Jobs of one rule per group of its scope (groups ``0..G-1``)."""

    tagged: np.ndarray
    """Distinct jobs with ``tag`` touching each group."""
    partners: np.ndarray
    """Distinct jobs with ``with_tag`` touching each group (affinity)."""
    lone: np.ndarray
    """Affinity: jobs with ``tag`` touching each group without another ``with_tag`` job
    there."""
    lone_jobs: list[list[int]]
    """Affinity: those jobs, per group."""
    tagged_jobs: list[list[int]]
    """Jobs with ``tag`` per group."""
    outside: list[int]
    """Jobs with ``tag`` on servers without the scope's label."""


def counts(rule: RuleArrays, jobs: np.ndarray, servers: np.ndarray) -> Counts:
    """Count ``rule``'s jobs per group for a placement of (job, server) pieces."""
    G = rule.num_groups
    grp = rule.group_of[servers]
    tagged_jobs: list[set[int]] = [set() for _ in range(G)]
    partner_jobs: list[set[int]] = [set() for _ in range(G)]
    outside: set[int] = set()
    for j, g in zip(jobs.tolist(), grp.tolist(), strict=True):
        if rule.tagged[j]:
            if g >= 0:
                tagged_jobs[g].add(j)
            else:
                outside.add(j)
        if rule.partner[j] and g >= 0:
            partner_jobs[g].add(j)
    lone_jobs: list[list[int]] = [[] for _ in range(G)]
    if rule.rule == "affinity":
        for g in range(G):
            for j in sorted(tagged_jobs[g]):
                if not (partner_jobs[g] - {j}):
                    lone_jobs[g].append(j)
    return Counts(
        tagged=np.array([len(t) for t in tagged_jobs], dtype=np.int64),
        partners=np.array([len(t) for t in partner_jobs], dtype=np.int64),
        lone=np.array([len(t) for t in lone_jobs], dtype=np.int64),
        lone_jobs=lone_jobs,
        tagged_jobs=[sorted(t) for t in tagged_jobs],
        outside=sorted(outside),
    )


def skew(rule: RuleArrays, c: Counts) -> tuple[int, int, int]:
    """``(max - min, fullest group, emptiest group)`` of a spread rule's counts."""
    if rule.num_groups == 0:
        return 0, -1, -1
    hi, lo = int(np.argmax(c.tagged)), int(np.argmin(c.tagged))
    return int(c.tagged[hi] - c.tagged[lo]), hi, lo


VIOLATION_COLUMNS = (
    "rule",
    "type",
    "tag",
    "scope",
    "group",
    "jobs",
    "violations",
    "penalty",
    "hard",
    "description",
)


def violation_rows(arr: MultiResourceArrays, jobs: np.ndarray, servers: np.ndarray) -> list[dict]:
    """One row per (rule, group) with violations (``violations`` table rows)."""
    return [row for rule in arr.rules for row in violation_rows_of(rule, arr, jobs, servers)]


def violation_rows_of(
    rule: RuleArrays, arr: MultiResourceArrays, jobs: np.ndarray, servers: np.ndarray
) -> list[dict]:
    """The ``violations`` rows of one rule."""
    out: list[dict] = []
    ids = arr.job_ids

    def row(group: str | None, n: int, v: int, text: str) -> None:
        out.append(
            {
                "rule": rule.label,
                "type": rule.rule,
                "tag": rule.tag,
                "scope": rule.scope,
                "group": group,
                "jobs": int(n),
                "violations": int(v),
                "penalty": 0.0 if rule.hard else rule.penalty * v,
                "hard": rule.hard,
                "description": text,
            }
        )

    def names(js: list[int]) -> str:
        return ", ".join(ids[j] for j in js)

    c = counts(rule, jobs, servers)
    if rule.rule in ("anti_affinity", "max_per_group"):
        for g in np.nonzero(c.tagged > rule.limit)[0]:
            n = int(c.tagged[g])
            row(
                rule.group_names[g],
                n,
                n - rule.limit,
                f"{n} {rule.tag!r} jobs in {rule.group_names[g]} (at most {rule.limit}): "
                f"{names(c.tagged_jobs[g])}",
            )
    elif rule.rule == "affinity":
        for g in np.nonzero(c.lone > 0)[0]:
            row(
                rule.group_names[g],
                int(c.tagged[g]),
                int(c.lone[g]),
                f"no other {rule.with_tag!r} job in {rule.group_names[g]} for "
                f"{names(c.lone_jobs[g])}",
            )
        if c.outside:
            row(
                None,
                len(c.outside),
                len(c.outside),
                f"on servers without the label {rule.scope!r}: {names(c.outside)}",
            )
    else:  # spread
        sk, hi, lo = skew(rule, c)
        if sk > rule.limit:
            row(
                rule.group_names[hi],
                int(c.tagged[hi]),
                sk - rule.limit,
                f"{int(c.tagged[hi])} {rule.tag!r} jobs in {rule.group_names[hi]}, "
                f"{int(c.tagged[lo])} in {rule.group_names[lo]}: skew {sk} > max_skew "
                f"{rule.limit}",
            )
    return out


def violations_table(
    arr: MultiResourceArrays, jobs: np.ndarray, servers: np.ndarray
) -> pd.DataFrame:
    """The ``violations`` table of a placement (no rows when every rule holds)."""
    rows = violation_rows(arr, jobs, servers)
    if not rows:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in VIOLATION_COLUMNS})
    df = pd.DataFrame(rows, columns=list(VIOLATION_COLUMNS))
    df["group"] = df["group"].astype(object)
    return df
