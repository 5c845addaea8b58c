"""The same job takes the same search: the heuristics' share of the work is counted in
LPs solved, never in seconds, so two runs give the same pattern, tree and LP counts
whatever the machine's speed between them."""
from __future__ import annotations

import numpy as np
import pytest

from solvers import HighsModel
from tabprotect.audit import audit
from tabprotect.secondary import cost_vector
from tabprotect.secondary.attack_requirements import Requirements
from tabprotect.secondary.candidates import candidate_cells
from tabprotect.secondary.optimal import OptimalOptions, benders
from tabprotect.secondary.optimal import heuristics
from tabprotect.secondary.optimal.oracle import (DeadlineModel, DeadlineRepair, LPCount,
                                                 SafeOracle)
from tabprotect.secondary.optimal.search import Search
from test_secondary_optimal import brute_force, hier_table, secondary_cost

#: what a run reports about its search: equal in two runs of the same job
_ROUTE = ("nodes", "node_lps", "lp_solves", "cuts", "heuristic_lps", "strong_lps",
          "lower_bound", "cost")


@pytest.mark.parametrize("seed,cost_name", [(7, "value"), (16, "value"), (2, "unity")])
def test_two_runs_take_the_same_search(seed, cost_name):
    table = hier_table(seed, n_primary=3)
    cost = cost_vector(table, cost_name)
    req = Requirements.from_table(table, singleton=True)
    options = OptimalOptions(gomory_rounds=0, cover_cuts=False)
    runs = [benders(table, cost, req, candidate_cells(table), options=options,
                    time_limit=60.0) for _ in range(2)]
    first, second = runs
    assert first.details["nodes"] > 0, "the tree decides (a search to repeat)"
    assert np.array_equal(first.status, second.status)
    assert {k: first.details.get(k) for k in _ROUTE} == \
        {k: second.details.get(k) for k in _ROUTE}
    assert first.proven_optimal
    assert secondary_cost(first.status, cost) == pytest.approx(brute_force(table, cost),
                                                               rel=1e-9)
    assert audit(table.replace(status=first.status), singleton=True).passed


def test_heuristic_share_counts_lps_not_seconds():
    # a heuristic that took long on the clock but solved few of the LPs is within its
    # share; one that solved most of them is not, however fast it was
    table = hier_table(7, n_primary=3)
    cost = cost_vector(table, "value")
    req = Requirements.from_table(table, singleton=True)
    s = Search(table, cost, req, candidate_cells(table), time_limit=60.0, mip_gap=None,
               progress=None, options=OptimalOptions(heuristic_share=0.25))
    s.best = np.isin(table.status, ("U", "M")) | (table.status == "S")
    chk = s.oracle.check(s.best)
    assert chk.n_lp > 0 and s.lps.n == chk.n_lp, "the oracle's LPs are counted"
    s.stats["heuristic_seconds"] = 1e9
    s.stats["heuristic_lps"] = int(0.25 * s.lps.n)
    assert heuristics.within_share(s)
    s.stats["heuristic_seconds"] = 0.0
    s.stats["heuristic_lps"] = s.lps.n
    assert not heuristics.within_share(s)


def test_repair_and_prune_lps_are_counted():
    table = hier_table(7, n_primary=3)
    cost = cost_vector(table, "value")
    req = Requirements.from_table(table, singleton=True)
    s = Search(table, cost, req, candidate_cells(table), time_limit=None, mip_gap=None,
               progress=None, options=OptimalOptions())
    before = s.lps.n
    pattern, unmet = s.repair.run(s.fixed.copy())
    assert not unmet
    repaired = s.lps.n
    assert repaired > before
    pruned = s.prune(pattern, None)
    assert s.lps.n > repaired
    assert audit(table.replace(status=np.where(pruned & ~s.fixed, "M", table.status)),
                 singleton=True).passed


@pytest.mark.parametrize("seed", [1, 7, 16])
def test_repair_from_its_first_check_takes_the_same_route_with_fewer_lps(seed):
    # the repair's first round repairs the shortfalls of the full check it starts with
    # instead of checking the short primaries again: the same protected pattern (judged
    # by the audit), fewer attacker LPs
    table = hier_table(seed, n_primary=3)
    cost = cost_vector(table, "value")
    req = Requirements.from_table(table, singleton=True)
    cand = candidate_cells(table)
    fixed = np.isin(table.status, ("U", "M"))
    runs = []
    for first in (False, True):
        count = LPCount()
        s = Search(table, cost, req, cand, time_limit=None, mip_gap=None, progress=None,
                   options=OptimalOptions())
        oracle = SafeOracle(s.oracle._oracle, {"oracle_errors": 0}, count)
        repair = DeadlineRepair(table, req, cost, cand, oracle, count=count)
        if first:
            pattern, unmet = repair.run(fixed.copy())
        else:   # the base class's loop: its first round checks the pattern itself
            chk = oracle.check(fixed.copy(), cuts=False)
            short = np.unique([c for c, _, _ in chk.violated]).astype(np.int64)
            repair.model = DeadlineModel(HighsModel(repair.lp), count)
            pattern, unmet = super(DeadlineRepair, repair).run(fixed.copy(),
                                                                primaries=short)
        runs.append((pattern, unmet, count.n))
    (p0, u0, n0), (p1, u1, n1) = runs
    assert not u0 and not u1
    assert np.array_equal(p0, p1)
    assert n1 < n0
    status = np.where(p1 & ~fixed, "M", table.status)
    assert audit(table.replace(status=status), singleton=True).passed
