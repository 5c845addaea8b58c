"""Generated linked tables: three 3-D tables cut from one 4-D table, sharing margins.

``generate`` (:mod:`tabprotect.model.synthetic`) makes a region x industry x size x
legal table with its primaries and levels; the linked table is the union of its three
3-D faces region x industry x size, region x industry x legal and region x size x legal
(every other variable at its total), which share their 2-D margins, as one general
table (:func:`tabprotect.model.linked.link_tables`) with the primaries' status and
levels carried over.

    >>> t = linked_table("1k")      # doctest: +SKIP
"""
from __future__ import annotations

import numpy as np

from tabprotect.model import Table
from tabprotect.model.linked import TOTAL, link_tables
from tabprotect.model.synthetic import DIMENSION_NAMES, generate

#: name -> branchings of region, industry, size, legal (about the named number of cells)
LINKED_SIZES = {
    "1k": ((2, 3), (3, 3), (4,), (3,)),
    "10k": ((4, 4), (4, 6), (8,), (6,)),
    "100k": ((5, 5, 3), (4, 5, 4), (5,), (4,)),
}

#: the faces: which of the four variables each 3-D table has
FACES = ((0, 1, 2), (0, 1, 3), (0, 2, 3))


def linked_table(size: str, seed: int = 0) -> Table:
    """The linked table of ``LINKED_SIZES[size]`` (see the module docstring)."""
    full = generate(LINKED_SIZES[size], seed=seed, name=f"linked-{size}")
    shape = full.shape
    names = DIMENSION_NAMES[:4]
    hs = [full.hierarchy(v) for v in names]
    tables = []
    for face in FACES:
        index = tuple(slice(None) if d in face else 0 for d in range(4))
        def cut(a):
            return a.reshape(shape)[index].ravel()
        tables.append(Table.from_arrays({names[d]: hs[d] for d in face}, cut(full.value),
                                        cut(full.freq)))
    linked = link_tables(tables, name=f"linked-{size}")
    # each linked cell's position in the 4-D table (a missing variable at its total, 0)
    pos = []
    for d, v in enumerate(names):
        code_pos = {c: k for k, c in enumerate(hs[d].codes)}
        code_pos[TOTAL] = 0
        pos.append(linked.labels[v].map(code_pos).to_numpy(np.int64))
    src = np.ravel_multi_index(pos, shape)
    return linked.replace(status=full.status[src], upl=full.upl[src], lpl=full.lpl[src],
                          spl=full.spl[src])
