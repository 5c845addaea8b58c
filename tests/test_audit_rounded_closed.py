"""The rounded-table audit's closed form for tables whose totals' ranges never bind (small-
count rounding, random rounding with totals from inner cells): intervals checked against
brute-force enumeration of every integer table the published values allow, and against
the audit's LPs on every bound (``certificates=False``)."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabprotect.audit_rounded import audit_rounded
from tabprotect.audit_rounded.certificates import independent_inner_bounds
from tabprotect.audit_rounded.ranges import method_ranges
from tabprotect.rounding import round_table
from test_audit_rounded import brute_force_intervals, hierarchical_tables


def _rounded(table, method, base, seed):
    if method == "small-count":
        return round_table(table, base, "small-count", threshold=base + 1, audit=False)
    return round_table(table, base, "random", seed=seed, margins_from_interior=True,
                       audit=False)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hierarchical_tables(), st.sampled_from(["small-count", "random"]),
       st.sampled_from([2, 3, 5]), st.integers(0, 1000))
def test_free_totals_need_no_lp_and_match_enumeration(table, method, base, seed):
    """No total's range binds its inner cells: no LP, and the intervals are those of
    every feasible integer table (enumerated on small tables, LPs on every bound else)."""
    res = _rounded(table, method, base, seed)
    audit = audit_rounded(res)
    assert audit.n_lp == 0 and audit.n_mip == 0
    assert audit.true_inside.all()
    lps = audit_rounded(res, certificates=False)
    assert np.array_equal(audit.lower, lps.lower) and np.array_equal(audit.upper, lps.upper)
    if int(table.is_inner.sum()) <= 6:
        blo, bhi = brute_force_intervals(table, audit.range_lower, audit.range_upper, cap=30)
        assert np.array_equal(audit.lower, blo) and np.array_equal(audit.upper, bhi)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hierarchical_tables(), st.integers(0, 1000))
def test_binding_totals_get_no_closed_form(table, seed):
    """Random rounding of every cell: each published total has its own range, narrower
    than the sum of its inner cells' ranges wherever a total has two or more inner
    cells, so the closed form declines and the LPs decide."""
    res = round_table(table, 3, "random", seed=seed, audit=False)
    lo, hi = method_ranges(res.rounded, 3, "random", inner=table.is_inner)
    assert independent_inner_bounds(table, lo, hi) is None
