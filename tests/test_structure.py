"""tabprotect.model.structure: product structure recovered from a general table."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from tabprotect.errors import InputError
from tabprotect.model import Hierarchy, Table
from tabprotect.model.structure import infer_shape, product_structure


def relation_set(table: Table, cell_of=None) -> set:
    """Each relation as (total, frozenset of parts), cells renamed by ``cell_of``."""
    cell_of = np.arange(table.n_cells) if cell_of is None else cell_of
    A = table.relations.tocsr()
    out = set()
    for r in range(table.n_relations):
        cells = A.indices[A.indptr[r]:A.indptr[r + 1]]
        total = table.relation_total[r]
        out.add((int(cell_of[total]),
                 frozenset(int(cell_of[c]) for c in cells if c != total)))
    return out


@st.composite
def hierarchies(draw, name):
    """A random tree of 2 to 12 codes, pre-order, root first."""
    n = draw(st.integers(2, 12))
    parent = [-1] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    pairs = [(f"{name}{p}", f"{name}{i}") for i, p in enumerate(parent) if p >= 0]
    return Hierarchy.from_pairs(pairs, name=name)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from("abcd"), min_size=1, max_size=4, unique=True)
       .flatmap(lambda names: st.tuples(*[hierarchies(n) for n in names])), st.data())
def test_recovers_any_product_table(hs, data):
    names = [h.name for h in hs]
    shape = tuple(len(h) for h in hs)
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    t = Table.from_arrays({n: h for n, h in zip(names, hs)}, rng.random(int(np.prod(shape))))
    if t.n_relations == 0:
        return
    general = Table.from_relations(t.value, t.relations, t.relation_total,
                                   status=t.status, cost=rng.random(t.n_cells))
    p = product_structure(general)
    assert p.shape == shape
    src = p.extra["source_cell"]
    assert sorted(src.tolist()) == list(range(t.n_cells))
    np.testing.assert_array_equal(p.value, general.value[src])
    np.testing.assert_array_equal(p.cost, general.cost[src])
    # the recovered relations, renamed back to source cells, are exactly the source's
    assert relation_set(p, cell_of=src) == relation_set(general)


def test_totals_listed_last_are_reordered():
    # the same 2-D table with every total listed after its children
    rows = Hierarchy.flat(["a", "b"], total="T")
    cols = Hierarchy.flat(["x", "y", "z"], total="T")
    t = Table.from_arrays({"r": rows, "c": cols}, np.arange(12.0))
    order_r, order_c = [1, 2, 0], [1, 2, 3, 0]
    perm = np.ravel_multi_index(np.meshgrid(order_r, order_c, indexing="ij"), (3, 4)).ravel()
    new_index = np.empty(12, dtype=int)
    new_index[perm] = np.arange(12)
    A = t.relations[:, perm]
    general = Table.from_relations(t.value[perm], A, new_index[t.relation_total])
    p = product_structure(general)
    assert p.shape == (3, 4)
    assert not (p.extra["source_cell"] == np.arange(12)).all()
    assert relation_set(p, cell_of=p.extra["source_cell"]) == relation_set(general)


def test_castro_style_numbering():
    # TABLE7-like: 3 flat dimensions, totals first, row-major
    hs = {n: Hierarchy.flat([f"{n}{i}" for i in range(k)], total="T")
          for n, k in zip("xyz", (2, 3, 4))}
    t = Table.from_arrays(hs, np.arange(60.0))
    general = Table.from_relations(t.value, t.relations, t.relation_total)
    assert infer_shape(general) == (3, 4, 5)
    assert (product_structure(general).extra["source_cell"] == np.arange(60)).all()


def test_not_a_product_is_an_input_error():
    # two totals over the same parts in one dimension (not a tree)
    A = sp.csr_matrix(np.array([[1, -1, -1, 0], [0, -1, -1, 1]], dtype=float))
    general = Table.from_relations([3.0, 1.0, 2.0, 3.0], A, [0, 3])
    with pytest.raises(InputError, match="two parents"):
        product_structure(general)
    # a relation mixing two dimensions
    A = sp.csr_matrix(np.array([[1, 0, 0, -1]], dtype=float))
    with pytest.raises(InputError, match="relation 0"):
        product_structure(Table.from_relations([1.0, 0, 0, 1.0], A, [0]), shape=(2, 2))


def test_shape_must_match_the_cells():
    t = Table.from_arrays({"x": Hierarchy.flat(["a", "b"])}, [3.0, 1.0, 2.0])
    general = Table.from_relations(t.value, t.relations, t.relation_total)
    with pytest.raises(InputError, match="shape"):
        product_structure(general, shape=(2, 2))
