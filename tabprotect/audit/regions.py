"""Regions of a component and the LPs over them: neighbourhoods of a variable, blocks
grown around one, and the relations of the small LP over a region.

A region's LP is ``"relaxed"`` (only the relations whose variables all lie inside: the
interval can only grow, so a shortfall there is a shortfall of the whole system) or
``"restricted"`` (the variables outside stay at their true values: every solution is a
feasible table of the whole system, a witness).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from tabprotect.audit.system import ReducedSystem
from tabprotect.csr import row_indices, row_positions


def neighbourhood(system: ReducedSystem, j: int, hops: int) -> np.ndarray:
    """Variables within ``hops`` relation steps of variable ``j`` (sorted)."""
    A = system.A
    cells = np.array([j])
    for _ in range(hops):
        cells = np.unique(row_indices(A.indptr, A.indices, system.rows_of(cells)))
    return cells


def grow(system: ReducedSystem, seed: int, size: int, core: int | None = None):
    """About ``size`` variables around variable ``seed`` (sorted), for a block LP.

    Grown relation step by relation step; when a step would overshoot, the variables
    tied to the region by the most relations come first: they close the cycles
    (rectangles, cubes) along which a cell can move, where plain breadth-first order
    would add long thin lines through the seed. With ``core``, also returns the first
    ``core`` variables added (sorted): the block's middle, where a cell's cycles are
    most likely inside the block."""
    work = system.scratch()
    ties, pos, row_seen = work["ties"], work["pos"], work["rows"]
    A = system.A
    members = [np.array([seed], dtype=np.int64)]
    pos[seed] = 0                     # pos >= 0 marks "inside" while growing
    seen_rows: list[np.ndarray] = []
    tied: list[np.ndarray] = []
    new = members[0]
    count = 1
    try:
        while count < size and len(new):
            rows = system.rows_of(new)
            rows = rows[~row_seen[rows]]
            row_seen[rows] = True
            seen_rows.append(rows)
            if len(rows):
                cells, n_ties = np.unique(row_indices(A.indptr, A.indices, rows),
                                          return_counts=True)
                ties[cells] += n_ties
                tied.append(cells)
            frontier = np.unique(np.concatenate(tied)) if tied else new[:0]
            cand = frontier[pos[frontier] < 0]
            room = size - count
            if len(cand) > room:
                # stable: equal ties keep index order (a deterministic audit)
                cand = np.sort(cand[np.argsort(-ties[cand], kind="stable")[:room]])
            pos[cand] = 0
            members.append(cand)
            count += len(cand)
            new = cand
    finally:
        order = np.concatenate(members)
        block = np.unique(order)
        pos[block] = -1
        for cells in tied:
            ties[cells] = 0
        for rows in seen_rows:
            row_seen[rows] = False
    if core is None:
        return block
    return block, np.sort(order[:core])


def region_program(system: ReducedSystem, cells, kind, fixed, reach=None):
    """``(A, row_lower, row_upper, lb, ub)`` of the LP over the sorted ``cells``
    (``kind``: ``"relaxed"`` or ``"restricted"``, see the module docstring); with
    ``reach``, infinite bounds are capped that far from the true value (aggregate
    objectives must not be unbounded)."""
    pos = system.scratch()["pos"]
    rows = system.rows_of(cells)
    A = system.A
    lengths = A.indptr[rows + 1] - A.indptr[rows]
    at = row_positions(A.indptr, rows)
    col = A.indices[at]
    coef = A.data[at]
    row_of = np.repeat(np.arange(len(rows)), lengths)
    pos[cells] = np.arange(len(cells))
    try:
        local = pos[col]
    finally:
        pos[cells] = -1
    inside = local >= 0
    tol = system.row_tol[rows] if system.relaxed else np.zeros(len(rows))
    rhs = system.rhs[rows].astype(float)
    if kind == "relaxed":
        # only relations with every variable inside
        outside_rows = np.zeros(len(rows), dtype=bool)
        outside_rows[row_of[~inside]] = True
        keep_row = ~outside_rows
    else:
        # the variables outside stay at their true values
        rhs -= np.bincount(row_of[~inside], weights=coef[~inside] * system.value[
            col[~inside]], minlength=len(rows))
        keep_row = np.ones(len(rows), dtype=bool)
    new_row = np.cumsum(keep_row) - 1
    sel = inside & keep_row[row_of]
    sub = sp.csr_matrix((coef[sel], (new_row[row_of[sel]], local[sel])),
                        shape=(int(keep_row.sum()), len(cells)))
    rhs, tol = rhs[keep_row], tol[keep_row]
    lb, ub = system.lb[cells].copy(), system.ub[cells].copy()
    if fixed is not None:
        at = np.minimum(np.searchsorted(cells, fixed.index), len(cells) - 1)
        inside_known = cells[at] == fixed.index
        at = at[inside_known]
        lb[at] = np.maximum(lb[at], fixed.lower[inside_known])
        ub[at] = np.minimum(ub[at], fixed.upper[inside_known])
    if reach is not None:
        lb = np.maximum(lb, system.value[cells] - reach)
        ub = np.minimum(ub, system.value[cells] + reach)
    return sub, rhs - tol, rhs + tol, lb, ub
