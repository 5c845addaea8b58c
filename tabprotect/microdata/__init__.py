"""Microdata disclosure risk and perturbation (see docs/microdata.md).

Conventions -- keep them apart:

* PRAM's transition matrix ``P`` has **rows = true** category:
  ``P[k, l] = Pr(released l | true k)``, rows sum to one.
* The misclassification matrix ``M`` of Shlomo & Skinner has **columns = true**
  category: ``M[j, k] = Pr(released j | true k)``, columns sum to one; ``M = P.T``.
"""
from ._validate import RowError
from .keys import KeyFrequencies, key_frequencies
from .individual import (IndividualRisk, household_risk, individual_risk, risk_approx,
                         risk_exact, risk_series)
from .loglinear import (LogLinearRisk, expected_inverse, fit_ipf, loglinear_risk,
                        pr_population_unique, select_model)
from .pram import (PramEstimate, PramResult, apply_transition, generate_pram_matrix,
                   invariant_matrix, invariant_pram, pram, pram_estimate, pram_variance)
from .swapping import SwapResult, swap
from .targeted_swap import (TargetedSwapResult, TargetedSwapSettings, geography_levels,
                            swap_targeted)
from .misclassification import (KeyMisclassification, MisclassificationRisk, as_misclassification,
                                binary_invariant_M, misclassification_risk,
                                record_risk_known_population)
from .uniqueness import UniquenessRisk, uniqueness_risk
from .tables import key_table, risk_table
from .rumap import RUMap, info_loss_tables, plot_ru_map, ru_map, table_counts

__all__ = [
    "RowError",
    "KeyFrequencies", "key_frequencies",
    "IndividualRisk", "individual_risk", "risk_exact", "risk_approx", "risk_series", "household_risk",
    "LogLinearRisk", "loglinear_risk", "pr_population_unique", "expected_inverse", "fit_ipf",
    "select_model",
    "PramResult", "PramEstimate", "pram", "invariant_pram", "generate_pram_matrix", "invariant_matrix",
    "apply_transition", "pram_estimate", "pram_variance",
    "SwapResult", "swap",
    "TargetedSwapSettings", "TargetedSwapResult", "swap_targeted", "geography_levels",
    "KeyMisclassification", "MisclassificationRisk", "as_misclassification", "binary_invariant_M",
    "misclassification_risk", "record_risk_known_population",
    "UniquenessRisk", "uniqueness_risk", "risk_table", "key_table",
    "RUMap", "ru_map", "plot_ru_map", "info_loss_tables", "table_counts",
]
