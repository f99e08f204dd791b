"""Solver options: one small frozen dataclass, loadable from TOML."""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from .errors import OptionsError
from .scalars import real_number, whole_number

LpMethod = Literal["auto", "simplex", "ipm", "pdlp"]
_METHODS = ("auto", "simplex", "ipm", "pdlp")


@dataclass(frozen=True)
class SolveOptions:
    """Options for one solve.

    Parameters
    ----------
    time_limit_s
        Wall-clock limit for HiGHS, in seconds (``None``: no limit).
    mip_rel_gap
        Relative MIP gap at which HiGHS stops and the result counts as optimal
        (``None``: HiGHS's default, 1e-4). Ignored for LPs.
    threads
        Threads HiGHS may use (``None``: HiGHS's default). Benchmarks use 1.
    seed
        HiGHS ``random_seed``, for reproducible runs.
    lp_method
        ``"auto"`` lets each formulation pick the LP algorithm it was measured to
        be fastest with; ``"simplex"``, ``"ipm"`` or ``"pdlp"`` force one.
    highs_options
        Raw HiGHS options passed through verbatim (names as in the HiGHS docs).
        An unknown name or a rejected value raises :class:`OptionsError`.
    """

    time_limit_s: float | None = None
    mip_rel_gap: float | None = None
    threads: int | None = None
    seed: int | None = None
    lp_method: LpMethod = "auto"
    highs_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # numpy scalars (and integral floats for the counts) stand for the plain values,
        # as in instances; the options keep the plain Python values
        limit = real_number(self.time_limit_s)
        if self.time_limit_s is not None and not (
            limit is not None and limit > 0 and math.isfinite(limit)
        ):
            raise OptionsError(f"time_limit_s must be a positive number, got {self.time_limit_s!r}")
        gap = real_number(self.mip_rel_gap)
        if self.mip_rel_gap is not None and not (gap is not None and 0 <= gap < 1):
            raise OptionsError(f"mip_rel_gap must be in [0, 1), got {self.mip_rel_gap!r}")
        threads = whole_number(self.threads)
        if self.threads is not None and not (threads is not None and threads >= 1):
            raise OptionsError(f"threads must be a whole number >= 1, got {self.threads!r}")
        seed = whole_number(self.seed)
        if self.seed is not None and not (seed is not None and seed >= 0):
            raise OptionsError(f"seed must be a whole number >= 0, got {self.seed!r}")
        for name, value in (
            ("time_limit_s", limit),
            ("mip_rel_gap", gap),
            ("threads", threads),
            ("seed", seed),
        ):
            object.__setattr__(self, name, value)
        if self.lp_method not in _METHODS:
            raise OptionsError(
                f"lp_method must be one of {', '.join(_METHODS)}, got {self.lp_method!r}"
            )
        if not isinstance(self.highs_options, Mapping):
            raise OptionsError("highs_options must be a table of option names to values")
        object.__setattr__(self, "highs_options", MappingProxyType(dict(self.highs_options)))

    def replace(self, **changes: Any) -> SolveOptions:
        """Return a copy with ``changes`` applied."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (JSON/TOML friendly)."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["highs_options"] = dict(self.highs_options)
        return d

    @classmethod
    def coerce(cls, options: SolveOptions | Mapping[str, Any] | None) -> SolveOptions:
        """``options`` as :class:`SolveOptions` (a mapping is read by :meth:`from_dict`)."""
        if options is None:
            return cls()
        if isinstance(options, cls):
            return options
        if isinstance(options, Mapping):
            return cls.from_dict(options)
        raise OptionsError(
            f"options must be SolveOptions or a mapping of option names, got "
            f"{type(options).__name__}"
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str | None = None) -> SolveOptions:
        """Build options from a mapping; unknown keys are an error."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            where = f"{source}: " if source else ""
            raise OptionsError(
                f"{where}unknown option(s) {', '.join(unknown)}; expected some of {', '.join(sorted(known))}"
            )
        try:
            return cls(**dict(data))
        except OptionsError as exc:
            if source:
                raise OptionsError(f"{source}: {exc}") from None
            raise

    @classmethod
    def from_file(cls, path: str | Path) -> SolveOptions:
        """Load options from a TOML file (top level, or a ``[solve]`` table).

        Example::

            time_limit_s = 60
            threads = 1
            [highs_options]
            presolve = "on"
        """
        from .instance import FileProblem, read_text

        p = Path(path)
        try:
            data = tomllib.loads(read_text(p, max_bytes=2**20))
        except FileProblem as exc:
            msg = "no such options file" if str(exc) == "no such file" else str(exc)
            raise OptionsError(f"{p}: {msg}") from None
        except tomllib.TOMLDecodeError as exc:
            raise OptionsError(f"{p}: not valid TOML: {exc}") from None
        if "solve" in data and isinstance(data["solve"], dict):
            data = data["solve"]
        return cls.from_dict(data, source=str(p))
