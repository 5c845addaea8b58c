"""Modular (HiTaS) secondary suppression: optimal sub-tables, top-down, with backtracking.

A hierarchical table is split into its non-hierarchical sub-tables (a parent code with its
children in every dimension; :mod:`tabprotect.secondary.subtables`).  They are solved
top-down (by level), each with the optimal method on the small flat table:

* cells suppressed so far (primaries, and secondaries chosen in earlier sub-tables) are
  primaries of the sub-table: a carried secondary gets a protection level from the
  sub-table that suppressed it, so that a move of that sub-table can be matched in the
  others: by default how far the cell moves in the attacker moves that prove the
  sub-table's requirements (:func:`proof_levels`; ``carried_level="proof"``), else the
  median -- or, ``carried_level="max"``, the largest -- requirement of that sub-table's
  own primaries; capped by the cell's a-priori range;
* margin cells that a higher sub-table published (cells with the group's parent code in
  some dimension) must stay published: status ``P`` in the sub-table;
* when a sub-table cannot be protected that way, it is solved again with its margin cells
  allowed (at ten times their cost) and every newly suppressed margin cell is carried
  back: the higher sub-tables containing it are solved again with it as a primary
  (backtracking), and so on until no sub-table changes.

Sub-tables of one level share no cell, so they are independent given the levels above:
they are solved as one wave, in parallel worker processes (``workers``), and their results
applied in key order (deterministic).  A sub-table whose suppressed cells already protect
each other needs no MILP and is skipped; that test and the feasibility test use cube proofs
(:func:`cube_protected`) and attacker LPs only for what cubes cannot prove.  With a
``time_limit`` every wave's sub-tables get a share of the time left (the time plan; each
worker hands time its jobs did not use on to its later jobs), sub-tables queued in the
last part of it get a fast solve (the certified heuristic's first pass) instead of none;
protect() hands the method its share of the call's budget and keeps the audit's back.  Any
number of dimensions works: a sub-table is the product of one group per dimension.  The
full-table audit and repair of :func:`tabprotect.secondary.protect` have the last word.
"""
from __future__ import annotations

import heapq
import pickle
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Literal

import numpy as np

from tabprotect.errors import InfeasibleRulesError, InputError
from tabprotect.model.table import Table
from tabprotect.parallel import process_map
from tabprotect.secondary.base import MethodOutcome, register_method
from tabprotect.secondary.hypercube import requirements
from tabprotect.secondary.subtables import Split, subtable_table

#: a sub-table solver: (flat sub-table, cost, time limit) -> its new status array
SubtableSolver = Callable[[Table, np.ndarray, "float | None"], np.ndarray]

_MARGIN_PENALTY = 10.0
#: sub-tables up to this many primaries x cells get :func:`proof_levels` (two LPs per
#: primary); larger ones carry the median requirement.  The LPs cost time that a
#: time-limited run on a large table needs for its sub-table solves: on the generated
#: 100k-cell 3-D table (sub-tables of ~180 cells with dozens of primaries), with proof
#: levels everywhere and 200 s, 225 sub-tables were solved against 310 with the median
PROOF_LEVEL_MAX_WORK = 2_000
#: a sub-table solve never gets less than this many seconds (below it the optimal
#: method has no pattern of its own and falls back to its repair heuristic)
MIN_SUBTABLE_SECONDS = 0.5
#: share of the time limit the sub-table solves may plan to use (the rest: building
#: sub-tables, process start-up, and re-solves after backtracking)
PLANNED_SHARE = 0.8
#: the last part of the method's time (a share of it): sub-tables started then get the
#: fast solve (the certified heuristic's first pass, no MILP, no pruning) instead of
#: being left to protect()'s audit and repair, which costs far more time per cell
FAST_TAIL = 0.1


#: sub-tables with at least this many (primaries x cells) get the certified heuristic
#: (:func:`certified_pattern`) instead of the optimal method: on 4-D sub-tables of 1,000
#: cells with 150 primaries the optimal method finds no pattern of its own in seconds
HEURISTIC_SIZE = 20_000
#: ... and at least this many primaries: a large flat table with a handful of primaries
#: is quick for the optimal method and the heuristic's cost there is far from optimal
#: (Castro's OSORIO, 101 x 101 cells, 7 primaries: optimal method 13 in 5 s, heuristic 41)
HEURISTIC_MIN_PRIMARIES = 20


def uses_heuristic(n_primaries: int, n_cells: int, heuristic_size: int | None) -> bool:
    """Whether a sub-table gets :func:`certified_pattern` instead of the optimal method:
    from ``heuristic_size`` primaries x cells and :data:`HEURISTIC_MIN_PRIMARIES`
    primaries (``heuristic_size=0``: every sub-table; None: none).

    >>> uses_heuristic(150, 1050, HEURISTIC_SIZE), uses_heuristic(7, 10201, HEURISTIC_SIZE)
    (True, False)
    """
    if heuristic_size is None:
        return False
    return (n_primaries * n_cells >= heuristic_size
            and n_primaries >= min(HEURISTIC_MIN_PRIMARIES, heuristic_size))


def _optimal_solve(sub: Table, cost: np.ndarray, time_limit: float | None,
                   singleton: bool, mip_gap: float | None,
                   short: np.ndarray | None = None, seed: bool = False,
                   heuristic_size: int | None = HEURISTIC_SIZE,
                   deadline: float | None = None, prune: bool = True) -> np.ndarray:
    """The optimal method on one sub-table, after checking that it can be protected;
    the certified heuristic on a large one.

    ``short``: the primaries the current pattern leaves unprotected, when known; only
    they need the feasibility check (more suppression never unprotects a primary).
    ``seed``: start the optimal method from a cube pattern (:func:`cube_pattern`) that
    protects every primary, so that a solve stopped by its time limit always has a
    pattern of its own (without one the optimal method falls back to a repair that can
    take several times the limit on large sub-tables).
    ``heuristic_size``: from this many primaries x cells the sub-table gets
    :func:`certified_pattern` (its own feasibility test) and no MILP; None: never.
    ``deadline``: ``time.perf_counter()`` value the heuristic must not pass.
    ``prune``: the heuristic's reverse pass (off: the first pass only, the fast solve).
    """
    from tabprotect.secondary.optimal import optimal
    from tabprotect.secondary.repair import AttackerOracle, GreedyRepair, Requirements

    req = Requirements.from_table(sub, singleton=singleton)
    todo = req.primary if short is None else np.asarray(short, dtype=np.int64)
    if uses_heuristic(len(req.primary), sub.n_cells, heuristic_size):
        hidden = np.isin(sub.status, ("U", "M"))
        only = np.isin(req.primary, todo)
        if not only.all():  # conditions of the short primaries only
            req = _restricted(req, only)
        prune_by = None if time_limit is None else time.perf_counter() + time_limit
        if deadline is not None:
            prune_by = deadline if prune_by is None else min(prune_by, deadline)
        try:
            z, _ = certified_pattern(sub, req, cost, hidden=hidden, deadline=deadline,
                                     prune=prune, prune_by=prune_by)
        except Unreachable as exc:
            raise InfeasibleRulesError(f"sub-table cannot be protected: {exc}") from None
        if singleton and req.singleton.any():
            # the certificates are outsider moves: the greedy repair adds what the
            # single-contributor attackers still need (checked by attacker LPs)
            full = Requirements.from_table(sub, singleton=singleton)
            from tabprotect.secondary.candidates import candidate_cells
            z, _ = GreedyRepair(sub, full, cost, candidate_cells(sub)).run(z,
                                                                           deadline=prune_by)
        status = sub.status.copy()
        status[z & ~hidden] = "M"
        return status
    movable = np.isin(sub.status, ("S", "U", "M")) & (sub.ub > sub.lb)
    # a movable cube proves a primary protectable without any LP
    todo = todo[~cube_protected(sub, req, movable, todo)]
    if len(todo):
        chk = AttackerOracle(sub, req).check(movable, cuts=False, primaries=todo,
                                             first_only=True)
        if not chk.ok:
            raise InfeasibleRulesError("sub-table cannot be protected with its margins")
    start = cube_pattern(sub, req, cost) if seed else None
    out = optimal(sub, cost, time_limit=time_limit, singleton=singleton, mip_gap=mip_gap,
                  threads=1, start=start)
    return np.asarray(out.status)


def _restricted(req, keep: np.ndarray):
    """``req`` with only the primaries where ``keep`` (a mask over ``req.primary``)."""
    from dataclasses import replace
    return replace(req, primary=req.primary[keep], need_up=req.need_up[keep],
                   need_down=req.need_down[keep], need_width=req.need_width[keep],
                   tol=req.tol[keep])


def _cubes(sub: Table, cell: int, max_cubes: int):
    """Every cube of ``cell`` in a flat product table: (corners 2^k x G, signs 2^k x G),
    or None (a single cell, or more than ``max_cubes`` cubes).

    A cube takes one other code in every dimension; its 2^k corners can move by +-d
    together without changing any sum (stepping between two children flips the sign,
    to or from the total keeps it)."""
    pos = [int(pp[cell]) for pp in sub.positions]
    shape = sub.shape
    strides = np.cumprod((1,) + tuple(shape[::-1]))[:-1][::-1]
    offsets, sigmas = [], []
    for d, dim in enumerate(sub.dimensions):
        n = shape[d]
        if n < 2:
            continue
        root = int(np.flatnonzero(dim.hierarchy.depth == 0)[0])
        others = np.flatnonzero(np.arange(n) != pos[d])
        offsets.append((others - pos[d]) * int(strides[d]))
        sigmas.append(np.where((pos[d] == root) | (others == root), 1, -1))
    if not offsets or int(np.prod([len(o) for o in offsets])) > max_cubes:
        return None
    k = len(offsets)
    grids = np.meshgrid(*offsets, indexing="ij")
    sgrids = np.meshgrid(*sigmas, indexing="ij")
    off = [g.ravel() for g in grids]
    sig = [g.ravel() for g in sgrids]
    corners = np.empty((2 ** k, len(off[0])), dtype=np.int64)
    signs = np.empty_like(corners)
    for c in range(2 ** k):
        idx = np.full(len(off[0]), cell, dtype=np.int64)
        sg = np.ones(len(off[0]), dtype=np.int64)
        for j in range(k):
            if (c >> j) & 1:
                idx += off[j]
                sg *= sig[j]
        corners[c] = idx
        signs[c] = sg
    return corners, signs


def _cube_room(req, corners, signs):
    """How far each cube lets its first corner move up and down."""
    plus = signs > 0
    up = np.where(plus, req.up[corners], req.down[corners]).min(axis=0)
    down = np.where(plus, req.down[corners], req.up[corners]).min(axis=0)
    return up, down


def cube_protected(sub: Table, req, hidden: np.ndarray, primaries: np.ndarray,
                   max_cubes: int = 20_000) -> np.ndarray:
    """Mask over ``primaries``: some cube with every corner in ``hidden`` meets the
    primary's upper, lower and sliding requirement (a proof of protection against the
    attacker; with single-contributor attackers only cubes without another
    single-contributor corner count).  False means "not proven", not "unprotected".

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> from tabprotect.secondary.repair import Requirements
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2],
    ...                       status=list("SSSSUSSSS"), upl=[0, 0, 0, 0, 1, 0, 0, 0, 0])
    >>> req = Requirements.from_table(t, singleton=False)
    >>> cube_protected(t, req, np.isin(np.arange(9), [4, 5, 7, 8]), np.array([4])).tolist()
    [True]
    """
    hidden = np.asarray(hidden, bool)
    out = np.zeros(len(primaries), bool)
    if not sub.dimensions:
        return out
    for i, s in enumerate(np.asarray(primaries, dtype=np.int64)):
        cubes = _cubes(sub, int(s), max_cubes)
        if cubes is None:
            continue
        corners, signs = cubes
        ok = hidden[corners].all(axis=0)
        if req.singleton.any():
            ok &= ~req.singleton[corners[1:]].any(axis=0)
        if not ok.any():
            continue
        up, down = _cube_room(req, corners[:, ok], signs[:, ok])
        slot = int(np.flatnonzero(req.primary == s)[0])
        need_up, need_down = req.need_up[slot], req.need_down[slot]
        width = req.need_width[slot]
        out[i] = bool(((up >= need_up) & (down >= need_down)
                       & (up + down >= width)).any())
    return out


def cube_pattern(sub: Table, req, cost: np.ndarray, max_cubes: int = 20_000
                 ) -> np.ndarray | None:
    """A pattern that protects every primary by a cube of movable cells, cheapest cube
    first (primaries in index order; deterministic), or None when some primary has no
    such cube.  Milliseconds; a first incumbent, not a good pattern."""
    z = np.isin(sub.status, ("U", "M"))
    movable = np.isin(sub.status, ("S", "U", "M")) & (sub.ub > sub.lb) & (sub.value != 0)
    cost = np.asarray(cost, dtype=float)
    for slot, s in enumerate(req.primary):
        if cube_protected(sub, req, z, np.array([s]), max_cubes)[0]:
            continue
        cubes = _cubes(sub, int(s), max_cubes)
        if cubes is None:
            return None
        corners, signs = cubes
        ok = movable[corners].all(axis=0)
        if req.singleton.any():
            ok &= ~req.singleton[corners[1:]].any(axis=0)
        up, down = _cube_room(req, corners, signs)
        ok &= ((up >= req.need_up[slot]) & (down >= req.need_down[slot])
               & (up + down >= req.need_width[slot]))
        if not ok.any():
            return None
        added = np.where(z[corners], 0.0, cost[corners]).sum(axis=0)
        idx = np.flatnonzero(ok)
        best = idx[np.lexsort((idx, added[idx]))[0]]
        z[corners[:, best]] = True
    return z


class Unreachable(InfeasibleRulesError):
    """A primary's condition cannot be met with the sub-table's movable cells."""


def certified_pattern(sub: Table, req, cost: np.ndarray, *,
                      candidates: np.ndarray | None = None,
                      hidden: np.ndarray | None = None,
                      deadline: float | None = None, prune: bool = True,
                      prune_by: float | None = None) -> tuple[np.ndarray, int]:
    """A protected pattern built one condition at a time, each with its own proof.

    For every primary and direction (largest requirement first) one LP finds the
    cheapest deviation vector ``y`` with ``A y = 0`` that moves the primary by its
    requirement, within the cells' ranges, where moving a suppressed cell is (almost)
    free and moving a candidate costs its suppression cost per unit of range; the cells
    it moves are suppressed.  ``y`` stays a valid attacker move when more cells are
    suppressed later, so it *proves* the condition for the final pattern: no attacker
    LP, no check pass (the attacker here is the outsider; single-contributor attackers
    are left to the caller).  A condition already met by the suppressed cells costs one
    LP and adds nothing.  A sliding requirement is met by asking half of it each way.

    A condition that a move found earlier already meets (scaled within the ranges)
    costs no LP.  ``prune``: a second pass in reverse order, allowed only the cells of
    the first, drops what the conditions no longer need; it stops at ``prune_by``
    (``time.perf_counter()`` value), the first pass's moves then proving the
    conditions it did not reach.

    Returns (pattern mask, number of LPs).  Raises :class:`Unreachable` when some
    condition cannot be met (the sub-table is infeasible with its candidates) and
    ``TimeoutError`` when the first pass passes ``deadline``.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> from tabprotect.secondary.repair import Requirements
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2],
    ...                       status=list("SSSSUSSSS"), upl=[0, 0, 0, 0, 1, 0, 0, 0, 0])
    >>> z, n_lp = certified_pattern(t, Requirements.from_table(t, singleton=False),
    ...                             t.value.copy())
    >>> np.flatnonzero(z).tolist()
    [4, 5, 7, 8]
    """
    from scipy import sparse

    from solvers import LinearProgram
    from solvers import solve as solve_lp
    from tabprotect.secondary.candidates import candidate_cells

    n = sub.n_cells
    cost = np.asarray(cost, dtype=float)
    z = np.isin(sub.status, ("U", "M")) if hidden is None else np.asarray(hidden, bool).copy()
    cand = candidate_cells(sub) if candidates is None else np.asarray(candidates, bool)
    A = sub.relations.tocsr()
    positive = cost[cost > 0]
    free_cost = 1e-6 * (float(np.median(positive)) if len(positive) else 1.0)
    needs = []
    for slot, s in enumerate(req.primary):
        up, down = float(req.need_up[slot]), float(req.need_down[slot])
        width = float(req.need_width[slot])
        if width > up + down:  # half of the sliding requirement each way suffices
            up, down = max(up, 0.5 * width), max(down, 0.5 * width)
        tol = float(req.tol[slot])
        # a little more than asked: the audit's tolerance must not decide
        up = min(up * (1 + 1e-6) + tol, req.up[s]) if up > 0 else 0.0
        down = min(down * (1 + 1e-6) + tol, req.down[s]) if down > 0 else 0.0
        needs.append((max(up, down), int(s), up, down))
    # largest requirement first: its suppressions serve the smaller ones
    needs.sort(key=lambda c: (-c[0], c[1]))
    n_lp = 0

    def cheapest_move(s: int, sign: int, need: float, allowed: np.ndarray):
        """The cheapest deviation moving ``s`` by ``need`` (direction ``sign``) within
        the ranges of the suppressed and ``allowed`` cells; None when there is none."""
        nonlocal n_lp
        free_to_move = z | allowed
        if not free_to_move[s]:
            return None
        cells = np.flatnonzero(free_to_move)  # the others stay at 0: not in the LP
        m = len(cells)
        k = int(np.searchsorted(cells, s))
        hi_up, hi_dn = req.up[cells], req.down[cells]
        if (hi_up if sign > 0 else hi_dn)[k] < need - 1e-12 * max(1.0, need):
            return None
        lo = np.zeros(2 * m)
        hi = np.concatenate([hi_up, hi_dn])
        if sign > 0:
            lo[k], hi[m + k] = need, 0.0
        else:
            lo[m + k], hi[k] = need, 0.0
        # cost of moving a cell by the requirement: its cost (more when its range is
        # smaller than the requirement); a suppressed cell moves (almost) for free
        c_cells = cost[cells]
        with np.errstate(divide="ignore", invalid="ignore"):
            w_up = np.where(hi_up > 0, c_cells * np.maximum(1.0, need / hi_up), 0.0)
            w_dn = np.where(hi_dn > 0, c_cells * np.maximum(1.0, need / hi_dn), 0.0)
        zc = z[cells]
        w = np.concatenate([np.where(zc, free_cost, w_up), np.where(zc, free_cost, w_dn)])
        Ac = A[:, cells]
        rows = np.flatnonzero(np.diff(Ac.indptr) > 0)  # every relation touching them
        Ac = Ac[rows]
        lp = LinearProgram(c=w, A=sparse.hstack([Ac, -Ac]).tocsr(),
                           row_lower=np.zeros(len(rows)), row_upper=np.zeros(len(rows)),
                           col_lower=lo, col_upper=hi)
        res = solve_lp(lp, threads=1)
        n_lp += 1
        if res.status == "infeasible":
            return None
        if res.status != "optimal":
            raise RuntimeError(f"certified pattern LP ended with status {res.status}")
        y = np.zeros(n)
        y[cells] = res.x[:m] - res.x[m:]
        return y

    # the moves found so far (valid for the pattern: their cells are suppressed), each
    # with how far it can be scaled up or down within the cells' ranges; a later
    # condition that one of them already meets costs no LP
    moves: list[tuple[np.ndarray, np.ndarray, float, float]] = []
    by_cell: dict[int, list[int]] = {}

    def remember(y: np.ndarray, need: float) -> int:
        support = np.flatnonzero(np.abs(y) > 1e-9 * max(1.0, need))
        vals = y[support]
        with np.errstate(divide="ignore", invalid="ignore"):
            fwd = np.where(vals > 0, req.up[support] / vals, req.down[support] / -vals)
            bwd = np.where(vals > 0, req.down[support] / vals, req.up[support] / -vals)
        # (scaled by at most 1,000: the dropped tiny entries stay negligible)
        moves.append((support, vals, min(float(fwd.min()), 1e3), min(float(bwd.min()), 1e3)))
        for c in support.tolist():
            by_cell.setdefault(c, []).append(len(moves) - 1)
        return len(moves) - 1

    def met(s: int, sign: int, need: float) -> int | None:
        """A move found so far that meets the condition (scaled), or None."""
        for k in by_cell.get(s, ()):
            support, vals, fwd, bwd = moves[k]
            v = float(vals[np.searchsorted(support, s)]) * sign
            if need <= (v * fwd if v > 0 else -v * bwd) * (1 - 1e-9):
                return k
        return None

    def certify(s: int, up: float, down: float, allowed: np.ndarray,
                proof: dict | None = None) -> None:
        """Suppress the cells of a move of ``s`` up by ``up`` and one down by ``down``
        (``proof``: records which move proves each direction)."""
        for sign, need in ((1, up), (-1, down)):
            if need <= 0:
                continue
            k = met(s, sign, need)
            if k is None:
                y = cheapest_move(s, sign, need, allowed)
                if y is None:
                    raise Unreachable(f"primary {s} cannot move by its requirement")
                z[np.abs(y) > 1e-9 * max(1.0, need)] = True
                k = remember(y, need)
            if proof is not None:
                proof[(s, sign)] = k

    start = z.copy()
    proofs: dict = {}
    for _, s, up, down in needs:
        if deadline is not None and time.perf_counter() > deadline:
            raise TimeoutError("certified pattern: out of time")
        certify(s, up, down, cand, proofs)
    if prune and (z & ~start).any():
        # second pass from the start, allowed only the first pass's cells, in reverse
        # order: the conditions that came first now find the cells later ones brought
        # in, and what no condition needs any more is dropped (a cheaper subset)
        first_pass = z & ~start
        first_moves = list(moves)
        z[:] = start
        moves.clear()  # their cells may not come back
        by_cell.clear()
        order = needs[::-1]
        for i, (_, s, up, down) in enumerate(order):
            if prune_by is not None and time.perf_counter() > prune_by:
                # out of time: the first pass's moves prove the conditions left
                for _, s2, _, _ in order[i:]:
                    for sign in (1, -1):
                        if (s2, sign) in proofs:
                            z[first_moves[proofs[(s2, sign)]][0]] = True
                break
            certify(s, up, down, first_pass)
    return z, n_lp


def proof_levels(sub: Table, hidden: np.ndarray, singleton: bool = False
                 ) -> tuple[np.ndarray, np.ndarray] | None:
    """How far each hidden cell of a solved sub-table must be able to move up and down.

    For every primary of the sub-table (status ``U``: its own and the carried ones) and
    every direction it must move, one LP finds the smallest deviation (least total
    movement, L1) with ``A y = 0`` within the hidden cells' ranges that moves the primary
    by its requirement: the attacker's move that proves the requirement.  A hidden cell's
    level up (down) is the largest upward (downward) step it takes in any of these
    proofs.  A carried secondary given these levels in the other sub-tables holding it
    lets every proof of this sub-table extend to the whole table, and it asks no more
    of them: a rectangle that protects a primary needing 1,000 moves its corners by
    1,000, not by the largest requirement seen in the sub-table.

    Returns ``(up, down)`` over the sub-table's cells, or None when some primary has no
    such move (the pattern does not protect it here; the caller falls back to the
    sub-table's median requirement and the full-table audit has the last word).

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2],
    ...                       status=list("SSSSUSSSS"), upl=[0, 0, 0, 0, 1, 0, 0, 0, 0],
    ...                       lpl=[0, 0, 0, 0, 2, 0, 0, 0, 0])
    >>> up, down = proof_levels(t, np.isin(np.arange(9), [4, 5, 7, 8]))
    >>> up[[4, 5, 7, 8]].tolist(), down[[4, 5, 7, 8]].tolist()
    ([1.0, 2.0, 2.0, 1.0], [2.0, 1.0, 1.0, 2.0])
    """
    from scipy import sparse

    from solvers import LinearProgram
    from solvers import solve as solve_lp
    from tabprotect.secondary.repair import Requirements

    req = Requirements.from_table(sub, singleton=singleton)
    hidden = np.asarray(hidden, bool)
    cells = np.flatnonzero(hidden)
    m = len(cells)
    level_up = np.zeros(sub.n_cells)
    level_down = np.zeros(sub.n_cells)
    A = sub.relations.tocsr()[:, cells]
    rows = np.flatnonzero(np.diff(A.indptr) > 0)
    A = A[rows]
    M = sparse.hstack([A, -A]).tocsr()
    hi_both = np.concatenate([req.up[cells], req.down[cells]])
    for slot, s in enumerate(req.primary):
        up, down = float(req.need_up[slot]), float(req.need_down[slot])
        width = float(req.need_width[slot])
        if width > up + down:  # half of the sliding requirement each way suffices
            up, down = max(up, 0.5 * width), max(down, 0.5 * width)
        k = int(np.searchsorted(cells, s))
        if k >= m or cells[k] != s:
            return None
        for sign, need in ((1, up), (-1, down)):
            if need <= 0:
                continue
            lo = np.zeros(2 * m)
            hi = hi_both.copy()
            own = k if sign > 0 else m + k
            if hi[own] < need * (1 - 1e-9):
                return None
            lo[own] = need
            hi[m + k if sign > 0 else k] = 0.0
            lp = LinearProgram(c=np.ones(2 * m), A=M, row_lower=np.zeros(len(rows)),
                               row_upper=np.zeros(len(rows)), col_lower=lo, col_upper=hi)
            res = solve_lp(lp, threads=1)
            if res.status != "optimal" or res.x is None:
                return None
            level_up[cells] = np.maximum(level_up[cells], res.x[:m])
            level_down[cells] = np.maximum(level_down[cells], res.x[m:])
    return level_up, level_down


def optimal_subtable_solver(singleton: bool = True, mip_gap: float | None = None,
                            seed: bool = False,
                            heuristic_size: int | None = HEURISTIC_SIZE) -> SubtableSolver:
    """The default sub-table solver: :func:`tabprotect.secondary.optimal.optimal`
    (``seed``: started from :func:`cube_pattern` when there is one); from
    ``heuristic_size`` primaries x cells :func:`certified_pattern` instead.

    Raises :class:`~tabprotect.errors.InfeasibleRulesError` when the sub-table's primaries
    cannot be protected with its ``P`` cells published.
    """
    return partial(_optimal_solve, singleton=singleton, mip_gap=mip_gap, seed=seed,
                   heuristic_size=heuristic_size)


def _unprotected(sub: Table, singleton: bool, deadline: float | None = None
                 ) -> np.ndarray | None:
    """The sub-table's primaries its suppressed cells leave unprotected (empty: no MILP
    needed).  Cubes prove most protected primaries; attacker LPs judge the rest.  None
    when ``deadline`` (a ``time.perf_counter()`` value) stopped the LPs."""
    from tabprotect.secondary.repair import AttackerOracle, Requirements

    req = Requirements.from_table(sub, singleton=singleton)
    hidden = np.isin(sub.status, ("U", "M"))
    todo = req.primary[~cube_protected(sub, req, hidden, req.primary)]
    if len(todo) == 0:
        return todo
    chk = AttackerOracle(sub, req).check(hidden, cuts=False, primaries=todo,
                                         deadline=deadline)
    if not chk.complete:
        return None
    return np.unique(np.asarray([s for s, _, _ in chk.violated], dtype=np.int64))


@dataclass
class _Job:
    """One sub-table to solve: strict (margins published) and, if that is infeasible,
    loose (margins allowed at a penalty)."""

    key: tuple
    strict: Table
    loose: Table
    cost: np.ndarray
    loose_cost: np.ndarray
    time_limit: float | None
    #: wall-clock time (``time.time()``, shared by the worker processes) after which
    #: the job is not started: the sub-table is left to the full-table audit and repair
    deadline: float | None = None
    singleton: bool = False
    #: wall-clock time after which the job gets the fast solve (default solver only)
    fast_after: float | None = None
    #: compute :func:`proof_levels` of the solved sub-table (``carried_level="proof"``)
    proof: bool = False


@dataclass
class _Result:
    key: tuple
    status: np.ndarray | None  # new local status; None: unsolved
    retried: bool = False      # the strict sub-table was infeasible: margins allowed
    skipped: bool = False      # already protected: no MILP
    late: bool = False         # not started: the global deadline had passed
    fast: bool = False         # solved by the fast solve (the time plan's tail)
    seconds: float = 0.0
    #: :func:`proof_levels` of the solved pattern (up, down), when asked and found
    levels: tuple[np.ndarray, np.ndarray] | None = None


def _run_job(job: _Job, solve: SubtableSolver, time_limit: float | None = None) -> _Result:
    """Check, then solve one sub-table (in a worker process or in the caller).

    ``time_limit``: the solve's share (default ``job.time_limit``)."""
    t0 = time.perf_counter()

    def done(**kw) -> _Result:
        return _Result(job.key, seconds=time.perf_counter() - t0, **kw)

    if job.deadline is not None and time.time() >= job.deadline:
        return done(status=None, late=True)
    local_deadline = None if job.deadline is None else \
        time.perf_counter() + (job.deadline - time.time())
    # (in the worker: the attacker-LP check is as parallel as the solves)
    short = _unprotected(job.strict, job.singleton, local_deadline)
    if short is None:   # the global deadline stopped the check
        return done(status=None, late=True)
    if len(short) == 0:
        return done(status=None, skipped=True)
    default = isinstance(solve, partial) and solve.func is _optimal_solve
    fast = default and job.fast_after is not None and time.time() >= job.fast_after
    if default:
        # the feasibility check (and the heuristic) needs only these; the heuristic
        # stops at the global deadline
        solve = partial(solve, short=short, deadline=local_deadline)
        if fast:
            # the tail of the time plan: the certified heuristic's first pass, on any
            # sub-table (a few LPs for the few short primaries of a re-solve)
            solve = partial(solve, heuristic_size=0, prune=False)
    share = job.time_limit if time_limit is None else time_limit

    def limit() -> float | None:
        if job.deadline is None:
            return share
        left = max(MIN_SUBTABLE_SECONDS, job.deadline - time.time())
        return left if share is None else min(share, left)

    def solved(status: np.ndarray, **kw) -> _Result:
        levels = None
        n_hidden = int(np.isin(job.loose.status, ("U", "M")).sum())
        if job.proof and n_hidden * len(status) <= PROOF_LEVEL_MAX_WORK:
            # the loose sub-table: its ranges do not depend on which margins were open
            levels = proof_levels(job.loose, np.isin(status, ("U", "M")), job.singleton)
        return done(status=status, levels=levels, **kw)

    try:
        return solved(solve(job.strict, job.cost, limit()), fast=fast)
    except InfeasibleRulesError:
        pass
    except TimeoutError:  # the heuristic reached the global deadline
        return done(status=None, late=True)
    try:
        return solved(solve(job.loose, job.loose_cost, limit()), retried=True, fast=fast)
    except InfeasibleRulesError:
        return done(status=None, retried=True)
    except TimeoutError:
        return done(status=None, retried=True, late=True)


def _run_bin(args: tuple) -> list[_Result]:
    """One worker's jobs of a wave, one after the other: ``(jobs, solve, wave_end)``.

    With ``wave_end`` (``time.time()`` value) every job gets an equal part of the time
    its bin has left (at most its planned share): a job that finishes early hands its
    time on, and on a loaded machine the last jobs still get their turn before the wave
    should end."""
    jobs, solve, wave_end = args
    out = []
    for i, job in enumerate(jobs):
        limit = job.time_limit
        if wave_end is not None:
            part = max(MIN_SUBTABLE_SECONDS, (wave_end - time.time()) / (len(jobs) - i))
            limit = part if limit is None else min(limit, part)
        out.append(_run_job(job, solve, limit))
    return out


def _deal(weights: list[float], workers: int) -> list[list[int]]:
    """Job indices dealt to ``workers`` bins, heaviest first to the least loaded bin
    (deterministic); each bin in index order."""
    bins: list[list[int]] = [[] for _ in range(max(1, workers))]
    load = [0.0] * len(bins)
    for i in sorted(range(len(weights)), key=lambda i: (-float(weights[i]), i)):
        b = min(range(len(bins)), key=lambda b: (load[b], b))
        bins[b].append(i)
        load[b] += float(weights[i])
    return [sorted(b) for b in bins if b]


@dataclass(frozen=True)
class ModularOptions:
    """Settings of the modular method (see :func:`modular`)."""

    mip_gap: float | None = field(default=None, metadata={
        "why": "relative gap at which each sub-table's optimal solve may stop"})
    solver: Callable | None = field(default=None, metadata={
        "why": "a custom sub-table solver (default: the optimal method with the "
               "certified heuristic on large sub-tables)"})
    subtable_time_limit: float | None = field(default=60.0, metadata={
        "why": "seconds per sub-table solve, so one hard sub-table cannot take the "
               "whole budget"})
    max_passes: int = field(default=20, metadata={
        "why": "times one sub-table may be solved again (bounds the backtracking)"})
    carried_level: Literal["proof", "median", "max"] = field(default="proof", metadata={
        "why": "level carried by a secondary into its other sub-tables: proof (its move in "
               "the proof of its sub-table) asks the sub-tables below for least"})
    workers: int | None = field(default=None, metadata={
        "why": "processes for the sub-table solves (None: 2 from 5,000 cells)"})
    cube_start: bool = field(default=False, metadata={
        "why": "start each sub-table's optimal solve from a cube pattern, so a stopped "
               "solve never overruns (off: the repair's start is cheaper)"})
    heuristic_size: int | None = field(default=HEURISTIC_SIZE, metadata={
        "why": "primaries x cells from which a sub-table gets the certified heuristic "
               "instead of the optimal method (None: never)"})


@register_method("modular", options=ModularOptions, needs_product_structure=True,
                 handles_singletons=True, proves_optimality=False)
def modular(table: Table, cost: np.ndarray, *, time_limit: float | None = None,
            progress: Callable[[str, float], None] | None = None, singleton: bool = True,
            mip_gap: float | None = None, solver: SubtableSolver | None = None,
            subtable_time_limit: float | None = 60.0, max_passes: int = 20,
            carried_level: str = "proof", workers: int | None = None,
            cube_start: bool = False, heuristic_size: int | None = HEURISTIC_SIZE
            ) -> MethodOutcome:
    """HiTaS: every sub-table solved optimally, top-down, with backtracking.

    Sub-tables of one level share no cell (a cell lies in sub-tables of different
    levels only), so the queued sub-tables of the smallest level are solved as one wave
    -- in parallel processes when ``workers > 1`` -- and their results applied in key
    order (deterministic whatever the number of workers).

    Parameters
    ----------
    solver : sub-table solver (default :func:`optimal_subtable_solver`); a custom solver
        must be picklable to run in worker processes
    subtable_time_limit : seconds per sub-table solve
    max_passes : how many times one sub-table may be solved (backtracking bound)
    carried_level : protection level of a secondary carried into other sub-tables:
        ``"proof"`` (default): how far the cell moves, up and down, in the smallest
        attacker moves that prove the requirements of the sub-table that chose it
        (:func:`proof_levels`; sub-tables of more than :data:`PROOF_LEVEL_MAX_WORK`
        primaries x cells carry the median); ``"median"`` or ``"max"``: of the
        requirements of the
        primaries of that sub-table.  Capped by the cell's own range.  A sub-table level
        (median, max) gives a secondary serving a small primary the requirement of a
        large one, and the sub-tables below suppress for it: on the bundled demo table
        (638 cells, 101 primaries) 456 secondaries with the median against 266 with
        proof levels, both passing the audit
    workers : processes for the sub-table solves (default: 2 for tables of 5,000 cells
        or more, else 1)
    cube_start : default solver only: the optimal method starts from a cube pattern
        that protects every primary of the sub-table (:func:`cube_pattern`), so a solve
        stopped by its time share always has a pattern of its own and never overruns.
        Off by default: the start replaces the optimal method's own first incumbent
        (greedy repair and pruning), which is 2-3x cheaper at short time shares
        (100k-3d sub-tables, 1 s: 54,711 vs 25,229 and 71,583 vs 48,241)
    heuristic_size : default solver only: sub-tables with at least this many primaries
        x cells (and :data:`HEURISTIC_MIN_PRIMARIES` primaries; 0: every sub-table) get
        :func:`certified_pattern` (one LP per primary and direction, each a proof; then
        a reverse pass that drops what is not needed) instead of the optimal method;
        None: the optimal method everywhere.  The default (20,000) sends the
        1,050-cell, 150-primary 4-D sub-tables of 100k-4d to the heuristic and keeps
        the 180-cell sub-tables of 100k-3d optimal
    singleton, mip_gap : passed to the default solver

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2],
    ...                       status=list("SSSSUSSSS"), upl=[0, 0, 0, 0, 1, 0, 0, 0, 0])
    >>> out = modular(t, t.value.copy(), singleton=False)
    >>> sorted(np.flatnonzero(out.status == "M").tolist())
    [5, 7, 8]
    """
    if not table.dimensions:
        raise InputError("modular needs a product table (dimensions with hierarchies); use "
                         "method 'optimal' or 'gauss' for a general table")
    if carried_level not in ("proof", "median", "max"):
        raise InputError(f"modular: carried_level must be 'proof', 'median' or 'max', not "
                         f"{carried_level!r}")
    start = time.perf_counter()
    solve = solver or optimal_subtable_solver(singleton=singleton, mip_gap=mip_gap,
                                              seed=cube_start,
                                              heuristic_size=heuristic_size)
    if workers is None:
        workers = 2 if table.n_cells >= 5000 else 1
    if workers > 1:
        try:
            pickle.dumps(solve)
        except Exception:  # a closure or lambda cannot reach a worker process
            workers = 1
    split = Split(table)
    cost = np.asarray(cost, dtype=float)
    status = table.status.copy()
    need_up, need_down = requirements(table)
    spl = np.where(status == "U", table.spl, 0.0)
    room_up = table.ub - table.value
    room_down = table.value - table.lb

    # work list of sub-tables, smallest level first; every sub-table holding a primary
    heap: list[tuple[int, tuple]] = []
    queued: set[tuple] = set()

    def push(key: tuple) -> None:
        if key not in queued:
            queued.add(key)
            heapq.heappush(heap, (split.level(key), key))

    for p in np.flatnonzero(status == "U"):
        for key in split.subtables_of_cell(int(p)):
            push(key)
    passes: dict[tuple, int] = {}
    stats = {"subtables": len(split), "solves": 0, "skipped": 0, "backtracks": 0,
             "margin_retries": 0, "unsolved": 0, "late": 0, "waves": 0, "workers": workers,
             "solve_seconds": 0.0, "max_solve_seconds": 0.0, "wave_seconds": [],
             "proof_levels": 0}
    # for the time plan: the level of every sub-table and which cells it holds
    sub_level = np.zeros(1, dtype=np.int64)
    for g in split.dims:
        sub_level = np.add.outer(sub_level, g.parent_depth).ravel()
    member_t = split.membership().T.tocsr().astype(np.int32) if time_limit is not None else None
    # the method's budget (protect() keeps its audit's share back); its last FAST_TAIL
    # part gets the fast solve only
    budget = time_limit
    stats["budget_seconds"] = None if budget is None else round(budget, 1)
    stats["fast"] = 0
    to_wall = time.time() - time.perf_counter()
    deadline = None if budget is None else to_wall + start + budget
    fast_after = None if budget is None else to_wall + start + budget * (1.0 - FAST_TAIL)
    timed_out = False
    while heap:
        if budget is not None and time.perf_counter() - start > budget:
            timed_out = True
            break
        wave_start = time.perf_counter()
        # one wave: every queued sub-table of the smallest level (disjoint)
        level = heap[0][0]
        wave = []
        while heap and heap[0][0] == level:
            _, key = heapq.heappop(heap)
            queued.discard(key)
            wave.append(key)
        stats["waves"] += 1
        tl = subtable_time_limit
        if budget is not None:
            # the time left, shared among the sub-tables still to come: this wave's and
            # every lower-level sub-table that already holds a suppressed cell
            left = budget - (time.perf_counter() - start)
            holds = member_t @ np.isin(status, ("U", "M")).astype(np.int32)
            later = int(((holds > 0) & (sub_level > level)).sum())
            share = PLANNED_SHARE * left * max(1, workers) / max(1, len(wave) + later)
            share = max(MIN_SUBTABLE_SECONDS, share)
            tl = share if subtable_time_limit is None else min(share, subtable_time_limit)
        jobs: list[_Job] = []
        context = {}
        for key in sorted(wave):
            passes[key] = passes.get(key, 0) + 1
            if passes[key] > max_passes:
                stats["unsolved"] += 1
                continue
            sub = split.subtable(key)
            cells = sub.cells
            local = status[cells].copy()
            hidden = np.isin(local, ("U", "M"))
            if not hidden.any():
                continue
            local[hidden] = "U"  # everything suppressed so far must be protected here
            margin_open = sub.margin & ~hidden & (local == "S")
            strict = local.copy()
            strict[margin_open] = "P"
            levels = dict(upl=need_up[cells], lpl=need_down[cells], spl=spl[cells])
            small = subtable_table(table, sub, status=strict, **levels)
            loose = subtable_table(table, sub, status=local, **levels)
            c2 = np.where(sub.margin, _MARGIN_PENALTY * cost[cells], cost[cells])
            jobs.append(_Job(key, small, loose, cost[cells], c2, tl, deadline, singleton,
                             fast_after, proof=carried_level == "proof"))
            context[key] = (sub, hidden)
        # each worker gets its share of the wave in one message.  Weight: cells x
        # suppressed cells, a rough guide to a solve's time
        weights = [float(j.strict.n_cells * (1 + int((j.strict.status == "U").sum())))
                   for j in jobs]
        bins = _deal(weights, workers if len(jobs) > 1 else 1)
        wave_end = None
        if budget is not None and tl is not None:
            # the wave should end when its longest bin has had its planned shares
            # (never past the deadline); the bins hand unused time on to later jobs
            wave_end = min(deadline, time.time() + tl * max(len(b) for b in bins)) \
                if bins else None
        tasks = [([jobs[i] for i in b], solve, wave_end) for b in bins]
        if len(tasks) > 1:
            # worker processes that never re-import the caller's script (spawn would)
            # and never inherit HiGHS' threads (fork would hang)
            per_bin = process_map(_run_bin, tasks, len(tasks))
        else:
            per_bin = [_run_bin(t) for t in tasks]
        results = sorted((r for rs in per_bin for r in rs), key=lambda r: r.key)
        for res in results:  # key order: deterministic
            key = res.key
            sub, hidden = context[key]
            cells = sub.cells
            stats["skipped"] += int(res.skipped)  # already protected: no MILP
            stats["late"] += int(res.late)
            stats["fast"] += int(res.fast)
            stats["solves"] += int(not (res.skipped or res.late))
            stats["margin_retries"] += int(res.retried)
            stats["solve_seconds"] += res.seconds
            stats["max_solve_seconds"] = max(stats["max_solve_seconds"], res.seconds)
            new_local = res.status
            if new_local is None:
                if not res.skipped:
                    stats["unsolved"] += 1  # left to the full-table audit and repair
                continue
            added = np.flatnonzero((new_local == "M") & ~hidden)
            if len(added) == 0:
                continue
            # carried protection level: what the sub-table's suppressed cells ask for
            # (the sub-table's own primaries decide; carried levels would snowball)
            own = (table.status[cells] == "U")
            ask = own if own.any() else hidden
            if carried_level == "max":
                level_c = max(float(need_up[cells][ask].max(initial=0.0)),
                              float(need_down[cells][ask].max(initial=0.0)))
            else:
                level_c = float(np.median(np.maximum(need_up[cells][ask],
                                                     need_down[cells][ask])))
            stats["proof_levels"] += int(res.levels is not None)
            for j in added:
                s = int(cells[j])
                status[s] = "M"
                if res.levels is not None:
                    lift_up, lift_down = res.levels[0][j], res.levels[1][j]
                else:
                    lift_up = lift_down = level_c
                need_up[s] = max(need_up[s], min(lift_up, room_up[s]))
                need_down[s] = max(need_down[s], min(lift_down, room_down[s]))
                if sub.margin[j]:
                    stats["backtracks"] += 1
                # every other sub-table holding s must now protect it (higher ones:
                # backtrack)
                for other in split.subtables_of_cell(s):
                    if other != key:
                        push(other)
        stats["wave_seconds"].append((int(level), len(jobs), round(tl or 0.0, 2),
                                      round(time.perf_counter() - wave_start, 2)))
        if progress is not None:
            progress("modular", min(0.99, stats["solves"] / max(1, len(split))))
    if progress is not None:
        progress("modular", 1.0)
    stats["solve_seconds"] = round(stats["solve_seconds"], 3)
    stats["max_solve_seconds"] = round(stats["max_solve_seconds"], 3)
    stats["secondaries"] = int((status == "M").sum())
    stats["seconds"] = round(time.perf_counter() - start, 3)
    return MethodOutcome(status=status, solver_status="time_limit" if timed_out else "heuristic",
                         details=stats)
