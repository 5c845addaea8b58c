"""What the cell key method leaves an intruder, and what it costs users.

* :func:`posterior` - for a published count ``j``, the intruder's posterior over the original
  count ``i``: ``P(i | j) ~ prior(i) * ptable(i -> j)``, e.g. ``P(original = 1 | published = 3)``.
  The ptable is public (its parameters are published with the tables); the prior is the
  intruder's: uniform over ``0 .. n_original - 1`` unless given.
* :func:`non_additivity` - independent noise breaks the table's relations: the share of
  relations whose published total differs from the sum of its published parts, and the
  largest difference.
* :func:`restore_additivity` - the least-cost change of the published counts (sum of
  absolute changes) that makes every relation hold again while every cell stays a count the
  ptable could publish for its original (between its smallest and largest non-zero target,
  or 0 where the ptable can publish 0; zeros stay zeros, so no count lands in ``1 .. js``);
  an integer program solved by HiGHS.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

from solvers import LinearProgram, solve

from tabprotect.errors import InputError
from tabprotect.model.table import Table

from .ptable import PTable

__all__ = ["posterior", "disclosure_summary", "non_additivity", "restore_additivity",
           "Restored"]


def posterior(pt: PTable, n_original: int | None = None,
              prior: np.ndarray | None = None) -> pd.DataFrame:
    """``P(original = i | published = j)``: rows = published ``j``, columns = original ``i``.

    Examples
    --------
    >>> from tabprotect.cellkey.ptable import count_ptable
    >>> post = posterior(count_ptable(D=1, V=0.5), n_original=4)
    >>> round(float(post.loc[1, 2]), 4)   # P(original 2 | published 1), uniform prior
    0.3333
    """
    vmax = int(np.abs(pt.v).max())
    n = int(n_original or pt.imax + 2 * vmax + 1)
    prior = np.full(n, 1.0 / n) if prior is None else np.asarray(prior, dtype=float)
    if prior.shape != (n,) or (prior < 0).any() or prior.sum() <= 0:
        raise InputError(f"posterior: the prior must give {n} non-negative weights")
    joint = pt.transition(n) * prior[:, None]            # (i, j)
    pub = joint.sum(axis=0)
    keep = pub > 0
    post = (joint[:, keep] / pub[keep]).T
    return pd.DataFrame(post, index=pd.Index(np.flatnonzero(keep), name="published"),
                        columns=pd.Index(np.arange(n), name="original"))


def disclosure_summary(pt: PTable, n_original: int | None = None,
                       prior: np.ndarray | None = None, small: int | None = None) -> dict:
    """Per published count: the largest posterior of an original value and the posterior
    probability that the original was a small count ``1 .. small`` (default ``max(js, 2)``);
    published counts are listed while every original that can produce them lies in the
    prior's range."""
    post = posterior(pt, n_original, prior)
    js = pt.params.js if pt.params is not None else 0
    small = int(small if small is not None else max(js, 2))
    vmax = int(np.abs(pt.v).max())
    out = []
    for j, row in post.iterrows():
        if j + vmax > post.shape[1] - 1:    # some originals of j lie beyond the prior's range
            break
        out.append({"published": int(j), "max_posterior": round(float(row.max()), 6),
                    "most_likely_original": int(row.idxmax()),
                    f"p_original_1_to_{small}": round(float(row.loc[1:small].sum()), 6)})
    return {"prior": "given" if prior is not None else f"uniform over 0..{post.shape[1] - 1}",
            "published": out}


def non_additivity(table: Table, published: np.ndarray, tolerance: float = 1e-9) -> dict:
    """Share of the table's relations broken by the published values, and the largest
    difference between a published total and the sum of its published parts."""
    A = table.relations
    if A.shape[0] == 0:
        return {"relations": 0, "off": 0, "share_off": 0.0, "largest_deviation": 0.0}
    r = np.abs(A @ np.asarray(published, dtype=float))
    off = r > tolerance * np.maximum(1.0, np.abs(published).max())
    return {"relations": int(A.shape[0]), "off": int(off.sum()),
            "share_off": round(float(off.mean()), 6),
            "largest_deviation": float(r.max())}


@dataclass
class Restored:
    """Additive published counts nearest the cell-key ones (or why there are none)."""

    status: str                  # solver status ("optimal", "infeasible", ...)
    values: np.ndarray | None    # the additive published counts
    total_change: float | None   # sum of |restored - cell key published|
    cells_changed: int | None


def _ranges(original: np.ndarray, pt: PTable):
    """Per cell: the smallest and largest non-zero count the ptable can publish for its
    original, and whether it can publish 0."""
    lo = np.zeros(original.size)
    hi = np.zeros(original.size)
    zero = np.ones(original.size, bool)
    rows = np.minimum(original, pt.imax)
    for r in np.unique(rows):
        v, q = pt.row(int(r))
        sel = rows == r
        j = original[sel][:, None] + v[q > 0][None, :]
        nz = np.where(j > 0, j, np.inf)
        lo[sel] = nz.min(axis=1)
        hi[sel] = np.where(j > 0, j, -np.inf).max(axis=1)
        zero[sel] = (j == 0).any(axis=1)
    none = ~np.isfinite(lo)
    lo[none] = hi[none] = 0.0
    return lo, hi, zero


def restore_additivity(table: Table, published: np.ndarray, pt: PTable, *,
                       time_limit: float | None = 60.0) -> Restored:
    """Least-cost additive counts within the ptable's range (see the module docstring)."""
    if table.kind != "frequency":
        raise InputError("restore_additivity: count tables only")
    n = table.n_cells
    original = np.rint(table.freq).astype(np.int64)
    published = np.asarray(published, dtype=float)
    lo, hi, zero = _ranges(original, pt)
    # variables: y (n), up (n), down (n), z (n: 1 = published non-zero)
    # y - up + down = published;  A y = 0;  lo z <= y <= hi z;  z = 1 where 0 is unreachable
    I = sp.identity(n, format="csr")
    Z = sp.csr_matrix((n, n))
    R = sp.csr_matrix(table.relations.shape)
    A = sp.vstack([sp.hstack([I, -I, I, Z]), sp.hstack([table.relations, R, R, R]),
                   sp.hstack([I, Z, Z, -sp.diags(lo)]),
                   sp.hstack([I, Z, Z, -sp.diags(hi)])]).tocsr()
    m = table.n_relations
    row_lo = np.concatenate([published, np.zeros(m), np.zeros(n), np.full(n, -np.inf)])
    row_hi = np.concatenate([published, np.zeros(m), np.full(n, np.inf), np.zeros(n)])
    z_lo = np.where(zero, 0.0, 1.0)
    z_lo[hi == 0] = 0.0
    z_hi = np.where(hi > 0, 1.0, 0.0)
    c = np.concatenate([np.zeros(n), np.ones(2 * n), np.zeros(n)])
    lp = LinearProgram(c=c, A=A, row_lower=row_lo, row_upper=row_hi,
                       col_lower=np.concatenate([np.zeros(3 * n), z_lo]),
                       col_upper=np.concatenate([hi, np.full(2 * n, np.inf), z_hi]),
                       integrality=np.concatenate([np.ones(n, bool), np.zeros(2 * n, bool),
                                                   np.ones(n, bool)]))
    res = solve(lp, time_limit=time_limit)
    if res.x is None:
        return Restored(res.status, None, None, None)
    y = np.rint(res.x[:n])
    return Restored(res.status, y, float(np.abs(y - published).sum()),
                    int((y != published).sum()))
