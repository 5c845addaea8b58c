"""The greedy attacker-LP baseline and its repair step, judged by the LP audit."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from tabprotect.audit import audit
from tabprotect.model import Hierarchy, Table, synthetic
from tabprotect.secondary import protect
from tabprotect.secondary.base import cost_vector
from tabprotect.secondary.greedy import GreedyOptions, RepairStats, greedy, greedy_repair
from tabprotect.secondary.optimal import optimal

from helpers import gauss_pattern, two_by_two


def test_repair_of_a_lone_primary_suppresses_its_square():
    t = two_by_two()
    new = greedy_repair(t, cost_vector(t, "value"), [4])
    assert sorted(np.flatnonzero(new == "M").tolist()) == [5, 7, 8]
    assert audit(t.replace(status=new)).passed


def test_repair_only_adds_and_respects_protected_cells():
    t = two_by_two()
    st = t.status.copy()
    st[8] = "P"  # (2, b) must be published: the square through the totals is needed
    t = t.replace(status=st)
    new = greedy_repair(t, np.ones(9), [4])
    assert new[8] == "P" and new[4] == "U"
    assert audit(t.replace(status=new)).passed


def test_repair_uses_the_audit_direction():
    t = two_by_two(primary_level=2.5)
    res = audit(t)  # nothing but the primary suppressed: exactly disclosed
    new = greedy_repair(t, cost_vector(t, "value"), res.shortfalls, audit_result=res)
    assert audit(t.replace(status=new)).passed


def test_general_table():
    # x0 = x1 + x2 + x3 and x4 = x1 + x5 (two relations sharing x1)
    A = sp.csr_matrix(np.array([[1, -1, -1, -1, 0, 0], [0, -1, 0, 0, 1, -1]], float))
    t = Table.from_relations([12.0, 5.0, 4.0, 3.0, 7.0, 2.0], A,
                             status=["S", "U", "S", "S", "S", "S"], upl=[0, 1, 0, 0, 0, 0],
                             lpl=[0, 1, 0, 0, 0, 0])
    out = greedy(t, np.ones(6))
    assert audit(t.replace(status=out.status)).passed
    assert out.details["audit_passed"]


@pytest.mark.parametrize("name", ["2d-small", "3d-small", pytest.param("1k-3d", marks=pytest.mark.slow)])
def test_generated_tables_pass(name):
    t = synthetic.preset(name, seed=7)
    out = greedy(t, cost_vector(t, "value"))
    assert audit(t.replace(status=out.status)).passed
    res = protect(t, method="greedy", cost="value", singleton=False)
    assert audit(res.confidential_table).passed


def test_five_dimensional_table():
    t = synthetic.generate([(2,), (2,), (2,), (2,), (2,)], seed=4)
    out = greedy(t, cost_vector(t, "value"))
    assert audit(t.replace(status=out.status)).passed


def test_deterministic_and_not_far_from_optimal():
    t = synthetic.preset("2d-small", seed=2)
    c = cost_vector(t, "value")
    a = greedy(t, c).status
    b = greedy(t, c).status
    assert (a == b).all()
    best = optimal(t, c, singleton=False)
    assert c[a == "M"].sum() >= c[best.status == "M"].sum() - 1e-6  # never beats the optimum


@pytest.mark.parametrize("name,sizes", [("1k-3d", (20, 100)), ("3d-small", (10,)),
                                        pytest.param("10k-4d", (200,),
                                                     marks=pytest.mark.slow)])
def test_block_neighbourhood_repair_and_its_moves(name, sizes):
    # the repair's block regions (suppressed cells grown around the primary plus the
    # published cells at their edge): the repaired pattern passes the independent audit,
    # and the deviations it returns are moves the audit accepts
    t, cost, base, _ = gauss_pattern(name, 2024)
    first = audit(base, mode="verdict")
    short = first.shortfalls[:60]
    new, moves = greedy_repair(base, cost, short, audit_result=first, block_sizes=sizes,
                               return_moves=True)
    assert moves.shape[0] >= len(short)
    assert abs(t.relations @ moves.T).max() <= 1e-7 * max(1.0, abs(moves).max())
    assert np.isin(new[moves.nonzero()[1]], ("U", "M")).all()
    repaired = t.replace(status=new)
    after = audit(repaired, mode="verdict", moves=moves)
    assert after.n_moves_rejected == 0
    assert after.protected[short].all()
    np.testing.assert_array_equal(after.protected, audit(repaired, mode="verdict").protected)


def test_parallel_repair_in_worker_processes():
    # workers=2: the primaries are cut into two runs, repaired from the same pattern in
    # two processes and the suppressions united; the independent audit must accept the
    # union (a deviation stays a witness when more cells are suppressed) and the moves
    t, cost, base, _ = gauss_pattern("1k-3d", 2024)
    first = audit(base, mode="verdict")
    short = first.shortfalls
    assert len(short) >= 8
    counts = RepairStats()
    new, moves = greedy_repair(base, cost, short, audit_result=first, block_sizes=(20,),
                               return_moves=True, workers=2, stats=counts,
                               options=GreedyOptions(parallel_min_primaries=8))
    assert counts.lps >= len(short)   # the workers' counts come back
    was = base.status
    assert (new[np.isin(was, ("U", "M", "P"))] == was[np.isin(was, ("U", "M", "P"))]).all()
    assert set(np.unique(new[new != was])) <= {"M"}
    repaired = t.replace(status=new)
    after = audit(repaired, mode="verdict", moves=moves)
    assert after.n_moves_rejected == 0
    assert audit(repaired, mode="verdict").protected[short].all()


def test_suppressed_cells_first_gives_the_same_repair():
    # large regions first get the deviation LP on their suppressed cells alone; a
    # zero-cost deviation is what the full LP would find as well, so the repaired
    # pattern is the same, and it passes the independent audit
    t, cost, base, _ = gauss_pattern("1k-3d", 2024)
    first = audit(base, mode="verdict")
    short = first.shortfalls[:40]
    never, always = RepairStats(), RepairStats()
    plain = greedy_repair(base, cost, short, audit_result=first, block_sizes=(20, 100),
                          options=GreedyOptions(free_first_min_cells=10**9), stats=never)
    new, moves = greedy_repair(base, cost, short, audit_result=first,
                               block_sizes=(20, 100), return_moves=True,
                               options=GreedyOptions(free_first_min_cells=0), stats=always)
    assert never.free_first_lps == 0
    assert always.free_first_lps > 0           # the suppressed-only LPs did run
    np.testing.assert_array_equal(new, plain)
    after = audit(t.replace(status=new), mode="verdict", moves=moves)
    assert after.n_moves_rejected == 0 and after.protected[short].all()


def test_mirror_of_a_move_serves_the_other_direction():
    # a lone primary of a magnitude table short both ways: the deviation that moves it up
    # by its level, run backwards, moves it down as far (the square's cells are far from
    # their bounds), so the repair solves one LP, and the audit certifies both ways
    t = two_by_two(primary_level=1.0)
    counts = RepairStats()
    p = int(np.flatnonzero(t.status == "U")[0])
    new, moves = greedy_repair(t, np.ones(t.n_cells), [p], return_moves=True, stats=counts)
    assert counts.lps >= 1 and counts.mirror_skips == 1   # no LP for the way down
    assert moves.shape[0] == 1
    res = audit(t.replace(status=new), mode="verdict", moves=moves)
    assert res.passed and res.n_lp == 0


def test_greedy_method_takes_its_options_and_reports_its_lps():
    t = synthetic.preset("3d-small", seed=7)
    c = cost_vector(t, "value")
    out = greedy(t, c, options=GreedyOptions(max_rounds=0))
    assert out.details["rounds"] == 1 and out.details["deviation_lps"] > 0
    res = protect(t, method="greedy", cost="value", singleton=False, max_rounds=0)
    assert res.params["max_rounds"] == 0 and res.params["free_first_min_cells"] == 20_000
    assert audit(res.confidential_table, singleton=False).passed
    with pytest.raises(TypeError):
        greedy(t, c, rounds=3)


def _undecided(t: Table):
    """A verdict audit stopped at once: every primary it looked at is left open."""
    res = audit(t, singleton=False, mode="verdict", time_limit=0.0)
    assert res.incomplete is not None and res.incomplete[res.shortfalls].all()
    return res


def test_repair_adds_no_cell_where_the_pattern_already_protects():
    # a protected pattern whose audit decided nothing: the intruder's LPs on each
    # primary's neighbourhood show the protection, so no cell is added (the direction
    # amounts alone, an upward move of the whole width, would add some)
    from lp_oracle import protected
    t = synthetic.count_table([(2, 4)] * 3, seed=1)
    done = protect(t, method="gauss", cost="value", singleton=False)
    pt = t.replace(status=done.confidential_table.status)
    assert protected(pt)[pt.status == "U"].all()
    res = _undecided(pt)
    stats = RepairStats()
    new = greedy_repair(pt, cost_vector(t, "value"), res.shortfalls, audit_result=res,
                        stats=stats)
    assert (new == pt.status).all()
    assert stats.already_protected == len(res.shortfalls) > 0


def test_repair_of_undecided_primaries_protects_each_of_them():
    # the gauss pattern (short primaries among them) with every primary left open: the
    # LP oracle finds each repaired primary protected, whether the pattern already
    # protected it (no cell) or a deviation added cells
    from lp_oracle import protected
    t = synthetic.count_table([(2, 4)] * 3, seed=1)
    pt = t.replace(status=protect(t, method="gauss", cost="value", singleton=False,
                                  repair=False).confidential_table.status)
    res = _undecided(pt)
    stats = RepairStats()
    new = greedy_repair(pt, cost_vector(t, "value"), res.shortfalls, audit_result=res,
                        stats=stats)
    assert 0 < stats.already_protected < len(res.shortfalls)
    assert (new != pt.status).any()
    ok = protected(pt.replace(status=new))
    assert ok[res.shortfalls].all()
