"""Network sub-tables of modular: maximum flows and the exact cut search, judged by
scipy's LPs (tests/lp_oracle.py), brute force and the compact MILP."""
from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from scipy.linalg import null_space

from lp_oracle import intervals, protected
from tabprotect.errors import InfeasibleRulesError
from tabprotect.model import synthetic
from tabprotect.secondary.base import cost_vector
from tabprotect.secondary.candidates import candidate_cells
from tabprotect.secondary.modular.network import Network
from tabprotect.secondary.modular.network_cuts import (Problem, SearchLimits, _coefficients,
                                                      _short_cuts, _split_crossing,
                                                      _subset_bits, cut_rows_both)
from tabprotect.secondary.modular import network_kernel
from tabprotect.secondary.modular.network_kernel import KernelState, load_kernel, search_slice
from tabprotect.secondary.modular.network_scalar import pairwise_sum
from tabprotect.secondary.modular.network_scalar import row_branch as scalar_row_branch
from tabprotect.secondary.modular.network_check import network_unprotected
from tabprotect.secondary.modular.network_cuts import _unique_rows
from tabprotect.secondary.modular.network_search import (_cover_bounds, _dominated_by_earlier,
                                                        _Search, network_pattern, prepared_search)
from tabprotect.secondary.optimal import optimal
from tabprotect.secondary.attack_requirements import Requirements


def _subtable(shape, seed, published=0.0, spl=0.0):
    """A flat table like a modular sub-table: random primaries, some cells published
    (``P``, as margins are), optionally a sliding level on the primaries."""
    rng = np.random.default_rng(seed)
    t = synthetic.generate([(k,) for k in shape], seed=seed)
    st = t.status.copy()
    pub = (st == "S") & (rng.random(t.n_cells) < published)
    st[pub] = "P"
    spl_arr = np.where(st == "U", spl * t.value, 0.0)
    return t.replace(status=st, spl=spl_arr)


def test_relations_of_two_and_one_dimensional_tables_are_circulations():
    for shape in [(3, 4), (5,), (2, 2)]:
        t = synthetic.generate([(k,) for k in shape], seed=3)
        net = Network.of(t.relations)
        assert net is not None
        A = t.relations.toarray()
        for y in null_space(A).T:           # every y with A y = 0 ...
            bal = np.zeros(net.n_nodes)
            np.add.at(bal, net.tail, y)
            np.add.at(bal, net.head, -y)
            assert np.allclose(bal[:-1], 0.0, atol=1e-9)   # ... balances at every relation
    three = synthetic.generate([(2,), (2,), (2,)], seed=3)
    assert Network.of(three.relations) is None


@pytest.mark.parametrize("seed", range(2))
def test_maximum_flows_are_the_intruders_intervals(seed):
    rng = np.random.default_rng(seed)
    t = _subtable((3, 4) if seed % 2 else (6,), seed)
    req = Requirements.from_table(t, singleton=False)
    hidden = (t.status == "U") | (rng.random(t.n_cells) < 0.5)
    prob = Problem(Network.of(t.relations), req, np.zeros(t.n_cells),
                    np.zeros(t.n_cells, bool), hidden)
    # the intruder's interval of every hidden cell (scipy LPs on the whole table)
    ranges = t.replace(ub=t.value + req.up, lb=t.value - req.down)
    for cell, (lo, hi) in intervals(ranges, hidden).items():
        up, down, _ = prob.moves(hidden, cell)
        assert np.isclose(up, hi - t.value[cell], rtol=1e-7, atol=1e-7)
        assert np.isclose(down, t.value[cell] - lo, rtol=1e-7, atol=1e-7)


def _brute_force(t, cost, singleton):
    """The cheapest protected pattern by trying every set of candidates in order of cost
    (scipy's LPs judge); None when none is protected."""
    cand = np.flatnonzero(candidate_cells(t))
    fixed = np.isin(t.status, ("U", "M"))
    sets = [s for k in range(len(cand) + 1) for s in itertools.combinations(cand, k)]
    sets.sort(key=lambda s: float(cost[list(s)].sum()))
    A = abs(t.relations.toarray()) > 0
    holds = A[:, t.status == "U"]            # relation x primary: the relation holds it
    for s in sets:
        z = fixed.copy()
        z[list(s)] = True
        # (quick necessary test: a relation holding a primary hides another cell)
        others = (A.astype(int) @ z.astype(int))[:, None] - 1
        if ((others < 1) & holds).any():
            continue
        if protected(t, z, singleton=singleton).all():
            return float(cost[list(s)].sum())
    return None


#: every search over cut rows by the compiled kernel from its first node
COMPILED = SearchLimits(compiled_after=0, load_after=0)


@pytest.mark.parametrize("limits", [SearchLimits(), COMPILED], ids=["numpy", "compiled"])
@pytest.mark.parametrize("seed,singleton", [(1, False), (2, False), (4, True), (5, False),
                                            (6, False), (7, False)])
def test_search_finds_the_brute_force_optimum(seed, singleton, limits):
    t = _subtable((2, 3), seed, published=0.15)
    c = cost_vector(t, "value")
    req = Requirements.from_table(t, singleton=singleton)
    best = _brute_force(t, c, singleton)
    if best is None:
        with pytest.raises(InfeasibleRulesError):
            network_pattern(t, req, c, candidate_cells(t), limits=limits)
        return
    z = network_pattern(t, req, c, candidate_cells(t), limits=limits)
    assert protected(t, z, singleton=singleton).all()
    assert np.isclose(c[z & (t.status == "S")].sum(), best)


@pytest.mark.parametrize("seed,singleton,spl", [(12, True, 0.0), (13, False, 0.4),
                                                (14, True, 0.3), (15, False, 0.0)])
def test_search_matches_the_compact_milp(seed, singleton, spl):
    t = _subtable((4, 5) if seed % 2 else (8,), seed, published=0.2, spl=spl)
    c = cost_vector(t, "value")
    req = Requirements.from_table(t, singleton=singleton)
    try:
        ref = optimal(t, c, singleton=singleton, mip_gap=0.0)
    except InfeasibleRulesError:
        with pytest.raises(InfeasibleRulesError):
            network_pattern(t, req, c, candidate_cells(t))
        return
    z = network_pattern(t, req, c, candidate_cells(t))
    assert protected(t, z, singleton=singleton).all()
    ours = c[z & (t.status == "S")].sum()
    theirs = c[ref.status == "M"].sum()
    assert ours <= theirs * (1 + 1e-9)
    assert ours >= theirs * (1 - 1e-6)     # both are optimal


PLAIN = SearchLimits(row_rounds=False, dominance=False)


def _plain_case(shape, seed, spl, singleton):
    """A random sub-table, its requirements, costs and candidates, and the plain search's
    pattern (None where its rules cannot be met)."""
    t = _subtable(shape, seed, published=0.2, spl=spl)
    c = cost_vector(t, "value")
    req = Requirements.from_table(t, singleton=singleton)
    cand = candidate_cells(t)
    try:
        plain = network_pattern(t, req, c, cand, limits=PLAIN)
    except InfeasibleRulesError:
        plain = None
    return t, req, c, cand, plain


@pytest.mark.parametrize("seed,shape,singleton,spl", [
    (21, (4, 5), False, 0.0), (22, (5, 5), True, 0.0), (23, (4, 6), False, 0.3),
    (24, (5, 6), True, 0.0), (25, (3, 7), False, 0.0), (26, (6, 5), True, 0.2),
    (27, (2, 3), False, 0.0), (28, (3, 3), True, 0.0),
    # (dominance leaves out children on these)
    (33, (5, 6), False, 0.0), (36, (5, 6), False, 0.0), (39, (5, 6), False, 0.0)])
def test_row_rounds_and_dominance_keep_the_plain_searchs_pattern(seed, shape, singleton,
                                                                 spl):
    """The rows found in rounds and the dominated children left out change the work,
    not the optimum: the pattern is the plain search's, and scipy's LPs judge it."""
    t, req, c, cand, plain = _plain_case(shape, seed, spl, singleton)
    if plain is None:
        with pytest.raises(InfeasibleRulesError):
            network_pattern(t, req, c, cand)
        return
    for limits in (SearchLimits(), SearchLimits(dominance_after=0)):
        z = network_pattern(t, req, c, cand, limits=limits)
        assert plain is not None and z is not None
        assert protected(t, z, singleton=singleton).all()
        assert np.isclose(c[z].sum(), c[plain].sum(), rtol=1e-9)
        assert (z == plain).all()


@pytest.mark.parametrize("seed", range(4))
def test_dominated_columns_follow_their_definition(seed):
    rng = np.random.default_rng(seed)
    Kc = rng.integers(0, 3, size=(3, 7)).astype(float)
    c = rng.integers(1, 4, size=7).astype(float)
    got = _dominated_by_earlier(Kc, c)
    for b in range(7):
        want = any(c[a] < c[b] and (Kc[:, a] >= Kc[:, b]).all() for a in range(b))
        assert got[b] == want


def test_unprotected_primaries_match_the_lp_oracle():
    for seed in range(3):
        rng = np.random.default_rng(seed)
        t = _subtable((3, 4), seed, spl=0.2)
        hidden = (t.status == "U") | (rng.random(t.n_cells) < 0.4)
        for singleton in (False, True):
            req = Requirements.from_table(t, singleton=singleton)
            short = network_unprotected(t, req, hidden)
            ok = protected(t, hidden, singleton=singleton)
            assert sorted(short.tolist()) == np.flatnonzero((t.status == "U") & ~ok).tolist()


def test_no_network_gives_none():
    t = synthetic.generate([(2,), (2,), (2,)], seed=1)
    req = Requirements.from_table(t, singleton=False)
    assert network_pattern(t, req, t.value, candidate_cells(t)) is None
    assert network_unprotected(t, req, t.status == "U") is None


@pytest.mark.parametrize("seed", range(2))
def test_least_movement_flows_are_the_lp_optimum(seed):
    from scipy.optimize import linprog
    from tabprotect.secondary.modular.network import min_cost_flow
    rng = np.random.default_rng(seed)
    t = _subtable((3, 4), seed)
    req = Requirements.from_table(t, singleton=False)
    net = Network.of(t.relations)
    hidden = (t.status == "U") | (rng.random(t.n_cells) < 0.6)
    A = t.relations.toarray()
    n = t.n_cells
    for slot, s in enumerate(req.primary):
        need = float(req.need_up[slot])
        others = np.flatnonzero(hidden & (np.arange(n) != s))
        y = min_cost_flow(net, np.where(hidden, req.up, 0), np.where(hidden, req.down, 0),
                          int(net.head[s]), int(net.tail[s]), need, others)
        # the LP: min sum |y| with A y = 0, y_s = need, the hidden cells' ranges
        lo = np.where(hidden, -req.down, 0.0)
        hi = np.where(hidden, req.up, 0.0)
        lo[s] = hi[s] = need
        lp = linprog(np.ones(2 * n), A_eq=np.hstack([A, -A]), b_eq=np.zeros(len(A)),
                     bounds=list(zip(np.r_[np.maximum(lo, 0), np.maximum(-hi, 0)],
                                     np.r_[np.maximum(hi, 0), np.maximum(-lo, 0)])),
                     method="highs")
        if lp.status != 0:
            assert y is None
            continue
        full = np.zeros(n)
        full[others] = y
        full[s] = need
        assert np.allclose(A @ full, 0.0, atol=1e-7)           # a move of the table
        assert (full <= hi + 1e-9).all() and (full >= lo - 1e-9).all()
        assert np.isclose(np.abs(full).sum(), lp.fun, rtol=1e-7)   # of least movement


@pytest.mark.parametrize("flows", [False, True])
def test_modular_on_a_hierarchical_two_way_table_passes_the_lp_oracle(flows):
    # proof levels from LPs (the default) or from least-movement flows
    from tabprotect.secondary import protect
    from tabprotect.secondary.modular import ModularOptions, modular
    t = synthetic.generate([(2, 3), (3, 2)], seed=3)     # 2-D, two levels each
    c = cost_vector(t, "value")
    out = modular(t, c, singleton=False, proof_by_flows=flows)
    assert out.details["solves"] > 0 and out.details["proof_levels"] > 0
    res = protect(t, method="modular", cost="value", singleton=False,
                  options=ModularOptions(proof_by_flows=flows))
    assert protected(res.confidential_table, singleton=False).all()


@pytest.mark.parametrize("seed", range(3))
def test_prepared_search_holds_its_rows_as_one_contiguous_block(seed):
    """The search's cut rows and deficits are contiguous arrays (the deduplicated rows
    come as columns of one array: a node copying its short rows from a strided view
    reads several times as much), with the listed rows' values."""
    t = _subtable((5, 6), seed, published=0.2)
    req = Requirements.from_table(t, singleton=False)
    prob, search = prepared_search(t, req, cost_vector(t, "value"), candidate_cells(t))
    assert len(search.d) > 1
    assert search.K.flags.c_contiguous and search.d.flags.c_contiguous
    parts = [p for s, nu, nd in zip(req.primary, req.need_up, req.need_down)
             for p in cut_rows_both(prob, int(s), float(nu), float(nd), SearchLimits())]
    both = np.unique(np.column_stack([np.vstack([p[0] for p in parts]),
                                      np.concatenate([p[1] for p in parts])]), axis=0)
    assert np.array_equal(search.K, both[:, :-1]) and np.array_equal(search.d, both[:, -1])


def test_unique_rows_are_numpys_unique_rows():
    rng = np.random.default_rng(7)
    values = np.array([0.0, -0.0, 1e-300, 0.1, 5.5, 7.25, 120.0, 3e6])
    for n, m in [(1, 1), (9, 3), (300, 12), (1024, 30)]:
        both = values[rng.integers(0, len(values), size=(n, m))]
        both[: n // 2] = both[n - n // 2:][: n // 2]        # duplicated rows
        ref = np.unique(both, axis=0)
        ours = _unique_rows(both)
        assert ours.shape == ref.shape and (ours == ref).all()
    negative = np.array([[1.0, -2.0], [1.0, -2.0], [0.5, 3.0]])
    assert (_unique_rows(negative) == np.unique(negative, axis=0)).all()


def _reference_branch(search, slack, short, avail, cost):
    """The row choice by its definition: the fractional cover of every short row, the
    node dropped when a row cannot be met or a cover reaches the best pattern, else the
    first of the rows with the fewest candidates whose cover costs most."""
    idx = np.flatnonzero(avail)
    need = slack[short]
    Kc = np.minimum(search.K[np.ix_(short, idx)], need[:, None])
    c = search.c[idx]
    pos = Kc > 0
    bound = _cover_bounds(Kc, need, c, pos)
    if (Kc.sum(axis=1) < need - search.tol[short]).any():
        return None
    if cost + bound.max() >= search.best_cost - 1e-9 * max(1.0, search.best_cost):
        return None
    r = int(np.lexsort((-bound, pos.sum(axis=1)))[0])
    on = pos[r]
    return idx[on][np.lexsort((idx[on], c[on] / Kc[r][on]))]


@pytest.mark.parametrize("scalar_below", [0, 10**9], ids=["numpy", "scalar"])
@pytest.mark.parametrize("seed", range(4))
def test_row_branch_follows_its_definition(seed, scalar_below):
    rng = np.random.default_rng(seed)
    t = _subtable((3, 4), seed, published=0.1)
    req = Requirements.from_table(t, singleton=False)
    c = cost_vector(t, "value")
    prob = Problem(Network.of(t.relations), req, c, candidate_cells(t),
                    np.isin(t.status, ("U", "M")))
    parts = [p for s, nu, nd in zip(req.primary, req.need_up, req.need_down)
             for p in cut_rows_both(prob, int(s), float(nu), float(nd), SearchLimits())]
    K, d = np.vstack([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    search = _Search(prob, K, d, [], SearchLimits(scalar_below=scalar_below), None)
    n = len(prob.cand_idx)
    checked = 0
    for _ in range(60):
        chosen = rng.random(n) < 0.2
        excluded = ~chosen & (rng.random(n) < 0.2)
        slack = d - K[:, chosen].sum(axis=1)
        short = np.flatnonzero(slack > search.tol)
        if not len(short):
            continue
        cost = float(prob.cost[chosen].sum())
        for best in (np.inf, cost + rng.random() * prob.cost.sum()):
            search.best_cost = best
            avail = ~chosen & ~excluded
            ours = search._row_branch(slack, short, avail, cost)
            ref = _reference_branch(search, slack, short, avail, cost)
            assert (ours is None) == (ref is None)
            if ref is not None:
                assert ours.tolist() == ref.tolist()
            checked += 1
    assert checked > 20


def test_cover_bounds_are_the_greedy_fractional_covers():
    rng = np.random.default_rng(3)
    for _ in range(200):
        n_rows, n = int(rng.integers(1, 8)), int(rng.integers(0, 7))
        need = rng.choice([1.0, 7.25, 100.0], size=n_rows)
        Kc = np.where(rng.random((n_rows, n)) < 0.4, 0.0,
                      rng.choice([0.5, 3.0, 7.25, 120.0], size=(n_rows, n)))
        Kc = np.minimum(Kc, need[:, None])
        c = rng.choice([0.0, 1.0, 5.5, 40.0], size=n)
        bound = _cover_bounds(Kc, need, c)
        for r in range(n_rows):
            # the cheapest per unit first, each taking what the row still lacks
            left, cost = need[r], 0.0
            for e in sorted((e for e in range(n) if Kc[r, e] > 0),
                            key=lambda e: c[e] / Kc[r, e]):
                take = min(left, Kc[r, e])
                cost += take * c[e] / Kc[r, e]
                left -= take
            assert np.isclose(bound[r], cost, rtol=1e-12, atol=1e-12)


def _row_search(shape, seed, limits, first_only=False):
    """A search over the listed cut rows of a random sub-table (every condition a row)."""
    t = _subtable(shape, seed, published=0.2)
    req = Requirements.from_table(t, singleton=False)
    prob = Problem(Network.of(t.relations), req, cost_vector(t, "value"), candidate_cells(t),
                   np.isin(t.status, ("U", "M")))
    parts = [p for s, nu, nd in zip(req.primary, req.need_up, req.need_down)
             for p in cut_rows_both(prob, int(s), float(nu), float(nd), SearchLimits())]
    K, d = np.vstack([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    search = _Search(prob, K, d, [], limits, None)
    search.first_only = first_only
    return search


@pytest.mark.parametrize("seed,shape", [(42, (6, 6)), (56, (6, 6)), (55, (5, 6)),
                                        (75, (5, 6)), (71, (5, 6)), (45, (6, 6))])
@pytest.mark.parametrize("variant", ["optimum", "first", "dominance", "node limit",
                                     "switch"])
def test_compiled_search_is_the_numpy_search(seed, shape, variant):
    """The kernel makes the numpy search's choices: the same pattern, cost and nodes
    (first patterns, dominance from the first node, a node limit reached, the kernel
    taking over a search the numpy code has begun)."""
    extra = {"dominance": {"dominance_after": 0}, "node limit": {"max_nodes": 40}}
    base = dataclasses.replace(SearchLimits(certify_after=None), **extra.get(variant, {}))
    load_kernel()
    after = 7 if variant == "switch" else 0
    runs = []
    for limits in (dataclasses.replace(base, compiled=False),
                   dataclasses.replace(base, compiled_after=after, load_after=0)):
        search = _row_search(shape, seed, limits, first_only=variant == "first")
        pick = search.run()
        runs.append((None if pick is None else pick.tolist(), search.best_cost, search.nodes,
                     search.gave_up))
    assert runs[0] == runs[1]
    if variant == "node limit":
        assert runs[0][2] == 41 or not runs[0][3]


@pytest.mark.parametrize("seed,shape", [(42, (6, 6)), (56, (6, 6)), (45, (6, 6))])
@pytest.mark.parametrize("cap", [3, 25, 120, 10**6])
def test_certificates_capped_search_is_the_numpy_search_when_the_kernel_is_loaded(
        seed, shape, cap):
    """The search before the uniqueness MILPs, capped at a number of nodes, makes the
    same nodes by the loaded kernel as by numpy: the same best pattern at the cap, cost,
    node count and whether it stopped there (what the certificate and the budgets read)."""
    load_kernel()
    runs = []
    for compiled in (False, True):
        search = _row_search(shape, seed, SearchLimits(compiled=compiled))
        search._capped(cap)
        runs.append((None if search.best is None else search.best.tolist(),
                     search.best_cost, search.nodes, search.gave_up))
    assert runs[0] == runs[1]
    assert runs[0][3] == (runs[0][2] == cap + 1)


@pytest.mark.parametrize("seed,shape", [(42, (6, 6)), (56, (6, 6)), (55, (5, 6)),
                                        (75, (5, 6)), (3, (4, 7)), (9, (8,))])
@pytest.mark.parametrize("variant", ["optimum", "first", "dominance", "node limit"])
def test_scalar_nodes_make_the_numpy_nodes_choices(seed, shape, variant):
    """Nodes judged in plain Python (every node, none, the default share) give the
    same pattern, cost and node count."""
    extra = {"dominance": {"dominance_after": 0}, "node limit": {"max_nodes": 40}}
    runs = []
    for below in (0, 10**9, SearchLimits().scalar_below):
        limits = SearchLimits(compiled=False, scalar_below=below, certify_after=None,
                              **extra.get(variant, {}))
        search = _row_search(shape, seed, limits, first_only=variant == "first")
        pick = search.run()
        runs.append((None if pick is None else pick.tolist(), search.best_cost, search.nodes,
                     search.gave_up))
    assert runs[0] == runs[1] == runs[2]
    assert runs[0][2] > 1


@pytest.mark.parametrize("seed", range(6))
def test_a_scalar_node_judges_a_node_as_the_numpy_node(seed):
    """Random covering rows and nodes (candidates taken and left out, rows that one
    candidate fills and rows that none does, the best cost so far around the node's
    cover bounds): the plain-Python judgement and numpy's drop the same nodes and give
    the same branch, whichever bound decides."""
    rng = np.random.default_rng(seed)
    n_rows, n = int(rng.integers(5, 40)), int(rng.integers(6, 20))
    K = np.where(rng.random((n_rows, n)) < 0.5, rng.integers(1, 9, (n_rows, n)), 0.0)
    d = np.minimum(rng.uniform(1.0, 12.0, n_rows), K.sum(axis=1) - 0.5)
    K, d = K[d > 0], d[d > 0]
    c = rng.choice([0.0, 1.0, 2.5, 4.0, 7.0], n) * rng.uniform(0.5, 2.0, n)
    search = _Search(types.SimpleNamespace(cost=c), K, d, [], SearchLimits(), None)
    judged, kept = 0, 0
    for _ in range(150):
        chosen = rng.random(n) < rng.uniform(0.0, 0.3)
        excluded = ~chosen & (rng.random(n) < rng.uniform(0.0, 0.3))
        slack = d - K[:, chosen].sum(axis=1)
        short = (slack > search.tol).nonzero()[0]
        avail = ~(chosen | excluded)
        if not len(short) or not avail.any():
            continue
        cost = float(c[chosen].sum())
        cols = avail.nonzero()[0]
        covers = _cover_bounds(np.minimum(K[np.ix_(short, cols)], slack[short][:, None]),
                               slack[short], c[cols])
        for best in [np.inf] + [cost + f * b for b in covers[:4]
                                for f in (0.5, 1.0, 1 + 1e-9, 1.5)]:
            search.best_cost = float(best)
            got = []
            for below in (10**9, 0):
                search.limits = SearchLimits(compiled=False, scalar_below=below)
                branch = search._row_branch(slack, short, avail, cost)
                got.append(None if branch is None else branch.tolist())
            assert got[0] == got[1]
            judged += 1
            kept += got[0] is not None
    assert judged > 100 and 0 < kept < judged


@pytest.mark.parametrize("seed,singleton,spl", [(12, True, 0.0), (13, False, 0.4),
                                                (22, True, 0.0), (23, False, 0.3)])
def test_scalar_nodes_keep_the_pattern_with_lazy_conditions(seed, singleton, spl):
    """With attackers' and sliding conditions checked by flows (row rounds, rows
    added inside the search), the plain-Python nodes find the numpy nodes' pattern."""
    t = _subtable((4, 5) if seed % 2 else (5, 5), seed, published=0.2, spl=spl)
    c = cost_vector(t, "value")
    req = Requirements.from_table(t, singleton=singleton)
    got = [sub_table_pattern(t, req, c, SearchLimits(compiled=False, scalar_below=below))
           for below in (0, 10**9)]
    assert got[0] == got[1]


def sub_table_pattern(t, req, c, limits: SearchLimits):
    """The sub-table's pattern by the network search under ``limits``: its suppressed
    positions, None when the search gives up, "infeasible" when the rules cannot be met."""
    try:
        z = network_pattern(t, req, c, candidate_cells(t), limits=limits)
    except InfeasibleRulesError:
        return "infeasible"
    return None if z is None else np.flatnonzero(z).tolist()


def test_scalar_sums_are_numpys_sums():
    rng = np.random.default_rng(8)
    for n in list(range(0, 20)) + [64, 127, 128, 129, 300]:
        a = rng.random(n) * 10.0 ** rng.integers(-3, 6, size=n)
        assert pairwise_sum(a.tolist()) == a.sum()


def test_scalar_branch_asks_numpys_sum_only_near_the_threshold():
    """A row whose Python sum lies within the margin of its threshold is decided by
    numpy's sum (here told to be short: the node is dropped); a row clearly met or
    clearly short is decided without it."""
    asked = []

    def exact(i):
        asked.append(i)
        return 0.0

    c = [1.0, 2.0, 3.0]
    avail = [True, True, True]
    rows = [[(0, 0.1), (1, 0.2), (2, 0.7)]]
    # 0.1 + 0.2 + 0.7 in Python's order is 1.0 exactly at the threshold 1.0
    assert scalar_row_branch(rows, [1.0], [0.0], avail, c, 0.0, np.inf, exact) is None
    assert asked == [0]
    asked.clear()
    # capped at 0.5: costs per unit 10, 10 and 6 (ties by column)
    assert scalar_row_branch(rows, [0.5], [0.0], avail, c, 0.0, np.inf, exact) == [2, 0, 1]
    assert scalar_row_branch(rows, [2.0], [0.0], avail, c, 0.0, np.inf, exact) is None
    assert asked == []


def test_compiled_search_resumes_where_it_paused():
    """Slices of a few nodes (the caller checks its deadline between them) end where one
    call ends."""
    load_kernel()
    search = _row_search((6, 6), 42, SearchLimits())
    ends = []
    for step in (10**9, 5):
        st = KernelState(len(search.d), len(search.c), search.d)
        pause, ended = 0, False
        while not ended:
            pause += step
            ended = search_slice(search.K, search.KT, search.tol, search.c, 20_000, True,
                                 0, False, pause, st)
        ends.append((st.best.tolist(), float(st.floats[0]), st.ints.tolist()))
    assert ends[0] == ends[1] and ends[0][2][2] > 50


@pytest.mark.parametrize("seed,shape", [(42, (6, 6)), (56, (6, 6)), (3, (4, 7)), (9, (8,)),
                                        (11, (3, 3))])
def test_compiled_cut_listing_is_the_numpy_listing(seed, shape):
    """The kernel lists the same rows, in the same order, with the same floats."""
    load_kernel()
    t = _subtable(shape, seed, published=0.2)
    req = Requirements.from_table(t, singleton=False)
    fixed = np.isin(t.status, ("U", "M")) | (np.random.default_rng(seed).random(t.n_cells)
                                             < 0.2)
    prob = Problem(Network.of(t.relations), req, cost_vector(t, "value"), candidate_cells(t),
                   fixed)
    listed = 0
    for s, nu, nd in zip(req.primary, req.need_up, req.need_down):
        for up, down in ((float(nu), float(nd)), (float(nu), 0.0), (0.0, float(nd))):
            ref = cut_rows_both(prob, int(s), up, down, SearchLimits(compiled=False))
            got = cut_rows_both(prob, int(s), up, down, SearchLimits())
            assert (ref is None) == (got is None)
            if ref is None:
                continue
            assert len(ref) == len(got) == (up > 0) + (down > 0)
            for (r_rows, r_def), (g_rows, g_def) in zip(ref, got):
                assert r_rows.shape == g_rows.shape and (r_rows == g_rows).all()
                assert (r_def == g_def).all()
                listed += len(r_def)
    assert listed > 0


@pytest.mark.parametrize("n", [0, 1, 3, 7])
def test_listed_subsets_are_every_subset_of_the_free_nodes(n):
    """The cut listing's rows of flags are every subset of ``n`` free nodes once, row
    ``m`` holding the bits of ``m``, and the shared rows cannot be written."""
    bits = _subset_bits(n)
    assert bits.shape == (2 ** n, n) and not bits.flags.writeable
    for m in range(2 ** n):
        assert bits[m].tolist() == [bool((m >> i) & 1) for i in range(n)]
    assert len({tuple(row) for row in bits.tolist()}) == 2 ** n


def test_kernel_sums_are_numpys_sums():
    load_kernel()
    rng = np.random.default_rng(5)
    for n in list(range(0, 20)) + [127, 128, 129, 136, 300, 1000, 4099]:
        a = rng.random(n + 2) * 10.0 ** rng.integers(-3, 6, size=n + 2)
        assert network_kernel._pairwise(a, 1, n) == a[1:1 + n].sum()


def test_compiled_max_flow_is_the_python_max_flow():
    """The same augmenting paths: the same flow value and minimum cut, to the bit."""
    from tabprotect.secondary.modular.network import EPS, max_flow
    load_kernel()
    rng = np.random.default_rng(8)
    cut_sides = set()
    for _ in range(300):
        n = int(rng.integers(2, 9))
        cap = np.where(rng.random((n, n)) < 0.4, rng.choice([0.5, 3.0, 7.25, 1e6], (n, n)),
                       0.0)
        cap[rng.random((n, n)) < 0.03] = np.inf
        np.fill_diagonal(cap, 0.0)
        s, t = (int(x) for x in rng.choice(n, 2, replace=False))
        ref = max_flow(cap.tolist(), s, t)
        got = network_kernel.max_flow_compiled(cap.copy(), s, t, EPS)
        assert float(got[0]) == ref[0] and (got[1] == ref[1]).all()
        cut_sides.add(int(ref[1].sum()))
    assert len(cut_sides) > 3


@pytest.mark.parametrize("seed,shape,singleton,spl", [
    (21, (4, 5), False, 0.0), (22, (5, 5), True, 0.0), (23, (4, 6), False, 0.3),
    (24, (5, 6), True, 0.0), (26, (6, 5), True, 0.2), (13, (4, 5), False, 0.4)])
@pytest.mark.parametrize("certify_after", [1, 12])
def test_capped_optimum_rounds_keep_the_plain_searchs_pattern(seed, shape, singleton, spl,
                                                              certify_after):
    """Optimum rounds that stop at their cap (a tight one: one node per candidate; from
    the first round, after one certified round, never) hand the sub-table to the full
    search with the rows found: the pattern is still the plain search's, and scipy's
    LPs judge it protected."""
    t, req, c, cand, plain = _plain_case(shape, seed, spl, singleton)
    if plain is None:
        return
    for certified in (0, 1, None):
        limits = SearchLimits(compiled=False, certify_after=certify_after,
                              certified_rounds=certified)
        z = network_pattern(t, req, c, cand, limits=limits)
        assert z is not None and (z == plain).all()
        assert protected(t, z, singleton=singleton).all()


def test_round_limits_cap_optimum_rounds_once_enough_were_certified():
    """Once ``certified_rounds`` optimum rounds have asked the uniqueness MILPs, an
    optimum round's search stops where it would ask them (the certificate's node
    count, no certificate, numpy), with the kernel loaded or not; a first-pattern
    round, an earlier optimum round and no limit keep the rounds' limits."""
    numpy_only = SearchLimits(certify_after=12, compiled=False, certified_rounds=2)
    search = _row_search((6, 6), 42, numpy_only)
    search.lazy = [(0, int(search.prob.req.primary[0]), -1, 0.0, True)]
    n, rows = len(search.c), len(search.d)
    cap = math.ceil(12 * n / (1 + rows / 1000))
    assert search._certify_cap() == cap
    kept = dataclasses.replace(numpy_only, max_nodes=numpy_only.max_nodes - 100)
    lim = search._round_limits(100, first_only=False, certified=2)
    assert (lim.max_nodes, lim.certify_after, lim.compiled) == (cap, None, False)
    assert search._round_limits(100, first_only=False, certified=1) == kept
    assert search._round_limits(100, first_only=True, certified=5) == kept
    search.limits = SearchLimits(certified_rounds=None, compiled=False)
    assert search._round_limits(0, False, 9) == search.limits
    load_kernel()
    search.limits = dataclasses.replace(numpy_only, compiled=True)
    assert search._certify_cap() == cap
    lim = search._round_limits(100, first_only=False, certified=2)
    assert (lim.max_nodes, lim.certify_after, lim.compiled) == (cap, None, False)
    assert search._round_limits(100, first_only=True, certified=5) == dataclasses.replace(
        search.limits, max_nodes=search.limits.max_nodes - 100)


_LOAD_CASES = [(21, (4, 5), False, 0.0), (22, (5, 5), True, 0.0), (23, (4, 6), False, 0.3),
               (24, (5, 6), True, 0.0), (26, (6, 5), True, 0.2), (13, (4, 5), False, 0.4)]

_ROUNDS_IN_A_NEW_PROCESS = """
import json, sys
sys.path.insert(0, sys.argv[2])
import numpy as np
from test_secondary_modular_network import _LOAD_CASES, _plain_case
from tabprotect.secondary.modular.network_cuts import SearchLimits
from tabprotect.secondary.modular.network_kernel import kernel_loaded
from tabprotect.secondary.modular.network_search import network_pattern
after = None if sys.argv[1] == "none" else int(sys.argv[1])
limits = SearchLimits(certify_after=1, max_free_nodes=3, load_after_rounds=after,
                      load_rounds_work=float(sys.argv[3]))
out = []
for seed, shape, singleton, spl in _LOAD_CASES:
    t, req, c, cand, _ = _plain_case(shape, seed, spl, singleton)
    z = network_pattern(t, req, c, cand, limits=limits)
    out.append([kernel_loaded(), None if z is None else np.flatnonzero(z).tolist()])
print(json.dumps(out))
"""


def _rounds_in_a_new_process(load_after_rounds, load_rounds_work=0.0) -> list:
    """Per case of ``_LOAD_CASES``, in one new process (the kernel cached, not loaded):
    whether the kernel is loaded after its search and the pattern's cells."""
    load_kernel()                       # (fills the cache the new process reads)
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root))
    env.pop("TABPROTECT_NO_NUMBA", None)
    out = subprocess.run([sys.executable, "-c", _ROUNDS_IN_A_NEW_PROCESS,
                          str(load_after_rounds).lower(), str(root / "tests"),
                          str(load_rounds_work)], env=env,
                         capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_rounds_load_the_cached_kernel_after_certified_rounds_with_the_same_pattern():
    """Optimum rounds that needed the uniqueness MILPs load the cached kernel
    (``load_after_rounds``) and go on compiled: the pattern is the plain search's,
    judged protected by scipy's LPs; with ``load_after_rounds=None`` no search loads
    it (the rows met one by one: at most three free nodes are listed)."""
    loading = _rounds_in_a_new_process(1)
    assert any(loaded for loaded, _ in loading)
    assert not any(loaded for loaded, _ in _rounds_in_a_new_process(None))
    for (seed, shape, singleton, spl), (_, cells) in zip(_LOAD_CASES, loading):
        t, req, c, cand, plain = _plain_case(shape, seed, spl, singleton)
        if plain is None:
            continue
        assert cells == np.flatnonzero(plain).tolist()
        assert protected(t, plain, singleton=singleton).all()


def test_rounds_of_a_process_with_little_numpy_work_wait_one_more_certified_round():
    """Below ``load_rounds_work`` numpy nodes of the process the rounds load the kernel
    one certified round later: the cases load as with ``load_after_rounds=2``, later
    than with the threshold at zero, and keep the plain search's patterns."""
    early = _rounds_in_a_new_process(1, 0.0)
    waiting = _rounds_in_a_new_process(1, 1e12)
    assert waiting == _rounds_in_a_new_process(2, 0.0)
    assert [loaded for loaded, _ in waiting] != [loaded for loaded, _ in early]
    for (seed, shape, singleton, spl), (_, cells) in zip(_LOAD_CASES, waiting):
        t, req, c, cand, plain = _plain_case(shape, seed, spl, singleton)
        if plain is not None:
            assert cells == np.flatnonzero(plain).tolist()


@pytest.mark.parametrize("seed,shape,singleton,spl", _LOAD_CASES)
@pytest.mark.parametrize("max_nodes", [40, 400])
def test_compiled_rounds_keep_the_plain_searchs_pattern(seed, shape, singleton, spl,
                                                        max_nodes):
    """Rounds run by the loaded kernel with a tight ``max_nodes``: the pattern, when
    the search finds one within its nodes, is the plain search's, and scipy's LPs judge
    it protected."""
    load_kernel()
    t, req, c, cand, plain = _plain_case(shape, seed, spl, singleton)
    if plain is None:
        return
    z = network_pattern(t, req, c, cand,
                        limits=SearchLimits(max_free_nodes=3, max_nodes=max_nodes))
    if z is not None:
        assert (z == plain).all()
        assert protected(t, z, singleton=singleton).all()


def test_round_budget_is_max_nodes_with_the_kernel_loaded_or_not():
    numpy_only = SearchLimits(compiled=False, max_nodes=300)
    search = _row_search((6, 6), 42, numpy_only)
    assert search._round_limits(100, first_only=True, certified=0).max_nodes == 200
    load_kernel()
    search.limits = dataclasses.replace(numpy_only, compiled=True)
    assert search._round_limits(100, first_only=True, certified=0).max_nodes == 200



@pytest.mark.parametrize("seed", range(3))
def test_split_crossings_are_the_edges_leaving_each_side(seed):
    """Per cut (a source side) and per edge, suppressed and candidate apart: forwards
    when its tail lies in the side and its head does not, backwards the other way, in
    the cuts x edges layout the listing sums (column-major)."""
    rng = np.random.default_rng(seed)
    n_nodes, n_edges = 9, 20
    side = rng.random((2 ** 8, n_nodes)) < 0.5
    net = types.SimpleNamespace(tail=rng.integers(0, n_nodes, n_edges),
                                head=rng.integers(0, n_nodes, n_edges))
    prob = types.SimpleNamespace(net=net, fixed=rng.random(n_edges) < 0.4)
    edges = np.sort(rng.choice(n_edges, 15, replace=False))
    got = _split_crossing(prob, side, edges)
    for part, mask in zip(got, (prob.fixed[edges], ~prob.fixed[edges])):
        sub = edges[mask]
        at_tail = np.array([[side[k, net.tail[e]] for e in sub] for k in range(len(side))])
        at_head = np.array([[side[k, net.head[e]] for e in sub] for k in range(len(side))])
        fwd, bwd = part
        assert np.array_equal(fwd, at_tail & ~at_head)
        assert np.array_equal(bwd, at_head & ~at_tail)
        assert fwd.flags.f_contiguous and bwd.flags.f_contiguous


@pytest.mark.parametrize("seed,n_edges", [(1, 9), (2, 16), (3, 23), (4, 40)])
def test_screened_short_cuts_are_the_plain_sums(seed, n_edges):
    """The cuts a listing's suppressed cells leave short and their deficits, screened by
    the matrix product (``SearchLimits.screen_cuts``) or not, are those of each cut's
    ``np.sum`` (pairwise, as the compiled listing sums) to the bit: on ranges of many
    magnitudes the order of the sums shows in the last bits, and the needs split the
    cuts near their median or sit at some cuts' threshold (within rounding of it)."""
    rng = np.random.default_rng(seed)
    n_nodes, n_cuts = 14, 2 ** 12
    side = rng.random((n_cuts, n_nodes)) < 0.5
    tail, head = rng.integers(0, n_nodes, n_edges), rng.integers(0, n_nodes, n_edges)
    prob = types.SimpleNamespace(up=rng.random(n_edges) * 10.0 ** rng.integers(-2, 6, n_edges),
                                 down=rng.random(n_edges) * 10.0 ** rng.integers(-2, 6, n_edges))
    edges = np.arange(n_edges)
    fwd = side[:, tail] & ~side[:, head]       # as the listing gathers them: cuts x edges
    bwd = side[:, head] & ~side[:, tail]
    carried = np.array([np.sum(np.array(row)) for row in _coefficients(prob, fwd, bwd, edges)])
    # needs at the threshold of some cuts: their deficits within rounding of ``tol``
    edge_cases = [float(v) * (1 + 1e-9) for v in carried[:64] if v > 1]
    for need in [float(np.median(carried)), float(carried.max()) * 2, 0.0] + edge_cases:
        tol = 1e-9 * max(1.0, need)
        plain = need - carried
        short = np.flatnonzero(plain > tol)
        for screen in (2, None):
            got, deficit = _short_cuts(prob, fwd, bwd, edges, need, tol, screen)
            assert np.arange(n_cuts)[got].tolist() == short.tolist()
            assert (deficit == plain[short]).all()


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_compiled_listing_sums_suppressed_cells_as_the_numpy_listing(seed):
    """With many suppressed cells of ranges that are no integers (the order of a cut's
    sum shows in its last bits), the kernel lists the same rows and floats as numpy."""
    load_kernel()
    listed = long_sums = 0
    for shape in [(6, 6), (5, 7), (4, 7)]:
        rng = np.random.default_rng(seed)
        t = _subtable(shape, seed, published=0.1)
        req = Requirements.from_table(t, singleton=False)
        fixed = np.isin(t.status, ("U", "M")) | (rng.random(t.n_cells) < 0.5)
        scale = np.where(fixed & (t.status != "U"), rng.random(t.n_cells) / 9,
                         1.0 + rng.random(t.n_cells) / 7)
        req = dataclasses.replace(req, up=req.up * scale, down=req.down * scale)
        prob = Problem(Network.of(t.relations), req, cost_vector(t, "value"),
                       candidate_cells(t), fixed)
        long_sums += int(prob.fixed.sum() >= 16)
        for s, nu, nd in zip(req.primary, req.need_up, req.need_down):
            try:
                ref = cut_rows_both(prob, int(s), float(nu), float(nd),
                                    SearchLimits(compiled=False))
            except InfeasibleRulesError:
                with pytest.raises(InfeasibleRulesError):
                    cut_rows_both(prob, int(s), float(nu), float(nd), SearchLimits())
                continue
            got = cut_rows_both(prob, int(s), float(nu), float(nd), SearchLimits())
            assert (ref is None) == (got is None)
            for (r_rows, r_def), (g_rows, g_def) in zip(ref or (), got or ()):
                assert r_rows.shape == g_rows.shape and (r_rows == g_rows).all()
                assert (r_def == g_def).all()
                listed += len(r_def)
    assert listed > 0 and long_sums > 0

