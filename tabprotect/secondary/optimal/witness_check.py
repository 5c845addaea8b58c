"""Witness pass before the attacker LPs of a pattern check: a few aggregate LPs over
the whole pattern push many primaries at once, and every solution is a deviation the
intruder cannot rule out (``A y = 0`` within the suppressed cells' ranges), so a primary
it moves by its level in a direction needs no LP of its own there.  Only the primaries
the witnesses leave open go to the per-primary attacker LPs (which also give the cuts).

Used without single-contributor attackers only: their conditions ask for witnesses with
their own cell fixed, which the aggregate LPs do not give.
"""
from __future__ import annotations

import time

import numpy as np

from solvers import HighsModel, LinearProgram

#: a witness certifies a level only with this relative margin (LP tolerances)
MARGIN = 1e-6


def witness_certified(A, req, slot: np.ndarray, z: np.ndarray, targets: np.ndarray, *,
                      rounds: int, model_options: dict | None = None,
                      deadline: float | None = None, keep: list | None = None
                      ) -> tuple[np.ndarray, int]:
    """The primaries among ``targets`` whose every needed direction some witness meets
    (bool mask over ``targets``), and the number of LPs solved; ``keep``, when given,
    gets each witness that certified a target (:func:`keep_witness`).

    Per direction, each round maximises (minimises) the sum of the open primaries'
    deviations, each scaled by its level and capped just above it; a round that
    certifies nothing ends the direction.  Primaries with a width requirement are left
    open (their condition couples both directions).  Each LP stops at ``deadline``; a
    stopped LP ends the pass (the per-primary LPs decide what is left open)."""
    targets = np.asarray(targets, dtype=np.int64)
    p = slot[targets]
    need = {1.0: req.need_up[p], -1.0: req.need_down[p]}
    done = {d: need[d] <= 0 for d in need}
    open_width = req.need_width[p] > 0
    active = np.flatnonzero(z > 0.5)
    col = np.full(len(z), -1, np.int64)
    col[active] = np.arange(len(active))
    tcol = col[targets]
    usable = (tcol >= 0) & ~open_width
    n_lp = 0
    if not usable.any():
        return np.zeros(len(targets), bool), n_lp
    sub = A[:, active].tocsr()
    sub = sub[np.flatnonzero(np.diff(sub.indptr) > 0)]
    cap = float(max(need[1.0][usable].max(initial=0.0), need[-1.0][usable].max(initial=0.0)))
    cap = 2.0 * cap if cap > 0 else 1.0
    base_hi = np.minimum(req.up[active], cap)
    base_lo = -np.minimum(req.down[active], cap)
    model = None
    for sign in (1.0, -1.0):
        for _ in range(rounds):
            want = usable & ~done[sign]
            if not want.any():
                break
            c = np.zeros(len(active))
            c[tcol[want]] = sign / need[sign][want]
            hi, lo = base_hi.copy(), base_lo.copy()
            # a target moves at most just past its level, so one does not use the room
            # the others need
            if sign > 0:
                hi[tcol[want]] = np.minimum(hi[tcol[want]], need[sign][want] * 1.01)
            else:
                lo[tcol[want]] = np.maximum(lo[tcol[want]], -need[sign][want] * 1.01)
            if model is None:
                zeros = np.zeros(sub.shape[0])
                model = HighsModel(LinearProgram(c=c, A=sub, row_lower=zeros,
                                                 row_upper=zeros, col_lower=lo,
                                                 col_upper=hi, sense="max"),
                                   **(model_options or {}))
            else:
                model.set_col_bounds(np.arange(len(active)), lo, hi)
                model.set_objective(c, sense="max")
            left = None if deadline is None else deadline - time.perf_counter()
            if left is not None and left <= 0:
                break
            res = model.solve(time_limit=left)
            n_lp += 1
            if res.status != "optimal" or res.x is None:
                break
            y = np.asarray(res.x, dtype=float)
            if not is_deviation(sub, y):
                break   # no certificate from it
            moved = sign * y[tcol] >= need[sign] * (1.0 + MARGIN)
            new = want & moved
            if not new.any():
                break
            done[sign] |= new
            keep_witness(keep, active, y)
    return usable & done[1.0] & done[-1.0], n_lp


def keep_witness(keep: list | None, cells: np.ndarray, y: np.ndarray) -> None:
    """Append the deviation ``y`` over ``cells`` to ``keep`` (None: nothing) as (cells,
    values) where it is nonzero: handed on as candidate moves, which the audit checks
    itself before it certifies anything with them."""
    if keep is not None:
        nz = np.flatnonzero(y)
        keep.append((np.asarray(cells)[nz], y[nz]))


def is_deviation(rows, y: np.ndarray) -> bool:
    """Whether ``y`` keeps the given relation rows at zero within a tolerance relative to
    its own size: only such a solution is a certificate (a solver's near-feasible point
    is not)."""
    return bool(np.abs(rows @ y).max(initial=0.0) <= 1e-7 * max(1.0, np.abs(y).max()))
