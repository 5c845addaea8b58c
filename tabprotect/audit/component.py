"""One component's work: its task (picklable, for worker processes), the intruder's
intervals or verdict, the attackers' judgment, and the outcome sent back."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from tabprotect.audit.batch import BatchedIntervals
from tabprotect.audit.contributors import Attacker, attacked_primaries
from tabprotect.audit.settings import AuditSettings
from tabprotect.audit.system import InfeasibleSystem, ReducedSystem, new_counters
from tabprotect.audit.verdict import verdict_bounds


@dataclass
class ComponentTask:
    """What a worker needs to audit one component (local variable indices)."""

    system: ReducedSystem
    primary: np.ndarray
    req_lo: np.ndarray
    req_hi: np.ndarray
    req_w: np.ndarray
    attackers: list[Attacker] | None   # single contributors or coalitions
    integer: bool
    mode: str
    deadline: float | None   # wall-clock (epoch seconds): valid on any machine
    settings: AuditSettings
    moves: sp.csr_matrix | None = None   # checked candidate moves, local columns
    intervals: BatchedIntervals | None = None   # intervals mode: already solved, stacked
    # the attackers' passes may need branch and bound: an integer intruder where LP
    # vertices can be fractional (3 or more dimensions, or general relations), where
    # least moves (:mod:`~tabprotect.audit.attack_moves`) spare the most LPs
    fractional_vertices: bool = False


@dataclass
class ComponentOutcome:
    """One component's figures (local variable order)."""

    lo: np.ndarray
    hi: np.ndarray
    exact_lo: np.ndarray
    exact_hi: np.ndarray
    attacked: np.ndarray      # primaries some attacker among the contributors narrows too far
    incomplete: np.ndarray
    counters: dict
    outer_lo: np.ndarray
    outer_hi: np.ndarray
    infeasible_cell: int | None = None


def solve_component(task: ComponentTask) -> ComponentOutcome:
    """Intervals (or the verdict) of one component, plus the attacks of its contributors."""
    system = task.system
    k = system.k
    counters = new_counters() if task.intervals is None else task.intervals.counters
    everything = np.arange(k)
    try:
        if task.intervals is not None:
            if task.intervals.infeasible_cell is not None:
                raise InfeasibleSystem(task.intervals.infeasible_cell)
            lo, hi = task.intervals.lo, task.intervals.hi
            ex_lo = ex_hi = np.ones(k, dtype=bool)
            out_lo, out_hi = np.full(k, -np.inf), np.full(k, np.inf)
        elif task.mode in ("verdict", "screen"):
            state = verdict_bounds(system, task, everything, counters)
            lo, hi, ex_lo, ex_hi = state.lo, state.hi, state.ex_lo, state.ex_hi
            out_lo, out_hi = state.outer_lo, state.outer_hi
        else:
            from tabprotect.audit.intervals import exact_intervals
            lo, hi = exact_intervals(system, everything, task.integer, counters,
                                     task.deadline)
            ex_lo = ex_hi = np.ones(k, dtype=bool)
            out_lo, out_hi = np.full(k, -np.inf), np.full(k, np.inf)
        # the limits the outside intruder's interval ends cannot pass
        outside = (np.where(ex_lo, lo, out_lo), np.where(ex_hi, hi, out_hi))
        attacked = attacked_primaries(task, counters, outside, reach=(lo, hi))
    except InfeasibleSystem as exc:
        empty = np.zeros(k)
        none = np.zeros(k, dtype=bool)
        return ComponentOutcome(empty, empty, none, none, none, np.zeros(0, dtype=np.int64),
                                counters, empty, empty, infeasible_cell=exc.local_cell)
    incomplete = np.fromiter(sorted(system.incomplete), dtype=np.int64,
                             count=len(system.incomplete))
    return ComponentOutcome(lo, hi, ex_lo, ex_hi, attacked, incomplete, counters,
                            out_lo, out_hi)
