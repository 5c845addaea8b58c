"""Count rules: minimum frequency, zero cells, and group disclosure in frequency tables."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.table import Table
from tabprotect.primary.base import Rule, positive_number

__all__ = ["FrequencyRule", "ZeroRule", "GroupDisclosureRule"]


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
        positive_number(self.safety_range, "frequency rule: safety_range", allow_zero=True)

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
        positive_number(self.safety_range, "zero rule: safety_range", allow_zero=True)

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
        rel_ok = self._relations_along(table, A)
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

    def _relations_along(self, table: Table, A) -> np.ndarray:
        """Mask of the relations along ``dimensions`` (all when none are given)."""
        if not self.dimensions:
            return np.ones(A.shape[0], dtype=bool)
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
        return np.isin(rel_dim, wanted)
