"""Cross-field checks shared by the kinds' instance models."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...instance import fail


def note_id(seen: dict[str, int], field: str, noun: str, i: int, ident: str) -> None:
    """Record that ``<field>[i]`` has id ``ident``; a repeated id is an error.

    Raises (through pydantic, an :class:`~hetopt.errors.InstanceError` naming
    ``<field>[i].id``): ``duplicate <noun> id '<ident>' (also <field>[<first>])``.

    Parameters
    ----------
    seen
        Id -> position of the entries already checked (updated).
    field
        The list's field name, e.g. ``"tasks"``.
    noun
        What an entry is, e.g. ``"task"``.
    i, ident
        Position and id of the entry.
    """
    if ident in seen:
        raise fail(
            f"{field}[{i}].id", f"duplicate {noun} id {ident!r} (also {field}[{seen[ident]}])"
        )
    seen[ident] = i


def id_positions(items: Iterable[Any], field: str, noun: str) -> dict[str, int]:
    """Id -> position of the entries of ``items`` (objects with an ``id``), checking that
    the ids are distinct (see :func:`note_id`)."""
    ids = [item.id for item in items]
    fast = dict(zip(ids, range(len(ids)), strict=True))
    if len(fast) == len(ids):  # distinct: the usual case, without a Python loop
        return fast
    seen: dict[str, int] = {}
    for i, ident in enumerate(ids):
        note_id(seen, field, noun, i, ident)
    return seen
