"""What every secondary method and protect()'s repair check a pattern against: how far
each cell may move (its deviation range, with upper bounds the relations imply), the
protection each primary needs, and which cells a single contributor knows.

For a suppression pattern ``z`` (1 = unpublished) the intruder's freedom in cell ``i`` is
the deviation ``y_i = x_i - a_i`` with ``-(a_i - lb_i) z_i <= y_i <= (ub_i - a_i) z_i``;
:class:`Requirements` holds those ranges and the levels, and the attacker LPs of
:mod:`tabprotect.secondary.attacker_oracle` check them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tabprotect.records import same_record
from tabprotect.requirements import attacker_name, protection_requirements

#: relative tolerance of "protected"; tighter than the audit's 1e-6 so that what the
#: methods call protected also passes the audit
PROTECTION_TOL = 1e-7


@dataclass
class Requirements:
    """Deviation ranges, protection requirements and single-contributor cells of a table.

    Attributes
    ----------
    up, down : how far each cell may move up (``ub - a``) and down (``a - lb``); 0 for a
        cell that can never be suppressed usefully
    primary : indices of the primary cells
    need_up, need_down, need_width : ``UPL'``, ``LPL'`` and ``max(SPL, no-exact-disclosure
        width)`` per primary (:func:`tabprotect.requirements.protection_requirements`;
        the width only where the levels do not imply it, else ``SPL``)
    singleton : mask of single-contributor cells (``freq == 1``)
    tol : absolute tolerance per primary
    record : per cell, the class of the single record it holds
        (:func:`tabprotect.records.same_record`; -1: none; None: each single-contributor
        cell its own record): a class's contributor is never an attacker of its cells
    """

    up: np.ndarray
    down: np.ndarray
    primary: np.ndarray
    need_up: np.ndarray
    need_down: np.ndarray
    need_width: np.ndarray
    singleton: np.ndarray
    tol: np.ndarray
    record: np.ndarray | None = None

    @classmethod
    def from_table(cls, table, singleton: bool = True) -> "Requirements":
        """The requirements of :func:`tabprotect.requirements.protection_requirements`
        (levels and no exact disclosure) with the deviation ranges of every cell."""
        a = table.value
        up = derived_upper_bounds(table) - a
        down = a - table.lb
        up = np.where(up < 0, 0.0, up)
        down = np.where(down < 0, 0.0, down)
        req = protection_requirements(table, attacker_name(singleton))
        single = (table.freq == 1) if singleton else np.zeros(table.n_cells, bool)
        tol = PROTECTION_TOL * np.maximum(1.0, np.abs(req.value))
        record = same_record(table) if np.any(single) else None
        return cls(up=up, down=down, primary=req.primary, need_up=req.need_up,
                   need_down=req.need_down, need_width=req.binding_width,
                   singleton=np.asarray(single, bool), tol=tol, record=record)

    def attacks(self, j: int, s: int) -> bool:
        """Whether the single contributor of cell ``j`` (``-1``: the outside intruder)
        is an attacker of cell ``s``: not when ``s`` holds the same record (their own
        contribution, the concern of the sensitivity rule)."""
        if j < 0:
            return True
        if j == s:
            return False
        rec = self.record
        return rec is None or rec[j] < 0 or rec[j] != rec[s]

    def way_need(self, p: int, sign: float, width: float | None = None) -> float:
        """The deviation primary slot ``p`` asks of one way (``sign`` +1: up, -1: down)
        under a width: that way's level, half the width, and the part of the width the
        other way's range cannot give (a count 1 at its lower bound 1 takes the whole
        width upwards).  ``width``: the width asked (None: ``need_width``; 0: the level
        alone).  Not capped by the way's own range; no margin.

        >>> one = lambda v: np.array([v])
        >>> r = Requirements(up=one(9.0), down=one(0.0), primary=one(0), need_up=one(1.0),
        ...                  need_down=one(0.0), need_width=one(2.0),
        ...                  singleton=one(False), tol=one(0.0))
        >>> r.way_need(0, 1.0), r.way_need(0, -1.0), r.way_need(0, 1.0, width=0.0)
        (2.0, 1.0, 1.0)
        """
        s = self.primary[p]
        if sign > 0:
            level, other = self.need_up[p], self.down[s]
        else:
            level, other = self.need_down[p], self.up[s]
        w = float(self.need_width[p] if width is None else width)
        return max(float(level), 0.5 * w, w - float(other))

    def levels(self, p: int) -> list[tuple[str, float, float]]:
        """The conditions primary slot ``p`` must meet, as ``(kind, sign, level)``: the
        upper level (an intruder's maximum, sign +1), the lower level (minimum, sign -1)
        and the width (sign 0); a condition with level 0 asks nothing and is left out."""
        out = []
        if self.need_up[p] > 0:
            out.append(("up", 1.0, self.need_up[p]))
        if self.need_down[p] > 0:
            out.append(("down", -1.0, self.need_down[p]))
        if self.need_width[p] > 0:
            out.append(("width", 0.0, self.need_width[p]))
        return out


def derived_upper_bounds(table) -> np.ndarray:
    """Upper bounds implied by the relations for every pattern (no big-M).

    A part of a relation can never exceed its total minus the other parts' lower bounds;
    a cell that is always published (status ``P``) is bounded by its value.  Propagated
    top-down to a fixed point.  Cells that no finite bound reaches keep ``ub`` (maybe inf).

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> t = Table.from_arrays({"x": Hierarchy.flat(["a", "b"], total="T")}, [3, 1, 2])
    >>> derived_upper_bounds(t.replace(status=np.array(["P", "S", "S"]))).tolist()
    [3.0, 3.0, 3.0]
    """
    ub = table.ub.astype(float).copy()
    always = table.status == "P"
    ub[always] = np.minimum(ub[always], table.value[always])
    A = table.relations.tocsr()
    totals = table.relation_total
    if A.shape[0] == 0:
        return ub
    lb = table.lb
    # relation rows with a known total and non-negative lower bounds only
    coo = A.tocoo()
    rel_total = totals[coo.row]
    is_part = coo.col != rel_total
    rows, cols = coo.row[is_part], coo.col[is_part]
    ok_rel = totals >= 0
    part_lb = np.zeros(A.shape[0])
    np.add.at(part_lb, rows, lb[cols])
    has_neg = np.zeros(A.shape[0], bool)
    np.logical_or.at(has_neg, rows, lb[cols] < 0)
    # the total's coefficient must be opposite to each part's (total = sum of parts)
    keep = ok_rel[rows] & ~has_neg[rows]
    rows, cols = rows[keep], cols[keep]
    for _ in range(64):
        bound = ub[totals[rows]] - (part_lb[rows] - lb[cols])
        new = ub.copy()
        np.minimum.at(new, cols, bound)
        if np.array_equal(new, ub):
            break
        ub = new
    return ub
