"""The settings of controlled tabular adjustment and its cell weights."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.table import Table

#: ``cost`` choices of CTA: ``relative`` (1 / |value|) besides the suppression cost functions
WEIGHTS = ("relative", "unity", "freq", "value", "log", "column")
#: the weight function when ``cost`` is not given
DEFAULT_WEIGHTS = "relative"


@dataclass(frozen=True)
class CTAOptions:
    """Settings of :func:`tabprotect.adjust.cta` (each field's ``why`` says what it is for).

    Examples
    --------
    >>> CTAOptions().distance, CTAOptions(distance="L2").directions
    ('L1', 'auto')
    """

    distance: Literal["L1", "L2"] = field(default="L1", metadata={
        "why": "L1: sum of weighted absolute changes (a MILP over the directions); L2: "
               "sum of weighted squared changes (a convex QP per choice of directions)"})
    directions: Literal["auto", "free", "heuristic", "up", "down", "given"] = field(
        default="auto", metadata={
            "why": "free: the MILP chooses each sensitive cell's direction and proves "
                   "the least distance; heuristic: directions from a first LP and a "
                   "balancing pass, improved by single flips; up/down/given: fixed "
                   "(given: the direction_column); auto: heuristic (a fraction of a second "
                   "where the MILP takes seconds to minutes on 1,000-cell tables)"})
    direction_column: str = field(default="direction", metadata={
        "why": "with directions = given: the table's extra column holding +1 (up) or -1 "
               "(down) per sensitive cell"})
    bounds: Literal["table", "none"] = field(default="table", metadata={
        "why": "table: every published value stays within the cell's lb..ub (by default "
               "non-negative); none: no bounds"})
    max_change: float | None = field(default=None, metadata={
        "why": "a non-sensitive cell moves at most this fraction of its absolute value (None: "
               "no such range)", "low": 0})
    fix_totals: bool = field(default=False, metadata={
        "why": "every relation's total keeps its true value (margins published exactly)"})
    fix_empty: bool = field(default=True, metadata={
        "why": "empty cells (status Z) stay 0: a published non-zero would invent "
               "contributors"})
    integer: bool = field(default=False, metadata={
        "why": "whole-number changes (counts); L1 only, each change an integer variable"})
    mip_gap: float = field(default=1e-4, metadata={
        "why": "relative gap at which the MILP stops as optimal", "low": 0})
    margin: float = field(default=0.5, metadata={
        "why": "each sensitive cell moves at least its level times 1 + u, u drawn uniformly "
               "in [0, margin] per cell and kept secret: at exactly its level a cell whose "
               "level follows from a public rule (10 % of the value) gives its true value "
               "away (published / 1.1); 0: exactly the levels", "low": 0})
    seed: int | None = field(default=None, metadata={
        "why": "seed of the margin's draws (None: drawn and recorded; secret like a random "
               "rounding's seed: with it an intruder repeats the draws)"})
    flip_rounds: int = field(default=2, metadata={
        "why": "heuristic: passes over the sensitive cells trying a flip of each "
               "direction (0: the first LP's directions only)", "low": 0})

    def __post_init__(self):
        if self.distance not in ("L1", "L2"):
            raise ValueError(f"distance must be 'L1' or 'L2', not {self.distance!r}")
        if self.directions not in ("auto", "free", "heuristic", "up", "down", "given"):
            raise ValueError(f"directions must be auto, free, heuristic, up, down or "
                             f"given, not {self.directions!r}")
        if self.bounds not in ("table", "none"):
            raise ValueError(f"bounds must be 'table' or 'none', not {self.bounds!r}")
        if self.max_change is not None and not self.max_change >= 0:
            raise ValueError("max_change must be a non-negative fraction")
        if not 0 <= self.mip_gap <= 1:
            raise ValueError("mip_gap must lie in [0, 1]")
        if not 0 <= self.margin <= 10:
            raise ValueError("margin must lie in [0, 10] (a fraction of the level)")
        if self.flip_rounds < 0:
            raise ValueError("flip_rounds must be >= 0")
        if self.distance == "L2" and self.directions == "free":
            raise ValueError("L2 with free directions is a mixed-integer QP, which HiGHS "
                             "does not solve: use directions = heuristic, up, down or given")
        if self.distance == "L2" and self.integer:
            raise ValueError("integer changes need distance L1 (HiGHS solves no "
                             "mixed-integer QP)")

    @property
    def search(self) -> str:
        """The direction search that runs: ``directions`` with ``auto`` resolved."""
        if self.directions == "auto":
            return "heuristic"
        return self.directions


def cell_weights(table: Table, cost, column: str | None = None) -> np.ndarray:
    """The weight of a unit change of each cell: ``relative`` = 1 / |value|, ``unity`` =
    1, or a suppression cost function (:func:`~tabprotect.secondary.base.cost_vector`:
    ``freq``, ``value``, ``log``, ``column``) or an array.  Every weight is positive
    (a zero cell's relative weight is the smallest non-zero cell's).

    Examples
    --------
    >>> from tabprotect.model import Hierarchy
    >>> t = Table.from_arrays({"x": Hierarchy.flat(["a", "b"], total="T")}, [8, 2, 6])
    >>> cell_weights(t, "relative").tolist()
    [0.125, 0.5, 0.16666666666666666]
    """
    from tabprotect.secondary.base import cost_vector
    if cost is None:
        cost = DEFAULT_WEIGHTS
    if isinstance(cost, str) and cost not in WEIGHTS:
        raise InputError(f"unknown cta cost (weight) '{cost}' (choose from "
                         f"{', '.join(WEIGHTS)})")
    if isinstance(cost, str) and cost == "relative":
        v = np.abs(table.value)
        positive = v[v > 0]
        # a zero cell weighs like the smallest non-zero one
        return 1.0 / np.maximum(v, float(positive.min()) if len(positive) else 1.0)
    return cost_vector(table, cost, column=column)
