"""Small-count rounding's first solution: the LP relaxation's choice improved by swaps.

The relaxation of :func:`tabprotect.rounding.small_count._deviation_program` is tight on
two-way tables (its vertex is integral there: no branch and bound at all). Elsewhere the
cells with the largest relaxed values go up, then pairs (one up goes down, one down goes
up, so the count is kept) are swapped while a swap lowers the deviation; the result is the
MILP's first incumbent and, with the relaxation's bound, its proven gap.  Between the
swaps and branch and bound, perturbed swaps (an iterated local search) leave the swaps'
local optimum: on large 3-D tables branch and bound rarely improves its first incumbent
within its budget, while a few dozen kicked swap searches do.
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

__all__ = ["DeviationTerms", "relaxed_choice", "swap_search", "perturbed_swaps"]


class DeviationTerms:
    """``sum_t w_t |base (S d)_t - s_t| + c d + offset``: the aggregates' deviation as a
    function of the 0/1 choice ``d`` (``S`` the aggregates with two or more small cells)."""

    def __init__(self, S: sp.csr_matrix, s: np.ndarray, w: np.ndarray, c: np.ndarray,
                 offset: float, base: int):
        self.S, self.ST = S.tocsr(), S.T.tocsr()
        self.s, self.w, self.c, self.offset, self.base = s, w, c, offset, base

    def deviation(self, k: np.ndarray) -> np.ndarray:
        """Each aggregate's weighted deviation when ``k`` of its small cells go up."""
        return self.w * np.abs(self.base * k - self.s)

    def value(self, d: np.ndarray) -> float:
        return float(self.deviation(self.S @ d).sum() + self.c @ d + self.offset)


def relaxed_choice(x_relaxed: np.ndarray, n_up: int) -> np.ndarray:
    """The ``n_up`` cells with the largest relaxed values go up (ties: the first)."""
    order = np.lexsort((np.arange(len(x_relaxed)), -np.round(x_relaxed, 9)))
    d = np.zeros(len(x_relaxed))
    d[order[:n_up]] = 1.0
    return d


def swap_search(terms: DeviationTerms, d: np.ndarray) -> np.ndarray:
    """Best-improvement swaps from ``d`` until none lowers the deviation.

    A swap takes cell ``i`` down and ``j`` up: every aggregate holding one of them moves
    by one step, one holding both does not move, so the change is
    ``down_i + up_j - shared_ij``, ``shared_ij`` the sum over aggregates holding both of
    their curvature ``g(k-1) + g(k+1) - 2 g(k) >= 0`` (an aggregate holding every small
    cell never moves: left out). Only aggregates near their kink have curvature, so
    ``shared`` is a sparse product; a pair outside its pattern changes by at least
    ``min down + min up``, which the pair of the two minima reaches or beats.
    """
    d = d.copy()
    moves = np.diff(terms.S.indptr) < len(d)  # an aggregate of every small cell stays
    while True:  # each swap lowers the deviation, which is bounded below: it ends
        k = terms.S @ d
        now = terms.deviation(k)
        step_down = np.where(moves, terms.deviation(k - 1) - now, 0.0)
        step_up = np.where(moves, terms.deviation(k + 1) - now, 0.0)
        up, down = np.flatnonzero(d > 0.5), np.flatnonzero(d < 0.5)
        if len(up) == 0 or len(down) == 0:
            break
        gain_down = terms.ST[up] @ step_down - terms.c[up]
        gain_up = terms.ST[down] @ step_up + terms.c[down]
        curve = step_down + step_up
        rows = np.flatnonzero(curve > 1e-12)
        shared = (terms.ST[up][:, rows] @ sp.diags(curve[rows])
                  @ terms.S[rows][:, down]).tocoo()
        i, j = int(np.argmin(gain_down)), int(np.argmin(gain_up))
        best = gain_down[i] + gain_up[j] - _entry(shared, i, j)
        if shared.nnz:
            change = gain_down[shared.row] + gain_up[shared.col] - shared.data
            e = int(np.argmin(change))
            if change[e] < best:
                i, j, best = int(shared.row[e]), int(shared.col[e]), change[e]
        if best >= -1e-9:
            break
        d[up[i]], d[down[j]] = 0.0, 1.0
    return d


def perturbed_swaps(terms: DeviationTerms, d: np.ndarray, *, kick: int, stall: int,
                    end: float | None, target: float, seed: int = 0) -> np.ndarray:
    """Iterated local search from the swaps' local optimum ``d``: ``kick`` random cells up
    go down and as many down go up (the count is kept), then :func:`swap_search`; the
    result becomes the current choice when it is no worse (plateaus are crossed) and the
    best when it is better.  Ends after ``stall`` rounds without a better choice, at
    ``end`` (``time.perf_counter()`` seconds; None: no end), or when the best reaches
    ``target`` (a value no choice can beat).  ``seed`` fixes the kicks: the same input
    gives the same choice unless ``end`` cuts the rounds short.

    Returns the best choice (``d`` itself when no round improves it).
    """
    rng = np.random.default_rng(seed)
    best = current = d
    best_value = current_value = terms.value(d)
    idle = 0
    while idle < stall and best_value > target and (end is None or time.perf_counter() < end):
        up, down = np.flatnonzero(current > 0.5), np.flatnonzero(current < 0.5)
        k = min(kick, len(up), len(down))
        if k == 0:
            break
        trial = current.copy()
        trial[rng.choice(up, k, replace=False)] = 0.0
        trial[rng.choice(down, k, replace=False)] = 1.0
        trial = swap_search(terms, trial)
        value = terms.value(trial)
        idle += 1
        if value <= current_value:
            current, current_value = trial, value
            if value < best_value - 1e-9:
                best, best_value, idle = trial, value, 0
    return best


def _entry(M: sp.coo_matrix, i: int, j: int) -> float:
    hit = (M.row == i) & (M.col == j)
    return float(M.data[hit].sum())
