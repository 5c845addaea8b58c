"""Integral feasible tables at many range ends at once, by short branch-and-bound pushes.

On 3-D tables the LP vertices are fractional (the relations are not a network), so one-cell
LPs rarely give an integral table, and each open bound then costs an integer program.  A
push instead asks the integer program for *any* integral table with the open cells low
(then high), weighted at random so that successive pushes reach different ends; a loose
gap and a small node limit suffice, as the table need not be optimal.  Every cell of such a
table that sits at an end of its range has that end as its exact bound (no feasible table
leaves the range).  Each table is checked exactly (integral, every relation balanced,
inside the ranges) before it certifies anything.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers import HighsModel
from tabprotect.audit_rounded.component import ComponentAudit, Counters, late, remaining
from tabprotect.audit_rounded.settings import RoundedAuditSettings

__all__ = ["IntegerPushes"]


@dataclass
class IntegerPushes:
    """Pushes on one component; ``lo_done``/``hi_done`` are updated in place."""

    comp: ComponentAudit
    lo_done: np.ndarray        # lower range end proven to be the bound
    hi_done: np.ndarray        # upper range end proven to be the bound
    counters: Counters
    deadline: float | None
    settings: RoundedAuditSettings

    def run(self, seed: int = 2026) -> None:
        """Pushes down and up until two rounds in a row settle too few open bounds (a push
        cut short by its time limit finds no table)."""
        comp, s = self.comp, self.settings
        if not s.push_min_cells <= comp.k <= s.push_max_cells or self._open() == 0:
            return
        model = HighsModel(comp.lp(integer=True), threads=comp.threads, mip_gap=s.push_gap,
                           mip_max_nodes=s.push_nodes)
        rng = np.random.default_rng(seed)
        weak = 0        # rounds in a row that settled too few
        for _ in range(s.push_rounds):
            before = self._open()
            for sense, done in (("min", self.lo_done), ("max", self.hi_done)):
                if done.all():
                    continue
                if late(self.deadline):
                    self.counters.cut = True
                    return
                weights = np.where(done, 0.0, rng.uniform(0.5, 1.5, comp.k))
                model.set_objective(weights, sense=sense)
                limit = s.push_seconds if self.deadline is None else \
                    min(s.push_seconds, remaining(self.deadline))
                res = model.solve(time_limit=limit, duals=False)
                self.counters.mip += 1
                x = comp.verified_table(res.x)
                if x is not None:
                    comp.absorb(x, self.lo_done, self.hi_done)
            weak = weak + 1 if before - self._open() < s.push_min_share * before else 0
            if weak == 2 or self._open() == 0:
                return

    def _open(self) -> int:
        return int((~self.lo_done).sum() + (~self.hi_done).sum())
