"""Cube moves: proofs of a primary's interval without an LP.

A *cube* of a primary cell is a set of ``2^k`` cells (one corner the primary) whose
alternating ``+t`` / ``-t`` change keeps every relation of the table; with all corners
suppressed it is an explicit witness that the intruder cannot rule out ``x +- t``.
:func:`cube_repair` adds the cheapest such cubes for short primaries (leaf cubes, chain
cubes through the hierarchy, poles) and finds the cubes a pattern already has
(``certify_only``); the cubes are returned as sparse *moves* for ``audit(..., moves=...)``,
which checks each of them before it trusts it.
"""
from __future__ import annotations

import itertools
import time

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from tabprotect.model.table import Table

if TYPE_CHECKING:
    from tabprotect.secondary.product_limits import ProductSearchLimits

def leaf_cells(table: Table) -> np.ndarray:
    """Cells whose code is a leaf (has no children) in every dimension of a product table."""
    out = np.ones(table.n_cells, dtype=bool)
    for d, dim in enumerate(table.dimensions):
        h = dim.hierarchy
        has_children = np.zeros(len(h), dtype=bool)
        parents = np.asarray(h.parent)
        has_children[parents[parents >= 0]] = True
        if len(h) > 1:
            out &= ~has_children[table.positions[d]]
    return out


class _ChainCubes:
    """Cubes for primaries with non-leaf codes: in a dimension where the primary's code
    ``a`` has children, the move follows a chain of one child per level down to a leaf
    (each chain node moves like ``a``, so every relation "node = sum of its children"
    holds), and ``a``'s sibling (if ``a`` has a parent) moves the opposite way along its
    own chain.  The product of the per-dimension moves keeps every relation of the table,
    so with every corner suppressed it is again a proof of the primary's interval.  The
    chain follows the child with the largest marginal value (the most room to move)."""

    #: per primary at most this many sibling combinations are evaluated
    MAX_COMBOS = 64

    def __init__(self, table: Table, poles: bool = False):
        from tabprotect.secondary.gauss.vectors import marginals as _marginals
        self.table = table
        self.poles = poles
        self.shape = table.shape
        self.strides = np.asarray([int(np.prod(self.shape[d + 1:]))
                                   for d in range(len(self.shape))], dtype=np.int64)
        self.hier = [d.hierarchy for d in table.dimensions]
        marg = _marginals(table)
        self.chain = []
        for h, m in zip(self.hier, marg):
            best_child = np.full(len(h), -1, dtype=np.int64)
            for parent, children in h.edges():
                ch = np.asarray(children, dtype=np.int64)
                best_child[parent] = ch[np.lexsort((ch, -m[ch]))[0]]
            chains = []
            for c in range(len(h)):
                path = [c]
                while best_child[path[-1]] >= 0:
                    path.append(int(best_child[path[-1]]))
                chains.append(np.asarray(path, dtype=np.int64))
            self.chain.append(chains)
        self.room_up = table.ub - table.value
        self.room_down = table.value - table.lb
        scale = np.maximum(1.0, np.abs(table.value))
        self.unusable = (np.isin(table.status, ("P", "Z"))
                         | (np.abs(table.value) <= 1e-9 * scale)
                         | (table.ub - table.lb <= 1e-9 * scale))

    def _options(self, d: int, a: int) -> list[tuple[np.ndarray, np.ndarray]]:
        h = self.hier[d]
        own = self.chain[d][a]
        parent = int(h.parent[a])
        if parent < 0:
            return [(own, np.ones(len(own), dtype=np.int64))]
        out = []
        for sib in h.children[parent]:
            if sib == a:
                continue
            other = self.chain[d][sib]
            out.append((np.concatenate([own, other]),
                        np.concatenate([np.ones(len(own), np.int64),
                                        -np.ones(len(other), np.int64)])))
        return out

    def _pole(self, d: int, a: int) -> tuple[np.ndarray, np.ndarray]:
        """The *pole* of code ``a``: its chain down and every ancestor move alike -- the
        move of one leaf, aggregated, so each relation "node = sum of children" holds.
        Its cells are totals, rarely zero: it serves where every sibling has a zero
        corner."""
        h = self.hier[d]
        up = []
        q = int(h.parent[a])
        while q >= 0:
            up.append(q)
            q = int(h.parent[q])
        cells = np.concatenate([self.chain[d][a], np.asarray(up, dtype=np.int64)])
        return cells, np.ones(len(cells), dtype=np.int64)

    def protect(self, p, status, suppressed, cost, need_up, need_down, width,
                single):
        """Suppress the cheapest usable chain cube of ``p``; returns it as
        ``(corners, signs, t_up, t_down)``, or None when there is none."""
        pos = np.unravel_index(p, self.shape)
        per_dim = [self._options(d, int(a)) for d, a in enumerate(pos)]
        if any(len(o) == 0 for o in per_dim):
            return None
        keep = max(1, int(self.MAX_COMBOS ** (1.0 / len(per_dim))))
        per_dim = [o[:keep] for o in per_dim]
        found = self._cheapest(p, per_dim, suppressed, cost, need_up, need_down, width,
                               single)
        if found is None and self.poles:
            with_poles = [o + [self._pole(d, int(a))] if int(self.hier[d].parent[a]) >= 0
                          else o for (d, a), o in zip(enumerate(pos), per_dim)]
            found = self._cheapest(p, with_poles, suppressed, cost, need_up, need_down,
                                   width, single)
        if found is None:
            return None
        fresh, move = found
        status[fresh] = "M"
        suppressed[fresh] = True
        return move

    def _cheapest(self, p, per_dim, suppressed, cost, need_up, need_down, width, single):
        best = None
        scale = 1.0 + 1e-9
        tol = 1e-9 * max(1.0, abs(self.table.value[p]))
        # per dimension and option, the codes as flat offsets (code * stride): a corner
        # is the sum of one offset per dimension, built with outer sums (C order, as
        # ravel_multi_index over the grid of codes)
        flat = [[(codes * self.strides[d], signs) for codes, signs in options]
                for d, options in enumerate(per_dim)]
        for combo in itertools.product(*flat):
            corners, sign = combo[0]
            for offsets, signs in combo[1:]:
                corners = np.add.outer(corners, offsets).ravel()
                sign = np.multiply.outer(sign, signs).ravel()
            others = corners[corners != p]
            if self.unusable[others].any() or (single is not None and single[others].any()):
                continue
            plus = sign > 0
            t_up = np.where(plus, self.room_up[corners], self.room_down[corners]).min()
            t_down = np.where(plus, self.room_down[corners], self.room_up[corners]).min()
            if t_up < need_up * scale or t_down < need_down * scale or \
                    t_up + t_down < max(width * scale, tol):
                continue
            fresh = corners[~suppressed[corners]]
            key = (float(cost[fresh].sum()), float(np.abs(self.table.value[fresh]).sum()))
            if best is None or key < best[0]:
                best = (key, fresh, (corners, sign, float(t_up), float(t_down)))
        return None if best is None else best[1:]


def cube_repair(table: Table, cost: np.ndarray, cells, *, singleton: bool = False,
                time_limit: float | None = None, chains: bool = False,
                poles: bool = False, return_moves: bool = False,
                certify_only: bool = False,
                product_limits: ProductSearchLimits | None = None):
    """Protect primary cells with *leaf cubes*: no LP, each cube a proof.

    A leaf cube of primary ``p`` (all of whose codes are leaves) takes, in every
    dimension, another leaf child of the same parent; its ``2^k`` corners are all leaf
    cells.  Moving the corners by ``+t`` / ``-t`` with alternating signs keeps *every*
    relation of the table (each relation meets the cube in no corner or in two corners of
    opposite sign, and no corner is a total), so with all corners suppressed the
    primary's interval contains ``[x - t_down, x + t_up]``, the simple cube bounds (see
    :mod:`tabprotect.secondary.hypercube`).  For each listed primary the cheapest leaf cube
    whose bounds meet the primary's requirement is suppressed (corners already
    suppressed cost nothing, so a primary that already has such a cube costs nothing).

    With ``chains=True`` a primary with a non-leaf code (or without a usable leaf cube)
    gets a *chain cube* instead (costlier than the deviation LP's support -- 10k-3d
    repair: 3.81M against 3.37M -- but no LP, for the largest tables): in each dimension where its code (or the sibling's) has children the move
    follows one child per level down to a leaf (`_ChainCubes`), again a move of the whole
    table.  Primaries without any usable cube (zero, empty, ``P``, fixed or -- with
    ``singleton`` -- single-contributor corners, or bounds too small) are returned for
    the deviation LPs of :func:`greedy_repair`.

    With ``poles=True`` (and ``chains``) a primary without a usable chain cube may also
    use, in any dimension, the *pole* of its code: the code's chain down and all its
    ancestors moving alike (again a move of the whole table; its cells are totals, so
    rarely zero).

    With ``certify_only`` only moves whose cells are all suppressed already count:
    nothing is added, and the moves certify the pattern as it is (e.g. before the first
    audit of a hypercube pattern). There every primary, leaf or not, gets the exhaustive
    search of :mod:`tabprotect.secondary.product_moves` (leaf cubes, and the products
    of cousin paths and poles as well, within ``product_limits``), and ``chains`` /
    ``poles`` change nothing (the chain cubes and poles are products of those paths too).

    Returns
    -------
    (new status array, the cells left unresolved), plus, with ``return_moves``, the
    cubes as a sparse ``(m, n_cells)`` matrix of moves: per settled primary its cube
    pushed up by the cube's room and pushed down by it, for ``audit(..., moves=...)``,
    which checks them and certifies the primaries without LPs

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> st = t.status.copy(); st[4] = "U"
    >>> t = t.replace(status=st, upl=np.where(st == "U", 1.0, 0), lpl=np.where(st == "U", 1.0, 0))
    >>> new, left = cube_repair(t, np.ones(9), [4])
    >>> sorted(np.flatnonzero(new == "M").tolist()), left.tolist()
    ([5, 7, 8], [])
    """
    start = time.perf_counter()
    cells = np.atleast_1d(np.asarray(cells, dtype=np.int64))
    if not table.dimensions or len(cells) == 0:
        status = table.status.copy()
        return (status, cells, _move_matrix([], table.n_cells)) if return_moves else \
            (status, cells)
    repair = _CubeRepair(table, cost, singleton, chains, poles)
    if certify_only:
        return repair.result(repair.certify(cells, product_limits), return_moves)
    unresolved = []
    for n, p in enumerate(cells):
        p = int(p)
        if time_limit is not None and n % 256 == 0 and \
                time.perf_counter() - start > time_limit:
            unresolved.extend(int(c) for c in cells[n:])
            break
        if not repair.protect(p):
            unresolved.append(p)
    return repair.result(np.asarray(unresolved, dtype=np.int64), return_moves)


class _CubeRepair:
    """The state of one :func:`cube_repair` run shared by its steps: the statuses, the
    needs and the moves found so far."""

    def __init__(self, table: Table, cost: np.ndarray, singleton: bool, chains: bool,
                 poles: bool) -> None:
        from tabprotect.secondary.cube_search import _CubeSearch
        from tabprotect.secondary.hypercube import requirements
        from tabprotect.secondary.subtables import Split
        self.table, self.cost, self.singleton = table, cost, singleton
        self.status = table.status.copy()
        self.moves: list[tuple[np.ndarray, np.ndarray]] = []
        self.split = Split(table)
        self.search = _CubeSearch(table, self.split, np.asarray(cost, dtype=float),
                                  max_candidates=20000)
        self.suppressed = np.isin(self.status, ("U", "M"))
        self.leaf = leaf_cells(table)
        self.need_up, self.need_down = requirements(table)
        # a hair above the levels: the audit's tolerance then never decides the verdict
        self.scale = 1.0 + 1e-9
        self.tol = 1e-9 * np.maximum(1.0, np.abs(table.value))
        self.single = table.freq == 1
        self.chain_cubes = _ChainCubes(table, poles=poles) if chains else None

    def result(self, unresolved: np.ndarray, return_moves: bool):
        """What :func:`cube_repair` returns."""
        if not return_moves:
            return self.status, unresolved
        return self.status, unresolved, _move_matrix(self.moves, self.table.n_cells)

    def move_cap(self, p: int) -> float:
        """A move's magnitude: the cube's room, capped where a bound is infinite."""
        return 10.0 * max(self.need_up[p], self.need_down[p], float(self.table.spl[p]), 1.0)

    def record(self, p: int, corners, signs, t_up, t_down) -> None:
        """Keep the cube pushed up by ``t_up`` and down by ``t_down`` as moves."""
        cap = self.move_cap(p)
        for magnitude, sign in ((min(t_up, cap), 1.0), (min(t_down, cap), -1.0)):
            if magnitude > 0:
                self.moves.append((corners, sign * magnitude * signs))

    def chain_cube(self, p: int, width: float) -> bool:
        """Protect ``p`` with a chain cube (False without ``chains`` or without one)."""
        if self.chain_cubes is None:
            return False
        found = self.chain_cubes.protect(
            p, self.status, self.suppressed, self.cost, self.need_up[p], self.need_down[p],
            width, self.single if self.singleton else None)
        if found is not None:
            self.record(p, *found)
        return found is not None

    def certify(self, cells: np.ndarray, product_limits) -> np.ndarray:
        """The moves a pattern already has: per primary, the products of one-dimensional
        paths (siblings -- the leaf cubes --, cousins through the parents, poles) whose
        cells are all suppressed, searched exhaustively (compiled) for every primary;
        non-leaf primaries too (their paths run down to a leaf).  Returns the cells left."""
        from tabprotect.secondary.product_limits import ProductSearchLimits
        from tabprotect.secondary.product_moves import cheapest_product_moves
        table, scale, tol = self.table, self.scale, self.tol
        usable = self.suppressed & ~self.search.unusable
        if self.singleton:
            usable &= ~self.single   # (the primary itself, corner 0, is not checked)
        widths = np.where(self.status[cells] == "U", table.spl[cells], 0.0)
        ok, found_moves = cheapest_product_moves(
            table, cells, np.where(usable, 0.0, np.inf), self.need_up[cells] * scale,
            self.need_down[cells] * scale, np.maximum(widths * scale, tol[cells]),
            product_limits or ProductSearchLimits())
        for p, (corners, signs, t_up, t_down, _) in zip(cells[ok], found_moves):
            self.record(int(p), corners, signs, t_up, t_down)
        # the leaf and chain cubes of the search are products of such paths: what the
        # exhaustive search left, they cannot certify
        return cells[~ok]

    def protect(self, p: int) -> bool:
        """Protect ``p`` with its cheapest leaf cube, cube sums or a chain cube; False
        when none is found."""
        table, search, suppressed = self.table, self.search, self.suppressed
        if not self.leaf[p]:
            return self.chain_cube(p, float(table.spl[p]))
        pos = np.unravel_index(p, table.shape)
        key = tuple(int(g.as_child[q]) if g.as_child[q] >= 0 else 0
                    for g, q in zip(self.split.dims, pos))
        cand = search.candidates(p, key, suppressed)
        if cand is None:
            return False
        corners, signs, _ = cand
        usable, t_up, t_down, new_cost = search.evaluate(corners, signs, suppressed)
        usable_cube = usable & self.leaf[corners].all(axis=0)
        if self.singleton:
            # a corner's contributor knows its value: the cube proves nothing against it
            usable_cube &= ~self.single[corners[1:]].any(axis=0)
        width = float(table.spl[p]) if self.status[p] == "U" else 0.0
        scale = self.scale
        need = (self.need_up[p] * scale, self.need_down[p] * scale,
                max(width * scale, self.tol[p]))
        ok = usable_cube & ((t_up >= need[0]) & (t_down >= need[1])
                            & (t_up + t_down >= need[2]))
        if not ok.any():
            if self.cube_sums(p, corners, signs, usable_cube, (t_up, t_down), new_cost, need):
                return True
            # a leaf primary whose siblings have children: chains down from them
            return self.chain_cube(p, width)
        idx = np.flatnonzero(ok)
        new_value = np.where(suppressed[corners[:, idx]], 0.0,
                             np.abs(table.value[corners[:, idx]])).sum(axis=0)
        best = idx[np.lexsort((idx, new_value, new_cost[idx]))[0]]
        cube = corners[:, best]
        fresh = cube[~suppressed[cube]]
        self.status[fresh] = "M"
        suppressed[fresh] = True
        self.record(p, cube, signs[:, best].astype(float), float(t_up[best]),
                    float(t_down[best]))
        return True

    def cube_sums(self, p: int, corners: np.ndarray, signs: np.ndarray,
                  usable_cube: np.ndarray, rooms: tuple[np.ndarray, np.ndarray],
                  new_cost: np.ndarray, need: tuple[float, float, float]) -> bool:
        """Protect ``p`` with cubes for the way up and cubes for the way down: each sum a
        move of the whole table, so together they prove the interval."""
        t_up, t_down = rooms
        up = _cube_sum(usable_cube, t_up, new_cost, corners, need[0])
        down = _cube_sum(usable_cube, t_down, new_cost, corners, need[1])
        if up is None or down is None or not t_up[up].sum() + t_down[down].sum() >= need[2]:
            return False
        for chosen, room, direction, own in ((up, t_up, 1.0, self.search.room_up[p]),
                                             (down, t_down, -1.0, self.search.room_down[p])):
            cubes = corners[:, chosen]
            fresh = np.unique(cubes[~self.suppressed[cubes]])
            self.status[fresh] = "M"
            self.suppressed[fresh] = True
            # the primary moves by the sum of the rooms: no further than its own
            share = min(1.0, own / max(float(room[chosen].sum()), 1e-300))
            magnitude = np.minimum(room[chosen] * share, self.move_cap(p))
            self.moves.append((cubes.T.ravel(), direction * (
                signs[:, chosen] * magnitude).T.ravel().astype(float)))
        return True


def _cube_sum(usable: np.ndarray, room: np.ndarray, new_cost: np.ndarray,
              corners: np.ndarray, need: float) -> list[int] | None:
    """Cubes whose rooms in one direction add up to ``need``: the cheapest usable cube
    with that room alone, else cubes with no corner in common but the primary (corner
    0), taken greedily; None when they do not reach it.

    Cubes that share only the primary move their corners independently, so their sum
    is a move too, taking the primary by the sum of their rooms.  Whether a sum is found
    depends on the rooms alone (largest room first), not on what is suppressed already:
    so a primary settled from one pattern is settled from any other; where the cheaper
    greedy order (least new cost per unit of room) reaches the need too, it is taken.

    >>> corners = np.array([[0, 0, 0], [1, 3, 1], [2, 4, 5]])
    >>> _cube_sum(np.array([True, True, True]), np.array([3.0, 3.0, 4.0]),
    ...           np.array([1.0, 2.0, 1.0]), corners, 5.0)
    [2, 1]
    """
    cand = np.flatnonzero(usable & (room > 0))
    alone = cand[room[cand] >= need]
    if len(alone):
        return [int(alone[np.argmin(new_cost[alone])])]

    def greedy(order: np.ndarray) -> list[int] | None:
        used: set[int] = set()
        chosen, total = [], 0.0
        for j in order.tolist():
            others = corners[1:, j].tolist()
            if used.intersection(others):
                continue
            used.update(others)
            chosen.append(j)
            total += float(room[j])
            if total >= need:
                return chosen
        return None

    widest = greedy(cand[np.lexsort((cand, -room[cand]))])
    if widest is None:
        return None
    cheap = greedy(cand[np.lexsort((cand, new_cost[cand] / room[cand]))])
    if cheap is not None and new_cost[cheap].sum() <= new_cost[widest].sum():
        return cheap
    return widest


def _move_matrix(moves: list[tuple[np.ndarray, np.ndarray]], n_cells: int) -> sp.csr_matrix:
    """Rows of (cells, deviations) as one sparse matrix (repeated cells are summed)."""
    if not moves:
        return sp.csr_matrix((0, n_cells))
    lengths = np.fromiter((len(c) for c, _ in moves), dtype=np.int64, count=len(moves))
    rows = np.repeat(np.arange(len(moves)), lengths)
    cols = np.concatenate([c for c, _ in moves])
    vals = np.concatenate([np.asarray(v, dtype=float) for _, v in moves])
    return sp.csr_matrix((vals, (rows, cols)), shape=(len(moves), n_cells))
