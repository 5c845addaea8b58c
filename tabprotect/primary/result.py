"""The result of applying the rules: statuses, protection levels and reasons per cell."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from tabprotect.model.columns import Columns
from tabprotect.model.status import EMPTY, PRIMARY, PROTECTED
from tabprotect.model.table import Table
from tabprotect.primary.base import Rule

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PrimaryResult"]


@dataclass
class PrimaryResult:
    """The table with primary statuses and protection levels, and why.

    Attributes
    ----------
    table : new Table: status ``U`` on unsafe cells (``Z`` empty, ``P`` protected, ``S``
        otherwise) and ``upl``, ``lpl``, ``spl`` set
    reason : per cell, the rules that fired, in evaluation order, joined by ``+``
    fired : rule label -> mask of cells where it fired
    rules : the rules applied
    """

    table: Table
    reason: np.ndarray
    fired: dict[str, np.ndarray]
    rules: list[Rule] = field(default_factory=list)

    @property
    def unsafe(self) -> np.ndarray:
        return self.table.status == PRIMARY

    def count_bound(self, suppressed: np.ndarray) -> float | None:
        """The upper bound an intruder who knows the rules reads off a pattern of
        primaries only: in a frequency table whose ``suppressed`` cells are all primaries
        of minimum-frequency rules alone, each count is below the largest threshold
        (``n - 1``). None where the pattern says nothing of a single ``X``: a secondary,
        an a-priori status or another rule among the reasons, or holding or weighted
        counts (they do not bound the cell's value).
        """
        from tabprotect.primary.frequency import FrequencyRule
        t = self.table
        if t.kind != "frequency" or not suppressed.any():
            return None
        plain = {r.label: r.n for r in self.rules
                 if isinstance(r, FrequencyRule) and not (r.holding or r.weighted)}
        reasons = self.reason[suppressed]
        if not plain or not all(r and set(r.split("+")) <= plain.keys() for r in reasons):
            return None
        if not np.array_equal(t.value[suppressed], t.freq[suppressed]):
            return None
        return float(max(plain.values()) - 1)

    def summary(self) -> "pd.DataFrame":
        """One row per rule: cells where it fired, where it was the first reason (the
        tau-Argus status), and where it was the only reason; then the total of unsafe
        cells."""
        import pandas as pd
        return pd.DataFrame(self.summary_rows())

    def summary_rows(self) -> list[dict]:
        """:meth:`summary`'s rows as dicts (the run summary's ``rules``)."""
        first = np.array([r.split("+")[0] if r else "" for r in self.reason], dtype=object)
        rows = []
        for label, mask in self.fired.items():
            rows.append({"rule": label, "cells": int(mask.sum()),
                         "first_reason": int(np.sum(first[mask] == label)),
                         "only_reason": int(np.sum(self.reason[mask] == label))})
        rows.append({"rule": "unsafe (any rule)", "cells": int(self.unsafe.sum()),
                     "first_reason": int(self.unsafe.sum()), "only_reason": 0})
        rows.append({"rule": "empty (Z)", "cells": int((self.table.status == EMPTY).sum()),
                     "first_reason": 0, "only_reason": 0})
        rows.append({"rule": "protected (P)",
                     "cells": int((self.table.status == PROTECTED).sum()),
                     "first_reason": 0, "only_reason": 0})
        return rows

    def to_frame(self, only_unsafe: bool = False) -> "pd.DataFrame":
        """Cells with ``value, freq, status, reason, upl, lpl, spl`` columns."""
        return self.to_columns(only_unsafe).to_pandas()

    def to_columns(self, only_unsafe: bool = False) -> Columns:
        """:meth:`to_frame` as :class:`~tabprotect.model.columns.Columns`."""
        out = self.table.to_columns(("value", "freq", "status"), confidential=True)
        out["reason"] = self.reason
        out["upl"] = self.table.upl
        out["lpl"] = self.table.lpl
        out["spl"] = self.table.spl
        if only_unsafe:
            out = out.rows(self.unsafe)
        return out
