"""Interval widths after the elimination: every primary gets a witness of its levels.

The elimination keeps each primary out of the published span (no exact disclosure); the
protection levels ask more: feasible tables where the primary sits at least its upper
level above its value, and at least its lower level below.  For one primary ``s`` and one
direction the cheapest way there is the protection LP (Fischetti and Salazar-Gonzalez's
heuristic): the deviation ``y`` with ``A y = 0``, ``y_s >= UPL'_s`` (or ``<= -LPL'_s``),
each cell within its deviation range, where moving a suppressed cell is (nearly) free
and moving a published one costs its suppression cost per unit of range (capped at the
level).  Every cell that moves is suppressed: ``y`` is then a feasible table of the new
pattern that proves the condition, and suppressing more never breaks it, so one pass
over the conditions ends with every condition proven (or found impossible).

Why it is fast: the LP of a condition is written over a neighbourhood of the primary
(first its suppressed cells alone, a small LP that often shows the condition holds
already; then every cell a few relations away; every other cell keeps its value, which
is a restriction, so a solution is still a witness), or over its whole component when
that has none; and a witness
also settles the conditions of every other primary it moves far enough, which are then
not solved again.  An LP whose exact cost weights stall the simplex is solved with
log-scaled weights instead (:func:`log_weights`), and after a few such stalls every LP
of the step is (:attr:`WidthStep.fast`).  With the single-contributor attack every
single-contributor cell but the primary keeps its value in the LP, so each witness
holds against every such attacker at once.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram
from tabprotect.model.table import Table
from tabprotect.secondary.prune import Condition, conditions, log_weights
from tabprotect.secondary.attack_requirements import Requirements


@dataclass
class WidthOutcome:
    """What the width step did."""

    suppressed: np.ndarray  # the pattern (boolean per cell), extended
    added: int              # cells it suppressed
    lps: int                # protection LPs solved
    unmet: int              # conditions without a witness (no LP solution, or deadline)
    timed_out: bool         # the deadline stopped it
    #: per condition ``(primary, sign)`` the cells its witness moves: the witness stays
    #: valid while they stay suppressed (the pruning pass starts from these)
    witnesses: dict = field(default_factory=dict)
    stalls: int = 0         # exact-cost LPs solved again with the log weights


class WidthStep:
    """The protection LPs of one table (see the module docstring).

    ``hops``: the neighbourhood's radius in relations (the whole component when the LP
    over it has no solution); ``lp_seconds``: most seconds of one LP (a condition whose
    LP runs out goes without a witness to the audit and repair, so that one hard LP
    does not take the step's whole time); ``exact_iterations``: most simplex iterations
    of an LP with the exact cost weights, per row and column (a count, unlike seconds,
    that a loaded machine does not change; the exact LPs of HIER13, HIER133D and TABLE3
    take at most 0.6, NINENEW's stall past 0.6 where the solved ones took 0.2), past which
    it is solved again with :func:`log_weights`; after ``exact_stalls`` such stalls every further LP of the step
    is a fast one (:attr:`fast`); ``presolve``: HiGHS' presolve on the exact-cost LPs
    (the swap pass turns it off: its LPs take half the time, with the same swaps on
    TABLE7, HIE1372D and linked-1k/10k)."""

    def __init__(self, table: Table, cost: np.ndarray, singleton: bool, hops: int = 3,
                 lp_seconds: float = 10.0, exact_iterations: float = 0.75,
                 exact_stalls: int = 1, presolve: bool = True):
        self.table = table
        self.presolve = presolve
        self.cost = np.asarray(cost, float)
        self.req = Requirements.from_table(table, singleton=singleton)
        self.hops = hops
        self.lp_seconds = lp_seconds
        self.exact_iterations = exact_iterations
        self.exact_stalls = exact_stalls
        self.stalls = 0  # exact-cost LPs that ran out of their iterations (or time)
        A = table.relations.tocsr()
        self.A = A
        pattern = sp.csr_matrix((np.ones(A.nnz), A.indices, A.indptr), shape=A.shape)
        self.incidence = pattern
        self.incidence_t = pattern.T.tocsr()
        # cells that may be suppressed: neither published by force nor without range
        status = table.status
        self.candidate = (~np.isin(status, ("P", "Z"))
                          & ((self.req.up > 0) | (self.req.down > 0)))
        self.free_weight = 1e-6 * max(float(np.median(self.cost)), 1e-12)

    def conditions(self) -> list[Condition]:
        """Per primary its upward and downward conditions, the largest primaries first:
        their witnesses move the most, and the smaller primaries' conditions then often
        cost nothing."""
        return conditions(self.table, self.req)

    def run(self, suppressed: np.ndarray, deadline: float | None = None) -> WidthOutcome:
        """Extend the pattern ``suppressed`` until every condition has a witness."""
        z = np.asarray(suppressed, bool).copy()
        start = z.sum()
        lps = unmet = 0
        conds = self.conditions()
        done = np.zeros(len(conds), bool)
        index = {(c.cell, c.sign): q for q, c in enumerate(conds)}
        timed_out = False
        witnesses: dict = {}
        for q, cond in enumerate(conds):
            if done[q]:
                continue
            if _past(deadline):
                timed_out = True
                unmet += int((~done[q:]).sum())
                break
            y, n_lp = self.witness(cond, z, deadline)
            lps += n_lp
            if y is None:
                unmet += 1
                continue
            cells, dev = y
            z[cells[np.abs(dev) > 1e-9 * max(1.0, cond.need)]] = True
            self._settle(cells, dev, conds, index, done, witnesses, z)
            done[q] = True
            witnesses[(cond.cell, cond.sign)] = cells[np.abs(dev) > 1e-9 * max(1.0, cond.need)]
        return WidthOutcome(z, int(z.sum() - start), lps, unmet, timed_out, witnesses,
                            self.stalls)

    def _settle(self, cells, dev, conds, index, done, witnesses, z) -> None:
        """Mark every condition the witness ``dev`` (on ``cells``) meets, scaled as far
        as the deviation ranges allow, and its mirror ``-dev`` meets likewise."""
        req = self.req
        if req.singleton[cells].any() and (dev[req.singleton[cells]] != 0).any():
            return  # it moves a single-contributor cell: no witness for the others
        moved = dev != 0
        cells, dev = cells[moved], dev[moved]
        up, dn = req.up[cells], req.down[cells]
        with np.errstate(divide="ignore", invalid="ignore"):
            room_plus = np.where(dev > 0, up / dev, dn / -dev).min(initial=np.inf)
            room_minus = np.where(dev > 0, dn / dev, up / -dev).min(initial=np.inf)
        scales = [max(1.0, room_plus)] + ([-room_minus] if room_minus > 0 else [])
        for scale in scales:
            for c, d in zip(cells, scale * dev):
                q = index.get((int(c), 1.0 if d > 0 else -1.0))
                if q is not None and not done[q] and abs(d) >= conds[q].need:
                    done[q] = True
                    # the cells it suppressed (the others move by rounding noise only)
                    witnesses[(conds[q].cell, conds[q].sign)] = cells[z[cells]]

    def _neighbourhood(self, cell: int, hops: int, movable: np.ndarray
                       ) -> tuple[np.ndarray, bool]:
        """Movable cells within ``hops`` relations of ``cell``, and whether that is all
        of its component (the neighbourhood stopped growing)."""
        mask = np.zeros(self.table.n_cells)
        mask[cell] = 1.0
        for _ in range(hops):
            rows = self.incidence @ mask > 0
            grown = (self.incidence_t @ rows.astype(float) > 0) & movable
            grown[cell] = True
            if (grown == (mask > 0)).all():
                return np.flatnonzero(grown), True
            mask = grown.astype(float)
        return np.flatnonzero(mask > 0), False

    def witness(self, cond: Condition, z: np.ndarray, deadline: float | None,
                banned: int | None = None):
        """The cheapest deviation proving ``cond`` on the pattern ``z``: ``(cells,
        deviations)``, or None when no neighbourhood (up to the whole table) has one;
        and the number of LPs solved.  ``banned``: a cell that keeps its value (the
        swap pass's published cell); its LPs skip the one over the suppressed cells
        alone (the pruning pass has solved that)."""
        req = self.req
        movable = (z | self.candidate)
        if banned is not None:
            movable[banned] = False
        if req.singleton.any():
            movable = movable & ~req.singleton
            movable[cond.cell] = True
        # the fast LPs look one relation further (on a linked table of a few thousand
        # cells, where the exact ones stall, a primary's witness is rarely within
        # ``hops`` relations; one further it often is, at a third of the whole table)
        radius = self.hops + int(self.fast)
        lps = 0
        if z.sum() > 1 and banned is None:
            # first the suppressed cells alone (a small LP): the condition often holds
            # already, and then nothing is added
            hidden = z & movable
            hidden[cond.cell] = True
            cells, _ = self._neighbourhood(cond.cell, radius, hidden)
            y = self._solve(cond, cells, z, deadline) if len(cells) > 1 else None
            lps += len(cells) > 1
            if y is not None or _past(deadline):
                return ((cells, y) if y is not None else None), lps
        hops = radius
        while True:
            cells, whole = self._neighbourhood(cond.cell, hops, movable)
            y = self._solve(cond, cells, z, deadline)
            lps += 1
            if y is not None or whole or _past(deadline):
                return ((cells, y) if y is not None else None), lps
            # no solution near the primary: its whole component (an LP over it is
            # rarely slower than one over most of it, whose fixed border makes it hard)
            hops = self.table.n_cells

    def _solve(self, cond: Condition, cells: np.ndarray, z: np.ndarray,
               deadline: float | None):
        """The protection LP over ``cells`` (every other cell fixed at its value)."""
        sub = self.A[:, cells].tocsr()
        rows = np.flatnonzero(np.diff(sub.indptr) > 0)
        lp = self._protection_lp(cond, cells, split_rows(sub[rows]), z, self.req.up[cells],
                                 self.req.down[cells], self.free_weight / cond.need, cond.need)
        if lp is None:
            return None
        exact, A, lo, hi = lp
        zs = z[cells]
        if not self.fast:
            limit = int(self.exact_iterations * sum(A.shape)) + 1
            res, iterations = self._run_lp(exact, A, lo, hi, deadline, self.lp_seconds,
                                           presolve=self.presolve, iteration_limit=limit)
            if res.status not in ("time_limit_no_solution", "time_limit") \
                    and iterations < limit:
                return None if res.status != "optimal" else \
                    res.x[:len(cells)] - res.x[len(cells):]
            self.stalls += 1
        res, _ = self._run_lp(log_weights(exact, np.concatenate([zs, zs])), A, lo, hi,
                              deadline, self.lp_seconds, presolve=False)
        if res.status != "optimal":
            return None
        return res.x[:len(cells)] - res.x[len(cells):]

    def _protection_lp(self, cond: Condition, cells: np.ndarray, split: sp.csr_matrix,
                       z: np.ndarray, up: np.ndarray, dn: np.ndarray, hidden, reach: float):
        """``(weights, A, lo, hi)`` of the protection LP over ``cells`` (``split``: their
        relation rows in a cell's moves up and down, :func:`split_rows`; ``up``/``dn``:
        the moves' ranges): the suppressed cells (``z``) at ``hidden`` per unit, the
        published at their cost per unit of range, the primary moved by ``reach`` in its
        direction; None when its range leaves no such move."""
        k = int(np.searchsorted(cells, cond.cell))
        need, cost = cond.need, self.cost[cells]
        with np.errstate(divide="ignore", invalid="ignore"):
            wu = np.where(up > 0, cost / np.minimum(up, need), 0.0)
            wd = np.where(dn > 0, cost / np.minimum(dn, need), 0.0)
        zs = z[cells]
        weights = np.concatenate([np.where(zs, hidden, wu), np.where(zs, hidden, wd)])
        lo = np.zeros(2 * len(cells))
        hi = np.concatenate([up, dn])
        if cond.sign > 0:
            lo[k], hi[len(cells) + k] = reach, 0.0
        else:
            lo[len(cells) + k], hi[k] = reach, 0.0
        if lo[k] > hi[k] or lo[len(cells) + k] > hi[len(cells) + k]:
            return None
        return weights, split, lo, hi

    @property
    def fast(self) -> bool:
        """The exact-cost LPs stalled ``exact_stalls`` times: every further LP is a fast
        one (log weights, no presolve, one relation more around the primary)."""
        return self.stalls >= self.exact_stalls

    def _run_lp(self, weights, A, lo, hi, deadline, seconds, presolve: bool = True,
                iteration_limit: int | None = None):
        """One protection LP within ``seconds`` (and the deadline) and
        ``iteration_limit``: its result and simplex iterations; ``presolve=False``
        for the fast LPs (on them HiGHS' presolve takes most of the time: a third to a
        fifth of it without; on the exact ones it changes which optimal vertex, and so
        which witness, is found)."""
        model = self._lp_model(weights, A, lo, hi, presolve, iteration_limit)
        res = model.solve(time_limit=seconds_left(seconds, deadline), duals=False)
        return res, int(model.highs.getInfo().simplex_iteration_count)

    @staticmethod
    def _lp_model(weights, A, lo, hi, presolve: bool = True,
                  iteration_limit: int | None = None) -> HighsModel:
        """The protection LP ``min weights @ y, A y = 0, lo <= y <= hi`` as a model."""
        lp = LinearProgram(c=weights, A=A, row_lower=np.zeros(A.shape[0]),
                           row_upper=np.zeros(A.shape[0]), col_lower=lo, col_upper=hi,
                           sense="min")
        options = {} if presolve else {"presolve": "off"}
        if iteration_limit is not None:
            options["simplex_iteration_limit"] = iteration_limit
        return HighsModel(lp, **options)


def split_rows(sub: sp.csr_matrix) -> sp.csr_matrix:
    """``[sub, -sub]``: the relation rows ``sub`` in a cell's moves up and down."""
    return sp.hstack([sub, -sub]).tocsr()


def seconds_left(seconds: float, deadline: float | None) -> float:
    """``seconds``, or less where the deadline comes first (at least 0.01)."""
    return seconds if deadline is None else \
        min(seconds, max(0.01, deadline - time.perf_counter()))


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.perf_counter() > deadline
