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

Single-contributor attackers (``singleton=True``): the contributor of a suppressed cell
with ``freq == 1`` knows that cell; each such attacker's interval of every other primary
of the component is computed (or, in verdict mode, decided) with that cell fixed, and the
primary must meet its requirement against each attacker separately.

The result types are in :mod:`tabprotect.audit_result`.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram, solve
from tabprotect.audit_result import (TOL as _TOL, AuditResult, IntervalAudit, VerdictAudit,
                                     meets_requirement)
from tabprotect.csr import row_indices, row_positions
from tabprotect.errors import InputError
from tabprotect.model.relations import linked_components
from tabprotect.model.scale import scaled_table, value_scale
from tabprotect.model.status import is_suppressed
from tabprotect.model.table import Table
from tabprotect.requirements import attacker_name, protection_requirements
from tabprotect.parallel import process_map

__all__ = ["audit", "AuditResult", "IntervalAudit", "VerdictAudit", "MODES",
           "required_interval", "meets_requirement", "mirror_share"]

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
# verdict mode: components from this many variables get block LPs (aggregate objectives
# over the primaries of a region of about ``_BLOCK_SIZES`` variables, the rest of the
# component at its true values) instead of aggregate LPs over the whole component, whose
# interior-point solves take minutes at 10^5-10^6 variables
_BLOCK_MIN_VARS = 10_000
_BLOCK_SIZES = (5_000,)
# options of the warm per-component model from _DUAL_MIN_VARS variables on: the dual
# simplex on every re-solve (HiGHS' own choice after an objective change is the primal
# simplex, several times slower on large components, faster on small ones)
_WARM_OPTIONS: dict = {"simplex_strategy": 1}
_DUAL_MIN_VARS = 2000
# then blocks of these sizes around each primary still open, pushing that primary alone
_SOLO_BLOCK_SIZES = (5_000,)
# the share of a block (first grown) whose primaries seed no block of their own
_BLOCK_CORE_SHARE = 1 / 3
# block LPs from this many variables are solved by interior point (no crossover)
_BLOCK_IPM_VARS = 5_000
# ... with an optimality tolerance of 1e-6 instead of HiGHS' 1e-8: a witness is a feasible
# point whatever its optimality (the feasibility tolerance stays); on 40 5,000-variable
# block LPs of the 1M-cell 4-D gauss pattern 10-17% faster per LP, objectives equal
# to 5 digits (the simplex methods take about 3x as long)
_BLOCK_IPM_OPTIONS = {"solver": "ipm", "run_crossover": "off",
                      "ipm_optimality_tolerance": 1e-6}
# screen mode: the larger block passes run only while the previous pass certified at
# least this share of the primaries it tried (on a pattern whose open primaries are
# mostly really short -- gauss after its cube pass, 1M cells, 4-D -- every pass costs
# LPs that certify next to nothing, and the repair handles them anyway)
_SCREEN_BLOCK_MIN_YIELD = 0.1


def audit(table: Table, unpublished: np.ndarray | None = None, *, integer: bool | None = None,
          singleton: bool = False, time_limit: float | None = None,
          progress: Callable[[int, int], None] | None = None, mode: str = "intervals",
          workers: int = 1, previous: AuditResult | None = None,
          moves: sp.spmatrix | None = None) -> AuditResult:
    """The protection verdict of a pattern, with the feasibility interval of every
    unpublished cell (``mode="intervals"``: an :class:`IntervalAudit`) or bounds on the
    interval ends that decided the verdict (``"verdict"``, ``"screen"``: a
    :class:`VerdictAudit`).

    Parameters
    ----------
    table : the table; its ``status`` says what is suppressed (U and M), unless
        ``unpublished`` is given
    unpublished : boolean mask of cells the intruder does not see (e.g. everything but
        the margins); overrides the status
    integer : integer min/max (frequency tables); default True for frequency tables
    singleton : also audit against every single-contributor attacker: the contributor
        of a suppressed cell with ``freq == 1`` knows that cell's value exactly, so each
        primary must stay protected with that cell fixed (each attacker is judged on
        its own interval; ``attacked`` flags the primaries some attacker breaks)
    time_limit : seconds for the whole audit (a cell whose bound was not computed in time
        gets the trivially safe interval and the audit fails)
    progress : called as ``progress(done_components, total_components)``
    mode : ``"intervals"`` computes the exact interval of every unpublished cell;
        ``"verdict"`` decides only whether each primary cell is protected (same verdict,
        far fewer LPs on large patterns; bounds instead of intervals, see
        :class:`VerdictAudit`); ``"screen"``
        only certifies: like verdict mode, but on large components a primary cell that
        no witness certifies counts as not protected without the LPs that would prove
        it short (a pass is a real pass; a failure may be unproven -- for repair loops)
    workers : processes for independent components (1 = in this process)
    previous : (verdict and screen modes) an audit of the same table with a pattern
        that this one only extends (every cell unpublished there is unpublished here).
        Suppressing more only widens the intruder's polytope, for every attacker, so a
        primary cell protected there is protected here: it keeps that audit's bounds and
        costs no LP. For audit-and-repair loops; ignored in intervals mode
    moves : (verdict and screen modes) candidate witnesses, one per row of a sparse
        ``(m, n_cells)`` matrix: a deviation ``d`` such that ``value + d`` should be a
        table the intruder cannot rule out (e.g. the cubes of a repair). The audit does
        not trust them: a row is used only if it moves unpublished cells alone and keeps
        every relation (``A d = 0``); it is then shrunk into the a-priori bounds and used
        like an LP solution (with its mirror image ``value - t d``). Rows that fail the
        check are ignored (counted in ``moves_rejected``). Ignored in intervals mode

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
    scale = 1.0 if integer else value_scale(table)
    if scale != 1.0:
        # values far from 1 are audited in scaled units (tabprotect.model.scale)
        inner = audit(scaled_table(table, 1.0 / scale), unpublished, integer=integer,
                      singleton=singleton, time_limit=time_limit, progress=progress,
                      mode=mode, workers=workers,
                      previous=None if previous is None else rescale_audit(previous, 1.0 / scale),
                      moves=None if moves is None else sp.csr_matrix(moves) * (1.0 / scale))
        return dataclasses.replace(rescale_audit(inner, scale), runtime=time.monotonic() - start)
    value = table.value
    lower = value.copy()
    upper = value.copy()
    lower[unpublished] = -np.inf
    upper[unpublished] = np.inf
    exact_lower = np.ones(n, dtype=bool)
    exact_upper = np.ones(n, dtype=bool)
    # verdict modes: limits of the interval ends from LPs with far relations dropped
    outer_lower = np.full(n, -np.inf)
    outer_upper = np.full(n, np.inf)

    primary = (table.status == "U") & unpublished
    req_lo, req_hi, req_w = required_interval(table, primary, bool(integer), singleton)
    settled = _settled_by(previous, table, unpublished, singleton, bool(integer)) \
        if previous is not None and mode != "intervals" else np.zeros(n, dtype=bool)

    # cells alone among the unpublished cells of some relation are known exactly; they are
    # as good as published for the intruder (repeat: that may isolate further cells)
    determined = _determined_cells(table.relations, unpublished)
    lower[determined] = value[determined]
    upper[determined] = value[determined]
    free = unpublished & ~determined
    comps, ncomp = _components(table.relations, free)
    counters = _new_counters()
    incomplete = np.zeros(n, dtype=bool)
    deadline = None if time_limit is None else start + time_limit
    notes: list[str] = []
    # primaries that some single-contributor attacker can narrow below their requirement
    # (each attacker is judged on its own interval: the intersection of the intervals of
    # different attackers is no attacker's knowledge)
    attacked = np.zeros(n, dtype=bool)

    move_parts = _split_moves(table, moves, free, comps) \
        if moves is not None and mode != "intervals" else None
    if move_parts is not None:
        counters_moves = move_parts.pop()
    else:
        counters_moves = (0, 0)
    builder = _SystemBuilder(table, free)
    # a settled primary is no target of the LPs (it is as good as a non-primary cell)
    open_primary = primary & ~settled
    tasks = [_ComponentTask(system=builder.system(cells), primary=open_primary[cells],
                            req_lo=req_lo[cells], req_hi=req_hi[cells], req_w=req_w[cells],
                            freq=table.freq[cells] if singleton else None,
                            integer=bool(integer), mode=mode, deadline=deadline,
                            moves=None if move_parts is None else move_parts[k])
             for k, cells in enumerate(comps)]

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
        attacked[cells] = out.attacked
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

    if mode == "intervals":
        protected, exact = _verdict(lower, upper, lower, upper, unpublished, incomplete,
                                    attacked, table, req_lo, req_hi, req_w)
        return IntervalAudit(
            lower=lower, upper=upper, required_lower=req_lo, required_upper=req_hi,
            required_width=req_w, unpublished=unpublished, primary=table.status == "U",
            protected=protected, exact=exact, integer=bool(integer), singleton=singleton,
            n_components=ncomp, n_lp=counters["lp"], n_lp_skipped=counters["skipped"],
            n_determined=int(determined.sum()), incomplete=incomplete,
            runtime=time.monotonic() - start, attacker_notes=notes, mode=mode,
            attacked=attacked, table=table)
    # verdict modes: witness values (``lower``/``upper``), exact where flagged; limits
    # from outer LPs or the a-priori bounds elsewhere
    min_at_least = np.where(exact_lower, lower, np.maximum(outer_lower, table.lb))
    max_at_most = np.where(exact_upper, upper, np.minimum(outer_upper, table.ub))
    if settled.any():
        if isinstance(previous, VerdictAudit):
            reach_lo, reach_hi = previous.min_at_most, previous.max_at_least
            limit_lo, limit_hi = previous.min_at_least, previous.max_at_most
        else:
            reach_lo = limit_lo = previous.lower
            reach_hi = limit_hi = previous.upper
        lower[settled], upper[settled] = reach_lo[settled], reach_hi[settled]
        min_at_least[settled], max_at_most[settled] = limit_lo[settled], limit_hi[settled]
        attacked[settled] = False
        incomplete[settled] = False
        counters["certified"] += int(settled.sum())
    bounds = dict(min_at_most=lower, min_at_least=min_at_least, max_at_least=upper,
                  max_at_most=max_at_most)
    protected, exact = _verdict(lower, upper, min_at_least, max_at_most, unpublished,
                                incomplete, attacked, table, req_lo, req_hi, req_w)
    return VerdictAudit(
        required_lower=req_lo, required_upper=req_hi, required_width=req_w,
        unpublished=unpublished, primary=table.status == "U", protected=protected,
        exact=exact, integer=bool(integer), singleton=singleton, n_components=ncomp,
        n_lp=counters["lp"], n_lp_skipped=counters["skipped"],
        n_determined=int(determined.sum()), incomplete=incomplete,
        runtime=time.monotonic() - start, attacker_notes=notes, mode=mode,
        attacked=attacked, outer_lower=np.isfinite(outer_lower) & ~exact_lower,
        outer_upper=np.isfinite(outer_upper) & ~exact_upper,
        n_certified=counters["certified"], n_local_lp=counters["local_lp"],
        n_block_lp=counters["block_lp"],
        n_block_passes_skipped=counters["block_passes_skipped"],
        n_moves_used=counters_moves[0], n_moves_rejected=counters_moves[1], table=table,
        **bounds)


def _verdict(reach_lo, reach_hi, limit_lo, limit_hi, unpublished, incomplete, attacked,
             table, req_lo, req_hi, req_w) -> tuple[np.ndarray, np.ndarray]:
    """``(protected, exact)`` per cell from the values feasible tables reach
    (``reach_lo``/``reach_hi``: the exact ends in an interval audit) and the limits the
    ends cannot pass (``limit_lo``/``limit_hi``)."""
    value = table.value
    # limits meeting in a point: the cell is disclosed
    exact = unpublished & (limit_hi - limit_lo <= _TOL * np.maximum(1.0, np.abs(value)))
    # a point interval is never safe, whatever the levels ask (in screen mode it may be
    # a point only for want of witnesses: then the cell is uncertified, so not protected)
    ok = meets_requirement(reach_lo, reach_hi, req_lo, req_hi, req_w, value)
    # an exactly disclosed primary cell is never protected, whatever its levels say; nor
    # is one whose interval was not computed within the time limit, nor one that a
    # single contributor can narrow too far
    ok &= ~exact & ~incomplete & ~attacked
    primary = table.status == "U"
    protected = np.where(primary & unpublished, ok, True)
    # a primary cell that is published is never protected
    protected &= ~(primary & ~unpublished)
    return protected, exact


def _new_counters() -> dict[str, int]:
    """The audit's work counters (summed over components into the AuditResult)."""
    return {"lp": 0, "skipped": 0, "certified": 0, "local_lp": 0, "block_lp": 0,
            "block_passes_skipped": 0}


def _split_moves(table: Table, moves, free: np.ndarray, comps: list[np.ndarray]) -> list:
    """Check candidate moves (rows of ``moves``) and cut the valid ones into one sparse
    matrix per component, over the component's local variables.  Returns that list
    followed by ``(rows used, rows rejected)``.

    A row is valid when it is zero on every cell that is published (or pinned down by
    the relations) and keeps every relation: ``|A d| <= 1e-7 max|d|``.  A valid move's
    entries on different components are valid moves of each component on their own
    (no relation holds free cells of two components).
    """
    n = table.n_cells
    H = sp.csr_matrix(moves, dtype=float)
    if H.ndim != 2 or H.shape[1] != n:
        raise InputError(f"audit: 'moves' must have one column per cell ({n}), "
                         f"not shape {H.shape}")
    H.eliminate_zeros()
    nnz = np.diff(H.indptr)
    outside = np.asarray(abs(H) @ (~free).astype(float)).ravel() > 0
    residual = abs(table.relations @ H.T).tocsc()
    worst = np.zeros(H.shape[0])
    has = np.diff(residual.indptr) > 0
    if residual.nnz:
        worst[has] = np.maximum.reduceat(residual.data, residual.indptr[:-1][has])
    size = np.zeros(H.shape[0])
    if H.nnz:
        rows_with = nnz > 0
        size[rows_with] = np.maximum.reduceat(np.abs(H.data), H.indptr[:-1][rows_with])
    # (the LP's own feasibility tolerance: moves from deviation LPs keep the relations
    # only that exactly)
    ok = (nnz > 0) & ~outside & (worst <= 1e-7 * np.maximum(1.0, size))
    label = np.full(n, -1, dtype=np.int64)
    local = np.zeros(n, dtype=np.int64)
    for k, cells in enumerate(comps):
        label[cells] = k
        local[cells] = np.arange(len(cells))
    G = H[np.flatnonzero(ok)].tocoo()
    comp_of = label[G.col]
    order = np.lexsort((G.col, G.row, comp_of))
    row, col, data, comp_of = G.row[order], G.col[order], G.data[order], comp_of[order]
    bounds = np.searchsorted(comp_of, np.arange(len(comps) + 1))
    parts: list = []
    for k, cells in enumerate(comps):
        a, b = bounds[k], bounds[k + 1]
        if a == b:
            parts.append(None)
            continue
        r = row[a:b]
        new_row = np.concatenate([[0], np.cumsum(r[1:] != r[:-1])])
        parts.append(sp.csr_matrix((data[a:b], (new_row, local[col[a:b]])),
                                   shape=(int(new_row[-1]) + 1, len(cells))))
    parts.append((int(ok.sum()), int((~ok & (nnz > 0)).sum())))
    return parts


def rescale_audit(result: AuditResult, factor: float) -> AuditResult:
    """The audit result with its value-unit figures multiplied by ``factor`` (an interval
    audit's intervals, a verdict audit's bounds, the requirements)."""
    names = [*result.columns(), "required_lower", "required_upper", "required_width"]
    return dataclasses.replace(result, **{k: getattr(result, k) * factor for k in names})


def _settled_by(previous: AuditResult, table: Table, unpublished: np.ndarray,
                singleton: bool, integer: bool) -> np.ndarray:
    """Primary cells a previous audit of a sub-pattern found protected (see ``audit``'s
    ``previous``); checks that the previous audit is one the monotonicity argument
    covers."""
    n = table.n_cells
    if previous.unpublished.shape != (n,):
        raise InputError(f"audit: 'previous' is an audit of a table with "
                         f"{previous.unpublished.shape[0]} cells, not {n}")
    grown = previous.unpublished & ~unpublished
    if grown.any():
        raise InputError(f"audit: 'previous' must audit a pattern this one extends, but "
                         f"cell {table.cell_name(int(np.flatnonzero(grown)[0]))} is "
                         f"unpublished there and published here")
    if previous.singleton != singleton or previous.integer != integer:
        raise InputError("audit: 'previous' was run with other singleton/integer "
                         "settings")
    settled = (previous.primary & previous.protected & previous.unpublished
               & (table.status == "U") & unpublished)
    if previous.incomplete is not None:
        settled &= ~previous.incomplete
    if isinstance(previous, VerdictAudit):
        # bounds from relaxed LPs are not attained: never reused as witnesses
        settled &= ~(previous.outer_lower | previous.outer_upper)
    return settled


def required_interval(table: Table, primary: np.ndarray | None = None,
                      integer: bool | None = None, singleton: bool = True
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The interval each primary cell must reach, ``[max(lb, X - LPL), min(ub, X + UPL)]``,
    and the width it needs, ``max(SPL, no-exact-disclosure width)``; nan for other cells
    (:func:`tabprotect.requirements.protection_requirements`)."""
    req = protection_requirements(table, attacker_name(singleton), integer=integer)
    return req.per_cell(table.n_cells, primary)


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
            # dual simplex on large components: after an objective change HiGHS would
            # go primal, 3-5x slower there (TABLE3's 2,397-variable component); on small
            # ones primal is 1.5-2.5x faster
            options = _WARM_OPTIONS if self.k >= _DUAL_MIN_VARS else {}
            self._model = HighsModel(self.lp(False, fixed), **options)
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
            cells = np.unique(row_indices(self.A.indptr, self.A.indices, self._rows_of(cells)))
        return cells

    def _scratch(self):
        """Per-variable and per-relation work arrays, allocated once per component and
        always handed back all-clear, so that many small block LPs cost time in their
        own size, not the component's."""
        if getattr(self, "_work", None) is None:
            self._work = {"ties": np.zeros(self.k, dtype=np.int64),
                          "pos": np.full(self.k, -1, dtype=np.int64),
                          "rows": np.zeros(self.A.shape[0], dtype=bool)}
        return self._work

    def _rows_of(self, cells: np.ndarray) -> np.ndarray:
        """Relations (sorted) that hold any of ``cells``."""
        cols = self._columns()
        return np.unique(row_indices(cols.indptr, cols.indices, cells))

    def grow(self, seed: int, size: int, core: int | None = None):
        """About ``size`` variables around variable ``seed`` (sorted), for a block LP.

        Grown relation step by relation step; when a step would overshoot, the variables
        tied to the region by the most relations come first: they close the cycles
        (rectangles, cubes) along which a cell can move, where plain breadth-first order
        would add long thin lines through the seed. With ``core``, also returns the
        first ``core`` variables added (sorted): the block's middle, where a cell's
        cycles are most likely inside the block."""
        work = self._scratch()
        ties, pos, row_seen = work["ties"], work["pos"], work["rows"]
        A = self.A
        members = [np.array([seed], dtype=np.int64)]
        pos[seed] = 0                     # pos >= 0 marks "inside" while growing
        seen_rows: list[np.ndarray] = []
        tied: list[np.ndarray] = []
        new = members[0]
        count = 1
        try:
            while count < size and len(new):
                rows = self._rows_of(new)
                rows = rows[~row_seen[rows]]
                row_seen[rows] = True
                seen_rows.append(rows)
                if len(rows):
                    cells, n_ties = np.unique(row_indices(A.indptr, A.indices, rows),
                                              return_counts=True)
                    ties[cells] += n_ties
                    tied.append(cells)
                frontier = np.unique(np.concatenate(tied)) if tied else new[:0]
                cand = frontier[pos[frontier] < 0]
                room = size - count
                if len(cand) > room:
                    # stable: equal ties keep index order (a deterministic audit)
                    cand = np.sort(cand[np.argsort(-ties[cand], kind="stable")[:room]])
                pos[cand] = 0
                members.append(cand)
                count += len(cand)
                new = cand
        finally:
            order = np.concatenate(members)
            block = np.unique(order)
            pos[block] = -1
            for cells in tied:
                ties[cells] = 0
            for rows in seen_rows:
                row_seen[rows] = False
        if core is None:
            return block
        return block, np.sort(order[:core])

    def _local_program(self, cells, kind, fixed, reach=None):
        """Relations, right-hand sides and bounds of the LP over ``cells`` (sorted; see
        :meth:`local_bound` for ``kind``); with ``reach``, infinite bounds are capped
        that far from the true value (aggregate objectives must not be unbounded)."""
        pos = self._scratch()["pos"]
        rows = self._rows_of(cells)
        A = self.A
        lengths = A.indptr[rows + 1] - A.indptr[rows]
        at = row_positions(A.indptr, rows)
        col = A.indices[at]
        coef = A.data[at]
        row_of = np.repeat(np.arange(len(rows)), lengths)
        pos[cells] = np.arange(len(cells))
        try:
            local = pos[col]
        finally:
            pos[cells] = -1
        inside = local >= 0
        tol = self.row_tol[rows] if self.relaxed else np.zeros(len(rows))
        rhs = self.rhs[rows].astype(float)
        if kind == "relaxed":
            # only relations with every variable inside
            outside_rows = np.zeros(len(rows), dtype=bool)
            outside_rows[row_of[~inside]] = True
            keep_row = ~outside_rows
        else:
            # the variables outside stay at their true values
            rhs -= np.bincount(row_of[~inside], weights=coef[~inside] * self.value[
                col[~inside]], minlength=len(rows))
            keep_row = np.ones(len(rows), dtype=bool)
        new_row = np.cumsum(keep_row) - 1
        sel = inside & keep_row[row_of]
        sub = sp.csr_matrix((coef[sel], (new_row[row_of[sel]], local[sel])),
                            shape=(int(keep_row.sum()), len(cells)))
        rhs, tol = rhs[keep_row], tol[keep_row]
        lb, ub = self.lb[cells].copy(), self.ub[cells].copy()
        if fixed:
            for jj, v in fixed.items():
                at_j = np.searchsorted(cells, jj)
                if at_j < len(cells) and cells[at_j] == jj:
                    lb[at_j] = ub[at_j] = v
        if reach is not None:
            lb = np.maximum(lb, self.value[cells] - reach)
            ub = np.minimum(ub, self.value[cells] + reach)
        return sub, rhs - tol, rhs + tol, lb, ub

    def block_witness(self, cells, c_idx, goal, sign, fixed, counters, reach, weight):
        """A feasible table that moves the variables ``c_idx`` (among the sorted
        ``cells``) towards ``goal`` (up for ``sign=+1``, down for -1), every variable
        outside ``cells`` at its true value: a witness for many primaries at once from a
        small LP. Returns the witness over all variables, or None.

        The objective saturates at the goal (``max sum weight * min(sign * x, sign *
        goal)``, one extra column and row per pushed variable): a variable gains nothing
        beyond its requirement, so the LP spends the slack of the table on the variables
        that still need it, where ``max sum x`` would let a few absorb everything."""
        sub, row_lo, row_hi, lb, ub = self._local_program(cells, "restricted", fixed,
                                                          reach)
        n, m = len(cells), len(c_idx)
        local = np.searchsorted(cells, c_idx)
        # rows: sign * x_p - u_p >= 0, u_p <= sign * goal_p; maximise sum weight * u_p
        link = sp.csr_matrix((np.concatenate([np.full(m, float(sign)), -np.ones(m)]),
                              (np.tile(np.arange(m), 2),
                               np.concatenate([local, n + np.arange(m)]))),
                             shape=(m, n + m))
        A = sp.vstack([sp.hstack([sub, sp.csr_matrix((sub.shape[0], m))]), link],
                      format="csr")
        c = np.concatenate([np.zeros(n), weight])
        res = solve(LinearProgram(
            c=c, A=A, row_lower=np.concatenate([row_lo, np.zeros(m)]),
            row_upper=np.concatenate([row_hi, np.full(m, np.inf)]),
            col_lower=np.concatenate([lb, np.full(m, -np.inf)]),
            col_upper=np.concatenate([ub, sign * np.asarray(goal, dtype=float)]),
            sense="max"),
            # large blocks: interior point without crossover (a feasible point is all a
            # witness needs, and it is several times faster than simplex here)
            **(_BLOCK_IPM_OPTIONS if n >= _BLOCK_IPM_VARS else {}))
        counters["block_lp"] = counters.get("block_lp", 0) + 1
        if res.status != "optimal" or res.x is None:
            return None
        x = self.value.copy()
        # interior-point points may sit a hair outside a bound
        x[cells] = np.clip(res.x[:n], lb, ub)
        return x

    def local_bound(self, j, sense, cells, kind, fixed, counters):
        """Min or max of ``x_j`` over a small LP around it.

        ``kind="relaxed"``: only the relations whose variables all lie in ``cells``; the
        other relations are dropped, so the interval can only grow: a bound that falls
        short here falls short in the whole system (an outer bound).
        ``kind="restricted"``: the variables outside ``cells`` stay at their true values;
        every solution is a feasible table of the whole system (a witness).
        Returns ``(value, x over all variables or None)``; value None when the LP gave
        no answer (the caller then falls back to the whole system)."""
        sub, row_lo, row_hi, lb, ub = self._local_program(cells, kind, fixed)
        c = np.zeros(len(cells))
        c[np.searchsorted(cells, j)] = 1.0
        res = solve(LinearProgram(c=c, A=sub, row_lower=row_lo, row_upper=row_hi,
                                  col_lower=lb, col_upper=ub, sense=sense))
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
    moves: sp.csr_matrix | None = None   # checked candidate moves, local columns


@dataclass
class _ComponentOutcome:
    lo: np.ndarray
    hi: np.ndarray
    exact_lo: np.ndarray
    exact_hi: np.ndarray
    attacked: np.ndarray      # primaries some single-contributor attacker narrows too far
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
    counters = _new_counters()
    attacked = np.zeros(k, dtype=bool)
    try:
        if task.mode in ("verdict", "screen"):
            lo, hi, ex_lo, ex_hi, out_lo, out_hi = _verdict_bounds(
                system, task, np.arange(k), counters)
        else:
            lo, hi = _exact_intervals(system, np.arange(k), task.integer, counters,
                                      task.deadline)
            ex_lo = ex_hi = np.ones(k, dtype=bool)
            out_lo, out_hi = np.full(k, -np.inf), np.full(k, np.inf)
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
                # this attacker's own verdict (verdict mode: its witnesses certify, or
                # its exact / outer bounds prove the shortfall)
                attacked[targets] |= ~meets_requirement(
                    a_lo, a_hi, task.req_lo[targets], task.req_hi[targets],
                    task.req_w[targets], system.value[targets])
    except _InfeasibleSystem as exc:
        empty = np.zeros(k)
        return _ComponentOutcome(empty, empty, empty.astype(bool), empty.astype(bool),
                                 attacked, np.zeros(0, dtype=np.int64), counters,
                                 [], infeasible_cell=exc.local_cell,
                                 outer_lo=empty, outer_hi=empty)
    incomplete = np.fromiter(sorted(system.incomplete), dtype=np.int64,
                             count=len(system.incomplete))
    return _ComponentOutcome(lo, hi, ex_lo, ex_hi, attacked, incomplete,
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
        # its mirror image: x = value + d with A d = 0, so value - t d satisfies the
        # relations too, for the largest t <= 1 that keeps every cell in its bounds; a
        # push up thus also gives a push down (often the whole way: levels are mostly
        # symmetric) without another LP
        d = x - system.value
        moved = np.flatnonzero(np.abs(d) > 1e-9 * np.maximum(1.0, np.abs(system.value)))
        if len(moved) == 0:
            return
        dm, vm = d[moved], system.value[moved]
        t = mirror_share(vm, system.lb[moved], system.ub[moved], dm)
        if integer and t < 1.0:
            return   # a scaled point need not be integral
        if t > 1e-9:
            mirrored = vm - t * dm
            lo[moved] = np.minimum(lo[moved], mirrored)
            hi[moved] = np.maximum(hi[moved], mirrored)

    def satisfied():
        return want & ~short_hi() & ~short_lo() & ~short_w()

    if task.moves is not None:
        frozen = np.zeros(k, dtype=bool)
        if fixed:
            frozen[list(fixed)] = True
        _absorb_moves(task.moves, system, lo, hi, integer, frozen)

    system.fix(fixed)
    try:
        # limits the interval cannot pass (from LPs with far relations dropped), kept
        # apart from the witness values: set only where they prove a primary short
        outer_lo = np.full(k, -np.inf)
        outer_hi = np.full(k, np.inf)
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
                    if needed(j) and not blocks:
                        # (after block LPs these small witness LPs add next to nothing:
                        # 2 of 7,442 primaries on a 1M-cell 4-D pattern)
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
                    outer_hi[j], outer_lo[j] = o_hi, o_lo
                    decided[j] = True

        def block_pass(size: int, solo: bool = False) -> None:
            reach = _reach(system, task)
            # blocks grown around open primaries; a primary in the middle of an earlier
            # block of this pass has had its chance and seeds no block of its own (the
            # next pass, with larger blocks, tries again). A *solo* block pushes its seed
            # alone: where many primaries share a block the LP may leave one of them
            # behind although the block could move it far enough
            tried = np.zeros(k, dtype=bool)
            open_before = want & ~satisfied() & ~decided
            for j in np.flatnonzero(open_before):
                if tried[j] or not (needs_hi(j) or needs_lo(j)) or \
                        _out_of_time(task.deadline):
                    continue
                cells, middle = system.grow(int(j), size,
                                            core=int(size * _BLOCK_CORE_SHARE))
                tried[j] = True
                if solo:
                    members = np.array([j], dtype=np.int64)
                else:
                    tried[middle] = True
                    members = cells[want[cells] & ~decided[cells]]
                # down first: a-priori lower bounds (often 0) bind that way; the
                # mirror image of its witness often settles the way up as well
                for sign in (-1.0, 1.0):
                    m_lo, m_hi = lo[members], hi[members]
                    m_tol = tol[members]
                    up = m_hi < req_hi[members] - m_tol
                    down = m_lo > req_lo[members] + m_tol
                    width = ((m_hi - m_lo < req_w[members] - m_tol)
                             | (m_hi - m_lo <= m_tol))
                    if sign > 0:
                        push = (up | width) & ~ex_hi[members]
                        goal = np.maximum(req_hi[members], m_lo + req_w[members])
                        # a point interval is never safe: ask for some width
                        goal = np.maximum(goal, system.value[members] + 10 * m_tol)
                    else:
                        push = (down | width) & ~ex_lo[members]
                        goal = np.minimum(req_lo[members], m_hi - req_w[members])
                        goal = np.minimum(goal, system.value[members] - 10 * m_tol)
                    idx = members[push]
                    if len(idx) == 0:
                        continue
                    absorb(system.block_witness(cells, idx, goal[push], sign, fixed,
                                                counters, reach, 1.0 / scale[idx]))
            # the share of the primaries open before the pass that it certified
            return int((open_before & satisfied()).sum()) / max(1, int(open_before.sum()))

        blocks = k >= _BLOCK_MIN_VARS
        if blocks:
            passes = [(size, False) for size in _BLOCK_SIZES] + \
                [(size, True) for size in _SOLO_BLOCK_SIZES]
            for n_pass, (size, solo) in enumerate(passes):
                share = block_pass(size, solo=solo)
                if task.mode == "screen" and n_pass + 1 < len(passes) and \
                        share < _SCREEN_BLOCK_MIN_YIELD:
                    counters["block_passes_skipped"] += len(passes) - n_pass - 1
                    break
        else:
            aggregate_rounds(8)
        if large:
            if not (blocks and task.mode == "screen"):
                # then growing neighbourhoods around what the aggregate witnesses left
                # open (after block LPs only to prove shortfalls, which a screen does not)
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


def mirror_share(value: np.ndarray, lb: np.ndarray, ub: np.ndarray,
                 deviation: np.ndarray) -> float:
    """The largest ``t <= 1`` with ``value - t * deviation`` inside ``[lb, ub]``: how much
    of a move's mirror image stays a feasible table (``deviation`` non-zero).

    Examples
    --------
    >>> float(mirror_share(np.array([4.0, 5.0]), np.zeros(2), np.full(2, np.inf),
    ...                    np.array([2.0, -3.0])))
    1.0
    >>> float(mirror_share(np.array([1.0]), np.zeros(1), np.full(1, np.inf), np.array([4.0])))
    0.25
    """
    room = np.where(deviation > 0, value - lb, ub - value)
    with np.errstate(divide="ignore"):
        return float(min(1.0, np.min(room / np.abs(deviation))))


def _absorb_moves(moves: sp.csr_matrix, system, lo: np.ndarray, hi: np.ndarray,
                  integer: bool, frozen: np.ndarray) -> None:
    """Widen ``lo``/``hi`` by checked candidate moves (rows of ``moves``, see
    ``audit``'s ``moves``): each row ``d`` gives the points ``value + t d`` and
    ``value - t' d`` for the largest ``t, t' <= 1`` inside the a-priori bounds.

    All rows at once (a 1M-cell pattern hands the audit ~200,000 cube moves: one row at a
    time that was most of an audit with few LPs). A row is skipped when it moves a cell
    the attacker knows exactly (``frozen``: no move for that attacker), and for an
    integer intruder when it is fractional or must be shrunk (a scaled point need not be
    integral)."""
    n_rows = moves.shape[0]
    lengths = np.diff(moves.indptr)
    nonempty = np.flatnonzero(lengths > 0)
    if len(nonempty) == 0:
        return
    row_of = np.repeat(np.arange(n_rows), lengths)
    col, d = moves.indices, moves.data
    skip = np.zeros(n_rows, dtype=bool)
    if frozen.any():
        skip[row_of[frozen[col]]] = True
    if integer:
        skip[row_of[np.abs(d - np.round(d)) > 1e-9]] = True
    v = system.value[col]
    size = np.abs(d)
    with np.errstate(divide="ignore", invalid="ignore"):
        # how far (in units of the step) each entry may go up / down before a bound
        room_up = np.where(size > 0, (system.ub[col] - v) / size, np.inf)
        room_down = np.where(size > 0, (v - system.lb[col]) / size, np.inf)
    starts = moves.indptr[nonempty]
    for sign in (1.0, -1.0):
        step = sign * d
        ratio = np.where(step > 0, room_up, room_down)
        t = np.ones(n_rows)
        t[nonempty] = np.minimum(1.0, np.minimum.reduceat(ratio, starts))
        usable = (t > 1e-9) & ~skip
        if integer:
            usable &= t >= 1.0
        take = usable[row_of]
        if not take.any():
            continue
        point = v[take] + t[row_of[take]] * step[take]
        np.minimum.at(lo, col[take], point)
        np.maximum.at(hi, col[take], point)


def _reach(system, task) -> float:
    """How far from the true values an aggregate objective may push a variable whose
    a-priori bound is infinite: far beyond any protection level, yet finite."""
    levels = np.nan_to_num(np.concatenate([np.abs(task.req_hi - system.value),
                                           np.abs(system.value - task.req_lo),
                                           np.abs(task.req_w)]),
                           nan=0.0, posinf=0.0)
    return float(10.0 * (np.abs(system.value).max() + levels.max()) + 1.0)


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
            reach = _reach(system, self.task)
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
