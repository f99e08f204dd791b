"""The standard flexible job-shop (FJSP) text format (Brandimarte, Kacem, Fattahi, ...).

Line 1: ``<jobs> <machines> [<average machines per operation>]``; then one line per job:
``<#operations>`` followed, for each operation, by ``<#eligible machines>`` and that many
``<machine> <processing time>`` pairs. Machine numbers are 1-based in the original
papers and 0-based in some collections; :func:`read_fjsp` detects which (a file that uses
machine ``M`` is 1-based; one that uses machine ``0`` is 0-based) and always returns
0-based machines.

This module is the one place that reads the format. A converter to a kind's instance
(``multicore``, ``human_robot``, ...) maps the neutral view :attr:`FjspData.operations`:
each :class:`Operation` knows its job, its position in the job's chain, the operation
before it and its processing time on each eligible machine (0-based, in machine order).
Numbering (0- or 1-based ids) is the converter's choice.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ..errors import InstanceError

__all__ = ["FjspData", "Operation", "parse_fjsp", "read_fjsp"]


@dataclass(frozen=True)
class Operation:
    """One operation of a flexible job shop (the neutral view every converter maps).

    Parameters
    ----------
    job
        Its job (0-based).
    position
        Its place in the job's chain (0-based): it starts after operation
        ``position - 1`` of the same job has ended.
    times
        ``(machine, processing time)`` for each eligible machine, 0-based machines in
        increasing order.
    """

    job: int
    position: int
    times: tuple[tuple[int, int], ...]

    @property
    def predecessor(self) -> tuple[int, int] | None:
        """``(job, position)`` of the operation before this one in its job (``None``
        for a job's first operation)."""
        return (self.job, self.position - 1) if self.position > 0 else None


@dataclass(frozen=True)
class FjspData:
    """A parsed FJSP instance.

    ``jobs[j][o]`` is operation ``o`` of job ``j``: a dict ``machine -> processing time``
    (0-based machines). Each job is a chain: operation ``o`` precedes ``o + 1``.
    :attr:`operations` is the same data as a flat, job-major list of :class:`Operation`.
    """

    name: str
    num_machines: int
    jobs: tuple[tuple[dict[int, int], ...], ...]

    @property
    def num_operations(self) -> int:
        return sum(len(j) for j in self.jobs)

    @property
    def machines(self) -> range:
        """The machines, 0-based."""
        return range(self.num_machines)

    @cached_property
    def operations(self) -> tuple[Operation, ...]:
        """Every operation, job by job and in chain order within a job."""
        return tuple(
            Operation(j, o, tuple(sorted(op.items())))
            for j, job in enumerate(self.jobs)
            for o, op in enumerate(job)
        )


def parse_fjsp(text: str, name: str = "fjsp", source: str | None = None) -> FjspData:
    """Parse FJSP text; errors name the line.

    Every non-empty line after the header is a job line: exactly as many as the header
    states. An operation lists each eligible machine once.
    """
    lines = [ln.split() for ln in text.splitlines()]
    numbered = [(i + 1, ln) for i, ln in enumerate(lines) if ln]
    if not numbered:
        raise InstanceError("empty FJSP file", None, source)

    def ints(lineno: int, toks: list[str]) -> list[int]:
        out = []
        for t in toks:
            try:
                out.append(int(float(t)) if float(t).is_integer() else _bad(lineno, t))
            except ValueError:
                _bad(lineno, t)
        return out

    def _bad(lineno: int, tok: str) -> int:
        raise InstanceError(f"line {lineno}: expected a whole number, got {tok!r}", None, source)

    head_no, head = numbered[0]
    header = ints(head_no, head[:2])
    if len(header) < 2:
        raise InstanceError(f"line {head_no}: expected '<jobs> <machines>'", None, source)
    n_jobs, n_machines = header
    if n_jobs < 1 or n_machines < 1:
        raise InstanceError(f"line {head_no}: jobs and machines must be >= 1", None, source)
    body = numbered[1:]
    if len(body) < n_jobs:
        raise InstanceError(f"expected {n_jobs} job lines, found {len(body)}", None, source)
    if len(body) > n_jobs:
        extra_no = body[n_jobs][0]
        raise InstanceError(
            f"line {extra_no}: line {head_no} states {n_jobs} jobs but more job lines follow "
            f"({len(body)} non-empty lines after it)",
            None,
            source,
        )
    raw_jobs: list[tuple[int, list[list[tuple[int, int]]]]] = []
    used: set[int] = set()
    for lineno, toks in body:
        vals = ints(lineno, toks)
        pos = 0
        n_ops = vals[pos]
        pos += 1
        if n_ops < 1:
            raise InstanceError(
                f"line {lineno}: a job needs at least 1 operation, got {n_ops}", None, source
            )
        ops = []
        for o in range(n_ops):
            if pos >= len(vals):
                raise InstanceError(f"line {lineno}: operation {o + 1} is missing", None, source)
            k = vals[pos]
            pos += 1
            if k < 1 or pos + 2 * k > len(vals):
                raise InstanceError(
                    f"line {lineno}: operation {o + 1} lists {k} machines but the line ends",
                    None,
                    source,
                )
            pairs = [(vals[pos + 2 * q], vals[pos + 2 * q + 1]) for q in range(k)]
            pos += 2 * k
            seen: set[int] = set()
            for mach, p in pairs:
                if p < 0:
                    raise InstanceError(
                        f"line {lineno}: negative processing time {p}", None, source
                    )
                if mach in seen:
                    raise InstanceError(
                        f"line {lineno}: operation {o + 1} lists machine {mach} twice",
                        None,
                        source,
                    )
                seen.add(mach)
                used.add(mach)
            ops.append(pairs)
        if pos != len(vals):
            raise InstanceError(
                f"line {lineno}: {len(vals) - pos} extra number(s) after the last operation",
                None,
                source,
            )
        raw_jobs.append((lineno, ops))
    one_based = n_machines in used or (0 not in used and used and max(used) == n_machines)
    shift = 1 if one_based else 0
    jobs = []
    for lineno, ops in raw_jobs:
        job = []
        for o, pairs in enumerate(ops):
            d: dict[int, int] = {}
            for mach, p in pairs:
                m0 = mach - shift
                if not 0 <= m0 < n_machines:
                    raise InstanceError(
                        f"line {lineno}: operation {o + 1}: machine {mach} out of range for "
                        f"{n_machines} machines (numbered from {shift})",
                        None,
                        source,
                    )
                d[m0] = p
            job.append(d)
        jobs.append(tuple(job))
    return FjspData(name, n_machines, tuple(jobs))


def read_fjsp(path: str | Path) -> FjspData:
    """Read an FJSP text file (a missing, binary, non-UTF-8 or oversized file, or a
    directory, is an :class:`~hetopt.InstanceError` naming the file)."""
    from ..instance import FileProblem, read_text

    p = Path(path)
    try:
        text = read_text(p)
    except FileProblem as exc:
        raise InstanceError(str(exc), None, str(p)) from None
    return parse_fjsp(text, p.stem, str(p))
