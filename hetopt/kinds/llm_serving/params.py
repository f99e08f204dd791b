"""Solve parameters of ``llm_serving`` (``-p KEY=VALUE`` on the command line)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...contract import Params

# objective -> parameters that change what it solves (a parameter given explicitly for an
# objective it does not apply to is a usage error, not silently ignored)
APPLIES_TO: dict[str, frozenset[str]] = {
    "min_cost": frozenset({"slices", "two_stage", "target_utilization", "change_cost"}),
    "min_max_load": frozenset({"provision", "target_utilization"}),
    "pd_split": frozenset({"target_utilization"}),
}


class LlmServingParams(Params):
    """Parameters of the ``llm_serving`` kind."""

    slices: Literal["aggregated", "binary", "continuous"] = Field(
        "aggregated",
        description=(
            "min_cost: 'aggregated' (integer number of a bucket's slices per type), 'binary' "
            "(Melange's one binary per slice and type; same optimum) or 'continuous' (the "
            "limit slice_factor -> infinity: a bucket's rate splits freely over types)"
        ),
    )
    two_stage: bool = Field(
        True,
        description=(
            "min_cost with integer slices: solve the continuous limit first (a lower bound) "
            "and look for integer slices within its instance counts before the full ILP; "
            "false: the slice ILP directly"
        ),
    )
    target_utilization: float = Field(
        1.0,
        gt=0.0,
        le=1.0,
        description=(
            "largest share of an instance's profiled throughput that may be used (min_cost, "
            "pd_split, and min_max_load with provision)"
        ),
    )
    provision: Literal["off", "cost", "count"] = Field(
        "off",
        description=(
            "min_max_load: 'off' routes over the deployed instances; 'cost' / 'count' "
            "auto-provisions the cheapest / fewest instances with every utilisation <= "
            "target_utilization, then routes over them minimising the largest utilisation"
        ),
    )
    change_cost: float = Field(
        0.0,
        ge=0.0,
        description=(
            "min_cost: $ per instance started or stopped relative to 'deployed' (the "
            "current plan; hourly re-solves)"
        ),
    )

    @property
    def min_cost_method(self) -> str:
        """``"two_stage"`` (integer slices, relaxation first) or ``"direct"``."""
        return "two_stage" if self.two_stage and self.slices != "continuous" else "direct"
