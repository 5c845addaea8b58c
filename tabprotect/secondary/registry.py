"""The registered secondary-suppression methods, their options classes and capabilities.

Importing this module registers every method: ``optimal``, ``modular``, ``hypercube``,
``gauss`` and ``greedy`` (suppression) and ``cta`` (controlled tabular adjustment, which
publishes adjusted values).  :data:`~tabprotect.secondary.base.METHODS` maps each name to
its :class:`~tabprotect.secondary.base.MethodSpec`; :func:`describe_methods` lists them
with their options (each with its one-line reason) and capabilities.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from tabprotect.adjust import method as _cta  # noqa: F401  (registers "cta")
from tabprotect.secondary import gauss as _gauss  # noqa: F401  (registers "gauss")
from tabprotect.secondary import greedy as _greedy  # noqa: F401  (registers "greedy")
from tabprotect.secondary import hypercube as _hypercube  # noqa: F401
from tabprotect.secondary import modular as _modular  # noqa: F401
from tabprotect.secondary.base import METHODS, option_help, register_method
from tabprotect.secondary.optimal import OptimalOptions, optimal

# the optimal package registers its function without options; registered here with its
# options class (taken whole, as ``options=``) and its two run settings
register_method("optimal", options=OptimalOptions, extra=("mip_gap", "start"),
                needs_product_structure=False, handles_singletons=True,
                proves_optimality=True)(optimal)


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
