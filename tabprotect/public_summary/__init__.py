"""Summary figures that may leave the confidential report.

A suppression pattern is judged by the LP audit: the intruder knows the published cells,
the relations of the table and the a-priori bounds, and must not narrow any primary cell
beyond its protection interval. A summary figure published beside the table is one more
thing the intruder knows. A figure such as "value of the suppressed cells" is a linear
equation over the suppressed cells: with one primary, ``value_suppressed -
value_secondary`` *is* the primary's value.

:func:`public_summary` therefore releases a figure only when adding it to the intruder's
system as one more published equation narrows no primary's feasibility interval
(intervals with and without the equation compared, with a relative tolerance). Figures are
tried in the order given and each is checked together with the ones already released, so
two figures that disclose only together are not both released; a figure that the released
ones determine (its equation a combination of theirs, such as a share of a released sum)
tells the intruder nothing more and is released without an LP; one from which, with the
released ones, the intruder computes a figure withheld because it narrows a primary is
withheld for that reason without an LP (it narrows at least as much). A figure whose linear
form is not known, whose check does not finish in time, or that is not linear over the
cells it sums (absolute values of cells that may be negative) is withheld: it stays in the
confidential report only. Counts of cells, primaries and secondaries are released as they
are (the status of every cell is published anyway).

Examples
--------
>>> from tabprotect.model import Hierarchy, Table
>>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
>>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
>>> st = t.status.copy(); st[[4, 5, 7, 8]] = ["U", "M", "M", "M"]
>>> t = t.replace(status=st, upl=np.where(st == "U", 1.0, 0.0))
>>> out = public_summary(t)
>>> out["primary"], out["secondary"], sorted(out["withheld"])
(1, 3, ['value_primary', 'value_secondary'])
"""
from __future__ import annotations

import time
from typing import Mapping

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.scale import scaled_table, value_scale
from tabprotect.model.status import check_status, is_suppressed
from tabprotect.model.table import Table
from tabprotect.public_summary.checker import Checker
from tabprotect.public_summary.systems import Forecast

#: figures computed when none are given; each is a sum of absolute cell values
STANDARD_FIGURES = ("value_suppressed", "value_secondary", "value_primary",
                    "share_value_suppressed")
#: reasons a figure is withheld (the only text the caller gets about a withheld figure)
REASONS = {
    "narrows": "narrows a primary cell's feasibility interval",
    "unknown": "no linear form is known for it",
    "not_linear": "sums absolute values of cells that may be negative",
    "inconsistent": "does not agree with the table",
    "time": "its check did not finish in time",
}
_COUNT_KEYS = ("cells", "primary", "secondary", "suppressed")


def standard_figures(table: Table, status=None) -> dict[str, float]:
    """The value figures of a pattern (absolute values; the share is of all cells)."""
    status = table.status if status is None else np.asarray(status)
    a = np.abs(table.value)
    sup = is_suppressed(status)
    total = float(a.sum())
    return {"value_suppressed": float(a[sup].sum()),
            "value_secondary": float(a[status == "M"].sum()),
            "value_primary": float(a[status == "U"].sum()),
            "share_value_suppressed": float(a[sup].sum()) / total if total > 0 else 0.0}


def public_summary(table: Table, status=None, figures: Mapping[str, float] | None = None, *,
                   forms: Mapping[str, np.ndarray] | None = None, integer: bool | None = None,
                   time_limit: float | None = 60.0, tol: float = 1e-6, joint: int = 3,
                   forecast: Forecast = Forecast()) -> dict:
    """Counts of the pattern and the figures that disclose nothing more than the table.

    Parameters
    ----------
    table : the table with its true values and a-priori bounds
    status : the pattern's status letters (default ``table.status``)
    figures : name -> value of the figures to release (default :func:`standard_figures`).
        Names of :data:`STANDARD_FIGURES` have known forms; any other name needs ``forms``
    forms : name -> per-cell coefficients ``w``: the figure is ``sum w * value``
        (e.g. a cost with value weights: ``w = (status == "M") * 1.0``)
    integer : integer intervals (default: frequency tables)
    time_limit : seconds for all checks; a figure not checked in time is withheld
    tol : relative tolerance when comparing interval ends
    joint : integer tables: a primary's end is first sought within its component (the
        figures' parts there at their true values), then with this many of the largest
        other components beside it, then in the whole system (each a certificate: the
        other components stay at the true table); changes only the time, never the
        figures released
    forecast : integer tables: when a check is foreseen not to finish within
        ``time_limit`` (its figure then withheld for time at once)

    Returns
    -------
    dict with ``cells``, ``primary``, ``secondary``, ``suppressed`` (counts), every released
    figure under its name, and ``withheld``: name -> reason for each figure kept back.
    """
    n = table.n_cells
    status = table.status if status is None else check_status(status, n)
    if not np.isfinite(np.asarray(table.value, dtype=float)).all():
        raise InputError("public_summary: the table needs every cell's true value, and a "
                         "published table has none for its suppressed cells: give the "
                         "confidential one (e.g. ProtectResult.confidential_table)")
    sup = is_suppressed(status)
    out: dict = {"cells": int(n), "primary": int((status == "U").sum()),
                 "secondary": int((status == "M").sum()), "suppressed": int(sup.sum())}
    figures = standard_figures(table, status) if figures is None else dict(figures)
    clash = set(figures) & set(_COUNT_KEYS + ("withheld",))
    if clash:
        raise InputError(f"public_summary: figure name(s) {sorted(clash)} are reserved")
    forms = dict(forms or {})
    if integer is None:
        integer = table.kind == "frequency"
    deadline = None if time_limit is None else time.monotonic() + time_limit
    # the checks run in the units the solvers handle (tabprotect.model.scale), as the
    # audit's do: a figure in value units is divided by the same power of two
    scale = 1.0 if integer else value_scale(table)
    solved = table if scale == 1.0 else scaled_table(table, 1.0 / scale)
    checker = Checker(solved, status, bool(integer), tol, deadline, joint, forecast)
    withheld: dict[str, str] = {}
    for name, value in figures.items():
        ratio = name == "share_value_suppressed" and forms.get(name) is None
        form = _form(name, float(value) / (1.0 if ratio else scale), solved, status,
                     forms.get(name))
        reason = form if isinstance(form, str) else checker.try_release(*form)
        if reason is None:
            out[name] = value
        else:
            withheld[name] = REASONS[reason]
    out["withheld"] = withheld
    return out


def _form(name, value, table, status, weights):
    """``(coefficients, rhs)`` of the figure as ``coefficients @ x == rhs``, or a reason key."""
    if weights is not None:
        w = np.asarray(weights, dtype=float)
        if w.shape != (table.n_cells,):
            raise InputError(f"public_summary: form of '{name}' needs {table.n_cells} entries")
        return w, value
    sup = is_suppressed(status)
    masks = {"value_suppressed": sup, "value_secondary": status == "M",
             "value_primary": status == "U", "share_value_suppressed": sup}
    if name not in masks:
        return "unknown"
    mask = masks[name]
    # |x| is linear where the a-priori bounds fix the sign of an unpublished cell
    sign = np.where(table.lb >= 0, 1.0, np.where(table.ub <= 0, -1.0, 0.0))
    sign = np.where(sup, sign, np.sign(table.value))
    if (sup & mask & (sign == 0)).any() or (name == "share_value_suppressed" and
                                            (sup & (sign == 0)).any()):
        return "not_linear"
    if name == "share_value_suppressed":
        # sum_sup |x| = s * sum_all |x|  <=>  sum (1[sup] - s) |x| = 0
        return sign * (mask.astype(float) - value), 0.0
    return sign * mask, value
