"""Property tests of the temporal network (Bellman-Ford) against scipy's LP solver.

The least solution of ``s_v >= s_u + w, s_0 = 0`` minimises ``sum s`` over the feasible
set, so ``scipy.optimize.linprog`` gives the same starts; when the LP is infeasible the
returned cycle must be a closed walk of positive weight.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from hetopt.kinds.human_robot.temporal import Network

arcs_strategy = st.integers(2, 6).flatmap(
    lambda n: st.tuples(
        st.just(n),
        st.lists(
            st.tuples(st.integers(0, n), st.integers(0, n), st.integers(-10, 10)),
            min_size=1,
            max_size=14,
        ),
    )
)


@settings(max_examples=80, deadline=None)
@given(arcs_strategy)
def test_longest_paths_match_lp(data: tuple[int, list[tuple[int, int, int]]]) -> None:
    n, raw = data
    net = Network(n)
    for k in range(1, n + 1):  # every start >= 0, as releases do
        net.add(0, k, 0.0, f"release{k}")
    for u, v, w in raw:
        if u != v:
            net.add(u, v, float(w), f"arc{u}-{v}")
    starts, cycle = net.longest_paths()
    # LP over s_1..s_n (s_0 = 0): minimise sum s subject to s_u - s_v <= -w
    A, b = [], []
    for arc in net.arcs:
        row = np.zeros(n)
        if arc.u:
            row[arc.u - 1] += 1
        if arc.v:
            row[arc.v - 1] -= 1
        A.append(row)
        b.append(-arc.w)
    lp = linprog(np.ones(n), A_ub=np.array(A), b_ub=np.array(b), bounds=[(None, None)] * n)
    if cycle is None:
        assert lp.status == 0
        assert starts is not None
        np.testing.assert_allclose(starts, lp.x, atol=1e-7)
    else:
        assert lp.status == 2  # infeasible
        assert sum(a.w for a in cycle) > 0
        for a, b_ in zip(cycle, cycle[1:] + cycle[:1], strict=True):
            assert a.v == b_.u  # a closed walk
