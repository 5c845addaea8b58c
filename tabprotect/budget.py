"""One wall-clock budget for a whole call, split as it is passed down.

``protect(table, time_limit=T)`` creates ``Budget(T)`` and hands shares of what is left to
its stages (the feasibility check, the method, the audit and repair rounds).  A share
never ends after its parent, and time a stage leaves unused stays with the parent for
the stages after it.  A stage that cannot check a budget inside (one solver call) gets
``remaining()`` as its time limit.

Examples
--------
>>> b = Budget(10.0)
>>> s = b.share(0.25)
>>> 0 < s.remaining() <= 2.5 and not s.expired()
True
>>> Budget(None).remaining() is None
True
"""
from __future__ import annotations

import time

from tabprotect.errors import InputError


class Budget:
    """Seconds from ``start`` until ``start + total`` (no limit when ``total`` is None).

    Attributes
    ----------
    start : ``time.perf_counter()`` when the budget began
    total : its seconds (None: unlimited)
    """

    __slots__ = ("start", "total")

    def __init__(self, total: float | None, start: float | None = None):
        if total is not None:
            total = float(total)
            if not total >= 0:  # also rejects nan
                raise InputError(f"time_limit must be a non-negative number of seconds, "
                                 f"not {total}")
        self.total = total
        self.start = time.perf_counter() if start is None else float(start)

    @property
    def deadline(self) -> float | None:
        """``time.perf_counter()`` value at which the budget ends (None: never)."""
        return None if self.total is None else self.start + self.total

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def remaining(self) -> float | None:
        """Seconds left (0 once expired; None: unlimited)."""
        if self.total is None:
            return None
        return max(0.0, self.start + self.total - time.perf_counter())

    def expired(self) -> bool:
        left = self.remaining()
        return left is not None and left <= 0.0

    def share(self, fraction: float) -> "Budget":
        """A sub-budget of ``fraction`` of the time left, starting now."""
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"a budget share is a fraction in [0, 1], not {fraction}")
        if self.total is None:
            return Budget(None)
        now = time.perf_counter()   # one instant: the share ends no later than this one
        left = max(0.0, self.start + self.total - now)
        return Budget(fraction * left, start=now)

    def limit(self, floor: float = 0.0) -> float | None:
        """``remaining()`` as a solver time limit, at least ``floor`` seconds (a solver
        given 0 may not return its incumbent; ``floor`` is the allowed overrun)."""
        left = self.remaining()
        return None if left is None else max(floor, left)

    def __repr__(self) -> str:
        left = self.remaining()
        return "Budget(unlimited)" if left is None else \
            f"Budget({left:.1f} of {self.total:.1f} s left)"
