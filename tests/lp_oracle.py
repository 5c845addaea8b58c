"""An independent LP audit for tests: scipy's linprog / milp on the whole table, one LP per
primary, direction and attacker, no component split, no witnesses, no shortcuts.

It shares nothing with :mod:`tabprotect.audit` but the table's arrays, so a test that
compares the two checks the audit against a plain reading of the definition:

* the intruder knows the published cells, the relations ``A x = 0`` and ``lb <= x <= ub``;
* with ``singleton``, the contributor of each unpublished cell with ``freq == 1`` also
  knows that cell's value (one attacker per such cell), and the values of the cells that
  hold the same record (a relation's total with ``freq == 1`` and the one cell of its
  sum with ``freq == 1``, every other cell of it ``freq == 0``; transitively): one
  attacker per such class, who attacks no cell of it;
* with ``coalition=n``, every group of at most ``n`` contributors (any multiset of
  unpublished cells with ``freq >= 1``, a cell taken at most ``freq`` times) also knows,
  for each cell it holds ``m`` of the ``freq`` contributors of: the value when
  ``m == freq``, else that the value is at least the ``m`` largest contributions (``m``
  for a count table; no bound where ``lb < 0``), and the cells holding the same record as
  a single-contributor cell it holds; it attacks the primaries it holds no contributor
  of (nor the same record as);
* a primary cell is protected when, against the outside intruder and against each of
  those attackers (other than its own contributor), its interval ``[lo, hi]`` has
  ``hi >= min(ub, x + UPL)``, ``lo <= max(lb, x - LPL)``, ``hi - lo >= SPL`` and
  ``hi - lo > 0``; a published primary is never protected.
"""
from __future__ import annotations

import itertools

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
    if integer and relaxed.status == 0 and np.all(np.abs(relaxed.x - np.round(relaxed.x))
                                                  <= 1e-9):
        return float(c @ np.round(relaxed.x))   # an integral LP optimum is the integer one
    res = milp(c, constraints=[LinearConstraint(A, b, b)], bounds=Bounds(lb, ub),
               integrality=np.ones(len(c))) if integer else relaxed
    assert res.status == 0, res.message
    return float(c @ res.x)


def intervals(table, unpublished, fixed=(), integer=False, cells=None, known=None):
    """``{cell: (lo, hi)}`` for ``cells`` (default: every unpublished cell), with the
    unpublished cells in ``fixed`` known at their values and ``known``: ``{cell: (lo,
    hi)}`` bounds the attacker knows."""
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
    for s, (lo_s, hi_s) in (known or {}).items():
        lb[pos[s]] = max(lb[pos[s]], lo_s)
        ub[pos[s]] = min(ub[pos[s]], hi_s)
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


def coalition_knowledge(table, cells) -> dict:
    """``{cell: (lo, hi)}``: what a group with one contributor per entry of ``cells``
    (repeats: several contributors of that cell) knows."""
    known = {}
    for c in set(cells):
        m, f, x = cells.count(c), table.freq[c], table.value[c]
        if m >= f:
            known[c] = (x, x)
        elif table.lb[c] >= 0:
            part = m if table.kind == "frequency" else float(np.sum(table.top[c, :m]))
            known[c] = (min(part, x), np.inf)
    return known


def record_classes(table) -> list[set]:
    """The classes of single-contributor cells holding the same record (see the module
    docstring), each a set of cells; a plain loop over the relations' rows."""
    parent = {int(c): int(c) for c in np.flatnonzero(table.freq == 1)}

    def root(c):
        while parent[c] != c:
            c = parent[c]
        return c
    A = sp.csr_matrix(table.relations)
    for r in range(A.shape[0]):
        cols = A.indices[A.indptr[r]:A.indptr[r + 1]]
        coef = A.data[A.indptr[r]:A.indptr[r + 1]]
        f = table.freq[cols]
        if not all(v in (0, 1) for v in f):
            continue
        ones = [(int(c), a) for c, a, v in zip(cols, coef, f) if v == 1]
        if len(ones) == 2 and np.sign(ones[0][1]) != np.sign(ones[1][1]):
            parent[root(ones[0][0])] = root(ones[1][0])
    classes: dict[int, set] = {}
    for c in parent:
        classes.setdefault(root(c), set()).add(c)
    return list(classes.values())


def _partners(classes, cells) -> set:
    """Every cell holding the same record as one of ``cells``."""
    return set().union(*[k for k in classes if k & set(cells)]) if classes else set()


def _coalitions(table, unpublished, size):
    holders = [int(c) for c in np.flatnonzero(unpublished & np.isfinite(table.freq)
                                              & (table.freq >= 1))]
    for n in range(1, size + 1):
        for group in itertools.combinations_with_replacement(holders, n):
            if all(group.count(c) <= table.freq[c] for c in set(group)):
                yield list(group)


def protected(table, unpublished=None, singleton=False, integer=False,
              coalition=0) -> np.ndarray:
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
    classes = record_classes(table) if (singleton or coalition) else []
    if singleton:
        attackers += [tuple(sorted(c for c in k if unpublished[c])) for k in classes]
    for fixed in attackers:
        cells = [c for c in targets if c not in _partners(classes, fixed) | set(fixed)
                 and out[c]]
        if not cells:
            continue
        for cell, (lo, hi) in intervals(table, unpublished, fixed, integer,
                                        cells).items():
            if not _meets(table, cell, lo, hi):
                out[cell] = False
    for group in (_coalitions(table, unpublished, coalition) if coalition else ()):
        own = set(group) | {c for c in _partners(classes, [c for c in group
                                                         if table.freq[c] == 1])}
        cells = [c for c in targets if c not in own and out[c]]
        if not cells:
            continue
        known = coalition_knowledge(table, group)
        for c in own - set(group):
            if unpublished[c]:
                known[c] = (table.value[c], table.value[c])
        for cell, (lo, hi) in intervals(table, unpublished, (), integer, cells,
                                        known).items():
            if not _meets(table, cell, lo, hi):
                out[cell] = False
    return out


def attacked(table, integer=False) -> np.ndarray:
    """Per cell: True for an unpublished primary cell that some single-contributor
    attacker (one per class of cells holding the same record, never attacking its own
    class) narrows too far, whatever the outside intruder gets."""
    unpublished = np.isin(table.status, ("U", "M"))
    primary = (table.status == "U") & unpublished
    out = np.zeros(table.n_cells, bool)
    for k in record_classes(table):
        fixed = tuple(sorted(c for c in k if unpublished[c]))
        cells = [int(c) for c in np.flatnonzero(primary) if c not in k]
        if not fixed or not cells:
            continue
        for cell, (lo, hi) in intervals(table, unpublished, fixed, integer,
                                        cells).items():
            out[cell] |= not _meets(table, cell, lo, hi)
    return out
