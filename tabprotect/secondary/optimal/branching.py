"""Branching for the branch-and-cut: the most fractional column, or reliability
branching (pseudo-costs per column and direction, strong branching while a column has
too few observations)."""
from __future__ import annotations

import time

import numpy as np

from tabprotect.secondary.optimal.search import Search


class Brancher:
    """Branching rule and pseudo-costs.

    Attributes
    ----------
    rule : "fractional" or "reliability" ("auto" resolved from the costs)
    pc_sum, pc_n : bound gain per unit change of each column, down (0) and up (1), and
        the number of observations
    origin : tie counter of an open child -> (column, direction, fractionality, parent
        bound), to learn the child's bound gain once it is solved
    """

    def __init__(self, s: Search, tree):
        self.s = s
        self.tree = tree  # for its incumbent test (prunable)
        rule = s.options.branching
        if rule == "auto":
            rule = "fractional" if s.equal_costs else "reliability"
        self.rule = rule
        k = s.master.k
        self.pc_sum = np.zeros((2, k))
        self.pc_n = np.zeros((2, k))
        self.origin: dict = {}

    def learn(self, key, out) -> None:
        """A solved child's bound gain feeds its branching column's pseudo-cost."""
        born = self.origin.pop(key, None)
        if born is None or isinstance(out, str):
            return
        bj, side, f, parent = born
        gain = (np.inf if out is None else out[0]) - parent
        if np.isfinite(gain) and gain >= 0:
            self.pc_sum[side, bj] += gain / max(f, 1e-6)
            self.pc_n[side, bj] += 1

    def choose(self, zc, bound, lo, hi, allow_strong=True):
        """(column, down bound, up bound) to branch on; a bound is +inf when strong
        branching found that child infeasible, and None for "nothing to branch on".
        Reliability branching: pseudo-cost scores, with strong branching (the child
        LPs with the current cuts and no new ones) for columns with too few observations;
        a child's strong-branching LP bound is a valid bound of that child."""
        s, opt = self.s, self.s.options
        frac = np.minimum(zc, 1 - zc)
        frac[(lo == hi)] = -1.0
        free = np.flatnonzero(frac > 1e-6)
        if len(free) == 0:
            return None
        cc = s.cost[s.cand_idx]
        tiebreak = 1e-9 * cc / max(1e-12, float(cc.max()))
        if self.rule == "fractional":
            score = frac + tiebreak
            return int(np.argmax(score)), bound, bound
        eps = 1e-6 * max(1.0, abs(bound))
        pc_sum, pc_n = self.pc_sum, self.pc_n
        seen = pc_n > 0
        mean = np.array([pc_sum[d][seen[d]].sum() / max(1, seen[d].sum())
                         if seen[d].any() else 1.0 for d in (0, 1)])
        per = np.where(seen, pc_sum / np.maximum(pc_n, 1), mean[:, None])
        gd = per[0, free] * zc[free]
        gu = per[1, free] * (1 - zc[free])
        score = np.maximum(gd, eps) * np.maximum(gu, eps) * (1 + frac[free] + tiebreak[free])
        order = np.argsort(-score, kind="stable")
        best_j, best_s = int(free[order[0]]), -1.0
        unreliable = np.minimum(pc_n[0], pc_n[1]) < opt.reliable
        reliable_best = [(score[o], int(free[o])) for o in order if not unreliable[free[o]]]
        if reliable_best:
            best_s, best_j = reliable_best[0]
        trials = [int(free[o]) for o in order if unreliable[free[o]]][:opt.sb_candidates]
        if not trials or not allow_strong:
            return best_j, bound, bound
        ts = time.perf_counter()
        try:
            return self._strong(trials, zc, bound, lo, hi, eps, (frac, tiebreak),
                                (best_j, best_s, bound, bound))
        finally:
            s.stats["strong_seconds"] = s.stats.get("strong_seconds", 0.0) + (
                time.perf_counter() - ts)

    def _trial(self, j: int, lo, hi, bound: float) -> list:
        """The two child LPs of column ``j`` (bound +inf: infeasible; None: time)."""
        s = self.s
        model = s.master.model
        out = []
        for v in (0.0, 1.0):
            # each trial starts warm from the previous one's basis (a few iterations
            # away) instead of the node's restored basis, which costs a refactorisation
            # per trial; the caller restores the node's basis once afterwards
            model.set_col_bounds([j], v, v)
            obj, st = model.objective_only(time_limit=s.search_left())
            model.set_col_bounds([j], lo[j], hi[j])
            s.stats["strong_lps"] += 1
            if st == "infeasible":
                out.append(np.inf)
            elif st == "optimal":
                out.append(max(bound, obj))
            else:
                out.append(None)
        return out

    def _strong(self, trials, zc, bound, lo, hi, eps, bonus, best):
        """Strong branching on ``trials``; ``bonus`` holds the score factor's
        fractionality and tie-break arrays, ``best`` the (column, score, down, up) to
        beat."""
        s, opt = self.s, self.s.options
        frac, tiebreak = bonus
        best_j, best_s, best_d, best_u = best
        no_gain = 0
        for j in trials:
            if s.out_of_search_time():
                break
            out = self._trial(j, lo, hi, bound)
            if None in out:
                break  # time: branch on the best so far
            d, u = out
            for side, val, f in ((0, d, zc[j]), (1, u, 1 - zc[j])):
                if np.isfinite(val):
                    self.pc_sum[side, j] += (val - bound) / max(f, 1e-6)
                    self.pc_n[side, j] += 1
            if self.tree.prunable(d) or self.tree.prunable(u):
                # a child that cannot beat the incumbent: branch here at once
                s.stats["sb_pruned"] += 1
                return j, d, u
            sc = max(d - bound, eps) * max(u - bound, eps) * (1 + frac[j] + tiebreak[j])
            if sc > best_s:
                best_j, best_s, best_d, best_u = j, sc, d, u
                no_gain = 0
            else:
                no_gain += 1
                if no_gain >= opt.sb_lookahead:
                    break
        return best_j, best_d, best_u

