"""Integral witnesses inside the pattern, for the primaries an integer audit leaves open.

The relations of a count table are not totally unimodular from three dimensions on, so a
pattern can be safe for the LP intruder while the integer audit's LPs end at fractional
tables and leave primaries undecided; the repair would then add cells a primary may not
need. Before any cell is added, each open primary gets a small MILP over the suppressed
cells of its *box* (product tables: every code of each dimension whose cell on the
primary's line through that dimension is suppressed; every leaf cube and longer cycle
through the primary lies in it), every other cell held at its true value, so that a
solution is an integral table of the whole table that differs from the true one only on
suppressed cells. A move is tried first within both directions' bounds (it and its mirror
image are two witnesses), then per direction. The moves go to the audit, which checks
each and certifies only what they reach; nothing here calls a primary safe.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import scipy.sparse as sp

from solvers import solve
from tabprotect.audit import required_interval
from tabprotect.audit.least_moves import goals, move_program, pinned
from tabprotect.model.table import Table
from tabprotect.secondary.repair_options import WitnessSearchSettings


@dataclass
class WitnessOutcome:
    """The moves found (rows over all cells), the primaries whose requirements the moves
    reach by this search's own count (the audit decides), and the MILPs solved."""

    moves: sp.csr_matrix
    reached: np.ndarray
    milps: int


def box_cells(table: Table, suppressed: np.ndarray, p: int, codes_per_dim: int = 12
              ) -> np.ndarray:
    """The suppressed cells of ``p``'s box in a product table (sorted).  The box starts
    from ``p``'s codes and, per dimension, the codes whose cell on ``p``'s line through
    that dimension is suppressed, then takes, per dimension, the codes with the most
    suppressed cells in the slab of the box's other codes (up to ``codes_per_dim``; the
    cycles of a move through ``p`` run through such slabs)."""
    shape = table.shape
    supp = suppressed.reshape(shape)
    pos = np.unravel_index(p, shape)
    codes = []
    for d, size in enumerate(shape):
        line = list(pos)
        line[d] = slice(None)
        codes.append(np.union1d(np.flatnonzero(supp[tuple(line)]), [pos[d]]))
    grown = []
    for d, size in enumerate(shape):
        slab = supp[np.ix_(*[codes[e] if e != d else np.arange(size)
                             for e in range(len(shape))])]
        votes = slab.sum(axis=tuple(e for e in range(len(shape)) if e != d)).astype(float)
        votes[codes[d]] = np.inf
        top = np.argsort(-votes, kind="stable")[:max(codes_per_dim, len(codes[d]))]
        grown.append(np.sort(top[votes[top] > 0]))
    cells = np.ravel_multi_index(np.ix_(*grown), shape).ravel()
    return np.sort(cells[suppressed[cells]])


def box_move(table: Table, cells: np.ndarray, p: int, need_up: float, need_down: float,
             both: bool, seconds: float) -> np.ndarray | None:
    """An integral move over ``cells`` (the rest held) with ``d_p >= need_up`` (or ``d_p
    <= -need_down``), within both directions' bounds when ``both`` (so that its mirror
    image is a table too); its entries over ``cells``, or None.  A feasibility MILP (no
    objective): on 3-D count tables about ten times faster than the least L1 move, and
    the bounds keep the move a table."""
    A = table.relations[:, cells].tocsr()
    A = A[np.flatnonzero(np.diff(A.indptr) > 0)]
    v = table.value[cells]
    up = np.maximum(table.ub[cells] - v, 0.0)
    dn = np.maximum(v - table.lb[cells], 0.0)
    if both:
        up = dn = np.minimum(up, dn)
    bounds = pinned(int(np.searchsorted(cells, p)), need_up, need_down, up, dn)
    if bounds is None:
        return None
    zero = np.zeros(A.shape[0])
    res = solve(move_program(A, zero, zero, bounds[1], bounds[2], bounds[0], least=False,
                             integer=True), time_limit=seconds)
    if res.x is None or res.status not in ("optimal", "time_limit"):
        return None
    n = len(cells)
    d = np.round(res.x[:n] - res.x[n:])
    if np.abs(A @ d).max(initial=0.0) > 1e-9:
        return None
    return d


def goal_move(table: Table, cells: np.ndarray, p: int, sense: str, need: float,
              both: bool, s: WitnessSearchSettings, deadline: float | None
              ) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`box_move` taking ``p`` ``need`` up (``sense`` "max") or down, within the
    MILP's seconds and what is left before ``deadline``: ``(cells, d)`` on the moved
    cells, or None."""
    seconds = s.milp_seconds if deadline is None else \
        min(s.milp_seconds, max(0.05, deadline - time.perf_counter()))
    d = box_move(table, cells, p, need if sense == "max" else 0.0,
                 need if sense == "min" else 0.0, both, seconds)
    if d is None:
        return None
    moved = np.flatnonzero(d)
    return cells[moved], d[moved]


class BoxProbe:
    """The primaries a search tries, in cell order, each with its box: it skips those
    already done and those whose box exceeds ``max_cells``, and stops at the deadline,
    or once ``probe`` primaries were searched and fewer than ``min_hit_rate`` of them
    were hits (the caller says which, by :meth:`hit`)."""

    def __init__(self, table: Table, s: WitnessSearchSettings, deadline: float | None):
        self.table, self.s, self.deadline = table, s, deadline
        self.searched = self.hits = 0

    def boxes(self, primaries: np.ndarray, done) -> Iterator[tuple[int, np.ndarray]]:
        s, suppressed = self.s, self.table.suppressed
        for p in np.sort(np.asarray(primaries, dtype=np.int64)).tolist():
            if done(p):
                continue
            if self.deadline is not None and time.perf_counter() >= self.deadline:
                return
            if self.searched >= s.probe and self.hits < s.min_hit_rate * self.searched:
                return
            cells = box_cells(self.table, suppressed, p, s.codes_per_dim)
            if len(cells) > s.max_cells:
                continue
            self.searched += 1
            yield p, cells

    def hit(self) -> None:
        self.hits += 1


class _Reach:
    """How far the moves found so far take each primary (integral points only: a move
    and its mirror image where they stay within the bounds, as the audit counts them)."""

    def __init__(self, table: Table, req: tuple[np.ndarray, np.ndarray, np.ndarray]):
        self.table = table
        self.lo = table.value.copy()
        self.hi = table.value.copy()
        self.req_w = np.nan_to_num(req[2], nan=0.0)
        self.req_lo = np.where(np.isnan(req[0]), np.inf, req[0])
        self.req_hi = np.where(np.isnan(req[1]), -np.inf, req[1])

    def add(self, cells: np.ndarray, d: np.ndarray) -> None:
        t = self.table
        v, lb, ub = t.value[cells], t.lb[cells], t.ub[cells]
        for s in (1.0, -1.0):
            point = v + s * d
            if ((point >= lb - 1e-9) & (point <= ub + 1e-9)).all():
                self.lo[cells] = np.minimum(self.lo[cells], point)
                self.hi[cells] = np.maximum(self.hi[cells], point)

    def done(self, p: int) -> bool:
        return bool(self.lo[p] <= self.req_lo[p] + 1e-9 and self.hi[p] >= self.req_hi[p]
                    - 1e-9 and self.hi[p] - self.lo[p] >= self.req_w[p] - 1e-9)


def integral_witnesses(table: Table, primaries: np.ndarray, deadline: float | None,
                       singleton: bool = False,
                       settings: WitnessSearchSettings | None = None) -> WitnessOutcome:
    """Integral moves of ``table``'s pattern (its ``M`` and ``U`` cells) for the
    ``primaries`` (see the module docstring), until ``deadline`` (``time.perf_counter``
    seconds; None: none). Product tables only (another table gets no moves)."""
    s = settings or WitnessSearchSettings()
    n = table.n_cells
    rows: list[tuple[np.ndarray, np.ndarray]] = []
    milps = 0
    if not table.dimensions or len(primaries) == 0:
        return WitnessOutcome(sp.csr_matrix((0, n)), np.zeros(0, np.int64), 0)
    req = required_interval(table, integer=True, singleton=singleton)
    reach = _Reach(table, req)
    probe = BoxProbe(table, s, deadline)
    for p, cells in probe.boxes(primaries, reach.done):
        found = len(rows)
        v = table.value[p]
        g = goals(v, reach.req_lo[p], reach.req_hi[p], req[2][p], True)
        tries = [(True, sense, goal) for sense in ("max", "min") for goal in g[sense][:1]]
        tries += [(False, sense, goal) for sense in ("max", "min") for goal in g[sense]]
        for both, sense, goal in tries:
            if reach.done(p) or (deadline is not None and time.perf_counter() >= deadline):
                break
            if not both and (reach.hi[p] >= goal - 1e-9 if sense == "max"
                             else reach.lo[p] <= goal + 1e-9):
                continue
            move = goal_move(table, cells, p, sense, goal - v if sense == "max" else v - goal,
                             both, s, deadline)
            milps += 1
            if move is not None:
                rows.append(move)
                reach.add(*move)
        if len(rows) > found:
            probe.hit()
    reached = np.array([p for p in np.asarray(primaries, dtype=np.int64)
                        if reach.done(int(p))], dtype=np.int64)
    return WitnessOutcome(moves_matrix(rows, n), reached, milps)


def moves_matrix(rows: list[tuple[np.ndarray, np.ndarray]], n: int) -> sp.csr_matrix:
    """The moves as rows of one sparse matrix over all ``n`` cells."""
    if not rows:
        return sp.csr_matrix((0, n))
    indptr = np.concatenate([[0], np.cumsum([len(c) for c, _ in rows])])
    return sp.csr_matrix((np.concatenate([d for _, d in rows]),
                          np.concatenate([c for c, _ in rows]), indptr),
                         shape=(len(rows), n))
