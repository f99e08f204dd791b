"""Sphinx configuration of the hetopt documentation.

Build: ``python -m sphinx -W --keep-going -b html docs docs/_build/html``.
Before Sphinx reads a page, :func:`hetopt_docs.generate_all` writes ``docs/generated/``
(model cards, per-kind instance formats with their JSON Schema, the CLI reference, the
benchmark report), so those pages always match the code of this build.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(DOCS))

import hetopt_docs  # noqa: E402

import hetopt  # noqa: E402

hetopt_docs.generate_all()

project = "hetopt"
author = "hetopt developers"
copyright = "hetopt developers, MIT licence"
release = hetopt.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
    "hetopt_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "_ext", "generated/figures"]
root_doc = "index"

myst_enable_extensions = ["colon_fence", "dollarmath", "amsmath", "deflist"]
myst_heading_anchors = 3
# Model cards are written for GitHub as much as for this site: a skipped heading level in a
# card is cosmetic and must not fail the build. Broken links still do.

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"show-inheritance": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

html_theme = "furo"
html_title = f"hetopt {release}"
html_static_path = ["_static"]
html_show_sourcelink = False
pygments_style = "sphinx"

# A short name such as ``Link`` or ``Session`` in a signature names a class of several
# kinds (pipeline_partition.Link, agent_sessions.Link); Sphinx links the first and would
# warn about the others. Qualified references are unaffected.
suppress_warnings = ["myst.header", "ref.python"]
