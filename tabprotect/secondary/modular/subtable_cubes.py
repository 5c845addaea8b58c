"""Cube proofs on a flat sub-table: a cube takes one other code in every dimension, and
its 2^k corners can move by +-d together without changing any sum.  A cube whose
corners are all suppressed (movable) and whose rooms allow a primary's requirements
proves the primary protected (protectable) without an attacker LP."""
from __future__ import annotations

import numpy as np

from tabprotect.model.table import Table


def _cubes(sub: Table, cell: int, max_cubes: int):
    """Every cube of ``cell`` in a flat product table: (corners 2^k x G, signs 2^k x G),
    or None (a single cell, or more than ``max_cubes`` cubes).

    A cube takes one other code in every dimension; its 2^k corners can move by +-d
    together without changing any sum (stepping between two children flips the sign,
    to or from the total keeps it)."""
    pos = [int(pp[cell]) for pp in sub.positions]
    shape = sub.shape
    strides = np.cumprod((1,) + tuple(shape[::-1]))[:-1][::-1]
    offsets, sigmas = [], []
    for d, dim in enumerate(sub.dimensions):
        n = shape[d]
        if n < 2:
            continue
        root = int(np.flatnonzero(dim.hierarchy.depth == 0)[0])
        others = np.flatnonzero(np.arange(n) != pos[d])
        offsets.append((others - pos[d]) * int(strides[d]))
        sigmas.append(np.where((pos[d] == root) | (others == root), 1, -1))
    if not offsets or int(np.prod([len(o) for o in offsets])) > max_cubes:
        return None
    k = len(offsets)
    grids = np.meshgrid(*offsets, indexing="ij")
    sgrids = np.meshgrid(*sigmas, indexing="ij")
    off = [g.ravel() for g in grids]
    sig = [g.ravel() for g in sgrids]
    corners = np.empty((2 ** k, len(off[0])), dtype=np.int64)
    signs = np.empty_like(corners)
    for c in range(2 ** k):
        idx = np.full(len(off[0]), cell, dtype=np.int64)
        sg = np.ones(len(off[0]), dtype=np.int64)
        for j in range(k):
            if (c >> j) & 1:
                idx += off[j]
                sg *= sig[j]
        corners[c] = idx
        signs[c] = sg
    return corners, signs


def _cube_room(req, corners, signs):
    """How far each cube lets its first corner move up and down."""
    plus = signs > 0
    up = np.where(plus, req.up[corners], req.down[corners]).min(axis=0)
    down = np.where(plus, req.down[corners], req.up[corners]).min(axis=0)
    return up, down


def cube_protected(sub: Table, req, hidden: np.ndarray, primaries: np.ndarray,
                   max_cubes: int = 20_000) -> np.ndarray:
    """Mask over ``primaries``: some cube with every corner in ``hidden`` meets the
    primary's upper, lower and sliding requirement (a proof of protection against the
    attacker; with single-contributor attackers only cubes without another
    single-contributor corner count).  False means "not proven", not "unprotected".

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> from tabprotect.secondary.attack_requirements import Requirements
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2],
    ...                       status=list("SSSSUSSSS"), upl=[0, 0, 0, 0, 1, 0, 0, 0, 0])
    >>> req = Requirements.from_table(t, singleton=False)
    >>> cube_protected(t, req, np.isin(np.arange(9), [4, 5, 7, 8]), np.array([4])).tolist()
    [True]
    """
    hidden = np.asarray(hidden, bool)
    out = np.zeros(len(primaries), bool)
    if not sub.dimensions:
        return out
    for i, s in enumerate(np.asarray(primaries, dtype=np.int64)):
        cubes = _cubes(sub, int(s), max_cubes)
        if cubes is None:
            continue
        corners, signs = cubes
        ok = hidden[corners].all(axis=0)
        if req.singleton.any():
            ok &= ~req.singleton[corners[1:]].any(axis=0)
        if not ok.any():
            continue
        up, down = _cube_room(req, corners[:, ok], signs[:, ok])
        slot = int(np.flatnonzero(req.primary == s)[0])
        need_up, need_down = req.need_up[slot], req.need_down[slot]
        width = req.need_width[slot]
        out[i] = bool(((up >= need_up) & (down >= need_down)
                       & (up + down >= width)).any())
    return out


def cube_pattern(sub: Table, req, cost: np.ndarray, max_cubes: int = 20_000
                 ) -> np.ndarray | None:
    """A pattern that protects every primary by a cube of movable cells, cheapest cube
    first (primaries in index order; deterministic), or None when some primary has no
    such cube.  Milliseconds; a first incumbent, not a good pattern."""
    z = np.isin(sub.status, ("U", "M"))
    movable = np.isin(sub.status, ("S", "U", "M")) & (sub.ub > sub.lb) & (sub.value != 0)
    cost = np.asarray(cost, dtype=float)
    for slot, s in enumerate(req.primary):
        if cube_protected(sub, req, z, np.array([s]), max_cubes)[0]:
            continue
        cubes = _cubes(sub, int(s), max_cubes)
        if cubes is None:
            return None
        corners, signs = cubes
        ok = movable[corners].all(axis=0)
        if req.singleton.any():
            ok &= ~req.singleton[corners[1:]].any(axis=0)
        up, down = _cube_room(req, corners, signs)
        ok &= ((up >= req.need_up[slot]) & (down >= req.need_down[slot])
               & (up + down >= req.need_width[slot]))
        if not ok.any():
            return None
        added = np.where(z[corners], 0.0, cost[corners]).sum(axis=0)
        idx = np.flatnonzero(ok)
        best = idx[np.lexsort((idx, added[idx]))[0]]
        z[corners[:, best]] = True
    return z
