"""Solve parameters of the ``agent_sessions`` kind."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...contract import Params

AUTO_MILP_KEEPS = 600
"""``method=auto`` solves the full MILP up to this many (pause, GPU) pairs (measured: 40
sessions x 5 pauses on 4 GPUs, 800 pairs, leaves a 46 % gap after 60 s where the
decomposition finds a better plan in 6 s)."""


class AgentSessionsParams(Params):
    """Switches of the keep/evict MILP (``-p KEY=VALUE`` or Python keywords)."""

    method: Literal["auto", "milp", "decompose"] = Field(
        "auto",
        description="'milp' (one exact MILP), 'decompose' (pooled bound, greedy affinity, "
        "one exact solve per GPU: feasible with a proven gap; for many GPUs) or 'auto' "
        f"(milp for one GPU or at most {AUTO_MILP_KEEPS} (pause, GPU) pairs, else decompose)",
    )
    capacity_rows: Literal["sweep", "clique"] = Field(
        "sweep",
        description="memory rows: 'sweep' (kept tokens carried from event point to event "
        "point, two nonzeros per keep; scales) or 'clique' (one row per event point over "
        "every pause covering it: the interval matrix)",
    )
    symmetry_breaking: bool = Field(
        False,
        description="order interchangeable GPUs (same capacity, prefill speed and active "
        "batch) by the first session they serve, removing affinities no optimum needs",
    )
    greedy_start: bool = Field(
        True,
        description="start HiGHS from the greedy plan (balanced affinity, earliest-end "
        "keeps that fit)",
    )
