"""tabprotect.io.jj: the JJ format and the cells + relations CSV pair."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabprotect.audit import audit
from tabprotect.errors import InputError
from tabprotect.io.jj import read_cells_relations, read_jj, write_jj
from tabprotect.model import Hierarchy, Table


def _table():
    region = Hierarchy.from_pairs([("T", "N"), ("T", "S"), ("N", "N1"), ("N", "N2")])
    size = Hierarchy.flat(["s1", "s2"])
    frame = pd.DataFrame([(r, s, v) for (r, s), v in zip(
        [(r, s) for r in ("N1", "N2", "S") for s in ("s1", "s2")], [5, 7, 1, 9, 4, 6])],
        columns=["region", "size", "value"])
    t = Table.from_frame(frame, {"region": region, "size": size}, freq=None,
                         compute_totals=True)
    st = t.status.copy()
    st[[t.cell("N1", "s1"), t.cell("N2", "s1")]] = ["U", "M"]
    upl = np.where(st == "U", 1.5, 0.0)
    return t.replace(status=st, upl=upl, lpl=upl, cost=np.arange(t.n_cells) + 1.0)


def test_jj_round_trip(tmp_path):
    t = _table()
    path = write_jj(t, tmp_path / "t.jj")
    back = read_jj(path)
    assert back.n_cells == t.n_cells and back.n_relations == t.n_relations
    np.testing.assert_allclose(back.value, t.value)
    np.testing.assert_allclose(back.upl, t.upl)
    np.testing.assert_allclose(back.cost, t.cost)
    assert back.status.tolist() == t.status.tolist()
    assert sorted(back.relation_total.tolist()) == sorted(t.relation_total.tolist())
    # the relations say the same: the true table satisfies them and the audit agrees
    assert np.abs(back.relations @ back.value).max() == 0
    a, b = audit(t), audit(back)
    np.testing.assert_allclose(a.lower, b.lower)
    np.testing.assert_allclose(np.minimum(a.upper, 1e9), np.minimum(b.upper, 1e9))


def test_jj_reads_sdctable_layout_with_frequencies(tmp_path):
    text = ("0\n3\n0 5 3 1 s 0 50 0 0 0\n1 2 1 1 u 0 50 1 1 0\n2 3 2 1 z 0 50 0 0 0\n"
            "1\n0 3 : 0 (-1) 1 (1) 2 (1)\n")
    p = tmp_path / "s.jj"
    p.write_text(text)
    t = read_jj(p)
    assert t.freq.tolist() == [3, 1, 2]
    assert t.status.tolist() == ["S", "U", "P"]
    assert t.relation_total.tolist() == [0]


@pytest.mark.parametrize("text,msg", [
    ("0\n2\n0 5 1 s 0 9 0 0 0\n", "ends after 1 of 2 cells"),
    ("0\n1\n0 5 1 q 0 9 0 0 0\n0\n", "line 3: the status field is not one of s, u"),
    ("0\n1\n0 5 1 s 0 9 0 0\n0\n", "expected 9 or 10 fields"),
    ("0\n2\n0 5 1 s 0 9 0 0 0\n0 5 1 s 0 9 0 0 0\n0\n", "cell 0 is duplicated"),
    # a cell count the file cannot hold: refused before arrays of that size are made
    ("0\n-1\n0\n", r"line 2: the number of cells is negative"),
    ("0\n1000000000000\n0 5 1 s 0 9 0 0 0\n0\n", r"file ends after 2 of 1000000000000 cells"),
    ("0\n1\n0 5 1 s 0 9 0 0 0\n1\n0 2 : 0 (-1) 7 (1)\n", "cell 7 out of range"),
    # a total 1 % off the sum of its parts
    ("0\n3\n0 101 1 s 0 500 0 0 0\n1 60 1 s 0 500 0 0 0\n2 40 1 s 0 500 0 0 0\n1\n"
     "0 3 : 0 (-1) 1 (1) 2 (1)\n", r"relation 0 \(line 7\) is not additive"),
    # a value above its own upper bound, one below its lower bound, bounds crossed
    ("0\n3\n0 100 1 s 0 500 0 0 0\n1 60 1 s 0 50 0 0 0\n2 40 1 s 0 500 0 0 0\n1\n"
     "0 3 : 0 (-1) 1 (1) 2 (1)\n", r"cell 1 \(line 4\) has a value above its upper bound"),
    ("0\n3\n0 100 1 s 0 500 0 0 0\n1 60 1 s 0 500 0 0 0\n2 40 1 s 45 500 0 0 0\n1\n"
     "0 3 : 0 (-1) 1 (1) 2 (1)\n", r"cell 2 \(line 5\) has a value below its lower bound"),
    ("0\n3\n0 100 1 s 0 500 0 0 0\n1 60 1 s 70 50 0 0 0\n2 40 1 s 0 500 0 0 0\n1\n"
     "0 3 : 0 (-1) 1 (1) 2 (1)\n", r"cell 1 \(line 4\) has a lower bound above its upper"),
    ("0\n3\n0 100 1 s 0 500 0 0 0\n1 60 1 s 0 500 0 0 0\n2 40 1 s 0 500 0 0 0\n1\n"
     "0 3 : 0 (-1) 1 (1) 1 (1)\n", r"line 7: relation 0 lists cell 1 twice"),
])
def test_jj_bad_input(tmp_path, text, msg):
    p = tmp_path / "bad.jj"
    p.write_text(text)
    with pytest.raises(InputError, match=msg):
        read_jj(p)


@pytest.mark.parametrize("line, field", [
    ("0 98x7654.321 1 s 0 99999 0 0 0", "value"), ("0 5 1 s 0 99999 0 7.5e 0", "upl"),
    ("0 5 2x 1 s 0 99999 0 0 0", "freq"), ("0.5 5 1 s 0 99999 0 0 0", "index")])
def test_jj_field_that_is_not_a_number_is_named_not_quoted(tmp_path, line, field):
    # nine or ten fields, one of them not a number: the line and the field are named
    p = tmp_path / "text.jj"
    p.write_text(f"0\n1\n{line}\n0\n")
    with pytest.raises(InputError, match=f"line 3: the {field} field is not a") as err:
        read_jj(p)
    assert "7654" not in str(err.value) and "7.5e" not in str(err.value)


def test_jj_term_that_is_not_a_cell_and_coefficient_is_told(tmp_path):
    p = tmp_path / "coef.jj"
    p.write_text("0\n3\n0 5 1 s 0 9 0 0 0\n1 2 1 s 0 9 0 0 0\n2 3 1 s 0 9 0 0 0\n1\n"
                 "0 3 : 0 (-1) 1 (1) 2 (x)\n")
    with pytest.raises(InputError, match="line 7: relation says 3 cells but lists 2 of "
                                         "the form 'cell \\(coefficient\\)'"):
        read_jj(p)


def test_jj_status_error_quotes_no_field(tmp_path):
    # the status field holds a number of the cell (a column exported in the wrong place)
    p = tmp_path / "shifted.jj"
    p.write_text("0\n1\n0 5 1 31337.77 0 99999 0 0 0\n0\n")
    with pytest.raises(InputError, match="line 3: the status field") as err:
        read_jj(p)
    assert "31337" not in str(err.value) and "99999" not in str(err.value)


def test_cells_relations_pair_castro_sign_convention():
    cells = pd.DataFrame({"id": [0, 1, 2, 3], "value": [10.0, 4.0, 6.0, 6.0]})
    rel = pd.DataFrame({"rel": [0, 0, 0, 1, 1], "cell": [0, 1, 2, 2, 3],
                        "coef": [-1, 1, 1, -1, 1]})
    t = read_cells_relations(cells, rel, id_column="id")
    assert t.relation_total.tolist() == [0, 2]
    assert np.abs(t.relations @ t.value).max() == 0
    bad = cells.assign(value=[10.0, 4.0, 7.0, 6.0])
    with pytest.raises(InputError, match="relation '0' is not additive"):
        read_cells_relations(bad, rel, id_column="id")
    with pytest.raises(InputError, match="cell '9' is not in"):
        read_cells_relations(cells, rel.assign(cell=[0, 1, 2, 2, 9]), id_column="id")


def test_jj_additivity_tolerance_is_relative_and_stated(tmp_path):
    """A rounding difference inside the tolerance is accepted; the same file fails under a
    tighter stated tolerance, and a 1 % difference fails under the default."""
    text = ("0\n3\n0 1000000.4 1 s 0 1e9 0 0 0\n1 600000 1 s 0 1e9 0 0 0\n"
            "2 400000 1 s 0 1e9 0 0 0\n1\n0 3 : 0 (-1) 1 (1) 2 (1)\n")
    p = tmp_path / "round.jj"
    p.write_text(text)
    assert read_jj(p).n_relations == 1
    with pytest.raises(InputError, match="relative tolerance 1e-08"):
        read_jj(p, tolerance=1e-8)


def test_bad_jj_is_never_protected(tmp_path):
    """The table the old reader accepted (a total 1 % off, a value above its bound) is an
    input error before any method runs, not a passed protection."""
    from tabprotect import protect
    p = tmp_path / "off.jj"
    p.write_text("0\n3\n0 101 1 s 0 500 0 0 0\n1 60 1 u 0 500 6 6 0\n"
                 "2 40 1 s 0 500 0 0 0\n1\n0 3 : 0 (-1) 1 (1) 2 (1)\n")
    with pytest.raises(InputError):
        protect(read_jj(p))


@pytest.mark.parametrize("cells_change,rel_change,msg", [
    ({"value": [10.0, 4.0, 6.0, 6.0], "ub": [20, 3, 20, 20]}, None,
     r"cell '1' has a value above its upper bound"),
    ({"value": [10.0, 4.0, 6.0, 6.0], "lb": [0, 0, 7, 0]}, None,
     r"cell '2' has a value below its lower bound"),
    ({"id": [0, 1, 1, 3]}, None, r"cell '1' is duplicated"),
    (None, {"rel": [0, 0, 0, 1, 1, 1], "cell": [0, 1, 2, 2, 3, 3], "coef": [-1, 1, 1, -1, 1, 1]},
     r"relations row 5 \(0-based position; index label 5\): relation '1' lists cell '3' "
     r"twice"),
])
def test_cells_relations_bad_input(cells_change, rel_change, msg):
    cells = pd.DataFrame({"id": [0, 1, 2, 3], "value": [10.0, 4.0, 6.0, 6.0]})
    rel = pd.DataFrame({"rel": [0, 0, 0, 1, 1], "cell": [0, 1, 2, 2, 3],
                        "coef": [-1, 1, 1, -1, 1]})
    if cells_change:
        cells = cells.assign(**cells_change)
    if rel_change:
        rel = pd.DataFrame(rel_change)
    with pytest.raises(InputError, match=msg):
        read_cells_relations(cells, rel, id_column="id")
