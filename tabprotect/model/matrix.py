"""The model matrix of a product table: every cell as a sum of leaf cells.

A product table's cells are ``x = K u`` for the values ``u`` of its leaf cells (cells
that are leaves in every dimension), with ``K = K_1 (x) K_2 (x) ... (x) K_d`` the Kronecker
product of one small 0/1 matrix per dimension (codes x leaves: which leaves a code sums).
``K`` is kept as its factors: :meth:`ModelMatrix.aggregate` applies it dimension by
dimension (never materialised, linear in the number of cells), :meth:`ModelMatrix.sparse`
builds it as a scipy.sparse matrix for the methods that need it whole (small-count
rounding, interior-sum totals).  The relation matrix ``A`` (``A x = 0``) is the table's
``relations``; ``A K = 0``.
"""
from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Sequence

import numpy as np

from tabprotect.model.hierarchy import Hierarchy

if TYPE_CHECKING:
    import scipy.sparse as sp


def leaf_matrix(h: Hierarchy) -> sp.csr_matrix:
    """Codes x leaves 0/1 matrix of one hierarchy: which leaves each code sums (a leaf
    itself; every other code its leaf descendants); leaves in code order.

    Examples
    --------
    >>> h = Hierarchy.from_pairs([("T", "A"), ("T", "B"), ("A", "A1"), ("A", "A2")])
    >>> leaf_matrix(h).toarray().astype(int).tolist()   # codes T, A, A1, A2, B
    [[1, 1, 1], [1, 1, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]
    """
    leaves = np.flatnonzero(h.is_leaf)
    rows, cols = [], []
    node = leaves.copy()
    col = np.arange(len(leaves))
    while len(node):  # climb from every leaf to the root, one level per step
        rows.append(node)
        cols.append(col)
        up = h.parent[node]
        node, col = up[up >= 0], col[up >= 0]
    r, c = np.concatenate(rows), np.concatenate(cols)
    import scipy.sparse as sp
    return sp.csr_matrix((np.ones(len(r)), (r, c)), shape=(len(h), len(leaves)))


class ModelMatrix:
    """``cells = K leaves`` for a product table of the given hierarchies (one per
    dimension, in the table's order); cells in C order of the code positions.

    Examples
    --------
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> m = ModelMatrix([r, c])
    >>> m.aggregate(np.array([0, 0, 0, 0, 1, 2, 0, 3, 4.0])).tolist()
    [10.0, 4.0, 6.0, 3.0, 1.0, 2.0, 7.0, 3.0, 4.0]
    >>> m.sparse().shape
    (9, 4)
    """

    def __init__(self, hierarchies: Sequence[Hierarchy]) -> None:
        self.hierarchies = tuple(hierarchies)
        self.shape = tuple(len(h) for h in self.hierarchies)

    @cached_property
    def factors(self) -> tuple[sp.csr_matrix, ...]:
        """Per dimension, its codes x leaves matrix (:func:`leaf_matrix`)."""
        return tuple(leaf_matrix(h) for h in self.hierarchies)

    @cached_property
    def leaf_cells(self) -> np.ndarray:
        """True for the cells that are leaves in every dimension (the columns of K, in
        cell order)."""
        mask = np.ones(1, dtype=bool)
        for h in self.hierarchies:
            mask = np.logical_and.outer(mask, h.is_leaf).ravel()
        return mask

    def aggregate(self, values: np.ndarray) -> np.ndarray:
        """``K u``: every cell from the leaf cells' ``values`` (a vector over all cells;
        the other cells' entries are ignored).

        Works one dimension at a time: along dimension d, each non-leaf code becomes the
        sum of its children, deepest codes first, so multi-level hierarchies are exact
        and the sums are formed in the same order whatever the table's size.
        """
        arr = np.where(self.leaf_cells, values, 0.0).reshape(self.shape).copy()
        for d, h in enumerate(self.hierarchies):
            moved = np.moveaxis(arr, d, 0)  # a view: writes go into arr
            depth = h.depth
            for p in sorted((p for p, _ in h.edges()), key=lambda p: -depth[p]):
                moved[p] = moved[list(h.children[p])].sum(axis=0)
        return arr.ravel()

    def sparse(self) -> sp.csr_matrix:
        """K as a cells x leaf-cells sparse matrix (the Kronecker product of the factors;
        its columns are the leaf cells in cell order)."""
        import scipy.sparse as sp
        K = self.factors[0]
        for f in self.factors[1:]:
            K = sp.kron(K, f, format="csr")
        return K.tocsr()
