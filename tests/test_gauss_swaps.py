"""gauss's swap pass (tabprotect.secondary.gauss.swaps): every pattern it returns is judged
by the independent LP oracle (tests/lp_oracle.py); on a small table its result is the
cheapest passing pattern found by brute force."""
from __future__ import annotations

import itertools
import time

import numpy as np
import pytest

from lp_oracle import protected as oracle_protected
from tabprotect.model import Hierarchy, Table
from tabprotect.secondary.gauss import gauss
from tabprotect.secondary.gauss.swaps import swap
from tabprotect.secondary.prune import prune
from test_gauss_widths import SMALL, linked


def _short(table, status, singleton=True):
    ok = oracle_protected(table.replace(status=status), singleton=singleton)
    return int((~ok & (table.status == "U")).sum())


def _three_by_three():
    """Rows and columns 1-3 with totals (cell (i, j) at 4 i + j, code 0 the total); the
    primary (1, 1) needs 5 either way; margins cost 10^6, so a pattern with one costs
    more than any pattern of inner cells that passes."""
    h = Hierarchy.flat(["1", "2", "3"], total="T")
    inner = np.array([[20, 30, 40], [25, 35, 45], [22, 33, 44]], float)
    grid = np.zeros((4, 4))
    grid[1:, 1:] = inner
    grid[0, 1:] = inner.sum(0)
    grid[1:, 0] = inner.sum(1)
    grid[0, 0] = inner.sum()
    status = np.full(16, "S")
    status[5] = "U"
    upl = np.where(status == "U", 5.0, 0.0)
    t = Table.from_arrays({"r": h, "c": h}, grid.ravel(), np.full(16, 10.0),
                          status=status, upl=upl, lpl=upl.copy())
    cost = np.full(16, 1e6)
    cost[[6, 9]] = 10.0            # (1, 2), (2, 1)
    cost[10] = 1000.0              # (2, 2): the dear corner of the first pattern
    cost[[13, 14]] = 30.0          # (3, 1), (3, 2)
    cost[[7, 11, 15]] = 500.0      # column 3
    return t, cost


def test_a_dear_secondary_is_swapped_for_cheaper_cells_down_to_the_optimum():
    t, cost = _three_by_three()
    start = t.status.copy()
    start[[6, 9, 10]] = "M"        # the 4-cycle through the dear (2, 2): protected
    assert _short(t, start, singleton=False) == 0
    pruned = prune(t, start, cost)
    assert pruned.pruned == 0      # every cell of the cycle is needed: pruning is stuck
    out = swap(t, pruned.status, cost, pruned.witnesses)
    assert out.swapped >= 1 and not out.timed_out
    assert _short(t, out.status, singleton=False) == 0
    found = cost[out.status == "M"].sum()
    assert found == pytest.approx(cost[start == "M"].sum() - out.saved)
    # brute force over the inner cells (a margin costs more than any of these patterns)
    best = np.inf
    inner = [5 + 4 * i + j for i in range(3) for j in range(3) if (i, j) != (0, 0)]
    for k in range(1, len(inner) + 1):
        for cells in itertools.combinations(inner, k):
            if cost[list(cells)].sum() >= best:
                continue
            trial = t.status.copy()
            trial[list(cells)] = "M"
            if _short(t, trial, singleton=False) == 0:
                best = cost[list(cells)].sum()
    assert best < cost[start == "M"].sum()
    assert found == pytest.approx(best)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_gauss_with_swaps_passes_and_is_never_dearer(seed):
    t = linked(SMALL, seed=seed)
    cost = t.value.copy()
    plain = gauss(t, cost, swaps=False)
    out = gauss(t, cost)
    assert "swapped" in out.details and "swapped" not in plain.details
    assert _short(t, out.status) == 0
    assert cost[out.status == "M"].sum() <= cost[plain.status == "M"].sum()


def test_swaps_make_a_gauss_pattern_cheaper_on_a_linked_table():
    t = linked(((3, 2), (3,), (3,), (2,)), seed=7)   # 300 cells
    cost = t.value.copy()
    plain = gauss(t, cost, swaps=False)
    out = gauss(t, cost)
    assert out.details["swapped"] > 0
    assert _short(t, out.status) == 0
    assert cost[out.status == "M"].sum() < cost[plain.status == "M"].sum()


def test_swap_pass_stops_at_its_deadline_and_keeps_the_pattern():
    t, cost = _three_by_three()
    start = t.status.copy()
    start[[6, 9, 10]] = "M"
    pruned = prune(t, start, cost)
    out = swap(t, pruned.status, cost, pruned.witnesses, deadline=time.perf_counter() - 1)
    assert out.timed_out and out.swapped == 0 and (out.status == start).all()
