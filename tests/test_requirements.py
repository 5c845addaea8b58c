"""One definition of protected: tabprotect.requirements, used by the audit, every method
and the repair."""
from __future__ import annotations

import numpy as np
import pytest

from tabprotect.audit import audit, required_interval
from tabprotect.errors import InputError
from tabprotect.model import Hierarchy, Table
from tabprotect.model.table import aggregate_leaves
from tabprotect.requirements import cell_moves, protection_requirements
from tabprotect.secondary import protect
from tabprotect.secondary.attack_requirements import Requirements
from tabprotect.secondary.repair import GreedyRepair

# ORACLES A2 (the sdcTable test problem): with these cells suppressed, w|b is derived
# exactly as 47 although every relation holds two suppressions
A2_STARRED = [("w", "a"), ("w", "b"), ("w", "c"), ("x", "a"), ("x", "c"), ("y", "b"),
              ("y", "d"), ("z", "b"), ("z", "d")]


def a2_zero_levels(all_primary: bool = False) -> Table:
    """A2 with w|b primary and protection levels zero; the other starred cells are
    given suppressions (or primaries with zero levels too)."""
    inner = np.array([[30, 47, 64, 89], [90, 124, 5, 31], [92, 100, 59, 85],
                      [800, 991, 651, 685]], dtype=float)
    rows = Hierarchy.flat(list("wxyz"), total="Total")
    cols = Hierarchy.flat(list("abcd"), total="Total")
    v = np.zeros((5, 5))
    v[1:, 1:] = inner
    v = aggregate_leaves(v.ravel(), [rows, cols])
    t = Table.from_arrays({"r": rows, "c": cols}, v, freq=np.full(25, 5.0))
    st = t.status.copy()
    for code in A2_STARRED:
        st[t.cell(*code)] = "U" if all_primary else "M"
    st[t.cell("w", "b")] = "U"
    return t.replace(status=st, upl=np.zeros(25), lpl=np.zeros(25), spl=np.zeros(25))


def test_a2_with_zero_levels_is_exactly_disclosed_before_protection():
    t = a2_zero_levels()
    wb = t.cell("w", "b")
    res = audit(t)
    assert res.lower[wb] == res.upper[wb] == 47
    assert not res.passed


@pytest.mark.parametrize("all_primary", [False, True])
@pytest.mark.parametrize("method", ["optimal", "modular", "hypercube", "gauss", "greedy"])
def test_every_method_protects_a_primary_with_zero_levels(method, all_primary):
    t = a2_zero_levels(all_primary)
    res = protect(t, method=method, cost="unity")
    assert res.passed, res.notes
    # judged by a fresh LP audit of the published pattern, not by the method
    status = res.status
    check = audit(t.replace(status=status), singleton=True)
    assert check.passed
    for p in np.flatnonzero(status == "U"):
        assert check.upper[p] - check.lower[p] > 1e-3, t.cell_name(p)


def test_zero_levels_still_ask_for_a_positive_width():
    t = a2_zero_levels()
    wb = t.cell("w", "b")
    req = protection_requirements(t, "intruder")
    assert req.primary.tolist() == [wb]
    assert req.need_up.tolist() == req.need_down.tolist() == [0.0]
    assert req.need_width[0] > 0
    # frequency tables: an integer interval that is not a point is at least 1 wide
    freq = t.replace(kind="frequency")
    assert protection_requirements(freq).need_width.tolist() == [1.0]
    # the audit, the repair and the cube methods read the same requirement
    lo, hi, w = required_interval(t, integer=False)
    assert w[wb] == req.need_width[0] and lo[wb] == hi[wb] == 47
    assert Requirements.from_table(t, singleton=False).need_width.tolist() == \
        req.need_width.tolist()
    up, down = cell_moves(t, wb)
    assert up + down >= req.need_width[0]


def test_the_repair_adds_a_cell_for_an_exactly_disclosed_zero_level_primary():
    t = a2_zero_levels()
    req = Requirements.from_table(t, singleton=False)
    cand = ~np.isin(t.status, ("U", "M"))
    rep = GreedyRepair(t, req, np.ones(25), cand)
    new_mask, unmet = rep.run(np.isin(t.status, ("U", "M")))
    assert (new_mask & cand).any() and not len(unmet)
    st = t.status.copy()
    st[new_mask & cand] = "M"
    assert audit(t.replace(status=st)).passed


def test_attacker_models():
    t = a2_zero_levels()
    assert protection_requirements(t, "single-contributor").singleton
    assert not protection_requirements(t, "intruder").singleton
    with pytest.raises(InputError, match="coalition"):
        protection_requirements(t, "coalition")
