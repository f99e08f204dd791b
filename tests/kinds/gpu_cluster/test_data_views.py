"""The numpy views of a ``gpu_cluster`` instance (:class:`ClusterArrays`) are the same
whether they reuse what validation's job checks computed or are built from the records
alone."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any

import numpy as np
import pytest

from hetopt.kinds.gpu_cluster import GpuClusterInstance, generate
from hetopt.kinds.gpu_cluster.data import _CHECKED, ClusterArrays


def _wide() -> dict[str, Any]:
    types = [f"t{k}" for k in range(20)]
    rng = np.random.default_rng(3)
    jobs = [
        {
            "id": str(i),
            "throughput": {t: float(rng.integers(1, 9)) for t in rng.choice(types, 4)},
            "scale_factor": int(rng.choice([1, 2])),
            "weight": float(rng.choice([1.0, 2.0])),
        }
        for i in range(40)
    ]
    return {"kind": "gpu_cluster", "workers": {t: 2 for t in types}, "jobs": jobs}


def _cases() -> list[dict[str, Any]]:
    mix = generate(300, "k80=25,p100=25,v100=25", seed=2, multi_gpu=True).to_dict()
    sparse = copy.deepcopy(mix)
    for job in sparse["jobs"][::3]:
        job["throughput"].pop("k80", None)
        job["steps_remaining"] = 10.0
    one = generate(50, "v100=8", seed=4).to_dict()
    return [mix, sparse, one, _wide()]


def _fresh(inst: GpuClusterInstance) -> ClusterArrays:
    bare = GpuClusterInstance.model_construct(workers=inst.workers, jobs=list(inst.jobs))
    return ClusterArrays.from_instance(bare)


@pytest.mark.parametrize("k", range(4))
def test_arrays_from_validation_equal_arrays_from_the_records(k: int) -> None:
    data = _cases()[k]
    inst = GpuClusterInstance.from_dict(data)
    assert _CHECKED.columns.instance() is inst  # the job checks kept their columns
    got, want = inst.arrays, _fresh(inst)
    assert _CHECKED.columns is None  # taken once
    for f in dataclasses.fields(ClusterArrays):
        if not f.init:  # (what other modules derive from the arrays: not data)
            continue
        a, b = getattr(got, f.name), getattr(want, f.name)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape and a.flags.c_contiguous
            assert np.array_equal(a, b, equal_nan=True), f.name
        else:
            assert a == b, f.name


def test_kept_columns_belong_to_one_instance() -> None:
    data = _cases()[0]
    a = GpuClusterInstance.from_dict(data)
    b = GpuClusterInstance.from_dict(data)  # the columns kept are b's now
    assert a == b and np.array_equal(a.arrays.thr, b.arrays.thr)
    assert a == b  # with both views computed (ClusterArrays compare by identity)
    c = pickle.loads(pickle.dumps(b))
    assert c == b and np.array_equal(c.arrays.thr, b.arrays.thr)
    # a copy with other workers does not take columns computed for the old ones
    d = GpuClusterInstance.from_dict(data)
    other = {t: n + 1 for t, n in d.workers.items()}
    e = d.model_copy(update={"workers": other})
    assert e.arrays.workers.tolist() == [float(n) for n in other.values()]
    assert np.array_equal(e.arrays.thr, d.arrays.thr)


def _matrix_reference(thrs: list[dict[str, float]], types: list[str]) -> np.ndarray:
    out = np.zeros((len(thrs), len(types)))
    for i, d in enumerate(thrs):
        for k, t in enumerate(types):
            out[i, k] = d.get(t, 0.0)
    return out


def test_throughput_matrix_read_off_aligned_dicts_equals_the_lookup() -> None:
    """Dicts that name every type in order are read off their values; any other (a
    type missing, another order, a name not in ``types``, one dict short and the next
    long) takes the lookup; the matrix is the same."""
    from hetopt.kinds.gpu_cluster.data import _aligned_matrix, _throughput_matrix

    types = ["a", "b", "c"]
    aligned = [{"a": 1.0, "b": 2.5, "c": 0.0}, {"a": 3, "b": 0.5, "c": 7.0}]
    others = [
        [{"a": 1.0, "b": 2.0}, {"a": 1.0, "b": 2.0, "c": 3.0}],
        [{"b": 2.0, "a": 1.0, "c": 3.0}, {"a": 1.0, "b": 2.0, "c": 3.0}],
        [{"a": 1.0, "b": 2.0, "x": 3.0}, {"a": 1.0, "b": 2.0, "c": 3.0}],
        [{"a": 1.0, "b": 2.0}, {"c": 3.0, "a": 1.0, "b": 2.0, "d": 1.0}],
        [{}, {}],
    ]
    got = _aligned_matrix(aligned, types)
    assert got is not None and got.flags.c_contiguous and got.dtype == float
    assert np.array_equal(got, _matrix_reference(aligned, types))
    assert np.array_equal(_throughput_matrix(aligned, types), got)
    for thrs in others:
        assert _aligned_matrix(thrs, types) is None
        if all(set(d) <= set(types) for d in thrs):
            assert np.array_equal(_throughput_matrix(thrs, types), _matrix_reference(thrs, types))
    assert _aligned_matrix([], types) is None


def test_validation_leaves_the_collector_as_it_found_it() -> None:
    """from_dict pauses the cyclic collector: enabled again afterwards (and still
    disabled if it was), nothing frozen or unfrozen."""
    import gc

    data = _cases()[0]
    assert gc.isenabled()
    GpuClusterInstance.from_dict(data)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()
    try:
        GpuClusterInstance.from_dict(data)
        assert not gc.isenabled()
    finally:
        gc.enable()
    gc.freeze()
    try:
        assert gc.get_freeze_count() > 0
        GpuClusterInstance.from_dict(data)
        assert gc.get_freeze_count() > 0 and gc.isenabled()  # (not unfrozen)
    finally:
        gc.unfreeze()


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_a_loop_of_validations_lets_the_callers_garbage_be_collected() -> None:
    """A scheduler validating an instance every round while making cyclic garbage of
    its own: the collector still collects that garbage as it goes (an earlier version
    handed every young object to the oldest generation on the way out of
    ``from_dict``, where no full collection came: the loop grew without bound)."""
    import gc
    import weakref

    data = _cases()[0]
    assert gc.isenabled()
    refs = []
    for _ in range(400):
        for _ in range(20):
            refs.append(weakref.ref(_Cycle()))
        GpuClusterInstance.from_dict(data)
    alive = sum(r() is not None for r in refs)
    assert alive < len(refs) // 4, (alive, len(refs))


def test_the_kept_columns_go_with_their_instance() -> None:
    """The columns validation keeps for ``arrays`` (and the jobs they hold) are dropped
    when their instance is, not kept until the next validation in the thread."""
    import weakref

    inst = GpuClusterInstance.from_dict(_cases()[2])
    jobs = weakref.ref(inst.jobs[0])
    assert _CHECKED.columns.instance() is inst
    del inst
    assert _CHECKED.columns is None and jobs() is None


def test_validation_knows_that_no_job_is_elastic() -> None:
    """``has_elastic`` is False from the job checks that passed, and computed otherwise."""
    data = _cases()[2]
    inst = GpuClusterInstance.from_dict(data)
    assert inst.__dict__["has_elastic"] is False and not inst.has_elastic
    bare = GpuClusterInstance.model_construct(workers=inst.workers, jobs=list(inst.jobs))
    assert "has_elastic" not in bare.__dict__ and not bare.has_elastic


def test_derived_values_are_made_once_per_arrays_under_declared_keys() -> None:
    arr = GpuClusterInstance.from_dict(_cases()[0]).arrays
    made: list[ClusterArrays] = []

    def make(a: ClusterArrays) -> tuple[float, float]:
        made.append(a)
        return (float(a.weight.min()), float(a.weight.max()))

    first = arr.derived("weight_range", make)
    assert arr.derived("weight_range", make) is first
    assert made == [arr]
    # other arrays (a subset, the arrays of another instance) make their own
    sub = arr.subset(np.arange(3))
    assert sub.derived("weight_range", make) == (float(sub.weight.min()), float(sub.weight.max()))
    assert len(made) == 2 and made[1] is sub
    # a value given is what later calls get; undeclared keys are refused both ways
    sub.give("weight_range", (0.5, 2.0))
    assert sub.derived("weight_range", make) == (0.5, 2.0)
    with pytest.raises(KeyError, match="undeclared derived value 'nothing'"):
        arr.derived("nothing", make)
    with pytest.raises(KeyError, match="undeclared derived value 'nothing'"):
        arr.give("nothing", 1)
    assert len(made) == 2
