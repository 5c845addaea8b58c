"""public_summary: a released figure, as one more published equation, narrows no primary.

Checked with an independent LP (scipy's linprog/milp over every cell of the table, published
cells fixed, dense matrices: the tables are small): the primaries' intervals with all
released figures added equal the intervals without them, and each figure withheld for
narrowing does narrow some primary when added to the released ones.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from tabprotect.model import Hierarchy, Table
from tabprotect.public_summary import REASONS, public_summary, standard_figures
from tabprotect.secondary.protect import protect


def _grid(values, rows, cols, kind_freq=False):
    r = Hierarchy.flat([str(i) for i in range(rows)], total="T")
    c = Hierarchy.flat([f"c{j}" for j in range(cols)], total="T")
    inner = np.asarray(values, dtype=float).reshape(rows, cols)
    full = np.zeros((rows + 1, cols + 1))
    full[1:, 1:] = inner
    full[0, 1:] = inner.sum(axis=0)
    full[1:, 0] = inner.sum(axis=1)
    full[0, 0] = inner.sum()
    freq = full.copy() if kind_freq else None
    return Table.from_arrays({"r": r, "c": c}, full.ravel(), freq=freq)


def _with_primaries(t: Table, cells, level=0.3) -> Table:
    st = t.status.copy()
    st[cells] = "U"
    prot = np.where(st == "U", np.maximum(1.0, level * t.value), 0.0)
    return t.replace(status=st, upl=prot, lpl=prot)


def _intervals(t: Table, status, extra, integer: bool):
    """Independent min/max of every primary: all cells are variables, published ones
    fixed, relations A x = 0, a-priori bounds, plus rows ``w @ x == f`` for ``extra``."""
    n = t.n_cells
    sup = np.isin(status, ("U", "M"))
    lo = np.where(sup, t.lb, t.value)
    hi = np.where(sup, t.ub, t.value)
    A = t.relations.toarray()
    rows = [A] + [np.asarray(w, float)[None, :] for w, _ in extra]
    rhs = np.concatenate([np.zeros(A.shape[0])] + [[f] for _, f in extra])
    M = np.vstack(rows)
    out = {}
    for j in np.flatnonzero(status == "U"):
        ends = []
        for sign in (1.0, -1.0):
            c = np.zeros(n)
            c[j] = sign
            if integer:
                res = milp(c, constraints=LinearConstraint(M, rhs - 1e-9, rhs + 1e-9),
                           integrality=np.ones(n), bounds=Bounds(lo, hi))
            else:
                res = linprog(c, A_eq=M, b_eq=rhs, bounds=list(zip(lo, hi)), method="highs")
            assert res.status == 0
            ends.append(sign * res.fun)
        out[int(j)] = tuple(ends)
    return out


def _forms(t: Table, status, figures):
    """Each standard figure as ``(w, f)`` with ``w @ x == f`` (non-negative tables)."""
    sup = np.isin(status, ("U", "M"))
    masks = {"value_suppressed": sup, "value_secondary": status == "M",
             "value_primary": status == "U"}
    out = {}
    for name, f in figures.items():
        if name == "share_value_suppressed":
            out[name] = (sup.astype(float) - f, 0.0)
        else:
            out[name] = (masks[name].astype(float), f)
    return out


def _check(t: Table, status, integer=False):
    figures = standard_figures(t, status)
    res = public_summary(t, status, integer=integer)
    released = [k for k in figures if k in res]
    assert set(released) | set(res["withheld"]) == set(figures)
    forms = _forms(t, status, figures)
    base = _intervals(t, status, [], integer)
    with_released = _intervals(t, status, [forms[k] for k in released], integer)
    for j, (lo, hi) in base.items():
        assert with_released[j] == pytest.approx((lo, hi), rel=1e-6, abs=1e-6), j
    for name, reason in res["withheld"].items():
        assert reason == REASONS["narrows"]
        more = _intervals(t, status, [forms[k] for k in released] + [forms[name]], integer)
        assert any(more[j] != pytest.approx(base[j], rel=1e-6, abs=1e-6) for j in base), name
    return res


def test_one_primary_difference_is_withheld():
    # one primary, three secondaries: value_suppressed - value_secondary is the primary
    t = _grid([3, 2, 3, 2], 2, 2)
    st = t.status.copy()
    st[[4, 5, 7, 8]] = ["U", "M", "M", "M"]
    t = _with_primaries(t, [4]).replace(status=st)
    figures = standard_figures(t, st)
    assert figures["value_suppressed"] - figures["value_secondary"] == t.value[4]
    res = _check(t, st)
    assert not ({"value_suppressed", "value_secondary"} <= set(res))
    assert "value_primary" in res["withheld"]
    assert t.value[4] not in [v for k, v in res.items() if k not in ("withheld",)
                              and isinstance(v, float)]


def test_published_total_makes_the_sum_of_the_block_safe():
    t = _grid([3, 2, 3, 2], 2, 2)
    st = t.status.copy()
    st[[4, 5, 7, 8]] = ["U", "M", "M", "M"]
    res = public_summary(_with_primaries(t, [4]).replace(status=st), st)
    # the four suppressed cells add up to the published grand total: nothing new
    assert res["value_suppressed"] == 10.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_protected_random_tables(seed):
    rng = np.random.default_rng(seed)
    rows, cols = 4, 5
    t = _grid(rng.integers(1, 40, rows * cols), rows, cols)
    inner = [i for i in range(t.n_cells) if i // (cols + 1) > 0 and i % (cols + 1) > 0]
    prim = rng.choice(inner, size=3, replace=False)
    t = _with_primaries(t, prim)
    result = protect(t, method="optimal", time_limit=20)
    assert result.passed
    _check(t, result.table.status)


def _checker_with_figures(t, st):
    """The summary's checker after it tried every standard figure of the pattern, and
    the names of the figures it refused."""
    from tabprotect.public_summary import _form
    from tabprotect.public_summary.checker import Checker
    checker = Checker(t, st, False, 1e-6, None)
    refused = [name for name, value in standard_figures(t, st).items()
               if checker.try_release(*_form(name, value, t, st, None)) is not None]
    return checker, refused


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ends_at_outer_bounds_need_no_base_interval(seed):
    # many primaries in a 2-D magnitude table: solutions of the system with the figure
    # show most ends at their outer bounds, so those ends get no LP without the figure;
    # the released and withheld figures against the independent LPs (_check), and the
    # outer bounds contain every primary's independent interval
    rng = np.random.default_rng(seed)
    rows, cols = 6, 7
    t = _grid(rng.integers(1, 60, rows * cols), rows, cols)
    inner = [i for i in range(t.n_cells) if i // (cols + 1) > 0 and i % (cols + 1) > 0]
    t = _with_primaries(t, rng.choice(inner, size=8, replace=False))
    st = protect(t, method="hypercube", singleton=False).table.status
    _check(t, st)
    checker, _ = _checker_with_figures(t, st)
    lo, hi = checker.outer()
    local = {int(c): i for i, c in enumerate(checker.cells)}
    for j, (a, b) in _intervals(t, st, [], False).items():
        assert lo[local[j]] <= a + 1e-6 and hi[local[j]] >= b - 1e-6
    assert np.isnan(checker.base_hi[checker.primary]).any()


@pytest.mark.parametrize("seed", [0, 2])
def test_figures_released_on_a_table_with_many_primaries(seed):
    # 40 primaries in a 12x14 table with zeros: every figure is released, and each
    # keeps every primary's interval by the independent LPs (_check); most ends are
    # decided by outer or Lagrangian bounds (no base interval solved for them)
    t, st = _many_primaries_table(seed)
    res = _check(t, st)
    assert not res["withheld"]
    checker, refused = _checker_with_figures(t, st)
    assert refused == []
    unsolved = np.isnan(checker.base_lo[checker.primary]) | \
        np.isnan(checker.base_hi[checker.primary])
    assert unsolved.mean() > 0.5


@pytest.mark.parametrize("seed", [0, 1])
def test_lagrange_bounds_hold_for_any_multipliers(seed):
    # the bound of an end from multipliers of the relations: never inside the
    # independent LP interval, whatever the multipliers; at the solver's duals of the
    # system without figures it is the end itself
    from tabprotect.public_summary.checker import Checker
    rng = np.random.default_rng(seed)
    rows, cols = 5, 6
    t = _grid(rng.integers(1, 60, rows * cols), rows, cols)
    inner = [i for i in range(t.n_cells) if i // (cols + 1) > 0 and i % (cols + 1) > 0]
    t = _with_primaries(t, rng.choice(inner, size=5, replace=False))
    st = protect(t, method="hypercube", singleton=False).table.status
    checker = Checker(t, st, False, 1e-6, None)
    local = {int(c): i for i, c in enumerate(checker.cells)}
    m = checker.lp.A.shape[0]
    for j, (a, b) in _intervals(t, st, [], False).items():
        k = local[j]
        for _ in range(5):
            y = rng.normal(size=m) * rng.integers(0, 2, m)
            assert checker._lagrange(k, "min", y) <= a + 1e-6
            assert checker._lagrange(k, "max", y) >= b - 1e-6
        for sense, end in (("min", a), ("max", b)):
            status, x, duals = checker.base.optimum([k], [1.0], sense, duals=True)
            assert status == "optimal" and x[k] == pytest.approx(end, abs=1e-6)
            assert checker._lagrange(k, sense, duals) == pytest.approx(end, abs=1e-6)


def test_two_primaries_in_one_row():
    t = _grid([5, 7, 30, 12, 9, 40, 8, 6, 25], 3, 3)
    st = t.status.copy()
    # primaries (1,a) and (1,b); secondaries (2,a) and (2,b)
    idx = {(r, c): r * 4 + c for r in range(4) for c in range(4)}
    st[[idx[1, 1], idx[1, 2]]] = "U"
    st[[idx[2, 1], idx[2, 2]]] = "M"
    t = _with_primaries(t, [idx[1, 1], idx[1, 2]]).replace(status=st)
    res = _check(t, st)
    assert res["primary"] == 2 and res["secondary"] == 2


def test_frequency_table_integer_intervals():
    t = _grid([1, 4, 6, 2, 3, 5], 2, 3, kind_freq=True)
    t = t.replace(kind="frequency") if t.kind != "frequency" else t
    st = t.status.copy()
    st[[5, 6, 9, 10]] = ["U", "M", "M", "M"]
    t = _with_primaries(t, [5]).replace(status=st)
    res = _check(t, st, integer=True)
    assert "value_primary" in res["withheld"]


def test_unknown_and_non_linear_figures_are_withheld():
    t = _grid([3, 2, 3, 2], 2, 2)
    st = t.status.copy()
    st[[4, 5, 7, 8]] = ["U", "M", "M", "M"]
    t = _with_primaries(t, [4]).replace(status=st)
    res = public_summary(t, st, {"cost": 7.0})
    assert res["withheld"] == {"cost": REASONS["unknown"]}
    # with its form given, cost (value weights of the secondaries) is checked like the rest
    res = public_summary(t, st, {"value_suppressed": 10.0, "cost": 7.0},
                         forms={"cost": (st == "M") * 1.0})
    assert res["withheld"] == {"cost": REASONS["narrows"]}
    neg = t.replace(lb=np.full(t.n_cells, -100.0))
    res = public_summary(neg, st, {"value_primary": 3.0})
    assert res["withheld"] == {"value_primary": REASONS["not_linear"]}


def test_a_figure_that_does_not_match_the_table_is_withheld():
    t = _grid([3, 2, 3, 2], 2, 2)
    st = t.status.copy()
    st[[4, 5, 7, 8]] = ["U", "M", "M", "M"]
    t = _with_primaries(t, [4]).replace(status=st)
    res = public_summary(t, st, {"value_suppressed": 11.0})
    assert res["withheld"] == {"value_suppressed": REASONS["inconsistent"]}


@pytest.mark.parametrize("seed", [3, 4])
def test_primaries_on_totals_several_components(seed):
    # primaries anywhere, totals included: suppressed margins let the figures' parts vary
    rng = np.random.default_rng(seed)
    rows, cols = 5, 4
    t = _grid(rng.integers(1, 60, rows * cols), rows, cols)
    prim = rng.choice(np.arange(1, t.n_cells), size=4, replace=False)
    t = _with_primaries(t, prim)
    result = protect(t, method="hypercube")
    assert result.passed
    _check(t, result.table.status)


def test_two_components():
    # two separate 2x2 blocks of suppressions: each block's sum is fixed by the published
    # margins (so value_suppressed adds nothing), the secondaries' sum is not
    t = _grid([9, 4, 7, 30, 5, 8, 12, 25, 40, 11, 6, 3, 22, 18, 2, 7], 4, 4)
    idx = {(r, c): r * 5 + c for r in range(5) for c in range(5)}
    st = t.status.copy()
    st[[idx[1, 1], idx[3, 3]]] = "U"
    st[[idx[1, 2], idx[2, 1], idx[2, 2], idx[3, 4], idx[4, 3], idx[4, 4]]] = "M"
    t = _with_primaries(t, [idx[1, 1], idx[3, 3]], level=0.2).replace(status=st)
    res = _check(t, st)
    assert "value_suppressed" in res and "value_secondary" in res["withheld"]


@pytest.mark.parametrize("integer", [False, True])
def test_several_primaries_in_each_of_several_components(integer):
    # the intervals without the figures come from one LP per round over all components
    # (one primary of each): checked against the independent LPs / MILPs cell by cell
    from tabprotect.model.relations import linked_components
    rng = np.random.default_rng(11)
    rows, cols = 6, 6
    t = _grid(rng.integers(1, 9 if integer else 60, rows * cols), rows, cols,
              kind_freq=integer)
    idx = {(r, c): r * (cols + 1) + c for r in range(rows + 1) for c in range(cols + 1)}
    blocks = [((1, 2), (1, 2), [(1, 1), (2, 2)]), ((3, 4), (3, 4), [(3, 3)]),
              ((5, 6), (5, 6), [(5, 5), (5, 6), (6, 5)])]
    st = t.status.copy()
    prim = []
    for rs, cs, us in blocks:
        st[[idx[r, c] for r in rs for c in cs]] = "M"
        prim += [idx[u] for u in us]
    t = _with_primaries(t, prim, level=0.1)
    st[prim] = "U"
    comps = linked_components(t.relations.tocsr(), np.isin(st, ("U", "M")))
    assert sorted(int((st[c] == "U").sum()) for c in comps) == [1, 2, 3]
    _check(t, st, integer=integer)
    _check_base_intervals(t, st, integer)


def _check_base_intervals(t: Table, st, integer: bool) -> None:
    """The checker's intervals without figures equal the independent ones."""
    from tabprotect.public_summary.checker import Checker
    checker = Checker(t, st, integer, 1e-6, None)
    assert checker._base(checker.primary)
    mine = {int(checker.cells[j]): (checker.base_lo[j], checker.base_hi[j])
            for j in checker.primary}
    want = _intervals(t, st, [], integer)
    assert mine.keys() == want.keys()
    for j, ends in want.items():
        assert mine[j] == pytest.approx(ends, rel=1e-9, abs=1e-9), j


def test_base_intervals_of_a_3d_count_table():
    # 3-D tables have fractional LP vertices: the integer ends need the MILPs
    hs = {d: Hierarchy.flat(["1", "2", "3"], total="T") for d in "abc"}
    rng = np.random.default_rng(5)
    inner = rng.integers(0, 4, (3, 3, 3)).astype(float)
    t = Table.from_frame(
        __import__("pandas").DataFrame(
            [{"a": str(i + 1), "b": str(j + 1), "c": str(k + 1), "n": inner[i, j, k]}
             for i in range(3) for j in range(3) for k in range(3)]),
        hs, value="n", freq="n", compute_totals=True, kind="frequency")
    inner_cells = np.flatnonzero(t.is_inner)
    st = t.status.copy()
    st[inner_cells] = "M"
    prim = inner_cells[[0, 4, 13, 26]]
    t = _with_primaries(t, prim, level=0.1)
    st[prim] = "U"
    for integer in (True, False):
        _check_base_intervals(t, st, integer)


def test_a_figure_the_released_ones_determine_is_released_and_checked():
    t = _grid([9, 4, 7, 30, 5, 8, 12, 25, 40, 11, 6, 3, 22, 18, 2, 7], 4, 4)
    idx = {(r, c): r * 5 + c for r in range(5) for c in range(5)}
    st = t.status.copy()
    st[[idx[1, 1], idx[3, 3]]] = "U"
    st[[idx[1, 2], idx[2, 1], idx[2, 2], idx[3, 4], idx[4, 3], idx[4, 4]]] = "M"
    t = _with_primaries(t, [idx[1, 1], idx[3, 3]], level=0.2).replace(status=st)
    sup = np.isin(st, ("U", "M"))
    v = float(t.value[sup].sum())
    forms = {"twice": 2.0 * sup, "plus_total": sup + (np.arange(t.n_cells) == 0)}
    res = public_summary(t, st, {"value_suppressed": v, "twice": 2 * v,
                                 "plus_total": v + t.value[0]}, forms=forms)
    assert res["withheld"] == {} and res["twice"] == 2 * v
    extra = [(sup * 1.0, v), (forms["twice"], 2 * v), (forms["plus_total"] * 1.0,
                                                       v + t.value[0])]
    assert _intervals(t, st, extra, False) == _intervals(t, st, [], False)
    # a combination of released figures with a value the table does not have is not
    res = public_summary(t, st, {"value_suppressed": v, "twice": 2 * v + 1}, forms=forms)
    assert res["withheld"] == {"twice": REASONS["inconsistent"]}


def _count_pattern(seed: int):
    """A 3-D count table (totals included, counts 1-2 primary, zeros published) and
    gauss's pattern with the single-contributor attack: several components whose
    moves change the suppressed cells' sum (totals are suppressed too)."""
    import pandas as pd
    rng = np.random.default_rng(seed)
    hs = {d: Hierarchy.flat([f"{d}{i}" for i in range(n)], total="T")
          for d, n in zip("abc", (3, 3, 2))}
    frame = pd.DataFrame([(f"a{i}", f"b{j}", f"c{k}") for i in range(3) for j in range(3)
                          for k in range(2)], columns=list("abc"))
    frame["n"] = rng.poisson(2.5, len(frame)).astype(float)
    t = Table.from_frame(frame, hs, value="n", freq="n", compute_totals=True,
                         kind="frequency")
    primary = (t.freq > 0) & (t.freq <= 2)
    t = t.replace(status=np.where(t.freq == 0, "Z", np.where(primary, "U", "S")),
                  upl=np.where(primary, 1.0, 0.0), spl=np.where(primary, 2.0, 0.0))
    res = protect(t, method="gauss", cost="freq", singleton=True)
    return t, res.confidential_table.status


def test_count_table_certificates_by_component_and_joint():
    # integer tables: ends certified within a component (figures' parts held), with the
    # largest other components beside it (``joint``), or by the whole system; every
    # way releases the same figures, which the independent MILPs confirm narrow nothing
    t, st = _count_pattern(3)
    figures = standard_figures(t, st)
    outs = [public_summary(t, st, joint=j) for j in (0, 3)]
    assert all(o == outs[0] for o in outs[1:])
    released = [k for k in figures if k in outs[0]]
    forms = _forms(t, st, figures)
    base = _intervals(t, st, [], True)
    with_released = _intervals(t, st, [forms[k] for k in released], True)
    assert with_released == base          # integer ends: exact
    assert released                       # the check has work to do
    for name in outs[0]["withheld"]:
        more = _intervals(t, st, [forms[k] for k in released] + [forms[name]], True)
        assert more != base


@pytest.mark.parametrize("seed", [6, 7])
def test_many_primaries_in_one_3d_component(seed):
    # one linked component with many primaries: some ends are shown kept by solutions
    # of the system without the figures (their convex combinations), the rest by LPs
    hs = {d: Hierarchy.flat(["1", "2", "3"], total="T") for d in "abc"}
    rng = np.random.default_rng(seed)
    inner = rng.integers(1, 60, (3, 3, 3)).astype(float)
    t = Table.from_frame(
        __import__("pandas").DataFrame(
            [{"a": str(i + 1), "b": str(j + 1), "c": str(k + 1), "v": inner[i, j, k]}
             for i in range(3) for j in range(3) for k in range(3)]),
        hs, value="v", compute_totals=True)
    inner_cells = np.flatnonzero(t.is_inner)
    st = t.status.copy()
    st[inner_cells] = "M"
    prim = rng.choice(inner_cells, size=8, replace=False)
    t = _with_primaries(t, prim, level=0.1)
    st[prim] = "U"
    _check(t, st)


def _blocks_count_table(seed: int):
    """A 2-D count table with four separate 2x2 blocks of suppressions (margins
    published), one primary in each: raising a primary moves its block's secondaries'
    sum the other way, so the figures hold only if other blocks move back."""
    rng = np.random.default_rng(seed)
    n = 8
    t = _grid(rng.integers(1, 6, n * n), n, n, kind_freq=True)
    idx = {(r, c): r * (n + 1) + c for r in range(n + 1) for c in range(n + 1)}
    st = t.status.copy()
    prim = []
    for b in range(4):
        r, c = 1 + 2 * b, 1 + 2 * b
        st[[idx[r, c], idx[r, c + 1], idx[r + 1, c], idx[r + 1, c + 1]]] = "M"
        prim.append(idx[(r, c) if rng.random() < 0.5 else (r + 1, c + 1)])
    t = _with_primaries(t, prim, level=0.1)
    st[prim] = "U"
    return t, st


def _checker_after_figures(t, st):
    """An integer table's checker after it was offered every standard figure in turn
    (its internals then show which paths decided them)."""
    from tabprotect.public_summary import _form
    from tabprotect.public_summary.checker import Checker
    checker = Checker(t, st, True, 1e-6, None)
    for name, value in standard_figures(t, st).items():
        checker.try_release(*_form(name, value, t, st, None))
    return checker


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_count_ends_shown_by_other_components_moving_back(seed):
    # integer tables: an end point of one block keeps the figures once other blocks move
    # their parts back (integral moves found per block and cached); the released and
    # withheld figures are checked by the independent MILPs
    t, st = _blocks_count_table(seed)
    _check(t, st, integer=True)
    checker = _checker_after_figures(t, st)
    assert any(z is not None for z in checker.moves.shifts.values())   # the moves were used


def _random_3d_count_table(seed: int):
    """A 4x4x3 count table (totals included) with all but four inner cells suppressed:
    its LP vertices are often fractional, so integer ends need more than the LP."""
    import pandas as pd
    rng = np.random.default_rng(seed)
    shape = (4, 4, 3)
    hs = {d: Hierarchy.flat([f"{d}{i}" for i in range(n)], total="T")
          for d, n in zip("abc", shape)}
    frame = pd.DataFrame([(f"a{i}", f"b{j}", f"c{k}") for i in range(shape[0])
                          for j in range(shape[1]) for k in range(shape[2])],
                         columns=list("abc"))
    frame["n"] = rng.integers(0, 5, len(frame)).astype(float)
    t = Table.from_frame(frame, hs, value="n", freq="n", compute_totals=True,
                         kind="frequency")
    inner = np.flatnonzero(t.is_inner)
    st = t.status.copy()
    st[rng.choice(inner, size=len(inner) - 4, replace=False)] = "M"
    prim = rng.choice(np.flatnonzero(st == "M"), size=5, replace=False)
    t = _with_primaries(t, prim, level=0.1)
    st[prim] = "U"
    return t, st


@pytest.mark.parametrize("seed", [1, 2, 5])
def test_integer_ends_of_3d_count_tables(seed):
    # integer ends from LP vertices rounded inward (a cell fixed at the LP end's floor or
    # ceiling, an integral vertex found) or from MILPs: both against independent MILPs,
    # and the release decisions too
    t, st = _random_3d_count_table(seed)
    _check_base_intervals(t, st, True)
    _check(t, st, integer=True)


@pytest.mark.parametrize("seed", [2, 3, 15, 17])
def test_end_points_leaning_toward_the_figures_where_no_move_makes_them_up(seed):
    # tables where some end point moves the figures' parts further than the other
    # components make up, and a table at the same end leaning toward the parts' truth
    # is made up: the figures released (or withheld) pass the independent MILPs
    t, st = _random_3d_count_table(seed)
    _check(t, st, integer=True)
    checker = _checker_after_figures(t, st)
    assert checker.lean_odds.found > 0           # a leaning table was made up


def test_integral_vertex_fixes_the_cell_and_is_integral():
    import scipy.sparse as sp

    from solvers import LinearProgram
    from tabprotect.public_summary.systems import integral_vertex
    # x0 + x1 + x2 = 3 with each pair summing to at most 2: fixing x0 = 1 leaves the
    # integral vertex (1, 1, 1); x0 = 3 leaves no solution, x0 = 6 is past its bound
    A = sp.csr_matrix([[1, 1, 1], [1, 1, 0], [0, 1, 1], [1, 0, 1]], dtype=float)
    lp = LinearProgram(c=np.zeros(3), A=A, row_lower=[3, 0, 0, 0], row_upper=[3, 2, 2, 2],
                       col_lower=np.zeros(3), col_upper=np.full(3, 5.0))
    res = integral_vertex(lp, 0, 1.0, None)
    assert res is not None and res.x[0] == pytest.approx(1.0)
    assert np.allclose(res.x, np.round(res.x)) and A @ res.x == pytest.approx([3, 2, 2, 2])
    assert integral_vertex(lp, 0, 6.0, None) is None
    assert integral_vertex(lp, 0, 3.0, None) is None


def test_pace_gives_up_only_past_or_hopeless_deadlines():
    import time

    from tabprotect.public_summary.systems import Pace
    assert not Pace(None, 10).hopeless(9)                      # no deadline
    assert not Pace(time.monotonic() + 3600, 10).hopeless(9)   # pace not measured yet
    assert Pace(time.monotonic() - 1, 10).hopeless(10)         # no time and no progress


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_end_points_of_other_components_are_the_moves_looked_up_first(seed):
    # the components' integral end points without the figures are moves already: they
    # are among the moves of the figure under check (no solve of their own), and the
    # figures released with them pass the independent MILPs (_check)
    from tabprotect.public_summary import _form
    from tabprotect.public_summary.checker import Checker
    t, st = _blocks_count_table(seed)
    _check(t, st, integer=True)
    checker = Checker(t, st, True, 1e-6, None)
    for name, value in standard_figures(t, st).items():
        checker.try_release(*_form(name, value, t, st, None))
    ends = [y for per_sense in checker.ends.values() for y in per_sense.values()]
    moves = [z for z in checker.moves.shifts.values() if z is not None]
    assert moves and any(any(z is y for y in ends) for z in moves)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_figures_the_published_cells_determine(seed):
    # a figure is released as one the published cells determine (no row of the later
    # checks) exactly when its least and largest values over the intruder's system
    # (independent LPs over every cell, published cells fixed) agree
    from tabprotect.public_summary.checker import Checker
    rng = np.random.default_rng(seed)
    rows, cols = 4, 5
    t = _grid(rng.integers(1, 40, rows * cols), rows, cols)
    inner = [i for i in range(t.n_cells) if i // (cols + 1) > 0 and i % (cols + 1) > 0]
    t = _with_primaries(t, rng.choice(inner, size=3, replace=False))
    st = protect(t, method="hypercube", singleton=False).table.status
    sup = np.isin(st, ("U", "M"))
    lo = np.where(sup, t.lb, t.value)
    hi = np.where(sup, t.ub, t.value)
    A = t.relations.toarray()
    seen = set()
    half = sup & (rng.random(t.n_cells) < 0.5)
    for w in (sup * 1.0, (st == "M") * 1.0, (st == "U") * 1.0, half * 1.0):
        ends = [linprog(sign * w, A_eq=A, b_eq=np.zeros(A.shape[0]), bounds=list(zip(lo, hi)),
                        method="highs").fun * sign for sign in (1.0, -1.0)]
        fixed = abs(ends[1] - ends[0]) <= 1e-7 * max(1.0, abs(ends[0]))
        checker = Checker(t, st, False, 1e-6, None)
        reason = checker.try_release(w, float(w @ t.value))
        assert (len(checker.determined) == 1) == fixed
        assert not fixed or (reason is None and not checker.released)
        seen.add(fixed)
    assert seen == {True, False}


def test_vertex_odds_stop_looking_once_most_looks_fail():
    from tabprotect.public_summary.systems import VertexOdds
    odds = VertexOdds(first=4, share=0.5)
    for found in (False, True, False, True):
        assert odds.worth()
        odds.record(found)
    assert odds.worth()                  # two of four found one
    odds.record(False)
    assert not odds.worth()              # two of five: the MILP at once from here on


def _past_deadline(checker) -> None:
    """No time left for any solve of ``checker`` (its checks then end as "time")."""
    import time
    past = time.monotonic() - 1.0
    checker.deadline = checker.base.deadline = checker.ext.deadline = past


@pytest.mark.parametrize("integer", [False, True])
def test_a_figure_that_discloses_a_withheld_one_is_withheld_without_a_check(integer):
    # the four suppressed cells add up to the published total: value_secondary is the
    # total less the primary (it narrows), and value_primary tells the same; it is
    # withheld as narrowing with no time left for a check, while a figure that does
    # not disclose the withheld one runs out of time
    from tabprotect.public_summary import _form
    from tabprotect.public_summary.checker import Checker
    t = _grid([3, 2, 3, 2], 2, 2, kind_freq=integer)
    st = t.status.copy()
    st[[4, 5, 7, 8]] = ["U", "M", "M", "M"]
    t = _with_primaries(t, [4]).replace(status=st)
    figures = standard_figures(t, st)
    checker = Checker(t, st, integer, 1e-6, None)
    form = {k: _form(k, v, t, st, None) for k, v in figures.items()}
    assert checker.try_release(*form["value_suppressed"]) is None
    assert checker.try_release(*form["value_secondary"]) == "narrows"
    _past_deadline(checker)
    assert checker.try_release(*form["value_primary"]) == "narrows"
    one_cell = np.zeros(t.n_cells)
    one_cell[5] = 1.0
    assert checker.try_release(one_cell, float(t.value[5])) == "time"
    # the independent intervals: value_primary alone narrows the primary
    base = _intervals(t, st, [], integer)
    more = _intervals(t, st, [_forms(t, st, figures)["value_primary"]], integer)
    assert more[4] != pytest.approx(base[4])


@pytest.mark.parametrize("seed", range(6))
def test_withheld_figures_narrow_and_released_ones_do_not_on_small_tables(seed):
    # small 2-D tables, count (integer intervals) and magnitude, protected by the
    # optimal method: every released figure narrows no primary and every withheld one
    # narrows one, by the independent LPs and MILPs (_check)
    rng = np.random.default_rng(100 + seed)
    integer = seed % 2 == 1
    rows, cols = 3, 4
    t = _grid(rng.integers(1, 12, rows * cols), rows, cols, kind_freq=integer)
    inner = [i for i in range(t.n_cells) if i // (cols + 1) > 0 and i % (cols + 1) > 0]
    t = _with_primaries(t, rng.choice(inner, size=1 + seed % 3, replace=False))
    result = protect(t, method="optimal", time_limit=20)
    assert result.passed
    _check(t, result.table.status, integer=integer)


def _released_keep_every_interval(t, st, out) -> list[str]:
    """The released figures of ``out`` narrow no primary's integer interval (the
    independent MILPs); returns their names."""
    figures = standard_figures(t, st)
    forms = _forms(t, st, figures)
    released = [k for k in figures if k in out]
    base = _intervals(t, st, [], True)
    assert _intervals(t, st, [forms[k] for k in released], True) == base
    return released


def test_a_check_foreseen_late_withholds_its_figures_at_once():
    # a forecast that every integer check runs late (after its first timed search):
    # the figures that need one are withheld for time long before the time limit, and
    # what is released still narrows nothing by the independent MILPs
    import time

    from tabprotect.public_summary import Forecast
    t, st = _random_3d_count_table(124)
    start = time.monotonic()
    out = public_summary(t, st, time_limit=600.0,
                         forecast=Forecast(searches=1, witness_share=1e12))
    assert time.monotonic() - start < 60.0
    late = [k for k, why in out["withheld"].items() if why == REASONS["time"]]
    assert late
    released = _released_keep_every_interval(t, st, out)
    exact = public_summary(t, st, time_limit=None)
    assert any(k in exact for k in late)       # one the check without a limit releases
    assert set(released) <= set(exact) - {"withheld"}


@pytest.mark.parametrize("seed", [1, 15])
def test_a_check_that_finishes_releases_as_without_a_time_limit(seed):
    # the default forecast on checks that finish well within the limit: the same figures
    # as without a limit, the released ones narrowing nothing by the independent MILPs
    t, st = _random_3d_count_table(seed)
    out = public_summary(t, st, time_limit=600.0)
    assert out == public_summary(t, st, time_limit=None)
    assert REASONS["time"] not in out["withheld"].values()
    assert _released_keep_every_interval(t, st, out)


def test_forecast_waits_for_its_searches_and_weighs_the_ends_left():
    import time

    from tabprotect.public_summary.systems import Forecast, SearchClock
    clock = SearchClock()
    f = Forecast(searches=2)
    soon = time.monotonic() + 1.0
    clock.add(10.0)
    assert not f.late(clock, soon, 100, 100)          # one search timed: no forecast
    assert not f.late(clock, None, 100, 100)          # no deadline
    clock.add(10.0)
    assert f.late(clock, soon, 100, 100)              # 10 s a search, 1 s left
    assert not f.late(clock, time.monotonic() + 3600, 100, 100)
    assert not f.late(clock, soon, 0, 0)              # nothing left to do


def _many_primaries_table(seed):
    """A 12x14 magnitude table with zeros and 40 primaries, protected by hypercube."""
    rng = np.random.default_rng(seed)
    rows, cols = 12, 14
    t = _grid(rng.integers(1, 300, rows * cols) * rng.integers(0, 2, rows * cols),
              rows, cols)
    inner = [i for i in range(t.n_cells)
             if i // (cols + 1) > 0 and i % (cols + 1) > 0 and t.value[i] > 0]
    t = _with_primaries(t, rng.choice(inner, size=40, replace=False), level=0.15)
    return t, protect(t, method="hypercube", singleton=False).table.status


def test_a_figure_that_discloses_one_withheld_for_time_is_withheld_for_time():
    # value_secondary's check finds no time left; with time again, value_primary (which
    # with value_suppressed tells value_secondary) is withheld for time without a check,
    # though the independent LPs show it narrows nothing (_check releases every
    # figure), while a figure that discloses neither is checked
    from tabprotect.public_summary import _form
    from tabprotect.public_summary.checker import Checker
    t, st = _many_primaries_table(0)
    assert not _check(t, st)["withheld"]
    figures = standard_figures(t, st)
    form = {k: _form(k, v, t, st, None) for k, v in figures.items()}
    checker = Checker(t, st, False, 1e-6, None)
    assert checker.try_release(*form["value_suppressed"]) is None
    _past_deadline(checker)
    assert checker.try_release(*form["value_secondary"]) == "time"
    checker.deadline = checker.base.deadline = checker.ext.deadline = None
    assert checker.try_release(*form["value_primary"]) == "time"
    one_cell = np.zeros(t.n_cells)
    one_cell[np.flatnonzero(st == "M")[0]] = 1.0
    assert checker.try_release(one_cell, float(t.value[one_cell > 0][0])) != "time"


@pytest.mark.parametrize("limit", [0.02, 0.2])
def test_a_magnitude_check_out_of_time_releases_a_subset(limit):
    # a time limit that may stop the checks (each end's solve gives up once the pace
    # cannot finish): whatever is released is released without a limit too, and the
    # released figures together keep every primary's interval by the independent LPs
    t, st = _many_primaries_table(2)
    exact = public_summary(t, st, time_limit=None)
    out = public_summary(t, st, time_limit=limit)
    released = [k for k in standard_figures(t, st) if k in out]
    assert set(released) <= set(exact)
    assert set(out["withheld"]) >= set(exact["withheld"])
    forms = _forms(t, st, standard_figures(t, st))
    base = _intervals(t, st, [], False)
    kept = _intervals(t, st, [forms[k] for k in released], False)
    for j, ends in base.items():
        assert kept[j] == pytest.approx(ends, rel=1e-6, abs=1e-6), j


def test_a_published_table_is_refused_with_one_line_naming_the_confidential_one():
    # a ProtectResult's .table has no values for its suppressed cells: the figures need
    # the true ones, and the call says which table to give instead of failing in an LP
    from tabprotect.errors import InputError
    t = _with_primaries(_grid([3, 2, 3, 2], 2, 2), [4])
    res = protect(t, method="optimal", cost="unity")
    with pytest.raises(InputError, match="confidential_table"):
        public_summary(res.table)
    out = public_summary(res.confidential_table)
    assert out["primary"] == 1 and out["secondary"] == res.n_secondary


@pytest.mark.parametrize("power", [60, -40])
def test_figures_of_a_table_far_from_unit_values_are_judged_as_at_unit_values(power):
    # values near 1e20 (or 1e-12): the checks run in the units the solvers handle, and
    # release exactly what they release on the same table at ordinary values
    from tabprotect.model.scale import scaled_table
    rng = np.random.default_rng(2)
    t = _with_primaries(_grid(rng.integers(5, 60, 16), 4, 4), [6, 18])
    status = protect(t, method="optimal", cost="value").status
    w = (status == "M") * 1.0                      # a cost figure with value weights
    forms = {"cost": w}
    plain = public_summary(t, status, dict(standard_figures(t, status),
                                           cost=float(w @ t.value)), forms=forms)
    big = scaled_table(t, 2.0 ** power)
    far = public_summary(big, status, dict(standard_figures(big, status),
                                           cost=float(w @ big.value)), forms=forms)
    assert set(far) == set(plain) and far["withheld"] == plain["withheld"]
    assert any(k not in ("cells", "primary", "secondary", "suppressed", "withheld")
               for k in plain)                     # some figure is released
    for k in set(plain) - {"withheld", "share_value_suppressed"}:
        assert far[k] == plain[k] * (1 if k in ("cells", "primary", "secondary",
                                                 "suppressed") else 2.0 ** power)
