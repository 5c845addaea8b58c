"""Hierarchies from correspondence tables (one column per level, coarse to fine)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from tabprotect.model.columns import Columns
from tabprotect.model.hierarchy import Hierarchy

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["hierarchy_from_correspondence"]


def hierarchy_from_correspondence(frame: "pd.DataFrame | Columns", columns: Sequence[str],
                                  total: str = "Total", name: str = "") -> Hierarchy:
    """A hierarchy from a correspondence table (one column per level, coarse to fine).

    A code repeated at the next level (a level with no subdivision, e.g. ``AZ, X, X`` in
    INSEE's activity table) is one node, not a cycle; an empty code is an error naming the
    line (:meth:`Hierarchy.from_columns`, with the table named in its messages).

    Examples
    --------
    >>> df = Columns({"a10": ["AZ", "AZ", "BE"], "a21": ["A", "X", "B"],
    ...                    "a88": ["01", "X", "06"]})
    >>> h = hierarchy_from_correspondence(df, ["a10", "a21", "a88"])
    >>> h.children_of("AZ"), h.leaves
    (('A', 'X'), ('01', 'X', '06'))
    """
    return Hierarchy.from_columns(frame, columns, total=total, name=name,
                                  label=f"correspondence table for {name or 'hierarchy'}")
