"""The vectorised cube search of the hypercube method (:mod:`tabprotect.secondary.hypercube`).

For one cell in one sub-table it lists the cubes with a corner at the cell (per dimension,
another code of the same group), screens each with its corners one or two steps from the
cell (small tables broadcast over the grid of cubes: a lower bound of its cost, and whether
one of those corners already lacks the room), then evaluates in full only the cubes of least
bound and those whose bound is within the least cost found (costs must be >= 0; else every
cube is).  Several events are searched together, vectorised, with the answer of evaluating
every cube.
"""
from __future__ import annotations

import itertools
import math
from typing import Callable

import numpy as np

from tabprotect.model.table import Table
from tabprotect.secondary.subtables import Split

_REL_TOL = 1e-9
_ZERO = np.zeros(1, dtype=np.int64)
_FALSE = np.zeros(1, dtype=bool)
# per event, the cubes of least bound evaluated in full first (their least cost then
# bounds which other cubes need evaluating)
_FIRST_CUBES = 8


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
