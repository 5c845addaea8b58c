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
so most primaries need no MILP of their own.

The moves go to the audit, which checks each (relations, bounds, and per attacker that
the move leaves its cells alone) and certifies only what they reach; nothing here
calls a primary safe.
"""
from __future__ import annotations

import time

import numpy as np

from tabprotect.audit import required_interval
from tabprotect.audit.least_moves import goals
from tabprotect.model.table import Table
from tabprotect.records import same_record
from tabprotect.secondary.witness_search import (BoxProbe, WitnessOutcome,
                                                 WitnessSearchSettings, goal_move,
                                                 moves_matrix)


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


def attacker_classes(table: Table) -> np.ndarray:
    """Per cell the single-contributor attacker who knows it (a class of cells holding
    one record, labelled by its smallest cell), -1 for none."""
    label = same_record(table)
    cells = np.arange(table.n_cells)
    return np.where(np.asarray(table.freq) == 1, np.where(label >= 0, label, cells), -1)


def attack_witnesses(table: Table, primaries: np.ndarray, deadline: float | None,
                     settings: WitnessSearchSettings | None = None) -> WitnessOutcome:
    """Integral moves of ``table``'s pattern that serve the ``primaries`` against every
    single-contributor attacker (see the module docstring), until ``deadline``
    (``time.perf_counter`` seconds; None: none). Product tables only."""
    s = settings or WitnessSearchSettings()
    n = table.n_cells
    empty = WitnessOutcome(sp_empty(n), np.zeros(0, np.int64), 0)
    if not table.dimensions or len(primaries) == 0:
        return empty
    attacker = attacker_classes(table)
    served = _Served(table, attacker)
    rows: list[tuple[np.ndarray, np.ndarray]] = []
    milps = 0
    probe = BoxProbe(table, s, deadline)
    for p, cells in probe.boxes(primaries, served.done):
        milps += _serve(table, served, attacker, cells, p, s, deadline, rows)
        if served.done(p):
            probe.hit()
    reached = np.array([p for p in np.asarray(primaries, dtype=np.int64).tolist()
                        if served.done(p)], dtype=np.int64)
    return WitnessOutcome(moves_matrix(rows, n), reached, milps)


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


def sp_empty(n: int):
    """No moves: an empty matrix over ``n`` cells."""
    return moves_matrix([], n)
