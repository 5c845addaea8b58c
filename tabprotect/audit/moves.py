"""Candidate moves: deviations a caller (a repair's cubes) offers the verdict modes as
witnesses. The audit does not trust them: :func:`split_moves` keeps a row only if it moves
unpublished cells alone and keeps every relation, and :func:`absorb_moves` shrinks each
into the a-priori bounds before using it (and its mirror image) like an LP solution.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from tabprotect.errors import InputError
from tabprotect.model.table import Table


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


def valid_rows(table: Table, H: sp.csr_matrix, free: np.ndarray) -> np.ndarray:
    """Per row of ``H`` (moves over every cell, no stored zeros), whether it is a move:
    nonzero somewhere, zero on every cell outside ``free`` and keeping every relation
    within ``1e-7 max(1, max|d|)`` (the LP's own feasibility tolerance: moves from
    deviation LPs keep the relations only that exactly)."""
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
    return (nnz > 0) & ~outside & (worst <= 1e-7 * np.maximum(1.0, size))


def split_moves(table: Table, moves, free: np.ndarray, comps: list[np.ndarray]
                ) -> tuple[list, int, int]:
    """Check candidate moves (rows of ``moves``) and cut the valid ones into one sparse
    matrix per component, over the component's local variables (None for a component
    no valid row touches).  Returns ``(that list, rows used, rows rejected)``.

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
    ok = valid_rows(table, H, free)
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
    return parts, int(ok.sum()), int((~ok & (nnz > 0)).sum())


def absorb_moves(moves: sp.csr_matrix, value: np.ndarray, lb: np.ndarray, ub: np.ndarray,
                 lo: np.ndarray, hi: np.ndarray, integer: bool, frozen: np.ndarray) -> None:
    """Widen ``lo``/``hi`` by checked candidate moves (rows of ``moves``, see
    ``audit``'s ``moves``): each row ``d`` gives the points ``value + t d`` and
    ``value - t' d`` for the largest ``t, t' <= 1`` inside the bounds ``lb``, ``ub``
    (the attacker's: a-priori bounds tightened by what it knows).

    All rows at once: a repair of a 1M-cell pattern hands the audit about 200,000 cube
    moves, and row by row they would cost more than the LPs. A row is skipped when it moves a cell
    the attacker knows exactly (``frozen``: no move for that attacker), and for an
    integer intruder when it is fractional or must be shrunk (a scaled point need not be
    integral)."""
    _, col, point = move_points(moves, value, lb, ub, integer, frozen)
    if len(col):
        np.minimum.at(lo, col, point)
        np.maximum.at(hi, col, point)


def move_points(moves: sp.csr_matrix, value: np.ndarray, lb: np.ndarray, ub: np.ndarray,
                integer: bool, frozen: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The points :func:`absorb_moves` takes, as ``(row, cell, value)`` arrays: per
    usable row and direction the shrunk point's value at each cell the row moves."""
    n_rows = moves.shape[0]
    lengths = np.diff(moves.indptr)
    nonempty = np.flatnonzero(lengths > 0)
    empty = np.zeros(0, np.int64)
    if len(nonempty) == 0:
        return empty, empty, np.zeros(0)
    row_of = np.repeat(np.arange(n_rows), lengths)
    col, d = moves.indices, moves.data
    skip = np.zeros(n_rows, dtype=bool)
    if frozen.any():
        skip[row_of[frozen[col]]] = True
    if integer:
        skip[row_of[np.abs(d - np.round(d)) > 1e-9]] = True
    v = value[col]
    size = np.abs(d)
    with np.errstate(divide="ignore", invalid="ignore"):
        # how far (in units of the step) each entry may go up / down before a bound
        room_up = np.where(size > 0, (ub[col] - v) / size, np.inf)
        room_down = np.where(size > 0, (v - lb[col]) / size, np.inf)
    starts = moves.indptr[nonempty]
    rows, cols, points = [empty], [empty], [np.zeros(0)]
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
        rows.append(row_of[take])
        cols.append(col[take])
        points.append(v[take] + t[row_of[take]] * step[take])
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(points)
