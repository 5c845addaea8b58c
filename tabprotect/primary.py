"""Primary sensitivity rules: which cells are unsafe, and how much protection they need.

Rules follow tau-Argus semantics (DESIGN.md section 3).  For a cell with rule-variable total
``X`` (the shadow variable when the table has one, else the value) and largest
contributions ``x1 >= x2 >= ...`` (``table.top``, or the holding-level tops in
``table.extra["holding_top1.."]`` for holding rules):

===================  =============================================  =============================
rule                 unsafe iff (boundaries exact)                   upper protection level
===================  =============================================  =============================
frequency n          ``0 < freq < n`` (``freq == n`` is safe)        ``safety_range % * |value|``
                                                                     (frequency tables: count
                                                                     units, see below)
(n,k)-dominance      ``x1+..+xn > k/100 X`` (strict: ``=`` is safe)  ``D = 100/k (x1+..+xn) - X``
p% (coalition m)     ``X - (x1+..+x_{m+1}) < p/100 x1`` (strict)     ``D = p/100 x1 + x1+..+x_{m+1} - X``
pq (coalition m)     ``X - (x1+..+x_{m+1}) < p/q x1`` (strict)       ``D = p/q x1 + x1+..+x_{m+1} - X``
request p            largest contribution of a contributor who       ``safety_range % * |value|``
                     asked for protection ``> p/100 X``
zero                 ``value == 0`` and ``freq > 0``                 ``safety_range`` (absolute)
group (frequency     a relation's total ``> 0`` and all of it sits   LPL = one contributor
tables)              in one of its (>= 2) parts: that part           (1 in a count table), UPL 0
manual               a-priori status ``S``/``U``/``P`` from a file   file's ``upl/lpl/spl`` or
                                                                     ``manual_safety_range %``
===================  =============================================  =============================

Deficits ``D`` are in the rule variable's units and scaled to the response:
``UPL = |value| * D / X``.  A cell's UPL is the largest over the rules that fire; its LPL the
same, capped so that ``value - LPL >= lb`` (DESIGN.md section 3).  The sliding protection level
is 0 unless the manual file gives one (``spl`` column).  Floating-point noise does not flip a
boundary: a deficit counts only when it exceeds ``1e-9 * max(1, |X|)``.

Evaluation order (tau-Argus): empty (``freq == 0`` and ``value == 0``: status ``Z``, no rule
looks at it), dominance, p%/pq, request, frequency, zero; then the group check and the
manual statuses, which override everything (``S`` makes a cell safe, ``P`` protects it).  A
cell's ``reason`` lists every rule that fired in that order; the first one is what tau-Argus
would report as its status.

Frequency tables: the threshold rule on counts, with levels in count units: an unsafe count
``c`` needs ``UPL = max(n - c, ceil(safety_range % * c))`` (the intruder must not be able to
rule out that the cell reaches the threshold; for weighted counts ``n - freq`` contributors are
scaled by ``value / freq``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from tabprotect.errors import InputError
from tabprotect.model.status import EMPTY, PRIMARY, PROTECTED, SAFE
from tabprotect.model.table import Table, parse_status, read_frame

__all__ = ["Rule", "FrequencyRule", "DominanceRule", "PPercentRule", "PQRule", "RequestRule",
           "ZeroRule", "GroupDisclosureRule", "ManualStatus", "PrimaryResult", "apply_rules",
           "rules_from_spec", "rules_from_job", "top_k_needed", "EVALUATION_ORDER"]

EVALUATION_ORDER = ("empty", "dominance", "p", "pq", "request", "frequency", "zero", "group",
                    "manual")
_TOL = 1e-9


# ====================================================================== rules
@dataclass(frozen=True)
class Rule:
    """A sensitivity rule.  ``evaluate`` returns (unsafe mask, UPL, LPL) in value units."""

    @property
    def kind(self) -> str:
        raise NotImplementedError

    @property
    def label(self) -> str:
        raise NotImplementedError

    def evaluate(self, table: Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        raise NotImplementedError

    @property
    def tops_needed(self) -> int:
        return 0


def _rule_total(table: Table) -> np.ndarray:
    return table.extra["shadow"] if "shadow" in table.extra else table.value


def _scale(table: Table, deficit: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Deficit in rule-variable units -> response units (``|value| D / X``)."""
    if "shadow" not in table.extra:
        return deficit
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(total > 0, np.abs(table.value) / total, 1.0)
    return deficit * factor


def _tops(table: Table, n: int, holding: bool, who: str) -> np.ndarray:
    if holding:
        cols = [f"holding_top{j + 1}" for j in range(n)]
        missing = [c for c in cols if c not in table.extra]
        if missing:
            raise InputError(f"{who}: the table has no holding-level contributions "
                             f"({missing[0]}); tabulate with holding=... and top_k >= {n}")
        return np.column_stack([table.extra[c] for c in cols])
    if table.top is None:
        raise InputError(f"{who}: the table has no largest contributions (top1, top2, ...); "
                         f"give top columns in the cells file or tabulate from microdata")
    if table.top.shape[1] < n:
        raise InputError(f"{who}: needs the {n} largest contributions but the table has "
                         f"{table.top.shape[1]} (tabulate with top_k >= {n})")
    return table.top[:, :n]


def _check_magnitude(table: Table, who: str) -> None:
    if table.kind != "magnitude":
        raise InputError(f"{who} applies to magnitude tables; this is a frequency table")


def _positive_number(value, what: str, allow_zero: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{what} must be a number, not {value!r}") from None
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise InputError(f"{what} must be {'>= 0' if allow_zero else '> 0'}, not {value!r}")
    return v


@dataclass(frozen=True)
class FrequencyRule(Rule):
    """Minimum frequency: unsafe iff ``0 < freq < n``.

    Parameters
    ----------
    n : minimum number of contributors (or holdings)
    safety_range : protection level in % of the cell value (magnitude tables)
    holding : count holdings (``extra["holding_freq"]``) instead of contributors
    weighted : count the sum of the sampling weights (``extra["weighted_freq"]``)

    Examples
    --------
    >>> from tabprotect.model import Hierarchy
    >>> t = Table.from_arrays({"g": Hierarchy.flat(["a", "b"], total="T")}, [30, 10, 20],
    ...                       freq=[5, 2, 3])
    >>> FrequencyRule(3, safety_range=10).evaluate(t)[0].tolist()
    [False, True, False]
    """

    n: int = 3
    safety_range: float = 0.0
    holding: bool = False
    weighted: bool = False

    def __post_init__(self):
        if int(self.n) != self.n or self.n < 1:
            raise InputError(f"frequency rule: n must be a positive integer, not {self.n!r}")
        _positive_number(self.safety_range, "frequency rule: safety_range", allow_zero=True)

    kind = property(lambda self: "frequency")

    @property
    def label(self) -> str:
        h = "holding-" if self.holding else ""
        return f"{h}frequency({self.n})"

    def evaluate(self, table):
        who = f"rule {self.label}"
        if self.holding:
            if "holding_freq" not in table.extra:
                raise InputError(f"{who}: the table has no holding counts; tabulate with "
                                 f"holding=...")
            f = table.extra["holding_freq"]
        elif self.weighted:
            if "weighted_freq" not in table.extra:
                raise InputError(f"{who}: weighted=true needs a weighted table")
            f = table.extra["weighted_freq"]
        else:
            f = table.freq
        if np.isnan(f).any():
            i = int(np.flatnonzero(np.isnan(f))[0])
            raise InputError(f"{who}: cell {table.cell_name(i)} has no contributor count "
                             f"(give a freq column)")
        unsafe = (f > 0) & (f < self.n)
        if table.kind == "frequency":
            with np.errstate(divide="ignore", invalid="ignore"):
                per_unit = np.where(f > 0, np.abs(table.value) / f, 1.0)
            upl = np.maximum((self.n - f) * per_unit,
                             np.ceil(self.safety_range / 100.0 * np.abs(table.value) - 1e-9))
        else:
            upl = self.safety_range / 100.0 * np.abs(table.value)
        upl = np.where(unsafe, upl, 0.0)
        return unsafe, upl, upl


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
        k = _positive_number(self.k, "dominance rule: k")
        if k > 100:
            raise InputError(f"dominance rule: k is a percentage (0 < k <= 100), not {k}")

    kind = property(lambda self: "dominance")
    tops_needed = property(lambda self: int(self.n))

    @property
    def label(self) -> str:
        h = "holding-" if self.holding else ""
        return f"{h}dominance({self.n},{self.k:g})"

    def evaluate(self, table):
        _check_magnitude(table, f"rule {self.label}")
        tops = _tops(table, int(self.n), self.holding, f"rule {self.label}")
        X = _rule_total(table)
        deficit = 100.0 / self.k * tops.sum(axis=1) - X
        unsafe = deficit > _TOL * np.maximum(1.0, np.abs(X))
        upl = np.where(unsafe, _scale(table, deficit, X), 0.0)
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
        _check_magnitude(table, f"rule {self.label}")
        tops = _tops(table, int(self.m) + 1, self.holding, f"rule {self.label}")
        X = _rule_total(table)
        deficit = self.ratio * tops[:, 0] + tops.sum(axis=1) - X
        unsafe = (deficit > _TOL * np.maximum(1.0, np.abs(X))) & (tops[:, 0] > 0)
        upl = np.where(unsafe, _scale(table, deficit, X), 0.0)
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
        _positive_number(self.p, "p%-rule: p")
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
        _positive_number(self.p, "pq-rule: p")
        self._check_m("pq-rule")
        q = _positive_number(self.q, "pq-rule: q")
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
        p = _positive_number(self.p, "request rule: p", allow_zero=True)
        if p >= 100:
            raise InputError(f"request rule: p is a percentage below 100, not {p}")
        _positive_number(self.safety_range, "request rule: safety_range", allow_zero=True)

    kind = property(lambda self: "request")
    label = property(lambda self: f"request({self.p:g})")

    def evaluate(self, table):
        _check_magnitude(table, "request rule")
        if "request_max" not in table.extra:
            raise InputError("request rule: the table has no request data; tabulate with "
                             "request=<column flagging contributors who asked for protection>")
        X = _rule_total(table)
        r = table.extra["request_max"]
        unsafe = (r > 0) & (r - self.p / 100.0 * X > _TOL * np.maximum(1.0, np.abs(X)))
        upl = np.where(unsafe, self.safety_range / 100.0 * np.abs(table.value), 0.0)
        return unsafe, upl, upl


@dataclass(frozen=True)
class ZeroRule(Rule):
    """Zero rule: a cell of value 0 with contributors is unsafe; its protection range is
    ``safety_range`` in value units (absolute).

    Examples
    --------
    >>> ZeroRule(5).label
    'zero'
    """

    safety_range: float = 0.0

    def __post_init__(self):
        _positive_number(self.safety_range, "zero rule: safety_range", allow_zero=True)

    kind = property(lambda self: "zero")
    label = property(lambda self: "zero")

    def evaluate(self, table):
        f = np.nan_to_num(table.freq, nan=0.0)
        unsafe = (table.value == 0) & (f > 0)
        upl = np.where(unsafe, float(self.safety_range), 0.0)
        return unsafe, upl, upl


@dataclass(frozen=True)
class GroupDisclosureRule(Rule):
    """Frequency tables: "all of a row/column in one cell".  When a relation's total is
    positive and all of it sits in one of its (two or more) parts, every member of the total
    is known to belong to that part; the part is unsafe and must be protected downwards by
    one contributor (LPL = ``value / freq``, 1 in a count table), so that the intruder cannot
    exclude that someone is elsewhere.

    Parameters
    ----------
    dimensions : only relations along these dimensions (the attribute variables, e.g.
        occupation); default every dimension

    Examples
    --------
    >>> GroupDisclosureRule().label
    'group'
    """

    dimensions: tuple[str, ...] = ()

    kind = property(lambda self: "group")
    label = property(lambda self: "group")

    def evaluate(self, table):
        if table.kind != "frequency":
            raise InputError("group-disclosure check applies to frequency tables")
        A = table.relations.tocsr()
        n = table.n_cells
        unsafe = np.zeros(n, dtype=bool)
        if A.shape[0] == 0:
            return unsafe, np.zeros(n), np.zeros(n)
        rel_ok = np.ones(A.shape[0], dtype=bool)
        if self.dimensions:
            if not table.dimensions:
                raise InputError("group check: 'dimensions' needs a product table")
            names = table.dimension_names
            unknown = [d for d in self.dimensions if d not in names]
            if unknown:
                raise InputError(f"group check: unknown dimension(s) {unknown}")
            # the dimension of a relation: where its total and a part differ
            coo = A.tocoo()
            part = coo.data < 0
            first_part = np.full(A.shape[0], -1, dtype=np.int64)
            first_part[coo.row[part][::-1]] = coo.col[part][::-1]
            tot = table.relation_total
            rel_dim = np.full(A.shape[0], -1)
            for d, p in enumerate(table.positions):
                rel_dim = np.where((rel_dim < 0) & (p[tot] != p[first_part]), d, rel_dim)
            wanted = [names.index(d) for d in self.dimensions]
            rel_ok = np.isin(rel_dim, wanted)
        coo = A.tocoo()
        part = coo.data < 0
        rows, cols = coo.row[part], coo.col[part]
        nonzero = table.value[cols] != 0
        n_parts = np.bincount(rows, minlength=A.shape[0])
        n_nonzero = np.bincount(rows, weights=nonzero.astype(float), minlength=A.shape[0])
        total_val = table.value[table.relation_total]
        hit = rel_ok & (n_parts >= 2) & (n_nonzero == 1) & (total_val > 0)
        sel = hit[rows] & nonzero
        unsafe[cols[sel]] = True
        with np.errstate(divide="ignore", invalid="ignore"):
            one = np.where(table.freq > 0, np.abs(table.value) / table.freq, 1.0)
        lpl = np.where(unsafe, np.minimum(one, np.abs(table.value)), 0.0)
        return unsafe, np.zeros(n), lpl


@dataclass(frozen=True)
class ManualStatus(Rule):
    """A-priori statuses and protection levels from a file or frame.

    The frame has one column per dimension (codes), ``status`` (``S`` safe, ``U`` unsafe,
    ``P`` protected; empty = no change) and optional ``upl``, ``lpl``, ``spl``, ``lb``,
    ``ub``.  A manual ``U`` without levels gets ``safety_range`` % of the value.

    Examples
    --------
    >>> ManualStatus(pd.DataFrame({"g": ["a"], "status": ["U"]})).label
    'manual'
    """

    frame: Any = None  # DataFrame or path
    safety_range: float = 10.0
    source: str = "manual"

    kind = property(lambda self: "manual")
    label = property(lambda self: "manual")

    def load(self) -> pd.DataFrame:
        if isinstance(self.frame, pd.DataFrame):
            return self.frame
        return read_frame(Path(self.frame), dtype_str=())

    @property
    def file_name(self) -> str:
        """The manual file's name (without its folder), or ``source`` for a frame."""
        return Path(self.frame).name if not isinstance(self.frame, pd.DataFrame) \
            else self.source

    def locate(self, table: Table) -> tuple[np.ndarray, pd.DataFrame]:
        """Cell index of every row of the manual frame."""
        frame = self.load()
        src = self.file_name
        if "status" not in frame.columns and not {"upl", "lpl", "lb", "ub"} & set(frame.columns):
            raise InputError(f"{src}: needs a 'status' column (S, U or P) or protection "
                             f"levels/bounds")
        if not table.dimensions:
            raise InputError(f"{src}: manual statuses need a product table")
        pos = []
        for d in table.dimensions:
            if d.name not in frame.columns:
                raise InputError(f"{src}: dimension column '{d.name}' not found")
            codes = frame[d.name].astype(str).str.strip()
            p = d.hierarchy.lookup(codes)
            bad = np.flatnonzero(p < 0)
            if len(bad):
                raise InputError(f"{src} line {bad[0] + 2}: the code in column "
                                 f"'{d.name}' is not in its hierarchy")
            pos.append(p)
        idx = np.ravel_multi_index(tuple(pos), table.shape)
        return idx, frame


# ====================================================================== result
@dataclass
class PrimaryResult:
    """The table with primary statuses and protection levels, and why.

    Attributes
    ----------
    table : new Table: status ``U`` on unsafe cells (``Z`` empty, ``P`` protected, ``S``
        otherwise) and ``upl``, ``lpl``, ``spl`` set
    reason : per cell, the rules that fired, in evaluation order, joined by ``+``
    fired : rule label -> mask of cells where it fired
    rules : the rules applied
    """

    table: Table
    reason: np.ndarray
    fired: dict[str, np.ndarray]
    rules: list[Rule] = field(default_factory=list)

    @property
    def unsafe(self) -> np.ndarray:
        return self.table.status == PRIMARY

    def summary(self) -> pd.DataFrame:
        """One row per rule: cells where it fired, where it was the first reason (the
        tau-Argus status), and where it was the only reason; then the total of unsafe
        cells."""
        first = np.array([r.split("+")[0] if r else "" for r in self.reason], dtype=object)
        rows = []
        for label, mask in self.fired.items():
            rows.append({"rule": label, "cells": int(mask.sum()),
                         "first_reason": int(np.sum(first[mask] == label)),
                         "only_reason": int(np.sum(self.reason[mask] == label))})
        rows.append({"rule": "unsafe (any rule)", "cells": int(self.unsafe.sum()),
                     "first_reason": int(self.unsafe.sum()), "only_reason": 0})
        rows.append({"rule": "empty (Z)", "cells": int((self.table.status == EMPTY).sum()),
                     "first_reason": 0, "only_reason": 0})
        rows.append({"rule": "protected (P)",
                     "cells": int((self.table.status == PROTECTED).sum()),
                     "first_reason": 0, "only_reason": 0})
        return pd.DataFrame(rows)

    def to_frame(self, only_unsafe: bool = False) -> pd.DataFrame:
        """Cells with ``value, freq, status, reason, upl, lpl, spl`` columns."""
        out = self.table.to_frame(("value", "freq", "status"))
        out["reason"] = self.reason
        out["upl"] = self.table.upl
        out["lpl"] = self.table.lpl
        out["spl"] = self.table.spl
        if only_unsafe:
            out = out[self.unsafe]
        return out


# ====================================================================== apply
def apply_rules(table: Table, rules: Sequence[Rule] | Mapping[str, Any], *,
                base: str | Path | None = None) -> PrimaryResult:
    """Apply sensitivity rules: primary statuses, protection levels and reasons.

    Parameters
    ----------
    table : a magnitude table (with ``top`` for dominance/p%/pq rules) or a frequency table
    rules : Rule objects, or a ``[rules]`` spec dict (see :func:`rules_from_spec`)
    base : folder that relative file names in a spec dict are resolved against

    Statuses given in the input table are kept as a-priori statuses: ``P`` stays protected
    and ``U`` stays unsafe (reason ``apriori``); ``M`` is dropped (recomputed later).

    Examples
    --------
    >>> from tabprotect.model import Hierarchy
    >>> t = Table.from_arrays({"g": Hierarchy.flat(["a", "b"], total="T")}, [430, 330, 100],
    ...                       freq=[5, 3, 2], top=[[300, 50], [300, 20], [50, 50]])
    >>> res = apply_rules(t, [DominanceRule(1, 85), FrequencyRule(3, 10)])
    >>> res.table.status.tolist(), res.reason.tolist()
    (['S', 'U', 'U'], ['', 'dominance(1,85)', 'frequency(3)'])
    """
    if isinstance(rules, Mapping):
        rules = rules_from_spec(rules, base)
    rules = list(rules)
    for r in rules:
        if not isinstance(r, Rule):
            raise InputError(f"not a sensitivity rule: {r!r}")
    order = {k: i for i, k in enumerate(EVALUATION_ORDER)}
    rules.sort(key=lambda r: order[r.kind])
    n = table.n_cells
    f = np.nan_to_num(table.freq, nan=1.0)
    empty = (f == 0) & (table.value == 0)
    upl = np.zeros(n)
    lpl = np.zeros(n)
    spl = np.zeros(n)
    unsafe = np.zeros(n, dtype=bool)
    reason_parts: list[list[str]] = [[] for _ in range(n)]
    fired: dict[str, np.ndarray] = {}
    lb, ub = table.lb.copy(), table.ub.copy()
    status = np.full(n, SAFE, dtype="<U1")
    status[empty] = EMPTY
    # a-priori statuses of the input table
    given = table.status
    apriori_u = (given == PRIMARY)
    if apriori_u.any():
        fired["apriori"] = apriori_u.copy()
        unsafe |= apriori_u
        upl = np.maximum(upl, table.upl)
        lpl = np.maximum(lpl, table.lpl)
        spl = np.maximum(spl, table.spl)
        for i in np.flatnonzero(apriori_u):
            reason_parts[i].append("apriori")
    force_safe = np.zeros(n, dtype=bool)
    protected = given == PROTECTED
    for rule in rules:
        if isinstance(rule, ManualStatus):
            idx, frame = rule.locate(table)
            st = (parse_status(frame["status"], rule.file_name) if "status" in frame.columns
                  else np.full(len(idx), ""))
            bad = ~np.isin(st, ["", SAFE, PRIMARY, PROTECTED])
            if bad.any():
                raise InputError(f"{rule.file_name} row {int(np.flatnonzero(bad)[0]) + 2}: "
                                 f"status must be S, U or P (safe, unsafe or primary, "
                                 f"protected)")

            def col(name, default):
                if name not in frame.columns:
                    return np.full(len(idx), default)
                return pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)

            mu, ml, ms = col("upl", np.nan), col("lpl", np.nan), col("spl", np.nan)
            mlb, mub = col("lb", np.nan), col("ub", np.nan)
            lb[idx] = np.where(np.isnan(mlb), lb[idx], mlb)
            ub[idx] = np.where(np.isnan(mub), ub[idx], mub)
            is_u = st == PRIMARY
            default = rule.safety_range / 100.0 * np.abs(table.value[idx])
            u_upl = np.where(np.isnan(mu), default, mu)
            u_lpl = np.where(np.isnan(ml), np.where(np.isnan(mu), default, mu), ml)
            u_spl = np.where(np.isnan(ms), 0.0, ms)
            cells_u = idx[is_u]
            mask = np.zeros(n, dtype=bool)
            mask[cells_u] = True
            fired["manual"] = mask
            unsafe[cells_u] = True
            upl[cells_u] = np.maximum(upl[cells_u], u_upl[is_u])
            lpl[cells_u] = np.maximum(lpl[cells_u], u_lpl[is_u])
            spl[cells_u] = np.maximum(spl[cells_u], u_spl[is_u])
            for i in cells_u:
                reason_parts[i].append("manual")
            force_safe[idx[st == SAFE]] = True
            protected[idx[st == PROTECTED]] = True
            continue
        mask, r_upl, r_lpl = rule.evaluate(table)
        if rule.kind != "group":
            mask = mask & ~empty
        label = rule.label
        while label in fired:      # the same rule twice: keep both in the summary
            label += "'"
        fired[label] = mask
        unsafe |= mask
        upl = np.where(mask, np.maximum(upl, r_upl), upl)
        lpl = np.where(mask, np.maximum(lpl, r_lpl), lpl)
        for i in np.flatnonzero(mask):
            reason_parts[i].append(label)
    # overrides: manual S and P win over the rules
    unsafe &= ~force_safe & ~protected
    status[unsafe] = PRIMARY
    status[protected] = PROTECTED
    upl = np.where(unsafe, upl, 0.0)
    lpl = np.where(unsafe, np.minimum(lpl, np.maximum(table.value - lb, 0.0)), 0.0)
    spl = np.where(unsafe, spl, 0.0)
    reason = np.array(["+".join(p) for p in reason_parts], dtype=object)
    reason[force_safe & (reason != "")] = "manual-safe (" + reason[force_safe & (reason != "")] \
        + ")"
    reason[protected & (reason != "")] = "protected (" + reason[protected & (reason != "")] + ")"
    new = table.replace(status=status, upl=upl, lpl=lpl, spl=spl, lb=lb, ub=ub)
    return PrimaryResult(table=new, reason=reason, fired=fired, rules=rules)


# ====================================================================== specs
_RULE_KEYS = {
    "frequency": ({"n", "safety_range", "holding", "weighted"}, FrequencyRule),
    "dominance": ({"n", "k", "holding"}, DominanceRule),
    "p": ({"p", "m", "holding"}, PPercentRule),
    "pq": ({"p", "q", "m", "holding"}, PQRule),
    "request": ({"p", "safety_range"}, RequestRule),
    "zero": ({"safety_range"}, ZeroRule),
    "group": ({"dimensions"}, GroupDisclosureRule),
}


def rules_from_spec(spec: Mapping[str, Any], job_or_base=None) -> list[Rule]:
    """Rules from a job's ``[rules]`` section.

    Format (every rule table may also be an array of tables, ``[[rules.dominance]]``)::

        [rules]
        manual = "apriori.csv"          # a-priori statuses / protection levels
        manual_safety_range = 10        # % of the value for manual U without levels
        [rules.frequency]
        n = 3
        safety_range = 30               # % of the value (count units in frequency tables)
        holding = false
        [[rules.dominance]]
        n = 1
        k = 85
        [[rules.p]]
        p = 10
        m = 1
        [[rules.pq]]
        p = 10
        q = 50
        [rules.request]
        p = 0
        safety_range = 10
        [rules.zero]
        safety_range = 5
        [rules.group]                   # frequency tables
        dimensions = ["occupation"]

    Examples
    --------
    >>> [r.label for r in rules_from_spec({"dominance": [{"n": 1, "k": 85}],
    ...                                    "p": {"p": 10}})]
    ['dominance(1,85)', 'p(10,1)']
    """
    base = None
    label = "[rules]"
    if job_or_base is not None:
        if hasattr(job_or_base, "section"):      # a Job
            base = job_or_base
            label = f"{job_or_base.label} [rules]"
        else:
            base = Path(job_or_base)
    rules: list[Rule] = []
    known = set(_RULE_KEYS) | {"manual", "manual_safety_range"}
    unknown = set(spec) - known
    if unknown:
        raise InputError(f"{label}: unknown rule(s) {sorted(unknown)} "
                         f"(known: {', '.join(sorted(known))})")
    for kind, (keys, cls) in _RULE_KEYS.items():
        if kind not in spec:
            continue
        entries = spec[kind]
        if isinstance(entries, Mapping):
            entries = [entries]
        if entries is True:
            entries = [{}]
        if not isinstance(entries, list):
            raise InputError(f"{label}: '{kind}' must be a table or an array of tables")
        for entry in entries:
            bad = set(entry) - keys
            if bad:
                raise InputError(f"{label} {kind}: unknown key(s) {sorted(bad)} "
                                 f"(known: {', '.join(sorted(keys))})")
            kwargs = dict(entry)
            if kind == "group" and "dimensions" in kwargs:
                kwargs["dimensions"] = tuple(kwargs["dimensions"])
            if kind in ("dominance",) and not {"n", "k"} <= set(kwargs):
                raise InputError(f"{label} dominance: give n and k")
            if kind in ("p", "pq") and "p" not in kwargs:
                raise InputError(f"{label} {kind}: give p")
            if kind == "pq" and "q" not in kwargs:
                raise InputError(f"{label} pq: give q")
            rules.append(cls(**kwargs))
    if "manual" in spec:
        m = spec["manual"]
        if hasattr(base, "section"):
            path = base.resolve(m)
        elif base is not None:
            path = base / m
        else:
            path = Path(m)
        if not Path(path).exists():
            raise InputError(f"{label}: manual file {Path(path).name} not found")
        rules.append(ManualStatus(path, float(spec.get("manual_safety_range", 10.0))))
    return rules


def rules_from_job(job) -> list[Rule]:
    """The rules of a job's ``[rules]`` section (file names relative to the job file).

    Examples
    --------
    >>> from tabprotect.io.job import load_job
    >>> job = load_job(spec={"rules": {"frequency": {"n": 3}}}, base=".")
    >>> [r.label for r in rules_from_job(job)]
    ['frequency(3)']
    """
    return rules_from_spec(job.section("rules"), job)


def top_k_needed(rules: Sequence[Rule]) -> int:
    """How many largest contributions the rules look at.

    Examples
    --------
    >>> top_k_needed([DominanceRule(3, 75), PPercentRule(10, m=2)])
    3
    """
    return max([r.tops_needed for r in rules] + [1])
