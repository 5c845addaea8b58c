"""The Benders master: a HiGHS model over the candidate cells' ``z`` with the cut pool.

Every cut found is kept in a pool (scaled to right-hand side 1); only some pool cuts are
rows of the HiGHS model at a time -- slack rows make every master solve slower, and a
pool cut comes back when a master point violates it.  The static (bridgeless) rows can
be lazy the same way: a static row enters the model when a master point violates it.
"""
from __future__ import annotations

import highspy
import numpy as np
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram
from tabprotect.secondary.optimal.cuts import BridgelessRows, rounded_cut
from tabprotect.secondary.optimal.options import OptimalOptions

#: HiGHS' basis status of a basic variable (or slack), as an integer
BASIC = int(highspy.HighsBasisStatus.kBasic)


class SavedBasis:
    """A simplex basis of the master model, kept as HiGHS' own copy: reading its
    column statuses into Python costs as much as the node LP it warm-starts, and only
    its rows ever change (appended cuts, purged ones).

    ``basis``: the HiGHS basis over ``n_cols`` columns and the model's rows of the time
    (or of the last :meth:`extend_rows` / :meth:`keep_rows`)."""

    def __init__(self, basis, n_cols: int):
        self.basis = basis
        self.n_cols = n_cols

    def extend_rows(self, m: int) -> bool:
        """Rows up to ``m`` appended with their slack basic (the model's rows added
        since are all cuts, appended); False when the basis has more rows than that."""
        rows = self.basis.row_status
        if len(rows) > m:
            return False
        if len(rows) < m:
            self.basis.row_status = rows + [highspy.HighsBasisStatus.kBasic] * (m - len(rows))
        return True

    def keep_rows(self, keep: np.ndarray) -> bool:
        """Drop the rows the model deleted (``keep``: the mask over the model's old
        rows, covering at least the basis' rows); False, and the basis is no longer
        usable, when a deleted row's slack was nonbasic (the basis would not be
        square)."""
        rows = self.basis.row_status
        kept = keep[: len(rows)]
        status = np.fromiter((v.value for v in rows), np.int8, len(rows))
        if np.any(status[~kept] != BASIC):
            return False
        self.basis.row_status = [rows[i] for i in np.flatnonzero(kept).tolist()]
        return True


class Unprotectable(Exception):
    """A cut no candidate cell can meet: some primary cannot be protected."""

    def __init__(self, cells, primary: int = -1):
        super().__init__("no candidate cell can help")
        self.cells = cells
        self.primary = primary


def unprotectable_message(table, primary: int) -> str:
    """The user's one line for an :class:`Unprotectable` cut, naming its primary cell."""
    which = f"primary cell {table.cell_name(primary)}" if primary >= 0 else "a primary cell"
    return (f"{which} cannot be protected: no cell that may be suppressed can give it its "
            f"protection (cells with status P, empty cells and cells with lb == ub are never "
            f"suppressed)")


class Master:
    """The Benders master: a HiGHS MILP over the candidate cells' z, plus cuts."""

    def __init__(self, cost_c: np.ndarray, n_cells: int, cand_idx: np.ndarray,
                 fixed: np.ndarray, mip_gap: float | None, options: OptimalOptions,
                 static: BridgelessRows | sp.csr_matrix | None = None,
                 lazy_static: bool = False):
        self.options = options
        self.cand = cand_idx
        # rows ``static @ z >= 0`` (bridgeless inequalities), in every model unless lazy
        self.static = static if static is not None else sp.csr_matrix((0, len(cand_idx)))
        self.col = np.full(n_cells, -1, dtype=np.int64)
        self.col[cand_idx] = np.arange(len(cand_idx))
        self.fixed = fixed
        k = len(cand_idx)
        lp = LinearProgram(c=cost_c, A=None, row_lower=[], row_upper=[],
                           col_lower=np.zeros(k), col_upper=np.ones(k),
                           integrality=np.ones(k, bool))
        self.k = k
        self.n_static = self.static.shape[0]
        # static rows held by the model (all unless lazy: then those a point violated);
        # HiGHS' re-solve cost grows with the rows, and most static rows never bind
        self.static_in = np.full(self.n_static, not lazy_static)
        self.n_cuts = 0
        self.cost = cost_c
        self.mip_gap = mip_gap
        self.seen: set = set()  # rows already in the pool (no duplicate cuts)
        # the cut pool: every cut ever found (scaled to rhs 1); only some are rows of the
        # HiGHS model -- slack cuts make each master MILP slower and are re-added only
        # when a master solution violates them
        self.pool: list[sp.csr_matrix] = []
        self._pool_csr: sp.csr_matrix | None = None
        self.in_model = np.zeros(0, bool)
        # primary cell of each pool row (-1: none), for separation restricted to the
        # primaries whose cuts bind at a node's LP point
        self.pool_primary = np.zeros(0, np.int64)
        self.model_rows: list[int] = []  # pool index of each model row
        self.n_support = 0  # support cuts appended to the model (and to static)
        self.n_general = 0  # Gomory cuts appended to the model
        self.general: list = []  # and those rows themselves, (R, rhs) per round
        self._integer = True
        self._new_model(lp)

    def _new_model(self, lp) -> None:
        # threads: HiGHS fixes its thread pool at the first run in the process and then
        # rejects a different 'threads' value with an error status, so it is not passed
        self.model = HighsModel(lp, mip_gap=self.mip_gap)
        perturbation = self.options.master_cost_perturbation
        if perturbation is not None:
            self.model.highs.setOptionValue("dual_simplex_cost_perturbation_multiplier",
                                            float(perturbation))
        # pool index of every model row, -1 for rows outside the pool (bridgeless,
        # support and Gomory rows): what a purge may delete
        held = np.flatnonzero(self.static_in)
        self.row_pool: list[int] = [-1] * len(held)
        if len(held):
            self.model.add_rows(self.static[held], np.zeros(len(held)),
                                np.full(len(held), np.inf))
        # keep the improving solutions of each MIP run: each is a pattern to check
        try:
            self.model.highs.setOptionValue("mip_improving_solution_save", True)
        except Exception:  # other HiGHS versions: only the final solution is checked
            pass

    def saved_patterns(self, final: np.ndarray, limit: int) -> list[np.ndarray]:
        """Distinct rounded improving solutions of the last MIP run, besides ``final``."""
        try:
            saved = self.model.highs.getSavedMipSolutions()
        except Exception:
            return []
        out, keys = [], {final.tobytes()}
        for sol in list(saved)[::-1]:
            x = np.asarray(sol.col_value, dtype=float)[: self.k]
            if len(x) != self.k:
                continue
            zc = np.round(x).astype(bool)
            if zc.tobytes() in keys:
                continue
            keys.add(zc.tobytes())
            out.append(zc)
            if len(out) >= limit:
                break
        return out

    @property
    def pool_matrix(self) -> sp.csr_matrix:
        if self._pool_csr is None or self._pool_csr.shape[0] != len(self.in_model):
            self._pool_csr = (sp.vstack(self.pool).tocsr() if self.pool
                              else sp.csr_matrix((0, self.k)))
            self.pool = [self._pool_csr]
        return self._pool_csr

    def add(self, cols_list, coef_list, rhs_list, point: np.ndarray | None = None,
            primaries=None) -> int:
        """Add cuts given over cell indices; fixed cells move to the right-hand side.

        With ``point`` (the master's current z over the candidates) each cut's integer
        rounding (:func:`~tabprotect.secondary.optimal.cuts.rounded_cut`) is added too
        when the point violates it more.
        """
        rows, cols, vals, prim = [], [], [], []
        r = 0
        if primaries is None:
            primaries = [-1] * len(rhs_list)
        for cols_c, coef_c, rhs, s in zip(cols_list, coef_list, rhs_list, primaries):
            fixed_part = coef_c[self.fixed[cols_c]].sum()
            # met by the fixed cells up to the attacker's relative tolerance
            if rhs - fixed_part <= 1e-7 * rhs:
                continue
            rhs = rhs - fixed_part
            c = self.col[cols_c]
            keep = c >= 0
            # a valid cut that every candidate suppressed cannot meet: no pattern does
            if not keep.any() or np.minimum(coef_c[keep], rhs).sum() < rhs * (1 - 1e-6):
                raise Unprotectable(cols_c, int(s))
            variants = [np.minimum(coef_c[keep], rhs) / rhs]
            if point is not None:
                better = rounded_cut(variants[0], point[c[keep]], self.options.rounding_tries)
                if better is not None:
                    variants.append(better)
            for a in variants:
                key = (c[keep].tobytes(), np.round(a, 9).tobytes())
                if key in self.seen:
                    continue
                self.seen.add(key)
                # scaled to rhs 1 for a well-conditioned master
                nzc = a > 0
                rows.append(np.full(int(nzc.sum()), r))
                cols.append(c[keep][nzc])
                vals.append(a[nzc])
                prim.append(int(s))
                r += 1
        if r == 0:
            return 0
        R = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                          shape=(r, self.k))
        start = len(self.in_model)
        self.pool.append(R)
        self.in_model = np.concatenate([self.in_model, np.ones(r, bool)])
        self.pool_primary = np.concatenate([self.pool_primary, np.asarray(prim, np.int64)])
        self._add_to_model(R, np.arange(start, start + r))
        self.n_cuts += r
        return r

    def _add_to_model(self, R, pool_idx) -> None:
        # a cut is only valid for binary z as a whole; nothing is rounded down
        self.model.add_rows(R, np.full(R.shape[0], 1.0 - 1e-9), np.full(R.shape[0], np.inf))
        self.model_rows.extend(int(i) for i in pool_idx)
        self.row_pool.extend(int(i) for i in pool_idx)

    def rebuild(self, keep_pool_idx: np.ndarray) -> None:
        """A fresh model holding only the given pool rows (the rest stay in the pool)."""
        keep_pool_idx = np.unique(keep_pool_idx)
        lp = LinearProgram(c=self.cost, A=None, row_lower=[], row_upper=[],
                           col_lower=np.zeros(self.k), col_upper=np.ones(self.k),
                           integrality=np.full(self.k, self._integer))
        self._new_model(lp)
        self.model_rows = []
        self.in_model[:] = False
        if len(keep_pool_idx):
            self._add_to_model(self.pool_matrix[keep_pool_idx], keep_pool_idx)
            self.in_model[keep_pool_idx] = True

    def purge(self, zc: np.ndarray, slack: float) -> np.ndarray | None:
        """Delete from the model the pool cuts whose slack at ``zc`` (the current LP
        point, so their slacks are basic) exceeds ``slack``; they stay in the pool.
        HiGHS deletes rows with basic slacks keeping the basis valid.  Returns the mask
        of the old model rows kept (None when nothing was deleted)."""
        keep, _ = self._purged(zc, slack)
        return keep

    def purged_in_place(self, zc: np.ndarray, slack: float) -> bool:
        """:meth:`purge`; False when HiGHS refused to delete the rows (the model is
        unchanged then)."""
        return self._purged(zc, slack)[1]

    def _purged(self, zc: np.ndarray, slack: float) -> tuple[np.ndarray | None, bool]:
        """(:meth:`purge`'s mask, False when HiGHS refused the deletion)."""
        rp = np.asarray(self.row_pool, dtype=np.int64)
        in_pool = np.flatnonzero(rp >= 0)
        if len(in_pool) == 0:
            return None, True
        lhs = self.pool_matrix[rp[in_pool]] @ zc
        drop = in_pool[lhs > 1.0 + slack]
        if len(drop) == 0:
            return None, True
        if not self.model.delete_rows(drop):
            return None, False
        keep = np.ones(len(rp), bool)
        keep[drop] = False
        self.in_model[rp[drop]] = False
        self.row_pool = rp[keep].tolist()
        self.model_rows = [i for i in self.model_rows if self.in_model[i]]
        return keep, True

    def violated_pool_rows(self, zc: np.ndarray, tol: float = 1e-7) -> np.ndarray:
        """Pool cuts outside the model that ``zc`` violates."""
        if len(self.in_model) == 0 or self.in_model.all():
            return np.zeros(0, np.int64)
        lhs = self.pool_matrix @ zc
        return np.flatnonzero((lhs < 1.0 - tol) & ~self.in_model)

    def activate_static(self, zc: np.ndarray, tol: float = 1e-6) -> int:
        """Static rows outside the model that ``zc`` violates join it (appended, so a
        saved basis stays valid); returns how many."""
        if self.static_in.all():
            return 0
        # one product over all rows: cheaper than selecting the held-back rows first
        viol = np.flatnonzero(~self.static_in & (self.static @ zc < -tol))
        if len(viol):
            self.model.add_rows(self.static[viol], np.zeros(len(viol)),
                                np.full(len(viol), np.inf))
            self.row_pool.extend([-1] * len(viol))
            self.static_in[viol] = True
        return len(viol)

    def activate(self, pool_idx: np.ndarray) -> None:
        if len(pool_idx):
            self._add_to_model(self.pool_matrix[pool_idx], pool_idx)
            self.in_model[pool_idx] = True

    def get_basis(self) -> "SavedBasis | None":
        """The model's current simplex basis (None without one)."""
        b = self.model.highs.getBasis()
        if not b.valid:
            return None
        return SavedBasis(b, self.k)

    def set_basis(self, saved: "SavedBasis") -> bool:
        """Restore a basis from :meth:`get_basis`.  Rows added since (cuts only ever
        get appended in the branch-and-cut) enter with their slack basic, which keeps the
        basis square; HiGHS refactorises it and the node's dual simplex starts there."""
        m = self.model.n_rows
        if saved.n_cols != self.k or not saved.extend_rows(m):
            return False
        return self.model.highs.setBasis(saved.basis) != highspy.HighsStatus.kError

    def add_static(self, R: sp.csr_matrix) -> int:
        """Append rows ``R @ z >= 0`` (support cuts) to the model and to ``static``
        (so a rebuilt model keeps them).  Only the branch-and-cut adds them: the
        MILP-rounds search maps model rows after the static ones to pool cuts."""
        if R.shape[0] == 0:
            return 0
        self.model.add_rows(R, np.full(R.shape[0], -1e-9), np.full(R.shape[0], np.inf))
        self.row_pool.extend([-1] * R.shape[0])
        self.static = (self.static.stacked(R) if isinstance(self.static, BridgelessRows)
                       else sp.vstack([self.static, R]).tocsr())
        self.static_in = np.concatenate([self.static_in, np.ones(R.shape[0], bool)])
        self.n_support += R.shape[0]
        return R.shape[0]

    def add_general(self, R: sp.csr_matrix, rhs: np.ndarray) -> int:
        """Append rows ``R @ z >= rhs`` (Gomory cuts) to the model only: they are not
        pool cuts (not scaled to right-hand side 1) and a rebuilt model drops them, so
        only the branch-and-cut, after its root purge, adds them."""
        if R.shape[0] == 0:
            return 0
        self.model.add_rows(R, np.asarray(rhs, float), np.full(R.shape[0], np.inf))
        self.row_pool.extend([-1] * R.shape[0])
        self.n_general += R.shape[0]
        self.general.append((R, np.asarray(rhs, float)))
        return R.shape[0]

    def set_gap(self, gap: float) -> None:
        self.model.highs.setOptionValue("mip_rel_gap", float(gap))

    def relax(self, on: bool) -> None:
        self._integer = not on
        self.model.set_integrality(np.arange(self.k), not on)


def consistent(master: Master, res, zc: np.ndarray) -> bool:
    """The master's rounded solution has the reported objective and meets every model
    row (guards the optimality claim against a solver returning a stale vector)."""
    if res.objective is None:
        return False
    obj = float(master.cost @ zc)
    if abs(obj - float(res.objective)) > 1e-6 * max(1.0, abs(obj)):
        return False
    if master.n_static and ((master.static @ zc.astype(float)) < -1e-6).any():
        return False
    rows = np.asarray(master.model_rows, dtype=np.int64)
    if len(rows) == 0:
        return True
    return bool(((master.pool_matrix[rows] @ zc.astype(float)) >= 1.0 - 1e-6).all())


def mip_bound(master: Master, res) -> float | None:
    """The lower bound a master MILP run proved (None when it proved none)."""
    if res.status == "optimal" and res.objective is not None and res.mip_gap is not None:
        return float(res.objective) * (1 - max(0.0, float(res.mip_gap)))
    try:
        info = master.model.highs.getInfo()
        b = float(info.mip_dual_bound)
        if np.isfinite(b):
            return b
    except Exception:
        pass
    if res.status == "optimal" and res.objective is not None:
        return float(res.objective)
    return None
