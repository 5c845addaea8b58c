"""Cells that hold the same single contribution.

A cell with one contributor (``freq == 1``) holds that contributor's record.  When a
total has one contributor, exactly one of the cells it sums has that contributor too
and the others have none: the total and that cell hold the *same* record, so their
single contributor is one person, who knows both.  :func:`same_record` groups the
single-contributor cells into such classes along the relations (transitively: a leaf,
its subtotal and its total can all hold one record).

The single-contributor attack uses the classes: the contributor of a class knows every
cell of it, and a cell of the class is that contributor's own record, never a target of
their attack (a primary is judged against attackers who are not among its
contributors).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from tabprotect.model.relations import component_roots
from tabprotect.model.table import Table


def same_record(table: Table, zeros_known: np.ndarray | None = None) -> np.ndarray:
    """Per cell, the class of the single record it holds: cells with ``freq == 1`` linked
    by a relation (as its total and one of the cells it sums) whose other cells all have
    ``freq == 0`` share a class (labelled by its
    smallest cell index); -1 for every other cell.

    ``zeros_known``: link only where those other cells are all in this mask (e.g. the
    cells published by force: then the two cells differ by published cells only, and are
    one vector modulo the published span)."""
    n = table.n_cells
    label = np.full(n, -1, np.int64)
    freq = np.asarray(table.freq, dtype=float)
    single = freq == 1
    if not single.any() or table.relations.shape[0] == 0:
        label[single] = np.flatnonzero(single)
        return label
    A = sp.csr_matrix(table.relations)
    rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    cols = A.indices
    f = freq[cols]
    ok = np.isfinite(f) & ((f == 0) | (f == 1))
    if zeros_known is not None:
        ok &= (f == 1) | np.asarray(zeros_known, bool)[cols]
    all_ok = np.bincount(rows, weights=~ok, minlength=A.shape[0]) == 0
    ones = np.bincount(rows, weights=f == 1, minlength=A.shape[0])
    pair_rows = np.flatnonzero(all_ok & (ones == 2))
    take = np.isin(rows, pair_rows) & (f == 1)
    pairs = cols[take].reshape(-1, 2)   # two single-contributor cells per such row
    signs = np.sign(A.data[take]).reshape(-1, 2)
    pairs = pairs[signs[:, 0] != signs[:, 1]]   # a total and one of the cells it sums
    root = component_roots(pairs[:, 0], pairs[:, 1], n)   # each class's smallest cell
    label[single] = root[single]
    return label
