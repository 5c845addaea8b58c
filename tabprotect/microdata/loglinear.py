"""Skinner & Shlomo (2008) log-linear identification risk.

Model: population cell counts ``F_k ~ Poisson(lambda_k)``; Bernoulli sampling
with fraction ``pi_k`` gives ``f_k ~ Poisson(pi_k lambda_k)`` and, independently,
``F_k - f_k ~ Poisson((1 - pi_k) lambda_k)``.  ``log lambda_k = x_k' beta`` is
fitted by Poisson maximum likelihood on the *sample* counts with offset
``log pi_k`` so that ``lambda`` is on the population scale.  For a sample
unique (``f_k = 1``):

    Pr(F_k = 1 | f_k = 1) = exp(-(1 - pi_k) lambda_k)
    E(1/F_k | f_k = 1)   = (1 - exp(-(1 - pi_k) lambda_k)) / ((1 - pi_k) lambda_k)

and the file-level measures are their sums over the sample uniques,
``tau1`` (expected number of sample uniques that are population unique) and
``tau2`` (expected number of correct matches of sample uniques).

Main-effects model: the fitted sample-scale mean is the product of the
one-way margins, ``mu_k = n prod_j (n_j(x_kj) / n)`` (also when ``pi`` depends on
one key variable, whose main effect absorbs the offset), so the risk of each
record is computed from its own categories without enumerating cells: 30
binary keys (2^30 cells) are no problem.  Models with interactions are fitted
by iterative proportional fitting over the enumerated table, started from
the offset ``pi_k`` so that IPF converges to the Poisson MLE with offset.

Model choice: the under-fitting statistics of Skinner & Shlomo.  With
``g_a(mu) = E[I(f=1) h_a(lambda)]`` for the summand of ``tau_a``, a second-order
expansion gives the bias of ``tau_a`` from a misspecified ``mu`` as
``sum_k g_a''(mu_k)/2 (mu_k^true - mu_k)^2``; ``(f_k - mu_k)^2 - f_k`` estimates
``(mu_k^true - mu_k)^2`` unbiasedly under the Poisson model, hence

    B_a = sum_k g_a''(mu_k) / 2 [(f_k - mu_k)^2 - f_k],   v_a = sum_k (g_a''(mu_k)/2)^2 2 mu_k^2,

and ``z_a = B_a / sqrt(v_a)``.  A large ``|z_a|`` indicates under-fitting
(add interactions); ``g_1(mu) = mu exp(-mu/pi)``,
``g_2(mu) = pi/(1-pi) (exp(-mu) - exp(-mu/pi))``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Sequence

import numpy as np
import pandas as pd

from ._validate import RowError, check_columns, check_fraction, label
from .keys import combine_codes, encode_keys

__all__ = ["LogLinearRisk", "loglinear_risk", "pr_population_unique", "expected_inverse",
           "fit_ipf", "select_model"]


def pr_population_unique(lam: np.ndarray | float, pi: np.ndarray | float) -> np.ndarray:
    """``Pr(F = 1 | f = 1) = exp(-(1 - pi) lambda)`` (lambda on the population scale).

    Examples
    --------
    >>> round(float(pr_population_unique(1.0, 0.5)), 10)
    0.6065306597
    """
    lam = np.asarray(lam, dtype=float)
    pi = np.asarray(pi, dtype=float)
    return np.exp(-(1.0 - pi) * lam)


def expected_inverse(lam: np.ndarray | float, pi: np.ndarray | float) -> np.ndarray:
    """``E(1/F | f = 1) = (1 - exp(-x)) / x`` with ``x = (1 - pi) lambda``.

    Examples
    --------
    >>> round(float(expected_inverse(10.0, 0.1)), 10)
    0.1110973989
    """
    x = (1.0 - np.asarray(pi, dtype=float)) * np.asarray(lam, dtype=float)
    x = np.asarray(x, dtype=float)
    out = np.ones_like(x)
    m = x > 1e-10
    out[m] = -np.expm1(-x[m]) / x[m]
    out[~m] = 1.0 - x[~m] / 2.0
    return out


@dataclass
class LogLinearRisk:
    """Result of :func:`loglinear_risk` (per record arrays have one entry per record).

    ``lam`` population-scale mean of each record's cell, ``mu = pi * lam``;
    ``pr_unique`` and ``e_inv`` are NaN for records that are not sample unique.
    """

    keys: list[str]
    model: list[tuple[str, ...]]
    method: str
    sampling_fraction: float | dict
    pi: np.ndarray
    lam: np.ndarray
    fk: np.ndarray
    pr_unique: np.ndarray
    e_inv: np.ndarray
    tau1: float
    tau2: float
    n_cells: int
    diagnostics: dict | None = None
    notes: dict = field(default_factory=dict)

    @property
    def mu(self) -> np.ndarray:
        return self.pi * self.lam

    @property
    def sample_unique(self) -> np.ndarray:
        return self.fk == 1

    @property
    def n_sample_uniques(self) -> int:
        return int(np.count_nonzero(self.fk == 1))

    def summary(self) -> dict:
        out = {"model": [" * ".join(t) for t in self.model], "method": self.method,
               "n_cells": self.n_cells, "n_sample_uniques": self.n_sample_uniques,
               "tau1": self.tau1, "tau2": self.tau2}
        if self.diagnostics:
            out.update({k: v for k, v in self.diagnostics.items() if np.isscalar(v)})
        return out


def _resolve_pi(data: pd.DataFrame, keys: list[str], codes: np.ndarray, cats: list,
                sampling_fraction, pi_key: str | None):
    """Return (pi per record, pi per category of pi_key or None, description)."""
    n = len(data)
    if np.isscalar(sampling_fraction) and not isinstance(sampling_fraction, str):
        pi = check_fraction(sampling_fraction)
        return np.full(n, pi), None, pi
    if isinstance(sampling_fraction, str):
        if sampling_fraction not in data.columns:
            raise ValueError(f"unknown sampling_fraction column {sampling_fraction!r}")
        arr = pd.to_numeric(data[sampling_fraction], errors="coerce").to_numpy(dtype=float)
        name = sampling_fraction
    elif isinstance(sampling_fraction, dict):
        if pi_key is None:
            raise ValueError("a sampling_fraction mapping needs pi_key (the key it depends on)")
        if pi_key not in keys:
            raise ValueError(f"pi_key {pi_key!r} is not a key column")
        j = keys.index(pi_key)
        lev = np.empty(len(cats[j]))
        for i, c in enumerate(cats[j]):
            if c not in sampling_fraction:
                raise ValueError(f"sampling_fraction has no value for category {label(c)!r} of {pi_key!r}")
            lev[i] = check_fraction(sampling_fraction[c], f"sampling_fraction[{c!r}]")
        if (codes[:, j] < 0).any():
            raise ValueError(f"pi_key {pi_key!r} has missing values")
        return lev[codes[:, j]], lev, dict(sampling_fraction)
    else:
        arr = np.asarray(sampling_fraction, dtype=float)
        name = "sampling_fraction"
    if arr.shape != (n,):
        raise ValueError(f"{name}: expected {n} values")
    bad = ~np.isfinite(arr) | (arr <= 0) | (arr >= 1)
    if bad.any():
        raise RowError(f"{name} must lie in (0, 1) (the first bad row)",
                       np.flatnonzero(bad)[0], data.index if len(data) == n else None)
    if np.ptp(arr) <= 1e-12 * arr.max():
        return np.full(n, float(arr[0])), None, float(arr[0])
    if pi_key is None:
        raise ValueError(f"{name} varies between records: give pi_key, the key variable "
                         "on which the sampling fraction depends")
    if pi_key not in keys:
        raise ValueError(f"pi_key {pi_key!r} is not a key column")
    j = keys.index(pi_key)
    if (codes[:, j] < 0).any():
        raise ValueError(f"pi_key {pi_key!r} has missing values")
    L = len(cats[j])
    lo = np.full(L, np.inf)
    hi = np.full(L, -np.inf)
    np.minimum.at(lo, codes[:, j], arr)
    np.maximum.at(hi, codes[:, j], arr)
    badc = np.flatnonzero(hi - lo > 1e-12)
    if badc.size:
        raise ValueError(f"{name} is not constant within category {label(cats[j][badc[0]])!r} of {pi_key!r}")
    return arr, lo, {c: float(v) for c, v in zip(cats[j], lo)}


def _g2(mu: np.ndarray, pi: np.ndarray) -> np.ndarray:
    return pi / (1 - pi) * (np.exp(-mu) - np.exp(-mu / pi))


def _g1dd(mu, pi):
    return np.exp(-mu / pi) * (mu / pi ** 2 - 2.0 / pi)


def _g2dd(mu, pi):
    return pi / (1 - pi) * (np.exp(-mu) - np.exp(-mu / pi) / pi ** 2)


def _diagnostics(f: np.ndarray, mu: np.ndarray, pi: np.ndarray, n_params: int) -> dict:
    """Goodness-of-fit and under-fitting statistics over all cells (flat arrays)."""
    f = f.astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        dev = 2.0 * np.sum(np.where(f > 0, f * np.log(f / mu), 0.0) - (f - mu))
        pearson = float(np.sum(np.where(mu > 0, (f - mu) ** 2 / mu, 0.0)))
    z = (f - mu) ** 2 - f
    out = {"deviance": float(dev), "pearson": pearson, "n_params": int(n_params),
           "df": int(f.size - n_params), "aic": float(dev + 2 * n_params),
           "tau1_expected": float(np.sum(mu * np.exp(-mu / pi))),
           "tau2_expected": float(np.sum(_g2(mu, pi)))}
    for a, gdd in ((1, _g1dd), (2, _g2dd)):
        c = gdd(mu, pi) / 2.0
        B = float(np.sum(c * z))
        v = float(np.sum(c ** 2 * 2.0 * mu ** 2))
        out[f"B{a}"] = B
        out[f"B{a}_std"] = float(B / np.sqrt(v)) if v > 0 else 0.0
    return out


def _n_params(terms: list[tuple[int, ...]], levels: Sequence[int]) -> int:
    subs = {()}
    for t in terms:
        for r in range(1, len(t) + 1):
            subs.update(combinations(sorted(t), r))
    return int(sum(np.prod([levels[j] - 1 for j in s]) if s else 1 for s in subs))


def fit_ipf(counts: np.ndarray, terms: Sequence[Sequence[int]], offset: np.ndarray | float = 1.0,
            tol: float = 1e-8, max_iter: int = 1000) -> tuple[np.ndarray, int]:
    """Poisson MLE of a hierarchical log-linear model by iterative proportional fitting.

    ``counts`` is the full table (one axis per key), ``terms`` the generating
    class as tuples of axes, ``offset`` the multiplicative offset (``pi``; a
    scalar or an array broadcastable to the table).  Returns the fitted means
    (sample scale) and the number of iterations.

    Examples
    --------
    >>> t = np.array([[10., 20.], [30., 40.]])
    >>> mu, _ = fit_ipf(t, [(0,), (1,)])
    >>> mu.round(1).tolist()
    [[12.0, 18.0], [28.0, 42.0]]
    """
    counts = np.asarray(counts, dtype=float)
    nd = counts.ndim
    mu = np.broadcast_to(np.asarray(offset, dtype=float), counts.shape).astype(float).copy()
    specs = []
    for t in terms:
        t = tuple(sorted(set(int(a) for a in t)))
        other = tuple(a for a in range(nd) if a not in t)
        specs.append((other, counts.sum(axis=other, keepdims=True)))
    it = 0
    for it in range(1, max_iter + 1):
        err = 0.0
        for other, target in specs:
            cur = mu.sum(axis=other, keepdims=True)
            err = max(err, float(np.max(np.abs(cur - target))))
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(cur > 0, target / cur, 0.0)
            mu *= ratio
        if err < tol:
            break
    return mu, it


def _normalise_model(model, keys: list[str]) -> list[tuple[str, ...]]:
    if model is None or model == "main" or model == "main_effects":
        return [(k,) for k in keys]
    if isinstance(model, str):
        raise ValueError(f"unknown model {model!r}: use 'main' or a list of interaction terms")
    terms = []
    for t in model:
        t = (t,) if isinstance(t, str) else tuple(t)
        for k in t:
            if k not in keys:
                raise ValueError(f"model term uses unknown key column {k!r}")
        terms.append(t)
    covered = {k for t in terms for k in t}
    terms += [(k,) for k in keys if k not in covered]
    # drop terms contained in larger terms
    out = []
    for t in terms:
        if not any(set(t) < set(u) for u in terms) and t not in out:
            out.append(t)
    return out


def loglinear_risk(data: pd.DataFrame, keys: Sequence[str], sampling_fraction: float | str | np.ndarray | dict,
                   model: str | Sequence[Sequence[str]] | None = "main", pi_key: str | None = None,
                   method: str = "auto", max_cells: int = 5_000_000, diagnostics: bool | None = None,
                   tol: float = 1e-8, max_iter: int = 1000) -> LogLinearRisk:
    """Skinner & Shlomo (2008) log-linear risk per sample unique and for the file.

    Parameters
    ----------
    data : the sample microdata.
    keys : key columns (missing values form a category of their own).
    sampling_fraction : ``pi`` as a constant in (0, 1); or a column / array of
        per-record fractions (constant within the categories of ``pi_key``);
        or a mapping {category of ``pi_key``: pi}.
    model : "main" (main effects, closed form) or a list of interaction terms,
        e.g. ``[("age", "sex"), ("region",)]``; keys not mentioned enter as main effects.
    method : "auto", "closed" (main effects only) or "ipf" (enumerates the cells).
    max_cells : largest table that may be enumerated (IPF and diagnostics).
    diagnostics : compute goodness-of-fit / under-fitting statistics (needs the
        enumerated table); default: when the table has at most ``max_cells`` cells.

    Examples
    --------
    >>> df = pd.DataFrame({"a": [1, 1, 2, 2, 1], "b": [1, 2, 1, 1, 1]})
    >>> r = loglinear_risk(df, ["a", "b"], 0.1)
    >>> r.n_sample_uniques, round(r.tau2, 4)
    (1, 0.1843)
    """
    keys = check_columns(data, keys)
    codes, cats = encode_keys(data, keys)
    n = len(data)
    if n == 0:
        raise ValueError("no records")
    # missing values: a category of their own (shift codes)
    levels = []
    for j in range(len(keys)):
        if (codes[:, j] < 0).any():
            codes[:, j] += 1
            cats[j] = np.concatenate([[None], cats[j]])
        levels.append(len(cats[j]))
    pi, pi_levels, pi_desc = _resolve_pi(data, keys, codes, cats, sampling_fraction, pi_key)
    terms = _normalise_model(model, keys)
    main_only = all(len(t) == 1 for t in terms)
    n_cells = int(np.prod([float(v) for v in levels]))
    if method == "auto":
        method = "closed" if main_only else "ipf"
    if method == "closed" and not main_only:
        raise ValueError("the closed form is only available for the main-effects model")
    if method not in ("closed", "ipf"):
        raise ValueError(f"unknown method {method!r}")
    cell, ncell_obs = combine_codes(codes, levels)
    fk = np.bincount(cell, minlength=ncell_obs)[cell]
    enumerable = n_cells <= max_cells
    if method == "ipf" and not enumerable:
        raise ValueError(f"the model needs the full table of {n_cells} cells (> max_cells="
                         f"{max_cells}); use fewer keys or the main-effects model")
    want_diag = enumerable if diagnostics is None else bool(diagnostics)
    if want_diag and not enumerable:
        raise ValueError(f"diagnostics need the full table of {n_cells} cells (> max_cells)")
    key_idx = {k: j for j, k in enumerate(keys)}
    table = mu_table = None
    if want_diag or method == "ipf":
        flat = np.ravel_multi_index(tuple(codes.T), levels) if len(keys) else np.zeros(n, int)
        table = np.bincount(flat, minlength=n_cells).reshape(levels).astype(float)
        if pi_levels is None:
            offset = float(pi[0])
        else:
            j = key_idx[pi_key]
            shape = [1] * len(keys)
            shape[j] = levels[j]
            offset = pi_levels.reshape(shape)
    notes = {}
    if method == "closed":
        logmu = np.full(n, np.log(n), dtype=float)
        for j in range(len(keys)):
            m = np.bincount(codes[:, j], minlength=levels[j]).astype(float)
            logmu += np.log(m[codes[:, j]] / n)
        mu = np.exp(logmu)
        if want_diag:
            mu_table = np.full(levels, float(n))
            for j in range(len(keys)):
                shape = [1] * len(keys)
                shape[j] = levels[j]
                mu_table = mu_table * (table.sum(axis=tuple(a for a in range(len(keys)) if a != j))
                                       .reshape(shape) / n)
    else:
        tix = [tuple(key_idx[k] for k in t) for t in terms]
        mu_table, iters = fit_ipf(table, tix, offset=offset, tol=tol, max_iter=max_iter)
        notes["ipf_iterations"] = iters
        mu = mu_table.reshape(-1)[flat]
    lam = mu / pi
    su = fk == 1
    pr = np.full(n, np.nan)
    ei = np.full(n, np.nan)
    pr[su] = pr_population_unique(lam[su], pi[su])
    ei[su] = expected_inverse(lam[su], pi[su])
    diag = None
    if want_diag:
        pit = np.broadcast_to(np.asarray(offset, dtype=float), table.shape).reshape(-1)
        diag = _diagnostics(table.reshape(-1), mu_table.reshape(-1), pit,
                            _n_params([tuple(key_idx[k] for k in t) for t in terms], levels))
    return LogLinearRisk(keys=keys, model=terms, method=method, sampling_fraction=pi_desc, pi=pi,
                         lam=lam, fk=fk, pr_unique=pr, e_inv=ei, tau1=float(np.nansum(pr)),
                         tau2=float(np.nansum(ei)), n_cells=n_cells, diagnostics=diag, notes=notes)


def select_model(data: pd.DataFrame, keys: Sequence[str], sampling_fraction, pi_key: str | None = None,
                 statistic: str = "B2_std", threshold: float = 2.0, max_terms: int = 10,
                 max_cells: int = 5_000_000) -> tuple[LogLinearRisk, pd.DataFrame]:
    """Forward selection of two-way interactions guided by the under-fitting statistic.

    Starts from the main-effects model and adds, one at a time, the two-way
    interaction that brings ``|statistic|`` closest to zero, until
    ``|statistic| < threshold`` or no interaction improves it.  Returns the
    chosen fit and the path (one row per step).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame(rng.integers(0, 3, size=(300, 3)), columns=list("abc"))
    >>> fit, path = select_model(df, list("abc"), 0.05)
    >>> list(path.columns)[:3]
    ['step', 'model', 'B2_std']
    """
    keys = check_columns(data, keys)
    model: list[tuple[str, ...]] = [(k,) for k in keys]
    fit = loglinear_risk(data, keys, sampling_fraction, model, pi_key=pi_key, method="ipf",
                         max_cells=max_cells, diagnostics=True)
    rows = [{"step": 0, "model": " + ".join("*".join(t) for t in fit.model),
             statistic: fit.diagnostics[statistic], "aic": fit.diagnostics["aic"],
             "tau1": fit.tau1, "tau2": fit.tau2}]
    cands = [c for c in combinations(keys, 2)]
    step = 0
    while abs(fit.diagnostics[statistic]) >= threshold and step < max_terms:
        best = None
        for c in cands:
            if any(set(c) <= set(t) for t in fit.model):
                continue
            trial = loglinear_risk(data, keys, sampling_fraction, list(fit.model) + [c], pi_key=pi_key,
                                   method="ipf", max_cells=max_cells, diagnostics=True)
            s = abs(trial.diagnostics[statistic])
            if best is None or s < best[0]:
                best = (s, trial)
        if best is None or best[0] >= abs(fit.diagnostics[statistic]):
            break
        fit = best[1]
        step += 1
        rows.append({"step": step, "model": " + ".join("*".join(t) for t in fit.model),
                     statistic: fit.diagnostics[statistic], "aic": fit.diagnostics["aic"],
                     "tau1": fit.tau1, "tau2": fit.tau2})
    return fit, pd.DataFrame(rows)
