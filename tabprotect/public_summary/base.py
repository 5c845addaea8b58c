"""The integer programs of the public summary's checks on frequency tables, solved the
way the audit solves its components: a warm model per program, kept for its next target,
and branch and bound on it (:mod:`tabprotect.audit.integer`), the MILP solver only after
its node budget. A fresh MILP per target costs tens of warm re-solves.

:class:`IntegerEnds`: the primaries' integer ends without the figures, per component of
the pattern (the audit's cut: cells a relation pins down are left out), each with an
integral table of the whole system at it (the component's part from the solve, every
other cell at its true value), a witness for the checks after. An end a table already
found sits at (its outer bound: the a-priori bounds tightened over the relations, or its
LP end rounded inward) needs no search of its own. :class:`WarmSystems`: an integral
table of a component (and components beside it) with the figures' parts held and a cell
at a given goal, and a component's integral table with its parts moved by a given
amount. :meth:`IntegerEnds.toward`: another table at an end already known, found by
LPs that lean toward the figures' true parts (an end point from the LP of the end alone
is a vertex that often moves them far).

Where the LP end is fractional, the LP end rounded inward bounds the integer end, so the
first integral table there (a search that proves nothing about optimality) gives it;
only where there is none does branch and bound look for the optimum.
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from tabprotect.audit.core import determined_cells
from tabprotect.audit.settings import AuditSettings
from tabprotect.audit.system import (InfeasibleSystem, Knowledge, ReducedSystem,
                                     SystemBuilder, new_counters)
from tabprotect.model.relations import linked_components
from tabprotect.model.table import Table

__all__ = ["IntegerEnds", "WarmSystems"]


class IntegerEnds:
    """The components of the intruder's system without the figures (the audit's cut:
    cells a relation pins down are left out), solved on demand."""

    def __init__(self, table: Table, suppressed: np.ndarray, deadline: float | None):
        A = table.relations.tocsr()
        self.value = table.value.astype(float)
        self.determined = determined_cells(A, suppressed)
        free = suppressed & ~self.determined
        # the audit's defaults: when a warm model re-solves by the dual simplex, how
        # many branch-and-bound nodes before the MILP solver
        settings = AuditSettings()
        builder = SystemBuilder(table, free, settings.dual_min_vars,
                                settings.integer_nodes)
        self.comps = linked_components(A, free)
        self.comp_of = np.full(table.n_cells, -1)
        for k, cells in enumerate(self.comps):
            self.comp_of[cells] = k
        self._builder = builder
        self._systems: dict[int, object] = {}
        # per component and leaning of the searches (:meth:`toward`): a second warm
        # model, its objective kept from one search to the next
        self._leaning: dict[tuple, object] = {}
        self._points: dict[int, list[np.ndarray]] = {}
        self._outer: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        # the checker's deadline is monotonic; the audit's solves take epoch seconds
        self.deadline = None if deadline is None else \
            time.time() + (deadline - time.monotonic())
        self.counters = new_counters()

    def end(self, cell: int, sense: str):
        """``(value, table)`` of the integer ``sense`` end of ``cell`` (a table cell),
        the table over every cell (None where the end is unbounded); ``(None, None)``
        when out of time or the system is infeasible."""
        if self.determined[cell]:
            return float(self.value[cell]), self.value.copy()
        k = int(self.comp_of[cell])
        cells = self.comps[k]
        system = self._systems.get(k)
        if system is None:
            system = self._systems[k] = self._builder.system(cells)
            self._points[k] = []
        j = int(np.searchsorted(cells, cell))
        if k not in self._outer:
            self._outer[k] = system.outer_bounds(None)
        lb, ub = self._outer[k]
        bound = lb[j] if sense == "min" else ub[j]
        for x in self._points[k]:
            if np.isfinite(bound) and abs(x[j] - bound) <= 1e-9 * max(1.0, abs(bound)):
                return float(bound), self._whole(cells, x)
        try:
            val, x = integer_end(system, j, sense, self.counters, self.deadline,
                                 self._points[k])
        except InfeasibleSystem:
            return None, None
        if val is None:
            return None, None
        if x is None:
            return val, None
        if not any(x is p for p in self._points[k]):
            self._points[k].append(x)
        return float(np.round(val)), self._whole(cells, x)

    def toward(self, cell: int, sense: str, goal: float, weights: np.ndarray):
        """An integral table of the whole system (the table's cells; ``cell``'s
        component changed, every other cell at its true value) with ``cell`` at
        ``goal`` or beyond in the ``sense`` direction, found by a search whose LPs
        maximize ``weights @ x`` over the component (``weights`` over the table's
        cells): a table at the same end as another, leaning toward a sum the caller
        wants near its true value. None where the search finds none in time."""
        if self.determined[cell]:
            return None
        k = int(self.comp_of[cell])
        cells = self.comps[k]
        w = weights[cells]
        nz = np.flatnonzero(w)
        if len(nz) == 0:
            return None
        key = (k, w.tobytes())
        system = self._leaning.get(key)
        if system is None:
            system = self._leaning[key] = self._builder.system(cells)
        try:
            found, x = system.integer_witness(int(np.searchsorted(cells, cell)), sense,
                                              goal, None, self.counters, self.deadline,
                                              objective=(nz, w[nz], "max"))
        except InfeasibleSystem:
            return None
        return self._whole(cells, np.round(x)) if found == "found" else None

    def _whole(self, cells: np.ndarray, x: np.ndarray) -> np.ndarray:
        out = self.value.copy()
        out[cells] = x
        return out


class WarmSystems:
    """Warm models of the checks' small integer programs (a component, maybe with
    others beside it, and the figures' parts there held at their true values), kept
    for the next target of the same program: each end by the audit's warm solve and
    branch and bound (:meth:`~tabprotect.audit.system.ReducedSystem.bound`)."""

    def __init__(self, deadline: float | None, nodes: int = 20):
        self.deadline = None if deadline is None else \
            time.time() + (deadline - time.monotonic())
        # branch-and-bound LPs of a search before the MILP solver: these programs hold
        # the figures' parts as extra rows, where a depth-first search that has not
        # found a point in a few dozen LPs rarely finds one soon, and the MILP solver
        # finds one in about the time of twenty
        self.nodes = nodes
        self.counters = new_counters()
        self._systems: dict = {}
        # per program: the integral solutions its searches found (one may reach the
        # next target's goal without a search)
        self._points: dict = {}

    def reach(self, key, j: int, sense: str, goal: float, lp, value: np.ndarray):
        """An integral solution of ``lp`` (its rows hold within their ranges; ``key``
        names the program for reuse, ``value`` its true point) with column ``j`` at
        ``goal`` or beyond in the ``sense`` direction: ``("found", x)``, ``("none",
        None)`` where there is none (an infeasible program included), ``("unknown",
        None)`` out of time. A solution an earlier search of the program found is
        looked at first; the search stops at its first solution (no optimum sought)."""
        system = self._systems.get(key)
        if system is None:
            mid = (lp.row_lower + lp.row_upper) / 2
            system = self._systems[key] = ReducedSystem(
                A=lp.A, rhs=mid, row_tol=(lp.row_upper - lp.row_lower) / 2,
                lb=lp.col_lower, ub=lp.col_upper, value=value, integer_nodes=self.nodes)
        points = self._points.setdefault(key, [])
        sign = 1.0 if sense == "max" else -1.0
        for p in points:
            if sign * p[j] >= sign * goal:
                return "found", p
        try:
            found, x = system.integer_witness(j, sense, goal, None, self.counters,
                                              self.deadline)
        except InfeasibleSystem:
            return "none", None
        if found == "found":
            x = np.round(x)
            points.append(x)
        return found, x


    def shift(self, key, lp, value: np.ndarray, E: np.ndarray, want: np.ndarray):
        """An integral solution of ``lp`` (a component's system) with ``E @ x == want``
        (integral ``E`` and ``want``: the figures' parts, moved), or None where there is
        none, False without an answer in time. ``key`` names the component: the parts
        are extra variables ``s = E x`` of one warm model, fixed at ``want`` per call,
        and the search stops at its first integral solution."""
        r, k = E.shape[0], lp.n_cols
        system = self._systems.get(key)
        if system is None:
            A = sp.bmat([[lp.A, None], [sp.csr_matrix(E), -sp.identity(r)]], format="csr")
            mid = (lp.row_lower + lp.row_upper) / 2
            system = self._systems[key] = ReducedSystem(
                A=A, rhs=np.concatenate([mid, np.zeros(r)]),
                row_tol=np.concatenate([(lp.row_upper - lp.row_lower) / 2, np.zeros(r)]),
                lb=np.concatenate([lp.col_lower, np.full(r, -np.inf)]),
                ub=np.concatenate([lp.col_upper, np.full(r, np.inf)]),
                value=np.concatenate([value, E @ value]), integer_nodes=self.nodes)
        parts = Knowledge.exact(np.arange(k, k + r), want)
        system.fix(parts)
        try:
            found, x = system.integer_witness(k, "max", float(want[0]), parts,
                                              self.counters, self.deadline)
        except InfeasibleSystem:
            return None
        finally:
            system.unfix(parts)
        if found == "unknown":
            return False
        return None if found == "none" else np.round(x[:k])


def integer_end(system: ReducedSystem, j: int, sense: str, counters: dict,
                deadline: float | None, points=()):
    """``(value, x)``: the integer ``sense`` end of variable ``j`` of ``system`` and an
    integral solution there (None where unbounded); ``(None, None)`` without an answer
    by ``deadline`` (epoch seconds). The LP end rounded inward bounds the integer end,
    so an integral solution there gives it: one of ``points`` (integral solutions of
    ``system`` found before) or else the first one a search finds (no proof of
    optimality); branch and bound for the optimum only where there is none.
    Raises :class:`~tabprotect.audit.system.InfeasibleSystem`."""
    val, x = system.lp_end(j, sense, None, counters)
    if x is None:
        return val, None
    if np.abs(x - np.round(x)).max() <= 1e-6:
        return float(np.round(val)), np.round(x)
    goal = np.floor(x[j] + 1e-6) if sense == "max" else np.ceil(x[j] - 1e-6)
    for p in points:
        if p[j] == goal:
            return float(goal), p
    found, w = system.integer_witness(j, sense, goal, None, counters, deadline)
    if found == "found":
        return float(goal), np.round(w)
    if found == "unknown":
        return None, None
    val, w = system.integer_bound(j, sense, None, counters, deadline)
    if val is None:
        return None, None
    return float(np.round(val)) if np.isfinite(val) else val, \
        None if w is None else np.round(w)
