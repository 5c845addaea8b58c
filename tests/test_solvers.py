"""Tests of the solvers package: every LP / MILP goes through every backend."""

from __future__ import annotations

import dataclasses
import itertools

import highspy
import numpy as np
import pytest
import scipy.sparse as sp

from solvers import BACKENDS, HighsModel, LinearProgram, SolveResult, available_backends, solve

try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    HAVE_HYPOTHESIS = True
except ImportError:  # pragma: no cover
    HAVE_HYPOTHESIS = False

BACKEND_LIST = available_backends()
backends = pytest.mark.parametrize("backend", BACKEND_LIST)
INF = np.inf


def _tol(backend: str) -> float:
    # CBC's solution file carries ~8 significant digits.
    return 1e-5 if backend == "pulp" else 1e-7


def _check_feasible(lp: LinearProgram, x: np.ndarray, tol: float = 1e-6) -> None:
    ax = lp.A @ x if lp.n_rows else np.zeros(0)
    assert np.all(ax >= lp.row_lower - tol) and np.all(ax <= lp.row_upper + tol)
    assert np.all(x >= lp.col_lower - tol) and np.all(x <= lp.col_upper + tol)
    if lp.is_mip:
        xi = x[lp.integrality]
        assert np.allclose(xi, np.round(xi), atol=1e-6)


# ---------------------------------------------------------------- API basics
def test_backends_listed():
    assert set(BACKENDS) == {"highs", "pulp", "scipy"}
    assert "highs" in BACKEND_LIST


def test_unknown_backend_lists_available():
    lp = LinearProgram(c=np.ones(1), A=None, row_lower=[], row_upper=[])
    with pytest.raises(ValueError, match="available backends: .*highs"):
        solve(lp, backend="gurobi_magic")


def test_validation_errors():
    with pytest.raises(ValueError, match="columns"):
        LinearProgram(c=np.ones(3), A=sp.csr_matrix(np.ones((2, 2))),
                      row_lower=np.zeros(2), row_upper=np.ones(2))
    with pytest.raises(ValueError, match="row_lower has length"):
        LinearProgram(c=np.ones(2), A=sp.csr_matrix(np.ones((2, 2))),
                      row_lower=np.zeros(3), row_upper=np.ones(2))
    with pytest.raises(ValueError, match="col_lower > col_upper"):
        LinearProgram(c=np.ones(2), A=None, row_lower=[], row_upper=[],
                      col_lower=[1, 0], col_upper=[0, 1])
    with pytest.raises(ValueError, match="sense"):
        LinearProgram(c=np.ones(1), A=None, row_lower=[], row_upper=[], sense="up")


def test_linear_program_defaults_and_csr():
    lp = LinearProgram(c=[1, 2], A=np.array([[1, 1]]), row_lower=[0], row_upper=[1])
    assert sp.isspmatrix_csr(lp.A) and lp.A.dtype == np.float64
    assert lp.n_cols == 2 and lp.n_rows == 1 and not lp.is_mip
    assert np.all(lp.col_lower == 0) and np.all(np.isinf(lp.col_upper))
    lp2 = LinearProgram(c=[1, 2], A=None, row_lower=[], row_upper=[], integrality=[True, False])
    assert lp2.is_mip and lp2.n_rows == 0


# ---------------------------------------------------------------- LPs
def _small_lp(sense="max"):
    # max 3x + 2y  s.t.  x + y <= 4,  x + 3y <= 6,  0 <= x <= 3,  y >= 0
    # optimum x=3, y=1, obj 11; duals (0, 2/3); reduced costs (7/3, 0)
    c = np.array([3.0, 2.0]) if sense == "max" else np.array([-3.0, -2.0])
    return LinearProgram(c=c, A=sp.csr_matrix([[1.0, 1.0], [1.0, 3.0]]),
                         row_lower=[-INF, -INF], row_upper=[4.0, 6.0],
                         col_upper=[3.0, INF], sense=sense, offset=1.0)


@backends
@pytest.mark.parametrize("sense", ["max", "min"])
def test_small_lp_optimum_and_duals(backend, sense):
    lp = _small_lp(sense)
    res = solve(lp, backend=backend)
    assert isinstance(res, SolveResult) and res.backend == backend
    assert res.status == "optimal" and res.proven_optimal and res.has_solution
    sign = 1.0 if sense == "max" else -1.0
    assert res.objective == pytest.approx(sign * 11.0 + 1.0, abs=_tol(backend))
    np.testing.assert_allclose(res.x, [3.0, 1.0], atol=_tol(backend))
    # duals: derivative of the optimal objective w.r.t. the active bound (HiGHS convention)
    assert res.duals is not None and res.reduced_costs is not None
    np.testing.assert_allclose(res.duals, sign * np.array([0.0, 2 / 3]), atol=_tol(backend))
    np.testing.assert_allclose(res.reduced_costs, sign * np.array([7 / 3, 0.0]),
                               atol=_tol(backend))
    # c = A' y + z
    np.testing.assert_allclose(lp.A.T @ res.duals + res.reduced_costs, lp.c, atol=1e-5)
    assert res.mip_gap is None and res.runtime >= 0 and res.log_summary


@backends
def test_ge_rows_duals(backend):
    # min x + y  s.t.  x + 2y >= 4,  4 <= 3x + y <= 100  -> (1.6, 1.2), duals (0.4, 0.2)
    lp = LinearProgram(c=np.array([1.0, 1.0]), A=sp.csr_matrix([[1.0, 2.0], [3.0, 1.0]]),
                       row_lower=[4.0, 6.0], row_upper=[INF, 100.0])
    res = solve(lp, backend=backend)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(2.8, abs=_tol(backend))
    np.testing.assert_allclose(res.duals, [0.4, 0.2], atol=_tol(backend))


@backends
def test_equality_rows_and_free_variables(backend):
    # min x0 + x1 + x2 s.t. x0 - x1 = 2, x1 + x2 = 1, x0 free, x1 free, x2 in [-5, 5]
    # -> obj = (2 + x1) + x1 + (1 - x1) = 3 + x1, x1 bounded by x2 = 1 - x1 <= 5 -> x1 >= -4
    lp = LinearProgram(c=np.ones(3), A=sp.csr_matrix([[1.0, -1.0, 0.0], [0.0, 1.0, 1.0]]),
                       row_lower=[2.0, 1.0], row_upper=[2.0, 1.0],
                       col_lower=[-INF, -INF, -5.0], col_upper=[INF, INF, 5.0])
    res = solve(lp, backend=backend)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(-1.0, abs=_tol(backend))
    np.testing.assert_allclose(res.x, [-2.0, -4.0, 5.0], atol=_tol(backend))
    _check_feasible(lp, res.x)
    # the duals certify the optimum: c = A'y + z
    np.testing.assert_allclose(lp.A.T @ res.duals + res.reduced_costs, lp.c, atol=1e-5)


@backends
def test_lp_without_rows(backend):
    lp = LinearProgram(c=np.array([1.0, -2.0, 0.0]), A=None, row_lower=[], row_upper=[],
                       col_lower=[1.0, -1.0, 0.0], col_upper=[4.0, 3.0, 1.0], offset=0.5)
    res = solve(lp, backend=backend)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(1.0 - 6.0 + 0.5, abs=_tol(backend))
    np.testing.assert_allclose(res.x[:2], [1.0, 3.0], atol=_tol(backend))


@backends
def test_infeasible_lp(backend):
    lp = LinearProgram(c=np.ones(2), A=sp.csr_matrix([[1.0, 1.0], [1.0, 1.0]]),
                       row_lower=[5.0, -INF], row_upper=[INF, 3.0])
    res = solve(lp, backend=backend)
    assert res.status == "infeasible"
    assert not res.has_solution and res.x is None and res.objective is None


@backends
@pytest.mark.parametrize("mip", [False, True])
def test_unbounded(backend, mip):
    lp = LinearProgram(c=np.array([-1.0, -1.0]), A=sp.csr_matrix([[1.0, -1.0]]),
                       row_lower=[-INF], row_upper=[1.0],
                       integrality=np.array([mip, mip]))
    res = solve(lp, backend=backend)
    assert res.status == "unbounded"
    assert not res.has_solution


@backends
def test_infeasible_mip(backend):
    lp = LinearProgram(c=np.ones(2), A=sp.csr_matrix([[2.0, 2.0]]), row_lower=[1.0],
                       row_upper=[1.0], integrality=np.array([True, True]))
    assert solve(lp, backend=backend).status == "infeasible"


# ---------------------------------------------------------------- MILPs
def _knapsack(seed=3, n=10):
    rng = np.random.default_rng(seed)
    w = rng.integers(1, 20, size=n).astype(float)
    v = rng.integers(1, 30, size=n).astype(float)
    cap = float(np.floor(w.sum() / 2))
    return w, v, cap


def _brute_force_knapsack(w, v, cap):
    best = 0.0
    for bits in itertools.product([0, 1], repeat=len(w)):
        b = np.array(bits)
        if w @ b <= cap:
            best = max(best, float(v @ b))
    return best


@backends
@pytest.mark.parametrize("seed", [3, 7])
def test_knapsack_matches_brute_force(backend, seed):
    w, v, cap = _knapsack(seed)
    lp = LinearProgram(c=v, A=sp.csr_matrix(w[None, :]), row_lower=[-INF], row_upper=[cap],
                       col_upper=np.ones(len(w)), integrality=np.ones(len(w), bool),
                       sense="max")
    res = solve(lp, backend=backend)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(_brute_force_knapsack(w, v, cap), abs=1e-6)
    _check_feasible(lp, res.x)
    assert res.duals is None
    assert res.mip_gap is None or res.mip_gap <= 1e-4


@backends
def test_general_integer_min(backend):
    # min 3x + 5y  s.t. 2x + 3y >= 7 (x, y integer >= 0): best 11 (x=2, y=1)
    lp = LinearProgram(c=np.array([3.0, 5.0]), A=sp.csr_matrix([[2.0, 3.0]]),
                       row_lower=[7.0], row_upper=[INF], integrality=np.array([True, True]))
    res = solve(lp, backend=backend)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(11.0, abs=1e-6)


def _hard_knapsack():
    # 60 items, 5 correlated constraints: HiGHS does not close the gap in 20 s, so a
    # short limit always stops the search (but an "optimal" answer is still accepted).
    rng = np.random.default_rng(0)
    n, k = 60, 5
    W = rng.integers(20, 100, size=(k, n)).astype(float)
    v = W.sum(0) + rng.integers(-10, 10, size=n)
    return LinearProgram(c=v, A=sp.csr_matrix(W), row_lower=np.full(k, -INF),
                         row_upper=W.sum(1) / 2, col_upper=np.ones(n),
                         integrality=np.ones(n, bool), sense="max")


@pytest.mark.slow
@backends
def test_time_limit_is_honoured_in_seconds(backend):
    # wall clock: slow step only (generous: CBC start-up, a loaded machine)
    res = solve(_hard_knapsack(), backend=backend, time_limit=0.05)
    assert res.runtime < 10.0


@backends
def test_time_limit(backend):
    lp = _hard_knapsack()
    res = solve(lp, backend=backend, time_limit=0.05)
    assert res.status in {"time_limit", "time_limit_no_solution", "optimal"}
    if res.status == "time_limit":
        assert res.has_solution and not res.proven_optimal
        _check_feasible(lp, res.x)
        assert res.objective == pytest.approx(lp.c @ res.x)
    elif res.status == "time_limit_no_solution":
        assert not res.has_solution and res.x is None
    else:
        _check_feasible(lp, res.x)


@backends
def test_mip_gap_option(backend):
    lp = _hard_knapsack()
    res = solve(lp, backend=backend, mip_gap=0.05, time_limit=5.0)
    assert res.status in {"optimal", "time_limit"}
    _check_feasible(lp, res.x)


# ---------------------------------------------------------------- HighsModel
def _polytope():
    # a 2 x 3 table with margins: 6 inner cells, 2 row totals, 3 column totals, 1 grand
    # total; cells 0, 1, 3, 4 suppressed (bounds [0, inf)), the rest fixed.
    X = np.array([[5.0, 3.0, 7.0], [2.0, 8.0, 4.0]])
    vals = np.concatenate([X.ravel(), X.sum(1), X.sum(0), [X.sum()]])
    n = vals.size
    rows = []
    for i in range(2):
        r = np.zeros(n); r[3 * i:3 * i + 3] = 1; r[6 + i] = -1; rows.append(r)
    for j in range(3):
        r = np.zeros(n); r[[j, 3 + j]] = 1; r[8 + j] = -1; rows.append(r)
    r = np.zeros(n); r[6:8] = 1; r[11] = -1; rows.append(r)
    A = sp.csr_matrix(np.array(rows))
    supp = np.zeros(n, bool); supp[[0, 1, 3, 4]] = True
    lo = np.where(supp, 0.0, vals); up = np.where(supp, INF, vals)
    return LinearProgram(c=np.zeros(n), A=A, row_lower=np.zeros(A.shape[0]),
                         row_upper=np.zeros(A.shape[0]), col_lower=lo, col_upper=up)


def _fresh_min_max(lp, j, backend="highs"):
    c = np.zeros(lp.n_cols); c[j] = 1.0
    lo = solve(lp.with_objective(c, "min"), backend=backend)
    hi = solve(lp.with_objective(c, "max"), backend=backend)
    return lo, hi


@backends
def test_highs_model_min_max_matches_fresh_solves(backend):
    lp = _polytope()
    model = HighsModel(lp)
    assert model.n_cols == lp.n_cols and model.n_rows == lp.n_rows
    for j in range(lp.n_cols):
        lo, hi, status = model.minimize_maximize(j)
        flo, fhi = _fresh_min_max(lp, j, backend)
        assert status == "optimal"
        assert lo == pytest.approx(flo.objective, abs=_tol(backend))
        assert hi == pytest.approx(fhi.objective, abs=_tol(backend))
    # cell 0: x0 + x1 = 8 (row 0), x0 + x3 = 7 (column 0) -> x0 in [0, 7]
    assert model.minimize_maximize(0)[:2] == pytest.approx((0.0, 7.0))


def test_highs_model_solve_without_duals_gives_the_same_point():
    """``duals=False`` leaves the duals out and changes nothing else; the next re-solve
    with duals has them again, equal to a fresh solve's."""
    lp = _polytope()
    model, fresh = HighsModel(lp), HighsModel(lp)
    for j in range(lp.n_cols):
        for sense in ("min", "max"):
            for m in (model, fresh):
                m.set_objective(indices=[j], values=[1.0], sense=sense)
            lean, full = model.solve(duals=False), fresh.solve()
            assert lean.status == full.status == "optimal"
            assert lean.duals is None and lean.reduced_costs is None
            assert full.duals is not None
            assert lean.objective == pytest.approx(full.objective)
            _check_feasible(lp, lean.x)
            assert lean.x[j] == pytest.approx(full.x[j])
    again = model.solve()
    assert again.duals is not None
    assert again.duals == pytest.approx(fresh.solve().duals)


@backends
def test_highs_model_add_rows_and_bounds(backend):
    lp = _polytope()
    model = HighsModel(lp)
    assert model.minimize_maximize(0) == (pytest.approx(0.0), pytest.approx(7.0), "optimal")
    # an intruder learns x0 <= 6: add the row, re-solve warm, compare with a fresh LP
    new = model.add_rows(sp.csr_matrix(np.eye(lp.n_cols)[[0]]), [-INF], [6.0])
    assert new.tolist() == [lp.n_rows] and model.n_rows == lp.n_rows + 1
    A2 = sp.vstack([lp.A, sp.csr_matrix(np.eye(lp.n_cols)[[0]])], format="csr")
    lp2 = LinearProgram(c=lp.c, A=A2, row_lower=np.append(lp.row_lower, -INF),
                        row_upper=np.append(lp.row_upper, 6.0), col_lower=lp.col_lower,
                        col_upper=lp.col_upper)
    for j in (0, 1, 3, 4):
        lo, hi, status = model.minimize_maximize(j)
        flo, fhi = _fresh_min_max(lp2, j, backend)
        assert status == "optimal"
        assert (lo, hi) == pytest.approx((flo.objective, fhi.objective), abs=_tol(backend))
    # column bounds: x1 >= 2
    model.set_col_bounds([1], [2.0], [INF])
    lp3 = LinearProgram(c=lp.c, A=A2, row_lower=lp2.row_lower, row_upper=lp2.row_upper,
                        col_lower=np.where(np.arange(lp.n_cols) == 1, 2.0, lp.col_lower),
                        col_upper=lp.col_upper)
    for j in (0, 1, 3, 4):
        lo, hi, _ = model.minimize_maximize(j)
        flo, fhi = _fresh_min_max(lp3, j, backend)
        assert (lo, hi) == pytest.approx((flo.objective, fhi.objective), abs=_tol(backend))
    # row bounds: make the new row infeasible with x1 >= 2 ... x0 >= 7 -> x1 <= 1
    model.set_row_bounds(new, [7.0], [INF])
    assert model.minimize_maximize(0)[2] == "infeasible"
    assert model.solve().status == "infeasible"


def test_highs_model_objective_and_unbounded():
    lp = LinearProgram(c=np.zeros(3), A=sp.csr_matrix([[1.0, -1.0, 0.0]]), row_lower=[0.0],
                       row_upper=[0.0], col_upper=[INF, INF, 4.0])
    model = HighsModel(lp)
    lo, hi, status = model.minimize_maximize(0)
    assert (lo, status) == (0.0, "unbounded") and hi == INF
    lo, hi, status = model.minimize_maximize(2)
    assert (lo, hi, status) == (0.0, 4.0, "optimal")
    # sparse objective replaces the previous one entirely
    model.set_objective(indices=[1, 2], values=[1.0, -1.0], sense="min")
    res = model.solve()
    assert res.status == "optimal" and res.objective == pytest.approx(-4.0)
    model.set_objective(np.array([0.0, 0.0, 2.0]), sense="max")
    res = model.solve()
    assert res.objective == pytest.approx(8.0)
    np.testing.assert_allclose(res.duals, [0.0])


def test_highs_model_one_entry_objective_replaces_every_earlier_one():
    # the one-entry sparse objective zeroes whatever came before (full, sparse, one entry)
    # and leaves the model as a fresh model with that objective alone would be
    A = sp.csr_matrix([[1.0, 1.0, 1.0, -1.0]])
    lp = LinearProgram(c=np.zeros(4), A=A, row_lower=[0.0], row_upper=[0.0],
                       col_lower=[-1.0, -2.0, -3.0, 0.0], col_upper=[1.0, 2.0, 3.0, 4.0])
    model = HighsModel(lp)
    steps = [(np.array([1.0, -2.0, 0.5, 0.0]), None, None), (None, [1, 3], [1.0, 1.0]),
             (None, [2], [1.0]), (None, [2], [-1.0]), (None, [3], [0.0]), (None, [0], [2.0])]
    for c, idx, vals in steps:
        if c is not None:
            model.set_objective(c, sense="max")
            full = c
        else:
            model.set_objective(indices=idx, values=vals, sense="max")
            full = np.zeros(4)
            np.add.at(full, idx, vals)
        fresh = solve(LinearProgram(c=full, A=A, row_lower=[0.0], row_upper=[0.0],
                                    col_lower=lp.col_lower, col_upper=lp.col_upper,
                                    sense="max"))
        got = model.solve()
        assert got.objective == pytest.approx(fresh.objective)
    with pytest.raises(IndexError):
        model.set_objective(indices=[4], values=[1.0])


def test_highs_model_add_cols_and_integrality():
    # max x0 + x1 s.t. x0 + x1 <= 2.5
    lp = LinearProgram(c=np.array([1.0]), A=sp.csr_matrix([[1.0]]), row_lower=[-INF],
                       row_upper=[2.5], col_upper=[INF], sense="max")
    model = HighsModel(lp)
    assert model.solve().objective == pytest.approx(2.5)
    new = model.add_cols([2.0], [0.0], [1.0], sp.csc_matrix([[1.0]]))
    assert new.tolist() == [1] and model.n_cols == 2
    assert model.solve().objective == pytest.approx(1.5 + 2.0)
    model.set_integrality([0], True)
    res = model.solve()
    assert res.status == "optimal" and res.objective == pytest.approx(1.0 + 2 * 1.0)
    model.set_integrality([0], False)
    assert model.solve().objective == pytest.approx(3.5)


def test_highs_model_time_limit_does_not_accumulate():
    # HiGHS times LPs on a clock that accumulates over runs; HighsModel compensates, so
    # many fast re-solves never trip a per-solve limit.
    lp = _polytope()
    model = HighsModel(lp, time_limit=0.5)
    for _ in range(30):
        for j in (0, 1, 3, 4):
            assert model.minimize_maximize(j)[2] == "optimal"
    model.highs.setOptionValue("time_limit", 0.5)  # sanity: accessor works


def test_highs_model_mip_time_limit():
    model = HighsModel(_hard_knapsack())
    res = model.solve(time_limit=0.05)
    assert res.status in {"time_limit", "time_limit_no_solution", "optimal"}
    if res.status == "time_limit":
        assert res.has_solution and res.mip_gap is not None and res.mip_gap > 0


# ---------------------------------------------------------------- property test
if HAVE_HYPOTHESIS:

    @st.composite
    def bounded_lps(draw):
        n = draw(st.integers(1, 5))
        m = draw(st.integers(0, 4))
        ints = st.integers(-5, 5)
        A = np.array([[draw(ints) for _ in range(n)] for _ in range(m)], float).reshape(m, n)
        c = np.array([draw(ints) for _ in range(n)], float)
        lo = np.array([draw(st.integers(-5, 0)) for _ in range(n)], float)
        up = lo + np.array([draw(st.integers(0, 6)) for _ in range(n)], float)
        rl, ru = [], []
        for _ in range(m):
            kind = draw(st.sampled_from(["le", "ge", "eq", "range"]))
            b = float(draw(st.integers(-8, 8)))
            if kind == "le":
                rl.append(-INF); ru.append(b)
            elif kind == "ge":
                rl.append(b); ru.append(INF)
            elif kind == "eq":
                rl.append(b); ru.append(b)
            else:
                rl.append(b); ru.append(b + draw(st.integers(0, 5)))
        integ = None
        if draw(st.booleans()):
            integ = np.array([draw(st.booleans()) for _ in range(n)])
        return LinearProgram(c=c, A=sp.csr_matrix(A), row_lower=rl, row_upper=ru,
                             col_lower=lo, col_upper=up, integrality=integ,
                             sense=draw(st.sampled_from(["min", "max"])))

    @settings(max_examples=30, deadline=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(bounded_lps())
    def test_backends_agree(lp):
        results = {b: solve(lp, backend=b) for b in BACKEND_LIST}
        statuses = {b: r.status for b, r in results.items()}
        assert len(set(statuses.values())) == 1, statuses
        if results["highs"].status == "optimal":
            ref = results["highs"].objective
            for b, r in results.items():
                assert r.objective == pytest.approx(ref, abs=1e-6 * max(1.0, abs(ref)) * (
                    10 if b == "pulp" else 1)), (b, r.objective, ref)
                _check_feasible(lp, r.x, tol=1e-5)


def test_highs_thread_count_changes_never_break_later_solves():
    # HiGHS sizes one global thread pool per process; a model asking for another size used
    # to fail with an "error" status (seen when tests with threads=1 ran after others).
    import scipy.sparse as sp
    lp = LinearProgram(c=np.array([1.0, 1.0]), A=sp.csr_matrix([[1.0, 1.0]]),
                       row_lower=np.array([1.0]), row_upper=np.array([np.inf]),
                       col_lower=np.zeros(2), col_upper=np.full(2, 5.0),
                       integrality=np.array([True, True]))
    statuses = [solve(lp).status, solve(lp, threads=1).status, solve(lp, threads=2).status,
                HighsModel(lp, threads=1).solve().status, solve(lp).status]
    assert statuses == ["optimal"] * 5


def test_highs_model_resolve_after_unbounded_is_not_an_error():
    # HiGHS 1.16: on this LP (an audit LP of a 6x4 table with 16 suppressed cells), a warm
    # re-solve of "max x0" right after it was found unbounded ended in model status
    # "unknown" (reported as "error"); the audit would have taken that as no answer
    import scipy.sparse as sp

    from solvers import HighsModel, LinearProgram

    rows = [(0, [0], [5, 7, 10, 13]), (1, [], [3, 6]), (2, [1], [11]), (3, [2], [8, 12, 14]),
            (4, [], [4, 9, 15]), (5, [0], [1, 2]), (6, [], [3, 4]), (7, [5], [6]),
            (8, [7], [8, 9]), (9, [10], [11, 12]), (10, [13], [14, 15])]
    dense = np.zeros((11, 16))
    for r, plus, minus in rows:
        dense[r, plus] = 1.0
        dense[r, minus] = -1.0
    rhs = np.array([181.0, -27, 100, 96, -75, 226, -56, 62, 43, 26, 64])
    lp = LinearProgram(c=np.zeros(16), A=sp.csr_matrix(dense), row_lower=rhs, row_upper=rhs,
                       col_lower=np.zeros(16), col_upper=np.full(16, np.inf))
    model = HighsModel(lp)
    statuses = []
    for sense in ("min", "max", "max"):
        model.set_objective(indices=[0], values=[1.0], sense=sense)
        statuses.append(model.solve().status)
    assert statuses == ["optimal", "unbounded", "unbounded"]


def test_highs_model_delete_rows_matches_a_fresh_model():
    # deleting rows of a solved model (warm) gives the optimum of the model built
    # without them; the rows after them move up
    import scipy.sparse as sp
    from solvers import HighsModel, LinearProgram, solve
    rng = np.random.default_rng(3)
    A = sp.random(12, 8, density=0.5, random_state=4, format="csr") + sp.eye(12, 8)
    lo = np.full(12, 1.0)
    lp = LinearProgram(c=rng.random(8) + 0.1, A=A, row_lower=lo, row_upper=np.full(12, np.inf),
                       col_lower=np.zeros(8), col_upper=np.full(8, 10.0))
    model = HighsModel(lp)
    model.solve()
    drop = [2, 5, 9]
    assert model.delete_rows(drop) and model.n_rows == 9
    keep = np.setdiff1d(np.arange(12), drop)
    fresh = solve(LinearProgram(c=lp.c, A=A[keep], row_lower=lo[keep],
                                row_upper=np.full(9, np.inf), col_lower=lp.col_lower,
                                col_upper=lp.col_upper))
    assert abs(model.solve().objective - fresh.objective) <= 1e-7
    with pytest.raises(ValueError, match="out of range"):
        model.delete_rows([9])


def test_pulp_cbc_optimum_when_preprocessing_removes_every_row():
    # CBC's preprocessing reduced this model to no rows and then fixed the integer column x4
    # at 1 (objective -2); the optimum is -3 at x = (0, 1, 1, 0, 0).
    import scipy.sparse as sp

    A = np.zeros((1, 5))
    A[0, [1, 2, 4]] = [-5.0, 1.0, -5.0]
    lp = LinearProgram(c=np.array([0.0, -1.0, -2.0, 0.0, 1.0]), A=sp.csr_matrix(A),
                       row_lower=np.array([-INF]), row_upper=np.array([0.0]),
                       col_lower=np.zeros(5), col_upper=np.array([0.0, 1.0, 1.0, 0.0, 1.0]),
                       integrality=np.array([False, False, False, False, True]))
    for backend in BACKEND_LIST:
        res = solve(lp, backend=backend)
        assert res.status == "optimal" and res.objective == pytest.approx(-3.0), backend
# ---------------------------------------------------------------- quadratic objectives
def test_highs_solves_a_convex_qp_and_a_persistent_model_re_solves_it():
    # min (x - 1)^2 + (y - 2)^2 s.t. x + y = 1: x = 0, y = 1, objective 2
    lp = LinearProgram(c=np.array([-2.0, -4.0]), A=sp.csr_matrix([[1.0, 1.0]]),
                       row_lower=[1.0], row_upper=[1.0], col_lower=-INF,
                       hessian=np.array([2.0, 2.0]), offset=5.0)
    res = solve(lp)
    assert res.status == "optimal" and np.allclose(res.x, [0.0, 1.0], atol=1e-6)
    assert res.objective == pytest.approx(2.0) and lp.objective_value(res.x) == \
        pytest.approx(2.0)
    model = HighsModel(lp)
    model.set_col_bounds([0], [0.5], [0.5])
    assert model.solve().objective == pytest.approx(2.5)
    for backend in ("pulp", "scipy"):
        if backend in BACKEND_LIST:
            with pytest.raises(ValueError, match="quadratic"):
                solve(lp, backend=backend)
    with pytest.raises(ValueError, match="symmetric"):
        LinearProgram(c=np.zeros(2), hessian=sp.csc_matrix([[1.0, 1.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="MIQP"):
        LinearProgram(c=np.zeros(1), hessian=np.ones(1), integrality=[True])


def test_a_mip_start_is_accepted():
    lp = LinearProgram(c=np.array([-1.0, -1.0]), A=sp.csr_matrix([[2.0, 2.0]]),
                       row_lower=[-INF], row_upper=[3.0], col_upper=[5.0, 5.0],
                       integrality=[True, True])
    model = HighsModel(lp)
    assert model.set_start(np.array([1.0, 0.0]))
    assert model.solve().objective == pytest.approx(-1.0)


def test_pulp_cbc_infeasible_model_that_crashes_cbc_without_preprocessing():
    # CBC with its preprocessing off crashed on this model (-2 x0 = -1, x0 integer in
    # [0, 1]); the preprocessing proves it infeasible
    A = np.zeros((2, 2))
    A[0, 0] = -2.0
    lp = LinearProgram(c=np.zeros(2), A=sp.csr_matrix(A), row_lower=np.array([-1.0, -INF]),
                       row_upper=np.array([-1.0, 0.0]), col_lower=np.zeros(2),
                       col_upper=np.array([1.0, 0.0]), integrality=np.array([True, False]))
    for backend in BACKEND_LIST:
        assert solve(lp, backend=backend).status == "infeasible", backend


def test_highs_models_of_one_lp_share_its_conversion_and_follow_a_new_matrix():
    """Models built again from one LP solve it as a fresh model would; after ``lp.A`` is
    replaced, a new model solves the new matrix, not the one converted before."""
    lp = LinearProgram(c=np.array([-1.0, -2.0]), A=sp.csr_matrix([[1.0, 1.0], [1.0, 3.0]]),
                       row_lower=np.array([-np.inf, -np.inf]), row_upper=np.array([4.0, 6.0]))
    first = [HighsModel(lp).solve().objective for _ in range(3)]
    assert first == pytest.approx([-5.0] * 3)   # x = (3, 1)
    lp.A = sp.csr_matrix([[1.0, 1.0], [1.0, 1.0]])
    assert HighsModel(lp).solve().objective == pytest.approx(-8.0)   # x = (0, 4)


def test_columns_are_the_matrix_column_wise_and_made_once():
    A = sp.random(7, 5, density=0.4, random_state=3, format="csr")
    lp = LinearProgram(c=np.ones(5), A=A, row_lower=np.zeros(7), row_upper=np.ones(7))
    starts, index, value = lp.columns()
    csc = sp.csc_matrix((value, index, np.append(starts, len(index))), shape=(7, 5))
    assert (csc != lp.A).nnz == 0
    assert lp.columns()[1] is index                     # kept with the program
    other = dataclasses.replace(lp, A=2 * lp.A)         # another matrix: made anew
    assert np.allclose(other.columns()[2], 2 * value)


def _drained() -> list:
    """Models holding every spare HiGHS instance, so that the next one a dropped model
    leaves is the only spare."""
    from solvers import highs_spares
    return [HighsModel(_polytope()) for _ in range(len(highs_spares.SPARE))]


def test_a_dropped_models_instance_serves_the_next_model_as_a_new_one():
    # options, bounds, basis and objective of the dropped model are gone: the next model
    # on the spare instance gives a fresh model's answers, its options at the defaults
    fresh = HighsModel(_polytope())
    defaults = {k: fresh.highs.getOptionValue(k)[1]
                for k in ("presolve", "simplex_strategy", "time_limit", "output_flag")}
    want = [fresh.minimize_maximize(j) for j in range(fresh.n_cols)]
    keep = _drained()
    old = HighsModel(_polytope(), presolve="off", simplex_strategy=4, time_limit=5.0)
    old.set_col_bounds([0], 1.0, 2.0)
    old.minimize_maximize(0)
    spent = id(old.highs)
    del old
    new = HighsModel(_polytope())
    assert id(new.highs) == spent, "the dropped model's instance is reused"
    assert {k: new.highs.getOptionValue(k)[1] for k in defaults} == defaults
    assert [new.minimize_maximize(j) for j in range(new.n_cols)] == want
    del keep


def test_a_kept_raw_instance_is_never_handed_to_another_model():
    keep = _drained()
    h = HighsModel(_polytope()).highs
    n = h.getNumCol()
    other = HighsModel(LinearProgram(c=np.ones(1), col_upper=np.ones(1)))
    assert other.highs is not h and h.getNumCol() == n > 1
    del keep


def test_a_time_limit_counts_from_the_models_start_on_a_spare_instance():
    # a spare instance's run clock goes on from its earlier models' runs: a limit below
    # that clock still leaves a model's solves (and a direct run of its instance) time
    keep = _drained()
    old = HighsModel(_polytope())
    for _ in range(20):
        for j in range(old.n_cols):
            old.minimize_maximize(j)
    clock = old.highs.getRunTime()
    del old
    new = HighsModel(_polytope(), time_limit=clock / 2)
    assert new.highs.getRunTime() == clock, "the spare instance is used"
    new.highs.run()
    assert new.highs.getModelStatus() == highspy.HighsModelStatus.kOptimal
    assert new.minimize_maximize(0)[2] == "optimal"
    del keep


@backends
def test_no_columns_feasible_when_every_row_holds_zero(backend):
    """A program without columns: optimal at its offset when 0 lies in every row's range
    (an LP's duals are zeros), infeasible otherwise; the same through a HighsModel."""
    A = sp.csr_matrix((2, 0))
    ok = solve(LinearProgram(c=np.zeros(0), A=A, row_lower=[-1.0, 0.0], row_upper=[1.0, 2.0],
                             offset=5.0), backend=backend)
    assert ok.status == "optimal" and ok.objective == 5.0 and ok.x.shape == (0,)
    assert ok.log_summary == f"{backend}: optimal (no columns)"
    if backend == "highs":
        assert ok.duals.tolist() == [0.0, 0.0] and ok.reduced_costs.shape == (0,)
    bad = solve(LinearProgram(c=np.zeros(0), A=A, row_lower=[1.0, 0.0], row_upper=[2.0, 2.0]),
                backend=backend)
    assert bad.status == "infeasible" and bad.objective is None and not bad.has_solution
    model = HighsModel(LinearProgram(c=np.zeros(0), A=A, row_lower=[1.0, 0.0],
                                     row_upper=[2.0, 2.0]))
    assert model.solve().status == "infeasible"
