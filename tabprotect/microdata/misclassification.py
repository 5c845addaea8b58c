"""Identification risk under misclassification (Shlomo & Skinner 2010).

Convention: ``M[j, k] = Pr(released category j | true category k)`` -- **columns =
true category**, every column sums to one.  For PRAM, ``M = P.T``.  With
several key variables perturbed independently ``M`` is the Kronecker product
of the per-key matrices, so ``M_jj`` of a cross-classified cell is the product
of the per-key diagonal entries and nothing of size cells x cells is built.

Measures for a sample unique in the released (misclassified) file with
released key value ``j``, matched by an intruder holding the true values of
the population:

* exact, population counts ``F_k`` known (sampling fraction ``pi``):
  ``[M_jj / (1 - pi M_jj)] / sum_k F_k M_jk / (1 - pi M_jk)``;
* approximation ``M_jj / F~_j`` with ``F~_j = sum_k M_jk F_k`` (the population
  counts as they would be misclassified);
* file level, estimated from the misclassified sample alone:
  ``sum over sample uniques of M_jj E(1/F~_j | f~_j = 1)``, the expectation from
  the Poisson log-linear model fitted to the misclassified sample;
* "naive": the same without ``M_jj`` (misclassification ignored);
* "ad hoc": ``sum over sample uniques of the *original* file of M_jj E(1/F_j | f_j = 1)``,
  i.e. the pre-perturbation log-linear risk discounted by the probability
  that the record's key value was left unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ._validate import check_columns, check_fraction, check_transition_matrix, label
from .keys import combine_codes
from .loglinear import LogLinearRisk, loglinear_risk

__all__ = ["KeyMisclassification", "as_misclassification", "record_risk_known_population",
           "MisclassificationRisk", "misclassification_risk", "binary_invariant_M"]

_NEG = -1.0e4  # stands for log(0) inside matrix products (exp -> 0 exactly)


@dataclass
class KeyMisclassification:
    """Per-key misclassification matrices (columns = true); keys absent are unperturbed.

    ``matrices[key]`` is a DataFrame with index = released and columns = true
    categories (the same labels in the same order).
    """

    matrices: dict

    def diag(self, data: pd.DataFrame, keys: Sequence[str]) -> np.ndarray:
        """``M_jj`` of each record's (released) key combination: product of the per-key diagonals."""
        out = np.ones(len(data))
        for k in keys:
            if k not in self.matrices:
                continue
            M = self.matrices[k]
            d = pd.Series(np.diag(M.values), index=M.columns)
            vals = data[k]
            pos = M.columns.get_indexer(vals)
            bad = (pos < 0) & vals.notna().to_numpy()
            if bad.any():
                raise ValueError(f"column {k!r}: category {label(vals.iloc[int(np.flatnonzero(bad)[0])])!r} "
                                 "is not in the misclassification matrix")
            out *= np.where(pos >= 0, d.values[pos.clip(min=0)], 1.0)
        return out


def binary_invariant_M(p: float, theta: float, categories: Sequence = (1, 2)) -> pd.DataFrame:
    """Misclassification of a binary key with ``P(X = 2) = p``: category 1 is released
    as 2 with probability ``theta`` and 2 as 1 with ``theta2 = (1-p) theta / p``, which
    keeps the expected frequencies (invariant PRAM).  Columns = true.

    Examples
    --------
    >>> binary_invariant_M(0.2, 0.05).values.round(6).tolist()
    [[0.95, 0.2], [0.05, 0.8]]
    """
    theta2 = (1.0 - p) * theta / p
    if not (0 <= theta <= 1 and 0 <= theta2 <= 1):
        raise ValueError("theta too large: (1-p) theta / p exceeds 1")
    M = np.array([[1 - theta, theta2], [theta, 1 - theta2]])
    c = list(categories)
    return pd.DataFrame(M, index=pd.Index(c, name="released"), columns=pd.Index(c, name="true"))


def as_misclassification(M, keys: Sequence[str] | None = None) -> KeyMisclassification:
    """Normalise ``M`` to :class:`KeyMisclassification`.

    Accepts a KeyMisclassification, a PramResult (uses ``P.T``; unstratified
    only), a SwapResult (its implied ``M``) or a mapping {key: matrix} where a
    matrix is a DataFrame (index released, columns true) that must have columns
    summing to one.
    """
    if isinstance(M, KeyMisclassification):
        return M
    from .pram import PramResult
    from .swapping import SwapResult
    if isinstance(M, PramResult):
        mats = {}
        for (var, s), P in M.matrices.items():
            if s is not None:
                raise ValueError("stratified PRAM: the misclassification matrix differs by stratum; "
                                 "compute the risk within each stratum")
            mats[var] = P.T
        return as_misclassification(mats)
    if isinstance(M, SwapResult):
        return as_misclassification({M.variable: M.M})
    if not isinstance(M, Mapping):
        raise ValueError("M must be a mapping {key column: misclassification matrix}")
    mats = {}
    for k, m in M.items():
        if not isinstance(m, pd.DataFrame):
            raise ValueError(f"misclassification matrix for {k!r} must be a labelled DataFrame "
                             "(index = released, columns = true)")
        if list(m.index) != list(m.columns):
            raise ValueError(f"misclassification matrix for {k!r}: index and columns must list the "
                             "same categories in the same order")
        check_transition_matrix(m.values, list(m.columns), name=f"M[{k}]", axis=0)
        mats[k] = m
    return KeyMisclassification(mats)


def _log_blocks(cats_per_key, Ms, rel_codes, pop_codes):
    """Matrices B (sum levels x cells) and A (sample x sum levels) with log M_jk = A @ B."""
    offs = np.concatenate([[0], np.cumsum([len(c) for c in cats_per_key])])
    L = int(offs[-1])
    B = np.empty((L, pop_codes.shape[0]))
    for c, M in enumerate(Ms):
        with np.errstate(divide="ignore"):
            logM = np.where(M > 0, np.log(np.where(M > 0, M, 1.0)), _NEG)
        B[offs[c]:offs[c + 1]] = logM[:, pop_codes[:, c]]
    A = np.zeros((rel_codes.shape[0], L))
    for c in range(len(Ms)):
        A[np.arange(rel_codes.shape[0]), offs[c] + rel_codes[:, c]] = 1.0
    return A, B


def record_risk_known_population(released: pd.DataFrame, population: pd.DataFrame, keys: Sequence[str],
                                 M, sampling_fraction: float, only_uniques: bool = True,
                                 block_cells: int = 20_000_000) -> pd.DataFrame:
    """Record-level risk under misclassification when the population counts are known.

    Parameters
    ----------
    released : the released (misclassified) sample.
    population : the population file with the true key values.
    keys : key columns (present in both files).
    M : per-key misclassification matrices (see :func:`as_misclassification`).
    sampling_fraction : ``pi``.
    only_uniques : compute only for the sample uniques of ``released``.

    Returns a frame indexed like the selected records with ``M_jj``, ``F_j``
    (true population count of the released value), ``F_tilde``
    (``sum_k M_jk F_k``), ``exact`` and ``approx`` (``M_jj / F_tilde``).  Both
    measures are 0 when ``F_j = 0``: the formulas are conditional on the
    intruder's target (true value j) existing, and with no population unit of
    value j no match can be correct.

    Examples
    --------
    >>> pop = pd.DataFrame({"x": [1] * 60 + [2] * 40})
    >>> M = {"x": binary_invariant_M(0.4, 0.1)}
    >>> out = record_risk_known_population(pd.DataFrame({"x": [2]}), pop, ["x"], M, 0.01)
    >>> round(float(out["approx"].iloc[0]), 4)
    0.0212
    """
    keys = check_columns(released, keys)
    check_columns(population, keys)
    pi = check_fraction(sampling_fraction)
    Mk = as_misclassification(M)
    sel = released
    if only_uniques:
        both = released[keys]
        codes = np.column_stack([pd.factorize(both[k], use_na_sentinel=False)[0] for k in keys])
        cell, nc = combine_codes(codes)
        f = np.bincount(cell, minlength=nc)[cell]
        sel = released[f == 1]
    cats, Ms, rel_codes, pop_codes = [], [], [], []
    for k in keys:
        if k in Mk.matrices:
            m = Mk.matrices[k]
            cat = list(m.columns)
            Mm = m.values
        else:
            cat = list(pd.unique(pd.concat([sel[k], population[k]], ignore_index=True)))
            Mm = np.eye(len(cat))
        idx = pd.Index(cat)
        rc = idx.get_indexer(sel[k])
        pc = idx.get_indexer(population[k])
        if (rc < 0).any():
            raise ValueError(f"column {k!r}: a released category is not in the misclassification matrix")
        if (pc < 0).any():
            raise ValueError(f"column {k!r}: a population category is not in the misclassification matrix")
        cats.append(cat)
        Ms.append(Mm)
        rel_codes.append(rc)
        pop_codes.append(pc)
    rel_codes = np.column_stack(rel_codes)
    pop_codes = np.column_stack(pop_codes)
    pcell, npc = combine_codes(pop_codes, [len(c) for c in cats])
    Fk = np.bincount(pcell, minlength=npc).astype(float)
    first = np.flatnonzero(np.diff(np.maximum.accumulate(pcell), prepend=-1) > 0)
    pop_cells = pop_codes[first]
    # true population count of each released value j
    rel_in_pop = pd.Index(pd.MultiIndex.from_arrays(pop_cells.T) if len(keys) > 1 else pop_cells[:, 0])
    look = pd.MultiIndex.from_arrays(rel_codes.T) if len(keys) > 1 else rel_codes[:, 0]
    pos = rel_in_pop.get_indexer(look)
    Fj = np.where(pos >= 0, Fk[pos.clip(min=0)], 0.0)
    mjj = np.ones(len(sel))
    for c, Mm in enumerate(Ms):
        mjj *= np.diag(Mm)[rel_codes[:, c]]
    A, B = _log_blocks(cats, Ms, rel_codes, pop_cells)
    Ftilde = np.empty(len(sel))
    denom = np.empty(len(sel))
    step = max(1, block_cells // max(1, pop_cells.shape[0]))
    for s in range(0, len(sel), step):
        Mjk = np.exp(A[s:s + step] @ B)
        Ftilde[s:s + step] = Mjk @ Fk
        denom[s:s + step] = (Mjk / (1.0 - pi * Mjk)) @ Fk
    with np.errstate(divide="ignore", invalid="ignore"):
        exact = (mjj / (1.0 - pi * mjj)) / denom
        approx = mjj / Ftilde
    # the formulas assume a population unit with true value j exists (the intruder's
    # target); with F_j = 0 nobody can be matched correctly
    exact = np.where(Fj > 0, exact, 0.0)
    approx = np.where(Fj > 0, approx, 0.0)
    return pd.DataFrame({"M_jj": mjj, "F_j": Fj, "F_tilde": Ftilde, "exact": exact, "approx": approx},
                        index=sel.index)


@dataclass
class MisclassificationRisk:
    """File-level risk of a misclassified sample (see module docstring).

    ``tau2_misclassified`` = sum over sample uniques of ``M_jj E(1/F~_j | f~_j = 1)``;
    ``tau2_naive`` ignores misclassification; ``tau2_original`` and
    ``tau2_adhoc`` need the original file.
    """

    keys: list[str]
    sampling_fraction: float | dict
    m_jj: np.ndarray
    record_risk: np.ndarray
    fit: LogLinearRisk
    tau2_misclassified: float
    tau2_naive: float
    tau2_original: float | None = None
    tau2_adhoc: float | None = None
    n_sample_uniques: int = 0
    n_sample_uniques_original: int | None = None
    params: dict = field(default_factory=dict)

    def summary(self) -> dict:
        return {"n_sample_uniques": self.n_sample_uniques,
                "n_sample_uniques_original": self.n_sample_uniques_original,
                "tau2_original": self.tau2_original, "tau2_naive": self.tau2_naive,
                "tau2_misclassified": self.tau2_misclassified, "tau2_adhoc": self.tau2_adhoc}


def misclassification_risk(perturbed: pd.DataFrame, keys: Sequence[str], M, sampling_fraction,
                           model="main", original: pd.DataFrame | None = None, pi_key: str | None = None,
                           max_cells: int = 5_000_000) -> MisclassificationRisk:
    """File-level identification risk of a misclassified sample, estimated with the
    Poisson log-linear model fitted to the misclassified sample.

    Parameters
    ----------
    perturbed : the released (misclassified) sample.
    keys : key columns.
    M : per-key misclassification matrices, or a PramResult / SwapResult.
    sampling_fraction, model, pi_key : as for :func:`loglinear_risk`.
    original : the unperturbed sample (same records); adds the risk before
        perturbation and the ad hoc measure.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"a": rng.integers(1, 3, 200), "b": rng.integers(1, 4, 200)})
    >>> M = {"a": pd.DataFrame([[0.9, 0.1], [0.1, 0.9]], index=[1, 2], columns=[1, 2])}
    >>> r = misclassification_risk(df, ["a", "b"], M, 0.01)
    >>> r.tau2_misclassified <= r.tau2_naive
    True
    """
    keys = check_columns(perturbed, keys)
    Mk = as_misclassification(M)
    fit = loglinear_risk(perturbed, keys, sampling_fraction, model=model, pi_key=pi_key,
                         max_cells=max_cells, diagnostics=False)
    mjj = Mk.diag(perturbed, keys)
    su = fit.sample_unique
    rec = np.full(len(perturbed), np.nan)
    rec[su] = mjj[su] * fit.e_inv[su]
    out = MisclassificationRisk(keys=keys, sampling_fraction=fit.sampling_fraction, m_jj=mjj,
                                record_risk=rec, fit=fit, tau2_misclassified=float(np.nansum(rec)),
                                tau2_naive=fit.tau2, n_sample_uniques=fit.n_sample_uniques,
                                params={"model": fit.model})
    if original is not None:
        check_columns(original, keys)
        if len(original) != len(perturbed):
            raise ValueError("original and perturbed files must have the same records")
        f0 = loglinear_risk(original, keys, sampling_fraction, model=model, pi_key=pi_key,
                            max_cells=max_cells, diagnostics=False)
        m0 = Mk.diag(original, keys)
        su0 = f0.sample_unique
        out.tau2_original = f0.tau2
        out.tau2_adhoc = float(np.sum(m0[su0] * f0.e_inv[su0]))
        out.n_sample_uniques_original = f0.n_sample_uniques
    return out
