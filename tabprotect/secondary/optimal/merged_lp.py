"""Attacker LPs with their two-cell rows merged: fewer rows and columns, the same
optimum, and the original LP's optimal duals rebuilt from the merged one's."""
from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram, SolveResult


class PairMergedModel:
    """An attacker LP ``A y = 0``, ``lo <= y <= hi`` with its two-cell rows merged.

    A row with two cells, ``a y_u + b y_v = 0``, says ``y_v = -(a / b) y_u``: one column
    then stands for both, bounded by the intersection of their bounds; chains of such
    rows merge into classes (a spanning tree each, found by breadth-first search; a
    two-cell row that closes a cycle stays a row).  Fewer rows and columns, the same
    optimum.  The original LP's row duals are rebuilt from the merged LP's: the tree
    rows get the multipliers that leave every member of a class with reduced cost 0 but
    the one whose bound is the class's binding bound, which gets the class's reduced
    cost -- complementary slackness with the merged optimum, so these are optimal duals
    of the original LP and the capacity cut from them is as violated as the original
    LP's.  Same interface as :class:`~solvers.HighsModel` for the attacker oracle
    (``set_col_bounds``, ``set_objective``, ``solve`` with ``duals`` over the original
    rows; ``highs`` and :meth:`full_duals` for the raced oracle,
    :class:`~tabprotect.secondary.optimal.oracle.HybridOracle`).

    Examples
    --------
    >>> A = sp.csr_matrix(np.array([[1.0, -1.0, 0.0, 0.0], [1.0, 1.0, -1.0, -1.0]]))
    >>> lp = LinearProgram(c=np.zeros(4), A=A, row_lower=np.zeros(2), row_upper=np.zeros(2),
    ...                    col_lower=-np.ones(4), col_upper=np.array([5.0, 2.0, 9.0, 9.0]))
    >>> m = PairMergedModel(lp)
    >>> m.n_model_cols, m.n_model_rows      # y_0 = y_1 merged, the pair row gone
    (3, 1)
    >>> m.set_objective(indices=[0], values=[1.0], sense="max")
    >>> res = m.solve()
    >>> float(res.objective), res.duals.round(6).tolist()   # y_0 <= 2 through y_1
    (2.0, [1.0, 0.0])
    """

    def __init__(self, lp: LinearProgram, **options):
        A = sp.csr_matrix(lp.A, dtype=float)
        A.sum_duplicates()
        A.eliminate_zeros()
        m, n = A.shape
        self.A, self.AT = A, A.T.tocsr()
        self.n, self.m = n, m
        self.lo = np.array(lp.col_lower, float, copy=True)
        self.hi = np.array(lp.col_upper, float, copy=True)
        pair_rows = np.flatnonzero(np.diff(A.indptr) == 2)
        # adjacency of the two-cell rows: (row, other cell) per cell
        ends = A.indices[A.indptr[pair_rows][:, None] + np.arange(2)]
        vals = A.data[A.indptr[pair_rows][:, None] + np.arange(2)]
        adj: list[list[int]] = [[] for _ in range(n)]
        for t, (u, v) in enumerate(ends.tolist()):
            adj[u].append(t)
            adj[v].append(t)
        # breadth-first spanning forest: y_i = sgn[i] * Y[cls[i]]
        cls = np.full(n, -1, np.int64)
        sgn = np.ones(n)
        depth = np.zeros(n, np.int64)
        parent = np.full(n, -1, np.int64)
        pedge = np.full(n, -1, np.int64)   # tree row linking a cell to its parent
        a_child = np.zeros(n)              # that row's coefficient of the cell
        a_parent = np.zeros(n)             # ... and of its parent
        in_tree = np.zeros(len(pair_rows), bool)
        n_cls = 0
        for root in range(n):
            if cls[root] >= 0:
                continue
            cls[root] = n_cls
            queue = [root]
            for u in queue:
                for t in adj[u]:
                    w = int(ends[t, 1] if ends[t, 0] == u else ends[t, 0])
                    if cls[w] >= 0:
                        continue
                    au, aw = ((vals[t, 0], vals[t, 1]) if ends[t, 0] == u
                              else (vals[t, 1], vals[t, 0]))
                    cls[w] = n_cls
                    sgn[w] = -sgn[u] * au / aw
                    depth[w] = depth[u] + 1
                    parent[w] = u
                    pedge[w] = pair_rows[t]
                    a_child[w], a_parent[w] = aw, au
                    in_tree[t] = True
                    queue.append(w)
            n_cls += 1
        self.cls, self.sgn, self.n_cls = cls, sgn, n_cls
        self.parent, self.pedge, self.a_child, self.a_parent = parent, pedge, a_child, a_parent
        # the tree cells by depth, deepest level first (the dual rebuild's order)
        kids = np.flatnonzero(parent >= 0)
        self.levels = [kids[depth[kids] == d] for d in range(int(depth.max(initial=0)), 0, -1)]
        self.roots = np.flatnonzero(parent < 0)          # one per class, cls order
        size = np.bincount(cls, minlength=n_cls)
        self.size = size
        self.multi = np.flatnonzero(size > 1)
        self.order = np.argsort(cls, kind="stable")      # cells grouped by class
        self.starts = np.concatenate([[0], np.cumsum(size)[:-1]])
        keep = np.ones(m, bool)
        keep[pair_rows[in_tree]] = False
        M = sp.csr_matrix((sgn, (np.arange(n), cls)), shape=(n, n_cls))
        R = (A[keep] @ M).tocsr()
        R.data[np.abs(R.data) <= 1e-12] = 0.0
        R.eliminate_zeros()
        nonempty = np.diff(R.indptr) > 0
        # a kept row that lost every entry (a two-cell row closing a consistent cycle)
        # is redundant: dual 0
        self.model_rows = np.flatnonzero(keep)[nonempty]
        R = R[nonempty]
        L, U = self._class_bounds()
        inner = LinearProgram(c=np.zeros(n_cls), A=R, row_lower=np.zeros(R.shape[0]),
                              row_upper=np.zeros(R.shape[0]), col_lower=L, col_upper=U)
        self.model = HighsModel(inner, **options)
        self.c = np.zeros(n)
        self.last_result = None

    @property
    def highs(self):
        return self.model.highs

    @property
    def n_model_cols(self) -> int:
        return self.n_cls

    @property
    def n_model_rows(self) -> int:
        return len(self.model_rows)

    def _member_bounds(self):
        """Bounds of ``Y[cls[i]]`` implied by cell ``i``'s own bounds."""
        a, b = self.lo / self.sgn, self.hi / self.sgn
        return np.minimum(a, b), np.maximum(a, b)

    def _class_bounds(self):
        lo_m, hi_m = self._member_bounds()
        L = np.maximum.reduceat(lo_m[self.order], self.starts)
        U = np.minimum.reduceat(hi_m[self.order], self.starts)
        return L, U

    def set_col_bounds(self, indices, lower, upper) -> None:
        idx = np.atleast_1d(np.asarray(indices, np.int64))
        self.lo[idx] = lower
        self.hi[idx] = upper
        classes = np.unique(self.cls[idx])
        if len(classes) * 4 >= self.n_cls:
            L, U = self._class_bounds()
            self.model.set_col_bounds(np.arange(self.n_cls), L, U)
            return
        lo_m, hi_m = self._member_bounds()
        L = np.full(len(classes), -np.inf)
        U = np.full(len(classes), np.inf)
        pos = np.searchsorted(classes, self.cls)
        hit = (pos < len(classes)) & (classes[np.minimum(pos, len(classes) - 1)] == self.cls)
        np.maximum.at(L, pos[hit], lo_m[hit])
        np.minimum.at(U, pos[hit], hi_m[hit])
        self.model.set_col_bounds(classes, L, U)

    def forget_basis(self) -> None:
        self.model.forget_basis()

    def set_objective(self, *, indices, values, sense: str = "min") -> None:
        idx = np.atleast_1d(np.asarray(indices, np.int64))
        v = np.broadcast_to(np.asarray(values, float), idx.shape)
        self.c = np.zeros(self.n)
        np.add.at(self.c, idx, v)
        cc = np.zeros(self.n_cls)
        np.add.at(cc, self.cls[idx], v * self.sgn[idx])
        nz = np.flatnonzero(cc)
        self.model.set_objective(indices=nz, values=cc[nz], sense=sense)

    def full_duals(self, row_dual: np.ndarray) -> np.ndarray:
        """The original LP's optimal row duals from the merged LP's (see the class)."""
        lam = np.zeros(self.m)
        lam[self.model_rows] = row_dual
        r = self.c - self.AT @ lam
        # every tree cell passes its reduced cost up to its parent (deepest first): the
        # class's whole reduced cost D ends at its root
        for nodes in self.levels:
            mu = r[nodes] / self.a_child[nodes]
            lam[self.pedge[nodes]] += mu
            r[nodes] = 0.0
            np.add.at(r, self.parent[nodes], -self.a_parent[nodes] * mu)
        if len(self.multi):
            roots = self.roots[self.multi]
            D = r[roots] / self.sgn[roots]
            move = np.flatnonzero(np.abs(D) > 1e-12)
            if len(move):
                lo_m, hi_m = self._member_bounds()
                for t in move:
                    c = self.multi[t]
                    cells = self.order[self.starts[c]:self.starts[c] + self.size[c]]
                    # the member whose bound binds Y: the lowest upper bound when the
                    # objective pushes Y up, the highest lower bound otherwise
                    b = (cells[np.argmin(hi_m[cells])] if D[t] > 0
                         else cells[np.argmax(lo_m[cells])])
                    root = roots[t]
                    bound = hi_m if D[t] > 0 else lo_m
                    if b == root or bound[b] == bound[root]:
                        continue
                    path = [int(b)]
                    while path[-1] != root:
                        path.append(int(self.parent[path[-1]]))
                    # down the path from the root: each step hands the reduced cost on
                    for w in path[-2::-1]:
                        u = self.parent[w]
                        mu = r[u] / self.a_parent[w]
                        lam[self.pedge[w]] += mu
                        r[u] = 0.0
                        r[w] -= self.a_child[w] * mu
        return lam

    def solve(self, time_limit: float | None = None) -> SolveResult:
        res = self.model.solve(time_limit=time_limit)
        x = None if res.x is None else self.sgn * np.asarray(res.x)[self.cls]
        duals = None if res.duals is None else self.full_duals(np.asarray(res.duals, float))
        out = dataclasses.replace(res, x=x, duals=duals, reduced_costs=None)
        self.last_result = out
        return out
