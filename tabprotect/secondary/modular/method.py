"""``modular``: the registered method -- the wave loop over the sub-tables."""
from __future__ import annotations

import dataclasses
import pickle
import time
from typing import Callable

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.table import Table
from tabprotect.parallel import process_map
from tabprotect.secondary.base import MethodOutcome, register_method
from tabprotect.secondary.modular.coordinate import Coordinator, ModularStats
from tabprotect.secondary.modular.jobs import Job, JobResult, deal, run_bin
from tabprotect.secondary.modular.network_search import begin_call
from tabprotect.secondary.modular.options import ModularOptions
from tabprotect.secondary.modular.solver import SubtableSolver, optimal_subtable_solver
from tabprotect.secondary.modular.time_plan import TimePlan
from tabprotect.secondary.subtables import Split


@register_method("modular", options=ModularOptions, needs_product_structure=True,
                 handles_singletons=True, proves_optimality=False)
def modular(table: Table, cost: np.ndarray, *, time_limit: float | None = None,
            progress: Callable[[str, float], None] | None = None, singleton: bool = True,
            options: ModularOptions | None = None, **fields) -> MethodOutcome:
    """HiTaS: every sub-table solved optimally, top-down, with backtracking.

    Sub-tables of one level share no cell (a cell lies in sub-tables of different
    levels only), so the queued sub-tables of the smallest level are solved as one wave
    -- in parallel processes when ``workers > 1`` -- and their results applied in key
    order (deterministic whatever the number of workers).

    Parameters
    ----------
    time_limit : the method's budget (the time plan shares it among the sub-tables)
    singleton : protect against single-contributor attackers (default solver)
    options : the settings (:class:`ModularOptions`; default settings when None)
    **fields : fields of :class:`ModularOptions` given one by one, applied on top of
        ``options`` (an unknown name is a ``TypeError``)

    The options in short: ``solver`` (default :func:`optimal_subtable_solver`; a custom
    solver must be picklable to run in worker processes); ``subtable_time_limit``;
    ``max_passes`` (backtracking bound); ``carried_level``: ``"proof"`` (default) gives
    a secondary carried into other sub-tables how far it moves, up and down, in the
    smallest attacker moves that prove the requirements of the sub-table that chose it
    (:func:`proof_levels`; sub-tables past ``proof_level_max_work`` carry the median),
    ``"median"`` or ``"max"`` the median or largest requirement of that sub-table's
    primaries (a secondary serving a small primary then carries the requirement of a
    large one, and the sub-tables below suppress for it); ``workers`` (default 2 from
    5,000 cells); ``cube_start``; ``heuristic_size`` and ``heuristic_min_primaries``
    (which sub-tables get :func:`certified_pattern`); the time plan's
    ``planned_share``, ``min_subtable_seconds`` and ``fast_tail``; ``kernel`` (the
    network sub-tables' search compiled: ``auto``, ``compiled`` or ``python``).

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2],
    ...                       status=list("SSSSUSSSS"), upl=[0, 0, 0, 0, 1, 0, 0, 0, 0])
    >>> out = modular(t, t.value.copy(), singleton=False)
    >>> sorted(np.flatnonzero(out.status == "M").tolist())
    [5, 7, 8]
    """
    if not table.dimensions:
        raise InputError("modular needs a product table (dimensions with hierarchies); use "
                         "method 'optimal' or 'gauss' for a general table")
    try:
        opts = dataclasses.replace(options or ModularOptions(), **fields)
    except ValueError as exc:
        raise InputError(f"modular: {exc}") from None
    start = time.perf_counter()
    begin_call()
    split = Split(table)
    solve = opts.solver or optimal_subtable_solver(
        singleton=singleton, mip_gap=opts.mip_gap, seed=opts.cube_start,
        heuristic_size=opts.heuristic_size, min_primaries=opts.heuristic_min_primaries,
        milp=opts.subtable_milp or len(split) == 1, kernel=opts.kernel)
    workers = _workers(opts.workers, table.n_cells, solve)
    state = Coordinator(table, cost, split, opts, singleton)
    plan = TimePlan(split, time_limit, opts, workers, start)
    stats = ModularStats(subtables=len(split), workers=workers,
                         budget_seconds=None if time_limit is None else round(time_limit, 1))
    timed_out = False
    while state.work:
        if plan.expired():
            timed_out = True
            break
        _wave(state, plan, stats, solve, workers)
        if progress is not None:
            progress("modular", min(0.99, stats.solves / max(1, len(split))))
    if progress is not None:
        progress("modular", 1.0)
    details = dataclasses.asdict(stats)
    details["solve_seconds"] = round(stats.solve_seconds, 3)
    details["max_solve_seconds"] = round(stats.max_solve_seconds, 3)
    details["secondaries"] = int((state.status == "M").sum())
    details["seconds"] = round(time.perf_counter() - start, 3)
    return MethodOutcome(status=state.status,
                         solver_status="time_limit" if timed_out else "heuristic",
                         details=details)


def _workers(workers: int | None, n_cells: int, solve: SubtableSolver) -> int:
    """Processes for the sub-table solves: ``workers``, by default 2 from 5,000 cells;
    1 when the solver cannot reach a worker process (a closure or lambda)."""
    if workers is None:
        workers = 2 if n_cells >= 5000 else 1
    if workers > 1:
        try:
            pickle.dumps(solve)
        except Exception:
            workers = 1
    return workers


def _wave(state: Coordinator, plan: TimePlan, stats: ModularStats,
          solve: SubtableSolver, workers: int) -> None:
    """One wave: every queued sub-table of the smallest level, built from the current
    pattern, solved (in worker processes when there are several bins) and applied in
    key order (deterministic)."""
    wave_start = time.perf_counter()
    level, wave = state.work.next_wave()
    stats.waves += 1
    limit = plan.subtable_limit(level, len(wave), state.status)
    jobs = state.jobs(wave, limit, plan, stats)
    for res in sorted(_solve(jobs, solve, workers, plan, limit), key=lambda r: r.key):
        state.apply(res, stats)
    stats.wave_seconds.append((int(level), len(jobs), round(limit or 0.0, 2),
                               round(time.perf_counter() - wave_start, 2)))


def _solve(jobs: list[Job], solve: SubtableSolver, workers: int, plan: TimePlan,
           limit: float | None) -> list[JobResult]:
    """The results of a wave's jobs.  Each worker gets its share of the wave in one
    message, dealt by weight (cells x suppressed cells, a rough guide to a solve's
    time)."""
    weights = [float(j.strict.n_cells * (1 + int((j.strict.status == "U").sum())))
               for j in jobs]
    bins = deal(weights, workers if len(jobs) > 1 else 1)
    wave_end = plan.wave_end(limit, max((len(b) for b in bins), default=0))
    tasks = [([jobs[i] for i in b], solve, wave_end) for b in bins]
    if len(tasks) > 1:
        # worker processes that never re-import the caller's script (spawn would)
        # and never inherit HiGHS' threads (fork would hang)
        per_bin = process_map(run_bin, tasks, len(tasks))
    else:
        per_bin = [run_bin(t) for t in tasks]
    return [r for rs in per_bin for r in rs]
