"""Witnesses that save attacker LPs: the separation's skip
(tabprotect/secondary/optimal/witness_separation.py), its bounds judged by an independent
LP (scipy's linprog) and the searches with and without it against brute force. The
prune's reuse of the outside intruder's witness is tested with the check-by-check prune
in test_secondary_optimal.py."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from tabprotect.secondary import cost_vector
from tabprotect.secondary.optimal import OptimalOptions, optimal
from tabprotect.secondary.optimal.oracle import HybridOracle
from tabprotect.secondary.optimal.witness_separation import COMPACT_MIN, WitnessStore
from tabprotect.secondary.attack_requirements import Requirements
from test_secondary_optimal import brute_force, hier_table, secondary_cost


def _lp_max(table, req, z, s, sign, rhs, j) -> float:
    """max sign * y_s over A y = 0 with the separation's capped bounds (y_j = 0)."""
    hi = np.minimum(req.up, rhs) * z
    lo = -np.minimum(req.down, rhs) * z
    if j >= 0:
        lo[j] = hi[j] = 0.0
    c = np.zeros(table.n_cells)
    c[s] = -sign
    A = table.relations.toarray()
    res = linprog(c, A_eq=A, b_eq=np.zeros(A.shape[0]), bounds=list(zip(lo, hi)),
                  method="highs")
    assert res.status == 0
    return -res.fun


def _points(table, req, seed, down=-0.15):
    """Two nearby fractional points (the primaries at 1); ``down=0``: the second one
    nowhere below the first."""
    rng = np.random.default_rng(seed)
    z1 = rng.uniform(0.2, 1.0, table.n_cells)
    z1[req.primary] = 1.0
    z2 = np.clip(z1 + rng.uniform(down, 0.15, table.n_cells), 0.0, 1.0)
    z2[req.primary] = 1.0
    return z1, z2


@pytest.mark.parametrize("seed,share", [(0, True), (3, True), (7, True), (3, False)])
def test_witness_bounds_never_exceed_the_lp_optimum(seed, share):
    # share: the optima of other primaries' LPs count too
    table = hier_table(seed, n_primary=3, freq_one=True)
    req = Requirements.from_table(table, singleton=True)
    oracle = HybridOracle(table, req,
                          options=OptimalOptions(share_separation_witnesses=share))
    z1, z2 = _points(table, req, seed)
    oracle.separate(z1)
    positive = 0
    for p, s in enumerate(req.primary):
        for sign, rhs in ((1.0, req.need_up[p]), (-1.0, req.need_down[p])):
            for j in [-1] + [int(j) for j in np.flatnonzero(req.singleton) if j != s]:
                b = oracle.witnesses.bound(p, sign, int(s), j, req.up, req.down, z2, rhs)
                assert b <= _lp_max(table, req, z2, int(s), sign, rhs, j) + 1e-7 * rhs
                positive += b > 0
    assert positive > 0   # the bounds are not all trivial


@pytest.mark.parametrize("seed", [0, 5, 9])
def test_witness_bounds_at_the_point_they_were_solved_at_reach_the_lp_optimum(seed):
    # a condition's own optimum, kept at the point it was solved at, scales by t = 1:
    # its bound is the LP's optimum (or, when an earlier optimum skipped the LP, at
    # least the level the skip asked for) -- the bound is not needlessly weak (every
    # optimum kept: separation_witness_slack None)
    table = hier_table(seed, n_primary=3)
    req = Requirements.from_table(table, singleton=False)
    oracle = HybridOracle(table, req, options=OptimalOptions(
        share_separation_witnesses=False, separation_witness_slack=None))
    z1, _ = _points(table, req, seed)
    oracle.separate(z1)
    for p, s in enumerate(req.primary):
        for sign, rhs in ((1.0, req.need_up[p]), (-1.0, req.need_down[p])):
            if rhs <= 0:
                continue
            b = oracle.witnesses.bound(p, sign, int(s), -1, req.up, req.down, z1, rhs)
            want = min(_lp_max(table, req, z1, int(s), sign, rhs, -1), rhs * (1 - 1e-6))
            assert b >= want - 1e-7 * rhs


@pytest.mark.parametrize("seed", [1, 4, 8])
def test_a_witness_too_small_for_every_level_is_not_kept(seed):
    # with separation_witness_slack an optimum joins a primary's witnesses only when it
    # moves it by (1 - slack) of its smaller level: scaled by t <= 1 nothing smaller
    # proves a level; the optima that are kept bound their LPs within the optimum
    table = hier_table(seed, n_primary=3)
    req = Requirements.from_table(table, singleton=False)
    slack = 1e-3
    oracle = HybridOracle(table, req, options=OptimalOptions(separation_witness_slack=slack))
    z1, z2 = _points(table, req, seed)
    oracle.separate(z1)
    store = oracle.witnesses
    least = np.minimum(np.where(req.need_up > 0, req.need_up, np.inf),
                       np.where(req.need_down > 0, req.need_down, np.inf))
    kept = 0
    for p, s in enumerate(req.primary):
        for sign in (1.0, -1.0):
            for book in (store._by, store._shared):
                for wid, ys in book.get((p, sign), ()):
                    assert abs(ys) >= (1 - slack) * least[p] - 1e-12
                    kept += 1
            rhs = req.need_up[p] if sign > 0 else req.need_down[p]
            if rhs > 0:
                b = store.bound(p, sign, int(s), -1, req.up, req.down, z2, rhs)
                assert b <= _lp_max(table, req, z2, int(s), sign, rhs, -1) + 1e-7 * rhs
    assert kept > 0


@pytest.mark.parametrize("seed", [1, 4, 8])
def test_skipped_conditions_are_met_and_violated_ones_are_found(seed):
    # at a second point nowhere below the first every condition met at the first is
    # skipped, and every condition whose LP optimum falls short is among the violated
    table = hier_table(seed, n_primary=3, freq_one=True)
    req = Requirements.from_table(table, singleton=True)
    oracle = HybridOracle(table, req, options=OptimalOptions())
    z1, z2 = _points(table, req, seed, down=0.0)
    oracle.separate(z1)
    before = oracle.witnesses.skipped
    got = oracle.separate(z2)
    assert oracle.witnesses.skipped > before
    found = set(got.violated)
    for p, s in enumerate(req.primary):
        for kind, sign, rhs in (("up", 1.0, req.need_up[p]), ("down", -1.0, req.need_down[p])):
            for j in [-1] + [int(j) for j in np.flatnonzero(req.singleton) if j != s]:
                if _lp_max(table, req, z2, int(s), sign, rhs, j) < rhs * (1 - 1e-4):
                    assert (int(s), kind, j) in found


@pytest.mark.parametrize("seed", [2, 6, 11])
def test_the_search_with_and_without_the_skip_reaches_the_brute_force_optimum(seed):
    table = hier_table(seed, n_primary=2, freq_one=True)
    cost = cost_vector(table, "value")
    best = brute_force(table, cost, singleton=True)
    for keep, share, negated, slack in ((0, False, False, None), (3, False, False, None),
                                        (3, True, False, None), (3, True, True, None),
                                        (3, True, True, 1e-3)):
        out = optimal(table, cost, singleton=True, options=OptimalOptions(
            separation_witnesses=keep, share_separation_witnesses=share,
            negated_separation_witnesses=negated, separation_witness_slack=slack,
            engine="benders"))
        assert out.proven_optimal
        assert secondary_cost(out.status, cost) == pytest.approx(best, rel=1e-9)


@pytest.mark.parametrize("seed", [0, 3, 7])
def test_bounds_at_a_point_changed_in_place_follow_the_new_point(seed):
    # each witness keeps its minima per point: after at_point() a point changed in
    # place is a new point, and its bounds are judged by the LP at the changed point
    table = hier_table(seed, n_primary=3, freq_one=True)
    req = Requirements.from_table(table, singleton=True)
    oracle = HybridOracle(table, req, options=OptimalOptions())
    z1, z2 = _points(table, req, seed)
    oracle.separate(z1)
    z = z1.copy()
    store = oracle.witnesses
    for p, s in enumerate(req.primary):     # the minima at z1, kept for z
        store.bound(p, 1.0, int(s), -1, req.up, req.down, z, req.need_up[p])
    z[:] = z2
    store.at_point()
    positive = 0
    for p, s in enumerate(req.primary):
        for sign, rhs in ((1.0, req.need_up[p]), (-1.0, req.need_down[p])):
            for j in [-1] + [int(j) for j in np.flatnonzero(req.singleton) if j != s]:
                b = store.bound(p, sign, int(s), j, req.up, req.down, z, rhs)
                assert b <= _lp_max(table, req, z2, int(s), sign, rhs, j) + 1e-7 * rhs
                positive += b > 0
    assert positive > 0


@pytest.mark.parametrize("seed", [1, 4, 8])
def test_a_separation_at_a_point_changed_in_place_finds_the_violated_conditions(seed):
    # the same array, lowered in place between two separations: every condition whose
    # LP optimum falls short at the lowered point is found (none skipped on the
    # witnesses' minima at the first point)
    table = hier_table(seed, n_primary=3, freq_one=True)
    req = Requirements.from_table(table, singleton=True)
    oracle = HybridOracle(table, req, options=OptimalOptions())
    rng = np.random.default_rng(seed)
    z = np.ones(table.n_cells)
    oracle.separate(z)
    z *= rng.uniform(0.05, 0.6, table.n_cells)
    z[req.primary] = 1.0
    got = set(oracle.separate(z).violated)
    short = 0
    for p, s in enumerate(req.primary):
        for kind, sign, rhs in (("up", 1.0, req.need_up[p]), ("down", -1.0, req.need_down[p])):
            for j in [-1] + [int(j) for j in np.flatnonzero(req.singleton) if j != s]:
                if _lp_max(table, req, z, int(s), sign, rhs, j) < rhs * (1 - 1e-4):
                    assert (int(s), kind, j) in got
                    short += 1
    assert short > 0    # the lowered point leaves conditions short


@pytest.mark.parametrize("seed", [0, 3, 7])
def test_negated_witnesses_bound_the_other_direction_within_the_lp_optimum(seed):
    # the same LP optima at one point (scipy's) kept with and without their negations:
    # at a second point the bounds with them never exceed the LP's optimum, are at
    # least the bounds without them, and above them somewhere
    table = hier_table(seed, n_primary=3)
    req = Requirements.from_table(table, singleton=False)
    A = table.relations.toarray()
    slot = np.full(table.n_cells, -1)
    slot[req.primary] = np.arange(len(req.primary))
    stores = {n: WitnessStore(3, slot, negated=n) for n in (False, True)}
    z1, z2 = _points(table, req, seed)
    for p, s in enumerate(req.primary):
        for sign, rhs in ((1.0, req.need_up[p]), (-1.0, req.need_down[p])):
            c = np.zeros(table.n_cells)
            c[s] = -sign
            res = linprog(c, A_eq=A, b_eq=np.zeros(A.shape[0]), method="highs",
                          bounds=list(zip(-np.minimum(req.down, rhs) * z1,
                                          np.minimum(req.up, rhs) * z1)))
            assert res.status == 0
            for store in stores.values():
                store.add(p, sign, int(s), np.arange(table.n_cells), res.x)
    gained = 0
    for p, s in enumerate(req.primary):
        for sign, rhs in ((1.0, req.need_up[p]), (-1.0, req.need_down[p])):
            plain, both = (stores[n].bound(p, sign, int(s), -1, req.up, req.down, z2, rhs)
                           for n in (False, True))
            assert both <= _lp_max(table, req, z2, int(s), sign, rhs, -1) + 1e-7 * rhs
            assert both >= plain
            gained += both > plain + 1e-9 * rhs
    assert gained > 0


def _scaled(cols, y, s, sign, up, down, z, rhs) -> float:
    """sign * t * y_s for the largest t <= 1 with t y inside the capped bounds at z."""
    cap = np.minimum(np.where(y > 0, up[cols], down[cols]), rhs) * z[cols]
    t = min(1.0, float((cap / np.abs(y)).min()))
    at = np.flatnonzero(cols == s)
    return max(t, 0.0) * sign * float(y[at[0]]) if len(at) else 0.0


def test_bounds_after_the_unheld_witnesses_are_dropped_follow_the_latest_witnesses():
    # many more witnesses than the deques hold (so the store drops the unheld ones and
    # numbers the rest anew): each bound is the best scaled latest witness, recomputed
    # here from the witnesses themselves, over both directions
    rng = np.random.default_rng(5)
    n, n_prim, keep = 12, 3, 2
    slot = np.full(n, -1)
    slot[:n_prim] = np.arange(n_prim)
    up, down = rng.uniform(0.5, 3.0, n), rng.uniform(0.5, 3.0, n)
    store = WitnessStore(keep, slot, negated=True)
    latest: dict = {}       # (slot, sign, own) -> the latest witnesses moving it so
    for k in range(3 * COMPACT_MIN):
        p, sign = int(rng.integers(n_prim)), float(rng.choice([-1.0, 1.0]))
        cols = np.sort(rng.choice(n, size=5, replace=False))
        cols[0] = p
        cols = np.unique(cols)
        y = rng.uniform(-2.0, 2.0, len(cols))
        y[cols == p] = sign * rng.uniform(0.5, 2.0)
        store.add(p, sign, p, cols, y)
        for q, v in zip(slot[cols], y):
            if q >= 0:    # a primary's own optima and the others' are kept apart
                key = (int(q), sign, True) if q == p else (int(q), 1.0 if v > 0 else -1.0,
                                                            False)
                latest[key] = ([(cols, y)] + latest.get(key, []))[:keep]
        if k % 97 == 0 or k == 3 * COMPACT_MIN - 1:
            z = rng.uniform(0.0, 1.0, n)
            z[:n_prim] = 1.0
            for q in range(n_prim):
                for sign2 in (1.0, -1.0):
                    rhs = 1.0
                    want = max([_scaled(c, f * w, q, sign2, up, down, z, rhs)
                                for f in (1.0, -1.0) for own in (True, False)
                                for c, w in latest.get((q, f * sign2, own), [])] + [0.0])
                    got = store.bound(q, sign2, q, -1, up, down, z, rhs)
                    assert got == pytest.approx(want, rel=1e-12, abs=1e-12)
    assert len(store._cols) < 3 * COMPACT_MIN     # the unheld ones were dropped
