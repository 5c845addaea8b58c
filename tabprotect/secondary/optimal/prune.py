"""Pruning: publish again the suppressions a protected pattern does not need, dearest
first, each removal kept only when every attacker condition stays met."""
from __future__ import annotations

import time

import numpy as np

from solvers import HighsModel, LinearProgram
from tabprotect.secondary.optimal.options import OptimalOptions
from tabprotect.secondary.optimal.oracle import DUAL_SIMPLEX
from tabprotect.secondary.repair import AttackerOracle


def prune(oracle: AttackerOracle, pattern: np.ndarray, fixed: np.ndarray, cost: np.ndarray,
          deadline: float | None, hint: np.ndarray | None = None,
          options: OptimalOptions | None = None) -> np.ndarray:
    """Drop suppressions a protected pattern does not need, dearest first.

    With ``options.witness_prune`` the attacker solutions (witnesses) decide: a cell no
    witness moves can go at once (every witness stays feasible), and removing a moved
    cell only needs the attacker LPs of the conditions whose witness moves it
    (:func:`witness_prune`); the result is confirmed by the oracle's full check.
    Otherwise (or when that confirmation fails) each removal is kept only when the
    oracle's full check still finds every condition met."""
    opt = options if options is not None else OptimalOptions()
    if opt.witness_prune:
        try:
            out = witness_prune(oracle, pattern, fixed, cost, deadline, hint,
                                max_entries=opt.witness_max_entries)
        except RuntimeError:
            out = None
        if out is not None and (out == pattern).all():
            return out
        # a witness prune that ended at the deadline is still worth its one full check:
        # the confirmation may run prune_confirm_seconds past it
        confirm_by = None if deadline is None else max(
            deadline, time.perf_counter() + opt.prune_confirm_seconds)
        if out is not None and oracle.check(out, cuts=False, first_only=True,
                                            deadline=confirm_by).ok:
            return out
    pattern = pattern.copy()
    extra = np.flatnonzero(pattern & ~fixed)
    for i in extra[removal_order(cost[extra], None if hint is None else hint[extra])]:
        if deadline is not None and time.perf_counter() >= deadline:
            break
        pattern[i] = False
        if not oracle.check(pattern, cuts=False, first_only=True).ok:
            pattern[i] = True
    return pattern


def removal_order(cost: np.ndarray, hint: np.ndarray | None) -> np.ndarray:
    """Dearest first; ties by increasing ``hint``."""
    if hint is None:
        return np.argsort(-cost, kind="stable")
    return np.lexsort((hint, -cost))


class _Witnesses:
    """The attacker LPs over a pattern's suppressed cells ``sup``, one per condition
    group (primary slot ``p``, single-contributor attacker ``j`` or -1), re-solved as
    cells are published (their columns fixed at 0)."""

    def __init__(self, oracle: AttackerOracle, pattern: np.ndarray, sup: np.ndarray):
        req = self.req = oracle.req
        self.sup = sup
        sub = oracle.A[:, sup].tocsr()
        rows = np.flatnonzero(np.diff(sub.indptr) > 0)
        self.lo = -req.down[sup].astype(float)
        self.hi = req.up[sup].astype(float)
        lp = LinearProgram(c=np.zeros(len(sup)), A=sub[rows], row_lower=np.zeros(len(rows)),
                           row_upper=np.zeros(len(rows)), col_lower=self.lo,
                           col_upper=self.hi)
        self.model = HighsModel(lp, simplex_strategy=DUAL_SIMPLEX)
        self.local = np.full(len(pattern), -1, np.int64)
        self.local[sup] = np.arange(len(sup))
        self.cur_lo, self.cur_hi = self.lo.copy(), self.hi.copy()

    def publish(self, k) -> None:
        """Fix the columns ``k`` (positions in ``sup``) at 0."""
        self.cur_lo[k] = self.cur_hi[k] = 0.0
        self.model.set_col_bounds(k, 0.0, 0.0)

    def restore(self, k: int) -> None:
        """Undo :meth:`publish` for the column ``k``."""
        self.cur_lo[k], self.cur_hi[k] = self.lo[k], self.hi[k]
        self.model.set_col_bounds([k], self.lo[k], self.hi[k])

    def solve_group(self, p: int, j: int) -> tuple[bool, np.ndarray]:
        """(protected, support mask of the witnesses over ``sup``)."""
        req, model, local = self.req, self.model, self.local
        k = int(local[int(req.primary[p])])
        if j >= 0:
            model.set_col_bounds([local[j]], 0.0, 0.0)
        vals, used = {}, np.zeros(len(self.sup), bool)
        try:
            for kind, sign in (("up", 1.0), ("down", -1.0)):
                if (req.need_up[p] if kind == "up" else req.need_down[p]) <= 0 \
                        and req.need_width[p] <= 0:
                    continue
                model.set_objective(indices=[k], values=[sign], sense="max")
                res = model.solve()
                if res.status == "unbounded":
                    vals[kind] = np.inf
                    used[:] = True  # no witness vector: every cell may matter
                    continue
                if res.status != "optimal":
                    raise RuntimeError(f"attacker LP ended with status {res.status}")
                vals[kind] = float(res.objective)
                y = np.asarray(res.x)
                used |= np.abs(y) > 1e-9 * max(1.0, float(np.abs(y).max()))
        finally:
            if j >= 0:
                model.set_col_bounds([local[j]], self.cur_lo[local[j]], self.cur_hi[local[j]])
        return self._met(p, vals), used

    def _met(self, p: int, vals: dict) -> bool:
        req = self.req
        tol = req.tol[p]
        if req.need_up[p] > 0 and vals.get("up", 0.0) < req.need_up[p] - tol:
            return False
        if req.need_down[p] > 0 and vals.get("down", 0.0) < req.need_down[p] - tol:
            return False
        if req.need_width[p] > 0 and vals.get("up", 0.0) + vals.get("down", 0.0) \
                < req.need_width[p] - tol:
            return False
        return True


def _condition_groups(req, pattern: np.ndarray, sup: np.ndarray) -> list | None:
    """(slot p, attacker j) of every condition; j = -1 for the outside intruder.  None
    when a primary is not suppressed."""
    groups = []
    single = sup[req.singleton[sup]]
    for p, s in enumerate(req.primary):
        if not pattern[s]:
            return None
        if req.need_up[p] <= 0 and req.need_down[p] <= 0 and req.need_width[p] <= 0:
            continue
        for j in [-1] + [int(j) for j in single if j != s]:
            groups.append((p, j))
    return groups


def witness_prune(oracle: AttackerOracle, pattern: np.ndarray, fixed: np.ndarray,
                  cost: np.ndarray, deadline: float | None,
                  hint: np.ndarray | None = None, *,
                  max_entries: int = 50_000_000) -> np.ndarray | None:
    """Witness-based pruning of a protected pattern (None when it is not protected, or
    when the witness map would exceed ``max_entries`` (condition, cell) entries).

    For each primary ``s`` (and single-contributor attacker ``j``) the attacker LPs
    ``max +-y_s`` over the suppressed cells are solved once; their optimal ``y`` are the
    witnesses.  Publishing a cell ``i`` that a witness leaves at 0 keeps that witness
    feasible, so its optimum cannot drop: only conditions whose witness moves ``i`` are
    re-solved (with ``y_i = 0``).  Cells no witness moves are dropped together first.
    """
    req = oracle.req
    sup = np.flatnonzero(pattern)
    if len(sup) == 0:
        return pattern.copy()
    wit = _Witnesses(oracle, pattern, sup)
    is_prim = np.zeros(len(pattern), bool)
    is_prim[req.primary] = True
    groups = _condition_groups(req, pattern, sup)
    if groups is None:
        return None
    if len(groups) * len(sup) > max_entries:
        return None  # the witness map would not fit: the caller prunes check by check
    uses = np.zeros((len(groups), len(sup)), bool)  # groups x suppressed cells (small)
    for g, (p, j) in enumerate(groups):
        if deadline is not None and time.perf_counter() >= deadline:
            return None  # no time for the witnesses: the caller keeps the pattern
        ok, used = wit.solve_group(p, j)
        if not ok:
            return None
        uses[g] = used
    out = pattern.copy()
    removable = ~fixed[sup] & ~is_prim[sup]
    # cells no witness moves: all published again at once
    idle = removable & ~uses.any(axis=0)
    out[sup[idle]] = False
    if idle.any():
        wit.publish(np.flatnonzero(idle))
    order = np.flatnonzero(removable & ~idle)
    order = order[removal_order(cost[sup[order]],
                                None if hint is None else hint[sup[order]])]
    for k in order:
        if deadline is not None and time.perf_counter() >= deadline:
            break
        wit.publish([k])
        new_uses = {}
        ok = True
        for g in np.flatnonzero(uses[:, k]):
            ok, used = wit.solve_group(*groups[g])
            if not ok:
                break
            new_uses[g] = used
        if ok:
            out[sup[k]] = False
            for g, used in new_uses.items():
                uses[g] = used
        else:
            wit.restore(k)
    return out
