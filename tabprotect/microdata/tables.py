"""Microdata risk on the cells of an output table: one table model for both sides.

:func:`risk_table` tabulates the microdata with :func:`tabprotect.tabulate` into a
:class:`~tabprotect.model.Table` whose inner cells are the key combinations of the table's
dimensions (the hierarchies add every total): ``freq`` is the sample frequency ``f_k``,
``value`` the estimated population frequency ``F^_k`` (sum of the weights; ``f_k`` without
weights), and per cell

* ``extra["sample_unique"]`` - 1 where ``f_k = 1``;
* ``extra["below_k"]`` - 1 where ``0 < f_k < k`` (k-anonymity violated);
* ``extra["individual_risk"]`` - the individual risk ``E(1/F | f)`` of a record of the cell
  (Benedetti-Franconi, :func:`risk_approx` or :func:`risk_exact`), 0 for empty cells.

The same table then goes through the rules, suppression, rounding or the cell key method, so
the risk is reported on the cells that are published.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from tabprotect.model.hierarchy import Hierarchy
from tabprotect.model.table import Table
from tabprotect.tabulate import tabulate

from .individual import risk_approx, risk_exact

__all__ = ["risk_table"]


def risk_table(data: pd.DataFrame | str, dimensions: Mapping[str, Hierarchy],
               weight: str | None = None, k: int = 3, method: str = "approx",
               **tabulate_kwargs) -> Table:
    """Key frequencies, sample uniques and individual risk per cell of a table.

    Examples
    --------
    >>> df = pd.DataFrame({"g": ["a", "a", "b"], "w": [2.0, 3.0, 4.0]})
    >>> t = risk_table(df, {"g": Hierarchy.flat(["a", "b"], total="T")}, weight="w")
    >>> t.freq.tolist(), t.value.tolist(), t.extra["sample_unique"].tolist()
    ([3.0, 2.0, 1.0], [9.0, 5.0, 4.0], [0.0, 0.0, 1.0])
    """
    if method not in ("approx", "exact"):
        raise ValueError("risk method must be 'approx' or 'exact'")
    t = tabulate(data, dimensions, weight=weight, **tabulate_kwargs)
    f = t.freq
    F = t.value if weight is not None else t.freq
    risk = np.zeros(t.n_cells)
    seen = f > 0
    fn = risk_approx if method == "approx" else risk_exact
    if seen.any():
        risk[seen] = fn(f[seen], np.maximum(F[seen], f[seen]))
    extra = dict(t.extra)
    extra["sample_unique"] = (f == 1).astype(float)
    extra["below_k"] = ((f > 0) & (f < int(k))).astype(float)
    extra["individual_risk"] = risk
    return t.replace(extra=extra)
