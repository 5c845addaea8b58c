"""An independent LP audit for tests: scipy's linprog / milp on the whole table, one LP per
primary, direction and attacker, no component split, no witnesses, no shortcuts.

It shares nothing with :mod:`tabprotect.audit` but the table's arrays, so a test that
compares the two checks the audit against a plain reading of the definition:

* the intruder knows the published cells, the relations ``A x = 0`` and ``lb <= x <= ub``;
* with ``singleton``, the contributor of each unpublished cell with ``freq == 1`` also
  knows that cell's value (one attacker per such cell);
* a primary cell is protected when, against the outside intruder and against each of
  those attackers (other than its own contributor), its interval ``[lo, hi]`` has
  ``hi >= min(ub, x + UPL)``, ``lo <= max(lb, x - LPL)``, ``hi - lo >= SPL`` and
  ``hi - lo > 0``; a published primary is never protected.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

_TOL = 1e-6


def _bound(c, A, b, lb, ub, integer):
    """min c'x s.t. A x = b, lb <= x <= ub (None when unbounded)."""
    relaxed = linprog(c, A_eq=A, b_eq=b, bounds=list(zip(np.where(np.isfinite(lb), lb, None),
                                                        np.where(np.isfinite(ub), ub, None))),
                      method="highs")
    if relaxed.status == 3:   # unbounded (then so is the integer program)
        return None
    res = milp(c, constraints=[LinearConstraint(A, b, b)], bounds=Bounds(lb, ub),
               integrality=np.ones(len(c))) if integer else relaxed
    assert res.status == 0, res.message
    return float(c @ res.x)


def intervals(table, unpublished, fixed=(), integer=False, cells=None):
    """``{cell: (lo, hi)}`` for ``cells`` (default: every unpublished cell), with the
    unpublished cells in ``fixed`` known at their values."""
    unpublished = np.asarray(unpublished, bool)
    idx = np.flatnonzero(unpublished)
    pos = {int(c): i for i, c in enumerate(idx)}
    A = sp.csr_matrix(table.relations)
    Au = A[:, idx].toarray()
    b = -(A[:, ~unpublished] @ table.value[~unpublished])
    lb = table.lb[idx].astype(float).copy()
    ub = table.ub[idx].astype(float).copy()
    for s in fixed:
        lb[pos[s]] = ub[pos[s]] = table.value[s]
    out = {}
    for cell in (idx if cells is None else cells):
        c = np.zeros(len(idx))
        c[pos[int(cell)]] = 1.0
        lo = _bound(c, Au, b, lb, ub, integer)
        hi = _bound(-c, Au, b, lb, ub, integer)
        lo = -np.inf if lo is None else lo
        hi = np.inf if hi is None else -hi
        if integer:
            lo, hi = np.ceil(lo - 1e-6), np.floor(hi + 1e-6)
        out[int(cell)] = (lo, hi)
    return out


def _meets(table, cell, lo, hi) -> bool:
    x = table.value[cell]
    tol = _TOL * max(1.0, abs(x))
    need_hi = min(table.ub[cell], x + table.upl[cell])
    need_lo = max(table.lb[cell], x - table.lpl[cell])
    return (hi >= need_hi - tol and lo <= need_lo + tol
            and hi - lo >= table.spl[cell] - tol and hi - lo > tol)


def protected(table, unpublished=None, singleton=False, integer=False) -> np.ndarray:
    """Per cell: False for a primary cell that some attacker narrows too far."""
    if unpublished is None:
        unpublished = np.isin(table.status, ("U", "M"))
    unpublished = np.asarray(unpublished, bool)
    primary = table.status == "U"
    out = np.ones(table.n_cells, bool)
    out[primary & ~unpublished] = False
    targets = [int(c) for c in np.flatnonzero(primary & unpublished)]
    if not targets:
        return out
    attackers = [()]
    if singleton:
        attackers += [(int(s),) for s in
                      np.flatnonzero(unpublished & (table.freq == 1))]
    for fixed in attackers:
        cells = [c for c in targets if c not in fixed and out[c]]
        if not cells:
            continue
        for cell, (lo, hi) in intervals(table, unpublished, fixed, integer,
                                        cells).items():
            if not _meets(table, cell, lo, hi):
                out[cell] = False
    return out
