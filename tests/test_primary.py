"""tabprotect.primary: every rule on hand-computed cells (boundaries included), ORACLES A3,
holdings, weights, manual statuses, the CLI, and protection levels checked by the LP audit."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tabprotect.audit import audit
from tabprotect.cli import main
from tabprotect.errors import InputError
from tabprotect.model import Hierarchy, Table
from tabprotect.primary import (DominanceRule, FrequencyRule, GroupDisclosureRule,
                                ManualStatus, PPercentRule, PQRule, RequestRule, ZeroRule,
                                apply_rules, rules_from_spec, top_k_needed)
from tabprotect.tabulate import hierarchy_from_correspondence, tabulate

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "demo"
RTAUARGUS = Path(__file__).resolve().parents[1] / "fixtures" / "rtauargus"


def cells(values, freq, tops, **extra):
    """A flat table: total 'T' over cells c0, c1, ... (the total is the first row given)."""
    h = Hierarchy.flat([f"c{i}" for i in range(len(values) - 1)], total="T")
    t = Table.from_arrays({"g": h}, values, freq=freq, top=tops)
    return t.replace(extra={k: np.asarray(v, float) for k, v in extra.items()}) if extra else t


def one_cell(X, tops, freq=5, **extra):
    """A table whose total and single cell are the same cell (one contributor set)."""
    return cells([X, X], [freq, freq], [tops, tops],
                 **{k: [v, v] for k, v in extra.items()})


# ------------------------------------------------------------------ dominance
def test_oracle_a3_dominance_protection_level():
    # ORACLES A3: X = 330 with contributions 300, 20, 10 is unsafe under (1,85);
    # UPL = 100/85 * 300 - 330 = 22.94.
    res = apply_rules(one_cell(330.0, [300.0, 20.0, 10.0]), [DominanceRule(1, 85)])
    assert res.table.status[1] == "U"
    assert res.table.upl[1] == pytest.approx(100 / 85 * 300 - 330)
    assert round(res.table.upl[1], 2) == 22.94
    assert res.table.lpl[1] == pytest.approx(res.table.upl[1])
    assert res.reason[1] == "dominance(1,85)"


def test_dominance_boundary_is_strict():
    rule = DominanceRule(1, 85)
    at = rule.evaluate(one_cell(100.0, [85.0, 15.0]))[0]
    above = rule.evaluate(one_cell(100.0, [85.001, 14.999]))[0]
    assert not at.any() and above.all()
    two = DominanceRule(2, 90)
    assert not two.evaluate(one_cell(1000.0, [600.0, 300.0, 100.0]))[0].any()   # 900 = 90%
    assert two.evaluate(one_cell(1000.0, [600.0, 300.5, 99.5]))[0].all()


def test_oracle_a3_dominance_vs_p_percent():
    # X = 100000, x1 = 50000, x2 = 49000: safe under (1,90), but x2 estimates x1 within 2%
    t = one_cell(100000.0, [50000.0, 49000.0])
    assert not DominanceRule(1, 90).evaluate(t)[0].any()
    unsafe, upl, _ = PPercentRule(10).evaluate(t)
    assert unsafe.all() and upl[1] == pytest.approx(0.1 * 50000 + 99000 - 100000)
    # p = 10: X = 110000, x1 = 52000, x2 = 50000: safe under p%, unsafe under (2, 90.9)
    t2 = one_cell(110000.0, [52000.0, 50000.0])
    assert not PPercentRule(10).evaluate(t2)[0].any()
    assert DominanceRule(2, 90.9).evaluate(t2)[0].all()


# ------------------------------------------------------------------ p% and pq
def test_p_percent_boundary_and_deficit():
    rule = PPercentRule(10)
    # X - x1 - x2 = 10 = 10% of x1: exactly at the boundary -> safe
    assert not rule.evaluate(one_cell(160.0, [100.0, 50.0]))[0].any()
    unsafe, upl, _ = rule.evaluate(one_cell(159.5, [100.0, 50.0]))
    assert unsafe.all() and upl[1] == pytest.approx(0.5)


def test_p_percent_coalition_uses_m_plus_one_largest():
    t = one_cell(200.0, [100.0, 50.0, 45.0])
    assert not PPercentRule(10, m=1).evaluate(t)[0].any()          # 200-150 = 50 >= 10
    unsafe, upl, _ = PPercentRule(10, m=2).evaluate(t)              # 200-195 = 5 < 10
    assert unsafe.all() and upl[1] == pytest.approx(10 + 195 - 200)
    assert top_k_needed([PPercentRule(10, m=2)]) == 3


def test_pq_rule():
    t = one_cell(125.0, [100.0, 5.0])
    # p/q = 10/50 = 0.2: X - x1 - x2 = 20 = 0.2 * 100 -> safe at the boundary
    assert not PQRule(p=10, q=50).evaluate(t)[0].any()
    unsafe, upl, _ = PQRule(p=10, q=40).evaluate(t)                # 0.25 * 100 = 25 > 20
    assert unsafe.all() and upl[1] == pytest.approx(5.0)
    with pytest.raises(InputError, match="smaller than q"):
        PQRule(p=50, q=40)


def test_pq_rule_positional_arguments_are_p_then_q():
    rule = PQRule(60, 80)
    assert (rule.p, rule.q, rule.m) == (60, 80, 1) and rule.ratio == pytest.approx(0.75)
    assert PQRule(10, 40, 2) == PQRule(p=10, q=40, m=2)
    t = one_cell(125.0, [100.0, 5.0])
    assert PQRule(10, 40).evaluate(t)[0].all() and not PQRule(10, 50).evaluate(t)[0].any()
    assert PQRule(10, 40, 2).tops_needed == 3


# ------------------------------------------------------------------ frequency
def test_frequency_rule_boundaries_and_levels():
    t = cells([60.0, 10.0, 20.0, 30.0, 0.0], [6, 1, 2, 3, 0], [[30, 20]] * 5)
    res = apply_rules(t, [FrequencyRule(3, safety_range=10)])
    assert res.table.status.tolist() == ["S", "U", "U", "S", "Z"]
    np.testing.assert_allclose(res.table.upl, [0, 1.0, 2.0, 0, 0])
    assert res.reason.tolist() == ["", "frequency(3)", "frequency(3)", "", ""]


def test_frequency_table_levels_in_count_units():
    h = Hierarchy.flat(["a", "b", "c"], total="T")
    t = Table.from_arrays({"g": h}, [13, 1, 2, 10], freq=[13, 1, 2, 10], kind="frequency")
    res = apply_rules(t, [FrequencyRule(3, safety_range=0)])
    assert res.table.status.tolist() == ["S", "U", "U", "S"]
    # a count must be able to reach the threshold; down at most to 0
    np.testing.assert_allclose(res.table.upl, [0, 2, 1, 0])
    np.testing.assert_allclose(res.table.lpl, [0, 1, 1, 0])
    res2 = apply_rules(t, [FrequencyRule(3, safety_range=300)])
    np.testing.assert_allclose(res2.table.upl, [0, 3, 6, 0])


def test_group_disclosure_all_of_a_row_in_one_cell():
    rows = Hierarchy.flat(["r1", "r2"], total="R")
    cols = Hierarchy.flat(["single", "married"], total="C")
    # r1: all 4 persons single; r2 mixed
    inner = {("r1", "single"): 4, ("r1", "married"): 0, ("r2", "single"): 3,
             ("r2", "married"): 5}
    frame = pd.DataFrame([(r, c, v) for (r, c), v in inner.items()],
                         columns=["row", "col", "value"])
    frame["freq"] = frame["value"]
    t = Table.from_frame(frame, {"row": rows, "col": cols}, compute_totals=True,
                         kind="frequency")
    res = apply_rules(t, [GroupDisclosureRule(dimensions=("col",))])
    unsafe = {t.cell_name(i) for i in np.flatnonzero(res.unsafe)}
    assert unsafe == {"(row=r1, col=single)"}
    i = t.cell("r1", "single")
    assert res.table.lpl[i] == 1 and res.table.upl[i] == 0
    # along rows too: column 'married' sits only in r2? no (0 in r1, 5 in r2) -> r2,married
    res_all = apply_rules(t, [GroupDisclosureRule()])
    names = {t.cell_name(i) for i in np.flatnonzero(res_all.unsafe)}
    assert names == {"(row=r1, col=single)", "(row=r2, col=married)"}


# ------------------------------------------------------------------ request, zero
def test_request_rule_boundary():
    rule = RequestRule(p=50, safety_range=10)
    t = one_cell(100.0, [60.0, 40.0], request_max=50.0)
    assert not rule.evaluate(t)[0].any()
    unsafe, upl, _ = rule.evaluate(one_cell(100.0, [60.0, 40.0], request_max=50.5))
    assert unsafe.all() and upl[1] == pytest.approx(10.0)
    with pytest.raises(InputError, match="no request data"):
        rule.evaluate(one_cell(100.0, [60.0]))


def test_zero_rule():
    t = cells([5.0, 0.0, 5.0, 0.0], [3, 2, 1, 0], [[5, 0]] * 4)
    res = apply_rules(t, [ZeroRule(safety_range=7)])
    assert res.table.status.tolist() == ["S", "U", "S", "Z"]
    assert res.table.upl[1] == 7 and res.table.lpl[1] == 0     # capped at lb = 0


# ------------------------------------------------------------------ combining
def test_rules_combine_in_tau_argus_order_with_largest_level():
    t = one_cell(110.0, [100.0, 5.0], freq=2)
    res = apply_rules(t, [FrequencyRule(3, 50), PPercentRule(10), DominanceRule(1, 85)])
    assert res.reason[1] == "dominance(1,85)+p(10,1)+frequency(3)"
    dom = 100 / 85 * 100 - 110
    p = 0.1 * 100 + 105 - 110
    freq = 0.5 * 110
    assert res.table.upl[1] == pytest.approx(max(dom, p, freq))
    summary = res.summary().set_index("rule")
    assert summary.loc["dominance(1,85)", "first_reason"] == 2
    assert summary.loc["p(10,1)", "first_reason"] == 0
    assert summary.loc["unsafe (any rule)", "cells"] == 2


def test_lower_level_capped_at_lower_bound():
    t = one_cell(10.0, [10.0])
    t = t.replace(lb=np.array([0.0, 4.0]))
    res = apply_rules(t, [DominanceRule(1, 50)])
    assert res.table.upl[1] == pytest.approx(10.0)     # 100/50*10 - 10
    assert res.table.lpl[1] == pytest.approx(6.0)      # 10 - 6 = 4 = lb


def test_shadow_deficit_is_scaled_to_the_response():
    t = one_cell(1000.0, [300.0, 20.0, 10.0], shadow=330.0)
    res = apply_rules(t, [DominanceRule(1, 85)])
    assert res.table.upl[1] == pytest.approx(1000.0 * (100 / 85 * 300 - 330) / 330)


def test_manual_statuses_and_levels(tmp_path):
    t = cells([60.0, 10.0, 20.0, 30.0], [6, 1, 5, 5], [[10, 5]] * 4)
    manual = pd.DataFrame({"g": ["c0", "c1", "c2"], "status": ["S", "U", "P"],
                           "upl": [None, 4.0, None]})
    manual.to_csv(tmp_path / "apriori.csv", index=False)
    rules = rules_from_spec({"frequency": {"n": 3}, "manual": "apriori.csv",
                             "manual_safety_range": 20}, tmp_path)
    res = apply_rules(t, rules)
    # cells: T, c0, c1, c2.  c0 is unsafe by frequency but made safe by hand; c1 manual U
    # with upl 4 (lpl follows); c2 protected
    assert res.table.status.tolist() == ["S", "S", "U", "P"]
    assert "manual-safe" in res.reason[1]
    assert res.table.upl[2] == 4.0 and res.table.lpl[2] == 4.0
    assert res.reason[2] == "manual"
    bad = pd.DataFrame({"g": ["zz"], "status": ["U"]})
    with pytest.raises(InputError, match="the code in column 'g'"):
        apply_rules(t, [ManualStatus(bad)])


@pytest.mark.parametrize("upl,lpl,column", [(-4.0, None, "upl"), ("4x", None, "upl"),
                                            (4.0, float("inf"), "lpl")])
def test_manual_level_that_is_not_a_size_is_an_error(upl, lpl, column):
    """A manual U whose level is negative, not a number or infinite: an error naming the
    row and column (a negative level was a primary cell protected by nothing)."""
    t = cells([60.0, 10.0, 50.0], [6, 5, 5], [[10, 5]] * 3)
    manual = pd.DataFrame({"g": ["c1"], "status": ["U"], "upl": [upl], "lpl": [lpl]})
    with pytest.raises(InputError, match=rf"row 0 \(0-based position; index label 0\), "
                                         rf"column '{column}': not a number >= 0"):
        apply_rules(t, [ManualStatus(manual, 20)])


def test_manual_u_without_levels_gets_safety_range():
    t = cells([60.0, 10.0, 50.0], [6, 5, 5], [[10, 5]] * 3)
    res = apply_rules(t, [ManualStatus(pd.DataFrame({"g": ["c1"], "status": ["u"]}), 20)])
    assert res.table.status[2] == "U" and res.table.upl[2] == pytest.approx(10.0)


# ------------------------------------------------------------------ holdings and weights
def test_holdings_change_the_verdict():
    h = Hierarchy.flat(["a", "b"], total="T")
    # in cell a: enterprises 60, 30, 10 -> (1,85) safe, but 60 and 30 are one group (90)
    df = pd.DataFrame({"g": ["a", "a", "a", "b", "b", "b"],
                       "x": [60.0, 30.0, 10.0, 40.0, 30.0, 30.0],
                       "grp": ["G1", "G1", None, "G2", "G3", None]})
    t = tabulate(df, {"g": h}, "x", holding="grp", top_k=2)
    a, b = t.cell("a"), t.cell("b")
    ind = apply_rules(t, [DominanceRule(1, 85), FrequencyRule(3)])
    assert ind.table.status[a] == "S"
    hold = apply_rules(t, [DominanceRule(1, 85, holding=True),
                           FrequencyRule(3, holding=True, safety_range=10)])
    assert hold.table.status[a] == "U" and hold.table.status[b] == "S"
    # two holdings in a (G1 and the independent enterprise): below 3
    assert hold.reason[a] == "holding-dominance(1,85)+holding-frequency(3)"
    assert hold.table.upl[a] == pytest.approx(max(100 / 85 * 90 - 100, 10.0))
    # p%: a's two holdings 90 and 10: X - h1 - h2 = 0 < 10% of 90
    assert apply_rules(t, [PPercentRule(10, holding=True)]).table.status[a] == "U"
    with pytest.raises(InputError, match="holding"):
        apply_rules(tabulate(df, {"g": h}, "x"), [DominanceRule(1, 85, holding=True)])


def test_weights_change_the_verdict():
    h = Hierarchy.flat(["c"], total="T")
    df = pd.DataFrame({"g": ["c", "c"], "x": [100.0, 10.0], "w": [4.0, 7.0]})
    unweighted = tabulate(df, {"g": h}, "x")
    weighted = tabulate(df, {"g": h}, "x", weight="w")
    c = weighted.cell("c")
    # unweighted: 100 of 110 (91%) dominates; weighted: 100 of 470 (21%) does not
    assert apply_rules(unweighted, [DominanceRule(1, 85)]).table.status[c] == "U"
    assert apply_rules(weighted, [DominanceRule(1, 85)]).table.status[c] == "S"
    # ... but the top-2 units are 100 + 100 = 200 of 470 = 42.6% > 40%
    res = apply_rules(weighted, [DominanceRule(2, 40)])
    assert res.table.status[c] == "U"
    assert res.table.upl[c] == pytest.approx(100 / 40 * 200 - 470)
    # frequency: 2 records, weighted 11
    assert apply_rules(weighted, [FrequencyRule(3)]).table.status[c] == "U"
    assert apply_rules(weighted, [FrequencyRule(3, weighted=True)]).table.status[c] == "S"


# ------------------------------------------------------------------ levels vs the audit
@pytest.mark.parametrize("partner, protected", [(100 / 85 * 300 - 330, True),
                                                (100 / 85 * 300 - 330 - 0.01, False)])
def test_protection_level_checked_by_the_audit(partner, protected):
    """The A3 cell suppressed together with a partner cell of value = UPL: the intruder's
    interval reaches exactly X + UPL, so it is protected; a hair less is not."""
    h = Hierarchy.flat(["a", "b", "c"], total="T")
    values = np.array([330.0 + partner + 1000.0, 330.0, partner, 1000.0])
    tops = [[300, 20, 10], [300, 20, 10], [partner, 0, 0], [1000, 0, 0]]
    t = Table.from_arrays({"g": h}, values, freq=[5, 3, 1, 1], top=tops)
    res = apply_rules(t, [DominanceRule(1, 85)])
    a = t.cell("a")
    assert res.table.status[a] == "U"
    st = res.table.status.copy()
    st[:] = "S"
    st[a] = "U"
    st[t.cell("b")] = "M"
    pattern = res.table.replace(status=st)
    result = audit(pattern)
    assert result.upper[a] == pytest.approx(330.0 + partner)
    assert bool(result.protected[a]) is protected


# ------------------------------------------------------------------ real data
def test_rtauargus_indiv_dt_rules():
    """INSEE's fictitious firms: weighted turnover by A88 x NUTS3 x SIZE (all levels) with
    frequency, dominance and p% rules, each checked against the formulas applied to weighted
    top contributions recomputed from the records of every cell."""
    data = RTAUARGUS
    df = pd.read_csv(data / "indiv_dt.csv.gz", dtype=str)
    df["A88"] = df["A88"].str.zfill(2)      # the file writes 07/08 as 7/8
    df["TURNOVER"] = df["TURNOVER"].astype(float)
    df["WEIGHT"] = df["WEIGHT"].astype(float)
    activity = hierarchy_from_correspondence(
        pd.read_csv(data / "activity_corr_table.csv", dtype=str), ["A10", "A21", "A88"])
    region = Hierarchy.from_levels(pd.read_csv(data / "nuts23_fr_corr_table.csv",
                                               dtype=str)["NUTS3"], [3, 4, 5])
    size = Hierarchy.flat(["tr1", "tr2", "tr3"])
    t = tabulate(df, {"A88": activity, "NUTS3": region, "SIZE": size}, "TURNOVER",
                 weight="WEIGHT", top_k=2)
    rules = [FrequencyRule(3, safety_range=10), DominanceRule(1, 85), PPercentRule(10)]
    res = apply_rules(t, rules)
    # independent recomputation for the cells of every (A21, NUTS2, SIZE) combination
    for (a21, nuts2, sz), sub in df.groupby(["A21", "NUTS2", "SIZE"]):
        i = t.cell(a21, nuts2, sz)
        x = sub["TURNOVER"].to_numpy()
        w = sub["WEIGHT"].to_numpy()
        order = np.argsort(-x)
        x, w = x[order], w[order]
        end = np.cumsum(w)
        start = end - w
        top = [np.sum(x * np.clip(np.minimum(end, j + 1) - np.maximum(start, j), 0, None))
               for j in range(2)]
        X = float(np.sum(w * x))
        freq_unsafe = 0 < len(sub) < 3
        dom_unsafe = top[0] > 0.85 * X * (1 + 1e-12)
        p_unsafe = X - top[0] - top[1] < 0.1 * top[0] * (1 - 1e-12)
        assert res.fired["frequency(3)"][i] == freq_unsafe
        assert res.fired["dominance(1,85)"][i] == dom_unsafe
        assert res.fired["p(10,1)"][i] == p_unsafe
        assert (res.table.status[i] == "U") == (freq_unsafe or dom_unsafe or p_unsafe)
        if dom_unsafe:
            assert res.table.upl[i] >= 100 / 85 * top[0] - X - 1e-6
    summary = res.summary().set_index("rule")
    assert summary.loc["unsafe (any rule)", "cells"] == int(res.unsafe.sum()) > 0


# ------------------------------------------------------------------ specs and CLI
def test_rules_from_spec_errors():
    with pytest.raises(InputError, match="unknown rule"):
        rules_from_spec({"dominanse": {"n": 1, "k": 85}})
    with pytest.raises(InputError, match="unknown key"):
        rules_from_spec({"dominance": {"n": 1, "k": 85, "kk": 1}})
    with pytest.raises(InputError, match="give n and k"):
        rules_from_spec({"dominance": {"n": 1}})
    with pytest.raises(InputError, match=r"\[rules.dominance\]: .*percentage"):
        rules_from_spec({"dominance": {"n": 1, "k": 185}})
    with pytest.raises(InputError, match=r"\[rules.frequency\]: .*positive integer"):
        rules_from_spec({"frequency": {"n": 0}})
    with pytest.raises(InputError, match="needs the 3 largest"):
        apply_rules(one_cell(10.0, [5.0, 3.0]), [DominanceRule(3, 90)])
    with pytest.raises(InputError, match="no largest contributions"):
        apply_rules(Table.from_arrays({"g": Hierarchy.flat(["a"])}, [1.0, 1.0]),
                    [DominanceRule(1, 85)])
    labels = [r.label for r in rules_from_spec({"dominance": [{"n": 1, "k": 85},
                                                              {"n": 2, "k": 90}],
                                                "p": {"p": 10, "m": 2}, "zero": {}})]
    assert labels == ["dominance(1,85)", "dominance(2,90)", "p(10,2)", "zero"]


def test_cli_primary_on_demo_job(tmp_path, capsys):
    for f in ("business.toml", "business_survey.csv", "region.hrc", "nace.hrc"):
        shutil.copyfile(FIXTURES / f, tmp_path / f)
    assert main(["primary", str(tmp_path / "business.toml")]) == 0
    out = capsys.readouterr().out
    assert "dominance(1,85)" in out and "holding-dominance(1,85)" in out
    cells_out = pd.read_csv(tmp_path / "out" / "primary.csv", dtype={"region": str,
                                                                     "nace": str})
    assert {"region", "nace", "value", "freq", "status", "reason", "upl", "lpl",
            "spl"} <= set(cells_out.columns)
    unsafe = cells_out[cells_out.status == "U"]
    assert len(unsafe) > 0 and (unsafe.reason.str.len() > 0).all()
    assert (unsafe.upl > 0).all()
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert "rules" not in summary       # per-rule counts: the terminal and the report only
    (tmp_path / "bad.toml").write_text('[microdata]\nfile = "business_survey.csv"\n'
                                       'dimensions = ["region"]\nresponse = "turnover"\n'
                                       '[rules.dominance]\nn = 1\n')
    assert main(["primary", str(tmp_path / "bad.toml")]) == 2
    assert "give n and k" in capsys.readouterr().err


def test_cli_census_frequency_job(tmp_path, capsys):
    for f in ("census_counts.toml", "census_persons.csv", "region.hrc"):
        shutil.copyfile(FIXTURES / f, tmp_path / f)
    assert main(["primary", str(tmp_path / "census_counts.toml")]) == 0
    out = pd.read_csv(tmp_path / "out_census" / "primary.csv", dtype=str)
    out = out[out.status == "U"]
    assert out.reason.str.contains("group").any()
