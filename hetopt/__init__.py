"""hetopt: exact optimisation models for heterogeneous resources (Pyomo + HiGHS).

>>> import hetopt
>>> result = hetopt.solve(hetopt.examples.path("gpu_cluster/example.json"))  # doctest: +SKIP
>>> result.status, result.objective_value                        # doctest: +SKIP
>>> result.allocation                                            # doctest: +SKIP
"""

from __future__ import annotations

import logging

from . import examples
from .api import build_model, export_model, solve, verify
from .errors import HetoptError, InstanceError, OptionsError, SolveError, UsageError
from .kinds import get_kind, instance_from_dict, kind_names, read_instance
from .options import SolveOptions
from .result import Result, Verification
from .status import Status

__version__ = "0.1.0"

__all__ = [
    "HetoptError",
    "InstanceError",
    "OptionsError",
    "Result",
    "SolveError",
    "SolveOptions",
    "Status",
    "UsageError",
    "Verification",
    "__version__",
    "build_model",
    "examples",
    "export_model",
    "get_kind",
    "instance_from_dict",
    "kind_names",
    "read_instance",
    "solve",
    "verify",
]

logging.getLogger(__name__).addHandler(logging.NullHandler())
