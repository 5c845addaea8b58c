"""The intruder's system behind :func:`tabprotect.public_summary.public_summary`: the
primaries' intervals without the released figures and whether one more figure narrows any
of them (witness points first, LPs and, for integer tables, MILPs where none shows it).

An end needs no interval without the figure where a solution with the figure reaches a
bound that holds without it: the cell's outer bound (the a-priori bounds propagated over
the relations) or, in magnitude tables, the Lagrangian bound from the duals of the end's
own solve with the figure (the figures' rows dropped). Both bounds are valid for the system
without the figure, so an end that reaches one is kept; the interval without the figure is
solved only where neither decides."""
from __future__ import annotations

import dataclasses
import time

import numpy as np
import scipy.sparse as sp

from solvers import LinearProgram, solve
from tabprotect.audit.propagate import outer_bounds
from tabprotect.model.relations import linked_components
from tabprotect.model.status import is_suppressed
from tabprotect.model.table import Table
from tabprotect.public_summary.base import IntegerEnds, WarmSystems
from tabprotect.public_summary.moves import ComponentMoves
from tabprotect.public_summary.shifted import shifted
from tabprotect.public_summary.systems import (Bounds, Forecast, Pace, Points,
                                                SearchClock, VertexOdds,
                                                independent_cells, integral,
                                                integral_point_at, integral_vertex,
                                                lagrange_bound, magnitude, spans)

__all__ = ["Checker"]



class Checker:
    """The intruder's system over the unpublished cells, the primaries' intervals in it,
    and the figures released so far as extra rows."""

    def __init__(self, table: Table, status, integer: bool, tol: float, deadline,
                 joint: int = 3, forecast: Forecast = Forecast()):
        self.tol, self.deadline, self.integer = tol, deadline, integer
        # integer tables: the searches of the ends without the figures, timed for the
        # forecast of whether a check can finish (kept from one figure to the next)
        self.forecast, self.clock = forecast, SearchClock()
        sup = is_suppressed(status)
        self.cells = np.flatnonzero(sup)
        self.value = table.value.astype(float)
        self.published = ~sup
        A = table.relations.tocsr()
        sub = A[:, self.cells].tocsr()
        rows = np.flatnonzero(np.diff(sub.indptr) > 0)
        rhs = -np.asarray(A[rows] @ np.where(sup, 0.0, self.value), dtype=float)
        # relations that hold only up to rounding in the true table hold so for the intruder
        size = np.asarray(abs(A[rows]) @ np.abs(self.value), dtype=float)
        band = 1.5 * np.abs(np.asarray(A[rows] @ self.value, dtype=float)) \
            + 1e-12 * np.maximum(1.0, size)
        self.lp = LinearProgram(c=np.zeros(len(self.cells)), A=sub[rows],
                                row_lower=rhs - band, row_upper=rhs + band,
                                col_lower=table.lb[self.cells], col_upper=table.ub[self.cells])
        self.base = Bounds(self.lp, integer, deadline)
        self.ext = Bounds(self.lp, integer, deadline)
        comps = linked_components(A, sup)
        self.comp = np.full(len(self.cells), -1)
        local = np.full(table.n_cells, -1)
        local[self.cells] = np.arange(len(self.cells))
        for k, c in enumerate(comps):
            self.comp[local[c]] = k
        self.primary = np.flatnonzero(status[self.cells] == "U")
        self.n_comp = len(comps)
        # each component's columns and rows (every row lies in one component)
        order = np.argsort(self.comp, kind="stable")
        self.comp_cols = np.split(order, np.cumsum(np.bincount(self.comp,
                                                               minlength=self.n_comp))[:-1])
        A_lp = self.lp.A.tocsr()
        row_comp = self.comp[A_lp.indices[A_lp.indptr[:-1]]] if A_lp.shape[0] else \
            np.zeros(0, np.int64)
        self.comp_rows = [np.flatnonzero(row_comp == k) for k in range(self.n_comp)]
        self.A_csr = A_lp
        # components by size, largest first (the likeliest to make up a change of a
        # component's part of the figures)
        self.by_size = np.argsort([-len(c) for c in self.comp_cols], kind="stable")
        self.joint = joint
        # per released figure: its part's (min, max) per component
        self.rows: list[tuple[np.ndarray, np.ndarray]] = []
        # per released figure: its coefficients over the unpublished cells
        self.released: list[np.ndarray] = []
        # the same for released figures the published cells determine (constant over the
        # intruder's system: not a row of the later checks)
        self.determined: list[np.ndarray] = []
        # per figure withheld because it narrows a primary: its coefficients over the
        # unpublished cells (a later figure that discloses it narrows as much)
        self.narrowing: list[np.ndarray] = []
        # the same for figures withheld because their check did not finish in time: a
        # later figure that discloses one is withheld for time too, without a check
        self.late: list[np.ndarray] = []
        self.base_lo = np.full(len(self.cells), np.nan)
        self.base_hi = np.full(len(self.cells), np.nan)
        # solutions of the system without the figures, for _spanned (LP tables only)
        self.points = Points(len(self.cells)) if not integer else None
        # integer tables: per sense, primary -> its component's part of an integral
        # solution without the figures at that end (for :func:`.shifted.shifted`)
        self.ends: dict[str, dict[int, np.ndarray]] = {"min": {}, "max": {}}
        # integer tables: the components' integral moves for the figure under check
        self.moves: ComponentMoves | None = None
        # integer tables: whether an integral LP vertex is still looked for before a MILP
        self.odds = VertexOdds()
        # integer tables: whether an end point leaning toward the figures' true parts is
        # still looked for where no move makes up an end point (:func:`.shifted.leaning`)
        self.lean_odds = VertexOdds()
        # integer tables: the components' warm solves of the ends without the figures
        self.table = table
        self.int_ends: IntegerEnds | None = None
        self.warm = WarmSystems(deadline)
        self._outer: tuple[np.ndarray, np.ndarray] | None = None
        # whether the intervals' rounds solve the whole system's LP (:meth:`_base_round`)
        self.whole_rounds = True
        self._A_csc = A_lp.tocsc()
        self._A_T = A_lp.T.tocsr()        # for the duals' bounds (:meth:`_lagrange`)

    def try_release(self, coef: np.ndarray, rhs: float) -> str | None:
        """None if the figure narrows no primary (its row is then kept), else a reason."""
        coef = np.asarray(coef, dtype=float)
        free = coef[self.cells]
        const = float(coef[self.published] @ self.value[self.published])
        truth = float(free @ self.value[self.cells]) + const
        scale = max(1.0, abs(rhs), float(np.abs(coef) @ np.abs(self.value)))
        if abs(truth - rhs) > 1e-6 * scale:
            return "inconsistent"
        nz = np.flatnonzero(free)
        if len(nz) == 0:
            return None          # a function of published cells only
        if self._implied(free):
            return None          # the intruder computes it from the figures released
        if (reason := self._discloses_withheld(free)) is not None:
            return reason
        band = abs(truth - rhs) + 1e-12 * scale
        ranges = self._ranges(free, nz)
        if ranges is None:
            self.late.append(free)
            return "time"
        if np.all(ranges[1] - ranges[0] <= 1e-9 * scale):
            # constant over the intruder's system: the published cells determine it, so
            # it adds nothing, and later figures are checked as if it were not there
            self.determined.append(free)
            return None
        active = self._active(ranges, scale, rhs - const, band)
        targets = self.primary[active[self.comp[self.primary]]]
        if len(targets) == 0:
            self._keep(ranges, free)
            return None
        row = sp.csr_matrix((free[nz], (np.zeros(len(nz), int), nz)), shape=(1, len(free)))
        new_row = self.ext.add_row(row, rhs - const - band, rhs - const + band)
        self.moves = ComponentMoves(self, self.rows + [ranges])
        reason = self._holds(targets, self.released + [free])
        if reason is None:
            self._keep(ranges, free)
        else:
            self.ext.delete_row(new_row)
            if reason == "narrows":
                self.narrowing.append(free)
            elif reason == "time":
                self.late.append(free)
        return reason

    def _keep(self, ranges, free: np.ndarray) -> None:
        self.rows.append(ranges)
        self.released.append(free)

    def _implied(self, free: np.ndarray) -> bool:
        """The row's part over the unpublished cells is a combination of the released
        figures' parts: the intruder who knows those figures (and the published cells)
        computes this one, so it tells nothing more (its value agrees with the table)."""
        return spans(self.released + self.determined, free)

    def _discloses_withheld(self, free: np.ndarray) -> str | None:
        """``"narrows"`` where, with the figures released and this row, the intruder
        computes a figure withheld because it narrows a primary: every table this row
        and the released figures allow, that figure's row and the figures released at
        its check allow too (the released ones only grow), so the primary is narrowed at
        least as much and this figure is withheld for the same reason, without a check
        of its own; ``"time"`` where they disclose a figure whose check did not finish in
        time (releasing this one tells that one too, which no check has shown safe)."""
        known = self.released + self.determined + [free]
        if any(spans(known, w) for w in self.narrowing):
            return "narrows"
        return "time" if any(spans(known, w) for w in self.late) else None

    def _ranges(self, free: np.ndarray, nz: np.ndarray):
        """Per component, the least and largest value of the row's part over the intruder's
        system: one LP each way, because the components are independent and an optimum
        of their sum is an optimum of every part. None when out of time; infinite ends
        when unbounded."""
        out = []
        for sense in ("min", "max"):
            status, x = self.base.optimum(nz, free[nz], sense)
            if status == "unbounded":
                return np.full(self.n_comp, -np.inf), np.full(self.n_comp, np.inf)
            if status != "optimal":
                return None
            self._bank(x)
            out.append(np.bincount(self.comp[nz], weights=free[nz] * x[nz],
                                   minlength=self.n_comp))
        return out[0], out[1]

    def _active(self, ranges, scale: float, rhs: float, band: float) -> np.ndarray:
        """Components whose primaries the rows in play may narrow. A component on which
        every row's part is constant cannot be narrowed (its part is a published constant
        already). With a single row (and LP intervals) the rest of the table leaves the
        component's part the range ``rhs - others``; a component whose own range lies
        inside it is not narrowed either."""
        lo, hi = ranges
        tol = 1e-9 * scale
        active = hi - lo > tol
        for r_lo, r_hi in self.rows:
            active |= r_hi - r_lo > tol
        if self.rows or self.integer or not np.isfinite(lo).all() or \
                not np.isfinite(hi).all():
            return active
        others_lo, others_hi = lo.sum() - lo, hi.sum() - hi
        inside = (lo >= rhs - band - others_hi - tol) & (hi <= rhs + band - others_lo + tol)
        return active & ~inside

    def outer(self) -> tuple[np.ndarray, np.ndarray]:
        """Bounds of every unpublished cell that hold over the system without the figures
        (the a-priori bounds propagated over the relations, rounded inward in integer
        tables): a solution with a cell at one shows that end of its interval, with the
        figures or without, without an LP of that end."""
        if self._outer is None:
            lo, hi = outer_bounds(self.lp.A, self.lp.row_lower, self.lp.col_lower,
                                  self.lp.col_upper, rounds=20, rhs_upper=self.lp.row_upper)
            if self.integer:
                lo, hi = np.ceil(lo - 1e-6), np.floor(hi + 1e-6)
            self._outer = lo, hi
        return self._outer

    def _base(self, targets: np.ndarray, open_: dict[str, np.ndarray] | None = None
              ) -> bool:
        """The targets' intervals without the figures (computed once per primary; with
        ``open_``, sense -> mask over ``targets``, only those ends); False when out of
        time.

        The system without the figures falls apart into the components, so one LP
        optimizes one target of every component at once: an optimum of their sum is an
        optimum of each (:meth:`_base_round`). A solution at a target's a-priori bound
        gives that end without an LP; so does one at its outer bound."""
        for sense, known in (("min", self.base_lo), ("max", self.base_hi)):
            chosen = targets if open_ is None else targets[open_[sense]]
            pace = Pace(self.deadline, int(np.isnan(known[chosen]).sum()))
            while True:
                pending = chosen[np.isnan(known[chosen])]
                if len(pending) == 0:
                    break
                if pace.hopeless(len(pending)) or self._foreseen_late(targets, open_):
                    return False
                _, first = np.unique(self.comp[pending], return_index=True)
                if not self._base_round(pending[first], pending, sense, known):
                    return False
        return True

    def _foreseen_late(self, targets: np.ndarray, open_) -> bool:
        """Integer tables: the targets' ends still open without the figures, and then
        every end's witness with them, cannot be done before the deadline at the mean
        search so far (:class:`~tabprotect.public_summary.systems.Forecast`)."""
        if not self.integer:
            return False
        n_open = 0
        for sense, known in (("min", self.base_lo), ("max", self.base_hi)):
            chosen = targets if open_ is None else targets[open_[sense]]
            n_open += int(np.isnan(known[chosen]).sum())
        return self.forecast.late(self.clock, self.deadline, n_open, 2 * len(targets))

    def _integer_end(self, j: int, pending: np.ndarray, sense: str,
                     known: np.ndarray) -> bool:
        """Integer tables: the ``sense`` end of target ``j`` by the audit's warm solves
        of its component (:class:`~tabprotect.public_summary.base.IntegerEnds`), its
        table a witness for the other pending targets; False when out of time."""
        start = time.monotonic()
        val, x = self.integer_ends().end(int(self.cells[j]), sense)
        self.clock.add(time.monotonic() - start)
        if val is None:
            return False
        known[j] = val
        if x is not None:
            x = x[self.cells]
            self._end_points(sense, [j], x)
            self._witness(x, pending)
        return True

    def integer_ends(self) -> IntegerEnds:
        """The components' warm solves without the figures (built on first use)."""
        if self.int_ends is None:
            self.int_ends = IntegerEnds(self.table, ~self.published, self.deadline)
        return self.int_ends

    def _base_round(self, picks: np.ndarray, pending: np.ndarray, sense: str,
                    known: np.ndarray) -> bool:
        """The ``sense`` end of ``picks`` (one per component) from one LP; a pick whose
        component's part of the solution is fractional in an integer table, and every pick
        of an unbounded LP, gets its own solve (:meth:`Bounds.bound`)."""
        single = picks
        # integer tables: once a round's LP leaves most picks fractional (3-D tables),
        # each pick's own component model gives its LP end and integer end, without
        # the whole system's LP before it (2-D tables: their LP ends are integral)
        status, x = ("integer", None) if not self.whole_rounds else \
            self.base.optimum(picks, np.ones(len(picks)), sense)
        if status == "optimal":
            whole = np.ones(self.n_comp, bool)
            if self.integer:
                whole[self.comp[np.abs(x - np.round(x)) > 1e-6]] = False
            ok = whole[self.comp[picks]]
            self.whole_rounds = 2 * int(ok.sum()) >= len(picks)
            known[picks[ok]] = x[picks[ok]]
            self._end_points(sense, picks[ok], x)
            self._bank(x)
            self._witness(x, pending[whole[self.comp[pending]]])
            single = picks[~ok]
        elif status not in ("unbounded", "infeasible", "integer"):
            return False
        for j in single:
            if self.integer:
                if not self._integer_end(int(j), pending, sense, known):
                    return False
                continue
            val, xj = self.base.bound(int(j), sense)
            if val is None or val == "infeasible":
                return False
            known[j] = val
            if xj is not None:
                self._end_points(sense, [j], xj)
                self._bank(xj)
                self._witness(xj, pending)
        return True

    def _witness(self, x: np.ndarray, targets: np.ndarray) -> None:
        """Targets whose end ``x`` (a solution of the system without the figures, integer
        on these targets' components in an integer table) shows at an outer bound."""
        lo, hi = self.outer()
        self._end_points("min", self._at_bounds(x, targets, lo, self.base_lo), x)
        self._end_points("max", self._at_bounds(x, targets, hi, self.base_hi), x)

    @staticmethod
    def _at_bounds(x, targets, bound, known) -> np.ndarray:
        """Targets not yet known that ``x`` shows at their (finite) outer ``bound``
        (their end set to it; returned)."""
        pending = targets[np.isnan(known[targets]) & np.isfinite(bound[targets])]
        at = pending[np.abs(x[pending] - bound[pending])
                     <= 1e-9 * np.maximum(1.0, np.abs(bound[pending]))]
        known[at] = bound[at]
        return at

    def _end_points(self, sense: str, targets, x: np.ndarray) -> None:
        """Integer tables: keep each target's component part of ``x`` (a solution without
        the figures, integral there, at the target's ``sense`` end)."""
        if self.integer:
            for j in targets:
                self.ends[sense][int(j)] = np.round(x[self.comp_cols[self.comp[j]]])

    def _bank(self, x) -> None:
        if self.points is not None and x is not None:
            self.points.keep(x)

    def _spanned(self, targets, rows, lo, hi, slack, pending) -> None:
        """Target ends that kept solutions of the system without the figures show kept
        (LP tables): the solutions with a target at an end of its base interval form a
        convex set. Where every row but one is at its true value at each kept solution
        at that end, and that row's least value there is at most its true value and its
        largest at least, a convex combination of two of them meets every row and keeps
        the end: a solution of the extended system at the end, found without an LP."""
        if self.points is None or not self.points.rows:
            return
        P = self.points.matrix()
        R = np.array(rows)
        truth = self.value[self.cells]
        F = P @ R.T - R @ truth                      # solutions x rows: off the truth
        tol = (1e-9 * np.maximum(1.0, np.abs(R) @ np.abs(truth)))[:, None]
        X = P[:, targets]
        for sense, end in (("min", lo), ("max", hi)):
            open_ = np.flatnonzero(pending[sense])
            if len(open_) == 0:
                continue
            with np.errstate(invalid="ignore"):
                at = np.abs(X[:, open_] - end[open_]) <= slack[open_]
            least = np.array([np.where(at, F[:, [i]], np.inf).min(axis=0)
                              for i in range(len(rows))])
            most = np.array([np.where(at, F[:, [i]], -np.inf).max(axis=0)
                             for i in range(len(rows))])
            held = (least >= -tol) & (most <= tol)
            across = (least <= tol) & (most >= -tol)
            ok = at.any(axis=0) & across.all(axis=0) & ((~held).sum(axis=0) <= 1)
            pending[sense][open_[ok]] = False

    def _holds(self, targets: np.ndarray, rows: list[np.ndarray]) -> str | None:
        """Every target's interval with the extra rows equals its interval without. The
        base intervals come first, so that every solution of the extended system is a
        witness: a target it shows at an end of its base interval keeps that end (in an
        integer table only an integer solution is a witness).  ``rows``: the extra
        rows' coefficients over the unpublished cells.

        A solution of the extended system with a target at its outer bound (:meth:`outer`)
        shows that end kept without the base interval: the rounds of
        :meth:`_outer_rounds` come first, and only the ends they leave open get their
        base ends."""
        pending = {"min": np.ones(len(targets), bool), "max": np.ones(len(targets), bool)}
        outer_lo, outer_hi = (b[targets] for b in self.outer())
        # each end's own scale: a loose bound at the other end must not widen it
        slack_lo = self.tol * np.maximum(1.0, magnitude(outer_lo))
        slack_hi = self.tol * np.maximum(1.0, magnitude(outer_hi))
        base: dict[str, np.ndarray] = {}

        def witness(x):
            if x is None or (self.integer and np.abs(x - np.round(x)).max() > 1e-6):
                return
            self._bank(x)
            xt = x[targets]
            with np.errstate(invalid="ignore"):
                pending["min"] &= ~(np.abs(xt - outer_lo) <= slack_lo)
                pending["max"] &= ~(np.abs(xt - outer_hi) <= slack_hi)
                if base:
                    pending["min"] &= ~(np.abs(xt - base["lo"]) <= base["slack"])
                    pending["max"] &= ~(np.abs(xt - base["hi"]) <= base["slack"])

        # (integer tables: an LP solution of the extended system is rarely integral)
        if not self.integer:
            reason = self._outer_rounds(targets, pending, witness) or \
                self._dual_rounds(targets, pending, witness)
            if reason is not None:
                return reason
        if not self._base(targets, pending):
            return "time"
        lo, hi = self.base_lo[targets], self.base_hi[targets]
        slack = self.tol * np.maximum(1.0, magnitude(lo) + magnitude(hi))
        base.update(lo=lo, hi=hi, slack=slack)

        def keeps(k: int, sense: str) -> str | None:
            """The target's own solve: None when it keeps its ``sense`` end."""
            val, x = self.ext.bound(int(targets[k]), sense)
            if val == "infeasible":
                return "inconsistent"
            if val is None:
                return "time"
            end = (lo if sense == "min" else hi)[k]
            if not (val == end or abs(val - end) <= slack[k]):
                return "narrows"
            pending[sense][k] = False
            witness(x)
            return None

        self._spanned(targets, rows, lo, hi, slack, pending)
        if self.integer:
            # an LP optimum is rarely an integer witness: each target in turn, whose
            # integer solutions show the others.  First within its component, the
            # figures' parts there held at their true values (a small MIP); then with
            # the largest other components beside it (they may make up a change of
            # the parts); the whole system where neither reaches the end
            if not shifted(self, targets, rows, pending, witness, False):
                return "time"
            if not shifted(self, targets, rows, pending, witness, True):
                return "time"
            if not self._component_rounds(targets, rows, pending, witness):
                return "time"
            for k in range(len(targets)):
                for sense in ("min", "max"):
                    if not pending[sense][k]:
                        continue
                    end = (lo if sense == "min" else hi)[k]
                    for more in sorted({0, min(1, self.joint), self.joint}):
                        val, x = self._local(int(targets[k]), sense, rows, more, goal=end)
                        if val is None:
                            return "time"
                        if x is not None and abs(val - end) <= slack[k]:
                            pending[sense][k] = False
                            witness(x)
                            break
                    if pending[sense][k] and (reason := keeps(k, sense)) is not None:
                        return reason
            return None
        return self._holds_batched(targets, pending, witness, keeps)

    def _outer_rounds(self, targets, pending, witness) -> str | None:
        """Ends kept at their outer bounds, shown by solutions of the extended system:
        each round optimizes the sum of pending targets that share no relation (they
        rarely stand in each other's way), and a target the solution shows at its outer
        bound keeps that end (the base end lies between). Rounds go on while each shows
        at least two ends; None, or the reason the check ends."""
        bounds = dict(zip(("min", "max"), self.outer()))
        for sense in ("min", "max"):
            finite = np.isfinite(bounds[sense][targets])
            while True:
                open_ = np.flatnonzero(pending[sense] & finite)
                if len(open_) < 2:
                    break
                picks = targets[open_[independent_cells(self._A_csc, targets[open_])]]
                status, x = self.ext.optimum(picks, np.ones(len(picks)), sense)
                if status == "infeasible":
                    return "inconsistent"
                if status == "unbounded":
                    break
                if status != "optimal":
                    return "time"
                witness(x)
                if len(open_) - int((pending[sense] & finite).sum()) < 2:
                    break
        return None

    def _dual_rounds(self, targets, pending, witness) -> str | None:
        """LP tables: each end still open gets its own solve with the figures, and the
        solve's row duals, the figures' rows dropped, bound the end without them
        (:meth:`_lagrange`): where that bound meets the end with the figures, the end is
        kept without an LP of its own. None, or the reason the check ends (``"time"``
        also where the open ends cannot be done by the deadline at the recent pace).
        Each solve starts from the basis of one optimum of the sum of the sense's open
        ends, not from the previous target's optimum: a vertex that favours all of them
        lies nearer each one's optimum (fewer simplex iterations in all)."""
        pace = Pace(self.deadline, int(pending["min"].sum() + pending["max"].sum()))
        for sense in ("min", "max"):
            if not pending[sense].any():
                continue
            start = self._sum_basis(targets[pending[sense]], sense, witness)
            if isinstance(start, str):
                return start
            for k in np.flatnonzero(pending[sense]):
                if not pending[sense][k]:
                    continue
                if pace.hopeless(int(pending["min"].sum() + pending["max"].sum())):
                    return "time"
                if start is not None:
                    self.ext.restore(start)
                j = int(targets[k])
                status, x, duals = self.ext.optimum([j], [1.0], sense, duals=True)
                if status == "infeasible":
                    return "inconsistent"
                if status == "unbounded":
                    continue
                if status != "optimal":
                    return "time"
                witness(x)
                if not pending[sense][k] or duals is None:
                    continue
                bound = self._lagrange(j, sense, duals[:self.lp.A.shape[0]])
                if abs(bound - x[j]) <= self.tol * max(1.0, abs(x[j])):
                    pending[sense][k] = False
                    continue
                # the bound does not decide: the end without the figures (both ends, for
                # the tolerance's scale), and a narrowed end ends the check at once
                if not self._base(targets[[k]]):
                    return "time"
                lo, hi = self.base_lo[j], self.base_hi[j]
                end = lo if sense == "min" else hi
                slack = self.tol * max(1.0, float(magnitude(np.array([lo, hi])).sum()))
                if not (x[j] == end or abs(x[j] - end) <= slack):
                    return "narrows"
                pending[sense][k] = False
        return None

    def _sum_basis(self, cells: np.ndarray, sense: str, witness):
        """The basis of the extended system's optimum of the sum of ``cells`` in the
        ``sense`` direction (its point a ``witness``); None where the sum is unbounded
        (no start: each solve starts from the last); or the reason the check ends."""
        status, x = self.ext.optimum(cells, np.ones(len(cells)), sense)
        if status == "infeasible":
            return "inconsistent"
        if status == "unbounded":
            return None
        if status != "optimal":
            return "time"
        witness(x)
        return self.ext.basis()

    def _lagrange(self, j: int, sense: str, y: np.ndarray) -> float:
        """:func:`~tabprotect.public_summary.systems.lagrange_bound` of cell ``j`` over
        the outer bounds."""
        lo, hi = self.outer()
        return lagrange_bound(self._A_T, self.lp.row_lower, self.lp.row_upper, lo, hi, j,
                              sense, y)

    def _local(self, j: int, sense: str, rows: list[np.ndarray], more: int = 0,
               objective: np.ndarray | None = None, goal: float | None = None):
        """Integer solutions within unpublished cell ``j``'s component and the ``more``
        largest other components, with the part of each of ``rows`` (coefficients over
        the unpublished cells) on those components held at its true value and every
        other component at the true table: ``(value, point)``, the point a solution of
        the whole system (integral) and ``value`` its ``x_j``; ``("infeasible", None)``
        where there is none; ``(None, None)`` out of time.

        With ``goal`` (a single cell): a solution with ``x_j`` at ``goal`` or beyond
        in the ``sense`` direction, the first one found (``goal`` is an end of the
        system without ``rows``: a solution there shows that end kept), or
        ``("short", None)`` where there is none.  Else the integer ``sense`` end of
        the sum of ``objective`` (cells of ``j``'s component; a point for many targets
        at once)."""
        objective = np.atleast_1d(j if objective is None else objective)
        k = int(self.comp[j])
        comps = [k] + [int(d) for d in self.by_size if d != k][:more]
        cols = np.sort(np.concatenate([self.comp_cols[d] for d in comps]))
        rws = np.concatenate([self.comp_rows[d] for d in comps])
        truth = self.value[self.cells]
        A = self.A_csr[rws][:, cols]
        row_lo, row_hi = self.lp.row_lower[rws], self.lp.row_upper[rws]
        parts = [r[cols] for r in rows if np.any(r[cols])]
        if parts:
            E = np.array(parts)
            fixed = E @ truth[cols]
            band = 1e-9 * np.maximum(1.0, np.abs(E) @ np.abs(truth[cols]))
            A = sp.vstack([A, sp.csr_matrix(E)]).tocsr()
            row_lo = np.concatenate([row_lo, fixed - band])
            row_hi = np.concatenate([row_hi, fixed + band])
        c = np.zeros(len(cols))
        c[np.searchsorted(cols, objective)] = 1.0
        left = None if self.deadline is None else self.deadline - time.monotonic()
        if left is not None and left <= 0:
            return None, None
        lp = LinearProgram(c=c, A=A, row_lower=row_lo, row_upper=row_hi,
                           col_lower=self.lp.col_lower[cols],
                           col_upper=self.lp.col_upper[cols], sense=sense)
        if goal is not None:
            # the warm model of this program, kept for the next target; the search for
            # the goal alone, never for an optimum the check does not need
            key = (tuple(comps), E.tobytes() if parts else b"")
            found, xc = self.warm.reach(key, int(np.searchsorted(cols, j)), sense, goal,
                                        lp, truth[cols])
            if found == "unknown":
                return None, None
            if found == "none":
                return "short", None
            x = truth.copy()
            x[cols] = xc
            return float(x[j]), x
        res = solve(lp, time_limit=left)
        # an integral LP optimum is the integer one; an integral vertex at the LP end
        # rounded inward is too (a single cell: no integer point goes past it), and so is
        # any integral point there (a MILP without objective, which stops at its first
        # point); the MILP of the end only where none of these is found
        if res.status == "optimal" and not integral(res.x):
            jj = np.searchsorted(cols, objective)
            point = None
            if len(jj) == 1 and self.odds.worth():
                v = res.x[jj[0]]
                end = np.floor(v + 1e-6) if sense == "max" else np.ceil(v - 1e-6)
                point = integral_vertex(lp, jj[0], end, left)
                self.odds.record(point is not None)
            if point is None and len(jj) == 1:
                point = integral_point_at(lp, jj[0], res.x[jj[0]], sense, left)
            res = point if point is not None else solve(
                dataclasses.replace(lp, integrality=np.full(len(cols), True)),
                time_limit=left)
        if res.status == "infeasible":
            return "infeasible", None
        if res.status == "unbounded":
            return (-np.inf if sense == "min" else np.inf), None
        if res.status != "optimal":
            return None, None
        x = truth.copy()
        x[cols] = np.round(res.x)
        return float(x[j]), x

    def _component_rounds(self, targets, rows, pending, witness) -> bool:
        """One solve per component and sense over the sum of its pending targets, the
        figures' parts held at their true values: a point that shows several targets at
        their ends at once (integer tables).  False when out of time."""
        comp = self.comp[targets]
        for sense in ("min", "max"):
            for k in np.unique(comp[pending[sense]]):
                open_ = np.flatnonzero(pending[sense] & (comp == k))
                if len(open_) < 2:
                    continue
                val, x = self._local(int(targets[open_[0]]), sense, rows,
                                     objective=targets[open_])
                if val is None:
                    return False
                if x is not None:
                    witness(x)
        return True

    def _holds_batched(self, targets, pending, witness, keeps) -> str | None:
        """Each round optimizes one pending target of every component at once: the
        extended system is a subset of the base one, so when the targets keep their ends
        one optimum shows them all there; a target it does not show gets its own solve."""
        comp = self.comp[targets]
        for sense in ("min", "max"):
            pace = Pace(self.deadline, int(pending[sense].sum()))
            while pending[sense].any():
                open_ = np.flatnonzero(pending[sense])
                if pace.hopeless(len(open_)):
                    return "time"
                _, first = np.unique(comp[open_], return_index=True)
                picks = open_[first]
                status, x = self.ext.optimum(targets[picks], np.ones(len(picks)), sense)
                if status == "infeasible":
                    return "inconsistent"
                if status == "optimal":
                    witness(x)
                elif status != "unbounded":
                    return "time"
                for k in picks:
                    if pending[sense][k] and (reason := keeps(k, sense)) is not None:
                        return reason
        return None

