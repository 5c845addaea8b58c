"""Pruning a protected pattern: publish again the secondaries it does not need.

A heuristic's pattern often carries suppressions that no primary relies on (the
elimination and the width step add cells one condition at a time, and a later cell can
make an earlier one redundant).  The pruning pass tries the secondaries dearest first:
one is published again when every primary stays protected without it.

Each protection condition (a primary, a direction, the deviation it must reach; see
:func:`conditions`) keeps a witness: a deviation ``y`` of the suppressed cells with
``A y = 0``, each cell within its deviation range, every single-contributor cell but the
primary fixed (so the witness holds against each single-contributor attacker too), and
``y_s`` at least the need.  A witness is a feasible table of the pattern, so it proves
the condition.  Publishing a cell the witness does not move keeps it valid; for the
conditions whose witness moves the cell, a new witness is solved with the cell fixed
(the protection LP over the suppressed cells only).  The cell is published when every
such LP has a solution; otherwise it stays.  Witnesses avoid dear cells (each cell's
movement is weighted by its cost), so the dear cells tried first are moved by few.

The LP witness is a real-valued table: it proves protection against the audit's
real-valued intruder (magnitude tables), not against the integer intruder of a
frequency table, where :func:`prune` leaves the pattern as it is.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram
from tabprotect.model.table import Table
from tabprotect.secondary.attack_requirements import Requirements


@dataclass(frozen=True)
class Condition:
    """One protection condition of a primary."""

    cell: int       # the primary
    slot: int       # its index in Requirements.primary
    sign: float     # +1: upwards, -1: downwards
    need: float     # the deviation a witness must reach


def conditions(table: Table, req: Requirements) -> list[Condition]:
    """Per primary its upward and downward conditions (a sliding level asks at least
    half of it each way, and what the other way's range cannot give: a count 1 at its
    bound 1 takes the whole width upwards), with a small margin over the level, never
    beyond the cell's range; the largest primaries first (upwards before downwards)."""
    out = []
    for k, s in enumerate(req.primary):
        for sign, rng in ((1.0, req.up[s]), (-1.0, req.down[s])):
            need = req.way_need(k, sign)
            if need <= 0:
                continue
            need = min(need * (1 + 1e-6) + req.tol[k], float(rng))
            out.append(Condition(int(s), k, sign, need))
    size = np.abs(table.value)
    out.sort(key=lambda c: (-size[c.cell], -c.sign))
    return out


@dataclass
class PruneOutcome:
    """What the pruning pass did."""

    status: np.ndarray   # the pattern (status per cell) with the pruned cells published
    pruned: int          # secondaries published again
    tried: int           # secondaries tried
    lps: int             # protection LPs solved
    timed_out: bool      # the deadline stopped it before every secondary was tried
    skipped: str = ""    # why nothing was tried ("" when it ran)
    #: per condition ``(primary, sign)`` the cells its witness moves on the returned
    #: pattern (empty when nothing was tried): the swap pass starts from these
    witnesses: dict = field(default_factory=dict)


def prune(table: Table, status: np.ndarray, cost: np.ndarray, *, singleton: bool = True,
          deadline: float | None = None, lp_seconds: float = 10.0,
          witnesses: dict | None = None) -> PruneOutcome:
    """Publish again the secondaries of ``status`` (cells ``M`` that are not ``M`` in
    ``table``) that no primary needs, dearest first, within ``deadline``
    (``time.perf_counter()`` seconds).  ``lp_seconds``: most seconds of one LP (a cell
    whose LP runs out stays suppressed).  Nothing is pruned when some condition has no
    witness in the given pattern (the pattern is then not proven protected, and no
    removal can be judged), or on a frequency table (see the module docstring).
    ``witnesses``: per condition ``(primary, sign)`` the cells a known witness moves (as
    the width step gives them; such a witness is valid while its cells are suppressed,
    and spares that condition's first LP)."""
    status = np.asarray(status).copy()
    if table.kind == "frequency":
        return PruneOutcome(status, 0, 0, 0, False, "frequency table")
    model = _WitnessModel(table, status, cost, singleton, lp_seconds)
    known = witnesses or {}
    hidden = np.isin(status, ("U", "M"))
    witnesses = {}
    for q, cond in enumerate(model.conds):
        if _past(deadline):
            return PruneOutcome(status, 0, 0, model.lps, True, "deadline")
        moved = known.get((cond.cell, cond.sign))
        if moved is None or not hidden[moved].all():
            moved = model.witness(cond, deadline)
        if moved is None:
            if _past(deadline):
                return PruneOutcome(status, 0, 0, model.lps, True, "deadline")
            return PruneOutcome(status, 0, 0, model.lps, False,
                                "a condition has no witness in the given pattern")
        witnesses[q] = moved
    users: dict[int, set[int]] = {}
    for q, moved in witnesses.items():
        for c in moved.tolist():
            users.setdefault(c, set()).add(q)
    removable = np.flatnonzero((status == "M") & (table.status != "M"))
    order = removable[np.lexsort((removable, -np.asarray(cost, float)[removable]))]
    pruned = tried = 0
    timed_out = False
    fails = np.zeros(len(model.conds), int)
    for x in order.tolist():
        if _past(deadline):
            timed_out = True
            break
        tried += 1
        model.fix(x, True)
        new: dict[int, np.ndarray] = {}
        found: list[np.ndarray] = []  # this try's witnesses (deviations per column)
        # the conditions that failed most often first: a cell that must stay is
        # usually found so with one LP
        for q in sorted(users.get(x, ()), key=lambda q: (-fails[q], q)):
            moved = model.reuse(model.conds[q], found)
            if moved is None:
                got = model.witness(model.conds[q], deadline, deviation=True)
                if got is None:
                    fails[q] += 1
                    break
                moved, y = got
                found.append(y)
            new[q] = moved
        else:
            status[x] = table.status[x]
            pruned += 1
            for q, moved in new.items():
                for c in witnesses[q].tolist():
                    users[c].discard(q)
                witnesses[q] = moved
                for c in moved.tolist():
                    users.setdefault(c, set()).add(q)
            users.pop(x, None)
            continue
        model.fix(x, False)
    found = {(model.conds[q].cell, model.conds[q].sign): moved
             for q, moved in witnesses.items()}
    return PruneOutcome(status, pruned, tried, model.lps, timed_out, witnesses=found)


class _WitnessModel:
    """The protection LP over the suppressed cells of a pattern, one model re-solved per
    condition (columns ``y+`` and ``y-`` per suppressed cell, rows the relations among
    them: the published cells keep their values)."""

    def __init__(self, table: Table, status: np.ndarray, cost: np.ndarray, singleton: bool,
                 lp_seconds: float):
        self.req = req = Requirements.from_table(table, singleton=singleton)
        self.conds = conditions(table, req)
        self.cells = np.flatnonzero(np.isin(status, ("U", "M")))
        self.col = np.full(table.n_cells, -1)
        self.col[self.cells] = np.arange(len(self.cells))
        k = len(self.cells)
        sub = table.relations.tocsr()[:, self.cells].tocsr()
        sub = sub[np.flatnonzero(np.diff(sub.indptr) > 0)]
        cost = np.asarray(cost, float)[self.cells]
        positive = cost[cost > 0]
        weight = cost / (float(np.median(positive)) if len(positive) else 1.0)
        weight[np.isin(table.status[self.cells], ("U", "M"))] = 0.0  # never pruned
        self.up = np.where(req.singleton[self.cells], 0.0, req.up[self.cells])
        self.down = np.where(req.singleton[self.cells], 0.0, req.down[self.cells])
        self.lp_seconds = lp_seconds
        self.lps = 0
        self.stalls = 0  # exact-weight solves that ran out of EXACT_LP_SECONDS
        free = weight == 0
        self.fast_weights = log_weights(np.concatenate([weight, weight]),
                                        np.concatenate([free, free]))
        self.exact_weights = np.concatenate([weight, weight])
        lp = LinearProgram(c=self.exact_weights,
                           A=sp.hstack([sub, -sub]).tocsr(),
                           row_lower=np.zeros(sub.shape[0]), row_upper=np.zeros(sub.shape[0]),
                           col_lower=np.zeros(2 * k), col_upper=np.concatenate([self.up,
                                                                                self.down]),
                           sense="min")
        self.k = k
        self.model = HighsModel(lp)

    def fix(self, cell: int, fixed: bool) -> None:
        """Publish ``cell`` (its deviation fixed at 0) or suppress it again."""
        j = int(self.col[cell])
        hi = [0.0, 0.0] if fixed else [self.up[j], self.down[j]]
        self.model.set_col_bounds([j, self.k + j], [0.0, 0.0], hi)

    def reuse(self, cond: Condition, found: list[np.ndarray]) -> np.ndarray | None:
        """The cells moved by a witness of ``cond`` among the deviations ``found`` on
        the current model (each solved for another condition) or their mirrors, or
        None: a deviation is a witness of ``cond`` when it moves the primary at least
        the need its way and keeps every other cell within its range of this model."""
        j = int(self.col[cond.cell])
        up, down = self.up.copy(), self.down.copy()
        up[j], down[j] = self.req.up[cond.cell], self.req.down[cond.cell]
        for y in found:
            tol = 1e-9 * max(1.0, float(np.abs(y).max(initial=0.0)))
            for v in (y, -y):
                if (cond.sign * v[j] >= cond.need and (v <= up + tol).all()
                        and (-v <= down + tol).all()):
                    return self.cells[np.abs(v) > 1e-9 * max(1.0, cond.need)]
        return None

    def witness(self, cond: Condition, deadline: float | None, deviation: bool = False):
        """The cells a witness of ``cond`` moves (table indices), or None when the LP
        has no solution within its time; with ``deviation``, those cells and the
        witness' deviation per column."""
        req, j, k = self.req, int(self.col[cond.cell]), self.k
        up, down = float(req.up[cond.cell]), float(req.down[cond.cell])
        lo = [cond.need, 0.0] if cond.sign > 0 else [0.0, cond.need]
        hi = [up, 0.0] if cond.sign > 0 else [0.0, down]
        self.model.set_col_bounds([j, k + j], lo, hi)
        res = self._solve(deadline)
        self.lps += 1
        self.model.set_col_bounds([j, k + j], [0.0, 0.0], [self.up[j], self.down[j]])
        if res.status != "optimal":
            return None
        y = res.x[:k] - res.x[k:]
        moved = self.cells[np.abs(y) > 1e-9 * max(1.0, cond.need)]
        return (moved, y) if deviation else moved

    def _solve(self, deadline: float | None):
        """A warm solve with the exact weights within ``WARM_LP_SECONDS`` (from the
        previous witness' basis: a third of a cold solve's time on small tables); when
        that stalls, a cold one within ``EXACT_LP_SECONDS``, solved again with
        :func:`log_weights` and no presolve when it stalls too; after ``EXACT_STALLS``
        such stalls with those at once."""
        def left(seconds):
            return seconds if deadline is None else \
                min(seconds, max(0.01, deadline - time.perf_counter()))
        if self.stalls < EXACT_STALLS:
            # an "infeasible" answer of a warm solve is confirmed cold by the model
            res = self.model.solve(time_limit=left(min(self.lp_seconds, WARM_LP_SECONDS)))
            if res.status in ("optimal", "infeasible"):
                return res
        self.model.highs.clearSolver()
        if self.stalls < EXACT_STALLS:
            res = self.model.solve(time_limit=left(min(self.lp_seconds, EXACT_LP_SECONDS)))
            if res.status not in ("time_limit", "time_limit_no_solution"):
                return res
            self.stalls += 1
            self._weights(fast=True)
            self.model.highs.clearSolver()
        res = self.model.solve(time_limit=left(self.lp_seconds))
        if self.stalls < EXACT_STALLS:
            self._weights(fast=False)
        return res

    def _weights(self, fast: bool) -> None:
        """The fast LP (log weights, no presolve) or the exact one."""
        self.model.set_objective(self.fast_weights if fast else self.exact_weights)
        self.model.highs.setOptionValue("presolve", "off" if fast else "choose")


def log_weights(weight: np.ndarray, free: np.ndarray) -> np.ndarray:
    """The protection LP's weights for its numerics: ``1 + log(w / w_min)`` per published
    cell's column (``w_min`` its least positive weight), ``FREE_LOG_WEIGHT`` per
    suppressed cell's.  The exact weights (spread over eight orders of magnitude, with
    the suppressed cells' a millionth of the median) can stall HiGHS' simplex for many
    seconds on a linked table of a few thousand cells, where these solve in a fraction of
    a second; their witnesses may move dearer cells, which the pruning pass (exact
    costs) publishes again where it can."""
    pos = weight[(weight > 0) & ~free]
    ref = float(pos.min()) if len(pos) else 1.0
    out = 1.0 + np.log(np.maximum(weight, ref) / ref)
    return np.where(free, FREE_LOG_WEIGHT, out)


#: weight of moving a suppressed cell in :func:`log_weights` (a published cell's is 1 or
#: more): small, so that the witness moves the suppressed cells first
FREE_LOG_WEIGHT = 0.01


#: most seconds of a pruning LP with the exact weights before it is solved again with
#: :func:`log_weights` (they solve in a fraction of a second where the exact ones stall)
EXACT_LP_SECONDS = 1.0
#: most seconds of a warm pruning LP before it is solved again cold (warm re-solves
#: can stall on linked tables of a few thousand cells)
WARM_LP_SECONDS = 0.2
#: stalls of the exact weights after which every further LP takes the log weights
EXACT_STALLS = 3


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.perf_counter() > deadline
