"""The branch-and-cut's node order, its integral points and its root purge: the plunge
limit, the separation at a short integral point and the purge in place change the route,
never the optimum (judged by brute force and the independent audit)."""
from __future__ import annotations

import numpy as np
import pytest

from tabprotect.audit import audit
from tabprotect.secondary import cost_vector
from tabprotect.secondary.attack_requirements import Requirements
from tabprotect.secondary.candidates import candidate_cells
from tabprotect.secondary.optimal import OptimalOptions, benders
from tabprotect.secondary.optimal.branch_and_cut import BranchAndCut
from tabprotect.secondary.optimal.lp_phase import lp_phase
from tabprotect.secondary.optimal.search import Search
from test_secondary_optimal import brute_force, hier_table, secondary_cost

#: tables whose root LP is fractional, so the tree decides the optimum
_TABLES = [(7, "value", 3), (0, "value", 2)]
_OPTIMA: dict = {}


def _optimum(seed, cost_name, n_primary):
    key = (seed, cost_name, n_primary)
    if key not in _OPTIMA:
        table = hier_table(seed, n_primary=n_primary)
        _OPTIMA[key] = brute_force(table, cost_vector(table, cost_name))
    return _OPTIMA[key]


def _search(seed, cost_name, n_primary, **fields):
    # Gomory and cover cuts off: they close some of these roots before any branching
    options = OptimalOptions(gomory_rounds=0, cover_cuts=False, **fields)
    table = hier_table(seed, n_primary=n_primary)
    cost = cost_vector(table, cost_name)
    req = Requirements.from_table(table, singleton=True)
    out = benders(table, cost, req, candidate_cells(table), options=options)
    assert out.proven_optimal
    assert audit(table.replace(status=out.status), singleton=True).passed
    assert secondary_cost(out.status, cost) == pytest.approx(
        _optimum(seed, cost_name, n_primary), rel=1e-6)
    return out


@pytest.mark.parametrize("seed,cost_name,n_primary", _TABLES)
@pytest.mark.parametrize("share", [0.0, 0.25, None])
def test_plunge_limit_keeps_the_brute_force_optimum(seed, cost_name, n_primary, share):
    out = _search(seed, cost_name, n_primary, plunge_gap_share=share)
    assert out.details["nodes"] > 1
    if share is None:
        assert out.details.get("plunges_queued", 0) == 0


def test_plunge_limit_queues_children():
    # with no share of the gap a child above the best open bound is queued
    out = _search(*_TABLES[0], plunge_gap_share=0.0)
    assert out.details.get("plunges_queued", 0) > 0


@pytest.mark.parametrize("seed,cost_name,n_primary", _TABLES)
@pytest.mark.parametrize("integral_separation", [False, True])
def test_integral_point_cuts_keep_the_brute_force_optimum(seed, cost_name, n_primary,
                                                          integral_separation):
    # each of these trees meets a short integral point: its check's cuts alone, or
    # those and the separation's, cut it off
    out = _search(seed, cost_name, n_primary, integral_separation=integral_separation)
    skipped = out.details.get("integral_sep_skipped", 0)
    assert (skipped == 0) if integral_separation else (skipped > 0)


@pytest.mark.parametrize("seed,cost_name,n_primary", _TABLES)
def test_root_purge_in_place_keeps_the_brute_force_optimum(seed, cost_name, n_primary):
    # the root purge deletes the pool rows slack at the LP phase's point from the model
    # in place (its basis stays warm); the tree still reaches the optimum (brute force,
    # independent audit: both in _search)
    out = _search(seed, cost_name, n_primary, purge_root=True)
    assert out.details["root_purge"] == "in place"
    assert out.details["purged_rows"] > 0
    assert out.details["nodes"] > 1


def _after_lp_phase(table, cost, **fields):
    """The optimal search of ``table`` (single-contributor attack, no time limit) after
    its master's build and its LP phase: (search, LP phase)."""
    s = Search(table, cost, Requirements.from_table(table, singleton=True),
               candidate_cells(table), time_limit=None, mip_gap=None, progress=None,
               options=OptimalOptions(**fields))
    s.build_master()
    return s, lp_phase(s, fractional_check=False)


def test_purge_in_place_leaves_the_rows_a_rebuild_keeps():
    # the master after the in-place purge holds exactly the rows a rebuilt model would
    # (the static ones and the pool rows near binding at the point), its bookkeeping
    # matches them, and the re-solve from the kept basis needs no simplex iteration
    table = hier_table(7, n_primary=3)
    s, lp = _after_lp_phase(table, cost_vector(table, "value"))
    master = s.master
    assert master.in_model.all()
    before = master.model.solve().objective
    lhs = master.pool_matrix @ lp.zlp
    near = np.flatnonzero(lhs <= 1.0 + 0.05)
    assert 0 < len(near) < len(lhs)   # something to purge, something kept
    assert master.purged_in_place(lp.zlp, 0.05)
    assert np.array_equal(np.flatnonzero(master.in_model), near)
    assert sorted(master.model_rows) == near.tolist()
    row_pool = np.asarray(master.row_pool)
    assert sorted(row_pool[row_pool >= 0].tolist()) == near.tolist()
    assert master.model.n_rows == int(master.static_in.sum()) + len(near)
    res = master.model.solve()
    assert res.objective == pytest.approx(before, rel=1e-9)
    assert master.model.highs.getInfo().simplex_iteration_count == 0
    # nothing slack left: nothing to delete, and the model is kept as it is
    rows = master.model.n_rows
    assert master.purged_in_place(lp.zlp, 0.05) and master.model.n_rows == rows


@pytest.mark.parametrize("seed,cost_name,n_primary", _TABLES)
def test_root_skips_the_separation_the_lp_phase_settled(seed, cost_name, n_primary):
    # the LP phase ends where its capacity separation found no new cut; the root starts
    # at that point and does not run it again: the same optimum (brute force, audit)
    out = _search(seed, cost_name, n_primary)
    assert out.details["root_separation_skipped"] == 1


def _tree_after_lp_phase(point_shift: float):
    """The branch-and-cut after the LP phase on the first tree table, told the phase
    settled at its point moved by ``point_shift`` in one coordinate: (proven, stats,
    best pattern, table, cost)."""
    seed, cost_name, n_primary = _TABLES[0]
    table = hier_table(seed, n_primary=n_primary)
    cost = cost_vector(table, cost_name)
    s, lp = _after_lp_phase(table, cost, gomory_rounds=0, cover_cuts=False)
    assert lp.settled
    point = lp.zlp.copy()
    point[int(np.argmax(point))] -= point_shift
    proven, _ = BranchAndCut(s, lp.lower_bound, point, settled=True).run()
    return proven, s.stats, s.best, table, cost


def test_root_separates_at_a_point_other_than_the_settled_one():
    # the skip holds for the settled point only: told another point settled, the root
    # separates at its own point; either way the brute-force optimum (audited)
    for shift, skipped in ((0.0, 1), (0.5, 0)):
        proven, stats, best, table, cost = _tree_after_lp_phase(shift)
        assert proven
        assert stats.get("root_separation_skipped", 0) == skipped
        assert audit(table.replace(status=np.where(best & (table.status == "S"), "M",
                                                   table.status)), singleton=True).passed
        assert secondary_cost(np.where(best & (table.status == "S"), "M", table.status),
                              cost) == pytest.approx(_optimum(*_TABLES[0]), rel=1e-6)


def test_lp_phase_stopped_by_its_stall_rule_settles_no_point():
    # an LP phase ended by its stall rule (cuts were still found) settles nothing: the
    # root separates at its first point
    out = _search(*_TABLES[0], lp_stall_rounds=1, lp_stall_tol=10.0)
    assert "root_separation_skipped" not in out.details
