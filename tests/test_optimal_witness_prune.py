"""The witness prune on patterns whose suppressions fall into several components, with
several primaries in each: each attacker LP spans its primary's component alone, and a
witness that already moves another primary far enough stands for that primary's LP (so
does its negation, for the other direction, where it fits the cells' ranges).  None of
these may change a decision: the result is the check-by-check prune's, protected by the
independent LP oracle, and minimal."""
from __future__ import annotations

import numpy as np
import pytest

import lp_oracle
from tabprotect.model import Hierarchy, Table
from tabprotect.secondary import cost_vector
from tabprotect.secondary.attack_requirements import Requirements
from tabprotect.secondary.attacker_oracle import AttackerOracle
from tabprotect.secondary.optimal import OptimalOptions
from tabprotect.secondary.optimal.oracle import LPCount
from tabprotect.secondary.optimal.prune import _cell_components, prune, witness_prune

N = 9        # inner rows and columns; blocks of 3 x 3 on the diagonal


def _assert_protected_and_minimal(table, out, fixed):
    """The pattern protects every primary (scipy's LPs) and no cell it adds can go."""
    assert lp_oracle.protected(table, out, singleton=False).all()
    for i in np.flatnonzero(out & ~fixed):
        less = out.copy()
        less[i] = False
        assert not lp_oracle.protected(table, less, singleton=False).all()


def _block_table(seed: int, low: int = 10, down: float = 0.3
                 ) -> tuple[Table, np.ndarray]:
    """A 10 x 10 table (9 x 9 inner cells from ``low`` up, and totals) with two
    primaries in each of the three diagonal 3 x 3 blocks (upper level 0.3, lower level
    ``down`` times the value), and the pattern suppressing those blocks whole: the
    blocks share no row or column, so they are separate components."""
    rng = np.random.default_rng(seed)
    rows = Hierarchy.flat([f"r{i}" for i in range(N)], total="T")
    cols = Hierarchy.flat([f"c{i}" for i in range(N)], total="T")
    table = Table.from_arrays({"r": rows, "c": cols},
                              _with_totals(rng.integers(low, 40, size=(N, N))))
    status = table.status.copy()
    pattern = np.zeros(table.n_cells, bool)
    for b in range(3):
        inner = [(3 * b + i + 1) * (N + 1) + 3 * b + k + 1
                 for i in range(3) for k in range(3)]
        pattern[inner] = True
        first, second = rng.choice(inner, size=2, replace=False)
        status[[first, second]] = "U"
    level = np.where(status == "U", np.round(0.3 * table.value + 1), 0.0)
    lower = np.where(status == "U", np.round(down * table.value + 1), 0.0)
    return table.replace(status=status, upl=level, lpl=lower), pattern


def _with_totals(inner: np.ndarray) -> np.ndarray:
    """Row-major values of the table with its totals (each dimension's total first)."""
    full = np.zeros((N + 1, N + 1))
    full[1:, 1:] = inner
    full[1:, 0] = inner.sum(axis=1)
    full[0, 1:] = inner.sum(axis=0)
    full[0, 0] = inner.sum()
    return full.ravel()


@pytest.mark.parametrize("seed, low, down", [(0, 10, 0.3), (1, 10, 0.3), (2, 10, 0.3),
                                             (3, 10, 0.3), (4, 1, 0.1), (5, 1, 0.1),
                                             (6, 1, 0.6), (7, 1, 0.6)])
def test_witness_prune_over_components_takes_the_check_by_check_decisions(seed, low, down):
    """Small values leave some cells little room downwards (a witness's negation may not
    fit), and unequal levels give a primary's directions different caps."""
    table, pattern = _block_table(seed, low, down)
    req = Requirements.from_table(table, singleton=False)
    oracle = AttackerOracle(table, req)
    assert oracle.check(pattern, cuts=False).ok
    sub = oracle.A[:, np.flatnonzero(pattern)].tocsr()
    labels = _cell_components(sub[np.flatnonzero(np.diff(sub.indptr) > 0)],
                              int(pattern.sum()))
    assert len(np.unique(labels)) == 3
    fixed = table.status == "U"
    cost = cost_vector(table, "value")
    plain = prune(oracle, pattern, fixed, cost, None,
                  options=OptimalOptions(witness_prune=False))
    out = witness_prune(oracle, pattern, fixed, cost, None)
    assert out is not None and (out == plain).all()
    assert out.sum() < pattern.sum()
    _assert_protected_and_minimal(table, out, fixed)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_witness_prune_solves_no_lp_for_primaries_away_from_the_cells_it_tries(seed):
    """With the first two blocks' cells fixed, only the third block's cells can be
    published: the first two blocks' primaries cannot be affected, and the prune solves
    exactly the LPs it solves on the same table without their conditions, with the
    check-by-check prune's result, protected and minimal by the independent LP oracle."""
    table, pattern = _block_table(seed)
    fixed = table.status == "U"
    blocks = [[(3 * b + i + 1) * (N + 1) + 3 * b + k + 1 for i in range(3)
               for k in range(3)] for b in range(3)]
    fixed[blocks[0] + blocks[1]] = True
    cost = cost_vector(table, "value")
    far = np.zeros(table.n_cells, bool)
    far[blocks[0] + blocks[1]] = True
    alone = table.replace(status=np.where(far & (table.status == "U"), "S", table.status))
    outs, counts = [], []
    for t in (table, alone):
        req = Requirements.from_table(t, singleton=False)
        oracle = AttackerOracle(t, req)
        assert oracle.check(pattern, cuts=False).ok
        count = LPCount()
        outs.append(witness_prune(oracle, pattern, fixed, cost, None, count=count))
        counts.append(count.n)
        plain = prune(oracle, pattern, fixed, cost, None,
                      options=OptimalOptions(witness_prune=False))
        assert outs[-1] is not None and (outs[-1] == plain).all()
    assert req.primary.size < Requirements.from_table(table, singleton=False).primary.size
    out = outs[0]
    assert (outs[1] == out).all() and counts[0] == counts[1] > 0
    assert out.sum() < pattern.sum()
    _assert_protected_and_minimal(table, out, fixed)
