"""Progress of a solve: a small typed event and the callback that receives it.

Pass ``progress=callback`` to :func:`hetopt.solve`; the callback gets :class:`Progress`
events while the solve runs:

* ``"mip"`` -- from inside a HiGHS MIP solve (about twice a second, and at every new
  incumbent): ``incumbent``, ``bound``, ``gap`` and ``nodes``;
* ``"solved"`` -- after each HiGHS run of a stage: ``done`` runs so far (of ``total`` when
  the method knows it: Pareto points, decomposition iterations, ...);
* ``"step"`` -- a method's own milestones (a Pareto point, a decomposition iteration, the
  LP relaxation of ``lp_round``), with ``done`` / ``total`` where known.

``incumbent`` and ``bound`` are in the objective's unit when the method can convert them
(single-model methods); inside multi-solve methods they are the HiGHS model's own
objective (``scaled=True``). Events of a MIP arrive from the thread HiGHS runs in; an
exception raised by the callback is logged and ignored (it never stops the solve; use
``time_limit_s`` or Ctrl-C for that).

The command line shows the same events as one line on stderr when stderr is a terminal
(``hetopt solve --quiet`` silences it).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

__all__ = ["Progress", "ProgressCallback"]

log = logging.getLogger(__name__)

Event = Literal["mip", "solved", "step"]


@dataclass(frozen=True)
class Progress:
    """One progress event of a solve (see the module docstring)."""

    kind: str
    """The kind being solved."""
    stage: str
    """The method's stage (``main`` for a single model; ``point``, ``level``,
    ``restricted_milp``, ``decomposition``, ... for multi-solve methods)."""
    event: Event
    elapsed_s: float
    """Seconds since the solve started."""
    done: int | None = None
    total: int | None = None
    incumbent: float | None = None
    """Best objective value found so far (``None``: none yet)."""
    bound: float | None = None
    """Best proven bound so far (``None``: none yet)."""
    gap: float | None = None
    """Relative gap between incumbent and bound (``None``: unknown)."""
    nodes: int | None = None
    """Branch-and-bound nodes so far (``mip`` events)."""
    scaled: bool = False
    """``incumbent`` / ``bound`` are the HiGHS model's own objective, not the kind's unit."""
    message: str = ""

    def __str__(self) -> str:
        parts = [f"{self.kind} {self.stage}"]
        if self.done is not None:
            parts.append(f"{self.done}/{self.total}" if self.total else f"{self.done}")
        if self.message:
            parts.append(self.message)
        if self.incumbent is not None:
            parts.append(f"incumbent {self.incumbent:.6g}")
        if self.bound is not None:
            parts.append(f"bound {self.bound:.6g}")
        if self.gap is not None:
            parts.append(f"gap {self.gap:.2%}")
        if self.nodes is not None:
            parts.append(f"{self.nodes} nodes")
        parts.append(f"{self.elapsed_s:.1f} s")
        return "  ".join(parts)


ProgressCallback = Callable[[Progress], None]


def finite(x: float | None) -> float | None:
    """``x`` when it is a finite number, else ``None`` (HiGHS says inf for "none yet")."""
    if x is None:
        return None
    f = float(x)
    return f if math.isfinite(f) and abs(f) < 1e30 else None


def deliver(callback: ProgressCallback, event: Progress) -> None:
    """Call ``callback`` with ``event``; an exception it raises is logged, not raised."""
    try:
        callback(event)
    except Exception as exc:  # a broken callback never breaks the solve
        log.warning("progress callback raised %s: %s (ignored)", type(exc).__name__, exc)
