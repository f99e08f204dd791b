"""multicore's topological order (graphlib) is Kahn's FIFO order, as before (issue 20)."""

from __future__ import annotations

import random

from hetopt.kinds.multicore.data import _topological


def _kahn(preds: list[list[int]]) -> list[int]:
    """The hand-written order graphlib replaced (the reference)."""
    n = len(preds)
    indeg = [len(p) for p in preds]
    succ: list[list[int]] = [[] for _ in range(n)]
    for j, ps in enumerate(preds):
        for p in ps:
            succ[p].append(j)
    order = [i for i in range(n) if indeg[i] == 0]
    k = 0
    while k < len(order):
        for j in succ[order[k]]:
            indeg[j] -= 1
            if indeg[j] == 0:
                order.append(j)
        k += 1
    return order


def test_same_order_as_kahn_on_random_dags() -> None:
    rng = random.Random(0)
    for _ in range(2000):
        n = rng.randint(1, 25)
        perm = list(range(n))
        rng.shuffle(perm)
        density = rng.choice([0.05, 0.2, 0.5])
        preds: list[list[int]] = [[] for _ in range(n)]
        for a in range(n):
            for b in range(a + 1, n):
                if rng.random() < density:
                    preds[perm[b]].append(perm[a])
        for ps in preds:
            rng.shuffle(ps)
            if ps and rng.random() < 0.1:
                ps.append(ps[0])  # a repeated predecessor
        assert _topological(preds) == _kahn(preds)
