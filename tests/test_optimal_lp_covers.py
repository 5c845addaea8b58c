"""Cover cuts in the LP phase (``lp_phase_covers``, the least number of primaries for
them): the search with them reaches the brute-force optimum and a pattern the LP oracle
finds protected, and the LP phase's bound, which they lift where a level needs several
cells, never exceeds the optimum."""
from __future__ import annotations

import numpy as np
import pytest

import lp_oracle
from tabprotect.model import Hierarchy
from tabprotect.secondary import cost_vector
from tabprotect.secondary.optimal import OptimalOptions, optimal
from test_secondary_optimal import brute_force, hier_table, secondary_cost


def _run(table, cost, covers: bool, singleton: bool):
    return optimal(table, cost, singleton=singleton, options=OptimalOptions(
        engine="benders", lp_phase_covers=0 if covers else None))


def _protected(table, status, singleton: bool) -> bool:
    unpublished = np.isin(status, ("U", "M"))
    return bool(np.all(lp_oracle.protected(table, unpublished, singleton=singleton)))


@pytest.mark.parametrize("seed,singleton", [(4, False), (5, True), (9, False), (12, True)])
def test_lp_phase_covers_reach_the_brute_force_optimum(seed, singleton):
    table = hier_table(seed, n_primary=3)
    cost = cost_vector(table, "value")
    best = brute_force(table, cost, singleton=singleton)
    out = _run(table, cost, True, singleton)
    assert out.proven_optimal and out.details["lp_phase_covers"]
    assert secondary_cost(out.status, cost) == pytest.approx(best, rel=1e-9)
    assert out.details["root_bound"] <= best + 1e-6
    assert _protected(table, out.status, singleton)


def test_lp_phase_covers_lift_the_bound_and_keep_the_optimum():
    """A table where a primary needs several cells: the covers lift the LP phase's bound
    over the capacity cuts' (never past the optimum both runs prove)."""
    rows = Hierarchy.from_pairs([("T", "A"), ("T", "B"), ("A", "A1"), ("A", "A2"),
                                 ("B", "B1"), ("B", "B2")])
    cols = Hierarchy.flat(["a", "b", "c"], total="T")
    lifted = 0
    for seed in (5, 12, 16):
        table = hier_table(seed, n_primary=3, rows=rows, cols=cols)
        cost = cost_vector(table, "value")
        on, off = _run(table, cost, True, False), _run(table, cost, False, False)
        assert on.proven_optimal and off.proven_optimal
        opt = secondary_cost(off.status, cost)
        assert secondary_cost(on.status, cost) == pytest.approx(opt, rel=1e-9)
        assert on.details["root_bound"] <= opt + 1e-6
        assert _protected(table, on.status, False)
        lifted += on.details["root_bound"] > off.details["root_bound"] + 1e-6
    assert lifted == 3


def test_lp_phase_covers_need_the_primaries_asked_for():
    table = hier_table(5, n_primary=3)
    cost = cost_vector(table, "value")
    for least, used in ((3, True), (4, False), (None, False)):
        out = optimal(table, cost, singleton=False, options=OptimalOptions(
            engine="benders", lp_phase_covers=least))
        assert out.details["lp_phase_covers"] is used
