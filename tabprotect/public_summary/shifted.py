"""Integer tables: an end point without the figures made a witness with them.

An end point of a target's interval without the released figures (its component's part,
``Checker.ends``) is a solution with the figures too where the figures' parts stay at
their true values: as found, or with another component moving its parts back by what the
end point moves them (:meth:`.ComponentMoves.compensate`), or, where none does, with
another integral table of the target's component at the same end whose parts lean toward
their truth.  Each point is checked against the whole system before it counts.  The
functions read the :class:`~.checker.Checker` they are given (``ch``).
"""
from __future__ import annotations

import numpy as np

__all__ = ["shifted", "leaning", "solves"]


def shifted(ch, targets, rows, pending, witness, compensate: bool) -> bool:
    """Integer tables: a target's end point without the figures (its component's part,
    :attr:`Checker.ends`) is a witness with the figures when another component can move
    its parts of the figures by what the end point moves them the other way (an integral
    solution of that component with its parts so moved, :meth:`ComponentMoves.compensate`,
    cached; only when ``compensate``, else only end points that keep the parts); the point (both
    components changed, the others at the true table) is checked against the whole
    system before it counts.  False when out of time."""
    R = np.array(rows)
    truth = ch.value[ch.cells]
    scale = np.maximum(1.0, np.abs(R) @ np.abs(truth))
    for sense in ("min", "max"):
        for k in np.flatnonzero(pending[sense]):
            if not pending[sense][k]:
                continue
            j = int(targets[k])
            y = ch.ends[sense].get(j)
            if y is None:
                continue
            c = int(ch.comp[j])
            cols = ch.comp_cols[c]
            delta = R[:, cols] @ truth[cols] - R[:, cols] @ y
            x = truth.copy()
            x[cols] = y
            if np.abs(delta).max() > 1e-9 * scale.max():
                if not compensate:
                    continue
                moves = ch.moves.compensate(c, R, delta)
                if moves is None:
                    # another table at the same end, its parts nearer their truth
                    moves = leaning(ch, j, sense, y[np.searchsorted(cols, j)], R,
                                          delta, x)
                if moves is False:
                    return False
                if moves is None:
                    continue
                for d, z in moves:
                    x[ch.comp_cols[d]] = z
            if solves(ch, x, R, scale):
                witness(x)
    return True

def leaning(ch, j: int, sense: str, end: float, R: np.ndarray, delta: np.ndarray,
             x: np.ndarray):
    """Integer tables: where no other component makes up what target ``j``'s end
    point moves the figures' parts (``delta``, the parts' truth less the point's), an
    integral table of ``j``'s component at the same ``end`` whose LPs push each part
    toward its truth (:meth:`IntegerEnds.toward`), and the moves of other
    components that make up what it still moves: the moves (a list as
    :meth:`ComponentMoves.compensate` gives), ``x`` (the whole point) changed to the
    new table in ``j``'s component; None where none is found, False out of time."""
    if not ch.lean_odds.worth():
        return None
    c = int(ch.comp[j])
    cols = ch.comp_cols[c]
    weights = np.zeros(ch.table.n_cells)
    weights[ch.cells] = np.sign(delta) @ R
    table = ch.integer_ends().toward(int(ch.cells[j]), sense, float(end), weights)
    moves = None
    if table is not None:
        y = table[ch.cells][cols]
        truth = ch.value[ch.cells]
        left = R[:, cols] @ truth[cols] - R[:, cols] @ y
        x[cols] = y
        moves = [] if np.abs(left).max() <= 1e-9 * max(
            1.0, float(np.abs(R @ truth).max())) else ch.moves.compensate(c, R, left)
    ch.lean_odds.record(moves is not None and moves is not False)
    return moves

def solves(ch, x: np.ndarray, R: np.ndarray, scale: np.ndarray) -> bool:
    """``x`` is an integral solution of the whole system with the figures' rows ``R``
    at their true values."""
    truth = ch.value[ch.cells]
    Ax = ch.A_csr @ x
    tol = 1e-9 * np.maximum(1.0, np.abs(ch.lp.row_lower) + np.abs(ch.lp.row_upper))
    tol = np.where(np.isfinite(tol), tol, 1e-9)
    return bool(np.all(np.abs(x - np.round(x)) <= 1e-9)
                and np.all(Ax >= ch.lp.row_lower - tol)
                and np.all(Ax <= ch.lp.row_upper + tol)
                and np.all(x >= ch.lp.col_lower) and np.all(x <= ch.lp.col_upper)
                and np.all(np.abs(R @ x - R @ truth) <= 1e-9 * scale))
