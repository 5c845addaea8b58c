"""Integral witnesses from least moves (verdict and screen modes, integer intruder).

An integer intruder's witnesses must be integral tables, and the aggregate and block LPs
of a component whose relations are not totally unimodular (3-D tables and up) end at
fractional vertices: the screen then leaves primaries uncertified that the LP audit
certifies, and the repair protects them again at a price in cells. A least move finds
most of those witnesses cheaply: per open primary and direction,

1. the least total change (L1) of the component's cells that takes the primary to its
   goal, an LP on one warm model per component (only the primary's bounds change from
   one primary to the next); its solution, when integral, is the witness;
2. else the same problem as a small MILP over the cells that LP moved and the cells one
   relation step from them (every other cell at its true value, so that a solution is a
   feasible table of the whole component).

The goal of a direction is the value that gives the whole required width alone, else just
that side's requirement. A move certifies nothing it does not reach; what stays open goes
to the per-cell bounds (verdict) or counts as short (screen), as before.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram, solve
from tabprotect.audit.regions import region_program
from tabprotect.audit.system import ReducedSystem, out_of_time
from tabprotect.csr import row_indices

#: seconds of one restricted MILP (an unsolved one leaves that end open, as without it)
MILP_SECONDS = 2.0


def goals(value: float, req_lo: float, req_hi: float, req_w: float, integer: bool
          ) -> dict[str, list[float]]:
    """Per direction (``"max"``, ``"min"``) the values a move tries to take the primary
    to, the most useful first: far enough to give the whole width alone, then just the
    requirement of that side (values equal to the true one dropped)."""
    up = max(req_hi, value) if np.isfinite(req_hi) else value
    down = min(req_lo, value) if np.isfinite(req_lo) else value
    w = req_w if np.isfinite(req_w) else 0.0
    out = {"max": [max(up, down + w), up], "min": [min(down, up - w), down]}
    if integer:
        out = {"max": [float(np.ceil(g - 1e-6)) for g in out["max"]],
               "min": [float(np.floor(g + 1e-6)) for g in out["min"]]}
    return {s: sorted({g for g in gs if abs(g - value) > 1e-9},
                      key=lambda g: -abs(g - value))
            for s, gs in out.items()}


def move_program(A: sp.csr_matrix, row_lower: np.ndarray, row_upper: np.ndarray,
                 up: np.ndarray, dn: np.ndarray, lower: tuple | None = None,
                 least: bool = True, integer: bool = False) -> LinearProgram:
    """The program of a move ``p - m`` over the columns of ``A`` (``0 <= p <= up``, ``0 <=
    m <= dn``, at least ``lower`` = ``(p_lo, m_lo)``) with ``A (p - m)`` within
    ``[row_lower, row_upper]``: the least total change ``sum(p + m)`` when ``least``,
    else any (a feasibility program); integral when ``integer``."""
    n = A.shape[1]
    p_lo, m_lo = lower if lower is not None else (np.zeros(n), np.zeros(n))
    return LinearProgram(c=np.full(2 * n, 1.0 if least else 0.0),
                         A=sp.hstack([A, -A]).tocsr(), row_lower=row_lower,
                         row_upper=row_upper, col_lower=np.concatenate([p_lo, m_lo]),
                         col_upper=np.concatenate([up, dn]),
                         integrality=np.full(2 * n, True) if integer else None, sense="min")


def split_bounds(up: np.ndarray, down: np.ndarray, k: int, sign: float, need: float,
                 exact: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Column bounds of a move ``y = f_plus - f_minus`` (columns ``f_plus`` then
    ``f_minus``, each cell within ``up`` / ``down``) that moves cell ``k`` by at least
    ``need`` in direction ``sign`` (exactly ``need`` when ``exact``), never the other way."""
    n = len(up)
    lo = np.zeros(2 * n)
    hi = np.concatenate([up, down])
    move, other = (k, n + k) if sign > 0 else (n + k, k)
    lo[move], hi[other] = need, 0.0
    if exact:
        hi[move] = need
    return lo, hi


def pinned(at: int, need_up: float, need_down: float, up: np.ndarray, dn: np.ndarray):
    """The column bounds of :func:`move_program` that take column ``at`` at least
    ``need_up`` up (when positive) or else ``need_down`` down, as ``(lower, up, dn)``
    (copies), or None when its bounds leave no room for that."""
    n = len(up)
    lo, hi = split_bounds(up, dn, at, 1.0 if need_up > 0 else -1.0,
                          need_up if need_up > 0 else need_down)
    if lo[at] > hi[at] + 1e-9 or lo[n + at] > hi[n + at] + 1e-9:
        return None
    return (lo[:n], lo[n:]), hi[:n], hi[n:]


class LeastMoveModel:
    """The warm least-move LP of one component (:func:`move_program` over the system's
    variables, ``A (value + p - m)`` within the relations' bounds, every cell within its
    a-priori bounds), only the moved primary's bounds changing from one solve to the
    next."""

    def __init__(self, system: ReducedSystem):
        self.system = system
        v = system.value
        self.up = np.maximum(system.ub - v, 0.0)
        self.dn = np.maximum(v - system.lb, 0.0)
        base = system.A @ v
        tol = system.row_tol if system.relaxed else 0.0
        self.model = HighsModel(move_program(system.A, system.rhs - tol - base,
                                             system.rhs + tol - base, self.up, self.dn))

    @classmethod
    def of(cls, system: ReducedSystem) -> "LeastMoveModel":
        model = system.kept.get("least_move")
        if model is None:
            model = system.kept["least_move"] = cls(system)
        return model

    def solve(self, j: int, sense: str, goal: float, counters: dict):
        """The least move taking ``j`` to ``goal``: the deviation over all variables, or
        None (no such move, or no answer)."""
        k, v = self.system.k, self.system.value[j]
        need = goal - v if sense == "max" else v - goal
        cols = [j, k + j]
        if sense == "max":
            lower, upper = [need, 0.0], [self.up[j], 0.0]
        else:
            lower, upper = [0.0, need], [0.0, self.dn[j]]
        if need > (self.up[j] if sense == "max" else self.dn[j]) + 1e-9:
            return None
        self.model.set_col_bounds(cols, lower, upper)
        try:
            res = self.model.solve()
        finally:
            self.model.set_col_bounds(cols, [0.0, 0.0], [self.up[j], self.dn[j]])
        counters["lp"] += 1
        if res.status != "optimal" or res.x is None:
            return None
        return res.x[:k] - res.x[k:]


def restricted_move(system: ReducedSystem, j: int, sense: str, goal: float,
                    cells: np.ndarray, counters: dict):
    """The least integral move over the sorted ``cells`` (the rest at its true values)
    taking ``j`` to ``goal``: the deviation over all variables, or None."""
    sub, row_lo, row_hi, lb, ub = region_program(system, cells, "restricted", None)
    v = system.value[cells]
    base = sub @ v
    at = int(np.searchsorted(cells, j))
    need = goal - v[at] if sense == "max" else v[at] - goal
    bounds = pinned(at, need if sense == "max" else 0.0, need if sense == "min" else 0.0,
                    np.maximum(ub - v, 0.0), np.maximum(v - lb, 0.0))
    if bounds is None:
        return None
    lp = move_program(sub, row_lo - base, row_hi - base, bounds[1], bounds[2], bounds[0],
                      integer=True)
    res = solve(lp, time_limit=MILP_SECONDS)
    counters["lp"] += 1
    if res.status != "optimal" or res.x is None:
        return None
    n = len(cells)
    d = np.zeros(system.k)
    d[cells] = np.round(res.x[:n] - res.x[n:])
    return d


def integral_move(system: ReducedSystem, j: int, sense: str, goal: float,
                  counters: dict):
    """An integral feasible table with ``x_j`` at ``goal`` (see the module docstring),
    or None."""
    d = LeastMoveModel.of(system).solve(j, sense, goal, counters)
    if d is None:
        return None
    if np.abs(d - np.round(d)).max() <= 1e-6:
        return system.value + np.round(d)
    moved = np.flatnonzero(np.abs(d) > 1e-9)
    A = system.A
    cells = np.union1d(row_indices(A.indptr, A.indices, system.rows_of(moved)), [j])
    d = restricted_move(system, j, sense, goal, cells.astype(np.int64), counters)
    return None if d is None else system.value + d


def least_move_pass(state, max_primaries: int) -> None:
    """Integral witnesses by least moves for the open primaries of an integer verdict
    search without an attacker's knowledge, when at most ``max_primaries`` are open (see
    the module docstring)."""
    open_ = np.flatnonzero(state.open())
    if not state.integer or state.fixed is not None or not 0 < len(open_) <= max_primaries:
        return
    system, task = state.system, state.task
    for j in open_:
        j = int(j)
        for sense, needs in (("max", state.needs_hi), ("min", state.needs_lo)):
            if not needs(j):
                continue
            for goal in goals(system.value[j], state.req_lo[j], state.req_hi[j],
                              state.req_w[j], True)[sense]:
                if out_of_time(task.deadline):
                    return
                x = integral_move(system, j, sense, goal, state.counters)
                if x is not None:
                    state.absorb(x)
                    break
