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
invertible.  Elimination is exact on Python integers (fraction-free, gcd-normalised),
incremental, with each primary kept reduced against the published basis; a primary enters
the span exactly when its reduced vector becomes zero, which for a new basis vector ``r``
happens iff the primary's reduced vector is proportional to ``r`` -- that is the test.
Publishing ``r`` updates, in place, every vector holding its pivot at a cost of
``len(r)`` each (see `_eliminate_in_place`): the holders are long vectors, ``r`` is short.

Singleton-aware variant (``singleton=True``): a single-contributor primary is known to its
contributor, so the elimination is run a second time with those cells treated as
published, checking the other primaries; the suppressions of both runs are kept (a
subset of a safe published set stays safe, so the union is safe for both).
"""
from __future__ import annotations

import itertools
import time
from fractions import Fraction
from math import gcd
from typing import Callable

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.table import Table
from tabprotect.secondary.base import MethodOutcome, register_method


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

    def forced_rows(self) -> list[dict[int, int]]:
        """Nothing: the relations are built into the basis of a product table."""
        return []

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

    def vector(self, cell: int) -> dict[int, int]:
        return {int(cell): 1}

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


def _normalise(v: dict[int, int]) -> dict[int, int]:
    g = 0
    for x in v.values():
        g = gcd(g, x)
        if g == 1:
            return v
    if g > 1:
        return {k: x // g for k, x in v.items()}
    return v


def _parallel(a: dict[int, int], b: dict[int, int]) -> bool:
    if len(a) != len(b):
        return False
    it = iter(a)
    k0 = next(it)
    if k0 not in b:
        return False
    pa, pb = a[k0], b[k0]
    for k, x in a.items():
        y = b.get(k)
        if y is None or x * pb != y * pa:
            return False
    return True


def _eliminate_in_place(store: dict[int, dict[int, int]], owners: list[int],
                        holders: dict[int, set[int]], pivot: int, r: dict[int, int]) -> int:
    """Remove ``pivot`` from the vectors ``store[o]``, ``o`` in ``owners``, with ``r``,
    in place; keep ``holders`` (key -> owners whose vector holds it) right.  Returns how
    many vectors became zero.

    Work is proportional to ``len(r)`` per vector, not to the vector's length: the
    vectors that hold a pivot are the long ones (a long vector holds many keys) while a
    freshly reduced ``r`` is short, so rebuilding each vector as a fraction-free
    ``rp * vec - x * r`` in a new dict dominated the run time on 4-D tables.  A vector
    is scaled only when ``r[pivot]`` does not divide its pivot coefficient (then it is
    gcd-normalised again, to keep the integers small).
    """
    rp = r[pivot]
    # r's other keys with their holder sets, looked up once for all the owners
    terms = [(k, y, holders.setdefault(k, set())) for k, y in r.items() if k != pivot]
    emptied = 0
    for owner in owners:
        vec = store[owner]
        x = vec.pop(pivot)
        scaled = x % rp != 0
        if scaled:
            g = gcd(x, rp)
            f = rp // g
            for k in vec:
                vec[k] *= f
            c = x // g
        else:
            c = x // rp
        get = vec.get
        for k, y, owners_k in terms:
            old = get(k)
            if old is None:
                vec[k] = -c * y
                owners_k.add(owner)
            else:
                z = old - c * y
                if z:
                    vec[k] = z
                else:
                    del vec[k]
                    owners_k.discard(owner)
        if not vec:
            emptied += 1
        elif scaled:
            g = 0
            for y in vec.values():
                g = gcd(g, y)
                if g == 1:
                    break
            if g > 1:
                for k in vec:
                    vec[k] //= g
    return emptied


class _Eliminator:
    """Incremental exact elimination: a published basis in reduced echelon form (no basis
    vector holds another's pivot) and the primaries' vectors reduced against it.

    Reduced vectors are canonical (the unique representative of a vector modulo the
    published span that holds no pivot key), which is what makes the disclosure test a
    proportionality test.  Vectors are updated in place (see `_eliminate_in_place`).
    """

    def __init__(self, primaries: list[dict[int, int]]):
        self.basis: dict[int, dict[int, int]] = {}  # pivot -> vector
        self.basis_holders: dict[int, set[int]] = {}  # key -> pivots whose vector holds it
        self.primary = {u: _normalise(dict(v)) for u, v in enumerate(primaries)}
        self.holders: dict[int, set[int]] = {}  # key -> primaries holding it
        for u, v in self.primary.items():
            for k in v:
                self.holders.setdefault(k, set()).add(u)
        self.disclosed = sum(1 for v in self.primary.values() if not v)

    def reduce(self, v: dict[int, int]) -> dict[int, int]:
        """``v`` modulo the published span, without pivot keys (a new dict; ``v`` is
        not changed)."""
        basis = self.basis
        pivots = [k for k in v if k in basis]
        v = dict(v)
        # one pass suffices: basis vectors hold no other pivot
        for k in pivots:
            x = v.get(k)
            if not x:
                continue
            b = basis[k]
            bk = b[k]
            if x % bk:
                g = gcd(x, bk)
                s = bk // g
                for kk in v:
                    v[kk] *= s
                c = x // g
            else:
                c = x // bk
            for kk, y in b.items():
                z = v.get(kk, 0) - c * y
                if z:
                    v[kk] = z
                else:
                    del v[kk]
        return _normalise(v)

    def offer(self, v: dict[int, int], force: bool = False) -> bool:
        """Publish ``v`` unless it would disclose a primary (``force``: publish anyway).
        Returns True when published."""
        r = self.reduce(v)
        if not r:
            return True
        holders = self.holders
        if not force:
            # a primary is disclosed iff its reduced vector is proportional to r: it must
            # hold every key of r, so scanning the holders of r's rarest key is enough
            rare = min(r, key=lambda k: len(holders.get(k, ())))
            primary = self.primary
            for u in holders.get(rare, ()):
                if _parallel(primary[u], r):
                    return False
        basis_holders = self.basis_holders
        # pivot: the key whose elimination touches the fewest vectors, then the smallest
        pivot = min(r, key=lambda k: (len(holders.get(k, ()))
                                      + len(basis_holders.get(k, ())), k))
        basis = self.basis
        # (each update is independent of the others: their order does not matter; the
        # pivot's holder sets are dropped as no vector holds the pivot afterwards)
        _eliminate_in_place(basis, basis_holders.pop(pivot, ()), basis_holders, pivot, r)
        self.disclosed += _eliminate_in_place(self.primary, holders.pop(pivot, ()), holders,
                                              pivot, r)
        basis[pivot] = r
        for k in r:
            if k != pivot:
                owners = basis_holders.get(k)
                if owners is None:
                    basis_holders[k] = {pivot}
                else:
                    owners.add(pivot)
        return True


def _run(table: Table, cost: np.ndarray, vectors, checked: np.ndarray,
         known: np.ndarray, deadline: float | None) -> tuple[np.ndarray, int, bool]:
    """One elimination: ``checked`` primaries must stay out of the span; ``known`` cells
    are published first whatever happens.  Returns (secondary mask, #forced disclosures,
    timed out)."""
    status = table.status
    prim = np.flatnonzero(checked)
    elim = _Eliminator([vectors.vector(int(u)) for u in prim])
    for row in vectors.forced_rows():  # general tables: the relations are public
        elim.offer(row, force=True)
    suppressed_now = np.isin(status, ("U", "M"))
    forced = (np.isin(status, ("P", "Z")) | known) & ~checked
    forced_idx = np.flatnonzero(forced & ~(suppressed_now & ~known))
    free = np.flatnonzero(~suppressed_now & ~forced)
    for n, i in enumerate(forced_idx):
        if deadline is not None and n % 2048 == 0 and time.perf_counter() > deadline:
            # the published span is not known yet: keep every candidate hidden (safe)
            secondary = np.zeros(table.n_cells, dtype=bool)
            secondary[free] = True
            return secondary, elim.disclosed, True
        elim.offer(vectors.vector(int(i)), force=True)
    # most expensive first: they are the last we want to suppress; ties by index
    order = free[np.lexsort((free, -cost[free]))]
    secondary = np.zeros(table.n_cells, dtype=bool)
    timed_out = False
    for n, i in enumerate(order):
        if deadline is not None and n % 2048 == 0 and time.perf_counter() > deadline:
            secondary[order[n:]] = True  # not examined in time: keep them hidden (safe)
            timed_out = True
            break
        if not elim.offer(vectors.vector(int(i))):
            secondary[i] = True
    return secondary, elim.disclosed, timed_out


def _run_in_worker(task: tuple) -> tuple[np.ndarray, int, bool]:
    """`_run` in a worker process (`tabprotect.parallel.process_map`): the task carries
    the seconds left instead of a deadline (clocks are per process)."""
    table, cost, dependent, checked, known, seconds_left = task
    deadline = None if seconds_left is None else time.perf_counter() + seconds_left
    return _run(table, cost, cell_vectors(table, dependent), checked, known, deadline)


@register_method("gauss")
def gauss(table: Table, cost: np.ndarray, *, time_limit: float | None = None,
          progress: Callable[[str, float], None] | None = None, singleton: bool = True,
          workers: int | None = None, **options) -> MethodOutcome:
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
    dependent = options.get("dependent", "largest")
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
        from tabprotect.parallel import process_map
        tasks = [(table, cost, dependent, primary, none, time_limit),
                 (table, cost, dependent, primary & ~single, single, time_limit)]
        runs = process_map(_run_in_worker, tasks, workers=2)
        if any(run is None for run in runs):
            # process_map loses an error raised while sending a task (e.g. this module
            # loaded from a file path, so the worker cannot import the function): run
            # both eliminations here instead
            runs = None
    if runs is not None:
        (secondary, disclosed, timed_out), (sec2, _, to2) = runs
    else:
        vectors = cell_vectors(table, dependent)
        secondary, disclosed, timed_out = _run(table, cost, vectors, primary, none, deadline)
        if progress is not None:
            progress("gauss", 0.5 if singleton else 1.0)
        if second:
            sec2, _, to2 = _run(table, cost, vectors, primary & ~single, single, deadline)
    details["forced_disclosures"] = disclosed
    if second:
        details["singleton_extra"] = int((sec2 & ~secondary).sum())
        secondary |= sec2
        timed_out |= to2
    status = table.status.copy()
    status[secondary] = "M"
    if progress is not None:
        progress("gauss", 1.0)
    details["secondaries"] = int(secondary.sum())
    details["seconds"] = round(time.perf_counter() - start, 3)
    return MethodOutcome(status=status, solver_status="time_limit" if timed_out else "heuristic",
                         details=details)
