"""The certified heuristic for large sub-tables: a protected pattern built one
condition at a time, each condition with the attacker move that proves it.

For every primary and direction (largest requirement first) one LP finds the cheapest
deviation vector ``y`` with ``A y = 0`` that moves the primary by its requirement,
within the cells' ranges, where moving a suppressed cell is (almost) free and moving a
candidate costs its suppression cost per unit of range; the cells it moves are
suppressed.  ``y`` stays a valid attacker move when more cells are suppressed later, so
it *proves* the condition for the final pattern: no attacker LP, no check pass (the
attacker here is the outsider; single-contributor attackers are left to the caller).
"""
from __future__ import annotations

import time

import numpy as np
from scipy import sparse

from solvers import HighsModel, LinearProgram
from tabprotect.audit.least_moves import split_bounds
from tabprotect.errors import InfeasibleRulesError
from tabprotect.model.table import Table
from tabprotect.secondary.candidates import candidate_cells


class Unreachable(InfeasibleRulesError):
    """A primary's condition cannot be met with the sub-table's movable cells."""


#: a condition: (largest requirement, primary, amount up, amount down)
Condition = tuple[float, int, float, float]


def conditions(req) -> list[Condition]:
    """The conditions of ``req``'s primaries, largest requirement first (its
    suppressions serve the smaller ones); a sliding requirement asks half of it each
    way, and every amount a little more than asked (the audit's tolerance must not
    decide)."""
    needs = []
    for slot, s in enumerate(req.primary):
        up, down = float(req.need_up[slot]), float(req.need_down[slot])
        width = float(req.need_width[slot])
        if width > up + down:  # half of the sliding requirement each way suffices
            up, down = max(up, 0.5 * width), max(down, 0.5 * width)
        tol = float(req.tol[slot])
        up = min(up * (1 + 1e-6) + tol, req.up[s]) if up > 0 else 0.0
        down = min(down * (1 + 1e-6) + tol, req.down[s]) if down > 0 else 0.0
        needs.append((max(up, down), int(s), up, down))
    needs.sort(key=lambda c: (-c[0], c[1]))
    return needs


class _Move:
    """A deviation found so far (valid for the pattern: its cells are suppressed), with
    how far it can be scaled forwards and backwards within the cells' ranges."""

    __slots__ = ("support", "values", "forward", "backward")

    def __init__(self, y: np.ndarray, need: float, req):
        self.support = np.flatnonzero(np.abs(y) > 1e-9 * max(1.0, need))
        vals = y[self.support]
        up, down = req.up[self.support], req.down[self.support]
        with np.errstate(divide="ignore", invalid="ignore"):
            fwd = np.where(vals > 0, up / vals, down / -vals)
            bwd = np.where(vals > 0, down / vals, up / -vals)
        self.values = vals
        # (scaled by at most 1,000: the dropped tiny entries stay negligible)
        self.forward = min(float(fwd.min()), 1e3)
        self.backward = min(float(bwd.min()), 1e3)

    def reach(self, cell: int, sign: int) -> float:
        """How far the move, scaled within the ranges, takes ``cell`` in direction
        ``sign``."""
        v = float(self.values[np.searchsorted(self.support, cell)]) * sign
        return v * self.forward if v > 0 else -v * self.backward


class _Builder:
    """The pattern ``z`` under construction, the moves that prove its conditions and
    the number of LPs solved."""

    def __init__(self, sub: Table, req, cost: np.ndarray, z: np.ndarray):
        self.sub, self.req, self.z = sub, req, z
        self.cost = np.asarray(cost, dtype=float)
        self.A = sub.relations.tocsr()
        positive = self.cost[self.cost > 0]
        self.free_cost = 1e-6 * (float(np.median(positive)) if len(positive) else 1.0)
        self.n_lp = 0
        self.moves: list[_Move] = []
        self.by_cell: dict[int, list[int]] = {}
        #: (primary, sign) -> index of the move that proves it (first pass)
        self.proofs: dict[tuple[int, int], int] = {}
        #: one LP over every cell of the sub-table, built at the first move: the LPs of
        #: a sub-table differ only in bounds and costs, so each re-solve starts from the
        #: previous basis (cells outside the move's reach are fixed at 0)
        self.model: HighsModel | None = None

    def forget_moves(self) -> None:
        """Drop the moves found so far (their cells may not come back)."""
        self.moves = []
        self.by_cell = {}

    def certify(self, s: int, up: float, down: float, allowed: np.ndarray,
                record: bool = False) -> None:
        """Suppress the cells of a move of ``s`` up by ``up`` and one down by ``down``
        (``record``: remember which move proves each direction)."""
        for sign, need in ((1, up), (-1, down)):
            if need <= 0:
                continue
            k = self._met(s, sign, need)
            if k is None:
                y = self._cheapest_move(s, sign, need, allowed)
                if y is None:
                    raise Unreachable(f"primary {s} cannot move by its requirement")
                self.z[np.abs(y) > 1e-9 * max(1.0, need)] = True
                k = self._remember(y, need)
            if record:
                self.proofs[(s, sign)] = k

    def _remember(self, y: np.ndarray, need: float) -> int:
        move = _Move(y, need, self.req)
        self.moves.append(move)
        k = len(self.moves) - 1
        for c in move.support.tolist():
            self.by_cell.setdefault(c, []).append(k)
        return k

    def _met(self, s: int, sign: int, need: float) -> int | None:
        """A move found so far that meets the condition (scaled), or None."""
        for k in self.by_cell.get(s, ()):
            if need <= self.moves[k].reach(s, sign) * (1 - 1e-9):
                return k
        return None

    def _cheapest_move(self, s: int, sign: int, need: float, allowed: np.ndarray
                       ) -> np.ndarray | None:
        """The cheapest deviation moving ``s`` by ``need`` (direction ``sign``) within
        the ranges of the suppressed and ``allowed`` cells; None when there is none."""
        req = self.req
        free_to_move = self.z | allowed
        if not free_to_move[s]:
            return None
        if (req.up if sign > 0 else req.down)[s] < need - 1e-12 * max(1.0, need):
            return None
        n = self.sub.n_cells
        lo, hi = split_bounds(np.where(free_to_move, req.up, 0.0),
                              np.where(free_to_move, req.down, 0.0), s, sign, need)
        c = self._weights(need, req.up, req.down)
        if self.model is None:
            self.model = HighsModel(LinearProgram(c=c, col_lower=lo, col_upper=hi,
                                                  **self._relations()), threads=1)
        else:
            self.model.set_col_bounds(np.arange(2 * n), lo, hi)
            self.model.set_objective(c)
        res = self.model.solve()
        self.n_lp += 1
        if res.status == "infeasible":
            return None
        if res.status != "optimal":
            raise RuntimeError(f"certified pattern LP ended with status {res.status}")
        y = res.x[:n] - res.x[n:]
        y[~free_to_move] = 0.0
        return y

    def _weights(self, need: float, hi_up: np.ndarray, hi_dn: np.ndarray) -> np.ndarray:
        """Cost of moving a cell by the requirement: its cost (more when its range is
        smaller than the requirement); a suppressed cell moves (almost) for free."""
        c_cells = self.cost
        with np.errstate(divide="ignore", invalid="ignore"):
            w_up = np.where(hi_up > 0, c_cells * np.maximum(1.0, need / hi_up), 0.0)
            w_dn = np.where(hi_dn > 0, c_cells * np.maximum(1.0, need / hi_dn), 0.0)
        z = self.z
        return np.concatenate([np.where(z, self.free_cost, w_up),
                               np.where(z, self.free_cost, w_dn)])

    def _relations(self) -> dict:
        """``A y = 0`` over the sub-table (split into up and down columns)."""
        A = self.A[np.flatnonzero(np.diff(self.A.indptr) > 0)]
        zero = np.zeros(A.shape[0])
        return dict(A=sparse.hstack([A, -A]).tocsr(), row_lower=zero, row_upper=zero)


def certified_pattern(sub: Table, req, cost: np.ndarray, *,
                      candidates: np.ndarray | None = None,
                      hidden: np.ndarray | None = None,
                      deadline: float | None = None, prune: bool = True,
                      prune_by: float | None = None) -> tuple[np.ndarray, int]:
    """A protected pattern built one condition at a time, each with its own proof
    (see the module docstring).

    A condition already met by the suppressed cells costs one LP and adds nothing; one
    that a move found earlier already meets (scaled within the ranges) costs no LP.
    ``prune``: a second pass in reverse order, allowed only the cells of the first,
    drops what the conditions no longer need; it stops at ``prune_by``
    (``time.perf_counter()`` value), the first pass's moves then proving the conditions
    it did not reach.

    Returns (pattern mask, number of LPs).  Raises :class:`Unreachable` when some
    condition cannot be met (the sub-table is infeasible with its candidates) and
    ``TimeoutError`` when the first pass passes ``deadline``.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> from tabprotect.secondary.attack_requirements import Requirements
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2],
    ...                       status=list("SSSSUSSSS"), upl=[0, 0, 0, 0, 1, 0, 0, 0, 0])
    >>> z, n_lp = certified_pattern(t, Requirements.from_table(t, singleton=False),
    ...                             t.value.copy())
    >>> np.flatnonzero(z).tolist()
    [4, 5, 7, 8]
    """
    z = np.isin(sub.status, ("U", "M")) if hidden is None else np.asarray(hidden, bool).copy()
    cand = candidate_cells(sub) if candidates is None else np.asarray(candidates, bool)
    needs = conditions(req)
    build = _Builder(sub, req, cost, z)
    start = z.copy()
    for _, s, up, down in needs:
        if deadline is not None and time.perf_counter() > deadline:
            raise TimeoutError("certified pattern: out of time")
        build.certify(s, up, down, cand, record=True)
    if prune and (z & ~start).any():
        _reverse_pass(build, needs, start, prune_by)
    return build.z, build.n_lp


def _reverse_pass(build: _Builder, needs: list[Condition], start: np.ndarray,
                  prune_by: float | None) -> None:
    """Second pass from ``start``, allowed only the first pass's cells, in reverse
    order: the conditions that came first now find the cells later ones brought in,
    and what no condition needs any more is dropped (a cheaper subset).  Out of time
    (``prune_by``), the first pass's moves prove the conditions left."""
    z = build.z
    first_pass = z & ~start
    first_moves = build.moves
    z[:] = start
    build.forget_moves()
    order = needs[::-1]
    for i, (_, s, up, down) in enumerate(order):
        if prune_by is not None and time.perf_counter() > prune_by:
            for _, s2, _, _ in order[i:]:
                for sign in (1, -1):
                    if (s2, sign) in build.proofs:
                        z[first_moves[build.proofs[(s2, sign)]].support] = True
            return
        build.certify(s, up, down, first_pass)
