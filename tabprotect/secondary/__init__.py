"""Secondary suppression: one entry point (:func:`protect`) over registered methods.

``from tabprotect.secondary import protect`` and call
``protect(table, method="optimal", cost="value", time_limit=60, options={...})``.
Importing this package declares every method (``optimal``, ``modular``, ``hypercube``,
``gauss``, ``greedy``); a method's module, options class and capabilities are loaded when
it is first used (:mod:`tabprotect.secondary.registry`).
"""
from __future__ import annotations

from tabprotect.secondary.base import (COST_FUNCTIONS, METHODS, Capabilities, MethodOutcome,
                                       MethodSpec, cost_vector, method_options,
                                       register_method)
from tabprotect.secondary.registry import describe_methods
from tabprotect.secondary.protect import ProtectResult, protect
from tabprotect.secondary.protect_settings import ProtectSettings

__all__ = ["protect", "ProtectResult", "ProtectSettings", "METHODS", "MethodOutcome",
           "MethodSpec", "Capabilities", "register_method", "method_options",
           "describe_methods", "OptimalOptions", "ModularOptions", "HypercubeOptions",
           "GaussOptions", "GreedyOptions", "cost_vector", "COST_FUNCTIONS"]

#: the methods' options classes, imported with their method on first use
_OPTIONS = {"OptimalOptions": "optimal", "ModularOptions": "modular",
            "HypercubeOptions": "hypercube", "GaussOptions": "gauss",
            "GreedyOptions": "greedy"}


def __getattr__(name):
    if name in _OPTIONS:
        return METHODS[_OPTIONS[name]].options
    raise AttributeError(f"module 'tabprotect.secondary' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
