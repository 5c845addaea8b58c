"""tabprotect.tabulate: microdata -> Table, checked against brute force on the records."""
from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabprotect.errors import InputError
from tabprotect.model import Hierarchy
from tabprotect.io.job import tabulate_job
from tabprotect.tabulate import hierarchy_from_correspondence, tabulate

RTAUARGUS = Path(__file__).resolve().parents[1] / "fixtures" / "rtauargus"

REGION = Hierarchy.from_pairs([("T", "N"), ("T", "S"), ("N", "N1"), ("N", "N2"), ("S", "S1")],
                              name="region")
NACE = Hierarchy.from_levels(["A011", "A012", "A021", "B011"], [1, 3, 4], total="All",
                             name="nace")


def unit_tops(x, w, k):
    """Brute force: lay the contributions out largest first, each as wide as its weight;
    top_j is the mass of the unit [j, j+1)."""
    order = np.argsort(-np.asarray(x, float), kind="stable")
    x = np.asarray(x, float)[order]
    w = np.asarray(w, float)[order]
    end = np.cumsum(w)
    start = end - w
    return np.array([np.sum(x * np.clip(np.minimum(end, j + 1) - np.maximum(start, j), 0, None))
                     for j in range(k)])


def brute_force(df, dims, hierarchies, table, response="x", weight=None, holding=None, k=3):
    """Every cell recomputed from the records under it (leaf descendants per dimension)."""
    desc = [h.leaf_descendants() for h in hierarchies]
    codes = [np.array(h.codes) for h in hierarchies]
    for i in range(table.n_cells):
        mask = np.ones(len(df), bool)
        for d, (col, p) in enumerate(zip(dims, table.positions)):
            leaves = codes[d][desc[d][p[i]]]
            mask &= df[col].isin(leaves).to_numpy()
        sub = df[mask]
        w = sub[weight].to_numpy(float) if weight else np.ones(len(sub))
        x = sub[response].to_numpy(float)
        assert table.freq[i] == len(sub)
        assert table.value[i] == pytest.approx(float(np.sum(w * x)), rel=1e-12, abs=1e-9)
        np.testing.assert_allclose(table.top[i], unit_tops(x, w, k), rtol=1e-12, atol=1e-9)
        if holding:
            sums = sub.groupby(sub[holding].fillna(pd.Series(
                [f"_lone{j}" for j in sub.index], index=sub.index)))[response].sum()
            assert table.extra["holding_freq"][i] == len(sums)
            top = np.sort(sums.to_numpy())[::-1][:k]
            top = np.r_[top, np.zeros(k - len(top))]
            got = [table.extra[f"holding_top{j + 1}"][i] for j in range(k)]
            np.testing.assert_allclose(got, top, rtol=1e-12, atol=1e-9)


def records(n, seed, with_weights=False, with_holdings=False):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"region": rng.choice(["N1", "N2", "S1"], n),
                       "nace": rng.choice(["A011", "A012", "A021", "B011"], n),
                       "x": np.round(rng.lognormal(3, 1.5, n), 2)})
    if with_weights:
        df["w"] = rng.choice([1.0, 2.0, 3.5, 7.0], n)
    if with_holdings:
        df["h"] = rng.choice(["g1", "g2", "g3", None], n)
    return df


# ------------------------------------------------------------------ hand-computed
def test_flat_counts_sums_and_tops():
    h = Hierarchy.flat(["a", "b"], total="T")
    df = pd.DataFrame({"g": ["a", "a", "b", "a"], "x": [5.0, 1.0, 2.0, 7.0]})
    t = tabulate(df, {"g": h}, "x", top_k=2)
    assert t.kind == "magnitude"
    assert t.value.tolist() == [15.0, 13.0, 2.0]
    assert t.freq.tolist() == [4.0, 3.0, 1.0]
    assert t.top.tolist() == [[7.0, 5.0], [7.0, 5.0], [2.0, 0.0]]


def test_frequency_table_counts_and_weighted_counts():
    h = Hierarchy.flat(["a", "b", "c"], total="T")
    df = pd.DataFrame({"g": ["a", "a", "b"], "w": [2.0, 3.0, 1.5]})
    t = tabulate(df, {"g": h})
    assert t.kind == "frequency" and t.top is None
    assert t.value.tolist() == [3.0, 2.0, 1.0, 0.0]
    assert t.status.tolist() == ["S", "S", "S", "Z"]
    tw = tabulate(df, {"g": h}, weight="w")
    assert tw.value.tolist() == [6.5, 5.0, 1.5, 0.0]
    assert tw.freq.tolist() == [3.0, 2.0, 1.0, 0.0]


def test_oracle_a3_weighted_cell_replicates_contributions():
    # ORACLES A3: contribution 100 with weight 4 and 10 with weight 7 -> value 470 and the
    # two largest "contributors" are 100 and 100.
    h = Hierarchy.flat(["c"], total="T")
    df = pd.DataFrame({"g": ["c", "c"], "x": [100.0, 10.0], "w": [4, 7]})
    for engine in ("memory", "duckdb"):
        t = tabulate(df, {"g": h}, "x", weight="w", top_k=6, engine=engine)
        c = t.cell("c")
        assert t.value[c] == 470.0
        assert t.top[c].tolist() == [100.0, 100.0, 100.0, 100.0, 10.0, 10.0]
        assert t.freq[c] == 2 and t.extra["weighted_freq"][c] == 11


def test_fractional_weights_count_fractionally():
    h = Hierarchy.flat(["c"], total="T")
    df = pd.DataFrame({"g": ["c", "c"], "x": [100.0, 10.0], "w": [1.5, 2.0]})
    t = tabulate(df, {"g": h}, "x", weight="w", top_k=4)
    # units: [0,1) all 100; [1,2) half 100 half 10; [2,3) 10; [3,3.5) half of 10
    assert t.top[t.cell("c")].tolist() == [100.0, 55.0, 10.0, 5.0]


def test_small_weights_need_more_candidates_and_still_merge_exactly():
    h = Hierarchy.from_pairs([("T", "a"), ("T", "b")])
    df = pd.DataFrame({"g": ["a", "a", "a", "b"], "x": [9.0, 8.0, 7.0, 8.5],
                       "w": [0.5, 0.5, 0.5, 0.5]})
    t = tabulate(df, {"g": h}, "x", weight="w", top_k=2)
    np.testing.assert_allclose(t.top[t.cell("T")], unit_tops(df.x, df.w, 2))
    np.testing.assert_allclose(t.top[t.cell("a")], [8.5, 3.5])


@pytest.mark.parametrize("w_min", [0.5, 0.15])     # few candidates / many (sorting path)
def test_weighted_tops_equal_brute_force_for_small_weights(w_min):
    rng = np.random.default_rng(3)
    df = records(200, 11)
    df["w"] = rng.uniform(w_min, 3.0, len(df))
    t = tabulate(df, {"region": REGION, "nace": NACE}, "x", weight="w", top_k=3)
    brute_force(df, ["region", "nace"], [REGION, NACE], t, weight="w")
    d = tabulate(df, {"region": REGION, "nace": NACE}, "x", weight="w", top_k=3,
                 engine="duckdb")
    np.testing.assert_allclose(d.top, t.top, rtol=1e-12)


def test_holding_spanning_leaves_is_summed_at_every_level():
    df = pd.DataFrame({"region": ["N1", "N2", "N1", "S1"], "x": [60.0, 30.0, 10.0, 5.0],
                       "h": ["G", "G", None, None]})
    t = tabulate(df, {"region": REGION}, "x", holding="h", top_k=2)
    n = t.cell("N")
    # at N the holding G contributes 60 + 30 = 90 (it spans N1 and N2)
    assert t.extra["holding_freq"][n] == 2 and t.freq[n] == 3
    assert [t.extra["holding_top1"][n], t.extra["holding_top2"][n]] == [90.0, 10.0]
    assert t.top[n].tolist() == [60.0, 30.0]
    n1 = t.cell("N1")
    assert t.extra["holding_freq"][n1] == 2
    assert t.extra["holding_top1"][t.cell("T")] == 90.0


def test_shadow_cost_and_request():
    h = Hierarchy.flat(["a", "b"], total="T")
    df = pd.DataFrame({"g": ["a", "a", "b"], "x": [10.0, 20.0, 5.0], "s": [3.0, 1.0, 9.0],
                       "c": [1.0, 2.0, 4.0], "req": ["yes", "no", "1"]})
    for engine in ("memory", "duckdb"):
        t = tabulate(df, {"g": h}, "x", shadow="s", cost="c", request="req", top_k=2,
                     engine=engine)
        assert t.value.tolist() == [35.0, 30.0, 5.0]
        assert t.extra["shadow"].tolist() == [13.0, 4.0, 9.0]
        assert t.top.tolist() == [[9.0, 3.0], [3.0, 1.0], [9.0, 0.0]]   # shadow tops
        assert t.cost.tolist() == [7.0, 3.0, 4.0]
        assert t.extra["request_max"].tolist() == [9.0, 3.0, 9.0]


# ------------------------------------------------------------------ brute force
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 40), seed=st.integers(0, 10_000), weights=st.booleans())
def test_every_level_equals_brute_force_on_records(n, seed, weights):
    df = records(n, seed, with_weights=weights, with_holdings=not weights)
    t = tabulate(df, {"region": REGION, "nace": NACE}, "x", weight="w" if weights else None,
                 holding=None if weights else "h", top_k=3)
    brute_force(df, ["region", "nace"], [REGION, NACE], t, weight="w" if weights else None,
                holding=None if weights else "h")


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_duckdb_file_engine_equals_memory(tmp_path, suffix):
    df = records(300, 7, with_holdings=True)
    path = tmp_path / f"m{suffix}"
    df.to_csv(path, index=False) if suffix == ".csv" else df.to_parquet(path, index=False)
    dims = {"region": REGION, "nace": NACE}
    a = tabulate(df, dims, "x", holding="h", top_k=3)
    b = tabulate(path, dims, "x", holding="h", top_k=3, engine="duckdb", threads=1)
    c = tabulate(path, dims, "x", holding="h", top_k=3, engine="memory")
    for other in (b, c):
        np.testing.assert_allclose(other.value, a.value, rtol=1e-12)
        np.testing.assert_array_equal(other.freq, a.freq)
        np.testing.assert_allclose(other.top, a.top, rtol=1e-12)
        for key in ("holding_freq", "holding_top1", "holding_top2", "holding_top3"):
            np.testing.assert_allclose(other.extra[key], a.extra[key], rtol=1e-12)
    dfw = records(300, 8, with_weights=True)
    dfw.to_csv(tmp_path / "w.csv", index=False)
    aw = tabulate(dfw, dims, "x", weight="w")
    bw = tabulate(tmp_path / "w.csv", dims, "x", weight="w", engine="duckdb", threads=1)
    np.testing.assert_allclose(bw.value, aw.value, rtol=1e-12)
    np.testing.assert_allclose(bw.top, aw.top, rtol=1e-12)


def test_rtauargus_indiv_dt_totals_at_every_level():
    """Real data: INSEE's fictitious firms, activity A10 > A21 > A88 and NUTS1 > NUTS2 >
    NUTS3 from the correspondence tables, SIZE flat, weighted TURNOVER."""
    data = RTAUARGUS
    df = pd.read_csv(data / "indiv_dt.csv.gz", dtype=str)
    df["TURNOVER"] = df["TURNOVER"].astype(float)
    df["WEIGHT"] = df["WEIGHT"].astype(float)
    activity = hierarchy_from_correspondence(pd.read_csv(data / "activity_corr_table.csv",
                                                         dtype=str), ["A10", "A21", "A88"],
                                             name="A88")
    nuts3 = pd.read_csv(data / "nuts23_fr_corr_table.csv", dtype=str)["NUTS3"]
    region = Hierarchy.from_levels(nuts3, [3, 4, 5], total="Total", name="NUTS3")
    size = Hierarchy.flat(["tr1", "tr2", "tr3"], total="Total", name="SIZE")
    dims = {"A88": activity, "NUTS3": region, "SIZE": size}
    # the file writes divisions 07 and 08 as 7 and 8: caught as unknown codes
    with pytest.raises(InputError, match=r"the code in column 'A88' is not in its hierarchy"):
        tabulate(df, dims, "TURNOVER", weight="WEIGHT")
    df["A88"] = df["A88"].str.zfill(2)
    t = tabulate(df, dims, "TURNOVER", weight="WEIGHT", top_k=2)
    t2 = tabulate(df, dims, "TURNOVER", weight="WEIGHT", top_k=2, engine="duckdb")
    np.testing.assert_allclose(t2.value, t.value, rtol=1e-10)
    np.testing.assert_allclose(t2.top, t.top, rtol=1e-10)
    wx = df["WEIGHT"] * df["TURNOVER"]
    for act_col in ("A10", "A21", "A88", None):
        for reg_col in ("NUTS1", "NUTS2", "NUTS3", None):
            for size_col in ("SIZE", None):
                keys = [c for c in (act_col, reg_col, size_col) if c]
                if keys:
                    groups = df.groupby(keys)
                    sums = wx.groupby([df[c] for c in keys]).sum()
                    counts = groups.size()
                    wsum = df["WEIGHT"].groupby([df[c] for c in keys]).sum()
                else:
                    sums = pd.Series({(): wx.sum()})
                    counts = pd.Series({(): len(df)})
                    wsum = pd.Series({(): df["WEIGHT"].sum()})
                for key in sums.index:
                    key = key if isinstance(key, tuple) else (key,)
                    codes = dict(zip(keys, key))
                    i = t.cell(A88=codes.get(act_col, "Total"), NUTS3=codes.get(reg_col, "Total"),
                               SIZE=codes.get(size_col, "Total"))
                    k = key if len(key) != 1 else key[0]
                    assert t.value[i] == pytest.approx(sums[k], rel=1e-9)
                    assert t.freq[i] == counts[k]
                    assert t.extra["weighted_freq"][i] == pytest.approx(wsum[k], rel=1e-9)
    # codes of the hierarchies that no firm has are empty cells
    assert t.value[t.cell(A88="01")] == 0 and t.status[t.cell(A88="01")] == "Z"
    # the grand total's top contributions: weighted units over all firms
    np.testing.assert_allclose(t.top[t.cell("Total", "Total", "Total")], unit_tops(df["TURNOVER"], df["WEIGHT"], 2),
                               rtol=1e-12)


# ------------------------------------------------------------------ errors
def test_unknown_code_error_names_column_and_rows():
    df = pd.DataFrame({"region": ["N1", "X9", "N2", "X9"], "x": [1.0, 2.0, 3.0, 4.0]})
    with pytest.raises(InputError, match=r"the code in column 'region' is not in its hierarchy.*"
                                         r"first: row with index label 1, row with index label 3"):
        tabulate(df, {"region": REGION}, "x")


def test_unknown_code_in_file_names_lines(tmp_path):
    df = pd.DataFrame({"region": ["N1", "N2", "X9"], "x": [1.0, 2.0, 3.0]})
    df.to_csv(tmp_path / "m.csv", index=False)
    for engine in ("duckdb", "memory"):
        with pytest.raises(InputError, match=r"m.csv line 4: the code in column 'region'"):
            tabulate(tmp_path / "m.csv", {"region": REGION}, "x", engine=engine)


@pytest.mark.parametrize("flag", ["maybe", "2", "-1", "0.5", "oui"])
def test_request_value_that_is_no_flag_is_an_error_naming_the_line(tmp_path, flag):
    # the request rule must not read an unrecognised flag as "not set": both engines refuse
    # it, name the column and the line, and never quote the record's values
    df = pd.DataFrame({"g": ["a", "a", "b"], "x": [31337.77, 20.0, 5.0],
                       "req": ["yes", flag, "0"]})
    df.to_csv(tmp_path / "m.csv", index=False)
    h = Hierarchy.flat(["a", "b"], total="T")
    for engine in ("memory", "duckdb"):
        with pytest.raises(InputError, match=r"m.csv line 3: request 'req' is not a flag "
                                             r"\(1 record\(s\)") as err:
            tabulate(tmp_path / "m.csv", {"g": h}, "x", request="req", engine=engine)
        assert "31337" not in str(err.value) and f" {flag}" not in str(err.value)


def test_request_flags_agree_between_engines(tmp_path):
    # set: 1/true/yes/y/t in any case and the number 1; not set: 0/false/no/n/f, 0, empty
    flags = ["1", "TRUE", "Yes", "y", "t", "1.0", "0", "false", "NO", "n", "F", "0.0", ""]
    df = pd.DataFrame({"g": [f"c{i}" for i in range(len(flags))],
                       "x": np.arange(1.0, len(flags) + 1), "req": flags})
    df.to_csv(tmp_path / "m.csv", index=False)
    h = Hierarchy.flat(list(df["g"]), total="T")
    for engine in ("memory", "duckdb"):
        t = tabulate(tmp_path / "m.csv", {"g": h}, "x", request="req", engine=engine)
        got = [t.extra["request_max"][t.cell(c)] > 0 for c in df["g"]]
        assert got == [True] * 6 + [False] * 7, engine


def test_unknown_code_goes_to_configured_code():
    h = Hierarchy.flat(["a", "b", "99"], total="T")
    df = pd.DataFrame({"g": ["a", "zz", None, "b"], "x": [1.0, 2.0, 4.0, 8.0]})
    for engine in ("memory", "duckdb"):
        t = tabulate(df, {"g": h}, "x", unknown_code="99", engine=engine, top_k=2)
        assert t.value[t.cell("99")] == 6.0 and t.freq[t.cell("99")] == 2
        assert t.top[t.cell("99")].tolist() == [4.0, 2.0]
    with pytest.raises(InputError, match="unknown_code 'nope'"):
        tabulate(df, {"g": h}, "x", unknown_code="nope")


def test_total_code_in_microdata_is_rejected():
    df = pd.DataFrame({"region": ["N1", "N"], "x": [1.0, 2.0]})
    with pytest.raises(InputError, match=r"'N' of 'region' is a total/subtotal"):
        tabulate(df, {"region": REGION}, "x")


def test_missing_response_policies():
    h = Hierarchy.flat(["a", "b"], total="T")
    df = pd.DataFrame({"g": ["a", "a", "b"], "x": [1.0, np.nan, 2.0]})
    with pytest.raises(InputError, match=r"row with index label 1: value of 'x' is missing"):
        tabulate(df, {"g": h}, "x")
    with pytest.warns(UserWarning, match="1 record"):
        z = tabulate(df, {"g": h}, "x", missing="zero")
    assert z.freq.tolist() == [3.0, 2.0, 1.0] and z.extra["n_missing"].tolist() == [1, 1, 0]
    with pytest.warns(UserWarning, match="left out"):
        d = tabulate(df, {"g": h}, "x", missing="drop")
    assert d.freq.tolist() == [2.0, 1.0, 1.0] and d.value.tolist() == [3.0, 1.0, 2.0]
    assert d.extra["n_missing"].tolist() == [1, 1, 0]
    with pytest.warns(UserWarning):
        dd = tabulate(df, {"g": h}, "x", missing="drop", engine="duckdb")
    np.testing.assert_array_equal(dd.freq, d.freq)
    np.testing.assert_array_equal(dd.extra["n_missing"], d.extra["n_missing"])
    with pytest.raises(InputError, match="missing must be one of"):
        tabulate(df, {"g": h}, "x", missing="ignore")


def test_bad_values_rejected(tmp_path):
    h = Hierarchy.flat(["a"], total="T")
    with pytest.raises(InputError, match=r"row with index label 1: value of 'x' is not a number"):
        tabulate(pd.DataFrame({"g": ["a", "a"], "x": ["1", "abc"]}), {"g": h}, "x")
    with pytest.raises(InputError, match=r"value of 'x' is negative"):
        tabulate(pd.DataFrame({"g": ["a"], "x": [-1.0]}), {"g": h}, "x")
    with pytest.raises(InputError, match=r"weight 'w' must be positive"):
        tabulate(pd.DataFrame({"g": ["a"], "x": [1.0], "w": [0.0]}), {"g": h}, "x", weight="w")
    with pytest.raises(InputError, match=r"column\(s\) \['y'\] not found"):
        tabulate(pd.DataFrame({"g": ["a"], "x": [1.0]}), {"g": h}, "y")
    with pytest.raises(InputError, match="cannot be combined"):
        tabulate(pd.DataFrame({"g": ["a"], "x": [1.0]}), {"g": h}, "x", weight="x",
                 holding="g")
    pd.DataFrame({"g": ["a", "a", "a"], "x": ["1", "2", "oops"]}).to_csv(tmp_path / "b.csv",
                                                                         index=False)
    with pytest.raises(InputError, match=r"b.csv line 4: value of 'x' is not a number"):
        tabulate(tmp_path / "b.csv", {"g": h}, "x")
    pd.DataFrame({"g": ["a", "a"], "x": [1.0, None]}).to_csv(tmp_path / "c.csv", index=False)
    with pytest.raises(InputError, match=r"c.csv line 3: value of 'x' is missing"):
        tabulate(tmp_path / "c.csv", {"g": h}, "x")
    with pytest.raises(InputError, match="not found"):
        tabulate(tmp_path / "nope.csv", {"g": h}, "x")


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_sum_beyond_the_largest_float_is_rejected(engine):
    """Finite contributions whose cell sum overflows: an error naming the cell, not a table
    with an infinite total; the contributions themselves are not quoted."""
    h = Hierarchy.flat(["a", "b"], total="T")
    df = pd.DataFrame({"g": ["a", "b", "b"], "x": [1.5e308, 1.25e308, 1.0]})
    with pytest.raises(InputError, match=r"the value of cell \(g=T\) overflows") as err, \
            warnings.catch_warnings():  # a numpy warning would be more lines on stderr
        warnings.simplefilter("error")
        tabulate(df, {"g": h}, "x", engine=engine)
    assert "e+308" not in str(err.value) and "e308" not in str(err.value)
    ok = tabulate(df.assign(x=[1e307, 1e307, 1.0]), {"g": h}, "x", engine=engine)
    assert np.isfinite(ok.value).all()


def test_correspondence_table_with_repeated_codes():
    corr = pd.DataFrame({"A10": ["AZ", "AZ", "AZ", "BE"], "A21": ["A", "A", "X", "B"],
                         "A88": ["01", "02", "X", "06"]})
    h = hierarchy_from_correspondence(corr, ["A10", "A21", "A88"])
    assert h.children_of("AZ") == ("A", "X") and h.leaves == ("01", "02", "X", "06")
    bad = pd.DataFrame({"a": ["P", "Q"], "b": ["c", "c"]})
    with pytest.raises(InputError, match="two parents"):
        hierarchy_from_correspondence(bad, ["a", "b"])


def test_tabulate_job_on_demo_fixture(tmp_path):
    from tabprotect.io.job import build_table, load_job
    job = load_job(Path(__file__).resolve().parents[1] / "fixtures" / "demo" / "business.toml")
    t = build_table(job)
    df = pd.read_csv(job.resolve("business_survey.csv"), dtype={"group_id": str})
    assert t.value[t.cell("Total", "Total")] == pytest.approx(df["turnover"].sum())
    assert t.freq[t.cell("Total", "Total")] == len(df)
    assert t.top.shape[1] >= 2 and "holding_top1" in t.extra and "request_max" in t.extra
    for code in ("R1", "R11", "R111"):
        sub = df[df.region.str.startswith(code)]
        assert t.value[t.cell(region=code)] == pytest.approx(sub["turnover"].sum())
    with pytest.raises(InputError, match="unknown key"):
        tabulate_job(load_job(spec={"microdata": {"file": "x.csv", "dimensions": ["a"],
                                                  "bogus": 1}}, base=tmp_path))
    # the risk command's keys share the section: the tabulation accepts them
    spec = dict(job.spec, microdata=dict(job.spec["microdata"], keys=["region"],
                                         household="group_id", sampling_fraction=0.1))
    shared = load_job(spec=spec, base=job.base)
    assert tabulate_job(shared).value.tolist() == tabulate_job(job).value.tolist()


def test_a_job_imports_only_the_engine_it_tabulates_with():
    """A small microdata file is tabulated in memory without importing the duckdb or dask
    engines (nor the process pool the dask engine brings); a job of a cells file imports
    no tabulation engine at all."""
    root = Path(__file__).resolve().parents[1]
    code = ("import sys\n"
            "from tabprotect.io.job import build_table, load_job\n"
            "build_table(load_job(sys.argv[1]))\n"
            "mods = ('tabprotect.tabulate.api', 'tabprotect.tabulate.memory_engine',\n"
            "        'tabprotect.tabulate.duckdb_engine', 'tabprotect.tabulate.dask_engine',\n"
            "        'concurrent.futures.process')\n"
            "print(' '.join(m for m in mods if m in sys.modules))\n")
    loaded = {}
    for job in (root / "fixtures" / "demo" / "business.toml",
                root / "tabprotect" / "data" / "demo_audit" / "job.toml"):
        proc = subprocess.run([sys.executable, "-c", code, str(job)], capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        loaded[job.parent.name] = proc.stdout.split()
    assert loaded == {"demo": ["tabprotect.tabulate.api", "tabprotect.tabulate.memory_engine"],
                      "demo_audit": []}


def test_categorical_codes_with_unused_categories():
    df = pd.DataFrame({"region": pd.Categorical(["N1", "S1", "N1"],
                                                categories=["N1", "S1", "N", "zz"]),
                       "x": [1.0, 2.0, 4.0]})
    t = tabulate(df, {"region": REGION}, "x", top_k=2)
    assert t.value[t.cell("N")] == 5.0 and t.top[t.cell("T")].tolist() == [4.0, 2.0]
    df.loc[1, "region"] = "zz"
    with pytest.raises(InputError, match="the code in column 'region'"):
        tabulate(df, {"region": REGION}, "x")


def test_auto_engine_reads_small_files_in_memory(tmp_path):
    """``auto``: pandas for frames and files up to AUTO_SMALL_FILE_BYTES (no duckdb start-up
    on everyday tables), duckdb first for larger files; the same table either way."""
    from tabprotect.tabulate.engines import AUTO_SMALL_FILE_BYTES, auto_order, choose_engine
    df = records(200, 3)
    small = tmp_path / "m.csv"
    df.to_csv(small, index=False)
    assert choose_engine("auto", small).name == "memory"
    assert choose_engine("auto", df).name == "memory"
    assert choose_engine("pandas", df) is choose_engine("memory", df)   # its other name
    big = tmp_path / "big.csv"
    with open(big, "wb") as f:            # a sparse file: its size without the writing
        f.truncate(AUTO_SMALL_FILE_BYTES + 1)
    assert auto_order(big)[0] == "duckdb"
    assert auto_order(tmp_path / "absent.csv")[0] == "duckdb"
    dims = {"region": REGION, "nace": NACE}
    a = tabulate(small, dims, "x", top_k=3)
    b = tabulate(small, dims, "x", top_k=3, engine="duckdb", threads=1)
    np.testing.assert_allclose(a.value, b.value, rtol=1e-12)
    np.testing.assert_allclose(a.top, b.top, rtol=1e-12)
