"""A vectorised Pyomo constraint component for large linear row blocks.

:class:`LinearRows` is a Pyomo ``IndexedConstraint`` (it shows up in
``model.component_objects(Constraint)``, writes to LP/MPS through Pyomo's writers and
can be printed) whose rows are stored as a CSR matrix instead of one Pyomo expression
per row. Building 10^5 rows is then a few numpy operations, and
:func:`hetopt.highs.compile_model` copies the matrix straight to HiGHS instead of walking
expressions. It is Pyomo's own ``MatrixConstraint`` idea, made to work with the current
writers (whose ``to_bounded_expression`` the original lacks).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np
from pyomo.common.gc_manager import PauseGC
from pyomo.core.base.matrix_constraint import MatrixConstraint, _MatrixConstraintData
from pyomo.core.expr.numeric_expr import LinearExpression
from pyomo.core.expr.relational_expr import (
    EqualityExpression,
    InequalityExpression,
    RangedExpression,
)

INF = float("inf")


class _RowData(_MatrixConstraintData):
    """One row of a :class:`LinearRows`; its expression is built only when asked for."""

    __slots__ = ()

    def _row(self) -> tuple[np.ndarray, list[Any]]:
        comp = self.parent_component()
        a, b = comp._A_indptr[self._index], comp._A_indptr[self._index + 1]
        cols = comp._A_indices[a:b]
        return comp._A_data[a:b], [comp._x[j] for j in cols]

    @property
    def body(self) -> Any:
        coefs, xs = self._row()
        return LinearExpression(linear_coefs=[float(c) for c in coefs], linear_vars=xs, constant=0)

    @property
    def lower(self) -> float | None:
        lb = self.parent_component()._lower[self._index]
        return None if lb == -INF else float(lb)

    @property
    def upper(self) -> float | None:
        ub = self.parent_component()._upper[self._index]
        return None if ub == INF else float(ub)

    @property
    def _expr(self) -> Any:
        lb, body, ub = self.lower, self.body, self.upper
        if lb is not None and ub is not None:
            if lb == ub:
                return EqualityExpression((body, ub))
            return RangedExpression((lb, body, ub), (False, False))
        if ub is not None:
            return InequalityExpression((body, ub), False)
        return InequalityExpression((lb, body), False)

    @property
    def expr(self) -> Any:
        return self._expr

    def to_bounded_expression(self, evaluate_bounds: bool = False) -> tuple[Any, Any, Any]:
        return self.lower, self.body, self.upper

    @property
    def equality(self) -> bool:
        return self.lower is not None and self.lower == self.upper


class LinearRows(MatrixConstraint):
    """``lower <= A @ x <= upper`` for a CSR matrix ``A`` and a list of Pyomo variables.

    Parameters
    ----------
    data, indices, indptr
        CSR arrays of ``A`` (row ``r`` has entries ``indptr[r]:indptr[r+1]``).
    lower, upper
        Row bounds (``-inf`` / ``inf`` or ``None`` for a missing side).
    x
        The variables, one per column of ``A``.
    """

    def __init__(
        self,
        data: Sequence[float] | np.ndarray,
        indices: Sequence[int] | np.ndarray,
        indptr: Sequence[int] | np.ndarray,
        lower: Sequence[float | None] | np.ndarray,
        upper: Sequence[float | None] | np.ndarray,
        x: Sequence[Any],
    ):
        lo = (
            np.array([-INF if v is None else v for v in lower], dtype=float)
            if not isinstance(lower, np.ndarray)
            else lower.astype(float)
        )
        hi = (
            np.array([INF if v is None else v for v in upper], dtype=float)
            if not isinstance(upper, np.ndarray)
            else upper.astype(float)
        )
        super().__init__(
            np.asarray(data, dtype=float),
            np.asarray(indices, dtype=np.int64),
            np.asarray(indptr, dtype=np.int64),
            lo,
            hi,
            x,
        )

    @classmethod
    def from_coo(
        cls,
        rows: np.ndarray,
        cols: np.ndarray,
        vals: np.ndarray,
        num_rows: int,
        lower: np.ndarray,
        upper: np.ndarray,
        x: Sequence[Any],
    ) -> LinearRows:
        """Build from triplets (duplicates are summed, explicit zeros kept out)."""
        import scipy.sparse as sp

        A = sp.csr_array((vals, (rows, cols)), shape=(num_rows, len(x)))
        A.sum_duplicates()
        A.eliminate_zeros()
        return cls(A.data, A.indices, A.indptr, lower, upper, x)

    def construct(self, data: Any = None) -> None:
        if self._constructed:  # type: ignore[has-type]
            return
        self._constructed = True
        ref = weakref.ref(self)
        with PauseGC():
            self._data = tuple(_RowData(i, ref) for i in range(len(self._lower)))

    # Pyomo's block iteration calls values(sort) / keys(sort) / items(sort); Mapping's
    # versions take no argument
    def keys(self, sort: Any = None) -> Any:  # type: ignore[override]
        return range(len(self._data))

    def values(self, sort: Any = None) -> Any:  # type: ignore[override]
        return iter(self._data)

    def items(self, sort: Any = None) -> Any:  # type: ignore[override]
        return enumerate(self._data)

    # matrix access for the compiler
    @property
    def csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self._A_data, self._A_indices, self._A_indptr

    @property
    def row_lower(self) -> np.ndarray:
        return self._lower

    @property
    def row_upper(self) -> np.ndarray:
        return self._upper

    @property
    def variables(self) -> tuple[Any, ...]:
        return self._x
