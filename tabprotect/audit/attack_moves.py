"""Least moves that certify a primary against many attackers at once.

A witness certifies a primary against an attacker when it is a feasible table *for that
attacker*: within the bounds of what it knows. A single contributor knows one cell (or
the cells of its one record) exactly, so a move of the table that leaves those cells
alone is a witness against it. The witnesses of the LPs that push a cell to its bound
move most of a component (on a 3-D count table, a branch-and-bound table moves half the
cells by up to twenty), so they hold against almost no other attacker; a *least move*
-- the smallest total change (L1) that takes the primary to its goal, on the warm model
of :class:`~tabprotect.audit.least_moves.LeastMoveModel` -- moves a handful of cells (a
cube or a short cycle of the relations) and holds against every attacker who knows none
of them.

So per primary and direction, where at least ``AuditSettings.attacker_pair_min``
attackers attack the primary, first two moves: one that
takes the primary to its goal while moving the cells its attackers know as little as it
can (each unit there costs ``AuditSettings.attacker_weight``, elsewhere one), which holds
against every attacker it leaves in place, then one with every attacker not yet
certified against held within what it knows, which holds against those. On a large
component the pair covers most attackers of a primary at two LPs; with a few attackers
one least move each costs fewer. Then, for the attackers left: take one the moves so far
do not certify the primary against, find the least move with *its* knowledge in the
bounds (so that it certifies against that attacker at least), check the move against
every attacker of the primary, and repeat while the primary's budget of LPs
(``AuditSettings.attacker_move_lps``) lasts. Where the least moves come out fractional
(a flat 3-D count table: nine in ten), the pass stops once fewer than
``attacker_move_min_yield`` of its LPs gave a move. A move and its mirror image count only
where they are feasible for the attacker (for an integer intruder only whole, integral
moves count), and each move is checked against the relations and the bounds before it
is used, never taken from the solver on trust.

The pass only certifies: a primary it leaves open against an attacker goes to that
attacker's own pass, which decides it exactly. The verdict is therefore the one of
separate passes; only the LPs differ.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tabprotect.audit.attack_groups import pending_targets
from tabprotect.audit.least_moves import LeastMoveModel, goals
from tabprotect.audit.moves import mirror_share
from tabprotect.audit.system import out_of_time
from tabprotect.audit_result import meets_requirement

if TYPE_CHECKING:
    from tabprotect.audit.component import ComponentTask
    from tabprotect.audit.contributors import Attacker
    from tabprotect.audit.system import Knowledge, ReducedSystem


def move_passes(task: "ComponentTask", attackers: list["Attacker"],
                targets_of: list[np.ndarray], counters: dict) -> list[np.ndarray]:
    """The targets each attacker's own pass still has to judge after the least moves
    (``targets_of[a]``: the primaries attacker ``a`` attacks)."""
    system = task.system
    pending = pending_targets(system.k, targets_of)
    book = _MoveBook(system, [a.knowledge for a in attackers], task.integer)
    settings = task.settings
    for p in np.flatnonzero(pending.any(axis=0)):
        if out_of_time(task.deadline):
            break
        if book.tried >= 2 * settings.attacker_move_lps and \
                book.found < settings.attacker_move_min_yield * book.tried:
            break   # the least moves here are mostly fractional: the passes after decide
        against = np.flatnonzero(pending[:, p])
        ok = _certify(task, book, int(p), against, counters)
        pending[against[ok], p] = False
    counters["attacker_moves"] += len(book.moves)
    return [np.flatnonzero(row) for row in pending]


def _certify(task: "ComponentTask", book: "_MoveBook", p: int, against: np.ndarray,
             counters: dict) -> np.ndarray:
    """Which of the attackers ``against`` primary ``p`` is certified against by least
    moves, found within ``task.settings.attacker_move_lps`` LPs."""
    system = task.system
    v = system.value[p]
    req = (task.req_lo[p], task.req_hi[p], task.req_w[p])
    lo, hi = book.reach(p, against)
    ok = meets_requirement(lo, hi, *req, np.full(len(against), v))
    budget = task.settings.attacker_move_lps
    by_sense = goals(v, *req, task.integer)
    # per attacker: the just-required goal up, then down, then the whole width up or down
    tries = [(s, g[i]) for i in (-1, 0) for s in ("max", "min")
             for g in [by_sense[s]] if g and (i == -1 or len(g) > 1)]
    # (counted before the moves kept from earlier primaries: on the 4,845-cell count
    # table those leave a primary's pair out where it would spare LPs)
    pair = len(against) >= task.settings.attacker_pair_min
    for sense, goal in (tries if pair else []):
        # one move with every attacker dear to move, then one with those it moved held
        # in place: together they cover most attackers of a large component
        for held in (False, True):
            if budget <= 0 or ok.all() or out_of_time(task.deadline):
                break
            if (hi >= goal).all() if sense == "max" else (lo <= goal).all():
                break
            budget -= 1
            keep = against[~ok] if held else against[:0]
            d = book.attack_move(p, sense, goal, against, keep,
                                 task.settings.attacker_weight, counters)
            if d is None:
                continue
            book.add(d)
            lo, hi = book.reach(p, against)
            ok = meets_requirement(lo, hi, *req, np.full(len(against), v))
    given_up = np.zeros(len(against), dtype=bool)
    while budget > 0 and not (ok | given_up).all():
        if out_of_time(task.deadline):
            break
        a = int(np.flatnonzero(~ok & ~given_up)[0])
        for sense, goal in tries:
            if budget <= 0 or ok[a]:
                break
            if (hi[a] >= goal) if sense == "max" else (lo[a] <= goal):
                continue
            budget -= 1
            d = book.least_move(p, sense, goal, int(against[a]), counters)
            if d is None:
                continue
            book.add(d)
            lo, hi = book.reach(p, against)
            ok = meets_requirement(lo, hi, *req, np.full(len(against), v))
        given_up[a] |= ~ok[a]
    return ok


class _MoveBook:
    """The checked least moves of one component and, per move, which attackers it (and
    its mirror image) holds against."""

    def __init__(self, system: "ReducedSystem", knowledge: list["Knowledge"],
                 integer: bool):
        self.system, self.knowledge, self.integer = system, knowledge, integer
        self.model = LeastMoveModel.of(system)
        self._start = None   # the basis of the least move of no goal (no move at all)
        n = len(knowledge)
        # every attacker's bounds as one flat list of entries
        self.owner = np.repeat(np.arange(n), [len(kn.index) for kn in knowledge])
        self.index = np.concatenate([kn.index for kn in knowledge]) if n else \
            np.zeros(0, np.int64)
        self.lower = np.concatenate([kn.lower for kn in knowledge]) if n else np.zeros(0)
        self.upper = np.concatenate([kn.upper for kn in knowledge]) if n else np.zeros(0)
        self.tried = self.found = 0   # least-move LPs, and those that gave a move
        self.moves: list[np.ndarray] = []
        self.forward: list[np.ndarray] = []   # per move: feasible for each attacker
        self.mirror: list[np.ndarray] = []    # per move: share of its mirror image
        self._stacked = np.zeros((0, system.k))

    def least_move(self, p: int, sense: str, goal: float, attacker: int,
                   counters: dict) -> np.ndarray | None:
        """The least move taking ``p`` to ``goal`` within what ``attacker`` knows,
        checked (integral for an integer intruder), or None."""
        return self._move(p, sense, goal, np.array([attacker]), None, counters)

    def attack_move(self, p: int, sense: str, goal: float, dear: np.ndarray,
                    held: np.ndarray, weight: float, counters: dict) -> np.ndarray | None:
        """The move taking ``p`` to ``goal`` that moves the cells the attackers ``dear``
        know least (each unit there costs ``weight``, elsewhere one), within what every
        attacker of ``held`` knows; checked like :meth:`least_move`."""
        k = self.system.k
        cells = np.unique(np.concatenate(
            [self.knowledge[a].index for a in dear] + [np.zeros(0, np.int64)]))
        cost = np.ones(2 * k)
        cost[cells] = cost[cells + k] = weight
        return self._move(p, sense, goal, held, cost, counters)

    def _move(self, p: int, sense: str, goal: float, held: np.ndarray,
              cost: np.ndarray | None, counters: dict) -> np.ndarray | None:
        """The cheapest move (objective ``cost``, default the total change) taking ``p``
        to ``goal`` within what every attacker of ``held`` knows, checked, or None."""
        model, v = self.model, self.system.value
        k = self.system.k
        index = np.concatenate([self.knowledge[a].index for a in held] +
                               [np.zeros(0, np.int64)])
        cells = np.unique(index)
        # the intersection of the held attackers' bounds, as deviations from the value
        up, dn = model.up[cells].copy(), model.dn[cells].copy()
        low_up, low_dn = np.zeros(len(cells)), np.zeros(len(cells))
        for a in held:
            kn = self.knowledge[a]
            at = np.searchsorted(cells, kn.index)
            up[at] = np.minimum(up[at], kn.upper - v[kn.index])
            dn[at] = np.minimum(dn[at], v[kn.index] - kn.lower)
            low_up[at] = np.maximum(low_up[at], kn.lower - v[kn.index])  # a known least share
        up, dn = np.clip(up, 0.0, None), np.clip(dn, 0.0, None)
        low_up = np.minimum(low_up, up)
        cols = np.concatenate([cells, cells + k])
        model.model.set_col_bounds(cols, np.concatenate([low_up, low_dn]),
                                   np.concatenate([up, dn]))
        if cost is not None:
            model.model.set_objective(cost)
        try:
            # each solve starts from the basis of no move: the least move of one primary
            # is little like the previous primary's, and undoing that one costs as many
            # dual-simplex iterations as finding this one (half the time per LP on a
            # 444-cell count component)
            self._from_start(counters)
            d = model.solve(p, sense, goal, counters)
        finally:
            model.model.set_col_bounds(cols, np.zeros(len(cols)),
                                       np.concatenate([model.up[cells], model.dn[cells]]))
            if cost is not None:
                model.model.set_objective(np.ones(2 * k))
        self.tried += 1
        if d is None:
            return None
        if self.integer:
            if np.abs(d - np.round(d)).max() > 1e-6:
                return None
            d = np.round(d)
        if not self._valid(d):
            return None
        self.found += 1
        return d

    def _from_start(self, counters: dict) -> None:
        """Give the least-move model the basis of no move (found by one LP on first
        use, before any goal is set)."""
        highs = self.model.model.highs
        if self._start is None:
            self.model.model.solve()
            counters["lp"] += 1
            self._start = highs.getBasis()
        highs.setBasis(self._start)

    def _valid(self, d: np.ndarray) -> bool:
        """Whether ``value + d`` is a feasible table (the relations within the
        system's tolerance, every cell within its a-priori bounds) and moves anything."""
        s = self.system
        x = s.value + d
        scale = np.maximum(1.0, np.abs(s.value))
        if not np.any(np.abs(d) > 1e-9 * scale):
            return False
        tol = 1e-9 * scale
        if np.any(x < s.lb - tol) or np.any(x > s.ub + tol):
            return False
        row_tol = s.row_tol if s.relaxed else 0.0
        residual = np.abs(s.A @ x - s.rhs)
        return bool(np.all(residual <= row_tol + 1e-7 * np.maximum(1.0, np.abs(s.rhs))))

    def add(self, d: np.ndarray) -> None:
        """Keep a checked move, with the attackers it holds against."""
        s, n = self.system, len(self.knowledge)
        v = s.value[self.index]
        step = d[self.index]
        x = v + step
        tol = 1e-9 * np.maximum(1.0, np.abs(v))
        bad = (x < self.lower - tol) | (x > self.upper + tol)
        forward = np.bincount(self.owner[bad], minlength=n) == 0
        moved = np.flatnonzero(np.abs(d) > 1e-9 * np.maximum(1.0, np.abs(s.value)))
        t0 = mirror_share(s.value[moved], s.lb[moved], s.ub[moved], d[moved])
        share = np.full(n, t0)
        hit = np.abs(step) > 1e-9 * np.maximum(1.0, np.abs(v))
        if hit.any():
            room = np.where(step[hit] > 0, v[hit] - self.lower[hit],
                            self.upper[hit] - v[hit]) / np.abs(step[hit])
            np.minimum.at(share, self.owner[hit], room)
        share = np.where(share > 1e-9, share, 0.0)
        if self.integer:
            share = np.where(share >= 1.0, 1.0, 0.0)   # a scaled point need not be integral
        self.moves.append(d)
        self.forward.append(forward)
        self.mirror.append(share)
        s.bank.keep(d)   # a witness for the attackers' own passes too

    def reach(self, p: int, against: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The lowest and highest value of ``p`` the kept moves give it against each
        attacker of ``against``."""
        v = self.system.value[p]
        lo = np.full(len(against), v)
        hi = np.full(len(against), v)
        for d, fwd, share in zip(self.moves, self.forward, self.mirror):
            step = d[p]
            if step == 0.0:
                continue
            ahead = np.where(fwd[against], v + step, v)
            back = v - share[against] * step
            lo = np.minimum(lo, np.minimum(ahead, back))
            hi = np.maximum(hi, np.maximum(ahead, back))
        return lo, hi
