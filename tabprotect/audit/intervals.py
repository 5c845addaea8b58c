"""Intervals mode over one component: the exact min and max of each target variable.

All minima first, then all maxima: consecutive LPs of one sense have nearby optimal
bases, so each warm re-solve is short. A finite outer bound (the a-priori bounds
tightened by propagation over the relations, :mod:`~tabprotect.audit.propagate`)
attained by some earlier solution is known without its own LP.
"""
from __future__ import annotations

import numpy as np

from tabprotect.audit.system import ReducedSystem, out_of_time


def exact_intervals(system: ReducedSystem, targets, integer, counters, deadline,
                    fixed=None):
    """Exact min and max of each target variable (arrays aligned with ``targets``)."""
    k = system.k
    bounds = {"min": np.full(k, -np.inf), "max": np.full(k, np.inf)}
    at_lb = np.zeros(k, dtype=bool)
    at_ub = np.zeros(k, dtype=bool)
    lb, ub = system.outer_bounds(fixed)
    system.fix(fixed)
    try:
        for sense in ("min", "max"):
            for j in targets:
                if out_of_time(deadline):
                    # never computed: the interval stays infinite and the cell is
                    # marked, so the verdict cannot pass on it
                    system.incomplete.add(int(j))
                    continue
                if at_lb[j] if sense == "min" else at_ub[j]:
                    counters["skipped"] += 1
                    val = lb[j] if sense == "min" else ub[j]
                else:
                    val, x = system.bound(j, sense, integer, fixed, counters, deadline)
                    if system.relaxed:   # the relations hold within rounding error only
                        lb, ub = system.bounds(fixed)
                    if val is None:
                        # no answer from the solver: never counted as a safe interval
                        system.incomplete.add(int(j))
                        continue
                    if x is not None:
                        if fixed is None:
                            # a feasible table: a witness for the attackers' passes after
                            system.bank.keep(x - system.value)
                        # a finite bound attained by a feasible table is that bound's optimum
                        hit_lb, hit_ub = system.at_bounds(x, lb, ub)
                        at_lb |= hit_lb
                        at_ub |= hit_ub
                bounds[sense][j] = val
    finally:
        system.unfix(fixed)
    lo, hi = bounds["min"], bounds["max"]
    if integer:
        lo = np.where(np.isfinite(lo), np.ceil(lo - 1e-6), lo)
        hi = np.where(np.isfinite(hi), np.floor(hi + 1e-6), hi)
    return lo[targets], hi[targets]
