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

from collections import deque

import numpy as np

#: |w_j| below this (relative to the witness's largest entry) counts as w_j = 0
ZERO = 1e-9


class _Witness:
    """One kept optimum over the cells where it is nonzero, with what its bounds need:
    ``|y|``, each cell's range in the direction it moves (from the ``up``/``down`` of
    the first bound asked, recomputed when other arrays come), ``y`` by cell once a
    value is asked for, and per point ``z`` the two minima every bound at that point
    is made of (:meth:`scale`)."""

    __slots__ = ("cols", "y", "absy", "seen", "_src", "_room", "_at", "_mins")

    def __init__(self, cols: np.ndarray, y: np.ndarray, absy: np.ndarray | None = None):
        self.cols, self.y = cols, y
        self.absy = np.abs(y) if absy is None else absy
        self.seen: dict[int, float] | None = None
        self._src = self._room = None
        self._at = self._mins = None

    def value(self, s: int) -> float:
        """``y_s`` (0 off the kept cells)."""
        seen = self.seen
        if seen is None:
            seen = self.seen = dict(zip(self.cols.tolist(), self.y.tolist()))
        return seen.get(s, 0.0)

    def room(self, up: np.ndarray, down: np.ndarray) -> np.ndarray:
        """Per kept cell, its deviation range in the direction the optimum moves it."""
        if self._src is None or self._src[0] is not up or self._src[1] is not down:
            self._room = np.where(self.y > 0, up[self.cols], down[self.cols])
            self._src = (up, down)
            self._at = None
        return self._room

    def scale(self, up: np.ndarray, down: np.ndarray, z: np.ndarray, point: object,
              rhs: float) -> float:
        """The largest ``t <= 1`` with ``t w`` inside the bounds ``min(range, rhs) z``:
        ``min_i min(range_i, rhs) z_i / |w_i|``, which is ``min(min_i range_i q_i, rhs
        min_i q_i)`` with ``q = z / |w|``; the two minima are computed once per
        ``point`` (a token that changes whenever ``z`` may have) and reused by every
        level asked about there."""
        room = self.room(up, down)
        if self._at is not point:
            q = z[self.cols] / self.absy
            least = float(q.min(initial=np.inf))
            # a cell at z = 0 leaves no room at all (and an infinite range times 0 is nan)
            ranged = float((room * q).min(initial=np.inf)) if least > 0.0 else 0.0
            self._mins, self._at = (ranged, least), point
        ranged, least = self._mins
        return min(1.0, ranged, rhs * least)


class WitnessStore:
    """The latest attacker optima per (primary slot, direction sign), ``keep`` at most
    each, as (global cell indices, values) over the cells where they are nonzero."""

    def __init__(self, keep: int, slot: np.ndarray | None = None):
        self.keep = keep
        self.slot = slot
        # a primary's own optima, and those of other primaries' LPs that move it
        self._by: dict[tuple[int, float], deque] = {}
        self._shared: dict[tuple[int, float], deque] = {}
        self.skipped = 0
        # the point the bounds are asked at (see at_point), a copy of its values and
        # its token
        self._z: np.ndarray | None = None
        self._values: np.ndarray | None = None
        self._point = object()

    def at_point(self, z: np.ndarray | None = None) -> None:
        """The point the next bounds are asked at.  Without ``z`` (a separation call
        starts so) the next bound compares its point with the last one by value, so
        that a point changed in place is never taken for the last one; a point equal
        to the last keeps its token, and each witness's minima computed there (the
        chunks of one node's separation ask at the same point), any other is new."""
        if z is None:
            self._z = None
            return
        last = self._values
        if last is not None and last.shape == z.shape and np.array_equal(last, z):
            self._z = z
            return
        self._z, self._values, self._point = z, np.array(z, dtype=float), object()

    def add(self, p: int, sign: float, cols: np.ndarray, y: np.ndarray) -> None:
        """Keep an optimum of primary slot ``p``'s LP in direction ``sign``; with
        ``slot`` (cell -> primary slot, -1 for none) it also serves every other primary
        it moves, in the direction it moves it."""
        if self.keep <= 0:
            return
        absy = np.abs(y)
        nz = absy > ZERO * max(1.0, float(absy.max(initial=0.0)))
        entry = _Witness(cols[nz], y[nz], absy[nz])
        self._keep_in(self._by, (p, sign), entry)
        if self.slot is not None:
            others = self.slot[entry.cols]
            hit = np.flatnonzero((others >= 0) & (others != p))
            if not len(hit):
                return
            signs = [1.0 if v > 0 else -1.0 for v in entry.y[hit].tolist()]
            shared = self._shared
            for key in zip(others[hit].tolist(), signs):   # _keep_in, inline
                kept = shared.get(key)
                if kept is None:
                    kept = shared[key] = deque(maxlen=self.keep)
                kept.appendleft(entry)

    def _keep_in(self, book: dict, key: tuple[int, float], entry: _Witness) -> None:
        """``entry`` first among ``key``'s witnesses in ``book``, the oldest beyond
        ``keep`` dropped."""
        kept = book.get(key)
        if kept is None:
            kept = book[key] = deque(maxlen=self.keep)
        kept.appendleft(entry)

    def bound(self, p: int, sign: float, s: int, j: int, up: np.ndarray,
              down: np.ndarray, z: np.ndarray, rhs: float, goal: float = np.inf) -> float:
        """The best lower bound on ``max sign * y_s`` over the LP with bounds
        ``-min(down, rhs) z <= y <= min(up, rhs) z`` (and ``y_j = 0`` for ``j >= 0``),
        or the first one found that reaches ``goal``."""
        if z is not self._z:
            self.at_point(z)
        point = self._point
        best = 0.0
        for w in (*self._by.get((p, sign), ()), *self._shared.get((p, sign), ())):
            if best >= goal:
                break
            val = sign * w.value(s)
            if val <= best:
                continue
            if j >= 0 and w.value(j) != 0.0:     # the witness moves the attacker's cell
                continue
            t = w.scale(up, down, z, point, rhs)
            best = max(best, max(t, 0.0) * val)
        return best
