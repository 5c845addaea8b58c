"""Integral witnesses inside the pattern against the single-contributor attack.

An integer audit with the attack judges each primary against every contributor of a
count-1 cell, who knows that cell (and the cells holding the same record,
:func:`tabprotect.records.same_record`). A move that leaves the attacker's cells where
they are is a witness against that attacker; the audit's LPs find such tables one
attacker at a time, over the whole component, and on 3-D count tables mostly at
fractional vertices. Here each primary gets integral moves inside its box
(:func:`~tabprotect.secondary.witness_search.box_cells`, the MILP of
:mod:`~tabprotect.secondary.witness_search`), each within both directions' bounds so
that it and its mirror image reach the requirement alone: the first over the box; the
second with the cells of every attacker the moves so far all move held at their true
values (where the box has no such move, one per such attacker instead). Against an
attacker the first moves, the second holds; against any other, the first. A move
serves every primary it takes far enough, against the attackers it leaves in place,
so most primaries need no MILP of their own; nor do those the moves found before the
search (the method's own, ``known``) already serve.

A primary the box leaves unserved (its moves run outside the box, or every box move
moves some attacker) gets one move per direction over its whole component, the cells
of the attackers its box moves all moved held at their true values (or none held, then
those of the attackers the first pair moves): the least total change (an LP), or its
least integral multiple within the bounds (a half-integral one doubled), else a
feasibility MILP over the box of the codes the LP's move touches.
The up move and the down move together give the primary its interval against every
attacker both leave in place (at most ``WitnessSearchSettings.attack_component_primaries``
primaries; each LP costs a few seconds on a component of thousands of cells).

The moves go to the audit, which checks each (relations, bounds, and per attacker that
the move leaves its cells alone) and certifies only what they reach; nothing here
calls a primary safe.
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from solvers import solve
from tabprotect.audit import required_interval
from tabprotect.audit.least_moves import goals, move_program, pinned
from tabprotect.audit.moves import valid_rows
from tabprotect.audit_result import meets_requirement
from tabprotect.model.relations import linked_components
from tabprotect.model.table import Table
from tabprotect.records import same_record
from tabprotect.secondary.witness_search import (BoxProbe, WitnessOutcome,
                                                 WitnessSearchSettings, box_move,
                                                 goal_move, moves_matrix)


class _Served:
    """Per primary the attackers that every move reaching its requirement alone moves
    (None: no such move yet); a primary is served once that set is empty."""

    def __init__(self, table: Table, attacker: np.ndarray):
        self.table, self.attacker = table, attacker
        lo, hi, w = required_interval(table, integer=True, singleton=True)
        self.req_lo = np.where(np.isnan(lo), np.inf, lo)
        self.req_hi = np.where(np.isnan(hi), -np.inf, hi)
        self.req_w = np.nan_to_num(w, nan=0.0)
        self.primary = table.status == "U"
        self.left: dict[int, set] = {}

    def done(self, p: int) -> bool:
        return self.left.get(p) == set()

    def blockers(self, p: int) -> set | None:
        return self.left.get(p)

    def add(self, cells: np.ndarray, d: np.ndarray) -> None:
        """Serve every primary the move ``d`` on ``cells`` (a move within both
        directions' bounds: it and its mirror image are tables) takes far enough."""
        v = self.table.value[cells]
        lo, hi = v - np.abs(d), v + np.abs(d)
        meets = (self.primary[cells] & (lo <= self.req_lo[cells] + 1e-9)
                 & (hi >= self.req_hi[cells] - 1e-9)
                 & (hi - lo >= self.req_w[cells] - 1e-9))
        own = self.attacker[cells]
        moved = set(own[own >= 0].tolist())
        for q, a in zip(cells[meets].tolist(), own[meets].tolist()):
            against = moved - {a}
            self.left[q] = against if q not in self.left else self.left[q] & against

    def add_pair(self, p: int, moved: set) -> None:
        """Serve ``p`` by a pair of one-way moves that together meet its requirement
        and move the attackers ``moved``."""
        against = moved - {int(self.attacker[p])}
        self.left[p] = against if p not in self.left else self.left[p] & against


def attacker_classes(table: Table) -> np.ndarray:
    """Per cell the single-contributor attacker who knows it (a class of cells holding
    one record, labelled by its smallest cell), -1 for none."""
    label = same_record(table)
    cells = np.arange(table.n_cells)
    return np.where(np.asarray(table.freq) == 1, np.where(label >= 0, label, cells), -1)


def attack_witnesses(table: Table, primaries: np.ndarray, deadline: float | None,
                     settings: WitnessSearchSettings | None = None,
                     known: sp.csr_matrix | None = None) -> WitnessOutcome:
    """Integral moves of ``table``'s pattern that serve the ``primaries`` against every
    single-contributor attacker (see the module docstring), until ``deadline``
    (``time.perf_counter`` seconds; None: none). Product tables only. ``known``: moves
    found before (rows over every cell, e.g. the method's own witnesses): those that
    are integral moves of the pattern within both directions' bounds serve primaries
    first, which then need no MILP (the returned moves are the new ones only)."""
    s = settings or WitnessSearchSettings()
    n = table.n_cells
    empty = WitnessOutcome(sp_empty(n), np.zeros(0, np.int64), 0)
    if not table.dimensions or len(primaries) == 0:
        return empty
    attacker = attacker_classes(table)
    served = _Served(table, attacker)
    if known is not None:
        _seed(table, served, known)
    rows: list[tuple[np.ndarray, np.ndarray]] = []
    milps = 0
    probe = BoxProbe(table, s, deadline)
    for p, cells in probe.boxes(primaries, served.done):
        milps += _serve(table, served, attacker, cells, p, s, deadline, rows)
        if served.done(p):
            probe.hit()
    left = [p for p in np.asarray(primaries, dtype=np.int64).tolist() if not served.done(p)]
    if 0 < len(left) <= s.attack_component_primaries:
        milps += _component_pass(table, served, attacker, left, s, deadline, rows)
    reached = np.array([p for p in np.asarray(primaries, dtype=np.int64).tolist()
                        if served.done(p)], dtype=np.int64)
    return WitnessOutcome(moves_matrix(rows, n), reached, milps)


def _seed(table: Table, served: _Served, known: sp.csr_matrix) -> None:
    """Serve the primaries by the moves ``known`` (rows over every cell) that are
    integral moves of the pattern (:func:`~tabprotect.audit.moves.valid_rows`) within
    both directions' bounds."""
    H = sp.csr_matrix(known, dtype=float)
    H.eliminate_zeros()
    d = np.round(H.data)
    col = H.indices
    x, lb, ub = table.value[col], table.lb[col], table.ub[col]
    bad = ((np.abs(H.data - d) > 1e-9) | (x + d < lb) | (x + d > ub) | (x - d < lb)
           | (x - d > ub))
    row = np.repeat(np.arange(H.shape[0]), np.diff(H.indptr))
    ok = valid_rows(table, H, table.suppressed) & (np.bincount(
        row, weights=bad, minlength=H.shape[0]) == 0)
    for r in np.flatnonzero(ok):
        lo, hi = H.indptr[r], H.indptr[r + 1]
        served.add(col[lo:hi], d[lo:hi])


def _serve(table: Table, served: _Served, attacker: np.ndarray, cells: np.ndarray, p: int,
           s: WitnessSearchSettings, deadline: float | None, rows: list) -> int:
    """Moves for primary ``p`` over its box ``cells``: one over the box, then one with
    every attacker the moves so far all move held at its value; where that has none,
    one per such attacker (at most ``s.attacker_tries``). Returns the MILPs solved.
    (Feasibility MILPs: a move that changes as few attackers' cells as it can costs
    many times the MILP time and serves fewer primaries.)"""
    milps = 0

    def move(keep: np.ndarray) -> bool:
        nonlocal milps
        found, n_milp = _both_way_move(table, served, keep, p, s, deadline)
        milps += n_milp
        if found is not None:
            rows.append(found)
            served.add(*found)
        return found is not None

    if not move(cells) or served.done(p):
        return milps
    if move(cells[~np.isin(attacker[cells], list(served.blockers(p)))]):
        return milps
    for _ in range(s.attacker_tries):
        held = served.blockers(p)
        if not held or not move(cells[attacker[cells] != min(held)]):
            break
    return milps


def _both_way_move(table: Table, served: _Served, cells: np.ndarray, p: int,
                   s: WitnessSearchSettings, deadline: float | None):
    """An integral move over ``cells`` within both directions' bounds that takes ``p``
    to a goal of its requirement (the whole width first), as ``(cells, d)`` on the
    moved cells, or None; and the MILPs solved."""
    v = table.value[p]
    g = goals(v, served.req_lo[p], served.req_hi[p], served.req_w[p], True)
    milps = 0
    for sense in ("max", "min"):
        for goal in g[sense][:1]:
            if deadline is not None and time.perf_counter() >= deadline:
                return None, milps
            move = goal_move(table, cells, p, sense, goal - v if sense == "max" else v - goal,
                             True, s, deadline)
            milps += 1
            if move is not None:
                return move, milps
    return None, milps


def _component_pass(table: Table, served: _Served, attacker: np.ndarray, left: list,
                    s: WitnessSearchSettings, deadline: float | None, rows: list) -> int:
    """Pairs of one-way moves over the whole component for the primaries ``left``
    (see the module docstring); returns the LPs and MILPs solved."""
    comp_of = np.full(table.n_cells, -1, dtype=np.int64)
    comps = linked_components(table.relations, table.suppressed)
    for k, comp in enumerate(comps):
        comp_of[comp] = k
    solved = 0
    for p in left:
        comp = np.sort(comps[comp_of[p]])
        held = served.blockers(p)
        for _ in range(2):   # a pair with no attacker held, then one with those it moves
            if _late(deadline):
                return solved
            keep = comp[~np.isin(attacker[comp], list(held or ()))]
            pair, n = _one_way_pair(table, served, keep, p, s, deadline)
            solved += n
            if pair is None:
                break
            rows.extend(pair)
            own = np.concatenate([attacker[c] for c, _ in pair])
            served.add_pair(p, set(own[own >= 0].tolist()))
            if served.done(p):
                break
            held = served.blockers(p)
    return solved


def _one_way_pair(table: Table, served: _Served, cells: np.ndarray, p: int,
                  s: WitnessSearchSettings, deadline: float | None):
    """An up move and a down move of ``p`` over ``cells`` (the rest held) that together
    meet its requirement, each ``(cells, d)``, or None; and the LPs and MILPs solved."""
    v = table.value[p]
    g = goals(v, served.req_lo[p], served.req_hi[p], served.req_w[p], True)
    if not g["max"] or not g["min"]:
        return None, 0
    up, down = g["max"][-1], g["min"][0]
    ok = meets_requirement(np.array([down]), np.array([up]), served.req_lo[[p]],
                           served.req_hi[[p]], served.req_w[[p]], table.value[[p]])
    if not ok[0]:
        return None, 0
    pair, solved = [], 0
    for need_up, need_down in ((up - v, 0.0), (0.0, v - down)):
        if _late(deadline):
            return None, solved
        d, n = _integral_move(table, cells, p, need_up, need_down, s, deadline)
        solved += n
        if d is None:
            return None, solved
        pair.append(d)
    return pair, solved


def _integral_move(table: Table, cells: np.ndarray, p: int, need_up: float,
                   need_down: float, s: WitnessSearchSettings, deadline: float | None):
    """The least move of ``p`` over ``cells`` (``need_up`` up or ``need_down`` down), or
    its least integral multiple within the bounds (up to ``s.least_move_multiple``),
    else a feasibility MILP's over the box of the codes the LP's move touches:
    ``(cells, d)`` on the moved cells, or None; and the solves."""
    d = least_move(table, cells, p, need_up, need_down)
    if d is None:
        return None, 1
    moved = np.abs(d) > 1e-9
    lifted = integral_multiple(table, cells[moved], d[moved], s.least_move_multiple)
    if lifted is not None:
        return (cells[moved], lifted), 1
    box = codes_box(table, cells[moved], cells)
    seconds = s.milp_seconds if deadline is None else \
        min(s.milp_seconds, max(0.05, deadline - time.perf_counter()))
    d = box_move(table, box, p, need_up, need_down, False, seconds)
    if d is None:
        return None, 2
    moved = np.flatnonzero(d)
    return (box[moved], d[moved]), 2


def least_move(table: Table, cells: np.ndarray, p: int, need_up: float,
               need_down: float) -> np.ndarray | None:
    """The move over ``cells`` (the rest held; every cell within its bounds) of least
    total change taking ``p`` at least ``need_up`` up (or ``need_down`` down): the
    LP's solution (:func:`~tabprotect.audit.least_moves.move_program`), on ``cells``,
    or None."""
    A = table.relations[:, cells].tocsr()
    A = A[np.flatnonzero(np.diff(A.indptr) > 0)]
    v = table.value[cells]
    bounds = pinned(int(np.searchsorted(cells, p)), need_up, need_down,
                    np.maximum(table.ub[cells] - v, 0.0),
                    np.maximum(v - table.lb[cells], 0.0))
    if bounds is None:
        return None
    zero = np.zeros(A.shape[0])
    res = solve(move_program(A, zero, zero, bounds[1], bounds[2], bounds[0]))
    if res.status != "optimal" or res.x is None:
        return None
    n = len(cells)
    return res.x[:n] - res.x[n:]


def integral_multiple(table: Table, cells: np.ndarray, d: np.ndarray, most: int
                      ) -> np.ndarray | None:
    """The least multiple ``k * d`` (``k`` from 1 to ``most``) of the move ``d`` on
    ``cells`` (the rest held) that is integral and keeps every cell within its bounds,
    rounded, or None. A multiple keeps the relations and moves the primary ``k`` times
    as far; the relations are checked again on the rounded move."""
    v, lb, ub = table.value[cells], table.lb[cells], table.ub[cells]
    A = table.relations[:, cells]
    for k in range(1, most + 1):
        m = k * d
        r = np.round(m)
        if np.abs(m - r).max(initial=0.0) > 1e-6:
            continue
        if (v + r >= lb).all() and (v + r <= ub).all() \
                and np.abs(A @ r).max(initial=0.0) == 0:
            return r
    return None


def codes_box(table: Table, touched: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """The cells of ``cells`` (sorted) whose codes, per dimension, are codes of cells of
    ``touched``."""
    pos = np.unravel_index(touched, table.shape)
    box = np.ravel_multi_index(np.ix_(*[np.unique(x) for x in pos]), table.shape).ravel()
    return np.sort(box[np.isin(box, cells)])


def _late(deadline: float | None) -> bool:
    return deadline is not None and time.perf_counter() >= deadline


def sp_empty(n: int):
    """No moves: an empty matrix over ``n`` cells."""
    return moves_matrix([], n)
