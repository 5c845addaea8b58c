"""The result of controlled tabular adjustment (the protocol of
:mod:`tabprotect.results`).

Every cell is published at its adjusted value.  The published frame has no status
column: the letters would tell an intruder which cells were moved by at least their
protection level, and the sign of a sensitive cell's change (its direction) is as
confidential as its value.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tabprotect.audit_adjusted import AdjustedAudit
from tabprotect.model.table import Table
from tabprotect.results import publication_frame, published_table

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class CTAResult:
    """An adjusted table, how it was found and its audit.

    Attributes
    ----------
    confidential_table : the input table (true values, statuses, levels): not for
        publication
    adjusted : the published value of every cell (same order as ``table.value``)
    method : ``"cta"``
    params : every setting applied (the options' fields included)
    objective : the weighted distance minimised (the weights times the changes: a sum of
        relative changes with ``relative`` weights; ``audit.measures["l1"]`` is the plain
        distance)
    proven_optimal : the search proved the objective minimal for its problem (over all
        directions for ``free``; for the given directions otherwise)
    mip_gap : relative gap between the objective and the best proven lower bound (0
        when optimal, None when no bound is known)
    solver_status : ``optimal``, ``time_limit``, ``heuristic``, ...
    solver : the search's numbers (solves, flips kept, the MILP's log line)
    directions : +1 / -1 per cell for sensitive cells, 0 elsewhere (confidential)
    audit : the :class:`~tabprotect.audit_adjusted.AdjustedAudit` (the judge)
    seconds : wall-clock seconds of the whole call
    """

    confidential_table: Table
    adjusted: np.ndarray
    method: str
    params: dict[str, Any]
    objective: float
    proven_optimal: bool
    mip_gap: float | None
    solver_status: str
    solver: dict[str, Any]
    directions: np.ndarray
    audit: AdjustedAudit
    seconds: float
    notes: list[str] = field(default_factory=list)

    @property
    def table(self) -> Table:
        """The published table: the adjusted values, no true value, status or level."""
        published = published_table(self.confidential_table, self.adjusted)
        return published.replace(status=np.full(published.n_cells, "S", dtype="<U1"))

    @property
    def passed(self) -> bool:
        return self.audit.passed

    @property
    def deviation(self) -> np.ndarray:
        """``adjusted - true`` per cell (confidential: it gives the true values)."""
        return self.adjusted - self.confidential_table.value

    @property
    def cost(self) -> float:
        """The weighted distance (named like the suppression results' cost)."""
        return self.objective

    def summary(self) -> dict[str, Any]:
        """Counts, the distance, the information-loss figures, the verdict and times."""
        t = self.confidential_table
        m = self.audit.measures
        return {"method": self.method, "cells": t.n_cells,
                "sensitive": int(self.audit.sensitive.sum()),
                "distance": self.params.get("distance"), "objective": self.objective,
                "changed_cells": m["changed_cells"], "l1": m["l1"], "l2": m["l2"],
                "max_rel_change": m["max_rel_change"],
                "max_total_change": m["max_total_change"],
                "spearman": m["spearman"],
                "relations_order_kept": m["relations_order_kept"],
                "additive": self.audit.additive,
                "proven_optimal": self.proven_optimal, "mip_gap": self.mip_gap,
                "solver_status": self.solver_status,
                "audit": "PASSED" if self.passed else "FAILED",
                "unprotected_primary": int((~self.audit.protected).sum()),
                "seconds": round(self.seconds, 3),
                # the secret margin's seed (withheld from the trail and the public summary)
                "seed": self.params.get("seed")}

    def published(self) -> pd.DataFrame:
        """Only what may be published: the codes and the adjusted ``value``."""
        return publication_frame(self.table, with_status=False)

    def to_frame(self, confidential: bool = False) -> pd.DataFrame:
        """One row per cell: codes and the adjusted ``value``; ``confidential=True`` adds
        ``confidential_value``, ``deviation``, ``status``, ``direction`` (+1 / -1 for
        sensitive cells) and the interval ``required_lower .. required_upper`` the
        published value of a sensitive cell must lie outside."""
        out = self.published()
        if confidential:
            t = self.confidential_table
            out["confidential_value"] = t.value
            out["deviation"] = self.deviation
            out["status"] = t.status
            out["direction"] = self.directions
            sens = self.audit.sensitive
            out["required_lower"] = np.where(sens, self.audit.required_lower, np.nan)
            out["required_upper"] = np.where(sens, self.audit.required_upper, np.nan)
        return out
