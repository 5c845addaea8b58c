"""The registered secondary-suppression methods, their options classes and capabilities.

Importing this module registers every method: ``optimal``, ``modular``, ``hypercube``,
``gauss`` and ``greedy``.  :data:`~tabprotect.secondary.base.METHODS` maps each name to
its :class:`~tabprotect.secondary.base.MethodSpec`; :func:`describe_methods` lists them
with their options (each with its one-line reason) and capabilities.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from tabprotect.secondary import gauss as _gauss  # noqa: F401  (registers "gauss")
from tabprotect.secondary import greedy as _greedy  # noqa: F401  (registers "greedy")
from tabprotect.secondary import hypercube as _hypercube  # noqa: F401
from tabprotect.secondary import modular as _modular  # noqa: F401
from tabprotect.secondary import optimal as _optimal
from tabprotect.secondary.base import METHODS, option_help, register_method


@dataclass(frozen=True)
class OptimalOptions:
    """Settings of the optimal method (see :func:`tabprotect.secondary.optimal.optimal`)."""

    engine: Literal["auto", "compact", "benders"] = field(default="auto", metadata={
        "why": "compact MILP for small tables with finite ranges, Benders otherwise (auto "
               "chooses by size)"})
    mip_gap: float | None = field(default=None, metadata={
        "why": "relative gap at which the search may stop (None: HiGHS' 1e-4; 0: exact)"})
    threads: int | None = field(default=1, metadata={
        "why": "HiGHS threads of the master problem (1: deterministic and fair to other "
               "processes)"})
    start: np.ndarray | None = field(default=None, metadata={
        "why": "a protected pattern (bool mask over the cells) to start from"})
    search: Literal["bc", "milp"] = field(default="bc", metadata={
        "why": "Benders master: own branch-and-cut with cuts at every node, or HiGHS MILP "
               "re-solved after each round"})
    support_cuts: bool | None = field(default=None, metadata={
        "why": "bc only: support cuts raise the root bound of some hierarchical tables "
               "but slow the tree (default off)"})


# optimal.py registers the function without options; registered again here with them
register_method("optimal", options=OptimalOptions, needs_product_structure=False,
                    handles_singletons=True, proves_optimality=True)(_optimal.optimal)


def describe_methods() -> dict[str, dict[str, Any]]:
    """Every registered method: its capabilities and options (default and reason).

    Examples
    --------
    >>> d = describe_methods()
    >>> d["hypercube"]["capabilities"]["needs_product_structure"]
    True
    >>> d["optimal"]["options"]["mip_gap"]["default"] is None
    True
    """
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(METHODS):
        spec = METHODS[name]
        why = option_help(spec.options)
        out[name] = {
            "capabilities": dataclasses.asdict(spec.capabilities),
            "options": {f.name: {"default": f.default, "why": why[f.name]}
                        for f in dataclasses.fields(spec.options)},
        }
    return out
