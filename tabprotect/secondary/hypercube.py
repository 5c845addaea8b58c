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
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.table import Table
from tabprotect.requirements import protection_requirements
from tabprotect.secondary.base import MethodOutcome, register_method
from tabprotect.secondary.cube_search import _CubeSearch, _subtables_lookup
from tabprotect.secondary.subtables import Split

# events searched together (the next ones in the work list), and how far to look
_BATCH = 16
_LOOKAHEAD = 64
# the generation of a cell that carries no requirement
_NO_GENERATION = int(np.iinfo(np.int64).max)


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


class _HypercubeRun:
    """The state of one hypercube run, shared by its steps: the statuses, the needs, the
    requirement met per (cell, sub-table), the carried generations and the work list."""

    def __init__(self, table: Table, cost: np.ndarray, singleton: bool,
                 max_candidates: int, carry: int) -> None:
        self.table, self.singleton, self.carry = table, singleton, carry
        split = Split(table)
        self.search = search = _CubeSearch(table, split, np.asarray(cost, dtype=float),
                                           max_candidates)
        self.status = status = table.status.copy()
        self.suppressed = np.isin(status, ("U", "M"))
        # cost of suppressing each cell now (0 once suppressed), for the screened search;
        # it needs costs that are finite and not negative (a lower bound by partial sums)
        self.free_cost = np.where(self.suppressed, 0.0, search.cost)
        self.fast = bool(np.isfinite(search.cost).all() and (search.cost >= 0).all())
        self.need_up, self.need_down = requirements(table)
        self.freq = table.freq
        self.tol = 1e-7 * np.maximum(1.0, np.abs(table.value))
        # per (cell, sub-table): the (up, down) requirement already met there
        self.met: dict[tuple[int, tuple], tuple[float, float]] = {}
        # per cell, the generation of the requirement it carries (0: primary; absent: none)
        primaries = np.flatnonzero(status == "U")
        self.generation: dict[int, int] = dict.fromkeys(primaries.tolist(), 0)
        self.queue: deque[tuple[int, tuple]] = deque()
        # top-down (shallow cells first), larger cells first within a level: deterministic
        order = primaries[np.lexsort((primaries, -table.value[primaries],
                                      table.depth[primaries]))]
        self.subtables_of = _subtables_lookup(split)
        for p in order.tolist():
            for key in self.subtables_of(p):
                self.queue.append((p, key))
        self.stats = {"events": 0, "cubes": 0, "no_feasible_cube": 0, "no_usable_cube": 0,
                      "singleton_second_cubes": 0}
        # searches done ahead, for the events next in the queue: (sub-table version,
        # needs, answer); an answer stays valid while no cell of its sub-table gets
        # suppressed (its cube search reads only those cells) and the cell's needs stay
        self.ahead: dict[tuple[int, tuple], tuple] = {}
        self.version: dict[tuple, int] = {}

    def is_met(self, p: int, key: tuple) -> bool:
        """Whether ``p``'s needs are met in sub-table ``key`` already."""
        done = self.met.get((p, key))
        return done is not None and done[0] >= self.need_up[p] - self.tol[p] and \
            done[1] >= self.need_down[p] - self.tol[p]

    def event(self, p: int, key: tuple) -> bool:
        """Protect ``p`` in sub-table ``key``; True when it went through the full search."""
        self.stats["events"] += 1
        if self.is_met(p, key):
            return False
        width_need = self.table.spl[p] if self.status[p] == "U" else 0.0
        if self.fast and not (self.singleton and self.freq[p] == 1):
            found = self.searched(p, key, width_need)
            if found is None:
                return False
            if found is not False:
                self.met[(p, key)] = (self.need_up[p], self.need_down[p])
                self.take(p, key, *found)
                return False
        return self.evaluated(p, key, width_need)

    def _known(self, q: int, q_key: tuple) -> bool:
        """Whether the search ahead for ``q`` in ``q_key`` still holds."""
        known = self.ahead.get((q, q_key))
        return known is not None and known[0] == self.version.get(q_key, 0) and \
            known[1] == self.need_up[q] and known[2] == self.need_down[q]

    def searched(self, p: int, key: tuple, width: float):
        """The screened search's answer for ``p`` in ``key``, searching the next events of
        the work list together with it."""
        hit = self.ahead.pop((p, key), None)
        if hit is not None and hit[0] == self.version.get(key, 0) and \
                hit[1] == self.need_up[p] and hit[2] == self.need_down[p]:
            return hit[3]
        need_up, need_down, tol, status = self.need_up, self.need_down, self.tol, self.status
        batch = [(p, key, (need_up[p], need_down[p], width), tol[p])]
        chosen = {(p, key)}
        for q, q_key in itertools.islice(self.queue, _LOOKAHEAD):
            if len(batch) >= _BATCH:
                break
            if (q, q_key) in chosen or (self.singleton and self.freq[q] == 1):
                continue
            chosen.add((q, q_key))
            if self._known(q, q_key) or self.is_met(q, q_key):
                continue
            batch.append((q, q_key, (need_up[q], need_down[q],
                                     self.table.spl[q] if status[q] == "U" else 0.0), tol[q]))
        answers = self.search.best_cubes(batch, self.suppressed, self.free_cost)
        for (q, q_key, (up, down, _), _), answer in zip(batch[1:], answers[1:]):
            self.ahead[(q, q_key)] = (self.version.get(q_key, 0), up, down, answer)
        return answers[0]

    def take(self, p: int, key: tuple, cube: np.ndarray, sg: np.ndarray) -> None:
        """Suppress ``cube``'s corners and carry ``p``'s needs to them."""
        self.stats["cubes"] += 1
        fresh = cube[~self.suppressed[cube]]
        self.status[fresh] = "M"
        self.suppressed[fresh] = True
        self.free_cost[fresh] = 0.0
        for c in fresh.tolist():
            for c_key in self.subtables_of(c):
                self.version[c_key] = self.version.get(c_key, 0) + 1
        gen = self.generation.get(p, _NO_GENERATION) + 1
        if self.carry >= 0 and gen > self.carry:
            return     # the corners carry nothing further (checked once per cube)
        self._carry(p, key, cube[1:], sg[1:] > 0, gen)

    def _carry(self, p: int, key: tuple, corners: np.ndarray, plus: np.ndarray,
               gen: int) -> None:
        """Carry ``p``'s needs to the corners: moving p up by need_up moves corner s by
        sign * need_up, and so on, capped by s's own room (for all corners at once: they
        are distinct cells, so one corner's update cannot change another's test)."""
        need_up, need_down = self.need_up, self.need_down
        up = np.minimum(np.where(plus, need_up[p], need_down[p]),
                        self.search.room_up[corners])
        down = np.minimum(np.where(plus, need_down[p], need_up[p]),
                          self.search.room_down[corners])
        has_up, has_down = need_up[corners], need_down[corners]
        slack = self.tol[corners]
        covered = ((up <= has_up + slack) & (down <= has_down + slack)).tolist()
        for s, is_covered, s_up, s_down, s_has_up, s_has_down in zip(
                corners.tolist(), covered, up.tolist(), down.tolist(), has_up.tolist(),
                has_down.tolist()):
            if is_covered:
                self.met.setdefault((s, key), (s_has_up, s_has_down))
                continue
            need_up[s] = max(s_has_up, s_up)
            need_down[s] = max(s_has_down, s_down)
            self.met[(s, key)] = (need_up[s], need_down[s])
            self.generation[s] = min(self.generation.get(s, _NO_GENERATION), gen)
            for other in self.subtables_of(s):
                if other != key:
                    self.queue.append((s, other))

    def evaluated(self, p: int, key: tuple, width_need: float) -> bool:
        """Protect ``p`` in ``key`` by evaluating its candidate cubes in full."""
        search, suppressed, tol = self.search, self.suppressed, self.tol
        need_up, need_down = self.need_up, self.need_down
        cand = search.candidates(p, key, suppressed)
        if cand is None:
            return False
        corners, signs, choice = cand
        usable, t_up, t_down, new_cost = search.evaluate(corners, signs, suppressed)
        ok = (usable & (t_up >= need_up[p] - tol[p]) & (t_down >= need_down[p] - tol[p])
              & (t_up + t_down >= width_need - tol[p]))
        # ties on cost: prefer the cube hiding less value (keeps totals published)
        new_value = np.where(suppressed[corners], 0.0, np.abs(search.value[corners])).sum(axis=0)
        if ok.any():
            idx = np.flatnonzero(ok)
            picks = [idx[np.lexsort((idx, new_value[idx], new_cost[idx]))[0]]]
        elif usable.any():
            # no cube is wide enough: take the one that comes closest (then cheapest), so
            # the cell is at least not disclosed; the audit and repair finish the job
            self.stats["no_feasible_cube"] += 1
            idx = np.flatnonzero(usable)
            ratio = np.minimum(t_up[idx] / np.maximum(need_up[p], tol[p]),
                               t_down[idx] / np.maximum(need_down[p], tol[p]))
            picks = [idx[np.lexsort((idx, new_value[idx], new_cost[idx], -ratio))[0]]]
        else:
            self.stats["no_usable_cube"] += 1
            self.met[(p, key)] = (need_up[p], need_down[p])
            return False
        if self.singleton and self.freq[p] == 1 and choice.shape[1] >= 1:
            self._second_cube(picks, corners, choice, ok, usable)
        self.met[(p, key)] = (need_up[p], need_down[p])
        for b in picks:
            self.take(p, key, corners[:, b], signs[:, b])
        return True

    def _second_cube(self, picks: list, corners: np.ndarray, choice: np.ndarray,
                     ok: np.ndarray, usable: np.ndarray) -> None:
        """Add to ``picks`` a second cube with a different code in every dimension (for a
        single-contributor cell), the cheapest once the first is suppressed."""
        differs = (choice != choice[picks[0]][None, :]).all(axis=1)
        pool = np.flatnonzero(ok & differs) if (ok & differs).any() else \
            np.flatnonzero(usable & differs)
        if len(pool):
            after = self.suppressed.copy()
            after[corners[:, picks[0]]] = True
            cost2 = np.where(after[corners[:, pool]], 0.0,
                             self.search.cost[corners[:, pool]]).sum(axis=0)
            picks.append(pool[np.lexsort((pool, cost2))[0]])
            self.stats["singleton_second_cubes"] += 1


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
    run = _HypercubeRun(table, cost, singleton, max_candidates, carry)
    stats = run.stats
    timed_out = False
    initial = len(run.queue)
    while run.queue:
        if time_limit is not None and stats["events"] % 256 == 0 and \
                time.perf_counter() - start > time_limit:
            timed_out = True
            break
        if run.event(*run.queue.popleft()) and progress is not None and \
                stats["events"] % 1000 == 0:
            progress("hypercube", min(0.99, stats["events"] / max(1, initial * 4)))
    if progress is not None:
        progress("hypercube", 1.0)
    stats["secondaries"] = int((run.status == "M").sum())
    stats["seconds"] = round(time.perf_counter() - start, 3)
    return MethodOutcome(status=run.status,
                         solver_status="time_limit" if timed_out else "heuristic",
                         details=stats)
