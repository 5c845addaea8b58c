"""Integral witnesses against the single-contributor attack
(tabprotect.secondary.attack_witnesses) and the audit's check of candidate moves per
attacker, against an independent integer audit (tests/lp_oracle.py) and brute force."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from helpers import flat_count_table
from lp_oracle import protected as oracle_protected
from test_audit_attack_groups import _brute_attacked
from tabprotect.audit import AuditSettings, audit
from tabprotect.model import Hierarchy, Table, aggregate_leaves
from tabprotect.secondary import protect
from tabprotect.model.relations import linked_components
from tabprotect.secondary.attack_witnesses import (_integral_move, attack_witnesses,
                                                  attacker_classes, least_move)
from tabprotect.secondary.gauss import gauss
from tabprotect.secondary.protect_settings import ProtectSettings
from tabprotect.secondary.witness_search import WitnessSearchSettings


def _attack_pattern(seed: int, leaves: tuple[int, ...], mean: float = 2.0,
                    empty: str = "publish") -> Table:
    """gauss's pattern against the attack of a random flat count table (``empty``: its
    policy, the suppressed counts' bound 1 or 0)."""
    t = flat_count_table(leaves, seed, mean).replace(empty=empty)
    return t.replace(status=gauss(t, t.value.copy(), singleton=True).status)


#: a screen without aggregate or local LPs, nor the attackers' least moves and groups:
#: only the true table and the moves can certify a primary
BARE = AuditSettings(local_min_vars=0, local_hops=(), aggregate_rounds=0,
                     attacker_move_lps=0, attacker_group_min=0)


@pytest.mark.parametrize("seed,leaves", [(0, (4, 4, 3)), (1, (5, 4, 4)), (2, (4, 4, 4))])
def test_moves_are_integral_tables_and_certify_only_what_the_oracle_protects(seed, leaves):
    # the box moves only: the component pass's one-way moves (their mirror image need
    # not be a table, as where a count 1 sits at its bound 1) are the next test's
    t = _attack_pattern(seed, leaves)
    prim = t.status == "U"
    out = attack_witnesses(t, np.flatnonzero(prim), None,
                           WitnessSearchSettings(attack_component_primaries=0))
    D = out.moves.toarray()
    assert len(D) > 0
    assert np.array_equal(D, np.round(D)) and not D[:, ~t.suppressed].any()
    assert np.abs(t.relations @ D.T).max() == 0
    for d in D:   # within both directions' bounds: the move and its mirror are tables
        for s in (1, -1):
            assert (t.value + s * d >= t.lb).all() and (t.value + s * d <= t.ub).all()
    truth = oracle_protected(t, singleton=True, integer=True)
    with_moves = audit(t, singleton=True, integer=True, mode="screen", settings=BARE,
                       moves=out.moves)
    without = audit(t, singleton=True, integer=True, mode="screen", settings=BARE)
    certified = with_moves.protected & prim
    assert not (certified & ~truth).any()
    assert (certified & ~without.protected).sum() > 0
    # what the search counts as reached is no certificate; the audit's verdict with
    # all its passes is the oracle's, with and without the moves
    assert truth[out.reached].all()
    full = audit(t, singleton=True, integer=True, mode="verdict", moves=out.moves)
    np.testing.assert_array_equal(full.protected[prim], truth[prim])


def test_component_moves_certify_only_what_the_oracle_protects():
    # every box too large: each primary gets the pair of one-way moves over its whole
    # component (the least move, or a MILP over the box of the codes it touches)
    t = _attack_pattern(0, (4, 4, 3))
    prim = t.status == "U"
    out = attack_witnesses(t, np.flatnonzero(prim), None, WitnessSearchSettings(
        max_cells=0, attack_component_primaries=10_000))
    D = out.moves.toarray()
    assert len(D) > 0 and len(out.reached) > 0
    assert np.array_equal(D, np.round(D)) and not D[:, ~t.suppressed].any()
    assert np.abs(t.relations @ D.T).max() == 0
    for d in D:   # the move itself is a table (its mirror image need not be)
        assert (t.value + d >= t.lb).all() and (t.value + d <= t.ub).all()
    truth = oracle_protected(t, singleton=True, integer=True)
    assert truth[out.reached].all()
    with_moves = audit(t, singleton=True, integer=True, mode="screen", settings=BARE,
                       moves=out.moves)
    certified = with_moves.protected & prim
    assert not (certified & ~truth).any()
    assert np.isin(np.flatnonzero(certified), out.reached).sum() > 0


def _checked_move(t: Table, cells: np.ndarray, d: np.ndarray) -> np.ndarray:
    """The move over all cells, checked without the search's code: integral, inside
    the pattern, every relation kept and every cell within its bounds."""
    full = np.zeros(t.n_cells)
    full[cells] = d
    assert np.array_equal(full, np.round(full)) and not full[~t.suppressed].any()
    assert np.abs(t.relations @ full).max() == 0
    assert (t.value + full >= t.lb).all() and (t.value + full <= t.ub).all()
    return full


@pytest.mark.parametrize("seed,leaves,p", [(6, (4, 4, 3), 25), (0, (5, 4, 4), 58)])
def test_a_half_integral_least_move_doubled_is_the_integral_move_without_a_milp(
        seed, leaves, p):
    # suppressed counts may be 0 (empty="suppress"): fractional vertices; none of these
    # patterns has a half-integral least move at the bound 1
    t = _attack_pattern(seed, leaves, empty="suppress")
    comp = np.sort(next(c for c in linked_components(t.relations, t.suppressed) if p in c))
    for up, down in ((1.0, 0.0), (0.0, 1.0)):
        lp = least_move(t, comp, p, up, down)
        assert np.abs(lp - np.round(lp)).max() == pytest.approx(0.5)   # half-integral
        found, solves = _integral_move(t, comp, p, up, down, WitnessSearchSettings(), None)
        assert solves == 1   # the LP alone, no MILP
        full = _checked_move(t, *found)
        assert (full[p] >= up) if up else (full[p] <= -down)
        np.testing.assert_array_equal(full[comp], 2 * lp)
        # without multiples the MILP over the codes' box finds a move too, one solve more
        found, solves = _integral_move(t, comp, p, up, down,
                                       WitnessSearchSettings(least_move_multiple=1), None)
        assert solves == 2
        full = _checked_move(t, *found)
        assert (full[p] >= up) if up else (full[p] <= -down)


def test_every_attacker_a_move_of_a_primary_touches_gets_another_that_leaves_it():
    t = _attack_pattern(1, (5, 4, 4))
    attacker = attacker_classes(t)
    out = attack_witnesses(t, np.flatnonzero(t.status == "U"), None)
    assert len(out.reached) > 0
    D = out.moves.toarray()
    for p in out.reached[:30]:
        through = D[np.abs(D[:, p]) >= 1]
        moved = [set(attacker[np.flatnonzero(row)]) - {-1, attacker[p]} for row in through]
        every = set.intersection(*moved) if moved else {None}
        assert not every, f"primary {p}: every move moves attacker(s) {every}"


def _square(freq_b: int) -> Table:
    """A 2x2 count table, every interior cell suppressed and the margins published:
    cell (0,0) = 2 the primary, (0,1) = 1 with ``freq_b`` contributors. Its only moves
    are the cube t * (1, -1, -1, 1), so a contributor of (0,1) pins the primary. Empty
    cells may be suppressed (bound 0): the cube takes (0,1) to 0."""
    rows = Hierarchy.flat(["r0", "r1"], total="T")
    cols = Hierarchy.flat(["c0", "c1"], total="T")
    grid = np.zeros((3, 3))
    grid[1:, 1:] = [[2, 1], [3, 2]]
    v = aggregate_leaves(grid.ravel(), [rows, cols])
    freq = v.copy()
    freq[5] = freq_b
    status = np.full(9, "S")
    status[[4, 5, 7, 8]] = ["U", "M", "M", "M"]
    return Table.from_arrays({"r": rows, "c": cols}, v, freq, kind="frequency",
                             empty="suppress", status=status,
                             upl=np.where(np.arange(9) == 4, 1.0, 0.0),
                             spl=np.where(np.arange(9) == 4, 2.0, 0.0))


def test_bad_hints_are_rejected_per_attacker():
    t = _square(1)
    assert _brute_attacked(t, singleton=True)[4]
    assert oracle_protected(t, integer=True)[4]
    cube = sp.csr_matrix(np.array([[0, 0, 0, 0, 1, -1, 0, -1, 1]], float))
    broken = sp.csr_matrix(np.array([[0, 0, 0, 0, 1, 0, 0, -1, 0]], float))  # a row sum
    too_far = sp.csr_matrix(np.array([[0, 0, 0, 0, 5, -5, 0, -5, 5]], float))
    for mode in ("verdict", "screen", "intervals"):
        # the cube moves the cell the attacker knows: no witness against it
        res = audit(t, singleton=True, integer=True, mode=mode, moves=cube)
        assert res.attacked[4] and not res.protected[4] and not res.passed, mode
    for moves in (broken, too_far):
        res = audit(t, singleton=True, integer=True, mode="verdict", moves=moves,
                    settings=BARE)
        assert res.attacked[4] and not res.protected[4]
    # a hint that breaks a relation is rejected outright, even without the attack
    res = audit(t, integer=True, mode="screen", moves=broken, settings=BARE)
    assert res.n_moves_rejected == 1 and not res.protected[4]
    # the cube is a witness against the outside intruder, and against every attacker
    # once (0,1) has two contributors; shrunk into the bounds for the LP intruder (an
    # integer intruder takes no shrunk move: it need not be integral)
    for singleton, freq_b in ((False, 1), (True, 2)):
        for integer, moves in ((True, cube), (False, too_far), (True, too_far)):
            res = audit(_square(freq_b), singleton=singleton, integer=integer,
                        mode="screen", moves=moves, settings=BARE)
            assert res.protected[4] == (moves is cube or not integer), (integer, singleton)


def test_protect_searches_the_attack_witnesses_before_the_first_audit():
    # every component counts as large: the search runs before the first audit, and the
    # final pattern is checked by the independent integer audit with the attack
    t = flat_count_table((5, 4, 4), 1, 2.0)
    res = protect(t, method="gauss", cost="value", singleton=True,
                  settings=ProtectSettings(interval_audit_max_work=0,
                                           witness_search=WitnessSearchSettings(
                                               attack_min_cells=0)))
    assert res.audit.passed
    assert oracle_protected(res.confidential_table, singleton=True, integer=True)[
        t.status == "U"].all()
    assert any("integral witnesses against the attackers" in n for n in res.notes)


@pytest.mark.parametrize("seed,leaves", [(0, (4, 4, 3)), (1, (5, 4, 4))])
def test_known_moves_serve_primaries_without_milps_and_the_audit_backs_them(seed, leaves):
    # gauss's own integral moves handed to the search: the primaries they serve need no
    # MILP; what the search counts as reached, the oracle protects, and a screen with
    # only the true table and the moves certifies it
    t = flat_count_table(leaves, seed, 2.0)
    g = gauss(t, t.value.copy(), singleton=True)
    t = t.replace(status=g.status)
    prim = np.flatnonzero(t.status == "U")
    alone = attack_witnesses(t, prim, None)
    seeded = attack_witnesses(t, prim, None, known=g.moves)
    assert g.moves.shape[0] > 0 and seeded.milps < alone.milps
    truth = oracle_protected(t, singleton=True, integer=True)
    assert truth[seeded.reached].all()
    both = sp.vstack([g.moves, seeded.moves], format="csr")
    screen = audit(t, singleton=True, integer=True, mode="screen", settings=BARE,
                   moves=both)
    assert screen.protected[seeded.reached].all()
    # moves that break a relation serve nothing: the search is the one without them
    broken = g.moves.tolil()
    for r in range(broken.shape[0]):
        broken[r, broken.rows[r][0]] = 0.0
    spoiled = attack_witnesses(t, prim, None, known=broken.tocsr())
    assert spoiled.milps == alone.milps
    np.testing.assert_array_equal(spoiled.reached, alone.reached)
