"""Generator of large hierarchical magnitude tables with realistic primaries (vectorised).

A dimension is given by its branching factors per level, e.g. ``(4, 5, 5)``: the total has
4 children, each of those 5, each of those 5 (4 + 20 + 100 codes below the total).  Inner
cells get a number of enterprises (negative-binomial-like: a gamma-mixed Poisson, so many
inner cells are empty and a few are large) and each enterprise a log-normal turnover; the
totals, the contributor counts and the two largest contributions of every aggregate are
computed from the inner cells.  Primaries follow the usual business-statistics rules:

* minimum frequency 3 (``0 < freq < 3``), protection 10 % of the value each way;
* p%-rule with p = 15 (coalition of one: ``X - x1 - x2 < 0.15 x1``), protection
  ``0.15 x1 + x1 + x2 - X`` each way (lower level capped so the bound stays >= 0).

``benchmarks/gen_tables.py`` prints a summary of a preset from the command line.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tabprotect.model.hierarchy import Hierarchy
from tabprotect.model.table import Table, aggregate_leaves

#: presets: (name, branchings per dimension) giving about the named number of cells
PRESETS: dict[str, tuple[tuple[int, ...], ...]] = {
    "1k-3d": ((3, 3), (3, 4), (4,)),                                   # 13 x 16 x 5 = 1,040
    "2d-small": ((3, 2), (4,)),                                        # 10 x 5 = 50
    "3d-small": ((2, 2), (3,), (3,)),                                  # 7 x 4 x 4 = 112
    "10k-3d": ((4, 4), (4, 5, 2), (6,)),                               # 21 x 65 x 7 = 9,555
    "10k-4d": ((3, 4), (4, 4), (5,), (4,)),                            # 16 x 21 x 6 x 5 = 10,080
    "100k-3d": ((5, 5, 3), (4, 5, 4), (8,)),                           # 106 x 105 x 9 = 100,170
    "100k-4d": ((4, 5), (5, 4, 4), (6,), (4,)),                        # 25 x 106 x 7 x 5 = 92,750
    "1m-3d": ((5, 6, 5), (5, 5, 5, 3), (9,)),                          # 186 x 531 x 10 = 987,660
    "1m-4d": ((4, 5, 4), (5, 4, 4), (8,), (9,)),                       # 105 x 106 x 9 x 10 = 1,001,700
}

DIMENSION_NAMES = ("region", "industry", "size", "legal", "sector")


def branching_hierarchy(branching: Sequence[int], prefix: str, total: str = "Total"
                        ) -> Hierarchy:
    """A balanced hierarchy with ``branching[l]`` children per code at level ``l``.

    Codes are ``prefix`` + dotted path, e.g. ``R1``, ``R1.2``, ``R1.2.3``.

    Examples
    --------
    >>> branching_hierarchy((2, 2), "R").codes
    ('Total', 'R1', 'R1.1', 'R1.2', 'R2', 'R2.1', 'R2.2')
    """
    pairs = []
    level = [("", total)]
    for b in branching:
        nxt = []
        for path, code in level:
            for j in range(1, b + 1):
                child_path = f"{path}.{j}" if path else f"{j}"
                child = f"{prefix}{child_path}"
                pairs.append((code, child))
                nxt.append((child_path, child))
        level = nxt
    return Hierarchy.from_pairs(pairs)


def _aggregate_top2(top: np.ndarray, hierarchies: Sequence[Hierarchy]) -> np.ndarray:
    """The two largest contributions of every aggregate from those of the inner cells."""
    shape = tuple(len(h) for h in hierarchies)
    arr = top.reshape(shape + (2,)).copy()
    for d, h in enumerate(hierarchies):
        moved = np.moveaxis(arr, d, 0)
        depth = h.depth
        for p in sorted((p for p, _ in h.edges()), key=lambda q: -depth[q]):
            stacked = np.concatenate([moved[c] for c in h.children[p]], axis=-1)
            part = -np.partition(-stacked, 1, axis=-1)[..., :2]
            moved[p] = -np.sort(-part, axis=-1)
    return arr.reshape(-1, 2)


def generate(branchings: Sequence[Sequence[int]], seed: int = 0, mean_enterprises: float = 6.0,
             dispersion: float = 0.8, p: float = 15.0, min_freq: int = 3,
             freq_range: float = 10.0, name: str = "") -> Table:
    """A hierarchical magnitude table with primaries (status ``U``) and protection levels.

    Parameters
    ----------
    branchings : per dimension, the branching factors per level
    seed : random seed (same seed, same table)
    mean_enterprises : mean number of contributors of an inner cell
    dispersion : gamma shape of the cell means (smaller: more empty and more large cells)
    p, min_freq, freq_range : the primary rules (see the module docstring)

    Examples
    --------
    >>> t = generate(PRESETS["2d-small"], seed=1)
    >>> t.n_cells, bool((t.status == "U").any())
    (50, True)
    """
    rng = np.random.default_rng(seed)
    hs = [branching_hierarchy(b, DIMENSION_NAMES[d][0].upper())
          for d, b in enumerate(branchings)]
    dims = {DIMENSION_NAMES[d]: h for d, h in enumerate(hs)}
    shape = tuple(len(h) for h in hs)
    n = int(np.prod(shape))
    inner = np.ones(1, dtype=bool)
    for h in hs:
        inner = np.logical_and.outer(inner, h.is_leaf).ravel()
    inner_idx = np.flatnonzero(inner)
    lam = rng.gamma(dispersion, mean_enterprises / dispersion, size=len(inner_idx))
    counts = rng.poisson(lam)
    owner = np.repeat(np.arange(len(inner_idx)), counts)
    turnover = np.round(rng.lognormal(4.0, 1.3, size=len(owner)), 0) + 1.0
    sums = np.bincount(owner, weights=turnover, minlength=len(inner_idx))
    # two largest contributions per inner cell: sort by (cell, -turnover)
    order = np.lexsort((-turnover, owner))
    o_owner, o_val = owner[order], turnover[order]
    first = np.searchsorted(o_owner, np.arange(len(inner_idx)), side="left")
    has1 = counts >= 1
    has2 = counts >= 2
    top = np.zeros((n, 2))
    t1 = np.zeros(len(inner_idx))
    t2 = np.zeros(len(inner_idx))
    t1[has1] = o_val[first[has1]]
    t2[has2] = o_val[first[has2] + 1]
    top[inner_idx, 0] = t1
    top[inner_idx, 1] = t2
    value = np.zeros(n)
    value[inner_idx] = sums
    freq = np.zeros(n)
    freq[inner_idx] = counts
    value = aggregate_leaves(value, hs)
    freq = aggregate_leaves(freq, hs)
    top = _aggregate_top2(top, hs)
    x1, x2 = top[:, 0], top[:, 1]
    freq_unsafe = (freq > 0) & (freq < min_freq)
    p_deficit = (p / 100.0) * x1 + x1 + x2 - value
    p_unsafe = (freq > 0) & (p_deficit > 1e-9)
    level = np.maximum(np.where(freq_unsafe, freq_range / 100.0 * value, 0.0),
                       np.where(p_unsafe, p_deficit, 0.0))
    unsafe = freq_unsafe | p_unsafe
    status = np.where(value == 0, "Z", "S").astype("<U1")
    status[unsafe] = "U"
    upl = np.where(unsafe, level, 0.0)
    lpl = np.where(unsafe, np.minimum(level, value), 0.0)
    return Table.from_arrays(dims, value, freq, top=top, status=status, upl=upl, lpl=lpl,
                             name=name or "generated")


def preset(name: str, seed: int = 0) -> Table:
    """One of :data:`PRESETS` (see its comments for the sizes)."""
    return generate(PRESETS[name], seed=seed, name=name)


def count_table(branchings: Sequence[Sequence[int]], seed: int = 0,
                small: Sequence[float] = (0.055, 0.076, 0.079), largest: int = 40,
                name: str = "") -> Table:
    """A hierarchical count table with small-count primaries, as statistical offices
    protect them: inner counts 0, 1, 2 with the probabilities ``small``, else uniform in
    ``3..largest``; primaries the cells (totals included) with ``0 < count <= 2``, which
    an intruder's interval must reach ``count + 1`` (upper level 1) and be 2 wide
    (sliding level 2); empty cells published (``Z``).  ``value`` and ``freq`` are the
    count.

    Examples
    --------
    >>> t = count_table([(2, 5)] * 3, seed=1)
    >>> t.n_cells, t.kind, bool(((t.status == "U") == ((t.value >= 1) & (t.value <= 2))).all())
    (2197, 'frequency', True)
    """
    rng = np.random.default_rng(seed)
    hs = [branching_hierarchy(b, DIMENSION_NAMES[d][0].upper())
          for d, b in enumerate(branchings)]
    inner = np.ones(1, dtype=bool)
    for h in hs:
        inner = np.logical_and.outer(inner, h.is_leaf).ravel()
    u = rng.random(int(inner.sum()))
    edges = np.cumsum(small)
    leaf = np.where(u < edges[-1], np.searchsorted(edges, u, side="right"),
                    rng.integers(len(small), largest + 1, len(u)))
    value = np.zeros(inner.size)
    value[inner] = leaf
    value = aggregate_leaves(value, hs)
    primary = (value >= 1) & (value <= 2)
    status = np.where(value == 0, "Z", "S").astype("<U1")
    status[primary] = "U"
    dims = {DIMENSION_NAMES[d]: h for d, h in enumerate(hs)}
    return Table.from_arrays(dims, value, value.copy(), status=status,
                             upl=np.where(primary, 1.0, 0.0),
                             spl=np.where(primary, 2.0, 0.0), kind="frequency",
                             name=name or "counts")
