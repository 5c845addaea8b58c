"""Range ends certified by small LPs around a feasible integer table (large components).

Each sub-problem frees a set of cells and holds every other cell at the feasible table
``start``, so any of its solutions is a feasible table of the whole component; its
unsettled cells are pushed down, then up, all at once, and every cell at a range end in an
*integral* optimum has that end as its exact bound.  First by blocks of the table's array
(cells of one block touch few relations: small, fast LPs), then the rest in random batches
with random helper cells (up to three passes: cells pushed together compete for the slack
of shared totals).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from solvers import LinearProgram, solve
from tabprotect.audit_rounded.component import ComponentAudit, Counters, late, remaining
from tabprotect.audit_rounded.result import TOL
from tabprotect.audit_rounded.settings import RoundedAuditSettings

__all__ = ["LocalCertifier"]

#: passes of random batches over the cells still unsettled
_PASSES = 3


@dataclass
class LocalCertifier:
    """Local LPs of one component; ``lo_done``/``hi_done`` are updated in place."""

    comp: ComponentAudit
    start: np.ndarray          # a feasible integer table of the component's cells
    lo_done: np.ndarray        # lower range end proven to be the bound
    hi_done: np.ndarray        # upper range end proven to be the bound
    counters: Counters
    deadline: float | None
    settings: RoundedAuditSettings
    M: sp.csc_matrix | None = None

    def run(self, blocks: np.ndarray | None = None, helpers: int = 2) -> None:
        """Blocks first (when given), then random batches with ``helpers`` times as many
        random other cells.  Only for large components: small ones go straight to the LPs
        on the whole component."""
        batch = self.settings.local_lp_batch
        if self.comp.k <= self.settings.local_min_batches * batch:
            return
        self.M = self.comp.M.tocsc()
        if blocks is not None and not self._by_blocks(blocks):
            return
        rng = np.random.default_rng(2024)
        for _pass in range(_PASSES):
            for sense, done in (("min", self.lo_done), ("max", self.hi_done)):
                if not self._by_batches(sense, done, batch, helpers, rng):
                    return

    def _by_blocks(self, blocks: np.ndarray) -> bool:
        order = np.argsort(blocks, kind="stable")
        cuts = np.flatnonzero(np.diff(blocks[order])) + 1
        for members in np.split(order, cuts):
            for sense, done in (("min", self.lo_done), ("max", self.hi_done)):
                todo = members[~done[members]]
                if len(todo) == 0:
                    continue
                rest = np.setdiff1d(members, todo)
                if not self.push(np.concatenate([todo, rest]), len(todo), sense):
                    return False
        return True

    def _by_batches(self, sense: str, done: np.ndarray, batch: int, helpers: int,
                    rng: np.random.Generator) -> bool:
        k = self.comp.k
        todo = np.flatnonzero(~done)
        rng.shuffle(todo)
        for first in range(0, len(todo), batch):
            group = todo[first:first + batch]
            group = group[~done[group]]
            if len(group) == 0:
                continue
            n_help = max(helpers * len(group), 2 * batch)
            others = np.setdiff1d(rng.choice(k, size=min(k, n_help), replace=False), group)
            if not self.push(np.concatenate([group, others]), len(group), sense):
                return False
        return True

    def push(self, cols: np.ndarray, n_obj: int, sense: str) -> bool:
        """Free ``cols`` (the first ``n_obj`` in the objective), hold the rest at
        ``start``, push toward ``sense``; False when the time limit is reached."""
        comp, counters = self.comp, self.counters
        if late(self.deadline):
            counters.cut = True
            return False
        held = np.ones(comp.k, dtype=bool)
        held[cols] = False
        sub = self.M[:, cols].tocsr()
        rows = np.flatnonzero(np.diff(sub.indptr) > 0)
        rhs = (comp.rhs - self.M @ np.where(held, self.start, 0.0))[rows]
        c = np.zeros(len(cols))
        c[:n_obj] = 1.0
        lp = LinearProgram(c=c, A=sub[rows], row_lower=rhs, row_upper=rhs,
                           col_lower=comp.lo[cols], col_upper=comp.hi[cols], sense=sense)
        res = solve(lp, time_limit=remaining(self.deadline), threads=comp.threads)
        counters.lp += 1
        counters.local_lp += 1
        if res.status != "optimal" or res.x is None:
            return True
        if np.abs(res.x - np.round(res.x)).max(initial=0.0) > TOL:
            res = self._integer(lp, len(cols))
            if res is None:
                return True
        x = self.start.copy()
        x[cols] = res.x
        if np.abs(x - np.round(x)).max(initial=0.0) <= TOL:
            self.lo_done[:] |= np.abs(x - comp.lo) <= TOL
            self.hi_done[:] |= np.isfinite(comp.hi) & (np.abs(x - comp.hi) <= TOL)
        return True

    def _integer(self, lp: LinearProgram, n: int):
        """A fractional vertex (not a network): any integer solution of the sub-problem
        is a certificate, optimal or not, so a short branch and bound run is enough."""
        lp.integrality = np.ones(n, dtype=bool)
        limit = self.settings.local_mip_seconds
        if self.deadline is not None:
            limit = min(limit, remaining(self.deadline))
        res = solve(lp, time_limit=limit, mip_gap=self.settings.local_mip_gap,
                    threads=self.comp.threads)
        self.counters.mip += 1
        if res.x is None or res.status not in ("optimal", "time_limit"):
            return None
        return res
