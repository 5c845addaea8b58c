"""Skinner & Shlomo log-linear risk (ORACLES.md A9), closed form vs IPF vs a direct GLM fit."""
import itertools

import numpy as np
import pandas as pd
import pytest

from tabprotect.microdata import (expected_inverse, fit_ipf, loglinear_risk, pr_population_unique,
                                  select_model)


@pytest.mark.parametrize("lam,pi,p1,e1", [(1, 0.5, 0.6065306597, 0.7869386806),
                                          (10, 0.1, 1.234098041e-4, 0.1110973989),
                                          (2, 0.01, 0.1380692373, 0.435318567)])
def test_a9_fixed_points(lam, pi, p1, e1):
    assert float(pr_population_unique(lam, pi)) == pytest.approx(p1, rel=1e-9)
    assert float(expected_inverse(lam, pi)) == pytest.approx(e1, rel=1e-9)


def _design(codes, levels, terms):
    """Dummy-coded design of a hierarchical model over all cells (independent of IPF)."""
    subs = {()}
    for t in terms:
        for r in range(1, len(t) + 1):
            subs.update(itertools.combinations(sorted(t), r))
    cols = []
    for s in sorted(subs, key=lambda s: (len(s), s)):
        if not s:
            cols.append(np.ones(len(codes)))
            continue
        for combo in itertools.product(*[range(1, levels[j]) for j in s]):
            cols.append(np.prod([codes[:, j] == c for j, c in zip(s, combo)], axis=0).astype(float))
    return np.column_stack(cols)


def _glm_poisson(X, y, offset, iters=100):
    beta = np.zeros(X.shape[1])
    beta[0] = np.log(max(y.mean(), 1e-3)) - offset.mean()
    for _ in range(iters):
        eta = X @ beta + offset
        mu = np.exp(eta)
        grad = X.T @ (y - mu)
        H = X.T @ (X * mu[:, None]) + 1e-10 * np.eye(X.shape[1])
        step = np.linalg.solve(H, grad)
        beta += step
        if np.max(np.abs(step)) < 1e-11:
            break
    return np.exp(X @ beta + offset)


def _sample(n=800, seed=3, interaction=True):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = np.where(rng.random(n) < (0.8 if interaction else 0.3), a % 2, rng.integers(0, 2, n))
    c = rng.integers(0, 4, n)
    d = np.where(rng.random(n) < 0.5, c % 3, rng.integers(0, 3, n)) if interaction else rng.integers(0, 3, n)
    return pd.DataFrame({"a": a, "b": b, "c": c, "d": d})


def test_main_effects_closed_form_equals_ipf_and_glm():
    df = _sample(300)
    keys = ["a", "b", "c", "d"]
    closed = loglinear_risk(df, keys, 0.02, model="main")
    ipf = loglinear_risk(df, keys, 0.02, model="main", method="ipf")
    assert closed.method == "closed" and ipf.method == "ipf"
    np.testing.assert_allclose(closed.lam, ipf.lam, rtol=1e-7)
    # direct Poisson GLM on all cells with offset log(pi)
    levels = [3, 2, 4, 3]
    cells = np.array(list(itertools.product(*[range(L) for L in levels])))
    f = df.groupby(keys).size().reindex(pd.MultiIndex.from_arrays(cells.T), fill_value=0).to_numpy(float)
    mu = _glm_poisson(_design(cells, levels, [(0,), (1,), (2,), (3,)]), f, np.full(len(f), np.log(0.02)))
    lam_glm = pd.Series(mu / 0.02, index=pd.MultiIndex.from_arrays(cells.T))
    rec = lam_glm.reindex(pd.MultiIndex.from_frame(df[keys])).to_numpy()
    np.testing.assert_allclose(closed.lam, rec, rtol=1e-6)
    su = closed.sample_unique
    assert closed.tau2 == pytest.approx(np.sum((1 - np.exp(-0.98 * rec[su])) / (0.98 * rec[su])), rel=1e-6)
    assert closed.tau1 == pytest.approx(np.sum(np.exp(-0.98 * rec[su])), rel=1e-6)


def test_interaction_model_matches_direct_glm():
    df = _sample(500)
    keys = ["a", "b", "c", "d"]
    model = [("a", "b"), ("c", "d")]
    ll = loglinear_risk(df, keys, 0.05, model=model, tol=1e-10)
    levels = [3, 2, 4, 3]
    cells = np.array(list(itertools.product(*[range(L) for L in levels])))
    f = df.groupby(keys).size().reindex(pd.MultiIndex.from_arrays(cells.T), fill_value=0).to_numpy(float)
    mu = _glm_poisson(_design(cells, levels, [(0, 1), (2, 3)]), f, np.full(len(f), np.log(0.05)))
    rec = pd.Series(mu / 0.05, index=pd.MultiIndex.from_arrays(cells.T)).reindex(
        pd.MultiIndex.from_frame(df[keys])).to_numpy()
    np.testing.assert_allclose(ll.lam, rec, rtol=1e-6)
    assert ll.diagnostics["n_params"] == _design(cells, levels, [(0, 1), (2, 3)]).shape[1]


def test_interaction_model_matches_statsmodels():
    sm = pytest.importorskip("statsmodels.api")
    df = _sample(400, seed=9)
    keys = ["a", "b", "c"]
    ll = loglinear_risk(df, keys, 0.1, model=[("a", "b"), ("c",)], tol=1e-10)
    levels = [3, 2, 4]
    cells = np.array(list(itertools.product(*[range(L) for L in levels])))
    f = df.groupby(keys).size().reindex(pd.MultiIndex.from_arrays(cells.T), fill_value=0).to_numpy(float)
    X = _design(cells, levels, [(0, 1), (2,)])
    res = sm.GLM(f, X, family=sm.families.Poisson(), offset=np.full(len(f), np.log(0.1))).fit(tol=1e-12)
    rec = pd.Series(res.fittedvalues / 0.1, index=pd.MultiIndex.from_arrays(cells.T)).reindex(
        pd.MultiIndex.from_frame(df[keys])).to_numpy()
    np.testing.assert_allclose(ll.lam, rec, rtol=1e-6)


def test_thirty_binary_keys_without_enumeration():
    rng = np.random.default_rng(1)
    n, C = 2000, 30
    X = (rng.random((n, C)) < 0.2).astype(int) + 1
    df = pd.DataFrame(X, columns=[f"k{i}" for i in range(C)])
    ll = loglinear_risk(df, list(df.columns), 0.02)
    assert ll.n_cells == 2 ** 30 and ll.diagnostics is None
    # per-record closed form computed independently from the margins
    p2 = (X == 2).mean(axis=0)
    prob = np.where(X == 2, p2, 1 - p2).prod(axis=1)
    np.testing.assert_allclose(ll.lam, n * prob / 0.02, rtol=1e-9)
    assert ll.n_sample_uniques == int((df.groupby(list(df.columns))['k0'].transform('size') == 1).sum())
    assert 0 < ll.tau2 < ll.n_sample_uniques


def test_per_category_sampling_fraction_closed_form_equals_ipf():
    df = _sample(600)
    pis = {0: 0.01, 1: 0.05, 2: 0.2}
    col = df["a"].map(pis)
    a = loglinear_risk(df.assign(pi=col), ["a", "b", "c"], "pi", pi_key="a")
    b = loglinear_risk(df, ["a", "b", "c"], pis, pi_key="a", method="ipf", tol=1e-11)
    np.testing.assert_allclose(a.lam, b.lam, rtol=1e-7)
    np.testing.assert_allclose(a.pi, col.to_numpy())
    with pytest.raises(ValueError, match="pi_key"):
        loglinear_risk(df.assign(pi=col), ["a", "b"], "pi")
    with pytest.raises(ValueError, match="not constant"):
        loglinear_risk(df.assign(pi=df["c"].map({0: .1, 1: .2, 2: .3, 3: .4})), ["a", "c"], "pi", pi_key="a")


def test_estimates_track_true_risk_when_model_holds():
    rng = np.random.default_rng(11)
    N, pi = 60_000, 0.05
    probs = [np.array(p) / sum(p) for p in ([5, 3, 1, 1], [1, 1], [6, 3, 1], [3, 2, 1, 1, 1], [8, 1, 1])]
    pop = pd.DataFrame({f"k{j}": rng.choice(len(p), size=N, p=p) for j, p in enumerate(probs)})
    keys = list(pop.columns)
    Fpop = pop.groupby(keys)[keys[0]].transform("size").to_numpy()
    est, true = [], []
    for rep in range(5):
        s = rng.random(N) < pi
        samp = pop[s].reset_index(drop=True)
        ll = loglinear_risk(samp, keys, pi)
        su = ll.sample_unique
        est.append(ll.tau2)
        true.append(np.sum(1.0 / Fpop[s][su]))
    assert np.mean(est) == pytest.approx(np.mean(true), rel=0.15)


def test_diagnostics_and_model_selection_prefer_true_interaction():
    rng = np.random.default_rng(4)
    n = 3000
    a = rng.integers(0, 4, n)
    b = np.where(rng.random(n) < 0.9, a, rng.integers(0, 4, n))  # strong a-b association
    c = rng.integers(0, 5, n)
    df = pd.DataFrame({"a": a, "b": b, "c": c})
    main = loglinear_risk(df, ["a", "b", "c"], 0.01, diagnostics=True)
    inter = loglinear_risk(df, ["a", "b", "c"], 0.01, model=[("a", "b")])
    assert inter.diagnostics["deviance"] < main.diagnostics["deviance"]
    assert abs(inter.diagnostics["B2_std"]) < abs(main.diagnostics["B2_std"])
    fit, path = select_model(df, ["a", "b", "c"], 0.01)
    assert ("a", "b") in fit.model
    assert len(path) >= 2


def test_ipf_reproduces_margins():
    t = np.arange(24, dtype=float).reshape(2, 3, 4)
    mu, _ = fit_ipf(t, [(0, 1), (1, 2)])
    np.testing.assert_allclose(mu.sum(axis=2), t.sum(axis=2))
    np.testing.assert_allclose(mu.sum(axis=0), t.sum(axis=0))


def test_bad_input():
    df = _sample(50)
    with pytest.raises(ValueError, match="between 0 and 1"):
        loglinear_risk(df, ["a"], 1.5)
    with pytest.raises(ValueError, match="unknown key column 'zz'"):
        loglinear_risk(df, ["a", "zz"], 0.1)
    with pytest.raises(ValueError, match="unknown key column"):
        loglinear_risk(df, ["a", "b"], 0.1, model=[("a", "q")])
