"""Our own branch-and-cut on the LP master (HiGHS has no usable lazy-constraint
callback): best-bound search with plunging, capacity cuts separated at every node (all
globally valid, so every node's LP keeps them), reduced-cost fixing against the
incumbent, reliability branching, and the repair heuristic on node LP points."""
from __future__ import annotations

import heapq
import time

import numpy as np

from tabprotect.secondary.optimal import heuristics
from tabprotect.secondary.optimal.branching import Brancher
from tabprotect.secondary.optimal.gomory import gomory_cuts
from tabprotect.secondary.optimal.oracle import clean
from tabprotect.secondary.optimal.search import Search, round_bound
from tabprotect.secondary.attacker_oracle import Check

#: node_lp's answer when time ran out (the node stays open)
TIME = "time"


class BranchAndCut:
    """The tree search's state.

    Attributes
    ----------
    s : the run's shared state (master, oracle, incumbent, clock)
    lower_bound : the LP phase's bound (the root's starting bound)
    zlp : the LP phase's point over the candidates (None without one)
    glob_lo, glob_hi : column bounds valid in the whole tree (reduced-cost fixing at
        the root tightens them)
    heap : open nodes as (LP bound, -depth, tie counter, branching path)
    bases : the parent's final basis of an open node, by tie counter
    counter : next tie counter
    plunge : (bound, depth, path, key) processed next without touching the heap
    brancher : the branching rule and its pseudo-costs
    last_hit, sep_round : separation round of each primary's latest violated cut
    unsure : a node was dropped on a failed attacker LP, so no optimality is claimed
    gomory_left : root rounds of Gomory cuts still allowed
    settled : the LP phase's last point when its complete capacity separation there
        found no new cut (None otherwise): at that point the root's round skips it
    open_bound : the root node's bound (the bound when the tree closes on a failed LP)
    """

    def __init__(self, s: Search, lower_bound: float, zlp: np.ndarray | None,
                 settled: bool = False):
        opt = s.options
        self.s, self.lower_bound, self.zlp = s, lower_bound, zlp
        self.settled = zlp if settled else None
        k = s.master.k
        self.all_cols = np.arange(k)
        self.glob_hi = np.ones(k)
        self.glob_lo = np.zeros(k)
        self.counter = 0
        # the unrounded LP bound orders the nodes (integer costs: the rounded one prunes)
        self.heap: list = [(lower_bound, 0, 0, ())]
        self.bases: dict = {}
        self.plunge = None
        self.unsure = False
        self.brancher = Brancher(s, self)
        s.stats["branching"] = self.brancher.rule
        self.gomory_left = (opt.gomory_rounds if opt.gomory_rounds is not None
                            else 0 if s.equal_costs else opt.gomory_auto_rounds)
        self.last_hit = np.full(len(s.req.primary), -1, np.int64)
        self.sep_round = 0
        self.open_bound = lower_bound

    # ---- helpers
    def prunable(self, bound: float) -> bool:
        """The bound cannot beat the incumbent (within the target gap)."""
        s = self.s
        bound = round_bound(bound, s.integral_costs)
        return s.best is not None and bound >= s.best_cost * (1 - s.target) - 1e-9

    def _optimal_now(self, c: float) -> bool:
        """A pattern of cost ``c`` found at the node being solved is optimal (within the
        target gap): no open node can do better, so pruning it cannot pay."""
        s = self.s
        bounds = [h[0] for h in self.heap]
        if self.plunge is not None:
            bounds.append(self.plunge[0])
        bound = round_bound(min(bounds + [c]), s.integral_costs)
        return bound >= c * (1 - s.target) - 1e-9

    def _purge_root(self) -> None:
        """Slack cuts make every node LP slower: keep the ones near binding at the root
        point; the others wait in the pool (checked at every node LP point).  The rows
        are deleted in place, so the root's first LP starts from the LP phase's final
        basis (their slacks are basic there); a fresh model holds the rest when HiGHS
        refuses the deletion."""
        s, master = self.s, self.s.master
        if s.options.purge_root and self.zlp is not None and len(master.in_model):
            lhs = master.pool_matrix @ self.zlp
            keep = np.flatnonzero(lhs <= 1.0 + s.options.purge_slack)
            s.stats["purged_rows"] = int(len(master.in_model) - len(keep))
            if master.in_model.all() and master.purged_in_place(self.zlp,
                                                                s.options.purge_slack):
                s.stats["root_purge"] = "in place"
                return
            s.stats["root_purge"] = "rebuilt"
            master.rebuild(keep)

    def _purge_now(self) -> bool:
        s, opt = self.s, self.s.options
        if not opt.purge_tree_every or s.stats["nodes"] % opt.purge_tree_every:
            return False
        if not s.equal_costs:
            return True
        return (opt.purge_tree_equal_costs_rows is not None
                and int(s.master.in_model.sum()) > opt.purge_tree_equal_costs_rows)

    def _purge_tree(self, zc: np.ndarray) -> None:
        """Pool cuts slack at ``zc`` leave the model (rows deleted in place, so the warm
        basis survives).  The open nodes' saved bases lose the deleted rows; a basis in
        which a deleted row was binding (slack nonbasic) is no longer square, and that
        node then starts from the current basis instead."""
        s = self.s
        keep = s.master.purge(zc, s.options.purge_tree_slack)
        if keep is None:
            return
        s.stats["tree_purged"] = s.stats.get("tree_purged", 0) + int((~keep).sum())
        for key in list(self.bases):
            if not self.bases[key].keep_rows(keep):
                del self.bases[key]
                s.stats["bases_dropped"] = s.stats.get("bases_dropped", 0) + 1

    # ---- separation at a node
    def _add_covers(self, zc: np.ndarray) -> int:
        """Cover cuts of the pool cuts near binding at ``zc`` (:meth:`Search.add_covers`)."""
        return self.s.add_covers(zc) if self.s.use_covers else 0

    def _separate_binding(self, zc: np.ndarray) -> Check:
        """Capped separation for the primaries with a binding cut at ``zc`` only (the
        others are given no levels, so their attacker LPs are skipped), in chunks, the
        primaries whose cut was violated most recently first."""
        s, master, opt = self.s, self.s.master, self.s.options
        lhs = master.pool_matrix @ zc
        prim = np.unique(master.pool_primary[lhs <= 1.0 + opt.binding_slack])
        prim = prim[prim >= 0]
        keep = np.isin(s.req.primary, prim)
        s.stats["sep_skipped"] += int((~keep).sum())
        if not keep.any():
            return Check()
        slots = np.flatnonzero(keep)
        slots = slots[np.argsort(-self.last_hit[slots], kind="stable")]
        chunk = opt.separation_chunk or len(slots)
        self.sep_round += 1
        out = Check()
        z = clean(s.full_z(zc))
        for start in range(0, len(slots), chunk):
            part = np.zeros(len(keep), bool)
            part[slots[start:start + chunk]] = True
            errors = s.stats["oracle_errors"]
            got = s.oracle.separate_some(z, part, deadline=s.search_end())
            if s.stats["oracle_errors"] > errors:
                out.complete = False
                return out
            out.violated += got.violated
            out.cuts += got.cuts
            out.n_lp += got.n_lp
            for s_cell, _, _ in got.violated:
                self.last_hit[s.oracle.slot[s_cell]] = self.sep_round
            if not got.complete:
                out.complete = False
                break
            if out.cuts:
                s.stats["sep_chunks_saved"] = s.stats.get("sep_chunks_saved", 0) + int(
                    len(slots) > start + chunk)
                break
        return out

    def _integral_point(self, zc: np.ndarray):
        """An integral node point: the oracle decides.  Returns None (node closed: a
        new incumbent, or a pattern the attacker LPs failed on), TIME, or "cut" (cuts
        added; the node's LP is solved again).  A pattern found short is cut off by its
        violated conditions' cuts; the capped separation of every primary runs besides
        only with ``integral_separation`` (or when the check gave no cut)."""
        s = self.s
        zi = zc > 0.5
        z = s.full_z(zi.astype(float)) > 0.5
        to = time.perf_counter()
        chk = s.oracle.check(z, deadline=s.search_end())
        s.stats["oracle_seconds"] += time.perf_counter() - to
        s.stats["lp_solves"] += chk.n_lp
        if not chk.complete and not chk.violated:
            if s.out_of_search_time():
                return TIME
            # the attacker LPs failed numerically on this pattern: the node is dropped,
            # and no optimality is claimed afterwards
            self.unsure = True
            heuristics.improve(s, z)
            return None
        if chk.ok:
            self._new_incumbent(z)
            return None
        if not chk.complete:
            return TIME
        sep = Check()
        if s.options.integral_separation or not chk.cuts:
            sep = s.oracle.separate(s.full_z(zc), deadline=s.search_end())
        else:
            s.stats["integral_sep_skipped"] = s.stats.get("integral_sep_skipped", 0) + 1
        s.stats["lp_solves"] += sep.n_lp
        if s.add_cuts(chk, zc) + s.add_cuts(sep, zc) == 0:
            # numerically the cut did not separate: exclude the pattern and its subsets
            # (fewer suppressions never protect more)
            off = np.flatnonzero(~zi)
            s.master.add([s.cand_idx[off]], [np.ones(len(off))], [1.0])
        return "cut"

    def _new_incumbent(self, z: np.ndarray) -> None:
        """A protected integral node point: cleaned up (what it does not need published
        again) and kept when cheaper."""
        s, opt = self.s, self.s.options
        c = s.cost_of(z)
        if c >= s.best_cost:
            return
        if opt.cleanup_incumbents and not self._optimal_now(c) and (
                not opt.cleanup_within_share or heuristics.within_share(s)):
            th, w0 = time.perf_counter(), s.lps.n
            z = s.prune(z, s.share_deadline(opt.cleanup_share))
            c = s.cost_of(z)
            heuristics.spent(s, th, w0)
        s.best, s.best_cost = z, c
        s.report(f"B&C: incumbent {s.best_cost:.6g}", 0.5)

    def _fractional_round(self, zc: np.ndarray, root: bool) -> int:
        """One separation round at a fractional node point: the number of new cuts.
        Below the root only the capped separation (at fractional points its cuts are
        the stronger ones); Gomory cuts at the root once the capacity separation is
        done.  At the LP phase's settled point (:attr:`settled`, to 1e-9: the root's
        first solve is the same vertex up to rounding) the root's capacity separation
        is not run again: its LPs there have the same optima, so it would find no new
        cut again (skipping a fractional point's separation only ever weakens a bound:
        integral points are always checked)."""
        s, opt = self.s, self.s.options
        to = time.perf_counter()
        chk = sep = Check()
        if root and self.settled is not None and np.abs(zc - self.settled).max() <= 1e-9:
            s.stats["root_separation_skipped"] = s.stats.get(
                "root_separation_skipped", 0) + 1
        else:
            if root and s.fractional_check:
                chk = s.oracle.check(s.full_z(zc), deadline=s.search_end())
            if root or not opt.restrict_separation:
                sep = s.oracle.separate(s.full_z(zc), deadline=s.search_end())
            else:
                sep = self._separate_binding(zc)
        s.stats["oracle_seconds"] += time.perf_counter() - to
        s.stats["lp_solves"] += chk.n_lp + sep.n_lp
        n_new = s.add_cuts(chk, zc) + s.add_cuts(sep, zc)
        n_new += s.add_support(zc, opt.support_max_lps if root else opt.support_node_max_lps)
        n_new += self._add_covers(zc)
        if n_new == 0 and root and self.gomory_left > 0:
            self.gomory_left -= 1
            tg = time.perf_counter()
            R, g = gomory_cuts(s.master.model.highs, s.master.k, opt.gomory_per_round,
                               min_frac=opt.gomory_min_frac,
                               max_dynamism=opt.gomory_max_dynamism)
            n_new = s.master.add_general(R, g)
            s.stats["gomory_cuts"] = s.stats.get("gomory_cuts", 0) + n_new
            s.stats["gomory_seconds"] = s.stats.get("gomory_seconds", 0.0) + (
                time.perf_counter() - tg)
        return n_new

    def _root_stalled(self, history: list, obj: float) -> bool:
        """The root's bound gained less than ``root_stall_tol`` (relative) over its
        last ``root_stall_rounds`` separation rounds: the tree takes over.  Records
        ``obj`` in ``history``."""
        opt = self.s.options
        history.append(obj)
        k = opt.root_stall_rounds
        if k is None or len(history) <= k:
            return False
        return obj - history[-1 - k] <= opt.root_stall_tol * max(1.0, abs(obj))

    def node_lp(self, lo: np.ndarray, hi: np.ndarray, root: bool):
        """Cut loop at one node: (bound, z, reduced costs), None when pruned, or TIME."""
        s, master, opt = self.s, self.s.master, self.s.options
        master.model.set_col_bounds(self.all_cols, lo, hi)
        last_obj = -np.inf
        history: list[float] = []   # the root's objective per separation round
        for rnd in range(opt.max_rounds):
            if s.out_of_search_time():
                return TIME
            tm = time.perf_counter()
            r = master.model.solve(time_limit=s.search_left())
            s.stats["master_seconds"] += time.perf_counter() - tm
            s.stats["node_lps"] += 1
            s.stats["node_lp_iterations"] = s.stats.get("node_lp_iterations", 0) + int(
                master.model.highs.getInfo().simplex_iteration_count)
            if r.status == "infeasible":
                return None
            if r.status != "optimal":
                return TIME
            bound = float(r.objective)
            if self.prunable(bound):
                return None
            zc = np.clip(r.x[:master.k], 0.0, 1.0)
            back = master.violated_pool_rows(zc, tol=1e-6)
            if len(back):
                # purged cuts the point violates: back into the LP, no oracle needed
                master.activate(back)
                s.stats["pool_reactivated"] += len(back)
            if master.activate_static(zc, tol=1e-6) or len(back):
                continue
            if bool(np.all((zc < 1e-6) | (zc > 1 - 1e-6))):
                got = self._integral_point(zc)
                if got == "cut":
                    continue
                return got
            # fractional: separate while the bound moves (more rounds at the root)
            if not root and (rnd >= opt.node_cut_rounds or r.objective <= last_obj
                             + opt.node_cut_tol * max(1.0, abs(last_obj))):
                return bound, zc, r.reduced_costs
            if root and self._root_stalled(history, float(r.objective)):
                s.stats["root_stalled"] = True
                return bound, zc, r.reduced_costs
            if self._fractional_round(zc, root) == 0:
                return bound, zc, r.reduced_costs
            last_obj = float(r.objective)
        return TIME

    # ---- the tree
    def _next_node(self):
        """The node to process: the plunge child, else the heap's best (restoring its
        parent's basis).  None when the popped node is pruned."""
        s = self.s
        if self.plunge is not None:
            nb, depth, path, key = self.plunge
            self.plunge = None
            return nb, depth, path, key, False
        nb, neg_depth, key, path = heapq.heappop(self.heap)
        saved = self.bases.pop(key, None)
        if self.prunable(nb):
            return None
        # a jump in the tree: start from the parent's basis, not the last node's
        if saved is not None and s.master.set_basis(saved):
            s.stats["basis_restored"] += 1
        return nb, -neg_depth, path, key, True

    def _fix_by_reduced_cost(self, zc, rc, lo, hi, path: tuple) -> tuple:
        """A column whose reduced cost lifts the bound to the incumbent's cost is fixed
        in this subtree (globally at the root).  Returns the node's path."""
        s = self.s
        k = s.master.k
        if s.best is None or rc is None or len(rc) < k:
            return path
        rck = np.asarray(rc[:k])
        obj = float(s.master.model.last_result.objective)
        limit = s.best_cost * (1 - s.target) - 1e-9
        to0 = (zc < 1e-6) & (obj + rck >= limit) & (hi > 0.5)
        to1 = (zc > 1 - 1e-6) & (obj - rck >= limit) & (lo < 0.5)
        if not path:
            self.glob_hi[to0] = 0.0
            self.glob_lo[to1] = 1.0
            s.stats["rc_fixed"] = int((self.glob_hi < 0.5).sum() + (self.glob_lo > 0.5).sum())
            return path
        return path + tuple((int(j), 0.0) for j in np.flatnonzero(to0)) \
            + tuple((int(j), 1.0) for j in np.flatnonzero(to1))

    def _branch(self, zc, bound, lo, hi, depth, path, jumped) -> None:
        """Branch on a column (see :class:`Brancher`): the up child is plunged into (it
        reaches protected patterns), the down child goes to the heap with the basis."""
        s, opt = self.s, self.s.options
        # save the basis first: strong branching re-solves from it, and the down child
        # starts from it
        saved = s.master.get_basis() if opt.node_basis else None
        pick = self.brancher.choose(zc, bound, lo, hi,
                                    allow_strong=jumped or not opt.sb_only_at_jumps or not path)
        if pick is None:
            return  # nothing left to branch on (cannot happen for a fractional z)
        j, b_down, b_up = pick
        if saved is not None:
            s.master.set_basis(saved)
        kids = []
        for v, b in ((1.0, b_up), (0.0, b_down)):
            if not np.isfinite(b) or self.prunable(b):
                continue  # infeasible or no better than the incumbent
            self.brancher.origin[self.counter] = (
                j, int(v), float(zc[j] if v == 0.0 else 1 - zc[j]), bound)
            kids.append((max(bound, b), depth + 1, path + ((j, v),), self.counter))
            self.counter += 1
        if not kids:
            return
        if self._plunges(kids[0][0]):
            self.plunge, kids = kids[0], kids[1:]
        else:
            s.stats["plunges_queued"] = s.stats.get("plunges_queued", 0) + 1
        for kb, kd, kp, kkey in kids:
            if saved is not None:
                self.bases[kkey] = saved
            heapq.heappush(self.heap, (kb, -kd, kkey, kp))
        if s.stats["nodes"] % 50 == 0:
            lb_now = round_bound(min([h[0] for h in self.heap] + [bound]), s.integral_costs)
            s.report(f"B&C node {s.stats['nodes']}: bound {lb_now:.6g}, "
                     f"best {s.best_cost:.6g}, open {len(self.heap)}", 0.5)

    def _plunges(self, bound: float) -> bool:
        """A child of LP bound ``bound`` is processed next (a plunge) rather than
        queued: always without an incumbent or a ``plunge_gap_share``; else while the
        bound lies within that share of the gap between the best open bound and the
        incumbent's cost."""
        s = self.s
        share = s.options.plunge_gap_share
        if share is None or s.best is None or not self.heap:
            return True
        low = self.heap[0][0]
        return bound <= low + share * max(0.0, s.best_cost - low)

    def _process(self, node) -> bool:
        """Solve one node and branch; False when the search must stop (time)."""
        s, opt = self.s, self.s.options
        nb, depth, path, key, jumped = node
        if self.prunable(nb):
            return True
        lo, hi = self.glob_lo.copy(), self.glob_hi.copy()
        for j, v in path:
            lo[j] = hi[j] = v
        s.stats["nodes"] += 1
        s.stats["bc_max_depth"] = max(s.stats["bc_max_depth"], depth)
        out = self.node_lp(lo, hi, root=not path)
        if path:
            self.brancher.learn(key, out)
        if out is None:
            return True
        if s.best is not None and s.best.tobytes() not in s.searched:
            heuristics.local_search(s)
        if isinstance(out, str):  # time: the node stays open
            heapq.heappush(self.heap, (nb, -depth, self.counter, path))
            self.counter += 1
            return False
        bound, zc, rc = out
        if not path:
            self.open_bound = max(self.open_bound, bound)
            s.stats["root_node_bound"] = bound
        path = self._fix_by_reduced_cost(zc, rc, lo, hi, path)
        if self._purge_now():
            self._purge_tree(zc)
        # a rounded node point, repaired and pruned: new incumbents along the way
        if s.stats["nodes"] % opt.heuristic_every == 1:
            seed = s.fixed.copy()
            seed[s.cand_idx[zc >= 0.5]] = True
            heuristics.improve(s, seed)
            if self.prunable(bound):
                return True
        self._branch(zc, bound, lo, hi, depth, path, jumped)
        return True

    def run(self) -> tuple[bool, float]:
        """The search until proven, out of time or out of nodes: (proven, lower bound)."""
        s = self.s
        s.stats.update(nodes=0, node_lps=0, bc_max_depth=0, sep_skipped=0, basis_restored=0,
                       pool_reactivated=0, strong_lps=0, sb_pruned=0)
        self._purge_root()
        max_nodes = s.options.max_nodes
        while self.heap or self.plunge is not None:
            if s.out_of_search_time():
                break
            if max_nodes is not None and s.stats["nodes"] >= max_nodes:
                s.stats["node_limit"] = True
                break
            node = self._next_node()
            if node is None:
                continue
            if not self._process(node):
                break
        if self.plunge is not None:
            p = self.plunge
            heapq.heappush(self.heap, (p[0], -p[1], p[3], p[2]))
        self.heap = [h for h in self.heap if not self.prunable(h[0])]
        if not self.heap and not self.unsure:
            return s.best is not None, (s.best_cost if s.best is not None else self.open_bound)
        if not self.heap:
            return False, round_bound(self.open_bound, s.integral_costs)
        return False, max(self.lower_bound,
                          round_bound(min(h[0] for h in self.heap), s.integral_costs))
