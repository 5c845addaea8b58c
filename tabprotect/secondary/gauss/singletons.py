"""The single-contributor (singleton) attack in the elimination: who is watched, and how.

A cell with one contributor is known exactly to that contributor.  When such a cell ``s``
is suppressed, its contributor knows the published cells *and* ``s``, so a primary ``p``
is exactly derivable by them iff ``p`` is in the span of the published cells and ``s``:
with both reduced modulo the published span, iff the reduced vectors of ``p`` and ``s``
are proportional (``p``'s alone non-zero).  The elimination watches the attackers'
reduced vectors beside the primaries' and refuses a publication that would make a
checked primary's a multiple of an attacker's (`kernel._pair_disclosed`): one pass, the
same candidate order, and no primary derivable by one contributor at the end.

Which cells are attackers: every suppressed single-contributor cell (primaries and cells
suppressed before the method), and every candidate with one contributor (it becomes an
attacker if the method suppresses it; if it is published, its reduced vector becomes
zero and it attacks nothing).  In count tables the attackers are the count-1 cells; a
relation whose only suppressed cells are two of them is exactly the pair the test
refuses.

Cells that hold the same single record (a total with one contributor and the one cell
of its sum that has it, the rest of the sum empty and published by force;
:func:`tabprotect.records.same_record`) are one contributor, who attacks none of them,
and one vector modulo the published span: the elimination watches one of them for all
(checked if any is, an attacker if any is), so it never pairs the record with itself.
"""
from __future__ import annotations

import numpy as np

from tabprotect.model.table import Table
from tabprotect.records import same_record
from tabprotect.secondary.gauss.state import ROLE_ATTACKER, ROLE_CHECKED


def watched_roles(table: Table, checked: np.ndarray, singleton: bool
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The cells the elimination watches and their ROLE_* bits: the ``checked`` primaries,
    and with ``singleton`` the attackers (single-contributor cells not published by
    force); one cell for each class of cells holding the same record, with the roles of
    all of them."""
    attackers = np.zeros(table.n_cells, bool)
    if singleton:
        attackers = (np.asarray(table.freq) == 1) & ~np.isin(table.status, ("P", "Z"))
    cells = np.flatnonzero(checked | attackers)
    roles = (np.where(checked[cells], ROLE_CHECKED, 0)
             | np.where(attackers[cells], ROLE_ATTACKER, 0)).astype(np.int8)
    if not singleton:
        return cells, roles
    label = same_record(table, zeros_known=np.isin(table.status, ("P", "Z")))[cells]
    # per watched cell, the first watched cell of its class (itself outside a class)
    key = np.where(label >= 0, label, -1 - cells)
    _, first, group = np.unique(key, return_index=True, return_inverse=True)
    merged = np.zeros(len(first), np.int8)
    np.bitwise_or.at(merged, group, roles)
    order = np.argsort(first)       # in cell order, as without classes
    return cells[first[order]], merged[order]
