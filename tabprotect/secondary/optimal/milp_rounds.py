"""The Benders search by MILP rounds (``search="milp"``): the integer master re-solved by
HiGHS after each round of cuts until its optimum passes the oracle.  Early masters are
solved to a loose gap and a capped time (their job is to produce patterns to cut off);
once a master pattern passes, the gap is tightened to the target."""
from __future__ import annotations

import time

import numpy as np

from tabprotect.errors import InfeasibleRulesError
from tabprotect.secondary.optimal import heuristics
from tabprotect.secondary.optimal.lp_phase import LPPhase
from tabprotect.secondary.optimal.master import consistent, mip_bound
from tabprotect.secondary.optimal.search import Search, round_bound


def _integer_master(s: Search, lp: LPPhase) -> None:
    """Rebuild the master as a MILP keeping the cover rows, the cuts tight (or nearly
    tight) at the last LP optimum and the cuts found after it; the others wait in the
    pool."""
    master, res = s.master, lp.result
    master.relax(False)
    keep = [np.arange(s.n_cover)]
    if res is not None and res.status == "optimal" and res.duals is not None:
        duals = np.asarray(res.duals)[master.n_static:]
        rows_then = np.asarray(master.model_rows[:len(duals)])
        keep.append(rows_then[np.abs(duals) > 1e-9])
        zlp = np.clip(res.x[: master.k], 0.0, 1.0)
        keep.append(np.flatnonzero(master.pool_matrix @ zlp <= 1.0 + s.options.keep_slack))
        keep.append(np.asarray(master.model_rows[len(duals):], dtype=np.int64))
    else:
        keep.append(np.asarray(master.model_rows, dtype=np.int64))
    master.rebuild(np.concatenate(keep).astype(np.int64))
    s.stats["pool_rows"] = len(master.in_model)
    s.stats["mip_rows_start"] = int(master.in_model.sum())


def _check(s: Search, z: np.ndarray):
    to = time.perf_counter()
    chk = s.oracle.check(z, deadline=s.deadline)
    s.stats["oracle_seconds"] += time.perf_counter() - to
    s.stats["lp_solves"] += chk.n_lp
    return chk


def _saved_patterns(s: Search, zc: np.ndarray) -> None:
    """The run's other improving solutions: more patterns to cut off (or incumbents)."""
    master = s.master
    for zc2 in master.saved_patterns(zc, s.options.saved_patterns):
        if s.deadline is not None and time.perf_counter() >= s.deadline:
            break
        z2 = s.fixed.copy()
        z2[s.cand_idx] = zc2
        if len(master.violated_pool_rows(zc2.astype(float))):
            continue
        chk2 = _check(s, z2)
        s.stats["saved_patterns"] = s.stats.get("saved_patterns", 0) + 1
        if chk2.ok:
            s.offer(z2)
        elif chk2.violated:
            s.add_cuts(chk2)


def _cut_off(s: Search, z: np.ndarray, zc: np.ndarray, chk, seen_patterns: set) -> None:
    """A violated master pattern: its cuts, the capped separation's (often stronger)
    cuts at the same pattern, and a repair of it as a cheap incumbent."""
    key = zc.tobytes()
    if key in seen_patterns:
        # numerically the cut did not cut this pattern off: exclude it and its subsets
        # (an under-protected pattern stays so with fewer suppressions)
        off = s.cand_idx[~zc]
        s.master.add([off], [np.ones(len(off))], [1.0])
    seen_patterns.add(key)
    s.add_cuts(chk)
    to = time.perf_counter()
    sep = s.oracle.separate(z.astype(float), deadline=s.deadline)
    s.stats["oracle_seconds"] += time.perf_counter() - to
    s.stats["lp_solves"] += sep.n_lp
    s.add_cuts(sep)
    heuristics.improve(s, z)


class _Rounds:
    """The MILP rounds' state: the master gap in force and the cap of one early solve."""

    def __init__(self, s: Search):
        self.target = s.target
        self.current = max(self.target, s.options.loose_mip_gap)
        self.round_limit = s.options.round_time_limit
        self.seen_patterns: set = set()


def milp_rounds(s: Search, lp: LPPhase) -> tuple[bool, float]:
    """(proven, lower bound) of the MILP-rounds search."""
    master = s.master
    _integer_master(s, lp)
    st = _Rounds(s)
    lower_bound = lp.lower_bound
    for _ in range(s.options.max_rounds):
        remaining = s.left()
        if remaining is not None and remaining <= 0:
            break
        # no MIP start (Highs.setSolution): with one, HiGHS has returned the start vector
        # as the solution of a run whose optimum was cheaper, which would make a
        # non-optimal pattern look proven
        master.set_gap(st.current)
        # while the master's patterns are still being cut off, a master solve only needs
        # a good pattern, not a proof: cap it, and let the cap grow when it finds nothing
        limit = remaining if st.current <= st.target else (
            st.round_limit if remaining is None else min(remaining, st.round_limit))
        tm = time.perf_counter()
        res = master.model.solve(time_limit=limit)
        s.stats["master_seconds"] += time.perf_counter() - tm
        s.stats["rounds_mip"] += 1
        bound = mip_bound(master, res)
        if bound is not None:
            lower_bound = max(lower_bound, round_bound(bound, s.integral_costs))
        if res.status == "infeasible":
            raise InfeasibleRulesError("the protection levels cannot be met by any pattern")
        if not res.has_solution:
            if limit is not None and (remaining is None or limit < remaining):
                st.round_limit *= 2
                continue
            break
        zc = np.round(res.x[: master.k]).astype(bool)
        if not consistent(master, res, zc):
            # a solution vector that does not match the reported objective proves nothing
            s.stats["inconsistent_master"] = s.stats.get("inconsistent_master", 0) + 1
            break
        z = s.fixed.copy()
        z[s.cand_idx] = zc
        from_pool = master.violated_pool_rows(zc.astype(float))
        if len(from_pool):
            for zc2 in master.saved_patterns(zc, s.options.saved_patterns):
                from_pool = np.union1d(from_pool, master.violated_pool_rows(zc2.astype(float)))
            # a pooled cut already excludes this pattern: no attacker LP needed
            master.activate(from_pool)
            s.stats["pool_reactivated"] = s.stats.get("pool_reactivated", 0) + len(from_pool)
            heuristics.improve(s, z)
            continue
        chk = _check(s, z)
        if chk.ok:
            c = s.cost_of(z)
            if c <= s.best_cost:
                s.best, s.best_cost = z, c
            if res.status == "optimal" and st.current <= st.target:
                return True, lower_bound
            if res.status == "time_limit":
                st.round_limit *= 2
            st.current = st.target
        elif chk.violated:
            _cut_off(s, z, zc, chk, st.seen_patterns)
        _saved_patterns(s, zc)
        if s.best is not None and lower_bound >= s.best_cost * (1 - st.target) - 1e-9:
            return True, lower_bound
        s.report(f"MIP round {s.stats['rounds_mip']}: bound {lower_bound:.6g}, "
                 f"best {s.best_cost:.6g}", 0.5)
    return False, lower_bound
