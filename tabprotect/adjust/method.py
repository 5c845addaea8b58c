"""``cta``: controlled tabular adjustment, registered as ``protect(table, method="cta")``.

The table is solved in scaled units (:mod:`tabprotect.model.scale`) with weights brought
near 1 by a power of two, so HiGHS' absolute tolerances fit every table; the adjusted
values, the distance and its bound are given back in the table's units.
"""
from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from tabprotect.adjust.options import DEFAULT_WEIGHTS, CTAOptions, cell_weights
from tabprotect.adjust.problem import CTAProblem
from tabprotect.adjust.result import CTAResult
from tabprotect.adjust.search import Adjustment, DirectionSearch
from tabprotect.audit_adjusted import audit_adjusted
from tabprotect.budget import Budget
from tabprotect.errors import InputError
from tabprotect.model.scale import scaled_table, value_scale
from tabprotect.model.table import Table
from tabprotect.secondary.base import applied_options, method_options, register_method

#: cta()'s own settings (every other keyword is a field of CTAOptions)
CTA_SETTINGS = ("cost", "time_limit", "options", "progress", "cost_column")


@register_method("cta", options=CTAOptions, proves_optimality=True, adjusts_values=True)
def cta(table: Table, cost: str | np.ndarray | None = None,
        time_limit: float | None = None, *, options: Any = None,
        progress: Callable[[str, float], None] | None = None,
        cost_column: str | None = None, **keywords) -> CTAResult:
    """Controlled tabular adjustment: publish every cell, each sensitive cell moved at
    least its protection level up or down, the table additive, the weighted distance
    to the true values least.

    Parameters
    ----------
    table : sensitive cells have status ``U`` and levels ``upl`` / ``lpl``
    cost : the weight of a unit change of each cell: ``"relative"`` (1 / |value|, the
        default), ``"unity"``, a suppression cost function (``"freq"``, ``"value"``,
        ``"log"``, ``"column"``) or an array
    time_limit : wall-clock seconds for the whole call; the best adjustment found is
        returned with its gap (``mip_gap``)
    options : a :class:`~tabprotect.adjust.options.CTAOptions` or a dict of its fields
    progress : ``progress(message, fraction)``
    cost_column : the extra array used by ``cost="column"``
    **keywords : fields of CTAOptions one by one, applied on top of ``options``

    Examples
    --------
    >>> from tabprotect.model import Hierarchy
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [20, 10, 10, 12, 6, 6, 8, 4, 4])
    >>> st = t.status.copy(); st[4] = "U"
    >>> t = t.replace(status=st, upl=np.where(st == "U", 2.0, 0.0),
    ...               lpl=np.where(st == "U", 2.0, 0.0))
    >>> res = cta(t, cost="unity", fix_totals=True, directions="free", margin=0)
    >>> res.passed, round(res.objective, 6), res.proven_optimal
    (True, 8.0, True)
    """
    t0 = time.perf_counter()
    budget = Budget(time_limit)
    if not isinstance(table, Table):
        raise InputError("cta needs a tabprotect Table")
    settings = method_options("cta", options, also=CTA_SETTINGS, **keywords)
    opts: CTAOptions = settings.options
    if np.isnan(table.value).any():
        i = int(np.flatnonzero(np.isnan(table.value))[0])
        raise InputError(f"cta: cell {table.cell_name(i)} has no value")
    params: dict[str, Any] = {"cost": DEFAULT_WEIGHTS if cost is None else
                              (cost if isinstance(cost, str) else "array"),
                              "time_limit": time_limit}
    if cost_column is not None:
        params["cost_column"] = cost_column
    params.update(applied_options(settings))
    stretch, params["seed"] = _margin(table.n_cells, opts)
    weights = cell_weights(table, cost, cost_column)
    column = None
    if opts.search == "given":
        column = table.extra.get(opts.direction_column)
        if column is None:
            raise InputError(f"cta: directions = given needs the column "
                             f"'{opts.direction_column}' (+1 up, -1 down per sensitive "
                             f"cell) among the table's extra columns")
    notes: list[str] = []
    if ((table.status == "U") & (table.spl > 0)).any():
        notes.append("sliding protection levels do not apply to a published value: the "
                     "upper and lower levels do")
    if progress:
        progress("cta: building the model", 0.05)
    scale = 1.0 if opts.integer else value_scale(table)
    work = table if scale == 1.0 else scaled_table(table, 1.0 / scale)
    power = 1.0 if opts.distance == "L1" else 2.0
    problem = CTAProblem(work, weights * scale ** power, opts,
                         loose_caps=opts.distance == "L2", stretch=stretch)
    if problem.k == 0:
        notes.append("no sensitive cell with a protection level: every cell is published "
                     "at its true value")
        adj = Adjustment(net=np.zeros(problem.m), up=np.zeros(0, dtype=bool), objective=0.0,
                         lower_bound=0.0, proven_optimal=True, solver_status="nothing to do",
                         details={})
        search_notes: list[str] = []
    else:
        if progress:
            progress(f"cta: {opts.search} directions, {problem.k} sensitive cells", 0.1)
        adj, search_notes = _search(problem, budget, opts, column)
        if problem.loose and not problem.within_caps(adj.net):
            notes.append("a bound left out of the first model was reached: solved again "
                         "with every bound")
            problem = CTAProblem(work, weights * scale ** power, opts, stretch=stretch)
            adj, search_notes = _search(problem, budget, opts, column)
    unit = problem.unit
    notes.extend(search_notes)
    adjusted = _published_values(table, problem, adj, scale, opts.integer)
    directions = np.zeros(table.n_cells, dtype=np.int8)
    directions[problem.sensitive] = np.where(adj.up, 1, -1)
    if progress:
        progress("cta: audit", 0.9)
    audit = audit_adjusted(table, adjusted, bounds=opts.bounds, max_change=opts.max_change,
                           fix_totals=opts.fix_totals, fix_empty=opts.fix_empty)
    d = adjusted - table.value
    objective = float(weights @ (np.abs(d) if opts.distance == "L1" else d * d))
    if not audit.passed:
        notes.append("the adjusted table did NOT pass its audit: do not publish it")
    if opts.search == "heuristic" and problem.k:
        notes.append("directions chosen by the heuristic, not proven the best: directions "
                     "= free runs the MILP that proves the least distance")
    if opts.search in ("up", "down", "given") and adj.proven_optimal:
        notes.append(f"optimal for the {opts.search} directions (other directions were "
                     f"not searched)")
    gap = adj.gap
    if "heuristic_objective" in adj.details:      # solved units -> the table's
        adj.details["heuristic_objective"] *= unit
    return CTAResult(confidential_table=table, adjusted=adjusted, method="cta",
                     params=params, objective=objective, proven_optimal=adj.proven_optimal,
                     mip_gap=gap, solver_status=adj.solver_status,
                     solver={**adj.details, "search": opts.search,
                             "lower_bound": None if adj.lower_bound is None
                             else adj.lower_bound * unit},
                     directions=directions, audit=audit,
                     seconds=time.perf_counter() - t0, notes=notes)


def _margin(n: int, opts: CTAOptions) -> tuple[np.ndarray | None, int | None]:
    """Per cell, the factor ``1 + u`` (u uniform in [0, margin]) its levels are raised by,
    and the seed that draws them (drawn when not given); None without a margin."""
    if opts.margin == 0:
        return None, opts.seed
    seed = opts.seed
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (2**63))
    rng = np.random.default_rng(int(seed))
    return 1.0 + opts.margin * rng.random(n), int(seed)


def _search(problem: CTAProblem, budget: Budget, opts: CTAOptions,
            column: np.ndarray | None) -> tuple[Adjustment, list[str]]:
    """The search ``opts`` asks for, on ``problem``; its adjustment and notes."""
    search = DirectionSearch(problem, budget)
    if opts.search == "free":
        adj = search.free(opts.flip_rounds)
    elif opts.search == "heuristic":
        adj = search.heuristic(opts.flip_rounds)
    else:
        adj = search.fixed(search.directions(opts.search, column))
    return adj, search.notes


def _published_values(table: Table, problem: CTAProblem, adj: Adjustment, scale: float,
                      integer: bool) -> np.ndarray:
    """The true values plus the search's changes, back in the table's units; whole
    numbers for integer changes; solver noise below 1e-9 of a cell's scale dropped (a
    change of that size, and a bound passed by that much)."""
    net = adj.net.copy()
    if integer:
        net = np.round(net)
    else:
        x = problem.x[problem.cols]
        net[np.abs(net) <= 1e-9 * np.maximum(1.0, np.abs(x))] = 0.0
    adjusted = table.value.astype(float).copy()
    adjusted[problem.cols] += net * scale
    if problem.options.bounds == "table":
        # a bound passed by solver noise (e.g. -1e-11 for a cell at lb = 0) is the bound
        noise = 1e-9 * np.maximum(1.0, np.abs(table.value))
        low = (adjusted < table.lb) & (adjusted >= table.lb - noise)
        high = (adjusted > table.ub) & (adjusted <= table.ub + noise)
        adjusted[low], adjusted[high] = table.lb[low], table.ub[high]
    return adjusted
