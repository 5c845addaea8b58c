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
    weight = np.ones(S.shape[0])
    n_terms = float(np.count_nonzero(np.diff(S.indptr)))  # aggregates with a small cell
    weight[np.flatnonzero(is_agg) == _grand_total(table)] = max(1.0, n_terms)
    target_up = int(np.floor(xs.sum() / base + 0.5))
    lp = _deviation_program(S, xs, weight, base, target_up)
    res = solve(lp, time_limit=time_limit, mip_gap=mip_gap, threads=threads)
    if not res.has_solution:
        raise InputError(f"small-count rounding: the solver stopped without a solution "
                         f"({res.status}); give a longer time_limit")
    d = np.round(res.x[:n_small])
    out_inner[small_local] = base * d
    rounded = aggregate_from_inner(table, inner, out_inner, agg=agg)
    return rounded, "MILP", res.status == "optimal"


def _deviation_program(S: sp.csr_matrix, xs: np.ndarray, weight: np.ndarray, base: int,
                       target_up: int) -> LinearProgram:
    """The MILP: binary ``d`` (small cell up), ``sum d = target_up``, minimising
    ``sum_t weight_t |base k_t - s_t|`` with ``k_t = (S d)_t``, ``s_t = (S xs)_t``.

    Aggregates with the same small cells are one term (weights added); an aggregate with
    one small cell ``i`` costs ``x_i + (base - 2 x_i) d_i``, linear in ``d``. Every other
    aggregate has a deviation variable ``e_t`` above the convex hull of ``|base k - s_t|``
    over integer ``k``: the two lines ``+-(base k - s_t)`` and the chord between
    ``k = f_t = floor(s_t / base)`` and ``f_t + 1``, ``e_t >= r_t + (base - 2 r_t)(k - f_t)``
    (``r_t = s_t - base f_t``). The chord cuts off the relaxation's fractional ``k`` at no
    cost, so the LP bound is that of the aggregates taken one by one.
    """
    S, weight = _merge_duplicate_rows(S, weight)
    n_small = S.shape[1]
    sizes = np.diff(S.indptr)
    single = sizes == 1
    c = np.zeros(n_small)
    cell = S.indices[S.indptr[:-1][single]]
    np.add.at(c, cell, weight[single] * (base - 2.0 * xs[cell]))
    offset = float(weight[single] @ xs[cell])
    S, w = S[~single], weight[~single]
    s = S @ xs
    f = np.floor(s / base + TOL)
    r = s - base * f
    slope = base - 2.0 * r
    n_agg = S.shape[0]
    eye = sp.identity(n_agg, format="csr")
    A = sp.vstack([sp.hstack([base * S, -eye]),            # e >= base k - s
                   sp.hstack([base * S, eye]),             # e >= s - base k
                   sp.hstack([-sp.diags(slope) @ S, eye]),  # e >= the chord
                   sp.hstack([sp.csr_matrix(np.ones((1, n_small))),
                              sp.csr_matrix((1, n_agg))])]).tocsr()
    inf = np.full(n_agg, np.inf)
    return LinearProgram(
        c=np.concatenate([c, w]), A=A, offset=offset,
        row_lower=np.concatenate([-inf, s, r - slope * f, [target_up]]),
        row_upper=np.concatenate([s, inf, inf, [target_up]]),
        col_lower=np.zeros(n_small + n_agg),
        col_upper=np.concatenate([np.ones(n_small), inf]),
        integrality=np.concatenate([np.ones(n_small, bool), np.zeros(n_agg, bool)]))


def _merge_duplicate_rows(S: sp.csr_matrix, weight: np.ndarray):
    """The distinct non-empty rows of the 0/1 matrix ``S``, each with the sum of the
    weights of its copies."""
    S = S.tocsr()
    S.sort_indices()
    index: dict[bytes, int] = {}
    rows, merged = [], []
    for t in range(S.shape[0]):
        lo, hi = S.indptr[t], S.indptr[t + 1]
        if lo == hi:
            continue
        j = index.setdefault(S.indices[lo:hi].tobytes(), len(rows))
        if j == len(rows):
            rows.append(t)
            merged.append(0.0)
        merged[j] += weight[t]
    return S[rows], np.asarray(merged)


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
