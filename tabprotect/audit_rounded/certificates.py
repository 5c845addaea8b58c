"""Bounds proven without LPs: feasible integer moves from a known feasible table.

A cell whose range end is reached by a feasible integer table has that end as its exact
bound (no feasible table leaves the range), so moves that keep the table additive and
inside its ranges certify range ends: the move along one inner cell's totals
(:func:`move_certificates`) and the alternating move over a box of sibling inner cells.
"""
from __future__ import annotations

import numpy as np

from tabprotect.model.table import Table, aggregate_leaves

__all__ = ["move_certificates", "array_blocks", "feasible_start", "independent_inner_bounds"]


def move_certificates(table: Table, start: np.ndarray, lower: np.ndarray,
                      upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cells whose range ends are proven reachable by one move from a feasible table.

    In a product table, adding ``t`` units to one inner cell ``d`` and to every total
    containing it (its ancestors in every hierarchy) keeps the table additive.  From an
    integer table ``start`` inside ``[lower, upper]`` the move is feasible for every
    integer ``t`` up to ``up_d = min(upper - start)`` over those cells (down:
    ``min(start - lower)``).  A cell ``c`` reaches its upper end when some inner cell
    below it has ``up_d >= upper_c - start_c``: the move by exactly that amount is a
    feasible integer table with ``c`` at ``upper_c``, so ``upper_c`` is ``c``'s exact
    maximum (no feasible table leaves the range).  Likewise for the lower end.

    Both passes work on the table's array shape, one hierarchy at a time: a minimum
    over ancestors (parents before children), then a maximum over inner descendants.
    Tables without dimensions, or whose relations are not the hierarchies' sums, get no
    certificates (all False).

    Returns ``(lower_reached, upper_reached)`` boolean arrays over the cells.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> h = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"x": h}, [10, 5, 5], kind="frequency")
    >>> lo, hi = move_certificates(t, t.value, t.value - 4, t.value + 4)
    >>> lo.tolist(), hi.tolist()
    ([True, True, True], [True, True, True])
    """
    n = table.n_cells
    none = (np.zeros(n, dtype=bool), np.zeros(n, dtype=bool))
    if not table.dimensions or n == 0:
        return none
    hs = [d.hierarchy for d in table.dimensions]
    shape = tuple(len(h) for h in hs)
    if int(np.prod(shape)) != n:
        return none
    # the relations must be exactly the hierarchies' sums: A K u = 0 for the aggregation
    # K of a random inner vector u (fails with probability 0 otherwise)
    inner = table.is_inner
    u = np.random.default_rng(12345).normal(size=n)
    if table.n_relations and np.abs(table.relations @ aggregate_leaves(u, hs)).max() > 1e-6:
        return none
    x0 = np.asarray(start, dtype=float)
    hi_int = np.floor(upper + 1e-9)
    lo_int = np.ceil(lower - 1e-9)
    down = np.where(np.isnan(x0 - lo_int), 0.0, x0 - lo_int)
    up = np.where(np.isnan(hi_int - x0), 0.0, hi_int - x0)
    out = []
    for slack in (down, up):
        move = _min_over_ancestors(slack.reshape(shape), hs)
        move = np.where(inner.reshape(shape), move, -np.inf)
        best = _max_over_descendants(move, hs).ravel()
        out.append(best >= slack - 1e-9)
    _cycle_certificates(hs, shape, np.flatnonzero(inner), down, up, out[0], out[1])
    return out[0], out[1]


def _cycle_certificates(hs, shape, inner_cells, down, up, lo_ok, hi_ok,
                        trials: int = 8, seed: int = 7) -> None:
    """More certificates for inner cells: the alternating move over a box of inner
    cells.  With a partner leaf ``i'_d`` that shares the parent of the cell's leaf
    ``i_d`` in every dimension, adding ``t`` to the corners with an even number of
    partner coordinates and subtracting ``t`` from the others changes no total (every
    relation sees one ``+t`` and one ``-t`` or nothing).  The cell reaches its end when
    every corner has the slack for ``t`` = the cell's own slack.  ``trials`` random
    partner choices per cell; updates ``lo_ok``/``hi_ok`` in place."""
    k = len(hs)
    if len(inner_cells) == 0 or k * 2 ** k > 64:
        return
    coords = np.unravel_index(inner_cells, shape)
    sib_tables = []
    for h in hs:
        # per code: its sibling leaves (padded), and how many
        sibs = [[]] * len(h)
        for p, kids in h.edges():
            leaves = [c for c in kids if h.is_leaf[c]]
            for c in leaves:
                sibs[c] = [o for o in leaves if o != c]
        width = max(1, max(len(x) for x in sibs))
        table = np.full((len(h), width), -1, dtype=np.int64)
        count = np.zeros(len(h), dtype=np.int64)
        for c, lst in enumerate(sibs):
            table[c, :len(lst)] = lst
            count[c] = len(lst)
        sib_tables.append((table, count))
    has_partner = np.ones(len(inner_cells), dtype=bool)
    for d in range(k):
        has_partner &= sib_tables[d][1][coords[d]] > 0
    rng = np.random.default_rng(seed)
    corners = [np.array([(m >> d) & 1 for d in range(k)]) for m in range(2 ** k)]
    for _ in range(trials):
        todo = has_partner & ~(lo_ok[inner_cells] & hi_ok[inner_cells])
        if not todo.any():
            return
        idx = np.flatnonzero(todo)
        partner = []
        for d in range(k):
            table, count = sib_tables[d]
            own = coords[d][idx]
            pick = np.floor(rng.random(len(idx)) * count[own]).astype(np.int64)
            partner.append(table[own, pick])
        cell = inner_cells[idx]
        need_up, need_down = up[cell], down[cell]
        ok_up = np.ones(len(idx), dtype=bool)
        ok_down = np.ones(len(idx), dtype=bool)
        for sel in corners[1:]:
            corner = np.ravel_multi_index(
                tuple(np.where(sel[d], partner[d], coords[d][idx]) for d in range(k)), shape)
            if sel.sum() % 2 == 0:   # moves with the cell
                ok_up &= up[corner] >= need_up - 1e-9
                ok_down &= down[corner] >= need_down - 1e-9
            else:                    # moves against it
                ok_up &= down[corner] >= need_up - 1e-9
                ok_down &= up[corner] >= need_down - 1e-9
        hi_ok[cell[ok_up]] = True
        lo_ok[cell[ok_down]] = True


def array_blocks(table: Table, cells_per_block: int = 10_000) -> np.ndarray | None:
    """Block number of every cell: each dimension's codes (pre-order, so subtrees stay
    together) cut into equal runs, a block being one run per dimension.  None for tables
    without dimensions.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> h = Hierarchy.flat(["a", "b", "c"], total="T")
    >>> t = Table.from_arrays({"x": h, "y": h}, np.ones(16), kind="frequency")
    >>> array_blocks(t, cells_per_block=4).reshape(4, 4).tolist()
    [[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3], [2, 2, 3, 3]]
    """
    if not table.dimensions:
        return None
    shape = [len(d.hierarchy) for d in table.dimensions]
    per_dim = max(1.0, (table.n_cells / cells_per_block) ** (1.0 / len(shape)))
    ids = np.zeros(table.n_cells, dtype=np.int64)
    for d, n in enumerate(shape):
        runs = int(min(n, np.ceil(per_dim)))
        run_of_code = (np.arange(n) * runs) // n
        ids = ids * runs + run_of_code[table.positions[d]]
    return ids


def _min_over_ancestors(arr: np.ndarray, hs) -> np.ndarray:
    arr = arr.copy()
    for d, h in enumerate(hs):
        moved = np.moveaxis(arr, d, 0)  # a view: writes go into arr
        for code in range(1, len(h)):  # pre-order: a parent comes before its children
            moved[code] = np.minimum(moved[code], moved[int(h.parent[code])])
    return arr


def _max_over_descendants(arr: np.ndarray, hs) -> np.ndarray:
    arr = arr.copy()
    for d, h in enumerate(hs):
        moved = np.moveaxis(arr, d, 0)
        depth = h.depth
        for p in sorted((p for p, _ in h.edges()), key=lambda p: -depth[p]):
            kids = list(h.children[p])
            moved[p] = np.maximum(moved[p], moved[kids].max(axis=0))
    return arr


def feasible_start(table: Table, candidates, lower, upper) -> np.ndarray | None:
    """The first candidate that is an integer, additive table inside the box."""
    for x in candidates:
        if x is None:
            continue
        x = np.asarray(x, dtype=float)
        if x.shape != (table.n_cells,) or not np.all(np.isfinite(x)):
            continue
        if np.abs(x - np.round(x)).max(initial=0.0) > 1e-9:
            continue
        if np.any(x < lower - 1e-9) or np.any(x > upper + 1e-9):
            continue
        if table.n_relations and np.abs(table.relations @ x).max() > 1e-6:
            continue
        return x
    return None


def independent_inner_bounds(table: Table, lower: np.ndarray, upper: np.ndarray):
    """Exact bounds without LPs when no total's range constrains the inner cells, else None.

    Every cell of a product table is the sum of the inner cells below it (its model
    matrix ``K``, cells x inner cells; checked against every relation: ``A K = 0``). When
    each total's range contains the whole interval its inner cells' ranges allow
    (``[K lower, K upper]``), every choice of integer inner cells inside their ranges is a
    feasible table: the inner cells are independent, so their bounds are their range ends
    and a total's bounds are the sums of its inner cells' ends (e.g. small-count rounding
    and random rounding with totals from inner cells, whose totals have no own range).
    Returns ``(lower, upper)`` of every cell; None for general tables (no model matrix)."""
    A = table.relations
    if A.shape[0] == 0 or not table.dimensions:
        return None
    model = table.model_matrix
    if not np.array_equal(model.leaf_cells, table.is_inner):
        return None
    inner = np.flatnonzero(table.is_inner)
    K = model.sparse()
    if abs(A @ K).max() != 0:                                 # not totals of inner cells
        return None
    lo = K @ lower[inner]
    hi = K @ upper[inner]
    if (lo > hi).any() or (lower > lo).any() or (upper < hi).any():
        return None                                           # a total's range binds
    return lo, hi
