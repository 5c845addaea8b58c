"""Leaf aggregates -> :class:`~tabprotect.model.Table`: every level of every hierarchy.

Sums aggregate through the hierarchies (``aggregate_leaves``), request maxima by maximum,
the largest contributions by merging the children's candidates, holdings by regrouping
their sums at each level.  The same for every engine.
"""
from __future__ import annotations

import warnings
from typing import Sequence

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.hierarchy import Hierarchy
from tabprotect.model.relations import product_relation_arrays
from tabprotect.model.table import Table, aggregate_leaves
from tabprotect.tabulate.contributions import aggregate_candidates, holding_levels, \
    merge_sorted, unit_tops
from tabprotect.tabulate.engine import Leaves
from tabprotect.tabulate.spec import MicrodataSpec

__all__ = ["assemble"]


def _scatter(cells: np.ndarray, vals: np.ndarray, n: int) -> np.ndarray:
    return np.bincount(cells, weights=vals, minlength=n).astype(float)


def _aggregate_max(values: np.ndarray, hierarchies: Sequence[Hierarchy]) -> np.ndarray:
    shape = tuple(len(h) for h in hierarchies)
    arr = values.reshape(shape).copy()
    for d, h in enumerate(hierarchies):
        moved = np.moveaxis(arr, d, 0)
        depth = h.depth
        for p in sorted((p for p, _ in h.edges()), key=lambda p: -depth[p]):
            moved[p] = np.max(np.stack([moved[c] for c in h.children[p]]), axis=0)
    return arr.ravel()


def _cell_candidates(lv: Leaves, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Candidates per cell of the full shape; repeated leaf rows merged."""
    K = lv.cand_x.shape[1]
    cells = lv.cell
    cx = np.zeros((n, K))
    cw = np.zeros((n, K))
    _, first = np.unique(cells, return_index=True)
    cx[cells[first]] = lv.cand_x[first]
    cw[cells[first]] = lv.cand_w[first]
    dup = np.setdiff1d(np.arange(len(cells)), first)
    for r in dup:   # several code spellings mapped to one cell (unknown_code)
        c = cells[r]
        cx[c], cw[c] = merge_sorted(np.r_[cx[c], lv.cand_x[r]], np.r_[cw[c], lv.cand_w[r]],
                                    k, K)
    return cx, cw


def assemble(lv: Leaves, spec: MicrodataSpec, name: str) -> Table:
    """The table of every cell; warns (for the caller of ``tabulate``) when records with a
    missing value were counted as 0 or left out."""
    hierarchies = [d.hierarchy for d in spec.dims]
    n = int(np.prod(spec.shape))

    def agg(vals):
        with np.errstate(over="ignore", invalid="ignore"):   # an overflow is raised below
            return aggregate_leaves(_scatter(lv.cell, vals, n), hierarchies)

    extra: dict[str, np.ndarray] = {}
    if spec.weight is not None:
        extra["weighted_freq"] = agg(lv.wsum)
    if lv.shadow is not None:
        extra["shadow"] = agg(lv.shadow)
    if lv.n_missing.any():
        extra["n_missing"] = agg(lv.n_missing)
        warnings.warn(f"{int(lv.n_missing.sum())} record(s) with a missing value were "
                      f"{'left out' if spec.missing == 'drop' else 'counted as 0'} "
                      f"(missing='{spec.missing}'); per cell in extra['n_missing']",
                      stacklevel=3)
    if lv.request_max is not None:
        rm = np.zeros(n)
        np.maximum.at(rm, lv.cell, lv.request_max)
        extra["request_max"] = _aggregate_max(rm, hierarchies)
    top = None
    if lv.cand_x is not None:
        cx, cw = _cell_candidates(lv, n, spec.top_k)
        cx, cw = aggregate_candidates(cx, cw, hierarchies, spec.top_k)
        top = unit_tops(cx, cw, spec.top_k)
    if lv.holdings is not None:
        hfreq, htop = holding_levels(*lv.holdings, hierarchies, spec.top_k, n)
        extra["holding_freq"] = hfreq
        for j in range(spec.top_k):
            extra[f"holding_top{j + 1}"] = htop[:, j]
    A, rel_total = product_relation_arrays(hierarchies)
    table = Table(value=agg(lv.value), freq=agg(lv.freq), relations=A, relation_total=rel_total,
                  dimensions=tuple(spec.dims), top=top,
                  cost=agg(lv.cost) if lv.cost is not None else None, kind=spec.kind,
                  name=name, extra=extra)
    _check_finite(table)
    return table


def _check_finite(table: Table) -> None:
    """Raise :class:`InputError` naming the first cell whose sum overflows (finite
    contributions whose total exceeds the largest float): the cell, never its value."""
    sums = {"value": table.value, "cost": table.cost,
            "weighted count": table.extra.get("weighted_freq"),
            "shadow": table.extra.get("shadow")}
    for what, arr in sums.items():
        if arr is not None and not np.isfinite(arr).all():
            i = int(np.flatnonzero(~np.isfinite(arr))[0])
            raise InputError(f"{table.name or 'microdata'}: the {what} of cell "
                             f"{table.cell_name(i)} overflows (its contributions sum beyond "
                             f"the largest number)")
