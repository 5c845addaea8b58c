"""Rounding without optimisation: deterministic (nearest multiple) and unbiased random."""
from __future__ import annotations

import numpy as np

from tabprotect.rounding.result import TOL

__all__ = ["deterministic_round", "random_round"]


def deterministic_round(x: np.ndarray, base: int) -> np.ndarray:
    """Nearest multiple of ``base``; ties (remainder exactly ``base/2``) go up.

    Examples
    --------
    >>> deterministic_round(np.array([1, 2, 3, 7, 8]), 5).tolist()
    [0.0, 0.0, 5.0, 5.0, 10.0]
    """
    x = np.asarray(x, dtype=float)
    low = np.floor(x / base + TOL) * base
    rem = x - low
    return np.where(rem >= base / 2.0 - TOL, low + base, low)


def random_round(x: np.ndarray, base: int, rng: np.random.Generator) -> np.ndarray:
    """Unbiased random rounding: up with probability ``r/b``, down otherwise; multiples
    stay.

    Examples
    --------
    >>> random_round(np.array([0.0, 5.0, 10.0]), 5, np.random.default_rng(0)).tolist()
    [0.0, 5.0, 10.0]
    """
    x = np.asarray(x, dtype=float)
    low = np.floor(x / base + TOL) * base
    rem = np.clip(x - low, 0.0, None)
    up = rng.random(len(x)) < rem / base
    up &= rem > TOL
    return low + base * up
