"""``round_table``: round a frequency table to multiples of a base, by one of the methods."""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from tabprotect.audit_rounded import audit_rounded
from tabprotect.errors import InputError
from tabprotect.model.table import Table
from tabprotect.rounding.checks import cell_weights, check_base, is_additive, \
    is_zero_restricted, max_steps, weights_label
from tabprotect.rounding.controlled import ControlledRounder
from tabprotect.rounding.result import METHODS, RoundingResult
from tabprotect.rounding.settings import RoundingSettings
from tabprotect.rounding.simple import deterministic_round, random_round
from tabprotect.rounding.small_count import aggregate_from_inner, small_count_round

__all__ = ["round_table"]


def round_table(table: Table, base: int, method: str = "controlled", *,
                seed: int | None = None, margins_from_interior: bool = False,
                weights: np.ndarray | str | None = None, k_step: int = 0,
                step_penalty: float | None = None, threshold: int | None = None,
                partition: bool | str = "auto", partition_min_cells: int = 20000,
                time_limit: float | None = None, mip_gap: float | None = None,
                threads: int | None = 1, audit: bool = True,
                audit_options: dict | None = None,
                settings: RoundingSettings | None = None) -> RoundingResult:
    """Round a frequency table to multiples of ``base``.

    Parameters
    ----------
    table : the table (non-negative values; counts for frequency tables)
    base : rounding base ``b >= 1`` (integer)
    method : ``"deterministic"``, ``"random"``, ``"controlled"`` or ``"small-count"``
    seed : random rounding: seed of the generator (None draws one; it is reported in
        ``params`` so the result can be reproduced)
    margins_from_interior : random rounding: round only the inner cells and publish every
        total as the sum of its rounded inner cells
    weights : controlled rounding: weight of each cell's absolute deviation (array),
        ``"relative"`` (``1 / max(x, 1)``) or None (unit weights)
    k_step : controlled rounding: 0 = zero-restricted only (an error explains when no
        solution exists); ``K > 0`` = if zero-restricted rounding is infeasible, allow
        cells to move up to ``K`` multiples beyond their adjacent ones, each extra step
        costing ``step_penalty``
    step_penalty : cost of one extra step (default ``10 * b * max weight``)
    threshold : small-count rounding: counts ``0 < x < threshold`` are rounded (default b)
    partition : controlled rounding of large tables: ``"auto"`` (tables of 3+ dimensions
        with at least ``partition_min_cells`` cells and a hierarchy of 2+ levels), True or
        False
    time_limit, mip_gap, threads : solver settings (MILP paths)
    audit : attach the rounded-table audit (:func:`tabprotect.audit_rounded.audit_rounded`)
    audit_options : keyword arguments for the audit
    settings : controlled rounding's solver tuning and, for both controlled and
        small-count rounding, the search budget without a ``time_limit``
        (:class:`RoundingSettings`; default ``RoundingSettings()``), recorded in ``params``

    Returns
    -------
    RoundingResult

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> rows = Hierarchy.flat(["A", "B", "C"], total="Total")
    >>> cols = Hierarchy.flat(["Male", "Female"], total="Total")
    >>> t = Table.from_arrays({"r": rows, "c": cols},
    ...                       [39, 16, 23, 1, 1, 0, 6, 3, 3, 32, 12, 20], kind="frequency")
    >>> res = round_table(t, 5, "controlled", audit=False)
    >>> res.total_absolute_deviation, res.additive, res.zero_restricted
    (18.0, True, True)
    """
    start = time.perf_counter()
    if method not in METHODS:
        raise InputError(f"rounding method must be one of {', '.join(METHODS)}, "
                         f"not {method!r}")
    base = check_base(base)
    x = _checked_values(table)
    if k_step < 0 or int(k_step) != k_step:
        raise InputError(f"rounding: k_step must be a non-negative integer, not {k_step!r}")
    params: dict[str, Any] = {"base": base, "method": method}
    notes: list[str] = []
    if method == "deterministic":
        rounded = deterministic_round(x, base)
        path, optimal = "closed form (nearest multiple, ties up)", True
        params["tie_rule"] = "half up"
    elif method == "random":
        rounded = _random(table, x, base, seed, margins_from_interior, params)
        path, optimal = "random draw", False
    elif method == "controlled":
        w = cell_weights(table, weights)
        settings = RoundingSettings() if settings is None else settings
        params.update({"k_step": int(k_step), "weights": weights_label(weights),
                       "partition": partition, "time_limit": time_limit, "mip_gap": mip_gap})
        penalty = float(step_penalty) if step_penalty is not None \
            else 10.0 * base * float(w.max() if len(w) else 1.0)
        params["step_penalty"] = penalty
        params.update(settings.recorded())
        solver = ControlledRounder(table, base, w, time_limit=time_limit, mip_gap=mip_gap,
                                   threads=threads, settings=settings)
        rounded, path, optimal, sub_notes = solver.run(
            k_step=int(k_step), penalty=penalty, partition=partition,
            partition_min_cells=partition_min_cells)
        notes.extend(sub_notes)
    else:  # small-count
        thr = int(threshold) if threshold is not None else base
        if thr < 1:
            raise InputError("small-count rounding: threshold must be at least 1")
        params["threshold"] = thr
        params["time_limit"] = time_limit
        settings = RoundingSettings() if settings is None else settings
        params["search_seconds"] = settings.search_seconds
        params["ipm_min_columns"] = settings.ipm_min_columns
        params["swap_kick"] = settings.swap_kick
        params["swap_stall"] = settings.swap_stall
        rounded, path, optimal = small_count_round(
            table, base, thr, time_limit=time_limit, mip_gap=mip_gap, threads=threads,
            search_seconds=settings.search_seconds, ipm_min_columns=settings.ipm_min_columns,
            swap_kick=settings.swap_kick, swap_stall=settings.swap_stall)
    rounded = np.asarray(rounded, dtype=float)
    additive = is_additive(table, rounded)
    notes.extend(_method_notes(method, params, base, additive))
    result = RoundingResult(confidential_table=table, rounded=rounded, base=base, method=method,
                            params=params, additive=additive,
                            zero_restricted=is_zero_restricted(x, rounded, base),
                            max_steps=max_steps(x, rounded, base), solver_path=path,
                            proven_optimal=optimal, seconds=time.perf_counter() - start,
                            notes=notes)
    if audit:
        result.audit = audit_rounded(result, **(audit_options or {}))
    return result


def _checked_values(table: Table) -> np.ndarray:
    x = np.asarray(table.value, dtype=float)
    if np.isnan(x).any():
        raise InputError(f"rounding: cell {table.cell_name(int(np.flatnonzero(np.isnan(x))[0]))}"
                         f" has no value")
    if (x < 0).any():
        raise InputError(f"rounding: cell {table.cell_name(int(np.flatnonzero(x < 0)[0]))} "
                         f"is negative; rounding needs non-negative counts")
    return x


def _random(table: Table, x: np.ndarray, base: int, seed, margins_from_interior: bool,
            params: dict[str, Any]) -> np.ndarray:
    """Random rounding, the seed (drawn when not given) recorded in ``params``."""
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (2**63))
    params["seed"] = int(seed)
    params["margins_from_interior"] = bool(margins_from_interior)
    rng = np.random.default_rng(int(seed))
    if margins_from_interior:
        inner = table.is_inner
        return aggregate_from_inner(table, inner, random_round(x[inner], base, rng))
    return random_round(x, base, rng)


def _method_notes(method: str, params: dict[str, Any], base: int, additive: bool) -> list[str]:
    """What a reader of the rounded table must know about the method's properties."""
    notes = []
    margins = bool(params.get("margins_from_interior"))
    if method == "deterministic" and not additive:
        notes.append("deterministic rounding is not additive: published totals need not "
                     "equal the sums of the published parts")
    if method == "random" and not margins and not additive:
        notes.append("random rounding of every cell independently is not additive")
    if method == "random" and margins:
        notes.append("totals are sums of rounded inner cells: additive, but a total may lie "
                     "a base or more from its true value (its parts' deviations add up)")
    if method == "small-count":
        notes.append(f"only inner counts 0 < x < {params['threshold']} were rounded (to 0 or "
                     f"{base}); aggregates are sums of the rounded inner cells")
    return notes
