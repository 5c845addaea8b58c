"""protect()'s feasibility check: can every primary be protected with every cell that
may be suppressed suppressed?  Judged by the audit itself (verdict mode) on that pattern;
an unprotectable primary is an :class:`InfeasibleRulesError` naming it.  The outside
intruder is checked up front; the single-contributor attackers only before a whole-table
repair round against them or after a final audit that failed (:class:`SingletonCheck`:
the check's purpose is the clear error, and a passing pattern needs none).
A method that meets an unprotectable primary without spending its budget on it
(``CHECK_AFTER_METHODS``: modular leaves such a sub-table to the audit and repair,
optimal raises the error from its first cut for it; gauss
on a general table finds that its protection LP has no solution and goes on, see
:func:`check_after`) gets both checks only after a final audit that failed."""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from tabprotect.audit import AuditSettings, audit
from tabprotect.audit.sibling import sibling_cubes
from tabprotect.budget import Budget
from tabprotect.errors import InfeasibleRulesError
from tabprotect.model.table import Table
from tabprotect.results import PrimaryCountNote
from tabprotect.secondary.cubes import cube_repair
from tabprotect.secondary.protect_settings import ProtectSettings

#: methods whose feasibility check runs only after a failed final audit: an
#: unprotectable primary costs them no budget (modular leaves its sub-table unsolved,
#: the audit and repair take it; optimal's search meets it as a cut no candidate can
#: meet and raises the error), and a passing pattern needs no check
CHECK_AFTER_METHODS = ("modular", "optimal")

#: methods whose check is deferred on general tables (no dimensions) only: gauss's width
#: step solves every primary's protection LP there, so an unprotectable primary costs it
#: one LP without a solution, and the up-front check (which on a linked table of a few
#: thousand cells runs out its share without deciding) would take a fifth of the budget
CHECK_AFTER_ON_GENERAL = ("gauss",)


def check_after(method: str, table: Table) -> bool:
    """Whether ``method``'s feasibility check on ``table`` runs only after a failed
    final audit (:func:`deferred_stage`) instead of up front (:func:`feasibility_stage`)."""
    return method in CHECK_AFTER_METHODS or (
        method in CHECK_AFTER_ON_GENERAL and not table.dimensions)


def feasibility_stage(table: Table, cand: np.ndarray, budget: Budget,
                      settings: ProtectSettings, large: bool, notes: list[str]
                      ) -> float | None:
    """The up-front check against the outside intruder, when it is affordable
    (small-table path, primaries x candidates within ``feasibility_check_max_work``)
    within its share of the budget; returns its seconds, or None when it was skipped
    (the notes say why; the final audit judges).

    The single-contributor attackers are left to :func:`singleton_stage`, which runs only
    when the final audit fails: with every candidate suppressed each attacker costs a
    verdict pass over one huge component (a 625-cell count table: about 95 % of the
    warm call, against a few hundredths of a second for the outside intruder), and a passing pattern needs none of it."""
    if not _affordable(table, cand, settings, large, notes):
        return None
    check_limit = settings.feasibility_check_seconds if budget.total is None else \
        budget.share(settings.feasibility_share).remaining()
    tf = time.perf_counter()
    if not check_feasible(table, cand, False, check_limit, settings=settings):
        notes.append(f"up-front feasibility check stopped at its share of the time "
                     f"limit ({settings.feasibility_share:.0%}; the final audit judges)")
    return time.perf_counter() - tf


def deferred_stage(table: Table, cand: np.ndarray, budget: Budget,
                   settings: ProtectSettings, large: bool, singleton: bool,
                   notes: list[str], stages: dict[str, float]) -> None:
    """The check of a method that finds an unprotectable primary on its own
    (``CHECK_AFTER_METHODS``), after its final audit failed: the outside intruder, then
    (``singleton``) the single-contributor attackers; raises the same
    :class:`InfeasibleRulesError` naming the cells as the up-front check, within what is
    left of the budget (at least ``audit_floor_seconds``).  A pattern that passes the
    final audit needs neither."""
    if not _affordable(table, cand, settings, large, notes):
        return
    check_limit = settings.feasibility_check_seconds if budget.total is None else \
        budget.limit(settings.audit_floor_seconds)
    tf = time.perf_counter()
    if not check_feasible(table, cand, False, check_limit, settings=settings):
        notes.append("feasibility check after the failed audit stopped at the time limit")
    stages["feasibility check"] = time.perf_counter() - tf
    if singleton:
        seconds = singleton_stage(table, cand, budget, settings, notes)
        if seconds is not None:
            stages["feasibility check (single-contributor)"] = seconds


def singleton_stage(table: Table, cand: np.ndarray, budget: Budget,
                    settings: ProtectSettings, notes: list[str]
                    ) -> float | None:
    """After a final audit that failed with single-contributor attackers: is some primary
    unprotectable against them even with every candidate suppressed?  Raises
    :class:`InfeasibleRulesError` naming it (the same one-line error the up-front check
    gives), so a table no pattern protects is refused, not returned as a failed pattern.
    Within what is left of the call's budget (at least ``audit_floor_seconds``);
    returns its seconds, or None when it was skipped (the notes say why).  Runs only
    where the up-front check ran (:func:`feasibility_stage` returned its seconds)."""
    everything = cand | table.suppressed
    attackers = int((everything & (table.freq == 1)).sum())
    if attackers * int(everything.sum()) > settings.feasibility_singleton_max_work:
        notes.append(f"feasibility check against single-contributor attackers skipped: "
                     f"{attackers} attackers x {int(everything.sum())} cells")
        return None
    check_limit = settings.feasibility_check_seconds if budget.total is None else \
        budget.limit(settings.audit_floor_seconds)
    tf = time.perf_counter()
    if not check_feasible(table, cand, True, check_limit, settings=settings):
        notes.append("feasibility check against single-contributor attackers stopped "
                     "at the time limit")
    return time.perf_counter() - tf


class SingletonCheck:
    """:func:`singleton_stage`, at most once per protect() call: before the first
    whole-table repair round against single-contributor attackers (on a table no pattern
    protects, that round's attacker LPs -- one per primary, direction and attacker --
    would take minutes to repair what cannot be repaired), or else after a failed final
    audit."""

    def __init__(self, table: Table, cand: np.ndarray, settings: ProtectSettings,
                 notes: list[str]):
        self.table, self.cand, self.settings, self.notes = table, cand, settings, notes
        self.ran = False

    def __call__(self, budget: Budget) -> float | None:
        """The check within ``budget`` (raises :class:`InfeasibleRulesError`); its
        seconds, or None when it ran before or was skipped."""
        if self.ran:
            return None
        self.ran = True
        return singleton_stage(self.table, self.cand, budget, self.settings, self.notes)


def _affordable(table: Table, cand: np.ndarray, settings: ProtectSettings, large: bool,
                notes: list[str]) -> bool:
    """The check runs on the small-table path while primaries x candidates stays within
    ``feasibility_check_max_work`` (a note says when it does not)."""
    if large:
        return False
    n_primary = int((table.status == "U").sum())
    n_cand = int(cand.sum())
    if n_primary * n_cand > settings.feasibility_check_max_work:
        notes.append(PrimaryCountNote(f"{n_primary} primaries x {n_cand} candidate cells: "
                                      f"up-front feasibility check skipped (the final "
                                      f"audit judges)"))
        return False
    return True


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
                mode="verdict", settings=None if settings is None else settings.audit,
                moves=_check_moves(table, everything, settings))
    if res.passed:
        return True
    # a cell not decided in time (by the outside intruder's pass or an attacker's) is
    # not proven unprotectable: only decided shortfalls
    undecided = res.incomplete if res.incomplete is not None else np.zeros(0, bool)
    bad = [int(s) for s in res.shortfalls if not (len(undecided) and undecided[s])]
    if not bad:
        return False
    tol = 1e-6 * np.maximum(1.0, np.abs(table.value[bad]))
    why = set()
    if (res.max_at_most[bad] < res.required_upper[bad] - tol).any():
        why.add("up")
    if (res.min_at_least[bad] > res.required_lower[bad] + tol).any():
        why.add("down")
    if not why:
        why.add("single-contributor" if res.attacked[bad].any() else "sliding")
    refuse(table, bad, why, singleton)


def refuse(table: Table, bad: list[int], why: set[str], singleton: bool) -> None:
    """Raise the :class:`InfeasibleRulesError` that names the unprotectable primaries
    ``bad`` (the first five) and the levels (``why``) they cannot meet."""
    names = ", ".join(table.cell_name(s) for s in bad[:5])
    more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
    raise InfeasibleRulesError(
        f"primary cell(s) {names}{more} cannot be protected even with every other cell "
        f"suppressed ({'/'.join(sorted(why))} protection level"
        f"{'; single-contributor attackers included' if singleton else ''}; P cells, "
        f"empty cells and cells with lb == ub are never suppressed)")


def _check_moves(table: Table, everything: np.ndarray,
                 settings: ProtectSettings | None = None) -> sp.csr_matrix | None:
    """Candidate witnesses for the check's audit (which checks every row before it uses
    it): the leaf cubes of the cube search on large count tables (:func:`_cube_moves`),
    else sibling cubes on product tables (:func:`sibling_cubes`)."""
    moves = _cube_moves(table, everything, settings)
    per_primary = (settings or ProtectSettings()).feasibility_sibling_cubes
    if moves is None and table.dimensions and per_primary:
        moves = sibling_cubes(table, everything, per_primary)
    return moves


def _cube_moves(table: Table, everything: np.ndarray,
                settings: ProtectSettings | None = None):
    """The leaf cubes of a product count table with ``everything`` suppressed, as moves
    for the audit (None for other tables, and below ``AuditSettings.local_min_vars``
    suppressed cells, where the audit's own LPs are quicker than the cube search).  An
    integer intruder takes integral tables only, and the aggregate LPs' vertices move
    few primaries: without these integral witnesses the check of a large component needs
    a local LP per primary (a 13^3 count table: about 500 LPs, where the cubes certify
    every primary)."""
    audit_settings = (settings.audit if settings is not None else None) or AuditSettings()
    if (table.kind != "frequency" or not table.dimensions
            or everything.sum() < audit_settings.local_min_vars):
        return None
    pattern = table.replace(status=np.where(everything & (table.status != "U"), "M",
                                            table.status))
    _, _, moves = cube_repair(pattern, np.ones(table.n_cells),
                              np.flatnonzero(table.status == "U"), certify_only=True,
                              return_moves=True,
                              product_limits=(settings or ProtectSettings()).product_search)
    return moves
