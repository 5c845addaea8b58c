"""From the components' outcomes to the audit result: per-cell figures, the verdict of
every primary, and the two result types."""
from __future__ import annotations

import numpy as np

from tabprotect.audit_result import (TOL, AuditResult, IntervalAudit, VerdictAudit,
                                     meets_requirement)
from tabprotect.audit.component import ComponentOutcome
from tabprotect.audit.system import new_counters
from tabprotect.errors import InputError
from tabprotect.model.table import Table


class Figures:
    """Per-cell figures of the whole table, filled component by component.

    ``lower``/``upper`` are the exact interval (intervals mode) or witness values
    (verdict modes, exact where ``exact_lower``/``exact_upper``); ``outer_lower`` /
    ``outer_upper`` are limits from relaxed LPs; ``attacked`` flags primaries some
    attacker narrows too far; ``incomplete`` cells whose bounds were not computed."""

    def __init__(self, table: Table, unpublished: np.ndarray, determined: np.ndarray):
        n, value = table.n_cells, table.value
        self.lower = np.where(unpublished & ~determined, -np.inf, value)
        self.upper = np.where(unpublished & ~determined, np.inf, value)
        self.exact_lower = np.ones(n, dtype=bool)
        self.exact_upper = np.ones(n, dtype=bool)
        self.outer_lower = np.full(n, -np.inf)
        self.outer_upper = np.full(n, np.inf)
        self.attacked = np.zeros(n, dtype=bool)
        self.incomplete = np.zeros(n, dtype=bool)
        self.counters = new_counters()

    def collect(self, table: Table, cells: np.ndarray, out: ComponentOutcome) -> None:
        if out.infeasible_cell is not None:
            raise InputError(
                f"audit: no table satisfies the relations and bounds around cell "
                f"{table.cell_name(cells[out.infeasible_cell])} (published values not "
                f"additive, or bounds too tight)")
        self.lower[cells], self.upper[cells] = out.lo, out.hi
        self.exact_lower[cells], self.exact_upper[cells] = out.exact_lo, out.exact_hi
        self.outer_lower[cells], self.outer_upper[cells] = out.outer_lo, out.outer_hi
        self.attacked[cells] = out.attacked
        self.incomplete[cells[out.incomplete]] = True
        for key in self.counters:
            self.counters[key] += out.counters[key]

    def limits(self, table: Table) -> tuple[np.ndarray, np.ndarray]:
        """``(min_at_least, max_at_most)``: the limits the interval ends cannot pass
        (exact ends, else outer LP bounds or the a-priori bounds)."""
        return (np.where(self.exact_lower, self.lower,
                         np.maximum(self.outer_lower, table.lb)),
                np.where(self.exact_upper, self.upper,
                         np.minimum(self.outer_upper, table.ub)))

    def reuse(self, previous: AuditResult, settled: np.ndarray) -> None:
        """Give the primaries a previous audit settled the values its feasible tables
        reach. The previous pattern publishes more, so every table feasible there is
        feasible here and those values are reached here too; its limits are not limits
        here (the interval can only grow), so the settled cells keep this audit's own."""
        if isinstance(previous, VerdictAudit):
            reach_lo, reach_hi = previous.min_at_most, previous.max_at_least
        else:
            reach_lo, reach_hi = previous.lower, previous.upper
        self.lower[settled] = np.minimum(self.lower[settled], reach_lo[settled])
        self.upper[settled] = np.maximum(self.upper[settled], reach_hi[settled])
        self.attacked[settled] = False
        self.incomplete[settled] = False
        self.counters["certified"] += int(settled.sum())


def verdict_of(reach_lo, reach_hi, limit_lo, limit_hi, unpublished, incomplete, attacked,
               table, req_lo, req_hi, req_w) -> tuple[np.ndarray, np.ndarray]:
    """``(protected, exact)`` per cell from the values feasible tables reach
    (``reach_lo``/``reach_hi``: the exact ends in an interval audit) and the limits the
    ends cannot pass (``limit_lo``/``limit_hi``)."""
    value = table.value
    # limits meeting in a point: the cell is disclosed
    exact = unpublished & (limit_hi - limit_lo <= TOL * np.maximum(1.0, np.abs(value)))
    # a point interval is never safe, whatever the levels ask (in screen mode it may be
    # a point only for want of witnesses: then the cell is uncertified, so not protected)
    ok = meets_requirement(reach_lo, reach_hi, req_lo, req_hi, req_w, value)
    # an exactly disclosed primary cell is never protected, whatever its levels say; nor
    # is one whose interval was not computed within the time limit, nor one that an
    # attacker among the contributors can narrow too far
    ok &= ~exact & ~incomplete & ~attacked
    primary = table.status == "U"
    protected = np.where(primary & unpublished, ok, True)
    # a primary cell that is published is never protected
    protected &= ~(primary & ~unpublished)
    return protected, exact


def interval_result(fig: Figures, common: dict, unpublished, table, req) -> IntervalAudit:
    protected, exact = verdict_of(fig.lower, fig.upper, fig.lower, fig.upper, unpublished,
                                  fig.incomplete, fig.attacked, table, *req)
    return IntervalAudit(lower=fig.lower, upper=fig.upper, protected=protected, exact=exact,
                         incomplete=fig.incomplete, attacked=fig.attacked,
                         n_lp=fig.counters["lp"], n_lp_skipped=fig.counters["skipped"],
                         n_attacker_groups=fig.counters["attacker_groups"],
                         n_attacker_moves=fig.counters["attacker_moves"], **common)


def verdict_result(fig: Figures, common: dict, unpublished, table, req, previous,
                   settled, moves_used: int, moves_rejected: int) -> VerdictAudit:
    if settled.any():
        fig.reuse(previous, settled)
    min_at_least, max_at_most = fig.limits(table)
    protected, exact = verdict_of(fig.lower, fig.upper, min_at_least, max_at_most,
                                  unpublished, fig.incomplete, fig.attacked, table, *req)
    c = fig.counters
    return VerdictAudit(
        protected=protected, exact=exact, incomplete=fig.incomplete, attacked=fig.attacked,
        n_lp=c["lp"], n_lp_skipped=c["skipped"],
        outer_lower=np.isfinite(fig.outer_lower) & ~fig.exact_lower,
        outer_upper=np.isfinite(fig.outer_upper) & ~fig.exact_upper,
        n_certified=c["certified"], n_local_lp=c["local_lp"], n_block_lp=c["block_lp"],
        n_block_passes_skipped=c["block_passes_skipped"],
        n_moves_used=moves_used, n_moves_rejected=moves_rejected,
        n_attacker_groups=c["attacker_groups"], n_attacker_moves=c["attacker_moves"],
        min_at_most=fig.lower, min_at_least=min_at_least, max_at_least=fig.upper,
        max_at_most=max_at_most, **common)
