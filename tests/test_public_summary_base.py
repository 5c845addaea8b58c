"""tabprotect.public_summary.base: the primaries' integer ends without the figures and
the components' moves by the audit's warm solves, against independent MILPs (scipy's
milp over every cell, dense matrices), and the release decisions built on them."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import Bounds, LinearConstraint, milp

from test_public_summary import (_check, _check_base_intervals, _count_pattern,
                                 _random_3d_count_table)
from solvers import LinearProgram
from tabprotect.model.status import is_suppressed
from tabprotect.public_summary.base import IntegerEnds, WarmSystems
from tabprotect.public_summary.checker import Checker


def _milp(t, st, c, extra=()):
    """Independent integer optimum of ``c @ x`` (``None`` if infeasible): every cell a
    variable, published cells fixed, the relations, plus rows ``w @ x == f``."""
    sup = is_suppressed(st)
    lo, hi = np.where(sup, t.lb, t.value), np.where(sup, t.ub, t.value)
    A = t.relations.toarray()
    M = np.vstack([A] + [np.asarray(w, float)[None, :] for w, _ in extra])
    rhs = np.concatenate([np.zeros(A.shape[0])] + [[f] for _, f in extra])
    res = milp(c, constraints=LinearConstraint(M, rhs - 1e-9, rhs + 1e-9),
               integrality=np.ones(t.n_cells), bounds=Bounds(lo, hi))
    return None if res.x is None else res


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_integer_ends_are_the_milps(seed):
    t, st = _random_3d_count_table(seed)
    ends = IntegerEnds(t, is_suppressed(st), None)
    A = t.relations.toarray()
    for j in np.flatnonzero(st == "U"):
        for sense, sign in (("min", 1.0), ("max", -1.0)):
            val, x = ends.end(int(j), sense)
            c = np.zeros(t.n_cells)
            c[j] = sign
            assert val == pytest.approx(sign * _milp(t, st, c).fun), (j, sense)
            # its table: integral, the relations, the published cells kept, at the end
            assert x[j] == val and np.array_equal(x, np.round(x))
            assert np.abs(A @ x).max() < 1e-9
            assert np.array_equal(x[~is_suppressed(st)], t.value[~is_suppressed(st)])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_table_leaning_toward_a_sum_is_at_the_end_and_none_past_it(seed):
    # each primary's integer ends by the independent MILP: the leaning search finds an
    # integral table of the whole system at the end (whatever sum it leans toward),
    # and none one past it
    t, st = _random_3d_count_table(seed)
    sup = is_suppressed(st)
    ends = IntegerEnds(t, sup, None)
    A = t.relations.toarray()
    rng = np.random.default_rng(seed)
    for j in np.flatnonzero(st == "U"):
        weights = np.where(sup, rng.choice([-1.0, 1.0], t.n_cells), 0.0)
        for sense, sign in (("min", 1.0), ("max", -1.0)):
            c = np.zeros(t.n_cells)
            c[j] = sign
            end = sign * _milp(t, st, c).fun
            x = ends.toward(int(j), sense, end, weights)
            if ends.determined[j]:
                assert x is None
                continue
            assert x is not None, (j, sense)
            assert x[j] == pytest.approx(end) and np.array_equal(x, np.round(x))
            assert np.abs(A @ x).max() < 1e-9
            assert np.all(x >= t.lb) and np.all(x <= t.ub)
            assert np.array_equal(x[~sup], t.value[~sup])
            past = end - sign
            assert ends.toward(int(j), sense, past, weights) is None, (j, sense)


def test_a_component_shifts_its_parts_exactly_when_an_integral_table_does():
    moved = sum(_shifts_against_milp(seed) for seed in range(1, 7))
    assert moved > 0       # some move besides the truth itself (delta 0)


def _largest_component(seed: int):
    """A random 3-D count table, its status, its checker and its largest component."""
    t, st = _random_3d_count_table(seed)
    checker = Checker(t, st, True, 1e-6, None)
    return t, st, checker, int(np.argmax([len(c) for c in checker.comp_cols]))


def _shifts_against_milp(seed: int) -> int:
    # the sum of half of one component's cells moved by -3..3: the warm search finds an
    # integral solution with that sum exactly when the independent MILP does
    t, st, checker, d = _largest_component(seed)
    cols, rws = checker.comp_cols[d], checker.comp_rows[d]
    cells = checker.cells[cols]
    truth = t.value[cells]
    lp = LinearProgram(c=np.zeros(len(cols)), A=checker.A_csr[rws][:, cols],
                       row_lower=checker.lp.row_lower[rws],
                       row_upper=checker.lp.row_upper[rws],
                       col_lower=checker.lp.col_lower[cols],
                       col_upper=checker.lp.col_upper[cols])
    half = np.arange(len(cols)) < len(cols) // 2
    E = half[None, :].astype(float)
    warm = WarmSystems(None)
    found = 0
    for delta in range(-3, 4):
        want = E @ truth + delta
        z = warm.shift(("c", d), lp, truth, E, want)
        w = np.zeros(t.n_cells)
        w[cells[half]] = 1.0
        # the other components at their true values: only component d may move
        others = np.setdiff1d(checker.cells, cells)
        pins = [(np.eye(t.n_cells)[k], t.value[k]) for k in others]
        truth_res = _milp(t, st, np.zeros(t.n_cells), [(w, float(want[0]))] + pins)
        assert (z is not None) == (truth_res is not None), delta
        if z is not None:
            found += 1
            assert np.array_equal(z, np.round(z)) and E @ z == pytest.approx(want)
            x = t.value.copy()
            x[cells] = z
            assert np.abs(t.relations @ x).max() < 1e-9
            assert np.all(z >= t.lb[cells]) and np.all(z <= t.ub[cells])
    return found - 1


@pytest.mark.parametrize("seed", [7, 8, 9])
def test_release_decisions_on_gauss_count_patterns(seed):
    # gauss's patterns with the single-contributor attack (several 3-D components):
    # the base ends and every release decision against the independent MILPs
    t, st = _count_pattern(seed)
    _check_base_intervals(t, st, True)
    _check(t, st, integer=True)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_goal_is_reached_exactly_when_an_integral_table_reaches_it(seed):
    # half of the largest component's cells held at their true sum: the warm search
    # finds a table with a primary at a goal (or beyond) exactly when the independent
    # MILP does; goals past the truth by 0..4, both ways
    t, st, checker, d = _largest_component(seed)
    cols, rws = checker.comp_cols[d], checker.comp_rows[d]
    cells = checker.cells[cols]
    truth = t.value[cells]
    half = np.arange(len(cols)) < len(cols) // 2
    A = np.vstack([checker.A_csr[rws][:, cols].toarray(), half[None, :].astype(float)])
    held = float(half @ truth)
    lp = LinearProgram(c=np.zeros(len(cols)), A=A,
                       row_lower=np.append(checker.lp.row_lower[rws], held),
                       row_upper=np.append(checker.lp.row_upper[rws], held),
                       col_lower=checker.lp.col_lower[cols],
                       col_upper=checker.lp.col_upper[cols])
    w = np.zeros(t.n_cells)
    w[cells[half]] = 1.0
    others = np.setdiff1d(checker.cells, cells)
    pins = [(np.eye(t.n_cells)[k], t.value[k]) for k in others] + [(w, held)]
    warm = WarmSystems(None, nodes=3)      # few nodes: the MILP solver's path too
    primaries = [j for j in range(len(cols)) if st[cells[j]] == "U"][:4]
    assert primaries
    seen = set()
    for j in primaries:
        for sense, sign in (("max", 1.0), ("min", -1.0)):
            for step in range(5):
                goal = truth[j] + sign * step
                found, z = warm.reach(("g", d), j, sense, goal, lp, truth)
                c = np.zeros(t.n_cells)
                c[cells[j]] = -sign           # the MILP's farthest x_j that way
                best = _milp(t, st, c, pins)
                reachable = sign * best.x[cells[j]] >= sign * goal - 1e-9
                assert found == ("found" if reachable else "none"), (j, sense, goal)
                seen.add(found)
                if z is not None:
                    assert sign * z[j] >= sign * goal and np.array_equal(z, np.round(z))
                    assert np.abs(A @ z - np.append(A[:-1] @ truth, held)).max() < 1e-9
                    assert np.all(z >= t.lb[cells]) and np.all(z <= t.ub[cells])
    assert seen == {"found", "none"}
