"""Key frequencies and individual risk (ORACLES.md A8)."""
import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from tabprotect.microdata import (household_risk, individual_risk, key_frequencies, risk_approx,
                                  risk_exact, risk_series)


@pytest.fixture
def a8():
    return pd.DataFrame({"A": (2, 3, 2, 2, 3, 3, 1, 2), "B": (3, 3, 3, 3, 3, 3, 4, 3),
                         "C": (1, 3, 1, 2, 1, 1, 1, 1),
                         "w": (18, 45.5, 39, 17, 92, 8, 123.5, 51)})


def test_a8_frequencies(a8):
    fr = key_frequencies(a8, ["A", "B", "C"], weights="w")
    assert fr.fk.tolist() == [3, 1, 3, 1, 2, 2, 1, 3]
    np.testing.assert_allclose(fr.Fk, [108, 45.5, 108, 17, 100, 100, 123.5, 108])
    assert fr.n_sample_uniques == 3
    assert fr.k_anonymity_violations(3) == 5
    assert fr.combinations["f"].sum() == 8 and len(fr.combinations) == 5


def test_a8_individual_risk(a8):
    r = individual_risk(a8, ["A", "B", "C"], weights="w")
    np.testing.assert_allclose(r.risk, [0.01369863, 0.08579129, 0.01369863, 0.17707583,
                                        0.01877883, 0.01877883, 0.03931625, 0.01369863], atol=5e-9)
    ex = individual_risk(a8, ["A", "B", "C"], weights="w", method="exact")
    np.testing.assert_allclose(ex.risk[[0, 2, 7]], 0.01355297, atol=5e-9)
    assert ex.expected_reidentifications == pytest.approx(ex.risk.sum())


@settings(max_examples=60, deadline=None)
@given(f=st.integers(1, 12), ratio=st.floats(1.05, 400.0))
def test_exact_matches_series(f, ratio):
    F = f * ratio
    assert risk_exact([f], [F])[0] == pytest.approx(risk_series(f, F), rel=1e-8, abs=1e-12)


def test_exact_against_simulation():
    rng = np.random.default_rng(5)
    for f, F in [(1, 20.0), (2, 9.0), (4, 30.0)]:
        p = f / F
        # F - f ~ NegBin(f, p): number of failures before the f-th success
        draws = f + rng.negative_binomial(f, p, size=400_000)
        mc = np.mean(1.0 / draws)
        se = np.std(1.0 / draws) / np.sqrt(draws.size)
        assert abs(risk_exact([f], [F])[0] - mc) < 5 * se


def test_approx_is_close_for_large_f_and_edge_cases():
    assert risk_approx([10], [1000])[0] == pytest.approx(risk_exact([10], [1000])[0], rel=0.02)
    # weights below one: F^ < f is clipped to p = 1, risk 1/f
    assert risk_exact([2], [1.5])[0] == pytest.approx(0.5)
    assert risk_approx([1], [1.0])[0] == pytest.approx(1.0)


def test_unweighted_risk_is_one_over_f():
    df = pd.DataFrame({"a": [1, 1, 2, 3, 3, 3]})
    r = individual_risk(df, ["a"])
    np.testing.assert_allclose(r.risk, 1.0 / np.array([2, 2, 1, 3, 3, 3]))


def test_household_risk():
    r = np.array([0.1, 0.2, 0.5, 0.0])
    hh = household_risk(r, np.array(["x", "x", "y", "y"]))
    np.testing.assert_allclose(hh, [1 - 0.9 * 0.8, 1 - 0.9 * 0.8, 0.5, 0.5])
    df = pd.DataFrame({"a": [1, 1, 2, 2], "w": [3.0, 3, 4, 4], "h": [1, 1, 2, 3]})
    ir = individual_risk(df, ["a"], weights="w", household="h")
    assert ir.household[0] == pytest.approx(1 - (1 - ir.risk[0]) ** 2)
    assert ir.household[2] == pytest.approx(ir.risk[2])


def _brute_missing(df, keys, w):
    n = len(df)
    fk = np.zeros(n, int)
    Fk = np.zeros(n)
    vals = df[keys].to_numpy(dtype=object)
    for i, j in itertools.product(range(n), range(n)):
        ok = all(pd.isna(a) or pd.isna(b) or a == b for a, b in zip(vals[i], vals[j]))
        if ok:
            fk[i] += 1
            Fk[i] += w[j]
    return fk, Fk


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([1, 2, None]), st.sampled_from(["a", "b", "c", None]),
                          st.sampled_from([0, 1])), min_size=1, max_size=25))
def test_missing_matches_anything(rows):
    df = pd.DataFrame(rows, columns=["x", "y", "z"])
    w = np.arange(1, len(df) + 1, dtype=float)
    fr = key_frequencies(df, ["x", "y", "z"], weights=w, missing_matches=True)
    fk, Fk = _brute_missing(df, ["x", "y", "z"], w)
    assert fr.fk.tolist() == fk.tolist()
    np.testing.assert_allclose(fr.Fk, Fk)
    # missing as its own category: the plain group-by counts
    fr2 = key_frequencies(df, ["x", "y", "z"])
    g = df.astype(object).fillna("NA").groupby(["x", "y", "z"])["x"].transform("size").to_numpy()
    assert fr2.fk.tolist() == g.tolist()


def test_frequencies_match_groupby_random():
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.integers(0, 4, size=(2000, 4)), columns=list("abcd"))
    df["w"] = rng.uniform(1, 50, 2000)
    fr = key_frequencies(df, list("abcd"), weights="w")
    g = df.groupby(list("abcd"))
    np.testing.assert_array_equal(fr.fk, g["w"].transform("size"))
    np.testing.assert_allclose(fr.Fk, g["w"].transform("sum"))
    assert fr.k_anonymity_violations(2) == int((g["w"].transform("size") < 2).sum())


def test_bad_input_messages_name_column_not_value():
    df = pd.DataFrame({"a": [1, 2], "w": [5.0, -3.25]})
    with pytest.raises(ValueError, match="unknown key column 'zz'"):
        key_frequencies(df, ["zz"])
    with pytest.raises(ValueError, match="'w'") as e:
        key_frequencies(df, ["a"], weights="w")
    assert "-3.25" not in str(e.value)
    df.loc[0, "w"] = np.nan
    with pytest.raises(ValueError, match=r"row 0 \(0-based position; index label 0\)"):
        individual_risk(df, ["a"], weights="w")
    with pytest.raises(ValueError, match="unknown weight column"):
        key_frequencies(df, ["a"], weights="nope")
