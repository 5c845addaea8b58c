"""A start pattern for large tables: the gauss method's pattern, completed by the greedy
repair on the attacker LPs.  The search still checks a complete start with the exact
oracle before taking it as its first incumbent; an unfinished one seeds its first
repair."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from tabprotect.errors import InfeasibleRulesError, InputError
from tabprotect.secondary.gauss import gauss
from tabprotect.secondary.optimal.oracle import DeadlineRepair
from tabprotect.secondary.repair import AttackerOracle, Requirements


@dataclass
class Start:
    """The start pattern (all unpublished cells) and whether the repair finished it."""

    pattern: np.ndarray
    protected: bool


def gauss_start(table, cost: np.ndarray, req: Requirements, cand: np.ndarray, *,
                singleton: bool, time_limit: float | None) -> Start | None:
    """The gauss pattern with what it leaves unprotected repaired, within ``time_limit``
    seconds in all; None when gauss gives no pattern.

    One oracle check finds the primaries the gauss pattern leaves short; the repair then
    works on those only (a repair only adds suppressions, so the others stay protected).
    The check stops at the deadline between its LPs, the repair within its LPs as well.
    """
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + time_limit
    try:
        out = gauss(table, np.asarray(cost, dtype=float), time_limit=time_limit,
                    singleton=singleton)
    except (InfeasibleRulesError, InputError):
        return None   # the search itself reports what cannot be protected
    pattern = np.isin(np.asarray(out.status), ("U", "M"))
    oracle = AttackerOracle(table, req)
    chk = oracle.check(pattern, cuts=False, deadline=deadline)
    if chk.ok:
        return Start(pattern, True)
    if not chk.complete:
        return Start(pattern, False)   # no time to find what is short
    short = np.unique([s for s, _, _ in chk.violated]).astype(np.int64)
    repair = DeadlineRepair(table, req, cost, cand & ~pattern, oracle)
    pattern, unmet = repair.run(pattern, deadline=deadline, primaries=short)
    return Start(pattern, not unmet)
