"""The audit of adjusted tables: each check fails on a publication that breaks it."""
from __future__ import annotations

import numpy as np
import pytest

from tabprotect.audit_adjusted import adjustment_loss, audit_adjusted
from tabprotect.model import Hierarchy, Table


def table_2x2() -> Table:
    # rows T, r1, r2 x cols T, a, b: inner r1 = (6, 4), r2 = (3, 7)
    r = Hierarchy.flat(["r1", "r2"], total="T")
    c = Hierarchy.flat(["a", "b"], total="T")
    t = Table.from_arrays({"r": r, "c": c}, [20, 9, 11, 10, 6, 4, 10, 3, 7])
    status = t.status.copy()
    status[4] = "U"                   # (r1, a) = 6, levels 2 up and 1 down
    return t.replace(status=status, upl=np.where(status == "U", 2.0, 0.0),
                     lpl=np.where(status == "U", 1.0, 0.0))


def moved(t: Table, delta: float) -> np.ndarray:
    """The 2x2 inner cycle moved by delta at (r1, a): totals unchanged."""
    y = t.value.copy()
    y[[4, 8]] += delta
    y[[5, 7]] -= delta
    return y


def test_a_protected_additive_publication_passes():
    t = table_2x2()
    for delta in (2.0, -1.0, 3.0):         # at an end of (5, 8) or beyond
        a = audit_adjusted(t, moved(t, delta))
        assert a.passed and a.additive and a.model_matrix_error == 0.0


def test_a_sensitive_cell_inside_its_interval_fails():
    t = table_2x2()
    a = audit_adjusted(t, moved(t, 1.0))       # 7 lies in (5, 8)
    assert not a.passed and a.shortfalls.tolist() == [4]
    assert not a.to_frame(t)["protected"].iloc[4]
    assert len(a.to_frame(t, only_flagged=True)) == 1


@pytest.mark.parametrize("only_flagged", [False, True])
def test_the_audit_file_from_columns_is_what_pandas_writes_of_the_frame(tmp_path,
                                                                       only_flagged):
    # the CLI writes the audit's Columns (no pandas); the bytes are pandas' of the frame
    from tabprotect.io.output import format_frame, write_frame
    t = table_2x2()
    a = audit_adjusted(t, moved(t, 1.0))
    frame = a.to_frame(t, only_flagged=only_flagged)
    assert frame.index.tolist() == ([4] if only_flagged else list(range(t.n_cells)))
    ours = write_frame(a.to_columns(t, only_flagged=only_flagged), tmp_path / "ours.csv")
    format_frame(frame).to_csv(tmp_path / "pandas.csv", index=False)
    assert ours.read_bytes() == (tmp_path / "pandas.csv").read_bytes()
    assert ours.read_text().count("\n") == (2 if only_flagged else 1 + t.n_cells)


def test_a_broken_relation_fails_by_relations_and_by_the_model_matrix():
    t = table_2x2()
    y = moved(t, 2.0)
    y[0] += 0.5                                  # the grand total no longer adds up
    a = audit_adjusted(t, y)
    assert not a.passed and not a.additive
    assert a.additivity_error > 1e-3 and a.model_matrix_error > 1e-3
    y = moved(t, 2.0)
    y[0] += 1e-9                                 # within the stated tolerance
    assert audit_adjusted(t, y).passed


def test_bounds_fixed_cells_and_ranges_are_checked():
    t = table_2x2()
    y = moved(t, 3.0)                            # (r2, a) = 3 - 3 = 0: at its bound
    assert audit_adjusted(t, y).passed
    y = moved(t, 4.0)                            # (r2, a) = -1 < 0
    a = audit_adjusted(t, y)
    assert not a.passed and a.out_of_bounds.tolist() == [7]
    assert audit_adjusted(t, y, bounds="none").passed
    # (r2, b) moves 2 of 7 = 29 % > 20 %
    assert not audit_adjusted(t, moved(t, 2.0), max_change=0.2).passed
    status = t.status.copy()
    status[8] = "P"                              # (r2, b) already published
    assert not audit_adjusted(t.replace(status=status), moved(t, 2.0)).passed
    y2 = t.value.copy()
    y2[[4, 1, 0, 3]] += [2.0, 2.0, 2.0, 2.0]     # (r1, a) up 2 and its totals with it
    assert audit_adjusted(t, y2).passed
    assert not audit_adjusted(t, y2, fix_totals=True).passed


def test_non_finite_values_fail():
    t = table_2x2()
    y = moved(t, 2.0)
    y[6] = np.nan
    assert not audit_adjusted(t, y).passed


def test_information_loss_figures():
    t = table_2x2()
    m = adjustment_loss(t, moved(t, 2.0))
    assert m["l1"] == 8.0 and m["l2"] == pytest.approx(4.0)
    assert m["max_rel_change"] == pytest.approx(2 / 3)    # (r2, a): 3 -> 1
    assert m["changed_cells"] == 4 and m["max_total_change"] == 0.0
    # rows: r1 (6, 4) -> (8, 2) keeps order; r2 (3, 7) -> (1, 9) keeps; columns:
    # a (6, 3) -> (8, 1) keeps; b (4, 7) -> (2, 9) keeps
    assert m["relations_order_kept"] == 1.0
    m = adjustment_loss(t, moved(t, -2.0))   # r1 (6, 4) -> (4, 6): order swapped
    assert m["relations_order_kept"] < 1.0 and m["spearman"] < 1.0


@pytest.mark.parametrize("seed", range(5))
def test_spearman_is_scipys_with_ties(seed):
    from scipy.stats import spearmanr
    rng = np.random.default_rng(seed)
    r = Hierarchy.flat([f"r{i}" for i in range(6)], total="T")
    c = Hierarchy.flat([f"c{j}" for j in range(5)], total="T")
    inner = rng.integers(0, 4, size=(6, 5)).astype(float)      # many ties
    full = np.zeros((7, 6))
    full[1:, 1:] = inner
    full[0, 1:], full[1:, 0], full[0, 0] = inner.sum(0), inner.sum(1), inner.sum()
    t = Table.from_arrays({"r": r, "c": c}, full.ravel())
    y = t.value + rng.integers(-1, 2, size=t.n_cells)
    m = adjustment_loss(t, y)
    assert m["spearman"] == pytest.approx(spearmanr(t.value, y).statistic, abs=1e-12)
