"""What every sensitivity rule shares: the ``Rule`` interface and the rule variable's
totals, largest contributions and deficit scaling."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.table import Table

__all__ = ["Rule", "TOL", "rule_total", "scale_deficit", "largest", "check_magnitude",
           "positive_number"]

#: a deficit counts only when it exceeds this share of ``max(1, |X|)`` (floating-point
#: noise does not flip a rule's boundary)
TOL = 1e-9


@dataclass(frozen=True)
class Rule:
    """A sensitivity rule.  ``evaluate`` returns (unsafe mask, UPL, LPL) in value units."""

    @property
    def kind(self) -> str:
        raise NotImplementedError

    @property
    def label(self) -> str:
        raise NotImplementedError

    def evaluate(self, table: Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        raise NotImplementedError

    @property
    def tops_needed(self) -> int:
        return 0


def rule_total(table: Table) -> np.ndarray:
    return table.extra["shadow"] if "shadow" in table.extra else table.value


def scale_deficit(table: Table, deficit: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Deficit in rule-variable units -> response units (``|value| D / X``)."""
    if "shadow" not in table.extra:
        return deficit
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(total > 0, np.abs(table.value) / total, 1.0)
    return deficit * factor


def largest(table: Table, n: int, holding: bool, who: str) -> np.ndarray:
    if holding:
        cols = [f"holding_top{j + 1}" for j in range(n)]
        missing = [c for c in cols if c not in table.extra]
        if missing:
            raise InputError(f"{who}: the table has no holding-level contributions "
                             f"({missing[0]}); tabulate with holding=... and top_k >= {n}")
        return np.column_stack([table.extra[c] for c in cols])
    if table.top is None:
        raise InputError(f"{who}: the table has no largest contributions (top1, top2, ...); "
                         f"give top columns in the cells file or tabulate from microdata")
    if table.top.shape[1] < n:
        raise InputError(f"{who}: needs the {n} largest contributions but the table has "
                         f"{table.top.shape[1]} (tabulate with top_k >= {n})")
    return table.top[:, :n]


def check_magnitude(table: Table, who: str) -> None:
    if table.kind != "magnitude":
        raise InputError(f"{who} applies to magnitude tables; this is a frequency table")


def positive_number(value, what: str, allow_zero: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{what} must be a number, not {value!r}") from None
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise InputError(f"{what} must be {'>= 0' if allow_zero else '> 0'}, not {value!r}")
    return v
