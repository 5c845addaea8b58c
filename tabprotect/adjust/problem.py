"""The optimisation model of controlled tabular adjustment, built from a table.

Every movable cell ``i`` has two continuous deviations ``d+_i, d-_i >= 0``; its published
value is ``x_i + d+_i - d-_i``.  The relations ``A`` of the table (one sparse matrix,
columns restricted to the movable cells) must hold for the published values:
``A_m (d+ - d-) = -A x``.  Bounds on the published values are column bounds.  A sensitive
cell ``s`` going up has ``d+_s >= upl_s, d-_s = 0``; going down ``d-_s >= lpl_s,
d+_s = 0``.  The free choice is one binary ``b_s`` (1 = up) with
``upl_s b_s <= d+_s <= M+_s b_s`` and ``lpl_s (1 - b_s) <= d-_s <= M-_s (1 - b_s)``.

Objective: ``sum w_i (d+_i + d-_i)`` (L1) or ``sum w_i (d+_i^2 + d-_i^2)`` (L2, equal to
``sum w_i (d+_i - d-_i)^2`` at every optimum, where one of the two is 0).  The L2 model of
fixed directions has one free change ``d_i`` per movable cell instead (objective
``sum w_i d_i^2``): the split pair is degenerate, and HiGHS' QP solver can fail on it.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from solvers import LinearProgram
from tabprotect.adjust.options import CTAOptions
from tabprotect.errors import InputError
from tabprotect.model.table import Table

#: additivity residual of the relations among fixed cells tolerated, relative to
#: max(1, the relation's largest |value|)
FIXED_RELATION_TOL = 1e-6
#: with ``loose_caps``, a movable cell's bound farther than this many times the largest
#: protection level is left out of the model (HiGHS' QP solver fails on degenerate
#: problems with bounds of 1e8 and weights of 1e-7, as in Castro's TABLE3); the caller
#: checks the solution against every bound and solves again with all of them when one
#: is broken
LOOSE_CAP_FACTOR = 10.0


def fixed_cells(table: Table, *, fix_totals: bool, fix_empty: bool) -> np.ndarray:
    """The cells whose published value is their true value: status P (already published),
    lb == ub, empty cells (``fix_empty``) and every relation's total (``fix_totals``)."""
    fixed = (table.status == "P") | (table.lb >= table.ub)
    if fix_empty:
        fixed |= table.status == "Z"
    if fix_totals:
        fixed |= ~table.is_inner
    return fixed


def deviation_caps(table: Table, fixed: np.ndarray, *, bounds: str,
                   max_change: float | None) -> tuple[np.ndarray, np.ndarray]:
    """How far each cell may move up and down (0 for fixed cells, inf: no bound)."""
    x = table.value
    if bounds == "table":
        up, down = table.ub - x, x - table.lb
    else:
        up, down = np.full(len(x), np.inf), np.full(len(x), np.inf)
    if max_change is not None:
        reach = np.where(table.status == "U", np.inf, max_change * np.abs(x))
        up, down = np.minimum(up, reach), np.minimum(down, reach)
    up = np.where(fixed, 0.0, np.maximum(up, 0.0))
    down = np.where(fixed, 0.0, np.maximum(down, 0.0))
    return up, down


class CTAProblem:
    """The CTA model of one table (in the units it is solved in).

    Attributes
    ----------
    x : values; cols : the movable cells (variables ``j`` and ``m + j`` are ``d+`` and
    ``d-`` of cell ``cols[j]``); sensitive : the sensitive cells (cell indices);
    sens_col : their variable positions; up_level, down_level : what each needs (the
    levels times ``stretch``, the secret margin, within the cell's bounds; whole
    numbers with ``integer``); can_up, can_down : which directions its bounds allow;
    weight : per movable cell, divided by ``unit`` (objectives are in these units)
    """

    def __init__(self, table: Table, weights: np.ndarray, options: CTAOptions,
                 loose_caps: bool = False, stretch: np.ndarray | None = None):
        self.options = options
        self.table = table
        x = table.value
        self.x = x
        fixed = fixed_cells(table, fix_totals=options.fix_totals,
                            fix_empty=options.fix_empty)
        up_cap, down_cap = deviation_caps(table, fixed, bounds=options.bounds,
                                          max_change=options.max_change)
        sens = np.flatnonzero((table.status == "U") & ((table.upl > 0) | (table.lpl > 0)))
        pinned = sens[fixed[sens]]
        if len(pinned):
            raise InputError(f"cta: sensitive cell {table.cell_name(int(pinned[0]))} is "
                             f"fixed (status P, lb = ub, or a total with fix_totals) and "
                             f"cannot be adjusted ({len(pinned)} such cell(s))")
        self.cols = np.flatnonzero(~fixed)
        self.m = len(self.cols)
        where = np.full(len(x), -1, dtype=np.int64)
        where[self.cols] = np.arange(self.m)
        self.sensitive = sens
        self.sens_col = where[sens]
        up_level, down_level = table.upl[sens], table.lpl[sens]
        if stretch is not None:   # the secret margin, where the cell's bounds allow it
            up_level = np.maximum(up_level, np.minimum(up_level * stretch[sens],
                                                       up_cap[sens]))
            down_level = np.maximum(down_level, np.minimum(down_level * stretch[sens],
                                                           down_cap[sens]))
        if options.integer:
            up_level, down_level = np.ceil(up_level - 1e-9), np.ceil(down_level - 1e-9)
        self.up_level, self.down_level = up_level, down_level
        self.true_up_cap, self.true_down_cap = up_cap[self.cols], down_cap[self.cols]
        self.up_cap, self.down_cap = self.true_up_cap, self.true_down_cap
        self.loose = False
        if loose_caps and len(sens):
            far = LOOSE_CAP_FACTOR * float(max(table.upl[sens].max(), table.lpl[sens].max()))
            if (self.up_cap > far).any() or (self.down_cap > far).any():
                self.up_cap = np.where(self.up_cap > far, np.inf, self.up_cap)
                self.down_cap = np.where(self.down_cap > far, np.inf, self.down_cap)
                self.loose = True
        self.can_up = up_cap[sens] >= self.up_level
        self.can_down = down_cap[sens] >= self.down_level
        stuck = np.flatnonzero(~self.can_up & ~self.can_down)
        if len(stuck):
            raise InputError(f"cta: sensitive cell {table.cell_name(int(sens[stuck[0]]))} "
                             f"can move by its protection level in neither direction "
                             f"within its bounds ({len(stuck)} such cell(s))")
        weight = np.asarray(weights, dtype=float)[self.cols]
        top = float(weight.max()) if self.m else 1.0
        #: the weights are solved divided by this power of two (largest movable one
        #: near 1: HiGHS' QP solver stalls on tiny Hessian entries)
        self.unit = 2.0 ** math.floor(math.log2(top)) if top > 0 else 1.0
        self.weight = weight / self.unit
        self._relations(table.relations, x)

    def _relations(self, A: sp.csr_matrix, x: np.ndarray) -> None:
        """``A_m (d+ - d-) = -A x`` over the relations that hold a movable cell; the
        others must already hold among their fixed cells."""
        resid = -(A @ x)
        Am = A[:, self.cols].tocsr()
        live = np.diff(Am.indptr) > 0
        scale = np.maximum(1.0, abs(A).multiply(np.abs(x)[None, :]).max(axis=1).toarray()
                           .ravel()) if A.shape[0] else np.zeros(0)
        broken = np.flatnonzero(~live & (np.abs(resid) > FIXED_RELATION_TOL * scale))
        if len(broken):
            raise InputError(f"cta: relation {int(broken[0])} holds only fixed cells and "
                             f"is not additive ({len(broken)} such relation(s)); no "
                             f"adjustment can repair it")
        self.A = sp.hstack([Am[live], -Am[live]], format="csr")
        # residuals far below the tolerance are rounding noise of an additive table
        self.rhs = np.where(np.abs(resid[live]) <= 1e-12 * scale[live], 0.0, resid[live])

    # ------------------------------------------------------------------ the models
    @property
    def k(self) -> int:
        return len(self.sensitive)

    @property
    def split(self) -> bool:
        """Fixed directions are modelled with ``d+, d-`` (L1), else one ``d`` (L2)."""
        return self.options.distance == "L1"

    def _objective(self) -> tuple[np.ndarray, np.ndarray | None]:
        w2 = np.concatenate([self.weight, self.weight])
        if self.options.distance == "L1":
            return w2, None
        return np.zeros(2 * self.m), 2.0 * w2

    def direction_bounds(self, up: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Column bounds of the fixed-direction model when sensitive cell ``s`` goes up
        where ``up[s]`` (else down)."""
        if not self.split:
            j = self.sens_col
            lo, hi = -self.down_cap.copy(), self.up_cap.copy()
            lo[j] = np.where(up, self.up_level, -self.down_cap[j])
            hi[j] = np.where(up, self.up_cap[j], -self.down_level)
            return lo, hi
        lo = np.zeros(2 * self.m)
        hi = np.concatenate([self.up_cap, self.down_cap])
        j, m = self.sens_col, self.m
        lo[j] = np.where(up, self.up_level, 0.0)
        hi[j] = np.where(up, hi[j], 0.0)
        lo[m + j] = np.where(up, 0.0, self.down_level)
        hi[m + j] = np.where(up, 0.0, hi[m + j])
        return lo, hi

    def fixed_lp(self, up: np.ndarray) -> LinearProgram:
        """The LP (L1) or QP (L2) of one choice of directions."""
        lo, hi = self.direction_bounds(up)
        if not self.split:
            return LinearProgram(c=np.zeros(self.m), A=self.A[:, :self.m],
                                 row_lower=self.rhs, row_upper=self.rhs, col_lower=lo,
                                 col_upper=hi, hessian=2.0 * self.weight)
        c, _ = self._objective()
        integ = np.ones(2 * self.m, dtype=bool) if self.options.integer else None
        return LinearProgram(c=c, A=self.A, row_lower=self.rhs, row_upper=self.rhs,
                             col_lower=lo, col_upper=hi, integrality=integ)

    def cell_bounds(self, s: int, up: bool) -> tuple[list[int], list[float], list[float]]:
        """The columns of sensitive cell ``s`` in the fixed-direction model and their
        bounds for direction ``up``."""
        j, m = int(self.sens_col[s]), self.m
        cap_up, cap_down = float(self.up_cap[j]), float(self.down_cap[j])
        if not self.split:
            return ([j], [float(self.up_level[s])], [cap_up]) if up else \
                ([j], [-cap_down], [-float(self.down_level[s])])
        if up:
            return [j, m + j], [float(self.up_level[s]), 0.0], [cap_up, 0.0]
        return [j, m + j], [0.0, float(self.down_level[s])], [0.0, cap_down]

    def big_m(self, incumbent: float | None) -> tuple[np.ndarray, np.ndarray, str]:
        """Upper bounds ``M+, M-`` on each sensitive cell's deviations in the MILP: its
        bounds, and past them what any solution at most as costly as ``incumbent`` can
        reach (``w d <= F`` for L1, ``w d^2 <= F`` for L2); without either, a multiple of
        the levels (stated in the returned note)."""
        j = self.sens_col
        up, down = self.up_cap[j].copy(), self.down_cap[j].copy()
        note = ""
        if incumbent is not None and np.isfinite(incumbent):
            w = self.weight[j]
            # every other sensitive cell costs at least its cheaper level: what is left
            # of the incumbent for this one
            least = self.least_costs()
            left = np.maximum(incumbent - (least.sum() - least), 0.0) / w
            reach = left if self.options.distance == "L1" else np.sqrt(left)
            reach = 1.001 * reach + 1e-9
            up, down = np.minimum(up, reach), np.minimum(down, reach)
        elif not (np.isfinite(up).all() and np.isfinite(down).all()):
            reach = 10.0 * float(self.up_level.sum() + self.down_level.sum()) \
                + np.abs(self.x[self.sensitive])
            up, down = np.minimum(up, reach), np.minimum(down, reach)
            note = ("without a first solution, a sensitive cell's change in the MILP is "
                    "capped at 10 times the sum of all protection levels plus its value")
        up = np.where(self.can_up, np.maximum(up, self.up_level), 0.0)
        down = np.where(self.can_down, np.maximum(down, self.down_level), 0.0)
        return up, down, note

    def least_costs(self) -> np.ndarray:
        """Each sensitive cell's least share of the distance: its weight times the
        smaller level among the directions its bounds allow (squared for L2)."""
        level = np.minimum(np.where(self.can_up, self.up_level, np.inf),
                           np.where(self.can_down, self.down_level, np.inf))
        power = 1.0 if self.options.distance == "L1" else 2.0
        return self.weight[self.sens_col] * level ** power

    def direction_model(self, m_up: np.ndarray, m_down: np.ndarray,
                        relaxed: bool, linear: bool = False) -> LinearProgram:
        """The model with a direction variable ``b_s`` (1 = up) per sensitive cell
        (columns ``2m .. 2m + k - 1``): binary (the MILP) or in [0, 1] (``relaxed``);
        ``linear``: with the L1 objective whatever the distance."""
        m, k, j = self.m, self.k, self.sens_col
        c, h = self._objective()
        if linear:
            c, h = np.concatenate([self.weight, self.weight]), None
        rows = np.arange(k)
        b = 2 * m + rows
        # d+ - upl b >= 0;  d+ - M+ b <= 0;  d- + lpl b >= lpl;  d- + M- b <= M-
        r = np.concatenate([rows, k + rows, 2 * k + rows, 3 * k + rows] * 2)
        cc = np.concatenate([j, j, m + j, m + j, b, b, b, b])
        v = np.concatenate([np.ones(4 * k), -self.up_level, -m_up, self.down_level, m_down])
        link = sp.csr_matrix((v, (r, cc)), shape=(4 * k, 2 * m + k))
        A = sp.vstack([sp.hstack([self.A, sp.csr_matrix((self.A.shape[0], k))]), link],
                      format="csr")
        inf = np.full(k, np.inf)
        row_lo = np.concatenate([self.rhs, np.zeros(k), -inf, self.down_level, -inf])
        row_hi = np.concatenate([self.rhs, inf, np.zeros(k), inf, m_down])
        lo = np.zeros(2 * m + k)
        hi = np.concatenate([self.up_cap, self.down_cap, np.ones(k)])
        hi[j], hi[m + j] = m_up, m_down
        lo[b] = np.where(self.can_down, 0.0, 1.0)      # only up possible: b = 1
        hi[b] = np.where(self.can_up, 1.0, 0.0)        # only down possible: b = 0
        integ = None
        if not relaxed:
            integ = np.zeros(2 * m + k, dtype=bool)
            integ[b] = True
            if self.options.integer:
                integ[:2 * m] = True
        hess = None if h is None else sp.diags(np.concatenate([h, np.zeros(k)]),
                                               format="csc")
        return LinearProgram(c=np.concatenate([c, np.zeros(k)]), A=A, row_lower=row_lo,
                             row_upper=row_hi, col_lower=lo, col_upper=hi,
                             integrality=integ, hessian=hess)

    def balanced_directions(self, order: np.ndarray) -> np.ndarray:
        """Directions chosen one sensitive cell at a time (in ``order``), each the one
        that leaves the relations' running imbalance (the sum of the chosen changes in
        each relation) smallest: cells of one relation then tend to move in opposite
        directions and compensate each other instead of moving the cells around them."""
        S = self.A[:, self.sens_col].tocsc()
        imbalance = np.zeros(S.shape[0])
        up = self.can_up.copy()
        for s in order:
            rows = S.indices[S.indptr[s]:S.indptr[s + 1]]
            a = S.data[S.indptr[s]:S.indptr[s + 1]]
            now = imbalance[rows]
            if self.can_up[s] and self.can_down[s]:
                rise = np.abs(now + a * self.up_level[s]).sum()
                fall = np.abs(now - a * self.down_level[s]).sum()
                up[s] = rise <= fall
            imbalance[rows] = now + a * (self.up_level[s] if up[s] else -self.down_level[s])
        return up

    def protects(self, net: np.ndarray, up: np.ndarray, tol: float = 1e-9) -> bool:
        """Each sensitive cell's net change reaches its level in direction ``up``."""
        d = net[self.sens_col]
        slack = tol * np.maximum(1.0, np.abs(self.x[self.sensitive]))
        return bool(np.all(np.where(up, d >= self.up_level - slack,
                                    -d >= self.down_level - slack)))

    def within_caps(self, net: np.ndarray, tol: float = 1e-9) -> bool:
        """The net changes keep every bound, the ones left out of the model included."""
        slack = tol * np.maximum(1.0, np.abs(self.x[self.cols]))
        return bool((net <= self.true_up_cap + slack).all()
                    and (-net <= self.true_down_cap + slack).all())

    def net(self, solution: np.ndarray) -> np.ndarray:
        """Each movable cell's net change from a solution vector (``d`` of the L2
        fixed-direction model, ``d+ - d-`` of the others)."""
        if len(solution) == self.m and not self.split:
            return solution.copy()
        return solution[:self.m] - solution[self.m:2 * self.m]

    def objective(self, net: np.ndarray) -> float:
        """The distance of a net change (L1 or L2, weighted)."""
        if self.options.distance == "L1":
            return float(self.weight @ np.abs(net))
        return float(self.weight @ (net * net))
