"""Risk under misclassification (Shlomo & Skinner 2010), swapping and uniqueness risk."""
import itertools

import numpy as np
import pandas as pd
import pytest

from tabprotect.microdata import (binary_invariant_M, loglinear_risk, misclassification_risk, pram,
                                  record_risk_known_population, swap, uniqueness_risk)


def _population(N=20_000, C=4, p=0.2, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame((rng.random((N, C)) < p).astype(int) + 1, columns=[f"k{i}" for i in range(C)])


def test_known_population_risk_against_explicit_kronecker():
    pop = _population(N=3000, C=3, seed=1)
    keys = list(pop.columns)
    Ms = {"k0": binary_invariant_M(0.2, 0.05), "k2": binary_invariant_M(0.2, 0.1)}
    rng = np.random.default_rng(2)
    released = pop.sample(200, random_state=3).reset_index(drop=True)
    released["k0"] = np.where(rng.random(200) < 0.3, 3 - released["k0"], released["k0"])
    out = record_risk_known_population(released, pop, keys, Ms, 0.05, only_uniques=False)
    # explicit: enumerate the 8 cells, full M = kron(M0, I, M2) with columns = true
    cells = list(itertools.product([1, 2], repeat=3))
    Mfull = np.kron(np.kron(Ms["k0"].values, np.eye(2)), Ms["k2"].values)
    F = pop.groupby(keys).size().reindex(pd.MultiIndex.from_tuples(cells), fill_value=0).to_numpy(float)
    pi = 0.05
    for i, row in released.iterrows():
        j = cells.index(tuple(row[keys]))
        mjj = Mfull[j, j]
        exact = (mjj / (1 - pi * mjj)) / np.sum(F * Mfull[j] / (1 - pi * Mfull[j]))
        assert F[j] > 0
        assert out.loc[i, "exact"] == pytest.approx(exact, rel=1e-10)
        assert out.loc[i, "approx"] == pytest.approx(mjj / (Mfull[j] @ F), rel=1e-10)
        assert out.loc[i, "M_jj"] == pytest.approx(mjj)
        assert out.loc[i, "F_j"] == F[j]
    # small pi: the approximation is close to the exact form
    np.testing.assert_allclose(out["approx"], out["exact"], rtol=0.05)


def test_identity_misclassification_equals_loglinear():
    samp = _population(N=1500, C=8, seed=4)
    keys = list(samp.columns)
    r = misclassification_risk(samp, keys, {}, 0.02, original=samp)
    ll = loglinear_risk(samp, keys, 0.02)
    assert r.tau2_misclassified == pytest.approx(ll.tau2)
    assert r.tau2_naive == pytest.approx(ll.tau2) == pytest.approx(r.tau2_original)
    assert r.tau2_adhoc == pytest.approx(ll.tau2)


def test_pram_lowers_risk_and_m_jj_is_product_of_diagonals():
    pop = _population(N=50_000, C=10, seed=5)
    keys = list(pop.columns)
    samp = pop.sample(2000, random_state=1).reset_index(drop=True)
    P = {k: binary_invariant_M(0.2, 0.05).T for k in keys}  # PRAM matrices: rows = true
    res = pram(samp, keys, P=P, seed=11)
    r = misclassification_risk(res.data, keys, res, 0.04, original=samp)
    # M_jj = prod over keys of the diagonal entry of the released category
    d = {1: 0.95, 2: 0.8}
    expect = np.prod(np.vectorize(d.get)(res.data[keys].to_numpy()), axis=1)
    np.testing.assert_allclose(r.m_jj, expect)
    assert r.tau2_misclassified < r.tau2_naive
    assert r.tau2_misclassified < r.tau2_original
    # compare with the realised truth: sample uniques whose released value is their true value
    Fpop = pop.groupby(keys).size()
    su = r.fit.sample_unique
    rel = res.data[keys][su]
    correct = (rel.to_numpy() == samp[keys][su].to_numpy()).all(axis=1)
    F = Fpop.astype(float).reindex(pd.MultiIndex.from_frame(rel), fill_value=np.inf).to_numpy(float)
    truth = np.sum(correct / F)
    assert r.tau2_misclassified == pytest.approx(truth, rel=0.35)


def test_bad_misclassification_matrix():
    samp = _population(N=100, C=2)
    bad = pd.DataFrame([[0.9, 0.3], [0.2, 0.7]], index=[1, 2], columns=[1, 2])
    with pytest.raises(ValueError, match="column for category 1 sums"):
        misclassification_risk(samp, ["k0", "k1"], {"k0": bad}, 0.1)
    M = pd.DataFrame([[1.0]], index=[1], columns=[1])
    with pytest.raises(ValueError, match="column 'k0': category 2"):
        misclassification_risk(samp, ["k0", "k1"], {"k0": M}, 0.1)


def test_swapping_within_control_groups():
    rng = np.random.default_rng(0)
    n = 4000
    df = pd.DataFrame({"geo": rng.integers(0, 6, n), "sex": rng.integers(0, 2, n),
                       "age": rng.integers(0, 5, n)})
    res = swap(df, "geo", control=["sex", "age"], rate=0.1, seed=1)
    assert res.n_swaps == round(0.1 * n / 2)
    i, j = res.pairs.T
    assert (df.sex.values[i] == df.sex.values[j]).all() and (df.age.values[i] == df.age.values[j]).all()
    assert (df.geo.values[i] != df.geo.values[j]).all()
    assert (res.data.geo.values[i] == df.geo.values[j]).all()
    assert len(np.unique(res.pairs)) == 2 * res.n_swaps
    # margins within every control group are unchanged, other columns untouched
    pd.testing.assert_series_equal(df.groupby(["sex", "age", "geo"]).size(),
                                   res.data.groupby(["sex", "age", "geo"]).size())
    assert (res.data[["sex", "age"]] == df[["sex", "age"]]).all().all()
    assert (res.data.geo != df.geo).sum() == res.n_records_changed
    np.testing.assert_allclose(res.M.sum(axis=0), 1.0)
    np.testing.assert_allclose(res.M.values, res.P.values.T)


def test_targeted_swapping_takes_high_risk_first():
    rng = np.random.default_rng(3)
    n = 1000
    df = pd.DataFrame({"geo": rng.integers(0, 4, n)})
    risk = rng.random(n)
    res = swap(df, "geo", rate=0.1, risk=risk, seed=2)
    initiators = res.pairs[:, 0]
    assert res.targeted
    assert np.mean(risk[initiators]) > 0.85
    with pytest.raises(ValueError, match="unknown control column"):
        swap(df, "geo", control="nope")


def test_uniqueness_risk():
    pop = pd.DataFrame({"k": [1, 1, 2, 3, 3, 3, 4, 5], "s": [0] * 8})
    rel = pop.iloc[[0, 2, 6]]
    r = uniqueness_risk(rel, pop, ["k"], intruder_size=0.5)
    assert r.n_population_uniques == 3 and r.prob_correct == pytest.approx(3 / 8 * 0.5 * 3 / 8)
    assert r.population_class_size.tolist() == [2, 1, 1]
    assert r.record_risk.tolist() == [0.0, 0.5, 0.5]
    np.testing.assert_allclose(r.record_risk_broad, [0.25, 0.5, 0.5])
    assert r.prob_correct_broad == pytest.approx(3 / 8 * 0.5 * 5 / 8)
    sub = uniqueness_risk(rel, pop, ["k"], intruder_size=4, subsample=True)
    assert sub.prob_correct == pytest.approx(3 / 8 * 3 / 8)
    assert sub.record_risk.tolist() == [0.0, 1.0, 1.0]
    know = uniqueness_risk(rel, pop, ["k"], intruder_size=0.5, response_knowledge=True)
    assert know.prob_correct == pytest.approx(0.5 * 3 / 8)
    with pytest.raises(ValueError, match="absent from the population"):
        uniqueness_risk(pd.DataFrame({"k": [9]}), pop, ["k"])


def test_uniqueness_against_simulation():
    rng = np.random.default_rng(7)
    N = 5000
    pop = pd.DataFrame({"a": rng.integers(0, 30, N), "b": rng.integers(0, 30, N)})
    r = uniqueness_risk(pop.iloc[:500], pop, ["a", "b"], intruder_size=0.3)
    cnt = pop.groupby(["a", "b"])["a"].transform("size").to_numpy()
    hits = []
    for s in range(2000):
        in1 = rng.random(N) < 0.1
        in2 = rng.random(N) < 0.3
        hits.append(np.mean(in1 & in2 & (cnt == 1)))
    assert np.mean(hits) == pytest.approx(0.1 * 0.3 * np.mean(cnt == 1), rel=0.1)
    assert r.p_population_unique == pytest.approx(np.mean(cnt == 1))
