"""The example instances that ship with hetopt, so tutorials work after ``pip install``.

They are the repository's ``instances/`` folder (``hetopt/examples/instances`` is a
link to it in a checkout and a copy in the wheel)::

    import hetopt

    result = hetopt.solve(hetopt.examples.path("gpu_cluster/example.json"))
    hetopt.examples.names("client_selection")   # ['client_selection/fedcs_quotas.json', ...]

On the command line: ``hetopt solve "$(python -c 'import hetopt;
print(hetopt.examples.path("gpu_cluster/example.json"))')"``.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["ROOT", "names", "path"]

ROOT = Path(__file__).resolve().with_name("instances")
"""The folder holding the examples (one sub-folder per kind, plus ``fjsp/``)."""


def path(name: str) -> Path:
    """The file of example ``name``, e.g. ``"gpu_cluster/example.json"`` (a leading
    ``instances/``, as the tutorials write it, is accepted).

    Raises
    ------
    FileNotFoundError
        No such example; the message lists the examples of the same folder.
    """
    rel = name.removeprefix("instances/").lstrip("/")
    p = (ROOT / rel).resolve()
    if not p.is_relative_to(ROOT.resolve()) or not p.is_file():
        folder = rel.split("/", 1)[0]
        near = names(folder) if folder in _folders() else []  # (never "..": outside)
        hint = (
            f"; {folder}/ has: {', '.join(near)}" if near else f"; kinds: {', '.join(_folders())}"
        )
        raise FileNotFoundError(f"no example {name!r}{hint}")
    return p


def names(kind: str | None = None) -> list[str]:
    """The example instance files (JSON), as names :func:`path` takes; only those of
    ``kind`` (a sub-folder, e.g. ``"multicore"``) if given. Answer and index files
    (``answers.json``, ...) are listed too: they sit beside the instances they answer."""
    base = ROOT / kind if kind else ROOT
    if not base.is_dir():
        return []
    return sorted(p.relative_to(ROOT).as_posix() for p in base.rglob("*.json"))


def _folders() -> list[str]:
    return sorted(p.name for p in ROOT.iterdir() if p.is_dir()) if ROOT.is_dir() else []
