"""A protection LP over a large component solved on a few of its cells, priced out.

The attack step's widened LP (the pattern and the published cells of a primary's
component) has thousands of cells, most of them published and dear, and its optimum
moves a few of them near the primary.  :func:`priced_solve` solves the LP on a starting
set of cells only (every other cell at its value: a restriction of the same LP), then
prices the cells left out with the restricted optimum's row duals: a column whose
reduced cost ``c_j - a_j' y`` is negative could lower the objective, and its cell joins
the set for the next round.  When no column prices out, the restricted optimum is an
optimum of the whole LP (the duals, zero on the rows the set does not meet, are then
feasible for it): the same objective as one solve over every cell, in a small LP.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram


def priced_solve(weights: np.ndarray, split: sp.csc_matrix, lo: np.ndarray,
                 hi: np.ndarray, start: np.ndarray, seconds: float,
                 rounds: int = 6, tolerance: float = 1e-9,
                 penalty: float = 1e4) -> np.ndarray | None:
    """An optimum of ``min weights @ x, split @ x = 0, lo <= x <= hi`` (``x``: a cell's
    moves up, then down; ``split``: its columns in that order; one column, the
    primary's move, with a positive lower bound) found on the cells ``start`` (boolean
    per cell) and those that price out, at most ``rounds`` LPs; the full ``x``, or None
    when the rounds run out or the last optimum still needs the stand-in (the caller
    then solves the whole LP).  ``tolerance``: reduced costs above ``-tolerance`` times
    the largest weight count as not negative.

    The restricted LP has a stand-in for the cells left out: a column that undoes the
    primary's move in its relations, at ``penalty`` times the largest weight per unit,
    so that it always has an optimum whose duals price the cells out (big M).  The
    cells that join come in as new columns (and their new relations as rows) of the
    same model, re-solved from its last basis."""
    n = len(start)
    movable = hi > 0
    top = float(np.abs(weights).max(initial=1.0))
    floor = -tolerance * top
    (j,) = np.flatnonzero(lo > 0)
    cols = np.flatnonzero(np.concatenate([start, start]))
    sub = sp.hstack([split[:, cols], -split[:, [j]]]).tocsr()
    rows = np.flatnonzero(np.diff(sub.indptr) > 0)
    model = HighsModel(LinearProgram(
        c=np.append(weights[cols], penalty * top), A=sub[rows],
        row_lower=np.zeros(len(rows)), row_upper=np.zeros(len(rows)),
        col_lower=np.append(lo[cols], 0.0), col_upper=np.append(hi[cols], lo[j]),
        sense="min"), presolve="off")
    at = np.full(split.shape[0], -1)       # per relation its row in the model
    at[rows] = np.arange(len(rows))
    order = np.append(cols, -1)            # per model column its column (-1: stand-in)
    inside = np.zeros(2 * n, bool)
    inside[cols] = True
    for _ in range(rounds):
        res = model.solve(time_limit=seconds)
        if res.status != "optimal" or res.duals is None:
            return None
        y = np.zeros(split.shape[0])
        y[at >= 0] = res.duals[at[at >= 0]]
        enter = movable & (weights - split.T @ y < floor) & ~inside
        if not enter.any():
            if res.x[order < 0][0] > 1e-9 * lo[j]:
                return None      # no move of these cells without the stand-in
            x = np.zeros(2 * n)
            x[order[order >= 0]] = res.x[order >= 0]
            return x
        cells = np.unique(np.flatnonzero(enter) % n)
        new = np.concatenate([cells, cells + n])
        new = new[~inside[new]]
        _add_columns(model, split[:, new], at, weights[new], lo[new], hi[new])
        inside[new] = True
        order = np.append(order, new)
    return None


def _add_columns(model: HighsModel, cols: sp.csc_matrix, at: np.ndarray, weights,
                 lo, hi) -> None:
    """The columns ``cols`` (over every relation) into ``model``, the relations they
    bring in first as new rows (empty over the model's columns: a relation holding one
    of them would be there already); ``at`` is updated."""
    touched = np.unique(cols.indices)
    fresh = touched[at[touched] < 0]
    if len(fresh):
        at[fresh] = model.add_rows(sp.csr_matrix((len(fresh), model.n_cols)),
                                   np.zeros(len(fresh)), np.zeros(len(fresh)))
    mapped = sp.csc_matrix((cols.data, at[cols.indices], cols.indptr),
                           shape=(model.n_rows, cols.shape[1]))
    model.add_cols(weights, lo, hi, mapped)
