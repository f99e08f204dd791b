"""The generators' size, fraction, rate and seed arguments from Python
(:mod:`hetopt.kinds._shared.arguments`).

Every public generator refuses a bad argument before drawing anything, with one line
naming the function, the parameter, its range and the value given (a ``UsageError``),
instead of a ``TypeError`` from inside (``generate(2.5)``), a silent fix (``True`` drawn as
one job) or a draw that fills memory (``generate(10**9)``). A valid numpy integer or
integral float gives the very instance the plain ``int`` gives.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from hetopt import InstanceError, UsageError
from hetopt.instance import MAX_ABS
from hetopt.kinds._shared import arguments
from hetopt.kinds._shared.arguments import MAX_GENERATED, MAX_WHOLE
from hetopt.kinds.agent_sessions.generate import generate as agent_sessions
from hetopt.kinds.client_selection.generate import generate as client_selection
from hetopt.kinds.client_selection.generate import generate_clients
from hetopt.kinds.cpu_gpu.generate import generate as cpu_gpu
from hetopt.kinds.gpu_cluster.generate import generate as gpu_cluster
from hetopt.kinds.gpu_cluster.generate import generate_jobs
from hetopt.kinds.gpu_cluster.simulate import gavel_trace, generate_trace
from hetopt.kinds.human_robot.generate import generate as human_robot
from hetopt.kinds.llm_serving.generate import generate as llm_serving
from hetopt.kinds.multi_resource.generate import generate as multi_resource
from hetopt.kinds.multicore.generate import generate as multicore
from hetopt.kinds.multicore.generate import processing_times
from hetopt.kinds.pipeline_partition.generate import generate as pipeline_partition

# a check: ("count", minimum, maximum) (None: no bound), ("fraction",), ("positive",),
# ("nonnegative",) or ("seed",); ``optional`` parameters also take None
Check = tuple[Any, ...]


@dataclass(frozen=True)
class Gen:
    """A generator, valid small arguments, and the checks of its parameters."""

    name: str
    where: str
    func: Callable[..., Any]
    base: dict[str, Any]
    checks: dict[str, Check]
    optional: frozenset[str] = frozenset()

    def __call__(self, **changes: Any) -> Any:
        return self.func(**{**self.base, **changes})


def _jobs(**kw: Any) -> Any:
    return generate_jobs(rng=np.random.default_rng(0), **kw)


def _clients(**kw: Any) -> Any:
    return generate_clients(rng=np.random.default_rng(0), **kw)


SIZE = ("count", 1, MAX_GENERATED)
SIZE0 = ("count", 0, MAX_GENERATED)
SEED = ("seed",)
FRACTION = ("fraction",)
POSITIVE = ("positive",)
NONNEGATIVE = ("nonnegative",)

GENERATORS = (
    Gen(
        "gpu_cluster.generate",
        "generate",
        gpu_cluster,
        {"num_jobs": 4, "workers": "k80=2,v100=2", "seed": 1, "priority_fraction": 0.5},
        {"num_jobs": SIZE, "seed": SEED, "priority_fraction": FRACTION},
    ),
    Gen(
        "gpu_cluster.generate_jobs",
        "generate_jobs",
        _jobs,
        {"num_jobs": 4, "workers": {"k80": 2, "v100": 2}, "priority_fraction": 0.5, "id_offset": 3},
        {"num_jobs": SIZE0, "priority_fraction": FRACTION, "id_offset": ("count", 0, None)},
    ),
    Gen(
        "gpu_cluster.generate_trace",
        "generate_trace",
        generate_trace,
        {
            "num_jobs": 4,
            "workers": {"k80": 2, "v100": 2},
            "arrival_rate": 10.0,
            "seed": 1,
            "priority_fraction": 0.5,
        },
        {
            "num_jobs": SIZE,
            "arrival_rate": POSITIVE,
            "seed": SEED,
            "priority_fraction": FRACTION,
        },
    ),
    Gen(
        "gpu_cluster.gavel_trace",
        "gavel_trace",
        gavel_trace,
        {"num_jobs": 4, "arrival_rate": 10.0, "seed": 1},
        {"num_jobs": SIZE, "arrival_rate": POSITIVE, "seed": ("count", None, None)},
    ),
    Gen(
        "cpu_gpu.generate",
        "generate",
        cpu_gpu,
        {
            "num_programs": 4,
            "num_cpus": 1,
            "num_gpus": 2,
            "seed": 1,
            "divisible_fraction": 0.5,
            "slowdown_pairs": 3,
        },
        {
            "num_programs": SIZE,
            "num_cpus": SIZE0,
            "num_gpus": SIZE0,
            "seed": SEED,
            "divisible_fraction": FRACTION,
            "slowdown_pairs": SIZE0,
        },
    ),
    Gen(
        "human_robot.generate",
        "generate",
        human_robot,
        {
            "num_tasks": 5,
            "num_agents": 2,
            "seed": 1,
            "human_fraction": 0.5,
            "locations": 2,
            "precedence_prob": 0.5,
            "deadline_fraction": 0.5,
        },
        {
            "num_tasks": SIZE,
            "num_agents": SIZE,
            "seed": SEED,
            "human_fraction": FRACTION,
            "locations": SIZE,
            "precedence_prob": FRACTION,
            "deadline_fraction": FRACTION,
        },
        frozenset({"locations"}),
    ),
    Gen(
        "client_selection.generate",
        "generate",
        client_selection,
        {
            "num_clients": 6,
            "seed": 1,
            "deadline_s": 300.0,
            "uplink": "parallel",
            "objective": "min_duration",
            "max_clients": 3,
            "classes": 3,
            "groups": 2,
            "budget_fraction": 0.5,
            "target_fraction": 0.1,
            "time_resolution_s": 0.1,
            "model_mb": 20.0,
        },
        {
            "num_clients": SIZE,
            "seed": SEED,
            "deadline_s": POSITIVE,
            "max_clients": ("count", 1, MAX_WHOLE),
            "classes": SIZE0,
            "groups": SIZE0,
            "budget_fraction": NONNEGATIVE,
            "target_fraction": FRACTION,
            "time_resolution_s": NONNEGATIVE,
            "model_mb": POSITIVE,
        },
        frozenset({"max_clients", "time_resolution_s"}),
    ),
    Gen(
        "client_selection.generate_clients",
        "generate_clients",
        _clients,
        {
            "num_clients": 5,
            "classes": 3,
            "alpha": 0.5,
            "model_mb": 20.0,
            "groups": 2,
            "time_resolution_s": 0.1,
        },
        {
            "num_clients": SIZE0,
            "classes": SIZE0,
            "alpha": POSITIVE,
            "model_mb": POSITIVE,
            "groups": SIZE0,
            "time_resolution_s": NONNEGATIVE,
        },
        frozenset({"time_resolution_s"}),
    ),
    *(
        Gen(
            f"pipeline_partition.generate[{mode}]",
            "generate",
            pipeline_partition,
            {
                "mode": mode,
                "nodes": 3,
                "layers": 4,
                "types": 2,
                "seed": 1,
                "micro_batches": 4,
                "slow_links": 0.5,
            },
            {
                "nodes": SIZE,
                "layers": SIZE,
                "types": ("count", 1, 8),
                "seed": SEED,
                "micro_batches": SIZE,
                "slow_links": FRACTION,
            },
        )
        for mode in ("serving", "training")
    ),
    Gen(
        "multicore.generate",
        "generate",
        multicore,
        {"family": "U1-100", "machines": 3, "tasks": 4, "seed": 1},
        {"machines": SIZE, "tasks": SIZE, "seed": SEED},
    ),
    Gen(
        "multicore.processing_times",
        "processing_times",
        processing_times,
        {"family": "JobsCorre", "machines": 3, "tasks": 4, "seed": 1},
        {"machines": SIZE, "tasks": SIZE, "seed": SEED},
    ),
    Gen(
        "llm_serving.generate",
        "generate",
        llm_serving,
        {
            "num_buckets": 3,
            "num_types": 2,
            "seed": 1,
            "slice_factor": 2,
            "rate_rps": 20.0,
            "available": 5,
        },
        {
            "num_buckets": SIZE,
            "num_types": ("count", 1, 8),
            "seed": SEED,
            "slice_factor": ("count", 1, 4096),
            "rate_rps": POSITIVE,
            "available": ("count", 0, MAX_WHOLE),
        },
        frozenset({"available"}),
    ),
    Gen(
        "multi_resource.generate",
        "generate",
        multi_resource,
        {
            "num_jobs": 4,
            "num_servers": 2,
            "seed": 1,
            "gpus_per_server": 4,
            "cpus_per_server": 24.0,
            "mem_gb_per_server": 500.0,
            "racks": 2,
            "tagged_fraction": 0.5,
            "cost_per_hour": 2.0,
        },
        {
            "num_jobs": SIZE,
            "num_servers": SIZE,
            "seed": SEED,
            "gpus_per_server": ("count", 1, MAX_WHOLE),
            "cpus_per_server": NONNEGATIVE,
            "mem_gb_per_server": NONNEGATIVE,
            "racks": SIZE0,
            "tagged_fraction": FRACTION,
            "cost_per_hour": NONNEGATIVE,
        },
        frozenset({"cost_per_hour"}),
    ),
    Gen(
        "agent_sessions.generate",
        "generate",
        agent_sessions,
        {
            "num_sessions": 3,
            "num_gpus": 2,
            "pauses": 2,
            "seed": 1,
            "kv_capacity_tokens": 40_000,
            "memory_pressure": 2.0,
            "prefill_tokens_s": 8000.0,
            "equal_context": 1024,
            "arrival_window_s": 20.0,
        },
        {
            "num_sessions": SIZE,
            "num_gpus": SIZE,
            "pauses": SIZE0,
            "seed": SEED,
            "kv_capacity_tokens": ("count", 1, MAX_WHOLE),
            "memory_pressure": POSITIVE,
            "prefill_tokens_s": POSITIVE,
            "equal_context": ("count", 1, MAX_WHOLE),
            "arrival_window_s": NONNEGATIVE,
        },
        frozenset({"kv_capacity_tokens", "equal_context", "arrival_window_s"}),
    ),
)

LEGACY = {
    ("gpu_cluster.generate_trace", "arrival_rate"): ({0, -1}, "arrival_rate"),
    ("gpu_cluster.gavel_trace", "arrival_rate"): ({0, -1}, "arrival_rate"),
    ("agent_sessions.generate", "num_sessions"): ({0, -1}, "sessions"),
}
"""(generator, parameter) -> (values, field): the ``InstanceError`` those values raised
before and still raise (``tests/kinds/gpu_cluster/test_simulate.py`` and
``tests/kinds/agent_sessions/test_agent_sessions_input.py`` match it; ``gavel_trace``
keeps ``generate_trace``'s)."""


def _bad_values(check: Check, optional: bool) -> list[tuple[str, Any]]:
    """(id, value) of the values ``check`` refuses."""
    common: list[tuple[str, Any]] = [
        ("true", True),
        ("string", "5"),
        ("nan", math.nan),
        ("inf", math.inf),
        ("-inf", -math.inf),
    ]
    if not optional:
        common.append(("none", None))
    kind = check[0]
    if kind == "count":
        lo, hi = check[1], check[2]
        out = [("2.5", 2.5), *common]
        if lo is not None:
            out.append(("below_min", lo - 1))
            if lo - 1 != -1:
                out.append(("-1", -1))
        if hi is not None:
            out.append(("above_max", hi + 1))
        return out
    if kind == "seed":
        return [("2.5", 2.5), *common, ("below_min", -1)]
    if kind == "fraction":
        return [*common, ("below_min", -1), ("above_max", 2.5)]
    if kind == "positive":
        return [*common, ("below_min", 0), ("-1", -1), ("above_max", 2e12)]
    assert kind == "nonnegative"
    return [*common, ("below_min", -1), ("above_max", 2e12)]


def _expected(check: Check) -> str:
    kind = check[0]
    if kind == "count":
        lo, hi = check[1], check[2]
        if lo is None and hi is None:
            return "a whole number"
        if hi is None:
            return f"a whole number >= {lo:,}"
        return f"a whole number from {lo:,} to {hi:,}"
    return {
        "seed": "a whole number >= 0",
        "fraction": "a number from 0 to 1",
        "positive": "a number above 0 and at most 1e+12",
        "nonnegative": "a number from 0 to 1e+12",
    }[kind]


BAD = [
    pytest.param(gen, param, check, value, id=f"{gen.name}-{param}-{vid}")
    for gen in GENERATORS
    for param, check in gen.checks.items()
    for vid, value in _bad_values(check, param in gen.optional)
]


@pytest.mark.parametrize(("gen", "param", "check", "value"), BAD)
def test_bad_argument_is_a_usage_error_naming_it(
    gen: Gen, param: str, check: Check, value: Any
) -> None:
    legacy = LEGACY.get((gen.name, param))
    if legacy is not None and not isinstance(value, bool) and value in legacy[0]:
        with pytest.raises(InstanceError) as kept:
            gen(**{param: value})
        assert kept.value.field == legacy[1]
        return
    with pytest.raises(UsageError) as exc:
        gen(**{param: value})
    message = str(exc.value)
    assert "\n" not in message
    assert message.startswith(f"{gen.where}: {param} must be {_expected(check)}, got "), message
    assert message.endswith(f"got {value!r}"), message


def _canon(out: Any) -> Any:
    """A generator's output as plain data, to compare two of them."""
    if hasattr(out, "to_dict"):
        return out.to_dict()
    if isinstance(out, np.ndarray):
        return (out.dtype.str, out.tolist())
    if isinstance(out, dict):
        return {k: _canon(v) for k, v in out.items()}
    return out


def _variants(gen: Gen, param: str, check: Check) -> list[tuple[str, Any]]:
    value = gen.base[param]
    if check[0] in ("count", "seed"):
        assert type(value) is int
        return [
            ("int64", np.int64(value)),
            ("uint16", np.uint16(value)),
            ("float", float(value)),
            ("float64", np.float64(value)),
        ]
    assert type(value) is float
    return [("float64", np.float64(value))]


SAME = [
    pytest.param(gen, param, variant, id=f"{gen.name}-{param}-{vid}")
    for gen in GENERATORS
    for param, check in gen.checks.items()
    for vid, variant in _variants(gen, param, check)
]


@pytest.mark.parametrize(("gen", "param", "variant"), SAME)
def test_numpy_and_integral_values_give_the_same_instance(
    gen: Gen, param: str, variant: Any
) -> None:
    assert _canon(gen(**{param: variant})) == _canon(gen())


def test_the_example_message() -> None:
    with pytest.raises(UsageError) as exc:
        gpu_cluster(2.5)
    assert (
        str(exc.value) == "generate: num_jobs must be a whole number from 1 to 1,000,000, got 2.5"
    )


def test_kept_instance_errors() -> None:
    """The checks that combine arguments (or see what was drawn) keep their
    ``InstanceError``: the command line exits 3 on them, as before."""
    with pytest.raises(InstanceError, match="need at least one device"):
        cpu_gpu(3, 0, 0)
    with pytest.raises(InstanceError, match=r"slowdown: must be in \[0, 6\] for 3 programs"):
        cpu_gpu(3, slowdown_pairs=7)
    with pytest.raises(InstanceError, match="20 jobs need at least 20 GPUs"):
        multi_resource(20, 1)
    with pytest.raises(InstanceError, match="racks: must be between 0 and the 2 servers"):
        multi_resource(4, 2, racks=3)
    with pytest.raises(InstanceError, match="kv_capacity_tokens"):
        agent_sessions(3, 1, 2, seed=2, equal_context=2048, kv_capacity_tokens=1000)
    with pytest.raises(InstanceError, match="must be > 0 jobs per hour, got 0"):
        generate_trace(4, {"k80": 1}, 0)


def test_every_slowdown_pair_once() -> None:
    """The pairs are drawn by their position among the ``n (n - 1)`` ordered pairs,
    without listing them: all of them means each once."""
    inst = cpu_gpu(7, slowdown_pairs=42, seed=3).to_dict()
    pairs = [(s["cpu_program"], s["gpu_program"]) for s in inst["slowdown"]]
    expected = [(f"p{a}", f"p{b}") for a in range(7) for b in range(7) if a != b]
    assert pairs == expected


def test_a_huge_size_is_refused_before_any_draw() -> None:
    for call in (
        lambda: gpu_cluster(10**9),
        lambda: human_robot(10**9, 2),
        lambda: pipeline_partition(nodes=10**9),
        lambda: multicore("U1-100", 10**9, 10**9),
    ):
        with pytest.raises(UsageError, match="1,000,000, got 1000000000"):
            call()


# ------------------------------------------------------------------ the helpers alone
@pytest.mark.parametrize(
    "value", [4, np.int64(4), np.uint8(4), 4.0, np.float32(4.0), np.float64(4.0), Fraction(8, 2)]
)
def test_count_takes_whole_numbers_as_plain_ints(value: Any) -> None:
    n = arguments.count(value, "n")
    assert n == 4 and type(n) is int


@pytest.mark.parametrize(
    "value",
    [np.True_, Fraction(9, 2), "4", b"4", None, [4], np.array([4]), 1e300, 10**400, 4.5],
    ids=repr,
)
def test_count_refuses(value: Any) -> None:
    with pytest.raises(UsageError, match=r"^generate: n must be a whole number from 1 to "):
        arguments.count(value, "n")


def test_count_bounds_and_message() -> None:
    assert arguments.count(0, "n", 0) == 0
    assert arguments.count(-5, "n", None, None) == -5
    assert arguments.count(10**20, "n", 1, None) == 10**20
    with pytest.raises(UsageError, match=r"^f: n must be a whole number >= 1, got 0$"):
        arguments.count(0, "n", 1, None, where="f")
    with pytest.raises(UsageError, match=r"^f: n must be a whole number <= 3, got 4$"):
        arguments.count(4, "n", None, 3, where="f")
    with pytest.raises(UsageError, match=r"^f: n must be a whole number, got 0\.5$"):
        arguments.count(0.5, "n", None, None, where="f")


def test_reals_keep_python_numbers_and_convert_numpy_ones() -> None:
    half = 0.5
    assert arguments.fraction(half, "p") is half
    assert arguments.fraction(1, "p") == 1 and type(arguments.fraction(1, "p")) is int
    for value in (np.float64(0.25), np.float32(0.25), Fraction(1, 4)):
        out = arguments.fraction(value, "p")
        assert out == 0.25 and type(out) is float
    assert arguments.positive(MAX_ABS, "x") == MAX_ABS
    assert arguments.positive(5e-324, "x") == 5e-324
    assert arguments.nonnegative(0, "x") == 0
    for bad in (10**400, Fraction(10**400), np.float64("nan"), np.inf):
        with pytest.raises(UsageError, match=r"^generate: x must be a number above 0"):
            arguments.positive(bad, "x")


def test_seed() -> None:
    assert arguments.seed(2**70) == 2**70
    assert arguments.seed(np.int64(3)) == 3
    with pytest.raises(UsageError, match=r"^generate: seed must be a whole number >= 0, got -1$"):
        arguments.seed(-1)


def test_a_long_value_is_shown_on_one_line() -> None:
    with pytest.raises(UsageError) as exc:
        arguments.count(np.arange(1000), "n")
    assert "\n" not in str(exc.value)
    assert str(exc.value).endswith("got a numpy ndarray of 1000 values")


def test_limits() -> None:
    from hetopt import console

    assert console.MAX_GENERATED is MAX_GENERATED == 1_000_000
    assert math.floor(MAX_ABS) == MAX_WHOLE


@pytest.mark.parametrize(
    ("workers", "message"),
    [
        ({"k80": "4"}, "workers.k80: Input should be a valid integer, got '4'"),
        ({"k80": 2.5}, "workers.k80: Input should be a valid integer, got 2.5"),
        ({"k80": -1}, "workers.k80: Input should be greater than or equal to 0, got -1"),
    ],
)
def test_gpu_cluster_generate_checks_the_workers_before_drawing(
    workers: dict[str, object], message: str
) -> None:
    """A string count raised ``TypeError: '>' not supported between 'int' and 'str'``
    inside the draw, before the instance's validation could name it."""
    from hetopt.errors import InstanceError
    from hetopt.kinds.gpu_cluster import generate

    with pytest.raises(InstanceError) as err:
        generate(5, workers)
    assert str(err.value) == message


def test_gpu_cluster_generate_takes_numpy_worker_counts() -> None:
    import numpy as np

    from hetopt.kinds.gpu_cluster import generate

    plain = generate(20, {"k80": 4, "v100": 4}, seed=2)
    assert generate(20, {"k80": np.int64(4), "v100": 4.0}, seed=2).to_dict() == plain.to_dict()
