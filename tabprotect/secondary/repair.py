"""The greedy repair of an under-protected pattern by whole-table deviation LPs.

The attacker problems it answers are :mod:`tabprotect.secondary.attacker_oracle`'s, the
requirements they check :mod:`tabprotect.secondary.attack_requirements`'.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram
from tabprotect.secondary.attack_requirements import Requirements
from tabprotect.secondary.attacker_oracle import AttackerOracle


class GreedyRepair:
    """Adds suppressions until every attacker problem is satisfied.

    For each violated condition (primary ``s``, direction, attacker ``j``) it solves one LP
    over the whole table: the cheapest deviation vector ``y`` with ``A y = 0``,
    ``y_s >= UPL'_s`` (or ``<= -LPL'_s``), ``y_j = 0``, within the deviation ranges, where
    moving an already suppressed cell is free and moving a candidate costs its suppression
    cost per unit of range.  Every cell that moves is suppressed; ``y`` itself then proves
    the condition holds, and suppressing more never weakens another condition, so the loop
    ends with a protected pattern (or finds a condition no candidate can meet).
    """

    def __init__(self, table, req: Requirements, cost: np.ndarray, candidates: np.ndarray,
                 oracle: AttackerOracle | None = None, witnesses_kept: int = 32):
        self.table = table
        self.req = req
        self.cost = cost
        self.candidates = candidates
        self.oracle = oracle or AttackerOracle(table, req)
        n = table.n_cells
        A = table.relations.tocsr()
        self.n = n
        # columns: p (up moves) then q (down moves), y = p - q
        self.lp = LinearProgram(c=np.zeros(2 * n), A=sp.hstack([A, -A]).tocsr(),
                                row_lower=np.zeros(A.shape[0]), row_upper=np.zeros(A.shape[0]),
                                col_lower=np.zeros(2 * n), col_upper=np.zeros(2 * n))
        self.model: HighsModel | None = None
        #: deviations of earlier repair LPs, each moving suppressed cells only once its
        #: cells are added (suppressing more keeps them valid)
        self._witnesses: list[np.ndarray] = []
        #: how many: a round's conditions on one primary share a few (its up and down
        #: LPs, its attackers'), and each is one vector over the table to test
        self.witnesses_kept = witnesses_kept

    def _keep_witness(self, y: np.ndarray) -> None:
        """Keep a repair LP's deviation (``A y = 0``, within the ranges) for the
        conditions met later: the last ``witnesses_kept`` of them."""
        self._witnesses.append(y)
        del self._witnesses[:-self.witnesses_kept]

    def _witnessed(self, suppressed: np.ndarray, s: int, kind: str, j: int,
                   need: float) -> bool:
        """Whether a kept deviation, or its negative, scaled into the ranges of the
        suppressed cells (attacker ``j``'s cell fixed) moves ``s`` by ``need`` in the
        direction ``kind``: the condition is met by the pattern as it is, and its LP
        would add nothing.  (The oracle's next check judges the condition again.)"""
        if not self._witnesses:
            return False
        W = np.array(self._witnesses)
        W = W[W[:, s] != 0.0]
        if not len(W):
            return False
        up = np.where(suppressed, self.req.up, 0.0)
        dn = np.where(suppressed, self.req.down, 0.0)
        if j >= 0:
            up[j] = dn[j] = 0.0
        W = W * np.where(W[:, s] > 0, 1.0, -1.0)[:, None] * (1.0 if kind == "up" else -1.0)
        # the largest t with -dn <= t * w <= up, per witness
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(W > 0, up / W, np.where(W < 0, dn / -W, np.inf))
        reach = ratio.min(axis=1) * np.abs(W[:, s])
        return bool((reach >= need).any())

    def _weights(self, suppressed: np.ndarray, need: float) -> np.ndarray:
        req = self.req
        free = 1e-6 * float(np.median(self.cost)) / max(need, 1e-9)
        scale_up = np.minimum(req.up, need)
        scale_dn = np.minimum(req.down, need)
        with np.errstate(divide="ignore", invalid="ignore"):
            wu = np.where(scale_up > 0, self.cost / scale_up, 0.0)
            wd = np.where(scale_dn > 0, self.cost / scale_dn, 0.0)
        wu = np.where(suppressed, free, wu)
        wd = np.where(suppressed, free, wd)
        return np.concatenate([wu, wd])

    def _bounds(self, suppressed: np.ndarray):
        movable = suppressed | self.candidates
        up = np.where(movable, self.req.up, 0.0)
        dn = np.where(movable, self.req.down, 0.0)
        return up, dn

    def run(self, suppressed: np.ndarray, *, deadline: float | None = None,
            progress: Callable[[str, float], None] | None = None,
            primaries: np.ndarray | None = None,
            checked=None) -> tuple[np.ndarray, list]:
        """Extend the mask ``suppressed``; returns it and the conditions left unmet.
        ``checked``: the oracle's complete check of ``suppressed`` (for ``primaries``)
        made already, which the first round uses instead of checking again."""
        suppressed = np.asarray(suppressed, bool).copy()
        unmet: list = []
        if self.model is None:
            self.model = HighsModel(self.lp)
        for _ in range(10_000):
            check, checked = checked, None
            if check is None:
                check = self.oracle.check(suppressed, cuts=False, primaries=primaries,
                                          deadline=deadline)
            if check.ok:
                return suppressed, []
            if not check.complete and not check.violated:
                return suppressed, [(-1, "time", -1)]
            changed = False
            unmet = []
            for s, kind, j in check.violated:
                if deadline is not None and time.perf_counter() > deadline:
                    unmet.append((s, kind, j))
                    continue
                added = self._fix_one(suppressed, s, kind, j)
                if added is None:
                    unmet.append((s, kind, j))
                elif len(added):
                    suppressed[added] = True
                    changed = True
            if not changed:
                return suppressed, unmet or check.violated
            if deadline is not None and time.perf_counter() > deadline:
                return suppressed, [(-1, "time", -1)]
        return suppressed, [(-1, "rounds", -1)]

    def _fix_one(self, suppressed, s, kind, j) -> np.ndarray | None:
        req = self.req
        p = self.oracle.slot[s]
        n = self.n
        need_up = req.need_up[p] * (1 + 1e-6) + req.tol[p]
        need_dn = req.need_down[p] * (1 + 1e-6) + req.tol[p]
        if kind == "width":
            # half of the missing width each way is enough: y_up - y_down >= SPL
            need_up = max(need_up, 0.5 * req.need_width[p] * (1 + 1e-6) + req.tol[p])
            need_dn = max(need_dn, 0.5 * req.need_width[p] * (1 + 1e-6) + req.tol[p])
            kinds = ("up", "down")
        else:
            kinds = (kind,)
        added_all = []
        for kd in kinds:
            need = need_up if kd == "up" else need_dn
            # the safety margin never asks more than the cell's range (a level capped at
            # the a-priori bound must be reached exactly, not exceeded)
            need = min(need, req.up[s] if kd == "up" else req.down[s])
            if self._witnessed(suppressed, s, kd, j, need):
                continue
            up, dn = self._bounds(suppressed)
            if j >= 0:
                up[j] = dn[j] = 0.0
            col_lo = np.zeros(2 * n)
            col_hi = np.concatenate([up, dn])
            if kd == "up":
                if up[s] < need - 1e-9:
                    return None
                col_lo[s] = need
                col_hi[n + s] = 0.0
            else:
                if dn[s] < need - 1e-9:
                    return None
                col_lo[n + s] = need
                col_hi[s] = 0.0
            m = self.model
            m.set_col_bounds(np.arange(2 * n), col_lo, col_hi)
            m.set_objective(self._weights(suppressed, need), sense="min")
            res = m.solve()
            if res.status != "optimal":
                return None
            y = res.x[:n] - res.x[n:]
            moved = np.flatnonzero((np.abs(y) > 1e-9 * max(1.0, need)) & ~suppressed)
            added_all.append(moved)
            suppressed = suppressed.copy()
            suppressed[moved] = True
            self._keep_witness(y)
        return np.concatenate(added_all) if added_all else np.zeros(0, np.int64)
