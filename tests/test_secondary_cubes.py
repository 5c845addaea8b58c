"""Tests of tabprotect.secondary.cubes: cube moves, leaf/chain cubes, certify-only."""
from __future__ import annotations

import numpy as np
import pytest

from tabprotect.audit import audit
from tabprotect.model import Hierarchy, Table
from tabprotect.secondary.base import cost_vector
from tabprotect.secondary.cubes import cube_repair, leaf_cells

from helpers import gauss_pattern, two_by_two


def test_leaf_cells_are_leaves_in_every_dimension():
    h = Hierarchy.from_pairs([("T", "A"), ("T", "B"), ("A", "A1"), ("A", "A2")])
    c = Hierarchy.flat(["x", "y"], total="T")
    t = Table.from_arrays({"r": h, "c": c}, np.zeros(15))
    leaf = leaf_cells(t)
    names = {t.cell_name(i) for i in np.flatnonzero(leaf)}
    # leaves of r: B, A1, A2; of c: x, y
    assert len(names) == 6 and all("T" not in n and "A," not in n for n in names)


@pytest.mark.parametrize("name,seed", [("3d-small", 1), ("3d-small", 5), ("1k-3d", 2024)])
def test_cube_repair_protects_every_primary_it_resolves(name, seed):
    # gauss leaves interval shortfalls; every primary the leaf-cube pass settles must be
    # protected by the resulting pattern (the cube is a move of the whole table), as the
    # independent interval audit shows
    t, cost, base, prim = gauss_pattern(name, seed)
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


@pytest.mark.parametrize("name,seed", [("3d-small", 5), ("1k-3d", 2024),
                                       pytest.param("10k-4d", 2024, marks=pytest.mark.slow)])
def test_chain_cubes_protect_non_leaf_primaries(name, seed):
    # chain cubes (one child per level down to a leaf) settle primaries with non-leaf
    # codes; each one settled must be protected in the independent audit
    t, cost, base, prim = gauss_pattern(name, seed)
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
    t, cost, base, prim = gauss_pattern(name, seed)
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


def test_certify_only_adds_nothing_and_its_moves_certify():
    # after a cube pass every primary it settled has a cube of suppressed cells: a
    # certify-only pass finds cubes for them again without adding a cell, and the audit
    # accepts its moves and certifies those primaries
    t, cost, base, prim = gauss_pattern("1k-3d", 2024)
    new, left = cube_repair(base, cost, prim, chains=True)
    repaired = t.replace(status=new)
    same, left2, moves = cube_repair(repaired, cost, prim, chains=True, certify_only=True,
                                     return_moves=True)
    np.testing.assert_array_equal(same, new)
    settled = np.setdiff1d(prim, left2)
    assert len(settled) >= 0.8 * len(np.setdiff1d(prim, left))
    res = audit(repaired, mode="verdict", moves=moves)
    assert res.n_moves_rejected == 0 and res.protected[settled].all()


def _pair_table(interior=((10, 6, 1), (6, 1, 3), (1, 4, 6)), up=5.0, down=5.0) -> Table:
    # 3 x 3 interior; primary (a, x) = 10 needs 5 up and 5 down.  Its four leaf cubes:
    # (b, y) moves it up by 6 but down by 1 only, (c, z) down by 6 but up by 1 only, the
    # other two by 1 either way: no single cube meets the need, a pair does
    interior = np.asarray(interior, dtype=float)
    full = np.zeros((4, 4))
    full[1:, 1:] = interior
    full[0, 1:] = interior.sum(axis=0)
    full[1:, 0] = interior.sum(axis=1)
    full[0, 0] = interior.sum()
    r = Hierarchy.flat(["a", "b", "c"], total="T")
    c = Hierarchy.flat(["x", "y", "z"], total="T")
    t = Table.from_arrays({"r": r, "c": c}, full.ravel())
    p = t.cell("a", "x")
    st = t.status.copy()
    st[p] = "U"
    return t.replace(status=st, upl=np.where(st == "U", up, 0.0),
                     lpl=np.where(st == "U", down, 0.0))


def test_cube_pair_protects_where_no_single_cube_does():
    t = _pair_table()
    p = t.cell("a", "x")
    new, left, moves = cube_repair(t, np.ones(t.n_cells), [p], return_moves=True)
    assert left.tolist() == []
    added = {t.cell_name(i) for i in np.flatnonzero(new == "M")}
    assert added == {t.cell_name(t.cell(r, c)) for r, c in
                     [("a", "y"), ("b", "x"), ("b", "y"), ("a", "z"), ("c", "x"), ("c", "z")]}
    # one move up (from the first cube), one down (from the second), both accepted
    assert moves.shape[0] == 2
    res = audit(t.replace(status=new))
    assert res.protected[p]
    assert res.lower[p] <= 10 - 5 and res.upper[p] >= 10 + 5
    with_moves = audit(t.replace(status=new), mode="verdict", moves=moves)
    assert with_moves.n_moves_rejected == 0 and with_moves.protected[p]


def test_cube_sum_moves_a_primary_further_than_any_single_cube():
    # (a, x) = 10 needs 5.5 up; every leaf cube moves it up by 3 only, but two cubes
    # with no corner in common besides it add up: their sum is one move of 6
    t = _pair_table(((10, 3, 3), (3, 5, 1), (3, 1, 5)), up=5.5, down=1.0)
    p = t.cell("a", "x")
    new, left, moves = cube_repair(t, np.ones(t.n_cells), [p], return_moves=True)
    assert left.tolist() == [] and moves.shape[0] == 2
    assert abs(t.relations @ moves.T).max() <= 1e-9
    up_move = moves[np.flatnonzero(moves[:, p].toarray().ravel() > 0)[0]]
    assert up_move[0, p] >= 5.5
    res = audit(t.replace(status=new))
    assert res.protected[p] and res.upper[p] >= 16.0
    with_moves = audit(t.replace(status=new), mode="verdict", moves=moves)
    assert with_moves.n_moves_rejected == 0 and with_moves.protected[p]
