"""The optimal method's entry point, registered as ``protect(method="optimal")``."""
from __future__ import annotations

import time
from typing import Callable

import numpy as np
import scipy.sparse as sp

from tabprotect.secondary.base import MethodOutcome, register_method
from tabprotect.secondary.candidates import candidate_cells
from tabprotect.secondary.optimal.benders import benders
from tabprotect.secondary.optimal.compact import compact
from tabprotect.secondary.optimal.options import OptimalOptions
from tabprotect.secondary.optimal.settle import settle
from tabprotect.secondary.optimal.start import UNCHECKED, UNFINISHED, gauss_start
from tabprotect.secondary.attack_requirements import Requirements

#: keyword arguments that stand for the OptimalOptions field of the same name
_OPTION_KEYWORDS = ("engine", "search", "support_cuts")


def _engine(table, req: Requirements, cand: np.ndarray, opt: OptimalOptions) -> str:
    """The engine "auto" picks: compact for small tables with finite deviation ranges."""
    if opt.engine != "auto":
        return opt.engine
    movable = (cand | np.isin(table.status, ("U", "M"))) & ((req.up > 0) | (req.down > 0))
    finite = np.isfinite(req.up[movable]).all() and np.isfinite(req.down[movable]).all()
    size = 2 * len(req.primary) * int(movable.sum())
    return "compact" if finite and size <= opt.compact_limit else "benders"


@register_method("optimal")
def optimal(table, cost: np.ndarray, *, time_limit: float | None = None,
            progress: Callable[[str, float], None] | None = None, singleton: bool = True,
            mip_gap: float | None = None, empty: str = "publish",
            start: np.ndarray | None = None, options: OptimalOptions | None = None,
            engine: str | None = None, search: str | None = None,
            support_cuts: bool | None = None) -> MethodOutcome:
    """Minimum-cost secondary suppression (exact; proven optimal unless time runs out).

    Parameters
    ----------
    options : the search settings (:class:`OptimalOptions`; default settings when None)
    engine, search, support_cuts : shorthands for the fields of ``options`` of the same
        name (``engine``: ``"compact"``, ``"benders"`` or ``"auto"``; ``search``:
        ``"bc"`` or ``"milp"``)
    singleton : protect against single-contributor attackers as well
    mip_gap : relative gap at which the search may stop (default
        ``options.default_mip_gap``; 0 for an exact optimum)
    empty : ``"publish"`` (empty cells are never secondary suppressions) or ``"suppress"``
    start : a protected pattern (bool mask) to start from (warm start)

    The settings used are in ``details["options"]`` of the result.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> st = t.status.copy(); st[4] = "U"
    >>> t = t.replace(status=st, upl=np.where(st == "U", 1.0, 0.0))
    >>> out = optimal(t, np.ones(9))
    >>> int((out.status == "M").sum()), out.proven_optimal
    (3, True)
    """
    opt = options if options is not None else OptimalOptions()
    given = {k: v for k, v in (("engine", engine), ("search", search),
                               ("support_cuts", support_cuts)) if v is not None}
    if given:
        opt = opt.replace(**given)
    t0 = time.perf_counter()
    req = Requirements.from_table(table, singleton=singleton)
    cand = candidate_cells(table, empty)
    settled = None
    if opt.settle and len(req.primary) >= opt.settle_min_primaries:
        settled = settle(table, req, np.isin(table.status, ("U", "M")),
                         deadline=None if time_limit is None
                         else t0 + opt.settle_share * time_limit, options=opt)
        req = settled.req
        if time_limit is not None:
            time_limit = max(0.0, time_limit - (time.perf_counter() - t0))
    if len(req.primary) == 0:
        out = _nothing_to_do(table)
    else:
        out = _run_engine(table, cost, req, cand, opt, singleton=singleton,
                          time_limit=time_limit, mip_gap=mip_gap, progress=progress,
                          start=start)
    if settled is not None:
        out.details.update(settled.as_details())
        out.moves = _stacked(settled.moves, out.moves)
    out.details["options"] = opt.as_dict()
    return out


def _stacked(*parts):
    """The method's candidate moves (rows over the table's cells) in one matrix, or None:
    the witnesses that settled primaries and those that certified the result."""
    parts = [m for m in parts if m is not None and m.shape[0]]
    return sp.vstack(parts, format="csr") if parts else None


def _run_engine(table, cost, req, cand, opt: OptimalOptions, *, singleton: bool,
                time_limit, mip_gap, progress, start) -> MethodOutcome:
    """The search by the engine "auto" picks (or the one asked for)."""
    engine_used = _engine(table, req, cand, opt)
    if engine_used == "compact":
        out = compact(table, cost, req, cand, time_limit=time_limit, mip_gap=mip_gap,
                      progress=progress)
    else:
        out = _benders_with_start(table, cost, req, cand, opt, singleton=singleton,
                                  time_limit=time_limit, mip_gap=mip_gap,
                                  progress=progress, start=start)
    return out


def _nothing_to_do(table) -> MethodOutcome:
    """Every primary is protected by the unpublished cells alone: no secondary is the
    optimum (cost 0, proven)."""
    return MethodOutcome(status=table.status.copy(), proven_optimal=True,
                         solver_status="optimal", mip_gap=0.0,
                         details={"search": "none: the unpublished cells protect every "
                                            "primary", "lower_bound": 0.0, "cost": 0.0})


def _uses_gauss_start(req: Requirements, cand: np.ndarray, opt: OptimalOptions) -> bool:
    """Large tables (and, with ``gauss_start_min_primaries`` set, tables with many
    primaries) start from gauss: the repair from the primaries alone slows with every
    primary and cell, gauss barely does."""
    least = opt.gauss_start_min_primaries
    return (int(cand.sum()) >= opt.gauss_start_min_candidates
            or (least is not None and len(req.primary) >= least))


def _start_swaps(req: Requirements, opt: OptimalOptions) -> bool:
    """Whether the gauss start runs gauss's swap pass: on tables with many primaries,
    where the start is often the result; with few, the search after it finds cheaper
    patterns than the swaps in less time than they take."""
    least = opt.gauss_start_swaps_min_primaries
    return least is None or len(req.primary) >= least


def _benders_with_start(table, cost, req, cand, opt: OptimalOptions, *, singleton: bool,
                        time_limit, mip_gap, progress, start) -> MethodOutcome:
    """Benders, on large tables (no start given) from the gauss start, which gets
    ``gauss_start_share`` of the limit; the search has what the start leaves.

    ``time_limit`` bounds the whole call: the search's limit is the time left after the
    start, and with less than ``min_search_share`` of it left the start is the result
    (setting up the search on a table where gauss took most of the limit costs seconds
    and finds nothing better in them), unless it is not known to be protected and a
    short search finds a protected pattern (:func:`_short_search`).  The result
    is never costlier than a start the oracle does not find unprotected (see
    :func:`~tabprotect.secondary.optimal.heuristics.initial_incumbent`).
    """
    t0 = time.perf_counter()
    end = None if time_limit is None else t0 + time_limit
    started = found = seed = None
    state = None
    swaps = _start_swaps(req, opt)
    if start is None and _uses_gauss_start(req, cand, opt):
        found = gauss_start(table, cost, req, cand, singleton=singleton,
                            time_limit=None if time_limit is None
                            else opt.gauss_start_share * time_limit,
                            widths_share=opt.gauss_start_widths_share,
                            swaps=swaps, options=opt)
        started = time.perf_counter() - t0
        if found is not None:
            # a finished start is the first incumbent (checked or not); an unfinished
            # one the repair's seed
            start, seed = ((None, found.pattern) if found.state == UNFINISHED
                           else (found.pattern, None))
            state = found.state
    left = None if end is None else max(0.0, end - time.perf_counter())
    kept = start if start is not None else seed
    if kept is not None and left is not None and left <= opt.min_search_share * time_limit:
        # a protected start is the result; on a table below the large-table size an
        # unfinished or unchecked one only when the short search below finds no
        # protected pattern (protect()'s audit and repair then complete it)
        out = _start_outcome(table, kept)
        if state in (UNFINISHED, UNCHECKED) and \
                int(cand.sum()) < opt.gauss_start_min_candidates:
            out = _short_search(table, cost, req, cand, opt, out, kept=kept, state=state,
                                left=left, mip_gap=mip_gap, progress=progress)
    else:
        # the start, unless the oracle finds it unprotected, is the first incumbent and
        # only a cheaper protected pattern replaces it
        out = benders(table, cost, req, cand, time_limit=left, mip_gap=mip_gap,
                      progress=progress, start=start, seed=seed, options=opt,
                      start_state=state)
    if started is not None:
        out.details["gauss_start_seconds"] = round(started, 3)
        out.details["gauss_start_cells"] = int(start.sum()) if start is not None else 0
        out.details["gauss_seed_cells"] = int(seed.sum()) if seed is not None else 0
        out.details["gauss_start_state"] = state
        out.details["gauss_start_swaps"] = swaps
    if start is not None:
        out.details["start_cost"] = _secondary_cost(table, cost, np.asarray(start, bool))
    return out


def _short_search(table, cost, req, cand, opt: OptimalOptions, kept_outcome: MethodOutcome,
                  *, kept: np.ndarray, state: str, left: float, mip_gap, progress
                  ) -> MethodOutcome:
    """A start not known to be protected and no time left: a search of at least
    ``fallback_min_seconds`` whose pattern replaces the start when it is protected.

    An unfinished start keeps every cell gauss did not examine suppressed (all of them
    when gauss stopped before its first offer: on a loaded machine the whole table, far
    dearer than a repaired pattern, and too large for the audit's share of the time);
    the search repairs from the primaries alone.  An unchecked start (gauss finished,
    its check did not) may leave primaries short; the search checks it first and keeps
    it unless the check finds it short.  Kept when the search's last repair leaves
    conditions unmet.  Only below ``gauss_start_min_candidates`` cells, where the
    search's setup and repair take a fraction of a second."""
    searched = benders(table, cost, req, cand, mip_gap=mip_gap, progress=progress,
                       time_limit=max(left, opt.fallback_min_seconds), options=opt,
                       start=kept if state == UNCHECKED else None)
    if searched.details.get("fallback_unmet", 0):
        kept_outcome.details["short_search_unmet"] = searched.details["fallback_unmet"]
        return kept_outcome
    searched.details["short_search"] = (f"the start was {state} and too little time was "
                                        f"left: a search of at least "
                                        f"{opt.fallback_min_seconds:g} s")
    return searched


def _secondary_cost(table, cost: np.ndarray, pattern: np.ndarray) -> float:
    """What a pattern's secondary suppressions cost (cells already unpublished are free)."""
    return float(cost[pattern & ~np.isin(table.status, ("U", "M"))].sum())


def _start_outcome(table, start: np.ndarray) -> MethodOutcome:
    """The start as the result when too little time is left for the search: unproven,
    no bound (gap 1), time ran out."""
    status = table.status.copy()
    status[np.asarray(start, bool) & ~np.isin(status, ("U", "M"))] = "M"
    return MethodOutcome(status=status, proven_optimal=False, solver_status="time_limit",
                         mip_gap=1.0,
                         details={"search": "none: too little time left after the start",
                                  "lower_bound": 0.0})
