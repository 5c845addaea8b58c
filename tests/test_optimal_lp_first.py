"""The LP phase before the first repair (``lp_before_repair_min_cells``): the search
from the LP point's incumbent reaches the brute-force optimum, and its pattern passes
the independent audit, as the search from the repair of the primaries does."""
from __future__ import annotations

import numpy as np
import pytest

from tabprotect.audit import audit
from tabprotect.secondary import cost_vector
from tabprotect.secondary.optimal import OptimalOptions, optimal
from test_secondary_optimal import brute_force, hier_table, secondary_cost


@pytest.mark.parametrize("seed,freq_one", [(1, False), (4, True), (10, False)])
def test_lp_first_and_repair_first_reach_the_brute_force_optimum(seed, freq_one):
    table = hier_table(seed, n_primary=3, freq_one=freq_one)
    cost = cost_vector(table, "value")
    best = brute_force(table, cost, singleton=True)
    for min_cells, lp_first in ((0, True), (None, False), (10 ** 9, False)):
        out = optimal(table, cost, singleton=True, options=OptimalOptions(
            engine="benders", lp_before_repair_min_cells=min_cells))
        assert out.details["lp_before_repair"] is lp_first
        assert out.proven_optimal
        assert secondary_cost(out.status, cost) == pytest.approx(best, rel=1e-9)
        unpublished = np.isin(out.status, ("U", "M"))
        assert audit(table, unpublished=unpublished, singleton=True).passed
