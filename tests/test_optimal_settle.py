"""The optimal method leaves out the primaries the unpublished cells protect already
(tabprotect/secondary/optimal/settle.py): judged by the independent audit and by brute
force."""
from __future__ import annotations

import time

import numpy as np
import pytest

from tabprotect.audit import audit
from tabprotect.model import Hierarchy, Table
from tabprotect.secondary import cost_vector
from tabprotect.secondary.optimal import OptimalOptions, optimal
from tabprotect.secondary.optimal.settle import settle
from tabprotect.secondary.repair import Requirements
from test_gauss_widths import linked
from test_secondary_optimal import brute_force, hier_table, secondary_cost


def _unpublished(table: Table) -> np.ndarray:
    return np.isin(table.status, ("U", "M"))


@pytest.mark.parametrize("seed,singleton", [(1, False), (2, True), (5, False), (9, True)])
def test_settled_primaries_pass_the_audit_and_the_rest_are_short(seed, singleton):
    # many primaries that partly protect each other (with ``singleton``, each a single
    # contributor's cell): a settled primary passes the
    # independent audit with the unpublished cells alone, a kept one fails it there
    table = hier_table(seed, n_primary=6, freq_one=singleton)
    req = Requirements.from_table(table, singleton=singleton)
    out = settle(table, req, _unpublished(table), deadline=None, options=OptimalOptions())
    assert out.complete
    res = audit(table, unpublished=_unpublished(table), singleton=singleton)
    kept = np.zeros(table.n_cells, bool)
    kept[out.req.primary] = True
    prim = req.primary
    assert res.protected[prim[~kept[prim]]].all()
    assert not res.protected[prim[kept[prim]]].any()
    assert out.settled == len(prim) - len(out.req.primary)
    # single-contributor primaries are each other's attackers: none settles there
    assert out.settled > 0 if not singleton else out.settled == 0


def test_primaries_that_protect_each_other_need_no_secondary():
    # the four inner cells of a 2 x 2 table with totals are primaries: together they
    # protect each other, so the optimum suppresses nothing more (proven)
    r = Hierarchy.flat(["1", "2"], total="T")
    c = Hierarchy.flat(["a", "b"], total="T")
    t = Table.from_arrays({"r": r, "c": c}, [40, 20, 20, 20, 10, 10, 20, 10, 10],
                          freq=np.full(9, 5.0))
    st = t.status.copy()
    st[t.is_inner] = "U"
    t = t.replace(status=st, upl=np.where(st == "U", 2.0, 0.0),
                  lpl=np.where(st == "U", 2.0, 0.0))
    out = optimal(t, cost_vector(t, "value"),
                  options=OptimalOptions(settle_min_primaries=0))
    assert out.proven_optimal and out.details["settled_primaries"] == 4
    assert not (out.status == "M").any()
    assert audit(t.replace(status=out.status), singleton=True).passed


@pytest.mark.parametrize("seed,cost_name,engine", [
    (1, "value", "benders"), (5, "unity", "benders"), (9, "value", "compact"),
    (12, "value", "benders")])
def test_settling_keeps_the_brute_force_optimum(seed, cost_name, engine):
    table = hier_table(seed, n_primary=5, finite_ub=engine == "compact")
    cost = cost_vector(table, cost_name)
    out = optimal(table, cost,
                  options=OptimalOptions(engine=engine, settle_min_primaries=0))
    assert out.proven_optimal and out.details["settled_primaries"] > 0
    assert audit(table.replace(status=out.status), singleton=True).passed
    assert secondary_cost(out.status, cost) == pytest.approx(brute_force(table, cost),
                                                             rel=1e-6)


def test_a_settle_pass_past_its_deadline_settles_nothing():
    table = hier_table(2, n_primary=6)
    req = Requirements.from_table(table, singleton=False)
    out = settle(table, req, _unpublished(table), deadline=time.perf_counter() - 1.0,
                 options=OptimalOptions())
    assert not out.complete and out.settled == 0
    assert np.array_equal(out.req.primary, req.primary)


@pytest.mark.parametrize("seed,time_limit", [(2, None), (3, None), (5, 0.05), (7, 1e-3)])
def test_optimal_on_a_general_table_passes_the_audit(seed, time_limit):
    # linked tables (cells + relations, no dimensions); with a limit that binds the
    # result is whatever protected pattern the call reached, never an unprotected one
    table = linked(((2, 2), (3,), (3,), (2,)), seed=seed)
    assert not table.dimensions
    cost = cost_vector(table, "value")
    t0 = time.perf_counter()
    out = optimal(table, cost, time_limit=time_limit,
                  options=OptimalOptions(settle_min_primaries=0))
    assert time.perf_counter() - t0 < 60.0
    if time_limit is None:
        assert out.proven_optimal
    assert audit(table.replace(status=out.status), singleton=True).passed
