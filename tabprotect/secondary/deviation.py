"""The deviation LP of the greedy method and of protect()'s repair, and the
neighbourhoods it is solved on.

The cheapest *deviation* ``f`` of the table that keeps every relation (``A f = 0``), keeps
every cell inside its a-priori bounds, leaves ``P`` and empty cells alone and moves one
primary by a given amount: suppressed cells carry deviation for free, a published cell
``i`` costs ``cost_i * |f_i| / amount``.  Solved on a neighbourhood of the primary
(cells outside are held at 0, so a solution is valid for the whole table).  The
neighbourhoods are gathered straight from the CSR index arrays, with table-long work
arrays kept between calls.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram, solve
from tabprotect.audit.least_moves import split_bounds
from tabprotect.csr import row_indices, row_positions
from tabprotect.model.table import Table

#: HiGHS options of the deviation LPs below ``deviation_lp_presolve_min_columns``
#: columns: these LPs are small and their presolve costs more than the simplex it saves
DEVIATION_LP_OPTIONS: dict = {"presolve": "off"}


def _rows_of(At: sp.csr_matrix, cells: np.ndarray) -> np.ndarray:
    """The relations (sorted, distinct) that hold any of ``cells``."""
    return np.unique(row_indices(At.indptr, At.indices, cells))


def neighbourhood(table: Table, cell: int, radius: int, split=None) -> np.ndarray:
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


def block_neighbourhood(table: Table, suppressed: np.ndarray, cell: int, size: int
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
                      amount: float, *, cells: np.ndarray, time_limit: float | None = None,
                      presolve_min_columns: int) -> np.ndarray | None:
    """Cells (outside the suppressed set) on which the cheapest deviation moving ``cell``
    by ``amount`` (signed) is non-zero; None when no such deviation exists on ``cells``.

    Parameters
    ----------
    status : current status; ``U``/``M`` cells carry deviation for free, ``P`` and ``Z``
        cells cannot move
    cells : the neighbourhood the deviation may use (must contain ``cell``)
    presolve_min_columns : LPs from this many columns are presolved
        (``GreedyOptions.deviation_lp_presolve_min_columns``)
    """
    found = deviation_lp(table, status, cost, cell, amount, cells, time_limit,
                       presolve_min_columns)
    return None if found is None else found[0]


class WarmModels:
    """The deviation LPs' models of the last few regions, kept for warm re-solves.

    A region's LP has the same rows whatever the primary and the pattern: only the
    bounds (the primary's move) and the costs (cells suppressed since) change.  Primaries
    that share a region (the leaves of one sub-table) re-solve its model from the
    previous optimal basis, a fraction of a cold solve (presolve off: small LPs)."""

    def __init__(self, size: int):
        self.size = size
        self._models: dict[bytes, HighsModel] = {}

    def model(self, cells: np.ndarray, build: Callable[[], LinearProgram],
              tag: bytes = b"") -> HighsModel:
        """The model of region ``cells`` (and ``tag``: which LP of the region), built by
        ``build()`` when not kept (the least recently used one is dropped past
        ``size``)."""
        key = tag + cells.tobytes()
        m = self._models.pop(key, None)
        if m is None:
            m = HighsModel(build(), **DEVIATION_LP_OPTIONS)
            if len(self._models) >= self.size:
                self._models.pop(next(iter(self._models)))
        self._models[key] = m
        return m


def deviation_lp(table, status, cost, cell, amount, cells, time_limit,
               presolve_min_columns: int, models: WarmModels | None = None):
    """(support, deviation over ``cells``) of the cheapest deviation, or None.  LPs
    from ``presolve_min_columns`` columns are presolved; below, with ``models``, the
    region's model is re-solved warm."""
    A = table.relations
    At = _transpose(table)
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
    col_lo, col_hi = split_bounds(up, down, loc, np.sign(amount), abs(amount), exact=True)
    c = np.concatenate([w, w])

    def build() -> LinearProgram:
        sub = _restrict(A, _rows_of(At, cells), cells)
        M = sp.hstack([sub, -sub]).tocsr()
        zero = np.zeros(M.shape[0])
        return LinearProgram(c=c, A=M, row_lower=zero, row_upper=zero, col_lower=col_lo,
                             col_upper=col_hi)

    if models is not None and 2 * k < presolve_min_columns:
        m = models.model(cells, build)
        m.set_col_bounds(np.arange(2 * k), col_lo, col_hi)
        m.set_objective(c, sense="min")
        res = m.solve(time_limit=time_limit)
    else:
        # no threads option: HiGHS errors when it differs from the running thread pool
        options = DEVIATION_LP_OPTIONS if 2 * k < presolve_min_columns else {}
        res = solve(build(), time_limit=time_limit, **options)
    if res.status != "optimal" or res.x is None:
        return None
    f = res.x[:k] - res.x[k:]
    scale = max(1.0, abs(amount))
    if amount == round(amount):
        f = _snapped(table, f)
    moved = np.abs(f) > 1e-7 * scale
    return cells[moved & ~free], np.where(moved, f, 0.0)


def free_reach(table: Table, status: np.ndarray, cell: int, cells: np.ndarray,
               cap: float, time_limit: float | None = None,
               models: WarmModels | None = None
               ) -> tuple[float, float, list[tuple[np.ndarray, np.ndarray]]]:
    """How far ``cell`` moves up and down on the suppressed cells among ``cells`` alone
    (the intruder's LP on that region, cells outside it held at 0, every cell moving by
    at most ``cap``: the LPs stay bounded, and a restriction only understates the
    reach): ``(up, down, moves)``, with the two deviations that reach them as moves
    ``(cells, deviation)`` (integral on a frequency table when the vertex is).  A
    region without a move gives zeros.  With ``models`` the region's model is kept:
    the primaries of one region then differ only in the objective (warm re-solves)."""
    free = np.isin(status[cells], ("U", "M"))
    cells = cells[free]
    k = len(cells)
    loc = int(np.searchsorted(cells, cell))
    if k == 0 or loc >= k or cells[loc] != cell:
        return 0.0, 0.0, []

    def build() -> LinearProgram:
        A, At = table.relations, _transpose(table)
        sub = _restrict(A, _rows_of(At, cells), cells)
        x = table.value[cells]
        hi = np.minimum(np.maximum(table.ub[cells] - x, 0.0), cap)
        lo = -np.minimum(np.maximum(x - table.lb[cells], 0.0), cap)
        zero = np.zeros(sub.shape[0])
        return LinearProgram(c=np.zeros(k), A=sub, row_lower=zero, row_upper=zero,
                             col_lower=lo, col_upper=hi)

    model = HighsModel(build(), **DEVIATION_LP_OPTIONS) if models is None else \
        models.model(cells, build, tag=b"reach" + np.float64(cap).tobytes())
    reach, moves = [], []
    for sense in ("max", "min"):
        model.set_objective(indices=[loc], values=[1.0], sense=sense)
        res = model.solve(time_limit=time_limit)
        if res.status != "optimal" or res.x is None:
            reach.append(0.0)
            continue
        f = _snapped(table, res.x)
        reach.append(abs(float(f[loc])))
        moved = np.abs(f) > 1e-9 * max(1.0, abs(float(f[loc])))
        if moved.any():
            moves.append((cells[moved], f[moved]))
    return reach[0], reach[1], moves


def _snapped(table: Table, f: np.ndarray) -> np.ndarray:
    """``f`` made exactly integral on a frequency table when it is so up to the solver's
    tolerance, so that an integer audit takes it as a move (with integer coefficients
    the relations then hold exactly); else ``f`` itself."""
    if table.kind != "frequency":
        return f
    snapped = np.round(f)
    return snapped if np.abs(f - snapped).max(initial=0.0) <= 1e-7 else f
