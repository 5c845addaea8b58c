"""Integer bound propagation over the table's relations: ranges every feasible table keeps.

For a relation ``sum_j a_j x_j = 0`` each cell's term equals minus the sum of the others,
so the others' ranges bound it; rounded inward (the true values are integers) and repeated
until nothing changes.  The result contains every feasible integer table, so the audit may
search inside it instead of the method's ranges: an integral feasible table at one of its
ends proves that end is the cell's exact bound, and no feasible table is lost.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from tabprotect.csr import sum_of_others
from tabprotect.errors import InputError

__all__ = ["propagated_ranges"]


def propagated_ranges(A: sp.spmatrix, lower: np.ndarray, upper: np.ndarray,
                      max_rounds: int) -> tuple[np.ndarray, np.ndarray]:
    """The integer ranges ``[lower, upper]`` narrowed by propagation over ``A x = 0``
    (at most ``max_rounds`` sweeps: every sweep's ranges are valid, so stopping early only
    leaves them wider).  Raises :class:`InputError` when a range becomes empty (no
    additive integer table is consistent with them).

    Examples
    --------
    >>> A = sp.csr_matrix([[1.0, -1.0, -1.0]])        # total = a + b
    >>> lo, hi = propagated_ranges(A, np.array([0.0, 3.0, 0.0]), np.array([4.0, 9.0, 9.0]),
    ...                            10)
    >>> lo.tolist(), hi.tolist()
    ([3.0, 3.0, 0.0], [4.0, 4.0, 1.0])
    """
    lo = np.asarray(lower, dtype=float).copy()
    hi = np.asarray(upper, dtype=float).copy()
    if A.shape[0] == 0 or A.nnz == 0:
        return lo, hi
    coo = A.tocoo()
    row, col, v = coo.row, coo.col, coo.data.astype(float)
    keep = v != 0
    row, col, v = row[keep], col[keep], v[keep]
    m = A.shape[0]
    for _ in range(max_rounds):
        term_min = np.where(v > 0, v * lo[col], v * hi[col])
        term_max = np.where(v > 0, v * hi[col], v * lo[col])
        rest_min = sum_of_others(row, term_min, m, -np.inf)
        rest_max = sum_of_others(row, term_max, m, np.inf)
        # v x_j = -(sum of the others): x_j between -rest_max / v and -rest_min / v
        with np.errstate(invalid="ignore"):
            a1, a2 = -rest_max / v, -rest_min / v
        new_lo = np.full_like(lo, -np.inf)
        new_hi = np.full_like(hi, np.inf)
        np.maximum.at(new_lo, col, _ceil(np.minimum(a1, a2)))
        np.minimum.at(new_hi, col, _floor(np.maximum(a1, a2)))
        new_lo = np.maximum(lo, new_lo)
        new_hi = np.minimum(hi, new_hi)
        if np.any(new_lo > new_hi):
            raise InputError("audit_rounded: no additive integer table is consistent with "
                             "the published values, base and method")
        if np.array_equal(new_lo, lo) and np.array_equal(new_hi, hi):
            break
        lo, hi = new_lo, new_hi
    return lo, hi


def _ceil(x: np.ndarray) -> np.ndarray:
    """Integer ceiling with a relative tolerance on the outer side (a bound one wider than
    exact is still valid; one narrower would not be)."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(x), np.ceil(x - 1e-9 * np.maximum(1.0, np.abs(x))), x)


def _floor(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(x), np.floor(x + 1e-9 * np.maximum(1.0, np.abs(x))), x)
