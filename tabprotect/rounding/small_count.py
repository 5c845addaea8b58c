"""Small-count rounding: inner counts ``0 < x < threshold`` to 0 or ``base`` (a MILP picks
which go up); every aggregate is the sum of its rounded inner cells."""
from __future__ import annotations

import dataclasses
import time

import numpy as np
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram, solve
from tabprotect.errors import InputError
from tabprotect.model.table import Table
from tabprotect.rounding.bound_gap import least_value_above, relative_gap
from tabprotect.rounding.result import TOL
from tabprotect.rounding.small_count_search import DeviationTerms, perturbed_swaps, \
    relaxed_choice, swap_search

__all__ = ["small_count_round", "aggregation_matrix", "aggregate_from_inner"]


def small_count_round(table: Table, base: int, threshold: int, *,
                      time_limit: float | None = None, mip_gap: float | None = None,
                      threads: int | None = 1, search_seconds: float | None = None,
                      ipm_min_columns: int | None = None, swap_kick: int = 8,
                      swap_stall: int = 50) -> tuple[np.ndarray, str, bool]:
    """Round inner counts ``0 < x < threshold`` to 0 or ``base``; aggregates follow.

    The number of small cells rounded up is fixed to ``round(sum of small counts / base)``
    (so the grand total stays within ``base/2`` of the sum's share), and the MILP picks
    which ones minimising the sum over aggregates of ``|published - true|`` (the grand
    total weighted by the number of aggregates, so it is kept closest).

    ``time_limit`` is the wall-clock budget of the whole choice; without it branch and
    bound stops after ``search_seconds`` (None: when it proves the optimum). A choice not
    proven optimal has its gap to the relaxation's bound in the solver path. A table of
    three or more dimensions whose program has ``ipm_min_columns`` columns or more has its
    relaxation solved by interior point (None: always simplex). ``swap_kick`` and
    ``swap_stall`` tune the perturbed swaps before branch and bound
    (:func:`~tabprotect.rounding.small_count_search.perturbed_swaps`).

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
    terms = _deviation_terms(S, xs, weight, base)
    d, path, optimal = _choose(terms, target_up, time_limit=time_limit, mip_gap=mip_gap,
                               threads=threads, search_seconds=search_seconds,
                               ipm_min_columns=ipm_min_columns
                               if len(table.dimensions) >= 3 else None,
                               kick=swap_kick, stall=swap_stall)
    out_inner[small_local] = base * d
    rounded = aggregate_from_inner(table, inner, out_inner, agg=agg)
    return rounded, path, optimal


def _choose(terms: DeviationTerms, target_up: int, *, time_limit, mip_gap, threads,
            search_seconds: float | None = None, ipm_min_columns: int | None = None,
            kick: int = 8, stall: int = 50) -> tuple[np.ndarray, str, bool]:
    """Which small cells go up: the relaxation when its vertex is integral, else the
    swap search's choice when it meets the relaxation's bound (or is within ``mip_gap``
    of it), else the perturbed swaps' choice from it (on at most a third of the budget),
    else the MILP started from that choice (``time_limit``, else ``search_seconds``,
    wall-clock seconds: the budget)."""
    start = time.perf_counter()
    lp = _deviation_program(terms, target_up)
    n = len(terms.c)
    # interior point with crossover (a vertex) is several times faster than simplex on
    # large 3-D programs; elsewhere simplex's vertex starts the swaps as well or better
    ipm = ipm_min_columns is not None and lp.n_cols >= ipm_min_columns
    relaxed = solve(dataclasses.replace(lp, integrality=None), time_limit=time_limit,
                    threads=threads, **({"solver": "ipm"} if ipm else {}))
    if not relaxed.has_solution:
        _no_solution(relaxed.status)
    d = relaxed_choice(relaxed.x[:n], target_up)
    if np.abs(relaxed.x[:n] - d).max(initial=0.0) <= 1e-6:
        return d, "LP relaxation (integral vertex)", True
    d = swap_search(terms, d)
    bound = relaxed.objective
    budget = time_limit if time_limit is not None else search_seconds
    end = None if budget is None else start + budget
    least = _least_value_above(terms, bound)
    steps = "LP relaxation, swaps"
    for more in (False, True):
        if more:
            # perturbed swaps on at most a third of what is left, branch and bound the rest
            third = None if end is None else (end + 2 * time.perf_counter()) / 3
            d = perturbed_swaps(terms, d, kick=kick, stall=stall, target=least, end=third)
            steps += ", perturbed swaps"
        value = terms.value(d)
        if value <= least:
            return d, f"{steps} (meets the LP bound)", True
        if mip_gap is not None and value - bound <= mip_gap * abs(value):
            return d, f"{steps} (within mip_gap of the LP bound)", False
    return _branch_and_bound(terms, lp, d, bound, end=end, mip_gap=mip_gap, threads=threads)


def _branch_and_bound(terms: DeviationTerms, lp, d: np.ndarray, bound: float, *, end,
                      mip_gap, threads) -> tuple[np.ndarray, str, bool]:
    """The MILP started from the choice ``d`` until ``end`` (a ``time.perf_counter()``
    time; None: until it proves the optimum); the gap is taken to the larger of the
    relaxation's bound and branch and bound's own."""
    n = len(terms.c)
    remaining = None if end is None else max(1.0, end - time.perf_counter())
    model = HighsModel(lp, threads=threads, time_limit=remaining, mip_gap=mip_gap)
    model.set_start(np.concatenate([d, np.abs(terms.base * (terms.S @ d) - terms.s)]))
    res = model.solve(duals=False)
    if res.status == "optimal":
        return np.round(res.x[:n]), "MILP", True
    value = terms.value(d)
    if res.has_solution and terms.value(np.round(res.x[:n])) <= value:
        d = np.round(res.x[:n])
        value = terms.value(d)
    if res.has_solution and res.mip_gap is not None:
        # branch and bound's own bound (cuts, branching) is at least the relaxation's
        bound = max(bound, res.objective - res.mip_gap * abs(res.objective))
    return d, f"MILP (within {100 * relative_gap(value, bound):.2f} % of the bound)", False


def _least_value_above(terms: DeviationTerms, bound: float) -> float:
    return least_value_above(bound, np.concatenate([terms.s, terms.w, terms.c,
                                                    [terms.offset]]))


def _no_solution(status: str):
    raise InputError(f"small-count rounding: the solver stopped without a solution "
                     f"({status}); give a longer time_limit")


def _deviation_terms(S: sp.csr_matrix, xs: np.ndarray, weight: np.ndarray,
                     base: int) -> DeviationTerms:
    """``sum_t weight_t |base (S d)_t - (S xs)_t|`` as :class:`DeviationTerms`: aggregates
    with the same small cells one term (weights added); an aggregate with one small cell
    ``i`` costs ``x_i + (base - 2 x_i) d_i``, linear in ``d``."""
    S, weight = _merge_duplicate_rows(S, weight)
    single = np.diff(S.indptr) == 1
    c = np.zeros(S.shape[1])
    cell = S.indices[S.indptr[:-1][single]]
    np.add.at(c, cell, weight[single] * (base - 2.0 * xs[cell]))
    offset = float(weight[single] @ xs[cell])
    S = S[~single]
    return DeviationTerms(S, S @ xs, weight[~single], c, offset, base)


def _deviation_program(terms: DeviationTerms, target_up: int) -> LinearProgram:
    """The MILP: binary ``d`` (small cell up), ``sum d = target_up``, minimising ``terms``.

    Every aggregate of ``terms.S`` has a deviation variable ``e_t`` above the convex hull
    of ``|base k - s_t|`` over integer ``k``: the two lines ``+-(base k - s_t)`` and the
    chord between ``k = f_t = floor(s_t / base)`` and ``f_t + 1``,
    ``e_t >= r_t + (base - 2 r_t)(k - f_t)`` (``r_t = s_t - base f_t``). The chord cuts
    off the relaxation's fractional ``k`` at no cost, so the LP bound is that of the
    aggregates taken one by one.
    """
    S, s, base = terms.S, terms.s, terms.base
    n_small, n_agg = S.shape[1], S.shape[0]
    f = np.floor(s / base + TOL)
    r = s - base * f
    slope = base - 2.0 * r
    eye = sp.identity(n_agg, format="csr")
    A = sp.vstack([sp.hstack([base * S, -eye]),            # e >= base k - s
                   sp.hstack([base * S, eye]),             # e >= s - base k
                   sp.hstack([-sp.diags(slope) @ S, eye]),  # e >= the chord
                   sp.hstack([sp.csr_matrix(np.ones((1, n_small))),
                              sp.csr_matrix((1, n_agg))])]).tocsr()
    inf = np.full(n_agg, np.inf)
    return LinearProgram(
        c=np.concatenate([terms.c, terms.w]), A=A, offset=terms.offset,
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
