"""Solve parameters of the ``human_robot`` kind and what a solve derives from them.

:class:`HumanRobotParams` validates the types (Python keywords and ``-p KEY=VALUE`` the
same way); :func:`setup` checks ``fixed`` against the instance (known task, known agent
able to do it) and returns the index maps the formulations use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from ...contract import Params
from ...errors import UsageError
from .data import TeamArrays


def _pair(value: Any) -> Any:
    """``[agent, start_s]`` (a JSON list) and ``{"agent": ..., "start_s": ...}`` as a
    tuple; anything else is left to the type check."""
    if isinstance(value, Mapping):
        return (value.get("agent"), value.get("start_s"))
    if isinstance(value, list):
        return tuple(value)
    return value


FixedStart = Annotated[tuple[str, Annotated[float, Field(ge=0)]], BeforeValidator(_pair)]
"""``(agent, start_s)`` of a task that already started."""


class HumanRobotParams(Params):
    """Parameters of a ``human_robot`` solve."""

    method: Literal["auto", "exact", "decomposition"] = Field(
        "auto",
        description="'exact' MILP, 'decomposition' (allocate + sequence) or 'auto' (default)",
    )
    fixed: dict[str, FixedStart] | None = Field(
        None, description="{task: [agent, start_s]} tasks already started that must stay put"
    )
    now_s: Annotated[float, Field(ge=0)] | None = Field(
        None, description="tasks not in 'fixed' start at or after this time"
    )
    diagnose: bool = Field(
        True,
        description="on infeasibility, find a small conflicting set of constraints (default true)",
    )


@dataclass(frozen=True)
class Setup:
    """The re-planning data of one solve, checked against the instance."""

    fixed_agent: dict[int, int]
    """task index -> agent index of the tasks that already started."""
    fixed_start: dict[int, float]
    """task index -> start (s) of the tasks that already started."""
    fixed: dict[str, tuple[str, float]]
    """task id -> (agent id, start_s), as given."""
    now_s: float | None

    def details(self, method: str) -> dict[str, Any]:
        """The ``info`` entries every result of this solve starts with."""
        info: dict[str, Any] = {"method": method}
        if self.fixed:
            info["fixed"] = {t: list(v) for t, v in self.fixed.items()}
        if self.now_s is not None:
            info["now_s"] = self.now_s
        return info


def parse_fixed(
    arr: TeamArrays, fixed: Mapping[str, tuple[str, float]] | None
) -> tuple[dict[int, int], dict[int, float], dict[str, tuple[str, float]]]:
    """Check ``fixed = {task: (agent, start_s)}`` against the instance; return index maps
    and a clean copy."""
    if not fixed:
        return {}, {}, {}
    tpos = {t: i for i, t in enumerate(arr.task_ids)}
    apos = {a: k for k, a in enumerate(arr.agent_ids)}
    fa: dict[int, int] = {}
    fs: dict[int, float] = {}
    clean: dict[str, tuple[str, float]] = {}
    for t, (a, s) in fixed.items():
        if t not in tpos:
            raise UsageError(f"fixed.{t}: unknown task {t!r}")
        if a not in apos:
            raise UsageError(f"fixed.{t}: unknown agent {a!r}")
        if not arr.capable[tpos[t], apos[a]]:
            raise UsageError(f"fixed.{t}: agent {a!r} cannot do task {t!r}")
        fa[tpos[t]] = apos[a]
        fs[tpos[t]] = float(s)
        clean[t] = (str(a), float(s))
    return fa, fs, clean


def setup(arr: TeamArrays, params: HumanRobotParams) -> Setup:
    """The :class:`Setup` of a solve with ``params``."""
    fa, fs, clean = parse_fixed(arr, params.fixed)
    now = None if params.now_s is None else float(params.now_s)
    return Setup(fa, fs, clean, now)
