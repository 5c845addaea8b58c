"""A start pattern: the gauss method's pattern (with its pruning pass), completed by the
greedy repair on the attacker LPs where gauss leaves it short.  A start that gauss's own
witnesses prove (its width step met every condition, or its pruning pass found a witness
for each), that the oracle confirms, or that the repair completes is the search's first
protected incumbent, and the result never costs more; one whose check the deadline
stopped is kept as an unchecked incumbent (gauss finished, so it is a whole pattern;
protect()'s audit judges it); an unfinished one (gauss or the repair stopped by the
deadline) seeds the first repair."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from tabprotect.errors import InfeasibleRulesError, InputError
from tabprotect.secondary.gauss import gauss
from tabprotect.secondary.optimal.options import OptimalOptions
from tabprotect.secondary.optimal.oracle import DUAL_SIMPLEX, DeadlineRepair, HybridOracle
from tabprotect.secondary.attack_requirements import Requirements

#: what the start's oracle check and repair established
PROTECTED, UNCHECKED, UNFINISHED = "protected", "unchecked", "unfinished"


@dataclass
class Start:
    """The start pattern (all unpublished cells) and what is known of it: ``state`` is
    PROTECTED (the oracle found no shortfall, or the repair met every condition),
    UNCHECKED (gauss finished but the check did not) or UNFINISHED (a seed only)."""

    pattern: np.ndarray
    state: str

    @property
    def protected(self) -> bool:
        return self.state == PROTECTED


def gauss_start(table, cost: np.ndarray, req: Requirements, cand: np.ndarray, *,
                singleton: bool, time_limit: float | None,
                widths_share: float = 0.5, swaps: bool = True,
                options: OptimalOptions | None = None) -> Start | None:
    """The gauss pattern with what it leaves unprotected repaired, within ``time_limit``
    seconds in all (``widths_share`` of them for gauss's width step; ``swaps``: gauss's
    swap pass after its pruning pass); None when gauss gives no pattern.  The check and
    the repair use the search's oracle with ``options`` (its witness pass among them;
    default settings when None).

    A pattern gauss's witnesses prove is protected as it is (no check).  Otherwise one
    oracle check finds the primaries the gauss pattern leaves short; the repair then
    works on those only (a repair only adds suppressions, so the others stay protected).
    The check and the repair stop at the deadline, within their LPs as well.
    """
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + time_limit
    try:
        out = gauss(table, np.asarray(cost, dtype=float), time_limit=time_limit,
                    singleton=singleton, widths_share=widths_share, swaps=swaps)
    except (InfeasibleRulesError, InputError):
        return None   # the search itself reports what cannot be protected
    pattern = np.isin(np.asarray(out.status), ("U", "M"))
    if witnessed(out):
        return Start(pattern, PROTECTED)
    oracle = HybridOracle(table, req, simplex_strategy=DUAL_SIMPLEX, racing=False,
                          options=options)
    chk = oracle.check(pattern, cuts=False, deadline=deadline)
    if chk.ok:
        return Start(pattern, PROTECTED)
    if not chk.complete and not chk.violated:
        # no shortfall seen before the deadline: a finished gauss pattern is a whole
        # candidate (gauss with its width step meets the levels on most tables)
        return Start(pattern, UNCHECKED if out.solver_status != "time_limit"
                     else UNFINISHED)
    if not chk.complete:
        return Start(pattern, UNFINISHED)   # short, and no time to find all that is
    short = np.unique([s for s, _, _ in chk.violated]).astype(np.int64)
    repair = DeadlineRepair(table, req, cost, cand & ~pattern, oracle)
    pattern, unmet = repair.run(pattern, deadline=deadline, primaries=short)
    return Start(pattern, UNFINISHED if unmet else PROTECTED)


def witnessed(out) -> bool:
    """Whether gauss's own witnesses prove its pattern: its pruning pass ran (it finds a
    witness for every condition before it removes anything), or its width step met every
    condition in time (the elimination only adds suppressions, which keep every
    witness, and one the time limit stopped keeps every cell it did not examine)."""
    d = out.details
    if "pruned" in d and not d.get("prune_skipped"):
        return True
    return d.get("widths_unmet") == 0 and not d.get("widths_timed_out", True)
