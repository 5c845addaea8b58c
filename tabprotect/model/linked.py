"""Linked tables: several tables that share cells, as one general model."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.table import Table

if TYPE_CHECKING:
    import scipy.sparse as sp

TOTAL = "<total>"


def link_tables(tables: Sequence[Table], tolerance: float = 1e-6, name: str = "linked") -> Table:
    """One model for several product tables that share cells.

    A cell is identified by the codes of the variables that are not at their total:
    a variable a table does not have, or has at its root, is "at total".  So the
    ``sex x age`` margin of ``sex x age x lms`` and of ``sex x age x hst`` is one cell,
    and two hierarchies of one variable (region by county and by municipality group)
    share their leaves and grand total.  The relations are the union of the tables'
    relations; shared cells must have the same value (checked).

    Returns a general :class:`Table` whose labels have one column per variable
    (``"<total>"`` where the variable is at its total) and an extra ``tables`` list.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy
    >>> sex = Hierarchy.flat(["m", "f"], total="T")
    >>> t1 = Table.from_arrays({"sex": sex}, [3, 1, 2])
    >>> link_tables([t1, t1]).n_cells
    3
    """
    import pandas as pd
    if not tables:
        raise InputError("link_tables: no tables")
    variables: list[str] = []
    for t in tables:
        if not t.dimensions:
            raise InputError("link_tables: every table must have dimensions")
        for d in t.dimensions:
            if d.name not in variables:
                variables.append(d.name)
    frames = []
    for k, t in enumerate(tables):
        cols = {}
        for v in variables:
            if v in t.dimension_names:
                h = t.hierarchy(v)
                pos = t.positions[t.dimension_names.index(v)]
                codes = np.asarray(h.codes, dtype=object)[pos]
                codes[pos == 0] = TOTAL
                cols[v] = codes
            else:
                cols[v] = np.full(t.n_cells, TOTAL, dtype=object)
        frames.append(pd.DataFrame(cols))
    allcells = pd.concat(frames, ignore_index=True)
    keys = pd.MultiIndex.from_frame(allcells)
    codes, uniques = pd.factorize(keys)
    n = len(uniques)
    offsets = np.cumsum([0] + [t.n_cells for t in tables])
    value = np.full(n, np.nan)
    freq = np.full(n, np.nan)
    for k, t in enumerate(tables):
        ids = codes[offsets[k]:offsets[k + 1]]
        prev = value[ids]
        clash = ~np.isnan(prev) & (np.abs(prev - t.value) > tolerance * np.maximum(1, np.abs(prev)))
        if clash.any():
            i = int(np.flatnonzero(clash)[0])
            raise InputError(f"link_tables: cell {t.cell_name(i)} of table {k + 1} differs "
                             f"from the same cell in an earlier table")
        value[ids] = t.value
        freq[ids] = np.where(np.isnan(freq[ids]), t.freq, freq[ids])
    import scipy.sparse as sp
    blocks, totals = [], []
    for k, t in enumerate(tables):
        ids = codes[offsets[k]:offsets[k + 1]]
        coo = t.relations.tocoo()
        blocks.append(sp.csr_matrix((coo.data, (coo.row, ids[coo.col])),
                                    shape=(t.n_relations, n)))
        totals.append(np.where(t.relation_total >= 0, ids[t.relation_total], -1))
    A = sp.vstack(blocks).tocsr()
    rel_total = np.concatenate(totals)
    # drop relations that are exact duplicates (a margin present in two tables)
    A, keep = _unique_rows(A)
    labels = pd.DataFrame(list(uniques), columns=variables)
    kind = "frequency" if all(t.kind == "frequency" for t in tables) else "magnitude"
    return Table.from_relations(value, A, relation_total=rel_total[keep], labels=labels,
                                freq=freq, kind=kind, name=name)


def _unique_rows(A: sp.csr_matrix) -> tuple[sp.csr_matrix, np.ndarray]:
    A = A.copy()
    A.sort_indices()
    keys = [(tuple(A.indices[A.indptr[r]:A.indptr[r + 1]]),
             tuple(A.data[A.indptr[r]:A.indptr[r + 1]])) for r in range(A.shape[0])]
    seen: dict = {}
    keep = []
    for r, key in enumerate(keys):
        if key not in seen:
            seen[key] = r
            keep.append(r)
    keep = np.asarray(keep, dtype=np.int64)
    return A[keep], keep
