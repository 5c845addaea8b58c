"""The optimal method against brute force: on small tables every suppression pattern is
enumerated, each judged by the independent LP audit, and the cheapest one that passes
must cost exactly what the optimal method returns."""
from __future__ import annotations

import itertools
import time

import highspy
import numpy as np
import scipy.sparse as sp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabprotect.audit import audit
from tabprotect.errors import InfeasibleRulesError
from tabprotect.model import Hierarchy, Table, synthetic
from tabprotect.model.table import aggregate_leaves
from tabprotect.secondary import cost_vector, protect
from solvers import HighsModel, LinearProgram
import lp_oracle
from test_gauss_widths import linked
from tabprotect.secondary.candidates import candidate_cells
from tabprotect.secondary.optimal import OptimalOptions, benders, optimal
from tabprotect.secondary.optimal.cuts import (BridgelessRows, cover_cuts, reduce_candidates,
                                               rounded_cut)
from tabprotect.secondary.optimal.merged_lp import PairMergedModel
from tabprotect.secondary.optimal.oracle import DeadlineRepair, HybridOracle, LPCount
from tabprotect.secondary.optimal import prune as prune_module
from tabprotect.secondary.optimal.prune import prune, witness_prune
from tabprotect.secondary.optimal import heuristics
from tabprotect.secondary.optimal.branch_and_cut import BranchAndCut
from tabprotect.secondary.optimal.lp_phase import lp_phase
from tabprotect.secondary.optimal.search import Search
from tabprotect.secondary.optimal.start import PROTECTED, UNFINISHED, gauss_start
from tabprotect.secondary.optimal.support import SupportSeparator
from tabprotect.secondary.optimal.witness_check import witness_certified
from tabprotect.secondary.attack_requirements import Requirements, derived_upper_bounds
from tabprotect.secondary.attacker_oracle import AttackerOracle, ComponentRows
from tabprotect.secondary.repair import GreedyRepair


# ---------------------------------------------------------------- table builders
def hier_table(seed: int, n_primary: int = 2, rows=None, cols=None, finite_ub=False,
               freq_one: bool = False, p_cells: int = 0) -> Table:
    rng = np.random.default_rng(seed)
    rows = rows or Hierarchy.from_pairs([("T", "A"), ("T", "B"), ("A", "A1"), ("A", "A2")])
    cols = cols or Hierarchy.flat(["a", "b"], total="T")
    shape = (len(rows), len(cols))
    v = aggregate_leaves(rng.integers(1, 40, size=shape).ravel().astype(float), [rows, cols])
    f = aggregate_leaves(rng.integers(2, 6, size=shape).ravel().astype(float), [rows, cols])
    t = Table.from_arrays({"r": rows, "c": cols}, v, freq=f)
    inner = np.flatnonzero(t.is_inner)
    prim = rng.choice(inner, size=n_primary, replace=False)
    st = t.status.copy()
    st[prim] = "U"
    freq = t.freq.copy()
    if freq_one:
        freq[prim] = 1.0
    others = np.flatnonzero(st == "S")
    if p_cells:
        st[rng.choice(others, size=p_cells, replace=False)] = "P"
    level = np.where(st == "U", np.round(0.3 * v + 1), 0.0)
    kw = {}
    if finite_ub:
        kw["ub"] = np.full(t.n_cells, 2 * v.max())
    return t.replace(status=st, upl=level, lpl=level, freq=freq, **kw)


def _determined(table: Table, sup: np.ndarray) -> bool:
    """A primary alone (among suppressed cells) in some relation is exactly disclosed:
    a quick necessary condition that only skips patterns the audit would reject anyway."""
    A = table.relations
    for s in np.flatnonzero(table.status == "U"):
        for r in A[:, s].nonzero()[0]:
            cells = A.indices[A.indptr[r]:A.indptr[r + 1]]
            if sup[cells].sum() == 1:
                return True
    return False


def brute_force(table: Table, cost: np.ndarray, singleton: bool = True) -> float:
    """Minimum cost over every pattern of the candidate cells that passes the audit."""
    cand = np.flatnonzero(table.status == "S")
    assert len(cand) <= 16, "brute force is for tiny tables"
    patterns = []
    for k in range(len(cand) + 1):
        for combo in itertools.combinations(cand, k):
            patterns.append((float(cost[list(combo)].sum()), combo))
    patterns.sort(key=lambda p: p[0])
    base = table.status == "U"
    for c, combo in patterns:
        sup = base.copy()
        sup[list(combo)] = True
        if _determined(table, sup):
            continue
        st = table.status.copy()
        st[list(combo)] = "M"
        if audit(table.replace(status=st), singleton=singleton).passed:
            return c
    return np.inf


def secondary_cost(status: np.ndarray, cost: np.ndarray) -> float:
    return float(cost[status == "M"].sum())


# ---------------------------------------------------------------- brute force
@pytest.mark.parametrize("seed,cost_name,engine", [
    (1, "unity", "benders"), (2, "value", "benders"), (13, "value", "compact"),
    (4, "unity", "compact"),
])
def test_optimal_cost_equals_brute_force(seed, cost_name, engine):
    table = hier_table(seed, finite_ub=(engine == "compact"), p_cells=2)
    cost = cost_vector(table, cost_name)
    out = optimal(table, cost, engine=engine)
    assert out.details["engine"] == engine
    assert out.proven_optimal
    got = secondary_cost(out.status, cost)
    assert audit(table.replace(status=out.status), singleton=True).passed
    assert got == pytest.approx(brute_force(table, cost), rel=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10, 22))
@pytest.mark.parametrize("cost_name", ["unity", "value", "log"])
def test_optimal_cost_equals_brute_force_many(seed, cost_name):
    table = hier_table(seed, n_primary=1 + seed % 3, finite_ub=bool(seed % 2), p_cells=1,
                       freq_one=seed % 4 == 0)
    cost = cost_vector(table, cost_name)
    best = brute_force(table, cost)
    if not np.isfinite(best):  # P cells can make a table unprotectable: both must agree
        with pytest.raises(InfeasibleRulesError):
            protect(table, cost=cost_name)
        return
    res = protect(table, cost=cost_name)
    assert res.passed and res.proven_optimal and len(res.repaired) == 0
    assert res.cost == pytest.approx(best, rel=1e-6)


def test_engines_agree_on_a_larger_table():
    rows = Hierarchy.flat([f"r{i}" for i in range(5)], total="T")
    cols = Hierarchy.flat([f"c{i}" for i in range(5)], total="T")
    table = hier_table(7, n_primary=4, rows=rows, cols=cols, finite_ub=True)
    cost = cost_vector(table, "value")
    a = optimal(table, cost, engine="compact", mip_gap=0.0)
    b = optimal(table, cost, engine="benders", mip_gap=0.0)
    assert a.proven_optimal and b.proven_optimal
    assert secondary_cost(a.status, cost) == pytest.approx(secondary_cost(b.status, cost))
    for st in (a.status, b.status):
        assert audit(table.replace(status=st), singleton=True).passed


# ---------------------------------------------------------------- singletons
def test_two_singletons_do_not_protect_each_other():
    # row 1: two single-contributor primaries and one safe cell; each contributor knows
    # its own value, so suppressing just the pair (plus the column partners) is not enough
    rows = Hierarchy.flat(["1", "2"], total="T")
    cols = Hierarchy.flat(["a", "b", "c"], total="T")
    inner = np.array([[20.0, 30.0, 50.0], [40.0, 35.0, 45.0]])
    v = np.zeros((3, 4))
    v[1:, 1:] = inner
    v[0, 1:] = inner.sum(0)
    v[1:, 0] = inner.sum(1)
    v[0, 0] = inner.sum()
    freq = np.full((3, 4), 3.0)
    freq[1, 1] = freq[1, 2] = 1.0
    t = Table.from_arrays({"r": rows, "c": cols}, v.ravel(), freq=freq.ravel())
    st = t.status.copy()
    st[[t.cell("1", "a"), t.cell("1", "b")]] = "U"
    lvl = np.where(st == "U", 5.0, 0.0)
    t = t.replace(status=st, upl=lvl, lpl=lvl)
    cost = cost_vector(t, "unity")
    with_single = optimal(t, cost, singleton=True)
    without = optimal(t, cost, singleton=False)
    assert audit(t.replace(status=with_single.status), singleton=True).passed
    # the pair pattern (2 secondaries: the two cells below) fails the singleton audit
    assert secondary_cost(without.status, cost) == 2
    assert not audit(t.replace(status=without.status), singleton=True).passed
    assert secondary_cost(with_single.status, cost) == brute_force(t, cost, singleton=True)
    assert secondary_cost(with_single.status, cost) > 2


@pytest.mark.parametrize("seed", [5, 6])
def test_singleton_primaries_brute_force(seed):
    table = hier_table(seed, n_primary=2, freq_one=True, p_cells=1)
    cost = cost_vector(table, "unity")
    out = optimal(table, cost, singleton=True)
    assert audit(table.replace(status=out.status), singleton=True).passed
    assert secondary_cost(out.status, cost) == brute_force(table, cost, singleton=True)


# ---------------------------------------------------------------- rules of the model
def test_p_cells_are_never_suppressed_and_cost_stays_minimal():
    table = hier_table(8, p_cells=3)
    cost = cost_vector(table, "value")
    out = optimal(table, cost)
    assert (out.status[table.status == "P"] == "P").all()
    assert secondary_cost(out.status, cost) == pytest.approx(brute_force(table, cost))


def test_unprotectable_primary_is_named():
    rows = Hierarchy.flat(["1", "2"], total="T")
    cols = Hierarchy.flat(["a", "b"], total="T")
    t = Table.from_arrays({"r": rows, "c": cols}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    st = np.array(["P", "P", "P", "P", "U", "P", "P", "S", "S"])
    t = t.replace(status=st, upl=np.where(st == "U", 1.0, 0.0))
    with pytest.raises(InfeasibleRulesError, match=r"r=1, c=a"):
        protect(t, cost="unity")
    # the Benders engine names the cell too, when protect()'s up-front check did not decide
    with pytest.raises(InfeasibleRulesError, match=r"primary cell \(r=1, c=a\) cannot"):
        optimal(t, cost_vector(t, "unity"), engine="benders")


def test_derived_bounds_never_cut_a_feasible_table():
    # every cell of a non-negative table is below every total above it
    table = hier_table(9, p_cells=2)
    ub = derived_upper_bounds(table)
    assert (ub >= table.value - 1e-9).all()
    fixed = table.status == "P"
    assert np.isfinite(ub[fixed]).all()


@pytest.mark.slow     # timing-sensitive: a 0.01-s wall limit passes only on an idle machine
def test_time_limit_returns_an_audited_pattern():
    rows = Hierarchy.flat([f"r{i}" for i in range(12)], total="T")
    cols = Hierarchy.flat([f"c{i}" for i in range(12)], total="T")
    table = hier_table(11, n_primary=20, rows=rows, cols=cols)
    res = protect(table, cost="value", time_limit=0.01, engine="benders")
    assert res.passed
    assert audit(res.confidential_table, singleton=True).passed
    assert res.n_secondary > 0
    if not res.proven_optimal:
        assert res.solver_status == "time_limit"


# ---------------------------------------------------------------- Benders internals
@pytest.mark.parametrize("seed,cost_name", [(1, "unity"), (2, "value"), (3, "log")])
def test_proof_means_the_bound_meets_the_cost(seed, cost_name):
    # "proven" must come from the master's bound, never from a solution vector alone
    table = hier_table(seed, n_primary=3, p_cells=1)
    cost = cost_vector(table, cost_name)
    out = optimal(table, cost, engine="benders")
    assert out.proven_optimal
    got = secondary_cost(out.status, cost)
    assert out.details["lower_bound"] >= got * (1 - 1e-6) - 1e-9
    assert got == pytest.approx(brute_force(table, cost), rel=1e-6)


@pytest.mark.parametrize("seed", [3, pytest.param(4, marks=pytest.mark.slow)])
def test_fractional_separation_cuts_keep_every_protected_pattern(seed):
    # the capped-LP separation may only return valid inequalities: every pattern the
    # audit accepts satisfies each cut it finds at a fractional point
    table = hier_table(seed, n_primary=2)
    req = Requirements.from_table(table, singleton=True)
    oracle = AttackerOracle(table, req)
    rng = np.random.default_rng(seed)
    z = np.where(table.status == "U", 1.0, rng.uniform(0.0, 0.4, table.n_cells))
    sep = oracle.separate(z)
    assert sep.cuts, "a weak fractional point should violate some capacity cut"
    cand = np.flatnonzero(table.status == "S")
    checked = 0
    for k in range(len(cand) + 1):
        for combo in itertools.combinations(cand, k):
            sup = table.status == "U"
            sup[list(combo)] = True
            st = np.where(sup & (table.status == "S"), "M", table.status)
            if not audit(table.replace(status=st), singleton=True).passed:
                continue
            checked += 1
            for cut in sep.cuts:
                lhs = np.minimum(cut.coef, cut.rhs) @ sup[cut.cols]
                assert lhs >= cut.rhs * (1 - 1e-9)
        if checked > 40:
            break
    assert checked > 0


# ---------------------------------------------------------------- strengthening, search
@pytest.mark.parametrize("seed,cost_name", [(5, "unity"), (6, "value")])
@pytest.mark.parametrize("search", ["bc", "milp"])
def test_both_searches_equal_brute_force(seed, cost_name, search):
    # the branch-and-cut (default) and the MILP-rounds search must both reach the optimum
    table = hier_table(seed, n_primary=3, p_cells=1)
    cost = cost_vector(table, cost_name)
    req = Requirements.from_table(table, singleton=True)
    out = benders(table, cost, req, candidate_cells(table),
                  options=OptimalOptions(search=search))
    assert out.proven_optimal
    assert out.details["lower_bound"] >= secondary_cost(out.status, cost) * (1 - 1e-6) - 1e-9
    assert audit(table.replace(status=out.status), singleton=True).passed
    assert secondary_cost(out.status, cost) == pytest.approx(brute_force(table, cost), rel=1e-6)


@pytest.mark.parametrize("seed,cost_name", [(5, "value"), (8, "unity")])
@pytest.mark.parametrize("lazy", [True, False])
def test_lazy_static_rows_keep_the_brute_force_optimum(seed, cost_name, lazy):
    # bridgeless rows held back until a master point violates them: the same optimum,
    # and the lazy master holds only some of them
    rows = Hierarchy.flat([f"r{i}" for i in range(3)], total="T")
    cols = Hierarchy.flat([f"c{i}" for i in range(3)], total="T")
    table = hier_table(seed, n_primary=3, rows=rows, cols=cols)
    cost = cost_vector(table, cost_name)
    req = Requirements.from_table(table, singleton=True)
    out = benders(table, cost, req, candidate_cells(table),
                  options=OptimalOptions(lazy_static=lazy))
    assert out.proven_optimal
    held, total = out.details["static_rows_held"], out.details["static_rows"]
    assert total > 0 and (held < total if lazy else held == total)
    assert audit(table.replace(status=out.status), singleton=True).passed
    assert secondary_cost(out.status, cost) == pytest.approx(brute_force(table, cost), rel=1e-6)


def _capacity_cut(units, need, point):
    """Coefficients a_i = min(range_i, need) / need of a capacity cut a z >= 1, and a
    fractional point x of the same length."""
    a = np.minimum(np.array(units, float), need) / need
    return a, np.array(point[: len(a)])


def _binary_points_meeting(a):
    """Every binary z with a @ z >= 1 (the points a cut derived from it must keep)."""
    for bits in itertools.product([0, 1], repeat=len(a)):
        z = np.array(bits, float)
        if a @ z >= 1 - 1e-9:
            yield z


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=2, max_size=7), st.integers(2, 15),
       st.lists(st.floats(0.0, 1.0), min_size=7, max_size=7))
def test_rounded_capacity_cut_keeps_every_binary_solution(units, need, point):
    # a capacity cut sum a_i z_i >= 1 (a_i = min(range_i, need) / need) and its
    # Chvatal-Gomory rounding: every binary z meeting the cut meets the rounding too
    a, x = _capacity_cut(units, need, point)
    r = rounded_cut(a, x)
    if r is None:
        return
    assert r @ x < a @ x  # only returned when the point violates it more
    for z in _binary_points_meeting(a):
        assert r @ z >= 1 - 1e-9


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=2, max_size=8), st.integers(2, 15),
       st.lists(st.floats(0.0, 1.0), min_size=8, max_size=8))
def test_cover_cuts_keep_every_binary_solution(units, need, point):
    # a capacity cut sum a_i z_i >= 1 (a_i = min(range_i, need) / need) and its cover cuts
    # at a fractional point: every binary z meeting the cut meets each cover, and each
    # cover is violated at the point
    a, x = _capacity_cut(units, need, point)
    R = sp.csr_matrix(a[None, :])
    for r, cols in cover_cuts(R, x):
        assert r == 0 and x[cols].sum() < 1 - 1e-4
        for z in _binary_points_meeting(a):
            assert z[cols].sum() >= 1


def test_cover_cut_of_a_known_knapsack():
    # cells 1-3 (0.4 each) cannot meet the cut without cell 0 unless all three are
    # suppressed: the greedy complement {1, 2} leaves the cover {0, 3}
    R = sp.csr_matrix(np.array([[1.0, 0.4, 0.4, 0.4]]))
    found = cover_cuts(R, np.array([0.5, 0.42, 0.42, 0.42]))
    assert [(r, c.tolist()) for r, c in found] == [(0, [0, 3])]
    # a point that meets the cover is not cut
    assert cover_cuts(R, np.array([0.9, 0.3, 0.3, 0.3])) == []


@pytest.mark.parametrize("seed", [2, 8])
def test_reduced_candidates_never_move(seed):
    # a candidate dropped by the reduction is pinned in every pattern: suppressing it on
    # top of all other candidates leaves every primary's interval unchanged
    table = hier_table(seed, n_primary=2, p_cells=3)
    req = Requirements.from_table(table, singleton=False)
    cand = candidate_cells(table)
    fixed = table.status == "U"
    kept = reduce_candidates(table, req, cand, fixed)
    dropped = np.flatnonzero(cand & ~kept)
    assert len(dropped) > 0  # P cells leave some candidate alone in a relation
    base = np.where(kept, "M", table.status)
    ref = audit(table.replace(status=base))
    for i in dropped:
        st = base.copy()
        st[i] = "M"
        got = audit(table.replace(status=st))
        prim = table.status == "U"
        assert np.allclose(got.lower[prim], ref.lower[prim])
        assert np.allclose(got.upper[prim], ref.upper[prim])


@pytest.mark.parametrize("seed, dead", [(2, 0), (5, 0), (2, 3), (5, 4)])
def test_bridgeless_rows_match_the_rows_written_out(seed, dead):
    # the implicit rows against a plain loop over (candidate, relation) pairs: the same
    # rows in the same order, and the same left-hand sides at a random point; ``dead``
    # candidates are not live (a row of such a cell holds it only by its -1)
    table = hier_table(seed, n_primary=2, p_cells=2)
    req = Requirements.from_table(table, singleton=False)
    fixed = table.status == "U"
    cand = candidate_cells(table) & ~fixed
    live = cand & ((req.up > 0) | (req.down > 0))
    live[np.random.default_rng(seed).choice(np.flatnonzero(live), dead, replace=False)] = False
    col = np.full(table.n_cells, -1)
    col[cand] = np.arange(int(cand.sum()))
    A = table.relations.tocsr()
    want = []
    for i in np.flatnonzero(cand):
        for r in np.flatnonzero(A[:, i].toarray().ravel()):
            cells = A.indices[A.indptr[r]:A.indptr[r + 1]]
            if (fixed[cells] & ((req.up[cells] > 0) | (req.down[cells] > 0))).any():
                continue
            row = np.zeros(int(cand.sum()))
            row[col[cells[live[cells] & (cells != i)]]] = 1.0
            row[col[i]] = -1.0
            want.append(row)
    rows = BridgelessRows(table, col, fixed & ((req.up > 0) | (req.down > 0)), live)
    assert rows.shape[0] == len(want) > 0
    got = rows[np.arange(rows.shape[0])].toarray()
    assert np.array_equal(got, np.array(want))
    zc = np.random.default_rng(seed).random(rows.shape[1])
    assert np.allclose(rows @ zc, np.array(want) @ zc)
    pick = np.array([len(want) - 1, 0])
    assert np.array_equal(rows[pick].toarray(), np.array(want)[pick])
    extra = sp.csr_matrix(np.ones((1, rows.shape[1])))
    more = rows.stacked(extra)
    assert np.allclose(more @ zc, np.append(np.array(want) @ zc, zc.sum()))
    assert np.array_equal(more[np.array([len(want), 0])].toarray(),
                          np.vstack([np.ones(rows.shape[1]), want[0]]))


# ---------------------------------------------------------------- speed paths
@pytest.mark.parametrize("seed", [1, 4, 9])
def test_dual_simplex_oracle_gives_the_same_answers(seed):
    # the dual simplex only changes HiGHS' algorithm: verdicts, and cut validity, must
    # agree with HiGHS' own choice on fractional and binary points
    table = hier_table(seed, n_primary=3, freq_one=True)
    req = Requirements.from_table(table, singleton=True)
    ref = AttackerOracle(table, req, simplex_strategy=None)
    dual = AttackerOracle(table, req, simplex_strategy=1)
    rng = np.random.default_rng(seed)
    for _ in range(6):
        z = np.where(table.status == "U", 1.0, rng.uniform(0.0, 1.0, table.n_cells))
        z = np.where(rng.random(table.n_cells) < 0.3, 0.0, z)
        for point in (z, z > 0.5):
            a, b = ref.check(point), dual.check(point)
            assert sorted(a.violated) == sorted(b.violated)
            assert len(a.cuts) == len(b.cuts)


@pytest.mark.parametrize("seed", [2, 5])
def test_kept_component_rows_give_the_same_answers(seed):
    # the relations kept per component are the ones sliced anew: the same verdicts and
    # the same cuts at points whose components repeat, with a budget that keeps none
    table = hier_table(seed, n_primary=3, freq_one=True)
    req = Requirements.from_table(table, singleton=True)
    kept, fresh = AttackerOracle(table, req), AttackerOracle(table, req)
    fresh.component_rows = ComponentRows(fresh.A, max_nonzeros=0)
    rng = np.random.default_rng(seed)
    points = []
    for _ in range(4):
        z = np.where(table.status == "U", 1.0, rng.uniform(0.0, 1.0, table.n_cells))
        points.append(np.where(rng.random(table.n_cells) < 0.3, 0.0, z))
    for z in points + points:
        for a, b in ((kept.check(z > 0.5), fresh.check(z > 0.5)),
                     (kept.separate(z), fresh.separate(z))):
            assert sorted(a.violated) == sorted(b.violated)
            assert [(c.cols.tolist(), c.coef.round(9).tolist()) for c in a.cuts] == \
                [(c.cols.tolist(), c.coef.round(9).tolist()) for c in b.cuts]
    assert fresh.component_rows._held == 0 and not fresh.component_rows._kept


@pytest.mark.parametrize("seed", [2, 6])
def test_kept_component_models_give_a_new_models_answers(seed):
    # a kept model gets the new bounds and (without warm separation) starts from
    # scratch: the verdicts and the cuts of an oracle that keeps none, at points whose
    # components repeat
    table = hier_table(seed, n_primary=3, freq_one=True)
    req = Requirements.from_table(table, singleton=True)
    kept = HybridOracle(table, req, simplex_strategy=1, racing=False,
                        options=OptimalOptions(warm_attacker_lps=False))
    fresh = HybridOracle(table, req, simplex_strategy=1, racing=False,
                         options=OptimalOptions(component_models_nonzeros=0,
                                                separation_witnesses=0))
    kept.witnesses.keep = 0
    rng = np.random.default_rng(seed)
    points = []
    for _ in range(4):
        z = np.where(table.status == "U", 1.0, rng.uniform(0.0, 1.0, table.n_cells))
        points.append(np.where(rng.random(table.n_cells) < 0.3, 0.0, z))
    for z in points + points[::-1]:
        for a, b in ((kept.check(z > 0.5), fresh.check(z > 0.5)),
                     (kept.separate(z), fresh.separate(z))):
            assert sorted(a.violated) == sorted(b.violated)
            assert [(c.cols.tolist(), c.coef.round(9).tolist()) for c in a.cuts] == \
                [(c.cols.tolist(), c.coef.round(9).tolist()) for c in b.cuts]
    assert kept._models and not fresh._models


@pytest.mark.parametrize("seed", [2, 6])
def test_warm_attacker_lps_find_a_new_models_violations_with_valid_cuts(seed):
    # separations and verdicts from a kept model's last basis: the same conditions
    # violated as an oracle that keeps no model (each LP's optimum is unique), checks
    # with cuts unchanged, and every cut holds at every protected pattern found
    table = hier_table(seed, n_primary=3, freq_one=True)
    req = Requirements.from_table(table, singleton=True)
    warm = HybridOracle(table, req, simplex_strategy=1, racing=False,
                        options=OptimalOptions(separation_witnesses=0))
    fresh = HybridOracle(table, req, simplex_strategy=1, racing=False,
                         options=OptimalOptions(component_models_nonzeros=0,
                                                separation_witnesses=0))
    rng = np.random.default_rng(seed)
    points = []
    for _ in range(6):
        z = rng.uniform(0.0, 1.0, table.n_cells)
        z = np.where(rng.random(table.n_cells) < 0.3, 0.0, z)
        points.append(np.where(table.status == "U", 1.0, z))
    patterns = (rng.random((30, table.n_cells)) < 0.7) | (table.status == "U")
    protected = [pat for pat in patterns if fresh.check(pat, cuts=False).ok]
    n_cuts = 0
    for z in points + points[::-1]:
        a, b = warm.check(z > 0.5), fresh.check(z > 0.5)
        assert sorted(a.violated) == sorted(b.violated)
        assert [(c.cols.tolist(), c.coef.round(9).tolist()) for c in a.cuts] == \
            [(c.cols.tolist(), c.coef.round(9).tolist()) for c in b.cuts]
        a, b = warm.check(z > 0.5, cuts=False), fresh.check(z > 0.5, cuts=False)
        assert sorted(a.violated) == sorted(b.violated) and (a.ok, b.cuts) == (b.ok, [])
        a, b = warm.separate(z), fresh.separate(z)
        assert sorted(a.violated) == sorted(b.violated)
        for c in a.cuts:
            for pat in protected:
                assert float(c.coef @ pat[c.cols]) >= c.rhs - 1e-6
        n_cuts += len(a.cuts)
    assert n_cuts and protected and warm._models


def _last_iterations(oracle) -> list[int]:
    """The simplex iterations of each kept model's last LP."""
    return [int(m.highs.getInfoValue("simplex_iteration_count")[1])
            for m, _ in oracle._models.values()]


@pytest.mark.parametrize("warm", [True, False])
def test_separations_and_verdicts_restart_from_the_kept_basis(warm):
    # one primary with an upper level only: one attacker LP per call.  Separated (or
    # checked without cuts) again at the same point it starts from its own optimal
    # basis (no iteration) with warm attacker LPs, from scratch without; a check with
    # cuts always starts from scratch
    table = hier_table(4, n_primary=1)
    table = table.replace(lpl=np.zeros(table.n_cells))
    req = Requirements.from_table(table, singleton=False)
    oracle = HybridOracle(table, req, simplex_strategy=1, racing=False,
                          options=OptimalOptions(separation_witnesses=0,
                                                 warm_attacker_lps=warm))
    z = np.where(table.status == "U", 1.0, 0.5)
    first = oracle.separate(z)
    assert first.n_lp == 1
    cold = _last_iterations(oracle)
    assert cold and min(cold) > 0
    again = oracle.separate(z)
    assert again.n_lp == 1
    assert _last_iterations(oracle) == ([0] * len(cold) if warm else cold)
    pattern = z > 0.25
    oracle.check(pattern)
    with_cuts = _last_iterations(oracle)
    assert min(with_cuts) > 0
    assert oracle.check(pattern, cuts=False).n_lp == 1
    verdict = _last_iterations(oracle)
    assert oracle.check(pattern, cuts=False).n_lp == 1
    assert _last_iterations(oracle) == ([0] * len(cold) if warm else verdict)
    oracle.check(pattern)
    assert _last_iterations(oracle) == with_cuts


def test_component_rows_are_the_sliced_relations_within_their_budget():
    table = hier_table(3, n_primary=2)
    A = table.relations.tocsr()
    rows_of = ComponentRows(A, max_nonzeros=A.nnz)
    for comp in (np.arange(table.n_cells), np.array([0, 2, 5]), np.arange(table.n_cells)):
        rows, sub = rows_of.of(comp)
        full = A[:, comp].toarray()
        want = np.flatnonzero(np.abs(full).sum(axis=1) > 0)
        assert rows.tolist() == want.tolist()
        assert np.array_equal(sub.toarray(), full[want])
        assert rows_of._held <= A.nnz


def _forty_primary_table() -> Table:
    """A 342-cell two-level table with 40 primaries: its tree needs many nodes."""
    rows = Hierarchy.from_pairs([("T", "A"), ("T", "B")] + [("A", f"a{i}") for i in range(8)]
                                + [("B", f"b{i}") for i in range(8)])
    cols = Hierarchy.from_pairs([("T", "A"), ("T", "B")] + [("A", f"a{i}") for i in range(6)]
                                + [("B", f"b{i}") for i in range(6)])
    return hier_table(12, n_primary=40, rows=rows, cols=cols)


def test_node_limit_stops_the_search_with_an_unproven_protected_pattern():
    # a table whose root LP bound is below the optimum with these settings (the tree
    # test below needs more than one node for it), stopped after the root by a node
    # limit (deterministic): the incumbent is protected (independent audit), flagged
    # unproven, with a valid bound below its cost
    table = hier_table(16, n_primary=3)
    cost = cost_vector(table, "unity")
    options = OptimalOptions(engine="benders", branching="fractional", purge_root=False,
                             cover_cuts=False, gomory_rounds=0, max_nodes=1)
    out = optimal(table, cost, mip_gap=0.0, options=options)
    assert out.details["nodes"] == 1 and out.details["node_limit"]
    assert audit(table.replace(status=out.status), singleton=True).passed
    assert not out.proven_optimal
    assert out.solver_status == "node_limit" and out.mip_gap > 0
    assert out.details["lower_bound"] < secondary_cost(out.status, cost)
    assert secondary_cost(out.status, cost) >= brute_force(table, cost) - 1e-9


@pytest.mark.slow
def test_time_limit_is_honoured_with_a_small_overrun():
    # every phase of the Benders search (incumbent, LP phase, branch-and-cut, swap
    # search) stops at the deadline; the result is audited (a wall-clock test: slow set)
    table = _forty_primary_table()
    cost = cost_vector(table, "unity")
    t0 = time.perf_counter()
    out = optimal(table, cost, time_limit=0.5, engine="benders", mip_gap=0.0)
    took = time.perf_counter() - t0
    assert took < 0.5 + 1.5
    assert audit(table.replace(status=out.status), singleton=True).passed
    assert out.details["lower_bound"] <= secondary_cost(out.status, cost)
    if not out.proven_optimal:
        assert out.solver_status == "time_limit" and out.mip_gap > 0


# ---------------------------------------------------------------- support cuts
@pytest.mark.parametrize("seed", [3, 7, 11])
def test_support_cuts_only_cut_off_cells_the_audit_finds_exact(seed):
    # a support cut ``sum_{j in S} z_j >= z_i`` claims: with every cell of S published,
    # a suppressed cell i is disclosed exactly.  The independent audit must agree on every
    # pattern that violates a cut found at random fractional points
    rows = Hierarchy.from_pairs([("T", "A"), ("T", "B"), ("A", "A1"), ("A", "A2"),
                                 ("B", "B1"), ("B", "B2")])
    table = hier_table(seed, n_primary=2, rows=rows)
    req = Requirements.from_table(table, singleton=False)
    cand = candidate_cells(table)
    fixed = table.status == "U"
    sep = SupportSeparator(table, req, cand, fixed)
    rng = np.random.default_rng(seed)
    cand_idx = np.flatnonzero(cand)
    found = 0
    for _ in range(8):
        z = np.where(fixed, 1.0, np.where(rng.random(table.n_cells) < 0.5,
                                           rng.uniform(0.05, 1.0, table.n_cells), 0.0))
        R, _ = sep.separate(z, min_z=0.05, max_lps=50)
        R = R.tocsr()
        for r in range(R.shape[0]):
            cols = R.indices[R.indptr[r]:R.indptr[r + 1]]
            vals = R.data[R.indptr[r]:R.indptr[r + 1]]
            i = int(cand_idx[cols[vals < 0][0]])
            S = cand_idx[cols[vals > 0]]
            found += 1
            # violating patterns: i and a random set of cells outside S suppressed
            for _ in range(3):
                sup = fixed | (cand & (rng.random(table.n_cells) < 0.5))
                sup[S] = False
                sup[i] = True
                res = audit(table, unpublished=sup)
                assert res.lower[i] == pytest.approx(res.upper[i], abs=1e-6), \
                    table.cell_name(i)
    assert found > 0, "random fractional points should violate some support cut"


@pytest.mark.parametrize("seed,cost_name", [
    (5, "unity"), pytest.param(21, "unity", marks=pytest.mark.slow), (6, "value")])
@pytest.mark.parametrize("support", [True, False])
def test_support_cuts_keep_the_brute_force_optimum(seed, cost_name, support):
    # with and without support cuts the proven optimum is the enumerated one
    table = hier_table(seed, n_primary=3)
    cost = cost_vector(table, cost_name)
    out = optimal(table, cost, options=OptimalOptions(engine="benders", search="bc",
                                                      support_cuts=support))
    assert out.details["options"]["support_cuts"] is support
    assert out.proven_optimal
    assert audit(table.replace(status=out.status), singleton=True).passed
    assert secondary_cost(out.status, cost) == pytest.approx(brute_force(table, cost), rel=1e-6)


@pytest.mark.parametrize("seed,cost_name,freq_one", [
    (5, "unity", False), (6, "value", False),
    pytest.param(3, "value", True, marks=pytest.mark.slow)])
def test_gauss_start_keeps_the_brute_force_optimum(seed, cost_name, freq_one):
    # large tables start from the gauss method's repaired pattern; forced on here: the
    # search still ends at the enumerated optimum, and its pattern passes the independent
    # audit (single-contributor attackers included)
    table = hier_table(seed, n_primary=3, freq_one=freq_one)
    cost = cost_vector(table, cost_name)
    options = OptimalOptions(engine="benders", search="bc", gauss_start_min_candidates=0)
    out = optimal(table, cost, options=options)  # no time limit: no timing in the test
    assert out.details["gauss_start_cells"] > 0
    assert out.proven_optimal
    assert audit(table.replace(status=out.status), singleton=True).passed
    assert secondary_cost(out.status, cost) == pytest.approx(brute_force(table, cost), rel=1e-6)


@pytest.mark.parametrize("seed,freq_one", [(5, False), (3, True)])
def test_gauss_start_pattern_passes_the_audit(seed, freq_one):
    # the start alone: gauss, one oracle check, the repair of the short primaries; a
    # pattern reported finished passes the independent audit
    table = hier_table(seed, n_primary=4, freq_one=freq_one)
    cost = cost_vector(table, "value")
    req = Requirements.from_table(table, singleton=True)
    found = gauss_start(table, cost, req, candidate_cells(table), singleton=True,
                        time_limit=None)
    assert found is not None and found.protected
    assert audit(table, unpublished=found.pattern, singleton=True).passed


@pytest.mark.parametrize("seed", [2, 3])
def test_gauss_start_on_a_general_table_is_proven_by_gauss_witnesses(seed):
    # on a general table gauss runs its width step and pruning pass, whose witnesses
    # prove the start without an oracle check; the independent audit agrees
    table = linked(((2, 2), (3,), (3,), (2,)), seed=seed)
    cost = cost_vector(table, "value")
    req = Requirements.from_table(table, singleton=True)
    found = gauss_start(table, cost, req, candidate_cells(table), singleton=True,
                        time_limit=None)
    assert found is not None and found.state == PROTECTED
    assert audit(table, unpublished=found.pattern, singleton=True).passed


def test_gauss_start_without_swaps_reaches_the_same_optimum():
    # a general table, the gauss start forced on: with few primaries its gauss runs no
    # swap pass (a dearer start on this table); the search still proves the optimum
    # found with the swaps, and both patterns pass the independent LP oracle
    table = linked(((2, 3), (3,), (4,), (3,)), seed=4)
    cost = cost_vector(table, "value")
    base = OptimalOptions(engine="benders", gauss_start_min_candidates=0)
    plain = optimal(table, cost, options=base)
    swapped = optimal(table, cost, options=base.replace(gauss_start_swaps_min_primaries=None))
    assert plain.details["gauss_start_swaps"] is False
    assert swapped.details["gauss_start_swaps"] is True
    assert plain.proven_optimal and swapped.proven_optimal
    assert secondary_cost(plain.status, cost) == pytest.approx(
        secondary_cost(swapped.status, cost), rel=1e-9)
    for out in (plain, swapped):
        assert lp_oracle.protected(table.replace(status=out.status), singleton=True).all()


@pytest.mark.slow     # timing-sensitive: the gauss start must finish within a 0.5-s wall limit
@pytest.mark.parametrize("seed", [2, 5])
def test_binding_time_limit_on_a_general_table_keeps_the_start(seed):
    # a general table, the gauss start forced on, a limit that stops the search: the
    # call ends near the limit (generous bound), and its pattern passes the independent
    # audit and costs no more than the start
    table = linked(((2, 3), (3,), (4,), (3,)), seed=seed)
    cost = cost_vector(table, "value")
    options = OptimalOptions(gauss_start_min_primaries=0)
    t0 = time.perf_counter()
    out = optimal(table, cost, time_limit=0.5, options=options)
    assert time.perf_counter() - t0 < 0.5 + 10.0
    assert out.details["gauss_start_state"] == PROTECTED
    assert audit(table.replace(status=out.status), singleton=True).passed
    assert secondary_cost(out.status, cost) <= out.details["start_cost"] + 1e-9


def test_oracle_deadline_stops_its_lps_too():
    # a deadline already past: no attacker LP runs, the check is incomplete (never
    # "protected") and the separation returns no cut; without it the same pattern is
    # judged short
    table, req = _six_primary_singleton_table(3)
    oracle = HybridOracle(table, req, simplex_strategy=1)
    pattern = table.status == "U"
    past = time.perf_counter() - 1.0
    chk = oracle.check(pattern, deadline=past)
    assert not chk.complete and not chk.ok and chk.n_lp == 0
    sep = oracle.separate(pattern.astype(float), deadline=past)
    assert not sep.complete and not sep.cuts
    assert oracle.check(pattern).violated


@pytest.mark.parametrize("seed,cost_name", [(5, "unity"), (6, "value")])
def test_unprotected_seed_still_reaches_the_brute_force_optimum(seed, cost_name):
    # an unfinished start (here: the primaries and one more cell) seeds the first repair
    # only; the search still ends at the enumerated optimum
    table = hier_table(seed, n_primary=3)
    cost = cost_vector(table, cost_name)
    req = Requirements.from_table(table, singleton=True)
    first = (table.status == "U").copy()
    first[np.flatnonzero(table.status == "S")[0]] = True
    out = benders(table, cost, req, candidate_cells(table), seed=first)
    assert out.proven_optimal
    assert audit(table.replace(status=out.status), singleton=True).passed
    assert secondary_cost(out.status, cost) == pytest.approx(brute_force(table, cost), rel=1e-6)


@pytest.mark.parametrize("seed,freq_one,warm", [(2, False, 500_000), (3, True, 500_000),
                                                (8, False, 500_000), (3, True, 0)])
def test_witness_prune_leaves_a_minimal_protected_pattern(seed, freq_one, warm):
    # prune everything-suppressed: the audit must pass, and publishing any remaining
    # secondary again must make it fail (removing more never protects more, so the
    # result is minimal although cells are tried one by one); warm=0: every condition
    # shares one attacker model
    table = hier_table(seed, n_primary=2, freq_one=freq_one)
    req = Requirements.from_table(table, singleton=True)
    cost = cost_vector(table, "value")
    cand = candidate_cells(table)
    fixed = table.status == "U"
    oracle = AttackerOracle(table, req)
    full = fixed | cand
    assert oracle.check(full, cuts=False).ok
    out = witness_prune(oracle, full, fixed, cost, None, warm_entries=warm)
    assert out is not None and (out <= full).all() and out.sum() < full.sum()
    assert audit(table, unpublished=out, singleton=True).passed
    for i in np.flatnonzero(out & ~fixed):
        less = out.copy()
        less[i] = False
        assert not audit(table, unpublished=less, singleton=True).passed, table.cell_name(i)


def _prune_case(seed: int, freq_one: bool):
    """A prune test's table, its single-contributor requirements, value costs, the
    primaries (fixed) and the pattern of every candidate suppressed."""
    table = hier_table(seed, n_primary=3, freq_one=freq_one)
    req = Requirements.from_table(table, singleton=True)
    fixed = table.status == "U"
    return table, req, cost_vector(table, "value"), fixed, fixed | candidate_cells(table)


@pytest.mark.parametrize("seed,freq_one", [(2, False), (3, True), (5, True), (9, True),
                                           (12, True)])
def test_witness_prune_takes_the_same_decisions_as_the_check_by_check_prune(seed, freq_one):
    # both publish the suppressions dearest first and keep a removal exactly when every
    # attacker condition stays met: sparse witnesses (and a single contributor's condition
    # borrowing the outside intruder's witness) only save LPs, never change a decision
    table, req, cost, fixed, full = _prune_case(seed, freq_one)
    oracle = AttackerOracle(table, req)
    plain = prune(oracle, full, fixed, cost, None, options=OptimalOptions(witness_prune=False))
    out = witness_prune(oracle, full, fixed, cost, None)
    assert out is not None
    assert audit(table, unpublished=out, singleton=True).passed
    assert (out == plain).all()


@pytest.mark.parametrize("seed,freq_one", [(2, False), (3, True), (8, False), (12, True)])
def test_pinned_cells_flag_only_removals_that_disclose_a_primary(seed, freq_one):
    # a removal the relations' propagation says pins a primary must fail the
    # independent audit; a trial leaves the state as it was.  On a minimal pattern
    # (every removal fails) some removals are flagged
    table, req, cost, fixed, full = _prune_case(seed, freq_one)
    oracle = AttackerOracle(table, req)
    minimal = witness_prune(oracle, full, fixed, cost, None)
    flagged = 0
    for pattern in (full, minimal):
        sup = np.flatnonzero(pattern)
        wit = prune_module._Witnesses(oracle, pattern, sup)
        pinned = prune_module._PinnedCells(
            wit.rows, wit.hi[:len(sup)] + wit.hi[len(sup):] > 0,
            wit.local[req.primary[prune_module._with_level(req)]])
        for k in np.flatnonzero(~fixed[sup]):
            before = pinned.free.copy(), pinned.count.copy()
            if pinned.pins_primary(int(k)):
                flagged += 1
                less = pattern.copy()
                less[sup[k]] = False
                assert not audit(table, unpublished=less, singleton=True).passed
            assert (pinned.free == before[0]).all() and (pinned.count == before[1]).all()
    assert flagged


@pytest.mark.parametrize("seed,singleton", [(3, True), (8, False), (12, False)])
def test_pinned_cells_after_publications_flag_only_removals_that_disclose_a_primary(
        seed, singleton):
    # along a prune's own publications (dearest first, each kept by the attacker LPs),
    # the state the publications leave flags only removals that fail the independent
    # audit: the propagation is never stronger than the LPs, for the outside intruder
    # alone as with the single-contributor attackers
    rows = Hierarchy.from_pairs([("T", "A"), ("T", "B"), ("A", "A1"), ("A", "A2"),
                                 ("B", "B1"), ("B", "B2"), ("B", "B3")])
    cols = Hierarchy.from_pairs([("T", "a"), ("T", "b"), ("a", "a1"), ("a", "a2"),
                                 ("b", "b1"), ("b", "b2")])
    table = hier_table(seed, n_primary=4, rows=rows, cols=cols)
    req = Requirements.from_table(table, singleton=singleton)
    fixed, cost = table.status == "U", cost_vector(table, "value")
    full = fixed | candidate_cells(table)
    oracle = AttackerOracle(table, req)
    minimal = witness_prune(oracle, full, fixed, cost, None, pin_propagation=False)
    sup = np.flatnonzero(full)
    wit = prune_module._Witnesses(oracle, full, sup)
    pinned = prune_module._PinnedCells(
        wit.rows, wit.hi[:len(sup)] + wit.hi[len(sup):] > 0,
        wit.local[req.primary[prune_module._with_level(req)]])
    order = np.flatnonzero(~fixed[sup])
    order = order[prune_module.removal_order(cost[sup[order]], None)]
    current, flagged = full.copy(), 0
    for k in order[~minimal[sup[order]]]:
        current[sup[k]] = False
        pinned.publish(int(k))
        for other in np.flatnonzero(current[sup] & ~fixed[sup]):
            if pinned.pins_primary(int(other)):
                flagged += 1
                less = current.copy()
                less[sup[other]] = False
                assert not audit(table, unpublished=less, singleton=singleton).passed
    assert flagged


@pytest.mark.parametrize("seed,freq_one", [(2, False), (3, True), (9, True)])
def test_pin_propagation_saves_prune_lps_and_keeps_its_decisions(seed, freq_one):
    # the removals the propagation rejects are ones the attacker LPs reject: the same
    # pattern with fewer LPs
    table, req, cost, fixed, full = _prune_case(seed, freq_one)
    counts = [LPCount(), LPCount()]
    with_pins, without = (witness_prune(AttackerOracle(table, req), full, fixed, cost, None,
                                        count=n, pin_propagation=pins)
                          for n, pins in zip(counts, (True, False)))
    assert (with_pins == without).all()
    assert audit(table, unpublished=with_pins, singleton=True).passed
    assert counts[0].n < counts[1].n


@pytest.mark.parametrize("seed,freq_one,witness", [(2, False, True), (3, True, True),
                                                   (5, True, False)])
def test_prune_below_a_lower_bound_takes_the_same_decisions(seed, freq_one, witness):
    # the brute-force optimum is a lower bound on every protected pattern's cost: a
    # prune told how far the pattern is above it skips the removals that would go below
    # it (they cannot leave it protected), so it ends where the prune without the bound
    # does, with fewer LPs; with no slack (a pattern at the bound) it solves none
    table, req, cost, fixed, full = _prune_case(seed, freq_one)
    oracle = AttackerOracle(table, req)
    options = OptimalOptions(witness_prune=witness)
    slack = float(cost[full & ~fixed].sum()) - brute_force(table, cost)
    counts = [LPCount(), LPCount()]
    free = prune(oracle, full, fixed, cost, None, options=options, count=counts[0])
    bound = prune(oracle, full, fixed, cost, None, options=options, count=counts[1],
                  slack=slack)
    assert (bound == free).all()
    assert audit(table, unpublished=bound, singleton=True).passed
    assert counts[1].n <= counts[0].n
    at_bound = LPCount()
    assert (cost[full & ~fixed] > 0).all()
    again = prune(oracle, full, fixed, cost, None, options=options, count=at_bound,
                  slack=0.0)
    assert (again == full).all() and at_bound.n == 0


# ---------------------------------------------------------------- branching, cut purge
_TREE_OPTIMA: dict = {}  # brute-force optimum per (seed, cost, primaries): shared by variants


def test_root_stall_keeps_the_brute_force_optimum():
    # roots that stop separating after a round that gains less than the (large)
    # tolerance leave the rest to the tree: the same proven optimum as brute force (the
    # cover cuts give these roots more than one round: the root starts at the LP phase's
    # last point, where the capacity separation found nothing)
    options = OptimalOptions(root_stall_rounds=1, root_stall_tol=0.5, gomory_rounds=0)
    stalled = 0
    for seed, cost_name in [(7, "value"), (0, "value"), (16, "unity")]:
        table = hier_table(seed, n_primary=3)
        cost = cost_vector(table, cost_name)
        req = Requirements.from_table(table, singleton=True)
        out = benders(table, cost, req, candidate_cells(table), options=options)
        assert out.proven_optimal
        stalled += out.details.get("root_stalled", False)
        assert audit(table.replace(status=out.status), singleton=True).passed
        assert secondary_cost(out.status, cost) == pytest.approx(brute_force(table, cost),
                                                                 rel=1e-6)
    assert stalled > 0


@pytest.mark.parametrize("seed,cost_name,n_primary", [
    pytest.param(16, "unity", 3, marks=pytest.mark.slow), (7, "value", 3), (0, "value", 2),
    pytest.param(11, "value", 2, marks=pytest.mark.slow)])
@pytest.mark.parametrize("branching,purge", [("reliability", True), ("fractional", False)])
@pytest.mark.parametrize("tree_purge,covers", [(1, False), (None, True)])
def test_tree_search_reaches_the_brute_force_optimum(seed, cost_name, n_primary, branching,
                                                     purge, tree_purge, covers):
    # tables whose root LP is fractional, so the tree (strong branching and its child
    # bounds, pseudo-costs, purged pool cuts coming back, rows deleted in the tree with the
    # saved bases remapped, cover cuts) decides the optimum
    options = OptimalOptions(branching=branching, purge_root=purge,
                             purge_tree_every=tree_purge, purge_tree_equal_costs_rows=0,
                             cover_cuts=covers,
                             gomory_rounds=0)  # (Gomory cuts can close these roots)
    table = hier_table(seed, n_primary=n_primary)
    cost = cost_vector(table, cost_name)
    req = Requirements.from_table(table, singleton=True)
    out = benders(table, cost, req, candidate_cells(table), options=options)
    assert out.proven_optimal
    if not covers:  # (cover cuts close some of these roots)
        assert out.details["nodes"] > 1
        if branching == "reliability":
            assert out.details["strong_lps"] > 0
    if tree_purge:
        assert out.details.get("tree_purged", 0) > 0
    assert audit(table.replace(status=out.status), singleton=True).passed
    key = (seed, cost_name, n_primary)
    if key not in _TREE_OPTIMA:
        _TREE_OPTIMA[key] = brute_force(table, cost)
    assert secondary_cost(out.status, cost) == pytest.approx(_TREE_OPTIMA[key], rel=1e-6)


def _statuses(seq) -> list[int]:
    return [int(v) for v in seq]


def test_saved_basis_gains_basic_slacks_and_loses_deleted_rows():
    # a node's saved basis restored after cuts were appended: the statuses saved, each
    # appended row's slack basic, and the re-solve from it reaches the cold optimum;
    # rows deleted by a purge leave it only when their slacks were basic
    from tabprotect.secondary.optimal.master import BASIC, SavedBasis
    rng = np.random.default_rng(3)
    n, m = 12, 6
    A = sp.csr_matrix(rng.integers(0, 2, size=(m, n)).astype(float))
    lp = LinearProgram(c=rng.uniform(1, 5, n), A=A, row_lower=np.ones(m),
                       row_upper=np.full(m, np.inf), col_upper=np.ones(n))
    model = HighsModel(lp)
    assert model.solve().status == "optimal"
    saved = SavedBasis(model.highs.getBasis(), n)
    cols, rows = _statuses(saved.basis.col_status), _statuses(saved.basis.row_status)
    R = sp.csr_matrix(rng.integers(0, 2, size=(3, n)).astype(float))
    model.add_rows(R, np.ones(3), np.full(3, np.inf))
    cold = HighsModel(LinearProgram(c=lp.c, A=sp.vstack([A, R]).tocsr(),
                                    row_lower=np.ones(m + 3),
                                    row_upper=np.full(m + 3, np.inf), col_upper=np.ones(n)))
    model.solve()   # the model's basis moves on
    assert saved.extend_rows(m + 3) and not saved.extend_rows(m + 2)
    assert model.highs.setBasis(saved.basis) != highspy.HighsStatus.kError
    back = model.highs.getBasis()
    assert _statuses(back.col_status) == cols
    assert _statuses(back.row_status) == rows + [BASIC] * 3
    assert model.solve().objective == pytest.approx(cold.solve().objective, rel=1e-9)
    status = np.array(rows + [BASIC] * 3)
    keep = np.ones(m + 3, bool)
    keep[[int(np.flatnonzero(status == BASIC)[0]), m + 1]] = False
    assert saved.keep_rows(keep)
    assert _statuses(saved.basis.row_status) == status[keep].tolist()
    nonbasic = np.flatnonzero(status[keep] != BASIC)
    assert len(nonbasic)   # a binding row of the optimum
    drop = np.ones(int(keep.sum()), bool)
    drop[nonbasic[0]] = False
    assert not saved.keep_rows(drop)


def _bridgeless_patterns(table: Table) -> list[np.ndarray]:
    """Every pattern of the candidate cells that passes the audit and has no suppressed
    cell alone in one of its relations (the integer points of the master's rows)."""
    A2 = table.relations.tocsr().multiply(table.relations.tocsr())
    cand = table.status == "S"

    def bridgeless(sup: np.ndarray) -> bool:
        alone = (A2 @ sup.astype(float) == 1) & ((A2 @ (sup & cand)).astype(float) > 0)
        return not alone.any()
    return _protected_patterns(table, bridgeless)


@pytest.mark.parametrize("seed,cost_name,n_primary", [
    (16, "unity", 3), (7, "value", 3),
    pytest.param(11, "value", 2, marks=pytest.mark.slow)])
def test_gomory_cuts_keep_every_optimal_pattern(seed, cost_name, n_primary):
    # every Gomory cut of the root must hold at every integer point of the master's rows:
    # every audited pattern with no suppressed candidate alone in a relation (capacity
    # cuts hold for every protected pattern, bridgeless rows for these); and the search
    # with the cuts still reaches the brute-force optimum.  The Benders phases are run
    # one by one here to read the master's Gomory rows afterwards.
    options = OptimalOptions(gomory_rounds=5, reduce=False,
                             cover_cuts=False)  # (covers close some roots first)
    table = hier_table(seed, n_primary=n_primary)
    cost = cost_vector(table, cost_name)
    cand = candidate_cells(table)
    s = Search(table, cost, Requirements.from_table(table, singleton=True), cand,
               time_limit=None, mip_gap=None, progress=None, options=options)
    heuristics.initial_incumbent(s, None)
    s.build_master()
    lp = lp_phase(s, fractional_check=False)
    proven, _ = BranchAndCut(s, lp.lower_bound, lp.zlp).run()
    assert proven and s.stats.get("gomory_cuts", 0) > 0
    cuts = s.master.general
    assert sum(R.shape[0] for R, _ in cuts) == s.stats["gomory_cuts"]
    points = _bridgeless_patterns(table)
    assert audit(table, unpublished=s.best, singleton=True).passed
    assert s.best_cost == pytest.approx(
        min(float(cost[p & (table.status == "S")].sum()) for p in points), rel=1e-6)
    cols = np.flatnonzero(cand)
    for sup in points:
        z = sup[cols].astype(float)
        for R, g in cuts:
            assert (R @ z >= g - 1e-7).all()


@pytest.mark.parametrize("cost_name,rule", [("unity", "fractional"), ("value", "reliability")])
def test_auto_branching_rule_follows_the_costs(cost_name, rule):
    # "auto": the most fractional column when every candidate costs the same, reliability
    # branching otherwise; the optimum is the brute-force one either way
    table = hier_table(16, n_primary=3)
    cost = cost_vector(table, cost_name)
    out = benders(table, cost, Requirements.from_table(table, singleton=True),
                  candidate_cells(table),
                  options=OptimalOptions(branching="auto", gomory_rounds=0))
    assert out.details["branching"] == rule and out.proven_optimal
    assert secondary_cost(out.status, cost) == pytest.approx(brute_force(table, cost), rel=1e-6)


# ---------------------------------------------------------------- deadlines
def cube_table(seed: int, leaves=(14, 12, 12), share: float = 0.25) -> Table:
    """A 3-D table (each dimension: total, two groups, leaves) with ``share`` of its inner
    cells primary: no protected pattern is found within a second, so the fallback runs."""
    rng = np.random.default_rng(seed)
    dims = [Hierarchy.from_pairs([("T", "A"), ("T", "B")]
                                 + [("A" if i % 2 else "B", f"d{d}l{i}") for i in range(n)])
            for d, n in enumerate(leaves)]
    shape = tuple(len(h) for h in dims)
    v = aggregate_leaves(rng.integers(1, 60, size=shape).ravel().astype(float), dims)
    f = aggregate_leaves(rng.integers(2, 6, size=shape).ravel().astype(float), dims)
    t = Table.from_arrays({f"x{d}": h for d, h in enumerate(dims)}, v, freq=f)
    inner = np.flatnonzero(t.is_inner)
    st = t.status.copy()
    st[rng.choice(inner, size=int(share * len(inner)), replace=False)] = "U"
    level = np.where(st == "U", np.round(0.3 * v + 1), 0.0)
    return t.replace(status=st, upl=level, lpl=level)


def test_fallback_repair_gives_the_pattern_when_the_search_found_none():
    # no time for the first repair, no LP round and no node (settings, deterministic):
    # the search ends without a protected pattern, and the fallback repair continues the
    # stopped first repair to a protected pattern (independent audit), flagged unproven
    table = hier_table(4, n_primary=12, rows=Hierarchy.flat([f"r{i}" for i in range(8)],
                                                            total="T"),
                       cols=Hierarchy.flat([f"c{i}" for i in range(8)], total="T"))
    cost = cost_vector(table, "unity")
    options = OptimalOptions(engine="benders", first_repair_share=0.0,
                             primary_repair_share=0.0, max_rounds=0, max_nodes=0)
    out = optimal(table, cost, time_limit=600.0, options=options)
    assert out.details["fallback_unmet"] == 0  # the fallback path ran and finished
    assert not out.proven_optimal
    assert (out.status[table.status == "U"] == "U").all()
    assert audit(table.replace(status=out.status), singleton=True).passed


@pytest.mark.slow
def test_fallback_repair_ends_near_the_deadline():
    # 3,825 cells, 504 primaries, 1 s: the fallback repair (when it runs) must end near
    # the deadline, its repair LPs stopping there too; what it leaves unmet, protect()'s
    # audit-and-repair finishes (tested elsewhere).  A wall-clock test: slow set.
    table = cube_table(3)
    cost = cost_vector(table, "unity")
    t0 = time.perf_counter()
    out = optimal(table, cost, time_limit=1.0, engine="benders")
    took = time.perf_counter() - t0
    assert took < 1.0 + 5.0
    assert (out.status[table.status == "U"] == "U").all()
    if out.details.get("fallback_unmet") == 0:
        assert audit(table.replace(status=out.status), singleton=True).passed


def test_deadline_repair_leaves_a_condition_unmet_when_its_lp_runs_out_of_time():
    # a deadline already past: the repair LP gets no time, the condition stays unmet
    # (never reported as met), and without a deadline the same repair protects
    table = hier_table(5, n_primary=3)
    req = Requirements.from_table(table, singleton=True)
    cand = candidate_cells(table)
    cost = cost_vector(table, "unity")
    fixed = table.status == "U"
    repair = DeadlineRepair(table, req, cost, cand, AttackerOracle(table, req))
    _, unmet = repair.run(fixed, deadline=time.perf_counter() - 1.0)
    assert unmet
    pattern, unmet = repair.run(fixed)
    assert not unmet
    st = table.status.copy()
    st[pattern & ~fixed] = "M"
    assert audit(table.replace(status=st), singleton=True).passed


# ---------------------------------------------------------------- separation
def _six_primary_table(seed: int, cost_name: str):
    """A 48-cell two-level table with 6 primaries: (table, cost, requirements)."""
    rows = Hierarchy.from_pairs([("T", "A"), ("T", "B"), ("A", "A1"), ("A", "A2"),
                                 ("B", "B1"), ("B", "B2"), ("B", "B3")])
    cols = Hierarchy.from_pairs([("T", "a"), ("T", "b"), ("a", "a1"), ("a", "a2"), ("b", "b1")])
    table = hier_table(seed, n_primary=6, rows=rows, cols=cols, finite_ub=True)
    return table, cost_vector(table, cost_name), Requirements.from_table(table, singleton=True)


def _six_primary_singleton_table(seed: int):
    """The 48-cell table of :func:`_six_primary_table` with single-contributor cells:
    (table, requirements against singleton attackers)."""
    rows = Hierarchy.from_pairs([("T", "A"), ("T", "B"), ("A", "A1"), ("A", "A2"),
                                 ("B", "B1"), ("B", "B2"), ("B", "B3")])
    cols = Hierarchy.from_pairs([("T", "a"), ("T", "b"), ("a", "a1"), ("a", "a2"), ("b", "b1")])
    table = hier_table(seed, n_primary=6, rows=rows, cols=cols, freq_one=True)
    return table, Requirements.from_table(table, singleton=True)


def _assert_oracles_agree(reference, candidate, table, seed: int, points: int,
                          zero_share: float, same_values: bool) -> None:
    """Both oracles give the same verdicts and cut kinds at random fractional points
    (separation and exact check) and at their roundings; every candidate cut cuts its
    point off, with the reference cut's value there when ``same_values``."""
    rng = np.random.default_rng(seed)
    for _ in range(points):
        z = np.where(table.status == "U", 1.0, rng.uniform(0.0, 1.0, table.n_cells))
        z = np.where(rng.random(table.n_cells) < zero_share, 0.0, z)
        for kind, point in (("separate", z), ("check", z), ("check", z > 0.5)):
            a, b = getattr(reference, kind)(point), getattr(candidate, kind)(point)
            assert sorted(a.violated) == sorted(b.violated)
            assert [(c.primary, c.kind, c.attacker) for c in a.cuts] == \
                [(c.primary, c.kind, c.attacker) for c in b.cuts]
            for ca, cb in zip(a.cuts, b.cuts):
                lb = float(np.minimum(cb.coef, cb.rhs) @ point[cb.cols])
                assert lb < cb.rhs
                if same_values:
                    la = float(np.minimum(ca.coef, ca.rhs) @ point[ca.cols])
                    assert lb == pytest.approx(la, rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("seed,cost_name", [(7, "unity"), (0, "value")])
def test_chunked_node_separation_reaches_the_compact_optimum(seed, cost_name):
    # below the root the separation stops after the first chunk of primaries with a
    # violated cut; with one primary per chunk the early stop happens (48 cells, 6
    # primaries), and the tree must still end at the optimum of the other exact engine
    # (the compact MILP) with a pattern the audit accepts
    options = OptimalOptions(separation_chunk=1, cover_cuts=False, gomory_rounds=0)
    table, cost, req = _six_primary_table(seed, cost_name)
    out = benders(table, cost, req, candidate_cells(table), options=options)
    assert out.proven_optimal
    assert out.details["nodes"] > 1
    assert out.details.get("sep_chunks_saved", 0) > 0, "no round stopped early"
    assert audit(table.replace(status=out.status), singleton=True).passed
    ref = optimal(table, cost, engine="compact")
    assert ref.proven_optimal
    assert secondary_cost(out.status, cost) == pytest.approx(secondary_cost(ref.status, cost),
                                                             rel=1e-6)


def test_exact_check_at_fractional_points_is_optional():
    # the LP phase and the root separate with the capped LPs alone unless asked: the
    # optimum (brute force) is the same either way, and the exact LPs cost attacker LPs
    table = hier_table(5, n_primary=2)
    cost = cost_vector(table, "unity")
    req = Requirements.from_table(table, singleton=True)
    runs = {}
    for flag in (True, False):
        runs[flag] = benders(table, cost, req, candidate_cells(table),
                             options=OptimalOptions(fractional_check=flag))
        assert runs[flag].proven_optimal
        assert audit(table.replace(status=runs[flag].status), singleton=True).passed
    assert secondary_cost(runs[True].status, cost) == secondary_cost(runs[False].status, cost) \
        == brute_force(table, cost)
    assert runs[False].details["lp_solves"] < runs[True].details["lp_solves"]


@pytest.mark.parametrize("cost_name,expected", [("unity", True), ("value", False)])
def test_exact_check_at_fractional_points_follows_the_costs(cost_name, expected):
    # "auto": the exact check runs at fractional points only when every candidate costs
    # the same (a unity bound moves in whole units, and its rare cuts kept the LP phase
    # going); the result is the brute-force optimum either way.  (The simplex race
    # follows the costs the other way round: on for unequal costs.)
    table = hier_table(6, n_primary=2)
    cost = cost_vector(table, cost_name)
    req = Requirements.from_table(table, singleton=True)
    out = benders(table, cost, req, candidate_cells(table),
                  options=OptimalOptions(fractional_check=None, race_simplex=None))
    assert out.details["fractional_check"] is expected
    assert out.details["race_simplex"] is (not expected)
    assert out.proven_optimal
    assert secondary_cost(out.status, cost) == pytest.approx(brute_force(table, cost), rel=1e-6)


# ---------------------------------------------------------------- LP phase
@pytest.mark.parametrize("seed,cost_name", [(0, "value"), (6, "unity")])
def test_chunked_lp_phase_reaches_the_compact_optimum(seed, cost_name):
    # the LP phase separates one chunk of primaries per master solve (here one primary:
    # more master solves than rounds over all primaries, asserted); it ends only after a
    # whole sweep finds no violated cut, and the search must still end at the optimum of
    # the other exact engine (the compact MILP) with a pattern the audit accepts
    base = OptimalOptions(cover_cuts=False, gomory_rounds=0)
    table, cost, req = _six_primary_table(seed, cost_name)
    ref = optimal(table, cost, engine="compact")
    assert ref.proven_optimal
    runs = {}
    for chunk in (None, 1):
        runs[chunk] = out = benders(table, cost, req, candidate_cells(table),
                                    options=base.replace(lp_separation_chunk=chunk))
        assert out.proven_optimal
        assert audit(table.replace(status=out.status), singleton=True).passed
        assert secondary_cost(out.status, cost) == pytest.approx(
            secondary_cost(ref.status, cost), rel=1e-6)
    assert runs[1].details["rounds_lp"] > runs[None].details["rounds_lp"]


@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("cap", [2.0, 1e-9])
def test_raced_simplex_oracle_gives_the_dual_oracles_answers(seed, cap):
    # the race only picks HiGHS' algorithm per oracle call (a trial every 2nd call here;
    # with a cap of ~0 every trial LP is stopped at once and finished by the other one):
    # verdicts, attack values and cuts must be the dual simplex oracle's, at fractional
    # points (capped separation and exact check) and at binary ones
    options = OptimalOptions(race_every=2, race_every_max=2, race_cap=cap, race_lp_cap=cap,
                             race_trial_lps=1, race_min_iterations=0, race_min_cols=0)
    table, req = _six_primary_singleton_table(seed)
    dual = AttackerOracle(table, req, simplex_strategy=1)
    raced = HybridOracle(table, req, simplex_strategy=1, options=options)
    _assert_oracles_agree(dual, raced, table, seed, points=5, zero_share=0.3,
                          same_values=False)
    assert set(raced._race["check"]) >= {1, 4} and set(raced._race["sep"]) >= {1, 4}, \
        "both simplex variants ran"


def test_simplex_race_takes_the_same_route_every_run():
    # the race scores each simplex by its iterations per LP, not by seconds: two oracles
    # given the same points keep the same scores, so a run's cuts and tree do not
    # depend on the machine's load (seconds would differ from run to run)
    options = OptimalOptions(race_every=2, race_every_max=2, race_trial_lps=1,
                             race_min_cols=0)
    table, req = _six_primary_singleton_table(1)
    raced = [HybridOracle(table, req, simplex_strategy=1, options=options)
             for _ in range(2)]
    rng = np.random.default_rng(1)
    for _ in range(6):
        z = np.where(table.status == "U", 1.0, rng.uniform(0.0, 1.0, table.n_cells))
        for oracle in raced:
            oracle.separate(z)
            oracle.check(z > 0.5)
    first, second = (o._race for o in raced)
    assert set(first["sep"]) >= {1, 4}, "both simplex variants ran"
    assert first == second


@pytest.mark.parametrize("cost_name", ["unity", "value"])
def test_plain_attacker_oracle_reaches_the_brute_force_optimum(cost_name):
    # dual_oracle=False: the attacker LPs with HiGHS' own simplex choice (the plain
    # oracle, without kept separation witnesses); the search still ends at the
    # brute-force optimum with a pattern the audit accepts
    table = hier_table(6, n_primary=2)
    cost = cost_vector(table, cost_name)
    out = benders(table, cost, Requirements.from_table(table, singleton=True),
                  candidate_cells(table), options=OptimalOptions(dual_oracle=False))
    assert out.proven_optimal
    assert audit(table.replace(status=out.status), singleton=True).passed
    assert secondary_cost(out.status, cost) == pytest.approx(brute_force(table, cost),
                                                             rel=1e-6)


@pytest.mark.parametrize("seed", [0, 3])
def test_small_attacker_lps_leave_the_race_out(seed):
    # attacker LPs below race_min_cols columns re-solve with the dual simplex alone, even
    # with a trial asked for at every call: no simplex is scored, and the search's path
    # (its cuts, LPs and nodes) is the same from call to call; the result is the
    # brute-force optimum with a pattern the audit accepts
    options = OptimalOptions(race_simplex=True, race_every=1, race_every_max=1,
                             race_min_iterations=0)
    table, req = _six_primary_singleton_table(seed)
    raced = HybridOracle(table, req, simplex_strategy=1, options=options)
    _assert_oracles_agree(AttackerOracle(table, req, simplex_strategy=1), raced, table,
                          seed, points=3, zero_share=0.3, same_values=True)
    assert not {1, 4} & (set(raced._race["check"]) | set(raced._race["sep"]))
    table = hier_table(seed + 6, n_primary=2)
    req = Requirements.from_table(table, singleton=True)
    cost = cost_vector(table, "value")
    keys = ("cuts", "lp_solves", "rounds_lp", "nodes", "node_lps", "master_cuts")
    runs = [benders(table, cost, req, candidate_cells(table), options=options)
            for _ in range(3)]
    assert len({tuple(r.details[k] for k in keys) for r in runs}) == 1
    out = runs[0]
    assert out.proven_optimal
    assert audit(table.replace(status=out.status), singleton=True).passed
    assert secondary_cost(out.status, cost) == pytest.approx(brute_force(table, cost),
                                                             rel=1e-6)


def _dual_value(c, A, lam, lo, hi):
    """Weak-duality bound of ``max c y`` over ``A y = 0, lo <= y <= hi`` from row
    multipliers ``lam``: equal to the optimum exactly when ``lam`` is optimal."""
    r = c - A.T @ lam
    return float(np.maximum(r * lo, r * hi).sum())


@pytest.mark.parametrize("seed", range(6))
def test_pair_merged_lp_has_the_original_optimum_and_optimal_duals(seed):
    # random attacker-like LPs (rows with +-1 entries summing to 0 over a feasible y = 0)
    # with many two-cell rows, chains of them, and cycles (consistent ones, redundant, and
    # sign-conflicting ones, which force a class to 0)
    rng = np.random.default_rng(seed)
    n = 14
    rows = []
    for _ in range(9):
        cells = rng.choice(n, size=2, replace=False)
        rows.append({int(cells[0]): 1.0, int(cells[1]): float(rng.choice([-1.0, 1.0]))})
    for _ in range(4):
        cells = rng.choice(n, size=int(rng.integers(3, 6)), replace=False)
        rows.append({int(j): float(rng.choice([-1.0, 1.0])) for j in cells})
    A = sp.csr_matrix(np.array([[r.get(j, 0.0) for j in range(n)] for r in rows]))
    for trial in range(4):
        lo = -rng.uniform(0.0, 3.0, n) * (rng.random(n) < 0.8)
        hi = rng.uniform(0.0, 3.0, n) * (rng.random(n) < 0.8)
        lp = LinearProgram(c=np.zeros(n), A=A, row_lower=np.zeros(A.shape[0]),
                                          row_upper=np.zeros(A.shape[0]), col_lower=lo,
                                          col_upper=hi)
        plain = HighsModel(lp, simplex_strategy=1)
        merged = PairMergedModel(lp, simplex_strategy=1)
        assert merged.n_model_rows < A.shape[0]
        for k in range(n):
            for sign in (1.0, -1.0):
                plain.set_objective(indices=[k], values=[sign], sense="max")
                merged.set_objective(indices=[k], values=[sign], sense="max")
                a, b = plain.solve(), merged.solve()
                assert a.status == b.status == "optimal"
                assert b.objective == pytest.approx(a.objective, abs=1e-7)
                assert np.abs(A @ b.x).max() < 1e-7
                assert np.all(b.x >= lo - 1e-7) and np.all(b.x <= hi + 1e-7)
                c = np.zeros(n)
                c[k] = sign
                # the rebuilt duals certify the optimum (so the cut is as strong)
                assert _dual_value(c, A, b.duals, lo, hi) == pytest.approx(a.objective,
                                                                          abs=1e-7)
        # bound changes of single cells (the oracle's singleton attackers) are followed
        j = int(rng.integers(n))
        for m in (plain, merged):
            m.set_col_bounds([j], 0.0, 0.0)
            m.set_objective(indices=[(j + 1) % n], values=[1.0], sense="max")
        assert merged.solve().objective == pytest.approx(plain.solve().objective, abs=1e-7)


@pytest.mark.parametrize("seed", [0, 3, 5])
def test_pair_merged_oracle_gives_the_plain_oracles_answers(seed):
    # the oracle with every component's LP merged: the same verdicts, the same cut
    # kinds, and every cut as violated at its point as the plain oracle's (the cut's
    # left side at the point is the attacker LP's optimum either way)
    table, req = _six_primary_singleton_table(seed)
    plain = AttackerOracle(table, req, simplex_strategy=1)
    merged = HybridOracle(table, req, simplex_strategy=1, racing=bool(seed % 2),
                          options=OptimalOptions(merge_pairs_min_cols=0))
    _assert_oracles_agree(plain, merged, table, seed, points=6, zero_share=0.4,
                          same_values=True)
    assert merged.merged_lps > 0, "some attacker LP had two-cell rows merged"


@pytest.mark.parametrize("seed,cost_name", [(5, "unity"), (6, "value"), (21, "unity")])
def test_pair_merged_oracle_keeps_the_brute_force_optimum(seed, cost_name):
    table = hier_table(seed, n_primary=2)
    cost = cost_vector(table, cost_name)
    res = optimal(table, cost, mip_gap=0.0,
                  options=OptimalOptions(engine="benders", merge_pairs_min_cols=0))
    assert res.proven_optimal
    assert audit(table.replace(status=res.status)).passed
    assert secondary_cost(res.status, cost) == pytest.approx(brute_force(table, cost))


# ---------------------------------------------------------------- general tables, time
def general_table(seed: int) -> Table:
    """A 3-D product table given by its relations only (a general table)."""
    t = synthetic.preset("3d-small", seed=seed)
    return Table.from_relations(t.value, t.relations, freq=t.freq, status=t.status,
                                upl=t.upl, lpl=t.lpl, spl=t.spl)


@pytest.mark.parametrize("seed,singleton,time_limit", [
    (1, True, 0.0), (2, False, 0.0), (1, True, 1e-3), (3, False, 0.5)])
def test_short_limit_on_a_general_table_keeps_the_start_as_a_bound(seed, singleton,
                                                                   time_limit):
    # the time limit bounds the whole call: with none left for the search the start is
    # the result (no attacker LP runs); with little left the search stops early.  Either
    # way the result says so, passes the independent audit and costs at most the start.
    table = general_table(seed)
    assert not table.dimensions
    cost = cost_vector(table, "value")
    req = Requirements.from_table(table, singleton=singleton)
    found = gauss_start(table, cost, req, candidate_cells(table), singleton=singleton,
                        time_limit=None)
    assert found is not None and found.protected
    assert audit(table, unpublished=found.pattern, singleton=singleton).passed
    start_cost = float(cost[found.pattern & (table.status != "U")].sum())
    out = optimal(table, cost, start=found.pattern, time_limit=time_limit,
                  singleton=singleton, options=OptimalOptions(engine="benders"))
    if time_limit == 0.0:
        assert out.details.get("lp_solves", 0) == 0
    if not out.proven_optimal:
        assert out.solver_status == "time_limit" and out.mip_gap > 0
    assert audit(table.replace(status=out.status), singleton=singleton).passed
    assert secondary_cost(out.status, cost) <= start_cost * (1 + 1e-9)


def test_a_misspelt_keyword_is_refused_not_ignored():
    table = hier_table(1)
    with pytest.raises(TypeError, match="singelton"):
        optimal(table, cost_vector(table, "unity"), singelton=False)


@pytest.mark.parametrize("seed,singleton", [(1, True), (2, False), (8, True)])
def test_many_primaries_start_from_gauss_and_never_cost_more(seed, singleton):
    # from gauss_start_min_primaries primaries the search starts from the gauss pattern
    # (forced here with 1); with the search stopped at its first node the result is the
    # best protected pattern known: it passes the independent audit and costs at most
    # the start
    t = hier_table(seed, n_primary=3, freq_one=singleton)
    table = Table.from_relations(t.value, t.relations, freq=t.freq, status=t.status,
                                 upl=t.upl, lpl=t.lpl, spl=t.spl)
    cost = cost_vector(table, "value")
    options = OptimalOptions(engine="benders", gauss_start_min_primaries=1, max_nodes=0)
    out = optimal(table, cost, singleton=singleton, options=options)
    assert out.details["gauss_start_state"] == "protected"
    assert not out.proven_optimal
    assert audit(table.replace(status=out.status), singleton=singleton).passed
    assert secondary_cost(out.status, cost) <= out.details["start_cost"] * (1 + 1e-9)


@pytest.mark.parametrize("seed,freq_one", [(1, False), (3, True), (8, False)])
def test_incremental_repair_makes_the_full_repairs_pattern(seed, freq_one):
    # DeadlineRepair re-checks only the primaries its first full check found short; the
    # decisions are those of the plain greedy repair (every other primary stays
    # protected as cells are added), and the pattern passes the independent audit
    table = hier_table(seed, n_primary=3, freq_one=freq_one)
    cost = cost_vector(table, "value")
    req = Requirements.from_table(table, singleton=True)
    cand = candidate_cells(table)
    first = table.status == "U"
    ours, unmet = DeadlineRepair(table, req, cost, cand).run(first)
    plain, plain_unmet = GreedyRepair(table, req, cost, cand).run(first)
    assert not unmet and not plain_unmet
    assert np.array_equal(ours, plain)
    assert audit(table, unpublished=ours, singleton=True).passed


@pytest.mark.parametrize("seed", [1, 4, 7, 11])
def test_witness_pass_settles_only_protected_primaries(seed):
    # the witness pass (forced on for every check) certifies primaries without their own
    # LPs: each primary it settles passes the independent audit, and the check finds
    # the same shortfalls as the plain per-primary attacker LPs
    table = hier_table(seed, n_primary=4)
    req = Requirements.from_table(table, singleton=False)
    rng = np.random.default_rng(seed)
    opts = OptimalOptions(witness_check_min_targets=1)
    settled = 0
    for _ in range(6):
        pattern = (table.status == "U") | ((table.status == "S")
                                           & (rng.random(table.n_cells) < 0.6))
        done, _ = witness_certified(table.relations.tocsr(), req,
                                    AttackerOracle(table, req).slot,
                                    pattern.astype(float), req.primary, rounds=3)
        res = audit(table, unpublished=pattern, singleton=False)
        assert res.protected[req.primary[done]].all()
        settled += int(done.sum())
        ours = HybridOracle(table, req, racing=False, options=opts).check(pattern, cuts=False)
        plain = AttackerOracle(table, req).check(pattern, cuts=False)
        assert sorted(ours.violated) == sorted(plain.violated)
        assert ours.ok == res.passed
    assert settled > 0   # the pass did settle primaries here


@pytest.mark.parametrize("seed", [2, 5])
def test_unfinished_start_without_time_gives_the_repaired_pattern(seed):
    # the gauss start forced on and a limit gauss cannot meet: its pattern is unfinished
    # (cells it did not examine stay suppressed) and no time is left for the search; the
    # repair from the primaries gives the result instead, which passes the independent
    # audit and suppresses fewer cells than every candidate
    table = hier_table(seed, n_primary=3, rows=Hierarchy.from_pairs(
        [("T", "A"), ("T", "B"), ("A", "A1"), ("A", "A2"), ("B", "B1"), ("B", "B2")]),
        cols=Hierarchy.flat(["a", "b", "c"], total="T"))
    cost = cost_vector(table, "value")
    options = OptimalOptions(engine="benders", gauss_start_min_primaries=0)
    out = optimal(table, cost, time_limit=1e-6, options=options, singleton=False)
    assert out.details["gauss_start_state"] == UNFINISHED
    assert "short_search" in out.details
    assert lp_oracle.protected(table.replace(status=out.status)).all()
    assert (out.status == "M").sum() < candidate_cells(table).sum()


def _protected_patterns(table: Table, keep=lambda sup: True) -> list[np.ndarray]:
    """Every pattern of the candidate cells that ``keep`` keeps and the audit passes."""
    cand = np.flatnonzero(table.status == "S")
    assert len(cand) <= 16, "brute force is for tiny tables"
    base = table.status == "U"
    found = []
    for k in range(len(cand) + 1):
        for combo in itertools.combinations(cand, k):
            sup = base.copy()
            sup[list(combo)] = True
            if keep(sup) and not _determined(table, sup) and \
                    audit(table, unpublished=sup, singleton=True).passed:
                found.append(sup)
    return found


@pytest.mark.parametrize("seed,cost_name", [(8, "unity"),
                                             pytest.param(3, "value", marks=pytest.mark.slow)])
def test_pinned_cells_are_in_every_protected_subpattern(seed, cost_name):
    # a cell the pool's cuts pin in a protected pattern P is in every protected pattern
    # inside P (by the independent audit): a prune of P can never publish it
    table = hier_table(seed, n_primary=3)
    cost = cost_vector(table, cost_name)
    s = Search(table, cost, Requirements.from_table(table, singleton=True),
               candidate_cells(table), time_limit=None, mip_gap=None, progress=None,
               options=OptimalOptions())
    heuristics.initial_incumbent(s, None)
    s.build_master()
    lp = lp_phase(s, fractional_check=False)
    BranchAndCut(s, lp.lower_bound, lp.zlp).run()
    protected = _protected_patterns(table)
    n_pinned = 0
    for P in protected:
        pinned = s.pinned(P)
        assert not (pinned & ~P).any()
        n_pinned += int(pinned.sum())
        for Q in protected:
            if (Q & ~P).any():
                continue
            assert (Q[pinned]).all()
    assert n_pinned > 0
