"""Which cells a secondary-suppression method may add."""
from __future__ import annotations

import numpy as np


def candidate_cells(table, empty: str = "publish") -> np.ndarray:
    """Cells a method may add as secondary suppressions.

    Not the primaries (already suppressed), never ``P`` cells, empty ``Z`` cells only with
    ``empty="suppress"``, and never a cell whose a-priori bounds pin it (``lb == ub``):
    suppressing it hides nothing.
    """
    st = table.status
    ok = np.isin(st, ("S", "M"))
    if empty == "suppress":
        ok |= st == "Z"
    elif empty != "publish":
        raise ValueError(f"empty must be 'publish' or 'suppress', not {empty!r}")
    ok &= table.ub > table.lb
    ok &= st != "M"  # already suppressed: fixed, not a decision
    return ok
