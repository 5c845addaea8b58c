"""Optimal secondary suppression (Fischetti & Salazar-González): the minimum-cost pattern
that meets every primary cell's upper, lower and sliding protection levels.

Two exact engines share the attacker oracle of :mod:`tabprotect.secondary.repair`:

* ``compact`` — one MILP: binary ``z_i`` per candidate cell and, per primary cell and
  direction, a deviation vector ``f`` with ``A f = 0``, ``-(a_i - lb_i) z_i <= f_i <=
  (ub_i - a_i) z_i`` and ``f_s >= UPL'_s`` (``<= -LPL'_s``).  Needs finite deviation
  ranges: given bounds, or bounds the relations imply for every pattern
  (:func:`~tabprotect.secondary.repair.derived_upper_bounds`); never a big-M.  Used for
  small tables; memory grows with primaries x cells.
* ``benders`` — row generation: a master over ``z`` only, with the capacity cuts derived
  from the duals of the attacker LPs, added until every attacker LP is satisfied.  Cut
  coefficients are capped at the right-hand side, so infinite bounds need no big-M.
  Memory grows with the cuts.  The master's LP relaxation is tightened first (fractional
  separation, Chvatal-Gomory rounding of the cuts, bridgeless rows), then either our own
  branch-and-cut on that LP (``search="bc"``, default: cuts at every node, best bound
  with plunging, reduced-cost fixing) or the integer master re-solved by HiGHS after each
  round of cuts (``search="milp"``), until a proof or the time limit (best protected
  pattern, flagged unproven, with the gap to the bound).

Single-contributor attackers (``freq == 1``) are part of the model: for a primary ``s``
and a single-contributor cell ``j`` the attacker problem with ``y_j = 0`` must also be
satisfied.  The initial master holds, for each primary and relation containing it, "some
other cell of the relation is suppressed" (and, with a single-contributor cell ``j`` in
the relation, "some cell other than ``s`` and ``j``").
"""
from __future__ import annotations

import copy
import dataclasses
import heapq
import time
from typing import Callable

import highspy
import numpy as np
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram, SolveResult
from tabprotect.errors import InfeasibleRulesError, InputError
from tabprotect.secondary.base import MethodOutcome, register_method
from tabprotect.secondary.repair import AttackerOracle, Check, GreedyRepair, Requirements

#: compact MILP only when (primaries x directions x model columns) stays below this; the
#: compact model's LP relaxation is weak, so Benders wins well before memory matters
COMPACT_LIMIT = 2_000
#: relative optimality gap of a "proven optimal" pattern unless the caller asks otherwise
DEFAULT_MIP_GAP = 1e-6
#: gap of the early master solves, whose only job is to produce patterns to cut off
LOOSE_MIP_GAP = 0.02
#: the LP phase stops when the bound improved less than LP_STALL_TOL (relative) in each of
#: LP_STALL_ROUNDS consecutive rounds
LP_STALL_TOL = 1e-5
LP_STALL_ROUNDS = 10
#: share of the time limit the LP phase (fractional separation) may use at most
LP_PHASE_SHARE = 0.5
#: pool cuts with at most this slack (rhs scaled to 1) at the last LP point stay in the MILP
KEEP_SLACK = 0.1
#: improving solutions of one master run checked besides its final one
SAVED_PATTERNS = 8
#: at most this share of the elapsed time goes to the repair heuristic once a protected
#: pattern is known
HEURISTIC_SHARE = 0.25
#: a repaired pattern is pruned (redundant suppressions dropped) when it costs less than
#: this multiple of the incumbent
PRUNE_WITHIN = 1.15
#: branch-and-cut: separation rounds per node (the root runs to convergence) and the
#: relative bound improvement below which a node stops separating and branches
NODE_CUT_ROUNDS = 5
NODE_CUT_TOL = 1e-4
#: while no protected pattern is known, the search (heuristics after the LP phase and the
#: branch-and-cut) ends this share of the time limit before the deadline and leaves it to
#: the fallback repair (continuing the repair that got furthest), which ends by the
#: deadline -- or FALLBACK_MIN_SECONDS after a search that ended late.  Every repair LP
#: stops at its deadline (:class:`_DeadlineRepair`).  (Sessions 3-5 let the fallback run
#: up to max(10 s, 5%) past the limit: HIER13 unity at 120 s returned after 139.7 s.)
FALLBACK_RESERVE_SHARE = 0.05
FALLBACK_MIN_SECONDS = 1.0
#: a witness prune is confirmed by one full oracle check, which may run this long past
#: the prune's deadline (one check: ~1 s on HIER13, ~3 s on TABLE3)
PRUNE_CONFIRM_SECONDS = 2.0
#: the greedy repair from the primaries alone, unfinished in its first tenth of the time
#: limit, may continue after the LP phase for this share of the limit
PRIMARY_REPAIR_SHARE = 0.1
#: from this many candidate cells (Benders engine, no ``start`` given) the search starts
#: from the gauss method's pattern after protect()'s audit-and-repair, given at most
#: GAUSS_START_SHARE of the time limit: on generated tables of ~17,600 cells, 120 s in
#: all, 28,758 and 128,730 instead of 41,136 and 209,575 from the repair heuristic alone
#: (tau-Argus' OPT: 27,704 and 133,340; benchmarks/results/optimal.md). Every Castro
#: table up to 5,000 cells stays below it.
GAUSS_START_MIN_CANDIDATES = 10_000
GAUSS_START_SHARE = 0.4
#: branch-and-cut: the repair heuristic runs on every n-th node's LP point
HEURISTIC_EVERY = 10
#: branch-and-cut: an open node keeps its parent's simplex basis (warm start after a jump)
NODE_BASIS = True
#: branch-and-cut: below the root, separate only for primaries with a cut binding (slack
#: at most this, rhs 1) at the node's LP point; the others' requirements hold there by
#: every cut known, and their attacker LPs are the bulk of a node's time
RESTRICT_SEPARATION = True
BINDING_SLACK = 1e-6
#: branch-and-cut: a new incumbent from a node is cleaned up (redundant suppressions
#: published again, dearest first, each kept only when the attacker LPs still pass)
CLEANUP_INCUMBENTS = True
#: swap search (:func:`benders`' ``local_search``) around every new incumbent
LOCAL_SEARCH = True
#: seconds for one early master solve (doubled whenever it finds nothing)
ROUND_TIME_LIMIT = 3.0
#: the exact check (uncapped attacker LPs) at fractional points of the LP phase and the
#: root node, besides the capped separation.  Off: a condition the exact LP finds
#: violated is violated in the capped LP too (its bounds are smaller), whose duals then
#: give a violated cut; HIE1372D unity, 300 s: 2,800 exact LPs at fractional points
#: gave 1 cut (8.5 s) while the capped separation gave 616 (session 8).  None ("auto"):
#: only when every candidate costs the same -- there the LP phase ended one unit lower
#: without the exact check's rare cuts (HIE1372D unity root bound 83 vs 84, two runs
#: each), and a unity bound moves in whole units; HIE1372D value was proven without it
FRACTIONAL_CHECK: bool | None = None
#: branch-and-cut: the separation below the root runs over the primaries with a binding
#: cut in chunks of SEPARATION_CHUNK, those with the latest violated cut first, and the
#: round ends after the first chunk that finds a violated cut (None: all at once).  Only
#: ~21% of those attacker LPs gave a cut (HIE1372D unity, 300 s: 72,462 LPs, 14,984
#: cuts, 120 of 300 s), and a master re-solve costs about as much as ten of them
SEPARATION_CHUNK: int | None = 10
#: the LP phase separates the primaries in chunks of LP_SEPARATION_CHUNK (round-robin)
#: and re-solves the master after the first chunk that gives a cut (None: all primaries
#: every round).  The master LP is cheap there and the attacker LPs are not: TABLE3 value,
#: 1,034 attacker LPs per round at 3-25 ms each (slower as the point spreads) against
#: ~0.5 s for the master (session 9)
LP_SEPARATION_CHUNK: int | None = None
#: support cuts (:class:`_SupportSeparator`, the bridgeless rows generalised to
#: combinations of relations): separated in the LP phase and in the branch-and-cut for
#: candidates with at least SUPPORT_MIN_Z at the LP point, at most SUPPORT_MAX_LPS
#: separation LPs per round (SUPPORT_NODE_MAX_LPS below the root).  Off by default
#: (``optimal(..., support_cuts=True)`` turns them on): HIER13 unity root bound 421 ->
#: 431 (90 s), but on HIE1372D unity (60 s) no bound gain, 48 -> 1 nodes and a worse
#: incumbent (95 -> 103): the root keeps finding barely violated ones
SUPPORT_CUTS = False
SUPPORT_MIN_Z = 0.05
SUPPORT_MAX_LPS = 400
SUPPORT_NODE_MAX_LPS = 60
#: a support cut is kept when the point violates it by more than this
SUPPORT_MIN_VIOLATION = 1e-3
#: branch-and-cut branching rule: "reliability" (pseudo-costs per column and direction,
#: strong branching while a column has fewer than RELIABLE observations), "fractional"
#: (most fractional column; sessions 2-4) or "auto": fractional when every candidate
#: costs the same (unity costs: bounds move in steps of that cost, and the strong
#: branching LPs bought no bound -- HIE1372D unity, 600 s: bound 85 either way, 126
#: instead of 273 nodes, incumbent 104 instead of 94), reliability otherwise (TABLE7
#: value, 600 s: bound 3,880,248, gap 0.75%; sessions 3-4 with the fractional rule:
#: 3.861-3.865e6, gap 1.14-1.17%)
BRANCHING = "auto"
RELIABLE = 2
#: at most this many candidates strong-branched per node (two LPs each, no cuts), and the
#: strong branching stops after SB_LOOKAHEAD candidates without a better score
SB_CANDIDATES = 4
SB_LOOKAHEAD = 2
#: strong branching only at nodes taken from the heap (jumps; a plunge then branches on
#: pseudo-costs alone).  Off: TABLE7 value, 60 s, bound 3.8649e6 with it, 3.8677e6
#: without (one run each, loaded machine)
SB_ONLY_AT_JUMPS = False
#: before the tree, pool cuts with more slack than this (rhs 1) at the root LP point leave
#: the master LP (they stay in the pool and come back when a node's point violates them)
PURGE_SLACK = 0.05
PURGE_ROOT = True
# in the tree: every PURGE_TREE_EVERY nodes the pool cuts with slack above
# PURGE_TREE_SLACK at the node's LP point leave the model again (their rows are deleted in
# place, so the warm basis survives; they come back like the root-purged ones when a node
# point violates them).  The model otherwise only grows: TABLE7 value had ~5,000 cut rows
# after 1,955 nodes and its node LPs were ~3x slower per LP than in the first 90 s
# (session 7).  None: no purge in the tree.
PURGE_TREE_EVERY: int | None = 5
PURGE_TREE_SLACK = 0.05
# With equal costs (unity) only while the model holds more than this many pool cuts
# (0 = always, the default since a repeated HIE1372D unity pair: 92 / 88 with 0 against
# 94 / 87 with 4000, both with cover cuts; TABLE7 unity is still proven, in 143 s): on
# TABLE7 unity (<= ~1,800 cut rows without a purge) the purged rows kept coming
# back and the tree grew (proven in 143-259 s with the purge, 31 s without), on HIE1372D
# unity (~9,400 cut rows, 0.34 s per node LP) the purge gave 1,073 nodes instead of 345
# and the bound 88 instead of 86 in 600 s (session 7).  None: never with equal costs.
PURGE_TREE_EQUAL_COSTS_ROWS: int | None = 0
# HiGHS' dual simplex perturbs the costs by default; on the master with equal costs (unity)
# that made a child LP need ~2.5x the iterations (TABLE7 unity, 24 child LPs from one
# basis: 4,478 vs 1,738 iterations; value costs: no difference), see results/optimal.md,
# session 7.  The multiplier given to the master LP (None: HiGHS' default).
MASTER_COST_PERTURBATION: float | None = 0.0


#: HiGHS' simplex_strategy value of the dual simplex (the attacker LPs' re-solves)
DUAL_SIMPLEX = 1
#: the attacker oracle re-solves with the dual simplex (None: HiGHS' own choice)
DUAL_ORACLE = True
#: HiGHS basis status by its integer value (kLower, kBasic, kUpper, kZero, kNonbasic)
_BASIS_STATUS = {int(v): v for v in highspy.HighsBasisStatus.__members__.values()}
_BASIC = int(highspy.HighsBasisStatus.kBasic)


def candidate_cells(table, empty: str = "publish") -> np.ndarray:
    """Cells a method may add as secondary suppressions.

    Not the primaries (already suppressed), never ``P`` cells, empty ``Z`` cells only with
    ``empty="suppress"``, and never a cell whose a-priori bounds pin it (``lb == ub``):
    suppressing it hides nothing.
    """
    st = table.status
    ok = np.isin(st, ("S", "M"))
    if empty == "suppress":
        ok |= st == "Z"
    elif empty != "publish":
        raise ValueError(f"empty must be 'publish' or 'suppress', not {empty!r}")
    ok &= table.ub > table.lb
    ok &= st != "M"  # already suppressed: fixed, not a decision
    return ok


class _Master:
    """The Benders master: a HiGHS MILP over the candidate cells' z, plus cuts."""

    def __init__(self, cost_c: np.ndarray, n_cells: int, cand_idx: np.ndarray,
                 fixed: np.ndarray, threads: int | None, mip_gap: float | None,
                 static: sp.csr_matrix | None = None):
        self.cand = cand_idx
        # rows ``static @ z >= 0`` kept in every model (bridgeless inequalities)
        self.static = static if static is not None else sp.csr_matrix((0, len(cand_idx)))
        self.col = np.full(n_cells, -1, dtype=np.int64)
        self.col[cand_idx] = np.arange(len(cand_idx))
        self.fixed = fixed
        k = len(cand_idx)
        lp = LinearProgram(c=cost_c, A=None, row_lower=[], row_upper=[],
                           col_lower=np.zeros(k), col_upper=np.ones(k),
                           integrality=np.ones(k, bool))
        self.k = k
        self.n_static = self.static.shape[0]
        self.n_cuts = 0
        self.cost = cost_c
        self.mip_gap = mip_gap
        self.seen: set = set()  # rows already in the pool (no duplicate cuts)
        # the cut pool: every cut ever found (scaled to rhs 1); only some are rows of the
        # HiGHS model -- slack cuts make each master MILP slower and are re-added only
        # when a master solution violates them
        self.pool: list[sp.csr_matrix] = []
        self._pool_csr: sp.csr_matrix | None = None
        self.in_model = np.zeros(0, bool)
        # primary cell of each pool row (-1: none), for separation restricted to the
        # primaries whose cuts bind at a node's LP point
        self.pool_primary = np.zeros(0, np.int64)
        self.model_rows: list[int] = []  # pool index of each model row
        self.n_support = 0  # support cuts appended to the model (and to static)
        self._integer = True
        self._new_model(lp)

    def _new_model(self, lp) -> None:
        # threads: HiGHS fixes its thread pool at the first run in the process and then
        # rejects a different 'threads' value with an error status, so it is not passed
        self.model = HighsModel(lp, mip_gap=self.mip_gap)
        if MASTER_COST_PERTURBATION is not None:
            self.model.highs.setOptionValue("dual_simplex_cost_perturbation_multiplier",
                                            float(MASTER_COST_PERTURBATION))
        # pool index of every model row, -1 for rows outside the pool (bridgeless,
        # support and Gomory rows): what a purge may delete
        self.row_pool: list[int] = [-1] * self.static.shape[0]
        if self.static.shape[0]:
            self.model.add_rows(self.static, np.zeros(self.static.shape[0]),
                                np.full(self.static.shape[0], np.inf))
        # keep the improving solutions of each MIP run: each is a pattern to check
        try:
            self.model.highs.setOptionValue("mip_improving_solution_save", True)
        except Exception:  # other HiGHS versions: only the final solution is checked
            pass

    def saved_patterns(self, final: np.ndarray, limit: int) -> list[np.ndarray]:
        """Distinct rounded improving solutions of the last MIP run, besides ``final``."""
        try:
            saved = self.model.highs.getSavedMipSolutions()
        except Exception:
            return []
        out, keys = [], {final.tobytes()}
        for sol in list(saved)[::-1]:
            x = np.asarray(sol.col_value, dtype=float)[: self.k]
            if len(x) != self.k:
                continue
            zc = np.round(x).astype(bool)
            if zc.tobytes() in keys:
                continue
            keys.add(zc.tobytes())
            out.append(zc)
            if len(out) >= limit:
                break
        return out

    @property
    def pool_matrix(self) -> sp.csr_matrix:
        if self._pool_csr is None or self._pool_csr.shape[0] != len(self.in_model):
            self._pool_csr = (sp.vstack(self.pool).tocsr() if self.pool
                              else sp.csr_matrix((0, self.k)))
            self.pool = [self._pool_csr]
        return self._pool_csr

    def add(self, cols_list, coef_list, rhs_list, point: np.ndarray | None = None,
            primaries=None) -> int:
        """Add cuts given over cell indices; fixed cells move to the right-hand side.

        With ``point`` (the master's current z over the candidates) each cut's integer
        rounding (:func:`_rounded_cut`) is added too when the point violates it more.
        """
        rows, cols, vals, prim = [], [], [], []
        r = 0
        if primaries is None:
            primaries = [-1] * len(rhs_list)
        for cols_c, coef_c, rhs, s in zip(cols_list, coef_list, rhs_list, primaries):
            fixed_part = coef_c[self.fixed[cols_c]].sum()
            # met by the fixed cells up to the attacker's relative tolerance
            if rhs - fixed_part <= 1e-7 * rhs:
                continue
            rhs = rhs - fixed_part
            c = self.col[cols_c]
            keep = c >= 0
            if not keep.any():
                raise _Unprotectable(cols_c)
            variants = [np.minimum(coef_c[keep], rhs) / rhs]
            if point is not None:
                better = _rounded_cut(variants[0], point[c[keep]])
                if better is not None:
                    variants.append(better)
            for a in variants:
                key = (c[keep].tobytes(), np.round(a, 9).tobytes())
                if key in self.seen:
                    continue
                self.seen.add(key)
                # scaled to rhs 1 for a well-conditioned master
                nzc = a > 0
                rows.append(np.full(int(nzc.sum()), r))
                cols.append(c[keep][nzc])
                vals.append(a[nzc])
                prim.append(int(s))
                r += 1
        if r == 0:
            return 0
        R = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                          shape=(r, self.k))
        start = len(self.in_model)
        self.pool.append(R)
        self.in_model = np.concatenate([self.in_model, np.ones(r, bool)])
        self.pool_primary = np.concatenate([self.pool_primary, np.asarray(prim, np.int64)])
        self._add_to_model(R, np.arange(start, start + r))
        self.n_cuts += r
        return r

    def _add_to_model(self, R, pool_idx) -> None:
        # a cut is only valid for binary z as a whole; nothing is rounded down
        self.model.add_rows(R, np.full(R.shape[0], 1.0 - 1e-9), np.full(R.shape[0], np.inf))
        self.model_rows.extend(int(i) for i in pool_idx)
        self.row_pool.extend(int(i) for i in pool_idx)

    def rebuild(self, keep_pool_idx: np.ndarray) -> None:
        """A fresh model holding only the given pool rows (the rest stay in the pool)."""
        keep_pool_idx = np.unique(keep_pool_idx)
        lp = LinearProgram(c=self.cost, A=None, row_lower=[], row_upper=[],
                           col_lower=np.zeros(self.k), col_upper=np.ones(self.k),
                           integrality=np.full(self.k, self._integer))
        self._new_model(lp)
        self.model_rows = []
        self.in_model[:] = False
        if len(keep_pool_idx):
            self._add_to_model(self.pool_matrix[keep_pool_idx], keep_pool_idx)
            self.in_model[keep_pool_idx] = True

    def purge(self, zc: np.ndarray, slack: float) -> np.ndarray | None:
        """Delete from the model the pool cuts whose slack at ``zc`` (the current LP
        point, so their slacks are basic) exceeds ``slack``; they stay in the pool.
        HiGHS deletes rows with basic slacks keeping the basis valid.  Returns the mask
        of the old model rows kept (None when nothing was deleted)."""
        rp = np.asarray(self.row_pool, dtype=np.int64)
        in_pool = np.flatnonzero(rp >= 0)
        if len(in_pool) == 0:
            return None
        lhs = self.pool_matrix[rp[in_pool]] @ zc
        drop = in_pool[lhs > 1.0 + slack]
        if len(drop) == 0:
            return None
        if not self.model.delete_rows(drop):
            return None
        keep = np.ones(len(rp), bool)
        keep[drop] = False
        self.in_model[rp[drop]] = False
        self.row_pool = rp[keep].tolist()
        self.model_rows = [i for i in self.model_rows if self.in_model[i]]
        return keep

    def violated_pool_rows(self, zc: np.ndarray, tol: float = 1e-7) -> np.ndarray:
        """Pool cuts outside the model that ``zc`` violates."""
        if len(self.in_model) == 0 or self.in_model.all():
            return np.zeros(0, np.int64)
        lhs = self.pool_matrix @ zc
        return np.flatnonzero((lhs < 1.0 - tol) & ~self.in_model)

    def activate(self, pool_idx: np.ndarray) -> None:
        if len(pool_idx):
            self._add_to_model(self.pool_matrix[pool_idx], pool_idx)
            self.in_model[pool_idx] = True

    def get_basis(self):
        """The model's current simplex basis as compact arrays (None without one)."""
        b = self.model.highs.getBasis()
        if not b.valid:
            return None
        return (np.fromiter((int(v) for v in b.col_status), np.int8, len(b.col_status)),
                np.fromiter((int(v) for v in b.row_status), np.int8, len(b.row_status)))

    def set_basis(self, saved) -> bool:
        """Restore a basis from :meth:`get_basis`.  Rows added since (cuts only ever
        get appended in the branch-and-cut) enter with their slack basic, which keeps the
        basis square; HiGHS refactorises it and the node's dual simplex starts there."""
        cols, rows = saved
        m = self.model.n_rows
        if len(cols) != self.k or len(rows) > m:
            return False
        b = highspy.HighsBasis()
        b.col_status = [_BASIS_STATUS[v] for v in cols.tolist()]
        b.row_status = ([_BASIS_STATUS[v] for v in rows.tolist()]
                        + [highspy.HighsBasisStatus.kBasic] * (m - len(rows)))
        b.valid = True
        return self.model.highs.setBasis(b) != highspy.HighsStatus.kError

    def add_static(self, R: sp.csr_matrix) -> int:
        """Append rows ``R @ z >= 0`` (support cuts) to the model and to ``static``
        (so a rebuilt model keeps them).  Only the branch-and-cut adds them: the
        MILP-rounds search maps model rows after the static ones to pool cuts."""
        if R.shape[0] == 0:
            return 0
        self.model.add_rows(R, np.full(R.shape[0], -1e-9), np.full(R.shape[0], np.inf))
        self.row_pool.extend([-1] * R.shape[0])
        self.static = sp.vstack([self.static, R]).tocsr()
        self.n_support += R.shape[0]
        return R.shape[0]

    def add_general(self, R: sp.csr_matrix, rhs: np.ndarray) -> int:
        """Append rows ``R @ z >= rhs`` (Gomory cuts) to the model only: they are not
        pool cuts (not scaled to right-hand side 1) and a rebuilt model drops them, so
        only the branch-and-cut, after its one rebuild, adds them."""
        if R.shape[0] == 0:
            return 0
        self.model.add_rows(R, np.asarray(rhs, float), np.full(R.shape[0], np.inf))
        self.row_pool.extend([-1] * R.shape[0])
        self.n_general = getattr(self, "n_general", 0) + R.shape[0]
        return R.shape[0]

    def set_gap(self, gap: float) -> None:
        self.model.highs.setOptionValue("mip_rel_gap", float(gap))

    def relax(self, on: bool) -> None:
        self._integer = not on
        self.model.set_integrality(np.arange(self.k), not on)


class _DeadlineModel:
    """A :class:`~solvers.HighsModel` whose solves stop at a deadline (``None``: none)."""

    def __init__(self, model: HighsModel):
        self._model = model
        self.deadline: float | None = None

    def __getattr__(self, name):
        return getattr(self._model, name)

    def solve(self, time_limit: float | None = None):
        if self.deadline is not None:
            left = max(1e-3, self.deadline - time.perf_counter())
            time_limit = left if time_limit is None else min(time_limit, left)
        return self._model.solve(time_limit=time_limit)


class _DeadlineRepair(GreedyRepair):
    """The greedy repair with its repair LPs stopped at the run's deadline.

    The base class checks the deadline between LPs only, and one repair LP over the
    whole table can take seconds (HIER13: up to 1.2 s each, a dozen in a row); a repair
    LP stopped by the deadline leaves its condition unmet, like a repair that ran out of
    time between LPs.
    """

    def run(self, suppressed: np.ndarray, *, deadline: float | None = None,
            **kw) -> tuple[np.ndarray, list]:
        if self.model is None:
            self.model = _DeadlineModel(HighsModel(self.lp))
        self.model.deadline = deadline
        try:
            return super().run(suppressed, deadline=deadline, **kw)
        finally:
            self.model.deadline = None


class _SafeOracle:
    """The attacker oracle, made robust for the search: HiGHS has (rarely) reported a
    warm re-solve of an attacker LP 'infeasible' although ``y = 0`` is always feasible.
    Such a check comes back incomplete (never 'protected', no cuts) and is counted in
    ``stats["oracle_errors"]``; the search then claims no optimality it relied on it
    for.  Fractional points are cleaned first: bounds of 1e-9 are what trips HiGHS."""

    def __init__(self, oracle: AttackerOracle, stats: dict):
        self._oracle = oracle
        self._stats = stats

    def __getattr__(self, name):
        return getattr(self._oracle, name)

    def check(self, z, **kw) -> Check:
        try:
            return self._oracle.check(_clean(z), **kw)
        except RuntimeError:
            self._stats["oracle_errors"] += 1
            return Check(complete=False)

    def separate(self, z, **kw) -> Check:
        try:
            return self._oracle.separate(_clean(z), **kw)
        except RuntimeError:
            self._stats["oracle_errors"] += 1
            return Check(complete=False)

    def separate_some(self, z, part: np.ndarray, **kw) -> Check:
        """:meth:`separate` for the primaries ``part`` (bool mask over the primaries'
        slots) only: the others are given no levels, so their attacker LPs are skipped."""
        req = self._oracle.req
        view = copy.copy(self._oracle)
        view.req = dataclasses.replace(req, need_up=np.where(part, req.need_up, 0.0),
                                       need_down=np.where(part, req.need_down, 0.0),
                                       need_width=np.where(part, req.need_width, 0.0))
        try:
            return view.separate(_clean(z), **kw)
        except RuntimeError:
            self._stats["oracle_errors"] += 1
            return Check(complete=False)


#: the attacker LPs (:class:`_HybridOracle`) race the primal and the dual simplex per
#: oracle call (one check of a pattern, one separation round): a call re-solves all its
#: LPs with the simplex of the lower time per LP so far (kept separately for checks and
#: for the separation); every RACE_EVERY calls a trial call uses the other one, given up
#: for the rest of the call once its time per LP (after RACE_TRIAL_LPS LPs) exceeds
#: RACE_CAP times the faster one's, and any one of its LPs is stopped after
#: RACE_LP_CAP times that and finished by the faster one.  While the same one stays
#: faster, trials come twice as rarely each time (up to every RACE_EVERY_MAX calls).
#: Switching within a run of LPs is what costs: the dual simplex started from a primal
#: optimal basis needed 3,199 iterations where it needs ~10 from its own (TABLE3, every
#: candidate suppressed).  Which one is fast depends on the pattern, by up to 100x
#: either way: TABLE3's LP-support pattern (1,094 cells), 1,034 exact LPs: dual 21.4 ms /
#: 367 iterations per LP, primal 2.9 ms / 34; every candidate suppressed (2,397 cells):
#: dual ~2-5 ms, primal 0.14-0.5 s (sessions 3, 9).  False: the dual simplex only;
#: None ("auto"): the race when the candidates' costs differ.  With equal costs two
#: TABLE3 unity runs of 600 s ended with a worse incumbent racing (670 and 551 against
#: 490 and 495 secondaries; bound +1), with value costs TABLE3's gap fell 37.1 -> 34.1%.
RACE_SIMPLEX: bool | None = None
RACE_EVERY = 8
RACE_EVERY_MAX = 128
RACE_TRIAL_LPS = 4
RACE_CAP = 1.5
RACE_LP_CAP = 20.0
RACE_MIN_SECONDS = 2e-3
_PRIMAL_SIMPLEX = 4


class _HybridOracle(AttackerOracle):
    """:class:`AttackerOracle` whose calls race the primal and the dual simplex (see
    RACE_SIMPLEX); the answers are the same LPs' optima either way."""

    def __init__(self, *args, racing: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self.racing = racing   # False: the dual simplex only, like AttackerOracle
        # seconds per LP of each simplex (by HiGHS strategy number) and the trial
        # schedule, by context; shared with copies of the oracle (views)
        self._race = {"check": {"calls": 0}, "sep": {"calls": 0}}
        self._call: list = [None]

    def check(self, z, **kw) -> Check:
        return self._raced("check", super().check, z, **kw)

    def _new_model(self, lp):
        if MERGE_PAIRS_MIN_COLS is not None and lp.n_cols >= MERGE_PAIRS_MIN_COLS:
            return _PairMergedModel(lp, **self._model_options)
        return super()._new_model(lp)

    def separate(self, z, **kw) -> Check:
        return self._raced("sep", super().separate, z, **kw)

    def _raced(self, context: str, call, z, **kw) -> Check:
        """``call(z, **kw)`` as one raced oracle call of ``context``."""
        self._begin(context)
        try:
            return call(z, **kw)
        finally:
            self._end()

    def _begin(self, context: str) -> None:
        race = self._race[context]
        race["calls"] += 1
        dual, primal = DUAL_SIMPLEX, _PRIMAL_SIMPLEX
        fast = None
        if dual not in race:
            strategy = dual  # the safe one first: primal re-solves can be 100x slower
        elif primal not in race:
            strategy, fast = primal, dual
        else:
            fast = primal if race[primal] <= race[dual] else dual
            strategy = fast
            if race["calls"] >= race.get("next_trial", 0):
                strategy = dual if fast == primal else primal
                # a trial that keeps losing comes back less and less often
                every = race["every"] = (RACE_EVERY if race.get("winner") != fast
                                         else min(2 * race.get("every", RACE_EVERY),
                                                  RACE_EVERY_MAX))
                race["winner"] = fast
                race["next_trial"] = race["calls"] + every
        self._call[0] = {"race": race, "strategy": strategy,
                         "fast": fast if strategy != fast else None, "lps": 0, "secs": 0.0}

    def _end(self) -> None:
        call, self._call[0] = self._call[0], None
        if call is not None and call["lps"]:
            self._record(call)

    @staticmethod
    def _record(call) -> None:
        race, strategy = call["race"], call["strategy"]
        per_lp = call["secs"] / call["lps"]
        race[strategy] = per_lp if strategy not in race else 0.5 * (race[strategy] + per_lp)

    def _solve(self, model, k, sign):
        call = self._call[0]
        if not self.racing or call is None:
            return super()._solve(model, k, sign)
        h = model.highs
        race, strategy, fast = call["race"], call["strategy"], call["fast"]
        model.set_objective(indices=[k], values=[float(sign)], sense="max")
        S = highspy.HighsModelStatus
        t = time.perf_counter()
        self._set_strategy(model, strategy)
        if fast is not None:
            # HiGHS' time limit counts the object's whole run time, not this run's
            h.setOptionValue("time_limit", h.getRunTime() + max(
                RACE_MIN_SECONDS, RACE_LP_CAP * race[fast]))
        h.run()
        ms = h.getModelStatus()
        if fast is not None:
            h.setOptionValue("time_limit", np.inf)
        took = time.perf_counter() - t
        call["lps"] += 1
        call["secs"] += took
        if fast is not None and (ms == S.kTimeLimit or (
                call["lps"] >= RACE_TRIAL_LPS
                and call["secs"] > RACE_CAP * race[fast] * call["lps"])):
            # the trial lost: its time so far is recorded, the faster one takes over
            # from scratch (from the trial's basis the dual simplex stayed ~20x slower
            # for every later LP of the model: TABLE3, every candidate suppressed)
            self._record(call)
            call.update(strategy=fast, fast=None, lps=0, secs=0.0)
            h.clearSolver()
            self._set_strategy(model, fast)
            if ms == S.kTimeLimit:
                t = time.perf_counter()
                h.run()
                ms = h.getModelStatus()
                call["lps"] += 1
                call["secs"] += time.perf_counter() - t
        if ms == S.kUnbounded:
            return np.inf, None
        sol = h.getSolution() if ms == S.kOptimal else None
        if sol is None or not sol.dual_valid:
            # anything unusual: the plain path from scratch (HighsModel's own checks)
            h.clearSolver()
            self._set_strategy(model, DUAL_SIMPLEX)
            return super()._solve(model, k, sign)
        duals = np.array(sol.row_dual, float)
        if isinstance(model, _PairMergedModel):
            duals = model.full_duals(duals)
        return float(h.getInfo().objective_function_value), duals

    @staticmethod
    def _set_strategy(model, strategy: int) -> None:
        if getattr(model, "_race_strategy", DUAL_SIMPLEX) != strategy:
            model.highs.setOptionValue("simplex_strategy", strategy)
            model._race_strategy = strategy


#: the attacker LPs merge their two-cell rows first (:class:`_PairMergedModel`) when a
#: component's LP has at least MERGE_PAIRS_MIN_COLS columns (None: never).  TABLE3 value,
#: 600 s, same time: 27 LP rounds instead of 20 in the LP phase's 300 s, 8.9 instead of
#: 11.4 ms per attacker LP, bound 7,256,872 vs 7,202,399 (session 10; its LPs have
#: 1,300+ columns, the primaries included); on HIE1372D's LP point (386 columns and 441
#: rows, merged to 261 and 316) no faster per LP, so smaller LPs stay as they are (the
#: threshold leaves every LP of the tables up to 700 cells -- TABLE7, HIE1372D -- as
#: before)
MERGE_PAIRS_MIN_COLS: int | None = 700


class _PairMergedModel:
    """An attacker LP ``A y = 0``, ``lo <= y <= hi`` with its two-cell rows merged.

    A row with two cells, ``a y_u + b y_v = 0``, says ``y_v = -(a / b) y_u``: one column
    then stands for both, bounded by the intersection of their bounds; chains of such
    rows merge into classes (a spanning tree each, found by breadth-first search; a
    two-cell row that closes a cycle stays a row).  Fewer rows and columns, the same
    optimum.  The original LP's row duals are rebuilt from the merged LP's: the tree
    rows get the multipliers that leave every member of a class with reduced cost 0 but
    the one whose bound is the class's binding bound, which gets the class's reduced
    cost -- complementary slackness with the merged optimum, so these are optimal duals
    of the original LP and the capacity cut from them is as violated as the original
    LP's.  Same interface as :class:`~solvers.HighsModel` for the attacker oracle
    (``set_col_bounds``, ``set_objective``, ``solve`` with ``duals`` over the original
    rows; ``highs`` and :meth:`full_duals` for :class:`_HybridOracle`).

    Examples
    --------
    >>> A = sp.csr_matrix(np.array([[1.0, -1.0, 0.0, 0.0], [1.0, 1.0, -1.0, -1.0]]))
    >>> lp = LinearProgram(c=np.zeros(4), A=A, row_lower=np.zeros(2), row_upper=np.zeros(2),
    ...                    col_lower=-np.ones(4), col_upper=np.array([5.0, 2.0, 9.0, 9.0]))
    >>> m = _PairMergedModel(lp)
    >>> m.n_model_cols, m.n_model_rows      # y_0 = y_1 merged, the pair row gone
    (3, 1)
    >>> m.set_objective(indices=[0], values=[1.0], sense="max")
    >>> res = m.solve()
    >>> float(res.objective), res.duals.round(6).tolist()   # y_0 <= 2 through y_1
    (2.0, [1.0, 0.0])
    """

    def __init__(self, lp: LinearProgram, **options):
        A = sp.csr_matrix(lp.A, dtype=float)
        A.sum_duplicates()
        A.eliminate_zeros()
        m, n = A.shape
        self.A, self.AT = A, A.T.tocsr()
        self.n, self.m = n, m
        self.lo = np.array(lp.col_lower, float, copy=True)
        self.hi = np.array(lp.col_upper, float, copy=True)
        pair_rows = np.flatnonzero(np.diff(A.indptr) == 2)
        # adjacency of the two-cell rows: (row, other cell) per cell
        ends = A.indices[A.indptr[pair_rows][:, None] + np.arange(2)]
        vals = A.data[A.indptr[pair_rows][:, None] + np.arange(2)]
        adj: list[list[int]] = [[] for _ in range(n)]
        for t, (u, v) in enumerate(ends.tolist()):
            adj[u].append(t)
            adj[v].append(t)
        # breadth-first spanning forest: y_i = sgn[i] * Y[cls[i]]
        cls = np.full(n, -1, np.int64)
        sgn = np.ones(n)
        depth = np.zeros(n, np.int64)
        parent = np.full(n, -1, np.int64)
        pedge = np.full(n, -1, np.int64)   # tree row linking a cell to its parent
        a_child = np.zeros(n)              # that row's coefficient of the cell
        a_parent = np.zeros(n)             # ... and of its parent
        in_tree = np.zeros(len(pair_rows), bool)
        n_cls = 0
        for root in range(n):
            if cls[root] >= 0:
                continue
            cls[root] = n_cls
            queue = [root]
            for u in queue:
                for t in adj[u]:
                    w = int(ends[t, 1] if ends[t, 0] == u else ends[t, 0])
                    if cls[w] >= 0:
                        continue
                    au, aw = (vals[t, 0], vals[t, 1]) if ends[t, 0] == u else (vals[t, 1], vals[t, 0])
                    cls[w] = n_cls
                    sgn[w] = -sgn[u] * au / aw
                    depth[w] = depth[u] + 1
                    parent[w] = u
                    pedge[w] = pair_rows[t]
                    a_child[w], a_parent[w] = aw, au
                    in_tree[t] = True
                    queue.append(w)
            n_cls += 1
        self.cls, self.sgn, self.n_cls = cls, sgn, n_cls
        self.parent, self.pedge, self.a_child, self.a_parent = parent, pedge, a_child, a_parent
        # the tree cells by depth, deepest level first (the dual rebuild's order)
        kids = np.flatnonzero(parent >= 0)
        self.levels = [kids[depth[kids] == d] for d in range(int(depth.max(initial=0)), 0, -1)]
        self.roots = np.flatnonzero(parent < 0)          # one per class, cls order
        size = np.bincount(cls, minlength=n_cls)
        self.size = size
        self.multi = np.flatnonzero(size > 1)
        self.order = np.argsort(cls, kind="stable")      # cells grouped by class
        self.starts = np.concatenate([[0], np.cumsum(size)[:-1]])
        keep = np.ones(m, bool)
        keep[pair_rows[in_tree]] = False
        M = sp.csr_matrix((sgn, (np.arange(n), cls)), shape=(n, n_cls))
        R = (A[keep] @ M).tocsr()
        R.data[np.abs(R.data) <= 1e-12] = 0.0
        R.eliminate_zeros()
        nonempty = np.diff(R.indptr) > 0
        # a kept row that lost every entry (a two-cell row closing a consistent cycle)
        # is redundant: dual 0
        self.model_rows = np.flatnonzero(keep)[nonempty]
        R = R[nonempty]
        L, U = self._class_bounds()
        inner = LinearProgram(c=np.zeros(n_cls), A=R, row_lower=np.zeros(R.shape[0]),
                              row_upper=np.zeros(R.shape[0]), col_lower=L, col_upper=U)
        self.model = HighsModel(inner, **options)
        self.c = np.zeros(n)
        self.last_result = None

    @property
    def highs(self):
        return self.model.highs

    @property
    def n_model_cols(self) -> int:
        return self.n_cls

    @property
    def n_model_rows(self) -> int:
        return len(self.model_rows)

    def _member_bounds(self):
        """Bounds of ``Y[cls[i]]`` implied by cell ``i``'s own bounds."""
        a, b = self.lo / self.sgn, self.hi / self.sgn
        return np.minimum(a, b), np.maximum(a, b)

    def _class_bounds(self):
        lo_m, hi_m = self._member_bounds()
        L = np.maximum.reduceat(lo_m[self.order], self.starts)
        U = np.minimum.reduceat(hi_m[self.order], self.starts)
        return L, U

    def set_col_bounds(self, indices, lower, upper) -> None:
        idx = np.atleast_1d(np.asarray(indices, np.int64))
        self.lo[idx] = lower
        self.hi[idx] = upper
        classes = np.unique(self.cls[idx])
        if len(classes) * 4 >= self.n_cls:
            L, U = self._class_bounds()
            self.model.set_col_bounds(np.arange(self.n_cls), L, U)
            return
        lo_m, hi_m = self._member_bounds()
        L = np.full(len(classes), -np.inf)
        U = np.full(len(classes), np.inf)
        pos = np.searchsorted(classes, self.cls)
        hit = (pos < len(classes)) & (classes[np.minimum(pos, len(classes) - 1)] == self.cls)
        np.maximum.at(L, pos[hit], lo_m[hit])
        np.minimum.at(U, pos[hit], hi_m[hit])
        self.model.set_col_bounds(classes, L, U)

    def set_objective(self, *, indices, values, sense: str = "min") -> None:
        idx = np.atleast_1d(np.asarray(indices, np.int64))
        v = np.broadcast_to(np.asarray(values, float), idx.shape)
        self.c = np.zeros(self.n)
        np.add.at(self.c, idx, v)
        cc = np.zeros(self.n_cls)
        np.add.at(cc, self.cls[idx], v * self.sgn[idx])
        nz = np.flatnonzero(cc)
        self.model.set_objective(indices=nz, values=cc[nz], sense=sense)

    def full_duals(self, row_dual: np.ndarray) -> np.ndarray:
        """The original LP's optimal row duals from the merged LP's (see the class)."""
        lam = np.zeros(self.m)
        lam[self.model_rows] = row_dual
        r = self.c - self.AT @ lam
        # every tree cell passes its reduced cost up to its parent (deepest first): the
        # class's whole reduced cost D ends at its root
        for nodes in self.levels:
            mu = r[nodes] / self.a_child[nodes]
            lam[self.pedge[nodes]] += mu
            r[nodes] = 0.0
            np.add.at(r, self.parent[nodes], -self.a_parent[nodes] * mu)
        if len(self.multi):
            roots = self.roots[self.multi]
            D = r[roots] / self.sgn[roots]
            move = np.flatnonzero(np.abs(D) > 1e-12)
            if len(move):
                lo_m, hi_m = self._member_bounds()
                for t in move:
                    c = self.multi[t]
                    cells = self.order[self.starts[c]:self.starts[c] + self.size[c]]
                    # the member whose bound binds Y: the lowest upper bound when the
                    # objective pushes Y up, the highest lower bound otherwise
                    b = (cells[np.argmin(hi_m[cells])] if D[t] > 0
                         else cells[np.argmax(lo_m[cells])])
                    root = roots[t]
                    bound = hi_m if D[t] > 0 else lo_m
                    if b == root or bound[b] == bound[root]:
                        continue
                    path = [int(b)]
                    while path[-1] != root:
                        path.append(int(self.parent[path[-1]]))
                    # down the path from the root: each step hands the reduced cost on
                    for w in path[-2::-1]:
                        u = self.parent[w]
                        mu = r[u] / self.a_parent[w]
                        lam[self.pedge[w]] += mu
                        r[u] = 0.0
                        r[w] -= self.a_child[w] * mu
        return lam

    def solve(self, time_limit: float | None = None) -> SolveResult:
        res = self.model.solve(time_limit=time_limit)
        x = None if res.x is None else self.sgn * np.asarray(res.x)[self.cls]
        duals = None if res.duals is None else self.full_duals(np.asarray(res.duals, float))
        out = dataclasses.replace(res, x=x, duals=duals, reduced_costs=None)
        self.last_result = out
        return out


def _clean(z):
    z = np.asarray(z)
    if z.dtype == bool:
        return z
    return np.where(z < 1e-7, 0.0, z)


class _Unprotectable(Exception):
    def __init__(self, cells):
        super().__init__("no candidate cell can help")
        self.cells = cells


def _initial_cover_rows(table, req: Requirements, cand: np.ndarray, fixed: np.ndarray):
    """For each primary s and relation containing it: another cell must be suppressed
    (one other than a single-contributor cell j, too).  Returned as cuts over cells."""
    A = table.relations.tocsr()
    AT = A.T.tocsr()
    useful = (cand | fixed) & ((req.up > 0) | (req.down > 0))
    cols_l, coef_l, rhs_l, prim_l = [], [], [], []
    seen = set()
    for p, s in enumerate(req.primary):
        if req.need_up[p] <= 0 and req.need_down[p] <= 0 and req.need_width[p] <= 0:
            continue
        for r in AT.indices[AT.indptr[s]:AT.indptr[s + 1]]:
            cells = A.indices[A.indptr[r]:A.indptr[r + 1]]
            others = cells[(cells != s) & useful[cells]]
            excl = [-1] + [int(j) for j in others[req.singleton[others]]]
            for j in excl:
                cl = others[others != j]
                key = (tuple(cl.tolist()))
                if key in seen:
                    continue
                seen.add(key)
                cols_l.append(cl)
                coef_l.append(np.ones(len(cl)))
                rhs_l.append(1.0)
                prim_l.append(int(s))
    return cols_l, coef_l, rhs_l, prim_l


#: relative slack of a rounded cut's right-hand side: the master accepts rows met up to
#: 1e-9, and the attacker's tolerance is 1e-7 (a pattern just below 1 must stay feasible)
ROUNDING_SLACK = 1e-6
#: at most this many multipliers are tried per cut
ROUNDING_TRIES = 12


def _rounded_cut(a: np.ndarray, x: np.ndarray) -> np.ndarray | None:
    """The best Chvatal-Gomory rounding of a capacity cut ``a @ z >= 1`` at point ``x``.

    For ``z`` binary and any ``k > 0``, ``sum ceil(k a_i) z_i >= ceil(k)`` is valid
    (``ceil(k a_i) >= k a_i`` and the left side is an integer).  Divided by ``ceil(k)``
    it is stronger than the original wherever ``ceil(k a_i) / ceil(k) < a_i``: with
    ``a_i = 0.4`` and ``k = 2.5`` three such cells are needed (coefficient 1/3), which the
    LP relaxation of the original cut does not see.  The multipliers tried are ``k = t /
    a_j`` for the distinct fractional coefficients ``a_j`` and ``t = 1, 2``; the one the
    point violates most is returned when it beats the original cut.

    Examples
    --------
    >>> _rounded_cut(np.array([0.4, 0.4, 0.4]), np.array([0.9, 0.9, 0.6])).round(4).tolist()
    [0.3333, 0.3333, 0.3333]
    """
    frac = np.unique(np.round(a[(a < 1.0 - 1e-9) & (a > 1e-9)], 9))
    if len(frac) == 0:
        return None
    if len(frac) > ROUNDING_TRIES // 2:
        # the coefficients the point uses most decide the violation
        weight = np.array([x[np.abs(a - v) < 1e-9].sum() for v in frac])
        frac = frac[np.argsort(-weight)[: ROUNDING_TRIES // 2]]
    best, best_lhs = None, float(a @ x) - 1e-6
    for v in frac:
        for t in (1.0, 2.0):
            k = t / v
            rhs = np.ceil(k * (1.0 - ROUNDING_SLACK))
            if rhs < 2:
                continue
            cand = np.ceil(k * a - 1e-12) / rhs
            cand = np.where(a > 0, np.maximum(cand, 0.0), 0.0)
            lhs = float(cand @ x)
            if lhs < best_lhs:
                best, best_lhs = np.minimum(cand, 1.0), lhs
    return best


#: cover cuts: pool rows with left side at most 1 + COVER_ROW_SLACK at the point are
#: searched; at most COVER_MAX_CUTS (most violated first) are returned per call, each
#: violated by at least COVER_MIN_VIOLATION
COVER_ROW_SLACK = 0.25
COVER_MAX_CUTS = 50
COVER_MIN_VIOLATION = 1e-3
#: a cover's complement must stay this far below 1 (the cut rows hold up to 1e-9, the
#: attacker's tolerance is 1e-7)
COVER_SLACK = 1e-6
#: separate cover cuts at the nodes (session 7; see results/optimal.md); None = auto: only
#: when the candidates' costs differ; True (default: with the tree purge they gave
#: HIE1372D unity 92 / 88 in two runs) -- TABLE7 value proven in 75.6 s with them (305
#: nodes) against 247 s without, but TABLE7 unity not proven in 300 s with them (3,705
#: cover rows made each node LP ~2x slower) against 96 s without -- that without the
#: tree purge; with it TABLE7 unity is proven in 143 s
COVER_CUTS: bool | None = True


def _cover_cuts(R: sp.csr_matrix, x: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """Set-cover cuts implied by capacity cuts ``a @ z >= 1`` (rows of ``R``, ``a <= 1``).

    For binary ``z``, a set ``T`` with ``sum_{i in T} a_i < 1`` cannot meet the cut alone,
    so some other cell of the support must be suppressed: ``sum_{i in S \\ T} z_i >= 1``
    (``S`` the support).  At a fractional ``x`` the complement ``T`` is chosen greedily
    (cells by decreasing ``x_i / a_i`` while ``a(T)`` stays below 1), which removes as
    much of ``x`` from the left side as the knapsack allows.  Returns (row of ``R``,
    column set) of the violated cuts, most violated first.

    Examples
    --------
    >>> R = sp.csr_matrix(np.array([[1.0, 0.4, 0.4, 0.4]]))
    >>> [(r, c.tolist()) for r, c in _cover_cuts(R, np.array([0.5, 0.42, 0.42, 0.42]))]
    [(0, [0, 3])]
    """
    out, viol = [], []
    for r in range(R.shape[0]):
        lo, hi = R.indptr[r], R.indptr[r + 1]
        idx, a = R.indices[lo:hi], R.data[lo:hi]
        xi = x[idx]
        small = np.flatnonzero(a < 1.0 - 1e-9)
        if len(small) == 0:
            continue
        order = small[np.argsort(-xi[small] / a[small], kind="stable")]
        room = np.cumsum(a[order]) < 1.0 - COVER_SLACK
        t = order[room] if room.all() else order[: int(np.argmin(room))]
        if len(t) == 0:
            continue
        lhs = float(xi.sum() - xi[t].sum())
        if lhs < 1.0 - COVER_MIN_VIOLATION:
            keep = np.ones(len(idx), bool)
            keep[t] = False
            out.append((r, idx[keep]))
            viol.append(lhs)
    order = np.argsort(viol, kind="stable")[:COVER_MAX_CUTS]
    return [out[i] for i in order]


def _reduce_candidates(table, req: Requirements, cand: np.ndarray,
                       fixed: np.ndarray) -> np.ndarray:
    """Candidates that can ever move: a cell alone (among the cells that may be
    unpublished and can move) in one of its relations is pinned by it in every pattern,
    so suppressing it changes no attacker problem and only costs.  Repeated to a fixed
    point, since dropping a cell can leave another one alone.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> t = Table.from_arrays({"x": Hierarchy.flat(["a", "b"], total="T")}, [3, 1, 2])
    >>> t = t.replace(status=np.array(["P", "U", "S"]), upl=np.array([0.0, 1.0, 0.0]))
    >>> req = Requirements.from_table(t)
    >>> _reduce_candidates(t, req, t.status == "S", t.status == "U").tolist()
    [False, False, True]
    """
    A = table.relations.tocsr()
    movable = (req.up > 0) | (req.down > 0)
    alive = (cand | fixed) & movable
    out = cand & movable
    for _ in range(1000):
        per_rel = np.asarray(A.multiply(A) @ alive.astype(float)).ravel()
        # a cell whose relation holds no other live cell: that relation pins it
        lonely_rel = per_rel <= 1.0 + 1e-9
        Acoo = A.tocoo()
        hit = lonely_rel[Acoo.row] & alive[Acoo.col]
        drop = np.zeros(table.n_cells, bool)
        drop[Acoo.col[hit]] = True
        drop &= out
        if not drop.any():
            break
        out &= ~drop
        alive &= ~drop
    return out


def _bridgeless_rows(table, col: np.ndarray, fixed: np.ndarray, live: np.ndarray) -> sp.csr_matrix:
    """Rows ``sum_{j in r, j != i} z_j - z_i >= 0`` over the candidates (``col`` maps a
    cell to its master column, -1 for none): a suppressed cell alone in one of its
    relations is pinned there, so dropping it keeps every attacker problem unchanged
    and saves its (positive) cost; every optimal pattern meets these rows.  Relations
    holding a fixed (always unpublished) movable cell besides ``i`` are met anyway."""
    A = table.relations.tocsr()
    AT = A.T.tocsr()
    rows, cols, vals = [], [], []
    r_out = 0
    for i in np.flatnonzero(col >= 0):
        for r in AT.indices[AT.indptr[i]:AT.indptr[i + 1]]:
            cells = A.indices[A.indptr[r]:A.indptr[r + 1]]
            others = cells[(cells != i) & (live[cells] | fixed[cells])]
            if fixed[others].any():
                continue
            rows.append(np.full(len(others) + 1, r_out))
            cols.append(np.concatenate([col[others], [col[i]]]))
            vals.append(np.concatenate([np.ones(len(others)), [-1.0]]))
            r_out += 1
    if r_out == 0:
        return sp.csr_matrix((0, int((col >= 0).sum())))
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(r_out, int((col >= 0).sum())))


class _SupportSeparator:
    """Support cuts: the bridgeless rows generalised from single relations to every
    combination of them.

    For multipliers ``lam`` on the relations let ``r = e_i - A' lam`` with ``r_i = 0``;
    every deviation vector (``A y = 0``) then has ``y_i = sum_{j != i} r_j y_j``, so a
    suppressed cell ``i`` whose support set ``S = {j != i: r_j != 0}`` is wholly
    published cannot move: the attacker knows it exactly.  Publishing it again changes
    no attacker problem (its deviation was 0 anyway) and saves its cost, so an optimal
    pattern (with positive costs; with zero costs: some optimal pattern) meets

        sum_{j in S} z_j >= z_i.

    A relation's own support gives the bridgeless row; combinations cancel cells and
    give new rows -- at HIER13's root LP point (unity costs) 1,513 of 1,830 support cells
    had one violated.  Separation: for a fractional ``z`` and cell ``i``, the LP ``max
    y_i`` with ``y_i`` free, ``A y = 0``, ``|y_j| <= z_j`` gives multipliers whose
    support set is checked (only the support counts: any level > 0 is enough).
    Cells that can never move and always-published cells leave ``S`` (their ``z`` is
    0); a cut with a fixed suppressed cell in ``S`` is met.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> t = t.replace(status=np.array(list("SSSSUSSSS")), upl=np.eye(9)[4])
    >>> req = Requirements.from_table(t)
    >>> sep = _SupportSeparator(t, req, t.status == "S", t.status == "U")
    >>> z = np.where(t.status == "U", 1.0, 0.0); z[[5, 7]] = 1.0  # (1,b) and (2,a)
    >>> R, n_lp = sep.separate(z, min_z=0.5, max_lps=10)
    >>> R.shape[0] > 0   # (1,b) can only move with (2,b) or (T,b) suppressed as well
    True
    """

    def __init__(self, table, req: Requirements, cand: np.ndarray, fixed: np.ndarray):
        self.A = table.relations.tocsr()
        self.AT = self.A.T.tocsr()
        live = (req.up > 0) | (req.down > 0)
        self.cand = cand & live
        self.fixed = fixed & live
        self.col = np.full(table.n_cells, -1, np.int64)
        cidx = np.flatnonzero(cand)
        self.col[cidx] = np.arange(len(cidx))
        self.n_cols = len(cidx)
        self.seen: set = set()

    def separate(self, z: np.ndarray, *, min_z: float, max_lps: int,
                 deadline: float | None = None, cells: np.ndarray | None = None):
        """Violated support cuts at ``z`` (over all cells): a CSR matrix over the master
        columns (rows ``R @ z >= 0``) and the number of attacker LPs solved."""
        z = np.where(self.cand, np.clip(z, 0.0, 1.0), 0.0)
        z[self.fixed] = 1.0
        on = np.flatnonzero((z > 1e-9))
        targets = np.flatnonzero(self.cand & (z >= min_z))
        if cells is not None:
            targets = np.intersect1d(targets, cells)
        targets = targets[np.argsort(-z[targets], kind="stable")][:max_lps]
        empty = sp.csr_matrix((0, self.n_cols))
        if len(targets) == 0:
            return empty, 0
        sub = self.A[:, on].tocsr()
        rows = np.flatnonzero(np.diff(sub.indptr) > 0)
        lp = LinearProgram(c=np.zeros(len(on)), A=sub[rows], row_lower=np.zeros(len(rows)),
                           row_upper=np.zeros(len(rows)), col_lower=-z[on], col_upper=z[on])
        model = HighsModel(lp, simplex_strategy=DUAL_SIMPLEX)
        local = np.full(len(z), -1, np.int64)
        local[on] = np.arange(len(on))
        out_r, out_c, out_v = [], [], []
        n_out = n_lp = 0
        for i in targets:
            if deadline is not None and time.perf_counter() >= deadline:
                break
            k = int(local[i])
            model.set_col_bounds([k], -np.inf, np.inf)
            model.set_objective(indices=[k], values=[1.0], sense="max")
            try:
                res = model.solve()
            except RuntimeError:
                res = None
            model.set_col_bounds([k], -z[i], z[i])
            n_lp += 1
            if res is None or res.status != "optimal" or res.duals is None:
                continue
            if res.objective >= z[i] - SUPPORT_MIN_VIOLATION:
                continue  # the cut from these multipliers is no more violated than this
            lam = np.zeros(self.A.shape[0])
            lam[rows] = res.duals
            r = -(self.AT @ lam)
            r[i] += 1.0
            if abs(r[i]) > 1e-6:  # y_i free: its reduced cost is 0 at an optimum
                continue
            # a tiny r_j is kept in S (a weaker cut), never dropped as zero
            scale = max(1.0, float(np.abs(r).max()))
            S = np.flatnonzero(np.abs(r) > 1e-11 * scale)
            S = S[S != i]
            if self.fixed[S].any():
                continue
            S = S[self.cand[S]]
            if z[S].sum() >= z[i] - SUPPORT_MIN_VIOLATION:
                continue
            key = (int(i), S.tobytes())
            if key in self.seen:
                continue
            self.seen.add(key)
            out_r.append(np.full(len(S) + 1, n_out))
            out_c.append(np.concatenate([self.col[S], [self.col[i]]]))
            out_v.append(np.concatenate([np.ones(len(S)), [-1.0]]))
            n_out += 1
        if n_out == 0:
            return empty, n_lp
        R = sp.csr_matrix((np.concatenate(out_v), (np.concatenate(out_r),
                                                   np.concatenate(out_c))),
                          shape=(n_out, self.n_cols))
        return R, n_lp


#: Gomory mixed-integer cuts from the root LP's simplex tableau (branch-and-cut only):
#: rounds after the capacity separation converges, cuts per round, the smallest
#: fractionality of a basic column used as source row, and the largest coefficient ratio
#: accepted (numerically unsafe cuts are dropped)
#: None = "auto": 3 rounds when the candidates' costs differ (TABLE7 value, two 600 s
#: runs side by side, see benchmarks/results/optimal.md), none when they are all equal
#: (HIE1372D unity, 60 s: 2 nodes and no bound gain)
GOMORY_ROUNDS: int | None = None
GOMORY_AUTO_ROUNDS = 3
GOMORY_PER_ROUND = 40
GOMORY_MIN_FRAC = 0.01
GOMORY_MAX_DYNAMISM = 1e6


def _gomory_cuts(highs, k: int, max_cuts: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """Gomory mixed-integer cuts ``G z >= g`` from the current optimal basis of an LP
    over binary ``z`` (the first ``k`` columns) and rows ``lo <= a z`` (upper bound
    infinite).

    The tableau row of a basic fractional ``z_b`` reads ``z_b + sum_j abar_j z_j -
    sum_i binv_i r_i = 0`` over the nonbasic columns and row activities ``r_i = a_i z``
    (HiGHS: ``getReducedRow`` / ``getBasisInverseRow``).  In the nonbasic distances ``w``
    (``z_j - lo_j`` or ``hi_j - z_j`` for columns, integer; ``r_i - lo_i`` for rows,
    continuous) it is ``z_b + sum g_k w_k = z_b*``, and with ``f0 = frac(z_b*)`` every
    integer point meets ``sum_int min(f_k / f0, (1 - f_k) / (1 - f0)) w_k +
    sum_cont (g_k > 0 ? g_k / f0 : -g_k / (1 - f0)) w_k >= 1`` (``f_k = frac(g_k)``).
    Substituted back it is a row over ``z``; the LP point violates it by 1 (in ``w``),
    which is checked numerically, and the right-hand side is relaxed by 1e-6 relative.
    Valid for every binary ``z`` meeting the LP's rows and column bounds, so only the
    root's (global) bounds may be in the model.
    """
    lp = highs.getLp()
    m = lp.num_row_
    n = lp.num_col_
    if m == 0:
        return sp.csr_matrix((0, k)), np.zeros(0)
    am = lp.a_matrix_
    A = sp.csc_matrix((np.asarray(am.value_), np.asarray(am.index_), np.asarray(am.start_)),
                      shape=(m, n)).tocsr()
    row_lo = np.asarray(lp.row_lower_, float)
    col_lo = np.asarray(lp.col_lower_, float)
    col_hi = np.asarray(lp.col_upper_, float)
    sol = highs.getSolution()
    x = np.asarray(sol.col_value, float)
    basis = highs.getBasis()
    col_st = np.fromiter((int(v) for v in basis.col_status), np.int64, n)
    row_st = np.fromiter((int(v) for v in basis.row_status), np.int64, m)
    lower, basic, upper = (int(highspy.HighsBasisStatus.kLower),
                           int(highspy.HighsBasisStatus.kBasic),
                           int(highspy.HighsBasisStatus.kUpper))
    # nonbasic rows must sit at their (finite) lower bound, columns at a finite bound
    if np.any((row_st != basic) & ((row_st != lower) | ~np.isfinite(row_lo))):
        return sp.csr_matrix((0, k)), np.zeros(0)
    if np.any((col_st != basic) & (col_st != lower) & (col_st != upper)):
        return sp.csr_matrix((0, k)), np.zeros(0)
    _, basics = highs.getBasicVariables()
    basics = np.asarray(basics)
    pos = np.flatnonzero((basics >= 0) & (basics < k))
    frac = x[basics[pos]] - np.floor(x[basics[pos]])
    ok = (frac > GOMORY_MIN_FRAC) & (frac < 1 - GOMORY_MIN_FRAC)
    pos, frac = pos[ok], frac[ok]
    pos = pos[np.argsort(np.abs(frac - 0.5), kind="stable")][:max_cuts]
    at_up = col_st == upper
    nb_col = col_st != basic
    nb_row = row_st != basic
    rows_out, rhs_out = [], []
    for p_ in pos:
        b = int(basics[p_])
        _, abar = highs.getReducedRow(int(p_))
        _, binv = highs.getBasisInverseRow(int(p_))
        abar = np.asarray(abar, float)
        binv = np.asarray(binv, float)
        xb = x[b]
        f0 = xb - np.floor(xb)
        # integer distances (columns): g = abar (at lower) or -abar (at upper)
        g_col = np.where(at_up, -abar, abar)
        g_col[~nb_col] = 0.0
        f = g_col - np.floor(g_col)
        c_col = np.minimum(f / f0, (1 - f) / (1 - f0))
        c_col[np.abs(g_col) < 1e-12] = 0.0  # an exact zero stays zero
        c_col[~nb_col] = 0.0
        # continuous distances (rows at their lower bound): g = -binv
        g_row = np.where(nb_row, -binv, 0.0)
        c_row = np.where(g_row > 0, g_row / f0, -g_row / (1 - f0))
        c_row[np.abs(g_row) < 1e-12] = 0.0
        # back to z: w_j = z_j - lo_j or hi_j - z_j, t_i = a_i z - lo_i
        coef = np.where(at_up, -c_col, c_col) + A.T @ c_row
        rhs = 1.0 + float(np.where(at_up, -c_col * col_hi, c_col * col_lo).sum()) \
            + float(c_row @ row_lo)
        coef = coef[:k]
        big = np.abs(coef).max() if len(coef) else 0.0
        if not np.isfinite(big) or big <= 0 or not np.isfinite(rhs):
            continue
        # the point violates the cut by exactly 1 in w: anything else is numerical trouble
        if abs(float(coef @ x[:k]) - (rhs - 1.0)) > 1e-6 * max(1.0, big, abs(rhs)):
            continue
        tiny = np.abs(coef) < 1e-9 * big
        # dropping a tiny positive coefficient relaxes the right-hand side by it
        # (z <= 1); dropping a negative one only weakens the cut
        rhs -= float(np.clip(coef[tiny], 0.0, None).sum())
        coef[tiny] = 0.0
        nz = np.abs(coef[coef != 0])
        if len(nz) == 0 or nz.max() / nz.min() > GOMORY_MAX_DYNAMISM:
            continue
        rhs -= 1e-6 * max(1.0, abs(rhs))
        rows_out.append(coef)
        rhs_out.append(rhs)
    if not rows_out:
        return sp.csr_matrix((0, k)), np.zeros(0)
    return sp.csr_matrix(np.vstack(rows_out)), np.asarray(rhs_out)


def _cost_of(mask, cost):
    return float(cost[mask].sum())


def benders(table, cost: np.ndarray, req: Requirements, cand: np.ndarray, *,
            time_limit: float | None = None, mip_gap: float | None = None,
            threads: int | None = 1, progress: Callable[[str, float], None] | None = None,
            start: np.ndarray | None = None, max_rounds: int = 10_000,
            reduce: bool = True, strong: bool = True, search: str = "bc",
            support_cuts: bool | None = None) -> MethodOutcome:
    """Row generation on the master MILP (see the module docstring).

    ``start`` is an optional protected pattern (bool mask) used as the first incumbent;
    ``support_cuts`` (default ``SUPPORT_CUTS``) adds :class:`_SupportSeparator`'s cuts.
    """
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + time_limit
    fixed = np.isin(table.status, ("U", "M"))
    if reduce:
        cand = _reduce_candidates(table, req, cand, fixed)
    cand_idx = np.flatnonzero(cand)
    stats = {"oracle_errors": 0}
    costs = cost[cand_idx]
    # every candidate costs the same (unity): several defaults below follow this
    equal_costs = bool(len(costs) == 0 or np.ptp(costs) <= 1e-12 * max(
        1.0, float(np.abs(costs).max())))
    racing = RACE_SIMPLEX if RACE_SIMPLEX is not None else not equal_costs
    stats["race_simplex"] = racing
    oracle = _SafeOracle(_HybridOracle(table, req, simplex_strategy=DUAL_SIMPLEX,
                                       racing=racing)
                         if DUAL_ORACLE else AttackerOracle(table, req, simplex_strategy=None),
                         stats)
    repair = _DeadlineRepair(table, req, cost, cand, oracle)
    stats.update({"rounds_lp": 0, "rounds_mip": 0, "cuts": 0, "lp_solves": 0,
             "heuristic_seconds": 0.0, "master_seconds": 0.0, "oracle_seconds": 0.0})

    def left():
        return None if deadline is None else max(0.0, deadline - time.perf_counter())

    def search_end() -> float | None:
        """Deadline of the search: while no protected pattern is known, the fallback
        repair's reserve (FALLBACK_RESERVE_SHARE of the limit) is kept back."""
        if deadline is None or best is not None:
            return deadline
        return deadline - FALLBACK_RESERVE_SHARE * time_limit

    def search_left():
        end = search_end()
        return None if end is None else max(0.0, end - time.perf_counter())

    def report(msg, frac):
        if progress is not None:
            progress(msg, frac)

    # ---- incumbent: given start or greedy repair from the primaries alone
    th = time.perf_counter()
    best = None
    # the root LP point (over all cells) once known: prunes try the cells it needs least
    # first among equal costs
    lp_hint = np.zeros(table.n_cells)
    # the latest unfinished repair (a deadline stopped it): the fallback continues it
    # (a repair stopped by time reports no count of what is left, so the latest wins:
    # it started from the most complete seed, the LP point's support)
    partial: list = [None]

    # the repair from the primaries alone when its first share of time did not finish it:
    # continued after the LP phase (its patterns are often cheaper than the repaired LP
    # supports: HIER13 value, session 4: 14.3e6 from the LP support vs 10.3e6)
    from_primaries: list = [None]

    def keep_partial(pattern, unmet):
        if unmet:
            partial[0] = pattern.copy()
    if start is not None:
        chk = oracle.check(start, cuts=False)
        stats["lp_solves"] += chk.n_lp
        if chk.ok:
            best = np.asarray(start, bool).copy()
    if best is None:
        # from the primaries alone the repair can be slow on big tables: a tenth of the
        # time; without a result the LP phase's rounded points give the first incumbent
        repair_by = None if time_limit is None else t0 + 0.1 * time_limit
        pattern, unmet = repair.run(fixed, deadline=repair_by)
        keep_partial(pattern, unmet)
        if unmet:
            from_primaries[0] = pattern.copy()
        if not unmet:  # the repair only ends without unmet conditions when protected
            # pruning costs an oracle check per suppression: a tenth of the time at most
            prune_by = None if time_limit is None else min(
                deadline, time.perf_counter() + 0.1 * time_limit)
            best = _prune(oracle, pattern, fixed, cost, prune_by, lp_hint)
    stats["heuristic_seconds"] += time.perf_counter() - th
    best_cost = _cost_of(best & ~fixed, cost) if best is not None else np.inf

    def improve(seed: np.ndarray) -> None:
        """Repair a pattern, drop its redundant suppressions, keep it if cheaper."""
        nonlocal best, best_cost
        now = time.perf_counter()
        end = search_end()
        if end is not None and now >= end:
            return
        # the heuristic only feeds the upper bound: keep it to a share of the time used
        if best is not None and stats["heuristic_seconds"] > HEURISTIC_SHARE * (now - t0):
            return
        th = time.perf_counter()
        pattern, unmet = repair.run(seed, deadline=end)
        keep_partial(pattern, unmet)
        # pruning costs one oracle check per suppression: only for promising patterns
        if not unmet and _cost_of(pattern & ~fixed, cost) < PRUNE_WITHIN * best_cost:
            prune_by = None if time_limit is None else min(
                deadline, time.perf_counter() + 0.1 * time_limit)
            pattern = _prune(oracle, pattern, fixed, cost, prune_by, lp_hint)
            c = _cost_of(pattern & ~fixed, cost)
            if c < best_cost:
                best, best_cost = pattern, c
        stats["heuristic_seconds"] += time.perf_counter() - th

    searched: set = set()  # incumbents the swap search has already been through

    def local_search() -> None:
        """Swap search around the incumbent: publish one secondary again (dearest
        first), forbid it, repair what that breaks with the other cells and drop what
        the result does not need; a cheaper protected pattern becomes the incumbent and
        is searched in turn.  Bounded like every heuristic by its share of the time."""
        nonlocal best, best_cost
        if not LOCAL_SEARCH or best is None:
            return
        th = time.perf_counter()
        ban = np.zeros(table.n_cells, bool)
        allowed = repair.candidates
        try:
            while best.tobytes() not in searched:
                searched.add(best.tobytes())
                secs = np.flatnonzero(best & ~fixed)
                for i in secs[np.argsort(-cost[secs], kind="stable")]:
                    now = time.perf_counter()
                    if deadline is not None and (
                            now >= deadline or stats["heuristic_seconds"] + (now - th)
                            > HEURISTIC_SHARE * (now - t0)):
                        return
                    seed = best.copy()
                    seed[i] = False
                    ban[i] = True
                    repair.candidates = allowed & ~ban
                    pattern, unmet = repair.run(seed, deadline=deadline)
                    repair.candidates = allowed
                    ban[i] = False
                    stats["swaps"] = stats.get("swaps", 0) + 1
                    if unmet or _cost_of(pattern & ~fixed, cost) >= PRUNE_WITHIN * best_cost:
                        continue
                    pattern = _prune(oracle, pattern, fixed, cost, deadline, lp_hint)
                    c = _cost_of(pattern & ~fixed, cost)
                    if c < best_cost - 1e-9 * max(1.0, best_cost):
                        best, best_cost = pattern, c
                        stats["swap_improvements"] = stats.get("swap_improvements", 0) + 1
                        report(f"swap search: incumbent {best_cost:.6g}", 0.5)
                        break  # search around the new incumbent
        finally:
            repair.candidates = allowed
            stats["heuristic_seconds"] += time.perf_counter() - th

    report("incumbent", 0.05)

    # with integer costs every pattern's cost is an integer: a bound rounds up
    integral_costs = bool(np.all(np.abs(costs - np.round(costs)) <= 1e-9))
    fractional_check = FRACTIONAL_CHECK if FRACTIONAL_CHECK is not None else equal_costs
    stats["fractional_check"] = fractional_check
    col = np.full(table.n_cells, -1, dtype=np.int64)
    col[cand_idx] = np.arange(len(cand_idx))
    live = cand & ((req.up > 0) | (req.down > 0))
    static = _bridgeless_rows(table, col, fixed, live) if strong else None
    master = _Master(cost[cand_idx], table.n_cells, cand_idx, fixed, threads, mip_gap,
                     static=static)
    # (single-relation capacity cuts were tried as initial rows: valid, but they steer
    # the LP to points where the capped separation finds little -- TABLE7 value root
    # bound 1.89e6 with them, 3.83e6 without)
    cols_l, coef_l, rhs_l, prim_l = _initial_cover_rows(table, req, cand, fixed)
    try:
        n_cover = master.add(cols_l, coef_l, rhs_l, primaries=prim_l)
    except _Unprotectable as exc:
        raise InfeasibleRulesError(_unprotectable_message(table, exc.cells)) from None
    stats["static_rows"] = master.n_static
    stats["initial_rows"] = n_cover
    stats["candidates"] = len(cand_idx)

    def add_cuts(check, point=None):
        try:
            n = master.add([c.cols for c in check.cuts], [c.coef for c in check.cuts],
                           [c.rhs for c in check.cuts],
                           point=point if strong else None,
                           primaries=[c.primary for c in check.cuts])
        except _Unprotectable as exc:
            raise InfeasibleRulesError(_unprotectable_message(table, exc.cells)) from None
        stats["cuts"] += n
        return n

    def full_z(zc):
        z = fixed.astype(float)
        z[cand_idx] = zc
        return z

    # support cuts only in the branch-and-cut (see _Master.add_static)
    if support_cuts is None:
        support_cuts = SUPPORT_CUTS
    support = (_SupportSeparator(table, req, cand, fixed)
               if support_cuts and strong and search == "bc" else None)
    stats.update(support_cuts=0, support_lps=0, support_seconds=0.0)

    def add_support(zc, max_lps):
        if support is None:
            return 0
        ts = time.perf_counter()
        R, n_lp = support.separate(full_z(zc), min_z=SUPPORT_MIN_Z, max_lps=max_lps,
                                   deadline=deadline)
        n = master.add_static(R)
        stats["support_cuts"] += n
        stats["support_lps"] += n_lp
        stats["support_seconds"] += time.perf_counter() - ts
        return n

    # ---- phase 1: LP relaxation with fractional separation
    master.relax(True)
    last = -np.inf
    stall = 0
    lower_bound = 0.0
    res = None
    lp_deadline = None if time_limit is None else t0 + LP_PHASE_SHARE * time_limit
    n_prim = len(req.primary)
    lp_chunk = min(n_prim, LP_SEPARATION_CHUNK or n_prim) if n_prim else 1
    cursor = 0  # next primary (slot) the LP phase's chunked separation looks at
    swept = 0  # primaries separated since the last stall test
    for _ in range(max_rounds):
        if lp_deadline is not None and time.perf_counter() > lp_deadline:
            break
        tm = time.perf_counter()
        res = master.model.solve(time_limit=left())
        stats["master_seconds"] += time.perf_counter() - tm
        if res.status != "optimal":
            break
        lower_bound = max(lower_bound, _round_bound(float(res.objective), integral_costs))
        stats["rounds_lp"] += 1
        zc = np.clip(res.x, 0.0, 1.0)
        # the primaries in chunks, round-robin from where the last round stopped; the
        # round ends after the first chunk with a cut, and finds "no cut" only after a
        # whole cycle of empty chunks at this point
        n_new = 0
        empty = 0
        while empty < n_prim:
            slots = (cursor + np.arange(lp_chunk)) % n_prim
            cursor = (cursor + lp_chunk) % n_prim
            part = np.zeros(n_prim, bool)
            part[slots] = True
            to = time.perf_counter()
            if lp_chunk == n_prim:
                chk = (oracle.check(full_z(zc), deadline=deadline) if fractional_check
                       else Check())
                sep = oracle.separate(full_z(zc), deadline=deadline)
            else:
                chk = (oracle.check(full_z(zc), primaries=req.primary[part],
                                    deadline=deadline) if fractional_check else Check())
                sep = oracle.separate_some(full_z(zc), part, deadline=deadline)
            stats["oracle_seconds"] += time.perf_counter() - to
            stats["lp_solves"] += chk.n_lp + sep.n_lp
            n_new = add_cuts(chk, zc) + add_cuts(sep, zc)
            if n_new or (lp_deadline is not None and time.perf_counter() > lp_deadline):
                break
            empty += lp_chunk
        swept += lp_chunk if n_new else empty
        n_new += add_support(zc, SUPPORT_MAX_LPS)
        if n_new == 0:
            break
        if swept >= n_prim:
            # the stall test per sweep over all primaries (one round without chunks)
            swept = 0
            if res.objective <= last * (1 + LP_STALL_TOL) + 1e-12:
                stall += 1
                if stall >= LP_STALL_ROUNDS:
                    break
            else:
                stall = 0
            last = float(res.objective)
        report(f"LP round {stats['rounds_lp']}: bound {res.objective:.6g}", 0.2)
    stats["root_bound"] = lower_bound
    stats["root_seconds"] = time.perf_counter() - t0
    # incumbents from the LP point: round at a few thresholds, repair, prune
    zlp = None
    if res is not None and res.status == "optimal":
        zlp = np.clip(res.x[: master.k], 0.0, 1.0)
        lp_hint[cand_idx] = zlp
        # without an incumbent the LP's whole support first: the repair then has the
        # fewest conditions left to fix (TABLE3: the repair from the primaries alone
        # did not finish within a tenth of a 60 s limit)
        thetas = (0.5, 0.2, 1e-3) if best is not None else (1e-3, 0.2, 0.5)
        for theta in thetas:
            seed = fixed.copy()
            seed[cand_idx[zlp >= theta]] = True
            improve(seed)
    if from_primaries[0] is not None and (deadline is None or search_left() > 0):
        # finish the repair from the primaries when another tenth of the limit does it;
        # the cheaper of it and the LP-support incumbents is kept
        th = time.perf_counter()
        by = None if time_limit is None else min(search_end(), th + PRIMARY_REPAIR_SHARE
                                                 * time_limit)
        pattern, unmet = repair.run(from_primaries[0], deadline=by)
        stats["primary_repair_finished"] = not unmet
        if not unmet:
            prune_by = None if time_limit is None else min(
                deadline, time.perf_counter() + 0.1 * time_limit)
            pattern = _prune(oracle, pattern, fixed, cost, prune_by, lp_hint)
            c = _cost_of(pattern & ~fixed, cost)
            stats["primary_repair_cost"] = c
            if c < best_cost:
                best, best_cost = pattern, c
        stats["heuristic_seconds"] += time.perf_counter() - th
    local_search()
    def branch_and_cut() -> tuple[bool, float]:
        """Our own branch-and-cut on the LP master (HiGHS has no usable lazy-constraint
        callback): best-bound search with plunging, capacity cuts separated at every
        node (all globally valid, so every node's LP keeps them), reduced-cost fixing
        against the incumbent, and the repair heuristic on node LP points.  Returns
        (proven, lower bound)."""
        nonlocal best, best_cost
        k = master.k
        all_cols = np.arange(k)
        glob_hi = np.ones(k)
        glob_lo = np.zeros(k)
        counter = 0
        # heap entries: (LP bound, -depth, tie counter, branching path); the unrounded
        # LP bound orders the nodes (integer costs: the rounded one prunes them)
        heap: list = [(lower_bound, 0, counter, ())]
        # the parent's final basis of an open node, by tie counter
        bases: dict = {}
        stats.update(nodes=0, node_lps=0, bc_max_depth=0, sep_skipped=0, basis_restored=0,
                     pool_reactivated=0, strong_lps=0, sb_pruned=0)
        if PURGE_ROOT and zlp is not None and len(master.in_model):
            # slack cuts make every node LP slower: keep the ones near binding at the
            # root point; the others wait in the pool (checked at every node LP point)
            lhs = master.pool_matrix @ zlp
            keep = np.flatnonzero(lhs <= 1.0 + PURGE_SLACK)
            stats["purged_rows"] = int(len(master.in_model) - len(keep))
            master.rebuild(keep)
        # pseudo-costs: bound gain per unit change of a column, down (0) and up (1)
        pc_sum = np.zeros((2, k))
        pc_n = np.zeros((2, k))
        origin: dict = {}  # tie counter -> (column, direction, fractionality, parent bound)

        def prunable(bound: float) -> bool:
            bound = _round_bound(bound, integral_costs)
            return best is not None and bound >= best_cost * (1 - target) - 1e-9

        def node_lp(lo, hi, root):
            """Cut loop at one node: (bound, z, reduced costs) or None when pruned."""
            nonlocal best, best_cost
            master.model.set_col_bounds(all_cols, lo, hi)
            last_obj = -np.inf
            for rnd in range(max_rounds):
                if search_end() is not None and time.perf_counter() >= search_end():
                    return "time"
                tm = time.perf_counter()
                r = master.model.solve(time_limit=search_left())
                stats["master_seconds"] += time.perf_counter() - tm
                stats["node_lps"] += 1
                stats["node_lp_iterations"] = stats.get("node_lp_iterations", 0) + int(
                    master.model.highs.getInfo().simplex_iteration_count)
                if r.status == "infeasible":
                    return None
                if r.status != "optimal":
                    return "time"
                bound = float(r.objective)
                if prunable(bound):
                    return None
                zc = np.clip(r.x[:k], 0.0, 1.0)
                back = master.violated_pool_rows(zc, tol=1e-6)
                if len(back):
                    # purged cuts the point violates: back into the LP, no oracle needed
                    master.activate(back)
                    stats["pool_reactivated"] += len(back)
                    continue
                integral = bool(np.all((zc < 1e-6) | (zc > 1 - 1e-6)))
                to = time.perf_counter()
                if integral:
                    zi = zc > 0.5
                    chk = oracle.check(full_z(zi.astype(float)) > 0.5, deadline=search_end())
                    stats["oracle_seconds"] += time.perf_counter() - to
                    stats["lp_solves"] += chk.n_lp
                    if not chk.complete and not chk.violated:
                        if search_end() is not None and time.perf_counter() >= search_end():
                            return "time"
                        # the attacker LPs failed numerically on this pattern: the node is
                        # dropped, and no optimality is claimed afterwards
                        unsure[0] = True
                        improve(full_z(zi.astype(float)) > 0.5)
                        return None
                    if chk.ok:
                        z = full_z(zi.astype(float)) > 0.5
                        c = _cost_of(z & ~fixed, cost)
                        if c < best_cost:
                            # clean-up: publish again what the pattern does not need
                            if CLEANUP_INCUMBENTS:
                                z = _prune(oracle, z, fixed, cost, None if deadline is None
                                           else min(deadline, time.perf_counter()
                                                    + 0.05 * time_limit), lp_hint)
                                c = _cost_of(z & ~fixed, cost)
                            best, best_cost = z, c
                            report(f"B&C: incumbent {best_cost:.6g}", 0.5)
                        return None
                    if not chk.complete:
                        return "time"
                    sep = oracle.separate(full_z(zc), deadline=search_end())
                    stats["lp_solves"] += sep.n_lp
                    if add_cuts(chk, zc) + add_cuts(sep, zc) == 0:
                        # numerically the cut did not separate: exclude the pattern and
                        # its subsets (fewer suppressions never protect more)
                        off = np.flatnonzero(~zi)
                        master.add([cand_idx[off]], [np.ones(len(off))], [1.0])
                    continue
                # fractional: separate while the bound moves (more rounds at the root)
                if not root and (rnd >= NODE_CUT_ROUNDS or
                                 r.objective <= last_obj + NODE_CUT_TOL * max(1.0, abs(last_obj))):
                    return bound, zc, r.reduced_costs
                # below the root only the capped separation: at fractional points its
                # cuts are the stronger ones, and it halves the attacker LPs per round
                chk = (oracle.check(full_z(zc), deadline=search_end())
                       if root and fractional_check else Check())
                if root or not RESTRICT_SEPARATION:
                    sep = oracle.separate(full_z(zc), deadline=search_end())
                else:
                    sep = separate_binding(zc)
                stats["oracle_seconds"] += time.perf_counter() - to
                stats["lp_solves"] += chk.n_lp + sep.n_lp
                n_new = add_cuts(chk, zc) + add_cuts(sep, zc)
                n_new += add_support(zc, SUPPORT_MAX_LPS if root else SUPPORT_NODE_MAX_LPS)
                n_new += add_covers(zc)
                if n_new == 0 and root and gomory_left[0] > 0:
                    # the capacity separation is done: cut the root LP's basis instead
                    gomory_left[0] -= 1
                    tg = time.perf_counter()
                    R, g = _gomory_cuts(master.model.highs, k, GOMORY_PER_ROUND)
                    n_new = master.add_general(R, g)
                    stats["gomory_cuts"] = stats.get("gomory_cuts", 0) + n_new
                    stats["gomory_seconds"] = stats.get("gomory_seconds", 0.0) + (
                        time.perf_counter() - tg)
                if n_new == 0:
                    return bound, zc, r.reduced_costs
                last_obj = float(r.objective)
            return "time"

        unsure = [False]  # a node was dropped on a failed attacker LP: no proof
        gomory_left = [0]  # root rounds of Gomory cuts still allowed (set below)
        branching_rule = BRANCHING
        if branching_rule == "auto":
            branching_rule = "fractional" if equal_costs else "reliability"
        stats["branching"] = branching_rule
        gomory_left[0] = (GOMORY_ROUNDS if GOMORY_ROUNDS is not None
                          else 0 if equal_costs else GOMORY_AUTO_ROUNDS)
        use_covers = COVER_CUTS if COVER_CUTS is not None else not equal_costs

        def purge_now() -> bool:
            if not PURGE_TREE_EVERY or stats["nodes"] % PURGE_TREE_EVERY:
                return False
            if not equal_costs:
                return True
            return (PURGE_TREE_EQUAL_COSTS_ROWS is not None
                    and int(master.in_model.sum()) > PURGE_TREE_EQUAL_COSTS_ROWS)

        def add_covers(zc):
            """Cover cuts (:func:`_cover_cuts`) of the pool cuts near binding at ``zc``."""
            if not use_covers or len(master.in_model) == 0:
                return 0
            tc = time.perf_counter()
            P = master.pool_matrix
            near = np.flatnonzero(P @ zc <= 1.0 + COVER_ROW_SLACK)
            found = _cover_cuts(P[near], zc)
            n = 0
            if found:
                n = master.add([cand_idx[c] for _, c in found],
                               [np.ones(len(c)) for _, c in found], [1.0] * len(found),
                               primaries=[int(master.pool_primary[near[r]]) for r, _ in found])
            stats["cover_cuts"] = stats.get("cover_cuts", 0) + n
            stats["cover_seconds"] = stats.get("cover_seconds", 0.0) + (
                time.perf_counter() - tc)
            return n

        def separate_binding(zc):
            """Capped separation for the primaries with a binding cut at ``zc`` only
            (the others are given no levels, so their attacker LPs are skipped)."""
            lhs = master.pool_matrix @ zc
            prim = np.unique(master.pool_primary[lhs <= 1.0 + BINDING_SLACK])
            prim = prim[prim >= 0]
            keep = np.isin(req.primary, prim)
            stats["sep_skipped"] += int((~keep).sum())
            if not keep.any():
                return Check()
            slots = np.flatnonzero(keep)
            # the primaries whose cut was violated most recently first (stable: ties keep
            # the primaries' order)
            slots = slots[np.argsort(-last_hit[slots], kind="stable")]
            chunk = SEPARATION_CHUNK or len(slots)
            sep_round[0] += 1
            out = Check()
            z = _clean(full_z(zc))
            for start in range(0, len(slots), chunk):
                part = np.zeros(len(keep), bool)
                part[slots[start:start + chunk]] = True
                errors = stats["oracle_errors"]
                got = oracle.separate_some(z, part, deadline=search_end())
                if stats["oracle_errors"] > errors:
                    out.complete = False
                    return out
                out.violated += got.violated
                out.cuts += got.cuts
                out.n_lp += got.n_lp
                for s_cell, _, _ in got.violated:
                    last_hit[oracle.slot[s_cell]] = sep_round[0]
                if not got.complete:
                    out.complete = False
                    break
                if out.cuts:
                    stats["sep_chunks_saved"] = stats.get("sep_chunks_saved", 0) + int(
                        len(slots) > start + chunk)
                    break
            return out

        # separation round of each primary's latest violated cut (separate_binding's order)
        last_hit = np.full(len(req.primary), -1, np.int64)
        sep_round = [0]
        plunge = None  # (bound, depth, path, key) processed next without touching the heap

        def choose_branch(zc, bound, lo, hi, allow_strong=True):
            """(column, down bound, up bound) to branch on; a bound is +inf when strong
            branching found that child infeasible, and None for "nothing to branch on".
            Reliability branching: pseudo-cost scores, with strong branching (the child
            LPs with today's cuts and no new ones) for columns with too few observations;
            a child's strong-branching LP bound is a valid bound of that child."""
            frac = np.minimum(zc, 1 - zc)
            frac[(lo == hi)] = -1.0
            free = np.flatnonzero(frac > 1e-6)
            if len(free) == 0:
                return None
            tiebreak = 1e-9 * cost[cand_idx] / max(1e-12, float(cost[cand_idx].max()))
            if branching_rule == "fractional":
                score = frac + tiebreak
                return int(np.argmax(score)), bound, bound
            eps = 1e-6 * max(1.0, abs(bound))
            seen = pc_n > 0
            mean = np.array([pc_sum[d][seen[d]].sum() / max(1, seen[d].sum())
                             if seen[d].any() else 1.0 for d in (0, 1)])
            per = np.where(seen, pc_sum / np.maximum(pc_n, 1), mean[:, None])
            gd = per[0, free] * zc[free]
            gu = per[1, free] * (1 - zc[free])
            score = np.maximum(gd, eps) * np.maximum(gu, eps) * (1 + frac[free] + tiebreak[free])
            order = np.argsort(-score, kind="stable")
            best_j, best_s = int(free[order[0]]), -1.0
            best_d = best_u = bound
            unreliable = np.minimum(pc_n[0], pc_n[1]) < RELIABLE
            reliable_best = [(score[o], int(free[o])) for o in order if not unreliable[free[o]]]
            if reliable_best:
                best_s, best_j = reliable_best[0]
            trials = [int(free[o]) for o in order if unreliable[free[o]]][:SB_CANDIDATES]
            if not trials or not allow_strong:
                return best_j, bound, bound
            ts = time.perf_counter()
            try:
                return strong(trials, zc, bound, lo, hi, eps, tiebreak, frac,
                              best_j, best_s, best_d, best_u)
            finally:
                stats["strong_seconds"] = stats.get("strong_seconds", 0.0) + (
                    time.perf_counter() - ts)

        def strong(trials, zc, bound, lo, hi, eps, tiebreak, frac,
                   best_j, best_s, best_d, best_u):
            """Strong branching on ``trials`` (see choose_branch)."""
            no_gain = 0
            for j in trials:
                if search_end() is not None and time.perf_counter() >= search_end():
                    break
                out = []
                for v in (0.0, 1.0):
                    # each trial starts warm from the previous one's basis (a few
                    # iterations away) instead of the node's restored basis, which costs
                    # a refactorisation per trial (per LP no measurable difference on
                    # TABLE7 value, 18-26 ms either way on a loaded machine); the
                    # caller restores the node's basis once afterwards
                    master.model.set_col_bounds([j], v, v)
                    obj, st = master.model.objective_only(time_limit=search_left())
                    master.model.set_col_bounds([j], lo[j], hi[j])
                    stats["strong_lps"] += 1
                    if st == "infeasible":
                        out.append(np.inf)
                    elif st == "optimal":
                        out.append(max(bound, obj))
                    else:
                        out.append(None)
                if None in out:
                    break  # time: branch on the best so far
                d, u = out
                for side, val, f in ((0, d, zc[j]), (1, u, 1 - zc[j])):
                    if np.isfinite(val):
                        pc_sum[side, j] += (val - bound) / max(f, 1e-6)
                        pc_n[side, j] += 1
                if prunable(d) or prunable(u):
                    # a child that cannot beat the incumbent: branch here at once
                    stats["sb_pruned"] += 1
                    return j, d, u
                sc = max(d - bound, eps) * max(u - bound, eps) * (1 + frac[j] + tiebreak[j])
                if sc > best_s:
                    best_j, best_s, best_d, best_u = j, sc, d, u
                    no_gain = 0
                else:
                    no_gain += 1
                    if no_gain >= SB_LOOKAHEAD:
                        break
            return best_j, best_d, best_u
        open_bound = lower_bound
        while heap or plunge is not None:
            if search_end() is not None and time.perf_counter() >= search_end():
                break
            jumped = plunge is None
            if plunge is not None:
                nb, depth, path, key = plunge
                plunge = None
            else:
                nb, neg_depth, key, path = heapq.heappop(heap)
                depth = -neg_depth
                saved = bases.pop(key, None)
                if prunable(nb):
                    continue
                # a jump in the tree: start from the parent's basis, not the last node's
                if saved is not None and master.set_basis(saved):
                    stats["basis_restored"] += 1
            if prunable(nb):
                continue
            lo, hi = glob_lo.copy(), glob_hi.copy()
            for j, v in path:
                lo[j] = hi[j] = v
            stats["nodes"] += 1
            stats["bc_max_depth"] = max(stats["bc_max_depth"], depth)
            out = node_lp(lo, hi, root=not path)
            born = origin.pop(key, None) if path else None
            if born is not None and not isinstance(out, str):
                # the child's bound gain feeds its branching column's pseudo-cost
                bj, side, f, parent = born
                gain = (np.inf if out is None else out[0]) - parent
                if np.isfinite(gain) and gain >= 0:
                    pc_sum[side, bj] += gain / max(f, 1e-6)
                    pc_n[side, bj] += 1
            if out is None:
                continue
            if best is not None and best.tobytes() not in searched:
                local_search()
            if isinstance(out, str):  # time: the node stays open
                heapq.heappush(heap, (nb, -depth, counter, path))
                counter += 1
                break
            bound, zc, rc = out
            if not path:
                open_bound = max(open_bound, bound)
                stats["root_node_bound"] = bound
            # reduced-cost fixing: a column whose reduced cost lifts the bound to the
            # incumbent's cost is fixed in this subtree (globally at the root)
            if best is not None and rc is not None and len(rc) >= k:
                rck = np.asarray(rc[:k])
                obj = float(master.model.last_result.objective)
                to0 = (zc < 1e-6) & (obj + rck >= best_cost * (1 - target) - 1e-9) & (hi > 0.5)
                to1 = (zc > 1 - 1e-6) & (obj - rck >= best_cost * (1 - target) - 1e-9) & (lo < 0.5)
                if not path:
                    glob_hi[to0] = 0.0
                    glob_lo[to1] = 1.0
                    stats["rc_fixed"] = int((glob_hi < 0.5).sum() + (glob_lo > 0.5).sum())
                else:
                    path = path + tuple((int(j), 0.0) for j in np.flatnonzero(to0)) \
                        + tuple((int(j), 1.0) for j in np.flatnonzero(to1))
            if purge_now():
                keep = master.purge(zc, PURGE_TREE_SLACK)
                if keep is not None:
                    stats["tree_purged"] = stats.get("tree_purged", 0) + int((~keep).sum())
                    # the open nodes' saved bases lose the deleted rows; a basis in which
                    # a deleted row was binding (slack nonbasic) is no longer square: the
                    # node then starts from the current basis instead (keeping such rows
                    # in the model was slower: TABLE7 value, 180 s, 431 nodes vs 781)
                    for key in list(bases):
                        bcols, brows = bases[key]
                        kept = keep[: len(brows)]
                        if np.any(brows[~kept] != _BASIC):
                            del bases[key]
                            stats["bases_dropped"] = stats.get("bases_dropped", 0) + 1
                        else:
                            bases[key] = (bcols, brows[kept])
            # a rounded node point, repaired and pruned: new incumbents along the way
            if stats["nodes"] % HEURISTIC_EVERY == 1:
                seed = fixed.copy()
                seed[cand_idx[zc >= 0.5]] = True
                improve(seed)
                if prunable(bound):
                    continue
            # branch (reliability branching, see choose_branch); save the basis first:
            # strong branching re-solves from it, and the down child starts from it
            saved = master.get_basis() if NODE_BASIS else None
            pick = choose_branch(zc, bound, lo, hi,
                                 allow_strong=jumped or not SB_ONLY_AT_JUMPS or not path)
            if pick is None:
                continue  # nothing left to branch on (cannot happen for a fractional z)
            j, b_down, b_up = pick
            if saved is not None:
                master.set_basis(saved)
            kids = []
            for v, b in ((1.0, b_up), (0.0, b_down)):
                if not np.isfinite(b) or prunable(b):
                    continue  # infeasible or no better than the incumbent
                origin[counter] = (j, int(v), float(zc[j] if v == 0.0 else 1 - zc[j]), bound)
                kids.append((max(bound, b), depth + 1, path + ((j, v),), counter))
                counter += 1
            if not kids:
                continue
            # plunge into the first child (the up branch, suppress the cell, when alive):
            # it reaches protected patterns
            plunge = kids[0]
            for kb, kd, kp, kkey in kids[1:]:
                if saved is not None:
                    bases[kkey] = saved
                heapq.heappush(heap, (kb, -kd, kkey, kp))
            if stats["nodes"] % 50 == 0:
                lb_now = _round_bound(min([h[0] for h in heap] + [bound]), integral_costs)
                report(f"B&C node {stats['nodes']}: bound {lb_now:.6g}, "
                       f"best {best_cost:.6g}, open {len(heap)}", 0.5)
        if plunge is not None:
            heapq.heappush(heap, (plunge[0], -plunge[1], plunge[3], plunge[2]))
        heap = [h for h in heap if not prunable(h[0])]
        if not heap and not unsure[0]:
            return best is not None, (best_cost if best is not None else open_bound)
        if not heap:
            return False, _round_bound(open_bound, integral_costs)
        return False, max(lower_bound, _round_bound(min(h[0] for h in heap), integral_costs))

    target = DEFAULT_MIP_GAP if mip_gap is None else float(mip_gap)
    proven = False
    solver_status = "time_limit"
    if search == "bc":
        stats["search"] = "branch-and-cut"
        proven, lower_bound = branch_and_cut()
        solver_status = "optimal" if proven else "time_limit"
    else:
        stats["search"] = "milp-rounds"
        master.relax(False)
        # the integer master keeps the cover rows, the cuts tight at the last LP optimum and
        # the cuts found after it; the others wait in the pool
        keep = [np.arange(n_cover)]
        if res is not None and res.status == "optimal" and res.duals is not None:
            duals = np.asarray(res.duals)
            duals = duals[master.n_static:]
            rows_then = np.asarray(master.model_rows[:len(duals)])
            keep.append(rows_then[np.abs(duals) > 1e-9])
            # and the nearly tight ones: a MILP that only meets them again would be wasted
            zlp = np.clip(res.x[: master.k], 0.0, 1.0)
            keep.append(np.flatnonzero(master.pool_matrix @ zlp <= 1.0 + KEEP_SLACK))
            keep.append(np.asarray(master.model_rows[len(duals):], dtype=np.int64))
        else:
            keep.append(np.asarray(master.model_rows, dtype=np.int64))
        master.rebuild(np.concatenate(keep).astype(np.int64))
        stats["pool_rows"] = len(master.in_model)
        stats["mip_rows_start"] = int(master.in_model.sum())

        # ---- phase 2: integer master until its optimum passes the oracle.  Early masters are
        # solved to a loose gap (their job is to produce patterns to cut off); once a master
        # pattern passes, the gap is tightened to the target and the master re-solved.
        target = DEFAULT_MIP_GAP if mip_gap is None else float(mip_gap)
        loose = max(target, LOOSE_MIP_GAP)
        current = loose
        round_limit = ROUND_TIME_LIMIT
        proven = False
        solver_status = "time_limit"
        seen_patterns = set()
        for _ in range(max_rounds):
            remaining = left()
            if remaining is not None and remaining <= 0:
                break
            # no MIP start (Highs.setSolution): with one, HiGHS 1.16 returned the start vector
            # as the solution of a run whose optimum was cheaper (TARGUS, unity cost), which
            # made a non-optimal pattern look proven
            master.set_gap(current)
            # while the master's patterns are still being cut off, a master solve only needs
            # a good pattern, not a proof: cap it, and let the cap grow when it finds nothing
            limit = remaining if current <= target else (
                round_limit if remaining is None else min(remaining, round_limit))
            tm = time.perf_counter()
            res = master.model.solve(time_limit=limit)
            stats["master_seconds"] += time.perf_counter() - tm
            stats["rounds_mip"] += 1
            bound = _mip_bound(master, res)
            if bound is not None:
                lower_bound = max(lower_bound, _round_bound(bound, integral_costs))
            if res.status == "infeasible":
                raise InfeasibleRulesError("the protection levels cannot be met by any pattern")
            if not res.has_solution:
                if limit is not None and (remaining is None or limit < remaining):
                    round_limit *= 2
                    continue
                break
            capped = res.status == "time_limit"
            zc = np.round(res.x[: master.k]).astype(bool)
            if not _consistent(master, res, zc):
                # a solution vector that does not match the reported objective proves nothing
                stats["inconsistent_master"] = stats.get("inconsistent_master", 0) + 1
                break
            z = fixed.copy()
            z[cand_idx] = zc
            key = zc.tobytes()
            from_pool = master.violated_pool_rows(zc.astype(float))
            if len(from_pool):
                for zc2 in master.saved_patterns(zc, SAVED_PATTERNS):
                    from_pool = np.union1d(from_pool, master.violated_pool_rows(zc2.astype(float)))
                # a pooled cut already excludes this pattern: no attacker LP needed
                master.activate(from_pool)
                stats["pool_reactivated"] = stats.get("pool_reactivated", 0) + len(from_pool)
                improve(z)
                continue
            to = time.perf_counter()
            chk = oracle.check(z, deadline=deadline)
            stats["oracle_seconds"] += time.perf_counter() - to
            stats["lp_solves"] += chk.n_lp
            if chk.ok:
                c = _cost_of(z & ~fixed, cost)
                if c <= best_cost:
                    best, best_cost = z, c
                if res.status == "optimal" and current <= target:
                    proven = True
                    solver_status = "optimal"
                    break
                if capped:
                    round_limit *= 2
                current = target
            elif chk.violated:
                if key in seen_patterns:
                    # numerically the cut did not cut this pattern off: exclude it and its
                    # subsets (an under-protected pattern stays so with fewer suppressions)
                    off = cand_idx[~zc]
                    master.add([off], [np.ones(len(off))], [1.0])
                seen_patterns.add(key)
                add_cuts(chk)
                # the capped separation at the same pattern often gives stronger cuts
                to = time.perf_counter()
                sep = oracle.separate(z.astype(float), deadline=deadline)
                stats["oracle_seconds"] += time.perf_counter() - to
                stats["lp_solves"] += sep.n_lp
                add_cuts(sep)
                # cheap incumbent: repair the master's pattern
                improve(z)
            # the run's other improving solutions: more patterns to cut off (or incumbents)
            for zc2 in master.saved_patterns(zc, SAVED_PATTERNS):
                if deadline is not None and time.perf_counter() >= deadline:
                    break
                z2 = fixed.copy()
                z2[cand_idx] = zc2
                if len(master.violated_pool_rows(zc2.astype(float))):
                    continue
                to = time.perf_counter()
                chk2 = oracle.check(z2, deadline=deadline)
                stats["oracle_seconds"] += time.perf_counter() - to
                stats["lp_solves"] += chk2.n_lp
                stats["saved_patterns"] = stats.get("saved_patterns", 0) + 1
                if chk2.ok:
                    c2 = _cost_of(z2 & ~fixed, cost)
                    if c2 < best_cost:
                        best, best_cost = z2, c2
                elif chk2.violated:
                    add_cuts(chk2)
            if best is not None and lower_bound >= best_cost * (1 - target) - 1e-9:
                proven = True
                solver_status = "optimal"
                break
            report(f"MIP round {stats['rounds_mip']}: bound {lower_bound:.6g}, "
                   f"best {best_cost:.6g}", 0.5)

    if best is None:
        # no protected pattern within the time: fall back to the greedy repair in the
        # reserve the search left it; what it leaves unmet, protect()'s audit-and-repair
        # finishes (the result is unproven either way and always audited)
        overrun = None if deadline is None else max(
            deadline, time.perf_counter() + FALLBACK_MIN_SECONDS)
        seed = fixed.copy()
        if partial[0] is not None:
            seed = partial[0] | fixed  # continue the repair that got furthest
        elif zlp is not None:
            seed[cand_idx[zlp >= 1e-3]] = True  # the LP's support: fewer conditions to fix
        pattern, unmet = repair.run(seed, deadline=overrun)
        stats["fallback_unmet"] = len(unmet)
        best = pattern
        best_cost = _cost_of(best & ~fixed, cost)
    status = table.status.copy()
    status[best & ~fixed] = "M"
    gap = 0.0 if proven else ((best_cost - lower_bound) / best_cost if best_cost > 0 else 0.0)
    stats.update(engine="benders", lower_bound=lower_bound, cost=best_cost,
                 master_cuts=master.n_cuts, seconds=time.perf_counter() - t0)
    report("done", 1.0)
    return MethodOutcome(status=status, proven_optimal=proven, solver_status=solver_status,
                         mip_gap=max(0.0, gap), details=stats)


def _round_bound(bound: float, integral: bool) -> float:
    """A valid lower bound, rounded up to the next integer when every cost is one."""
    if not integral:
        return bound
    return float(np.ceil(bound - 1e-6 * max(1.0, abs(bound))))


def _prune(oracle: AttackerOracle, pattern: np.ndarray, fixed: np.ndarray, cost: np.ndarray,
           deadline: float | None, hint: np.ndarray | None = None) -> np.ndarray:
    """Drop suppressions a protected pattern does not need, dearest first.

    With ``WITNESS_PRUNE`` the attacker solutions (witnesses) decide: a cell no witness
    moves can go at once (every witness stays feasible), and removing a moved cell only
    needs the attacker LPs of the conditions whose witness moves it
    (:func:`_witness_prune`); the result is confirmed by the oracle's full check.
    Otherwise (or when that confirmation fails) each removal is kept only when the
    oracle's full check still finds every condition met."""
    if WITNESS_PRUNE:
        try:
            out = _witness_prune(oracle, pattern, fixed, cost, deadline, hint)
        except RuntimeError:
            out = None
        if out is not None and (out == pattern).all():
            return out
        # a witness prune that ended at the deadline is still worth its one full check:
        # the confirmation may run PRUNE_CONFIRM_SECONDS past it
        confirm_by = None if deadline is None else max(
            deadline, time.perf_counter() + PRUNE_CONFIRM_SECONDS)
        if out is not None and oracle.check(out, cuts=False, first_only=True,
                                            deadline=confirm_by).ok:
            return out
    pattern = pattern.copy()
    extra = np.flatnonzero(pattern & ~fixed)
    for i in extra[_removal_order(cost[extra], None if hint is None else hint[extra])]:
        if deadline is not None and time.perf_counter() >= deadline:
            break
        pattern[i] = False
        if not oracle.check(pattern, cuts=False, first_only=True).ok:
            pattern[i] = True
    return pattern


#: prune with attacker witnesses (:func:`_witness_prune`) instead of a full oracle check
#: per removal (HIER13: a 1,800-cell LP-support pattern could not be pruned in 9 s)
WITNESS_PRUNE = True
#: at most this many (condition, suppressed cell) entries in the witness map
WITNESS_MAX_ENTRIES = 50_000_000


def _removal_order(cost: np.ndarray, hint: np.ndarray | None) -> np.ndarray:
    """Dearest first; ties by increasing ``hint``."""
    if hint is None:
        return np.argsort(-cost, kind="stable")
    return np.lexsort((hint, -cost))


def _witness_prune(oracle: AttackerOracle, pattern: np.ndarray, fixed: np.ndarray,
                   cost: np.ndarray, deadline: float | None,
                   hint: np.ndarray | None = None) -> np.ndarray | None:
    """Witness-based pruning of a protected pattern (None when it is not protected).

    For each primary ``s`` (and single-contributor attacker ``j``) the attacker LPs
    ``max +-y_s`` over the suppressed cells are solved once; their optimal ``y`` are the
    witnesses.  Publishing a cell ``i`` that a witness leaves at 0 keeps that witness
    feasible, so its optimum cannot drop: only conditions whose witness moves ``i`` are
    re-solved (with ``y_i = 0``).  Cells no witness moves are dropped together first.
    """
    req = oracle.req
    A = oracle.A
    sup = np.flatnonzero(pattern)
    if len(sup) == 0:
        return pattern.copy()
    sub = A[:, sup].tocsr()
    rows = np.flatnonzero(np.diff(sub.indptr) > 0)
    lo = -req.down[sup].astype(float)
    hi = req.up[sup].astype(float)
    lp = LinearProgram(c=np.zeros(len(sup)), A=sub[rows], row_lower=np.zeros(len(rows)),
                       row_upper=np.zeros(len(rows)), col_lower=lo, col_upper=hi)
    model = HighsModel(lp, simplex_strategy=DUAL_SIMPLEX)
    local = np.full(len(pattern), -1, np.int64)
    local[sup] = np.arange(len(sup))
    is_prim = np.zeros(len(pattern), bool)
    is_prim[req.primary] = True
    # condition groups: (slot p, attacker j); j = -1 for the outside intruder
    groups = []
    single = sup[req.singleton[sup]]
    for p, s in enumerate(req.primary):
        if not pattern[s]:
            return None
        if req.need_up[p] <= 0 and req.need_down[p] <= 0 and req.need_width[p] <= 0:
            continue
        for j in [-1] + [int(j) for j in single if j != s]:
            groups.append((p, j))
    if len(groups) * len(sup) > WITNESS_MAX_ENTRIES:
        return None  # the witness map would not fit: the caller prunes check by check
    cur_lo, cur_hi = lo.copy(), hi.copy()

    def solve_group(p, j):
        """(protected, support mask of the witnesses over ``sup``)."""
        s = int(req.primary[p])
        k = int(local[s])
        if j >= 0:
            model.set_col_bounds([local[j]], 0.0, 0.0)
        vals, used = {}, np.zeros(len(sup), bool)
        try:
            for kind, sign in (("up", 1.0), ("down", -1.0)):
                if (req.need_up[p] if kind == "up" else req.need_down[p]) <= 0 \
                        and req.need_width[p] <= 0:
                    continue
                model.set_objective(indices=[k], values=[sign], sense="max")
                res = model.solve()
                if res.status == "unbounded":
                    vals[kind] = np.inf
                    used[:] = True  # no witness vector: every cell may matter
                    continue
                if res.status != "optimal":
                    raise RuntimeError(f"attacker LP ended with status {res.status}")
                vals[kind] = float(res.objective)
                y = np.asarray(res.x)
                used |= np.abs(y) > 1e-9 * max(1.0, float(np.abs(y).max()))
        finally:
            if j >= 0:
                model.set_col_bounds([local[j]], cur_lo[local[j]], cur_hi[local[j]])
        tol = req.tol[p]
        ok = True
        if req.need_up[p] > 0 and vals.get("up", 0.0) < req.need_up[p] - tol:
            ok = False
        if req.need_down[p] > 0 and vals.get("down", 0.0) < req.need_down[p] - tol:
            ok = False
        if req.need_width[p] > 0 and vals.get("up", 0.0) + vals.get("down", 0.0) \
                < req.need_width[p] - tol:
            ok = False
        return ok, used

    uses = np.zeros((len(groups), len(sup)), bool)  # groups x suppressed cells (small)
    for g, (p, j) in enumerate(groups):
        if deadline is not None and time.perf_counter() >= deadline:
            return None  # no time for the witnesses: the caller keeps the pattern
        ok, used = solve_group(p, j)
        if not ok:
            return None
        uses[g] = used
    out = pattern.copy()
    removable = ~fixed[sup] & ~is_prim[sup]
    # cells no witness moves: all published again at once
    idle = removable & ~uses.any(axis=0)
    out[sup[idle]] = False
    cur_lo[idle] = cur_hi[idle] = 0.0
    if idle.any():
        model.set_col_bounds(np.flatnonzero(idle), 0.0, 0.0)
    order = np.flatnonzero(removable & ~idle)
    order = order[_removal_order(cost[sup[order]],
                                 None if hint is None else hint[sup[order]])]
    for k in order:
        if deadline is not None and time.perf_counter() >= deadline:
            break
        affected = np.flatnonzero(uses[:, k])
        model.set_col_bounds([k], 0.0, 0.0)
        cur_lo[k] = cur_hi[k] = 0.0
        new_uses = {}
        ok = True
        for g in affected:
            ok, used = solve_group(*groups[g])
            if not ok:
                break
            new_uses[g] = used
        if ok:
            out[sup[k]] = False
            for g, used in new_uses.items():
                uses[g] = used
        else:
            cur_lo[k], cur_hi[k] = lo[k], hi[k]
            model.set_col_bounds([k], lo[k], hi[k])
    return out


def _consistent(master: _Master, res, zc: np.ndarray) -> bool:
    """The master's rounded solution has the reported objective and meets every model
    row (guards the optimality claim against a solver returning a stale vector)."""
    if res.objective is None:
        return False
    obj = float(master.cost @ zc)
    if abs(obj - float(res.objective)) > 1e-6 * max(1.0, abs(obj)):
        return False
    if master.n_static and ((master.static @ zc.astype(float)) < -1e-6).any():
        return False
    rows = np.asarray(master.model_rows, dtype=np.int64)
    if len(rows) == 0:
        return True
    return bool(((master.pool_matrix[rows] @ zc.astype(float)) >= 1.0 - 1e-6).all())


def _mip_bound(master: _Master, res) -> float | None:
    if res.status == "optimal" and res.objective is not None and res.mip_gap is not None:
        return float(res.objective) * (1 - max(0.0, float(res.mip_gap)))
    try:
        info = master.model.highs.getInfo()
        b = float(info.mip_dual_bound)
        if np.isfinite(b):
            return b
    except Exception:
        pass
    if res.status == "optimal" and res.objective is not None:
        return float(res.objective)
    return None


def _unprotectable_message(table, cells) -> str:
    return ("a primary cell cannot be protected: no cell that may be suppressed can give it "
            "its protection (cells with status P, empty cells and cells with lb == ub are "
            "never suppressed)")


# ---------------------------------------------------------------- compact MILP
def compact(table, cost: np.ndarray, req: Requirements, cand: np.ndarray, *,
            time_limit: float | None = None, mip_gap: float | None = None,
            threads: int | None = 1, progress: Callable[[str, float], None] | None = None,
            max_rounds: int = 50) -> MethodOutcome:
    """The compact deviation-vector MILP (needs finite deviation ranges on the cells that
    may move).  Single-contributor attackers are added as further deviation vectors (with
    ``f_j = 0``) when the oracle finds one violated, and the MILP is re-solved."""
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + time_limit
    fixed = np.isin(table.status, ("U", "M"))
    movable = np.flatnonzero((cand | fixed) & ((req.up > 0) | (req.down > 0)))
    if np.isinf(req.up[movable]).any() or np.isinf(req.down[movable]).any():
        raise ValueError("compact model needs finite deviation ranges")
    oracle = AttackerOracle(table, req)
    cand_idx = np.flatnonzero(cand)
    zcol = np.full(table.n_cells, -1, dtype=np.int64)
    zcol[cand_idx] = np.arange(len(cand_idx))
    A = table.relations.tocsr()[:, movable].tocsc()
    rows_used = np.flatnonzero(np.diff(A.tocsr().indptr) > 0)
    A = A.tocsr()[rows_used]
    mloc = {int(c): k for k, c in enumerate(movable)}
    # conditions: (primary slot, direction(s), attacker j)
    conditions = []
    for p, s in enumerate(req.primary):
        if req.need_up[p] > 0 or req.need_width[p] > 0:
            conditions.append((p, "up", -1))
        if req.need_down[p] > 0 or req.need_width[p] > 0:
            conditions.append((p, "down", -1))
    stats = {"engine": "compact", "rounds": 0, "vectors": 0}
    proven = False
    status_txt = "time_limit"
    best = None
    gap = None
    for _ in range(max_rounds):
        lp, nz = _compact_lp(A, movable, mloc, zcol, cand_idx, cost, req, conditions, fixed)
        remaining = None if deadline is None else max(0.0, deadline - time.perf_counter())
        model = HighsModel(lp, mip_gap=mip_gap)  # threads: see _Master
        res = model.solve(time_limit=remaining)
        stats["rounds"] += 1
        stats["vectors"] = len(conditions)
        if res.status == "infeasible":
            raise InfeasibleRulesError("the protection levels cannot be met by any pattern")
        if not res.has_solution:
            break
        z = fixed.copy()
        z[cand_idx] = np.round(res.x[:nz]) > 0.5
        chk = oracle.check(z, cuts=False)
        gap = res.mip_gap
        if chk.ok:
            best = z
            proven = res.status == "optimal"
            status_txt = res.status
            break
        new = {(int(oracle.slot[s]), kind, j) for s, kind, j in chk.violated}
        added = 0
        for p, kind, j in new:
            kinds = ("up", "down") if kind == "width" else (kind,)
            for kd in kinds:
                if (p, kd, j) not in conditions:
                    conditions.append((p, kd, j))
                    added += 1
        if added == 0 or (deadline is not None and time.perf_counter() > deadline):
            break
    if best is None:
        repair = GreedyRepair(table, req, cost, cand, oracle)
        start = z if "z" in locals() else fixed
        best, _ = repair.run(start)
        proven = False
        status_txt = "time_limit"
    status = table.status.copy()
    status[best & ~fixed] = "M"
    stats.update(cost=_cost_of(best & ~fixed, cost), seconds=time.perf_counter() - t0)
    return MethodOutcome(status=status, proven_optimal=proven, solver_status=status_txt,
                         mip_gap=0.0 if proven else gap, details=stats)


def _compact_lp(A, movable, mloc, zcol, cand_idx, cost, req, conditions, fixed):
    """Columns: z (candidates), then one block of len(movable) deviations per condition."""
    nz = len(cand_idx)
    k = len(movable)
    m = A.shape[0]
    up = req.up[movable]
    dn = req.down[movable]
    is_cand = zcol[movable] >= 0
    blocks_A, row_lo, row_hi = [], [], []
    col_lo, col_hi = [np.zeros(nz)], [np.ones(nz)]
    n_rows = 0
    link_rows, link_cols, link_vals = [], [], []
    # per condition: A f = 0 (m rows), f_i - up_i z_i <= 0, f_i + dn_i z_i >= 0 (candidates)
    cand_pos = np.flatnonzero(is_cand)
    zc = zcol[movable][cand_pos]
    by_primary: dict[int, dict[str, int]] = {}
    for b, (p, kind, j) in enumerate(conditions):
        off = nz + b * k
        blocks_A.append((n_rows, off))
        row_lo.append(np.zeros(m))
        row_hi.append(np.zeros(m))
        n_rows += m
        lo = -dn.copy()
        hi = up.copy()
        s = int(req.primary[p])
        ls = mloc[s]
        if kind == "up":
            lo[ls] = max(lo[ls], req.need_up[p] if req.need_up[p] > 0 else lo[ls])
        else:
            hi[ls] = min(hi[ls], -req.need_down[p] if req.need_down[p] > 0 else hi[ls])
        if j >= 0 and j in mloc:
            lo[mloc[j]] = hi[mloc[j]] = 0.0
        col_lo.append(lo)
        col_hi.append(hi)
        r = np.arange(len(cand_pos))
        # f_i - up_i z_i <= 0
        link_rows += [n_rows + r, n_rows + r, n_rows + len(cand_pos) + r,
                      n_rows + len(cand_pos) + r]
        link_cols += [off + cand_pos, zc, off + cand_pos, zc]
        link_vals += [np.ones(len(r)), -up[cand_pos], np.ones(len(r)), dn[cand_pos]]
        row_lo += [np.full(len(r), -np.inf), np.zeros(len(r))]
        row_hi += [np.zeros(len(r)), np.full(len(r), np.inf)]
        n_rows += 2 * len(cand_pos)
        by_primary.setdefault((p, j), {})[kind] = off + ls
    # sliding: f^up_s - f^down_s >= SPL
    slide_rows = []
    for (p, _j), cols in by_primary.items():
        if req.need_width[p] > 0 and "up" in cols and "down" in cols:
            slide_rows.append((n_rows, cols["up"], cols["down"], req.need_width[p]))
            row_lo.append(np.array([req.need_width[p]]))
            row_hi.append(np.array([np.inf]))
            n_rows += 1
    n_cols = nz + len(conditions) * k
    Acoo = A.tocoo()
    parts_r, parts_c, parts_v = [], [], []
    for r0, off in blocks_A:
        parts_r.append(Acoo.row + r0)
        parts_c.append(Acoo.col + off)
        parts_v.append(Acoo.data)
    for r, cu, cd, _ in slide_rows:
        parts_r.append(np.array([r, r]))
        parts_c.append(np.array([cu, cd]))
        parts_v.append(np.array([1.0, -1.0]))
    M = sp.csr_matrix((np.concatenate(parts_v + link_vals),
                       (np.concatenate(parts_r + link_rows), np.concatenate(parts_c + link_cols))),
                      shape=(n_rows, n_cols))
    c = np.zeros(n_cols)
    c[:nz] = cost[cand_idx]
    integ = np.zeros(n_cols, bool)
    integ[:nz] = True
    lp = LinearProgram(c=c, A=M, row_lower=np.concatenate(row_lo), row_upper=np.concatenate(row_hi),
                       col_lower=np.concatenate(col_lo), col_upper=np.concatenate(col_hi),
                       integrality=integ)
    return lp, nz


# ---------------------------------------------------------------- the method
def _gauss_start(table, cost: np.ndarray, singleton: bool, empty: str,
                 time_limit: float | None) -> np.ndarray | None:
    """A first incumbent for large tables: the gauss method's pattern after protect()'s
    audit and repair (unpublished cells), or None when it did not pass in time.  Benders
    checks it with the exact oracle before using it."""
    # (imported here: protect imports this module)
    from tabprotect.secondary.protect import protect
    try:
        res = protect(table, method="gauss", cost=np.asarray(cost, dtype=float),
                      singleton=singleton, empty=empty, time_limit=time_limit)
    except (InfeasibleRulesError, InputError):
        return None   # the search itself reports what cannot be protected
    if not res.passed:
        return None
    return np.isin(res.table.status, ("U", "M"))


@register_method("optimal")
def optimal(table, cost: np.ndarray, *, time_limit: float | None = None,
            progress: Callable[[str, float], None] | None = None, singleton: bool = True,
            engine: str = "auto", mip_gap: float | None = None, threads: int | None = 1,
            empty: str = "publish", start: np.ndarray | None = None,
            search: str = "bc", support_cuts: bool | None = None,
            **_ignored) -> MethodOutcome:
    """Minimum-cost secondary suppression (exact; proven optimal unless time runs out).

    Parameters
    ----------
    engine : ``"compact"``, ``"benders"`` or ``"auto"`` (compact for small tables with
        finite deviation ranges, Benders otherwise)
    singleton : protect against single-contributor attackers as well
    mip_gap : relative gap at which the search may stop (default: HiGHS' default, 1e-4;
        0 for an exact optimum)
    empty : ``"publish"`` (empty cells are never secondary suppressions) or ``"suppress"``
    start : a protected pattern (bool mask) to start from (warm start)
    search : Benders engine: ``"bc"`` (own branch-and-cut on the LP master, cuts at every
        node; default) or ``"milp"`` (HiGHS MILP master re-solved after each round of cuts)
    support_cuts : ``bc`` only: separate support cuts (bridgeless rows generalised to
        combinations of relations; default off -- they raise the root bound of tables
        like HIER13 but slow the tree, see benchmarks/results/optimal.md)

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> st = t.status.copy(); st[4] = "U"
    >>> t = t.replace(status=st, upl=np.where(st == "U", 1.0, 0.0))
    >>> out = optimal(t, np.ones(9))
    >>> int((out.status == "M").sum()), out.proven_optimal
    (3, True)
    """
    req = Requirements.from_table(table, singleton=singleton)
    cand = candidate_cells(table, empty)
    if engine == "auto":
        movable = (cand | np.isin(table.status, ("U", "M"))) & ((req.up > 0) | (req.down > 0))
        finite = np.isfinite(req.up[movable]).all() and np.isfinite(req.down[movable]).all()
        size = 2 * len(req.primary) * int(movable.sum())
        engine = "compact" if finite and size <= COMPACT_LIMIT else "benders"
    kw = dict(time_limit=time_limit, mip_gap=mip_gap, threads=threads, progress=progress)
    if engine == "compact":
        return compact(table, cost, req, cand, **kw)
    if engine == "benders":
        if search not in ("bc", "milp"):
            raise ValueError(f"search must be 'bc' or 'milp', not {search!r}")
        started = None
        if start is None and int(cand.sum()) >= GAUSS_START_MIN_CANDIDATES:
            t0 = time.perf_counter()
            start = _gauss_start(table, cost, singleton, empty, None if time_limit is None
                                 else GAUSS_START_SHARE * time_limit)
            started = time.perf_counter() - t0
            if time_limit is not None:
                kw["time_limit"] = max(1.0, time_limit - started)
        out = benders(table, cost, req, cand, start=start, search=search,
                      support_cuts=support_cuts, **kw)
        if started is not None:
            out.details["gauss_start_seconds"] = round(started, 3)
            out.details["gauss_start_cells"] = int(start.sum()) if start is not None else 0
        return out
    raise ValueError(f"engine must be 'auto', 'compact' or 'benders', not {engine!r}")
