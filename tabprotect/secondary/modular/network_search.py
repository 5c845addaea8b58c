"""The exact minimum-cost pattern of a small network sub-table, without a MILP.

On a sub-table whose relations form a network (:mod:`.network`), a pattern protects
primary ``s`` upwards exactly when every cut separating its head from its tail carries
``UPL'_s`` in the flow's direction (max-flow min-cut), downwards likewise.  With few
nodes every such cut is listed (:mod:`.network_cuts`), so the sub-table's problem becomes
a covering problem over its candidate cells:

    min  c'z   subject to   sum_e min(k_re, d_r) z_e >= d_r   for every cut row r,

``d_r`` what the cut still lacks after the cells already suppressed, ``k_re`` the range
candidate ``e`` adds to it.  A depth-first branch and bound solves it exactly: at a
node some row is short, and any pattern below must take one of that row's candidates,
so the children take the first, or the second and not the first, and so on; a node is
dropped when some row can no longer be met or when its cost plus the cheapest
fractional cover of a short row reaches the best pattern found.  Conditions that are no
cut rows -- the sliding width, and the single-contributor attackers (the same cuts
without the attacker's own cell) -- are checked by maximum flows where the rows hold,
and a violated one either adds its cut rows or is branched on like a row (the cells
crossing the cuts of its flows).  Every pattern returned is checked again by maximum
flows, condition by condition, unless every condition was a listed cut row (then
meeting the rows is the proof).

Two devices cut the nodes without changing the optimum found. Row rounds: before the
full search, searches over the known rows alone (first their first patterns, then their
optima) add the cut rows of the levels their patterns violate, so the full search starts
with the rows it would otherwise meet one by one deep in the tree, and a rows-only
optimum meeting every condition is the answer (once a few optimum rounds have asked for
the uniqueness MILPs, the next round that would ask them ends the rounds: the full
search, from the rows found, is then cheaper; conditions left lazy only for their number
of free nodes then get every cut listed when they have a few more than the first listing
allows, so the full search runs over rows alone). Dominance (when every condition
is a cut row): a child taking a candidate that an earlier sibling -- left out there --
beats (strictly cheaper, covering at least as much of every short row) holds no optimum,
since the swap gives a cheaper pattern of the parent.

A search over cut rows alone (no lazy conditions: the rounds' searches and every
search whose conditions are all listed) that passes a few nodes goes on in a compiled
kernel (:mod:`.network_kernel`): the same search, node for node, at a fraction of the
cost per node.

A search over cut rows alone for the optimum that passes a few nodes per candidate
asks two MILPs whether its optimum is unique (:mod:`.network_unique`); a unique optimum
is the search's own pattern, so the search stops there.  With the kernel loaded the
search first goes on compiled for a budget of nodes (most searches end there, for less
than the MILPs cost) and asks the MILPs only when it is still going: the same answer (a
unique optimum is the pattern the search finds; where none is shown the search runs on
to its end).

Whether the kernel is loaded changes the speed alone: the patterns, the budgets and the
fallback to the MILP are the same with it, without it and without numba, so a job's
pattern does not depend on the entry point that runs it (a new process or one that has
loaded the kernel before).

The search gives up (returns None) on sub-tables with too many nodes for the listing or
too many search nodes; the caller then solves the compact MILP.
"""
from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from tabprotect.errors import InfeasibleRulesError
from tabprotect.secondary.modular.network import Network
from tabprotect.secondary.modular.network_cuts import (REL_TOL, Problem, SearchLimits, cut_row,
                                                      cut_rows, cut_rows_both, _unique_rows)
from tabprotect.secondary.modular.network_bounds import _cover_bounds, _dominated_by_earlier
from tabprotect.secondary.modular.network_check import protects
from tabprotect.secondary.modular.network_scalar import row_branch
from tabprotect.secondary.modular.network_unique import unique_optimum
from tabprotect.secondary.modular.network_kernel import (SLICE_NODES, KernelState,
                                                        compiled_available, kernel_cached,
                                                        kernel_loaded, load_kernel,
                                                        search_slice)


class _ProcessWork:
    """What this process's modular calls have done so far (the kernel's load policy
    depends on it): a process with little search work never pays for loading the
    kernel, one that protects several tables loads it from its cache early."""

    def __init__(self):
        #: nodes searched by numpy, each counted by its cost (:func:`_node_weight`; the
        #: kernel is loaded once they cost about what loading it costs)
        self.numpy_nodes = 0.0
        #: modular calls begun (:func:`begin_call`)
        self.calls = 0
        #: the last call that looked for the kernel's cache (once a call)
        self.cache_looked = 0


_WORK = _ProcessWork()


def begin_call() -> None:
    """Count a modular call of this process (a second call marks a process that
    protects several tables: ``SearchLimits.load_when_warm``)."""
    _WORK.calls += 1


def _node_weight(n_rows: int) -> float:
    """A numpy node's cost in nodes of a search with few rows: each node scans every
    row's slack and its short rows' coefficients, so a search over 3,000 cut rows costs
    about four times as much per node (the kernel, looking only at the parent's short
    rows, much less)."""
    return 1.0 + n_rows / 1000


def _load_early(limits: SearchLimits) -> None:
    """Load the kernel before a network sub-table's listing, flows and search (they then
    run compiled): with ``load_first``, or when the process has begun a second modular
    call and the kernel's cache exists."""
    if not limits.compiled or kernel_loaded():
        return
    if limits.load_first and compiled_available():
        load_kernel()
        return
    if not (limits.load_when_warm and _WORK.calls >= 2 and _WORK.cache_looked < _WORK.calls):
        return
    _WORK.cache_looked = _WORK.calls
    if compiled_available() and kernel_cached():
        load_kernel()


class _Search:
    """Depth-first branch and bound over the cut rows (see the module docstring)."""

    def __init__(self, prob: Problem, rows: np.ndarray, deficit: np.ndarray,
                 lazy: list, limits: SearchLimits, deadline: float | None):
        self.prob, self.limits, self.deadline = prob, limits, deadline
        # the rows as one contiguous block: a node copies its short rows from K, several
        # times slower from a strided view (the deduplicated rows' columns)
        self.K, self.d = np.ascontiguousarray(rows), np.ascontiguousarray(deficit)
        self.KT = np.ascontiguousarray(rows.T)   # K's columns as rows (one per candidate)
        self.tol = REL_TOL * np.maximum(1.0, deficit)
        self.lazy = lazy          # [(s, j, width)] checked by maximum flows
        self.c = prob.cost
        self.c_list = prob.cost.tolist()          # the costs as Python floats (scalar use)
        #: per row, its positive coefficients as (column, coefficient) pairs once a
        #: small node has needed them
        self.K_pairs: list = [None] * len(deficit)
        self.tol_list = self.tol.tolist()
        self.best_cost = np.inf
        self.best: np.ndarray | None = None
        self.nodes = 0
        #: nodes before the search gives up (fewer when the compiled kernel takes over)
        self.node_cap = limits.max_nodes
        self.gave_up = False
        self.first_only = False
        #: the node's short rows' coefficients, costs and the branch's columns, for
        #: :func:`_dominated_by_earlier` once a second child is searched
        self.dominated: tuple | None = None

    def add_rows(self, rows: np.ndarray, deficit: np.ndarray) -> None:
        self.K = np.vstack([self.K, rows])
        self.KT = np.ascontiguousarray(self.K.T)
        self.d = np.concatenate([self.d, deficit])
        self.tol = REL_TOL * np.maximum(1.0, self.d)
        self.K_pairs += [None] * len(deficit)
        self.tol_list = self.tol.tolist()

    def run(self) -> np.ndarray | None:
        n = len(self.c)
        if self.lazy and self.limits.row_rounds:
            pick = self._row_rounds()
            if pick is not None:
                self.best_cost, self.best = float(self.c[pick].sum()), pick
                return pick
            self._list_lazy()
        if self._certified():
            return None if self.gave_up else self.best
        lim = self.limits
        weight = _node_weight(len(self.d))
        switch = lim.compiled_after if kernel_loaded() else \
            max(0, math.ceil((lim.load_after - _WORK.numpy_nodes) / weight))
        compiled = (not self.lazy and lim.compiled and switch < lim.max_nodes
                    and compiled_available())
        if compiled:
            self.node_cap = switch
        self._node(np.zeros(n, bool), np.zeros(n, bool), 0.0, self.d.copy())
        _WORK.numpy_nodes += self.nodes * weight
        if compiled and self.gave_up and self.nodes > self.node_cap:
            self._run_compiled()    # a large search: the kernel searches it again
        return self.best if self.first_only or not self.gave_up else None

    def _certified(self) -> bool:
        """A search over the rows alone for the optimum, loaded kernel or not: the first
        ``SearchLimits.certify_after`` nodes per candidate (each node counted by its cost,
        :func:`_node_weight`); a search still going then is settled by
        :func:`.network_unique.unique_optimum` when its optimum is unique (the pattern the
        search would find).  True when the search's answer is known (None when it gave
        up: ``gave_up``); else the search starts again under the usual policy.  With the
        kernel loaded, :meth:`_certified_compiled` gives the same answer."""
        lim = self.limits
        if self.lazy or self.first_only or lim.certify_after is None:
            return False
        weight = _node_weight(len(self.d))
        cap = min(math.ceil(lim.certify_after * len(self.c) / weight), lim.max_nodes)
        if lim.compiled and kernel_loaded():
            return self._certified_compiled(cap, weight)
        self._capped(cap)
        _WORK.numpy_nodes += self.nodes * weight
        if not self.gave_up or self._certify(self.best):
            return True
        self.best, self.best_cost, self.nodes, self.gave_up = None, np.inf, 0, False
        self.node_cap, self.dominated = lim.max_nodes, None
        return False

    def _certify(self, known: np.ndarray | None) -> bool:
        """The pattern :func:`.network_unique.unique_optimum` shows to be the unique
        optimum (from ``known``, the best pattern at the cap), taken as the search's
        answer; False when it shows none."""
        pick = self._certificate(known)
        if pick is None:
            return False
        self.best, self.best_cost = pick, float(self.c[pick].sum())
        self.gave_up = False
        return True

    def _certified_compiled(self, cap: int, weight: float) -> bool:
        """:meth:`_certified` with the kernel loaded: the same answer, fewer MILPs.  The
        kernel searches past the cap for ``SearchLimits.certify_compiled_after`` more
        nodes (each counted by its cost, :func:`_node_weight`): a search ending there
        needs no MILPs.  One still going asks the certificate, from the best pattern at
        the cap as numpy's search does: where it shows a unique optimum, that is the
        pattern the search finds whatever its order; where it shows none, the kernel
        searches on to the end (the search from the start finds the same pattern).  The
        nodes counted are the search's; the row rounds count at most the cap's
        (:meth:`_row_rounds`), as after a certificate."""
        st = self._kernel_state()
        ended = self._resume(st, pause=cap)
        known = st.best.copy() if st.ints[4] else None
        asked = False
        if not ended and int(st.ints[2]) >= cap:    # at the cap: on a little further
            more = self.limits.certify_compiled_after
            pause = None if more is None else cap + max(1, math.ceil(more / weight))
            ended = self._resume(st, pause=pause)
            if not ended and pause is not None and int(st.ints[2]) >= pause:
                asked = True
                pick = self._certificate(known)
                if pick is None:                    # none shown: on to the end
                    ended = self._resume(st)
        self._read(st, ended)
        _WORK.numpy_nodes += min(self.nodes, cap + 1) * weight
        if asked and pick is not None:
            self.best, self.best_cost, self.gave_up = pick, float(self.c[pick].sum()), False
        elif self.gave_up and (asked or not self._certify(known)):
            self.best, self.best_cost = None, np.inf
        return True

    def _certificate(self, known: np.ndarray | None) -> np.ndarray | None:
        """:func:`.network_unique.unique_optimum` over the search's rows, from ``known``
        (None: no unique optimum shown)."""
        lim = self.limits
        return unique_optimum(self.K, self.d, self.tol, self.c, self.deadline,
                              start_rows=lim.certify_rows, rounds=lim.certify_rounds,
                              nodes=lim.certify_nodes, known=known)

    def _capped(self, cap: int) -> None:
        """The search from the start, giving up after ``cap`` nodes: by the kernel when
        it is loaded (and ``SearchLimits.compiled``), else by numpy; the same nodes, best
        pattern and node count either way."""
        self.node_cap = cap
        if self.limits.compiled and kernel_loaded():
            self._run_compiled(cap)
        else:
            n = len(self.c)
            self._node(np.zeros(n, bool), np.zeros(n, bool), 0.0, self.d.copy())

    def _run_compiled(self, max_nodes: int | None = None) -> None:
        """The search over the rows by the compiled kernel, from the start (the same
        nodes, bounds and pattern as :meth:`_node`), in slices of nodes between which
        the deadline is checked; it gives up after ``max_nodes`` nodes (None:
        ``SearchLimits.max_nodes``)."""
        st = self._kernel_state()
        self._read(st, self._resume(st, max_nodes))

    def _kernel_state(self) -> KernelState:
        """A new kernel search over the rows (the kernel loaded first: once per process,
        not the search's own time)."""
        loading = load_kernel()
        if self.deadline is not None:
            self.deadline += loading
        return KernelState(len(self.d), len(self.c), self.d)

    def _resume(self, st: KernelState, max_nodes: int | None = None,
                pause: int | None = None) -> bool:
        """Run the kernel's search in ``st`` on, in slices between which the deadline
        is checked, until it ends (True; or gives up after ``max_nodes`` nodes), the
        deadline passes or it has searched ``pause`` nodes (False)."""
        K, KT = np.ascontiguousarray(self.K), np.ascontiguousarray(self.KT)
        lim = self.limits
        pause_at, ended = int(st.ints[2]), False
        while not ended:
            pause_at += SLICE_NODES
            if pause is not None:
                pause_at = min(pause_at, pause)
            ended = search_slice(K, KT, np.ascontiguousarray(self.tol), self.c,
                                 lim.max_nodes if max_nodes is None else max_nodes,
                                 lim.dominance, lim.dominance_after,
                                 self.first_only, pause_at, st)
            if not ended and (pause_at == pause or self.deadline is not None
                              and time.perf_counter() > self.deadline):
                break
        return ended

    def _read(self, st: KernelState, ended: bool) -> None:
        """The kernel search's nodes, outcome and best pattern, as :meth:`_node` leaves
        them."""
        self.nodes = int(st.ints[2])
        self.gave_up = not ended or bool(st.ints[3])
        self.best_cost = float(st.floats[0])
        self.best = st.best.copy() if st.ints[4] else None

    def _row_rounds(self) -> np.ndarray | None:
        """The optimum found by row generation, or None (the full search then runs,
        with the rows found).  First the search's first pattern over the known rows
        alone, as long as it violates lazy levels: their cut rows are added (cheap
        rounds, the rows near good patterns).  Then the search's optimum over the
        known rows, a lower bound: the levels it violates add their rows and the
        rounds repeat until it meets every condition -- then it is optimal.  None when
        a width condition fails (no rows to add), the rounds reach their node budget
        (``max_nodes``) or an optimum round stops at its cap
        (:meth:`_round_limits`, loaded kernel or not).  The rows known
        from the start make the full search's bounds stronger than rows met one by
        one deep in the tree."""
        nodes = certified = 0
        lim = self.limits
        for first_only in (True, False):
            while nodes <= lim.max_nodes:
                if not first_only:
                    self._load_for_rounds(certified)
                inner = _Search(self.prob, self.K, self.d, [],
                                self._round_limits(nodes, first_only, certified),
                                self.deadline)
                inner.first_only = first_only
                pick = inner.run()
                cap = None if first_only else self._certify_cap()
                # a round that asks the certificate counts the nodes up to it, whether
                # the certificate or the search that follows a failed one settles it
                nodes += inner.nodes if cap is None else min(inner.nodes, cap + 1)
                certified += cap is not None and inner.nodes > cap
                if pick is None:        # gave up, or the rows alone are infeasible
                    return None
                branch = self._lazy_branch(pick, np.zeros(len(pick), bool), every=True)
                if branch is None:
                    if not first_only:
                        return pick
                    break
                if not (len(branch) and branch[0] == -1):
                    return None         # a width condition fails: branched on below
        return None

    def _list_lazy(self) -> None:
        """After row rounds that settle nothing: every cut of the conditions left lazy
        for their free nodes alone listed as rows, when each has at most
        ``SearchLimits.list_after_rounds`` free nodes (and no width or single-contributor
        condition is lazy): the search then runs over rows alone (the certificate, the
        kernel, dominance), the same optimum as over lazy conditions."""
        lim = self.limits
        more = lim.list_after_rounds
        if more is None or more <= lim.max_free_nodes or any(
                j >= 0 or width > 0 or listed for _, _, j, width, listed in self.lazy):
            return
        wide = dataclasses.replace(lim, max_free_nodes=more)
        req, parts = self.prob.req, []
        for slot, s, _, _, _ in self.lazy:
            got = cut_rows_both(self.prob, s, float(req.need_up[slot]),
                                float(req.need_down[slot]), wide)
            if got is None:
                return
            parts += got
        both = _unique_rows(np.vstack([np.column_stack([self.K, self.d])]
                                      + [np.column_stack(p) for p in parts]))
        if len(both) > lim.max_rows:
            return
        self.K, self.d = np.zeros((0, len(self.c))), np.zeros(0)
        self.K_pairs = []
        self.add_rows(both[:, :-1], both[:, -1])
        self.lazy.clear()

    def _load_for_rounds(self, certified: int) -> bool:
        """Load the kernel (from its cache) once ``certified`` optimum rounds have needed
        the uniqueness MILPs (``SearchLimits.load_after_rounds``, one more in a process
        that has searched fewer than ``load_rounds_work`` numpy nodes): the rounds'
        searches beyond their certificates then run compiled (the same nodes, budgets
        and certificates: only faster); True when it was loaded now."""
        lim = self.limits
        if lim.load_after_rounds is None:
            return False
        after = lim.load_after_rounds + (_WORK.numpy_nodes < lim.load_rounds_work)
        if (not lim.compiled or kernel_loaded() or certified < after
                or not compiled_available()
                or not kernel_cached()):
            return False
        loading = load_kernel()
        if self.deadline is not None:
            self.deadline += loading    # (once per process: not the search's own time)
        return True

    def _certify_cap(self) -> int | None:
        """The nodes after which a search over these rows for their optimum asks the
        uniqueness MILPs (:meth:`_certified`), loaded kernel or not; None where it does
        not (``certify_after`` is None)."""
        lim = self.limits
        if lim.certify_after is None:
            return None
        return math.ceil(lim.certify_after * len(self.c) / _node_weight(len(self.d)))

    def _round_limits(self, nodes: int, first_only: bool, certified: int) -> SearchLimits:
        """A round's limits: the nodes the rounds have left; and once ``certified``
        optimum rounds have asked the uniqueness MILPs
        (``SearchLimits.certified_rounds``), an optimum round's search stops where it
        would ask them (:meth:`_certify_cap`), by numpy: the rounds then end and the
        full search, with the rows found, settles the sub-table."""
        lim = dataclasses.replace(self.limits, max_nodes=self.limits.max_nodes - nodes)
        cap = None if first_only else self._certify_cap()
        if cap is None or lim.certified_rounds is None or certified < lim.certified_rounds:
            return lim
        return dataclasses.replace(lim, max_nodes=min(cap, lim.max_nodes),
                                   certify_after=None, compiled=False)

    def _node(self, chosen: np.ndarray, excluded: np.ndarray, cost: float,
              slack: np.ndarray) -> None:
        """``slack``: what each row still lacks with the ``chosen`` candidates (the
        parent's slack less the row's coefficients of the candidate just chosen)."""
        if self.gave_up:
            return
        self.nodes += 1
        if self.nodes > self.node_cap or (
                self.deadline is not None and self.nodes % 64 == 0
                and time.perf_counter() > self.deadline):
            self.gave_up = True
            return
        short = (slack > self.tol).nonzero()[0]
        avail = ~(chosen | excluded)
        if len(short):
            branch = self._row_branch(slack, short, avail, cost)
        else:
            n_rows = len(self.d)
            branch = self._lazy_branch(chosen, avail)
            if branch is None:      # every condition holds: a pattern
                if cost < self.best_cost:
                    self.best_cost, self.best = cost, chosen.copy()
                    if self.first_only:
                        self.gave_up = True
                return
            if len(branch) and branch[0] == -1:   # rows added: look again
                slack = np.concatenate([slack, self.d[n_rows:] -
                                        self.K[n_rows:, chosen].sum(axis=1)])
                self._node_again(chosen, excluded, cost, slack)
                return
        if branch is None:
            return
        excluded = excluded.copy()
        n_rows = len(self.d)
        dominated, self.dominated = self.dominated, None
        for k, e in enumerate(branch.tolist()):
            if k and dominated is not None and self.c_list[e] + cost < self.best_cost:
                if isinstance(dominated, tuple):
                    Kc, c, cols = dominated
                    dominated = _dominated_by_earlier(Kc[:, cols], c[cols])
                if dominated[k]:
                    excluded[e] = True  # an earlier sibling does better: no optimum here
                    continue
            ce = self.c_list[e]
            if cost + ce >= self.best_cost - 1e-9 * max(1.0, self.best_cost):
                excluded[e] = True
                continue
            chosen[e] = True
            if len(self.d) > n_rows:    # rows added below: their slack as it stands
                slack = np.concatenate([slack, self.d[n_rows:] -
                                        self.K[n_rows:, chosen & (np.arange(len(chosen))
                                                                  != e)].sum(axis=1)])
                n_rows = len(self.d)
            self._node(chosen, excluded, cost + ce, slack - self.KT[e])
            chosen[e] = False
            excluded[e] = True
            if self.gave_up:
                return

    def _node_again(self, chosen, excluded, cost, slack) -> None:
        self.nodes -= 1
        self._node(chosen, excluded, cost, slack)

    def _row_branch(self, slack, short, avail, cost) -> np.ndarray | None:
        """The candidates to branch on (best ratio first), or None to drop the node.

        The row branched on is the first of those with the fewest candidates whose
        fractional cover costs most.  The node is dropped when some row cannot be met
        or when the dearest fractional cover of any row reaches the best pattern
        found; before the first pattern only a tie of fewest candidates needs the
        fractional covers."""
        idx = avail.nonzero()[0]
        if len(short) * len(idx) < self.limits.scalar_below:
            return self._scalar_branch(slack, short, avail, idx, cost)
        need = slack[short]
        Kc = np.minimum(self.K.take(short, axis=0).take(idx, axis=1), need[:, None])
        c = self.c[idx]
        pos = Kc > 0
        low = need - self.tol[short]
        # (ufunc reductions: what ndarray.sum and .min call, without their wrappers)
        if not len(idx) or (np.add.reduce(Kc, axis=1) < low).any():
            return None
        finite = math.isfinite(self.best_cost)
        if finite:
            limit = self.best_cost - 1e-9 * max(1.0, self.best_cost)
            ratio = np.divide(c, Kc, out=np.full(Kc.shape, np.inf), where=pos)
            # a row's cover costs at least what it lacks at its cheapest cost per unit:
            # most nodes the covers drop, this drops without sorting (the same nodes)
            if (cost + low * np.minimum.reduce(ratio, axis=1) * (1 - 1e-12) >= limit).any():
                return None
        support = np.add.reduce(pos, axis=1)
        few = (support == np.minimum.reduce(support)).nonzero()[0]
        if finite:
            # exact covers only of the rows to pick from and of those whose cover may
            # reach the limit: a candidate filling a row alone caps its cover
            near = cost + np.minimum.reduce(np.where(Kc >= need[:, None], c, np.inf),
                                            axis=1) * (1 + 1e-9) >= limit
            near[few] = True
            rows = near.nonzero()[0]
            bound = _cover_bounds(Kc[rows], need[rows], c, pos[rows], ratio[rows])
            if cost + bound.max() >= limit:
                return None
            r = int(few[np.argmax(bound[np.searchsorted(rows, few)])])
        elif len(few) > 1:
            r = int(few[np.argmax(_cover_bounds(Kc[few], need[few], c, pos[few]))])
        else:
            r = int(few[0])
        on = pos[r]
        ratio = c[on] / Kc[r][on]
        order = np.lexsort((idx[on], ratio))
        if not self.lazy and self.limits.dominance and self.nodes > self.limits.dominance_after:
            self.dominated = (Kc, c, on.nonzero()[0][order])   # judged when needed
        return idx[on][order]

    def _scalar_branch(self, slack, short, avail, idx, cost) -> np.ndarray | None:
        """:meth:`_row_branch` of a small node by :func:`.network_scalar.row_branch`
        (the same decisions; each row's positive coefficients kept as pairs)."""
        rows, tol = self.K_pairs, self.tol_list
        short_list = short.tolist()
        for r in short_list:
            if rows[r] is None:
                nz = (self.K[r] > 0).nonzero()[0]
                rows[r] = list(zip(nz.tolist(), self.K[r, nz].tolist()))
        need = slack[short]
        branch = row_branch([rows[r] for r in short_list], need.tolist(),
                            [tol[r] for r in short_list], avail.tolist(), self.c_list, cost,
                            self.best_cost,
                            lambda i: float(np.minimum(self.K[short_list[i], idx],
                                                       need[i]).sum()))
        if branch is None:
            return None
        branch = np.array(branch, dtype=np.int64)
        if not self.lazy and self.limits.dominance and self.nodes > self.limits.dominance_after:
            Kc = np.minimum(self.K.take(short, axis=0).take(idx, axis=1), need[:, None])
            self.dominated = (Kc, self.c[idx], np.searchsorted(idx, branch))
        return branch

    def _lazy_branch(self, chosen: np.ndarray, avail: np.ndarray, every: bool = False):
        """None when every lazy condition holds; ``[-1]`` after adding cut rows of a
        violated level (all its cuts when they can be listed, else the minimum cut);
        else the candidates crossing the cuts of a violated width (empty: the node is
        dropped).  ``every``: add the rows of every violated level, not just the
        first's."""
        prob = self.prob
        added_any, width_branch = False, None
        z = prob.pattern(chosen)
        req = prob.req
        for k, (slot, s, j, width, listed) in enumerate(self.lazy):
            up, down, sides = prob.moves(z, s, j)
            nu, nd = float(req.need_up[slot]), float(req.need_down[slot])
            tol = REL_TOL * max(1.0, nu, nd, width)
            added = False
            for kind, need, got, side in (("up", nu, up, sides[0]),
                                          ("down", nd, down, sides[1])):
                if need <= 0 or got >= need - tol:
                    continue
                rows = cut_rows(prob, s, kind, need, j, self.limits) if not listed \
                    else None
                if rows is None:
                    rows = cut_row(prob, side, s, j, need)
                else:
                    # every cut of this level is a row now
                    self.lazy[k] = (slot, s, j, width, True)
                if len(rows[1]):
                    self.add_rows(*rows)
                    added = True
            if added and not every:
                return np.array([-1])
            added_any |= added
            if not added and width > 0 and up + down < width - tol:
                skip = (s,) if j < 0 else (s, j)
                mask = prob.crossing(sides[0], 1, skip) | prob.crossing(sides[1], 1, skip)
                on = mask & avail
                idx = on.nonzero()[0]
                if not every:
                    return idx[np.lexsort((idx, self.c[on]))]
                if width_branch is None:
                    width_branch = idx[np.lexsort((idx, self.c[on]))]
        return np.array([-1]) if added_any else width_branch


def network_pattern(sub, req, cost: np.ndarray, cand: np.ndarray, *,
                    limits: SearchLimits = SearchLimits(),
                    deadline: float | None = None,
                    net: Network | None = None) -> np.ndarray | None:
    """The minimum-cost pattern (bool mask over ``sub``'s cells) of a network
    sub-table, exactly; None when the sub-table is no network or too large for the
    search (the caller solves the MILP).

    ``req``: the sub-table's :class:`~tabprotect.secondary.attack_requirements.Requirements`;
    ``cand``: the cells that may be added; ``net``: ``Network.of(sub.relations)`` when
    the caller has it.  Raises InfeasibleRulesError when no pattern protects the
    primaries.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> from tabprotect.secondary.attack_requirements import Requirements
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2],
    ...                       status=list("SSSSUSSSS"), upl=[0, 0, 0, 0, 1, 0, 0, 0, 0])
    >>> z = network_pattern(t, Requirements.from_table(t, singleton=False), t.value,
    ...                     t.status == "S")
    >>> np.flatnonzero(z).tolist()
    [4, 5, 7, 8]
    """
    prepared = prepared_search(sub, req, cost, cand, limits=limits, deadline=deadline,
                               net=net)
    if prepared is None:
        return None
    prob, search = prepared
    pick = search.run()
    if pick is None:
        if search.gave_up:
            return None
        raise InfeasibleRulesError("the sub-table's primaries cannot be protected with its "
                                   "candidate cells")
    pick = _drop_redundant(search, pick)
    z = prob.pattern(pick)
    if not search.lazy:
        # every condition is a listed cut row and the pattern meets every row: each
        # minimum cut holds its requirement, so each maximum flow does (max-flow
        # min-cut); the flows would only repeat it
        return z
    return z if protects(prob, z) else None


def prepared_search(sub, req, cost: np.ndarray, cand: np.ndarray, *,
                    limits: SearchLimits = SearchLimits(), deadline: float | None = None,
                    net: Network | None = None) -> tuple[Problem, "_Search"] | None:
    """:func:`network_pattern`'s problem and search, built but not run (its cut rows
    listed, its other conditions lazy); None when the sub-table is no network or has
    too many rows."""
    net = Network.of(sub.relations) if net is None else net
    if net is None:
        return None
    _load_early(limits)
    fixed = np.isin(sub.status, ("U", "M"))
    prob = Problem(net, req, cost, np.asarray(cand, bool), fixed)
    rows, deficits, lazy = [], [], []
    for slot, s in enumerate(req.primary):
        s = int(s)
        nu, nd = float(req.need_up[slot]), float(req.need_down[slot])
        width = float(req.need_width[slot])
        binding = width if width > (nu + nd) * (1 + REL_TOL) else 0.0
        got = cut_rows_both(prob, s, nu, nd, limits)
        listed = got is not None
        for part in got or ():  # None: too many cuts to list, minimum cuts as they are met
            rows.append(part[0])
            deficits.append(part[1])
        if binding > 0 or not listed:
            lazy.append((slot, s, -1, binding, listed))
        if req.singleton.any():
            # the attacker's own cell left out: the same cuts, listed once violated
            for j in np.flatnonzero(req.singleton & prob.available):
                if int(j) != s:
                    lazy.append((slot, s, int(j), binding, False))
    K = np.vstack(rows) if rows else np.zeros((0, len(prob.cand_idx)))
    d = np.concatenate(deficits) if deficits else np.zeros(0)
    if len(d):
        both = _unique_rows(np.column_stack([K, d]))
        K, d = both[:, :-1], both[:, -1]
    if len(d) > limits.max_rows:
        return None
    return prob, _Search(prob, K, d, lazy, limits, deadline)


def _drop_redundant(search: _Search, pick: np.ndarray) -> np.ndarray:
    """Leave out free candidates (cost 0) that no condition needs."""
    for e in np.flatnonzero(pick & (search.c <= 0)):
        pick[e] = False
        slack = search.d - search.K[:, pick].sum(axis=1)
        if (slack > search.tol).any() or search._lazy_branch(pick, ~pick) is not None:
            pick[e] = True
    return pick
