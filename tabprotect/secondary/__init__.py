"""Secondary suppression: one entry point (:func:`protect`) over registered methods.

``from tabprotect.secondary import protect`` and call
``protect(table, method="optimal", cost="value")``.  Importing this package registers every
method module that is present (``optimal`` always; ``modular``, ``hypercube``, ``gauss``
and ``greedy`` when installed).
"""
from __future__ import annotations

import importlib

from tabprotect.secondary.base import (COST_FUNCTIONS, METHODS, MethodOutcome, cost_vector,
                                       register_method)
from tabprotect.secondary import optimal  # noqa: F401  (registers "optimal")
from tabprotect.secondary.protect import ProtectResult, protect

for _name in ("modular", "hypercube", "gauss", "greedy"):
    try:
        importlib.import_module(f"tabprotect.secondary.{_name}")
    except ModuleNotFoundError as _exc:  # a method module not written (yet): skip it
        if _exc.name != f"tabprotect.secondary.{_name}":
            raise

__all__ = ["protect", "ProtectResult", "METHODS", "MethodOutcome", "register_method",
           "cost_vector", "COST_FUNCTIONS"]
