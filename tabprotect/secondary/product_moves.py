"""Moves of a whole product table built from one-dimensional moves (no LP).

In one hierarchy, a *one-dimensional move* is a vector over its codes that keeps every
relation ``parent = sum of children``.  Those through a code ``a`` (``+1`` at ``a``) are
paths of the tree:

* from ``a`` down to a leaf below it (every code on the way ``+1``: ``a``'s own relation
  holds), then
* up to a common ancestor and down another of its branches to a leaf, ``+1`` on ``a``'s
  side and ``-1`` on the other (a sibling is the shortest such path; a *cousin* goes
  through the parents), or up to the root with ``+1`` everywhere (a *pole*: the root has
  no relation above it).

The tensor product of one such move per dimension keeps every relation of the product
table (a relation runs along one dimension, and there the move sums to zero), so when all
its cells are suppressed it is a move the intruder cannot rule out: the primary cell can
move up by ``t_up = min(room in the corner's direction)`` and down by ``t_down``. The
leaf cubes of :func:`tabprotect.secondary.cubes.cube_repair` are the products of sibling
steps; this module searches all paths, for the audit's certify pass.

:func:`cheapest_product_moves` searches, per primary cell, depth first over the
dimensions for the cheapest move that meets the cell's needs (cells suppressed already
cost nothing; the certify pass admits no other cell), the steps of small support first,
pruning a step as soon as one of its cells may not be a corner, the cost so far reaches
the best found or the cells so far already lack the room; the search is compiled with
numba when it is installed.
"""
from __future__ import annotations

import time

import numpy as np

from tabprotect.model.hierarchy import Hierarchy
from tabprotect.model.table import Table
from tabprotect.secondary.gauss.compile import NUMBA, numba_loaded
from tabprotect.secondary.gauss.compile import jit as _jit
from tabprotect.secondary.product_limits import ProductSearchLimits

class _PlainTime:
    """Seconds this process spent in plain-Python searches (compared with
    :attr:`ProductSearchLimits.plain_seconds`)."""

    seconds: float = 0.0


_PLAIN = _PlainTime()


def dimension_steps(h: Hierarchy) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every one-dimensional move through each code of ``h``, as steps from that code.

    Returns CSR-style arrays: the steps of code ``a`` are ``step_ptr[a]:step_ptr[a+1]``;
    step ``s`` holds the entries ``entry_ptr[s]:entry_ptr[s+1]`` of ``codes`` and
    ``signs`` (the move is ``+1`` at ``a`` plus those entries).  Steps are ordered by
    their number of entries (smallest support first).

    Examples
    --------
    >>> h = Hierarchy.flat(["a", "b", "c"], total="T")
    >>> step_ptr, entry_ptr, codes, signs = dimension_steps(h)
    >>> a = h.index("a")
    >>> [[(h.codes[c], int(s)) for c, s in zip(codes[entry_ptr[k]:entry_ptr[k + 1]],
    ...   signs[entry_ptr[k]:entry_ptr[k + 1]])] for k in range(step_ptr[a], step_ptr[a + 1])]
    [[('T', 1)], [('b', -1)], [('c', -1)]]
    """
    parent = np.asarray(h.parent)
    children = h.children
    n = len(h)

    def down_paths(x: int) -> list[list[int]]:
        # every path from x down to a leaf below it (x included)
        if not children[x]:
            return [[x]]
        return [[x] + rest for c in children[x] for rest in down_paths(c)]

    below = [down_paths(x) for x in range(n)]
    step_ptr = [0]
    entry_ptr = [0]
    codes: list[int] = []
    signs: list[int] = []
    for a in range(n):
        ancestors = [a]
        while parent[ancestors[-1]] >= 0:
            ancestors.append(int(parent[ancestors[-1]]))
        ups: list[list[tuple[int, int]]] = [[(x, 1) for x in ancestors[1:]]]   # the pole
        for k in range(1, len(ancestors)):
            common, mine = ancestors[k], ancestors[k - 1]
            rise = [(x, 1) for x in ancestors[1:k]]
            for c in children[common]:
                if c != mine:
                    ups.extend(rise + [(y, -1) for y in path] for path in below[c])
        steps = [[(y, 1) for y in down[1:]] + up for down in below[a] for up in ups]
        steps.sort(key=len)
        for step in steps:
            codes.extend(c for c, _ in step)
            signs.extend(s for _, s in step)
            entry_ptr.append(len(codes))
        step_ptr.append(len(entry_ptr) - 1)
    return (np.asarray(step_ptr, dtype=np.int64), np.asarray(entry_ptr, dtype=np.int64),
            np.asarray(codes, dtype=np.int64), np.asarray(signs, dtype=np.int64))


@_jit
def _search(cells, pos, strides, code_base, step_ptr, entry_start, entry_end, codes,
            signs, cell_cost, room_up, room_down, need_up, need_down, need_width, budget,
            max_corners, out_corners, out_signs, out_count, out_up, out_down, out_cost):
    # depth first over the dimensions: level d holds the corners of the steps chosen in
    # dimensions 0..d-1 (the other dimensions at the cell's own codes)
    n_dims = len(strides)
    corners = np.empty((n_dims + 1, max_corners), dtype=np.int64)
    csign = np.empty((n_dims + 1, max_corners), dtype=np.int64)
    count = np.zeros(n_dims + 1, dtype=np.int64)
    spent = np.zeros(n_dims + 1)
    next_step = np.zeros(n_dims, dtype=np.int64)
    found = np.zeros(len(cells), dtype=np.bool_)
    for i in range(len(cells)):
        corners[0, 0] = cells[i]
        csign[0, 0] = 1
        count[0] = 1
        spent[0] = 0.0
        best = np.inf
        for d in range(n_dims):
            next_step[d] = step_ptr[code_base[d] + pos[i, d]]
        tried = 0
        d = 0
        while d >= 0:
            code = pos[i, d]
            s = next_step[d]
            if s >= step_ptr[code_base[d] + code + 1] or tried >= budget:
                # no step left in this dimension: back to the previous one
                next_step[d] = step_ptr[code_base[d] + code]
                d -= 1
                continue
            next_step[d] = s + 1
            tried += 1
            n0 = count[d]
            if n0 * (1 + entry_end[s] - entry_start[s]) > max_corners:
                continue
            for j in range(n0):
                corners[d + 1, j] = corners[d, j]
                csign[d + 1, j] = csign[d, j]
            ok = True
            m = n0
            cost = spent[d]
            for e in range(entry_start[s], entry_end[s]):
                shift = (codes[e] - code) * strides[d]
                for j in range(n0):
                    c = corners[d, j] + shift
                    cost += cell_cost[c]
                    # (infinite cost: the cell may not be a corner)
                    if cost >= best:
                        ok = False
                        break
                    corners[d + 1, m] = c
                    csign[d + 1, m] = csign[d, j] * signs[e]
                    m += 1
                if not ok:
                    break
            if not ok:
                continue
            # the corners so far are corners of every completion: their room bounds it
            t_up = np.inf
            t_down = np.inf
            for j in range(m):
                c = corners[d + 1, j]
                if csign[d + 1, j] > 0:
                    t_up = min(t_up, room_up[c])
                    t_down = min(t_down, room_down[c])
                else:
                    t_up = min(t_up, room_down[c])
                    t_down = min(t_down, room_up[c])
            if t_up < need_up[i] or t_down < need_down[i] or \
                    t_up + t_down < need_width[i]:
                continue
            count[d + 1] = m
            spent[d + 1] = cost
            if d + 1 == n_dims:
                # the cheapest so far: keep it, and search on for a cheaper one
                found[i] = True
                best = cost
                out_count[i] = m
                out_up[i] = t_up
                out_down[i] = t_down
                out_cost[i] = cost
                for j in range(m):
                    out_corners[i, j] = corners[d + 1, j]
                    out_signs[i, j] = csign[d + 1, j]
                if cost <= 0.0:
                    break
                continue
            d += 1
    return found


def cheapest_product_moves(table: Table, cells: np.ndarray, cell_cost: np.ndarray,
                           need_up: np.ndarray, need_down: np.ndarray,
                           need_width: np.ndarray,
                           limits: ProductSearchLimits = ProductSearchLimits()
                           ) -> tuple[np.ndarray, list]:
    """Per cell of ``cells`` (of a product table), the cheapest product move that meets
    its needs.

    ``cell_cost`` is what making a cell a corner costs (0 for cells suppressed already,
    ``inf`` for cells that may not be corners: published-for-sure, empty, zero, fixed).
    ``need_up``, ``need_down`` and ``need_width`` are given per entry of ``cells``; a move
    qualifies when ``t_up >= need_up``, ``t_down >= need_down`` and ``t_up + t_down >=
    need_width``.  The search is exhaustive up to ``limits.budget`` steps per cell (then the
    cheapest move seen is returned).  Returns (mask over ``cells``: a move was found, list
    of ``(corners, signs, t_up, t_down, cost)`` of the found ones in the order of
    ``cells``; ``corners[0]`` is the cell itself).

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> cell_cost = np.where(np.isin(np.arange(9), [4, 5, 7, 8]), 0.0, np.inf)
    >>> ok, moves = cheapest_product_moves(t, np.array([4]), cell_cost, np.array([1.0]),
    ...                                    np.array([1.0]), np.array([0.0]))
    >>> ok.tolist(), sorted(moves[0][0].tolist()), moves[0][2:]
    ([True], [4, 5, 7, 8], (2.0, 2.0, 0.0))
    """
    cells = np.asarray(cells, dtype=np.int64)
    shape = table.shape
    dims = [d for d in range(len(shape)) if shape[d] > 1]
    if not dims or len(cells) == 0:
        return np.zeros(len(cells), dtype=bool), []
    strides = np.asarray([int(np.prod(shape[d + 1:])) for d in dims], dtype=np.int64)
    parts = [dimension_steps(table.dimensions[d].hierarchy) for d in dims]
    # one flat layout for all dimensions: dimension k's code a has the global steps
    # step_ptr[code_base[k] + a] .. step_ptr[code_base[k] + a + 1]
    code_base = np.cumsum([0] + [len(p[0]) for p in parts[:-1]]).astype(np.int64)
    step_base = np.cumsum([0] + [len(p[1]) - 1 for p in parts[:-1]])
    entry_base = np.cumsum([0] + [len(p[2]) for p in parts[:-1]])
    step_ptr = np.concatenate([p[0] + b for p, b in zip(parts, step_base)])
    entry_start = np.concatenate([p[1][:-1] + b for p, b in zip(parts, entry_base)])
    entry_end = np.concatenate([p[1][1:] + b for p, b in zip(parts, entry_base)])
    codes = np.concatenate([p[2] for p in parts])
    signs = np.concatenate([p[3] for p in parts])
    max_corners = int(np.prod([1 + int(np.diff(p[1]).max(initial=0)) for p in parts]))
    max_corners = min(max_corners, limits.max_corners)
    pos = np.stack([np.asarray(np.unravel_index(cells, shape)[d], dtype=np.int64)
                    for d in dims], axis=1)
    n = len(cells)
    out_corners = np.zeros((n, max_corners), dtype=np.int64)
    out_signs = np.zeros((n, max_corners), dtype=np.int64)
    out_count = np.zeros(n, dtype=np.int64)
    out_up = np.zeros(n)
    out_down = np.zeros(n)
    out_cost = np.zeros(n)
    shared = (strides, code_base, step_ptr, entry_start, entry_end, codes, signs,
              np.asarray(cell_cost, dtype=float), np.asarray(table.ub - table.value, dtype=float),
              np.asarray(table.value - table.lb, dtype=float))
    per_cell = (cells, pos, np.asarray(need_up, dtype=float),
                np.asarray(need_down, dtype=float), np.asarray(need_width, dtype=float))
    outs = (out_corners, out_signs, out_count, out_up, out_down, out_cost)
    found = _run_search(per_cell, shared, outs, limits, max_corners)
    moves = [(out_corners[i, :out_count[i]].copy(),
              out_signs[i, :out_count[i]].astype(float), float(out_up[i]),
              float(out_down[i]), float(out_cost[i])) for i in np.flatnonzero(found)]
    return found, moves



def _run_search(per_cell: tuple, shared: tuple, outs: tuple,
                limits: ProductSearchLimits, max_corners: int) -> np.ndarray:
    """:func:`_search` over the cells (``per_cell``: the arrays given per cell, ``outs``:
    the output arrays, filled per cell): as plain Python batch by batch while numba is
    not loaded and this process's plain searches took less than ``limits.plain_seconds``,
    the compiled kernel for the cells left (the same search: the same moves)."""
    n = len(per_cell[0])
    found = np.zeros(n, dtype=bool)
    budget = int(limits.budget)
    i = 0
    if NUMBA and not numba_loaded():
        while i < n and _PLAIN.seconds < limits.plain_seconds:
            j = min(n, i + limits.plain_batch)
            start = time.perf_counter()
            found[i:j] = _search.py_func(*(a[i:j] for a in per_cell[:2]), *shared,
                                         *(a[i:j] for a in per_cell[2:]), budget,
                                         max_corners, *(a[i:j] for a in outs))
            _PLAIN.seconds += time.perf_counter() - start
            i = j
    if i < n:
        rest = [np.ascontiguousarray(a[i:]) for a in per_cell]
        out_rest = [np.ascontiguousarray(a[i:]) for a in outs]
        found[i:] = _search(*rest[:2], *shared, *rest[2:], budget, max_corners, *out_rest)
        for a, b in zip(outs, out_rest):
            a[i:] = b
    return found
