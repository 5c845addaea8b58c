"""Least moves against many attackers at once (tabprotect.audit.attack_moves): the same
verdict cell by cell as separate attacker passes, and as brute force on tiny count
tables; a move counts only against the attackers whose knowledge it keeps."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from test_audit_attack_groups import _brute_attacked, _tiny_pattern
from test_audit_modes import _flat_table, _pattern
from tabprotect.audit import AuditSettings, audit
from tabprotect.audit.attack_moves import _MoveBook
from tabprotect.audit.system import Knowledge, ReducedSystem

#: separate passes only: no least moves, no group passes
SEPARATE = AuditSettings(attacker_move_lps=0, attacker_group_min=0)
MOVES = AuditSettings(attacker_move_lps=8, attacker_group_min=0)
#: the attacker-weighted move pair first for every primary, and never
PAIR = AuditSettings(attacker_move_lps=8, attacker_group_min=0, attacker_pair_min=0)
NO_PAIR = AuditSettings(attacker_move_lps=8, attacker_group_min=0,
                        attacker_pair_min=10 ** 9)


@pytest.mark.parametrize("seed,leaves", [(6, (3, 2, 2)), (8, (3, 2, 2)), (14, (3, 2, 2)),
                                         (8, (2, 2, 3)), (10, (2, 3, 2))])
@pytest.mark.parametrize("settings", [PAIR, NO_PAIR], ids=["pair", "no-pair"])
@pytest.mark.parametrize("empty", ["publish", "suppress"])
def test_least_moves_match_brute_force(seed, leaves, settings, empty):
    # every integral table of a tiny 3-D count table enumerated (3-D: where the moves
    # run): the attackers' verdict with least moves first (with and without the
    # attacker-weighted pair) is the definition's, for single contributors and
    # coalitions of two; suppressed counts at least 1 (empty cells published) or 0
    t = _tiny_pattern(seed, leaves, empty)
    safe = (t.status == "U") & audit(t, integer=True).protected
    assert safe.any()
    used = 0
    for singleton, coalition in ((True, None), (False, 2)):
        truth = _brute_attacked(t, singleton, coalition or 0)[safe]
        for mode in ("intervals", "verdict"):
            res = audit(t, singleton=singleton, coalition=coalition, integer=True,
                        mode=mode, settings=settings)
            np.testing.assert_array_equal(res.attacked[safe], truth,
                                          err_msg=f"{mode}, coalition {coalition}")
            used += res.n_attacker_moves
    assert used > 0


def _count_pattern(seed: int, leaves=None):
    rng = np.random.default_rng(seed)
    leaves = leaves or tuple(int(k) for k in rng.integers(2, 5, 3))
    return _pattern(rng, _flat_table(rng, leaves, "frequency"), "frequency")


@pytest.mark.parametrize("seed", range(12))
def test_least_moves_same_verdict_as_separate_passes(seed):
    # random 3-D count tables, single contributors: cell by cell the same verdict as
    # each attacker's own pass alone, in both modes
    t = _count_pattern(seed)
    for mode in ("verdict", "intervals"):
        alone = audit(t, singleton=True, mode=mode, settings=SEPARATE)
        for settings in (MOVES, PAIR, NO_PAIR):
            moved = audit(t, singleton=True, mode=mode, settings=settings)
            np.testing.assert_array_equal(moved.attacked, alone.attacked, err_msg=mode)
            np.testing.assert_array_equal(moved.protected, alone.protected, err_msg=mode)


def test_the_pair_runs_only_for_primaries_with_many_attackers_open():
    # a 180-cell 3-D pattern: with the pair for every primary the moves solve other
    # LPs than without it; a threshold above any primary's attackers is the same run as
    # no pair at all, LP for LP
    rng = np.random.default_rng(2)
    t = _pattern(rng, _flat_table(rng, (5, 5, 4), "frequency"), "frequency")
    runs = {name: audit(t, singleton=True, mode="verdict", settings=s)
            for name, s in (("pair", PAIR), ("none", NO_PAIR),
                            ("above", AuditSettings(attacker_move_lps=8,
                                                    attacker_group_min=0,
                                                    attacker_pair_min=t.n_cells)))}
    assert runs["pair"].n_lp != runs["none"].n_lp
    assert runs["above"].n_lp == runs["none"].n_lp
    assert runs["above"].n_attacker_moves == runs["none"].n_attacker_moves
    for res in runs.values():
        np.testing.assert_array_equal(res.attacked, runs["none"].attacked)


def test_least_moves_certify_and_spare_lps():
    # on 180-cell 3-D patterns the moves certify pairs the separate passes solve LPs
    # for; on a 2-D table (integral LP vertices) they do not run. Suppressed counts may
    # be 0 here (empty="suppress"): at bound 1 most of these primaries fail the outside
    # intruder, and the few attacker passes left are not where moves spare LPs
    used = spared = 0
    for seed in range(1, 12, 2):
        rng = np.random.default_rng(seed)
        t = _pattern(rng, _flat_table(rng, (5, 5, 4), "frequency"), "frequency"
                     ).replace(empty="suppress")
        alone = audit(t, singleton=True, mode="verdict", settings=SEPARATE)
        moved = audit(t, singleton=True, mode="verdict", settings=MOVES)
        np.testing.assert_array_equal(moved.attacked, alone.attacked)
        used += moved.n_attacker_moves
        spared += alone.n_lp - moved.n_lp
        assert alone.n_attacker_moves == 0
    assert used > 0 and spared > 0
    flat = _pattern(np.random.default_rng(2), _flat_table(np.random.default_rng(2), (8, 8),
                                                           "frequency"), "frequency")
    assert audit(flat, singleton=True, mode="verdict", settings=MOVES).n_attacker_moves == 0


def _square_system() -> ReducedSystem:
    # a 2x2 block of counts with every margin published: x0 + x1 = 3, x2 + x3 = 3,
    # x0 + x2 = 3, x1 + x3 = 3; the one move is +1 -1 -1 +1
    A = sp.csr_matrix(np.array([[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0], [0, 1, 0, 1]],
                               float))
    value = np.array([1.0, 2.0, 2.0, 1.0])
    return ReducedSystem(A, A @ value, np.zeros(4), np.zeros(4), np.full(4, np.inf), value)


def test_a_move_counts_only_against_attackers_it_keeps():
    system = _square_system()
    knows_0 = Knowledge.exact([0], [1.0])
    knows_3_at_least = Knowledge(np.array([3]), np.array([1.0]), np.array([np.inf]))
    knows_1_at_least = Knowledge(np.array([1]), np.array([2.0]), np.array([np.inf]))
    book = _MoveBook(system, [knows_0, knows_3_at_least, knows_1_at_least], integer=True)
    book.add(np.array([1.0, -1.0, -1.0, 1.0]))
    lo, hi = book.reach(0, np.arange(3))
    # attacker 0 knows x0: no move of it; attacker 1 knows x3 >= 1: the move (x3 = 2)
    # holds, its mirror (x3 = 0) does not; attacker 2 knows x1 >= 2: the move (x1 = 1)
    # does not hold, its mirror (x1 = 3) does
    assert lo.tolist() == [1.0, 1.0, 0.0] and hi.tolist() == [1.0, 2.0, 1.0]


def test_least_move_keeps_the_attackers_knowledge():
    system = _square_system()
    book = _MoveBook(system, [Knowledge.exact([1], [2.0]), Knowledge.exact([3], [1.0])],
                     integer=True)
    counters = {"lp": 0}
    # every move of x0 moves x1 and x3: none within what either attacker knows
    assert book.least_move(0, "max", 2.0, 0, counters) is None
    assert book.least_move(0, "max", 2.0, 1, counters) is None
    free = _MoveBook(system, [Knowledge.exact([2], [2.0])], integer=True)
    assert free.least_move(0, "max", 2.0, 0, counters) is None
    none_known = _MoveBook(system, [Knowledge(np.zeros(0, np.int64), np.zeros(0),
                                              np.zeros(0))], integer=True)
    d = none_known.least_move(0, "max", 2.0, 0, counters)
    assert d.tolist() == [1.0, -1.0, -1.0, 1.0]


def _strip_system() -> ReducedSystem:
    # a 2x3 block of counts with every margin published (cells row-major: x0 x1 x2 /
    # x3 x4 x5): x0 moves with column 1 (x1, x3, x4) or column 2 (x2, x3, x5)
    A = sp.csr_matrix(np.array([[1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1],
                                [1, 0, 0, 1, 0, 0], [0, 1, 0, 0, 1, 0],
                                [0, 0, 1, 0, 0, 1]], float))
    value = np.full(6, 2.0)
    return ReducedSystem(A, A @ value, np.zeros(5), np.zeros(6), np.full(6, np.inf), value)


def test_attack_move_avoids_dear_attackers_and_keeps_the_held():
    system = _strip_system()
    knows = [Knowledge.exact([1], [2.0]), Knowledge.exact([2], [2.0])]
    counters = {"lp": 0}
    for dear, free in ((0, 2), (1, 1)):
        book = _MoveBook(system, knows, integer=False)
        d = book.attack_move(0, "max", 3.0, np.array([dear]), np.zeros(0, np.int64),
                             1000.0, counters)
        # the move through the dear attacker's column costs more: the other one
        assert d[0] == pytest.approx(1.0) and d[dear + 1] == pytest.approx(0.0)
        assert abs(d[free]) == pytest.approx(1.0)
    book = _MoveBook(system, knows, integer=False)
    d = book.attack_move(0, "max", 3.0, np.array([1]), np.array([0]), 1000.0, counters)
    assert d[1] == 0.0 and d[0] == pytest.approx(1.0)   # attacker 0 held: column 2
    assert book.attack_move(0, "max", 3.0, np.array([0, 1]), np.array([0, 1]),
                            1000.0, counters) is None   # both held: no move left
    # the model's objective and bounds are back to the least move's afterwards
    assert book.least_move(0, "max", 3.0, 0, counters)[1] == 0.0
    assert np.abs(book.least_move(0, "max", 3.0, 1, counters)).sum() == pytest.approx(4.0)
