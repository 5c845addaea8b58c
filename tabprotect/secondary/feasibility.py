"""protect()'s up-front feasibility check: can every primary be protected with every
cell that may be suppressed suppressed?  Judged by the audit itself (verdict mode) on
that pattern; an unprotectable primary is an :class:`InfeasibleRulesError` naming it."""
from __future__ import annotations

import time

import numpy as np

from tabprotect.audit import audit
from tabprotect.budget import Budget
from tabprotect.errors import InfeasibleRulesError
from tabprotect.model.table import Table
from tabprotect.secondary.protect_settings import ProtectSettings


def feasibility_stage(table: Table, cand: np.ndarray, singleton: bool, budget: Budget,
                      settings: ProtectSettings, large: bool, notes: list[str]
                      ) -> float | None:
    """Run the check when it is affordable (small-table path, primaries x candidates
    within ``feasibility_check_max_work``) within its share of the budget; returns its
    seconds, or None when it was skipped (the notes say why; the final audit judges)."""
    n_primary = int((table.status == "U").sum())
    n_cand = int(cand.sum())
    if large:
        return None
    if n_primary * n_cand > settings.feasibility_check_max_work:
        notes.append(f"{n_primary} primaries x {n_cand} candidate cells: up-front "
                     f"feasibility check skipped (the final audit judges)")
        return None
    check_limit = settings.feasibility_check_seconds if budget.total is None else \
        budget.share(settings.feasibility_share).remaining()
    tf = time.perf_counter()
    everything = cand | table.suppressed
    attackers = int((everything & (table.freq == 1)).sum()) if singleton else 0
    check_singleton = attackers * int(everything.sum()) <= \
        settings.feasibility_singleton_max_work
    if not check_singleton:
        notes.append(f"up-front feasibility check against the outside intruder only: "
                     f"{attackers} single-contributor attackers x "
                     f"{int(everything.sum())} cells (the final audit judges them)")
    if not check_feasible(table, cand, singleton and check_singleton, check_limit,
                          settings=settings):
        notes.append(f"up-front feasibility check stopped at its share of the time "
                     f"limit ({settings.feasibility_share:.0%}; the final audit judges)")
    return time.perf_counter() - tf


def check_feasible(table: Table, cand: np.ndarray, singleton: bool,
                   time_limit: float | None, *, settings: ProtectSettings | None = None
                   ) -> bool:
    """Every primary must be protectable with every candidate cell suppressed (against
    single-contributor attackers too when ``singleton``).

    Judged by the audit itself (verdict mode) on the pattern "every candidate
    suppressed": its aggregate LPs certify most primaries at once (TABLE3, 517 primaries
    on 4,992 cells: 6 LPs, 0.2 s, where one attacker LP per primary and direction took
    0.4-30 s each), and what it cannot certify gets the exact LP bound that proves the
    shortfall.  Returns False when the time limit stopped it before it decided.
    """
    everything = cand | table.suppressed
    res = audit(table, unpublished=everything, singleton=singleton, time_limit=time_limit,
                mode="verdict", settings=None if settings is None else settings.audit)
    if res.passed:
        return True
    # a cell not decided in time is not proven unprotectable: only complete shortfalls
    undecided = res.incomplete if res.incomplete is not None else np.zeros(0, bool)
    bad = [int(s) for s in res.shortfalls if not (len(undecided) and undecided[s])]
    if not bad:
        return False
    names = ", ".join(table.cell_name(s) for s in bad[:5])
    more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
    tol = 1e-6 * np.maximum(1.0, np.abs(table.value[bad]))
    why = set()
    if (res.max_at_most[bad] < res.required_upper[bad] - tol).any():
        why.add("up")
    if (res.min_at_least[bad] > res.required_lower[bad] + tol).any():
        why.add("down")
    if not why:
        why.add("single-contributor" if res.attacked[bad].any() else "sliding")
    raise InfeasibleRulesError(
        f"primary cell(s) {names}{more} cannot be protected even with every other cell "
        f"suppressed ({'/'.join(sorted(why))} protection level"
        f"{'; single-contributor attackers included' if singleton else ''}; P cells, "
        f"empty cells and cells with lb == ub are never suppressed)")
