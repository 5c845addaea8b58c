"""The registered secondary-suppression methods, their options classes and capabilities.

Importing this module declares every method: ``optimal``, ``modular``, ``hypercube``,
``gauss`` and ``greedy`` (suppression) and ``cta`` (controlled tabular adjustment, which
publishes adjusted values).  :data:`~tabprotect.secondary.base.METHODS` maps each name to
its :class:`~tabprotect.secondary.base.MethodSpec`, importing a method's module when the
method is first looked up (a job imports the method it runs, not the others);
:func:`describe_methods` lists them with their options (each with its one-line reason)
and capabilities.
"""
from __future__ import annotations

import dataclasses
import importlib
from typing import Any

from tabprotect.secondary.base import METHODS, option_help, register_method

#: the module whose import registers each method (``optimal``: see :func:`_optimal`)
MODULES = {"cta": "tabprotect.adjust.method", "gauss": "tabprotect.secondary.gauss",
           "greedy": "tabprotect.secondary.greedy",
           "hypercube": "tabprotect.secondary.hypercube",
           "modular": "tabprotect.secondary.modular"}


def _optimal() -> None:
    """Register ``optimal`` with its options class (taken whole, as ``options=``) and
    its two run settings (the optimal package registers its function without them)."""
    from tabprotect.secondary.optimal import OptimalOptions, optimal
    register_method("optimal", options=OptimalOptions, extra=("mip_gap", "start"),
                    needs_product_structure=False, handles_singletons=True,
                    proves_optimality=True)(optimal)


def _declare() -> None:
    for name, module in MODULES.items():
        METHODS.declare(name, lambda module=module: importlib.import_module(module))
    METHODS.declare("optimal", _optimal)


_declare()


def describe_methods() -> dict[str, dict[str, Any]]:
    """Every registered method: its capabilities and options (default and reason).

    Examples
    --------
    >>> d = describe_methods()
    >>> d["hypercube"]["capabilities"]["needs_product_structure"]
    True
    >>> d["optimal"]["options"]["engine"]["default"], d["optimal"]["run_settings"]
    ('auto', ['mip_gap', 'start'])
    """
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(METHODS):
        spec = METHODS[name]
        why = option_help(spec.options)
        out[name] = {
            "capabilities": dataclasses.asdict(spec.capabilities),
            "options": {f.name: {"default": f.default, "why": why[f.name]}
                        for f in dataclasses.fields(spec.options)},
            "run_settings": list(spec.extra),
        }
    return out
