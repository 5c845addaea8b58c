"""How far a rounding found by search is from the relaxation's bound: the least value a
rounding can reach given that bound, and the relative gap (shared by controlled and
small-count rounding)."""
from __future__ import annotations

import numpy as np

__all__ = ["least_value_above", "relative_gap"]


def least_value_above(bound: float, coefficients: np.ndarray) -> float:
    """The least objective a rounding can have given the LP ``bound``: the bound rounded
    up when every ``coefficients`` entry is an integer (the objective is then an integer),
    else the bound plus a tolerance.

    >>> least_value_above(6.2, np.array([1.0, 3.0])), least_value_above(6.2, np.array([0.5]))
    (7.0, 6.2000062)
    """
    data = np.asarray(coefficients, dtype=float)
    if np.all(data == np.round(data)):
        return float(np.ceil(bound - 1e-6))
    return bound + 1e-6 * max(1.0, abs(bound))


def relative_gap(value: float, bound: float) -> float:
    """``(value - bound) / |value|``, at least 0.

    >>> relative_gap(10.0, 9.0)
    0.1
    """
    return max(0.0, value - bound) / max(abs(value), 1e-9)
