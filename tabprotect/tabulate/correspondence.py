"""Hierarchies from correspondence tables (one column per level, coarse to fine)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.columns import Columns, as_columns
from tabprotect.model.hierarchy import Hierarchy

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["hierarchy_from_correspondence"]


def hierarchy_from_correspondence(frame: "pd.DataFrame | Columns", columns: Sequence[str],
                                  total: str = "Total", name: str = "") -> Hierarchy:
    """A hierarchy from a correspondence table (one column per level, coarse to fine).

    Unlike :meth:`Hierarchy.from_columns`, a code repeated at the next level (a level with
    no subdivision, e.g. ``AZ, X, X`` in INSEE's activity table) is one node, not a cycle.

    Examples
    --------
    >>> df = Columns({"a10": ["AZ", "AZ", "BE"], "a21": ["A", "X", "B"],
    ...                    "a88": ["01", "X", "06"]})
    >>> h = hierarchy_from_correspondence(df, ["a10", "a21", "a88"])
    >>> h.children_of("AZ"), h.leaves
    (('A', 'X'), ('01', 'X', '06'))
    """
    what = f"correspondence table for {name or 'hierarchy'}"
    frame = as_columns(frame)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(f"{what}: column(s) "
                         f"{missing} not found (columns: {', '.join(map(str, frame.columns))})")
    pairs: list[tuple[str, str]] = []
    seen: dict[str, str] = {}
    levels = [np.asarray(frame[c], dtype=object) for c in columns]
    for row_no, row in enumerate(zip(*levels), start=2):
        prev = str(total)
        for code in row:
            if code is None or code != code:      # missing: None, or NaN from a frame
                raise InputError(f"{what} line {row_no}: empty code")
            code = str(code).strip()
            if code == prev:          # no subdivision at this level: same node
                continue
            if code in seen:
                if seen[code] != prev:
                    raise InputError(f"{what} line {row_no}: code '{code}' has two parents "
                                     f"('{seen[code]}' and '{prev}')")
            else:
                seen[code] = prev
                pairs.append((prev, code))
            prev = code
    return Hierarchy.from_pairs(pairs, name=name, source=f"correspondence table {name}")
