"""Checks of rounding inputs and properties of a rounded table (additive, zero-restricted,
steps beyond the adjacent multiples)."""
from __future__ import annotations

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.table import Table
from tabprotect.rounding.result import TOL

__all__ = ["check_base", "cell_weights", "weights_label", "is_additive",
           "is_zero_restricted", "max_steps"]


def check_base(base) -> int:
    try:
        b = int(base)
    except (TypeError, ValueError):
        raise InputError(f"rounding base must be a positive integer, not {base!r}") from None
    if b != base or b < 1:
        raise InputError(f"rounding base must be a positive integer, not {base!r}")
    return b


def cell_weights(table: Table, weights) -> np.ndarray:
    n = table.n_cells
    if weights is None or (isinstance(weights, str) and weights == "unity"):
        return np.ones(n)
    if isinstance(weights, str):
        if weights == "relative":
            return 1.0 / np.maximum(table.value, 1.0)
        raise InputError(f"rounding weights must be 'unity', 'relative' or an array, "
                         f"not {weights!r}")
    w = np.asarray(weights, dtype=float)
    if w.shape != (n,) or np.any(~np.isfinite(w)) or np.any(w < 0):
        raise InputError(f"rounding weights: expected {n} finite non-negative values")
    return w


def weights_label(weights) -> str:
    if weights is None:
        return "unity"
    return weights if isinstance(weights, str) else "array"


def is_additive(table: Table, values: np.ndarray) -> bool:
    if table.n_relations == 0:
        return True
    return bool(np.abs(table.relations @ values).max() <= 1e-6)


def is_zero_restricted(x: np.ndarray, rounded: np.ndarray, base: int) -> bool:
    low = np.floor(x / base + TOL) * base
    mult = np.abs(x - low) <= TOL
    ok_mult = np.abs(rounded - x) <= TOL
    ok_other = (np.abs(rounded - low) <= TOL) | (np.abs(rounded - low - base) <= TOL)
    return bool(np.all(np.where(mult, ok_mult, ok_other)))


def max_steps(x: np.ndarray, rounded: np.ndarray, base: int) -> int:
    """Multiples moved beyond the adjacent ones (0 when zero-restricted)."""
    if len(x) == 0:
        return 0
    low = np.floor(x / base + TOL) * base
    mult = np.abs(x - low) <= TOL
    high = np.where(mult, low, low + base)
    beyond = np.maximum(np.maximum(low - rounded, rounded - high), 0.0) / base
    return int(np.ceil(beyond.max() - 1e-9))
