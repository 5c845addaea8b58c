"""The largest contributions of a cell, and its holdings' contributions.

With sampling weights a contribution ``x`` of weight ``w`` counts as ``w`` copies of ``x``:
a cell keeps the (value, weight) *candidates* that cover its first ``top_k`` units of weight,
largest first.  An aggregate's candidates are the largest of the union of its children's, so
leaves are merged upwards level by level; ``unit_tops`` turns candidates into ``top_j``, the
mass of the ``j``-th unit of weight.  A holding can span leaves, so its sums are regrouped at
every level instead (``holding_levels``).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.columns import factorize
from tabprotect.model.hierarchy import Hierarchy

__all__ = ["MAX_CANDIDATES", "candidates_needed", "leaf_candidates", "merge_sorted",
           "aggregate_candidates", "unit_tops", "holding_codes", "holding_sums",
           "holding_levels"]

MAX_CANDIDATES = 256  # per-cell (value, weight) pairs kept to derive weighted top-k


def candidates_needed(k: int, w_min: float) -> int:
    """How many (value, weight) pairs per cell can cover the first k units of weight."""
    if w_min >= 1.0:
        return k
    need = int(math.ceil(k / w_min)) + 1
    if need > MAX_CANDIDATES:
        raise InputError(f"sampling weights as small as {w_min:.3g} would need {need} "
                         f"contributions per cell to find the {k} largest weighted "
                         f"contributions; weights should be >= {k / MAX_CANDIDATES:.3g}")
    return need


def leaf_candidates(gi: np.ndarray, x: np.ndarray, w: np.ndarray, g: int, k: int, K: int):
    """Per group, the largest contributions (and weights) covering the first k weight units.

    For small K, K rounds of "largest remaining value per group" (``np.maximum.at`` is a
    linear pass) beat sorting millions of records; otherwise one lexsort.
    """
    if K <= 8:
        return _candidates_by_rounds(gi, x, w, g, k, K)
    cand_x = np.zeros((g, K))
    cand_w = np.zeros((g, K))
    order = np.lexsort((-x, gi))
    gs = gi[order]
    xs = x[order]
    ws = w[order]
    del order
    starts = np.flatnonzero(np.r_[True, gs[1:] != gs[:-1]])
    group_start = np.repeat(starts, np.diff(np.r_[starts, len(gs)]))
    rank = np.arange(len(gs)) - group_start
    cw = np.cumsum(ws)
    before = cw - ws - (cw[group_start] - ws[group_start])
    take = (before < k - 1e-12) & (rank < K)
    cand_x[gs[take], rank[take]] = xs[take]
    cand_w[gs[take], rank[take]] = ws[take]
    return cand_x, cand_w


def _candidates_by_rounds(gi, x, w, g: int, k: int, K: int):
    cand_x = np.zeros((g, K))
    cand_w = np.zeros((g, K))
    work = np.asarray(x, dtype=float).copy()
    for j in range(K):
        best = np.full(g, -np.inf)
        np.maximum.at(best, gi, work)
        at_best = best[gi]
        hit = np.flatnonzero((work == at_best) & (at_best > -np.inf))
        if len(hit) == 0:
            break
        groups, first = np.unique(gi[hit], return_index=True)
        rec = hit[first]
        cand_x[groups, j] = x[rec]
        cand_w[groups, j] = w[rec]
        work[rec] = -np.inf
    before = np.cumsum(cand_w, axis=1) - cand_w
    drop = before >= k - 1e-12
    cand_x[drop] = 0.0
    cand_w[drop] = 0.0
    return cand_x, cand_w


def merge_sorted(x: np.ndarray, w: np.ndarray, k: int, K: int) -> tuple[np.ndarray, np.ndarray]:
    """Keep, along the last axis, the largest values that cover the first k units of weight."""
    order = np.argsort(-x, axis=-1, kind="stable")
    x = np.take_along_axis(x, order, axis=-1)
    w = np.take_along_axis(w, order, axis=-1)
    before = np.cumsum(w, axis=-1) - w
    keep = (before < k - 1e-12) & (w > 0)
    x = np.where(keep, x, 0.0)[..., :K]
    w = np.where(keep, w, 0.0)[..., :K]
    return x, w


def aggregate_candidates(cx: np.ndarray, cw: np.ndarray, hierarchies: Sequence[Hierarchy],
                         k: int) -> tuple[np.ndarray, np.ndarray]:
    """Candidate (value, weight) lists of every aggregate from its leaves' lists."""
    shape = tuple(len(h) for h in hierarchies)
    K = cx.shape[1]
    ax = cx.reshape(shape + (K,)).copy()
    aw = cw.reshape(shape + (K,)).copy()
    for d, h in enumerate(hierarchies):
        mx = np.moveaxis(ax, d, 0)
        mw = np.moveaxis(aw, d, 0)
        depth = h.depth
        for p in sorted((p for p, _ in h.edges()), key=lambda p: -depth[p]):
            kids = list(h.children[p])
            xs = np.concatenate([mx[c] for c in kids], axis=-1)
            ws = np.concatenate([mw[c] for c in kids], axis=-1)
            mx[p], mw[p] = merge_sorted(xs, ws, k, K)
    return ax.reshape(-1, K), aw.reshape(-1, K)


def unit_tops(cx: np.ndarray, cw: np.ndarray, k: int) -> np.ndarray:
    """top_j = mass of the j-th unit of weight, contributions laid out largest first."""
    end = np.cumsum(cw, axis=1)
    start = end - cw
    out = np.zeros((cx.shape[0], k))
    for j in range(k):
        overlap = np.clip(np.minimum(end, j + 1) - np.maximum(start, j), 0.0, None)
        out[:, j] = (cx * overlap).sum(axis=1)
    return out


def holding_codes(values: np.ndarray) -> np.ndarray:
    """Integer holding ids; a record with an empty holding is a holding of its own."""
    codes, _ = factorize(np.asarray(values))
    lone = codes < 0
    codes[lone] = codes.max(initial=-1) + 1 + np.arange(int(lone.sum()))
    return codes


def holding_sums(cell: np.ndarray, hold: np.ndarray, x: np.ndarray):
    """Sum of the rule variable per (leaf cell, holding)."""
    pairs = np.stack([np.asarray(cell, dtype=np.int64), np.asarray(hold, dtype=np.int64)], 1)
    uniq, first, codes = np.unique(pairs, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")          # pairs in order of first appearance
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    sums = np.bincount(rank[codes.ravel()], weights=x, minlength=len(uniq))
    uniq = uniq[order]
    return uniq[:, 0], uniq[:, 1], sums


def _ancestor_table(h: Hierarchy) -> np.ndarray:
    """For each code, its chain of ancestors (itself first), padded with -1."""
    depth = h.depth
    out = np.full((len(h), int(depth.max()) + 1), -1, dtype=np.int64)
    for i in range(len(h)):
        j, c = 0, i
        while c >= 0:
            out[i, j] = c
            c = int(h.parent[c])
            j += 1
    return out


def holding_levels(cells: np.ndarray, holds: np.ndarray, sums: np.ndarray,
                   hierarchies: Sequence[Hierarchy], k: int, n: int):
    """Holding frequency and top-k holding contributions of every cell, every level.

    A holding can span leaves, so its contribution to an aggregate is the sum over those
    leaves: the (cell, holding) sums are regrouped at every level, one dimension at a time.
    """
    shape = tuple(len(h) for h in hierarchies)
    strides = np.array([int(np.prod(shape[d + 1:])) for d in range(len(shape))], dtype=np.int64)
    for d, h in enumerate(hierarchies):
        anc = _ancestor_table(h)
        pos = (cells // strides[d]) % shape[d]
        parts_c, parts_h, parts_s = [], [], []
        for j in range(anc.shape[1]):
            a = anc[pos, j]
            ok = a >= 0
            parts_c.append(cells[ok] + (a[ok] - pos[ok]) * strides[d])
            parts_h.append(holds[ok])
            parts_s.append(sums[ok])
        cells, holds, sums = holding_sums(np.concatenate(parts_c), np.concatenate(parts_h),
                                          np.concatenate(parts_s))
    hfreq = np.bincount(cells, minlength=n).astype(float)
    order = np.lexsort((-sums, cells))
    cs, ss = cells[order], sums[order]
    starts = np.flatnonzero(np.r_[True, cs[1:] != cs[:-1]])
    rank = np.arange(len(cs)) - np.repeat(starts, np.diff(np.r_[starts, len(cs)]))
    take = rank < k
    tops = np.zeros((n, k))
    tops[cs[take], rank[take]] = ss[take]
    return hfreq, tops
