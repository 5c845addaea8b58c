"""The branch-and-cut's node order and its integral points: the plunge limit and the
separation at a short integral point change the route, never the optimum (judged by
brute force and the independent audit)."""
from __future__ import annotations

import pytest

from tabprotect.audit import audit
from tabprotect.secondary import cost_vector
from tabprotect.secondary.attack_requirements import Requirements
from tabprotect.secondary.candidates import candidate_cells
from tabprotect.secondary.optimal import OptimalOptions, benders
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
