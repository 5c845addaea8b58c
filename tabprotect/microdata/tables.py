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
from .keys import KeyFrequencies

__all__ = ["risk_table", "key_table"]


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


def key_table(freq: KeyFrequencies, data: pd.DataFrame, weights: str | None = None,
              k: int = 3, max_cells: int = 5_000_000) -> Table:
    """:func:`key_frequencies`' combinations as a :class:`Table` through ``tabulate``: one
    flat dimension per key (its observed categories) with every total; ``freq`` = ``f_k``,
    ``value`` = ``F^_k``, sample uniques and individual risk per cell (:func:`risk_table`).
    ``max_cells`` guards against a product of categories too large to hold."""
    from tabprotect.errors import InputError
    if freq.missing_matches:
        raise InputError("key table: missing values that match any category have no cell")
    cats = {c: sorted(map(str, pd.unique(data[c].dropna()))) for c in freq.keys}
    n_cells = float(np.prod([len(v) + 1 for v in cats.values()], dtype=float))
    if n_cells > max_cells:
        raise InputError(f"key table: {int(n_cells)} cells exceed max_cells={max_cells}")
    frame = data[freq.keys].astype(str)
    if weights is not None:
        frame[weights] = data[weights]
    dims = {c: Hierarchy.flat(v, total="Total", name=c) for c, v in cats.items()}
    return risk_table(frame, dims, weight=weights, k=k)

