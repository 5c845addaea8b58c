"""The LP audit: what an intruder can derive about suppressed cells.

The intruder knows every published value, the relations ``A x = 0`` of the table and the
a-priori bounds ``lb <= x <= ub``.  For each unpublished cell ``i`` the audit computes the
feasibility interval ``[min x_i, max x_i]`` over that polytope and checks every primary cell
against its protection levels.

Why it is fast (and still exact):

* published cells are substituted out, so the LP has one column per *suppressed* cell;
* the suppressed cells split into independent components (cells linked through relations);
  each component is its own small LP;
* per component one persistent HiGHS model is built once; only the objective changes
  between the ``2 x cells`` solves, so every re-solve starts from the previous basis;
* a bound is already known exactly when some earlier optimal solution of the component
  sits at the cell's a-priori bound (every LP solution is a feasible table), so that LP is
  skipped.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram
from tabprotect.errors import InputError
from tabprotect.model.relations import linked_components
from tabprotect.model.status import is_suppressed
from tabprotect.model.table import Table

_TOL = 1e-6
_SENSE_ORDER = ("min", "max")


@dataclass
class AuditResult:
    """Feasibility intervals and the protection verdict of a suppression pattern.

    Arrays have one entry per cell of the table; ``lower``/``upper`` are the cell's value
    for published cells.

    Attributes
    ----------
    lower, upper : feasibility interval of every cell
    required_lower, required_upper : the interval a primary cell's protection levels ask
        for (``value - LPL`` capped at ``lb``, ``value + UPL``); nan for other cells
    unpublished : mask of cells the intruder does not see
    protected : per cell, True unless it is a primary cell whose interval falls short
    exact : unpublished cells whose interval is a single point (exact disclosure)
    passed : every primary cell is protected (and, for ``singleton`` audits, against every
        single-contributor attacker too)
    """

    lower: np.ndarray
    upper: np.ndarray
    required_lower: np.ndarray
    required_upper: np.ndarray
    required_width: np.ndarray
    unpublished: np.ndarray
    primary: np.ndarray
    protected: np.ndarray
    exact: np.ndarray
    integer: bool
    singleton: bool
    n_components: int
    n_lp: int
    n_lp_skipped: int
    runtime: float
    n_determined: int = 0
    incomplete: np.ndarray | None = None  # bounds not computed within the time limit

    @property
    def complete(self) -> bool:
        return self.incomplete is None or not self.incomplete.any()
    attacker_notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.protected.all()) and self.complete

    @property
    def shortfalls(self) -> np.ndarray:
        """Indices of primary cells that are not protected."""
        return np.flatnonzero(~self.protected)

    def summary(self) -> dict:
        """Counts for reports and the CLI."""
        return {
            "unpublished": int(self.unpublished.sum()),
            "primary": int(self.primary.sum()),
            "unprotected_primary": int((~self.protected).sum()),
            "exactly_disclosed": int(self.exact.sum()),
            "passed": self.passed,
            "components": self.n_components,
            "lp_solved": self.n_lp,
            "lp_skipped": self.n_lp_skipped,
            "determined_without_lp": self.n_determined,
            "complete": self.complete,
            "integer": self.integer,
            "singleton_attack": self.singleton,
            "seconds": round(self.runtime, 3),
        }

    def to_frame(self, table: Table, only_unpublished: bool = False) -> pd.DataFrame:
        """Cells with ``lower, upper, required_lower, required_upper, protected`` columns."""
        out = table.to_frame(("value", "freq", "status"))
        out["lower"] = self.lower
        out["upper"] = self.upper
        out["required_lower"] = self.required_lower
        out["required_upper"] = self.required_upper
        out["protected"] = self.protected
        out["exact"] = self.exact
        if only_unpublished:
            out = out[self.unpublished]
        return out


def audit(table: Table, unpublished: np.ndarray | None = None, *, integer: bool | None = None,
          singleton: bool = False, time_limit: float | None = None,
          progress: Callable[[int, int], None] | None = None) -> AuditResult:
    """Feasibility intervals of every unpublished cell and the protection verdict.

    Parameters
    ----------
    table : the table; its ``status`` says what is suppressed (U and M), unless
        ``unpublished`` is given
    unpublished : boolean mask of cells the intruder does not see (e.g. everything but
        the margins); overrides the status
    integer : integer min/max (frequency tables); default True for frequency tables
    singleton : also audit against every single-contributor attacker: the contributor
        of a suppressed cell with ``freq == 1`` knows that cell's value exactly, so each
        primary must stay protected with that cell fixed
    time_limit : seconds for the whole audit (a cell whose bound was not computed in time
        gets the trivially safe interval and the audit fails)
    progress : called as ``progress(done_components, total_components)``

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> st = t.status.copy(); st[[4, 5, 7, 8]] = ["U", "M", "M", "M"]
    >>> res = audit(t.replace(status=st, upl=np.where(st == "U", 1.0, 0.0),
    ...                       lpl=np.where(st == "U", 1.0, 0.0)))
    >>> float(res.lower[4]), float(res.upper[4])
    (1.0, 5.0)
    >>> res.passed
    True
    """
    start = time.perf_counter()
    n = table.n_cells
    if unpublished is None:
        unpublished = is_suppressed(table.status)
    else:
        unpublished = np.asarray(unpublished, dtype=bool)
        if unpublished.shape != (n,):
            raise InputError(f"audit: 'unpublished' must have {n} entries")
    if integer is None:
        integer = table.kind == "frequency"
    value = table.value
    lower = value.copy()
    upper = value.copy()
    lower[unpublished] = -np.inf
    upper[unpublished] = np.inf

    primary = (table.status == "U") & unpublished
    req_lo, req_hi, req_w = required_interval(table, primary)

    # cells alone among the unpublished cells of some relation are known exactly; they are
    # as good as published for the intruder (repeat: that may isolate further cells)
    determined = _determined_cells(table.relations, unpublished)
    lower[determined] = value[determined]
    upper[determined] = value[determined]
    comps, ncomp = _components(table.relations, unpublished & ~determined)
    counters = {"lp": 0, "skipped": 0, "determined": int(determined.sum())}
    incomplete = np.zeros(n, dtype=bool)
    deadline = None if time_limit is None else start + time_limit
    notes: list[str] = []
    # worst case over attackers: the largest lower bound and smallest upper bound seen
    worst_lo = np.full(n, -np.inf)
    worst_hi = np.full(n, np.inf)
    for k, cells in enumerate(comps):
        system = _ReducedSystem(table, unpublished & ~determined, cells)
        lo, hi = system.intervals(cells, integer, counters, deadline)
        lower[cells] = lo
        upper[cells] = hi
        if singleton:
            _singleton_attacks(table, system, cells, primary, integer, counters, deadline,
                               worst_lo, worst_hi, notes)
        if system.incomplete:
            incomplete[list(system.incomplete)] = True
        if progress is not None:
            progress(k + 1, ncomp)

    exact = unpublished & (np.abs(upper - lower) <= _TOL * np.maximum(1.0, np.abs(value)))
    eff_lo = np.maximum(lower, np.where(np.isfinite(worst_lo), worst_lo, -np.inf))
    eff_hi = np.minimum(upper, np.where(np.isfinite(worst_hi), worst_hi, np.inf))
    tol = _TOL * np.maximum(1.0, np.abs(value))
    ok = ((eff_hi >= req_hi - tol) & (eff_lo <= req_lo + tol)
          & (eff_hi - eff_lo >= req_w - tol))
    # an exactly disclosed primary cell is never protected, whatever its levels say; nor
    # is one whose interval was not computed within the time limit
    ok &= ~exact & ~incomplete
    protected = np.where(primary, ok, True)
    # a primary cell that is published is never protected
    protected &= ~((table.status == "U") & ~unpublished)
    return AuditResult(lower=lower, upper=upper, required_lower=req_lo, required_upper=req_hi,
                       required_width=req_w, unpublished=unpublished,
                       primary=table.status == "U", protected=protected, exact=exact,
                       integer=bool(integer), singleton=singleton, n_components=ncomp,
                       n_lp=counters["lp"], n_lp_skipped=counters["skipped"],
                       n_determined=counters["determined"], incomplete=incomplete,
                       runtime=time.perf_counter() - start, attacker_notes=notes)


def required_interval(table: Table, primary: np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The interval each primary cell must reach: ``[max(lb, X - LPL), X + UPL]`` and the
    sliding width ``SPL``; nan for other cells."""
    if primary is None:
        primary = table.status == "U"
    x = table.value
    req_lo = np.where(primary, np.maximum(table.lb, x - table.lpl), np.nan)
    req_hi = np.where(primary, np.minimum(table.ub, x + table.upl), np.nan)
    req_w = np.where(primary, table.spl, np.nan)
    return req_lo, req_hi, req_w


# ---------------------------------------------------------------- internals
def _determined_cells(A: sp.csr_matrix, unpublished: np.ndarray) -> np.ndarray:
    """Unpublished cells that some relation pins down because every other cell of it is
    published (or pinned down itself), found by repeated singleton-row elimination."""
    determined = np.zeros(len(unpublished), dtype=bool)
    free = unpublished.copy()
    A = A.tocsc()
    while free.any():
        cols = np.flatnonzero(free)
        sub = A[:, cols].tocsr()
        singleton_rows = np.flatnonzero(np.diff(sub.indptr) == 1)
        if len(singleton_rows) == 0:
            break
        hit = cols[np.unique(sub.indices[sub.indptr[singleton_rows]])]
        determined[hit] = True
        free[hit] = False
    return determined


def _components(A: sp.csr_matrix, unpublished: np.ndarray) -> tuple[list[np.ndarray], int]:
    """Suppressed cells grouped into components linked by relations."""
    groups = linked_components(A, unpublished)
    return groups, len(groups)


class _ReducedSystem:
    """The intruder's LP restricted to one component: variables = its suppressed cells."""

    def __init__(self, table: Table, unpublished: np.ndarray, cells: np.ndarray):
        A = table.relations
        sub = A[:, cells].tocsr()
        rows = np.flatnonzero(np.diff(sub.indptr) > 0)
        self.A = sub[rows]
        published = ~unpublished
        # rhs: -(published part of each relation)
        pub_part = A[rows][:, published] @ table.value[published] if published.any() \
            else np.zeros(len(rows))
        self.rhs = -np.asarray(pub_part, dtype=float)
        # Published values that add up only to rounding error (decimals, reconstructed
        # benchmark values) must not make the intruder's system infeasible: each relation
        # holds within 1e-9 of the magnitude of its terms.
        # (applied only when the exact system is infeasible, so exact inputs stay exact)
        # The relaxation is the smallest that keeps the true table feasible (its own
        # residual, with a margin), so exact disclosures stay (numerically) exact.
        magnitude = abs(A[rows]) @ np.abs(table.value)
        residual = np.abs(A[rows] @ table.value)
        self.row_tol = 1.5 * residual + 1e-12 * np.maximum(1.0, np.asarray(magnitude, float))
        self.relaxed = False
        self.incomplete: set[int] = set()
        self.cells = cells
        self.labels = table
        self.lb = table.lb[cells].astype(float)
        self.ub = table.ub[cells].astype(float)
        self.value = table.value[cells]
        self._model: HighsModel | None = None
        self._int_model: HighsModel | None = None

    def lp(self, integer: bool, fixed: dict[int, float] | None = None) -> LinearProgram:
        lb, ub = self.lb.copy(), self.ub.copy()
        if fixed:
            for j, v in fixed.items():
                lb[j] = ub[j] = v
        k = len(lb)
        tol = self.row_tol if self.relaxed else 0.0
        return LinearProgram(c=np.zeros(k), A=self.A, row_lower=self.rhs - tol,
                             row_upper=self.rhs + tol,
                             col_lower=lb, col_upper=ub,
                             integrality=np.full(k, True) if integer else None)

    def model(self, integer: bool = False) -> HighsModel:
        if integer:
            if self._int_model is None:
                self._int_model = HighsModel(self.lp(True))
            return self._int_model
        if self._model is None:
            self._model = HighsModel(self.lp(False))
        return self._model

    def intervals(self, cells, integer, counters, deadline, targets=None, fixed=None):
        """min and max of each variable (or of ``targets`` only)."""
        k = len(cells)
        lo = np.full(k, -np.inf)
        hi = np.full(k, np.inf)
        if targets is None:
            targets = np.arange(k)
        model = self.model(False)
        if fixed:
            idx = np.fromiter(fixed.keys(), dtype=np.int64)
            vals = np.fromiter(fixed.values(), dtype=float)
            model.set_col_bounds(idx, vals, vals)
        at_lb = np.zeros(k, dtype=bool)
        at_ub = np.zeros(k, dtype=bool)
        try:
            # all minima first, then all maxima: consecutive LPs of one sense have nearby
            # optimal bases, so each warm re-solve is short
            for sense, j in [(sns, j) for sns in _SENSE_ORDER for j in targets]:
                if True:
                    if deadline is not None and time.perf_counter() > deadline:
                        # never computed: the interval stays infinite and the cell is
                        # marked, so the verdict cannot pass on it
                        self.incomplete.add(int(self.cells[j]))
                        continue
                    bound_hit = at_lb[j] if sense == "min" else at_ub[j]
                    if bound_hit:
                        counters["skipped"] += 1
                        val = self.lb[j] if sense == "min" else self.ub[j]
                    else:
                        model.set_objective(indices=[j], values=[1.0], sense=sense)
                        res = model.solve()
                        counters["lp"] += 1
                        if res.status == "infeasible" and not self.relaxed:
                            model = self._relax(fixed)
                            model.set_objective(indices=[j], values=[1.0], sense=sense)
                            res = model.solve()
                            counters["lp"] += 1
                        if res.status == "unbounded":
                            val = -np.inf if sense == "min" else np.inf
                        elif res.status != "optimal":
                            if res.status == "infeasible":
                                raise InputError(
                                    f"audit: no table satisfies the relations and bounds "
                                    f"around cell {self.labels.cell_name(self.cells[j])} "
                                    f"(published values not additive, or bounds too tight)")
                            continue
                        else:
                            val = float(res.x[j])
                            xs = res.x
                            # a finite bound attained by a feasible table is that bound's optimum
                            at_lb |= np.isfinite(self.lb) & (
                                np.abs(xs - self.lb) <= 1e-9 * np.maximum(1, np.abs(self.lb)))
                            at_ub |= np.isfinite(self.ub) & (
                                np.abs(xs - self.ub) <= 1e-9 * np.maximum(1, np.abs(self.ub)))
                            if integer and np.abs(xs - np.round(xs)).max() > 1e-6:
                                val = self._integer_bound(j, sense, fixed, counters)
                    if sense == "min":
                        lo[j] = val
                    else:
                        hi[j] = val
        finally:
            if fixed:
                model.set_col_bounds(idx, self.lb[idx], self.ub[idx])
        if integer:
            lo = np.where(np.isfinite(lo), np.ceil(lo - 1e-6), lo)
            hi = np.where(np.isfinite(hi), np.floor(hi + 1e-6), hi)
        return lo[targets] if len(targets) != k else lo, hi[targets] if len(targets) != k else hi

    def _relax(self, fixed) -> HighsModel:
        """Rebuild the model with every relation holding within rounding error."""
        self.relaxed = True
        self._model = HighsModel(self.lp(False))
        self._int_model = None
        if fixed:
            idx = np.fromiter(fixed.keys(), dtype=np.int64)
            vals = np.fromiter(fixed.values(), dtype=float)
            self._model.set_col_bounds(idx, vals, vals)
        return self._model

    def _integer_bound(self, j, sense, fixed, counters) -> float:
        """The LP optimum was fractional: solve the integer program for this bound."""
        model = HighsModel(self.lp(True, fixed))
        model.set_objective(indices=[j], values=[1.0], sense=sense)
        res = model.solve()
        counters["lp"] += 1
        if res.status != "optimal":
            return -np.inf if sense == "min" else np.inf
        return float(round(res.x[j]))


def _singleton_attacks(table, system, cells, primary, integer, counters, deadline,
                       worst_lo, worst_hi, notes) -> None:
    """Each single-contributor suppressed cell's contributor knows that cell: audit the
    component's primaries with it fixed."""
    local_primary = np.flatnonzero(primary[cells])
    singles = np.flatnonzero(table.freq[cells] == 1)
    for s in singles:
        targets = local_primary[local_primary != s]
        if len(targets) == 0:
            continue
        lo, hi = system.intervals(cells, integer, counters, deadline, targets=targets,
                                  fixed={int(s): float(system.value[s])})
        glob = cells[targets]
        worst_lo[glob] = np.maximum(worst_lo[glob], lo)
        worst_hi[glob] = np.minimum(worst_hi[glob], hi)
