"""The ``llm_serving`` kind: the cheapest GPU mix and request routing for LLM serving.

Three questions about serving an LLM on rented GPUs of several types (issue 13):

* ``min_cost`` (Mélange, arXiv 2404.14527): which mix of instance types serves a workload
  of request-size buckets at the SLO for the least $/h (a bin-packing ILP over slices of
  the buckets);
* ``min_max_load`` (Block, arXiv 2508.03611): how to route the buckets over the instances
  deployed now, minimising the largest utilisation (an LP); with ``provision`` it first
  chooses the cheapest or fewest instances that keep every utilisation under a target;
* ``pd_split`` (Splitwise, ISCA'24; DistServe, OSDI'24): separate prefill and decode
  pools per type covering the workload's prompt and generated tokens/s.

See ``models/llm_serving.md``; :func:`hourly.solve_hourly` re-plans hour by hour with a
cost per instance started or stopped.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ...contract import Column, Detail, Table
from ...errors import UsageError
from ...result import Result, Verification
from ..base import Kind, LazyMethod, MethodEntry, Objective
from .data import Bucket, GpuType, LlmServingInstance, Trace
from .params import APPLIES_TO, LlmServingParams

__all__ = [
    "KIND",
    "Bucket",
    "GpuType",
    "LlmServingInstance",
    "LlmServingKind",
    "LlmServingParams",
    "Trace",
]

INSTANCES = Table(
    "instances",
    "instances rented per GPU type (per type and pool for pd_split; every type listed)",
    (
        Column("gpu_type", "str", "GPU instance type"),
        Column("pool", "str", "pd_split: 'prefill' or 'decode'", optional=True),
        Column("count", "int", "number of instances"),
        Column(
            "cost_per_hour",
            "float",
            "cost of these instances: count x the type's cost_per_hour",
            "$/h",
        ),
    ),
)

ROUTING = Table(
    "routing",
    "which requests go where: every bucket's whole rate appears (once per pool for pd_split)",
    (
        Column("bucket", "str", "bucket id"),
        Column(
            "slice",
            "int",
            "min_cost with integer slices: the slice (0..slice_factor-1); otherwise the "
            "row's number within the bucket",
        ),
        Column("gpu_type", "str", "GPU type serving this part of the bucket"),
        Column("pool", "str", "pd_split: 'prefill' or 'decode'", optional=True),
        Column("rate_rps", "float", "requests/s of the bucket sent to the type", "req/s"),
        Column("share", "float", "rate_rps as a share of the bucket's rate"),
    ),
)

UTILIZATION = Table(
    "utilization",
    "per GPU type: instances, the work routed to them and their utilisation",
    (
        Column("gpu_type", "str", "GPU instance type"),
        Column("count", "int", "instances of the type"),
        Column(
            "count_used",
            "float",
            "instances' worth of work routed to the type: sum of rate_rps / throughput_rps",
        ),
        Column("utilization", "float", "count_used / count (0 without instances)"),
    ),
    optional=True,
)

POOLS = Table(
    "pools",
    "pd_split: per pool and GPU type, the tokens/s processed and the capacity",
    (
        Column("pool", "str", "'prefill' or 'decode'"),
        Column("gpu_type", "str", "GPU instance type"),
        Column("count", "int", "instances of the type in the pool"),
        Column("tokens_s", "float", "prompt (prefill) or generated (decode) tokens/s", "tokens/s"),
        Column(
            "capacity_tokens_s",
            "float",
            "count x the type's prefill_tokens_s or decode_tokens_s",
            "tokens/s",
        ),
        Column("utilization", "float", "tokens_s / capacity_tokens_s (0 without instances)"),
    ),
    optional=True,
)

DETAILS = (
    Detail(
        "model",
        "str",
        "what was solved: min_cost/aggregated|binary|continuous, routing, provision/cost|count, "
        "pd_split",
    ),
    Detail("slices", "int", "number of slices (buckets x slice_factor) of an integer min_cost"),
    Detail("target_utilization", "float", "largest utilisation allowed per instance"),
    Detail("total_rate_rps", "float", "sum of the buckets' rates", "req/s"),
    Detail("serving_cost_per_hour", "float", "cost of the instances of the result", "$/h"),
    Detail("instances_total", "int", "number of instances of the result"),
    Detail("max_utilization", "float", "largest utilisation over the GPU types"),
    Detail("change_cost_per_instance", "float", "min_cost: $ per instance started or stopped", "$"),
    Detail("change_cost", "float", "min_cost: cost of the changes against 'deployed'", "$"),
    Detail("instances_changed", "int", "min_cost: instances started plus instances stopped"),
    Detail(
        "counts_raised",
        "int",
        "types whose count was raised above HiGHS's to carry their load (integrality tolerance)",
    ),
    Detail("routing_status", "str", "provisioning: status of the second (routing) stage"),
    Detail(
        "stages",
        "str",
        "min_cost two-stage: the stages solved (relaxation, slices within its counts, full ILP)",
    ),
    Detail(
        "relaxation_bound",
        "float",
        "min_cost two-stage: lower bound from the continuous limit",
        "$/h",
    ),
    Detail("prefill_tokens_s", "float", "pd_split: prompt tokens/s to cover", "tokens/s"),
    Detail("decode_tokens_s", "float", "pd_split: generated tokens/s to cover", "tokens/s"),
    Detail("kv_transfer_gb_s", "float", "pd_split: KV cache sent prefill -> decode", "GB/s"),
    Detail("power_w", "float", "pd_split: power drawn by the pools", "W"),
)


VARIANT_PARAM = {"min_max_load": "provision", "min_cost": "min_cost_method"}
"""Objective -> the parameter that picks among its methods (``variants``)."""


_M = "hetopt.kinds.llm_serving.methods"


class LlmServingKind(Kind):
    name = "llm_serving"
    description = (
        "LLM serving on GPU types: cheapest instance mix (Melange), request routing and "
        "auto-provisioning (Block), prefill/decode pools (Splitwise)"
    )
    objectives = (
        Objective(
            "min_cost",
            "cheapest instances serving every bucket at the SLO (Melange's slice ILP)",
            "$/h",
            "min",
        ),
        Objective(
            "min_max_load",
            "route the buckets over the deployed instances minimising the largest "
            "utilisation (LP); -p provision=cost|count chooses the instances first",
            "",
            "min",
        ),
        Objective(
            "pd_split",
            "cheapest prefill and decode pools per type covering the token rates",
            "$/h",
            "min",
        ),
    )
    instance_model = LlmServingInstance
    params_model = LlmServingParams
    methods = {
        "min_cost": LazyMethod(f"{_M}:MinCost"),
        "min_max_load": LazyMethod(f"{_M}:Routing"),
        "pd_split": LazyMethod(f"{_M}:PdSplit"),
    }
    variants: ClassVar[dict[tuple[str, str], LazyMethod]] = {
        ("min_max_load", "cost"): LazyMethod(f"{_M}:Provision", "cost"),
        ("min_max_load", "count"): LazyMethod(f"{_M}:Provision", "count"),
        ("min_cost", "two_stage"): LazyMethod(f"{_M}:TwoStageMinCost"),
    }
    tables = (INSTANCES, ROUTING, UTILIZATION, POOLS)
    details = DETAILS

    def choose_method(self, objective: str, instance: Any, params: Any) -> MethodEntry:
        """The objective's method; a parameter picks among variants (``VARIANT_PARAM``);
        parameters that do not apply to the objective are a usage error."""
        given = set(params.model_fields_set) - APPLIES_TO.get(objective, frozenset())
        if given:
            raise UsageError(
                f"{', '.join(sorted(given))} does not apply to objective {objective!r} "
                f"(it takes: {', '.join(sorted(APPLIES_TO.get(objective, ()))) or 'none'})"
            )
        switch = VARIANT_PARAM.get(objective)
        variant = self.variants.get((objective, getattr(params, switch))) if switch else None
        return variant or super().choose_method(objective, instance, params)

    def verify(self, instance: LlmServingInstance, result: Result) -> Verification:
        from . import verify as V

        return V.verify(
            instance, result.objective, result.objective_value, result.tables, result.info
        )


KIND = LlmServingKind()
