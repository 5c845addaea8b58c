"""Aggregate LPs of the verdict modes: one objective that pushes every open primary of a
component towards its requirement at once, so that one solve certifies many primaries.
"""
from __future__ import annotations

import numpy as np

from solvers import HighsModel
from tabprotect.audit.system import InfeasibleSystem, ReducedSystem, out_of_time
from tabprotect.audit.witness import VerdictState


class AggregateModel:
    """The LP of the aggregate (many-cell) objectives of verdict mode.

    Solved by the interior-point method without crossover from ``ipm_vars`` variables
    on: only a feasible point is needed, not a basis, and on components of thousands of
    cells it is several times faster than simplex for these dense objectives (the
    per-cell LPs stay on the warm simplex model).  Smaller components and integer
    audits take the simplex method, which re-solves warm across attackers. Infinite a-priori bounds are capped far away here, so a sum
    objective cannot be unbounded; any point found is still a feasible table, hence a
    witness.

    One model per component serves every attacker (:meth:`of`): an attacker's knowledge
    is a change of column bounds, and the simplex model of an integer audit re-solves
    from the previous attacker's basis.
    """

    def __init__(self, system: ReducedSystem, fixed, reach_: float, integer: bool = False,
                 ipm_vars: int = 0):
        self.system, self.fixed, self.reach, self.integer = system, fixed, reach_, integer
        self.ipm = not integer and system.k >= ipm_vars
        self._model: HighsModel | None = None

    @classmethod
    def of(cls, system: ReducedSystem, fixed, reach_: float, integer: bool,
           ipm_vars: int) -> "AggregateModel":
        """The component's aggregate model, set to the attacker who knows ``fixed``."""
        key = ("aggregate", integer, reach_)
        model = system.kept.get(key)
        if model is None:
            model = system.kept[key] = cls(system, None, reach_, integer, ipm_vars)
        model.use(fixed)
        return model

    def use(self, fixed) -> None:
        """Put the attacker's knowledge in the model's bounds (the previous attacker's
        taken out)."""
        if self._model is not None:
            for knowledge in (self.fixed, fixed):
                if knowledge is not None:
                    idx = knowledge.index
                    lb, ub = self._bounds(fixed)
                    self._model.set_col_bounds(idx, lb[idx], ub[idx])
        self.fixed = fixed

    def _bounds(self, fixed):
        system = self.system
        lb, ub = system.bounds(fixed)
        if not (np.isfinite(lb) & np.isfinite(ub)).all():
            lb = np.maximum(lb, system.value - self.reach)
            ub = np.minimum(ub, system.value + self.reach)
        return lb, ub

    def _build(self) -> HighsModel:
        lp = self.system.lp(False, bounds=self._bounds(self.fixed))
        if not self.ipm:
            # an integer intruder takes integral points only: simplex vertices are often
            # integral, interior points hardly ever
            return HighsModel(lp)
        return HighsModel(lp, solver="ipm", run_crossover="off")

    def solve(self, idx, values, counters):
        if self._model is None:
            self._model = self._build()
        self._model.set_objective(indices=idx, values=values, sense="max")
        res = self._model.solve()
        counters["lp"] += 1
        if res.status == "infeasible" and not self.system.relaxed:
            self.system.relaxed = True
            self.system.drop_model()
            self._model = self._build()
            self._model.set_objective(indices=idx, values=values, sense="max")
            res = self._model.solve()
            counters["lp"] += 1
        return res.status, res.x


def round_objective(state: VerdictState, round_no: int, rng) -> np.ndarray:
    """The objective coefficients of one round: up, then down, then random mixed
    directions (each primary short on one side only is pushed that way)."""
    up = state.short_hi() & ~state.decided
    down = state.short_lo() & ~state.decided
    width = state.short_w() & ~up & ~down & ~state.decided
    coef = np.zeros(state.k)
    if round_no == 0:
        coef[up | width] = 1.0
    elif round_no == 1:
        coef[down | width] = -1.0
    else:
        sign = np.where(rng.random(state.k) < 0.5, 1.0, -1.0)
        sign = np.where(up & ~down, 1.0, np.where(down & ~up, -1.0, sign))
        coef[up | down | width] = sign[up | down | width]
    return coef


def aggregate_rounds(state: VerdictState, rounds: int) -> None:
    """Up to ``rounds`` aggregate LPs over the whole component, stopped when nothing is
    open or two rounds in a row gain next to nothing. The random directions are seeded
    by the component, so the audit is deterministic."""
    rng = np.random.default_rng(state.n_targets * 7919 + state.k)
    model = AggregateModel.of(state.system, state.fixed, state.reach(), state.integer,
                              state.task.settings.aggregate_ipm_vars)
    stalled = 0
    for round_no in range(rounds):
        open_ = (state.short_hi() | state.short_lo() | state.short_w()) & ~state.decided
        if not open_.any() or out_of_time(state.task.deadline):
            return
        coef = round_objective(state, round_no, rng)
        idx = np.flatnonzero(coef)
        if len(idx) == 0:
            continue
        before = int(state.satisfied().sum())
        status, x = model.solve(idx, coef[idx] / state.scale[idx], state.counters)
        if status == "infeasible":
            raise InfeasibleSystem(int(idx[0]))
        if status == "optimal":
            # interior-point points may sit a hair outside a bound
            state.absorb(np.clip(x, state.lb, state.ub))
        gained = int(state.satisfied().sum()) - before
        stalled = stalled + 1 if gained <= max(1, 0.01 * len(idx)) else 0
        if round_no >= 1 and stalled >= 2:
            return
