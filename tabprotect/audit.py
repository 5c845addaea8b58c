"""The LP audit: what an intruder can derive about suppressed cells.

The intruder knows every published value, the relations ``A x = 0`` of the table and the
a-priori bounds ``lb <= x <= ub``.  For each unpublished cell ``i`` the audit computes the
feasibility interval ``[min x_i, max x_i]`` over that polytope and checks every primary cell
against its protection levels.

Why it is fast (and still exact):

* published cells are substituted out, so the LP has one column per *suppressed* cell;
* cells alone among the unpublished cells of a relation are pinned down without an LP;
* the suppressed cells split into independent components (cells linked through relations);
  each component is its own small LP, and components can be solved in parallel processes;
* per component one persistent HiGHS model is built once; only the objective changes
  between the solves, so every re-solve starts from the previous basis;
* every LP solution is a feasible table, so it is a *witness*: a bound is already known
  exactly when some earlier solution sits at the cell's a-priori bound, and (verdict mode)
  a primary cell is already proven protected when the witnesses seen so far spread it
  across its required interval. Verdict mode first solves a few LPs with aggregate
  objectives that push many primaries towards their requirements at once, and solves the
  per-cell LPs only for what is left; an unprotected cell always gets its exact LP bound.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram, solve
from tabprotect.errors import InputError
from tabprotect.model.relations import linked_components
from tabprotect.model.status import is_suppressed
from tabprotect.model.table import Table
from tabprotect.parallel import process_map

_TOL = 1e-6
_SENSE_ORDER = ("min", "max")
MODES = ("intervals", "verdict", "screen")
# below this many unpublished cells a process pool costs more than it saves
_PARALLEL_MIN_CELLS = 5000
# verdict mode: components from this many variables try local LPs (over the cells within
# each of ``_LOCAL_HOPS_SEQUENCE`` relation steps of a primary, at most
# ``_LOCAL_MAX_VARS``) before the whole-component LP of a primary
_LOCAL_MIN_VARS = 2000
_LOCAL_HOPS_SEQUENCE = (2, 3, 4)
_LOCAL_MAX_VARS = 50_000


@dataclass
class AuditResult:
    """Feasibility intervals and the protection verdict of a suppression pattern.

    Arrays have one entry per cell of the table; ``lower``/``upper`` are the cell's value
    for published cells.

    Attributes
    ----------
    lower, upper : feasibility interval of every cell. In ``mode="verdict"`` only the
        bounds flagged in ``exact_lower``/``exact_upper`` are the interval's exact ends;
        those flagged in ``outer_lower``/``outer_upper`` are limits the interval cannot
        pass (from an LP with far relations dropped; set only where they prove a primary
        short); the others are values some feasible table attains (the true interval is
        at least ``[lower, upper]`` there)
    required_lower, required_upper : the interval a primary cell's protection levels ask
        for (``value - LPL`` capped at ``lb``, ``value + UPL``); nan for other cells
    unpublished : mask of cells the intruder does not see
    protected : per cell, True unless it is a primary cell whose interval falls short
    exact : unpublished cells whose interval is a single point (exact disclosure; in
        verdict mode decided for primary cells only, and not for those whose shortfall
        was proven by outer bounds alone)
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
    attacker_notes: list[str] = field(default_factory=list)
    mode: str = "intervals"
    exact_lower: np.ndarray | None = None
    exact_upper: np.ndarray | None = None
    n_certified: int = 0   # primary cells proven protected by witnesses, without own LP
    outer_lower: np.ndarray | None = None
    outer_upper: np.ndarray | None = None
    n_local_lp: int = 0    # small LPs around primary cells (verdict mode, large components)

    @property
    def complete(self) -> bool:
        return self.incomplete is None or not self.incomplete.any()

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
            "mode": self.mode,
            "unpublished": int(self.unpublished.sum()),
            "primary": int(self.primary.sum()),
            "unprotected_primary": int((~self.protected).sum()),
            "exactly_disclosed": int(self.exact.sum()),
            "passed": self.passed,
            "components": self.n_components,
            "lp_solved": self.n_lp,
            "lp_skipped": self.n_lp_skipped,
            "determined_without_lp": self.n_determined,
            "certified_by_witness": self.n_certified,
            "complete": self.complete,
            "integer": self.integer,
            "singleton_attack": self.singleton,
            "seconds": round(self.runtime, 3),
        }

    def to_frame(self, table: Table, only_unpublished: bool = False) -> pd.DataFrame:
        """Cells with ``lower, upper, required_lower, required_upper, protected`` columns
        (plus ``exact_lower``/``exact_upper`` in verdict mode)."""
        out = table.to_frame(("value", "freq", "status"))
        out["lower"] = self.lower
        out["upper"] = self.upper
        if self.mode in ("verdict", "screen"):
            out["exact_lower"] = self.exact_lower
            out["exact_upper"] = self.exact_upper
        out["required_lower"] = self.required_lower
        out["required_upper"] = self.required_upper
        out["protected"] = self.protected
        out["exact"] = self.exact
        if only_unpublished:
            out = out[self.unpublished]
        return out


def audit(table: Table, unpublished: np.ndarray | None = None, *, integer: bool | None = None,
          singleton: bool = False, time_limit: float | None = None,
          progress: Callable[[int, int], None] | None = None, mode: str = "intervals",
          workers: int = 1) -> AuditResult:
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
    mode : ``"intervals"`` computes the exact interval of every unpublished cell;
        ``"verdict"`` decides only whether each primary cell is protected (same verdict,
        far fewer LPs on large patterns; see ``AuditResult.exact_lower``); ``"screen"``
        only certifies: like verdict mode, but on large components a primary cell that
        no witness certifies counts as not protected without the LPs that would prove
        it short (a pass is a real pass; a failure may be unproven -- for repair loops)
    workers : processes for independent components (1 = in this process)

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> st = t.status.copy(); st[[4, 5, 7, 8]] = ["U", "M", "M", "M"]
    >>> t = t.replace(status=st, upl=np.where(st == "U", 1.0, 0.0),
    ...               lpl=np.where(st == "U", 1.0, 0.0))
    >>> res = audit(t)
    >>> float(res.lower[4]), float(res.upper[4])
    (1.0, 5.0)
    >>> res.passed, audit(t, mode="verdict").passed
    (True, True)
    """
    start = time.monotonic()
    if mode not in MODES:
        raise InputError(f"audit: mode must be one of {', '.join(MODES)}, not {mode!r}")
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
    exact_lower = np.ones(n, dtype=bool)
    exact_upper = np.ones(n, dtype=bool)
    outer_lower = np.zeros(n, dtype=bool)
    outer_upper = np.zeros(n, dtype=bool)

    primary = (table.status == "U") & unpublished
    req_lo, req_hi, req_w = required_interval(table, primary)

    # cells alone among the unpublished cells of some relation are known exactly; they are
    # as good as published for the intruder (repeat: that may isolate further cells)
    determined = _determined_cells(table.relations, unpublished)
    lower[determined] = value[determined]
    upper[determined] = value[determined]
    free = unpublished & ~determined
    comps, ncomp = _components(table.relations, free)
    counters = {"lp": 0, "skipped": 0, "certified": 0, "local_lp": 0}
    incomplete = np.zeros(n, dtype=bool)
    deadline = None if time_limit is None else start + time_limit
    notes: list[str] = []
    # worst case over attackers: the largest lower bound and smallest upper bound seen
    worst_lo = np.full(n, -np.inf)
    worst_hi = np.full(n, np.inf)

    builder = _SystemBuilder(table, free)
    tasks = [_ComponentTask(system=builder.system(cells), primary=primary[cells],
                            req_lo=req_lo[cells], req_hi=req_hi[cells], req_w=req_w[cells],
                            freq=table.freq[cells] if singleton else None,
                            integer=bool(integer), mode=mode, deadline=deadline)
             for cells in comps]

    def collect(k: int, out: "_ComponentOutcome") -> None:
        cells = comps[k]
        if out.infeasible_cell is not None:
            raise InputError(
                f"audit: no table satisfies the relations and bounds around cell "
                f"{table.cell_name(cells[out.infeasible_cell])} (published values not "
                f"additive, or bounds too tight)")
        lower[cells] = out.lo
        upper[cells] = out.hi
        exact_lower[cells] = out.exact_lo
        exact_upper[cells] = out.exact_hi
        outer_lower[cells] = out.outer_lo
        outer_upper[cells] = out.outer_hi
        worst_lo[cells] = out.worst_lo
        worst_hi[cells] = out.worst_hi
        incomplete[cells[out.incomplete]] = True
        for key in counters:
            counters[key] += out.counters[key]
        notes.extend(out.notes)

    use_pool = (workers > 1 and len(tasks) > 1
                and sum(len(c) for c in comps) >= _PARALLEL_MIN_CELLS)
    if use_pool:
        def arrived(k: int, out: "_ComponentOutcome") -> None:
            arrived.done += 1
            if progress is not None:
                progress(arrived.done, ncomp)
        arrived.done = 0
        outcomes = process_map(_solve_component, tasks, workers,
                               weights=[len(c) for c in comps], on_result=arrived)
        for k, out in enumerate(outcomes):
            collect(k, out)
    else:
        for k, task in enumerate(tasks):
            collect(k, _solve_component(task))
            if progress is not None:
                progress(k + 1, ncomp)

    # a point interval from exact or outer bounds: the cell is disclosed
    exact = unpublished & (exact_lower | outer_lower) & (exact_upper | outer_upper) & (
        np.abs(upper - lower) <= _TOL * np.maximum(1.0, np.abs(value)))
    eff_lo = np.maximum(lower, worst_lo)
    eff_hi = np.minimum(upper, worst_hi)
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
                       n_determined=int(determined.sum()), incomplete=incomplete,
                       runtime=time.monotonic() - start, attacker_notes=notes, mode=mode,
                       exact_lower=exact_lower, exact_upper=exact_upper,
                       outer_lower=outer_lower, outer_upper=outer_upper,
                       n_certified=counters["certified"], n_local_lp=counters["local_lp"])


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


class _SystemBuilder:
    """Everything per relation computed once for the whole table, so that cutting out
    one component costs time in the component's size, not the table's."""

    def __init__(self, table: Table, unpublished: np.ndarray):
        A = table.relations.tocsr()
        self.A_csc = A.tocsc()
        value = table.value
        published_value = np.where(unpublished, 0.0, value)
        # rhs: -(published part of each relation)
        self.rhs = -np.asarray(A @ published_value, dtype=float)
        # Published values that add up only to rounding error (decimals, reconstructed
        # benchmark values) must not make the intruder's system infeasible: each relation
        # may hold within its own residual in the true table, with a margin (applied only
        # when the exact system is infeasible, so exact inputs stay exact).
        magnitude = np.asarray(abs(A) @ np.abs(value), dtype=float)
        residual = np.abs(np.asarray(A @ value, dtype=float))
        self.row_tol = 1.5 * residual + 1e-12 * np.maximum(1.0, magnitude)
        self.lb = table.lb.astype(float)
        self.ub = table.ub.astype(float)
        self.value = value.astype(float)

    def system(self, cells: np.ndarray) -> "_ReducedSystem":
        sub = self.A_csc[:, cells].tocsr()
        rows = np.flatnonzero(np.diff(sub.indptr) > 0)
        return _ReducedSystem(A=sub[rows], rhs=self.rhs[rows], row_tol=self.row_tol[rows],
                              lb=self.lb[cells], ub=self.ub[cells], value=self.value[cells])


class _InfeasibleSystem(Exception):
    def __init__(self, local_cell: int):
        super().__init__(local_cell)
        self.local_cell = local_cell


class _ReducedSystem:
    """The intruder's LP restricted to one component: variables = its suppressed cells.
    Holds arrays only (no table), so it can be sent to a worker process."""

    def __init__(self, A, rhs, row_tol, lb, ub, value):
        self.A, self.rhs, self.row_tol = A, rhs, row_tol
        self.lb, self.ub, self.value = lb, ub, value
        self.relaxed = False
        self._model: HighsModel | None = None
        self.incomplete: set[int] = set()

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_model"] = None
        return state

    @property
    def k(self) -> int:
        return len(self.lb)

    def lp(self, integer: bool, fixed: dict[int, float] | None = None) -> LinearProgram:
        lb, ub = self.lb.copy(), self.ub.copy()
        if fixed:
            for j, v in fixed.items():
                lb[j] = ub[j] = v
        tol = self.row_tol if self.relaxed else 0.0
        return LinearProgram(c=np.zeros(self.k), A=self.A, row_lower=self.rhs - tol,
                             row_upper=self.rhs + tol, col_lower=lb, col_upper=ub,
                             integrality=np.full(self.k, True) if integer else None)

    def model(self, fixed: dict[int, float] | None = None) -> HighsModel:
        if self._model is None:
            self._model = HighsModel(self.lp(False, fixed))
        return self._model

    def solve(self, c_idx, c_val, sense, fixed, counters):
        """Solve with objective ``sum c_val * x[c_idx]``; returns ``(status, x)``, with
        the relations relaxed to rounding error once if the exact system is infeasible."""
        model = self.model(fixed)
        model.set_objective(indices=c_idx, values=c_val, sense=sense)
        res = model.solve()
        counters["lp"] += 1
        if res.status == "infeasible" and not self.relaxed:
            self.relaxed = True
            self._model = None
            model = self.model(fixed)
            model.set_objective(indices=c_idx, values=c_val, sense=sense)
            res = model.solve()
            counters["lp"] += 1
        return res.status, res.x

    def bound(self, j, sense, integer, fixed, counters):
        """Exact min or max of ``x_j``: ``(value, solution or None)``."""
        status, x = self.solve([j], [1.0], sense, fixed, counters)
        if status == "unbounded":
            return (-np.inf if sense == "min" else np.inf), None
        if status == "infeasible":
            raise _InfeasibleSystem(j)
        if status != "optimal":
            return None, None
        val = float(x[j])
        if integer and np.abs(x - np.round(x)).max() > 1e-6:
            val = self._integer_bound(j, sense, fixed, counters)
            x = None
        return val, x

    def _columns(self) -> sp.csc_matrix:
        """The relation matrix by columns (built once, on first use by a local LP)."""
        if getattr(self, "_A_csc", None) is None:
            self._A_csc = self.A.tocsc()
        return self._A_csc

    def neighbourhood(self, j: int, hops: int) -> np.ndarray:
        """Variables within ``hops`` relation steps of variable ``j`` (sorted)."""
        cells = np.array([j])
        for _ in range(hops):
            rows = np.unique(self._columns()[:, cells].indices)
            cells = np.unique(self.A[rows].indices)
        return cells

    def local_bound(self, j, sense, cells, kind, fixed, counters):
        """Min or max of ``x_j`` over a small LP around it.

        ``kind="relaxed"``: only the relations whose variables all lie in ``cells``; the
        other relations are dropped, so the interval can only grow: a bound that falls
        short here falls short in the whole system (an outer bound).
        ``kind="restricted"``: the variables outside ``cells`` stay at their true values;
        every solution is a feasible table of the whole system (a witness).
        Returns ``(value, x over all variables or None)``; value None when the LP gave
        no answer (the caller then falls back to the whole system)."""
        inside = np.zeros(self.k, dtype=bool)
        inside[cells] = True
        rows = np.unique(self._columns()[:, cells].indices)
        sub = self.A[rows]
        tol = self.row_tol[rows] if self.relaxed else 0.0
        rhs = self.rhs[rows]
        if kind == "relaxed":
            keep = np.asarray((sub[:, ~inside] != 0).sum(axis=1)).ravel() == 0
            sub, rhs = sub[keep], rhs[keep]
            tol = tol[keep] if self.relaxed else 0.0
        else:
            rhs = rhs - sub[:, ~inside] @ self.value[~inside]
        sub = sub[:, cells]
        lb, ub = self.lb[cells].copy(), self.ub[cells].copy()
        if fixed:
            for jj, v in fixed.items():
                pos = np.searchsorted(cells, jj)
                if pos < len(cells) and cells[pos] == jj:
                    lb[pos] = ub[pos] = v
        c = np.zeros(len(cells))
        c[np.searchsorted(cells, j)] = 1.0
        res = solve(LinearProgram(c=c, A=sp.csr_matrix(sub), row_lower=rhs - tol,
                                  row_upper=rhs + tol, col_lower=lb, col_upper=ub,
                                  sense=sense))
        counters["local_lp"] = counters.get("local_lp", 0) + 1
        if res.status == "unbounded":
            return (-np.inf if sense == "min" else np.inf), None
        if res.status != "optimal" or res.x is None:
            return None, None
        val = float(res.x[np.searchsorted(cells, j)])
        if kind == "relaxed":
            return val, None
        x = self.value.copy()
        x[cells] = res.x
        return val, x

    def _integer_bound(self, j, sense, fixed, counters) -> float:
        """The LP optimum was fractional: solve the integer program for this bound."""
        model = HighsModel(self.lp(True, fixed))
        model.set_objective(indices=[j], values=[1.0], sense=sense)
        res = model.solve()
        counters["lp"] += 1
        if res.status != "optimal":
            return -np.inf if sense == "min" else np.inf
        return float(round(res.x[j]))

    def at_bounds(self, x):
        """Masks of variables sitting at their finite a-priori lower / upper bound."""
        at_lb = np.isfinite(self.lb) & (
            np.abs(x - self.lb) <= 1e-9 * np.maximum(1, np.abs(self.lb)))
        at_ub = np.isfinite(self.ub) & (
            np.abs(x - self.ub) <= 1e-9 * np.maximum(1, np.abs(self.ub)))
        return at_lb, at_ub

    def fix(self, fixed):
        if fixed:
            idx = np.fromiter(fixed.keys(), dtype=np.int64)
            vals = np.fromiter(fixed.values(), dtype=float)
            self.model(fixed).set_col_bounds(idx, vals, vals)

    def unfix(self, fixed):
        if fixed and self._model is not None:
            idx = np.fromiter(fixed.keys(), dtype=np.int64)
            self._model.set_col_bounds(idx, self.lb[idx], self.ub[idx])


@dataclass
class _ComponentTask:
    system: _ReducedSystem
    primary: np.ndarray
    req_lo: np.ndarray
    req_hi: np.ndarray
    req_w: np.ndarray
    freq: np.ndarray | None   # given for singleton audits
    integer: bool
    mode: str
    deadline: float | None


@dataclass
class _ComponentOutcome:
    lo: np.ndarray
    hi: np.ndarray
    exact_lo: np.ndarray
    exact_hi: np.ndarray
    worst_lo: np.ndarray
    worst_hi: np.ndarray
    incomplete: np.ndarray
    counters: dict
    notes: list
    infeasible_cell: int | None = None
    outer_lo: np.ndarray | None = None
    outer_hi: np.ndarray | None = None


def _solve_component(task: _ComponentTask) -> _ComponentOutcome:
    """Intervals (or the verdict) of one component, plus its singleton attacks."""
    system = task.system
    k = system.k
    counters = {"lp": 0, "skipped": 0, "certified": 0, "local_lp": 0}
    worst_lo = np.full(k, -np.inf)
    worst_hi = np.full(k, np.inf)
    try:
        if task.mode in ("verdict", "screen"):
            lo, hi, ex_lo, ex_hi, out_lo, out_hi = _verdict_bounds(
                system, task, np.arange(k), counters)
        else:
            lo, hi = _exact_intervals(system, np.arange(k), task.integer, counters,
                                      task.deadline)
            ex_lo = ex_hi = np.ones(k, dtype=bool)
            out_lo = out_hi = np.zeros(k, dtype=bool)
        if task.freq is not None:
            targets_all = np.flatnonzero(task.primary)
            for s in np.flatnonzero(task.freq == 1):
                targets = targets_all[targets_all != s]
                if len(targets) == 0:
                    continue
                fixed = {int(s): float(system.value[s])}
                if task.mode in ("verdict", "screen"):
                    a_lo, a_hi = _verdict_bounds(system, task, targets, counters, fixed)[:2]
                    a_lo, a_hi = a_lo[targets], a_hi[targets]
                else:
                    a_lo, a_hi = _exact_intervals(system, targets, task.integer, counters,
                                                  task.deadline, fixed)
                worst_lo[targets] = np.maximum(worst_lo[targets], a_lo)
                worst_hi[targets] = np.minimum(worst_hi[targets], a_hi)
    except _InfeasibleSystem as exc:
        empty = np.zeros(k)
        return _ComponentOutcome(empty, empty, empty.astype(bool), empty.astype(bool),
                                 worst_lo, worst_hi, np.zeros(0, dtype=np.int64), counters,
                                 [], infeasible_cell=exc.local_cell,
                                 outer_lo=empty.astype(bool), outer_hi=empty.astype(bool))
    incomplete = np.fromiter(sorted(system.incomplete), dtype=np.int64,
                             count=len(system.incomplete))
    return _ComponentOutcome(lo, hi, ex_lo, ex_hi, worst_lo, worst_hi, incomplete,
                             counters, [], outer_lo=out_lo, outer_hi=out_hi)


def _out_of_time(deadline) -> bool:
    return deadline is not None and time.monotonic() > deadline


def _exact_intervals(system, targets, integer, counters, deadline, fixed=None):
    """Exact min and max of each target variable (arrays aligned with ``targets``)."""
    k = system.k
    lo = np.full(k, -np.inf)
    hi = np.full(k, np.inf)
    at_lb = np.zeros(k, dtype=bool)
    at_ub = np.zeros(k, dtype=bool)
    system.fix(fixed)
    try:
        # all minima first, then all maxima: consecutive LPs of one sense have nearby
        # optimal bases, so each warm re-solve is short
        for sense in _SENSE_ORDER:
            for j in targets:
                if _out_of_time(deadline):
                    # never computed: the interval stays infinite and the cell is
                    # marked, so the verdict cannot pass on it
                    system.incomplete.add(int(j))
                    continue
                if at_lb[j] if sense == "min" else at_ub[j]:
                    counters["skipped"] += 1
                    val = system.lb[j] if sense == "min" else system.ub[j]
                else:
                    val, x = system.bound(j, sense, integer, fixed, counters)
                    if val is None:
                        # no answer from the solver: never counted as a safe interval
                        system.incomplete.add(int(j))
                        continue
                    if x is not None:
                        # a finite bound attained by a feasible table is that bound's optimum
                        hit_lb, hit_ub = system.at_bounds(x)
                        at_lb |= hit_lb
                        at_ub |= hit_ub
                if sense == "min":
                    lo[j] = val
                else:
                    hi[j] = val
    finally:
        system.unfix(fixed)
    if integer:
        lo = np.where(np.isfinite(lo), np.ceil(lo - 1e-6), lo)
        hi = np.where(np.isfinite(hi), np.floor(hi + 1e-6), hi)
    return lo[targets], hi[targets]


def _verdict_bounds(system, task, targets, counters, fixed=None):
    """Decide, for the primary cells among ``targets``, whether the intruder's interval
    reaches the required one, with as few LPs as possible.

    Returns ``lo, hi, exact_lo, exact_hi`` over all variables of the component: witness
    values (attained by some feasible table) or, where flagged, exact LP bounds. A
    primary cell is either certified by witnesses (its requirement is met) or has the
    exact bound(s) that decide it.
    """
    k = system.k
    integer = task.integer
    # the true table is feasible: the first witness
    lo = system.value.copy()
    hi = system.value.copy()
    ex_lo = np.zeros(k, dtype=bool)
    ex_hi = np.zeros(k, dtype=bool)
    tol = _TOL * np.maximum(1.0, np.abs(system.value))
    req_lo = np.where(np.isnan(task.req_lo), np.inf, task.req_lo)
    req_hi = np.where(np.isnan(task.req_hi), -np.inf, task.req_hi)
    req_w = np.where(np.isnan(task.req_w), -np.inf, task.req_w)
    want = np.zeros(k, dtype=bool)
    want[targets] = True
    want &= task.primary
    if fixed:
        for j, v in fixed.items():
            lo[j] = hi[j] = v
            ex_lo[j] = ex_hi[j] = True
            want[j] = False
    # scale of each primary's requirement, so that aggregate objectives weigh cells of
    # very different magnitude alike
    scale = np.maximum(np.maximum(req_hi - system.value, system.value - req_lo), 1.0)
    scale = np.where(np.isfinite(scale), scale, 1.0)

    def short_hi():
        return want & (hi < req_hi - tol) & ~ex_hi

    def short_lo():
        return want & (lo > req_lo + tol) & ~ex_lo

    def short_w():
        # a positive width is always needed: an exactly disclosed primary is never safe
        return want & ((hi - lo < req_w - tol) | (hi - lo <= tol)) & ~(ex_lo & ex_hi)

    def absorb(x):
        if x is None or (integer and np.abs(x - np.round(x)).max() > 1e-6):
            return   # a fractional point is no witness for an integer intruder
        np.minimum(lo, x, out=lo)
        np.maximum(hi, x, out=hi)

    def satisfied():
        return want & ~short_hi() & ~short_lo() & ~short_w()

    system.fix(fixed)
    try:
        outer_lo = np.zeros(k, dtype=bool)
        outer_hi = np.zeros(k, dtype=bool)
        decided = np.zeros(k, dtype=bool)   # shown short (or, screening, left uncertified)
        large = k >= _LOCAL_MIN_VARS

        # 1. aggregate LPs: push every open primary towards its requirement at once;
        # rounds alternate up / down, later ones mix directions at random (seeded, so the
        # audit is deterministic)
        rng = np.random.default_rng(len(targets) * 7919 + k)
        aggregate = _AggregateModel(system, fixed, task)
        state = {"round": 0, "stalled": 0}

        def aggregate_rounds(last_round: int) -> None:
            while state["round"] < last_round:
                round_no = state["round"]
                up, down = short_hi() & ~decided, short_lo() & ~decided
                width = short_w() & ~up & ~down & ~decided
                if not (up.any() or down.any() or width.any()) or \
                        _out_of_time(task.deadline):
                    return
                state["round"] += 1
                coef = np.zeros(k)
                if round_no == 0:
                    coef[up | width] = 1.0
                elif round_no == 1:
                    coef[down | width] = -1.0
                else:
                    sign = np.where(rng.random(k) < 0.5, 1.0, -1.0)
                    sign = np.where(up & ~down, 1.0, np.where(down & ~up, -1.0, sign))
                    coef[up | down | width] = sign[up | down | width]
                idx = np.flatnonzero(coef)
                if len(idx) == 0:
                    continue
                before = int(satisfied().sum())
                status, x = aggregate.solve(idx, coef[idx] / scale[idx], counters)
                if status == "infeasible":
                    raise _InfeasibleSystem(int(idx[0]))
                if status == "optimal":
                    # interior-point points may sit a hair outside a bound
                    absorb(np.clip(x, system.lb, system.ub))
                gained = int(satisfied().sum()) - before
                state["stalled"] = state["stalled"] + 1 \
                    if gained <= max(1, 0.01 * len(idx)) else 0
                if round_no >= 1 and state["stalled"] >= 2:
                    state["round"] = last_round = 8
                    return

        # local LPs around each primary still open (large components only): an LP with
        # the rest of the table at its true values gives witnesses cheaply; an LP with the
        # far relations dropped bounds the interval from outside, so a shortfall it shows
        # is a shortfall of the whole system, proven without the whole LP
        def narrow(j):
            return hi[j] - lo[j] < req_w[j] - tol[j] or hi[j] - lo[j] <= tol[j]

        def needs_hi(j):
            return hi[j] < req_hi[j] - tol[j] or narrow(j)

        def needs_lo(j):
            return lo[j] > req_lo[j] + tol[j] or narrow(j)

        def local_pass(hops: int) -> None:
            for j in np.flatnonzero(want & ~satisfied() & ~decided):
                if _out_of_time(task.deadline):
                    return
                j = int(j)
                cells = system.neighbourhood(j, hops)
                if len(cells) > min(k // 2, _LOCAL_MAX_VARS):
                    continue
                for sense, needed in (("max", needs_hi), ("min", needs_lo)):
                    if needed(j):
                        _, x = system.local_bound(j, sense, cells, "restricted", fixed,
                                                  counters)
                        absorb(x)
                if not (needs_hi(j) or needs_lo(j)) or task.mode == "screen":
                    continue
                out_hi = out_lo = None
                if needs_hi(j):
                    out_hi, _ = system.local_bound(j, "max", cells, "relaxed", fixed,
                                                   counters)
                if needs_lo(j):
                    out_lo, _ = system.local_bound(j, "min", cells, "relaxed", fixed,
                                                   counters)
                o_hi = np.inf if out_hi is None else out_hi
                o_lo = -np.inf if out_lo is None else out_lo
                if integer:
                    o_hi = np.floor(o_hi + 1e-6) if np.isfinite(o_hi) else o_hi
                    o_lo = np.ceil(o_lo - 1e-6) if np.isfinite(o_lo) else o_lo
                if (o_hi < req_hi[j] - tol[j] or o_lo > req_lo[j] + tol[j]
                        or o_hi - o_lo < req_w[j] - tol[j] or o_hi - o_lo <= tol[j]):
                    # a shortfall proven this way leaves open whether the cell is
                    # disclosed exactly (unless the outer interval is a point)
                    if np.isfinite(o_hi):
                        hi[j], outer_hi[j] = o_hi, True
                    if np.isfinite(o_lo):
                        lo[j], outer_lo[j] = o_lo, True
                    decided[j] = True

        aggregate_rounds(8)
        if large:
            # then growing neighbourhoods around what the aggregate witnesses left open
            for hops in _LOCAL_HOPS_SEQUENCE:
                local_pass(hops)
            if task.mode == "screen":
                # left uncertified: counts as short, unproven (no whole-component LPs)
                decided |= want & ~satisfied()
        counters["certified"] += int((satisfied() & ~decided).sum())

        # 2. per-cell LPs for what the witnesses did not settle; each solution is a new
        # witness for the cells still open
        for sense in ("max", "min"):
            settled = satisfied()
            for j in np.flatnonzero(want & ~decided):
                if _out_of_time(task.deadline):
                    if not settled[j]:
                        system.incomplete.add(int(j))
                    continue
                narrow = hi[j] - lo[j] < req_w[j] - tol[j] or hi[j] - lo[j] <= tol[j]
                needs = (hi[j] < req_hi[j] - tol[j] or narrow) if sense == "max" else \
                    (lo[j] > req_lo[j] + tol[j] or narrow)
                if not needs or (ex_hi[j] if sense == "max" else ex_lo[j]):
                    continue
                val, x = system.bound(j, sense, integer, fixed, counters)
                if val is None:
                    system.incomplete.add(int(j))
                    continue
                absorb(x)
                if sense == "max":
                    hi[j] = np.floor(val + 1e-6) if integer and np.isfinite(val) else val
                    ex_hi[j] = True
                else:
                    lo[j] = np.ceil(val - 1e-6) if integer and np.isfinite(val) else val
                    ex_lo[j] = True
        # an unfinished cell must not be counted as certified above
        system.incomplete -= set(np.flatnonzero(satisfied() & want).tolist())
    finally:
        system.unfix(fixed)
    return lo, hi, ex_lo, ex_hi, outer_lo, outer_hi


class _AggregateModel:
    """The LP of the aggregate (many-cell) objectives of verdict mode.

    Solved by the interior-point method without crossover: only a feasible point is
    needed, not a basis, and on components of thousands of cells it is 5-10x faster than
    simplex for these dense objectives (the per-cell LPs stay on the warm simplex model).
    Infinite a-priori bounds are capped far away here, so a sum objective cannot be
    unbounded; any point found is still a feasible table, hence a witness.
    """

    def __init__(self, system: "_ReducedSystem", fixed, task):
        self.system, self.fixed, self.task = system, fixed, task
        self._model: HighsModel | None = None

    def _build(self) -> HighsModel:
        system = self.system
        lp = system.lp(False, self.fixed)
        lb, ub = lp.col_lower.copy(), lp.col_upper.copy()
        inf = ~(np.isfinite(lb) & np.isfinite(ub))
        if inf.any():
            task = self.task
            levels = np.nan_to_num(np.concatenate([np.abs(task.req_hi - system.value),
                                                   np.abs(system.value - task.req_lo),
                                                   np.abs(task.req_w)]),
                                   nan=0.0, posinf=0.0)
            reach = 10.0 * (np.abs(system.value).max() + levels.max()) + 1.0
            lb = np.maximum(lb, system.value - reach)
            ub = np.minimum(ub, system.value + reach)
        lp = LinearProgram(c=lp.c, A=lp.A, row_lower=lp.row_lower, row_upper=lp.row_upper,
                           col_lower=lb, col_upper=ub)
        return HighsModel(lp, solver="ipm", run_crossover="off")

    def solve(self, idx, values, counters):
        if self._model is None:
            self._model = self._build()
        self._model.set_objective(indices=idx, values=values, sense="max")
        res = self._model.solve()
        counters["lp"] += 1
        if res.status == "infeasible" and not self.system.relaxed:
            self.system.relaxed = True
            self.system._model = None
            self._model = self._build()
            self._model.set_objective(indices=idx, values=values, sense="max")
            res = self._model.solve()
            counters["lp"] += 1
        return res.status, res.x
