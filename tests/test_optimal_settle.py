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
from tabprotect.secondary.optimal.settle import settle, single_witnesses
from tabprotect.secondary.attack_requirements import Requirements
from test_gauss_widths import linked
from test_secondary_optimal import brute_force, hier_table, secondary_cost


def _unpublished(table: Table) -> np.ndarray:
    return np.isin(table.status, ("U", "M"))


def _settled(seed: int):
    """A hierarchical table of seed ``seed`` with six primaries, and its settle pass
    (every check forced on)."""
    table = hier_table(seed, n_primary=6)
    req = Requirements.from_table(table, singleton=False)
    return table, settle(table, req, _unpublished(table), deadline=None,
                         options=OptimalOptions(settle_check_min_share=0.0))


@pytest.mark.parametrize("seed", [1, 2, 5, 9])
def test_settled_primaries_pass_the_audit_and_the_rest_are_short(seed):
    # many primaries that partly protect each other (the check of what the witnesses
    # leave forced on): a settled primary passes the independent audit with the
    # unpublished cells alone, a kept one fails it there
    table, out = _settled(seed)
    assert out.complete
    res = audit(table, unpublished=_unpublished(table), singleton=False)
    kept = np.zeros(table.n_cells, bool)
    kept[out.req.primary] = True
    prim = np.flatnonzero(table.status == "U")
    assert res.protected[prim[~kept[prim]]].all()
    assert not res.protected[prim[kept[prim]]].any()
    assert 0 < out.settled == len(prim) - len(out.req.primary)


def test_with_single_contributor_attackers_nothing_is_settled():
    # no witness pass against single contributors: the pass is skipped (no LP)
    table = hier_table(2, n_primary=6, freq_one=True)
    req = Requirements.from_table(table, singleton=True)
    out = settle(table, req, _unpublished(table), deadline=None, options=OptimalOptions())
    assert out.settled == 0 and out.lps == 0
    assert np.array_equal(out.req.primary, req.primary)


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
    out = optimal(t, cost_vector(t, "value"), singleton=False,
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
    out = optimal(table, cost, singleton=False,
                  options=OptimalOptions(engine=engine, settle_min_primaries=0,
                                         settle_check_min_share=0.0))
    assert out.proven_optimal and out.details["settled_primaries"] > 0
    assert audit(table.replace(status=out.status), singleton=False).passed
    assert secondary_cost(out.status, cost) == pytest.approx(
        brute_force(table, cost, singleton=False), rel=1e-6)


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


@pytest.mark.parametrize("seed,singleton", [(2, True), (5, False)])
def test_an_unfinished_start_with_no_time_left_gives_an_audited_pattern(seed, singleton):
    # no time at all: gauss's width step and elimination stop at once and every cell
    # they did not examine stays suppressed; the result is the repair from the
    # primaries in its floor of seconds when it meets every condition (else that
    # unfinished pattern, flagged unproven), and it passes the independent audit
    table = linked(((2, 3), (3,), (4,), (3,)), seed=seed)
    cost = cost_vector(table, "value")
    out = optimal(table, cost, time_limit=0.0, singleton=singleton,
                  options=OptimalOptions(gauss_start_min_primaries=0))
    assert out.details["gauss_start_state"] == "unfinished"
    if "short_search" not in out.details:
        assert out.details["search"].startswith("none")
        assert out.solver_status == "time_limit" and not out.proven_optimal
    assert (out.status[table.status == "U"] == "U").all()
    assert audit(table.replace(status=out.status), singleton=singleton).passed


def test_a_primary_no_candidate_can_protect_enough_is_refused_by_name():
    # T = a + b + c with T and c published: a can rise only as far as b can fall (2),
    # short of its level 5.  The search's first cut for a cannot be met with every
    # candidate suppressed; protect() then names the cell (its check runs only now)
    from tabprotect.errors import InfeasibleRulesError
    from tabprotect.secondary import protect
    h = Hierarchy.flat(["a", "b", "c"], total="T")
    t = Table.from_arrays({"x": h}, [20, 10, 2, 8], freq=np.full(4, 5.0))
    st = np.array(["P", "U", "S", "P"])
    t = t.replace(status=st, upl=np.where(st == "U", 5.0, 0.0))
    with pytest.raises(InfeasibleRulesError, match="x=a"):
        optimal(t, cost_vector(t, "unity"), singleton=False,
                options=OptimalOptions(engine="benders"))
    with pytest.raises(InfeasibleRulesError, match=r"x=a.*up protection"):
        protect(t, method="optimal", cost="unity", singleton=False)
    # with c free the same primary is protected (no error, the audit passes)
    t2 = t.replace(status=np.array(["P", "U", "S", "S"]))
    res = protect(t2, method="optimal", cost="unity", singleton=False)
    assert res.passed and audit(res.confidential_table, singleton=False).passed


@pytest.mark.parametrize("seed", [1, 4, 6, 9])
def test_single_witnesses_settle_only_primaries_the_audit_passes(seed):
    # one LP per open primary and direction, each solution settling every primary it
    # moves far enough: whatever it settles passes the independent audit with the
    # unpublished cells alone (here at least one on each table)
    table = hier_table(seed, n_primary=6)
    req = Requirements.from_table(table, singleton=False)
    z = _unpublished(table).astype(float)
    done, n_lp = single_witnesses(table.relations.tocsr(), req, z,
                                  np.ones(len(req.primary), bool), deadline=None)
    res = audit(table, unpublished=_unpublished(table), singleton=False)
    assert res.protected[req.primary[done]].all()
    assert n_lp <= 2 * len(req.primary) and done.any()


@pytest.mark.parametrize("engine", ["compact", "benders"])
def test_a_table_with_a_primary_short_of_its_own_level_is_refused(engine):
    # a P cell leaves a primary no pattern protects (brute force finds none): both
    # engines refuse it (protect()'s check runs only after optimal's search), as
    # protect() does, without a raw solver error
    from tabprotect.errors import InfeasibleRulesError
    from tabprotect.secondary import protect
    table = hier_table(11, n_primary=3, finite_ub=True, p_cells=1)
    cost = cost_vector(table, "value")
    assert not np.isfinite(brute_force(table, cost))
    with pytest.raises(InfeasibleRulesError):
        optimal(table, cost, options=OptimalOptions(engine=engine))
    with pytest.raises(InfeasibleRulesError):
        protect(table, method="optimal", cost="value")


def test_is_deviation_accepts_only_solutions_of_the_relations():
    # a certificate must keep every relation at zero, within a tolerance relative to its size
    from scipy import sparse

    from tabprotect.secondary.optimal.witness_check import is_deviation

    rows = sparse.csr_matrix(np.array([[1.0, 1.0, -1.0], [0.0, 1.0, -1.0]]))
    y = np.array([0.0, 2e6, 2e6])
    assert is_deviation(rows, y)
    assert not is_deviation(rows, y + np.array([1.0, 0.0, 0.0]))
    assert is_deviation(rows, y + np.array([1e-3, 0.0, 0.0]))   # 1e-3 <= 1e-7 * 2e6


@pytest.mark.parametrize("seed", [1, 2, 5, 9])
def test_the_settling_witnesses_are_moves_the_audit_accepts_and_its_verdict_stands(seed):
    # every kept witness is a deviation within the unpublished cells' ranges (the
    # audit rejects none), and with them the audit's verdict is the one without them
    table, out = _settled(seed)
    assert out.settled > 0 and out.moves is not None
    d = out.moves.toarray()
    assert np.abs(table.relations @ d.T).max() <= 1e-7 * max(1.0, np.abs(d).max())
    assert not d[:, ~_unpublished(table)].any()
    with_moves = audit(table, unpublished=_unpublished(table), singleton=False,
                       mode="verdict", moves=out.moves)
    without = audit(table, unpublished=_unpublished(table), singleton=False, mode="verdict")
    assert with_moves.n_moves_rejected == 0 and with_moves.n_moves_used == d.shape[0]
    assert np.array_equal(with_moves.protected, without.protected)


def test_protect_hands_the_settling_witnesses_to_its_audit():
    # the primaries the unpublished cells protect are certified by the method's own
    # witnesses in protect()'s audit, which checks them; the verdict is the audit's
    from tabprotect.secondary import protect
    table = hier_table(5, n_primary=6)
    res = protect(table, method="optimal", cost="value", singleton=False,
                  audit_mode="verdict",
                  options=OptimalOptions(settle_min_primaries=1, settle_check_min_share=0.0))
    assert res.solver["settled_primaries"] > 0
    assert res.audit.n_moves_used > 0 and res.audit.n_moves_rejected == 0
    pattern = res.confidential_table.status
    assert res.passed == audit(table.replace(status=pattern), singleton=False,
                               mode="verdict").passed
