"""Solve parameters of the ``agent_sessions`` kind."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...contract import Params


class AgentSessionsParams(Params):
    """Switches of the keep/evict MILP (``-p KEY=VALUE`` or Python keywords)."""

    method: Literal["auto", "milp", "decompose"] = Field(
        "auto",
        description="'milp' (one exact MILP), 'decompose' (pooled LP bound, greedy affinity, "
        "one exact solve per GPU, then the full MILP from that plan when it is small: a "
        "verified plan with a proven gap) or 'auto' (milp for one GPU, else decompose)",
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
    migration: bool = Field(
        False,
        description="let a session's calls between pauses (segments) run on different "
        "GPUs: at a pause its context is kept, evicted and re-prefilled on the next "
        "segment's GPU, or moved over one of the instance's links (transfer seconds "
        "counted like recompute); solved as the no-migration MILP, then the migration MILP "
        "(the better plan); not with 'decompose' or symmetry_breaking; off: links are "
        "ignored and the model is unchanged",
    )
