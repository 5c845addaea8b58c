"""A simple, fast baseline: the attacker-LP loop ("greedy").

For every primary cell whose feasibility interval is too narrow, solve one small linear
program: the cheapest *deviation* ``f`` of the table that keeps every relation
(``A f = 0``), keeps every cell inside its a-priori bounds (``lb <= x + f <= ub``), leaves
``P`` and empty cells alone and moves the primary by its full protection level
(``f_p = +UPL`` or ``-LPL``).  Already suppressed cells carry deviation for free; a
published cell ``i`` costs ``cost_i * |f_i| / level`` (the LP relaxation of the optimal
model for that one primary).  Every published cell the deviation touches is suppressed:
``x + f`` is then a table the intruder cannot rule out, so the primary's interval reaches
its required bound.  Repeat with the LP audit until it passes.

The deviation LP is solved on a neighbourhood of the primary (its sub-tables for product
tables, its relation neighbours for general tables; cells outside are held at 0, so a
solution is valid for the whole table) and widened only when the neighbourhood has no
deviation.  This is also the repair step of :func:`tabprotect.secondary.protect`:
:func:`greedy_repair` takes the shortfalls of any pattern and adds suppressions.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import scipy.sparse as sp

from solvers import LinearProgram, solve
from tabprotect.audit import AuditResult, VerdictAudit, audit, mirror_share
from tabprotect.csr import row_indices, row_positions
from tabprotect.model.table import Table
from tabprotect.requirements import cell_moves
from tabprotect.secondary.base import MethodOutcome, register_method
from tabprotect.secondary.cubes import _move_matrix
from tabprotect.parallel import map_runs

_TOL = 1e-7


def _rows_of(At: sp.csr_matrix, cells: np.ndarray) -> np.ndarray:
    """The relations (sorted, distinct) that hold any of ``cells``."""
    return np.unique(row_indices(At.indptr, At.indices, cells))


def _neighbourhood(table: Table, cell: int, radius: int, split=None) -> np.ndarray:
    """Cells within ``radius`` relation steps of ``cell`` (for product tables the
    union of the cell's sub-tables counts as radius 0)."""
    A = table.relations
    At = _transpose(table)
    if split is not None:
        cells = np.unique(np.concatenate([split.subtable(k).cells
                                          for k in split.subtables_of_cell(cell)]))
    else:
        cells = np.asarray([cell], dtype=np.int64)
    for _ in range(radius if split is not None else radius + 1):
        rows = _rows_of(At, cells)
        if len(rows) == 0:
            break
        grown = np.union1d(cells, row_indices(A.indptr, A.indices, rows))
        if len(grown) == len(cells):
            break
        cells = grown
    return cells


class _Scratch:
    """Table-long work arrays kept between calls (all zero / False between calls):
    allocating them per call cost ~2 ms on 10^6 cells, for regions of a few thousand."""

    def __init__(self, n_cells: int, n_rows: int):
        self.inside = np.zeros(n_cells, dtype=bool)
        self.ties = np.zeros(n_cells, dtype=np.int64)
        self.seen_rows = np.zeros(n_rows, dtype=bool)


_SCRATCH: dict[tuple[int, int], _Scratch] = {}


def _scratch(table: Table) -> _Scratch:
    key = table.relations.shape[::-1]
    work = _SCRATCH.get(key)
    if work is None:
        _SCRATCH.clear()
        work = _SCRATCH[key] = _Scratch(*key)
    return work


def _block_neighbourhood(table: Table, suppressed: np.ndarray, cell: int, size: int
                         ) -> np.ndarray:
    """About ``size`` suppressed cells around ``cell``, plus every published cell of their
    relations: the region where a deviation LP can move ``cell`` along the pattern it
    already has, and suppress at the region's edge where that does not suffice.

    The suppressed cells are grown relation step by relation step (as the audit's block
    LPs are); when a step would overshoot, those tied to the region by the most relations
    come first (they close the cycles along which a cell moves)."""
    A = table.relations
    At = _transpose(table)
    work = _scratch(table)
    inside, ties, seen_rows = work.inside, work.ties, work.seen_rows
    members = [np.array([cell], dtype=np.int64)]
    touched: list[np.ndarray] = []
    row_log: list[np.ndarray] = []
    try:
        inside[cell] = True
        count, new = 1, members[0]
        while count < size and len(new):
            rows = _rows_of(At, new)
            rows = rows[~seen_rows[rows]]
            if len(rows) == 0:
                break
            seen_rows[rows] = True
            row_log.append(rows)
            cells, n_ties = np.unique(row_indices(A.indptr, A.indices, rows), return_counts=True)
            ties[cells] += n_ties
            touched.append(cells)
            # every suppressed cell reached so far is inside after each step that does not
            # overshoot (and the growth stops after one that does): only this step's
            # cells can be new candidates
            cand = cells[suppressed[cells] & ~inside[cells]]
            room = size - count
            if len(cand) > room:
                cand = np.sort(cand[np.argsort(-ties[cand], kind="stable")[:room]])
            inside[cand] = True
            members.append(cand)
            count += len(cand)
            new = cand
    finally:
        for cells in members:
            inside[cells] = False
        for cells in touched:
            ties[cells] = 0
        for rows in row_log:
            seen_rows[rows] = False
    block = np.unique(np.concatenate(members))
    # the published cells of the block's relations: candidates for suppression
    edge = np.unique(row_indices(A.indptr, A.indices, _rows_of(At, block)))
    return np.union1d(block, edge[~suppressed[edge]])


_TRANSPOSES: dict[int, sp.csr_matrix] = {}


def _transpose(table: Table) -> sp.csr_matrix:
    key = id(table.relations)
    At = _TRANSPOSES.get(key)
    if At is None or At.shape != table.relations.shape[::-1]:
        At = table.relations.T.tocsr()
        _TRANSPOSES.clear()  # keep one: the loop works on one table at a time
        _TRANSPOSES[key] = At
    return At


_LOOKUP: dict[int, np.ndarray] = {}


def _restrict(A: sp.csr_matrix, rows: np.ndarray, cells: np.ndarray) -> sp.csr_matrix:
    """``A[rows][:, cells]`` in time proportional to the rows' entries: scipy's column
    selection allocates an array as long as the table (1M cells: ~10 ms per call, more
    than the LP itself)."""
    n = A.shape[1]
    loc = _LOOKUP.get(n)
    if loc is None:
        _LOOKUP.clear()
        loc = _LOOKUP[n] = np.full(n, -1, dtype=np.int64)
    if len(rows) == 0:
        return sp.csr_matrix((0, len(cells)))
    at = row_positions(A.indptr, rows)
    loc[cells] = np.arange(len(cells))
    try:
        col = loc[A.indices[at]]
    finally:
        loc[cells] = -1
    keep = col >= 0
    lengths = A.indptr[rows + 1] - A.indptr[rows]
    row_of = np.repeat(np.arange(len(rows)), lengths)[keep]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(row_of, minlength=len(rows)))])
    return sp.csr_matrix((A.data[at][keep], col[keep], indptr),
                         shape=(len(rows), len(cells)))


def deviation_support(table: Table, status: np.ndarray, cost: np.ndarray, cell: int,
                      amount: float, *, cells: np.ndarray, time_limit: float | None = None
                      ) -> np.ndarray | None:
    """Cells (outside the suppressed set) on which the cheapest deviation moving ``cell``
    by ``amount`` (signed) is non-zero; None when no such deviation exists on ``cells``.

    Parameters
    ----------
    status : current status; ``U``/``M`` cells carry deviation for free, ``P`` and ``Z``
        cells cannot move
    cells : the neighbourhood the deviation may use (must contain ``cell``)
    """
    found = _deviation(table, status, cost, cell, amount, cells, time_limit)
    return None if found is None else found[0]


def _deviation(table, status, cost, cell, amount, cells, time_limit):
    """(support, deviation over ``cells``) of the cheapest deviation, or None."""
    A = table.relations
    At = _transpose(table)
    rows = _rows_of(At, cells)
    sub = _restrict(A, rows, cells)
    k = len(cells)
    x = table.value[cells]
    up = table.ub[cells] - x
    down = x - table.lb[cells]
    st = status[cells]
    frozen = (st == "P") | (st == "Z")
    up = np.where(frozen, 0.0, np.maximum(up, 0.0))
    down = np.where(frozen, 0.0, np.maximum(down, 0.0))
    free = (st == "U") | (st == "M")
    w = np.where(free, 0.0, cost[cells] / max(abs(amount), 1e-12))
    loc = int(np.searchsorted(cells, cell))
    # columns: f_plus (k), f_minus (k)
    col_lo = np.zeros(2 * k)
    col_hi = np.concatenate([up, down])
    if amount > 0:
        col_lo[loc] = col_hi[loc] = amount
        col_hi[k + loc] = 0.0
    else:
        col_lo[k + loc] = col_hi[k + loc] = -amount
        col_hi[loc] = 0.0
    if col_lo[loc] > col_hi[loc] + _TOL or col_lo[k + loc] > col_hi[k + loc] + _TOL:
        return None  # the required move leaves the a-priori bounds
    col_hi = np.maximum(col_hi, col_lo)
    c = np.concatenate([w, w])
    M = sp.hstack([sub, -sub]).tocsr()
    zero = np.zeros(M.shape[0])
    lp = LinearProgram(c=c, A=M, row_lower=zero, row_upper=zero, col_lower=col_lo,
                       col_upper=col_hi)
    # no threads option: HiGHS errors when it differs from the running thread pool
    options = DEVIATION_LP_OPTIONS if M.shape[1] < DEVIATION_LP_PRESOLVE_MIN_COLUMNS else {}
    res = solve(lp, time_limit=time_limit, **options)
    if res.status != "optimal" or res.x is None:
        return None
    f = res.x[:k] - res.x[k:]
    scale = max(1.0, abs(amount))
    moved = np.abs(f) > 1e-7 * scale
    return cells[moved & ~free], np.where(moved, f, 0.0)


def _levels(table: Table, cell: int) -> tuple[float, float]:
    """(up, down) amounts that give the primary its required interval
    (:func:`tabprotect.requirements.cell_moves`: levels, and never a point)."""
    return cell_moves(table, cell)


#: HiGHS options of the deviation LPs. Presolve off: these LPs are small and their
#: presolve costs more than the simplex it saves (1m-3d repair, 166 LPs of 480-11,000
#: columns: 7.4 s with presolve, 1.1 s without; same statuses and objectives)
DEVIATION_LP_OPTIONS: dict = {"presolve": "off"}
#: ... but from this many columns (2 per cell) presolve pays again: 1M-cell 4-D hypercube
#: repair, 9 LPs of 20,000+ columns: 2.6 s with presolve, 21.0 s without (3-D repairs
#: have no LPs that large; below it, 4-D 3,000-20,000 columns: 1.2 s with, 2.0 s without)
DEVIATION_LP_PRESOLVE_MIN_COLUMNS = 20_000
#: From this many cells a repair region first gets the deviation LP on its suppressed
#: cells alone (a primary that is protected already, by a long move, then costs a small
#: feasibility LP instead of the region's full LP).
FREE_FIRST_MIN_CELLS = 20_000

#: greedy_repair(..., workers=n) uses worker processes only from this many primaries (a
#: 1M-cell table takes ~0.5 s to send to a worker and set up there)
PARALLEL_MIN_PRIMARIES = 64


def greedy_repair(table: Table, cost: np.ndarray, unprotected_cells, *,
                  audit_result: AuditResult | None = None, time_limit: float | None = None,
                  progress: Callable[[str, float], None] | None = None,
                  max_radius: int = 4, block_sizes: tuple[int, ...] = (),
                  return_moves: bool = False, workers: int = 1):
    """Add secondary suppressions so that each listed primary reaches its required interval.

    For each cell in ``unprotected_cells`` (in the given order) and each direction whose
    bound falls short (both directions when ``audit_result`` is None), solve the cheapest
    deviation LP (see the module docstring) on a neighbourhood of the cell, widened up to
    ``max_radius`` relation steps (then the whole table) when infeasible, and suppress (status
    ``M``) every published cell it moves.  Suppressions made for earlier cells are free for
    later ones.  The result is *not* audited here: call :func:`tabprotect.audit.audit` again
    (a deviation LP proves its own direction; repairs of several primaries only add cells).

    Parameters
    ----------
    table : the table with its current status (U primaries, M secondaries, P forced published)
    cost : suppression cost per cell
    unprotected_cells : indices of primary cells to repair (e.g. ``audit(...).shortfalls``)
    audit_result : the audit of the current pattern; tells which direction falls short
    time_limit : seconds for the whole repair (cells not reached keep their status)
    progress : ``progress(message, fraction)``
    block_sizes : first try, in this order, regions of about this many suppressed cells
        grown around the primary plus the published cells of their relations (see
        ``_block_neighbourhood``; on 10^6-cell tables far cheaper than the sub-table
        neighbourhoods, which must grow until the deviation fits)
    return_moves : also return the deviations found, as rows of a sparse matrix of
        moves for ``audit(..., moves=...)`` (each keeps every relation and, with its
        support suppressed, moves only suppressed cells)
    workers : worker processes (from :data:`PARALLEL_MIN_PRIMARIES` primaries on): the
        primaries, in cell order, are cut into ``workers`` runs of neighbouring cells,
        each repaired from the current pattern, and the suppressions are united.  Still
        safe: a deviation stays a witness when further cells are suppressed.  Only the
        sharing of suppressions across the cut is lost (a little more cost).

    Returns
    -------
    The new status array (a copy), and with ``return_moves`` the moves.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> st = t.status.copy(); st[4] = "U"
    >>> t = t.replace(status=st, upl=np.where(st == "U", 1.0, 0), lpl=np.where(st == "U", 1.0, 0))
    >>> new = greedy_repair(t, np.ones(9), [4])
    >>> int((new == "M").sum())
    3
    """
    start = time.perf_counter()
    cells = [int(c) for c in np.atleast_1d(np.asarray(unprotected_cells, dtype=np.int64))]
    tasks = [(p, _directions(table, p, audit_result)) for p in cells]
    tasks = [(p, d) for p, d in tasks if d]
    if workers > 1 and len(tasks) >= PARALLEL_MIN_PRIMARIES:
        status, found_moves = _parallel_repair(table, cost, tasks, time_limit, max_radius,
                                               block_sizes, workers, progress)
    else:
        status, found_moves = _repair_sequence(table, table.status, cost, tasks,
                                               time_limit, max_radius, block_sizes,
                                               progress, start)
    if return_moves:
        return status, _move_matrix(found_moves, table.n_cells)
    return status


def _directions(table: Table, p: int, audit_result: AuditResult | None) -> list[float]:
    """The signed moves primary ``p`` needs (its shortfall directions), as amounts."""
    up, down = _levels(table, p)
    directions: list[float] = []
    if audit_result is None:
        directions = [up, -down]
    else:
        tol = 1e-6
        x = table.value[p]
        scale = tol * max(1.0, abs(x))
        # an outer bound (verdict mode: from an LP with relations dropped) only
        # proves a shortfall; on the side it does not, the true bound is unknown
        # (a verdict audit's reached values: the interval holds [lo, hi])
        if isinstance(audit_result, VerdictAudit):
            lo, hi = audit_result.min_at_most[p], audit_result.max_at_least[p]
            outer_hi, outer_lo = audit_result.outer_upper[p], audit_result.outer_lower[p]
        else:
            lo, hi = audit_result.lower[p], audit_result.upper[p]
            outer_hi = outer_lo = False
        if hi < x + up - scale or audit_result.exact[p] or outer_hi:
            directions.append(up)
        if lo > x - down + scale or audit_result.exact[p] or outer_lo:
            directions.append(-down)
        width = hi - lo
        if width < table.spl[p] - scale and not directions:
            directions.append(up if up > 0 else -down)
    out = []
    for amount in directions:
        if amount == 0:
            # zero level (e.g. a primary whose level was capped by its bounds): ask for
            # a small positive move so that the cell is at least not exactly disclosed
            room_up = table.ub[p] - table.value[p]
            room_dn = table.value[p] - table.lb[p]
            unit = max(1.0, 0.01 * abs(table.value[p]))
            amount = min(unit, room_up) if room_up > 0 else -min(unit, room_dn)
            if amount == 0:
                continue
        out.append(float(amount))
    return out


def _repair_sequence(table: Table, status: np.ndarray, cost: np.ndarray,
                     tasks: list[tuple[int, list[float]]], time_limit: float | None,
                     max_radius: int, block_sizes: tuple[int, ...],
                     progress: Callable[[str, float], None] | None, start: float
                     ) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """The sequential repair of ``tasks`` (primary, amounts) from ``status``."""
    status = status.copy()
    suppressed = np.isin(status, ("U", "M"))
    split = None
    if table.dimensions:
        from tabprotect.secondary.subtables import Split
        split = Split(table)
    found_moves: list[tuple[np.ndarray, np.ndarray]] = []
    # the primary's own sub-tables first (small: in 3-D mostly enough), then the block
    # regions, then wider sub-table neighbourhoods, then the whole table
    hoods = [("radius", 0)] + [("block", size) for size in block_sizes] + \
        [("radius", r) for r in range(1, max_radius + 1)] + [("radius", None)]
    for n_done, (p, directions) in enumerate(tasks):
        if time_limit is not None and time.perf_counter() - start > time_limit:
            break
        # the second direction starts from the neighbourhood that served the first: a
        # larger neighbourhood never gives a dearer deviation (more freedom), and the
        # smaller ones mostly fail again (10k-3d: 55 % of the LPs were infeasible ones)
        first, served = 0, None
        mirror_reach = 0.0   # how far the mirror image of this primary's last move goes
        for amount in directions:
            if amount * mirror_reach > 0 and abs(mirror_reach) >= abs(amount) * (1 - 1e-9):
                # the deviation of the other direction, run backwards, already moves the
                # primary this far inside the bounds on suppressed cells only: a witness
                # the audit takes too (it uses every move and its mirror image), so no
                # second LP -- on 1m-4d those on regions of 10^4 cells took ~10 s each
                continue
            found = None
            for at, (kind, radius) in enumerate(hoods[first:], start=first):
                if served is not None and at == first:
                    # the region that served the first direction, not grown again: it
                    # holds the cells that direction suppressed (its support)
                    hood = served
                elif kind == "block":
                    hood = _block_neighbourhood(table, suppressed, p, radius)
                elif radius is None:
                    hood = np.arange(table.n_cells)
                else:
                    hood = _neighbourhood(table, p, radius, split)
                left = None if time_limit is None else max(
                    1.0, time_limit - (time.perf_counter() - start))
                found = None
                if len(hood) >= FREE_FIRST_MIN_CELLS:
                    # a large region: first the deviation on suppressed cells alone (no
                    # cost, a third of the columns): a primary protected by a long move
                    # that the audit's blocks missed needs no new cell, and this LP
                    # shows it in a fraction of the time (1m-4d: 3 s instead of 12 s)
                    used = hood[suppressed[hood]]
                    found = _deviation(table, status, cost, p, amount, used, left)
                if found is None:
                    used = hood
                    found = _deviation(table, status, cost, p, amount, hood, left)
                if found is not None or len(hood) == table.n_cells:
                    break
            if found is None:
                continue
            if radius is not None:
                first, served = at, hood
            support, deviation = found
            if len(support):
                status[support] = "M"
                suppressed[support] = True
            moved = np.flatnonzero(deviation)   # (over the cells the LP used)
            found_moves.append((used[moved], deviation[moved]))
            if table.kind != "frequency":
                # (an integer intruder takes no shrunken mirror image: not there)
                cells = used[moved]
                mirror_reach = -amount * mirror_share(table.value[cells], table.lb[cells],
                                                      table.ub[cells], deviation[moved])
        if progress is not None:
            progress("greedy repair", (n_done + 1) / max(1, len(tasks)))
    return status, found_moves


def _repair_in_worker(job: tuple) -> tuple[np.ndarray, list]:
    """One worker's share of a parallel repair: (cells it suppressed, its moves)."""
    table, cost, tasks, time_limit, max_radius, block_sizes = job
    status, found_moves = _repair_sequence(table, table.status, cost, tasks, time_limit,
                                           max_radius, block_sizes, None,
                                           time.perf_counter())
    return np.flatnonzero(status != table.status), found_moves


def _parallel_repair(table: Table, cost: np.ndarray, tasks: list, time_limit: float | None,
                     max_radius: int, block_sizes: tuple[int, ...], workers: int,
                     progress: Callable[[str, float], None] | None
                     ) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """Cut the primaries, in cell order, into ``workers`` runs of neighbouring cells
    (C order: the first dimensions' codes vary slowest, so a run covers whole slabs of the
    table and shares most of its suppressions within itself), repair each run in a worker
    process from the current pattern, and unite the suppressions and the moves."""
    order = sorted(tasks, key=lambda t: t[0])
    results = map_runs(_repair_in_worker, order, workers,
                       job=lambda run: (table, cost, run, time_limit, max_radius,
                                        block_sizes))
    status = table.status.copy()
    found_moves: list[tuple[np.ndarray, np.ndarray]] = []
    for changed, job_moves in results:
        status[changed] = "M"
        found_moves.extend(job_moves)
    if progress is not None:
        progress("greedy repair", 1.0)
    return status, found_moves


@dataclass(frozen=True)
class GreedyOptions:
    """Settings of the greedy method (see :func:`greedy`)."""

    max_rounds: int = field(default=20, metadata={
        "why": "audit/repair rounds before the method hands its pattern to protect()'s "
               "own audit and repair"})


@register_method("greedy", options=GreedyOptions, needs_product_structure=False,
                 handles_singletons=True, proves_optimality=False)
def greedy(table: Table, cost: np.ndarray, *, time_limit: float | None = None,
           progress: Callable[[str, float], None] | None = None, singleton: bool = False,
           max_rounds: int = 20) -> MethodOutcome:
    """The attacker-LP loop: repair every short primary, audit, repeat until the audit passes.

    Options
    -------
    max_rounds : audit/repair rounds (default 20)
    singleton : audit against single-contributor attackers too (default False)

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> st = t.status.copy(); st[4] = "U"
    >>> t = t.replace(status=st, upl=np.where(st == "U", 1.0, 0), lpl=np.where(st == "U", 1.0, 0))
    >>> out = greedy(t, np.ones(9))
    >>> int((out.status == "M").sum())
    3
    """
    start = time.perf_counter()
    status = table.status.copy()
    primaries = np.flatnonzero(status == "U")
    # first round without an audit: every primary needs both directions anyway
    order = primaries[np.argsort(-table.value[primaries], kind="stable")]

    def remaining():
        return None if time_limit is None else max(1.0, time_limit - (time.perf_counter() - start))

    status = greedy_repair(table.replace(status=status), cost, order, time_limit=remaining(),
                           progress=progress)
    rounds = 1
    passed = False
    for _ in range(max_rounds):
        if time_limit is not None and time.perf_counter() - start > time_limit:
            break
        res = audit(table.replace(status=status), singleton=singleton, time_limit=remaining())
        if res.passed:
            passed = True
            break
        short = res.shortfalls
        new = greedy_repair(table.replace(status=status), cost, short, audit_result=res,
                            time_limit=remaining(), progress=progress)
        rounds += 1
        if (new != status).sum() == 0:
            break  # no deviation can help (e.g. blocked by P cells): protect() reports it
        status = new
    return MethodOutcome(status=status, solver_status="heuristic",
                         details={"rounds": rounds, "audit_passed": passed,
                                  "secondaries": int((status == "M").sum())})
