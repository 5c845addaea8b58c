"""The intruder's lower bound of a count table whose empty cells are published: every
cell not shown ``Z`` holds at least 1 (checked with an LP written here, not the audit)."""
import numpy as np

from lp_oracle import intervals
from tabprotect.audit import audit
from tabprotect.model import Hierarchy, Table
from tabprotect.model.structure import product_structure
from tabprotect.primary import FrequencyRule, apply_rules
from tabprotect.secondary import protect
from tabprotect.secondary.subtables import Split, subtable_table

BLOCK = [5, 6, 9, 10]     # (1,a) (1,b) (2,a) (2,b): a 2x2 block of count-1 primaries


def _block_table(kind: str = "frequency", empty: str = "publish") -> Table:
    r = Hierarchy.flat(["1", "2", "3"], total="T")
    c = Hierarchy.flat(["a", "b", "c"], total="T")
    inner = np.array([[1, 1, 5], [1, 1, 6], [4, 7, 8]], float)
    g = np.zeros((4, 4))
    g[1:, 1:] = inner
    g[0, 1:], g[1:, 0], g[0, 0] = inner.sum(0), inner.sum(1), inner.sum()
    v = g.ravel()
    prim = np.isin(np.arange(16), BLOCK)
    level = np.where(prim, 1.0, 0.0)
    return Table.from_arrays({"r": r, "c": c}, v, v, kind=kind, empty=empty,
                             status=np.where(prim, "U", "S"), upl=level, lpl=level)


def _protected_at_one(table: Table, hidden: np.ndarray) -> bool:
    """Every primary's integer interval, with each hidden cell in [1, inf) (its own LP,
    from a table of bound 0), reaches its upper level and its lower level or 1."""
    base = table.replace(empty="suppress")
    assert (base.lb == 0).all()
    known = {int(i): (1.0, np.inf) for i in np.flatnonzero(hidden)}
    got = intervals(base, hidden, integer=True, known=known)
    for i in np.flatnonzero(table.status == "U"):
        lo, hi = got[int(i)]
        x = table.value[i]
        if not (lo <= max(x - table.lpl[i], 1.0) and hi >= x + table.upl[i]):
            return False
    return True


def test_the_bare_block_is_disclosed_at_bound_one():
    t = _block_table()
    hidden = t.status == "U"
    assert (t.lb[hidden] == 1).all()
    assert not _protected_at_one(t, hidden)
    assert not audit(t).passed
    # the same pattern with empty cells that may be suppressed: each cell in [0, 2]
    assert audit(_block_table(empty="suppress")).passed


def test_protect_adds_cells_the_bound_one_lp_accepts():
    res = protect(_block_table(), cost="unity", singleton=False)
    hidden = np.isin(res.status, ("U", "M"))
    assert res.passed and res.n_secondary > 0
    assert _protected_at_one(res.confidential_table, hidden)


def test_empty_suppress_keeps_bound_zero_and_the_bare_pattern():
    res = protect(_block_table(), cost="unity", singleton=False, empty="suppress")
    assert res.passed and res.n_secondary == 0
    assert (res.confidential_table.lb == 0).all()


def test_magnitude_tables_keep_their_bounds():
    # a non-empty magnitude cell may be 0
    assert (_block_table(kind="magnitude").lb == 0).all()


def test_replace_derives_the_bound_from_the_given_one():
    t = _block_table()
    lb = np.zeros(t.n_cells)
    lb[0] = 2.0
    t2 = t.replace(lb=lb)
    assert t2.lb[0] == 2.0 and (t2.lb[1:] == 1).all()
    assert t2.replace(empty="suppress").lb.tolist() == lb.tolist()
    assert (t2.replace(empty="suppress").replace(empty="publish").lb == t2.lb).all()


def test_rule_levels_stay_the_rules_and_the_policy_moves_only_the_bound():
    # a count 1 with a lower level 1: the rule's level is kept whatever the policy; with
    # empty="suppress" its bound is 0 again, and the level asks for the interval to reach 0
    h = Hierarchy.flat(["a", "b", "c"], total="T")
    t = Table.from_arrays({"g": h}, [13, 1, 2, 10], freq=[13, 1, 2, 10], kind="frequency")
    r = apply_rules(t, [FrequencyRule(3, safety_range=0)]).table
    assert r.lb.tolist() == [1, 1, 1, 1] and r.lpl.tolist() == [0, 1, 1, 0]
    s = r.replace(empty="suppress")
    assert s.lb.tolist() == [0, 0, 0, 0] and s.lpl.tolist() == [0, 1, 1, 0]


def test_derived_tables_keep_the_policy_and_the_given_bound():
    for empty, bound in (("publish", 1.0), ("suppress", 0.0)):
        t = _block_table(empty=empty)
        sub = subtable_table(t, Split(t).subtable((0, 0)))
        general = Table.from_relations(t.value, t.relations, freq=t.freq, kind=t.kind,
                                       status=t.status, empty=empty)
        rebuilt = product_structure(general, (4, 4))
        for derived in (sub, rebuilt):
            assert derived.empty == empty
            assert (derived.lb[derived.value >= 1] == bound).all()
            assert (derived.replace(empty="suppress").lb == 0).all()
