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

import itertools
import time
from typing import Callable

import numpy as np
import scipy.sparse as sp

from solvers import LinearProgram, solve
from tabprotect.audit import AuditResult, audit
from tabprotect.model.status import is_suppressed
from tabprotect.model.table import Table
from tabprotect.secondary.base import MethodOutcome, register_method

_TOL = 1e-7


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
        rows = np.unique(At[cells].indices)
        if len(rows) == 0:
            break
        grown = np.unique(np.concatenate([cells, A[rows].indices]))
        if len(grown) == len(cells):
            break
        cells = grown
    return cells


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
    inside = np.zeros(table.n_cells, dtype=bool)
    inside[cell] = True
    members = [np.array([cell], dtype=np.int64)]
    count, new = 1, members[0]
    seen_rows = np.zeros(A.shape[0], dtype=bool)
    tie_count = np.zeros(table.n_cells, dtype=np.int64)
    touched: list[np.ndarray] = []
    while count < size and len(new):
        rows = np.unique(At[new].indices)
        rows = rows[~seen_rows[rows]]
        seen_rows[rows] = True
        if len(rows) == 0:
            break
        cells, n_ties = np.unique(A[rows].indices, return_counts=True)
        tie_count[cells] += n_ties
        touched.append(cells)
        frontier = np.unique(np.concatenate(touched))
        cand = frontier[suppressed[frontier] & ~inside[frontier]]
        room = size - count
        if len(cand) > room:
            cand = np.sort(cand[np.argsort(-tie_count[cand], kind="stable")[:room]])
        inside[cand] = True
        members.append(cand)
        count += len(cand)
        new = cand
    block = np.unique(np.concatenate(members))
    # the published cells of the block's relations: candidates for suppression
    rows = np.unique(At[block].indices)
    edge = np.unique(A[rows].indices)
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
    R = A[rows]
    loc[cells] = np.arange(len(cells))
    try:
        col = loc[R.indices]
    finally:
        loc[cells] = -1
    keep = col >= 0
    counts = np.add.reduceat(keep.astype(np.int64), R.indptr[:-1]) if len(keep) else \
        np.zeros(len(rows), np.int64)
    # reduceat repeats the last value for empty rows: every row here holds a cell of
    # ``cells`` (rows come from the cells' relations), so none is empty
    indptr = np.concatenate([[0], np.cumsum(counts)])
    return sp.csr_matrix((R.data[keep], col[keep], indptr), shape=(len(rows), len(cells)))


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
    rows = np.unique(At[cells].indices)
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
    res = solve(lp, time_limit=time_limit)
    if res.status != "optimal" or res.x is None:
        return None
    f = res.x[:k] - res.x[k:]
    scale = max(1.0, abs(amount))
    moved = np.abs(f) > 1e-7 * scale
    return cells[moved & ~free], np.where(moved, f, 0.0)


def _levels(table: Table, cell: int) -> tuple[float, float]:
    """(up, down) amounts that give the primary its required interval."""
    up = float(min(table.upl[cell], table.ub[cell] - table.value[cell]))
    down = float(min(table.lpl[cell], table.value[cell] - table.lb[cell]))
    if table.spl[cell] > up + down:
        up = float(min(table.spl[cell] - down, table.ub[cell] - table.value[cell]))
    # a primary always needs some uncertainty, even with zero protection levels
    return up, down


def greedy_repair(table: Table, cost: np.ndarray, unprotected_cells, *,
                  audit_result: AuditResult | None = None, time_limit: float | None = None,
                  progress: Callable[[str, float], None] | None = None,
                  max_radius: int = 4, block_sizes: tuple[int, ...] = (),
                  return_moves: bool = False):
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
    status = table.status.copy()
    cells = [int(c) for c in np.atleast_1d(np.asarray(unprotected_cells, dtype=np.int64))]
    split = None
    if table.dimensions:
        from tabprotect.secondary.subtables import Split
        split = Split(table)
    tol = 1e-6
    found_moves: list[tuple[np.ndarray, np.ndarray]] = []
    for n_done, p in enumerate(cells):
        if time_limit is not None and time.perf_counter() - start > time_limit:
            break
        up, down = _levels(table, p)
        directions = []
        if audit_result is None:
            directions = [up, -down]
        else:
            x = table.value[p]
            scale = tol * max(1.0, abs(x))
            # an outer bound (verdict mode: from an LP with relations dropped) only
            # proves a shortfall; on the side it does not, the true bound is unknown
            outer_hi = audit_result.outer_upper is not None and audit_result.outer_upper[p]
            outer_lo = audit_result.outer_lower is not None and audit_result.outer_lower[p]
            if audit_result.upper[p] < x + up - scale or audit_result.exact[p] or outer_hi:
                directions.append(up)
            if audit_result.lower[p] > x - down + scale or audit_result.exact[p] or outer_lo:
                directions.append(-down)
            width = audit_result.upper[p] - audit_result.lower[p]
            if width < table.spl[p] - scale and not directions:
                directions.append(up if up > 0 else -down)
        # the second direction starts from the neighbourhood that served the first: a
        # larger neighbourhood never gives a dearer deviation (more freedom), and the
        # smaller ones mostly fail again (10k-3d: 55 % of the LPs were infeasible ones)
        # the primary's own sub-tables first (small: in 3-D mostly enough), then the block
        # regions, then wider sub-table neighbourhoods, then the whole table
        hoods = [("radius", 0)] + [("block", size) for size in block_sizes] + \
            [("radius", r) for r in range(1, max_radius + 1)] + [("radius", None)]
        first = 0
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
            found = None
            suppressed = np.isin(status, ("U", "M"))
            for at, (kind, radius) in enumerate(hoods[first:], start=first):
                if kind == "block":
                    hood = _block_neighbourhood(table, suppressed, p, radius)
                elif radius is None:
                    hood = np.arange(table.n_cells)
                else:
                    hood = _neighbourhood(table, p, radius, split)
                left = None if time_limit is None else max(
                    1.0, time_limit - (time.perf_counter() - start))
                found = _deviation(table, status, cost, p, amount, hood, left)
                if found is not None or len(hood) == table.n_cells:
                    break
            if found is None:
                continue
            if radius is not None:
                first = at
            support, deviation = found
            if len(support):
                status[support] = "M"
            if return_moves:
                moved = np.flatnonzero(deviation)
                found_moves.append((hood[moved], deviation[moved]))
        if progress is not None:
            progress("greedy repair", (n_done + 1) / max(1, len(cells)))
    if return_moves:
        return status, _move_matrix(found_moves, table.n_cells)
    return status


def leaf_cells(table: Table) -> np.ndarray:
    """Cells whose code is a leaf (has no children) in every dimension of a product table."""
    out = np.ones(table.n_cells, dtype=bool)
    for d, dim in enumerate(table.dimensions):
        h = dim.hierarchy
        has_children = np.zeros(len(h), dtype=bool)
        parents = np.asarray(h.parent)
        has_children[parents[parents >= 0]] = True
        if len(h) > 1:
            out &= ~has_children[table.positions[d]]
    return out


class _ChainCubes:
    """Cubes for primaries with non-leaf codes: in a dimension where the primary's code
    ``a`` has children, the move follows a chain of one child per level down to a leaf
    (each chain node moves like ``a``, so every relation "node = sum of its children"
    holds), and ``a``'s sibling (if ``a`` has a parent) moves the opposite way along its
    own chain.  The product of the per-dimension moves keeps every relation of the table,
    so with every corner suppressed it is again a proof of the primary's interval.  The
    chain follows the child with the largest marginal value (the most room to move)."""

    #: per primary at most this many sibling combinations are evaluated
    MAX_COMBOS = 64
    #: only cubes whose corners are all suppressed already (see cube_repair)
    certify_only = False

    def __init__(self, table: Table, poles: bool = False):
        from tabprotect.secondary.gauss import _marginals
        self.table = table
        self.poles = poles
        self.shape = table.shape
        self.hier = [d.hierarchy for d in table.dimensions]
        marg = _marginals(table)
        self.chain = []
        for h, m in zip(self.hier, marg):
            best_child = np.full(len(h), -1, dtype=np.int64)
            for parent, children in h.edges():
                ch = np.asarray(children, dtype=np.int64)
                best_child[parent] = ch[np.lexsort((ch, -m[ch]))[0]]
            chains = []
            for c in range(len(h)):
                path = [c]
                while best_child[path[-1]] >= 0:
                    path.append(int(best_child[path[-1]]))
                chains.append(np.asarray(path, dtype=np.int64))
            self.chain.append(chains)
        self.room_up = table.ub - table.value
        self.room_down = table.value - table.lb
        scale = np.maximum(1.0, np.abs(table.value))
        self.unusable = (np.isin(table.status, ("P", "Z"))
                         | (np.abs(table.value) <= 1e-9 * scale)
                         | (table.ub - table.lb <= 1e-9 * scale))

    def _options(self, d: int, a: int) -> list[tuple[np.ndarray, np.ndarray]]:
        h = self.hier[d]
        own = self.chain[d][a]
        parent = int(h.parent[a])
        if parent < 0:
            return [(own, np.ones(len(own), dtype=np.int64))]
        out = []
        for sib in h.children[parent]:
            if sib == a:
                continue
            other = self.chain[d][sib]
            out.append((np.concatenate([own, other]),
                        np.concatenate([np.ones(len(own), np.int64),
                                        -np.ones(len(other), np.int64)])))
        return out

    def _pole(self, d: int, a: int) -> tuple[np.ndarray, np.ndarray]:
        """The *pole* of code ``a``: its chain down and every ancestor move alike -- the
        move of one leaf, aggregated, so each relation "node = sum of children" holds.
        Its cells are totals, rarely zero: it serves where every sibling has a zero
        corner."""
        h = self.hier[d]
        up = []
        q = int(h.parent[a])
        while q >= 0:
            up.append(q)
            q = int(h.parent[q])
        cells = np.concatenate([self.chain[d][a], np.asarray(up, dtype=np.int64)])
        return cells, np.ones(len(cells), dtype=np.int64)

    def protect(self, p, status, suppressed, cost, need_up, need_down, width,
                single):
        """Suppress the cheapest usable chain cube of ``p``; returns it as
        ``(corners, signs, t_up, t_down)``, or None when there is none."""
        pos = np.unravel_index(p, self.shape)
        per_dim = [self._options(d, int(a)) for d, a in enumerate(pos)]
        if any(len(o) == 0 for o in per_dim):
            return None
        keep = max(1, int(self.MAX_COMBOS ** (1.0 / len(per_dim))))
        per_dim = [o[:keep] for o in per_dim]
        found = self._cheapest(p, per_dim, suppressed, cost, need_up, need_down, width,
                               single)
        if found is None and self.poles:
            with_poles = [o + [self._pole(d, int(a))] if int(self.hier[d].parent[a]) >= 0
                          else o for (d, a), o in zip(enumerate(pos), per_dim)]
            found = self._cheapest(p, with_poles, suppressed, cost, need_up, need_down,
                                   width, single)
        if found is None:
            return None
        fresh, move = found
        status[fresh] = "M"
        suppressed[fresh] = True
        return move

    def _cheapest(self, p, per_dim, suppressed, cost, need_up, need_down, width, single):
        best = None
        scale = 1.0 + 1e-9
        tol = 1e-9 * max(1.0, abs(self.table.value[p]))
        for combo in itertools.product(*per_dim):
            codes = [c for c, _ in combo]
            grids = np.meshgrid(*codes, indexing="ij")
            corners = np.ravel_multi_index([g.ravel() for g in grids], self.shape)
            sign = np.ones(len(corners), dtype=np.int64)
            for sg in np.meshgrid(*[s_ for _, s_ in combo], indexing="ij"):
                sign *= sg.ravel()
            others = corners[corners != p]
            if self.unusable[others].any() or (single is not None and single[others].any()):
                continue
            plus = sign > 0
            t_up = np.where(plus, self.room_up[corners], self.room_down[corners]).min()
            t_down = np.where(plus, self.room_down[corners], self.room_up[corners]).min()
            if t_up < need_up * scale or t_down < need_down * scale or \
                    t_up + t_down < max(width * scale, tol):
                continue
            fresh = corners[~suppressed[corners]]
            if self.certify_only and len(fresh):
                continue
            key = (float(cost[fresh].sum()), float(np.abs(self.table.value[fresh]).sum()))
            if best is None or key < best[0]:
                best = (key, fresh, (corners, sign, float(t_up), float(t_down)))
        return None if best is None else best[1:]


def cube_repair(table: Table, cost: np.ndarray, cells, *, singleton: bool = False,
                time_limit: float | None = None, chains: bool = False,
                poles: bool = False, return_moves: bool = False,
                certify_only: bool = False):
    """Protect primary cells with *leaf cubes*: no LP, each cube a proof.

    A leaf cube of primary ``p`` (all of whose codes are leaves) takes, in every
    dimension, another leaf child of the same parent; its ``2^k`` corners are all leaf
    cells.  Moving the corners by ``+t`` / ``-t`` with alternating signs keeps *every*
    relation of the table (each relation meets the cube in no corner or in two corners of
    opposite sign, and no corner is a total), so with all corners suppressed the
    primary's interval contains ``[x - t_down, x + t_up]``, the simple cube bounds (see
    :mod:`tabprotect.secondary.hypercube`).  For each listed primary the cheapest leaf cube
    whose bounds meet the primary's requirement is suppressed (corners already
    suppressed cost nothing, so a primary that already has such a cube costs nothing).

    With ``chains=True`` a primary with a non-leaf code (or without a usable leaf cube)
    gets a *chain cube* instead (costlier than the deviation LP's support -- 10k-3d
    repair: 3.81M against 3.37M -- but no LP, for the largest tables): in each dimension where its code (or the sibling's) has children the move
    follows one child per level down to a leaf (`_ChainCubes`), again a move of the whole
    table.  Primaries without any usable cube (zero, empty, ``P``, fixed or -- with
    ``singleton`` -- single-contributor corners, or bounds too small) are returned for
    the deviation LPs of :func:`greedy_repair`.

    With ``poles=True`` (and ``chains``) a primary without a usable chain cube may also
    use, in any dimension, the *pole* of its code: the code's chain down and all its
    ancestors moving alike (again a move of the whole table; its cells are totals, so
    rarely zero).

    With ``certify_only`` only cubes whose corners are all suppressed already count:
    nothing is added, and the moves certify the pattern as it is (e.g. before the first
    audit of a hypercube pattern).

    Returns
    -------
    (new status array, the cells left unresolved), plus, with ``return_moves``, the
    cubes as a sparse ``(m, n_cells)`` matrix of moves: per settled primary its cube
    pushed up by the cube's room and pushed down by it, for ``audit(..., moves=...)``,
    which checks them and certifies the primaries without LPs

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> st = t.status.copy(); st[4] = "U"
    >>> t = t.replace(status=st, upl=np.where(st == "U", 1.0, 0), lpl=np.where(st == "U", 1.0, 0))
    >>> new, left = cube_repair(t, np.ones(9), [4])
    >>> sorted(np.flatnonzero(new == "M").tolist()), left.tolist()
    ([5, 7, 8], [])
    """
    from tabprotect.secondary.hypercube import _CubeSearch, requirements
    from tabprotect.secondary.subtables import Split
    start = time.perf_counter()
    cells = np.atleast_1d(np.asarray(cells, dtype=np.int64))
    status = table.status.copy()
    moves: list[tuple[np.ndarray, np.ndarray]] = []

    def done(unresolved_cells):
        if not return_moves:
            return status, unresolved_cells
        return status, unresolved_cells, _move_matrix(moves, table.n_cells)

    def record(p, corners, signs, t_up, t_down):
        # magnitudes: the cube's room, capped where a bound is infinite
        cap = 10.0 * max(need_up[p], need_down[p], float(table.spl[p]), 1.0)
        for magnitude, sign in ((min(t_up, cap), 1.0), (min(t_down, cap), -1.0)):
            if magnitude > 0:
                moves.append((corners, sign * magnitude * signs))

    if not table.dimensions or len(cells) == 0:
        return done(cells)
    split = Split(table)
    search = _CubeSearch(table, split, np.asarray(cost, dtype=float), max_candidates=20000)
    suppressed = np.isin(status, ("U", "M"))
    leaf = leaf_cells(table)
    need_up, need_down = requirements(table)
    # a hair above the levels: the audit's tolerance then never decides the verdict
    scale = 1.0 + 1e-9
    tol = 1e-9 * np.maximum(1.0, np.abs(table.value))
    single = table.freq == 1
    unresolved = []
    chain_cubes = _ChainCubes(table, poles=poles) if chains else None
    if chain_cubes is not None:
        chain_cubes.certify_only = certify_only

    def chain_cube(p, width) -> bool:
        found = chain_cubes.protect(p, status, suppressed, cost, need_up[p], need_down[p],
                                    width, single if singleton else None)
        if found is not None:
            record(p, *found)
        return found is not None

    if certify_only:
        # the cubes a pattern already has: vectorised over the leaf primaries (a few
        # sibling choices each), the per-primary search for the others
        is_leaf = leaf[cells]
        widths = np.where(status[cells] == "U", table.spl[cells], 0.0)
        ok, cubes = _certified_leaf_cubes(
            table, cells[is_leaf], suppressed, search.unusable, need_up, need_down,
            widths[is_leaf], single if singleton else None)
        for p, cube in zip(cells[is_leaf][ok], cubes):
            record(int(p), *cube)
        unresolved.extend(int(q) for q in cells[is_leaf][~ok])
        cells = cells[~is_leaf]
    for n, p in enumerate(cells):
        p = int(p)
        if time_limit is not None and n % 256 == 0 and \
                time.perf_counter() - start > time_limit:
            unresolved.extend(int(c) for c in cells[n:])
            break
        if not leaf[p]:
            if chain_cubes is None or not chain_cube(p, float(table.spl[p])):
                unresolved.append(p)
            continue
        pos = np.unravel_index(p, table.shape)
        key = tuple(int(g.as_child[q]) if g.as_child[q] >= 0 else 0
                    for g, q in zip(split.dims, pos))
        cand = search.candidates(p, key, suppressed, only_suppressed=certify_only)
        if cand is None:
            unresolved.append(p)
            continue
        corners, signs, _ = cand
        usable, t_up, t_down, new_cost = search.evaluate(corners, signs, suppressed)
        ok = usable & leaf[corners].all(axis=0)
        if certify_only:
            ok &= suppressed[corners].all(axis=0)
        if singleton:
            # a corner's contributor knows its value: the cube proves nothing against it
            ok &= ~single[corners[1:]].any(axis=0)
        width = float(table.spl[p]) if status[p] == "U" else 0.0
        ok &= ((t_up >= need_up[p] * scale) & (t_down >= need_down[p] * scale)
               & (t_up + t_down >= max(width * scale, tol[p])))
        if not ok.any():
            # a leaf primary whose siblings have children: chains down from them
            if chain_cubes is None or not chain_cube(p, width):
                unresolved.append(p)
            continue
        idx = np.flatnonzero(ok)
        new_value = np.where(suppressed[corners[:, idx]], 0.0,
                             np.abs(table.value[corners[:, idx]])).sum(axis=0)
        best = idx[np.lexsort((idx, new_value, new_cost[idx]))[0]]
        cube = corners[:, best]
        fresh = cube[~suppressed[cube]]
        status[fresh] = "M"
        suppressed[fresh] = True
        record(p, cube, signs[:, best].astype(float), float(t_up[best]),
               float(t_down[best]))
    return done(np.asarray(unresolved, dtype=np.int64))


def _certified_leaf_cubes(table: Table, cells: np.ndarray, suppressed: np.ndarray,
                          unusable: np.ndarray, need_up: np.ndarray, need_down: np.ndarray,
                          width: np.ndarray, single: np.ndarray | None, rounds: int = 8):
    """Leaf cubes whose corners are all suppressed, for many leaf primaries at once.

    Vectorised over the primaries: dimension by dimension, each primary takes a sibling
    whose new corners (the cube so far, shifted to the sibling) are all suppressed and
    usable; the rounds scan the siblings in different orders.  A cube is accepted when
    its simple bounds meet the requirement.  Returns (mask over ``cells``, list of
    ``(corners, signs, t_up, t_down)`` per accepted cube, in the order of ``cells``)."""
    shape = table.shape
    strides = np.asarray([int(np.prod(shape[d + 1:])) for d in range(len(shape))],
                         dtype=np.int64)
    pos = np.unravel_index(cells, shape)
    varying = [d for d in range(len(shape)) if shape[d] > 1]
    siblings = []
    for d in varying:
        h = table.dimensions[d].hierarchy
        parent = np.asarray(h.parent)
        width_d = max(1, max((len(c) for c in h.children), default=1) - 1)
        table_d = np.full((len(h), width_d), -1, dtype=np.int64)
        for a in range(len(h)):
            if parent[a] >= 0:
                sibs = [b for b in h.children[parent[a]] if b != a]
                table_d[a, :len(sibs)] = sibs
        siblings.append(table_d)
    room_up = table.ub - table.value
    room_down = table.value - table.lb
    done = np.zeros(len(cells), dtype=bool)
    found: dict[int, tuple] = {}
    scale = 1.0 + 1e-9
    tol = 1e-9 * np.maximum(1.0, np.abs(table.value[cells]))
    for r in range(rounds):
        todo = np.flatnonzero(~done)
        if len(todo) == 0:
            break
        p = cells[todo]
        corners = p[None, :]
        sign = np.ones(1)
        alive = np.ones(len(todo), dtype=bool)
        for j, d in enumerate(varying):
            here = pos[d][todo]
            cand = siblings[j][here]
            m = cand.shape[1]
            # the rounds scan the siblings in different orders (first, last, middle, ...)
            order = np.roll(np.arange(m)[::(-1 if r % 2 else 1)], -(r // 2))
            chosen = np.zeros(len(todo), dtype=np.int64)
            have = np.zeros(len(todo), dtype=bool)
            for col in order:
                sib = cand[:, col]
                ok = (sib >= 0) & ~have & alive
                if not ok.any():
                    continue
                offset = (np.where(sib >= 0, sib, here) - here) * strides[d]
                shifted = corners + offset[None, :]
                # every corner the sibling adds must be suppressed and usable
                ok &= suppressed[shifted].all(axis=0) & ~unusable[shifted].any(axis=0)
                if single is not None:
                    ok &= ~single[shifted].any(axis=0)
                chosen[ok] = offset[ok]
                have |= ok
            alive &= have
            corners = np.concatenate([corners, corners + chosen[None, :]])
            sign = np.concatenate([sign, -sign])
        plus = sign[:, None] > 0
        t_up = np.where(plus, room_up[corners], room_down[corners]).min(axis=0)
        t_down = np.where(plus, room_down[corners], room_up[corners]).min(axis=0)
        q = todo
        good = alive & ((t_up >= need_up[cells[q]] * scale)
                        & (t_down >= need_down[cells[q]] * scale)
                        & (t_up + t_down >= np.maximum(width[q] * scale, tol[q])))
        for i in np.flatnonzero(good):
            found[int(q[i])] = (corners[:, i], sign, float(t_up[i]), float(t_down[i]))
        done[q[good]] = True
    return done, [found[i] for i in sorted(found)]


def _move_matrix(moves: list[tuple[np.ndarray, np.ndarray]], n_cells: int) -> sp.csr_matrix:
    """Rows of (cells, deviations) as one sparse matrix (repeated cells are summed)."""
    if not moves:
        return sp.csr_matrix((0, n_cells))
    lengths = np.fromiter((len(c) for c, _ in moves), dtype=np.int64, count=len(moves))
    rows = np.repeat(np.arange(len(moves)), lengths)
    cols = np.concatenate([c for c, _ in moves])
    vals = np.concatenate([np.asarray(v, dtype=float) for _, v in moves])
    return sp.csr_matrix((vals, (rows, cols)), shape=(len(moves), n_cells))


@register_method("greedy")
def greedy(table: Table, cost: np.ndarray, *, time_limit: float | None = None,
           progress: Callable[[str, float], None] | None = None, max_rounds: int = 20,
           **options) -> MethodOutcome:
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
    singleton = bool(options.get("singleton", False))
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
