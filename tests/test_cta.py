"""Controlled tabular adjustment: the tau-Argus manual's worked example, brute force over
the directions on small tables, and properties checked from the published values alone."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from tabprotect.adjust import CTAOptions, CTAResult, cta
from tabprotect.errors import InputError
from tabprotect.model import Hierarchy, Table
from tabprotect.results import Result
from tabprotect.secondary import METHODS, describe_methods, protect

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "cta"


def argus_table() -> Table:
    """The 3 x 3 table of the tau-Argus manual's CTA example (fixtures/cta)."""
    cells = pd.read_csv(FIXTURES / "argus_3x3.csv")
    rows = Hierarchy.flat(["M1", "M2", "M3"], total="T")
    cols = Hierarchy.flat(["P1", "P2", "P3"], total="T")
    return Table.from_frame(cells.rename(columns={"row": "r", "col": "c"}),
                            {"r": rows, "c": cols}, status="status", upl="upl", lpl="lpl",
                            compute_totals=True)


def product_table(inner: np.ndarray, sensitive, levels) -> Table:
    """A 2-D table with totals from its inner cells; ``sensitive`` inner (i, j) cells get
    equal upper and lower levels."""
    r, c = inner.shape
    rows = Hierarchy.flat([f"r{i}" for i in range(r)], total="T")
    cols = Hierarchy.flat([f"c{j}" for j in range(c)], total="T")
    full = np.zeros((r + 1, c + 1))
    full[1:, 1:] = inner
    full[0, 1:], full[1:, 0], full[0, 0] = inner.sum(0), inner.sum(1), inner.sum()
    t = Table.from_arrays({"r": rows, "c": cols}, full.ravel())
    status, level = t.status.copy(), np.zeros(t.n_cells)
    for (i, j), lv in zip(sensitive, levels):
        k = (i + 1) * (c + 1) + (j + 1)
        status[k], level[k] = "U", lv
    return t.replace(status=status, upl=level, lpl=level)


def independent_check(table: Table, y: np.ndarray, fixed: np.ndarray, tol=1e-6) -> None:
    """Protection, additivity, bounds and fixed cells, from the published values only."""
    x = table.value
    scale = np.maximum(1.0, np.abs(x))
    assert np.all(np.isfinite(y))
    assert np.abs(table.relations @ y).max() <= tol * max(1.0, np.abs(y).max())
    sens = np.flatnonzero((table.status == "U") & ((table.upl > 0) | (table.lpl > 0)))
    for s in sens:
        assert (y[s] >= x[s] + table.upl[s] - tol * scale[s]
                or y[s] <= x[s] - table.lpl[s] + tol * scale[s]), s
    assert np.all(y >= table.lb - tol * scale) and np.all(y <= table.ub + tol * scale)
    assert np.allclose(y[fixed], x[fixed], atol=tol)


def l1_for_directions(table: Table, weights: np.ndarray, fixed: np.ndarray,
                      ups) -> float:
    """The least weighted L1 adjustment for one choice of directions (``ups``, one per
    sensitive cell), one LP (scipy linprog): variables p, q >= 0 with y = x + p - q;
    inf when the directions admit none."""
    x, A = table.value, table.relations.toarray()
    n = len(x)
    sens = np.flatnonzero((table.status == "U") & ((table.upl > 0) | (table.lpl > 0)))
    lo_p, hi_p = np.zeros(n), np.where(fixed, 0.0, np.inf)
    lo_q, hi_q = np.zeros(n), np.where(fixed, 0.0, np.maximum(x - table.lb, 0))
    for s, up in zip(sens, ups):
        if up:
            lo_p[s], hi_q[s] = table.upl[s], 0.0
        else:
            lo_q[s], hi_p[s] = table.lpl[s], 0.0
    if np.any(lo_q > hi_q) or np.any(lo_p > hi_p):
        return np.inf
    res = linprog(np.concatenate([weights, weights]), A_eq=np.hstack([A, -A]),
                  b_eq=np.zeros(A.shape[0]),
                  bounds=list(zip(np.concatenate([lo_p, lo_q]),
                                  np.concatenate([hi_p, hi_q]))), method="highs")
    return res.fun if res.status == 0 else np.inf


def brute_force_l1(table: Table, weights: np.ndarray, fixed: np.ndarray) -> float:
    """The least weighted L1 adjustment over every choice of directions."""
    k = int(((table.status == "U") & ((table.upl > 0) | (table.lpl > 0))).sum())
    return min((l1_for_directions(table, weights, fixed, ups)
                for ups in itertools.product((True, False), repeat=k)), default=np.inf)


# ---------------------------------------------------------------- the worked example
def test_argus_example_least_adjustment_is_15_each_way_besides_the_cell_itself():
    t = argus_table()
    s = t.cell("M2", "P3")
    assert t.value[t.cell("T", "T")] == 309 and t.value[s] == 40
    for direction, sign in (("down", -1), ("up", 1)):
        res = protect(t, method="cta", margin=0, cost="unity", fix_totals=True, directions=direction)
        d = res.adjusted - t.value
        assert res.passed and res.proven_optimal
        assert d[s] == pytest.approx(5 * sign)
        others = np.abs(np.delete(d, s)).sum()
        assert others == pytest.approx(15.0)          # the manual's 15
        assert res.objective == pytest.approx(20.0)   # with the cell's own 5
        independent_check(t, res.adjusted, ~t.is_inner)
    free = protect(t, method="cta", margin=0, cost="unity", fix_totals=True, directions="free")
    assert free.proven_optimal and free.objective == pytest.approx(20.0)
    assert 0.0 <= free.mip_gap <= CTAOptions().mip_gap
    auto = protect(t, method="cta", margin=0, cost="unity", fix_totals=True)
    assert auto.solver_status == "heuristic" and not auto.proven_optimal
    assert auto.objective == pytest.approx(20.0) and auto.passed
    independent_check(t, auto.adjusted, ~t.is_inner)


def test_argus_example_l2_is_the_rank_one_projection():
    # with totals fixed, the least-squares change with d[M2,P3] = -5 is alpha u v' with
    # u = e2 - 1/3, v = e3 - 1/3, alpha u2 v3 = -5: alpha = -45/4 and
    # sum d^2 = alpha^2 |u|^2 |v|^2 = (45/4)^2 (2/3)^2 = 56.25
    t = argus_table()
    res = cta(t, margin=0, cost="unity", fix_totals=True, distance="L2", directions="down")
    assert res.passed and res.objective == pytest.approx(56.25, rel=1e-6)
    assert res.adjusted[t.cell("M1", "P1")] == pytest.approx(20 - 1.25, abs=1e-6)
    heur = cta(t, margin=0, cost="unity", fix_totals=True, distance="L2")
    assert heur.objective == pytest.approx(56.25, rel=1e-6)   # up and down are symmetric


# ---------------------------------------------------------------- brute force
@pytest.mark.parametrize("seed", range(8))
def test_milp_matches_brute_force_over_directions(seed):
    rng = np.random.default_rng(seed)
    r, c = rng.integers(2, 5, size=2)
    inner = rng.integers(1, 40, size=(r, c)).astype(float)
    k = int(rng.integers(1, min(4, r * c) + 1))
    cells = rng.choice(r * c, size=k, replace=False)
    sens = [divmod(int(i), int(c)) for i in cells]
    levels = [max(1.0, np.floor(0.3 * inner[i, j])) for i, j in sens]
    t = product_table(inner, sens, levels)
    fix_totals = bool(rng.integers(2))
    cost = ["unity", "relative"][int(rng.integers(2))]
    fixed = ~t.is_inner if fix_totals else np.zeros(t.n_cells, bool)
    weights = np.ones(t.n_cells) if cost == "unity" else 1.0 / np.abs(t.value)
    best = brute_force_l1(t, weights, fixed)
    if not np.isfinite(best):
        with pytest.raises(InputError):
            cta(t, margin=0, cost=cost, fix_totals=fix_totals)
        return
    res = cta(t, margin=0, cost=cost, fix_totals=fix_totals, mip_gap=0.0, directions="free")
    assert res.proven_optimal and res.passed
    assert res.objective == pytest.approx(best, rel=1e-6, abs=1e-9)
    independent_check(t, res.adjusted, fixed)
    heur = cta(t, margin=0, cost=cost, fix_totals=fix_totals, directions="heuristic")
    assert heur.objective >= best - 1e-6 * max(1.0, best)
    if heur.mip_gap is not None:     # its stated gap is a true bound
        assert best >= heur.objective * (1 - heur.mip_gap) - 1e-6 * max(1.0, best)


def random_case(seed: int, most: int = 5):
    """A random 2-D table with up to ``most`` sensitive inner cells, its weights and fixed
    cells."""
    rng = np.random.default_rng(seed)
    r, c = rng.integers(2, 5, size=2)
    inner = rng.integers(1, 40, size=(r, c)).astype(float)
    k = int(rng.integers(2, min(most, r * c) + 1))
    cells = rng.choice(r * c, size=k, replace=False)
    sens = [divmod(int(i), int(c)) for i in cells]
    t = product_table(inner, sens, [max(1.0, np.floor(0.3 * inner[i, j])) for i, j in sens])
    fix_totals = bool(rng.integers(2))
    cost = ["unity", "relative"][int(rng.integers(2))]
    fixed = ~t.is_inner if fix_totals else np.zeros(t.n_cells, bool)
    weights = np.ones(t.n_cells) if cost == "unity" else 1.0 / np.abs(t.value)
    return t, cost, weights, fix_totals, fixed, rng


@pytest.mark.parametrize("seed", range(8))
def test_a_flip_skipped_by_its_dual_bound_could_not_have_paid(seed):
    # the heuristic skips a flip's re-solve when the bound from the current LP's reduced
    # costs is not below the current distance: that bound must be below the flipped
    # directions' least distance, solved here by scipy's linprog
    from solvers import solve
    from tabprotect.adjust.problem import CTAProblem
    from tabprotect.adjust.search import DirectionSearch
    from tabprotect.budget import Budget
    t, cost, weights, fix_totals, fixed, rng = random_case(seed)
    p = CTAProblem(t, weights, CTAOptions(fix_totals=fix_totals))
    search = DirectionSearch(p, Budget(None))
    checked = 0
    for ups in itertools.product((True, False), repeat=p.k):
        up = np.where(p.can_up & p.can_down, ups, p.can_up)
        res = solve(p.fixed_lp(up))
        if res.status != "optimal":
            continue
        value = p.objective(p.net(res.x))
        for s in np.flatnonzero(p.can_up & p.can_down):
            bound = search._flip_bound(res.reduced_costs, res.x, value, up, int(s))
            flipped = up.copy()
            flipped[s] = ~flipped[s]
            exact = l1_for_directions(t, weights, fixed, flipped) / p.unit
            assert bound <= exact + 1e-7 * max(1.0, abs(exact))
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("seed", range(12))
def test_heuristic_states_a_true_gap_and_free_reaches_the_optimum(seed):
    t, cost, weights, fix_totals, fixed, _ = random_case(seed, most=6)
    best = brute_force_l1(t, weights, fixed)
    if not np.isfinite(best):
        return
    heur = cta(t, margin=0, cost=cost, fix_totals=fix_totals)        # auto: the heuristic
    assert heur.solver_status == "heuristic" and heur.passed
    independent_check(t, heur.adjusted, fixed)
    assert heur.objective == pytest.approx(
        float(weights @ np.abs(heur.adjusted - t.value)), rel=1e-9, abs=1e-12)
    assert heur.objective >= best - 1e-6 * max(1.0, best)
    if heur.mip_gap is not None:
        assert best >= heur.objective * (1 - heur.mip_gap) - 1e-6 * max(1.0, best)
    free = cta(t, margin=0, cost=cost, fix_totals=fix_totals, directions="free")
    assert free.proven_optimal and 0.0 <= free.mip_gap <= CTAOptions().mip_gap
    assert best >= free.objective * (1 - free.mip_gap) - 1e-6 * max(1.0, best)
    assert free.objective <= heur.objective * (1 + 1e-9) + 1e-12
    independent_check(t, free.adjusted, fixed)


# ---------------------------------------------------------------- properties
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), distance=st.sampled_from(["L1", "L2"]),
       directions=st.sampled_from(["auto", "free", "heuristic", "up", "down"]),
       three_d=st.booleans(), bounded=st.booleans())
def test_adjusted_tables_are_additive_protected_and_bounded(seed, distance, directions,
                                                            three_d, bounded):
    assume(not (distance == "L2" and directions == "free"))   # no mixed-integer QP
    rng = np.random.default_rng(seed)
    if three_d:
        dims = {f"d{i}": Hierarchy.flat([f"{i}{j}" for j in range(int(rng.integers(2, 4)))],
                                        total="T") for i in range(3)}
        leaf = {k: h for k, h in dims.items()}
        from tabprotect.model.table import aggregate_leaves
        shape = tuple(len(h) for h in leaf.values())
        v = np.zeros(shape)
        v[(slice(1, None),) * 3] = rng.integers(0, 30, size=tuple(s - 1 for s in shape))
        t = Table.from_arrays(dims, aggregate_leaves(v.ravel(), list(leaf.values())))
    else:
        r, c = rng.integers(2, 6, size=2)
        t = product_table(rng.integers(0, 30, size=(r, c)).astype(float), [], [])
    inner = np.flatnonzero(t.is_inner & (t.value > 0))
    if len(inner) == 0:
        return
    sens = rng.choice(inner, size=min(len(inner), int(rng.integers(1, 4))), replace=False)
    status, level = t.status.copy(), np.zeros(t.n_cells)
    status[sens] = "U"
    level[sens] = np.maximum(1.0, np.round(0.25 * t.value[sens]))
    ub = t.value + np.where(bounded, 3 * level.max() + 5, np.inf)
    t = t.replace(status=status, upl=level, lpl=level, ub=ub)
    fixed = t.status == "Z"
    try:
        res = cta(t, distance=distance, directions=directions, time_limit=20)
    except InputError as exc:
        # only a choice of directions the bounds forbid (all down on a small cell) or no
        # adjustment at all may be refused; the free search then finds none either
        assert "cannot go" in str(exc) or "no adjustment" in str(exc)
        if directions in ("up", "down"):
            return
        with pytest.raises(InputError):
            cta(t, distance="L1", directions="free")
        return
    independent_check(t, res.adjusted, fixed)
    assert res.passed


# ---------------------------------------------------------------- settings and result
def test_given_directions_are_followed_and_checked():
    t = argus_table()
    s = t.cell("M2", "P3")
    direction = np.zeros(t.n_cells)
    direction[s] = -1
    res = cta(t.replace(extra={"direction": direction}), margin=0, cost="unity", fix_totals=True,
              directions="given")
    assert res.adjusted[s] == pytest.approx(35.0) and res.directions[s] == -1
    direction[s] = 0
    with pytest.raises(InputError, match="not \\+1 or -1"):
        cta(t.replace(extra={"direction": direction}), directions="given")
    with pytest.raises(InputError, match="direction"):
        cta(t, directions="given")


def test_bounds_and_fixed_cells_are_kept():
    t = argus_table()
    s = t.cell("M2", "P3")
    # a cell at its upper bound cannot go up; P cells keep their values
    ub = np.full(t.n_cells, np.inf)
    ub[s] = 40.0 + 2
    status = t.status.copy()
    p = t.cell("M1", "P1")
    status[p] = "P"
    t2 = t.replace(ub=ub, status=status)
    res = cta(t2, margin=0, cost="unity", fix_totals=True)
    assert res.adjusted[s] == pytest.approx(35.0)
    assert res.adjusted[p] == t.value[p]
    independent_check(t2, res.adjusted, (~t.is_inner) | (status == "P"))
    with pytest.raises(InputError, match="cannot go up"):
        cta(t2, fix_totals=True, directions="up")


def test_max_change_limits_non_sensitive_cells():
    t = argus_table()
    res = cta(t, margin=0, cost="unity", max_change=0.2)
    d = np.abs(res.adjusted - t.value)
    sens = t.status == "U"
    assert np.all(d[~sens] <= 0.2 * np.abs(t.value[~sens]) + 1e-6)
    assert res.passed


def test_integer_changes_on_counts():
    t = argus_table().replace(kind="frequency")
    t = t.replace(upl=np.where(t.status == "U", 4.5, 0.0), lpl=np.where(t.status == "U",
                                                                        4.5, 0.0))
    res = cta(t, margin=0, cost="relative", integer=True)
    assert np.allclose(res.adjusted, np.round(res.adjusted))
    assert res.passed and abs(res.adjusted[t.cell("M2", "P3")] - 40) >= 5


def test_result_protocol_publishes_values_without_statuses_or_true_values():
    t = argus_table()
    res = protect(t, method="cta", margin=0, cost="unity", fix_totals=True)
    assert isinstance(res, CTAResult) and isinstance(res, Result)
    pub = res.published()
    assert list(pub.columns) == ["r", "c", "value"]
    assert np.allclose(pub["value"], res.adjusted)
    plain = res.to_frame()
    assert "confidential_value" not in plain and "direction" not in plain
    full = res.to_frame(confidential=True)
    assert np.allclose(full["confidential_value"], t.value)
    assert (res.table.status == "S").all() and (res.table.upl == 0).all()
    s = res.summary()
    assert s["audit"] == "PASSED" and s["sensitive"] == 1 and s["l1"] == pytest.approx(20)
    assert res.params["fix_totals"] is True and res.params["cost"] == "unity"
    assert res.params["distance"] == "L1"


def test_registered_with_its_options():
    assert METHODS["cta"].capabilities.adjusts_values
    d = describe_methods()["cta"]
    assert d["options"]["distance"]["default"] == "L1" and d["options"]["distance"]["why"]
    assert all(v["why"] for v in d["options"].values())


@pytest.mark.parametrize("kwargs, match", [
    ({"singleton": False}, "suppression only"),
    ({"repair": False}, "suppression only"),
    ({"engine": "x"}, "unknown option"),
    ({"distance": "L3"}, "distance"),
    ({"distance": "L2", "directions": "free"}, "mixed-integer QP"),
    ({"cost": "nonsense"}, "unknown cta cost"),
])
def test_bad_settings_are_one_clear_error(kwargs, match):
    with pytest.raises(InputError, match=match):
        protect(argus_table(), method="cta", **kwargs)


def test_a_fixed_sensitive_cell_is_refused_by_name_without_its_value():
    t = argus_table()
    status = t.status.copy()
    status[t.cell("T", "T")] = "U"
    t = t.replace(status=status, upl=np.where(status == "U", 5.0, 0.0))
    with pytest.raises(InputError) as err:
        cta(t, fix_totals=True)
    assert "(r=T, c=T)" in str(err.value) and "309" not in str(err.value)


def test_time_limit_returns_the_best_adjustment_with_its_gap():
    rng = np.random.default_rng(7)
    dims = {f"d{i}": Hierarchy.flat([f"{i}{j}" for j in range(7)], total="T")
            for i in range(3)}
    from tabprotect.model.table import aggregate_leaves
    v = np.zeros((8, 8, 8))
    v[1:, 1:, 1:] = rng.integers(1, 100, size=(7, 7, 7))
    t = Table.from_arrays(dims, aggregate_leaves(v.ravel(), list(dims.values())))
    sens = rng.choice(np.flatnonzero(t.is_inner), size=60, replace=False)
    status = t.status.copy()
    status[sens] = "U"
    level = np.where(status == "U", np.maximum(1.0, 0.3 * t.value), 0.0)
    t = t.replace(status=status, upl=level, lpl=level)
    res = cta(t, time_limit=2.0, options=CTAOptions(margin=0, mip_gap=0.0, directions="free"))
    assert res.seconds < 2.0 + 3.0
    assert res.passed
    assert res.proven_optimal or res.mip_gap is not None
    independent_check(t, res.adjusted, t.status == "Z")


def test_l2_bounds_left_out_of_the_qp_are_checked_and_kept():
    # one relation T = s1 + ... + s11 + c + e, T fixed: the eleven sensitive cells go up
    # by 1 and c (cheap) and e give back 11; c's lower bound is 10.5 below it -- more than
    # ten levels, so the first QP leaves it out, breaks it, and is solved again with it
    codes = [f"s{i}" for i in range(1, 12)] + ["c", "e"]
    h = Hierarchy.flat(codes, total="T")
    inner = np.array([5.0] * 11 + [100.0, 50.0])
    t = Table.from_arrays({"x": h}, np.concatenate([[inner.sum()], inner]))
    status = np.array(["S"] + ["U"] * 11 + ["S", "S"])
    level = np.where(status == "U", 1.0, 0.0)
    lb = np.zeros(t.n_cells)
    lb[t.cell("c")] = 89.5
    t = t.replace(status=status, upl=level, lpl=level, lb=lb)
    weights = np.ones(t.n_cells)
    weights[t.cell("c")] = 1e-3
    res = cta(t, margin=0, cost=weights, distance="L2", directions="up", fix_totals=True)
    assert res.passed
    assert res.adjusted[t.cell("c")] == pytest.approx(89.5, abs=1e-6)
    assert res.adjusted[t.cell("e")] == pytest.approx(49.5, abs=1e-6)
    assert any("solved again" in n for n in res.notes)
    independent_check(t, res.adjusted, ~t.is_inner)
