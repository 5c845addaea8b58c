"""Linear relations of a table: a sparse matrix ``A`` with ``A @ x = 0`` for the true table.

Each row is one relation ``total - sum(parts) = 0``: coefficient +1 on the total and -1 on
each part.  ``relation_total[r]`` is the column of relation ``r``'s total cell.

A product table's relations are built as CSR arrays (:class:`RelationArrays`) in plain
numpy; their scipy matrix is made when a caller first asks for it, so that a run that
never calls scipy (a job of rules alone) does not import scipy.sparse (some 0.1 s of CPU:
scipy's array-API layer loads most of numpy's optional submodules).
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Sequence

import numpy as np

from tabprotect.model.hierarchy import Hierarchy

if TYPE_CHECKING:
    import scipy.sparse as sp

#: the largest index a 32-bit CSR index array holds (scipy's choice of index type)
INT32_MAX = np.iinfo(np.int32).max


class RelationArrays:
    """A relation matrix as its CSR arrays -- ``data``, ``indices`` (sorted within each
    row), ``indptr`` -- and ``shape``; :meth:`matrix` is its scipy ``csr_matrix``, made
    on the first call and then kept.  ``shared`` arrays (kept for a structure, see
    :func:`product_relation_arrays`) are copied into the matrix, which its callers may
    change in place.

    Examples
    --------
    >>> R = RelationArrays(np.array([1.0, -1.0]), np.array([0, 1]), np.array([0, 2]),
    ...                    (1, 2))
    >>> R.shape, R.matrix().toarray().tolist()
    ((1, 2), [[1.0, -1.0]])
    """

    __slots__ = ("data", "indices", "indptr", "shape", "shared", "_matrix")

    def __init__(self, data: np.ndarray, indices: np.ndarray, indptr: np.ndarray,
                 shape: tuple[int, int], shared: bool = False) -> None:
        self.data, self.indices, self.indptr = data, indices, indptr
        self.shape = (int(shape[0]), int(shape[1]))
        self.shared = shared
        self._matrix = None

    def matrix(self) -> "sp.csr_matrix":
        """The scipy matrix of the arrays (one per object: every caller gets the same)."""
        if self._matrix is None:
            import scipy.sparse as sp
            arrays = (self.data, self.indices, self.indptr)
            if self.shared:
                arrays = tuple(a.copy() for a in arrays)
            self._matrix = sp.csr_matrix(arrays, shape=self.shape)
        return self._matrix


#: the relations of product tables of at most this many cells are kept by the shape and
#: parent-children edges of their hierarchies (a method's sub-tables repeat a few
#: structures dozens of times; a look-up and a copy cost a fifth of a construction)
KEPT_CELLS = 10_000


def product_relations(hierarchies: Sequence[Hierarchy]) -> tuple[sp.csr_matrix, np.ndarray]:
    """Relations of the cartesian-product table of ``hierarchies`` (C order of cells):
    the scipy matrix of :func:`product_relation_arrays`.

    For every dimension, every non-leaf code and every combination of the other
    dimensions' codes: ``cell(parent, others) - sum(cell(child, others)) = 0``.

    Returns
    -------
    A : csr_matrix, shape (relations, cells)
    relation_total : int64 array, the total cell of each relation

    Examples
    --------
    >>> h = Hierarchy.flat(["a", "b"], total="T")
    >>> A, tot = product_relations([h])
    >>> A.toarray()
    array([[ 1., -1., -1.]])
    """
    R, totals = product_relation_arrays(hierarchies)
    return R.matrix(), totals


def product_relation_arrays(hierarchies: Sequence[Hierarchy]
                            ) -> tuple[RelationArrays, np.ndarray]:
    """:func:`product_relations` as :class:`RelationArrays` (no scipy until its matrix is
    asked for).  A small table's arrays are kept for its structure and shared: its
    matrix, when made, is a copy.

    Examples
    --------
    >>> h = Hierarchy.flat(["a", "b"], total="T")
    >>> R, tot = product_relation_arrays([h, h])
    >>> R.shape, tot.tolist()
    ((6, 9), [0, 1, 2, 0, 3, 6])
    """
    structure = tuple((len(h), tuple((p, tuple(ch)) for p, ch in h.edges()))
                      for h in hierarchies)
    n = int(np.prod([size for size, _ in structure])) if structure else 1
    if n > KEPT_CELLS:
        return _relations(structure)
    R, totals = _kept_relations(structure)
    return RelationArrays(R.data, R.indices, R.indptr, R.shape, shared=True), totals.copy()


@functools.lru_cache(maxsize=64)
def _kept_relations(structure: tuple) -> tuple[RelationArrays, np.ndarray]:
    """:func:`_relations` of a small table's structure, kept (callers share the arrays
    and get a copy of the totals)."""
    return _relations(structure)


def _relations(structure: tuple) -> tuple[RelationArrays, np.ndarray]:
    """:func:`product_relations` of hierarchies given as (length, ((parent, children),
    ...)) per dimension.

    The CSR arrays come out in order, with no sort of the entries: rows run dimension by
    dimension, relation by relation, and over the combinations of the other dimensions'
    codes; within a row the cells are in the order of their codes in its dimension (a
    cell's index grows with its code when the other codes are fixed)."""
    shape = tuple(size for size, _ in structure)
    n = int(np.prod(shape)) if shape else 1
    cell_ids = np.arange(n, dtype=np.int64).reshape(shape)
    cols_parts, data_parts, lengths, totals = [], [], [], []
    for d, (_, edges) in enumerate(structure):
        if not edges:
            continue
        # ids[j] = the cells with code j in dimension d, one per combination of the others
        ids = np.moveaxis(cell_ids, d, 0).reshape(shape[d], -1)
        n_other = ids.shape[1]
        for p, children in edges:
            codes = np.asarray((p, *children), dtype=np.int64)
            order = np.argsort(codes)
            coef = np.where(codes[order] == p, 1.0, -1.0)
            # one row per combination of the other codes: its cells, ascending
            cols_parts.append(ids[codes[order]].T.ravel())
            data_parts.append(np.tile(coef, n_other))
            lengths.append(np.full(n_other, len(codes), dtype=np.int64))
            totals.append(ids[p])
    if not lengths:
        return (RelationArrays(np.zeros(0), np.zeros(0, dtype=np.int32),
                               np.zeros(1, dtype=np.int32), (0, n)),
                np.zeros(0, dtype=np.int64))
    lengths = np.concatenate(lengths)
    cols = np.concatenate(cols_parts)
    m = len(lengths)
    # 32-bit indices when they fit (scipy's choice for the same matrix)
    index = np.int32 if max(len(cols), m, n) <= INT32_MAX else np.int64
    indptr = np.zeros(m + 1, dtype=index)
    np.cumsum(lengths, out=indptr[1:])
    return (RelationArrays(np.concatenate(data_parts), cols.astype(index), indptr, (m, n)),
            np.concatenate(totals))


def relations_from_triplets(rel: np.ndarray, cell: np.ndarray, coef: np.ndarray,
                            n_cells: int, total_sign: float = 1.0
                            ) -> tuple[sp.csr_matrix, np.ndarray]:
    """Relations given as ``(rel, cell, coef)`` triplets (the CSV/JJ form).

    The total of each relation is its one cell whose coefficient has the sign
    ``total_sign`` (+1 in the model's ``total - parts`` form, -1 in files written as
    ``-total + parts``); failing that, the one cell of the other sign; -1 when ambiguous.
    Rows are renumbered 0..m-1 in the sorted order of ``rel``.
    """
    import scipy.sparse as sp
    rel = np.asarray(rel)
    uniq, row = np.unique(rel, return_inverse=True)
    A = sp.csr_matrix((np.asarray(coef, dtype=float), (row, np.asarray(cell, dtype=np.int64))),
                      shape=(len(uniq), n_cells))
    A.sum_duplicates()
    A.sort_indices()
    m = A.shape[0]
    total = np.full(m, -1, dtype=np.int64)
    row_of = np.repeat(np.arange(m), np.diff(A.indptr))
    signed = A.data * total_sign
    first, other = signed > 0, signed < 0
    n_first = np.bincount(row_of[first], minlength=m)
    n_other = np.bincount(row_of[other], minlength=m)
    by_first = (n_first == 1) & (n_other >= 1)
    by_other = ~by_first & (n_other == 1) & (n_first >= 1)
    pick = (first & by_first[row_of]) | (other & by_other[row_of])
    total[row_of[pick]] = A.indices[pick]
    return A, total


def relation_residuals(A: sp.csr_matrix, x: np.ndarray) -> np.ndarray:
    """``A @ x``: zero for an additive table."""
    return A @ np.asarray(x, dtype=float)


def component_roots(u: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    """The smallest node of each node's component in the undirected graph on nodes
    ``0..n-1`` with edges ``(u[i], v[i])``.

    Roots hook onto the smallest root across an edge, then pointer jumping flattens the
    trees; every tree with a neighbour merges in each round, so the rounds are logarithmic
    in ``n``.  Plain numpy: scipy's graph module would import scipy.linalg, which a small
    run otherwise never loads.

    Examples
    --------
    >>> component_roots(np.array([3, 1]), np.array([2, 4]), 5).tolist()
    [0, 1, 2, 2, 1]
    """
    parent = np.arange(n)
    u, v = np.asarray(u, dtype=np.int64), np.asarray(v, dtype=np.int64)
    while True:
        pu, pv = parent[u], parent[v]
        differ = pu != pv
        if not differ.any():
            return parent
        u, v, pu, pv = u[differ], v[differ], pu[differ], pv[differ]
        np.minimum.at(parent, np.maximum(pu, pv), np.minimum(pu, pv))
        while True:
            grand = parent[parent]
            if np.array_equal(grand, parent):
                break
            parent = grand


def connected_components(graph: sp.spmatrix, directed: bool = True) -> tuple[int, np.ndarray]:
    """The weakly connected components of ``graph`` (a square sparse matrix; every stored
    entry is an edge): their number and each node's label, numbered 0, 1, ... in the
    order of each component's smallest node -- scipy's
    ``scipy.sparse.csgraph.connected_components(graph, directed, connection="weak")``,
    whose labels are the same.  Plain numpy (:func:`component_roots`): scipy's graph
    module imports scipy.sparse.linalg and scipy.linalg (some 0.1 s of CPU), which a run
    without compiled kernels otherwise never loads.  ``directed`` is scipy's; weak
    components do not depend on it.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> g = sp.csr_matrix(([1.0, 1.0], ([0, 3], [2, 1])), shape=(5, 5))
    >>> n, labels = connected_components(g, directed=False)
    >>> n, labels.tolist()
    (3, [0, 1, 0, 1, 2])
    """
    import scipy.sparse as sp
    coo = sp.coo_matrix(graph)
    n = coo.shape[0]
    if coo.shape != (n, n):
        raise ValueError(f"a graph's matrix is square, not {coo.shape}")
    roots = component_roots(coo.row, coo.col, n)
    found, labels = np.unique(roots, return_inverse=True)
    return len(found), labels.astype(np.int32).ravel()


def masked_entries(A: sp.csr_matrix, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The positions in ``A``'s CSR arrays of its entries in the columns of ``mask``, and
    their rows: read off the arrays, since a column slice of a CSR matrix costs scipy's
    index checks and a copy per call, and the searches call this at every point they
    check."""
    at = np.flatnonzero(mask[A.indices])
    if 8 * len(at) < A.nnz:   # few entries: their rows by bisection
        row = np.searchsorted(A.indptr, at, side="right") - 1
    else:
        row = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))[at]
    return at, row


def linked_components(A: sp.csr_matrix, mask: np.ndarray) -> list[np.ndarray]:
    """The cells of ``mask`` grouped into components: two cells are linked when some
    relation contains both (relations of one component never touch another's cells).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> A = sp.csr_matrix([[1.0, -1.0, -1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    >>> [c.tolist() for c in linked_components(A, np.array([True, True, False, True]))]
    [[0, 1], [3]]
    """
    mask = np.asarray(mask, dtype=bool)
    cells = np.flatnonzero(mask)
    if len(cells) == 0:
        return []
    A = A.tocsr()
    at, row = masked_entries(A, mask)
    # bipartite graph: the relations as nodes 0..m-1 (one untouched is a node of its
    # own), the cells as m..m+s-1
    m = A.shape[0]
    cell_node = np.empty(A.shape[1], dtype=np.int64)
    cell_node[cells] = m + np.arange(len(cells))
    cell_labels = component_roots(row, cell_node[A.indices[at]], m + len(cells))[m:]
    order = np.argsort(cell_labels, kind="stable")
    splits = np.flatnonzero(np.diff(cell_labels[order])) + 1
    return [cells[g] for g in np.split(order, splits)]
