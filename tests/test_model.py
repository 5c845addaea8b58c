"""tabprotect.model: hierarchies, product tables, relations, general and linked tables."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tabprotect.errors import InputError
from tabprotect.model import Hierarchy, Table, aggregate_leaves, link_tables


# ------------------------------------------------------------------ hierarchies
def test_from_pairs_orders_parents_first():
    h = Hierarchy.from_pairs([("A", "A1"), ("T", "A"), ("T", "B"), ("A", "A2")])
    assert h.root == "T"
    assert h.codes == ("T", "A", "A1", "A2", "B")
    assert h.leaves == ("A1", "A2", "B")
    assert h.depth.tolist() == [0, 1, 2, 2, 1]
    for i, p in enumerate(h.parent):
        assert p < i


def test_from_pairs_frame_and_roundtrip():
    pairs = pd.DataFrame({"parent": ["T", "T", "a"], "child": ["a", "b", "a1"]})
    h = Hierarchy.from_pairs(pairs)
    h2 = Hierarchy.from_pairs(h.to_pairs())
    assert h.codes == h2.codes


def test_from_levels_nace_like():
    h = Hierarchy.from_levels(["A011", "A012", "A021", "B051"], [1, 3, 4], total="TOT")
    assert h.children_of("TOT") == ("A", "B")
    assert h.children_of("A") == ("A01", "A02")
    assert h.children_of("A01") == ("A011", "A012")
    assert h.children_of("B05") == ("B051",)


def test_from_levels_bad_length():
    with pytest.raises(InputError, match="'A0'"):
        Hierarchy.from_levels(["A011", "A0"], [1, 3, 4])


def test_from_hrc_text_and_file(tmp_path):
    text = "A\n@A1\n@@A11\n@@A12\n@A2\nB\n"
    h = Hierarchy.from_hrc(text, total="T")
    assert h.codes == ("T", "A", "A1", "A11", "A12", "A2", "B")
    p = tmp_path / "x.hrc"
    p.write_text(h.to_hrc())
    assert Hierarchy.from_hrc(p, total="T").codes == h.codes


def test_from_hrc_depth_jump_is_error():
    with pytest.raises(InputError, match="line 2"):
        Hierarchy.from_hrc("A\n@@A11\n", total="T")


def test_flat():
    h = Hierarchy.flat(["m", "f"], total="all")
    assert h.codes == ("all", "m", "f")
    with pytest.raises(InputError, match="duplicated"):
        Hierarchy.flat(["m", "m"])


def test_from_columns_passes_through_repeated_codes():
    df = pd.DataFrame({"l": ["SIN", "MAR", "MAR"], "h": ["SIN", "MARO", "MARS"]})
    h = Hierarchy.from_columns(df, ["l", "h"])
    assert h.children_of("MAR") == ("MARO", "MARS")
    assert h.is_leaf[h.index("SIN")]


def test_from_columns_strips_codes_and_names_an_empty_one():
    df = pd.DataFrame({"l": [" A", "A", "B"], "h": ["a1 ", "a2", None]})
    with pytest.raises(InputError, match=r"regions row 2 \(0-based position; index label "
                                         r"2\): empty code in column 'h'"):
        Hierarchy.from_columns(df, ["l", "h"], label="regions")
    h = Hierarchy.from_columns(df.iloc[:2], ["l", "h"])
    assert h.codes == ("Total", "A", "a1", "a2")      # stripped, as the data's codes are
    # named by line and column, not quoted: a correspondence table may be the microdata
    with pytest.raises(InputError, match=r"row 1 \(0-based position; index label 1\): the "
                                         r"code in column 'h' has two parents \(the other at "
                                         r"row 0 \(0-based position; index label 0\)\)") as err:
        Hierarchy.from_columns(pd.DataFrame({"l": ["A", "31337.77"], "h": ["a1", "a1"]}),
                               ["l", "h"])
    assert "31337" not in str(err.value) and "'a1'" not in str(err.value)


def test_from_columns_orders_codes_by_first_row_and_names_the_first_rows():
    # repeated rows: each distinct row once, in order of first appearance; an error names
    # the first row of each of the two rows in conflict
    df = pd.DataFrame({"l": ["B", "A", "B", "A", "A", "C"],
                       "h": ["b1", "a1", "b1", "a2", "a1", "a1"]})
    h = Hierarchy.from_columns(df.iloc[:5], ["l", "h"])
    assert h.codes == ("Total", "B", "b1", "A", "a1", "a2")
    with pytest.raises(InputError, match=r"row 5 \(0-based position; index label 5\): the "
                                         r"code in column 'h' has two parents \(the other at "
                                         r"row 1 \(0-based"):
        Hierarchy.from_columns(df, ["l", "h"])


@pytest.mark.parametrize("pairs,msg", [
    ([("T", "a"), ("a", "T")], "cycle"),
    ([("T", "a"), ("U", "b")], "2 roots"),
    ([("T", "a"), ("T", "a")], "duplicated"),
    ([("T", "a"), ("S", "a")], "two parents"),
    ([("T", "T")], "own parent"),
])
def test_bad_hierarchies(pairs, msg):
    with pytest.raises(InputError, match=msg):
        Hierarchy.from_pairs(pairs)


# ------------------------------------------------------------------ relations
def _brute_force_relations(hierarchies):
    """Every (dimension, parent, other codes) relation built by plain loops."""
    shape = [len(h) for h in hierarchies]
    rows = set()
    for d, h in enumerate(hierarchies):
        for p, children in h.edges():
            others = [range(s) for k, s in enumerate(shape) if k != d]
            for combo in itertools.product(*others):
                def idx(code):
                    pos = list(combo)
                    pos.insert(d, code)
                    return int(np.ravel_multi_index(pos, shape))
                row = {idx(p): 1.0}
                for c in children:
                    row[idx(c)] = -1.0
                rows.add(tuple(sorted(row.items())))
    return rows


def test_relation_matrix_3d_two_hierarchies_matches_brute_force():
    region = Hierarchy.from_pairs([("T", "N"), ("T", "S"), ("N", "N1"), ("N", "N2"),
                                   ("S", "S1"), ("S", "S2"), ("S", "S3")])
    nace = Hierarchy.from_levels(["A01", "A02", "B05", "B06", "C10"], [1, 3])
    size = Hierarchy.flat(["s1", "s2", "s3"])
    t = Table.from_arrays({"region": region, "nace": nace, "size": size},
                          np.zeros(len(region) * len(nace) * len(size)))
    A = t.relations
    got = set()
    for r in range(A.shape[0]):
        lo, hi = A.indptr[r], A.indptr[r + 1]
        got.add(tuple(sorted(zip(A.indices[lo:hi].tolist(), A.data[lo:hi].tolist()))))
    assert got == _brute_force_relations([region, nace, size])
    assert A.shape[0] == len(got)
    # relation_total is the +1 cell of each row
    for r in range(A.shape[0]):
        row = A.getrow(r)
        assert row.indices[row.data > 0].tolist() == [t.relation_total[r]]


def test_relations_of_one_structure_are_equal_and_each_tables_own():
    """Tables whose hierarchies share shape and edges (other codes; their relations are
    kept by structure) get the brute-force relations each, and a change to one table's
    matrix leaves the next table's alone."""
    pairs = [("T", "N"), ("T", "S"), ("N", "N1"), ("N", "N2"), ("S", "S1")]
    for prefix in ("a", "b", "c"):
        region = Hierarchy.from_pairs([(prefix + p, prefix + c) for p, c in pairs])
        size = Hierarchy.flat([prefix + "1", prefix + "2"])
        t = Table.from_arrays({"region": region, "size": size}, np.zeros(6 * 3))
        A = t.relations
        got = set()
        for r in range(A.shape[0]):
            lo, hi = A.indptr[r], A.indptr[r + 1]
            got.add(tuple(sorted(zip(A.indices[lo:hi].tolist(), A.data[lo:hi].tolist()))))
        assert got == _brute_force_relations([region, size]) and A.shape[0] == len(got)
        assert A.has_sorted_indices
        A.data[:] = 7.0                 # this table's matrix only
        t.relation_total[:] = -1


@pytest.mark.parametrize("shape", [(3,), (4, 3), (3, 5, 2), (120, 90)])
def test_relation_arrays_are_scipys_csr_matrix_of_the_relations(shape):
    """The relations built as CSR arrays in numpy (a kept structure, and one above
    KEPT_CELLS) are, array for array and dtype for dtype, scipy's CSR matrix of the
    same entries with sorted indices."""
    import scipy.sparse as sp
    from tabprotect.model.relations import KEPT_CELLS, product_relation_arrays
    hierarchies = [Hierarchy.from_pairs([("T", f"g{k}") for k in range(2)] +
                                        [(f"g{i % 2}", f"c{d}_{i}") for i in range(n - 3)])
                   if n > 3 else Hierarchy.flat([f"c{d}_{i}" for i in range(n - 1)])
                   for d, n in enumerate(shape)]
    R, totals = product_relation_arrays(hierarchies)
    coo = R.matrix().tocoo()
    want = sp.csr_matrix((coo.data, (coo.row, coo.col)), shape=coo.shape)
    want.sort_indices()
    got = R.matrix()
    assert (int(np.prod(shape)) > KEPT_CELLS) == (not R.shared)
    assert got.shape == want.shape == (len(totals), int(np.prod(shape)))
    for name in ("data", "indices", "indptr"):
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert {tuple(sorted(zip(got.indices[got.indptr[r]:got.indptr[r + 1]].tolist(),
                             got.data[got.indptr[r]:got.indptr[r + 1]].tolist())))
            for r in range(got.shape[0])} == _brute_force_relations(hierarchies)


def test_a_structure_without_edges_has_scipys_empty_matrix():
    import scipy.sparse as sp
    from tabprotect.model.relations import _relations
    R, totals = _relations(((1, ()), (3, ())))
    got, want = R.matrix(), sp.csr_matrix((0, 3))
    assert got.shape == want.shape and len(totals) == 0
    for name in ("data", "indices", "indptr"):
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name


def test_a_tables_relations_are_made_once_and_kept_by_replace_and_pickle():
    """The scipy matrix of a table's relations is made on first read and is the same
    object on every read, and in a table made by replace() (as a field given as a
    matrix is); a pickled table reads back the same matrix."""
    import pickle
    h = Hierarchy.flat(["a", "b"], total="T")
    t = Table.from_arrays({"x": h, "y": h}, np.arange(9.0))
    assert t.n_relations == 6 and t.relation_shape == (6, 9)
    u = t.replace(status=np.full(9, "S"))          # before the matrix is made
    A = t.relations
    assert t.relations is A and u.relations is A
    assert t.replace(upl=np.ones(9)).relations is A
    back = pickle.loads(pickle.dumps(t))
    assert (back.relations != A).nnz == 0 and back.relations.shape == A.shape
    with pytest.raises(AttributeError):
        Table.relations


def _random_leaf_table(hierarchies, rng, names=None):
    names = names or [f"d{k}" for k in range(len(hierarchies))]
    leaves = [h.leaves for h in hierarchies]
    rows = [combo + (int(rng.integers(0, 20)),) for combo in itertools.product(*leaves)]
    return pd.DataFrame(rows, columns=names + ["value"]), dict(zip(names, hierarchies))


def test_compute_totals_is_additive_5d():
    rng = np.random.default_rng(1)
    hs = [Hierarchy.flat(["a", "b"]), Hierarchy.from_levels(["x1", "x2", "y1"], [1, 2]),
          Hierarchy.flat(["p", "q", "r"]), Hierarchy.flat(["u", "v"]),
          Hierarchy.from_pairs([("T", "g"), ("g", "g1"), ("g", "g2")])]
    frame, dims = _random_leaf_table(hs, rng)
    t = Table.from_frame(frame, dims, compute_totals=True)
    assert t.n_cells == 3 * 6 * 4 * 3 * 4
    assert np.abs(t.relations @ t.value).max() == 0
    assert t.value[t.cell("Total", "Total", "Total", "Total", "T")] == frame["value"].sum()
    assert t.is_inner.sum() == len(frame)
    # labels / MultiIndex
    assert t.index.names == list(dims)
    assert t.to_frame().shape[0] == t.n_cells


def test_existing_totals_checked_and_non_additive_rejected():
    h = Hierarchy.flat(["a", "b"], total="T")
    ok = pd.DataFrame({"x": ["a", "b", "T"], "value": [1.0, 2.0, 3.0]})
    assert Table.from_frame(ok, {"x": h}).value.tolist() == [3.0, 1.0, 2.0]
    bad = pd.DataFrame({"x": ["a", "b", "T"], "value": [1.0, 2.0, 4.0]})
    with pytest.raises(InputError, match=r"\(x=T\) is not the sum"):
        Table.from_frame(bad, {"x": h})
    with pytest.raises(InputError, match=r"\(x=T\) is not the sum"):
        Table.from_frame(bad, {"x": h}, compute_totals=True)
    # decimals within tolerance pass
    dec = pd.DataFrame({"x": ["a", "b", "T"], "value": [0.1, 0.2, 0.3]})
    Table.from_frame(dec, {"x": h})


def test_bad_cells_input_errors():
    h = Hierarchy.flat(["a", "b"], total="T")
    with pytest.raises(InputError, match=r"row 1 \(0-based position; index label 1\): the "
                                         "code in column 'x' is not in"):
        Table.from_frame(pd.DataFrame({"x": ["a", "c"], "value": [1, 2]}), {"x": h})
    with pytest.raises(InputError, match=r"row 1 \(0-based position; index label 1\): cell "
                                         r"\(x=a\) is duplicated \(first at row 0 "):
        Table.from_frame(pd.DataFrame({"x": ["a", "a"], "value": [1, 2]}), {"x": h},
                         compute_totals=True)
    with pytest.raises(InputError, match=r"row 0 \(0-based position; index label 0\): value "
                                         ".* is missing"):
        Table.from_frame(pd.DataFrame({"x": ["a", "b"], "value": [np.nan, 2]}), {"x": h},
                         compute_totals=True)
    with pytest.raises(InputError, match="not a number"):
        Table.from_frame(pd.DataFrame({"x": ["a", "b"], "value": ["z", 2]}), {"x": h},
                         compute_totals=True)
    with pytest.raises(InputError, match="negative value"):
        Table.from_frame(pd.DataFrame({"x": ["a", "b"], "value": [-1, 2]}), {"x": h},
                         compute_totals=True)
    # negative values are fine when the bounds allow them
    t = Table.from_frame(pd.DataFrame({"x": ["a", "b"], "value": [-1, 2], "lo": [-10, -10]}),
                         {"x": h}, compute_totals=True, lb="lo")
    assert t.value[0] == 1
    with pytest.raises(InputError, match="column 'nope' not found"):
        Table.from_frame(pd.DataFrame({"x": ["a"], "value": [1]}), {"x": h}, value="nope")
    with pytest.raises(InputError, match="no cells"):
        Table.from_frame(pd.DataFrame({"x": [], "value": []}), {"x": h})


def test_status_letters_and_empty_cells():
    h = Hierarchy.flat(["a", "b", "c"], total="T")
    frame = pd.DataFrame({"x": ["a", "b", "c"], "value": [5, 0, 3], "freq": [2, 0, 1],
                          "st": ["", "", "u"]})
    t = Table.from_frame(frame, {"x": h}, compute_totals=True, status="st")
    assert t.status.tolist() == ["S", "S", "Z", "U"]
    with pytest.raises(InputError, match=r"row 0 \(0-based position; index label 0\), "
                                         "column 'st': not a status"):
        Table.from_frame(frame.assign(st=["Q", "", ""]), {"x": h}, compute_totals=True,
                         status="st")


def test_aggregate_leaves_multilevel():
    h = Hierarchy.from_pairs([("T", "A"), ("A", "A1"), ("A", "A2"), ("T", "B")])
    v = np.array([0, 0, 1, 2, 3], float)
    assert aggregate_leaves(v, [h]).tolist() == [6, 3, 1, 2, 3]


def test_top_contributions_aggregate():
    h = Hierarchy.flat(["a", "b"], total="T")
    frame = pd.DataFrame({"x": ["a", "b"], "value": [10, 7], "top1": [6, 5], "top2": [4, 2]})
    t = Table.from_frame(frame, {"x": h}, compute_totals=True, top="top")
    assert t.top[t.cell("T")].tolist() == [6, 5]


# ------------------------------------------------------------------ general & linked
def test_general_table_from_relations():
    import scipy.sparse as sp
    A = sp.csr_matrix([[1.0, -1.0, -1.0, 0], [0, 1, 0, -1.0]])
    t = Table.from_relations([5.0, 2.0, 3.0, 2.0], A)
    assert t.relation_total.tolist() == [0, 1]
    assert t.is_inner.tolist() == [False, False, True, True]
    t.check_additivity()
    with pytest.raises(InputError, match="not the sum"):
        Table.from_relations([5.0, 2.0, 4.0, 2.0], A).check_additivity()


D53 = Path(__file__).resolve().parents[1] / "fixtures" / "ssbtools" / "d53.csv"


def _d53_tables():
    d = pd.read_csv(D53, dtype=str)
    d["freq"] = d["freq"].astype(int)
    hier = {
        "sex": Hierarchy.flat(sorted(d["sex"].unique()), total="Total", name="sex"),
        "age": Hierarchy.from_columns(d, ["age_l", "age_m", "age_h"], name="age"),
        "lms": Hierarchy.from_columns(d, ["lms_l", "lms_h"], name="lms"),
        "hst": Hierarchy.from_columns(d, ["hst_l", "hst_m", "hst_h"], name="hst"),
        "fst": Hierarchy.from_columns(d, ["fst_l", "fst_m", "fst_h"], name="fst"),
    }
    d = d.rename(columns={"age_h": "age", "lms_h": "lms", "hst_h": "hst", "fst_h": "fst"})
    tables = []
    for dims in (["sex", "age", "lms"], ["sex", "age", "hst"], ["sex", "age", "fst"],
                 ["sex", "lms", "hst"]):
        g = d.groupby(dims, as_index=False)["freq"].sum().rename(columns={"freq": "value"})
        tables.append(Table.from_frame(g, {k: hier[k] for k in dims}, freq=None,
                                       compute_totals=True, kind="frequency"))
    return d, tables


def test_linked_census_tables_d53():
    d, tables = _d53_tables()
    linked = link_tables(tables)
    # shared cells are merged: the sex x age margin of f1, f2 and f3 is one set of cells
    n_separate = sum(t.n_cells for t in tables)
    assert linked.n_cells < n_separate
    linked.check_additivity()
    lab = linked.labels
    grand = np.flatnonzero((lab == "<total>").all(axis=1).to_numpy())
    assert len(grand) == 1 and linked.value[grand[0]] == d["freq"].sum()
    # every relation of every table is present
    assert linked.n_relations >= max(t.n_relations for t in tables)


def test_linked_two_groupings_of_one_variable():
    # region grouped by county and by municipality group: not nested
    county = Hierarchy.from_pairs([("T", "c1"), ("T", "c2"), ("c1", "r1"), ("c1", "r2"),
                                   ("c2", "r3"), ("c2", "r4")])
    group = Hierarchy.from_pairs([("T", "g1"), ("T", "g2"), ("g1", "r1"), ("g1", "r3"),
                                  ("g2", "r2"), ("g2", "r4")])
    leaves = pd.DataFrame({"region": ["r1", "r2", "r3", "r4"], "value": [1.0, 2, 3, 4]})
    t1 = Table.from_frame(leaves, {"region": county}, freq=None, compute_totals=True)
    t2 = Table.from_frame(leaves, {"region": group}, freq=None, compute_totals=True)
    linked = link_tables([t1, t2])
    assert linked.n_cells == 4 + 2 + 2 + 1
    assert linked.n_relations == 3 + 3 - 1 + 0 or linked.n_relations == 6
    linked.check_additivity()
    bad = Table.from_frame(leaves.assign(value=[1.0, 2, 3, 5]), {"region": group}, freq=None,
                           compute_totals=True)
    with pytest.raises(InputError, match="differs"):
        link_tables([t1, bad])


def _components_by_search(A, mask):
    """Brute force: breadth-first search over cells sharing a relation."""
    A = A.tocsc()
    rows_of = {j: set(A.indices[A.indptr[j]:A.indptr[j + 1]]) for j in np.flatnonzero(mask)}
    left, comps = set(rows_of), []
    for start in sorted(rows_of):
        if start not in left:
            continue
        comp, todo = {start}, [start]
        left.discard(start)
        while todo:
            j = todo.pop()
            for k in [k for k in left if rows_of[k] & rows_of[j]]:
                left.discard(k)
                comp.add(k)
                todo.append(k)
        comps.append(sorted(comp))
    return sorted(comps)


@pytest.mark.parametrize("share", [0.7, 0.08])   # most entries masked, or few
@pytest.mark.parametrize("seed", range(6))
def test_linked_components_match_search(seed, share):
    import scipy.sparse as sp
    from tabprotect.model.relations import linked_components
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(1, 30)), int(rng.integers(1, 60))
    A = sp.random(m, n, density=float(rng.uniform(0.01, 0.15)), random_state=seed,
                  format="csr")
    mask = rng.random(n) < share
    got = linked_components(A, mask)
    assert sorted(c.tolist() for c in got) == _components_by_search(A, mask)
    assert sorted(np.concatenate(got).tolist()) == np.flatnonzero(mask).tolist() \
        if got else not mask.any()


@pytest.mark.parametrize("directed", [True, False])
@pytest.mark.parametrize("seed", range(8))
def test_connected_components_label_as_scipys_graph_module(seed, directed):
    # the plain numpy components (gauss's attack step labels with them) against scipy's
    # csgraph: the same count and the same label of every node, self-loops, isolated
    # nodes and one-way edges included
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components as scipys
    from tabprotect.model.relations import connected_components
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    m = int(rng.integers(0, 2 * n))
    graph = sp.csr_matrix((np.ones(m), (rng.integers(0, n, m), rng.integers(0, n, m))),
                          shape=(n, n))
    count, labels = connected_components(graph, directed=directed)
    want_count, want = scipys(graph, directed=directed, connection="weak")
    assert count == want_count
    assert labels.tolist() == want.tolist()
