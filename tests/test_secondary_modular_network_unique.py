"""The network search's pattern certified by two MILPs (modular/network_unique.py):
the certified pattern is the search's own, checked against the plain search and brute
force; ties and near-ties leave the answer to the search."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from lp_oracle import protected
from test_secondary_modular_network import _row_search, _subtable, sub_table_pattern
from tabprotect.secondary.attack_requirements import Requirements
from tabprotect.secondary.base import cost_vector
from tabprotect.secondary.candidates import candidate_cells
from tabprotect.secondary.modular.network_cuts import REL_TOL, SearchLimits
from tabprotect.secondary.modular.network_kernel import load_kernel
from tabprotect.secondary.modular.network_search import network_pattern, prepared_search
from tabprotect.secondary.modular.network_unique import unique_optimum


def _brute(K, d, c):
    """Every feasible pattern's cost, by enumeration (the search's row test)."""
    tol = REL_TOL * np.maximum(1.0, d)
    n = len(c)
    out = []
    for bits in itertools.product([False, True], repeat=n):
        z = np.array(bits, dtype=bool)
        if (d - K[:, z].sum(axis=1) <= tol).all():
            out.append((float(c[z].sum()), z))
    return out


def _random_cover(rng):
    """Covering rows ``K z >= d`` of a few cells with small integer costs ``c`` (ties
    common), each entry at most its row's demand."""
    n, m = int(rng.integers(3, 10)), int(rng.integers(1, 8))
    d = rng.choice([1.0, 3.0, 10.0, 250.0], size=m)
    K = np.where(rng.random((m, n)) < 0.5, 0.0,
                 rng.choice([1.0, 2.0, 5.0, 300.0], size=(m, n)))
    return np.minimum(K, d[:, None]), d, rng.integers(1, 4, size=n).astype(float)


def test_certified_pattern_is_the_unique_brute_force_optimum():
    """Random covering rows (small integer costs, so ties are common): a pattern is
    returned exactly when one pattern costs least, and it is that pattern."""
    rng = np.random.default_rng(5)
    seen = {"unique": 0, "tie": 0}
    for _ in range(60):
        K, d, c = _random_cover(rng)
        feasible = _brute(K, d, c)
        x = unique_optimum(K, d, REL_TOL * np.maximum(1.0, d), c)
        if not feasible:
            assert x is None
            continue
        costs = sorted(f[0] for f in feasible)
        unique = len(costs) == 1 or costs[1] > costs[0]
        seen["unique" if unique else "tie"] += 1
        if unique:
            best = min(feasible, key=lambda f: f[0])[1]
            assert x is not None and x.tolist() == best.tolist()
        else:
            assert x is None
    assert seen["unique"] >= 10 and seen["tie"] >= 3


def test_certified_from_a_known_pattern_is_the_brute_force_optimum():
    """The search's pattern handed to the certificate: the unique optimum is returned
    whichever feasible pattern it starts from (the optimum itself: the second MILP
    alone; a dearer one: the cheaper pattern that MILP finds, or both MILPs), and no
    pattern when several cost least."""
    rng = np.random.default_rng(11)
    seen = {"optimum": 0, "dearer": 0, "tie": 0}
    for _ in range(60):
        K, d, c = _random_cover(rng)
        feasible = sorted(_brute(K, d, c), key=lambda f: f[0])
        if not feasible:
            continue
        unique = len(feasible) == 1 or feasible[1][0] > feasible[0][0]
        for start in (feasible[0], feasible[-1]):
            x = unique_optimum(K, d, REL_TOL * np.maximum(1.0, d), c, known=start[1].copy())
            if unique:
                assert x is not None and x.tolist() == feasible[0][1].tolist()
                seen["optimum" if start[0] == feasible[0][0] else "dearer"] += 1
            else:
                assert x is None
                seen["tie"] += 1
    assert seen["optimum"] >= 10 and seen["dearer"] >= 10 and seen["tie"] >= 3


def test_a_tie_is_not_certified():
    """Two patterns of equal cost: no certificate (the search picks by its order)."""
    K = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]])
    d = np.ones(2)
    c = np.array([1.0, 2.0, 1.0])          # {1} and {0, 2} both cost 2
    assert unique_optimum(K, d, REL_TOL * np.ones(2), c) is None
    c = np.array([1.0, 1.5, 1.0])          # {1} alone is cheapest
    assert unique_optimum(K, d, REL_TOL * np.ones(2), c).tolist() == [False, True, False]


@pytest.mark.parametrize("seed,shape", [(42, (6, 6)), (56, (6, 6)), (55, (5, 6)),
                                        (75, (5, 6)), (71, (5, 6)), (45, (6, 6)),
                                        (3, (4, 7)), (9, (8,))])
@pytest.mark.parametrize("after", [0, 5])
def test_certified_search_finds_the_plain_searchs_pattern(seed, shape, after):
    """The search settled by the certificate (from its first node, or after a few)
    returns the plain search's pattern and cost."""
    runs = []
    for certify in (None, after):
        limits = SearchLimits(compiled=False, certify_after=certify)
        search = _row_search(shape, seed, limits)
        pick = search.run()
        runs.append((None if pick is None else pick.tolist(), search.best_cost))
    assert runs[0][0] == runs[1][0]
    assert runs[0][1] == pytest.approx(runs[1][1], rel=1e-12)


@pytest.mark.parametrize("seed,shape,singleton,spl", [(12, (5, 5), True, 0.0),
                                                      (13, (4, 5), False, 0.4),
                                                      (21, (6, 5), False, 0.0),
                                                      (22, (5, 5), True, 0.0),
                                                      (31, (7, 6), False, 0.0),
                                                      (33, (6, 6), False, 0.2)])
def test_sub_table_patterns_keep_with_the_certificate(seed, shape, singleton, spl):
    """Whole sub-tables (row rounds, lazy conditions): the same pattern with every
    optimum search certified as without the certificate."""
    t = _subtable(shape, seed, published=0.2, spl=spl)
    c = cost_vector(t, "value")
    req = Requirements.from_table(t, singleton=singleton)
    got = [sub_table_pattern(t, req, c, SearchLimits(compiled=False, certify_after=certify))
           for certify in (None, 0)]
    assert got[0] == got[1]


def test_a_search_over_many_rows_is_certified_sooner():
    """A node over 1,152 cut rows counts as 2.152 of a search over few rows: with three
    nodes per candidate the certificate settles the search after 37 nodes, where the
    plain search (the reference) takes 66 and a count by nodes alone would let it run
    to its end; the answer is the plain search's."""
    plain = _row_search((6, 6), 42, SearchLimits(compiled=False, certify_after=None))
    want = plain.run()
    assert len(plain.d) == 1152 and len(plain.c) == 26 and 3 * 26 > plain.nodes > 40
    certified = _row_search((6, 6), 42, SearchLimits(compiled=False, certify_after=3))
    got = certified.run()
    assert got.tolist() == want.tolist()
    assert certified.best_cost == pytest.approx(plain.best_cost, rel=1e-12)
    assert certified.nodes <= 38        # the certificate ended the search


def test_a_milp_stopped_by_its_node_limit_certifies_nothing():
    """The certificate's MILPs stop at ``nodes`` branch-and-bound nodes (a count of
    work, not seconds): with none allowed no pattern is certified, run after run, where
    the default limit certifies the brute-force optimum."""
    rng = np.random.default_rng(0)
    n, m = 16, 24
    d = rng.choice([1.0, 2.0], size=m)
    K = np.where(rng.random((m, n)) < 0.7, 0.0, rng.choice([1.0, 2.0], size=(m, n)))
    K = np.minimum(K, d[:, None])
    c = rng.integers(10, 100, size=n) + rng.random(n)
    tol = REL_TOL * np.maximum(1.0, d)
    every = (np.arange(2 ** n)[:, None] >> np.arange(n)) & 1 == 1      # all patterns
    feasible = every[(d[:, None] - K @ every.T <= tol[:, None]).all(axis=0)]
    costs = feasible @ c
    assert len(costs) > 1 and np.sort(costs)[1] > costs.min()         # a unique optimum
    best = feasible[np.argmin(costs)]
    assert unique_optimum(K, d, tol, c).tolist() == best.tolist()
    for _ in range(2):
        assert unique_optimum(K, d, tol, c, nodes=0) is None


def _kernel_loaded_plain_optimum(shape, seed):
    """With the kernel loaded, the plain numpy search of a row-search case (no
    certificate), run, and its optimum."""
    load_kernel()
    plain = _row_search(shape, seed, SearchLimits(compiled=False, certify_after=None))
    return plain, plain.run().tolist()


@pytest.mark.parametrize("seed,shape", [(42, (6, 6)), (56, (6, 6)), (45, (6, 6)),
                                        (55, (5, 6))])
@pytest.mark.parametrize("certify_nodes", [0, 500])
def test_loaded_kernel_asks_the_certificate_a_few_nodes_past_the_cap(seed, shape,
                                                                     certify_nodes):
    """With the kernel loaded and a budget of one node past the certificate's cap
    (``certify_compiled_after``), a search still going there asks the MILPs: where they
    certify (500 MILP nodes) the search stops, in the cap's nodes and one more; where
    they cannot (none) it searches on to its end, node for node the plain search.
    Either way numpy's answer, the plain search's optimum."""
    plain, want = _kernel_loaded_plain_optimum(shape, seed)
    runs = []
    for compiled in (False, True):
        search = _row_search(shape, seed, SearchLimits(
            compiled=compiled, certify_after=1, certify_compiled_after=1,
            certify_nodes=certify_nodes))
        cap = search._certify_cap()
        pick = search.run()
        runs.append((pick.tolist(), search.gave_up))
    assert runs[0] == runs[1] == (want, False)
    assert cap + 1 < plain.nodes
    assert search.nodes == (cap + 1 if certify_nodes else plain.nodes)


@pytest.mark.parametrize("seed,shape,singleton", [(42, (6, 6), False), (22, (5, 5), True),
                                                  (31, (7, 6), False)])
def test_sub_table_patterns_keep_when_the_certificate_hits_its_node_limit(seed, shape,
                                                                         singleton):
    """Every certificate stopped by its node limit (``certify_nodes=0``): the search
    decides, and its pattern is the plain search's, the same in two runs and protected
    by the LP oracle's judgement."""
    t = _subtable(shape, seed, published=0.2)
    c = cost_vector(t, "value")
    req = Requirements.from_table(t, singleton=singleton)
    plain = sub_table_pattern(t, req, c, SearchLimits(compiled=False, certify_after=None))
    stopped = [sub_table_pattern(t, req, c, SearchLimits(compiled=False, certify_after=0,
                                                         certify_nodes=0))
               for _ in range(2)]
    assert isinstance(plain, list) and stopped[0] == stopped[1] == plain
    z = np.isin(t.status, ("U", "M"))
    z[plain] = True
    assert protected(t, z, singleton=singleton).all()


@pytest.mark.parametrize("seed,shape", [(42, (6, 6)), (56, (6, 6)), (45, (6, 6)),
                                        (55, (5, 6))])
@pytest.mark.parametrize("max_nodes", [30, 20_000])
def test_loaded_kernel_settles_a_certified_search_as_numpy(seed, shape, max_nodes):
    """With the kernel loaded the search runs past the certificate's cap to its end and
    asks the MILPs only when it gives up (a node budget of 30 ends it before its end,
    20,000 does not; the default budget past the cap outlasts these searches): the
    answer is numpy's search with its certificate, the plain search's optimum."""
    plain, want = _kernel_loaded_plain_optimum(shape, seed)
    runs = []
    for compiled in (False, True):
        search = _row_search(shape, seed, SearchLimits(compiled=compiled, certify_after=1,
                                                       max_nodes=max_nodes))
        pick = search.run()
        runs.append((None if pick is None else pick.tolist(), search.gave_up))
    assert runs[0] == runs[1] == (want, False)
    assert plain.nodes > 30


@pytest.mark.parametrize("seed,shape,singleton", [(42, (6, 6), False), (22, (5, 5), True),
                                                  (31, (7, 6), False)])
@pytest.mark.parametrize("certify_nodes", [0, 500])
def test_sub_table_patterns_keep_with_the_kernel_loaded_and_certificates(
        seed, shape, singleton, certify_nodes):
    """Whole sub-tables (row rounds, lazy conditions) with every optimum search asking
    the certificate, which certifies (500 MILP nodes) or cannot (none): with the kernel
    loaded the same pattern as by numpy, protected by the LP oracle's judgement."""
    load_kernel()
    t = _subtable(shape, seed, published=0.2)
    c = cost_vector(t, "value")
    req = Requirements.from_table(t, singleton=singleton)
    got = [sub_table_pattern(t, req, c, SearchLimits(compiled=compiled, certify_after=0,
                                                     certify_nodes=certify_nodes))
           for compiled in (False, True)]
    assert isinstance(got[0], list) and got[0] == got[1]
    z = np.isin(t.status, ("U", "M"))
    z[got[0]] = True
    assert protected(t, z, singleton=singleton).all()


@pytest.mark.parametrize("seed,shape", [(3, (4, 5)), (7, (4, 5)), (2, (6, 6)),
                                        (3, (6, 6))])
@pytest.mark.parametrize("compiled", [False, True])
def test_conditions_left_lazy_are_listed_after_rounds_that_settle_nothing(seed, shape,
                                                                          compiled):
    """Conditions too wide to list at first (three free nodes at most) whose row rounds
    settle nothing (they stop at once) are listed in full afterwards
    (``list_after_rounds``): the search runs over rows alone, settled here by the
    certificate after one node (the kernel's too), where over lazy conditions it takes
    more; the same cells
    as the search over lazy conditions (numpy, or the kernel loaded), and scipy's LPs
    judge them protected."""
    if compiled:
        load_kernel()
    t = _subtable(shape, seed, published=0.2)
    req = Requirements.from_table(t, singleton=False)
    c, cand = cost_vector(t, "value"), candidate_cells(t)
    runs = []
    for listed in (None, 12):
        limits = SearchLimits(max_free_nodes=3, certify_after=0, certified_rounds=0,
                              certify_compiled_after=1, list_after_rounds=listed,
                              compiled=compiled)
        _, search = prepared_search(t, req, c, cand, limits=limits)
        lazy = len(search.lazy)
        pick = search.run()
        runs.append((lazy, len(search.lazy), search.nodes, pick.tolist(),
                     network_pattern(t, req, c, cand, limits=limits).tolist()))
    (lazy_before, lazy_after, nodes, pick, z), listed = runs
    assert lazy_before == lazy_after == listed[0] > 0
    assert listed[1] == 0 and listed[2] == 1 < nodes
    assert list(listed[3:]) == [pick, z]
    assert protected(t, np.asarray(z), singleton=False).all()
