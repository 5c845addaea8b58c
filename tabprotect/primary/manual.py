"""A-priori statuses and protection levels from a file or frame."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.columns import Columns, as_columns, read_table_columns, row_place, \
    text_values
from tabprotect.model.table import Table
from tabprotect.primary.base import Rule

__all__ = ["ManualStatus"]


@dataclass(frozen=True)
class ManualStatus(Rule):
    """A-priori statuses and protection levels from a file or frame.

    The frame has one column per dimension (codes), ``status`` (``S`` safe, ``U`` unsafe,
    ``P`` protected; empty = no change) and optional ``upl``, ``lpl``, ``spl``, ``lb``,
    ``ub``.  A manual ``U`` without levels gets ``safety_range`` % of the value.

    Examples
    --------
    >>> ManualStatus(Columns({"g": ["a"], "status": ["U"]})).label
    'manual'
    """

    frame: Any = None  # DataFrame, Columns or path
    safety_range: float = 10.0
    source: str = "manual"

    kind = property(lambda self: "manual")
    label = property(lambda self: "manual")

    def load(self) -> Columns:
        if self._is_path:
            return read_table_columns(Path(self.frame))
        return as_columns(self.frame)

    @property
    def _is_path(self) -> bool:
        return isinstance(self.frame, (str, Path))

    @property
    def file_name(self) -> str:
        """The manual file's name (without its folder), or ``source`` for a frame."""
        return Path(self.frame).name if self._is_path else self.source

    def locate(self, table: Table) -> tuple[np.ndarray, Columns]:
        """Cell index of every row of the manual frame."""
        frame = self.load()
        src = self.file_name
        if "status" not in frame.columns and not {"upl", "lpl", "lb", "ub"} & set(frame.columns):
            raise InputError(f"{src}: needs a 'status' column (S, U or P) or protection "
                             f"levels/bounds")
        if not table.dimensions:
            raise InputError(f"{src}: manual statuses need a product table")
        pos = []
        for d in table.dimensions:
            if d.name not in frame.columns:
                raise InputError(f"{src}: dimension column '{d.name}' not found")
            p = d.hierarchy.lookup(text_values(frame[d.name]))
            bad = np.flatnonzero(p < 0)
            if len(bad):
                raise InputError(f"{row_place(src, frame, int(bad[0]))}: the code in column "
                                 f"'{d.name}' is not in its hierarchy")
            pos.append(p)
        idx = np.ravel_multi_index(tuple(pos), table.shape)
        return idx, frame
