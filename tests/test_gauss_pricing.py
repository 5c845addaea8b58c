"""The attack step's priced LP (tabprotect/secondary/gauss/pricing.py): solved on a few
cells and those that price out, it ends at the optimum of the LP over every cell."""
import numpy as np
import pytest

from helpers import flat_count_table
from tabprotect.secondary.base import cost_vector
from tabprotect.secondary.gauss import gauss
from tabprotect.secondary.gauss.attack import AttackStep
from tabprotect.secondary.gauss.pricing import priced_solve


def _widened_lps(seed: int, held: bool):
    """Per condition of a 3-D count table's gauss pattern its widened protection LP
    (weights, split rows by columns, bounds) and the primary's position in it."""
    t = flat_count_table((4, 4, 3), seed, 1.5)
    cost = cost_vector(t, "value")
    z = np.isin(gauss(t, cost, singleton=True, attack="never").status, ("U", "M"))
    step = AttackStep(t, cost)
    for cond in step.conditions():
        comp = step._component(cond.cell, z, True)
        keep = None
        if held:
            keep = (step.attacker[comp.cells] >= 0) & \
                (step.attacker[comp.cells] != step.attacker[cond.cell])
        lp = step._attack_lp(cond, comp, z, keep)
        if lp is not None:
            yield lp, comp.split.tocsc(), int(np.searchsorted(comp.cells, cond.cell))


@pytest.mark.parametrize("seed", [2, 12])
@pytest.mark.parametrize("held", [False, True])
def test_priced_from_the_primary_alone_reaches_the_whole_lps_optimum(seed, held):
    # from the primary's cell alone the stand-in carries the first LP and the cells
    # that price out join round after round; the point returned is feasible for the
    # whole LP and as cheap as its optimum
    solved = 0
    for (weights, A, lo, hi), split, k in _widened_lps(seed, held):
        whole = AttackStep._lp_model(weights, A, lo, hi, presolve=False).solve()
        start = np.zeros(split.shape[1] // 2, bool)
        start[k] = True
        x = priced_solve(weights, split, lo, hi, start, 60.0, rounds=50)
        if whole.status != "optimal":
            assert x is None
            continue
        assert x is not None
        assert np.abs(split @ x).max() <= 1e-7
        assert (x >= lo - 1e-7).all() and (x <= hi + 1e-7).all()
        assert weights @ x == pytest.approx(whole.objective, rel=1e-5, abs=1e-9)
        solved += 1
    assert solved >= 10


def test_priced_hands_back_what_its_rounds_do_not_settle():
    # one round from the primary alone cannot end with a move (the stand-in carries
    # it): None, for the caller's LP over every cell
    (weights, _, lo, hi), split, k = next(_widened_lps(2, False))
    start = np.zeros(split.shape[1] // 2, bool)
    start[k] = True
    assert priced_solve(weights, split, lo, hi, start, 60.0, rounds=1) is None
