"""PRAM: invariance, unbiased estimator and its variance, zero transitions, strata, seeds."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from tabprotect.microdata import (apply_transition, generate_pram_matrix, invariant_matrix,
                                  invariant_pram, pram, pram_estimate, pram_variance)


def _random_P(rng, K, zeros=True):
    P = rng.random((K, K)) + np.eye(K) * K
    if zeros:
        P[rng.random((K, K)) < 0.3] = 0.0
        P[np.arange(K), np.arange(K)] += 1.0
    return P / P.sum(axis=1, keepdims=True)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10 ** 6), K=st.integers(2, 7), a=st.floats(0.0, 1.0))
def test_invariant_matrix_keeps_frequencies(seed, K, a):
    rng = np.random.default_rng(seed)
    P = _random_P(rng, K)
    T = rng.integers(0, 200, K).astype(float)
    T[0] += 1
    R = invariant_matrix(P, T, a)
    np.testing.assert_allclose(R.sum(axis=1), 1.0, atol=1e-12)
    assert (R >= -1e-15).all()
    np.testing.assert_allclose(T @ R, T, atol=1e-8 * T.sum())


def test_invariant_pram_expected_frequencies_and_strata():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.choice(list("abcd"), 4000, p=[.5, .3, .15, .05]),
                       "s": rng.integers(0, 2, 4000)})
    res = invariant_pram(df, "x", d=0.7, a=0.8, strata="s", seed=3)
    for s in (0, 1):
        R = res.matrix("x", s)
        T = df.loc[df.s == s, "x"].value_counts().reindex(R.index, fill_value=0).to_numpy(float)
        np.testing.assert_allclose(T @ R.values, T, atol=1e-8)
    assert set(res.matrices) == {("x", 0), ("x", 1)}
    # strata are untouched and the applied matrices are stochastic
    assert (res.data["s"] == df["s"]).all()


def test_zero_transitions_never_happen():
    rng = np.random.default_rng(2)
    K = 6
    P = _random_P(rng, K)
    P[:, -1] = 0.0  # trailing zero column: the float edge at the end of each row
    P[-1] = 0.0
    P[-1, 0] = 1.0
    P[2] = [0, 0, 1e-9, 0.5, 0.5 - 1e-9, 0]
    P = P / P.sum(axis=1, keepdims=True)
    codes = np.repeat(np.arange(K), 50_000)
    out = apply_transition(codes, P, rng=7)
    counts = np.zeros((K, K))
    np.add.at(counts, (codes, out), 1)
    assert (counts[P == 0] == 0).all()
    # frequencies of the transitions agree with P
    np.testing.assert_allclose(counts / counts.sum(axis=1, keepdims=True), P, atol=0.01)
    # u exactly 0 and just below 1
    u = np.array([0.0, np.nextafter(1.0, 0.0)] * K)
    out = apply_transition(np.repeat(np.arange(K), 2), P, u=u)
    assert (P[np.repeat(np.arange(K), 2), out] > 0).all()


def test_estimator_unbiased_and_variance_matches_simulation():
    rng = np.random.default_rng(1)
    cats = ["a", "b", "c", "d"]
    T = np.array([900, 600, 300, 200])
    x = np.repeat(cats, T)
    df = pd.DataFrame({"x": x})
    P = generate_pram_matrix(cats, d={"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.75}, spread="random", seed=4)
    reps = 600
    est = np.empty((reps, 4))
    for r in range(reps):
        pert = pram(df, "x", P=P, seed=1000 + r).data["x"]
        Ts = pert.value_counts().reindex(cats, fill_value=0).to_numpy(float)
        est[r] = pram_estimate(Ts, P).T_hat
    V = pram_variance(T, P.values)
    # unbiased: the mean of the estimates is within 4 standard errors of T
    se_mean = np.sqrt(np.diag(V) / reps)
    assert (np.abs(est.mean(axis=0) - T) < 4 * se_mean).all()
    # variance formula against the simulated covariance (diagonal within 20 %)
    emp = np.cov(est.T)
    np.testing.assert_allclose(np.diag(emp), np.diag(V), rtol=0.2)
    # and a clearly wrong variance (ignoring the inverse) would fail
    Vwrong = np.diag(T @ P.values) - (P.values.T * T) @ P.values
    assert not np.allclose(np.diag(emp), np.diag(Vwrong), rtol=0.2)


def test_variance_formula_for_released_counts():
    # Var(T*) = sum_k T_k (diag(p_k) - p_k p_k'): multinomial rows, checked by simulation
    rng = np.random.default_rng(8)
    P = _random_P(rng, 3, zeros=False)
    T = np.array([400, 250, 100])
    codes = np.repeat(np.arange(3), T)
    sims = np.array([np.bincount(apply_transition(codes, P, rng=s), minlength=3) for s in range(2500)])
    V = P.T @ pram_variance(T, P) @ P
    np.testing.assert_allclose(np.cov(sims.T), V, atol=0.12 * np.abs(V).max())


def test_generated_matrix_options():
    P = generate_pram_matrix(["a", "b", "c", "d"], d={"a": 0.6, "default": 0.9}, unperturbed=["d"])
    assert P.loc["a", "a"] == pytest.approx(0.6) and P.loc["b", "b"] == pytest.approx(0.9)
    assert P.loc["d", "d"] == 1.0 and (P.loc[["a", "b", "c"], "d"] == 0).all()
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    Pr = generate_pram_matrix(list("abc"), d=0.7, spread="random", seed=1)
    assert (np.diag(Pr.values) >= 0.7 - 1e-12).all()


def test_seeded_and_independent_per_record():
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"x": rng.choice(list("abc"), 3000), "y": rng.integers(0, 3, 3000)})
    a = pram(df, ["x", "y"], d=0.6, seed=42)
    b = pram(df, ["x", "y"], d=0.6, seed=42)
    c = pram(df, ["x", "y"], d=0.6, seed=43)
    pd.testing.assert_frame_equal(a.data, b.data)
    assert not a.data.equals(c.data)
    assert a.data["y"].dtype == df["y"].dtype
    changed = (a.data["x"] != df["x"]).mean()
    assert changed == pytest.approx(0.4, abs=0.04)
    # the original is not modified
    assert df.equals(pd.DataFrame({"x": df["x"], "y": df["y"]}))


def test_stratified_user_matrices_are_kept():
    df = pd.DataFrame({"x": list("ab") * 100, "s": [1] * 100 + [2] * 100})
    P1 = pd.DataFrame([[1.0, 0.0], [0.0, 1.0]], index=list("ab"), columns=list("ab"))
    P2 = pd.DataFrame([[0.0, 1.0], [1.0, 0.0]], index=list("ab"), columns=list("ab"))
    res = pram(df, "x", P={("x", 1): P1, ("x", 2): P2}, strata="s", seed=0)
    assert (res.data.loc[df.s == 1, "x"] == df.loc[df.s == 1, "x"]).all()
    assert (res.data.loc[df.s == 2, "x"] != df.loc[df.s == 2, "x"]).all()
    assert res.matrix("x", 2).equals(P2)


def test_bad_matrices():
    df = pd.DataFrame({"x": ["a", "b", "b"]})
    bad = pd.DataFrame([[0.9, 0.2], [0.1, 0.9]], index=["a", "b"], columns=["a", "b"])
    with pytest.raises(ValueError, match="category 'a' sums"):
        pram(df, "x", P=bad)
    neg = pd.DataFrame([[1.1, -0.1], [0.1, 0.9]], index=["a", "b"], columns=["a", "b"])
    with pytest.raises(ValueError, match="negative"):
        pram(df, "x", P=neg)
    ok = pd.DataFrame([[0.9, 0.1], [0.1, 0.9]], index=["a", "b"], columns=["a", "b"])
    with pytest.raises(ValueError, match=r"row 1 \(0-based position; index label 1\): "
                                         "column 'x': the category is not in the transition"):
        pram(pd.DataFrame({"x": ["a", "c"]}), "x", P=ok)
    with pytest.raises(ValueError, match="unknown PRAM column 'zz'"):
        pram(df, "zz", d=0.8)
    with pytest.raises(ValueError, match="singular"):
        pram_estimate([1.0, 1.0], np.full((2, 2), 0.5))
