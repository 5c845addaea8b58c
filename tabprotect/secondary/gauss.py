"""Gaussian-elimination secondary suppression (Langsrud's method), exact and sparse.

Every cell of an additive table is a linear combination of the inner cells: its *vector*.
The intruder can compute a suppressed cell exactly iff its vector is in the span of the
published cells' vectors.  Candidates for publication are taken one at a time, most
expensive first (forced published ``P`` and empty ``Z`` cells before everything); a
candidate is published unless that would put some primary cell in the span of the
published cells, in which case it becomes a secondary suppression.  The result has no
exact linear disclosure of any primary; interval protection (the protection levels) is
then enforced by :func:`tabprotect.secondary.protect`'s audit and repair.

Why it is near-linear: vectors are not written over the inner cells (a total would be a
dense vector) but over an equivalent sparse basis of the same space: per dimension, every
code except one *dependent* child of each parent is a basis element, and the dependent
child is its parent minus its siblings.  A cell's vector is the product of its codes'
vectors, so most cells are unit vectors and totals are as sparse as leaves; the span
relations are the same as over the inner cells because the change of basis is
invertible.  Elimination is incremental, with each primary kept reduced against the
published basis; a primary enters the span exactly when its reduced vector becomes zero,
which for a new basis vector ``r`` happens iff the primary's reduced vector is
proportional to ``r`` -- that is the test.  Publishing ``r`` updates every vector holding
its pivot (`_eliminate`).

Arithmetic is modulo the prime ``P = 2^31 - 1`` (every coefficient fits an int32, every
product of two an int64), on flat arrays: each vector a sorted run of (key, coefficient)
pairs in a pooled buffer, per key linked lists of the vectors holding it.  Why modular
arithmetic is acceptable: a vector in the rational span of the published vectors is in
their span modulo ``P`` too unless ``P`` divides a denominator of the combination (a
minor of the published vectors: for these 0/+-1 hierarchical vectors small integers, so
a prime of 2^31 - 1 dividing one is negligible); a vector outside the rational span that
looks inside it modulo ``P`` (same condition) only makes the method suppress one cell
more than needed; and protect() audits every pattern by LP anyway (the audit, not the
method, is the judge).  The kernel is plain Python over numpy arrays, compiled by numba
when it can be imported (numba is a dependency; ``cache=True``: the first call
compiles, later processes load the cache) and run as it is otherwise: same results,
much slower (fine for small tables).

Singleton-aware variant (``singleton=True``): a single-contributor primary is known to its
contributor, so the elimination is run a second time with those cells treated as
published, checking the other primaries; the suppressions of both runs are kept (a
subset of a safe published set stays safe, so the union is safe for both). That pass
checks no single-contributor primary, so a last step finds every pair of a primary and
a suppressed single-contributor cell whose contributor could derive it (one elimination
of the suppressed cells modulo the published span: proportional reduced vectors) and
breaks them with eliminations that know the attacker and check the primary
(`_guard_pairs`).
"""
from __future__ import annotations

import itertools
import os
import time
import warnings
from dataclasses import dataclass, field
from fractions import Fraction
from math import gcd
from typing import Callable, Literal, NamedTuple

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.table import Table
from tabprotect.secondary.base import MethodOutcome, register_method
from tabprotect.parallel import process_map


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


def _marginals(table: Table) -> list[np.ndarray]:
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

    def __init__(self, table: Table, dependent: str = "last"):
        if not table.dimensions:
            raise InputError("CellVectors needs a product table (dimensions with "
                             "hierarchies); use RelationVectors for a general table")
        self.shape = table.shape
        weights = _marginals(table) if dependent == "largest" else [None] * len(self.shape)
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

    def csr(self, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The vectors of ``cells`` as a CSR ``(ptr, keys, coefficients mod P)``."""
        base, cptr, ckey, cval = self._code
        return _product_vectors(np.asarray(cells, np.int64),
                                np.asarray(self._strides, np.int64), base, cptr, ckey, cval)

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
        A = self.relations
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


def cell_vectors(table: Table, dependent: str = "largest"
                 ) -> "CellVectors | RelationVectors":
    """The sparse cell vectors of a product table, or of a general table."""
    return CellVectors(table, dependent) if table.dimensions else RelationVectors(table)


# ---------------------------------------------------------------------------------------
# The elimination kernel: plain functions over numpy arrays, compiled by numba when it is
# available (numba is a dependency) and run as they are otherwise (same
# results, much slower).  Arithmetic is modulo the prime P, so every coefficient fits an
# int32 and every product of two an int64.

#: the prime modulus (2^31 - 1): coefficients live in [0, P)
P = 2_147_483_647
#: the prime modulus of the support fingerprints (2^61 - 1: a sum of two fits an int64)
Q = 2_305_843_009_213_693_951

try:
    if os.environ.get("TABPROTECT_NO_NUMBA") == "1":  # tests: the pure-Python path
        raise ImportError
    from numba import njit as _numba_njit
except ImportError:  # pragma: no cover - exercised by a subprocess test
    _numba_njit = None

#: the kernel runs compiled (numba installed)
JIT = _numba_njit is not None
#: without numba, gauss warns from this many cells on (10k-3d: ~1 s of plain Python)
SLOW_WITHOUT_NUMBA = 50_000


def _jit(fn):
    return _numba_njit(cache=True, nogil=True)(fn) if JIT else fn


def _jit_inline(fn):
    """For the small helpers of the hot loops: numba inlines them into the caller."""
    return _numba_njit(cache=True, nogil=True, inline="always")(fn) if JIT else fn


class _State(NamedTuple):
    """The elimination's arrays.

    Vectors (primaries ``0..n_primaries-1``, then the basis vectors in publication
    order) are runs ``[vstart, vstart + vlen)``, sorted by key, of the pool ``pkey`` /
    ``pval`` / ``pnode`` with room for ``vcap`` entries.  Every entry but a basis
    vector's pivot has a node (``pnode``) in its key's linked list of holders
    (``head_p``: primaries, ``head_b``: basis vectors; ``nnext``/``nowner``), marked
    dead (owner -1) when the entry cancels and freed when the list is next walked, so
    the live nodes are exact; ``cnt_p``/``cnt_b`` count them.  The non-zero primaries
    are also filed in an open-addressing hash table by the fingerprint of their support
    (``fp``: the sum of their keys' ``salt`` modulo Q), which is how an offer finds the
    primaries it would disclose.
    """
    vstart: np.ndarray
    vlen: np.ndarray
    vcap: np.ndarray
    pkey: np.ndarray      # int32 keys
    pval: np.ndarray      # int32 coefficients mod P
    pnode: np.ndarray     # int32 list node of the entry (-1: a basis vector's pivot)
    pivot_of: np.ndarray  # key -> basis vector id, or -1
    cnt_p: np.ndarray
    cnt_b: np.ndarray
    head_p: np.ndarray
    head_b: np.ndarray
    nnext: np.ndarray
    nowner: np.ndarray
    salt: np.ndarray      # per key: a random number in [1, Q)
    fp: np.ndarray        # per vector: its support's fingerprint (used for primaries)
    table: np.ndarray     # hash table of the non-zero primaries (-1: empty slot)
    acc: np.ndarray       # dense work arrays over the keys (all zero / False between uses)
    inacc: np.ndarray
    touched: np.ndarray
    rk: np.ndarray        # the offered vector reduced (keys, coefficients)
    rv: np.ndarray
    tk: np.ndarray        # per key of the reduced offer: kind, value, position
    tv: np.ndarray
    tn: np.ndarray
    ids: np.ndarray       # holders of the pivot
    meta: np.ndarray      # scalars, see the M_* indices


# indices into _State.meta
M_TOP, M_NVEC, M_FREE, M_NODE_TOP, M_NFREE, M_DISCLOSED, M_NEED, M_STATUS = range(8)
STATUS_PUBLISHED, STATUS_SUPPRESSED, STATUS_NEED_POOL, STATUS_NEED_NODES = 1, 0, -1, -2


@_jit
def _modinv(a):
    """a^(P-2) mod P: the inverse of a != 0 modulo the prime P."""
    result = np.int64(1)
    base = np.int64(a) % P
    e = P - 2
    while e > 0:
        if e & 1:
            result = result * base % P
        base = base * base % P
        e >>= 1
    return result


@_jit_inline
def _find(pkey, lo, hi, key):
    """Position of ``key`` in the sorted ``pkey[lo:hi]``, or -1 (binary search)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        k = pkey[mid]
        if k < key:
            lo = mid + 1
        elif k > key:
            hi = mid
        else:
            return mid
    return -1


@_jit_inline
def _lower_bound(pkey, lo, hi, key):
    """First position in the sorted ``pkey[lo:hi]`` with a key >= ``key``."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if pkey[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


# (the hot helpers take the arrays they use, not the whole _State: numba passes and
# reference-counts every array of an argument tuple per call, which tripled the run time)

@_jit_inline
def _link(nnext, nowner, meta, head, key, owner):
    """A node for ``owner`` at the front of ``key``'s list (from the free list or the
    top; the caller made sure there is one).  Returns the node."""
    node = meta[M_FREE]
    if node >= 0:
        meta[M_FREE] = nnext[node]
        meta[M_NFREE] -= 1
    else:
        node = meta[M_NODE_TOP]
        meta[M_NODE_TOP] += 1
    nowner[node] = owner
    nnext[node] = head[key]
    head[key] = node
    return node


@_jit_inline
def _write_fill_in(pkey, pval, pnode, at, key, value, nnext, nowner, meta, head, owner,
                   cnt, salt, fingerprint):
    """Write entry (key, value) of vector ``owner`` at pool position ``at``, link it into
    the key's holder list; returns the owner's support fingerprint with the key added."""
    pkey[at] = key
    pval[at] = value
    pnode[at] = _link(nnext, nowner, meta, head, key, owner)
    cnt[key] += 1
    return (fingerprint + salt[key]) % Q


@_jit_inline
def _holders(nnext, nowner, meta, head, key, out, at):
    """Collect the owners of ``key``'s live nodes into ``out[at:]`` (returns how many),
    freeing the dead nodes on the way."""
    n = 0
    prev = -1
    node = head[key]
    while node >= 0:
        nxt = nnext[node]
        owner = nowner[node]
        if owner >= 0:
            out[at + n] = owner
            n += 1
            prev = node
        else:  # dead: unlink and free
            if prev >= 0:
                nnext[prev] = nxt
            else:
                head[key] = nxt
            nnext[node] = meta[M_FREE]
            meta[M_FREE] = node
            meta[M_NFREE] += 1
        node = nxt
    return n


@_jit_inline
def _release(nnext, meta, head, key):
    """Free every node of ``key``'s list."""
    node = head[key]
    while node >= 0:
        nxt = nnext[node]
        nnext[node] = meta[M_FREE]
        meta[M_FREE] = node
        meta[M_NFREE] += 1
        node = nxt
    head[key] = -1


@_jit_inline
def _table_insert(table, fp, u):
    """File primary ``u`` under its fingerprint (linear probing)."""
    mask = len(table) - 1
    slot = fp[u] & mask
    while table[slot] >= 0:
        slot = (slot + 1) & mask
    table[slot] = u


@_jit_inline
def _table_remove(table, fp, u):
    """Remove primary ``u``, filed under its current fingerprint (backward-shift
    deletion: the probe sequences stay unbroken without tombstones)."""
    mask = len(table) - 1
    i = fp[u] & mask
    while table[i] != u:
        i = (i + 1) & mask
    j = i
    while True:
        j = (j + 1) & mask
        v = table[j]
        if v < 0:
            break
        home = fp[v] & mask
        # the entry at j stays unless its home slot lies cyclically outside (i, j]
        if i <= j:
            stays = i < home and home <= j
        else:
            stays = i < home or home <= j
        if not stays:
            table[i] = v
            i = j
    table[i] = -1


@_jit
def _reduce(st, keys, vals):
    """``(keys, vals)`` modulo the published span, without pivot keys, into
    ``st.rk/st.rv`` sorted by key; returns its length.  One pass suffices: a basis vector
    holds no pivot but its own."""
    acc, inacc, touched = st.acc, st.inacc, st.touched
    pivot_of, vstart, vlen, pkey, pval = st.pivot_of, st.vstart, st.vlen, st.pkey, st.pval
    rk, rv = st.rk, st.rv
    t = 0
    for i in range(len(keys)):
        k = keys[i]
        if not inacc[k]:
            inacc[k] = True
            touched[t] = k
            t += 1
        acc[k] = (acc[k] + np.int64(vals[i])) % P
    for i in range(t):
        k = touched[i]
        b = pivot_of[k]
        if b < 0 or acc[k] == 0:
            continue
        c = acc[k]
        s = vstart[b]
        for j in range(s, s + vlen[b]):
            kk = pkey[j]
            if not inacc[kk]:
                inacc[kk] = True
                touched[t] = kk
                t += 1
            acc[kk] = (acc[kk] - c * np.int64(pval[j])) % P
    n = 0
    for i in range(t):
        k = touched[i]
        if acc[k] != 0:
            rk[n] = k
            rv[n] = acc[k]
            n += 1
        acc[k] = 0
        inacc[k] = False
    if n > 1:
        order = np.argsort(rk[:n])
        sk = rk[:n][order]
        sv = rv[:n][order]
        rk[:n] = sk
        rv[:n] = sv
    return n


@_jit_inline
def _proportional(pkey, pval, s, m, rk, rv, n):
    """The vector ``pkey/pval[s:s+m]`` is a multiple of ``rk/rv[:n]``."""
    if m != n:
        return False
    u0 = np.int64(pval[s])
    r0 = np.int64(rv[0])
    for i in range(n):
        if pkey[s + i] != rk[i]:
            return False
        if np.int64(pval[s + i]) * r0 % P != np.int64(rv[i]) * u0 % P:
            return False
    return True


@_jit
def _compact(st, n_vectors):
    """Slide every vector's run down to the start of the pool (runs in pool order, each
    moving left, so copying forward is safe); capacities shrink to the lengths."""
    starts = st.vstart[:n_vectors].copy()
    for v in range(n_vectors):
        if st.vcap[v] == 0:
            starts[v] = -1
    order = np.argsort(starts)
    top = 0
    for v in order:
        if st.vcap[v] == 0:
            continue
        s = st.vstart[v]
        n = st.vlen[v]
        for j in range(n):
            st.pkey[top + j] = st.pkey[s + j]
            st.pval[top + j] = st.pval[s + j]
            st.pnode[top + j] = st.pnode[s + j]
        st.vstart[v] = top
        st.vcap[v] = n
        top += n
    st.meta[M_TOP] = top


@_jit
def _eliminate(st, pivot, n, nb, nh):
    """``vec[h] -= vec[h][pivot] * r`` for the holders ``h = ids[:nh]`` of the pivot
    (basis vectors ``ids[:nb]`` first; ``r = rk/rv`` of length ``n``, ``r[pivot] = 1``),
    in place.  Per holder: find ``r``'s keys in it (``n`` binary searches), update the
    values there, then move only the runs of entries between them whose position
    changes (a fill-in shifts what follows one place right, a cancellation one place
    left), and write the fill-ins; a holder that outgrows its room is copied to the
    pool's top instead.  (Less memory moved than merging each holder into work arrays
    and back: 60 s against 66 s of CPU on 1m-4d.)  Keeps the lists, counts and the
    primaries' hash table right; returns how many primaries became zero."""
    pkey, pval, pnode = st.pkey, st.pval, st.pnode
    kind, val, pos = st.tk, st.tv, st.tn  # per key of r: 0 update, 1 fill-in, 2 cancel
    rk, rv, salt = st.rk, st.rv, st.salt
    nnext, nowner, meta = st.nnext, st.nowner, st.meta
    table, fp, vstart, vlen, vcap = st.table, st.fp, st.vstart, st.vlen, st.vcap
    emptied = 0
    for q in range(nh):
        h = st.ids[q]
        primary = q >= nb
        cnt = st.cnt_p if primary else st.cnt_b
        head = st.head_p if primary else st.head_b
        if primary:
            _table_remove(table, fp, h)
        f = fp[h]
        s = vstart[h]
        m = vlen[h]
        end = s + m
        c = np.int64(pval[_find(pkey, s, end, pivot)])
        # 1. classify r's keys; updates and cancellations are done where they stand
        p = s
        grow = 0
        for j in range(n):
            k = rk[j]
            p = _lower_bound(pkey, p, end, k)
            pos[j] = p
            if p < end and pkey[p] == k:
                z = (np.int64(pval[p]) - c * np.int64(rv[j])) % P
                if z != 0:
                    kind[j] = 0
                    pval[p] = z
                else:  # cancelled (always so for the pivot)
                    kind[j] = 2
                    grow -= 1
                    nowner[pnode[p]] = -1  # its node is dead
                    cnt[k] -= 1
                    f = (f + Q - salt[k]) % Q
            else:
                kind[j] = 1
                val[j] = (P - c * np.int64(rv[j]) % P) % P
                grow += 1
        new_len = m + grow
        if new_len > vcap[h]:
            # 2a. outgrown: copy to the top, dropping cancelled entries, adding fill-ins
            cap = new_len + new_len // 2 + 2
            d = meta[M_TOP]
            meta[M_TOP] += cap
            w = d
            i = s
            for j in range(n):
                if kind[j] == 0:
                    continue
                pj = pos[j]
                for t in range(i, pj):
                    pkey[w] = pkey[t]
                    pval[w] = pval[t]
                    pnode[w] = pnode[t]
                    w += 1
                if kind[j] == 2:
                    i = pj + 1
                else:
                    f = _write_fill_in(pkey, pval, pnode, w, rk[j], val[j], nnext, nowner,
                                       meta, head, h, cnt, salt, f)
                    w += 1
                    i = pj
            for t in range(i, end):
                pkey[w] = pkey[t]
                pval[w] = pval[t]
                pnode[w] = pnode[t]
                w += 1
            vstart[h] = d
            vcap[h] = cap
        else:
            # 2b. in place: runs moving left, front to back; runs moving right, back to
            # front (runs of opposite shifts never overlap: the cancellations or
            # fill-ins between them make the room); then the fill-ins
            shift = 0
            i = s
            for j in range(n):
                if kind[j] == 0:
                    continue
                pj = pos[j]
                if shift < 0:
                    for t in range(i, pj):
                        pkey[t + shift] = pkey[t]
                        pval[t + shift] = pval[t]
                        pnode[t + shift] = pnode[t]
                if kind[j] == 2:
                    shift -= 1
                    i = pj + 1
                else:
                    shift += 1
                    i = pj
            if shift < 0:
                for t in range(i, end):
                    pkey[t + shift] = pkey[t]
                    pval[t + shift] = pval[t]
                    pnode[t + shift] = pnode[t]
            run_end = end
            for j in range(n - 1, -1, -1):
                if kind[j] == 0:
                    continue
                pj = pos[j]
                start = pj + 1 if kind[j] == 2 else pj
                if shift > 0:
                    for t in range(run_end - 1, start - 1, -1):
                        pkey[t + shift] = pkey[t]
                        pval[t + shift] = pval[t]
                        pnode[t + shift] = pnode[t]
                shift += 1 if kind[j] == 2 else -1
                run_end = pj
            for j in range(n):  # (shift is 0 again: the prefix before r's keys)
                if kind[j] == 2:
                    shift -= 1
                elif kind[j] == 1:
                    f = _write_fill_in(pkey, pval, pnode, pos[j] + shift, rk[j], val[j],
                                       nnext, nowner, meta, head, h, cnt, salt, f)
                    shift += 1
        vlen[h] = new_len
        fp[h] = f
        if primary:
            if new_len > 0:
                _table_insert(table, fp, h)
            else:
                emptied += 1
    return emptied


@_jit
def _offer(st, keys, vals, force):
    """Publish the vector ``(keys, vals)`` unless that puts a primary into the published
    span (``force``: publish anyway).  Returns STATUS_PUBLISHED, STATUS_SUPPRESSED, or
    STATUS_NEED_POOL / STATUS_NEED_NODES (nothing changed: grow the arrays, offer again)."""
    n = _reduce(st, keys, vals)
    if n == 0:
        return STATUS_PUBLISHED  # already in the span
    if not force:
        # a primary enters the span iff its reduced vector is a multiple of r: it has
        # r's support, so only the primaries filed under r's fingerprint are candidates
        rk, rv, table, fp = st.rk, st.rv, st.table, st.fp
        f = np.int64(0)
        for i in range(n):
            f = (f + st.salt[rk[i]]) % Q
        mask = len(table) - 1
        slot = f & mask
        while table[slot] >= 0:
            u = table[slot]
            if fp[u] == f and _proportional(st.pkey, st.pval, st.vstart[u], st.vlen[u],
                                            rk, rv, n):
                return STATUS_SUPPRESSED
            slot = (slot + 1) & mask
    # pivot: the key whose elimination touches the fewest vectors, then the smallest
    pivot = st.rk[0]
    at = 0
    best = st.cnt_p[pivot] + st.cnt_b[pivot]
    for i in range(1, n):
        k = st.rk[i]
        w = st.cnt_p[k] + st.cnt_b[k]
        if w < best:
            best = w
            pivot = k
            at = i
    # the holders of the pivot (basis vectors first); room: each may move to the top
    # with 1.5x its merged length, and link up to n new nodes
    nb = _holders(st.nnext, st.nowner, st.meta, st.head_b, pivot, st.ids, 0)
    nh = nb + _holders(st.nnext, st.nowner, st.meta, st.head_p, pivot, st.ids, nb)
    need_pool = n
    for i in range(nh):
        need_pool += (st.vlen[st.ids[i]] + n) * 3 // 2 + 2
    if st.meta[M_TOP] + need_pool > len(st.pkey):
        _compact(st, st.meta[M_NVEC])
        if 2 * (st.meta[M_TOP] + need_pool) > len(st.pkey):
            st.meta[M_NEED] = need_pool
            return STATUS_NEED_POOL
    need_nodes = (nh + 1) * n
    if st.meta[M_NFREE] + len(st.nnext) - st.meta[M_NODE_TOP] < need_nodes:
        st.meta[M_NEED] = need_nodes
        return STATUS_NEED_NODES
    inv = _modinv(st.rv[at])
    for i in range(n):
        st.rv[i] = np.int64(st.rv[i]) * inv % P
    st.meta[M_DISCLOSED] += _eliminate(st, pivot, n, nb, nh)
    # every holder lost the pivot: its lists hold dead nodes only
    _release(st.nnext, st.meta, st.head_b, pivot)
    _release(st.nnext, st.meta, st.head_p, pivot)
    # r becomes a basis vector (listed under its keys but the pivot)
    vid = st.meta[M_NVEC]
    st.meta[M_NVEC] += 1
    s = st.meta[M_TOP]
    st.meta[M_TOP] += n
    st.vstart[vid] = s
    st.vlen[vid] = n
    st.vcap[vid] = n
    for i in range(n):
        k = st.rk[i]
        st.pkey[s + i] = k
        st.pval[s + i] = st.rv[i]
        if k != pivot:
            st.cnt_b[k] += 1
            st.pnode[s + i] = _link(st.nnext, st.nowner, st.meta, st.head_b, k, vid)
        else:
            st.pnode[s + i] = -1
    st.pivot_of[pivot] = vid
    return STATUS_PUBLISHED


@_jit
def _offer_range(st, ptr, keys, vals, force, lo, hi, published):
    """Offer vectors ``lo..hi-1`` of the CSR ``(ptr, keys, vals)`` in order; returns the
    first one not done (``hi`` when all are; else ``meta[M_STATUS]`` says why)."""
    for q in range(lo, hi):
        a = ptr[q]
        b = ptr[q + 1]
        res = _offer(st, keys[a:b], vals[a:b], force[q])
        if res < 0:  # out of room: the caller grows the arrays and goes on from q
            st.meta[M_STATUS] = res
            return q
        published[q] = res
    return hi


@_jit
def _load_primaries(st, ptr, keys, vals):
    """The primaries' vectors into the pool (ids 0..), with their lists, counts and
    fingerprints."""
    n = len(ptr) - 1
    disclosed = 0
    for u in range(n):
        a = ptr[u]
        b = ptr[u + 1]
        st.vstart[u] = a
        st.vlen[u] = b - a
        st.vcap[u] = b - a
        f = np.int64(0)
        for j in range(a, b):
            k = keys[j]
            st.pkey[j] = k
            st.pval[j] = vals[j]
            st.pnode[j] = _link(st.nnext, st.nowner, st.meta, st.head_p, k, u)
            st.cnt_p[k] += 1
            f = (f + st.salt[k]) % Q
        st.fp[u] = f
        if b > a:
            _table_insert(st.table, st.fp, u)
        else:
            disclosed += 1
    st.meta[M_TOP] = ptr[n]
    st.meta[M_NVEC] = n
    st.meta[M_DISCLOSED] = disclosed


@_jit
def _product_vectors(cells, strides, code_base, cptr, ckey, cval):
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


class _Elimination:
    """Incremental elimination modulo P: a published basis in reduced echelon form (no
    basis vector holds another's pivot; each scaled to 1 at its pivot) and the primaries'
    vectors reduced against it.

    Reduced vectors are canonical (the unique representative of a vector modulo the
    published span that holds no pivot key), which is what makes the disclosure test a
    proportionality test.  The arrays grow on demand (the kernel stops and says so).

    Examples
    --------
    >>> e = _Elimination(3, [{0: 1, 1: 1}])   # one primary: e0 + e1
    >>> e.offer({0: 1, 2: 1}), e.offer({2: 1})
    (True, True)
    >>> e.reduced_primary(0)                   # modulo the span of e0 + e2 and e2
    {1: 1}
    >>> e.offer({1: 1})                        # would disclose e0 + e1
    False
    """

    def __init__(self, n_keys: int, primaries: "list[dict[int, int]] | tuple",
                 room: int | None = None) -> None:
        if isinstance(primaries, tuple):
            ptr, keys, vals = primaries
        else:
            ptr, keys, vals = _csr_from_dicts(primaries)
        self.n_keys = int(n_keys)
        self.n_primaries = n_primaries = len(ptr) - 1
        n_vectors = n_primaries + self.n_keys  # at most one basis vector per key
        nnz = int(ptr[-1])
        # initial room of the pool and of the key lists (``room``: tests of the growth)
        pool = max(1024, 4 * nnz) if room is None else nnz + room
        nodes = max(1024, 2 * nnz) if room is None else nnz + room
        i64, i32 = np.int64, np.int32
        n_keys = self.n_keys
        self.state = _State(
            vstart=np.zeros(n_vectors, i64), vlen=np.zeros(n_vectors, i64),
            vcap=np.zeros(n_vectors, i64),
            pkey=np.zeros(pool, i32), pval=np.zeros(pool, i32), pnode=np.zeros(pool, i32),
            pivot_of=np.full(n_keys, -1, i64),
            cnt_p=np.zeros(n_keys, i64), cnt_b=np.zeros(n_keys, i64),
            head_p=np.full(n_keys, -1, i32), head_b=np.full(n_keys, -1, i32),
            nnext=np.zeros(nodes, i32), nowner=np.zeros(nodes, i32),
            # fixed seed: the run is deterministic (the salts only pick candidates,
            # every candidate is checked exactly)
            salt=np.random.default_rng(0).integers(1, Q, n_keys, dtype=i64),
            fp=np.zeros(n_vectors, i64),
            table=np.full(1 << max(4, (2 * n_primaries).bit_length()), -1, i64),
            acc=np.zeros(n_keys, i64), inacc=np.zeros(n_keys, np.bool_),
            touched=np.zeros(n_keys, i64),
            rk=np.zeros(n_keys, i32), rv=np.zeros(n_keys, i32),
            tk=np.zeros(n_keys, i32), tv=np.zeros(n_keys, i32), tn=np.zeros(n_keys, i32),
            ids=np.zeros(n_vectors, i64), meta=np.zeros(8, i64))
        self.state.meta[M_FREE] = -1
        _load_primaries(self.state, np.asarray(ptr, i64), np.asarray(keys, i32),
                        np.asarray(vals, i32))

    @property
    def disclosed(self) -> int:
        """Primaries in the published span (only forced offers put them there)."""
        return int(self.state.meta[M_DISCLOSED])

    def _grow(self) -> None:
        st = self.state
        meta = st.meta
        if meta[M_STATUS] == STATUS_NEED_POOL:
            top = int(meta[M_TOP])
            size = max(2 * len(st.pkey), 2 * (top + int(meta[M_NEED])))
            grown = {}
            for name in ("pkey", "pval", "pnode"):
                grown[name] = np.zeros(size, np.int32)
                grown[name][:top] = getattr(st, name)[:top]
            self.state = st._replace(**grown)
        else:
            top = int(meta[M_NODE_TOP])
            size = max(2 * len(st.nnext), 2 * (top + int(meta[M_NEED])))
            grown = {}
            for name in ("nnext", "nowner"):
                grown[name] = np.zeros(size, np.int32)
                grown[name][:top] = getattr(st, name)[:top]
            self.state = st._replace(**grown)
        meta[M_STATUS] = 0

    def offer_range(self, ptr: np.ndarray, keys: np.ndarray, vals: np.ndarray,
                    force: np.ndarray, lo: int, hi: int, published: np.ndarray) -> None:
        """Offer vectors ``lo..hi-1`` of a CSR (keys sorted or not, coefficients in
        ``[0, P)``); ``published[q]`` gets 1 (published) or 0 (a secondary)."""
        while lo < hi:
            lo = _offer_range(self.state, ptr, keys, vals, force, lo, hi, published)
            if lo < hi:
                self._grow()

    def offer(self, vector: dict[int, int], force: bool = False) -> bool:
        """Publish ``vector`` unless it would put a primary in the span (``force``:
        publish anyway).  Returns True when published (also when already in the span)."""
        ptr, keys, vals = _csr_from_dicts([vector])
        published = np.zeros(1, np.int8)
        self.offer_range(ptr, keys, vals, np.array([force]), 0, 1, published)
        return bool(published[0])

    def reduced_primary(self, u: int) -> dict[int, int]:
        """Primary ``u``'s reduced vector (coefficients mod P)."""
        st = self.state
        s, n = int(st.vstart[u]), int(st.vlen[u])
        return {int(k): int(v) for k, v in zip(st.pkey[s:s + n], st.pval[s:s + n])}


def _csr_from_dicts(vectors: list[dict[int, int]]
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sparse integer vectors as a CSR with sorted keys and coefficients mod P."""
    ptr = np.zeros(len(vectors) + 1, np.int64)
    keys: list[int] = []
    vals: list[int] = []
    for q, v in enumerate(vectors):
        for k in sorted(v):
            x = int(v[k]) % P
            if x:
                keys.append(int(k))
                vals.append(x)
        ptr[q + 1] = len(keys)
    return ptr, np.asarray(keys, np.int32), np.asarray(vals, np.int32)


def _run(table: Table, cost: np.ndarray, vectors, checked: np.ndarray,
         known: np.ndarray, deadline: float | None, chunk: int = 4096,
         room: int | None = None) -> tuple[np.ndarray, int, bool, int]:
    """One elimination: ``checked`` primaries must stay out of the span; ``known`` cells
    are published first whatever happens.  Returns (secondary mask, #forced disclosures,
    timed out, #offers).  ``chunk``: offers between deadline checks; ``room``: see
    `_Elimination`."""
    status = table.status
    prim = np.flatnonzero(checked)
    elim = _Elimination(vectors.n_keys, vectors.csr(prim), room)
    rows = vectors.forced_rows()  # general tables: the relations are public
    if rows:
        ptr, keys, vals = _csr_from_dicts(rows)
        elim.offer_range(ptr, keys, vals, np.ones(len(rows), bool), 0, len(rows),
                         np.zeros(len(rows), np.int8))
    suppressed_now = np.isin(status, ("U", "M"))
    forced = (np.isin(status, ("P", "Z")) | known) & ~checked
    forced_idx = np.flatnonzero(forced & ~(suppressed_now & ~known))
    free = np.flatnonzero(~suppressed_now & ~forced)
    # most expensive first: they are the last we want to suppress; ties by index
    order = free[np.lexsort((free, -cost[free]))]
    cells = np.concatenate([forced_idx, order])
    force = np.zeros(len(cells), bool)
    force[:len(forced_idx)] = True
    ptr, keys, vals = vectors.csr(cells)
    published = np.ones(len(cells), np.int8)
    timed_out = False
    n = 0
    while n < len(cells):
        if deadline is not None and time.perf_counter() > deadline:
            timed_out = True
            # not examined in time: kept hidden (safe); if the forced cells are not all
            # in, the published span is not known: every candidate stays hidden
            published[max(n, len(forced_idx)):] = 0
            break
        hi = min(n + chunk, len(cells))
        elim.offer_range(ptr, keys, vals, force, n, hi, published)
        n = hi
    secondary = np.zeros(table.n_cells, dtype=bool)
    secondary[order[published[len(forced_idx):] == 0]] = True
    return secondary, elim.disclosed, timed_out, n


def _derivable_pairs(table: Table, vectors, suppressed: np.ndarray,
                     attackers: np.ndarray) -> list[tuple[int, int]]:
    """Pairs ``(p, s)``: primary ``p`` is in the span of the published cells and the
    suppressed cell ``s`` (``attackers``: suppressed cells with one contributor, who
    knows its value), so that contributor derives ``p`` exactly.

    One elimination: every suppressed cell is reduced modulo the published span; ``p``
    is in the span of the published cells and ``s`` iff their reduced vectors are
    proportional (both non-zero; a zero reduced vector is disclosed outright, which
    the elimination itself prevents for primaries). Reduced vectors are canonical, so
    proportional vectors are equal once scaled to 1 at their first key.
    """
    sup = np.flatnonzero(suppressed)
    elim = _Elimination(vectors.n_keys, vectors.csr(sup))
    rows = vectors.forced_rows()
    if rows:
        ptr, keys, vals = _csr_from_dicts(rows)
        elim.offer_range(ptr, keys, vals, np.ones(len(rows), bool), 0, len(rows),
                         np.zeros(len(rows), np.int8))
    pub = np.flatnonzero(~suppressed)
    ptr, keys, vals = vectors.csr(pub)
    elim.offer_range(ptr, keys, vals, np.ones(len(pub), bool), 0, len(pub),
                     np.zeros(len(pub), np.int8))
    primary = table.status == "U"
    groups: dict[tuple, list[int]] = {}
    for u, cell in enumerate(sup):
        if not (primary[cell] or attackers[cell]):
            continue
        red = elim.reduced_primary(u)
        if not red:
            continue
        keys_u = sorted(red)
        inv = int(_modinv(red[keys_u[0]]))
        canon = tuple((k, red[k] * inv % P) for k in keys_u)
        groups.setdefault(canon, []).append(int(cell))
    pairs = []
    for cells in groups.values():
        if len(cells) < 2:
            continue
        for p in cells:
            if primary[p]:
                pairs += [(p, s) for s in cells if s != p and attackers[s]]
    return pairs


def _guard_pairs(table: Table, cost: np.ndarray, vectors, secondary: np.ndarray,
                 deadline: float | None) -> tuple[np.ndarray, int, bool, int]:
    """Suppress more until no primary is derivable by the contributor of one
    suppressed single-contributor cell (see `_derivable_pairs`).

    For a pair ``(p, s)`` an elimination with ``s`` known (published first) and ``p``
    checked gives a published set that keeps ``p`` out of the span of it and ``s``;
    suppressing also what it suppresses keeps that (a subset of a safe published set
    is safe) and keeps every earlier guarantee. The cells of all pairs are numbered and,
    for each bit of the number and each of its values, one elimination knows the
    attackers with that bit value and checks the primaries with the other: every pair
    differs in some bit, so ``2 * bits`` eliminations cover all pairs. Suppressing more
    never creates a new pair, so this repeats only for what modular arithmetic or the
    deadline left. Returns (secondary mask, #pairs found first, timed out, #offers).
    """
    primary = table.status == "U"
    first = None
    timed_out = False
    offers = 0
    for _ in range(3):
        suppressed = primary | (table.status == "M") | secondary
        attackers = suppressed & (table.freq == 1)
        pairs = _derivable_pairs(table, vectors, suppressed, attackers)
        if first is None:
            first = len(pairs)
        if not pairs or timed_out:
            break
        cells = np.unique(np.array(pairs).ravel())
        label = {int(c): i for i, c in enumerate(cells)}
        is_att = np.zeros(table.n_cells, bool)
        is_att[[s for _, s in pairs]] = True
        is_prim = np.zeros(table.n_cells, bool)
        is_prim[[p for p, _ in pairs]] = True
        bit_of = np.zeros(table.n_cells, np.int64)
        bit_of[cells] = [label[int(c)] for c in cells]
        for b in range(max(1, int(len(cells) - 1).bit_length())):
            for v in (0, 1):
                on = ((bit_of >> b) & 1) == v
                known = is_att & on
                checked = is_prim & ~on
                if not known.any() or not checked.any():
                    continue
                sec, _, to, n = _run(table, cost, vectors, checked, known, deadline)
                secondary = secondary | (sec & ~primary)
                timed_out |= to
                offers += n
    return secondary, int(first or 0), timed_out, offers


def _run_in_worker(task: tuple) -> tuple[np.ndarray, int, bool, int]:
    """`_run` in a worker process (`tabprotect.parallel.process_map`): the task carries
    the seconds left instead of a deadline (clocks are per process)."""
    table, cost, dependent, checked, known, seconds_left = task
    deadline = None if seconds_left is None else time.perf_counter() + seconds_left
    return _run(table, cost, cell_vectors(table, dependent), checked, known, deadline)


@dataclass(frozen=True)
class GaussOptions:
    """Settings of the gauss method (see :func:`gauss`)."""

    workers: int | None = field(default=None, metadata={
        "why": "processes for the two eliminations of the singleton case (None: 2 from "
               "100,000 cells); same result, about half the wall time"})
    dependent: Literal["largest", "last"] = field(default="largest", metadata={
        "why": "the dependent child of each group in the cell vectors; the result does "
               "not depend on it (kept to check exactly that)"})


@register_method("gauss", options=GaussOptions, needs_product_structure=False,
                 handles_singletons=True, proves_optimality=False)
def gauss(table: Table, cost: np.ndarray, *, time_limit: float | None = None,
          progress: Callable[[str, float], None] | None = None, singleton: bool = True,
          workers: int | None = None, dependent: str = "largest") -> MethodOutcome:
    """Suppress the cheapest cells that keep every primary out of the published span.

    Parameters
    ----------
    cost : suppression cost; candidates are published in decreasing cost order
    singleton : also protect against the contributors of single-contributor primaries
    time_limit : cells not examined in time stay suppressed (safe, not minimal)
    workers : with ``singleton``, run the two eliminations in two worker processes
        (``workers >= 2``; same result, about half the wall time); default 2 from
        100,000 cells (where the process start-up is negligible), else 1
    dependent : ``"largest"`` (default) or ``"last"``: the dependent child of each
        group (see `CellVectors`; the result does not depend on it)

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2],
    ...                       status=list("SSSSUSSSS"))
    >>> out = gauss(t, t.value.copy())
    >>> sorted(np.flatnonzero(out.status == "M").tolist())
    [5, 7, 8]
    """
    start = time.perf_counter()
    deadline = None if time_limit is None else start + time_limit
    if not JIT and table.n_cells > SLOW_WITHOUT_NUMBA:
        warnings.warn(f"gauss: numba is not available, so the elimination runs as plain "
                      f"Python: slow on {table.n_cells:,} cells (install numba, a "
                      f"dependency of tabprotect)", RuntimeWarning, stacklevel=2)
    cost = np.asarray(cost, dtype=float)
    primary = table.status == "U"
    none = np.zeros(table.n_cells, dtype=bool)
    single = primary & (table.freq == 1)
    second = bool(singleton and single.any() and (primary & ~single).any())
    details: dict = {}
    if workers is None:
        workers = 2 if table.n_cells >= 100_000 else 1
    runs = None
    if second and workers >= 2:
        tasks = [(table, cost, dependent, primary, none, time_limit),
                 (table, cost, dependent, primary & ~single, single, time_limit)]
        runs = process_map(_run_in_worker, tasks, workers=2)
    if runs is not None:
        (secondary, disclosed, timed_out, offers), (sec2, _, to2, offers2) = runs
    else:
        vectors = cell_vectors(table, dependent)
        secondary, disclosed, timed_out, offers = _run(table, cost, vectors, primary, none,
                                                       deadline)
        if progress is not None:
            progress("gauss", 0.5 if singleton else 1.0)
        if second:
            sec2, _, to2, offers2 = _run(table, cost, vectors, primary & ~single, single,
                                         deadline)
    details["forced_disclosures"] = disclosed
    details["offers"] = offers + (offers2 if second else 0)
    if second:
        details["singleton_extra"] = int((sec2 & ~secondary).sum())
        secondary |= sec2
        timed_out |= to2
    if singleton and (table.freq == 1).any():
        # the pass above knows every single-contributor primary at once and so checks
        # none of them: a primary derivable with one such cell known is caught here
        if runs is not None:
            vectors = cell_vectors(table, dependent)
        before = int(secondary.sum())
        secondary, pairs, to3, offers3 = _guard_pairs(table, cost, vectors, secondary,
                                                      deadline)
        details["singleton_pairs"] = pairs
        details["singleton_pair_extra"] = int(secondary.sum()) - before
        details["offers"] += offers3
        timed_out |= to3
    status = table.status.copy()
    status[secondary] = "M"
    if progress is not None:
        progress("gauss", 1.0)
    details["secondaries"] = int(secondary.sum())
    details["seconds"] = round(time.perf_counter() - start, 3)
    return MethodOutcome(status=status, solver_status="time_limit" if timed_out else "heuristic",
                         details=details)
