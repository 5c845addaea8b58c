"""Split a hierarchical product table into its non-hierarchical sub-tables.

A *group* of a dimension is one non-leaf code together with its children (the parent
listed first).  A *sub-table* is one group per dimension; its cells are the cartesian
product of the groups, so it is a flat (one-level) table in every dimension whose
relations are exactly the full table's relations restricted to it.  Every relation of the
full table lies in at least one sub-table, and a cell whose code is a non-leaf, non-root
code in some dimension belongs to several sub-tables (as a child in one, as the parent in
the other): these *shared* cells are what modular (HiTaS) and hypercube (GHMiter) carry
from one sub-table to the next.

The *level* of a sub-table is the sum of the depths of its groups' parents: level 0 is the
top sub-table (every group headed by a dimension's total).  Processing sub-tables in
increasing level means every margin cell of a sub-table (a cell with the parent code in
some dimension) was already decided in a higher sub-table where it is an interior cell.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Iterator

import numpy as np
import scipy.sparse as sp

from tabprotect.errors import InputError
from tabprotect.model.hierarchy import Hierarchy
from tabprotect.model.table import Dimension, Table


@dataclass(frozen=True)
class DimensionGroups:
    """The groups of one dimension.

    Attributes
    ----------
    members : per group, code positions (parent first, then its children)
    parent_depth : depth of each group's parent
    as_child : per code, the group in which it is a child (-1 for the root)
    as_parent : per code, the group it heads (-1 for leaves)
    """

    members: tuple[np.ndarray, ...]
    parent_depth: np.ndarray
    as_child: np.ndarray
    as_parent: np.ndarray

    @classmethod
    def of(cls, h: Hierarchy) -> "DimensionGroups":
        edges = h.edges()
        n = len(h)
        as_child = np.full(n, -1, dtype=np.int64)
        as_parent = np.full(n, -1, dtype=np.int64)
        depth = h.depth
        if not edges:
            # a dimension with a single code: one trivial group made of that code
            return cls((np.zeros(1, dtype=np.int64),), np.zeros(1, dtype=np.int64),
                       as_child, np.zeros(n, dtype=np.int64))
        members = []
        for g, (p, children) in enumerate(edges):
            members.append(np.asarray([p] + list(children), dtype=np.int64))
            as_parent[p] = g
            as_child[np.asarray(children, dtype=np.int64)] = g
        return cls(tuple(members), depth[[p for p, _ in edges]].astype(np.int64),
                   as_child, as_parent)

    def __len__(self) -> int:
        return len(self.members)


@dataclass(frozen=True)
class SubTable:
    """One non-hierarchical sub-table of a product table.

    Attributes
    ----------
    key : the group index in every dimension (also the sub-table's id via ``Split.index``)
    groups : per dimension, the code positions (parent first)
    cells : flat indices of its cells in the full table, C order over ``groups``
    level : sum of the depths of the groups' parents (0 = top sub-table)
    parent_depth : per dimension, the depth of the group's parent code
    """

    key: tuple[int, ...]
    groups: tuple[np.ndarray, ...]
    cells: np.ndarray
    level: int
    parent_depth: tuple[int, ...] = ()

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(g) for g in self.groups)

    @cached_property
    def margin(self) -> np.ndarray:
        """Mask over ``cells``: the cell also lies in a higher-level sub-table, because in
        some dimension it has the group's parent code and that code is not the total."""
        grids = np.meshgrid(*[np.arange(len(g)) for g in self.groups], indexing="ij")
        mask = np.zeros(self.shape, dtype=bool)
        for d, grid in enumerate(grids):
            if len(self.groups[d]) > 1 and self.parent_depth[d] > 0:
                mask |= grid == 0
        return mask.ravel()


class Split:
    """All sub-tables of a product table, plus the cell -> sub-table membership.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> h = Hierarchy.from_pairs([("T", "A"), ("T", "B"), ("A", "A1"), ("A", "A2")])
    >>> c = Hierarchy.flat(["x", "y"], total="T")
    >>> t = Table.from_arrays({"r": h, "c": c}, np.zeros(15))
    >>> s = Split(t)
    >>> len(s), [st.level for st in s.in_order()]
    (2, [0, 1])
    """

    def __init__(self, table: Table):
        if not table.dimensions:
            raise InputError("sub-tables need a product table (dimensions with hierarchies); "
                             "this is a general table given by its relations only")
        self.table = table
        self.dims = tuple(DimensionGroups.of(d.hierarchy) for d in table.dimensions)
        self.n_groups = tuple(len(g) for g in self.dims)
        self.strides = np.asarray([int(np.prod(table.shape[d + 1:]))
                                   for d in range(len(table.shape))], dtype=np.int64)

    def __len__(self) -> int:
        return int(np.prod(self.n_groups))

    def index(self, key: tuple[int, ...]) -> int:
        return int(np.ravel_multi_index(key, self.n_groups))

    def key(self, index: int) -> tuple[int, ...]:
        return tuple(int(k) for k in np.unravel_index(index, self.n_groups))

    def level(self, key: tuple[int, ...]) -> int:
        return int(sum(int(g.parent_depth[k]) for g, k in zip(self.dims, key)))

    def subtable(self, key: tuple[int, ...] | int) -> SubTable:
        if isinstance(key, (int, np.integer)):
            key = self.key(int(key))
        groups = tuple(g.members[k] for g, k in zip(self.dims, key))
        cells = np.zeros(1, dtype=np.int64)
        for d, grp in enumerate(groups):
            cells = (cells[:, None] + grp[None, :] * self.strides[d]).ravel()
        depths = tuple(int(g.parent_depth[k]) for g, k in zip(self.dims, key))
        return SubTable(tuple(int(k) for k in key), groups, cells, sum(depths), depths)

    def in_order(self) -> Iterator[SubTable]:
        """Every sub-table, top-down: by level, then by key (deterministic)."""
        keys = list(np.ndindex(*self.n_groups))
        keys.sort(key=lambda k: (self.level(k), k))
        for k in keys:
            yield self.subtable(k)

    def levels(self) -> list[list[tuple[int, ...]]]:
        """Sub-table keys grouped by level, top level first."""
        by: dict[int, list] = {}
        for k in np.ndindex(*self.n_groups):
            by.setdefault(self.level(k), []).append(tuple(int(x) for x in k))
        return [sorted(by[lv]) for lv in sorted(by)]

    def options(self, positions: tuple[int, ...]) -> list[list[int]]:
        """Per dimension, the groups a code belongs to (as child first, then as parent)."""
        out = []
        for g, p in zip(self.dims, positions):
            opts = [int(x) for x in (g.as_child[p], g.as_parent[p]) if x >= 0]
            out.append(opts)
        return out

    def subtables_of_cell(self, cell: int) -> list[tuple[int, ...]]:
        """Keys of every sub-table containing ``cell``."""
        pos = np.unravel_index(int(cell), self.table.shape)
        opts = self.options(tuple(int(p) for p in pos))
        keys = [()]
        for o in opts:
            keys = [k + (x,) for k in keys for x in o]
        return keys

    def membership(self) -> sp.csr_matrix:
        """Boolean (cells x sub-tables) matrix: cell i lies in sub-table j."""
        pos = self.table.positions
        n = self.table.n_cells
        rows, cols = [], []
        k = len(self.dims)
        for pattern in np.ndindex(*(2,) * k):
            sub = np.zeros(n, dtype=np.int64)
            ok = np.ones(n, dtype=bool)
            for d, (g, which) in enumerate(zip(self.dims, pattern)):
                grp = (g.as_child if which == 0 else g.as_parent)[pos[d]]
                ok &= grp >= 0
                sub = sub * self.n_groups[d] + np.maximum(grp, 0)
            rows.append(np.flatnonzero(ok))
            cols.append(sub[ok])
        r = np.concatenate(rows)
        c = np.concatenate(cols)
        m = sp.csr_matrix((np.ones(len(r), dtype=bool), (r, c)), shape=(n, len(self)))
        m.sum_duplicates()
        return m


def subtable_table(table: Table, sub: SubTable, **arrays) -> Table:
    """The sub-table as a small stand-alone product :class:`Table` (flat hierarchies).

    Cell ``j`` of the result is cell ``sub.cells[j]`` of ``table``.  Values, contributors,
    bounds, status and protection levels are copied; ``arrays`` overrides any of them with
    arrays over the sub-table's cells (e.g. ``status=..., upl=...``).

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> s = Split(t).subtable((0, 0))
    >>> subtable_table(t, s).n_relations
    6
    """
    dims = []
    for d, (dim, grp) in enumerate(zip(table.dimensions, sub.groups)):
        if len(grp) == 1:
            continue  # trivial dimension (a single code): contributes no relation
        h = dim.hierarchy
        codes = [h.codes[p] for p in grp]
        dims.append(Dimension(dim.name, Hierarchy.flat(codes[1:], total=codes[0],
                                                       name=dim.name)))
    cells = sub.cells
    fields = {"value": table.value[cells], "freq": table.freq[cells],
              "lb": table.given_lb[cells], "ub": table.ub[cells], "status": table.status[cells],
              "empty": table.empty,
              "upl": table.upl[cells], "lpl": table.lpl[cells], "spl": table.spl[cells]}
    if table.cost is not None:
        fields["cost"] = table.cost[cells]
    if table.top is not None:
        fields["top"] = table.top[cells]
    fields.update(arrays)
    value = fields.pop("value")
    freq = fields.pop("freq")
    if not dims:
        # every dimension trivial: a single cell and no relation
        return Table.from_relations(value, sp.csr_matrix((0, len(value))), freq=freq,
                                    kind=table.kind, **fields)
    return Table.from_arrays(dims, value, freq, kind=table.kind, **fields)
