"""Protection levels: what the rules found per cell, combined into statuses and levels.

A cell's UPL is the largest over the rules that fire, its LPL the same, capped so that
``value - LPL >= lb`` (the bound as given, ``Table.given_lb``: the one the publication's
empty cells raise, ``Table.lb``, meets a level reaching below it there); the SPL is 0
unless a manual file gives one.  A-priori statuses of the input table are kept (``U``
stays unsafe with reason ``apriori``, ``P`` protected); manual ``S`` and ``P`` win over
every rule.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.status import EMPTY, PRIMARY, PROTECTED, SAFE
from tabprotect.model.columns import parse_numbers, row_place
from tabprotect.model.table import Table, parse_status
from tabprotect.primary.manual import ManualStatus

__all__ = ["Levels"]


@dataclass
class Levels:
    """Per cell, what the rules applied so far say."""

    unsafe: np.ndarray             # some rule fired
    upl: np.ndarray
    lpl: np.ndarray
    spl: np.ndarray
    lb: np.ndarray                 # a-priori bounds as given (a manual file may change
    #                                them; the table raises them where empty cells show)
    ub: np.ndarray
    force_safe: np.ndarray         # manual S
    protected: np.ndarray          # P in the input table or a manual file
    reasons: list[list[str]]       # the labels of the rules that fired, in order
    fired: dict[str, np.ndarray]   # rule label -> cells where it fired

    @classmethod
    def start(cls, table: Table) -> "Levels":
        """Nothing fired yet but the input table's a-priori ``U`` (reason ``apriori``)."""
        n = table.n_cells
        zeros = np.zeros(n)
        lv = cls(np.zeros(n, dtype=bool), zeros.copy(), zeros.copy(), zeros.copy(),
                 table.given_lb.copy(), table.ub.copy(), np.zeros(n, dtype=bool),
                 table.status == PROTECTED, [[] for _ in range(n)], {})
        apriori_u = table.status == PRIMARY
        if apriori_u.any():
            lv.fired["apriori"] = apriori_u.copy()
            lv.unsafe |= apriori_u
            lv.upl = np.maximum(lv.upl, table.upl)
            lv.lpl = np.maximum(lv.lpl, table.lpl)
            lv.spl = np.maximum(lv.spl, table.spl)
            for i in np.flatnonzero(apriori_u):
                lv.reasons[i].append("apriori")
        return lv

    def add(self, label: str, mask: np.ndarray, upl: np.ndarray, lpl: np.ndarray) -> None:
        """A rule fired on ``mask`` with levels ``upl``/``lpl``."""
        while label in self.fired:      # the same rule twice: keep both in the summary
            label += "'"
        self.fired[label] = mask
        self.unsafe |= mask
        self.upl = np.where(mask, np.maximum(self.upl, upl), self.upl)
        self.lpl = np.where(mask, np.maximum(self.lpl, lpl), self.lpl)
        for i in np.flatnonzero(mask):
            self.reasons[i].append(label)

    def add_manual(self, rule: ManualStatus, table: Table) -> None:
        """The statuses, levels and bounds of a manual file."""
        idx, frame = rule.locate(table)
        st = (parse_status(frame["status"], rule.file_name, rows=frame) if "status" in frame.columns
              else np.full(len(idx), ""))
        bad = ~np.isin(st, ["", SAFE, PRIMARY, PROTECTED])
        if bad.any():
            raise InputError(f"{row_place(rule.file_name, frame, int(np.flatnonzero(bad)[0]))}: "
                             f"status must be S, U or P (safe, unsafe or primary, "
                             f"protected)")

        def col(name):
            if name not in frame.columns:
                return np.full(len(idx), np.nan)
            vals, bad = parse_numbers(frame[name])
            if name in ("upl", "lpl", "spl"):   # a level is a size: finite, not negative
                bad = bad | np.isinf(vals) | (vals < 0)
            if bad.any():
                where = row_place(rule.file_name, frame, int(np.flatnonzero(bad)[0]))
                raise InputError(f"{where}, column '{name}': not a number"
                                 f"{' >= 0' if name in ('upl', 'lpl', 'spl') else ''}")
            return vals

        mu, ml, ms, mlb, mub = (col(c) for c in ("upl", "lpl", "spl", "lb", "ub"))
        self.lb[idx] = np.where(np.isnan(mlb), self.lb[idx], mlb)
        self.ub[idx] = np.where(np.isnan(mub), self.ub[idx], mub)
        is_u = st == PRIMARY
        default = rule.safety_range / 100.0 * np.abs(table.value[idx])
        u_upl = np.where(np.isnan(mu), default, mu)
        u_lpl = np.where(np.isnan(ml), np.where(np.isnan(mu), default, mu), ml)
        u_spl = np.where(np.isnan(ms), 0.0, ms)
        cells_u = idx[is_u]
        mask = np.zeros(table.n_cells, dtype=bool)
        mask[cells_u] = True
        self.fired["manual"] = mask
        self.unsafe[cells_u] = True
        self.upl[cells_u] = np.maximum(self.upl[cells_u], u_upl[is_u])
        self.lpl[cells_u] = np.maximum(self.lpl[cells_u], u_lpl[is_u])
        self.spl[cells_u] = np.maximum(self.spl[cells_u], u_spl[is_u])
        for i in cells_u:
            self.reasons[i].append("manual")
        self.force_safe[idx[st == SAFE]] = True
        self.protected[idx[st == PROTECTED]] = True

    def finish(self, table: Table, empty: np.ndarray) -> tuple[Table, np.ndarray]:
        """The table with statuses and levels, and each cell's reason."""
        unsafe = self.unsafe & ~self.force_safe & ~self.protected
        status = np.full(table.n_cells, SAFE, dtype="<U1")
        status[empty] = EMPTY
        status[unsafe] = PRIMARY
        status[self.protected] = PROTECTED
        upl = np.where(unsafe, self.upl, 0.0)
        lpl = np.where(unsafe, np.minimum(self.lpl, np.maximum(table.value - self.lb, 0.0)),
                       0.0)
        spl = np.where(unsafe, self.spl, 0.0)
        reason = np.array(["+".join(p) for p in self.reasons], dtype=object)
        safe = self.force_safe & (reason != "")
        reason[safe] = "manual-safe (" + reason[safe] + ")"
        prot = self.protected & (reason != "")
        reason[prot] = "protected (" + reason[prot] + ")"
        new = table.replace(status=status, upl=upl, lpl=lpl, spl=spl, lb=self.lb, ub=self.ub)
        return new, reason
