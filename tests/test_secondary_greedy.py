"""The greedy attacker-LP baseline and its repair step, judged by the LP audit."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from tabprotect.audit import audit
from tabprotect.model import Hierarchy, Table
from tabprotect.secondary import protect
from tabprotect.secondary.base import cost_vector
from tabprotect.secondary.greedy import greedy, greedy_repair
from tabprotect.secondary.optimal import optimal

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import gen_tables  # noqa: E402


def two_by_two(primary_level=1.0):
    r = Hierarchy.flat(["1", "2"], total="T")
    c = Hierarchy.flat(["a", "b"], total="T")
    t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    st = t.status.copy()
    st[4] = "U"
    lvl = np.where(st == "U", primary_level, 0.0)
    return t.replace(status=st, upl=lvl, lpl=lvl)


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
    t = gen_tables.preset(name, seed=7)
    out = greedy(t, cost_vector(t, "value"))
    assert audit(t.replace(status=out.status)).passed
    res = protect(t, method="greedy", cost="value", singleton=False)
    assert audit(res.table).passed


def test_five_dimensional_table():
    t = gen_tables.generate([(2,), (2,), (2,), (2,), (2,)], seed=4)
    out = greedy(t, cost_vector(t, "value"))
    assert audit(t.replace(status=out.status)).passed


def test_deterministic_and_not_far_from_optimal():
    t = gen_tables.preset("2d-small", seed=2)
    c = cost_vector(t, "value")
    a = greedy(t, c).status
    b = greedy(t, c).status
    assert (a == b).all()
    best = optimal(t, c, singleton=False)
    assert c[a == "M"].sum() >= c[best.status == "M"].sum() - 1e-6  # never beats the optimum


# ---------------------------------------------------------------- leaf cubes
from tabprotect.secondary.gauss import gauss  # noqa: E402
from tabprotect.secondary.greedy import cube_repair, leaf_cells  # noqa: E402


def test_leaf_cells_are_leaves_in_every_dimension():
    h = Hierarchy.from_pairs([("T", "A"), ("T", "B"), ("A", "A1"), ("A", "A2")])
    c = Hierarchy.flat(["x", "y"], total="T")
    t = Table.from_arrays({"r": h, "c": c}, np.zeros(15))
    leaf = leaf_cells(t)
    names = {t.cell_name(i) for i in np.flatnonzero(leaf)}
    # leaves of r: B, A1, A2; of c: x, y
    assert len(names) == 6 and all("T" not in n and "A," not in n for n in names)


def _gauss_pattern(name, seed):
    """A generated table, its value costs, its gauss pattern (interval shortfalls left
    for the repair) and its primary cells."""
    t = gen_tables.preset(name, seed=seed)
    cost = cost_vector(t, "value")
    base = t.replace(status=gauss(t, cost, singleton=False).status)
    return t, cost, base, np.flatnonzero(t.status == "U")


@pytest.mark.parametrize("name,seed", [("3d-small", 1), ("3d-small", 5), ("1k-3d", 2024)])
def test_cube_repair_protects_every_primary_it_resolves(name, seed):
    # gauss leaves interval shortfalls; every primary the leaf-cube pass settles must be
    # protected by the resulting pattern (the cube is a move of the whole table), as the
    # independent interval audit shows
    t, cost, base, prim = _gauss_pattern(name, seed)
    new, left = cube_repair(base, cost, prim)
    assert (new[base.status == "M"] == "M").all() and (new[prim] == "U").all()
    assert not (new[t.status == "P"] == "M").any()
    resolved = np.setdiff1d(prim, left)
    if name == "1k-3d":
        assert len(resolved) > 0.3 * len(prim)
    res = audit(t.replace(status=new))
    assert res.protected[resolved].all()
    # a pass over a protected pattern adds nothing
    again, _ = cube_repair(t.replace(status=new), cost, resolved)
    np.testing.assert_array_equal(again, new)


def test_cube_repair_with_singletons_avoids_single_contributor_corners():
    t = two_by_two()
    freq = np.full(9, 5.0)
    freq[8] = 1  # the only cube of cell 4 has a single-contributor corner
    t = t.replace(freq=freq)
    new, left = cube_repair(t, cost_vector(t, "value"), [4], singleton=True)
    assert left.tolist() == [4] and (new == t.status).all()
    new, left = cube_repair(t, cost_vector(t, "value"), [4], singleton=False)
    assert left.tolist() == [] and sorted(np.flatnonzero(new == "M").tolist()) == [5, 7, 8]


@pytest.mark.parametrize("name,seed", [("3d-small", 5), ("1k-3d", 2024), ("10k-4d", 2024)])
def test_chain_cubes_protect_non_leaf_primaries(name, seed):
    # chain cubes (one child per level down to a leaf) settle primaries with non-leaf
    # codes; each one settled must be protected in the independent audit
    t, cost, base, prim = _gauss_pattern(name, seed)
    new, left = cube_repair(base, cost, prim, chains=True)
    _, left_leaf_only = cube_repair(base, cost, prim)
    resolved = np.setdiff1d(prim, left)
    assert set(left.tolist()) <= set(left_leaf_only.tolist())
    if name != "3d-small":
        assert (~leaf_cells(t)[resolved]).sum() > 0   # some non-leaf primary settled
    assert (new[base.status == "M"] == "M").all()
    res = audit(t.replace(status=new), mode="verdict")
    assert res.protected[resolved].all()


@pytest.mark.parametrize("name,seed,poles", [("3d-small", 5, False), ("1k-3d", 2024, False),
                                             ("1k-3d", 2024, True),
                                             pytest.param("10k-4d", 2024, True,
                                                          marks=pytest.mark.slow)])
def test_cube_moves_are_moves_and_certify(name, seed, poles):
    # the cubes cube_repair returns are moves of the whole table over suppressed cells
    # (checked here directly: A d = 0, support suppressed), the audit accepts every one,
    # and with them it certifies the settled primaries; its verdict stays the interval
    # audit's (small tables) / the verdict without moves
    t, cost, base, prim = _gauss_pattern(name, seed)
    new, left, moves = cube_repair(base, cost, prim, chains=True, poles=poles,
                                   return_moves=True)
    resolved = np.setdiff1d(prim, left)
    assert len(resolved) <= moves.shape[0] <= 2 * len(resolved)
    assert abs(t.relations @ moves.T).max() <= 1e-9 * max(1.0, abs(moves).max())
    suppressed = np.isin(new, ("U", "M"))
    assert suppressed[moves.nonzero()[1]].all()
    repaired = t.replace(status=new)
    with_moves = audit(repaired, mode="verdict", moves=moves)
    assert with_moves.n_moves_rejected == 0 and with_moves.n_moves_used == moves.shape[0]
    assert with_moves.protected[resolved].all()
    reference = audit(repaired) if t.n_cells <= 2000 else audit(repaired, mode="verdict")
    np.testing.assert_array_equal(with_moves.protected, reference.protected)
    if poles:
        _, left_without = cube_repair(base, cost, prim, chains=True)
        assert set(left.tolist()) <= set(left_without.tolist())


@pytest.mark.parametrize("name,sizes", [("1k-3d", (20, 100)), ("3d-small", (10,)),
                                        pytest.param("10k-4d", (200,),
                                                     marks=pytest.mark.slow)])
def test_block_neighbourhood_repair_and_its_moves(name, sizes):
    # the repair's block regions (suppressed cells grown around the primary plus the
    # published cells at their edge): the repaired pattern passes the independent audit,
    # and the deviations it returns are moves the audit accepts
    t, cost, base, _ = _gauss_pattern(name, 2024)
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


def test_certify_only_adds_nothing_and_its_moves_certify():
    # after a cube pass every primary it settled has a cube of suppressed cells: a
    # certify-only pass finds cubes for them again without adding a cell, and the audit
    # accepts its moves and certifies those primaries
    t, cost, base, prim = _gauss_pattern("1k-3d", 2024)
    new, left = cube_repair(base, cost, prim, chains=True)
    repaired = t.replace(status=new)
    same, left2, moves = cube_repair(repaired, cost, prim, chains=True, certify_only=True,
                                     return_moves=True)
    np.testing.assert_array_equal(same, new)
    settled = np.setdiff1d(prim, left2)
    assert len(settled) >= 0.8 * len(np.setdiff1d(prim, left))
    res = audit(repaired, mode="verdict", moves=moves)
    assert res.n_moves_rejected == 0 and res.protected[settled].all()
