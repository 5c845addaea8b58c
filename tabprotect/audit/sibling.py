"""Sibling cubes: integral moves of a product table around its primaries, found from the
hierarchies alone (no LP, no cube search), offered to the audit as candidate witnesses
(which checks each before it uses it, :mod:`~tabprotect.audit.moves`)."""
from __future__ import annotations

import itertools

import numpy as np
import scipy.sparse as sp

from tabprotect.model.table import Table


def sibling_cubes(table: Table, everything: np.ndarray, per_primary: int,
                  max_combos: int = 64) -> sp.csr_matrix:
    """Moves of a product table around its unpublished primaries whose codes are leaves:
    in every dimension one leaf sibling of the primary's code (same parent), the ``2^d``
    corners of the primary and those siblings alternately +1 and -1. Each relation sums
    the children of one code along one dimension, the others fixed, so it holds two
    corners of opposite sign or none: the move keeps every relation. Only cubes whose
    corners are all unpublished (``everything``) count; per primary the ``per_primary``
    with the most room (each corner's distance to its a-priori bounds, both ways) among
    the first ``max_combos`` sibling combinations, one row each."""
    shape = table.shape
    strides = np.array([int(np.prod(shape[d + 1:])) for d in range(len(shape))])
    siblings = [_leaf_siblings(dim.hierarchy) for dim in table.dimensions]
    bits = np.array(list(itertools.product((0, 1), repeat=len(shape))), dtype=bool)
    signs = np.where(bits.sum(axis=1) % 2 == 0, 1.0, -1.0)
    room = np.minimum(table.value - table.lb, table.ub - table.value)
    rows, cols, vals = [], [], []
    for p in np.flatnonzero((table.status == "U") & everything):
        at = np.array([pos[p] for pos in table.positions])
        options = [siblings[d][a] for d, a in enumerate(at)]
        if any(len(o) == 0 for o in options):
            continue
        combos = np.array(list(itertools.islice(itertools.product(*options), max_combos)))
        corners = np.where(bits[None, :, :], combos[:, None, :], at[None, None, :]) @ strides
        ok = everything[corners].all(axis=1)
        score = np.where(ok, room[corners].min(axis=1), -np.inf)
        for k in np.argsort(-score, kind="stable")[:per_primary]:
            if score[k] > 0:
                rows.append(np.full(len(signs), len(rows)))
                cols.append(corners[k])
                vals.append(signs)
    if not rows:
        return sp.csr_matrix((0, table.n_cells))
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows),
                                                 np.concatenate(cols))),
                         shape=(len(rows), table.n_cells))


def _leaf_siblings(h) -> list[np.ndarray]:
    """Per code: the other leaf children of its parent (none for the root and non-leaf
    codes)."""
    leaf, parent, children = h.is_leaf, np.asarray(h.parent), h.children
    out = []
    for i in range(len(h)):
        if not leaf[i] or parent[i] < 0:
            out.append(np.zeros(0, dtype=np.int64))
            continue
        kids = np.asarray(children[parent[i]], dtype=np.int64)
        out.append(kids[leaf[kids] & (kids != i)])
    return out
