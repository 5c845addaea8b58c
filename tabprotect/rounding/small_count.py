"""Small-count rounding: inner counts ``0 < x < threshold`` to 0 or ``base`` (a MILP picks
which go up); every aggregate is the sum of its rounded inner cells."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from solvers import LinearProgram, solve
from tabprotect.errors import InputError
from tabprotect.model.table import Table
from tabprotect.rounding.result import TOL

__all__ = ["small_count_round", "aggregation_matrix", "aggregate_from_inner"]


def small_count_round(table: Table, base: int, threshold: int, *,
                      time_limit: float | None = None, mip_gap: float | None = None,
                      threads: int | None = 1) -> tuple[np.ndarray, str, bool]:
    """Round inner counts ``0 < x < threshold`` to 0 or ``base``; aggregates follow.

    The number of small cells rounded up is fixed to ``round(sum of small counts / base)``
    (so the grand total stays within ``base/2`` of the sum's share), and the MILP picks
    which ones minimising the sum over aggregates of ``|published - true|`` (the grand
    total weighted by the number of aggregates, so it is kept closest).

    Returns the rounded values of every cell, the solver path and whether optimal.
    """
    x = table.value.astype(float)
    inner = table.is_inner
    small = inner & (x > TOL) & (x < threshold - TOL)
    out_inner = x[inner].copy()
    small_local = small[inner]
    n_small = int(small_local.sum())
    if n_small == 0:
        return x.copy(), "nothing to round", True
    agg = aggregation_matrix(table, inner)  # cells x inner
    is_agg = ~inner
    S = agg[is_agg][:, np.flatnonzero(small_local)].tocsr()  # aggregates x small cells
    xs = out_inner[small_local]
    # deviation of aggregate t: b * sum_{i in t} d_i - sum_{i in t} x_i
    shift = S @ xs
    keep = np.diff(S.indptr) > 0
    S, shift = S[keep], shift[keep]
    n_agg = S.shape[0]
    target_up = int(np.floor(xs.sum() / base + 0.5))
    # variables: d (n_small, binary), e (n_agg, >= |b S d - shift|)
    agg_weight = np.ones(n_agg)
    totals = np.flatnonzero(is_agg)[keep]
    agg_weight[totals == _grand_total(table)] = max(1.0, float(n_agg))
    I = sp.identity(n_agg, format="csr")
    upper_rows = sp.hstack([base * S, -I])   # b S d - e <= shift
    lower_rows = sp.hstack([base * S, I])    # b S d + e >= shift
    count_row = sp.hstack([sp.csr_matrix(np.ones((1, n_small))), sp.csr_matrix((1, n_agg))])
    A = sp.vstack([upper_rows, lower_rows, count_row]).tocsr()
    lo = np.concatenate([np.full(n_agg, -np.inf), shift, [target_up]])
    hi = np.concatenate([shift, np.full(n_agg, np.inf), [target_up]])
    c = np.concatenate([np.zeros(n_small), agg_weight])
    lp = LinearProgram(c=c, A=A, row_lower=lo, row_upper=hi,
                       col_lower=np.zeros(n_small + n_agg),
                       col_upper=np.concatenate([np.ones(n_small), np.full(n_agg, np.inf)]),
                       integrality=np.concatenate([np.ones(n_small, bool), np.zeros(n_agg, bool)]))
    res = solve(lp, time_limit=time_limit, mip_gap=mip_gap, threads=threads)
    if not res.has_solution:
        raise InputError(f"small-count rounding: the solver stopped without a solution "
                         f"({res.status}); give a longer time_limit")
    d = np.round(res.x[:n_small])
    out_inner[small_local] = base * d
    rounded = aggregate_from_inner(table, inner, out_inner, agg=agg)
    return rounded, "MILP", res.status == "optimal"


def _grand_total(table: Table) -> int:
    if table.dimensions:
        return 0  # every hierarchy's root is code 0: cell 0 is the grand total
    return -1


def aggregation_matrix(table: Table, inner: np.ndarray) -> sp.csr_matrix:
    """cells x inner-cells 0/1 matrix: which inner cells make up each cell (the table's
    model matrix; its columns, the leaf cells in cell order, are the inner cells)."""
    if not table.dimensions:
        # general table: solve the relations top-down is not defined in general
        raise InputError("small-count rounding and margins_from_interior need a product "
                         "table (dimensions with hierarchies)")
    return table.model_matrix.sparse()


def aggregate_from_inner(table: Table, inner: np.ndarray, inner_values: np.ndarray,
                          agg: sp.csr_matrix | None = None) -> np.ndarray:
    if agg is None:
        agg = aggregation_matrix(table, inner)
    return np.asarray(agg @ inner_values, dtype=float)
