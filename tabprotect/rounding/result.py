"""The result of a rounding: the rounded values, how they were found, the deviation and
the audit (the result protocol of :mod:`tabprotect.results`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.table import Table
from tabprotect.results import publication_frame, published_table

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["METHODS", "TOL", "ZeroRestrictedInfeasible", "RoundingResult"]

METHODS = ("deterministic", "random", "controlled", "small-count")
#: tolerance of "is a multiple" / "equals" on counts held as floats
TOL = 1e-9


class ZeroRestrictedInfeasible(InputError):
    """No zero-restricted controlled rounding exists (possible in 3+ dimensions)."""


@dataclass
class RoundingResult:
    """A rounded table, how it was made, its deviation and its audit (the protocol of
    :mod:`tabprotect.results`).

    Attributes
    ----------
    confidential_table : the original table (true counts; not for publication)
    table, rounded_table : (properties) the table as published: rounded values only
    rounded : rounded value of every cell (same order as ``table.value``)
    base : the rounding base
    method : ``deterministic``, ``random``, ``controlled`` or ``small-count``
    params : every parameter needed to reproduce the result (the seed included)
    additive : the rounded table satisfies every relation of the table
    zero_restricted : every cell is on one of its two adjacent multiples and multiples
        are unchanged (False for small-count: large counts stay unrounded)
    max_steps : largest number of multiples any cell moved beyond its adjacent ones
        (0 for zero-restricted rounding; ``<= k_step`` for the K-step relaxation)
    solver_path : how the solution was found, e.g. ``"network-flow LP (integral)"``,
        ``"MILP"``, ``"partitioned MILP (7 parts)"``, ``"K-step MILP"``, ``"closed form"``
    proven_optimal : the deviation is a proven minimum for the method's problem
    notes : plain-language remarks (non-additivity, fallbacks, time limits)
    audit : the rounded-table audit, or None when not requested
    seconds : wall-clock seconds of the rounding (the audit's are its own)
    """

    confidential_table: Table
    rounded: np.ndarray
    base: int
    method: str
    params: dict[str, Any]
    additive: bool
    zero_restricted: bool
    max_steps: int
    solver_path: str
    proven_optimal: bool
    seconds: float
    notes: list[str] = field(default_factory=list)
    audit: Any = None

    @property
    def table(self) -> Table:
        """The published table: the rounded values, no true value or count."""
        return published_table(self.confidential_table, self.rounded)

    @property
    def rounded_table(self) -> Table:
        """The published table (same as :attr:`table`)."""
        return self.table

    @property
    def passed(self) -> bool:
        """The rounded-table audit passed (False when no audit was run)."""
        return bool(self.audit is not None and self.audit.passed)

    @property
    def deviation(self) -> np.ndarray:
        """``rounded - original`` per cell (confidential: it gives the true values)."""
        return self.rounded - self.confidential_table.value

    @property
    def total_absolute_deviation(self) -> float:
        return float(np.abs(self.deviation).sum())

    @property
    def max_absolute_deviation(self) -> float:
        return float(np.abs(self.deviation).max()) if len(self.rounded) else 0.0

    def summary(self) -> dict[str, Any]:
        """Counts and deviations for reports and the CLI."""
        dev = np.abs(self.deviation)
        out = {
            "method": self.method,
            "base": self.base,
            "cells": int(self.confidential_table.n_cells),
            "changed_cells": int((dev > TOL).sum()),
            "total_absolute_deviation": float(dev.sum()),
            "max_absolute_deviation": self.max_absolute_deviation,
            "mean_absolute_deviation": float(dev.mean()) if len(dev) else 0.0,
            "additive": self.additive,
            "zero_restricted": self.zero_restricted,
            "max_steps": self.max_steps,
            "solver_path": self.solver_path,
            "proven_optimal": self.proven_optimal,
            "seconds": round(self.seconds, 3),
        }
        out.update({f"param_{k}": v for k, v in self.params.items()
                    if isinstance(v, (int, float, str, bool)) or v is None})
        return out

    def published(self) -> pd.DataFrame:
        """Only what may be published: the codes and the rounded ``value``."""
        return publication_frame(self.table, with_status=False)

    def to_frame(self, confidential: bool = False) -> pd.DataFrame:
        """One row per cell: codes and the rounded ``value``; ``confidential=True`` adds
        ``confidential_value`` (the true value) and ``deviation`` (rounded - true)."""
        out = self.published()
        if confidential:
            out["confidential_value"] = self.confidential_table.value
            out["deviation"] = self.deviation
        return out
