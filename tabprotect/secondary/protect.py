"""``protect``: the one entry point for every secondary-suppression method.

It validates the table, checks up front that every primary can be protected against
the outside intruder (:mod:`~tabprotect.secondary.feasibility`; against the
single-contributor attackers, and for ``modular`` against both, only when the final
audit fails), runs the registered
method within its share of the budget, then audits the pattern on the full table (with the single-contributor
attacker, and with ``coalition=n`` every coalition of up to n contributors) and repairs
any shortfall by further suppression until the audit passes
(:mod:`~tabprotect.secondary.audit_repair`).  Nothing is reported safe that has not
passed.  How it does so is set by
:class:`~tabprotect.secondary.protect_settings.ProtectSettings`.
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

from tabprotect.audit import audit, rescale_audit
from tabprotect.budget import Budget
from tabprotect.errors import InfeasibleRulesError, InputError
from tabprotect.model.relations import linked_components
from tabprotect.model.scale import scaled_table, value_scale
from tabprotect.model.table import Table
from tabprotect.parallel import use_executor
from tabprotect.results import PrimaryCountNote
from tabprotect.secondary.audit_repair import AuditRepair, StageClock
from tabprotect.secondary.base import (METHODS, MethodOutcome, MethodSettings, MethodSpec,
                                       applied_options, cost_vector, method_options)
from tabprotect.secondary.candidates import candidate_cells
from tabprotect.secondary.coalition_repair import check_coalition
from tabprotect.secondary.feasibility import (SingletonCheck, check_after, deferred_stage,
                                              feasibility_stage, singleton_stage)
from tabprotect.secondary.protect_result import ProtectResult
from tabprotect.secondary.protect_settings import ProtectSettings, applied_settings
from tabprotect.secondary.attack_requirements import Requirements

#: methods whose patterns mostly need a repair round on the small-table path (modular:
#: carried levels can leave a few interior primaries short in the whole table): their
#: first audit decides only the verdict, all the repair needs, and a pattern that passes
#: it gets the interval audit after it
VERDICT_FIRST_METHODS = ("modular",)

#: protect()'s own settings (every other keyword is an option of the method)
PROTECT_SETTINGS = ("cost", "time_limit", "options", "progress", "singleton", "repair",
                    "cost_column", "empty", "audit_mode", "audit_workers", "settings",
                    "executor", "coalition")


def protect(table: Table, method: str = "optimal", cost: str | np.ndarray | None = None,
            time_limit: float | None = None, *, options: Any = None,
            progress: Callable[[str, float], None] | None = None, singleton: bool = True,
            repair: bool = True, cost_column: str | None = None, empty: str = "publish",
            audit_mode: str = "auto", audit_workers: int = 1,
            settings: ProtectSettings | None = None, executor: Any = None,
            coalition: int | None = None, **keywords) -> ProtectResult:
    """Secondary suppression with audit and repair.

    Parameters
    ----------
    table : primary cells have status ``U`` and protection levels ``upl/lpl/spl``; ``P``
        cells are never suppressed; ``M`` cells already suppressed stay suppressed
    method : a registered method (``METHODS``): ``"optimal"``, ...
    cost : ``"unity"``, ``"freq"``, ``"value"``, ``"log"``, ``"column"`` or an array
        (None: ``"value"``); for ``cta`` the weight of a unit change (None:
        ``"relative"``, see :func:`tabprotect.adjust.cta`)
    time_limit : wall-clock seconds for the whole call (:class:`~tabprotect.budget.Budget`):
        the feasibility check gets ``settings.feasibility_share`` of it, the method
        ``settings.method_share`` of what is left (``method_share_large`` from
        ``settings.large_table`` cells), the first audit ``settings.first_audit_share``
        of the rest (what it does not decide in time the repair takes as short), the
        repair what is left less the final audit's reserve
        (``settings.final_audit_reserve``), the final audit that; the call ends within
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
        (verdict from ``settings.large_table`` cells on, or when the pattern's components
        are large: ``settings.interval_audit_max_work``)
    audit_workers : processes for the audit's independent components and for the
        large-table repair's deviation LPs
    settings : how protect() itself audits, repairs and shares its time
        (:class:`~tabprotect.secondary.protect_settings.ProtectSettings`; defaults when
        None); the fields it applied are recorded in ``params["settings"]``
    executor : where the parallel work goes instead of local processes: a
        ``dask.distributed.Client`` or a :class:`~tabprotect.parallel.TaskExecutor`
        (docs/scale-out.md); ``audit_workers`` and an unset ``workers`` option of the
        method become the executor's worker count.  Same result as in one process
    coalition : also protect against (and audit with) every coalition of up to
        ``coalition`` (>= 2) contributors pooling their own contributions
        (:mod:`tabprotect.audit.contributors`): the method runs as without it, the
        audit judges the coalitions and the repair adds cells until they are judged
        protected (:mod:`~tabprotect.secondary.coalition_repair`), else the result
        fails.  Needs ``singleton=True`` (coalitions include the single contributors)
        and, for a magnitude table, the largest contributions (``top``) up to the
        coalition size; not for a method that adjusts values
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
        return _on_executor(executor, table, method, cost, time_limit, keywords, dict(
            options=options, progress=progress, singleton=singleton, repair=repair,
            cost_column=cost_column, empty=empty, audit_mode=audit_mode,
            audit_workers=audit_workers, settings=settings, coalition=coalition))
    t0 = time.perf_counter()
    budget = Budget(time_limit)
    if method not in METHODS:
        raise InputError(f"unknown method '{method}' (available: {', '.join(sorted(METHODS))})")
    if METHODS[method].capabilities.adjusts_values:
        return _adjust(METHODS[method], table, cost, time_limit, options, progress,
                       cost_column, keywords, singleton=singleton, repair=repair,
                       empty=empty, audit_mode=audit_mode, audit_workers=audit_workers,
                       settings=settings, coalition=coalition)
    call = _checked_call(table, method, "value" if cost is None else cost, time_limit,
                         options, cost_column, empty, settings, keywords, budget=budget,
                         t0=t0, progress=progress, singleton=singleton, repair=repair,
                         audit_workers=audit_workers, coalition=coalition)
    scale = value_scale(call.table)
    if scale != 1.0:
        return _protect_scaled(call.table, scale, call.cost, call.params, method=method,
                               time_limit=time_limit, options=options, progress=progress,
                               singleton=singleton, repair=repair, empty=empty,
                               audit_mode=audit_mode, audit_workers=audit_workers,
                               settings=call.settings, coalition=call.coalition, **keywords)
    if not (call.table.status == "U").any():
        return _nothing_to_protect(call.table, method, call.params, call.cost, singleton,
                                   budget, call.settings, t0, call.coalition)
    plan = _plan(call, audit_mode, timed=time_limit is not None)
    run = _method_run(call, plan)
    return _audited(call, plan, run, audit_mode)


@dataclass
class _Call:
    """A protect() call past its checks, shared by its steps: what they read, and the
    record (notes, stage seconds, settings applied) they add to."""

    table: Table               # the input table with the call's empty-cell policy
    method: str                # the registered method's name
    spec: MethodSpec           # the registered method
    opts: MethodSettings       # its checked options
    settings: ProtectSettings  # protect()'s own settings (defaults when none given)
    cost: np.ndarray           # each cell's suppression cost
    params: dict[str, Any]     # the settings applied, recorded in the result
    budget: Budget             # the whole call's time
    t0: float                  # the call's start (time.perf_counter())
    progress: Callable[[str, float], None] | None   # the caller's progress callback
    singleton: bool            # protect against single-contributor attackers
    repair: bool               # repair audit shortfalls by further suppression
    audit_workers: int         # processes for the audit and the repair
    coalition: int | None      # the checked coalition size (None: none)
    notes: list[str] = field(default_factory=list)           # the result's notes
    stages: dict[str, float] = field(default_factory=dict)   # wall seconds per stage


@dataclass(frozen=True)
class _Plan:
    """How a call with primaries runs: its path, its audit mode and candidate cells."""

    large: bool                # the large-table path (settings.large_table cells on)
    mode: str                  # the audit mode before audit_mode="auto" weighs the pattern
    cand: np.ndarray           # the cells that may be suppressed


@dataclass(frozen=True)
class _MethodRun:
    """The method's run: the table it ran on, its outcome and its pattern."""

    run_table: Table           # the table the method ran on (a general one's product)
    outcome: MethodOutcome     # the method's outcome
    status: np.ndarray         # its status in the input table's cell order
    deferred: bool             # the feasibility check waits for a failed final audit
    checked: float | None      # the up-front check's seconds (None: it did not run)


def _on_executor(executor: Any, table: Table, method: str, cost, time_limit,
                 keywords: dict, arguments: dict) -> ProtectResult:
    """protect() with its parallel work on ``executor``: the method's unset ``workers``
    option and the audit's workers become the executor's worker count."""
    from tabprotect.parallel_dask import as_executor   # Dask: only a job that has one
    engine = as_executor(executor)
    if method in METHODS and arguments["options"] is None and "workers" not in keywords \
            and "workers" in METHODS[method].valid_keys:
        keywords = keywords | {"workers": engine.workers}
    with use_executor(engine):
        return protect(table, method, cost, time_limit, **(arguments | {
            "audit_workers": max(arguments["audit_workers"], engine.workers)}), **keywords)


def _checked_call(table: Table, method: str, cost: str | np.ndarray, time_limit,
                  options: Any, cost_column: str | None, empty: str,
                  settings: ProtectSettings | None, keywords: dict, *, budget: Budget,
                  t0: float, progress, singleton: bool, repair: bool, audit_workers: int,
                  coalition: int | None) -> _Call:
    """The call's checks (an :class:`InputError` names what is wrong), its settings
    resolved and recorded, and its cell costs."""
    spec, opts, settings = _checked(table, method, options, empty, settings, keywords)
    if table.empty != empty:   # the intruder knows the policy: Table.known_lb
        table = table.replace(empty=empty)
    coalition = check_coalition(table, coalition, singleton)
    params = {"cost": cost if isinstance(cost, str) else "array", "time_limit": time_limit,
              "singleton": singleton, "repair": repair, "empty": empty,
              "audit_workers": audit_workers, "coalition": coalition}
    if cost_column is not None:
        params["cost_column"] = cost_column
    params.update(applied_options(opts))
    c = cost_vector(table, cost, column=cost_column)
    return _Call(table, method, spec, opts, settings, c, params, budget, t0, progress,
                 singleton, repair, audit_workers, coalition)


def _plan(call: _Call, audit_mode: str, timed: bool) -> _Plan:
    """The path (large table or not), the audit mode and the candidates of a call with
    primaries; records the settings it applies and the setup's seconds."""
    table, settings = call.table, call.settings
    large = table.n_cells >= settings.large_table
    mode = audit_mode if audit_mode != "auto" else ("verdict" if large else "intervals")
    if mode not in ("intervals", "verdict"):
        raise InputError(f"audit_mode must be 'intervals', 'verdict' or 'auto', not "
                         f"'{audit_mode}'")
    call.params["settings"] = applied_settings(settings, large=large, repair=call.repair,
                                               timed=timed)
    cand = candidate_cells(table, table.empty)
    if large:
        call.notes.append(f"{table.n_cells} cells: up-front feasibility check skipped (the "
                          f"final audit judges); local repair; audit mode '{mode}'")
    # every stage's wall-clock seconds, in order (validation, costs and candidates first)
    call.stages["setup"] = time.perf_counter() - call.t0
    return _Plan(large, mode, cand)


def _method_run(call: _Call, plan: _Plan) -> _MethodRun:
    """The up-front feasibility check (unless the method's own run decides it) and the
    method within its share of the budget; a refused table is refused with its cells
    named."""
    table, settings, budget = call.table, call.settings, call.budget
    deferred = check_after(call.method, table)
    checked = None if deferred else feasibility_stage(table, plan.cand, budget, settings,
                                                      plan.large, call.notes)
    if checked is not None:
        call.stages["feasibility check"] = checked
    # the method's share of the budget (a method checks it inside or hands it to its
    # solver as the time limit); the audit and repair get what it leaves
    share = budget.share(settings.method_share_large if plan.large else
                         settings.method_share)
    try:
        run_table, outcome, status = _run_method(
            table, call.spec, call.opts, call.cost, call.notes, call.stages,
            time_limit=share.limit(settings.audit_floor_seconds), progress=call.progress,
            singleton=call.singleton, empty=table.empty)
    except InfeasibleRulesError:
        if deferred:                            # the error names the cells when it can
            deferred_stage(table, plan.cand, budget, settings, plan.large, call.singleton,
                           call.notes, call.stages)
        elif call.singleton and checked is not None:
            singleton_stage(table, plan.cand, budget, settings, call.notes)
        raise
    return _MethodRun(run_table, outcome, status, deferred, checked)


def _audited(call: _Call, plan: _Plan, run: _MethodRun, audit_mode: str) -> ProtectResult:
    """The method's pattern audited on the full table and repaired until it passes,
    within what is left of the budget; the result."""
    table, settings = call.table, call.settings
    clock = StageClock(call.stages)
    mode = plan.mode
    if audit_mode == "auto" and mode == "intervals":
        mode = _auto_mode(table, run.status, settings, call.notes, call.singleton,
                          call.coalition or 0)
    call.params["audit_mode"] = mode
    ta = time.perf_counter()
    attack_check = SingletonCheck(table, plan.cand, settings, call.notes) \
        if call.singleton and run.checked is not None else None
    loop = AuditRepair(table, call.cost, run.status,
                       req=Requirements.from_table(table, singleton=call.singleton),
                       cand=plan.cand, settings=settings, budget=call.budget,
                       singleton=call.singleton, mode=mode, large=plan.large,
                       repair=call.repair, workers=call.audit_workers,
                       progress=call.progress, notes=call.notes, stage=clock,
                       coalition=call.coalition or 0,
                       verdict_first=call.method in VERDICT_FIRST_METHODS,
                       attack_check=attack_check)
    if run.outcome.moves is not None:
        loop.moves.append(_moves_in_table_order(run.outcome.moves, run.run_table, table))
    loop.pre_audit(call.method, run.run_table)
    result = loop.run()
    audit_seconds = time.perf_counter() - ta
    if not result.passed and run.deferred:
        # a method that meets unprotectable primaries on its own is checked only now
        deferred_stage(table, plan.cand, call.budget, settings, plan.large, call.singleton,
                       call.notes, call.stages)
    elif not result.passed and attack_check is not None:
        # a table no pattern protects against single-contributor attackers is refused
        # with the cells named (InfeasibleRulesError); a passing pattern needs no check
        seconds = attack_check(call.budget)
        if seconds is not None:
            call.stages["feasibility check (single-contributor)"] = seconds
    return _result(call, run, loop, result, audit_seconds)


def _result(call: _Call, run: _MethodRun, loop: AuditRepair, result,
            audit_seconds: float) -> ProtectResult:
    """The protected table with the settings applied, the method's and the repair's
    figures, and the final audit."""
    notes = call.notes
    rep_cells = np.concatenate(loop.repaired) if loop.repaired else np.zeros(0, np.int64)
    if len(rep_cells):
        notes.append(f"audit-and-repair added {len(rep_cells)} cell(s) in {loop.rounds} "
                     f"round(s)")
    if not result.passed:
        notes.append(PrimaryCountNote(f"the final pattern did NOT pass the audit: do not "
                                      f"publish it ({_failure_counts(result)})"))
    outcome = run.outcome
    proven = bool(outcome.proven_optimal and len(rep_cells) == 0 and result.passed)
    return ProtectResult(confidential_table=loop.protected_table, method=call.method,
                         params=call.params, cost=float(call.cost[loop.status == "M"].sum()),
                         proven_optimal=proven, mip_gap=outcome.mip_gap,
                         solver_status=outcome.solver_status, solver=dict(outcome.details),
                         repaired=rep_cells, audit=result,
                         seconds=time.perf_counter() - call.t0,
                         method_seconds=call.stages["method"], audit_seconds=audit_seconds,
                         notes=notes,
                         stage_seconds={k: round(v, 3) for k, v in call.stages.items()})


def _failure_counts(result) -> str:
    """How many primaries a failed audit left short, and how many of them it did not
    decide (stopped by its time limit, or a screen's uncertified ones)."""
    short = len(result.shortfalls)
    open_ = 0 if result.incomplete is None else \
        int((result.incomplete & result.primary).sum())
    if result.mode == "screen":
        open_ = short
    return f"{short} primar{'y' if short == 1 else 'ies'} short, {open_} of them undecided"


def _checked(table: Table, method: str, options: Any, empty: str,
             settings: ProtectSettings | None, keywords: dict
             ) -> tuple[MethodSpec, MethodSettings, ProtectSettings]:
    """The method, its checked options and protect()'s settings; bad input is an
    :class:`InputError` naming it."""
    if method not in METHODS:
        raise InputError(f"unknown method '{method}' (available: {', '.join(sorted(METHODS))})")
    opts = method_options(method, options, also=PROTECT_SETTINGS, **keywords)
    if not isinstance(table, Table):
        raise InputError("protect() needs a tabprotect Table")
    if empty not in ("publish", "suppress"):
        raise InputError(f"empty must be 'publish' or 'suppress', not {empty!r}")
    if settings is None:
        settings = ProtectSettings()
    elif not isinstance(settings, ProtectSettings):
        raise InputError(f"settings must be a ProtectSettings, not {type(settings).__name__}")
    return METHODS[method], opts, settings


def _run_method(table: Table, spec: MethodSpec, opts: MethodSettings, c: np.ndarray,
                notes: list[str], stages: dict[str, float], **shared
                ) -> tuple[Table, MethodOutcome, np.ndarray]:
    """Run the method (on the product structure of a general table when it needs one)
    with the shared settings; returns the table it ran on, its outcome and its status
    in ``table``'s cell order (checked: a method only adds M cells)."""
    tm = time.perf_counter()
    run_table, source_cell = _run_table(table, spec, notes)
    outcome: MethodOutcome = spec.call(
        run_table, c if source_cell is None else c[source_cell], opts, **shared)
    stages["method"] = time.perf_counter() - tm
    status = _in_table_order(outcome.status, source_cell)
    _check_outcome(table, status)
    return run_table, outcome, status


def _nothing_to_protect(table: Table, method: str, params: dict, c: np.ndarray,
                        singleton: bool, budget: Budget, settings: ProtectSettings,
                        t0: float, coalition: int | None = None) -> ProtectResult:
    """The result for a table without primaries: its pattern audited as it is."""
    params["settings"] = {"audit_floor_seconds": settings.audit_floor_seconds,
                          "audit": None if settings.audit is None else
                          settings.audit.as_dict()}
    res = audit(table, singleton=singleton, coalition=coalition,
                time_limit=budget.limit(settings.audit_floor_seconds),
                settings=settings.audit)
    return ProtectResult(confidential_table=table, method=method, params=params,
                         cost=float(c[table.status == "M"].sum()), proven_optimal=True,
                         mip_gap=0.0, solver_status="nothing to do", solver={},
                         repaired=np.zeros(0, np.int64), audit=res,
                         seconds=time.perf_counter() - t0, audit_seconds=res.runtime,
                         notes=["no primary cells: nothing to protect"],
                         stage_seconds={"audit": round(res.runtime, 3)})


def _run_table(table: Table, spec: MethodSpec, notes: list[str]
               ) -> tuple[Table, np.ndarray | None]:
    """The table the method runs on, and where its cells are in ``table`` (None: the
    same order).  A method that needs a product table gets the product structure of a
    general one (a JJ-style table is often a product written out cell by cell)."""
    if not (spec.capabilities.needs_product_structure and not table.dimensions):
        return table, None
    from tabprotect.model.structure import product_structure   # general tables only
    try:
        run_table = product_structure(table)
    except InputError as err:
        raise InputError(f"method '{spec.name}' needs a product table (dimensions with "
                         f"hierarchies) and none could be recovered from this general "
                         f"table's relations: {err}; use 'gauss', 'greedy' or 'optimal'"
                         ) from None
    notes.append(f"general table read as a product of shape {run_table.shape} "
                 f"recovered from its relations")
    return run_table, run_table.extra["source_cell"]


def _in_table_order(status: np.ndarray, source_cell: np.ndarray | None) -> np.ndarray:
    """The method's status array in the input table's cell order."""
    status = np.asarray(status).astype("<U1")
    if source_cell is None:
        return status
    in_source_order = np.empty_like(status)
    in_source_order[source_cell] = status
    return in_source_order


def _moves_in_table_order(moves, run_table: Table, table: Table) -> sp.csr_matrix:
    """The method's moves (columns: ``run_table``'s cells) with one column per cell of
    ``table``."""
    moves = sp.csr_matrix(moves, dtype=float)
    if run_table is table:
        return moves
    source_cell = np.asarray(run_table.extra["source_cell"])
    return sp.csr_matrix((moves.data, source_cell[moves.indices], moves.indptr),
                         shape=(moves.shape[0], table.n_cells))


def _auto_mode(table: Table, status: np.ndarray, settings: ProtectSettings,
               notes: list[str], singleton: bool, coalition: int) -> str:
    """audit_mode="auto" on the small-table path: intervals, unless their work estimate
    passes ``interval_audit_max_work`` (then the verdict decides in a fraction of the
    time; see :func:`interval_audit_work`)."""
    work = interval_audit_work(table, status, singleton, coalition,
                               settings.interval_audit_integer_weight)
    if work <= settings.interval_audit_max_work:
        return "intervals"
    notes.append(f"audit in verdict mode: the interval audit's work estimate "
                 f"({work:,.0f}) exceeds {settings.interval_audit_max_work:,}")
    return "verdict"


def interval_audit_work(table: Table, status: np.ndarray, singleton: bool, coalition: int,
                        integer_weight: float) -> float:
    """The interval audit's work on a pattern, in LP-size units: per component of ``k``
    unpublished cells, ``P`` primaries and ``a`` attackers among the contributors, one LP
    pair per cell and one per primary and attacker, each over the component (``k * (k +
    a * P)``); times ``integer_weight`` for an integer audit (a frequency table), which
    proves each fractional LP bound with a MILP.  Attackers: the unpublished cells with
    one contributor (``singleton``), or with any (``coalition``: at least one coalition
    per contributing cell)."""
    unpublished = np.isin(status, ("U", "M"))
    primary = status == "U"
    freq = np.nan_to_num(np.asarray(table.freq, dtype=float), nan=0.0)
    attacker = (freq >= 1) if coalition else (freq == 1) if singleton else \
        np.zeros(table.n_cells, dtype=bool)
    work = 0.0
    for comp in linked_components(table.relations, unpublished):
        k = len(comp)
        work += k * (k + float(attacker[comp].sum()) * float(primary[comp].sum()))
    return work * (integer_weight if table.kind == "frequency" else 1.0)


def _protect_scaled(table: Table, scale: float, c: np.ndarray, params: dict,
                    **arguments) -> ProtectResult:
    """protect() of a table whose values are far from 1 (tabprotect.model.scale): the
    method, the repair and the audit run on the table divided by ``scale`` (a power of
    two) with the costs divided by their own power of two, which keeps every choice; the
    result is the input table with the final pattern, its cost in the input's units."""
    top = float(np.abs(c).max()) if len(c) else 0.0
    c_scale = 2.0 ** math.floor(math.log2(top)) if top > 0 else 1.0
    inner = protect(scaled_table(table, 1.0 / scale), cost=c / c_scale, **arguments)
    status = inner.status
    return dataclasses.replace(
        inner, confidential_table=table.replace(status=status), params=params | {
            k: v for k, v in inner.params.items() if k != "cost"},
        cost=float(c[status == "M"].sum()), audit=rescale_audit(inner.audit, scale),
        notes=inner.notes + [f"solved in scaled units (values divided by 2^"
                             f"{int(math.log2(scale))})"])


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


#: protect()'s suppression settings and their defaults: a method that adjusts values
#: takes none of them, and a value other than the default is an error
SUPPRESSION_SETTINGS = {"singleton": True, "repair": True, "empty": "publish",
                        "audit_mode": "auto", "audit_workers": 1, "settings": None,
                        "coalition": None}


def _adjust(spec: MethodSpec, table, cost, time_limit, options, progress, cost_column,
            keywords, **suppression):
    """protect() of a method that publishes adjusted values (``cta``): the method's own
    call and result (no pattern to audit and repair)."""
    given = [k for k, v in suppression.items() if v != SUPPRESSION_SETTINGS[k]]
    if given:
        raise InputError(f"method '{spec.name}' publishes adjusted values: "
                         f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to "
                         f"suppression only")
    return spec.run(table, cost, time_limit, options=options, progress=progress,
                    cost_column=cost_column, **keywords)
