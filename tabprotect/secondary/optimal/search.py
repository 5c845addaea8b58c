"""The state one Benders run shares between its phases: the clock, the oracle and the
repair, the master, the incumbent and the counters reported in the result."""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

from tabprotect.errors import InfeasibleRulesError
from tabprotect.secondary.optimal.cuts import (BridgelessRows, cover_cuts,
                                               initial_cover_rows, reduce_candidates)
from tabprotect.secondary.optimal.master import (Master, Unprotectable,
                                                 unprotectable_message)
from tabprotect.secondary.optimal.options import OptimalOptions
from tabprotect.secondary.optimal.oracle import (DUAL_SIMPLEX, DeadlineRepair, HybridOracle,
                                                 LPCount, SafeOracle)
from tabprotect.secondary.optimal.prune import prune
from tabprotect.secondary.optimal.support import SupportSeparator
from tabprotect.secondary.attack_requirements import Requirements
from tabprotect.secondary.attacker_oracle import AttackerOracle


def equal(costs: np.ndarray) -> bool:
    """Every candidate costs the same (unity costs): several "auto" settings follow it."""
    return bool(len(costs) == 0 or np.ptp(costs) <= 1e-12 * max(
        1.0, float(np.abs(costs).max())))


def round_bound(bound: float, integral: bool) -> float:
    """A valid lower bound, rounded up to the next integer when every cost is one."""
    if not integral:
        return bound
    return float(np.ceil(bound - 1e-6 * max(1.0, abs(bound))))


class Search:
    """One Benders run's shared state.

    Attributes
    ----------
    table, cost, req, options : the problem and the settings
    cand, cand_idx, fixed : candidate mask (after the reduction), its indices, and the
        always-unpublished cells (primaries and cells already suppressed)
    t0, time_limit, deadline : the clock (``perf_counter`` seconds)
    lps : the attacker, repair and prune LPs solved so far (:class:`~.oracle.LPCount`):
        the work clock the heuristics' share is measured by
    oracle, repair : the attacker oracle and the greedy repair on it
    master : the master problem (set by :meth:`build_master`)
    best, best_cost : the incumbent (a protected pattern over all cells) and its cost
    lower_bound : a lower bound on every protected pattern's cost (the LP phase's, once
        it ran; 0 before): a prune never tries a removal that would go below it
    lp_hint : the root LP point over all cells once known (prunes try the cells it needs
        least first among equal costs)
    partial : the latest unfinished repair (the fallback continues it)
    unchecked : the start when its oracle check ran out of time (kept as the incumbent,
        never proven optimal while it is)
    from_primaries : the unfinished repair from the primaries alone (continued after
        the LP phase)
    searched : incumbents the swap search has been through
    fractional_check : the exact attacker LPs run at fractional points too
    use_covers : cover cuts of the pool cuts are separated (at the nodes, and in the LP
        phase with ``lp_phase_covers``)
    stats : the counters reported in the result's details
    """

    def __init__(self, table, cost: np.ndarray, req: Requirements, cand: np.ndarray, *,
                 time_limit: float | None, mip_gap: float | None,
                 progress: Callable[[str, float], None] | None, options: OptimalOptions):
        self.t0 = time.perf_counter()
        self.table, self.cost, self.req, self.options = table, cost, req, options
        self.time_limit = time_limit
        self.deadline = None if time_limit is None else self.t0 + time_limit
        self.progress = progress
        self.fixed = np.isin(table.status, ("U", "M"))
        if options.reduce:
            cand = reduce_candidates(table, req, cand, self.fixed)
        self.cand = cand
        self.cand_idx = np.flatnonzero(cand)
        self.stats: dict = {"oracle_errors": 0}
        costs = cost[self.cand_idx]
        self.equal_costs = equal(costs)
        self.use_covers = (options.cover_cuts if options.cover_cuts is not None
                           else not self.equal_costs)
        # with integer costs every pattern's cost is an integer: a bound rounds up
        self.integral_costs = bool(np.all(np.abs(costs - np.round(costs)) <= 1e-9))
        self.target = options.default_mip_gap if mip_gap is None else float(mip_gap)
        self.mip_gap = mip_gap
        racing = (options.race_simplex if options.race_simplex is not None
                  else not self.equal_costs)
        self.stats["race_simplex"] = racing
        inner = (HybridOracle(table, req, simplex_strategy=DUAL_SIMPLEX, racing=racing,
                              options=options)
                 if options.dual_oracle else AttackerOracle(table, req, simplex_strategy=None))
        self.lps = LPCount()
        self.oracle = SafeOracle(inner, self.stats, self.lps)
        self.repair = DeadlineRepair(table, req, cost, cand, self.oracle, count=self.lps)
        self.stats.update({"rounds_lp": 0, "rounds_mip": 0, "cuts": 0, "lp_solves": 0,
                           "heuristic_seconds": 0.0, "heuristic_lps": 0,
                           "master_seconds": 0.0,
                           "oracle_seconds": 0.0})
        self.best: np.ndarray | None = None
        self.lower_bound = 0.0
        self.best_cost = np.inf
        self.lp_hint = np.zeros(table.n_cells)
        self.partial: np.ndarray | None = None
        self.unchecked: np.ndarray | None = None
        self.from_primaries: np.ndarray | None = None
        self.searched: set = set()
        self.master: Master | None = None
        self.support: SupportSeparator | None = None
        self.n_cover = 0
        # exact attacker LPs at fractional points as well (resolved from the costs)
        self.fractional_check = False

    # ---- clock
    def left(self) -> float | None:
        return None if self.deadline is None else max(0.0, self.deadline - time.perf_counter())

    def search_end(self) -> float | None:
        """Deadline of the search: while no protected pattern is known, the fallback
        repair's reserve (``fallback_reserve_share`` of the limit) is kept back."""
        if self.deadline is None or self.best is not None:
            return self.deadline
        return self.deadline - self.options.fallback_reserve_share * self.time_limit

    def search_left(self) -> float | None:
        end = self.search_end()
        return None if end is None else max(0.0, end - time.perf_counter())

    def out_of_search_time(self) -> bool:
        end = self.search_end()
        return end is not None and time.perf_counter() >= end

    def share_deadline(self, share: float) -> float | None:
        """``share`` of the time limit from now, never past the deadline."""
        if self.time_limit is None:
            return None
        return min(self.deadline, time.perf_counter() + share * self.time_limit)

    def report(self, msg: str, frac: float) -> None:
        if self.progress is not None:
            self.progress(msg, frac)

    # ---- patterns
    def cost_of(self, mask: np.ndarray) -> float:
        """Cost of the secondary suppressions of a pattern (fixed cells cost nothing)."""
        return float(self.cost[mask & ~self.fixed].sum())

    def full_z(self, zc: np.ndarray) -> np.ndarray:
        """A point over the candidates as a point over all cells."""
        z = self.fixed.astype(float)
        z[self.cand_idx] = zc
        return z

    def prune(self, pattern: np.ndarray, deadline: float | None) -> np.ndarray:
        """``pattern`` without the suppressions it does not need; the cells a pool cut
        pins (:meth:`pinned`) are never tried, nor those whose removal would take the
        cost below :attr:`lower_bound`, and with none left no LP is solved."""
        keep = self.fixed | self.pinned(pattern)
        if not (pattern & ~keep).any():
            return pattern.copy()
        return prune(self.oracle, pattern, keep, self.cost, deadline, self.lp_hint,
                     options=self.options, count=self.lps,
                     slack=self.cost_of(pattern) - self.lower_bound)

    def pinned(self, pattern: np.ndarray) -> np.ndarray:
        """The suppressions of ``pattern`` that a cut of the master's pool needs: the
        pool's rows ``a z >= 1`` have ``a >= 0`` and every protected pattern meets
        them, so when the pattern without cell ``i`` violates one (beyond
        ``pin_margin``), neither it nor any of its subsets is protected, and a prune
        can never publish ``i``."""
        out = np.zeros(self.table.n_cells, bool)
        if self.master is None or self.options.pin_margin is None \
                or not len(self.master.in_model):
            return out
        R = self.master.pool_matrix
        zc = pattern[self.cand_idx].astype(float)
        slack = R @ zc - 1.0 + self.options.pin_margin
        coo = R.tocoo()
        hit = (zc[coo.col] > 0.5) & (coo.data > slack[coo.row])
        out[self.cand_idx[coo.col[hit]]] = True
        self.stats["pinned"] = self.stats.get("pinned", 0) + int(out.sum())
        return out

    def offer(self, pattern: np.ndarray, cost: float | None = None) -> bool:
        """Take ``pattern`` (protected) as the incumbent when it is cheaper."""
        c = self.cost_of(pattern) if cost is None else cost
        if c < self.best_cost:
            self.best, self.best_cost = pattern, c
            return True
        return False

    def closed(self, bound: float) -> bool:
        """The incumbent meets the lower ``bound`` within the target gap: no heuristic
        can find a cheaper pattern worth having (an unchecked start never counts)."""
        return (self.best is not None and self.best is not self.unchecked
                and round_bound(bound, self.integral_costs)
                >= self.best_cost * (1 - self.target) - 1e-9)

    def keep_partial(self, pattern: np.ndarray, unmet) -> None:
        if unmet:
            self.partial = pattern.copy()

    # ---- master and cuts
    def build_master(self) -> None:
        """The master with its static rows (bridgeless rows) and the initial cover rows;
        the support separator when support cuts are asked for (branch-and-cut only)."""
        opt, table = self.options, self.table
        col = np.full(table.n_cells, -1, dtype=np.int64)
        col[self.cand_idx] = np.arange(len(self.cand_idx))
        live = self.cand & ((self.req.up > 0) | (self.req.down > 0))
        static = BridgelessRows(table, col, self.fixed, live) if opt.strong else None
        self.master = Master(self.cost[self.cand_idx], table.n_cells, self.cand_idx,
                             self.fixed, self.mip_gap, opt, static=static,
                             lazy_static=opt.lazy_static and opt.search == "bc")
        cols_l, coef_l, rhs_l, prim_l = initial_cover_rows(table, self.req, self.cand,
                                                           self.fixed)
        try:
            self.n_cover = self.master.add(cols_l, coef_l, rhs_l, primaries=prim_l)
        except Unprotectable as exc:
            raise InfeasibleRulesError(unprotectable_message(self.table, exc.primary)) \
                from None
        self.stats["static_rows"] = self.master.n_static
        self.stats["initial_rows"] = self.n_cover
        self.stats["candidates"] = len(self.cand_idx)
        if opt.support_cuts and opt.strong and opt.search == "bc":
            self.support = SupportSeparator(table, self.req, self.cand, self.fixed)
        self.stats.update(support_cuts=0, support_lps=0, support_seconds=0.0)

    def add_cuts(self, check, point: np.ndarray | None = None) -> int:
        """The oracle's capacity cuts into the master (with their roundings at ``point``)."""
        try:
            n = self.master.add([c.cols for c in check.cuts], [c.coef for c in check.cuts],
                                [c.rhs for c in check.cuts],
                                point=point if self.options.strong else None,
                                primaries=[c.primary for c in check.cuts])
        except Unprotectable as exc:
            raise InfeasibleRulesError(unprotectable_message(self.table, exc.primary)) \
                from None
        self.stats["cuts"] += n
        return n

    def add_covers(self, zc: np.ndarray) -> int:
        """Cover cuts (:func:`~.cuts.cover_cuts`) of the pool cuts near binding at the
        master point ``zc``: the number added."""
        master, opt = self.master, self.options
        if len(master.in_model) == 0:
            return 0
        tc = time.perf_counter()
        P = master.pool_matrix
        near = np.flatnonzero(P @ zc <= 1.0 + opt.cover_row_slack)
        found = cover_cuts(P[near], zc, max_cuts=opt.cover_max_cuts,
                           min_violation=opt.cover_min_violation)
        n = 0
        if found:
            n = master.add([self.cand_idx[c] for _, c in found],
                           [np.ones(len(c)) for _, c in found], [1.0] * len(found),
                           primaries=[int(master.pool_primary[near[r]]) for r, _ in found])
        self.stats["cover_cuts"] = self.stats.get("cover_cuts", 0) + n
        self.stats["cover_seconds"] = self.stats.get("cover_seconds", 0.0) + (
            time.perf_counter() - tc)
        return n

    def add_support(self, zc: np.ndarray, max_lps: int) -> int:
        """Support cuts at the master point ``zc`` (none without a separator)."""
        if self.support is None:
            return 0
        ts = time.perf_counter()
        R, n_lp = self.support.separate(self.full_z(zc), min_z=self.options.support_min_z,
                                        max_lps=max_lps, deadline=self.deadline,
                                        min_violation=self.options.support_min_violation)
        n = self.master.add_static(R)
        self.stats["support_cuts"] += n
        self.stats["support_lps"] += n_lp
        self.stats["support_seconds"] += time.perf_counter() - ts
        return n
