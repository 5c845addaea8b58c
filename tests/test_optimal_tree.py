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


def test_purge_in_place_leaves_the_rows_a_rebuild_keeps():
    # the master after the in-place purge holds exactly the rows a rebuilt model would
    # (the static ones and the pool rows near binding at the point), its bookkeeping
    # matches them, and the re-solve from the kept basis needs no simplex iteration
    table = hier_table(7, n_primary=3)
    cost = cost_vector(table, "value")
    req = Requirements.from_table(table, singleton=True)
    s = Search(table, cost, req, candidate_cells(table), time_limit=None, mip_gap=None,
               progress=None, options=OptimalOptions())
    s.build_master()
    lp = lp_phase(s, False)
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

