"""The searches over the sensitive cells' directions: fixed, heuristic, free (MILP).

``fixed``: one LP (L1) or QP (L2).  ``heuristic``: the relaxation (directions in [0, 1])
gives a lower bound and, rounded, the first directions; one cell's direction at a time
is then flipped and kept when the distance falls (warm re-solves of one model).  ``free``:
the heuristic's solution bounds the big-M constants and starts the MILP; the MILP's
result (or the heuristic's, when the MILP finds nothing better in time) is returned with
its gap.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers import HighsModel, SolveResult, solve
from tabprotect.adjust.problem import CTAProblem
from tabprotect.budget import Budget
from tabprotect.errors import InputError

#: the least time a solver call gets once the budget is spent (the overrun allowed)
FLOOR_SECONDS = 0.25
#: with free directions, the share of the budget the heuristic start may use
HEURISTIC_SHARE = 0.3
#: the share of the heuristic's budget its relaxation may use (HiGHS' QP solver can
#: stall on the L2 relaxation until its time limit; the L1 relaxation's directions
#: are taken then)
RELAX_SHARE = 0.25
#: the least time the LP re-solve of the MILP's directions gets (past the budget when
#: the MILP used all of it)
POLISH_SECONDS = 5.0
#: a relative gap below this is the solvers' rounding noise, reported as 0
GAP_NOISE = 1e-9
#: a flip is kept when it lowers the distance by more than this, relative
FLIP_GAIN = 1e-9
#: a flip is skipped without a re-solve when the dual bound on its distance is at least
#: the current one less the gain plus this much, relative (room for the duals' noise)
FLIP_BOUND_TOL = 1e-7
#: a flip's re-solve may take this many times the first solve (at least
#: FLIP_MIN_SECONDS); past it the flip is dropped: HiGHS' QP solver can stall on a
#: warm re-solve until its time limit
FLIP_TIME_FACTOR = 20.0
FLIP_MIN_SECONDS = 1.0


@dataclass
class Adjustment:
    """What a search found (in the units it solved in).

    Attributes
    ----------
    net : net change of each movable cell; up : each sensitive cell goes up
    objective : the weighted distance; lower_bound : a proven bound below it (None:
    none known); proven_optimal : optimal for the search's problem; solver_status :
    e.g. "optimal", "time_limit", "heuristic"; details : numbers for reports
    """

    net: np.ndarray
    up: np.ndarray
    objective: float
    lower_bound: float | None
    proven_optimal: bool
    solver_status: str
    details: dict

    @property
    def gap(self) -> float | None:
        """``(objective - lower_bound) / objective`` (None: no bound known; 0 for an
        optimum without a bound, e.g. of fixed directions)."""
        if self.lower_bound is None:
            return 0.0 if self.proven_optimal else None
        if self.objective <= 0:
            return 0.0
        gap = (self.objective - self.lower_bound) / self.objective
        return gap if gap > GAP_NOISE else 0.0


class DirectionSearch:
    """Runs one search on a :class:`CTAProblem` within a :class:`Budget`."""

    def __init__(self, problem: CTAProblem, budget: Budget):
        self.p = problem
        self.budget = budget
        self.notes: list[str] = []

    def limit(self, budget: Budget | None = None) -> float | None:
        return (budget or self.budget).limit(FLOOR_SECONDS)

    # ------------------------------------------------------------------ fixed
    def fixed(self, up: np.ndarray, status_word: str = "optimal") -> Adjustment:
        """The best adjustment for the directions ``up``."""
        res = solve(self.p.fixed_lp(up), time_limit=self.limit(),
                    mip_gap=self.p.options.mip_gap)
        if not res.has_solution:
            raise InputError(self._no_solution(res, "the given directions"))
        net = self.p.net(res.x)
        return Adjustment(net=net, up=up.copy(), objective=self.p.objective(net),
                          lower_bound=None, proven_optimal=res.status == "optimal",
                          solver_status=res.status if res.status != "optimal"
                          else status_word, details={"solves": 1})

    def directions(self, kind: str, column: np.ndarray | None = None) -> np.ndarray:
        """The fixed directions ``up``, ``down`` or ``given`` (``column``: +1 / -1 per
        cell); a direction the bounds forbid is an error naming the cell."""
        k = self.p.k
        if kind == "up":
            up = np.ones(k, dtype=bool)
        elif kind == "down":
            up = np.zeros(k, dtype=bool)
        else:
            given = np.asarray(column, dtype=float)[self.p.sensitive]
            bad = np.flatnonzero(~np.isin(given, (1.0, -1.0)))
            if len(bad):
                raise InputError(f"cta: the direction of sensitive cell "
                                 f"{self.p.table.cell_name(int(self.p.sensitive[bad[0]]))}"
                                 f" is not +1 or -1 ({len(bad)} such cell(s))")
            up = given > 0
        wrong = np.flatnonzero((up & ~self.p.can_up) | (~up & ~self.p.can_down))
        if len(wrong):
            s = int(self.p.sensitive[wrong[0]])
            raise InputError(f"cta: sensitive cell {self.p.table.cell_name(s)} cannot go "
                             f"{'up' if up[wrong[0]] else 'down'} by its protection level "
                             f"within its bounds ({len(wrong)} such cell(s))")
        return up

    # ------------------------------------------------------------------ heuristic
    def heuristic(self, flip_rounds: int, budget: Budget | None = None) -> Adjustment:
        """Relaxation, rounding, then single flips while they pay and time is left."""
        budget = budget or self.budget
        m_up, m_down, _ = self.p.big_m(None)
        relax = solve(self.p.direction_model(m_up, m_down, relaxed=True),
                      time_limit=self.limit(budget.share(RELAX_SHARE)))
        if relax.status == "infeasible":
            raise InputError("cta: no adjustment meets the relations, the bounds, the "
                             "fixed cells and the protection levels together")
        bound = relax.objective if relax.status == "optimal" else None
        b = relax.x[2 * self.p.m:] if relax.status == "optimal" else None
        if b is None and self.p.options.distance == "L2":
            self.notes.append(f"the L2 relaxation gave no answer ({relax.status}): the "
                              f"first directions are the L1 relaxation's (no lower bound)")
            lin = solve(self.p.direction_model(m_up, m_down, relaxed=True, linear=True),
                        time_limit=self.limit(budget.share(RELAX_SHARE)))
            b = lin.x[2 * self.p.m:] if lin.has_solution else None
        if b is None:
            self.notes.append(f"the relaxation gave no answer ({relax.status}): the "
                              f"heuristic starts from every cell up")
            b = np.ones(self.p.k)
        up = np.where(self.p.can_up & self.p.can_down, b >= 0.5, self.p.can_up)
        model = HighsModel(self.p.fixed_lp(up), mip_gap=self.p.options.mip_gap)
        res = model.solve(self.limit(budget))
        flip_seconds = max(FLIP_MIN_SECONDS, FLIP_TIME_FACTOR * res.runtime)
        tries = 1
        if self.p.split:      # one more LP (an L2 QP re-solve can take long)
            up, res = self._balanced_start(model, up, res, budget)
            tries += 1
        if not res.has_solution:
            up, res, tries = self._first_feasible(model, up, budget)
        order = np.argsort(np.abs(b - 0.5), kind="stable")   # least decided first
        order = order[self.p.can_up[order] & self.p.can_down[order]]
        best_x, best, counts = self._flips(model, up, order, res, flip_rounds, budget,
                                           flip_seconds)
        stalled = counts["flips_dropped"]
        if budget.expired():
            self.notes.append("time limit reached during the direction flips")
        if stalled:
            self.notes.append(f"{stalled} flip(s) dropped: their re-solve took more than "
                              f"{flip_seconds:.1f} s")
        net = self.p.net(best_x)
        lb = bound if bound is not None and bound <= best else None
        return Adjustment(net=net, up=up.copy(), objective=best, lower_bound=lb,
                          proven_optimal=False, solver_status="heuristic",
                          details={"solves": tries + 1 + counts.pop("solves"), **counts})

    def _flips(self, model: HighsModel, up: np.ndarray, order: np.ndarray,
               res: SolveResult, rounds: int, budget: Budget, flip_seconds: float):
        """Passes over ``order`` flipping one direction at a time (``up`` and ``model``
        follow), a flip kept when the distance falls; one whose dual bound shows it
        cannot pay is skipped without a re-solve. The best solution, its distance and
        counts."""
        best_x, best = res.x, self.p.objective(self.p.net(res.x))
        counts = {"solves": 0, "flips_kept": 0, "flips_dropped": 0, "flips_skipped": 0}
        rc = _reduced_costs(res, self.p)
        for _ in range(rounds):
            improved = False
            for s in order:
                if budget.expired():
                    break
                gain = FLIP_GAIN * max(1.0, abs(best))
                if rc is not None and self._flip_bound(rc, best_x, best, up, s) \
                        >= best - gain + FLIP_BOUND_TOL * max(1.0, abs(best)):
                    counts["flips_skipped"] += 1
                    continue
                up[s] = ~up[s]
                self._set_direction(model, up, s)
                left = self.limit(budget)
                res = model.solve(flip_seconds if left is None else min(left, flip_seconds))
                counts["solves"] += 1
                counts["flips_dropped"] += res.status.startswith("time_limit")
                value = self.p.objective(self.p.net(res.x)) \
                    if res.status == "optimal" else np.inf
                if value < best - gain:
                    best, best_x, improved = value, res.x, True
                    rc = _reduced_costs(res, self.p)
                    counts["flips_kept"] += 1
                else:
                    up[s] = ~up[s]
                    self._set_direction(model, up, s)
            if not improved or budget.expired():
                break
        return best_x, best, counts

    def _flip_bound(self, rc: np.ndarray, x: np.ndarray, objective: float,
                    up: np.ndarray, s: int) -> float:
        """A lower bound on the distance after flipping sensitive cell ``s``, from the
        reduced costs ``rc`` of the current directions' optimal LP (solution ``x``, value
        ``objective``): its row duals stay feasible for the flipped LP, which changes
        only the bounds of ``s``'s two columns (weak duality)."""
        cols, _, _ = self.p.cell_bounds(s, bool(up[s]))
        _, lo, hi = self.p.cell_bounds(s, not up[s])
        r = rc[cols]
        least = np.zeros(len(cols))           # min of r d over the new bounds of d
        rise, fall = r > 0, r < 0
        least[rise] = r[rise] * np.asarray(lo)[rise]
        least[fall] = r[fall] * np.asarray(hi)[fall]
        return float(objective - r @ x[cols] + least.sum())

    def _balanced_start(self, model: HighsModel, up: np.ndarray, res: SolveResult,
                        budget: Budget) -> tuple[np.ndarray, SolveResult]:
        """The better of the rounded relaxation's directions (``up``, solved in ``res``)
        and the balanced ones (:meth:`CTAProblem.balanced_directions`, cells in table
        order: the cells of a relation are decided one after the other); ``model`` is
        left at the directions returned."""
        trial = self.p.balanced_directions(np.arange(self.p.k))
        changed = np.flatnonzero(trial != up)
        if len(changed) == 0:
            return up, res
        for s in changed:
            self._set_direction(model, trial, int(s))
        other = model.solve(self.limit(budget))
        if other.status == "optimal" and (res.status != "optimal" or self._value(other)
                                          < self._value(res)):
            return trial, other
        for s in changed:
            self._set_direction(model, up, int(s))
        return up, res

    def _value(self, res: SolveResult) -> float:
        return self.p.objective(self.p.net(res.x))

    def _set_direction(self, model: HighsModel, up: np.ndarray, s: int) -> None:
        model.set_col_bounds(*self.p.cell_bounds(s, bool(up[s])))

    def _first_feasible(self, model: HighsModel, up: np.ndarray, budget: Budget):
        """All up, then all down, where the rounded relaxation's directions fail."""
        tries = 1
        for kind in (True, False):
            trial = np.where(self.p.can_up & self.p.can_down, kind, self.p.can_up)
            for s in range(self.p.k):
                self._set_direction(model, trial, s)
            res = model.solve(self.limit(budget))
            tries += 1
            if res.has_solution:
                return trial, res, tries
        if budget.expired():
            raise InputError("cta: the time limit ran out before the heuristic found an "
                             "adjustment; give a longer time_limit")
        raise InputError("cta: the heuristic found no adjustment (rounded first LP, all "
                         "up, all down); use directions = free (L1) or give directions")

    # ------------------------------------------------------------------ free (MILP)
    def free(self, flip_rounds: int) -> Adjustment:
        """The MILP over the directions, started from the heuristic's adjustment."""
        start = None
        try:
            start = self.heuristic(flip_rounds, self.budget.share(HEURISTIC_SHARE))
        except InputError as exc:
            if "no adjustment meets" in str(exc):
                raise
            self.notes.append("the heuristic found no first adjustment; the MILP starts "
                              "without one")
        m_up, m_down, note = self.p.big_m(None if start is None else start.objective)
        if note:
            self.notes.append(note)
        lp = self.p.direction_model(m_up, m_down, relaxed=False)
        model = HighsModel(lp, mip_gap=self.p.options.mip_gap)
        if start is not None:
            model.set_start(self._full_vector(start))
        res = model.solve(self.limit())
        details = {"milp": res.log_summary}
        if start is not None:
            details["heuristic_objective"] = start.objective
        bound = _dual_bound(model) if res.has_solution or start is not None else None
        found = self._polish(res) if res.has_solution else None
        if found is not None and (start is None or found.objective
                                  <= start.objective * (1 + 1e-9) + 1e-12):
            found.lower_bound = None if bound is None else min(bound, found.objective)
            found.proven_optimal = res.status == "optimal"
            found.solver_status = res.status
            found.details = {**details, "solves": found.details["solves"]}
            return found
        if start is None:
            raise InputError(self._no_solution(res, "the MILP"))
        self.notes.append("the MILP found no better adjustment within the time limit: the "
                          "heuristic's is returned")
        bound = _dual_bound(model)
        if bound is not None and (start.lower_bound is None or bound > start.lower_bound):
            start.lower_bound = min(bound, start.objective)
        start.details.update(details)
        start.solver_status = "time_limit" if res.status.startswith("time_limit") \
            else res.status
        return start

    def _polish(self, res: SolveResult) -> Adjustment | None:
        """The MILP's directions solved again as one fixed-direction LP: its protection
        then holds by column bounds, not through ``M b`` within the integrality
        tolerance (with large ``M`` a binary at 1e-7 would let a "down" cell move up a
        little). Without that LP's optimum, the MILP's own values when they keep every
        level; else None."""
        up = res.x[2 * self.p.m:] > 0.5
        left = self.limit()
        lp = solve(self.p.fixed_lp(up), mip_gap=self.p.options.mip_gap,
                   time_limit=None if left is None else max(left, POLISH_SECONDS))
        if lp.status == "optimal":
            net = self.p.net(lp.x)
        elif self.p.protects(self.p.net(res.x), up):
            net = self.p.net(res.x)         # the MILP's own values keep every level
        else:
            return None
        return Adjustment(net=net, up=up, objective=self.p.objective(net), lower_bound=None,
                          proven_optimal=False, solver_status=lp.status,
                          details={"solves": 1})

    def _full_vector(self, adj: Adjustment) -> np.ndarray:
        m = self.p.m
        return np.concatenate([np.maximum(adj.net, 0.0), np.maximum(-adj.net, 0.0),
                               adj.up.astype(float)])[:2 * m + self.p.k]

    def _no_solution(self, res: SolveResult, what: str) -> str:
        if res.status == "infeasible":
            return (f"cta: no adjustment meets the relations, the bounds, the fixed cells "
                    f"and the protection levels for {what}")
        if res.status == "error":
            hint = ("; HiGHS' QP solver fails on some large L2 models: distance = L1 "
                    "solves them" if self.p.options.distance == "L2" else "")
            return f"cta: the solver failed on {what} (solve error){hint}"
        return f"cta: {what} found no adjustment ({res.status}; time limit too short?)"


def _reduced_costs(res: SolveResult, problem: CTAProblem) -> np.ndarray | None:
    """The reduced costs of an optimal fixed-direction LP (None for a QP or a MIP, whose
    bound the flips do not use)."""
    if res.status != "optimal" or res.reduced_costs is None or not problem.split \
            or problem.options.integer or len(res.reduced_costs) != 2 * problem.m:
        return None
    return res.reduced_costs


def _dual_bound(model: HighsModel) -> float | None:
    """HiGHS' best bound of a MILP (None when it has none)."""
    try:
        bound = float(model.highs.getInfo().mip_dual_bound)
    except Exception:   # pragma: no cover - other highspy versions
        return None
    return bound if np.isfinite(bound) else None
