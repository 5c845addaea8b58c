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
#: the witnesses no deque holds any more are dropped once this many are kept (or twice
#: as many as were held at the last drop): memory stays proportional to the held ones
COMPACT_MIN = 1024


class WitnessStore:
    """The latest attacker optima per (primary slot, direction sign), ``keep`` at most
    each, over the cells where they are nonzero.

    The optima live in one numbering (``_cols``, ``_y``, ``_absy`` by witness id) and in
    flat arrays over all of them (cells, ``|y|``, each cell's range in the direction it
    moves), so that the two minima every bound at a point is made of (:meth:`bound`)
    are computed for all witnesses at once, once per point.  Each key's deque holds
    ``(id, y_s)`` with ``y_s`` the witness's value at the key's primary.  Witnesses no
    deque holds any more are dropped from time to time (:meth:`_compact`)."""

    def __init__(self, keep: int, slot: np.ndarray | None = None, negated: bool = False,
                 reach: np.ndarray | None = None):
        self.keep = keep
        self.slot = slot
        # per primary slot, the least move a witness needs to count for it at all
        # (None: any): smaller ones are not kept for it, where they would only push
        # out the witnesses that can prove something
        self.reach = reach
        self.negated = negated     # the other direction's witnesses count, negated
        # a primary's own optima, and those of other primaries' LPs that move it
        self._by: dict[tuple[int, float], deque] = {}
        self._shared: dict[tuple[int, float], deque] = {}
        self.skipped = 0
        # the point the bounds are asked at (see at_point), a copy of its values and
        # its token
        self._z: np.ndarray | None = None
        self._values: np.ndarray | None = None
        self._point = object()
        # the witnesses by id: cells, values, |values|, and a cell -> value map made
        # when a single-contributor attacker asks
        self._cols: list[np.ndarray] = []
        self._y: list[np.ndarray] = []
        self._absy: list[np.ndarray] = []
        self._seen: dict[int, dict] = {}
        # witnesses kept before the unheld ones are dropped (see _compact)
        self._next_compact = COMPACT_MIN
        # flat arrays over witnesses [0, len(_starts)), and each one's first entry
        self._flat_cols = np.zeros(0, np.int64)
        self._flat_absy = np.zeros(0)
        self._flat_pos = np.zeros(0, bool)
        self._starts: list[int] = []
        self._flat_n = 0
        # by flat entry, for _room_src: the range in the direction each entry moves,
        # and in the other one
        self._room: np.ndarray | None = None
        self._room_neg: np.ndarray | None = None
        self._room_src: tuple | None = None
        # the minima at the point _mins_at for witnesses [0, len(_ranged))
        self._mins_at: object | None = None
        self._ranged: list[float] = []
        self._ranged_neg: list[float] = []
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
        keep = self.keep
        if keep <= 0:
            return
        absy = np.abs(y)
        nz = absy > ZERO * max(1.0, float(absy.max(initial=0.0)))
        wc, wy = cols[nz], y[nz]
        wid = len(self._cols) if len(wc) else -1   # -1: moves nothing, bounds nothing
        at = np.flatnonzero(wc == s)
        ys = float(wy[at[0]]) if len(at) else 0.0
        reach = self.reach
        if reach is None or abs(ys) >= reach[p]:
            self._keep_in(self._by, (p, sign), wid, ys)
        if wid < 0:
            return
        hit = ()
        if self.slot is not None:
            others = self.slot[wc]
            hit = (others >= 0) & (others != p)
            if reach is not None:
                hit[hit] = np.abs(wy[hit]) >= reach[others[hit]]
            hit = np.flatnonzero(hit)
        if reach is not None and abs(ys) < reach[p] and not len(hit):
            return                                   # it counts for no primary
        self._cols.append(wc)
        self._y.append(wy)
        self._absy.append(absy[nz])
        if len(hit):
            shared = self._shared
            for q, v in zip(others[hit].tolist(), wy[hit].tolist()):
                key = (q, 1.0 if v > 0 else -1.0)
                kept = shared.get(key)
                if kept is None:
                    kept = shared[key] = deque(maxlen=keep)
                kept.appendleft((wid, v))
        if len(self._cols) > self._next_compact:
            self._compact()

    def _keep_in(self, book: dict, key: tuple, wid: int, ys: float) -> None:
        """``(wid, ys)`` first among ``key``'s witnesses in ``book``, the oldest beyond
        ``keep`` dropped."""
        kept = book.get(key)
        if kept is None:
            kept = book[key] = deque(maxlen=self.keep)
        kept.appendleft((wid, ys))

    def _value(self, wid: int, cell: int) -> float:
        """Witness ``wid``'s value at ``cell`` (0 off its cells)."""
        seen = self._seen.get(wid)
        if seen is None:
            seen = self._seen[wid] = dict(zip(self._cols[wid].tolist(),
                                              self._y[wid].tolist()))
        return seen.get(cell, 0.0)

    def _compact(self) -> None:
        """Drop the witnesses no deque holds; the others are numbered anew.  The next
        compaction comes once as many witnesses again have been kept."""
        held = {w for book in (self._by, self._shared) for kept in book.values()
                for w, _ in kept}
        alive = sorted(w for w in held if w >= 0)
        new = {w: k for k, w in enumerate(alive)}
        new[-1] = -1
        self._cols = [self._cols[w] for w in alive]
        self._y = [self._y[w] for w in alive]
        self._absy = [self._absy[w] for w in alive]
        self._seen = {new[w]: d for w, d in self._seen.items() if w in new}
        for book in (self._by, self._shared):
            for kept in book.values():
                items = [(new[w], v) for w, v in kept]
                kept.clear()
                kept.extend(items)
        self._flat_cols, self._flat_absy = np.zeros(0, np.int64), np.zeros(0)
        self._flat_pos = np.zeros(0, bool)
        self._starts, self._flat_n = [], 0
        self._room = self._room_neg = self._room_src = self._mins_at = None
        self._ranged, self._ranged_neg, self._least = [], [], []
        self._next_compact = max(COMPACT_MIN, 2 * len(alive))

    def _minima(self, up: np.ndarray, down: np.ndarray, z: np.ndarray) -> None:
        """Each witness's minima at the current point (see :meth:`bound`): for all
        witnesses at once (the flat arrays) when the point or the ranges are new, else
        one by one for those kept since."""
        n = len(self._cols)
        if self._room_src is not None and self._room_src[0] is up \
                and self._room_src[1] is down and self._mins_at is self._point:
            for wid in range(len(self._ranged), n):
                self._one_minima(wid, up, down, z)
            return
        self._flatten(up, down)
        self._mins_at = self._point
        seg = np.asarray(self._starts, np.int64)
        if not len(seg):
            self._ranged, self._ranged_neg, self._least = [], [], []
            return
        q = z[self._flat_cols] / self._flat_absy
        least = np.minimum.reduceat(q, seg)
        # a cell at z = 0 leaves no room at all (and an infinite range times 0 is nan)
        room = least > 0.0
        with np.errstate(invalid="ignore"):
            self._ranged = np.where(room, np.minimum.reduceat(self._room * q, seg),
                                    0.0).tolist()
            self._ranged_neg = np.where(
                room, np.minimum.reduceat(self._room_neg * q, seg), 0.0).tolist() \
                if self.negated else []
        self._least = least.tolist()

    def _flatten(self, up: np.ndarray, down: np.ndarray) -> None:
        """The flat arrays over every witness, with each entry's range in the direction
        it moves and in the other one (the negated witness) from ``up`` and ``down``."""
        n, old = len(self._cols), self._flat_n
        if old < n:
            self._starts += (len(self._flat_cols) + np.cumsum(
                [0] + [len(c) for c in self._cols[old:n - 1]])).tolist()
            self._flat_cols = np.concatenate([self._flat_cols, *self._cols[old:]])
            self._flat_absy = np.concatenate([self._flat_absy, *self._absy[old:]])
            self._flat_pos = np.concatenate([self._flat_pos,
                                             *(y > 0 for y in self._y[old:])])
            self._flat_n = n
        if self._room_src is not None and self._room_src[0] is up \
                and self._room_src[1] is down:
            if old == n:
                return
            at = self._starts[old]     # the new entries only
        else:
            at, self._room, self._room_neg = 0, np.zeros(0), np.zeros(0)
            self._room_src = (up, down)
        cols, pos = self._flat_cols[at:], self._flat_pos[at:]
        at_up, at_down = up[cols], down[cols]
        self._room = np.concatenate([self._room, np.where(pos, at_up, at_down)])
        self._room_neg = np.concatenate([self._room_neg, np.where(pos, at_down, at_up)])

    def _one_minima(self, wid: int, up: np.ndarray, down: np.ndarray, z: np.ndarray
                    ) -> None:
        """:meth:`_minima` of witness ``wid`` alone (kept since the point's minima)."""
        cols, y = self._cols[wid], self._y[wid]
        q = z[cols] / self._absy[wid]
        least = float(q.min())
        pos = y > 0
        at_up, at_down = up[cols], down[cols]
        if least > 0.0:
            ranged = float((np.where(pos, at_up, at_down) * q).min())
            neg = float((np.where(pos, at_down, at_up) * q).min()) if self.negated else 0.0
        else:
            ranged = neg = 0.0
        self._ranged.append(ranged)
        if self.negated:
            self._ranged_neg.append(neg)
        self._least.append(least)

    def bound(self, p: int, sign: float, s: int, j: int, up: np.ndarray,
              down: np.ndarray, z: np.ndarray, rhs: float, goal: float = np.inf) -> float:
        """The best lower bound on ``max sign * y_s`` over the LP with bounds
        ``-min(down, rhs) z <= y <= min(up, rhs) z`` (and ``y_j = 0`` for ``j >= 0``),
        or the first one found that reaches ``goal``.

        A kept witness ``w`` scales into those bounds by the largest ``t <= 1`` with
        ``t w`` inside them: ``min_i min(range_i, rhs) z_i / |w_i|``, which is
        ``min(min_i range_i q_i, rhs min_i q_i)`` with ``q = z / |w|``; the minima are
        computed once per point and serve every level asked about there.  With
        ``negated``, the witnesses kept for the other direction count too, negated
        (``A w = 0`` holds for ``-w`` as well; each cell's range is then the one of the
        direction ``-w`` moves it)."""
        if z is not self._z:
            self.at_point(z)
        if self._mins_at is not self._point or len(self._ranged) < len(self._cols) \
                or self._room_src is None or self._room_src[0] is not up \
                or self._room_src[1] is not down:
            self._minima(up, down, z)
        best = 0.0
        least = self._least
        for flip in ((1.0, -1.0) if self.negated else (1.0,)):
            key = (p, sign * flip)
            ranged = self._ranged if flip > 0 else self._ranged_neg
            scale = sign * flip
            for kept in (self._by.get(key), self._shared.get(key)):
                if not kept:
                    continue
                for wid, ys in kept:
                    val = scale * ys
                    if val <= best:
                        continue
                    if j >= 0 and self._value(wid, j) != 0.0:   # it moves the attacker's cell
                        continue
                    t = ranged[wid]
                    cap = rhs * least[wid]
                    if cap < t:
                        t = cap
                    if t > 1.0:
                        t = 1.0
                    if t * val > best:
                        best = t * val
                        if best >= goal:
                            return best
        return best
