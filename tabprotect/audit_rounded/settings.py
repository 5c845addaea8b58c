"""How the rounded-table audit spends its solver time: tuning that changes speed, never
the intervals (every bound is proven either way)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

__all__ = ["RoundedAuditSettings"]


@dataclass(frozen=True)
class RoundedAuditSettings:
    """Tuning of the propagation, the integer pushes and the local LPs
    (:mod:`~tabprotect.audit_rounded.propagate`, :mod:`~tabprotect.audit_rounded.pushes`,
    :mod:`~tabprotect.audit_rounded.local`), recorded in the result's ``params``."""

    #: cells pushed together in one random-batch local LP: large enough to share the
    #: slack of common totals, small enough for a fast LP
    local_lp_batch: int = 8000
    #: local LPs run only on components of more than this many batches of cells; below
    #: that, LPs on the whole component are faster
    local_min_batches: int = 4
    #: cells per block of the table's array for the first local LPs (few relations each)
    local_lp_block: int = 10_000
    #: seconds for the branch and bound of a local sub-problem with a fractional LP
    #: optimum: any integer solution certifies, so a short run is enough
    local_mip_seconds: float = 5.0
    #: relative gap that ends that branch and bound (the solution need not be optimal)
    local_mip_gap: float = 0.05
    #: components of fewer cells re-solve their one-cell LPs by the primal simplex from
    #: the previous optimum (a few pivots each there); larger ones keep the dual simplex,
    #: which HiGHS runs faster than the primal on large components
    primal_max_cells: int = 2000
    #: sweeps of integer bound propagation that narrow the ranges before any LP (each
    #: sweep's ranges are valid; they usually settle in a few)
    propagation_rounds: int = 50
    #: components of fewer cells get no integer pushes (:mod:`.pushes`): there the one-cell
    #: LPs from the previous optimum settle the bounds in less time than the pushes take
    push_min_cells: int = 2000
    #: components of more cells get no integer pushes (:mod:`.pushes`): their branch and
    #: bound runs too long for a push
    push_max_cells: int = 20_000
    #: rounds of integer pushes (one down, one up each) at most
    push_rounds: int = 40
    #: the pushes stop when two rounds in a row settle fewer than this share of the open
    #: bounds (the rest costs one integer program each)
    push_min_share: float = 0.02
    #: branch-and-bound nodes of one push: any integral table certifies, so a short run
    #: is enough (a node limit, unlike seconds, does not depend on the machine's load)
    push_nodes: int = 200
    #: seconds of one push at most: a safety cap behind the node limit, far above a push's
    #: run on a loaded machine (a push cut short finds no table, so its bounds fall to one
    #: integer program each and the audit's work would depend on the load)
    push_seconds: float = 120.0
    #: relative gap that ends a push (its table need not be optimal)
    push_gap: float = 0.5

    def __post_init__(self) -> None:
        for name in ("local_lp_batch", "local_min_batches", "local_lp_block",
                     "primal_max_cells", "propagation_rounds", "push_min_cells", "push_max_cells",
                     "push_rounds", "push_nodes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"RoundedAuditSettings.{name} must be a positive integer, "
                                 f"not {value!r}")
        for name in ("local_mip_seconds", "local_mip_gap", "push_min_share", "push_seconds",
                     "push_gap"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"RoundedAuditSettings.{name} must be a positive number, "
                                 f"not {value!r}")

    def recorded(self) -> dict[str, Any]:
        """The fields as recorded in a result's ``params``."""
        return dataclasses.asdict(self)
