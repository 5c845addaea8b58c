"""tabprotect.model.matrix: the cells as sums of leaf cells, checked against brute force
and against the code it replaces."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from tabprotect.errors import InputError
from tabprotect.model import Table, synthetic
from tabprotect.model.matrix import ModelMatrix, leaf_matrix
from tabprotect.rounding.small_count import aggregation_matrix

SHAPES = [[(3,)], [(2, 2), (3,)], [(2, 3), (3,), (2,)], [(2,), (2,), (2,), (2,), (2,)]]


def brute_force(t: Table) -> np.ndarray:
    """Dense cells x leaf cells: cell i sums leaf cell j iff every code of j lies under
    (or is) the code of i in its dimension."""
    under = [d.hierarchy.leaf_descendants() for d in t.dimensions]
    leaf = np.flatnonzero(t.model_matrix.leaf_cells)
    K = np.zeros((t.n_cells, len(leaf)))
    for i in range(t.n_cells):
        for col, j in enumerate(leaf):
            K[i, col] = all(p[j] in under[d][p[i]] for d, p in enumerate(t.positions))
    return K


def loop_aggregate(values, hierarchies):
    """Children summed into parents, deepest first, one dimension at a time."""
    shape = tuple(len(h) for h in hierarchies)
    leaf = ModelMatrix(hierarchies).leaf_cells
    arr = np.where(leaf, values, 0.0).reshape(shape).copy()
    for d, h in enumerate(hierarchies):
        moved = np.moveaxis(arr, d, 0)
        for p in sorted((p for p, _ in h.edges()), key=lambda p: -h.depth[p]):
            moved[p] = moved[list(h.children[p])].sum(axis=0)
    return arr.ravel()


@pytest.mark.parametrize("shape", SHAPES)
def test_the_matrix_is_the_brute_force_sum_over_leaves(shape):
    t = synthetic.generate(shape, seed=3)
    K = t.model_matrix.sparse()
    np.testing.assert_array_equal(K.toarray(), brute_force(t))
    # the relations hold for every column, and the leaf cells are the inner cells
    assert abs(t.relations @ K).max() == 0
    np.testing.assert_array_equal(t.model_matrix.leaf_cells, t.is_inner)


@pytest.mark.parametrize("shape", SHAPES)
def test_aggregate_equals_the_matrix_and_the_children_sums(shape):
    t = synthetic.generate(shape, seed=5)
    u = np.random.default_rng(0).normal(size=t.n_cells)
    m = t.model_matrix
    got = m.aggregate(u)
    np.testing.assert_array_equal(got, loop_aggregate(u, m.hierarchies))  # bit for bit
    np.testing.assert_allclose(got, m.sparse() @ u[m.leaf_cells], rtol=1e-12, atol=1e-12)
    # the generator's tables are their leaves' sums
    np.testing.assert_allclose(m.aggregate(t.value), t.value, rtol=1e-12)


def test_rounding_uses_the_same_matrix():
    t = synthetic.generate([(2, 2), (3,)], seed=1)
    assert (aggregation_matrix(t, t.is_inner) != t.model_matrix.sparse()).nnz == 0


def test_leaf_matrix_of_a_flat_hierarchy_and_a_general_table():
    t = synthetic.generate([(4,)], seed=0)
    K = leaf_matrix(t.dimensions[0].hierarchy)
    assert sp.issparse(K) and K.toarray().tolist() == [[1, 1, 1, 1]] + np.eye(4).tolist()
    general = Table.from_relations(t.value, t.relations)
    with pytest.raises(InputError, match="general table"):
        general.model_matrix
