"""Proof levels: the protection levels a secondary carries from the sub-table that
chose it into its other sub-tables, read from the attacker moves that prove the
sub-table's requirements."""
from __future__ import annotations

import highspy
import numpy as np
from scipy import sparse

from solvers import HighsModel, LinearProgram
from tabprotect.model.table import Table
from tabprotect.secondary.modular.network import Network, min_cost_flow
from tabprotect.secondary.attack_requirements import Requirements


def proof_levels(sub: Table, hidden: np.ndarray, singleton: bool = False, *,
                 flows: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
    """How far each hidden cell of a solved sub-table must be able to move up and down.

    For every primary of the sub-table (status ``U``: its own and the carried ones) and
    every direction it must move, one LP finds the smallest deviation (least total
    movement, L1) with ``A y = 0`` within the hidden cells' ranges that moves the primary
    by its requirement: the attacker's move that proves the requirement (with ``flows``
    on a network sub-table a minimum-cost flow, :func:`~.network.min_cost_flow`, else
    an LP).  A hidden cell's
    level up (down) is the largest upward (downward) step it takes in any of these
    proofs.  A carried secondary given these levels in the other sub-tables holding it
    lets every proof of this sub-table extend to the whole table, and it asks no more
    of them: a rectangle that protects a primary needing 1,000 moves its corners by
    1,000, not by the largest requirement seen in the sub-table.

    Returns ``(up, down)`` over the sub-table's cells, or None when some primary has no
    such move (the pattern does not protect it here; the caller falls back to the
    sub-table's median requirement and the full-table audit has the last word).

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2],
    ...                       status=list("SSSSUSSSS"), upl=[0, 0, 0, 0, 1, 0, 0, 0, 0],
    ...                       lpl=[0, 0, 0, 0, 2, 0, 0, 0, 0])
    >>> up, down = proof_levels(t, np.isin(np.arange(9), [4, 5, 7, 8]))
    >>> up[[4, 5, 7, 8]].tolist(), down[[4, 5, 7, 8]].tolist()
    ([1.0, 2.0, 2.0, 1.0], [2.0, 1.0, 1.0, 2.0])
    """
    req = Requirements.from_table(sub, singleton=singleton)
    hidden = np.asarray(hidden, bool)
    net = Network.of(sub.relations) if flows else None
    if net is not None:
        return _network_levels(net, req, hidden)
    cells = np.flatnonzero(hidden)
    m = len(cells)
    level_up = np.zeros(sub.n_cells)
    level_down = np.zeros(sub.n_cells)
    A = sub.relations.tocsr()[:, cells]
    rows = np.flatnonzero(np.diff(A.indptr) > 0)
    A = A[rows]
    M = sparse.hstack([A, -A]).tocsr()
    hi_both = np.concatenate([req.up[cells], req.down[cells]])
    every = np.arange(2 * m, dtype=np.int32)
    # one solver per sub-table: the LPs differ only in their column bounds, so the model
    # is built once and only the bounds change; each LP still starts from scratch
    # (clearSolver), because these least-movement LPs have many optimal vertices and the
    # vertex decides the carried levels: a warm start would find another one.  No
    # presolve: on LPs of a few dozen columns it costs more than the simplex itself.
    # The bounds, the run and the solution go straight to HiGHS (only x is read)
    h = None
    for slot, s in enumerate(req.primary):
        up, down = float(req.need_up[slot]), float(req.need_down[slot])
        width = float(req.need_width[slot])
        if width > up + down:  # half of the sliding requirement each way suffices
            up, down = max(up, 0.5 * width), max(down, 0.5 * width)
        k = int(np.searchsorted(cells, s))
        if k >= m or cells[k] != s:
            return None
        for sign, need in ((1, up), (-1, down)):
            if need <= 0:
                continue
            lo = np.zeros(2 * m)
            hi = hi_both.copy()
            own = k if sign > 0 else m + k
            if hi[own] < need * (1 - 1e-9):
                return None
            lo[own] = need
            hi[m + k if sign > 0 else k] = 0.0
            if h is None:
                h = HighsModel(LinearProgram(
                    c=np.ones(2 * m), A=M, row_lower=np.zeros(len(rows)),
                    row_upper=np.zeros(len(rows)), col_lower=lo, col_upper=hi), threads=1,
                    presolve="off").highs
            else:
                h.changeColsBounds(2 * m, every, lo, hi)
                h.clearSolver()
            h.run()
            if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
                return None
            x = np.asarray(h.getSolution().col_value, dtype=float)
            level_up[cells] = np.maximum(level_up[cells], x[:m])
            level_down[cells] = np.maximum(level_down[cells], x[m:])
    return level_up, level_down


def _requested(req, slot: int) -> tuple[float, float]:
    """How far primary ``slot`` must move up and down (half of a sliding requirement
    each way when the levels do not imply it)."""
    up, down = float(req.need_up[slot]), float(req.need_down[slot])
    width = float(req.need_width[slot])
    if width > up + down:
        up, down = max(up, 0.5 * width), max(down, 0.5 * width)
    return up, down


def _network_levels(net: Network, req, hidden: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`proof_levels` of a network sub-table: each proof is the least-movement
    flow that carries the primary's requirement back around through the other hidden
    cells."""
    n = len(hidden)
    level_up, level_down = np.zeros(n), np.zeros(n)
    fwd = np.where(hidden, req.up, 0.0)
    bwd = np.where(hidden, req.down, 0.0)
    for slot, s in enumerate(req.primary):
        s = int(s)
        if not hidden[s]:
            return None
        others = np.flatnonzero(hidden & (np.arange(n) != s))
        for sign, need in zip((1, -1), _requested(req, slot)):
            if need <= 0:
                continue
            own = req.up[s] if sign > 0 else req.down[s]
            if own < need * (1 - 1e-9):
                return None
            t, h = int(net.tail[s]), int(net.head[s])
            src, snk = (h, t) if sign > 0 else (t, h)
            y = min_cost_flow(net, fwd, bwd, src, snk, need, others)
            if y is None:
                return None
            level_up[others] = np.maximum(level_up[others], np.maximum(y, 0.0))
            level_down[others] = np.maximum(level_down[others], np.maximum(-y, 0.0))
            if sign > 0:
                level_up[s] = max(level_up[s], need)
            else:
                level_down[s] = max(level_down[s], need)
    return level_up, level_down
