"""Information loss: what a protection method costs the table's users.

Two families of measures (DESIGN section 7, ``docs/infoloss.md``):

* **distance measures** for methods that change values (rounding, perturbation of the
  microdata behind a table): Hellinger distance, relative absolute distance (RAD),
  average absolute distance per cell (AAD), each over one table or averaged over many
  (e.g. one table per small area), and the relative change of Cramer's V of a two-way
  table;
* **suppression measures**: number, value and contributors of the suppressed cells and
  their shares, overall and by hierarchy level.

With ``D_orig^k(c)`` and ``D_pert^k(c)`` the original and protected value of cell ``c`` of
table ``k = 1..K`` (``n_k`` cells):

* ``HD  = (1/K) sum_k sqrt( sum_c (sqrt(D_pert^k(c)) - sqrt(D_orig^k(c)))^2 ) / sqrt(2)``
* ``RAD = (1/K) sum_k sum_c |D_pert^k(c) - D_orig^k(c)| / D_orig^k(c)``
* ``AAD = (1/K) sum_k sum_c |D_pert^k(c) - D_orig^k(c)| / n_k``
* ``V = sqrt(chi2 / (n min(R-1, C-1)))``, ``RCV = 100 (V_orig - V_pert) / V_orig``

RAD and zero cells: a cell with ``D_orig = 0`` has no relative change.  ``zero="unit"``
(default) divides its absolute change by 1 (one unit of the data: for counts, a cell that
goes from 0 to 3 adds 3, as if it had been a 1); ``zero="skip"`` leaves such cells out
(the number left out is reported by :func:`info_loss`); ``zero="inf"`` makes RAD infinite
when any zero cell changed.  A zero cell that stays zero adds nothing under every option.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.status import is_suppressed
from tabprotect.model.table import Table

if TYPE_CHECKING:
    import pandas as pd

ZERO_TREATMENTS = ("unit", "skip", "inf")

__all__ = ["hellinger_distance", "relative_absolute_distance", "average_absolute_distance",
           "cramers_v", "cramers_v_change", "two_way", "suppression_loss", "deviation_loss",
           "info_loss", "InfoLoss", "ZERO_TREATMENTS"]


# ---------------------------------------------------------------- distance measures
def _pair(original, perturbed, groups) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Validated flat arrays and the cell indices of each of the K tables."""
    o = np.asarray(original, dtype=float).ravel()
    p = np.asarray(perturbed, dtype=float).ravel()
    if o.shape != p.shape:
        raise InputError(f"information loss: original has {o.size} cells, protected "
                         f"{p.size}")
    if np.isnan(o).any() or np.isnan(p).any():
        raise InputError("information loss: missing (nan) cell values; suppressed cells "
                         "have no published value -- use suppression_loss for them")
    if groups is None:
        parts = [np.arange(o.size)]
    else:
        g = np.asarray(groups).ravel()
        if g.shape != o.shape:
            raise InputError(f"information loss: {g.size} group labels for {o.size} cells")
        _, inverse = np.unique(g, return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        splits = np.flatnonzero(np.diff(inverse[order])) + 1
        parts = np.split(order, splits)
    return o, p, parts


def hellinger_distance(original, perturbed, groups=None) -> float:
    """Hellinger distance between original and protected counts, averaged over tables.

    Parameters
    ----------
    original, perturbed : non-negative cell values (same order)
    groups : optional label per cell; each label is one of the K tables averaged over

    Examples
    --------
    >>> round(hellinger_distance([4, 9], [1, 9]), 6)   # sqrt((1-2)^2) / sqrt(2)
    0.707107
    """
    o, p, parts = _pair(original, perturbed, groups)
    if (o < 0).any() or (p < 0).any():
        raise InputError("Hellinger distance needs non-negative cell values")
    d = (np.sqrt(p) - np.sqrt(o)) ** 2
    return float(np.mean([np.sqrt(d[k].sum()) for k in parts]) / np.sqrt(2.0))


def _rad_terms(o: np.ndarray, p: np.ndarray, zero: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-cell RAD terms and the mask of cells counted."""
    if zero not in ZERO_TREATMENTS:
        raise InputError(f"RAD zero-cell treatment must be one of {', '.join(ZERO_TREATMENTS)},"
                         f" not '{zero}'")
    diff = np.abs(p - o)
    is_zero = o == 0
    counted = np.ones(o.size, dtype=bool)
    denom = np.abs(o)
    if zero == "unit":
        denom = np.where(is_zero, 1.0, denom)
    elif zero == "skip":
        counted = ~is_zero
        denom = np.where(is_zero, 1.0, denom)
    else:  # "inf": a changed zero cell has an infinite relative change
        denom = np.where(is_zero, 1.0, denom)
        diff = np.where(is_zero & (diff > 0), np.inf, diff)
    terms = np.where(counted, diff / denom, 0.0)
    return terms, counted


def relative_absolute_distance(original, perturbed, groups=None, zero: str = "unit") -> float:
    """Relative absolute distance ``sum_c |D_pert - D_orig| / D_orig``, averaged over tables.

    Parameters
    ----------
    zero : treatment of cells whose original value is 0: ``"unit"`` (divide by 1),
        ``"skip"`` (leave them out) or ``"inf"`` (a changed zero cell gives infinity)

    Examples
    --------
    >>> relative_absolute_distance([4, 10, 0], [5, 10, 2])            # 1/4 + 0 + 2/1
    2.25
    >>> relative_absolute_distance([4, 10, 0], [5, 10, 2], zero="skip")
    0.25
    """
    o, p, parts = _pair(original, perturbed, groups)
    terms, _ = _rad_terms(o, p, zero)
    return float(np.mean([terms[k].sum() for k in parts]))


def average_absolute_distance(original, perturbed, groups=None) -> float:
    """Average absolute distance per cell ``sum_c |D_pert - D_orig| / n_k``, averaged over
    tables.

    Examples
    --------
    >>> average_absolute_distance([1, 2, 3, 4], [0, 2, 3, 7], groups=["a", "a", "b", "b"])
    1.0
    """
    o, p, parts = _pair(original, perturbed, groups)
    diff = np.abs(p - o)
    return float(np.mean([diff[k].sum() / len(k) for k in parts]))


def cramers_v(counts) -> float:
    """Cramer's V of a two-way table of counts, ``sqrt(chi2 / (n min(R-1, C-1)))``.

    Rows and columns that are entirely zero carry no information about association and
    are dropped first (their expected counts would be 0).  A table with fewer than two
    non-empty rows or columns has no association: nan.

    Examples
    --------
    >>> cramers_v([[10, 0], [0, 10]])
    1.0
    >>> cramers_v([[5, 5], [5, 5]])
    0.0
    """
    x = np.asarray(counts, dtype=float)
    if x.ndim != 2:
        raise InputError("Cramer's V needs a two-way table")
    if (x < 0).any() or np.isnan(x).any():
        raise InputError("Cramer's V needs non-negative counts")
    x = x[x.sum(axis=1) > 0][:, x.sum(axis=0) > 0]
    if x.size == 0 or min(x.shape) < 2:
        return float("nan")
    n = x.sum()
    expected = np.outer(x.sum(axis=1), x.sum(axis=0)) / n
    chi2 = float(((x - expected) ** 2 / expected).sum())
    return float(np.sqrt(chi2 / (n * (min(x.shape) - 1))))


def cramers_v_change(original, perturbed) -> float:
    """Relative change of Cramer's V in percent, ``100 (V_orig - V_pert) / V_orig``.

    Positive when protection weakened the association.

    Examples
    --------
    >>> round(cramers_v_change([[10, 0], [0, 10]], [[8, 2], [2, 8]]), 6)
    40.0
    """
    v_orig = cramers_v(original)
    v_pert = cramers_v(perturbed)
    if not np.isfinite(v_orig) or v_orig == 0:
        return float("nan")
    return float(100.0 * (v_orig - v_pert) / v_orig)


# ---------------------------------------------------------------- tables
def _root_position(h) -> int:
    return h.index(h.root)


def two_way(table: Table, values: np.ndarray | None = None, rows: str | None = None,
            cols: str | None = None) -> np.ndarray:
    """The leaf-by-leaf two-way array of ``values`` over dimensions ``rows`` x ``cols``
    (other dimensions at their total).

    Examples
    --------
    >>> from tabprotect.model import Hierarchy
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> two_way(t).tolist()
    [[3.0, 2.0], [3.0, 2.0]]
    """
    if not table.dimensions or len(table.dimensions) < 2:
        raise InputError("a two-way table needs a product table with at least 2 dimensions")
    names = table.dimension_names
    rows = rows or names[0]
    cols = cols or names[1]
    if rows == cols:
        raise InputError("two-way table: rows and columns must be different dimensions")
    values = table.value if values is None else np.asarray(values, dtype=float)
    keep = np.ones(table.n_cells, dtype=bool)
    for d, pos in zip(table.dimensions, table.positions):
        if d.name in (rows, cols):
            keep &= d.hierarchy.is_leaf[pos]
        else:
            keep &= pos == _root_position(d.hierarchy)
    hr, hc = table.hierarchy(rows), table.hierarchy(cols)
    r_leaf = np.flatnonzero(hr.is_leaf)
    c_leaf = np.flatnonzero(hc.is_leaf)
    r_index = np.full(len(hr), -1)
    r_index[r_leaf] = np.arange(len(r_leaf))
    c_index = np.full(len(hc), -1)
    c_index[c_leaf] = np.arange(len(c_leaf))
    out = np.zeros((len(r_leaf), len(c_leaf)))
    pr = table.positions[names.index(rows)][keep]
    pc = table.positions[names.index(cols)][keep]
    out[r_index[pr], c_index[pc]] = values[keep]
    return out


def _levels(table: Table) -> np.ndarray:
    """Hierarchy level of each cell: sum over dimensions of the code depths (0 = grand
    total); 0 for every cell of a general table."""
    return np.asarray(table.depth, dtype=np.int64)


def _level_label(table: Table, level: int) -> str:
    if not table.dimensions:
        return "all"
    return "grand total" if level == 0 else f"level {level}"


def suppression_loss(table: Table, status: np.ndarray | None = None) -> pd.DataFrame:
    """Number, value and contributors of suppressed cells and their shares, by level.

    Parameters
    ----------
    table : the original table (values, contributors)
    status : the published pattern (default ``table.status``); U and M are suppressed

    Returns
    -------
    DataFrame, one row per hierarchy level (sum of the cells' code depths, 0 = grand
    total) and a last row ``"all"``, with columns ``cells, suppressed, primary, secondary,
    value, value_suppressed, freq, freq_suppressed, share_cells, share_value,
    share_freq`` (shares in percent of the level's cells, value and contributors).

    Examples
    --------
    >>> from tabprotect.model import Hierarchy
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> st = t.status.copy(); st[[4, 5, 7, 8]] = ["U", "M", "M", "M"]
    >>> suppression_loss(t, st).loc["all", ["suppressed", "value_suppressed"]].tolist()
    [4.0, 10.0]
    """
    return _level_frame(_suppression_rows(table, status))


def _suppression_rows(table: Table, status: np.ndarray | None) -> dict[str, dict]:
    """:func:`suppression_loss`'s rows by level label (pandas-free: the CLI's summary)."""
    status = table.status if status is None else np.asarray(status)
    if status.shape != (table.n_cells,):
        raise InputError(f"suppression loss: {status.shape[0]} status letters for "
                         f"{table.n_cells} cells")
    supp = is_suppressed(status)
    level = _levels(table)
    value = np.abs(table.value)
    freq = np.nan_to_num(table.freq, nan=0.0)
    rows = {}
    for lev in list(np.unique(level)) + ["all"]:
        m = np.ones(table.n_cells, dtype=bool) if lev == "all" else level == lev
        rows["all" if lev == "all" else _level_label(table, int(lev))] = {
            "cells": float(m.sum()),
            "suppressed": float((m & supp).sum()),
            "primary": float((m & (status == "U")).sum()),
            "secondary": float((m & (status == "M")).sum()),
            "value": float(value[m].sum()),
            "value_suppressed": float(value[m & supp].sum()),
            "freq": float(freq[m].sum()),
            "freq_suppressed": float(freq[m & supp].sum()),
        }
    for row in rows.values():
        row["share_cells"] = _share(row["suppressed"], row["cells"])
        row["share_value"] = _share(row["value_suppressed"], row["value"])
        row["share_freq"] = _share(row["freq_suppressed"], row["freq"])
    return rows


def _share(part: float, whole: float) -> float:
    """``part`` in percent of ``whole``; NaN when ``whole`` is not positive."""
    return 100 * part / whole if whole > 0 else float("nan")


def _level_frame(rows: dict[str, dict]) -> "pd.DataFrame":
    """Rows by level label as a DataFrame indexed by ``level``."""
    import pandas as pd
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "level"
    return out


def deviation_loss(table: Table, protected_values, zero: str = "unit") -> pd.DataFrame:
    """Deviation of protected (e.g. rounded) values from the original, by hierarchy level.

    Returns
    -------
    DataFrame, one row per level and a last row ``"all"``: ``cells, changed,
    sum_abs_deviation, mean_abs_deviation, max_abs_deviation, rad`` (RAD over the
    level's cells with the given zero treatment).

    Examples
    --------
    >>> from tabprotect.model import Hierarchy
    >>> t = Table.from_arrays({"x": Hierarchy.flat(["a", "b"], total="T")}, [7, 3, 4])
    >>> deviation_loss(t, [5, 5, 5])["max_abs_deviation"].tolist()
    [2.0, 2.0, 2.0]
    """
    return _level_frame(_deviation_rows(table, protected_values, zero))


def _deviation_rows(table: Table, protected_values, zero: str) -> dict[str, dict]:
    """:func:`deviation_loss`'s rows by level label."""
    p = np.asarray(protected_values, dtype=float).ravel()
    if p.shape != (table.n_cells,):
        raise InputError(f"deviation loss: {p.size} protected values for {table.n_cells} "
                         f"cells")
    o = table.value
    dev = np.abs(p - o)
    terms, counted = _rad_terms(o, p, zero)
    level = _levels(table)
    rows = {}
    for lev in list(np.unique(level)) + ["all"]:
        m = np.ones(table.n_cells, dtype=bool) if lev == "all" else level == lev
        rows["all" if lev == "all" else _level_label(table, int(lev))] = {
            "cells": float(m.sum()),
            "changed": float((m & (dev > 1e-9)).sum()),
            "sum_abs_deviation": float(dev[m].sum()),
            "mean_abs_deviation": float(dev[m].mean()) if m.any() else 0.0,
            "max_abs_deviation": float(dev[m].max()) if m.any() else 0.0,
            "rad": float(terms[m & counted].sum()),
        }
    return rows


# ---------------------------------------------------------------- one call
@dataclass
class InfoLoss:
    """Information loss of one protected table.

    Attributes
    ----------
    kind : ``"suppression"`` or ``"deviation"`` (values changed: rounding, perturbation)
    measures : headline numbers (for compare and reports)
    levels : per-level rows by level label (and ``"all"``), the columns of
        :func:`suppression_loss` or :func:`deviation_loss`
    by_level : (property) ``levels`` as that function's DataFrame
    notes : how the numbers were computed (cells used, zero treatment, ...)
    """

    kind: str
    measures: dict[str, float]
    levels: dict[str, dict[str, float]]
    notes: list[str] = field(default_factory=list)

    @property
    def by_level(self) -> "pd.DataFrame":
        return _level_frame(self.levels)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        records = [{"level": label, **row} for label, row in self.levels.items()]
        return {"kind": self.kind, "measures": _jsonable(self.measures),
                "by_level": _jsonable(records), "notes": list(self.notes)}


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return f if np.isfinite(f) else None
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def _protected_values(protected) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(status, values) of a protected table given as a Table, a result object, or an
    array of values."""
    if protected is None:
        return None, None
    if isinstance(protected, Table):
        return protected.status, protected.value
    if isinstance(protected, np.ndarray) or isinstance(protected, (list, tuple)):
        return None, np.asarray(protected, dtype=float)
    for attr in ("rounded", "values"):  # rounding results carry the rounded values
        vals = getattr(protected, attr, None)
        if vals is not None and not callable(vals):
            return None, np.asarray(vals, dtype=float)
    inner = getattr(protected, "table", None)
    if isinstance(inner, Table):
        return inner.status, inner.value
    status = getattr(protected, "status", None)
    if status is not None:
        return np.asarray(status), None
    raise InputError(f"information loss: cannot read a protected table from "
                     f"{type(protected).__name__}")


def info_loss(table: Table, protected=None, *, by: str | None = None,
              cells: str = "inner", zero: str = "unit", rows: str | None = None,
              cols: str | None = None) -> InfoLoss:
    """Information loss of a protected version of ``table``.

    Parameters
    ----------
    table : the original table
    protected : the protected table: a :class:`Table` (its status and values), a
        protection or rounding result, or an array of protected values.  ``None``: the
        suppression pattern in ``table.status``.
    by : for distance measures, a dimension whose codes split the table into K tables
        (e.g. one per small area; its total code is left out); measures are averaged over them
    cells : ``"inner"`` (cells that are no relation's total -- the usual choice, margins
        would count each unit twice) or ``"all"``
    zero : RAD treatment of zero cells (see module docstring)
    rows, cols : dimensions of the two-way table for Cramer's V (default: the first two)

    Examples
    --------
    >>> from tabprotect.model import Hierarchy
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> rounded = [10, 5, 5, 5, 5, 0, 5, 0, 5]
    >>> info_loss(t, np.array(rounded)).measures["aad"]   # inner: |5-3|+|0-2|+|0-3|+|5-2| over 4
    2.5
    """
    status, values = _protected_values(protected)
    if values is not None and values.shape != (table.n_cells,):
        raise InputError(f"information loss: {values.size} protected values for "
                         f"{table.n_cells} cells")
    changed = values is not None and not np.allclose(values, table.value, equal_nan=True)
    if not changed:
        status = table.status if status is None else status
        levels = _suppression_rows(table, status)
        total = levels["all"]
        inner = table.is_inner
        supp = is_suppressed(status)
        measures = {
            "suppressed": total["suppressed"], "primary": total["primary"],
            "secondary": total["secondary"], "value_suppressed": total["value_suppressed"],
            "freq_suppressed": total["freq_suppressed"], "share_cells": total["share_cells"],
            "share_value": total["share_value"], "share_freq": total["share_freq"],
            "inner_suppressed": float((supp & inner).sum()),
            "inner_value_suppressed": float(np.abs(table.value[supp & inner]).sum()),
            "secondary_value": float(np.abs(table.value[status == "M"]).sum()),
            "secondary_freq": float(np.nan_to_num(table.freq[status == "M"], nan=0.0).sum()),
        }
        notes = ["value and contributor shares are relative to the sum over the same cells "
                 "(each level, or every cell for 'all')"]
        return InfoLoss("suppression", measures, levels, notes)

    if cells not in ("inner", "all"):
        raise InputError(f"information loss: cells must be 'inner' or 'all', not '{cells}'")
    use = table.is_inner.copy() if cells == "inner" else np.ones(table.n_cells, dtype=bool)
    groups = None
    if by is not None:
        names = table.dimension_names if table.dimensions else []
        if by not in names:
            raise InputError(f"information loss: 'by' dimension '{by}' is not in the table "
                             f"(dimensions: {', '.join(names)})")
        h = table.hierarchy(by)
        pos = table.positions[names.index(by)]
        # one table per leaf code of the 'by' dimension (its totals are aggregates)
        use &= h.is_leaf[pos]
        groups = pos[use]
    o, p = table.value[use], values[use]
    measures = {
        "hellinger": hellinger_distance(o, p, groups),
        "rad": relative_absolute_distance(o, p, groups, zero=zero),
        "aad": average_absolute_distance(o, p, groups),
        "tables": float(1 if groups is None else len(np.unique(groups))),
        "cells": float(use.sum()),
        "changed_cells": float((np.abs(values - table.value) > 1e-9).sum()),
        "max_abs_deviation": float(np.abs(values - table.value).max()),
    }
    notes = [f"distances over {'inner' if cells == 'inner' else 'all'} cells"
             + (f", averaged over the {int(measures['tables'])} tables of '{by}'" if by else ""),
             f"RAD zero-cell treatment: {zero}"]
    if zero == "skip":
        measures["rad_zero_cells_skipped"] = float((o == 0).sum())
    if table.dimensions and len(table.dimensions) >= 2:
        o2 = two_way(table, table.value, rows, cols)
        p2 = two_way(table, values, rows, cols)
        measures["cramers_v_original"] = cramers_v(o2)
        measures["cramers_v_protected"] = cramers_v(p2)
        measures["rcv"] = cramers_v_change(o2, p2)
        names = table.dimension_names
        notes.append(f"Cramer's V on {rows or names[0]} x {cols or names[1]} (leaf codes)")
    return InfoLoss("deviation", measures, _deviation_rows(table, values, zero), notes)
