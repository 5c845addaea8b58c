"""Audit of an adjusted table (controlled tabular adjustment): every cell is published,
moved; is the publication what CTA promises?

Checked from the table and the published values alone (never from the method's own
records):

* **protection**: every sensitive cell (status ``U`` with a protection level) is
  published outside the open interval ``(value - lpl, value + upl)``;
* **additivity**: every relation holds for the published values within ``tolerance``
  relative to ``max(1, the relation's largest |published value|)``; a product table is
  also rebuilt from its published leaf cells through its model matrix
  (:class:`~tabprotect.model.matrix.ModelMatrix`) and compared cell by cell;
* **bounds**: published values within ``lb .. ub`` (``bounds = "table"``) and within
  ``max_change * |value|`` of the true value for non-sensitive cells;
* **fixed cells** (status ``P``, ``lb == ub``, empty cells, and every total with
  ``fix_totals``) published at their true values;
* **information loss** (reported, not judged): the L1 and L2 distances, the largest
  relative change, the number of changed cells, the largest change of a total, the rank
  correlation of published and true values, and the share of relations whose parts keep
  their order.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tabprotect.model.columns import Columns
from tabprotect.model.table import Table

if TYPE_CHECKING:
    import pandas as pd

#: default tolerance of the checks, relative to max(1, |value|)
TOLERANCE = 1e-6


@dataclass
class AdjustedAudit:
    """The verdict on an adjusted table (the protocol's ``passed``, ``summary``,
    ``to_frame``).

    Attributes
    ----------
    protected : per cell, True unless a sensitive cell lies inside its interval
    additivity_error : largest relation residual relative to its scale
    model_matrix_error : the same from the model matrix (product tables; else None)
    out_of_bounds, fixed_changed : cells breaking a bound / a fixed value
    measures : the information-loss figures
    tolerance : the relative tolerance of every check
    """

    protected: np.ndarray
    required_lower: np.ndarray
    required_upper: np.ndarray
    sensitive: np.ndarray
    additivity_error: float
    model_matrix_error: float | None
    out_of_bounds: np.ndarray
    fixed_changed: np.ndarray
    finite: bool
    measures: dict[str, float]
    tolerance: float
    notes: list[str] = field(default_factory=list)

    @property
    def additive(self) -> bool:
        return self.additivity_error <= self.tolerance and (
            self.model_matrix_error is None or self.model_matrix_error <= self.tolerance)

    @property
    def shortfalls(self) -> np.ndarray:
        """Sensitive cells published inside their protection interval."""
        return np.flatnonzero(~self.protected)

    @property
    def passed(self) -> bool:
        return bool(self.finite and self.protected.all() and self.additive
                    and len(self.out_of_bounds) == 0 and len(self.fixed_changed) == 0)

    def summary(self) -> dict[str, Any]:
        """Counts and figures; no cell value."""
        return {"audit": "PASSED" if self.passed else "FAILED",
                "sensitive": int(self.sensitive.sum()),
                "unprotected_primary": int((~self.protected).sum()),
                "additive": self.additive,
                "additivity_error": self.additivity_error,
                "out_of_bounds": int(len(self.out_of_bounds)),
                "fixed_changed": int(len(self.fixed_changed)),
                "tolerance": self.tolerance, **self.measures}

    def to_frame(self, table: Table, only_flagged: bool = False) -> pd.DataFrame:
        """:meth:`to_columns` as a DataFrame (index: the cells' positions)."""
        return self.to_columns(table, only_flagged).to_pandas()

    def to_columns(self, table: Table, only_flagged: bool = False) -> Columns:
        """Confidential: per cell the true value, the required interval of sensitive
        cells (``required_lower .. required_upper`` must NOT contain the published
        value) and the verdict; ``only_flagged``: only the cells that fail a check."""
        out = table.to_columns(("value",))
        out["sensitive"] = self.sensitive
        out["required_lower"] = np.where(self.sensitive, self.required_lower, np.nan)
        out["required_upper"] = np.where(self.sensitive, self.required_upper, np.nan)
        out["protected"] = self.protected
        bad = np.zeros(table.n_cells, dtype=bool)
        bad[self.out_of_bounds] = True
        out["out_of_bounds"] = bad
        moved = np.zeros(table.n_cells, dtype=bool)
        moved[self.fixed_changed] = True
        out["fixed_changed"] = moved
        if only_flagged:
            out = out.rows(~self.protected | bad | moved)
        return out


def audit_adjusted(table: Table, published: np.ndarray, *, bounds: str = "table",
                   max_change: float | None = None, fix_totals: bool = False,
                   fix_empty: bool = True, tolerance: float = TOLERANCE) -> AdjustedAudit:
    """Check the published values of an adjusted ``table`` (see the module doc).

    Examples
    --------
    >>> from tabprotect.model import Hierarchy
    >>> h = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"x": h}, [10, 4, 6], status=["S", "U", "S"], upl=[0, 2, 0],
    ...                       lpl=[0, 2, 0])
    >>> audit_adjusted(t, np.array([10.0, 6.0, 4.0])).passed
    True
    >>> audit_adjusted(t, np.array([10.0, 5.0, 5.0])).passed   # 5 lies inside (2, 6)
    False
    """
    x = table.value
    y = np.asarray(published, dtype=float)
    n = table.n_cells
    if y.shape != (n,):
        raise ValueError(f"audit_adjusted: {y.size} published values for {n} cells")
    finite = bool(np.isfinite(y).all())
    tol = tolerance * np.maximum(1.0, np.abs(x))
    sensitive = (table.status == "U") & ((table.upl > 0) | (table.lpl > 0))
    low, high = x - table.lpl, x + table.upl
    # outside the open interval: at or beyond an end (an end at the value itself,
    # a level of 0, is met by the value)
    outside = (y >= high - tol * (table.upl > 0)) | (y <= low + tol * (table.lpl > 0))
    protected = ~sensitive | outside
    protected &= np.isfinite(y) | ~sensitive
    residual = np.abs(table.relations @ np.nan_to_num(y))
    scale = np.ones(table.n_relations)
    if table.n_relations:
        scale = np.maximum(1.0, abs(table.relations).multiply(np.abs(np.nan_to_num(y))[None, :])
                           .max(axis=1).toarray().ravel())
    add_err = float((residual / scale).max()) if table.n_relations else 0.0
    mm_err = None
    if table.dimensions:
        rebuilt = table.model_matrix.aggregate(np.nan_to_num(y))
        mm_err = float((np.abs(rebuilt - np.nan_to_num(y))
                        / np.maximum(1.0, np.abs(rebuilt))).max()) if n else 0.0
    out = np.zeros(n, dtype=bool)
    if bounds == "table":
        out |= (y < table.lb - tol) | (y > table.ub + tol)
    if max_change is not None:
        out |= ~sensitive & (np.abs(y - x) > max_change * np.abs(x) + tol)
    fixed = (table.status == "P") | (table.lb >= table.ub)
    if fix_empty:
        fixed |= table.status == "Z"
    if fix_totals:
        fixed |= ~table.is_inner
    changed = fixed & ~(np.abs(y - x) <= tol)
    audit = AdjustedAudit(protected=protected, required_lower=low, required_upper=high,
                          sensitive=sensitive, additivity_error=add_err,
                          model_matrix_error=mm_err, out_of_bounds=np.flatnonzero(out),
                          fixed_changed=np.flatnonzero(changed), finite=finite,
                          measures=adjustment_loss(table, y), tolerance=tolerance)
    if not finite:
        audit.notes.append("some published values are not finite numbers")
    return audit


def adjustment_loss(table: Table, published: np.ndarray) -> dict[str, float]:
    """Information loss of publishing ``published`` for ``table``: ``l1`` (sum of
    absolute changes), ``l2`` (Euclidean norm of the changes), ``max_abs_change``,
    ``max_rel_change`` (over non-zero cells), ``changed_cells``, ``max_total_change``
    and ``max_total_rel_change`` (cells that are some relation's total),
    ``spearman`` (rank correlation of published and true values) and
    ``relations_order_kept`` (share of relations whose parts keep their order).

    Examples
    --------
    >>> from tabprotect.model import Hierarchy
    >>> t = Table.from_arrays({"x": Hierarchy.flat(["a", "b"], total="T")}, [10, 4, 6])
    >>> adjustment_loss(t, np.array([10.0, 6.0, 4.0]))["l1"]
    4.0
    """
    x = table.value
    y = np.nan_to_num(np.asarray(published, dtype=float))
    d = y - x
    nz = x != 0
    totals = ~table.is_inner
    rel = np.abs(d[nz]) / np.abs(x[nz])
    out = {"l1": float(np.abs(d).sum()), "l2": float(np.sqrt((d * d).sum())),
           "max_abs_change": float(np.abs(d).max()) if len(d) else 0.0,
           "max_rel_change": float(rel.max()) if len(rel) else 0.0,
           "changed_cells": int((np.abs(d) > 1e-9 * np.maximum(1.0, np.abs(x))).sum()),
           "max_total_change": float(np.abs(d[totals]).max()) if totals.any() else 0.0,
           "max_total_rel_change": float((np.abs(d[totals & nz]) / np.abs(x[totals & nz]))
                                         .max()) if (totals & nz).any() else 0.0}
    if len(x) > 1 and np.ptp(x) > 0 and np.ptp(y) > 0:
        # Spearman's rho: the correlation of the average ranks (scipy.stats' import
        # takes longer than the whole adjustment of a 1,000-cell table)
        out["spearman"] = float(np.corrcoef(_average_ranks(x), _average_ranks(y))[0, 1])
    else:
        out["spearman"] = 1.0
    out["relations_order_kept"] = _order_kept(table, x, y)
    return out


def _average_ranks(a: np.ndarray) -> np.ndarray:
    """Ranks 1..n of ``a``, tied values sharing their average rank."""
    order = np.argsort(a, kind="stable")
    first = np.r_[True, a[order][1:] != a[order][:-1]]
    starts = np.flatnonzero(first)
    counts = np.diff(np.r_[starts, len(a)])
    ranks = np.empty(len(a))
    ranks[order] = (starts + (counts + 1) / 2.0)[np.cumsum(first) - 1]
    return ranks


def _order_kept(table: Table, x: np.ndarray, y: np.ndarray) -> float:
    """Share of relations whose parts, sorted by true value, are sorted by published
    value too (ties in the true values may come out in either order)."""
    A = table.relations.tocsr()
    if A.shape[0] == 0:
        return 1.0
    kept = 0
    for r in range(A.shape[0]):
        cols = A.indices[A.indptr[r]:A.indptr[r + 1]]
        parts = cols[cols != table.relation_total[r]]
        order = np.lexsort((y[parts], x[parts]))
        xs, ys = x[parts][order], y[parts][order]
        steps = np.diff(ys)
        kept += bool(((steps >= -1e-9 * np.maximum(1.0, np.abs(ys[1:])))
                      | (np.diff(xs) == 0)).all())
    return kept / A.shape[0]
