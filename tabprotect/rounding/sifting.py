"""Sifting (column generation) for LPs with far more columns than rows."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram

__all__ = ["SiftedLPResult", "sifted_lp"]

_TOL = 1e-9


@dataclass
class SiftedLPResult:
    """Outcome of :func:`sifted_lp`.

    ``status`` is ``"optimal"`` (proven optimal for the *whole* LP: every column outside
    the final working set priced out), ``"infeasible"`` (elastic slacks stayed positive
    at a priced-out optimum with the largest penalty tried), ``"time_limit"`` or
    ``"error"``; ``x`` is the solution (None unless optimal); ``rounds`` pricing rounds;
    ``working_columns`` size of the final working set.
    """

    status: str
    x: np.ndarray | None
    objective: float | None
    rounds: int
    working_columns: int
    runtime: float


def sifted_lp(c: np.ndarray, A: sp.spmatrix, rhs: np.ndarray, lower: np.ndarray,
              upper: np.ndarray, start: np.ndarray, *, per_row: int = 24,
              max_add: int = 100_000, time_limit: float | None = None,
              threads: int | None = 1) -> SiftedLPResult:
    """``min c'x  s.t.  A x = rhs,  lower <= x <= upper`` by sifting (column generation).

    Meant for LPs with far more columns than rows (a 1000 x 1000 table has 10^6 cells
    but 2 002 relations).  Every column outside a *working set* is held at its value in
    ``start``, which must be one of its bounds; only the working set is passed to HiGHS
    (warm, persistent model) together with two elastic slack columns per row, so the
    restricted LP is always feasible.  After each solve the reduced costs
    ``c - A' y`` of *all* columns are priced in one sparse product: a held column whose
    reduced cost says that moving it off its bound would lower the objective joins the
    working set.  When no such column is left and the slacks are zero, the restricted
    optimum is optimal for the whole LP (the usual LP optimality conditions hold for
    every column), so the answer is exact, not a heuristic.

    The initial working set is, for every row, the ``per_row`` columns with the smallest
    ``|c|`` (the cheapest to move away from ``start`` when ``start`` is each column's
    individually best bound).

    Examples
    --------
    >>> A = sp.csr_matrix(np.array([[1.0, 1.0, 1.0]]))
    >>> r = sifted_lp(np.array([1.0, -1.0, 2.0]), A, np.array([1.0]), np.zeros(3),
    ...               np.ones(3), np.array([0.0, 1.0, 0.0]), per_row=1)
    >>> r.status, r.x.tolist()
    ('optimal', [0.0, 1.0, 0.0])
    """
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + time_limit
    A = sp.csr_matrix(A, dtype=float)
    m, n = A.shape
    c = np.asarray(c, dtype=float)
    lower = np.asarray(lower, dtype=float)
    upper = np.asarray(upper, dtype=float)
    start = np.asarray(start, dtype=float).copy()
    if not np.all((np.abs(start - lower) <= _TOL) | (np.abs(start - upper) <= _TOL)):
        raise ValueError("sifted_lp: every start value must be at one of its bounds")
    AT = A.T.tocsr()
    movable = upper - lower > _TOL
    in_w = _initial_working_set(A, c, rhs, lower, upper, start, movable, per_row)
    scale = float(np.abs(c).max()) if n else 1.0
    penalty = 1e3 * max(scale, 1.0)
    eye = sp.identity(m, format="csc")

    def held_rhs():
        return rhs - A @ np.where(in_w, 0.0, start)

    # model columns: slacks s+ (m) and s- (m) first, then the working columns in the
    # order they joined
    model_cols = np.flatnonzero(in_w)
    lp = LinearProgram(
        c=np.concatenate([np.full(2 * m, penalty), c[model_cols]]),
        A=sp.hstack([eye, -eye, A[:, model_cols]]).tocsr(),
        row_lower=held_rhs(), row_upper=held_rhs(),
        col_lower=np.concatenate([np.zeros(2 * m), lower[model_cols]]),
        col_upper=np.concatenate([np.full(2 * m, np.inf), upper[model_cols]]))
    model = HighsModel(lp, threads=threads)
    rounds = 0
    while True:
        rounds += 1
        remaining = None if deadline is None else max(0.5, deadline - time.perf_counter())
        res = model.solve(time_limit=remaining)
        if res.status != "optimal" or res.duals is None:
            st = "time_limit" if res.status.startswith("time_limit") else "error"
            return SiftedLPResult(st, None, None, rounds, len(model_cols),
                                  time.perf_counter() - t0)
        reduced = c - AT @ res.duals
        tol = 1e-7 * max(scale, 1.0)
        enter = ~in_w & movable & (
            ((np.abs(start - lower) <= _TOL) & (reduced < -tol)) |
            ((np.abs(start - upper) <= _TOL) & (reduced > tol)))
        if not enter.any():
            if res.x[:2 * m].max(initial=0.0) > 1e-7:
                # slacks still in use: the LP is infeasible or the penalty too small
                if penalty > 1e9 * max(scale, 1.0):
                    return SiftedLPResult("infeasible", None, None, rounds,
                                          len(model_cols), time.perf_counter() - t0)
                penalty *= 1e3
                model.set_objective(np.concatenate([np.full(2 * m, penalty),
                                                    c[model_cols]]))
                continue
            x = start.copy()
            x[model_cols] = res.x[2 * m:]
            return SiftedLPResult("optimal", x, float(c @ x), rounds, len(model_cols),
                                  time.perf_counter() - t0)
        if deadline is not None and time.perf_counter() > deadline:
            return SiftedLPResult("time_limit", None, None, rounds, len(model_cols),
                                  time.perf_counter() - t0)
        new = np.flatnonzero(enter)
        if len(new) > max_add:
            new = new[np.argsort(-np.abs(reduced[new]), kind="stable")[:max_add]]
        in_w[new] = True
        model.add_cols(c[new], lower[new], upper[new], A_cols=A[:, new].tocsc())
        model_cols = np.concatenate([model_cols, new])
        bounds = held_rhs()
        model.set_row_bounds(np.arange(m), bounds, bounds)


def _initial_working_set(A: sp.csr_matrix, c, rhs, lower, upper, start, movable,
                         per_row: int) -> np.ndarray:
    """Per row: the columns of smallest ``|c|`` whose move away from ``start`` brings the
    row toward its right-hand side (as many as twice the row's imbalance, plus
    ``per_row``), and the ``per_row`` cheapest others."""
    m, n = A.shape
    coo = A.tocoo()
    keep = movable[coo.col]
    rows, cols, vals = coo.row[keep], coo.col[keep], coo.data[keep]
    imbalance = rhs - A @ start
    direction = np.where(np.abs(start - lower) <= _TOL, 1.0, -1.0)
    reach = vals * direction[cols] * (upper - lower)[cols]
    helpful = reach * imbalance[rows] > 0
    step = np.maximum(np.abs(reach), _TOL)
    need = np.ceil(np.abs(imbalance) / max(float(np.median(step)) if len(step) else 1.0,
                                           _TOL))
    in_w = np.zeros(n, dtype=bool)
    for mask, quota in ((helpful, per_row + 2 * need), (~helpful, np.full(m, per_row))):
        r, cl = rows[mask], cols[mask]
        order = np.lexsort((np.abs(c[cl]), r))
        r, cl = r[order], cl[order]
        rank = np.arange(len(r)) - np.searchsorted(r, np.arange(m))[r]
        in_w[cl[rank < quota[r]]] = True
    return in_w
