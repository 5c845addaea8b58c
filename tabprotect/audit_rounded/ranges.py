"""What the rounding method alone says of each true value, and what it promises to protect."""
from __future__ import annotations

import numpy as np

from tabprotect.audit_rounded.result import TOL
from tabprotect.errors import InputError

__all__ = ["AUDIT_METHODS", "method_ranges", "promised_cells"]

AUDIT_METHODS = ("deterministic", "random", "controlled", "small-count")


def method_ranges(published: np.ndarray, base: int, method: str, *, k_step: int = 0,
                  threshold: int | None = None, inner: np.ndarray | None = None,
                  margins_from_interior: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Integer range of each true value implied by the method alone (ORACLES/tau-Argus).

    Examples
    --------
    >>> lo, hi = method_ranges(np.array([0.0, 5.0, 10.0]), 5, "controlled")
    >>> lo.tolist(), hi.tolist()
    ([0.0, 1.0, 6.0], [4.0, 9.0, 14.0])
    """
    a = np.asarray(published, dtype=float)
    b = float(base)
    n = len(a)
    if inner is None:
        inner = np.ones(n, dtype=bool)
    if method == "deterministic":
        lo = np.ceil(a - b / 2.0 - 1e-9)
        hi = np.ceil(a + b / 2.0 - 1e-9) - 1.0
    elif method in ("random", "controlled"):
        reach = (int(k_step) + 1) * b
        lo = np.where(a < reach - TOL, 0.0, a - reach + 1.0)
        hi = a + reach - 1.0
        if method == "random" and margins_from_interior:
            lo = np.where(inner, lo, 0.0)
            hi = np.where(inner, hi, np.inf)
    elif method == "small-count":
        t = float(threshold if threshold is not None else base)
        zero = np.abs(a) <= TOL
        at_base = np.abs(a - b) <= TOL
        lo = np.where(zero, 0.0, np.where(at_base, 1.0, a))
        hi = np.where(zero, t - 1.0, np.where(at_base, max(b, t - 1.0), a))
        # zero stays zero when nothing below the threshold is rounded (t <= 1)
        hi = np.where(zero & (t <= 1), 0.0, hi)
        lo = np.where(inner, lo, 0.0)
        hi = np.where(inner, hi, np.inf)
    else:
        raise InputError(f"audit-rounded: method must be one of {', '.join(AUDIT_METHODS)}, "
                         f"not {method!r}")
    return np.maximum(lo, 0.0), hi


def promised_cells(published: np.ndarray, range_lower: np.ndarray, range_upper: np.ndarray,
                   lower: np.ndarray, method: str, *, base: int, threshold: int | None = None,
                   inner: np.ndarray | None = None) -> np.ndarray:
    """Cells whose true value the method promises not to give away exactly.

    Deterministic, random and controlled rounding round every cell: each cell whose range
    holds more than one value is promised.  Small-count rounding protects small counts
    only: an inner cell published 0 or ``b`` (its true value may be a small count) and a
    total whose derived lower bound ``lower`` is below the threshold (its true value may be
    small).  Other inner cells are large counts published unrounded, and a total whose
    true value is at least the threshold is a large count too: both are exact by design.

    Examples
    --------
    >>> a = np.array([7.0, 3.0, 0.0, 10.0, 7.0])      # inner 7, 3, 0; totals 10 and 7
    >>> inner = np.array([True, True, True, False, False])
    >>> lo, hi = method_ranges(a, 3, "small-count", threshold=3, inner=inner)
    >>> derived_lower = np.array([7.0, 1.0, 0.0, 8.0, 1.0])
    >>> promised_cells(a, lo, hi, derived_lower, "small-count", base=3, threshold=3,
    ...                inner=inner).tolist()
    [False, True, True, False, True]
    """
    a = np.asarray(published, dtype=float)
    several = np.asarray(range_upper) - np.asarray(range_lower) > TOL
    if method != "small-count":
        return several
    if inner is None:
        inner = np.ones(len(a), dtype=bool)
    t = float(threshold if threshold is not None else base)
    rounded = (np.abs(a) <= TOL) | (np.abs(a - float(base)) <= TOL)
    may_be_small = np.asarray(lower, dtype=float) < t - TOL
    return several & np.where(inner, rounded, may_be_small)
