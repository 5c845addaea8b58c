"""Individual risk of Benedetti & Franconi (negative binomial model), household
risk and the global expected number of re-identifications.

Model: given the sample frequency ``f`` of a record's key combination, the
unobserved population frequency satisfies ``F - f ~ NegBin(f, p)`` with
``p = f / F^`` (``F^`` = sum of the weights in the combination).  The risk is

    r = E(1/F | f) = sum_{h >= f} (1/h) C(h-1, f-1) p^f (1-p)^(h-f)
      = (p / f) * 2F1(1, 1; f + 1; 1 - p).

Closed forms: ``f = 1``: ``p/(1-p) ln(1/p)``;
``f = 2``: ``p/(1-p) - p^2/(1-p)^2 ln(1/p)``;
``f = 3``: ``p^3/(1-p)^3 [(1-p)(1-3p)/(2p^2) + ln(1/p)]``.
The approximation ``p / (f - (1-p))`` is used for ``f > 2`` in the "approx"
method (f = 1, 2 keep their closed forms, as in mu-Argus / sdcMicro).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import special

from ._validate import RowError
from .keys import KeyFrequencies, key_frequencies

__all__ = ["IndividualRisk", "individual_risk", "risk_exact", "risk_approx",
           "risk_series", "household_risk"]


def _p(f: np.ndarray, F: np.ndarray) -> np.ndarray:
    f = np.asarray(f, dtype=float)
    F = np.asarray(F, dtype=float)
    if (f < 1).any():
        raise ValueError("sample frequencies f must be >= 1")
    with np.errstate(divide="ignore", invalid="ignore"):
        p = f / F
    # F^ below f (weights < 1): the population cannot be smaller than the sample
    return np.clip(p, 0.0, 1.0)


def _closed_1(p: np.ndarray) -> np.ndarray:
    q = 1.0 - p
    out = np.ones_like(p)
    m = q > 1e-12
    out[m] = p[m] / q[m] * -np.log(p[m])
    return out


def _closed_2(p: np.ndarray) -> np.ndarray:
    q = 1.0 - p
    out = np.full_like(p, 0.5)
    m = q > 1e-4
    out[m] = p[m] / q[m] - p[m] ** 2 / q[m] ** 2 * -np.log(p[m])
    # near p = 1 the closed form cancels; use the series 2F1 (1/2 at p = 1)
    s = ~m
    out[s] = p[s] / 2 * special.hyp2f1(1.0, 1.0, 3.0, q[s])
    return out


def risk_exact(f: np.ndarray, F: np.ndarray) -> np.ndarray:
    """Exact individual risk ``E(1/F | f)`` under the negative binomial model.

    Uses the closed forms for ``f = 1, 2`` and the Gauss hypergeometric series
    ``(p/f) 2F1(1, 1; f+1; 1-p)`` otherwise.

    Examples
    --------
    >>> round(float(risk_exact([3], [108])[0]), 8)
    0.01355297
    """
    f = np.atleast_1d(np.asarray(f, dtype=float))
    F = np.atleast_1d(np.asarray(F, dtype=float))
    p = _p(f, F)
    out = np.empty_like(p)
    m1, m2 = f == 1, f == 2
    out[m1] = _closed_1(p[m1])
    out[m2] = _closed_2(p[m2])
    mo = ~(m1 | m2)
    if mo.any():
        out[mo] = p[mo] / f[mo] * special.hyp2f1(1.0, 1.0, f[mo] + 1.0, 1.0 - p[mo])
    return out


def risk_approx(f: np.ndarray, F: np.ndarray) -> np.ndarray:
    """Individual risk with the approximation ``p/(f-(1-p))`` for ``f > 2``.

    Examples
    --------
    >>> round(float(risk_approx([3], [108])[0]), 8)
    0.01369863
    """
    f = np.atleast_1d(np.asarray(f, dtype=float))
    F = np.atleast_1d(np.asarray(F, dtype=float))
    p = _p(f, F)
    out = np.empty_like(p)
    m1, m2 = f == 1, f == 2
    out[m1] = _closed_1(p[m1])
    out[m2] = _closed_2(p[m2])
    mo = ~(m1 | m2)
    out[mo] = p[mo] / (f[mo] - (1.0 - p[mo]))
    return out


def risk_series(f: int, F: float, tol: float = 1e-14, max_terms: int = 10_000_000) -> float:
    """Reference value of ``E(1/F | f)`` by summing the negative binomial series.

    Slow (a Python-level sum); meant for checking the closed forms.

    Examples
    --------
    >>> round(risk_series(1, 17.0), 8)
    0.17707583
    """
    p = min(1.0, f / F)
    if p >= 1.0:
        return 1.0 / f
    q = 1.0 - p
    # term_h = (1/h) C(h-1, f-1) p^f q^(h-f), h = f, f+1, ...
    log_pmf = f * np.log(p)  # h = f: C(f-1, f-1) = 1
    total, h = 0.0, f
    pmf = np.exp(log_pmf)
    for _ in range(max_terms):
        term = pmf / h
        total += term
        # pmf_{h+1} / pmf_h = h / (h - f + 1) * q
        pmf *= h / (h - f + 1) * q
        h += 1
        if pmf / h < tol * total and h > f + 10:
            break
    return float(total)


def household_risk(risk: np.ndarray, household: np.ndarray | pd.Series) -> np.ndarray:
    """Household risk ``1 - prod_i (1 - r_i)`` over the members of each household,
    returned per record.

    Examples
    --------
    >>> household_risk(np.array([0.5, 0.5, 0.1]), np.array([1, 1, 2])).round(6).tolist()
    [0.75, 0.75, 0.1]
    """
    r = np.asarray(risk, dtype=float)
    hh = pd.factorize(np.asarray(household), use_na_sentinel=True)[0]
    if (hh < 0).any():
        raise RowError("household identifier missing", np.flatnonzero(hh < 0)[0],
                       household.index if isinstance(household, pd.Series) else None)
    with np.errstate(divide="ignore"):
        logs = np.log1p(-np.clip(r, 0.0, 1.0))
    s = np.bincount(hh, weights=logs)
    return 1.0 - np.exp(s[hh])


@dataclass
class IndividualRisk:
    """Per-record individual risk and global summaries.

    ``expected_reidentifications`` = sum of the per-record risks;
    ``global_risk`` = that sum divided by the number of records.
    """

    risk: np.ndarray
    fk: np.ndarray
    Fk: np.ndarray
    method: str
    keys: list[str]
    household: np.ndarray | None = None

    @property
    def expected_reidentifications(self) -> float:
        return float(self.risk.sum())

    @property
    def global_risk(self) -> float:
        return float(self.risk.mean()) if self.risk.size else 0.0

    @property
    def expected_household_reidentifications(self) -> float | None:
        return None if self.household is None else float(self.household.sum())

    def n_above(self, threshold: float) -> int:
        """Number of records whose risk exceeds ``threshold``."""
        return int(np.count_nonzero(self.risk > threshold))

    def summary(self) -> dict:
        out = {"method": self.method, "n": int(self.risk.size),
               "expected_reidentifications": self.expected_reidentifications,
               "global_risk": self.global_risk, "max_risk": float(self.risk.max(initial=0.0))}
        if self.household is not None:
            out["expected_household_reidentifications"] = self.expected_household_reidentifications
        return out


def individual_risk(data: pd.DataFrame | KeyFrequencies, keys: Sequence[str] | None = None,
                    weights: str | np.ndarray | None = None, method: str = "approx",
                    household: str | np.ndarray | None = None,
                    missing_matches: bool = False) -> IndividualRisk:
    """Benedetti-Franconi individual risk of every record.

    Parameters
    ----------
    data : microdata, or a precomputed :class:`KeyFrequencies`.
    keys, weights, missing_matches : as for :func:`key_frequencies`.
        Without weights ``F^ = f`` and every risk is ``1/f``.
    method : "approx" (closed forms for f <= 2, ``p/(f-(1-p))`` above) or "exact".
    household : household-id column (or array); adds household risk.

    Examples
    --------
    >>> df = pd.DataFrame({"A": [1, 1, 2], "w": [10.0, 10.0, 4.0]})
    >>> r = individual_risk(df, ["A"], weights="w")
    >>> round(float(r.risk[2]), 4)
    0.4621
    """
    if isinstance(data, KeyFrequencies):
        freq = data
        frame = None
    else:
        if keys is None:
            raise ValueError("keys are required when data is a DataFrame")
        freq = key_frequencies(data, keys, weights=weights, missing_matches=missing_matches)
        frame = data
    if method == "approx":
        r = risk_approx(freq.fk, freq.Fk)
    elif method == "exact":
        r = risk_exact(freq.fk, freq.Fk)
    else:
        raise ValueError(f"unknown individual-risk method {method!r} (use 'approx' or 'exact')")
    hh = None
    if household is not None:
        if isinstance(household, str):
            if frame is None or household not in frame.columns:
                raise ValueError(f"unknown household column {household!r}")
            household = frame[household].to_numpy()
        hh = household_risk(r, household)
    return IndividualRisk(risk=r, fk=freq.fk, Fk=freq.Fk, method=method, keys=list(freq.keys),
                          household=hh)
