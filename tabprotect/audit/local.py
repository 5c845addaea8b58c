"""Local LPs of the verdict modes (large components): small LPs over the cells within a
few relation steps of an open primary.

A restricted local LP (the rest of the table at its true values) gives witnesses
cheaply; a relaxed one (far relations dropped) bounds the interval from outside, so a
shortfall it shows is a shortfall of the whole system, proven without the whole LP.
"""
from __future__ import annotations

import numpy as np

from solvers import LinearProgram, solve
from tabprotect.audit.regions import neighbourhood, region_program
from tabprotect.audit.settings import AuditSettings
from tabprotect.audit.system import ReducedSystem, out_of_time
from tabprotect.audit.witness import VerdictState


def local_bound(system: ReducedSystem, j, sense, cells, kind, fixed, counters):
    """Min or max of ``x_j`` over the LP of the region ``cells`` around it (``kind``:
    ``"relaxed"`` gives an outer bound, ``"restricted"`` a witness; see
    :mod:`tabprotect.audit.regions`).

    Returns ``(value, x over all variables or None)``; value None when the LP gave no
    answer (the caller then falls back to the whole system)."""
    sub, row_lo, row_hi, lb, ub = region_program(system, cells, kind, fixed)
    c = np.zeros(len(cells))
    c[np.searchsorted(cells, j)] = 1.0
    res = solve(LinearProgram(c=c, A=sub, row_lower=row_lo, row_upper=row_hi,
                              col_lower=lb, col_upper=ub, sense=sense))
    counters["local_lp"] = counters.get("local_lp", 0) + 1
    if res.status == "unbounded":
        return (-np.inf if sense == "min" else np.inf), None
    if res.status != "optimal" or res.x is None:
        return None, None
    val = float(res.x[np.searchsorted(cells, j)])
    if kind == "relaxed":
        return val, None
    x = system.value.copy()
    x[cells] = res.x
    return val, x


def local_pass(state: VerdictState, hops: int, settings: AuditSettings,
               after_blocks: bool) -> None:
    """Local LPs over the ``hops``-step neighbourhood of every open primary: witnesses
    (unless block LPs ran before: after them these small LPs add next to nothing), then,
    outside screen mode, outer bounds that may prove the primary short."""
    system, task = state.system, state.task
    for j in np.flatnonzero(state.open()):
        if out_of_time(task.deadline):
            return
        j = int(j)
        cells = neighbourhood(system, j, hops)
        if len(cells) > min(state.k // 2, settings.local_max_vars):
            continue
        if not after_blocks:
            for sense, needed in (("max", state.needs_hi), ("min", state.needs_lo)):
                if needed(j):
                    _, x = local_bound(system, j, sense, cells, "restricted", state.fixed,
                                       state.counters)
                    state.absorb(x)
        if not (state.needs_hi(j) or state.needs_lo(j)) or task.mode == "screen":
            continue
        _prove_short(state, j, cells)


def _prove_short(state: VerdictState, j: int, cells: np.ndarray) -> None:
    """Bound primary ``j`` from outside by relaxed local LPs; mark it decided when the
    outer interval already falls short of its requirement."""
    system = state.system
    out_hi = out_lo = None
    if state.needs_hi(j):
        out_hi, _ = local_bound(system, j, "max", cells, "relaxed", state.fixed,
                                state.counters)
    if state.needs_lo(j):
        out_lo, _ = local_bound(system, j, "min", cells, "relaxed", state.fixed,
                                state.counters)
    o_hi = np.inf if out_hi is None else out_hi
    o_lo = -np.inf if out_lo is None else out_lo
    if state.integer:
        o_hi = np.floor(o_hi + 1e-6) if np.isfinite(o_hi) else o_hi
        o_lo = np.ceil(o_lo - 1e-6) if np.isfinite(o_lo) else o_lo
    tol = state.tol[j]
    if (o_hi < state.req_hi[j] - tol or o_lo > state.req_lo[j] + tol
            or o_hi - o_lo < state.req_w[j] - tol or o_hi - o_lo <= tol):
        # a shortfall proven this way leaves open whether the cell is disclosed
        # exactly (unless the outer interval is a point)
        state.outer_hi[j], state.outer_lo[j] = o_hi, o_lo
        state.decided[j] = True
