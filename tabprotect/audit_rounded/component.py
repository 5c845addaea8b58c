"""Exact integer bounds of one linked component by LPs on the whole component.

Fixed cells are substituted out; one persistent HiGHS model per component: a few LPs push
all unresolved cells down (then up) at once, the remaining cells get their own min/max LP,
warm-started, and a fractional optimum triggers the integer program for that bound.
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

    def __init__(self, table, free, box_lo, box_hi, cells, threads):
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
        self._mip = None

    def _lp(self, integer: bool) -> LinearProgram:
        return LinearProgram(c=np.zeros(self.k), A=self.M, row_lower=self.rhs,
                             row_upper=self.rhs, col_lower=self.lo, col_upper=self.hi,
                             integrality=np.ones(self.k, bool) if integer else None)

    def bounds(self, counters: Counters, deadline, lo_known=None, hi_known=None):
        """Exact integer bounds of the component's cells; ``lo_known``/``hi_known`` mark
        cells whose range end is already proven to be their bound."""
        k = self.k
        lo_done = np.zeros(k, dtype=bool) if lo_known is None else lo_known.copy()
        hi_done = np.zeros(k, dtype=bool) if hi_known is None else hi_known.copy()
        out_lo = self.lo.copy()
        out_hi = self.hi.copy()
        if lo_done.all() and hi_done.all():
            return out_lo, out_hi  # every bound is its range end
        # dual simplex on every re-solve: after an objective change over thousands of
        # columns, primal simplex from the old basis was 10-40x slower in our runs
        model = HighsModel(self._lp(False), threads=self.threads, simplex_strategy=1)
        self._bulk_pushes(model, lo_done, hi_done, counters, deadline)
        for sense, done, out in (("min", lo_done, out_lo), ("max", hi_done, out_hi)):
            self._one_by_one(model, sense, done, out, lo_done, hi_done, counters, deadline)
        out_lo = np.where(lo_done, np.where(np.isfinite(out_lo), np.ceil(out_lo - TOL),
                                            out_lo), self.lo)
        out_hi = np.where(hi_done, np.where(np.isfinite(out_hi), np.floor(out_hi + TOL),
                                            out_hi), self.hi)
        # a bound never leaves the method's range (an unfinished MILP reports +-inf)
        return np.maximum(out_lo, self.lo) + 0.0, np.minimum(out_hi, self.hi) + 0.0

    def _absorb(self, x, lo_done: np.ndarray, hi_done: np.ndarray) -> None:
        """An integral feasible table at a cell's range end proves that end is exact."""
        if x is None or np.abs(x - np.round(x)).max(initial=0.0) > TOL:
            return
        lo_done[:] |= np.abs(x - self.lo) <= TOL
        hi_done[:] |= np.isfinite(self.hi) & (np.abs(x - self.hi) <= TOL)

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
                    self._absorb(res.x, lo_done, hi_done)
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
                xj = self._integer_bound(j, sense, counters)
            else:
                self._absorb(res.x, lo_done, hi_done)
            out[j] = xj
            done[j] = True

    def _integer_bound(self, j, sense, counters: Counters) -> float:
        if self._mip is None:
            self._mip = HighsModel(self._lp(True), threads=self.threads)
        self._mip.set_objective(indices=[j], values=[1.0], sense=sense)
        res = self._mip.solve()
        counters.mip += 1
        if res.status != "optimal":
            return -np.inf if sense == "min" else np.inf
        return float(round(res.x[j]))


def remaining(deadline) -> float | None:
    """Seconds left for one solve (None = no limit); a solve cut short reports no bound,
    so the cell keeps its method range and the audit notes the time limit."""
    if deadline is None:
        return None
    return max(0.1, deadline - time.perf_counter())


def late(deadline) -> bool:
    return deadline is not None and time.perf_counter() > deadline
