"""The Benders engine: row generation on a master over ``z`` only (see the package
docstring), tightened by an LP phase and finished by the branch-and-cut or MILP
rounds."""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

from tabprotect.secondary.base import MethodOutcome
from tabprotect.secondary.optimal import heuristics
from tabprotect.secondary.optimal.branch_and_cut import BranchAndCut
from tabprotect.secondary.optimal.lp_phase import lp_phase
from tabprotect.secondary.optimal.milp_rounds import milp_rounds
from tabprotect.secondary.optimal.options import OptimalOptions
from tabprotect.secondary.optimal.search import Search
from tabprotect.secondary.attack_requirements import Requirements


def benders(table, cost: np.ndarray, req: Requirements, cand: np.ndarray, *,
            time_limit: float | None = None, mip_gap: float | None = None,
            progress: Callable[[str, float], None] | None = None,
            start: np.ndarray | None = None, seed: np.ndarray | None = None,
            options: OptimalOptions | None = None,
            start_state: str | None = None) -> MethodOutcome:
    """Row generation on the master (see the package docstring).

    ``start`` is an optional protected pattern (bool mask) used as the first incumbent;
    ``seed`` an optional pattern the first repair starts from instead of the primaries
    alone (an unfinished start).  ``start_state`` says what the caller's own check of
    the start found (:mod:`~tabprotect.secondary.optimal.start`: "protected" or
    "unchecked"; None: unknown, the start is checked here).
    Returns the best protected pattern found, proven optimal when the bound meets its
    cost within ``mip_gap`` (default ``options.default_mip_gap``).
    """
    opt = options if options is not None else OptimalOptions()
    s = Search(table, cost, req, cand, time_limit=time_limit, mip_gap=mip_gap,
               progress=progress, options=opt)
    lp_first = (opt.lp_before_repair_min_cells is not None and start is None
                and seed is None and table.n_cells >= opt.lp_before_repair_min_cells)
    if not lp_first:
        heuristics.initial_incumbent(s, start, seed, start_state)
        s.report("incumbent", 0.05)
    s.fractional_check = (opt.fractional_check if opt.fractional_check is not None
                          else s.equal_costs)
    s.stats["fractional_check"] = s.fractional_check
    s.build_master()
    lp = lp_phase(s, s.fractional_check)
    if lp.zlp is not None:
        heuristics.lp_point_incumbents(s, lp.zlp, lp.lower_bound)
    if lp_first and s.best is None:
        # the LP point gave no protected pattern: the repair from the primaries
        heuristics.initial_incumbent(s, None)
    s.stats["lp_before_repair"] = lp_first
    heuristics.finish_primary_repair(s, lp.lower_bound)
    heuristics.local_search(s, lp.lower_bound)
    if opt.search == "bc":
        s.stats["search"] = "branch-and-cut"
        proven, lower_bound = BranchAndCut(s, lp.lower_bound, lp.zlp, lp.settled).run()
    else:
        s.stats["search"] = "milp-rounds"
        proven, lower_bound = milp_rounds(s, lp)
    if s.best is None:
        heuristics.fallback(s, lp.zlp)
    if s.unchecked is not None and s.best is s.unchecked:
        proven = False   # the incumbent is a start the oracle did not finish checking
    status = table.status.copy()
    status[s.best & ~s.fixed] = "M"
    best_cost = s.best_cost
    gap = 0.0 if proven else ((best_cost - lower_bound) / best_cost if best_cost > 0 else 0.0)
    s.stats.update(engine="benders", lower_bound=lower_bound, cost=best_cost,
                   master_cuts=s.master.n_cuts,
                   static_rows_held=int(s.master.static_in.sum()),
                   sep_witness_skipped=int(getattr(getattr(s.oracle, "witnesses", None),
                                                   "skipped", 0)),
                   seconds=time.perf_counter() - s.t0)
    s.report("done", 1.0)
    stopped = "node_limit" if s.stats.get("node_limit") else "time_limit"
    return MethodOutcome(status=status, proven_optimal=proven,
                         solver_status="optimal" if proven else stopped,
                         mip_gap=max(0.0, gap), details=s.stats)
