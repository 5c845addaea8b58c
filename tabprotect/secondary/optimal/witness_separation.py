"""Capacity-cut separation that skips the attacker LPs an earlier optimum already meets.

Between separation rounds the point ``z`` moves little, and most protection conditions
stay met: each of them still costs one attacker LP per round.  An earlier attacker
optimum ``w`` for the same primary and direction satisfies ``A w = 0`` whatever the
pattern, so ``t w`` with the largest ``t <= 1`` inside the current (capped) deviation
bounds is a feasible point of the current LP, and ``t * sign * w_s`` is a lower bound on
its optimum.  When that bound already reaches the level, the LP's own duals give no
violated cut (strong duality: the cut's left-hand side at ``z`` is the LP's optimum), so
the LP is skipped.  For a single-contributor attacker ``j`` only witnesses with
``w_j = 0`` qualify.  Skipping never makes the search claim a pattern protected: integral
points are decided by the exact check, and a cut left out only weakens a node's bound.
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from solvers import LinearProgram
from tabprotect.secondary.repair import Check, Cut, components

#: |w_j| below this (relative to the witness's largest entry) counts as w_j = 0
ZERO = 1e-9


class WitnessStore:
    """The latest attacker optima per (primary slot, direction sign), ``keep`` at most
    each, as (global cell indices, values) over the cells where they are nonzero."""

    def __init__(self, keep: int, slot: np.ndarray | None = None):
        self.keep = keep
        self.slot = slot
        # a primary's own optima, and those of other primaries' LPs that move it
        self._by: dict[tuple[int, float], list] = {}
        self._shared: dict[tuple[int, float], list] = {}
        self.skipped = 0

    def add(self, p: int, sign: float, cols: np.ndarray, y: np.ndarray) -> None:
        """Keep an optimum of primary slot ``p``'s LP in direction ``sign``; with
        ``slot`` (cell -> primary slot, -1 for none) it also serves every other primary
        it moves, in the direction it moves it."""
        if self.keep <= 0:
            return
        nz = np.abs(y) > ZERO * max(1.0, float(np.abs(y).max(initial=0.0)))
        entry = (cols[nz], y[nz])
        keys = [((p, sign), self._by)]
        if self.slot is not None:
            others = self.slot[entry[0]]
            hit = np.flatnonzero((others >= 0) & (others != p))
            keys += [((int(others[k]), 1.0 if entry[1][k] > 0 else -1.0), self._shared)
                     for k in hit]
        for key, book in keys:
            lst = book.setdefault(key, [])
            lst.insert(0, entry)
            del lst[self.keep:]

    def bound(self, p: int, sign: float, s: int, j: int, up: np.ndarray,
              down: np.ndarray, z: np.ndarray, rhs: float) -> float:
        """The best lower bound on ``max sign * y_s`` over the LP with bounds
        ``-min(down, rhs) z <= y <= min(up, rhs) z`` (and ``y_j = 0`` for ``j >= 0``)."""
        best = 0.0
        for cols, y in self._by.get((p, sign), []) + self._shared.get((p, sign), []):
            at = np.flatnonzero(cols == s)
            if len(at) == 0:
                continue
            val = sign * float(y[at[0]])
            if val <= best:
                continue
            if j >= 0 and np.any(cols == j):
                continue
            hi = np.minimum(up[cols], rhs) * z[cols]
            lo = -np.minimum(down[cols], rhs) * z[cols]
            pos, neg = y > 0, y < 0
            t = 1.0
            if pos.any():
                t = min(t, float((hi[pos] / y[pos]).min()))
            if neg.any():
                t = min(t, float((lo[neg] / y[neg]).min()))
            best = max(best, max(t, 0.0) * val)
        return best


def separate(oracle, z: np.ndarray, *, deadline: float | None = None,
             min_violation: float = 1e-6) -> Check:
    """:meth:`AttackerOracle.separate <tabprotect.secondary.repair.AttackerOracle.separate>`
    with the LPs the oracle's :class:`WitnessStore` shows met skipped; every LP solved
    leaves its optimum there.  ``oracle`` is a :class:`~.oracle.HybridOracle` (its
    ``_solve`` leaves the primal optimum in ``last_x``)."""
    t0 = time.perf_counter()
    req, store = oracle.req, oracle.witnesses
    z = np.asarray(z, dtype=float)
    out = Check()
    want = np.zeros(oracle.table.n_cells, bool)
    want[req.primary] = True
    for comp in components(oracle.A, np.flatnonzero(z > 1e-9)):
        targets = comp[want[comp]]
        if len(targets) == 0:
            continue
        if _component(oracle, store, comp, targets, z, out, deadline, min_violation):
            out.complete = False
            break
    out.runtime = time.perf_counter() - t0
    return out


def _component(oracle, store, comp, targets, z, out, deadline, min_violation) -> bool:
    """Separation over one component; True when the deadline stopped it."""
    req = oracle.req
    sub = oracle.A[:, comp].tocsr()
    rows = np.flatnonzero(np.diff(sub.indptr) > 0)
    model = None
    local = {int(c): k for k, c in enumerate(comp)}
    attackers = [-1] + ([int(j) for j in comp[req.singleton[comp]]]
                        if req.singleton.any() else [])
    all_cols = np.arange(len(comp))

    def solve(s, p, sign, rhs, j):
        nonlocal model
        if model is None:
            model = oracle._new_model(LinearProgram(
                c=np.zeros(len(comp)), A=sub[rows], row_lower=np.zeros(len(rows)),
                row_upper=np.zeros(len(rows)), col_lower=-req.down[comp] * z[comp],
                col_upper=req.up[comp] * z[comp]))
        hi = np.minimum(req.up[comp], rhs) * z[comp]
        lo = -np.minimum(req.down[comp], rhs) * z[comp]
        if j >= 0:
            lo[local[j]] = hi[local[j]] = 0.0
        model.set_col_bounds(all_cols, lo, hi)
        oracle.last_x = None
        val, duals = oracle._solve(model, local[s], sign)
        out.n_lp += 1
        if duals is not None and oracle.last_x is not None:
            store.add(p, sign, comp, np.asarray(oracle.last_x, float))
        return val, duals

    def met(s, p, sign, rhs, j) -> float:
        return store.bound(p, sign, s, j, req.up, req.down, z, rhs)

    floor = 1.0 - min_violation   # a cut is violated below rhs * floor

    for j in attackers:
        for s in targets:
            if s == j:
                continue
            s, p = int(s), oracle.slot[s]
            for kind, sign, rhs in req.levels(p):
                if kind == "width":
                    if met(s, p, 1.0, rhs, j) + met(s, p, -1.0, rhs, j) >= rhs * floor:
                        store.skipped += 2
                        continue
                    _, du = solve(s, p, 1.0, rhs, j)
                    _, dd = solve(s, p, -1.0, rhs, j)
                    if du is None or dd is None:
                        continue
                    cu = oracle._cut(s, 1.0, du, rows, rhs, "up", j)
                    cd = oracle._cut(s, -1.0, dd, rows, rhs, "down", j)
                    merged = sp.csr_matrix(
                        (np.concatenate([cu.coef, cd.coef]),
                         (np.zeros(len(cu.cols) + len(cd.cols), int),
                          np.concatenate([cu.cols, cd.cols]))),
                        shape=(1, oracle.table.n_cells))
                    merged.sum_duplicates()
                    cut = Cut(merged.indices.astype(np.int64), np.minimum(merged.data, rhs),
                              rhs, s, "width", j)
                else:
                    if met(s, p, sign, rhs, j) >= rhs * floor:
                        store.skipped += 1
                        continue
                    _, duals = solve(s, p, sign, rhs, j)
                    if duals is None:
                        continue
                    cut = oracle._cut(s, sign, duals, rows, rhs, kind, j)
                lhs = float(np.minimum(cut.coef, rhs) @ z[cut.cols])
                if lhs < rhs * (1.0 - min_violation):
                    out.violated.append((s, kind, j))
                    out.cuts.append(cut)
            if deadline is not None and time.perf_counter() > deadline:
                return True
    return False
