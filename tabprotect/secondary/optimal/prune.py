"""Pruning: publish again the suppressions a protected pattern does not need, dearest
first, each removal kept only when every attacker condition stays met."""
from __future__ import annotations

import time

import highspy
import numpy as np
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram
from tabprotect.model.relations import component_roots
from tabprotect.secondary.optimal.options import OptimalOptions
from tabprotect.secondary.optimal.oracle import DUAL_SIMPLEX, LPCount
from tabprotect.secondary.attacker_oracle import AttackerOracle


def prune(oracle: AttackerOracle, pattern: np.ndarray, fixed: np.ndarray, cost: np.ndarray,
          deadline: float | None, hint: np.ndarray | None = None,
          options: OptimalOptions | None = None, count: LPCount | None = None,
          slack: float | None = None) -> np.ndarray:
    """Drop suppressions a protected pattern does not need, dearest first.

    ``slack`` is how far the pattern's cost is above a lower bound on every protected
    pattern's cost (None: no bound): the removals it leaves are all a prune can make,
    so a cell dearer than what is left of it is never tried (no LP: it stays).

    With ``options.witness_prune`` the attacker solutions (witnesses) decide: a cell no
    witness moves can go at once (every witness stays feasible), and removing a moved
    cell only needs the attacker LPs of the conditions whose witness moves it
    (:func:`witness_prune`); the result is confirmed by the oracle's full check.
    Otherwise (or when that confirmation fails) each removal is kept only when the
    oracle's full check still finds every condition met.  The witness LPs are counted in
    ``count`` (the oracle counts its own)."""
    opt = options if options is not None else OptimalOptions()
    if opt.witness_prune:
        try:
            out = witness_prune(oracle, pattern, fixed, cost, deadline, hint,
                                max_entries=opt.witness_max_entries, count=count,
                                warm_entries=opt.witness_warm_entries, slack=slack,
                                pin_propagation=opt.prune_pin_propagation)
        except RuntimeError:
            out = None
        if out is not None and (out == pattern).all():
            return out
        # a witness prune that ended at the deadline is still worth its one full check:
        # the confirmation may run prune_confirm_seconds past it
        confirm_by = None if deadline is None else max(
            deadline, time.perf_counter() + opt.prune_confirm_seconds)
        if out is not None and oracle.check(out, cuts=False, first_only=True,
                                            deadline=confirm_by).ok:
            return out
    pattern = pattern.copy()
    extra = np.flatnonzero(pattern & ~fixed)
    left = _Slack(slack, cost[pattern & ~fixed])
    for i in extra[removal_order(cost[extra], None if hint is None else hint[extra])]:
        if deadline is not None and time.perf_counter() >= deadline:
            break
        if not left.allows(cost[i]):
            continue
        pattern[i] = False
        if not oracle.check(pattern, cuts=False, first_only=True, deadline=deadline).ok:
            pattern[i] = True
        else:
            left.take(cost[i])
    return pattern


class _Slack:
    """What a lower bound leaves a prune to remove: a removal that would take the
    pattern's cost below the bound cannot leave it protected.  The margin (relative to
    the pattern's cost) keeps rounding in the bound and the sums from ruling out a
    removal that lands on the bound."""

    def __init__(self, slack: float | None, costs: np.ndarray):
        self.left = np.inf if slack is None else float(slack)
        self.margin = 1e-6 * max(1.0, float(np.abs(costs).sum()))

    def allows(self, c: float) -> bool:
        return c <= self.left + self.margin

    def take(self, c: float) -> None:
        self.left -= c


def removal_order(cost: np.ndarray, hint: np.ndarray | None) -> np.ndarray:
    """Dearest first; ties by increasing ``hint``."""
    if hint is None:
        return np.argsort(-cost, kind="stable")
    return np.lexsort((hint, -cost))


class _Witnesses:
    """The attacker LPs over a pattern's suppressed cells ``sup``, one per condition
    group (primary slot ``p``, single-contributor attacker ``j`` or -1) and direction,
    re-solved as cells are published (their columns fixed at 0).

    The attacker LP splits by the connected components of the suppressed cells (two
    cells are linked when a relation holds both): a relation's row only holds cells of
    one component, and outside the primary's component every move only costs.  Each LP
    is therefore stated over the primary's component alone, its optimum being the whole
    LP's with no move elsewhere; a table's suppressions fall into many small components,
    so the LPs are a fraction of the pattern's size.

    A witness should move few cells (a removal then re-solves few LPs), but a simplex
    vertex of ``max y_s`` leaves almost every cell at one of its bounds.  Each LP is
    therefore stated over ``y = y+ - y-`` (both non-negative), the primary moves at most
    as far as its conditions ask (:meth:`cap`), and every other move costs ``eps`` per
    unit: the optimum reaches the cap along the fewest, shortest cycles.  A value below
    the cap is confirmed without the penalty (the penalty can only hold a move back).

    Each condition and direction keeps its own HiGHS model while ``warm_entries``
    (the columns of the models kept) allows: its objective never changes, so a
    publication is a bound change and the dual simplex re-solves from the last optimal
    basis in a few iterations.  Past that budget the remaining conditions share one
    model per component whose objective is swapped per solve.  A model catches up with
    the publications made since its last solve just before it is solved."""

    def __init__(self, oracle: AttackerOracle, pattern: np.ndarray, sup: np.ndarray,
                 warm_entries: int = 0, count: LPCount | None = None):
        req = self.req = oracle.req
        self.sup = sup
        n = self.n = len(sup)
        sub = oracle.A[:, sup].tocsr()
        self.rows = sub[np.flatnonzero(np.diff(sub.indptr) > 0)]
        self.hi = np.concatenate([req.up[sup], req.down[sup]]).astype(float)
        self.eps = max(1e-6, 0.1 / max(n, 100))
        self.local = np.full(len(pattern), -1, np.int64)
        self.local[sup] = np.arange(n)
        self.cur_hi = self.hi.copy()
        self.comp = _cell_components(self.rows, n)
        #: component -> (its cells in sup, its columns in the pattern's 2n, its LP)
        self.parts: dict = {}
        self.warm_left = warm_entries
        #: (p, j, sign) -> [model, the column upper bounds it holds, component]
        self.models: dict = {}
        #: component -> the entry its conditions share once warm_entries is spent
        self.shared: dict = {}
        #: the last witness (:meth:`solve`): its cells (positions in sup), signed moves
        self.last: tuple | None = None
        #: the LPs solved (the search's work clock)
        self.count = count if count is not None else LPCount()

    def _part(self, c: int) -> tuple:
        """Component ``c``'s cells (positions in ``sup``), their columns in ``y+ | y-``
        and its attacker LP (built once)."""
        part = self.parts.get(c)
        if part is None:
            cells = np.flatnonzero(self.comp == c)
            m = len(cells)
            block = self.rows[:, cells].tocsr()
            block = block[np.flatnonzero(np.diff(block.indptr) > 0)]
            cols = np.concatenate([cells, cells + self.n])
            zeros = np.zeros(block.shape[0])
            lp = LinearProgram(c=np.zeros(2 * m), A=sp.hstack([block, -block]).tocsr(),
                               row_lower=zeros, row_upper=zeros,
                               col_lower=np.zeros(2 * m), col_upper=self.hi[cols])
            part = self.parts[c] = (cells, cols, lp)
        return part

    def publish(self, k) -> None:
        """Fix the cells ``k`` (positions in ``sup``) at 0."""
        k = np.asarray(k, np.int64)
        self.cur_hi[k] = self.cur_hi[k + self.n] = 0.0

    def restore(self, k: int) -> None:
        """Undo :meth:`publish` for the cell ``k``."""
        for c in (k, k + self.n):
            self.cur_hi[c] = self.hi[c]

    @staticmethod
    def _objective(m: int, t: int, sign: float, penalty: float) -> np.ndarray:
        """``sign * y_t - penalty * |y|`` over a component of ``m`` cells."""
        c = np.full(2 * m, -penalty)
        c[t], c[t + m] = sign, -sign
        return c

    def _model(self, p: int, j: int, k: int, sign: float) -> tuple[HighsModel, int]:
        """The model of condition (p, j) and direction ``sign`` over the component of
        the primary ``k`` (its position in ``sup``), its bounds brought up to date (the
        attacker ``j`` fixed at 0, the primary capped) and its objective
        ``sign * y_k - eps * |y|``; with the primary's position in the component."""
        c = int(self.comp[k])
        cells, cols, lp = self._part(c)
        m = len(cells)
        t = int(np.searchsorted(cells, k))
        key = (p, j, sign)
        entry = self.models.get(key)
        if entry is None:
            if self.warm_left >= 2 * m or c not in self.shared:
                # small LPs, mostly re-solved warm: presolve costs more than it saves
                model = HighsModel(lp, simplex_strategy=DUAL_SIMPLEX, presolve="off")
                entry = [model, lp.col_upper.copy()]
                if self.warm_left >= 2 * m:
                    self.warm_left -= 2 * m
                    self.models[key] = entry
                else:
                    self.shared[c] = entry
            else:
                entry = self.shared[c]
            entry[0].set_objective(self._objective(m, t, sign, self.eps), sense="max")
        hi = self.cur_hi[cols]
        if j >= 0 and self.comp[self.local[j]] == c:
            u = int(np.searchsorted(cells, self.local[j]))
            hi[u] = hi[u + m] = 0.0
        # the primary moves no further than its conditions ask
        at = t if sign > 0 else t + m
        hi[at] = min(hi[at], self.cap(p, sign))
        changed = np.flatnonzero(entry[1] != hi)
        if changed.size:
            entry[0].set_col_bounds(changed, np.zeros(changed.size), hi[changed])
            entry[1][changed] = hi[changed]
        return entry[0], t

    def directions(self, p: int) -> list[float]:
        """The directions (+1 up, -1 down) whose attacker LP primary slot ``p`` needs."""
        req = self.req
        return [sign for need, sign in ((req.need_up[p], 1.0), (req.need_down[p], -1.0))
                if need > 0 or req.need_width[p] > 0]

    def cap(self, p: int, sign: float) -> float:
        """How far primary slot ``p`` needs to move in direction ``sign``: its level
        that way or its sliding width, whichever is larger.  A move capped there meets
        the conditions exactly when the uncapped one does (the other way's move is never
        negative: the true values are feasible)."""
        req = self.req
        need = req.need_up[p] if sign > 0 else req.need_down[p]
        return float(max(need, req.need_width[p]))

    def solve(self, p: int, j: int, sign: float) -> tuple[float, np.ndarray]:
        """(the attacker's best move of the primary in direction ``sign``, capped at
        :meth:`cap`; the support mask of the witness over ``sup``)."""
        k = int(self.local[int(self.req.primary[p])])
        model, t = self._model(p, j, k, sign)
        cells = self.parts[int(self.comp[k])][0]
        m = len(cells)
        x = self._witness(model)
        self.count.add(1)
        move = sign * float(x[t] - x[t + m])
        cap = self.cap(p, sign)
        if move < cap - self.req.tol[p]:
            self.count.add(1)
            # the penalty may have held the move back: the exact optimum decides
            model.set_objective(self._objective(m, t, sign, 0.0), sense="max")
            x = self._witness(model)
            move = sign * float(x[t] - x[t + m])
            model.set_objective(self._objective(m, t, sign, self.eps), sense="max")
        signed = x[:m] - x[m:]
        y = np.abs(signed)
        used = np.zeros(self.n, bool)
        used[cells] = y > 1e-9 * max(1.0, float(y.max()))
        self.last = (cells, signed)
        return move, used

    @staticmethod
    def _witness(model: HighsModel) -> np.ndarray:
        """The optimal solution.  HiGHS is run directly (no result record per LP); any
        status but optimal goes through the wrapper's solve, which confirms doubtful
        answers from scratch."""
        h = model.highs
        h.run()
        if h.getModelStatus() == highspy.HighsModelStatus.kOptimal:
            return np.array(h.getSolution().col_value)
        res = model.solve()
        if res.status != "optimal":
            raise RuntimeError(f"attacker LP ended with status {res.status}")
        return np.asarray(res.x)

    def met(self, p: int, up: float, down: float) -> bool:
        """Primary slot ``p``'s conditions hold with these attacker moves."""
        req = self.req
        tol = req.tol[p]
        if req.need_up[p] > 0 and up < req.need_up[p] - tol:
            return False
        if req.need_down[p] > 0 and down < req.need_down[p] - tol:
            return False
        if req.need_width[p] > 0 and up + down < req.need_width[p] - tol:
            return False
        return True


class _PinnedCells:
    """The suppressed cells the relations pin at their true value for the outside
    intruder: a relation whose suppressed cells all but one are pinned (or cannot move)
    gives that one away as well.  A removal that pins a primary with a level leaves it
    exactly disclosed, so it fails whatever the attacker LPs say (the single-contributor
    attackers, which know more, as well): :meth:`pins_primary` finds that by
    propagation over the relations next to the cell, without an LP.

    ``rows`` are the relations over the suppressed cells (``_Witnesses.rows``),
    ``movable`` the cells with a range in some direction, ``targets`` the primaries
    with a level (all as positions in ``sup``)."""

    def __init__(self, rows: sp.csr_matrix, movable: np.ndarray, targets: np.ndarray):
        rows = rows.copy()
        rows.eliminate_zeros()
        self.rows = rows.tocsr()
        self.cols = rows.tocsc()
        self.free = np.asarray(movable, bool).copy()
        self.count = np.diff(self.rows[:, np.flatnonzero(self.free)].tocsr().indptr)
        self.target = np.zeros(len(self.free), bool)
        self.target[targets] = True
        self._pin(None, rows=np.flatnonzero(self.count == 1))

    def pins_primary(self, k: int) -> bool:
        """Publishing cell ``k`` pins a primary with a level (the state is left as
        it was)."""
        if not self.free[k]:
            return False
        undo: list = []
        hit = self._pin(undo, start=k)
        for c in reversed(undo):
            self.free[c] = True
            self.count[self.cols.indices[self.cols.indptr[c]:self.cols.indptr[c + 1]]] += 1
        return hit

    def publish(self, k: int) -> None:
        """Cell ``k`` published (and what that pins)."""
        if self.free[k]:
            self._pin(None, start=k)

    def _pin(self, undo: list | None, rows=(), start: int | None = None) -> bool:
        """Pin ``start`` and the cells of ``rows`` left alone, then what they leave
        alone in turn.  With ``undo`` (a list: a trial) the pinned cells go to it and
        the propagation stops at the first target pinned (True); without, it is a
        publication the LPs accepted, which pins no target."""
        C, free, count = self.cols, self.free, self.count
        queue = [] if start is None else [start]
        for r in rows:
            queue += self._last_free(r)
        while queue:
            c = queue.pop()
            if not free[c]:
                continue
            if self.target[c] and undo is not None:
                return True
            free[c] = False
            if undo is not None:
                undo.append(c)
            touched = C.indices[C.indptr[c]:C.indptr[c + 1]]
            count[touched] -= 1
            for r in touched[count[touched] == 1]:
                queue += self._last_free(r)
        return False

    def _last_free(self, r: int) -> list:
        """The cells of relation ``r`` not pinned yet."""
        cells = self.rows.indices[self.rows.indptr[r]:self.rows.indptr[r + 1]]
        return cells[self.free[cells]].tolist()


def _cell_components(rows: sp.csr_matrix, n: int) -> np.ndarray:
    """The component of each of ``n`` cells, two cells linked when a row of ``rows``
    (relations x cells) holds both; a cell in no row is a component of its own (the
    relations as nodes ``0..m-1``, the cells after them)."""
    m = rows.shape[0]
    row = np.repeat(np.arange(m), np.diff(rows.indptr))
    return component_roots(row, m + rows.indices, m + n)[m:]


def _condition_groups(req, pattern: np.ndarray, sup: np.ndarray) -> list | None:
    """(slot p, attacker j) of every condition; j = -1 for the outside intruder.  None
    when a primary is not suppressed."""
    groups = []
    single = sup[req.singleton[sup]]
    for p, s in enumerate(req.primary):
        if not pattern[s]:
            return None
        if req.need_up[p] <= 0 and req.need_down[p] <= 0 and req.need_width[p] <= 0:
            continue
        for j in [-1] + [int(j) for j in single if req.attacks(int(j), int(s))]:
            groups.append((p, j))
    return groups


def witness_prune(oracle: AttackerOracle, pattern: np.ndarray, fixed: np.ndarray,
                  cost: np.ndarray, deadline: float | None,
                  hint: np.ndarray | None = None, *,
                  max_entries: int = 50_000_000,
                  warm_entries: int = 500_000,
                  count: LPCount | None = None,
                  slack: float | None = None,
                  pin_propagation: bool = True) -> np.ndarray | None:
    """Witness-based pruning of a protected pattern (None when it is found not
    protected, or when the witness map would exceed ``max_entries`` (condition, cell)
    entries).

    For each primary ``s`` (and single-contributor attacker ``j``) in a component of the
    suppressed cells that holds a cell the prune may try, the attacker LPs ``max +-y_s``
    over the suppressed cells are solved once; their optimal ``y`` are the witnesses
    (the other primaries' conditions stay as they are whatever the prune publishes, see
    :func:`_groups_near`).  Publishing a cell ``i`` that a witness leaves at 0 keeps that
    witness feasible, so its optimum cannot drop: only conditions whose witness moves
    ``i`` are re-solved (with ``y_i = 0``); a cell no witness moves goes without any LP.
    ``warm_entries`` bounds the models kept warm per condition (see :class:`_Witnesses`);
    the LPs solved are counted in ``count``.  A cell dearer than what ``slack`` (see
    :func:`prune`) leaves is not tried; with no cell left to try no LP is solved.
    With ``pin_propagation`` a removal that pins a primary through the relations
    (:class:`_PinnedCells`) is rejected without an LP: the LPs would reject it too.
    """
    req = oracle.req
    sup = np.flatnonzero(pattern)
    if len(sup) == 0:
        return pattern.copy()
    is_prim = np.zeros(len(pattern), bool)
    is_prim[req.primary] = True
    left = _Slack(slack, cost[pattern & ~fixed])
    order = np.flatnonzero(~fixed[sup] & ~is_prim[sup])
    order = order[np.array([left.allows(c) for c in cost[sup[order]]], bool)]
    if len(order) == 0:
        return pattern.copy()
    wit = _Witnesses(oracle, pattern, sup, warm_entries, count)
    groups = _condition_groups(req, pattern, sup)
    if groups is None:
        return None
    groups = _groups_near(wit, groups, order)
    # one attacker LP per condition group and direction: (group, sign)
    lps = [(g, sign) for g, (p, _) in enumerate(groups) for sign in wit.directions(p)]
    if len(lps) * len(sup) > max_entries:
        return None  # the witness map would not fit: the caller prunes check by check
    uses = np.zeros((len(lps), len(sup)), bool)  # LPs x suppressed cells (small)
    moves = np.zeros((len(groups), 2))           # best move up, down per group
    plain = _plain_rows(groups, lps)
    if not _first_witnesses(wit, groups, lps, plain, moves, uses, deadline):
        return None  # no time for the witnesses: the caller keeps the pattern
    if not all(wit.met(p, *moves[g]) for g, (p, _) in enumerate(groups)):
        return None
    out = pattern.copy()
    pinned = (_PinnedCells(wit.rows, wit.hi[:len(sup)] + wit.hi[len(sup):] > 0,
                           wit.local[req.primary[_with_level(req)]])
              if pin_propagation else None)
    # dearest first; a cell no witness moves goes at no cost in its turn (not all such
    # cells at once up front: with sparse witnesses that would publish cheap cells
    # before the dear ones and leave a dearer pattern)
    order = order[removal_order(cost[sup[order]],
                                None if hint is None else hint[sup[order]])]
    for k in order:
        if deadline is not None and time.perf_counter() >= deadline:
            break
        if not left.allows(cost[sup[k]]) or (pinned is not None
                                              and pinned.pins_primary(k)):
            continue
        wit.publish([k])
        # only the LPs whose witness moves k: the others keep their optimum
        new = _resolve(wit, groups, lps, np.flatnonzero(uses[:, k]), moves, uses, plain)
        if new is None:
            wit.restore(k)
            continue
        out[sup[k]] = False
        left.take(cost[sup[k]])
        if pinned is not None:
            pinned.publish(k)
        for r, (move, used) in new.items():
            g, sign = lps[r]
            moves[g, int(sign < 0)] = move
            uses[r] = used
    return out


def _with_level(req) -> np.ndarray:
    """The primary slots with a level that no move at all meets (beyond the
    tolerance :meth:`_Witnesses.met` allows)."""
    return np.maximum(np.maximum(req.need_up, req.need_down), req.need_width) > req.tol


def _first_witnesses(wit: _Witnesses, groups: list, lps: list, plain: dict,
                     moves: np.ndarray, uses: np.ndarray, deadline: float | None) -> bool:
    """Each LP row's first witness (False when the deadline stopped them).  An
    outside intruder's witness for one primary is a feasible attacker move for every
    primary it moves: one that moves primary ``p`` as far as ``p``'s row asks serves as
    that row's witness too (any feasible move meeting the level does; the capped LP
    only makes witnesses sparse), and the row's LP is not solved; so does its negation
    where it fits the cells' ranges.  The rows go by decreasing cap: a witness moves
    the other primaries on its cycles about as far as its own, which serves those whose
    cap is no larger.  The rows of one primary and direction keep their order (the
    outside intruder's first, see :func:`_solve_row`)."""
    is_prim = np.zeros(wit.n, bool)
    is_prim[wit.local[wit.req.primary]] = True
    #: primary's position in sup -> [(row, its signed move in that row's witness)]
    reach: dict = {}
    caps = [wit.cap(groups[g][0], sign) for g, sign in lps]
    for r in sorted(range(len(lps)), key=lambda r: (-caps[r], r)):
        g, sign = lps[r]
        if deadline is not None and time.perf_counter() >= deadline:
            return False
        p, j = groups[g]
        k = int(wit.local[int(wit.req.primary[p])])
        if j < 0:
            need = wit.cap(p, sign) - wit.req.tol[p]
            hit = next(((r2, yk) for r2, yk in reach.get(k, ()) if sign * yk >= need),
                       None)
            if hit is not None:
                moves[g, int(sign < 0)] = sign * hit[1]
                uses[r] = uses[hit[0]]
                continue
        moves[g, int(sign < 0)], uses[r] = _solve_row(wit, groups, lps, plain, r, {},
                                                      moves, uses)
        if j < 0:
            cells, signed = wit.last
            # its negation is a move too (A y = 0) when each cell's move fits the range
            # of the other direction
            back = np.where(signed > 0, wit.cur_hi[cells + wit.n], wit.cur_hi[cells])
            flips = (1.0, -1.0) if (np.abs(signed) <= back).all() else (1.0,)
            for t in np.flatnonzero(is_prim[cells] & (signed != 0)):
                for flip in flips:
                    reach.setdefault(int(cells[t]), []).append((r, flip * float(signed[t])))
    return True


def _groups_near(wit: _Witnesses, groups: list, order: np.ndarray) -> list:
    """The condition groups whose primary lies in a component of the suppressed cells
    that holds a cell the prune may try (positions ``order`` in ``sup``).  A primary's
    attacker LP spans its own component alone (see :class:`_Witnesses`), so publishing
    a cell of another component leaves its optimum as it is, and no witness of it ever
    moves a cell tried: its LPs decide nothing."""
    near = np.zeros(int(wit.comp.max()) + 1, bool)
    near[wit.comp[order]] = True
    local, primary = wit.local, wit.req.primary
    return [(p, j) for p, j in groups if near[wit.comp[local[int(primary[p])]]]]


def _plain_rows(groups: list, lps: list) -> dict:
    """{(slot p, sign): LP row of the outside intruder's condition}."""
    return {(groups[g][0], sign): r for r, (g, sign) in enumerate(lps) if groups[g][1] < 0}


def _solve_row(wit: _Witnesses, groups: list, lps: list, plain: dict, r: int, new: dict,
               moves: np.ndarray, uses: np.ndarray) -> tuple[float, np.ndarray]:
    """LP row ``r``'s (move, witness support) in the current state.  A single-contributor
    attacker ``j``'s LP is the outside intruder's with ``y_j = 0``: when the intruder's
    current witness (``new``, else the stored one; it always comes first) leaves ``j`` at
    0 it is feasible there, so optimal, and no LP is solved."""
    g, sign = lps[r]
    p, j = groups[g]
    rp = plain.get((p, sign))
    if j >= 0 and rp is not None:
        move, used = new[rp] if rp in new else (moves[lps[rp][0], int(sign < 0)], uses[rp])
        if not used[wit.local[j]]:
            return move, used.copy()
    return wit.solve(p, j, sign)


def _resolve(wit: _Witnesses, groups: list, lps: list, rows: np.ndarray,
             moves: np.ndarray, uses: np.ndarray, plain: dict) -> dict | None:
    """Re-solve the attacker LPs ``rows`` (by group, the outside intruder's first); None
    as soon as a group's conditions fail, else {row: (move, witness support)}."""
    new: dict = {}
    by_group: dict = {}
    for r in np.sort(rows):
        by_group.setdefault(lps[r][0], []).append(int(r))
    for g, rs in by_group.items():
        m = moves[g].copy()
        for r in rs:
            sign = lps[r][1]
            new[r] = _solve_row(wit, groups, lps, plain, r, new, moves, uses)
            m[int(sign < 0)] = new[r][0]
        if not wit.met(groups[g][0], *m):
            return None
    return new
