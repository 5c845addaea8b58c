"""Gomory mixed-integer cuts from the root LP's simplex tableau (branch-and-cut only)."""
from __future__ import annotations

import highspy
import numpy as np
import scipy.sparse as sp


def gomory_cuts(highs, k: int, max_cuts: int, *, min_frac: float = 0.01,
                max_dynamism: float = 1e6) -> tuple[sp.csr_matrix, np.ndarray]:
    """Gomory mixed-integer cuts ``G z >= g`` from the current optimal basis of an LP
    over binary ``z`` (the first ``k`` columns) and rows ``lo <= a z`` (upper bound
    infinite).

    The tableau row of a basic fractional ``z_b`` reads ``z_b + sum_j abar_j z_j -
    sum_i binv_i r_i = 0`` over the nonbasic columns and row activities ``r_i = a_i z``
    (HiGHS: ``getReducedRow`` / ``getBasisInverseRow``).  In the nonbasic distances ``w``
    (``z_j - lo_j`` or ``hi_j - z_j`` for columns, integer; ``r_i - lo_i`` for rows,
    continuous) it is ``z_b + sum g_k w_k = z_b*``, and with ``f0 = frac(z_b*)`` every
    integer point meets ``sum_int min(f_k / f0, (1 - f_k) / (1 - f0)) w_k +
    sum_cont (g_k > 0 ? g_k / f0 : -g_k / (1 - f0)) w_k >= 1`` (``f_k = frac(g_k)``).
    Substituted back it is a row over ``z``; the LP point violates it by 1 (in ``w``),
    which is checked numerically, and the right-hand side is relaxed by 1e-6 relative.
    Valid for every binary ``z`` meeting the LP's rows and column bounds, so only the
    root's (global) bounds may be in the model.  Source rows are the basic columns with
    fractionality above ``min_frac`` (at most ``max_cuts``, nearest 0.5 first); cuts
    whose coefficient ratio exceeds ``max_dynamism`` are dropped as numerically unsafe.
    """
    lp = highs.getLp()
    m = lp.num_row_
    n = lp.num_col_
    if m == 0:
        return sp.csr_matrix((0, k)), np.zeros(0)
    am = lp.a_matrix_
    A = sp.csc_matrix((np.asarray(am.value_), np.asarray(am.index_), np.asarray(am.start_)),
                      shape=(m, n)).tocsr()
    row_lo = np.asarray(lp.row_lower_, float)
    col_lo = np.asarray(lp.col_lower_, float)
    col_hi = np.asarray(lp.col_upper_, float)
    sol = highs.getSolution()
    x = np.asarray(sol.col_value, float)
    basis = highs.getBasis()
    col_st = np.fromiter((int(v) for v in basis.col_status), np.int64, n)
    row_st = np.fromiter((int(v) for v in basis.row_status), np.int64, m)
    lower, basic, upper = (int(highspy.HighsBasisStatus.kLower),
                           int(highspy.HighsBasisStatus.kBasic),
                           int(highspy.HighsBasisStatus.kUpper))
    # nonbasic rows must sit at their (finite) lower bound, columns at a finite bound
    if np.any((row_st != basic) & ((row_st != lower) | ~np.isfinite(row_lo))):
        return sp.csr_matrix((0, k)), np.zeros(0)
    if np.any((col_st != basic) & (col_st != lower) & (col_st != upper)):
        return sp.csr_matrix((0, k)), np.zeros(0)
    _, basics = highs.getBasicVariables()
    basics = np.asarray(basics)
    pos = np.flatnonzero((basics >= 0) & (basics < k))
    frac = x[basics[pos]] - np.floor(x[basics[pos]])
    ok = (frac > min_frac) & (frac < 1 - min_frac)
    pos, frac = pos[ok], frac[ok]
    pos = pos[np.argsort(np.abs(frac - 0.5), kind="stable")][:max_cuts]
    at_up = col_st == upper
    nb_col = col_st != basic
    nb_row = row_st != basic
    rows_out, rhs_out = [], []
    for p_ in pos:
        b = int(basics[p_])
        _, abar = highs.getReducedRow(int(p_))
        _, binv = highs.getBasisInverseRow(int(p_))
        abar = np.asarray(abar, float)
        binv = np.asarray(binv, float)
        xb = x[b]
        f0 = xb - np.floor(xb)
        # integer distances (columns): g = abar (at lower) or -abar (at upper)
        g_col = np.where(at_up, -abar, abar)
        g_col[~nb_col] = 0.0
        f = g_col - np.floor(g_col)
        c_col = np.minimum(f / f0, (1 - f) / (1 - f0))
        c_col[np.abs(g_col) < 1e-12] = 0.0  # an exact zero stays zero
        c_col[~nb_col] = 0.0
        # continuous distances (rows at their lower bound): g = -binv
        g_row = np.where(nb_row, -binv, 0.0)
        c_row = np.where(g_row > 0, g_row / f0, -g_row / (1 - f0))
        c_row[np.abs(g_row) < 1e-12] = 0.0
        # back to z: w_j = z_j - lo_j or hi_j - z_j, t_i = a_i z - lo_i
        coef = np.where(at_up, -c_col, c_col) + A.T @ c_row
        rhs = 1.0 + float(np.where(at_up, -c_col * col_hi, c_col * col_lo).sum()) \
            + float(c_row @ row_lo)
        coef = coef[:k]
        big = np.abs(coef).max() if len(coef) else 0.0
        if not np.isfinite(big) or big <= 0 or not np.isfinite(rhs):
            continue
        # the point violates the cut by exactly 1 in w: anything else is numerical trouble
        if abs(float(coef @ x[:k]) - (rhs - 1.0)) > 1e-6 * max(1.0, big, abs(rhs)):
            continue
        tiny = np.abs(coef) < 1e-9 * big
        # dropping a tiny positive coefficient relaxes the right-hand side by it
        # (z <= 1); dropping a negative one only weakens the cut
        rhs -= float(np.clip(coef[tiny], 0.0, None).sum())
        coef[tiny] = 0.0
        nz = np.abs(coef[coef != 0])
        if len(nz) == 0 or nz.max() / nz.min() > max_dynamism:
            continue
        rhs -= 1e-6 * max(1.0, abs(rhs))
        rows_out.append(coef)
        rhs_out.append(rhs)
    if not rows_out:
        return sp.csr_matrix((0, k)), np.zeros(0)
    return sp.csr_matrix(np.vstack(rows_out)), np.asarray(rhs_out)
