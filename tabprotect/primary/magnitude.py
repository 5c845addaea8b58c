"""Magnitude rules on the largest contributions: (n,k)-dominance, p%, pq, and request."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.table import Table
from tabprotect.primary.base import TOL, Rule, check_magnitude, largest, positive_number, \
    rule_total, scale_deficit

__all__ = ["DominanceRule", "PPercentRule", "PQRule", "RequestRule"]


@dataclass(frozen=True)
class DominanceRule(Rule):
    """(n,k)-dominance: unsafe iff ``x1+..+xn > k/100 X``; ``D = 100/k (x1+..+xn) - X``.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy
    >>> t = Table.from_arrays({"g": Hierarchy.flat(["a"], total="T")}, [330, 330],
    ...                       freq=[3, 3], top=[[300, 20], [300, 20]])
    >>> round(float(DominanceRule(1, 85).evaluate(t)[1][0]), 2)
    22.94
    """

    n: int = 1
    k: float = 85.0
    holding: bool = False

    def __post_init__(self):
        if int(self.n) != self.n or self.n < 1:
            raise InputError(f"dominance rule: n must be a positive integer, not {self.n!r}")
        k = positive_number(self.k, "dominance rule: k")
        if k > 100:
            raise InputError(f"dominance rule: k is a percentage (0 < k <= 100), not {k}")

    kind = property(lambda self: "dominance")
    tops_needed = property(lambda self: int(self.n))

    @property
    def label(self) -> str:
        h = "holding-" if self.holding else ""
        return f"{h}dominance({self.n},{self.k:g})"

    def evaluate(self, table):
        check_magnitude(table, f"rule {self.label}")
        tops = largest(table, int(self.n), self.holding, f"rule {self.label}")
        X = rule_total(table)
        deficit = 100.0 / self.k * tops.sum(axis=1) - X
        unsafe = deficit > TOL * np.maximum(1.0, np.abs(X))
        upl = np.where(unsafe, scale_deficit(table, deficit, X), 0.0)
        return unsafe, upl, upl


class _CoalitionRule(Rule):
    """What the p% and pq rules share: an intruder coalition of the ``m`` largest
    contributors but one estimates the largest within ``ratio`` of its value; unsafe iff
    ``X - (x1+..+x_{m+1}) < ratio x1``, ``D = ratio x1 + x1+..+x_{m+1} - X``.  The
    subclasses declare the fields (``p``, ``m``, ``holding``; the pq rule ``q`` after
    ``p``, so ``PQRule(p, q)`` reads as documented)."""

    tops_needed = property(lambda self: int(self.m) + 1)

    def _check_m(self, name: str) -> None:
        if int(self.m) != self.m or self.m < 1:
            raise InputError(f"{name}: m (coalition size) must be a positive integer, "
                             f"not {self.m!r}")

    def evaluate(self, table):
        check_magnitude(table, f"rule {self.label}")
        tops = largest(table, int(self.m) + 1, self.holding, f"rule {self.label}")
        X = rule_total(table)
        deficit = self.ratio * tops[:, 0] + tops.sum(axis=1) - X
        unsafe = (deficit > TOL * np.maximum(1.0, np.abs(X))) & (tops[:, 0] > 0)
        upl = np.where(unsafe, scale_deficit(table, deficit, X), 0.0)
        return unsafe, upl, upl


@dataclass(frozen=True)
class PPercentRule(_CoalitionRule):
    """p%-rule with an intruder coalition of ``m`` contributors: unsafe iff
    ``X - (x1+..+x_{m+1}) < p/100 x1``; ``D = p/100 x1 + x1+..+x_{m+1} - X``.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy
    >>> t = Table.from_arrays({"g": Hierarchy.flat(["a"], total="T")}, [110000, 110000],
    ...                       freq=[3, 3], top=[[52000, 50000]] * 2)
    >>> PPercentRule(10).evaluate(t)[0].tolist()
    [False, False]
    """

    p: float = 10.0
    m: int = 1
    holding: bool = False

    def __post_init__(self):
        positive_number(self.p, "p%-rule: p")
        self._check_m("p%-rule")

    kind = property(lambda self: "p")

    @property
    def ratio(self) -> float:
        return self.p / 100.0

    @property
    def label(self) -> str:
        h = "holding-" if self.holding else ""
        return f"{h}p({self.p:g},{self.m})"


@dataclass(frozen=True)
class PQRule(_CoalitionRule):
    """pq-rule (prior knowledge q%): unsafe iff ``X - (x1+..+x_{m+1}) < p/q x1``.
    Arguments in the documented order ``PQRule(p, q, m=1, holding=False)``.

    Examples
    --------
    >>> PQRule(10, 50).label
    'pq(10,50,1)'
    """

    p: float = 10.0
    q: float = 100.0
    m: int = 1
    holding: bool = False

    def __post_init__(self):
        positive_number(self.p, "pq-rule: p")
        self._check_m("pq-rule")
        q = positive_number(self.q, "pq-rule: q")
        if q > 100:
            raise InputError(f"pq-rule: q is a percentage (0 < q <= 100), not {q}")
        if self.p >= q:
            raise InputError(f"pq-rule: p ({self.p:g}) must be smaller than q ({q:g})")

    kind = property(lambda self: "pq")

    @property
    def ratio(self) -> float:
        return self.p / self.q

    @property
    def label(self) -> str:
        h = "holding-" if self.holding else ""
        return f"{h}pq({self.p:g},{self.q:g},{self.m})"


@dataclass(frozen=True)
class RequestRule(Rule):
    """Request rule: a contributor who asked for protection holds more than ``p`` % of the
    cell (``extra["request_max"] > p/100 X``); protection ``safety_range`` % of the value.

    Examples
    --------
    >>> RequestRule(p=50, safety_range=10).label
    'request(50)'
    """

    p: float = 0.0
    safety_range: float = 10.0

    def __post_init__(self):
        p = positive_number(self.p, "request rule: p", allow_zero=True)
        if p >= 100:
            raise InputError(f"request rule: p is a percentage below 100, not {p}")
        positive_number(self.safety_range, "request rule: safety_range", allow_zero=True)

    kind = property(lambda self: "request")
    label = property(lambda self: f"request({self.p:g})")

    def evaluate(self, table):
        check_magnitude(table, "request rule")
        if "request_max" not in table.extra:
            raise InputError("request rule: the table has no request data; tabulate with "
                             "request=<column flagging contributors who asked for protection>")
        X = rule_total(table)
        r = table.extra["request_max"]
        unsafe = (r > 0) & (r - self.p / 100.0 * X > TOL * np.maximum(1.0, np.abs(X)))
        upl = np.where(unsafe, self.safety_range / 100.0 * np.abs(table.value), 0.0)
        return unsafe, upl, upl
