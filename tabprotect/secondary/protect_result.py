"""The result of :func:`~tabprotect.secondary.protect`: the protected table, the
settings applied, the method's and the repair's figures, and the audit that judged it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tabprotect.audit import AuditResult
from tabprotect.model.table import Table
from tabprotect.results import publication_frame, published_table

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class ProtectResult:
    """A protected table and everything needed to trust it (the protocol of
    :mod:`tabprotect.results`).

    Attributes
    ----------
    confidential_table : the input table (true values) with the final status (U
        primary, M secondary): for audits and further processing, never for publication
    table : (property) the table as published: suppressed cells without value,
        contributor count or contributions (:func:`tabprotect.results.published_table`)
    method : the method that was run
    params : the settings applied: protect()'s own, every field of the method's
        options (defaults included) and, under ``"settings"``, the fields of
        :class:`~tabprotect.secondary.protect_settings.ProtectSettings` the call applied;
        nothing that was not applied
    cost : total suppression cost of the secondary cells (the cost function's units)
    proven_optimal : the method proved the pattern has minimum cost (and no repair was
        needed afterwards)
    mip_gap : relative gap to the best bound (optimal method), None when not known
    solver_status, solver : the method's status and details (iterations, cuts, ...)
    repaired : cells the audit-and-repair loop added after the method
    audit : the final :class:`~tabprotect.audit.AuditResult` (the judge)
    seconds : wall-clock time of the whole call
    stage_seconds : wall-clock seconds per stage, in order, every stage the call ran
        (``setup``, ``feasibility check`` when the up-front check ran, ``method``,
        ``cube pass``, ``audit 1``, ``integral witnesses``, ``repair 1 cubes``,
        ``repair 1 LPs``, ``audit 2``, ..., ``final audit``); together about ``seconds``
    """

    confidential_table: Table
    method: str
    params: dict[str, Any]
    cost: float
    proven_optimal: bool
    mip_gap: float | None
    solver_status: str
    solver: dict[str, Any]
    repaired: np.ndarray
    audit: AuditResult
    seconds: float
    method_seconds: float = 0.0
    audit_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    stage_seconds: dict[str, float] = field(default_factory=dict)

    @property
    def table(self) -> Table:
        """The published table (suppressed values, counts and contributions are NaN)."""
        return published_table(self.confidential_table)

    @property
    def status(self) -> np.ndarray:
        return self.confidential_table.status

    @property
    def passed(self) -> bool:
        """The final pattern passed the full-table audit."""
        return self.audit.passed

    @property
    def n_primary(self) -> int:
        return int((self.status == "U").sum())

    @property
    def n_secondary(self) -> int:
        return int((self.status == "M").sum())

    def summary(self) -> dict[str, Any]:
        """Counts, cost, value and share suppressed, verdict and times (for reports)."""
        t = self.confidential_table
        sec = t.status == "M"
        sup = t.suppressed
        total_value = float(np.abs(t.value).sum())
        return {
            "method": self.method,
            "cells": t.n_cells,
            "primary": self.n_primary,
            "secondary": self.n_secondary,
            "cost": self.cost,
            "value_secondary": float(np.abs(t.value[sec]).sum()),
            "value_suppressed": float(np.abs(t.value[sup]).sum()),
            "share_value_suppressed": (float(np.abs(t.value[sup]).sum()) / total_value
                                       if total_value > 0 else 0.0),
            "repaired": int(len(self.repaired)),
            "proven_optimal": self.proven_optimal,
            "mip_gap": self.mip_gap,
            "solver_status": self.solver_status,
            "audit": "PASSED" if self.passed else "FAILED",
            "unprotected_primary": int((~self.audit.protected).sum()),
            "method_seconds": round(self.method_seconds, 3),
            "audit_seconds": round(self.audit_seconds, 3),
            "seconds": round(self.seconds, 3),
        }

    def published(self) -> pd.DataFrame:
        """The publishable frame: code columns, ``value`` (NaN where suppressed) and
        ``status``."""
        return publication_frame(self.table)

    def to_frame(self, confidential: bool = False) -> pd.DataFrame:
        """One row per cell: the published columns (``value`` and ``freq`` blank where
        suppressed, ``status``), ``published`` (False for suppressed cells) and the
        intruder's interval ``lower``/``upper`` of every suppressed cell; after a verdict
        audit no interval but the bounds ``min_at_least, min_at_most, max_at_least,
        max_at_most`` on its ends (:class:`~tabprotect.audit.VerdictAudit`).

        ``status`` is :data:`~tabprotect.results.SUPPRESSED_LETTER` for every suppressed
        cell, primary and secondary alike, as in published.csv (which are primaries is
        confidential). ``confidential=True`` shows the letters U and M and adds
        ``confidential_value`` and ``confidential_freq``: the true values of every cell
        (not for publication).
        """
        t = self.confidential_table
        out = self.table.to_frame(("value", "freq", "status"), confidential=confidential)
        sup = t.suppressed
        # an interval audit's ``lower, upper``; a verdict audit's bounds on them
        out["published"] = ~sup
        for name, col in self.audit.columns().items():
            out[name] = np.where(sup, col, np.nan) + 0.0    # + 0.0: no -0.0 from a solver
        if confidential:
            out["confidential_value"] = t.value
            out["confidential_freq"] = t.freq
        return out
