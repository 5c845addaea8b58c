"""Swapping a dear secondary for cheaper cells, each swap proven by witnesses.

The pruning pass publishes a secondary again only when the other suppressed cells
protect every primary without it.  Often a dear secondary can go when one or two cheap
cells are suppressed in its place.  The swap pass tries the secondaries dearest first:
the cell is published, and every protection condition whose witness moves it (see
:mod:`tabprotect.secondary.prune`) gets a new witness from the width step's protection
LP (:mod:`.widths`) with that cell fixed at its value; the LP may move published cells
at their cost, and every cell a witness moves is suppressed.  The swap is kept when the
cells it suppresses cost less than the published one; otherwise the pattern stays as it
was.  Each kept swap lowers the cost, and every condition keeps a witness on the
pattern (the conditions whose witness did not move the cell keep theirs, whose cells
all stay suppressed), so the result is proven as the pattern it started from.

Like the pruning pass, the witnesses are real-valued tables: the pass runs on magnitude
tables only (the caller prunes nothing on a frequency table, and gives no witnesses).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from tabprotect.model.table import Table
from tabprotect.secondary.gauss.widths import WidthStep


@dataclass
class SwapOutcome:
    """What the swap pass did."""

    status: np.ndarray   # the pattern with the swaps made
    swapped: int         # secondaries published again, each for cheaper cells
    added: int           # cells suppressed in their place
    tried: int           # secondaries tried
    lps: int             # protection LPs solved
    timed_out: bool      # the deadline stopped it before every secondary was tried
    saved: float         # cost of the pattern before minus after
    witnesses: dict      # per condition ``(primary, sign)`` its witness' cells


def swap(table: Table, status: np.ndarray, cost: np.ndarray, witnesses: dict, *,
         singleton: bool = True, deadline: float | None = None) -> SwapOutcome:
    """Swap secondaries of ``status`` for cheaper cells (see the module docstring),
    dearest first, within ``deadline`` (``time.perf_counter()`` seconds).
    ``witnesses``: per condition ``(primary, sign)`` the cells its witness moves on
    ``status`` (as :func:`tabprotect.secondary.prune.prune` returns them); every
    condition must have one."""
    status = np.asarray(status).copy()
    cost = np.asarray(cost, float)
    step = WidthStep(table, cost, singleton, presolve=False)
    conds = {(c.cell, c.sign): c for c in step.conditions()}
    witnesses = dict(witnesses)
    users: dict[int, set] = {}
    for key, moved in witnesses.items():
        for c in moved.tolist():
            users.setdefault(c, set()).add(key)
    hidden = np.isin(status, ("U", "M"))
    secondary = np.flatnonzero((status == "M") & (table.status != "M") & (cost > 0))
    order = secondary[np.lexsort((secondary, -cost[secondary]))]
    swapped = added = tried = lps = 0
    saved = 0.0
    timed_out = False
    fails: dict = {}
    for x in order.tolist():
        if not hidden[x]:
            continue
        if _past(deadline):
            timed_out = True
            break
        tried += 1
        trial, new, n_lp = _try(step, conds, users.get(x, set()), hidden, x, cost,
                                fails, deadline)
        lps += n_lp
        if trial is None:
            continue
        gain = cost[x] - cost[trial & ~hidden].sum()
        swapped += 1
        added += int((trial & ~hidden).sum())
        saved += gain
        status[trial & ~hidden] = "M"
        status[x] = table.status[x]
        hidden = trial
        for key, moved in new.items():
            for c in witnesses[key].tolist():
                users[c].discard(key)
            witnesses[key] = moved
            for c in moved.tolist():
                users.setdefault(c, set()).add(key)
        users.pop(x, None)
    return SwapOutcome(status, swapped, added, tried, lps, timed_out, saved, witnesses)


def _try(step: WidthStep, conds: dict, keys: set, hidden: np.ndarray, x: int,
         cost: np.ndarray, fails: dict, deadline: float | None):
    """Publish ``x`` and give each condition of ``keys`` a new witness: the pattern
    with the cells they move suppressed and their witnesses, or None when a condition
    has none or the added cells cost as much as ``x``; and the LPs solved.  The
    conditions that failed most often (``fails``, updated) are solved first."""
    trial = hidden.copy()
    trial[x] = False
    new = {}
    lps = 0
    spent = 0.0
    found: list = []  # this try's witnesses: (cells, deviations)
    for key in sorted(keys, key=lambda k: (-fails.get(k, 0), k)):
        cond = conds[key]
        moved = _reuse(step, cond, found)
        if moved is not None:
            new[key] = moved
            continue
        y, n_lp = step.witness(cond, trial, deadline, banned=x)
        lps += n_lp
        if y is None:
            fails[key] = fails.get(key, 0) + 1
            return None, {}, lps
        found.append(y)
        cells, dev = y
        moved = cells[np.abs(dev) > 1e-9 * max(1.0, cond.need)]
        fresh = moved[~trial[moved]]
        spent += float(cost[fresh].sum())
        if spent >= cost[x]:
            fails[key] = fails.get(key, 0) + 1
            return None, {}, lps
        trial[fresh] = True
        new[key] = moved
    return trial, new, lps


def _reuse(step: WidthStep, cond, found: list) -> np.ndarray | None:
    """The cells moved by a witness of ``cond`` among this try's witnesses ``found``
    or their mirrors, or None: a deviation is one when it moves the primary at least
    the need its way, every cell within its range, and no single-contributor cell but
    that primary (its cells are suppressed already; the published cell is not among
    them)."""
    req = step.req
    for cells, dev in found:
        k = int(np.searchsorted(cells, cond.cell))
        if k == len(cells) or cells[k] != cond.cell:
            continue
        tol = 1e-9 * max(1.0, float(np.abs(dev).max(initial=0.0)))
        up, down = req.up[cells] + tol, req.down[cells] + tol
        for v in (dev, -dev):
            moved = np.abs(v) > 1e-9 * max(1.0, cond.need)
            single = req.singleton[cells] & moved
            single[k] = False
            if (cond.sign * v[k] >= cond.need and (v <= up).all() and (-v <= down).all()
                    and not single.any()):
                return cells[moved]
    return None


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.perf_counter() > deadline
