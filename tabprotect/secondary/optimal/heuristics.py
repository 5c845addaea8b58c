"""Upper bounds for the Benders search: the greedy repair of seeds (the primaries alone,
rounded LP points, master patterns), pruning of what a repaired pattern does not need,
the swap search around the incumbent, and the fallback repair when time runs out
without a protected pattern.  Each stays within its share of the work (LPs solved)."""
from __future__ import annotations

import time

import numpy as np

from tabprotect.secondary.optimal.search import Search
from tabprotect.secondary.optimal.start import PROTECTED, UNCHECKED


def initial_incumbent(s: Search, start: np.ndarray | None,
                      seed: np.ndarray | None = None, state: str | None = None) -> None:
    """The given start (unless the oracle finds it unprotected) or the greedy repair from
    ``seed`` (default: the primaries alone), pruned.  The start's check stops at the
    deadline: a start the check did not finish is kept (a start is a protected pattern
    by contract, and protect()'s audit judges the result).  ``state`` is what the
    caller's check found ("protected": not checked again; "unchecked": its check ran out
    of time already, so it is kept unchecked).  The repair can be slow on
    big tables: it gets ``first_repair_share`` of the time, and when unfinished it is
    kept to be continued after the LP phase.  From a seed (an unfinished start) it gets
    ``seed_repair_share`` instead: a protected pattern is what the seed is for."""
    opt = s.options
    th, w0 = time.perf_counter(), s.lps.n
    if start is not None and state in (PROTECTED, UNCHECKED):
        s.best = np.asarray(start, bool) | s.fixed
        s.stats["start_check"] = state
        if state == UNCHECKED:
            s.unchecked = s.best
    elif start is not None:
        chk = s.oracle.check(start, cuts=False, deadline=s.deadline)
        s.stats["lp_solves"] += chk.n_lp
        s.stats["start_check"] = ("protected" if chk.ok else
                                  "unfinished" if not chk.complete else "unprotected")
        if chk.ok or not chk.complete:
            s.best = np.asarray(start, bool) | s.fixed
            if not chk.ok:
                s.unchecked = s.best   # no proof rests on it while it is the incumbent
    if s.best is None:
        share = opt.first_repair_share if seed is None else opt.seed_repair_share
        repair_by = None if s.time_limit is None else s.t0 + share * s.time_limit
        first = s.fixed if seed is None else np.asarray(seed, bool) | s.fixed
        pattern, unmet = s.repair.run(first, deadline=repair_by)
        s.keep_partial(pattern, unmet)
        if unmet:
            s.from_primaries = pattern.copy()
        else:  # the repair only ends without unmet conditions when protected
            s.best = s.prune(pattern, s.share_deadline(opt.prune_share))
    spent(s, th, w0)
    s.best_cost = s.cost_of(s.best) if s.best is not None else np.inf


def within_share(s: Search) -> bool:
    """The heuristics have solved at most ``heuristic_share`` of the LPs so far (or no
    protected pattern is known yet): they only feed the upper bound.  Counted in LPs,
    not seconds, so that the same job takes the same search every run."""
    return s.best is None or s.stats["heuristic_lps"] <= s.options.heuristic_share * s.lps.n


def spent(s: Search, th: float, w0: int) -> None:
    """Book a heuristic's seconds (since ``th``) and LPs (since the count was ``w0``)."""
    s.stats["heuristic_seconds"] += time.perf_counter() - th
    s.stats["heuristic_lps"] += s.lps.n - w0


def improve(s: Search, seed: np.ndarray) -> None:
    """Repair a pattern, drop its redundant suppressions, keep it if cheaper.  The
    heuristic only feeds the upper bound: once an incumbent is known it keeps to
    ``heuristic_share`` of the LPs solved."""
    opt = s.options
    now = time.perf_counter()
    end = s.search_end()
    if end is not None and now >= end:
        return
    if not within_share(s):
        return
    th, w0 = time.perf_counter(), s.lps.n
    pattern, unmet = s.repair.run(seed, deadline=end)
    s.keep_partial(pattern, unmet)
    # pruning costs one oracle check per suppression: only for promising patterns
    if not unmet and s.cost_of(pattern) < opt.prune_within * s.best_cost:
        pattern = s.prune(pattern, s.share_deadline(opt.prune_share))
        s.offer(pattern)
    spent(s, th, w0)


def lp_point_incumbents(s: Search, zlp: np.ndarray, bound: float = 0.0) -> None:
    """Round the LP point at a few thresholds and repair each, until an incumbent meets
    the LP's lower ``bound``.  Without an incumbent, on large tables (see
    ``support_first_min_cells``), the LP's whole support comes first: the repair then
    has the fewest conditions left to fix."""
    least = s.options.support_first_min_cells
    support_first = s.best is None and (least is None or s.table.n_cells >= least)
    thetas = (1e-3, 0.2, 0.5) if support_first else (0.5, 0.2, 1e-3)
    for theta in thetas:
        if s.closed(bound):
            return
        seed = s.fixed.copy()
        seed[s.cand_idx[zlp >= theta]] = True
        improve(s, seed)


def finish_primary_repair(s: Search, bound: float = 0.0) -> None:
    """Continue the unfinished repair from the primaries for ``primary_repair_share`` of
    the limit; the cheaper of it and the incumbent is kept.  Nothing to do once the
    incumbent meets the lower ``bound``."""
    if s.from_primaries is None or (s.deadline is not None and s.search_left() <= 0) \
            or s.closed(bound):
        return
    opt = s.options
    th, w0 = time.perf_counter(), s.lps.n
    by = None if s.time_limit is None else min(
        s.search_end(), th + opt.primary_repair_share * s.time_limit)
    pattern, unmet = s.repair.run(s.from_primaries, deadline=by)
    s.stats["primary_repair_finished"] = not unmet
    if not unmet:
        pattern = s.prune(pattern, s.share_deadline(opt.prune_share))
        c = s.cost_of(pattern)
        s.stats["primary_repair_cost"] = c
        s.offer(pattern, c)
    spent(s, th, w0)


def _swap_budget_spent(s: Search, w0: int) -> bool:
    """With a time limit: past the deadline, or the heuristics' LPs with the swap
    search's so far (since the count was ``w0``) above ``heuristic_share`` of all."""
    return s.deadline is not None and (
        time.perf_counter() >= s.deadline
        or s.stats["heuristic_lps"] + (s.lps.n - w0) > s.options.heuristic_share * s.lps.n)


def _swap_once(s: Search, i: int, ban: np.ndarray, allowed: np.ndarray) -> bool:
    """Publish the secondary ``i`` of the incumbent again, forbid it, repair and prune;
    True when that gives a cheaper incumbent."""
    opt = s.options
    seed = s.best.copy()
    seed[i] = False
    ban[i] = True
    s.repair.candidates = allowed & ~ban
    pattern, unmet = s.repair.run(seed, deadline=s.deadline)
    s.repair.candidates = allowed
    ban[i] = False
    s.stats["swaps"] = s.stats.get("swaps", 0) + 1
    if unmet or s.cost_of(pattern) >= opt.prune_within * s.best_cost:
        return False
    pattern = s.prune(pattern, s.deadline)
    c = s.cost_of(pattern)
    if c < s.best_cost - 1e-9 * max(1.0, s.best_cost):
        s.best, s.best_cost = pattern, c
        s.stats["swap_improvements"] = s.stats.get("swap_improvements", 0) + 1
        s.report(f"swap search: incumbent {s.best_cost:.6g}", 0.5)
        return True
    return False


def local_search(s: Search, bound: float = 0.0) -> None:
    """Swap search around the incumbent: publish one secondary again (dearest first),
    forbid it, repair what that breaks with the other cells and drop what the result
    does not need; a cheaper protected pattern becomes the incumbent and is searched in
    turn.  Bounded like every heuristic by its share of the LPs; none once the
    incumbent meets the lower ``bound``."""
    if not s.options.local_search or s.best is None or s.closed(bound):
        return
    th, w0 = time.perf_counter(), s.lps.n
    ban = np.zeros(s.table.n_cells, bool)
    allowed = s.repair.candidates
    try:
        while s.best.tobytes() not in s.searched:
            s.searched.add(s.best.tobytes())
            secs = np.flatnonzero(s.best & ~s.fixed)
            for i in secs[np.argsort(-s.cost[secs], kind="stable")]:
                if _swap_budget_spent(s, w0):
                    return
                if _swap_once(s, i, ban, allowed):
                    break  # search around the new incumbent
    finally:
        s.repair.candidates = allowed
        spent(s, th, w0)


def fallback(s: Search, zlp: np.ndarray | None) -> None:
    """No protected pattern within the time: the greedy repair in the reserve the search
    left it, continuing the repair that got furthest (or from the LP's support: fewer
    conditions to fix).  What it leaves unmet, protect()'s audit-and-repair finishes
    (the result is unproven either way and always audited)."""
    overrun = None if s.deadline is None else max(
        s.deadline, time.perf_counter() + s.options.fallback_min_seconds)
    seed = s.fixed.copy()
    if s.partial is not None:
        seed = s.partial | s.fixed
    elif zlp is not None:
        seed[s.cand_idx[zlp >= 1e-3]] = True
    pattern, unmet = s.repair.run(seed, deadline=overrun)
    s.stats["fallback_unmet"] = len(unmet)
    s.best = pattern
    s.best_cost = s.cost_of(pattern)
