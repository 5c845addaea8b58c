"""Outer bounds of a component's variables by bound propagation over its relations.

Each relation ``sum_i a_i x_i = b`` bounds every variable in it by what the others can
add up to within their bounds; repeating over all relations tightens the bounds further.
Every table the intruder cannot rule out satisfies them, so a feasible table (a witness)
that attains one proves it the exact interval end without an LP of its own. On count
tables the interval ends are mostly such bounds (a cell's count at most what its row
leaves over), and one LP solution attains many of them at once.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from tabprotect.csr import sum_of_others


def outer_bounds(A: sp.csr_matrix, rhs: np.ndarray, lb: np.ndarray, ub: np.ndarray,
                 rounds: int = 8, rhs_upper: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Bounds ``lb <= x <= ub`` tightened by ``rounds`` sweeps of propagation over the
    relations ``A x = rhs`` (copies; only ever tightened, never past each other). With
    ``rhs_upper`` the relations are ranges ``rhs <= A x <= rhs_upper``."""
    lb, ub = lb.astype(float).copy(), ub.astype(float).copy()
    rhs_upper = rhs if rhs_upper is None else rhs_upper
    A = sp.csr_matrix(A)
    if A.nnz == 0:
        return lb, ub
    rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    cols, a = A.indices, A.data
    m = A.shape[0]
    pos = a > 0
    for _ in range(rounds):
        # each term's least and greatest contribution a_i x_i
        low = np.where(pos, a * lb[cols], a * ub[cols])
        high = np.where(pos, a * ub[cols], a * lb[cols])
        least_others = sum_of_others(rows, low, m, -np.inf)
        most_others = sum_of_others(rows, high, m, np.inf)
        # a_j x_j = b - (the others): between b - most and b - least
        top = (rhs_upper[rows] - least_others) / a
        bottom = (rhs[rows] - most_others) / a
        new_ub = np.where(pos, top, bottom)
        new_lb = np.where(pos, bottom, top)
        ub_next = ub.copy()
        lb_next = lb.copy()
        np.minimum.at(ub_next, cols, new_ub)
        np.maximum.at(lb_next, cols, new_lb)
        ub_next = np.maximum(ub_next, lb)      # rounding never crosses the bounds over
        lb_next = np.minimum(lb_next, ub_next)
        if np.array_equal(ub_next, ub) and np.array_equal(lb_next, lb):
            break
        lb, ub = lb_next, ub_next
    return lb, ub
