"""A start pattern for large tables: the gauss method's pattern, completed by the greedy
repair on the attacker LPs.  The search still checks it with the exact oracle before
taking it as its first incumbent."""
from __future__ import annotations

import time

import numpy as np

from tabprotect.errors import InfeasibleRulesError, InputError
from tabprotect.secondary.gauss import gauss
from tabprotect.secondary.repair import GreedyRepair, Requirements


def gauss_start(table, cost: np.ndarray, req: Requirements, cand: np.ndarray, *,
                singleton: bool, time_limit: float | None) -> np.ndarray | None:
    """The gauss pattern with what it leaves unprotected repaired (all unpublished
    cells, as a bool mask), or None when the repair did not finish within
    ``time_limit`` seconds in all."""
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + time_limit
    try:
        out = gauss(table, np.asarray(cost, dtype=float), time_limit=time_limit,
                    singleton=singleton)
    except (InfeasibleRulesError, InputError):
        return None   # the search itself reports what cannot be protected
    pattern = np.isin(np.asarray(out.status), ("U", "M"))
    if deadline is not None and time.perf_counter() >= deadline:
        return None
    repair = GreedyRepair(table, req, cost, cand & ~pattern)
    pattern, unmet = repair.run(pattern, deadline=deadline)
    return None if unmet else pattern
