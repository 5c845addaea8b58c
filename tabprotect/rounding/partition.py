"""Partitioning a large hierarchical table for controlled rounding: the parts, in solving
order, along up to two hierarchies (a parent's slice before its children's)."""
from __future__ import annotations

import numpy as np

from tabprotect.model.table import Table

__all__ = ["partition_dimensions", "stages", "part_label"]


def partition_dimensions(table: Table) -> list[int]:
    """Up to two dimensions to partition along: those whose hierarchies have the most
    non-leaf codes (a flat dimension only splits off its total, so it is used only when
    its table is large in that dimension).  The last dimension is never used when it is
    the only one left, so every part keeps at least one whole dimension."""
    scored = []
    for d, dim in enumerate(table.dimensions):
        h = dim.hierarchy
        scored.append((len(h.edges()), len(h), d))
    scored.sort(reverse=True)
    chosen = [d for n_edges, size, d in scored if n_edges > 1 or size > 50]
    return chosen[:min(2, len(table.dimensions) - 1)]


def stages(table: Table, d: int, within: np.ndarray) -> list[np.ndarray]:
    """Cell masks, in solving order, that split ``within`` along dimension ``d``: the
    total's slice, then per parent code (shallowest first) its children's slices."""
    h = table.dimensions[d].hierarchy
    pos = table.positions[d]
    order = sorted((p for p, _ in h.edges()), key=lambda p: h.depth[p])
    groups = [np.array([0])] + [np.asarray(h.children[p]) for p in order]
    return [within & np.isin(pos, g) for g in groups]


def part_label(table: Table, part: np.ndarray, dims: list[int]) -> str:
    bits = []
    for d in dims:
        codes = np.unique(table.positions[d][part])
        names = [table.dimensions[d].hierarchy.codes[c] for c in codes[:3]]
        bits.append(f"{table.dimensions[d].name} in {{{', '.join(names)}"
                    f"{', ...' if len(codes) > 3 else ''}}}")
    return "the part " + ", ".join(bits)
