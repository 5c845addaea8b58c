"""Block LPs of the verdict modes (huge components): regions of a few thousand variables
grown around open primaries, the rest of the component at its true values, each LP
pushing the region's primaries towards their requirements at once.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from solvers import LinearProgram, solve
from tabprotect.audit.regions import grow, region_program
from tabprotect.audit.settings import AuditSettings
from tabprotect.audit.system import ReducedSystem, out_of_time
from tabprotect.audit.witness import VerdictState


def block_witness(system: ReducedSystem, cells, c_idx, goal, sign, fixed, counters, reach,
                  weight, settings: AuditSettings):
    """A feasible table that moves the variables ``c_idx`` (among the sorted ``cells``)
    towards ``goal`` (up for ``sign=+1``, down for -1), every variable outside ``cells``
    at its true value: a witness for many primaries at once from a small LP. Returns the
    witness over all variables, or None.

    The objective saturates at the goal (``max sum weight * min(sign * x, sign *
    goal)``, one extra column and row per pushed variable): a variable gains nothing
    beyond its requirement, so the LP spends the slack of the table on the variables
    that still need it, where ``max sum x`` would let a few absorb everything."""
    sub, row_lo, row_hi, lb, ub = region_program(system, cells, "restricted", fixed, reach)
    n, m = len(cells), len(c_idx)
    local = np.searchsorted(cells, c_idx)
    # rows: sign * x_p - u_p >= 0, u_p <= sign * goal_p; maximise sum weight * u_p
    link = sp.csr_matrix((np.concatenate([np.full(m, float(sign)), -np.ones(m)]),
                          (np.tile(np.arange(m), 2),
                           np.concatenate([local, n + np.arange(m)]))),
                         shape=(m, n + m))
    A = sp.vstack([sp.hstack([sub, sp.csr_matrix((sub.shape[0], m))]), link],
                  format="csr")
    c = np.concatenate([np.zeros(n), weight])
    options = settings.block_ipm_options if n >= settings.block_ipm_vars else {}
    res = solve(LinearProgram(
        c=c, A=A, row_lower=np.concatenate([row_lo, np.zeros(m)]),
        row_upper=np.concatenate([row_hi, np.full(m, np.inf)]),
        col_lower=np.concatenate([lb, np.full(m, -np.inf)]),
        col_upper=np.concatenate([ub, sign * np.asarray(goal, dtype=float)]),
        sense="max"), **options)
    counters["block_lp"] = counters.get("block_lp", 0) + 1
    if res.status != "optimal" or res.x is None:
        return None
    x = system.value.copy()
    # interior-point points may sit a hair outside a bound
    x[cells] = np.clip(res.x[:n], lb, ub)
    return x


def _push(state: VerdictState, members: np.ndarray, sign: float):
    """The members to push in direction ``sign`` and the goal of each."""
    lo, hi, tol = state.lo[members], state.hi[members], state.tol[members]
    req_lo, req_hi, req_w = state.req_lo[members], state.req_hi[members], state.req_w[members]
    width = (hi - lo < req_w - tol) | (hi - lo <= tol)
    value = state.system.value[members]
    if sign > 0:
        push = ((hi < req_hi - tol) | width) & ~state.ex_hi[members]
        goal = np.maximum(req_hi, lo + req_w)
        # a point interval is never safe: ask for some width
        goal = np.maximum(goal, value + 10 * tol)
    else:
        push = ((lo > req_lo + tol) | width) & ~state.ex_lo[members]
        goal = np.minimum(req_lo, hi - req_w)
        goal = np.minimum(goal, value - 10 * tol)
    return members[push], goal[push]


def block_pass(state: VerdictState, size: int, solo: bool, settings: AuditSettings
               ) -> float:
    """One pass of block LPs of about ``size`` variables; returns the share of the
    primaries open before the pass that it certified.

    Blocks are grown around open primaries; a primary in the middle of an earlier block
    of this pass has had its chance and seeds no block of its own (the next pass, with
    larger blocks, tries again). A *solo* block pushes its seed alone: where many
    primaries share a block the LP may leave one of them behind although the block
    could move it far enough."""
    system = state.system
    reach = state.reach()
    tried = np.zeros(state.k, dtype=bool)
    open_before = state.open()
    for j in np.flatnonzero(open_before):
        if tried[j] or not (state.needs_hi(j) or state.needs_lo(j)) or \
                out_of_time(state.task.deadline):
            continue
        cells, middle = grow(system, int(j), size, core=int(size * settings.block_core_share))
        tried[j] = True
        if solo:
            members = np.array([j], dtype=np.int64)
        else:
            tried[middle] = True
            members = cells[state.want[cells] & ~state.decided[cells]]
        # down first: a-priori lower bounds (often 0) bind that way; the mirror image
        # of its witness often settles the way up as well
        for sign in (-1.0, 1.0):
            idx, goal = _push(state, members, sign)
            if len(idx) == 0:
                continue
            state.absorb(block_witness(system, cells, idx, goal, sign, state.fixed,
                                       state.counters, reach, 1.0 / state.scale[idx],
                                       settings))
    return int((open_before & state.satisfied()).sum()) / max(1, int(open_before.sum()))


def block_passes(state: VerdictState, settings: AuditSettings) -> None:
    """The shared passes, then the solo passes; a screen stops when a pass certifies
    less than ``settings.screen_block_min_yield`` of what it tried."""
    passes = [(size, False) for size in settings.block_sizes] + \
        [(size, True) for size in settings.solo_block_sizes]
    for n_pass, (size, solo) in enumerate(passes):
        share = block_pass(state, size, solo, settings)
        if state.task.mode == "screen" and n_pass + 1 < len(passes) and \
                share < settings.screen_block_min_yield:
            state.counters["block_passes_skipped"] += len(passes) - n_pass - 1
            return
