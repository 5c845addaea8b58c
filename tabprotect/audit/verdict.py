"""Verdict and screen modes over one component: decide for each primary whether the
intruder's interval reaches the required one, with as few LPs as possible.

Witnesses come first -- checked candidate moves, then aggregate LPs over the whole
component (or block LPs on huge components), then local LPs around what is still open
(large components), then for an integer intruder integral least moves
(:mod:`~tabprotect.audit.least_moves`) -- and per-cell LPs on the warm model settle the rest. A primary ends
either certified by witnesses or with the exact (or outer) bound that decides it. A
screen never solves the per-cell LPs of a large component: what its witnesses leave
uncertified counts as short, unproven.
"""
from __future__ import annotations

import numpy as np

from tabprotect.audit.aggregate import aggregate_rounds
from tabprotect.audit.least_moves import least_move_pass
from tabprotect.audit.moves import absorb_moves
from tabprotect.audit.settings import AuditSettings
from tabprotect.audit.system import Knowledge, ReducedSystem, out_of_time
from tabprotect.audit.witness import VerdictState


def verdict_bounds(system: ReducedSystem, task, targets, counters,
                   fixed: Knowledge | None = None) -> VerdictState:
    """The verdict search for the primaries among ``targets`` against the attacker who
    knows ``fixed``; returns its final state (witness values ``lo``/``hi``, exact where
    ``ex_lo``/``ex_hi``, outer limits ``outer_lo``/``outer_hi``)."""
    settings: AuditSettings = task.settings
    state = VerdictState(system, task, targets, counters, fixed)
    if task.moves is not None:
        frozen = np.zeros(system.k, dtype=bool)
        if fixed is not None:
            frozen[fixed.known] = True
        absorb_moves(task.moves, state.system.value, state.lb, state.ub, state.lo, state.hi,
                     task.integer, frozen)
    if fixed is not None:
        # the witnesses of the passes before this attacker's that it cannot rule out
        state.absorb_all(system.bank.usable(system.value, fixed))
    system.fix(fixed)
    try:
        _witness_passes(state, settings)
        counters["certified"] += int((state.satisfied() & ~state.decided).sum())
        _per_cell_pass(state)
        # an unfinished cell must not be counted as certified above
        system.incomplete -= set(np.flatnonzero(state.satisfied() & state.want).tolist())
    finally:
        system.unfix(fixed)
    return state


def _witness_passes(state: VerdictState, settings: AuditSettings) -> None:
    """Aggregate or block LPs, then local LPs on large components."""
    k, mode = state.k, state.task.mode
    blocks = k >= settings.block_min_vars
    if blocks:
        from tabprotect.audit.blocks import block_passes   # large components only
        block_passes(state, settings)
    else:
        aggregate_rounds(state, settings.aggregate_rounds)
    if k >= settings.local_min_vars and not (blocks and mode == "screen"):
        # growing neighbourhoods around what the aggregate witnesses left open (after
        # block LPs only to prove shortfalls, which a screen does not)
        from tabprotect.audit.local import local_pass
        for hops in settings.local_hops:
            local_pass(state, hops, settings, after_blocks=blocks)
    # an integer intruder: integral witnesses where the LPs' vertices were fractional
    least_move_pass(state, settings.least_move_primaries)
    if k >= settings.local_min_vars and mode == "screen":
        # left uncertified: counts as short, unproven (no whole-component LPs)
        state.decided |= state.want & ~state.satisfied()


def _per_cell_pass(state: VerdictState) -> None:
    """Exact LP bounds for the ends the witnesses did not settle; each solution is a new
    witness for the cells still open."""
    system, integer = state.system, state.integer
    for sense in ("max", "min"):
        settled = state.satisfied()
        for j in np.flatnonzero(state.want & ~state.decided):
            if out_of_time(state.task.deadline):
                if not settled[j]:
                    system.incomplete.add(int(j))
                continue
            needs = state.needs_hi(j) if sense == "max" else state.needs_lo(j)
            exact = state.ex_hi[j] if sense == "max" else state.ex_lo[j]
            if not needs or exact:
                continue
            if integer:
                val, x, exact = system.integer_bound_or_witness(
                    j, sense, goal_of(state, j, sense), state.fixed, state.counters,
                    state.task.deadline,
                    attained=state.hi[j] if sense == "max" else state.lo[j],
                    descent=state.task.settings.descent_goals)
            else:
                (val, x), exact = system.bound(j, sense, False, state.fixed,
                                               state.counters), True
            if val is None:
                system.incomplete.add(int(j))
                continue
            state.absorb(x)
            if not exact:
                continue   # a witness that reaches the goal: this end is settled
            if sense == "max":
                state.hi[j] = np.floor(val + 1e-6) if integer and np.isfinite(val) else val
                state.ex_hi[j] = True
            else:
                state.lo[j] = np.ceil(val - 1e-6) if integer and np.isfinite(val) else val
                state.ex_lo[j] = True


def goal_of(state: VerdictState, j: int, sense: str) -> float:
    """The integer value primary ``j`` must reach upwards (``"max"``) or downwards
    (``"min"``) for its requirement, given the other end as far as it is known (and
    beyond the current end when the interval is still a point)."""
    lo, hi = state.lo[j], state.hi[j]
    if sense == "max":
        goal = max(state.req_hi[j], lo + state.req_w[j])
        if goal <= hi + state.tol[j]:
            goal = hi + 1
        return float(np.ceil(goal - 1e-6))
    goal = min(state.req_lo[j], hi - state.req_w[j])
    if goal >= lo - state.tol[j]:
        goal = lo - 1
    return float(np.floor(goal + 1e-6))
