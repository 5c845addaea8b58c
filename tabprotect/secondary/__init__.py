"""Secondary suppression: one entry point (:func:`protect`) over registered methods.

``from tabprotect.secondary import protect`` and call
``protect(table, method="optimal", cost="value", time_limit=60, options={...})``.
Importing this package registers every method (``optimal``, ``modular``, ``hypercube``,
``gauss``, ``greedy``) with its options class and capabilities
(:mod:`tabprotect.secondary.registry`).
"""
from __future__ import annotations

from tabprotect.secondary.base import (COST_FUNCTIONS, METHODS, Capabilities, MethodOutcome,
                                       MethodSpec, cost_vector, method_options,
                                       register_method)
from tabprotect.secondary.registry import OptimalOptions, describe_methods
from tabprotect.secondary.gauss import GaussOptions
from tabprotect.secondary.greedy import GreedyOptions
from tabprotect.secondary.hypercube import HypercubeOptions
from tabprotect.secondary.modular import ModularOptions
from tabprotect.secondary.protect import ProtectResult, protect
from tabprotect.secondary.protect_settings import ProtectSettings

__all__ = ["protect", "ProtectResult", "ProtectSettings", "METHODS", "MethodOutcome",
           "MethodSpec", "Capabilities", "register_method", "method_options",
           "describe_methods", "OptimalOptions", "ModularOptions", "HypercubeOptions",
           "GaussOptions", "GreedyOptions", "cost_vector", "COST_FUNCTIONS"]
