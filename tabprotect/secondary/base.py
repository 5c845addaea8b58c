"""What every secondary-suppression method shares: the calling shape, cost functions and
the result object.

A method is a function registered with :func:`register_method`::

    @register_method("hypercube")
    def hypercube(table: Table, cost: np.ndarray, *, time_limit: float | None,
                  progress: Callable[[str, float], None] | None, **options) -> MethodOutcome

It receives a table whose primary cells have status ``U`` (and protection levels
``upl/lpl/spl``), ``P`` cells that must stay published, and the cost per cell; it returns the
new status array (``M`` for its secondary suppressions) in a :class:`MethodOutcome`.
:func:`tabprotect.secondary.protect` then audits the pattern on the full table, repairs
any shortfall and returns a :class:`ProtectResult`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.table import Table

METHODS: dict[str, Callable[..., "MethodOutcome"]] = {}


def register_method(name: str):
    """Decorator that makes a method available as ``protect(table, method=name)``."""
    def wrap(fn):
        METHODS[name] = fn
        return fn
    return wrap


@dataclass
class MethodOutcome:
    """What a method found, before the full-table audit.

    Attributes
    ----------
    status : new status array (S/U/M/P/Z); the method adds ``M`` cells
    proven_optimal : the method proved minimum cost (only ``optimal`` can)
    solver_status : e.g. "optimal", "time_limit", "heuristic"
    mip_gap : relative gap when known
    details : method-specific numbers for reports (iterations, cuts, sub-tables, ...)
    """

    status: np.ndarray
    proven_optimal: bool = False
    solver_status: str = "heuristic"
    mip_gap: float | None = None
    details: dict[str, Any] = field(default_factory=dict)


COST_FUNCTIONS = ("unity", "freq", "value", "log", "column")


def cost_vector(table: Table, cost: str | np.ndarray | None = "value",
                column: str | None = None) -> np.ndarray:
    """Suppression cost per cell.

    Parameters
    ----------
    cost : ``"unity"`` (number of cells), ``"freq"`` (contributors), ``"value"``,
        ``"log"`` (``log(1 + value)``), ``"column"`` (``table.cost`` or the extra array named
        ``column``), or an array
    Empty cells cost as the function says (value 0 -> tiny); a small positive floor keeps
    every cost strictly positive so that no suppression is ever free.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> t = Table.from_arrays({"x": Hierarchy.flat(["a", "b"], total="T")}, [3, 1, 2])
    >>> cost_vector(t, "unity").tolist()
    [1.0, 1.0, 1.0]
    """
    n = table.n_cells
    if cost is None:
        cost = "value"
    if isinstance(cost, str):
        if cost == "unity":
            c = np.ones(n)
        elif cost == "freq":
            c = np.nan_to_num(table.freq.astype(float), nan=1.0)
        elif cost == "value":
            c = np.abs(table.value).astype(float)
        elif cost == "log":
            c = np.log1p(np.abs(table.value))
        elif cost == "column":
            if column is not None:
                if column not in table.extra:
                    raise InputError(f"cost column '{column}' not in the table")
                c = np.asarray(table.extra[column], dtype=float)
            elif table.cost is not None:
                c = table.cost.astype(float)
            else:
                raise InputError("cost='column' but the table has no cost column")
        else:
            raise InputError(f"unknown cost function '{cost}' "
                             f"(choose from {', '.join(COST_FUNCTIONS)})")
    else:
        c = np.asarray(cost, dtype=float)
        if c.shape != (n,):
            raise InputError(f"cost array must have {n} entries")
    if np.isnan(c).any() or (c < 0).any():
        i = int(np.flatnonzero(np.isnan(c) | (c < 0))[0])
        raise InputError(f"cost of cell {table.cell_name(i)} is missing or negative")
    # strictly positive: a zero-cost cell would be suppressed for free and arbitrarily
    floor = 1e-6 * max(1.0, float(c.max()) if n else 1.0)
    return np.maximum(c, floor)
