"""Sub-tables of hierarchical product tables (shared by modular and hypercube)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tabprotect.errors import InputError
from tabprotect.model import Hierarchy, Table
from tabprotect.secondary.subtables import Split, subtable_table


def tree(branching, prefix):
    pairs, level = [], [("Total", "")]
    for b in branching:
        nxt = []
        for code, path in level:
            for j in range(b):
                child = f"{prefix}{path}{j}"
                pairs.append((code, child))
                nxt.append((child, f"{path}{j}"))
        level = nxt
    return Hierarchy.from_pairs(pairs)


def table_of(branchings):
    hs = {f"d{i}": tree(b, chr(65 + i)) for i, b in enumerate(branchings)}
    n = int(np.prod([len(h) for h in hs.values()]))
    return Table.from_arrays(hs, np.zeros(n))


branching = st.lists(st.integers(1, 3), min_size=1, max_size=3)


@settings(max_examples=30, deadline=None)
@given(st.lists(branching, min_size=1, max_size=3))
def test_every_relation_lies_in_a_subtable_and_subtables_keep_only_their_relations(bs):
    t = table_of(bs)
    split = Split(t)
    A = t.relations
    covered = np.zeros(A.shape[0], dtype=bool)
    n_inside_total = 0
    for sub in split.in_order():
        inside = np.zeros(t.n_cells, dtype=bool)
        inside[sub.cells] = True
        # a relation is in the sub-table when all its cells are
        rel_in = np.asarray((abs(A) @ (~inside).astype(float)) == 0).ravel()
        rel_in &= np.diff(A.indptr) > 0
        covered |= rel_in
        small = subtable_table(t, sub)
        assert small.n_cells == len(sub.cells)
        assert small.n_relations == int(rel_in.sum())
        n_inside_total += int(rel_in.sum())
    assert covered.all()


@settings(max_examples=30, deadline=None)
@given(st.lists(branching, min_size=1, max_size=3))
def test_membership_matches_subtables_of_cell(bs):
    t = table_of(bs)
    split = Split(t)
    m = split.membership()
    for cell in range(0, t.n_cells, max(1, t.n_cells // 25)):
        keys = split.subtables_of_cell(cell)
        expected = sorted(split.index(k) for k in keys)
        assert sorted(m[cell].indices.tolist()) == expected
        for k in keys:
            assert cell in split.subtable(k).cells
    # every cell is in at least one sub-table
    assert (np.diff(m.indptr) >= 1).all()


def test_levels_are_top_down_and_margins_are_decided_higher_up():
    t = table_of([(2, 2), (3,)])
    split = Split(t)
    subs = list(split.in_order())
    assert [s.level for s in subs] == sorted(s.level for s in subs)
    assert subs[0].level == 0 and subs[0].cells[0] == 0  # the grand total's sub-table
    seen: set[int] = set()
    for s in subs:
        # every margin cell already appeared in an earlier (higher) sub-table
        if s.level > 0:
            assert set(s.cells[s.margin].tolist()) <= seen
        seen |= set(s.cells.tolist())
    assert len(seen) == t.n_cells
    assert len(split) == 3 * 1  # (Total, A0, A1) groups x one group


def test_subtable_table_copies_cells_and_overrides():
    r = Hierarchy.from_pairs([("T", "A"), ("T", "B"), ("A", "A1"), ("A", "A2")])
    c = Hierarchy.flat(["x", "y"], total="T")
    leaves = {("A1", "x"): 1, ("A1", "y"): 2, ("A2", "x"): 3, ("A2", "y"): 4,
              ("B", "x"): 5, ("B", "y"): 6}
    import pandas as pd
    df = pd.DataFrame([{"r": a, "c": b, "value": v} for (a, b), v in leaves.items()])
    t = Table.from_frame(df, {"r": r, "c": c}, compute_totals=True)
    split = Split(t)
    low = next(s for s in split.in_order() if s.level == 1)
    small = subtable_table(t, low, status=np.full(len(low.cells), "S"))
    assert small.value.tolist() == t.value[low.cells].tolist()
    assert small.value[0] == t.value[t.cell("A", "T")] == 10
    small.check_additivity()
    assert small.cell("A1", "y") == 5  # flat 3 x 3 table, C order


def test_general_table_is_rejected():
    import scipy.sparse as sp
    t = Table.from_relations([3.0, 1.0, 2.0], sp.csr_matrix([[1.0, -1.0, -1.0]]))
    with pytest.raises(InputError, match="product table"):
        Split(t)
