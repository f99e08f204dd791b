"""The solve parameters of the ``multi_resource`` kind (a light module: pydantic only)."""

from __future__ import annotations

from pydantic import Field

from ...contract import Params

FRAGMENTATION_TIME_LIMIT_S = 30.0
"""Time limit of the fragmentation solve when the options give none."""


class MultiResourceParams(Params):
    """Solve parameters of the ``multi_resource`` kind (``hetopt kinds`` lists them)."""

    fragmentation: bool = Field(
        True, description="minimise servers in use as a lexicographic second objective"
    )
    symmetry: bool = Field(True, description="order identical servers by GPUs used")
    config_bound: bool = Field(True, description="also solve the configuration-only knapsack bound")
    warm_start: bool = Field(
        True, description="start HiGHS from a greedy packing of the knapsack's configurations"
    )
    lns: bool = Field(
        True,
        description="with placement rules, improve the warm start by re-solving random "
        "neighbourhoods of job classes (large neighbourhood search) before the main solve",
    )
    diagnose: bool = Field(
        True,
        description="when hard placement rules make the instance infeasible, name an "
        "irreducible set of rules in conflict (deletion filter)",
    )
