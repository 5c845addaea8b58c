"""Cell vectors: every cell as a sparse integer vector over a basis of the table's space.

Every cell of an additive table is a linear combination of the inner cells.  Vectors are
not written over the inner cells (a total would be a dense vector) but over an equivalent
sparse basis of the same space: per dimension, every code except one *dependent* child of
each parent is a basis element, and the dependent child is its parent minus its siblings.
A cell's vector is the product of its codes' vectors, so most cells are unit vectors and
totals are as sparse as leaves; the span relations are the same as over the inner cells
because the change of basis is invertible.  A general table (relations only) has unit
vectors and its relation rows published first (`RelationVectors`).
"""
from __future__ import annotations

import itertools
from fractions import Fraction
from math import gcd

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.table import Table
from tabprotect.secondary.gauss.compile import jit
from tabprotect.secondary.gauss.elimination import csr_from_dicts
from tabprotect.secondary.gauss.state import P


def _dimension_vectors(h, weight: np.ndarray | None = None
                       ) -> tuple[list[list[tuple[int, int]]], int]:
    """Per code, its vector over the dimension's sparse basis; and the basis size.

    In every group one child is dependent (its parent minus its siblings): the child of
    largest ``weight`` (default: the last child).  Why the largest: cells holding a
    dependent code have long vectors; with the code's marginal value as the weight those
    cells are large, published early, and primaries (small cells) stay short vectors,
    which keeps the elimination's fill-in down.
    """
    n = len(h)
    dependent = np.zeros(n, dtype=bool)
    for p, children in h.edges():
        if weight is None:
            dependent[children[-1]] = True
        else:
            w = np.asarray([weight[c] for c in children])
            # largest weight; ties to the later child (the historical default)
            dependent[children[len(children) - 1 - int(np.argmax(w[::-1]))]] = True
    basis_index = np.cumsum(~dependent) - 1
    vecs: list[list[tuple[int, int]] | None] = [None] * n
    for c in range(n):  # pre-order: a parent before its children
        if not dependent[c]:
            vecs[c] = [(int(basis_index[c]), 1)]
        else:
            p = int(h.parent[c])
            acc: dict[int, int] = dict(vecs[p])
            for s in h.children[p]:
                if s != c:
                    k = int(basis_index[s])
                    acc[k] = acc.get(k, 0) - 1
            vecs[c] = [(k, v) for k, v in acc.items() if v != 0]
    return vecs, int((~dependent).sum())


def marginals(table: Table) -> list[np.ndarray]:
    """Per dimension, the absolute value of each code's marginal cell (every other
    dimension at its total)."""
    shape = table.shape
    roots = [int(np.flatnonzero(d.hierarchy.parent < 0)[0]) for d in table.dimensions]
    out = []
    for d in range(len(shape)):
        idx = [np.full(shape[d], r) for r in roots]
        idx[d] = np.arange(shape[d])
        out.append(np.abs(table.value[np.ravel_multi_index(idx, shape)]))
    return out


class CellVectors:
    """Sparse integer vectors of the cells of a product table over the sparse basis.

    ``dependent``: which child of each group is expressed by the others, ``"last"`` or
    ``"largest"`` (the child with the largest marginal value; see _dimension_vectors).

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> t = Table.from_arrays({"x": Hierarchy.flat(["a", "b"], total="T")}, [3, 1, 2])
    >>> cv = CellVectors(t)
    >>> [cv.vector(i) for i in range(3)]
    [{0: 1}, {1: 1}, {0: 1, 1: -1}]
    """

    def __init__(self, table: Table, dependent: str = "last", compiled: bool = True):
        if not table.dimensions:
            raise InputError("CellVectors needs a product table (dimensions with "
                             "hierarchies); use RelationVectors for a general table")
        self.shape = table.shape
        # the compiled builder, or its plain-Python source (``compiled=False``)
        self._build = product_vectors if compiled else getattr(product_vectors, "py_func",
                                                                  product_vectors)
        weights = marginals(table) if dependent == "largest" else [None] * len(self.shape)
        per_dim = [_dimension_vectors(d.hierarchy, w)
                   for d, w in zip(table.dimensions, weights)]
        self.vecs = [v for v, _ in per_dim]
        sizes = [s for _, s in per_dim]
        self.radix = [int(np.prod(sizes[d + 1:])) for d in range(len(sizes))]
        # per dimension and code: its (key * radix, coefficient) terms, and the cell
        # index strides (plain Python ints: vector() runs once per cell)
        self._terms = [[[(k * r, v) for k, v in code] for code in vecs]
                       for vecs, r in zip(self.vecs, self.radix)]
        self._strides = [int(np.prod(self.shape[d + 1:])) for d in range(len(self.shape))]
        self.n_keys = int(np.prod(sizes))
        # the same code vectors flattened for the kernel (keys sorted, times the radix)
        cptr, ckey, cval, base = [0], [], [], []
        for terms in self._terms:
            base.append(len(cptr) - 1)
            for code in terms:
                for k, v in sorted(code):
                    ckey.append(k)
                    cval.append(v % P)
                cptr.append(len(ckey))
        self._code = (np.asarray(base, np.int64), np.asarray(cptr, np.int64),
                      np.asarray(ckey, np.int64), np.asarray(cval, np.int64))

    def forced_rows(self) -> list[dict[int, int]]:
        """Nothing: the relations are built into the basis of a product table."""
        return []

    def forced_csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Nothing (an empty CSR): see :meth:`forced_rows`."""
        return np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int32)

    def csr(self, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The vectors of ``cells`` as a CSR ``(ptr, keys, coefficients mod P)``."""
        base, cptr, ckey, cval = self._code
        return self._build(np.asarray(cells, np.int64), np.asarray(self._strides, np.int64),
                           base, cptr, ckey, cval)

    def vector(self, cell: int) -> dict[int, int]:
        """The cell's vector ``{key: coefficient}``: the product of its codes' vectors."""
        rest = int(cell)
        parts = []
        for terms, stride in zip(self._terms, self._strides):
            p, rest = divmod(rest, stride)
            parts.append(terms[p])
        if all(len(p) == 1 for p in parts):
            key = 0
            coef = 1
            for p in parts:
                key += p[0][0]
                coef *= p[0][1]
            return {key: coef}
        out: dict[int, int] = {}
        for combo in itertools.product(*parts):
            key = 0
            coef = 1
            for k, v in combo:
                key += k
                coef *= v
            out[key] = out.get(key, 0) + coef
        return {k: v for k, v in out.items() if v != 0}


class RelationVectors:
    """Cell vectors of a general table (given by its relations only).

    A cell's value is the functional ``x -> x_i`` on the tables that satisfy the
    relations, i.e. the unit vector ``e_i`` modulo the row space of the relation matrix.
    So the cells are unit vectors and the relation rows are published first (they are
    known to everybody): the span test is then the same as for a product table.
    Non-integer coefficients are scaled to integers (exact rationals).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> t = Table.from_relations([3.0, 1.0, 2.0], sp.csr_matrix([[1.0, -1.0, -1.0]]))
    >>> rv = RelationVectors(t)
    >>> rv.vector(2), rv.forced_rows()
    ({2: 1}, [{0: 1, 1: -1, 2: -1}])
    """

    def __init__(self, table: Table):
        self.relations = table.relations.tocsr()
        self.n_keys = table.n_cells

    def vector(self, cell: int) -> dict[int, int]:
        return {int(cell): 1}

    def csr(self, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The vectors of ``cells`` (unit vectors) as a CSR."""
        cells = np.asarray(cells)
        return (np.arange(len(cells) + 1, dtype=np.int64), cells.astype(np.int32),
                np.ones(len(cells), np.int32))

    def forced_rows(self) -> list[dict[int, int]]:
        """The relation rows as integer vectors (exact rationals scaled to integers)."""
        A = self.relations
        if np.array_equal(A.data, np.round(A.data)):
            # integer coefficients (the usual +-1): no rational arithmetic needed
            return self._integer_rows()
        rows = []
        for r in range(A.shape[0]):
            lo, hi = A.indptr[r], A.indptr[r + 1]
            coefs = [Fraction(float(x)).limit_denominator(10 ** 9) for x in A.data[lo:hi]]
            scale = 1
            for c in coefs:
                scale = scale * c.denominator // gcd(scale, c.denominator)
            row = {int(k): int(c * scale) for k, c in zip(A.indices[lo:hi], coefs) if c}
            if row:
                rows.append(row)
        return rows

    def _integer_rows(self) -> list[dict[int, int]]:
        ptr, keys, vals = self._integer_csr()
        keys, vals = keys.tolist(), vals.tolist()
        return [dict(zip(keys[ptr[r]:ptr[r + 1]], vals[ptr[r]:ptr[r + 1]]))
                for r in range(len(ptr) - 1)]

    def _integer_csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The non-empty rows of integer relations (exact integers, keys sorted)."""
        A = self.relations.copy()
        A.eliminate_zeros()
        A.sort_indices()
        A = A[np.diff(A.indptr) > 0]
        return (A.indptr.astype(np.int64), A.indices.astype(np.int32),
                A.data.astype(np.int64))

    def forced_csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`forced_rows` as a CSR ``(ptr, keys, coefficients mod P)``."""
        if np.array_equal(self.relations.data, np.round(self.relations.data)):
            ptr, keys, vals = self._integer_csr()
            return ptr, keys, (vals % P).astype(np.int32)
        return csr_from_dicts(self.forced_rows())


def cell_vectors(table: Table, dependent: str = "largest", compiled: bool = True
                 ) -> "CellVectors | RelationVectors":
    """The sparse cell vectors of a product table, or of a general table."""
    if table.dimensions:
        return CellVectors(table, dependent, compiled)
    return RelationVectors(table)


@jit
def product_vectors(cells, strides, code_base, cptr, ckey, cval):
    """CSR vectors (sorted keys, coefficients mod P) of product-table cells: the
    product of their codes' vectors (``code_base[d] + code`` indexes dimension ``d``'s
    code vectors ``cptr/ckey/cval``, keys already times the dimension's radix)."""
    nd = len(strides)
    ptr = np.zeros(len(cells) + 1, dtype=np.int64)
    codes = np.empty(nd, dtype=np.int64)
    for q in range(len(cells)):
        rest = cells[q]
        length = 1
        for d in range(nd):
            g = code_base[d] + rest // strides[d]
            rest = rest % strides[d]
            length *= cptr[g + 1] - cptr[g]
        ptr[q + 1] = ptr[q] + length
    keys = np.empty(ptr[-1], dtype=np.int32)
    vals = np.empty(ptr[-1], dtype=np.int32)
    pos = np.empty(nd, dtype=np.int64)
    for q in range(len(cells)):
        rest = cells[q]
        for d in range(nd):
            codes[d] = code_base[d] + rest // strides[d]
            rest = rest % strides[d]
            pos[d] = cptr[codes[d]]
        # odometer over the codes' entries, last dimension fastest: keys come sorted
        # (the first dimension has the largest radix, each code vector is sorted)
        for o in range(ptr[q], ptr[q + 1]):
            key = np.int64(0)
            coef = np.int64(1)
            for d in range(nd):
                key += ckey[pos[d]]
                coef = coef * cval[pos[d]] % P
            keys[o] = key
            vals[o] = coef
            d = nd - 1
            while d >= 0:
                pos[d] += 1
                if pos[d] < cptr[codes[d] + 1]:
                    break
                pos[d] = cptr[codes[d]]
                d -= 1
    return ptr, keys, vals

