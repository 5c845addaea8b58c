"""Hypercube (GHMiter) secondary suppression: no LP, local, fast.

In a non-hierarchical sub-table (see :mod:`tabprotect.secondary.subtables`) a *hypercube*
with a corner at cell ``p`` picks, in every dimension ``d``, another code ``j_d`` of the same
group; its ``2^k`` corners are the cells taking ``p``'s code or ``j_d`` in each dimension.
Adding ``+t`` and ``-t`` to the corners with alternating signs keeps every relation of the
sub-table (a step between two children flips the sign; a step between a child and the
group's parent keeps it), so when every corner is suppressed the intruder cannot tell the
true table from the moved one.  The *simple interval bound* of the cube: ``p`` can move up
by ``t_up = min(ub - x over + corners, x - lb over - corners)`` and down by ``t_down``
(the roles swapped).

For each suppressed cell and each sub-table it belongs to, the method chooses, among the
cubes with no ``P``, empty or zero corner whose bound meets the cell's requirement
(``t_up >= UPL``, ``t_down >= LPL``, ``t_up + t_down >= SPL``; the protection levels come
from the primary rules -- the sliding protection ratio of the dominance/p% rule or the
frequency range, as tau-Argus does), one of least cost, where corners already suppressed
cost nothing.  The corners become secondary suppressions with *carried* requirements: a
corner of sign ``s`` must itself be able to move by what ``p`` needs, in every other
sub-table it belongs to (that is how a move propagates through the hierarchy).  The work
list is processed until nothing changes (sub-tables iterated until stable).

Single-contributor cells (``freq == 1``; their contributor knows them) are made corners of
at least two cubes that differ in every dimension, so no line through them has only one
other suppressed cell.

The search gives the answer of evaluating every cube, with far less work: each cube is
first screened with its corners one or two steps from ``p`` (small tables broadcast over
the grid of cubes: a lower bound of its cost, and whether one of those corners already
lacks the room), then only the cubes of least bound and those whose bound is within the
least cost found are evaluated in full (costs must be >= 0; else every cube is).  The
next events of the work list are searched together, vectorised, and their answers kept
while no cell of their sub-table gets suppressed and their needs stay the same (a cube
search reads nothing else), so the pattern is the one of the one-by-one search.

The bound is exact for the cube's own sub-table; across a hierarchy the requirement
propagation is a heuristic (like GHMiter), so :func:`tabprotect.secondary.protect`'s audit
and repair have the last word.  On a non-hierarchical table every primary's cube is a
feasible move of the whole table, so the pattern passes the LP audit by construction.
"""
from __future__ import annotations

import itertools
import math
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.table import Table
from tabprotect.requirements import protection_requirements
from tabprotect.secondary.base import MethodOutcome, register_method
from tabprotect.secondary.subtables import Split

_REL_TOL = 1e-9
_ZERO = np.zeros(1, dtype=np.int64)
_FALSE = np.zeros(1, dtype=bool)
# per event, the cubes of least bound evaluated in full first (their least cost then
# bounds which other cubes need evaluating)
_FIRST_CUBES = 8
# events searched together (the next ones in the work list), and how far to look
_BATCH = 16
_LOOKAHEAD = 64


def requirements(table: Table) -> tuple[np.ndarray, np.ndarray]:
    """Per cell, how far a primary must be able to move up and down (0 elsewhere).

    ``UPL`` and ``LPL`` capped by the a-priori bounds; a sliding level (or the
    no-exact-disclosure width, :mod:`tabprotect.requirements`) larger than ``UPL + LPL``
    raises the upward amount.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> t = Table.from_arrays({"x": Hierarchy.flat(["a", "b"], total="T")}, [5, 2, 3],
    ...                       status=["S", "U", "S"], upl=[0, 1, 0], lpl=[0, 4, 0])
    >>> [a.tolist() for a in requirements(t)]
    [[0.0, 1.0, 0.0], [0.0, 2.0, 0.0]]
    """
    return protection_requirements(table).moves(table.n_cells)


class _CubeSearch:
    """The vectorised cube search of one cell in one sub-table."""

    def __init__(self, table: Table, split: Split, cost: np.ndarray, max_candidates: int):
        self.table = table
        self.split = split
        self.cost = cost
        self.value = table.value
        self.room_up = table.ub - table.value
        self.room_down = table.value - table.lb
        scale = np.maximum(1.0, np.abs(table.value))
        # corners that may never be used: forced published, empty, zero, or fixed by bounds
        self.unusable = (np.isin(table.status, ("P", "Z"))
                         | (np.abs(table.value) <= _REL_TOL * scale)
                         | (table.ub - table.lb <= _REL_TOL * scale))
        # the rooms with -inf on unusable cells: a cube with such a corner never qualifies
        # interleaved: entry 2 i is cell i's room up, 2 i + 1 its room down
        self.rooms_usable = np.where(self.unusable[:, None], -np.inf,
                                     np.stack([self.room_up, self.room_down], axis=1)).ravel()
        self.shape = table.shape
        self.strides = split.strides
        self.max_candidates = max_candidates
        self.positions = table.positions
        # per (dimension, group, code): the other codes of the group and the sign of the
        # step to each (the same for every cell with that code)
        self._alternatives: dict = {}
        self._grids: dict = {}
        self._bits: dict = {}
        self._plans: dict = {}
        self._steps: dict = {}
        self._stride_list = [int(s) for s in self.strides]

    def alternatives(self, p: int, key: tuple[int, ...], suppressed: np.ndarray):
        """Per dimension of sub-table ``key`` with at least two codes, ``p``'s other codes.

        Returns (``p``'s code positions, alternative codes per dimension, the sign of the
        step to each, the dimensions), or None as :meth:`candidates` does.
        """
        pos = [int(positions[p]) for positions in self.positions]
        alts, sigmas, dims = [], [], []
        for d, (grp_of, k) in enumerate(zip(self.split.dims, key)):
            cached = self._alternatives.get((d, k, pos[d]))
            if cached is None:
                grp = grp_of.members[k]
                if len(grp) < 2:
                    cached = (None, None)
                else:
                    here = int(np.flatnonzero(grp == pos[d])[0])
                    others = np.flatnonzero(np.arange(len(grp)) != here)
                    # stepping between two children flips the sign; to or from the
                    # parent keeps it
                    cached = (grp[others], np.where((here == 0) | (others == 0), 1, -1))
                self._alternatives[(d, k, pos[d])] = cached
            alt, sigma = cached
            if alt is None:
                continue
            alts.append(alt)
            sigmas.append(sigma)
            dims.append(d)
        if not dims:
            return None
        k = len(dims)
        total = math.prod(len(a) for a in alts)
        if total > self.max_candidates:
            # keep, per dimension, the alternatives whose line neighbour is cheapest
            keep = max(1, int(np.floor(self.max_candidates ** (1.0 / k))))
            for j, d in enumerate(dims):
                if len(alts[j]) <= keep:
                    continue
                nb = p + (alts[j] - pos[d]) * self.strides[d]
                score = np.where(self.unusable[nb], np.inf,
                                 np.where(suppressed[nb], 0.0, self.cost[nb]))
                order = np.lexsort((alts[j], score))[:keep]
                order.sort()
                alts[j] = alts[j][order]
                sigmas[j] = sigmas[j][order]
        return pos, alts, sigmas, dims

    def candidates(self, p: int, key: tuple[int, ...], suppressed: np.ndarray):
        """Every cube of ``p`` in sub-table ``key`` (grid of the other corners' codes).

        Returns (corner cell indices (2^k x G), corner signs (2^k x G), alternative code
        positions per cube (G x k)), or None when the sub-table is a single cell.
        """
        found = self.alternatives(p, key, suppressed)
        if found is None:
            return None
        pos, alts, sigmas, dims = found
        k = len(dims)
        # the grid of alternatives (one per dimension) as index arrays, cached by shape
        lengths = tuple(len(a) for a in alts)
        grid = self._grids.get(lengths)
        if grid is None:
            grid = np.indices(lengths).reshape(k, -1)
            self._grids[lengths] = grid
        # corners = p + bits @ offsets: one small integer product for all 2^k corners
        # (bit j of a corner: it takes the alternative code in dimension j)
        bits = self._bits.get(k)
        if bits is None:
            # float: numpy's integer matmul has no fast kernel; the sums are exact
            bits = np.array(list(itertools.product((0, 1), repeat=k)), dtype=float)
            self._bits[k] = bits
        choice = np.stack([a[g] for a, g in zip(alts, grid)], axis=1)
        offsets = np.stack([(a[g] - pos[d]) * self.strides[d]
                            for a, g, d in zip(alts, grid, dims)]).astype(float)
        flips = np.stack([(s[g] < 0) for s, g in zip(sigmas, grid)]).astype(float)
        corners = p + (bits @ offsets).astype(np.int64)
        signs = 1 - 2 * ((bits @ flips).astype(np.int64) % 2)
        return corners, signs, choice

    def _corner_bits(self, k: int) -> np.ndarray:
        bits = self._bits.get(k)
        if bits is None:
            # float: numpy's integer matmul has no fast kernel; the sums are exact
            bits = np.array(list(itertools.product((0, 1), repeat=k)), dtype=float)
            self._bits[k] = bits
        return bits

    def _steps_of(self, p: int, key: tuple[int, ...], suppressed: np.ndarray):
        """``p``'s alternatives in sub-table ``key`` as (parts, lengths).

        Per dimension with alternatives, ``(steps, flips)``: the cell offset of each
        alternative and whether the step flips the sign; the same alternatives as
        :meth:`alternatives`, None when there are none.
        """
        rest = p
        parts, lengths = [], []
        for d, (stride, k) in enumerate(zip(self._stride_list, key)):
            q, rest = divmod(rest, stride)
            part = self._steps.get((d, k, q))
            if part is None:
                self.alternatives(p, key, suppressed)      # fills the cache for (d, k, q)
                alt, sigma = self._alternatives[(d, k, q)]
                part = (None if alt is None else
                        ((alt - q) * stride, sigma < 0))
                self._steps[(d, k, q)] = part
            if part[0] is not None:
                parts.append(part)
                lengths.append(len(part[0]))
        if not parts:
            return None
        if math.prod(lengths) > self.max_candidates:
            # the alternatives are cut to the cheapest: build them the long way
            pos, alts, sigmas, dims = self.alternatives(p, key, suppressed)
            parts = [((a - pos[d]) * self.strides[d], s < 0)
                     for a, s, d in zip(alts, sigmas, dims)]
            lengths = [len(a) for a in alts]
        return parts, tuple(lengths)

    def _screen_plan(self, lengths: tuple[int, ...]):
        """Index arrays of the screen for a grid of cubes of these lengths (cached).

        The screen looks at the corners one step from ``p`` (subset {e}) and two steps
        from ``p`` (subset {d, e}).  With the dimensions' steps concatenated into one
        vector (plus a 0 at the end), screen entry ``i`` is the cell ``p + steps[A[i]] +
        steps[B[i]]``.  Returns (A, B, per cube (column of the grid, C order) the index
        of its alternative in that vector per dimension, the entries' blocks: per
        dimension e, the blocks of subsets {e} and {d, e} (d < e) as (start, stop, shape
        over the grid's axes)).
        """
        plan = self._plans.get(lengths)
        if plan is not None:
            return plan
        k = len(lengths)
        first = np.concatenate([[0], np.cumsum(lengths)])
        zero = int(first[-1])
        a_parts, b_parts, fold = [], [], []
        at = 0
        for e in range(k):
            n_e = lengths[e]
            a_parts.append(first[e] + np.arange(n_e))
            b_parts.append(np.full(n_e, zero))
            shape = [1] * k
            shape[e] = n_e
            blocks = [(at, at + n_e, tuple(shape))]
            at += n_e
            for d in range(e):
                n_d = lengths[d]
                jd, je = np.indices((n_d, n_e)).reshape(2, -1)
                a_parts.append(first[d] + jd)
                b_parts.append(first[e] + je)
                shape = [1] * k
                shape[d], shape[e] = n_d, n_e
                blocks.append((at, at + n_d * n_e, tuple(shape)))
                at += n_d * n_e
            fold.append(blocks)
        columns = np.indices(lengths).reshape(k, -1) + first[:-1, None]
        plan = (np.concatenate(a_parts), np.concatenate(b_parts), columns, fold)
        self._plans[lengths] = plan
        return plan

    def best_cube(self, p: int, key: tuple[int, ...], suppressed: np.ndarray,
                  free_cost: np.ndarray, need: tuple[float, float, float], tol: float):
        """The cube the exhaustive search picks, found by evaluating few cubes.

        Same answer as evaluating every cube of :meth:`candidates` (least new cost among
        the usable cubes meeting ``need = (up, down, width)``, then least new value, then
        first in grid order), bit for bit: every cube is first screened with its corners
        that differ from ``p`` in one or two dimensions (a lower bound of its new cost
        and upper bounds of its room), and only the survivors are evaluated in full,
        least bound first, until no other cube's bound is within the best cost found.
        ``free_cost`` is ``cost`` with 0 on suppressed cells (costs must be >= 0).

        Returns (corners, signs) of the cube, None when the sub-table has no other cell,
        or False when no usable cube meets the need (the caller then searches them all).
        """
        return self.best_cubes([(p, key, need, tol)], suppressed, free_cost)[0]

    def best_cubes(self, events, suppressed: np.ndarray, free_cost: np.ndarray) -> list:
        """:meth:`best_cube` of several events ``(p, key, need, tol)`` at once.

        The events are searched against the same state (``suppressed``, ``free_cost``),
        the screen and the first full evaluations vectorised over the events with the
        same grid shape; each answer is the one :meth:`best_cube` gives in that state.
        """
        results: list = [None] * len(events)
        groups: dict = {}
        for i, (p, key, need, tol) in enumerate(events):
            found = self._steps_of(p, key, suppressed)
            if found is not None:
                parts, lengths = found
                groups.setdefault(lengths, []).append((i, p, parts, need, tol))
        for lengths, members in groups.items():
            self._best_in_group(lengths, members, suppressed, free_cost, results)
        return results

    def _best_in_group(self, lengths, members, suppressed, free_cost, results) -> None:
        pick_a, pick_b, columns, fold = self._screen_plan(lengths)
        n = len(members)
        size = math.prod(lengths)
        p = np.array([m[1] for m in members], dtype=np.int64)
        # per event, the steps of all dimensions one after the other, then a 0
        steps = np.concatenate([x for m in members for x in [s for s, _ in m[2]] + [_ZERO]])
        steps = steps.reshape(n, -1)
        flip = np.concatenate([x for m in members for x in [f for _, f in m[2]] + [_FALSE]])
        flip = flip.reshape(n, -1)
        need = np.array([m[3] for m in members], dtype=float)
        tol = np.array([m[4] for m in members], dtype=float)
        lo = need - tol[:, None]
        # screen (see best_cube): per entry (a corner one or two steps from p) its free
        # cost, or +inf when its room alone falls short of the need (then so does every
        # cube with that corner); blocks of entries broadcast over each event's grid
        cells = p[:, None] + steps[:, pick_a] + steps[:, pick_b]
        up_at = 2 * cells + (flip[:, pick_a] ^ flip[:, pick_b])
        rooms = self.rooms_usable
        room_up, room_down = rooms[up_at], rooms[up_at ^ 1]
        short = ((room_up < lo[:, :1]) | (room_down < lo[:, 1:2])
                 | (room_up + room_down < lo[:, 2:]))
        entry = np.where(short, np.inf, free_cost[cells])
        bound = None
        for blocks in fold:
            part = None
            for start, stop, shape in blocks:
                block = entry[:, start:stop].reshape((n,) + shape)
                part = block if part is None else part + block
            bound = part if bound is None else bound + part
        # p's own room (corner 0) decides for all of its cubes
        up_p, down_p = self.room_up[p], self.room_down[p]
        p_short = (up_p < lo[:, 0]) | (down_p < lo[:, 1]) | (up_p + down_p < lo[:, 2])
        bound = bound.reshape(n, size)
        if p_short.any():
            bound = np.where(p_short[:, None], np.inf, bound)
        maybe = bound < np.inf
        # first, per event, the cubes of least bound in full ...
        masked = bound.copy()
        rows = np.arange(n)
        first = []
        for _ in range(min(_FIRST_CUBES, size)):
            col = masked.argmin(axis=1)
            first.append(col)
            masked[rows, col] = np.inf
        first = np.stack(first, axis=1)
        valid = np.take_along_axis(maybe, first, axis=1)
        ev1 = np.repeat(rows, first.shape[1])[valid.ravel()]
        col1 = first[valid]
        cost1, ok1, corners1, neg1 = self._evaluate_at(ev1, col1, p, steps, flip, columns,
                                                       lo, free_cost)
        best = np.full(n, np.inf)
        np.minimum.at(best, ev1[ok1], cost1[ok1])
        # ... then every other cube whose bound is within the least cost found (all of
        # them when none was good enough): a cube costing exactly that cannot be left out
        limit = np.where(np.isfinite(best), best * (1.0 + 1e-9), np.finfo(float).max)
        rest = bound <= limit[:, None]
        np.put_along_axis(rest, first, False, axis=1)
        ev2, col2 = np.nonzero(rest)
        if len(ev2):
            cost2, ok2, corners2, neg2 = self._evaluate_at(ev2, col2, p, steps, flip,
                                                           columns, lo, free_cost)
            ev = np.concatenate([ev1[ok1], ev2[ok2]])
            col = np.concatenate([col1[ok1], col2[ok2]])
            cost = np.concatenate([cost1[ok1], cost2[ok2]])
            corners = np.concatenate([corners1[:, ok1], corners2[:, ok2]], axis=1)
            neg = np.concatenate([neg1[:, ok1], neg2[:, ok2]], axis=1)
        else:
            ev, col, cost = ev1[ok1], col1[ok1], cost1[ok1]
            corners, neg = corners1[:, ok1], neg1[:, ok1]
        # per event the least (cost, value, grid order); value only among cost ties
        low = np.full(n, np.inf)
        np.minimum.at(low, ev, cost)
        tied = np.flatnonzero(cost == low[ev])
        ev, col, corners, neg = ev[tied], col[tied], corners[:, tied], neg[:, tied]
        sub = np.ascontiguousarray(corners)
        new_value = np.where(suppressed[sub], 0.0, np.abs(self.value[sub])).sum(axis=0)
        order = np.lexsort((col, new_value, ev))
        ev_sorted = ev[order]
        head = order[np.flatnonzero(np.r_[True, ev_sorted[1:] != ev_sorted[:-1]])] \
            if len(order) else order
        for j in range(n):
            results[members[j][0]] = False
        for b in head.tolist():
            results[members[ev[b]][0]] = (corners[:, b], 1 - 2 * neg[:, b])

    def _evaluate_at(self, ev, cols, p, steps, flip, columns, lo, free_cost):
        """Full evaluation of the cubes at grid columns ``cols`` of events ``ev``: (new
        cost, meets the need, corners, sign flips).  Same arithmetic as :meth:`evaluate`
        (a corner on an unusable cell has room -inf; the cost adds the corners in order)."""
        k = columns.shape[0]
        bits = self._corner_bits(k)
        at = columns[:, cols] + ev * steps.shape[1]
        corners = p[ev] + (bits @ steps.ravel()[at].astype(float)).astype(np.int64)
        neg = (bits @ flip.ravel()[at].astype(float)).astype(np.int64) % 2
        corner_up = 2 * corners[1:] + neg[1:]
        rooms = self.rooms_usable
        pe = p[ev]
        t_up = np.minimum(rooms[corner_up].min(axis=0), self.room_up[pe])
        t_down = np.minimum(rooms[corner_up ^ 1].min(axis=0), self.room_down[pe])
        le = lo[ev]
        ok = (t_up >= le[:, 0]) & (t_down >= le[:, 1]) & (t_up + t_down >= le[:, 2])
        return free_cost[corners].sum(axis=0), ok, corners, neg

    def evaluate(self, corners, signs, suppressed):
        """(usable, t_up, t_down, new cost) of every candidate cube."""
        unusable = self.unusable[corners[1:]].any(axis=0)
        plus = signs > 0
        ru = self.room_up[corners]
        rd = self.room_down[corners]
        t_up = np.where(plus, ru, rd).min(axis=0)
        t_down = np.where(plus, rd, ru).min(axis=0)
        new_cost = np.where(suppressed[corners], 0.0, self.cost[corners]).sum(axis=0)
        return ~unusable, t_up, t_down, new_cost


def _subtables_lookup(split: Split) -> Callable[[int], list[tuple[int, ...]]]:
    """``split.subtables_of_cell`` with plain-Python arithmetic and a per-cell cache
    (same keys in the same order; the work list asks for the same cells many times)."""
    options = [[tuple(int(x) for x in (child, parent) if x >= 0)
                for child, parent in zip(g.as_child.tolist(), g.as_parent.tolist())]
               for g in split.dims]
    strides = [int(s) for s in split.strides]
    cache: dict[int, list[tuple[int, ...]]] = {}

    def subtables_of(cell: int) -> list[tuple[int, ...]]:
        keys = cache.get(cell)
        if keys is None:
            per_dim = []
            rest = cell
            for stride, opts in zip(strides, options):
                q, rest = divmod(rest, stride)
                per_dim.append(opts[q])
            keys = list(itertools.product(*per_dim))
            cache[cell] = keys
        return keys

    return subtables_of


@dataclass(frozen=True)
class HypercubeOptions:
    """Settings of the hypercube method (see :func:`hypercube`)."""

    max_candidates: int = field(default=20000, metadata={
        "why": "cubes examined per cell and sub-table: more finds cheaper cubes, slower"})
    carry: int = field(default=1, metadata={
        "why": "generations of carried requirements (-1 all, 0 none): more protects "
               "corners in their other sub-tables before the audit has to", "low": -1})


@register_method("hypercube", options=HypercubeOptions, needs_product_structure=True,
                 handles_singletons=True, proves_optimality=False)
def hypercube(table: Table, cost: np.ndarray, *, time_limit: float | None = None,
              progress: Callable[[str, float], None] | None = None, singleton: bool = True,
              max_candidates: int = 20000, carry: int = 1) -> MethodOutcome:
    """GHMiter-style hypercube suppression on a product table (any number of dimensions).

    Parameters
    ----------
    table : product table with primaries ``U`` and their protection levels
    cost : suppression cost per cell (cube cost = cost of its not yet suppressed corners)
    singleton : single-contributor suppressed cells get two cubes differing in every
        dimension (default True)
    max_candidates : cubes examined per cell and sub-table; larger sub-tables keep, per
        dimension, the alternatives with the cheapest line neighbour
    carry : how many generations of carried requirements to follow: a corner chosen for
        a primary carries the primary's requirement into its other sub-tables (generation
        1, the default), corners chosen there carry theirs (generation 2), ...; -1 follows
        them until nothing changes, 0 protects the primaries in their own sub-tables only

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2],
    ...                       status=list("SSSSUSSSS"), upl=[0, 0, 0, 0, 1, 0, 0, 0, 0],
    ...                       lpl=[0, 0, 0, 0, 1, 0, 0, 0, 0])
    >>> out = hypercube(t, np.ones(9))
    >>> sorted(np.flatnonzero(out.status != "S").tolist())
    [4, 5, 7, 8]
    """
    if not table.dimensions:
        raise InputError("hypercube needs a product table (dimensions with hierarchies); "
                         "use method 'gauss', 'greedy' or 'optimal' for a general table")
    start = time.perf_counter()
    split = Split(table)
    search = _CubeSearch(table, split, np.asarray(cost, dtype=float), max_candidates)
    status = table.status.copy()
    suppressed = np.isin(status, ("U", "M"))
    # cost of suppressing each cell now (0 once suppressed), for the screened search;
    # it needs costs that are finite and not negative (a lower bound by partial sums)
    free_cost = np.where(suppressed, 0.0, search.cost)
    fast = bool(np.isfinite(search.cost).all() and (search.cost >= 0).all())
    need_up, need_down = requirements(table)
    freq = table.freq
    scale = np.maximum(1.0, np.abs(table.value))
    tol = 1e-7 * scale
    # per (cell, sub-table): the (up, down) requirement already met there
    met: dict[tuple[int, tuple], tuple[float, float]] = {}
    # per cell, the generation of the requirement it carries (0: primary; absent: none)
    no_generation = int(np.iinfo(np.int64).max)
    generation: dict[int, int] = dict.fromkeys(np.flatnonzero(status == "U").tolist(), 0)
    queue: deque[tuple[int, tuple]] = deque()
    primaries = np.flatnonzero(status == "U")
    # top-down (shallow cells first), larger cells first within a level: deterministic
    order = primaries[np.lexsort((primaries, -table.value[primaries], table.depth[primaries]))]
    subtables_of = _subtables_lookup(split)
    for p in order.tolist():
        for key in subtables_of(p):
            queue.append((p, key))
    stats = {"events": 0, "cubes": 0, "no_feasible_cube": 0, "no_usable_cube": 0,
             "singleton_second_cubes": 0}
    timed_out = False
    initial = len(queue)

    # searches done ahead, for the events next in the queue: (sub-table version, needs,
    # answer); an answer stays valid while no cell of its sub-table gets suppressed
    # (its cube search reads only those cells) and the cell's needs stay the same
    ahead: dict[tuple[int, tuple], tuple] = {}
    version: dict[tuple, int] = {}

    def searched(p: int, key: tuple, width: float):
        hit = ahead.pop((p, key), None)
        if hit is not None and hit[0] == version.get(key, 0) and hit[1] == need_up[p] \
                and hit[2] == need_down[p]:
            return hit[3]
        batch = [(p, key, (need_up[p], need_down[p], width), tol[p])]
        chosen = {(p, key)}
        for q, q_key in itertools.islice(queue, _LOOKAHEAD):
            if len(batch) >= _BATCH:
                break
            if (q, q_key) in chosen or (singleton and freq[q] == 1):
                continue
            chosen.add((q, q_key))
            known = ahead.get((q, q_key))
            if known is not None and known[0] == version.get(q_key, 0) and \
                    known[1] == need_up[q] and known[2] == need_down[q]:
                continue
            done_q = met.get((q, q_key))
            if done_q is not None and done_q[0] >= need_up[q] - tol[q] and \
                    done_q[1] >= need_down[q] - tol[q]:
                continue
            batch.append((q, q_key, (need_up[q], need_down[q],
                                     table.spl[q] if status[q] == "U" else 0.0), tol[q]))
        answers = search.best_cubes(batch, suppressed, free_cost)
        for (q, q_key, (up, down, _), _), answer in zip(batch[1:], answers[1:]):
            ahead[(q, q_key)] = (version.get(q_key, 0), up, down, answer)
        return answers[0]

    def take(p: int, key: tuple, cube: np.ndarray, sg: np.ndarray) -> None:
        stats["cubes"] += 1
        fresh = cube[~suppressed[cube]]
        status[fresh] = "M"
        suppressed[fresh] = True
        free_cost[fresh] = 0.0
        for c in fresh.tolist():
            for c_key in subtables_of(c):
                version[c_key] = version.get(c_key, 0) + 1
        gen = generation.get(p, no_generation) + 1
        if carry >= 0 and gen > carry:
            return     # the corners carry nothing further (checked once per cube)
        # moving p up by need_up moves corner s by sign * need_up, and so on; capped by
        # s's own room (carry_requirement, for all corners at once: they are distinct
        # cells, so one corner's update cannot change another's test)
        corners = cube[1:]
        plus = sg[1:] > 0
        up = np.minimum(np.where(plus, need_up[p], need_down[p]), search.room_up[corners])
        down = np.minimum(np.where(plus, need_down[p], need_up[p]),
                          search.room_down[corners])
        has_up, has_down = need_up[corners], need_down[corners]
        slack = tol[corners]
        covered = ((up <= has_up + slack) & (down <= has_down + slack)).tolist()
        for s, is_covered, s_up, s_down, s_has_up, s_has_down in zip(
                corners.tolist(), covered, up.tolist(), down.tolist(), has_up.tolist(),
                has_down.tolist()):
            if is_covered:
                met.setdefault((s, key), (s_has_up, s_has_down))
                continue
            need_up[s] = max(s_has_up, s_up)
            need_down[s] = max(s_has_down, s_down)
            met[(s, key)] = (need_up[s], need_down[s])
            generation[s] = min(generation.get(s, no_generation), gen)
            for other in subtables_of(s):
                if other != key:
                    queue.append((s, other))

    while queue:
        if time_limit is not None and stats["events"] % 256 == 0 and \
                time.perf_counter() - start > time_limit:
            timed_out = True
            break
        p, key = queue.popleft()
        stats["events"] += 1
        done = met.get((p, key))
        if done is not None and done[0] >= need_up[p] - tol[p] and \
                done[1] >= need_down[p] - tol[p]:
            continue
        width_need = table.spl[p] if status[p] == "U" else 0.0
        if fast and not (singleton and freq[p] == 1):
            found = searched(p, key, width_need)
            if found is None:
                continue
            if found is not False:
                met[(p, key)] = (need_up[p], need_down[p])
                take(p, key, *found)
                continue
        cand = search.candidates(p, key, suppressed)
        if cand is None:
            continue
        corners, signs, choice = cand
        usable, t_up, t_down, new_cost = search.evaluate(corners, signs, suppressed)
        ok = (usable & (t_up >= need_up[p] - tol[p]) & (t_down >= need_down[p] - tol[p])
              & (t_up + t_down >= width_need - tol[p]))
        # ties on cost: prefer the cube hiding less value (keeps totals published)
        new_value = np.where(suppressed[corners], 0.0, np.abs(search.value[corners])).sum(axis=0)
        picks = []
        if ok.any():
            idx = np.flatnonzero(ok)
            best = idx[np.lexsort((idx, new_value[idx], new_cost[idx]))[0]]
            picks.append(best)
        elif usable.any():
            # no cube is wide enough: take the one that comes closest (then cheapest), so
            # the cell is at least not disclosed; the audit and repair finish the job
            stats["no_feasible_cube"] += 1
            idx = np.flatnonzero(usable)
            ratio = np.minimum(t_up[idx] / np.maximum(need_up[p], tol[p]),
                               t_down[idx] / np.maximum(need_down[p], tol[p]))
            best = idx[np.lexsort((idx, new_value[idx], new_cost[idx], -ratio))[0]]
            picks.append(best)
        else:
            stats["no_usable_cube"] += 1
            met[(p, key)] = (need_up[p], need_down[p])
            continue
        if singleton and freq[p] == 1 and choice.shape[1] >= 1:
            # a second cube with a different code in every dimension
            differs = (choice != choice[picks[0]][None, :]).all(axis=1)
            pool = np.flatnonzero(ok & differs) if (ok & differs).any() else \
                np.flatnonzero(usable & differs)
            if len(pool):
                after = suppressed.copy()
                after[corners[:, picks[0]]] = True
                cost2 = np.where(after[corners[:, pool]], 0.0,
                                 search.cost[corners[:, pool]]).sum(axis=0)
                picks.append(pool[np.lexsort((pool, cost2))[0]])
                stats["singleton_second_cubes"] += 1
        met[(p, key)] = (need_up[p], need_down[p])
        for b in picks:
            take(p, key, corners[:, b], signs[:, b])
        if progress is not None and stats["events"] % 1000 == 0:
            progress("hypercube", min(0.99, stats["events"] / max(1, initial * 4)))
    if progress is not None:
        progress("hypercube", 1.0)
    stats["secondaries"] = int((status == "M").sum())
    stats["seconds"] = round(time.perf_counter() - start, 3)
    return MethodOutcome(status=status, solver_status="time_limit" if timed_out else "heuristic",
                         details=stats)
