"""``protect``: the one entry point for every secondary-suppression method.

It validates the table, runs the registered method, then audits the pattern on the full
table (with the single-contributor attacker) and repairs any shortfall by further
suppression until the audit passes.  Nothing is reported safe that has not passed.
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd
import scipy.sparse as sp

from tabprotect.audit import AuditResult, audit, rescale_audit
from tabprotect.budget import Budget
from tabprotect.errors import InfeasibleRulesError, InputError
from tabprotect.model.scale import scaled_table, value_scale
from tabprotect.model.table import Table
from tabprotect.results import publication_frame, published_table
from tabprotect.model.relations import linked_components
from tabprotect.model.structure import product_structure
from tabprotect.secondary.base import (METHODS, MethodOutcome, applied_options,
                                       cost_vector, method_options)
from tabprotect.secondary.candidates import candidate_cells
from tabprotect.secondary.cubes import cube_repair
from tabprotect.secondary.hypercube import hypercube
from tabprotect.secondary.greedy import greedy_repair
from tabprotect.secondary.repair import GreedyRepair, Requirements
from tabprotect.parallel import map_runs, use_executor
from tabprotect.parallel_dask import as_executor

#: rounds of audit-and-repair before giving up (each round suppresses more)
MAX_REPAIR_ROUNDS = 6

#: from this many cells on, protect() audits in verdict mode (no interval per suppressed
#: cell), repairs locally (deviation LPs on each short primary's sub-tables instead of the
#: whole table) and skips the up-front all-suppressed feasibility check (one LP per
#: primary on the whole table); the final audit still judges the pattern
LARGE_TABLE = 50_000
#: the up-front "protectable with everything suppressed" check (a verdict-mode audit of
#: the all-suppressed pattern) runs only while primaries x candidate cells stays below this
#: (TABLE3, 517 x 1,880: 0.2 s; 10k-3d, 1,483 x ~9,000: 10.8 s, most of protect()'s time
#: with hypercube)
FEASIBILITY_CHECK_MAX_WORK = 5_000_000
#: audit_mode="auto" below LARGE_TABLE: intervals (every suppressed cell's interval,
#: shown by ``to_frame``) while the sum of the squared component sizes of the pattern
#: stays below this, else verdict
INTERVAL_AUDIT_MAX_WORK = 250_000
#: ... and includes the single-contributor attackers while attackers x candidate cells
#: stays below this: each attacker costs a verdict pass over the one component of the
#: all-suppressed pattern (a 2,197-cell count table, ~250 attackers x ~2,100 cells, ran
#: into the check's time limit without deciding); past it the final audit judges them
FEASIBILITY_SINGLETON_MAX_WORK = 200_000
#: seconds for that check when protect() has no time limit
FEASIBILITY_CHECK_SECONDS = 120.0
#: shares of the call's budget (``time_limit``): the up-front feasibility check gets
#: this share of it (past it the final audit judges) ...
FEASIBILITY_SHARE = 0.2
#: ... the method this share of what is left then (the audit and repair get the rest,
#: and whatever the method did not use) ...
METHOD_SHARE = 0.75
#: ... and from LARGE_TABLE cells this share: the verdict audit of a 100k-cell pattern
#: takes 15-60 s, its local repair more when the method left primaries short
METHOD_SHARE_LARGE = 0.6
#: protect()'s own settings (every other keyword is an option of the method)
PROTECT_SETTINGS = ("cost", "time_limit", "options", "progress", "singleton", "repair",
                    "cost_column", "empty", "audit_mode", "audit_workers", "executor")
#: the least time limit an audit round gets once the budget is spent: the overrun
#: ``protect`` allows past ``time_limit`` (an audit stopped by its limit fails)
AUDIT_FLOOR_SECONDS = 0.25


@dataclass
class ProtectResult:
    """A protected table and everything needed to trust it (the protocol of
    :mod:`tabprotect.results`).

    Attributes
    ----------
    confidential_table : the input table (true values) with the final status (U
        primary, M secondary): for audits and further processing, never for publication
    table : (property) the table as published: suppressed cells without value,
        contributor count or contributions (:func:`tabprotect.results.published_table`)
    method : the method that was run
    params : the settings applied: protect()'s own and every field of the method's
        options (defaults included); nothing that was not applied
    cost : total suppression cost of the secondary cells (the cost function's units)
    proven_optimal : the method proved the pattern has minimum cost (and no repair was
        needed afterwards)
    mip_gap : relative gap to the best bound (optimal method), None when not known
    solver_status, solver : the method's status and details (iterations, cuts, ...)
    repaired : cells the audit-and-repair loop added after the method
    audit : the final :class:`~tabprotect.audit.AuditResult` (the judge)
    seconds : wall-clock time of the whole call
    stage_seconds : wall-clock seconds per stage, in order (``feasibility check`` when
        the up-front check ran, ``method``, ``cube pass``, ``audit 1``, ``repair 1
        cubes``, ``repair 1 LPs``, ``audit 2``, ..., ``final audit``)
    """

    confidential_table: Table
    method: str
    params: dict[str, Any]
    cost: float
    proven_optimal: bool
    mip_gap: float | None
    solver_status: str
    solver: dict[str, Any]
    repaired: np.ndarray
    audit: AuditResult
    seconds: float
    method_seconds: float = 0.0
    audit_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    stage_seconds: dict[str, float] = field(default_factory=dict)

    @property
    def table(self) -> Table:
        """The published table (suppressed values, counts and contributions are NaN)."""
        return published_table(self.confidential_table)

    @property
    def status(self) -> np.ndarray:
        return self.confidential_table.status

    @property
    def passed(self) -> bool:
        """The final pattern passed the full-table audit."""
        return self.audit.passed

    @property
    def n_primary(self) -> int:
        return int((self.status == "U").sum())

    @property
    def n_secondary(self) -> int:
        return int((self.status == "M").sum())

    def summary(self) -> dict[str, Any]:
        """Counts, cost, value and share suppressed, verdict and times (for reports)."""
        t = self.confidential_table
        sec = t.status == "M"
        sup = t.suppressed
        total_value = float(np.abs(t.value).sum())
        return {
            "method": self.method,
            "cells": t.n_cells,
            "primary": self.n_primary,
            "secondary": self.n_secondary,
            "cost": self.cost,
            "value_secondary": float(np.abs(t.value[sec]).sum()),
            "value_suppressed": float(np.abs(t.value[sup]).sum()),
            "share_value_suppressed": (float(np.abs(t.value[sup]).sum()) / total_value
                                       if total_value > 0 else 0.0),
            "repaired": int(len(self.repaired)),
            "proven_optimal": self.proven_optimal,
            "mip_gap": self.mip_gap,
            "solver_status": self.solver_status,
            "audit": "PASSED" if self.passed else "FAILED",
            "unprotected_primary": int((~self.audit.protected).sum()),
            "method_seconds": round(self.method_seconds, 3),
            "audit_seconds": round(self.audit_seconds, 3),
            "seconds": round(self.seconds, 3),
        }

    def published(self) -> pd.DataFrame:
        """The publishable frame: code columns, ``value`` (NaN where suppressed) and
        ``status``."""
        return publication_frame(self.table)

    def to_frame(self, confidential: bool = False) -> pd.DataFrame:
        """One row per cell: the published columns (``value`` and ``freq`` blank where
        suppressed, ``status``), ``published`` (False for suppressed cells) and the
        intruder's interval ``lower``/``upper`` of every suppressed cell; after a verdict
        audit no interval but the bounds ``min_at_least, min_at_most, max_at_least,
        max_at_most`` on its ends (:class:`~tabprotect.audit.VerdictAudit`).

        ``confidential=True`` adds ``confidential_value`` and ``confidential_freq``: the
        true values of every cell (not for publication).
        """
        t = self.confidential_table
        out = self.table.to_frame(("value", "freq", "status"))
        sup = t.suppressed
        # an interval audit's ``lower, upper``; a verdict audit's bounds on them
        out["published"] = ~sup
        for name, col in self.audit.columns().items():
            out[name] = np.where(sup, col, np.nan)
        if confidential:
            out["confidential_value"] = t.value
            out["confidential_freq"] = t.freq
        return out


#: methods whose patterns only avoid exact disclosure (no interval protection): on large
#: product tables protect() gives their primaries leaf cubes before the first audit
#: (:func:`~tabprotect.secondary.cubes.cube_repair`), so the audit does not have to
#: prove tens of thousands of shortfalls one by one
INTERVAL_BLIND_METHODS = ("gauss",)
#: "auto": the leaf-cube pass before the first audit for those methods on product tables
#: from PRE_REPAIR_MIN_CELLS cells on; "off": never (the audit's shortfalls are repaired
#: afterwards in any case)
PRE_REPAIR = "auto"
#: below this the first audit proves gauss' shortfalls quickly enough, and the pass
#: costs more than the repair of the proven shortfalls (100k-3d: 26.1M against 23.9M,
#: same time); on 1m-3d the screen of the raw gauss pattern took 272 s (48,738 short)
PRE_REPAIR_MIN_CELLS = 500_000
#: from this many dimensions the pass before the first audit is the hypercube method run
#: on the pattern (a cube in every sub-table of each primary, requirements carried into
#: the corners' other sub-tables) instead of leaf cubes: on the 1M-cell 4-D table the
#: leaf and chain cubes leave ~32,000 primaries that the audit's LPs must prove or
#: repair one by one (more than 30 minutes), the hypercube pass ~450
HYPERCUBE_PASS_MIN_DIMS = 4

#: the gauss cube pass searches cubes in ``audit_workers`` processes from this many
#: primaries without a cube yet (1m-3d: ~70,000; the search is a Python loop per primary)
CUBE_PASS_PARALLEL_MIN = 5_000

#: from this many cells (product tables, methods other than INTERVAL_BLIND_METHODS) the
#: cubes the pattern already has go to the first audit as moves
CERTIFY_PASS_MIN_CELLS = 500_000

#: from PRE_REPAIR_MIN_CELLS cells on, the repair's deviation LPs first try regions of
#: about this many suppressed cells around the primary (plus the published cells at their
#: edge): on the 1M-cell 4-D hypercube pattern 0.2-1 s per primary, where the sub-table
#: neighbourhoods needed 3-38 s (and whole-table LPs where they failed)
#: (10,000: a primary that no 5,000 region serves -- on 1m-4d one protected by a long move
#: -- went on to the sub-table neighbourhoods of radius 2, 46,000 cells, 65 s; the
#: 10,000 region serves it in 6 s)
REPAIR_BLOCK_SIZES = (2_000, 5_000, 10_000)



def protect(table: Table, method: str = "optimal", cost: str | np.ndarray = "value",
            time_limit: float | None = None, *, options: Any = None,
            progress: Callable[[str, float], None] | None = None, singleton: bool = True,
            repair: bool = True, cost_column: str | None = None, empty: str = "publish",
            audit_mode: str = "auto", audit_workers: int = 1, executor: Any = None,
            **keywords) -> ProtectResult:
    """Secondary suppression with audit and repair.

    Parameters
    ----------
    table : primary cells have status ``U`` and protection levels ``upl/lpl/spl``; ``P``
        cells are never suppressed; ``M`` cells already suppressed stay suppressed
    method : a registered method (``METHODS``): ``"optimal"``, ...
    cost : ``"unity"``, ``"freq"``, ``"value"``, ``"log"``, ``"column"`` or an array
    time_limit : wall-clock seconds for the whole call (:class:`~tabprotect.budget.Budget`):
        the feasibility check gets :data:`FEASIBILITY_SHARE` of it, the method
        :data:`METHOD_SHARE` of what is left (:data:`METHOD_SHARE_LARGE` from
        :data:`LARGE_TABLE` cells), the audit and repair the rest; the call ends within
        about ``time_limit`` plus a second or two.  An audit stopped by the budget fails
        (the pattern is never reported safe unchecked).  None: no limit
    options : the method's settings: an instance of its options class
        (``METHODS[method].options``, e.g. :class:`~tabprotect.secondary.OptimalOptions`)
        or a dict of its fields; unknown keys are an :class:`InputError` that lists the
        valid ones
    progress : ``progress(message, fraction)``
    singleton : protect against (and audit with) single-contributor attackers
    repair : repair audit shortfalls by further suppression (otherwise only report them)
    cost_column : the extra array used by ``cost="column"``
    empty : ``"publish"`` (default: empty cells are never secondary suppressions) or
        ``"suppress"``
    audit_mode : ``"intervals"`` (every suppressed cell's interval), ``"verdict"`` (only
        whether each primary is protected; far faster on large patterns) or ``"auto"``
        (verdict from :data:`LARGE_TABLE` cells on, or when the pattern's components
        are large: :data:`INTERVAL_AUDIT_MAX_WORK`)
    audit_workers : processes for the audit's independent components and for the
        large-table repair's deviation LPs
    executor : where the parallel work goes instead of local processes: a
        ``dask.distributed.Client`` or a :class:`~tabprotect.parallel.TaskExecutor`
        (docs/scale-out.md); ``audit_workers`` and an unset ``workers`` option of the
        method become the executor's worker count.  Same result as in one process
    **keywords : fields of the method's options given one by one (e.g.
        ``engine="benders"``), checked like ``options`` and applied on top of it

    Raises
    ------
    InfeasibleRulesError : a primary cell cannot be protected even with every cell that
        may be suppressed suppressed (its name is in the message)

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> st = t.status.copy(); st[4] = "U"
    >>> t = t.replace(status=st, upl=np.where(st == "U", 1.0, 0.0))
    >>> res = protect(t, cost="unity")
    >>> res.n_secondary, res.passed, res.proven_optimal
    (3, True, True)
    """
    if executor is not None:
        engine = as_executor(executor)
        if method in METHODS and options is None and "workers" not in keywords \
                and "workers" in METHODS[method].valid_keys:
            keywords["workers"] = engine.workers
        with use_executor(engine):
            return protect(table, method, cost, time_limit, options=options,
                           progress=progress, singleton=singleton, repair=repair,
                           cost_column=cost_column, empty=empty, audit_mode=audit_mode,
                           audit_workers=max(audit_workers, engine.workers), **keywords)
    t0 = time.perf_counter()
    budget = Budget(time_limit)
    if method not in METHODS:
        raise InputError(f"unknown method '{method}' (available: {', '.join(sorted(METHODS))})")
    spec = METHODS[method]
    opts = method_options(method, options, also=PROTECT_SETTINGS, **keywords)
    if not isinstance(table, Table):
        raise InputError("protect() needs a tabprotect Table")
    if empty not in ("publish", "suppress"):
        raise InputError(f"empty must be 'publish' or 'suppress', not {empty!r}")
    params = {"cost": cost if isinstance(cost, str) else "array", "time_limit": time_limit,
              "singleton": singleton, "repair": repair, "empty": empty,
              "audit_workers": audit_workers}
    if cost_column is not None:
        params["cost_column"] = cost_column
    params.update(applied_options(opts))
    c = cost_vector(table, cost, column=cost_column)
    scale = value_scale(table)
    if scale != 1.0:
        return _protect_scaled(table, scale, c, params, method=method,
                               time_limit=time_limit, options=options, progress=progress,
                               singleton=singleton, repair=repair, empty=empty,
                               audit_mode=audit_mode, audit_workers=audit_workers,
                               **keywords)
    notes: list[str] = []

    if not (table.status == "U").any():
        res = audit(table, singleton=singleton, time_limit=budget.limit(AUDIT_FLOOR_SECONDS))
        return ProtectResult(confidential_table=table, method=method, params=params,
                             cost=float(c[table.status == "M"].sum()), proven_optimal=True,
                             mip_gap=0.0, solver_status="nothing to do", solver={},
                             repaired=np.zeros(0, np.int64), audit=res,
                             seconds=time.perf_counter() - t0, audit_seconds=res.runtime,
                             notes=["no primary cells: nothing to protect"])

    large = table.n_cells >= LARGE_TABLE
    mode = audit_mode if audit_mode != "auto" else ("verdict" if large else "intervals")
    if mode not in ("intervals", "verdict"):
        raise InputError(f"audit_mode must be 'intervals', 'verdict' or 'auto', not "
                         f"'{audit_mode}'")
    params["audit_mode"] = mode
    req = Requirements.from_table(table, singleton=singleton)
    cand = candidate_cells(table, empty)
    n_primary = int((table.status == "U").sum())
    feasibility_seconds = None
    if large:
        notes.append(f"{table.n_cells} cells: up-front feasibility check skipped (the "
                     f"final audit judges); local repair; audit mode '{mode}'")
    elif n_primary * int(cand.sum()) > FEASIBILITY_CHECK_MAX_WORK:
        # one whole-table attacker LP per primary: on a 10k-cell table with 1,500
        # primaries that took more than 10 minutes; the final audit judges instead
        notes.append(f"{n_primary} primaries x {int(cand.sum())} candidate cells: up-front "
                     f"feasibility check skipped (the final audit judges)")
    else:
        # a share of the budget: past it, the final audit judges
        check_limit = FEASIBILITY_CHECK_SECONDS if time_limit is None else \
            budget.share(FEASIBILITY_SHARE).remaining()
        tf = time.perf_counter()
        everything = cand | table.suppressed
        attackers = int((everything & (table.freq == 1)).sum()) if singleton else 0
        check_singleton = attackers * int(everything.sum()) <= FEASIBILITY_SINGLETON_MAX_WORK
        if not check_singleton:
            notes.append(f"up-front feasibility check against the outside intruder only: "
                         f"{attackers} single-contributor attackers x "
                         f"{int(everything.sum())} cells (the final audit judges them)")
        if not _check_feasible(table, cand, singleton and check_singleton, check_limit):
            notes.append(f"up-front feasibility check stopped at its share of the time "
                         f"limit ({FEASIBILITY_SHARE:.0%}; the final audit judges)")
        feasibility_seconds = time.perf_counter() - tf

    tm = time.perf_counter()
    run_table, source_cell = table, None
    if spec.capabilities.needs_product_structure and not table.dimensions:
        # a JJ-style table is often a product written out cell by cell: recover it
        try:
            run_table = product_structure(table)
        except InputError as err:
            raise InputError(f"method '{method}' needs a product table (dimensions with "
                             f"hierarchies) and none could be recovered from this general "
                             f"table's relations: {err}; use 'gauss', 'greedy' or 'optimal'"
                             ) from None
        source_cell = run_table.extra["source_cell"]
        notes.append(f"general table read as a product of shape {run_table.shape} "
                     f"recovered from its relations")
    # the method's share of the budget (a method checks it inside or hands it to its
    # solver as the time limit); the audit and repair get what it leaves
    share = budget.share(METHOD_SHARE_LARGE if large else METHOD_SHARE)
    outcome: MethodOutcome = spec.call(
        run_table, c if source_cell is None else c[source_cell], opts,
        time_limit=share.limit(AUDIT_FLOOR_SECONDS), progress=progress,
        singleton=singleton, empty=empty)
    method_seconds = time.perf_counter() - tm
    stages: dict[str, float] = {} if feasibility_seconds is None else \
        {"feasibility check": feasibility_seconds}
    stages["method"] = method_seconds
    lap = [time.perf_counter()]

    def stage(name: str) -> None:
        now = time.perf_counter()
        stages[name] = stages.get(name, 0.0) + now - lap[0]
        lap[0] = now
    status = np.asarray(outcome.status).astype("<U1")
    if source_cell is not None:
        in_source_order = np.empty_like(status)
        in_source_order[source_cell] = status
        status = in_source_order
    _check_outcome(table, status)
    if audit_mode == "auto" and mode == "intervals":
        # one LP pair per suppressed cell, each over its whole component: past this work
        # the verdict decides in a fraction of the time (TABLE3's hypercube pattern,
        # ~1,000 cells in one component: intervals 60 s per round, verdict 1 s)
        work = sum(len(comp) ** 2 for comp in
                   linked_components(table.relations, np.isin(status, ("U", "M"))))
        if work > INTERVAL_AUDIT_MAX_WORK:
            mode = "verdict"
            params["audit_mode"] = mode
            notes.append(f"audit in verdict mode: the interval audit's work estimate "
                         f"(sum of squared component sizes, {work:,}) exceeds "
                         f"{INTERVAL_AUDIT_MAX_WORK:,}")

    # ---- audit and repair, within what is left of the budget
    ta = time.perf_counter()
    deadline = budget.deadline

    def left() -> float | None:
        return budget.limit(AUDIT_FLOOR_SECONDS)

    # large tables: the repair rounds are judged by screening audits (certify what the
    # witnesses can; what they cannot counts as short without the whole-table LPs that
    # would prove it); a pass is a real pass, and a pattern that never passes the screen
    # gets a full verdict audit at the end
    screening = large and mode == "verdict"

    # the cubes of cube_repair, handed to the audit as candidate moves: it checks each
    # one (a move of unpublished cells that keeps every relation) and certifies the
    # primaries they move without an LP
    moves: list[sp.csr_matrix] = []
    stacked: dict = {"parts": 0, "matrix": None}

    def all_moves() -> sp.csr_matrix | None:
        # stacked once per repair round, not once per audit
        if len(moves) != stacked["parts"]:
            stacked["parts"], stacked["matrix"] = len(moves), sp.vstack(moves, format="csr")
        return stacked["matrix"]

    def judge(t: Table, final: bool = False,
              previous: AuditResult | None = None) -> AuditResult:
        # repair only adds suppressions, so what a previous round's audit found
        # protected stays protected: that audit is passed on and those primaries cost
        # no LP (verdict and screen modes)
        def components_done(done: int, total: int) -> None:
            progress(f"audit: {done} of {total} components", done / max(total, 1))

        return audit(t, singleton=singleton, time_limit=left(),
                     mode="screen" if screening and not final else mode,
                     workers=audit_workers,
                     previous=previous if mode != "intervals" else None,
                     moves=all_moves(),
                     progress=None if progress is None else components_done)

    protected_table = table.replace(status=status)
    repaired: list[np.ndarray] = []
    view = None
    if repair and PRE_REPAIR == "auto" and method in INTERVAL_BLIND_METHODS:
        if large and table.dimensions and table.n_cells >= PRE_REPAIR_MIN_CELLS:
            view = table
            if len(table.dimensions) >= HYPERCUBE_PASS_MIN_DIMS:
                # cubes in every sub-table with carried requirements: the pattern then
                # reads like a hypercube pattern, and goes on as one (certify pass below)
                pre = _hypercube_pass(table, status, c, singleton, left(),
                                      workers=audit_workers)
                if len(pre):
                    repaired.append(pre)
                    status = status.copy()
                    status[pre] = "M"
                    protected_table = table.replace(status=status)
                notes.append(f"hypercube pass before the audit added {len(pre)} cell(s)")
                stage("hypercube pass")
                view = None
        elif not large and mode == "verdict":
            # a small table whose pattern has components too large for the interval
            # audit (TABLE3): without cubes the verdict audit must prove each shortfall
            # with whole-component LPs and the repair needs whole-table LPs; a general
            # table gets them on its recovered product structure
            view = _product_view(table, run_table)
    if (view is None and repair and large and table.dimensions
            and table.n_cells >= CERTIFY_PASS_MIN_CELLS):
        # the leaf cubes a pattern already has (all corners suppressed): handed to the
        # audit as moves, they certify most primaries of a hypercube pattern without an
        # LP (1m-4d: 112,592 of 145,456; chain cubes settle one more, for half the time)
        _, _, found = cube_repair(protected_table, c, np.flatnonzero(status == "U"),
                                  singleton=singleton, time_limit=left(), chains=False,
                                  certify_only=True, return_moves=True)
        moves.append(found)
        notes.append(f"{found.shape[0]} cube move(s) of the pattern handed to the audit")
        stage("certify pass")
    if view is not None:
        # a leaf cube (a move of the whole table) per primary that has none yet: cheap,
        # no LP, and it leaves the first audit few shortfalls to prove
        pre_status, pre_moves = _cube_pass(view, table, status, c, singleton, left(),
                                           workers=audit_workers)
        moves.append(pre_moves)
        pre = np.flatnonzero((pre_status == "M") & (status != "M"))
        if len(pre):
            repaired.append(pre)
            status = pre_status
            protected_table = table.replace(status=status)
            notes.append(f"leaf-cube pass before the audit added {len(pre)} cell(s)")
        stage("cube pass")
    result = judge(protected_table)
    stage("audit 1")
    rounds = 0
    integer = result.integer
    while not result.passed and repair and rounds < MAX_REPAIR_ROUNDS:
        if budget.expired():
            notes.append("time limit reached: repair stopped")
            break
        if not result.complete and len(result.shortfalls) == 0:
            notes.append("the audit did not finish within its time limit")
            break
        rounds += 1
        suppressed = protected_table.suppressed
        if large:
            # local deviation LPs on the short primaries' sub-tables (a whole-table LP per
            # shortfall does not scale to 10^5-10^6 cells)
            # leaf cubes first (no LP; each a move of the whole table), the deviation
            # LPs for what they cannot settle
            new_status, rest, new_moves = cube_repair(
                protected_table, c, result.shortfalls, singleton=singleton,
                time_limit=left(), chains=table.n_cells >= PRE_REPAIR_MIN_CELLS,
                return_moves=True)
            moves.append(new_moves)
            stage(f"repair {rounds} cubes")
            if len(rest):
                new_status, lp_moves = greedy_repair(
                    protected_table.replace(status=new_status), c, rest,
                    audit_result=result, time_limit=left(), return_moves=True,
                    block_sizes=REPAIR_BLOCK_SIZES
                    if table.n_cells >= PRE_REPAIR_MIN_CELLS else (),
                    workers=audit_workers)
                moves.append(lp_moves)
                stage(f"repair {rounds} LPs")
            new_mask = np.isin(new_status, ("U", "M")) | suppressed
        else:
            # each round asks a little more than the levels, in case the audit's integer
            # intervals (frequency tables) are narrower than the LP the repair reasons with
            margin = (rounds - 1) * (1.0 if integer else 1e-4)
            rq = _with_margin(req, margin, table.value)
            rep = GreedyRepair(protected_table, rq, c, cand & ~suppressed)
            new_mask, unmet = rep.run(suppressed, primaries=result.shortfalls,
                                      deadline=deadline)
            stage(f"repair {rounds}")
        added = np.flatnonzero(new_mask & ~suppressed & cand)
        if len(added) == 0:
            notes.append(f"repair round {rounds}: no cell could be added")
            break
        repaired.append(added)
        status = status.copy()
        status[added] = "M"
        protected_table = table.replace(status=status)
        result = judge(protected_table, previous=result)
        stage(f"audit {rounds + 1}")
    if screening and not result.passed:
        result = judge(protected_table, final=True, previous=result)
        stage("final audit")
    audit_seconds = time.perf_counter() - ta
    rep_cells = np.concatenate(repaired) if repaired else np.zeros(0, np.int64)
    if len(rep_cells):
        notes.append(f"audit-and-repair added {len(rep_cells)} cell(s) in {rounds} round(s)")
    if not result.passed:
        notes.append("the final pattern did NOT pass the audit: do not publish it")
    proven = bool(outcome.proven_optimal and len(rep_cells) == 0 and result.passed)
    return ProtectResult(confidential_table=protected_table, method=method, params=params,
                         cost=float(c[status == "M"].sum()), proven_optimal=proven,
                         mip_gap=outcome.mip_gap, solver_status=outcome.solver_status,
                         solver=dict(outcome.details), repaired=rep_cells, audit=result,
                         seconds=time.perf_counter() - t0, method_seconds=method_seconds,
                         audit_seconds=audit_seconds, notes=notes,
                         stage_seconds={k: round(v, 3) for k, v in stages.items()})


def _protect_scaled(table: Table, scale: float, c: np.ndarray, params: dict,
                    **settings) -> ProtectResult:
    """protect() of a table whose values are far from 1 (tabprotect.model.scale): the
    method, the repair and the audit run on the table divided by ``scale`` (a power of
    two) with the costs divided by their own power of two, which keeps every choice; the
    result is the input table with the final pattern, its cost in the input's units."""
    top = float(np.abs(c).max()) if len(c) else 0.0
    c_scale = 2.0 ** math.floor(math.log2(top)) if top > 0 else 1.0
    inner = protect(scaled_table(table, 1.0 / scale), cost=c / c_scale, **settings)
    status = inner.status
    return dataclasses.replace(
        inner, confidential_table=table.replace(status=status), params=params | {
            k: v for k, v in inner.params.items() if k != "cost"},
        cost=float(c[status == "M"].sum()), audit=rescale_audit(inner.audit, scale),
        notes=inner.notes + [f"solved in scaled units (values divided by 2^"
                             f"{int(math.log2(scale))})"])


def _product_view(table: Table, run_table: Table) -> Table | None:
    """``table`` itself when it is a product table, else its recovered product structure
    (cells in another order, ``extra["source_cell"]``), or None when there is none."""
    if table.dimensions:
        return table
    if run_table is not table:
        return run_table
    try:
        view = product_structure(table)
    except InputError:
        return None
    source = view.extra.get("source_cell")
    if source is None or len(source) != table.n_cells:
        return None
    return view


def _cube_pass(view: Table, table: Table, status: np.ndarray, cost: np.ndarray,
               singleton: bool, time_limit: float | None, workers: int = 1
               ) -> tuple[np.ndarray, sp.csr_matrix]:
    """cube_repair (leaf and chain cubes) of every primary on the product ``view`` of
    ``table``; returns the new status and the cubes as moves, both in ``table``'s cell
    order.  With ``workers`` > 1 and at least :data:`CUBE_PASS_PARALLEL_MIN` primaries
    left after the certify step, those are cut in cell order into ``workers`` runs,
    searched in worker processes from the same pattern, and the suppressions united
    (a cube stays a proof when more cells are suppressed; only the sharing of corners
    across a cut is lost)."""
    source = None if view is table else np.asarray(view.extra["source_cell"],
                                                   dtype=np.int64)
    view_status = status if source is None else status[source]
    view_cost = cost if source is None else cost[source]
    view = view.replace(status=view_status)
    primaries = np.flatnonzero(view_status == "U")
    # the cubes the pattern already has first (vectorised, nothing added), then the
    # cheapest cubes for the others
    _, open_, certified = cube_repair(view, view_cost, primaries, singleton=singleton,
                                      certify_only=True, return_moves=True)
    if workers > 1 and len(open_) >= CUBE_PASS_PARALLEL_MIN:
        runs = map_runs(_cube_repair_in_worker, np.sort(open_), workers,
                        job=lambda run: (view, view_cost, run, singleton, time_limit))
        new_view = view_status.copy()
        for changed, _ in runs:
            new_view[changed] = "M"
        found = sp.vstack([f for _, f in runs], format="csr")
    else:
        new_view, _, found = cube_repair(view, view_cost, open_, singleton=singleton,
                                         time_limit=time_limit, chains=True,
                                         return_moves=True)
    found = sp.vstack([certified, found], format="csr")
    if source is None:
        return new_view, found
    new = status.copy()
    new[source] = new_view
    found = found.tocoo()
    return new, sp.csr_matrix((found.data, (found.row, source[found.col])),
                              shape=(found.shape[0], table.n_cells))


def _hypercube_pass(table: Table, status: np.ndarray, cost: np.ndarray, singleton: bool,
                    time_limit: float | None, workers: int = 1) -> np.ndarray:
    """The cells the hypercube method adds to ``status`` (its suppressions are free
    corners).  With ``workers`` > 1 and at least :data:`CUBE_PASS_PARALLEL_MIN`
    primaries, the primaries are cut in cell order into ``workers`` runs, each run's
    cubes searched in a worker process (the other primaries count as suppressed cells
    without requirements there) and the suppressions united: each primary keeps the
    cubes it got in its run, and more suppressed cells never narrow an interval."""
    primaries = np.flatnonzero(status == "U")
    if workers > 1 and len(primaries) >= CUBE_PASS_PARALLEL_MIN:
        runs = map_runs(_hypercube_in_worker, primaries, workers,
                        job=lambda run: (table, status, primaries, run, cost, singleton,
                                         time_limit))
        return np.unique(np.concatenate(runs))
    out = hypercube(table.replace(status=status), cost, time_limit=time_limit,
                    singleton=singleton)
    return np.flatnonzero((out.status == "M") & (status != "M"))


def _hypercube_in_worker(job: tuple) -> np.ndarray:
    """One worker's share of the parallel hypercube pass: the cells it suppressed."""
    table, status, primaries, run, cost, singleton, time_limit = job
    mine = status.copy()
    mine[np.setdiff1d(primaries, run)] = "M"
    out = hypercube(table.replace(status=mine), cost, time_limit=time_limit,
                    singleton=singleton)
    return np.flatnonzero((out.status == "M") & (mine != "M"))


def _cube_repair_in_worker(job: tuple) -> tuple[np.ndarray, sp.csr_matrix]:
    """One worker's share of the parallel cube pass: (cells it suppressed, its cubes)."""
    view, cost, cells, singleton, time_limit = job
    new, _, found = cube_repair(view, cost, cells, singleton=singleton,
                                time_limit=time_limit, chains=True, return_moves=True)
    return np.flatnonzero(new != view.status), found


def _with_margin(req: Requirements, margin: float, value: np.ndarray) -> Requirements:
    if margin <= 0:
        return req
    s_val = np.abs(value[req.primary])
    extra = margin * (1.0 if margin >= 1 else np.maximum(1.0, s_val))
    bump = lambda need: np.where(need > 0, need + extra, need)  # noqa: E731
    return Requirements(up=req.up, down=req.down, primary=req.primary,
                        need_up=np.minimum(bump(req.need_up), req.up[req.primary]),
                        need_down=np.minimum(bump(req.need_down), req.down[req.primary]),
                        need_width=bump(req.need_width), singleton=req.singleton, tol=req.tol)


def _check_feasible(table: Table, cand: np.ndarray, singleton: bool,
                    time_limit: float | None) -> bool:
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
                mode="verdict")
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


def _check_outcome(table: Table, status: np.ndarray) -> None:
    """A method may only add M cells: primaries stay U, P cells stay published."""
    if status.shape != table.status.shape:
        raise RuntimeError("method returned a status array of the wrong length")
    was_p = table.status == "P"
    if (status[was_p] != "P").any():
        raise RuntimeError("method suppressed a cell with status P")
    was_u = table.status == "U"
    if (status[was_u] != "U").any():
        raise RuntimeError("method changed a primary cell's status")
