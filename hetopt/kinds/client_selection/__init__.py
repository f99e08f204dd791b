"""The ``client_selection`` kind: federated-learning client selection per round.

Three formulations (see ``models/client_selection.md``):

* FedCS (Nishio & Yonetani, ICC 2019) with a shared uplink: uploads one at a time; pick
  clients that all finish by the round deadline (``max_clients`` / ``max_weight``).
* Parallel uplink with a total bandwidth budget: a 0-1 knapsack.
* Oort's testing-set selection (Lai et al., OSDI 2021, Appendix G): meet per-class
  sample targets with at most ``max_clients`` clients, minimising the slowest client's
  time (``min_duration``).

With no side constraint that needs the MILP, the exact combinatorial fast path runs
(Moore-Hodgson, Lawler-Moore, smallest-need-first); ``result.info["method"]`` says
which method ran. The methods and the choice among them are in :mod:`.methods`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...contract import Column, Detail, Table
from ...errors import UsageError
from ...result import Result, Verification
from .._shared.choice import CHOICE_DETAIL
from ..base import Kind, LazyMethod, MethodEntry, Objective, lazy_exports
from .data import Client, ClientSelectionInstance, ClientSelectionParams
from .generate import generate
from .inputs import LP_ROUND_PAIRS, choose, fast_path_blocker, refusal

if TYPE_CHECKING:
    from .methods import selection_table
    from .rounds import RoundsResult, run_rounds

# imported on first use: defining KIND imports no Pyomo, HiGHS or pandas (issue 19)
__getattr__ = lazy_exports(
    __name__,
    {
        "selection_table": ".methods",
        "RoundsResult": ".rounds",
        "run_rounds": ".rounds",
    },
)

__all__ = [
    "KIND",
    "LP_ROUND_PAIRS",
    "Client",
    "ClientSelectionInstance",
    "ClientSelectionKind",
    "ClientSelectionParams",
    "RoundsResult",
    "fast_path_blocker",
    "generate",
    "run_rounds",
    "selection_table",
]

SELECTION = Table(
    "selection",
    "one row per client of the instance: whether it is selected and, if so, when it uploads "
    "(max_clients / max_weight) or how many test samples it gives (min_duration)",
    (
        Column("client", "str", "client id"),
        Column("group", "str", "the client's group (null if none)"),
        Column("selected", "bool", "the client takes part in the round"),
        Column("ready_s", "float", "when its update is ready (download + training)", "s"),
        Column("upload_s", "float", "upload time on its own link", "s"),
        Column("weight", "float", "its weight (max_clients / max_weight)", optional=True),
        Column(
            "upload_start_s",
            "float",
            "upload start (NaN if not selected; max_clients / max_weight)",
            "s",
            optional=True,
        ),
        Column(
            "finish_s",
            "float",
            "upload end (NaN if not selected; max_clients / max_weight)",
            "s",
            optional=True,
        ),
        Column(
            "upload_order",
            "int",
            "1-based position on the shared uplink (-1 if not selected; shared uplink)",
            optional=True,
        ),
        Column(
            "bandwidth_mbps",
            "float",
            "bandwidth granted so the upload ends at the deadline (NaN if not selected; "
            "parallel uplink with a budget)",
            "Mbit/s",
            optional=True,
        ),
        Column(
            "sample_s",
            "float",
            "time per test sample (min_duration)",
            "s",
            optional=True,
        ),
        Column(
            "test_samples",
            "int",
            "test samples it contributes (min_duration)",
            optional=True,
        ),
        Column(
            "duration_s",
            "float",
            "ready + upload + its samples' time (NaN if not selected; min_duration)",
            "s",
            optional=True,
        ),
    ),
)

CLASS_SAMPLES = Table(
    "class_samples",
    "test samples each selected client gives per class, in whole samples (min_duration)",
    (
        Column("client", "str", "client id"),
        Column("class", "str", "class (label)"),
        Column("samples", "int", "test samples of that class from that client"),
    ),
    optional=True,
)

DETAILS = (
    Detail(
        "method",
        "str",
        "what ran: milp, moore_hodgson, lawler_moore, sort, smallest_need_first, "
        "fedcs_greedy, lp_round or precheck (infeasible without a solver)",
    ),
    Detail("formulation", "str", "shared-uplink MILP formulation (erd or disjunctive)"),
    Detail("fast_path_blocker", "str", "why the exact fast path could not run (MILP)"),
    Detail("greedy_objective", "float", "FedCS greedy's objective (the baseline)"),
    Detail("greedy_gap", "float", "(optimum - greedy) / optimum, when proven optimal"),
    Detail("greedy_s", "float", "time FedCS's greedy baseline took", "s"),
    Detail("lp_bound", "float", "lp_round: the LP relaxation's optimum", "s"),
    Detail("candidates", "int", "lp_round: clients of the restricted MILP"),
    Detail("lp_s", "float", "lp_round: time until the restricted MILP started", "s"),
    Detail("coverage_bound", "float", "lp_round: the coverage lower bound", "s"),
    CHOICE_DETAIL,
)


_M = "hetopt.kinds.client_selection.methods"


class ClientSelectionKind(Kind):
    name = "client_selection"
    description = "federated-learning client selection (FedCS, bandwidth knapsack, Oort testing)"
    objectives = (
        Objective("max_clients", "most clients that upload by the round deadline", "clients"),
        Objective("max_weight", "largest total weight of clients that upload by the deadline"),
        Objective(
            "min_duration",
            "Oort testing-set selection: meet per-class targets, minimise the slowest client",
            "s",
            "min",
        ),
    )
    instance_model = ClientSelectionInstance
    params_model = ClientSelectionParams
    methods = {
        "max_clients": LazyMethod(f"{_M}:CountMilp", "max_clients"),
        "max_weight": LazyMethod(f"{_M}:CountMilp", "max_weight"),
        "min_duration": LazyMethod(f"{_M}:TestingMilp"),
    }
    """Each objective's exact MILP (what ``hetopt export`` writes); :meth:`method_for`
    picks what a solve runs."""
    tables = (SELECTION, CLASS_SAMPLES)
    details = DETAILS

    def choose_method(self, objective: str, instance: Any, params: Any) -> MethodEntry:
        """The fast path, the MILP, FedCS's greedy, LP rounding or the precheck's
        infeasibility, as ``method`` / ``formulation`` / ``baseline`` and the instance
        call for (:func:`.inputs.choose`)."""
        return choose(
            objective,
            instance,
            params,
            super().choose_method(objective, instance, params),
        )

    def check(self, instance: Any, objective: str, params: Any) -> None:
        """What a solve would refuse before solving: ``min_duration`` without
        ``class_targets`` (an invalid instance for it, naming the field) and parameter
        combinations that do not apply to the instance (usage errors)."""
        reason = refusal(self.choose_method(objective, instance, params))
        if reason is not None:
            raise UsageError(reason)

    def verify(self, instance: ClientSelectionInstance, result: Result) -> Verification:
        from . import verify as V

        return V.verify(instance, result.objective, result.objective_value, dict(result.tables))


KIND = ClientSelectionKind()
