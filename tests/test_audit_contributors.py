"""The attackers' check of candidate moves (tabprotect.audit.contributors): which
targets the moves certify against each attacker, against the row-by-row rule."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

from helpers import random_moves
from test_audit import _absorb_moves_one_by_one
from tabprotect.audit.contributors import Attacker, _left_by_moves
from tabprotect.audit.system import Knowledge
from tabprotect.audit_result import meets_requirement


@dataclass
class _System:
    value: np.ndarray
    lb: np.ndarray
    ub: np.ndarray

    @property
    def k(self) -> int:
        return len(self.value)

    def bounds(self, fixed=None):
        return (self.lb.copy(), self.ub.copy()) if fixed is None else \
            fixed.bounds(self.lb, self.ub)


@dataclass
class _Task:
    system: _System
    moves: sp.csr_matrix
    integer: bool
    req_lo: np.ndarray
    req_hi: np.ndarray
    req_w: np.ndarray


def _attacker(rng, k: int, value: np.ndarray, partial: bool) -> Attacker:
    cells = np.unique(rng.integers(0, k, int(rng.integers(1, 4))))
    lower, upper = value[cells].copy(), value[cells].copy()
    if partial:
        # a coalition's partial sum: a lower bound below the value, no upper one
        upper[0] = np.inf
        lower[0] -= rng.integers(0, 3)
    return Attacker(Knowledge(cells, lower, upper), cells)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 100_000), st.booleans())
def test_property_targets_left_by_moves_as_row_by_row_per_attacker(seed, integer):
    # the shared reach (attackers who know exact values) and the per-attacker
    # absorption (partial knowledge) leave exactly the targets the row-by-row rule,
    # with the attacker's bounds and its exactly known cells frozen, leaves
    rng = np.random.default_rng(seed)
    k, m = int(rng.integers(2, 14)), int(rng.integers(1, 15))
    value, lb, ub, moves = random_moves(rng, k, m, top=12, room=6, step=4, density=0.35)
    req_lo = value - rng.integers(0, 3, k)
    req_hi = value + rng.integers(0, 3, k)
    req_w = rng.integers(0, 4, k).astype(float)
    task = _Task(_System(value, lb, ub), moves, integer, req_lo, req_hi, req_w)
    attackers = [_attacker(rng, k, value, rng.random() < 0.3)
                 for _ in range(int(rng.integers(1, 6)))]
    targets_of = [np.setdiff1d(np.flatnonzero(rng.random(k) < 0.7), a.members)
                  for a in attackers]
    got = _left_by_moves(task, attackers, targets_of)
    for attacker, targets, left in zip(attackers, targets_of, got):
        a_lb, a_ub = attacker.knowledge.bounds(lb, ub)
        frozen = np.zeros(k, dtype=bool)
        frozen[attacker.knowledge.known] = True
        lo, hi = value.copy(), value.copy()
        _absorb_moves_one_by_one(moves, value, a_lb, a_ub, lo, hi, integer, frozen)
        ok = meets_requirement(lo[targets], hi[targets], req_lo[targets], req_hi[targets],
                               req_w[targets], value[targets])
        np.testing.assert_array_equal(left, targets[~ok])
