"""Controlled rounding where the relaxation's vertex is fractional (three and more
dimensions): the relaxation's bound, a first rounding, a neighbourhood search around it,
then branch and bound on the remaining budget.

Proving the minimum deviation of a 3-D table can take hours, while a zero-restricted
rounding close to the relaxation's bound is found in seconds:

1. the LP relaxation by interior point (with crossover: a vertex), the lower bound; when
   it is infeasible no zero-restricted rounding exists, when its vertex is integral it is
   the optimum;
2. a first rounding: HiGHS's branch and bound stopped at its first solution (its
   feasibility jump runs before the root relaxation);
3. the neighbourhood of the relaxation (RINS): cells where the rounding agrees with an
   integral value of the relaxation stay, the others are searched exactly (small);
4. branch and bound on the whole model started from that rounding, until the budget ends
   or the gap to the bound is closed.

The result is additive, on adjacent multiples and zero-restricted whichever step ends the
search; its deviation is within the reported gap of the minimum.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

from solvers import HighsModel, LinearProgram, solve
from tabprotect.rounding.bound_gap import least_value_above, relative_gap

__all__ = ["SearchOutcome", "search_rounding"]


@dataclasses.dataclass(frozen=True)
class SearchOutcome:
    """The choice of cells rounded up (None: no zero-restricted rounding exists), whether
    it is proven of minimum deviation, its relative gap to the bound, and the steps run."""

    up: np.ndarray | None
    optimal: bool
    gap: float
    steps: str


def search_rounding(lp: LinearProgram, *, deadline: float | None, search_end: float,
                    mip_gap: float | None, threads) -> SearchOutcome:
    """Round the 0/1 program ``lp`` (objective with the deviation's constant in its
    offset) by the steps of the module docstring; ``deadline`` (perf_counter seconds, the
    time limit) ends every step, ``search_end`` ends step 4 when there is no deadline."""
    n = lp.n_cols
    relaxed = solve(dataclasses.replace(lp, integrality=None), solver="ipm",
                    time_limit=_left(deadline), threads=threads)
    if relaxed.status == "infeasible":
        return SearchOutcome(None, True, 0.0, "LP relaxation infeasible")
    if not relaxed.has_solution:
        return SearchOutcome(None, False, np.inf, f"LP relaxation {relaxed.status}")
    x, bound = relaxed.x, relaxed.objective
    integral = np.abs(x - np.round(x)) <= 1e-6
    if integral.all():
        return SearchOutcome(np.round(x), True, 0.0, "LP relaxation (integral vertex)")
    mip = dataclasses.replace(lp, integrality=np.ones(n, dtype=bool))
    # a relative gap of 1 ends branch and bound once the root has a bound and a solution;
    # one node at most, so a root without a solution hands over to step 4
    first = solve(mip, mip_lp_solver="ipm", mip_rel_gap=1.0, mip_max_nodes=1,
                  time_limit=_left(deadline), threads=threads)
    if first.status == "infeasible":
        return SearchOutcome(None, True, 0.0, "MILP infeasible")
    steps = "LP relaxation"
    up, value = None, np.inf
    if first.has_solution:
        up, value = _neighbourhood(mip, x, integral, np.round(first.x), first.objective,
                                   deadline, threads)
        steps += ", first rounding, neighbourhood search"
        if _closed(lp, value, bound, mip_gap):
            return SearchOutcome(up, value <= _least_above(lp, bound),
                                 relative_gap(value, bound),
                                 steps)
    end = search_end if deadline is None else deadline
    return _branch_and_bound(mip, up, value, bound, end, mip_gap, threads,
                             steps + ", branch and bound")


def _branch_and_bound(mip: LinearProgram, up, value, bound, end, mip_gap, threads,
                      steps) -> SearchOutcome:
    """Step 4: the whole model from ``up`` (None: no start) until ``end``."""
    # from a start, HiGHS's feasibility jump (a first solution before the root relaxation)
    # adds nothing, and without it branch and bound proves the 2,197-cell 3-D table in
    # about two thirds of the time
    options = {} if up is None else {"mip_heuristic_run_feasibility_jump": False}
    model = HighsModel(mip, threads=threads, mip_gap=mip_gap, **options)
    if up is not None:
        model.set_start(up)
    res = model.solve(time_limit=_left(end), duals=False)
    if res.status == "infeasible":
        return SearchOutcome(None, True, 0.0, steps)
    if res.status == "optimal":  # within mip_gap when one is given
        return SearchOutcome(np.round(res.x), mip_gap is None, res.mip_gap or 0.0, steps)
    if up is None and not res.has_solution:
        return SearchOutcome(None, False, np.inf, steps)
    gap = relative_gap(value, bound)
    if res.has_solution and res.objective <= value:
        up, value = np.round(res.x), res.objective
        # branch and bound's own bound (cuts, branching) is at least the relaxation's
        gap = min(relative_gap(value, bound),
                  res.mip_gap if res.mip_gap is not None else np.inf)
    return SearchOutcome(up, value <= _least_above(mip, bound), gap, steps)


def _neighbourhood(mip: LinearProgram, x, integral, up, value, deadline, threads):
    """RINS rounds: cells where ``up`` equals the relaxation's integral value are fixed,
    the rest solved exactly (``up`` is feasible for it: never worse); until no gain."""
    for _ in range(5):
        keep = integral & (np.round(x) == up)
        if keep.all():
            break
        sub = dataclasses.replace(mip, col_lower=np.where(keep, up, mip.col_lower),
                                  col_upper=np.where(keep, up, mip.col_upper))
        model = HighsModel(sub, threads=threads)
        model.set_start(up)
        res = model.solve(time_limit=_left(deadline), duals=False)
        if not res.has_solution or res.objective >= value - 1e-9:
            break
        up, value = np.round(res.x), res.objective
    return up, value


def _closed(lp, value, bound, mip_gap) -> bool:
    if value <= _least_above(lp, bound):
        return True
    return mip_gap is not None and relative_gap(value, bound) <= mip_gap


def _least_above(lp: LinearProgram, bound: float) -> float:
    return least_value_above(bound, np.append(lp.c, lp.offset))


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(1.0, deadline - time.perf_counter())
