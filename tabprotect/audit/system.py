"""The intruder's LP restricted to one component of suppressed cells.

:class:`SystemBuilder` computes everything per relation once for the whole table, so
that cutting out one component costs time in the component's size; a
:class:`ReducedSystem` holds one component's relations and bounds (arrays only, so it
can go to a worker process) and one persistent HiGHS model whose re-solves change only
the objective, starting from the previous basis.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram
from tabprotect.audit.propagate import outer_bounds
from tabprotect.model.table import Table

#: options of the warm model of a large component (see AuditSettings.dual_min_vars):
#: the dual simplex on every re-solve
DUAL_SIMPLEX = {"simplex_strategy": 1}


class InfeasibleSystem(Exception):
    """No table satisfies the relations and bounds of a component (``local_cell``: one
    of its variables, to name in the error)."""

    def __init__(self, local_cell: int):
        super().__init__(local_cell)
        self.local_cell = local_cell


@dataclass(frozen=True)
class Knowledge:
    """What an attacker knows beyond the outside intruder: tighter bounds on some
    variables of a component (``lower == upper`` where it knows the value exactly)."""

    index: np.ndarray   # local variables, increasing
    lower: np.ndarray
    upper: np.ndarray

    @classmethod
    def exact(cls, index, values) -> "Knowledge":
        index = np.atleast_1d(np.asarray(index, dtype=np.int64))
        values = np.atleast_1d(np.asarray(values, dtype=float))
        return cls(index, values, values.copy())

    @property
    def known(self) -> np.ndarray:
        """The variables known exactly."""
        return self.index[self.lower >= self.upper]

    def bounds(self, lb: np.ndarray, ub: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the a-priori bounds ``lb``, ``ub`` (all variables) tightened by
        this knowledge."""
        lb, ub = lb.copy(), ub.copy()
        lb[self.index] = np.maximum(lb[self.index], self.lower)
        ub[self.index] = np.minimum(ub[self.index], self.upper)
        return lb, ub


class WitnessBank:
    """Witnesses (feasible tables, as deviations from the true table) kept from the
    passes of one component, for the attackers after them: a witness that respects
    what an attacker knows is a feasible table for that attacker too, so the attacker's
    pass starts from it instead of finding it again. Kept while they take at most
    ``max_floats`` numbers in all."""

    def __init__(self, k: int, max_floats: int = 2_000_000):
        self.rows: list[np.ndarray] = []
        self.room = max_floats // max(1, k)
        self._stacked = np.zeros((0, k))   # the rows as one matrix, grown on demand

    def keep(self, deviation: np.ndarray) -> None:
        if len(self.rows) < self.room and np.any(deviation):
            self.rows.append(deviation.copy())

    def matrix(self) -> np.ndarray:
        """The kept deviations, one per row (stacked once, not once per attacker)."""
        done = self._stacked.shape[0]
        if done < len(self.rows):
            self._stacked = np.vstack([self._stacked, *self.rows[done:]])
        return self._stacked

    def usable(self, value: np.ndarray, knowledge: "Knowledge") -> np.ndarray:
        """The kept tables that satisfy ``knowledge``, one full table per row."""
        if not self.rows:
            return np.zeros((0, len(value)))
        D = self.matrix()
        idx = knowledge.index
        x = value[idx] + D[:, idx]
        tol = 1e-9 * np.maximum(1.0, np.abs(value[idx]))
        ok = np.all((x >= knowledge.lower - tol) & (x <= knowledge.upper + tol), axis=1)
        return value + D[ok]


def new_counters() -> dict[str, int]:
    """The audit's work counters (summed over components into the result)."""
    return {"lp": 0, "skipped": 0, "certified": 0, "local_lp": 0, "block_lp": 0,
            "block_passes_skipped": 0, "attacker_groups": 0, "attacker_moves": 0}


def seconds_until(deadline: float | None) -> float | None:
    """A solver's time limit that ends at the wall-clock ``deadline`` (None: none; at
    least a hundredth of a second, so that a solver asked late still answers "no")."""
    return None if deadline is None else max(0.01, deadline - time.time())


def out_of_time(deadline: float | None) -> bool:
    """Whether the wall-clock (epoch, ``time.time()``) ``deadline`` has passed: a task
    may run on another machine, whose monotonic clock has another origin."""
    return deadline is not None and time.time() > deadline


class SystemBuilder:
    """Everything per relation computed once for the whole table, so that cutting out
    one component costs time in the component's size, not the table's."""

    def __init__(self, table: Table, unpublished: np.ndarray, dual_min_vars: int,
                 integer_nodes: int = 200):
        A = table.relations.tocsr()
        self.A_csc = A.tocsc()
        value = table.value
        published_value = np.where(unpublished, 0.0, value)
        # rhs: -(published part of each relation)
        self.rhs = -np.asarray(A @ published_value, dtype=float)
        # Published values that add up only to rounding error (decimals, reconstructed
        # benchmark values) must not make the intruder's system infeasible: each relation
        # may hold within its own residual in the true table, with a margin (applied only
        # when the exact system is infeasible, so exact inputs stay exact).
        magnitude = np.asarray(abs(A) @ np.abs(value), dtype=float)
        residual = np.abs(np.asarray(A @ value, dtype=float))
        self.row_tol = 1.5 * residual + 1e-12 * np.maximum(1.0, magnitude)
        self.lb = table.lb.astype(float)
        self.ub = table.ub.astype(float)
        self.value = value.astype(float)
        self.dual_min_vars = dual_min_vars
        self.integer_nodes = integer_nodes

    def system(self, cells: np.ndarray) -> "ReducedSystem":
        sub = self.A_csc[:, cells].tocsr()
        rows = np.flatnonzero(np.diff(sub.indptr) > 0)
        options = DUAL_SIMPLEX if len(cells) >= self.dual_min_vars else {}
        return ReducedSystem(A=sub[rows], rhs=self.rhs[rows], row_tol=self.row_tol[rows],
                             lb=self.lb[cells], ub=self.ub[cells], value=self.value[cells],
                             warm_options=options, integer_nodes=self.integer_nodes)


class ReducedSystem:
    """The intruder's LP restricted to one component: variables = its suppressed cells.
    Holds arrays only (no table), so it can be sent to a worker process.

    ``relaxed`` turns on once the exact system proves infeasible: then each relation
    may hold within its rounding residual. ``incomplete`` collects variables whose
    bound was not computed (time limit, no answer from the solver)."""

    def __init__(self, A, rhs, row_tol, lb, ub, value, warm_options=None,
                 integer_nodes: int = 200):
        self.A, self.rhs, self.row_tol = A, rhs, row_tol
        self.integer_nodes = integer_nodes   # branch-and-bound LPs before the MILP solver
        self.lb, self.ub, self.value = lb, ub, value
        self.warm_options = dict(warm_options or {})
        self.relaxed = False
        self.incomplete: set[int] = set()
        self.bank = WitnessBank(self.k)
        self._model: HighsModel | None = None
        self.kept: dict = {}   # further models of the component, kept for its attackers
        self._A_csc: sp.csc_matrix | None = None
        self._work: dict | None = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_model"] = None
        state["kept"] = {}
        return state

    @property
    def k(self) -> int:
        return len(self.lb)

    def bounds(self, fixed: Knowledge | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The bounds of the variables for the attacker who knows ``fixed``."""
        if fixed is None:
            return self.lb.copy(), self.ub.copy()
        return fixed.bounds(self.lb, self.ub)

    def outer_bounds(self, fixed: Knowledge | None = None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`bounds` tightened by propagation over the exact relations
        (:mod:`~tabprotect.audit.propagate`): every feasible table lies within them, so
        a table that attains one shows it an exact interval end. Once the relations are
        relaxed to rounding error, the plain bounds (the exact ones may cut feasible
        tables off)."""
        lb, ub = self.bounds(fixed)
        if self.relaxed:
            return lb, ub
        return outer_bounds(self.A, self.rhs, lb, ub)

    def lp(self, integer: bool, fixed: Knowledge | None = None, bounds=None
           ) -> LinearProgram:
        """The component's program for the attacker who knows ``fixed`` (or with the
        variable bounds ``bounds``); integral with ``integer``."""
        lb, ub = self.bounds(fixed) if bounds is None else bounds
        tol = self.row_tol if self.relaxed else 0.0
        return LinearProgram(c=np.zeros(self.k), A=self.A, row_lower=self.rhs - tol,
                             row_upper=self.rhs + tol, col_lower=lb, col_upper=ub,
                             integrality=np.full(self.k, True) if integer else None)

    def model(self, fixed: Knowledge | None = None) -> HighsModel:
        """The warm model, built on first use with the bounds of the attacker who knows
        ``fixed`` (the one in play: :meth:`fix` puts each attacker's knowledge in)."""
        if self._model is None:
            self._model = HighsModel(self.lp(False, fixed), **self.warm_options)
        return self._model

    def drop_model(self) -> None:
        """Forget the warm models (after switching to the relaxed relations)."""
        self._model = None
        self.kept = {}

    def solve(self, c_idx, c_val, sense, fixed, counters):
        """Solve with objective ``sum c_val * x[c_idx]``; returns ``(status, x)``, with
        the relations relaxed to rounding error once if the exact system is infeasible."""
        model = self.model(fixed)
        model.set_objective(indices=c_idx, values=c_val, sense=sense)
        res = model.solve(duals=False)
        counters["lp"] += 1
        if res.status == "infeasible" and not self.relaxed:
            self.relaxed = True
            self._model = None
            model = self.model(fixed)
            model.set_objective(indices=c_idx, values=c_val, sense=sense)
            res = model.solve(duals=False)
            counters["lp"] += 1
        return res.status, res.x

    def lp_end(self, j, sense, fixed, counters):
        """The LP's ``sense`` end of ``x_j`` and a solution there: ``(value, x)``;
        ``(-inf or inf, None)`` where unbounded, ``(None, None)`` without an optimum.
        Raises :class:`InfeasibleSystem`."""
        status, x = self.solve([j], [1.0], sense, fixed, counters)
        if status == "unbounded":
            return (-np.inf if sense == "min" else np.inf), None
        if status == "infeasible":
            raise InfeasibleSystem(j)
        if status != "optimal":
            return None, None
        return float(x[j]), x

    def bound(self, j, sense, integer, fixed, counters, deadline=None):
        """Exact min or max of ``x_j``: ``(value, solution or None)``; ``(None, None)``
        when an integer program found no answer by ``deadline`` (epoch seconds)."""
        val, x = self.lp_end(j, sense, fixed, counters)
        if x is None:
            return val, None
        if integer and np.abs(x - np.round(x)).max() > 1e-6:
            val, x = self.integer_bound(j, sense, fixed, counters, deadline)
        return val, x

    def integer_bound_or_witness(self, j, sense, goal, fixed, counters, deadline=None,
                                 attained: float | None = None, descent: int = 0):
        """For an integer intruder: ``(value, x, exact)``. The LP first; when its optimum
        is fractional, an integral table reaching ``goal`` (``exact`` False: ``value``
        is that table's ``x_j``, attained but maybe not the bound), and only when there
        is none the exact bound (``value`` None: no answer by ``deadline``, epoch
        seconds): by :meth:`descend` when some integral table is known to give ``x_j``
        the value ``attained`` at most ``descent`` goals short of ``goal``, else the
        integer program."""
        val, x = self.lp_end(j, sense, fixed, counters)
        if x is None or np.abs(x - np.round(x)).max() <= 1e-6:
            return val, x, True
        found, w = self.integer_witness(j, sense, goal, fixed, counters, deadline)
        if found == "found":
            return float(w[j]), w, False
        if found == "none" and attained is not None:
            val, w = self.descend(j, sense, goal, attained, descent, fixed, counters,
                                  deadline)
            if val is not None:
                return val, w, True
        val, w = self.integer_bound(j, sense, fixed, counters, deadline)
        return val, w, True

    def descend(self, j, sense, goal, attained, steps, fixed, counters, deadline=None):
        """The integer bound of ``x_j`` when no integral table reaches ``goal`` and one
        gives it ``attained``: the goals between them from the far end inwards, each by
        :meth:`integer_witness`. The first goal some table reaches is the bound (the goal
        beyond it has none); ``attained`` is the bound when none of them is reached.
        Returns ``(bound, table or None)``, or ``(None, None)`` when a search gave no
        answer or more than ``steps`` goals lie between."""
        step = -1.0 if sense == "max" else 1.0
        attained = float(np.round(attained))
        g = float(goal) + step
        if abs(g - attained) > steps:
            return None, None
        while (g > attained) if sense == "max" else (g < attained):
            found, w = self.integer_witness(j, sense, g, fixed, counters, deadline)
            if found == "found":
                return float(np.round(w[j])), w
            if found != "none":
                return None, None
            g += step
        return attained, None

    def integer_bound(self, j, sense, fixed, counters, deadline=None):
        """The LP optimum was fractional: the integer bound, by branch and bound on the
        warm model (:mod:`tabprotect.audit.integer`), else by the MILP solver.
        Returns ``(bound, solution or None)``; the solution is an integral feasible
        table, a witness for the other cells too; ``(None, None)`` when the MILP solver
        stopped at ``deadline`` without the bound."""
        from tabprotect.audit.integer import branch_and_bound   # fractional optima only
        found, x = branch_and_bound(self, j, sense, fixed, counters, self.integer_nodes,
                                    deadline=deadline)
        if found == "found":
            return float(x[j]), x
        model = HighsModel(self.lp(True, fixed))
        model.set_objective(indices=[j], values=[1.0], sense=sense)
        res = model.solve(time_limit=seconds_until(deadline))
        counters["lp"] += 1
        if res.status in ("time_limit", "time_limit_no_solution"):
            return None, None
        if res.status != "optimal" or res.x is None:
            return (-np.inf if sense == "min" else np.inf), None
        return float(round(res.x[j])), np.round(res.x)

    def integer_witness(self, j, sense, goal, fixed, counters, deadline=None,
                        objective=None):
        """An integral feasible table with ``x_j >= goal`` (``sense="max"``) or ``x_j <=
        goal`` (``"min"``): branch and bound on the warm model, else a feasibility MILP
        (both stop at their first such table, where the bound itself would need a proof
        of optimality). Returns ``(status, x)``: ``"found"`` with the table, ``"none"``
        when no such table exists, ``"unknown"`` when the solver gave no answer.
        ``objective``: the branch and bound's LP objective in place of ``x_j``
        (:func:`~tabprotect.audit.integer.branch_and_bound`)."""
        from tabprotect.audit.integer import branch_and_bound   # fractional optima only
        found, x = branch_and_bound(self, j, sense, fixed, counters, self.integer_nodes,
                                    goal=goal, deadline=deadline, objective=objective)
        if found != "unknown":
            return found, x
        lb, ub = self.bounds(fixed)
        if sense == "max":
            lb[j] = max(lb[j], goal)
        else:
            ub[j] = min(ub[j], goal)
        if lb[j] > ub[j]:
            return "none", None
        res = HighsModel(self.lp(True, bounds=(lb, ub))).solve(
            time_limit=seconds_until(deadline))
        counters["lp"] += 1
        if res.status == "infeasible":
            return "none", None
        if res.status != "optimal" or res.x is None:
            return "unknown", None
        return "found", np.round(res.x)

    def columns(self) -> sp.csc_matrix:
        """The relation matrix by columns (built once, on first use)."""
        if self._A_csc is None:
            self._A_csc = self.A.tocsc()
        return self._A_csc

    def rows_of(self, cells: np.ndarray) -> np.ndarray:
        """Relations (sorted) that hold any of ``cells``."""
        from tabprotect.csr import row_indices
        cols = self.columns()
        return np.unique(row_indices(cols.indptr, cols.indices, cells))

    def scratch(self) -> dict:
        """Per-variable and per-relation work arrays, allocated once per component and
        always handed back all-clear, so that many small block LPs cost time in their
        own size, not the component's."""
        if self._work is None:
            self._work = {"ties": np.zeros(self.k, dtype=np.int64),
                          "pos": np.full(self.k, -1, dtype=np.int64),
                          "rows": np.zeros(self.A.shape[0], dtype=bool)}
        return self._work

    @staticmethod
    def at_bounds(x, lb, ub):
        """Masks of variables sitting at their finite lower / upper bound."""
        at_lb = np.isfinite(lb) & (np.abs(x - lb) <= 1e-9 * np.maximum(1, np.abs(lb)))
        at_ub = np.isfinite(ub) & (np.abs(x - ub) <= 1e-9 * np.maximum(1, np.abs(ub)))
        return at_lb, at_ub

    def fix(self, fixed: Knowledge | None):
        """Put an attacker's knowledge into the warm model (a model not built yet is
        built with it on first use, :meth:`model`: a pass that needs no per-cell LP
        builds none)."""
        if fixed is not None and self._model is not None:
            lb, ub = fixed.bounds(self.lb, self.ub)
            idx = fixed.index
            self._model.set_col_bounds(idx, lb[idx], ub[idx])

    def unfix(self, fixed: Knowledge | None):
        if fixed is not None and self._model is not None:
            idx = fixed.index
            self._model.set_col_bounds(idx, self.lb[idx], self.ub[idx])
