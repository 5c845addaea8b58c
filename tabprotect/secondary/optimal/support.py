"""Support cuts: the bridgeless rows of the master generalised to combinations of
relations, separated by one LP per candidate cell."""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram
from tabprotect.secondary.optimal.oracle import DUAL_SIMPLEX
from tabprotect.secondary.attack_requirements import Requirements


class SupportSeparator:
    """Support cuts: the bridgeless rows generalised from single relations to every
    combination of them.

    For multipliers ``lam`` on the relations let ``r = e_i - A' lam`` with ``r_i = 0``;
    every deviation vector (``A y = 0``) then has ``y_i = sum_{j != i} r_j y_j``, so a
    suppressed cell ``i`` whose support set ``S = {j != i: r_j != 0}`` is wholly
    published cannot move: the attacker knows it exactly.  Publishing it again changes
    no attacker problem (its deviation was 0 anyway) and saves its cost, so an optimal
    pattern (with positive costs; with zero costs: some optimal pattern) meets

        sum_{j in S} z_j >= z_i.

    A relation's own support gives the bridgeless row; combinations cancel cells and
    give new rows.  Separation: for a fractional ``z`` and cell ``i``, the LP ``max
    y_i`` with ``y_i`` free, ``A y = 0``, ``|y_j| <= z_j`` gives multipliers whose
    support set is checked (only the support counts: any level > 0 is enough).
    Cells that can never move and always-published cells leave ``S`` (their ``z`` is
    0); a cut with a fixed suppressed cell in ``S`` is met.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> t = t.replace(status=np.array(list("SSSSUSSSS")), upl=np.eye(9)[4])
    >>> req = Requirements.from_table(t)
    >>> sep = SupportSeparator(t, req, t.status == "S", t.status == "U")
    >>> z = np.where(t.status == "U", 1.0, 0.0); z[[5, 7]] = 1.0  # (1,b) and (2,a)
    >>> R, n_lp = sep.separate(z, min_z=0.5, max_lps=10)
    >>> R.shape[0] > 0   # (1,b) can only move with (2,b) or (T,b) suppressed as well
    True
    """

    def __init__(self, table, req: Requirements, cand: np.ndarray, fixed: np.ndarray):
        self.A = table.relations.tocsr()
        self.AT = self.A.T.tocsr()
        live = (req.up > 0) | (req.down > 0)
        self.cand = cand & live
        self.fixed = fixed & live
        self.col = np.full(table.n_cells, -1, np.int64)
        cidx = np.flatnonzero(cand)
        self.col[cidx] = np.arange(len(cidx))
        self.n_cols = len(cidx)
        self.seen: set = set()

    def separate(self, z: np.ndarray, *, min_z: float, max_lps: int,
                 deadline: float | None = None, cells: np.ndarray | None = None,
                 min_violation: float = 1e-3):
        """Violated support cuts at ``z`` (over all cells): a CSR matrix over the master
        columns (rows ``R @ z >= 0``) and the number of attacker LPs solved.  Only
        candidates with ``z >= min_z`` are tried (at most ``max_lps``), and a cut is kept
        when ``z`` violates it by more than ``min_violation``."""
        z = np.where(self.cand, np.clip(z, 0.0, 1.0), 0.0)
        z[self.fixed] = 1.0
        on = np.flatnonzero((z > 1e-9))
        targets = np.flatnonzero(self.cand & (z >= min_z))
        if cells is not None:
            targets = np.intersect1d(targets, cells)
        targets = targets[np.argsort(-z[targets], kind="stable")][:max_lps]
        empty = sp.csr_matrix((0, self.n_cols))
        if len(targets) == 0:
            return empty, 0
        sub = self.A[:, on].tocsr()
        rows = np.flatnonzero(np.diff(sub.indptr) > 0)
        lp = LinearProgram(c=np.zeros(len(on)), A=sub[rows], row_lower=np.zeros(len(rows)),
                           row_upper=np.zeros(len(rows)), col_lower=-z[on], col_upper=z[on])
        model = HighsModel(lp, simplex_strategy=DUAL_SIMPLEX)
        local = np.full(len(z), -1, np.int64)
        local[on] = np.arange(len(on))
        out_r, out_c, out_v = [], [], []
        n_out = n_lp = 0
        for i in targets:
            if deadline is not None and time.perf_counter() >= deadline:
                break
            k = int(local[i])
            model.set_col_bounds([k], -np.inf, np.inf)
            model.set_objective(indices=[k], values=[1.0], sense="max")
            try:
                res = model.solve()
            except RuntimeError:
                res = None
            model.set_col_bounds([k], -z[i], z[i])
            n_lp += 1
            if res is None or res.status != "optimal" or res.duals is None:
                continue
            if res.objective >= z[i] - min_violation:
                continue  # the cut from these multipliers is no more violated than this
            lam = np.zeros(self.A.shape[0])
            lam[rows] = res.duals
            r = -(self.AT @ lam)
            r[i] += 1.0
            if abs(r[i]) > 1e-6:  # y_i free: its reduced cost is 0 at an optimum
                continue
            # a tiny r_j is kept in S (a weaker cut), never dropped as zero
            scale = max(1.0, float(np.abs(r).max()))
            S = np.flatnonzero(np.abs(r) > 1e-11 * scale)
            S = S[S != i]
            if self.fixed[S].any():
                continue
            S = S[self.cand[S]]
            if z[S].sum() >= z[i] - min_violation:
                continue
            key = (int(i), S.tobytes())
            if key in self.seen:
                continue
            self.seen.add(key)
            out_r.append(np.full(len(S) + 1, n_out))
            out_c.append(np.concatenate([self.col[S], [self.col[i]]]))
            out_v.append(np.concatenate([np.ones(len(S)), [-1.0]]))
            n_out += 1
        if n_out == 0:
            return empty, n_lp
        R = sp.csr_matrix((np.concatenate(out_v), (np.concatenate(out_r),
                                                   np.concatenate(out_c))),
                          shape=(n_out, self.n_cols))
        return R, n_lp
