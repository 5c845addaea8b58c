"""The result of a rounded-table audit: integer intervals of the true values and flags."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tabprotect.model.columns import Columns
from tabprotect.model.table import Table

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["TOL", "RoundedAuditResult"]

#: tolerance of the audit's comparisons of LP values (integer bounds)
TOL = 1e-6


@dataclass
class RoundedAuditResult:
    """Intervals of the true values of a rounded table, as an intruder can compute them.

    Arrays have one entry per cell.

    Attributes
    ----------
    published_array : the rounded values the audit assumed published (nan where
        unpublished; also ``published_values``)
    range_lower, range_upper : the range the method alone implies for each cell
    lower, upper : integer min and max of each cell given everything the intruder knows
    is_published : mask of the cells the intruder sees
    promised : the published cells the method promises to protect (see
        :func:`promised_cells`)
    narrower : interval strictly inside the method's own finite range
    exact : single-value interval of a promised cell, or of an unpublished cell
    pinned_small : interval inside ``[1, small_max]``
    true_inside : when true values are known: each lies in its interval (a check of the
        audit and of the rounding; None otherwise)
    table : the audited table as published (codes and structure; rounded values only)
    params : the settings of the audit (base, method, k_step, small_max)

    It follows the result protocol of :mod:`tabprotect.results` (``passed``,
    ``published()``, ``params``, ``seconds``, ``notes``, ``summary()``, ``to_frame()``).
    """

    published_array: np.ndarray
    range_lower: np.ndarray
    range_upper: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    is_published: np.ndarray
    narrower: np.ndarray
    exact: np.ndarray
    pinned_small: np.ndarray
    promised: np.ndarray
    base: int
    method: str
    k_step: int
    small_max: int
    n_components: int
    n_lp: int
    n_mip: int
    runtime: float
    true_inside: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)
    n_certified: int = 0
    n_local_lp: int = 0
    table: Table | None = None
    params: dict[str, Any] = field(default_factory=dict)
    true_values: np.ndarray | None = field(default=None, repr=False)  # confidential

    @property
    def seconds(self) -> float:
        return self.runtime

    def published(self) -> pd.DataFrame:
        """What the intruder was given: codes and the published rounded ``value`` (NaN
        where unpublished)."""
        if self.table is None:
            raise ValueError("this audit holds no table: call to_frame(table=...)")
        out = self.table.to_frame(())
        out["value"] = self.published_values
        return out

    @property
    def published_values(self) -> np.ndarray:
        """The rounded values the audit assumed published (nan where unpublished)."""
        return self.published_array

    @property
    def passed(self) -> bool:
        """No exact disclosure and no pinned small value."""
        return not bool(self.exact.any() or self.pinned_small.any())

    def summary(self) -> dict[str, Any]:
        width = self.upper - self.lower
        fin = np.isfinite(width) & self.is_published
        return {
            "cells": int(len(self.lower)),
            "published": int(self.is_published.sum()),
            "promised_protection": int(self.promised.sum()),
            "narrower_than_method": int(self.narrower.sum()),
            "exactly_disclosed": int(self.exact.sum()),
            "pinned_small_values": int(self.pinned_small.sum()),
            "min_width_published": float(width[fin].min()) if fin.any() else None,
            "mean_width_published": float(width[fin].mean()) if fin.any() else None,
            "passed": self.passed,
            "components": self.n_components,
            "lp_solved": self.n_lp,
            "mip_solved": self.n_mip,
            "bounds_certified_without_lp": self.n_certified,
            "local_lp_solved": self.n_local_lp,
            "seconds": round(self.runtime, 3),
        }

    def to_frame(self, confidential: bool = False, *, table: Table | None = None,
                 only_flagged: bool = False) -> pd.DataFrame:
        """:meth:`to_columns` as a DataFrame."""
        return self.to_columns(confidential, table=table,
                               only_flagged=only_flagged).to_pandas()

    def to_columns(self, confidential: bool = False, *, table: Table | None = None,
                   only_flagged: bool = False) -> Columns:
        """Cells with ``published, range_lower, range_upper, lower, upper`` and the flags.

        ``confidential=True`` adds ``confidential_value``, the true value of every cell
        (from ``table`` when given, else the true values the audit was given; never for
        files that leave the office). ``table``: the table whose codes label the rows
        (default: the audited one). ``only_flagged`` keeps the flagged cells only."""
        labels = self.table if table is None else table
        if labels is None:
            raise ValueError("this audit holds no table: call to_frame(table=...)")
        out = labels.to_columns(())
        if confidential:
            if table is None and self.true_values is None:
                raise ValueError("this audit was given no true values: call "
                                 "to_frame(True, table=<the original table>)")
            out["confidential_value"] = self.true_values if table is None else table.value
        out["published"] = self.published_array
        out["range_lower"] = self.range_lower
        out["range_upper"] = self.range_upper
        out["lower"] = self.lower
        out["upper"] = self.upper
        out["promised"] = self.promised
        out["narrower"] = self.narrower
        out["exact"] = self.exact
        out["pinned_small"] = self.pinned_small
        if only_flagged:
            out = out.rows(self.narrower | self.exact | self.pinned_small)
        return out
