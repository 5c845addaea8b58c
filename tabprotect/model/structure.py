"""Recover the product structure (dimensions and hierarchies) of a general table.

A table read as cells plus relations (tau-Argus' JJ format, Castro's benchmark tables)
carries no dimensions, so methods that work on sub-tables (hypercube, modular) cannot run
on it, although many such tables are product tables written out cell by cell.  When the
cells are numbered in row-major order over some shape and every relation is "a code
equals the sum of its children" along one dimension, :func:`product_structure` finds the
shape, the hierarchy of every dimension, and returns the same table as a product
:class:`~tabprotect.model.Table` -- after checking that its relations are exactly the
product relations, so nothing is assumed that the relations do not say.

How the shape is found (unless given): in row-major order a relation along dimension
``d`` moves only coordinate ``d``, so its parts lie at multiples of ``d``'s stride from
the total, and when codes are listed parent before children (or children before parent)
some part is exactly one stride away.  The distinct smallest offsets of the relations are
therefore the strides; consecutive strides give the dimension sizes.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from tabprotect.errors import InputError
from tabprotect.model.hierarchy import Hierarchy
from tabprotect.model.table import Dimension, Table


def _relation_parts(table: Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, total cell, part cell) of every part of every relation."""
    A = sp.csr_matrix(table.relations)
    coo = A.tocoo()
    total = np.asarray(table.relation_total, dtype=np.int64)
    if (total < 0).any():
        bad = int(np.flatnonzero(total < 0)[0])
        raise InputError(f"relation {bad} has no total cell: no product structure")
    is_part = coo.col != total[coo.row]
    return coo.row[is_part], total[coo.row[is_part]], coo.col[is_part]


def _shape_of(strides: list[int], n: int) -> tuple[int, ...]:
    """The row-major shape with these strides (largest first)."""
    shape, extent = [], n
    for s in strides:
        shape.append(extent // s)
        extent = s
    return tuple(shape)


def _stride_chains(candidates: list[int], n: int, limit: int):
    """Divisibility chains n > s_1 > ... > 1 from ``candidates``, longest first."""
    cands = sorted({c for c in candidates if 0 < c < n and n % c == 0} | {1}, reverse=True)
    chains: list[list[int]] = []

    def extend(chain: list[int], top: int) -> None:
        if len(chains) >= limit:
            return
        if chain and chain[-1] == 1:
            chains.append(list(chain))
            return
        for c in cands:
            if c < top and top % c == 0:
                chain.append(c)
                extend(chain, c)
                chain.pop()

    extend([], n)
    chains.sort(key=len, reverse=True)
    return chains


def infer_shape(table: Table, max_tries: int = 2000) -> tuple[int, ...]:
    """The row-major shape of the cell numbering under which the relations are a product.

    Candidate strides are the relations' smallest part offsets (a stride exactly when
    codes are listed parent next to first child) and the gcds of their offsets (a
    multiple of the stride); divisibility chains of them, longest first, are checked
    with :func:`product_structure` until one fits.

    Raises :class:`~tabprotect.errors.InputError` when none does.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy
    >>> h = Hierarchy.flat(["a", "b"], total="T"); g = Hierarchy.flat(["x", "y", "z"])
    >>> t = Table.from_arrays({"r": h, "c": g}, np.arange(12.0))
    >>> infer_shape(Table.from_relations(t.value, t.relations, t.relation_total))
    (3, 4)
    """
    rows, total, part = _relation_parts(table)
    if rows.size == 0:
        raise InputError("the table has no relations: no product structure to recover")
    offset = np.abs(part - total)
    big = np.iinfo(np.int64).max
    smallest = np.full(table.n_relations, big)
    np.minimum.at(smallest, rows, offset)
    common = np.zeros(table.n_relations, dtype=np.int64)
    np.gcd.at(common, rows, offset)
    candidates = np.unique(np.concatenate([smallest[smallest < big], common[common > 0]]))
    n = table.n_cells
    first_reason = ""
    for chain in _stride_chains(candidates.tolist(), n, max_tries):
        shape = _shape_of(chain, n)
        try:
            product_structure(table, shape=shape)
        except InputError as err:
            first_reason = first_reason or f" (shape {shape}: {err})"
            continue
        return shape
    raise InputError(f"no row-major shape of the {n} cells makes the relations those of a "
                     f"product of hierarchies{first_reason}; give the shape if you know it")


def product_structure(table: Table, shape: tuple[int, ...] | None = None,
                      names: list[str] | None = None) -> Table:
    """The general ``table`` as a product table, if its relations are a product's.

    Parameters
    ----------
    table : a general table (cells and relations, e.g. read from a JJ file)
    shape : the row-major shape of the cell numbering; inferred when None
    names : dimension names (default ``d1, d2, ...``)

    Returns
    -------
    Table
        A product table with the same cells: codes are named by their position in the
        source numbering (``"0"`` .. ``"n-1"``), listed in hierarchy pre-order; cells are
        reordered when that order differs from the source's, and
        ``extra["source_cell"]`` gives each cell's index in ``table``.

    Raises
    ------
    InputError
        naming the first relation that is not "a code = sum of its children" along one
        dimension, or the inconsistency found.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy
    >>> h = Hierarchy.from_pairs([("T", "A"), ("T", "B"), ("A", "A1"), ("A", "A2")])
    >>> t = Table.from_arrays({"r": h, "c": Hierarchy.flat(["x", "y"])}, np.arange(15.0))
    >>> g = Table.from_relations(t.value, t.relations, t.relation_total)
    >>> p = product_structure(g)
    >>> p.shape, p.hierarchy("d1").children_of("1")
    ((5, 3), ('2', '3'))
    """
    n = table.n_cells
    if shape is None:
        shape = infer_shape(table)
    shape = tuple(int(x) for x in shape)
    if int(np.prod(shape)) != n:
        raise InputError(f"shape {shape} has {int(np.prod(shape))} cells, the table {n}")
    k = len(shape)
    names = list(names) if names is not None else [f"d{d + 1}" for d in range(k)]
    if len(names) != k:
        raise InputError(f"{len(names)} dimension names for {k} dimensions")
    rows, total, part = _relation_parts(table)
    coords_total = np.stack(np.unravel_index(total, shape), axis=1)
    coords_part = np.stack(np.unravel_index(part, shape), axis=1)
    dim_of_part, dim = _relation_dimensions(table, shape, rows, coords_total, coords_part)
    hierarchies = []
    for d in range(k):
        in_d = np.flatnonzero(dim_of_part == d)
        hierarchies.append(_dimension_hierarchy(
            names[d], shape[d], rows[in_d], coords_total[in_d, d], coords_part[in_d, d]))
    _check_relation_count(table, shape, hierarchies, rows, coords_total, dim)
    return _reordered(table, shape, names, hierarchies)


def _relation_dimensions(table: Table, shape: tuple[int, ...], rows: np.ndarray,
                         coords_total: np.ndarray, coords_part: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray]:
    """The dimension each part moves along and each relation's dimension; every part
    differs from its total in one coordinate, the same one for all parts of a relation."""
    moved = coords_total != coords_part
    # every part differs from its total in exactly one coordinate ...
    one = moved.sum(axis=1) == 1
    if not one.all():
        r = int(rows[np.flatnonzero(~one)[0]])
        raise InputError(f"relation {r} does not run along one dimension of shape {shape}")
    dim_of_part = np.argmax(moved, axis=1)
    # ... and the same one for all parts of a relation
    dim = np.full(table.n_relations, -1)
    dim[rows] = dim_of_part
    if (dim_of_part != dim[rows]).any():
        r = int(rows[np.flatnonzero(dim_of_part != dim[rows])[0]])
        raise InputError(f"relation {r} mixes dimensions of shape {shape}")
    if (dim < 0).any():
        r = int(np.flatnonzero(dim < 0)[0])
        raise InputError(f"relation {r} has no parts")
    return dim_of_part, dim


def _families(name: str, rel_d: np.ndarray, parent_code: np.ndarray,
              child_code: np.ndarray) -> dict[int, tuple[int, ...]]:
    """Per parent code of one dimension, its sorted child codes (the same in every
    relation of that parent)."""
    children: dict[int, tuple[int, ...]] = {}
    by_relation: dict[int, list[int]] = {}
    for r, c in zip(rel_d.tolist(), child_code.tolist()):
        by_relation.setdefault(r, []).append(c)
    parent_of_relation = dict(zip(rel_d.tolist(), parent_code.tolist()))
    for r, kids in by_relation.items():
        p = parent_of_relation[r]
        kids_t = tuple(sorted(kids))
        if children.setdefault(p, kids_t) != kids_t:
            raise InputError(f"relation {r}: code {p} of dimension {name} has "
                             f"other children elsewhere in the table")
    return children


def _dimension_hierarchy(name: str, size: int, rel_d: np.ndarray, parent_code: np.ndarray,
                         child_code: np.ndarray) -> tuple[list[int], Hierarchy]:
    """One dimension's codes in pre-order and its hierarchy, from the (relation, parent
    code, child code) of the parts moving along it."""
    children = _families(name, rel_d, parent_code, child_code)
    parent = np.full(size, -1, dtype=np.int64)
    for p, kids in children.items():
        for c in kids:
            if parent[c] >= 0 or c == p:
                raise InputError(f"code {c} of dimension {name} has two parents "
                                 f"(its relations do not form a tree)")
            parent[c] = p
    roots = np.flatnonzero(parent < 0)
    if len(roots) != 1:
        raise InputError(f"dimension {name} has {len(roots)} top codes, not one")
    # pre-order from the root, children in source order
    order: list[int] = []
    stack = [int(roots[0])]
    while stack:
        c = stack.pop()
        order.append(c)
        stack.extend(reversed(children.get(c, ())))
    if len(order) != size:
        raise InputError(f"dimension {name}: the codes do not form one tree")
    new_index = np.empty(size, dtype=np.int64)
    new_index[order] = np.arange(size)
    codes = tuple(str(c) for c in order)
    new_parent = np.array([-1 if parent[c] < 0 else new_index[parent[c]]
                           for c in order], dtype=np.int64)
    return order, Hierarchy(codes=codes, parent=new_parent, name=name)


def _check_relation_count(table: Table, shape: tuple[int, ...], hierarchies: list,
                          rows: np.ndarray, coords_total: np.ndarray, dim: np.ndarray) -> None:
    """Every relation is a product relation; the counts agreeing (each relation being a
    distinct (dimension, parent, other coordinates)) makes the two sets equal."""
    k = len(shape)
    expected = sum(sum(1 for p in range(shape[d]) if h.children[p])
                   * int(np.prod([shape[e] for e in range(k) if e != d]))
                   for d, (_, h) in enumerate(hierarchies))
    key = np.ravel_multi_index(coords_total[np.unique(rows, return_index=True)[1]].T, shape)
    distinct = len(np.unique(key * k + dim[np.unique(rows)]))
    if expected != table.n_relations or distinct != table.n_relations:
        raise InputError(f"the table has {table.n_relations} relations "
                         f"({distinct} distinct), a product of shape {shape} with these "
                         f"hierarchies has {expected}")


def _reordered(table: Table, shape: tuple[int, ...], names: list[str],
               hierarchies: list) -> Table:
    """``table``'s cells as the product of ``hierarchies`` (codes in pre-order), with
    ``extra["source_cell"]``."""
    source = np.ravel_multi_index(np.meshgrid(*[np.asarray(o) for o, _ in hierarchies],
                                              indexing="ij"), shape).ravel()
    dims = [Dimension(nm, h) for nm, (_, h) in zip(names, hierarchies)]

    def take(a):
        return None if a is None else np.asarray(a)[source]

    extra = {key_: np.asarray(v)[source] for key_, v in table.extra.items()}
    extra["source_cell"] = source
    return Table.from_arrays(dims, table.value[source], table.freq[source],
                             top=take(table.top), cost=take(table.cost),
                             lb=take(table.given_lb), empty=table.empty,
                             ub=take(table.ub), status=take(table.status),
                             upl=take(table.upl), lpl=take(table.lpl), spl=take(table.spl),
                             kind=table.kind, name=table.name, extra=extra)
