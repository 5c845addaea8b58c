"""Cut rows of a small network sub-table's protection conditions (max-flow min-cut).

A pattern protects primary ``s`` of a network sub-table (:mod:`.network`) upwards exactly
when every cut separating its head from its tail carries the upper level in the flow's
direction, downwards likewise.  With few free nodes every such cut is listed; each cut
becomes one covering row ``sum_e min(k_re, d_r) z_e >= d_r`` over the candidate cells.
:class:`Problem` holds the sub-table's network, ranges and candidates; the functions
below list the rows of one condition.  The search over these rows is
:mod:`.network_search`.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from tabprotect.errors import InfeasibleRulesError
from tabprotect.secondary.modular.network import Network
from tabprotect.secondary.modular.network_kernel import kernel_loaded, list_rows

#: relative tolerance of "a cut meets its requirement" (float sums of ranges)
REL_TOL = 1e-9


@dataclass(frozen=True)
class SearchLimits:
    """How far the exact search goes before the caller's MILP takes over."""

    #: most free nodes of a cut listing (2^n cuts per condition)
    max_free_nodes: int = 12
    #: most free nodes of a condition listed after row rounds that settle nothing
    #: (:meth:`.network_search._Search._list_lazy`): a search over lazy conditions runs
    #: by numpy, node by node, while one over rows alone gets the certificate and the
    #: kernel (seed 24's NK sub-table of 13 free nodes: 12,000 numpy nodes); a
    #: sub-table that the rounds settle never pays for the listing (None: never)
    list_after_rounds: int | None = 13
    #: most cut rows (after removing duplicates)
    max_rows: int = 20_000
    #: most branch-and-bound nodes
    max_nodes: int = 20_000
    #: drop a child whose candidate an earlier sibling dominates, when every condition
    #: is a cut row (off: every child is searched)
    dominance: bool = True
    #: nodes searched before dominance is tested (small searches end before its
    #: tests pay)
    dominance_after: int = 200
    #: find the lazy conditions' cut rows by rounds of the search over the known rows
    #: before the full search (off: the rows are met one by one inside it)
    row_rounds: bool = True
    #: a search over cut rows alone runs compiled (numba, :mod:`.network_kernel`) once it
    #: passes ``compiled_after`` nodes: the same search, a fraction of the cost per node
    compiled: bool = True
    #: a node whose short rows x available candidates are fewer is judged by loops over
    #: Python floats (:mod:`.network_scalar`: the same decisions), where numpy's cost
    #: per call would be most of the node's time
    scalar_below: int = 250
    #: numpy nodes before the loaded kernel takes over (a search this small ends before
    #: the kernel's set-up pays)
    compiled_after: int = 0
    #: numpy nodes searched in the process before the kernel is loaded: numba's import
    #: and the kernel's cache cost about as much CPU as 8,000 numpy nodes of a search
    #: with few rows, and the kernel also takes over the cut listings, flows and
    #: certificates around those nodes, about as much work again (a node over many
    #: rows counts as several)
    load_after: int = 4000
    #: a process's second and later modular calls load the kernel at their first
    #: network sub-table when its cache exists: a process protecting several tables
    #: repays the load (about 0.4 s CPU, once) over its calls, while a one-table run
    #: (the CLI) loads only after ``load_after`` numpy nodes
    load_when_warm: bool = True
    #: numpy nodes per candidate after which a search over cut rows alone for the
    #: optimum asks two MILPs whether its optimum is unique (then it is the search's
    #: pattern: :mod:`.network_unique`; with the kernel loaded only a search still going
    #: ``certify_compiled_after`` nodes later asks them, the same answer); None: never.
    #: The MILPs (two or three solves of some 3 ms each) take about as long as this
    #: many nodes of a search over few rows (some 45 us each) on 24-27 candidates; a
    #: node over many rows counts as several (1 + rows/1,000, as for ``load_after``:
    #: its time grows with the rows, the MILPs' hardly, since they start from
    #: ``certify_rows``).  A search that passes the cap has spent what the MILPs cost,
    #: and those that do often go on several times as long (without the MILPs some
    #: searches take thousands of nodes, and the kernel's load, about 0.35 s CPU)
    certify_after: int | None = 8
    #: with the kernel loaded, nodes searched past ``certify_after``'s cap before the
    #: uniqueness MILPs are asked (a node over many rows counts as several, as for
    #: ``load_after``): most compiled searches end within a few hundred nodes, cheaper
    #: than the MILPs (5-50 ms), while the few that go on to thousands of nodes over
    #: thousands of rows take ten times the MILPs' time (None: the kernel searches on
    #: to the end and asks the MILPs only when it gives up)
    certify_compiled_after: float | None = 1000.0
    #: rows the certificate's MILPs start from, the hardest to cover (HiGHS' presolve of
    #: thousands of dense rows takes longer than the search; the rows a solution misses
    #: are added)
    certify_rows: int = 150
    #: times each MILP may be solved again with the rows it missed before the search
    #: takes over
    certify_rounds: int = 20
    #: branch-and-bound nodes for each of the certificate's solves (HiGHS'
    #: ``mip_max_nodes``; a hard MILP is left to the search): a count of work, not
    #: seconds, so that the pattern does not depend on the machine's load
    certify_nodes: int = 500
    #: load the kernel at the first network sub-table, compiling it where no cache
    #: exists (``ModularOptions.kernel="compiled"``)
    load_first: bool = False
    #: optimum rounds of the row rounds that may ask the uniqueness
    #: MILPs; the next one that would (its search passing ``certify_after`` nodes per
    #: candidate) ends the rounds and the full search starts from the rows found: round
    #: after round those MILPs grow with the rows, and on a sub-table that needs many
    #: of them they cost several times the full search (None: no limit)
    certified_rounds: int | None = 4
    #: optimum rounds that needed the uniqueness MILPs after which the kernel is loaded
    #: (from its cache, never compiled): the rounds' and the full search's nodes beyond
    #: the certificates then run compiled, the same nodes and pattern (None: never): in
    #: a one-table run the load (about 0.35 s CPU) costs more than the compiled rounds
    #: save on the 2-D tables measured, and a process protecting several tables loads
    #: the kernel at its second call (``load_when_warm``)
    load_after_rounds: int | None = None
    #: numpy nodes of the process (each counted by its cost, as for ``load_after``)
    #: below which the rounds' load (``load_after_rounds``) waits for one more certified
    #: round: with little search work in the process a sub-table may settle after one
    #: certified round, and there the load costs more than the MILPs it saves
    load_rounds_work: float = 1000.0
    #: a numpy listing of at least this many cuts finds the cuts its suppressed cells
    #: leave short by a matrix product first, then sums those exactly (the same rows
    #: and floats); on fewer cuts the product's set-up costs more than it saves
    screen_cuts: int = 512


class Problem:
    """The sub-table's network, ranges, requirements and candidate cells."""

    def __init__(self, net: Network, req, cost: np.ndarray, cand: np.ndarray,
                 fixed: np.ndarray):
        self.net, self.req = net, req
        self.up = np.asarray(req.up, dtype=float)
        self.down = np.asarray(req.down, dtype=float)
        usable = (self.up > 0) | (self.down > 0)
        self.fixed = fixed & usable
        self.cand_idx = np.flatnonzero(cand & usable & ~fixed)
        self.cost = np.asarray(cost, dtype=float)[self.cand_idx]
        self.available = self.fixed.copy()
        self.available[self.cand_idx] = True
        #: per cell, its candidate column (-1: no candidate)
        self.column = np.full(len(self.available), -1)
        self.column[self.cand_idx] = np.arange(len(self.cand_idx))

    def pattern(self, pick: np.ndarray) -> np.ndarray:
        """The cells suppressed when the candidates in ``pick`` (bool) are added."""
        z = self.fixed.copy()
        z[self.cand_idx[pick]] = True
        return z

    def ends(self, s: int, kind: str) -> tuple[int, int]:
        """Source and sink of the flow that moves ``s`` up (head to tail) or down."""
        t, h = int(self.net.tail[s]), int(self.net.head[s])
        return (h, t) if kind == "up" else (t, h)

    def moves(self, z: np.ndarray, s: int, j: int = -1) -> tuple[float, float, tuple]:
        """How far ``s`` moves up and down under pattern ``z`` (attacker ``j`` knows
        its own cell), and the source sides of the two minimum cuts."""
        fwd = np.where(z, self.up, 0.0)
        bwd = np.where(z, self.down, 0.0)
        skip = (s,) if j < 0 else (s, j)
        sides = []
        out = []
        for kind, own in (("up", self.up[s]), ("down", self.down[s])):
            src, snk = self.ends(s, kind)
            f, side = self.net.flow(fwd, bwd, src, snk, skip)
            out.append(min(own, f))
            sides.append(side)
        return out[0], out[1], tuple(sides)

    def crossing(self, side: np.ndarray, kind_sign: int, skip: tuple) -> np.ndarray:
        """Mask over the candidates: those crossing a cut from ``side`` outwards with
        room in that direction (``kind_sign`` is +1 for every cut here: flows leave
        the source side)."""
        t = self.net.tail[self.cand_idx]
        h = self.net.head[self.cand_idx]
        out_fwd = side[t] & ~side[h] & (self.up[self.cand_idx] > 0)
        out_bwd = side[h] & ~side[t] & (self.down[self.cand_idx] > 0)
        mask = out_fwd | out_bwd
        for e in skip:
            mask &= self.cand_idx != e
        return mask


def cut_row(prob: Problem, side: np.ndarray, s: int, j: int, need: float
            ) -> tuple[np.ndarray, np.ndarray]:
    """The row of one cut (``side``: its source side) of a condition of ``s`` against
    attacker ``j``; no row when the suppressed cells meet it.  Raises
    InfeasibleRulesError when all candidates cannot meet it."""
    edges = prob.available.nonzero()[0]
    edges = edges[(edges != s) & (edges != j)]
    return _rows(prob, edges, need, _split_crossing(prob, side[None, :], edges))


def _crossing(prob: Problem, by_node: np.ndarray, edges: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """Which of ``edges`` leave the source sides tail first (forwards) and head first
    (backwards), cuts x edges; ``by_node``: the sides as nodes x cuts (each end's row of
    every cut's flags gathered once: rows are contiguous, where a cuts x nodes array
    would be gathered element by element)."""
    at_tail, at_head = by_node[prob.net.tail[edges]], by_node[prob.net.head[edges]]
    # (on flags, a > b is a & ~b in one pass)
    return np.greater(at_tail, at_head).T, np.greater(at_head, at_tail).T


def _split_crossing(prob: Problem, side: np.ndarray, edges: np.ndarray) -> tuple:
    """:func:`_crossing` of the suppressed (fixed) ``edges`` and of the candidate ones
    (``side``: the source sides, cuts x nodes), each over its own columns:
    ``((fwd, bwd) fixed, (fwd, bwd) candidates)``, the columns :func:`_rows` reads,
    without gathering them from the whole crossing."""
    is_fixed = prob.fixed[edges]
    by_node = np.ascontiguousarray(side.T)
    return (_crossing(prob, by_node, edges[is_fixed]),
            _crossing(prob, by_node, edges[~is_fixed]))


def _rows(prob: Problem, edges: np.ndarray, need: float, crossing: tuple,
          screen_cuts: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the cuts whose ``crossing`` edges (:func:`_split_crossing`: forwards and
    backwards, of the fixed ``edges`` and of the candidate ones) are given: the
    coefficients of the candidates capped at each cut's deficit, and the deficits
    (``screen_cuts``: ``SearchLimits.screen_cuts``, None: no screen)."""
    tol = REL_TOL * max(1.0, need)
    (fwd_fixed, bwd_fixed), (fwd_cand, bwd_cand) = crossing
    is_fixed = prob.fixed[edges]
    short, deficit = _short_cuts(prob, fwd_fixed, bwd_fixed, edges[is_fixed], need, tol,
                                 screen_cuts)
    rows = np.zeros((len(deficit), len(prob.cand_idx)))
    cand_edges = edges[~is_fixed]
    rows[:, prob.column[cand_edges]] = _coefficients(prob, fwd_cand[short],
                                                     bwd_cand[short], cand_edges)
    np.minimum(rows, deficit[:, None], out=rows)
    if (rows.sum(axis=1) < deficit - tol).any():
        raise InfeasibleRulesError("the sub-table's primaries cannot be protected with "
                                   "its candidate cells")
    return rows, deficit


def _short_cuts(prob: Problem, fwd: np.ndarray, bwd: np.ndarray, edges: np.ndarray,
                need: float, tol: float, screen_cuts: int | None
                ) -> tuple[np.ndarray, np.ndarray]:
    """The cuts (``fwd``, ``bwd``: cuts x the suppressed ``edges``) that the suppressed
    cells leave short of ``need`` by more than ``tol`` (a mask or their indices, in
    order), and their deficits: ``need`` less each cut's :func:`_coefficients` summed as
    ``np.sum`` sums a row (pairwise), as the compiled listing sums them
    (``network_kernel._pairwise``: the same floats).  A listing of ``screen_cuts`` or
    more cuts is screened by a matrix product first (most of its cuts the suppressed
    cells meet): only the cuts it leaves within a rounding margin of short are summed
    exactly."""
    up = down = None
    if screen_cuts is not None and len(fwd) >= max(2, screen_cuts) and len(edges):
        up, down = prob.up[edges], prob.down[edges]
    if up is None or not (np.isfinite(up).all() and np.isfinite(down).all()):
        # (the crossings are gathered column-major: summed as rows, not edge by edge)
        deficit = need - np.ascontiguousarray(_coefficients(prob, fwd, bwd, edges)).sum(axis=1)
        short = deficit > tol
        return short, deficit[short]
    rough = need - (fwd.astype(float) @ up + bwd.astype(float) @ down)
    # either sum of len(edges) terms is within len(edges) * 2^-52 of their absolute
    # sum: the margin is orders of magnitude wider
    margin = 1e-10 * (1.0 + abs(need) + np.abs(up).sum() + np.abs(down).sum())
    maybe = np.flatnonzero(rough > tol - margin)
    carried = np.ascontiguousarray(np.where(fwd[maybe], up, np.where(bwd[maybe], down, 0.0)))
    deficit = need - carried.sum(axis=1)
    keep = deficit > tol
    return maybe[keep], deficit[keep]


def _coefficients(prob: Problem, fwd: np.ndarray, bwd: np.ndarray, edges: np.ndarray
                  ) -> np.ndarray:
    """What ``edges`` carry across each cut (``fwd``, ``bwd``: cuts x edges): the upper
    range forwards, the lower backwards (an edge crosses a cut one way at most), else 0."""
    return np.where(fwd, prob.up[edges], np.where(bwd, prob.down[edges], 0.0))


def own_range_check(prob: Problem, s: int, kind: str, need: float) -> None:
    """Raise InfeasibleRulesError when the primary itself cannot move by ``need``."""
    own = prob.up[s] if kind == "up" else prob.down[s]
    if own < need - REL_TOL * max(1.0, need):
        raise InfeasibleRulesError("a primary's range is smaller than its requirement")


def cut_rows(prob: Problem, s: int, kind: str, need: float, j: int,
             limits: SearchLimits) -> tuple[np.ndarray, np.ndarray] | None:
    """Every cut row of condition (``s`` moves ``kind`` by ``need``; attacker ``j``):
    (rows x candidates coefficients capped at the deficit, deficits), rows the
    suppressed cells already meet left out; None when there are too many cuts.

    Raises InfeasibleRulesError when some cut cannot be met by all candidates."""
    own_range_check(prob, s, kind, need)
    edges = prob.available.nonzero()[0]
    edges = edges[(edges != s) & (edges != j)]
    side = _cut_sides(prob, s, kind, edges, limits)
    return None if side is None else _rows(prob, edges, need,
                                           _split_crossing(prob, side, edges),
                                           limits.screen_cuts)


def _cut_sides(prob: Problem, s: int, kind: str, edges: np.ndarray, limits: SearchLimits
               ) -> np.ndarray | None:
    """Every source side of a cut separating ``s``'s ends over ``edges`` (cuts x nodes),
    or None when the free nodes are too many to list."""
    net = prob.net
    src, snk = prob.ends(s, kind)
    touched = np.zeros(net.n_nodes, bool)
    touched[net.tail[edges]] = touched[net.head[edges]] = True
    touched[[src, snk]] = False
    free = touched.nonzero()[0]
    if len(free) > limits.max_free_nodes:
        return None
    # built as nodes x cuts, the layout :func:`_split_crossing` gathers from (its
    # transpose is then no copy)
    by_node = np.zeros((net.n_nodes, 2 ** len(free)), bool)
    by_node[src] = True
    by_node[free] = _subset_bits_by_node(len(free))
    return by_node.T


@functools.lru_cache(maxsize=None)
def _subset_bits(n: int) -> np.ndarray:
    """Every subset of ``n`` free nodes as a row of flags (row ``m``: the bits of ``m``),
    shared by the listings with as many free nodes (read-only)."""
    bits = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1).astype(bool)
    bits.flags.writeable = False
    return bits


@functools.lru_cache(maxsize=None)
def _subset_bits_by_node(n: int) -> np.ndarray:
    """:func:`_subset_bits` transposed (row ``i``: free node ``i``'s flag in every
    subset), contiguous and read-only."""
    bits = np.ascontiguousarray(_subset_bits(n).T)
    bits.flags.writeable = False
    return bits


def cut_rows_both(prob: Problem, s: int, up: float, down: float, limits: SearchLimits
                  ) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """:func:`cut_rows` of ``s`` moving up by ``up`` and down by ``down`` (the outside
    intruder), from one listing: the down cuts are the up cuts' complements (source and
    sink swap), so a cell crossing an up cut forwards crosses its complement backwards.
    The rows of each positive need, or None when there are too many cuts."""
    kinds = [(kind, need) for kind, need in (("up", up), ("down", down)) if need > 0]
    for kind, need in kinds:
        own_range_check(prob, s, kind, need)
    if not kinds:
        return []
    edges = prob.available.nonzero()[0]
    edges = edges[edges != s]
    if limits.compiled and kernel_loaded():
        return _compiled_rows(prob, s, edges, limits, dict(kinds))
    side = _cut_sides(prob, s, "up", edges, limits)
    if side is None:
        return None
    fixed, cand = _split_crossing(prob, side, edges)
    # a down cut is an up cut's complement: forwards and backwards swap
    return [_rows(prob, edges, need, (fixed, cand) if kind == "up"
                  else (fixed[::-1], cand[::-1]), limits.screen_cuts)
            for kind, need in kinds]


def _compiled_rows(prob: Problem, s: int, edges: np.ndarray, limits: SearchLimits,
                   needs: dict) -> list | None:
    """:func:`cut_rows_both`'s rows listed by the compiled kernel (the same floats), or
    None when there are too many free nodes.  ``needs``: the positive needs by kind."""
    src, snk = prob.ends(s, "up")
    touched = np.zeros(prob.net.n_nodes, bool)
    touched[prob.net.tail[edges]] = touched[prob.net.head[edges]] = True
    touched[[src, snk]] = False
    free = touched.nonzero()[0]
    if len(free) > limits.max_free_nodes:
        return None
    listed = list_rows(prob, s, edges, free, src,
                       (needs.get("up", 0.0), needs.get("down", 0.0)))
    out = []
    for kind, (rows, deficit) in zip(("up", "down"), listed):
        if kind not in needs:
            continue
        tol = REL_TOL * max(1.0, needs[kind])
        if (rows.sum(axis=1) < deficit - tol).any():
            raise InfeasibleRulesError("the sub-table's primaries cannot be protected with "
                                       "its candidate cells")
        out.append((rows, deficit))
    return out


def _unique_rows(both: np.ndarray) -> np.ndarray:
    """``np.unique(both, axis=0)``: the distinct rows in lexicographic order (the search
    breaks ties by row order).  Rows of non-negative floats sort as the big-endian bytes
    of their bit patterns, so one sort of byte strings replaces the field-by-field sort
    of a structured array (several times faster on a few hundred rows)."""
    if (both < 0).any() or np.isnan(both).any():
        return np.unique(both, axis=0)
    bits = np.ascontiguousarray((both + 0.0).view(np.uint64).astype(">u8"))  # -0.0 is 0.0
    keys = bits.view(np.dtype((np.void, bits.dtype.itemsize * bits.shape[1]))).ravel()
    _, first = np.unique(keys, return_index=True)
    return both[first]
