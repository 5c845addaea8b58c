"""A node's bounds and dominance test in the network search (:mod:`.network_search`):
the cheapest fractional cover of each short row, and which branch candidates an earlier
sibling dominates (numpy over the node's short rows; the compiled kernel,
:mod:`.network_kernel`, and the scalar nodes, :mod:`.network_scalar`, make the same
decisions)."""
from __future__ import annotations

import numpy as np


def _dominated_by_earlier(Kc: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Per column of ``Kc`` (the node's short rows over the branch's candidates, in
    branch order), whether an earlier column costs strictly less and covers at least
    as much of every row.  Its child (it taken, the earlier ones left out) holds no
    optimum: swapping it for the earlier one gives a cheaper pattern of the node."""
    n = len(c)
    out = np.zeros(n, bool)
    a, b = np.nonzero(c[:, None] < c[None, :])         # the cheaper ones ...
    keep = a < b                                        # ... that come first
    if not keep.any():
        return out
    a, b = a[keep], b[keep]
    covers = (Kc[:, a] >= Kc[:, b]).all(axis=0)
    out[b[covers]] = True
    return out


def _cover_bounds(Kc: np.ndarray, need: np.ndarray, c: np.ndarray,
                  pos: np.ndarray | None = None, ratio: np.ndarray | None = None
                  ) -> np.ndarray:
    """Per row, the cost of its cheapest fractional cover (a lower bound: the
    candidates by cost per unit covered, each taking what the row still lacks; ``pos``:
    ``Kc > 0`` when known), summed in that order one term after the other
    (``np.cumsum``), as the compiled kernel (:mod:`.network_kernel`) sums it: the two
    searches compare the same floats."""
    pos = Kc > 0 if pos is None else pos
    n_rows, n = Kc.shape
    if n == 0:
        return np.zeros(n_rows)
    if ratio is None:
        ratio = np.divide(c, Kc, out=np.full(Kc.shape, np.inf), where=pos)
    # each row's candidates by ratio, as flat indices (one gather per array)
    flat = np.argsort(ratio, axis=1, kind="stable")
    flat += np.arange(n_rows)[:, None] * n
    k = Kc.ravel()[flat]
    before = np.zeros_like(k)           # what the cheaper candidates cover
    np.cumsum(k[:, :-1], axis=1, out=before[:, 1:])
    covered = np.minimum(np.maximum(need[:, None] - before, 0.0), k)   # clip to [0, k]
    sorted_ratio = ratio.ravel()[flat]
    sorted_ratio[k <= 0] = 0.0          # (covers nothing: its infinite ratio counts 0)
    return np.cumsum(covered * sorted_ratio, axis=1)[:, -1]
