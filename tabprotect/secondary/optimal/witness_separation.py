"""The earlier attacker optima that let capacity-cut separation skip LPs already met.

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
The separation (:meth:`AttackerOracle.separate
<tabprotect.secondary.attacker_oracle.AttackerOracle.separate>`) asks the optimal method's oracle
(:class:`~.oracle.HybridOracle`) before each LP and hands it each optimum.
"""
from __future__ import annotations

import numpy as np

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
        # (cells, values, {cell: its value} for the cells asked about so far)
        entry = (cols[nz], y[nz], {})
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
              down: np.ndarray, z: np.ndarray, rhs: float, goal: float = np.inf) -> float:
        """The best lower bound on ``max sign * y_s`` over the LP with bounds
        ``-min(down, rhs) z <= y <= min(up, rhs) z`` (and ``y_j = 0`` for ``j >= 0``),
        or the first one found that reaches ``goal``."""
        best = 0.0
        for cols, y, seen in self._by.get((p, sign), []) + self._shared.get((p, sign), []):
            if best >= goal:
                break
            ys = seen.get(s)
            if ys is None:
                at = np.flatnonzero(cols == s)
                ys = seen[s] = float(y[at[0]]) if len(at) else 0.0
            val = sign * ys
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
