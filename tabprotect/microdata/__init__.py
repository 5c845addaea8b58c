"""Microdata disclosure risk and perturbation (see docs/microdata.md).

Conventions: PRAM's transition matrix ``P`` has rows = true category
(``P[k, l] = Pr(released l | true k)``); the misclassification matrix ``M`` of
Shlomo & Skinner has columns = true category (``M[j, k] = Pr(released j | true k)``),
so ``M = P.T``.
"""
from .keys import KeyFrequencies, key_frequencies
from .individual import (IndividualRisk, household_risk, individual_risk, risk_approx,
                         risk_exact, risk_series)
from .loglinear import (LogLinearRisk, expected_inverse, fit_ipf, loglinear_risk,
                        pr_population_unique, select_model)

__all__ = [
    "KeyFrequencies", "key_frequencies",
    "IndividualRisk", "individual_risk", "risk_exact", "risk_approx", "risk_series", "household_risk",
    "LogLinearRisk", "loglinear_risk", "pr_population_unique", "expected_inverse", "fit_ipf",
    "select_model",
]
