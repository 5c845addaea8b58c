"""Static rows and cut families of the Benders master (besides the capacity cuts from the
attacker LPs' duals): the initial cover rows, bridgeless rows, Chvatal-Gomory roundings
and cover cuts of capacity cuts, and the candidate reduction they rely on."""
from __future__ import annotations

import copy

import numpy as np
import scipy.sparse as sp

from tabprotect.secondary.attack_requirements import Requirements


def initial_cover_rows(table, req: Requirements, cand: np.ndarray, fixed: np.ndarray):
    """For each primary s and relation containing it: another cell must be suppressed
    (one other than a single-contributor cell j, too).  Returned as cuts over cells."""
    A = table.relations.tocsr()
    AT = A.T.tocsr()
    useful = (cand | fixed) & ((req.up > 0) | (req.down > 0))
    cols_l, coef_l, rhs_l, prim_l = [], [], [], []
    seen = set()
    for p, s in enumerate(req.primary):
        if req.need_up[p] <= 0 and req.need_down[p] <= 0 and req.need_width[p] <= 0:
            continue
        for r in AT.indices[AT.indptr[s]:AT.indptr[s + 1]]:
            cells = A.indices[A.indptr[r]:A.indptr[r + 1]]
            others = cells[(cells != s) & useful[cells]]
            excl = [-1] + [int(j) for j in others[req.singleton[others]]
                           if req.attacks(int(j), int(s))]
            for j in excl:
                cl = others[others != j]
                key = (tuple(cl.tolist()))
                if key in seen:
                    continue
                seen.add(key)
                cols_l.append(cl)
                coef_l.append(np.ones(len(cl)))
                rhs_l.append(1.0)
                prim_l.append(int(s))
    return cols_l, coef_l, rhs_l, prim_l


#: relative slack of a rounded cut's right-hand side: the master accepts rows met up to
#: 1e-9, and the attacker's tolerance is 1e-7 (a pattern just below 1 must stay feasible)
ROUNDING_SLACK = 1e-6


def rounded_cut(a: np.ndarray, x: np.ndarray, tries: int = 12) -> np.ndarray | None:
    """The best Chvatal-Gomory rounding of a capacity cut ``a @ z >= 1`` at point ``x``.

    For ``z`` binary and any ``k > 0``, ``sum ceil(k a_i) z_i >= ceil(k)`` is valid
    (``ceil(k a_i) >= k a_i`` and the left side is an integer).  Divided by ``ceil(k)``
    it is stronger than the original wherever ``ceil(k a_i) / ceil(k) < a_i``: with
    ``a_i = 0.4`` and ``k = 2.5`` three such cells are needed (coefficient 1/3), which the
    LP relaxation of the original cut does not see.  The multipliers tried are ``k = t /
    a_j`` for (at most ``tries / 2``) distinct fractional coefficients ``a_j`` and ``t =
    1, 2``; the one the point violates most is returned when it beats the original cut.

    Examples
    --------
    >>> rounded_cut(np.array([0.4, 0.4, 0.4]), np.array([0.9, 0.9, 0.6])).round(4).tolist()
    [0.3333, 0.3333, 0.3333]
    """
    frac = np.unique(np.round(a[(a < 1.0 - 1e-9) & (a > 1e-9)], 9))
    if len(frac) == 0:
        return None
    if len(frac) > tries // 2:
        # the coefficients the point uses most decide the violation
        weight = np.array([x[np.abs(a - v) < 1e-9].sum() for v in frac])
        frac = frac[np.argsort(-weight)[: tries // 2]]
    best, best_lhs = None, float(a @ x) - 1e-6
    for v in frac:
        for t in (1.0, 2.0):
            k = t / v
            rhs = np.ceil(k * (1.0 - ROUNDING_SLACK))
            if rhs < 2:
                continue
            cand = np.ceil(k * a - 1e-12) / rhs
            cand = np.where(a > 0, np.maximum(cand, 0.0), 0.0)
            lhs = float(cand @ x)
            if lhs < best_lhs:
                best, best_lhs = np.minimum(cand, 1.0), lhs
    return best


#: a cover's complement must stay this far below 1 (the cut rows hold up to 1e-9, the
#: attacker's tolerance is 1e-7)
COVER_SLACK = 1e-6


def cover_cuts(R: sp.csr_matrix, x: np.ndarray, *, max_cuts: int = 50,
               min_violation: float = 1e-3) -> list[tuple[int, np.ndarray]]:
    """Set-cover cuts implied by capacity cuts ``a @ z >= 1`` (rows of ``R``, ``a <= 1``).

    For binary ``z``, a set ``T`` with ``sum_{i in T} a_i < 1`` cannot meet the cut alone,
    so some other cell of the support must be suppressed: ``sum_{i in S \\ T} z_i >= 1``
    (``S`` the support).  At a fractional ``x`` the complement ``T`` is chosen greedily
    (cells by decreasing ``x_i / a_i`` while ``a(T)`` stays below 1), which removes as
    much of ``x`` from the left side as the knapsack allows.  Returns (row of ``R``,
    column set) of the cuts violated by at least ``min_violation``, most violated first,
    at most ``max_cuts``.

    Examples
    --------
    >>> R = sp.csr_matrix(np.array([[1.0, 0.4, 0.4, 0.4]]))
    >>> [(r, c.tolist()) for r, c in cover_cuts(R, np.array([0.5, 0.42, 0.42, 0.42]))]
    [(0, [0, 3])]
    """
    out, viol = [], []
    # T holds only cells with a_i < 1, so x over the other cells bounds the cut's left
    # side from below: rows where that already reaches 1 - min_violation give no cut
    small = (R.data < 1.0 - 1e-9).astype(float)
    S = sp.csr_matrix((small, R.indices, R.indptr), shape=R.shape)
    L = sp.csr_matrix((1.0 - small, R.indices, R.indptr), shape=R.shape)
    maybe = (S @ np.ones(R.shape[1]) > 0) & (L @ x < 1.0 - min_violation)
    for r in np.flatnonzero(maybe).tolist():
        lo, hi = R.indptr[r], R.indptr[r + 1]
        idx, a = R.indices[lo:hi], R.data[lo:hi]
        xi = x[idx]
        small = np.flatnonzero(a < 1.0 - 1e-9)
        if len(small) == 0:
            continue
        order = small[np.argsort(-xi[small] / a[small], kind="stable")]
        room = np.cumsum(a[order]) < 1.0 - COVER_SLACK
        t = order[room] if room.all() else order[: int(np.argmin(room))]
        if len(t) == 0:
            continue
        lhs = float(xi.sum() - xi[t].sum())
        if lhs < 1.0 - min_violation:
            keep = np.ones(len(idx), bool)
            keep[t] = False
            out.append((r, idx[keep]))
            viol.append(lhs)
    order = np.argsort(viol, kind="stable")[:max_cuts]
    return [out[i] for i in order]


def reduce_candidates(table, req: Requirements, cand: np.ndarray,
                       fixed: np.ndarray) -> np.ndarray:
    """Candidates that can ever move: a cell alone (among the cells that may be
    unpublished and can move) in one of its relations is pinned by it in every pattern,
    so suppressing it changes no attacker problem and only costs.  Repeated to a fixed
    point, since dropping a cell can leave another one alone.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> t = Table.from_arrays({"x": Hierarchy.flat(["a", "b"], total="T")}, [3, 1, 2])
    >>> t = t.replace(status=np.array(["P", "U", "S"]), upl=np.array([0.0, 1.0, 0.0]))
    >>> req = Requirements.from_table(t)
    >>> reduce_candidates(t, req, t.status == "S", t.status == "U").tolist()
    [False, False, True]
    """
    A = table.relations.tocsr()
    movable = (req.up > 0) | (req.down > 0)
    alive = (cand | fixed) & movable
    out = cand & movable
    for _ in range(1000):
        per_rel = np.asarray(A.multiply(A) @ alive.astype(float)).ravel()
        # a cell whose relation holds no other live cell: that relation pins it
        lonely_rel = per_rel <= 1.0 + 1e-9
        Acoo = A.tocoo()
        hit = lonely_rel[Acoo.row] & alive[Acoo.col]
        drop = np.zeros(table.n_cells, bool)
        drop[Acoo.col[hit]] = True
        drop &= out
        if not drop.any():
            break
        out &= ~drop
        alive &= ~drop
    return out


class BridgelessRows:
    """Rows ``sum_{j in r, j != i} z_j - z_i >= 0`` over the candidates (``col`` maps a
    cell to its master column, -1 for none): a suppressed cell alone in one of its
    relations is pinned there, so dropping it keeps every attacker problem unchanged
    and saves its (positive) cost; every optimal pattern meets these rows.  Relations
    holding a fixed (always unpublished) movable cell besides ``i`` are met anyway.
    One row per (candidate, relation) pair, ordered by candidate, then relation.

    The rows stay implicit: a row holds every live cell of its relation, so on tables
    with long relations the explicit matrix has (pairs x relation length) entries while
    the master holds only the few rows a point violates.  ``rows @ zc`` evaluates every
    row from one product with the relation-by-candidate pattern; ``rows[idx]`` builds
    the rows asked for.  Rows appended by :meth:`stacked` (support cuts) are explicit.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> t = Table.from_arrays({"x": Hierarchy.flat(["a", "b", "c"], total="T")},
    ...                       [6, 1, 2, 3])
    >>> col = np.array([-1, 0, 1, 2]); live = np.array([False, True, True, True])
    >>> rows = BridgelessRows(t, col, np.zeros(4, bool), live)
    >>> rows[np.arange(rows.shape[0])].toarray().tolist()
    [[-1.0, 1.0, 1.0], [1.0, -1.0, 1.0], [1.0, 1.0, -1.0]]
    >>> (rows @ np.array([1.0, 0.0, 0.0])).tolist()
    [-1.0, 1.0, 1.0]
    """

    def __init__(self, table, col: np.ndarray, fixed: np.ndarray, live: np.ndarray):
        A = table.relations.tocsr().copy()
        A.eliminate_zeros()
        k = int((col >= 0).sum())
        pattern = (A != 0).astype(float).tocsr()
        n_fixed = pattern @ fixed.astype(float)
        AT = A.T.tocsr()
        AT.sort_indices()
        pi = np.repeat(np.arange(AT.shape[0]), np.diff(AT.indptr))  # cell of each pair
        pr = AT.indices                                               # relation of each pair
        # a candidate is never fixed, so any fixed movable cell of r meets the row
        use = (col[pi] >= 0) & (n_fixed[pr] < 0.5)
        self.pi, self.pr = pi[use], pr[use]
        self.col = col
        # the relations' live cells (candidates that can move) by master column
        live_pat = pattern.multiply(live[None, :].astype(float)).tocsr()
        live_pat.eliminate_zeros()
        live_pat.sort_indices()
        self.live_cells = live_pat
        self.by_column = sp.csr_matrix(
            (live_pat.data, col[live_pat.indices], live_pat.indptr), shape=(A.shape[0], k))
        # z_i itself is one of its relation's live cells when i is live
        self.own = 1.0 + live[self.pi].astype(float)
        self.extra = sp.csr_matrix((0, k))
        self.n_implicit = len(self.pi)
        self.shape = (self.n_implicit, k)

    def stacked(self, R: sp.csr_matrix) -> "BridgelessRows":
        """These rows with the explicit rows ``R`` appended (a shallow copy)."""
        out = copy.copy(self)
        out.extra = sp.vstack([self.extra, R]).tocsr()
        out.shape = (self.n_implicit + out.extra.shape[0], self.shape[1])
        return out

    def __matmul__(self, zc: np.ndarray) -> np.ndarray:
        zc = np.asarray(zc, dtype=float)
        lhs = (self.by_column @ zc)[self.pr] - self.own * zc[self.col[self.pi]]
        if self.extra.shape[0]:
            lhs = np.concatenate([lhs, self.extra @ zc])
        return lhs

    def __getitem__(self, idx) -> sp.csr_matrix:
        idx = np.asarray(idx, dtype=np.int64)
        inner = idx < self.n_implicit
        if inner.all():
            return self._rows(idx)
        out = sp.vstack([self._rows(idx[inner]),
                         self.extra[idx[~inner] - self.n_implicit]]).tocsr()
        # back into the order asked for
        where = np.concatenate([np.flatnonzero(inner), np.flatnonzero(~inner)])
        return out[np.argsort(where, kind="stable")]

    def _rows(self, idx: np.ndarray) -> sp.csr_matrix:
        """Rows ``idx`` built as CSR arrays directly (a COO build's conversion costs
        more than the rows): each row is its relation's live cells with 1, the cell
        ``i`` itself with -1 in its place, or appended when ``i`` is not live."""
        k = self.shape[1]
        if len(idx) == 0:
            return sp.csr_matrix((0, k))
        pi, pr, L = self.pi[idx], self.pr[idx], self.live_cells
        size = np.diff(L.indptr)[pr]
        first = L.indptr[pr]
        own_live = self.own[idx] > 1.5     # i is one of its relation's live cells
        length = size + ~own_live
        indptr = np.zeros(len(idx) + 1, dtype=np.int64)
        np.cumsum(length, out=indptr[1:])
        n = int(indptr[-1])
        row = np.repeat(np.arange(len(idx)), length)
        offset = np.arange(n) - indptr[row]
        inside = offset < size[row]          # an entry of the relation's live cells
        cell = np.where(inside, L.indices[np.where(inside, first[row] + offset, 0)],
                        pi[row])
        vals = np.where(cell == pi[row], -1.0, 1.0)
        return sp.csr_matrix((vals, self.col[cell], indptr), shape=(len(idx), k))
