"""Intervals mode over many small components at once: one block-diagonal LP.

The components are independent, so the minimum (maximum) of ``sum_c x[j_c]`` over the
stacked system, one target ``j_c`` per component, is attained with every block at its
own minimum (maximum) of ``x[j_c]``: one solve gives one bound of every component, and
each block of the solution is a feasible table of its component (a witness, as in
:func:`~tabprotect.audit.intervals.exact_intervals`). On a pattern of many components
of a few cells each, the per-solve set-up of the solver (not the simplex) is what an
LP per component and bound costs; the stacked LP pays it once per round.

The bounds are those of :func:`~tabprotect.audit.intervals.exact_intervals`, target by
target: the same skip of ends a feasible table attains at their outer bounds
(:mod:`~tabprotect.audit.propagate`), the same integer bound
(branch and bound on the component's own model) where a block's vertex is fractional.
Anything but an optimal stacked solve (a component infeasible, a bound unbounded, no
answer) sends the work left to the components' own models, where those cases are
handled one component at a time.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram
from tabprotect.audit.system import (InfeasibleSystem, ReducedSystem, new_counters,
                                     out_of_time)


@dataclass
class BatchedIntervals:
    """One component's outcome of the stacked LPs: its exact interval per variable, or
    the variable whose bound found its system infeasible."""

    counters: dict
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None
    infeasible_cell: int | None = None


class _Block:
    """One component inside the stacked model: its offset, the ends it still needs."""

    def __init__(self, system: ReducedSystem, offset: int):
        self.system, self.offset, self.counters = system, offset, new_counters()
        self.k = system.k
        # an end a feasible table attains at these outer bounds is exact, no LP of its
        # own (the exact relations' bounds: dropped if the system turns out infeasible)
        self.lb, self.ub = system.outer_bounds(None)
        self.bounds = {"min": np.full(self.k, -np.inf), "max": np.full(self.k, np.inf)}
        self.at = {"min": np.zeros(self.k, dtype=bool), "max": np.zeros(self.k, dtype=bool)}
        self.queue: list[int] = []
        self.infeasible: int | None = None

    def start(self) -> None:
        """Every variable again in the queue (a new sense), unless infeasible."""
        self.queue = list(range(self.k)) if self.infeasible is None else []

    def next_target(self, sense: str) -> int | None:
        """The next variable whose ``sense`` bound needs an LP (ends a feasible table
        already sits at are its a-priori bound, no LP)."""
        while self.queue:
            j = self.queue.pop(0)
            if self.at[sense][j]:
                self.counters["skipped"] += 1
                self.bounds[sense][j] = self.lb[j] if sense == "min" else self.ub[j]
                continue
            return j
        return None

    def take(self, j: int, sense: str, x: np.ndarray | None, integer: bool,
             deadline: float | None) -> None:
        """Record the bound of ``x_j`` from the block ``x`` of an optimal stacked
        solution (or, with ``x`` None, from the component's own model); an integer
        program without an answer by ``deadline`` leaves it undecided (incomplete)."""
        system = self.system
        if x is None:
            try:
                val, x = system.bound(j, sense, integer, None, self.counters, deadline)
            except InfeasibleSystem as exc:
                self.infeasible, self.queue = exc.local_cell, []
                return
            if system.relaxed:     # the relations hold within rounding error only
                self.lb, self.ub = system.bounds(None)
            if val is None:
                system.incomplete.add(int(j))
                return
        else:
            val = float(x[j])
            if integer and np.abs(x - np.round(x)).max() > 1e-6:
                val, x = system.integer_bound(j, sense, None, self.counters, deadline)
                if val is None:      # never counted as a safe interval
                    system.incomplete.add(int(j))
                    return
        if x is not None:
            system.bank.keep(x - system.value)
            hit_lb, hit_ub = system.at_bounds(x, self.lb, self.ub)
            self.at["min"] |= hit_lb
            self.at["max"] |= hit_ub
        self.bounds[sense][j] = val

    def outcome(self, integer: bool) -> BatchedIntervals:
        if self.infeasible is not None:
            return BatchedIntervals(self.counters, infeasible_cell=self.infeasible)
        lo, hi = self.bounds["min"], self.bounds["max"]
        if integer:
            lo = np.where(np.isfinite(lo), np.ceil(lo - 1e-6), lo)
            hi = np.where(np.isfinite(hi), np.floor(hi + 1e-6), hi)
        return BatchedIntervals(self.counters, lo, hi)


def stacked_program(systems: list[ReducedSystem]) -> LinearProgram:
    """The components' exact systems side by side (block-diagonal relations)."""
    return LinearProgram(
        c=np.zeros(sum(s.k for s in systems)),
        A=sp.block_diag([s.A for s in systems], format="csr"),
        row_lower=np.concatenate([s.rhs for s in systems]),
        row_upper=np.concatenate([s.rhs for s in systems]),
        col_lower=np.concatenate([s.lb for s in systems]),
        col_upper=np.concatenate([s.ub for s in systems]))


def batched_intervals(systems: list[ReducedSystem], integer: bool,
                      deadline: float | None) -> list[BatchedIntervals]:
    """The exact interval of every variable of every component, with each component's
    work counters (a stacked LP counts once, for the first component it bounds)."""
    offsets = np.concatenate([[0], np.cumsum([s.k for s in systems])])
    blocks = [_Block(s, int(o)) for s, o in zip(systems, offsets)]
    model = HighsModel(stacked_program(systems))
    stacked = True      # until a stacked solve is not optimal
    for sense in ("min", "max"):
        for b in blocks:
            b.start()
        while True:
            chosen = [(b, j) for b in blocks for j in [b.next_target(sense)] if j is not None]
            if not chosen:
                break
            if out_of_time(deadline):
                # never computed: infinite intervals, marked, so no verdict passes on them
                for b, j in chosen:
                    b.system.incomplete.update([j, *b.queue])
                    b.queue = []
                continue
            x = None
            if stacked:
                model.set_objective(indices=[b.offset + j for b, j in chosen],
                                    values=np.ones(len(chosen)), sense=sense)
                res = model.solve()
                chosen[0][0].counters["lp"] += 1
                stacked = res.status == "optimal" and res.x is not None
                x = res.x if stacked else None
            for b, j in chosen:
                b.take(j, sense, None if x is None else x[b.offset:b.offset + b.k], integer,
                       deadline)
    return [b.outcome(integer) for b in blocks]
