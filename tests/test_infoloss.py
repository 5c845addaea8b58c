"""Information-loss measures on hand-computed tables."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chi2_contingency

from tabprotect.errors import InputError
from tabprotect.infoloss import (average_absolute_distance, cramers_v, cramers_v_change,
                                 deviation_loss, hellinger_distance, info_loss,
                                 relative_absolute_distance, suppression_loss, two_way)
from tabprotect.model import Hierarchy, Table


def handbook_table() -> Table:
    """SDC Handbook sec. 5.5 (ORACLES A4): rows A, B, C x Male, Female."""
    rows = Hierarchy.flat(["A", "B", "C"], total="Total")
    cols = Hierarchy.flat(["M", "F"], total="Total")
    # C order: (Total|A|B|C) x (Total|M|F)
    return Table.from_arrays({"row": rows, "sex": cols},
                             [39, 16, 23, 1, 1, 0, 6, 3, 3, 32, 12, 20], kind="frequency")


# conventional rounding to base 5 (ORACLES A4), same cell order
ROUNDED = np.array([40, 15, 25, 0, 0, 0, 5, 5, 5, 35, 10, 20], dtype=float)


def test_hellinger_hand_computed():
    # sqrt-differences (1-2), 0, (5-4): sqrt(1 + 0 + 1) / sqrt(2) = 1
    assert hellinger_distance([4, 9, 16], [1, 9, 25]) == pytest.approx(1.0)
    assert hellinger_distance([3, 5], [3, 5]) == 0.0


def test_hellinger_averaged_over_tables():
    # table a: [4, 9] -> [1, 9]: sqrt(1)/sqrt(2); table b: [1, 0] -> [4, 1]: sqrt(2)/sqrt(2)
    hd = hellinger_distance([4, 9, 1, 0], [1, 9, 4, 1], groups=["a", "a", "b", "b"])
    assert hd == pytest.approx((1 / math.sqrt(2) + 1.0) / 2)


def test_rad_zero_cell_treatments():
    o, p = [4, 10, 0, 0], [5, 10, 2, 0]
    assert relative_absolute_distance(o, p) == pytest.approx(0.25 + 2.0)
    assert relative_absolute_distance(o, p, zero="skip") == pytest.approx(0.25)
    assert relative_absolute_distance(o, p, zero="inf") == math.inf
    # a zero cell that stays zero never adds anything
    assert relative_absolute_distance([0, 4], [0, 4], zero="inf") == 0.0
    with pytest.raises(InputError, match="zero-cell treatment"):
        relative_absolute_distance(o, p, zero="ignore")


def test_rad_and_aad_averaged_over_tables():
    o = [2, 4, 10, 5]
    p = [3, 4, 13, 5]
    g = [1, 1, 2, 2]
    # RAD: table 1: 1/2; table 2: 3/10 -> mean 0.4; AAD: 1/2 and 3/2 -> mean 1
    assert relative_absolute_distance(o, p, groups=g) == pytest.approx(0.4)
    assert average_absolute_distance(o, p, groups=g) == pytest.approx(1.0)
    assert average_absolute_distance(o, p) == pytest.approx(4 / 4)


def test_cramers_v_two_by_two_equals_phi():
    # for 2x2 tables V = |ad - bc| / sqrt(r1 r2 c1 c2)
    a, b, c, d = 10, 20, 30, 40
    phi = abs(a * d - b * c) / math.sqrt((a + b) * (c + d) * (a + c) * (b + d))
    assert cramers_v([[a, b], [c, d]]) == pytest.approx(phi)


def test_cramers_v_against_scipy_chi2():
    x = np.array([[1, 0], [3, 3], [12, 20]], dtype=float)
    chi2 = chi2_contingency(x, correction=False)[0]
    assert cramers_v(x) == pytest.approx(math.sqrt(chi2 / (x.sum() * 1)))


def test_cramers_v_drops_empty_rows_and_handles_degenerate():
    assert cramers_v([[10, 0], [0, 0], [0, 10]]) == pytest.approx(1.0)
    assert math.isnan(cramers_v([[3, 4], [0, 0]]))


def test_rcv_hand_computed():
    # V: 1 -> phi of [[8,2],[2,8]] = (64 - 4) / 100 = 0.6: a 40 % drop
    assert cramers_v_change([[10, 0], [0, 10]], [[8, 2], [2, 8]]) == pytest.approx(40.0)


def test_two_way_picks_leaf_cells():
    t = handbook_table()
    assert two_way(t).tolist() == [[1, 0], [3, 3], [12, 20]]


def test_rounding_loss_by_level_hand_computed():
    t = handbook_table()
    frame = deviation_loss(t, ROUNDED)
    # grand total 39 -> 40
    assert frame.loc["grand total", "sum_abs_deviation"] == 1
    # margins: 16->15, 23->25, 1->0, 6->5, 32->35
    assert frame.loc["level 1", "sum_abs_deviation"] == 1 + 2 + 1 + 1 + 3
    assert frame.loc["level 1", "max_abs_deviation"] == 3
    # inner: 1->0, 0->0, 3->5, 3->5, 12->10, 20->20
    assert frame.loc["level 2", "sum_abs_deviation"] == 7
    assert frame.loc["level 2", "changed"] == 4
    assert frame.loc["all", "sum_abs_deviation"] == 16


def test_info_loss_rounded_table_hand_computed():
    t = handbook_table()
    il = info_loss(t, ROUNDED)
    assert il.kind == "deviation"
    m = il.measures
    assert m["cells"] == 6
    assert m["aad"] == pytest.approx(7 / 6)
    assert m["rad"] == pytest.approx(1 / 1 + 2 / 3 + 2 / 3 + 2 / 12)
    hd2 = (0 - 1) ** 2 + 2 * (math.sqrt(5) - math.sqrt(3)) ** 2 + \
        (math.sqrt(10) - math.sqrt(12)) ** 2
    assert m["hellinger"] == pytest.approx(math.sqrt(hd2) / math.sqrt(2))
    v_orig = cramers_v([[1, 0], [3, 3], [12, 20]])
    v_pert = cramers_v([[0, 0], [5, 5], [10, 20]])
    assert m["rcv"] == pytest.approx(100 * (v_orig - v_pert) / v_orig)
    # all cells instead of inner cells: AAD = 16 / 12
    assert info_loss(t, ROUNDED, cells="all").measures["aad"] == pytest.approx(16 / 12)
    # skipping zero cells reports how many were skipped
    assert info_loss(t, ROUNDED, zero="skip").measures["rad_zero_cells_skipped"] == 1


def test_info_loss_averaged_by_dimension():
    t = handbook_table()
    il = info_loss(t, ROUNDED, by="row")
    # tables A: |0-1|+0 ; B: 2+2 ; C: 2+0 -> AAD per table 1/2, 2, 1
    assert il.measures["tables"] == 3
    assert il.measures["aad"] == pytest.approx((0.5 + 2 + 1) / 3)
    with pytest.raises(InputError, match="'by' dimension"):
        info_loss(t, ROUNDED, by="region")


def a1_table():
    """ORACLES A1 with X11=4, X12=3, X21=2, X22=1 suppressed."""
    rows = Hierarchy.flat(["1", "2", "3"], total="T")
    cols = Hierarchy.flat(["1", "2"], total="T")
    value = [16, 9, 7, 7, 4, 3, 3, 2, 1, 6, 3, 3]
    freq = [20, 11, 9, 9, 5, 4, 4, 3, 1, 7, 3, 4]
    t = Table.from_arrays({"r": rows, "c": cols}, value, freq)
    st_ = t.status.copy()
    st_[[t.cell("1", "1"), t.cell("2", "2")]] = "U"
    st_[[t.cell("1", "2"), t.cell("2", "1")]] = "M"
    return t.replace(status=st_)


def test_suppression_loss_hand_computed():
    t = a1_table()
    frame = suppression_loss(t)
    inner = frame.loc["level 2"]
    assert inner["cells"] == 6 and inner["suppressed"] == 4
    assert inner["primary"] == 2 and inner["secondary"] == 2
    assert inner["value_suppressed"] == 10 and inner["value"] == 16
    assert inner["share_value"] == pytest.approx(62.5)
    assert inner["freq_suppressed"] == 5 + 4 + 3 + 1
    assert inner["share_freq"] == pytest.approx(100 * 13 / 20)
    assert frame.loc["level 1", "suppressed"] == 0
    total = frame.loc["all"]
    assert total["value"] == 16 + 9 + 7 + 7 + 3 + 6 + 16
    assert total["share_cells"] == pytest.approx(100 * 4 / 12)
    il = info_loss(t)
    assert il.kind == "suppression"
    assert il.measures["secondary_value"] == 3 + 2
    assert il.measures["secondary_freq"] == 4 + 3
    # a protected Table with the same values is read as a suppression pattern
    assert info_loss(t.replace(status=np.full(12, "S")), t).measures["suppressed"] == 4


def test_bad_inputs_are_input_errors():
    with pytest.raises(InputError, match="cells"):
        hellinger_distance([1, 2], [1])
    with pytest.raises(InputError, match="non-negative"):
        hellinger_distance([1, -2], [1, 2])
    with pytest.raises(InputError, match="nan"):
        average_absolute_distance([1, np.nan], [1, 2])
    with pytest.raises(InputError, match="status"):
        suppression_loss(a1_table(), np.array(["S"]))


counts = st.lists(st.integers(0, 50), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(counts, st.data())
def test_distance_properties(orig, data):
    pert = data.draw(st.lists(st.integers(0, 50), min_size=len(orig), max_size=len(orig)))
    groups = data.draw(st.lists(st.integers(0, 2), min_size=len(orig), max_size=len(orig)))
    hd = hellinger_distance(orig, pert, groups)
    assert hd == pytest.approx(hellinger_distance(pert, orig, groups))
    assert (hd == 0) == (orig == pert)
    assert hellinger_distance(orig, orig) == 0
    # the average over K tables is the mean of the per-table values
    parts = {}
    for o, p, g in zip(orig, pert, groups):
        parts.setdefault(g, ([], []))
        parts[g][0].append(o)
        parts[g][1].append(p)
    per_table = [average_absolute_distance(o, p) for o, p in parts.values()]
    assert average_absolute_distance(orig, pert, groups) == pytest.approx(np.mean(per_table))
    assert relative_absolute_distance(orig, pert, zero="skip") <= \
        relative_absolute_distance(orig, pert, zero="unit") + 1e-12
