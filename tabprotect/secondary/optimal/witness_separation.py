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


class WitnessStore:
    """The latest attacker optima per (primary slot, direction sign), ``keep`` at most
    each, over the cells where they are nonzero.

    The optima live in one numbering (``_cols``, ``_y``, ``_absy`` by witness id) and in
    flat arrays over all of them (cells, ``|y|``, each cell's range in the direction it
    moves), so that the two minima every bound at a point is made of (:meth:`bound`)
    are computed for all witnesses at once, once per point.  Each key's deque holds
    ``(id, y_s)`` with ``y_s`` the witness's value at the key's primary.  Witnesses no
    deque holds any more are dropped once they outnumber the held ones."""

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
        # the witnesses by id: cells, values, |values|, deques holding each, and a
        # cell -> value map made when a single-contributor attacker asks
        self._cols: list[np.ndarray] = []
        self._y: list[np.ndarray] = []
        self._absy: list[np.ndarray] = []
        self._refs: list[int] = []
        self._seen: dict[int, dict] = {}
        self._held = 0
        # flat arrays over witnesses [0, len(_starts)), and each one's first entry
        self._flat_cols = np.zeros(0, np.int64)
        self._flat_absy = np.zeros(0)
        self._flat_pos = np.zeros(0, bool)
        self._starts: list[int] = []
        self._flat_n = 0
        self._room: np.ndarray | None = None    # by flat entry, for _room_src
        self._room_src: tuple | None = None
        # the minima at the point _mins_at for witnesses [0, len(_ranged))
        self._mins_at: object | None = None
        self._ranged: list[float] = []
        self._least: list[float] = []

    def at_point(self, z: np.ndarray | None = None) -> None:
        """The point the next bounds are asked at.  Without ``z`` (a separation call
        starts so) the next bound compares its point with the last one by value, so
        that a point changed in place is never taken for the last one; a point equal
        to the last keeps its token, and the witnesses' minima computed there (the
        chunks of one node's separation ask at the same point), any other is new."""
        if z is None:
            self._z = None
            return
        last = self._values
        if last is not None and last.shape == z.shape and np.array_equal(last, z):
            self._z = z
            return
        self._z, self._values, self._point = z, np.array(z, dtype=float), object()

    def add(self, p: int, sign: float, s: int, cols: np.ndarray, y: np.ndarray) -> None:
        """Keep an optimum ``y`` over the cells ``cols`` of primary slot ``p``'s (cell
        ``s``) LP in direction ``sign``; with ``slot`` (cell -> primary slot, -1 for
        none) it also serves every other primary it moves, in the direction it moves
        it."""
        if self.keep <= 0:
            return
        absy = np.abs(y)
        nz = absy > ZERO * max(1.0, float(absy.max(initial=0.0)))
        wc, wy = cols[nz], y[nz]
        if len(wc) == 0:
            # moves nothing: it bounds nothing, but takes its place among the latest
            self._hold(self._by, (p, sign), -1, 0.0)
            return
        wid = len(self._cols)
        self._cols.append(wc)
        self._y.append(wy)
        self._absy.append(absy[nz])
        self._refs.append(0)
        at = np.flatnonzero(wc == s)
        ys = float(wy[at[0]]) if len(at) else 0.0
        self._hold(self._by, (p, sign), wid, ys)
        if self.slot is not None:
            others = self.slot[wc]
            hit = np.flatnonzero((others >= 0) & (others != p))
            for q, v in zip(others[hit].tolist(), wy[hit].tolist()):
                self._hold(self._shared, (q, 1.0 if v > 0 else -1.0), wid, v)
        if len(self._cols) - self._held > max(256, self._held):
            self._compact()

    def _value(self, wid: int, cell: int) -> float:
        """Witness ``wid``'s value at ``cell`` (0 off its cells)."""
        seen = self._seen.get(wid)
        if seen is None:
            seen = self._seen[wid] = dict(zip(self._cols[wid].tolist(),
                                              self._y[wid].tolist()))
        return seen.get(cell, 0.0)

    def _hold(self, book: dict, key: tuple[int, float], wid: int, ys: float) -> None:
        """``(wid, ys)`` first among ``key``'s witnesses in ``book``, the oldest beyond
        ``keep`` dropped."""
        kept = book.get(key)
        if kept is None:
            kept = book[key] = deque(maxlen=self.keep)
        elif len(kept) == self.keep:
            self._release(kept[-1][0])
        kept.appendleft((wid, ys))
        if wid >= 0:
            if self._refs[wid] == 0:
                self._held += 1
            self._refs[wid] += 1

    def _release(self, wid: int) -> None:
        if wid >= 0:
            self._refs[wid] -= 1
            if self._refs[wid] == 0:
                self._held -= 1

    def _compact(self) -> None:
        """Drop the witnesses no deque holds; the others are numbered anew."""
        alive = [w for w, r in enumerate(self._refs) if r > 0]
        new = {w: k for k, w in enumerate(alive)}
        self._cols = [self._cols[w] for w in alive]
        self._y = [self._y[w] for w in alive]
        self._absy = [self._absy[w] for w in alive]
        self._refs = [self._refs[w] for w in alive]
        self._seen = {new[w]: d for w, d in self._seen.items() if w in new}
        for book in (self._by, self._shared):
            for kept in book.values():
                items = [(new[w] if w >= 0 else -1, v) for w, v in kept]
                kept.clear()
                kept.extend(items)
        self._flat_cols, self._flat_absy = np.zeros(0, np.int64), np.zeros(0)
        self._flat_pos = np.zeros(0, bool)
        self._starts, self._flat_n = [], 0
        self._room = self._room_src = self._mins_at = None
        self._ranged, self._least = [], []

    def _minima(self, up: np.ndarray, down: np.ndarray, z: np.ndarray) -> None:
        """Each witness's two minima at the current point (see :meth:`bound`): for all
        witnesses when the point or the ranges are new, else for those kept since."""
        n = len(self._cols)
        if self._flat_n < n:            # the new witnesses join the flat arrays
            size = len(self._flat_cols)
            lengths = [len(c) for c in self._cols[self._flat_n:]]
            self._starts += (size + np.cumsum([0] + lengths[:-1])).tolist()
            ys = np.concatenate(self._y[self._flat_n:])
            self._flat_cols = np.concatenate([self._flat_cols,
                                              *self._cols[self._flat_n:]])
            self._flat_absy = np.concatenate([self._flat_absy, *self._absy[self._flat_n:]])
            self._flat_pos = np.concatenate([self._flat_pos, ys > 0])
            if self._room is not None:
                new_cols = self._flat_cols[size:]
                self._room = np.concatenate([self._room, np.where(
                    self._flat_pos[size:], up[new_cols], down[new_cols])])
            self._flat_n = n
        if self._room_src is None or self._room_src[0] is not up \
                or self._room_src[1] is not down:
            self._room = np.where(self._flat_pos, up[self._flat_cols], down[self._flat_cols])
            self._room_src = (up, down)
            self._mins_at = None
        if self._mins_at is not self._point:
            self._mins_at, self._ranged, self._least = self._point, [], []
        first = len(self._ranged)
        if first >= n:
            return
        a = self._starts[first]
        seg = np.asarray(self._starts[first:n], np.int64) - a
        q = z[self._flat_cols[a:]] / self._flat_absy[a:]
        least = np.minimum.reduceat(q, seg)
        with np.errstate(invalid="ignore"):
            ranged = np.minimum.reduceat(self._room[a:] * q, seg)
        # a cell at z = 0 leaves no room at all (and an infinite range times 0 is nan)
        ranged = np.where(least > 0.0, ranged, 0.0)
        self._ranged += ranged.tolist()
        self._least += least.tolist()

    def bound(self, p: int, sign: float, s: int, j: int, up: np.ndarray,
              down: np.ndarray, z: np.ndarray, rhs: float, goal: float = np.inf) -> float:
        """The best lower bound on ``max sign * y_s`` over the LP with bounds
        ``-min(down, rhs) z <= y <= min(up, rhs) z`` (and ``y_j = 0`` for ``j >= 0``),
        or the first one found that reaches ``goal``.

        A kept witness ``w`` scales into those bounds by the largest ``t <= 1`` with
        ``t w`` inside them: ``min_i min(range_i, rhs) z_i / |w_i|``, which is
        ``min(min_i range_i q_i, rhs min_i q_i)`` with ``q = z / |w|``; the two minima
        are computed once per point and serve every level asked about there."""
        if z is not self._z:
            self.at_point(z)
        best = 0.0
        ranged = least = None
        for wid, ys in (*self._by.get((p, sign), ()), *self._shared.get((p, sign), ())):
            if best >= goal:
                break
            val = sign * ys
            if val <= best:
                continue
            if j >= 0 and self._value(wid, j) != 0.0:   # the witness moves the attacker's cell
                continue
            if ranged is None or wid >= len(ranged):
                if self._mins_at is not self._point or wid >= len(self._ranged) \
                        or self._room_src is None or self._room_src[0] is not up \
                        or self._room_src[1] is not down:
                    self._minima(up, down, z)
                ranged, least = self._ranged, self._least
            t = min(1.0, ranged[wid], rhs * least[wid])
            best = max(best, max(t, 0.0) * val)
        return best
