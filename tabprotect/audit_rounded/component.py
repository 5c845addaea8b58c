"""Exact integer bounds of one linked component by LPs on the whole component.

Fixed cells are substituted out; one persistent HiGHS model per component: a few LPs push
all unresolved cells down (then up) at once, the remaining cells get their own min/max LP,
warm-started.  A fractional optimum bounds the integer optimum by its rounded value; an
integral feasible table seen earlier that reaches that value proves it, otherwise the
integer program for that bound decides.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from solvers import HighsModel, LinearProgram
from tabprotect.audit_rounded.result import TOL
from tabprotect.errors import InputError
from tabprotect.model.table import Table

__all__ = ["Counters", "ComponentAudit", "check_fixed_rows", "remaining", "late"]


@dataclass
class Counters:
    """Solver work of one audit, and whether the time limit cut it short."""

    lp: int = 0
    mip: int = 0
    local_lp: int = 0
    cut: bool = False


def check_fixed_rows(table: Table, free: np.ndarray, box_lo: np.ndarray) -> None:
    """Relations whose cells are all known exactly must balance."""
    A = table.relations
    if A.shape[0] == 0:
        return
    touches_free = (abs(A) @ free.astype(float)) > 0.5
    resid = A @ np.where(free, 0.0, box_lo)
    bad = ~touches_free & (np.abs(resid) > TOL)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        t = int(table.relation_total[r])
        raise InputError(f"audit_rounded: the published values of total {table.cell_name(t)} "
                         f"and its parts cannot come from an additive table with this method")


class ComponentAudit:
    """The cells of one linked component: their relations (fixed cells substituted out)
    and their method ranges."""

    def __init__(self, table, free, box_lo, box_hi, cells, threads, primal_max_cells):
        A = table.relations
        sub = A[:, cells].tocsr()
        rows = np.flatnonzero(np.diff(sub.indptr) > 0)
        self.M = sub[rows]
        fixed = ~free
        self.rhs = -np.asarray(A[rows][:, fixed] @ box_lo[fixed], dtype=float) \
            if fixed.any() else np.zeros(len(rows))
        self.lo = box_lo[cells].astype(float)
        self.hi = box_hi[cells].astype(float)
        self.k = len(cells)
        self.threads = threads
        # the simplex of the one-cell LPs: primal (4) on small components, else dual (1)
        self._one_cell_strategy = 4 if self.k < primal_max_cells else 1
        self._mip = None
        # per cell, the least and greatest value in the integral feasible tables seen
        self._seen_lo = np.full(self.k, np.inf)
        self._seen_hi = np.full(self.k, -np.inf)

    def lp(self, integer: bool) -> LinearProgram:
        """The component's program (zero objective), integer or its LP relaxation."""
        return LinearProgram(c=np.zeros(self.k), A=self.M, row_lower=self.rhs,
                             row_upper=self.rhs, col_lower=self.lo, col_upper=self.hi,
                             integrality=np.ones(self.k, bool) if integer else None)

    def bounds(self, counters: Counters, deadline, lo_known=None, hi_known=None,
               start=None):
        """Exact integer bounds of the component's cells; ``lo_known``/``hi_known`` mark
        cells whose range end is already proven to be their bound; ``start`` is a
        feasible integer table of the cells (optional)."""
        k = self.k
        if start is not None:
            self._saw(np.asarray(start, dtype=float))
        lo_done = np.zeros(k, dtype=bool) if lo_known is None else lo_known.copy()
        hi_done = np.zeros(k, dtype=bool) if hi_known is None else hi_known.copy()
        out_lo = self.lo.copy()
        out_hi = self.hi.copy()
        if lo_done.all() and hi_done.all():
            return out_lo, out_hi  # every bound is its range end
        # dual simplex for the pushes: after an objective change over thousands of
        # columns, primal simplex from the old basis is many times slower
        model = HighsModel(self.lp(False), threads=self.threads, simplex_strategy=1)
        self._bulk_pushes(model, lo_done, hi_done, counters, deadline)
        # primal simplex for the one-cell objectives of a small component: the previous
        # optimum stays primal feasible, and a one-cost change takes a few pivots from it
        # where dual simplex starts over from a dual infeasible basis (hundreds of pivots)
        model.highs.setOptionValue("simplex_strategy", self._one_cell_strategy)
        for sense, done, out in (("min", lo_done, out_lo), ("max", hi_done, out_hi)):
            self._one_by_one(model, sense, done, out, lo_done, hi_done, counters, deadline)
        out_lo = np.where(lo_done, np.where(np.isfinite(out_lo), np.ceil(out_lo - TOL),
                                            out_lo), self.lo)
        out_hi = np.where(hi_done, np.where(np.isfinite(out_hi), np.floor(out_hi + TOL),
                                            out_hi), self.hi)
        # a bound never leaves the method's range (an unfinished MILP reports +-inf)
        return np.maximum(out_lo, self.lo) + 0.0, np.minimum(out_hi, self.hi) + 0.0

    def absorb(self, x, lo_done: np.ndarray, hi_done: np.ndarray) -> None:
        """An integral feasible table at a cell's range end proves that end is exact; the
        table is remembered for later bounds."""
        if x is None or np.abs(x - np.round(x)).max(initial=0.0) > TOL:
            return
        self._saw(x)
        lo_done[:] |= np.abs(x - self.lo) <= TOL
        hi_done[:] |= np.isfinite(self.hi) & (np.abs(x - self.hi) <= TOL)

    def verified_table(self, x) -> np.ndarray | None:
        """``x`` rounded, when it is an integral feasible table of the component (every
        relation balanced exactly, every cell inside its range); else None.  A solver's
        tolerances never decide a certificate."""
        if x is None or np.abs(x - np.round(x)).max(initial=0.0) > TOL:
            return None
        x = np.round(x)
        if np.any(x < self.lo) or np.any(x > self.hi) or \
                np.abs(self.M @ x - self.rhs).max(initial=0.0) > TOL:
            return None
        return x

    def _saw(self, x: np.ndarray) -> None:
        """Record an integral feasible table's values (each cell's least and greatest)."""
        x = np.round(x)
        np.minimum(self._seen_lo, x, out=self._seen_lo)
        np.maximum(self._seen_hi, x, out=self._seen_hi)

    def _seen_reaches(self, j: int, sense: str, bound: float) -> bool:
        """Whether an integral feasible table seen so far has cell ``j`` at ``bound`` (or
        beyond it, which a valid bound rules out): then ``bound`` is the cell's exact
        integer bound in direction ``sense``."""
        if sense == "min":
            return bool(self._seen_lo[j] <= bound + TOL)
        return bool(self._seen_hi[j] >= bound - TOL)

    def _bulk_pushes(self, model, lo_done, hi_done, counters: Counters, deadline) -> None:
        """All unresolved cells down together, then up, while it settles more cells."""
        for _ in range(6):
            progress = False
            for sense, done in (("min", lo_done), ("max", hi_done)):
                todo = np.flatnonzero(~done)
                if len(todo) == 0 or late(deadline):
                    continue
                before = int(done.sum())
                model.set_objective(indices=todo, values=np.ones(len(todo)), sense=sense)
                res = model.solve(time_limit=remaining(deadline))
                counters.lp += 1
                if res.status == "infeasible":
                    raise InputError("audit_rounded: no additive integer table is consistent "
                                     "with the published values, base and method")
                if res.status == "optimal":
                    self.absorb(res.x, lo_done, hi_done)
                else:
                    counters.cut = True
                progress |= int(done.sum()) > before
            if not progress:
                break

    def _one_by_one(self, model, sense: str, done, out, lo_done, hi_done,
                    counters: Counters, deadline) -> None:
        """One warm LP per bound still open (``done``/``out`` of ``sense``); a fractional
        optimum goes to the integer program."""
        for j in np.flatnonzero(~done):
            if done[j]:
                continue  # settled by an earlier solution in this loop
            if late(deadline):
                break
            model.set_objective(indices=[j], values=[1.0], sense=sense)
            res = model.solve(time_limit=remaining(deadline))
            counters.lp += 1
            if res.status == "unbounded":
                out[j] = -np.inf if sense == "min" else np.inf
                done[j] = True
                continue
            if res.status != "optimal":
                counters.cut = True
                continue
            xj = float(res.x[j])
            if np.abs(res.x - np.round(res.x)).max(initial=0.0) > TOL:
                # the LP optimum rounded inward bounds the integer optimum
                rounded = np.ceil(xj - TOL) if sense == "min" else np.floor(xj + TOL)
                if self._seen_reaches(j, sense, rounded):
                    xj = rounded
                elif (x := self._integral_at(model, j, rounded, res.x, counters,
                                             deadline)) is not None:
                    xj = rounded
                    self.absorb(x, lo_done, hi_done)
                else:
                    xj, x = self._integer_bound(j, sense, counters)
                    self.absorb(x, lo_done, hi_done)
            else:
                self.absorb(res.x, lo_done, hi_done)
            out[j] = xj
            done[j] = True

    def _integral_at(self, model, j: int, value: float, x, counters: Counters, deadline):
        """An integral feasible table with cell ``j`` at ``value``, from LP vertices of
        that face (its fractional cells pushed down, then up), or None."""
        frac = np.flatnonzero(np.abs(x - np.round(x)) > TOL)
        model.set_col_bounds([j], value, value)
        model.highs.setOptionValue("simplex_strategy", 1)
        found = None
        for push in ("min", "max"):
            model.set_objective(indices=frac, values=np.ones(len(frac)), sense=push)
            res = model.solve(time_limit=remaining(deadline))
            counters.lp += 1
            if res.status == "optimal" and \
                    np.abs(res.x - np.round(res.x)).max(initial=0.0) <= TOL:
                found = res.x
                break
        model.set_col_bounds([j], self.lo[j], self.hi[j])
        model.highs.setOptionValue("simplex_strategy", self._one_cell_strategy)
        return found

    def _integer_bound(self, j, sense, counters: Counters):
        """The integer program's bound of cell ``j`` and its optimal table (None when
        unfinished: the bound is then +-inf, i.e. the cell keeps its range end)."""
        if self._mip is None:
            self._mip = HighsModel(self.lp(True), threads=self.threads)
        self._mip.set_objective(indices=[j], values=[1.0], sense=sense)
        res = self._mip.solve()
        counters.mip += 1
        if res.status != "optimal":
            return (-np.inf if sense == "min" else np.inf), None
        return float(round(res.x[j])), res.x


def remaining(deadline) -> float | None:
    """Seconds left for one solve (None = no limit); a solve cut short reports no bound,
    so the cell keeps its method range and the audit notes the time limit."""
    if deadline is None:
        return None
    return max(0.1, deadline - time.perf_counter())


def late(deadline) -> bool:
    return deadline is not None and time.perf_counter() > deadline
